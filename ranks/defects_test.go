package ranks_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strconv"
	"syscall"
	"testing"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// An AnySource receive matched to a live sender completes normally when
// an unrelated rank dies during the transfer (spec 15.2.2: the failure is
// raised only for a receive that could not be matched). Rank 0 receives a
// large message from rank 1 and, at a chosen stage of the matched
// receive, SIGKILLs rank 2 and waits until the failure is declared.
func TestAnySourceMatchedSurvivesUnrelatedDeath(t *testing.T) {
	// "allocmem": the buffers are AllocMem memory, copied through mappings.
	for _, mode := range []string{"cma", "pipelined", "allocmem"} {
		for _, stage := range []string{"matched", "copying"} {
			for _, form := range []string{"posted", "unexpected", "nonblocking"} {
				t.Run(mode+"/"+stage+"/"+form, func(t *testing.T) {
					o := ranktest.Options{N: 3, Dies: []int{2}, Env: protocolEnv(mode), Quiet: true}
					ranktest.RunOpts(t, o, func(r *ranktest.R) {
						anySourceMatched(r, stage, form, mode == "allocmem")
					})
				})
			}
		}
	}
}

func anySourceMatched(r *ranktest.R, stage, form string, allocMem bool) {
	const n = 8 << 20 // 8 MiB: several pipelined chunks and cooperative pieces
	c := r.Comm
	alloc := func() []byte {
		if !allocMem {
			return make([]byte, n)
		}
		b, err := ranks.AllocMem(n)
		r.Check(err, "AllocMem")
		return b
	}
	switch r.Rank {
	case 0:
		buf := alloc()
		reached := ranks.KillAtStage(stage, 2)
		var st ranks.Status
		var err error
		switch form {
		case "posted":
			r.Check(ranks.Send(c, []byte{1}, 1, 1), "go")
			st, err = ranks.Recv(c, buf, ranks.AnySource, 5)
		case "unexpected":
			r.Check(ranks.Send(c, []byte{1}, 1, 1), "go")
			_, err = c.Probe(1, 5) // the envelope is here, unmatched
			r.Check(err, "probe")
			st, err = ranks.Recv(c, buf, ranks.AnySource, 5)
		case "nonblocking":
			rq, ierr := ranks.Irecv(c, buf, ranks.AnySource, 5)
			r.Check(ierr, "irecv")
			r.Check(ranks.Send(c, []byte{1}, 1, 1), "go")
			st, err = rq.Wait()
		}
		if err != nil {
			r.Fatalf("matched AnySource receive: %v (status %+v)", err, st)
		}
		if !reached() {
			r.Logf("stage %q not reached (the sender copied every piece); rank 2 killed after the receive", stage)
		}
		if st.Source != 1 || st.Bytes != n {
			r.Errorf("status %+v", st)
		}
		for i := 0; i < n; i += 4093 {
			if buf[i] != byte(i*7) {
				r.Fatalf("byte %d = %d, want %d", i, buf[i], byte(i*7))
			}
		}
		// The failure is still reported to the next unmatched AnySource
		// receive, and the live pair goes on.
		_, err = ranks.Recv(c, make([]byte, 1), ranks.AnySource, 6)
		procFailed(r, err, -1, "AnySource receive after the death")
		r.Check(c.FailureAck(), "ack")
		r.Check(ranks.Send(c, []byte{2}, 1, 7), "send after")
	case 1:
		buf := alloc()
		for i := range buf {
			buf[i] = byte(i * 7)
		}
		_, err := ranks.Recv(c, make([]byte, 1), 0, 1)
		r.Check(err, "go")
		r.Check(ranks.Send(c, buf, 0, 5), "large send to the live rank 0")
		_, err = ranks.Recv(c, make([]byte, 1), 0, 7)
		r.Check(err, "recv after")
	case 2:
		ranks.Recv(c, make([]byte, 1), 0, 99) // killed by rank 0 in here
		r.Fatalf("rank 2 survived")
	}
}

// Under a flood of messages of every protocol to one AnySource receiver,
// a sender killed at a random moment loses no message of the live
// senders: each arrives once, in order.
func TestFloodAnySourceWithDeath(t *testing.T) {
	for _, mode := range []string{"cma", "pipelined"} {
		t.Run(mode, func(t *testing.T) {
			for trial := range 3 {
				// The seed reaches the ranks through the environment: each
				// is a new process.
				seed := rand.Int63()
				if v, err := strconv.ParseInt(os.Getenv("SHMPI_TEST_SEED"), 10, 64); err == nil {
					seed = v
				}
				const n = 6
				victim := 1 + int(seed%(n-1))
				env := append(protocolEnv(mode), fmt.Sprintf("SHMPI_TEST_SEED=%d", seed))
				o := ranktest.Options{N: n, Dies: []int{victim}, Env: env, Quiet: true}
				t.Run(fmt.Sprint(trial), func(t *testing.T) {
					ranktest.RunOpts(t, o, func(r *ranktest.R) { flood(r, seed, victim) })
				})
			}
		})
	}
}

func flood(r *ranktest.R, seed int64, victim int) {
	const msgs = 120
	sizes := []int{8, 3000, 40000, 200000}
	c := r.Comm
	if r.Rank != 0 {
		rng := rand.New(rand.NewSource(seed + int64(r.Rank)))
		dieAt := rng.Intn(msgs)
		buf := make([]uint32, 200000/4)
		for i := range msgs {
			if r.Rank == victim && i == dieAt {
				r.Kill()
			}
			sz := sizes[rng.Intn(len(sizes))] / 4
			for j := range sz {
				buf[j] = uint32(r.Rank<<24 | i<<8 | j&0xff)
			}
			r.Check(ranks.Send(c, buf[:sz], 0, i), "send to the live receiver")
		}
		return
	}
	next := make([]int, r.Size)
	buf := make([]uint32, 200000/4)
	for {
		done := true
		failed, _ := c.GetFailed()
		dead := map[int]bool{}
		for _, f := range failed {
			dead[f] = true
		}
		for s := 1; s < r.Size; s++ {
			if next[s] < msgs && !dead[s] {
				done = false
			}
		}
		if done {
			break
		}
		st, err := ranks.Recv(c, buf, ranks.AnySource, ranks.AnyTag)
		if errors.Is(err, ranks.ErrProcFailed) && st.Bytes == 0 {
			r.Check(c.FailureAck(), "ack")
			continue
		}
		if err != nil {
			r.Fatalf("receive: %v (status %+v)", err, st)
		}
		s := st.Source
		if st.Tag != next[s] {
			r.Fatalf("from %d: tag %d, want %d", s, st.Tag, next[s])
		}
		for j := range st.Count {
			if want := uint32(s<<24 | st.Tag<<8 | j&0xff); buf[j] != want {
				r.Fatalf("from %d, message %d, word %d: %#x, want %#x", s, st.Tag, j, buf[j], want)
			}
		}
		next[s]++
	}
	for s := 1; s < r.Size; s++ {
		if s != victim && next[s] != msgs {
			r.Errorf("from live rank %d: %d of %d messages", s, next[s], msgs)
		}
	}
}

// MPI's progress rule: messages that no receive has matched must not
// keep a later one from being received, whatever resource they hold.
// More rendezvous or synchronous sends than the sender has handshake
// slots are pending when a send on another tag is received first.
func TestProgressRulePendingSends(t *testing.T) {
	cases := []struct {
		name  string
		size  int
		sync  bool
		count int
	}{
		{"rndv-200KB", 200000, false, 65}, // above the largest eager chunk (job.ChunkSizeFor)
		{"ssend-8B", 8, true, 65},
		{"ssend-3KB", 3000, true, 70},
		{"ssend-200KB", 200000, true, 70},
		{"rndv-1MB", 1 << 20, false, 66},
	}
	for _, mode := range []string{"cma", "pipelined"} {
		for _, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				o := ranktest.Options{N: 2, Env: protocolEnv(mode), Quiet: true}
				ranktest.RunOpts(t, o, func(r *ranktest.R) {
					progressRule(r, tc.size, tc.sync, tc.count)
				})
			})
		}
	}
}

func progressRule(r *ranktest.R, size int, sync bool, count int) {
	c := r.Comm
	if r.Rank == 0 {
		bufs := make([][]byte, count)
		var reqs []*ranks.Request
		for i := range count {
			bufs[i] = make([]byte, size)
			bufs[i][0], bufs[i][size-1] = byte(i), byte(i+1)
			var rq *ranks.Request
			var err error
			if sync {
				rq, err = ranks.Issend(c, bufs[i], 1, 1)
			} else {
				rq, err = ranks.Isend(c, bufs[i], 1, 1)
			}
			r.Check(err, "isend tag 1")
			reqs = append(reqs, rq)
		}
		if (size <= 36 || size > 32<<10) && r.World.HSSlotsFree() != 0 {
			r.Errorf("handshake slots free: %d, want 0 (the test must exhaust them)", r.World.HSSlotsFree())
		}
		last, err := ranks.Isend(c, []byte("later"), 1, 2)
		r.Check(err, "isend tag 2")
		reqs = append(reqs, last)
		r.Check(ranks.WaitAll(reqs, nil), "wait all")
		return
	}
	buf := make([]byte, 5)
	st, err := ranks.Recv(c, buf, 0, 2)
	r.Check(err, "recv tag 2 first")
	if string(buf) != "later" || st.Tag != 2 {
		r.Errorf("tag 2: %q %+v", buf, st)
	}
	big := make([]byte, size)
	for i := range count {
		st, err := ranks.Recv(c, big, 0, 1)
		r.Check(err, "recv tag 1")
		if st.Bytes != size || big[0] != byte(i) || big[size-1] != byte(i+1) {
			r.Fatalf("message %d out of order or damaged: %+v first %d last %d", i, st, big[0], big[size-1])
		}
	}
}

// MPI_Request_free on a pending receive does not cancel it: the receive
// still consumes its message and fills the buffer; the next receive gets
// the next message.
func TestRequestFreePendingRecv(t *testing.T) {
	for _, size := range []int{8, 5000, 300000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
				c := r.Comm
				if r.Rank == 0 {
					for i := range 2 {
						b := make([]byte, size)
						b[0], b[size-1] = byte(10+i), byte(20+i)
						r.Check(ranks.Send(c, b, 1, 3), "send")
					}
					_, err := ranks.Recv(c, make([]byte, 1), 1, 4)
					r.Check(err, "done")
					return
				}
				freed := make([]byte, size)
				rq, err := ranks.Irecv(c, freed, 0, 3)
				r.Check(err, "irecv")
				r.Check(rq.Free(), "free the pending receive")
				if _, err := rq.Wait(); !errors.Is(err, ranks.ErrRequest) {
					r.Errorf("wait on a freed request: %v, want ErrRequest", err)
				}
				next := make([]byte, size)
				_, err = ranks.Recv(c, next, 0, 3)
				r.Check(err, "recv")
				if next[0] != 11 || next[size-1] != 21 {
					r.Errorf("second receive got message %d/%d, want the second (11/21)", next[0], next[size-1])
				}
				if freed[0] != 10 || freed[size-1] != 20 {
					r.Errorf("freed receive's buffer: %d/%d, want the first message (10/20)", freed[0], freed[size-1])
				}
				r.Check(ranks.Send(c, []byte{1}, 0, 4), "done")
			})
		})
	}
}

// Sizes that overflow, or exceed any address space, are ErrCount at the
// call, and the rank keeps working.
func TestOverflowingCount(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		var x [8]byte
		p := unsafe.Pointer(&x[0])
		peer := 1 - r.Rank
		for _, tc := range []struct {
			count, size int
		}{{math.MaxInt / 4, 8}, {math.MaxInt, 2}, {1 << 40, 1 << 10}, {3, math.MaxInt}} {
			for who, dest := range map[string]int{"self": r.Rank, "peer": peer} {
				what := fmt.Sprintf("%d×%d to %s", tc.count, tc.size, who)
				wantClass(r, ranks.SendPtr(c, p, tc.count, tc.size, dest, 1), ranks.ErrCount, "SendPtr "+what)
				_, err := ranks.IsendPtr(c, p, tc.count, tc.size, dest, 1)
				wantClass(r, err, ranks.ErrCount, "IsendPtr "+what)
				_, err = ranks.IrecvPtr(c, p, tc.count, tc.size, dest, 1)
				wantClass(r, err, ranks.ErrCount, "IrecvPtr "+what)
				_, err = ranks.RecvPtr(c, p, tc.count, tc.size, dest, 1)
				wantClass(r, err, ranks.ErrCount, "RecvPtr "+what)
			}
		}
		pingPong(r, peer, 3)
	})
}

// MPI's empty status: an inactive persistent request (never started, or
// completed) and an all-idle WaitAny give source AnySource, tag AnyTag,
// count 0 and no error.
func TestEmptyStatus(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 1, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		rq, err := ranks.RecvInit(c, make([]byte, 4), 0, 1)
		r.Check(err, "recv init")
		sq, err := ranks.SendInit(c, []byte{1, 2, 3, 4}, 0, 1)
		r.Check(err, "send init")
		empty := func(st ranks.Status, err error, what string) {
			if err != nil || st.Source != ranks.AnySource || st.Tag != ranks.AnyTag || st.Bytes != 0 || st.Count != 0 {
				r.Errorf("%s: %+v %v, want the empty status", what, st, err)
			}
		}
		st, err := rq.Wait()
		empty(st, err, "Wait on a never-started request")
		st, ok, err := rq.Test()
		if !ok {
			r.Errorf("Test on an inactive request: not done")
		}
		empty(st, err, "Test on a never-started request")
		r.Check(ranks.StartAll([]*ranks.Request{rq, sq}), "start")
		sts := make([]ranks.Status, 2)
		r.Check(ranks.WaitAll([]*ranks.Request{rq, sq}, sts), "wait")
		if sts[0].Source != 0 || sts[0].Bytes != 4 {
			r.Errorf("active receive's status: %+v", sts[0])
		}
		st, err = rq.Wait()
		empty(st, err, "Wait on a completed persistent request")
		r.Check(ranks.WaitAll([]*ranks.Request{rq}, sts), "wait all idle")
		empty(sts[0], nil, "WaitAll on an inactive request")
		idx, st, err := ranks.WaitAny([]*ranks.Request{rq, nil})
		if idx != ranks.Undefined {
			r.Errorf("WaitAny over inactive requests: index %d", idx)
		}
		empty(st, err, "WaitAny over inactive requests")
		r.Check(rq.Free(), "free")
		r.Check(sq.Free(), "free")
	})
}

// A receiver that dies while the sender is copying its share of a large
// message (cooperative copy, through a mapping of the receiver's AllocMem
// buffer or with process_vm_writev into a heap one) leaves the sender
// with ErrProcFailed or success, never a hang; a third rank is unaffected.
func TestReceiverDiesMidCopy(t *testing.T) {
	for _, mem := range []string{"heap", "allocmem"} {
		t.Run(mem, func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{1}, Quiet: true}, func(r *ranktest.R) {
				const n = 16 << 20
				c := r.Comm
				buf := make([]byte, n)
				if mem == "allocmem" {
					var err error
					buf, err = ranks.AllocMem(n)
					r.Check(err, "AllocMem")
				}
				switch r.Rank {
				case 0:
					err := ranks.Send(c, buf, 1, 5)
					if err != nil {
						procFailed(r, err, 1, "send to the dying receiver")
					}
					r.Check(ranks.Send(c, buf[:100], 2, 6), "send to the live rank")
				case 1:
					ranks.DieAtStage("copying")
					ranks.Recv(c, buf, 0, 5)
					// The receiver copied every piece alone: die anyway.
					syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
					select {}
				case 2:
					_, err := ranks.Recv(c, buf[:100], 0, 6)
					r.Check(err, "recv from rank 0")
				}
			})
		})
	}
}
