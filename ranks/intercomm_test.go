package ranks_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// An intercommunicator's point-to-point addresses the remote group; its
// Size, Rank, groups and Merge orders are MPI's; Dup, Split and Create of
// it make intercommunicators of the right groups; everything frees.
func TestIntercommBasics(t *testing.T) {
	const n, na = 5, 2
	ranktest.RunOpts(t, ranktest.Options{N: n, Quiet: true}, func(r *ranktest.R) {
		free0 := r.World.FreeContexts()
		_, err := ranks.Sendrecv(r.Comm, []byte{0}, (r.Rank+1)%n, 3, make([]byte, 1), (r.Rank+n-1)%n, 3)
		r.Check(err, "start")
		ic, inA := r.Intercomm(na)
		lsize, rsize, lbase, rbase := na, n-na, 0, na
		if !inA {
			lsize, rsize, lbase, rbase = n-na, na, na, 0
		}
		if !ic.IsInter() || ic.Size() != lsize || ic.RemoteSize() != rsize || ic.Rank() != r.Rank-lbase {
			r.Fatalf("inter %v size %d remote %d rank %d", ic.IsInter(), ic.Size(), ic.RemoteSize(), ic.Rank())
		}
		g, err := ic.Group()
		r.Check(err, "group")
		rg, err := ic.RemoteGroup()
		r.Check(err, "remote group")
		if g.WorldRanks()[0] != lbase || rg.WorldRanks()[0] != rbase || rg.Size() != rsize {
			r.Errorf("groups %v and %v", g.WorldRanks(), rg.WorldRanks())
		}
		// Point-to-point: everyone tells remote rank 0 its world rank.
		r.Check(ranks.Send(ic, []int{r.Rank}, 0, 1), "send to remote 0")
		if ic.Rank() == 0 {
			got := []int{}
			for range rsize {
				b := []int{-1}
				st, err := ranks.Recv(ic, b, ranks.AnySource, 1)
				r.Check(err, "recv")
				if b[0] != rbase+st.Source {
					r.Errorf("message from remote rank %d says world rank %d", st.Source, b[0])
				}
				got = append(got, b[0])
			}
			slices.Sort(got)
			if got[0] != rbase || got[len(got)-1] != rbase+rsize-1 {
				r.Errorf("received from %v", got)
			}
		}
		// Merge orders.
		for _, tc := range []struct {
			highA, highB bool
			aFirst       bool
		}{{false, true, true}, {true, false, false}, {false, false, true}, {true, true, true}} {
			high := tc.highB
			if inA {
				high = tc.highA
			}
			m, err := ic.IntercommMerge(high)
			r.Check(err, "merge")
			want := r.Rank
			if !tc.aFirst {
				want = (r.Rank - na + n) % n
			}
			if m.IsInter() || m.Size() != n || m.Rank() != want {
				r.Errorf("merge %+v: size %d rank %d, want rank %d", tc, m.Size(), m.Rank(), want)
			}
			_, err = ranks.Sendrecv(m, []int{m.Rank()}, (m.Rank()+1)%n, 2, make([]int, 1), (m.Rank()+n-1)%n, 2)
			r.Check(err, "sendrecv on the merged communicator")
			r.Check(m.Free(), "free merged")
		}
		// Dup.
		d, err := ic.Dup()
		r.Check(err, "dup")
		if !d.IsInter() || d.Size() != lsize || d.RemoteSize() != rsize {
			r.Errorf("dup: inter %v size %d remote %d", d.IsInter(), d.Size(), d.RemoteSize())
		}
		r.Check(ranks.Send(d, []int{r.Rank}, 0, 4), "send on the dup")
		if d.Rank() == 0 {
			for range rsize {
				_, err := ranks.Recv(d, make([]int, 1), ranks.AnySource, 4)
				r.Check(err, "recv on the dup")
			}
		}
		// Split by parity of the local rank: A's {0} and {1} pair with
		// B's {0, 2} and {1}.
		s, err := ic.Split(ic.Rank()%2, 0)
		r.Check(err, "split")
		if s == nil || !s.IsInter() {
			r.Fatalf("split: %v", s)
		}
		wantL, wantR := (lsize+1-ic.Rank()%2)/2, (rsize+1-ic.Rank()%2)/2
		if s.Size() != wantL || s.RemoteSize() != wantR {
			r.Errorf("split: size %d remote %d, want %d and %d", s.Size(), s.RemoteSize(), wantL, wantR)
		}
		// Create of the local rank 0 of each side only.
		sub, err := g.Incl([]int{0})
		r.Check(err, "incl")
		cr, err := ic.Create(sub)
		r.Check(err, "create")
		if (ic.Rank() == 0) != (cr != nil) || cr != nil && (cr.Size() != 1 || cr.RemoteSize() != 1) {
			r.Errorf("create: %v", cr)
		}
		if cr != nil {
			_, err = ranks.Sendrecv(cr, []int{1}, 0, 6, make([]int, 1), 0, 6)
			r.Check(err, "sendrecv on the created")
			r.Check(cr.Free(), "free created")
		}
		for _, c := range []*ranks.Comm{s, d, ic} {
			r.Check(c.Free(), "free")
		}
		// Every slot went back (the local ones too) once all freed: n
		// rounds of a ring tell each rank that every other has freed.
		for range n {
			_, err = ranks.Sendrecv(r.Comm, []byte{0}, (r.Rank+1)%n, 3, make([]byte, 1), (r.Rank+n-1)%n, 3)
			r.Check(err, "end")
		}
		if got := r.World.FreeContexts(); got != free0 {
			r.Errorf("free context slots: %d, want %d", got, free0)
		}
		if _, err := ranks.IntercommCreate(r.Comm, 0, r.Comm, 0, 1); !errors.Is(err, ranks.ErrRank) && !errors.Is(err, ranks.ErrArg) && r.Rank == 0 {
			r.Errorf("IntercommCreate with itself as the remote leader: %v", err)
		}
	})
}
