package main

import (
	"slices"
	"testing"

	"github.com/shmpi/shmpi/examples/internal/fttest"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// TestFTSplit runs the example on 8 ranks without a failure, and with
// rank 3 SIGKILLed at its 40th, 160th and 280th entry into the runtime
// (of about 380–400 under shmrun, fewer here): early, midway and late in the
// 30 rounds, in whatever call of the round it falls (Split, the
// agreements, the allreduces). Every survivor must end with the right
// total and without rank 3, and exit 0.
func TestFTSplit(t *testing.T) {
	fttest.KillRuns(t, []int{40, 160, 280}, func(r *ranktest.R, killed bool) {
		res, err := run(r.World)
		if err != nil {
			r.Fatalf("%v", err)
		}
		if res.Total != expected() {
			r.Errorf("total %d, want %d", res.Total, expected())
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

// TestFTSplitRank0 kills rank 0, which hands out Split's table, early in
// the run: at its 10th and 14th entry it died while handing it out, and
// the new communicators' leaders waited for the acknowledgements of
// members that never got it (fixed: the creation's waits end at rank 0's
// failure). Every survivor must end with the right total without rank 0.
func TestFTSplitRank0(t *testing.T) {
	fttest.KillRunsOf(t, 0, []int{6, 10, 14, 18, 22}, func(r *ranktest.R, killed bool) {
		res, err := run(r.World)
		if err != nil {
			r.Fatalf("%v", err)
		}
		if res.Total != expected() {
			r.Errorf("total %d, want %d", res.Total, expected())
		}
		if !slices.Equal(res.Lost, []int{0}) || res.Size != 7 {
			r.Errorf("ended on %d ranks without %v, want 7 without [0]", res.Size, res.Lost)
		}
	})
}
