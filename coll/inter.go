package coll

import (
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Collectives on intercommunicators (MPI 4.0 §6.2.2). The data moves
// between the two groups: a Bcast's root in one group sends to every
// member of the other; an Allreduce gives each group the reduction of the
// other's contributions. Each is built from the collectives of the local
// group's intracommunicator (ext.Inter: a communicator of its own, with
// its lines in shared memory) and point-to-point messages on the
// intercommunicator's collective twin, addressed to the remote group:
//
//   - Barrier, and an Allreduce of at most unionMax bytes gathered, run
//     on an internal intracommunicator of both groups (ext.InterUnion),
//     one shared-memory collective: the path below cost 3-9 times the
//     intracommunicator's figure (benchmarks/inter_coll);
//   - larger reductions and Allgather meet within each group, the two
//     leaders (local rank 0) swap what their groups made, and each leader
//     hands the other group's result to its own (Bcast, Scatter);
//   - rooted data (Gather, Scatter) and the all-to-all patterns go
//     straight between the members concerned.
//
// A rooted collective takes ranks.Root at the root, ranks.ProcNull at the
// other members of the root's group, and the root's rank (in the other
// group) at the members of the other group.
//
// Failures: a failed member of either group fails every later collective
// (ext.Check covers both groups), and the collective twin refuses
// collective traffic once a member failed, so no member waits for a peer
// of the other group that left. A leader whose exchange with the other
// group failed still hands its group the last local phase, marked with
// its error (argErr), so its group's members do not wait for it either.
// MPI_IN_PLACE does not exist for intercommunicators: a nil send buffer
// is ErrArg.

// interState is an intercommunicator's collective state.
type interState struct {
	lc    *ranks.Comm // the local group's intracommunicator
	rsize int         // the remote group's size
	union *ranks.Comm // both groups' intracommunicator, once unionOf made it
	// scratch holds an Allreduce's gathered contributions on the union
	// path (unionMax bytes, made at the first): one goroutine at a time
	// runs a communicator's collectives (nonblocking.go).
	scratch []byte
}

// interOf makes the collective state of intercommunicator c, or returns
// nil for an intracommunicator.
func interOf(c *ranks.Comm) *state {
	lc, rsize, ok := ext.Inter(c)
	if !ok {
		return nil
	}
	return &state{c: c, cc: ext.CollOf(c).(*ranks.Comm), size: c.Size(), rank: c.Rank(),
		ic: &interState{lc: lc.(*ranks.Comm), rsize: rsize}}
}

func errNotInter(op string) error {
	return &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "not defined on an intercommunicator"}
}

func errInPlace(op string) error {
	return errf(ranks.ErrArg, op, "MPI_IN_PLACE (a nil send buffer) on an intercommunicator")
}

// interRoot checks a rooted collective's root on an intercommunicator.
func (st *state) interRoot(op string, root int) error {
	if root == ranks.Root || root == ranks.ProcNull || root >= 0 && root < st.ic.rsize {
		return nil
	}
	return &ranks.Error{Class: ranks.ErrRank, Op: op, Rank: -1, Detail: "root of an intercommunicator collective out of range"}
}

// interExchange posts, for every remote member r, a receive into from(r)
// and a send of to(r) (nil funcs: none of that kind) on the collective
// twin, and waits for them all; a block of another size is ErrCount.
func interExchange[T any](st *state, from, to func(r int) []T, name string) error {
	rs := make([]*ranks.Request, 0, 2*st.ic.rsize)
	if err := postTransfers(st, st.ic.rsize, -1, from, to, &rs, name); err != nil {
		return err
	}
	var ferr error
	for i, q := range rs {
		s, err := q.Wait()
		if err == nil && from != nil && i < st.ic.rsize && s.Bytes != len(bytesOf(from(i))) {
			err = &ranks.Error{Class: ranks.ErrCount, Op: name, Rank: i, Detail: "a member sent a block of another size"}
		}
		if err != nil && ferr == nil {
			ferr = err
		}
	}
	return ferr
}

// leaderSwap has the leaders swap mine for the other group's result (into
// got), then every member of the local group gets got from its leader
// (bcastErr, which also carries the leader's error to them).
func leaderSwap[T any](st *state, mine, got []T, name string) error {
	var err error
	if st.rank == 0 {
		var s ranks.Status
		s, err = ranks.Sendrecv(st.cc, mine, 0, st.tag(), got, 0, st.tag())
		if err == nil && s.Bytes != len(bytesOf(got)) {
			err = &ranks.Error{Class: ranks.ErrCount, Op: name, Rank: 0, Detail: "the other group's result has another size"}
		}
		if err != nil {
			err = st.fail(err, name)
		}
	}
	if berr := bcastErr(st.ic.lc, got, 0, err); berr != nil {
		return relabel(berr, name)
	}
	return err
}

// unionMax bounds the bytes an Allreduce gathers over the union of both
// groups (every member's contribution); larger ones reduce in each group
// and swap between the leaders.
const unionMax = 4096

// unionOf returns the intracommunicator of both groups (ext.InterUnion,
// the low group first), made at the first Barrier or small Allreduce:
// there those run as one shared-memory collective, not as two local
// phases and the leaders' point-to-point exchange.
func unionOf(st *state, name string) (*ranks.Comm, error) {
	if st.ic.union != nil {
		return st.ic.union, nil
	}
	u, err := ext.InterUnion(st.c)
	if err != nil {
		return nil, interErr(st, err, name)
	}
	st.ic.union = u.(*ranks.Comm)
	return st.ic.union, nil
}

// interErr reports err of an operation on the union as the
// intercommunicator's: its failure or revoke if it has one.
func interErr(st *state, err error, name string) error {
	if err == nil {
		return nil
	}
	if cerr := ext.Check(st.c, name); cerr != nil {
		return cerr
	}
	return relabel(err, name)
}

func interBarrier(st *state) error {
	const name = "Barrier"
	u, err := unionOf(st, name)
	if err != nil {
		return err
	}
	return interErr(st, barrier(u), name)
}

func interBcast[T any](st *state, buf []T, root int, name string) error {
	switch {
	case root == ranks.Root:
		return st.fail(ranks.Send(st.cc, buf, 0, st.tag()), name)
	case root == ranks.ProcNull:
		return nil
	}
	var err error
	if st.rank == 0 {
		err = recvExact(st, buf, root, name)
		if err != nil {
			err = st.fail(err, name)
		}
	}
	if berr := bcastErr(st.ic.lc, buf, 0, err); berr != nil && err == nil {
		return relabel(berr, name)
	}
	return err
}

func interReduce[T any](st *state, send, recv []T, op Op[T], root int, name string) error {
	switch {
	case root == ranks.Root:
		return st.fail(recvExact(st, recv, 0, name), name)
	case root == ranks.ProcNull:
		return nil
	case send == nil:
		return errInPlace(name)
	}
	acc := make([]T, len(send))
	if err := reduce(st.ic.lc, send, acc, op, 0); err != nil {
		return relabel(err, name)
	}
	if st.rank != 0 {
		return nil
	}
	return st.fail(ranks.Send(st.cc, acc, root, st.tag()), name)
}

func interAllreduce[T any](st *state, send, recv []T, op Op[T], name string) error {
	if send == nil {
		return errInPlace(name)
	}
	usize := st.size + st.ic.rsize
	if len(recv) == len(send) && len(bytesOf(send))*usize <= unionMax {
		// Gather every contribution over the union and reduce the other
		// group's, in its rank order.
		u, err := unionOf(st, name)
		if err != nil {
			return err
		}
		n := len(send)
		if st.ic.scratch == nil {
			st.ic.scratch = make([]byte, unionMax)
		}
		// The package moves T as plain bytes (bytesOf), so a T is data
		// without pointers; the scratch is 8-byte aligned.
		all := unsafe.Slice((*T)(unsafe.Pointer(&st.ic.scratch[0])), n*usize)
		if err := allgather(u, send, all); err != nil {
			return interErr(st, err, name)
		}
		// The other group's first position in the union: after ours if
		// ours is the low group (then our union ranks are our ranks).
		first := 0
		if u.Rank() == st.rank {
			first = st.size
		}
		copy(recv, all[first*n:(first+1)*n])
		for r := first + 1; r < first+st.ic.rsize; r++ {
			op(recv, all[r*n:(r+1)*n])
		}
		return nil
	}
	acc := make([]T, len(send))
	if err := reduce(st.ic.lc, send, acc, op, 0); err != nil {
		return relabel(err, name)
	}
	return leaderSwap(st, acc, recv, name)
}

func interGatherv[T any](st *state, send, recv []T, counts, displs []int, root int, name string) error {
	switch {
	case root == ranks.Root:
		if counts == nil {
			m := len(recv) / max(st.ic.rsize, 1)
			counts, displs = make([]int, st.ic.rsize), make([]int, st.ic.rsize)
			for r := range counts {
				counts[r], displs[r] = m, r*m
			}
		}
		if err := checkV(name, st.ic.rsize, counts, displs, len(recv)); err != nil {
			return err
		}
		return st.fail(interExchange(st, func(r int) []T { return recv[displs[r] : displs[r]+counts[r]] }, nil, name), name)
	case root == ranks.ProcNull:
		return nil
	}
	return st.fail(ranks.Send(st.cc, send, root, st.tag()), name)
}

func interScatterv[T any](st *state, send []T, counts, displs []int, recv []T, root int, exact bool, name string) error {
	switch {
	case root == ranks.Root:
		if counts == nil {
			m := len(send) / max(st.ic.rsize, 1)
			counts, displs = make([]int, st.ic.rsize), make([]int, st.ic.rsize)
			for r := range counts {
				counts[r], displs[r] = m, r*m
			}
		}
		if err := checkV(name, st.ic.rsize, counts, displs, len(send)); err != nil {
			return err
		}
		return st.fail(interExchange(st, nil, func(r int) []T { return send[displs[r] : displs[r]+counts[r]] }, name), name)
	case root == ranks.ProcNull:
		return nil
	}
	if exact {
		return st.fail(recvExact(st, recv, root, name), name)
	}
	s, err := ranks.Recv(st.cc, recv, root, st.tag())
	if err == nil && s.Bytes > len(bytesOf(recv)) {
		err = errf(ranks.ErrTruncate, name, "block longer than the receive buffer")
	}
	return st.fail(err, name)
}

// interAllgatherv: every member sends its block to each member of the
// other group and receives each one's block.
func interAllgatherv[T any](st *state, send, recv []T, counts, displs []int, name string) error {
	if send == nil {
		return errInPlace(name)
	}
	if counts == nil {
		m := len(recv) / max(st.ic.rsize, 1)
		counts, displs = make([]int, st.ic.rsize), make([]int, st.ic.rsize)
		for r := range counts {
			counts[r], displs[r] = m, r*m
		}
	}
	if err := checkV(name, st.ic.rsize, counts, displs, len(recv)); err != nil {
		return err
	}
	return st.fail(interExchange(st, func(r int) []T { return recv[displs[r] : displs[r]+counts[r]] },
		func(int) []T { return send }, name), name)
}

func interAlltoallv[T any](st *state, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int, name string) error {
	if send == nil {
		return errInPlace(name)
	}
	n := st.ic.rsize
	if scounts == nil {
		// The blocks of the two buffers may differ: what this group
		// sends is what the other receives (an empty direction too).
		if len(send)%max(n, 1) != 0 || len(recv)%max(n, 1) != 0 {
			return errf(ranks.ErrBuffer, name, "buffers must each be RemoteSize() equal blocks")
		}
		ms, mr := len(send)/max(n, 1), len(recv)/max(n, 1)
		scounts, sdispls = make([]int, n), make([]int, n)
		rcounts, rdispls = make([]int, n), make([]int, n)
		for r := range scounts {
			scounts[r], sdispls[r] = ms, r*ms
			rcounts[r], rdispls[r] = mr, r*mr
		}
	}
	if err := checkV(name, n, scounts, sdispls, len(send)); err != nil {
		return err
	}
	if err := checkV(name, n, rcounts, rdispls, len(recv)); err != nil {
		return err
	}
	return st.fail(interExchange(st, func(r int) []T { return recv[rdispls[r] : rdispls[r]+rcounts[r]] },
		func(r int) []T { return send[sdispls[r] : sdispls[r]+scounts[r]] }, name), name)
}

// interReduceScatter: each group reduces its contributions (as long as
// the other group's results together) at its leader; the leaders swap
// the reductions; each leader scatters the other group's reduction over
// its group by counts (counts of the local group).
func interReduceScatter[T any](st *state, send, recv []T, counts []int, op Op[T], name string) error {
	if send == nil {
		return errInPlace(name)
	}
	if len(counts) < st.size {
		return errf(ranks.ErrCount, name, "fewer counts than members of the local group")
	}
	displs := make([]int, st.size)
	total := 0
	for r := range st.size {
		if counts[r] < 0 {
			return errf(ranks.ErrCount, name, "negative count")
		}
		displs[r] = total
		total += counts[r]
	}
	acc := make([]T, len(send))
	if err := reduce(st.ic.lc, send, acc, op, 0); err != nil {
		return relabel(err, name)
	}
	var got []T
	var err error
	if st.rank == 0 {
		got = make([]T, total)
		var s ranks.Status
		s, err = ranks.Sendrecv(st.cc, acc, 0, st.tag(), got, 0, st.tag())
		if err == nil && s.Bytes != len(bytesOf(got)) {
			err = &ranks.Error{Class: ranks.ErrCount, Op: name, Rank: 0, Detail: "the other group's reduction has another size than the counts' total"}
		}
		if err != nil {
			err = st.fail(err, name)
		}
	}
	// The leader's error travels as a marked broadcast of nothing, then
	// the blocks go out.
	if berr := bcastErr[byte](st.ic.lc, nil, 0, err); berr != nil {
		if err == nil {
			err = relabel(berr, name)
		}
		return err
	}
	return relabel(scatterv(st.ic.lc, got, counts[:st.size], displs, recv[:counts[st.rank]], 0), name)
}
