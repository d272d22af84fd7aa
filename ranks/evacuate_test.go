package ranks_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// When ranks outnumber cores and are bound (as shmrun binds them), the
// survivors bound to a dead rank's CPU are moved to the other CPUs while
// the kernel tears the dead process down, and back when the launcher
// has reaped it (internal/job's evacuate.go; TestEvacuate there checks
// the moves). Here, in a real job of 4 ranks on 2 CPUs (ranks 0 and 1 on
// one, 2 and 3 on the other), rank 3 is SIGKILLed while the others
// wait for it in Recv; each survivor gets ErrProcFailed, and once rank 3
// is reaped every thread of every survivor is bound to its own CPU
// again, and the survivors still talk.
func TestFailEvacuation(t *testing.T) {
	var mine unix.CPUSet
	// Checked by the test only: its ranks are bound to one CPU each.
	if os.Getenv(job.EnvFD) == "" && (unix.SchedGetaffinity(0, &mine) != nil || mine.Count() != 2) {
		t.Skip("needs exactly two CPUs, so that 4 ranks are bound two to a CPU")
	}
	opts := ranktest.Options{N: 4, Bind: true, Dies: []int{3}}
	ranktest.RunOpts(t, opts, func(r *ranktest.R) {
		c := r.Comm
		var home unix.CPUSet
		r.Check(unix.SchedGetaffinity(0, &home), "affinity")
		if home.Count() != 1 {
			r.Errorf("bound to %d CPUs, want 1", home.Count())
		}
		if r.Rank == 3 {
			for range 3 {
				_, err := ranks.Recv(c, make([]byte, 1), ranks.AnySource, 1)
				r.Check(err, "ready")
			}
			r.Die(ranktest.SIGKILL)
		}
		r.Check(ranks.Send(c, []byte{1}, 3, 1), "ready")
		_, err := ranks.Recv(c, make([]byte, 1), 3, 2)
		procFailed(r, err, 3, "recv from the rank that died")
		// The launcher records the reap, then sends the moved threads
		// home: poll until every thread is home, up to a deadline.
		deadline := time.Now().Add(20 * time.Second)
		for {
			away := awayThreads(r, home)
			if away == "" && r.World.Fates()[3].Reaped {
				break
			}
			if time.Now().After(deadline) {
				r.Errorf("20 s after the failure: rank 3 reaped %v, threads away from home: %s", r.World.Fates()[3].Reaped, away)
				return
			}
			time.Sleep(time.Millisecond)
		}
		switch r.Rank {
		case 0:
			pingPong(r, 2, 20)
		case 2:
			pingPong(r, 0, 20)
		}
	})
}

// awayThreads lists this process's threads bound elsewhere than home.
func awayThreads(r *ranktest.R, home unix.CPUSet) string {
	ents, err := os.ReadDir("/proc/self/task")
	r.Check(err, "threads")
	away := ""
	for _, ent := range ents {
		tid, _ := strconv.Atoi(ent.Name())
		var s unix.CPUSet
		if unix.SchedGetaffinity(tid, &s) == nil && s != home {
			away += fmt.Sprintf(" %d (on %d CPUs)", tid, s.Count())
		}
	}
	return away
}
