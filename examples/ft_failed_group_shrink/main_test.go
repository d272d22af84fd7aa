package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"shmpi/ranks/ranktest"
)

// TestFTFailedGroupShrink runs the example on 8 ranks without a failure,
// and with rank 3 SIGKILLed at its 10th, 80th and 130th entry into the
// runtime (of about 155): early, midway and late in the 40 steps, in
// whatever call it falls (the allreduce or the agreement). Every survivor
// must find the failed group {3}, end with the right sums, and exit 0.
func TestFTFailedGroupShrink(t *testing.T) {
	for _, op := range []int{0, 10, 80, 130} {
		name := "no-kill"
		o := ranktest.Options{N: 8, Timeout: 30 * time.Second, Quiet: true}
		if op > 0 {
			name = fmt.Sprintf("kill-3-at-op-%d", op)
			o.Dies = []int{3}
			o.Env = []string{fmt.Sprintf("SHMPI_KILL=3@op=%d", op)}
		}
		t.Run(name, func(t *testing.T) {
			ranktest.RunOpts(t, o, func(r *ranktest.R) {
				res, err := run(r.World)
				if err != nil {
					r.Fatalf("%v", err)
				}
				if want := expected(); res.StepSum != want || res.Running != want {
					r.Errorf("steps' sum %d, running sums %d, want %d", res.StepSum, res.Running, want)
				}
				var failed []int
				if op > 0 {
					failed = []int{3}
				}
				if !slices.Equal(res.Failed, failed) || res.Size != 8-len(failed) {
					r.Errorf("failed group %v, %d ranks left; want %v, %d", res.Failed, res.Size, failed, 8-len(failed))
				}
				if res.Reporter != (r.Rank == 0) {
					r.Errorf("reporter %v at rank %d", res.Reporter, r.Rank)
				}
			})
		})
	}
}
