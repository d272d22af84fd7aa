package ranks_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// crossCheck sends, on each communicator i of cs, i*1000+rank to every
// other member, then receives from each: a member whose i-th
// communicator is another member's j-th gets the wrong number (or its
// receive stays unmatched and the deadline names it).
func crossCheck(r *ranktest.R, cs []*ranks.Comm) {
	var reqs []*ranks.Request
	for i, c := range cs {
		for p := range c.Size() {
			if p != c.Rank() {
				rq, err := ranks.Isend(c, []int{i*1000 + c.Rank()}, p, 5)
				r.Check(err, "isend")
				reqs = append(reqs, rq)
			}
		}
	}
	for i, c := range cs {
		for p := range c.Size() {
			if p == c.Rank() {
				continue
			}
			got := make([]int, 1)
			_, err := ranks.Recv(c, got, p, 5)
			r.Check(err, "recv")
			if got[0] != i*1000+p {
				r.Errorf("communicator %d: got %d from rank %d, want %d", i, got[0], p, i*1000+p)
			}
		}
	}
	r.Check(ranks.WaitAll(reqs, nil), "sends")
}

// Several Idups outstanding on one parent, with a nonblocking barrier,
// a blocking Dup, a blocking allreduce, an IdupWithInfo and a blocking
// Split among them: every new communicator works, they are distinct and
// the same one at every member, attributes are copied when Idup is
// called, and only IdupWithInfo's has hints.
func TestIdupOutstanding(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Quiet: true}, func(r *ranktest.R) {
		p, err := r.Comm.Dup()
		r.Check(err, "dup")
		var copies atomic.Int32
		k := ranks.NewKeyval(ranks.KeyvalFuncs{Copy: func(old *ranks.Comm, k ranks.Keyval, v any) (any, bool, error) {
			copies.Add(1)
			return v, true, nil
		}})
		r.Check(p.SetAttr(k, "v0"), "set")

		var outs [5]*ranks.Comm
		var reqs []*ranks.Request
		idup := func(i int, info *ranks.Info) {
			var rq *ranks.Request
			var err error
			if info != nil {
				rq, err = p.IdupWithInfo(info, &outs[i])
			} else {
				rq, err = p.Idup(&outs[i])
			}
			r.Check(err, "idup")
			reqs = append(reqs, rq)
		}
		idup(0, nil)
		if n := copies.Load(); n != 1 {
			r.Errorf("%d copies once Idup returned; want 1", n)
		}
		r.Check(p.SetAttr(k, "v1"), "set") // later values are not the first Idup's
		idup(1, nil)
		bar, err := coll.Ibarrier(p)
		r.Check(err, "ibarrier")
		reqs = append(reqs, bar)
		outs[2], err = p.Dup()
		r.Check(err, "dup while idups are outstanding")
		sum, err := coll.AllreduceValue(p, r.Rank, coll.Sum[int])
		r.Check(err, "allreduce")
		if sum != r.Size*(r.Size-1)/2 {
			r.Errorf("allreduce %d", sum)
		}
		in := ranks.NewInfo()
		r.Check(in.Set("mpi_assert_no_any_source", "true"), "set")
		idup(3, in)
		idup(4, nil)
		half, err := p.Split(r.Rank%2, -r.Rank)
		r.Check(err, "split while idups are outstanding")
		r.Check(ranks.WaitAll(reqs, nil), "wait")
		if n := copies.Load(); n != 5 {
			r.Errorf("%d copies; want 5", n)
		}

		all := append(outs[:], half)
		for i, c := range outs {
			if c == nil {
				r.Fatalf("Idup %d gave no communicator", i)
			}
			if cmp, err := ranks.Compare(p, c); err != nil || cmp != ranks.Congruent {
				r.Errorf("communicator %d: Compare %d %v", i, cmp, err)
			}
			for j := range i {
				if outs[j] == c {
					r.Errorf("communicators %d and %d are the same", j, i)
				}
			}
			v, ok, err := c.Attr(k)
			want := "v1"
			if i == 0 {
				want = "v0"
			}
			if err != nil || !ok || v != want {
				r.Errorf("communicator %d: attribute %v %v %v; want %s", i, v, ok, err, want)
			}
			h := hints(r, c)
			if h["mpi_assert_no_any_source"] != fmt.Sprint(i == 3) {
				r.Errorf("communicator %d: hints %v", i, h)
			}
		}
		if half.Size() != 2 || half.Rank() != 1-r.Rank/2 {
			r.Errorf("split: size %d rank %d", half.Size(), half.Rank())
		}
		crossCheck(r, all)
		// The new ones collect too.
		for i, c := range outs {
			s, err := coll.AllreduceValue(c, i, coll.Sum[int])
			r.Check(err, "allreduce on a new communicator")
			if s != i*r.Size {
				r.Errorf("allreduce on %d: %d", i, s)
			}
		}
		for _, c := range all {
			r.Check(c.Free(), "free")
		}
		r.Check(p.Free(), "free")
	})
}

// Idups queued faster than they run, then waited for in reverse order.
func TestIdupMany(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		const n = 40
		outs := make([]*ranks.Comm, n)
		reqs := make([]*ranks.Request, n)
		for i := range outs {
			var err error
			reqs[i], err = r.Comm.Idup(&outs[i])
			r.Check(err, "idup")
		}
		for i := n - 1; i >= 0; i-- {
			_, err := reqs[i].Wait()
			r.Check(err, "wait")
		}
		crossCheck(r, outs)
		for _, c := range outs {
			r.Check(c.Free(), "free")
		}
	})
}

// The parent may be freed while its Idup runs: the Idup completes, and
// the parent's context slot is given back afterwards.
func TestIdupFreeParent(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		all := []int{0, 1, 2}
		settleAmong(r, all)
		before := r.World.FreeContexts()
		settleAmong(r, all)
		p, err := r.Comm.Dup()
		r.Check(err, "dup")
		var a, b *ranks.Comm
		ra, err := p.Idup(&a)
		r.Check(err, "idup")
		rb, err := p.Idup(&b)
		r.Check(err, "idup")
		r.Check(p.Free(), "free the parent")
		if _, err := p.Idup(&a); !errors.Is(err, ranks.ErrComm) {
			r.Errorf("Idup of a freed parent: %v", err)
		}
		r.Check(ranks.WaitAll([]*ranks.Request{ra, rb}, nil), "wait")
		crossCheck(r, []*ranks.Comm{a, b})
		r.Check(a.Free(), "free")
		r.Check(b.Free(), "free")
		settleAmong(r, all)
		if after := r.World.FreeContexts(); after != before {
			r.Errorf("free context slots: %d before, %d after", before, after)
		}
	})
}

// A member or the leader dies while Idups are outstanding: every Idup
// completes, with a communicator or ErrProcFailed (none if the leader
// died as it allocated the first), and no context slot leaks.
func TestIdupDeath(t *testing.T) {
	cases := []struct {
		name   string
		victim int
		when   string // "before": dies before the Idups; "allocated": in the first, after allocating; "after": once it started them
	}{
		{"member-before", 2, "before"},
		{"member-after-starting", 2, "after"},
		{"leader-allocated", 0, "allocated"},
		{"leader-after-starting", 0, "after"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := ranktest.Options{N: 4, Dies: []int{tc.victim}, Quiet: true}
			ranktest.RunOpts(t, o, func(r *ranktest.R) {
				var live []int
				for i := range r.Size {
					if i != tc.victim {
						live = append(live, i)
					}
				}
				base := job.MaxContexts - 1 // all but the world's
				me := r.Rank == tc.victim
				if me && tc.when == "before" {
					r.Kill()
				}
				if me && tc.when == "allocated" {
					ranks.DieAtStage("allocated")
				}
				if tc.when == "before" {
					_, err := ranks.Recv(r.Comm, make([]byte, 1), tc.victim, 1)
					procFailed(r, err, tc.victim, "wait for the death")
				}
				// Each Idup copies the value; it is deleted from a
				// communicator that Free frees, or with nil if the Idup
				// failed.
				var onNil, onComm atomic.Int32
				k := ranks.NewKeyval(ranks.KeyvalFuncs{Copy: ranks.DupCopy, Delete: func(c *ranks.Comm, _ ranks.Keyval, _ any) error {
					if c == nil {
						onNil.Add(1)
					} else {
						onComm.Add(1)
					}
					return nil
				}})
				r.Check(r.Comm.SetAttr(k, 1), "set")
				var outs [3]*ranks.Comm
				var reqs []*ranks.Request
				for i := range outs {
					rq, err := r.Comm.Idup(&outs[i])
					r.Check(err, "idup") // never a failure at initiation
					reqs = append(reqs, rq)
				}
				if me {
					r.Kill()
				}
				failed := int32(0)
				for i, rq := range reqs {
					_, err := rq.Wait()
					if err != nil {
						failed++
					}
					switch {
					case err == nil && outs[i] != nil:
						if tc.when == "allocated" {
							// Its leader died before telling anyone.
							r.Errorf("Idup %d led by a dead rank succeeded", i)
						}
						r.Check(outs[i].Free(), "free")
					case errors.Is(err, ranks.ErrProcFailed) && outs[i] == nil:
					default:
						r.Errorf("Idup %d: %v %v, want a communicator or ErrProcFailed", i, outs[i], err)
					}
				}
				if onNil.Load()+onComm.Load() != int32(len(outs)) || onNil.Load() != failed {
					r.Errorf("copies deleted: %d with nil, %d from a communicator; %d of %d Idups failed",
						onNil.Load(), onComm.Load(), failed, len(outs))
				}
				settleAmong(r, live)
				if n := r.World.FreeContexts(); n != base {
					r.Errorf("free context slots: %d, want %d", n, base)
				}
			})
		})
	}
}
