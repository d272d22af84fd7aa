package spin

import (
	"sync"
	"testing"
)

// Goroutines alive at the same time have distinct ids, each stable.
func TestGoroutineID(t *testing.T) {
	if !HaveGoroutineID {
		t.Skip("no goroutine id in this build")
	}
	me := GoroutineID()
	if me == 0 || me != GoroutineID() {
		t.Fatalf("our id %x, then %x", me, GoroutineID())
	}
	const n = 8
	ids := make([]uintptr, n)
	var recorded, checked sync.WaitGroup
	release := make(chan struct{})
	recorded.Add(n)
	checked.Add(n)
	for i := range n {
		go func() {
			defer checked.Done()
			ids[i] = GoroutineID()
			recorded.Done()
			<-release // stay alive until every id is taken
			if GoroutineID() != ids[i] {
				t.Errorf("goroutine %d: id changed", i)
			}
		}()
	}
	recorded.Wait()
	seen := map[uintptr]bool{me: true}
	for i, id := range ids {
		if id == 0 || seen[id] {
			t.Errorf("goroutine %d: id %x is zero or taken", i, id)
		}
		seen[id] = true
	}
	close(release)
	checked.Wait()
}
