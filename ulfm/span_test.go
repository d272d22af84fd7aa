package ulfm_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// The agreement by messages (span.go), which communicators that span
// nodes use, run here on one node (ulfm.ByMessages) so that members can
// die at chosen points of it. The node package runs it across nodes.

// Without failures: the AND of the flags, many rounds, also on a revoked
// communicator; Shrink gives everyone.
func TestAgreeByMessagesNoFailure(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 5, Quiet: true}, func(r *ranktest.R) {
		ulfm.ByMessages()
		c := r.Comm
		for it := range 100 {
			v, err := ulfm.Agree(c, ^(1 << ((r.Rank + it) % 8)))
			r.Check(err, "agree")
			want := ^0
			for q := range r.Size {
				want &= ^(1 << ((q + it) % 8))
			}
			if v != want {
				r.Fatalf("round %d: %b, want %b", it, v, want)
			}
		}
		nc, err := ulfm.Shrink(c)
		r.Check(err, "shrink")
		if nc.Size() != r.Size || nc.Rank() != r.Rank {
			r.Fatalf("shrink: rank %d of %d", nc.Rank(), nc.Size())
		}
		r.Check(coll.Barrier(nc), "barrier on the result")
		r.Check(ulfm.Revoke(c), "revoke")
		v, err := ulfm.Agree(c, 6)
		r.Check(err, "agree on a revoked communicator")
		if v != 6 {
			r.Fatalf("agree on a revoked communicator: %d", v)
		}
		nc2, err := ulfm.Shrink(c)
		r.Check(err, "shrink of a revoked communicator")
		r.Check(coll.Barrier(nc2), "barrier on the result")
	})
}

// A member dies at each point of an agreement round: the coordinator
// (rank 0) after collecting and deciding, or after proposing (every
// member holds the proposal, none has the commit); a member after
// contributing or while it holds a proposal; and two coordinators in a
// row. Every survivor returns the same value and error, and Shrink then
// gives every survivor the same group: the survivors.
func TestAgreeByMessagesDeath(t *testing.T) {
	cases := []struct {
		victims []int
		stage   string
	}{
		{[]int{0}, "contributed"}, {[]int{0}, "decided"}, {[]int{0}, "proposed"},
		{[]int{2}, "contributed"}, {[]int{2}, "holds"},
		{[]int{0, 1}, "decided"}, {[]int{0, 1}, "proposed"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.victims, tc.stage), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 5, Dies: tc.victims, Quiet: true}, func(r *ranktest.R) {
				ulfm.ByMessages()
				c := r.Comm
				victim := slices.Contains(tc.victims, r.Rank)
				if victim {
					ulfm.DieAt(tc.stage)
				}
				live := without(5, tc.victims...)
				v, err := ulfm.Agree(c, ^(1 << r.Rank))
				if victim {
					r.Kill() // it never reached its stage
				}
				if err != nil && !errors.Is(err, ranks.ErrProcFailed) {
					r.Fatalf("agree: %v", err)
				}
				for _, q := range live {
					if v&(1<<q) != 0 {
						r.Errorf("value %b has the bit of survivor %d set", v, q)
					}
				}
				uniform(r, c, live, v, err, 100)
				nc, err := ulfm.Shrink(c)
				r.Check(err, "shrink")
				g, _ := nc.Group()
				if w := g.WorldRanks(); !slices.Equal(w, live) {
					r.Fatalf("shrink gave %v, want %v", w, live)
				}
				sum := []int{r.Rank}
				r.Check(coll.Allreduce(nc, nil, sum, coll.Sum), "allreduce on the result")
				want := 0
				for _, q := range live {
					want += q
				}
				if sum[0] != want {
					r.Errorf("allreduce on the result: %d, want %d", sum[0], want)
				}
			})
		})
	}
}

// A member dies inside Shrink: in its first round, as the coordinator
// with a proposal out, or after the creation (before the round that
// checks it). The survivors get the same group, which a second Shrink
// rids of the dead if it still has them.
func TestShrinkByMessagesDeath(t *testing.T) {
	cases := []struct {
		victim int
		stage  string
	}{
		{0, "contributed"}, {0, "proposed"}, {0, "created"}, {3, "holds"}, {3, "created"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.victim, tc.stage), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 5, Dies: []int{1, tc.victim}, Quiet: true}, func(r *ranktest.R) {
				ulfm.ByMessages()
				if r.Rank == 1 {
					r.Kill()
				}
				if r.Rank == tc.victim {
					ulfm.DieAt(tc.stage)
				}
				live := without(5, 1, tc.victim)
				nc, err := ulfm.Shrink(r.Comm)
				r.Check(err, "shrink")
				if r.Rank == tc.victim {
					r.Kill() // it did not reach its stage
				}
				g, _ := nc.Group()
				w := g.WorldRanks()
				for _, q := range live {
					if !slices.Contains(w, q) {
						r.Errorf("survivor %d missing from %v", q, w)
					}
				}
				// Every survivor's group is live[0]'s.
				if r.Rank != live[0] {
					r.Check(ranks.Send(r.Comm, w, live[0], 1), "send group")
				} else {
					for _, q := range live[1:] {
						other := make([]int, 5)
						st, err := ranks.Recv(r.Comm, other, q, 1)
						r.Check(err, "recv group")
						if !slices.Equal(other[:st.Count], w) {
							r.Errorf("rank %d got group %v, rank %d %v", q, other[:st.Count], live[0], w)
						}
					}
				}
				for !slices.Equal(w, live) {
					nc, err = ulfm.Shrink(nc)
					r.Check(err, "shrink again")
					g, _ = nc.Group()
					w = g.WorldRanks()
				}
				r.Check(coll.Barrier(nc), "barrier on the result")
			})
		})
	}
}
