package main

import (
	"strings"
	"testing"
)

// The C tests of external32 packing, darray, Fortran 90 types, hardware
// information and the ABI's Fortran calls.

// TestExternal32: MPI_Pack_external and friends, byte-exact against
// hand-computed big-endian encodings, round trips, errors.
func TestExternal32(t *testing.T) { expectOK(t, 1, "external32") }

// TestDarray: MPI_Type_create_darray against a reference computed in
// the program, for several grids, distributions and orders.
func TestDarray(t *testing.T) { expectOK(t, 1, "darray") }

// TestF90Types: MPI_Type_create_f90_integer, _real and _complex.
func TestF90Types(t *testing.T) { expectOK(t, 2, "f90") }

// TestHWResourceInfo: MPI_Get_hw_resource_info, pinned to cores
// (shmrun's default) and unpinned; its keys agree with
// MPI_Comm_split_type's MPI_COMM_TYPE_HW_GUIDED.
func TestHWResourceInfo(t *testing.T) {
	exe := compile(t, "hwinfo")
	for _, c := range []struct {
		flags []string
		args  []string
	}{{nil, []string{"core"}}, {[]string{"--bind-to", "none"}, nil}} {
		r := runJob(t, 2, c.flags, exe, c.args...)
		if r.code != 0 || strings.Contains(r.out, "FAIL") || strings.Count(r.out, "OK\n") != 2 {
			t.Fatalf("hwinfo %v: exit %d\nstdout:\n%s\nstderr:\n%s", c.flags, r.code, r.out, r.errOut)
		}
	}
}

// TestFortranABI: MPI_Abi_get/set_fortran_info and _booleans.
func TestFortranABI(t *testing.T) { expectOK(t, 2, "fortran") }

// TestBigTypes: a vector of 2^30 blocks answers its queries without
// listing its blocks; a type listed at its first use moves its data.
func TestBigTypes(t *testing.T) { expectOK(t, 2, "bigtypes") }
