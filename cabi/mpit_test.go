package main

import (
	"strings"
	"testing"
)

// TestMPIT: the tool information interface (testdata/mpit.c) before
// MPI_Init, while MPI runs and after MPI_Finalize; the message counters
// must grow by exactly what each rank sends and receives.
func TestMPIT(t *testing.T) {
	for _, n := range []int{2, 4} {
		expectOK(t, n, "mpit")
	}
}

// TestMPITFailures: shmpi_failures_known counts the failure of a rank
// that killed itself, at every survivor.
func TestMPITFailures(t *testing.T) {
	exe := compile(t, "mpit")
	for _, n := range []int{2, 4} {
		r := runJob(t, n, []string{"--ft"}, exe, "ulfm")
		if strings.Contains(r.out, "FAIL") || strings.Count(r.out, "OK\n") != n-1 {
			t.Fatalf("%d ranks: exit %d\nstdout:\n%s\nstderr:\n%s", n, r.code, r.out, r.errOut)
		}
	}
}
