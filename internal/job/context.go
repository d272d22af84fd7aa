package job

import (
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
const MaxContexts = 1024

// CtxRecord is one context slot (64 bytes, one cache line, at
// areaContexts + slot*64).
//
//	+0   gen      uint32  odd: owned; even: free
//	+4   refs     uint32  members that have not freed it yet
//	+8   revoked  uint32  the generation in which it was revoked, 0 if not
//	+12  (pad to 64)
type CtxRecord struct {
	gen     atomic.Uint32
	refs    atomic.Uint32
	revoked atomic.Uint32
	_       [52]byte
}

const ctxRecordSize = 64

func init() {
	if unsafe.Sizeof(CtxRecord{}) != ctxRecordSize || unsafe.Offsetof(CtxRecord{}.revoked) != 8 {
		panic("job: CtxRecord drifted from its documentation")
	}
}

func (m *Map) ctxRec(s uint32) *CtxRecord {
	return (*CtxRecord)(m.Seg.Ptr(m.ctx0 + uint64(s)*ctxRecordSize))
}

// initContexts gives slot 0 to the world at the segment's creation.
func (m *Map) initContexts() {
	w := m.ctxRec(0)
	w.gen.Store(1)
	w.refs.Store(uint32(m.N))
}

// WorldGen is the generation of the world's slot 0.
const WorldGen = 1

// AllocContext takes a free slot for a communicator of members ranks and
// returns it with its generation, or ok false if none is free. The
// caller tells the other members which slot (their communicator's
// creation is collective).
func (m *Map) AllocContext(members int) (slot, gen uint32, ok bool) {
	for s := uint32(1); s < MaxContexts; s++ {
		rec := m.ctxRec(s)
		g := rec.gen.Load()
		if g&1 == 0 && rec.gen.CompareAndSwap(g, g+1) {
			rec.refs.Store(uint32(members))
			return s, g + 1, true
		}
	}
	return 0, 0, false
}

// ReleaseContext drops one member's hold on slot s of generation gen;
// the last one frees the slot for the next owner.
func (m *Map) ReleaseContext(s, gen uint32) {
	rec := m.ctxRec(s)
	if rec.gen.Load() != gen {
		return
	}
	if rec.refs.Add(^uint32(0)) == 0 {
		rec.gen.CompareAndSwap(gen, gen+1)
	}
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

// ContextRevoked reports whether slot s was revoked in generation gen.
func (m *Map) ContextRevoked(s, gen uint32) bool { return m.ctxRec(s).revoked.Load() == gen }
