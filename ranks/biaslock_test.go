package ranks

import (
	"runtime"
	"sync"
	"testing"

	"github.com/shmpi/shmpi/internal/spin"
)

// The biased engine lock excludes like a mutex: the owner takes it by
// bias while other goroutines join at any moment (the first of them
// withdraws the bias while the owner may be inside), and no increment
// made under the lock is lost. A plain counter is the shared state, as
// the engine's fields are.
func TestBiasedLockExcludes(t *testing.T) {
	if !spin.HaveGoroutineID {
		t.Skip("no goroutine id in this build: the lock is the mutex")
	}
	for trial := range 20 {
		c0, _ := twoEnginesAt(t, ThreadMultiple)
		e := c0.e
		if !e.bias.on.Load() {
			t.Skip("membarrier unavailable: the lock is the mutex")
		}
		counter := 0
		const perGoroutine = 20000
		e.lock() // this goroutine becomes the owner
		e.unlock()
		var wg sync.WaitGroup
		started := make(chan struct{})
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-started
				for range perGoroutine {
					e.lock()
					counter++
					e.unlock()
				}
			}()
		}
		for i := range perGoroutine {
			if i == trial*perGoroutine/20 {
				close(started) // the others join while the owner is busy
			}
			e.lock()
			counter++
			if i%64 == 0 {
				runtime.Gosched() // sometimes inside when they come
			}
			e.unlock()
		}
		wg.Wait()
		if want := 4 * perGoroutine; counter != want {
			t.Fatalf("trial %d: counter %d, want %d: the lock let two holders in", trial, counter, want)
		}
		if !e.bias.off.Load() {
			t.Fatalf("trial %d: other goroutines took the lock but the bias is still on", trial)
		}
	}
}

// Until a second goroutine takes it, the owner takes the lock by bias
// and leaves the mutex alone.
func TestBiasedLockSingleGoroutine(t *testing.T) {
	if !spin.HaveGoroutineID {
		t.Skip("no goroutine id in this build")
	}
	c0, _ := twoEnginesAt(t, ThreadMultiple)
	e := c0.e
	if !e.bias.on.Load() {
		t.Skip("membarrier unavailable")
	}
	e.lock() // the first lock, under the mutex, makes us the owner
	e.unlock()
	for range 1000 {
		e.lock()
		if !e.bias.byBias {
			t.Fatal("the owner's lock is not taken by bias")
		}
		if !e.mu.TryLock() {
			t.Fatal("the owner holds the mutex")
		}
		e.mu.Unlock()
		e.unlock()
	}
}
