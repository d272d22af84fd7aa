package main

/*
#include <stdlib.h>
#include "cabi.h"
*/
import "C"

import (
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Attributes. Keyvals are ints; the predefined ones are the ABI's
// (MPI_TAG_UB...) and MPI_FT. A user keyval has copy and delete
// callbacks (C functions, or the predefined MPI_*_NULL_COPY_FN = 0 and
// MPI_*_DUP_FN = 1) for one kind of object: communicators, datatypes or
// windows. The callbacks of the three kinds have the same C shape (a
// handle, the keyval, two pointers), so one trampoline calls each.

type keyval struct {
	kind         int
	copyFn, delF unsafe.Pointer
	extra        unsafe.Pointer
	freed        bool
	refs         int // attributes set with it
}

var (
	kvMu    sync.Mutex
	keyvals = map[int]*keyval{}
	nextKV  = 1000
)

// Values of the predefined attributes, in C memory (MPI hands out
// pointers to them).
var (
	predefMu    sync.Mutex
	predefAttrs = map[int]*C.int{}
)

func predefAttr(k int, v int) {
	p := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
	*p = C.int(v)
	predefAttrs[k] = p
}

func initAttrs() {
	predefMu.Lock()
	defer predefMu.Unlock()
	if len(predefAttrs) > 0 {
		return
	}
	predefAttr(MPI_TAG_UB, ranks.TagUB)
	predefAttr(MPI_HOST, MPI_PROC_NULL)
	predefAttr(MPI_IO, MPI_ANY_SOURCE)
	predefAttr(MPI_WTIME_IS_GLOBAL, 1) // one node, one monotonic clock
	predefAttr(MPI_APPNUM, 0)
	predefAttr(MPI_UNIVERSE_SIZE, world.Size())
	predefAttr(MPI_LASTUSEDCODE, MPI_ERR_LASTCODE)
	ft := 0
	if world.FT() {
		ft = 1
	}
	predefAttr(MPI_FT, ft)
}

func createKeyval(kind int, copyFn, delFn unsafe.Pointer, out *C.int, extra unsafe.Pointer, fname string) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	kvMu.Lock()
	nextKV++
	k := nextKV
	keyvals[k] = &keyval{kind: kind, copyFn: copyFn, delF: delFn, extra: extra}
	kvMu.Unlock()
	*out = C.int(k)
	return 0
}

func freeKeyval(p *C.int, kind int, fname string) C.int {
	if p == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	kvMu.Lock()
	kv := keyvals[int(*p)]
	if kv == nil || kv.kind != kind || kv.freed {
		kvMu.Unlock()
		return failNone(MPI_ERR_KEYVAL, fname)
	}
	kv.freed = true
	if kv.refs == 0 {
		delete(keyvals, int(*p))
	}
	kvMu.Unlock()
	*p = MPI_KEYVAL_INVALID
	return 0
}

// attrKeyval finds a user keyval for kind.
func attrKeyval(k int, kind int) *keyval {
	kvMu.Lock()
	defer kvMu.Unlock()
	kv := keyvals[k]
	if kv == nil || kv.kind != kind || kv.freed {
		return nil
	}
	return kv
}

// callDelete runs kv's delete callback for the value v on object h.
func callDelete(kv *keyval, h handle, k int, v uintptr) int {
	if kv.delF == nil {
		return 0
	}
	return int(C.shmpi_call_delete_attr(kv.delF, C.uintptr_t(h), C.int(k), C.uintptr_t(v), kv.extra))
}

func dropKeyvalRef(k int) {
	kvMu.Lock()
	if kv := keyvals[k]; kv != nil {
		kv.refs--
		if kv.freed && kv.refs <= 0 {
			delete(keyvals, k)
		}
	}
	kvMu.Unlock()
}

// attrSet is the user attributes of one object: keyval -> value (a C
// void*). The methods return an MPI error code, which the caller raises
// on its object.
type attrSet struct {
	amu   sync.Mutex
	attrs map[int]uintptr
	order map[int]uint64 // when each was set (attrClock), for deleteAllAttrs
}

// attrClock orders the settings of attributes.
var attrClock atomic.Uint64

// adopt gives a new object the attributes copied to it, as set in
// keyval order.
func (a *attrSet) adopt(attrs map[int]uintptr) {
	keys := make([]int, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	a.amu.Lock()
	a.attrs, a.order = attrs, make(map[int]uint64, len(keys))
	for _, k := range keys {
		a.order[k] = attrClock.Add(1)
	}
	a.amu.Unlock()
}

func (a *attrSet) setAttr(kind int, h handle, k int, v uintptr) int {
	kv := attrKeyval(k, kind)
	if kv == nil {
		return MPI_ERR_KEYVAL
	}
	a.amu.Lock()
	old, had := a.attrs[k]
	a.amu.Unlock()
	if had {
		if rc := callDelete(kv, h, k, old); rc != 0 {
			return rc
		}
	}
	a.amu.Lock()
	if a.attrs == nil {
		a.attrs, a.order = map[int]uintptr{}, map[int]uint64{}
	}
	a.attrs[k] = v
	a.order[k] = attrClock.Add(1)
	a.amu.Unlock()
	if !had {
		kvMu.Lock()
		kv.refs++
		kvMu.Unlock()
	}
	return 0
}

// getAttr looks k up; a keyval of another kind (or none) is an error.
func (a *attrSet) getAttr(kind int, k int) (uintptr, bool, int) {
	if attrKeyval(k, kind) == nil {
		return 0, false, MPI_ERR_KEYVAL
	}
	a.amu.Lock()
	v, ok := a.attrs[k]
	a.amu.Unlock()
	return v, ok, 0
}

func (a *attrSet) deleteAttr(kind int, h handle, k int) int {
	// A freed keyval still names the attributes it is attached to: MPI
	// lets them be deleted (MPICH's fkeyval).
	kvMu.Lock()
	kv := keyvals[k]
	kvMu.Unlock()
	if kv == nil || kv.kind != kind {
		return MPI_ERR_KEYVAL
	}
	a.amu.Lock()
	v, had := a.attrs[k]
	a.amu.Unlock()
	if !had {
		return MPI_ERR_KEYVAL
	}
	if rc := callDelete(kv, h, k, v); rc != 0 {
		return rc
	}
	a.amu.Lock()
	delete(a.attrs, k)
	delete(a.order, k)
	a.amu.Unlock()
	dropKeyvalRef(k)
	return 0
}

// deleteAllAttrs deletes every attribute, the last set first: MPI asks
// it of MPI_COMM_SELF's at Finalize, and it serves as well elsewhere.
func (a *attrSet) deleteAllAttrs(h handle) {
	a.amu.Lock()
	keys := make([]int, 0, len(a.attrs))
	for k := range a.attrs {
		keys = append(keys, k)
	}
	order := a.order
	sort.Slice(keys, func(i, j int) bool { return order[keys[i]] > order[keys[j]] })
	a.amu.Unlock()
	for _, k := range keys {
		kvMu.Lock()
		kv := keyvals[k]
		kvMu.Unlock()
		a.amu.Lock()
		v := a.attrs[k]
		delete(a.attrs, k)
		delete(a.order, k)
		a.amu.Unlock()
		if kv != nil {
			callDelete(kv, h, k, v)
		}
		dropKeyvalRef(k)
	}
}

// copyAttrs runs the copy callbacks of a's attributes (of object h) for
// a duplicate and returns the attributes the duplicate gets (each holds
// a reference to its keyval), or the error code of a callback that
// failed.
func (a *attrSet) copyAttrs(h handle) (map[int]uintptr, int) {
	a.amu.Lock()
	keys := make([]int, 0, len(a.attrs))
	for k := range a.attrs {
		keys = append(keys, k)
	}
	a.amu.Unlock()
	if len(keys) == 0 {
		return nil, 0
	}
	sort.Ints(keys)
	out := (*unsafe.Pointer)(C.malloc(C.size_t(unsafe.Sizeof(uintptr(0)))))
	flag := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(out))
	defer C.free(unsafe.Pointer(flag))
	got := map[int]uintptr{}
	for _, k := range keys {
		kvMu.Lock()
		kv := keyvals[k]
		kvMu.Unlock()
		if kv == nil {
			continue
		}
		a.amu.Lock()
		v := a.attrs[k]
		a.amu.Unlock()
		var nv uintptr
		keep := false
		switch uintptr(kv.copyFn) {
		case 0: // MPI_*_NULL_COPY_FN
		case 1: // MPI_*_DUP_FN
			nv, keep = v, true
		default:
			*flag = 0
			*out = nil
			rc := C.shmpi_call_copy_attr(kv.copyFn, C.uintptr_t(h), C.int(k), kv.extra, C.uintptr_t(v), unsafe.Pointer(out), flag)
			if rc != 0 {
				dropAttrs(got, MPI_COMM_NULL)
				return nil, int(rc)
			}
			nv, keep = uintptr(*out), *flag != 0
		}
		if keep {
			got[k] = nv
			kvMu.Lock()
			kv.refs++
			kvMu.Unlock()
		}
	}
	return got, 0
}

// dropAttrs deletes copies that no object got (their delete callbacks
// run with null, the null handle of their kind).
func dropAttrs(attrs map[int]uintptr, null handle) {
	for k, v := range attrs {
		kvMu.Lock()
		kv := keyvals[k]
		kvMu.Unlock()
		if kv != nil {
			callDelete(kv, null, k, v)
		}
		dropKeyvalRef(k)
	}
}

// Communicators' attributes.

//export shmpi_MPI_Comm_create_keyval
func shmpi_MPI_Comm_create_keyval(copyFn, delFn unsafe.Pointer, out *C.int, extra unsafe.Pointer) C.int {
	return createKeyval(kindComm, copyFn, delFn, out, extra, "MPI_Comm_create_keyval")
}

//export shmpi_MPI_Keyval_create
func shmpi_MPI_Keyval_create(copyFn, delFn unsafe.Pointer, out *C.int, extra unsafe.Pointer) C.int {
	return createKeyval(kindComm, copyFn, delFn, out, extra, "MPI_Keyval_create")
}

//export shmpi_MPI_Comm_free_keyval
func shmpi_MPI_Comm_free_keyval(k *C.int) C.int {
	return freeKeyval(k, kindComm, "MPI_Comm_free_keyval")
}

//export shmpi_MPI_Keyval_free
func shmpi_MPI_Keyval_free(k *C.int) C.int {
	return freeKeyval(k, kindComm, "MPI_Keyval_free")
}

func commSetAttr(comm C.uintptr_t, k C.int, v unsafe.Pointer, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	return failCode(handle(comm), o.setAttr(kindComm, handle(comm), int(k), uintptr(v)), fname)
}

//export shmpi_MPI_Comm_set_attr
func shmpi_MPI_Comm_set_attr(comm C.uintptr_t, k C.int, v unsafe.Pointer) C.int {
	return commSetAttr(comm, k, v, "MPI_Comm_set_attr")
}

//export shmpi_MPI_Attr_put
func shmpi_MPI_Attr_put(comm C.uintptr_t, k C.int, v unsafe.Pointer) C.int {
	return commSetAttr(comm, k, v, "MPI_Attr_put")
}

func commGetAttr(comm C.uintptr_t, k C.int, v unsafe.Pointer, flag *C.int, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if v == nil || flag == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	initAttrs()
	out := (*uintptr)(v)
	predefMu.Lock()
	p, ok := predefAttrs[int(k)]
	predefMu.Unlock()
	if ok {
		*out = uintptr(unsafe.Pointer(p))
		*flag = 1
		return 0
	}
	val, ok, rc := o.getAttr(kindComm, int(k))
	if rc != 0 {
		return failCode(handle(comm), rc, fname)
	}
	*flag = 0
	if ok {
		*out = val
		*flag = 1
	}
	return 0
}

//export shmpi_MPI_Comm_get_attr
func shmpi_MPI_Comm_get_attr(comm C.uintptr_t, k C.int, v unsafe.Pointer, flag *C.int) C.int {
	return commGetAttr(comm, k, v, flag, "MPI_Comm_get_attr")
}

//export shmpi_MPI_Attr_get
func shmpi_MPI_Attr_get(comm C.uintptr_t, k C.int, v unsafe.Pointer, flag *C.int) C.int {
	return commGetAttr(comm, k, v, flag, "MPI_Attr_get")
}

func commDeleteAttr(comm C.uintptr_t, k C.int, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	return failCode(handle(comm), o.deleteAttr(kindComm, handle(comm), int(k)), fname)
}

//export shmpi_MPI_Comm_delete_attr
func shmpi_MPI_Comm_delete_attr(comm C.uintptr_t, k C.int) C.int {
	return commDeleteAttr(comm, k, "MPI_Comm_delete_attr")
}

//export shmpi_MPI_Attr_delete
func shmpi_MPI_Attr_delete(comm C.uintptr_t, k C.int) C.int {
	return commDeleteAttr(comm, k, "MPI_Attr_delete")
}

// Windows' attributes (besides the predefined ones, win.go).

//export shmpi_MPI_Win_create_keyval
func shmpi_MPI_Win_create_keyval(copyFn, delFn unsafe.Pointer, out *C.int, extra unsafe.Pointer) C.int {
	return createKeyval(kindWin, copyFn, delFn, out, extra, "MPI_Win_create_keyval")
}

//export shmpi_MPI_Win_free_keyval
func shmpi_MPI_Win_free_keyval(k *C.int) C.int {
	return freeKeyval(k, kindWin, "MPI_Win_free_keyval")
}

//export shmpi_MPI_Win_set_attr
func shmpi_MPI_Win_set_attr(h C.uintptr_t, k C.int, v unsafe.Pointer) C.int {
	o, r := getWin(h, "MPI_Win_set_attr")
	if o == nil {
		return r
	}
	if rc := o.setAttr(kindWin, handle(h), int(k), uintptr(v)); rc != 0 {
		return winCode(h, rc, "MPI_Win_set_attr")
	}
	return 0
}

//export shmpi_MPI_Win_delete_attr
func shmpi_MPI_Win_delete_attr(h C.uintptr_t, k C.int) C.int {
	o, r := getWin(h, "MPI_Win_delete_attr")
	if o == nil {
		return r
	}
	if rc := o.deleteAttr(kindWin, handle(h), int(k)); rc != 0 {
		return winCode(h, rc, "MPI_Win_delete_attr")
	}
	return 0
}

// winUserAttr is MPI_Win_get_attr for a user keyval.
func (o *winObj) winUserAttr(h C.uintptr_t, k int, out *unsafe.Pointer, flag *C.int, fname string) C.int {
	v, ok, rc := o.getAttr(kindWin, k)
	if rc != 0 {
		return winCode(h, rc, fname)
	}
	*flag = 0
	if ok {
		*(*uintptr)(unsafe.Pointer(out)), *flag = v, 1
	}
	return 0
}

// Datatypes' attributes: MPI_Type_dup copies them.

//export shmpi_MPI_Type_create_keyval
func shmpi_MPI_Type_create_keyval(copyFn, delFn unsafe.Pointer, out *C.int, extra unsafe.Pointer) C.int {
	return createKeyval(kindType, copyFn, delFn, out, extra, "MPI_Type_create_keyval")
}

//export shmpi_MPI_Type_free_keyval
func shmpi_MPI_Type_free_keyval(k *C.int) C.int {
	return freeKeyval(k, kindType, "MPI_Type_free_keyval")
}

//export shmpi_MPI_Type_set_attr
func shmpi_MPI_Type_set_attr(h C.uintptr_t, k C.int, v unsafe.Pointer) C.int {
	t, r := typeArg(h, "MPI_Type_set_attr")
	if t == nil {
		return r
	}
	return failNone(t.setAttr(kindType, handle(h), int(k), uintptr(v)), "MPI_Type_set_attr")
}

//export shmpi_MPI_Type_get_attr
func shmpi_MPI_Type_get_attr(h C.uintptr_t, k C.int, v unsafe.Pointer, flag *C.int) C.int {
	t, r := typeArg(h, "MPI_Type_get_attr")
	if t == nil {
		return r
	}
	if v == nil || flag == nil {
		return failNone(MPI_ERR_ARG, "MPI_Type_get_attr")
	}
	val, ok, rc := t.getAttr(kindType, int(k))
	if rc != 0 {
		return failNone(rc, "MPI_Type_get_attr")
	}
	*flag = 0
	if ok {
		*(*uintptr)(v), *flag = val, 1
	}
	return 0
}

//export shmpi_MPI_Type_delete_attr
func shmpi_MPI_Type_delete_attr(h C.uintptr_t, k C.int) C.int {
	t, r := typeArg(h, "MPI_Type_delete_attr")
	if t == nil {
		return r
	}
	return failNone(t.deleteAttr(kindType, handle(h), int(k)), "MPI_Type_delete_attr")
}
