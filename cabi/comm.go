package main

/*
#include <stdlib.h>
#include "cabi.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Communicators, groups, attributes and names.

type commObj struct {
	c    *ranks.Comm
	errh handle
	eh   *errhObj

	attrSet

	mu    sync.Mutex
	name  string
	named bool
	// hwType is the resource type MPI_COMM_TYPE_HW_UNGUIDED chose for
	// this communicator, which MPI_Comm_get_info reports.
	hwType string
	// nbc holds the neighbours of its topology (neighbor.go).
	nbc nbCache
	// persist counts the persistent point-to-point requests made on it
	// and not yet freed; a Free meanwhile (freePending) frees the Go
	// communicator only after the last of them, which MPI lets start
	// after MPI_Comm_free. Both under mu.
	persist     int
	freePending bool
	// pin keeps c where the C fast paths find it (pinComm).
	pin runtime.Pinner
}

// hold notes a persistent request made on o (persist).
func (o *commObj) hold() {
	o.mu.Lock()
	o.persist++
	o.mu.Unlock()
}

// unhold ends a hold; the last one after MPI_Comm_free frees the Go
// communicator.
func (o *commObj) unhold() {
	o.mu.Lock()
	o.persist--
	free := o.persist == 0 && o.freePending
	o.freePending = o.freePending && !free
	o.mu.Unlock()
	if free {
		o.c.Free()
	}
}

// getComm returns the communicator of h, or nil.
func getComm(h handle) *commObj {
	c := comms.get(h)
	if c == nil {
		return nil
	}
	return *c
}

// installComm sets up a predefined communicator.
func installComm(h handle, c *ranks.Comm, eh *errhObj) {
	o := &commObj{c: c, errh: errhHandle(eh), eh: eh}
	comms.predef(h, o)
	idx := comms.slotOf(h)
	e := commEnt(idx)
	e.rank, e.size = C.int32_t(c.Rank()), C.int32_t(c.Size())
	pinComm(o, e)
	publishGen(&e.gen, 1)
}

func errhHandle(eh *errhObj) handle {
	if eh.predef != 0 {
		return eh.predef
	}
	return MPI_ERRHANDLER_NULL
}

// newComm registers c, which inherits parent's error handler (MPI: a new
// communicator takes its parent's), and returns its handle.
func newComm(c *ranks.Comm, parent *commObj) handle {
	if c == nil {
		return MPI_COMM_NULL
	}
	o := &commObj{c: c, errh: parent.errh, eh: parent.eh}
	h, _ := comms.add(o)
	if h == 0 {
		c.Free()
		return MPI_COMM_NULL
	}
	idx := comms.slotOf(h)
	e := commEnt(idx)
	e.rank, e.size, e.inter = C.int32_t(c.Rank()), C.int32_t(c.Size()), 0
	if c.IsInter() {
		e.inter = 1
	}
	pinComm(o, e)
	publishGen(&e.gen, uint32(h>>32))
	return h
}

// freeComm deletes h's attributes, frees the communicator and its handle.
func freeComm(h handle, o *commObj) error {
	o.deleteAllAttrs(h)
	idx := comms.slotOf(h)
	publishGen(&commEnt(idx).gen, 0)
	unpinComm(o, commEnt(idx))
	comms.remove(h)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.persist > 0 {
		o.freePending = true // unhold frees it
		return nil
	}
	return o.c.Free()
}

// commArg validates a communicator argument.
func commArg(h C.uintptr_t, fname string) (*commObj, C.int) {
	if !live() {
		return nil, failNone(MPI_ERR_OTHER, fname)
	}
	c := getComm(handle(h))
	if c == nil {
		return nil, failCode(handle(h), MPI_ERR_COMM, fname)
	}
	return c, 0
}

func commDup(comm C.uintptr_t, info C.uintptr_t, withInfo bool, out *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	var in *ranks.Info
	if withInfo {
		if in, r = infoArg(info, fname); r != 0 {
			return r
		}
	}
	// MPI 4.0: MPI_Comm_dup does not copy the hints; _with_info sets them.
	var c *ranks.Comm
	var err error
	if withInfo {
		c, err = o.c.DupWithInfo(in)
	} else {
		c, err = o.c.Dup()
	}
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	h := newComm(c, o)
	attrs, rc := o.copyAttrs(handle(comm))
	if rc != 0 {
		freeComm(h, getComm(h))
		return failCode(handle(comm), rc, fname)
	}
	getComm(h).adopt(attrs)
	*out = C.uintptr_t(h)
	return 0
}

//export shmpi_MPI_Comm_dup
func shmpi_MPI_Comm_dup(comm C.uintptr_t, out *C.uintptr_t) C.int {
	return commDup(comm, MPI_INFO_NULL, false, out, "MPI_Comm_dup")
}

//export shmpi_MPI_Comm_dup_with_info
func shmpi_MPI_Comm_dup_with_info(comm C.uintptr_t, info C.uintptr_t, out *C.uintptr_t) C.int {
	return commDup(comm, info, true, out, "MPI_Comm_dup_with_info")
}

// commIdup is MPI_Comm_idup: the attributes' copy callbacks run now, on
// the attributes as they are now (as ranks.Comm.Idup does for its own);
// *out gets the new communicator when the request completes.
func commIdup(comm C.uintptr_t, info C.uintptr_t, withInfo bool, out *C.uintptr_t, req *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if out == nil || req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	var in *ranks.Info
	if withInfo {
		if in, r = infoArg(info, fname); r != 0 {
			return r
		}
	}
	attrs, rc := o.copyAttrs(handle(comm))
	if rc != 0 {
		return failCode(handle(comm), rc, fname)
	}
	nc := new(*ranks.Comm)
	rq, err := o.c.IdupWithInfo(in, nc)
	if err != nil {
		dropAttrs(attrs, MPI_COMM_NULL)
		return fail(handle(comm), err, fname)
	}
	after := func(s *ranks.Status, err error) error {
		if err != nil || *nc == nil {
			dropAttrs(attrs, MPI_COMM_NULL)
			*out = MPI_COMM_NULL
			return err
		}
		h := newComm(*nc, o)
		getComm(h).adopt(attrs)
		*out = C.uintptr_t(h)
		return nil
	}
	*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(comm), after: after}))
	return 0
}

//export shmpi_MPI_Comm_idup
func shmpi_MPI_Comm_idup(comm C.uintptr_t, out *C.uintptr_t, req *C.uintptr_t) C.int {
	return commIdup(comm, MPI_INFO_NULL, false, out, req, "MPI_Comm_idup")
}

//export shmpi_MPI_Comm_idup_with_info
func shmpi_MPI_Comm_idup_with_info(comm C.uintptr_t, info C.uintptr_t, out *C.uintptr_t, req *C.uintptr_t) C.int {
	return commIdup(comm, info, true, out, req, "MPI_Comm_idup_with_info")
}

//export shmpi_MPI_Comm_free
func shmpi_MPI_Comm_free(comm *C.uintptr_t) C.int {
	if comm == nil {
		return failNone(MPI_ERR_ARG, "MPI_Comm_free")
	}
	h := handle(*comm)
	o, r := commArg(*comm, "MPI_Comm_free")
	if o == nil {
		return r
	}
	if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
		return failCode(h, MPI_ERR_COMM, "MPI_Comm_free")
	}
	err := freeComm(h, o)
	forgetParent(h)
	*comm = MPI_COMM_NULL
	if err != nil {
		return fail(MPI_COMM_WORLD, err, "MPI_Comm_free")
	}
	return 0
}

//export shmpi_MPI_Comm_split
func shmpi_MPI_Comm_split(comm C.uintptr_t, color, key C.int, out *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Comm_split")
	if o == nil {
		return r
	}
	if out == nil || (color < 0 && color != MPI_UNDEFINED) {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_split")
	}
	col := int(color)
	if color == MPI_UNDEFINED {
		col = ranks.Undefined
	}
	c, err := o.c.Split(col, int(key))
	if err != nil {
		return fail(handle(comm), err, "MPI_Comm_split")
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPI_Comm_split_type
func shmpi_MPI_Comm_split_type(comm C.uintptr_t, kind, key C.int, info C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_Comm_split_type"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	in, r := infoArg(info, fname)
	if r != 0 {
		return r
	}
	var c *ranks.Comm
	var err error
	hw := ""
	switch kind {
	case MPI_UNDEFINED:
		// The same collective as the members that pass a type make.
		c, err = o.c.SplitType(ranks.Undefined, int(key))
	case MPI_COMM_TYPE_SHARED:
		c, err = o.c.SplitType(ranks.TypeShared, int(key))
	case MPI_COMM_TYPE_HW_GUIDED, MPI_COMM_TYPE_RESOURCE_GUIDED:
		// RESOURCE_GUIDED takes the resource type from the info as
		// HW_GUIDED does (as MPICH does); none, or one it does not
		// know, gives MPI_COMM_NULL.
		c, err = o.c.SplitTypeInfo(ranks.TypeHWGuided, int(key), in)
	case MPI_COMM_TYPE_HW_UNGUIDED:
		// The chosen level goes to the new communicator's info, not
		// into the caller's object.
		scratch := ranks.NewInfo()
		c, err = o.c.SplitTypeInfo(ranks.TypeHWUnguided, int(key), scratch)
		hw, _, _ = scratch.Get(ranks.HWResourceKey)
	default:
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if c != nil && in != nil {
		// The info's assertions are the new communicator's hints, as
		// MPI_Comm_dup_with_info's are.
		if err := c.SetInfo(in); err != nil {
			return fail(handle(comm), err, fname)
		}
	}
	h := newComm(c, o)
	if n := getComm(h); n != nil {
		n.hwType = hw
	}
	*out = C.uintptr_t(h)
	return 0
}

//export shmpi_MPI_Comm_create
func shmpi_MPI_Comm_create(comm C.uintptr_t, group C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Comm_create")
	if o == nil {
		return r
	}
	g := getGroup(handle(group))
	if g == nil {
		return failCode(handle(comm), MPI_ERR_GROUP, "MPI_Comm_create")
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_create")
	}
	c, err := o.c.Create(g.g)
	if err != nil {
		return fail(handle(comm), err, "MPI_Comm_create")
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPI_Comm_create_group
func shmpi_MPI_Comm_create_group(comm C.uintptr_t, group C.uintptr_t, tag C.int, out *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Comm_create_group")
	if o == nil {
		return r
	}
	g := getGroup(handle(group))
	if g == nil {
		return failCode(handle(comm), MPI_ERR_GROUP, "MPI_Comm_create_group")
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_create_group")
	}
	if g.g.Rank() == ranks.Undefined {
		*out = MPI_COMM_NULL
		return 0
	}
	if tag < 0 || int(tag) > ranks.MaxCreateTag {
		// The Go API tells concurrent calls apart by a small tag; larger
		// MPI tags are folded into its range.
		tag = C.int(int(uint(tag) % uint(ranks.MaxCreateTag+1)))
	}
	c, err := o.c.CreateGroup(g.g, int(tag))
	if err != nil {
		return fail(handle(comm), err, "MPI_Comm_create_group")
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPI_Comm_compare
func shmpi_MPI_Comm_compare(c1, c2 C.uintptr_t, result *C.int) C.int {
	a, r := commArg(c1, "MPI_Comm_compare")
	if a == nil {
		return r
	}
	b, r := commArg(c2, "MPI_Comm_compare")
	if b == nil {
		return r
	}
	if result == nil {
		return failCode(handle(c1), MPI_ERR_ARG, "MPI_Comm_compare")
	}
	res, err := ranks.Compare(a.c, b.c)
	if err != nil {
		return fail(handle(c1), err, "MPI_Comm_compare")
	}
	*result = C.int(compareResult(res))
	return 0
}

func compareResult(r int) int {
	switch r {
	case ranks.Ident:
		return MPI_IDENT
	case ranks.Congruent:
		return MPI_CONGRUENT
	case ranks.Similar:
		return MPI_SIMILAR
	}
	return MPI_UNEQUAL
}

//export shmpi_MPI_Comm_group
func shmpi_MPI_Comm_group(comm C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Comm_group")
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_group")
	}
	g, err := o.c.Group()
	if err != nil {
		return fail(handle(comm), err, "MPI_Comm_group")
	}
	*out = C.uintptr_t(newGroup(g))
	return 0
}

//export shmpi_MPI_Comm_remote_size
func shmpi_MPI_Comm_remote_size(comm C.uintptr_t, size *C.int) C.int {
	o, r := commArg(comm, "MPI_Comm_remote_size")
	if o == nil {
		return r
	}
	if !o.c.IsInter() {
		// MPI: an error on an intracommunicator.
		return failCode(handle(comm), MPI_ERR_COMM, "MPI_Comm_remote_size")
	}
	if size == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_remote_size")
	}
	*size = C.int(o.c.RemoteSize())
	return 0
}

//export shmpi_MPI_Comm_remote_group
func shmpi_MPI_Comm_remote_group(comm C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Comm_remote_group")
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_remote_group")
	}
	g, err := o.c.RemoteGroup()
	if err != nil {
		return fail(handle(comm), err, "MPI_Comm_remote_group")
	}
	*out = C.uintptr_t(newGroup(g))
	return 0
}

//export shmpi_MPI_Intercomm_create
func shmpi_MPI_Intercomm_create(local C.uintptr_t, localLeader C.int, peer C.uintptr_t, remoteLeader, tag C.int, out *C.uintptr_t) C.int {
	const fname = "MPI_Intercomm_create"
	o, r := commArg(local, fname)
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(local), MPI_ERR_ARG, fname)
	}
	if localLeader < 0 || int(localLeader) >= o.c.Size() {
		return failCode(handle(local), MPI_ERR_RANK, fname)
	}
	// The peer communicator matters at the local leader only (MPI lets
	// the others pass anything).
	var pc *ranks.Comm
	if o.c.Rank() == int(localLeader) {
		p := getComm(handle(peer))
		if p == nil {
			return failCode(handle(local), MPI_ERR_COMM, fname)
		}
		if remoteLeader < 0 || int(remoteLeader) >= p.c.Size() {
			return failCode(handle(local), MPI_ERR_RANK, fname)
		}
		if tag < 0 {
			return failCode(handle(local), MPI_ERR_TAG, fname)
		}
		pc = p.c
	}
	c, err := ranks.IntercommCreate(o.c, int(localLeader), pc, int(remoteLeader), int(tag))
	if err != nil {
		return fail(handle(local), err, fname)
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPI_Intercomm_merge
func shmpi_MPI_Intercomm_merge(comm C.uintptr_t, high C.int, out *C.uintptr_t) C.int {
	const fname = "MPI_Intercomm_merge"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if !o.c.IsInter() {
		return failCode(handle(comm), MPI_ERR_COMM, fname)
	}
	c, err := o.c.IntercommMerge(high != 0)
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPI_Comm_set_name
func shmpi_MPI_Comm_set_name(comm C.uintptr_t, name *C.char) C.int {
	o, r := commArg(comm, "MPI_Comm_set_name")
	if o == nil {
		return r
	}
	if name == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_set_name")
	}
	s := C.GoString(name)
	if len(s) >= MPI_MAX_OBJECT_NAME {
		s = s[:MPI_MAX_OBJECT_NAME-1]
	}
	o.mu.Lock()
	o.name, o.named = s, true
	o.mu.Unlock()
	o.c.SetName(s)
	return 0
}

//export shmpi_MPI_Comm_get_name
func shmpi_MPI_Comm_get_name(comm C.uintptr_t, name *C.char, n *C.int) C.int {
	o, r := commArg(comm, "MPI_Comm_get_name")
	if o == nil {
		return r
	}
	if name == nil || n == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_get_name")
	}
	o.mu.Lock()
	s := o.name
	if !o.named {
		s = o.c.Name()
	}
	o.mu.Unlock()
	*n = C.int(putString(name, s, MPI_MAX_OBJECT_NAME))
	return 0
}

//export shmpi_MPI_Comm_set_info
func shmpi_MPI_Comm_set_info(comm C.uintptr_t, info C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Comm_set_info")
	if o == nil {
		return r
	}
	in, r := infoArg(info, "MPI_Comm_set_info")
	if r != 0 {
		return r
	}
	return fail(handle(comm), o.c.SetInfo(in), "MPI_Comm_set_info")
}

//export shmpi_MPI_Comm_get_info
func shmpi_MPI_Comm_get_info(comm C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Comm_get_info")
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_get_info")
	}
	in, err := o.c.Info()
	if err != nil {
		return fail(handle(comm), err, "MPI_Comm_get_info")
	}
	if o.hwType != "" {
		in.Set(ranks.HWResourceKey, o.hwType)
	}
	*out = C.uintptr_t(newInfo(in))
	return 0
}

// Groups.

type groupObj struct{ g ranks.Group }

func init() {
	groups.predef(MPI_GROUP_EMPTY, &groupObj{g: ranks.EmptyGroup})
}

func getGroup(h handle) *groupObj {
	g := groups.get(h)
	if g == nil {
		return nil
	}
	return *g
}

func newGroup(g ranks.Group) handle {
	if g.Size() == 0 {
		return MPI_GROUP_EMPTY
	}
	h, _ := groups.add(&groupObj{g: g})
	if h == 0 {
		return MPI_GROUP_NULL
	}
	return h
}

func groupArg(h C.uintptr_t, fname string) (*groupObj, C.int) {
	g := getGroup(handle(h))
	if g == nil {
		return nil, failNone(MPI_ERR_GROUP, fname)
	}
	return g, 0
}

//export shmpi_MPI_Group_size
func shmpi_MPI_Group_size(group C.uintptr_t, size *C.int) C.int {
	g, r := groupArg(group, "MPI_Group_size")
	if g == nil {
		return r
	}
	if size == nil {
		return failNone(MPI_ERR_ARG, "MPI_Group_size")
	}
	*size = C.int(g.g.Size())
	return 0
}

//export shmpi_MPI_Group_rank
func shmpi_MPI_Group_rank(group C.uintptr_t, rank *C.int) C.int {
	g, r := groupArg(group, "MPI_Group_rank")
	if g == nil {
		return r
	}
	if rank == nil {
		return failNone(MPI_ERR_ARG, "MPI_Group_rank")
	}
	rk := g.g.Rank()
	if rk == ranks.Undefined || rk < 0 {
		rk = MPI_UNDEFINED
	}
	*rank = C.int(rk)
	return 0
}

//export shmpi_MPI_Group_free
func shmpi_MPI_Group_free(group *C.uintptr_t) C.int {
	if group == nil {
		return failNone(MPI_ERR_ARG, "MPI_Group_free")
	}
	h := handle(*group)
	if getGroup(h) == nil {
		return failNone(MPI_ERR_GROUP, "MPI_Group_free")
	}
	groups.remove(h)
	*group = MPI_GROUP_NULL
	return 0
}

func intSlice(p *C.int, n C.int) []int {
	if n <= 0 || p == nil {
		return nil
	}
	s := unsafe.Slice((*int32)(unsafe.Pointer(p)), int(n))
	out := make([]int, n)
	for i, v := range s {
		out[i] = int(v)
	}
	return out
}

func groupResult(g ranks.Group, err error, out *C.uintptr_t, fname string) C.int {
	if err != nil {
		c := classOf(err)
		if c == MPI_ERR_RANK || c == MPI_ERR_ARG {
			c = MPI_ERR_RANK
		}
		return raise(C.SHMPI_ON_NONE, 0, c, fname, err)
	}
	if out == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	*out = C.uintptr_t(newGroup(g))
	return 0
}

//export shmpi_MPI_Group_incl
func shmpi_MPI_Group_incl(group C.uintptr_t, n C.int, rs *C.int, out *C.uintptr_t) C.int {
	g, r := groupArg(group, "MPI_Group_incl")
	if g == nil {
		return r
	}
	if n < 0 || (n > 0 && rs == nil) {
		return failNone(MPI_ERR_ARG, "MPI_Group_incl")
	}
	ng, err := g.g.Incl(intSlice(rs, n))
	return groupResult(ng, err, out, "MPI_Group_incl")
}

//export shmpi_MPI_Group_excl
func shmpi_MPI_Group_excl(group C.uintptr_t, n C.int, rs *C.int, out *C.uintptr_t) C.int {
	g, r := groupArg(group, "MPI_Group_excl")
	if g == nil {
		return r
	}
	if n < 0 || (n > 0 && rs == nil) {
		return failNone(MPI_ERR_ARG, "MPI_Group_excl")
	}
	ng, err := g.g.Excl(intSlice(rs, n))
	return groupResult(ng, err, out, "MPI_Group_excl")
}

func rangesOf(p *C.int, n C.int) []ranks.Range {
	s := intSlice(p, 3*n)
	out := make([]ranks.Range, n)
	for i := range out {
		out[i] = ranks.Range{First: s[3*i], Last: s[3*i+1], Stride: s[3*i+2]}
	}
	return out
}

//export shmpi_MPI_Group_range_incl
func shmpi_MPI_Group_range_incl(group C.uintptr_t, n C.int, rs *C.int, out *C.uintptr_t) C.int {
	g, r := groupArg(group, "MPI_Group_range_incl")
	if g == nil {
		return r
	}
	if n < 0 || (n > 0 && rs == nil) {
		return failNone(MPI_ERR_ARG, "MPI_Group_range_incl")
	}
	ng, err := g.g.RangeIncl(rangesOf(rs, n))
	return groupResult(ng, err, out, "MPI_Group_range_incl")
}

//export shmpi_MPI_Group_range_excl
func shmpi_MPI_Group_range_excl(group C.uintptr_t, n C.int, rs *C.int, out *C.uintptr_t) C.int {
	g, r := groupArg(group, "MPI_Group_range_excl")
	if g == nil {
		return r
	}
	if n < 0 || (n > 0 && rs == nil) {
		return failNone(MPI_ERR_ARG, "MPI_Group_range_excl")
	}
	ng, err := g.g.RangeExcl(rangesOf(rs, n))
	return groupResult(ng, err, out, "MPI_Group_range_excl")
}

func groupPair(g1, g2 C.uintptr_t, fname string) (*groupObj, *groupObj, C.int) {
	a, r := groupArg(g1, fname)
	if a == nil {
		return nil, nil, r
	}
	b, r := groupArg(g2, fname)
	if b == nil {
		return nil, nil, r
	}
	return a, b, 0
}

//export shmpi_MPI_Group_union
func shmpi_MPI_Group_union(g1, g2 C.uintptr_t, out *C.uintptr_t) C.int {
	a, b, r := groupPair(g1, g2, "MPI_Group_union")
	if a == nil {
		return r
	}
	return groupResult(a.g.Union(b.g), nil, out, "MPI_Group_union")
}

//export shmpi_MPI_Group_intersection
func shmpi_MPI_Group_intersection(g1, g2 C.uintptr_t, out *C.uintptr_t) C.int {
	a, b, r := groupPair(g1, g2, "MPI_Group_intersection")
	if a == nil {
		return r
	}
	return groupResult(a.g.Intersection(b.g), nil, out, "MPI_Group_intersection")
}

//export shmpi_MPI_Group_difference
func shmpi_MPI_Group_difference(g1, g2 C.uintptr_t, out *C.uintptr_t) C.int {
	a, b, r := groupPair(g1, g2, "MPI_Group_difference")
	if a == nil {
		return r
	}
	return groupResult(a.g.Difference(b.g), nil, out, "MPI_Group_difference")
}

//export shmpi_MPI_Group_compare
func shmpi_MPI_Group_compare(g1, g2 C.uintptr_t, result *C.int) C.int {
	a, b, r := groupPair(g1, g2, "MPI_Group_compare")
	if a == nil {
		return r
	}
	if result == nil {
		return failNone(MPI_ERR_ARG, "MPI_Group_compare")
	}
	*result = C.int(compareResult(a.g.Compare(b.g)))
	return 0
}

//export shmpi_MPI_Group_translate_ranks
func shmpi_MPI_Group_translate_ranks(g1 C.uintptr_t, n C.int, r1 *C.int, g2 C.uintptr_t, r2 *C.int) C.int {
	a, b, r := groupPair(g1, g2, "MPI_Group_translate_ranks")
	if a == nil {
		return r
	}
	if n < 0 || (n > 0 && (r1 == nil || r2 == nil)) {
		return failNone(MPI_ERR_ARG, "MPI_Group_translate_ranks")
	}
	in := intSlice(r1, n)
	for i, v := range in {
		if v == MPI_PROC_NULL {
			in[i] = ranks.ProcNull
		}
	}
	res, err := a.g.TranslateRanks(in, b.g)
	if err != nil {
		return raise(C.SHMPI_ON_NONE, 0, MPI_ERR_RANK, "MPI_Group_translate_ranks", err)
	}
	outs := unsafe.Slice((*int32)(unsafe.Pointer(r2)), int(n))
	for i, v := range res {
		switch v {
		case ranks.Undefined:
			v = MPI_UNDEFINED
		case ranks.ProcNull:
			v = MPI_PROC_NULL
		}
		outs[i] = int32(v)
	}
	return 0
}
