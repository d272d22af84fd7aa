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

// uniform checks that every survivor in live got the same (value, error
// class): each sends its result to the lowest survivor, which compares.
func uniform(r *ranktest.R, c *ranks.Comm, live []int, value int, err error, tag int) {
	res := []int64{int64(value), 0}
	if errors.Is(err, ranks.ErrProcFailed) {
		res[1] = 1
	} else if err != nil {
		res[1] = 2
	}
	if r.Rank != live[0] {
		r.Check(ranks.Send(c, res, live[0], tag), "send result")
		return
	}
	for _, q := range live[1:] {
		other := make([]int64, 2)
		_, err := ranks.Recv(c, other, q, tag)
		r.Check(err, "collect results")
		if !slices.Equal(other, res) {
			r.Errorf("tag %d: rank %d decided %v, rank %d decided %v", tag, live[0], res, q, other)
		}
	}
}

// syncLive returns at each live member once every live member has
// called it (on c, with point-to-point messages: c may have a failed
// member, which fails its collectives).
func syncLive(r *ranktest.R, c *ranks.Comm, live []int, tag int) {
	if r.Rank != live[0] {
		r.Check(ranks.Send(c, []byte{1}, live[0], tag), "sync")
		_, err := ranks.Recv(c, make([]byte, 1), live[0], tag)
		r.Check(err, "sync")
		return
	}
	for _, q := range live[1:] {
		_, err := ranks.Recv(c, make([]byte, 1), q, tag)
		r.Check(err, "sync")
	}
	for _, q := range live[1:] {
		r.Check(ranks.Send(c, []byte{1}, q, tag), "sync")
	}
}

func without(n int, dead ...int) []int {
	var out []int
	for i := range n {
		if !slices.Contains(dead, i) {
			out = append(out, i)
		}
	}
	return out
}

// Agree without failures: the AND of every flag, at every member, many
// rounds in a row, on two communicators at once.
func TestAgreeNoFailure(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 5, Quiet: true}, func(r *ranktest.R) {
		d, err := r.Comm.Dup()
		r.Check(err, "dup")
		for it := range 200 {
			v, err := ulfm.Agree(r.Comm, ^(1 << ((r.Rank + it) % 8)))
			r.Check(err, "agree")
			want := ^0
			for q := range r.Size {
				want &= ^(1 << ((q + it) % 8))
			}
			if v != want {
				r.Fatalf("round %d: %b, want %b", it, v, want)
			}
			ok, err := ulfm.AgreeBool(d, r.Rank != it%r.Size || it%3 != 0)
			r.Check(err, "agree bool")
			if ok != (it%3 != 0) {
				r.Fatalf("round %d: bool %v", it, ok)
			}
		}
		r.Check(d.Free(), "free")
	})
}

// Agree after a failure: ErrProcFailed, uniformly, while the failure is
// unacknowledged by a contributor; after it (and after the FailureAck
// that follows the failed Agree) no error. Works on a revoked
// communicator.
func TestAgreeFailure(t *testing.T) {
	for _, ack := range []bool{false, true} {
		t.Run(fmt.Sprint("acked=", ack), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 4, Dies: []int{1}, Quiet: true}, func(r *ranktest.R) {
				c := r.Comm
				res, err := c.Dup() // for comparing results once c is revoked
				r.Check(err, "dup")
				if r.Rank == 1 {
					r.Kill()
				}
				live := without(4, 1)
				_, err = ranks.Recv(c, make([]byte, 1), 1, 1)
				if !errors.Is(err, ranks.ErrProcFailed) {
					r.Fatalf("recv from the dead rank: %v", err)
				}
				if ack {
					r.Check(c.FailureAck(), "ack")
				}
				v, err := ulfm.Agree(c, 6|r.Rank<<4)
				if ack && err != nil {
					r.Errorf("agree after every survivor acknowledged: %v", err)
				}
				if !ack && !errors.Is(err, ranks.ErrProcFailed) {
					r.Errorf("agree with an unacknowledged failure: %v, want ErrProcFailed", err)
				}
				if v != 6 {
					r.Errorf("value %b, want 110", v)
				}
				uniform(r, res, live, v, err, 10)
				// Agree acknowledges nothing itself (spec 15.3.1): two
				// FailureGetAcked not separated by a FailureAck agree,
				// and an AnySource receive still reports the failure.
				want := []int{}
				if ack {
					want = []int{1}
				}
				for range 2 {
					if acked, _ := c.FailureGetAcked(); !slices.Equal(acked, want) {
						r.Errorf("acknowledged after the agree, before FailureAck: %v, want %v", acked, want)
					}
				}
				if !ack {
					q, err := ranks.Irecv(c, make([]byte, 1), ranks.AnySource, 9)
					r.Check(err, "irecv")
					if _, err := q.Wait(); !errors.Is(err, ranks.ErrProcFailedPending) {
						r.Errorf("AnySource receive after the failed agree: %v, want ErrProcFailedPending", err)
					}
					r.Check(q.Cancel(), "cancel")
					q.Wait()
				}
				// The next FailureAck covers every non-contributor.
				r.Check(c.FailureAck(), "ack")
				if acked, _ := c.FailureGetAcked(); !slices.Equal(acked, []int{1}) {
					r.Errorf("acknowledged after FailureAck: %v", acked)
				}
				// Now acknowledged everywhere: no error, also once revoked.
				syncLive(r, res, live, 12) // every member's receive above is done
				r.Check(ulfm.Revoke(c), "revoke")
				v, err = ulfm.Agree(c, 3)
				r.Check(err, "agree on a revoked communicator")
				if v != 3 {
					r.Errorf("value %d", v)
				}
				uniform(r, res, live, v, err, 11)
			})
		})
	}
}

// A member that dies after contributing, or after it saw the round
// complete (while it computes the outcome), breaks neither uniformity
// nor progress.
func TestAgreeDeathInsideRound(t *testing.T) {
	for _, stage := range []string{"contributed", "completed"} {
		t.Run(stage, func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 5, Dies: []int{2}, Quiet: true}, func(r *ranktest.R) {
				c := r.Comm
				live := without(5, 2)
				if r.Rank == 2 {
					ulfm.DieAt(stage)
				}
				for it := 0; ; it++ {
					if r.Rank == 2 {
						// Come last, so as to be the one that completes the round.
						for _, q := range live {
							_, err := ranks.Recv(c, make([]byte, 1), q, 100+it)
							r.Check(err, "go")
						}
						if it == 50 {
							r.Kill() // never decided: die anyway
						}
					} else if r.Rank != 2 {
						if err := ranks.Send(c, []byte{1}, 2, 100+it); err != nil && !errors.Is(err, ranks.ErrProcFailed) {
							r.Fatalf("send: %v", err)
						}
					}
					v, err := ulfm.Agree(c, 1)
					if err != nil && !errors.Is(err, ranks.ErrProcFailed) {
						r.Fatalf("agree: %v", err)
					}
					uniform(r, r.Comm, live, v, err, 1000+it)
					// Did anyone see the death? Agree on it, so that all
					// take the same branch.
					failed, _ := c.GetFailed()
					notSeen := 1
					if len(failed) > 0 {
						notSeen = 0
					}
					v, err = ulfm.Agree(c, notSeen)
					if err != nil && !errors.Is(err, ranks.ErrProcFailed) {
						r.Fatalf("agree: %v", err)
					}
					uniform(r, r.Comm, live, v, err, 3000+it)
					if v == 0 {
						// Acknowledge, and the next round is clean.
						r.Check(c.FailureAck(), "ack")
						v, err := ulfm.Agree(c, 1)
						r.Check(err, "agree after ack")
						uniform(r, r.Comm, live, v, err, 5000)
						return
					}
				}
			})
		})
	}
}

// Shrink after one, two and many failures, repeated down to one rank:
// identical groups in the old order at every survivor, and collectives
// and point-to-point work on the result.
func TestShrink(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 6, Dies: []int{1, 2, 3, 4, 5}, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		alive := without(6)
		kill := func(victims ...int) {
			if slices.Contains(victims, r.Rank) {
				r.Kill()
			}
			alive = slices.DeleteFunc(alive, func(x int) bool { return slices.Contains(victims, x) })
		}
		for step, victims := range [][]int{{1}, {3, 5}, {4}} {
			kill(victims...)
			// Some survivors know, some may not: shrink excludes at
			// least what any knew.
			if r.Rank == alive[0] {
				for _, v := range victims {
					ranks.Recv(r.Comm, make([]byte, 1), v, 1)
				}
			}
			nc, err := ulfm.Shrink(c)
			r.Check(err, "shrink")
			g, _ := nc.Group()
			got := g.WorldRanks()
			// The group may still hold a victim no survivor knew of;
			// shrink again until it does not.
			for !slices.Equal(got, alive) {
				nc2, err := ulfm.Shrink(nc)
				r.Check(err, "shrink again")
				g, _ = nc2.Group()
				got = g.WorldRanks()
				nc = nc2
			}
			all := make([]int, len(alive))
			r.Check(coll.Allgather(nc, []int{r.Rank}, all), "allgather on the shrunk communicator")
			if !slices.Equal(all, alive) {
				r.Errorf("step %d: allgather %v, want %v", step, all, alive)
			}
			if nc.Size() > 1 {
				next, prev := (nc.Rank()+1)%nc.Size(), (nc.Rank()+nc.Size()-1)%nc.Size()
				in := make([]int, 1)
				_, err := ranks.Sendrecv(nc, []int{r.Rank}, next, 1, in, prev, 1)
				r.Check(err, "ring on the shrunk communicator")
			}
			c = nc
		}
		if c.Size() != 2 {
			r.Errorf("size %d, want 2", c.Size())
		}
		// Down to one rank: the other survivor dies too.
		if r.Rank == alive[1] {
			r.Kill()
		}
		for c.Size() > 1 {
			next, err := ulfm.Shrink(c)
			r.Check(err, "shrink to one")
			c = next
		}
		r.Check(coll.Barrier(c), "barrier alone")
		v, err := coll.AllreduceValue(c, 7, coll.Sum[int])
		r.Check(err, "allreduce alone")
		if v != 7 {
			r.Errorf("allreduce alone: %d", v)
		}
	})
}

// Revoke reaches members blocked in a receive, an AnySource nonblocking
// receive, a probe, a barrier, an allreduce, a bcast and a nonblocking
// collective; it may come from several members at once; it never leaks
// into a communicator made later in the same slot.
func TestRevokeEverywhere(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Quiet: true}, func(r *ranktest.R) {
		d, err := r.Comm.Dup()
		r.Check(err, "dup")
		if ulfm.IsRevoked(r.Comm) {
			r.Errorf("IsRevoked on the world")
		}
		revoked := func(err error, what string) {
			if !errors.Is(err, ranks.ErrRevoked) {
				r.Errorf("%s: %v, want ErrRevoked", what, err)
			}
		}
		switch r.Rank {
		case 0:
			_, err := ranks.Recv(d, make([]byte, 1), 1, 1)
			revoked(err, "blocked Recv")
			// At initiation or at completion: either is ErrRevoked.
			q, err := ranks.Irecv(d, make([]byte, 1), ranks.AnySource, 2)
			if err == nil {
				_, err = q.Wait()
			}
			revoked(err, "AnySource Irecv")
		case 1:
			revoked(coll.Barrier(d), "Barrier")
			_, err := d.Probe(ranks.AnySource, 3)
			revoked(err, "Probe")
		case 2:
			revoked(coll.Allreduce(d, nil, make([]float64, 50000), coll.Sum[float64]), "Allreduce")
			q, err := coll.Ibarrier(d)
			if err == nil {
				_, err = q.Wait()
			}
			revoked(err, "Ibarrier")
		case 3:
			// The first revoke: the others are blocked, or about to be.
			r.Check(ulfm.Revoke(d), "revoke")
			revoked(coll.Bcast(d, make([]byte, 100), 0), "Bcast")
		}
		if !ulfm.IsRevoked(d) {
			r.Errorf("IsRevoked after the revoke: false")
		}
		// Every member revokes (several at once), then agrees (agree works on
		// a revoked communicator) that all saw it.
		r.Check(ulfm.Revoke(d), "revoke")
		revoked(ranks.Send(d, []byte{1}, 0, 9), "Send after revoke")
		ok, err := ulfm.AgreeBool(d, true)
		r.Check(err, "agree")
		if !ok {
			r.Errorf("agree: false")
		}
		r.Check(d.Free(), "free")
		e, err := r.Comm.Dup() // may reuse the slot: not revoked
		r.Check(err, "dup after free")
		if ulfm.IsRevoked(e) {
			r.Errorf("IsRevoked on the next communicator in the slot")
		}
		r.Check(coll.Barrier(e), "barrier on the new communicator")
		r.Check(e.Free(), "free")
	})
}

// The spec's Example 15.5: iterative refinement with Allreduce, Revoke,
// Agree and Shrink, while a rank is killed; every survivor ends with the
// same answer.
func TestRecoveryLoop(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 6, Dies: []int{3}, Quiet: true}, func(r *ranktest.R) {
		comm := r.Comm
		gnorm := 100.0
		for iter := 0; gnorm > 1; iter++ {
			if r.Rank == 3 && iter == 5 {
				r.Kill()
			}
			lnorm := gnorm / 2
			var err error
			gnorm, err = coll.AllreduceValue(comm, lnorm, coll.Max[float64])
			if errors.Is(err, ranks.ErrProcFailed) || errors.Is(err, ranks.ErrRevoked) || gnorm <= 1 {
				if errors.Is(err, ranks.ErrProcFailed) {
					ulfm.Revoke(comm)
				}
				ok, aerr := ulfm.AgreeBool(comm, err == nil)
				if aerr != nil || !ok {
					next, serr := ulfm.Shrink(comm)
					r.Check(serr, "shrink")
					if comm != r.Comm {
						comm.Free()
					}
					comm, gnorm = next, lnorm*2
				}
			}
		}
		if comm.Size() != 5 {
			r.Errorf("final size %d, want 5", comm.Size())
		}
		all := make([]float64, comm.Size())
		r.Check(coll.Allgather(comm, []float64{gnorm}, all), "allgather")
		for _, x := range all {
			if x != gnorm {
				r.Errorf("answers differ: %v", all)
			}
		}
	})
}

// Revoke reaches a Wait on a persistent receive, and races with members
// starting operations: every member ends with ErrRevoked, nobody hangs.
func TestRevokeRace(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Quiet: true}, func(r *ranktest.R) {
		d, err := r.Comm.Dup()
		r.Check(err, "dup")
		if r.Rank == 3 {
			q, err := ranks.RecvInit(d, make([]byte, 4), 0, 77) // nobody sends
			r.Check(err, "recv init")
			r.Check(q.Start(), "start")
			_, err = q.Wait()
			if !errors.Is(err, ranks.ErrRevoked) {
				r.Errorf("persistent Wait: %v, want ErrRevoked", err)
			}
			if err := q.Start(); !errors.Is(err, ranks.ErrRevoked) {
				r.Errorf("Start after the revoke: %v", err)
			}
			r.Check(q.Free(), "free")
		} else {
			// Ranks 0-2 exchange in a ring until the revoke stops them;
			// rank 0 revokes after a number of rounds.
			next, prev := (r.Rank+1)%3, (r.Rank+2)%3
			for i := 0; ; i++ {
				if r.Rank == 0 && i == 100 {
					r.Check(ulfm.Revoke(d), "revoke")
				}
				in := make([]byte, 1000)
				_, err := ranks.Sendrecv(d, make([]byte, 1000), next, i, in, prev, i)
				if errors.Is(err, ranks.ErrRevoked) {
					break
				}
				r.Check(err, "ring")
			}
		}
		ok, err := ulfm.AgreeBool(d, true)
		r.Check(err, "agree")
		if !ok {
			r.Errorf("agree false")
		}
		r.Check(d.Free(), "free")
	})
}

// Iagree overlaps point-to-point traffic and completes with the same
// value everywhere.
func TestIagreeOverlap(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		for it := range 50 {
			flag := ^(1 << r.Rank)
			q, err := ulfm.Iagree(c, &flag)
			r.Check(err, "iagree")
			next, prev := (r.Rank+1)%r.Size, (r.Rank+r.Size-1)%r.Size
			in := make([]int, 1)
			_, err = ranks.Sendrecv(c, []int{it}, next, it, in, prev, it)
			r.Check(err, "sendrecv during iagree")
			_, err = q.Wait()
			r.Check(err, "iagree wait")
			if flag != ^0xf {
				r.Fatalf("iagree value %b", flag)
			}
		}
	})
}

// A member dying inside a Shrink (after contributing, or while deciding)
// leaves a consistent result: the survivors get the same group, perhaps
// still holding the dead member, which a second Shrink removes.
func TestShrinkDeathInside(t *testing.T) {
	for _, stage := range []string{"contributed", "writing", "written"} {
		t.Run(stage, func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 5, Dies: []int{1, 4}, Quiet: true}, func(r *ranktest.R) {
				if r.Rank == 1 {
					r.Kill()
				}
				if r.Rank == 4 {
					ulfm.DieAt(stage)
				}
				nc, err := ulfm.Shrink(r.Comm)
				r.Check(err, "shrink")
				g, _ := nc.Group()
				w := g.WorldRanks()
				for _, q := range []int{0, 2, 3} {
					if !slices.Contains(w, q) {
						r.Errorf("survivor %d missing from %v", q, w)
					}
				}
				// Compare groups: everyone sends its group to rank 0.
				if r.Rank != 0 {
					r.Check(ranks.Send(r.Comm, w, 0, 1), "send group")
				} else {
					for _, q := range []int{2, 3} {
						other := make([]int, 5)
						st, err := ranks.Recv(r.Comm, other, q, 1)
						r.Check(err, "recv group")
						if !slices.Equal(other[:st.Count], w) {
							r.Errorf("rank %d got group %v, rank 0 %v", q, other[:st.Count], w)
						}
					}
				}
				if r.Rank == 4 {
					r.Kill() // it did not decide: die now
				}
				// Shrink again until the dead are out (a shrink excludes
				// what any survivor knew when it entered).
				for {
					g, _ := nc.Group()
					if slices.Equal(g.WorldRanks(), []int{0, 2, 3}) {
						break
					}
					nc, err = ulfm.Shrink(nc)
					r.Check(err, "shrink again")
				}
				r.Check(coll.Barrier(nc), "barrier on the result")
			})
		})
	}
}

// Acknowledgement: GetFailed grows; AnySource receives report the
// failure until it is acknowledged; AckFailed acknowledges in the job's
// failure order.
func TestAcknowledgement(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Dies: []int{1, 2}, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		switch r.Rank {
		case 1:
			r.Kill()
		case 2:
			_, err := ranks.Recv(c, make([]byte, 1), 1, 1)
			procFailed(r, err, "see rank 1 die")
			r.Kill()
		}
		_, err := ranks.Recv(c, make([]byte, 1), 2, 1)
		procFailed(r, err, "see rank 2 die")
		failed, _ := c.GetFailed()
		if !slices.Equal(failed, []int{1, 2}) {
			r.Errorf("GetFailed %v", failed)
		}
		_, err = ranks.Recv(c, make([]byte, 1), ranks.AnySource, 5)
		procFailed(r, err, "AnySource before the ack")
		n, err := ulfm.AckFailed(c, 1)
		r.Check(err, "ack one")
		if n != 1 {
			r.Errorf("AckFailed(1) acknowledged %d", n)
		}
		_, err = ranks.Recv(c, make([]byte, 1), ranks.AnySource, 5)
		procFailed(r, err, "AnySource with one failure still unacknowledged")
		n, err = ulfm.AckFailed(c, 10)
		r.Check(err, "ack all")
		if n != 2 {
			r.Errorf("AckFailed(10) acknowledged %d", n)
		}
		// Now AnySource works between the survivors 0 and 3.
		peer := 3 - r.Rank
		r.Check(ranks.Send(c, []byte{byte(r.Rank)}, peer, 6), "send")
		b := make([]byte, 1)
		st, err := ranks.Recv(c, b, ranks.AnySource, 6)
		r.Check(err, "AnySource after the ack")
		if st.Source != peer {
			r.Errorf("source %d", st.Source)
		}
	})
}

func procFailed(r *ranktest.R, err error, what string) {
	if !errors.Is(err, ranks.ErrProcFailed) {
		r.Errorf("%s: %v, want ErrProcFailed", what, err)
	}
}
