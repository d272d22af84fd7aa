package coll_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// form is one collective with buffers made once: fill writes iteration
// it's inputs (and a sentinel into the outputs), and each of blocking,
// nonblocking and persistent runs it; out is a copy of the outputs.
type form struct {
	name        string
	fill        func(it int)
	blocking    func() error
	nonblocking func() (*ranks.Request, error)
	persistent  func() (*ranks.Request, error)
	out         func() []int64
}

func i64bytes(s []int64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 8*len(s))
}

// forms builds every collective for m elements a member at rank me of n.
func forms(c *ranks.Comm, me, n, m int) []form {
	val := func(it, r, i int) int64 { return int64(1000*it + 100*r + i + 1) }
	fillv := func(b []int64, it, r int) {
		for i := range b {
			b[i] = val(it, r, i)
		}
	}
	sentinel := func(b []int64) {
		for i := range b {
			b[i] = -7
		}
	}
	clone := func(b []int64) func() []int64 { return func() []int64 { return slices.Clone(b) } }
	counts := make([]int, n)
	displs := make([]int, n)
	tot := 0
	for r := range n {
		counts[r], displs[r] = m+r, tot
		tot += m + r
	}
	var fs []form
	{ // Bcast
		b := make([]int64, m)
		root := n - 1
		fs = append(fs, form{"Bcast",
			func(it int) {
				if me == root {
					fillv(b, it, me)
				} else {
					sentinel(b)
				}
			},
			func() error { return coll.Bcast(c, b, root) },
			func() (*ranks.Request, error) { return coll.Ibcast(c, b, root) },
			func() (*ranks.Request, error) { return coll.BcastInit(c, b, root) },
			clone(b)})
	}
	{ // Reduce, Allreduce, Scan, Exscan, ReduceScatterBlock, ReduceScatter
		s, r1 := make([]int64, m), make([]int64, m)
		fs = append(fs, form{"Reduce",
			func(it int) { fillv(s, it, me); sentinel(r1) },
			func() error { return coll.Reduce(c, s, r1, coll.Sum[int64], 0) },
			func() (*ranks.Request, error) { return coll.Ireduce(c, s, r1, coll.Sum[int64], 0) },
			func() (*ranks.Request, error) { return coll.ReduceInit(c, s, r1, coll.Sum[int64], 0) },
			clone(r1)})
		s2, r2 := make([]int64, m), make([]int64, m)
		fs = append(fs, form{"Allreduce",
			func(it int) { fillv(s2, it, me); sentinel(r2) },
			func() error { return coll.Allreduce(c, s2, r2, coll.Sum[int64]) },
			func() (*ranks.Request, error) { return coll.Iallreduce(c, s2, r2, coll.Sum[int64]) },
			func() (*ranks.Request, error) { return coll.AllreduceInit(c, s2, r2, coll.Sum[int64]) },
			clone(r2)})
		s3, r3 := make([]int64, m), make([]int64, m)
		fs = append(fs, form{"Scan",
			func(it int) { fillv(s3, it, me); sentinel(r3) },
			func() error { return coll.Scan(c, s3, r3, coll.Sum[int64]) },
			func() (*ranks.Request, error) { return coll.Iscan(c, s3, r3, coll.Sum[int64]) },
			func() (*ranks.Request, error) { return coll.ScanInit(c, s3, r3, coll.Sum[int64]) },
			clone(r3)})
		s4, r4 := make([]int64, m), make([]int64, m)
		fs = append(fs, form{"Exscan",
			func(it int) { fillv(s4, it, me); sentinel(r4) },
			func() error { return coll.Exscan(c, s4, r4, coll.Sum[int64]) },
			func() (*ranks.Request, error) { return coll.Iexscan(c, s4, r4, coll.Sum[int64]) },
			func() (*ranks.Request, error) { return coll.ExscanInit(c, s4, r4, coll.Sum[int64]) },
			clone(r4)})
		s5, r5 := make([]int64, n*m), make([]int64, m)
		fs = append(fs, form{"ReduceScatterBlock",
			func(it int) { fillv(s5, it, me); sentinel(r5) },
			func() error { return coll.ReduceScatterBlock(c, s5, r5, coll.Sum[int64]) },
			func() (*ranks.Request, error) { return coll.IreduceScatterBlock(c, s5, r5, coll.Sum[int64]) },
			func() (*ranks.Request, error) { return coll.ReduceScatterBlockInit(c, s5, r5, coll.Sum[int64]) },
			clone(r5)})
		s6, r6 := make([]int64, tot), make([]int64, counts[me])
		fs = append(fs, form{"ReduceScatter",
			func(it int) { fillv(s6, it, me); sentinel(r6) },
			func() error { return coll.ReduceScatter(c, s6, r6, counts, coll.Sum[int64]) },
			func() (*ranks.Request, error) { return coll.IreduceScatter(c, s6, r6, counts, coll.Sum[int64]) },
			func() (*ranks.Request, error) {
				return coll.ReduceScatterInit(c, s6, r6, counts, coll.Sum[int64])
			},
			clone(r6)})
	}
	{ // Gather(v), Scatter(v), Allgather(v)
		root := n / 2
		s, g := make([]int64, m), make([]int64, n*m)
		fs = append(fs, form{"Gather",
			func(it int) { fillv(s, it, me); sentinel(g) },
			func() error { return coll.Gather(c, s, g, root) },
			func() (*ranks.Request, error) { return coll.Igather(c, s, g, root) },
			func() (*ranks.Request, error) { return coll.GatherInit(c, s, g, root) },
			clone(g)})
		sv, gv := make([]int64, counts[me]), make([]int64, tot)
		fs = append(fs, form{"Gatherv",
			func(it int) { fillv(sv, it, me); sentinel(gv) },
			func() error { return coll.Gatherv(c, sv, gv, counts, displs, root) },
			func() (*ranks.Request, error) { return coll.Igatherv(c, sv, gv, counts, displs, root) },
			func() (*ranks.Request, error) { return coll.GathervInit(c, sv, gv, counts, displs, root) },
			clone(gv)})
		ss, sr := make([]int64, n*m), make([]int64, m)
		fs = append(fs, form{"Scatter",
			func(it int) { fillv(ss, it, me); sentinel(sr) },
			func() error { return coll.Scatter(c, ss, sr, root) },
			func() (*ranks.Request, error) { return coll.Iscatter(c, ss, sr, root) },
			func() (*ranks.Request, error) { return coll.ScatterInit(c, ss, sr, root) },
			clone(sr)})
		svs, svr := make([]int64, tot), make([]int64, counts[me])
		fs = append(fs, form{"Scatterv",
			func(it int) { fillv(svs, it, me); sentinel(svr) },
			func() error { return coll.Scatterv(c, svs, counts, displs, svr, root) },
			func() (*ranks.Request, error) { return coll.Iscatterv(c, svs, counts, displs, svr, root) },
			func() (*ranks.Request, error) { return coll.ScattervInit(c, svs, counts, displs, svr, root) },
			clone(svr)})
		as, ar := make([]int64, m), make([]int64, n*m)
		fs = append(fs, form{"Allgather",
			func(it int) { fillv(as, it, me); sentinel(ar) },
			func() error { return coll.Allgather(c, as, ar) },
			func() (*ranks.Request, error) { return coll.Iallgather(c, as, ar) },
			func() (*ranks.Request, error) { return coll.AllgatherInit(c, as, ar) },
			clone(ar)})
		avs, avr := make([]int64, counts[me]), make([]int64, tot)
		fs = append(fs, form{"Allgatherv",
			func(it int) { fillv(avs, it, me); sentinel(avr) },
			func() error { return coll.Allgatherv(c, avs, avr, counts, displs) },
			func() (*ranks.Request, error) { return coll.Iallgatherv(c, avs, avr, counts, displs) },
			func() (*ranks.Request, error) { return coll.AllgathervInit(c, avs, avr, counts, displs) },
			clone(avr)})
	}
	{ // Alltoall(v,w)
		s, r1 := make([]int64, n*m), make([]int64, n*m)
		fs = append(fs, form{"Alltoall",
			func(it int) { fillv(s, it, me); sentinel(r1) },
			func() error { return coll.Alltoall(c, s, r1) },
			func() (*ranks.Request, error) { return coll.Ialltoall(c, s, r1) },
			func() (*ranks.Request, error) { return coll.AlltoallInit(c, s, r1) },
			clone(r1)})
		// Member q sends q+r+1 elements to member r.
		sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		st, rt := 0, 0
		for r := range n {
			sc[r], sd[r], rc[r], rd[r] = me+r+1, st, r+me+1, rt
			st += sc[r]
			rt += rc[r]
		}
		vs, vr := make([]int64, st), make([]int64, rt)
		fs = append(fs, form{"Alltoallv",
			func(it int) { fillv(vs, it, me); sentinel(vr) },
			func() error { return coll.Alltoallv(c, vs, sc, sd, vr, rc, rd) },
			func() (*ranks.Request, error) { return coll.Ialltoallv(c, vs, sc, sd, vr, rc, rd) },
			func() (*ranks.Request, error) { return coll.AlltoallvInit(c, vs, sc, sd, vr, rc, rd) },
			clone(vr)})
		ws, wr := make([][]byte, n), make([][]byte, n)
		wsv, wrv := make([][]int64, n), make([][]int64, n)
		for r := range n {
			wsv[r], wrv[r] = make([]int64, sc[r]), make([]int64, rc[r])
			ws[r], wr[r] = i64bytes(wsv[r]), i64bytes(wrv[r])
		}
		fs = append(fs, form{"Alltoallw",
			func(it int) {
				for r := range n {
					fillv(wsv[r], it, me*n+r)
					sentinel(wrv[r])
				}
			},
			func() error { return coll.Alltoallw(c, ws, wr) },
			func() (*ranks.Request, error) { return coll.Ialltoallw(c, ws, wr) },
			func() (*ranks.Request, error) { return coll.AlltoallwInit(c, ws, wr) },
			func() []int64 { return slices.Concat(wrv...) }})
	}
	fs = append(fs, form{"Barrier", func(int) {},
		func() error { return coll.Barrier(c) },
		func() (*ranks.Request, error) { return coll.Ibarrier(c) },
		func() (*ranks.Request, error) { return coll.BarrierInit(c) },
		func() []int64 { return nil }})
	return fs
}

// Every collective's nonblocking and persistent forms give what its
// blocking form gives, for sizes on every path; a persistent request is
// started several times, with new inputs each time, interleaved with the
// other collectives, and freed at the end.
func TestCollectiveForms(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		for _, spinning := range []bool{false, true} {
			cores := 0
			name := fmt.Sprint(n)
			if spinning {
				cores, name = n, name+"-spinning"
			}
			t.Run(name, func(t *testing.T) {
				ranktest.RunOpts(t, ranktest.Options{N: n, Cores: cores, Quiet: true}, func(r *ranktest.R) {
					for _, m := range []int{1, 3, 100, 40000} {
						fs := forms(r.Comm, r.Rank, r.Size, m)
						want := make([][][]int64, len(fs))
						for k, f := range fs {
							for it := range 3 {
								f.fill(it)
								r.Check(f.blocking(), f.name)
								want[k] = append(want[k], f.out())
							}
						}
						for k, f := range fs {
							for it := range 3 {
								f.fill(it)
								q, err := f.nonblocking()
								r.Check(err, f.name)
								_, err = q.Wait()
								r.Check(err, f.name+" (nonblocking)")
								if got := f.out(); !slices.Equal(got, want[k][it]) {
									r.Errorf("%s of %d, nonblocking, iteration %d: %v, want %v", f.name, m, it, head(got), head(want[k][it]))
								}
							}
						}
						// Every persistent request made first, then started
						// in turns: Starts interleave with the others'.
						reqs := make([]*ranks.Request, len(fs))
						for k, f := range fs {
							q, err := f.persistent()
							r.Check(err, f.name+"Init")
							reqs[k] = q
						}
						for it := range 3 {
							for k, f := range fs {
								f.fill(it)
								r.Check(reqs[k].Start(), f.name+" start")
								_, err := reqs[k].Wait()
								r.Check(err, f.name+" (persistent)")
								if got := f.out(); !slices.Equal(got, want[k][it]) {
									r.Errorf("%s of %d, persistent, start %d: %v, want %v", f.name, m, it, head(got), head(want[k][it]))
								}
							}
						}
						for k := range fs {
							r.Check(reqs[k].Free(), "free")
						}
					}
				})
			})
		}
	}
}

func head(s []int64) []int64 { return s[:min(len(s), 8)] }

// Persistent collectives: StartAll of several at once completes them all;
// a failure during a run is reported at completion (ErrProcFailed), a
// revoke as ErrRevoked; bad arguments are reported at Init; ReduceLocal
// keeps the operand order.
func TestPersistentCollectives(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{2}, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		// Bad arguments at Init.
		if _, err := coll.AllreduceInit(c, []int{1}, []int{1}, nil); !errors.Is(err, ranks.ErrArg) {
			r.Errorf("AllreduceInit with a nil op: %v", err)
		}
		if _, err := coll.BcastInit(c, []int{1}, 5); !errors.Is(err, ranks.ErrRank) {
			r.Errorf("BcastInit with a bad root: %v", err)
		}
		// StartAll.
		a, b := []int{r.Rank}, []int{0}
		x := make([]int, 3)
		q1, err := coll.AllreduceInit(c, a, b, coll.Sum[int])
		r.Check(err, "init")
		q2, err := coll.AllgatherInit(c, a, x)
		r.Check(err, "init")
		for it := range 5 {
			a[0] = r.Rank + it
			r.Check(ranks.StartAll([]*ranks.Request{q1, q2}), "start all")
			r.Check(ranks.WaitAll([]*ranks.Request{q1, q2}, nil), "wait all")
			if b[0] != 3+3*it || x[2] != 2+it {
				r.Errorf("run %d: sum %d, gathered %v", it, b[0], x)
			}
		}
		// ReduceLocal: in op inout, in that order.
		in, inout := []affine{affineOf(1, 0)}, []affine{affineOf(2, 0)}
		want := []affine{affineOf(1, 0)}
		compose(want, []affine{affineOf(2, 0)})
		r.Check(coll.ReduceLocal(in, inout, coll.Op[affine](compose)), "reduce local")
		if inout[0] != want[0] {
			r.Errorf("ReduceLocal: %v, want %v", inout[0], want[0])
		}
		// A failure during a run: reported when it completes.
		if r.Rank == 2 {
			r.Kill()
		}
		a[0] = 1
		r.Check(q1.Start(), "start after the death")
		if _, err := q1.Wait(); !errors.Is(err, ranks.ErrProcFailed) {
			r.Errorf("persistent allreduce with a dead member: %v, want ErrProcFailed", err)
		}
		r.Check(q1.Free(), "free")
		r.Check(q2.Free(), "free")
	})
}

// At ThreadSerialized the engine takes no lock, but a queued nonblocking
// collective may run on a goroutine of the runtime's own while the
// program's goroutine sends and receives: the engine then takes its lock
// from the first such collective on (run it under -race too).
func TestNonblockingAtThreadSerialized(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Serialized: true, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		other := 1 - r.Rank
		for it := range 200 {
			v := []int64{int64(r.Rank + it)}
			q, err := coll.Iallreduce(c, nil, v, coll.Sum[int64])
			r.Check(err, "iallreduce")
			// Point-to-point on this goroutine while the collective may
			// run on the communicator's.
			b := make([]byte, 100)
			_, err = ranks.Sendrecv(c, b, other, 1, make([]byte, 100), other, 1)
			r.Check(err, "sendrecv")
			_, err = q.Wait()
			r.Check(err, "wait")
			if v[0] != int64(1+2*it) {
				r.Fatalf("iteration %d: %d", it, v[0])
			}
		}
	})
}
