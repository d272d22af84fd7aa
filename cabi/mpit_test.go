package main

import "testing"

// TestMPIT: the tool information interface (testdata/mpit.c) before
// MPI_Init, while MPI runs and after MPI_Finalize; the message counters
// must grow by exactly what each rank sends and receives.
func TestMPIT(t *testing.T) {
	for _, n := range []int{2, 4} {
		expectOK(t, n, "mpit")
	}
}
