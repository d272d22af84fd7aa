package main

/*
#include "cabi.h"
*/
import "C"

import (
	"sort"
	"unsafe"

	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
)

// Data access on files (file.go has the objects), and views. A call
// moves the packed bytes of its buffer through mpio's []byte forms; a
// read into a non-contiguous buffer is unpacked after it. Offsets,
// pointers and counts are mpio's: in etypes of the view.

// How a data call addresses the file.
type fileHow uint8

const (
	byAt      fileHow = iota // explicit offset
	byPtr                    // individual file pointer
	byShared                 // shared file pointer
	byOrdered                // shared file pointer, collective, in rank order
)

type xfer struct {
	how   fileHow
	coll  bool
	write bool
}

// run does x's access, blocking.
func (x xfer) run(f *mpio.File, off int64, b []byte) (int, error) { return xrun(x, f, off, b) }

// start starts x's access (there is no nonblocking ordered access).
func (x xfer) start(f *mpio.File, off int64, b []byte, n *int) (*ranks.Request, error) {
	return xstart(x, f, off, b, n)
}

// poison is not a plain type: mpio refuses a buffer of it (ErrType)
// after the checks of the file and its mode. A member whose arguments
// of a collective call are bad passes one, so that it still takes part
// and the other members return an error instead of waiting for it.
type poison struct{ _ *byte }

func xrun[T any](x xfer, f *mpio.File, off int64, b []T) (int, error) {
	switch x.how {
	case byAt:
		switch {
		case x.coll && x.write:
			return mpio.WriteAtAll(f, off, b)
		case x.coll:
			return mpio.ReadAtAll(f, off, b)
		case x.write:
			return mpio.WriteAt(f, off, b)
		}
		return mpio.ReadAt(f, off, b)
	case byPtr:
		switch {
		case x.coll && x.write:
			return mpio.WriteAll(f, b)
		case x.coll:
			return mpio.ReadAll(f, b)
		case x.write:
			return mpio.Write(f, b)
		}
		return mpio.Read(f, b)
	case byShared:
		if x.write {
			return mpio.WriteShared(f, b)
		}
		return mpio.ReadShared(f, b)
	}
	if x.write {
		return mpio.WriteOrdered(f, b)
	}
	return mpio.ReadOrdered(f, b)
}

func xstart[T any](x xfer, f *mpio.File, off int64, b []T, n *int) (*ranks.Request, error) {
	switch x.how {
	case byAt:
		switch {
		case x.coll && x.write:
			return mpio.IwriteAtAll(f, off, b, n)
		case x.coll:
			return mpio.IreadAtAll(f, off, b, n)
		case x.write:
			return mpio.IwriteAt(f, off, b, n)
		}
		return mpio.IreadAt(f, off, b, n)
	case byPtr:
		switch {
		case x.coll && x.write:
			return mpio.IwriteAll(f, b, n)
		case x.coll:
			return mpio.IreadAll(f, b, n)
		case x.write:
			return mpio.Iwrite(f, b, n)
		}
		return mpio.Iread(f, b, n)
	}
	if x.write {
		return mpio.IwriteShared(f, b, n)
	}
	return mpio.IreadShared(f, b, n)
}

// fileStatus is the status of an access that moved n bytes.
func fileStatus(n int) ranks.Status {
	return ranks.Status{Source: ranks.AnySource, Tag: ranks.AnyTag, Bytes: n}
}

// fileData checks (buf, count, datatype) of a data call and returns the
// bytes to move, and for a staged read the unpacking to do once n bytes
// have arrived; or the error class of a bad argument.
func fileData(p unsafe.Pointer, count int64, dt C.uintptr_t, write bool) ([]byte, func(n int), int) {
	t := getType(handle(dt))
	if t == nil || !t.committed {
		return nil, nil, MPI_ERR_TYPE
	}
	if count < 0 {
		return nil, nil, MPI_ERR_COUNT
	}
	b := buffer{p: p, count: count, t: t, n: count * t.size}
	if b.n > 0 && p == nil && t.trueLB == 0 {
		return nil, nil, MPI_ERR_BUFFER // MPI_BOTTOM takes absolute addresses
	}
	if write {
		return b.packed(), nil, 0
	}
	area, staged := b.recvArea()
	if !staged {
		return area, nil, 0
	}
	return area, func(n int) {
		if n > 0 {
			b.t.unpack(b.p, area[:min(n, len(area))], b.count)
		}
	}, 0
}

func dataCall(h C.uintptr_t, off int64, p unsafe.Pointer, count int64, dt C.uintptr_t, st unsafe.Pointer, x xfer, fname string) C.int {
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	area, unpack, code := fileData(p, count, dt, x.write)
	if code != 0 {
		if x.coll {
			xrun[poison](x, o.f, off, nil) // take part, with the error
		}
		return fileCode(h, code, fname)
	}
	n, err := x.run(o.f, off, area)
	if unpack != nil {
		unpack(n)
	}
	s := fileStatus(n)
	setStatus(st, &s, fileClass(err))
	return fileFail(h, err, fname)
}

func startCall(h C.uintptr_t, off int64, p unsafe.Pointer, count int64, dt C.uintptr_t, req *C.uintptr_t, x xfer, fname string) C.int {
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	if req == nil {
		return fileCode(h, MPI_ERR_ARG, fname)
	}
	area, unpack, code := fileData(p, count, dt, x.write)
	var rq *ranks.Request
	var err error
	n := new(int)
	switch {
	case code != 0 && !x.coll:
		return fileCode(h, code, fname)
	case code != 0:
		// A collective call takes part with the error, which its
		// request completes with.
		rq, err = xstart[poison](x, o.f, off, nil, nil)
	default:
		rq, err = x.start(o.f, off, area, n)
	}
	if err != nil {
		return fileFail(h, err, fname)
	}
	after := func(s *ranks.Status, err error) error {
		if unpack != nil {
			unpack(*n)
		}
		*s = fileStatus(*n)
		switch {
		case code != 0:
			return codeErr(code)
		case err != nil:
			return codeErr(fileClass(err))
		}
		return nil
	}
	// The request's errors go to the file's handler (errhOf).
	*req = C.uintptr_t(newReq(reqObj{r: rq, comm: handle(h), after: after}))
	return 0
}

// Split collectives: the begin call runs the access (MPI lets an
// implementation do so), checking its arguments and raising their
// errors; the end call returns the access's status and raises its error.

func splitBegin(h C.uintptr_t, off int64, p unsafe.Pointer, count int64, dt C.uintptr_t, x xfer, kind, fname string) C.int {
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	o.mu.Lock()
	busy := o.split != nil
	o.mu.Unlock()
	area, unpack, code := fileData(p, count, dt, x.write)
	if code == 0 && busy {
		code = MPI_ERR_OTHER // one split collective at a time on a file
	}
	if code != 0 {
		xrun[poison](x, o.f, off, nil) // take part, with the error
		return fileCode(h, code, fname)
	}
	n, err := x.run(o.f, off, area)
	if unpack != nil {
		unpack(n)
	}
	o.mu.Lock()
	o.split = &splitOp{kind: kind, st: fileStatus(n), err: err}
	o.mu.Unlock()
	return 0
}

func splitEnd(h C.uintptr_t, st unsafe.Pointer, kind, fname string) C.int {
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	o.mu.Lock()
	sp := o.split
	if sp != nil && sp.kind == kind {
		o.split = nil
	}
	o.mu.Unlock()
	if sp == nil || sp.kind != kind {
		return fileCode(h, MPI_ERR_OTHER, fname) // no matching begin
	}
	setStatus(st, &sp.st, fileClass(sp.err))
	return fileFail(h, sp.err, fname)
}

var (
	xReadAt       = xfer{how: byAt}
	xWriteAt      = xfer{how: byAt, write: true}
	xReadAtAll    = xfer{how: byAt, coll: true}
	xWriteAtAll   = xfer{how: byAt, coll: true, write: true}
	xRead         = xfer{how: byPtr}
	xWrite        = xfer{how: byPtr, write: true}
	xReadAll      = xfer{how: byPtr, coll: true}
	xWriteAll     = xfer{how: byPtr, coll: true, write: true}
	xReadShared   = xfer{how: byShared}
	xWriteShared  = xfer{how: byShared, write: true}
	xReadOrdered  = xfer{how: byOrdered, coll: true}
	xWriteOrdered = xfer{how: byOrdered, coll: true, write: true}
)

// Explicit offsets.

//export shmpi_MPI_File_read_at
func shmpi_MPI_File_read_at(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, int64(off), buf, int64(count), dt, st, xReadAt, "MPI_File_read_at")
}

//export shmpi_MPI_File_read_at_c
func shmpi_MPI_File_read_at_c(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, int64(off), buf, int64(count), dt, st, xReadAt, "MPI_File_read_at_c")
}

//export shmpi_MPI_File_write_at
func shmpi_MPI_File_write_at(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, int64(off), buf, int64(count), dt, st, xWriteAt, "MPI_File_write_at")
}

//export shmpi_MPI_File_write_at_c
func shmpi_MPI_File_write_at_c(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, int64(off), buf, int64(count), dt, st, xWriteAt, "MPI_File_write_at_c")
}

//export shmpi_MPI_File_read_at_all
func shmpi_MPI_File_read_at_all(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, int64(off), buf, int64(count), dt, st, xReadAtAll, "MPI_File_read_at_all")
}

//export shmpi_MPI_File_read_at_all_c
func shmpi_MPI_File_read_at_all_c(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, int64(off), buf, int64(count), dt, st, xReadAtAll, "MPI_File_read_at_all_c")
}

//export shmpi_MPI_File_write_at_all
func shmpi_MPI_File_write_at_all(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, int64(off), buf, int64(count), dt, st, xWriteAtAll, "MPI_File_write_at_all")
}

//export shmpi_MPI_File_write_at_all_c
func shmpi_MPI_File_write_at_all_c(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, int64(off), buf, int64(count), dt, st, xWriteAtAll, "MPI_File_write_at_all_c")
}

// Individual file pointer.

//export shmpi_MPI_File_read
func shmpi_MPI_File_read(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xRead, "MPI_File_read")
}

//export shmpi_MPI_File_read_c
func shmpi_MPI_File_read_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xRead, "MPI_File_read_c")
}

//export shmpi_MPI_File_write
func shmpi_MPI_File_write(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xWrite, "MPI_File_write")
}

//export shmpi_MPI_File_write_c
func shmpi_MPI_File_write_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xWrite, "MPI_File_write_c")
}

//export shmpi_MPI_File_read_all
func shmpi_MPI_File_read_all(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xReadAll, "MPI_File_read_all")
}

//export shmpi_MPI_File_read_all_c
func shmpi_MPI_File_read_all_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xReadAll, "MPI_File_read_all_c")
}

//export shmpi_MPI_File_write_all
func shmpi_MPI_File_write_all(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xWriteAll, "MPI_File_write_all")
}

//export shmpi_MPI_File_write_all_c
func shmpi_MPI_File_write_all_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xWriteAll, "MPI_File_write_all_c")
}

// Shared file pointer.

//export shmpi_MPI_File_read_shared
func shmpi_MPI_File_read_shared(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xReadShared, "MPI_File_read_shared")
}

//export shmpi_MPI_File_read_shared_c
func shmpi_MPI_File_read_shared_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xReadShared, "MPI_File_read_shared_c")
}

//export shmpi_MPI_File_write_shared
func shmpi_MPI_File_write_shared(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xWriteShared, "MPI_File_write_shared")
}

//export shmpi_MPI_File_write_shared_c
func shmpi_MPI_File_write_shared_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xWriteShared, "MPI_File_write_shared_c")
}

//export shmpi_MPI_File_read_ordered
func shmpi_MPI_File_read_ordered(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xReadOrdered, "MPI_File_read_ordered")
}

//export shmpi_MPI_File_read_ordered_c
func shmpi_MPI_File_read_ordered_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xReadOrdered, "MPI_File_read_ordered_c")
}

//export shmpi_MPI_File_write_ordered
func shmpi_MPI_File_write_ordered(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xWriteOrdered, "MPI_File_write_ordered")
}

//export shmpi_MPI_File_write_ordered_c
func shmpi_MPI_File_write_ordered_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, st unsafe.Pointer) C.int {
	return dataCall(h, 0, buf, int64(count), dt, st, xWriteOrdered, "MPI_File_write_ordered_c")
}

// Nonblocking.

//export shmpi_MPI_File_iread_at
func shmpi_MPI_File_iread_at(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, int64(off), buf, int64(count), dt, req, xReadAt, "MPI_File_iread_at")
}

//export shmpi_MPI_File_iread_at_c
func shmpi_MPI_File_iread_at_c(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, int64(off), buf, int64(count), dt, req, xReadAt, "MPI_File_iread_at_c")
}

//export shmpi_MPI_File_iwrite_at
func shmpi_MPI_File_iwrite_at(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, int64(off), buf, int64(count), dt, req, xWriteAt, "MPI_File_iwrite_at")
}

//export shmpi_MPI_File_iwrite_at_c
func shmpi_MPI_File_iwrite_at_c(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, int64(off), buf, int64(count), dt, req, xWriteAt, "MPI_File_iwrite_at_c")
}

//export shmpi_MPI_File_iread_at_all
func shmpi_MPI_File_iread_at_all(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, int64(off), buf, int64(count), dt, req, xReadAtAll, "MPI_File_iread_at_all")
}

//export shmpi_MPI_File_iread_at_all_c
func shmpi_MPI_File_iread_at_all_c(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, int64(off), buf, int64(count), dt, req, xReadAtAll, "MPI_File_iread_at_all_c")
}

//export shmpi_MPI_File_iwrite_at_all
func shmpi_MPI_File_iwrite_at_all(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, int64(off), buf, int64(count), dt, req, xWriteAtAll, "MPI_File_iwrite_at_all")
}

//export shmpi_MPI_File_iwrite_at_all_c
func shmpi_MPI_File_iwrite_at_all_c(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, int64(off), buf, int64(count), dt, req, xWriteAtAll, "MPI_File_iwrite_at_all_c")
}

//export shmpi_MPI_File_iread
func shmpi_MPI_File_iread(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xRead, "MPI_File_iread")
}

//export shmpi_MPI_File_iread_c
func shmpi_MPI_File_iread_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xRead, "MPI_File_iread_c")
}

//export shmpi_MPI_File_iwrite
func shmpi_MPI_File_iwrite(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xWrite, "MPI_File_iwrite")
}

//export shmpi_MPI_File_iwrite_c
func shmpi_MPI_File_iwrite_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xWrite, "MPI_File_iwrite_c")
}

//export shmpi_MPI_File_iread_all
func shmpi_MPI_File_iread_all(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xReadAll, "MPI_File_iread_all")
}

//export shmpi_MPI_File_iread_all_c
func shmpi_MPI_File_iread_all_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xReadAll, "MPI_File_iread_all_c")
}

//export shmpi_MPI_File_iwrite_all
func shmpi_MPI_File_iwrite_all(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xWriteAll, "MPI_File_iwrite_all")
}

//export shmpi_MPI_File_iwrite_all_c
func shmpi_MPI_File_iwrite_all_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xWriteAll, "MPI_File_iwrite_all_c")
}

//export shmpi_MPI_File_iread_shared
func shmpi_MPI_File_iread_shared(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xReadShared, "MPI_File_iread_shared")
}

//export shmpi_MPI_File_iread_shared_c
func shmpi_MPI_File_iread_shared_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xReadShared, "MPI_File_iread_shared_c")
}

//export shmpi_MPI_File_iwrite_shared
func shmpi_MPI_File_iwrite_shared(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xWriteShared, "MPI_File_iwrite_shared")
}

//export shmpi_MPI_File_iwrite_shared_c
func shmpi_MPI_File_iwrite_shared_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t, req *C.uintptr_t) C.int {
	return startCall(h, 0, buf, int64(count), dt, req, xWriteShared, "MPI_File_iwrite_shared_c")
}

// Split collectives.

//export shmpi_MPI_File_read_all_begin
func shmpi_MPI_File_read_all_begin(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return splitBegin(h, 0, buf, int64(count), dt, xReadAll, "read_all", "MPI_File_read_all_begin")
}

//export shmpi_MPI_File_read_all_begin_c
func shmpi_MPI_File_read_all_begin_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t) C.int {
	return splitBegin(h, 0, buf, int64(count), dt, xReadAll, "read_all", "MPI_File_read_all_begin_c")
}

//export shmpi_MPI_File_read_all_end
func shmpi_MPI_File_read_all_end(h C.uintptr_t, buf unsafe.Pointer, st unsafe.Pointer) C.int {
	return splitEnd(h, st, "read_all", "MPI_File_read_all_end")
}

//export shmpi_MPI_File_write_all_begin
func shmpi_MPI_File_write_all_begin(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return splitBegin(h, 0, buf, int64(count), dt, xWriteAll, "write_all", "MPI_File_write_all_begin")
}

//export shmpi_MPI_File_write_all_begin_c
func shmpi_MPI_File_write_all_begin_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t) C.int {
	return splitBegin(h, 0, buf, int64(count), dt, xWriteAll, "write_all", "MPI_File_write_all_begin_c")
}

//export shmpi_MPI_File_write_all_end
func shmpi_MPI_File_write_all_end(h C.uintptr_t, buf unsafe.Pointer, st unsafe.Pointer) C.int {
	return splitEnd(h, st, "write_all", "MPI_File_write_all_end")
}

//export shmpi_MPI_File_read_at_all_begin
func shmpi_MPI_File_read_at_all_begin(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return splitBegin(h, int64(off), buf, int64(count), dt, xReadAtAll, "read_at_all", "MPI_File_read_at_all_begin")
}

//export shmpi_MPI_File_read_at_all_begin_c
func shmpi_MPI_File_read_at_all_begin_c(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t) C.int {
	return splitBegin(h, int64(off), buf, int64(count), dt, xReadAtAll, "read_at_all", "MPI_File_read_at_all_begin_c")
}

//export shmpi_MPI_File_read_at_all_end
func shmpi_MPI_File_read_at_all_end(h C.uintptr_t, buf unsafe.Pointer, st unsafe.Pointer) C.int {
	return splitEnd(h, st, "read_at_all", "MPI_File_read_at_all_end")
}

//export shmpi_MPI_File_write_at_all_begin
func shmpi_MPI_File_write_at_all_begin(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return splitBegin(h, int64(off), buf, int64(count), dt, xWriteAtAll, "write_at_all", "MPI_File_write_at_all_begin")
}

//export shmpi_MPI_File_write_at_all_begin_c
func shmpi_MPI_File_write_at_all_begin_c(h C.uintptr_t, off C.int64_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t) C.int {
	return splitBegin(h, int64(off), buf, int64(count), dt, xWriteAtAll, "write_at_all", "MPI_File_write_at_all_begin_c")
}

//export shmpi_MPI_File_write_at_all_end
func shmpi_MPI_File_write_at_all_end(h C.uintptr_t, buf unsafe.Pointer, st unsafe.Pointer) C.int {
	return splitEnd(h, st, "write_at_all", "MPI_File_write_at_all_end")
}

//export shmpi_MPI_File_read_ordered_begin
func shmpi_MPI_File_read_ordered_begin(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return splitBegin(h, 0, buf, int64(count), dt, xReadOrdered, "read_ordered", "MPI_File_read_ordered_begin")
}

//export shmpi_MPI_File_read_ordered_begin_c
func shmpi_MPI_File_read_ordered_begin_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t) C.int {
	return splitBegin(h, 0, buf, int64(count), dt, xReadOrdered, "read_ordered", "MPI_File_read_ordered_begin_c")
}

//export shmpi_MPI_File_read_ordered_end
func shmpi_MPI_File_read_ordered_end(h C.uintptr_t, buf unsafe.Pointer, st unsafe.Pointer) C.int {
	return splitEnd(h, st, "read_ordered", "MPI_File_read_ordered_end")
}

//export shmpi_MPI_File_write_ordered_begin
func shmpi_MPI_File_write_ordered_begin(h C.uintptr_t, buf unsafe.Pointer, count C.int, dt C.uintptr_t) C.int {
	return splitBegin(h, 0, buf, int64(count), dt, xWriteOrdered, "write_ordered", "MPI_File_write_ordered_begin")
}

//export shmpi_MPI_File_write_ordered_begin_c
func shmpi_MPI_File_write_ordered_begin_c(h C.uintptr_t, buf unsafe.Pointer, count C.int64_t, dt C.uintptr_t) C.int {
	return splitBegin(h, 0, buf, int64(count), dt, xWriteOrdered, "write_ordered", "MPI_File_write_ordered_begin_c")
}

//export shmpi_MPI_File_write_ordered_end
func shmpi_MPI_File_write_ordered_end(h C.uintptr_t, buf unsafe.Pointer, st unsafe.Pointer) C.int {
	return splitEnd(h, st, "write_ordered", "MPI_File_write_ordered_end")
}

// Views.

// displacementCurrent is MPI_DISPLACEMENT_CURRENT.
const displacementCurrent = -1

// filetypeOf maps filetype t, of etypes of esize bytes, to mpio's
// filetype: the bytes before its first visible byte (added to the
// displacement) and its visible runs, as one block and a stride when
// they are that regular. ok is false if mpio cannot show it: bytes that
// overlap, a negative displacement, runs that are not whole etypes.
func filetypeOf(t *dtype, esize int64) (skip int64, ft mpio.Filetype, ok bool) {
	ext := t.extent()
	if t.size == 0 || ext <= 0 || len(t.runList()) == 0 {
		return 0, ft, false
	}
	rs := append([]run(nil), t.runList()...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].off < rs[j].off })
	merged := rs[:1]
	for _, r := range rs[1:] {
		last := &merged[len(merged)-1]
		switch {
		case r.off < last.off+last.n:
			return 0, ft, false // overlapping bytes
		case r.off == last.off+last.n:
			last.n += r.n
		default:
			merged = append(merged, r)
		}
	}
	first, block := merged[0].off, merged[0].n
	if first < 0 {
		return 0, ft, false
	}
	for _, r := range merged {
		if r.n%esize != 0 || r.off+r.n > first+ext {
			return 0, ft, false // an etype across runs, or tiles that overlap
		}
	}
	stride := ext
	regular := true
	if len(merged) > 1 {
		stride = merged[1].off - first
		for i, r := range merged {
			regular = regular && r.n == block && r.off == first+int64(i)*stride
		}
		regular = regular && int64(len(merged))*stride == ext
	}
	switch {
	case regular && block == stride:
		return first, mpio.Contiguous, true
	case regular && stride%esize == 0:
		return first, mpio.Filetype{Block: int(block / esize), Stride: int(stride / esize)}, true
	}
	ft.Extent = ext
	ft.Runs = make([]mpio.Run, len(merged))
	for i, r := range merged {
		ft.Runs[i] = mpio.Run{Off: r.off - first, Len: r.n}
	}
	return first, ft, true
}

// typeMapFault says what MPI forbids in an etype's or a filetype's type
// map (its displacements must be non-negative and increase): a negative
// or decreasing displacement (decreasing), or bytes that overlap the
// previous run's (overlap).
func typeMapFault(t *dtype) (decreasing, overlap bool) {
	var prev run
	for i, r := range t.runList() {
		switch {
		case r.off < 0 || i > 0 && r.off < prev.off:
			decreasing = true
		case i > 0 && r.off < prev.off+prev.n:
			overlap = true
		}
		prev = r
	}
	return decreasing, overlap
}

//export shmpi_MPI_File_set_view
func shmpi_MPI_File_set_view(h C.uintptr_t, disp C.int64_t, etype, ftype C.uintptr_t, datarep *C.char, info C.uintptr_t) C.int {
	const fname = "MPI_File_set_view"
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	et, ft := getType(handle(etype)), getType(handle(ftype))
	d := int64(disp)
	rep := ""
	if datarep != nil {
		rep = C.GoString(datarep)
	}
	var skip int64
	var view mpio.Filetype
	code := 0
	var esize int64
	switch {
	case et == nil || ft == nil || !et.committed || !ft.committed:
		code = MPI_ERR_TYPE
	case datarep == nil:
		code = MPI_ERR_ARG
	case rep != "native" && rep != "internal":
		code = MPI_ERR_UNSUPPORTED_DATAREP
	case d == displacementCurrent && o.amode&MPI_MODE_SEQUENTIAL == 0:
		code = MPI_ERR_ARG
	case d < 0 && d != displacementCurrent:
		code = MPI_ERR_ARG
	case et.size == 0 || !et.contig:
		// Negative or decreasing displacements, and overlaps in a
		// writable file, are erroneous (MPI_ERR_IO, as ROMIO says);
		// holes, and overlaps for reading, are legal but not supported
		// here.
		code = MPI_ERR_UNSUPPORTED_OPERATION
		if dec, over := typeMapFault(et); dec || over && o.amode&MPI_MODE_RDONLY == 0 {
			code = MPI_ERR_IO
		}
	default:
		esize = et.size
		if ft.size%esize != 0 {
			code = MPI_ERR_TYPE // not made of etypes
			break
		}
		// Overlapping bytes are legal only for reading; a view cannot
		// show them here.
		if dec, over := typeMapFault(ft); dec || over && o.amode&MPI_MODE_RDONLY == 0 {
			code = MPI_ERR_IO
			break
		}
		var ok bool
		if skip, view, ok = filetypeOf(ft, esize); !ok {
			code = MPI_ERR_UNSUPPORTED_OPERATION
		}
	}
	if code == 0 && handle(info) != MPI_INFO_NULL {
		if i := infos.get(handle(info)); i == nil || *i == nil {
			code = MPI_ERR_INFO
		}
	}
	if code == 0 && d == displacementCurrent {
		// A sequential file: the view starts at the shared pointer.
		pos, err := o.f.GetPositionShared()
		if err == nil {
			d, err = o.f.GetByteOffset(pos)
		}
		if err != nil {
			code = fileClass(err)
		}
	}
	if code != 0 {
		// Still take part in the collective call, so that the other
		// members return an error too instead of waiting.
		if esize == 0 {
			esize = 1
		}
		o.f.SetView(-1, int(esize), mpio.Contiguous)
		return fileCode(h, code, fname)
	}
	if err := o.f.SetView(d+skip, int(esize), view); err != nil {
		return fileFail(h, err, fname)
	}
	o.mu.Lock()
	o.disp = d
	o.etypeH, o.etypeT = keepType(handle(etype), et)
	o.ftypeH, o.ftypeT = keepType(handle(ftype), ft)
	o.datarep = rep
	o.mu.Unlock()
	return 0
}

// keepType keeps a view's type: the handle of a predefined one, a copy
// of a derived one (the program may free it).
func keepType(h handle, t *dtype) (handle, *dtype) {
	if t.predef {
		return h, nil
	}
	return 0, t.clone()
}

// viewType hands out a view's type: predefined ones as they are, derived
// ones as new handles that the program frees (MPI_File_get_view).
func viewType(h handle, t *dtype) handle {
	if t == nil {
		return h
	}
	n := t.clone()
	n.committed = true
	return registerType(n)
}

//export shmpi_MPI_File_get_view
func shmpi_MPI_File_get_view(h C.uintptr_t, disp *C.int64_t, etype, ftype *C.uintptr_t, datarep *C.char) C.int {
	const fname = "MPI_File_get_view"
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	if disp == nil || etype == nil || ftype == nil || datarep == nil {
		return fileCode(h, MPI_ERR_ARG, fname)
	}
	o.mu.Lock()
	d, eh, et, fh, ft, rep := o.disp, o.etypeH, o.etypeT, o.ftypeH, o.ftypeT, o.datarep
	o.mu.Unlock()
	*disp = C.int64_t(d)
	*etype = C.uintptr_t(viewType(eh, et))
	*ftype = C.uintptr_t(viewType(fh, ft))
	putString(datarep, rep, MPI_MAX_DATAREP_STRING)
	return 0
}
