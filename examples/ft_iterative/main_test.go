package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"shmpi/ranks/ranktest"
)

// TestFTIterative runs the example on 8 ranks without a failure, and
// with rank 3 SIGKILLed at its 10th, 50th and 90th entry into the
// runtime (of about 110, for 117 iterations): early, midway and near
// convergence. Every survivor must end with the right sum on the 7
// survivors and exit 0.
func TestFTIterative(t *testing.T) {
	for _, op := range []int{0, 10, 50, 90} {
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
				if !accurate(res.Sum) {
					r.Errorf("sum %.12f, want %.12f", res.Sum, expected())
				}
				var lost []int
				if op > 0 {
					lost = []int{3}
				}
				if !slices.Equal(res.Lost, lost) || res.Size != 8-len(lost) {
					r.Errorf("ended on %d ranks without %v, want %d without %v", res.Size, res.Lost, 8-len(lost), lost)
				}
				if res.Reporter != (r.Rank == 0) {
					r.Errorf("reporter %v at rank %d", res.Reporter, r.Rank)
				}
			})
		})
	}
}
