package main

/*
#include <stdlib.h>
#include "cabi.h"
*/
import "C"

import (
	"sort"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/win"
)

// Windows: one-sided communication over package win, whose windows take
// byte displacements here (win.ByteDisplacements): the C displacement
// times the target's unit, plus each run's offset in the target
// datatype. The origin's data is packed like a message's; each run of
// the target's type is one RMA call. Accumulates run on the Go type of
// the basic elements, as reductions do (ops.go).

type winObj struct {
	w      *win.Win
	comm   handle // a duplicate of the creating communicator, for groups
	errh   handle
	eh     *errhObj
	base   unsafe.Pointer
	size   int64
	unit   int
	flavor int
	attrs  *C.int64_t // WIN_SIZE, then WIN_DISP_UNIT, WIN_CREATE_FLAVOR, WIN_MODEL as ints

	attrSet // attributes of user keyvals
}

func getWin(h C.uintptr_t, fname string) (*winObj, C.int) {
	w := wins.get(handle(h))
	if w == nil || *w == nil {
		return nil, failNone(MPI_ERR_WIN, fname)
	}
	return *w, 0
}

func winFail(h C.uintptr_t, err error, fname string) C.int {
	if err == nil {
		return 0
	}
	return raise(C.SHMPI_ON_WIN, handle(h), classOf(err), fname, err)
}

func winCode(h C.uintptr_t, code int, fname string) C.int {
	return raise(C.SHMPI_ON_WIN, handle(h), code, fname, nil)
}

// newWin registers w. Its attributes are the Go API's (Base, DispUnit,
// Flavor, Model), kept in C memory because MPI hands out pointers to
// them.
func newWin(w *win.Win, out *C.uintptr_t) {
	b := w.Base()
	o := &winObj{w: w, errh: MPI_ERRORS_ARE_FATAL, eh: fatalErrh, size: int64(len(b)), unit: w.DispUnit()}
	if len(b) > 0 {
		o.base = unsafe.Pointer(&b[0])
	}
	switch w.Flavor() {
	case win.FlavorCreate:
		o.flavor = MPI_WIN_FLAVOR_CREATE
	case win.FlavorAllocate:
		o.flavor = MPI_WIN_FLAVOR_ALLOCATE
	case win.FlavorDynamic:
		o.flavor = MPI_WIN_FLAVOR_DYNAMIC
	default:
		o.flavor = MPI_WIN_FLAVOR_SHARED
	}
	model := int32(MPI_WIN_UNIFIED)
	if w.Model() == win.ModelSeparate {
		model = MPI_WIN_SEPARATE
	}
	o.attrs = (*C.int64_t)(C.malloc(4 * 8))
	a := unsafe.Slice((*int64)(unsafe.Pointer(o.attrs)), 4)
	a[0] = o.size
	ints := unsafe.Slice((*int32)(unsafe.Pointer(&a[1])), 6)
	ints[0], ints[2], ints[4] = int32(o.unit), int32(o.flavor), model
	h, _ := wins.add(o)
	*out = C.uintptr_t(h)
}

// winHints converts an info argument into window creation hints.
func winHints(info C.uintptr_t, comm C.uintptr_t, fname string) ([]win.Option, C.int) {
	// The C layer scales displacements itself (rmaArgs), so that a
	// datatype's elements may lie between two of the target's units.
	opts := []win.Option{win.ByteDisplacements()}
	in, r := infoArg(info, fname)
	if r != 0 {
		return nil, r
	}
	if in != nil {
		m := win.Info{}
		for _, k := range in.Keys() {
			v, _, _ := in.Get(k)
			m[k] = v
		}
		opts = append(opts, m)
	}
	return opts, 0
}

func winAlloc(size int64, unit int64, info C.uintptr_t, comm C.uintptr_t, base unsafe.Pointer, out *C.uintptr_t, shared bool, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if size < 0 || unit <= 0 || unit > 1<<31-1 || base == nil || out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	opts, r := winHints(info, comm, fname)
	if r != 0 {
		return r
	}
	var w *win.Win
	var err error
	if shared {
		w, err = win.AllocateShared(o.c, int(size), int(unit), opts...)
	} else {
		w, err = win.Allocate(o.c, int(size), int(unit), opts...)
	}
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	newWin(w, out)
	*(*unsafe.Pointer)(base) = getWinObj(*out).base
	return 0
}

func getWinObj(h C.uintptr_t) *winObj {
	w := wins.get(handle(h))
	if w == nil {
		return nil
	}
	return *w
}

//export shmpi_MPI_Win_allocate
func shmpi_MPI_Win_allocate(size C.int64_t, unit C.int, info C.uintptr_t, comm C.uintptr_t, base unsafe.Pointer, out *C.uintptr_t) C.int {
	return winAlloc(int64(size), int64(unit), info, comm, base, out, false, "MPI_Win_allocate")
}

//export shmpi_MPI_Win_allocate_c
func shmpi_MPI_Win_allocate_c(size C.int64_t, unit C.int64_t, info C.uintptr_t, comm C.uintptr_t, base unsafe.Pointer, out *C.uintptr_t) C.int {
	return winAlloc(int64(size), int64(unit), info, comm, base, out, false, "MPI_Win_allocate_c")
}

//export shmpi_MPI_Win_allocate_shared
func shmpi_MPI_Win_allocate_shared(size C.int64_t, unit C.int, info C.uintptr_t, comm C.uintptr_t, base unsafe.Pointer, out *C.uintptr_t) C.int {
	return winAlloc(int64(size), int64(unit), info, comm, base, out, true, "MPI_Win_allocate_shared")
}

//export shmpi_MPI_Win_allocate_shared_c
func shmpi_MPI_Win_allocate_shared_c(size C.int64_t, unit C.int64_t, info C.uintptr_t, comm C.uintptr_t, base unsafe.Pointer, out *C.uintptr_t) C.int {
	return winAlloc(int64(size), int64(unit), info, comm, base, out, true, "MPI_Win_allocate_shared_c")
}

func winCreate(base unsafe.Pointer, size, unit int64, info C.uintptr_t, comm C.uintptr_t, out *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if size < 0 || unit <= 0 || unit > 1<<31-1 || out == nil || (base == nil && size > 0) {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	opts, r := winHints(info, comm, fname)
	if r != 0 {
		return r
	}
	var buf []byte
	if size > 0 {
		buf = unsafe.Slice((*byte)(base), int(size))
	}
	w, err := win.Create(o.c, buf, int(unit), opts...)
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	newWin(w, out)
	return 0
}

//export shmpi_MPI_Win_create
func shmpi_MPI_Win_create(base unsafe.Pointer, size C.int64_t, unit C.int, info C.uintptr_t, comm C.uintptr_t, out *C.uintptr_t) C.int {
	return winCreate(base, int64(size), int64(unit), info, comm, out, "MPI_Win_create")
}

//export shmpi_MPI_Win_create_c
func shmpi_MPI_Win_create_c(base unsafe.Pointer, size C.int64_t, unit C.int64_t, info C.uintptr_t, comm C.uintptr_t, out *C.uintptr_t) C.int {
	return winCreate(base, int64(size), int64(unit), info, comm, out, "MPI_Win_create_c")
}

//export shmpi_MPI_Win_create_dynamic
func shmpi_MPI_Win_create_dynamic(info C.uintptr_t, comm C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Win_create_dynamic"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	opts, r := winHints(info, comm, fname)
	if r != 0 {
		return r
	}
	w, err := win.CreateDynamic(o.c, opts...)
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	newWin(w, out)
	return 0
}

//export shmpi_MPI_Win_attach
func shmpi_MPI_Win_attach(h C.uintptr_t, base unsafe.Pointer, size C.int64_t) C.int {
	o, r := getWin(h, "MPI_Win_attach")
	if o == nil {
		return r
	}
	if size < 0 || (base == nil && size > 0) {
		return winCode(h, MPI_ERR_ARG, "MPI_Win_attach")
	}
	return winFail(h, o.w.Attach(unsafe.Slice((*byte)(base), int(size))), "MPI_Win_attach")
}

//export shmpi_MPI_Win_detach
func shmpi_MPI_Win_detach(h C.uintptr_t, base unsafe.Pointer) C.int {
	o, r := getWin(h, "MPI_Win_detach")
	if o == nil {
		return r
	}
	return winFail(h, o.w.Detach(unsafe.Slice((*byte)(base), 1)), "MPI_Win_detach")
}

//export shmpi_MPI_Win_free
func shmpi_MPI_Win_free(p *C.uintptr_t) C.int {
	if p == nil {
		return failNone(MPI_ERR_ARG, "MPI_Win_free")
	}
	o, r := getWin(*p, "MPI_Win_free")
	if o == nil {
		return r
	}
	h := *p
	if err := o.w.FreeReady(); err != nil {
		return winFail(h, err, "MPI_Win_free") // the window stays, its handle too
	}
	o.deleteAllAttrs(handle(h))
	err := o.w.Free()
	wins.remove(handle(h))
	*p = MPI_WIN_NULL
	if err != nil {
		return raise(C.SHMPI_ON_NONE, 0, classOf(err), "MPI_Win_free", err)
	}
	return 0
}

func sharedQuery(h C.uintptr_t, rank C.int, size *C.int64_t, unit unsafe.Pointer, wide bool, base unsafe.Pointer, fname string) C.int {
	o, r := getWin(h, fname)
	if o == nil {
		return r
	}
	if size == nil || unit == nil || base == nil {
		return winCode(h, MPI_ERR_ARG, fname)
	}
	// MPI_PROC_NULL: the lowest member whose part is not empty.
	b, u, err := o.w.SharedQuery(lockRank(rank))
	if err != nil {
		return winFail(h, err, fname)
	}
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	*size = C.int64_t(len(b))
	if wide {
		*(*int64)(unit) = int64(u)
	} else {
		*(*int32)(unit) = int32(u)
	}
	*(*unsafe.Pointer)(base) = p
	return 0
}

//export shmpi_MPI_Win_shared_query
func shmpi_MPI_Win_shared_query(h C.uintptr_t, rank C.int, size *C.int64_t, unit *C.int, base unsafe.Pointer) C.int {
	return sharedQuery(h, rank, size, unsafe.Pointer(unit), false, base, "MPI_Win_shared_query")
}

//export shmpi_MPI_Win_shared_query_c
func shmpi_MPI_Win_shared_query_c(h C.uintptr_t, rank C.int, size *C.int64_t, unit *C.int64_t, base unsafe.Pointer) C.int {
	return sharedQuery(h, rank, size, unsafe.Pointer(unit), true, base, "MPI_Win_shared_query_c")
}

//export shmpi_MPI_Win_get_group
func shmpi_MPI_Win_get_group(h C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := getWin(h, "MPI_Win_get_group")
	if o == nil {
		return r
	}
	if out == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Win_get_group")
	}
	g, err := o.w.Comm().Group()
	if err != nil {
		return winFail(h, err, "MPI_Win_get_group")
	}
	*out = C.uintptr_t(newGroup(g))
	return 0
}

//export shmpi_MPI_Win_get_attr
func shmpi_MPI_Win_get_attr(h C.uintptr_t, k C.int, v unsafe.Pointer, flag *C.int) C.int {
	o, r := getWin(h, "MPI_Win_get_attr")
	if o == nil {
		return r
	}
	if v == nil || flag == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Win_get_attr")
	}
	out := (*unsafe.Pointer)(v)
	a := unsafe.Pointer(o.attrs)
	*flag = 1
	switch k {
	case MPI_WIN_BASE:
		*out = o.base
	case MPI_WIN_SIZE:
		*out = a
	case MPI_WIN_DISP_UNIT:
		*out = unsafe.Add(a, 8)
	case MPI_WIN_CREATE_FLAVOR:
		*out = unsafe.Add(a, 16)
	case MPI_WIN_MODEL:
		*out = unsafe.Add(a, 24)
	default:
		return o.winUserAttr(h, int(k), out, flag, "MPI_Win_get_attr")
	}
	return 0
}

//export shmpi_MPI_Win_set_errhandler
func shmpi_MPI_Win_set_errhandler(h C.uintptr_t, eh C.uintptr_t) C.int {
	o, r := getWin(h, "MPI_Win_set_errhandler")
	if o == nil {
		return r
	}
	e := errhs.get(handle(eh))
	if e == nil || ((*e).predef == 0 && (*e).kind != kindWin) {
		return winCode(h, MPI_ERR_ERRHANDLER, "MPI_Win_set_errhandler")
	}
	o.errh, o.eh = handle(eh), *e
	return 0
}

//export shmpi_MPI_Win_get_errhandler
func shmpi_MPI_Win_get_errhandler(h C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := getWin(h, "MPI_Win_get_errhandler")
	if o == nil {
		return r
	}
	if out == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Win_get_errhandler")
	}
	*out = C.uintptr_t(o.errh)
	return 0
}

//export shmpi_MPI_Win_call_errhandler
func shmpi_MPI_Win_call_errhandler(h C.uintptr_t, code C.int) C.int {
	if o, r := getWin(h, "MPI_Win_call_errhandler"); o == nil {
		return r
	}
	raise(C.SHMPI_ON_WIN, handle(h), int(code), "MPI_Win_call_errhandler", nil)
	return 0
}

//export shmpi_MPI_Win_set_name
func shmpi_MPI_Win_set_name(h C.uintptr_t, name *C.char) C.int {
	o, r := getWin(h, "MPI_Win_set_name")
	if o == nil {
		return r
	}
	if name == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Win_set_name")
	}
	s := C.GoString(name)
	if len(s) >= MPI_MAX_OBJECT_NAME {
		s = s[:MPI_MAX_OBJECT_NAME-1]
	}
	return winFail(h, o.w.SetName(s), "MPI_Win_set_name")
}

//export shmpi_MPI_Win_get_name
func shmpi_MPI_Win_get_name(h C.uintptr_t, name *C.char, n *C.int) C.int {
	o, r := getWin(h, "MPI_Win_get_name")
	if o == nil {
		return r
	}
	if name == nil || n == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Win_get_name")
	}
	*n = C.int(putString(name, o.w.Name(), MPI_MAX_OBJECT_NAME))
	return 0
}

//export shmpi_MPI_Win_get_info
func shmpi_MPI_Win_get_info(h C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := getWin(h, "MPI_Win_get_info")
	if o == nil {
		return r
	}
	if out == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Win_get_info")
	}
	hints := o.w.Info()
	keys := make([]string, 0, len(hints))
	for k := range hints {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	in := ranks.NewInfo()
	for _, k := range keys {
		in.Set(k, hints[k])
	}
	*out = C.uintptr_t(newInfo(in))
	return 0
}

//export shmpi_MPI_Win_set_info
func shmpi_MPI_Win_set_info(h C.uintptr_t, info C.uintptr_t) C.int {
	o, r := getWin(h, "MPI_Win_set_info")
	if o == nil {
		return r
	}
	in, r := getInfo(info, "MPI_Win_set_info")
	if in == nil {
		return r
	}
	m := win.Info{}
	for _, k := range in.Keys() {
		v, _, _ := in.Get(k)
		m[k] = v
	}
	return winFail(h, o.w.SetInfo(m), "MPI_Win_set_info")
}

// Synchronization.

func winSync(h C.uintptr_t, fname string, f func(w *win.Win) error) C.int {
	o, r := getWin(h, fname)
	if o == nil {
		return r
	}
	return winFail(h, f(o.w), fname)
}

// assertOf converts an MPI assert into the win package's bits; other
// bits are MPI_ERR_ASSERT.
func assertOf(assert C.int) (int, bool) {
	a := 0
	for _, m := range [...]struct{ mpi, w int }{
		{MPI_MODE_NOCHECK, win.ModeNoCheck},
		{MPI_MODE_NOSTORE, win.ModeNoStore},
		{MPI_MODE_NOPUT, win.ModeNoPut},
		{MPI_MODE_NOPRECEDE, win.ModeNoPrecede},
		{MPI_MODE_NOSUCCEED, win.ModeNoSucceed},
	} {
		if int(assert)&m.mpi != 0 {
			a |= m.w
			assert &^= C.int(m.mpi)
		}
	}
	return a, assert == 0
}

// winAssert runs f with h's window and the converted assert.
func winAssert(h C.uintptr_t, assert C.int, fname string, f func(w *win.Win, a int) error) C.int {
	o, r := getWin(h, fname)
	if o == nil {
		return r
	}
	a, ok := assertOf(assert)
	if !ok {
		return winCode(h, MPI_ERR_ASSERT, fname)
	}
	return winFail(h, f(o.w, a), fname)
}

//export shmpi_MPI_Win_fence
func shmpi_MPI_Win_fence(assert C.int, h C.uintptr_t) C.int {
	return winAssert(h, assert, "MPI_Win_fence", func(w *win.Win, a int) error { return w.Fence(a) })
}

func lockRank(r C.int) int {
	if r == MPI_PROC_NULL {
		return ranks.ProcNull
	}
	return int(r)
}

//export shmpi_MPI_Win_lock
func shmpi_MPI_Win_lock(kind, rank, assert C.int, h C.uintptr_t) C.int {
	var k int
	switch kind {
	case MPI_LOCK_EXCLUSIVE:
		k = win.LockExclusive
	case MPI_LOCK_SHARED:
		k = win.LockShared
	default:
		return winCode(h, MPI_ERR_LOCKTYPE, "MPI_Win_lock")
	}
	return winAssert(h, assert, "MPI_Win_lock", func(w *win.Win, a int) error { return w.Lock(k, lockRank(rank), a) })
}

//export shmpi_MPI_Win_unlock
func shmpi_MPI_Win_unlock(rank C.int, h C.uintptr_t) C.int {
	return winSync(h, "MPI_Win_unlock", func(w *win.Win) error { return w.Unlock(lockRank(rank)) })
}

//export shmpi_MPI_Win_lock_all
func shmpi_MPI_Win_lock_all(assert C.int, h C.uintptr_t) C.int {
	return winAssert(h, assert, "MPI_Win_lock_all", func(w *win.Win, a int) error { return w.LockAll(a) })
}

//export shmpi_MPI_Win_unlock_all
func shmpi_MPI_Win_unlock_all(h C.uintptr_t) C.int {
	return winSync(h, "MPI_Win_unlock_all", func(w *win.Win) error { return w.UnlockAll() })
}

//export shmpi_MPI_Win_flush
func shmpi_MPI_Win_flush(rank C.int, h C.uintptr_t) C.int {
	return winSync(h, "MPI_Win_flush", func(w *win.Win) error { return w.Flush(lockRank(rank)) })
}

//export shmpi_MPI_Win_flush_local
func shmpi_MPI_Win_flush_local(rank C.int, h C.uintptr_t) C.int {
	return winSync(h, "MPI_Win_flush_local", func(w *win.Win) error { return w.FlushLocal(lockRank(rank)) })
}

//export shmpi_MPI_Win_flush_all
func shmpi_MPI_Win_flush_all(h C.uintptr_t) C.int {
	return winSync(h, "MPI_Win_flush_all", func(w *win.Win) error { return w.FlushAll() })
}

//export shmpi_MPI_Win_flush_local_all
func shmpi_MPI_Win_flush_local_all(h C.uintptr_t) C.int {
	return winSync(h, "MPI_Win_flush_local_all", func(w *win.Win) error { return w.FlushLocalAll() })
}

//export shmpi_MPI_Win_sync
func shmpi_MPI_Win_sync(h C.uintptr_t) C.int {
	return winSync(h, "MPI_Win_sync", func(w *win.Win) error { return w.Sync() })
}

// groupRanks translates a group into ranks of the window.
func groupRanks(o *winObj, g C.uintptr_t) ([]int, bool) {
	gr := getGroup(handle(g))
	if gr == nil {
		return nil, false
	}
	wg, err := o.w.Comm().Group()
	if err != nil {
		return nil, false
	}
	n := gr.g.Size()
	in := make([]int, n)
	for i := range in {
		in[i] = i
	}
	out, err := gr.g.TranslateRanks(in, wg)
	if err != nil {
		return nil, false
	}
	return out, true
}

//export shmpi_MPI_Win_post
func shmpi_MPI_Win_post(g C.uintptr_t, assert C.int, h C.uintptr_t) C.int {
	o, r := getWin(h, "MPI_Win_post")
	if o == nil {
		return r
	}
	rs, ok := groupRanks(o, g)
	if !ok {
		return winCode(h, MPI_ERR_GROUP, "MPI_Win_post")
	}
	return winAssert(h, assert, "MPI_Win_post", func(w *win.Win, a int) error { return w.Post(rs, a) })
}

//export shmpi_MPI_Win_start
func shmpi_MPI_Win_start(g C.uintptr_t, assert C.int, h C.uintptr_t) C.int {
	o, r := getWin(h, "MPI_Win_start")
	if o == nil {
		return r
	}
	rs, ok := groupRanks(o, g)
	if !ok {
		return winCode(h, MPI_ERR_GROUP, "MPI_Win_start")
	}
	return winAssert(h, assert, "MPI_Win_start", func(w *win.Win, a int) error { return w.Start(rs, a) })
}

//export shmpi_MPI_Win_complete
func shmpi_MPI_Win_complete(h C.uintptr_t) C.int {
	return winSync(h, "MPI_Win_complete", func(w *win.Win) error { return w.Complete() })
}

//export shmpi_MPI_Win_wait
func shmpi_MPI_Win_wait(h C.uintptr_t) C.int {
	return winSync(h, "MPI_Win_wait", func(w *win.Win) error { return w.Wait() })
}

//export shmpi_MPI_Win_test
func shmpi_MPI_Win_test(h C.uintptr_t, flag *C.int) C.int {
	o, r := getWin(h, "MPI_Win_test")
	if o == nil {
		return r
	}
	if flag == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Win_test")
	}
	done, err := o.w.Test()
	*flag = 0
	if done {
		*flag = 1
	}
	return winFail(h, err, "MPI_Win_test")
}

//export shmpi_MPIX_Win_revoke
func shmpi_MPIX_Win_revoke(h C.uintptr_t) C.int {
	return winSync(h, "MPIX_Win_revoke", func(w *win.Win) error { return w.Revoke() })
}

//export shmpi_MPIX_Win_get_failed
func shmpi_MPIX_Win_get_failed(h C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := getWin(h, "MPIX_Win_get_failed")
	if o == nil {
		return r
	}
	if out == nil {
		return winCode(h, MPI_ERR_ARG, "MPIX_Win_get_failed")
	}
	rs, err := o.w.GetFailed()
	if err != nil {
		return winFail(h, err, "MPIX_Win_get_failed")
	}
	g, err := o.w.Comm().Group()
	if err == nil {
		g, err = g.Incl(rs)
	}
	if err != nil {
		return winFail(h, err, "MPIX_Win_get_failed")
	}
	*out = C.uintptr_t(newGroup(g))
	return 0
}

// RMA operations.

// targetRuns is where the target's data goes: the byte offset from the
// target displacement of each run of count elements of t.
func targetRuns(t *dtype, count int64) []run {
	if t.contig {
		return []run{{t.firstOff, count * t.size}}
	}
	var rs []run
	for i := int64(0); i < count; i++ {
		for _, r := range t.runList() {
			rs = appendRun(rs, run{i*t.extent() + r.off, r.n})
		}
	}
	return rs
}

type rmaArgs struct {
	o                *winObj
	h                C.uintptr_t
	ob               buffer // origin
	target           int
	base             int64 // the target displacement in bytes
	tt               *dtype
	tcount           int64
	fname            string
	rs               []run
	result           buffer
	hasResult        bool
	op               *opObj
	compare, swapBuf unsafe.Pointer
}

func rmaSetup(origin unsafe.Pointer, ocount int64, odt C.uintptr_t, target C.int, disp C.int64_t, tcount int64, tdt C.uintptr_t, h C.uintptr_t, fname string) (*rmaArgs, C.int) {
	o, r := getWin(h, fname)
	if o == nil {
		return nil, r
	}
	ot, tt := getType(handle(odt)), getType(handle(tdt))
	if ot == nil || tt == nil || !ot.committed || !tt.committed {
		return nil, winCode(h, MPI_ERR_TYPE, fname)
	}
	if ocount < 0 || tcount < 0 {
		return nil, winCode(h, MPI_ERR_COUNT, fname)
	}
	if ocount*ot.size != tcount*tt.size {
		return nil, winCode(h, MPI_ERR_ARG, fname)
	}
	a := &rmaArgs{o: o, h: h, ob: buffer{p: origin, count: ocount, t: ot, n: ocount * ot.size}, target: lockRank(target), tt: tt, tcount: tcount, fname: fname}
	// Scaled by the target's own unit (members may give different ones).
	a.base = int64(disp)
	if u := o.w.DispUnitOf(a.target); u > 0 {
		a.base *= int64(u)
	}
	a.rs = targetRuns(tt, tcount)
	return a, 0
}

// each calls f for each target run with its part of the packed data.
func (a *rmaArgs) each(data []byte, f func(part []byte, disp int) error) error {
	pos := int64(0)
	for _, r := range a.rs {
		if err := f(data[pos:pos+r.n], int(a.base+r.off)); err != nil {
			return err
		}
		pos += r.n
	}
	return nil
}

func putCall(origin unsafe.Pointer, ocount int64, odt C.uintptr_t, target C.int, disp C.int64_t, tcount int64, tdt C.uintptr_t, h C.uintptr_t, req *C.uintptr_t, fname string) C.int {
	a, r := rmaSetup(origin, ocount, odt, target, disp, tcount, tdt, h, fname)
	if a == nil {
		return r
	}
	data := a.ob.packed()
	err := a.each(data, func(part []byte, d int) error { return win.Put(a.o.w, part, a.target, d) })
	if err == nil && req != nil {
		*req = C.uintptr_t(doneRequest(MPI_COMM_WORLD))
	}
	return winFail(h, err, fname)
}

func getCall(origin unsafe.Pointer, ocount int64, odt C.uintptr_t, target C.int, disp C.int64_t, tcount int64, tdt C.uintptr_t, h C.uintptr_t, req *C.uintptr_t, fname string) C.int {
	a, r := rmaSetup(origin, ocount, odt, target, disp, tcount, tdt, h, fname)
	if a == nil {
		return r
	}
	area, staged := a.ob.recvArea()
	err := a.each(area, func(part []byte, d int) error { return win.Get(a.o.w, part, a.target, d) })
	if err == nil && staged {
		a.ob.t.unpack(a.ob.p, area, a.ob.count)
	}
	if err == nil && req != nil {
		*req = C.uintptr_t(doneRequest(MPI_COMM_WORLD))
	}
	return winFail(h, err, fname)
}

//export shmpi_MPI_Put
func shmpi_MPI_Put(o unsafe.Pointer, oc C.int, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int, tdt C.uintptr_t, h C.uintptr_t) C.int {
	return putCall(o, int64(oc), odt, t, d, int64(tc), tdt, h, nil, "MPI_Put")
}

//export shmpi_MPI_Rput
func shmpi_MPI_Rput(o unsafe.Pointer, oc C.int, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int, tdt C.uintptr_t, h C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Rput")
	}
	return putCall(o, int64(oc), odt, t, d, int64(tc), tdt, h, req, "MPI_Rput")
}

//export shmpi_MPI_Get
func shmpi_MPI_Get(o unsafe.Pointer, oc C.int, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int, tdt C.uintptr_t, h C.uintptr_t) C.int {
	return getCall(o, int64(oc), odt, t, d, int64(tc), tdt, h, nil, "MPI_Get")
}

//export shmpi_MPI_Rget
func shmpi_MPI_Rget(o unsafe.Pointer, oc C.int, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int, tdt C.uintptr_t, h C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Rget")
	}
	return getCall(o, int64(oc), odt, t, d, int64(tc), tdt, h, req, "MPI_Rget")
}

// Accumulates: the reduction dispatch (ops.go) with one-sided kinds.
const (
	rAcc redKind = 200 + iota
	rGetAcc
	rFetchOp
)

// accState carries an accumulate through dispatch.
type accState struct {
	w      *win.Win
	target int
	disp   int
	result unsafe.Pointer
}

func runAcc[T any](a *redArgs, op coll.Op[T]) (*ranks.Request, error, bool) {
	if op == nil {
		return nil, nil, false
	}
	st := a.acc
	s := unsafe.Slice((*T)(a.send), a.sendN)
	switch a.kind {
	case rAcc:
		return nil, win.Accumulate(st.w, s, st.target, st.disp, op), true
	case rGetAcc:
		r := unsafe.Slice((*T)(st.result), a.sendN)
		return nil, win.GetAccumulate(st.w, s, r, st.target, st.disp, op), true
	case rFetchOp:
		old, err := win.FetchAndOp(st.w, s[0], st.target, st.disp, op)
		if err == nil {
			*(*T)(st.result) = old
		}
		return nil, err, true
	}
	return nil, nil, false
}

func accCall(kind redKind, origin unsafe.Pointer, ocount int64, odt C.uintptr_t, result unsafe.Pointer, rcount int64, rdt C.uintptr_t, target C.int, disp C.int64_t, tcount int64, tdt C.uintptr_t, op C.uintptr_t, h C.uintptr_t, req *C.uintptr_t, fname string) C.int {
	opo := getOp(handle(op))
	if opo == nil || opo.predef == 0 {
		// MPI allows only predefined ops in accumulates.
		return winCode(h, MPI_ERR_OP, fname)
	}
	if opo.predef == MPI_NO_OP && kind == rGetAcc {
		// Only the target's data is read: the origin may be anything.
		ocount, odt = tcount, tdt
		origin = nil
	}
	a, r := rmaSetup(origin, ocount, odt, target, disp, tcount, tdt, h, fname)
	if a == nil {
		return r
	}
	done := func() C.int {
		if req != nil {
			*req = C.uintptr_t(doneRequest(MPI_COMM_WORLD))
		}
		return 0
	}
	if rt := getType(handle(rdt)); a.ob.n == 0 && (kind != rGetAcc || rcount == 0 || rt != nil && rt.size == 0) {
		// No element moves (a zero count or a type of no data, as MPI
		// allows): nothing to do, whatever the types' kinds.
		return done()
	}
	tt := a.tt
	if tt.pair != nil && !(tt.pairPredef && tt.contig) {
		return a.pairAcc(kind, origin, ocount, odt, result, rcount, rdt, opo, req)
	}
	k := tt.red
	if k == bNone || k == bOpaque {
		return winCode(h, MPI_ERR_UNSUPPORTED_OPERATION, fname)
	}
	// The size of one element of the reduction's Go type (a contiguous
	// pair's C struct, or a basic element): the target's runs (one per
	// contiguous piece of a derived type) each hold whole elements, since
	// every basic element of the type is of kind k.
	esize := tt.size
	if !tt.pairPredef && tt.nprim > 0 {
		esize = tt.size / tt.nprim
	}
	var data []byte
	if origin != nil {
		data = a.ob.packed()
	} else {
		data = make([]byte, a.ob.n)
	}
	if len(data) == 0 {
		data = make([]byte, 1)
	}
	ra := &redArgs{kind: kind, acc: &accState{w: a.o.w, target: a.target}}
	var rarea []byte
	var rb buffer
	staged := false
	if kind == rGetAcc || kind == rFetchOp {
		rt := getType(handle(rdt))
		if rt == nil || !rt.committed {
			return winCode(h, MPI_ERR_TYPE, fname)
		}
		rb = buffer{p: result, count: rcount, t: rt, n: rcount * rt.size}
		if rb.n != a.ob.n && !(kind == rFetchOp) {
			return winCode(h, MPI_ERR_ARG, fname)
		}
		rarea, staged = rb.recvArea()
		if len(rarea) == 0 {
			rarea = make([]byte, 1)
		}
	}
	if a.target == ranks.ProcNull {
		return done()
	}
	// An accumulate per run of the target's type, in the type map's
	// order, over the packed origin (and result) elements that fall in
	// it: MPI makes accumulates atomic per basic element only, so each
	// piece may be applied alone.
	var err error
	pos := int64(0)
	for _, r := range a.rs {
		ra.send, ra.sendN = unsafe.Pointer(&data[pos]), int(r.n/esize)
		if rarea != nil {
			ra.acc.result = unsafe.Pointer(&rarea[pos])
		}
		ra.acc.disp = int(a.base + r.off)
		var ok bool
		if _, err, ok = dispatch(ra, k, opo.predef, isLogical(handle(tdt))); !ok {
			return winCode(h, MPI_ERR_OP, fname)
		}
		if err != nil {
			break
		}
		pos += r.n
	}
	if err == nil && staged {
		rb.t.unpack(rb.p, rarea[:rb.n], rb.count)
	}
	if err == nil {
		done()
	}
	return winFail(h, err, fname)
}

// pairStarts lists where each pair of count elements of t (a type made
// of one predefined pair type only) begins, from the buffer's start, in
// the type map's order: every other basic element is a pair's value.
func (t *dtype) pairStarts(count int64) []int64 {
	var out []int64
	for i := range count {
		base := i * t.extent()
		j := 0
		for _, p := range t.primList() {
			for c := range p.cnt {
				if j%2 == 0 {
					out = append(out, base+p.off+c*p.size)
				}
				j++
			}
		}
	}
	return out
}

// copyPair copies one pair's data (its value and its index, not the
// padding) from src to dst, both laid out as pair's C struct.
func copyPair(pair *dtype, dst, src unsafe.Pointer) {
	for _, p := range pair.primList() {
		copy(unsafe.Slice((*byte)(unsafe.Add(dst, p.off)), p.size), unsafe.Slice((*byte)(unsafe.Add(src, p.off)), p.size))
	}
}

// pairAcc is an accumulate on a target type made of pairs (MINLOC and
// MAXLOC's MPI_DOUBLE_INT... alone or in derived types): the origin's
// pairs go into an array of the pair's C structs, as the reduction
// reads them, and each run of adjacent pairs at the target is one
// accumulate (MPI makes them atomic per pair only).
func (a *rmaArgs) pairAcc(kind redKind, origin unsafe.Pointer, ocount int64, odt C.uintptr_t, result unsafe.Pointer, rcount int64, rdt C.uintptr_t, opo *opObj, req *C.uintptr_t) C.int {
	h, fname, pair := a.h, a.fname, a.tt.pair
	pe := pair.extent()
	tstarts := a.tt.pairStarts(a.tcount)
	n := int64(len(tstarts))
	send := make([]byte, (n+1)*pe)
	if origin != nil {
		ot := getType(handle(odt))
		if ot.pair != pair {
			return winCode(h, MPI_ERR_TYPE, fname)
		}
		for j, s := range ot.pairStarts(ocount) {
			copyPair(pair, unsafe.Pointer(&send[int64(j)*pe]), unsafe.Add(origin, s))
		}
	}
	var recv []byte
	var rstarts []int64
	if kind == rGetAcc || kind == rFetchOp {
		rt := getType(handle(rdt))
		if rt == nil || !rt.committed || rt.pair != pair {
			return winCode(h, MPI_ERR_TYPE, fname)
		}
		if rstarts = rt.pairStarts(rcount); int64(len(rstarts)) != n {
			return winCode(h, MPI_ERR_ARG, fname)
		}
		recv = make([]byte, (n+1)*pe)
	}
	if a.target == ranks.ProcNull {
		if req != nil {
			*req = C.uintptr_t(doneRequest(MPI_COMM_WORLD))
		}
		return 0
	}
	ra := &redArgs{kind: kind, acc: &accState{w: a.o.w, target: a.target}}
	var err error
	for j0 := int64(0); j0 < n && err == nil; {
		j := j0 + 1
		for j < n && tstarts[j] == tstarts[j-1]+pe {
			j++
		}
		ra.send, ra.sendN = unsafe.Pointer(&send[j0*pe]), int(j-j0)
		ra.acc.disp = int(a.base + tstarts[j0])
		if recv != nil {
			ra.acc.result = unsafe.Pointer(&recv[j0*pe])
		}
		var ok bool
		if _, err, ok = dispatch(ra, pair.red, opo.predef, false); !ok {
			return winCode(h, MPI_ERR_OP, fname)
		}
		j0 = j
	}
	if err == nil && recv != nil {
		for j, s := range rstarts {
			copyPair(pair, unsafe.Add(result, s), unsafe.Pointer(&recv[int64(j)*pe]))
		}
	}
	if err == nil && req != nil {
		*req = C.uintptr_t(doneRequest(MPI_COMM_WORLD))
	}
	return winFail(h, err, fname)
}

//export shmpi_MPI_Accumulate
func shmpi_MPI_Accumulate(o unsafe.Pointer, oc C.int, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int, tdt C.uintptr_t, op C.uintptr_t, h C.uintptr_t) C.int {
	return accCall(rAcc, o, int64(oc), odt, nil, 0, 0, t, d, int64(tc), tdt, op, h, nil, "MPI_Accumulate")
}

//export shmpi_MPI_Raccumulate
func shmpi_MPI_Raccumulate(o unsafe.Pointer, oc C.int, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int, tdt C.uintptr_t, op C.uintptr_t, h C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Raccumulate")
	}
	return accCall(rAcc, o, int64(oc), odt, nil, 0, 0, t, d, int64(tc), tdt, op, h, req, "MPI_Raccumulate")
}

//export shmpi_MPI_Get_accumulate
func shmpi_MPI_Get_accumulate(o unsafe.Pointer, oc C.int, odt C.uintptr_t, res unsafe.Pointer, rc C.int, rdt C.uintptr_t, t C.int, d C.int64_t, tc C.int, tdt C.uintptr_t, op C.uintptr_t, h C.uintptr_t) C.int {
	return accCall(rGetAcc, o, int64(oc), odt, res, int64(rc), rdt, t, d, int64(tc), tdt, op, h, nil, "MPI_Get_accumulate")
}

//export shmpi_MPI_Rget_accumulate
func shmpi_MPI_Rget_accumulate(o unsafe.Pointer, oc C.int, odt C.uintptr_t, res unsafe.Pointer, rc C.int, rdt C.uintptr_t, t C.int, d C.int64_t, tc C.int, tdt C.uintptr_t, op C.uintptr_t, h C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Rget_accumulate")
	}
	return accCall(rGetAcc, o, int64(oc), odt, res, int64(rc), rdt, t, d, int64(tc), tdt, op, h, req, "MPI_Rget_accumulate")
}

//export shmpi_MPI_Fetch_and_op
func shmpi_MPI_Fetch_and_op(o, res unsafe.Pointer, dt C.uintptr_t, t C.int, d C.int64_t, op C.uintptr_t, h C.uintptr_t) C.int {
	return accCall(rFetchOp, o, 1, dt, res, 1, dt, t, d, 1, dt, op, h, nil, "MPI_Fetch_and_op")
}

// casKind says whether MPI_Compare_and_swap takes elements of t: the C
// and Fortran integers, logicals, the multi-language types (MPI_AINT,
// MPI_OFFSET, MPI_COUNT) and MPI_BYTE; not floating point, complex or
// pair types.
func casKind(t *dtype) bool {
	switch t.red {
	case bI8, bU8, bI16, bU16, bI32, bU32, bI64, bU64, bBool, bByte, bWchar:
		return !t.pairPredef
	}
	return false
}

//export shmpi_MPI_Compare_and_swap
func shmpi_MPI_Compare_and_swap(o, cmp, res unsafe.Pointer, dt C.uintptr_t, t C.int, d C.int64_t, h C.uintptr_t) C.int {
	const fname = "MPI_Compare_and_swap"
	w, r := getWin(h, fname)
	if w == nil {
		return r
	}
	tt := getType(handle(dt))
	if tt == nil || !tt.predef || o == nil || cmp == nil || res == nil || !casKind(tt) {
		return winCode(h, MPI_ERR_TYPE, fname)
	}
	target := lockRank(t)
	if target == ranks.ProcNull {
		return 0
	}
	disp := int64(d) // in bytes (win.ByteDisplacements)
	if u := w.w.DispUnitOf(target); u > 0 {
		disp *= int64(u)
	}
	var err error
	switch tt.size {
	case 1:
		err = cas[uint8](w.w, o, cmp, res, target, int(disp))
	case 2:
		err = cas[uint16](w.w, o, cmp, res, target, int(disp))
	case 4:
		err = cas[uint32](w.w, o, cmp, res, target, int(disp))
	case 8:
		err = cas[uint64](w.w, o, cmp, res, target, int(disp))
	default:
		return winCode(h, MPI_ERR_TYPE, fname)
	}
	return winFail(h, err, fname)
}

func cas[T uint8 | uint16 | uint32 | uint64](w *win.Win, o, cmp, res unsafe.Pointer, target, disp int) error {
	old, err := win.CompareAndSwap(w, *(*T)(cmp), *(*T)(o), target, disp)
	if err == nil {
		*(*T)(res) = old
	}
	return err
}

// The large-count forms of the RMA calls.

//export shmpi_MPI_Put_c
func shmpi_MPI_Put_c(o unsafe.Pointer, oc C.int64_t, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int64_t, tdt C.uintptr_t, h C.uintptr_t) C.int {
	return putCall(o, int64(oc), odt, t, d, int64(tc), tdt, h, nil, "MPI_Put_c")
}

//export shmpi_MPI_Rput_c
func shmpi_MPI_Rput_c(o unsafe.Pointer, oc C.int64_t, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int64_t, tdt C.uintptr_t, h C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Rput_c")
	}
	return putCall(o, int64(oc), odt, t, d, int64(tc), tdt, h, req, "MPI_Rput_c")
}

//export shmpi_MPI_Get_c
func shmpi_MPI_Get_c(o unsafe.Pointer, oc C.int64_t, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int64_t, tdt C.uintptr_t, h C.uintptr_t) C.int {
	return getCall(o, int64(oc), odt, t, d, int64(tc), tdt, h, nil, "MPI_Get_c")
}

//export shmpi_MPI_Rget_c
func shmpi_MPI_Rget_c(o unsafe.Pointer, oc C.int64_t, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int64_t, tdt C.uintptr_t, h C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Rget_c")
	}
	return getCall(o, int64(oc), odt, t, d, int64(tc), tdt, h, req, "MPI_Rget_c")
}

//export shmpi_MPI_Accumulate_c
func shmpi_MPI_Accumulate_c(o unsafe.Pointer, oc C.int64_t, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int64_t, tdt C.uintptr_t, op C.uintptr_t, h C.uintptr_t) C.int {
	return accCall(rAcc, o, int64(oc), odt, nil, 0, 0, t, d, int64(tc), tdt, op, h, nil, "MPI_Accumulate_c")
}

//export shmpi_MPI_Raccumulate_c
func shmpi_MPI_Raccumulate_c(o unsafe.Pointer, oc C.int64_t, odt C.uintptr_t, t C.int, d C.int64_t, tc C.int64_t, tdt C.uintptr_t, op C.uintptr_t, h C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Raccumulate_c")
	}
	return accCall(rAcc, o, int64(oc), odt, nil, 0, 0, t, d, int64(tc), tdt, op, h, req, "MPI_Raccumulate_c")
}

//export shmpi_MPI_Get_accumulate_c
func shmpi_MPI_Get_accumulate_c(o unsafe.Pointer, oc C.int64_t, odt C.uintptr_t, res unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, t C.int, d C.int64_t, tc C.int64_t, tdt C.uintptr_t, op C.uintptr_t, h C.uintptr_t) C.int {
	return accCall(rGetAcc, o, int64(oc), odt, res, int64(rc), rdt, t, d, int64(tc), tdt, op, h, nil, "MPI_Get_accumulate_c")
}

//export shmpi_MPI_Rget_accumulate_c
func shmpi_MPI_Rget_accumulate_c(o unsafe.Pointer, oc C.int64_t, odt C.uintptr_t, res unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, t C.int, d C.int64_t, tc C.int64_t, tdt C.uintptr_t, op C.uintptr_t, h C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Rget_accumulate_c")
	}
	return accCall(rGetAcc, o, int64(oc), odt, res, int64(rc), rdt, t, d, int64(tc), tdt, op, h, req, "MPI_Rget_accumulate_c")
}
