package win_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/win"
)

func alloc(r *ranktest.R, n, unit int) *win.Win {
	w, err := win.AllocateShared(r.Comm, n, unit)
	r.Check(err, "AllocateShared")
	return w
}

func wantClass(r *ranktest.R, err, class error, what string) {
	if !errors.Is(err, class) {
		r.Errorf("%s: %v, want %v", what, err, class)
	}
}

// Put, Get and Fence, and loads and stores through SharedQuery, on
// parts of different sizes and displacement units.
func TestPutGetFence(t *testing.T) {
	for _, n := range []int{1, 2, 4, 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: n, Quiet: true}, func(r *ranktest.R) {
				me, size := r.Rank, r.Size
				// Member r has size+r int64 slots, displacement unit 8.
				w := alloc(r, 8*(size+me), 8)
				r.Check(w.Fence(0), "fence")
				for t := range size {
					r.Check(win.Put(w, []int64{int64(100*me + t)}, t, me), "put")
				}
				r.Check(w.Fence(0), "fence")
				mine, err := win.View[int64](w, me)
				r.Check(err, "view")
				if len(mine) != size+me {
					r.Fatalf("own part: %d elements, want %d", len(mine), size+me)
				}
				for o := range size {
					if mine[o] != int64(100*o+me) {
						r.Errorf("slot %d: %d, want %d", o, mine[o], 100*o+me)
					}
				}
				// Store directly, read it back with Get at another member.
				mine[size+me-1] = int64(-me - 1)
				r.Check(w.Fence(0), "fence")
				next := (me + 1) % size
				got := make([]int64, 1)
				r.Check(win.Get(w, got, next, size+next-1), "get")
				if got[0] != int64(-next-1) {
					r.Errorf("get from %d: %d, want %d", next, got[0], -next-1)
				}
				// Out of range.
				wantClass(r, win.Put(w, []int64{1}, next, size+next), ranks.ErrArg, "put past the end")
				wantClass(r, win.Put(w, []int64{1}, size, 0), ranks.ErrRank, "put to a rank out of range")
				r.Check(w.Fence(0), "fence")
				r.Check(w.Free(), "free")
				wantClass(r, win.Put(w, []int64{1}, 0, 0), ranks.ErrWin, "put on a freed window")
			})
		})
	}
}

// Accumulates from every member at once on the same elements lose no
// update, for every element size; FetchAndOp hands out unique tickets;
// exactly one CompareAndSwap wins.
func TestAtomics(t *testing.T) {
	for _, cores := range []int{0, 4} {
		t.Run(fmt.Sprintf("cores=%d", cores), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 4, Cores: cores, Quiet: true}, func(r *ranktest.R) {
				me, size := r.Rank, r.Size
				const iters = 300
				w := alloc(r, 88, 1)
				r.Check(w.Fence(0), "fence")
				var words []int16 // GetAccumulate's old values, a word of elements at once
				for i := range iters {
					r.Check(win.Accumulate(w, []int64{1, 2}, 0, 0, coll.Sum[int64]), "acc int64")
					r.Check(win.Accumulate(w, []int32{1}, 0, 16, coll.Sum[int32]), "acc int32")
					r.Check(win.Accumulate(w, []int16{1, 1}, 0, 20, coll.Sum[int16]), "acc int16")
					r.Check(win.Accumulate(w, []uint8{1, 1, 1}, 0, 24, coll.Sum[uint8]), "acc uint8")
					r.Check(win.Accumulate(w, []float64{0.5}, 0, 32, coll.Sum[float64]), "acc float64")
					r.Check(win.Accumulate(w, []int64{int64(me*iters + i)}, 0, 40, coll.Max[int64]), "acc max")
					// Whole 8-byte words of small elements, and one more.
					r.Check(win.Accumulate(w, []uint8{1, 1, 1, 1, 1, 1, 1, 1, 1}, 0, 64, coll.Sum[uint8]), "acc uint8 word")
					old := make([]int16, 4)
					r.Check(win.GetAccumulate(w, []int16{1, 1, 1, 1}, old, 0, 80, coll.Sum[int16]), "get acc int16 word")
					if old[1] != old[0] || old[2] != old[0] || old[3] != old[0] {
						r.Errorf("GetAccumulate of a word: old values %v, want one value (a word is updated at once)", old)
					}
					words = append(words, old[0])
				}
				r.Check(w.Fence(0), "fence")
				all16 := make([]int16, size*iters)
				r.Check(coll.Allgather(r.Comm, words, all16), "allgather")
				slices.Sort(all16)
				for i, v := range all16 {
					if v != int16(i) {
						r.Fatalf("GetAccumulate of a word: old value %d at %d, want each of 0..%d once", v, i, size*iters-1)
					}
				}
				if me == 0 {
					p, _ := win.View[byte](w, 0)
					for k, b := range p[64:73] {
						if b != uint8(size*iters) {
							r.Errorf("accumulated uint8 words: byte %d is %d, want %d", 64+k, b, uint8(size*iters))
						}
					}
					i64, _ := win.View[int64](w, 0)
					i32, _ := win.View[int32](w, 0)
					i16, _ := win.View[int16](w, 0)
					f64, _ := win.View[float64](w, 0)
					n := size * iters
					if i64[0] != int64(n) || i64[1] != int64(2*n) || i32[4] != int32(n) || i16[10] != int16(n) || i16[11] != int16(n) ||
						p[24] != uint8(n) || p[25] != uint8(n) || p[26] != uint8(n) || p[27] != 0 || f64[4] != float64(n)/2 ||
						i64[5] != int64(size*iters-1) {
						r.Errorf("accumulated: %v %v %v %v %v %v, want %d everywhere (bytes mod 256), sum %v, max %d",
							i64[:2], i32[4], i16[10:12], p[24:28], f64[4], i64[5], n, float64(n)/2, size*iters-1)
					}
				}
				// Tickets.
				var got []int64
				for range iters {
					old, err := win.FetchAndOp(w, 1, 0, 48, coll.Sum[int64])
					r.Check(err, "fetch and op")
					got = append(got, old)
				}
				all := make([]int64, size*iters)
				r.Check(coll.Allgather(r.Comm, got, all), "allgather")
				slices.Sort(all)
				for i, v := range all {
					if v != int64(i) {
						r.Fatalf("tickets: %d at %d, want every ticket once", v, i)
					}
				}
				// One CAS wins.
				old, err := win.CompareAndSwap(w, int64(0), int64(me+1), 0, 56)
				r.Check(err, "cas")
				wins, err := coll.AllreduceValue(r.Comm, boolInt(old == 0), coll.Sum[int])
				r.Check(err, "allreduce")
				if wins != 1 {
					r.Errorf("%d CompareAndSwaps won, want 1", wins)
				}
				// GetAccumulate with NoOp reads; Replace writes.
				r.Check(w.Fence(0), "fence")
				res := make([]int64, 1)
				r.Check(win.GetAccumulate(w, []int64{0}, res, 0, 56, win.NoOp[int64]), "get accumulate")
				if res[0] < 1 || res[0] > int64(size) {
					r.Errorf("NoOp read %d", res[0])
				}
				r.Check(w.Fence(0), "fence")
				if me == 1 {
					r.Check(win.Accumulate(w, []int64{77}, 0, 56, win.Replace[int64]), "replace")
				}
				r.Check(w.Fence(0), "fence")
				r.Check(win.Get(w, res, 0, 56), "get")
				if res[0] != 77 {
					r.Errorf("after Replace: %d", res[0])
				}
				wantClass(r, win.Accumulate(w, []int64{1}, 0, 3, coll.Sum[int64]), ranks.ErrArg, "misaligned accumulate")
				r.Check(w.Free(), "free")
			})
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Exclusive locks exclude each other: a read-modify-write under the lock
// loses nothing. Shared locks coexist; request-based operations complete.
func TestLocks(t *testing.T) {
	for _, cores := range []int{0, 3} {
		t.Run(fmt.Sprintf("cores=%d", cores), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 3, Cores: cores, Quiet: true}, func(r *ranktest.R) {
				me, size := r.Rank, r.Size
				w := alloc(r, 16, 8)
				const iters = 200
				for range iters {
					r.Check(w.Lock(win.LockExclusive, 1), "lock")
					v := make([]int64, 1)
					r.Check(win.Get(w, v, 1, 0), "get")
					v[0]++
					r.Check(win.Put(w, v, 1, 0), "put")
					r.Check(w.Unlock(1), "unlock")
				}
				r.Check(w.LockAll(), "lock all")
				q, err := win.Rget(w, make([]int64, 1), (me+1)%size, 0)
				r.Check(err, "rget")
				_, err = q.Wait()
				r.Check(err, "wait")
				r.Check(w.FlushAll(), "flush all")
				r.Check(w.UnlockAll(), "unlock all")
				r.Check(w.Fence(0), "fence")
				v := make([]int64, 1)
				r.Check(win.Get(w, v, 1, 0), "get")
				if v[0] != int64(size*iters) {
					r.Errorf("counter under the lock: %d, want %d", v[0], size*iters)
				}
				wantClass(r, w.Unlock(0), ranks.ErrRMASync, "unlock without the lock")
				r.Check(w.Free(), "free")
			})
		})
	}
}

// Post-start-complete-wait: every origin writes its slot at the target
// between Start and Complete; the target sees them all after Wait.
func TestPSCW(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Quiet: true}, func(r *ranktest.R) {
		me, size := r.Rank, r.Size
		w := alloc(r, 8*size, 8)
		for round := range 20 {
			if me == 0 {
				origins := []int{1, 2, 3}
				r.Check(w.Post(origins), "post")
				r.Check(w.Wait(), "wait")
				got, _ := win.View[int64](w, 0)
				for o := 1; o < size; o++ {
					if got[o] != int64(round*10+o) {
						r.Errorf("round %d: slot %d holds %d", round, o, got[o])
					}
				}
			} else {
				r.Check(w.Start([]int{0}), "start")
				r.Check(win.Put(w, []int64{int64(round*10 + me)}, 0, me), "put")
				r.Check(w.Complete(), "complete")
			}
		}
		r.Check(w.Free(), "free")
	})
}

// A lock whose holder is SIGKILLed is poisoned: the waiter already in it
// and every later locker get ErrProcFailed; another target's lock keeps
// working; a fence then reports the failure; Free completes.
func TestLockHolderDies(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Dies: []int{1}, Quiet: true}, func(r *ranktest.R) {
		w := alloc(r, 8, 8)
		r.Check(w.Fence(0), "fence")
		switch r.Rank {
		case 1:
			r.Check(w.Lock(win.LockExclusive, 0), "lock")
			r.Check(ranks.Send(r.Comm, []byte{1}, 2, 5), "tell 2")
			r.Check(ranks.Send(r.Comm, []byte{1}, 3, 5), "tell 3")
			// Rank 2 waits in the lock before the death (or after it:
			// either way it must get ErrProcFailed).
			r.Kill()
		case 2:
			_, err := ranks.Recv(r.Comm, make([]byte, 1), 1, 5)
			r.Check(err, "recv")
			wantClass(r, w.Lock(win.LockExclusive, 0), ranks.ErrProcFailed, "waiter in the dead holder's lock")
			wantClass(r, w.Lock(win.LockShared, 0), ranks.ErrProcFailed, "shared lock after poisoning")
		case 3:
			_, err := ranks.Recv(r.Comm, make([]byte, 1), 1, 5)
			r.Check(err, "recv")
			_, err = ranks.Recv(r.Comm, make([]byte, 1), 1, 6) // returns once 1 is dead
			wantClass(r, err, ranks.ErrProcFailed, "recv from the dead")
			wantClass(r, w.Lock(win.LockExclusive, 0), ranks.ErrProcFailed, "lock after the death")
		case 0:
			_, err := ranks.Recv(r.Comm, make([]byte, 1), 1, 6) // returns once 1 is dead
			wantClass(r, err, ranks.ErrProcFailed, "recv from the dead")
		}
		if r.Rank != 1 {
			// Other targets' locks keep working.
			for range 20 {
				r.Check(w.Lock(win.LockExclusive, 3), "lock of a live target")
				r.Check(win.Accumulate(w, []int64{1}, 3, 0, coll.Sum[int64]), "accumulate")
				r.Check(w.Unlock(3), "unlock")
			}
			wantClass(r, win.Put(w, []int64{1}, 1, 0), ranks.ErrProcFailed, "put to the dead")
			wantClass(r, w.Fence(0), ranks.ErrProcFailed, "fence with a dead member")
			failed, err := w.GetFailed()
			r.Check(err, "get failed")
			if !slices.Contains(failed, 1) {
				r.Errorf("GetFailed: %v, want 1 in it", failed)
			}
			w.Free() // may report the failure; must complete
		}
	})
}

// A revoke reaches every member: a member asleep in a lock returns
// ErrRevoked, and every later call on the window does too; a window
// created afterwards is not revoked.
func TestRevoke(t *testing.T) {
	for _, cores := range []int{0, 3} {
		t.Run(fmt.Sprintf("cores=%d", cores), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 3, Cores: cores, Quiet: true}, func(r *ranktest.R) {
				w := alloc(r, 8, 8)
				r.Check(w.Fence(0), "fence")
				switch r.Rank {
				case 0:
					r.Check(w.Lock(win.LockExclusive, 0), "lock")
					r.Check(ranks.Send(r.Comm, []byte{1}, 1, 5), "tell 1")
					r.Check(ranks.Send(r.Comm, []byte{1}, 2, 5), "tell 2")
					_, err := ranks.Recv(r.Comm, make([]byte, 1), 2, 6)
					r.Check(err, "recv: revoked")
				case 1:
					_, err := ranks.Recv(r.Comm, make([]byte, 1), 0, 5)
					r.Check(err, "recv")
					wantClass(r, w.Lock(win.LockExclusive, 0), ranks.ErrRevoked, "lock blocked when revoked")
				case 2:
					_, err := ranks.Recv(r.Comm, make([]byte, 1), 0, 5)
					r.Check(err, "recv")
					r.Check(w.Revoke(), "revoke")
					r.Check(ranks.Send(r.Comm, []byte{1}, 0, 6), "tell 0")
				}
				wantClass(r, win.Put(w, []int64{1}, 0, 0), ranks.ErrRevoked, "put")
				wantClass(r, w.Fence(0), ranks.ErrRevoked, "fence")
				wantClass(r, w.Lock(win.LockShared, 2), ranks.ErrRevoked, "lock")
				wantClass(r, w.Flush(1), ranks.ErrRevoked, "flush")
				r.Check(w.Revoke(), "revoke again")
				w.Free()
				v := alloc(r, 8, 8)
				r.Check(v.Fence(0), "fence on the next window")
				r.Check(win.Put(v, []int64{1}, 0, 0), "put on the next window")
				r.Check(v.Free(), "free")
			})
		})
	}
}

// An origin SIGKILLed at a random moment inside a stream of vector
// accumulates leaves every element either updated by a call or not: the
// elements, updated in order, hold k+1 increments up to some element and
// k after it, and no element holds a torn value.
func TestAccumulateOriginDies(t *testing.T) {
	for trial := range 3 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 2, Dies: []int{1}, Quiet: true}, func(r *ranktest.R) {
				const n = 4096
				// A torn update shows as halves that differ; the count
				// fits 32 bits (the origin makes millions of updates in
				// the 3 ms; with one increment per byte they wrapped).
				const inc = 1<<32 | 1
				w := alloc(r, 8*n, 8)
				r.Check(w.Fence(0), "fence")
				if r.Rank == 1 {
					src := make([]uint64, n)
					for i := range src {
						src[i] = inc
					}
					go func() {
						time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond) // the kill point, not an ordering
						r.Kill()
					}()
					for {
						win.Accumulate(w, src, 0, 0, coll.Sum[uint64])
					}
				}
				_, err := ranks.Recv(r.Comm, make([]byte, 1), 1, 1)
				wantClass(r, err, ranks.ErrProcFailed, "recv from the dying origin")
				v, _ := win.View[uint64](w, 0)
				k := v[n-1] / inc
				for i, x := range v {
					if x>>32 != x&(1<<32-1) {
						r.Fatalf("element %d torn: %#x", i, x)
					}
					if c := x / inc; c != k && c != k+1 || (i > 0 && c > v[i-1]/inc) {
						r.Fatalf("element %d: %d updates after %d, last %d", i, c, v[max(i-1, 0)]/inc, k)
					}
				}
				w.Free()
			})
		})
	}
}

// Windows over the user's memory (an ordinary slice and ranks.AllocMem
// memory): Put, Get and accumulates reach it with cross-process copies;
// accumulates from every member at once lose nothing.
func TestCreate(t *testing.T) {
	// "mixed": rank 0's memory is from AllocMem, the others' from make.
	for _, mem := range []string{"make", "allocmem", "mixed"} {
		t.Run(mem, func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
				me, size := r.Rank, r.Size
				fromAlloc := mem == "allocmem" || mem == "mixed" && me == 0
				buf := make([]byte, 64)
				if fromAlloc {
					b, err := ranks.AllocMem(64)
					r.Check(err, "AllocMem")
					buf = b
				}
				w, err := win.Create(r.Comm, buf, 8)
				r.Check(err, "Create")
				r.Check(w.Fence(0), "first fence")
				next := (me + 1) % size
				if mem != "allocmem" {
					if _, _, err := w.SharedQuery(0); !errors.Is(err, ranks.ErrWin) {
						r.Errorf("SharedQuery on a window over heap memory: %v, want ErrWin", err)
					}
				} else {
					// Every member's memory is mapped here: a store to the
					// next member's part shows in its own buffer after a fence.
					part, unit, err := w.SharedQuery(next)
					r.Check(err, "SharedQuery")
					if len(part) != 64 || unit != 8 {
						r.Errorf("SharedQuery(%d): %d bytes, unit %d", next, len(part), unit)
					}
					part[24] = byte(50 + me)
					r.Check(w.Fence(0), "fence")
					if want := byte(50 + (me+size-1)%size); buf[24] != want {
						r.Errorf("own byte 24: %d, want %d (a peer's direct store)", buf[24], want)
					}
				}
				r.Check(win.Put(w, []int64{int64(10 + me)}, next, 0), "put")
				r.Check(w.Fence(0), "fence")
				own := unsafe.Slice((*int64)(unsafe.Pointer(&buf[0])), 8)
				prev := (me + size - 1) % size
				if own[0] != int64(10+prev) {
					r.Errorf("own slot 0: %d, want %d", own[0], 10+prev)
				}
				got := make([]int64, 1)
				r.Check(win.Get(w, got, next, 0), "get")
				if got[0] != int64(10+me) {
					r.Errorf("get: %d, want %d", got[0], 10+me)
				}
				for range 100 {
					r.Check(win.Accumulate(w, []int64{1, 2}, 0, 6, coll.Sum[int64]), "accumulate")
				}
				old, err := win.CompareAndSwap(w, int64(0), int64(me+1), 1, 5)
				r.Check(err, "cas")
				wins, err := coll.AllreduceValue(r.Comm, boolInt(old == 0), coll.Sum[int])
				r.Check(err, "allreduce")
				if wins != 1 {
					r.Errorf("%d CompareAndSwaps won, want 1", wins)
				}
				r.Check(w.Fence(0), "fence")
				if me == 0 && (own[6] != int64(100*size) || own[7] != int64(200*size)) {
					r.Errorf("accumulated %v, want [%d %d]", own[6:8], 100*size, 200*size)
				}
				wantClass(r, win.Put(w, []int64{1}, next, 8), ranks.ErrArg, "put past the exposed memory")
				r.Check(w.Free(), "free")
				if fromAlloc {
					r.Check(ranks.FreeMem(buf), "FreeMem")
				}
			})
		})
	}
}

// Dynamic windows: memory attached after creation is reached at its
// address; detached memory is not.
func TestCreateDynamic(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		me, size := r.Rank, r.Size
		w, err := win.CreateDynamic(r.Comm)
		r.Check(err, "CreateDynamic")
		buf := make([]byte, 32)
		r.Check(w.Attach(buf), "attach")
		addrs := make([]int64, size)
		r.Check(coll.Allgather(r.Comm, []int64{int64(win.Address(buf))}, addrs), "allgather")
		r.Check(w.Fence(0), "fence")
		next := (me + 1) % size
		r.Check(win.Put(w, []int64{int64(me + 1)}, next, int(addrs[next])+8), "put")
		r.Check(w.Fence(0), "fence")
		if v := *(*int64)(unsafe.Pointer(&buf[8])); v != int64((me+size-1)%size+1) {
			r.Errorf("attached memory: %d", v)
		}
		r.Check(w.Detach(buf), "detach")
		r.Check(w.Fence(0), "fence")
		wantClass(r, win.Put(w, []int64{1}, next, int(addrs[next])), ranks.ErrArg, "put to detached memory")
		r.Check(w.Free(), "free")
	})
}

// PSCW with a member killed: the target's Wait returns ErrProcFailed
// when an origin dies before Complete, and an origin's Start returns it
// when the target dies before Post.
func TestPSCWMemberDies(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{1, 2}, Quiet: true}, func(r *ranktest.R) {
		w := alloc(r, 8, 8)
		r.Check(w.Fence(0), "fence")
		switch r.Rank {
		case 0:
			r.Check(w.Post([]int{1}), "post")
			wantClass(r, w.Wait(), ranks.ErrProcFailed, "wait for a dead origin")
			// Rank 2, the target of rank 0's next epoch, dies before it
			// posts.
			wantClass(r, w.Start([]int{2}), ranks.ErrProcFailed, "start towards a dead target")
			w.Free()
		case 1:
			r.Check(w.Start([]int{0}), "start")
			r.Kill() // before Complete
		case 2:
			r.Kill()
		}
	})
}

// Contended lock waits and PSCW waits allocate nothing: their predicates
// are methods chosen by kind, not closures (at most a rare allocation of
// the engine's slow path, so well under one per call).
func TestWaitsDoNotAllocate(t *testing.T) {
	if win.RaceEnabled {
		t.Skip("the race detector's sync.Pool drops items at random")
	}
	for _, opts := range []ranktest.Options{{N: 3, Quiet: true}, {N: 2, Cores: 2, Quiet: true}} {
		t.Run(fmt.Sprint(opts.N), func(t *testing.T) {
			ranktest.RunOpts(t, opts, func(r *ranktest.R) {
				w := alloc(r, 32, 8)
				const calls = 2000
				var before, after runtime.MemStats
				measure := func(name string, f func()) {
					f()
					r.Check(w.Fence(0), "fence")
					runtime.ReadMemStats(&before)
					for range calls {
						f()
					}
					runtime.ReadMemStats(&after)
					if n := float64(after.Mallocs-before.Mallocs) / calls; n > 0.05 {
						r.Errorf("%s: %.2f allocations per call, want 0", name, n)
					}
					r.Check(w.Fence(0), "fence")
				}
				// Every member locks target 0 exclusively: most calls wait.
				one := []int64{1}
				measure("contended Lock", func() {
					r.Check(w.Lock(win.LockExclusive, 0), "lock")
					r.Check(win.Put(w, one, 0, 0), "put")
					r.Check(w.Unlock(0), "unlock")
				})
				// The RMA calls themselves, under a lock of every target.
				r.Check(w.LockAll(), "lockall")
				got := []int64{0}
				var old int64
				next := (r.Rank + 1) % r.Size
				measure("Put/Get/Accumulate/FetchAndOp/CompareAndSwap", func() {
					r.Check(win.Put(w, one, next, 1), "put")
					r.Check(win.Get(w, got, next, 1), "get")
					r.Check(win.Accumulate(w, one, next, 2, coll.Sum[int64]), "accumulate")
					r.Check(win.GetAccumulate(w, one, got, next, 2, coll.Sum[int64]), "get-accumulate")
					var err error
					old, err = win.FetchAndOp(w, 1, next, 3, coll.Sum[int64])
					r.Check(err, "fetch-and-op")
					old, err = win.CompareAndSwap(w, old, old+1, next, 3)
					r.Check(err, "compare-and-swap")
					r.Check(w.FlushAll(), "flush")
				})
				r.Check(w.UnlockAll(), "unlockall")
				// PSCW between ranks 0 (target) and 1 (origin): Start waits
				// for the Post, Wait for the Complete.
				measure("PSCW", func() {
					switch r.Rank {
					case 0:
						r.Check(w.Post([]int{1}), "post")
						r.Check(w.Wait(), "wait")
					case 1:
						r.Check(w.Start([]int{0}), "start")
						r.Check(w.Complete(), "complete")
					}
				})
				r.Check(w.Free(), "free")
			})
		})
	}
}
