package ranks_test

import (
	"errors"
	"runtime"
	"slices"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

func TestGroups(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 5, Quiet: true}, func(r *ranktest.R) {
		g, err := r.Comm.Group()
		r.Check(err, "group")
		if g.Size() != 5 || g.Rank() != r.Rank {
			r.Errorf("world group: size %d rank %d", g.Size(), g.Rank())
		}
		odd, err := g.Incl([]int{3, 1})
		r.Check(err, "incl")
		even, err := g.Excl([]int{1, 3})
		r.Check(err, "excl")
		if !slices.Equal(odd.WorldRanks(), []int{3, 1}) || !slices.Equal(even.WorldRanks(), []int{0, 2, 4}) {
			r.Errorf("incl %v excl %v", odd.WorldRanks(), even.WorldRanks())
		}
		if want := map[int]int{3: 0, 1: 1}[r.Rank]; (r.Rank == 1 || r.Rank == 3) && odd.Rank() != want {
			r.Errorf("rank in {3,1}: %d", odd.Rank())
		} else if r.Rank%2 == 0 && odd.Rank() != ranks.Undefined {
			r.Errorf("non-member's rank: %d", odd.Rank())
		}
		tr, err := g.TranslateRanks([]int{0, 1, 3, ranks.ProcNull}, odd)
		r.Check(err, "translate")
		if !slices.Equal(tr, []int{ranks.Undefined, 1, 0, ranks.ProcNull}) {
			r.Errorf("translate: %v", tr)
		}
		u := even.Union(odd)
		if !slices.Equal(u.WorldRanks(), []int{0, 2, 4, 3, 1}) || u.Compare(g) != ranks.Similar || g.Compare(g) != ranks.Ident ||
			odd.Compare(even) != ranks.Unequal {
			r.Errorf("union %v, compares %d %d %d", u.WorldRanks(), u.Compare(g), g.Compare(g), odd.Compare(even))
		}
		if in := u.Intersection(odd); !slices.Equal(in.WorldRanks(), []int{3, 1}) {
			r.Errorf("intersection %v", in.WorldRanks())
		}
		if d := g.Difference(odd); !slices.Equal(d.WorldRanks(), []int{0, 2, 4}) {
			r.Errorf("difference %v", d.WorldRanks())
		}
		rg, err := g.RangeIncl([]ranks.Range{{4, 0, -2}, {1, 1, 1}})
		r.Check(err, "range incl")
		if !slices.Equal(rg.WorldRanks(), []int{4, 2, 0, 1}) {
			r.Errorf("range incl %v", rg.WorldRanks())
		}
		rx, err := g.RangeExcl([]ranks.Range{{0, 4, 2}})
		r.Check(err, "range excl")
		if !slices.Equal(rx.WorldRanks(), []int{1, 3}) {
			r.Errorf("range excl %v", rx.WorldRanks())
		}
		if ranks.EmptyGroup.Size() != 0 || ranks.EmptyGroup.Union(odd).Size() != 2 {
			r.Errorf("empty group")
		}
		for what, err := range map[string]error{
			"incl out of range":  func() error { _, err := g.Incl([]int{5}); return err }(),
			"incl repeated":      func() error { _, err := g.Incl([]int{1, 1}); return err }(),
			"excl negative":      func() error { _, err := g.Excl([]int{-1}); return err }(),
			"translate bad rank": func() error { _, err := g.TranslateRanks([]int{7}, odd); return err }(),
			"range repeated":     func() error { _, err := g.RangeIncl([]ranks.Range{{0, 2, 1}, {2, 2, 1}}); return err }(),
		} {
			wantClass(r, err, ranks.ErrRank, what)
		}
		_, err = g.RangeIncl([]ranks.Range{{0, 2, 0}})
		wantClass(r, err, ranks.ErrArg, "range of stride 0")
	})
}

// Dup, Split, Create, CreateGroup, Compare, Self, names and attributes;
// a message on one communicator never matches a receive on another.
func TestCommCreation(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 6, Quiet: true}, func(r *ranktest.R) {
		w := r.Comm
		d, err := w.Dup()
		r.Check(err, "dup")
		if d.Size() != 6 || d.Rank() != r.Rank {
			r.Errorf("dup: size %d rank %d", d.Size(), d.Rank())
		}
		if c, _ := ranks.Compare(w, d); c != ranks.Congruent {
			r.Errorf("compare world, dup: %d", c)
		}
		// Context isolation: the same source and tag on two communicators.
		peer := r.Rank ^ 1
		r.Check(ranks.Send(w, []int{1}, peer, 5), "send on world")
		r.Check(ranks.Send(d, []int{2}, peer, 5), "send on dup")
		got := make([]int, 1)
		_, err = ranks.Recv(d, got, peer, 5)
		r.Check(err, "recv on dup")
		if got[0] != 2 {
			r.Errorf("dup received the world's message")
		}
		_, err = ranks.Recv(w, got, peer, 5)
		r.Check(err, "recv on world")
		if got[0] != 1 {
			r.Errorf("world received %d", got[0])
		}

		// Split by parity, reversed by key; rank 5 opts out.
		color := r.Rank % 2
		if r.Rank == 5 {
			color = ranks.Undefined
		}
		s, err := w.Split(color, -r.Rank)
		r.Check(err, "split")
		if r.Rank == 5 {
			if s != nil {
				r.Errorf("Undefined color got a communicator")
			}
		} else {
			g, _ := s.Group()
			want := map[int][]int{0: {4, 2, 0}, 1: {3, 1}}[color]
			if !slices.Equal(g.WorldRanks(), want) {
				r.Errorf("split group %v, want %v", g.WorldRanks(), want)
			}
			sum := []int{r.Rank}
			for i := 1; i < s.Size(); i++ { // a ring on the new communicator
				next, prev := (s.Rank()+1)%s.Size(), (s.Rank()+s.Size()-1)%s.Size()
				in := make([]int, 1)
				_, err := ranks.Sendrecv(s, sum[len(sum)-1:], next, 1, in, prev, 1)
				r.Check(err, "ring on split")
				sum = append(sum, in[0])
			}
			slices.Sort(sum)
			if !slices.Equal(sum, slices.Sorted(slices.Values(want))) {
				r.Errorf("ring saw %v", sum)
			}
			r.Check(s.Free(), "free split")
		}

		// Create over the even ranks; CreateGroup by the odd ones.
		g, _ := w.Group()
		evens, _ := g.Incl([]int{0, 2, 4})
		ce, err := w.Create(evens)
		r.Check(err, "create")
		if (ce != nil) != (r.Rank%2 == 0) {
			r.Errorf("create: member %v", ce != nil)
		}
		if r.Rank%2 == 1 {
			odds, _ := g.Incl([]int{5, 3, 1})
			co, err := w.CreateGroup(odds, 7)
			r.Check(err, "create group")
			if co.Size() != 3 || co.Rank() != (5-r.Rank)/2 {
				r.Errorf("create group: size %d rank %d", co.Size(), co.Rank())
			}
			r.Check(co.Free(), "free")
		}
		if ce != nil {
			r.Check(ce.Free(), "free")
		}

		self, err := r.World.Self()
		r.Check(err, "self")
		if self.Size() != 1 || self.Rank() != 0 {
			r.Errorf("self: %d %d", self.Size(), self.Rank())
		}
		r.Check(ranks.Send(self, []byte{9}, 0, 1), "send to self")
		b := make([]byte, 1)
		_, err = ranks.Recv(self, b, 0, 1)
		r.Check(err, "recv on self")
		wantClass(r, self.Free(), ranks.ErrComm, "free self")

		r.Check(d.SetName("mine"), "name")
		if d.Name() != "mine" {
			r.Errorf("name %q", d.Name())
		}
		k := ranks.NewKeyval()
		r.Check(d.SetAttr(k, 42), "set attr")
		if v, ok, _ := d.Attr(k); !ok || v != 42 {
			r.Errorf("attr %v %v", v, ok)
		}
		r.Check(d.DeleteAttr(k), "delete attr")
		if _, ok, _ := d.Attr(k); ok {
			r.Errorf("attr after delete")
		}
		if v, ok, _ := w.Attr(ranks.KeyTagUB); !ok || v != ranks.TagUB {
			r.Errorf("TagUB %v", v)
		}
		if v, ok, _ := w.Attr(ranks.KeyFT); !ok || v != true {
			r.Errorf("FT %v", v)
		}
		r.Check(d.Free(), "free dup")
		wantClass(r, ranks.Send(d, []int{1}, peer, 1), ranks.ErrComm, "send on a freed communicator")
		_, err = w.Split(-3, 0)
		wantClass(r, err, ranks.ErrArg, "negative color")
	})
}

// Creating and freeing communicators in a loop leaks neither context
// slots nor memory.
func TestCommCreateFreeLoop(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
		// Both ranks have done all they did before once they have
		// exchanged this.
		settle := func() {
			_, err := ranks.Sendrecv(r.Comm, []byte{1}, 1-r.Rank, 1, make([]byte, 1), 1-r.Rank, 1)
			r.Check(err, "settle")
		}
		settle()
		before := r.World.FreeContexts()
		settle() // nobody starts the loop before both have counted
		const loops = 100000
		var m0, m1 runtime.MemStats
		for i := range loops {
			if i == 1000 {
				runtime.GC()
				runtime.ReadMemStats(&m0)
			}
			d, err := r.Comm.Dup()
			r.Check(err, "dup")
			r.Check(d.Free(), "free")
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		settle()
		if after := r.World.FreeContexts(); after != before {
			r.Errorf("free context slots: %d before, %d after %d Dup+Free", before, after, loops)
		}
		if grow := int64(m1.HeapInuse) - int64(m0.HeapInuse); grow > 1<<20 {
			r.Errorf("heap grew by %d bytes over %d Dup+Free", grow, loops)
		}
	})
}

// settleAmong makes every rank of live exchange a message with every
// other: afterwards each has done all it did before.
func settleAmong(r *ranktest.R, live []int) {
	for _, p := range live {
		if p != r.Rank {
			_, err := ranks.Sendrecv(r.Comm, []byte{1}, p, 77, make([]byte, 1), p, 77)
			r.Check(err, "settle")
		}
	}
}

// Communicator creation while a member or the leader dies: no hang, an
// error where the failure was seen, and no context slot leaks.
func TestCommCreateDeath(t *testing.T) {
	cases := []struct {
		name   string
		victim int
		before bool // dies before the call (else inside, after allocating)
		split  bool
	}{
		{"member-before-dup", 3, true, false},
		{"leader-before-dup", 0, true, false},
		{"leader-after-allocating", 0, false, false},
		{"member-before-split", 2, true, true},
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
				if r.Rank == tc.victim {
					if tc.before {
						r.Kill()
					}
					ranks.DieAtStage("allocated")
				}
				if tc.before {
					// Everyone sees the death before the call.
					_, err := ranks.Recv(r.Comm, make([]byte, 1), tc.victim, 1)
					procFailed(r, err, tc.victim, "wait for the death")
				}
				var c *ranks.Comm
				var err error
				if tc.split {
					c, err = r.Comm.Split(r.Rank%2, 0)
				} else {
					c, err = r.Comm.Dup()
				}
				switch {
				case err == nil && c != nil:
					r.Check(c.Free(), "free")
				case errors.Is(err, ranks.ErrProcFailed):
				default:
					r.Errorf("creation: %v, want a communicator or ErrProcFailed", err)
				}
				if tc.split && err == nil {
					r.Errorf("split with a dead member succeeded")
				}
				if tc.victim == 0 && err == nil {
					r.Errorf("creation led by a dead rank succeeded")
				}
				settleAmong(r, live)
				if n := r.World.FreeContexts(); n != base {
					r.Errorf("free context slots: %d before, %d after", base, n)
				}
			})
		})
	}
}

// A job holds up to job.MaxContexts-2 communicators of its own at once
// (the world's slot and the ports' are taken): MPICH's comm/cmfree holds
// 1,020 splits beside a duplicate. Past that, a creation fails with
// ErrNoMem at every member, the communicators made still work, and
// freeing them gives every slot back.
func TestManyCommunicators(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
		settle := func() { settleAmong(r, []int{0, 1}) }
		// The ports' slot counts as free until a port is opened, but no
		// communicator takes it.
		settle()
		free := r.World.FreeContexts()
		settle() // nobody creates before both have counted
		if free != job.MaxContexts-1 {
			r.Errorf("free context slots at the start: %d, want %d", free, job.MaxContexts-1)
		}
		var made []*ranks.Comm
		var err error
		for {
			var c *ranks.Comm
			if len(made)%2 == 0 {
				c, err = r.Comm.Dup()
			} else {
				c, err = r.Comm.Split(0, r.Size-r.Rank)
			}
			if err != nil {
				break
			}
			made = append(made, c)
		}
		if !errors.Is(err, ranks.ErrNoMem) || len(made) != job.MaxContexts-2 {
			r.Errorf("after %d creations: %v, want ErrNoMem after %d", len(made), err, job.MaxContexts-2)
		}
		// The oldest and the newest still carry messages and collectives.
		for _, c := range []*ranks.Comm{made[0], made[len(made)-1]} {
			got := make([]int, 1)
			_, err := ranks.Sendrecv(c, []int{c.Rank()}, 1-c.Rank(), 5, got, 1-c.Rank(), 5)
			r.Check(err, "sendrecv")
			if got[0] != 1-c.Rank() {
				r.Errorf("sendrecv on a communicator: got %d", got[0])
			}
		}
		for _, c := range made {
			r.Check(c.Free(), "free")
		}
		settle() // both have freed theirs before either counts
		if n := r.World.FreeContexts(); n != free {
			r.Errorf("free context slots after freeing: %d, want %d", n, free)
		}
	})
}

// Create over ever different subsets until the job's context slots run
// out (MPICH's errors/comm/too_many_comms2): rank 0 leads every
// creation, rank 3 is only in the whole group, and all four fail in the
// same call with ErrNoMem, the ranks outside that call's group too, so
// that none goes on to a next creation the others left.
func TestCreateOutOfSlots(t *testing.T) {
	const n = 4
	ranktest.RunOpts(t, ranktest.Options{N: n, Quiet: true}, func(r *ranktest.R) {
		wg, err := r.Comm.Group()
		r.Check(err, "group")
		everyone := []int{0, 1, 2, 3}
		var made []*ranks.Comm
		i := 0
		for ; i < 4*job.MaxContexts; i++ {
			g, err := wg.Incl(everyone[:(i+1)%(n+1)])
			r.Check(err, "incl")
			c, err := r.Comm.Create(g)
			if err != nil {
				if !errors.Is(err, ranks.ErrNoMem) {
					r.Errorf("Create %d: %v, want ErrNoMem", i, err)
				}
				break
			}
			if c != nil {
				made = append(made, c)
			}
		}
		lo, hi := []int{0}, []int{0}
		r.Check(coll.Allreduce(r.Comm, []int{i}, lo, coll.Min[int]), "min")
		r.Check(coll.Allreduce(r.Comm, []int{i}, hi, coll.Max[int]), "max")
		if lo[0] != hi[0] || i == 4*job.MaxContexts {
			r.Errorf("the ranks stopped at creations %d to %d (of %d tried)", lo[0], hi[0], 4*job.MaxContexts)
		}
		for _, c := range made {
			r.Check(c.Free(), "free")
		}
		c, err := r.Comm.Create(wg)
		r.Check(err, "Create after freeing")
		r.Check(coll.Barrier(c), "barrier on it")
		r.Check(c.Free(), "free it")
	})
}
