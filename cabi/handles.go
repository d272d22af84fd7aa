package main

/*
#include <stdlib.h>
#include "cabi.h"
*/
import "C"

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Handles. A predefined handle is the ABI's value (a small integer below
// 0x1000). A user handle is gen<<32 | kind<<24 | slot: slot indexes the
// table of its kind and gen is the generation of the object that holds
// the slot, so a handle of a freed object, or of another kind, is found
// invalid instead of reaching whatever took the slot next. The tables are
// chunks that never move, read without a lock (an MPI program that frees
// a handle while another thread uses it is erroneous); allocation and
// freeing take the table's mutex. Communicators and datatypes also keep
// an entry in C memory at the same slot (cabi.h), for the calls fast.c
// answers without entering Go.

type handle = uintptr

// Kinds of handle (bits 24-31 of a user handle).
const (
	kindComm = 1 + iota
	kindType
	kindGroup
	kindOp
	kindWin
	kindInfo
	kindErrh
	kindReq
	kindMsg
	kindFile
	kindSession
	numKinds
)

const (
	chunkSize = C.SHMPI_CHUNK
	maxChunks = C.SHMPI_MAXCHUNKS
)

type slot[T any] struct {
	gen  atomic.Uint32 // the live object's generation; 0: free
	last uint32        // the generation of the slot's last object
	v    T
}

type chunk[T any] [chunkSize]slot[T]

// table is the handles of one kind. Slots below npre are the predefined
// handles base, base+1, ...; user objects take the others.
type table[T any] struct {
	kind    uint32
	base    handle
	npre    uint32
	onChunk func(i int) // allocates the C entries of chunk i
	mu      sync.Mutex
	chunks  [maxChunks]atomic.Pointer[chunk[T]]
	free    []uint32
	next    uint32
}

func newTable[T any](kind uint32, base handle, npre uint32) *table[T] {
	return &table[T]{kind: kind, base: base, npre: npre, next: npre}
}

// decode splits h into a slot and a generation, or says that h is not of
// this kind.
func (t *table[T]) decode(h handle) (idx, gen uint32, ok bool) {
	if h-t.base < handle(t.npre) {
		return uint32(h - t.base), 1, true
	}
	if uint32(h>>24)&0xff != t.kind {
		return 0, 0, false
	}
	idx = uint32(h) & 0xffffff
	return idx, uint32(h >> 32), idx/chunkSize < maxChunks
}

// get returns the object of h, or nil if h is not a live handle of this
// table.
func (t *table[T]) get(h handle) *T {
	idx, gen, ok := t.decode(h)
	if !ok || gen == 0 {
		return nil
	}
	c := t.chunks[idx/chunkSize].Load()
	if c == nil {
		return nil
	}
	s := &c[idx%chunkSize]
	if s.gen.Load() != gen {
		return nil
	}
	return &s.v
}

func (t *table[T]) chunkOf(idx uint32) *chunk[T] {
	ci := idx / chunkSize
	c := t.chunks[ci].Load()
	if c == nil {
		c = new(chunk[T])
		if t.onChunk != nil {
			t.onChunk(int(ci))
		}
		t.chunks[ci].Store(c)
	}
	return c
}

// predef installs the predefined handle h.
func (t *table[T]) predef(h handle, v T) *T {
	t.mu.Lock()
	defer t.mu.Unlock()
	idx := uint32(h - t.base)
	s := &t.chunkOf(idx)[idx%chunkSize]
	s.v = v
	s.last = 1
	s.gen.Store(1)
	return &s.v
}

// add stores v in a new slot and returns its handle; 0 if the table is
// full.
func (t *table[T]) add(v T) (handle, *T) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var idx uint32
	if n := len(t.free); n > 0 {
		idx = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		if t.next >= maxChunks*chunkSize {
			return 0, nil
		}
		idx = t.next
		t.next++
	}
	s := &t.chunkOf(idx)[idx%chunkSize]
	gen := s.last + 1
	if gen == 0 {
		gen = 1
	}
	s.last = gen
	s.v = v
	s.gen.Store(gen)
	return handle(gen)<<32 | handle(t.kind)<<24 | handle(idx), &s.v
}

// remove frees h's slot; false if h was not live. Predefined handles are
// never freed.
func (t *table[T]) remove(h handle) bool {
	idx, gen, ok := t.decode(h)
	if !ok || idx < t.npre {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.chunks[idx/chunkSize].Load()
	if c == nil {
		return false
	}
	s := &c[idx%chunkSize]
	if s.gen.Load() != gen || gen == 0 {
		return false
	}
	s.gen.Store(0)
	var zero T
	s.v = zero
	t.free = append(t.free, idx)
	return true
}

// slotOf is h's slot (h must be valid).
func (t *table[T]) slotOf(h handle) uint32 {
	idx, _, _ := t.decode(h)
	return idx
}

// genOf is the generation of the object in slot idx (0 if none).
func (t *table[T]) genOf(idx uint32) uint32 {
	if idx/chunkSize >= maxChunks {
		return 0
	}
	c := t.chunks[idx/chunkSize].Load()
	if c == nil {
		return 0
	}
	return c[idx%chunkSize].gen.Load()
}

// cEntries allocates the C chunk i of a C table (zeroed, never freed).
func cEntries(chunks unsafe.Pointer, i int, size uintptr) {
	p := C.calloc(chunkSize, C.size_t(size))
	arr := (*[maxChunks]unsafe.Pointer)(chunks)
	atomicStorePointer(&arr[i], p)
}

func atomicStorePointer(p *unsafe.Pointer, v unsafe.Pointer) {
	atomic.StorePointer(p, v)
}

// commEnt and typeEnt are the C entries of a slot.
func commEnt(idx uint32) *C.shmpi_comm_ent {
	base := atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&C.shmpi_comm_chunks[idx/chunkSize])))
	return (*C.shmpi_comm_ent)(unsafe.Add(base, uintptr(idx%chunkSize)*unsafe.Sizeof(C.shmpi_comm_ent{})))
}

func typeEnt(idx uint32) *C.shmpi_type_ent {
	base := atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(&C.shmpi_type_chunks[idx/chunkSize])))
	return (*C.shmpi_type_ent)(unsafe.Add(base, uintptr(idx%chunkSize)*unsafe.Sizeof(C.shmpi_type_ent{})))
}

// publishGen sets a C entry's generation last, so that C never sees a
// generation with stale fields.
func publishGen(p *C.uint32_t, gen uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(p)), gen)
}

// The tables.
var (
	comms    = newTable[*commObj](kindComm, 0x100, 8)
	types    = newTable[*dtype](kindType, 0x200, 0x100)
	groups   = newTable[*groupObj](kindGroup, 0x108, 2)
	ops      = newTable[*opObj](kindOp, 0x020, 0x20)
	wins     = newTable[*winObj](kindWin, 0x110, 1)
	infos    = newTable[*ranks.Info](kindInfo, 0x130, 2)
	errhs    = newTable[*errhObj](kindErrh, 0x140, 4)
	reqs     = newTable[reqObj](kindReq, 0x180, 1)
	msgs     = newTable[*msgObj](kindMsg, 0x128, 2)
	sessions = newTable[*sessionObj](kindSession, 0x120, 1)
)

func init() {
	comms.onChunk = func(i int) {
		cEntries(unsafe.Pointer(&C.shmpi_comm_chunks), i, unsafe.Sizeof(C.shmpi_comm_ent{}))
	}
	types.onChunk = func(i int) {
		cEntries(unsafe.Pointer(&C.shmpi_type_chunks), i, unsafe.Sizeof(C.shmpi_type_ent{}))
	}
}

//export shmpi_gen_of
func shmpi_gen_of(kind, idx C.int) C.uint32_t {
	i := uint32(idx)
	var g uint32
	switch kind {
	case kindComm:
		g = comms.genOf(i)
	case kindType:
		g = types.genOf(i)
	case kindGroup:
		g = groups.genOf(i)
	case kindOp:
		g = ops.genOf(i)
	case kindWin:
		g = wins.genOf(i)
	case kindInfo:
		g = infos.genOf(i)
	case kindErrh:
		g = errhs.genOf(i)
	case kindReq:
		g = reqs.genOf(i)
	case kindMsg:
		g = msgs.genOf(i)
	case kindSession:
		g = sessions.genOf(i)
	case kindFile:
		g = files.genOf(i)
	}
	return C.uint32_t(g)
}
