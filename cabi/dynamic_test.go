package main

import (
	"strings"
	"testing"
)

// TestSpawn: MPI_Comm_spawn, the parent, merge, ports and names,
// disconnect and a spawn past the universe, in C (testdata/spawn.c).
func TestSpawn(t *testing.T) {
	r := expectOK(t, 2, "spawn", "--universe", "8")
	if got := strings.Count(r.out, "OK\n"); got != 5 {
		t.Fatalf("%d processes said OK, want 2 parents and 3 children\nstdout:\n%s\nstderr:\n%s", got, r.out, r.errOut)
	}
}
