package main

/*
#include "cabi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
)

// Performance variables: the engine's counters (ext.Counters), each an
// MPI_UNSIGNED_LONG_LONG of this process (bound to no object).
//
// The event counters (messages, bytes, sleeps, yields) are
// MPI_T_PVAR_CLASS_COUNTER, neither continuous nor read-only: a handle
// counts while started (MPI_T_pvar_start/stop), from 0, and may be reset
// or written; readreset is atomic (one reading of the engine serves both).
// The levels (unexpected messages) and the failures known are continuous
// and read-only: a handle reads the engine's value itself.

type pvar struct {
	name, desc string
	verb       int
	class      int
	fixed      bool // continuous and read-only
	get        func(c *ext.Counters) uint64
}

var pvars = []pvar{
	{"shmpi_msgs_sent", "Point-to-point messages this rank sent (to any rank and itself; those of collectives built on them included), counted when each starts towards a destination not known to have failed",
		tVerbUserBasic, tClassCounter, false, func(c *ext.Counters) uint64 { return c.MsgsSent }},
	{"shmpi_bytes_sent", "Bytes of the messages of shmpi_msgs_sent",
		tVerbUserBasic, tClassCounter, false, func(c *ext.Counters) uint64 { return c.BytesSent }},
	{"shmpi_msgs_received", "Point-to-point messages that reached this rank, matched or not (from any rank and itself)",
		tVerbUserBasic, tClassCounter, false, func(c *ext.Counters) uint64 { return c.MsgsRecv }},
	{"shmpi_bytes_received", "Bytes of the messages of shmpi_msgs_received (a truncated receive still counts the message's bytes)",
		tVerbUserBasic, tClassCounter, false, func(c *ext.Counters) uint64 { return c.BytesRecv }},
	{"shmpi_unexpected_msgs", "Messages that arrived before their receive and wait for it now, on every communicator",
		tVerbUserBasic, tClassLevel, true, func(c *ext.Counters) uint64 { return c.Unexpected }},
	{"shmpi_sleeps", "Futex sleeps of this rank's waits (they poll first while ranks do not outnumber cores)",
		tVerbTunerBasic, tClassCounter, false, func(c *ext.Counters) uint64 { return c.Sleeps }},
	{"shmpi_sleep_timeouts", "Sleeps that ended by shmpi_sleep_timeout_ms rather than a wake-up, with what they waited for already there: a wake-up some poster missed",
		tVerbTunerDetail, tClassCounter, false, func(c *ext.Counters) uint64 { return c.SleepTimeouts }},
	{"shmpi_yields", "sched_yield calls of collective waits while ranks outnumber cores",
		tVerbTunerDetail, tClassCounter, false, func(c *ext.Counters) uint64 { return c.Yields }},
	{"shmpi_c_fast_sends", "MPI_Send calls of this process's fast path, which sends a small message without entering Go (SHMPI_C_FASTPATH=0 turns it off)",
		tVerbTunerDetail, tClassCounter, false, func(*ext.Counters) uint64 { return uint64(C.shmpi_fast.sends) }},
	{"shmpi_c_fast_recvs", "MPI_Recv calls of this process's fast path, which receives a small message without entering Go",
		tVerbTunerDetail, tClassCounter, false, func(*ext.Counters) uint64 { return uint64(C.shmpi_fast.recvs) }},
	{"shmpi_c_fast_colls", "MPI_Allreduce and MPI_Barrier calls of this process's fast path, which runs a small collective without entering Go while ranks outnumber cores",
		tVerbTunerDetail, tClassCounter, false, func(*ext.Counters) uint64 { return uint64(C.shmpi_fast.colls) }},
	{"shmpi_failures_known", "Failed processes of the job this rank knows of (ULFM): those the kernel reported or other ranks declared",
		tVerbUserBasic, tClassCounter, true, func(c *ext.Counters) uint64 { return c.FailuresKnown }},
}

func findPvar(name string) int {
	for i := range pvars {
		if pvars[i].name == name {
			return i
		}
	}
	return -1
}

type pvarSession struct {
	handles map[C.uintptr_t]*pvarHandle
}

// pvarHandle is a handle's state: a counter's handle shows acc plus, while
// started, what the engine counted since mark.
type pvarHandle struct {
	s       *pvarSession
	v       *pvar
	started bool
	acc     uint64
	mark    uint64
}

var (
	tSessions    = map[C.uintptr_t]*pvarSession{}
	tPvarHandles = map[C.uintptr_t]*pvarHandle{}
)

const tAllHandles = 1 // MPI_T_PVAR_ALL_HANDLES

func (h *pvarHandle) value(c *ext.Counters) uint64 {
	cur := h.v.get(c)
	if h.v.fixed {
		return cur
	}
	if h.started {
		return h.acc + cur - h.mark
	}
	return h.acc
}

//export shmpi_MPI_T_pvar_get_num
func shmpi_MPI_T_pvar_get_num(n *C.int) C.int { return tGetNum(n, len(pvars)) }

//export shmpi_MPI_T_pvar_get_index
func shmpi_MPI_T_pvar_get_index(name *C.char, class C.int, idx *C.int) C.int {
	return tGetIndex(name, idx, func(n string) int {
		if i := findPvar(n); i >= 0 && pvars[i].class == int(class) {
			return i
		}
		return -1
	})
}

//export shmpi_MPI_T_pvar_get_info
func shmpi_MPI_T_pvar_get_info(idx C.int, name *C.char, nameLen, verb, vclass *C.int, dtype, enumtype *C.uintptr_t, desc *C.char, descLen, bind, readonly, continuous, atomic *C.int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if idx < 0 || int(idx) >= len(pvars) {
		return MPI_T_ERR_INVALID_INDEX
	}
	v := &pvars[idx]
	tString(v.name, name, nameLen)
	setInt(verb, v.verb)
	setInt(vclass, v.class)
	if dtype != nil {
		*dtype = MPI_UNSIGNED_LONG_LONG
	}
	if enumtype != nil {
		*enumtype = 0 // MPI_T_ENUM_NULL
	}
	tString(v.desc, desc, descLen)
	setInt(bind, tBindNoObject)
	setInt(readonly, tBool(v.fixed))
	setInt(continuous, tBool(v.fixed))
	setInt(atomic, 1)
	return 0
}

//export shmpi_MPI_T_pvar_session_create
func shmpi_MPI_T_pvar_session_create(s *C.uintptr_t) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if s == nil {
		return MPI_T_ERR_INVALID
	}
	*s = tNewHandle()
	tSessions[*s] = &pvarSession{handles: map[C.uintptr_t]*pvarHandle{}}
	return 0
}

//export shmpi_MPI_T_pvar_session_free
func shmpi_MPI_T_pvar_session_free(s *C.uintptr_t) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if s == nil {
		return MPI_T_ERR_INVALID
	}
	ss := tSessions[*s]
	if ss == nil {
		return MPI_T_ERR_INVALID_SESSION
	}
	for h := range ss.handles {
		delete(tPvarHandles, h)
	}
	delete(tSessions, *s)
	*s = 0 // MPI_T_PVAR_SESSION_NULL
	return 0
}

//export shmpi_MPI_T_pvar_handle_alloc
func shmpi_MPI_T_pvar_handle_alloc(s C.uintptr_t, idx C.int, obj unsafe.Pointer, h *C.uintptr_t, count *C.int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	ss := tSessions[s]
	if ss == nil {
		return MPI_T_ERR_INVALID_SESSION
	}
	if idx < 0 || int(idx) >= len(pvars) {
		return MPI_T_ERR_INVALID_INDEX
	}
	if h == nil || count == nil {
		return MPI_T_ERR_INVALID
	}
	// Bound to no object: obj is ignored. A counter's handle starts
	// stopped at 0.
	*h = tNewHandle()
	ph := &pvarHandle{s: ss, v: &pvars[idx]}
	ss.handles[*h] = ph
	tPvarHandles[*h] = ph
	*count = 1
	return 0
}

// pvarArgs finds the session and the handle of a call on one handle, or
// on every handle of the session (MPI_T_PVAR_ALL_HANDLES: h nil) where
// all allows it.
func pvarArgs(s, hh C.uintptr_t, all bool) (*pvarSession, *pvarHandle, C.int) {
	ss := tSessions[s]
	if ss == nil {
		return nil, nil, MPI_T_ERR_INVALID_SESSION
	}
	if hh == tAllHandles && all {
		return ss, nil, 0
	}
	h := ss.handles[hh]
	if h == nil {
		// Not a handle, or one of another session.
		return nil, nil, MPI_T_ERR_INVALID_HANDLE
	}
	return ss, h, 0
}

//export shmpi_MPI_T_pvar_handle_free
func shmpi_MPI_T_pvar_handle_free(s C.uintptr_t, h *C.uintptr_t) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if h == nil {
		return MPI_T_ERR_INVALID
	}
	ss, _, r := pvarArgs(s, *h, false)
	if r != 0 {
		return r
	}
	delete(ss.handles, *h)
	delete(tPvarHandles, *h)
	*h = 0 // MPI_T_PVAR_HANDLE_NULL
	return 0
}

// startStop starts (on) or stops one handle or all of a session's. On
// all, continuous variables are passed over, as MPI says.
func startStop(s, hh C.uintptr_t, on bool) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	ss, h, r := pvarArgs(s, hh, true)
	if r != 0 {
		return r
	}
	if h != nil && h.v.fixed {
		return MPI_T_ERR_PVAR_NO_STARTSTOP
	}
	c := tCounters()
	set := func(h *pvarHandle) {
		if h.v.fixed || h.started == on {
			return
		}
		cur := h.v.get(&c)
		if on {
			h.mark = cur
		} else {
			h.acc += cur - h.mark
		}
		h.started = on
	}
	if h != nil {
		set(h)
		return 0
	}
	for _, h := range ss.handles {
		set(h)
	}
	return 0
}

//export shmpi_MPI_T_pvar_start
func shmpi_MPI_T_pvar_start(s, h C.uintptr_t) C.int { return startStop(s, h, true) }

//export shmpi_MPI_T_pvar_stop
func shmpi_MPI_T_pvar_stop(s, h C.uintptr_t) C.int { return startStop(s, h, false) }

//export shmpi_MPI_T_pvar_read
func shmpi_MPI_T_pvar_read(s, hh C.uintptr_t, buf unsafe.Pointer) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	_, h, r := pvarArgs(s, hh, false)
	if r != 0 {
		return r
	}
	if buf == nil {
		return MPI_T_ERR_INVALID
	}
	c := tCounters()
	*(*C.ulonglong)(buf) = C.ulonglong(h.value(&c))
	return 0
}

// setValue makes a counter's handle show v from now on.
func (h *pvarHandle) setValue(c *ext.Counters, v uint64) {
	h.acc = v
	h.mark = h.v.get(c)
}

//export shmpi_MPI_T_pvar_write
func shmpi_MPI_T_pvar_write(s, hh C.uintptr_t, buf unsafe.Pointer) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	_, h, r := pvarArgs(s, hh, false)
	if r != 0 {
		return r
	}
	if h.v.fixed {
		return MPI_T_ERR_PVAR_NO_WRITE
	}
	if buf == nil {
		return MPI_T_ERR_INVALID
	}
	c := tCounters()
	h.setValue(&c, uint64(*(*C.ulonglong)(buf)))
	return 0
}

//export shmpi_MPI_T_pvar_reset
func shmpi_MPI_T_pvar_reset(s, hh C.uintptr_t) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	ss, h, r := pvarArgs(s, hh, true)
	if r != 0 {
		return r
	}
	if h != nil && h.v.fixed {
		return MPI_T_ERR_PVAR_NO_WRITE
	}
	c := tCounters()
	if h != nil {
		h.setValue(&c, 0)
		return 0
	}
	for _, h := range ss.handles {
		if !h.v.fixed {
			h.setValue(&c, 0)
		}
	}
	return 0
}

//export shmpi_MPI_T_pvar_readreset
func shmpi_MPI_T_pvar_readreset(s, hh C.uintptr_t, buf unsafe.Pointer) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	_, h, r := pvarArgs(s, hh, false)
	if r != 0 {
		return r
	}
	if h.v.fixed {
		return MPI_T_ERR_PVAR_NO_WRITE
	}
	if buf == nil {
		return MPI_T_ERR_INVALID
	}
	// One reading serves both: nothing counted between them is lost.
	c := tCounters()
	*(*C.ulonglong)(buf) = C.ulonglong(h.value(&c))
	h.setValue(&c, 0)
	return 0
}
