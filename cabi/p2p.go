package main

/*
#include <stdlib.h>
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

// setStatus fills a C status (nil: MPI_STATUS_IGNORE). Its error field
// only on an error: MPI lets only the calls that complete several
// requests set it (they do, per request), and programs check that the
// others leave it alone (MPICH's pt2pt/mprobe).
func setStatus(p unsafe.Pointer, st *ranks.Status, code int) {
	if p == nil {
		return
	}
	s := (*cStatus)(p)
	s.Source, s.Tag = rankOut(st.Source), tagOut(st.Tag)
	if code != 0 {
		s.Error = int32(code)
	}
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
	// pr is the Go API's persistent request behind a persistent
	// collective, which start restarts each time; nil for the others.
	pr *ranks.Request
	// part is a partitioned request's packing (partitioned.go).
	part *partObj
	// held is the communicator a persistent point-to-point request
	// keeps until it is freed (commObj.hold).
	held *commObj
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

// raiseInStatus reports the failure of a request completed by a call on
// several (Waitall, Waitsome, Testsome...): the error handler of the
// request's communicator sees the request's own code, as in Open MPI
// (ULFM programs' handlers look for MPIX_ERR_PROC_FAILED there), and the
// call returns MPI_ERR_IN_STATUS, the statuses holding each request's.
func raiseInStatus(comm handle, code int, fname string) C.int {
	raise(C.SHMPI_ON_COMM, comm, code, fname, nil)
	return MPI_ERR_IN_STATUS
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
		if code < 0 {
			code = -code
		}
		if s := statusAt(sts, i); s != nil {
			(*cStatus)(s).Error = int32(code)
		}
		if code != 0 {
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
	return raiseInStatus(errComm, firstCode, "MPI_Waitall")
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

// getStatus reports whether the request h is complete and its status,
// without completing it (MPI_Request_get_status); null and inactive
// requests are complete with the empty status, and active says which
// requests are neither.
func getStatus(h handle, st unsafe.Pointer) (done, active bool, ok bool) {
	if h == MPI_REQUEST_NULL {
		emptyStatus(st)
		return true, false, true
	}
	o := reqs.get(h)
	if o == nil {
		return false, false, false
	}
	if o.kind == reqInactive {
		emptyStatus(st)
		return true, false, true
	}
	if !settle(o) {
		return false, true, true
	}
	if o.fin {
		setStatus(st, &o.fst, classOf(o.ferr))
	} else {
		emptyStatus(st)
	}
	return true, true, true
}

//export shmpi_MPI_Request_get_status_all
func shmpi_MPI_Request_get_status_all(n C.int, rs *C.uintptr_t, flag *C.int, sts unsafe.Pointer) C.int {
	const fname = "MPI_Request_get_status_all"
	if n < 0 || (n > 0 && rs == nil) || flag == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	hs := reqSlice(rs, n)
	all := true
	for i := range hs {
		done, _, ok := getStatus(handle(hs[i]), nil)
		if !ok {
			return failNone(MPI_ERR_REQUEST, fname)
		}
		all = all && done
	}
	*flag = 0
	if !all {
		return 0
	}
	*flag = 1
	for i := range hs {
		getStatus(handle(hs[i]), statusAt(sts, i))
	}
	return 0
}

//export shmpi_MPI_Request_get_status_any
func shmpi_MPI_Request_get_status_any(n C.int, rs *C.uintptr_t, idx *C.int, flag *C.int, st unsafe.Pointer) C.int {
	const fname = "MPI_Request_get_status_any"
	if n < 0 || (n > 0 && rs == nil) || flag == nil || idx == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	anyActive := false
	for i, h := range reqSlice(rs, n) {
		done, active, ok := getStatus(handle(h), nil)
		if !ok {
			return failNone(MPI_ERR_REQUEST, fname)
		}
		if active && done {
			getStatus(handle(h), st)
			*idx, *flag = C.int(i), 1
			return 0
		}
		anyActive = anyActive || active
	}
	*idx, *flag = MPI_UNDEFINED, 0
	if !anyActive {
		*flag = 1
		emptyStatus(st)
	}
	return 0
}

//export shmpi_MPI_Request_get_status_some
func shmpi_MPI_Request_get_status_some(n C.int, rs *C.uintptr_t, outcount *C.int, idxs *C.int, sts unsafe.Pointer) C.int {
	const fname = "MPI_Request_get_status_some"
	if n < 0 || (n > 0 && (rs == nil || idxs == nil)) || outcount == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	out := unsafe.Slice((*int32)(unsafe.Pointer(idxs)), max(int(n), 0))
	k, anyActive := 0, false
	for i, h := range reqSlice(rs, n) {
		done, active, ok := getStatus(handle(h), nil)
		if !ok {
			return failNone(MPI_ERR_REQUEST, fname)
		}
		anyActive = anyActive || active
		if active && done {
			getStatus(handle(h), statusAt(sts, k))
			out[k] = int32(i)
			k++
		}
	}
	*outcount = C.int(k)
	if !anyActive {
		*outcount = MPI_UNDEFINED
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
		failed, errComm, firstCode := false, handle(0), 0
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
				if code < 0 {
					code = -code
				}
				if s := statusAt(sts, k); s != nil {
					(*cStatus)(s).Error = int32(code)
				}
				out[k] = int32(i)
				k++
				if code != 0 && !failed {
					failed, errComm, firstCode = true, comm, code
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
				return raiseInStatus(errComm, firstCode, fname)
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
	switch {
	case o.r != nil && !o.fin && (o.after != nil || o.pr != nil):
		// The operation still completes (and unpacks) unobserved; a
		// persistent request of the Go API is freed once it is inactive.
		r, after, pr, held := o.r, o.after, o.pr, o.held
		go func() {
			s, err := r.Wait()
			if after != nil {
				after(&s, err)
			}
			if pr != nil {
				pr.Free()
			}
			if held != nil {
				held.unhold()
			}
		}()
		o.held = nil
	case o.r != nil && !o.fin && o.kind != reqInactive:
		o.r.Free()
	case o.pr != nil:
		o.pr.Free()
	}
	if o.held != nil {
		o.held.unhold()
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

//export shmpi_MPI_Rsend_c
func shmpi_MPI_Rsend_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return send(buf, int64(count), dt, dest, tag, comm, modeStd, "MPI_Rsend_c")
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

//export shmpi_MPI_Irsend_c
func shmpi_MPI_Irsend_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return isendCall(buf, int64(count), dt, dest, tag, comm, false, req, "MPI_Irsend_c")
}

//export shmpi_MPI_Issend_c
func shmpi_MPI_Issend_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return isendCall(buf, int64(count), dt, dest, tag, comm, true, req, "MPI_Issend_c")
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

type persistKind uint8

const (
	pSend persistKind = iota
	pSsend
	pBsend
	pRecv
)

func persistent(buf unsafe.Pointer, count int64, dt C.uintptr_t, peer, tag C.int, comm C.uintptr_t, kind persistKind, req *C.uintptr_t, fname string) C.int {
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
	p, t := rankIn(peer), tagIn(tag)
	// Validate the arguments now, as MPI reports them at the init call.
	var rq *ranks.Request
	var err error
	if kind == pRecv {
		rq, err = ranks.RecvInit(o.c, []byte(nil), p, t)
	} else {
		rq, err = ranks.SendInit(o.c, []byte(nil), p, t)
	}
	if rq != nil {
		rq.Free()
	}
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	start := func() (*ranks.Request, func(*ranks.Status, error) error, error) {
		switch kind {
		case pRecv:
			return irecvStart(o, b, p, t, false)
		case pBsend:
			data := b.packed()
			rq, err := ranks.IbsendPtr(o.c, bytesPtr(data), len(data), 1, p, t)
			return rq, nil, err
		}
		rq, err := isend(o, b, p, t, kind == pSsend, false)
		return rq, nil, err
	}
	o.hold()
	*req = C.uintptr_t(newReq(reqObj{comm: handle(comm), kind: reqInactive, persistent: true, start: start, held: o}))
	return 0
}

//export shmpi_MPI_Send_init
func shmpi_MPI_Send_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, int64(count), dt, dest, tag, comm, pSend, req, "MPI_Send_init")
}

//export shmpi_MPI_Send_init_c
func shmpi_MPI_Send_init_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, int64(count), dt, dest, tag, comm, pSend, req, "MPI_Send_init_c")
}

//export shmpi_MPI_Rsend_init
func shmpi_MPI_Rsend_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, int64(count), dt, dest, tag, comm, pSend, req, "MPI_Rsend_init")
}

//export shmpi_MPI_Rsend_init_c
func shmpi_MPI_Rsend_init_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, int64(count), dt, dest, tag, comm, pSend, req, "MPI_Rsend_init_c")
}

//export shmpi_MPI_Ssend_init
func shmpi_MPI_Ssend_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, int64(count), dt, dest, tag, comm, pSsend, req, "MPI_Ssend_init")
}

//export shmpi_MPI_Ssend_init_c
func shmpi_MPI_Ssend_init_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, int64(count), dt, dest, tag, comm, pSsend, req, "MPI_Ssend_init_c")
}

//export shmpi_MPI_Bsend_init
func shmpi_MPI_Bsend_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, int64(count), dt, dest, tag, comm, pBsend, req, "MPI_Bsend_init")
}

//export shmpi_MPI_Bsend_init_c
func shmpi_MPI_Bsend_init_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, int64(count), dt, dest, tag, comm, pBsend, req, "MPI_Bsend_init_c")
}

//export shmpi_MPI_Recv_init
func shmpi_MPI_Recv_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, int64(count), dt, src, tag, comm, pRecv, req, "MPI_Recv_init")
}

//export shmpi_MPI_Recv_init_c
func shmpi_MPI_Recv_init_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	return persistent(buf, int64(count), dt, src, tag, comm, pRecv, req, "MPI_Recv_init_c")
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

func sendrecv(sbuf unsafe.Pointer, scount int64, sdt C.uintptr_t, dest, stag C.int, rbuf unsafe.Pointer, rcount int64, rdt C.uintptr_t, src, rtag C.int, comm C.uintptr_t, st unsafe.Pointer, req *C.uintptr_t, fname string) C.int {
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
	if req != nil {
		rq, err := ranks.Isendrecv(o.c, data, rankIn(dest), tagIn(stag), area, rankIn(src), tagIn(rtag))
		if err != nil {
			return fail(handle(comm), err, fname)
		}
		after := func(s *ranks.Status, err error) error {
			_ = data // the staged send data stays alive until the send is done
			if staged && s.Bytes > 0 {
				rb.t.unpack(rb.p, area[:min(s.Bytes, len(area))], rb.count)
			}
			return err
		}
		*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(comm), after: after}))
		return 0
	}
	s, err := ranks.Sendrecv(o.c, data, rankIn(dest), tagIn(stag), area, rankIn(src), tagIn(rtag))
	if staged && s.Bytes > 0 {
		rb.t.unpack(rb.p, area[:min(s.Bytes, len(area))], rb.count)
	}
	setStatus(st, &s, classOf(err))
	return fail(handle(comm), err, fname)
}

//export shmpi_MPI_Sendrecv
func shmpi_MPI_Sendrecv(sbuf unsafe.Pointer, scount C.int, sdt C.uintptr_t, dest, stag C.int, rbuf unsafe.Pointer, rcount C.int, rdt C.uintptr_t, src, rtag C.int, comm C.uintptr_t, st unsafe.Pointer) C.int {
	return sendrecv(sbuf, int64(scount), sdt, dest, stag, rbuf, int64(rcount), rdt, src, rtag, comm, st, nil, "MPI_Sendrecv")
}

//export shmpi_MPI_Sendrecv_c
func shmpi_MPI_Sendrecv_c(sbuf unsafe.Pointer, scount C.int64_t, sdt C.uintptr_t, dest, stag C.int, rbuf unsafe.Pointer, rcount C.int64_t, rdt C.uintptr_t, src, rtag C.int, comm C.uintptr_t, st unsafe.Pointer) C.int {
	return sendrecv(sbuf, int64(scount), sdt, dest, stag, rbuf, int64(rcount), rdt, src, rtag, comm, st, nil, "MPI_Sendrecv_c")
}

//export shmpi_MPI_Isendrecv
func shmpi_MPI_Isendrecv(sbuf unsafe.Pointer, scount C.int, sdt C.uintptr_t, dest, stag C.int, rbuf unsafe.Pointer, rcount C.int, rdt C.uintptr_t, src, rtag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Isendrecv")
	}
	return sendrecv(sbuf, int64(scount), sdt, dest, stag, rbuf, int64(rcount), rdt, src, rtag, comm, nil, req, "MPI_Isendrecv")
}

//export shmpi_MPI_Isendrecv_c
func shmpi_MPI_Isendrecv_c(sbuf unsafe.Pointer, scount C.int64_t, sdt C.uintptr_t, dest, stag C.int, rbuf unsafe.Pointer, rcount C.int64_t, rdt C.uintptr_t, src, rtag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Isendrecv_c")
	}
	return sendrecv(sbuf, int64(scount), sdt, dest, stag, rbuf, int64(rcount), rdt, src, rtag, comm, nil, req, "MPI_Isendrecv_c")
}

func sendrecvReplace(buf unsafe.Pointer, count int64, dt C.uintptr_t, dest, stag, src, rtag C.int, comm C.uintptr_t, st unsafe.Pointer, req *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	b, r := bufArg(buf, count, dt, comm, fname)
	if r != 0 {
		return r
	}
	// A contiguous buffer is exchanged in place; another through a
	// packed copy.
	area, staged := b.recvArea()
	if staged {
		b.t.pack(area, b.p, b.count)
	}
	unpack := func(s *ranks.Status) {
		if staged && s.Bytes > 0 {
			b.t.unpack(b.p, area[:min(s.Bytes, len(area))], b.count)
		}
	}
	if req != nil {
		rq, err := ranks.IsendrecvReplace(o.c, area, rankIn(dest), tagIn(stag), rankIn(src), tagIn(rtag))
		if err != nil {
			return fail(handle(comm), err, fname)
		}
		after := func(s *ranks.Status, err error) error {
			unpack(s)
			return err
		}
		*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(comm), after: after}))
		return 0
	}
	s, err := ranks.SendrecvReplace(o.c, area, rankIn(dest), tagIn(stag), rankIn(src), tagIn(rtag))
	unpack(&s)
	setStatus(st, &s, classOf(err))
	return fail(handle(comm), err, fname)
}

//export shmpi_MPI_Sendrecv_replace
func shmpi_MPI_Sendrecv_replace(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, stag, src, rtag C.int, comm C.uintptr_t, st unsafe.Pointer) C.int {
	return sendrecvReplace(buf, int64(count), dt, dest, stag, src, rtag, comm, st, nil, "MPI_Sendrecv_replace")
}

//export shmpi_MPI_Sendrecv_replace_c
func shmpi_MPI_Sendrecv_replace_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, stag, src, rtag C.int, comm C.uintptr_t, st unsafe.Pointer) C.int {
	return sendrecvReplace(buf, int64(count), dt, dest, stag, src, rtag, comm, st, nil, "MPI_Sendrecv_replace_c")
}

//export shmpi_MPI_Isendrecv_replace
func shmpi_MPI_Isendrecv_replace(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, stag, src, rtag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Isendrecv_replace")
	}
	return sendrecvReplace(buf, int64(count), dt, dest, stag, src, rtag, comm, nil, req, "MPI_Isendrecv_replace")
}

//export shmpi_MPI_Isendrecv_replace_c
func shmpi_MPI_Isendrecv_replace_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, stag, src, rtag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Isendrecv_replace_c")
	}
	return sendrecvReplace(buf, int64(count), dt, dest, stag, src, rtag, comm, nil, req, "MPI_Isendrecv_replace_c")
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

// Matched probes: a message handle holds the ranks.Message that Mprobe
// took out of matching, so no other receive or probe, in any thread, can
// take it before Mrecv does.
type msgObj struct {
	comm     handle
	m        *ranks.Message
	procNull bool
}

func init() {
	msgs.predef(MPI_MESSAGE_NO_PROC, &msgObj{comm: MPI_COMM_WORLD, procNull: true})
}

func mprobe(src, tag C.int, comm C.uintptr_t, block bool, flag *C.int, msg *C.uintptr_t, st unsafe.Pointer, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if msg == nil || (!block && flag == nil) {
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
	var m *ranks.Message
	var s ranks.Status
	ok := true
	var err error
	if block {
		m, s, err = o.c.Mprobe(rankIn(src), tagIn(tag))
	} else {
		m, s, ok, err = o.c.Improbe(rankIn(src), tagIn(tag))
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
	h, _ := msgs.add(&msgObj{comm: handle(comm), m: m})
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

// mrecv receives the message *msg (blocking, or with a request if req is
// not nil) and sets *msg to MPI_MESSAGE_NULL.
func mrecv(buf unsafe.Pointer, count int64, dt C.uintptr_t, msg *C.uintptr_t, st unsafe.Pointer, req *C.uintptr_t, fname string) C.int {
	if msg == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	mp := msgs.get(handle(*msg))
	if mp == nil {
		return failNone(MPI_ERR_REQUEST, fname)
	}
	m := *mp
	if m.procNull {
		*msg = MPI_MESSAGE_NULL
		s := ranks.Status{Source: ranks.ProcNull, Tag: ranks.AnyTag}
		if req != nil {
			*req = C.uintptr_t(newReq(reqObj{kind: reqDone, comm: MPI_COMM_WORLD, fin: true, fst: s}))
		}
		setStatus(st, &s, 0)
		return 0
	}
	b, r := bufArg(buf, count, dt, C.uintptr_t(m.comm), fname)
	if r != 0 {
		return r
	}
	msgs.remove(handle(*msg))
	*msg = MPI_MESSAGE_NULL
	area, staged := b.recvArea()
	if req != nil {
		rq, err := ranks.ImrecvPtr(m.m, bytesPtr(area), len(area), 1)
		if err != nil {
			return fail(m.comm, err, fname)
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
		*req = C.uintptr_t(newReq(reqObj{r: rq, comm: m.comm, after: after}))
		return 0
	}
	s, err := ranks.MrecvPtr(m.m, bytesPtr(area), len(area), 1)
	if staged && s.Bytes > 0 {
		b.t.unpack(b.p, area[:min(s.Bytes, len(area))], b.count)
	}
	setStatus(st, &s, classOf(err))
	return fail(m.comm, err, fname)
}

//export shmpi_MPI_Mrecv
func shmpi_MPI_Mrecv(buf unsafe.Pointer, count C.int, dt C.uintptr_t, msg *C.uintptr_t, st unsafe.Pointer) C.int {
	return mrecv(buf, int64(count), dt, msg, st, nil, "MPI_Mrecv")
}

//export shmpi_MPI_Mrecv_c
func shmpi_MPI_Mrecv_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, msg *C.uintptr_t, st unsafe.Pointer) C.int {
	return mrecv(buf, int64(count), dt, msg, st, nil, "MPI_Mrecv_c")
}

//export shmpi_MPI_Imrecv
func shmpi_MPI_Imrecv(buf unsafe.Pointer, count C.int, dt C.uintptr_t, msg *C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failNone(MPI_ERR_ARG, "MPI_Imrecv")
	}
	return mrecv(buf, int64(count), dt, msg, nil, req, "MPI_Imrecv")
}

//export shmpi_MPI_Imrecv_c
func shmpi_MPI_Imrecv_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, msg *C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failNone(MPI_ERR_ARG, "MPI_Imrecv_c")
	}
	return mrecv(buf, int64(count), dt, msg, nil, req, "MPI_Imrecv_c")
}

// Buffered sends: package ranks's (World.BufferAttach, Comm.BufferAttach,
// BsendPtr): a message that cannot be handed over at once is copied into
// the attached buffer, the C program's memory, and sent from there; a
// detach waits until every message in it has been handed over. Each
// message takes ranks.BsendOverhead (64) bytes of the buffer beside its
// data, less than the ABI's MPI_BSEND_OVERHEAD (512) that programs add.

func bsendCall(buf unsafe.Pointer, count int64, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	b, r := bufArg(buf, count, dt, comm, fname)
	if r != 0 {
		return r
	}
	// The data is in the attached buffer (or handed over) when the call
	// returns, so a staged copy need not outlive it.
	data := b.packed()
	if req == nil {
		return fail(handle(comm), ranks.BsendPtr(o.c, bytesPtr(data), len(data), 1, rankIn(dest), tagIn(tag)), fname)
	}
	rq, err := ranks.IbsendPtr(o.c, bytesPtr(data), len(data), 1, rankIn(dest), tagIn(tag))
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(comm)}))
	return 0
}

//export shmpi_MPI_Bsend
func shmpi_MPI_Bsend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return bsendCall(buf, int64(count), dt, dest, tag, comm, nil, "MPI_Bsend")
}

//export shmpi_MPI_Bsend_c
func shmpi_MPI_Bsend_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return bsendCall(buf, int64(count), dt, dest, tag, comm, nil, "MPI_Bsend_c")
}

//export shmpi_MPI_Ibsend
func shmpi_MPI_Ibsend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Ibsend")
	}
	return bsendCall(buf, int64(count), dt, dest, tag, comm, req, "MPI_Ibsend")
}

//export shmpi_MPI_Ibsend_c
func shmpi_MPI_Ibsend_c(buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, req *C.uintptr_t) C.int {
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Ibsend_c")
	}
	return bsendCall(buf, int64(count), dt, dest, tag, comm, req, "MPI_Ibsend_c")
}

// bufferAuto is the size reserved for MPI_BUFFER_AUTOMATIC: C memory
// whose pages the kernel provides only when a message is buffered there.
const bufferAuto = 64 << 20

// A buffer attached as MPI_BUFFER_AUTOMATIC, by owner (nil: the
// process), to be freed and reported as such at its detach.
var (
	autoMu  sync.Mutex
	autoBuf = map[*commObj]unsafe.Pointer{}
)

// bufferAttach attaches (buf, size) to the process (o nil) or to o.
func bufferAttach(o *commObj, buf unsafe.Pointer, size int64, comm C.uintptr_t, fname string) C.int {
	if !live() {
		return failNone(MPI_ERR_OTHER, fname)
	}
	if size < 0 || (buf == nil && size > 0) {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	auto := uintptr(buf) == 2 // MPI_BUFFER_AUTOMATIC
	if auto {
		size = bufferAuto
		buf = C.malloc(bufferAuto)
	}
	var b []byte
	if size > 0 {
		b = unsafe.Slice((*byte)(buf), size)
	}
	var err error
	if o == nil {
		err = world.BufferAttach(b)
	} else {
		err = o.c.BufferAttach(b)
	}
	if err != nil {
		if auto {
			C.free(buf)
		}
		return fail(handle(comm), err, fname)
	}
	if auto {
		autoMu.Lock()
		autoBuf[o] = buf
		autoMu.Unlock()
	}
	return 0
}

// bufferDetach detaches the process's buffer (o nil) or o's, once every
// message in it has been handed over, and returns it in *addr and *size
// (size is an int* or, wide, an MPI_Count*).
func bufferDetach(o *commObj, addr, size unsafe.Pointer, wide bool, comm C.uintptr_t, fname string) C.int {
	if !live() {
		return failNone(MPI_ERR_OTHER, fname)
	}
	if addr == nil || size == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	var b []byte
	var err error
	if o == nil {
		b, err = world.BufferDetach()
	} else {
		b, err = o.c.BufferDetach()
	}
	if b == nil && err != nil {
		return fail(handle(comm), err, fname)
	}
	p, n := uintptr(unsafe.Pointer(unsafe.SliceData(b))), int64(len(b))
	autoMu.Lock()
	if a, ok := autoBuf[o]; ok && uintptr(a) == p {
		delete(autoBuf, o)
		C.free(a)
		p, n = 2, 0 // MPI_BUFFER_AUTOMATIC
	}
	autoMu.Unlock()
	*(*uintptr)(addr) = p
	if wide {
		*(*int64)(size) = n
	} else {
		*(*int32)(size) = int32(min(n, 1<<31-1))
	}
	return fail(handle(comm), err, fname)
}

// bufferFlush waits until every message in the process's buffer (o nil)
// or o's has been handed over, keeping it attached (MPI 4.1): a detach
// and an attach of the same memory.
func bufferFlush(o *commObj, comm C.uintptr_t, fname string) C.int {
	if !live() {
		return failNone(MPI_ERR_OTHER, fname)
	}
	var b []byte
	var err error
	if o == nil {
		b, err = world.BufferDetach()
	} else {
		b, err = o.c.BufferDetach()
	}
	if b == nil && err != nil {
		if errors.Is(err, ranks.ErrBuffer) {
			return 0 // nothing attached: nothing to flush
		}
		return fail(handle(comm), err, fname)
	}
	var aerr error
	if o == nil {
		aerr = world.BufferAttach(b)
	} else {
		aerr = o.c.BufferAttach(b)
	}
	if err == nil {
		err = aerr
	}
	return fail(handle(comm), err, fname)
}

//export shmpi_MPI_Buffer_attach
func shmpi_MPI_Buffer_attach(buf unsafe.Pointer, size C.int) C.int {
	return bufferAttach(nil, buf, int64(size), MPI_COMM_WORLD, "MPI_Buffer_attach")
}

//export shmpi_MPI_Buffer_attach_c
func shmpi_MPI_Buffer_attach_c(buf unsafe.Pointer, size C.int64_t) C.int {
	return bufferAttach(nil, buf, int64(size), MPI_COMM_WORLD, "MPI_Buffer_attach_c")
}

//export shmpi_MPI_Buffer_detach
func shmpi_MPI_Buffer_detach(addr unsafe.Pointer, size *C.int) C.int {
	return bufferDetach(nil, addr, unsafe.Pointer(size), false, MPI_COMM_WORLD, "MPI_Buffer_detach")
}

//export shmpi_MPI_Buffer_detach_c
func shmpi_MPI_Buffer_detach_c(addr unsafe.Pointer, size *C.int64_t) C.int {
	return bufferDetach(nil, addr, unsafe.Pointer(size), true, MPI_COMM_WORLD, "MPI_Buffer_detach_c")
}

//export shmpi_MPI_Buffer_flush
func shmpi_MPI_Buffer_flush() C.int {
	return bufferFlush(nil, MPI_COMM_WORLD, "MPI_Buffer_flush")
}

// The nonblocking flushes complete in the call: the request is done.

//export shmpi_MPI_Buffer_iflush
func shmpi_MPI_Buffer_iflush(req *C.uintptr_t) C.int {
	if req == nil {
		return failNone(MPI_ERR_ARG, "MPI_Buffer_iflush")
	}
	if r := bufferFlush(nil, MPI_COMM_WORLD, "MPI_Buffer_iflush"); r != 0 {
		return r
	}
	*req = C.uintptr_t(doneRequest(MPI_COMM_WORLD))
	return 0
}

//export shmpi_MPI_Comm_attach_buffer
func shmpi_MPI_Comm_attach_buffer(comm C.uintptr_t, buf unsafe.Pointer, size C.int) C.int {
	o, r := commArg(comm, "MPI_Comm_attach_buffer")
	if o == nil {
		return r
	}
	return bufferAttach(o, buf, int64(size), comm, "MPI_Comm_attach_buffer")
}

//export shmpi_MPI_Comm_attach_buffer_c
func shmpi_MPI_Comm_attach_buffer_c(comm C.uintptr_t, buf unsafe.Pointer, size C.int64_t) C.int {
	o, r := commArg(comm, "MPI_Comm_attach_buffer_c")
	if o == nil {
		return r
	}
	return bufferAttach(o, buf, int64(size), comm, "MPI_Comm_attach_buffer_c")
}

//export shmpi_MPI_Comm_detach_buffer
func shmpi_MPI_Comm_detach_buffer(comm C.uintptr_t, addr unsafe.Pointer, size *C.int) C.int {
	o, r := commArg(comm, "MPI_Comm_detach_buffer")
	if o == nil {
		return r
	}
	return bufferDetach(o, addr, unsafe.Pointer(size), false, comm, "MPI_Comm_detach_buffer")
}

//export shmpi_MPI_Comm_detach_buffer_c
func shmpi_MPI_Comm_detach_buffer_c(comm C.uintptr_t, addr unsafe.Pointer, size *C.int64_t) C.int {
	o, r := commArg(comm, "MPI_Comm_detach_buffer_c")
	if o == nil {
		return r
	}
	return bufferDetach(o, addr, unsafe.Pointer(size), true, comm, "MPI_Comm_detach_buffer_c")
}

//export shmpi_MPI_Comm_flush_buffer
func shmpi_MPI_Comm_flush_buffer(comm C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Comm_flush_buffer")
	if o == nil {
		return r
	}
	return bufferFlush(o, comm, "MPI_Comm_flush_buffer")
}

//export shmpi_MPI_Comm_iflush_buffer
func shmpi_MPI_Comm_iflush_buffer(comm C.uintptr_t, req *C.uintptr_t) C.int {
	o, r := commArg(comm, "MPI_Comm_iflush_buffer")
	if o == nil {
		return r
	}
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_iflush_buffer")
	}
	if r := bufferFlush(o, comm, "MPI_Comm_iflush_buffer"); r != 0 {
		return r
	}
	*req = C.uintptr_t(doneRequest(handle(comm)))
	return 0
}
