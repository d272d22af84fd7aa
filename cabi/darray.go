package main

/*
#include <stdlib.h>
#include "cabi.h"
*/
import "C"

import "unsafe"

// MPI_Type_create_darray: the part of an HPF-distributed global array
// that one process of a row-major process grid owns (MPI 4.1 section
// 5.1.4). Each dimension's owned indices are a list of blocks; the type
// is built as nested blocks like a subarray, fastest dimension first,
// and its extent is the whole array's.

// darrayBlocks lists the [start, start+n) index blocks that process
// coordinate c of p owns in a dimension of g elements, or reports bad
// arguments.
func darrayBlocks(g, distrib, darg, p, c int64) ([][2]int64, bool) {
	if g <= 0 || p <= 0 || (darg <= 0 && darg != MPI_DISTRIBUTE_DFLT_DARG) {
		return nil, false
	}
	var bs [][2]int64
	switch distrib {
	case MPI_DISTRIBUTE_NONE:
		if p != 1 {
			return nil, false // MPI: a dimension not distributed has one process
		}
		bs = append(bs, [2]int64{0, g})
	case MPI_DISTRIBUTE_BLOCK:
		b := (g + p - 1) / p
		if darg != MPI_DISTRIBUTE_DFLT_DARG {
			if darg*p < g {
				return nil, false // MPI: the blocks must cover the dimension
			}
			b = darg
		}
		if s := c * b; s < g {
			bs = append(bs, [2]int64{s, min(b, g-s)})
		}
	case MPI_DISTRIBUTE_CYCLIC:
		k := int64(1)
		if darg != MPI_DISTRIBUTE_DFLT_DARG {
			k = darg
		}
		for s := c * k; s < g; s += p * k {
			bs = append(bs, [2]int64{s, min(k, g-s)})
		}
	default:
		return nil, false
	}
	return bs, true
}

//export shmpi_MPI_Type_create_darray
func shmpi_MPI_Type_create_darray(size, rank, ndims C.int, gsizes, distribs, dargs, psizes *C.int, order C.int, old C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Type_create_darray"
	o, r := typeArg(old, fname)
	if o == nil {
		return r
	}
	n := int(ndims)
	if n <= 0 || size <= 0 || rank < 0 || rank >= size || gsizes == nil || distribs == nil || dargs == nil || psizes == nil ||
		(order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN) {
		return failNone(MPI_ERR_ARG, fname)
	}
	gs, ds, da, ps := i32s(gsizes, n), i32s(distribs, n), i32s(dargs, n), i32s(psizes, n)
	nprocs := int64(1)
	for _, p := range ps {
		if p <= 0 {
			return failNone(MPI_ERR_ARG, fname)
		}
		nprocs *= int64(p)
	}
	if nprocs != int64(size) {
		return failNone(MPI_ERR_ARG, fname)
	}
	// The process grid is row-major whatever the array's order.
	coords := make([]int64, n)
	rem := int64(rank)
	for d := n - 1; d >= 0; d-- {
		coords[d] = rem % int64(ps[d])
		rem /= int64(ps[d])
	}
	blocks := make([][][2]int64, n)
	for d := range n {
		bs, ok := darrayBlocks(int64(gs[d]), int64(ds[d]), int64(da[d]), int64(ps[d]), coords[d])
		if !ok {
			return failNone(MPI_ERR_ARG, fname)
		}
		blocks[d] = bs
	}
	cur := o
	stride := o.extent()
	for k := range n {
		d := k // Fortran order: the first dimension varies fastest
		if order == MPI_ORDER_C {
			d = n - 1 - k
		}
		b := newBuilder()
		for _, bl := range blocks[d] {
			b.add(cur, bl[1], bl[0]*stride)
		}
		cur = b.done(MPI_COMBINER_HVECTOR)
		stride *= int64(gs[d])
		// One element of the next dimension is this whole dimension, so
		// that blocks of it are contiguous copies.
		cur.lb, cur.ub = 0, stride
		cur.finish()
	}
	b := newBuilder()
	b.add(cur, 1, 0)
	t := b.done(MPI_COMBINER_DARRAY)
	t.lb, t.ub = 0, stride
	t.explicitBounds = true
	t.finish()
	t.ints = append([]int32{int32(size), int32(rank), int32(ndims)}, gs...)
	t.ints = append(append(append(append(t.ints, ds...), da...), ps...), int32(order))
	t.kids = []handle{handle(old)}
	return typeResult(t, out, fname)
}

//export shmpi_MPI_Type_create_darray_c
func shmpi_MPI_Type_create_darray_c(size, rank, ndims C.int, gsizes *C.int64_t, distribs, dargs, psizes *C.int, order C.int, old C.uintptr_t, out *C.uintptr_t) C.int {
	// The envelope is the int form's, as for the other _c constructors.
	g, ok := cInts(gsizes, int(ndims))
	if !ok {
		return tooLarge("MPI_Type_create_darray_c")
	}
	defer C.free(unsafe.Pointer(g))
	return shmpi_MPI_Type_create_darray(size, rank, ndims, g, distribs, dargs, psizes, order, old, out)
}
