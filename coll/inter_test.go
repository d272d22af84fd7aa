package coll_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// Every intercommunicator collective against a sequential reference: the
// data of one group reaches the other, for sizes on several paths, in
// both directions and with roots in either group, blocking and
// nonblocking.
func TestIntercommCollectives(t *testing.T) {
	for _, tc := range []struct{ n, na int }{{3, 1}, {5, 2}, {6, 3}} {
		for _, cores := range []int{0, 6} {
			t.Run(fmt.Sprintf("%d-%d/cores=%d", tc.na, tc.n-tc.na, cores), func(t *testing.T) {
				ranktest.RunOpts(t, ranktest.Options{N: tc.n, Cores: cores, Quiet: true}, func(r *ranktest.R) {
					ic, inA := r.Intercomm(tc.na)
					for _, m := range []int{1, 100, 30000} {
						interModel(r, ic, inA, tc.n, tc.na, m)
					}
					if err := coll.Scan(ic, []int{1}, make([]int, 1), coll.Sum[int]); !errors.Is(err, ranks.ErrComm) {
						r.Errorf("Scan on an intercommunicator: %v, want ErrComm", err)
					}
					r.Check(ic.Free(), "free")
				})
			})
		}
	}
}

func interModel(r *ranktest.R, ic *ranks.Comm, inA bool, n, na, m int) {
	me := ic.Rank()
	lsize, rsize := ic.Size(), ic.RemoteSize()
	// val is member q of group g's element i (g 0: A, 1: B).
	val := func(g, q, i int) int64 { return int64(1000000*g + 1000*q + i + 1) }
	myg, rg := 1, 0
	if inA {
		myg, rg = 0, 1
	}
	mine := func(k int) []int64 {
		v := make([]int64, k)
		for i := range v {
			v[i] = val(myg, me, i)
		}
		return v
	}
	what := func(op string) string { return fmt.Sprintf("%s of %d", op, m) }
	check := func(err error, op string) {
		if err != nil {
			r.Fatalf("%s: %v", what(op), err)
		}
	}
	r.Check(coll.Barrier(ic), "barrier")
	// Bcast: the root is member 1 (or 0) of A, then of B.
	for _, rootG := range []int{0, 1} {
		rootRank := min(1, map[bool]int{true: na, false: n - na}[rootG == 0]-1)
		buf := make([]int64, m)
		root := rootRank
		switch {
		case myg == rootG && me == rootRank:
			root, buf = ranks.Root, mine(m)
		case myg == rootG:
			root = ranks.ProcNull
		}
		check(coll.Bcast(ic, buf, root), "Bcast")
		if myg != rootG {
			for i := range buf {
				if buf[i] != val(rootG, rootRank, i) {
					r.Fatalf("%s from group %d: element %d is %d", what("Bcast"), rootG, i, buf[i])
				}
			}
		}
	}
	// Allreduce: each group gets the sum of the other's.
	sum := make([]int64, m)
	for q := range rsize {
		for i := range sum {
			sum[i] += val(rg, q, i)
		}
	}
	got := make([]int64, m)
	check(coll.Allreduce(ic, mine(m), got, coll.Sum[int64]), "Allreduce")
	if !slices.Equal(got, sum) {
		r.Errorf("%s: %v..., want %v...", what("Allreduce"), head(got), head(sum))
	}
	q, err := coll.Iallreduce(ic, mine(m), got, coll.Sum[int64])
	check(err, "Iallreduce")
	_, err = q.Wait()
	check(err, "Iallreduce wait")
	if !slices.Equal(got, sum) {
		r.Errorf("%s: wrong", what("Iallreduce"))
	}
	// Reduce to member 0 of B.
	{
		root := 0
		if inA {
			root = 0
		} else if me == 0 {
			root = ranks.Root
		} else {
			root = ranks.ProcNull
		}
		out := make([]int64, m)
		check(coll.Reduce(ic, mine(m), out, coll.Sum[int64], root), "Reduce")
		if root == ranks.Root && !slices.Equal(out, sum) {
			r.Errorf("%s: wrong", what("Reduce"))
		}
	}
	// Gather of A's blocks at member 0 of B, Scatter back.
	{
		root := 0
		if !inA {
			root = ranks.ProcNull
			if me == 0 {
				root = ranks.Root
			}
		}
		g := make([]int64, rsize*m)
		check(coll.Gather(ic, mine(m), g, root), "Gather")
		if root == ranks.Root {
			for q := range rsize {
				for i := range m {
					if g[q*m+i] != val(0, q, i) {
						r.Fatalf("%s: block %d element %d is %d", what("Gather"), q, i, g[q*m+i])
					}
				}
			}
		}
		sc := make([]int64, m)
		check(coll.Scatter(ic, g, sc, root), "Scatter")
		if inA && !slices.Equal(sc, mine(m)) {
			r.Errorf("%s: got %v..., want own block back", what("Scatter"), head(sc))
		}
	}
	// Allgather: each gets the other group's blocks in rank order.
	{
		g := make([]int64, rsize*m)
		check(coll.Allgather(ic, mine(m), g), "Allgather")
		for q := range rsize {
			if g[q*m] != val(rg, q, 0) || g[q*m+m-1] != val(rg, q, m-1) {
				r.Fatalf("%s: block %d wrong", what("Allgather"), q)
			}
		}
	}
	// Alltoall: block q to remote q.
	{
		s := make([]int64, rsize*m)
		for q := range rsize {
			for i := range m {
				s[q*m+i] = val(myg, me, 1000*q+i)
			}
		}
		rb := make([]int64, rsize*m)
		check(coll.Alltoall(ic, s, rb), "Alltoall")
		for q := range rsize {
			if rb[q*m] != val(rg, q, 1000*me) {
				r.Fatalf("%s: block from %d is %d, want %d", what("Alltoall"), q, rb[q*m], val(rg, q, 1000*me))
			}
		}
	}
	// ReduceScatterBlock: the other group's sum of lsize blocks of m,
	// block me here.
	{
		s := make([]int64, rsize*m)
		for i := range s {
			s[i] = val(myg, me, i)
		}
		out := make([]int64, m)
		check(coll.ReduceScatterBlock(ic, s, out, coll.Sum[int64]), "ReduceScatterBlock")
		for i := range m {
			var want int64
			for q := range rsize {
				want += val(rg, q, me*m+i)
			}
			if out[i] != want {
				r.Fatalf("%s: element %d is %d, want %d", what("ReduceScatterBlock"), i, out[i], want)
			}
		}
	}
	_ = lsize
}

// A member of either group that dies before or during an
// intercommunicator collective makes it end with ErrProcFailed at the
// survivors, never a hang.
func TestIntercommCollectiveDeath(t *testing.T) {
	for _, victim := range []int{1, 3} {
		t.Run(fmt.Sprint("victim=", victim), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 5, Dies: []int{victim}, Quiet: true}, func(r *ranktest.R) {
				ic, _ := r.Intercomm(2)
				r.Check(coll.Barrier(ic), "barrier")
				// The victim dies once every other member has left the
				// barrier (else they may rightly see it fail in it).
				if r.Rank == victim {
					for range 4 {
						_, err := ranks.Recv(r.Comm, make([]byte, 1), ranks.AnySource, 9)
						r.Check(err, "wait for the others")
					}
					r.Kill()
				}
				r.Check(ranks.Send(r.Comm, []byte{1}, victim, 9), "tell the victim")
				root := 0 // B's members name A's rank 0
				switch r.Rank {
				case 0:
					root = ranks.Root
				case 1:
					root = ranks.ProcNull
				}
				var err error
				for i := 0; i < 50 && err == nil; i++ {
					_, err = coll.AllreduceValue(ic, 1, coll.Sum[int])
					if err == nil {
						err = coll.Bcast(ic, make([]int, 10000), root)
					}
				}
				if !errors.Is(err, ranks.ErrProcFailed) {
					r.Errorf("intercommunicator collectives with a dead member: %v, want ErrProcFailed", err)
				}
				if err := coll.Barrier(ic); !errors.Is(err, ranks.ErrProcFailed) {
					r.Errorf("barrier after the death: %v", err)
				}
			})
		})
	}
}
