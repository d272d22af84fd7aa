package coll

import (
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Persistent collectives (MPI 4.0 §6.13). Each …Init call returns an
// inactive persistent *ranks.Request; every ranks Start (or StartAll)
// runs the collective once more with the arguments given at Init, and
// Wait or Test completes that run, as for a nonblocking collective. Init
// is local (it communicates nothing), and, as for nonblocking
// collectives, every member must make its Init calls, and then its
// Starts, in the same order on a communicator. Free the request when it
// is no longer needed (it must be inactive).
//
// What Init does once, so that a Start costs less than a fresh
// nonblocking call: it checks the element type, the root and the op, and
// makes the run's closure and its request; a Start only queues the
// prepared run, allocating nothing. Large reductions map their shared
// area at the first run and keep it (big.go).

// persistent makes the persistent collective op on c, whose every run
// calls run on the communicator's collective queue (nonblocking.go), in
// order with the communicator's other collectives.
func persistent(c *ranks.Comm, op string, run func() error) (*ranks.Request, error) {
	st := stateOf(c)
	if st == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil or foreign communicator"}
	}
	if st.freed.Load() {
		return nil, freedErr(op)
	}
	var complete func(error)
	var n uint64 // the queued run's number
	job := func() { complete(relabel(run(), op)) }
	req := ext.NewPersistent(c, op, func(done func(error)) {
		complete = done // the same function every time; set before the job is queued
		n = st.enqueue(job)
	})
	ext.SetHelp(req, func() { st.help(n) })
	return req.(*ranks.Request), nil
}

// initCheck does the checks a persistent collective can do at Init: a
// plain element type, a root in range, an op.
func initCheck[T any](c *ranks.Comm, op string, root int, hasOp bool) error {
	if c == nil {
		return &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil communicator"}
	}
	if _, err := ranks.ElemSize[T](); err != nil {
		return relabel(err, op)
	}
	switch {
	case root == noRoot:
	case c.IsInter():
		if root != ranks.Root && root != ranks.ProcNull && (root < 0 || root >= c.RemoteSize()) {
			return &ranks.Error{Class: ranks.ErrRank, Op: op, Rank: -1, Detail: "root out of range"}
		}
	case root < 0 || root >= c.Size():
		return &ranks.Error{Class: ranks.ErrRank, Op: op, Rank: -1, Detail: "root out of range"}
	}
	if !hasOp {
		return errf(ranks.ErrArg, op, "nil op")
	}
	return nil
}

// BarrierInit is the persistent Barrier (MPI_Barrier_init).
func BarrierInit(c *ranks.Comm) (*ranks.Request, error) {
	if err := initCheck[byte](c, "BarrierInit", noRoot, true); err != nil {
		return nil, err
	}
	return persistent(c, "BarrierInit", func() error { return barrier(c) })
}

// BcastInit is the persistent Bcast (MPI_Bcast_init).
func BcastInit[T any](c *ranks.Comm, buf []T, root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "BcastInit", root, true); err != nil {
		return nil, err
	}
	return persistent(c, "BcastInit", func() error { return bcast(c, buf, root) })
}

// ReduceInit is the persistent Reduce (MPI_Reduce_init).
func ReduceInit[T any](c *ranks.Comm, send, recv []T, op Op[T], root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "ReduceInit", root, op != nil); err != nil {
		return nil, err
	}
	return persistent(c, "ReduceInit", func() error { return reduce(c, send, recv, op, root) })
}

// AllreduceInit is the persistent Allreduce (MPI_Allreduce_init).
func AllreduceInit[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	if err := initCheck[T](c, "AllreduceInit", noRoot, op != nil); err != nil {
		return nil, err
	}
	if send != nil && len(send) != len(recv) {
		return nil, errf(ranks.ErrBuffer, "AllreduceInit", "send and receive buffers differ in length")
	}
	return persistent(c, "AllreduceInit", func() error { return allreduce(c, send, recv, op) })
}

// GatherInit is the persistent Gather (MPI_Gather_init).
func GatherInit[T any](c *ranks.Comm, send, recv []T, root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "GatherInit", root, true); err != nil {
		return nil, err
	}
	return persistent(c, "GatherInit", func() error { return gather(c, send, recv, root) })
}

// GathervInit is the persistent Gatherv (MPI_Gatherv_init).
func GathervInit[T any](c *ranks.Comm, send, recv []T, counts, displs []int, root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "GathervInit", root, true); err != nil {
		return nil, err
	}
	return persistent(c, "GathervInit", func() error { return gatherv(c, send, recv, counts, displs, root) })
}

// ScatterInit is the persistent Scatter (MPI_Scatter_init).
func ScatterInit[T any](c *ranks.Comm, send, recv []T, root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "ScatterInit", root, true); err != nil {
		return nil, err
	}
	return persistent(c, "ScatterInit", func() error { return scatter(c, send, recv, root) })
}

// ScattervInit is the persistent Scatterv (MPI_Scatterv_init).
func ScattervInit[T any](c *ranks.Comm, send []T, counts, displs []int, recv []T, root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "ScattervInit", root, true); err != nil {
		return nil, err
	}
	return persistent(c, "ScattervInit", func() error { return scatterv(c, send, counts, displs, recv, root) })
}

// AllgatherInit is the persistent Allgather (MPI_Allgather_init).
func AllgatherInit[T any](c *ranks.Comm, send, recv []T) (*ranks.Request, error) {
	if err := initCheck[T](c, "AllgatherInit", noRoot, true); err != nil {
		return nil, err
	}
	return persistent(c, "AllgatherInit", func() error { return allgather(c, send, recv) })
}

// AllgathervInit is the persistent Allgatherv (MPI_Allgatherv_init).
func AllgathervInit[T any](c *ranks.Comm, send, recv []T, counts, displs []int) (*ranks.Request, error) {
	if err := initCheck[T](c, "AllgathervInit", noRoot, true); err != nil {
		return nil, err
	}
	return persistent(c, "AllgathervInit", func() error { return allgatherv(c, send, recv, counts, displs) })
}

// AlltoallInit is the persistent Alltoall (MPI_Alltoall_init).
func AlltoallInit[T any](c *ranks.Comm, send, recv []T) (*ranks.Request, error) {
	if err := initCheck[T](c, "AlltoallInit", noRoot, true); err != nil {
		return nil, err
	}
	return persistent(c, "AlltoallInit", func() error { return alltoall(c, send, recv) })
}

// AlltoallvInit is the persistent Alltoallv (MPI_Alltoallv_init).
func AlltoallvInit[T any](c *ranks.Comm, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) (*ranks.Request, error) {
	if err := initCheck[T](c, "AlltoallvInit", noRoot, true); err != nil {
		return nil, err
	}
	return persistent(c, "AlltoallvInit", func() error { return alltoallv(c, send, scounts, sdispls, recv, rcounts, rdispls) })
}

// AlltoallwInit is the persistent Alltoallw (MPI_Alltoallw_init).
func AlltoallwInit(c *ranks.Comm, send, recv [][]byte) (*ranks.Request, error) {
	if err := initCheck[byte](c, "AlltoallwInit", noRoot, true); err != nil {
		return nil, err
	}
	return persistent(c, "AlltoallwInit", func() error { return alltoallw(c, send, recv) })
}

// ReduceScatterInit is the persistent ReduceScatter (MPI_Reduce_scatter_init).
func ReduceScatterInit[T any](c *ranks.Comm, send, recv []T, counts []int, op Op[T]) (*ranks.Request, error) {
	if err := initCheck[T](c, "ReduceScatterInit", noRoot, op != nil); err != nil {
		return nil, err
	}
	return persistent(c, "ReduceScatterInit", func() error { return reduceScatter(c, send, recv, counts, op) })
}

// ReduceScatterBlockInit is the persistent ReduceScatterBlock
// (MPI_Reduce_scatter_block_init).
func ReduceScatterBlockInit[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	if err := initCheck[T](c, "ReduceScatterBlockInit", noRoot, op != nil); err != nil {
		return nil, err
	}
	return persistent(c, "ReduceScatterBlockInit", func() error { return reduceScatterBlock(c, send, recv, op) })
}

// ScanInit is the persistent Scan (MPI_Scan_init).
func ScanInit[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	if err := initCheck[T](c, "ScanInit", noRoot, op != nil); err != nil {
		return nil, err
	}
	return persistent(c, "ScanInit", func() error { return scan(c, send, recv, op) })
}

// ExscanInit is the persistent Exscan (MPI_Exscan_init).
func ExscanInit[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	if err := initCheck[T](c, "ExscanInit", noRoot, op != nil); err != nil {
		return nil, err
	}
	return persistent(c, "ExscanInit", func() error { return exscan(c, send, recv, op) })
}
