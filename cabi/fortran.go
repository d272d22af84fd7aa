package main

/*
#include "cabi.h"
*/
import "C"

import (
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// The ABI's Fortran registration (MPI 5.0 section 21.4.1). shmpi has no
// Fortran bindings, so it knows nothing of the Fortran compiler:
// MPI_Abi_get_fortran_info gives MPI_INFO_NULL and
// MPI_Abi_get_fortran_booleans says not set, until a Fortran layer
// built over the C ABI tells. The first MPI_Abi_set_fortran_info is
// kept (a copy, given back by get) and later ones are MPI_ERR_ABI; the
// same holds for the booleans of each logical size. The sizes of the
// default kinds in the info (mpi_integer_size, mpi_logical_size,
// mpi_real_size, mpi_double_precision_size) make MPI_INTEGER,
// MPI_LOGICAL, MPI_REAL (and MPI_COMPLEX), MPI_DOUBLE_PRECISION (and
// MPI_DOUBLE_COMPLEX) the MPI_<TYPE>n of that size, so that their size
// and reductions follow the compiler's flags (-fdefault-integer-8...).
// Types derived from them before the call keep the old layout.

var fortranABI struct {
	sync.Mutex
	info  *ranks.Info
	bools map[int][2][]byte // logical size -> (true, false)
}

// follower is a predefined type that follows a size key, with the
// MPI_<TYPE>n of every size allowed.
type follower struct {
	h      handle
	bySize map[int]handle
}

// fortranKinds: for each size key, the types that follow it.
var fortranKinds = []struct {
	key     string
	follows []follower
}{
	{"mpi_integer_size", []follower{{MPI_INTEGER, map[int]handle{1: MPI_INTEGER1, 2: MPI_INTEGER2, 4: MPI_INTEGER4, 8: MPI_INTEGER8, 16: MPI_INTEGER16}}}},
	{"mpi_logical_size", []follower{{MPI_LOGICAL, map[int]handle{1: MPI_LOGICAL1, 2: MPI_LOGICAL2, 4: MPI_LOGICAL4, 8: MPI_LOGICAL8, 16: MPI_LOGICAL16}}}},
	{"mpi_real_size", []follower{
		{MPI_REAL, map[int]handle{2: MPI_REAL2, 4: MPI_REAL4, 8: MPI_REAL8, 16: MPI_REAL16}},
		{MPI_COMPLEX, map[int]handle{2: MPI_COMPLEX4, 4: MPI_COMPLEX8, 8: MPI_COMPLEX16, 16: MPI_COMPLEX32}},
	}},
	{"mpi_double_precision_size", []follower{
		{MPI_DOUBLE_PRECISION, map[int]handle{8: MPI_REAL8, 16: MPI_REAL16}},
		{MPI_DOUBLE_COMPLEX, map[int]handle{8: MPI_COMPLEX16, 16: MPI_COMPLEX32}},
	}},
}

// retype gives the predefined type h the layout of the predefined type
// like, keeping h's name.
func retype(h, like handle) {
	src := getType(like)
	dst := getType(h)
	t := src.clone()
	t.red = src.red
	t.predef, t.committed, t.combiner, t.name = true, true, MPI_COMBINER_NAMED, dst.name
	types.predef(h, t)
	t.publish(uint32(h-0x200), 1)
}

//export shmpi_MPI_Abi_get_fortran_info
func shmpi_MPI_Abi_get_fortran_info(out *C.uintptr_t) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Abi_get_fortran_info")
	}
	fortranABI.Lock()
	defer fortranABI.Unlock()
	if fortranABI.info == nil {
		*out = MPI_INFO_NULL // no Fortran bindings: nothing is known
		return 0
	}
	d, err := fortranABI.info.Dup()
	if err != nil {
		return infoFail(err, "MPI_Abi_get_fortran_info")
	}
	*out = C.uintptr_t(newInfo(d))
	return 0
}

//export shmpi_MPI_Abi_set_fortran_info
func shmpi_MPI_Abi_set_fortran_info(h C.uintptr_t) C.int {
	const fname = "MPI_Abi_set_fortran_info"
	in, r := getInfo(h, fname)
	if in == nil {
		return r
	}
	fortranABI.Lock()
	defer fortranABI.Unlock()
	if fortranABI.info != nil {
		return failNone(MPI_ERR_ABI, fname)
	}
	// Check every size before changing anything: a refused call is not
	// the first one.
	type change struct{ h, like handle }
	var changes []change
	for _, k := range fortranKinds {
		v, ok, _ := in.Get(k.key)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		for _, f := range k.follows {
			like, known := f.bySize[n]
			if err != nil || !known {
				return failNone(MPI_ERR_ARG, fname)
			}
			changes = append(changes, change{f.h, like})
		}
	}
	d, err := in.Dup()
	if err != nil {
		return infoFail(err, fname)
	}
	for _, c := range changes {
		retype(c.h, c.like)
	}
	fortranABI.info = d
	return 0
}

func logicalSizeOK(n C.int) bool { return n > 0 && n <= 16 && n&(n-1) == 0 }

//export shmpi_MPI_Abi_set_fortran_booleans
func shmpi_MPI_Abi_set_fortran_booleans(size C.int, t, f unsafe.Pointer) C.int {
	const fname = "MPI_Abi_set_fortran_booleans"
	if !logicalSizeOK(size) || t == nil || f == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	fortranABI.Lock()
	defer fortranABI.Unlock()
	if _, ok := fortranABI.bools[int(size)]; ok {
		return failNone(MPI_ERR_ABI, fname)
	}
	if fortranABI.bools == nil {
		fortranABI.bools = map[int][2][]byte{}
	}
	fortranABI.bools[int(size)] = [2][]byte{C.GoBytes(t, size), C.GoBytes(f, size)}
	return 0
}

//export shmpi_MPI_Abi_get_fortran_booleans
func shmpi_MPI_Abi_get_fortran_booleans(size C.int, t, f unsafe.Pointer, isSet *C.int) C.int {
	const fname = "MPI_Abi_get_fortran_booleans"
	if !logicalSizeOK(size) || isSet == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	fortranABI.Lock()
	defer fortranABI.Unlock()
	b, ok := fortranABI.bools[int(size)]
	*isSet = 0
	if !ok {
		return 0
	}
	if t == nil || f == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	copy(unsafe.Slice((*byte)(t), size), b[0])
	copy(unsafe.Slice((*byte)(f), size), b[1])
	*isSet = 1
	return 0
}
