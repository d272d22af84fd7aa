package ranks

import (
	"errors"
	"slices"
	"sort"

	"github.com/shmpi/shmpi/internal/job"
)

// Creating communicators: Dup, Split, Create, CreateGroup and the self
// communicator; SplitType is in hwsplit.go, Idup and the order of
// creations in idup.go.
//
// A new communicator needs a context slot that all its members agree on.
// Its leader (its first member) takes a free slot from the segment
// (job.Map.AllocContext, which marks every member as holding it) and
// sends the slot to the other members over the parent's collective
// context, on tags of ranks' own; they adopt it and answer, and the
// leader returns once every member has (so that a leader looping over
// Dup and Free cannot run ahead of its members and take every slot of the
// job). Split (and SplitType) first gathers every member's color and key
// at the parent's rank 0, which sends the table back to all. No other
// agreement is needed: the leader's choice is the decision.
//
// Failures. Every step is a point-to-point operation of the parent, so a
// dead leader or member gives ErrProcFailed instead of a hang. A member
// that fails to get its slot because the leader died releases its hold
// on that leader's slots it never adopted; holds of dead ranks are
// released by whoever sees them die; so a slot returns to the pool once
// every member has freed it, died or finalized, and none leaks. The
// result may differ between members (some get the communicator, some an
// error); as in the spec's Example 15.1, a program that must know
// agrees on it afterwards (ulfm.Agree).

// Tags of ranks' own on a communicator's collective context; package
// coll keeps below tagCreateBase.
const (
	tagCreateBase = 1 << 30
	tagCreate     = tagCreateBase     // leader → member: slot, generation
	tagSplitInfo  = tagCreateBase + 1 // member → rank 0: color, key
	tagSplitTable = tagCreateBase + 2 // rank 0 → member: every color and key
	tagCreateUser = tagCreateBase + 8 // + CreateGroup's tag
	tagAck        = 1 << 29           // | the creation's tag: member → leader, adopted
	tagSpanSlot   = 1 << 28           // | the creation's tag: member → leader, its node's slot (createSpanning)
	tagSpanTable  = 1 << 27           // | the creation's tag: leader → member, every member's slot
	// tagCreateNotice: Create's leader → the ranks outside the group,
	// whether it found a slot (createNotice). Its two flags never meet
	// in another tag, so a notice is never taken for a slot.
	tagCreateNotice = tagCreateUser | tagAck | tagSpanSlot
	// MaxCreateTag bounds CreateGroup's tag.
	MaxCreateTag = tagSpanTable - 9
)

// Dup returns a communicator with the same group and topology as c and a
// new context (MPI_Comm_dup). It is collective over c. Each attribute's Copy
// callback decides what the new communicator gets (attr.go); hints are
// not copied (MPI 4.0), so the new communicator has the defaults.
func (c *Comm) Dup() (*Comm, error) { return c.dup(nil, "Dup") }

// DupWithInfo is Dup whose new communicator takes its hints from info
// (MPI_Comm_dup_with_info); nil gives the defaults.
func (c *Comm) DupWithInfo(info *Info) (*Comm, error) { return c.dup(info, "DupWithInfo") }

func (c *Comm) dup(info *Info, op string) (*Comm, error) {
	if err := c.usableLocked(op); err != nil {
		return nil, err
	}
	hints := hintsOf(info)
	var nc *Comm
	var err error
	c.inOrder(func() { nc, err = c.dupNow(op) })
	if err != nil {
		return nil, err
	}
	copies, err := c.copyAttrs(op)
	return c.finishDup(nc, copies, err, hints, op)
}

// dupNow makes the duplicate of c (an intercommunicator's through
// interDup), in c's order of creations.
func (c *Comm) dupNow(op string) (*Comm, error) {
	if c.inter != nil {
		return c.interDup(op)
	}
	return c.create(c.everyone(), tagCreate, op)
}

// everyone lists c's ranks in order: the members of a duplicate.
func (c *Comm) everyone() []int {
	members := make([]int, c.size)
	for i := range members {
		members[i] = i
	}
	return members
}

// finishDup gives nc, a new duplicate of c, what it inherits: the
// attribute values copied for it, and its hints. If copying failed
// (copyErr), it deletes the copies, frees nc and returns the error
// instead; this rank then has no duplicate while the other members may
// have theirs, as when a member fails during a creation (a program that
// must know agrees on it).
func (c *Comm) finishDup(nc *Comm, copies []*attr, copyErr error, hints commHints, op string) (*Comm, error) {
	if copyErr != nil {
		discardCopies(nc, copies, op)
		nc.Free()
		return nil, copyErr
	}
	nc.local.mu.Lock()
	nc.local.attrs = copies
	nc.local.hints = hints
	nc.local.mu.Unlock()
	nc.topo = c.topo // a duplicate keeps the topology (topo.go)
	return nc, nil
}

// Split partitions c by color (MPI_Comm_split): ranks that pass the same
// color form a communicator, ordered by key and then by their rank in c.
// A rank that passes Undefined gets nil. It is collective over c; color
// must be Undefined or non-negative at every rank.
func (c *Comm) Split(color, key int) (*Comm, error) {
	if err := c.usableLocked("Split"); err != nil {
		return nil, err
	}
	if color < 0 && color != Undefined {
		return nil, newErr(ErrArg, "Split", -1, "color %d (must be non-negative or Undefined)", color)
	}
	var nc *Comm
	var err error
	c.inOrder(func() {
		if c.inter != nil {
			nc, err = c.interSplit(color, key, "Split")
			return
		}
		var table []int64
		table, err = c.splitTable([]int64{int64(color), int64(key)}, "Split")
		if err != nil || color == Undefined {
			return
		}
		members := byKey(table, 2, func(r int) bool { return table[2*r] == int64(color) })
		nc, err = c.createAfterTable(members, tagCreate, "Split")
	})
	return nc, err
}

// byKey lists the ranks r for which in holds, ordered by their key
// (entry 1 of their row of width w in table) and then by rank.
func byKey(table []int64, w int, in func(r int) bool) []int {
	var members []int
	for r := range len(table) / w {
		if in(r) {
			members = append(members, r)
		}
	}
	sort.SliceStable(members, func(i, j int) bool { return table[w*members[i]+1] < table[w*members[j]+1] })
	return members
}

// Create returns a communicator of the members of g, which must be a
// subgroup of c, in g's order (MPI_Comm_create); ranks not in g get nil.
// It is collective over c: the ranks outside g learn from g's first
// member whether it found a context slot, so that all fail together
// (ErrNoMem) when the job has none left. (Groups whose members span
// nodes are made by g's members only.)
func (c *Comm) Create(g Group) (*Comm, error) { return c.createGroup(g, 0, "Create") }

// CreateGroup is Create called by g's members only (MPI_Comm_create_group);
// concurrent calls on c are told apart by tag (0..MaxCreateTag).
func (c *Comm) CreateGroup(g Group, tag int) (*Comm, error) {
	return c.createGroup(g, tag, "CreateGroup")
}

func (c *Comm) createGroup(g Group, tag int, op string) (*Comm, error) {
	if err := c.usableLocked(op); err != nil {
		return nil, err
	}
	if tag < 0 || tag > MaxCreateTag {
		return nil, newErr(ErrTag, op, -1, "tag %d (0..%d)", tag, MaxCreateTag)
	}
	if c.inter != nil {
		if op != "Create" {
			return nil, newErr(ErrComm, op, -1, "an intercommunicator (MPI_Comm_create_group takes intracommunicators)")
		}
		var nc *Comm
		var err error
		c.inOrder(func() { nc, err = c.interCreateGroup(g, op) })
		return nc, err
	}
	members := make([]int, len(g.world))
	for i, w := range g.world {
		if w < 0 || w >= len(c.toComm) || c.toComm[w] < 0 {
			return nil, newErr(ErrArg, op, -1, "world rank %d of the group is not in the communicator", w)
		}
		members[i] = int(c.toComm[w])
	}
	if !slices.Contains(members, c.rank) {
		if op == "Create" && len(members) > 0 && !c.membersSpan(members) {
			return nil, c.createNotice(members[0], op)
		}
		return nil, nil
	}
	notify := op == "Create"
	return c.createWith(members, tagCreateUser+tag, notify, -1, op)
}

// membersSpan reports whether members (ranks of c) live on several nodes.
func (c *Comm) membersSpan(members []int) bool {
	return slices.ContainsFunc(members, func(m int) bool { return c.e.lay.Remote(c.group[m]) })
}

// createNotice is Create at a rank of c outside the new group: it
// learns from the group's leader whether the creation found a context
// slot, so that it fails with the members (ErrNoMem), as a collective
// over c must, instead of going on to a next creation they left.
func (c *Comm) createNotice(leader int, op string) error {
	var msg [2]uint32
	if _, err := Recv(c.coll, msg[:], leader, tagCreateNotice); err != nil {
		return relabel(err, op)
	}
	if msg[1] == 0 {
		return newErr(ErrNoMem, op, -1, "every one of the job's %d context slots is in use", job.MaxContexts)
	}
	return nil
}

// create makes the communicator of members (ranks of c, in the new
// order, this rank among them): members[0] allocates the context slot and
// sends it to the others on tag. The caller has checked that c was not
// freed when the creation started (an Idup may run after a Free).
func (c *Comm) create(members []int, tag int, op string) (*Comm, error) {
	return c.createWith(members, tag, false, -1, op)
}

// createAfterTable is create after splitTable: rank 0 of c handed out
// the table the members come from, and if it died doing so, a member
// may never have learned that it is one. Every wait of the creation for
// another member's word (across nodes the slots, on one node the
// acknowledgements) then also ends at rank 0's failure (recvUnless),
// rather than wait for a member that will never come.
func (c *Comm) createAfterTable(members []int, tag int, op string) (*Comm, error) {
	return c.createWith(members, tag, false, c.group[0], op)
}

// createWith is create; with notify the leader also tells the ranks of
// c outside members whether it found a slot (createNotice), before it
// hands the slot out. unless, if not -1, is a world rank whose failure
// also ends the creation's waits for other members (createAfterTable).
func (c *Comm) createWith(members []int, tag int, notify bool, unless int, op string) (*Comm, error) {
	e := c.e
	e.lock()
	err := c.collLive(op)
	e.unlock()
	if err != nil {
		return nil, err
	}
	world := make([]int, len(members))
	remote := false
	for i, m := range members {
		world[i] = c.group[m]
		remote = remote || e.lay.Remote(world[i])
	}
	if remote {
		return c.createSpanningAs(members, world, tag, unless, op, func(mine [2]uint32, table []uint32) (*Comm, error) {
			return c.adoptSpanning(world, mine, table, op)
		})
	}
	leader := members[0]
	var msg [2]uint32 // slot, generation; generation 0: no slot was free
	if c.rank == leader {
		if slot, gen, ok := e.t.AllocContext(e.me, world); ok {
			msg = [2]uint32{slot, gen}
		}
		testStage(e, "allocated")
		var reqs []*Request
		if notify {
			// The others' failures do not concern the members: the
			// notices' errors are left to those ranks' own calls.
			for r := range c.size {
				if !slices.Contains(members, r) {
					if rq, err := Isend(c.coll, msg[:], r, tagCreateNotice); err == nil {
						reqs = append(reqs, rq)
					}
				}
			}
			WaitAll(reqs, nil)
			reqs = reqs[:0]
		}
		for _, m := range members[1:] {
			rq, err := Isend(c.coll, msg[:], m, tag)
			if err != nil {
				return nil, c.abandon(msg, err, op)
			}
			reqs = append(reqs, rq)
		}
		if err := WaitAll(reqs, nil); err != nil {
			// A member failed: the live ones have the slot; this rank
			// reports the failure (see the comment at the top).
			return nil, c.abandon(msg, err, op)
		}
		if msg[1] != 0 {
			var ack [1]uint32
			for _, m := range members[1:] {
				// After a split table, a member may never have learned
				// that it is one (rank 0 died handing it out): its ack
				// never comes (ft_split on one node, rank 0 killed at
				// its 10th call).
				if err := c.recvUnless(ack[:], m, tag|tagAck, unless, op); err != nil {
					return nil, c.abandon(msg, err, op)
				}
			}
		}
	} else {
		_, err := Recv(c.coll, msg[:], leader, tag)
		if err != nil {
			lw := c.group[leader]
			e.lock()
			e.t.ReleaseOrphans(e.me, lw, e.holdsLocally)
			e.unlock()
			return nil, relabel(err, op)
		}
	}
	if msg[1] == 0 {
		return nil, newErr(ErrNoMem, op, -1, "every one of the job's %d context slots is in use", job.MaxContexts)
	}
	e.lock()
	if !e.t.Adoptable(e.me, msg[0], msg[1]) {
		e.unlock()
		return nil, newErr(ErrProcFailed, op, -1, "the communicator's creator failed before this rank adopted it")
	}
	nc := e.newComm(msg[0], msg[1], world, "")
	e.unlock()
	if c.rank != leader {
		if err := Send(c.coll, []uint32{1}, leader, tag|tagAck); err != nil {
			// The leader died after handing out the slot: the
			// communicator is made; its next operations report it.
			_ = err
		}
	}
	return nc, nil
}

// createSpanning is create for members on several nodes. Each node has
// its own segment, so each gives the communicator a slot of its own: the
// node's first member (in the new order) allocates it for the node's
// members and sends it to them, as create's leader does. Then every
// member sends its node's slot to the leader (members[0]), which sends
// the table of all of them back; a member adopts its own node's slot and
// keeps the others' wire contexts (Comm.peerCtx), which its messages to
// those members carry. The leader then waits for every member's
// acknowledgement, as in create.
//
// A failure ends the creation with an error at every member that learns
// of it: the leader sends a table that says so (or dies, which its
// members see), and each member gives up its hold on its node's slot.
func (c *Comm) createSpanning(members, world []int, tag int, op string) (*Comm, error) {
	return c.createSpanningAs(members, world, tag, -1, op, func(mine [2]uint32, table []uint32) (*Comm, error) {
		return c.adoptSpanning(world, mine, table, op)
	})
}

// recvUnless is Recv of b from member src of c on the collective twin's
// tag, which also ends, with ErrProcFailed, once world rank unless (if
// not -1) has failed: the receive is then withdrawn.
func (c *Comm) recvUnless(b []uint32, src, tag, unless int, op string) error {
	if unless < 0 {
		_, err := Recv(c.coll, b, src, tag)
		return err
	}
	h, err := Irecv(c.coll, b, src, tag)
	if err != nil {
		return err
	}
	e := c.e
	e.lock()
	e.block(func() bool { return h.done() || e.failed[unless] }, job.OpRecv, src, tag, c.coll.ctx, c.group[src])
	done := h.done()
	e.unlock()
	if !done {
		h.Cancel()
		h.Wait()
		return newErr(ErrProcFailed, op, -1, "world rank %d, which handed out the table of the creation, failed", unless)
	}
	_, err = h.Wait()
	return err
}

// slotLost, as a member's slot in createSpanning's gather, says that its
// node's slot never reached it: the member that allocates it failed.
const slotLost = ^uint32(0)

// createSpanningAs is createSpanning with the adoption given: adopt makes
// this rank's communicator from its node's slot and every member's. Its
// waits for other members' words also end when world rank unless fails
// (-1: none; createAfterTable).
func (c *Comm) createSpanningAs(members, world []int, tag, unless int, op string, adopt func(mine [2]uint32, table []uint32) (*Comm, error)) (*Comm, error) {
	const (
		spanOK     = 0
		spanNoSlot = 1 // a node had no free slot
		spanFailed = 2 // a member failed
	)
	e := c.e
	var local []int // ranks of c of this node's members, in the new order
	var localWorld []int
	for i, m := range members {
		if !e.lay.Remote(world[i]) {
			local = append(local, m)
			localWorld = append(localWorld, world[i])
		}
	}
	var mine [2]uint32 // this node's slot and generation (0: none was free)
	// lost is why this member has no slot of its node: the member that
	// allocates it failed. The leader still waits for a word from this
	// member, so it goes on with a slot that says so (slotLost).
	var lost error
	if sub := local[0]; c.rank == sub {
		if slot, gen, ok := e.t.AllocContext(e.me, localWorld); ok {
			mine = [2]uint32{slot, gen}
		}
		// Every live member must hear: a failed one is the leader's to
		// find (its gather), which then tells every member.
		for _, m := range local[1:] {
			_ = Send(c.coll, mine[:], m, tag)
		}
	} else if err := c.recvUnless(mine[:], sub, tag, unless, op); err != nil {
		e.lock()
		e.t.ReleaseOrphans(e.me, c.group[sub], e.holdsLocally)
		e.unlock()
		// Returning here left the leader, alive, waiting for this
		// member's slot, and every other member for the leader's table
		// (ft_split across 3 nodes, its rank 3 killed at its 30th call).
		mine, lost = [2]uint32{slotLost, 0}, err
	}
	// From here this rank holds mine until it adopts it: abandon gives
	// the hold up on every error.
	leader := members[0]
	table := make([]uint32, 2+2*len(members)) // status, pad, then slot and generation by member
	if c.rank == leader {
		copy(table[2:], mine[:])
		var failed error
		for i, m := range members[1:] {
			if err := c.recvUnless(table[2+2*(i+1):2+2*(i+2)], m, tag|tagSpanSlot, unless, op); err != nil && failed == nil {
				failed = err
			}
		}
		for i := range members {
			if table[2+2*i] == slotLost && failed == nil {
				failed = newErr(ErrProcFailed, op, -1, "a member failed during the creation")
			}
		}
		if failed != nil {
			table[0] = spanFailed
		} else {
			for i := range members {
				if table[3+2*i] == 0 {
					table[0] = spanNoSlot
				}
			}
		}
		for _, m := range members[1:] {
			if err := Send(c.coll, table, m, tag|tagSpanTable); err != nil && failed == nil {
				failed = err
			}
		}
		if failed != nil {
			return nil, c.abandon(mine, failed, op)
		}
	} else {
		if err := Send(c.coll, mine[:], leader, tag|tagSpanSlot); err != nil {
			return nil, c.abandon(mine, err, op)
		}
		if _, err := Recv(c.coll, table, leader, tag|tagSpanTable); err != nil {
			return nil, c.abandon(mine, err, op)
		}
	}
	if lost != nil {
		return nil, c.abandon(mine, lost, op)
	}
	switch table[0] {
	case spanNoSlot:
		return nil, c.abandon(mine, newErr(ErrNoMem, op, -1, "a node of the communicator had none of its %d context slots free", job.MaxContexts), op)
	case spanFailed:
		return nil, c.abandon(mine, newErr(ErrProcFailed, op, -1, "a member failed during the creation (its leader says)"), op)
	}
	if c.rank == leader {
		var ack [1]uint32
		for _, m := range members[1:] {
			if _, err := Recv(c.coll, ack[:], m, tag|tagAck); err != nil {
				// The live members have the communicator; this rank
				// reports the failure, as create's leader does.
				return nil, c.abandon(mine, err, op)
			}
		}
	}
	nc, err := adopt(mine, table[2:])
	if err != nil {
		return nil, err
	}
	if c.rank != leader {
		// An error means the leader died after sending the table: the
		// communicator is made; its next operations report it.
		_ = Send(c.coll, []uint32{1}, leader, tag|tagAck)
	}
	return nc, nil
}

// adoptSpanning makes this rank's communicator of world (world ranks, in
// order) in its node's slot mine (slot, generation), with the slot and
// generation of every member's node in table (two words a member).
func (c *Comm) adoptSpanning(world []int, mine [2]uint32, table []uint32, op string) (*Comm, error) {
	e := c.e
	e.lock()
	defer e.unlock()
	if !e.t.Adoptable(e.me, mine[0], mine[1]) {
		return nil, newErr(ErrProcFailed, op, -1, "the communicator's creator on this node failed before this rank adopted it")
	}
	nc := e.newComm(mine[0], mine[1], world, "")
	peer := make([]uint32, e.n)
	twin := make([]uint32, e.n)
	for i, w := range world {
		s, g := table[2*i], table[2*i+1]
		peer[w], twin[w] = wireCtx(2*s, g), wireCtx(2*s+1, g)
	}
	nc.peerCtx, nc.coll.peerCtx = peer, twin
	return nc, nil
}

// abandon gives up this rank's hold on a slot it allocated but could not
// hand to every member.
func (c *Comm) abandon(msg [2]uint32, err error, op string) error {
	if msg[1] != 0 {
		c.e.lock()
		c.e.t.ReleaseContext(c.e.me, msg[0])
		c.e.unlock()
	}
	return relabel(err, op)
}

// holdsLocally reports whether this rank has a communicator in slot s.
// Called under the engine lock.
func (e *engine) holdsLocally(s uint32) bool { return e.comms[2*s] != nil }

// relabel names op in an error of an internal step.
func relabel(err error, op string) error {
	var src error = err
	if m, ok := err.(multiErr); ok {
		src = m.err
	}
	if e, ok := src.(*Error); ok {
		out := *e
		out.Op = op
		return &out
	}
	return err
}

// splitTable gathers every member's row (the same length at all: color
// and key for Split) at rank 0 of c, which sends the table back: rank r's
// row at r*len(mine). If a member failed, or its row did not fit, rank 0
// sends a table whose first entry says so, so that no one waits for a
// table that will not come.
func (c *Comm) splitTable(mine []int64, op string) ([]int64, error) {
	const (
		failed   = -1 << 62 // a member failed
		mismatch = failed + 1
	)
	w := len(mine)
	table := make([]int64, w*c.size)
	if c.rank != 0 {
		if err := Send(c.coll, mine, 0, tagSplitInfo); err != nil {
			return nil, relabel(err, op)
		}
		if _, err := Recv(c.coll, table, 0, tagSplitTable); err != nil {
			if errors.Is(err, ErrTruncate) {
				return nil, newErr(ErrArg, op, -1, "the members called different kinds of split: %v", err)
			}
			return nil, relabel(err, op)
		}
		switch table[0] {
		case failed:
			return nil, newErr(ErrProcFailed, op, -1, "a member failed during the split (rank 0 says)")
		case mismatch:
			return nil, newErr(ErrArg, op, -1, "the members called different kinds of split (rank 0 says)")
		}
		return table, nil
	}
	copy(table, mine)
	var ferr error
	for r := 1; r < c.size; r++ {
		st, err := Recv(c.coll, table[w*r:w*r+w], r, tagSplitInfo)
		if err == nil && st.Count != w || errors.Is(err, ErrTruncate) {
			err = newErr(ErrArg, op, r, "the members called different kinds of split: rank %d sent %d bytes, rank 0 %d", r, st.Bytes, 8*w)
		}
		if err != nil && ferr == nil {
			ferr = err
		}
	}
	out := table
	if ferr != nil {
		out = make([]int64, w*c.size)
		out[0] = failed
		if errors.Is(ferr, ErrArg) {
			out[0] = mismatch
		}
	}
	var reqs []*Request
	for r := 1; r < c.size; r++ {
		if rq, err := Isend(c.coll, out, r, tagSplitTable); err == nil {
			reqs = append(reqs, rq)
		}
	}
	// A member that died after sending its row does not get the table:
	// no reason to fail here, where every live member goes on with it
	// (rank 0 may lead their communicator); the death surfaces in create.
	WaitAll(reqs, nil)
	if ferr != nil {
		return nil, relabel(ferr, op)
	}
	return table, nil
}

// Compare says whether c1 and c2 are Ident (the same communicator),
// Congruent (same group and order), Similar (same members) or Unequal.
func Compare(c1, c2 *Comm) (int, error) {
	if c1 == nil || c2 == nil {
		return Unequal, nilComm("Compare")
	}
	if c1 == c2 {
		return Ident, nil
	}
	g1, err := c1.Group()
	if err != nil {
		return Unequal, err
	}
	g2, err := c2.Group()
	if err != nil {
		return Unequal, err
	}
	switch g1.Compare(g2) {
	case Ident:
		return Congruent, nil
	case Similar:
		return Similar, nil
	}
	return Unequal, nil
}

// Self is the communicator of this process alone (MPI_COMM_SELF),
// created at its first use. It cannot be freed.
func (w *World) Self() (*Comm, error) {
	e := w.e
	e.lock()
	defer e.unlock()
	if e.closed {
		return nil, newErr(ErrFinalized, "Self", -1, "")
	}
	if w.self == nil {
		slot, gen, ok := e.t.AllocContext(e.me, []int{e.me})
		if !ok {
			return nil, newErr(ErrNoMem, "Self", -1, "every one of the job's %d context slots is in use", job.MaxContexts)
		}
		w.self = e.newComm(slot, gen, []int{e.me}, "MPI_COMM_SELF")
		w.self.permanent = true
	}
	return w.self, nil
}

// SetName names c (MPI_Comm_set_name); error messages use the name.
func (c *Comm) SetName(name string) error {
	if c == nil {
		return nilComm("SetName")
	}
	c.e.lock()
	defer c.e.unlock()
	if err := c.usable("SetName"); err != nil {
		return err
	}
	c.name = name
	return nil
}
