package main

/*
#include "cabi.h"
*/
import "C"

import (
	"errors"
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Point-to-point messaging, requests and statuses.

// cStatus is MPI_Status: MPI_SOURCE, MPI_TAG, MPI_ERROR, then the bytes
// received (low and high halves) and the cancelled flag (fast.c reads
// the same fields).
type cStatus struct {
	Source, Tag, Error int32
	lo, hi, cancelled  int32
	_                  [2]int32
}

func statusBytes(p unsafe.Pointer) int64 {
	s := (*cStatus)(p)
	return int64(uint64(uint32(s.hi))<<32 | uint64(uint32(s.lo)))
}

// Ranks and tags: the ABI's wildcards and sentinels differ from the Go
// API's (MPI_ANY_TAG is -2 and MPI_PROC_NULL -3 there; AnyTag is -1 and
// ProcNull -2 here). Other negative values become invalid ones, which the
// Go API rejects with ErrRank and ErrTag.
const badValue = -1 << 20

func rankIn(r C.int) int {
	switch {
	case r >= 0:
		return int(r)
	case r == MPI_ANY_SOURCE:
		return ranks.AnySource
	case r == MPI_PROC_NULL:
		return ranks.ProcNull
	}
	return badValue
}

func tagIn(t C.int) int {
	switch {
	case t >= 0:
		return int(t)
	case t == MPI_ANY_TAG:
		return ranks.AnyTag
	}
	return badValue
}

func rankOut(r int) int32 {
	switch r {
	case ranks.ProcNull:
		return MPI_PROC_NULL
	case ranks.AnySource:
		return MPI_ANY_SOURCE
	}
	return int32(r)
}

func tagOut(t int) int32 {
	if t == ranks.AnyTag {
		return MPI_ANY_TAG
	}
	return int32(t)
}

// setStatus fills a C status (nil: MPI_STATUS_IGNORE).
func setStatus(p unsafe.Pointer, st *ranks.Status, code int) {
	if p == nil {
		return
	}
	s := (*cStatus)(p)
	s.Source, s.Tag, s.Error = rankOut(st.Source), tagOut(st.Tag), int32(code)
	s.lo, s.hi = int32(uint32(st.Bytes)), int32(uint32(uint64(st.Bytes)>>32))
	s.cancelled = 0
	if st.Cancelled {
		s.cancelled = 1
	}
}

// emptyStatus is the status of a null or inactive request.
func emptyStatus(p unsafe.Pointer) {
	if p == nil {
		return
	}
	s := (*cStatus)(p)
	s.Source, s.Tag, s.Error = MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS
	s.lo, s.hi, s.cancelled = 0, 0, 0
}

// buffer describes a user buffer of count elements of a type: where
// its data is, and whether it must be staged.
type buffer struct {
	p     unsafe.Pointer // the user's address
	count int64
	t     *dtype
	n     int64 // bytes of data
}

// bufArg checks a (buf, count, type) triple.
func bufArg(p unsafe.Pointer, count int64, h C.uintptr_t, comm C.uintptr_t, fname string) (buffer, C.int) {
	t := getType(handle(h))
	if t == nil {
		return buffer{}, failCode(handle(comm), MPI_ERR_TYPE, fname)
	}
	if !t.committed {
		return buffer{}, failCode(handle(comm), MPI_ERR_TYPE, fname)
	}
	if count < 0 {
		return buffer{}, failCode(handle(comm), MPI_ERR_COUNT, fname)
	}
	return buffer{p: p, count: count, t: t, n: count * t.size}, 0
}

// data returns the buffer's data in place if it is contiguous.
func (b buffer) data() (unsafe.Pointer, bool) {
	if b.t.contig || b.count == 0 {
		if b.n == 0 {
			return b.p, true
		}
		return unsafe.Add(b.p, b.t.firstOff), true
	}
	return nil, false
}

// packed returns the buffer's data, packed into a staging slice if
// needed.
func (b buffer) packed() []byte {
	if p, ok := b.data(); ok {
		if b.n == 0 || p == nil {
			return nil
		}
		return unsafe.Slice((*byte)(p), b.n)
	}
	s := make([]byte, b.n)
	b.t.pack(s, b.p, b.count)
	return s
}

// recvArea returns where to receive: the buffer itself, or a staging
// slice to unpack from afterwards (staged true).
func (b buffer) recvArea() (area []byte, staged bool) {
	if p, ok := b.data(); ok {
		if b.n == 0 || p == nil {
			return nil, false
		}
		return unsafe.Slice((*byte)(p), b.n), false
	}
	return make([]byte, b.n), true
}

func bytesPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// Requests.

type reqKind uint8

const (
	reqPlain    reqKind = iota // a request of the Go API
	reqDone                    // complete at creation (fin holds the result)
	reqGreq                    // a generalized request
	reqBsend                   // a buffered send: complete at once for the user
	reqPersist                 // persistent, started by start
	reqInactive                // persistent, not started
)

type reqObj struct {
	r    *ranks.Request
	comm handle
	kind reqKind
	// after runs when the operation completes (unpacking, results of
	// Iagree and Ishrink); its error replaces the operation's.
	after func(st *ranks.Status, err error) error
	// start (re)starts a persistent request and returns the request of
	// the Go API it runs as.
	start      func() (*ranks.Request, func(*ranks.Status, error) error, error)
	persistent bool
	// A completed request whose result is kept (Request_get_status, or
	// complete at creation).
	fin  bool
	fst  ranks.Status
	ferr error
	greq *greq
}

func newReq(o reqObj) handle {
	h, _ := reqs.add(o)
	return h
}

// doneRequest is a request that is already complete, with an empty
// status.
func doneRequest(comm handle) handle {
	return newReq(reqObj{kind: reqDone, comm: comm, fin: true, fst: ranks.Status{Source: ranks.AnySource, Tag: ranks.AnyTag}})
}

// complete finishes o's operation given the Go API's result, running
// its after step.
func (o *reqObj) complete(st ranks.Status, err error) (ranks.Status, error) {
	if o.after != nil && !errors.Is(err, ranks.ErrProcFailedPending) {
		err = o.after(&st, err)
		o.after = nil
	}
	return st, err
}

// wait blocks until request h completes and releases it (unless it is
// persistent or still pending on a failure). It returns the status and
// the error code.
func waitReq(ph *C.uintptr_t, st unsafe.Pointer, block bool) (done bool, code int) {
	h := handle(*ph)
	if h == MPI_REQUEST_NULL {
		emptyStatus(st)
		return true, 0
	}
	o := reqs.get(h)
	if o == nil {
		return true, -MPI_ERR_REQUEST
	}
	var s ranks.Status
	var err error
	switch {
	case o.fin:
		s, err = o.fst, o.ferr
	case o.kind == reqInactive:
		emptyStatus(st)
		return true, 0
	case o.kind == reqGreq:
		var ok bool
		s, ok, err = o.greq.wait(block)
		if !ok {
			return false, 0
		}
	default:
		if block {
			s, err = o.r.Wait()
		} else {
			var ok bool
			s, ok, err = o.r.Test()
			if !ok && err == nil {
				return false, 0
			}
		}
		if errors.Is(err, ranks.ErrProcFailedPending) {
			code = classOf(err)
			setStatus(st, &s, code)
			return true, code
		}
		s, err = o.complete(s, err)
	}
	code = classOf(err)
	setStatus(st, &s, code)
	releaseReq(ph, o)
	return true, code
}

// releaseReq frees a completed request, or makes a persistent one
// inactive.
func releaseReq(ph *C.uintptr_t, o *reqObj) {
	if o.persistent {
		o.kind = reqInactive
		o.fin, o.ferr, o.r = false, nil, nil
		return
	}
	if o.greq != nil {
		o.greq.release()
	}
	reqs.remove(handle(*ph))
	*ph = MPI_REQUEST_NULL
}

// reqErr raises the error code of a completed request on its
// communicator.
func reqErr(ph handle, comm handle, code int, fname string) C.int {
	if code < 0 {
		return failCode(MPI_COMM_WORLD, -code, fname)
	}
	if code == 0 {
		return 0
	}
	return raise(C.SHMPI_ON_COMM, comm, code, fname, nil)
}

func reqComm(h handle) handle {
	if o := reqs.get(h); o != nil {
		return o.comm
	}
	return MPI_COMM_WORLD
}

//export shmpi_MPI_Wait
func shmpi_MPI_Wait(req *C.uintptr_t, st unsafe.Pointer) C.int {
	if req == nil {
		return failNone(MPI_ERR_ARG, "MPI_Wait")
	}
	comm := reqComm(handle(*req))
	_, code := waitReq(req, st, true)
	return reqErr(handle(*req), comm, code, "MPI_Wait")
}

//export shmpi_MPI_Test
func shmpi_MPI_Test(req *C.uintptr_t, flag *C.int, st unsafe.Pointer) C.int {
	if req == nil || flag == nil {
		return failNone(MPI_ERR_ARG, "MPI_Test")
	}
	comm := reqComm(handle(*req))
	done, code := waitReq(req, st, false)
	*flag = 0
	if done {
		*flag = 1
	}
	return reqErr(handle(*req), comm, code, "MPI_Test")
}

func statusAt(sts unsafe.Pointer, i int) unsafe.Pointer {
	if sts == nil {
		return nil
	}
	return unsafe.Add(sts, i*int(unsafe.Sizeof(cStatus{})))
}

func reqSlice(p *C.uintptr_t, n C.int) []C.uintptr_t {
	if n <= 0 || p == nil {
		return nil
	}
	return unsafe.Slice(p, int(n))
}

//export shmpi_MPI_Waitall
func shmpi_MPI_Waitall(n C.int, rs *C.uintptr_t, sts unsafe.Pointer) C.int {
	if n < 0 || (n > 0 && rs == nil) {
		return failNone(MPI_ERR_ARG, "MPI_Waitall")
	}
	hs := reqSlice(rs, n)
	// The operations progress together in the engine, so waiting for
	// them one after the other takes as long as waiting for all at once.
	errComm := handle(0)
	firstCode := 0
	failed := false
	for i := range hs {
		comm := reqComm(handle(hs[i]))
		_, code := waitReq(&hs[i], statusAt(sts, i), true)
		if code != 0 {
			if code < 0 {
				code = -code
				if s := statusAt(sts, i); s != nil {
					(*cStatus)(s).Error = int32(code)
				}
			}
			if !failed {
				failed, errComm, firstCode = true, comm, code
			}
		}
	}
	if !failed {
		return 0
	}
	if sts == nil {
		return raise(C.SHMPI_ON_COMM, errComm, firstCode, "MPI_Waitall", nil)
	}
	return raise(C.SHMPI_ON_COMM, errComm, MPI_ERR_IN_STATUS, "MPI_Waitall", nil)
}

//export shmpi_MPI_Testall
func shmpi_MPI_Testall(n C.int, rs *C.uintptr_t, flag *C.int, sts unsafe.Pointer) C.int {
	if n < 0 || (n > 0 && rs == nil) || flag == nil {
		return failNone(MPI_ERR_ARG, "MPI_Testall")
	}
	hs := reqSlice(rs, n)
	// All or nothing: test each without completing it first.
	for i := range hs {
		h := handle(hs[i])
		if h == MPI_REQUEST_NULL {
			continue
		}
		o := reqs.get(h)
		if o == nil {
			return failNone(MPI_ERR_REQUEST, "MPI_Testall")
		}
		if !settle(o) {
			*flag = 0
			return 0
		}
	}
	*flag = 1
	return shmpi_MPI_Waitall(n, rs, sts)
}

// settle tests o without releasing it, keeping its result if it has
// completed; it reports whether it has.
func settle(o *reqObj) bool {
	switch {
	case o.fin || o.kind == reqInactive:
		return true
	case o.kind == reqGreq:
		return o.greq.isComplete()
	}
	s, ok, err := o.r.Test()
	if !ok && err == nil {
		return false
	}
	if errors.Is(err, ranks.ErrProcFailedPending) {
		return true
	}
	s, err = o.complete(s, err)
	o.fin, o.fst, o.ferr = true, s, err
	return true
}

//export shmpi_MPI_Request_get_status
func shmpi_MPI_Request_get_status(req C.uintptr_t, flag *C.int, st unsafe.Pointer) C.int {
	if flag == nil {
		return failNone(MPI_ERR_ARG, "MPI_Request_get_status")
	}
	h := handle(req)
	if h == MPI_REQUEST_NULL {
		*flag = 1
		emptyStatus(st)
		return 0
	}
	o := reqs.get(h)
	if o == nil {
		return failNone(MPI_ERR_REQUEST, "MPI_Request_get_status")
	}
	*flag = 0
	if settle(o) {
		*flag = 1
		if o.fin {
			setStatus(st, &o.fst, classOf(o.ferr))
		} else {
			emptyStatus(st)
		}
	}
	return 0
}

func anyOf(n C.int, rs *C.uintptr_t, block bool, idx *C.int, st unsafe.Pointer, fname string) (bool, C.int) {
	hs := reqSlice(rs, n)
	for {
		active := false
		for i := range hs {
			h := handle(hs[i])
			if h == MPI_REQUEST_NULL {
				continue
			}
			o := reqs.get(h)
			if o == nil {
				return true, failNone(MPI_ERR_REQUEST, fname)
			}
			if o.kind == reqInactive {
				continue
			}
			active = true
			if settle(o) {
				comm := o.comm
				_, code := waitReq(&hs[i], st, true)
				*idx = C.int(i)
				return true, reqErr(h, comm, code, fname)
			}
		}
		if !active {
			*idx = MPI_UNDEFINED
			emptyStatus(st)
			return true, 0
		}
		if !block {
			return false, 0
		}
		if !waitSomeProgress(hs) {
			continue
		}
	}
}

// waitSomeProgress blocks until one of the Go API requests behind hs
// completes (ranks.WaitAny), keeping its result in its reqObj. It
// returns false if none of them is a Go API request (then the caller
// polls).
func waitSomeProgress(hs []C.uintptr_t) bool {
	rs := make([]*ranks.Request, len(hs))
	objs := make([]*reqObj, len(hs))
	any := false
	for i := range hs {
		o := reqs.get(handle(hs[i]))
		if o == nil || o.fin || o.r == nil || o.kind == reqInactive || o.kind == reqGreq {
			continue
		}
		rs[i], objs[i] = o.r, o
		any = true
	}
	if !any {
		return false
	}
	i, s, err := ranks.WaitAny(rs)
	if i >= 0 && i < len(objs) && objs[i] != nil {
		o := objs[i]
		if errors.Is(err, ranks.ErrProcFailedPending) {
			o.fin, o.fst, o.ferr = true, s, err
			return true
		}
		s, err = o.complete(s, err)
		o.fin, o.fst, o.ferr = true, s, err
	}
	return true
}

//export shmpi_MPI_Waitany
func shmpi_MPI_Waitany(n C.int, rs *C.uintptr_t, idx *C.int, st unsafe.Pointer) C.int {
	if n < 0 || (n > 0 && rs == nil) || idx == nil {
		return failNone(MPI_ERR_ARG, "MPI_Waitany")
	}
	_, r := anyOf(n, rs, true, idx, st, "MPI_Waitany")
	return r
}

//export shmpi_MPI_Testany
func shmpi_MPI_Testany(n C.int, rs *C.uintptr_t, idx *C.int, flag *C.int, st unsafe.Pointer) C.int {
	if n < 0 || (n > 0 && rs == nil) || idx == nil || flag == nil {
		return failNone(MPI_ERR_ARG, "MPI_Testany")
	}
	done, r := anyOf(n, rs, false, idx, st, "MPI_Testany")
	*flag = 0
	if done {
		*flag = 1
	} else {
		*idx = MPI_UNDEFINED
	}
	return r
}

func someOf(n C.int, rs *C.uintptr_t, block bool, outcount *C.int, idxs *C.int, sts unsafe.Pointer, fname string) C.int {
	hs := reqSlice(rs, n)
	var out []int32
	if n > 0 && idxs != nil {
		out = unsafe.Slice((*int32)(unsafe.Pointer(idxs)), int(n))
	}
	for {
		active, k := false, 0
		failed, errComm := false, handle(0)
		for i := range hs {
			h := handle(hs[i])
			if h == MPI_REQUEST_NULL {
				continue
			}
			o := reqs.get(h)
			if o == nil {
				return failNone(MPI_ERR_REQUEST, fname)
			}
			if o.kind == reqInactive {
				continue
			}
			active = true
			if settle(o) {
				comm := o.comm
				_, code := waitReq(&hs[i], statusAt(sts, k), true)
				out[k] = int32(i)
				k++
				if code != 0 && !failed {
					failed, errComm = true, comm
				}
			}
		}
		if !active {
			*outcount = MPI_UNDEFINED
			return 0
		}
		if k > 0 || !block {
			*outcount = C.int(k)
			if failed {
				return raise(C.SHMPI_ON_COMM, errComm, MPI_ERR_IN_STATUS, fname, nil)
			}
			return 0
		}
		waitSomeProgress(hs)
	}
}

//export shmpi_MPI_Waitsome
func shmpi_MPI_Waitsome(n C.int, rs *C.uintptr_t, outcount *C.int, idxs *C.int, sts unsafe.Pointer) C.int {
	if n < 0 || (n > 0 && (rs == nil || idxs == nil)) || outcount == nil {
		return failNone(MPI_ERR_ARG, "MPI_Waitsome")
	}
	return someOf(n, rs, true, outcount, idxs, sts, "MPI_Waitsome")
}

//export shmpi_MPI_Testsome
func shmpi_MPI_Testsome(n C.int, rs *C.uintptr_t, outcount *C.int, idxs *C.int, sts unsafe.Pointer) C.int {
	if n < 0 || (n > 0 && (rs == nil || idxs == nil)) || outcount == nil {
		return failNone(MPI_ERR_ARG, "MPI_Testsome")
	}
	return someOf(n, rs, false, outcount, idxs, sts, "MPI_Testsome")
}

//export shmpi_MPI_Request_free
func shmpi_MPI_Request_free(req *C.uintptr_t) C.int {
	if req == nil {
		return failNone(MPI_ERR_ARG, "MPI_Request_free")
	}
	h := handle(*req)
	o := reqs.get(h)
	if o == nil {
		return failNone(MPI_ERR_REQUEST, "MPI_Request_free")
	}
	if o.r != nil && !o.fin {
		if o.after != nil {
			// The operation still completes (and unpacks) unobserved.
			r, after := o.r, o.after
			go func() {
				s, err := r.Wait()
				after(&s, err)
			}()
		} else if o.kind != reqInactive {
			o.r.Free()
		}
	}
	if o.kind == reqInactive && o.r != nil {
		o.r.Free()
	}
	if o.greq != nil {
		o.greq.freed()
	}
	reqs.remove(h)
	*req = MPI_REQUEST_NULL
	return 0
}

//export shmpi_MPI_Cancel
func shmpi_MPI_Cancel(req *C.uintptr_t) C.int {
	if req == nil {
		return failNone(MPI_ERR_ARG, "MPI_Cancel")
	}
	o := reqs.get(handle(*req))
	if o == nil {
		return failNone(MPI_ERR_REQUEST, "MPI_Cancel")
	}
	switch {
	case o.greq != nil:
		o.greq.cancel()
	case o.r != nil && !o.fin:
		// Sends cannot be cancelled here (the Go API's rule); MPI allows
		// a cancel to fail, and the status then says it was not.
		o.r.Cancel()
	}
	return 0
}

// Sends and receives.

type sendMode uint8

const (
	modeStd sendMode = iota
	modeSync
)

func send(buf unsafe.Pointer, count int64, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, mode sendMode, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	b, r := bufArg(buf, count, dt, comm, fname)
	if r != 0 {
		return r
	}
	data := b.packed()
	var err error
	if mode == modeSync {
		err = ranks.Ssend(o.c, data, rankIn(dest), tagIn(tag))
	} else {
		err = ranks.SendPtr(o.c, bytesPtr(data), len(data), 1, rankIn(dest), tagIn(tag))
	}
	return fail(handle(comm), err, fname)
}

//export shmpi_MPI_Send
func shmpi_MPI_Send(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return send(buf, int64(count), dt, dest, tag, comm, modeStd, "MPI_Send")
}

//export shmpi_MPI_Send_c
func shmpi_MPI_Send_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return send(buf, int64(count), dt, dest, tag, comm, modeStd, "MPI_Send_c")
}

//export shmpi_MPI_Rsend
func shmpi_MPI_Rsend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return send(buf, int64(count), dt, dest, tag, comm, modeStd, "MPI_Rsend")
}

//export shmpi_MPI_Ssend
func shmpi_MPI_Ssend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return send(buf, int64(count), dt, dest, tag, comm, modeSync, "MPI_Ssend")
}

//export shmpi_MPI_Ssend_c
func shmpi_MPI_Ssend_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return send(buf, int64(count), dt, dest, tag, comm, modeSync, "MPI_Ssend_c")
}

func recv(buf unsafe.Pointer, count int64, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, st unsafe.Pointer, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	b, r := bufArg(buf, count, dt, comm, fname)
	if r != 0 {
		return r
	}
	area, staged := b.recvArea()
	s, err := ranks.RecvPtr(o.c, bytesPtr(area), len(area), 1, rankIn(src), tagIn(tag))
	if staged && s.Bytes > 0 {
		b.t.unpack(b.p, area[:min(s.Bytes, len(area))], b.count)
	}
	code := classOf(err)
	setStatus(st, &s, code)
	return fail(handle(comm), err, fname)
}

//export shmpi_MPI_Recv
func shmpi_MPI_Recv(buf unsafe.Pointer, count C.int, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, st unsafe.Pointer) C.int {
	return recv(buf, int64(count), dt, src, tag, comm, st, "MPI_Recv")
}

//export shmpi_MPI_Recv_c
func shmpi_MPI_Recv_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, st unsafe.Pointer) C.int {
	return recv(buf, int64(count), dt, src, tag, comm, st, "MPI_Recv_c")
}

// isend starts a send and returns the Go API request and its after step.
func isend(o *commObj, b buffer, dest, tag int, sync bool, persistent bool) (*ranks.Request, error) {
	data := b.packed()
	switch {
	case persistent && sync:
		return ranks.SsendInit(o.c, data, dest, tag)
	case persistent:
		return ranks.SendInit(o.c, data, dest, tag)
	case sync:
		return ranks.Issend(o.c, data, dest, tag)
	}
	return ranks.IsendPtr(o.c, bytesPtr(data), len(data), 1, dest, tag)
}

func irecvStart(o *commObj, b buffer, src, tag int, persistent bool) (*ranks.Request, func(*ranks.Status, error) error, error) {
	area, staged := b.recvArea()
	var r *ranks.Request
	var err error
	if persistent {
		r, err = ranks.RecvInit(o.c, area, src, tag)
	} else {
		r, err = ranks.IrecvPtr(o.c, bytesPtr(area), len(area), 1, src, tag)
	}
	var after func(*ranks.Status, error) error
	if staged {
		after = func(s *ranks.Status, err error) error {
			if s.Bytes > 0 {
				b.t.unpack(b.p, area[:min(s.Bytes, len(area))], b.count)
			}
			return err
		}
	}
	return r, after, err
}

func isendCall(buf unsafe.Pointer, count int64, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, sync bool, req *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	b, r := bufArg(buf, count, dt, comm, fname)
	if r != 0 {
		return r
	}
	rq, err := isend(o, b, rankIn(dest), tagIn(tag), sync, false)
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(comm)}))
	return 0
}

//export shmpi_MPI_Isend
func shmpi_MPI_Isend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return isendCall(buf, int64(count), dt, dest, tag, comm, false, req, "MPI_Isend")
}

//export shmpi_MPI_Isend_c
func shmpi_MPI_Isend_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return isendCall(buf, int64(count), dt, dest, tag, comm, false, req, "MPI_Isend_c")
}

//export shmpi_MPI_Irsend
func shmpi_MPI_Irsend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return isendCall(buf, int64(count), dt, dest, tag, comm, false, req, "MPI_Irsend")
}

//export shmpi_MPI_Issend
func shmpi_MPI_Issend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return isendCall(buf, int64(count), dt, dest, tag, comm, true, req, "MPI_Issend")
}

func irecvCall(buf unsafe.Pointer, count int64, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, req *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	b, r := bufArg(buf, count, dt, comm, fname)
	if r != 0 {
		return r
	}
	rq, after, err := irecvStart(o, b, rankIn(src), tagIn(tag), false)
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(comm), after: after}))
	return 0
}

//export shmpi_MPI_Irecv
func shmpi_MPI_Irecv(buf unsafe.Pointer, count C.int, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return irecvCall(buf, int64(count), dt, src, tag, comm, req, "MPI_Irecv")
}

//export shmpi_MPI_Irecv_c
func shmpi_MPI_Irecv_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return irecvCall(buf, int64(count), dt, src, tag, comm, req, "MPI_Irecv_c")
}

// Persistent requests: each Start packs a send's data afresh (the
// buffer may have changed) and unpacks a receive's at completion.

func persistent(buf unsafe.Pointer, count C.int, dt C.uintptr_t, peer, tag C.int, comm C.uintptr_t, recv, sync bool, req *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	b, r := bufArg(buf, int64(count), dt, comm, fname)
	if r != 0 {
		return r
	}
	p, t := rankIn(peer), tagIn(tag)
	// Validate the arguments now, as MPI reports them at the init call.
	if _, err := func() (*ranks.Request, error) {
		var rq *ranks.Request
		var err error
		if recv {
			rq, err = ranks.RecvInit(o.c, []byte(nil), p, t)
		} else {
			rq, err = ranks.SendInit(o.c, []byte(nil), p, t)
		}
		if rq != nil {
			rq.Free()
		}
		return rq, err
	}(); err != nil {
		return fail(handle(comm), err, fname)
	}
	start := func() (*ranks.Request, func(*ranks.Status, error) error, error) {
		if recv {
			return irecvStart(o, b, p, t, false)
		}
		rq, err := isend(o, b, p, t, sync, false)
		return rq, nil, err
	}
	*req = C.uintptr_t(newReq(reqObj{comm: handle(comm), kind: reqInactive, persistent: true, start: start}))
	return 0
}

//export shmpi_MPI_Send_init
func shmpi_MPI_Send_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, count, dt, dest, tag, comm, false, false, req, "MPI_Send_init")
}

//export shmpi_MPI_Rsend_init
func shmpi_MPI_Rsend_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, count, dt, dest, tag, comm, false, false, req, "MPI_Rsend_init")
}

//export shmpi_MPI_Ssend_init
func shmpi_MPI_Ssend_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, count, dt, dest, tag, comm, false, true, req, "MPI_Ssend_init")
}

//export shmpi_MPI_Recv_init
func shmpi_MPI_Recv_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, count, dt, src, tag, comm, true, false, req, "MPI_Recv_init")
}

func startOne(ph *C.uintptr_t, fname string) C.int {
	o := reqs.get(handle(*ph))
	if o == nil || !o.persistent {
		return failNone(MPI_ERR_REQUEST, fname)
	}
	if o.kind != reqInactive {
		return raise(C.SHMPI_ON_COMM, o.comm, MPI_ERR_REQUEST, fname, nil)
	}
	r, after, err := o.start()
	if err != nil {
		// The error belongs to the operation: report it at completion.
		o.kind, o.fin, o.ferr = reqPersist, true, err
		return 0
	}
	o.r, o.after, o.kind = r, after, reqPersist
	return 0
}

//export shmpi_MPI_Start
func shmpi_MPI_Start(req *C.uintptr_t) C.int {
	if req == nil {
		return failNone(MPI_ERR_ARG, "MPI_Start")
	}
	return startOne(req, "MPI_Start")
}

//export shmpi_MPI_Startall
func shmpi_MPI_Startall(n C.int, rs *C.uintptr_t) C.int {
	if n < 0 || (n > 0 && rs == nil) {
		return failNone(MPI_ERR_ARG, "MPI_Startall")
	}
	hs := reqSlice(rs, n)
	for i := range hs {
		if r := startOne(&hs[i], "MPI_Startall"); r != 0 {
			return r
		}
	}
	return 0
}

// Sendrecv.

func sendrecv(sbuf unsafe.Pointer, scount int64, sdt C.uintptr_t, dest, stag C.int, rbuf unsafe.Pointer, rcount int64, rdt C.uintptr_t, src, rtag C.int, comm C.uintptr_t, st unsafe.Pointer, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	sb, r := bufArg(sbuf, scount, sdt, comm, fname)
	if r != 0 {
		return r
	}
	rb, r := bufArg(rbuf, rcount, rdt, comm, fname)
	if r != 0 {
		return r
	}
	data := sb.packed()
	area, staged := rb.recvArea()
	s, err := ranks.Sendrecv(o.c, data, rankIn(dest), tagIn(stag), area, rankIn(src), tagIn(rtag))
	if staged && s.Bytes > 0 {
		rb.t.unpack(rb.p, area[:min(s.Bytes, len(area))], rb.count)
	}
	setStatus(st, &s, classOf(err))
	return fail(handle(comm), err, fname)
}

//export shmpi_MPI_Sendrecv
func shmpi_MPI_Sendrecv(sbuf unsafe.Pointer, scount C.int, sdt C.uintptr_t, dest, stag C.int, rbuf unsafe.Pointer, rcount C.int, rdt C.uintptr_t, src, rtag C.int, comm C.uintptr_t, st unsafe.Pointer) C.int {
	return sendrecv(sbuf, int64(scount), sdt, dest, stag, rbuf, int64(rcount), rdt, src, rtag, comm, st, "MPI_Sendrecv")
}

//export shmpi_MPI_Sendrecv_c
func shmpi_MPI_Sendrecv_c(sbuf unsafe.Pointer, scount C.int64_t, sdt C.uintptr_t, dest, stag C.int, rbuf unsafe.Pointer, rcount C.int64_t, rdt C.uintptr_t, src, rtag C.int, comm C.uintptr_t, st unsafe.Pointer) C.int {
	return sendrecv(sbuf, int64(scount), sdt, dest, stag, rbuf, int64(rcount), rdt, src, rtag, comm, st, "MPI_Sendrecv_c")
}

//export shmpi_MPI_Sendrecv_replace
func shmpi_MPI_Sendrecv_replace(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, stag, src, rtag C.int, comm C.uintptr_t, st unsafe.Pointer) C.int {
	const fname = "MPI_Sendrecv_replace"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	b, r := bufArg(buf, int64(count), dt, comm, fname)
	if r != 0 {
		return r
	}
	// The outgoing data is copied first: the receive overwrites it.
	data := make([]byte, b.n)
	b.t.pack(data, b.p, b.count)
	area := make([]byte, b.n)
	s, err := ranks.Sendrecv(o.c, data, rankIn(dest), tagIn(stag), area, rankIn(src), tagIn(rtag))
	if s.Bytes > 0 {
		b.t.unpack(b.p, area[:min(s.Bytes, len(area))], b.count)
	}
	setStatus(st, &s, classOf(err))
	return fail(handle(comm), err, fname)
}

// Probes.

func probe(src, tag C.int, comm C.uintptr_t, block bool, flag *C.int, st unsafe.Pointer, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	var s ranks.Status
	var ok bool
	var err error
	if block {
		s, err = o.c.Probe(rankIn(src), tagIn(tag))
		ok = err == nil
	} else {
		s, ok, err = o.c.Iprobe(rankIn(src), tagIn(tag))
		if flag == nil {
			return failCode(handle(comm), MPI_ERR_ARG, fname)
		}
		*flag = 0
		if ok {
			*flag = 1
		}
	}
	if ok {
		setStatus(st, &s, 0)
	}
	return fail(handle(comm), err, fname)
}

//export shmpi_MPI_Probe
func shmpi_MPI_Probe(src, tag C.int, comm C.uintptr_t, st unsafe.Pointer) C.int {
	return probe(src, tag, comm, true, nil, st, "MPI_Probe")
}

//export shmpi_MPI_Iprobe
func shmpi_MPI_Iprobe(src, tag C.int, comm C.uintptr_t, flag *C.int, st unsafe.Pointer) C.int {
	return probe(src, tag, comm, false, flag, st, "MPI_Iprobe")
}

// Matched probes. The Go API has no matched probe yet; a message handle
// records the probed message's communicator, source and tag, and Mrecv
// receives from that source with that tag, which gets that message
// because messages of one sender and tag are not overtaken. A receive
// on the same communicator that matches it between the two (another
// thread's) would take it instead: MPI_Mprobe's guarantee against that
// needs the Go API.
type msgObj struct {
	comm     handle
	src, tag int
	bytes    int
	procNull bool
}

func init() {
	msgs.predef(MPI_MESSAGE_NO_PROC, &msgObj{procNull: true})
}

func mprobe(src, tag C.int, comm C.uintptr_t, block bool, flag *C.int, msg *C.uintptr_t, st unsafe.Pointer, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if msg == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if src == MPI_PROC_NULL {
		s := ranks.Status{Source: ranks.ProcNull, Tag: ranks.AnyTag}
		setStatus(st, &s, 0)
		*msg = MPI_MESSAGE_NO_PROC
		if flag != nil {
			*flag = 1
		}
		return 0
	}
	var s ranks.Status
	ok := true
	var err error
	if block {
		s, err = o.c.Probe(rankIn(src), tagIn(tag))
	} else {
		if flag == nil {
			return failCode(handle(comm), MPI_ERR_ARG, fname)
		}
		s, ok, err = o.c.Iprobe(rankIn(src), tagIn(tag))
		*flag = 0
		if ok && err == nil {
			*flag = 1
		}
	}
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if !ok {
		*msg = MPI_MESSAGE_NULL
		return 0
	}
	setStatus(st, &s, 0)
	h, _ := msgs.add(&msgObj{comm: handle(comm), src: s.Source, tag: s.Tag, bytes: s.Bytes})
	*msg = C.uintptr_t(h)
	return 0
}

//export shmpi_MPI_Mprobe
func shmpi_MPI_Mprobe(src, tag C.int, comm C.uintptr_t, msg *C.uintptr_t, st unsafe.Pointer) C.int {
	return mprobe(src, tag, comm, true, nil, msg, st, "MPI_Mprobe")
}

//export shmpi_MPI_Improbe
func shmpi_MPI_Improbe(src, tag C.int, comm C.uintptr_t, flag *C.int, msg *C.uintptr_t, st unsafe.Pointer) C.int {
	return mprobe(src, tag, comm, false, flag, msg, st, "MPI_Improbe")
}

func takeMsg(msg *C.uintptr_t, fname string) (*msgObj, C.int) {
	if msg == nil {
		return nil, failNone(MPI_ERR_ARG, fname)
	}
	m := msgs.get(handle(*msg))
	if m == nil {
		return nil, failNone(MPI_ERR_REQUEST, fname)
	}
	mo := *m
	if handle(*msg) != MPI_MESSAGE_NO_PROC {
		msgs.remove(handle(*msg))
	}
	*msg = MPI_MESSAGE_NULL
	return mo, 0
}

//export shmpi_MPI_Mrecv
func shmpi_MPI_Mrecv(buf unsafe.Pointer, count C.int, dt C.uintptr_t, msg *C.uintptr_t, st unsafe.Pointer) C.int {
	m, r := takeMsg(msg, "MPI_Mrecv")
	if m == nil {
		return r
	}
	if m.procNull {
		s := ranks.Status{Source: ranks.ProcNull, Tag: ranks.AnyTag}
		setStatus(st, &s, 0)
		return 0
	}
	return recv(buf, int64(count), dt, C.int(m.src), C.int(m.tag), C.uintptr_t(m.comm), st, "MPI_Mrecv")
}

//export shmpi_MPI_Imrecv
func shmpi_MPI_Imrecv(buf unsafe.Pointer, count C.int, dt C.uintptr_t, msg *C.uintptr_t, req *C.uintptr_t) C.int {
	m, r := takeMsg(msg, "MPI_Imrecv")
	if m == nil {
		return r
	}
	if m.procNull {
		if req == nil {
			return failNone(MPI_ERR_ARG, "MPI_Imrecv")
		}
		h := newReq(reqObj{kind: reqDone, comm: MPI_COMM_WORLD, fin: true, fst: ranks.Status{Source: ranks.ProcNull, Tag: ranks.AnyTag}})
		*req = C.uintptr_t(h)
		return 0
	}
	return irecvCall(buf, int64(count), dt, C.int(m.src), C.int(m.tag), C.uintptr_t(m.comm), req, "MPI_Imrecv")
}

// Buffered sends: the data is copied (MPI_Bsend's promise) and sent
// with a nonblocking send; the copy counts against the attached buffer
// until that send completes.

var bsend struct {
	mu      sync.Mutex
	buf     unsafe.Pointer
	size    int64
	used    int64
	pending []bsendOp
}

type bsendOp struct {
	r *ranks.Request
	n int64
}

// reapBsends completes finished buffered sends (all of them, waiting,
// if wait). bsend.mu is held.
func reapBsends(wait bool) {
	k := 0
	for _, p := range bsend.pending {
		done := false
		if wait {
			p.r.Wait()
			done = true
		} else if _, ok, err := p.r.Test(); ok || err != nil {
			done = true
		}
		if done {
			bsend.used -= p.n + MPI_BSEND_OVERHEAD
		} else {
			bsend.pending[k] = p
			k++
		}
	}
	bsend.pending = bsend.pending[:k]
}

func flushBsend() {
	bsend.mu.Lock()
	reapBsends(true)
	bsend.mu.Unlock()
}

func bsendCall(buf unsafe.Pointer, count int64, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	b, r := bufArg(buf, count, dt, comm, fname)
	if r != 0 {
		return r
	}
	bsend.mu.Lock()
	reapBsends(false)
	if bsend.used+b.n+MPI_BSEND_OVERHEAD > bsend.size {
		bsend.mu.Unlock()
		return failCode(handle(comm), MPI_ERR_BUFFER, fname)
	}
	data := make([]byte, b.n)
	b.t.pack(data, b.p, b.count)
	rq, err := ranks.Isend(o.c, data, rankIn(dest), tagIn(tag))
	if err != nil {
		bsend.mu.Unlock()
		return fail(handle(comm), err, fname)
	}
	bsend.used += b.n + MPI_BSEND_OVERHEAD
	bsend.pending = append(bsend.pending, bsendOp{r: rq, n: b.n})
	bsend.mu.Unlock()
	if req != nil {
		*req = C.uintptr_t(doneRequest(handle(comm)))
	}
	return 0
}

//export shmpi_MPI_Bsend
func shmpi_MPI_Bsend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return bsendCall(buf, int64(count), dt, dest, tag, comm, nil, "MPI_Bsend")
}

//export shmpi_MPI_Ibsend
func shmpi_MPI_Ibsend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Ibsend")
	}
	return bsendCall(buf, int64(count), dt, dest, tag, comm, req, "MPI_Ibsend")
}

//export shmpi_MPI_Buffer_attach
func shmpi_MPI_Buffer_attach(buf unsafe.Pointer, size C.int) C.int {
	bsend.mu.Lock()
	defer bsend.mu.Unlock()
	if bsend.buf != nil || bsend.size > 0 {
		bsend.mu.Unlock()
		r := failNone(MPI_ERR_BUFFER, "MPI_Buffer_attach")
		bsend.mu.Lock()
		return r
	}
	if size < 0 || (buf == nil && size > 0) {
		bsend.mu.Unlock()
		r := failNone(MPI_ERR_ARG, "MPI_Buffer_attach")
		bsend.mu.Lock()
		return r
	}
	bsend.buf, bsend.size = buf, int64(size)
	return 0
}

//export shmpi_MPI_Buffer_detach
func shmpi_MPI_Buffer_detach(addr unsafe.Pointer, size *C.int) C.int {
	if addr == nil || size == nil {
		return failNone(MPI_ERR_ARG, "MPI_Buffer_detach")
	}
	bsend.mu.Lock()
	reapBsends(true)
	*(*unsafe.Pointer)(addr) = bsend.buf
	*size = C.int(bsend.size)
	bsend.buf, bsend.size, bsend.used = nil, 0, 0
	bsend.mu.Unlock()
	return 0
}

//export shmpi_MPI_Buffer_flush
func shmpi_MPI_Buffer_flush() C.int {
	flushBsend()
	return 0
}
