package main

/*
#include "cabi.h"
*/
import "C"

import (
	"math"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Events and sources.
//
// shmpi defines no events (MPI allows none). What would make one (a
// message matched, a failure found, a wait gone to sleep) happens under
// the engine lock, much of it on the fast paths: a callback there would
// run user code under the lock, and queueing instances for later would
// cost the fast paths a write per message. The counters (mpitpvar.go)
// cover those occurrences instead. So there are no event types, no
// registrations and no instances: every call on an index, a registration
// or an instance is an invalid index or handle.
//
// There is one source, the clock of event timestamps and of MPI_Wtime:
// CLOCK_MONOTONIC in nanoseconds.

const tSourceName = "shmpi_clock_monotonic"

//export shmpi_MPI_T_source_get_num
func shmpi_MPI_T_source_get_num(n *C.int) C.int { return tGetNum(n, 1) }

//export shmpi_MPI_T_source_get_info
func shmpi_MPI_T_source_get_info(idx C.int, name *C.char, nameLen *C.int, desc *C.char, descLen *C.int, ordering *C.int, ticks, maxTicks *C.int64_t, info *C.uintptr_t) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if idx != 0 {
		return MPI_T_ERR_INVALID_INDEX
	}
	tString(tSourceName, name, nameLen)
	tString("CLOCK_MONOTONIC of this node in nanoseconds, the clock of MPI_Wtime; the same for every rank of a job", desc, descLen)
	setInt(ordering, tSourceOrdered)
	if ticks != nil {
		*ticks = 1e9
	}
	if maxTicks != nil {
		*maxTicks = math.MaxInt64
	}
	if info != nil {
		*info = C.uintptr_t(newInfo(nil)) // no hints; the caller frees it
	}
	return 0
}

//export shmpi_MPI_T_source_get_timestamp
func shmpi_MPI_T_source_get_timestamp(idx C.int, ts *C.int64_t) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if idx != 0 {
		return MPI_T_ERR_INVALID_INDEX
	}
	if ts == nil {
		return MPI_T_ERR_INVALID
	}
	var t unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &t) != nil {
		return MPI_T_ERR_NOT_SUPPORTED
	}
	*ts = C.int64_t(t.Nano())
	return 0
}

//export shmpi_MPI_T_event_get_num
func shmpi_MPI_T_event_get_num(n *C.int) C.int { return tGetNum(n, 0) }

// tNoEvent answers the calls on an event index, a registration or an
// instance: with no events, none is valid.
func tNoEvent(code C.int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	return code
}

//export shmpi_MPI_T_event_get_index
func shmpi_MPI_T_event_get_index(name *C.char, idx *C.int) C.int {
	return tGetIndex(name, idx, func(string) int { return -1 }) // no events
}

//export shmpi_MPI_T_event_get_info
func shmpi_MPI_T_event_get_info(idx C.int, name *C.char, nameLen, verb *C.int, types *C.uintptr_t, displs *C.int64_t, n *C.int, enumtype, info *C.uintptr_t, desc *C.char, descLen, bind *C.int) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_INDEX)
}

//export shmpi_MPI_T_event_handle_alloc
func shmpi_MPI_T_event_handle_alloc(idx C.int, obj unsafe.Pointer, info C.uintptr_t, reg *C.uintptr_t) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_INDEX)
}

//export shmpi_MPI_T_event_handle_free
func shmpi_MPI_T_event_handle_free(reg C.uintptr_t, user unsafe.Pointer, cb unsafe.Pointer) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}

//export shmpi_MPI_T_event_handle_get_info
func shmpi_MPI_T_event_handle_get_info(reg C.uintptr_t, info *C.uintptr_t) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}

//export shmpi_MPI_T_event_handle_set_info
func shmpi_MPI_T_event_handle_set_info(reg C.uintptr_t, info C.uintptr_t) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}

//export shmpi_MPI_T_event_register_callback
func shmpi_MPI_T_event_register_callback(reg C.uintptr_t, safety C.int, info C.uintptr_t, user unsafe.Pointer, cb unsafe.Pointer) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}

//export shmpi_MPI_T_event_callback_get_info
func shmpi_MPI_T_event_callback_get_info(reg C.uintptr_t, safety C.int, info *C.uintptr_t) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}

//export shmpi_MPI_T_event_callback_set_info
func shmpi_MPI_T_event_callback_set_info(reg C.uintptr_t, safety C.int, info C.uintptr_t) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}

//export shmpi_MPI_T_event_set_dropped_handler
func shmpi_MPI_T_event_set_dropped_handler(reg C.uintptr_t, cb unsafe.Pointer) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}

// An instance exists only during a callback, and none is ever made.

//export shmpi_MPI_T_event_copy
func shmpi_MPI_T_event_copy(inst C.uintptr_t, buf unsafe.Pointer) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}

//export shmpi_MPI_T_event_read
func shmpi_MPI_T_event_read(inst C.uintptr_t, i C.int, buf unsafe.Pointer) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}

//export shmpi_MPI_T_event_get_timestamp
func shmpi_MPI_T_event_get_timestamp(inst C.uintptr_t, ts *C.int64_t) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}

//export shmpi_MPI_T_event_get_source
func shmpi_MPI_T_event_get_source(inst C.uintptr_t, src *C.int) C.int {
	return tNoEvent(MPI_T_ERR_INVALID_HANDLE)
}
