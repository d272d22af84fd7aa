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
	"github.com/shmpi/shmpi/win"
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

// opTable is a kind's typed op for each predefined op handle (nil where
// the op does not apply), built once at init: the value of a generic
// function taken inside another generic function is a closure over its
// dictionary, allocated at every use (perf showed runtime.newobject under
// every C MPI_Allreduce).
type opTable[T any] [MPI_NO_OP - MPI_SUM + 1]coll.Op[T]

func newOpTable[T any](op func(h handle) coll.Op[T]) *opTable[T] {
	t := new(opTable[T])
	for h := handle(MPI_SUM); h <= MPI_NO_OP; h++ {
		f := op(h)
		if f != nil {
			// The same function as win knows it: a window across nodes
			// then applies it at the target (win.PredefinedOp).
			if g, ok := win.PredefinedOp[T](opNames[h]); ok {
				f = g
			}
		}
		t[h-MPI_SUM] = f
	}
	return t
}

// opNames are the names win.PredefinedOp takes.
var opNames = map[handle]string{MPI_SUM: "sum", MPI_PROD: "prod", MPI_MIN: "min", MPI_MAX: "max",
	MPI_BAND: "band", MPI_BOR: "bor", MPI_BXOR: "bxor", MPI_REPLACE: "replace", MPI_NO_OP: "no_op"}

func (t *opTable[T]) get(h handle) coll.Op[T] {
	if h < MPI_SUM || h > MPI_NO_OP {
		return nil
	}
	return t[h-MPI_SUM]
}

// intOps are an integer kind's ops, and those of its logical use (the
// ops that MPI allows on C_BOOL and Fortran LOGICAL).
type intOps[T integer] struct{ all, logical *opTable[T] }

func newIntOps[T integer]() intOps[T] {
	return intOps[T]{
		all:     newOpTable(func(h handle) coll.Op[T] { return intOp[T](h, false, false) }),
		logical: newOpTable(func(h handle) coll.Op[T] { return intOp[T](h, true, false) }),
	}
}

func (o intOps[T]) get(h handle, logical bool) coll.Op[T] {
	if logical {
		return o.logical.get(h)
	}
	return o.all.get(h)
}

var (
	opsI8, opsU8   = newIntOps[int8](), newIntOps[uint8]()
	opsI16, opsU16 = newIntOps[int16](), newIntOps[uint16]()
	opsI32, opsU32 = newIntOps[int32](), newIntOps[uint32]()
	opsI64, opsU64 = newIntOps[int64](), newIntOps[uint64]()
	opsByte        = newOpTable(func(h handle) coll.Op[uint8] { return intOp[uint8](h, false, true) })
	opsF32         = newOpTable(floatOp[float32])
	opsF64         = newOpTable(floatOp[float64])
	opsC64         = newOpTable(complexOp[complex64])
	opsC128        = newOpTable(complexOp[complex128])
	opsFloatInt    = newOpTable(func(h handle) coll.Op[pairFI] {
		return pairOp(h, func(p *pairFI) float32 { return p.V }, func(p *pairFI) int32 { return p.L }, func(p *pairFI, v float32, l int32) { p.V, p.L = v, l })
	})
	opsDoubleInt = newOpTable(func(h handle) coll.Op[pairDI] {
		return pairOp(h, func(p *pairDI) float64 { return p.V }, func(p *pairDI) int32 { return p.L }, func(p *pairDI, v float64, l int32) { p.V, p.L = v, l })
	})
	opsLongInt = newOpTable(func(h handle) coll.Op[pairLI] {
		return pairOp(h, func(p *pairLI) int64 { return p.V }, func(p *pairLI) int32 { return p.L }, func(p *pairLI, v int64, l int32) { p.V, p.L = v, l })
	})
	ops2Int = newOpTable(func(h handle) coll.Op[pair2I] {
		return pairOp(h, func(p *pair2I) int32 { return p.V }, func(p *pair2I) int32 { return p.L }, func(p *pair2I, v int32, l int32) { p.V, p.L = v, l })
	})
	opsShortInt = newOpTable(func(h handle) coll.Op[pairSI] {
		return pairOp(h, func(p *pairSI) int16 { return p.V }, func(p *pairSI) int32 { return p.L }, func(p *pairSI, v int16, l int32) { p.V, p.L = v, l })
	})
	ops2Float = newOpTable(func(h handle) coll.Op[pair2F] {
		return pairOp(h, func(p *pair2F) float32 { return p.V }, func(p *pair2F) float32 { return p.L }, func(p *pair2F, v float32, l float32) { p.V, p.L = v, l })
	})
	ops2Double = newOpTable(func(h handle) coll.Op[pair2D] {
		return pairOp(h, func(p *pair2D) float64 { return p.V }, func(p *pair2D) float64 { return p.L }, func(p *pair2D, v float64, l float64) { p.V, p.L = v, l })
	})
	opsLong         = newOpTable(func(h handle) coll.Op[[16]byte] { return cOp[[16]byte](h, bLong) })
	opsCLong        = newOpTable(func(h handle) coll.Op[[32]byte] { return cOp[[32]byte](h, bCLong) })
	opsLongDoubleIn = newOpTable(func(h handle) coll.Op[[32]byte] { return cOp[[32]byte](h, bLongDoubleInt) })
)

// dispatch runs the reduction a for the Go type of kind k with op h;
// false if the op does not apply to the kind (MPI_ERR_OP). logical: the
// type is a logical one (only the logical ops apply).
func dispatch(a *redArgs, k basic, h handle, logical bool) (*ranks.Request, error, bool) {
	switch k {
	case bI8:
		return runRed(a, opsI8.get(h, logical))
	case bU8:
		return runRed(a, opsU8.get(h, logical))
	case bBool:
		return runRed(a, opsU8.logical.get(h))
	case bByte:
		return runRed(a, opsByte.get(h))
	case bI16:
		return runRed(a, opsI16.get(h, logical))
	case bU16:
		return runRed(a, opsU16.get(h, logical))
	case bI32, bWchar:
		return runRed(a, opsI32.get(h, logical))
	case bU32:
		return runRed(a, opsU32.get(h, logical))
	case bI64:
		return runRed(a, opsI64.get(h, logical))
	case bU64:
		return runRed(a, opsU64.get(h, logical))
	case bF32:
		return runRed(a, opsF32.get(h))
	case bF64:
		return runRed(a, opsF64.get(h))
	case bC64:
		return runRed(a, opsC64.get(h))
	case bC128:
		return runRed(a, opsC128.get(h))
	case bFloatInt:
		return runRed(a, opsFloatInt.get(h))
	case bDoubleInt:
		return runRed(a, opsDoubleInt.get(h))
	case bLongInt:
		return runRed(a, opsLongInt.get(h))
	case b2Int:
		return runRed(a, ops2Int.get(h))
	case bShortInt:
		return runRed(a, opsShortInt.get(h))
	case b2Float:
		return runRed(a, ops2Float.get(h))
	case b2Double:
		return runRed(a, ops2Double.get(h))
	case bLong:
		return runRed(a, opsLong.get(h))
	case bCLong:
		return runRed(a, opsCLong.get(h))
	case bLongDoubleInt:
		return runRed(a, opsLongDoubleIn.get(h))
	}
	return nil, nil, false
}
