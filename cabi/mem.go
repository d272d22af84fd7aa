package main

/*
#include "cabi.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// MPI_Alloc_mem and MPI_Free_mem: ranks.AllocMem's memory, which peers
// map (windows over it are shared memory, and large messages from it are
// copied through such mappings).

var (
	memMu   sync.Mutex
	memUsed = map[uintptr][]byte{}
)

//export shmpi_MPI_Alloc_mem
func shmpi_MPI_Alloc_mem(size C.int64_t, info C.uintptr_t, base unsafe.Pointer) C.int {
	if size < 0 || base == nil {
		return failNone(MPI_ERR_ARG, "MPI_Alloc_mem")
	}
	n := int(size)
	if n == 0 {
		n = 1
	}
	b, err := ranks.AllocMem(n)
	if err != nil {
		return raise(C.SHMPI_ON_NONE, 0, MPI_ERR_NO_MEM, "MPI_Alloc_mem", err)
	}
	p := unsafe.Pointer(&b[0])
	memMu.Lock()
	memUsed[uintptr(p)] = b
	memMu.Unlock()
	*(*unsafe.Pointer)(base) = p
	return 0
}

//export shmpi_MPI_Free_mem
func shmpi_MPI_Free_mem(base unsafe.Pointer) C.int {
	memMu.Lock()
	b, ok := memUsed[uintptr(base)]
	delete(memUsed, uintptr(base))
	memMu.Unlock()
	if !ok {
		if base == nil {
			return 0
		}
		return failNone(MPI_ERR_BASE, "MPI_Free_mem")
	}
	if err := ranks.FreeMem(b); err != nil {
		return raise(C.SHMPI_ON_NONE, 0, classOf(err), "MPI_Free_mem", err)
	}
	return 0
}
