package coll

import (
	"cmp"
	"unsafe"
)

// Op is a reduction: it combines in into inout element by element,
// inout[i] = inout[i] op in[i], where inout holds the contributions of
// lower ranks. Reductions apply ops in rank order (x0 op x1 op ... op
// xn-1), so an op need not be commutative; it must be associative, as MPI
// requires. The predefined ops are generic functions: pass coll.Sum[float64],
// coll.Max[int32], coll.Band[uint64], ... An op on a type it does not
// support does not compile. A user op is any function of this shape.
type Op[T any] func(inout, in []T)

// Number is the element types of Sum and Prod.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// Integer is the element types of the bitwise ops.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

// Sum is MPI_SUM.
func Sum[T Number](inout, in []T) {
	in = in[:len(inout)]
	if len(inout) >= 64 {
		// Long float vectors: the vectorized add (sum_amd64.go), when
		// the CPU has it. Named float types take the loop.
		var z T
		switch any(z).(type) {
		case float32:
			p, q := unsafe.Pointer(unsafe.SliceData(inout)), unsafe.Pointer(unsafe.SliceData(in))
			if addF32(unsafe.Slice((*float32)(p), len(inout)), unsafe.Slice((*float32)(q), len(in))) {
				return
			}
		case float64:
			p, q := unsafe.Pointer(unsafe.SliceData(inout)), unsafe.Pointer(unsafe.SliceData(in))
			if addF64(unsafe.Slice((*float64)(p), len(inout)), unsafe.Slice((*float64)(q), len(in))) {
				return
			}
		}
	}
	for i := range inout {
		inout[i] += in[i]
	}
}

// Prod is MPI_PROD.
func Prod[T Number](inout, in []T) {
	for i := range inout {
		inout[i] *= in[i]
	}
}

// Min is MPI_MIN (a NaN wins, as Go's min).
func Min[T cmp.Ordered](inout, in []T) {
	for i := range inout {
		inout[i] = min(inout[i], in[i])
	}
}

// Max is MPI_MAX (a NaN wins, as Go's max).
func Max[T cmp.Ordered](inout, in []T) {
	for i := range inout {
		inout[i] = max(inout[i], in[i])
	}
}

// Band is MPI_BAND.
func Band[T Integer](inout, in []T) {
	for i := range inout {
		inout[i] &= in[i]
	}
}

// Bor is MPI_BOR.
func Bor[T Integer](inout, in []T) {
	for i := range inout {
		inout[i] |= in[i]
	}
}

// Bxor is MPI_BXOR.
func Bxor[T Integer](inout, in []T) {
	for i := range inout {
		inout[i] ^= in[i]
	}
}

// Land is MPI_LAND.
func Land(inout, in []bool) {
	for i := range inout {
		inout[i] = inout[i] && in[i]
	}
}

// Lor is MPI_LOR.
func Lor(inout, in []bool) {
	for i := range inout {
		inout[i] = inout[i] || in[i]
	}
}

// Lxor is MPI_LXOR.
func Lxor(inout, in []bool) {
	for i := range inout {
		inout[i] = inout[i] != in[i]
	}
}

// ValLoc is a value and where it came from, for MinLoc and MaxLoc
// (MPI_DOUBLE_INT and friends).
type ValLoc[T cmp.Ordered] struct {
	Val T
	Loc int
}

// MinLoc is MPI_MINLOC: the smallest value, and the smallest location
// among equal ones.
func MinLoc[T cmp.Ordered](inout, in []ValLoc[T]) {
	for i := range inout {
		if in[i].Val < inout[i].Val || (in[i].Val == inout[i].Val && in[i].Loc < inout[i].Loc) {
			inout[i] = in[i]
		}
	}
}

// MaxLoc is MPI_MAXLOC: the largest value, and the smallest location
// among equal ones.
func MaxLoc[T cmp.Ordered](inout, in []ValLoc[T]) {
	for i := range inout {
		if in[i].Val > inout[i].Val || (in[i].Val == inout[i].Val && in[i].Loc < inout[i].Loc) {
			inout[i] = in[i]
		}
	}
}
