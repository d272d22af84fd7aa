package main

import (
	"slices"
	"testing"

	"github.com/shmpi/shmpi/examples/internal/fttest"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// TestFTMasterWorker runs the example on 8 ranks without a failure, and
// with worker 3 SIGKILLed at its 5th, 40th and 75th entry into the
// runtime (two a work item; a worker got 85 to 219 of the 1000 items,
// in runs under load, as the scheduler treated it): in its first items and
// further on, while receiving work or sending an answer. The master must
// count every prime once, find worker 3 lost, and every survivor must
// exit 0.
func TestFTMasterWorker(t *testing.T) {
	fttest.KillRuns(t, []int{5, 40, 75}, func(r *ranktest.R, killed bool) {
		res, err := run(r.World)
		if err != nil {
			r.Fatalf("%v", err)
		}
		if r.Rank != 0 {
			return
		}
		if want := expected(); res.Primes != want {
			r.Errorf("%d primes, want %d", res.Primes, want)
		}
		var lost []int
		if killed {
			lost = []int{3}
		}
		if !slices.Equal(res.Lost, lost) {
			r.Errorf("lost workers %v, want %v", res.Lost, lost)
		}
		if res.ByMaster != 0 {
			r.Errorf("the master did %d items itself", res.ByMaster)
		}
	})
}
