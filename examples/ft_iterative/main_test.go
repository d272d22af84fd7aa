package main

import (
	"slices"
	"testing"

	"github.com/shmpi/shmpi/examples/internal/fttest"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// TestFTIterative runs the example on 8 ranks without a failure, and
// with rank 3 SIGKILLed at its 10th, 40th and 70th entry into the
// runtime (of about 100–110, for 117 iterations): early, midway and near
// convergence. Every survivor must end with the right sum on the 7
// survivors and exit 0.
func TestFTIterative(t *testing.T) {
	fttest.KillRuns(t, []int{10, 40, 70}, func(r *ranktest.R, killed bool) {
		res, err := run(r.World)
		if err != nil {
			r.Fatalf("%v", err)
		}
		if !accurate(res.Sum) {
			r.Errorf("sum %.12f, want %.12f", res.Sum, expected())
		}
		var lost []int
		if killed {
			lost = []int{3}
		}
		if !slices.Equal(res.Lost, lost) || res.Size != 8-len(lost) {
			r.Errorf("ended on %d ranks without %v, want %d without %v", res.Size, res.Lost, 8-len(lost), lost)
		}
		if res.Reporter != (r.Rank == 0) {
			r.Errorf("reporter %v at rank %d", res.Reporter, r.Rank)
		}
	})
}
