package main

/*
#include "cabi.h"
*/
import "C"

import (
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// Neighbourhood collectives (MPI 4.0 section 8.6) over package coll's:
// blocking, nonblocking (I), persistent (_init) and large-count (_c)
// forms. Buffers are staged as the other collectives' are (coll.go): a
// contiguous datatype moves in place, any other through a staging buffer
// packed before each start and unpacked after each completion. The
// blocks of MPI_PROC_NULL neighbours (past the edge of a non-periodic
// grid) are neither sent nor touched, also when they are staged.
// MPI_IN_PLACE has no meaning here (MPI_ERR_BUFFER).

// nbInfo is a communicator's neighbours in the collectives' order
// (ranks.Comm.Neighbors), kept in its commObj once asked for: a
// topology never changes.
type nbInfo struct{ src, dst []int }

// nbCache is commObj's slot for its nbInfo.
type nbCache struct{ p atomic.Pointer[nbInfo] }

func (o *commObj) neighbors(comm C.uintptr_t, fname string) (*nbInfo, C.int) {
	if nb := o.nbc.p.Load(); nb != nil {
		return nb, 0
	}
	src, dst, err := o.c.Neighbors()
	if err != nil {
		return nil, fail(handle(comm), err, fname)
	}
	nb := &nbInfo{src: src, dst: dst}
	o.nbc.p.Store(nb)
	return nb, 0
}

type nbKind int

const (
	nbAllgather nbKind = iota
	nbAlltoall
	nbAllgatherv
	nbAlltoallv
	nbAlltoallw
)

// nbArgs is a neighbourhood collective of the Go API on byte buffers.
type nbArgs struct {
	kind           nbKind
	c              *ranks.Comm
	send, recv     []byte
	sc, sd, rc, rd []int
	sw, rw         [][]byte
}

func (a *nbArgs) run(mode cmode) (*ranks.Request, error) {
	c := a.c
	switch a.kind {
	case nbAllgather:
		switch mode {
		case mBlock:
			return nil, coll.NeighborAllgather(c, a.send, a.recv)
		case mNB:
			return coll.INeighborAllgather(c, a.send, a.recv)
		}
		return coll.NeighborAllgatherInit(c, a.send, a.recv)
	case nbAlltoall:
		switch mode {
		case mBlock:
			return nil, coll.NeighborAlltoall(c, a.send, a.recv)
		case mNB:
			return coll.INeighborAlltoall(c, a.send, a.recv)
		}
		return coll.NeighborAlltoallInit(c, a.send, a.recv)
	case nbAllgatherv:
		switch mode {
		case mBlock:
			return nil, coll.NeighborAllgatherv(c, a.send, a.recv, a.rc, a.rd)
		case mNB:
			return coll.INeighborAllgatherv(c, a.send, a.recv, a.rc, a.rd)
		}
		return coll.NeighborAllgathervInit(c, a.send, a.recv, a.rc, a.rd)
	case nbAlltoallv:
		switch mode {
		case mBlock:
			return nil, coll.NeighborAlltoallv(c, a.send, a.sc, a.sd, a.recv, a.rc, a.rd)
		case mNB:
			return coll.INeighborAlltoallv(c, a.send, a.sc, a.sd, a.recv, a.rc, a.rd)
		}
		return coll.NeighborAlltoallvInit(c, a.send, a.sc, a.sd, a.recv, a.rc, a.rd)
	}
	switch mode {
	case mBlock:
		return nil, coll.NeighborAlltoallw(c, a.sw, a.rw)
	case mNB:
		return coll.INeighborAlltoallw(c, a.sw, a.rw)
	}
	return coll.NeighborAlltoallwInit(c, a.sw, a.rw)
}

// nbOut runs a after its packing steps pre (at every start), with post
// after each completion.
func nbOut(comm C.uintptr_t, a *nbArgs, mode cmode, pre []func(), post func(), req *C.uintptr_t, fname string) C.int {
	p := packSteps(pre, mode)
	rq, err := a.run(mode)
	return collOut(comm, mode, rq, err, p, post, req, fname)
}

// nbPrelude checks what every neighbourhood collective takes: the
// communicator and its topology, the request pointer, and buffers that
// are not MPI_IN_PLACE.
func nbPrelude(comm C.uintptr_t, sendp, recvp unsafe.Pointer, mode cmode, req *C.uintptr_t, fname string) (*commObj, *nbInfo, C.int) {
	o, r := collArgs(comm, mode, req, fname)
	if o == nil {
		return nil, nil, r
	}
	nb, r := o.neighbors(comm, fname)
	if nb == nil {
		if mode == mPersist {
			coll.InitFailed(o.c) // see persistGuard
		}
		return nil, nil, r
	}
	if isInPlace(sendp) || isInPlace(recvp) {
		r = failCode(handle(comm), MPI_ERR_BUFFER, fname)
		if mode == mPersist {
			coll.InitFailed(o.c) // see persistGuard
		}
		return nil, nil, r
	}
	return o, nb, 0
}

func hasNull(rs []int) bool {
	for _, r := range rs {
		if r == ranks.ProcNull {
			return true
		}
	}
	return false
}

// nbBlockCall is Neighbor_allgather and Neighbor_alltoall: blocks of
// (count, type) on each side, one per destination (alltoall) or one for
// all (allgather) on the send side, one per source on the receive side.
func nbBlockCall(kind nbKind, sendp unsafe.Pointer, scount int64, sdt C.uintptr_t, recvp unsafe.Pointer, rcount int64, rdt C.uintptr_t, comm C.uintptr_t, mode cmode, req *C.uintptr_t, fname string) (code C.int) {
	o, nb, r := nbPrelude(comm, sendp, recvp, mode, req, fname)
	if o == nil {
		return r
	}
	if mode == mPersist {
		defer persistGuard(o.c, coll.InitsOf(o.c), &code)
	}
	in, out := len(nb.src), len(nb.dst)
	st, r := typeOf(sdt, comm, fname)
	if st == nil {
		return r
	}
	rt, r := typeOf(rdt, comm, fname)
	if rt == nil {
		return r
	}
	if scount < 0 || rcount < 0 {
		return failCode(handle(comm), MPI_ERR_COUNT, fname)
	}
	sblocks := int64(1)
	if kind == nbAlltoall {
		sblocks = int64(out)
	}
	sa := makeArea(sendp, scount*sblocks, st, true)
	ra := makeArea(recvp, rcount*int64(in), rt, false)
	a := &nbArgs{kind: kind, c: o.c, send: sa.b, recv: ra.b}
	// The type signatures of the two sides must match (MPI); coll's
	// blocks are the send side's, and a receive buffer too short for
	// them is MPI_ERR_BUFFER.
	rblk := int(rcount * rt.size)
	var pre []func()
	var post func()
	if sa.staged {
		pre = append(pre, sa.load)
	}
	if ra.staged {
		post = ra.flush
		if hasNull(nb.src) {
			// Unpack the blocks that came, not the ProcNull ones.
			ext := rcount * rt.extent()
			post = func() {
				for i, s := range nb.src {
					if s != ranks.ProcNull {
						rt.unpack(unsafe.Add(recvp, int64(i)*ext), ra.b[i*rblk:(i+1)*rblk], rcount)
					}
				}
			}
		}
	}
	return nbOut(comm, a, mode, pre, post, req, fname)
}

// nbCounts reads n counts (int, or MPI_Count if wide) and displacements
// (int, MPI_Aint if wide), with the counts of ProcNull neighbours
// zeroed: their blocks are not packed or unpacked.
func nbCounts(cp, dp unsafe.Pointer, wide bool, peers []int) (counts, displs []int, ok bool) {
	counts, displs = vecOf(cp, wide, len(peers)), vecOf(dp, wide, len(peers))
	for i, p := range peers {
		if counts[i] < 0 {
			return nil, nil, false
		}
		if p == ranks.ProcNull {
			counts[i] = 0
		}
	}
	return counts, displs, true
}

// nbVCall is Neighbor_allgatherv and Neighbor_alltoallv: counts and
// displacements in elements (extents) of the type, per neighbour.
func nbVCall(kind nbKind, sendp unsafe.Pointer, scount int64, scounts, sdispls unsafe.Pointer, sdt C.uintptr_t, recvp unsafe.Pointer, rcounts, rdispls unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, wide bool, mode cmode, req *C.uintptr_t, fname string) (code C.int) {
	o, nb, r := nbPrelude(comm, sendp, recvp, mode, req, fname)
	if o == nil {
		return r
	}
	if mode == mPersist {
		defer persistGuard(o.c, coll.InitsOf(o.c), &code)
	}
	in, out := len(nb.src), len(nb.dst)
	st, r := typeOf(sdt, comm, fname)
	if st == nil {
		return r
	}
	rt, r := typeOf(rdt, comm, fname)
	if rt == nil {
		return r
	}
	if in > 0 && (rcounts == nil || rdispls == nil) || kind == nbAlltoallv && out > 0 && (scounts == nil || sdispls == nil) {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	rc, rd, ok := nbCounts(rcounts, rdispls, wide, nb.src)
	if !ok || scount < 0 {
		return failCode(handle(comm), MPI_ERR_COUNT, fname)
	}
	ra, ok := makeVArea(recvp, rc, rd, rt, false)
	if !ok {
		return failCode(handle(comm), MPI_ERR_COUNT, fname)
	}
	a := &nbArgs{kind: kind, c: o.c, recv: ra.b, rc: ra.bc, rd: ra.bd}
	var pre []func()
	var post func()
	if ra.staged {
		post = ra.flush
	}
	if kind == nbAllgatherv {
		sa := makeArea(sendp, scount, st, true)
		a.send = sa.b
		if sa.staged {
			pre = append(pre, sa.load)
		}
	} else {
		sc, sd, ok := nbCounts(scounts, sdispls, wide, nb.dst)
		if !ok {
			return failCode(handle(comm), MPI_ERR_COUNT, fname)
		}
		sa, ok := makeVArea(sendp, sc, sd, st, true)
		if !ok {
			return failCode(handle(comm), MPI_ERR_COUNT, fname)
		}
		a.send, a.sc, a.sd = sa.b, sa.bc, sa.bd
		if sa.staged {
			pre = append(pre, sa.load)
		}
	}
	return nbOut(comm, a, mode, pre, post, req, fname)
}

// nbWSide is one side of Neighbor_alltoallw: per neighbour a count (int,
// MPI_Count if wide), a byte displacement (MPI_Aint) and a type; each
// block in place if its type is contiguous, else staged.
func nbWSide(p unsafe.Pointer, cp, dp unsafe.Pointer, tp *C.uintptr_t, wide, fill bool, peers []int, comm C.uintptr_t, fname string) (*wArea, C.int) {
	n := len(peers)
	w := &wArea{p: p, fill: fill, counts: vecOf(cp, wide, n), displs: vecOf(dp, true, n),
		ts: make([]*dtype, n), blocks: make([][]byte, n), staged: make([]bool, n)}
	var hs []C.uintptr_t
	if n > 0 {
		hs = unsafe.Slice(tp, n)
	}
	for i := range n {
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
		if peers[i] == ranks.ProcNull {
			w.counts[i], c = 0, 0
		}
		w.ts[i] = t
		sz := int64(c) * t.size
		switch {
		case sz == 0:
			w.blocks[i] = []byte{}
		case t.contig:
			w.blocks[i] = unsafe.Slice((*byte)(unsafe.Add(p, int64(w.displs[i])+t.firstOff)), sz)
		default:
			w.blocks[i], w.staged[i], w.anyStaged = make([]byte, sz), true, true
		}
	}
	return w, 0
}

// nbWCall is Neighbor_alltoallw.
func nbWCall(sendp unsafe.Pointer, scounts, sdispls unsafe.Pointer, stypes *C.uintptr_t, recvp unsafe.Pointer, rcounts, rdispls unsafe.Pointer, rtypes *C.uintptr_t, comm C.uintptr_t, wide bool, mode cmode, req *C.uintptr_t, fname string) (code C.int) {
	o, nb, r := nbPrelude(comm, sendp, recvp, mode, req, fname)
	if o == nil {
		return r
	}
	if mode == mPersist {
		defer persistGuard(o.c, coll.InitsOf(o.c), &code)
	}
	if len(nb.src) > 0 && (rcounts == nil || rdispls == nil || rtypes == nil) ||
		len(nb.dst) > 0 && (scounts == nil || sdispls == nil || stypes == nil) {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	sa, r := nbWSide(sendp, scounts, sdispls, stypes, wide, true, nb.dst, comm, fname)
	if sa == nil {
		return r
	}
	ra, r := nbWSide(recvp, rcounts, rdispls, rtypes, wide, false, nb.src, comm, fname)
	if ra == nil {
		return r
	}
	a := &nbArgs{kind: nbAlltoallw, c: o.c, sw: sa.blocks, rw: ra.blocks}
	var pre []func()
	var post func()
	if sa.anyStaged {
		pre = append(pre, sa.load)
	}
	if ra.anyStaged {
		post = ra.flush
	}
	return nbOut(comm, a, mode, pre, post, req, fname)
}

// The entry points.

//export shmpi_MPI_Neighbor_allgather
func shmpi_MPI_Neighbor_allgather(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return nbBlockCall(nbAllgather, s, int64(sc), sdt, r, int64(rc), rdt, comm, mBlock, nil, "MPI_Neighbor_allgather")
}

//export shmpi_MPI_Neighbor_allgather_c
func shmpi_MPI_Neighbor_allgather_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return nbBlockCall(nbAllgather, s, int64(sc), sdt, r, int64(rc), rdt, comm, mBlock, nil, "MPI_Neighbor_allgather_c")
}

//export shmpi_MPI_Ineighbor_allgather
func shmpi_MPI_Ineighbor_allgather(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return nbBlockCall(nbAllgather, s, int64(sc), sdt, r, int64(rc), rdt, comm, mNB, req, "MPI_Ineighbor_allgather")
}

//export shmpi_MPI_Ineighbor_allgather_c
func shmpi_MPI_Ineighbor_allgather_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return nbBlockCall(nbAllgather, s, int64(sc), sdt, r, int64(rc), rdt, comm, mNB, req, "MPI_Ineighbor_allgather_c")
}

//export shmpi_MPI_Neighbor_allgather_init
func shmpi_MPI_Neighbor_allgather_init(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return nbBlockCall(nbAllgather, s, int64(sc), sdt, r, int64(rc), rdt, comm, mPersist, req, "MPI_Neighbor_allgather_init")
}

//export shmpi_MPI_Neighbor_allgather_init_c
func shmpi_MPI_Neighbor_allgather_init_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return nbBlockCall(nbAllgather, s, int64(sc), sdt, r, int64(rc), rdt, comm, mPersist, req, "MPI_Neighbor_allgather_init_c")
}

//export shmpi_MPI_Neighbor_alltoall
func shmpi_MPI_Neighbor_alltoall(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return nbBlockCall(nbAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, comm, mBlock, nil, "MPI_Neighbor_alltoall")
}

//export shmpi_MPI_Neighbor_alltoall_c
func shmpi_MPI_Neighbor_alltoall_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return nbBlockCall(nbAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, comm, mBlock, nil, "MPI_Neighbor_alltoall_c")
}

//export shmpi_MPI_Ineighbor_alltoall
func shmpi_MPI_Ineighbor_alltoall(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return nbBlockCall(nbAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, comm, mNB, req, "MPI_Ineighbor_alltoall")
}

//export shmpi_MPI_Ineighbor_alltoall_c
func shmpi_MPI_Ineighbor_alltoall_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return nbBlockCall(nbAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, comm, mNB, req, "MPI_Ineighbor_alltoall_c")
}

//export shmpi_MPI_Neighbor_alltoall_init
func shmpi_MPI_Neighbor_alltoall_init(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rc C.int, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return nbBlockCall(nbAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, comm, mPersist, req, "MPI_Neighbor_alltoall_init")
}

//export shmpi_MPI_Neighbor_alltoall_init_c
func shmpi_MPI_Neighbor_alltoall_init_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rc C.int64_t, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return nbBlockCall(nbAlltoall, s, int64(sc), sdt, r, int64(rc), rdt, comm, mPersist, req, "MPI_Neighbor_alltoall_init_c")
}

//export shmpi_MPI_Neighbor_allgatherv
func shmpi_MPI_Neighbor_allgatherv(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return nbVCall(nbAllgatherv, s, int64(sc), nil, nil, sdt, r, rcs, rds, rdt, comm, false, mBlock, nil, "MPI_Neighbor_allgatherv")
}

//export shmpi_MPI_Neighbor_allgatherv_c
func shmpi_MPI_Neighbor_allgatherv_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return nbVCall(nbAllgatherv, s, int64(sc), nil, nil, sdt, r, rcs, rds, rdt, comm, true, mBlock, nil, "MPI_Neighbor_allgatherv_c")
}

//export shmpi_MPI_Ineighbor_allgatherv
func shmpi_MPI_Ineighbor_allgatherv(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return nbVCall(nbAllgatherv, s, int64(sc), nil, nil, sdt, r, rcs, rds, rdt, comm, false, mNB, req, "MPI_Ineighbor_allgatherv")
}

//export shmpi_MPI_Ineighbor_allgatherv_c
func shmpi_MPI_Ineighbor_allgatherv_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return nbVCall(nbAllgatherv, s, int64(sc), nil, nil, sdt, r, rcs, rds, rdt, comm, true, mNB, req, "MPI_Ineighbor_allgatherv_c")
}

//export shmpi_MPI_Neighbor_allgatherv_init
func shmpi_MPI_Neighbor_allgatherv_init(s unsafe.Pointer, sc C.int, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return nbVCall(nbAllgatherv, s, int64(sc), nil, nil, sdt, r, rcs, rds, rdt, comm, false, mPersist, req, "MPI_Neighbor_allgatherv_init")
}

//export shmpi_MPI_Neighbor_allgatherv_init_c
func shmpi_MPI_Neighbor_allgatherv_init_c(s unsafe.Pointer, sc C.int64_t, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return nbVCall(nbAllgatherv, s, int64(sc), nil, nil, sdt, r, rcs, rds, rdt, comm, true, mPersist, req, "MPI_Neighbor_allgatherv_init_c")
}

//export shmpi_MPI_Neighbor_alltoallv
func shmpi_MPI_Neighbor_alltoallv(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return nbVCall(nbAlltoallv, s, 0, scs, sds, sdt, r, rcs, rds, rdt, comm, false, mBlock, nil, "MPI_Neighbor_alltoallv")
}

//export shmpi_MPI_Neighbor_alltoallv_c
func shmpi_MPI_Neighbor_alltoallv_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t) C.int {
	return nbVCall(nbAlltoallv, s, 0, scs, sds, sdt, r, rcs, rds, rdt, comm, true, mBlock, nil, "MPI_Neighbor_alltoallv_c")
}

//export shmpi_MPI_Ineighbor_alltoallv
func shmpi_MPI_Ineighbor_alltoallv(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return nbVCall(nbAlltoallv, s, 0, scs, sds, sdt, r, rcs, rds, rdt, comm, false, mNB, req, "MPI_Ineighbor_alltoallv")
}

//export shmpi_MPI_Ineighbor_alltoallv_c
func shmpi_MPI_Ineighbor_alltoallv_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return nbVCall(nbAlltoallv, s, 0, scs, sds, sdt, r, rcs, rds, rdt, comm, true, mNB, req, "MPI_Ineighbor_alltoallv_c")
}

//export shmpi_MPI_Neighbor_alltoallv_init
func shmpi_MPI_Neighbor_alltoallv_init(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return nbVCall(nbAlltoallv, s, 0, scs, sds, sdt, r, rcs, rds, rdt, comm, false, mPersist, req, "MPI_Neighbor_alltoallv_init")
}

//export shmpi_MPI_Neighbor_alltoallv_init_c
func shmpi_MPI_Neighbor_alltoallv_init_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sdt C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rdt C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return nbVCall(nbAlltoallv, s, 0, scs, sds, sdt, r, rcs, rds, rdt, comm, true, mPersist, req, "MPI_Neighbor_alltoallv_init_c")
}

//export shmpi_MPI_Neighbor_alltoallw
func shmpi_MPI_Neighbor_alltoallw(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t) C.int {
	return nbWCall(s, scs, sds, sts, r, rcs, rds, rts, comm, false, mBlock, nil, "MPI_Neighbor_alltoallw")
}

//export shmpi_MPI_Neighbor_alltoallw_c
func shmpi_MPI_Neighbor_alltoallw_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t) C.int {
	return nbWCall(s, scs, sds, sts, r, rcs, rds, rts, comm, true, mBlock, nil, "MPI_Neighbor_alltoallw_c")
}

//export shmpi_MPI_Ineighbor_alltoallw
func shmpi_MPI_Ineighbor_alltoallw(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return nbWCall(s, scs, sds, sts, r, rcs, rds, rts, comm, false, mNB, req, "MPI_Ineighbor_alltoallw")
}

//export shmpi_MPI_Ineighbor_alltoallw_c
func shmpi_MPI_Ineighbor_alltoallw_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return nbWCall(s, scs, sds, sts, r, rcs, rds, rts, comm, true, mNB, req, "MPI_Ineighbor_alltoallw_c")
}

//export shmpi_MPI_Neighbor_alltoallw_init
func shmpi_MPI_Neighbor_alltoallw_init(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return nbWCall(s, scs, sds, sts, r, rcs, rds, rts, comm, false, mPersist, req, "MPI_Neighbor_alltoallw_init")
}

//export shmpi_MPI_Neighbor_alltoallw_init_c
func shmpi_MPI_Neighbor_alltoallw_init_c(s unsafe.Pointer, scs, sds unsafe.Pointer, sts *C.uintptr_t, r unsafe.Pointer, rcs, rds unsafe.Pointer, rts *C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return nbWCall(s, scs, sds, sts, r, rcs, rds, rts, comm, true, mPersist, req, "MPI_Neighbor_alltoallw_init_c")
}
