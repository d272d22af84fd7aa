package coll

import (
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Persistent collectives (MPI 4.0 §6.13). Each …Init call returns an
// inactive persistent *ranks.Request; every ranks Start (or StartAll)
// runs the collective once more with the arguments given at Init, and
// Wait or Test completes that run, as for a nonblocking collective. Every
// member makes its Init calls on a communicator in the same order, as for
// other collectives; it may then start them in any order (MPI 4.0): the
// runs match by the order of the Init calls. Each persistent collective
// therefore runs on a private duplicate of the communicator, which Init
// makes (a creation: Init synchronizes the members, as MPI 4.0 allows;
// a member whose arguments fail Init's checks still makes it, so that
// the others' Init calls return) and Free gives back
// (ext.PersistentComm). A communicator whose info
// asserts mpi_assert_strict_persistent_collective_ordering ("true") has
// its persistent collectives started in Init order everywhere, so they
// run on it, in order with its other collectives, and Init communicates
// nothing. Free the request when it is no longer needed (it must be
// inactive).
//
// What Init does once, so that a Start costs less than a fresh
// nonblocking call: it checks the element type, the root and the op, and
// makes the run's closure and its request; a Start only queues the
// prepared run, allocating nothing. Large reductions map their shared
// area at the first run and keep it (big.go).

// persistent makes the persistent collective op on c, whose every run
// calls run, with the communicator it runs on, on that communicator's
// collective queue (nonblocking.go).
func persistent(c *ranks.Comm, op string, run func(pc *ranks.Comm) error) (*ranks.Request, error) {
	st := stateOf(c)
	if st == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil or foreign communicator"}
	}
	if st.freed.Load() {
		return nil, freedErr(op)
	}
	p, release, err := ext.PersistentComm(c, op)
	st.inits.Add(1)
	if err != nil {
		return nil, relabel(err, op)
	}
	pc := p.(*ranks.Comm)
	pst := stateOf(pc)
	var complete func(error)
	var n uint64 // the queued run's number
	job := func() { complete(relabel(run(pc), op)) }
	req := ext.NewPersistent(c, op, func(done func(error)) {
		complete = done // the same function every time; set before the job is queued
		n = pst.enqueue(job)
	}, release)
	ext.SetHelp(req, func() { pst.help(n) })
	return req.(*ranks.Request), nil
}

// initErr returns err, the error of a persistent collective's Init that
// failed its checks at this member, after making and giving back the
// duplicate that every member's Init makes (persistent): the other
// members' Init calls then return rather than wait for this one.
func initErr(c *ranks.Comm, err error) (*ranks.Request, error) {
	if st := stateOf(c); st != nil && !st.freed.Load() {
		if _, release, e := ext.PersistentComm(c, "Init"); e == nil && release != nil {
			release()
		}
		st.inits.Add(1)
	}
	return nil, err
}

// InitsOf counts this member's persistent collective Init calls on c
// that took part in the creation every member's Init makes, whether they
// succeeded or failed their checks. A layer above (the C interface) that
// checks arguments of its own compares it before and after a call: if
// the call failed without taking part, it calls InitFailed.
func InitsOf(c *ranks.Comm) uint64 {
	if st := stateOf(c); st != nil {
		return st.inits.Load()
	}
	return 0
}

// InitFailed takes part in the creation of a persistent collective Init
// whose arguments a layer above rejected, as an Init that fails its own
// checks does, so that the other members' Init calls return.
func InitFailed(c *ranks.Comm) { initErr(c, nil) }

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
		return initErr(c, err)
	}
	return persistent(c, "BarrierInit", func(pc *ranks.Comm) error { return barrier(pc) })
}

// BcastInit is the persistent Bcast (MPI_Bcast_init).
func BcastInit[T any](c *ranks.Comm, buf []T, root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "BcastInit", root, true); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "BcastInit", func(pc *ranks.Comm) error { return bcast(pc, buf, root) })
}

// ReduceInit is the persistent Reduce (MPI_Reduce_init).
func ReduceInit[T any](c *ranks.Comm, send, recv []T, op Op[T], root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "ReduceInit", root, op != nil); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "ReduceInit", func(pc *ranks.Comm) error { return reduce(pc, send, recv, op, root) })
}

// AllreduceInit is the persistent Allreduce (MPI_Allreduce_init).
func AllreduceInit[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	if err := initCheck[T](c, "AllreduceInit", noRoot, op != nil); err != nil {
		return initErr(c, err)
	}
	if send != nil && len(send) != len(recv) {
		return initErr(c, errf(ranks.ErrBuffer, "AllreduceInit", "send and receive buffers differ in length"))
	}
	return persistent(c, "AllreduceInit", func(pc *ranks.Comm) error { return allreduce(pc, send, recv, op) })
}

// GatherInit is the persistent Gather (MPI_Gather_init).
func GatherInit[T any](c *ranks.Comm, send, recv []T, root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "GatherInit", root, true); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "GatherInit", func(pc *ranks.Comm) error { return gather(pc, send, recv, root) })
}

// GathervInit is the persistent Gatherv (MPI_Gatherv_init).
func GathervInit[T any](c *ranks.Comm, send, recv []T, counts, displs []int, root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "GathervInit", root, true); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "GathervInit", func(pc *ranks.Comm) error { return gatherv(pc, send, recv, counts, displs, root) })
}

// ScatterInit is the persistent Scatter (MPI_Scatter_init).
func ScatterInit[T any](c *ranks.Comm, send, recv []T, root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "ScatterInit", root, true); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "ScatterInit", func(pc *ranks.Comm) error { return scatter(pc, send, recv, root) })
}

// ScattervInit is the persistent Scatterv (MPI_Scatterv_init).
func ScattervInit[T any](c *ranks.Comm, send []T, counts, displs []int, recv []T, root int) (*ranks.Request, error) {
	if err := initCheck[T](c, "ScattervInit", root, true); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "ScattervInit", func(pc *ranks.Comm) error { return scatterv(pc, send, counts, displs, recv, root) })
}

// AllgatherInit is the persistent Allgather (MPI_Allgather_init).
func AllgatherInit[T any](c *ranks.Comm, send, recv []T) (*ranks.Request, error) {
	if err := initCheck[T](c, "AllgatherInit", noRoot, true); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "AllgatherInit", func(pc *ranks.Comm) error { return allgather(pc, send, recv) })
}

// AllgathervInit is the persistent Allgatherv (MPI_Allgatherv_init).
func AllgathervInit[T any](c *ranks.Comm, send, recv []T, counts, displs []int) (*ranks.Request, error) {
	if err := initCheck[T](c, "AllgathervInit", noRoot, true); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "AllgathervInit", func(pc *ranks.Comm) error { return allgatherv(pc, send, recv, counts, displs) })
}

// AlltoallInit is the persistent Alltoall (MPI_Alltoall_init).
func AlltoallInit[T any](c *ranks.Comm, send, recv []T) (*ranks.Request, error) {
	if err := initCheck[T](c, "AlltoallInit", noRoot, true); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "AlltoallInit", func(pc *ranks.Comm) error { return alltoall(pc, send, recv) })
}

// AlltoallvInit is the persistent Alltoallv (MPI_Alltoallv_init).
func AlltoallvInit[T any](c *ranks.Comm, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) (*ranks.Request, error) {
	if err := initCheck[T](c, "AlltoallvInit", noRoot, true); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "AlltoallvInit", func(pc *ranks.Comm) error { return alltoallv(pc, send, scounts, sdispls, recv, rcounts, rdispls) })
}

// AlltoallwInit is the persistent Alltoallw (MPI_Alltoallw_init).
func AlltoallwInit(c *ranks.Comm, send, recv [][]byte) (*ranks.Request, error) {
	if err := initCheck[byte](c, "AlltoallwInit", noRoot, true); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "AlltoallwInit", func(pc *ranks.Comm) error { return alltoallw(pc, send, recv) })
}

// ReduceScatterInit is the persistent ReduceScatter (MPI_Reduce_scatter_init).
func ReduceScatterInit[T any](c *ranks.Comm, send, recv []T, counts []int, op Op[T]) (*ranks.Request, error) {
	if err := initCheck[T](c, "ReduceScatterInit", noRoot, op != nil); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "ReduceScatterInit", func(pc *ranks.Comm) error { return reduceScatter(pc, send, recv, counts, op) })
}

// ReduceScatterBlockInit is the persistent ReduceScatterBlock
// (MPI_Reduce_scatter_block_init).
func ReduceScatterBlockInit[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	if err := initCheck[T](c, "ReduceScatterBlockInit", noRoot, op != nil); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "ReduceScatterBlockInit", func(pc *ranks.Comm) error { return reduceScatterBlock(pc, send, recv, op) })
}

// ScanInit is the persistent Scan (MPI_Scan_init).
func ScanInit[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	if err := initCheck[T](c, "ScanInit", noRoot, op != nil); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "ScanInit", func(pc *ranks.Comm) error { return scan(pc, send, recv, op) })
}

// ExscanInit is the persistent Exscan (MPI_Exscan_init).
func ExscanInit[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	if err := initCheck[T](c, "ExscanInit", noRoot, op != nil); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "ExscanInit", func(pc *ranks.Comm) error { return exscan(pc, send, recv, op) })
}
