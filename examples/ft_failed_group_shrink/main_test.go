package main

import (
	"slices"
	"testing"

	"github.com/shmpi/shmpi/examples/internal/fttest"
	"github.com/shmpi/shmpi/examples/internal/shares"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// TestFTFailedGroupShrink runs the example on 8 ranks without a failure,
// and with rank 3 SIGKILLed at its 10th, 35th and 60th entry into the
// runtime (of about 84): early, midway and late in the 40 steps, in
// whatever call it falls (the allreduce or the agreement). Every survivor
// must find the failed group {3}, end with the right sums, and exit 0.
func TestFTFailedGroupShrink(t *testing.T) {
	fttest.KillRuns(t, []int{10, 35, 60}, func(r *ranktest.R, killed bool) {
		res, err := run(r.World)
		if err != nil {
			r.Fatalf("%v", err)
		}
		if want := shares.Expected(); res.StepSum != want || res.Running != want {
			r.Errorf("steps' sum %d, running sums %d, want %d", res.StepSum, res.Running, want)
		}
		var failed []int
		if killed {
			failed = []int{3}
		}
		if !slices.Equal(res.Failed, failed) || res.Size != 8-len(failed) {
			r.Errorf("failed group %v, %d ranks left; want %v, %d", res.Failed, res.Size, failed, 8-len(failed))
		}
		if res.Reporter != (r.Rank == 0) {
			r.Errorf("reporter %v at rank %d", res.Reporter, r.Rank)
		}
	})
}
