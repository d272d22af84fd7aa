package ring

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// alignedMem returns n bytes of zeroed memory aligned to 128 bytes (a ring
// in ordinary memory behaves as one in a shared segment).
func alignedMem(n int) unsafe.Pointer {
	buf := make([]uint64, n/8+16)
	p := unsafe.Pointer(&buf[0])
	return unsafe.Add(p, (128-uintptr(p)%128)%128)
}

func newTestRing(capacity int) (*Ring, unsafe.Pointer) {
	mem := alignedMem(Bytes(capacity))
	return New(mem, capacity, 7), mem
}

func put(t testing.TB, p *Producer, v uint64) bool {
	c, ok := p.TryClaim()
	if !ok {
		return false
	}
	binary.LittleEndian.PutUint64(unsafe.Slice((*byte)(c.Payload()), PayloadSize), v)
	c.Publish()
	return true
}

func get(c *Consumer) (uint32, uint64, bool) {
	id, pl, ok := c.Peek()
	if !ok {
		return 0, 0, false
	}
	v := binary.LittleEndian.Uint64(unsafe.Slice((*byte)(pl), PayloadSize))
	c.Release()
	return id, v, true
}

func TestEmptyAndOrder(t *testing.T) {
	r, _ := newTestRing(8)
	var ann atomic.Uint64
	p := r.NewProducer(3, &ann)
	c := NewConsumer(r)
	if c.Ready() {
		t.Fatal("empty ring is ready")
	}
	for i := range 5 {
		if !put(t, p, uint64(100+i)) {
			t.Fatalf("claim %d failed", i)
		}
	}
	for i := range 5 {
		id, v, ok := get(c)
		if !ok || id != 3 || v != uint64(100+i) {
			t.Fatalf("message %d: id %d value %d ok %v", i, id, v, ok)
		}
	}
	if _, _, ok := get(c); ok {
		t.Fatal("a sixth message")
	}
}

// TryClaim fails exactly when capacity messages are outstanding, and
// works again once the consumer has flushed its position.
func TestFullAndFlush(t *testing.T) {
	r, _ := newTestRing(4)
	var ann atomic.Uint64
	p := r.NewProducer(1, &ann)
	c := NewConsumer(r)
	for lap := range 1000 {
		for i := range 4 {
			if !put(t, p, uint64(lap*4+i)) {
				t.Fatalf("lap %d: claim %d failed", lap, i)
			}
		}
		if put(t, p, 0) {
			t.Fatalf("lap %d: claim succeeded on a full ring", lap)
		}
		for i := range 4 {
			if _, v, ok := get(c); !ok || v != uint64(lap*4+i) {
				t.Fatalf("lap %d: message %d = %d %v", lap, i, v, ok)
			}
		}
		// Released but not flushed: a producer cannot know yet (unless
		// Release flushed by itself, at a quarter lap).
		c.Flush()
	}
}

// Positions are compared modulo 2^40 in the slot word: a ring whose
// counters start just below 2^40 keeps working across the wrap.
func TestSequenceWrap(t *testing.T) {
	r, mem := newTestRing(4)
	start := uint64(1)<<40 - 6
	*(*uint64)(mem) = start                  // tail
	*(*uint64)(unsafe.Add(mem, 128)) = start // head
	var ann atomic.Uint64
	p := r.NewProducer(9, &ann)
	c := NewConsumer(r)
	for i := range 40 {
		if !put(t, p, uint64(i)) {
			t.Fatalf("claim %d failed", i)
		}
		id, v, ok := get(c)
		if !ok || id != 9 || v != uint64(i) {
			t.Fatalf("message %d across the wrap: %d %d %v", i, id, v, ok)
		}
		c.Flush()
	}
}

// Many producers (goroutines here, processes in the stress test): every
// message arrives exactly once and each producer's messages in order.
func TestMultiProducer(t *testing.T) {
	const producers, per = 6, 20000
	r, _ := newTestRing(16)
	var anns [producers]atomic.Uint64
	var wg sync.WaitGroup
	for id := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := r.NewProducer(id, &anns[id])
			for i := 0; i < per; {
				if put(t, p, uint64(id)<<32|uint64(i)) {
					i++
				}
			}
		}()
	}
	c := NewConsumer(r)
	next := make([]uint32, producers)
	for got := 0; got < producers*per; {
		id, v, ok := get(c)
		if !ok {
			c.Flush()
			continue
		}
		if uint32(v>>32) != id || uint32(v) != next[id] {
			t.Fatalf("from %d: %x, want sequence %d", id, v, next[id])
		}
		next[id]++
		got++
	}
	wg.Wait()
}

// A producer that claims and never publishes: the consumer sees a claimed
// slot announced by it, skips it, and goes on with the others.
func TestSkipDeadClaimer(t *testing.T) {
	r, _ := newTestRing(8)
	var dead, live atomic.Uint64
	pd := r.NewProducer(1, &dead)
	pl := r.NewProducer(2, &live)
	c := NewConsumer(r)
	put(t, pl, 10)
	if _, ok := pd.TryClaim(); !ok { // claims position 1, then "dies"
		t.Fatal("claim failed")
	}
	put(t, pl, 11)
	put(t, pl, 12)
	if _, v, ok := get(c); !ok || v != 10 {
		t.Fatalf("first message %d %v", v, ok)
	}
	if c.Ready() {
		t.Fatal("unpublished slot is ready")
	}
	if !c.Claimed() {
		t.Fatal("claimed slot not reported as claimed")
	}
	if !c.Announced(dead.Load()) || c.Announced(live.Load()) {
		t.Fatalf("announcements: dead %x live %x", dead.Load(), live.Load())
	}
	c.Skip()
	for _, want := range []uint64{11, 12} {
		if id, v, ok := get(c); !ok || id != 2 || v != want {
			t.Fatalf("after skip: %d %d %v", id, v, ok)
		}
	}
	if c.Claimed() {
		t.Fatal("nothing claimed any more")
	}
}

func BenchmarkClaimPublishConsume(b *testing.B) {
	r, _ := newTestRing(256)
	var ann atomic.Uint64
	p := r.NewProducer(1, &ann)
	c := NewConsumer(r)
	for b.Loop() {
		put(b, p, 1)
		get(c)
	}
}
