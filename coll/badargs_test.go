package coll_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// Allreduce contributions of different lengths give ErrCount at every
// member, whichever paths the lengths choose (inline, staged, the shared
// area of large reductions; lengths on either side of each boundary),
// with members that spin and that sleep, on communicators with and
// without staging scratch; the communicator keeps working.
func TestAllreduceMismatchEveryPath(t *testing.T) {
	pairs := [][2]int{
		{1, 2},           // inline
		{3, 4},           // 24 bytes inline against 32 staged
		{200, 300},       // staged
		{256, 257},       // 2048 bytes staged against 2056 through the shared area
		{30000, 30001},   // the shared area: one element more
		{100000, 400000}, // the shared area: several chunks more
	}
	for _, cores := range []int{0, 3} {
		for _, noStaging := range []bool{false, true} {
			name := fmt.Sprintf("cores=%d/staging=%v", cores, !noStaging)
			t.Run(name, func(t *testing.T) {
				ranktest.RunOpts(t, ranktest.Options{N: 3, Cores: cores, Quiet: true}, func(r *ranktest.R) {
					c := r.Comm
					var dups []*ranks.Comm
					if noStaging {
						// Past the context slots that have scratch.
						for range 8 {
							d, err := r.Comm.Dup()
							r.Check(err, "dup")
							dups = append(dups, d)
						}
						c = dups[7]
					}
					for _, p := range pairs {
						for odd := range 3 {
							n := p[0]
							if r.Rank == odd {
								n = p[1]
							}
							err := coll.Allreduce(c, nil, make([]int64, n), coll.Sum[int64])
							if !errors.Is(err, ranks.ErrCount) {
								r.Errorf("lengths %v, member %d with %d: %v, want ErrCount", p, odd, p[1], err)
							}
							v := []int64{int64(r.Rank)}
							r.Check(coll.Allreduce(c, nil, v, coll.Sum[int64]), "allreduce after the mismatch")
							if v[0] != 3 {
								r.Fatalf("allreduce after the mismatch gave %d, want 3", v[0])
							}
						}
					}
					for _, d := range dups {
						r.Check(d.Free(), "free")
					}
				})
			})
		}
	}
}

// Rooted collectives whose members disagree on the length (MPICH's
// errors/coll/bcastlength and reducelength): nobody hangs, whichever
// paths the lengths choose; a Bcast member whose length differs from the
// root's, and a Reduce or Gather root that gets a block of another
// length, return ErrCount or ErrTruncate; the communicator keeps working.
// Members that sleep (told they have one core) took their paths by their
// own lengths and hung when the root's took the other one (the counter
// against a message); now they go by message at every length. Members
// that spin still choose by length, and a Reduce or Gather whose lengths
// straddle the inline limit there is not detected (a known gap).
func TestRootedMismatch(t *testing.T) {
	pairs := [][2]int{
		{1, 10},    // inline against a message where members sleep, against staged where they spin
		{10, 1},    // the same the other way round
		{3, 4},     // 24 bytes against 32
		{200, 300}, // by message where members sleep, staged where they spin
		{300, 200},
		{1000, 1100}, // by message where members sleep (where they spin, staged against a message: not run)
	}
	const root = 1
	mismatch := func(err error) bool { return errors.Is(err, ranks.ErrCount) || errors.Is(err, ranks.ErrTruncate) }
	for _, cores := range []int{1, 3} {
		t.Run(fmt.Sprintf("cores=%d", cores), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 3, Cores: cores, Quiet: true}, func(r *ranktest.R) {
				c := r.Comm
				for _, p := range pairs {
					// The root has p[0], everyone else p[1].
					n := p[1]
					if r.Rank == root {
						n = p[0]
					}
					// Where members spin, lengths that straddle the
					// staging size (8 KiB in this job) still hang:
					// members in the staged phase wait for one that sent
					// a message (a known gap, docs/design.md).
					if cores > 1 && max(p[0], p[1])*8 > 8192 {
						continue
					}
					err := coll.Bcast(c, make([]int64, n), root)
					if r.Rank != root && !mismatch(err) {
						r.Errorf("Bcast, root %d elements, member %d: %v, want ErrCount or ErrTruncate", p[0], p[1], err)
					}
					// Member 2 alone has p[1].
					n = p[0]
					if r.Rank == 2 {
						n = p[1]
					}
					err = coll.Reduce(c, make([]int64, n), make([]int64, max(p[0], p[1])), coll.Sum[int64], root)
					if r.Rank == root && !mismatch(err) {
						r.Errorf("Reduce, member 2 with %d elements against %d: root got %v, want ErrCount or ErrTruncate", p[1], p[0], err)
					}
					err = coll.Gather(c, make([]int64, n), make([]int64, 3*max(p[0], p[1])), root)
					if r.Rank == root && !mismatch(err) {
						r.Errorf("Gather, member 2 with %d elements against %d: root got %v, want ErrCount or ErrTruncate", p[1], p[0], err)
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

// A member whose arguments are invalid (those only the root sees, and
// local ones of any member) still releases the others: it returns its
// error, every other member returns nil or an error (the faulty
// member's class where its part depended on the faulty one), nobody
// hangs, and the communicator keeps working.
func TestBadArgumentsReleaseOthers(t *testing.T) {
	type bad struct {
		name string
		// run returns the error of this member; who is the faulty one.
		run   func(c *ranks.Comm, me, who int) error
		class error
		// depends: the others' parts need the faulty member's, so they
		// must return an error too.
		depends bool
		// rootOnly: only the root's arguments are used.
		rootOnly bool
	}
	const root = 1
	short := func(me, who, n int) int {
		if me == who {
			return n - 1
		}
		return n
	}
	cases := []bad{
		// The others' parts of a Gather or Reduce need nothing of the
		// root's: they send (where members sleep) or write their data one
		// way (where they spin) and are done.
		{"gather-small-short-recv", func(c *ranks.Comm, me, who int) error {
			return coll.Gather(c, make([]int32, 2), make([]int32, short(me, who, 8)), root)
		}, ranks.ErrBuffer, false, true},
		{"gather-large-short-recv", func(c *ranks.Comm, me, who int) error {
			return coll.Gather(c, make([]float64, 50000), make([]float64, short(me, who, 200000)), root)
		}, ranks.ErrBuffer, false, true},
		{"gatherv-negative-count", func(c *ranks.Comm, me, who int) error {
			counts := []int{3, 3, 3, 3}
			if me == who {
				counts[2] = -1
			}
			return coll.Gatherv(c, make([]int32, 3), make([]int32, 12), counts, []int{0, 3, 6, 9}, root)
		}, ranks.ErrCount, false, true},
		{"reduce-small-short-recv", func(c *ranks.Comm, me, who int) error {
			return coll.Reduce(c, make([]int64, 2), make([]int64, short(me, who, 2)), coll.Sum[int64], root)
		}, ranks.ErrBuffer, false, true},
		{"reduce-large-short-recv", func(c *ranks.Comm, me, who int) error {
			return coll.Reduce(c, make([]float64, 50000), make([]float64, short(me, who, 50000)), coll.Sum[float64], root)
		}, ranks.ErrBuffer, false, true},
		{"scatter-small-short-send", func(c *ranks.Comm, me, who int) error {
			return coll.Scatter(c, make([]int32, short(me, who, 8)), make([]int32, 2), root)
		}, ranks.ErrBuffer, true, true},
		{"scatter-large-short-send", func(c *ranks.Comm, me, who int) error {
			return coll.Scatter(c, make([]float64, short(me, who, 200000)), make([]float64, 50000), root)
		}, ranks.ErrBuffer, true, true},
		{"scatterv-negative-count", func(c *ranks.Comm, me, who int) error {
			counts := []int{3, 3, 3, 3}
			if me == who {
				counts[0] = -3
			}
			return coll.Scatterv(c, make([]int32, 12), counts, []int{0, 3, 6, 9}, make([]int32, 3), root)
		}, ranks.ErrCount, true, true},
		{"allreduce-nil-op", func(c *ranks.Comm, me, who int) error {
			op := coll.Sum[int64]
			if me == who {
				op = nil
			}
			return coll.Allreduce(c, nil, make([]int64, 2), op)
		}, ranks.ErrArg, true, false},
		{"allreduce-large-buffers-differ", func(c *ranks.Comm, me, who int) error {
			return coll.Allreduce(c, make([]float64, 50000), make([]float64, short(me, who, 50000)), coll.Sum[float64])
		}, ranks.ErrBuffer, true, false},
		{"allgather-small-short-recv", func(c *ranks.Comm, me, who int) error {
			return coll.Allgather(c, make([]int32, 2), make([]int32, short(me, who, 8)))
		}, ranks.ErrBuffer, true, false},
		{"allgather-staged-short-recv", func(c *ranks.Comm, me, who int) error {
			return coll.Allgather(c, make([]int32, 100), make([]int32, short(me, who, 400)))
		}, ranks.ErrBuffer, true, false},
		{"allgather-large-short-recv", func(c *ranks.Comm, me, who int) error {
			return coll.Allgather(c, make([]float64, 50000), make([]float64, short(me, who, 200000)))
		}, ranks.ErrBuffer, true, false},
		{"allgatherv-bad-displacement", func(c *ranks.Comm, me, who int) error {
			displs := []int{0, 3, 6, 9}
			if me == who {
				displs[3] = 11
			}
			return coll.Allgatherv(c, make([]int32, 3), make([]int32, 12), []int{3, 3, 3, 3}, displs)
		}, ranks.ErrCount, true, false},
		{"alltoall-bad-length", func(c *ranks.Comm, me, who int) error {
			return coll.Alltoall(c, make([]float64, short(me, who, 40000)), make([]float64, 40000))
		}, ranks.ErrBuffer, true, false},
		{"alltoallv-bad-count", func(c *ranks.Comm, me, who int) error {
			counts := []int{2, 2, 2, 2}
			if me == who {
				counts[0] = 9
			}
			return coll.Alltoallv(c, make([]int32, 8), counts, []int{0, 2, 4, 6}, make([]int32, 8), []int{2, 2, 2, 2}, []int{0, 2, 4, 6})
		}, ranks.ErrCount, true, false},
		{"reduce-scatter-negative-count", func(c *ranks.Comm, me, who int) error {
			counts := []int{2, 2, 2, 2}
			if me == who {
				counts[1] = -2
			}
			return coll.ReduceScatter(c, make([]int64, 8), make([]int64, 2), counts, coll.Sum[int64])
		}, ranks.ErrCount, true, false},
		{"scan-small-nil-op", func(c *ranks.Comm, me, who int) error {
			op := coll.Sum[int64]
			if me == who {
				op = nil
			}
			return coll.Scan(c, make([]int64, 2), make([]int64, 2), op)
		}, ranks.ErrArg, true, false},
		{"scan-large-nil-op", func(c *ranks.Comm, me, who int) error {
			op := coll.Sum[float64]
			if me == who {
				op = nil
			}
			return coll.Scan(c, make([]float64, 50000), make([]float64, 50000), op)
		}, ranks.ErrArg, false, false},
	}
	for _, tc := range cases {
		for _, cores := range []int{0, 4} {
			t.Run(fmt.Sprintf("%s/cores=%d", tc.name, cores), func(t *testing.T) {
				ranktest.RunOpts(t, ranktest.Options{N: 4, Cores: cores, Quiet: true}, func(r *ranktest.R) {
					c := r.Comm
					// The faulty member: the root where only the root's
					// arguments matter, else another one.
					faulty := []int{root, 2}
					if tc.rootOnly {
						faulty = faulty[:1]
					}
					for _, who := range faulty {
						err := tc.run(c, r.Rank, who)
						switch {
						case r.Rank == who && !errors.Is(err, tc.class):
							r.Errorf("faulty member %d: %v, want %v", who, err, tc.class)
						case r.Rank != who && err != nil && !errors.Is(err, tc.class) && !errors.Is(err, ranks.ErrCount):
							r.Errorf("member %d with good arguments (member %d faulty): %v", r.Rank, who, err)
						case r.Rank != who && err == nil && tc.depends && (who == 2 || r.Rank != root):
							// Every member whose part depended on the
							// faulty one hears of it.
							if !(tc.name == "scan-small-nil-op" && r.Rank < who) {
								r.Errorf("member %d (member %d faulty): nil, want an error", r.Rank, who)
							}
						}
						v, err := coll.AllreduceValue(c, 1, coll.Sum[int])
						r.Check(err, "allreduce after the bad call")
						if v != 4 {
							r.Fatalf("allreduce after the bad call: %d, want 4", v)
						}
					}
				})
			})
		}
	}
}

// Zero-size element types are allowed, as MPI allows zero-size datatypes
// (MPICH coll/bcastzerotype.c): every collective moves nothing and
// succeeds, and point-to-point counts them as zero.
func TestZeroSizeTypes(t *testing.T) {
	type empty struct{}
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		c, n := r.Comm, r.Size
		nop := func(inout, in []empty) {}
		r.Check(coll.Bcast(c, make([]empty, 5), 0), "bcast")
		r.Check(coll.Allreduce(c, make([]empty, 5), make([]empty, 5), nop), "allreduce")
		r.Check(coll.Allreduce(c, nil, make([]empty, 1000), nop), "allreduce in place")
		r.Check(coll.Reduce(c, make([]empty, 5), make([]empty, 5), nop, 1), "reduce")
		r.Check(coll.Allgather(c, make([]empty, 5), make([]empty, 5*n)), "allgather")
		r.Check(coll.Gather(c, make([]empty, 5), make([]empty, 5*n), 0), "gather")
		r.Check(coll.Scatter(c, make([]empty, 5*n), make([]empty, 5), 2), "scatter")
		r.Check(coll.Alltoall(c, make([]empty, 3*n), make([]empty, 3*n)), "alltoall")
		r.Check(coll.Scan(c, make([]empty, 5), make([]empty, 5), nop), "scan")
		r.Check(coll.ReduceScatterBlock(c, make([]empty, 2*n), make([]empty, 2), nop), "reduce-scatter")
		next, prev := (r.Rank+1)%n, (r.Rank+n-1)%n
		st, err := ranks.Sendrecv(c, make([]empty, 7), next, 1, make([]empty, 7), prev, 1)
		r.Check(err, "sendrecv")
		if st.Count != 0 || ranks.Count[empty](st) != 0 {
			r.Errorf("count of zero-size elements: %d, %d; want 0", st.Count, ranks.Count[empty](st))
		}
	})
}
