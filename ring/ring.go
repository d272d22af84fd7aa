// Package ring implements a bounded, lock-free, multi-producer
// single-consumer ring of records over shared memory, for processes that
// may die at any instruction.
//
// Producers claim positions with a CAS on the ring's tail and then fill
// the record with plain stores; the last store, the record's control
// word, publishes it. A record is a whole cache line (full) or half of
// one (short), so that a consumer that is behind reads two short
// messages per line. The consumer only reads records: it never writes a
// slot line, so a line costs the producer one ownership transfer and the
// consumer one read of it (the producer requests the line a few slots
// ahead, while it is idle: prefetchAhead). The consumer's position lives
// on a line of its own, which producers read only when their cached copy
// says the ring may be full.
//
// A producer that dies between claiming and publishing would block the
// consumer forever. So before its CAS each producer announces the
// position it is about to claim, and whether the claim is a full record,
// in a word of its own (Announce). The consumer, stuck at a claimed but
// unpublished position, can then find every producer that announced it;
// if all of them are dead, the owner died and the consumer skips its
// claim (Skip).
//
// Zeroed memory is an empty ring. The ring knows nothing of who the
// producers are: a producer is a 24-bit id, and liveness is the caller's
// business.
package ring

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/internal/spin"
)

// SlotSize is the size of one slot: one cache line. A ring's capacity
// counts slots; a full record fills one.
const SlotSize = 64

// PayloadSize is what a full record carries after its control word.
const PayloadSize = SlotSize - 8

// UnitSize is the ring's grain: half a slot. Positions count units.
const UnitSize = 32

// ShortPayloadSize is what a short record (one unit) carries after its
// control word.
const ShortPayloadSize = UnitSize - 8

// HeaderSize is the ring header before the slots: the tail line and the
// head line, each alone in a 128-byte pair of lines, because x86's
// adjacent-line prefetcher moves lines in pairs: a consumer writing its
// head must not drag the producers' tail line away from them.
const HeaderSize = 256

// MaxProducer is the largest producer id.
const MaxProducer = 1<<24 - 1

// MaxRing is the largest ring id (announcements carry it).
const MaxRing = 1<<24 - 1

// Records. A full record is two units starting at an even position: a
// whole slot, its control word first, then PayloadSize bytes. A double
// record is four units (two lines) starting at an even position, with
// DoublePayloadSize bytes. A short record is one unit at any position:
// control word, then ShortPayloadSize bytes. Two short records share a
// line, so a consumer that is behind reads two messages per line it
// fetches. A full or double record starts at an even position, and a
// double one does not wrap around the ring's end; a pad of one to three
// units, which the consumer passes over, fills the gap before it.
//
// Only control words are ever read as such, and a consumer must never
// take stale bytes for one: any position is a record's control word in
// one lap and may be inside a full or double record in another (payload
// bytes 24..31, 56..63 or 88..95: the guard words, the first words of the
// record's later units). So guard words have bit 63 clear when published
// (the writer moves those bits into the control word's hi bits, and Peek
// puts them back in a private copy), and every published control word
// has bit 63 set.
//
// Control word (uint64):
//
//	bits  0..23  producer id
//	bits 24..25  form: formFull, formShort, formPad or formDouble
//	bits 26..28  hi bits: bit 63 of guard words 0, 1 and 2
//	bits 29..62  the record's position plus one, modulo 2^34
//	bit  63      set once the record has been written
//
// Zero means never written; bit 63 keeps a position whose sequence wraps
// to zero from looking like an untouched slot. Positions themselves are
// 64-bit counters; comparing them modulo 2^34 is exact because a unit is
// reused every 2*capacity positions.
const (
	seqShift   = 29
	seqMask    = 1<<34 - 1
	idMask     = 1<<24 - 1
	formShift  = 24
	formMask   = 3
	formFull   = 0
	formShort  = 1
	formPad    = 2
	formDouble = 3
	hiShift    = 26
	hiBit      = 1 << hiShift // guard word 0's
	hiMask     = 7 << hiShift
	written    = 1 << 63
	guardOff   = UnitSize // guard word k is at guardOff*(k+1) from the control word
)

// Record sizes in units, as claims name them.
const (
	sizeShort  = 1
	sizeFull   = 2
	sizeDouble = 4
)

// Announcement word: bit 63 set when it announces anything, the ring id
// in bits 39..62, the claim's size (annShort, annFull or annDouble) in
// bits 37..38 (a full or double claim at an odd position includes its
// pad), the claim's first position (mod 2^37) in bits 0..36. Zero, as in
// fresh shared memory, announces nothing.
const (
	annValid   = 1 << 63
	annRingPos = 39
	annSizePos = 37
	annFull    = 1 << annSizePos
	annDouble  = 2 << annSizePos
	annSizes   = 3 << annSizePos
	annPosMask = 1<<annSizePos - 1
)

// Bytes returns the size of a ring with capacity slots.
func Bytes(capacity int) int { return HeaderSize + capacity*SlotSize }

// Ring is a view of a ring in shared memory. Layout (HeaderSize +
// capacity*SlotSize bytes, 128-byte aligned):
//
//	+0    tail uint64   next position (unit) producers claim (CAS)
//	+128  head uint64   consumer's position, published for producers
//	+256  units [2*capacity][32]byte; a record starts with its control word
type Ring struct {
	id    uint64
	tail  *atomic.Uint64
	head  *atomic.Uint64
	slots unsafe.Pointer
	mask  uint64 // units - 1
}

// New views the ring with id id at mem (128-byte aligned, Bytes(capacity)
// long). capacity must be a power of two, and at least 2: a full record
// behind a pad takes three units.
func New(mem unsafe.Pointer, capacity int, id int) *Ring {
	if capacity < 2 || capacity&(capacity-1) != 0 {
		panic(fmt.Sprintf("ring: capacity %d is not a power of two of at least 2", capacity))
	}
	if uintptr(mem)%128 != 0 {
		panic("ring: memory not aligned to a pair of cache lines")
	}
	if id < 0 || id > MaxRing {
		panic(fmt.Sprintf("ring: id %d out of range", id))
	}
	return &Ring{
		id:    uint64(id),
		tail:  (*atomic.Uint64)(mem),
		head:  (*atomic.Uint64)(unsafe.Add(mem, 128)),
		slots: unsafe.Add(mem, HeaderSize),
		mask:  uint64(2*capacity - 1),
	}
}

// Capacity is the number of slots.
func (r *Ring) Capacity() int { return int(r.mask+1) / 2 }

func (r *Ring) word(pos uint64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Add(r.slots, (pos&r.mask)*UnitSize))
}

// Producer is one producer's handle on one ring: its id, its
// announcement word (shared memory that only this producer writes, one
// word for all the rings it sends to), and its cached copy of the
// consumer's position. A Producer is not safe for concurrent use, and the
// Producers sharing one announcement word must be used one at a time,
// each publishing its claimed record before any of them claims again:
// otherwise an earlier claim is no longer announced and a consumer could
// skip it while its producer lives.
type Producer struct {
	r      *Ring
	id     uint64
	ann    *atomic.Uint64
	cached uint64
	annTop uint64 // annValid | ring id: an announcement but for the position
}

// NewProducer makes producer id's handle on r, announcing in ann.
func (r *Ring) NewProducer(id int, ann *atomic.Uint64) *Producer {
	if id < 0 || id > MaxProducer {
		panic(fmt.Sprintf("ring: producer id %d out of range", id))
	}
	return &Producer{r: r, id: uint64(id), ann: ann, annTop: annValid | r.id<<annRingPos}
}

// Claimed is a record a producer owns until it calls Publish.
type Claimed struct {
	word *atomic.Uint64 // the record's control word
	ctl  uint64         // its published value
	pad  *atomic.Uint64 // the pad before a full or double record, or nil
	padV uint64
}

// Payload is the record's payload: PayloadSize bytes for a full record,
// DoublePayloadSize for a double one, ShortPayloadSize for a short one.
func (c Claimed) Payload() unsafe.Pointer { return unsafe.Add(unsafe.Pointer(c.word), 8) }

// DoublePayloadSize is what a double record carries after its control
// word.
const DoublePayloadSize = 2*SlotSize - 8

// GuardOffset is where a full or double record's first guard word
// starts in its payload (the first word of the record's second unit);
// a double record's others start GuardStride and 2*GuardStride later.
const (
	GuardOffset = guardOff - 8
	GuardStride = UnitSize
)

// PublishGuarded is Publish for a writer that kept bit 63 of the guard
// words clear itself (for guard k, payload bytes GuardOffset+k*GuardStride
// to +7, the last of them with its top bit clear); bit k of hi is guard
// k's true bit, which the consumer puts back. Publish must load the bytes
// to clear them, and a load of a line being written costs the publish a
// wait (8-byte osu_latency: 15 ns).
func (c Claimed) PublishGuarded(hi uint64) {
	v := c.ctl | hi<<hiShift
	spin.StoreRelease64((*uint64)(unsafe.Pointer(c.word)), v)
	if c.pad != nil {
		spin.StoreRelease64((*uint64)(unsafe.Pointer(c.pad)), c.padV)
	}
}

// PublishGuardedFence is PublishGuarded with PublishFence's ordering.
func (c Claimed) PublishGuardedFence(hi uint64) {
	v := c.ctl | hi<<hiShift
	if c.pad == nil {
		c.word.Store(v)
		return
	}
	spin.StoreRelease64((*uint64)(unsafe.Pointer(c.word)), v)
	c.pad.Store(c.padV)
}

// seal is the control word to publish, after clearing bit 63 of a full
// record's guard word (it lives on in hiBit). It touches only the
// word's top byte: the payload was just stored, and a load of the whole
// word that overlaps those stores only in part could not take its bytes
// from the store buffer and would wait for them to reach the cache.
func (c Claimed) seal() uint64 {
	v := c.ctl
	n := guards(v)
	for k := range n {
		g := (*uint8)(unsafe.Add(unsafe.Pointer(c.word), guardOff*(k+1)+7))
		if *g&0x80 != 0 {
			*g &^= 0x80
			v |= hiBit << k
		}
	}
	return v
}

// guards is the number of guard words of the record whose control word
// is v.
func guards(v uint64) int {
	switch v >> formShift & formMask {
	case formFull:
		return 1
	case formDouble:
		return 3
	}
	return 0
}

// Publish hands the record to the consumer. It is a release store; a
// producer that must then read the consumer's doorbell needs a fence
// first (Fence), or it may miss a consumer going to sleep. A pad is
// published after its record: a consumer past the pad finds the record
// written.
func (c Claimed) Publish() {
	spin.StoreRelease64((*uint64)(unsafe.Pointer(c.word)), c.seal())
	if c.pad != nil {
		spin.StoreRelease64((*uint64)(unsafe.Pointer(c.pad)), c.padV)
	}
}

// PublishFence publishes with a sequentially consistent store: later
// loads (the consumer's doorbell) cannot pass it.
func (c Claimed) PublishFence() {
	if c.pad == nil {
		c.word.Store(c.seal())
		return
	}
	c.publishPadFence()
}

//go:noinline
func (c Claimed) publishPadFence() {
	spin.StoreRelease64((*uint64)(unsafe.Pointer(c.word)), c.seal())
	c.pad.Store(c.padV)
}

// TryClaim claims a full record. It fails only when the ring is full. It
// makes no syscall, takes no lock and allocates nothing.
//
// The announcement is written before each attempt and withdrawn after a
// failed one: a producer that lost a position to another must not go on
// naming it, or a consumer could never skip it should the winner die.
func (p *Producer) TryClaim() (Claimed, bool) { return p.claim(sizeFull) }

// TryClaimShort claims a short record, as TryClaim does a full one.
func (p *Producer) TryClaimShort() (Claimed, bool) { return p.claim(sizeShort) }

// TryClaimDouble claims a double record, as TryClaim does a full one.
// The ring must have a capacity of at least 4 slots (with its pads, a
// double record may need 7 units); it panics otherwise.
func (p *Producer) TryClaimDouble() (Claimed, bool) {
	if p.r.mask < 7 {
		panic("ring: a double record needs a capacity of at least 4")
	}
	return p.claim(sizeDouble)
}

func (p *Producer) claim(size uint64) (Claimed, bool) {
	r := p.r
	storeAnn(p.ann, 0) // after a failed TryClaimFast
	for {
		pos := r.tail.Load()
		need := r.units(pos, size)
		if pos+need-1-p.cached > r.mask {
			p.cached = r.head.Load()
			if pos+need-1-p.cached > r.mask {
				if r.tail.Load() == pos {
					return Claimed{}, false
				}
				continue
			}
		}
		// The announcement must be visible before the claim: the CAS is
		// a full fence, so a plain release store ahead of it is enough.
		storeAnn(p.ann, p.announcement(pos, size))
		if r.tail.CompareAndSwap(pos, pos+need) {
			return p.claimed(pos, size, need), true
		}
		storeAnn(p.ann, 0)
	}
}

// TryClaimFast is TryClaim's common case: room known from the cached
// head and no competing producer. If it fails, the caller must call
// TryClaim, which withdraws the announcement this may have left.
func (p *Producer) TryClaimFast() (Claimed, bool) { return p.claimFast(sizeFull) }

// TryClaimShortFast is TryClaimFast for a short record; after a failure
// the caller must call TryClaimShort.
func (p *Producer) TryClaimShortFast() (Claimed, bool) { return p.claimFast(sizeShort) }

func (p *Producer) claimFast(size uint64) (Claimed, bool) {
	r := p.r
	pos := r.tail.Load()
	need := r.units(pos, size)
	if pos+need-1-p.cached <= r.mask {
		storeAnn(p.ann, p.announcement(pos, size))
		if r.tail.CompareAndSwap(pos, pos+need) {
			return p.claimed(pos, size, need), true
		}
	}
	return Claimed{}, false // the slow path withdraws the announcement
}

// units is how many units a claim of a record of size units at pos
// takes. A full or double record starts at an even position and does not
// wrap around the ring's end (its payload is one stretch of memory), so
// a pad of up to 3 units may come first.
func (r *Ring) units(pos, size uint64) uint64 {
	if size == sizeShort {
		return 1
	}
	pad := pos & 1
	if at := (pos + pad) & r.mask; at+size > r.mask+1 {
		pad = r.mask + 1 - pos&r.mask // to the ring's start
	}
	return pad + size
}

// claimed is the claim of a record of size units at pos, need units in
// all with its pad.
func (p *Producer) claimed(pos, size, need uint64) Claimed {
	r := p.r
	spin.PrefetchWrite(unsafe.Pointer(r.word(pos + prefetchAhead)))
	if size == sizeDouble {
		spin.PrefetchWrite(unsafe.Pointer(r.word(pos + prefetchAhead + 2)))
	}
	form := uint64(formFull)
	switch size {
	case sizeShort:
		return Claimed{word: r.word(pos), ctl: p.control(pos, formShort)}
	case sizeDouble:
		form = formDouble
	}
	pad := need - size
	at := pos + pad
	c := Claimed{word: r.word(at), ctl: p.control(at, form)}
	if pad > 0 {
		// A pad's hi bits hold its length.
		c.pad, c.padV = r.word(pos), p.control(pos, formPad)|pad<<hiShift
	}
	return c
}

func (p *Producer) control(pos uint64, form uint64) uint64 {
	return written | ((pos+1)&seqMask)<<seqShift | form<<formShift | p.id
}

func (p *Producer) announcement(pos, size uint64) uint64 {
	a := p.annTop | pos&annPosMask
	switch size {
	case sizeFull:
		a |= annFull
	case sizeDouble:
		a |= annDouble
	}
	return a
}

// prefetchAhead is how far past its claim (in units) a producer asks for
// ownership of a line (PREFETCHW), so that when it writes a record there
// later its publishing fence does not wait for the line to come from the
// consumer, which read it a lap ago. Consumers never read past the tail,
// so the line is idle when it moves (unless another producer is about to
// claim there: one extra move then). osu_mbw_mr 1 B, one pair, 2026-11-25:
// 5.6-7.1 million messages/s without it, 8.0-9.3 with 4 slots ahead (2 to
// 8 alike, 16 less).
const prefetchAhead = 8

func storeAnn(w *atomic.Uint64, v uint64) { spin.StoreRelease64((*uint64)(unsafe.Pointer(w)), v) }

// expect is the control word of a published record at position pos, but
// for the form, hiBit and producer id.
func expect(pos uint64) uint64 { return (written | ((pos+1)&seqMask)<<seqShift) >> seqShift }

// Consumer is the single reader of a ring; it is not safe for concurrent
// use. Its position is private to the consumer's process; it is
// published to producers on the ring's head line at Flush, and by itself
// every quarter lap.
type Consumer struct {
	r         *Ring
	pos       uint64
	published uint64
	size      uint64     // units of the record Peek returned
	copy      [15]uint64 // a record's payload with its guard bits restored
}

// NewConsumer starts reading r at its current head.
func NewConsumer(r *Ring) *Consumer {
	c := &Consumer{r: r}
	h := r.head.Load()
	c.pos = h
	c.published = h
	return c
}

// Ready reports whether the record at the head is published (or is a
// pad, which Peek passes over): two loads.
func (c *Consumer) Ready() bool {
	h := c.pos
	return c.r.word(h).Load()>>seqShift == expect(h)
}

// Peek returns the producer id and payload of the record at the head, or
// ok false if it is not published yet. It passes over pads. The payload
// is valid until Release: PayloadSize bytes for a full record,
// DoublePayloadSize for a double one, ShortPayloadSize for a short one.
func (c *Consumer) Peek() (id uint32, payload unsafe.Pointer, ok bool) {
	id, payload, _, ok = c.PeekRecord()
	return
}

// PeekRecord is Peek, and says whether the record is short.
func (c *Consumer) PeekRecord() (id uint32, payload unsafe.Pointer, short, ok bool) {
	h := c.pos
	w := c.r.word(h)
	v := w.Load()
	if v>>seqShift != expect(h) {
		return 0, nil, false, false
	}
	f := v & (formMask<<formShift | hiMask)
	if f > formShort<<formShift {
		return c.peekRare(v)
	}
	c.size = 2 - f>>formShift // formFull 0, formShort 1
	return uint32(v & idMask), unsafe.Add(unsafe.Pointer(w), 8), f != 0, true
}

// peekRare is PeekRecord at a pad, at a double record, or at a full one
// whose guard bits the producer moved into the control word v.
//
//go:noinline
func (c *Consumer) peekRare(v uint64) (id uint32, payload unsafe.Pointer, short, ok bool) {
	form := v >> formShift & formMask
	if form == formPad {
		c.pos += v & hiMask >> hiShift
		return c.PeekRecord() // a pad is never followed by another
	}
	c.size = sizeFull
	n := PayloadSize / 8
	if form == formDouble {
		c.size = sizeDouble
		n = DoublePayloadSize / 8
	}
	p := unsafe.Add(unsafe.Pointer(c.r.word(c.pos)), 8)
	if v&hiMask == 0 {
		return uint32(v & idMask), p, false, true
	}
	// Restore the guard words' bits in a private copy: the consumer
	// never writes a record.
	for i := range n {
		c.copy[i] = *(*uint64)(unsafe.Add(p, i*8))
	}
	for k := range guards(v) {
		if v&(hiBit<<k) != 0 {
			c.copy[(guardOff*(k+1)-8)/8] |= written
		}
	}
	return uint32(v & idMask), unsafe.Pointer(&c.copy), false, true
}

// Claimed reports whether a producer has claimed the head position (it
// is then being written, or its writer died). It reads the producers'
// tail line, taking it from them: call it only on a slow path.
func (c *Consumer) Claimed() bool { return c.r.tail.Load() > c.pos }

// Release consumes the head record, which Peek returned (published) and
// the caller has fully read.
func (c *Consumer) Release() {
	c.pos += c.size
	if c.pos-c.published > c.r.mask/4 {
		c.Flush()
	}
}

// Flush publishes the consumer's position, so that producers may reuse
// the consumed slots. The engine calls it when idle, off the critical
// path of a message.
func (c *Consumer) Flush() {
	if h := c.pos; h != c.published {
		spin.StoreRelease64((*uint64)(unsafe.Pointer(c.r.head)), h)
		c.published = h
	}
}

// Announced reports whether announcement word v says its producer is
// claiming (or owns) the consumer's current position.
func (c *Consumer) Announced(v uint64) bool {
	return v&^annSizes == c.r.announce(c.pos)
}

// Skip passes over the claim at the head position, whose owner died
// before publishing it. The caller has checked that the position is
// Claimed, still not published, and that every producer announcing it is
// dead; ann is the announcement of one of them (it says how long the
// claim is), or 0 if none announced it (one unit is skipped then).
func (c *Consumer) Skip(ann uint64) {
	size := uint64(sizeShort)
	if c.Announced(ann) {
		switch ann & annSizes {
		case annFull:
			size = sizeFull
		case annDouble:
			size = sizeDouble
		}
	}
	c.pos += c.r.units(c.pos, size)
	c.Flush()
}

// announce is the announcement of a short claim at position pos of r.
func (r *Ring) announce(pos uint64) uint64 { return annValid | r.id<<annRingPos | pos&annPosMask }
