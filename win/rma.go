package win

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// The RMA operations. Each completes before it returns (the target's
// memory is mapped here), so the request-based forms return completed
// requests and Flush has nothing left to wait for. Displacements are in
// units of the target's displacement unit, as in MPI.

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

func elemSize[T any]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// Put copies src into target's part of w at disp.
func Put[T any](w *Win, src []T, target, disp int) error {
	if _, err := ranks.ElemSize[T](); err != nil {
		return err
	}
	if target == ranks.ProcNull {
		return w.usable("Win.Put")
	}
	b := bytesOf(src)
	if w == nil || !w.remote {
		// Shared memory: straight to the target's part (the general
		// path's where struct cost a store-forwarding stall a call).
		dst, err := w.span("Win.Put", target, disp, len(b))
		if err == nil {
			w.copyLocal(target, dst, b)
		}
		return err
	}
	at, err := w.locate("Win.Put", target, disp, len(b))
	if err != nil {
		return err
	}
	return w.write("Win.Put", target, at, b)
}

// Get copies len(dst) elements from target's part of w at disp into dst.
func Get[T any](w *Win, dst []T, target, disp int) error {
	if _, err := ranks.ElemSize[T](); err != nil {
		return err
	}
	if target == ranks.ProcNull {
		return w.usable("Win.Get")
	}
	b := bytesOf(dst)
	if w == nil || !w.remote {
		src, err := w.span("Win.Get", target, disp, len(b))
		if err == nil {
			w.copyLocal(target, b, src)
		}
		return err
	}
	at, err := w.locate("Win.Get", target, disp, len(b))
	if err != nil {
		return err
	}
	return w.read("Win.Get", target, at, b)
}

// Replace is MPI_REPLACE for Accumulate: the target takes the origin's
// value.
func Replace[T any](inout, in []T) { copy(inout, in) }

// NoOp is MPI_NO_OP for GetAccumulate and FetchAndOp: the target keeps
// its value (the call only reads it, atomically).
func NoOp[T any](inout, in []T) {}

// Accumulate combines src into target's elements at disp with op,
// element by element; each element's update is atomic with respect to
// every other accumulate (and FetchAndOp, CompareAndSwap) on it with the
// same element type. Elements of 1, 2, 4 or 8 bytes must be aligned to
// their size; in shared memory each is one compare-and-swap, and an
// origin that dies mid-call leaves each element either updated or not.
// Other elements (complex128, coll.ValLoc, arrays, structs) are updated
// under the target's accumulate lock, as everything is in a window over
// user memory; an origin that dies holding it poisons it (ErrProcFailed
// for every later accumulate of such elements to that target).
func Accumulate[T any](w *Win, src []T, target, disp int, op coll.Op[T]) error {
	return accumulate(w, "Win.Accumulate", src, nil, target, disp, op, nil)
}

// GetAccumulate is Accumulate that also returns, in result, the target's
// elements as they were just before each one's update.
func GetAccumulate[T any](w *Win, src, result []T, target, disp int, op coll.Op[T]) error {
	if len(result) < len(src) {
		return &ranks.Error{Class: ranks.ErrBuffer, Op: "Win.GetAccumulate", Rank: -1, Detail: "result shorter than the origin buffer"}
	}
	return accumulate(w, "Win.GetAccumulate", src, result, target, disp, op, nil)
}

// scratch is the memory of one call's operands and of the element it
// combines. Operands in locals would escape through the op (a function
// value) and cost allocations a call; in the window they would be shared
// by its goroutines. So each call takes one from a pool (per P: no
// contention) and gives it back: word 0 the element being combined,
// words 1-4 FetchAndOp's operand, 5-8 its result (elements up to
// scratchElem bytes).
type scratch [9]uint64

const scratchElem = 32

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// FetchAndOp is GetAccumulate of one element: it returns the target's
// old value.
func FetchAndOp[T any](w *Win, v T, target, disp int, op coll.Op[T]) (T, error) {
	if elemSize[T]() > scratchElem {
		src, old := []T{v}, make([]T, 1)
		err := accumulate(w, "Win.FetchAndOp", src, old, target, disp, op, nil)
		return old[0], err
	}
	s := scratches.Get().(*scratch)
	src := (*[1]T)(unsafe.Pointer(&s[1]))
	old := (*[1]T)(unsafe.Pointer(&s[5]))
	var z T
	src[0], old[0] = v, z // z if the call ends early (ProcNull, an error)
	err := accumulate(w, "Win.FetchAndOp", src[:], old[:], target, disp, op, s)
	res := old[0]
	scratches.Put(s)
	return res, err
}

// CompareAndSwap replaces target's element at disp with swap if it equals
// compare (bitwise), atomically, and returns the old value. Elements are
// of 1, 2, 4 or 8 bytes (MPI allows integers, logicals and bytes).
func CompareAndSwap[T any](w *Win, compare, swap T, target, disp int) (T, error) {
	const op = "Win.CompareAndSwap"
	var old T
	if target == ranks.ProcNull {
		return old, w.usable(op)
	}
	sz := elemSize[T]()
	if !hardwareAtomic(sz) {
		return old, &ranks.Error{Class: ranks.ErrType, Op: op, Rank: target, Detail: "compare-and-swap needs elements of 1, 2, 4 or 8 bytes"}
	}
	if w != nil && w.remote {
		return casRemote(w, compare, swap, target, disp)
	}
	b, err := w.span(op, target, disp, sz)
	if err != nil {
		return old, err
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	cb, sb := bytesOf([]T{compare}), bytesOf([]T{swap})
	ob := bytesOf(unsafe.Slice(&old, 1))
	if err := checkAligned(op, target, uintptr(p), sz); err != nil {
		return old, err
	}
	for {
		cur := load(p, sz)
		putBits(ob, cur)
		if cur != elemBits(cb) {
			return old, nil
		}
		if cas(p, sz, cur, elemBits(sb)) {
			return old, nil
		}
	}
}

// accumulate is every accumulate; s is the caller's scratch, or nil.
func accumulate[T any](w *Win, op string, src, result []T, target, disp int, f coll.Op[T], s *scratch) error {
	if f == nil {
		return &ranks.Error{Class: ranks.ErrArg, Op: op, Rank: -1, Detail: "nil op"}
	}
	if _, err := ranks.ElemSize[T](); err != nil {
		return err
	}
	if target == ranks.ProcNull {
		return w.usable(op)
	}
	sz := elemSize[T]()
	if sz == 0 {
		return w.usable(op) // elements of size zero: nothing to do
	}
	if w != nil && w.remote {
		return accumulateRemote(w, op, src, result, target, disp, f)
	}
	b, err := w.span(op, target, disp, len(src)*sz)
	if err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	base := unsafe.Pointer(unsafe.SliceData(b))
	if !hardwareAtomic(sz) {
		return accumulateLocked(w, op, unsafe.Slice((*T)(base), len(src)), src, result, target, f)
	}
	if err := checkAligned(op, target, uintptr(base), sz); err != nil {
		return err
	}
	if s == nil {
		s = scratches.Get().(*scratch)
		defer scratches.Put(s)
	}
	cur := (*[1]T)(unsafe.Pointer(&s[0]))
	cb := bytesOf(cur[:])
	// Elements smaller than a word: each aligned 8-byte word of them is
	// one compare-and-swap (which updates every element in it
	// atomically) and one call of the op, on all of its elements; an
	// element-wise op gives the same. Bytes: 8 times fewer of each (MPICH's
	// large_acc_flush_local sums 37.5 GiB of MPI_CHAR).
	per := 8 / sz
	ws := unsafe.Slice((*T)(unsafe.Pointer(&s[0])), per)
	for i := 0; i < len(src); {
		p := unsafe.Add(base, i*sz)
		if per > 1 && uintptr(p)%8 == 0 && len(src)-i >= per {
			w := (*atomic.Uint64)(p)
			for {
				old := w.Load()
				s[0] = old
				if result != nil {
					copy(result[i:i+per], ws)
				}
				f(ws, src[i:i+per])
				if s[0] == old || w.CompareAndSwap(old, s[0]) {
					break
				}
			}
			i += per
			continue
		}
		for {
			old := load(p, sz)
			putBits(cb, old)
			if result != nil {
				result[i] = cur[0]
			}
			f(cur[:], src[i:i+1])
			nv := elemBits(cb)
			if nv == old || cas(p, sz, old, nv) {
				break
			}
		}
		i++
	}
	return nil
}

// accumulateLocked combines src into dst, the target's elements in
// memory mapped here, under the target's accumulate lock: elements the
// hardware cannot update atomically.
func accumulateLocked[T any](w *Win, op string, dst, src, result []T, target int, f coll.Op[T]) error {
	if err := w.lockAcc(op, target); err != nil {
		return err
	}
	defer w.unlockAcc(target)
	if result != nil {
		copy(result, dst)
	}
	f(dst, src)
	return nil
}

// hardwareAtomic reports whether elements of sz bytes are updated with a
// compare-and-swap (of the element, or of the 32-bit word holding it).
func hardwareAtomic(sz int) bool { return sz == 1 || sz == 2 || sz == 4 || sz == 8 }

// checkAligned refuses an element the hardware cannot update atomically
// because it is not aligned to its size.
func checkAligned(op string, target int, p uintptr, sz int) error {
	if p%uintptr(sz) != 0 {
		return &ranks.Error{Class: ranks.ErrArg, Op: op, Rank: target,
			Detail: "element not aligned to its size in the target's memory"}
	}
	return nil
}

// elemBits reads an element's bytes (1, 2, 4 or 8) as a value, as load
// does; putBits writes them back. One access of the element's width: a
// byte loop after a wide store (or the reverse) stalls on store
// forwarding, which was a third of FetchAndOp's time.
func elemBits(b []byte) uint64 {
	p := unsafe.Pointer(unsafe.SliceData(b))
	switch len(b) {
	case 8:
		return *(*uint64)(p)
	case 4:
		return uint64(*(*uint32)(p))
	case 2:
		return uint64(*(*uint16)(p))
	}
	return uint64(b[0])
}

func putBits(b []byte, v uint64) {
	p := unsafe.Pointer(unsafe.SliceData(b))
	switch len(b) {
	case 8:
		*(*uint64)(p) = v
	case 4:
		*(*uint32)(p) = uint32(v)
	case 2:
		*(*uint16)(p) = uint16(v)
	default:
		b[0] = byte(v)
	}
}

// load reads the element of sz bytes at p atomically.
func load(p unsafe.Pointer, sz int) uint64 {
	switch sz {
	case 8:
		return (*atomic.Uint64)(p).Load()
	case 4:
		return uint64((*atomic.Uint32)(p).Load())
	}
	w, shift, mask := word(p, sz)
	return uint64(w.Load()>>shift) & mask
}

// cas replaces the element at p, if it holds old, by nv.
func cas(p unsafe.Pointer, sz int, old, nv uint64) bool {
	switch sz {
	case 8:
		return (*atomic.Uint64)(p).CompareAndSwap(old, nv)
	case 4:
		return (*atomic.Uint32)(p).CompareAndSwap(uint32(old), uint32(nv))
	}
	// 1 or 2 bytes: a CAS on the aligned 32-bit word that holds them, so
	// that neighbouring elements updated at once are not lost.
	w, shift, mask := word(p, sz)
	for {
		cur := w.Load()
		if uint64(cur>>shift)&mask != old {
			return false
		}
		next := cur&^(uint32(mask)<<shift) | uint32(nv)<<shift
		if w.CompareAndSwap(cur, next) {
			return true
		}
	}
}

func word(p unsafe.Pointer, sz int) (*atomic.Uint32, uint, uint64) {
	back := int(uintptr(p) % 4)
	return (*atomic.Uint32)(unsafe.Add(p, -back)), uint(back) * 8, 1<<(8*sz) - 1
}

// Rput is Put returning a request (complete at once).
func Rput[T any](w *Win, src []T, target, disp int) (*ranks.Request, error) {
	return done(w, "Win.Rput", Put(w, src, target, disp))
}

// Rget is Get returning a request (complete at once).
func Rget[T any](w *Win, dst []T, target, disp int) (*ranks.Request, error) {
	return done(w, "Win.Rget", Get(w, dst, target, disp))
}

// Raccumulate is Accumulate returning a request (complete at once).
func Raccumulate[T any](w *Win, src []T, target, disp int, op coll.Op[T]) (*ranks.Request, error) {
	return done(w, "Win.Raccumulate", Accumulate(w, src, target, disp, op))
}

// RgetAccumulate is GetAccumulate returning a request (complete at once).
func RgetAccumulate[T any](w *Win, src, result []T, target, disp int, op coll.Op[T]) (*ranks.Request, error) {
	return done(w, "Win.RgetAccumulate", GetAccumulate(w, src, result, target, disp, op))
}

// done turns the outcome of an operation that completed into a request;
// an error at initiation is returned as such.
func done(w *Win, op string, err error) (*ranks.Request, error) {
	if err != nil {
		return nil, err
	}
	r, complete := ext.NewRequest(w.c, op)
	complete(nil)
	return r.(*ranks.Request), nil
}

// chunk is accumulateRemote's copy of the target's elements: a pool's,
// as scratch is, for the same reasons.
type chunk [512]uint64

var chunks = sync.Pool{New: func() any { return new(chunk) }}

// accumulateRemote is accumulate on a window over user memory: reads,
// the op and writes under the target's accumulate lock (create.go), a
// chunk of elements at a time.
func accumulateRemote[T any](w *Win, op string, src, result []T, target, disp int, f coll.Op[T]) error {
	sz := elemSize[T]()
	at, err := w.locate(op, target, disp, len(src)*sz)
	if err != nil || len(src) == 0 {
		return err
	}
	if hardwareAtomic(sz) {
		if err := checkAligned(op, target, addrOf(at), sz); err != nil {
			return err
		}
	}
	if w.net != nil {
		// This rank's own part too: through its server, which holds the
		// accumulate lock that the other members take.
		if code, ok := netOpOf(f); ok {
			return accumulateNetOp(w, op, src, result, target, w.netAt(target, disp), code)
		}
		return accumulateNet(w, op, src, result, target, w.netAt(target, disp), f)
	}
	if err := w.lockAcc(op, target); err != nil {
		return err
	}
	defer w.unlockAcc(target)
	if at.local != nil {
		// This rank's own memory.
		return accumulateMapped(unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(at.local))), len(src)), src, result, f)
	}
	var buf []byte
	if sz <= len(chunk{})*8 {
		c := chunks.Get().(*chunk)
		defer chunks.Put(c)
		buf = unsafe.Slice((*byte)(unsafe.Pointer(c)), len(c)*8)
	} else {
		buf = make([]byte, sz) // an element wider than a chunk: rare
	}
	per := len(buf) / sz
	for i := 0; i < len(src); i += per {
		k := min(per, len(src)-i)
		cur := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(buf))), k)
		part := where{pid: at.pid, addr: at.addr + uintptr(i*sz)}
		if err := w.read(op, target, part, bytesOf(cur)); err != nil {
			return err
		}
		if result != nil {
			copy(result[i:i+k], cur)
		}
		f(cur, src[i:i+k])
		if err := w.write(op, target, part, bytesOf(cur)); err != nil {
			return err
		}
	}
	return nil
}

func accumulateMapped[T any](dst, src, result []T, f coll.Op[T]) error {
	if result != nil {
		copy(result, dst)
	}
	f(dst, src)
	return nil
}

// casRemote is CompareAndSwap on a window over user memory.
func casRemote[T any](w *Win, compare, swap T, target, disp int) (T, error) {
	const op = "Win.CompareAndSwap"
	var z T
	sz := elemSize[T]()
	at, err := w.locate(op, target, disp, sz)
	if err != nil {
		return z, err
	}
	if err := checkAligned(op, target, addrOf(at), sz); err != nil {
		return z, err
	}
	if w.net != nil {
		return casNetOp(w, compare, swap, target, w.netAt(target, disp))
	}
	if err := w.lockAcc(op, target); err != nil {
		return z, err
	}
	defer w.unlockAcc(target)
	// The old value and the swap in scratch: locals would escape through
	// the copy.
	s := scratches.Get().(*scratch)
	defer scratches.Put(s)
	old := unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), sz)
	sw := unsafe.Slice((*byte)(unsafe.Pointer(&s[1])), sz)
	*(*T)(unsafe.Pointer(&s[1])) = swap
	if err := w.read(op, target, at, old); err != nil {
		return z, err
	}
	c := [1]T{compare}
	if elemBits(old) == elemBits(bytesOf(c[:])) {
		if err := w.write(op, target, at, sw); err != nil {
			return z, err
		}
	}
	return *(*T)(unsafe.Pointer(&s[0])), nil
}

// addrOf is the address an operation touches (for alignment checks).
func addrOf(at where) uintptr {
	if at.local != nil {
		return uintptr(unsafe.Pointer(unsafe.SliceData(at.local)))
	}
	return at.addr
}
