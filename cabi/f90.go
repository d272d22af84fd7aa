package main

/*
#include "cabi.h"
*/
import "C"

import "sync"

// MPI_Type_create_f90_integer, _real and _complex: the type of a Fortran
// variable of KIND selected_int_kind(r) or selected_real_kind(p, r)
// (MPI 4.1 section 19.1.9). shmpi has no Fortran compiler to ask, so the
// kinds are those of gfortran and the common compilers on x86-64 and
// arm64: INTEGER(1, 2, 4, 8, 16) and REAL(4, 8, 16) (x87's REAL(10) has
// no MPI_REALn). A request is answered with the smallest kind that
// satisfies it, of the same size and class as MPI_Type_match_size's
// MPI_INTEGERn, MPI_REALn and MPI_COMPLEXn. The types are predefined:
// the same arguments give the same handle, and they cannot be freed;
// their envelope is the F90 combiner with (r) or (p, r).

type f90Kind struct {
	p, r int // decimal precision and exponent range of the kind
	h    handle
}

var (
	f90Ints      = []f90Kind{{0, 2, MPI_INTEGER1}, {0, 4, MPI_INTEGER2}, {0, 9, MPI_INTEGER4}, {0, 18, MPI_INTEGER8}, {0, 38, MPI_INTEGER16}}
	f90Reals     = []f90Kind{{6, 37, MPI_REAL4}, {15, 307, MPI_REAL8}, {33, 4931, MPI_REAL16}}
	f90Complexes = []f90Kind{{6, 37, MPI_COMPLEX8}, {15, 307, MPI_COMPLEX16}, {33, 4931, MPI_COMPLEX32}}
)

var f90Types struct {
	sync.Mutex
	m map[[3]int]handle // (combiner, p, r)
}

func f90Type(combiner, p, r int, kinds []f90Kind, out *C.uintptr_t, fname string) C.int {
	if out == nil || (p == MPI_UNDEFINED && r == MPI_UNDEFINED) {
		return failNone(MPI_ERR_ARG, fname)
	}
	var match handle
	for _, k := range kinds {
		if (p == MPI_UNDEFINED || p <= k.p) && (r == MPI_UNDEFINED || r <= k.r) {
			match = k.h
			break
		}
	}
	if match == 0 {
		return failNone(MPI_ERR_ARG, fname) // no kind has that precision or range
	}
	f90Types.Lock()
	defer f90Types.Unlock()
	key := [3]int{combiner, p, r}
	if h, ok := f90Types.m[key]; ok {
		*out = C.uintptr_t(h)
		return 0
	}
	base := getType(match)
	t := base.clone()
	t.red = base.red
	t.predef, t.committed = true, true
	t.combiner = combiner
	t.name = base.name
	if combiner == MPI_COMBINER_F90_INTEGER {
		t.ints = []int32{int32(r)}
	} else {
		t.ints = []int32{int32(p), int32(r)}
	}
	h := registerType(t)
	if h == 0 {
		return failNone(MPI_ERR_INTERN, fname)
	}
	if f90Types.m == nil {
		f90Types.m = map[[3]int]handle{}
	}
	f90Types.m[key] = h
	*out = C.uintptr_t(h)
	return 0
}

//export shmpi_MPI_Type_create_f90_integer
func shmpi_MPI_Type_create_f90_integer(r C.int, out *C.uintptr_t) C.int {
	return f90Type(MPI_COMBINER_F90_INTEGER, MPI_UNDEFINED, int(r), f90Ints, out, "MPI_Type_create_f90_integer")
}

//export shmpi_MPI_Type_create_f90_real
func shmpi_MPI_Type_create_f90_real(p, r C.int, out *C.uintptr_t) C.int {
	return f90Type(MPI_COMBINER_F90_REAL, int(p), int(r), f90Reals, out, "MPI_Type_create_f90_real")
}

//export shmpi_MPI_Type_create_f90_complex
func shmpi_MPI_Type_create_f90_complex(p, r C.int, out *C.uintptr_t) C.int {
	return f90Type(MPI_COMBINER_F90_COMPLEX, int(p), int(r), f90Complexes, out, "MPI_Type_create_f90_complex")
}
