package ranks_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// A message sent on a communicator its receiver has freed never reaches
// the next communicator that reuses the context slot: rank 1 frees a Dup,
// rank 0 then sends on its copy (messages of every protocol, standard
// and synchronous) and frees it; both make new Dups, which take the same
// slot. Nothing of the old messages shows there, and a sender that waits
// for a match (synchronous, rendezvous) is told the receiver freed the
// communicator instead of waiting forever.
func TestFreedContextDropsLateMessages(t *testing.T) {
	sizes := []int{1, 30, 90, 5000, 300000}
	ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
		w := r.Comm
		d, err := w.Dup()
		r.Check(err, "dup")
		if r.Rank == 1 {
			r.Check(d.Free(), "free")
			r.Check(ranks.Send(w, []byte{1}, 0, 1), "tell rank 0")
		} else {
			_, err := ranks.Recv(w, make([]byte, 1), 1, 1)
			r.Check(err, "wait for the free")
			var reqs []*ranks.Request
			for i, n := range sizes {
				b := make([]byte, n)
				b[0] = byte(100 + i)
				q, err := ranks.Isend(d, b, 1, 7)
				r.Check(err, "isend")
				reqs = append(reqs, q)
				q, err = ranks.Issend(d, b, 1, 8)
				r.Check(err, "issend")
				reqs = append(reqs, q)
			}
			r.Check(d.Free(), "free")
			for i, q := range reqs {
				// Standard eager sends complete at once; the others
				// wait for a match that never comes: they must end, with
				// ErrComm.
				_, err := q.Wait()
				if err != nil && !errors.Is(err, ranks.ErrComm) {
					r.Errorf("send %d on the freed communicator: %v, want nil or ErrComm", i, err)
				}
				if i%2 == 1 && err == nil {
					r.Errorf("synchronous send %d completed, but its receiver freed the communicator", i)
				}
			}
		}
		// The old messages were sent before the Dup's own traffic: by the
		// time the new communicator exists here, they have arrived.
		d2, err := w.Dup()
		r.Check(err, "second dup")
		if r.Rank == 1 {
			// (Rank 0 may have sent the new one, tag 9, already.)
			for _, tag := range []int{7, 8} {
				if st, ok, err := d2.Iprobe(ranks.AnySource, tag); err != nil || ok {
					r.Errorf("Iprobe on the new communicator found %v (%+v, %v): a message of the freed one", ok, st, err)
				}
			}
			b := make([]byte, 8)
			st, err := ranks.Recv(d2, b, ranks.AnySource, ranks.AnyTag)
			r.Check(err, "recv on the new communicator")
			if st.Tag != 9 || b[0] != 42 {
				r.Errorf("received tag %d byte %d, want the new message (tag 9, 42)", st.Tag, b[0])
			}
		} else {
			r.Check(ranks.Send(d2, []byte{42}, 1, 9), "send on the new communicator")
		}
		r.Check(d2.Free(), "free")
		_, err = ranks.Sendrecv(w, []byte{0}, 1-r.Rank, 2, make([]byte, 1), 1-r.Rank, 2)
		r.Check(err, "end")
	})
}

// MPI_Comm_free lets pending operations complete normally (MPI 4.0
// §7.4.3): a receive posted before the free still matches its message,
// whatever the protocol, and the context slot goes back to the pool only
// once it has.
func TestFreeLetsPendingReceivesComplete(t *testing.T) {
	for _, n := range []int{8, 5000, 300000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
				w := r.Comm
				free0 := r.World.FreeContexts()
				// Neither has begun the Dup before both have counted.
				_, err := ranks.Sendrecv(w, []byte{0}, 1-r.Rank, 3, make([]byte, 1), 1-r.Rank, 3)
				r.Check(err, "start")
				d, err := w.Dup()
				r.Check(err, "dup")
				if r.Rank == 1 {
					b := make([]byte, n)
					q, err := ranks.Irecv(d, b, 0, 5)
					r.Check(err, "irecv")
					r.Check(d.Free(), "free with the receive pending")
					if _, err := ranks.Recv(d, b, 0, 5); !errors.Is(err, ranks.ErrComm) {
						r.Errorf("a new receive on the freed communicator: %v, want ErrComm", err)
					}
					r.Check(ranks.Send(w, []byte{1}, 0, 1), "tell rank 0")
					st, err := q.Wait()
					r.Check(err, "the pending receive")
					if st.Bytes != n || b[0] != 7 || b[n-1] != 9 {
						r.Errorf("pending receive got %d bytes, %d...%d; want %d, 7...9", st.Bytes, b[0], b[n-1], n)
					}
				} else {
					_, err := ranks.Recv(w, make([]byte, 1), 1, 1)
					r.Check(err, "wait for the free")
					b := make([]byte, n)
					b[0], b[n-1] = 7, 9
					r.Check(ranks.Send(d, b, 1, 5), "send")
					r.Check(d.Free(), "free")
				}
				_, err = ranks.Sendrecv(w, []byte{0}, 1-r.Rank, 2, make([]byte, 1), 1-r.Rank, 2)
				r.Check(err, "end")
				// Both have released it: the slot is free again.
				if got := r.World.FreeContexts(); got != free0 {
					r.Errorf("free context slots: %d, want %d as before the Dup", got, free0)
				}
			})
		})
	}
}

// Names as MPI has them: MPI_COMM_WORLD, MPI_COMM_SELF, and none for a
// new communicator (MPI does not copy names).
func TestCommNames(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
		if got := r.Comm.Name(); got != "MPI_COMM_WORLD" {
			r.Errorf("world's name %q", got)
		}
		self, err := r.World.Self()
		r.Check(err, "self")
		if got := self.Name(); got != "MPI_COMM_SELF" {
			r.Errorf("self's name %q", got)
		}
		r.Check(r.Comm.SetName("renamed"), "set name")
		d, err := r.Comm.Dup()
		r.Check(err, "dup")
		if got := d.Name(); got != "" {
			r.Errorf("a dup's name %q, want none", got)
		}
		s, err := r.Comm.Split(0, 0)
		r.Check(err, "split")
		if got := s.Name(); got != "" {
			r.Errorf("a split's name %q, want none", got)
		}
		r.Check(d.SetName("mine"), "name the dup")
		if got := d.Name(); got != "mine" {
			r.Errorf("named dup %q", got)
		}
		r.Check(d.Free(), "free")
		r.Check(s.Free(), "free")
	})
}
