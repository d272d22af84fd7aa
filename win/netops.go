package win

import (
	"encoding/binary"
	"reflect"
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// Accumulates across nodes with a predefined op (span.go) run at the
// target's server, as Open MPI's and MPICH's active-message one-sided
// components do: one message (a round trip with a result) instead of the
// accumulate lock's round trip, a Get and a Put. The server applies the
// op only while no origin holds the accumulate lock (an accumulate with
// another op takes it), so the two kinds stay atomic with each other. An
// op is known by its element type and its function (the code pointer of
// coll.Sum[int64], say), numbered in the order this file registers them,
// which every process of a job runs alike; any other op (a user's
// function, MinLoc) is applied at the origin under the lock.

// netType is one element type's registered ops.
type netType struct {
	id    int
	size  int
	ops   map[uintptr]int              // an op's code pointer: its index in apply
	apply []func(dst, src []byte) bool // false: not a whole number of elements
	funcs []any                        // the coll.Op[T] values, by index
}

// netOpNames are the names of the registered ops, in the order regOps
// takes them (floats stop after max, complex numbers after prod).
var netOpNames = []string{"replace", "no_op", "sum", "prod", "min", "max", "band", "bor", "bxor"}

var (
	netTypeOf   = map[reflect.Type]*netType{}
	netTypeList []*netType
)

func regOps[T any](fs ...coll.Op[T]) {
	var z T
	sz := int(unsafe.Sizeof(z))
	nt := &netType{id: len(netTypeList), size: sz, ops: map[uintptr]int{}}
	for i, f := range fs {
		nt.ops[reflect.ValueOf(f).Pointer()] = i
		nt.funcs = append(nt.funcs, f)
		nt.apply = append(nt.apply, func(dst, src []byte) bool {
			if len(dst) != len(src) || len(dst)%sz != 0 {
				return false
			}
			f(bytesAs[T](dst), bytesAs[T](src))
			return true
		})
	}
	netTypeOf[reflect.TypeFor[T]()] = nt
	netTypeList = append(netTypeList, nt)
}

// The registered ops, each named at a call site of its own: a function
// value made inside a generic function (coll.Sum[T]) is a closure of that
// site, whose code pointer no other site shares, so the table cannot be
// built generically. A program passing coll.Sum (or coll.Sum[int64]) to
// Accumulate passes this same function; an op made in generic code (as
// package cabi's are) is applied at the origin.
func init() {
	regOps(Replace[int], NoOp[int], coll.Sum[int], coll.Prod[int], coll.Min[int], coll.Max[int], coll.Band[int], coll.Bor[int], coll.Bxor[int])
	regOps(Replace[int8], NoOp[int8], coll.Sum[int8], coll.Prod[int8], coll.Min[int8], coll.Max[int8], coll.Band[int8], coll.Bor[int8], coll.Bxor[int8])
	regOps(Replace[int16], NoOp[int16], coll.Sum[int16], coll.Prod[int16], coll.Min[int16], coll.Max[int16], coll.Band[int16], coll.Bor[int16], coll.Bxor[int16])
	regOps(Replace[int32], NoOp[int32], coll.Sum[int32], coll.Prod[int32], coll.Min[int32], coll.Max[int32], coll.Band[int32], coll.Bor[int32], coll.Bxor[int32])
	regOps(Replace[int64], NoOp[int64], coll.Sum[int64], coll.Prod[int64], coll.Min[int64], coll.Max[int64], coll.Band[int64], coll.Bor[int64], coll.Bxor[int64])
	regOps(Replace[uint], NoOp[uint], coll.Sum[uint], coll.Prod[uint], coll.Min[uint], coll.Max[uint], coll.Band[uint], coll.Bor[uint], coll.Bxor[uint])
	regOps(Replace[uint8], NoOp[uint8], coll.Sum[uint8], coll.Prod[uint8], coll.Min[uint8], coll.Max[uint8], coll.Band[uint8], coll.Bor[uint8], coll.Bxor[uint8])
	regOps(Replace[uint16], NoOp[uint16], coll.Sum[uint16], coll.Prod[uint16], coll.Min[uint16], coll.Max[uint16], coll.Band[uint16], coll.Bor[uint16], coll.Bxor[uint16])
	regOps(Replace[uint32], NoOp[uint32], coll.Sum[uint32], coll.Prod[uint32], coll.Min[uint32], coll.Max[uint32], coll.Band[uint32], coll.Bor[uint32], coll.Bxor[uint32])
	regOps(Replace[uint64], NoOp[uint64], coll.Sum[uint64], coll.Prod[uint64], coll.Min[uint64], coll.Max[uint64], coll.Band[uint64], coll.Bor[uint64], coll.Bxor[uint64])
	regOps(Replace[uintptr], NoOp[uintptr], coll.Sum[uintptr], coll.Prod[uintptr], coll.Min[uintptr], coll.Max[uintptr], coll.Band[uintptr], coll.Bor[uintptr], coll.Bxor[uintptr])
	regOps(Replace[float32], NoOp[float32], coll.Sum[float32], coll.Prod[float32], coll.Min[float32], coll.Max[float32])
	regOps(Replace[float64], NoOp[float64], coll.Sum[float64], coll.Prod[float64], coll.Min[float64], coll.Max[float64])
	regOps(Replace[complex64], NoOp[complex64], coll.Sum[complex64], coll.Prod[complex64])
	regOps(Replace[complex128], NoOp[complex128], coll.Sum[complex128], coll.Prod[complex128])
	netBytes = &netType{id: len(netTypeList), size: 1, apply: []func(dst, src []byte) bool{
		func(dst, src []byte) bool { return len(dst) == len(src) && copy(dst, src) >= 0 },
		func(dst, src []byte) bool { return len(dst) == len(src) },
	}}
	netTypeList = append(netTypeList, netBytes)
	if len(netTypeList) > 255 {
		panic("win: too many element types for a request's op code")
	}
}

// Replace and NoOp of any other element type (a C layer's MINLOC pairs,
// a program's structs) need no arithmetic: the server applies them to
// the bytes (netBytes: its ops replace, then no_op). They are known by
// the function values PredefinedOp made for such types (byteOps: code
// pointer to op index); whatever the type, such a function copies, or
// leaves, the elements' bytes.
var (
	netBytes *netType
	byteOps  sync.Map // uintptr → int
)

// netOpOf returns f's code for the server (type index << 8 | op index),
// or false if f is not a registered op of T.
func netOpOf[T any](f coll.Op[T]) (int64, bool) {
	nt := netTypeOf[reflect.TypeFor[T]()]
	if nt == nil {
		i, ok := byteOps.Load(reflect.ValueOf(f).Pointer())
		if !ok {
			return 0, false
		}
		return int64(netBytes.id)<<8 | int64(i.(int)), true
	}
	i, ok := nt.ops[reflect.ValueOf(f).Pointer()]
	return int64(nt.id)<<8 | int64(i), ok
}

// PredefinedOp returns the op named name ("sum", "prod", "min", "max",
// "band", "bor", "bxor": package coll's; "replace", "no_op": Replace and
// NoOp) for elements of type T, if T is a predeclared numeric type that
// has it. A window across nodes applies such an op at the target (one
// message, where other ops take a lock and two round trips), knowing it
// by its function; coll.Sum named at a call site is the same function,
// but coll.Sum[T] inside a generic function is a closure of that site:
// generic code gets the known one here. For any other T, "replace" and
// "no_op" give functions that such a window applies at the target too.
func PredefinedOp[T any](name string) (coll.Op[T], bool) {
	nt := netTypeOf[reflect.TypeFor[T]()]
	if nt == nil {
		var f coll.Op[T]
		switch name {
		case "replace":
			f = Replace[T]
		case "no_op":
			f = NoOp[T]
		default:
			return nil, false
		}
		i := 0
		if name == "no_op" {
			i = 1
		}
		byteOps.Store(reflect.ValueOf(f).Pointer(), i)
		return f, true
	}
	for i, n := range netOpNames[:len(nt.funcs)] {
		if n == name {
			f, ok := nt.funcs[i].(coll.Op[T])
			return f, ok
		}
	}
	return nil, false
}

// netApplier is the server's function for an op code, or nil.
func netApplier(code int64) func(dst, src []byte) bool {
	t, i := int(code>>8), int(code&0xff)
	if t < 0 || t >= len(netTypeList) || i >= len(netTypeList[t].apply) {
		return nil
	}
	return netTypeList[t].apply[i]
}

func bytesAs[T any](b []byte) []T {
	var z T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}

// accumulateNetOp is accumulate with a registered op (code) in a window
// across nodes: one message to the target's server, or a round trip
// when the old values are wanted (result).
func accumulateNetOp[T any](w *Win, op string, src, result []T, target int, at where, code int64) error {
	data := bytesOf(src)
	if result == nil {
		w.net.dirty[target].Store(true)
		_, err := w.netIssue(op, target, reqAccOp|code<<reqCodeShift, uint64(at.addr), len(data), data, nil)
		return err
	}
	sz := elemSize[T]()
	buf := make([]T, (len(data)+8+sz-1)/sz) // the old values, then a code
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), len(data)+8)
	if err := w.netReplyOf(op, target, reqGetAccOp|code<<reqCodeShift, at.addr, data, raw); err != nil {
		return err
	}
	copy(result, buf[:len(src)])
	return nil
}

// netReplyOf makes a request of kind with data whose reply is
// len(reply)-8 bytes and a code (a code alone if refused).
func (w *Win) netReplyOf(op string, t int, kind int64, off uintptr, data, reply []byte) error {
	k, err := w.netCall(op, t, kind, uint64(off), len(data), data, reply)
	if err != nil || k == len(reply) {
		return err
	}
	if k != 8 {
		return w.errf(ranks.ErrOther, op, t, "a reply of %d bytes", k)
	}
	return w.codeErr(op, t, int64(binary.LittleEndian.Uint64(reply)))
}

// casNetOp is CompareAndSwap at the target's server: a round trip.
func casNetOp[T any](w *Win, compare, swap T, target int, at where) (T, error) {
	const op = "Win.CompareAndSwap"
	var z T
	sz := elemSize[T]()
	buf := make([]T, (2*sz+8+sz-1)/sz)
	buf[0], buf[1] = compare, swap
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), 2*sz+8)
	reply := make([]byte, sz+8)
	if err := w.netReplyOf(op, target, reqCAS, at.addr, raw[:2*sz], reply); err != nil {
		return z, err
	}
	return *(*T)(unsafe.Pointer(unsafe.SliceData(reply))), nil
}
