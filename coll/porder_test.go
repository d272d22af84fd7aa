package coll_test

import (
	"errors"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// Persistent collectives match by the order of their Init calls, which
// is the same everywhere; members may start them in different orders
// (MPI 4.0 §6.13, MPICH's coll/p_order). Each rank starts four of them in
// an order of its own, and completes them in yet another, for several
// runs.
func TestPersistentStartOrder(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		n := c.Size()
		bc := []int{-1}
		sum, total := []int{0}, []int{0}
		mine, gathered := []int{0}, make([]int, n)
		qb, err := coll.BcastInit(c, bc, 0)
		r.Check(err, "BcastInit")
		qr, err := coll.BarrierInit(c)
		r.Check(err, "BarrierInit")
		qa, err := coll.AllreduceInit(c, sum, total, coll.Sum[int])
		r.Check(err, "AllreduceInit")
		qg, err := coll.GatherInit(c, mine, gathered, n-1)
		r.Check(err, "GatherInit")
		all := []*ranks.Request{qb, qr, qa, qg}
		for it := range 10 {
			if r.Rank == 0 {
				bc[0] = 1000 + it
			}
			sum[0], mine[0] = r.Rank+it, 10*r.Rank+it
			// Rank k starts them rotated by k+it, reversed at odd ranks.
			for i := range all {
				j := (i + r.Rank + it) % len(all)
				if r.Rank%2 == 1 {
					j = len(all) - 1 - j
				}
				r.Check(all[j].Start(), "start")
			}
			// And waits for them one by one, from the last.
			for j := len(all) - 1; j >= 0; j-- {
				_, err := all[j].Wait()
				r.Check(err, "wait")
			}
			if bc[0] != 1000+it {
				r.Errorf("run %d: Bcast gave %d, want %d", it, bc[0], 1000+it)
			}
			if want := n*(n-1)/2 + n*it; total[0] != want {
				r.Errorf("run %d: Allreduce gave %d, want %d", it, total[0], want)
			}
			if r.Rank == n-1 {
				for k, v := range gathered {
					if v != 10*k+it {
						r.Errorf("run %d: Gather gave %v", it, gathered)
						break
					}
				}
			}
		}
		for _, q := range all {
			r.Check(q.Free(), "free")
		}

		// A communicator asserting strict ordering: its persistent
		// collectives run on it, started in Init order everywhere.
		in := ranks.NewInfo()
		r.Check(in.Set("mpi_assert_strict_persistent_collective_ordering", "true"), "set")
		s, err := c.DupWithInfo(in)
		r.Check(err, "DupWithInfo")
		sb, err := coll.BcastInit(s, bc, 1)
		r.Check(err, "BcastInit")
		sa, err := coll.AllreduceInit(s, sum, total, coll.Sum[int])
		r.Check(err, "AllreduceInit")
		for it := range 5 {
			if r.Rank == 1 {
				bc[0] = 7 + it
			}
			sum[0] = it
			r.Check(ranks.StartAll([]*ranks.Request{sb, sa}), "start all")
			r.Check(ranks.WaitAll([]*ranks.Request{sa, sb}, nil), "wait all")
			if bc[0] != 7+it || total[0] != n*it {
				r.Errorf("strict run %d: Bcast %d, Allreduce %d", it, bc[0], total[0])
			}
		}
		r.Check(sb.Free(), "free")
		r.Check(sa.Free(), "free")
		r.Check(s.Free(), "free")
	})
}

// Revoking a communicator ends the runs of its persistent collectives,
// which run on private duplicates of it: rank 0 never starts the Barrier
// and revokes instead; the others, waiting in it, get ErrRevoked, and so
// does a later run.
func TestPersistentRevoked(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		d, err := r.Comm.Dup()
		r.Check(err, "Dup")
		q, err := coll.BarrierInit(d)
		r.Check(err, "BarrierInit")
		if r.Rank == 0 {
			r.Check(ulfm.Revoke(d), "Revoke")
		} else {
			r.Check(q.Start(), "start")
			if _, err := q.Wait(); !errors.Is(err, ranks.ErrRevoked) {
				r.Errorf("Barrier run on a revoked communicator: %v, want ErrRevoked", err)
			}
		}
		// A later run fails at Start, or, if this member has not yet seen
		// the revoke, when it completes.
		err = q.Start()
		if err == nil {
			_, err = q.Wait()
		}
		if !errors.Is(err, ranks.ErrRevoked) {
			r.Errorf("run after the revoke: %v, want ErrRevoked", err)
		}
		r.Check(q.Free(), "free")
		r.Check(d.Free(), "free")
	})
}

// A member whose arguments of a persistent collective's Init are bad gets
// the error, and the other members' Init calls return (Init makes a
// creation at every member); the communicator then works, with later
// persistent collectives matched.
func TestPersistentInitBadArgs(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		root := 0
		if r.Rank == 1 {
			root = 7 // out of range here only
		}
		buf := []int{r.Rank}
		q, err := coll.BcastInit(c, buf, root)
		if r.Rank == 1 {
			if !errors.Is(err, ranks.ErrRank) || q != nil {
				r.Errorf("BcastInit with a bad root: %v, want ErrRank", err)
			}
		} else {
			r.Check(err, "BcastInit")
			r.Check(q.Free(), "free") // never started: rank 1 has no run
		}
		sum, total := []int{r.Rank + 1}, []int{0}
		qa, err := coll.AllreduceInit(c, sum, total, coll.Sum[int])
		r.Check(err, "AllreduceInit")
		r.Check(qa.Start(), "start")
		_, err = qa.Wait()
		r.Check(err, "wait")
		if total[0] != 6 {
			r.Errorf("Allreduce after the bad Init: %d, want 6", total[0])
		}
		r.Check(qa.Free(), "free")
	})
}
