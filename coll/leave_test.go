package coll_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// A collective never waits for a live member that left it because it
// learned of a failure first (spec 15.2.2, DESIGN rule 4). Rank 2 dies
// while ranks 1 and 3 are inside a collective whose steps wait for rank
// 0; rank 0 saw the death before it entered, so its call returns
// ErrProcFailed at once and sends nothing. Ranks 1 and 3 must return too
// (ErrProcFailed, or success where their part did not need rank 0), and
// the survivors then shrink and go on.
func TestCollectiveLivePeerLeaves(t *testing.T) {
	type collective struct {
		name string
		run  func(c *ranks.Comm, me int) error
	}
	const big = 100000
	cases := []collective{
		{"bcast-large", func(c *ranks.Comm, me int) error { return coll.Bcast(c, make([]float64, big), 0) }},
		{"bcast-medium", func(c *ranks.Comm, me int) error { return coll.Bcast(c, make([]byte, 3000), 0) }},
		// Root 3 does not know of the death and sends to rank 0, which
		// left: 32 KiB blocks go by rendezvous where members sleep
		// (ranks' pullMin), and such a send must not wait for rank 0.
		// Rank 2 dies once rank 3 is about to enter.
		{"bcast-pull-root3", func(c *ranks.Comm, me int) error { return coll.Bcast(c, make([]byte, 32<<10), 3) }},
		{"scatter-pull-root3", func(c *ranks.Comm, me int) error {
			return coll.Scatter(c, make([]byte, 4*32<<10), make([]byte, 32<<10), 3)
		}},
		{"scatter-small", func(c *ranks.Comm, me int) error {
			return coll.Scatter(c, make([]int32, 4), make([]int32, 1), 0)
		}},
		{"scatter-large", func(c *ranks.Comm, me int) error {
			return coll.Scatter(c, make([]float64, 4*big), make([]float64, big), 0)
		}},
		{"scatterv", func(c *ranks.Comm, me int) error {
			return coll.Scatterv(c, make([]int32, 40), []int{10, 10, 10, 10}, []int{0, 10, 20, 30}, make([]int32, 10), 0)
		}},
		{"gather-large", func(c *ranks.Comm, me int) error {
			return coll.Gather(c, make([]float64, big), make([]float64, 4*big), 0)
		}},
		{"reduce-large", func(c *ranks.Comm, me int) error {
			return coll.Reduce(c, make([]float64, big), make([]float64, big), coll.Sum[float64], 0)
		}},
		{"allgather-large", func(c *ranks.Comm, me int) error {
			return coll.Allgather(c, make([]float64, big), make([]float64, 4*big))
		}},
		{"alltoall-large", func(c *ranks.Comm, me int) error {
			return coll.Alltoall(c, make([]float64, 4*big), make([]float64, 4*big))
		}},
		{"allreduce-large", func(c *ranks.Comm, me int) error {
			return coll.Allreduce(c, nil, make([]float64, big), coll.Sum[float64])
		}},
		{"scan-large", func(c *ranks.Comm, me int) error {
			return coll.Scan(c, make([]float64, big), make([]float64, big), coll.Sum[float64])
		}},
	}
	for _, tc := range cases {
		for _, spinning := range []bool{false, true} {
			name, cores := tc.name, 0
			if spinning {
				name, cores = name+"/spinning", 4
			}
			goFrom := 1 // the member about to enter when rank 2 dies
			if strings.HasSuffix(tc.name, "-root3") {
				goFrom = 3
			}
			t.Run(name, func(t *testing.T) {
				o := ranktest.Options{N: 4, Cores: cores, Dies: []int{2}, Quiet: true}
				ranktest.RunOpts(t, o, func(r *ranktest.R) {
					c := r.Comm
					var err error
					switch r.Rank {
					case 2:
						// Dies once goFrom is about to enter the collective.
						_, err := ranks.Recv(c, make([]byte, 1), goFrom, 77)
						r.Check(err, "go")
						r.Kill()
					case 0:
						_, err := ranks.Recv(c, make([]byte, 1), 2, 78)
						if !errors.Is(err, ranks.ErrProcFailed) {
							r.Fatalf("waiting for rank 2's death: %v", err)
						}
						err = tc.run(c, 0)
						if !errors.Is(err, ranks.ErrProcFailed) {
							r.Errorf("%s at the member that knew of the death: %v, want ErrProcFailed", tc.name, err)
						}
					case 1, 3:
						if r.Rank == goFrom {
							r.Check(ranks.Send(c, []byte{1}, 2, 77), "go")
						}
						err = tc.run(c, r.Rank)
					}
					if err != nil && !errors.Is(err, ranks.ErrProcFailed) {
						r.Errorf("%s: %v, want nil or ErrProcFailed", tc.name, err)
					}
					// Later collectives fail at once, everywhere.
					if err := coll.Barrier(c); !errors.Is(err, ranks.ErrProcFailed) {
						r.Errorf("barrier after the failure: %v", err)
					}
					s, err := ulfm.Shrink(c)
					r.Check(err, "shrink")
					v, err := coll.AllreduceValue(s, 1, coll.Sum[int])
					r.Check(err, "allreduce on the shrunk communicator")
					if v != 3 {
						r.Errorf("allreduce on the shrunk communicator: %d, want 3", v)
					}
					r.Check(s.Free(), "free")
				})
			})
		}
	}
}

// A member that finalizes without joining a collective (an erroneous
// program: MPI's Finalize is collective, ours is local) leaves the others
// with ErrPeerFinalized, not a hang; one that did its part of the
// collective before it finalized leaves them to finish normally.
func TestCollectiveMemberFinalized(t *testing.T) {
	for _, cores := range []int{0, 3} {
		t.Run(fmt.Sprint("cores=", cores), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 3, Cores: cores, Quiet: true}, func(r *ranktest.R) {
				c := r.Comm
				// Rank 2 takes part in a barrier and a broadcast it roots,
				// then finalizes.
				r.Check(coll.Barrier(c), "barrier")
				b := []int64{int64(r.Rank)}
				r.Check(coll.Bcast(c, b, 2), "bcast")
				if b[0] != 2 {
					r.Errorf("bcast from the member about to finalize: %d", b[0])
				}
				if r.Rank == 2 {
					r.Check(r.World.Finalize(), "finalize")
					return
				}
				for i, f := range []func() error{
					func() error { return coll.Barrier(c) },
					func() error { _, err := coll.AllreduceValue(c, 1, coll.Sum[int]); return err },
					func() error { return coll.Allgather(c, make([]int, 100), make([]int, 300)) },
				} {
					if err := f(); !errors.Is(err, ranks.ErrPeerFinalized) {
						r.Errorf("collective %d with a finalized member: %v, want ErrPeerFinalized", i, err)
					}
				}
			})
		})
	}
}
