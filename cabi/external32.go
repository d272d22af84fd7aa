package main

/*
#include "cabi.h"
*/
import "C"

import (
	"encoding/binary"
	"runtime"
	"unsafe"
)

// External32: MPI_Pack_external and friends, in MPI's canonical data
// representation (MPI 4.1 section 15.5.2): every basic element big-endian,
// byte aligned, packed one after the other in type-map order, with the
// sizes of the standard's table (the native ones here, except MPI_WCHAR:
// 2 bytes there, 4 in C on Linux; and MPI_LONG and MPI_UNSIGNED_LONG: 4
// bytes there, 8 in C on LP64 Linux). A type's prims already list its basic
// elements in type-map order, so packing walks them element by element.
//
// The machines shmpi runs on (x86-64, arm64) are little-endian, so a
// big-endian value is the native bytes reversed. Long double is x87's
// 80-bit format on x86-64 and IEEE binary128 on arm64; external32 is
// binary128 with the same 15-bit exponent, so on x86-64 the 63 fraction
// bits move to the top of binary128's 112, and back with rounding to
// nearest even.

const datarepExternal32 = "external32"

// e32Size is the external32 size of one basic element of kind k.
func e32Size(k basic, size int64) int64 {
	switch k {
	case bWchar:
		return 2
	case bSLong, bULong:
		return 4
	}
	return size
}

// e32TypeSize is the external32 size of one element of t.
func (t *dtype) e32TypeSize() int64 {
	var n int64
	for _, p := range t.primList() {
		n += p.cnt * e32Size(p.k, p.size)
	}
	return n
}

func reverse(dst, src []byte) {
	n := len(src)
	for i := range n {
		dst[i] = src[n-1-i]
	}
}

// reverseParts reverses each of the parts of size bytes (a complex
// number's two halves).
func reverseParts(dst, src []byte, part int) {
	for o := 0; o < len(src); o += part {
		reverse(dst[o:o+part], src[o:o+part])
	}
}

var x87 = runtime.GOARCH == "amd64"

// longToE32 writes the native long double at src as big-endian binary128.
func longToE32(dst, src []byte) {
	if !x87 {
		reverse(dst[:16], src[:16])
		return
	}
	m := binary.LittleEndian.Uint64(src)
	se := binary.LittleEndian.Uint16(src[8:])
	frac := m &^ (1 << 63) // the explicit integer bit is implicit in binary128
	binary.BigEndian.PutUint64(dst, uint64(se)<<48|frac>>15)
	binary.BigEndian.PutUint64(dst[8:], frac<<49)
}

// longFromE32 reads big-endian binary128 into a native long double.
func longFromE32(dst, src []byte) {
	if !x87 {
		reverse(dst[:16], src[:16])
		return
	}
	hi := binary.BigEndian.Uint64(src)
	lo := binary.BigEndian.Uint64(src[8:])
	sign := uint16(hi>>48) & 0x8000
	exp := uint16(hi>>48) & 0x7fff
	frac := (hi&(1<<48-1))<<15 | lo>>49
	rest := lo & (1<<49 - 1)
	if exp == 0x7fff {
		if frac == 0 && rest != 0 {
			frac = 1 << 62 // a NaN whose payload is all in the dropped bits stays a NaN
		}
	} else if rest > 1<<48 || rest == 1<<48 && frac&1 == 1 {
		frac++
		if frac == 1<<63 { // carried into the exponent (up to infinity)
			frac = 0
			exp++
		}
	}
	m := frac
	if exp != 0 {
		m |= 1 << 63
	}
	binary.LittleEndian.PutUint64(dst, m)
	binary.LittleEndian.PutUint16(dst[8:], sign|exp)
	clear(dst[10:16])
}

// e32Encode writes one basic element (native bytes src) in external32.
func e32Encode(dst, src []byte, k basic) {
	switch k {
	case bI8, bU8, bBool, bByte:
		dst[0] = src[0]
	case bWchar:
		// Unicode in 16 bits: code points above U+FFFF do not fit.
		binary.BigEndian.PutUint16(dst, uint16(binary.LittleEndian.Uint32(src)))
	case bSLong, bULong:
		// The standard's 4 bytes: values beyond them keep their low 32
		// bits (MPI defines no 8-byte long in external32).
		binary.BigEndian.PutUint32(dst, uint32(binary.LittleEndian.Uint64(src)))
	case bLong:
		longToE32(dst, src)
	case bCLong:
		longToE32(dst, src)
		longToE32(dst[16:], src[16:])
	case bC64, bC128:
		reverseParts(dst, src, len(src)/2)
	case bOpaque:
		if len(src) == 4 || len(src) == 32 { // COMPLEX4, COMPLEX32
			reverseParts(dst, src, len(src)/2)
		} else {
			reverse(dst, src)
		}
	default:
		reverse(dst, src)
	}
}

// e32Decode reads one basic element from external32 into native bytes.
func e32Decode(dst, src []byte, k basic) {
	switch k {
	case bI8, bU8, bBool, bByte:
		dst[0] = src[0]
	case bWchar:
		binary.LittleEndian.PutUint32(dst, uint32(binary.BigEndian.Uint16(src)))
	case bSLong:
		binary.LittleEndian.PutUint64(dst, uint64(int64(int32(binary.BigEndian.Uint32(src)))))
	case bULong:
		binary.LittleEndian.PutUint64(dst, uint64(binary.BigEndian.Uint32(src)))
	case bLong:
		longFromE32(dst, src)
	case bCLong:
		longFromE32(dst, src)
		longFromE32(dst[16:], src[16:])
	case bC64, bC128:
		reverseParts(dst, src, len(src)/2)
	case bOpaque:
		if len(dst) == 4 || len(dst) == 32 {
			reverseParts(dst, src, len(dst)/2)
		} else {
			reverse(dst, src)
		}
	default:
		reverse(dst, src)
	}
}

// e32Walk calls f for each basic element of count elements of t at buf,
// with its native bytes and its external32 bytes in ext (in order).
func (t *dtype) e32Walk(buf unsafe.Pointer, count int64, ext []byte, f func(dst, src []byte, k basic)) {
	extent := t.extent()
	pos := int64(0)
	for i := int64(0); i < count; i++ {
		base := unsafe.Add(buf, i*extent)
		for _, p := range t.primList() {
			es := e32Size(p.k, p.size)
			for j := int64(0); j < p.cnt; j++ {
				native := unsafe.Slice((*byte)(unsafe.Add(base, p.off+j*p.size)), p.size)
				f(native, ext[pos:pos+es], p.k)
				pos += es
			}
		}
	}
}

// datarepArg checks the data representation: only external32 exists
// for packing (MPI 4.1 section 5.2.3).
func datarepArg(datarep *C.char, fname string) C.int {
	if datarep == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	if C.GoString(datarep) != datarepExternal32 {
		return failNone(MPI_ERR_UNSUPPORTED_DATAREP, fname)
	}
	return 0
}

func packExternal(datarep *C.char, in unsafe.Pointer, count int64, h C.uintptr_t, out unsafe.Pointer, outsize int64, position *C.int64_t, fname string) C.int {
	if r := datarepArg(datarep, fname); r != 0 {
		return r
	}
	t, r := typeArg(h, fname)
	if t == nil {
		return r
	}
	if position == nil || count < 0 || outsize < 0 || *position < 0 || (out == nil && outsize > 0) {
		return failNone(MPI_ERR_ARG, fname)
	}
	pos := int64(*position)
	n := count * t.e32TypeSize()
	if pos+n > outsize {
		return failNone(MPI_ERR_TRUNCATE, fname)
	}
	if n > 0 {
		dst := unsafe.Slice((*byte)(unsafe.Add(out, pos)), n)
		t.e32Walk(in, count, dst, func(native, ext []byte, k basic) { e32Encode(ext, native, k) })
	}
	*position = C.int64_t(pos + n)
	return 0
}

func unpackExternal(datarep *C.char, in unsafe.Pointer, insize int64, position *C.int64_t, out unsafe.Pointer, count int64, h C.uintptr_t, fname string) C.int {
	if r := datarepArg(datarep, fname); r != 0 {
		return r
	}
	t, r := typeArg(h, fname)
	if t == nil {
		return r
	}
	if position == nil || count < 0 || insize < 0 || *position < 0 {
		return failNone(MPI_ERR_ARG, fname)
	}
	pos := int64(*position)
	n := count * t.e32TypeSize()
	if pos+n > insize {
		return failNone(MPI_ERR_TRUNCATE, fname)
	}
	if n > 0 {
		src := unsafe.Slice((*byte)(unsafe.Add(in, pos)), n)
		t.e32Walk(out, count, src, func(native, ext []byte, k basic) { e32Decode(native, ext, k) })
	}
	*position = C.int64_t(pos + n)
	return 0
}

func packExternalSize(datarep *C.char, count int64, h C.uintptr_t, fname string) (int64, C.int) {
	if r := datarepArg(datarep, fname); r != 0 {
		return 0, r
	}
	t, r := typeArg(h, fname)
	if t == nil {
		return 0, r
	}
	if count < 0 {
		return 0, failNone(MPI_ERR_COUNT, fname)
	}
	return count * t.e32TypeSize(), 0
}

//export shmpi_MPI_Pack_external
func shmpi_MPI_Pack_external(datarep *C.char, in unsafe.Pointer, count C.int, h C.uintptr_t, out unsafe.Pointer, outsize C.int64_t, position *C.int64_t) C.int {
	return packExternal(datarep, in, int64(count), h, out, int64(outsize), position, "MPI_Pack_external")
}

//export shmpi_MPI_Pack_external_c
func shmpi_MPI_Pack_external_c(datarep *C.char, in unsafe.Pointer, count C.int64_t, h C.uintptr_t, out unsafe.Pointer, outsize C.int64_t, position *C.int64_t) C.int {
	return packExternal(datarep, in, int64(count), h, out, int64(outsize), position, "MPI_Pack_external_c")
}

//export shmpi_MPI_Unpack_external
func shmpi_MPI_Unpack_external(datarep *C.char, in unsafe.Pointer, insize C.int64_t, position *C.int64_t, out unsafe.Pointer, count C.int, h C.uintptr_t) C.int {
	return unpackExternal(datarep, in, int64(insize), position, out, int64(count), h, "MPI_Unpack_external")
}

//export shmpi_MPI_Unpack_external_c
func shmpi_MPI_Unpack_external_c(datarep *C.char, in unsafe.Pointer, insize C.int64_t, position *C.int64_t, out unsafe.Pointer, count C.int64_t, h C.uintptr_t) C.int {
	return unpackExternal(datarep, in, int64(insize), position, out, int64(count), h, "MPI_Unpack_external_c")
}

//export shmpi_MPI_Pack_external_size
func shmpi_MPI_Pack_external_size(datarep *C.char, count C.int, h C.uintptr_t, size *C.int64_t) C.int {
	if size == nil {
		return failNone(MPI_ERR_ARG, "MPI_Pack_external_size")
	}
	n, r := packExternalSize(datarep, int64(count), h, "MPI_Pack_external_size")
	if r == 0 {
		*size = C.int64_t(n)
	}
	return r
}

//export shmpi_MPI_Pack_external_size_c
func shmpi_MPI_Pack_external_size_c(datarep *C.char, count C.int64_t, h C.uintptr_t, size *C.int64_t) C.int {
	if size == nil {
		return failNone(MPI_ERR_ARG, "MPI_Pack_external_size_c")
	}
	n, r := packExternalSize(datarep, int64(count), h, "MPI_Pack_external_size_c")
	if r == 0 {
		*size = C.int64_t(n)
	}
	return r
}
