package main

/*
#include "cabi.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// The tool information interface (MPI_T, MPI 4.0 chapter 15): control
// variables (mpitvars.go), performance variables with sessions and
// handles (mpitpvar.go), categories, enumerations, events and sources
// (mpitevent.go). The variables are the engine's settings and counters,
// read from package ranks through internal/ext (ToolSettings,
// ToolCounters, SetTuning).
//
// MPI_T may be used before MPI_Init and after MPI_Finalize, and its
// errors are return codes only: no error handler is called (there may be
// no communicator to call it on).

// The MPI_T constants that the generated Go leaves out (the ABI's values).
const (
	tVerbUserBasic    = 9
	tVerbUserDetail   = 10
	tVerbTunerBasic   = 17
	tVerbTunerDetail  = 18
	tVerbMPIDevDetail = 34

	tBindNoObject = 1

	tScopeConstant = 1
	tScopeReadonly = 2
	tScopeLocal    = 3

	tClassLevel   = 2
	tClassCounter = 7

	tSourceOrdered = 1
)

var (
	// tMu guards all of MPI_T's state. It is never held while MPI calls
	// run user code, so a tool may use MPI_T in an attribute's delete
	// callback during MPI_Finalize.
	tMu   sync.Mutex
	tRefs int // MPI_T_init_thread calls not yet finalized
)

// tEngine returns a communicator of the running (or finalized) runtime,
// for internal/ext's tool functions, or nil before the runtime started.
// world is set, once, before state or sessionsOpen says it may be used;
// worldDone (set under initMu, which MPI_T cannot take: MPI_Finalize
// holds it while delete callbacks run) only once both say it no longer
// is, after the last MPI_Session_finalize.
func tEngine() *ranks.Comm {
	if state.Load() == 0 && sessionsOpen.Load() == 0 && tLastWorld == nil && !worldDone {
		return nil
	}
	w := world
	if w == nil {
		return nil
	}
	tLastWorld = w
	return w.Comm()
}

// tLastWorld is the runtime MPI_T last saw (tMu).
var tLastWorld *ranks.World

// tRunning reports whether the runtime runs now (not before its start,
// not after its end), for writes of control variables.
func tRunning() bool { return live() }

// tSettings and tCounters read the engine; ok is false before the
// runtime started.
func tSettings() (s ext.Settings, ok bool) {
	if c := tEngine(); c != nil {
		return ext.ToolSettings(c), true
	}
	return s, false
}

func tCounters() ext.Counters {
	if c := tEngine(); c != nil {
		return ext.ToolCounters(c)
	}
	return ext.Counters{} // nothing happened yet
}

// tString returns s the MPI_T way (MPI 4.0 15.3.3): at most *n-1
// characters and a NUL into buf, unless buf is NULL or *n is 0, and the
// length of s plus one in *n. A NULL n returns nothing.
func tString(s string, buf *C.char, n *C.int) {
	if n == nil {
		return
	}
	if buf != nil && *n > 0 {
		k := min(len(s), int(*n)-1)
		b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), k+1)
		copy(b, s[:k])
		b[k] = 0
	}
	*n = C.int(len(s) + 1)
}

func setInt(p *C.int, v int) {
	if p != nil {
		*p = C.int(v)
	}
}

func goName(p *C.char) string { return C.GoString(p) }

// tEnter takes tMu and says whether MPI_T is initialized; the caller
// unlocks.
func tEnter() C.int {
	tMu.Lock()
	if tRefs == 0 {
		return MPI_T_ERR_NOT_INITIALIZED
	}
	return 0
}

//export shmpi_MPI_T_init_thread
func shmpi_MPI_T_init_thread(required C.int, provided *C.int) C.int {
	tMu.Lock()
	defer tMu.Unlock()
	tRefs++
	// Every call takes tMu: any thread level is provided.
	setInt(provided, threadLevel(int(required)))
	return 0
}

//export shmpi_MPI_T_finalize
func shmpi_MPI_T_finalize() C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	tRefs--
	if tRefs == 0 {
		// MPI: the last finalize frees every handle and session.
		clear(tCvarHandles)
		clear(tSessions)
		clear(tPvarHandles)
	}
	return 0
}

// Enumerations.

type tEnum struct {
	name  string
	items []tItem
}

type tItem struct {
	value int
	name  string
}

// tEnums are the enumerations of the variables (tEnumBase+i is the
// handle of tEnums[i]; 0 is MPI_T_ENUM_NULL).
var tEnums = []tEnum{
	{"shmpi_wait_mode", []tItem{{0, "sleep: ranks outnumber cores; waits yield or sleep at once"},
		{1, "spin: ranks do not outnumber cores; waits poll, then sleep"}}},
	{"shmpi_large_copy", []tItem{{0, "pipelined: through the segment's chunks"},
		{1, "cma: single copy by process_vm_readv/writev"}}},
}

const (
	tEnumBase      = 0x7e00
	tEnumWaitMode  = tEnumBase
	tEnumLargeCopy = tEnumBase + 1
)

func tEnumOf(h C.uintptr_t) *tEnum {
	i := int(h) - tEnumBase
	if i < 0 || i >= len(tEnums) {
		return nil
	}
	return &tEnums[i]
}

//export shmpi_MPI_T_enum_get_info
func shmpi_MPI_T_enum_get_info(h C.uintptr_t, num *C.int, name *C.char, nameLen *C.int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	e := tEnumOf(h)
	if e == nil {
		return MPI_T_ERR_INVALID_HANDLE
	}
	setInt(num, len(e.items))
	tString(e.name, name, nameLen)
	return 0
}

//export shmpi_MPI_T_enum_get_item
func shmpi_MPI_T_enum_get_item(h C.uintptr_t, idx C.int, value *C.int, name *C.char, nameLen *C.int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	e := tEnumOf(h)
	if e == nil {
		return MPI_T_ERR_INVALID_HANDLE
	}
	if idx < 0 || int(idx) >= len(e.items) {
		// MPI 4.0 deprecated MPI_T_ERR_INVALID_ITEM for this.
		return MPI_T_ERR_INVALID_INDEX
	}
	it := e.items[idx]
	setInt(value, it.value)
	tString(it.name, name, nameLen)
	return 0
}

// Categories.

type tCategory struct {
	name, desc string
	cvars      []string
	pvars      []string
	cats       []string
}

var tCategories = []tCategory{
	{"shmpi", "shmpi, the shared-memory runtime: every variable, by subsystem", nil, nil,
		[]string{"shmpi_wait", "shmpi_protocol", "shmpi_ulfm"}},
	{"shmpi_wait", "How a waiting rank spins, yields and sleeps",
		[]string{"shmpi_wait_mode", "shmpi_spin_us", "shmpi_sleep_timeout_ms", "shmpi_yield_budget"},
		[]string{"shmpi_sleeps", "shmpi_sleep_timeouts", "shmpi_yields"}, nil},
	{"shmpi_protocol", "Point-to-point protocols and the segment's layout, and the messages that went through them",
		[]string{"shmpi_inline_max", "shmpi_short_max", "shmpi_eager_max", "shmpi_chunk_size", "shmpi_chunk_count",
			"shmpi_inbox_slots", "shmpi_handshake_slots", "shmpi_large_copy", "shmpi_cores"},
		[]string{"shmpi_msgs_sent", "shmpi_bytes_sent", "shmpi_msgs_received", "shmpi_bytes_received", "shmpi_unexpected_msgs",
			"shmpi_c_fast_sends", "shmpi_c_fast_recvs", "shmpi_c_fast_colls"}, nil},
	{"shmpi_ulfm", "Fault tolerance (ULFM)", []string{"shmpi_ft"}, []string{"shmpi_failures_known"}, nil},
}

// tIndices resolves names to indices of a table (at first use: the
// tables are fixed).
func tIndices(names []string, find func(string) int) []int {
	out := make([]int, len(names))
	for i, n := range names {
		out[i] = find(n)
		if out[i] < 0 {
			panic("mpit: category names unknown variable " + n)
		}
	}
	return out
}

func findCategory(name string) int {
	for i := range tCategories {
		if tCategories[i].name == name {
			return i
		}
	}
	return -1
}

// catUpdate is MPI_T_category_changed's stamp: the variables and
// categories never change in a run.
const catUpdate = 1

//export shmpi_MPI_T_category_changed
func shmpi_MPI_T_category_changed(update *C.int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if update == nil {
		return MPI_T_ERR_INVALID
	}
	*update = catUpdate
	return 0
}

//export shmpi_MPI_T_category_get_num
func shmpi_MPI_T_category_get_num(n *C.int) C.int { return tGetNum(n, len(tCategories)) }

//export shmpi_MPI_T_category_get_index
func shmpi_MPI_T_category_get_index(name *C.char, idx *C.int) C.int {
	return tGetIndex(name, idx, findCategory)
}

// tGetNum answers an MPI_T_*_get_num call: there are count of the kind.
func tGetNum(n *C.int, count int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if n == nil {
		return MPI_T_ERR_INVALID
	}
	*n = C.int(count)
	return 0
}

// tGetIndex answers an MPI_T_*_get_index call; find gives the index of a
// name, or -1.
func tGetIndex(name *C.char, idx *C.int, find func(string) int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if name == nil || idx == nil {
		return MPI_T_ERR_INVALID
	}
	i := find(goName(name))
	if i < 0 {
		return MPI_T_ERR_INVALID_NAME
	}
	*idx = C.int(i)
	return 0
}

//export shmpi_MPI_T_category_get_info
func shmpi_MPI_T_category_get_info(idx C.int, name *C.char, nameLen *C.int, desc *C.char, descLen *C.int, ncvars, npvars, ncats *C.int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if idx < 0 || int(idx) >= len(tCategories) {
		return MPI_T_ERR_INVALID_INDEX
	}
	c := &tCategories[idx]
	tString(c.name, name, nameLen)
	tString(c.desc, desc, descLen)
	setInt(ncvars, len(c.cvars))
	setInt(npvars, len(c.pvars))
	setInt(ncats, len(c.cats))
	return 0
}

// categoryList answers the MPI_T_category_get_* calls that list
// indices: up to n of them into out.
func categoryList(idx, n C.int, out *C.int, list func(c *tCategory) []int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if idx < 0 || int(idx) >= len(tCategories) {
		return MPI_T_ERR_INVALID_INDEX
	}
	if n < 0 || (n > 0 && out == nil) {
		return MPI_T_ERR_INVALID
	}
	l := list(&tCategories[idx])
	if n > 0 && len(l) > 0 {
		o := unsafe.Slice((*C.int)(out), min(int(n), len(l)))
		for i := range o {
			o[i] = C.int(l[i])
		}
	}
	return 0
}

//export shmpi_MPI_T_category_get_cvars
func shmpi_MPI_T_category_get_cvars(idx, n C.int, out *C.int) C.int {
	return categoryList(idx, n, out, func(c *tCategory) []int { return tIndices(c.cvars, findCvar) })
}

//export shmpi_MPI_T_category_get_pvars
func shmpi_MPI_T_category_get_pvars(idx, n C.int, out *C.int) C.int {
	return categoryList(idx, n, out, func(c *tCategory) []int { return tIndices(c.pvars, findPvar) })
}

//export shmpi_MPI_T_category_get_categories
func shmpi_MPI_T_category_get_categories(idx, n C.int, out *C.int) C.int {
	return categoryList(idx, n, out, func(c *tCategory) []int { return tIndices(c.cats, findCategory) })
}

//export shmpi_MPI_T_category_get_num_events
func shmpi_MPI_T_category_get_num_events(idx C.int, n *C.int) C.int {
	defer tMu.Unlock()
	if r := tEnter(); r != 0 {
		return r
	}
	if idx < 0 || int(idx) >= len(tCategories) {
		return MPI_T_ERR_INVALID_INDEX
	}
	if n == nil {
		return MPI_T_ERR_INVALID
	}
	*n = 0 // no events (mpitevent.go)
	return 0
}

//export shmpi_MPI_T_category_get_events
func shmpi_MPI_T_category_get_events(idx, n C.int, out *C.int) C.int {
	return categoryList(idx, n, out, func(c *tCategory) []int { return nil })
}
