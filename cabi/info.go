package main

/*
#include "cabi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Info objects are ranks.Info values (ordered keys, each with a value;
// keys shmpi does not use are kept and given back, as MPI asks), so that
// the calls that take hints pass them to the Go API as they are.

func init() {
	infos.predef(MPI_INFO_ENV, ranks.NewInfo())
}

// newInfo registers in (nil: a new empty one) and returns its handle.
func newInfo(in *ranks.Info) handle {
	if in == nil {
		in = ranks.NewInfo()
	}
	h, _ := infos.add(in)
	return h
}

func getInfo(h C.uintptr_t, fname string) (*ranks.Info, C.int) {
	i := infos.get(handle(h))
	if i == nil || *i == nil {
		return nil, failNone(MPI_ERR_INFO, fname)
	}
	return *i, 0
}

// infoArg is an info argument that may be MPI_INFO_NULL (nil).
func infoArg(h C.uintptr_t, fname string) (*ranks.Info, C.int) {
	if handle(h) == MPI_INFO_NULL {
		return nil, 0
	}
	return getInfo(h, fname)
}

func infoFail(err error, fname string) C.int {
	if err == nil {
		return 0
	}
	return raise(C.SHMPI_ON_NONE, 0, classOf(err), fname, err)
}

//export shmpi_MPI_Info_create
func shmpi_MPI_Info_create(out *C.uintptr_t) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_create")
	}
	*out = C.uintptr_t(newInfo(nil))
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
	return infoFail(i.Set(C.GoString(key), C.GoString(val)), "MPI_Info_set")
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
	return infoFail(i.Delete(C.GoString(key)), "MPI_Info_delete")
}

// infoGet looks key up; a key too long to be set is MPI_ERR_INFO_KEY.
func infoGet(i *ranks.Info, key *C.char, fname string) (string, bool, C.int) {
	v, ok, err := i.Get(C.GoString(key))
	if err != nil {
		return "", false, infoFail(err, fname)
	}
	return v, ok, 0
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
	v, ok, r := infoGet(i, key, "MPI_Info_get_string")
	if r != 0 {
		return r
	}
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
	k, err := i.NKeys()
	*n = C.int(k)
	return infoFail(err, "MPI_Info_get_nkeys")
}

//export shmpi_MPI_Info_get_nthkey
func shmpi_MPI_Info_get_nthkey(h C.uintptr_t, n C.int, key *C.char) C.int {
	i, r := getInfo(h, "MPI_Info_get_nthkey")
	if i == nil {
		return r
	}
	if key == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_get_nthkey")
	}
	k, err := i.Nthkey(int(n))
	if err != nil {
		return infoFail(err, "MPI_Info_get_nthkey")
	}
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
	n, err := i.Dup()
	if err != nil {
		return infoFail(err, "MPI_Info_dup")
	}
	*out = C.uintptr_t(newInfo(n))
	return 0
}

// infoWith returns a new info handle holding kvs, in order.
func infoWith(kvs ...[2]string) handle {
	in := ranks.NewInfo()
	for _, kv := range kvs {
		in.Set(kv[0], kv[1])
	}
	return newInfo(in)
}

//export shmpi_MPI_Info_create_env
func shmpi_MPI_Info_create_env(argc C.int, argv unsafe.Pointer, out *C.uintptr_t) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Info_create_env")
	}
	var args []string
	if argc > 0 && argv != nil {
		for _, a := range unsafe.Slice((**C.char)(argv), int(argc)) {
			args = append(args, C.GoString(a))
		}
	}
	in := ranks.NewInfo()
	fillInfoEnv(in, args)
	*out = C.uintptr_t(newInfo(in))
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
	v, ok, r := infoGet(i, key, "MPI_Info_get")
	if r != 0 {
		return r
	}
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
	v, ok, r := infoGet(i, key, "MPI_Info_get_valuelen")
	if r != 0 {
		return r
	}
	*flag = 0
	if ok {
		*flag, *n = 1, C.int(len(v))
	}
	return 0
}

//export shmpi_MPI_Abi_get_info
func shmpi_MPI_Abi_get_info(out *C.uintptr_t) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, "MPI_Abi_get_info")
	}
	*out = C.uintptr_t(infoWith([2]string{"mpi_aint_size", "8"}, [2]string{"mpi_count_size", "8"}, [2]string{"mpi_offset_size", "8"}))
	return 0
}
