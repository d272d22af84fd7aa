package ranktest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

const envVictim = "SHMPI_RANKTEST_VICTIM"

// TestDeadlineVictim only runs inside TestDeadlineReport's child: two
// ranks wait for each other forever, and rank 2 is done.
func TestDeadlineVictim(t *testing.T) {
	if os.Getenv(envVictim) == "" {
		t.Skip("run by TestDeadlineReport")
	}
	ranktest.RunOpts(t, ranktest.Options{N: 3, Timeout: 2 * time.Second}, func(r *ranktest.R) {
		if r.Rank == 2 {
			return
		}
		r.Logf("about to block")
		ranks.Recv(r.Comm, make([]byte, 1), 1-r.Rank, 5)
	})
}

// Past its deadline a job fails the test, says which rank is blocked in
// which operation, shows the ranks' output, and leaves nothing running.
func TestDeadlineReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDeadlineVictim$", "-test.count=1")
	cmd.Env = append(os.Environ(), envVictim+"=1")
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the victim test itself hung:\n%s", out)
	}
	if err == nil {
		t.Fatalf("the victim test passed:\n%s", out)
	}
	s := string(out)
	for _, want := range []string{
		"deadline of 2s passed",
		"rank 0: alive; blocked in Recv(peer=1, tag=5)",
		"rank 1: alive; blocked in Recv(peer=0, tag=5)",
		"--- output of rank 0:",
		"rank 0: about to block",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "rank 2: alive") {
		t.Errorf("rank 2 finished but is reported:\n%s", s)
	}
}

// Output of a rank that fails is shown; a rank that is expected to die
// and does not fails the test (checked through a victim as above).
func TestKillAtPoint(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 2, Kill: &ranktest.KillAt{Rank: 1, Point: "mid", How: ranktest.SIGKILL}},
		func(r *ranktest.R) {
			if r.Rank == 1 {
				r.Point("before") // not the kill point
				r.Point("mid")
				r.Fatalf("survived its kill point")
			}
			_, err := ranks.Recv(r.Comm, make([]byte, 1), 1, 0)
			if err == nil {
				r.Errorf("Recv from a killed rank succeeded")
			}
		})
}
