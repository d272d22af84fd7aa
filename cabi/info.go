package main

/*
#include "cabi.h"
*/
import "C"

import (
	"strconv"
	"sync"
	"unsafe"
)

// Info objects: ordered key/value pairs. shmpi uses no key; every key is
// kept and given back, as MPI asks.

type infoObj struct {
	mu   sync.Mutex
	keys []string
	vals map[string]string
}

func init() {
	infos.predef(MPI_INFO_ENV, &infoObj{vals: map[string]string{}})
}

func newInfo() handle {
	h, _ := infos.add(&infoObj{vals: map[string]string{}})
	return h
}

func getInfo(h C.uintptr_t, fname string) (*infoObj, C.int) {
	i := infos.get(handle(h))
	if i == nil {
		return nil, failNone(MPI_ERR_INFO, fname)
	}
	return *i, 0
}

//export shmpi_MPI_Info_create
func shmpi_MPI_Info_create(out *C.uintptr_t) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_create")
	}
	*out = C.uintptr_t(newInfo())
	return 0
}

//export shmpi_MPI_Info_free
func shmpi_MPI_Info_free(p *C.uintptr_t) C.int {
	if p == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_free")
	}
	if _, r := getInfo(*p, "MPI_Info_free"); r != 0 {
		return r
	}
	if handle(*p) == MPI_INFO_ENV {
		return failNone(MPI_ERR_INFO, "MPI_Info_free")
	}
	infos.remove(handle(*p))
	*p = MPI_INFO_NULL
	return 0
}

//export shmpi_MPI_Info_set
func shmpi_MPI_Info_set(h C.uintptr_t, key, val *C.char) C.int {
	i, r := getInfo(h, "MPI_Info_set")
	if i == nil {
		return r
	}
	if key == nil || val == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_set")
	}
	k, v := C.GoString(key), C.GoString(val)
	if len(k) == 0 || len(k) >= MPI_MAX_INFO_KEY {
		return failNone(MPI_ERR_INFO_KEY, "MPI_Info_set")
	}
	if len(v) >= MPI_MAX_INFO_VAL {
		return failNone(MPI_ERR_INFO_VALUE, "MPI_Info_set")
	}
	i.mu.Lock()
	if _, ok := i.vals[k]; !ok {
		i.keys = append(i.keys, k)
	}
	i.vals[k] = v
	i.mu.Unlock()
	return 0
}

//export shmpi_MPI_Info_delete
func shmpi_MPI_Info_delete(h C.uintptr_t, key *C.char) C.int {
	i, r := getInfo(h, "MPI_Info_delete")
	if i == nil {
		return r
	}
	if key == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_delete")
	}
	k := C.GoString(key)
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.vals[k]; !ok {
		i.mu.Unlock()
		r := failNone(MPI_ERR_INFO_NOKEY, "MPI_Info_delete")
		i.mu.Lock()
		return r
	}
	delete(i.vals, k)
	for j, kk := range i.keys {
		if kk == k {
			i.keys = append(i.keys[:j], i.keys[j+1:]...)
			break
		}
	}
	return 0
}

//export shmpi_MPI_Info_get_string
func shmpi_MPI_Info_get_string(h C.uintptr_t, key *C.char, buflen *C.int, val *C.char, flag *C.int) C.int {
	i, r := getInfo(h, "MPI_Info_get_string")
	if i == nil {
		return r
	}
	if key == nil || buflen == nil || flag == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_get_string")
	}
	i.mu.Lock()
	v, ok := i.vals[C.GoString(key)]
	i.mu.Unlock()
	*flag = 0
	if !ok {
		return 0
	}
	*flag = 1
	if *buflen > 0 && val != nil {
		putString(val, v, int(*buflen))
	}
	*buflen = C.int(len(v) + 1)
	return 0
}

//export shmpi_MPI_Info_get_nkeys
func shmpi_MPI_Info_get_nkeys(h C.uintptr_t, n *C.int) C.int {
	i, r := getInfo(h, "MPI_Info_get_nkeys")
	if i == nil {
		return r
	}
	if n == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_get_nkeys")
	}
	i.mu.Lock()
	*n = C.int(len(i.keys))
	i.mu.Unlock()
	return 0
}

//export shmpi_MPI_Info_get_nthkey
func shmpi_MPI_Info_get_nthkey(h C.uintptr_t, n C.int, key *C.char) C.int {
	i, r := getInfo(h, "MPI_Info_get_nthkey")
	if i == nil {
		return r
	}
	i.mu.Lock()
	if n < 0 || int(n) >= len(i.keys) || key == nil {
		i.mu.Unlock()
		return failNone(MPI_ERR_ARG, "MPI_Info_get_nthkey")
	}
	k := i.keys[n]
	i.mu.Unlock()
	putString(key, k, MPI_MAX_INFO_KEY)
	return 0
}

//export shmpi_MPI_Info_dup
func shmpi_MPI_Info_dup(h C.uintptr_t, out *C.uintptr_t) C.int {
	i, r := getInfo(h, "MPI_Info_dup")
	if i == nil {
		return r
	}
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_dup")
	}
	n := &infoObj{vals: map[string]string{}}
	i.mu.Lock()
	n.keys = append(n.keys, i.keys...)
	for k, v := range i.vals {
		n.vals[k] = v
	}
	i.mu.Unlock()
	nh, _ := infos.add(n)
	*out = C.uintptr_t(nh)
	return 0
}

//export shmpi_MPI_Info_create_env
func shmpi_MPI_Info_create_env(argc C.int, argv unsafe.Pointer, out *C.uintptr_t) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_create_env")
	}
	h := newInfo()
	i := *infos.get(h)
	if world != nil {
		i.keys = []string{"maxprocs", "soft"}
		i.vals["maxprocs"] = strconv.Itoa(world.Size())
		i.vals["soft"] = strconv.Itoa(world.Size())
	}
	*out = C.uintptr_t(h)
	return 0
}

//export shmpi_MPI_Info_get
func shmpi_MPI_Info_get(h C.uintptr_t, key *C.char, n C.int, val *C.char, flag *C.int) C.int {
	i, r := getInfo(h, "MPI_Info_get")
	if i == nil {
		return r
	}
	if key == nil || flag == nil || n < 0 || (val == nil && n > 0) {
		return failNone(MPI_ERR_ARG, "MPI_Info_get")
	}
	i.mu.Lock()
	v, ok := i.vals[C.GoString(key)]
	i.mu.Unlock()
	*flag = 0
	if ok {
		*flag = 1
		// valuelen excludes the terminating NUL (MPI_Info_get).
		putString(val, v, int(n)+1)
	}
	return 0
}

//export shmpi_MPI_Info_get_valuelen
func shmpi_MPI_Info_get_valuelen(h C.uintptr_t, key *C.char, n *C.int, flag *C.int) C.int {
	i, r := getInfo(h, "MPI_Info_get_valuelen")
	if i == nil {
		return r
	}
	if key == nil || flag == nil || n == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_get_valuelen")
	}
	i.mu.Lock()
	v, ok := i.vals[C.GoString(key)]
	i.mu.Unlock()
	*flag = 0
	if ok {
		*flag, *n = 1, C.int(len(v))
	}
	return 0
}

//export shmpi_MPI_Win_get_info
func shmpi_MPI_Win_get_info(h C.uintptr_t, out *C.uintptr_t) C.int {
	if o, r := getWin(h, "MPI_Win_get_info"); o == nil {
		return r
	}
	if out == nil {
		return winCode(h, MPI_ERR_ARG, "MPI_Win_get_info")
	}
	*out = C.uintptr_t(newInfo())
	return 0
}

//export shmpi_MPI_Win_set_info
func shmpi_MPI_Win_set_info(h C.uintptr_t, info C.uintptr_t) C.int {
	if o, r := getWin(h, "MPI_Win_set_info"); o == nil {
		return r
	}
	return 0
}

//export shmpi_MPI_Abi_get_info
func shmpi_MPI_Abi_get_info(out *C.uintptr_t) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Abi_get_info")
	}
	h := newInfo()
	i := *infos.get(h)
	for _, kv := range [][2]string{{"mpi_aint_size", "8"}, {"mpi_count_size", "8"}, {"mpi_offset_size", "8"}} {
		i.keys = append(i.keys, kv[0])
		i.vals[kv[0]] = kv[1]
	}
	*out = C.uintptr_t(h)
	return 0
}
