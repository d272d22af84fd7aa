package main

/*
#include <stdlib.h>
#include "cabi.h"
*/
import "C"

import (
	"unsafe"
)

// The large-count (_c) datatype constructors: each takes MPI_Count
// arguments where its int form takes ints. When every value fits an int
// they build the type through that form, whose envelope (no large counts)
// MPI's decoders, mpi4py's among them, read either way. Otherwise the type
// is built with 64-bit counts and its contents are MPI 4.0's large counts
// (dtype.counts: MPI_Type_get_envelope_c reports them; the int
// MPI_Type_get_envelope and _get_contents raise MPI_ERR_VALUE_TOO_LARGE).
// Subarray and darray keep int sizes: a larger one is
// MPI_ERR_VALUE_TOO_LARGE.

const maxInt32 = 1<<31 - 1

// cInts copies n MPI_Count values into C ints, or reports that one does
// not fit. Free the result with C.free.
func cInts(p *C.int64_t, n int) (*C.int, bool) {
	if n <= 0 || p == nil {
		return nil, true
	}
	out := (*C.int)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.int(0)))))
	o := unsafe.Slice((*int32)(unsafe.Pointer(out)), n)
	for i, v := range unsafe.Slice((*int64)(unsafe.Pointer(p)), n) {
		if v > maxInt32 || v < -maxInt32-1 {
			C.free(unsafe.Pointer(out))
			return nil, false
		}
		o[i] = int32(v)
	}
	return out, true
}

func fits(vs ...C.int64_t) bool {
	for _, v := range vs {
		if v > maxInt32 || v < -maxInt32-1 {
			return false
		}
	}
	return true
}

func tooLarge(fname string) C.int { return failNone(MPI_ERR_VALUE_TOO_LARGE, fname) }

//export shmpi_MPI_Type_contiguous_c
func shmpi_MPI_Type_contiguous_c(count C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Type_contiguous_c"
	if fits(count) {
		return shmpi_MPI_Type_contiguous(C.int(count), old, out)
	}
	o, r := typeArg(old, fname)
	if o == nil {
		return r
	}
	if count < 0 {
		return failNone(MPI_ERR_COUNT, fname)
	}
	b := newBuilder()
	b.add(o, int64(count), 0)
	t := b.done(MPI_COMBINER_CONTIGUOUS)
	t.counts, t.kids = []int64{int64(count)}, []handle{handle(old)}
	return typeResult(t, out, fname)
}

// largeVector is MPI_Type_vector_c or _create_hvector_c (stride in bytes
// when bytes) with a value that does not fit an int.
func largeVector(fname string, combiner int, count, blen, stride int64, bytes bool, old C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := typeArg(old, fname)
	if o == nil {
		return r
	}
	if count < 0 || blen < 0 {
		return failNone(MPI_ERR_COUNT, fname)
	}
	st := stride
	if !bytes {
		st *= o.extent()
	}
	t := vector(count, blen, st, o).done(combiner)
	t.counts, t.kids = []int64{count, blen, stride}, []handle{handle(old)}
	return typeResult(t, out, fname)
}

// largeIndexed is an indexed, hindexed, indexed_block or hindexed_block
// _c constructor with a value that does not fit an int: blens (or blen1
// for every block) elements of old at disps (in old's extents unless
// bytes).
func largeIndexed(fname string, combiner int, count int64, blens *C.int64_t, blen1 int64, disps *C.int64_t, bytes bool, old C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := typeArg(old, fname)
	if o == nil {
		return r
	}
	if count < 0 {
		return failNone(MPI_ERR_COUNT, fname)
	}
	n := int(count)
	if n > 0 && ((blens == nil && blen1 < 0) || disps == nil) {
		return failNone(MPI_ERR_ARG, fname)
	}
	var bl []int64
	if blens != nil {
		bl = i64s(blens, n)
	}
	ds := i64s(disps, n)
	b := newBuilder()
	for i := range n {
		l := blen1
		if bl != nil {
			l = bl[i]
		}
		if l < 0 {
			return failNone(MPI_ERR_ARG, fname)
		}
		d := ds[i]
		if !bytes {
			d *= o.extent()
		}
		b.add(o, l, d)
	}
	t := b.done(combiner)
	t.counts = []int64{count}
	if bl != nil {
		t.counts = append(t.counts, bl...)
	} else {
		t.counts = append(t.counts, blen1)
	}
	t.counts = append(t.counts, ds...)
	t.kids = []handle{handle(old)}
	return typeResult(t, out, fname)
}

// allFit says whether the n values at p fit an int.
func allFit(p *C.int64_t, n int64) bool {
	if p == nil || n <= 0 {
		return true
	}
	for _, v := range unsafe.Slice((*int64)(unsafe.Pointer(p)), n) {
		if v > maxInt32 || v < -maxInt32-1 {
			return false
		}
	}
	return true
}

//export shmpi_MPI_Type_vector_c
func shmpi_MPI_Type_vector_c(count, blen, stride C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	if !fits(count, blen, stride) {
		return largeVector("MPI_Type_vector_c", MPI_COMBINER_VECTOR, int64(count), int64(blen), int64(stride), false, old, out)
	}
	return shmpi_MPI_Type_vector(C.int(count), C.int(blen), C.int(stride), old, out)
}

//export shmpi_MPI_Type_create_hvector_c
func shmpi_MPI_Type_create_hvector_c(count, blen, stride C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	if !fits(count, blen) {
		return largeVector("MPI_Type_create_hvector_c", MPI_COMBINER_HVECTOR, int64(count), int64(blen), int64(stride), true, old, out)
	}
	return shmpi_MPI_Type_create_hvector(C.int(count), C.int(blen), stride, old, out)
}

// indexedC converts the counts (and, for the int-displacement forms,
// the displacements) and calls the int form.
func indexedC(fname string, count C.int64_t, blens, disps *C.int64_t, intDisps bool, call func(n C.int, bl *C.int, d unsafe.Pointer) C.int) C.int {
	if !fits(count) || count < 0 {
		if count < 0 {
			return failNone(MPI_ERR_COUNT, fname)
		}
		return tooLarge(fname)
	}
	n := int(count)
	bl, ok := cInts(blens, n)
	if !ok {
		return tooLarge(fname)
	}
	defer C.free(unsafe.Pointer(bl))
	d := unsafe.Pointer(disps)
	if intDisps {
		di, ok := cInts(disps, n)
		if !ok {
			return tooLarge(fname)
		}
		defer C.free(unsafe.Pointer(di))
		d = unsafe.Pointer(di)
	}
	return call(C.int(count), bl, d)
}

//export shmpi_MPI_Type_indexed_c
func shmpi_MPI_Type_indexed_c(count C.int64_t, blens, disps *C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	if !fits(count) || !allFit(blens, int64(count)) || !allFit(disps, int64(count)) {
		return largeIndexed("MPI_Type_indexed_c", MPI_COMBINER_INDEXED, int64(count), blens, 0, disps, false, old, out)
	}
	return indexedC("MPI_Type_indexed_c", count, blens, disps, true, func(n C.int, bl *C.int, d unsafe.Pointer) C.int {
		return shmpi_MPI_Type_indexed(n, bl, (*C.int)(d), old, out)
	})
}

//export shmpi_MPI_Type_create_hindexed_c
func shmpi_MPI_Type_create_hindexed_c(count C.int64_t, blens, disps *C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	if !fits(count) || !allFit(blens, int64(count)) {
		return largeIndexed("MPI_Type_create_hindexed_c", MPI_COMBINER_HINDEXED, int64(count), blens, 0, disps, true, old, out)
	}
	return indexedC("MPI_Type_create_hindexed_c", count, blens, disps, false, func(n C.int, bl *C.int, d unsafe.Pointer) C.int {
		return shmpi_MPI_Type_create_hindexed(n, bl, (*C.int64_t)(d), old, out)
	})
}

//export shmpi_MPI_Type_create_indexed_block_c
func shmpi_MPI_Type_create_indexed_block_c(count, blen C.int64_t, disps *C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	if !fits(count, blen) || !allFit(disps, int64(count)) {
		return largeIndexed("MPI_Type_create_indexed_block_c", MPI_COMBINER_INDEXED_BLOCK, int64(count), nil, int64(blen), disps, false, old, out)
	}
	return indexedC("MPI_Type_create_indexed_block_c", count, nil, disps, true, func(n C.int, _ *C.int, d unsafe.Pointer) C.int {
		return shmpi_MPI_Type_create_indexed_block(n, C.int(blen), (*C.int)(d), old, out)
	})
}

//export shmpi_MPI_Type_create_hindexed_block_c
func shmpi_MPI_Type_create_hindexed_block_c(count, blen C.int64_t, disps *C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	if !fits(count, blen) {
		return largeIndexed("MPI_Type_create_hindexed_block_c", MPI_COMBINER_HINDEXED_BLOCK, int64(count), nil, int64(blen), disps, true, old, out)
	}
	return shmpi_MPI_Type_create_hindexed_block(C.int(count), C.int(blen), disps, old, out)
}

//export shmpi_MPI_Type_create_struct_c
func shmpi_MPI_Type_create_struct_c(count C.int64_t, blens, disps *C.int64_t, olds *C.uintptr_t, out *C.uintptr_t) C.int {
	if !fits(count) || !allFit(blens, int64(count)) {
		const fname = "MPI_Type_create_struct_c"
		if count < 0 {
			return failNone(MPI_ERR_COUNT, fname)
		}
		n := int(count)
		if n > 0 && (blens == nil || disps == nil || olds == nil) {
			return failNone(MPI_ERR_ARG, fname)
		}
		bl, da, ts := i64s(blens, n), i64s(disps, n), hs(olds, n)
		t, code := structOf(bl, da, ts)
		if t == nil {
			return failNone(code, fname)
		}
		t.counts = append(append([]int64{int64(count)}, bl...), da...)
		t.kids = ts
		return typeResult(t, out, fname)
	}
	return indexedC("MPI_Type_create_struct_c", count, blens, disps, false, func(n C.int, bl *C.int, d unsafe.Pointer) C.int {
		return shmpi_MPI_Type_create_struct(n, bl, (*C.int64_t)(d), olds, out)
	})
}

//export shmpi_MPI_Type_create_resized_c
func shmpi_MPI_Type_create_resized_c(old C.uintptr_t, lb, extent C.int64_t, out *C.uintptr_t) C.int {
	return shmpi_MPI_Type_create_resized(old, lb, extent, out)
}

//export shmpi_MPI_Type_create_subarray_c
func shmpi_MPI_Type_create_subarray_c(ndims C.int, sizes, subsizes, starts *C.int64_t, order C.int, old C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Type_create_subarray_c"
	n := int(ndims)
	var p [3]*C.int
	for i, a := range []*C.int64_t{sizes, subsizes, starts} {
		v, ok := cInts(a, n)
		if !ok {
			for _, q := range p[:i] {
				C.free(unsafe.Pointer(q))
			}
			return tooLarge(fname)
		}
		p[i] = v
	}
	defer func() {
		for _, q := range p {
			C.free(unsafe.Pointer(q))
		}
	}()
	return shmpi_MPI_Type_create_subarray(ndims, p[0], p[1], p[2], order, old, out)
}

//export shmpi_MPI_Type_get_envelope_c
func shmpi_MPI_Type_get_envelope_c(h C.uintptr_t, ni, na, nc, nd *C.int64_t, combiner *C.int) C.int {
	t, r := typeArg(h, "MPI_Type_get_envelope_c")
	if t == nil {
		return r
	}
	if ni == nil || na == nil || nc == nil || nd == nil || combiner == nil {
		return failNone(MPI_ERR_ARG, "MPI_Type_get_envelope_c")
	}
	*ni, *na, *nc, *nd = C.int64_t(len(t.ints)), C.int64_t(len(t.aints)), C.int64_t(len(t.counts)), C.int64_t(len(t.kids))
	*combiner = C.int(t.combiner)
	return 0
}

//export shmpi_MPI_Type_get_contents_c
func shmpi_MPI_Type_get_contents_c(h C.uintptr_t, maxi, maxa, maxc, maxd C.int64_t, ints *C.int, aints *C.int64_t, counts *C.int64_t, dts *C.uintptr_t) C.int {
	const fname = "MPI_Type_get_contents_c"
	if t := getType(handle(h)); t != nil && t.counts != nil {
		if maxi < C.int64_t(len(t.ints)) || maxa < C.int64_t(len(t.aints)) || maxc < C.int64_t(len(t.counts)) || maxd < C.int64_t(len(t.kids)) {
			return failNone(MPI_ERR_ARG, fname)
		}
		copy(unsafe.Slice((*int64)(unsafe.Pointer(counts)), len(t.counts)), t.counts)
		t.contents(ints, aints, dts)
		return 0
	}
	if !fits(maxi, maxa, maxd) {
		return tooLarge("MPI_Type_get_contents_c")
	}
	return shmpi_MPI_Type_get_contents(h, C.int(maxi), C.int(maxa), C.int(maxd), ints, aints, dts)
}

//export shmpi_MPI_Pack_size_c
func shmpi_MPI_Pack_size_c(count C.int64_t, h C.uintptr_t, comm C.uintptr_t, size *C.int64_t) C.int {
	t, r := typeArg(h, "MPI_Pack_size_c")
	if t == nil {
		return r
	}
	if count < 0 {
		return failNone(MPI_ERR_COUNT, "MPI_Pack_size_c")
	}
	if size == nil {
		return failNone(MPI_ERR_ARG, "MPI_Pack_size_c")
	}
	*size = C.int64_t(int64(count) * t.size)
	return 0
}

// MPI_Type_match_size: the predefined Fortran type of a class and a size.
var matchSize = map[[2]int]handle{
	{MPI_TYPECLASS_INTEGER, 1}: MPI_INTEGER1, {MPI_TYPECLASS_INTEGER, 2}: MPI_INTEGER2,
	{MPI_TYPECLASS_INTEGER, 4}: MPI_INTEGER4, {MPI_TYPECLASS_INTEGER, 8}: MPI_INTEGER8,
	{MPI_TYPECLASS_INTEGER, 16}: MPI_INTEGER16,
	{MPI_TYPECLASS_REAL, 2}:     MPI_REAL2, {MPI_TYPECLASS_REAL, 4}: MPI_REAL4,
	{MPI_TYPECLASS_REAL, 8}: MPI_REAL8, {MPI_TYPECLASS_REAL, 16}: MPI_REAL16,
	{MPI_TYPECLASS_COMPLEX, 4}: MPI_COMPLEX4, {MPI_TYPECLASS_COMPLEX, 8}: MPI_COMPLEX8,
	{MPI_TYPECLASS_COMPLEX, 16}: MPI_COMPLEX16, {MPI_TYPECLASS_COMPLEX, 32}: MPI_COMPLEX32,
}

//export shmpi_MPI_Type_match_size
func shmpi_MPI_Type_match_size(class, size C.int, out *C.uintptr_t) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Type_match_size")
	}
	h, ok := matchSize[[2]int{int(class), int(size)}]
	if !ok {
		return failNone(MPI_ERR_ARG, "MPI_Type_match_size")
	}
	*out = C.uintptr_t(h)
	return 0
}
