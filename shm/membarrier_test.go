package shm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shmpi/shmpi/internal/spin"
)

// The store-buffering litmus test that the ranks' sleep protocol rests
// on. Thread A stores x then loads y with no fence (a sender: publish,
// then read the doorbell); thread B stores y, runs GlobalBarrier, then
// loads x (a sleeper: arm, barrier, re-check). Both loads seeing 0 is
// the lost wake-up, and must never happen. Without the barrier, x86
// allows it (each store waits in its CPU's store buffer), and the
// control run shows the harness can catch it.
func TestGlobalBarrierOrdersUnfencedThread(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 || runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	if !HaveGlobalBarrier() {
		t.Skip("the kernel has no global expedited membarrier")
	}
	if !RegisterGlobalBarrier() {
		t.Fatal("HaveGlobalBarrier, but registration failed")
	}
	const trials = 50000
	control := litmus(trials, func() {})
	if control == 0 {
		t.Logf("control: no reordering seen in %d trials without the barrier (the harness may not catch it here)", trials)
	}
	if lost := litmus(trials, func() {
		if err := GlobalBarrier(); err != nil {
			t.Errorf("GlobalBarrier: %v", err)
		}
	}); lost != 0 {
		t.Fatalf("%d of %d trials saw both loads return 0 with the barrier (%d without it)", lost, trials, control)
	}
	t.Logf("without the barrier %d of %d trials reordered; with it none", control, trials)
}

// litmus runs the store-buffering pattern trials times, with between
// run between B's store and load, and counts the trials where both
// loads returned 0.
func litmus(trials int, between func()) int {
	var x, y uint64
	var go1 atomic.Uint32 // the trial thread A may start
	var r1 [2]uint64
	var done1 atomic.Uint32
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // thread A
		defer wg.Done()
		runtime.LockOSThread()
		for i := 1; i <= trials; i++ {
			for go1.Load() != uint32(i) {
				spin.Pause()
			}
			spin.StoreRelease64(&x, 1)
			r1[i&1] = atomic.LoadUint64(&y)
			done1.Store(uint32(i))
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lost := 0
	for i := 1; i <= trials; i++ {
		atomic.StoreUint64(&x, 0)
		atomic.StoreUint64(&y, 0)
		go1.Store(uint32(i))
		for range i % 8 { // vary the start against A's
			spin.Pause()
		}
		spin.StoreRelease64(&y, 1) // thread B
		between()
		r2 := atomic.LoadUint64(&x)
		for done1.Load() != uint32(i) {
			spin.Pause()
		}
		if r1[i&1] == 0 && r2 == 0 {
			lost++
		}
	}
	wg.Wait()
	return lost
}
