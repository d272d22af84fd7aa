package ranks_test

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

var deaths = []struct {
	name string
	how  ranktest.How
}{{"sigkill", ranktest.SIGKILL}, {"exit", ranktest.Exit}, {"panic", ranktest.Panic}}

// protocolEnv is the rank environment for a large-message protocol
// under test: "pipelined" forbids process_vm_readv/writev.
func protocolEnv(mode string) []string {
	if mode == "pipelined" {
		return []string{job.EnvNoCMA + "=1"}
	}
	return nil
}

// procFailed checks that err is ErrProcFailed naming rank want.
func procFailed(r *ranktest.R, err error, want int, what string) {
	var e *ranks.Error
	if !errors.Is(err, ranks.ErrProcFailed) || !errors.As(err, &e) {
		r.Errorf("%s: got %v, want ErrProcFailed", what, err)
		return
	}
	if want >= 0 && e.Rank != want {
		r.Errorf("%s: error names rank %d, want %d (%v)", what, e.Rank, want, err)
	}
}

// pingPong checks that a pair of live ranks still communicates.
func pingPong(r *ranktest.R, peer, n int) {
	buf := make([]byte, 5000)
	for i := range n {
		if r.Rank < peer {
			r.Check(ranks.Send(r.Comm, buf, peer, 1000+i), "live send")
			_, err := ranks.Recv(r.Comm, buf, peer, 1000+i)
			r.Check(err, "live recv")
		} else {
			_, err := ranks.Recv(r.Comm, buf, peer, 1000+i)
			r.Check(err, "live recv")
			r.Check(ranks.Send(r.Comm, buf, peer, 1000+i), "live send")
		}
	}
}

// Rule 1: a blocking receive from a rank that dies returns ErrProcFailed
// naming it; what it sent before dying is still delivered; a live pair
// keeps working.
func TestFailBlockingRecv(t *testing.T) {
	for _, d := range deaths {
		t.Run(d.name, func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{1}}, func(r *ranktest.R) {
				c := r.Comm
				switch r.Rank {
				case 1:
					r.Check(ranks.Send(c, []byte("last words"), 0, 1), "send")
					r.Die(d.how)
				case 0:
					buf := make([]byte, 10)
					_, err := ranks.Recv(c, buf, 1, 1)
					r.Check(err, "message sent before the death")
					if string(buf) != "last words" {
						r.Errorf("got %q", buf)
					}
					_, err = ranks.Recv(c, buf, 1, 2)
					procFailed(r, err, 1, "recv from dead rank")
					// Later operations with the dead rank fail at once.
					procFailed(r, ranks.Send(c, buf, 1, 3), 1, "send to dead rank")
					failed, err := c.GetFailed()
					r.Check(err, "GetFailed")
					if len(failed) != 1 || failed[0] != 1 {
						r.Errorf("GetFailed = %v", failed)
					}
					pingPong(r, 2, 50)
				case 2:
					pingPong(r, 0, 50)
				}
			})
		})
	}
}

// Ranks that sleep waiting for one peer also sleep on a direct liveness
// word of that peer, which the kernel marks and wakes at its death; ranks
// 1 and 9 share one of rank 5's eight direct words. Ten ranks are told
// they have ten cores, so that they spin and then sleep as ranks that do
// not outnumber the cores do (the only ones that use the direct words).
func TestFailDirectWake(t *testing.T) {
	for _, d := range deaths {
		t.Run(d.name, func(t *testing.T) {
			opts := ranktest.Options{N: 10, Cores: 10, Dies: []int{5}}
			ranktest.RunOpts(t, opts, func(r *ranktest.R) {
				c := r.Comm
				waiters := []int{0, 1, 9}
				switch r.Rank {
				case 5:
					for range waiters {
						_, err := ranks.Recv(c, make([]byte, 1), ranks.AnySource, 1)
						r.Check(err, "ready")
					}
					r.Die(d.how)
				case 0, 1, 9:
					r.Check(ranks.Send(c, []byte{1}, 5, 1), "ready")
					_, err := ranks.Recv(c, make([]byte, 1), 5, 2)
					procFailed(r, err, 5, "recv from the rank that died")
					if r.Rank != 1 {
						pingPong(r, 9-r.Rank, 20) // 0 and 9 still talk
					}
				}
			})
		})
	}
}

// A blocking send that needs the receiver (rendezvous or synchronous)
// returns ErrProcFailed when the receiver dies before matching it.
func TestFailBlockingSend(t *testing.T) {
	for _, mode := range []string{"rendezvous", "ssend", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			env := protocolEnv(mode)
			ranktest.RunOpts(t, ranktest.Options{N: 2, Dies: []int{1}, Env: env}, func(r *ranktest.R) {
				c := r.Comm
				if r.Rank == 1 {
					_, err := ranks.Recv(c, make([]byte, 5), 0, 1)
					r.Check(err, "recv ready")
					r.Kill()
				}
				r.Check(ranks.Send(c, []byte("ready"), 1, 1), "ready")
				var err error
				switch mode {
				case "ssend":
					err = ranks.Ssend(c, make([]byte, 8), 1, 2)
				default:
					err = ranks.Send(c, make([]byte, 1<<20), 1, 2)
				}
				procFailed(r, err, 1, mode)
			})
		})
	}
}

// Rule 2: nonblocking operations never report failure at initiation,
// only at completion (Wait and Test).
func TestFailNonblocking(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Dies: []int{1}}, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 1 {
			_, err := ranks.Recv(c, make([]byte, 1), 0, 1)
			r.Check(err, "recv")
			r.Die(ranktest.Exit)
		}
		rq, err := ranks.Irecv(c, make([]byte, 8), 1, 7)
		r.Check(err, "irecv posted before the death")
		r.Check(ranks.Send(c, []byte{1}, 1, 1), "trigger")
		_, err = rq.Wait()
		procFailed(r, err, 1, "wait on irecv")
		// Now the failure is known here: initiation still succeeds.
		rq2, err := ranks.Irecv(c, make([]byte, 8), 1, 8)
		if err != nil {
			r.Errorf("Irecv from a known-dead rank reported %v at initiation", err)
		}
		sq, err := ranks.Isend(c, make([]byte, 100000), 1, 8)
		if err != nil {
			r.Errorf("Isend to a known-dead rank reported %v at initiation", err)
		}
		_, done, err := sq.Test()
		if !done {
			r.Errorf("Test of a send to a dead rank is not complete")
		}
		procFailed(r, err, 1, "test on isend")
		_, err = rq2.Wait()
		procFailed(r, err, 1, "wait on irecv")
	})
}

// Rule 3: AnySource receives. A blocking one returns ErrProcFailed; a
// nonblocking one returns ErrProcFailedPending and stays pending;
// FailureAck re-enables AnySource and the pending receive then completes.
// A receive that a message matches completes even with the failure
// unacknowledged.
func TestFailAnySource(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{1}}, func(r *ranktest.R) {
		c := r.Comm
		switch r.Rank {
		case 1:
			r.Kill()
		case 2:
			// Wait for rank 0's go, then send the message its pending
			// AnySource receive will match.
			_, err := ranks.Recv(c, make([]byte, 1), 0, 1)
			r.Check(err, "go")
			r.Check(ranks.Send(c, []int{22}, 0, 5), "send")
			r.Check(ranks.Send(c, []int{23}, 0, 6), "send")
			return
		}
		// Rank 0. Learn of the failure through a specific receive.
		_, err := ranks.Recv(c, make([]byte, 1), 1, 1)
		procFailed(r, err, 1, "recv from 1")
		_, err = ranks.Recv(c, make([]int, 1), ranks.AnySource, 5)
		procFailed(r, err, -1, "blocking AnySource recv")
		buf := make([]int, 1)
		rq, err := ranks.Irecv(c, buf, ranks.AnySource, 5)
		r.Check(err, "irecv any")
		if _, err := rq.Wait(); !errors.Is(err, ranks.ErrProcFailedPending) {
			r.Errorf("Wait on pending AnySource: %v", err)
		}
		if _, done, err := rq.Test(); done || !errors.Is(err, ranks.ErrProcFailedPending) {
			r.Errorf("Test on pending AnySource: done=%v %v", done, err)
		}
		if acked, _ := c.FailureGetAcked(); len(acked) != 0 {
			r.Errorf("acked before FailureAck: %v", acked)
		}
		r.Check(c.FailureAck(), "ack")
		if acked, _ := c.FailureGetAcked(); len(acked) != 1 || acked[0] != 1 {
			r.Errorf("FailureGetAcked = %v", acked)
		}
		r.Check(ranks.Send(c, []byte{1}, 2, 1), "go")
		st, err := rq.Wait()
		if err != nil || buf[0] != 22 || st.Source != 2 {
			r.Errorf("pending receive after ack: %+v %v %v", st, err, buf)
		}
		// The next AnySource receive works too.
		st, err = ranks.Recv(c, buf, ranks.AnySource, 6)
		if err != nil || buf[0] != 23 {
			r.Errorf("AnySource after ack: %+v %v", st, err)
		}
	})
}

// An AnySource receive that a message already matches succeeds even
// though a failure is not acknowledged.
func TestFailAnySourceMatched(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{1}}, func(r *ranktest.R) {
		c := r.Comm
		switch r.Rank {
		case 1:
			r.Kill()
		case 2:
			r.Check(ranks.Send(c, []int{7}, 0, 5), "send")
			return
		}
		_, err := ranks.Recv(c, make([]byte, 1), 1, 1)
		procFailed(r, err, 1, "recv from 1")
		if _, err := c.Probe(2, 5); err != nil {
			r.Fatalf("probe: %v", err)
		}
		buf := make([]int, 1)
		if _, err := ranks.Recv(c, buf, ranks.AnySource, 5); err != nil || buf[0] != 7 {
			r.Errorf("matched AnySource receive: %v %v", err, buf)
		}
	})
}

// A sender that dies during a rendezvous: the receiver gets either the
// whole message (the copy won the race) or ErrProcFailed, never garbage
// and never a hang.
func TestFailSenderMidRendezvous(t *testing.T) {
	// "allocmem": both buffers from AllocMem, copied through mappings.
	for _, mode := range []string{"cma", "pipelined", "allocmem"} {
		t.Run(mode, func(t *testing.T) {
			env := protocolEnv(mode)
			ranktest.RunOpts(t, ranktest.Options{N: 2, Dies: []int{1}, Env: env}, func(r *ranktest.R) {
				c := r.Comm
				const n = 4 << 20
				alloc := func() []byte {
					if mode != "allocmem" {
						return make([]byte, n)
					}
					b, err := ranks.AllocMem(n)
					r.Check(err, "AllocMem")
					return b
				}
				if r.Rank == 1 {
					big := alloc()
					for i := range big {
						big[i] = byte(i % 251)
					}
					_, err := ranks.Isend(c, big, 0, 2)
					r.Check(err, "isend")
					r.Check(ranks.Send(c, []byte{1}, 0, 1), "posted")
					r.Kill()
				}
				_, err := ranks.Recv(c, make([]byte, 1), 1, 1)
				r.Check(err, "posted")
				// Learn of the death first, so that the copy surely races it.
				_, err = ranks.Recv(c, make([]byte, 1), 1, 3)
				procFailed(r, err, 1, "recv tag 3")
				buf := alloc()
				_, err = ranks.Recv(c, buf, 1, 2)
				if err == nil {
					for i := range buf {
						if buf[i] != byte(i%251) {
							r.Fatalf("receive succeeded with wrong byte %d", i)
						}
					}
					return
				}
				procFailed(r, err, 1, "recv of the rendezvous")
			})
		})
	}
}

// Rule 10: a rank that finalizes and exits is not a failure. A receive
// that only it could satisfy reports ErrPeerFinalized instead of hanging.
func TestFinalizeIsNotFailure(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 1 {
			r.Check(ranks.Send(c, []byte("bye"), 0, 1), "send")
			return // finalize and exit 0
		}
		buf := make([]byte, 3)
		_, err := ranks.Recv(c, buf, 1, 1)
		r.Check(err, "recv before finalize")
		_, err = ranks.Recv(c, buf, 1, 2)
		if !errors.Is(err, ranks.ErrPeerFinalized) || errors.Is(err, ranks.ErrProcFailed) {
			r.Errorf("recv from a finalized rank: %v", err)
		}
		if f, _ := c.GetFailed(); len(f) != 0 {
			r.Errorf("GetFailed = %v after a clean finalize", f)
		}
		for _, fate := range r.World.Fates() {
			if fate.Rank == 1 && fate.State != ranks.StateFinalized {
				r.Errorf("rank 1 is %s", fate.State)
			}
		}
	})
}

// Finalize completes even when ranks have failed.
func TestFinalizeAfterFailures(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Dies: []int{1, 3}}, func(r *ranktest.R) {
		if r.Rank%2 == 1 {
			r.Kill()
		}
		_, err := ranks.Recv(r.Comm, make([]byte, 1), 1, 1)
		procFailed(r, err, 1, "recv")
	})
}

// A kill point chosen from outside the body (Options.Kill).
func TestKillPoint(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Kill: &ranktest.KillAt{Rank: 0, Point: "after-first", How: ranktest.Exit}},
		func(r *ranktest.R) {
			c := r.Comm
			peer := 1 - r.Rank
			for i := range 10 {
				if r.Rank == 0 {
					r.Check(ranks.Send(c, []int{i}, peer, 0), "send")
				} else {
					_, err := ranks.Recv(c, make([]int, 1), peer, 0)
					if i == 0 {
						r.Check(err, "first")
						continue
					}
					procFailed(r, err, 0, "after the kill")
					return
				}
				r.Point("after-first")
			}
		})
}

// Fault injection: a random rank dies at a random point of a loop of
// mixed operations. Every survivor's every operation either succeeds or
// reports the victim's failure; nothing hangs.
func TestFaultInjectionLoop(t *testing.T) {
	for seed := range 6 {
		rng := rand.New(rand.NewSource(int64(seed)))
		victim := rng.Intn(4)
		at := rng.Intn(200)
		how := deaths[rng.Intn(len(deaths))].how
		t.Run(fmt.Sprintf("seed%d-rank%d-at%d", seed, victim, at), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 4, Dies: []int{victim}}, func(r *ranktest.R) {
				c := r.Comm
				n := r.Size
				next, prev := (r.Rank+1)%n, (r.Rank+n-1)%n
				sizes := []int{8, 3000, 70000}
				for i := range 200 {
					if r.Rank == victim && i == at {
						r.Die(how)
					}
					sz := sizes[i%3]
					sbuf := make([]byte, sz)
					rbuf := make([]byte, sz)
					var err error
					switch i % 4 {
					case 0:
						_, err = ranks.Sendrecv(c, sbuf, next, i, rbuf, prev, i)
					case 1:
						var rq, sq *ranks.Request
						rq, err = ranks.Irecv(c, rbuf, prev, i)
						if err == nil {
							sq, err = ranks.Isend(c, sbuf, next, i)
						}
						if err == nil {
							err = ranks.WaitAll([]*ranks.Request{rq, sq}, nil)
						}
					case 2:
						rq, e1 := ranks.Irecv(c, rbuf, ranks.AnySource, i)
						err = e1
						if err == nil {
							err = ranks.Send(c, sbuf, next, i)
						}
						if err == nil {
							_, err = rq.Wait()
						}
						if err != nil && rq != nil {
							rq.Cancel()
						}
					case 3:
						if r.Rank%2 == 0 {
							err = ranks.Ssend(c, sbuf, next, i)
							if err == nil {
								_, err = ranks.Recv(c, rbuf, prev, i)
							}
						} else {
							_, err = ranks.Recv(c, rbuf, prev, i)
							if err == nil {
								err = ranks.Ssend(c, sbuf, next, i)
							}
						}
					}
					if err == nil {
						continue
					}
					// A survivor stops at its first error, as an application
					// would; a neighbour may then see it finalized.
					if !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrProcFailedPending) &&
						!errors.Is(err, ranks.ErrPeerFinalized) {
						r.Fatalf("iteration %d: unexpected error %v", i, err)
					}
					if f, _ := c.GetFailed(); len(f) > 1 || len(f) == 1 && f[0] != victim {
						r.Fatalf("iteration %d: failed ranks %v, victim %d", i, f, victim)
					}
					return
				}
			})
		})
	}
}

// Fault injection through the environment: a rank dies inside its N-th
// call, or after a duration, and the others see it fail.
func TestKillInjection(t *testing.T) {
	for _, spec := range []string{"1@op=3", "1@10ms"} {
		t.Run(spec, func(t *testing.T) {
			o := ranktest.Options{N: 2, Dies: []int{1}, Env: []string{job.EnvKill + "=" + spec}, Quiet: true}
			ranktest.RunOpts(t, o, func(r *ranktest.R) {
				c := r.Comm
				if r.Rank == 1 {
					for i := 0; ; i++ { // dies in here
						ranks.Recv(c, make([]byte, 1), 0, i)
					}
				}
				for i := 0; ; i++ {
					if err := ranks.Send(c, []byte{1}, 1, i); err != nil {
						procFailed(r, err, 1, "send to the killed rank")
						return
					}
				}
			})
		})
	}
}

func TestKillInjectionBadSpec(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 1, Dies: []int{0}, Env: []string{job.EnvKill + "=0@soon"}, Quiet: true}, func(r *ranktest.R) {
		r.Errorf("Init accepted a bad %s", job.EnvKill)
	})
}
