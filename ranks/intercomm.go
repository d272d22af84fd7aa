package ranks

import (
	"slices"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
)

// Intercommunicators: a local and a remote group that share one context.
//
// Point-to-point on an intercommunicator addresses the remote group:
// c.group and c.toComm are the remote group's, so sends, receives and
// statuses go through the engine unchanged, and c.rank is this rank's
// rank in the local group. The union of both groups holds the context
// slot, so a revoke of it reaches both groups, and package ulfm agrees
// over the union (members(): the low group first). The collectives of
// package coll use an intracommunicator of the local group (localComm,
// with a slot of its own) for the phases within a group, and the
// intercommunicator's collective twin for what crosses between the
// groups.
//
// The low group is the one whose leader has the lower world rank in
// IntercommCreate; Dup, Split and Create of an intercommunicator keep
// it; Merge orders the union by the high flags first.
//
// Creating one. Each group's leader allocates the slot of its local
// intracommunicator; the low group's leader also allocates the union's
// slot and hands it to the other leader; each leader then hands both to
// its group's members on their own channel (the local communicator's
// collective twin, or the parent intercommunicator's local one), and
// waits for each member to have adopted them, as create does. A failure
// anywhere makes the ranks that see it return ErrProcFailed; holds on
// slots this rank never adopted are released as in create, except the
// union slot's, which the other group's leader allocated: that one is
// released when this rank ends (ReleaseAll), a double fault left alone.

// interComm is what an intercommunicator has beyond an intracommunicator
// (shared by the communicator and its collective twin).
type interComm struct {
	local     []int   // the local group: local rank -> world rank
	union     []int   // both groups' world ranks, the low group first
	toUnion   []int32 // world rank -> position in union, or -1
	low       bool    // the local group is the low one (first in union)
	localComm *Comm   // an intracommunicator of the local group
	unionComm *Comm   // an intracommunicator of both groups, or nil until unionOf makes it
}

// unionOf returns the intracommunicator of both groups of c (the low
// group first), made at the first call (ext.InterUnion). Package coll
// runs Barrier and small Allreduce on it: there they are one
// shared-memory collective instead of two local phases and a leaders'
// point-to-point exchange, which cost 3-9 times the intracommunicator's
// figure. Like localComm it is internal: revoked with c, freed after c.
func (c *Comm) unionOf() (*Comm, error) {
	const op = "Union"
	e := c.e
	e.lock()
	u := c.inter.unionComm
	e.unlock()
	if u != nil {
		return u, nil
	}
	var err error
	c.inOrder(func() {
		e.lock()
		u = c.inter.unionComm
		e.unlock()
		if u != nil {
			return
		}
		if u, err = c.merge(false, op); err != nil {
			return
		}
		e.lock()
		u.internal, u.owner = true, c
		u.coll.owner = c
		c.inter.unionComm = u
		if c.revoked {
			e.revokeLocal(u)
		}
		e.unlock()
	})
	return u, err
}

// Tags of intercommunicator creation on collective twins (below
// tagCreateUser, which CreateGroup takes with its own tags).
const (
	tagInterCreate = tagCreateBase + 3 // leader → members: the slots; leader ↔ leader: the union slot
	tagInterTable  = tagCreateBase + 4 // leader ↔ leader: a split's table, Merge's high flags
	// Across nodes (interSpanning): the local intracommunicator's
	// creation on the local group's channel, and the union's (or
	// Merge's) on the world's collective twin.
	tagInterSpanLocal = tagCreateBase + 5
	tagInterSpanUnion = tagCreateBase + 6
)

// IsInter reports whether c is an intercommunicator.
func (c *Comm) IsInter() bool { return c != nil && c.inter != nil }

// RemoteSize is the size of an intercommunicator's remote group (0 for an
// intracommunicator).
func (c *Comm) RemoteSize() int {
	if c == nil || c.inter == nil {
		return 0
	}
	return len(c.group)
}

// RemoteGroup returns an intercommunicator's remote group
// (MPI_Comm_remote_group); ErrComm for an intracommunicator.
func (c *Comm) RemoteGroup() (Group, error) {
	if c == nil {
		return Group{}, nilComm("RemoteGroup")
	}
	c.e.lock()
	defer c.e.unlock()
	if err := c.usable("RemoteGroup"); err != nil {
		return Group{}, err
	}
	if c.inter == nil {
		return Group{}, newErr(ErrComm, "RemoteGroup", -1, "not an intercommunicator")
	}
	return Group{world: c.group, me: c.e.me}, nil
}

// localGroup is the world ranks of c's (local) group.
func (c *Comm) localGroup() []int {
	if c.inter != nil {
		return c.inter.local
	}
	return c.group
}

// members is every member of c: the group, or an intercommunicator's
// union (the low group first). Package ulfm counts members this way.
func (c *Comm) members() []int {
	if c.inter != nil {
		return c.inter.union
	}
	return c.group
}

// failScope is the members whose failure fails c's collectives: c's
// own, or, for an intercommunicator's local intracommunicator, every
// member of the intercommunicator (a failure in the other group makes a
// member of this one leave the local phases too).
func (c *Comm) failScope() []int {
	if c.owner != nil {
		return c.owner.members()
	}
	return c.members()
}

// memberIndex is world rank w's position in members(), or -1.
func (c *Comm) memberIndex(w int) int {
	if c.inter != nil {
		return int(c.inter.toUnion[w])
	}
	return int(c.toComm[w])
}

// newInterComm registers an intercommunicator of the local and remote
// groups (world ranks) in context slot slot of generation gen, with its
// collective twin, and runs the creation hooks.
func (e *engine) newInterComm(slot, gen uint32, local, remote []int, low bool, localComm *Comm) *Comm {
	return e.newInterCommWith(slot, gen, local, remote, low, localComm, nil)
}

// newInterCommWith is newInterComm with set, if not nil, run on the new
// communicator before the creation hooks (a spanning one's wire contexts).
func (e *engine) newInterCommWith(slot, gen uint32, local, remote []int, low bool, localComm *Comm, set func(*Comm)) *Comm {
	e.slotGen[slot] = gen
	in := &interComm{local: local, low: low, localComm: localComm}
	if low {
		in.union = slices.Concat(local, remote)
	} else {
		in.union = slices.Concat(remote, local)
	}
	in.toUnion = make([]int32, e.n)
	for i := range in.toUnion {
		in.toUnion[i] = -1
	}
	for i, w := range in.union {
		in.toUnion[w] = int32(i)
	}
	me := slices.Index(local, e.me)
	c := e.newMatching(2*slot, slot, gen, remote, "")
	c.coll = e.newMatching(2*slot+1, slot, gen, remote, "")
	c.coll.twin = true
	spans := slices.ContainsFunc(in.union, e.lay.Remote)
	for _, m := range []*Comm{c, c.coll} {
		m.inter, m.rank = in, me
		m.spansNodes = spans
	}
	if set != nil {
		set(c)
	}
	if e.t.ContextRevoked(slot, gen) {
		e.revokeLocal(c)
	}
	localComm.internal, localComm.owner = true, c
	localComm.coll.owner = c
	ext.Created(c)
	return c
}

// interSlots is what a leader hands to its group's members when an
// intercommunicator is made: the union's slot and its local
// intracommunicator's, each with its generation (0: none was free), the
// group's side, and the remote group.
type interSlots struct {
	uslot, ugen, lslot, lgen uint32
	low                      bool
	failed                   bool // the leader's part failed: the members get ErrProcFailed
	spawnErr                 bool // a spawn's root could not spawn: the members get ErrSpawn
	spanning                 bool // the groups span nodes: no slots; the members make them (interSpanning)
	portErr                  bool // a Connect's or Accept's root could not use the port: the members get ErrPort
	remote                   []int
}

func (s *interSlots) encode() []int64 {
	out := []int64{int64(s.uslot), int64(s.ugen), int64(s.lslot), int64(s.lgen), 0, int64(len(s.remote))}
	if s.low {
		out[4] |= 1
	}
	if s.failed {
		out[4] |= 2
	}
	if s.spawnErr {
		out[4] |= 4
	}
	if s.spanning {
		out[4] |= 8
	}
	if s.portErr {
		out[4] |= 16
	}
	for _, w := range s.remote {
		out = append(out, int64(w))
	}
	return out
}

func decodeSlots(b []int64, n int) (interSlots, bool) {
	if n < 6 || int(b[5]) != n-6 {
		return interSlots{}, false
	}
	s := interSlots{uslot: uint32(b[0]), ugen: uint32(b[1]), lslot: uint32(b[2]), lgen: uint32(b[3]),
		low: b[4]&1 != 0, failed: b[4]&2 != 0, spawnErr: b[4]&4 != 0, spanning: b[4]&8 != 0, portErr: b[4]&16 != 0}
	for _, w := range b[6:n] {
		s.remote = append(s.remote, int(w))
	}
	return s, true
}

// handOut is a leader's part of making an intercommunicator once the
// slots are decided: it sends them to the other members of its group
// (ranks of ch, a collective twin whose group is the local group; mine
// lists them, the leader first) on tag, waits until each has adopted them,
// and adopts them itself. If a member fails, the live ones have the
// slots; this rank reports the failure.
func (e *engine) handOut(ch *Comm, mine []int, s interSlots, local []int, tag int, op string) (*Comm, error) {
	msg := s.encode()
	var reqs []*Request
	for _, m := range mine[1:] {
		rq, err := Isend(ch, msg, m, tag)
		if err != nil {
			return nil, e.dropSlots(s, err, op)
		}
		reqs = append(reqs, rq)
	}
	if err := WaitAll(reqs, nil); err != nil {
		return nil, e.dropSlots(s, err, op)
	}
	if s.spanning {
		return nil, nil // every member makes it (interSpanning)
	}
	if s.failed || s.ugen == 0 || s.lgen == 0 {
		e.dropSlots(s, nil, op)
		return nil, newErr(ErrNoMem, op, -1, "every one of the job's %d context slots is in use", job.MaxContexts)
	}
	var ack [1]uint32
	for _, m := range mine[1:] {
		if _, err := Recv(ch, ack[:], m, tag|tagAck); err != nil {
			return nil, e.dropSlots(s, err, op)
		}
	}
	return e.adoptInter(s, local, op)
}

// receiveSlots is a member's part: it receives the slots from its leader
// (a rank of ch) on tag, adopts them, and says so. If the leader says the
// groups span nodes, it returns none, and span (if not nil) gets what the
// leader sent, for interSpanning.
func (e *engine) receiveSlots(ch *Comm, leader int, local []int, tag int, op string, span *interSlots) (*Comm, error) {
	buf := make([]int64, 6+e.n)
	st, err := Recv(ch, buf, leader, tag)
	if err != nil {
		e.lock()
		e.t.ReleaseOrphans(e.me, ch.group[leader], e.holdsLocally)
		e.unlock()
		return nil, relabel(err, op)
	}
	s, ok := decodeSlots(buf, st.Count)
	if !ok {
		return nil, newErr(ErrOther, op, -1, "malformed slots from the leader")
	}
	if s.failed {
		return nil, newErr(ErrProcFailed, op, -1, "the leader's part of the creation failed")
	}
	if s.spawnErr {
		return nil, newErr(ErrSpawn, op, -1, "the root could not spawn; nothing was started")
	}
	if s.portErr {
		return nil, newErr(ErrPort, op, -1, "the root could not connect or accept on the port")
	}
	if s.spanning && span != nil {
		*span = s
		return nil, nil
	}
	if s.ugen == 0 || s.lgen == 0 {
		return nil, newErr(ErrNoMem, op, -1, "every one of the job's %d context slots is in use", job.MaxContexts)
	}
	nc, err := e.adoptInter(s, local, op)
	if err == nil {
		// A leader that died after handing out the slots leaves the
		// communicator made; its next operations report it.
		Send(ch, []uint32{1}, leader, tag|tagAck)
	}
	return nc, err
}

// adoptInter makes this rank's intercommunicator from slots s.
func (e *engine) adoptInter(s interSlots, local []int, op string) (*Comm, error) {
	e.lock()
	defer e.unlock()
	if !e.t.Adoptable(e.me, s.uslot, s.ugen) || !e.t.Adoptable(e.me, s.lslot, s.lgen) {
		return nil, newErr(ErrProcFailed, op, -1, "the intercommunicator's creator failed before this rank adopted it")
	}
	lc := e.newComm(s.lslot, s.lgen, local, "")
	return e.newInterComm(s.uslot, s.ugen, local, s.remote, s.low, lc), nil
}

// dropSlots gives up a leader's holds on the slots it could not hand out.
func (e *engine) dropSlots(s interSlots, err error, op string) error {
	e.lock()
	if s.ugen != 0 {
		e.t.ReleaseContext(e.me, s.uslot)
	}
	if s.lgen != 0 {
		e.t.ReleaseContext(e.me, s.lslot)
	}
	e.unlock()
	if err == nil {
		return nil
	}
	return relabel(err, op)
}

// IntercommCreate makes an intercommunicator of the group of local
// (every member calls it) and another group, disjoint from it, that
// calls it at the same time (MPI_Intercomm_create). localLeader is a
// rank of local; the two leaders talk through peer, a communicator
// that both belong to, where the remote leader is remoteLeader, on tag
// (peer, remoteLeader and tag matter at the leader only). It is
// collective over local, and the leaders' messages on peer are ordinary
// messages of tag: another message of that tag between them may be
// taken instead.
func IntercommCreate(local *Comm, localLeader int, peer *Comm, remoteLeader, tag int) (*Comm, error) {
	return intercommCreate(local, localLeader, peer, remoteLeader, tag, nil)
}

// intercommCreate is IntercommCreate; a non-nil portErr at the leader
// (a Connect's or Accept's root that could not use its port) fails the
// creation at once, and the members with ErrPort.
func intercommCreate(local *Comm, localLeader int, peer *Comm, remoteLeader, tag int, portErr error) (*Comm, error) {
	const op = "IntercommCreate"
	if local == nil {
		return nil, nilComm(op)
	}
	if err := local.usableLocked(op); err != nil {
		return nil, err
	}
	if local.inter != nil {
		return nil, newErr(ErrComm, op, -1, "the local communicator is an intercommunicator")
	}
	if localLeader < 0 || localLeader >= local.size {
		return nil, newErr(ErrRank, op, -1, "local leader %d in a communicator of %d", localLeader, local.size)
	}
	e := local.e
	mine := local.group
	var nc *Comm
	var err error
	var span interSlots
	local.inOrder(func() {
		if local.rank != localLeader {
			nc, err = e.receiveSlots(local.coll, localLeader, mine, tagInterCreate, op, &span)
			return
		}
		var s interSlots
		if portErr != nil {
			// Connect or Accept: the root's port was bad; the members
			// wait for the slots and learn so.
			err = portErr
			e.handOut(local.coll, leaderFirst(local.size, localLeader), interSlots{portErr: true}, mine, tagInterCreate, op)
			return
		}
		s, err = e.leaderSlots(peer, remoteLeader, tag, mine, op)
		if err != nil {
			// The members wait for the slots: tell them.
			e.handOut(local.coll, leaderFirst(local.size, localLeader), interSlots{failed: true}, mine, tagInterCreate, op)
			return
		}
		nc, err = e.handOut(local.coll, leaderFirst(local.size, localLeader), s, mine, tagInterCreate, op)
		span = s
	})
	if err == nil && span.spanning {
		nc, err = local.interSpanning(everyoneOf(local.size), span.remote, span.low, op)
	}
	return nc, err
}

// interSpanning makes an intercommunicator whose groups span nodes: the
// local group is members lm of local (ranks of an intracommunicator, in
// order), the remote group remote (world ranks). Each node has its own
// segment, so there is no one slot for all: the local group makes its
// intracommunicator over local (createSpanning), and both groups make
// the union's on the world's collective twin, where every member can
// reach every other, and take it as the intercommunicator (its wire
// context on each node is that node's slot, Comm.peerCtx). Every member
// of both groups calls it with the same groups and the same low.
//
// The world's twin carries it on fixed tags: two such creations among
// the same ranks at the same time (from two threads) may take each
// other's messages.
func (local *Comm) interSpanning(lm []int, remote []int, low bool, op string) (*Comm, error) {
	e := local.e
	lworld := make([]int, len(lm))
	for i, r := range lm {
		lworld[i] = local.group[r]
	}
	lc, err := local.createSpanning(lm, lworld, tagInterSpanLocal, op)
	if err != nil {
		return nil, err
	}
	union := slices.Concat(lworld, remote)
	if !low {
		union = slices.Concat(remote, lworld)
	}
	w := e.comms[0]
	nc, err := w.createSpanningAs(union, union, tagInterSpanUnion, -1, op, func(mine [2]uint32, table []uint32) (*Comm, error) {
		e.lock()
		defer e.unlock()
		if !e.t.Adoptable(e.me, mine[0], mine[1]) {
			return nil, newErr(ErrProcFailed, op, -1, "the intercommunicator's creator on this node failed before this rank adopted it")
		}
		ic := e.newInterCommWith(mine[0], mine[1], lworld, remote, low, lc, func(ic *Comm) {
			peer, twin := make([]uint32, e.n), make([]uint32, e.n)
			for i, w := range union {
				s, g := table[2*i], table[2*i+1]
				peer[w], twin[w] = wireCtx(2*s, g), wireCtx(2*s+1, g)
			}
			ic.peerCtx, ic.coll.peerCtx = peer, twin
		})
		return ic, nil
	})
	if err != nil {
		lc.Free()
		return nil, err
	}
	return nc, nil
}

// leaderFirst lists ranks 0..n-1 with leader first.
func leaderFirst(n, leader int) []int {
	out := []int{leader}
	for r := range n {
		if r != leader {
			out = append(out, r)
		}
	}
	return out
}

// leaderSlots is the leaders' exchange of IntercommCreate on peer: each
// sends its group and gets the other's; each allocates its local slot;
// the low one (lower world rank) allocates the union's slot and sends it
// to the other.
func (e *engine) leaderSlots(peer *Comm, remoteLeader, tag int, mine []int, op string) (interSlots, error) {
	if peer == nil {
		return interSlots{}, nilComm(op)
	}
	if err := peer.usableLocked(op); err != nil {
		return interSlots{}, err
	}
	if peer.inter != nil {
		return interSlots{}, newErr(ErrComm, op, -1, "the peer communicator is an intercommunicator")
	}
	if remoteLeader < 0 || remoteLeader >= peer.size || peer.group[remoteLeader] == e.me {
		return interSlots{}, newErr(ErrRank, op, -1, "remote leader %d of the peer communicator", remoteLeader)
	}
	if tag < 0 || tag > TagUB {
		return interSlots{}, newErr(ErrTag, op, -1, "tag %d", tag)
	}
	out := append([]int64{int64(len(mine))}, toInt64(mine)...)
	in := make([]int64, 1+e.n)
	st, err := Sendrecv(peer, out, remoteLeader, tag, in, remoteLeader, tag)
	if err != nil {
		return interSlots{}, relabel(err, op)
	}
	if st.Count < 1 || int(in[0]) != st.Count-1 {
		return interSlots{}, newErr(ErrOther, op, -1, "malformed group from the remote leader")
	}
	remote := make([]int, in[0])
	for i := range remote {
		remote[i] = int(in[1+i])
		if slices.Contains(mine, remote[i]) {
			return interSlots{}, newErr(ErrArg, op, -1, "the groups overlap (world rank %d is in both)", remote[i])
		}
	}
	low := e.me < peer.group[remoteLeader]
	s := interSlots{low: low, remote: remote}
	// Both leaders see both groups, so both decide alike.
	if slices.ContainsFunc(remote, e.lay.Remote) || slices.ContainsFunc(mine, e.lay.Remote) {
		s.spanning = true
		return s, nil
	}
	e.lock()
	if slot, gen, ok := e.t.AllocContext(e.me, mine); ok {
		s.lslot, s.lgen = slot, gen
	}
	e.unlock()
	var u [2]uint32
	if low {
		union := slices.Concat(mine, remote)
		e.lock()
		if slot, gen, ok := e.t.AllocContext(e.me, union); ok {
			u = [2]uint32{slot, gen}
		}
		e.unlock()
		err = Send(peer, u[:], remoteLeader, tag)
	} else {
		_, err = Recv(peer, u[:], remoteLeader, tag)
	}
	s.uslot, s.ugen = u[0], u[1]
	if err != nil {
		return interSlots{}, e.dropSlots(s, err, op)
	}
	return s, nil
}

func toInt64(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

// interCreate makes, at the members taking part, the intercommunicator
// of local ranks lm (in order) and remote ranks rm of intercommunicator
// c (Dup, Create, a color of Split): the leaders (the first of each)
// allocate the slots as in IntercommCreate, over c's collective twin,
// and hand them out over c's local intracommunicator's twin. Every
// member of lm calls it; so does every member of rm on its side.
func (c *Comm) interCreate(lm, rm []int, op string) (*Comm, error) {
	e := c.e
	in := c.inter
	local := make([]int, len(lm))
	for i, r := range lm {
		local[i] = in.local[r]
	}
	remote := make([]int, len(rm))
	for i, r := range rm {
		remote[i] = c.group[r]
	}
	if c.spansNodes {
		return in.localComm.interSpanning(lm, remote, in.low, op)
	}
	lch := in.localComm.coll
	if c.rank != lm[0] {
		return e.receiveSlots(lch, lm[0], local, tagInterCreate, op, nil)
	}
	s := interSlots{low: in.low, remote: remote}
	e.lock()
	if slot, gen, ok := e.t.AllocContext(e.me, local); ok {
		s.lslot, s.lgen = slot, gen
	}
	e.unlock()
	var u [2]uint32
	var err error
	if in.low {
		e.lock()
		if slot, gen, ok := e.t.AllocContext(e.me, slices.Concat(local, remote)); ok {
			u = [2]uint32{slot, gen}
		}
		e.unlock()
		err = Send(c.coll, u[:], rm[0], tagInterCreate)
	} else {
		_, err = Recv(c.coll, u[:], rm[0], tagInterCreate)
	}
	s.uslot, s.ugen = u[0], u[1]
	if err != nil {
		e.dropSlots(s, nil, op)
		e.handOut(lch, lm, interSlots{failed: true}, local, tagInterCreate, op)
		return nil, relabel(err, op)
	}
	return e.handOut(lch, lm, s, local, tagInterCreate, op)
}

// interDup is Dup of an intercommunicator.
func (c *Comm) interDup(op string) (*Comm, error) {
	return c.interCreate(everyoneOf(len(c.inter.local)), everyoneOf(len(c.group)), op)
}

func everyoneOf(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// leaderExchange has the leaders of intercommunicator c's two groups
// (local rank 0) swap mine for the other group's, over c's collective
// twin, and hand the other's to their group over its local
// intracommunicator; every member gets it. n bounds its length.
func (c *Comm) leaderExchange(mine []int64, n int, op string) ([]int64, error) {
	in := c.inter
	buf := make([]int64, n)
	var got int
	if c.rank == 0 {
		st, err := Sendrecv(c.coll, mine, 0, tagInterTable, buf, 0, tagInterTable)
		if err != nil {
			return nil, relabel(err, op)
		}
		got = st.Count
		var reqs []*Request
		for r := 1; r < len(in.local); r++ {
			q, err := Isend(in.localComm.coll, buf[:got], r, tagInterTable)
			if err != nil {
				return nil, relabel(err, op)
			}
			reqs = append(reqs, q)
		}
		if err := WaitAll(reqs, nil); err != nil {
			return nil, relabel(err, op)
		}
	} else {
		st, err := Recv(in.localComm.coll, buf, 0, tagInterTable)
		if err != nil {
			return nil, relabel(err, op)
		}
		got = st.Count
	}
	return buf[:got], nil
}

// interSplit is Split of an intercommunicator: each group splits by
// color and key as an intracommunicator does, and the parts of one color
// on both sides make an intercommunicator; a color on one side only
// gives nil there.
func (c *Comm) interSplit(color, key int, op string) (*Comm, error) {
	in := c.inter
	table, err := in.localComm.splitTable([]int64{int64(color), int64(key)}, op)
	if err != nil {
		return nil, err
	}
	remote, err := c.leaderExchange(table, 2*len(c.group), op)
	if err != nil {
		return nil, err
	}
	if len(remote) != 2*len(c.group) {
		return nil, newErr(ErrOther, op, -1, "malformed table from the remote group")
	}
	if color == Undefined {
		return nil, nil
	}
	lm := byKey(table, 2, func(r int) bool { return table[2*r] == int64(color) })
	rm := byKey(remote, 2, func(r int) bool { return remote[2*r] == int64(color) })
	if len(rm) == 0 {
		return nil, nil
	}
	return c.interCreate(lm, rm, op)
}

// interCreateGroup is Create of an intercommunicator: g is a subgroup of
// the local group; the remote group passes its own subgroup. A rank not
// in g, or whose group's counterpart is empty, gets nil.
func (c *Comm) interCreateGroup(g Group, op string) (*Comm, error) {
	in := c.inter
	var lm []int
	for _, w := range g.world {
		r := slices.Index(in.local, w)
		if r < 0 {
			return nil, newErr(ErrArg, op, -1, "world rank %d of the group is not in the local group", w)
		}
		lm = append(lm, r)
	}
	remote, err := c.leaderExchange(toInt64(lm), len(c.group), op)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(lm, c.rank) || len(lm) == 0 || len(remote) == 0 {
		return nil, nil
	}
	rm := make([]int, len(remote))
	for i, r := range remote {
		rm[i] = int(r)
	}
	return c.interCreate(lm, rm, op)
}

// IntercommMerge makes an intracommunicator of both groups of
// intercommunicator c (MPI_Intercomm_merge): the group whose members pass
// high false first (every member of a group passes the same); if both
// pass the same, the low group (the first in the union) first. It is
// collective over both groups.
func (c *Comm) IntercommMerge(high bool) (*Comm, error) {
	const op = "IntercommMerge"
	if c == nil {
		return nil, nilComm(op)
	}
	if err := c.usableLocked(op); err != nil {
		return nil, err
	}
	if c.inter == nil {
		return nil, newErr(ErrComm, op, -1, "not an intercommunicator")
	}
	var nc *Comm
	var err error
	c.inOrder(func() { nc, err = c.merge(high, op) })
	return nc, err
}

func (c *Comm) merge(high bool, op string) (*Comm, error) {
	e := c.e
	in := c.inter
	h := int64(0)
	if high {
		h = 1
	}
	other, err := c.leaderExchange([]int64{h}, 1, op)
	if err != nil {
		return nil, err
	}
	if len(other) != 1 {
		return nil, newErr(ErrOther, op, -1, "malformed flag from the remote group")
	}
	first := !high && other[0] == 1 || high == (other[0] == 1) && in.low
	var group []int
	if first {
		group = slices.Concat(in.local, c.group)
	} else {
		group = slices.Concat(c.group, in.local)
	}
	if c.spansNodes {
		// Every member makes it on the world's twin, as interSpanning
		// makes the union.
		return e.comms[0].createSpanning(group, group, tagInterSpanUnion, op)
	}
	// The first group's leader allocates and hands the slot to the
	// other leader; each leader hands it to its group.
	var msg [2]uint32
	if c.rank == 0 {
		if first {
			e.lock()
			if slot, gen, ok := e.t.AllocContext(e.me, group); ok {
				msg = [2]uint32{slot, gen}
			}
			e.unlock()
			err = Send(c.coll, msg[:], 0, tagInterCreate)
		} else {
			_, err = Recv(c.coll, msg[:], 0, tagInterCreate)
		}
		if err != nil {
			if first && msg[1] != 0 {
				e.lock()
				e.t.ReleaseContext(e.me, msg[0])
				e.unlock()
			}
			msg = [2]uint32{}
		}
		var reqs []*Request
		for r := 1; r < len(in.local); r++ {
			if q, serr := Isend(in.localComm.coll, msg[:], r, tagInterCreate); serr == nil {
				reqs = append(reqs, q)
			}
		}
		WaitAll(reqs, nil)
		if err != nil {
			return nil, relabel(err, op)
		}
	} else {
		if _, err := Recv(in.localComm.coll, msg[:], 0, tagInterCreate); err != nil {
			return nil, relabel(err, op)
		}
	}
	if msg[1] == 0 {
		return nil, newErr(ErrNoMem, op, -1, "no context slot (or a leader failed)")
	}
	e.lock()
	defer e.unlock()
	if !e.t.Adoptable(e.me, msg[0], msg[1]) {
		return nil, newErr(ErrProcFailed, op, -1, "the communicator's creator failed before this rank adopted it")
	}
	return e.newComm(msg[0], msg[1], group, ""), nil
}

// adoptShrunk makes this rank's intercommunicator of the union members
// (positions in c.members()) of intercommunicator c, in the slots that
// Shrink's decision allocated: s for the union, ls for this rank's side.
func (c *Comm) adoptShrunk(s, gen, ls, lgen uint32, members []int) (*Comm, error) {
	const op = "Shrink"
	e := c.e
	in := c.inter
	var local, remote []int
	for _, m := range members {
		w := in.union[m]
		if slices.Contains(in.local, w) {
			local = append(local, w)
		} else {
			remote = append(remote, w)
		}
	}
	e.lock()
	defer e.unlock()
	if e.closed {
		return nil, newErr(ErrFinalized, op, -1, "")
	}
	if !e.t.Adoptable(e.me, s, gen) || !e.t.Adoptable(e.me, ls, lgen) {
		return nil, newErr(ErrOther, op, -1, "context slot %d or %d is no longer held by this rank", s, ls)
	}
	lc := e.newComm(ls, lgen, local, "")
	return e.newInterComm(s, gen, local, remote, in.low, lc), nil
}

// FailedGroup returns the members of c known here to have failed,
// acknowledged or not, as a group (MPI_Comm_get_failed): of an
// intercommunicator, of both groups. It is local.
func (c *Comm) FailedGroup() (Group, error) {
	return c.failedGroup("FailedGroup", func(e *engine) int { e.refresh(); return len(e.failedOrder) })
}

// AckedGroup returns the members of c whose failure FailureAck has
// acknowledged, as a group (MPI_Comm_failure_get_acked): of an
// intercommunicator, of both groups. It is local.
func (c *Comm) AckedGroup() (Group, error) {
	return c.failedGroup("AckedGroup", func(*engine) int { return c.ackCount })
}

// failedGroup is the members of c among the first upto() failures of
// the failure log, in the order of members().
func (c *Comm) failedGroup(op string, upto func(e *engine) int) (Group, error) {
	if c == nil {
		return Group{}, nilComm(op)
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.usable(op); err != nil {
		return Group{}, err
	}
	k := upto(e)
	var out []int
	for _, w := range c.members() {
		if slices.Contains(e.failedOrder[:k], w) {
			out = append(out, w)
		}
	}
	return Group{world: out, me: e.me}, nil
}
