package main

/*
#include "cabi.h"
*/
import "C"

import (
	"math"
	"strings"
	"sync"
	"unsafe"
)

// Datatypes. A type is compiled, when it is built, into the list of its
// data's (offset, length) runs for one element, in type-map order with
// adjacent runs merged, and the list of its basic elements (prims), for
// MPI_Get_elements and reductions. A buffer of count elements whose type
// is one run as long as its extent is contiguous, and messages use it in
// place (zero copy); any other is packed into, or unpacked from, a
// contiguous staging buffer by walking the runs.

// basic is a predefined element kind.
type basic uint8

const (
	bNone basic = iota
	bI8
	bU8
	bI16
	bU16
	bI32
	bU32
	bI64
	bU64
	bF32
	bF64
	bC64
	bC128
	bBool  // C _Bool, C++ bool: 0 or 1
	bByte  // MPI_BYTE, MPI_PACKED: bitwise ops only
	bLong  // long double (x87, 16 bytes): reduced in C
	bCLong // complex long double (32 bytes): reduced in C
	bFloatInt
	bDoubleInt
	bLongInt
	b2Int
	bShortInt
	bLongDoubleInt // reduced in C
	b2Float
	b2Double
	bOpaque // REAL2, REAL16, INTEGER16, COMPLEX4, COMPLEX32: moved, never reduced
	bWchar  // wchar_t: reduced as bI32; its own kind because external32 gives it 2 bytes
	bSLong  // C long: reduced as bI64; its own kind because external32 gives it 4 bytes
	bULong  // C unsigned long: reduced as bU64; 4 bytes in external32 too
)

// arith is the kind reductions use for elements of kind k: C long is
// int64 here, whatever external32 makes of it.
func arith(k basic) basic {
	switch k {
	case bSLong:
		return bI64
	case bULong:
		return bU64
	}
	return k
}

type run struct{ off, n int64 }

// prim is count basic elements of kind k, packed one after the other
// from off.
type prim struct {
	k        basic
	size     int64 // of one element
	off, cnt int64
}

type dtype struct {
	size           int64 // bytes of data in one element
	lb, ub         int64 // extent = ub - lb
	trueLB, trueUB int64
	align          int64 // the largest alignment of its basic elements (struct padding)
	explicitBounds bool  // lb/ub set by MPI_Type_create_resized (no struct padding)
	runs           []run
	prims          []prim
	nprim          int64 // basic elements per element
	red            basic // the kind reductions use (bNone: mixed)
	committed      bool
	predef         bool
	combiner       int
	ints           []int32
	aints          []int64
	kids           []handle
	mu             sync.Mutex
	name           string
	attrSet
	contig           bool   // one run of extent bytes: a buffer is data from its first run's offset
	firstOff         int64  // runs[0].off
	pairPredef       bool   // a predefined pair type (MPI_DOUBLE_INT...): reduced as its C struct
	pair             *dtype // the predefined pair type this type is made of only, if any (accumulates of MINLOC/MAXLOC)
	pairSize, valOff int64

	// A type whose runs and prims would number more than
	// maxEagerEntries keeps its constructor's blocks instead (ops) and
	// lists them at the first use that needs them (runList, primList):
	// its size, bounds and counts of basic elements are known without
	// them, so that a vector of 2^30 blocks costs nothing until data
	// moves. Such a type is never contig.
	ops     []blockOp
	flat    sync.Once
	entries int64 // len(runs)+len(prims), or what they will be

	// counts: the contents of a type made by a large-count constructor
	// with a count that does not fit an int (MPI 4.0's large counts, in
	// the order of MPI_Type_get_contents_c), nil otherwise.
	counts []int64
}

// blockOp is a constructor's block: count copies, stride bytes apart, of
// n consecutive elements of old at byte displacement disp.
type blockOp struct {
	old                    *dtype
	n, disp, count, stride int64
}

// maxEagerEntries bounds the runs and prims a constructor lists at once
// (16 MiB of them at most); a larger type lists them when first used.
const maxEagerEntries = 1 << 20

// runList is t's runs, listed now if t deferred them.
func (t *dtype) runList() []run {
	if t.ops != nil {
		t.flat.Do(t.flatten)
	}
	return t.runs
}

// primList is t's prims, listed now if t deferred them.
func (t *dtype) primList() []prim {
	if t.ops != nil {
		t.flat.Do(t.flatten)
	}
	return t.prims
}

// flatten lists the runs and prims of a type that deferred them.
func (t *dtype) flatten() { t.runs, t.prims = listBlocks(t.ops) }

// listBlocks lists the runs and prims of a constructor's blocks.
func listBlocks(ops []blockOp) (runs []run, prims []prim) {
	for _, op := range ops {
		for i := int64(0); i < op.count; i++ {
			runs, prims = appendBlock(runs, prims, op.old, op.n, op.disp+i*op.stride)
		}
	}
	return runs, prims
}

func (t *dtype) extent() int64 { return t.ub - t.lb }

// finish computes the derived fields once runs and prims are set. A type
// that deferred them has its counts from its builder (done) and is not
// contig.
func (t *dtype) finish() {
	if t.ops != nil {
		t.contig = false
		return
	}
	t.entries = int64(len(t.runs) + len(t.prims))
	t.contig = len(t.runs) == 1 && t.runs[0].n == t.extent() || len(t.runs) == 0 && t.extent() == 0
	if len(t.runs) > 0 {
		t.firstOff = t.runs[0].off
	}
	t.nprim = 0
	t.red = bNone
	for i, p := range t.prims {
		t.nprim += p.cnt
		if i == 0 {
			t.red = arith(p.k)
		} else if arith(p.k) != t.red {
			t.red = bNone
		}
	}
}

// publish writes t's C entry (slot idx, generation gen).
func (t *dtype) publish(idx uint32, gen uint32) {
	e := typeEnt(idx)
	e.size, e.lb, e.extent = C.int64_t(t.size), C.int64_t(t.lb), C.int64_t(t.extent())
	e.true_lb, e.true_extent = C.int64_t(t.trueLB), C.int64_t(t.trueUB-t.trueLB)
	e.flags = t.cFlags()
	publishGen(&e.gen, gen)
}

// cFlags are t's flags in its C entry: SHMPI_TYPE_PLAIN if the fast
// paths may move its data as count*size bytes from the buffer's address.
func (t *dtype) cFlags() C.uint32_t {
	if t.committed && (t.contig && t.firstOff == 0 || t.size == 0) {
		return C.SHMPI_TYPE_PLAIN
	}
	return 0
}

type predefType struct {
	h     handle
	k     basic
	size  int64
	parts []prim // for pair types: the two members
	ext   int64
	name  string
}

func p2(k1 basic, s1, o1 int64, k2 basic, s2, o2 int64) []prim {
	return []prim{{k: k1, size: s1, off: o1, cnt: 1}, {k: k2, size: s2, off: o2, cnt: 1}}
}

// The predefined types on LP64 Linux (x86-64 and arm64; long double is
// the 16-byte x87 type of x86-64).
var predefTypes = []predefType{
	{MPI_AINT, bI64, 8, nil, 8, "MPI_AINT"},
	{MPI_COUNT, bI64, 8, nil, 8, "MPI_COUNT"},
	{MPI_OFFSET, bI64, 8, nil, 8, "MPI_OFFSET"},
	{MPI_PACKED, bByte, 1, nil, 1, "MPI_PACKED"},
	{MPI_SHORT, bI16, 2, nil, 2, "MPI_SHORT"},
	{MPI_INT, bI32, 4, nil, 4, "MPI_INT"},
	{MPI_LONG, bSLong, 8, nil, 8, "MPI_LONG"},
	{MPI_LONG_LONG, bI64, 8, nil, 8, "MPI_LONG_LONG"},
	{MPI_UNSIGNED_SHORT, bU16, 2, nil, 2, "MPI_UNSIGNED_SHORT"},
	{MPI_UNSIGNED, bU32, 4, nil, 4, "MPI_UNSIGNED"},
	{MPI_UNSIGNED_LONG, bULong, 8, nil, 8, "MPI_UNSIGNED_LONG"},
	{MPI_UNSIGNED_LONG_LONG, bU64, 8, nil, 8, "MPI_UNSIGNED_LONG_LONG"},
	{MPI_FLOAT, bF32, 4, nil, 4, "MPI_FLOAT"},
	{MPI_C_FLOAT_COMPLEX, bC64, 8, nil, 8, "MPI_C_FLOAT_COMPLEX"},
	{MPI_CXX_FLOAT_COMPLEX, bC64, 8, nil, 8, "MPI_CXX_FLOAT_COMPLEX"},
	{MPI_DOUBLE, bF64, 8, nil, 8, "MPI_DOUBLE"},
	{MPI_C_DOUBLE_COMPLEX, bC128, 16, nil, 16, "MPI_C_DOUBLE_COMPLEX"},
	{MPI_CXX_DOUBLE_COMPLEX, bC128, 16, nil, 16, "MPI_CXX_DOUBLE_COMPLEX"},
	{MPI_LOGICAL, bI32, 4, nil, 4, "MPI_LOGICAL"},
	{MPI_INTEGER, bI32, 4, nil, 4, "MPI_INTEGER"},
	{MPI_REAL, bF32, 4, nil, 4, "MPI_REAL"},
	{MPI_COMPLEX, bC64, 8, nil, 8, "MPI_COMPLEX"},
	{MPI_DOUBLE_PRECISION, bF64, 8, nil, 8, "MPI_DOUBLE_PRECISION"},
	{MPI_DOUBLE_COMPLEX, bC128, 16, nil, 16, "MPI_DOUBLE_COMPLEX"},
	{MPI_CHARACTER, bI8, 1, nil, 1, "MPI_CHARACTER"},
	{MPI_LONG_DOUBLE, bLong, 16, nil, 16, "MPI_LONG_DOUBLE"},
	{MPI_C_LONG_DOUBLE_COMPLEX, bCLong, 32, nil, 32, "MPI_C_LONG_DOUBLE_COMPLEX"},
	{MPI_CXX_LONG_DOUBLE_COMPLEX, bCLong, 32, nil, 32, "MPI_CXX_LONG_DOUBLE_COMPLEX"},
	{MPI_FLOAT_INT, bFloatInt, 8, p2(bF32, 4, 0, bI32, 4, 4), 8, "MPI_FLOAT_INT"},
	{MPI_DOUBLE_INT, bDoubleInt, 12, p2(bF64, 8, 0, bI32, 4, 8), 16, "MPI_DOUBLE_INT"},
	{MPI_LONG_INT, bLongInt, 12, p2(bSLong, 8, 0, bI32, 4, 8), 16, "MPI_LONG_INT"},
	{MPI_2INT, b2Int, 8, p2(bI32, 4, 0, bI32, 4, 4), 8, "MPI_2INT"},
	{MPI_SHORT_INT, bShortInt, 6, p2(bI16, 2, 0, bI32, 4, 4), 8, "MPI_SHORT_INT"},
	{MPI_LONG_DOUBLE_INT, bLongDoubleInt, 20, p2(bLong, 16, 0, bI32, 4, 16), 32, "MPI_LONG_DOUBLE_INT"},
	{MPI_2REAL, b2Float, 8, p2(bF32, 4, 0, bF32, 4, 4), 8, "MPI_2REAL"},
	{MPI_2DOUBLE_PRECISION, b2Double, 16, p2(bF64, 8, 0, bF64, 8, 8), 16, "MPI_2DOUBLE_PRECISION"},
	{MPI_2INTEGER, b2Int, 8, p2(bI32, 4, 0, bI32, 4, 4), 8, "MPI_2INTEGER"},
	{MPI_C_BOOL, bBool, 1, nil, 1, "MPI_C_BOOL"},
	{MPI_CXX_BOOL, bBool, 1, nil, 1, "MPI_CXX_BOOL"},
	{MPI_WCHAR, bWchar, 4, nil, 4, "MPI_WCHAR"},
	{MPI_INT8_T, bI8, 1, nil, 1, "MPI_INT8_T"},
	{MPI_UINT8_T, bU8, 1, nil, 1, "MPI_UINT8_T"},
	{MPI_CHAR, bI8, 1, nil, 1, "MPI_CHAR"},
	{MPI_SIGNED_CHAR, bI8, 1, nil, 1, "MPI_SIGNED_CHAR"},
	{MPI_UNSIGNED_CHAR, bU8, 1, nil, 1, "MPI_UNSIGNED_CHAR"},
	{MPI_BYTE, bByte, 1, nil, 1, "MPI_BYTE"},
	{MPI_INT16_T, bI16, 2, nil, 2, "MPI_INT16_T"},
	{MPI_UINT16_T, bU16, 2, nil, 2, "MPI_UINT16_T"},
	{MPI_INT32_T, bI32, 4, nil, 4, "MPI_INT32_T"},
	{MPI_UINT32_T, bU32, 4, nil, 4, "MPI_UINT32_T"},
	{MPI_INT64_T, bI64, 8, nil, 8, "MPI_INT64_T"},
	{MPI_UINT64_T, bU64, 8, nil, 8, "MPI_UINT64_T"},
	{MPI_LOGICAL1, bI8, 1, nil, 1, "MPI_LOGICAL1"},
	{MPI_INTEGER1, bI8, 1, nil, 1, "MPI_INTEGER1"},
	{MPI_LOGICAL2, bI16, 2, nil, 2, "MPI_LOGICAL2"},
	{MPI_INTEGER2, bI16, 2, nil, 2, "MPI_INTEGER2"},
	{MPI_REAL2, bOpaque, 2, nil, 2, "MPI_REAL2"},
	{MPI_LOGICAL4, bI32, 4, nil, 4, "MPI_LOGICAL4"},
	{MPI_INTEGER4, bI32, 4, nil, 4, "MPI_INTEGER4"},
	{MPI_REAL4, bF32, 4, nil, 4, "MPI_REAL4"},
	{MPI_COMPLEX4, bOpaque, 4, nil, 4, "MPI_COMPLEX4"},
	{MPI_LOGICAL8, bI64, 8, nil, 8, "MPI_LOGICAL8"},
	{MPI_INTEGER8, bI64, 8, nil, 8, "MPI_INTEGER8"},
	{MPI_REAL8, bF64, 8, nil, 8, "MPI_REAL8"},
	{MPI_COMPLEX8, bC64, 8, nil, 8, "MPI_COMPLEX8"},
	{MPI_LOGICAL16, bOpaque, 16, nil, 16, "MPI_LOGICAL16"},
	{MPI_INTEGER16, bOpaque, 16, nil, 16, "MPI_INTEGER16"},
	{MPI_REAL16, bOpaque, 16, nil, 16, "MPI_REAL16"},
	{MPI_COMPLEX16, bC128, 16, nil, 16, "MPI_COMPLEX16"},
	{MPI_COMPLEX32, bOpaque, 32, nil, 32, "MPI_COMPLEX32"},
}

// isLogical says whether h is a logical type (Fortran LOGICAL, C and C++
// bool): only the logical ops apply. A switch, not a map: reductions ask
// on every call.
func isLogical(h handle) bool {
	switch h {
	case MPI_LOGICAL, MPI_LOGICAL1, MPI_LOGICAL2, MPI_LOGICAL4, MPI_LOGICAL8, MPI_C_BOOL, MPI_CXX_BOOL:
		return true
	}
	return false
}

func init() {
	for _, p := range predefTypes {
		t := &dtype{size: p.size, ub: p.ext, trueUB: p.size, committed: true, predef: true, combiner: MPI_COMBINER_NAMED, name: p.name}
		t.align = min(p.size, 16)
		if strings.Contains(p.name, "COMPLEX") {
			// A complex number is aligned as its real part (C11's
			// float _Complex: 4), as struct padding must be.
			t.align = max(1, p.size/2)
		}
		if p.parts != nil {
			t.prims = p.parts
			t.runs = nil
			for _, q := range p.parts {
				t.runs = appendRun(t.runs, run{q.off, q.size})
			}
			t.trueUB = p.parts[1].off + p.parts[1].size
			t.pairPredef = true
			t.align = p.parts[0].size
		} else {
			t.prims = []prim{{k: p.k, size: p.size, cnt: 1}}
			t.runs = []run{{0, p.size}}
		}
		t.finish()
		if p.parts != nil {
			t.red = p.k
			t.pair = t
		}
		types.predef(p.h, t)
		t.publish(uint32(p.h-0x200), 1)
	}
}

func appendRun(rs []run, r run) []run {
	if r.n == 0 {
		return rs
	}
	if n := len(rs); n > 0 && rs[n-1].off+rs[n-1].n == r.off {
		rs[n-1].n += r.n
		return rs
	}
	return append(rs, r)
}

func appendPrim(ps []prim, p prim) []prim {
	if p.cnt == 0 {
		return ps
	}
	if n := len(ps); n > 0 {
		q := &ps[n-1]
		if q.k == p.k && q.size == p.size && q.off+q.cnt*q.size == p.off {
			q.cnt += p.cnt
			return ps
		}
	}
	return append(ps, p)
}

func getType(h handle) *dtype {
	t := types.get(h)
	if t == nil {
		return nil
	}
	return *t
}

// builder accumulates a new type from blocks of old types: their
// bounds, size and counts at once, the blocks themselves as ops, listed
// as runs and prims by done unless there would be too many.
type builder struct {
	t       *dtype
	first   bool
	ops     []blockOp
	entries int64 // the runs and prims the ops would list, at most
	redSet  bool  // a block with basic elements was added (t.red is its kind)
}

func newBuilder() *builder {
	return &builder{t: &dtype{red: bNone}, first: true}
}

// add appends n copies of old at byte displacement disp.
func (b *builder) add(old *dtype, n int64, disp int64) { b.addStrided(old, n, disp, 1, 0) }

// addStrided appends count blocks, stride bytes apart, of n copies of old
// each, the first at byte displacement disp (a vector's blocks).
func (b *builder) addStrided(old *dtype, n, disp, count, stride int64) {
	if n <= 0 || count <= 0 {
		return
	}
	t := b.t
	if b.first {
		t.pair = old.pair
	} else if t.pair != old.pair {
		t.pair = nil
	}
	ext := old.extent()
	span := (count - 1) * stride
	lb := disp + min(0, span) + old.lb + min(0, (n-1)*ext)
	ub := disp + max(0, span) + old.ub + max(0, (n-1)*ext)
	tlb := disp + min(0, span) + old.trueLB + min(0, (n-1)*ext)
	tub := disp + max(0, span) + old.trueUB + max(0, (n-1)*ext)
	if b.first {
		t.lb, t.ub, t.trueLB, t.trueUB = lb, ub, tlb, tub
		b.first = false
	} else {
		t.lb, t.ub = min(t.lb, lb), max(t.ub, ub)
		t.trueLB, t.trueUB = min(t.trueLB, tlb), max(t.trueUB, tub)
	}
	t.size += count * n * old.size
	t.align = max(t.align, old.align)
	// The kind reductions use: that of every basic element, or bNone (a
	// predefined pair's two members differ).
	t.nprim += count * n * old.nprim
	if old.nprim > 0 {
		k := old.red
		if old.pairPredef {
			k = bNone
		}
		if !b.redSet {
			t.red, b.redSet = k, true
		} else if t.red != k {
			t.red = bNone
		}
	}
	b.ops = append(b.ops, blockOp{old, n, disp, count, stride})
	per := int64(2) // a dense old type: a run and a prim per block, or fewer
	if !old.dense() {
		per = satMul(n, max(old.entries, 2))
	}
	b.entries = satAdd(b.entries, satMul(count, per))
}

// dense says whether t's elements lie back to back as one run of one
// kind, so that n of them are one run and one prim.
func (t *dtype) dense() bool {
	return t.ops == nil && len(t.runs) == 1 && t.runs[0].n == t.extent() &&
		len(t.prims) == 1 && t.prims[0].size*t.prims[0].cnt == t.extent() && t.prims[0].off == t.runs[0].off
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// appendBlock appends the runs and prims of n copies of old at byte
// displacement disp.
func appendBlock(runs []run, prims []prim, old *dtype, n int64, disp int64) ([]run, []prim) {
	ext := old.extent()
	oruns, oprims := old.runList(), old.primList()
	dense := len(oruns) == 1 && oruns[0].n == ext
	if dense {
		runs = appendRun(runs, run{disp + oruns[0].off, n * ext})
	}
	densePrim := len(oprims) == 1 && oprims[0].size*oprims[0].cnt == ext && oprims[0].off == oruns[0].off
	if densePrim && dense {
		p := oprims[0]
		prims = appendPrim(prims, prim{k: p.k, size: p.size, off: disp + p.off, cnt: n * p.cnt})
	}
	for i := int64(0); i < n && !(dense && densePrim); i++ {
		base := disp + i*ext
		if !dense {
			for _, r := range oruns {
				runs = appendRun(runs, run{base + r.off, r.n})
			}
		}
		for _, p := range oprims {
			prims = appendPrim(prims, prim{k: p.k, size: p.size, off: base + p.off, cnt: p.cnt})
		}
	}
	return runs, prims
}

// done makes the builder's type; an empty one has zero bounds. Its runs
// and prims are listed now, unless there would be more than
// maxEagerEntries of them.
func (b *builder) done(combiner int) *dtype {
	t := b.t
	t.combiner = combiner
	if b.entries > maxEagerEntries {
		t.ops, t.entries = b.ops, b.entries
		t.finish()
		return t
	}
	t.runs, t.prims = listBlocks(b.ops)
	t.finish()
	return t
}

// register gives t a handle.
func registerType(t *dtype) handle {
	h, _ := types.add(t)
	if h == 0 {
		return 0
	}
	t.publish(types.slotOf(h), uint32(h>>32))
	return h
}

func typeResult(t *dtype, out *C.uintptr_t, fname string) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	h := registerType(t)
	if h == 0 {
		return failNone(MPI_ERR_INTERN, fname)
	}
	*out = C.uintptr_t(h)
	return 0
}

func typeArg(h C.uintptr_t, fname string) (*dtype, C.int) {
	t := getType(handle(h))
	if t == nil {
		return nil, failNone(MPI_ERR_TYPE, fname)
	}
	return t, 0
}

func i32s(p *C.int, n int) []int32 {
	if n <= 0 || p == nil {
		return nil
	}
	return append([]int32(nil), unsafe.Slice((*int32)(unsafe.Pointer(p)), n)...)
}

func i64s(p *C.int64_t, n int) []int64 {
	if n <= 0 || p == nil {
		return nil
	}
	return append([]int64(nil), unsafe.Slice((*int64)(unsafe.Pointer(p)), n)...)
}

func hs(p *C.uintptr_t, n int) []handle {
	if n <= 0 || p == nil {
		return nil
	}
	return append([]handle(nil), unsafe.Slice((*handle)(unsafe.Pointer(p)), n)...)
}

//export shmpi_MPI_Type_contiguous
func shmpi_MPI_Type_contiguous(count C.int, old C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := typeArg(old, "MPI_Type_contiguous")
	if o == nil {
		return r
	}
	if count < 0 {
		return failNone(MPI_ERR_COUNT, "MPI_Type_contiguous")
	}
	b := newBuilder()
	b.add(o, int64(count), 0)
	t := b.done(MPI_COMBINER_CONTIGUOUS)
	t.ints, t.kids = []int32{int32(count)}, []handle{handle(old)}
	return typeResult(t, out, "MPI_Type_contiguous")
}

func vector(count, blen int64, stride int64, o *dtype) *builder {
	b := newBuilder()
	b.addStrided(o, blen, 0, count, stride)
	return b
}

//export shmpi_MPI_Type_vector
func shmpi_MPI_Type_vector(count, blen, stride C.int, old C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := typeArg(old, "MPI_Type_vector")
	if o == nil {
		return r
	}
	if count < 0 || blen < 0 {
		return failNone(MPI_ERR_COUNT, "MPI_Type_vector")
	}
	t := vector(int64(count), int64(blen), int64(stride)*o.extent(), o).done(MPI_COMBINER_VECTOR)
	t.ints, t.kids = []int32{int32(count), int32(blen), int32(stride)}, []handle{handle(old)}
	return typeResult(t, out, "MPI_Type_vector")
}

//export shmpi_MPI_Type_create_hvector
func shmpi_MPI_Type_create_hvector(count, blen C.int, stride C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := typeArg(old, "MPI_Type_create_hvector")
	if o == nil {
		return r
	}
	if count < 0 || blen < 0 {
		return failNone(MPI_ERR_COUNT, "MPI_Type_create_hvector")
	}
	t := vector(int64(count), int64(blen), int64(stride), o).done(MPI_COMBINER_HVECTOR)
	t.ints, t.aints, t.kids = []int32{int32(count), int32(blen)}, []int64{int64(stride)}, []handle{handle(old)}
	return typeResult(t, out, "MPI_Type_create_hvector")
}

func indexed(fname string, combiner int, count C.int, blens *C.int, blen1 int64, idisp *C.int, adisp *C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := typeArg(old, fname)
	if o == nil {
		return r
	}
	n := int(count)
	if count < 0 || (n > 0 && ((blens == nil && blen1 < 0) || (idisp == nil && adisp == nil))) {
		return failNone(MPI_ERR_ARG, fname)
	}
	var bl []int32
	if blens != nil {
		bl = i32s(blens, n)
	}
	di := i32s(idisp, n)
	da := i64s(adisp, n)
	b := newBuilder()
	for i := 0; i < n; i++ {
		l := blen1
		if bl != nil {
			l = int64(bl[i])
		}
		if l < 0 {
			return failNone(MPI_ERR_ARG, fname)
		}
		var d int64
		if di != nil {
			d = int64(di[i]) * o.extent()
		} else {
			d = da[i]
		}
		b.add(o, l, d)
	}
	t := b.done(combiner)
	if blens != nil {
		t.ints = append([]int32{int32(count)}, bl...)
	} else {
		t.ints = []int32{int32(count), int32(blen1)}
	}
	t.ints = append(t.ints, di...)
	t.aints = da
	t.kids = []handle{handle(old)}
	return typeResult(t, out, fname)
}

//export shmpi_MPI_Type_indexed
func shmpi_MPI_Type_indexed(count C.int, blens, disps *C.int, old C.uintptr_t, out *C.uintptr_t) C.int {
	return indexed("MPI_Type_indexed", MPI_COMBINER_INDEXED, count, blens, 0, disps, nil, old, out)
}

//export shmpi_MPI_Type_create_hindexed
func shmpi_MPI_Type_create_hindexed(count C.int, blens *C.int, disps *C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	return indexed("MPI_Type_create_hindexed", MPI_COMBINER_HINDEXED, count, blens, 0, nil, disps, old, out)
}

//export shmpi_MPI_Type_create_indexed_block
func shmpi_MPI_Type_create_indexed_block(count, blen C.int, disps *C.int, old C.uintptr_t, out *C.uintptr_t) C.int {
	return indexed("MPI_Type_create_indexed_block", MPI_COMBINER_INDEXED_BLOCK, count, nil, int64(blen), disps, nil, old, out)
}

//export shmpi_MPI_Type_create_hindexed_block
func shmpi_MPI_Type_create_hindexed_block(count, blen C.int, disps *C.int64_t, old C.uintptr_t, out *C.uintptr_t) C.int {
	return indexed("MPI_Type_create_hindexed_block", MPI_COMBINER_HINDEXED_BLOCK, count, nil, int64(blen), nil, disps, old, out)
}

//export shmpi_MPI_Type_create_struct
func shmpi_MPI_Type_create_struct(count C.int, blens *C.int, disps *C.int64_t, olds *C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Type_create_struct"
	n := int(count)
	if count < 0 || (n > 0 && (blens == nil || disps == nil || olds == nil)) {
		return failNone(MPI_ERR_ARG, fname)
	}
	bl, da, ts := i32s(blens, n), i64s(disps, n), hs(olds, n)
	lens := make([]int64, n)
	for i, l := range bl {
		lens[i] = int64(l)
	}
	t, code := structOf(lens, da, ts)
	if t == nil {
		return failNone(code, fname)
	}
	t.ints = append([]int32{int32(count)}, bl...)
	t.aints, t.kids = da, ts
	return typeResult(t, out, fname)
}

// structOf builds a struct of blocks of lens[i] elements of ts[i] at byte
// displacements da[i], or returns nil and the error class.
func structOf(lens, da []int64, ts []handle) (*dtype, int) {
	b := newBuilder()
	explicit := false
	for i := range lens {
		o := getType(ts[i])
		if o == nil {
			return nil, MPI_ERR_TYPE
		}
		if lens[i] < 0 {
			return nil, MPI_ERR_ARG
		}
		explicit = explicit || o.explicitBounds
		b.add(o, lens[i], da[i])
	}
	t := b.done(MPI_COMBINER_STRUCT)
	// Pad the extent to the strictest alignment of the members, as C
	// lays out a struct (MPICH and Open MPI do the same), unless a member
	// has bounds set explicitly.
	if !explicit && t.align > 1 {
		if rem := t.extent() % t.align; rem != 0 {
			t.ub += t.align - rem
		}
	}
	t.explicitBounds = explicit
	t.finish()
	return t, 0
}

//export shmpi_MPI_Type_create_resized
func shmpi_MPI_Type_create_resized(old C.uintptr_t, lb, extent C.int64_t, out *C.uintptr_t) C.int {
	o, r := typeArg(old, "MPI_Type_create_resized")
	if o == nil {
		return r
	}
	t := o.clone()
	t.lb, t.ub = int64(lb), int64(lb)+int64(extent)
	t.explicitBounds = true
	t.predef, t.committed, t.pairPredef = false, false, false
	t.combiner, t.ints, t.aints, t.kids = MPI_COMBINER_RESIZED, nil, []int64{int64(lb), int64(extent)}, []handle{handle(old)}
	t.name = ""
	t.finish()
	if o.pairPredef {
		t.red = bNone
	}
	return typeResult(t, out, "MPI_Type_create_resized")
}

// clone copies t's type map into a new type.
func (t *dtype) clone() *dtype {
	n := &dtype{size: t.size, lb: t.lb, ub: t.ub, trueLB: t.trueLB, trueUB: t.trueUB, align: t.align,
		explicitBounds: t.explicitBounds, committed: t.committed,
		combiner: t.combiner, ints: t.ints, aints: t.aints, kids: t.kids, pairPredef: t.pairPredef, pair: t.pair,
		nprim: t.nprim, entries: t.entries, counts: t.counts}
	if t.ops != nil {
		// The same blocks, listed when the copy is first used.
		n.ops = t.ops
	} else {
		n.runs, n.prims = t.runs, t.prims
	}
	n.finish()
	n.red = t.red
	return n
}

//export shmpi_MPI_Type_dup
func shmpi_MPI_Type_dup(old C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := typeArg(old, "MPI_Type_dup")
	if o == nil {
		return r
	}
	t := o.clone()
	t.committed = true
	t.combiner, t.ints, t.aints, t.kids = MPI_COMBINER_DUP, nil, nil, []handle{handle(old)}
	attrs, rc := o.copyAttrs(handle(old))
	if rc != 0 {
		return failNone(rc, "MPI_Type_dup")
	}
	t.adopt(attrs)
	return typeResult(t, out, "MPI_Type_dup")
}

//export shmpi_MPI_Type_create_subarray
func shmpi_MPI_Type_create_subarray(ndims C.int, sizes, subsizes, starts *C.int, order C.int, old C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Type_create_subarray"
	o, r := typeArg(old, fname)
	if o == nil {
		return r
	}
	n := int(ndims)
	if n <= 0 || sizes == nil || subsizes == nil || starts == nil || (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN) {
		return failNone(MPI_ERR_ARG, fname)
	}
	sz, sub, st := i32s(sizes, n), i32s(subsizes, n), i32s(starts, n)
	for i := 0; i < n; i++ {
		if sz[i] <= 0 || sub[i] <= 0 || st[i] < 0 || sub[i]+st[i] > sz[i] {
			return failNone(MPI_ERR_ARG, fname)
		}
	}
	// dim[k] from the fastest-varying one.
	dims := make([]int, n)
	for k := range dims {
		if order == MPI_ORDER_C {
			dims[k] = n - 1 - k
		} else {
			dims[k] = k
		}
	}
	ext := o.extent()
	// Build the subarray as nested hvectors, fastest dimension first.
	cur := o
	stride := ext
	var disp int64
	for _, d := range dims {
		b := newBuilder()
		b.addStrided(cur, 1, 0, int64(sub[d]), stride)
		cur = b.done(MPI_COMBINER_HVECTOR)
		disp += int64(st[d]) * stride
		stride *= int64(sz[d])
	}
	b := newBuilder()
	b.add(cur, 1, disp)
	t := b.done(MPI_COMBINER_SUBARRAY)
	// The extent is the whole array's.
	t.lb, t.ub = 0, stride
	t.explicitBounds = true
	t.finish()
	t.ints = append(append(append(append([]int32{int32(ndims)}, sz...), sub...), st...), int32(order))
	t.kids = []handle{handle(old)}
	return typeResult(t, out, fname)
}

//export shmpi_MPI_Type_commit
func shmpi_MPI_Type_commit(h *C.uintptr_t) C.int {
	if h == nil {
		return failNone(MPI_ERR_ARG, "MPI_Type_commit")
	}
	t, r := typeArg(*h, "MPI_Type_commit")
	if t == nil {
		return r
	}
	t.committed = true
	typeEnt(types.slotOf(handle(*h))).flags = t.cFlags()
	return 0
}

//export shmpi_MPI_Type_free
func shmpi_MPI_Type_free(h *C.uintptr_t) C.int {
	if h == nil {
		return failNone(MPI_ERR_ARG, "MPI_Type_free")
	}
	t, r := typeArg(*h, "MPI_Type_free")
	if t == nil {
		return r
	}
	if t.predef {
		return failNone(MPI_ERR_TYPE, "MPI_Type_free")
	}
	t.deleteAllAttrs(handle(*h))
	publishGen(&typeEnt(types.slotOf(handle(*h))).gen, 0)
	types.remove(handle(*h))
	*h = MPI_DATATYPE_NULL
	return 0
}

//export shmpi_MPI_Type_set_name
func shmpi_MPI_Type_set_name(h C.uintptr_t, name *C.char) C.int {
	t, r := typeArg(h, "MPI_Type_set_name")
	if t == nil {
		return r
	}
	if name == nil {
		return failNone(MPI_ERR_ARG, "MPI_Type_set_name")
	}
	s := C.GoString(name)
	if len(s) >= MPI_MAX_OBJECT_NAME {
		s = s[:MPI_MAX_OBJECT_NAME-1]
	}
	t.mu.Lock()
	t.name = s
	t.mu.Unlock()
	return 0
}

//export shmpi_MPI_Type_get_name
func shmpi_MPI_Type_get_name(h C.uintptr_t, name *C.char, n *C.int) C.int {
	t, r := typeArg(h, "MPI_Type_get_name")
	if t == nil {
		return r
	}
	if name == nil || n == nil {
		return failNone(MPI_ERR_ARG, "MPI_Type_get_name")
	}
	t.mu.Lock()
	s := t.name
	t.mu.Unlock()
	*n = C.int(putString(name, s, MPI_MAX_OBJECT_NAME))
	return 0
}

//export shmpi_MPI_Type_get_envelope
func shmpi_MPI_Type_get_envelope(h C.uintptr_t, ni, na, nd, combiner *C.int) C.int {
	t, r := typeArg(h, "MPI_Type_get_envelope")
	if t == nil {
		return r
	}
	if ni == nil || na == nil || nd == nil || combiner == nil {
		return failNone(MPI_ERR_ARG, "MPI_Type_get_envelope")
	}
	if t.counts != nil {
		return tooLarge("MPI_Type_get_envelope") // its contents are large counts (typesc.go)
	}
	*ni, *na, *nd, *combiner = C.int(len(t.ints)), C.int(len(t.aints)), C.int(len(t.kids)), C.int(t.combiner)
	return 0
}

//export shmpi_MPI_Type_get_contents
func shmpi_MPI_Type_get_contents(h C.uintptr_t, maxi, maxa, maxd C.int, ints *C.int, aints *C.int64_t, dts *C.uintptr_t) C.int {
	t, r := typeArg(h, "MPI_Type_get_contents")
	if t == nil {
		return r
	}
	if t.counts != nil {
		return tooLarge("MPI_Type_get_contents") // its contents are large counts (typesc.go)
	}
	// Named types have no contents; the predefined F90 types (f90.go) have (p, r).
	if t.combiner == MPI_COMBINER_NAMED || int(maxi) < len(t.ints) || int(maxa) < len(t.aints) || int(maxd) < len(t.kids) {
		return failNone(MPI_ERR_ARG, "MPI_Type_get_contents")
	}
	t.contents(ints, aints, dts)
	return 0
}

// contents writes t's integers, addresses and types (MPI_Type_get_contents
// and its _c form, which checked the room).
func (t *dtype) contents(ints *C.int, aints *C.int64_t, dts *C.uintptr_t) {
	if len(t.ints) > 0 {
		copy(unsafe.Slice((*int32)(unsafe.Pointer(ints)), len(t.ints)), t.ints)
	}
	if len(t.aints) > 0 {
		copy(unsafe.Slice((*int64)(unsafe.Pointer(aints)), len(t.aints)), t.aints)
	}
	if len(t.kids) > 0 {
		out := unsafe.Slice((*handle)(unsafe.Pointer(dts)), len(t.kids))
		for i, k := range t.kids {
			kt := getType(k)
			if kt == nil || kt.predef {
				out[i] = k
				continue
			}
			// MPI: derived types come back as new handles the caller frees.
			d := kt.clone()
			d.committed = kt.committed
			out[i] = registerType(d)
		}
	}
}

//export shmpi_MPI_Type_get_value_index
func shmpi_MPI_Type_get_value_index(value, index C.uintptr_t, out *C.uintptr_t) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Type_get_value_index")
	}
	pairs := map[[2]handle]handle{
		{MPI_FLOAT, MPI_INT}: MPI_FLOAT_INT, {MPI_DOUBLE, MPI_INT}: MPI_DOUBLE_INT, {MPI_LONG, MPI_INT}: MPI_LONG_INT,
		{MPI_INT, MPI_INT}: MPI_2INT, {MPI_SHORT, MPI_INT}: MPI_SHORT_INT, {MPI_LONG_DOUBLE, MPI_INT}: MPI_LONG_DOUBLE_INT,
		{MPI_REAL, MPI_REAL}: MPI_2REAL, {MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION}: MPI_2DOUBLE_PRECISION,
		{MPI_INTEGER, MPI_INTEGER}: MPI_2INTEGER,
	}
	p, ok := pairs[[2]handle{handle(value), handle(index)}]
	if !ok {
		p = MPI_DATATYPE_NULL
	}
	*out = C.uintptr_t(p)
	return 0
}

// Packing.

// pack copies count elements of t from src into dst (contiguous, at
// least count*t.size bytes).
func (t *dtype) pack(dst []byte, src unsafe.Pointer, count int64) {
	ext := t.extent()
	pos := int64(0)
	if t.contig {
		n := count * t.size
		copy(dst[:n], unsafe.Slice((*byte)(unsafe.Add(src, t.firstOff)), n))
		return
	}
	runs := t.runList()
	for i := int64(0); i < count; i++ {
		base := unsafe.Add(src, i*ext)
		for _, r := range runs {
			copy(dst[pos:pos+r.n], unsafe.Slice((*byte)(unsafe.Add(base, r.off)), r.n))
			pos += r.n
		}
	}
}

// unpack copies len(src) bytes of packed data into count elements of t
// at dst (a shorter src fills the first elements; the rest is left).
func (t *dtype) unpack(dst unsafe.Pointer, src []byte, count int64) {
	ext := t.extent()
	total := int64(len(src))
	if t.contig {
		n := min(total, count*t.size)
		copy(unsafe.Slice((*byte)(unsafe.Add(dst, t.firstOff)), n), src[:n])
		return
	}
	pos := int64(0)
	runs := t.runList()
	for i := int64(0); i < count && pos < total; i++ {
		base := unsafe.Add(dst, i*ext)
		for _, r := range runs {
			n := min(r.n, total-pos)
			if n <= 0 {
				return
			}
			copy(unsafe.Slice((*byte)(unsafe.Add(base, r.off)), n), src[pos:pos+n])
			pos += n
		}
	}
}

// elements is the number of basic elements in bytes of packed data of
// t, or MPI_UNDEFINED if bytes end inside one.
func (t *dtype) elements(bytes int64) int64 {
	if t.size == 0 {
		return 0
	}
	full := bytes / t.size
	rem := bytes % t.size
	n := full * t.nprim
	if rem == 0 {
		return n
	}
	for _, p := range t.primList() {
		if rem == 0 {
			break
		}
		k := min(p.cnt, rem/p.size)
		n += k
		rem -= k * p.size
		if k < p.cnt {
			break
		}
	}
	if rem != 0 {
		return MPI_UNDEFINED
	}
	return n
}

// bytesOf is the size in bytes of the first n basic elements of a
// buffer of t (MPI_Status_set_elements: Get_elements then gives n).
func (t *dtype) bytesOf(n int64) int64 {
	if t.nprim == 0 {
		return 0
	}
	bytes := n / t.nprim * t.size
	rem := n % t.nprim
	if rem == 0 {
		return bytes // no need for the list of a type that deferred it
	}
	for _, p := range t.primList() {
		if rem == 0 {
			break
		}
		k := min(p.cnt, rem)
		bytes += k * p.size
		rem -= k
	}
	return bytes
}

// shmpi_elements_bytes is MPI_Status_set_elements' byte count for n basic
// elements of a derived type (fast.c answers predefined ones itself).
//
//export shmpi_elements_bytes
func shmpi_elements_bytes(h C.uintptr_t, n C.int64_t) C.int64_t {
	t := getType(handle(h))
	if t == nil {
		return 0
	}
	return C.int64_t(t.bytesOf(int64(n)))
}

//export shmpi_MPI_Get_elements
func shmpi_MPI_Get_elements(st unsafe.Pointer, h C.uintptr_t, count *C.int) C.int {
	t, r := typeArg(h, "MPI_Get_elements")
	if t == nil {
		return r
	}
	if st == nil || count == nil {
		return failNone(MPI_ERR_ARG, "MPI_Get_elements")
	}
	n := t.elements(statusBytes(st))
	if n > 1<<31-1 {
		n = MPI_UNDEFINED
	}
	*count = C.int(n)
	return 0
}

//export shmpi_MPI_Get_elements_c
func shmpi_MPI_Get_elements_c(st unsafe.Pointer, h C.uintptr_t, count *C.int64_t) C.int {
	t, r := typeArg(h, "MPI_Get_elements_c")
	if t == nil {
		return r
	}
	if st == nil || count == nil {
		return failNone(MPI_ERR_ARG, "MPI_Get_elements_c")
	}
	*count = C.int64_t(t.elements(statusBytes(st)))
	return 0
}

//export shmpi_MPI_Get_elements_x
func shmpi_MPI_Get_elements_x(st unsafe.Pointer, h C.uintptr_t, count *C.int64_t) C.int {
	return shmpi_MPI_Get_elements_c(st, h, count)
}

//export shmpi_MPI_Pack_size
func shmpi_MPI_Pack_size(count C.int, h C.uintptr_t, comm C.uintptr_t, size *C.int) C.int {
	t, r := typeArg(h, "MPI_Pack_size")
	if t == nil {
		return r
	}
	if count < 0 || size == nil {
		return failNone(MPI_ERR_ARG, "MPI_Pack_size")
	}
	n := int64(count) * t.size
	if n > 1<<31-1 {
		return failNone(MPI_ERR_VALUE_TOO_LARGE, "MPI_Pack_size")
	}
	*size = C.int(n)
	return 0
}

func packBytes(in unsafe.Pointer, count int64, h C.uintptr_t, out unsafe.Pointer, outsize int64, pos *int64, comm C.uintptr_t, fname string) C.int {
	t, r := typeArg(h, fname)
	if t == nil {
		return r
	}
	if count < 0 || outsize < 0 || *pos < 0 || (out == nil && outsize > 0) {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	n := count * t.size
	if *pos+n > outsize {
		return failCode(handle(comm), MPI_ERR_TRUNCATE, fname)
	}
	if n > 0 {
		t.pack(unsafe.Slice((*byte)(unsafe.Add(out, *pos)), n), in, count)
	}
	*pos += n
	return 0
}

func unpackBytes(in unsafe.Pointer, insize int64, pos *int64, out unsafe.Pointer, count int64, h C.uintptr_t, comm C.uintptr_t, fname string) C.int {
	t, r := typeArg(h, fname)
	if t == nil {
		return r
	}
	if count < 0 || insize < 0 || *pos < 0 {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	n := count * t.size
	if *pos+n > insize {
		return failCode(handle(comm), MPI_ERR_TRUNCATE, fname)
	}
	if n > 0 {
		t.unpack(out, unsafe.Slice((*byte)(unsafe.Add(in, *pos)), n), count)
	}
	*pos += n
	return 0
}

//export shmpi_MPI_Pack
func shmpi_MPI_Pack(in unsafe.Pointer, count C.int, h C.uintptr_t, out unsafe.Pointer, outsize C.int, position *C.int, comm C.uintptr_t) C.int {
	if position == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Pack")
	}
	pos := int64(*position)
	r := packBytes(in, int64(count), h, out, int64(outsize), &pos, comm, "MPI_Pack")
	*position = C.int(pos)
	return r
}

//export shmpi_MPI_Pack_c
func shmpi_MPI_Pack_c(in unsafe.Pointer, count C.int64_t, h C.uintptr_t, out unsafe.Pointer, outsize C.int64_t, position *C.int64_t, comm C.uintptr_t) C.int {
	if position == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Pack_c")
	}
	pos := int64(*position)
	r := packBytes(in, int64(count), h, out, int64(outsize), &pos, comm, "MPI_Pack_c")
	*position = C.int64_t(pos)
	return r
}

//export shmpi_MPI_Unpack
func shmpi_MPI_Unpack(in unsafe.Pointer, insize C.int, position *C.int, out unsafe.Pointer, count C.int, h C.uintptr_t, comm C.uintptr_t) C.int {
	if position == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Unpack")
	}
	pos := int64(*position)
	r := unpackBytes(in, int64(insize), &pos, out, int64(count), h, comm, "MPI_Unpack")
	*position = C.int(pos)
	return r
}

//export shmpi_MPI_Unpack_c
func shmpi_MPI_Unpack_c(in unsafe.Pointer, insize C.int64_t, position *C.int64_t, out unsafe.Pointer, count C.int64_t, h C.uintptr_t, comm C.uintptr_t) C.int {
	if position == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Unpack_c")
	}
	pos := int64(*position)
	r := unpackBytes(in, int64(insize), &pos, out, int64(count), h, comm, "MPI_Unpack_c")
	*position = C.int64_t(pos)
	return r
}
