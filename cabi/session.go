package main

/*
#include "cabi.h"
*/
import "C"

import (
	"hash/fnv"
	"slices"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Sessions (MPI 4.0 chapter 11.3) over the one job a shmpi process
// belongs to. The first MPI_Session_init of a process that has not
// called MPI_Init starts the runtime (MPI_Initialized stays false); the
// runtime ends at MPI_Finalize or at the last MPI_Session_finalize,
// whichever comes when the other model no longer uses it (finishRuntime),
// and cannot be started again in that process. The process sets are
// "mpi://WORLD" (every rank of the job) and "mpi://SELF".
//
// MPI_Comm_create_from_group is ranks' CreateGroup on the world, told
// apart from concurrent ones by a hash of its string tag (MPI requires
// concurrent calls on overlapping groups to use different tags; two
// tags with the same 29-bit hash, used at once by overlapping groups,
// would be mistaken for one another). MPI_Intercomm_create_from_groups
// makes a communicator of the union of the two groups (ordered by world
// rank), splits it into the local groups, and joins them with
// ranks.IntercommCreate through the union, so that the leaders' messages
// meet no user traffic.

type sessionObj struct {
	errh handle
	eh   *errhObj
	info *ranks.Info
}

// sessionsOpen counts the sessions not yet finalized.
var sessionsOpen atomic.Int32

// The process sets.
const (
	psetWorld = "mpi://WORLD"
	psetSelf  = "mpi://SELF"
)

var psets = []string{psetWorld, psetSelf}

func getSession(h handle) *sessionObj {
	s := sessions.get(h)
	if s == nil {
		return nil
	}
	return *s
}

// sessionArg validates a session argument.
func sessionArg(h C.uintptr_t, fname string) (*sessionObj, C.int) {
	s := getSession(handle(h))
	if s == nil {
		return nil, failNone(MPI_ERR_SESSION, fname)
	}
	return s, 0
}

// failSession raises code on session h.
func failSession(h C.uintptr_t, code int, fname string) C.int {
	return raise(C.SHMPI_ON_SESSION, handle(h), code, fname, nil)
}

// errhArg reads an error handler argument for an object of kind: a
// predefined handler, or a user handler of that kind.
func errhArg(h C.uintptr_t, kind int) *errhObj {
	e := errhs.get(handle(h))
	if e == nil || (*e).predef == 0 && (*e).kind != kind {
		return nil
	}
	return *e
}

//export shmpi_MPI_Session_init
func shmpi_MPI_Session_init(info C.uintptr_t, errh C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Session_init"
	eh := errhArg(errh, kindSession)
	if eh == nil {
		return failNone(MPI_ERR_ERRHANDLER, fname)
	}
	if out == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	in, r := infoArg(info, fname)
	if r != 0 {
		return r
	}
	kept := ranks.NewInfo()
	if in != nil {
		if d, err := in.Dup(); err == nil {
			kept = d
		}
	}
	initMu.Lock()
	defer initMu.Unlock()
	if worldDone {
		return failNone(MPI_ERR_OTHER, fname)
	}
	if world == nil {
		if r := startRuntime(fname); r != 0 {
			return r
		}
	}
	// The level provided, under MPI 4.0's key (a "thread_level" the
	// caller asked for is replaced by it) and Open MPI's.
	kept.Set("thread_level", "MPI_THREAD_MULTIPLE")
	kept.Set("mpi_thread_support_level", "MPI_THREAD_MULTIPLE")
	h, _ := sessions.add(&sessionObj{errh: handle(errh), eh: eh, info: kept})
	if h == 0 {
		return failNone(MPI_ERR_INTERN, fname)
	}
	sessionsOpen.Add(1)
	*out = C.uintptr_t(h)
	return 0
}

//export shmpi_MPI_Session_finalize
func shmpi_MPI_Session_finalize(session *C.uintptr_t) C.int {
	const fname = "MPI_Session_finalize"
	if session == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	if _, r := sessionArg(*session, fname); r != 0 {
		return r
	}
	initMu.Lock()
	defer initMu.Unlock()
	if !sessions.remove(handle(*session)) {
		return failNone(MPI_ERR_SESSION, fname)
	}
	*session = MPI_SESSION_NULL
	sessionsOpen.Add(-1)
	if err := finishRuntime(); err != nil {
		return failNone(classOf(err), fname)
	}
	return 0
}

//export shmpi_MPI_Session_get_num_psets
func shmpi_MPI_Session_get_num_psets(session C.uintptr_t, info C.uintptr_t, n *C.int) C.int {
	const fname = "MPI_Session_get_num_psets"
	if _, r := sessionArg(session, fname); r != 0 {
		return r
	}
	if n == nil {
		return failSession(session, MPI_ERR_ARG, fname)
	}
	*n = C.int(len(psets))
	return 0
}

//export shmpi_MPI_Session_get_nth_pset
func shmpi_MPI_Session_get_nth_pset(session C.uintptr_t, info C.uintptr_t, n C.int, length *C.int, name *C.char) C.int {
	const fname = "MPI_Session_get_nth_pset"
	if _, r := sessionArg(session, fname); r != 0 {
		return r
	}
	if n < 0 || int(n) >= len(psets) || length == nil || *length > 0 && name == nil {
		return failSession(session, MPI_ERR_ARG, fname)
	}
	// MPI 4.0: a length of 0 asks for the name's length; otherwise at
	// most length-1 characters and the terminating null are written.
	// Either way length becomes the name's length with its null.
	s := psets[n]
	if room := int(*length); room > 0 {
		k := min(len(s), room-1)
		out := unsafe.Slice((*byte)(unsafe.Pointer(name)), k+1)
		copy(out, s[:k])
		out[k] = 0
	}
	*length = C.int(len(s) + 1)
	return 0
}

// psetGroup is the group of a process set, or false if there is none of
// that name.
func psetGroup(name string) (ranks.Group, bool) {
	var c *ranks.Comm
	switch name {
	case psetWorld:
		c = world.Comm()
	case psetSelf:
		if s := getComm(MPI_COMM_SELF); s != nil {
			c = s.c
		}
	}
	if c == nil {
		return ranks.Group{}, false
	}
	g, err := c.Group()
	return g, err == nil
}

//export shmpi_MPI_Session_get_pset_info
func shmpi_MPI_Session_get_pset_info(session C.uintptr_t, name *C.char, out *C.uintptr_t) C.int {
	const fname = "MPI_Session_get_pset_info"
	if _, r := sessionArg(session, fname); r != 0 {
		return r
	}
	if name == nil || out == nil {
		return failSession(session, MPI_ERR_ARG, fname)
	}
	g, ok := psetGroup(C.GoString(name))
	if !ok {
		return failSession(session, MPI_ERR_ARG, fname)
	}
	in := ranks.NewInfo()
	in.Set("mpi_size", strconv.Itoa(g.Size()))
	*out = C.uintptr_t(newInfo(in))
	return 0
}

//export shmpi_MPI_Session_get_info
func shmpi_MPI_Session_get_info(session C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Session_get_info"
	s, r := sessionArg(session, fname)
	if s == nil {
		return r
	}
	if out == nil {
		return failSession(session, MPI_ERR_ARG, fname)
	}
	in, err := s.info.Dup()
	if err != nil {
		return raise(C.SHMPI_ON_SESSION, handle(session), classOf(err), fname, err)
	}
	*out = C.uintptr_t(newInfo(in))
	return 0
}

//export shmpi_MPI_Group_from_session_pset
func shmpi_MPI_Group_from_session_pset(session C.uintptr_t, name *C.char, out *C.uintptr_t) C.int {
	const fname = "MPI_Group_from_session_pset"
	if _, r := sessionArg(session, fname); r != 0 {
		return r
	}
	if name == nil || out == nil {
		return failSession(session, MPI_ERR_ARG, fname)
	}
	g, ok := psetGroup(C.GoString(name))
	if !ok {
		return failSession(session, MPI_ERR_ARG, fname)
	}
	*out = C.uintptr_t(newGroup(g))
	return 0
}

// Session error handlers.

//export shmpi_MPI_Session_create_errhandler
func shmpi_MPI_Session_create_errhandler(fn unsafe.Pointer, out *C.uintptr_t) C.int {
	return createErrh(fn, kindSession, out, "MPI_Session_create_errhandler")
}

//export shmpi_MPI_Session_set_errhandler
func shmpi_MPI_Session_set_errhandler(session C.uintptr_t, errh C.uintptr_t) C.int {
	const fname = "MPI_Session_set_errhandler"
	s, r := sessionArg(session, fname)
	if s == nil {
		return r
	}
	eh := errhArg(errh, kindSession)
	if eh == nil {
		return failSession(session, MPI_ERR_ERRHANDLER, fname)
	}
	s.errh, s.eh = handle(errh), eh
	return 0
}

//export shmpi_MPI_Session_get_errhandler
func shmpi_MPI_Session_get_errhandler(session C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Session_get_errhandler"
	s, r := sessionArg(session, fname)
	if s == nil {
		return r
	}
	if out == nil {
		return failSession(session, MPI_ERR_ARG, fname)
	}
	*out = C.uintptr_t(s.errh)
	return 0
}

//export shmpi_MPI_Session_call_errhandler
func shmpi_MPI_Session_call_errhandler(session C.uintptr_t, code C.int) C.int {
	const fname = "MPI_Session_call_errhandler"
	if _, r := sessionArg(session, fname); r != 0 {
		return r
	}
	failSession(session, int(code), fname)
	return 0
}

// Communicators from groups.

// stringTag is a creation tag of ranks (0..MaxCreateTag) for an MPI
// string tag.
func stringTag(s string) int {
	h := fnv.New64a()
	h.Write([]byte(s))
	return int(h.Sum64() % uint64(ranks.MaxCreateTag+1))
}

// errhParent is a stand-in parent whose error handler a new
// communicator takes (newComm).
func errhParent(errh C.uintptr_t, eh *errhObj) *commObj {
	return &commObj{errh: handle(errh), eh: eh}
}

//export shmpi_MPI_Comm_create_from_group
func shmpi_MPI_Comm_create_from_group(group C.uintptr_t, tag *C.char, info C.uintptr_t, errh C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Comm_create_from_group"
	if !live() {
		return failNone(MPI_ERR_OTHER, fname)
	}
	g, r := groupArg(group, fname)
	if g == nil {
		return r
	}
	eh := errhArg(errh, kindComm)
	if eh == nil {
		return failNone(MPI_ERR_ERRHANDLER, fname)
	}
	// MPI 4.0: errh is the new communicator's handler, and this call's.
	if tag == nil || out == nil {
		return raiseWith(eh, MPI_COMM_NULL, MPI_ERR_ARG, fname, nil)
	}
	if _, r := infoArg(info, fname); r != 0 {
		return r
	}
	if g.g.Rank() == ranks.Undefined {
		*out = MPI_COMM_NULL
		return 0
	}
	c, err := world.Comm().CreateGroup(g.g, stringTag(C.GoString(tag)))
	if err != nil {
		return raiseWith(eh, MPI_COMM_NULL, classOf(err), fname, err)
	}
	*out = C.uintptr_t(newComm(c, errhParent(errh, eh)))
	return 0
}

//export shmpi_MPI_Intercomm_create_from_groups
func shmpi_MPI_Intercomm_create_from_groups(local C.uintptr_t, localLeader C.int, remote C.uintptr_t, remoteLeader C.int, tag *C.char, info C.uintptr_t, errh C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Intercomm_create_from_groups"
	if !live() {
		return failNone(MPI_ERR_OTHER, fname)
	}
	lg, r := groupArg(local, fname)
	if lg == nil {
		return r
	}
	rg, r := groupArg(remote, fname)
	if rg == nil {
		return r
	}
	eh := errhArg(errh, kindComm)
	if eh == nil {
		return failNone(MPI_ERR_ERRHANDLER, fname)
	}
	if tag == nil || out == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	if _, r := infoArg(info, fname); r != 0 {
		return r
	}
	me := lg.g.Rank()
	if me == ranks.Undefined {
		return failNone(MPI_ERR_GROUP, fname)
	}
	if localLeader < 0 || int(localLeader) >= lg.g.Size() || remoteLeader < 0 || int(remoteLeader) >= rg.g.Size() {
		return failNone(MPI_ERR_RANK, fname)
	}
	lw, rw := lg.g.WorldRanks(), rg.g.WorldRanks()
	for _, w := range lw {
		if slices.Contains(rw, w) {
			// MPI: the groups must be disjoint.
			return failNone(MPI_ERR_GROUP, fname)
		}
	}
	// The union, in world order: the same group at every member.
	all := slices.Sorted(slices.Values(append(slices.Clone(lw), rw...)))
	wg, err := world.Comm().Group()
	if err != nil {
		return raise(C.SHMPI_ON_NONE, 0, classOf(err), fname, err)
	}
	ug, err := wg.Incl(all)
	if err != nil {
		return raise(C.SHMPI_ON_NONE, 0, classOf(err), fname, err)
	}
	u, err := world.Comm().CreateGroup(ug, stringTag(C.GoString(tag)))
	if err != nil {
		return raise(C.SHMPI_ON_NONE, 0, classOf(err), fname, err)
	}
	defer u.Free()
	// The side is told apart by the lower world rank of its group.
	color := 0
	if slices.Min(lw) > slices.Min(rw) {
		color = 1
	}
	lc, err := u.Split(color, me)
	if err != nil {
		return raise(C.SHMPI_ON_NONE, 0, classOf(err), fname, err)
	}
	defer lc.Free()
	remoteInU := slices.Index(all, rw[remoteLeader])
	ic, err := ranks.IntercommCreate(lc, int(localLeader), u, remoteInU, 0)
	if err != nil {
		return raise(C.SHMPI_ON_NONE, 0, classOf(err), fname, err)
	}
	*out = C.uintptr_t(newComm(ic, errhParent(errh, eh)))
	return 0
}
