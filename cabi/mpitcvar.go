package main

/*
#include "cabi.h"
*/
import "C"

import (
	"os"
	"strconv"
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
)

// Control variables: the engine's settings (ext.Settings). Each is an
// MPI_INT bound to no object. Those whose value the job fixes (the
// segment's layout) are MPI_T_SCOPE_CONSTANT, those the runtime decides
// at Init or may change itself are READONLY, and the four that every wait
// or send reads afresh are LOCAL and writable while the runtime runs
// (ext.SetTuning).
//
// Before MPI_Init they read what Init will take from the environment
// (the SHMPI_ variable, else the default) where that does not depend on
// the job, and -1 where it does; after MPI_Finalize, the values the rank
// ended with.

type cvar struct {
	name, desc string
	verb       int
	enum       C.uintptr_t // tEnumBase+i, or 0
	scope      int
	tune       int // ext.TuneSpin..., or -1: not writable
	get        func(s ext.Settings) int
	pre        func() int // before the runtime starts
}

// envInt is the integer value of environment variable k, if it is one
// at least lo.
func envInt(k string, lo int) (int, bool) {
	v, err := strconv.Atoi(os.Getenv(k))
	return v, err == nil && v >= lo
}

func preEnv(k string, lo, dflt int) func() int {
	return func() int {
		if v, ok := envInt(k, lo); ok {
			return v
		}
		return dflt
	}
}

func preUnknown() int { return -1 }

func tBool(b bool) int {
	if b {
		return 1
	}
	return 0
}

var cvars = []cvar{
	{"shmpi_wait_mode", "How waits begin (SHMPI_SPIN=0 forces sleep): spin while ranks do not outnumber cores, else yield and sleep at once; the same at every rank",
		tVerbUserBasic, tEnumWaitMode, tScopeReadonly, -1,
		func(s ext.Settings) int { return tBool(s.Spin) }, preUnknown},
	{"shmpi_spin_us", "Microseconds a waiting rank polls before it sleeps, when it spins (SHMPI_SPIN; default 20). Writable while the runtime runs on ranks that spin",
		tVerbTunerBasic, 0, tScopeLocal, ext.TuneSpin,
		func(s ext.Settings) int { return s.SpinUs }, preEnv(job.EnvSpin, 0, 20)},
	{"shmpi_sleep_timeout_ms", "Bound of every sleep of a waiting rank in milliseconds, after which it checks its peers' liveness itself (SHMPI_SLEEP_TIMEOUT_MS; default 100). Writable while the runtime runs (1 to 1000000)",
		tVerbTunerDetail, 0, tScopeLocal, ext.TuneSleepTimeout,
		func(s ext.Settings) int { return s.SleepTimeoutMs }, preEnv(job.EnvSleepTimeout, 1, 100)},
	{"shmpi_yield_budget", "sched_yield calls a collective wait makes before it sleeps when ranks outnumber cores (SHMPI_YIELDS; default max(16, 2 x ranks per core)). Writable while the runtime runs",
		tVerbTunerDetail, 0, tScopeLocal, ext.TuneYields,
		func(s ext.Settings) int { return s.Yields }, preEnv(job.EnvYields, 0, -1)},
	{"shmpi_eager_max", "Largest message in bytes sent through an eager chunk; larger ones go by rendezvous (SHMPI_EAGER_MAX; default and maximum the chunk size). Writable while the runtime runs (0 to shmpi_chunk_size)",
		tVerbTunerBasic, 0, tScopeLocal, ext.TuneEager,
		func(s ext.Settings) int { return s.EagerMax }, preUnknown},
	{"shmpi_inline_max", "Largest message in bytes carried in the receiver's inbox record itself (no chunk)",
		tVerbTunerBasic, 0, tScopeConstant, -1,
		func(s ext.Settings) int { return s.InlineMax }, preUnknown},
	{"shmpi_short_max", "Largest message in bytes that a streaming sender packs two to a cache line",
		tVerbTunerDetail, 0, tScopeConstant, -1,
		func(s ext.Settings) int { return s.ShortMax }, preUnknown},
	{"shmpi_chunk_size", "Bytes of an eager chunk in the job's segment (SHMPI_CHUNK_SIZE, read by the launcher)",
		tVerbTunerBasic, 0, tScopeConstant, -1,
		func(s ext.Settings) int { return s.ChunkSize }, func() int { return job.DefaultLayout(1).ChunkSize }},
	{"shmpi_chunk_count", "Eager chunks per rank in the job's segment (SHMPI_CHUNK_COUNT, read by the launcher)",
		tVerbTunerDetail, 0, tScopeConstant, -1,
		func(s ext.Settings) int { return s.ChunkCount }, func() int { return job.DefaultLayout(1).ChunkCount }},
	{"shmpi_inbox_slots", "Records in each rank's inbox ring",
		tVerbMPIDevDetail, 0, tScopeConstant, -1,
		func(s ext.Settings) int { return s.InboxSlots }, func() int { return job.DefaultLayout(1).InboxSlots }},
	{"shmpi_handshake_slots", "Handshake slots per rank: synchronous and rendezvous sends waiting for their match",
		tVerbMPIDevDetail, 0, tScopeConstant, -1,
		func(s ext.Settings) int { return s.HSSlots }, func() int { return job.DefaultLayout(1).HSSlots }},
	{"shmpi_large_copy", "How rendezvous messages are copied (SHMPI_NO_CMA=1 forces pipelined; a refused single copy switches to it)",
		tVerbTunerBasic, tEnumLargeCopy, tScopeReadonly, -1,
		func(s ext.Settings) int { return tBool(s.CMA) }, preUnknown},
	{"shmpi_cores", "Cores the job's segment was made for: more ranks than this, and waits sleep rather than spin",
		tVerbUserDetail, 0, tScopeConstant, -1,
		func(s ext.Settings) int { return s.Cores }, preUnknown},
	{"shmpi_ft", "1 if failures are tolerated (shmrun --ft, a singleton): a failed rank is an error (MPIX_ERR_PROC_FAILED), not the end of the job",
		tVerbUserBasic, 0, tScopeConstant, -1,
		func(ext.Settings) int {
			if world == nil {
				return -1
			}
			return tBool(world.FT())
		}, preUnknown},
}

func findCvar(name string) int {
	for i := range cvars {
		if cvars[i].name == name {
			return i
		}
	}
	return -1
}

// tCvarHandles maps the handles of MPI_T_cvar_handle_alloc to their
// variables' indices. Handles come from tNextHandle and are never reused,
// so a freed handle stays invalid.
var tCvarHandles = map[C.uintptr_t]int{}

// tNextHandle numbers every MPI_T handle and session (tMu). Values start
// above MPI_T_PVAR_ALL_HANDLES and the enumerations.
var tNextHandle C.uintptr_t = 0x10000

func tNewHandle() C.uintptr_t {
	tNextHandle++
	return tNextHandle
}

//export shmpi_MPI_T_cvar_get_num
func shmpi_MPI_T_cvar_get_num(n *C.int) C.int { return tGetNum(n, len(cvars)) }

//export shmpi_MPI_T_cvar_get_index
func shmpi_MPI_T_cvar_get_index(name *C.char, idx *C.int) C.int {
	return tGetIndex(name, idx, findCvar)
}

//export shmpi_MPI_T_cvar_get_info
func shmpi_MPI_T_cvar_get_info(idx C.int, name *C.char, nameLen, verb *C.int, dtype, enumtype *C.uintptr_t, desc *C.char, descLen, bind, scope *C.int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if idx < 0 || int(idx) >= len(cvars) {
		return MPI_T_ERR_INVALID_INDEX
	}
	v := &cvars[idx]
	tString(v.name, name, nameLen)
	setInt(verb, v.verb)
	if dtype != nil {
		*dtype = MPI_INT
	}
	if enumtype != nil {
		*enumtype = v.enum // 0 is MPI_T_ENUM_NULL
	}
	tString(v.desc, desc, descLen)
	setInt(bind, tBindNoObject)
	setInt(scope, v.scope)
	return 0
}

//export shmpi_MPI_T_cvar_handle_alloc
func shmpi_MPI_T_cvar_handle_alloc(idx C.int, obj unsafe.Pointer, h *C.uintptr_t, count *C.int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if idx < 0 || int(idx) >= len(cvars) {
		return MPI_T_ERR_INVALID_INDEX
	}
	if h == nil || count == nil {
		return MPI_T_ERR_INVALID
	}
	// Bound to no object: obj is ignored, as MPI says.
	*h = tNewHandle()
	tCvarHandles[*h] = int(idx)
	*count = 1
	return 0
}

//export shmpi_MPI_T_cvar_handle_free
func shmpi_MPI_T_cvar_handle_free(h *C.uintptr_t) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if h == nil {
		return MPI_T_ERR_INVALID
	}
	if _, ok := tCvarHandles[*h]; !ok {
		return MPI_T_ERR_INVALID_HANDLE
	}
	delete(tCvarHandles, *h)
	*h = 0 // MPI_T_CVAR_HANDLE_NULL
	return 0
}

//export shmpi_MPI_T_cvar_read
func shmpi_MPI_T_cvar_read(h C.uintptr_t, buf unsafe.Pointer) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	i, ok := tCvarHandles[h]
	if !ok {
		return MPI_T_ERR_INVALID_HANDLE
	}
	if buf == nil {
		return MPI_T_ERR_INVALID
	}
	v := &cvars[i]
	val := 0
	if s, ok := tSettings(); ok {
		val = v.get(s)
	} else {
		val = v.pre()
	}
	*(*C.int)(buf) = C.int(val)
	return 0
}

//export shmpi_MPI_T_cvar_write
func shmpi_MPI_T_cvar_write(h C.uintptr_t, buf unsafe.Pointer) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	i, ok := tCvarHandles[h]
	if !ok {
		return MPI_T_ERR_INVALID_HANDLE
	}
	if buf == nil {
		return MPI_T_ERR_INVALID
	}
	v := &cvars[i]
	if v.tune < 0 {
		return MPI_T_ERR_CVAR_SET_NEVER
	}
	if !tRunning() {
		if state.Load() == 2 || worldDone {
			return MPI_T_ERR_CVAR_SET_NEVER // the runtime has ended
		}
		return MPI_T_ERR_CVAR_SET_NOT_NOW // Init reads the environment
	}
	s, _ := tSettings()
	if v.tune == ext.TuneSpin && !s.Spin {
		return MPI_T_ERR_CVAR_SET_NEVER // this rank never spins
	}
	if !ext.SetTuning(tEngine(), v.tune, int(*(*C.int)(buf))) {
		return MPI_T_ERR_INVALID // out of range
	}
	return 0
}
