package ranks

import (
	"sync/atomic"

	"github.com/shmpi/shmpi/internal/ext"
)

// Comm is a communicator: a group of ranks and a private matching space.
// Ranks in a Comm's methods are ranks of that communicator.
type Comm struct {
	e      *engine
	ctx    uint32 // context id of its point-to-point traffic: 2*slot
	slot   uint32 // its context slot (internal/job/context.go)
	gen    uint32 // the slot's generation when it was created
	rank   int
	size   int
	name   string
	group  []int   // communicator rank -> world rank
	toComm []int32 // world rank -> communicator rank, or -1

	posted ilist[request] // receives waiting for a message, in posting order
	unexp  ilist[umsg]    // messages that arrived before their receive

	freed     bool
	permanent bool         // the world and self: Free refuses
	revoked   bool         // set by revoke, locally or seen in the context slot
	unusable  bool         // freed or revoked: the hot paths check this one flag
	ackCount  int          // how many entries of engine.failedOrder FailureAck covered
	ackShown  atomic.Int32 // ackCount, readable without the engine lock (ext.Acked)

	// coll is the collectives' matching space: the same group under
	// context id 2*slot+1, so their traffic never matches a user's
	// receive. Nil on coll itself.
	coll  *Comm
	ext   ext.Slots   // upper packages' local state (internal/ext)
	attrs map[int]any // SetAttr's values

	// collCheck's cache: the failure epoch it last judged, and the error;
	// okEpoch, read without the lock, is the epoch of the last check that
	// found nothing (0: none, or freed since).
	checkedEpoch uint64
	checkErr     error
	okEpoch      atomic.Uint64
}

func identityGroup(n int) []int {
	g := make([]int, n)
	for i := range g {
		g[i] = i
	}
	return g
}

// newComm registers a communicator over group (world ranks in
// communicator order, including this rank) in context slot slot of
// generation gen, with its collective twin, and runs the creation hooks.
func (e *engine) newComm(slot, gen uint32, group []int, name string) *Comm {
	c := e.newMatching(2*slot, slot, gen, group, name)
	c.coll = e.newMatching(2*slot+1, slot, gen, group, name+" (collectives)")
	if e.t.ContextRevoked(slot, gen) {
		e.revokeLocal(c)
	}
	ext.Created(c)
	return c
}

// newMatching registers one matching space with context id ctx.
func (e *engine) newMatching(ctx, slot, gen uint32, group []int, name string) *Comm {
	c := &Comm{e: e, ctx: ctx, slot: slot, gen: gen, group: group, size: len(group), name: name, rank: -1}
	c.toComm = make([]int32, e.n)
	for i := range c.toComm {
		c.toComm[i] = -1
	}
	for i, w := range group {
		c.toComm[w] = int32(i)
		if w == e.me {
			c.rank = i
		}
	}
	for int(ctx) >= len(e.comms) {
		e.comms = append(e.comms, nil)
	}
	e.comms[ctx] = c
	// Messages that arrived before this communicator existed here.
	if early := e.early[ctx]; early != nil {
		for m := early.head; m != nil; {
			next := m.next
			early.remove(m)
			c.unexp.push(m)
			m = next
		}
		delete(e.early, ctx)
	}
	return c
}

// Rank is this process's rank in the communicator.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks in the communicator.
func (c *Comm) Size() int { return c.size }

// Name is a label for diagnostics.
func (c *Comm) Name() string { return c.name }

// WorldRank translates a rank of c into a world rank.
func (c *Comm) WorldRank(r int) int {
	if r < 0 || r >= c.size {
		return -1
	}
	return c.group[r]
}

// Free releases the communicator. Later operations on it return ErrComm.
// The world communicator cannot be freed.
func (c *Comm) Free() error {
	if c == nil {
		return newErr(ErrComm, "Free", -1, "nil communicator")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.usable("Free"); err != nil {
		return err
	}
	if c.permanent {
		return newErr(ErrComm, "Free", -1, "the %s communicator cannot be freed", c.name)
	}
	ext.Freed(c)
	for _, m := range []*Comm{c, c.coll} {
		m.freed, m.unusable = true, true
		m.okEpoch.Store(0)
		for r := m.posted.head; r != nil; r = m.posted.head {
			m.posted.remove(r)
			e.complete(r, newErr(ErrComm, "Free", -1, "communicator freed with the receive pending"))
		}
		if e.comm(m.ctx) == m {
			e.comms[m.ctx] = nil
		}
	}
	e.t.ReleaseContext(e.me, c.slot)
	return nil
}

// usable checks, under the engine lock, that c may be used.
func (c *Comm) usable(op string) error {
	if c.e.closed {
		return newErr(ErrFinalized, op, -1, "")
	}
	if c.freed {
		return newErr(ErrComm, op, -1, "communicator %q was freed", c.name)
	}
	return nil
}

// live checks, under the engine lock, that c may be used for a non-local
// operation: usable and not revoked. Local calls (GetFailed, FailureAck,
// Free) work on a revoked communicator.
func (c *Comm) live(op string) error {
	if err := c.usable(op); err != nil {
		return err
	}
	if c.revoked {
		return revokedErr(c, op)
	}
	return nil
}

// FailureAck acknowledges every failure of a member of c that this rank
// has been told about. Afterwards AnySource receives on c no longer
// report ErrProcFailedPending for those failures. It is local.
func (c *Comm) FailureAck() error {
	if c == nil {
		return newErr(ErrComm, "FailureAck", -1, "nil communicator")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.usable("FailureAck"); err != nil {
		return err
	}
	e.refresh()
	c.ackCount = len(e.failedOrder)
	c.ackShown.Store(int32(c.ackCount))
	return nil
}

// FailureGetAcked returns the ranks of c whose failure FailureAck has
// acknowledged, in increasing order. It is local.
func (c *Comm) FailureGetAcked() ([]int, error) {
	if c == nil {
		return nil, newErr(ErrComm, "FailureGetAcked", -1, "nil communicator")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.usable("FailureGetAcked"); err != nil {
		return nil, err
	}
	return c.failedRanks(c.ackCount), nil
}

// GetFailed returns the ranks of c known here to have failed, acknowledged
// or not, in increasing order. It is local.
func (c *Comm) GetFailed() ([]int, error) {
	if c == nil {
		return nil, newErr(ErrComm, "GetFailed", -1, "nil communicator")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.usable("GetFailed"); err != nil {
		return nil, err
	}
	e.refresh()
	return c.failedRanks(len(c.e.failedOrder)), nil
}

// failedRanks lists the members of c among the first k failures.
func (c *Comm) failedRanks(k int) []int {
	marks := make([]bool, c.size)
	for _, w := range c.e.failedOrder[:k] {
		if cr := c.toComm[w]; cr >= 0 {
			marks[cr] = true
		}
	}
	out := []int{}
	for r, m := range marks {
		if m {
			out = append(out, r)
		}
	}
	return out
}

// unacked reports whether a member of c failed without FailureAck.
func (c *Comm) unacked() bool {
	fo := c.e.failedOrder
	for i := c.ackCount; i < len(fo); i++ {
		if c.toComm[fo[i]] >= 0 {
			return true
		}
	}
	return false
}

// noSender reports whether no other member of c can ever send again:
// every one of them has failed or finalized. An AnySource receive that
// nothing matched then can never complete.
func (c *Comm) noSender() bool {
	if c.size == 1 {
		return false
	}
	for _, w := range c.group {
		if w != c.e.me && !c.e.gone[w] {
			return false
		}
	}
	return true
}
