package main

/*
#include <stdint.h>
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Partitioned communication (MPI 4.0 chapter 4) over the Go API's
// PsendInit/PrecvInit. A contiguous datatype moves in place. Any other
// is staged: a send packs partition p into the staging buffer at
// MPI_Pready (the program has filled it by then), a receive unpacks a
// partition the first time MPI_Parrived says it arrived and the rest at
// completion. The Go request is the reqObj's pr, started by start, as
// for persistent collectives.

// partObj is a partitioned request's side of the C layer.
type partObj struct {
	send  bool
	b     buffer
	parts int
	count int64 // elements per partition
	stage []byte
	pb    int64 // packed bytes per partition

	mu       sync.Mutex
	unpacked []bool // receive, staged: partition unpacked this round
	marked   []bool // send, staged: partition packed this round (its send may be reading it)
}

func (po *partObj) packPart(p int) {
	ext := po.b.t.extent()
	po.b.t.pack(po.stage[int64(p)*po.pb:int64(p+1)*po.pb], unsafe.Add(po.b.p, int64(p)*po.count*ext), po.count)
}

// unpackPart unpacks partition p if nobody has this round.
func (po *partObj) unpackPart(p int) {
	po.mu.Lock()
	defer po.mu.Unlock()
	if po.unpacked[p] {
		return
	}
	po.unpacked[p] = true
	ext := po.b.t.extent()
	po.b.t.unpack(unsafe.Add(po.b.p, int64(p)*po.count*ext), po.stage[int64(p)*po.pb:int64(p+1)*po.pb], po.count)
}

func pinit(buf unsafe.Pointer, partitions C.int, count int64, dt C.uintptr_t, peer, tag C.int, comm C.uintptr_t, req *C.uintptr_t, send bool, fname string) C.int {
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if req == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if partitions < 0 {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if count < 0 || partitions > 0 && count > (1<<47)/int64(partitions) {
		// The second: partitions*count must not overflow (and no buffer
		// is larger than the user address space).
		return failCode(handle(comm), MPI_ERR_COUNT, fname)
	}
	b, r := bufArg(buf, int64(partitions)*count, dt, comm, fname)
	if r != 0 {
		return r
	}
	po := &partObj{send: send, b: b, parts: int(partitions), count: count, pb: count * b.t.size}
	p, contig := b.data()
	if !contig {
		po.stage = make([]byte, b.n)
		p = bytesPtr(po.stage)
		if send {
			po.marked = make([]bool, partitions)
		} else {
			po.unpacked = make([]bool, partitions)
		}
	}
	var rq *ranks.Request
	var err error
	if send {
		rq, err = ranks.PsendInitPtr(o.c, p, int(partitions), int(po.pb), 1, rankIn(peer), tagIn(tag))
	} else {
		rq, err = ranks.PrecvInitPtr(o.c, p, int(partitions), int(po.pb), 1, rankIn(peer), tagIn(tag))
	}
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	var after func(*ranks.Status, error) error
	if po.unpacked != nil {
		after = func(s *ranks.Status, err error) error {
			if err == nil {
				for i := range po.parts {
					po.unpackPart(i)
				}
			}
			return err
		}
	}
	start := func() (*ranks.Request, func(*ranks.Status, error) error, error) {
		if po.stage != nil {
			po.mu.Lock()
			clear(po.unpacked)
			clear(po.marked)
			po.mu.Unlock()
		}
		return rq, after, rq.Start()
	}
	*req = C.uintptr_t(newReq(reqObj{comm: handle(comm), kind: reqInactive, persistent: true, start: start, pr: rq, part: po}))
	return 0
}

//export shmpi_MPI_Psend_init
func shmpi_MPI_Psend_init(buf unsafe.Pointer, partitions C.int, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return pinit(buf, partitions, int64(count), dt, dest, tag, comm, req, true, "MPI_Psend_init")
}

//export shmpi_MPI_Psend_init_c
func shmpi_MPI_Psend_init_c(buf unsafe.Pointer, partitions C.int, count C.int64_t, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return pinit(buf, partitions, int64(count), dt, dest, tag, comm, req, true, "MPI_Psend_init_c")
}

//export shmpi_MPI_Precv_init
func shmpi_MPI_Precv_init(buf unsafe.Pointer, partitions C.int, count C.int, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return pinit(buf, partitions, int64(count), dt, src, tag, comm, req, false, "MPI_Precv_init")
}

//export shmpi_MPI_Precv_init_c
func shmpi_MPI_Precv_init_c(buf unsafe.Pointer, partitions C.int, count C.int64_t, dt C.uintptr_t, src, tag C.int, comm C.uintptr_t, info C.uintptr_t, req *C.uintptr_t) C.int {
	return pinit(buf, partitions, int64(count), dt, src, tag, comm, req, false, "MPI_Precv_init_c")
}

// partReq looks up a partitioned request of the given side.
func partReq(req C.uintptr_t, send bool, fname string) (*reqObj, C.int) {
	o := reqs.get(handle(req))
	if o == nil || o.part == nil || o.part.send != send {
		return nil, failNone(MPI_ERR_REQUEST, fname)
	}
	return o, 0
}

func pready(o *reqObj, ps []C.int, fname string) C.int {
	po := o.part
	for _, p := range ps {
		if p < 0 || int(p) >= po.parts {
			return failCode(o.comm, MPI_ERR_ARG, fname)
		}
	}
	var err error
	for _, p := range ps {
		if po.stage != nil && o.kind == reqPersist {
			// Pack only a partition not marked yet: a second Pready must
			// not write under a send in flight (the Go API refuses it).
			po.mu.Lock()
			fresh := !po.marked[p]
			po.marked[p] = true
			po.mu.Unlock()
			if fresh {
				po.packPart(int(p))
			}
		}
		if err = ranks.Pready(o.pr, int(p)); err != nil {
			break
		}
	}
	return fail(o.comm, err, fname)
}

//export shmpi_MPI_Pready
func shmpi_MPI_Pready(p C.int, req C.uintptr_t) C.int {
	o, r := partReq(req, true, "MPI_Pready")
	if o == nil {
		return r
	}
	one := [1]C.int{p}
	return pready(o, one[:], "MPI_Pready")
}

//export shmpi_MPI_Pready_range
func shmpi_MPI_Pready_range(lo, hi C.int, req C.uintptr_t) C.int {
	o, r := partReq(req, true, "MPI_Pready_range")
	if o == nil {
		return r
	}
	if lo > hi || lo < 0 || int(hi) >= o.part.parts {
		return failCode(o.comm, MPI_ERR_ARG, "MPI_Pready_range")
	}
	if o.part.stage == nil {
		// In place: one call into the Go API for the whole range.
		return fail(o.comm, ranks.PreadyRange(o.pr, int(lo), int(hi)), "MPI_Pready_range")
	}
	for p := lo; p <= hi; p++ {
		one := [1]C.int{p}
		if r := pready(o, one[:], "MPI_Pready_range"); r != 0 {
			return r
		}
	}
	return 0
}

//export shmpi_MPI_Pready_list
func shmpi_MPI_Pready_list(n C.int, ps *C.int, req C.uintptr_t) C.int {
	o, r := partReq(req, true, "MPI_Pready_list")
	if o == nil {
		return r
	}
	if n < 0 || (n > 0 && ps == nil) {
		return failCode(o.comm, MPI_ERR_ARG, "MPI_Pready_list")
	}
	if n == 0 {
		return 0
	}
	return pready(o, unsafe.Slice(ps, n), "MPI_Pready_list")
}

//export shmpi_MPI_Parrived
func shmpi_MPI_Parrived(req C.uintptr_t, p C.int, flag *C.int) C.int {
	o, r := partReq(req, false, "MPI_Parrived")
	if o == nil {
		return r
	}
	if flag == nil {
		return failCode(o.comm, MPI_ERR_ARG, "MPI_Parrived")
	}
	ok, err := ranks.Parrived(o.pr, int(p))
	if err != nil {
		*flag = 0
		return fail(o.comm, err, "MPI_Parrived")
	}
	if ok && o.part.unpacked != nil && o.kind == reqPersist {
		o.part.unpackPart(int(p))
	}
	*flag = 0
	if ok {
		*flag = 1
	}
	return 0
}
