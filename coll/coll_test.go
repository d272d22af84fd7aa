package coll_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// value is member r's element i of a test vector.
func value(r, i int) int64 { return int64(r*1000003 + i*7 + 1) }

func vec(r, n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = value(r, i)
	}
	return v
}

// affine is a non-commutative op: x ∘ y = (x.a*y.a, x.a*y.b + x.b) on
// pairs, reduced modulo a prime to stay small.
type affine struct{ A, B int64 }

const prime = 1_000_003

func compose(inout, in []affine) {
	for i := range inout {
		x, y := inout[i], in[i]
		inout[i] = affine{x.A * y.A % prime, (x.A*y.B + x.B) % prime}
	}
}

func affineOf(r, i int) affine { return affine{int64(r+2+i) % prime, int64(3*r+i+1) % prime} }

// Every collective against a sequential model, on 1, 2, 3 and 5 ranks,
// for sizes that take the shared-line path and the message path, with
// the barrier of ranks that sleep (the counter) and of ranks told they
// have a core each, which spin (dissemination).
func TestCollectivesModel(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5} {
		for _, spinning := range []bool{false, true} {
			cores := 0
			name := fmt.Sprint(n)
			if spinning {
				cores, name = n, name+"-spinning"
			}
			t.Run(name, func(t *testing.T) {
				ranktest.RunOpts(t, ranktest.Options{N: n, Cores: cores, Quiet: true}, func(r *ranktest.R) {
					// 300001: several chunks of the shared area of large
					// reductions (coll/big.go), the last one short.
					for _, m := range []int{1, 3, 4, 100, 1000, 70000, 300001} {
						model(r, m)
					}
					// A communicator past the context slots that have
					// scratch (internal/job.ScratchSlots): medium sizes
					// go by messages there.
					var dups []*ranks.Comm
					for range 8 {
						d, err := r.Comm.Dup()
						r.Check(err, "dup")
						dups = append(dups, d)
					}
					world := r.Comm
					r.Comm = dups[7]
					for _, m := range []int{4, 100} {
						model(r, m)
					}
					r.Comm = world
					for _, d := range dups {
						r.Check(d.Free(), "free")
					}
				})
			})
		}
	}
}

func model(r *ranktest.R, m int) {
	c, me, size := r.Comm, r.Rank, r.Size
	what := func(op string) string { return fmt.Sprintf("%s of %d elements", op, m) }
	check := func(err error, op string) {
		if err != nil {
			r.Fatalf("%s: %v", what(op), err)
		}
	}
	check(coll.Barrier(c), "Barrier")

	for root := range size {
		buf := make([]int64, m)
		if me == root {
			buf = vec(root, m)
		}
		check(coll.Bcast(c, buf, root), "Bcast")
		if !slices.Equal(buf, vec(root, m)) {
			r.Errorf("%s from %d: wrong data", what("Bcast"), root)
		}
	}

	sum := make([]int64, m)
	for q := range size {
		coll.Sum(sum, vec(q, m))
	}
	root := size - 1
	rec := make([]int64, m)
	check(coll.Reduce(c, vec(me, m), rec, coll.Sum[int64], root), "Reduce")
	if me == root && !slices.Equal(rec, sum) {
		r.Errorf("%s: wrong sum", what("Reduce"))
	}
	all := make([]int64, m)
	check(coll.Allreduce(c, vec(me, m), all, coll.Sum[int64]), "Allreduce")
	if !slices.Equal(all, sum) {
		r.Errorf("%s: wrong sum", what("Allreduce"))
	}
	in := vec(me, m)
	check(coll.Allreduce(c, nil, in, coll.Sum[int64]), "Allreduce in place")
	if !slices.Equal(in, sum) {
		r.Errorf("%s: wrong sum", what("Allreduce in place"))
	}
	// Non-commutative: rank order must hold.
	mine := make([]affine, min(m, 200000))
	want := make([]affine, len(mine))
	for i := range mine {
		mine[i] = affineOf(me, i)
		want[i] = affineOf(0, i)
		for q := 1; q < size; q++ {
			compose(want[i:i+1], []affine{affineOf(q, i)})
		}
	}
	got := make([]affine, len(mine))
	check(coll.Allreduce(c, mine, got, coll.Op[affine](compose)), "Allreduce non-commutative")
	if !slices.Equal(got, want) {
		r.Errorf("%s: not in rank order", what("non-commutative Allreduce"))
	}
	// Reduce at every root, non-commutative and in place at the root
	// (from 64 KiB through the shared area, coll/big.go).
	for root := range size {
		var rgot []affine
		if me == root {
			rgot = make([]affine, len(mine))
		}
		check(coll.Reduce(c, mine, rgot, coll.Op[affine](compose), root), "Reduce non-commutative")
		if me == root && !slices.Equal(rgot, want) {
			r.Errorf("%s at root %d: not in rank order", what("non-commutative Reduce"), root)
		}
		inp := vec(me, m)
		send := inp
		if me == root {
			send = nil
		}
		check(coll.Reduce(c, send, inp, coll.Sum[int64], root), "Reduce in place")
		if me == root && !slices.Equal(inp, sum) {
			r.Errorf("%s at root %d: wrong sum", what("Reduce in place"), root)
		}
	}

	g := make([]int64, size*m)
	for root := range size {
		clear(g)
		check(coll.Gather(c, vec(me, m), g, root), "Gather")
		for q := range size {
			if me == root && !slices.Equal(g[q*m:(q+1)*m], vec(q, m)) {
				r.Errorf("%s at root %d: block %d wrong", what("Gather"), root, q)
			}
		}
	}
	check(coll.Allgather(c, vec(me, m), g), "Allgather")
	for q := range size {
		if !slices.Equal(g[q*m:(q+1)*m], vec(q, m)) {
			r.Errorf("%s: block %d wrong", what("Allgather"), q)
		}
	}
	var src []int64
	if me == 0 {
		src = slices.Concat(func() [][]int64 {
			var bs [][]int64
			for q := range size {
				bs = append(bs, vec(q, m))
			}
			return bs
		}()...)
	}
	sc := make([]int64, m)
	check(coll.Scatter(c, src, sc, 0), "Scatter")
	if !slices.Equal(sc, vec(me, m)) {
		r.Errorf("%s: wrong block", what("Scatter"))
	}
	// Alltoall: block q of member p's send is vec(p*size+q).
	send := make([]int64, 0, size*m)
	for q := range size {
		send = append(send, vec(me*size+q, m)...)
	}
	recv := make([]int64, size*m)
	check(coll.Alltoall(c, send, recv), "Alltoall")
	for q := range size {
		if !slices.Equal(recv[q*m:(q+1)*m], vec(q*size+me, m)) {
			r.Errorf("%s: block from %d wrong", what("Alltoall"), q)
		}
	}
	inPlace := slices.Clone(send)
	check(coll.Alltoall(c, nil, inPlace), "Alltoall in place")
	for q := range size {
		if !slices.Equal(inPlace[q*m:(q+1)*m], vec(q*size+me, m)) {
			r.Errorf("%s: block from %d wrong", what("Alltoall in place"), q)
		}
	}
	rsb := make([]int64, m)
	full := make([]int64, size*m)
	for p := range size {
		for q := range size {
			coll.Sum(full[q*m:(q+1)*m], vec(p*size+q, m))
		}
	}
	check(coll.ReduceScatterBlock(c, send, rsb, coll.Sum[int64]), "ReduceScatterBlock")
	if !slices.Equal(rsb, full[me*m:(me+1)*m]) {
		r.Errorf("%s: wrong block", what("ReduceScatterBlock"))
	}
	scan := make([]int64, m)
	check(coll.Scan(c, vec(me, m), scan, coll.Sum[int64]), "Scan")
	pre := make([]int64, m)
	for q := 0; q <= me; q++ {
		coll.Sum(pre, vec(q, m))
	}
	if !slices.Equal(scan, pre) {
		r.Errorf("%s: wrong prefix", what("Scan"))
	}
	ex := make([]int64, m)
	check(coll.Exscan(c, vec(me, m), ex, coll.Sum[int64]), "Exscan")
	clear(pre)
	for q := 0; q < me; q++ {
		coll.Sum(pre, vec(q, m))
	}
	if me > 0 && !slices.Equal(ex, pre) {
		r.Errorf("%s: wrong prefix", what("Exscan"))
	}
	// v-forms: member q contributes q+1 elements (times m/1000+1).
	k := m/1000 + 1
	counts, displs := make([]int, size), make([]int, size)
	tot := 0
	for q := range size {
		counts[q], displs[q] = (q+1)*k, tot
		tot += counts[q]
	}
	gv := make([]int64, tot)
	check(coll.Allgatherv(c, vec(me, counts[me]), gv, counts, displs), "Allgatherv")
	gv2 := make([]int64, tot)
	check(coll.Gatherv(c, vec(me, counts[me]), gv2, counts, displs, root), "Gatherv")
	for q := range size {
		if !slices.Equal(gv[displs[q]:displs[q]+counts[q]], vec(q, counts[q])) ||
			(me == root && !slices.Equal(gv2[displs[q]:displs[q]+counts[q]], vec(q, counts[q]))) {
			r.Errorf("%s: block %d wrong", what("Allgatherv/Gatherv"), q)
		}
	}
	sv := make([]int64, counts[me])
	check(coll.Scatterv(c, gv, counts, displs, sv, 0), "Scatterv")
	if !slices.Equal(sv, vec(me, counts[me])) {
		r.Errorf("%s: wrong block", what("Scatterv"))
	}
	v, err := coll.AllreduceValue(c, coll.ValLoc[float64]{Val: float64(me % 2), Loc: me}, coll.MinLoc[float64])
	check(err, "MinLoc")
	if v.Val != 0 || v.Loc != 0 {
		r.Errorf("MinLoc: %+v", v)
	}
	mx, err := coll.AllreduceValue(c, me, coll.Max[int])
	check(err, "Max")
	if mx != size-1 {
		r.Errorf("Max: %d", mx)
	}
	land, err := coll.AllreduceValue(c, me != 1, coll.Land)
	check(err, "Land")
	if land != (size < 2) {
		r.Errorf("Land: %v", land)
	}
}

// Bad input: a clear error class, and the communicator keeps working.
func TestCollectivesBadInput(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		want := func(err, class error, what string) {
			if !errors.Is(err, class) {
				r.Errorf("%s: %v, want %v", what, err, class)
			}
		}
		want(coll.Bcast(c, []int{1}, 2), ranks.ErrRank, "root out of range")
		want(coll.Bcast(c, []int{1}, -1), ranks.ErrRank, "negative root")
		want(coll.Bcast(c, []string{"x"}, 0), ranks.ErrType, "non-plain type")
		want(coll.Allreduce(c, []int{1, 2}, []int{0}, coll.Sum[int]), ranks.ErrBuffer, "short receive buffer")
		want(coll.Barrier(nil), ranks.ErrComm, "nil communicator")
		want(coll.Allgatherv(c, []int{1}, make([]int, 2), []int{1, 5}, []int{0, 1}), ranks.ErrCount, "count out of range")
		d, err := c.Dup()
		r.Check(err, "dup")
		r.Check(d.Free(), "free")
		want(coll.Barrier(d), ranks.ErrComm, "freed communicator")
		// Mismatched sizes between members are caught by the receiver.
		buf := make([]int32, 1+r.Rank)
		err = coll.Bcast(c, buf, 0)
		if r.Rank == 1 {
			want(err, ranks.ErrCount, "Bcast of mismatched sizes")
		}
		r.Check(coll.Barrier(c), "barrier after bad input")
	})
}

// Collectives on different communicators, from different goroutines at
// once, do not interfere.
func TestCollectivesConcurrentComms(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		const k = 4
		comms := make([]*ranks.Comm, k)
		for i := range comms {
			d, err := r.Comm.Dup()
			r.Check(err, "dup")
			comms[i] = d
		}
		var wg sync.WaitGroup
		for i, d := range comms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for it := range 200 {
					v, err := coll.AllreduceValue(d, r.Rank*i+it, coll.Sum[int])
					if err != nil {
						r.Errorf("comm %d: %v", i, err)
						return
					}
					if want := 3*it + 3*i; v != want {
						r.Errorf("comm %d iteration %d: %d, want %d", i, it, v, want)
						return
					}
					big := make([]int64, 5000)
					big[0] = int64(r.Rank + i)
					if err := coll.Allreduce(d, nil, big, coll.Sum[int64]); err != nil || big[0] != int64(3+3*i) {
						r.Errorf("comm %d large: %v %d", i, err, big[0])
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, d := range comms {
			r.Check(d.Free(), "free")
		}
	})
}

// A member that dies before or during a collective makes it return
// ErrProcFailed at the survivors that wait for it, never a hang; later
// collectives on the communicator fail at once.
func TestCollectivesMemberDies(t *testing.T) {
	type collective struct {
		name string
		run  func(c *ranks.Comm, me int) error
	}
	cases := []collective{
		{"barrier", func(c *ranks.Comm, me int) error { return coll.Barrier(c) }},
		{"allreduce-small", func(c *ranks.Comm, me int) error {
			_, err := coll.AllreduceValue(c, 1.0, coll.Sum[float64])
			return err
		}},
		{"allreduce-large", func(c *ranks.Comm, me int) error {
			return coll.Allreduce(c, nil, make([]float64, 100000), coll.Sum[float64])
		}},
		{"bcast-large", func(c *ranks.Comm, me int) error { return coll.Bcast(c, make([]byte, 200000), 2) }},
		{"bcast-small-from-dead", func(c *ranks.Comm, me int) error { return coll.Bcast(c, make([]byte, 8), 2) }},
		{"bcasts-small", func(c *ranks.Comm, me int) error {
			// Rooted at live members: the root's next write waits for the
			// dead member's entry (spinning) or the barrier does.
			for i := range 4 {
				if err := coll.Bcast(c, make([]byte, 8), i%2); err != nil {
					return err
				}
			}
			return nil
		}},
		{"gather", func(c *ranks.Comm, me int) error { return coll.Gather(c, make([]int, 10), make([]int, 40), 0) }},
		{"allgather-large", func(c *ranks.Comm, me int) error {
			// Through the shared area where members sleep (coll/big.go).
			return coll.Allgather(c, make([]byte, 100000), make([]byte, 400000))
		}},
		{"allgather-rounds", func(c *ranks.Comm, me int) error {
			// Blocks larger than a part of the shared area: in rounds.
			return coll.Allgather(c, make([]byte, 3<<20), make([]byte, 12<<20))
		}},
		{"alltoall-rounds", func(c *ranks.Comm, me int) error {
			return coll.Alltoall(c, make([]byte, 4<<20), make([]byte, 4<<20))
		}},
		{"reduce", func(c *ranks.Comm, me int) error {
			return coll.Reduce(c, make([]int64, 10), make([]int64, 10), coll.Sum[int64], 0)
		}},
		{"reduce-large", func(c *ranks.Comm, me int) error {
			// Through the shared area (coll/big.go).
			return coll.Reduce(c, make([]float64, 100000), make([]float64, 100000), coll.Sum[float64], 0)
		}},
		{"gathers-small", func(c *ranks.Comm, me int) error {
			// Rooted at live members: a member's next write waits for
			// the dead member's entry (spinning) or the root's receive.
			for i := range 4 {
				if err := coll.Gather(c, make([]int, 2), make([]int, 8), i%2); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, tc := range cases {
		for _, variant := range []string{"before", "during", "during-spinning"} {
			during := variant != "before"
			cores := 0
			if variant == "during-spinning" {
				cores = 4 // the dissemination barrier
			}
			t.Run(tc.name+"/"+variant, func(t *testing.T) {
				ranktest.RunOpts(t, ranktest.Options{N: 4, Cores: cores, Dies: []int{2}, Quiet: true}, func(r *ranktest.R) {
					c := r.Comm
					if r.Rank == 2 {
						if during {
							r.Check(coll.Barrier(c), "barrier before")
						}
						r.Kill()
					}
					if during {
						r.Check(coll.Barrier(c), "barrier before")
					} else {
						_, err := ranks.Recv(c, make([]byte, 1), 2, 1)
						procFailed(r, err, "see the death first")
					}
					err := tc.run(c, r.Rank)
					if !during && !errors.Is(err, ranks.ErrProcFailed) {
						r.Errorf("%s with a dead member: %v, want ErrProcFailed", tc.name, err)
					}
					if during && err != nil && !errors.Is(err, ranks.ErrProcFailed) {
						r.Errorf("%s while a member dies: %v", tc.name, err)
					}
					// Later collectives fail at once, acknowledged or not.
					r.Check(c.FailureAck(), "ack")
					procFailed(r, coll.Barrier(c), "barrier after the failure")
				})
			})
		}
	}
}

// One-way broadcasts (members that spin) mixed with phases that have a
// barrier: every value arrives, whatever the roots and the order, and no
// member overwrites a line a slower member still reads.
func TestBcastOneWayMixed(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: n, Cores: n, Quiet: true}, func(r *ranktest.R) {
				c, me := r.Comm, r.Rank
				for i := range 3000 {
					root := (i * 7 / 3) % n
					v := []int64{int64(i), int64(root)}
					if me != root {
						v = []int64{-1, -1}
					}
					r.Check(coll.Bcast(c, v, root), "bcast")
					if v[0] != int64(i) || v[1] != int64(root) {
						r.Fatalf("bcast %d from %d: got %v", i, root, v)
					}
					switch i % 5 {
					case 1:
						allreduceRound(r, i)
					case 3:
						r.Check(coll.Barrier(c), "barrier")
					}
				}
			})
		})
	}
}

// One-way gathers and reductions (members that spin: each member writes
// and goes on, only the root waits) mixed with one-way broadcasts and
// phases that have a barrier: every block and sum arrives, whatever the
// roots and the sizes (inline and staged), and no member overwrites its
// line or scratch half while a slower root still reads it.
func TestGatherOneWayMixed(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: n, Cores: n, Quiet: true}, func(r *ranktest.R) {
				c, me := r.Comm, r.Rank
				for i := range 3000 {
					root := (i * 5 / 3) % n
					m := []int{1, 2, 3, 40, 300}[i%5] // 8 B to 2,400 B a member
					mine := make([]int64, m)
					for k := range mine {
						mine[k] = int64(i*1000 + me*10 + k)
					}
					if i%2 == 0 {
						all := make([]int64, n*m)
						r.Check(coll.Gather(c, mine, all, root), "gather")
						for q := 0; me == root && q < n; q++ {
							for k := range m {
								if want := int64(i*1000 + q*10 + k); all[q*m+k] != want {
									r.Fatalf("gather %d to %d: member %d element %d is %d, want %d", i, root, q, k, all[q*m+k], want)
								}
							}
						}
					} else {
						sum := make([]int64, m)
						r.Check(coll.Reduce(c, mine, sum, coll.Sum[int64], root), "reduce")
						for k := 0; me == root && k < m; k++ {
							if want := int64(n*(i*1000+k) + 10*n*(n-1)/2); sum[k] != want {
								r.Fatalf("reduce %d to %d: element %d is %d, want %d", i, root, k, sum[k], want)
							}
						}
					}
					switch i % 7 {
					case 2:
						v := []int64{int64(i)}
						r.Check(coll.Bcast(c, v, (root+1)%n), "bcast")
						if v[0] != int64(i) {
							r.Fatalf("bcast %d: got %d", i, v[0])
						}
					case 4:
						allreduceRound(r, i)
					case 6:
						r.Check(coll.Barrier(c), "barrier")
					}
				}
			})
		})
	}
}

// allreduceRound is round i's Allreduce of the one-way tests: every
// member adds its rank and i.
func allreduceRound(r *ranktest.R, i int) {
	n := r.Size
	s, err := coll.AllreduceValue(r.Comm, int64(r.Rank+i), coll.Sum[int64])
	r.Check(err, "allreduce")
	if want := int64(n*i + n*(n-1)/2); s != want {
		r.Fatalf("allreduce %d: %d, want %d", i, s, want)
	}
}

func procFailed(r *ranktest.R, err error, what string) {
	if !errors.Is(err, ranks.ErrProcFailed) {
		r.Errorf("%s: %v, want ErrProcFailed", what, err)
	}
}

// Nonblocking collectives complete through Wait, Test and WaitAll, in
// the order started, overlapping point-to-point traffic and blocking
// collectives started after them.
func TestNonblocking(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Quiet: true}, func(r *ranktest.R) {
		c, me, size := r.Comm, r.Rank, r.Size
		for it := range 50 {
			small := []int64{int64(me + it)}
			big := vec(me, 20000)
			bc := make([]int64, 5000)
			if me == 1 {
				bc = vec(1, 5000)
			}
			all := make([]int64, size)
			var reqs []*ranks.Request
			for _, mk := range []func() (*ranks.Request, error){
				func() (*ranks.Request, error) { return coll.Iallreduce(c, nil, small, coll.Sum[int64]) },
				func() (*ranks.Request, error) { return coll.Iallreduce(c, nil, big, coll.Sum[int64]) },
				func() (*ranks.Request, error) { return coll.Ibcast(c, bc, 1) },
				func() (*ranks.Request, error) { return coll.Iallgather(c, []int64{int64(me)}, all) },
				func() (*ranks.Request, error) { return coll.Ibarrier(c) },
			} {
				q, err := mk()
				r.Check(err, "start")
				reqs = append(reqs, q)
			}
			// Point-to-point meanwhile, on the same communicator.
			peer := (me + 1) % size
			from := (me + size - 1) % size
			got := make([]int, 1)
			_, err := ranks.Sendrecv(c, []int{me}, peer, 9, got, from, 9)
			r.Check(err, "sendrecv during collectives")
			if got[0] != from {
				r.Errorf("sendrecv got %d", got[0])
			}
			// A blocking collective started now runs after them.
			v, err := coll.AllreduceValue(c, 1, coll.Sum[int])
			r.Check(err, "blocking after nonblocking")
			if v != size {
				r.Errorf("blocking allreduce %d", v)
			}
			if it%2 == 0 {
				r.Check(ranks.WaitAll(reqs, nil), "wait all")
			} else {
				for _, q := range reqs {
					for {
						_, done, err := q.Test()
						r.Check(err, "test")
						if done {
							break
						}
					}
				}
			}
			if want := int64(size*it + size*(size-1)/2); small[0] != want {
				r.Errorf("iteration %d: small allreduce %d, want %d", it, small[0], want)
			}
			var sum int64
			for q := range size {
				sum += value(q, 19999)
			}
			if big[19999] != sum || !slices.Equal(bc, vec(1, 5000)) {
				r.Errorf("iteration %d: large allreduce or bcast wrong", it)
			}
			for q := range size {
				if all[q] != int64(q) {
					r.Errorf("allgather %v", all)
				}
			}
		}
	})
}

// A failure is reported at completion of a nonblocking collective, never
// when it starts.
func TestNonblockingFailure(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{2}, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 2 {
			r.Kill()
		}
		_, err := ranks.Recv(c, make([]byte, 1), 2, 1)
		procFailed(r, err, "see the death")
		q, err := coll.Iallreduce(c, nil, make([]float64, 10), coll.Sum[float64])
		if err != nil {
			r.Errorf("Iallreduce reported %v at initiation", err)
			return
		}
		_, err = q.Wait()
		procFailed(r, err, "Iallreduce at completion")
	})
}

// Members that finish a collective and finalize before the others enter
// it (a gather's senders, a bcast's root) are no failure: the late ones
// complete normally.
func TestFinalizeAfterCollective(t *testing.T) {
	type collective func(c *ranks.Comm, k int) error
	cases := map[string]collective{
		"gather": func(c *ranks.Comm, k int) error {
			return coll.Gather(c, make([]float64, k), make([]float64, k*c.Size()), 0)
		},
		"reduce": func(c *ranks.Comm, k int) error {
			return coll.Reduce(c, make([]float64, k), make([]float64, k), coll.Sum[float64], 0)
		},
		"bcast": func(c *ranks.Comm, k int) error { return coll.Bcast(c, make([]float64, k), 0) },
		"scatter": func(c *ranks.Comm, k int) error {
			return coll.Scatter(c, make([]float64, k*c.Size()), make([]float64, k), 0)
		},
	}
	for name, run := range cases {
		for _, k := range []int{4, 10000} { // above the shared lines: point-to-point steps
			t.Run(fmt.Sprintf("%s/%d", name, k), func(t *testing.T) {
				ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
					if r.Rank == 2 {
						// Enter last: once rank 1, which needs nothing
						// from rank 2 here, is done and has finalized.
						for r.World.Fates()[1].State != ranks.StateFinalized {
							r.Comm.Iprobe(ranks.AnySource, 999)
						}
					}
					r.Check(run(r.Comm, k), name)
				})
			})
		}
	}
}

// The small collectives' common path allocates nothing (the hot-path
// rule), with spinning members and with sleeping ones.
func TestSmallCollectivesDoNotAllocate(t *testing.T) {
	for _, opts := range []ranktest.Options{{N: 2, Cores: 2, Quiet: true}, {N: 3, Quiet: true}} {
		t.Run(fmt.Sprint(opts.N), func(t *testing.T) {
			ranktest.RunOpts(t, opts, func(r *ranktest.R) {
				c := r.Comm
				v := []float64{1}
				b := []int64{0, 0}
				mid := make([]int64, 100) // staged where members spin (opts.Cores)
				rv, gv := make([]int64, len(mid)), make([]int64, r.Size*len(mid))
				cases := []struct {
					name string
					f    func()
				}{
					{"Barrier", func() { r.Check(coll.Barrier(c), "barrier") }},
					{"Allreduce", func() { r.Check(coll.Allreduce(c, nil, v, coll.Sum[float64]), "allreduce") }},
					{"Bcast", func() { r.Check(coll.Bcast(c, b, 1), "bcast") }},
					{"Reduce", func() { r.Check(coll.Reduce(c, b, rv[:2], coll.Sum[int64], 0), "reduce") }},
					{"Gather", func() { r.Check(coll.Gather(c, b, gv[:r.Size*2], 0), "gather") }},
					{"Alltoall", func() { r.Check(coll.Alltoall(c, gv[:r.Size], rv[:r.Size]), "alltoall") }},
					// In place, the blocks used to be set aside in a new
					// slice at every call.
					{"Alltoall-in-place", func() { r.Check(coll.Alltoall(c, nil, gv[:r.Size]), "alltoall") }},
				}
				if opts.Cores > 0 {
					// Where members sleep these go by message, and a
					// member's 800 bytes that reach the root before its
					// receive are queued in memory of their own.
					cases = append(cases, []struct {
						name string
						f    func()
					}{
						{"Reduce-staged", func() { r.Check(coll.Reduce(c, mid, rv, coll.Sum[int64], 0), "reduce") }},
						{"Gather-staged", func() { r.Check(coll.Gather(c, mid, gv, 0), "gather") }},
					}...)
				}
				// Not testing.AllocsPerRun: it sets GOMAXPROCS to 1, which
				// the waits' slow path notices. A wait that goes past its
				// spin (the peer descheduled) may allocate; the common
				// path must not, so well under one allocation per call.
				var before, after runtime.MemStats
				for _, tc := range cases {
					tc.f()
					runtime.ReadMemStats(&before)
					const calls = 2000
					for range calls {
						tc.f()
					}
					runtime.ReadMemStats(&after)
					if n := float64(after.Mallocs-before.Mallocs) / calls; n > 0.05 {
						r.Errorf("%s: %.2f allocations per call, want 0", tc.name, n)
					}
				}
			})
		})
	}
}

// A communicator in a reused context slot starts from clean lines: the
// dissemination barrier's sequence words of the previous owner must not
// let a phase pass early (members that spin; the slot is reused at once).
func TestSlotReuseSpinning(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Cores: 3, Quiet: true}, func(r *ranktest.R) {
		for i := range 60 {
			d, err := r.Comm.Dup()
			r.Check(err, "dup")
			// A different number of phases each time, so that the old
			// sequence words are ahead of the new owner's.
			for k := range i % 5 {
				s, err := coll.AllreduceValue(d, int64(r.Rank+k), coll.Sum[int64])
				r.Check(err, "allreduce")
				if want := int64(3*k + 3); s != want {
					r.Fatalf("dup %d, allreduce %d: %d, want %d", i, k, s, want)
				}
			}
			v := []int64{int64(i)}
			if r.Rank != i%3 {
				v[0] = -1
			}
			r.Check(coll.Bcast(d, v, i%3), "bcast")
			if v[0] != int64(i) {
				r.Fatalf("dup %d: bcast gave %d", i, v[0])
			}
			r.Check(d.Free(), "free")
		}
	})
}

// The shared area of large reductions (big.go) goes with its
// communicator: Dup, a large Allreduce and Free in a loop grow neither
// the mappings nor the open descriptors of a rank.
func TestLargeAllreduceAreaFreed(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		count := func(path string) int {
			if strings.HasSuffix(path, "maps") {
				b, err := os.ReadFile(path)
				r.Check(err, "read maps")
				return strings.Count(string(b), "\n")
			}
			es, err := os.ReadDir(path)
			r.Check(err, "read fds")
			return len(es)
		}
		cycle := func() {
			d, err := r.Comm.Dup()
			r.Check(err, "dup")
			v := make([]float64, 3000) // 24 KiB: through the shared area
			v[2999] = float64(r.Rank)
			r.Check(coll.Allreduce(d, nil, v, coll.Sum[float64]), "allreduce")
			if v[2999] != 3 {
				r.Errorf("sum %v, want 3", v[2999])
			}
			r.Check(d.Free(), "free")
		}
		cycle()
		maps0, fds0 := count("/proc/self/maps"), count("/proc/self/fd")
		for range 200 {
			cycle()
		}
		maps1, fds1 := count("/proc/self/maps"), count("/proc/self/fd")
		if maps1 > maps0+8 || fds1 > fds0+2 {
			r.Errorf("after 200 cycles: %d mappings (from %d), %d descriptors (from %d)", maps1, maps0, fds1, fds0)
		}
	})
}

// Ranks that outnumber cores sleep in collectives, and a release makes a
// wake syscall only when the communicator's sleeper count says someone
// sleeps (job.Map.Sleepers). A wake-up lost to that check would end a
// sleep only by its timeout: here the timeout is 20 s, so no slow
// machine can reach it, and every rank must count none. With no yields
// every wait sleeps; with the default budget sleeps are rarer and race
// with the yields.
func TestNoLostWakeups(t *testing.T) {
	for _, yields := range []string{"0", ""} {
		t.Run("yields="+yields, func(t *testing.T) {
			env := []string{"SHMPI_SLEEP_TIMEOUT_MS=20000"}
			if yields != "" {
				env = append(env, "SHMPI_YIELDS="+yields)
			}
			ranktest.RunOpts(t, ranktest.Options{N: 5, Cores: 2, Quiet: true, Env: env}, func(r *ranktest.R) {
				c := r.Comm
				v := []int64{int64(r.Rank)}
				b := []int64{0}
				for i := range 1500 {
					r.Check(coll.Barrier(c), "barrier")
					r.Check(coll.Allreduce(c, []int64{int64(r.Rank)}, v, coll.Sum[int64]), "allreduce")
					if v[0] != 10 {
						r.Fatalf("iteration %d: allreduce gave %d, want 10", i, v[0])
					}
					b[0] = int64(i)
					r.Check(coll.Bcast(c, b, i%5), "bcast")
					if b[0] != int64(i) {
						r.Fatalf("iteration %d: bcast gave %d", i, b[0])
					}
				}
				if n := ext.SleepTimeouts(c); n != 0 {
					r.Errorf("%d sleeps ended by their timeout: a wake-up was lost", n)
				}
			})
		})
	}
}

// Allreduce contributions of different sizes give ErrCount at every
// member, whichever member reduces (each its own when they spin; the
// last to arrive for all when they sleep), and the communicator keeps
// working.
func TestAllreduceSizeMismatch(t *testing.T) {
	for _, cores := range []int{2, 3} {
		t.Run(fmt.Sprint("cores=", cores), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 3, Cores: cores, Quiet: true}, func(r *ranktest.R) {
				c := r.Comm
				for odd := range 3 {
					n := 2
					if r.Rank == odd {
						n = 1
					}
					err := coll.Allreduce(c, nil, make([]int32, n), coll.Sum[int32])
					if !errors.Is(err, ranks.ErrCount) {
						r.Fatalf("odd member %d: %v, want ErrCount", odd, err)
					}
					v := []int64{int64(r.Rank)}
					r.Check(coll.Allreduce(c, nil, v, coll.Sum[int64]), "allreduce after the mismatch")
					if v[0] != 3 {
						r.Fatalf("allreduce after the mismatch gave %d, want 3", v[0])
					}
				}
			})
		})
	}
}

// Reduce through the shared area with one member's length different:
// every member gets ErrCount (the announce phase shows the lengths), and
// the next Reduce works.
func TestReduceSizeMismatchLarge(t *testing.T) {
	for _, cores := range []int{2, 3} {
		t.Run(fmt.Sprint("cores=", cores), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 3, Cores: cores, Quiet: true}, func(r *ranktest.R) {
				c := r.Comm
				const n = 20000 // 160 KB of int64: above Reduce's 128 KiB
				for odd := range 3 {
					m := n
					if r.Rank == odd {
						m = n + 1
					}
					err := coll.Reduce(c, make([]int64, m), make([]int64, m), coll.Sum[int64], 1)
					if !errors.Is(err, ranks.ErrCount) {
						r.Fatalf("odd member %d: %v, want ErrCount", odd, err)
					}
					v := make([]int64, n)
					for i := range v {
						v[i] = int64(r.Rank + i)
					}
					got := make([]int64, n)
					r.Check(coll.Reduce(c, v, got, coll.Sum[int64], 1), "reduce after the mismatch")
					if r.Rank == 1 && (got[0] != 3 || got[n-1] != int64(3+3*(n-1))) {
						r.Fatalf("reduce after the mismatch gave %d ... %d", got[0], got[n-1])
					}
				}
			})
		})
	}
}
