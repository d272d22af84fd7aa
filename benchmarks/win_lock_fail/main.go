// Command win_lock_fail measures how long the waiters of a window lock
// take to learn that its holder died: rank 1 takes target 0's lock
// exclusively, every other rank then waits in Lock on it, and rank 1
// dies by SIGKILL while they sleep. Each waiter times from the kill to
// its ErrProcFailed (the lock is poisoned). Run it under shmrun with
// failures tolerated, several times for a median:
//
//	for i in $(seq 20); do shmrun --ft -n 4 ./win_lock_fail; done
//
// Each run prints one row: the ranks, then the fastest and the slowest
// waiter's time in microseconds. Rank 1 reads CLOCK_MONOTONIC (t0) just
// before it kills itself and stores it in the window's shared memory;
// each waiter reads the clock (t1) as soon as Lock returns. Rank 1 waits
// 3 ms after the waiters set out, so that they have stopped spinning and
// sleep, as a blocked rank usually does.
package main

import (
	"errors"
	"fmt"
	"log"
	"slices"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
	"github.com/shmpi/shmpi/win"
)

func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		log.Fatal(err)
	}
	return ts.Nano()
}

func main() {
	world, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer world.Finalize()
	c := world.Comm()
	if c.Size() < 3 {
		log.Fatal("win_lock_fail needs at least 3 ranks (a holder and two waiters)")
	}
	// Word 0 of rank 0's part: t0. Word 1+r: waiter r's t1.
	w, err := win.AllocateShared(c, 8*(c.Size()+1), 8)
	must(err)
	words, err := win.View[int64](w, 0)
	must(err)
	slot := func(i int) *atomic.Int64 { return (*atomic.Int64)(unsafe.Pointer(&words[i])) }
	if c.Rank() == 1 {
		must(w.Lock(win.LockExclusive, 0))
	}
	must(coll.Barrier(c))
	if c.Rank() == 1 {
		time.Sleep(3 * time.Millisecond) // let the waiters fall asleep
		slot(0).Store(monotonic())
		syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
		select {}
	}
	err = w.Lock(win.LockExclusive, 0)
	t1 := monotonic()
	if !errors.Is(err, ranks.ErrProcFailed) {
		log.Fatalf("rank %d: Lock of a dead holder's lock: %v, want ErrProcFailed", c.Rank(), err)
	}
	slot(1 + c.Rank()).Store(t1)
	// The survivors meet on a shrunk communicator to report.
	s, err := ulfm.Shrink(c)
	must(err)
	must(coll.Barrier(s))
	if c.Rank() == 0 {
		t0 := slot(0).Load()
		var lat []float64
		for r := range c.Size() {
			if r != 1 {
				lat = append(lat, float64(slot(1+r).Load()-t0)/1e3)
			}
		}
		slices.Sort(lat)
		fmt.Printf("ranks %d  waiters %d  first_us %.1f  last_us %.1f\n", c.Size(), len(lat), lat[0], lat[len(lat)-1])
	}
	must(coll.Barrier(s))
	w.Free() // returns ErrProcFailed (a member died) and still frees
	s.Free()
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
