package main

import (
	"strings"
	"testing"
)

// The C tests of topologies, neighbourhood collectives and sessions
// (built and run with the helpers of cabi_test.go).

// TestTopo: Dims_create, Cartesian grids, graphs and distributed graphs,
// their queries and bad input, at several sizes (1 and 2: grids of one
// or two ranks along a dimension, where a rank is its own neighbour).
func TestTopo(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6} {
		expectOK(t, n, "topo")
	}
}

// TestNeighbor: the neighbourhood collectives in every form on a ring, a
// grid with MPI_PROC_NULL neighbours, a distributed graph and a graph,
// with derived datatypes.
func TestNeighbor(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6} {
		expectOK(t, n, "neighbor")
	}
}

// TestSession: the sessions model alone (no MPI_Init) and beside the
// world model, communicators and intercommunicators from groups.
func TestSession(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4} {
		expectOK(t, n, "session")
	}
	exe := compile(t, "session")
	for _, n := range []int{1, 4} {
		r := runJob(t, n, nil, exe, "mixed")
		if r.code != 0 || strings.Contains(r.out, "FAIL") || strings.Count(r.out, "OK\n") != n {
			t.Fatalf("session mixed on %d ranks: exit %d\nstdout:\n%s\nstderr:\n%s", n, r.code, r.out, r.errOut)
		}
	}
}
