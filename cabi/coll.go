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
// forms). Reductions run on the Go type of the datatype's basic elements
// (ops.go). MPI_IN_PLACE is coll's nil send buffer (nil receive buffer
// for Scatter).

func isInPlace(p unsafe.Pointer) bool { return uintptr(p) == 1 }

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
	nb           bool
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
	if a.nb {
		var rq *ranks.Request
		var err error
		switch a.kind {
		case rAllreduce:
			rq, err = coll.Iallreduce(a.c, s, r, op)
		case rReduce:
			rq, err = coll.Ireduce(a.c, s, r, op, a.root)
		default:
			return nil, errUnsupported, true
		}
		return rq, err, true
	}
	var err error
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
	return nil, err, true
}

var errUnsupported = codeErr(MPI_ERR_UNSUPPORTED_OPERATION)

// collOut finishes a collective: a blocking one runs after now; a
// nonblocking one gets a request that runs after at completion.
func collOut(comm C.uintptr_t, rq *ranks.Request, err error, after func(), req *C.uintptr_t, fname string) C.int {
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if req == nil {
		if after != nil {
			after()
		}
		return 0
	}
	var a func(*ranks.Status, error) error
	if after != nil {
		a = func(s *ranks.Status, err error) error {
			if err == nil {
				after()
			}
			return err
		}
	}
	*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(comm), after: a}))
	return 0
}

func rootArg(o *commObj, root C.int, comm C.uintptr_t, fname string) C.int {
	if root < 0 || int(root) >= o.c.Size() {
		return failCode(handle(comm), MPI_ERR_ROOT, fname)
	}
	return 0
}

func reduceCall(kind redKind, sendp, recvp unsafe.Pointer, count int64, dt, op C.uintptr_t, root C.int, comm C.uintptr_t, rcounts *C.int, req *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
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
	size, me := o.c.Size(), o.c.Rank()
	if kind == rReduce {
		if r := rootArg(o, root, comm, fname); r != 0 {
			return r
		}
	}
	var counts []int
	if kind == rRS {
		if rcounts == nil {
			return failCode(handle(comm), MPI_ERR_ARG, fname)
		}
		counts = intSlice(rcounts, C.int(size))
		for _, c := range counts {
			if c < 0 {
				return failCode(handle(comm), MPI_ERR_COUNT, fname)
			}
		}
	}
	inPlace := isInPlace(sendp)
	if kind == rReduce && inPlace && me != int(root) {
		// MPI_IN_PLACE is meaningful at the root only.
		inPlace = false
	}
	// Elements (of the datatype) in the send and receive buffers.
	sendEl, recvEl := count, count
	switch kind {
	case rRSBlock:
		sendEl = count * int64(size)
	case rRS:
		total := 0
		for _, c := range counts {
			total += c
		}
		sendEl, recvEl = int64(total), int64(counts[me])
	}
	if inPlace {
		recvEl = max(recvEl, sendEl)
	}
	if kind == rReduce && me != int(root) {
		recvEl = 0
	}
	if opo.predef == 0 {
		if req != nil {
			return failCode(handle(comm), MPI_ERR_UNSUPPORTED_OPERATION, fname)
		}
		return userReduce(o, kind, sendp, recvp, count, t, handle(dt), opo, int(root), counts, inPlace, comm, fname)
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
	a := &redArgs{c: o.c, kind: kind, root: int(root), nb: req != nil}
	a.sendN, a.recvN = int(sendEl*per), int(recvEl*per)
	if kind == rRSBlock || kind == rRS {
		a.recvN = int(recvEl * per)
		if inPlace {
			a.recvN = int(sendEl * per)
		}
	}
	for _, c := range counts {
		a.counts = append(a.counts, c*int(per))
	}
	var after func()
	if direct {
		if !inPlace && sendp != nil {
			a.send = unsafe.Add(sendp, t.firstOff)
		}
		if recvp != nil && a.recvN > 0 {
			a.recv = unsafe.Add(recvp, t.firstOff)
		}
		if !inPlace && a.send == nil && a.sendN == 0 {
			a.send = unsafe.Pointer(&zeroByte)
		}
	} else {
		// Pack into staging; unpack the result.
		if !inPlace {
			s := make([]byte, sendEl*t.size+1)
			if sendEl > 0 {
				t.pack(s, sendp, sendEl)
			}
			a.send = unsafe.Pointer(&s[0])
		}
		if recvEl > 0 {
			rs := make([]byte, recvEl*t.size)
			if inPlace {
				t.pack(rs, recvp, recvEl)
			}
			a.recv = unsafe.Pointer(&rs[0])
			outEl := recvEl
			if kind == rRS {
				outEl = int64(counts[me])
			} else if kind == rRSBlock {
				outEl = count
			}
			after = func() { t.unpack(recvp, rs[:outEl*t.size], outEl) }
		}
	}
	logical := logicalTypes[handle(dt)]
	rq, err, ok := dispatch(a, k, opo.predef, logical)
	if !ok {
		return failCode(handle(comm), MPI_ERR_OP, fname)
	}
	return collOut(comm, rq, err, after, req, fname)
}

var zeroByte byte

// userReduce applies a user op in rank order: every contribution is
// gathered (to the root for Reduce, to every member otherwise), and each
// member folds x_j op ... op x_k from the right, as MPI's user functions
// compute inoutvec = invec op inoutvec.
func userReduce(o *commObj, kind redKind, sendp, recvp unsafe.Pointer, count int64, t *dtype, dt handle, op *opObj, root int, counts []int, inPlace bool, comm C.uintptr_t, fname string) C.int {
	size, me := o.c.Size(), o.c.Rank()
	// A contribution of n elements is its span: from the first element's
	// true lower bound to the last one's true upper bound.
	span := func(n int64) int64 {
		if n == 0 {
			return 0
		}
		return (n-1)*t.extent() + t.trueUB - t.trueLB
	}
	total := count
	switch kind {
	case rRSBlock:
		total = count * int64(size)
	case rRS:
		total = 0
		for _, c := range counts {
			total += int64(c)
		}
	}
	sp := span(total)
	src := sendp
	if inPlace {
		src = recvp
	}
	mine := make([]byte, sp)
	if sp > 0 {
		copy(mine, unsafe.Slice((*byte)(unsafe.Add(src, t.trueLB)), sp))
	}
	all := make([]byte, sp*int64(size))
	var err error
	if kind == rReduce {
		err = coll.Gather(o.c, mine, all, root)
	} else {
		err = coll.Allgather(o.c, mine, all)
	}
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if kind == rReduce && me != root {
		return 0
	}
	part := func(r int) unsafe.Pointer {
		if sp == 0 {
			return nil
		}
		return unsafe.Add(unsafe.Pointer(&all[int64(r)*sp]), -t.trueLB)
	}
	// fold(lo, hi) leaves x_lo op ... op x_hi in part(hi).
	fold := func(lo, hi int) unsafe.Pointer {
		acc := part(hi)
		for j := hi - 1; j >= lo; j-- {
			callUserOp(op, part(j), acc, total, dt)
		}
		return acc
	}
	var res unsafe.Pointer
	switch kind {
	case rAllreduce, rReduce, rRSBlock, rRS:
		res = fold(0, size-1)
	case rScan:
		res = fold(0, me)
	case rExscan:
		if me == 0 {
			return 0
		}
		res = fold(0, me-1)
	}
	if total == 0 {
		return 0
	}
	// Copy the result's data (not its gaps) into the receive buffer.
	packed := make([]byte, total*t.size)
	t.pack(packed, res, total)
	switch kind {
	case rRSBlock, rRS:
		off, n := int64(me)*count, count
		if kind == rRS {
			off = 0
			for _, c := range counts[:me] {
				off += int64(c)
			}
			n = int64(counts[me])
		}
		t.unpack(recvp, packed[off*t.size:(off+n)*t.size], n)
	default:
		t.unpack(recvp, packed, total)
	}
	return 0
}

func callUserOp(op *opObj, in, inout unsafe.Pointer, n int64, dt handle) {
	d := C.uintptr_t(dt)
	big := C.int(0)
	if op.big {
		big = 1
	}
	C.shmpi_call_user_op(op.fn, big, in, inout, C.int64_t(n), &d)
}

//export shmpi_MPI_Reduce_local
func shmpi_MPI_Reduce_local(in, inout unsafe.Pointer, count C.int, dt, op C.uintptr_t) C.int {
	const fname = "MPI_Reduce_local"
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
	if opo.predef == 0 {
		callUserOp(opo, in, inout, int64(count), handle(dt))
		return 0
	}
	n := int64(count) * t.nprim
	if t.pairPredef {
		n = int64(count)
	}
	if !t.contig && !t.pairPredef {
		a := make([]byte, int64(count)*t.size+1)
		b := make([]byte, int64(count)*t.size+1)
		t.pack(a, in, int64(count))
		t.pack(b, inout, int64(count))
		if !localReduce(t.red, opo.predef, unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), int(n), logicalTypes[handle(dt)]) {
			return failNone(MPI_ERR_OP, fname)
		}
		t.unpack(inout, b[:int64(count)*t.size], int64(count))
		return 0
	}
	if !localReduce(t.red, opo.predef, unsafe.Add(in, t.firstOff), unsafe.Add(inout, t.firstOff), int(n), logicalTypes[handle(dt)]) {
		return failNone(MPI_ERR_OP, fname)
	}
	return 0
}

// localReduce computes inout = in op inout with a predefined op, through
// the same dispatch as the collectives (a one-member reduction is just
// the op).
func localReduce(k basic, op handle, in, inout unsafe.Pointer, n int, logical bool) bool {
	a := &redArgs{kind: -1, send: in, recv: inout, sendN: n, recvN: n}
	_, _, ok := dispatchLocal(a, k, op, logical)
	return ok
}

// dispatchLocal reuses dispatch's choice of op by running a local
// reduction kind.
func dispatchLocal(a *redArgs, k basic, op handle, logical bool) (*ranks.Request, error, bool) {
	a.kind = rLocal
	return dispatch(a, k, op, logical)
}

const rLocal redKind = 100

// Reductions, blocking and nonblocking.

//export shmpi_MPI_Allreduce
func shmpi_MPI_Allreduce(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rAllreduce, s, r, int64(count), dt, op, 0, comm, nil, nil, "MPI_Allreduce")
}

//export shmpi_MPI_Allreduce_c
func shmpi_MPI_Allreduce_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rAllreduce, s, r, int64(count), dt, op, 0, comm, nil, nil, "MPI_Allreduce_c")
}

//export shmpi_MPI_Iallreduce
func shmpi_MPI_Iallreduce(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Iallreduce")
	}
	return reduceCall(rAllreduce, s, r, int64(count), dt, op, 0, comm, nil, req, "MPI_Iallreduce")
}

//export shmpi_MPI_Reduce
func shmpi_MPI_Reduce(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return reduceCall(rReduce, s, r, int64(count), dt, op, root, comm, nil, nil, "MPI_Reduce")
}

//export shmpi_MPI_Reduce_c
func shmpi_MPI_Reduce_c(s, r unsafe.Pointer, count C.int64_t, dt, op C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return reduceCall(rReduce, s, r, int64(count), dt, op, root, comm, nil, nil, "MPI_Reduce_c")
}

//export shmpi_MPI_Ireduce
func shmpi_MPI_Ireduce(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Ireduce")
	}
	return reduceCall(rReduce, s, r, int64(count), dt, op, root, comm, nil, req, "MPI_Ireduce")
}

//export shmpi_MPI_Scan
func shmpi_MPI_Scan(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rScan, s, r, int64(count), dt, op, 0, comm, nil, nil, "MPI_Scan")
}

//export shmpi_MPI_Exscan
func shmpi_MPI_Exscan(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rExscan, s, r, int64(count), dt, op, 0, comm, nil, nil, "MPI_Exscan")
}

//export shmpi_MPI_Reduce_scatter_block
func shmpi_MPI_Reduce_scatter_block(s, r unsafe.Pointer, count C.int, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rRSBlock, s, r, int64(count), dt, op, 0, comm, nil, nil, "MPI_Reduce_scatter_block")
}

//export shmpi_MPI_Reduce_scatter
func shmpi_MPI_Reduce_scatter(s, r unsafe.Pointer, counts *C.int, dt, op C.uintptr_t, comm C.uintptr_t) C.int {
	return reduceCall(rRS, s, r, 0, dt, op, 0, comm, counts, nil, "MPI_Reduce_scatter")
}

// Barrier and data movement.

//export shmpi_MPI_Barrier
func shmpi_MPI_Barrier(comm C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Barrier")
	if o == nil {
		return r
	}
	return fail(handle(comm), coll.Barrier(o.c), "MPI_Barrier")
}

//export shmpi_MPI_Ibarrier
func shmpi_MPI_Ibarrier(comm C.uintptr_t, req *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Ibarrier")
	if o == nil {
		return r
	}
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Ibarrier")
	}
	rq, err := coll.Ibarrier(o.c)
	return collOut(comm, rq, err, nil, req, "MPI_Ibarrier")
}

// area is a buffer of n elements of t as bytes: in place when t is
// contiguous, else a staging slice (packed from the buffer if fill) that
// flush unpacks into it.
type area struct {
	b      []byte
	staged bool
	p      unsafe.Pointer
	n      int64
	t      *dtype
}

func makeArea(p unsafe.Pointer, n int64, t *dtype, fill bool) area {
	a := area{p: p, n: n, t: t}
	if n <= 0 {
		a.b = []byte{}
		return a
	}
	if t.contig {
		a.b = unsafe.Slice((*byte)(unsafe.Add(p, t.firstOff)), n*t.size)
		return a
	}
	a.b, a.staged = make([]byte, n*t.size), true
	if fill {
		t.pack(a.b, p, n)
	}
	return a
}

func (a area) flush() {
	if a.staged {
		a.t.unpack(a.p, a.b, a.n)
	}
}

func typeOf(h C.uintptr_t, comm C.uintptr_t, fname string) (*dtype, C.int) {
	t := getType(handle(h))
	if t == nil || !t.committed {
		return nil, failCode(handle(comm), MPI_ERR_TYPE, fname)
	}
	return t, 0
}

func bcastCall(buf unsafe.Pointer, count int64, dt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	t, r := typeOf(dt, comm, fname)
	if t == nil {
		return r
	}
	if count < 0 {
		return failCode(handle(comm), MPI_ERR_COUNT, fname)
	}
	if r := rootArg(o, root, comm, fname); r != 0 {
		return r
	}
	me := o.c.Rank()
	a := makeArea(buf, count, t, me == int(root))
	var after func()
	if a.staged && me != int(root) {
		after = a.flush
	}
	if req != nil {
		rq, err := coll.Ibcast(o.c, a.b, int(root))
		return collOut(comm, rq, err, after, req, fname)
	}
	return collOut(comm, nil, coll.Bcast(o.c, a.b, int(root)), after, nil, fname)
}

//export shmpi_MPI_Bcast
func shmpi_MPI_Bcast(buf unsafe.Pointer, count C.int, dt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return bcastCall(buf, int64(count), dt, root, comm, nil, "MPI_Bcast")
}

//export shmpi_MPI_Bcast_c
func shmpi_MPI_Bcast_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return bcastCall(buf, int64(count), dt, root, comm, nil, "MPI_Bcast_c")
}

//export shmpi_MPI_Ibcast
func shmpi_MPI_Ibcast(buf unsafe.Pointer, count C.int, dt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Ibcast")
	}
	return bcastCall(buf, int64(count), dt, root, comm, req, "MPI_Ibcast")
}

type gatherKind int

const (
	gGather gatherKind = iota
	gScatter
	gAllgather
	gAlltoall
)

// gatherCall is Gather, Scatter, Allgather and Alltoall with blocks of
// (count, type) on each side.
func gatherCall(kind gatherKind, sendp unsafe.Pointer, scount int64, sdt C.uintptr_t, recvp unsafe.Pointer, rcount int64, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	size, me := o.c.Size(), o.c.Rank()
	rooted := kind == gGather || kind == gScatter
	if rooted {
		if r := rootArg(o, root, comm, fname); r != 0 {
			return r
		}
	}
	isRoot := rooted && me == int(root)
	// Which sides this member uses.
	sendUsed := kind != gScatter || isRoot
	recvUsed := kind != gGather || isRoot
	inPlace := isInPlace(sendp)
	if kind == gScatter && isInPlace(recvp) && isRoot {
		inPlace, recvUsed = true, false
	}
	if inPlace && rooted && !isRoot {
		inPlace = false
	}
	var st, rt *dtype
	if sendUsed && !(inPlace && kind != gScatter) {
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
	var sa, ra area
	sendBlocks := int64(1)
	if kind == gScatter || kind == gAlltoall {
		sendBlocks = int64(size)
	}
	recvBlocks := int64(1)
	if kind == gGather || kind == gAllgather || kind == gAlltoall {
		recvBlocks = int64(size)
	}
	var send, recv []byte
	if st != nil {
		sa = makeArea(sendp, scount*sendBlocks, st, true)
		send = sa.b
	}
	if rt != nil {
		// In place, the receive buffer holds this member's data.
		ra = makeArea(recvp, rcount*recvBlocks, rt, inPlace)
		recv = ra.b
	}
	if inPlace {
		send = nil
		if kind == gScatter {
			recv = nil
		}
	}
	var after func()
	if ra.staged {
		after = ra.flush
	}
	var rq *ranks.Request
	var err error
	nb := req != nil
	switch kind {
	case gGather:
		if nb {
			rq, err = coll.Igather(o.c, send, recv, int(root))
		} else {
			err = coll.Gather(o.c, send, recv, int(root))
		}
	case gScatter:
		if nb {
			rq, err = coll.Iscatter(o.c, send, recv, int(root))
		} else {
			err = coll.Scatter(o.c, send, recv, int(root))
		}
	case gAllgather:
		if nb {
			rq, err = coll.Iallgather(o.c, send, recv)
		} else {
			err = coll.Allgather(o.c, send, recv)
		}
	case gAlltoall:
		if nb {
			rq, err = coll.Ialltoall(o.c, send, recv)
		} else {
			err = coll.Alltoall(o.c, send, recv)
		}
	}
	return collOut(comm, rq, err, after, req, fname)
}

//export shmpi_MPI_Gather
func shmpi_MPI_Gather(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return gatherCall(gGather, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, nil, "MPI_Gather")
}

//export shmpi_MPI_Igather
func shmpi_MPI_Igather(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Igather")
	}
	return gatherCall(gGather, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, req, "MPI_Igather")
}

//export shmpi_MPI_Scatter
func shmpi_MPI_Scatter(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return gatherCall(gScatter, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, nil, "MPI_Scatter")
}

//export shmpi_MPI_Iscatter
func shmpi_MPI_Iscatter(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Iscatter")
	}
	return gatherCall(gScatter, s, int64(sc), sdt, r, int64(rc), rdt, root, comm, req, "MPI_Iscatter")
}

//export shmpi_MPI_Allgather
func shmpi_MPI_Allgather(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return gatherCall(gAllgather, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, nil, "MPI_Allgather")
}

//export shmpi_MPI_Iallgather
func shmpi_MPI_Iallgather(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Iallgather")
	}
	return gatherCall(gAllgather, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, req, "MPI_Iallgather")
}

//export shmpi_MPI_Alltoall
func shmpi_MPI_Alltoall(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return gatherCall(gAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, nil, "MPI_Alltoall")
}

//export shmpi_MPI_Ialltoall
func shmpi_MPI_Ialltoall(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Ialltoall")
	}
	return gatherCall(gAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, 0, comm, req, "MPI_Ialltoall")
}

// The v forms: counts and displacements in elements of the type,
// converted to bytes for coll. Their buffers' types must be contiguous
// (MPI_ERR_UNSUPPORTED_OPERATION otherwise, for now).

func vBytes(counts, displs *C.int, n int, t *dtype) ([]int, []int, int64) {
	c, d := intSlice(counts, C.int(n)), intSlice(displs, C.int(n))
	var end int64
	for i := range c {
		e := int64(d[i]+c[i]) * t.extent()
		end = max(end, e)
		c[i] *= int(t.size)
		d[i] *= int(t.extent())
	}
	return c, d, end
}

func contigBytes(p unsafe.Pointer, n int64, t *dtype) []byte {
	if n <= 0 || p == nil {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, t.firstOff)), n)
}

func vCall(kind gatherKind, sendp unsafe.Pointer, scount int64, scounts, sdispls *C.int, sdt C.uintptr_t, recvp unsafe.Pointer, rcount int64, rcounts, rdispls *C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	size, me := o.c.Size(), o.c.Rank()
	rooted := kind == gGather || kind == gScatter
	if rooted {
		if r := rootArg(o, root, comm, fname); r != 0 {
			return r
		}
	}
	isRoot := rooted && me == int(root)
	inPlace := isInPlace(sendp) || (kind == gScatter && isRoot && isInPlace(recvp))
	if rooted && !isRoot {
		inPlace = false
	}
	var send, recv []byte
	var err error
	var st, rt *dtype
	if !(inPlace && kind != gScatter) && (kind != gScatter || isRoot) {
		if st, r = typeOf(sdt, comm, fname); st == nil {
			return r
		}
	}
	if (kind != gGather || isRoot) && !(inPlace && kind == gScatter) {
		if rt, r = typeOf(rdt, comm, fname); rt == nil {
			return r
		}
	}
	if (st != nil && !st.contig) || (rt != nil && !rt.contig) {
		return failCode(handle(comm), MPI_ERR_UNSUPPORTED_OPERATION, fname)
	}
	switch kind {
	case gGather: // Gatherv
		if st != nil {
			send = contigBytes(sendp, scount*st.size, st)
		}
		var c, d []int
		if isRoot {
			if rcounts == nil || rdispls == nil {
				return failCode(handle(comm), MPI_ERR_ARG, fname)
			}
			var end int64
			c, d, end = vBytes(rcounts, rdispls, size, rt)
			recv = contigBytes(recvp, end, rt)
		}
		if inPlace {
			send = nil
		}
		err = coll.Gatherv(o.c, send, recv, c, d, int(root))
	case gScatter: // Scatterv
		var c, d []int
		if isRoot {
			if scounts == nil || sdispls == nil {
				return failCode(handle(comm), MPI_ERR_ARG, fname)
			}
			var end int64
			c, d, end = vBytes(scounts, sdispls, size, st)
			send = contigBytes(sendp, end, st)
		}
		if rt != nil {
			recv = contigBytes(recvp, rcount*rt.size, rt)
		}
		if inPlace {
			recv = nil
		}
		err = coll.Scatterv(o.c, send, c, d, recv, int(root))
	case gAllgather: // Allgatherv
		if rcounts == nil || rdispls == nil {
			return failCode(handle(comm), MPI_ERR_ARG, fname)
		}
		c, d, end := vBytes(rcounts, rdispls, size, rt)
		recv = contigBytes(recvp, end, rt)
		if st != nil && !inPlace {
			send = contigBytes(sendp, scount*st.size, st)
		}
		err = coll.Allgatherv(o.c, send, recv, c, d)
	case gAlltoall: // Alltoallv
		if inPlace || scounts == nil || sdispls == nil || rcounts == nil || rdispls == nil {
			if inPlace {
				return failCode(handle(comm), MPI_ERR_UNSUPPORTED_OPERATION, fname)
			}
			return failCode(handle(comm), MPI_ERR_ARG, fname)
		}
		sc, sd, send_end := vBytes(scounts, sdispls, size, st)
		rc, rd, recv_end := vBytes(rcounts, rdispls, size, rt)
		send = contigBytes(sendp, send_end, st)
		recv = contigBytes(recvp, recv_end, rt)
		err = coll.Alltoallv(o.c, send, sc, sd, recv, rc, rd)
	}
	return fail(handle(comm), err, fname)
}

//export shmpi_MPI_Gatherv
func shmpi_MPI_Gatherv(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds *C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return vCall(gGather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, root, comm, "MPI_Gatherv")
}

//export shmpi_MPI_Scatterv
func shmpi_MPI_Scatterv(s unsafe.Pointer, scs, sds *C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return vCall(gScatter, s, 0, scs, sds, sdt, r, int64(rc), nil, nil, rdt, root, comm, "MPI_Scatterv")
}

//export shmpi_MPI_Allgatherv
func shmpi_MPI_Allgatherv(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds *C.int, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return vCall(gAllgather, s, int64(sc), nil, nil, sdt, r, 0, rcs, rds, rdt, 0, comm, "MPI_Allgatherv")
}

//export shmpi_MPI_Alltoallv
func shmpi_MPI_Alltoallv(s unsafe.Pointer, scs, sds *C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds *C.int, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return vCall(gAlltoall, s, 0, scs, sds, sdt, r, 0, rcs, rds, rdt, 0, comm, "MPI_Alltoallv")
}
