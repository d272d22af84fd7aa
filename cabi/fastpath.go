package main

/*
#include <stdlib.h>
#include "cabi.h"
*/
import "C"

import (
	"os"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ring"
)

// The fast paths of MPI_Send and MPI_Recv (fastpath.h) read the engine
// through its C view, filled here at Init. SHMPI_C_FASTPATH=0 leaves them
// off (to compare, or to rule them out).

var fastView *ranks.CView

// startFastPaths fills shmpi_fast from the world's view and marks the
// calling thread, whose callbacks then own the engine lock's bias, as the
// one that may use the fast paths. Called on the thread of MPI_Init.
func startFastPaths(w *ranks.World) {
	if os.Getenv("SHMPI_C_FASTPATH") == "0" {
		return
	}
	v := w.CView()
	if *v.KillAt != 0 || !v.ClaimBias() {
		return // fault injection counts every entry in Go; or no bias to share
	}
	wire := ring.Wire()
	if C.shmpi_fast_check(C.uint64_t(wire.SeqShift), C.uint64_t(wire.SeqMask), C.uint64_t(wire.FormShift),
		C.uint64_t(wire.FormMask), C.uint64_t(wire.HiShift), C.uint64_t(wire.HiMask), C.uint64_t(wire.Written),
		C.uint64_t(wire.FormFull), C.uint64_t(wire.FormShort), C.uint64_t(wire.AnnFull), C.uint64_t(wire.AnnPosMask),
		C.uint64_t(wire.PrefetchAhead), C.int(v.InlineMax), C.int(v.ShortMax), C.int(v.GuardData11),
		C.int(v.GuardStride), C.int(v.KInline), C.int(v.KShort)) == 0 || v.TagUB != 1<<31-1 {
		return
	}
	f := &C.shmpi_fast
	f.me = C.int(v.Me)
	f.bias_on = (*C.uint32_t)(unsafe.Pointer(v.BiasOn))
	f.bias_off = (*C.uint32_t)(unsafe.Pointer(v.BiasOff))
	f.bias_inside = (*C.uint64_t)(unsafe.Pointer(v.BiasInside))
	f.want = (*C.int32_t)(unsafe.Pointer(v.Want))
	f.spin = (*C.uint8_t)(unsafe.Pointer(v.Spin))
	f.need_eval = (*C.uint8_t)(unsafe.Pointer(v.NeedEval))
	f.released = (*C.uint8_t)(unsafe.Pointer(v.Released))
	f.closed = (*C.uint8_t)(unsafe.Pointer(v.Closed))
	f.epoch = (*C.uint64_t)(unsafe.Pointer(v.Epoch))
	f.seen_epoch = (*C.uint64_t)(unsafe.Pointer(v.SeenEpoch))
	f.rx = (*C.uint64_t)(unsafe.Pointer(v.Rx))
	f.rx_bytes = (*C.uint64_t)(unsafe.Pointer(v.RxBytes))
	f.rx_at_send = (*C.uint64_t)(unsafe.Pointer(v.RxAtSend))
	f.tx = (*C.uint64_t)(unsafe.Pointer(v.Tx))
	f.tx_bytes = (*C.uint64_t)(unsafe.Pointer(v.TxBytes))
	f.last_dest = (*C.int64_t)(unsafe.Pointer(v.LastDest))
	f.active_n = (*C.int64_t)(unsafe.Pointer(v.ActiveN))
	f.queued_len = (*C.int64_t)(unsafe.Pointer(v.QueuedLen))
	f.ackq_len = (*C.int64_t)(unsafe.Pointer(v.AckqLen))
	f.starving = (*C.uint32_t)(unsafe.Pointer(v.Starving))
	f.fence_word = (*C.uint32_t)(unsafe.Pointer(v.FenceWord))
	f.sendq_n = (*C.char)(v.SendqN)
	f.sendq_stride = C.uintptr_t(v.SendqStride)
	f.gone = (*C.uint8_t)(unsafe.Pointer(v.Gone))
	// C memory: the producers' cached heads are the C side's own.
	prods := (*[1 << 24]C.shmpi_cprod)(C.calloc(C.size_t(v.N), C.size_t(unsafe.Sizeof(C.shmpi_cprod{}))))
	dbs := (*[1 << 24]*C.uint32_t)(C.calloc(C.size_t(v.N), C.size_t(unsafe.Sizeof(uintptr(0)))))
	for r := range v.N {
		p := v.Prods[r]
		prods[r] = C.shmpi_cprod{r: cRing(p.Ring), ann: (*C.uint64_t)(unsafe.Pointer(p.Ann)),
			anntop: C.uint64_t(p.AnnTop), id: C.uint64_t(p.ID)}
		dbs[r] = (*C.uint32_t)(unsafe.Pointer(v.Doorbells[r]))
	}
	f.prods = &prods[0]
	f.doorbells = &dbs[0]
	f.inbox = cRing(v.Inbox.Ring)
	f.inbox_pos = (*C.uint64_t)(unsafe.Pointer(v.Inbox.Pos))
	f.inbox_published = (*C.uint64_t)(unsafe.Pointer(v.Inbox.Published))
	l := ranks.CommLayout()
	f.c_ctx, f.c_unexp_n, f.c_posted_n = C.uintptr_t(l.Ctx), C.uintptr_t(l.UnexpN), C.uintptr_t(l.PostedN)
	f.c_unusable, f.c_peer_ctx = C.uintptr_t(l.Unusable), C.uintptr_t(l.PeerCtx)
	f.c_group, f.c_to_comm = C.uintptr_t(l.Group), C.uintptr_t(l.ToComm)
	f.c_ok_epoch = C.uintptr_t(l.OkEpoch)
	f.yield_budget = (*C.int64_t)(unsafe.Pointer(v.YieldBudget))
	fastView = v
	C.shmpi_fast_own_thread()
	f.on = 1
}

func cRing(r ring.CRing) C.shmpi_cring {
	return C.shmpi_cring{tail: (*C.uint64_t)(unsafe.Pointer(r.Tail)), head: (*C.uint64_t)(unsafe.Pointer(r.Head)),
		units: (*C.char)(r.Units), mask: C.uint64_t(r.Mask)}
}

// pinComm lets the fast paths read o's Go communicator through its C
// entry e; unpinComm ends that once the entry is invalid.
func pinComm(o *commObj, e *C.shmpi_comm_ent) {
	e.gocomm = (*C.char)(o.c.CPin(&o.pin))
	if cv := coll.CViewOf(o.c, &o.pin); cv != nil {
		v := (*C.shmpi_collview)(C.calloc(1, C.size_t(unsafe.Sizeof(C.shmpi_collview{}))))
		v.a, v.k, v.cur = (*C.uint64_t)(cv.A), (*C.uint64_t)(cv.K), (*C.uint64_t)(cv.Cur)
		v.one_way = (*C.uint8_t)(unsafe.Pointer(cv.OneWay))
		v.freed, v.busy = (*C.uint32_t)(unsafe.Pointer(cv.Freed)), (*C.uint32_t)(unsafe.Pointer(cv.Busy))
		v.hdr, v.lines = (*C.char)(cv.Hdr), (*C.char)(cv.Lines)
		v.sleepers = (*C.uint32_t)(unsafe.Pointer(cv.Sleepers))
		v.size, v.rank = C.int64_t(cv.Size), C.int64_t(cv.Rank)
		v.rounds = C.int64_t(cv.Rounds)
		if cv.Spin {
			v.spin = 1
		}
		e.coll = v
	}
}

func unpinComm(o *commObj, e *C.shmpi_comm_ent) {
	e.gocomm = nil
	if v := e.coll; v != nil {
		e.coll = nil
		C.free(unsafe.Pointer(v))
	}
	o.pin.Unpin()
}

//export shmpi_fast_ring
func shmpi_fast_ring(w C.int) { fastView.Ring(int(w)) }

//export shmpi_fast_relax
func shmpi_fast_relax() { fastView.Relax() }

// The fast collectives' ways back into Go (fastcoll.h): the waits once
// polling (and yielding) did not end them, and the error of an Allreduce
// whose phase did not give data of the caller's size. kind 0 is
// MPI_Allreduce, 1 MPI_Barrier.

var fastCollNames = [2][2]string{{"Allreduce", "MPI_Allreduce"}, {"Barrier", "MPI_Barrier"}}

//export shmpi_fast_coll_wait
func shmpi_fast_coll_wait(comm C.uintptr_t, kind C.int, yields C.int) C.int {
	o := getComm(handle(comm))
	n := fastCollNames[kind]
	return fail(handle(comm), coll.CWait(o.c, n[0], int(yields)), n[1])
}

//export shmpi_fast_coll_await
func shmpi_fast_coll_await(comm C.uintptr_t, kind C.int, r C.int64_t, v, end C.uint32_t) C.int {
	o := getComm(handle(comm))
	n := fastCollNames[kind]
	return fail(handle(comm), coll.CAwait(o.c, n[0], int(r), uint32(v), uint32(end)), n[1])
}

//export shmpi_fast_coll_read_err
func shmpi_fast_coll_read_err(comm C.uintptr_t, mine unsafe.Pointer, n C.int64_t) C.int {
	o := getComm(handle(comm))
	return fail(handle(comm), coll.CReadErr(o.c, "Allreduce", unsafe.Slice((*byte)(mine), int(n))), "MPI_Allreduce")
}

//export shmpi_fast_coll_result
func shmpi_fast_coll_result(comm C.uintptr_t, p unsafe.Pointer, n C.int64_t) C.int {
	o := getComm(handle(comm))
	return fail(handle(comm), coll.CResult(o.c, "Allreduce", unsafe.Slice((*byte)(p), int(n))), "MPI_Allreduce")
}

//export shmpi_fast_coll_last
func shmpi_fast_coll_last(comm C.uintptr_t, mine unsafe.Pointer, n C.int64_t) C.int {
	o := getComm(handle(comm))
	return fail(handle(comm), coll.CLast(o.c, "Allreduce", unsafe.Slice((*byte)(mine), int(n))), "MPI_Allreduce")
}
