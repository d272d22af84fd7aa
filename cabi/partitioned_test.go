package main

import (
	"strings"
	"testing"
)

// TestPartitioned: MPI 4.0 partitioned communication in C at 2 and 4
// ranks (pairs of ranks), against computed values: partition counts that
// differ between the sides, MPI_Pready* from pthreads, MPI_Parrived, a
// derived datatype, the _c forms, a size mismatch and bad input.
func TestPartitioned(t *testing.T) {
	for _, n := range []int{2, 4} {
		expectOK(t, n, "partitioned")
	}
}

// TestPartitionedKill: the sender of each pair dies with SIGKILL in the
// middle of a round; the receiver gets MPIX_ERR_PROC_FAILED from
// MPI_Wait and MPI_Parrived.
func TestPartitionedKill(t *testing.T) {
	exe := compile(t, "partitioned")
	for _, n := range []int{2, 4} {
		r := runJob(t, n, []string{"--ft"}, exe, "kill")
		if strings.Contains(r.out, "FAIL") || strings.Count(r.out, "OK\n") != n/2 || strings.Count(r.out, "dies\n") != n/2 {
			t.Fatalf("%d ranks: exit %d\nstdout:\n%s\nstderr:\n%s", n, r.code, r.out, r.errOut)
		}
	}
}
