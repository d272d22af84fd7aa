package launch_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// ranktest starts its jobs through launch without AbortOnFailure: its
// tests kill ranks and check what the survivors see, so the world
// tolerates failures.
func TestRanktestWorldIsFT(t *testing.T) {
	ranktest.Run(t, 2, func(r *ranktest.R) {
		if !r.World.FT() {
			r.Errorf("World.FT() is false in a ranktest job")
		}
	})
}

const envAbortRank = "SHMPI_LAUNCH_TEST_ABORT_RANK"

// TestAbortRank is a rank of TestAbortEndsJob's job (started directly
// through launch, as a node agent starts its ranks): rank 1 aborts with
// code 9 once rank 0 sleeps in a Recv from it; rank 2 sleeps.
func TestAbortRank(t *testing.T) {
	if os.Getenv(envAbortRank) == "" {
		t.Skip("a rank of TestAbortEndsJob")
	}
	w, err := ranks.Init()
	if err != nil {
		t.Fatal(err)
	}
	c := w.Comm()
	switch c.Rank() {
	case 0:
		_, err := ranks.Recv(c, make([]byte, 1), 1, 0)
		fmt.Fprintf(os.Stderr, "Recv returned: %v\n", err)
	case 1:
		for f := w.Fates()[0]; !f.Blocked || f.Op != "Recv"; f = w.Fates()[0] {
			runtime.Gosched()
		}
		err := c.Abort(9)
		fmt.Fprintf(os.Stderr, "Abort returned: %v\n", err)
	default:
		time.Sleep(time.Hour)
	}
	syscall.Exit(1)
}

// A rank's Abort ends a job started through launch: the launcher kills
// every rank at once, Job.Aborted says who called it with which code, the
// caller's Exit says it called Abort, and no file is left in /dev/shm.
func TestAbortEndsJob(t *testing.T) {
	began := time.Now()
	j, err := launch.Start(launch.Config{N: 3, Path: os.Args[0], Args: []string{"-test.run=^TestAbortRank$", "-test.count=1"},
		Env: append(os.Environ(), envAbortRank+"=1"), Output: func(int) (io.Writer, io.Writer) { return nil, os.Stderr }})
	if err != nil {
		t.Fatal(err)
	}
	exits, ok := j.WaitTimeout(30 * time.Second)
	if !ok {
		j.Kill()
		j.Wait()
		t.Fatal("the job did not end within 30s of its start")
	}
	if took := time.Since(began); took > 5*time.Second {
		// Abort gives the launcher 10 s before it exits by itself.
		t.Errorf("the job took %v to end", took)
	}
	a, aborted := j.Aborted()
	if want := (launch.Abort{Rank: 1, Code: 9}); !aborted || a != want || a.Status() != 9 || a.String() != "rank 1 called Abort(9)" {
		t.Errorf("Aborted() = %+v, %v (status %d, %q); want %+v", a, aborted, a.Status(), a, want)
	}
	for _, x := range exits {
		if x.Sig != syscall.SIGKILL {
			t.Errorf("rank %d %s; want killed by the launcher", x.Rank, x.How())
		}
		if (x.Abort != nil) != (x.Rank == 1) {
			t.Errorf("rank %d: Exit.Abort = %v", x.Rank, x.Abort)
		}
		// The table froze at the abort: nobody saw anyone fail.
		if x.Fate.State != ranks.StateAlive {
			t.Errorf("rank %d is %v in the failure table, want alive", x.Rank, x.Fate.State)
		}
	}
	if got := exits[1].How(); got != "called Abort(9)" {
		t.Errorf("rank 1's How() = %q", got)
	}
	if left, _ := filepath.Glob(fmt.Sprintf("/dev/shm/shmpi-%d-*", os.Getpid())); len(left) > 0 {
		t.Errorf("segment files left in /dev/shm: %v", left)
	}
	for _, x := range exits {
		if syscall.Kill(x.Pid, 0) != syscall.ESRCH {
			t.Errorf("rank %d (pid %d) is still there after the job", x.Rank, x.Pid)
		}
	}
}
