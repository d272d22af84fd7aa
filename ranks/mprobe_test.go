package ranks_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// The message sizes of the protocols: inline in the descriptor, through
// a chunk, by rendezvous.
const (
	sizeInline = 8
	sizeChunk  = 5000
	sizeRndv   = 300000
)

// oneHSSlot is a layout in which a sender has a single handshake slot:
// while one rendezvous waits for its match, the next large message goes
// in fragments (fallback.go).
func oneHSSlot(n int) *launch.Layout {
	lay := launch.DefaultLayout(n)
	lay.HSSlots = 1
	return &lay
}

// fill and check give each message distinct, checkable bytes.
func fill(b []byte, seed int) {
	for i := range b {
		b[i] = byte(i*7 + seed)
	}
}

func checkFill(r *ranktest.R, b []byte, seed int, what string) {
	for i := range b {
		if b[i] != byte(i*7+seed) {
			r.Errorf("%s: byte %d of %d is %d, want %d", what, i, len(b), b[i], byte(i*7+seed))
			return
		}
	}
}

// Mprobe and Mrecv for every protocol: inline, chunk, rendezvous and
// fragments (a second rendezvous while the only handshake slot is held),
// with cross-process copies and with the pipelined copy. The probes go
// in the opposite order of the sends, so each message waits, held,
// while later ones are probed; statuses and data are checked, and
// Improbe, Imrecv, typed buffers and truncation too.
func TestMprobeProtocols(t *testing.T) {
	for _, mode := range []string{"cma", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			o := ranktest.Options{N: 2, Env: protocolEnv(mode), Layout: oneHSSlot(2)}
			ranktest.RunOpts(t, o, func(r *ranktest.R) {
				c := r.Comm
				sizes := []int{sizeRndv, sizeRndv + 8, sizeInline, sizeChunk, 0}
				if r.Rank == 0 {
					var reqs []*ranks.Request
					for i, n := range sizes {
						b := make([]byte, n)
						fill(b, i)
						q, err := ranks.Isend(c, b, 1, 10+i)
						r.Check(err, "isend")
						reqs = append(reqs, q)
						if i == 0 && r.World.HSSlotsFree() != 0 {
							r.Errorf("a handshake slot is free after the first rendezvous: the second would not be fragmented")
						}
					}
					r.Check(ranks.WaitAll(reqs, nil), "wait sends")
					// Typed, truncated, and AnySource/AnyTag.
					r.Check(ranks.Send(c, []int32{1, 2, 3, 4}, 1, 20), "send typed")
					r.Check(ranks.Send(c, make([]byte, sizeRndv), 1, 21), "send to truncate")
					return
				}
				// Every message is in (probe the last one sent first).
				held := make([]*ranks.Message, len(sizes))
				for i := len(sizes) - 1; i >= 0; i-- {
					var st ranks.Status
					var err error
					if i%2 == 0 {
						held[i], st, err = c.Mprobe(0, 10+i)
					} else {
						ok := false
						for !ok && err == nil {
							held[i], st, ok, err = c.Improbe(0, 10+i)
							runtime.Gosched()
						}
					}
					r.Check(err, "mprobe")
					if st.Source != 0 || st.Tag != 10+i || st.Bytes != sizes[i] {
						r.Errorf("probe of message %d: %+v", i, st)
					}
					// Taken out of matching: no probe sees it again.
					if _, ok, err := c.Iprobe(0, 10+i); ok || err != nil {
						r.Errorf("message %d still visible to Iprobe after Mprobe (ok=%v, %v)", i, ok, err)
					}
				}
				for i, n := range sizes {
					b := make([]byte, n)
					var st ranks.Status
					var err error
					if i%2 == 0 {
						st, err = ranks.Mrecv(held[i], b)
					} else {
						var q *ranks.Request
						q, err = ranks.Imrecv(held[i], b)
						r.Check(err, "imrecv")
						st, err = q.Wait()
					}
					r.Check(err, fmt.Sprintf("mrecv of message %d", i))
					if st.Source != 0 || st.Tag != 10+i || st.Bytes != n || st.Count != n {
						r.Errorf("mrecv of message %d: %+v", i, st)
					}
					checkFill(r, b, i, fmt.Sprintf("message %d (%d bytes)", i, n))
					if _, err := ranks.Mrecv(held[i], b); !errors.Is(err, ranks.ErrRequest) {
						r.Errorf("second Mrecv of message %d: %v, want ErrRequest", i, err)
					}
				}
				msg, st, err := c.Mprobe(ranks.AnySource, ranks.AnyTag)
				r.Check(err, "mprobe any")
				if st.Tag != 20 || st.Bytes != 16 || ranks.Count[int32](st) != 4 {
					r.Errorf("typed probe: %+v", st)
				}
				v := make([]int32, 4)
				st, err = ranks.Mrecv(msg, v)
				r.Check(err, "mrecv typed")
				if st.Count != 4 || v[0] != 1 || v[3] != 4 {
					r.Errorf("typed mrecv: %+v %v", st, v)
				}
				msg, _, err = c.Mprobe(0, 21)
				r.Check(err, "mprobe to truncate")
				short := make([]byte, 1000)
				st, err = ranks.Mrecv(msg, short)
				if !errors.Is(err, ranks.ErrTruncate) || st.Bytes != 1000 {
					r.Errorf("truncated mrecv: %+v %v", st, err)
				}
			})
		})
	}
}

// Several goroutines of one rank each Mprobe and Mrecv from one stream
// of messages of every protocol (ThreadMultiple): every message is
// received exactly once, whole.
func TestMprobeConcurrent(t *testing.T) {
	for _, mode := range []string{"cma", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			o := ranktest.Options{N: 2, Env: protocolEnv(mode), Quiet: true}
			ranktest.RunOpts(t, o, func(r *ranktest.R) {
				c := r.Comm
				const msgs, workers = 240, 6
				sizes := []int{sizeInline, sizeChunk, sizeRndv}
				if r.Rank == 0 {
					for i := range msgs {
						b := make([]int64, sizes[i%3]/8)
						b[0], b[len(b)-1] = int64(i), int64(i)
						r.Check(ranks.Send(c, b, 1, 5), "send")
					}
					for range workers {
						r.Check(ranks.Send(c, []int64{-1}, 1, 5), "send stop")
					}
					return
				}
				var mu sync.Mutex
				seen := make([]int, msgs)
				var wg sync.WaitGroup
				for g := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							var msg *ranks.Message
							var st ranks.Status
							var err error
							if g%2 == 0 {
								msg, st, err = c.Mprobe(0, 5)
							} else {
								ok := false
								for !ok && err == nil {
									msg, st, ok, err = c.Improbe(ranks.AnySource, 5)
									runtime.Gosched()
								}
							}
							if err != nil {
								r.Errorf("goroutine %d: probe: %v", g, err)
								return
							}
							b := make([]int64, st.Bytes/8)
							if _, err := ranks.Mrecv(msg, b); err != nil {
								r.Errorf("goroutine %d: mrecv: %v", g, err)
								return
							}
							if b[0] == -1 {
								return
							}
							if b[0] != b[len(b)-1] || len(b) != sizes[b[0]%3]/8 {
								r.Errorf("goroutine %d: damaged message %d: %d elements, last %d", g, b[0], len(b), b[len(b)-1])
							}
							mu.Lock()
							seen[b[0]]++
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				for i, n := range seen {
					if n != 1 {
						r.Errorf("message %d received %d times", i, n)
					}
				}
			})
		})
	}
}

// MPI's no-proc message, and bad input: a nil, zero or spent message,
// bad ranks and tags, element types and counts.
func TestMprobeProcNullAndBadInput(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		for _, nonblocking := range []bool{false, true} {
			var msg *ranks.Message
			var st ranks.Status
			var err error
			if nonblocking {
				var ok bool
				msg, st, ok, err = c.Improbe(ranks.ProcNull, 3)
				if !ok {
					r.Errorf("Improbe(ProcNull) not ok")
				}
			} else {
				msg, st, err = c.Mprobe(ranks.ProcNull, ranks.AnyTag)
			}
			r.Check(err, "mprobe ProcNull")
			if st.Source != ranks.ProcNull || st.Tag != ranks.AnyTag || st.Bytes != 0 {
				r.Errorf("probe of ProcNull: %+v", st)
			}
			b := []byte{7}
			if nonblocking {
				var q *ranks.Request
				q, err = ranks.Imrecv(msg, b)
				r.Check(err, "imrecv no-proc")
				st, err = q.Wait()
			} else {
				st, err = ranks.Mrecv(msg, b)
			}
			if err != nil || st.Source != ranks.ProcNull || st.Tag != ranks.AnyTag || st.Bytes != 0 || st.Count != 0 || b[0] != 7 {
				r.Errorf("receive of the no-proc message: %+v %v %v", st, err, b)
			}
			if _, err := ranks.Mrecv(msg, b); !errors.Is(err, ranks.ErrRequest) {
				r.Errorf("second receive of the no-proc message: %v", err)
			}
		}
		wantClass := func(err, class error, what string) {
			if !errors.Is(err, class) {
				r.Errorf("%s: %v, want %v", what, err, class)
			}
		}
		_, err := ranks.Mrecv[byte](nil, nil)
		wantClass(err, ranks.ErrRequest, "Mrecv(nil)")
		_, err = ranks.Imrecv[byte](nil, nil)
		wantClass(err, ranks.ErrRequest, "Imrecv(nil)")
		_, err = ranks.Mrecv(&ranks.Message{}, []byte{})
		wantClass(err, ranks.ErrRequest, "Mrecv of a zero Message")
		_, _, err = c.Mprobe(5, 1)
		wantClass(err, ranks.ErrRank, "Mprobe rank 5")
		_, _, _, err = c.Improbe(-7, 1)
		wantClass(err, ranks.ErrRank, "Improbe rank -7")
		_, _, err = c.Mprobe(0, -5)
		wantClass(err, ranks.ErrTag, "Mprobe tag -5")
		var nilComm *ranks.Comm
		_, _, err = nilComm.Mprobe(0, 1)
		wantClass(err, ranks.ErrComm, "Mprobe on nil")

		// A real message, received with bad arguments first: they do not
		// spend it.
		peer := 1 - r.Rank
		r.Check(ranks.Send(c, []byte("x"), peer, 4), "send")
		msg, _, err := c.Mprobe(peer, 4)
		r.Check(err, "mprobe")
		_, err = ranks.MrecvPtr(msg, nil, -1, 1)
		wantClass(err, ranks.ErrCount, "MrecvPtr count -1")
		_, err = ranks.ImrecvPtr(msg, nil, 1, 0)
		wantClass(err, ranks.ErrCount, "ImrecvPtr element size 0")
		_, err = ranks.MrecvPtr(msg, nil, 3, 1)
		wantClass(err, ranks.ErrBuffer, "MrecvPtr nil buffer")
		_, err = ranks.Mrecv(msg, []string{"no"})
		wantClass(err, ranks.ErrType, "Mrecv into []string")
		b := make([]byte, 1)
		if _, err := ranks.Mrecv(msg, b); err != nil || b[0] != 'x' {
			r.Errorf("Mrecv after bad calls: %v %q", err, b)
		}
		_, err = ranks.Imrecv(msg, b)
		wantClass(err, ranks.ErrRequest, "Imrecv of a spent message")
	})
}

// A sender that dies after its messages were probed: the eager message
// (already here) is received; the rendezvous (whose data were in the
// sender) fails with ErrProcFailed, blocking or not; nothing hangs.
func TestMprobeSenderDies(t *testing.T) {
	for _, mode := range []string{"cma", "pipelined"} {
		for _, nb := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nonblocking=%v", mode, nb), func(t *testing.T) {
				o := ranktest.Options{N: 2, Env: protocolEnv(mode), Dies: []int{1}, Quiet: true}
				ranktest.RunOpts(t, o, func(r *ranktest.R) {
					c := r.Comm
					if r.Rank == 1 {
						for i, n := range []int{sizeInline, sizeChunk, sizeRndv} {
							b := make([]byte, n)
							fill(b, i)
							_, err := ranks.Isend(c, b, 0, i)
							r.Check(err, "isend")
						}
						_, err := ranks.Recv(c, make([]byte, 1), 0, 9)
						r.Check(err, "recv go")
						r.Kill()
					}
					var held [3]*ranks.Message
					for i := range held {
						var err error
						held[i], _, err = c.Mprobe(1, i)
						r.Check(err, "mprobe")
					}
					r.Check(ranks.Send(c, []byte{1}, 1, 9), "send go")
					_, err := ranks.Recv(c, make([]byte, 1), 1, 10)
					procFailed(r, err, 1, "recv from the dead sender")
					recv := func(m *ranks.Message, b []byte) (ranks.Status, error) {
						if !nb {
							return ranks.Mrecv(m, b)
						}
						q, err := ranks.Imrecv(m, b)
						if err != nil {
							r.Errorf("Imrecv reported %v at initiation", err)
							return ranks.Status{}, err
						}
						return q.Wait()
					}
					for i, n := range []int{sizeInline, sizeChunk} {
						b := make([]byte, n)
						st, err := recv(held[i], b)
						r.Check(err, "receive of a held eager message from a dead sender")
						if st.Bytes != n {
							r.Errorf("eager message %d: %+v", i, st)
						}
						checkFill(r, b, i, "eager message")
					}
					_, err = recv(held[2], make([]byte, sizeRndv))
					procFailed(r, err, 1, "receive of a held rendezvous from a dead sender")
				})
			})
		}
	}
}

// The sender dies while Mrecv copies its rendezvous (the receiver kills
// it at a stage of the copy): Mrecv returns the whole message or
// ErrProcFailed, never damaged data and never a hang.
func TestMprobeSenderDiesMidCopy(t *testing.T) {
	for _, mode := range []string{"cma", "pipelined"} {
		for _, stage := range []string{"matched", "copying"} {
			t.Run(mode+"/"+stage, func(t *testing.T) {
				o := ranktest.Options{N: 2, Env: protocolEnv(mode), Dies: []int{1}, Quiet: true}
				ranktest.RunOpts(t, o, func(r *ranktest.R) {
					c := r.Comm
					const n = 4 << 20
					if r.Rank == 1 {
						b := make([]byte, n)
						fill(b, 3)
						_, err := ranks.Isend(c, b, 0, 1)
						r.Check(err, "isend")
						_, err = ranks.Recv(c, make([]byte, 1), 0, 2) // never comes
						r.Fatalf("recv returned: %v", err)
					}
					msg, _, err := c.Mprobe(1, 1)
					r.Check(err, "mprobe")
					reached := ranks.KillAtStage(stage, 1)
					b := make([]byte, n)
					_, err = ranks.Mrecv(msg, b)
					if !reached() && stage == "matched" {
						r.Errorf("stage %s not reached", stage)
					}
					if err == nil {
						checkFill(r, b, 3, "message whose sender died mid-copy")
						return
					}
					procFailed(r, err, 1, "mrecv of a rendezvous whose sender died")
				})
			})
		}
	}
}

// An AnySource matched probe with an unacknowledged failure behaves as
// Probe: ErrProcFailed, blocking or not; after FailureAck it works.
func TestMprobeAnySourceFailure(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{1}}, func(r *ranktest.R) {
		c := r.Comm
		switch r.Rank {
		case 1:
			r.Kill()
		case 2:
			_, err := ranks.Recv(c, make([]byte, 1), 0, 1)
			r.Check(err, "go")
			r.Check(ranks.Send(c, []byte("late"), 0, 5), "send")
			return
		}
		_, err := ranks.Recv(c, make([]byte, 1), 1, 1)
		procFailed(r, err, 1, "recv from 1")
		_, _, err = c.Mprobe(ranks.AnySource, 5)
		procFailed(r, err, -1, "blocking AnySource Mprobe")
		_, _, ok, err := c.Improbe(ranks.AnySource, 5)
		if ok {
			r.Errorf("Improbe found a message")
		}
		procFailed(r, err, -1, "AnySource Improbe")
		// A named source that is alive is not affected.
		if _, _, ok, err := c.Improbe(2, 5); ok || err != nil {
			r.Errorf("Improbe from a live rank: ok=%v %v", ok, err)
		}
		r.Check(c.FailureAck(), "ack")
		r.Check(ranks.Send(c, []byte{1}, 2, 1), "go")
		msg, st, err := c.Mprobe(ranks.AnySource, 5)
		r.Check(err, "AnySource Mprobe after ack")
		b := make([]byte, 4)
		if _, err := ranks.Mrecv(msg, b); err != nil || st.Source != 2 || string(b) != "late" {
			r.Errorf("after ack: %+v %v %q", st, err, b)
		}
	})
}

// A revoke while a matched probe holds a rendezvous: the receiver drops
// it, the sender's send completes with ErrRevoked (it does not wait for
// a receive that will never come), and Mrecv returns ErrRevoked.
func TestMprobeRevoke(t *testing.T) {
	for _, who := range []string{"sender", "receiver"} {
		t.Run("revoked-by-"+who, func(t *testing.T) {
			ranktest.Run(t, 2, func(r *ranktest.R) {
				w := r.Comm
				c, err := w.Dup()
				r.Check(err, "dup")
				if r.Rank == 0 {
					big := make([]byte, sizeRndv)
					q, err := ranks.Isend(c, big, 1, 1)
					r.Check(err, "isend")
					sq, err := ranks.Issend(c, []byte{1}, 1, 2)
					r.Check(err, "issend")
					_, err = ranks.Recv(w, make([]byte, 1), 1, 7)
					r.Check(err, "recv held")
					if who == "sender" {
						r.Check(ulfm.Revoke(c), "revoke")
					}
					_, err = q.Wait()
					wantRevoked(r, err, "rendezvous send held by a matched probe")
					_, err = sq.Wait()
					wantRevoked(r, err, "synchronous send held by a matched probe")
					return
				}
				m1, _, err := c.Mprobe(0, 1)
				r.Check(err, "mprobe 1")
				m2, _, err := c.Mprobe(0, 2)
				r.Check(err, "mprobe 2")
				r.Check(ranks.Send(w, []byte{1}, 0, 7), "send held")
				if who == "receiver" {
					r.Check(ulfm.Revoke(c), "revoke")
				} else {
					_, err := ranks.Recv(c, make([]byte, 1), 0, 3) // until the revoke
					wantRevoked(r, err, "recv on the revoked communicator")
				}
				_, err = ranks.Mrecv(m1, make([]byte, sizeRndv))
				wantRevoked(r, err, "Mrecv of a held rendezvous")
				_, err = ranks.Imrecv(m2, make([]byte, 1))
				wantRevoked(r, err, "Imrecv of a held synchronous message")
				if _, err := ranks.Mrecv(m1, make([]byte, 1)); !errors.Is(err, ranks.ErrRequest) {
					r.Errorf("Mrecv of a dropped message, again: %v", err)
				}
			})
		})
	}
}

func wantRevoked(r *ranktest.R, err error, what string) {
	if !errors.Is(err, ranks.ErrRevoked) {
		r.Errorf("%s: %v, want ErrRevoked", what, err)
	}
}
