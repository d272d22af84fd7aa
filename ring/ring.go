// Package ring implements a bounded, lock-free, multi-producer
// single-consumer ring of cache-line slots over shared memory, for
// processes that may die at any instruction.
//
// Producers claim a position with a CAS on the ring's tail and then fill
// the slot with plain stores; the last store, the slot's control word,
// publishes it. The consumer only reads slots: it never writes a slot
// line, so a message costs the producer one ownership transfer of the
// slot line and the consumer one read of it (the producer requests the
// line a few slots ahead, while it is idle: prefetchAhead). The
// consumer's position lives on a line of
// its own, which producers read only when their cached copy says the
// ring may be full.
//
// A producer that dies between claiming and publishing would block the
// consumer forever. So before its CAS each producer announces the
// position it is about to claim in a word of its own (Announce). The
// consumer, stuck at a claimed but unpublished position, can then find
// every producer that announced it; if all of them are dead, the owner
// died and the consumer skips the position (Skip).
//
// Zeroed memory is an empty ring. The ring knows nothing of who the
// producers are: a producer is a 24-bit id, and liveness is the caller's
// business.
package ring

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"shmpi/internal/spin"
)

// SlotSize is the size of one slot: one cache line.
const SlotSize = 64

// PayloadSize is what a slot carries after its control word.
const PayloadSize = SlotSize - 8

// HeaderSize is the ring header before the slots: the tail line and the
// head line, each alone in a 128-byte pair of lines, because x86's
// adjacent-line prefetcher moves lines in pairs: a consumer writing its
// head must not drag the producers' tail line away from them.
const HeaderSize = 256

// MaxProducer is the largest producer id.
const MaxProducer = 1<<24 - 1

// MaxRing is the largest ring id (announcements carry it).
const MaxRing = 1<<24 - 1

// Slot control word (uint64):
//
//	bits  0..23  producer id
//	bits 24..62  the position the slot holds plus one, modulo 2^39
//	bit  63      set once the slot has been written
//
// Zero means never written; bit 63 keeps a position whose sequence wraps
// to zero from looking like an untouched slot. Positions themselves are
// 64-bit counters; comparing them modulo 2^39 is exact because a slot is
// reused every capacity positions.
const (
	seqShift = 24
	seqMask  = 1<<39 - 1
	idMask   = 1<<24 - 1
	written  = 1 << 63
)

// Announcement word: bit 63 set when it announces anything, the ring id in
// bits 39..62, the position (mod 2^39) in bits 0..38. Zero, as in fresh
// shared memory, announces nothing.
const (
	annValid   = 1 << 63
	annPosBits = 39
	annPosMask = 1<<annPosBits - 1
)

// Bytes returns the size of a ring with capacity slots.
func Bytes(capacity int) int { return HeaderSize + capacity*SlotSize }

// Ring is a view of a ring in shared memory. Layout (HeaderSize +
// capacity*SlotSize bytes, 128-byte aligned):
//
//	+0    tail uint64   next position producers claim (CAS)
//	+128  head uint64   consumer's position, published for producers
//	+256  slots [capacity][64]byte: control word uint64, payload [56]byte
type Ring struct {
	id    uint64
	tail  *atomic.Uint64
	head  *atomic.Uint64
	slots unsafe.Pointer
	mask  uint64
}

// New views the ring with id id at mem (128-byte aligned, Bytes(capacity)
// long). capacity must be a power of two.
func New(mem unsafe.Pointer, capacity int, id int) *Ring {
	if capacity <= 0 || capacity&(capacity-1) != 0 {
		panic(fmt.Sprintf("ring: capacity %d is not a power of two", capacity))
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
		mask:  uint64(capacity - 1),
	}
}

// Capacity is the number of slots.
func (r *Ring) Capacity() int { return int(r.mask + 1) }

func (r *Ring) word(pos uint64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Add(r.slots, (pos&r.mask)*SlotSize))
}

// Producer is one producer's handle on one ring: its id, its
// announcement word (shared memory that only this producer writes, one
// word for all the rings it sends to), and its cached copy of the
// consumer's position. A Producer is not safe for concurrent use, and the
// Producers sharing one announcement word must be used one at a time,
// each publishing its claimed slot before any of them claims again:
// otherwise an earlier claim is no longer announced and a consumer could
// skip it while its producer lives.
type Producer struct {
	r      *Ring
	id     uint64
	ann    *atomic.Uint64
	cached uint64
	full   uint64 // written | id: a published control word but for the sequence
	annTop uint64 // annValid | ring id: an announcement but for the position
}

// NewProducer makes producer id's handle on r, announcing in ann.
func (r *Ring) NewProducer(id int, ann *atomic.Uint64) *Producer {
	if id < 0 || id > MaxProducer {
		panic(fmt.Sprintf("ring: producer id %d out of range", id))
	}
	return &Producer{r: r, id: uint64(id), ann: ann, full: written | uint64(id), annTop: annValid | r.id<<annPosBits}
}

// Claimed is a slot a producer owns until it calls Publish.
type Claimed struct {
	word *atomic.Uint64
	full uint64
}

// Payload is the slot's 56 payload bytes.
func (c Claimed) Payload() unsafe.Pointer { return unsafe.Add(unsafe.Pointer(c.word), 8) }

// Publish hands the slot to the consumer. It is a release store; a
// producer that must then read the consumer's doorbell needs a fence
// first (Fence), or it may miss a consumer going to sleep.
func (c Claimed) Publish() { spin.StoreRelease64((*uint64)(unsafe.Pointer(c.word)), c.full) }

// PublishFence publishes with a sequentially consistent store: later
// loads (the consumer's doorbell) cannot pass it.
func (c Claimed) PublishFence() { c.word.Store(c.full) }

// TryClaim claims the next slot. It fails only when the ring is full. It
// makes no syscall, takes no lock and allocates nothing.
//
// The announcement is written before each attempt and withdrawn after a
// failed one: a producer that lost a position to another must not go on
// naming it, or a consumer could never skip it should the winner die.
func (p *Producer) TryClaim() (Claimed, bool) {
	r := p.r
	storeAnn(p.ann, 0) // after a failed TryClaimFast
	for {
		pos := r.tail.Load()
		if pos-p.cached > r.mask {
			p.cached = r.head.Load()
			if pos-p.cached > r.mask {
				if r.tail.Load() == pos {
					return Claimed{}, false
				}
				continue
			}
		}
		// The announcement must be visible before the claim: the CAS is
		// a full fence, so a plain release store ahead of it is enough.
		spin.StoreRelease64((*uint64)(unsafe.Pointer(p.ann)), p.r.announce(pos))
		if r.tail.CompareAndSwap(pos, pos+1) {
			spin.PrefetchWrite(unsafe.Pointer(r.word(pos + prefetchAhead)))
			return Claimed{r.word(pos), written | ((pos+1)&seqMask)<<seqShift | p.id}, true
		}
		spin.StoreRelease64((*uint64)(unsafe.Pointer(p.ann)), 0)
	}
}

// TryClaimFast is TryClaim's common case: room known from the cached
// head and no competing producer. If it fails, the caller must call
// TryClaim, which withdraws the announcement this may have left.
func (p *Producer) TryClaimFast() (Claimed, bool) {
	r := p.r
	pos := r.tail.Load()
	if pos-p.cached <= r.mask {
		storeAnn(p.ann, p.annTop|pos&annPosMask)
		if r.tail.CompareAndSwap(pos, pos+1) {
			spin.PrefetchWrite(unsafe.Pointer(r.word(pos + prefetchAhead)))
			return Claimed{r.word(pos), p.full | ((pos+1)&seqMask)<<seqShift}, true
		}
	}
	return Claimed{}, false // TryClaim withdraws the announcement
}

// prefetchAhead is how far past its claim a producer asks for
// ownership of a slot line (PREFETCHW), so that when it writes that slot
// later its publishing fence does not wait for the line to come from the
// consumer, which read it a lap ago. Consumers never read past the tail,
// so the line is idle when it moves (unless another producer is about to
// claim that slot: one extra move then). osu_mbw_mr 1 B, one pair, 2026-11-25:
// 5.6-7.1 million messages/s without it, 8.0-9.3 with 4 (2 to 8 alike,
// 16 less).
const prefetchAhead = 4

func storeAnn(w *atomic.Uint64, v uint64) { spin.StoreRelease64((*uint64)(unsafe.Pointer(w)), v) }

// announce is the announcement of position pos of r.
func (r *Ring) announce(pos uint64) uint64 { return annValid | r.id<<annPosBits | pos&annPosMask }

// expect is the control word of a published slot at position pos, but for
// the producer id.
func expect(pos uint64) uint64 { return (written | ((pos+1)&seqMask)<<seqShift) >> seqShift }

// Consumer is the single reader of a ring; it is not safe for concurrent
// use. Its position is private to the consumer's process; it is
// published to producers on the ring's head line at Flush, and by itself
// every quarter lap.
type Consumer struct {
	r         *Ring
	pos       uint64
	published uint64
}

// NewConsumer starts reading r at its current head.
func NewConsumer(r *Ring) *Consumer {
	c := &Consumer{r: r}
	h := r.head.Load()
	c.pos = h
	c.published = h
	return c
}

// Ready reports whether the slot at the head is published: two loads.
func (c *Consumer) Ready() bool {
	h := c.pos
	return c.r.word(h).Load()>>seqShift == expect(h)
}

// Peek returns the producer id and payload of the slot at the head, or
// ok false if it is not published yet.
func (c *Consumer) Peek() (id uint32, payload unsafe.Pointer, ok bool) {
	h := c.pos
	w := c.r.word(h)
	v := w.Load()
	if v>>seqShift == expect(h) {
		return uint32(v & idMask), unsafe.Add(unsafe.Pointer(w), 8), true
	}
	return 0, nil, false
}

// Claimed reports whether a producer has claimed the head position (it
// is then being written, or its writer died). It reads the producers'
// tail line, taking it from them: call it only on a slow path.
func (c *Consumer) Claimed() bool { return c.r.tail.Load() > c.pos }

// Release consumes the head slot, which Peek returned (published) and
// the caller has fully read.
func (c *Consumer) Release() {
	c.pos++
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
	return v == c.r.announce(c.pos)
}

// Skip passes over the head position, whose owner died before
// publishing it. The caller has checked that the position is Claimed,
// still not published, and that every producer announcing it is dead.
func (c *Consumer) Skip() {
	c.pos++
	c.Flush()
}
