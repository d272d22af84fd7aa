package job

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// Context slots: the shared, per-communicator state of a job.
//
// A communicator owns one slot of the segment's context area while it
// exists. Its slot gives it two context ids, 2*slot for point-to-point
// traffic and 2*slot+1 for the collectives' traffic, so that a
// collective's messages never match a user's receive. The world owns
// slot 0 from the segment's creation.
//
// Each slot carries a generation: odd while a communicator owns it, even
// while free, bumped on each change of owner. A communicator remembers
// the generation it was created with, and every shared word it reads in
// the slot (the revoke word now; collective and agreement state later)
// is stamped with it, so that state of a freed communicator can never
// reach the next owner of the slot, not even a late revoke.

// MaxContexts is the number of context slots of a job.
const MaxContexts = 2048

// CtxRecord is one context slot (64 bytes, one cache line, at
// areaContexts + slot*64).
//
//	+0   gen      uint32  odd: owned; even: free
//	+4   refs     uint32  hold bits still set for it (see Holds)
//	+8   revoked  uint32  the generation in which it was revoked, 0 if not
//	+12  leader   uint32  world rank that allocated it
//	+16  sleepers uint32  members asleep on one of the communicator's
//	                      release words (Sleepers), so that a release
//	                      makes a wake syscall only when one sleeps
//	+20  (pad to 64)
type CtxRecord struct {
	gen      atomic.Uint32
	refs     atomic.Uint32
	revoked  atomic.Uint32
	leader   atomic.Uint32
	sleepers atomic.Uint32
	_        [44]byte
}

// Holds is a rank's set of context slots it holds or is about to adopt
// (256 bytes, one bit per slot, at areaHolds + rank*256).
//
// Who holds a slot is what decides when it returns to the pool, whatever
// fails: the allocator sets the bit of every member before it tells them
// the slot; a member clears its own bit when it frees the communicator
// (or finalizes), any rank clears the bits of a rank that died, and a
// member whose creation failed because the allocator died clears the bits
// of that allocator's slots it never adopted. Each bit is cleared by an
// atomic and-not whose old value says whether this call cleared it, so
// refs falls by exactly one per bit, and the slot is free when it reaches
// zero.
type Holds [MaxContexts / 64]atomic.Uint64

const (
	ctxRecordSize = 64
	holdsSize     = MaxContexts / 8
)

func init() {
	if unsafe.Sizeof(CtxRecord{}) != ctxRecordSize || unsafe.Offsetof(CtxRecord{}.leader) != 12 ||
		unsafe.Sizeof(Holds{}) != holdsSize {
		panic("job: CtxRecord or Holds drifted from its documentation")
	}
}

func (m *Map) ctxRec(s uint32) *CtxRecord {
	return (*CtxRecord)(m.Seg.Ptr(m.ctx0 + uint64(s)*ctxRecordSize))
}

// HoldsOf is rank r's set of held context slots.
func (m *Map) HoldsOf(r int) *Holds {
	return (*Holds)(m.Seg.Ptr(m.holds0 + uint64(r)*holdsSize))
}

// initContexts gives slot 0 to the world at the segment's creation; its
// hold bits are never cleared (the world is never freed), so it is never
// reclaimed.
func (m *Map) initContexts() {
	w := m.ctxRec(0)
	w.gen.Store(WorldGen)
	// Only the first job's ranks: the slots left for spawned ranks have
	// worlds of their own.
	n := m.Layout.WorldSize()
	w.refs.Store(uint32(n))
	for r := range n {
		m.HoldsOf(r)[0].Or(1)
	}
}

// WorldGen is the generation of the world's slot 0.
const WorldGen = 1

// AllocContext takes a free slot for a communicator of the given members
// (world ranks) on behalf of leader, sets every member's hold bit, and
// returns the slot with its generation; ok is false if none is free. The
// leader then tells the members which slot.
func (m *Map) AllocContext(leader int, members []int) (slot, gen uint32, ok bool) {
	for s := uint32(1); s < PortSlot; s++ { // never the ports' slot
		rec := m.ctxRec(s)
		g := rec.gen.Load()
		if g&1 == 0 && rec.gen.CompareAndSwap(g, g+1) {
			// The collectives' lines start from zero for every owner
			// (every holder of the previous one has let go): the header
			// and the members' lines, whose sequence words the
			// dissemination barrier compares with its own phase count.
			clear(unsafe.Slice((*uint64)(m.CollArea(s)), m.collStride/8))
			clear(unsafe.Slice((*uint64)(m.AgreeArea(s)), m.agreeStride/8))
			rec.refs.Store(uint32(len(members)))
			rec.leader.Store(uint32(leader))
			// A member of the previous owner that died asleep left its
			// count here; nobody else of that owner can still sleep.
			rec.sleepers.Store(0)
			for _, w := range members {
				m.HoldsOf(w)[s/64].Or(1 << (s % 64))
			}
			// A member that has already ended was swept (ReleaseAll)
			// before its bit was set: release it here. One that ends
			// after this check is swept after its bit was set. Either
			// way the bit is cleared once.
			for _, w := range members {
				if st := m.State(w); st == StFailed || st == StFinalized {
					m.ReleaseContext(w, s)
				}
			}
			return s, g + 1, true
		}
	}
	return 0, 0, false
}

// Adoptable reports whether rank r may adopt slot s of generation gen:
// its hold bit is still set and the slot still has that generation.
func (m *Map) Adoptable(r int, s, gen uint32) bool {
	return m.HoldsOf(r)[s/64].Load()&(1<<(s%64)) != 0 && m.ctxRec(s).gen.Load() == gen
}

// ReleaseContext clears rank r's hold on slot s; the last hold frees the
// slot for the next owner.
func (m *Map) ReleaseContext(r int, s uint32) {
	bit := uint64(1) << (s % 64)
	if m.HoldsOf(r)[s/64].And(^bit)&bit == 0 {
		return // not held, or cleared by another call
	}
	rec := m.ctxRec(s)
	if rec.refs.Add(^uint32(0)) == 0 {
		g := rec.gen.Load()
		rec.gen.CompareAndSwap(g, g+1)
	}
}

// ReleaseAll clears every hold of rank r but the world's: at its
// Finalize, or by any rank once r has failed.
func (m *Map) ReleaseAll(r int) {
	h := m.HoldsOf(r)
	for i := range h {
		for v := h[i].Load(); v != 0; v &= v - 1 {
			s := uint32(i*64 + bits.TrailingZeros64(v))
			if s != 0 {
				m.ReleaseContext(r, s)
			}
		}
	}
}

// ReleaseOrphans clears rank r's holds on slots that leader allocated and
// that keep(slot) says r never adopted: after a creation failed because
// the leader died before telling r.
func (m *Map) ReleaseOrphans(r, leader int, keep func(s uint32) bool) {
	h := m.HoldsOf(r)
	for i := range h {
		for v := h[i].Load(); v != 0; v &= v - 1 {
			s := uint32(i*64 + bits.TrailingZeros64(v))
			if s != 0 && int(m.ctxRec(s).leader.Load()) == leader && !keep(s) {
				m.ReleaseContext(r, s)
			}
		}
	}
}

// FreeContexts counts the free slots (for tests of leaks).
func (m *Map) FreeContexts() int {
	n := 0
	for s := uint32(0); s < MaxContexts; s++ {
		if m.ctxRec(s).gen.Load()&1 == 0 {
			n++
		}
	}
	return n
}

// RevokeContext marks slot s of generation gen revoked and wakes every
// rank; it reports whether this call made the change. A stale gen (the
// slot has a new owner) changes nothing.
//
// Generations only grow, so a mark is overwritten only by a newer
// owner's: a late revoke of a freed communicator can neither reach the
// next owner (readers compare with their own generation) nor keep it
// from revoking.
func (m *Map) RevokeContext(s, gen uint32) bool {
	rec := m.ctxRec(s)
	if rec.gen.Load() != gen {
		return false
	}
	for {
		v := rec.revoked.Load()
		if v >= gen {
			return false
		}
		if rec.revoked.CompareAndSwap(v, gen) {
			break
		}
	}
	m.Bump()
	return true
}

// RevokeOwner is RevokeContext for a slot known by its owner number
// (gen/2) modulo 2^bits, as another node's message names it (a revoke
// that crossed nodes): it revokes the slot's current owner if that is
// the one named.
func (m *Map) RevokeOwner(s, owner uint32, bits uint) bool {
	g := m.ctxRec(s).gen.Load()
	if g&1 == 0 || (g>>1)&(1<<bits-1) != owner {
		return false
	}
	return m.RevokeContext(s, g)
}

// Sleepers counts the members asleep on a release word of slot s's
// communicator: a waiter adds itself before its last check and removes
// itself after it woke; a releaser stores the word (a full fence on
// amd64) and then wakes only if the count is not 0. One of a pair of
// such store-then-load sequences sees the other's store, so no sleep is
// missed. A member that dies asleep leaves the count high, which costs
// only wake syscalls nobody needed.
func (m *Map) Sleepers(s uint32) *atomic.Uint32 { return &m.ctxRec(s).sleepers }

// ContextRevoked reports whether slot s was revoked in generation gen.
func (m *Map) ContextRevoked(s, gen uint32) bool { return m.ctxRec(s).revoked.Load() == gen }
