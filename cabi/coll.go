package main

/*
#include "cabi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// Collectives. Data moves as packed bytes through package coll: a
// contiguous buffer in place, any other through a staging buffer that is
// packed before and unpacked after (at completion, for the nonblocking
// and persistent forms; at every start and completion, for the
// persistent ones). Reductions run on the Go type of the datatype's basic
// elements (ops.go). MPI_IN_PLACE is coll's nil send buffer (nil receive
// buffer for Scatter). Every collective also works on an
// intercommunicator, where the blocks are the remote group's and a root
// is MPI_ROOT, MPI_PROC_NULL or a rank of the other group (coll/inter.go).

func isInPlace(p unsafe.Pointer) bool { return uintptr(p) == 1 }

// cmode is how a collective call runs.
type cmode uint8

const (
	mBlock   cmode = iota // blocking
	mNB                   // nonblocking: a request that completes it
	mPersist              // persistent (MPI_*_init): an inactive request that MPI_Start runs
)

// collArgs validates the communicator and, for the request forms, the
// request pointer.
func collArgs(comm C.uintptr_t, mode cmode, req *C.uintptr_t, fname string) (*commObj, C.int) {
	o, r := commArg(comm, fname)
	if o == nil {
		return nil, r
	}
	if mode != mBlock && req == nil {
		r = failCode(handle(comm), MPI_ERR_ARG, fname)
		if mode == mPersist {
			coll.InitFailed(o.c) // see persistGuard
		}
		return nil, r
	}
	return o, 0
}

// collOut finishes a collective call that run made (blocking: ran) in
// mode. pre runs before each start of a persistent request (packing its
// staged input; the blocking and nonblocking calls ran it already), post
// after each successful completion (unpacking staged output).
func collOut(comm C.uintptr_t, mode cmode, rq *ranks.Request, err error, pre, post func(), req *C.uintptr_t, fname string) C.int {
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	var after func(*ranks.Status, error) error
	if post != nil && mode != mBlock {
		after = func(s *ranks.Status, err error) error {
			if err == nil {
				post()
			}
			return err
		}
	}
	switch mode {
	case mBlock:
		if post != nil {
			post()
		}
	case mNB:
		*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(comm), after: after}))
	case mPersist:
		start := func() (*ranks.Request, func(*ranks.Status, error) error, error) {
			if pre != nil {
				pre()
			}
			return rq, after, rq.Start()
		}
		*req = C.uintptr_t(newReq(reqObj{comm: handle(comm), kind: reqInactive, persistent: true, start: start, pr: rq}))
	}
	return 0
}

// peers is the number of blocks of a collective's per-member arrays: the
// communicator's size, or, on an intercommunicator, the remote group's.
func (o *commObj) peers() int {
	if o.c.IsInter() {
		return o.c.RemoteSize()
	}
	return o.c.Size()
}

// persistGuard ends a persistent collective's Init call (deferred with
// the member's count of Init creations before it, coll.InitsOf): if the
// call failed without reaching coll's Init (this layer's own checks of a
// datatype, count or buffer), it still takes part in the creation every
// member's Init makes, so that the other members' Init calls return.
func persistGuard(c *ranks.Comm, before uint64, rc *C.int) {
	if *rc != 0 && coll.InitsOf(c) == before {
		coll.InitFailed(c)
	}
}

// rootInfo is a member's part in a rooted collective.
type rootInfo struct {
	root   int  // the root for coll: a rank, ranks.Root or ranks.ProcNull
	isRoot bool // this member is the root (MPI_ROOT on an intercommunicator)
	idle   bool // intercommunicator: a member of the root's group other than the root
	inter  bool
}

func rootArg(o *commObj, root C.int, comm C.uintptr_t, fname string) (rootInfo, C.int) {
	if o.c.IsInter() {
		switch {
		case root == MPI_ROOT:
			return rootInfo{root: ranks.Root, isRoot: true, inter: true}, 0
		case root == MPI_PROC_NULL:
			return rootInfo{root: ranks.ProcNull, idle: true, inter: true}, 0
		case root >= 0 && int(root) < o.c.RemoteSize():
			return rootInfo{root: int(root), inter: true}, 0
		}
		return rootInfo{}, failCode(handle(comm), MPI_ERR_ROOT, fname)
	}
	if root < 0 || int(root) >= o.c.Size() {
		return rootInfo{}, failCode(handle(comm), MPI_ERR_ROOT, fname)
	}
	return rootInfo{root: int(root), isRoot: int(root) == o.c.Rank()}, 0
}

// vecOf reads n counts or displacements: C ints, or, for the large-count
// (_c) calls, MPI_Count or MPI_Aint values.
func vecOf(p unsafe.Pointer, wide bool, n int) []int {
	if p == nil || n <= 0 {
		return nil
	}
	out := make([]int, n)
	if wide {
		for i, v := range unsafe.Slice((*int64)(p), n) {
			out[i] = int(v)
		}
	} else {
		for i, v := range unsafe.Slice((*int32)(p), n) {
			out[i] = int(v)
		}
	}
	return out
}

// vecAt reads entry i of such a vector.
func vecAt(p unsafe.Pointer, wide bool, i int) int {
	if wide {
		return int(*(*int64)(unsafe.Add(p, 8*i)))
	}
	return int(*(*int32)(unsafe.Add(p, 4*i)))
}

// Reductions.

type redKind int

const (
	rAllreduce redKind = iota
	rReduce
	rScan
	rExscan
	rRSBlock
	rRS
)

type redArgs struct {
	c            *ranks.Comm
	kind         redKind
	send, recv   unsafe.Pointer // nil send: in place
	sendN, recvN int            // elements of the reduction's Go type
	root         int
	counts       []int
	mode         cmode
	acc          *accState // one-sided kinds (win.go)
}

func runRed[T any](a *redArgs, op coll.Op[T]) (*ranks.Request, error, bool) {
	if op == nil {
		return nil, nil, false
	}
	if a.kind >= rAcc {
		return runAcc(a, op)
	}
	sl := func(p unsafe.Pointer, n int) []T {
		if p == nil {
			return nil
		}
		return unsafe.Slice((*T)(p), n)
	}
	s, r := sl(a.send, a.sendN), sl(a.recv, a.recvN)
	if a.kind == rLocal {
		op(r, s)
		return nil, nil, true
	}
	var rq *ranks.Request
	var err error
	switch a.mode {
	case mBlock:
		switch a.kind {
		case rAllreduce:
			err = coll.Allreduce(a.c, s, r, op)
		case rReduce:
			err = coll.Reduce(a.c, s, r, op, a.root)
		case rScan:
			err = coll.Scan(a.c, s, r, op)
		case rExscan:
			err = coll.Exscan(a.c, s, r, op)
		case rRSBlock:
			err = coll.ReduceScatterBlock(a.c, s, r, op)
		case rRS:
			err = coll.ReduceScatter(a.c, s, r, a.counts, op)
		}
	case mNB:
		switch a.kind {
		case rAllreduce:
			rq, err = coll.Iallreduce(a.c, s, r, op)
		case rReduce:
			rq, err = coll.Ireduce(a.c, s, r, op, a.root)
		case rScan:
			rq, err = coll.Iscan(a.c, s, r, op)
		case rExscan:
			rq, err = coll.Iexscan(a.c, s, r, op)
		case rRSBlock:
			rq, err = coll.IreduceScatterBlock(a.c, s, r, op)
		case rRS:
			rq, err = coll.IreduceScatter(a.c, s, r, a.counts, op)
		}
	case mPersist:
		switch a.kind {
		case rAllreduce:
			rq, err = coll.AllreduceInit(a.c, s, r, op)
		case rReduce:
			rq, err = coll.ReduceInit(a.c, s, r, op, a.root)
		case rScan:
			rq, err = coll.ScanInit(a.c, s, r, op)
		case rExscan:
			rq, err = coll.ExscanInit(a.c, s, r, op)
		case rRSBlock:
			rq, err = coll.ReduceScatterBlockInit(a.c, s, r, op)
		case rRS:
			rq, err = coll.ReduceScatterInit(a.c, s, r, a.counts, op)
		}
	}
	return rq, err, true
}

var errUnsupported = codeErr(MPI_ERR_UNSUPPORTED_OPERATION)

func reduceCall(kind redKind, sendp, recvp unsafe.Pointer, count int64, dt, op C.uintptr_t, root C.int, comm C.uintptr_t, rcounts unsafe.Pointer, wide bool, mode cmode, req *C.uintptr_t, fname string) (code C.int) {
	o, r := collArgs(comm, mode, req, fname)
	if o == nil {
		return r
	}
	if mode == mPersist {
		defer persistGuard(o.c, coll.InitsOf(o.c), &code)
	}
	t := getType(handle(dt))
	if t == nil || !t.committed {
		return failCode(handle(comm), MPI_ERR_TYPE, fname)
	}
	opo := getOp(handle(op))
	if opo == nil || opo.predef == MPI_REPLACE || opo.predef == MPI_NO_OP {
		return failCode(handle(comm), MPI_ERR_OP, fname)
	}
	if count < 0 {
		return failCode(handle(comm), MPI_ERR_COUNT, fname)
	}
	inter := o.c.IsInter()
	me := o.c.Rank()
	if inter && (kind == rScan || kind == rExscan) {
		return failCode(handle(comm), MPI_ERR_COMM, fname)
	}
	var ri rootInfo
	if kind == rReduce {
		if ri, r = rootArg(o, root, comm, fname); r != 0 {
			return r
		}
	}
	var counts []int
	if kind == rRS {
		if rcounts == nil {
			return failCode(handle(comm), MPI_ERR_ARG, fname)
		}
		counts = vecOf(rcounts, wide, o.c.Size())
		for _, c := range counts {
			if c < 0 {
				return failCode(handle(comm), MPI_ERR_COUNT, fname)
			}
		}
	}
	// Which sides this member uses: on an intercommunicator the root
	// only receives and the rest of its group takes no part.
	sendUsed, recvUsed := true, true
	if kind == rReduce {
		recvUsed = ri.isRoot
		sendUsed = !ri.idle && !(inter && ri.isRoot)
	}
	inPlace := sendUsed && isInPlace(sendp)
	if inPlace && (inter || kind == rReduce && !ri.isRoot) {
		// MPI_IN_PLACE is meaningful at an intracommunicator's root only.
		return failCode(handle(comm), MPI_ERR_BUFFER, fname)
	}
	// Elements (of the datatype) in the send and receive buffers.
	sendEl, recvEl := count, count
	switch kind {
	case rRSBlock:
		// n blocks, n the size of this member's own group: of an
		// intercommunicator too (the other group's reduction, n times
		// its recvcount, is what this group's members share).
		sendEl = count * int64(o.c.Size())
	case rRS:
		total := 0
		for _, c := range counts {
			total += c
		}
		sendEl, recvEl = int64(total), int64(counts[me])
	}
	if !inter && !inPlace && sendUsed && recvUsed && sendEl > 0 && sendp == recvp {
		// The same buffer on both sides: MPI_IN_PLACE is the way.
		return failCode(handle(comm), MPI_ERR_BUFFER, fname)
	}
	if inPlace {
		recvEl = max(recvEl, sendEl)
	}
	if !recvUsed {
		recvEl = 0
	}
	if !sendUsed {
		sendEl = 0
	}
	if opo.predef == 0 {
		u := &userRed{c: o.c, kind: kind, t: t, dt: handle(dt), op: opo, root: ri.root, counts: counts,
			count: count, recvp: recvp, me: me, inter: inter, sends: sendUsed, gets: recvUsed}
		u.src = sendp
		if inPlace {
			u.src = recvp
		}
		return u.call(comm, mode, req, fname)
	}
	k := t.red
	per := t.nprim // basic elements per element
	direct := t.contig
	if t.pairPredef {
		per, direct = 1, true
	}
	if k == bNone || k == bOpaque {
		return failCode(handle(comm), MPI_ERR_OP, fname)
	}
	a := &redArgs{c: o.c, kind: kind, root: ri.root, mode: mode}
	a.sendN, a.recvN = int(sendEl*per), int(recvEl*per)
	for _, c := range counts {
		a.counts = append(a.counts, c*int(per))
	}
	var pre, post func()
	if direct {
		if sendUsed && !inPlace {
			if sendp != nil {
				a.send = unsafe.Add(sendp, t.firstOff)
			} else {
				// A nil send would mean in place to coll.
				a.send = unsafe.Pointer(&zeroByte)
			}
		}
		if recvp != nil && a.recvN > 0 {
			a.recv = unsafe.Add(recvp, t.firstOff)
		}
	} else {
		// Pack into staging; unpack the result.
		var s, rs []byte
		if sendUsed && !inPlace {
			s = make([]byte, sendEl*t.size+1)
			a.send = unsafe.Pointer(&s[0])
		}
		if recvEl > 0 {
			rs = make([]byte, recvEl*t.size)
			a.recv = unsafe.Pointer(&rs[0])
			outEl := recvEl
			switch kind {
			case rRS:
				outEl = int64(counts[me])
			case rRSBlock:
				outEl = count
			}
			if !(kind == rExscan && me == 0) {
				post = func() { t.unpack(recvp, rs[:outEl*t.size], outEl) }
			}
		}
		pre = func() {
			if sendEl > 0 && s != nil {
				t.pack(s, sendp, sendEl)
			}
			if inPlace && rs != nil {
				t.pack(rs, recvp, recvEl)
			}
		}
	}
	if mode != mPersist && pre != nil {
		pre()
	}
	logical := isLogical(handle(dt))
	rq, err, ok := dispatch(a, k, opo.predef, logical)
	if !ok {
		return failCode(handle(comm), MPI_ERR_OP, fname)
	}
	return collOut(comm, mode, rq, err, pre, post, req, fname)
}

var zeroByte byte

// userRed is a reduction with a user op: every contribution is gathered
// (to the root for Reduce, to every member otherwise) and each member
// that gets a result folds x_j op ... op x_k from the right, as MPI's user
// functions compute inoutvec = invec op inoutvec. On an
// intercommunicator the contributions are the other group's. Only
// Allreduce and Reduce are defined there with user ops here.
type userRed struct {
	c          *ranks.Comm
	kind       redKind
	t          *dtype
	dt         handle
	op         *opObj
	root       int
	counts     []int
	count      int64
	src, recvp unsafe.Pointer
	me         int
	inter      bool
	sends      bool // contributes
	gets       bool // gets a result
	total      int64
	sp         int64 // the span of one contribution in bytes
	mine, all  []byte
	parts      int
}

func (u *userRed) call(comm C.uintptr_t, mode cmode, req *C.uintptr_t, fname string) C.int {
	if u.inter && u.kind != rAllreduce && u.kind != rReduce {
		return failCode(handle(comm), MPI_ERR_UNSUPPORTED_OPERATION, fname)
	}
	t := u.t
	size := u.c.Size()
	u.parts = size
	if u.inter {
		u.parts = u.c.RemoteSize()
	}
	u.total = u.count
	switch u.kind {
	case rRSBlock:
		u.total = u.count * int64(size)
	case rRS:
		u.total = 0
		for _, c := range u.counts {
			u.total += int64(c)
		}
	}
	// A contribution of n elements is its span: from the first element's
	// true lower bound to the last one's true upper bound.
	if u.total > 0 {
		u.sp = (u.total-1)*t.extent() + t.trueUB - t.trueLB
	}
	u.mine = make([]byte, u.sp)
	if u.gets || !u.inter {
		u.all = make([]byte, u.sp*int64(u.parts))
	}
	if mode != mPersist {
		u.pre()
	}
	rq, err := u.run(mode)
	return collOut(comm, mode, rq, err, u.pre, u.post, req, fname)
}

func (u *userRed) pre() {
	if u.sends && u.sp > 0 {
		copy(u.mine, unsafe.Slice((*byte)(unsafe.Add(u.src, u.t.trueLB)), u.sp))
	}
}

func (u *userRed) run(mode cmode) (*ranks.Request, error) {
	var send, recv []byte
	if u.sends {
		send = u.mine
	}
	if u.gets || !u.inter {
		recv = u.all
	}
	if u.kind == rReduce {
		switch mode {
		case mBlock:
			return nil, coll.Gather(u.c, send, recv, u.root)
		case mNB:
			return coll.Igather(u.c, send, recv, u.root)
		}
		return coll.GatherInit(u.c, send, recv, u.root)
	}
	switch mode {
	case mBlock:
		return nil, coll.Allgather(u.c, send, recv)
	case mNB:
		return coll.Iallgather(u.c, send, recv)
	}
	return coll.AllgatherInit(u.c, send, recv)
}

func (u *userRed) post() {
	if !u.gets || u.total == 0 {
		return
	}
	t := u.t
	part := func(r int) unsafe.Pointer {
		if u.sp == 0 {
			return nil
		}
		return unsafe.Add(unsafe.Pointer(&u.all[int64(r)*u.sp]), -t.trueLB)
	}
	// fold(lo, hi) leaves x_lo op ... op x_hi in part(hi).
	fold := func(lo, hi int) unsafe.Pointer {
		acc := part(hi)
		for j := hi - 1; j >= lo; j-- {
			callUserOp(u.op, part(j), acc, u.total, u.dt)
		}
		return acc
	}
	var res unsafe.Pointer
	switch u.kind {
	case rAllreduce, rReduce, rRSBlock, rRS:
		res = fold(0, u.parts-1)
	case rScan:
		res = fold(0, u.me)
	case rExscan:
		if u.me == 0 {
			return
		}
		res = fold(0, u.me-1)
	}
	// Copy the result's data (not its gaps) into the receive buffer.
	packed := make([]byte, u.total*t.size)
	t.pack(packed, res, u.total)
	switch u.kind {
	case rRSBlock, rRS:
		off, n := int64(u.me)*u.count, u.count
		if u.kind == rRS {
			off = 0
			for _, c := range u.counts[:u.me] {
				off += int64(c)
			}
			n = int64(u.counts[u.me])
		}
		t.unpack(u.recvp, packed[off*t.size:(off+n)*t.size], n)
	default:
		t.unpack(u.recvp, packed, u.total)
	}
}

func callUserOp(op *opObj, in, inout unsafe.Pointer, n int64, dt handle) {
	d := C.uintptr_t(dt)
	big := C.int(0)
	if op.big {
		big = 1
	}
	C.shmpi_call_user_op(op.fn, big, in, inout, C.int64_t(n), &d)
}

func reduceLocal(in, inout unsafe.Pointer, count int64, dt, op C.uintptr_t, fname string) C.int {
	t := getType(handle(dt))
	if t == nil {
		return failNone(MPI_ERR_TYPE, fname)
	}
	opo := getOp(handle(op))
	if opo == nil {
		return failNone(MPI_ERR_OP, fname)
	}
	if count < 0 {
		return failNone(MPI_ERR_COUNT, fname)
	}
	if count > 0 && (isInPlace(in) || isInPlace(inout) || in == nil || inout == nil || in == inout) {
		// Reduce_local has no in-place form, and its buffers must not
		// alias (the same buffer twice is caught; a partial overlap is
		// not).
		return failNone(MPI_ERR_BUFFER, fname)
	}
	if opo.predef == 0 {
		callUserOp(opo, in, inout, count, handle(dt))
		return 0
	}
	n := count * t.nprim
	if t.pairPredef {
		n = count
	}
	if !t.contig && !t.pairPredef {
		a := make([]byte, count*t.size+1)
		b := make([]byte, count*t.size+1)
		t.pack(a, in, count)
		t.pack(b, inout, count)
		if !localReduce(t.red, opo.predef, unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), int(n), isLogical(handle(dt))) {
			return failNone(MPI_ERR_OP, fname)
		}
		t.unpack(inout, b[:count*t.size], count)
		return 0
	}
	if !localReduce(t.red, opo.predef, unsafe.Add(in, t.firstOff), unsafe.Add(inout, t.firstOff), int(n), isLogical(handle(dt))) {
		return failNone(MPI_ERR_OP, fname)
	}
	return 0
}

// localReduce computes inout = in op inout with a predefined op, through
// the same dispatch as the collectives (a one-member reduction is just
// the op).
func localReduce(k basic, op handle, in, inout unsafe.Pointer, n int, logical bool) bool {
	a := &redArgs{kind: rLocal, send: in, recv: inout, sendN: n, recvN: n}
	_, _, ok := dispatch(a, k, op, logical)
	return ok
}

const rLocal redKind = 100

// Staging of the buffers of the data-movement collectives.

// area is a buffer of n elements of t as bytes: in place when t is
// contiguous, else a staging slice that load packs from the buffer (when
// fill: send buffers, and receive buffers that hold input in place) and
// flush unpacks into it.
type area struct {
	b      []byte
	staged bool
	fill   bool
	p      unsafe.Pointer
	n      int64
	t      *dtype
}

func makeArea(p unsafe.Pointer, n int64, t *dtype, fill bool) *area {
	a := &area{p: p, n: n, t: t, fill: fill}
	if n <= 0 {
		a.b = []byte{}
		return a
	}
	if t.contig {
		a.b = unsafe.Slice((*byte)(unsafe.Add(p, t.firstOff)), n*t.size)
		return a
	}
	a.b, a.staged = make([]byte, n*t.size), true
	return a
}

func (a *area) load() {
	if a != nil && a.staged && a.fill {
		a.t.pack(a.b, a.p, a.n)
	}
}

func (a *area) flush() {
	if a != nil && a.staged {
		a.t.unpack(a.p, a.b, a.n)
	}
}

// vArea is a buffer of blocks (counts[i] elements of t at displs[i]
// extents) as bytes: in place when t is contiguous (one slice from the
// lowest block to the end of the highest), else a staging slice with the
// blocks packed one after the other.
type vArea struct {
	b              []byte
	bc, bd         []int // the blocks in b, in bytes
	counts, displs []int
	staged, fill   bool
	p              unsafe.Pointer
	t              *dtype
}

func makeVArea(p unsafe.Pointer, counts, displs []int, t *dtype, fill bool) (*vArea, bool) {
	n := len(counts)
	v := &vArea{p: p, t: t, counts: counts, displs: displs, fill: fill, bc: make([]int, n), bd: make([]int, n)}
	ext, size := t.extent(), t.size
	if t.contig {
		lo, hi, any := int64(0), int64(0), false
		for i := range n {
			if counts[i] < 0 {
				return nil, false
			}
			if counts[i] == 0 {
				continue
			}
			s := int64(displs[i]) * ext
			e := s + int64(counts[i])*size
			if !any || s < lo {
				lo = s
			}
			hi = max(hi, e)
			any = true
		}
		if !any {
			v.b = []byte{}
			return v, true
		}
		v.b = unsafe.Slice((*byte)(unsafe.Add(p, t.firstOff+lo)), hi-lo)
		for i := range n {
			v.bc[i] = counts[i] * int(size)
			if counts[i] > 0 {
				v.bd[i] = int(int64(displs[i])*ext - lo)
			}
		}
		return v, true
	}
	off := 0
	for i := range n {
		if counts[i] < 0 {
			return nil, false
		}
		v.bc[i], v.bd[i] = counts[i]*int(size), off
		off += v.bc[i]
	}
	v.b, v.staged = make([]byte, off), true
	return v, true
}

func (v *vArea) load() {
	if v == nil || !v.staged || !v.fill {
		return
	}
	for i, c := range v.counts {
		if c > 0 {
			v.t.pack(v.b[v.bd[i]:v.bd[i]+v.bc[i]], unsafe.Add(v.p, int64(v.displs[i])*v.t.extent()), int64(c))
		}
	}
}

func (v *vArea) flush() {
	if v == nil || !v.staged {
		return
	}
	for i, c := range v.counts {
		if c > 0 {
			v.t.unpack(unsafe.Add(v.p, int64(v.displs[i])*v.t.extent()), v.b[v.bd[i]:v.bd[i]+v.bc[i]], int64(c))
		}
	}
}

// wArea is Alltoallw's buffer: block i is counts[i] elements of ts[i] at
// byte displacement displs[i], in place if ts[i] is contiguous, else in
// a staging slice of its own.
type wArea struct {
	blocks         [][]byte
	staged         []bool
	anyStaged      bool
	fill           bool
	p              unsafe.Pointer
	ts             []*dtype
	counts, displs []int
}

func (w *wArea) load() {
	if w == nil || !w.fill || !w.anyStaged {
		return
	}
	for i, s := range w.staged {
		if s {
			w.ts[i].pack(w.blocks[i], unsafe.Add(w.p, w.displs[i]), int64(w.counts[i]))
		}
	}
}

func (w *wArea) flush() {
	if w == nil || !w.anyStaged {
		return
	}
	for i, s := range w.staged {
		if s {
			w.ts[i].unpack(unsafe.Add(w.p, w.displs[i]), w.blocks[i], int64(w.counts[i]))
		}
	}
}

func typeOf(h C.uintptr_t, comm C.uintptr_t, fname string) (*dtype, C.int) {
	t := getType(handle(h))
	if t == nil || !t.committed {
		return nil, failCode(handle(comm), MPI_ERR_TYPE, fname)
	}
	return t, 0
}

// Barrier and Bcast.

func barrierCall(comm C.uintptr_t, mode cmode, req *C.uintptr_t, fname string) (code C.int) {
	o, r := collArgs(comm, mode, req, fname)
	if o == nil {
		return r
	}
	if mode == mPersist {
		defer persistGuard(o.c, coll.InitsOf(o.c), &code)
	}
	var rq *ranks.Request
	var err error
	switch mode {
	case mBlock:
		return fail(handle(comm), coll.Barrier(o.c), fname)
	case mNB:
		rq, err = coll.Ibarrier(o.c)
	case mPersist:
		rq, err = coll.BarrierInit(o.c)
	}
	return collOut(comm, mode, rq, err, nil, nil, req, fname)
}

func bcastCall(buf unsafe.Pointer, count int64, dt C.uintptr_t, root C.int, comm C.uintptr_t, mode cmode, req *C.uintptr_t, fname string) (code C.int) {
	o, r := collArgs(comm, mode, req, fname)
	if o == nil {
		return r
	}
	if mode == mPersist {
		defer persistGuard(o.c, coll.InitsOf(o.c), &code)
	}
	ri, r := rootArg(o, root, comm, fname)
	if r != 0 {
		return r
	}
	var b []byte
	var pre, post func()
	if !ri.idle {
		t, r := typeOf(dt, comm, fname)
		if t == nil {
			return r
		}
		if count < 0 {
			return failCode(handle(comm), MPI_ERR_COUNT, fname)
		}
		a := makeArea(buf, count, t, ri.isRoot)
		b = a.b
		if a.staged {
			if ri.isRoot {
				pre = a.load
			} else {
				post = a.flush
			}
		}
	}
	if mode != mPersist && pre != nil {
		pre()
	}
	var rq *ranks.Request
	var err error
	switch mode {
	case mBlock:
		err = coll.Bcast(o.c, b, ri.root)
	case mNB:
		rq, err = coll.Ibcast(o.c, b, ri.root)
	case mPersist:
		rq, err = coll.BcastInit(o.c, b, ri.root)
	}
	return collOut(comm, mode, rq, err, pre, post, req, fname)
}

// Gather, Scatter, Allgather, Alltoall and their v and w forms.

type gatherKind int

const (
	gGather gatherKind = iota
	gScatter
	gAllgather
	gAlltoall
	gAlltoallw
)

// sides says which of the send and receive buffers a member uses in a
// collective of kind: on an intracommunicator every member sends and
// receives, except that only the root receives in Gather and sends in
// Scatter; on an intercommunicator the root does only that, and the rest
// of its group nothing.
func sides(kind gatherKind, ri rootInfo) (send, recv bool) {
	switch kind {
	case gGather:
		return !ri.idle && !(ri.inter && ri.isRoot), ri.isRoot
	case gScatter:
		return ri.isRoot, !ri.idle && !(ri.inter && ri.isRoot)
	}
	return true, true
}

// aliasedBlock reports whether a Gather- or Scatter-like member passed as
// its own buffer the block it holds in the root's or everyone's buffer
// (own, count elements of type t at whole, displacement disp elements):
// the aliasing MPI forbids outside MPI_IN_PLACE. Like MPICH, it
// compares the addresses only, for the same datatype on both sides.
func aliasedBlock(own unsafe.Pointer, count int64, ot C.uintptr_t, whole unsafe.Pointer, disp int64, wt C.uintptr_t, t *dtype) bool {
	if ot != wt || count == 0 || t == nil || t.size == 0 {
		return false
	}
	return own == unsafe.Add(whole, disp*(t.ub-t.lb))
}

// inPlaceOf says whether a member passed MPI_IN_PLACE where MPI allows it
// (intracommunicators only), and whether it passed it elsewhere (an error).
func inPlaceOf(kind gatherKind, ri rootInfo, sendp, recvp unsafe.Pointer, sendUsed, recvUsed bool) (inPlace, bad bool) {
	if !ri.inter {
		switch kind {
		case gGather:
			inPlace = ri.isRoot && isInPlace(sendp)
		case gScatter:
			inPlace = ri.isRoot && isInPlace(recvp)
		default:
			inPlace = isInPlace(sendp)
		}
	}
	if kind == gScatter {
		bad = sendUsed && isInPlace(sendp) || !inPlace && recvUsed && isInPlace(recvp)
	} else {
		bad = !inPlace && sendUsed && isInPlace(sendp) || recvUsed && isInPlace(recvp)
	}
	return inPlace, bad
}

// gatherSides checks the root and MPI_IN_PLACE of a Gather-, Scatter-,
// Allgather- or Alltoall-like call and says which buffers the member
// uses; an in-place side counts as unused.
func gatherSides(kind gatherKind, o *commObj, root C.int, comm C.uintptr_t, sendp, recvp unsafe.Pointer, fname string) (ri rootInfo, sendUsed, recvUsed, inPlace bool, r C.int) {
	ri = rootInfo{inter: o.c.IsInter()}
	if kind == gGather || kind == gScatter {
		if ri, r = rootArg(o, root, comm, fname); r != 0 {
			return ri, false, false, false, r
		}
	}
	sendUsed, recvUsed = sides(kind, ri)
	inPlace, bad := inPlaceOf(kind, ri, sendp, recvp, sendUsed, recvUsed)
	if bad {
		return ri, false, false, false, failCode(handle(comm), MPI_ERR_BUFFER, fname)
	}
	if inPlace {
		if kind == gScatter {
			recvUsed = false
		} else {
			sendUsed = false
		}
	}
	return ri, sendUsed, recvUsed, inPlace, 0
}

type gArgs struct {
	kind       gatherKind
	c          *ranks.Comm
	send, recv []byte
	root       int
}

func (a *gArgs) run(mode cmode) (*ranks.Request, error) {
	switch a.kind {
	case gGather:
		switch mode {
		case mBlock:
			return nil, coll.Gather(a.c, a.send, a.recv, a.root)
		case mNB:
			return coll.Igather(a.c, a.send, a.recv, a.root)
		}
		return coll.GatherInit(a.c, a.send, a.recv, a.root)
	case gScatter:
		switch mode {
		case mBlock:
			return nil, coll.Scatter(a.c, a.send, a.recv, a.root)
		case mNB:
			return coll.Iscatter(a.c, a.send, a.recv, a.root)
		}
		return coll.ScatterInit(a.c, a.send, a.recv, a.root)
	case gAllgather:
		switch mode {
		case mBlock:
			return nil, coll.Allgather(a.c, a.send, a.recv)
		case mNB:
			return coll.Iallgather(a.c, a.send, a.recv)
		}
		return coll.AllgatherInit(a.c, a.send, a.recv)
	}
	switch mode {
	case mBlock:
		return nil, coll.Alltoall(a.c, a.send, a.recv)
	case mNB:
		return coll.Ialltoall(a.c, a.send, a.recv)
	}
	return coll.AlltoallInit(a.c, a.send, a.recv)
}

// gatherCall is Gather, Scatter, Allgather and Alltoall with blocks of
// (count, type) on each side.
func gatherCall(kind gatherKind, sendp unsafe.Pointer, scount int64, sdt C.uintptr_t, recvp unsafe.Pointer, rcount int64, rdt C.uintptr_t, root C.int, comm C.uintptr_t, mode cmode, req *C.uintptr_t, fname string) (code C.int) {
	o, r := collArgs(comm, mode, req, fname)
	if o == nil {
		return r
	}
	if mode == mPersist {
		defer persistGuard(o.c, coll.InitsOf(o.c), &code)
	}
	peers := o.peers()
	ri, sendUsed, recvUsed, inPlace, r := gatherSides(kind, o, root, comm, sendp, recvp, fname)
	if r != 0 {
		return r
	}
	var st, rt *dtype
	if sendUsed {
		if st, r = typeOf(sdt, comm, fname); st == nil {
			return r
		}
		if scount < 0 {
			return failCode(handle(comm), MPI_ERR_COUNT, fname)
		}
	}
	if recvUsed {
		if rt, r = typeOf(rdt, comm, fname); rt == nil {
			return r
		}
		if rcount < 0 {
			return failCode(handle(comm), MPI_ERR_COUNT, fname)
		}
	}
	if !ri.inter && sendUsed && recvUsed {
		me := int64(o.c.Rank())
		var aliased bool
		switch kind {
		case gAlltoall:
			aliased = aliasedBlock(sendp, scount, sdt, recvp, 0, rdt, st) && scount == rcount
		case gScatter:
			aliased = aliasedBlock(recvp, rcount, rdt, sendp, me*scount, sdt, rt) && scount == rcount
		default:
			aliased = aliasedBlock(sendp, scount, sdt, recvp, me*rcount, rdt, rt) && scount == rcount
		}
		if aliased {
			return failCode(handle(comm), MPI_ERR_BUFFER, fname)
		}
	}
	sendBlocks, recvBlocks := int64(1), int64(1)
	if kind == gScatter || kind == gAlltoall {
		sendBlocks = int64(peers)
	}
	if kind != gScatter {
		recvBlocks = int64(peers)
	}
	a := gArgs{kind: kind, c: o.c, root: ri.root}
	var sa, ra *area
	if st != nil {
		sa = makeArea(sendp, scount*sendBlocks, st, true)
		a.send = sa.b
	}
	if rt != nil {
		// In place, the receive buffer holds this member's data.
		ra = makeArea(recvp, rcount*recvBlocks, rt, inPlace)
		a.recv = ra.b
	}
	var pre, post func()
	if sa != nil && sa.staged || ra != nil && ra.staged && inPlace {
		pre = func() { sa.load(); ra.load() }
		if mode != mPersist {
			pre()
		}
	}
	if ra != nil && ra.staged {
		post = ra.flush
	}
	if mode == mBlock {
		_, err := a.run(mBlock)
		return collOut(comm, mode, nil, err, nil, post, nil, fname)
	}
	ha := a // the request keeps its own copy; a stays on the stack
	rq, err := (&ha).run(mode)
	return collOut(comm, mode, rq, err, pre, post, req, fname)
}

type vArgs struct {
	kind           gatherKind
	c              *ranks.Comm
	send, recv     []byte
	sc, sd, rc, rd []int
	sw, rw         [][]byte
	root           int
}

func (a *vArgs) run(mode cmode) (*ranks.Request, error) {
	switch a.kind {
	case gGather:
		switch mode {
		case mBlock:
			return nil, coll.Gatherv(a.c, a.send, a.recv, a.rc, a.rd, a.root)
		case mNB:
			return coll.Igatherv(a.c, a.send, a.recv, a.rc, a.rd, a.root)
		}
		return coll.GathervInit(a.c, a.send, a.recv, a.rc, a.rd, a.root)
	case gScatter:
		switch mode {
		case mBlock:
			return nil, coll.Scatterv(a.c, a.send, a.sc, a.sd, a.recv, a.root)
		case mNB:
			return coll.Iscatterv(a.c, a.send, a.sc, a.sd, a.recv, a.root)
		}
		return coll.ScattervInit(a.c, a.send, a.sc, a.sd, a.recv, a.root)
	case gAllgather:
		switch mode {
		case mBlock:
			return nil, coll.Allgatherv(a.c, a.send, a.recv, a.rc, a.rd)
		case mNB:
			return coll.Iallgatherv(a.c, a.send, a.recv, a.rc, a.rd)
		}
		return coll.AllgathervInit(a.c, a.send, a.recv, a.rc, a.rd)
	case gAlltoall:
		switch mode {
		case mBlock:
			return nil, coll.Alltoallv(a.c, a.send, a.sc, a.sd, a.recv, a.rc, a.rd)
		case mNB:
			return coll.Ialltoallv(a.c, a.send, a.sc, a.sd, a.recv, a.rc, a.rd)
		}
		return coll.AlltoallvInit(a.c, a.send, a.sc, a.sd, a.recv, a.rc, a.rd)
	}
	switch mode {
	case mBlock:
		return nil, coll.Alltoallw(a.c, a.sw, a.rw)
	case mNB:
		return coll.Ialltoallw(a.c, a.sw, a.rw)
	}
	return coll.AlltoallwInit(a.c, a.sw, a.rw)
}

// vCall is Gatherv, Scatterv, Allgatherv and Alltoallv: counts and
// displacements in elements (extents) of the type, on the side that has
// one block per peer. Any datatype works: a non-contiguous one is packed
// block by block.
func vCall(kind gatherKind, sendp unsafe.Pointer, scount int64, scounts, sdispls unsafe.Pointer, sdt C.uintptr_t, recvp unsafe.Pointer, rcount int64, rcounts, rdispls unsafe.Pointer, rdt C.uintptr_t, root C.int, comm C.uintptr_t, wide bool, mode cmode, req *C.uintptr_t, fname string) (code C.int) {
	o, r := collArgs(comm, mode, req, fname)
	if o == nil {
		return r
	}
	if mode == mPersist {
		defer persistGuard(o.c, coll.InitsOf(o.c), &code)
	}
	peers := o.peers()
	ri, sendUsed, recvUsed, inPlace, r := gatherSides(kind, o, root, comm, sendp, recvp, fname)
	if r != 0 {
		return r
	}
	sendV := kind == gScatter || kind == gAlltoall
	recvV := kind != gScatter
	var st, rt *dtype
	if sendUsed {
		if st, r = typeOf(sdt, comm, fname); st == nil {
			return r
		}
		if sendV && (scounts == nil || sdispls == nil) {
			return failCode(handle(comm), MPI_ERR_ARG, fname)
		}
		if !sendV && scount < 0 {
			return failCode(handle(comm), MPI_ERR_COUNT, fname)
		}
	}
	if recvUsed {
		if rt, r = typeOf(rdt, comm, fname); rt == nil {
			return r
		}
		if recvV && (rcounts == nil || rdispls == nil) {
			return failCode(handle(comm), MPI_ERR_ARG, fname)
		}
		if !recvV && rcount < 0 {
			return failCode(handle(comm), MPI_ERR_COUNT, fname)
		}
	}
	if !ri.inter && sendUsed && recvUsed && vAliased(kind, o, sendp, scount, scounts, sdispls, sdt, st, recvp, rcount, rcounts, rdispls, rdt, rt, wide) {
		return failCode(handle(comm), MPI_ERR_BUFFER, fname)
	}
	a := vArgs{kind: kind, c: o.c, root: ri.root}
	var pre []func()
	var post func()
	if rt != nil {
		if recvV {
			ra, ok := makeVArea(recvp, vecOf(rcounts, wide, peers), vecOf(rdispls, wide, peers), rt, inPlace)
			if !ok {
				return failCode(handle(comm), MPI_ERR_COUNT, fname)
			}
			a.recv, a.rc, a.rd = ra.b, ra.bc, ra.bd
			if ra.staged {
				if inPlace {
					pre = append(pre, ra.load)
				}
				post = ra.flush
			}
		} else {
			ra := makeArea(recvp, rcount, rt, false)
			a.recv = ra.b
			if ra.staged {
				post = ra.flush
			}
		}
	}
	switch {
	case inPlace && kind == gAlltoall:
		// MPI_IN_PLACE: the data sent is the receive buffer's, as its
		// counts and displacements lay it out; it is copied first.
		send := make([]byte, len(a.recv))
		a.send, a.sc, a.sd = send, a.rc, a.rd
		recv := a.recv
		pre = append(pre, func() { copy(send, recv) })
	case st != nil && sendV:
		sa, ok := makeVArea(sendp, vecOf(scounts, wide, peers), vecOf(sdispls, wide, peers), st, true)
		if !ok {
			return failCode(handle(comm), MPI_ERR_COUNT, fname)
		}
		a.send, a.sc, a.sd = sa.b, sa.bc, sa.bd
		if sa.staged {
			pre = append(pre, sa.load)
		}
	case st != nil:
		sa := makeArea(sendp, scount, st, true)
		a.send = sa.b
		if sa.staged {
			pre = append(pre, sa.load)
		}
	}
	return vOut(comm, &a, mode, pre, post, req, fname)
}

// vAliased is gatherCall's aliasing check for the v forms: a member's
// own buffer at its block of the other side (Gatherv, Allgatherv,
// Scatterv), or the same buffer and datatype on both sides with data to
// move (Alltoallv).
func vAliased(kind gatherKind, o *commObj, sendp unsafe.Pointer, scount int64, scounts, sdispls unsafe.Pointer, sdt C.uintptr_t, st *dtype,
	recvp unsafe.Pointer, rcount int64, rcounts, rdispls unsafe.Pointer, rdt C.uintptr_t, rt *dtype, wide bool) bool {
	n, me := o.peers(), o.c.Rank()
	switch kind {
	case gScatter:
		return aliasedBlock(recvp, rcount, rdt, sendp, int64(vecAt(sdispls, wide, me)), sdt, st)
	case gAlltoall:
		if sendp != recvp || sdt != rdt || st.size == 0 {
			return false
		}
		for i := range n {
			if vecAt(scounts, wide, i) != 0 {
				return true
			}
		}
		return false
	}
	return aliasedBlock(sendp, scount, sdt, recvp, int64(vecAt(rdispls, wide, me)), rdt, rt)
}

// vOut runs the v or w collective a, after its packing steps pre.
func vOut(comm C.uintptr_t, a *vArgs, mode cmode, pre []func(), post func(), req *C.uintptr_t, fname string) C.int {
	p := packSteps(pre, mode)
	rq, err := a.run(mode)
	return collOut(comm, mode, rq, err, p, post, req, fname)
}

// packSteps joins a collective's packing steps into one function (nil if
// there are none) and runs them now, unless the request is persistent:
// then collOut has every Start run them.
func packSteps(pre []func(), mode cmode) func() {
	if len(pre) == 0 {
		return nil
	}
	p := func() {
		for _, f := range pre {
			f()
		}
	}
	if mode != mPersist {
		p()
	}
	return p
}

// alltoallwCall is Alltoallw: a count, a byte displacement and a type for
// each peer on each side. Each block moves in place if its type is
// contiguous, else through a staging slice of its own.
func alltoallwCall(sendp unsafe.Pointer, scounts, sdispls unsafe.Pointer, stypes *C.uintptr_t, recvp unsafe.Pointer, rcounts, rdispls unsafe.Pointer, rtypes *C.uintptr_t, comm C.uintptr_t, wide bool, mode cmode, req *C.uintptr_t, fname string) (code C.int) {
	o, r := collArgs(comm, mode, req, fname)
	if o == nil {
		return r
	}
	if mode == mPersist {
		defer persistGuard(o.c, coll.InitsOf(o.c), &code)
	}
	peers := o.peers()
	inPlace := isInPlace(sendp)
	if inPlace && o.c.IsInter() || isInPlace(recvp) {
		return failCode(handle(comm), MPI_ERR_BUFFER, fname)
	}
	if rcounts == nil || rdispls == nil || rtypes == nil || !inPlace && (scounts == nil || sdispls == nil || stypes == nil) {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	side := func(p unsafe.Pointer, cp, dp unsafe.Pointer, tp *C.uintptr_t, fill bool) (*wArea, C.int) {
		w := &wArea{p: p, fill: fill, counts: vecOf(cp, wide, peers), displs: vecOf(dp, wide, peers),
			ts: make([]*dtype, peers), blocks: make([][]byte, peers), staged: make([]bool, peers)}
		hs := unsafe.Slice(tp, peers)
		for i := range peers {
			c := w.counts[i]
			if c < 0 {
				return nil, failCode(handle(comm), MPI_ERR_COUNT, fname)
			}
			t := getType(handle(hs[i]))
			if t == nil || !t.committed {
				if c == 0 {
					w.blocks[i] = []byte{}
					continue
				}
				return nil, failCode(handle(comm), MPI_ERR_TYPE, fname)
			}
			w.ts[i] = t
			n := int64(c) * t.size
			switch {
			case n == 0:
				w.blocks[i] = []byte{}
			case t.contig:
				w.blocks[i] = unsafe.Slice((*byte)(unsafe.Add(p, int64(w.displs[i])+t.firstOff)), n)
			default:
				w.blocks[i], w.staged[i], w.anyStaged = make([]byte, n), true, true
			}
		}
		return w, 0
	}
	if !inPlace && sendp == recvp && !o.c.IsInter() {
		// The same buffer on both sides, with data to move: MPI_IN_PLACE
		// is the way.
		ts := unsafe.Slice(stypes, peers)
		for i := range peers {
			if t := getType(handle(ts[i])); vecAt(scounts, wide, i) > 0 && t != nil && t.size > 0 {
				return failCode(handle(comm), MPI_ERR_BUFFER, fname)
			}
		}
	}
	ra, r := side(recvp, rcounts, rdispls, rtypes, inPlace)
	if ra == nil {
		return r
	}
	a := vArgs{kind: gAlltoallw, c: o.c, rw: ra.blocks}
	var pre []func()
	var post func()
	if ra.anyStaged {
		post = ra.flush
	}
	if inPlace {
		// The data sent is the receive buffer's, copied first.
		a.sw = make([][]byte, peers)
		for i, b := range ra.blocks {
			a.sw[i] = make([]byte, len(b))
		}
		pre = append(pre, ra.load, func() {
			for i, b := range ra.blocks {
				copy(a.sw[i], b)
			}
		})
	} else {
		sa, r := side(sendp, scounts, sdispls, stypes, true)
		if sa == nil {
			return r
		}
		a.sw = sa.blocks
		if sa.anyStaged {
			pre = append(pre, sa.load)
		}
	}
	return vOut(comm, &a, mode, pre, post, req, fname)
}
