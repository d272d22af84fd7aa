package ring

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// alignedMem returns n bytes of zeroed Go memory aligned to 128 bytes: a
// ring in ordinary memory behaves as one in a shared segment. The memory
// is a []uint64, over-allocated and aligned by hand; keep the returned
// slice alive while the pointer is used.
func alignedMem(n int) (unsafe.Pointer, []uint64) {
	buf := make([]uint64, n/8+32)
	p := unsafe.Pointer(&buf[0])
	return unsafe.Add(p, (128-uintptr(p)%128)%128), buf
}

// raceEnabled reports a test binary built with -race.
var raceEnabled = func() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}()

// testRing is a ring in Go memory, with its backing kept alive.
type testRing struct {
	*Ring
	mem  unsafe.Pointer
	keep []uint64
}

func newTestRing(capacity, id int) *testRing {
	mem, keep := alignedMem(Bytes(capacity))
	return &testRing{New(mem, capacity, id), mem, keep}
}

// tailWord and headWord are the ring's header words, read or written
// behind the ring's back.
func (r *testRing) tailWord() *uint64 { return (*uint64)(r.mem) }
func (r *testRing) headWord() *uint64 { return (*uint64)(unsafe.Add(r.mem, 128)) }
func (r *testRing) slotWord(pos uint64) *uint64 {
	return (*uint64)(unsafe.Add(r.mem, HeaderSize+int(pos&uint64(2*r.Capacity()-1))*UnitSize))
}

// Message format in the payload (56 bytes; 24 in a short record, 120 in
// a double one), shared with the stress test:
//
//	+0  producer id uint32
//	+4  sequence    uint32
//	+8  length      uint8 (0..the payload's size less 9)
//	+9  length bytes, each a function of (id, sequence, index)
//
// Bytes after the body are not written: a slot keeps whatever an earlier
// message left there, so a reader that trusts a stale length would see
// the wrong bytes.

// recordSize says which record a message travels in: with producer ids
// from mixedBase about one in three is short, and from doubleBase some
// of the rest are double; tests that count positions use smaller ids,
// whose messages are all full records.
func recordSize(id, seq int) uint64 {
	switch {
	case id >= mixedBase && (id*7+seq*5)%3 == 0:
		return sizeShort
	case id >= doubleBase && (id+seq)%4 == 1:
		return sizeDouble
	}
	return sizeFull
}

func isShort(id, seq int) bool { return recordSize(id, seq) == sizeShort }

const (
	mixedBase  = 1 << 20
	doubleBase = mixedBase + 1000
)

func payloadSize(size uint64) int {
	switch size {
	case sizeShort:
		return ShortPayloadSize
	case sizeDouble:
		return DoublePayloadSize
	}
	return PayloadSize
}

func msgLen(id, seq int) int {
	max := payloadSize(recordSize(id, seq)) - 9
	return int((uint32(id)*2654435761 ^ uint32(seq)*40503 ^ uint32(seq)>>7) % uint32(max+1))
}

func msgByte(id, seq, i int) byte { return byte(id*131 + seq*7 + i*29 + seq>>8) }

func payload(p unsafe.Pointer) []byte { return unsafe.Slice((*byte)(p), PayloadSize) }

func shortPayload(p unsafe.Pointer) []byte { return unsafe.Slice((*byte)(p), ShortPayloadSize) }

func writeMsg(p unsafe.Pointer, id, seq int) {
	b := unsafe.Slice((*byte)(p), payloadSize(recordSize(id, seq)))
	*(*uint32)(unsafe.Pointer(&b[0])) = uint32(id)
	*(*uint32)(unsafe.Pointer(&b[4])) = uint32(seq)
	n := msgLen(id, seq)
	b[8] = byte(n)
	for i := range n {
		b[9+i] = msgByte(id, seq, i)
	}
}

// readMsg decodes and checks a message found in a record of size units:
// it returns the producer id and sequence it carries, and an error if its
// record, its length or a body byte is not what that producer wrote for
// that sequence.
func readMsg(p unsafe.Pointer, size uint64) (id, seq int, err error) {
	b := unsafe.Slice((*byte)(p), payloadSize(size))
	id = int(*(*uint32)(unsafe.Pointer(&b[0])))
	seq = int(*(*uint32)(unsafe.Pointer(&b[4])))
	if want := recordSize(id, seq); want != size {
		return id, seq, fmt.Errorf("producer %d message %d: a record of %d units, sent in one of %d", id, seq, size, want)
	}
	n := int(b[8])
	if want := msgLen(id, seq); n != want {
		return id, seq, fmt.Errorf("producer %d message %d: length %d, want %d", id, seq, n, want)
	}
	for i := range n {
		if got, want := b[9+i], msgByte(id, seq, i); got != want {
			return id, seq, fmt.Errorf("producer %d message %d: body byte %d is %#x, want %#x", id, seq, i, got, want)
		}
	}
	return id, seq, nil
}

// send claims, fills and publishes one message in a full record; false
// if the ring is full. Producer ids of such messages must not be mixed
// ids (isShort must say false for them): see sendMixed.
func send(p *Producer, id, seq int) bool {
	c, ok := p.TryClaim()
	if !ok {
		return false
	}
	writeMsg(c.Payload(), id, seq)
	c.Publish()
	return true
}

// sendMixed is send in the record recordSize says.
func sendMixed(p *Producer, id, seq int) bool {
	c, ok := claimFor(p, id, seq)
	if !ok {
		return false
	}
	writeMsg(c.Payload(), id, seq)
	c.Publish()
	return true
}

// claimFor claims the record recordSize says for a message.
func claimFor(p *Producer, id, seq int) (Claimed, bool) {
	switch recordSize(id, seq) {
	case sizeShort:
		return p.TryClaimShort()
	case sizeDouble:
		return p.TryClaimDouble()
	}
	return p.TryClaim()
}

// recv checks and releases the head message; ok false if none is ready.
func recv(t testing.TB, c *Consumer) (id, seq int, ok bool) {
	t.Helper()
	pid, p, _, ok := c.PeekRecord()
	if !ok {
		return 0, 0, false
	}
	id, seq, err := readMsg(p, c.size)
	if err != nil {
		t.Fatal(err)
	}
	if uint32(id) != pid {
		t.Fatalf("slot says producer %d, payload says %d", pid, id)
	}
	c.Release()
	return id, seq, true
}

func expectMsg(t *testing.T, c *Consumer, id, seq int) {
	t.Helper()
	gid, gseq, ok := recv(t, c)
	if !ok {
		t.Fatalf("expected producer %d message %d, ring not ready", id, seq)
	}
	if gid != id || gseq != seq {
		t.Fatalf("got producer %d message %d, want producer %d message %d", gid, gseq, id, seq)
	}
}

func expectPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestConstructorChecks(t *testing.T) {
	if Bytes(8) != HeaderSize+8*SlotSize || SlotSize != 64 || PayloadSize != 56 {
		t.Fatalf("sizes: Bytes(8)=%d SlotSize=%d PayloadSize=%d", Bytes(8), SlotSize, PayloadSize)
	}
	mem, keep := alignedMem(Bytes(8) + 128)
	defer runtime.KeepAlive(keep)
	for _, capacity := range []int{0, -4, 1, 3, 6, 12} {
		expectPanic(t, fmt.Sprintf("New with capacity %d", capacity), func() { New(mem, capacity, 0) })
	}
	expectPanic(t, "New on memory aligned to 64 only", func() { New(unsafe.Add(mem, 64), 8, 0) })
	expectPanic(t, "New with ring id -1", func() { New(mem, 8, -1) })
	expectPanic(t, "New with ring id MaxRing+1", func() { New(mem, 8, MaxRing+1) })
	r := New(mem, 8, MaxRing)
	if r.Capacity() != 8 {
		t.Fatalf("capacity %d", r.Capacity())
	}
	var ann atomic.Uint64
	expectPanic(t, "producer id -1", func() { r.NewProducer(-1, &ann) })
	expectPanic(t, "producer id MaxProducer+1", func() { r.NewProducer(MaxProducer+1, &ann) })
	p := r.NewProducer(MaxProducer, &ann)
	c := NewConsumer(r)
	// The largest ids survive the slot and announcement encodings.
	if !send(p, MaxProducer, 1) {
		t.Fatal("claim failed")
	}
	if id, _, ok := c.Peek(); !ok || id != MaxProducer {
		t.Fatalf("peek: id %d ok %v", id, ok)
	}
	if ann.Load() != r.announce(0)|annFull || ann.Load()>>annRingPos&(1<<24-1) != MaxRing {
		t.Fatalf("announcement %#x, want ring %d position 0", ann.Load(), MaxRing)
	}
}

func TestEmptyRing(t *testing.T) {
	r := newTestRing(8, 1)
	c := NewConsumer(r.Ring)
	if c.Ready() {
		t.Fatal("empty ring is ready")
	}
	if id, p, ok := c.Peek(); ok || id != 0 || p != nil {
		t.Fatalf("peek on empty ring: %d %v %v", id, p, ok)
	}
	if c.Claimed() {
		t.Fatal("empty ring has a claimed slot")
	}
	c.Flush() // nothing to publish
	if *r.headWord() != 0 {
		t.Fatalf("flush of an empty ring moved head to %d", *r.headWord())
	}

	// Claimed but not published: claimed, not ready.
	var ann atomic.Uint64
	p := r.NewProducer(4, &ann)
	cl, ok := p.TryClaim()
	if !ok {
		t.Fatal("claim on an empty ring failed")
	}
	if c.Ready() {
		t.Fatal("a claimed, unpublished slot is ready")
	}
	if !c.Claimed() {
		t.Fatal("a claimed slot is not reported claimed")
	}
	if !c.Announced(ann.Load()) {
		t.Fatalf("the claimer's announcement %#x does not name position 0", ann.Load())
	}
	writeMsg(cl.Payload(), 4, 0)
	cl.PublishFence()
	if !c.Ready() {
		t.Fatal("published slot not ready")
	}
	expectMsg(t, c, 4, 0)
	if c.Ready() || c.Claimed() {
		t.Fatal("ring not empty after its only message")
	}
}

func TestPublishPeekReleaseOrder(t *testing.T) {
	r := newTestRing(16, 2)
	var ann atomic.Uint64
	p := r.NewProducer(9, &ann)
	c := NewConsumer(r.Ring)
	for seq := range 10 {
		if !send(p, 9, seq) {
			t.Fatalf("claim %d failed", seq)
		}
	}
	for seq := range 10 {
		// Peek does not consume: it sees the same slot until Release.
		id1, p1, ok1 := c.Peek()
		id2, p2, ok2 := c.Peek()
		if !ok1 || !ok2 || id1 != id2 || p1 != p2 || !c.Ready() {
			t.Fatalf("message %d: repeated peeks differ", seq)
		}
		expectMsg(t, c, 9, seq)
	}
	if c.Ready() {
		t.Fatal("an eleventh message")
	}
	// Publish and PublishFence are equivalent for the consumer.
	for seq := range 4 {
		cl, ok := p.TryClaim()
		if !ok {
			t.Fatal("claim failed")
		}
		writeMsg(cl.Payload(), 9, seq)
		if seq%2 == 0 {
			cl.Publish()
		} else {
			cl.PublishFence()
		}
	}
	for seq := range 4 {
		expectMsg(t, c, 9, seq)
	}
}

// Many laps of a small ring, with every depth of backlog from 1 to the
// capacity, every payload byte checked.
func TestWrapAround(t *testing.T) {
	for _, capacity := range []int{2, 4, 8} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			r := newTestRing(capacity, 3)
			var ann atomic.Uint64
			p := r.NewProducer(77, &ann)
			c := NewConsumer(r.Ring)
			const total = 10000
			sent, got := 0, 0
			for batch := 0; got < total; batch++ {
				n := batch%capacity + 1
				for i := 0; i < n && sent < total; i++ {
					if !send(p, 77, sent) {
						t.Fatalf("claim of message %d failed with %d outstanding", sent, sent-got)
					}
					sent++
				}
				for got < sent {
					expectMsg(t, c, 77, got)
					got++
				}
				c.Flush()
				if c.Ready() {
					t.Fatalf("ready after draining %d messages", got)
				}
			}
			if tail := *r.tailWord(); tail != 2*total {
				t.Fatalf("tail %d after %d full records", tail, total)
			}
		})
	}
}

// TryClaim fails exactly when capacity messages are outstanding (claimed
// and not yet released and flushed), whether published or not.
func TestFullExactly(t *testing.T) {
	for _, capacity := range []int{2, 4, 8, 64} {
		t.Run(fmt.Sprint(capacity), func(t *testing.T) {
			r := newTestRing(capacity, 1)
			var ann atomic.Uint64
			p := r.NewProducer(5, &ann)
			c := NewConsumer(r.Ring)
			seq, next := 0, 0
			for lap := range 50 {
				// Fill: the last claim stays unpublished; it still counts.
				for i := range capacity {
					if i == capacity-1 {
						cl, ok := p.TryClaim()
						if !ok {
							t.Fatalf("lap %d: claim %d of %d failed", lap, i, capacity)
						}
						if _, ok := p.TryClaim(); ok {
							t.Fatalf("lap %d: claim succeeded on a full ring", lap)
						}
						writeMsg(cl.Payload(), 5, seq)
						cl.Publish()
					} else if !send(p, 5, seq) {
						t.Fatalf("lap %d: claim %d of %d failed", lap, i, capacity)
					}
					seq++
				}
				tail := *r.tailWord()
				for range 3 {
					if send(p, 5, seq) {
						t.Fatalf("lap %d: claim succeeded with %d outstanding", lap, capacity)
					}
				}
				if *r.tailWord() != tail {
					t.Fatal("a failed claim moved the tail")
				}
				// Release one at a time: until the consumer's position is
				// published (Flush, or by itself every quarter lap) the
				// producer must still see a full ring; after, exactly the
				// released slots are free.
				expectMsg(t, c, 5, next)
				next++
				autoFlushed := *r.headWord() == 2*uint64(next)
				if !autoFlushed && send(p, 5, seq) {
					t.Fatalf("lap %d: claim succeeded before the consumer flushed", lap)
				}
				c.Flush()
				if *r.headWord() != 2*uint64(next) {
					t.Fatalf("head %d after Flush, consumer at %d", *r.headWord(), next)
				}
				if !send(p, 5, seq) {
					t.Fatalf("lap %d: claim failed after the consumer released and flushed", lap)
				}
				seq++
				if send(p, 5, seq) {
					t.Fatalf("lap %d: two claims after one release", lap)
				}
				for next < seq {
					expectMsg(t, c, 5, next)
					next++
				}
				c.Flush()
			}
		})
	}
}

// Release publishes the consumer's position by itself once more than a
// quarter of the ring has been consumed since the last publication.
func TestReleaseFlushesEveryQuarterLap(t *testing.T) {
	const capacity = 64
	r := newTestRing(capacity, 1)
	var ann atomic.Uint64
	p := r.NewProducer(1, &ann)
	c := NewConsumer(r.Ring)
	for seq := range capacity {
		send(p, 1, seq)
	}
	for i := range capacity {
		expectMsg(t, c, 1, i)
		head := *r.headWord()
		if want := 2 * (uint64(i+1) / 16 * 16); head != want {
			t.Fatalf("after %d releases head is %d, want %d", i+1, head, want)
		}
	}
}

// ringNear makes a ring whose counters start at start, with every slot
// holding what the previous lap left in it (as a ring that really got
// there would: the previous lap goes through the ring's own API), and a
// consumer at start.
func ringNear(t *testing.T, capacity int, start uint64) (*testRing, *Consumer) {
	t.Helper()
	r := newTestRing(capacity, 6)
	*r.tailWord() = start - 2*uint64(capacity)
	*r.headWord() = start - 2*uint64(capacity)
	var ann atomic.Uint64
	prev := r.NewProducer(54321, &ann)
	c := NewConsumer(r.Ring)
	for i := range capacity {
		if !send(prev, 54321, i) {
			t.Fatalf("previous lap: claim %d failed", i)
		}
	}
	for i := range capacity {
		expectMsg(t, c, 54321, i)
	}
	c.Flush()
	if c.Ready() || c.Claimed() || *r.tailWord() != start || *r.headWord() != start {
		t.Fatalf("ring at %#x: not empty", start)
	}
	return r, c
}

// Control words carry the position modulo 2^36, announcements modulo
// 2^38: a ring whose counters cross such a power keeps working, full and
// empty detection included. (Full records only: positions stay even.)
func TestSequenceWrap(t *testing.T) {
	for _, start := range []uint64{1<<36 - 2, 1<<36 - 4, 1<<38 - 2, 1<<38 - 4, 1<<38 - 100, 1<<41 - 2, 1<<63 - 6} {
		for _, capacity := range []int{2, 4} {
			t.Run(fmt.Sprintf("%#x/%d", start, capacity), func(t *testing.T) {
				r, c := ringNear(t, capacity, start)
				var ann atomic.Uint64
				p := r.NewProducer(9, &ann)
				seq, next := 0, 0
				for lap := range 100 {
					for range capacity {
						if c.Ready() != (next < seq) {
							t.Fatalf("lap %d: position %#x ready %v with %d messages outstanding", lap, start+2*uint64(next), c.Ready(), seq-next)
						}
						if !send(p, 9, seq) {
							t.Fatalf("lap %d: claim at %#x failed", lap, start+2*uint64(seq))
						}
						seq++
						if ann.Load() != r.announce(start+2*uint64(seq)-2)|annFull {
							t.Fatalf("announcement %#x", ann.Load())
						}
					}
					if send(p, 9, seq) {
						t.Fatalf("lap %d: claim succeeded on a full ring at %#x", lap, start+2*uint64(seq))
					}
					for next < seq {
						expectMsg(t, c, 9, next)
						next++
					}
					c.Flush()
					if c.Ready() || c.Claimed() {
						t.Fatalf("lap %d: not empty after draining", lap)
					}
				}
				if *r.tailWord() != start+2*uint64(seq) {
					t.Fatalf("tail %#x, want %#x", *r.tailWord(), start+2*uint64(seq))
				}
			})
		}
	}
}

// A slot never written (zeroed memory) is not ready at any position,
// including one whose sequence, modulo the slot word's range, is zero
// (position 2^k-1): a ring is only ever there after 2^k messages, but
// its slots' zero must not depend on that.
func TestUntouchedSlotNotReadyAtWrap(t *testing.T) {
	for k := 34; k <= 44; k++ {
		for _, capacity := range []int{2, 4} {
			r := newTestRing(capacity, 2)
			start := uint64(1)<<k - 1
			*r.tailWord() = start
			*r.headWord() = start
			c := NewConsumer(r.Ring)
			for i := range 2 * capacity {
				if c.Ready() {
					t.Fatalf("zeroed ring of %d at %#x (+%d): an untouched slot is ready", capacity, start, i)
				}
				if _, _, ok := c.Peek(); ok {
					t.Fatalf("zeroed ring at %#x (+%d): peek returned an untouched slot", start, i)
				}
				// Move on by a dead short claim, leaving the unit untouched.
				var ann atomic.Uint64
				if _, ok := r.NewProducer(1, &ann).TryClaimShort(); !ok {
					t.Fatal("claim failed")
				}
				c.Skip(ann.Load())
			}
		}
	}
}

// Several producers (goroutines, each with its own id and announcement
// word) on one ring: every message arrives exactly once, intact, and each
// producer's messages in order.
func TestMultiProducer(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race: the ring publishes with spin.StoreRelease64, a plain store on amd64 " +
			"(a release store under TSO) that the race detector does not know orders the payload")
	}
	for _, tc := range []struct{ producers, per, capacity int }{
		{6, 20000, 16},
		{4, 20000, 4},
		{3, 5000, 4},
	} {
		t.Run(fmt.Sprintf("%dx%d/cap%d", tc.producers, tc.per, tc.capacity), func(t *testing.T) {
			multiProducer(t, tc.producers, tc.per, tc.capacity)
		})
	}
}

func multiProducer(t *testing.T, producers, per, capacity int) {
	r := newTestRing(capacity, 11)
	anns := make([]atomic.Uint64, producers*8) // a line each
	var stop atomic.Bool
	sent := make([]atomic.Int64, producers)
	var wg sync.WaitGroup
	for id := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := r.NewProducer(doubleBase+id, &anns[id*8])
			for seq := 0; seq < per && !stop.Load(); {
				if sendMixed(p, doubleBase+id, seq) {
					seq++
					sent[id].Store(int64(seq))
				} else {
					runtime.Gosched()
				}
			}
		}()
	}
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	c := NewConsumer(r.Ring)
	next := make([]int, producers)
	deadline := time.Now().Add(30 * time.Second)
	idle := 0
	for got := 0; got < producers*per; {
		id, seq, ok := recv(t, c)
		if !ok {
			c.Flush()
			if idle++; idle%1024 == 0 && time.Now().After(deadline) {
				t.Fatalf("deadline: received %v of %d each; producers sent %v", next, per, loadAll(sent))
			}
			runtime.Gosched()
			continue
		}
		q := id - doubleBase
		if q < 0 || q >= producers {
			t.Fatalf("message from unknown producer %d", id)
		}
		if seq != next[q] {
			t.Fatalf("producer %d: message %d, want %d (lost, duplicated or reordered)", id, seq, next[q])
		}
		next[q]++
		got++
	}
	stop.Store(true)
	wg.Wait()
	c.Flush()
	if c.Ready() || c.Claimed() {
		t.Fatal("ring not empty after every message")
	}
	if tail := *r.tailWord(); tail != c.pos {
		t.Fatalf("tail %d, consumer at %d", tail, c.pos)
	}
}

func loadAll(a []atomic.Int64) []int64 {
	v := make([]int64, len(a))
	for i := range a {
		v[i] = a[i].Load()
	}
	return v
}

// A producer that claims a slot and never publishes it (it "died"): the
// consumer sees the position claimed and unpublished, announced by that
// producer only, skips it, and goes on with the others' messages.
func TestSkipDeadClaimer(t *testing.T) {
	r := newTestRing(8, 3)
	var deadAnn, liveAnn atomic.Uint64
	dead := r.NewProducer(1, &deadAnn)
	live := r.NewProducer(2, &liveAnn)
	c := NewConsumer(r.Ring)
	send(live, 2, 0)
	cl, ok := dead.TryClaim() // position 1, then dies half-way through its payload
	if !ok {
		t.Fatal("claim failed")
	}
	copy(payload(cl.Payload()), "garbage from a producer that died")
	send(live, 2, 1)
	send(live, 2, 2)

	expectMsg(t, c, 2, 0)
	if c.Ready() {
		t.Fatal("the dead producer's unpublished slot is ready")
	}
	if _, _, ok := c.Peek(); ok {
		t.Fatal("peek returned the unpublished slot")
	}
	if !c.Claimed() {
		t.Fatal("the unpublished slot is not reported claimed")
	}
	if !c.Announced(deadAnn.Load()) {
		t.Fatalf("the dead claimer's announcement %#x does not name position 1", deadAnn.Load())
	}
	if c.Announced(liveAnn.Load()) {
		t.Fatalf("the live producer's announcement %#x names position 1", liveAnn.Load())
	}
	// Announcements name a ring: position 1 of another ring is not ours,
	// even from the same producer id.
	other := newTestRing(8, 4)
	var otherAnn atomic.Uint64
	op := other.NewProducer(1, &otherAnn)
	oc := NewConsumer(other.Ring)
	send(op, 1, 0)
	expectMsg(t, oc, 1, 0)
	if _, ok := op.TryClaim(); !ok || !oc.Announced(otherAnn.Load()) {
		t.Fatalf("ring 4: claim of position 1 failed or not announced (%#x)", otherAnn.Load())
	}
	if c.Announced(otherAnn.Load()) {
		t.Fatalf("an announcement of ring 4 position 1 (%#x) matched ring 3 position 1", otherAnn.Load())
	}
	c.Skip(deadAnn.Load())
	if *r.headWord() != 4 {
		t.Fatalf("Skip did not publish the consumer's position: head %d", *r.headWord())
	}
	expectMsg(t, c, 2, 1)
	expectMsg(t, c, 2, 2)
	if c.Claimed() || c.Ready() {
		t.Fatal("ring not empty")
	}

	// The skipped slot is reused on the next laps and read correctly: the
	// dead message's garbage and stale control word must not leak.
	for seq := 3; seq < 3+8*20; seq++ {
		if !send(live, 2, seq) {
			t.Fatalf("claim %d failed", seq)
		}
		expectMsg(t, c, 2, seq)
		c.Flush()
	}
}

// Dead claims at awkward places: the very first position, two in a row,
// and the last slot before the ring is full; then the ring wraps over
// them many times.
func TestSkipPatterns(t *testing.T) {
	const capacity = 4
	r := newTestRing(capacity, 2)
	var liveAnn atomic.Uint64
	live := r.NewProducer(1, &liveAnn)
	deadAnns := make([]atomic.Uint64, 8)
	nDead := 0
	die := func() {
		d := r.NewProducer(200+nDead, &deadAnns[nDead])
		if _, ok := d.TryClaim(); !ok {
			t.Fatal("dead producer's claim failed")
		}
		nDead++
	}
	c := NewConsumer(r.Ring)
	skipped := 0
	// drain consumes everything, skipping positions whose announcers are
	// all dead (every producer but live is dead).
	seq, next := 0, 0
	drain := func() {
		for {
			if _, _, ok := c.Peek(); ok {
				expectMsg(t, c, 1, next)
				next++
				continue
			}
			if !c.Claimed() {
				c.Flush()
				return
			}
			if c.Announced(liveAnn.Load()) {
				t.Fatal("stuck at a position the live producer announces")
			}
			var ann uint64
			for i := range nDead {
				if v := deadAnns[i].Load(); c.Announced(v) {
					ann = v
				}
			}
			if ann == 0 {
				t.Fatal("a claimed, unpublished position announced by nobody")
			}
			c.Skip(ann)
			skipped++
		}
	}
	die() // position 0
	die() // position 1: two in a row
	if !send(live, 1, seq) {
		t.Fatal("claim failed")
	}
	seq++
	die() // position 3: the ring is now full
	if send(live, 1, seq) {
		t.Fatal("claim on a full ring succeeded")
	}
	drain()
	if skipped != 3 || next != 1 {
		t.Fatalf("skipped %d, received %d", skipped, next)
	}
	for lap := range 100 {
		for range capacity {
			if !send(live, 1, seq) {
				t.Fatalf("lap %d: claim failed", lap)
			}
			seq++
		}
		drain()
	}
	if next != seq {
		t.Fatalf("received %d of %d", next, seq)
	}
}

// A producer that announced a position but lost the claim to another
// producer (its CAS failed) and then found the ring full owns nothing.
// Its announcement must not keep naming the position it lost: if the
// winner dies before publishing, the consumer is stuck at that position,
// sees a live producer announcing it and cannot skip it; the ring stays
// full, so the loser's TryClaim keeps failing before it ever announces
// again, and the stall is permanent.
//
// The race is made likely by putting the loser's announcement word on a
// page that was just dropped (MADV_DONTNEED), so its announcing store
// takes a page fault between its load of the tail and its CAS, while
// the winner, spinning on another CPU, claims the same position.
func TestLostClaimLeavesNoAnnouncement(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two CPUs for the race")
	}
	page, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(page)
	loserAnn := (*atomic.Uint64)(unsafe.Pointer(&page[0]))
	const capacity, ringID = 4, 5
	stuck := uint64(capacity - 1)
	deadline := time.Now().Add(2 * time.Second)
	trials, winnerWon, stale := 0, 0, 0
	for trials < 3000 && time.Now().Before(deadline) {
		trials++
		r := newTestRing(capacity, ringID)
		var fillAnn, winnerAnn atomic.Uint64
		filler := r.NewProducer(1, &fillAnn)
		for seq := range capacity - 1 {
			send(filler, 1, seq)
		}
		loser := r.NewProducer(2, loserAnn)
		winner := r.NewProducer(3, &winnerAnn)
		if err := unix.Madvise(page, unix.MADV_DONTNEED); err != nil {
			t.Fatal(err)
		}
		var ready, start atomic.Bool
		done := make(chan bool)
		go func() {
			ready.Store(true)
			for !start.Load() {
			}
			_, ok := winner.TryClaim()
			done <- ok
		}()
		for !ready.Load() {
		}
		start.Store(true)
		_, loserOK := loser.TryClaim()
		winnerOK := <-done
		if loserOK == winnerOK {
			t.Fatalf("trial %d: one free slot, loser ok %v, winner ok %v", trials, loserOK, winnerOK)
		}
		if loserOK {
			continue
		}
		winnerWon++
		// The winner "dies" holding the last free position. The consumer
		// drains up to it.
		c := NewConsumer(r.Ring)
		for seq := range capacity - 1 {
			expectMsg(t, c, 1, seq)
		}
		c.Flush()
		if c.Ready() || !c.Claimed() || !c.Announced(winnerAnn.Load()) {
			t.Fatalf("trial %d: consumer at %d: ready %v claimed %v, winner announces %#x", trials, stuck, c.Ready(), c.Claimed(), winnerAnn.Load())
		}
		if !c.Announced(loserAnn.Load()) {
			continue
		}
		stale++
		// The loser's stale announcement names the dead winner's position.
		// Fill the ring behind it: the loser can no longer claim, so it
		// never announces again, and the consumer can never skip.
		for seq := capacity - 1; seq < 2*capacity-2; seq++ {
			if !send(filler, 1, seq) {
				t.Fatalf("filler claim %d failed", seq)
			}
		}
		if _, ok := loser.TryClaim(); ok {
			t.Fatal("claim succeeded on a full ring")
		}
		if c.Announced(loserAnn.Load()) {
			t.Fatalf("after %d trials (%d lost by the loser): a live producer whose TryClaim failed still announces "+
				"position %d (word %#x), which another producer claimed and never published; the consumer cannot skip "+
				"it while that producer lives, and with the ring full the producer never announces again: a permanent stall",
				trials, winnerWon, stuck, loserAnn.Load())
		}
	}
	t.Logf("%d trials, the other producer won %d, stale announcements %d", trials, winnerWon, stale)
}

// An announcement word nobody has written yet (zeroed shared memory, a
// producer that has never claimed) announces nothing. Read literally,
// zero is "ring 0, position 0": a live producer that has not sent yet
// would then block the skip of a dead claimer at position 0 of ring 0.
func TestZeroAnnouncementNamesNothing(t *testing.T) {
	r := newTestRing(4, 0)
	var deadAnn, idleAnn atomic.Uint64
	r.NewProducer(1, &idleAnn) // live, has not sent anything yet
	dead := r.NewProducer(2, &deadAnn)
	c := NewConsumer(r.Ring)
	if _, ok := dead.TryClaim(); !ok {
		t.Fatal("claim failed")
	}
	if !c.Claimed() || c.Ready() || !c.Announced(deadAnn.Load()) {
		t.Fatal("setup: position 0 is not claimed by the dead producer")
	}
	if c.Announced(idleAnn.Load()) {
		t.Fatalf("a zero announcement word (a producer that never claimed) names ring 0 position 0: " +
			"a dead claimer there cannot be skipped while any producer that has not sent yet is alive")
	}
}

// A live claimer is never taken for dead: while it fills its slot, the
// consumer sees it announce the position; once published, the slot is
// ready whatever the announcement says afterwards.
func TestAnnouncementFollowsClaims(t *testing.T) {
	r := newTestRing(4, 8)
	var a1, a2 atomic.Uint64
	p1 := r.NewProducer(1, &a1)
	p2 := r.NewProducer(2, &a2)
	c := NewConsumer(r.Ring)
	for pos := range 40 {
		p, a, id := p1, &a1, 1
		if pos%3 == 0 {
			p, a, id = p2, &a2, 2
		}
		cl, ok := p.TryClaim()
		if !ok {
			t.Fatalf("claim at %d failed", pos)
		}
		if !c.Claimed() || c.Ready() || !c.Announced(a.Load()) {
			t.Fatalf("position %d: claimed %v ready %v, announcement %#x", pos, c.Claimed(), c.Ready(), a.Load())
		}
		writeMsg(cl.Payload(), id, pos)
		cl.Publish()
		expectMsg(t, c, id, pos)
		c.Flush()
	}
}

func BenchmarkClaimPublishConsume(b *testing.B) {
	r := newTestRing(256, 1)
	var ann atomic.Uint64
	p := r.NewProducer(1, &ann)
	c := NewConsumer(r.Ring)
	var sum uint64
	for b.Loop() {
		cl, ok := p.TryClaim()
		if !ok {
			b.Fatal("ring full")
		}
		*(*uint64)(cl.Payload()) = 42
		cl.Publish()
		_, pl, ok := c.Peek()
		if !ok {
			b.Fatal("not ready")
		}
		sum += *(*uint64)(pl)
		c.Release()
	}
	runtime.KeepAlive(sum)
}

// Batches of a quarter ring: claims and consumes run ahead of each other.
func BenchmarkClaimPublishConsumeBatch(b *testing.B) {
	const capacity, batch = 256, 64
	r := newTestRing(capacity, 1)
	var ann atomic.Uint64
	p := r.NewProducer(1, &ann)
	c := NewConsumer(r.Ring)
	n := 0
	for b.Loop() {
		cl, ok := p.TryClaim()
		if !ok {
			b.Fatal("ring full")
		}
		*(*uint64)(cl.Payload()) = 42
		cl.Publish()
		if n++; n == batch {
			for range batch {
				c.Peek()
				c.Release()
			}
			n = 0
		}
	}
}

// One producer goroutine, one consumer goroutine: the cache-line hand-off.
func BenchmarkProducerConsumerGoroutines(b *testing.B) {
	r := newTestRing(256, 1)
	var ann atomic.Uint64
	p := r.NewProducer(1, &ann)
	c := NewConsumer(r.Ring)
	n := b.N
	done := make(chan struct{})
	b.ResetTimer()
	go func() {
		defer close(done)
		for i := 0; i < n; {
			if _, _, ok := c.Peek(); ok {
				c.Release()
				i++
			} else {
				c.Flush()
			}
		}
	}()
	for i := 0; i < n; {
		if cl, ok := p.TryClaim(); ok {
			*(*uint64)(cl.Payload()) = uint64(i)
			cl.Publish()
			i++
		}
	}
	<-done
}

// Two short records share a line; a full record claimed at an odd
// position goes behind a pad, which the consumer passes over.
func TestShortRecordsAndPads(t *testing.T) {
	r := newTestRing(4, 1)
	var ann atomic.Uint64
	id := mixedBase + 2 // isShort(id, 0) and (id, 3) hold, (id, 1) and (id, 2) do not
	if !isShort(id, 0) || isShort(id, 1) || isShort(id, 2) || !isShort(id, 3) {
		t.Fatal("test setup: isShort changed")
	}
	p := r.NewProducer(id, &ann)
	c := NewConsumer(r.Ring)
	for seq, wantTail := range []uint64{1, 4, 6, 7} {
		if !sendMixed(p, id, seq) {
			t.Fatalf("claim %d failed", seq)
		}
		if *r.tailWord() != wantTail {
			t.Fatalf("after message %d the tail is %d, want %d", seq, *r.tailWord(), wantTail)
		}
	}
	if v := *r.slotWord(0)>>formShift&formMask | *r.slotWord(1)>>formShift&formMask<<4; v != formShort|formPad<<4 {
		t.Fatalf("units 0 and 1: forms %#x, want a short record and a pad", v)
	}
	for seq := range 4 {
		expectMsg(t, c, id, seq)
	}
	if c.Ready() || c.Claimed() || c.pos != 7 {
		t.Fatalf("consumer at %d after the last message, ready %v", c.pos, c.Ready())
	}
}

// A full record's guard word (the first word of its second unit, payload
// bytes 24..31) is an odd position's control word in other laps. Even
// when its payload there is exactly the control word a later short
// record at that position will have, the consumer must not take it for
// one, and the payload must still arrive intact.
func TestGuardWordNeverReadAsControl(t *testing.T) {
	const capacity = 2 // four units
	r := newTestRing(capacity, 1)
	var ann atomic.Uint64
	const id = 7
	p := r.NewProducer(id, &ann)
	c := NewConsumer(r.Ring)
	// Lap 0: full records at units 0 and 2, whose guard words forge the
	// short records of lap 1 at units 5 and 7.
	for _, pos := range []uint64{0, 2} {
		cl, ok := p.TryClaim()
		if !ok {
			t.Fatal("claim failed")
		}
		b := payload(cl.Payload())
		for i := range b {
			b[i] = byte(i)
		}
		forged := p.control(pos+1+2*capacity, formShort)
		*(*uint64)(unsafe.Pointer(&b[guardOff-8])) = forged
		cl.Publish()
		_, got, short, ok := c.PeekRecord()
		if !ok || short {
			t.Fatalf("full record at %d: ok %v short %v", pos, ok, short)
		}
		if g := *(*uint64)(unsafe.Add(got, guardOff-8)); g != forged {
			t.Fatalf("guard word arrived as %#x, want %#x", g, forged)
		}
		for i, v := range payload(got) {
			if (i < guardOff-8 || i >= guardOff) && v != byte(i) {
				t.Fatalf("payload byte %d is %#x", i, v)
			}
		}
		c.Release()
	}
	// Lap 1: short records; each odd unit must stay unready until its
	// own record is published.
	shortLap(t, r, p, c, 4, 8)
}

// shortLap sends short records at units from to to-1, one at a time:
// each unit must be unready until its record is claimed and published,
// whatever an earlier lap left there.
func shortLap(t *testing.T, r *testRing, p *Producer, c *Consumer, from, to uint64) {
	t.Helper()
	for pos := from; pos < to; pos++ {
		if c.Ready() {
			t.Fatalf("unit %d ready before anything was claimed there (word %#x)", pos, *r.slotWord(pos))
		}
		cl, ok := p.TryClaimShort()
		if !ok {
			t.Fatal("short claim failed")
		}
		if c.Ready() {
			t.Fatalf("unit %d ready while claimed and unpublished", pos)
		}
		*(*uint64)(cl.Payload()) = pos
		cl.Publish()
		if _, got, short, ok := c.PeekRecord(); !ok || !short || *(*uint64)(got) != pos {
			t.Fatalf("short record at %d: ok %v short %v", pos, ok, short)
		}
		c.Release()
	}
}

// A producer that dies holding a full record claimed at an odd position
// (a pad and the record) is skipped whole, and the live producer's
// messages after it arrive.
func TestSkipDeadClaimBehindPad(t *testing.T) {
	r := newTestRing(8, 2)
	var liveAnn, deadAnn atomic.Uint64
	live := r.NewProducer(1, &liveAnn)
	dead := r.NewProducer(2, &deadAnn)
	c := NewConsumer(r.Ring)
	cl, ok := live.TryClaimShort()
	if !ok {
		t.Fatal("claim failed")
	}
	*(*uint64)(cl.Payload()) = 11
	cl.Publish()
	if _, ok := dead.TryClaim(); !ok { // units 1 (pad) to 3
		t.Fatal("claim failed")
	}
	send(live, 1, 0) // units 4 and 5
	if _, p, short, ok := c.PeekRecord(); !ok || !short || *(*uint64)(p) != 11 {
		t.Fatal("first short record")
	}
	c.Release()
	if c.Ready() || !c.Claimed() || !c.Announced(deadAnn.Load()) || c.Announced(liveAnn.Load()) {
		t.Fatalf("at unit %d: ready %v claimed %v, dead announces %#x", c.pos, c.Ready(), c.Claimed(), deadAnn.Load())
	}
	c.Skip(deadAnn.Load())
	if c.pos != 4 {
		t.Fatalf("skip of a padded full claim at 1 moved the consumer to %d, want 4", c.pos)
	}
	expectMsg(t, c, 1, 0)
}

// Double records (two lines): behind a pad of one unit at an odd
// position, behind a pad of two at the ring's end (a double record never
// wraps), their guard words' top bits restored, and a dead double claim
// skipped whole.
func TestDoubleRecords(t *testing.T) {
	const capacity = 4 // eight units
	r := newTestRing(capacity, 1)
	var ann, deadAnn atomic.Uint64
	p := r.NewProducer(3, &ann)
	dead := r.NewProducer(4, &deadAnn)
	c := NewConsumer(r.Ring)
	sendDouble := func(fill byte, guarded bool) {
		t.Helper()
		cl, ok := p.TryClaimDouble()
		if !ok {
			t.Fatal("double claim failed")
		}
		b := unsafe.Slice((*byte)(cl.Payload()), DoublePayloadSize)
		for i := range b {
			b[i] = fill
		}
		if !guarded {
			cl.Publish()
			return
		}
		var hi uint64
		for k := range 3 {
			top := GuardOffset + k*GuardStride + 7
			if b[top]&0x80 != 0 {
				b[top] &^= 0x80
				hi |= 1 << k
			}
		}
		cl.PublishGuarded(hi)
	}
	expectDouble := func(fill byte, wantPos uint64) {
		t.Helper()
		_, got, short, ok := c.PeekRecord()
		if !ok || short || c.size != sizeDouble {
			t.Fatalf("at %d: ok %v short %v size %d", c.pos, ok, short, c.size)
		}
		for i, v := range unsafe.Slice((*byte)(got), DoublePayloadSize) {
			if v != fill {
				t.Fatalf("payload byte %d is %#x, want %#x", i, v, fill)
			}
		}
		c.Release()
		if c.pos != wantPos {
			t.Fatalf("consumer at %d after the double record, want %d", c.pos, wantPos)
		}
	}
	cl, _ := p.TryClaimShort()
	cl.Publish()
	sendDouble(0xff, false) // a pad at 1, the record at 2 to 5
	if *r.tailWord() != 6 {
		t.Fatalf("tail %d, want 6", *r.tailWord())
	}
	c.PeekRecord()
	c.Release()
	expectDouble(0xff, 6)
	c.Flush()
	sendDouble(0x9c, true) // a pad at 6 and 7, the record at 8 to 11
	if *r.tailWord() != 12 {
		t.Fatalf("tail %d, want 12 (a pad to the ring's end)", *r.tailWord())
	}
	expectDouble(0x9c, 12)
	c.Flush()
	// A producer dies holding a double record claimed at 13: 14 is the
	// ring's unit 6, where it would wrap, so a pad 13 to 15 and the
	// record 16 to 19.
	cl, _ = p.TryClaimShort() // 12
	cl.Publish()
	if _, ok := dead.TryClaimDouble(); !ok {
		t.Fatal("dead producer's claim failed")
	}
	if *r.tailWord() != 20 {
		t.Fatalf("tail %d, want 20", *r.tailWord())
	}
	c.PeekRecord()
	c.Release()
	if c.Ready() || !c.Claimed() || !c.Announced(deadAnn.Load()) {
		t.Fatalf("at %d: ready %v claimed %v", c.pos, c.Ready(), c.Claimed())
	}
	c.Skip(deadAnn.Load())
	if c.pos != 20 {
		t.Fatalf("skip of the dead double claim moved the consumer to %d, want 20", c.pos)
	}
	c.Flush()
	sendDouble(0x41, true)
	expectDouble(0x41, 24)
}

// A double record's later guard words (payload bytes 56..63 and 88..95,
// the first words of its third and fourth units) forge the control words
// of the short records the next lap puts there: the consumer must not
// take them for published ones.
func TestDoubleGuardWordsNeverReadAsControl(t *testing.T) {
	const capacity = 4
	r := newTestRing(capacity, 1)
	var ann atomic.Uint64
	p := r.NewProducer(7, &ann)
	c := NewConsumer(r.Ring)
	for _, pos := range []uint64{0, 4} {
		cl, ok := p.TryClaimDouble()
		if !ok {
			t.Fatal("claim failed")
		}
		b := unsafe.Slice((*byte)(cl.Payload()), DoublePayloadSize)
		for k := range 3 {
			*(*uint64)(unsafe.Pointer(&b[GuardOffset+k*GuardStride])) = p.control(pos+uint64(k)+1+2*capacity, formShort)
		}
		cl.Publish()
		c.PeekRecord()
		c.Release()
	}
	shortLap(t, r, p, c, 8, 16)
}
