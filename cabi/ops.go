package main

/*
#include "cabi.h"
*/
import "C"

import (
	"cmp"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// Reduction operations. A predefined op on a predefined type becomes a
// typed op of package coll (coll.Sum[float64]...), so reductions run at
// the Go API's speed; MINLOC and MAXLOC work on the C layouts of the pair
// types; long double is reduced in C (ops.c). A user op (a C function)
// is applied by this package itself, in rank order (coll.go).

type opObj struct {
	predef  handle
	fn      unsafe.Pointer
	big     bool // MPI_User_function_c
	commute bool
}

func init() {
	for h := handle(MPI_SUM); h <= MPI_NO_OP; h++ {
		switch h {
		case MPI_SUM, MPI_MIN, MPI_MAX, MPI_PROD, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR,
			MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE, MPI_NO_OP:
			ops.predef(h, &opObj{predef: h, commute: true})
		}
	}
}

func getOp(h handle) *opObj {
	o := ops.get(h)
	if o == nil {
		return nil
	}
	return *o
}

func opCreate(fn unsafe.Pointer, big bool, commute C.int, out *C.uintptr_t, fname string) C.int {
	if fn == nil || out == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	h, _ := ops.add(&opObj{fn: fn, big: big, commute: commute != 0})
	*out = C.uintptr_t(h)
	return 0
}

//export shmpi_MPI_Op_create
func shmpi_MPI_Op_create(fn unsafe.Pointer, commute C.int, out *C.uintptr_t) C.int {
	return opCreate(fn, false, commute, out, "MPI_Op_create")
}

//export shmpi_MPI_Op_create_c
func shmpi_MPI_Op_create_c(fn unsafe.Pointer, commute C.int, out *C.uintptr_t) C.int {
	return opCreate(fn, true, commute, out, "MPI_Op_create_c")
}

//export shmpi_MPI_Op_free
func shmpi_MPI_Op_free(op *C.uintptr_t) C.int {
	if op == nil {
		return failNone(MPI_ERR_ARG, "MPI_Op_free")
	}
	o := getOp(handle(*op))
	if o == nil || o.predef != 0 {
		return failNone(MPI_ERR_OP, "MPI_Op_free")
	}
	ops.remove(handle(*op))
	*op = MPI_OP_NULL
	return 0
}

//export shmpi_MPI_Op_commutative
func shmpi_MPI_Op_commutative(op C.uintptr_t, commute *C.int) C.int {
	o := getOp(handle(op))
	if o == nil {
		return failNone(MPI_ERR_OP, "MPI_Op_commutative")
	}
	if commute == nil {
		return failNone(MPI_ERR_ARG, "MPI_Op_commutative")
	}
	*commute = 0
	if o.commute {
		*commute = 1
	}
	return 0
}

// Typed ops.

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func land[T integer](inout, in []T) {
	for i := range inout {
		inout[i] = b2i[T](inout[i] != 0 && in[i] != 0)
	}
}

func lor[T integer](inout, in []T) {
	for i := range inout {
		inout[i] = b2i[T](inout[i] != 0 || in[i] != 0)
	}
}

func lxor[T integer](inout, in []T) {
	for i := range inout {
		inout[i] = b2i[T]((inout[i] != 0) != (in[i] != 0))
	}
}

func b2i[T integer](b bool) T {
	if b {
		return 1
	}
	return 0
}

// replaceOp and noOp are MPI_REPLACE and MPI_NO_OP (one-sided only).
func replaceOp[T any](inout, in []T) { copy(inout, in) }
func noOp[T any](inout, in []T)      {}

func intOp[T integer](h handle, logicalOnly, bitsOnly bool) coll.Op[T] {
	switch h {
	case MPI_LAND:
		return land[T]
	case MPI_LOR:
		return lor[T]
	case MPI_LXOR:
		return lxor[T]
	case MPI_REPLACE:
		return replaceOp[T]
	case MPI_NO_OP:
		return noOp[T]
	}
	if logicalOnly {
		return nil
	}
	switch h {
	case MPI_BAND:
		return coll.Band[T]
	case MPI_BOR:
		return coll.Bor[T]
	case MPI_BXOR:
		return coll.Bxor[T]
	}
	if bitsOnly {
		return nil
	}
	switch h {
	case MPI_SUM:
		return coll.Sum[T]
	case MPI_PROD:
		return coll.Prod[T]
	case MPI_MIN:
		return coll.Min[T]
	case MPI_MAX:
		return coll.Max[T]
	}
	return nil
}

func floatOp[T float32 | float64](h handle) coll.Op[T] {
	switch h {
	case MPI_SUM:
		return coll.Sum[T]
	case MPI_PROD:
		return coll.Prod[T]
	case MPI_MIN:
		return coll.Min[T]
	case MPI_MAX:
		return coll.Max[T]
	case MPI_REPLACE:
		return replaceOp[T]
	case MPI_NO_OP:
		return noOp[T]
	}
	return nil
}

func complexOp[T complex64 | complex128](h handle) coll.Op[T] {
	switch h {
	case MPI_SUM:
		return coll.Sum[T]
	case MPI_PROD:
		return coll.Prod[T]
	case MPI_REPLACE:
		return replaceOp[T]
	case MPI_NO_OP:
		return noOp[T]
	}
	return nil
}

// The C layouts of the pair types.
type (
	pairFI struct {
		V float32
		L int32
	}
	pairDI struct {
		V float64
		L int32
		_ int32
	}
	pairLI struct {
		V int64
		L int32
		_ int32
	}
	pair2I struct{ V, L int32 }
	pairSI struct {
		V int16
		_ int16
		L int32
	}
	pair2F struct{ V, L float32 }
	pair2D struct{ V, L float64 }
)

// locOp is MINLOC (max false) or MAXLOC: the winning value, and the
// smallest location among equal values.
func locOp[T any, V cmp.Ordered, L cmp.Ordered](val func(*T) V, loc func(*T) L, set func(*T, V, L), max bool) coll.Op[T] {
	return func(inout, in []T) {
		for i := range inout {
			a, b := &inout[i], &in[i]
			va, vb := val(a), val(b)
			switch {
			case va == vb:
				if loc(b) < loc(a) {
					set(a, va, loc(b))
				}
			case (vb < va) != max:
				set(a, vb, loc(b))
			}
		}
	}
}

func pairOp[T any, V cmp.Ordered, L cmp.Ordered](h handle, val func(*T) V, loc func(*T) L, set func(*T, V, L)) coll.Op[T] {
	switch h {
	case MPI_MINLOC:
		return locOp(val, loc, set, false)
	case MPI_MAXLOC:
		return locOp(val, loc, set, true)
	case MPI_REPLACE:
		return replaceOp[T]
	case MPI_NO_OP:
		return noOp[T]
	}
	return nil
}

// cOp reduces elements of N bytes in C (long double types).
func cOp[T any](h handle, k basic) coll.Op[T] {
	switch h {
	case MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_MINLOC, MPI_MAXLOC:
	case MPI_REPLACE:
		return replaceOp[T]
	case MPI_NO_OP:
		return noOp[T]
	default:
		return nil
	}
	if (k == bCLong && h != MPI_SUM && h != MPI_PROD) || (k == bLong && (h == MPI_MINLOC || h == MPI_MAXLOC)) ||
		(k == bLongDoubleInt && h != MPI_MINLOC && h != MPI_MAXLOC) {
		return nil
	}
	return func(inout, in []T) {
		if len(inout) == 0 {
			return
		}
		C.shmpi_reduce_c(C.int(h), C.int(k), unsafe.Pointer(&in[0]), unsafe.Pointer(&inout[0]), C.int64_t(len(inout)))
	}
}

// ops.c knows these kinds by number.
var _ = [1]struct{}{}[bLong-15+bCLong-16+bLongDoubleInt-22]

// dispatch calls f's generic body for the Go type of kind k with op h;
// false if the op does not apply to the kind (MPI_ERR_OP).
func dispatch(a *redArgs, k basic, h handle, logical bool) (*ranks.Request, error, bool) {
	switch k {
	case bI8:
		return runRed(a, intOp[int8](h, logical, false))
	case bU8:
		return runRed(a, intOp[uint8](h, logical, false))
	case bBool:
		return runRed(a, intOp[uint8](h, true, false))
	case bByte:
		return runRed(a, intOp[uint8](h, false, true))
	case bI16:
		return runRed(a, intOp[int16](h, logical, false))
	case bU16:
		return runRed(a, intOp[uint16](h, logical, false))
	case bI32:
		return runRed(a, intOp[int32](h, logical, false))
	case bU32:
		return runRed(a, intOp[uint32](h, logical, false))
	case bI64:
		return runRed(a, intOp[int64](h, logical, false))
	case bU64:
		return runRed(a, intOp[uint64](h, logical, false))
	case bF32:
		return runRed(a, floatOp[float32](h))
	case bF64:
		return runRed(a, floatOp[float64](h))
	case bC64:
		return runRed(a, complexOp[complex64](h))
	case bC128:
		return runRed(a, complexOp[complex128](h))
	case bFloatInt:
		return runRed(a, pairOp(h, func(p *pairFI) float32 { return p.V }, func(p *pairFI) int32 { return p.L }, func(p *pairFI, v float32, l int32) { p.V, p.L = v, l }))
	case bDoubleInt:
		return runRed(a, pairOp(h, func(p *pairDI) float64 { return p.V }, func(p *pairDI) int32 { return p.L }, func(p *pairDI, v float64, l int32) { p.V, p.L = v, l }))
	case bLongInt:
		return runRed(a, pairOp(h, func(p *pairLI) int64 { return p.V }, func(p *pairLI) int32 { return p.L }, func(p *pairLI, v int64, l int32) { p.V, p.L = v, l }))
	case b2Int:
		return runRed(a, pairOp(h, func(p *pair2I) int32 { return p.V }, func(p *pair2I) int32 { return p.L }, func(p *pair2I, v int32, l int32) { p.V, p.L = v, l }))
	case bShortInt:
		return runRed(a, pairOp(h, func(p *pairSI) int16 { return p.V }, func(p *pairSI) int32 { return p.L }, func(p *pairSI, v int16, l int32) { p.V, p.L = v, l }))
	case b2Float:
		return runRed(a, pairOp(h, func(p *pair2F) float32 { return p.V }, func(p *pair2F) float32 { return p.L }, func(p *pair2F, v float32, l float32) { p.V, p.L = v, l }))
	case b2Double:
		return runRed(a, pairOp(h, func(p *pair2D) float64 { return p.V }, func(p *pair2D) float64 { return p.L }, func(p *pair2D, v float64, l float64) { p.V, p.L = v, l }))
	case bLong:
		return runRed(a, cOp[[16]byte](h, k))
	case bCLong:
		return runRed(a, cOp[[32]byte](h, k))
	case bLongDoubleInt:
		return runRed(a, cOp[[32]byte](h, k))
	}
	return nil, nil, false
}
