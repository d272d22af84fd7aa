package launch_test

import (
	"testing"

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
