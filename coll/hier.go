package coll

import (
	"errors"
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Hierarchical collectives across nodes (issue 27): a node-local phase in
// shared memory, one phase among the nodes' leaders by messages, and a
// node-local phase again, as Open MPI's HAN composes them. At the first
// such collective on a communicator that spans nodes, its members make
// the communicator of their node's members (SplitType, in the
// communicator's order) and learn, by one Allgather, where every node's
// block of ranks starts. The composition keeps MPI's rank order for
// operations that do not commute only if every node's members are
// consecutive ranks (the world's are): otherwise the point-to-point
// versions (span.go) stay in use.
//
// Failures. The leaders' phase runs on the communicator's own collective
// twin, so a member's failure anywhere ends its waits (collDeath), and
// the node's communicator fails as the whole one does (ext.FailWith): a
// member that saw a failure first and left may be missing from a local
// phase, whose other members must not wait for it. A leader whose phase
// failed for another reason says so in a status word of the local
// broadcast.

// hierAfter is how many collectives a communicator runs flat before it
// makes its hierarchy: making it costs a creation and two Allgathers
// across nodes, more than a few flat Allreduces, which a communicator
// used once or twice (a shrunk one that a recovery checks) would pay
// for nothing.
const hierAfter = 4

// hier is a spanning communicator's hierarchy, made once (hierOf).
type hier struct {
	local   *ranks.Comm // this node's members, in the communicator's order
	leaders []int       // every node's first member (a rank of the communicator), in order
	me      int         // this rank's index in leaders, or -1
	err     error       // making it failed: every later collective fails so
}

// hierOf returns c's hierarchy, making it at the first call, or nil if
// c does not span nodes or its nodes' blocks are not consecutive.
// Collective over c.
func hierOf(c *ranks.Comm) (*hier, error) {
	st, _ := spanState(c)
	if st == nil {
		return nil, nil
	}
	if st.hier == nil {
		if st.k < hierAfter {
			return nil, nil // every member counts the same collectives
		}
		// Flat meanwhile: making it runs collectives on c (Allgather),
		// which must not try to make it again.
		st.hier = &hier{me: -1}
		st.hier = makeHier(c)
	}
	h := st.hier
	if h.err != nil {
		return nil, h.err
	}
	if h.local == nil {
		return nil, nil
	}
	return h, nil
}

// spanState returns c's collective state if c spans nodes.
func spanState(c *ranks.Comm) (*state, bool) {
	if c == nil {
		return nil, false
	}
	if st, _ := ext.SlotsOf(c)[ext.SlotColl].(*state); st != nil && st.span && st.ic == nil {
		return st, true
	}
	return nil, false
}

func makeHier(c *ranks.Comm) *hier {
	h := &hier{me: -1}
	local, err := c.SplitType(ranks.TypeShared, c.Rank())
	if err != nil {
		h.err = failedFirst(c, err)
		return h
	}
	// A member's failure anywhere ends the node's waits too, this
	// Allgather's first: a member may have left the collective of c on
	// seeing it, before its part on the node.
	ext.FailWith(local, c)
	mine := make([]int, local.Size())
	// The internal forms: this may run as a job of c's queue (a
	// nonblocking or persistent Allreduce), where the public ones would
	// queue behind it and wait for it.
	if err := allgather(local, []int{c.Rank()}, mine); err != nil {
		h.err = failedFirst(c, err)
		local.Free()
		return h
	}
	consecutive := 0
	if mine[len(mine)-1]-mine[0]+1 == len(mine) {
		consecutive = 1
	}
	all := make([]int, 2*c.Size())
	if err := allgather(c, []int{mine[0], consecutive}, all); err != nil {
		h.err = failedFirst(c, err)
		local.Free()
		return h
	}
	for r := range c.Size() {
		if all[2*r+1] == 0 {
			local.Free() // a node's members interleave with others'
			return h
		}
		if all[2*r] == r {
			if r == c.Rank() {
				h.me = len(h.leaders)
			}
			h.leaders = append(h.leaders, r)
		}
	}
	h.local = local
	return h
}

// failedFirst is err, the error of a step of making c's hierarchy, unless
// a member of c is known to have failed: then that failure, which
// explains the step's error (a member that saw it first returned from
// its collective and may have finalized, so its peers see "finalized"),
// as st.fail says for a collective's steps.
func failedFirst(c *ranks.Comm, err error) error {
	if cerr := ext.Check(c, "SplitType"); cerr != nil && errors.Is(cerr, ranks.ErrProcFailed) {
		return cerr
	}
	return err
}

// hierAllreduce: Reduce on the node, an allreduce among the leaders (a
// binomial reduce to the first, which holds ranks in order, and its
// binomial broadcast), and Bcast on the node of the status and result.
func hierAllreduce[T any](c *ranks.Comm, h *hier, send, recv []T, op Op[T]) error {
	const name = "Allreduce"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	switch {
	case op == nil:
		return errf(ranks.ErrArg, name, "nil op")
	case send != nil && len(send) != len(recv):
		return errf(ranks.ErrBuffer, name, "send and receive buffers differ in length")
	}
	mine := send
	if mine == nil {
		mine = append([]T(nil), recv...)
	}
	if ls, ok := h.sleepers(len(bytesOf(mine))); ok {
		return h.held(ls, name, bytesOf(mine), bytesOf(recv), func() error {
			if err := reduceLines(ls, recv, op, ls.size, name); err != nil {
				return err
			}
			return leadersAllreduce(st, h, recv, op, name)
		})
	}
	if err := reduce(h.local, mine, recv, op, 0); err != nil {
		return err
	}
	return h.fromLeader(name, bytesOf(recv), func() error { return leadersAllreduce(st, h, recv, op, name) })
}

// sleepers returns the collective state of this node's communicator if
// its members sleep in their waits (they outnumber the node's cores) and
// n bytes fit a line: then a small collective's node-local phases take
// held's shape.
func (h *hier) sleepers(n int) (*state, bool) {
	ls, _ := ext.SlotsOf(h.local)[ext.SlotColl].(*state)
	if ls == nil || ls.spin || ls.size < 2 || n > inlineMax {
		return nil, false
	}
	return ls, true
}

// held runs the node-local phases of a small hierarchical collective
// whose node's members sleep, as the allreduce floor's agents and ranks
// do (benchmarks/ref/allreduce_floor.c): every member writes its
// contribution p in its line and counts itself in; the one that
// completes the count wakes the leader (local rank 0), unless it is the
// leader; the leader runs phase (which reads the lines and crosses the
// nodes) and leaves its outcome and out (at most inlineMax bytes) in the
// header, and one futex wake releases every other member, which copies
// out. The other members sleep at once: their wait lasts at least a
// crossing of the nodes, and a yield only delays the processes that
// carry it. By messages (reduce, then fromLeader's Bcast), each member's
// contribution woke the sleeping leader, and the leader woke each member
// in turn.
func (h *hier) held(ls *state, name string, p, out []byte, phase func() error) error {
	if _, err := begin(h.local, name); err != nil {
		return err
	}
	if err := ls.publish(name, p); err != nil {
		return err
	}
	ls.a++
	full := ls.a * uint64(ls.size)
	last := ls.hdr.arrive.Add(1) == full
	if ls.rank != 0 {
		if last {
			ext.Wake(ls.c, 0) // the leader may sleep on the count
		}
		ext.SleepAtOnce(ls.c, true)
		err := ext.Wait(ls.c, name, &ls.hdr.done, ls.counterDone)
		ext.SleepAtOnce(ls.c, false)
		if err != nil {
			return err
		}
		if ls.hdr.resN == resFailed {
			return errf(ranks.ErrProcFailed, name, "a member failed (the node's leader says)")
		}
		return ls.result(name, out)
	}
	if !last {
		if err := ext.Wait(ls.c, name, nil, ls.countFull); err != nil {
			return err
		}
	}
	if mis := ls.firstSizeMismatch(); mis >= 0 {
		ls.releaseWith(nil, mis)
		return checkLen(name, mis, -1, len(p))
	}
	if err := phase(); err != nil {
		ls.hdr.resN = resFailed
		ls.hdr.done.Store(uint32(ls.a))
		ext.Release(ls.c, &ls.hdr.done)
		return err
	}
	ls.releaseWith(out, -1)
	return nil
}

// fromLeader runs phase at the node's leader and gives its outcome and
// data (the leader's, after phase) to the node's members: a Bcast on the
// node of a status word and the data. A member whose leader's phase
// failed returns ErrProcFailed.
func (h *hier) fromLeader(name string, data []byte, phase func() error) error {
	buf := make([]byte, 8+len(data))
	if h.me >= 0 {
		var status uint64
		if err := phase(); err != nil {
			status = 1
		}
		*(*uint64)(unsafe.Pointer(&buf[0])) = status
		copy(buf[8:], data)
	}
	if err := bcast(h.local, buf, 0); err != nil {
		return err
	}
	if *(*uint64)(unsafe.Pointer(&buf[0])) != 0 {
		return errf(ranks.ErrProcFailed, name, "a member failed (the node's leader says)")
	}
	copy(data, buf[8:])
	return nil
}

// nodeOf is the index in leaders of member r's node (nodes hold
// consecutive ranks, in order).
func (h *hier) nodeOf(r int) int {
	i := len(h.leaders) - 1
	for i > 0 && h.leaders[i] > r {
		i--
	}
	return i
}

// hierBarrier: Barrier on the node, the leaders' one-hop exchange (each
// tells every other), and the release on the node. Across 3 nodes of 3
// ranks the flat dissemination barrier takes 4 rounds, each crossing
// nodes through two agents.
func hierBarrier(c *ranks.Comm, h *hier) error {
	const name = "Barrier"
	st, err := begin(c, name)
	if err != nil {
		return err
	}
	if ls, ok := h.sleepers(0); ok {
		return h.held(ls, name, nil, nil, func() error {
			return leadersExchange(st, h, []byte{0}, func(_, _ []byte) {}, name)
		})
	}
	if err := barrier(h.local); err != nil {
		return err
	}
	return h.fromLeader(name, nil, func() error {
		return leadersExchange(st, h, []byte{0}, func(_, _ []byte) {}, name)
	})
}

// hierBcast: Bcast on the root's node from the root, the leaders' Bcast
// from its leader (direct sends up to leadersExchangeMax, a binomial
// tree beyond), and Bcast on every other node from its leader.
func hierBcast(c *ranks.Comm, h *hier, b []byte, root int) error {
	const name = "Bcast"
	st, _, err := start[byte](c, name, root)
	if err != nil {
		return err
	}
	from := h.nodeOf(root)
	if h.nodeOf(c.Rank()) == from {
		if err := bcast(h.local, b, root-h.leaders[from]); err != nil {
			return err
		}
		if h.me < 0 {
			return nil
		}
		return leadersBcast(st, h, b, from, name)
	}
	return h.fromLeader(name, b, func() error { return leadersBcast(st, h, b, from, name) })
}

// hierReduce: Reduce on every node to its leader, the partial results
// sent to the leader of the root's node, which combines them in leader
// order (so in rank order: operations that do not commute stay right),
// and the result to the root if it is not that leader.
func hierReduce[T any](c *ranks.Comm, h *hier, send, recv []T, op Op[T], root int) error {
	const name = "Reduce"
	st, _, err := start[T](c, name, root)
	if err != nil {
		return err
	}
	if op == nil {
		return errf(ranks.ErrArg, name, "nil op")
	}
	me := c.Rank()
	mine := send
	if mine == nil && me == root {
		mine = recv
	}
	if me == root && len(recv) < len(mine) {
		return errf(ranks.ErrBuffer, name, "receive buffer shorter than the contribution")
	}
	m := len(mine)
	part := make([]T, m)
	if err := reduce(h.local, mine, part, op, 0); err != nil {
		return err
	}
	to := h.nodeOf(root)
	switch {
	case h.me < 0:
		if me != root {
			return nil
		}
	case h.me != to:
		return st.fail(st.spanSend(bytesOf(part), h.leaders[to]), name)
	default:
		n := len(h.leaders)
		parts := make([]T, n*m)
		copy(parts[to*m:], part)
		into := func(i int) []byte { return bytesOf(parts[i*m : (i+1)*m]) }
		if err := fromLeaders(st, h, to, into, false, nil, name); err != nil {
			return err
		}
		combine(part, parts, m, n, op)
		if me == root {
			copy(recv, part)
			return nil
		}
		return st.fail(st.spanSend(bytesOf(part), root), name)
	}
	// The root, on the node of leader to, not that leader.
	return st.fail(st.spanRecv(bytesOf(recv[:m]), h.leaders[to], name), name)
}

// block is node i's block of ranks: its first and how many (size: the
// communicator's).
func (h *hier) block(i, size int) (first, n int) {
	end := size
	if i+1 < len(h.leaders) {
		end = h.leaders[i+1]
	}
	return h.leaders[i], end - h.leaders[i]
}

// hierGather: Gather on each node to its leader, the nodes' blocks (each
// a run of recv, the nodes' ranks being consecutive) sent to the leader
// of the root's node, and the whole to the root if it is not that leader.
func hierGather[T any](c *ranks.Comm, h *hier, send, recv []T, root int) error {
	const name = "Gather"
	st, _, err := start[T](c, name, root)
	if err != nil {
		return err
	}
	me, size := c.Rank(), c.Size()
	m, mine := len(send), send
	if send == nil && me == root {
		m = len(recv) / size
		mine = recv[root*m : (root+1)*m]
	}
	if me == root && len(recv) < size*m {
		return errf(ranks.ErrBuffer, name, "receive buffer shorter than Size() blocks")
	}
	first, count := h.block(h.nodeOf(me), size)
	var nb []T
	if h.me >= 0 {
		nb = make([]T, count*m)
	}
	if err := gather(h.local, mine, nb, 0); err != nil {
		return err
	}
	to := h.nodeOf(root)
	switch {
	case h.me < 0 && me != root:
		return nil
	case h.me < 0: // the root, not its node's leader
		return st.fail(st.spanRecv(bytesOf(recv[:size*m]), h.leaders[to], name), name)
	case h.me != to:
		return st.fail(st.spanSend(bytesOf(nb), h.leaders[to]), name)
	}
	all := recv
	if me != root {
		all = make([]T, size*m)
	}
	copy(all[first*m:], nb)
	into := func(i int) []byte {
		f, k := h.block(i, size)
		return bytesOf(all[f*m : (f+k)*m])
	}
	if err := fromLeaders(st, h, to, into, false, nil, name); err != nil {
		return err
	}
	if me == root {
		return nil
	}
	return st.fail(st.spanSend(bytesOf(all), root), name)
}

// hierAllgather: Gather on each node into its run of recv at the leader,
// the leaders' one-hop exchange of their nodes' runs, and Bcast on each
// node of the whole.
func hierAllgather[T any](c *ranks.Comm, h *hier, send, recv []T) error {
	const name = "Allgather"
	st, _, err := start[T](c, name, noRoot)
	if err != nil {
		return err
	}
	me, size := c.Rank(), c.Size()
	m := len(send)
	if send == nil {
		m = len(recv) / size
		send = recv[me*m : (me+1)*m]
	}
	if len(recv) < size*m {
		return errf(ranks.ErrBuffer, name, "receive buffer shorter than Size() blocks")
	}
	node := h.nodeOf(me)
	first, count := h.block(node, size)
	var nb []T
	if h.me >= 0 {
		nb = recv[first*m : (first+count)*m]
	}
	if err := gather(h.local, send, nb, 0); err != nil {
		return err
	}
	all := recv[:size*m]
	return h.fromLeader(name, bytesOf(all), func() error {
		into := func(i int) []byte {
			f, k := h.block(i, size)
			return bytesOf(all[f*m : (f+k)*m])
		}
		return fromLeaders(st, h, node, into, true, bytesOf(nb), name)
	})
}

// leadersBcast sends the leader from's b to every other leader.
func leadersBcast(st *state, h *hier, b []byte, from int, name string) error {
	n := len(h.leaders)
	if len(b) <= leadersExchangeMax {
		if h.me != from {
			if err := st.spanRecv(b, h.leaders[from], name); err != nil {
				return st.fail(err, name)
			}
			return nil
		}
		reqs := make([]*ranks.Request, 0, n-1)
		for i, l := range h.leaders {
			if i == from {
				continue
			}
			q, err := ranks.Isend(st.cc, b, l, st.tag())
			if err != nil {
				return st.fail(err, name)
			}
			reqs = append(reqs, q)
		}
		if err := ranks.WaitAll(reqs, nil); err != nil {
			return st.fail(err, name)
		}
		return nil
	}
	rel := (h.me - from + n) % n
	leader := func(rel int) int { return h.leaders[(rel+from)%n] }
	mask := 1
	for mask < n {
		if rel&mask != 0 {
			if err := st.spanRecv(b, leader(rel-mask), name); err != nil {
				return st.fail(err, name)
			}
			break
		}
		mask <<= 1
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if rel+mask < n {
			if err := st.spanSend(b, leader(rel+mask)); err != nil {
				return st.fail(err, name)
			}
		}
	}
	return nil
}

// leadersExchangeMax is the largest partial result the leaders exchange
// all at once rather than by the binomial trees: between nodes each hop
// crosses two agents, so for small data one hop (each leader sending n-1
// messages) beats the trees' 2·log2(n) sequential hops (docs/nodes.md).
const leadersExchangeMax = 16 << 10

// leadersAllreduce combines the leaders' partial results in acc, in
// order, at every leader, by messages on the communicator's twin.
func leadersAllreduce[T any](st *state, h *hier, acc []T, op Op[T], name string) error {
	n, r := len(h.leaders), h.me
	if b := len(bytesOf(acc)); n > 2 && b <= leadersExchangeMax {
		return leadersExchange(st, h, acc, op, name)
	}
	got := make([]T, len(acc))
	for mask := 1; mask < n; mask <<= 1 {
		if r&mask != 0 {
			if err := st.spanSend(bytesOf(acc), h.leaders[r-mask]); err != nil {
				return st.fail(err, name)
			}
			break
		}
		if r+mask < n {
			if err := st.spanRecv(bytesOf(got), h.leaders[r+mask], name); err != nil {
				return st.fail(err, name)
			}
			op(acc, got)
		}
	}
	// Binomial broadcast from leader 0.
	mask := 1
	for mask < n {
		if r&mask != 0 {
			if err := st.spanRecv(bytesOf(acc), h.leaders[r-mask], name); err != nil {
				return st.fail(err, name)
			}
			break
		}
		mask <<= 1
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if r+mask < n {
			if err := st.spanSend(bytesOf(acc), h.leaders[r+mask]); err != nil {
				return st.fail(err, name)
			}
		}
	}
	return nil
}

// leadersExchange: every leader sends its partial result to every other
// one, and each combines all of them in leader order, so every leader
// gets the same result (the order also keeps operations that do not
// commute right).
func leadersExchange[T any](st *state, h *hier, acc []T, op Op[T], name string) error {
	n, me, m := len(h.leaders), h.me, len(acc)
	parts := make([]T, n*m)
	copy(parts[me*m:], acc)
	into := func(i int) []byte { return bytesOf(parts[i*m : (i+1)*m]) }
	if err := fromLeaders(st, h, me, into, true, bytesOf(acc), name); err != nil {
		return err
	}
	combine(acc, parts, m, n, op)
	return nil
}

// fromLeaders receives from every leader but skip into into(i), sending
// out to each of them too if exchange, and waits for all of it.
func fromLeaders(st *state, h *hier, skip int, into func(i int) []byte, exchange bool, out []byte, name string) error {
	reqs := make([]*ranks.Request, 0, 2*len(h.leaders))
	for i, l := range h.leaders {
		if i == skip {
			continue
		}
		q, err := ranks.Irecv(st.cc, into(i), l, st.tag())
		if err != nil {
			return st.fail(err, name)
		}
		reqs = append(reqs, q)
		if exchange {
			if q, err = ranks.Isend(st.cc, out, l, st.tag()); err != nil {
				return st.fail(err, name)
			}
			reqs = append(reqs, q)
		}
	}
	return st.fail(ranks.WaitAll(reqs, nil), name)
}

// combine folds the n parts of m elements each in parts into acc, in
// order.
func combine[T any](acc, parts []T, m, n int, op Op[T]) {
	copy(acc, parts[:m])
	for i := 1; i < n; i++ {
		op(acc, parts[i*m:(i+1)*m])
	}
}
