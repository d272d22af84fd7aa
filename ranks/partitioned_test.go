package ranks_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// ptCase is a partitioned transfer: the sender's and the receiver's
// partitions and elements per partition (the totals are equal).
type ptCase struct{ sp, sc, rp, rc int }

func (k ptCase) String() string { return fmt.Sprintf("%dx%d->%dx%d", k.sp, k.sc, k.rp, k.rc) }

var ptCases = []ptCase{
	{1, 1, 1, 1},                 // 8 bytes
	{12, 5, 4, 15},               // more send partitions than receive partitions
	{3, 1000, 6, 500},            // fewer
	{7, 3, 3, 7},                 // partitions that straddle each other
	{5, 0, 1, 0},                 // nothing at all
	{16, 32 << 10, 4, 128 << 10}, // 4 MiB of uint64: single-copy partitions
	{64, 1 << 10, 128, 1 << 9},   // 512 KiB in small pieces
	{1, 1 << 19, 8, 1 << 16},     // 4 MiB sent whole, received in 8
	{1024, 1, 1, 1024},           // many 8-byte partitions
	{2, 3 << 18, 3, 2 << 18},     // 12 MiB
	{9, 11, 33, 3},               // odd sizes
	{4, 1 << 16, 4, 1 << 16},     // same partitions
	{128, 4096, 256, 2048},       // 4 MiB in 128
	{100, 1, 25, 4},              // 800 bytes
	{3, 349525, 1, 3 * 349525},   // 3 partitions of a third of 8 MiB, received whole
}

func ptVal(round, i int) uint64 { return uint64(round)<<40 | uint64(i) }

// preadyAll marks every partition of q ready, in a random order, from g
// goroutines, using Pready, PreadyRange and PreadyList in turn.
func preadyAll(r *ranktest.R, q *ranks.Request, parts, g int, rng *rand.Rand) {
	perm := rng.Perm(parts)
	var wg sync.WaitGroup
	for k := 0; k < g; k++ {
		mine := perm[k*parts/g : (k+1)*parts/g]
		rng := rand.New(rand.NewPCG(rng.Uint64(), uint64(k))) // a Rand is not safe for goroutines
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(mine) > 0 {
				switch n := min(len(mine), 3); rng.IntN(3) {
				case 0:
					r.Check(ranks.Pready(q, mine[0]), "Pready")
					mine = mine[1:]
				case 1:
					r.Check(ranks.PreadyList(q, mine[:n]), "PreadyList")
					mine = mine[n:]
				default:
					r.Check(ranks.PreadyRange(q, mine[0], mine[0]), "PreadyRange")
					mine = mine[1:]
				}
			}
		}()
	}
	wg.Wait()
}

// Several rounds of every case between pairs of ranks, at 2 and 4 ranks
// and with both large-message protocols: the sender marks partitions in
// a random order from several goroutines (ThreadMultiple), the receiver
// watches them arrive with Parrived and checks each one as soon as it
// has, then completes the round.
func TestPartitioned(t *testing.T) {
	for _, n := range []int{2, 4} {
		for _, mode := range []string{"cma", "pipelined"} {
			t.Run(fmt.Sprintf("%d/%s", n, mode), func(t *testing.T) {
				o := ranktest.Options{N: n, Env: protocolEnv(mode), Timeout: 60 * time.Second, Quiet: true}
				ranktest.RunOpts(t, o, func(r *ranktest.R) {
					c := r.Comm
					peer := r.Rank ^ 1
					rng := rand.New(rand.NewPCG(uint64(r.Rank), uint64(time.Now().UnixNano())))
					for ci, k := range ptCases {
						total := k.sp * k.sc
						buf := make([]uint64, total)
						const rounds = 3
						if r.Rank%2 == 0 {
							q, err := ranks.PsendInit(c, buf, k.sp, k.sc, peer, ci)
							r.Check(err, "PsendInit")
							for round := 0; round < rounds; round++ {
								for i := range buf {
									buf[i] = ptVal(round, i)
								}
								r.Check(q.Start(), "Start")
								preadyAll(r, q, k.sp, 1+rng.IntN(4), rng)
								_, err := q.Wait()
								r.Check(err, fmt.Sprintf("%v: send Wait", k))
							}
							r.Check(q.Free(), "Free")
							continue
						}
						q, err := ranks.PrecvInit(c, buf, k.rp, k.rc, peer, ci)
						r.Check(err, "PrecvInit")
						for round := 0; round < rounds; round++ {
							clear(buf)
							r.Check(q.Start(), "Start")
							seen := make([]bool, k.rp)
							left := k.rp
							deadline := time.Now().Add(30 * time.Second)
							for left > 0 && time.Now().Before(deadline) {
								p := rng.IntN(k.rp)
								if seen[p] {
									continue
								}
								ok, err := ranks.Parrived(q, p)
								r.Check(err, "Parrived")
								if !ok {
									continue
								}
								seen[p] = true
								left--
								for i := p * k.rc; i < (p+1)*k.rc; i++ {
									if buf[i] != ptVal(round, i) {
										r.Fatalf("%v round %d: partition %d arrived but element %d is %#x", k, round, p, i, buf[i])
									}
								}
							}
							st, err := q.Wait()
							r.Check(err, fmt.Sprintf("%v: recv Wait", k))
							if st.Source != peer || st.Tag != ci || st.Bytes != 8*total || st.Count != total {
								r.Errorf("%v: status %+v", k, st)
							}
							for i := range buf {
								if buf[i] != ptVal(round, i) {
									r.Fatalf("%v round %d: element %d is %#x", k, round, i, buf[i])
								}
							}
							if ok, err := ranks.Parrived(q, 0); !ok || err != nil {
								r.Errorf("Parrived after the round: %v %v", ok, err)
							}
						}
						r.Check(q.Free(), "Free")
					}
				})
			})
		}
	}
}

// Parrived is true for a partition that was sent while others are not
// ready yet: partitions travel on their own.
func TestPartitionedEarly(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Timeout: 30 * time.Second}, func(r *ranktest.R) {
		c := r.Comm
		buf := make([]byte, 4<<20)
		if r.Rank == 0 {
			q, err := ranks.PsendInit(c, buf, 4, 1<<20, 1, 7)
			r.Check(err, "PsendInit")
			for round := range 2 {
				for i := range buf {
					buf[i] = byte(round + i/(1<<20))
				}
				r.Check(q.Start(), "Start")
				r.Check(ranks.Pready(q, 2), "Pready")
				_, err := ranks.Recv(c, make([]byte, 1), 1, 1) // partition 2 has arrived
				r.Check(err, "Recv")
				r.Check(ranks.PreadyList(q, []int{3, 0, 1}), "PreadyList")
				_, err = q.Wait()
				r.Check(err, "Wait")
			}
			r.Check(q.Free(), "Free")
			return
		}
		q, err := ranks.PrecvInit(c, buf, 8, 1<<19, 0, 7)
		r.Check(err, "PrecvInit")
		for round := range 2 {
			clear(buf)
			r.Check(q.Start(), "Start")
			deadline := time.Now().Add(20 * time.Second)
			for {
				ok4, err := ranks.Parrived(q, 4)
				r.Check(err, "Parrived")
				ok5, err := ranks.Parrived(q, 5)
				r.Check(err, "Parrived")
				if ok4 && ok5 {
					break
				}
				if time.Now().After(deadline) {
					r.Fatalf("partition 2 of the sender never arrived")
				}
			}
			for p := range 8 {
				if p == 4 || p == 5 {
					continue
				}
				if ok, err := ranks.Parrived(q, p); ok || err != nil {
					r.Errorf("round %d: Parrived(%d) = %v, %v before it was ready", round, p, ok, err)
				}
			}
			if buf[4<<19] != byte(round+2) || buf[6<<19-1] != byte(round+2) {
				r.Errorf("round %d: partition data %d %d", round, buf[4<<19], buf[6<<19-1])
			}
			r.Check(ranks.Send(c, []byte{1}, 0, 1), "Send")
			_, err = q.Wait()
			r.Check(err, "Wait")
			for i := range buf {
				if buf[i] != byte(round+i/(1<<20)) {
					r.Fatalf("round %d: byte %d is %d", round, i, buf[i])
				}
			}
		}
		r.Check(q.Free(), "Free")
	})
}

// Sizes that differ are an error at both sides, every round; a later
// matched pair on the same tag works.
func TestPartitionedMismatch(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Timeout: 30 * time.Second}, func(r *ranktest.R) {
		c := r.Comm
		for round := range 2 {
			var q *ranks.Request
			var err error
			if r.Rank == 0 {
				q, err = ranks.PsendInit(c, make([]int32, 100), 10, 10, 1, 3)
			} else {
				q, err = ranks.PrecvInit(c, make([]int32, 96), 8, 12, 0, 3)
			}
			r.Check(err, "init")
			for range 2 {
				r.Check(q.Start(), "Start")
				if r.Rank == 0 {
					r.Check(ranks.PreadyRange(q, 0, 9), "PreadyRange")
				}
				if _, err := q.Wait(); !errors.Is(err, ranks.ErrCount) {
					r.Errorf("round %d: Wait on a mismatched pair: %v, want ErrCount", round, err)
				}
			}
			r.Check(q.Free(), "Free")
		}
		buf := []int32{1, 2, 3, 4}
		if r.Rank == 0 {
			q, err := ranks.PsendInit(c, buf, 2, 2, 1, 3)
			r.Check(err, "init")
			r.Check(q.Start(), "Start")
			r.Check(ranks.PreadyRange(q, 0, 1), "PreadyRange")
			_, err = q.Wait()
			r.Check(err, "Wait")
			r.Check(q.Free(), "Free")
			return
		}
		got := make([]int32, 4)
		q, err := ranks.PrecvInit(c, got, 4, 1, 0, 3)
		r.Check(err, "init")
		r.Check(q.Start(), "Start")
		_, err = q.Wait()
		r.Check(err, "Wait")
		if fmt.Sprint(got) != "[1 2 3 4]" {
			r.Errorf("after mismatched pairs: %v", got)
		}
		r.Check(q.Free(), "Free")
	})
}

// Bad input gets a clear error class and harms nothing; a rank sends to
// itself, and to ProcNull.
func TestPartitionedBadInput(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 1, Timeout: 30 * time.Second}, func(r *ranktest.R) {
		c := r.Comm
		is := func(err, class error, what string) {
			if !errors.Is(err, class) {
				r.Errorf("%s: %v, want %v", what, err, class)
			}
		}
		buf := make([]float64, 12)
		_, err := ranks.PsendInit(c, buf, 4, 4, 0, 1)
		is(err, ranks.ErrBuffer, "buffer too small")
		_, err = ranks.PrecvInit(c, buf, -1, 4, 0, 1)
		is(err, ranks.ErrCount, "negative partitions")
		_, err = ranks.PrecvInit(c, buf, 2, -1, 0, 1)
		is(err, ranks.ErrCount, "negative count")
		_, err = ranks.PrecvInit(c, buf, 2, 2, ranks.AnySource, 1)
		is(err, ranks.ErrRank, "AnySource")
		_, err = ranks.PrecvInit(c, buf, 2, 2, 0, ranks.AnyTag)
		is(err, ranks.ErrTag, "AnyTag")
		_, err = ranks.PsendInit(c, buf, 2, 2, 5, 1)
		is(err, ranks.ErrRank, "rank out of range")
		_, err = ranks.PsendInit[float64](nil, buf, 2, 2, 0, 1)
		is(err, ranks.ErrComm, "nil communicator")

		sbuf, rbuf := []float64{1, 2, 3, 4, 5, 6}, make([]float64, 6)
		s, err := ranks.PsendInit(c, sbuf, 3, 2, 0, 9)
		r.Check(err, "PsendInit")
		q, err := ranks.PrecvInit(c, rbuf, 2, 3, 0, 9)
		r.Check(err, "PrecvInit")
		is(ranks.Pready(s, 0), ranks.ErrRequest, "Pready before Start")
		_, err = ranks.Parrived(q, 0)
		is(err, ranks.ErrRequest, "Parrived before Start")
		is(ranks.Pready(q, 0), ranks.ErrRequest, "Pready on a receive")
		_, err = ranks.Parrived(s, 0)
		is(err, ranks.ErrRequest, "Parrived on a send")
		r.Check(ranks.StartAll([]*ranks.Request{s, q}), "StartAll")
		is(s.Start(), ranks.ErrRequest, "Start of an active request")
		is(ranks.Pready(s, 3), ranks.ErrArg, "partition out of range")
		is(ranks.Pready(s, -1), ranks.ErrArg, "negative partition")
		_, err = ranks.Parrived(q, 2)
		is(err, ranks.ErrArg, "Parrived out of range")
		r.Check(ranks.Pready(s, 1), "Pready")
		is(ranks.Pready(s, 1), ranks.ErrArg, "Pready twice")
		is(ranks.PreadyRange(s, 0, 1), ranks.ErrArg, "PreadyRange over a ready partition")
		is(ranks.PreadyRange(s, 2, 0), ranks.ErrArg, "empty range")
		is(ranks.PreadyList(s, []int{0, 0}), ranks.ErrArg, "PreadyList with a repeat")
		is(s.Free(), ranks.ErrRequest, "Free of an active request")
		r.Check(ranks.PreadyList(s, []int{2, 0}), "PreadyList")
		r.Check(ranks.WaitAll([]*ranks.Request{s, q}, nil), "WaitAll")
		if fmt.Sprint(rbuf) != "[1 2 3 4 5 6]" {
			r.Errorf("to itself: %v", rbuf)
		}
		is(ranks.Pready(s, 0), ranks.ErrRequest, "Pready after Wait")
		r.Check(s.Free(), "Free")
		r.Check(q.Free(), "Free")
		_, err = ranks.Parrived(q, 0)
		is(err, ranks.ErrRequest, "Parrived on a freed request")

		n, err := ranks.PsendInit(c, sbuf, 3, 2, ranks.ProcNull, 1)
		r.Check(err, "PsendInit to ProcNull")
		m, err := ranks.PrecvInit(c, rbuf, 3, 2, ranks.ProcNull, 1)
		r.Check(err, "PrecvInit from ProcNull")
		r.Check(ranks.StartAll([]*ranks.Request{n, m}), "StartAll")
		r.Check(ranks.PreadyRange(n, 0, 2), "PreadyRange")
		if ok, err := ranks.Parrived(m, 1); !ok || err != nil {
			r.Errorf("Parrived from ProcNull: %v %v", ok, err)
		}
		st, err := m.Wait()
		r.Check(err, "Wait")
		if st.Source != ranks.ProcNull {
			r.Errorf("status from ProcNull: %+v", st)
		}
		r.Check(ranks.WaitAll([]*ranks.Request{n}, nil), "Wait")
		r.Check(n.Free(), "Free")
		r.Check(m.Free(), "Free")

		// A request freed before its pair exists leaves nothing posted
		// that could take a later user message.
		f, err := ranks.PrecvInit(c, rbuf, 1, 6, 0, 11)
		r.Check(err, "PrecvInit")
		r.Check(f.Free(), "Free unstarted")
		r.Check(ranks.Send(c, []byte{5}, 0, 11), "Send")
		b := make([]byte, 1)
		_, err = ranks.Recv(c, b, ranks.AnySource, ranks.AnyTag)
		r.Check(err, "Recv")
		if b[0] != 5 {
			r.Errorf("AnyTag receive got %d", b[0])
		}
	})
}

// A peer killed during a round: the survivor gets ErrProcFailed from
// Wait and Parrived, never a hang. Either side may be the one killed,
// before or after the handshake.
func TestPartitionedKill(t *testing.T) {
	for _, who := range []string{"sender", "receiver", "receiver-early"} {
		t.Run(who, func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 2, Dies: []int{1}, Timeout: 30 * time.Second, Quiet: true}, func(r *ranktest.R) {
				c := r.Comm
				buf := make([]byte, 4<<20)
				switch {
				case who == "sender" && r.Rank == 1:
					q, err := ranks.PsendInit(c, buf, 4, 1<<20, 0, 1)
					r.Check(err, "PsendInit")
					r.Check(q.Start(), "Start")
					r.Check(ranks.Pready(q, 0), "Pready")
					_, err = ranks.Recv(c, make([]byte, 1), 0, 2)
					r.Check(err, "Recv")
					r.Kill()
				case who == "sender":
					q, err := ranks.PrecvInit(c, buf, 4, 1<<20, 1, 1)
					r.Check(err, "PrecvInit")
					r.Check(q.Start(), "Start")
					for {
						ok, err := ranks.Parrived(q, 0)
						r.Check(err, "Parrived")
						if ok {
							break
						}
					}
					r.Check(ranks.Send(c, []byte{1}, 1, 2), "Send")
					// Parrived alone learns of the failure.
					deadline := time.Now().Add(10 * time.Second)
					for err == nil && time.Now().Before(deadline) {
						_, err = ranks.Parrived(q, 1)
					}
					procFailed(r, err, 1, "Parrived")
					_, err = q.Wait()
					procFailed(r, err, 1, "Wait of a partitioned receive")
					_, err = ranks.Parrived(q, 1)
					procFailed(r, err, 1, "Parrived after Wait")
					r.Check(q.Free(), "Free")
				case r.Rank == 1:
					if who == "receiver" {
						q, err := ranks.PrecvInit(c, buf, 2, 2<<20, 0, 1)
						r.Check(err, "PrecvInit")
						r.Check(q.Start(), "Start")
						ok := false
						for !ok {
							ok, err = ranks.Parrived(q, 0)
							r.Check(err, "Parrived")
						}
					}
					r.Kill()
				default:
					q, err := ranks.PsendInit(c, buf, 4, 1<<20, 1, 1)
					r.Check(err, "PsendInit")
					r.Check(q.Start(), "Start")
					r.Check(ranks.PreadyRange(q, 0, 1), "PreadyRange")
					if who == "receiver" {
						// Partitions 2 and 3 go to a dead or dying peer.
						time.Sleep(time.Millisecond)
					}
					r.Check(ranks.PreadyRange(q, 2, 3), "PreadyRange")
					_, err = q.Wait()
					if who == "receiver-early" {
						procFailed(r, err, 1, "Wait of a partitioned send before the handshake")
					} else if err != nil {
						// Sends may complete locally before the
						// receiver died; if not, the failure is reported.
						procFailed(r, err, 1, "Wait of a partitioned send")
					}
					r.Check(q.Start(), "Start")
					r.Check(ranks.PreadyRange(q, 0, 3), "PreadyRange")
					_, err = q.Wait()
					procFailed(r, err, 1, "Wait of the next round")
					r.Check(q.Free(), "Free")
				}
			})
		})
	}
}

// A revoke during a round ends it with ErrRevoked at both sides.
func TestPartitionedRevoke(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Timeout: 30 * time.Second}, func(r *ranktest.R) {
		c, err := r.Comm.Dup()
		r.Check(err, "Dup")
		buf := make([]uint16, 1<<18)
		if r.Rank == 0 {
			q, err := ranks.PsendInit(c, buf, 4, 1<<16, 1, 1)
			r.Check(err, "PsendInit")
			r.Check(q.Start(), "Start")
			r.Check(ranks.Send(r.Comm, []byte{1}, 1, 3), "Send")
			_, err = ranks.Recv(r.Comm, make([]byte, 1), 1, 2) // revoked now
			r.Check(err, "Recv")
			r.Check(ranks.PreadyRange(q, 0, 3), "PreadyRange")
			if _, err := q.Wait(); !errors.Is(err, ranks.ErrRevoked) {
				r.Errorf("sender Wait after revoke: %v", err)
			}
			r.Check(q.Free(), "Free")
		} else {
			q, err := ranks.PrecvInit(c, buf, 2, 1<<17, 0, 1)
			r.Check(err, "PrecvInit")
			r.Check(q.Start(), "Start")
			_, err = ranks.Recv(r.Comm, make([]byte, 1), 0, 3) // the sender's init is done
			r.Check(err, "Recv")
			r.Check(ulfm.Revoke(c), "Revoke")
			r.Check(ranks.Send(r.Comm, []byte{1}, 0, 2), "Send")
			if _, err := ranks.Parrived(q, 0); !errors.Is(err, ranks.ErrRevoked) {
				r.Errorf("Parrived after revoke: %v", err)
			}
			if _, err := q.Wait(); !errors.Is(err, ranks.ErrRevoked) {
				r.Errorf("receiver Wait after revoke: %v", err)
			}
			r.Check(q.Free(), "Free")
		}
		r.Check(c.Free(), "Free comm")
	})
}

// Two pairs on one tag pair up in the order of their init calls, however
// they are started; a pending AnyTag receive on the same communicator
// sees none of their traffic.
// Also at ThreadSerialized, where the engine takes no lock.
func TestPartitionedPairing(t *testing.T) {
	for _, ser := range []bool{false, true} {
		t.Run(fmt.Sprint("serialized=", ser), func(t *testing.T) { testPairing(t, ser) })
	}
}

func testPairing(t *testing.T, serialized bool) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Serialized: serialized, Timeout: 30 * time.Second}, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 0 {
			a := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
			b := []int32{-1, -2, -3, -4, -5, -6, -7, -8}
			qa, err := ranks.PsendInit(c, a, 3, 4, 1, 5)
			r.Check(err, "PsendInit a")
			qb, err := ranks.PsendInit(c, b, 2, 4, 1, 5)
			r.Check(err, "PsendInit b")
			for range 3 {
				r.Check(qb.Start(), "Start b")
				r.Check(ranks.PreadyRange(qb, 0, 1), "Pready b")
				r.Check(qa.Start(), "Start a")
				r.Check(ranks.PreadyList(qa, []int{2, 1, 0}), "Pready a")
				r.Check(ranks.WaitAll([]*ranks.Request{qa, qb}, nil), "WaitAll")
			}
			r.Check(ranks.Send(c, []int32{42}, 1, 77), "Send")
			r.Check(qa.Free(), "Free")
			r.Check(qb.Free(), "Free")
			return
		}
		got := make([]int32, 1)
		qany, err := ranks.Irecv(c, got, ranks.AnySource, ranks.AnyTag)
		r.Check(err, "Irecv AnyTag")
		a, b := make([]int32, 12), make([]int32, 8)
		qa, err := ranks.PrecvInit(c, a, 6, 2, 0, 5)
		r.Check(err, "PrecvInit a")
		qb, err := ranks.PrecvInit(c, b, 1, 8, 0, 5)
		r.Check(err, "PrecvInit b")
		for round := range 3 {
			clear(a)
			clear(b)
			r.Check(qa.Start(), "Start a")
			r.Check(qb.Start(), "Start b")
			r.Check(ranks.WaitAll([]*ranks.Request{qb, qa}, nil), "WaitAll")
			if fmt.Sprint(a) != "[1 2 3 4 5 6 7 8 9 10 11 12]" || fmt.Sprint(b) != "[-1 -2 -3 -4 -5 -6 -7 -8]" {
				r.Errorf("round %d: a %v b %v", round, a, b)
			}
		}
		st, err := qany.Wait()
		r.Check(err, "Wait AnyTag")
		if got[0] != 42 || st.Tag != 77 {
			r.Errorf("the AnyTag receive got %v with tag %d", got, st.Tag)
		}
		r.Check(qa.Free(), "Free")
		r.Check(qb.Free(), "Free")
	})
}

// Requests freed without a partner, or before their first round, leave
// nothing that hangs Finalize or later messages on the tag.
func TestPartitionedUnmatched(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Timeout: 30 * time.Second}, func(r *ranktest.R) {
		c := r.Comm
		buf := make([]byte, 64)
		if r.Rank == 0 {
			q, err := ranks.PsendInit(c, buf, 4, 16, 1, 9) // no partner ever
			r.Check(err, "PsendInit")
			r.Check(q.Free(), "Free")
			r.Check(ranks.Send(c, []byte{3}, 1, 9), "Send")
			return
		}
		q, err := ranks.PrecvInit(c, buf, 2, 32, 0, 8) // no partner ever
		r.Check(err, "PrecvInit")
		r.Check(q.Free(), "Free")
		b := make([]byte, 1)
		st, err := ranks.Recv(c, b, 0, ranks.AnyTag)
		r.Check(err, "Recv")
		if b[0] != 3 || st.Tag != 9 {
			r.Errorf("got %d with tag %d", b[0], st.Tag)
		}
	})
}
