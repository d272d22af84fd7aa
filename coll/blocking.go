package coll

import "github.com/shmpi/shmpi/ranks"

// The blocking collectives. Each runs at once, or after the nonblocking
// collectives this rank started before on the same communicator (ordered).

// Barrier blocks until every member of c has called it.
func Barrier(c *ranks.Comm) error {
	if idle(c) {
		return barrier(c)
	}
	return ordered(c, func() error { return barrier(c) })
}

// Bcast copies root's buf into buf at every member.
func Bcast[T any](c *ranks.Comm, buf []T, root int) error {
	if idle(c) {
		return bcast[T](c, buf, root)
	}
	return ordered(c, func() error { return bcast[T](c, buf, root) })
}

// Reduce combines every member's send with op, in rank order, into recv
// at root (recv is ignored elsewhere). At root, a nil send means in
// place: recv holds root's contribution.
func Reduce[T any](c *ranks.Comm, send, recv []T, op Op[T], root int) error {
	if idle(c) {
		return reduce[T](c, send, recv, op, root)
	}
	return ordered(c, func() error { return reduce[T](c, send, recv, op, root) })
}

// Allreduce combines every member's send with op, in rank order, into
// recv at every member. A nil send means in place.
func Allreduce[T any](c *ranks.Comm, send, recv []T, op Op[T]) error {
	if idle(c) {
		return allreduce[T](c, send, recv, op)
	}
	return ordered(c, func() error { return allreduce[T](c, send, recv, op) })
}

// Gather collects every member's send, in rank order, into recv at root
// (len(send) elements each; recv needs Size()*len(send)). At root, a nil
// send means in place: root's block is already in recv.
func Gather[T any](c *ranks.Comm, send, recv []T, root int) error {
	if idle(c) {
		return gather[T](c, send, recv, root)
	}
	return ordered(c, func() error { return gather[T](c, send, recv, root) })
}

// Gatherv collects counts[r] elements from member r into recv at
// displs[r], at root (counts and displs matter at root only). A nil send
// at root means in place.
func Gatherv[T any](c *ranks.Comm, send, recv []T, counts, displs []int, root int) error {
	if idle(c) {
		return gatherv[T](c, send, recv, counts, displs, root)
	}
	return ordered(c, func() error { return gatherv[T](c, send, recv, counts, displs, root) })
}

// Scatter sends block r of root's send (len(recv) elements each) to
// member r's recv. At root, a nil recv means in place.
func Scatter[T any](c *ranks.Comm, send, recv []T, root int) error {
	if idle(c) {
		return scatter[T](c, send, recv, root)
	}
	return ordered(c, func() error { return scatter[T](c, send, recv, root) })
}

// Scatterv sends counts[r] elements of root's send from displs[r] to
// member r (counts and displs matter at root only). At root, a nil recv
// means in place.
func Scatterv[T any](c *ranks.Comm, send []T, counts, displs []int, recv []T, root int) error {
	if idle(c) {
		return scatterv[T](c, send, counts, displs, recv, root)
	}
	return ordered(c, func() error { return scatterv[T](c, send, counts, displs, recv, root) })
}

// Allgather collects every member's send (len(send) elements each) into
// recv at every member, in rank order. A nil send means in place: this
// member's block is already in recv.
func Allgather[T any](c *ranks.Comm, send, recv []T) error {
	if idle(c) {
		return allgather[T](c, send, recv)
	}
	return ordered(c, func() error { return allgather[T](c, send, recv) })
}

// Allgatherv collects counts[r] elements from member r into recv at
// displs[r], at every member. A nil send means in place.
func Allgatherv[T any](c *ranks.Comm, send, recv []T, counts, displs []int) error {
	if idle(c) {
		return allgatherv[T](c, send, recv, counts, displs)
	}
	return ordered(c, func() error { return allgatherv[T](c, send, recv, counts, displs) })
}

// Alltoall sends block r of send to member r, and receives member r's
// block for this member into block r of recv (blocks of len(send)/Size()
// elements). A nil send means in place.
func Alltoall[T any](c *ranks.Comm, send, recv []T) error {
	if idle(c) {
		return alltoall[T](c, send, recv)
	}
	return ordered(c, func() error { return alltoall[T](c, send, recv) })
}

// Alltoallv sends scounts[r] elements of send from sdispls[r] to member
// r, and receives rcounts[r] elements from member r into recv at
// rdispls[r].
func Alltoallv[T any](c *ranks.Comm, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) error {
	if idle(c) {
		return alltoallv[T](c, send, scounts, sdispls, recv, rcounts, rdispls)
	}
	return ordered(c, func() error { return alltoallv[T](c, send, scounts, sdispls, recv, rcounts, rdispls) })
}

// ReduceScatterBlock reduces every member's send (Size() blocks of
// len(recv) elements) with op, in rank order, and leaves block r of the
// result in member r's recv. A nil send means in place: the input is in
// recv, which must then hold Size() blocks; the result is its first.
func ReduceScatterBlock[T any](c *ranks.Comm, send, recv []T, op Op[T]) error {
	if idle(c) {
		return reduceScatterBlock[T](c, send, recv, op)
	}
	return ordered(c, func() error { return reduceScatterBlock[T](c, send, recv, op) })
}

// ReduceScatter reduces every member's send (sum of counts elements) with
// op, in rank order, and leaves the counts[r] elements from offset
// counts[0]+...+counts[r-1] of the result in member r's recv. A nil send
// means in place (the input in recv; the result at its start).
func ReduceScatter[T any](c *ranks.Comm, send, recv []T, counts []int, op Op[T]) error {
	if idle(c) {
		return reduceScatter[T](c, send, recv, counts, op)
	}
	return ordered(c, func() error { return reduceScatter[T](c, send, recv, counts, op) })
}

// Scan leaves in member r's recv the reduction, in rank order, of the
// send of members 0..r. A nil send means in place.
func Scan[T any](c *ranks.Comm, send, recv []T, op Op[T]) error {
	if idle(c) {
		return scan[T](c, send, recv, op)
	}
	return ordered(c, func() error { return scan[T](c, send, recv, op) })
}

// Exscan leaves in member r's recv the reduction of the send of members
// 0..r-1; member 0's recv is left as it is. A nil send means in place.
func Exscan[T any](c *ranks.Comm, send, recv []T, op Op[T]) error {
	if idle(c) {
		return exscan[T](c, send, recv, op)
	}
	return ordered(c, func() error { return exscan[T](c, send, recv, op) })
}

// Alltoallw sends send[r] to member r and receives member r's block for
// this member into recv[r] (MPI_Alltoallw): blocks of any size, each
// pair of members agreeing on theirs (a block of another size than its
// receive buffer is ErrCount). Types differ per peer in MPI; here
// blocks are bytes (ranks' element views, or a packed datatype).
func Alltoallw(c *ranks.Comm, send, recv [][]byte) error {
	if idle(c) {
		return alltoallw(c, send, recv)
	}
	return ordered(c, func() error { return alltoallw(c, send, recv) })
}

// ReduceLocal combines in into inout with op, locally (MPI_Reduce_local):
// inout[i] = in[i] op inout[i], in that order, so an op need not commute.
func ReduceLocal[T any](in, inout []T, op Op[T]) error {
	const name = "ReduceLocal"
	if _, err := ranks.ElemSize[T](); err != nil {
		return relabel(err, name)
	}
	switch {
	case op == nil:
		return errf(ranks.ErrArg, name, "nil op")
	case len(in) != len(inout):
		return errf(ranks.ErrBuffer, name, "in and inout differ in length")
	}
	acc := append([]T(nil), in...)
	op(acc, inout)
	copy(inout, acc)
	return nil
}
