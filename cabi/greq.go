package main

/*
#include <stdlib.h>
#include "cabi.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Generalized requests (MPI_Grequest_start): the user completes them
// with MPI_Grequest_complete; query, free and cancel are C callbacks.

type greq struct {
	mu                    sync.Mutex
	cond                  *sync.Cond
	done                  bool
	query, free, cancelFn unsafe.Pointer
	extra                 unsafe.Pointer
}

func (g *greq) isComplete() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.done
}

// wait blocks (or not) until the request is complete, then asks query
// for its status.
func (g *greq) wait(block bool) (ranks.Status, bool, error) {
	g.mu.Lock()
	for !g.done && block {
		g.cond.Wait()
	}
	done := g.done
	g.mu.Unlock()
	if !done {
		return ranks.Status{}, false, nil
	}
	var cs cStatus
	cs.Source, cs.Tag = MPI_ANY_SOURCE, MPI_ANY_TAG
	st := ranks.Status{Source: ranks.AnySource, Tag: ranks.AnyTag}
	var code C.int
	if g.query != nil {
		p := C.malloc(C.size_t(unsafe.Sizeof(cs)))
		*(*cStatus)(p) = cs
		code = C.shmpi_call_grequest_query(g.query, g.extra, p)
		cs = *(*cStatus)(p)
		C.free(p)
		st.Source, st.Tag = int(cs.Source), int(cs.Tag)
		if cs.Source == MPI_PROC_NULL {
			st.Source = ranks.ProcNull
		}
		st.Bytes = int(int64(uint64(uint32(cs.hi))<<32 | uint64(uint32(cs.lo))))
		st.Cancelled = cs.cancelled != 0
	}
	if code != 0 {
		return st, true, codeErr(code)
	}
	return st, true, nil
}

func (g *greq) release() {
	if g.free != nil {
		C.shmpi_call_grequest_free(g.free, g.extra)
	}
}

func (g *greq) freed() { g.release() }

func (g *greq) cancel() {
	if g.cancelFn != nil {
		done := C.int(0)
		if g.isComplete() {
			done = 1
		}
		C.shmpi_call_grequest_cancel(g.cancelFn, g.extra, done)
	}
}

//export shmpi_MPI_Grequest_start
func shmpi_MPI_Grequest_start(query, free, cancel, extra unsafe.Pointer, req *C.uintptr_t) C.int {
	if req == nil {
		return failNone(MPI_ERR_ARG, "MPI_Grequest_start")
	}
	g := &greq{query: query, free: free, cancelFn: cancel, extra: extra}
	g.cond = sync.NewCond(&g.mu)
	*req = C.uintptr_t(newReq(reqObj{kind: reqGreq, comm: MPI_COMM_WORLD, greq: g}))
	return 0
}

//export shmpi_MPI_Grequest_complete
func shmpi_MPI_Grequest_complete(req C.uintptr_t) C.int {
	o := reqs.get(handle(req))
	if o == nil || o.greq == nil {
		return failNone(MPI_ERR_REQUEST, "MPI_Grequest_complete")
	}
	g := o.greq
	g.mu.Lock()
	g.done = true
	g.cond.Broadcast()
	g.mu.Unlock()
	return 0
}
