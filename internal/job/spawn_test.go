package job

import (
	"errors"
	"sync"
	"testing"

	"github.com/shmpi/shmpi/shm"
)

// The spawn mailbox: concurrent requests are served one at a time, each
// gets its own answer; a lock left by a dead holder, with its request
// still being served, is taken over only once that request is answered;
// a closed mailbox refuses. (No processes: a goroutine plays the
// launcher.)
func TestSpawnMailbox(t *testing.T) {
	seg, err := NewSegment(DefaultLayout(8), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	m := NewMap(seg)
	if _, err := m.SpawnRequest(0, 8, []SpawnProc{{Path: "x", N: 1}}, func(int) bool { return false }); !errors.Is(err, ErrNoLauncher) {
		t.Fatalf("request without a launcher: %v", err)
	}
	m.ServeSpawns()
	served := make(chan int, 1)
	go func() {
		n := 0
		for {
			base, procs, ok, err := m.WaitSpawn()
			if !ok {
				served <- n
				return
			}
			if err != nil || len(procs) != 1 {
				t.Errorf("request %d: %v, %v", n, procs, err)
			}
			n++
			// The answer carries the base, so each requester can check
			// it got its own.
			m.AnswerSpawn(base)
		}
	}()
	const workers, each = 4, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				base := 100*w + i
				got, err := m.SpawnRequest(w, base, []SpawnProc{{Path: "x", N: 1}}, func(int) bool { return false })
				if err != nil || got != base {
					t.Errorf("worker %d request %d: answer %d, %v", w, i, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// A holder (rank 7) that died with its request posted: the next
	// requester waits for the launcher's answer to it, then goes.
	s := m.spawn
	s.lock.Store(7 + 1)
	payload := []byte(`[{"p":"x","n":1}]`)
	copy(m.spawnPayload(), payload)
	s.plen.Store(uint32(len(payload)))
	s.base.Store(999)
	s.count.Store(1)
	s.state.Store(SpawnPosted)
	shm.FutexWake(&s.state, 1<<30)
	got, err := m.SpawnRequest(1, 555, []SpawnProc{{Path: "x", N: 1}}, func(r int) bool { return r == 7 })
	if err != nil || got != 555 {
		t.Errorf("takeover of a dead holder's lock: answer %d, %v", got, err)
	}
	m.CloseSpawn()
	if n := <-served; n != workers*each+2 {
		t.Errorf("launcher served %d requests, want %d", n, workers*each+2)
	}
	if _, err := m.SpawnRequest(0, 8, []SpawnProc{{Path: "x", N: 1}}, func(int) bool { return false }); !errors.Is(err, ErrNoLauncher) {
		t.Errorf("request after close: %v", err)
	}
}
