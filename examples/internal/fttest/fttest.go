// Package fttest runs an example of the spec's section 15.5 as a test: on
// 8 ranks without a failure, then once for each kill point with rank 3
// SIGKILLed at that entry into the runtime (SHMPI_KILL=3@op=N).
package fttest

import (
	"fmt"
	"testing"
	"time"

	"github.com/shmpi/shmpi/ranks/ranktest"
)

// Victim is the rank the kill points kill.
const Victim = 3

// KillRuns runs body on 8 ranks once without a failure and once per
// point in points; killed says whether Victim is killed in this run.
// Each run has a 30 s deadline.
func KillRuns(t *testing.T, points []int, body func(r *ranktest.R, killed bool)) {
	KillRunsOf(t, Victim, append([]int{0}, points...), body)
}

// KillRunsOf runs body on 8 ranks once per point in points, with rank
// victim SIGKILLed at that entry into the runtime (0: no kill).
func KillRunsOf(t *testing.T, victim int, points []int, body func(r *ranktest.R, killed bool)) {
	for _, op := range points {
		name := "no-kill"
		o := ranktest.Options{N: 8, Timeout: 30 * time.Second, Quiet: true}
		if op > 0 {
			name = fmt.Sprintf("kill-%d-at-op-%d", victim, op)
			o.Dies = []int{victim}
			o.Env = []string{fmt.Sprintf("SHMPI_KILL=%d@op=%d", victim, op)}
		}
		t.Run(name, func(t *testing.T) {
			ranktest.RunOpts(t, o, func(r *ranktest.R) { body(r, op > 0) })
		})
	}
}
