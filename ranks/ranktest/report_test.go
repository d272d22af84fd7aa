package ranktest_test

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/win"
)

const envReportVictim = "SHMPI_RANKTEST_REPORT_VICTIM"

// runVictim runs test name of this binary with env set and returns its
// output; the victim must fail.
func runVictim(t *testing.T, name, env string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the victim test itself hung:\n%s", out)
	}
	if err == nil {
		t.Fatalf("the victim test passed:\n%s", out)
	}
	return string(out)
}

// TestOpsVictim only runs inside TestDeadlineNamesOperations's child:
// rank 0 holds a window's lock and waits for a message from rank 1, which
// waits for the lock; rank 2 waits in a barrier the others never join.
func TestOpsVictim(t *testing.T) {
	if os.Getenv(envReportVictim) == "" {
		t.Skip("run by TestDeadlineNamesOperations")
	}
	ranktest.RunOpts(t, ranktest.Options{N: 3, Timeout: 3 * time.Second}, func(r *ranktest.R) {
		w, err := win.AllocateShared(r.Comm, 8, 1)
		r.Check(err, "AllocateShared")
		switch r.Rank {
		case 0:
			r.Check(w.Lock(win.LockExclusive, 0), "Lock")
			r.Check(ranks.Send(r.Comm, []byte{1}, 1, 4), "Send")
			_, err := ranks.Recv(r.Comm, make([]byte, 1), 1, 5)
			r.Errorf("Recv returned: %v", err)
		case 1:
			_, err := ranks.Recv(r.Comm, make([]byte, 1), 0, 4)
			r.Check(err, "Recv")
			err = w.Lock(win.LockExclusive, 0)
			r.Errorf("Lock returned: %v", err)
		case 2:
			err := coll.Barrier(r.Comm)
			r.Errorf("Barrier returned: %v", err)
		}
	})
}

// A deadline report names the operation each rank is blocked in, window
// locks and collectives included, rather than "Collective".
func TestDeadlineNamesOperations(t *testing.T) {
	s := runVictim(t, "TestOpsVictim", envReportVictim)
	for _, want := range []string{
		"deadline of 3s passed",
		"rank 0: alive; blocked in Recv(peer=1, tag=5) for ",
		"rank 1: alive; blocked in Win.Lock for ",
		"rank 2: alive; blocked in Barrier for ",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "Collective") {
		t.Errorf("report names an operation \"Collective\":\n%s", s)
	}
}

// waitBlocked waits until rank r of the world sleeps in op with tag (a
// wait is recorded only once it sleeps).
func waitBlocked(r *ranktest.R, rank int, op string, tag int) {
	for f := r.World.Fates()[rank]; !f.Blocked || f.Op != op || f.OpTag != tag; f = r.World.Fates()[rank] {
		runtime.Gosched()
	}
}

// abortBody: the last rank aborts with code once rank 0 sleeps in a Recv
// and rank 1 in a barrier; the others sleep.
func abortBody(code int) func(r *ranktest.R) {
	return func(r *ranktest.R) {
		switch last := r.Size - 1; r.Rank {
		case last:
			waitBlocked(r, 0, "Recv", 1)
			waitBlocked(r, 1, "Barrier", ranks.AnyTag)
			err := r.Comm.Abort(code)
			r.Fatalf("Abort returned: %v", err)
		case 0:
			_, err := ranks.Recv(r.Comm, make([]byte, 1), last, 1)
			r.Fatalf("Recv returned: %v", err)
		case 1:
			err := coll.Barrier(r.Comm)
			r.Fatalf("Barrier returned: %v", err)
		default:
			time.Sleep(time.Hour)
		}
	}
}

// A rank's Abort ends a ranktest job: every rank is killed at once, and
// the test passes when it expected that abort.
func TestExpectAbort(t *testing.T) {
	began := time.Now()
	ranktest.RunOpts(t, ranktest.Options{N: 4, ExpectAbort: true, AbortCode: 3}, abortBody(3))
	if took := time.Since(began); took > 5*time.Second {
		// Abort gives the launcher 10 s before it exits by itself.
		t.Errorf("the job took %v to end", took)
	}
}

const envAbortVictim = "SHMPI_RANKTEST_ABORT_VICTIM"

// TestAbortVictim only runs inside TestUnexpectedAbort's child.
func TestAbortVictim(t *testing.T) {
	if os.Getenv(envAbortVictim) == "" {
		t.Skip("run by TestUnexpectedAbort")
	}
	ranktest.RunOpts(t, ranktest.Options{N: 3}, abortBody(5))
	ranktest.RunOpts(t, ranktest.Options{N: 3, ExpectAbort: true, AbortCode: 6}, abortBody(5))
	ranktest.RunOpts(t, ranktest.Options{N: 2, ExpectAbort: true, AbortCode: 6}, func(r *ranktest.R) {})
}

// An abort the test did not expect fails it and says who called it; so
// does one with another code, and a missing one.
func TestUnexpectedAbort(t *testing.T) {
	s := runVictim(t, "TestAbortVictim", envAbortVictim)
	for _, want := range []string{
		"ranktest: rank 2 called Abort(5), which killed every rank",
		"ranktest: rank 2 called Abort(5); want Abort(6)",
		"ranktest: no rank called Abort; want Abort(6)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}
