package ranks

import (
	"strconv"
	"sync/atomic"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
)

// Comm is a communicator: a group of ranks and a private matching space.
// Ranks in a Comm's methods are ranks of that communicator.
type Comm struct {
	e      *engine
	ctx    uint32 // its context on the wire: wireCtx(2*slot, gen); the twin's wireCtx(2*slot+1, gen)
	slot   uint32 // its context slot (internal/job/context.go)
	gen    uint32 // the slot's generation when it was created
	rank   int
	size   int
	name   string
	group  []int   // communicator rank -> world rank
	toComm []int32 // world rank -> communicator rank, or -1
	liveAt int     // its index in engine.live while registered

	posted ilist[request] // receives waiting for a message, in posting order
	unexp  ilist[umsg]    // messages that arrived before their receive

	freed     bool         // the user freed it: no new operations (Free)
	released  bool         // its context slot is given back: nothing of it is left here
	permanent bool         // the world and self: Free refuses
	revoked   bool         // set by revoke, locally or seen in the context slot
	unusable  bool         // freed or revoked: the hot paths check this one flag
	twin      bool         // the collective twin of a user's communicator
	internal  bool         // an intercommunicator's local intracommunicator: freed with it
	owner     *Comm        // internal: the intercommunicator it serves; or the communicator whose failures it shares (ext.FailWith)
	inter     *interComm   // an intercommunicator's groups (intercomm.go); nil for an intracommunicator
	collDead  bool         // twin: a member failed, so collective traffic is refused (collDeath)
	rejecting bool         // arrivals may be refused: revoked, or collDead (route)
	holds     atomic.Int32 // operations of upper packages still running (ext.Hold)
	ackCount  int          // how many entries of engine.failedOrder FailureAck covered
	ackNext   int          // the prefix the next FailureAck covers at least (ext.AckNext)
	ackShown  atomic.Int32 // ackCount, readable without the engine lock (ext.Acked)

	// spansNodes: a member runs on another node (its slot here is a node
	// agent's proxy). Point-to-point and creation go through the agents
	// and the upper packages take ways of their own there (acrossNodes,
	// docs/nodes.md).
	spansNodes bool
	// serving: AnySource receives of servingTag serve other ranks
	// (ext.Serving), and a sleep in one is not recorded.
	serving    bool
	servingTag int
	// peerCtx, when the communicator spans nodes: by world rank, the wire
	// context of the member's own node. Each node gives a communicator a
	// slot of its own segment (create), so a message to a member on
	// another node carries that node's context; the agents forward it
	// unchanged. Nil otherwise: every member reads ctx.
	peerCtx []uint32

	// coll is the collectives' matching space: the same group under
	// context id 2*slot+1, so their traffic never matches a user's
	// receive. Nil on coll itself.
	coll  *Comm
	ext   ext.Slots // upper packages' local state (internal/ext)
	local commLocal // attributes, hints, creation queue (attr.go, idup.go)
	topo  *topology // its virtual topology, or nil (topo.go); immutable

	// A persistent collective's private duplicate (persistentComm) and
	// its parent: revoking the parent revokes the duplicates here too.
	// Under the engine lock.
	dependents  []*Comm
	dependentOf *Comm

	// collCheck's cache: the failure epoch it last judged, and the error;
	// okEpoch, read without the lock, is the epoch of the last check that
	// found nothing (0: none, or freed since).
	checkedEpoch uint64
	checkErr     error
	hasFinal     bool // a member other than this rank has finalized (as of checkedEpoch)
	okEpoch      atomic.Uint64
}

func identityGroup(n int) []int {
	g := make([]int, n)
	for i := range g {
		g[i] = i
	}
	return g
}

// Context ids on the wire. A communicator's messages carry its context id
// (2*slot, or 2*slot+1 for its collective twin: 12 bits, since there are
// job.MaxContexts slots) and, above it, the low 20 bits of its owner
// number in the slot (gen/2: the slot's generation is odd while owned and
// grows by 2 per owner). A message for a communicator that this rank has
// freed thus never reaches the next owner of its slot: the receiver finds
// no communicator with that wire context, sees that its owner number is
// not newer than the slot's last one here (fresh), and drops it. Owner
// numbers compare modulo 2^20: a message would have to wait in an inbox
// while its slot changed owner half a million times to be mistaken.
const (
	ctxIDBits  = 12
	ctxIDMask  = 1<<ctxIDBits - 1
	ownerBits  = 32 - ctxIDBits
	ownerMask  = 1<<ownerBits - 1
	numCtxIDs  = 2 * job.MaxContexts
	ownerNewer = 1 << (ownerBits - 1) // owner numbers at most this far ahead are newer
)

func init() {
	if numCtxIDs > 1<<ctxIDBits {
		panic("ranks: context ids do not fit their wire bits")
	}
}

// wireCtx is the wire context of context id id in a slot of generation gen.
func wireCtx(id, gen uint32) uint32 { return (gen>>1)<<ctxIDBits | id }

// fresh reports whether a message for wire context ctx, which no
// communicator here has, is for one this rank has not created yet (keep
// it for then) rather than one it has freed (drop it).
func (e *engine) fresh(ctx uint32) bool {
	g := e.slotGen[(ctx&ctxIDMask)>>1]
	if g == 0 {
		return true // no communicator of that slot was ever here
	}
	d := (ctx>>ctxIDBits - g>>1) & ownerMask
	return d != 0 && d < ownerNewer
}

// register puts c in e.comms at context id id, and in e.live, the
// dense list of the communicators registered here, which the scans that
// every failure, revoke and finalize makes walk instead of e.comms: 4,096
// entries, 32 KiB of pointers that are cold when a failure comes, and
// two such scans took about 0.1 ms of each survivor's time (perf,
// ulfm_recovery at 8 ranks, 2026-11-27), while 7 survivors shared a CPU.
func (e *engine) register(id uint32, c *Comm) {
	if old := e.comms[id]; old != nil {
		e.unlist(old)
	}
	e.comms[id] = c
	c.liveAt = len(e.live)
	e.live = append(e.live, c)
}

// unregister takes m out of e.comms and e.live if it is there.
func (e *engine) unregister(m *Comm) {
	if e.comms[m.id()] == m {
		e.comms[m.id()] = nil
		e.unlist(m)
	}
}

func (e *engine) unlist(c *Comm) {
	i := c.liveAt
	if i < 0 || i >= len(e.live) || e.live[i] != c {
		return
	}
	last := len(e.live) - 1
	e.live[i] = e.live[last]
	e.live[i].liveAt = i
	e.live[last] = nil
	e.live = e.live[:last]
	c.liveAt = -1
}

// newComm registers a communicator over group (world ranks in
// communicator order, including this rank) in context slot slot of
// generation gen, with its collective twin, and runs the creation hooks.
func (e *engine) newComm(slot, gen uint32, group []int, name string) *Comm {
	e.slotGen[slot] = gen
	c := e.newMatching(2*slot, slot, gen, group, name)
	c.coll = e.newMatching(2*slot+1, slot, gen, group, "")
	c.coll.twin = true
	if e.t.ContextRevoked(slot, gen) {
		e.revokeLocal(c)
	}
	ext.Created(c)
	return c
}

// newMatching registers one matching space with context id id.
func (e *engine) newMatching(id, slot, gen uint32, group []int, name string) *Comm {
	ctx := wireCtx(id, gen)
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
		c.spansNodes = c.spansNodes || e.lay.Remote(w)
	}
	e.register(id, c)
	if len(e.early) == 0 {
		return c
	}
	// Messages that arrived before this communicator existed here; and
	// any kept for an earlier owner of the slot that this rank never
	// adopted (its creation failed here): those can never be received.
	for k, early := range e.early {
		if k&ctxIDMask != id {
			continue
		}
		for m := early.head; m != nil; m = early.head {
			early.remove(m)
			if k == ctx {
				c.unexp.push(m)
			} else {
				e.dropUmsg(m, rejDropped)
			}
		}
		delete(e.early, k)
	}
	return c
}

// wire is the wire context of c's messages to world rank w.
func (c *Comm) wire(w int) uint32 {
	if c.peerCtx == nil {
		return c.ctx
	}
	return c.peerCtx[w]
}

// id is c's context id: its index in engine.comms.
func (c *Comm) id() uint32 { return c.ctx & ctxIDMask }

// Rank is this process's rank in the communicator.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks in the communicator (of an
// intercommunicator, in its local group: RemoteSize is the other's).
func (c *Comm) Size() int {
	if c.inter != nil {
		return len(c.inter.local)
	}
	return c.size
}

// Name is the communicator's name (MPI_Comm_get_name): "MPI_COMM_WORLD"
// for the world, "MPI_COMM_SELF" for self, and empty for a new
// communicator until SetName names it (MPI does not copy names).
func (c *Comm) Name() string { return c.name }

// label names c in error messages.
func (c *Comm) label() string {
	if c.name != "" {
		return c.name
	}
	return "context " + strconv.Itoa(int(c.slot)) // no fmt: see revokedErr
}

// WorldRank translates a rank of c into a world rank (of an
// intercommunicator: a rank of the remote group, as point-to-point
// addresses them).
func (c *Comm) WorldRank(r int) int {
	if r < 0 || r >= c.size {
		return -1
	}
	return c.group[r]
}

// Free releases the communicator (MPI_Comm_free). Later calls with it
// return ErrComm. Operations already started on it complete normally, as
// in MPI: a pending receive still matches its message, a nonblocking
// collective still runs; the communicator's resources (its context slot)
// are given back once they have. The world and self communicators cannot
// be freed. The attributes' Delete callbacks run first; if one fails,
// Free returns its error and c stays as it is (see deleteAttrs).
func (c *Comm) Free() error {
	if c == nil {
		return newErr(ErrComm, "Free", -1, "nil communicator")
	}
	if err := c.freeAttrs(); err != nil {
		return err
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
	c.freed, c.unusable = true, true
	c.okEpoch.Store(0)
	ext.Freed(c)
	e.freeing = append(e.freeing, c)
	e.reap()
	return nil
}

// reap gives back the resources of every freed communicator that no
// operation uses any more: no receive posted on it or its twin, and no
// hold of an upper package (ext.Hold). Called under the engine lock, by
// Free, by progress while some wait, and when a hold ends.
func (e *engine) reap() {
	for again := true; again; {
		again = false
		k := 0
		for _, c := range e.freeing {
			if c.holds.Load() != 0 || c.posted.n != 0 || c.coll.posted.n != 0 {
				e.freeing[k] = c
				k++
				continue
			}
			e.releaseComm(c)
		}
		clear(e.freeing[k:])
		e.freeing = e.freeing[:k]
		// An intercommunicator's local intracommunicator goes after it
		// (its collectives used the local one until then).
		for _, lc := range e.localGone {
			lc.freed, lc.unusable = true, true
			ext.Freed(lc)
			e.freeing = append(e.freeing, lc)
			again = true
		}
		clear(e.localGone)
		e.localGone = e.localGone[:0]
	}
}

// releaseComm gives back freed communicator c's context slot. Messages
// that arrived for it and were never received are dropped (a sender
// waiting for their match is told: ErrComm); later ones are dropped on
// arrival (fresh).
func (e *engine) releaseComm(c *Comm) {
	if c.inter != nil && !c.inter.localComm.freed {
		e.localGone = append(e.localGone, c.inter.localComm)
	}
	if c.inter != nil && c.inter.unionComm != nil && !c.inter.unionComm.freed {
		e.localGone = append(e.localGone, c.inter.unionComm)
	}
	ext.Released(c)
	for _, m := range []*Comm{c, c.coll} {
		m.released, m.freed, m.unusable = true, true, true
		m.okEpoch.Store(0)
		for u := m.unexp.head; u != nil; u = m.unexp.head {
			m.unexp.remove(u)
			e.dropUmsg(u, rejDropped)
		}
		e.unregister(m)
	}
	e.t.ReleaseContext(e.me, c.slot)
}

// usable checks, under the engine lock, that c may be used.
func (c *Comm) usable(op string) error {
	if c.e.closed {
		return newErr(ErrFinalized, op, -1, "")
	}
	if c.freed {
		return newErr(ErrComm, op, -1, "communicator %s was freed", c.label())
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
// has been told about, and, after an ulfm.Agree that returned
// ErrProcFailed, every member that did not contribute to it (spec
// 15.3.1). Afterwards AnySource receives on c no longer report
// ErrProcFailedPending for those failures. It is local.
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
	c.ackUpTo(max(c.ackNext, len(e.failedOrder)))
	c.ackUpTo(len(e.failedOrder)) // what reading the log that far taught us
	c.ackNext = 0
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
	if c.size == 1 && c.inter == nil {
		return false // this rank alone: it may send to itself
	}
	for _, w := range c.group {
		if w != c.e.me && !c.e.gone[w] {
			return false
		}
	}
	return true
}
