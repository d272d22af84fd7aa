package ranks_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// Messages from one sender with one tag arrive in the order sent, across
// all three protocols mixed, and interleaved tags keep their own order.
func TestOrderingMixedProtocols(t *testing.T) {
	sizes := []int{1, 40, 3000, 16384, 70000, 8, 200000, 0, 5000}
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		const rounds = 40
		if r.Rank == 0 {
			var reqs []*ranks.Request
			for i := range rounds {
				n := sizes[i%len(sizes)]
				buf := make([]int32, n/4+1)
				buf[0] = int32(i)
				req, err := ranks.Isend(c, buf, 1, i%3)
				r.Check(err, "isend")
				reqs = append(reqs, req)
			}
			r.Check(ranks.WaitAll(reqs, nil), "waitall")
			return
		}
		next := [3]int{0, 1, 2} // next expected round per tag
		for i := range rounds {
			tag := (i * 7) % 3 // receive tags in a different interleaving
			n := sizes[next[tag]%len(sizes)]
			buf := make([]int32, n/4+1)
			st, err := ranks.Recv(r.Comm, buf, 0, tag)
			r.Check(err, "recv")
			if int(buf[0]) != next[tag] || st.Tag != tag || st.Count != len(buf) {
				r.Errorf("tag %d: got round %d (count %d), want %d", tag, buf[0], st.Count, next[tag])
			}
			next[tag] += 3
			_ = i
		}
	})
}

// AnySource and AnyTag match in arrival order per sender, and the status
// names the real source and tag.
func TestAnySourceAnyTag(t *testing.T) {
	ranktest.Run(t, 4, func(r *ranktest.R) {
		c := r.Comm
		const per = 50
		if r.Rank != 0 {
			for i := range per {
				r.Check(ranks.Send(c, []int{r.Rank, i}, 0, 100+r.Rank), "send")
			}
			return
		}
		next := map[int]int{}
		for range per * (r.Size - 1) {
			buf := make([]int, 2)
			st, err := ranks.Recv(c, buf, ranks.AnySource, ranks.AnyTag)
			r.Check(err, "recv")
			if st.Source != buf[0] || st.Tag != 100+buf[0] || buf[1] != next[buf[0]] {
				r.Errorf("status %+v payload %v, want seq %d", st, buf, next[buf[0]])
			}
			next[buf[0]]++
		}
	})
}

// Probe and Iprobe describe a waiting message without receiving it; a
// message can be probed, then received with the probed source and size.
func TestProbe(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 0 {
			r.Check(ranks.Send(c, make([]byte, 777), 1, 5), "send small")
			r.Check(ranks.Send(c, make([]byte, 100000), 1, 6), "send large")
			return
		}
		st, err := c.Probe(ranks.AnySource, 6)
		r.Check(err, "probe")
		if st.Source != 0 || st.Tag != 6 || st.Bytes != 100000 {
			r.Errorf("probe status %+v", st)
		}
		st, ok, err := c.Iprobe(0, ranks.AnyTag)
		r.Check(err, "iprobe")
		if !ok || st.Tag != 5 || st.Bytes != 777 {
			r.Errorf("iprobe ok=%v status %+v", ok, st)
		}
		if _, ok, _ := c.Iprobe(0, 9); ok {
			r.Errorf("iprobe matched tag 9")
		}
		for _, tag := range []int{6, 5} {
			st, _ := c.Probe(0, tag)
			buf := make([]byte, st.Bytes)
			st2, err := ranks.Recv(c, buf, st.Source, st.Tag)
			r.Check(err, "recv")
			if st2.Bytes != st.Bytes {
				r.Errorf("received %d bytes, probed %d", st2.Bytes, st.Bytes)
			}
		}
	})
}

// A message longer than the buffer completes the receive with
// ErrTruncate, the buffer holding its first part, for every protocol.
func TestTruncation(t *testing.T) {
	for _, n := range []int{30, 5000, 300000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.Run(t, 2, func(r *ranktest.R) {
				c := r.Comm
				if r.Rank == 0 {
					buf := make([]byte, n)
					for i := range buf {
						buf[i] = byte(i)
					}
					r.Check(ranks.Send(c, buf, 1, 1), "send")
					r.Check(ranks.Send(c, []byte{42}, 1, 2), "send after")
					return
				}
				buf := make([]byte, n/2)
				st, err := ranks.Recv(c, buf, 0, 1)
				var e *ranks.Error
				if !errors.Is(err, ranks.ErrTruncate) || !errors.As(err, &e) || st.Bytes != n/2 {
					r.Fatalf("err %v, status %+v", err, st)
				}
				for i := range buf {
					if buf[i] != byte(i) {
						r.Fatalf("byte %d is %d", i, buf[i])
					}
				}
				// The connection still works.
				one := make([]byte, 1)
				if _, err := ranks.Recv(c, one, 0, 2); err != nil || one[0] != 42 {
					r.Errorf("next message: %v %v", err, one)
				}
			})
		})
	}
}

// Persistent requests: created once, started many times, freed.
func TestPersistent(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		peer := 1 - r.Rank
		sbuf := make([]float64, 3000) // a chunk-sized message
		rbuf := make([]float64, 3000)
		sreq, err := ranks.SendInit(c, sbuf, peer, 4)
		r.Check(err, "send init")
		rreq, err := ranks.RecvInit(c, rbuf, peer, 4)
		r.Check(err, "recv init")
		// An inactive persistent request completes at once with the empty
		// status (source AnySource, tag AnyTag).
		if st, err := rreq.Wait(); err != nil || st.Source != ranks.AnySource || st.Tag != ranks.AnyTag {
			r.Errorf("inactive wait: %+v %v", st, err)
		}
		for it := range 100 {
			sbuf[0], sbuf[2999] = float64(it), float64(-it)
			r.Check(ranks.StartAll([]*ranks.Request{rreq, sreq}), "start")
			if err := rreq.Start(); !errors.Is(err, ranks.ErrRequest) {
				r.Errorf("double start: %v", err)
			}
			r.Check(ranks.WaitAll([]*ranks.Request{rreq, sreq}, nil), "wait")
			if rbuf[0] != float64(it) || rbuf[2999] != float64(-it) {
				r.Fatalf("iteration %d: got %v %v", it, rbuf[0], rbuf[2999])
			}
		}
		r.Check(sreq.Free(), "free")
		r.Check(rreq.Free(), "free")
		if err := sreq.Start(); !errors.Is(err, ranks.ErrRequest) {
			r.Errorf("start after free: %v", err)
		}
	})
}

// Large messages through the single-copy and the pipelined protocols,
// both directions at once, many in flight.
func TestLargeBothProtocols(t *testing.T) {
	for _, mode := range []string{"cma", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			env := protocolEnv(mode)
			ranktest.RunOpts(t, ranktest.Options{N: 2, Env: env}, func(r *ranktest.R) {
				c := r.Comm
				peer := 1 - r.Rank
				const k = 6
				var reqs []*ranks.Request
				rbufs := make([][]uint64, k)
				for i := range k {
					n := 50000 + i*123457
					s := make([]uint64, n)
					for j := range s {
						s[j] = uint64(r.Rank)<<56 | uint64(i)<<40 | uint64(j)
					}
					rbufs[i] = make([]uint64, n)
					rq, err := ranks.Irecv(c, rbufs[i], peer, i)
					r.Check(err, "irecv")
					sq, err := ranks.Isend(c, s, peer, i)
					r.Check(err, "isend")
					reqs = append(reqs, rq, sq)
				}
				r.Check(ranks.WaitAll(reqs, nil), "waitall")
				for i, b := range rbufs {
					for j, v := range b {
						if want := uint64(peer)<<56 | uint64(i)<<40 | uint64(j); v != want {
							r.Fatalf("message %d word %d: %x want %x", i, j, v, want)
						}
					}
				}
			})
		})
	}
}

// Ssend completes only once the receive has matched; Issend's Test says
// false until then.
func TestSynchronousSend(t *testing.T) {
	for _, n := range []int{8, 4000, 100000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.Run(t, 2, func(r *ranktest.R) {
				c := r.Comm
				buf := make([]byte, n)
				if r.Rank == 0 {
					req, err := ranks.Issend(c, buf, 1, 1)
					r.Check(err, "issend")
					// Rank 1 posts its receive only after our "go".
					for range 100 {
						if _, done, err := req.Test(); err != nil || done {
							r.Fatalf("issend completed before the receive was posted (err %v)", err)
						}
					}
					r.Check(ranks.Send(c, []byte("go"), 1, 2), "go")
					_, err = req.Wait()
					r.Check(err, "wait")
					r.Check(ranks.Ssend(c, buf, 1, 3), "ssend")
					return
				}
				_, err := ranks.Recv(c, make([]byte, 2), 0, 2)
				r.Check(err, "recv go")
				_, err = ranks.Recv(c, buf, 0, 1)
				r.Check(err, "recv 1")
				_, err = ranks.Recv(c, buf, 0, 3)
				r.Check(err, "recv 3")
			})
		})
	}
}

// Sendrecv exchanges around a ring without deadlock, with large
// messages that need the receiver.
func TestSendrecvRing(t *testing.T) {
	ranktest.Run(t, 4, func(r *ranktest.R) {
		c := r.Comm
		next, prev := (r.Rank+1)%r.Size, (r.Rank+r.Size-1)%r.Size
		s := make([]int64, 40000)
		s[0] = int64(r.Rank)
		d := make([]int64, 40000)
		st, err := ranks.Sendrecv(c, s, next, 9, d, prev, 9)
		r.Check(err, "sendrecv")
		if d[0] != int64(prev) || st.Source != prev {
			r.Errorf("got %d from %d", d[0], st.Source)
		}
	})
}

// Cancel withdraws an unmatched receive; a send cannot be cancelled.
func TestCancel(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 1 {
			req, err := ranks.Irecv(c, make([]byte, 4), 0, 77)
			r.Check(err, "irecv")
			r.Check(req.Cancel(), "cancel")
			st, err := req.Wait()
			if err != nil || !st.Cancelled {
				r.Errorf("cancelled wait: %+v %v", st, err)
			}
			if _, err := req.Wait(); !errors.Is(err, ranks.ErrRequest) {
				r.Errorf("wait on a freed request: %v", err)
			}
			// The message sent with tag 77 is still there for a new receive.
			buf := make([]byte, 4)
			_, err = ranks.Recv(c, buf, 0, 77)
			r.Check(err, "recv")
			if string(buf) != "abcd" {
				r.Errorf("got %q", buf)
			}
			return
		}
		sreq, err := ranks.Isend(c, []byte("abcd"), 1, 77)
		r.Check(err, "isend")
		if err := sreq.Cancel(); !errors.Is(err, ranks.ErrRequest) {
			r.Errorf("cancel of a send: %v", err)
		}
		_, err = sreq.Wait()
		r.Check(err, "wait")
	})
}

// WaitAny, WaitSome, TestAny, TestAll and TestSome over a set of
// receives that complete in an order the sender chooses.
func TestWaitFamily(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		const k = 8
		if r.Rank == 0 {
			// Wait for "go" so every receive is posted first.
			_, err := ranks.Recv(c, make([]byte, 1), 1, 99)
			r.Check(err, "go")
			for _, tag := range []int{5, 2, 7, 0, 1, 6, 3, 4} {
				r.Check(ranks.Send(c, []int{tag}, 1, tag), "send")
				_, err := ranks.Recv(c, make([]byte, 1), 1, 98) // lock step
				r.Check(err, "step")
			}
			return
		}
		bufs := make([][]int, k)
		reqs := make([]*ranks.Request, k)
		for i := range k {
			bufs[i] = make([]int, 1)
			var err error
			reqs[i], err = ranks.Irecv(c, bufs[i], 0, i)
			r.Check(err, "irecv")
		}
		if done, err := ranks.TestAll(reqs, nil); done || err != nil {
			r.Errorf("TestAll before any send: %v %v", done, err)
		}
		if _, _, ok, err := ranks.TestAny(reqs); ok || err != nil {
			r.Errorf("TestAny before any send: %v %v", ok, err)
		}
		r.Check(ranks.Send(c, []byte{1}, 0, 99), "go")
		seen := 0
		for _, want := range []int{5, 2, 7, 0} {
			i, st, err := ranks.WaitAny(reqs)
			r.Check(err, "waitany")
			if i != want || bufs[i][0] != want || st.Tag != want || reqs[i] != nil {
				r.Errorf("WaitAny = %d (tag %d), want %d", i, st.Tag, want)
			}
			seen++
			r.Check(ranks.Send(c, []byte{1}, 0, 98), "step")
		}
		for seen < k {
			idx, sts, err := ranks.WaitSome(reqs)
			r.Check(err, "waitsome")
			for j, i := range idx {
				if bufs[i][0] != i || sts[j].Tag != i || reqs[i] != nil {
					r.Errorf("WaitSome gave %d", i)
				}
				seen++
				r.Check(ranks.Send(c, []byte{1}, 0, 98), "step")
			}
		}
		if i, _, err := ranks.WaitAny(reqs); i != ranks.Undefined || err != nil {
			r.Errorf("WaitAny over nils: %d %v", i, err)
		}
		if idx, _, err := ranks.TestSome(reqs); idx != nil || err != nil {
			r.Errorf("TestSome over nils: %v %v", idx, err)
		}
	})
}

// ProcNull as a peer completes at once.
func TestProcNull(t *testing.T) {
	ranktest.Run(t, 1, func(r *ranktest.R) {
		c := r.Comm
		r.Check(ranks.Send(c, []byte("x"), ranks.ProcNull, 1), "send")
		st, err := ranks.Recv(c, make([]byte, 4), ranks.ProcNull, 1)
		if err != nil || st.Source != ranks.ProcNull || st.Tag != ranks.AnyTag || st.Bytes != 0 {
			r.Errorf("recv from null: %+v %v", st, err)
		}
		req, err := ranks.Irecv(c, make([]byte, 4), ranks.ProcNull, 1)
		r.Check(err, "irecv")
		if st, err := req.Wait(); err != nil || st.Source != ranks.ProcNull {
			r.Errorf("irecv from null: %+v %v", st, err)
		}
		st, ok, err := c.Iprobe(ranks.ProcNull, 3)
		if !ok || err != nil || st.Source != ranks.ProcNull {
			r.Errorf("iprobe null: %+v %v %v", st, ok, err)
		}
	})
}

// Structs and arrays of plain types travel as typed buffers; element
// counts are in elements.
func TestTypedBuffers(t *testing.T) {
	type particle struct {
		Pos  [3]float64
		ID   int32
		Kind uint8
	}
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 0 {
			ps := make([]particle, 1000)
			for i := range ps {
				ps[i] = particle{Pos: [3]float64{float64(i), 1, 2}, ID: int32(i), Kind: uint8(i)}
			}
			r.Check(ranks.Send(c, ps, 1, 0), "send")
			r.Check(ranks.Send(c, []complex128{1i, 2}, 1, 1), "send complex")
			return
		}
		ps := make([]particle, 1000)
		st, err := ranks.Recv(c, ps, 0, 0)
		r.Check(err, "recv")
		if st.Count != 1000 || ranks.Count[particle](st) != 1000 {
			r.Errorf("count %d", st.Count)
		}
		for i, p := range ps {
			if p.ID != int32(i) || p.Pos[0] != float64(i) || p.Kind != uint8(i) {
				r.Fatalf("particle %d: %+v", i, p)
			}
		}
		cs := make([]complex128, 2)
		_, err = ranks.Recv(c, cs, 0, 1)
		r.Check(err, "recv complex")
		if cs[0] != 1i || cs[1] != 2 {
			r.Errorf("complex %v", cs)
		}
	})
}

// Messages to oneself, blocking and nonblocking, in order.
func TestSelfMessages(t *testing.T) {
	ranktest.Run(t, 1, func(r *ranktest.R) {
		c := r.Comm
		for i := range 20 {
			r.Check(ranks.Send(c, make([]byte, i*5000), 0, i), "send")
		}
		rq, err := ranks.Irecv(c, make([]byte, 10), 0, 50)
		r.Check(err, "irecv")
		r.Check(ranks.Send(c, []byte("hello"), 0, 50), "send to posted")
		if st, err := rq.Wait(); err != nil || st.Bytes != 5 {
			r.Errorf("posted self receive: %+v %v", st, err)
		}
		for i := range 20 {
			st, err := ranks.Recv(c, make([]byte, 100000), 0, ranks.AnyTag)
			r.Check(err, "recv")
			if st.Tag != i || st.Bytes != i*5000 {
				r.Errorf("message %d: %+v", i, st)
			}
		}
	})
}

// Many senders into one receiver with a tiny inbox: senders queue and
// retry (backpressure) without losing or reordering anything.
func TestManyToOneBackpressure(t *testing.T) {
	lay := launch.DefaultLayout(8)
	lay.InboxSlots = 4
	lay.ChunkCount = 2
	ranktest.RunOpts(t, ranktest.Options{N: 8, Layout: &lay}, func(r *ranktest.R) {
		c := r.Comm
		const per = 300
		if r.Rank != 0 {
			var reqs []*ranks.Request
			for i := range per {
				n := 2 + (i*37)%9000
				buf := make([]byte, n)
				buf[0], buf[n-1] = byte(r.Rank), byte(i)
				q, err := ranks.Isend(c, buf, 0, 1)
				r.Check(err, "isend")
				reqs = append(reqs, q)
			}
			r.Check(ranks.WaitAll(reqs, nil), "waitall")
			return
		}
		next := make([]int, r.Size)
		buf := make([]byte, 9000)
		for range per * (r.Size - 1) {
			st, err := ranks.Recv(c, buf, ranks.AnySource, 1)
			r.Check(err, "recv")
			i := next[st.Source]
			if want := 2 + (i*37)%9000; st.Bytes != want || buf[0] != byte(st.Source) || buf[st.Bytes-1] != byte(i) {
				r.Fatalf("from %d message %d: %d bytes, head %d tail %d", st.Source, i, st.Bytes, buf[0], buf[st.Bytes-1])
			}
			next[st.Source]++
		}
	})
}

// Many goroutines of each rank send and receive concurrently on their
// own tags (MPI_THREAD_MULTIPLE), with blocking and nonblocking calls.
func TestConcurrentGoroutines(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		c := r.Comm
		peer := 1 - r.Rank
		const workers, msgs = 8, 200
		var wg sync.WaitGroup
		for g := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range msgs {
					n := []int{8, 3000, 40000}[(g+i)%3]
					s := make([]int32, n/4)
					s[0], s[len(s)-1] = int32(g), int32(i)
					d := make([]int32, n/4)
					if g%2 == 0 {
						_, err := ranks.Sendrecv(c, s, peer, g, d, peer, g)
						r.Check(err, "sendrecv")
					} else {
						rq, err := ranks.Irecv(c, d, peer, g)
						r.Check(err, "irecv")
						r.Check(ranks.Send(c, s, peer, g), "send")
						_, err = rq.Wait()
						r.Check(err, "wait")
					}
					if d[0] != int32(g) || d[len(d)-1] != int32(i) {
						r.Errorf("goroutine %d message %d: got %d %d", g, i, d[0], d[len(d)-1])
						return
					}
				}
			}()
		}
		wg.Wait()
	})
}

// 16 ranks on 2 cores (ranks sleep on futexes): a token ring and an
// all-to-all exchange finish.
func TestOversubscribed(t *testing.T) {
	ranktest.Run(t, 16, func(r *ranktest.R) {
		c := r.Comm
		next, prev := (r.Rank+1)%r.Size, (r.Rank+r.Size-1)%r.Size
		tok := []int{0}
		for lap := range 20 {
			if r.Rank == 0 {
				tok[0] = lap
				r.Check(ranks.Send(c, tok, next, 0), "send")
				_, err := ranks.Recv(c, tok, prev, 0)
				r.Check(err, "recv")
			} else {
				_, err := ranks.Recv(c, tok, prev, 0)
				r.Check(err, "recv")
				r.Check(ranks.Send(c, tok, next, 0), "send")
			}
		}
		var reqs []*ranks.Request
		in := make([][]int, r.Size)
		for p := range r.Size {
			in[p] = make([]int, 1000)
			q, err := ranks.Irecv(c, in[p], p, 1)
			r.Check(err, "irecv")
			reqs = append(reqs, q)
		}
		for p := range r.Size {
			out := make([]int, 1000)
			out[999] = r.Rank*100 + p
			q, err := ranks.Isend(c, out, p, 1)
			r.Check(err, "isend")
			reqs = append(reqs, q)
		}
		r.Check(ranks.WaitAll(reqs, nil), "waitall")
		for p := range r.Size {
			if in[p][999] != p*100+r.Rank {
				r.Errorf("from %d: %d", p, in[p][999])
			}
		}
	})
}
