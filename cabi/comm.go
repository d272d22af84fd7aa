package main

/*
#include <stdlib.h>
#include "cabi.h"
*/
import "C"

import (
	"sort"
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Communicators, groups, attributes and names.

type commObj struct {
	c    *ranks.Comm
	errh handle
	eh   *errhObj

	mu    sync.Mutex
	attrs map[int]uintptr // keyval -> attribute value (a C void*)
	name  string
	named bool
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
	publishGen(&e.gen, uint32(h>>32))
	return h
}

// freeComm deletes h's attributes, frees the communicator and its handle.
func freeComm(h handle, o *commObj) error {
	o.deleteAllAttrs(h)
	idx := comms.slotOf(h)
	publishGen(&commEnt(idx).gen, 0)
	comms.remove(h)
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

//export shmpi_MPI_Comm_dup
func shmpi_MPI_Comm_dup(comm C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Comm_dup")
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_dup")
	}
	c, err := o.c.Dup()
	if err != nil {
		return fail(handle(comm), err, "MPI_Comm_dup")
	}
	h := newComm(c, o)
	if err := copyAttrs(handle(comm), o, h); err != 0 {
		freeComm(h, getComm(h))
		return failCode(handle(comm), int(err), "MPI_Comm_dup")
	}
	*out = C.uintptr_t(h)
	return 0
}

//export shmpi_MPI_Comm_dup_with_info
func shmpi_MPI_Comm_dup_with_info(comm C.uintptr_t, info C.uintptr_t, out *C.uintptr_t) C.int {
	return shmpi_MPI_Comm_dup(comm, out)
}

//export shmpi_MPI_Comm_idup
func shmpi_MPI_Comm_idup(comm C.uintptr_t, out *C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_idup")
	}
	// Dup is quick here (a context slot in shared memory): the request
	// is complete at once.
	if r := shmpi_MPI_Comm_dup(comm, out); r != 0 {
		return r
	}
	*req = C.uintptr_t(doneRequest(handle(comm)))
	return 0
}

//export shmpi_MPI_Comm_idup_with_info
func shmpi_MPI_Comm_idup_with_info(comm C.uintptr_t, info C.uintptr_t, out *C.uintptr_t, req *C.uintptr_t) C.int {
	return shmpi_MPI_Comm_idup(comm, out, req)
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
	*comm = MPI_COMM_NULL
	if err != nil {
		return fail(MPI_COMM_WORLD, err, "MPI_Comm_free")
	}
	return 0
}

//export shmpi_MPI_Comm_disconnect
func shmpi_MPI_Comm_disconnect(comm *C.uintptr_t) C.int {
	return shmpi_MPI_Comm_free(comm)
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
	o, r := commArg(comm, "MPI_Comm_split_type")
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_split_type")
	}
	var c *ranks.Comm
	var err error
	switch kind {
	case MPI_UNDEFINED:
		c, err = o.c.Split(ranks.Undefined, int(key))
	case MPI_COMM_TYPE_SHARED, MPI_COMM_TYPE_HW_UNGUIDED, MPI_COMM_TYPE_HW_GUIDED, MPI_COMM_TYPE_RESOURCE_GUIDED:
		// Every rank of a job shares one node's memory.
		c, err = o.c.SplitType(ranks.TypeShared, int(key))
	default:
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_split_type")
	}
	if err != nil {
		return fail(handle(comm), err, "MPI_Comm_split_type")
	}
	*out = C.uintptr_t(newComm(c, o))
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
	if _, r := commArg(comm, "MPI_Comm_remote_size"); r != 0 {
		return r
	}
	// No intercommunicators: MPI says this is an error on an
	// intracommunicator.
	return failCode(handle(comm), MPI_ERR_COMM, "MPI_Comm_remote_size")
}

//export shmpi_MPI_Comm_remote_group
func shmpi_MPI_Comm_remote_group(comm C.uintptr_t, g *C.uintptr_t) C.int {
	if _, r := commArg(comm, "MPI_Comm_remote_group"); r != 0 {
		return r
	}
	return failCode(handle(comm), MPI_ERR_COMM, "MPI_Comm_remote_group")
}

//export shmpi_MPI_Comm_get_parent
func shmpi_MPI_Comm_get_parent(parent *C.uintptr_t) C.int {
	if parent == nil {
		return failNone(MPI_ERR_ARG, "MPI_Comm_get_parent")
	}
	*parent = MPI_COMM_NULL
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
	if _, r := commArg(comm, "MPI_Comm_set_info"); r != 0 {
		return r
	}
	return 0
}

//export shmpi_MPI_Comm_get_info
func shmpi_MPI_Comm_get_info(comm C.uintptr_t, out *C.uintptr_t) C.int {
	if _, r := commArg(comm, "MPI_Comm_get_info"); r != 0 {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_get_info")
	}
	*out = C.uintptr_t(newInfo())
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

// Attributes. Keyvals are ints; the predefined ones are the ABI's
// (MPI_TAG_UB...) and MPI_FT. A user keyval has copy and delete
// callbacks (C functions, or the predefined MPI_*_NULL_COPY_FN = 0 and
// MPI_*_DUP_FN = 1) for one kind of object.

type keyval struct {
	kind         int
	copyFn, delF unsafe.Pointer
	extra        unsafe.Pointer
	freed        bool
	refs         int // attributes set with it
}

var (
	kvMu    sync.Mutex
	keyvals = map[int]*keyval{}
	nextKV  = 1000
)

// Values of the predefined attributes, in C memory (MPI hands out
// pointers to them).
var predefAttrs = map[int]*C.int{}

func predefAttr(k int, v int) {
	p := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
	*p = C.int(v)
	predefAttrs[k] = p
}

func initAttrs() {
	if len(predefAttrs) > 0 {
		return
	}
	predefAttr(MPI_TAG_UB, ranks.TagUB)
	predefAttr(MPI_HOST, MPI_PROC_NULL)
	predefAttr(MPI_IO, MPI_ANY_SOURCE)
	predefAttr(MPI_WTIME_IS_GLOBAL, 1) // one node, one monotonic clock
	predefAttr(MPI_APPNUM, 0)
	predefAttr(MPI_UNIVERSE_SIZE, world.Size())
	predefAttr(MPI_LASTUSEDCODE, MPI_ERR_LASTCODE)
	ft := 0
	if world.FT() {
		ft = 1
	}
	predefAttr(MPI_FT, ft)
}

func createKeyval(kind int, copyFn, delFn unsafe.Pointer, out *C.int, extra unsafe.Pointer, fname string) C.int {
	if out == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	kvMu.Lock()
	nextKV++
	k := nextKV
	keyvals[k] = &keyval{kind: kind, copyFn: copyFn, delF: delFn, extra: extra}
	kvMu.Unlock()
	*out = C.int(k)
	return 0
}

func freeKeyval(p *C.int, kind int, fname string) C.int {
	if p == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	kvMu.Lock()
	kv := keyvals[int(*p)]
	if kv == nil || kv.kind != kind || kv.freed {
		kvMu.Unlock()
		return failNone(MPI_ERR_KEYVAL, fname)
	}
	kv.freed = true
	if kv.refs == 0 {
		delete(keyvals, int(*p))
	}
	kvMu.Unlock()
	*p = MPI_KEYVAL_INVALID
	return 0
}

//export shmpi_MPI_Comm_create_keyval
func shmpi_MPI_Comm_create_keyval(copyFn, delFn unsafe.Pointer, out *C.int, extra unsafe.Pointer) C.int {
	return createKeyval(kindComm, copyFn, delFn, out, extra, "MPI_Comm_create_keyval")
}

//export shmpi_MPI_Keyval_create
func shmpi_MPI_Keyval_create(copyFn, delFn unsafe.Pointer, out *C.int, extra unsafe.Pointer) C.int {
	return createKeyval(kindComm, copyFn, delFn, out, extra, "MPI_Keyval_create")
}

//export shmpi_MPI_Comm_free_keyval
func shmpi_MPI_Comm_free_keyval(k *C.int) C.int {
	return freeKeyval(k, kindComm, "MPI_Comm_free_keyval")
}

//export shmpi_MPI_Keyval_free
func shmpi_MPI_Keyval_free(k *C.int) C.int {
	return freeKeyval(k, kindComm, "MPI_Keyval_free")
}

// attrKeyval finds a user keyval for kind.
func attrKeyval(k int, kind int) *keyval {
	kvMu.Lock()
	defer kvMu.Unlock()
	kv := keyvals[k]
	if kv == nil || kv.kind != kind || kv.freed {
		return nil
	}
	return kv
}

// callDelete runs kv's delete callback for the value v on object h.
func callDelete(kv *keyval, h handle, k int, v uintptr) int {
	if kv.delF == nil {
		return 0
	}
	return int(C.shmpi_call_delete_attr(kv.delF, C.uintptr_t(h), C.int(k), C.uintptr_t(v), kv.extra))
}

func (o *commObj) setAttr(h handle, k int, v uintptr, fname string) C.int {
	kv := attrKeyval(k, kindComm)
	if kv == nil {
		return failCode(h, MPI_ERR_KEYVAL, fname)
	}
	o.mu.Lock()
	old, had := o.attrs[k]
	o.mu.Unlock()
	if had {
		if rc := callDelete(kv, h, k, old); rc != 0 {
			return failCode(h, rc, fname)
		}
	}
	o.mu.Lock()
	if o.attrs == nil {
		o.attrs = map[int]uintptr{}
	}
	o.attrs[k] = v
	o.mu.Unlock()
	if !had {
		kvMu.Lock()
		kv.refs++
		kvMu.Unlock()
	}
	return 0
}

func (o *commObj) deleteAttr(h handle, k int, fname string) C.int {
	kv := attrKeyval(k, kindComm)
	if kv == nil {
		return failCode(h, MPI_ERR_KEYVAL, fname)
	}
	o.mu.Lock()
	v, had := o.attrs[k]
	o.mu.Unlock()
	if !had {
		return failCode(h, MPI_ERR_KEYVAL, fname)
	}
	if rc := callDelete(kv, h, k, v); rc != 0 {
		return failCode(h, rc, fname)
	}
	o.mu.Lock()
	delete(o.attrs, k)
	o.mu.Unlock()
	dropKeyvalRef(k)
	return 0
}

func dropKeyvalRef(k int) {
	kvMu.Lock()
	if kv := keyvals[k]; kv != nil {
		kv.refs--
		if kv.freed && kv.refs <= 0 {
			delete(keyvals, k)
		}
	}
	kvMu.Unlock()
}

// deleteAllAttrs deletes every attribute of o, in the order they were
// set is not kept; MPI leaves the order unspecified.
func (o *commObj) deleteAllAttrs(h handle) {
	o.mu.Lock()
	keys := make([]int, 0, len(o.attrs))
	for k := range o.attrs {
		keys = append(keys, k)
	}
	o.mu.Unlock()
	sort.Sort(sort.Reverse(sort.IntSlice(keys)))
	for _, k := range keys {
		kvMu.Lock()
		kv := keyvals[k]
		kvMu.Unlock()
		o.mu.Lock()
		v := o.attrs[k]
		delete(o.attrs, k)
		o.mu.Unlock()
		if kv != nil {
			callDelete(kv, h, k, v)
		}
		dropKeyvalRef(k)
	}
}

// copyAttrs runs the copy callbacks of o's attributes for its duplicate nh.
func copyAttrs(h handle, o *commObj, nh handle) int {
	n := getComm(nh)
	o.mu.Lock()
	keys := make([]int, 0, len(o.attrs))
	for k := range o.attrs {
		keys = append(keys, k)
	}
	o.mu.Unlock()
	sort.Ints(keys)
	out := (*unsafe.Pointer)(C.malloc(C.size_t(unsafe.Sizeof(uintptr(0)))))
	flag := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(out))
	defer C.free(unsafe.Pointer(flag))
	for _, k := range keys {
		kvMu.Lock()
		kv := keyvals[k]
		kvMu.Unlock()
		if kv == nil {
			continue
		}
		o.mu.Lock()
		v := o.attrs[k]
		o.mu.Unlock()
		var nv uintptr
		keep := false
		switch uintptr(kv.copyFn) {
		case 0: // MPI_COMM_NULL_COPY_FN
		case 1: // MPI_COMM_DUP_FN
			nv, keep = v, true
		default:
			*flag = 0
			*out = nil
			rc := C.shmpi_call_copy_attr(kv.copyFn, C.uintptr_t(h), C.int(k), kv.extra, C.uintptr_t(v), unsafe.Pointer(out), flag)
			if rc != 0 {
				return int(rc)
			}
			nv, keep = uintptr(*out), *flag != 0
		}
		if keep {
			n.mu.Lock()
			if n.attrs == nil {
				n.attrs = map[int]uintptr{}
			}
			n.attrs[k] = nv
			n.mu.Unlock()
			kvMu.Lock()
			kv.refs++
			kvMu.Unlock()
		}
	}
	return 0
}

//export shmpi_MPI_Comm_set_attr
func shmpi_MPI_Comm_set_attr(comm C.uintptr_t, k C.int, v unsafe.Pointer) C.int {
	o, r := commArg(comm, "MPI_Comm_set_attr")
	if o == nil {
		return r
	}
	return o.setAttr(handle(comm), int(k), uintptr(v), "MPI_Comm_set_attr")
}

//export shmpi_MPI_Attr_put
func shmpi_MPI_Attr_put(comm C.uintptr_t, k C.int, v unsafe.Pointer) C.int {
	o, r := commArg(comm, "MPI_Attr_put")
	if o == nil {
		return r
	}
	return o.setAttr(handle(comm), int(k), uintptr(v), "MPI_Attr_put")
}

func getAttr(comm C.uintptr_t, k C.int, v unsafe.Pointer, flag *C.int, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if v == nil || flag == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	initAttrs()
	out := (*uintptr)(v)
	if p, ok := predefAttrs[int(k)]; ok {
		*out = uintptr(unsafe.Pointer(p))
		*flag = 1
		return 0
	}
	if attrKeyval(int(k), kindComm) == nil {
		return failCode(handle(comm), MPI_ERR_KEYVAL, fname)
	}
	o.mu.Lock()
	val, ok := o.attrs[int(k)]
	o.mu.Unlock()
	*flag = 0
	if ok {
		*out = val
		*flag = 1
	}
	return 0
}

//export shmpi_MPI_Comm_get_attr
func shmpi_MPI_Comm_get_attr(comm C.uintptr_t, k C.int, v unsafe.Pointer, flag *C.int) C.int {
	return getAttr(comm, k, v, flag, "MPI_Comm_get_attr")
}

//export shmpi_MPI_Attr_get
func shmpi_MPI_Attr_get(comm C.uintptr_t, k C.int, v unsafe.Pointer, flag *C.int) C.int {
	return getAttr(comm, k, v, flag, "MPI_Attr_get")
}

//export shmpi_MPI_Comm_delete_attr
func shmpi_MPI_Comm_delete_attr(comm C.uintptr_t, k C.int) C.int {
	o, r := commArg(comm, "MPI_Comm_delete_attr")
	if o == nil {
		return r
	}
	return o.deleteAttr(handle(comm), int(k), "MPI_Comm_delete_attr")
}

//export shmpi_MPI_Attr_delete
func shmpi_MPI_Attr_delete(comm C.uintptr_t, k C.int) C.int {
	o, r := commArg(comm, "MPI_Attr_delete")
	if o == nil {
		return r
	}
	return o.deleteAttr(handle(comm), int(k), "MPI_Attr_delete")
}
