package ranks_test

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// Ready mode is standard mode: every size, with the receive posted
// first (as the mode asks) and without (as MPI allows an implementation
// to accept).
func TestRsend(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		sizes := []int{0, sizeInline, sizeChunk, sizeRndv}
		if r.Rank == 1 {
			var reqs []*ranks.Request
			bufs := make([][]byte, len(sizes))
			for i, n := range sizes {
				bufs[i] = make([]byte, n)
				q, err := ranks.Irecv(c, bufs[i], 0, i)
				r.Check(err, "irecv")
				reqs = append(reqs, q)
			}
			r.Check(ranks.Send(c, []byte{1}, 0, 99), "posted")
			r.Check(ranks.WaitAll(reqs, nil), "wait")
			for i := range sizes {
				checkFill(r, bufs[i], i, "ready-mode message")
			}
			for i, n := range sizes { // not posted first
				b := make([]byte, n)
				_, err := ranks.Recv(c, b, 0, 10+i)
				r.Check(err, "recv")
				checkFill(r, b, i, "ready-mode message without a posted receive")
			}
			return
		}
		_, err := ranks.Recv(c, make([]byte, 1), 1, 99)
		r.Check(err, "recv posted")
		for i, n := range sizes {
			b := make([]byte, n)
			fill(b, i)
			if i%2 == 0 {
				r.Check(ranks.Rsend(c, b, 1, i), "rsend")
			} else {
				q, err := ranks.Irsend(c, b, 1, i)
				r.Check(err, "irsend")
				_, err = q.Wait()
				r.Check(err, "wait irsend")
			}
		}
		for i, n := range sizes {
			b := make([]byte, n)
			fill(b, i)
			q, err := ranks.RsendInit(c, b, 1, 10+i)
			r.Check(err, "rsend init")
			r.Check(q.Start(), "start")
			_, err = q.Wait()
			r.Check(err, "wait")
			r.Check(q.Free(), "free")
		}
	})
}

// SendrecvReplace, Isendrecv and IsendrecvReplace around a ring of three
// ranks, for every protocol and with typed buffers: each rank gets its
// left neighbour's data, with the right status.
func TestSendrecvFamily(t *testing.T) {
	for _, mode := range []string{"cma", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			o := ranktest.Options{N: 3, Env: protocolEnv(mode)}
			ranktest.RunOpts(t, o, func(r *ranktest.R) {
				c := r.Comm
				right, left := (r.Rank+1)%3, (r.Rank+2)%3
				for _, n := range []int{0, sizeInline, sizeChunk, sizeRndv} {
					k := n / 4
					mine := func(i int) int32 { return int32(r.Rank*1000000 + i) }
					theirs := func(i int) int32 { return int32(left*1000000 + i) }
					check := func(b []int32, st ranks.Status, err error, what string) {
						if err != nil {
							r.Errorf("%s of %d bytes: %v", what, n, err)
							return
						}
						if st.Source != left || st.Tag != 7 || st.Count != k || st.Bytes != n {
							r.Errorf("%s of %d bytes: status %+v", what, n, st)
						}
						for i := range b {
							if b[i] != theirs(i) {
								r.Errorf("%s of %d bytes: element %d is %d, want %d", what, n, i, b[i], theirs(i))
								return
							}
						}
					}
					fresh := func() []int32 {
						b := make([]int32, k)
						for i := range b {
							b[i] = mine(i)
						}
						return b
					}
					b := fresh()
					st, err := ranks.SendrecvReplace(c, b, right, 7, left, 7)
					check(b, st, err, "SendrecvReplace")

					b = fresh()
					q, err := ranks.IsendrecvReplace(c, b, right, 7, left, 7)
					r.Check(err, "IsendrecvReplace")
					st, err = q.Wait()
					check(b, st, err, "IsendrecvReplace")

					s, d := fresh(), make([]int32, k)
					q, err = ranks.Isendrecv(c, s, right, 7, d, left, 7)
					r.Check(err, "Isendrecv")
					// Polled with GetStatus, which leaves it to Wait.
					for {
						_, done, err := q.GetStatus()
						r.Check(err, "GetStatus")
						if done {
							break
						}
						runtime.Gosched()
					}
					st, err = q.Wait()
					check(d, st, err, "Isendrecv")
					if _, err := q.Wait(); !errors.Is(err, ranks.ErrRequest) {
						r.Errorf("Wait on a completed Isendrecv: %v", err)
					}
				}
				// Several at once, with WaitAll and with ProcNull parts.
				var reqs []*ranks.Request
				outs := make([][]int64, 4)
				for i := range outs {
					outs[i] = make([]int64, 100)
					q, err := ranks.Isendrecv(c, []int64{int64(r.Rank), int64(i)}, right, 20+i, outs[i], left, 20+i)
					r.Check(err, "Isendrecv")
					reqs = append(reqs, q)
				}
				q, err := ranks.Isendrecv(c, []byte{1}, ranks.ProcNull, 1, make([]byte, 1), ranks.ProcNull, 1)
				r.Check(err, "Isendrecv with ProcNull")
				reqs = append(reqs, q)
				sts := make([]ranks.Status, len(reqs))
				r.Check(ranks.WaitAll(reqs, sts), "WaitAll")
				for i := range outs {
					if outs[i][0] != int64(left) || outs[i][1] != int64(i) || sts[i].Count != 2 || sts[i].Tag != 20+i {
						r.Errorf("Isendrecv %d: %v %+v", i, outs[i][:2], sts[i])
					}
				}
				if st := sts[4]; st.Source != ranks.ProcNull || st.Tag != ranks.AnyTag || st.Bytes != 0 {
					r.Errorf("Isendrecv with ProcNull: %+v", st)
				}
				// A receive too small truncates: the error is the receive's.
				r.Check(ranks.Send(c, make([]byte, 50), right, 30), "send")
				q, err = ranks.Isendrecv(c, []byte{}, ranks.ProcNull, 0, make([]byte, 10), left, 30)
				r.Check(err, "Isendrecv")
				if _, err := q.Wait(); !errors.Is(err, ranks.ErrTruncate) {
					r.Errorf("truncating Isendrecv: %v", err)
				}
			})
		})
	}
}

// Bad input to the send-receive calls.
func TestSendrecvBadInput(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		wantClass := func(err, class error, what string) {
			if !errors.Is(err, class) {
				r.Errorf("%s: %v, want %v", what, err, class)
			}
		}
		b := []byte{1}
		_, err := ranks.SendrecvReplace(c, b, ranks.AnySource, 1, 0, 1)
		wantClass(err, ranks.ErrRank, "SendrecvReplace to AnySource")
		_, err = ranks.SendrecvReplace(c, b, 0, 1, 2, 1)
		wantClass(err, ranks.ErrRank, "SendrecvReplace from rank 2")
		_, err = ranks.Isendrecv(c, b, 0, ranks.AnyTag, b, 0, 1)
		wantClass(err, ranks.ErrTag, "Isendrecv with send tag AnyTag")
		_, err = ranks.IsendrecvReplace(c, []func(){}, 0, 1, 0, 1)
		wantClass(err, ranks.ErrType, "IsendrecvReplace of []func()")
		var nilComm *ranks.Comm
		_, err = ranks.Isendrecv(nilComm, b, 0, 1, b, 0, 1)
		wantClass(err, ranks.ErrComm, "Isendrecv on nil")
		var nilReq *ranks.Request
		_, _, err = nilReq.GetStatus()
		wantClass(err, ranks.ErrRequest, "GetStatus of nil")
	})
}

// A peer that dies during Isendrecv or SendrecvReplace: ErrProcFailed at
// completion, whichever part it was in. A blocking Sendrecv from
// AnySource with an unacknowledged failure returns ErrProcFailed; an
// Isendrecv from AnySource stays pending (ErrProcFailedPending) until
// FailureAck, then completes.
func TestSendrecvFailures(t *testing.T) {
	for _, mode := range []string{"cma", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			o := ranktest.Options{N: 3, Env: protocolEnv(mode), Dies: []int{1}}
			ranktest.RunOpts(t, o, func(r *ranktest.R) {
				c := r.Comm
				switch r.Rank {
				case 1:
					_, err := ranks.Recv(c, make([]byte, 1), 0, 1)
					r.Check(err, "recv")
					r.Kill()
				case 2:
					_, err := ranks.Recv(c, make([]byte, 1), 0, 2)
					r.Check(err, "go")
					r.Check(ranks.Send(c, []int{42}, 0, 3), "send")
					return
				}
				// Both parts with the rank that dies: a receive it never
				// sends, and a rendezvous send it never receives.
				q, err := ranks.Isendrecv(c, make([]byte, sizeRndv), 1, 5, make([]byte, 8), 1, 5)
				r.Check(err, "Isendrecv with the rank that will die")
				q2, err := ranks.IsendrecvReplace(c, make([]byte, sizeRndv), 1, 6, 2, 6)
				r.Check(err, "IsendrecvReplace, sending to the rank that will die")
				r.Check(ranks.Send(c, []byte{1}, 1, 1), "die")
				_, err = q.Wait()
				procFailed(r, err, 1, "Isendrecv")
				// Its receive part (from rank 2) is still pending: cancel it.
				r.Check(q2.Cancel(), "cancel")
				st, err := q2.Wait()
				procFailed(r, err, 1, "IsendrecvReplace whose send failed")
				if !st.Cancelled {
					r.Errorf("cancelled receive part: %+v", st)
				}
				_, err = ranks.SendrecvReplace(c, make([]byte, 8), 1, 7, 1, 7)
				procFailed(r, err, 1, "SendrecvReplace with a dead rank")

				_, err = ranks.Sendrecv(c, []byte{}, ranks.ProcNull, 0, make([]int, 1), ranks.AnySource, 3)
				procFailed(r, err, -1, "blocking Sendrecv from AnySource")
				buf := make([]int, 1)
				q, err = ranks.Isendrecv(c, []byte{}, ranks.ProcNull, 0, buf, ranks.AnySource, 3)
				r.Check(err, "Isendrecv from AnySource")
				if _, err := q.Wait(); !errors.Is(err, ranks.ErrProcFailedPending) {
					r.Errorf("Wait on Isendrecv from AnySource: %v, want ErrProcFailedPending", err)
				}
				if _, done, err := q.GetStatus(); done || !errors.Is(err, ranks.ErrProcFailedPending) {
					r.Errorf("GetStatus on Isendrecv from AnySource: done=%v %v", done, err)
				}
				r.Check(c.FailureAck(), "ack")
				r.Check(ranks.Send(c, []byte{1}, 2, 2), "go")
				st, err = q.Wait()
				if err != nil || st.Source != 2 || buf[0] != 42 {
					r.Errorf("Isendrecv after the ack: %+v %v %v", st, err, buf)
				}
			})
		})
	}
}

// A revoke while an Isendrecv waits: it completes with ErrRevoked at
// both ranks.
func TestSendrecvRevoke(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		w := r.Comm
		c, err := w.Dup()
		r.Check(err, "dup")
		peer := 1 - r.Rank
		// Receives nobody sends; the rank 0's send is a rendezvous that
		// rank 1 does not receive.
		q, err := ranks.Isendrecv(c, make([]byte, sizeRndv*r.Rank+8), peer, 1, make([]byte, 8), peer, 2)
		r.Check(err, "Isendrecv")
		if r.Rank == 0 {
			_, err = ranks.Recv(w, make([]byte, 1), 1, 9)
			r.Check(err, "recv ready")
			r.Check(ulfm.Revoke(c), "revoke")
		} else {
			r.Check(ranks.Send(w, []byte{1}, 0, 9), "send ready")
		}
		_, err = q.Wait()
		wantRevoked(r, err, "Isendrecv")
	})
}

// Cancelled receives report it through every completion call (Test,
// Wait, WaitAll, TestAny, GetStatus; MPI_Test_cancelled); a receive
// that matched before Cancel does not; an Imrecv's cannot be cancelled.
func TestCancelled(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 0 {
			_, err := ranks.Recv(c, make([]byte, 1), 1, 99)
			r.Check(err, "go")
			r.Check(ranks.Send(c, []byte("m"), 1, 1), "send")
			r.Check(ranks.Send(c, []byte("p"), 1, 2), "send")
			return
		}
		for i, how := range []string{"Test", "Wait", "WaitAll", "TestAny", "GetStatus"} {
			q, err := ranks.Irecv(c, make([]byte, 1), 0, 50+i)
			r.Check(err, "irecv")
			r.Check(q.Cancel(), "cancel")
			var st ranks.Status
			switch how {
			case "Test":
				var done bool
				st, done, err = q.Test()
				if !done {
					r.Errorf("Test of a cancelled receive: not done")
				}
			case "Wait":
				st, err = q.Wait()
			case "WaitAll":
				sts := make([]ranks.Status, 1)
				err = ranks.WaitAll([]*ranks.Request{q}, sts)
				st = sts[0]
			case "TestAny":
				_, st, _, err = ranks.TestAny([]*ranks.Request{q})
			case "GetStatus":
				st, _, err = q.GetStatus()
				if st2, err2 := q.Wait(); !st2.Cancelled || err2 != nil {
					r.Errorf("Wait after GetStatus: %+v %v", st2, err2)
				}
			}
			if err != nil || !st.Cancelled {
				r.Errorf("%s of a cancelled receive: %+v %v", how, st, err)
			}
		}
		// Matched before the cancel: received, not cancelled.
		b := make([]byte, 1)
		q, err := ranks.Irecv(c, b, 0, 1)
		r.Check(err, "irecv")
		r.Check(ranks.Send(c, []byte{1}, 0, 99), "go")
		for {
			_, done, err := q.GetStatus()
			r.Check(err, "GetStatus")
			if done {
				break
			}
			runtime.Gosched()
		}
		r.Check(q.Cancel(), "cancel after the match")
		st, err := q.Wait()
		if err != nil || st.Cancelled || b[0] != 'm' {
			r.Errorf("receive matched before Cancel: %+v %v %q", st, err, b)
		}
		msg, _, err := c.Mprobe(0, 2)
		r.Check(err, "mprobe")
		q, err = ranks.Imrecv(msg, b)
		r.Check(err, "imrecv")
		r.Check(q.Cancel(), "cancel an Imrecv")
		st, err = q.Wait()
		if err != nil || st.Cancelled || b[0] != 'p' {
			r.Errorf("cancelled Imrecv: %+v %v %q", st, err, b)
		}
	})
}

// GetStatus leaves the request to Wait, reports the same status, and
// reports an inactive persistent request's empty status.
func TestGetStatus(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		peer := 1 - r.Rank
		for i, n := range []int{sizeInline, sizeChunk, sizeRndv} {
			b := make([]byte, n)
			q, err := ranks.Irecv(c, b, peer, i)
			r.Check(err, "irecv")
			if _, _, err := q.GetStatus(); err != nil {
				r.Errorf("GetStatus before the send: %v", err)
			}
			s := make([]byte, n)
			fill(s, i)
			r.Check(ranks.Send(c, s, peer, i), "send")
			var st ranks.Status
			for done := false; !done; {
				st, done, err = q.GetStatus()
				r.Check(err, "GetStatus")
				runtime.Gosched()
			}
			for range 2 { // again: still valid
				if st2, done, err := q.GetStatus(); !done || err != nil || st2 != st {
					r.Errorf("GetStatus again: %+v %v %v, first %+v", st2, done, err, st)
				}
			}
			st2, err := q.Wait()
			if err != nil || st2 != st || st.Bytes != n || st.Source != peer {
				r.Errorf("Wait after GetStatus: %+v %v, GetStatus said %+v", st2, err, st)
			}
			checkFill(r, b, i, fmt.Sprintf("message of %d bytes", n))
			if _, _, err := q.GetStatus(); !errors.Is(err, ranks.ErrRequest) {
				r.Errorf("GetStatus of a freed request: %v", err)
			}
		}
		q, err := ranks.RecvInit(c, make([]byte, 1), peer, 1)
		r.Check(err, "recv init")
		if st, done, err := q.GetStatus(); !done || err != nil || st.Source != ranks.AnySource || st.Tag != ranks.AnyTag {
			r.Errorf("GetStatus of an inactive persistent request: %+v %v %v", st, done, err)
		}
		r.Check(q.Free(), "free")
	})
}

// Persistent point-to-point requests outlive a Free of their
// communicator (MPI 4.0 §6.4.3: it is deallocated once nothing refers to
// it): they start and complete after it, and the communicator's context
// slot is held until the last of them is freed.
func TestPersistentAfterCommFree(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
		held := r.World.HeldContexts()
		// Both count before the Dup's allocator takes holds for both.
		_, err := ranks.Sendrecv(r.Comm, []byte{1}, 1-r.Rank, 9, make([]byte, 1), 1-r.Rank, 9)
		r.Check(err, "settle")
		c, err := r.Comm.Dup()
		r.Check(err, "dup")
		peer := 1 - r.Rank
		out, in := []int{0}, []int{-1}
		s, err := ranks.SendInit(c, out, peer, 3)
		r.Check(err, "SendInit")
		rv, err := ranks.RecvInit(c, in, peer, 3)
		r.Check(err, "RecvInit")
		r.Check(c.Free(), "free the communicator")
		for i := range 3 {
			out[0] = 10*r.Rank + i
			r.Check(rv.Start(), "start the receive")
			r.Check(s.Start(), "start the send")
			r.Check(ranks.WaitAll([]*ranks.Request{s, rv}, nil), "wait")
			if in[0] != 10*peer+i {
				r.Errorf("round %d: received %d, want %d", i, in[0], 10*peer+i)
			}
		}
		if n := r.World.HeldContexts(); n != held+1 {
			r.Errorf("context slots held with live requests: %d, want %d", n, held+1)
		}
		r.Check(s.Free(), "free the send")
		if n := r.World.HeldContexts(); n != held+1 {
			r.Errorf("context slots held with one live request: %d, want %d", n, held+1)
		}
		r.Check(rv.Free(), "free the receive")
		if n := r.World.HeldContexts(); n != held {
			r.Errorf("context slots held after freeing the requests: %d, want %d", n, held)
		}
	})
}
