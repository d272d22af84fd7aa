package win_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/win"
)

// A member killed while the others are in Fence: they get ErrProcFailed,
// never a hang, and Free still completes.
func TestFenceMemberDies(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Dies: []int{2}, Quiet: true}, func(r *ranktest.R) {
		w := alloc(r, 8*r.Size, 8)
		r.Check(w.Fence(0), "first fence")
		for it := 0; ; it++ {
			if err := win.Put(w, []int64{int64(it)}, (r.Rank+1)%r.Size, r.Rank); err != nil {
				wantClass(r, err, ranks.ErrProcFailed, "put to the dead member")
			}
			if r.Rank == 2 && it == 5 {
				r.Kill() // the others are in (or on their way into) Fence
			}
			err := w.Fence(0)
			if err == nil {
				continue
			}
			wantClass(r, err, ranks.ErrProcFailed, "fence with a member killed")
			break
		}
		w.Free() // may report the failure; must release and return
	})
}

// A member killed while it waits for a lock does not poison it (it held
// nothing): the holder unlocks, another member takes it. A member killed
// holding a shared lock, after a Put and before its Flush, poisons that
// lock only: later lockers of that target get ErrProcFailed, the locks of
// other targets keep working.
func TestLockWaiterAndHolderDie(t *testing.T) {
	t.Run("waiter", func(t *testing.T) {
		// Rank 1 dies 20 ms after it learns that rank 0 holds the lock,
		// whether or not it is in Lock by then: the outcome is the same
		// either way. (A timer from Init could fire inside the window's
		// creation on a loaded machine.)
		o := ranktest.Options{N: 3, Dies: []int{1}, Quiet: true}
		ranktest.RunOpts(t, o, func(r *ranktest.R) {
			w := alloc(r, 8, 8)
			r.Check(w.Fence(0), "fence")
			switch r.Rank {
			case 0:
				r.Check(w.Lock(win.LockExclusive, 0), "lock")
				ranks.Send(r.Comm, []byte{1}, 1, 8) // rank 1 may be dead already
				// Hold it until rank 1 is dead (nothing is ever sent).
				_, err := ranks.Recv(r.Comm, make([]byte, 1), 1, 9)
				wantClass(r, err, ranks.ErrProcFailed, "recv from the dying waiter")
				r.Check(win.Put(w, []int64{5}, 0, 0), "put under the lock")
				r.Check(w.Unlock(0), "unlock")
				r.Check(ranks.Send(r.Comm, []byte{1}, 2, 10), "go")
			case 1:
				ranks.Recv(r.Comm, make([]byte, 1), 0, 8) // rank 0 holds the lock
				time.AfterFunc(20*time.Millisecond, r.Kill)
				w.Lock(win.LockExclusive, 0) // killed in here
				select {}
			case 2:
				_, err := ranks.Recv(r.Comm, make([]byte, 1), 0, 10)
				r.Check(err, "go")
				r.Check(w.Lock(win.LockExclusive, 0), "lock after the dead waiter")
				got := []int64{0}
				r.Check(win.Get(w, got, 0, 0), "get")
				if got[0] != 5 {
					r.Errorf("got %d, want 5", got[0])
				}
				r.Check(w.Unlock(0), "unlock")
			}
			w.Free()
		})
	})
	t.Run("flush", func(t *testing.T) {
		ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{1}, Quiet: true}, func(r *ranktest.R) {
			w := alloc(r, 8, 8)
			r.Check(w.Fence(0), "fence")
			if r.Rank == 1 {
				r.Check(w.Lock(win.LockShared, 0), "lock")
				r.Check(win.Put(w, []int64{7}, 0, 0), "put")
				r.Check(ranks.Send(r.Comm, []byte{1}, 0, 1), "locked")
				r.Check(ranks.Send(r.Comm, []byte{1}, 2, 1), "locked")
				r.Kill() // before its Flush and Unlock
			}
			_, err := ranks.Recv(r.Comm, make([]byte, 1), 1, 1)
			r.Check(err, "locked")
			_, err = ranks.Recv(r.Comm, make([]byte, 1), 1, 2)
			wantClass(r, err, ranks.ErrProcFailed, "recv from the dead holder")
			wantClass(r, w.Lock(win.LockExclusive, 0), ranks.ErrProcFailed, "exclusive lock of a dead shared holder's target")
			// Another target's lock works.
			other := 2
			r.Check(w.Lock(win.LockExclusive, other), "lock of another target")
			r.Check(win.Put(w, []int64{int64(r.Rank)}, other, 0), "put")
			r.Check(w.Flush(other), "flush")
			r.Check(w.Unlock(other), "unlock")
			w.Free()
		})
	})
}

// A Revoke at one member ends every blocking call on the window at the
// others with ErrRevoked, whether it comes before or during the call;
// afterwards every RMA call and synchronization on it gives ErrRevoked at
// every member; the next window on the same communicator works.
func TestRevokeDuringBlockingCalls(t *testing.T) {
	for _, call := range []string{"Fence", "Wait", "Start", "Lock", "LockAll"} {
		t.Run(call, func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
				w := alloc(r, 16, 8)
				r.Check(w.Fence(0), "fence")
				if r.Rank == 0 && (call == "Lock" || call == "LockAll") {
					r.Check(w.Lock(win.LockExclusive, 2), "lock held by rank 0")
				}
				r.Check(coll.Barrier(r.Comm), "barrier")
				switch r.Rank {
				case 0:
					r.Check(w.Revoke(), "revoke")
				case 1, 2:
					// Blocked for good unless revoked: nobody else fences,
					// starts, completes, posts or unlocks.
					var err error
					switch call {
					case "Fence":
						err = w.Fence(0)
					case "Wait":
						if err = w.Post([]int{0}); err == nil { // a revoke may come first
							err = w.Wait()
						}
					case "Start":
						err = w.Start([]int{0})
					case "Lock":
						err = w.Lock(win.LockExclusive, 2)
					case "LockAll":
						err = w.LockAll()
					}
					wantClass(r, err, ranks.ErrRevoked, call+" when the window is revoked")
				}
				everyCallRevoked(r, w)
				w.Free()
				w2 := alloc(r, 16, 8)
				r.Check(w2.Fence(0), "first fence on the next window")
				r.Check(win.Put(w2, []int64{1}, (r.Rank+1)%r.Size, 0), "put on the next window")
				r.Check(w2.Fence(0), "fence on the next window")
				r.Check(w2.Free(), "free the next window")
			})
		})
	}
}

func everyCallRevoked(r *ranktest.R, w *win.Win) {
	var old int64
	_, err := win.FetchAndOp(w, int64(1), 0, 0, coll.Sum[int64])
	wantClass(r, err, ranks.ErrRevoked, "FetchAndOp")
	_, err = win.CompareAndSwap(w, old, 1, 0, 0)
	wantClass(r, err, ranks.ErrRevoked, "CompareAndSwap")
	for name, err := range map[string]error{
		"Put":        win.Put(w, []int64{1}, 0, 0),
		"Get":        win.Get(w, []int64{0}, 0, 0),
		"Accumulate": win.Accumulate(w, []int64{1}, 0, 0, coll.Sum[int64]),
		"Flush":      w.Flush(0),
		"Lock":       w.Lock(win.LockShared, 1),
		"Unlock":     w.Unlock(2),
		"Fence":      w.Fence(0),
		"Post":       w.Post([]int{0}),
		"Start":      w.Start([]int{0}),
	} {
		wantClass(r, err, ranks.ErrRevoked, name+" after the revoke")
	}
}

// Every member revokes, twice: all see ErrRevoked. Then windows made and
// freed in a loop, some revoked: no revoke reaches the next window in the
// reused slot.
func TestRevokeFromSeveral(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		w := alloc(r, 16, 8)
		r.Check(w.Revoke(), "revoke")
		r.Check(w.Revoke(), "second revoke")
		r.Check(coll.Barrier(r.Comm), "barrier")
		everyCallRevoked(r, w)
		w.Free()
		for i := range 50 {
			w := alloc(r, 16, 8)
			r.Check(w.Fence(0), fmt.Sprint("first fence in window ", i))
			r.Check(win.Put(w, []int64{int64(i)}, (r.Rank+1)%r.Size, 0), fmt.Sprint("put in window ", i))
			r.Check(w.Fence(0), fmt.Sprint("fence in window ", i))
			if i%2 == 1 {
				if r.Rank == i%r.Size {
					r.Check(w.Revoke(), "revoke")
				}
				r.Check(coll.Barrier(r.Comm), "barrier")
				wantClass(r, win.Put(w, []int64{1}, 0, 0), ranks.ErrRevoked, fmt.Sprint("put in revoked window ", i))
				w.Free()
				continue
			}
			r.Check(w.Free(), "free")
		}
	})
}

// Bad input gets a clear error and harms no one: a normal epoch works at
// every member afterwards.
func TestWinBadInput(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		w := alloc(r, 32, 8) // 4 int64 at every member
		r.Check(w.Fence(0), "fence")
		next := (r.Rank + 1) % r.Size
		wantClass(r, win.Put(w, []int64{1}, next, -1), ranks.ErrArg, "negative displacement")
		wantClass(r, win.Put(w, make([]int64, 5), next, 0), ranks.ErrArg, "count past the window")
		wantClass(r, win.Get(w, make([]int64, 2), next, 3), ranks.ErrArg, "get past the window")
		wantClass(r, win.Accumulate(w, []int64{1}, next, 4, coll.Sum[int64]), ranks.ErrArg, "accumulate past the window")
		wantClass(r, win.Put[int64](nil, []int64{1}, 0, 0), ranks.ErrWin, "put on a nil window")
		wantClass(r, win.Get[int64](nil, []int64{1}, 0, 0), ranks.ErrWin, "get on a nil window")
		wantClass(r, win.Put(w, []int64{1}, -1, 0), ranks.ErrRank, "target -1")
		wantClass(r, win.Put(w, []int64{1}, r.Size, 0), ranks.ErrRank, "target = size")
		wantClass(r, w.Lock(win.LockExclusive, r.Size), ranks.ErrRank, "lock of a target out of range")
		wantClass(r, w.Unlock(next), ranks.ErrRMASync, "unlock without lock")
		r.Check(w.Lock(win.LockShared, next), "lock")
		wantClass(r, w.Lock(win.LockShared, next), ranks.ErrRMASync, "lock twice")
		r.Check(w.Unlock(next), "unlock")
		wantClass(r, w.Complete(), ranks.ErrRMASync, "complete without start")
		wantClass(r, w.Wait(), ranks.ErrRMASync, "wait without post")
		wantClass(r, w.Post([]int{next, next}), ranks.ErrRank, "post to a repeated rank")
		wantClass(r, w.Start([]int{r.Size}), ranks.ErrRank, "start towards a rank out of range")
		type odd [3]byte
		_, err := win.CompareAndSwap(w, odd{}, odd{1}, next, 0)
		wantClass(r, err, ranks.ErrType, "compare-and-swap of 3-byte elements")
		// Accumulates of other sizes work, under the target's lock
		// (defects_test.go tests them).
		// Nested epochs: a second Start before Complete, a second Post
		// before Wait.
		r.Check(w.Post([]int{(r.Rank + r.Size - 1) % r.Size}), "post")
		wantClass(r, w.Post([]int{next}), ranks.ErrRMASync, "post inside an exposure epoch")
		r.Check(w.Start([]int{next}), "start")
		wantClass(r, w.Start([]int{next}), ranks.ErrRMASync, "start inside an access epoch")
		r.Check(win.Put(w, []int64{int64(r.Rank)}, next, 1), "put in the epoch")
		r.Check(w.Complete(), "complete")
		r.Check(w.Wait(), "wait")
		// Everyone is unharmed.
		r.Check(w.Fence(0), "fence")
		r.Check(win.Put(w, []int64{int64(10 + r.Rank)}, next, 2), "put")
		r.Check(w.Fence(0), "fence")
		own, err := win.View[int64](w, r.Rank)
		r.Check(err, "view")
		prev := (r.Rank + r.Size - 1) % r.Size
		if own[1] != int64(prev) || own[2] != int64(10+prev) {
			r.Errorf("own memory %v after the bad calls", own)
		}
		r.Check(w.Free(), "free")
		wantClass(r, w.Fence(0), ranks.ErrWin, "fence on a freed window")
		wantClass(r, w.Lock(win.LockShared, 0), ranks.ErrWin, "lock on a freed window")
		wantClass(r, win.Get(w, []int64{0}, 0, 0), ranks.ErrWin, "get on a freed window")
		if err := w.Free(); !errors.Is(err, ranks.ErrWin) {
			r.Errorf("second free: %v, want ErrWin", err)
		}
	})
}
