package ranks_test

import (
	"errors"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// Buffered sends of every protocol complete before the receiver has
// posted anything (it waits for a message sent after them), the caller's
// buffers may be overwritten at once, and the receiver gets the data as
// they were; the attached buffer, sized exactly as MPI says (each
// message plus BsendOverhead), holds them all; BufferDetach returns it,
// and the process's buffer or the communicator's is used as attached.
func TestBsendProtocols(t *testing.T) {
	for _, mode := range []string{"cma", "pipelined"} {
		for _, which := range []string{"process", "comm"} {
			t.Run(mode+"/"+which, func(t *testing.T) {
				o := ranktest.Options{N: 2, Env: protocolEnv(mode), Layout: oneHSSlot(2)}
				ranktest.RunOpts(t, o, func(r *ranktest.R) {
					c := r.Comm
					// The second rendezvous goes in fragments (one handshake slot).
					sizes := []int{sizeRndv, sizeRndv + 8, sizeInline, sizeChunk, 0}
					if r.Rank == 1 {
						_, err := ranks.Recv(c, make([]byte, 1), 0, 99)
						r.Check(err, "recv go")
						for i := len(sizes) - 1; i >= 0; i-- {
							b := make([]byte, sizes[i])
							st, err := ranks.Recv(c, b, 0, i)
							r.Check(err, "recv")
							if st.Bytes != sizes[i] {
								r.Errorf("message %d: %+v", i, st)
							}
							checkFill(r, b, i, fmt.Sprintf("buffered message %d", i))
						}
						return
					}
					space := 0
					for _, n := range sizes {
						space += n + ranks.BsendOverhead
					}
					attached := make([]byte, space)
					if which == "process" {
						r.Check(r.World.BufferAttach(attached), "attach")
					} else {
						r.Check(c.BufferAttach(attached), "comm attach")
						// The process's buffer, too small, is not used.
						r.Check(r.World.BufferAttach(make([]byte, 10)), "attach small")
					}
					bufs := make([][]byte, len(sizes))
					for i, n := range sizes {
						bufs[i] = make([]byte, n)
						fill(bufs[i], i)
						if i%2 == 0 {
							r.Check(ranks.Bsend(c, bufs[i], 1, i), "bsend")
						} else {
							q, err := ranks.Ibsend(c, bufs[i], 1, i)
							r.Check(err, "ibsend")
							if _, done, err := q.Test(); !done || err != nil {
								r.Errorf("Ibsend's request: done=%v %v", done, err)
							}
						}
					}
					for _, b := range bufs {
						fill(b, 200) // the caller may reuse its buffers at once
					}
					r.Check(ranks.Send(c, []byte{1}, 1, 99), "send go")
					var got []byte
					var err error
					if which == "process" {
						got, err = r.World.BufferDetach()
					} else {
						got, err = c.BufferDetach()
						if _, derr := r.World.BufferDetach(); derr != nil {
							r.Errorf("detach of the process buffer: %v", derr)
						}
					}
					r.Check(err, "detach")
					if len(got) != len(attached) || unsafe.SliceData(got) != unsafe.SliceData(attached) {
						r.Errorf("detach returned another buffer")
					}
					clear(got) // ours again: the receiver must be done with it
				})
			})
		}
	}
}

// A message that does not fit fails with ErrBuffer and is not sent;
// without a buffer, a message that must wait fails too. Attaching twice
// and detaching nothing fail with ErrBuffer.
func TestBsendOverflow(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 1 {
			_, err := ranks.Recv(c, make([]byte, 1), 0, 99)
			r.Check(err, "recv go")
			b := make([]byte, sizeRndv)
			_, err = ranks.Recv(c, b, 0, 1)
			r.Check(err, "recv")
			checkFill(r, b, 1, "the buffered message")
			_, err = ranks.Recv(c, b[:1], 0, 4)
			r.Check(err, "recv eager")
			if b[0] != 5 {
				r.Errorf("eager buffered message: %d", b[0])
			}
			_, err = ranks.Recv(c, b[:1], 0, 3)
			r.Check(err, "recv end")
			if _, ok, err := c.Iprobe(0, 2); ok || err != nil {
				r.Errorf("a message that did not fit was sent (ok=%v, %v)", ok, err)
			}
			r.Check(ranks.Send(c, []byte{1}, 0, 5), "send done")
			return
		}
		b := make([]byte, sizeRndv)
		fill(b, 1)
		if err := ranks.Bsend(c, b, 1, 2); !errors.Is(err, ranks.ErrBuffer) {
			r.Errorf("Bsend of a rendezvous without a buffer: %v", err)
		}
		if _, err := r.World.BufferDetach(); !errors.Is(err, ranks.ErrBuffer) {
			r.Errorf("detach without a buffer: %v", err)
		}
		// Eager messages that find room need no space.
		r.Check(ranks.Bsend(c, []byte{5}, 1, 4), "eager Bsend without a buffer")
		r.Check(r.World.BufferAttach(make([]byte, sizeRndv+ranks.BsendOverhead)), "attach")
		if err := r.World.BufferAttach(make([]byte, 100)); !errors.Is(err, ranks.ErrBuffer) {
			r.Errorf("second attach: %v", err)
		}
		r.Check(ranks.Bsend(c, b, 1, 1), "bsend that fits")
		if err := ranks.Bsend(c, b, 1, 2); !errors.Is(err, ranks.ErrBuffer) {
			r.Errorf("Bsend that does not fit: %v", err)
		}
		if _, err := ranks.Ibsend(c, b, 1, 2); !errors.Is(err, ranks.ErrBuffer) {
			r.Errorf("Ibsend that does not fit: %v", err)
		}
		q, err := ranks.BsendInit(c, b, 1, 2)
		r.Check(err, "bsend init")
		if err := q.Start(); !errors.Is(err, ranks.ErrBuffer) {
			r.Errorf("Start of a persistent Bsend that does not fit: %v", err)
		}
		r.Check(q.Free(), "free") // inactive after the failed Start
		r.Check(ranks.Send(c, []byte{1}, 1, 99), "go")
		r.Check(ranks.Send(c, []byte{1}, 1, 3), "end")
		_, err = r.World.BufferDetach()
		r.Check(err, "detach")
		_, err = ranks.Recv(c, make([]byte, 1), 1, 5)
		r.Check(err, "recv done")
	})
}

// A persistent buffered send: each Start buffers the message at once,
// the request completes at once, and the buffer may change between
// starts.
func TestBsendPersistent(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		const starts = 5
		if r.Rank == 1 {
			_, err := ranks.Recv(c, make([]byte, 1), 0, 99)
			r.Check(err, "recv go")
			b := make([]byte, sizeRndv)
			for i := range starts {
				_, err := ranks.Recv(c, b, 0, 1)
				r.Check(err, "recv")
				checkFill(r, b, i, "persistent buffered message")
			}
			return
		}
		r.Check(r.World.BufferAttach(make([]byte, starts*(sizeRndv+ranks.BsendOverhead))), "attach")
		b := make([]byte, sizeRndv)
		q, err := ranks.BsendInit(c, b, 1, 1)
		r.Check(err, "bsend init")
		for i := range starts {
			fill(b, i)
			r.Check(q.Start(), "start")
			_, err := q.Wait()
			r.Check(err, "wait")
		}
		fill(b, 100)
		r.Check(q.Free(), "free")
		r.Check(ranks.Send(c, []byte{1}, 1, 99), "go")
		_, err = r.World.BufferDetach()
		r.Check(err, "detach")
	})
}

// Finalize waits, as a detach does, for buffered messages still in the
// buffer: the rank returns right after its Bsend (ranktest finalizes and
// exits), and the receiver, which receives only then, gets the message.
func TestBsendFinalize(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 0 {
			r.Check(r.World.BufferAttach(make([]byte, sizeRndv+ranks.BsendOverhead)), "attach")
			b := make([]byte, sizeRndv)
			fill(b, 9)
			r.Check(ranks.Bsend(c, b, 1, 1), "bsend")
			r.Check(ranks.Send(c, []byte{1}, 1, 99), "go")
			return // Finalize
		}
		_, err := ranks.Recv(c, make([]byte, 1), 0, 99)
		r.Check(err, "recv go")
		// Receive only once rank 0 waits in Finalize (or, were it not to
		// wait, once it is gone).
		for {
			f := r.World.Fates()[0]
			if f.Blocked && f.Op == "Finalize" || f.Reaped {
				break
			}
			time.Sleep(50 * time.Microsecond) // polling the table, not ordering ranks
		}
		b := make([]byte, sizeRndv)
		_, err = ranks.Recv(c, b, 0, 1)
		r.Check(err, "recv of a message buffered by a rank that finalized")
		checkFill(r, b, 9, "buffered message")
	})
}

// The receiver of buffered messages dies, before its receive or while
// it copies: the detach returns (no hang) with the buffer and
// ErrProcFailed (or nothing, if the copy won the race); later buffered
// sends to it fail (Ibsend at completion).
func TestBsendReceiverDies(t *testing.T) {
	for _, mode := range []string{"cma", "pipelined"} {
		for _, when := range []string{"before", "matched", "copying"} {
			t.Run(mode+"/"+when, func(t *testing.T) {
				o := ranktest.Options{N: 2, Env: protocolEnv(mode), Dies: []int{1}, Quiet: true}
				ranktest.RunOpts(t, o, func(r *ranktest.R) {
					c := r.Comm
					const n = 4 << 20
					if r.Rank == 1 {
						_, err := ranks.Recv(c, make([]byte, 1), 0, 99)
						r.Check(err, "recv go")
						if when == "before" {
							r.Kill()
						}
						ranks.DieAtStage(when)
						ranks.Recv(c, make([]byte, n), 0, 1)
						// The sender copied every piece: die anyway.
						r.Kill()
					}
					attached := make([]byte, n+ranks.BsendOverhead)
					r.Check(r.World.BufferAttach(attached), "attach")
					r.Check(ranks.Bsend(c, make([]byte, n), 1, 1), "bsend")
					r.Check(ranks.Send(c, []byte{1}, 1, 99), "go")
					got, err := r.World.BufferDetach()
					// The message was delivered if the receiver got it all
					// before it died ("copying": the sender may copy every
					// piece itself).
					if err != nil || when != "copying" {
						procFailed(r, err, 1, "detach with a message to a dead rank")
					}
					if unsafe.SliceData(got) != unsafe.SliceData(attached) {
						r.Errorf("detach did not return the buffer")
					}
					_, err = ranks.Recv(c, make([]byte, 1), 1, 3)
					procFailed(r, err, 1, "recv from the dead rank")
					r.Check(r.World.BufferAttach(attached), "attach again")
					procFailed(r, ranks.Bsend(c, make([]byte, n), 1, 2), 1, "Bsend to a dead rank")
					q, err := ranks.Ibsend(c, make([]byte, 8), 1, 2)
					if err != nil {
						r.Errorf("Ibsend to a dead rank reported %v at initiation", err)
					} else {
						_, err = q.Wait()
						procFailed(r, err, 1, "Ibsend to a dead rank, at completion")
					}
					_, err = r.World.BufferDetach()
					r.Check(err, "detach: nothing was buffered for the dead rank")
				})
			})
		}
	}
}

// A revoke while buffered messages wait for their receive: their sends
// complete with ErrRevoked, so the detach returns, reporting it.
func TestBsendRevoke(t *testing.T) {
	for _, who := range []string{"sender", "receiver"} {
		t.Run("revoked-by-"+who, func(t *testing.T) {
			ranktest.Run(t, 2, func(r *ranktest.R) {
				w := r.Comm
				c, err := w.Dup()
				r.Check(err, "dup")
				if r.Rank == 1 {
					_, err := ranks.Recv(w, make([]byte, 1), 0, 99)
					r.Check(err, "recv bsent")
					if who == "receiver" {
						r.Check(ulfm.Revoke(c), "revoke")
					} else {
						_, err := ranks.Recv(c, make([]byte, 1), 0, 3) // until the revoke
						wantRevoked(r, err, "recv on the revoked communicator")
					}
					return
				}
				r.Check(r.World.BufferAttach(make([]byte, 2*(sizeRndv+ranks.BsendOverhead))), "attach")
				r.Check(ranks.Bsend(c, make([]byte, sizeRndv), 1, 1), "bsend")
				r.Check(ranks.Bsend(c, make([]byte, sizeRndv), 1, 2), "bsend")
				r.Check(ranks.Send(w, []byte{1}, 1, 99), "bsent")
				if who == "sender" {
					r.Check(ulfm.Revoke(c), "revoke")
				}
				_, err = r.World.BufferDetach()
				wantRevoked(r, err, "detach of messages on a revoked communicator")
				var e *ranks.Error
				if errors.As(err, &e) && e.Op != "BufferDetach" {
					r.Errorf("detach error's operation: %q", e.Op)
				}
				if err := ranks.Bsend(c, []byte{1}, 1, 1); !errors.Is(err, ranks.ErrRevoked) {
					r.Errorf("Bsend on a revoked communicator: %v", err)
				}
			})
		})
	}
}

// Bad input to the buffered calls.
func TestBsendBadInput(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		wantClass := func(err, class error, what string) {
			if !errors.Is(err, class) {
				r.Errorf("%s: %v, want %v", what, err, class)
			}
		}
		wantClass(ranks.Bsend(c, []byte{1}, 2, 1), ranks.ErrRank, "Bsend to rank 2")
		wantClass(ranks.Bsend(c, []byte{1}, ranks.AnySource, 1), ranks.ErrRank, "Bsend to AnySource")
		wantClass(ranks.Bsend(c, []byte{1}, 0, -1), ranks.ErrTag, "Bsend tag -1")
		wantClass(ranks.Bsend(c, []string{"x"}, 0, 1), ranks.ErrType, "Bsend of []string")
		wantClass(ranks.BsendPtr(c, nil, -2, 1, 0, 1), ranks.ErrCount, "BsendPtr count -2")
		_, err := ranks.IbsendPtr(c, nil, 4, 1, 0, 1)
		wantClass(err, ranks.ErrBuffer, "IbsendPtr nil buffer")
		var nilComm *ranks.Comm
		wantClass(ranks.Bsend(nilComm, []byte{1}, 0, 1), ranks.ErrComm, "Bsend on nil")
		wantClass(nilComm.BufferAttach(nil), ranks.ErrComm, "BufferAttach on nil")
		_, err = c.BufferDetach()
		wantClass(err, ranks.ErrBuffer, "Comm.BufferDetach without a buffer")
		r.Check(c.BufferAttach(nil), "attach an empty buffer")
		wantClass(c.BufferAttach(nil), ranks.ErrBuffer, "second Comm.BufferAttach")
		wantClass(ranks.Bsend(c, make([]byte, sizeRndv), 1-r.Rank, 1), ranks.ErrBuffer, "Bsend into an empty buffer")
		_, err = c.BufferDetach()
		r.Check(err, "detach the empty buffer")
		r.Check(ranks.Bsend(c, []byte{}, ranks.ProcNull, 1), "Bsend to ProcNull")
	})
}
