package main

import "testing"

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
