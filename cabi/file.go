package main

/*
#include "cabi.h"
*/
import "C"

import (
	"errors"
	"sort"
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/mpio"
	"github.com/shmpi/shmpi/ranks"
)

// Files: MPI-IO over package mpio. A file handle is a slot of the files
// table. Errors of a call on a file go to the file's error handler;
// those of MPI_File_open and MPI_File_delete, and of calls on an invalid
// file handle, to MPI_FILE_NULL's, which is MPI_ERRORS_RETURN until the
// program sets another (MPI's default for files). A file takes the
// handler MPI_FILE_NULL has when it is opened.
//
// Views: the etype must be contiguous (size equal to extent); the
// filetype may be any type of etypes whose bytes do not overlap, at
// non-negative displacements, with no etype split between two runs:
// mpio's Filetype takes equal blocks at equal strides as such, and any
// other shape as its runs (indexed, subarray, darray...). Others are
// refused with MPI_ERR_UNSUPPORTED_OPERATION, and data representations
// other than "native" (and "internal", the same here) with
// MPI_ERR_UNSUPPORTED_DATAREP. Memory buffers of any datatype are
// packed and unpacked as messages' are.

type fileObj struct {
	f     *mpio.File
	amode int

	mu   sync.Mutex
	errh handle
	eh   *errhObj
	// The view as MPI_File_set_view set it, for MPI_File_get_view: the
	// etype's and filetype's handles when predefined, else copies of
	// their type maps.
	disp    int64
	etypeH  handle
	etypeT  *dtype
	ftypeH  handle
	ftypeT  *dtype
	datarep string
	split   *splitOp // the split collective begun and not ended
}

// splitOp is a split collective: its data access runs in the begin call
// (MPI allows it), and the end call returns its status and error.
type splitOp struct {
	kind string // "read_all", "write_at_all", ...
	st   ranks.Status
	err  error
}

var files = newTable[*fileObj](kindFile, MPI_FILE_NULL, 1)

// The error handler of MPI_FILE_NULL.
var (
	fileNullMu   sync.Mutex
	fileNullErrh handle   = MPI_ERRORS_RETURN
	fileNullEh   *errhObj = &errhObj{predef: MPI_ERRORS_RETURN}
)

// isFileHandle says whether h is a user file handle; requests of file
// calls keep their file in the place of a communicator, and errhOf sends
// their errors to the file's handler.
func isFileHandle(h handle) bool {
	return h >= 0x1000 && uint32(h>>24)&0xff == kindFile
}

// fileErrh is the error handler for a call on file h.
func fileErrh(h handle) *errhObj {
	if o := files.get(h); o != nil && *o != nil {
		(*o).mu.Lock()
		defer (*o).mu.Unlock()
		return (*o).eh
	}
	fileNullMu.Lock()
	defer fileNullMu.Unlock()
	return fileNullEh
}

// fileClass maps an error of package mpio to its MPI error class.
func fileClass(err error) int {
	switch {
	case err == nil:
		return MPI_SUCCESS
	case errors.Is(err, mpio.ErrFile):
		return MPI_ERR_FILE
	case errors.Is(err, mpio.ErrNoSuchFile):
		return MPI_ERR_NO_SUCH_FILE
	case errors.Is(err, mpio.ErrAmode):
		return MPI_ERR_AMODE
	case errors.Is(err, mpio.ErrReadOnly):
		return MPI_ERR_READ_ONLY
	case errors.Is(err, mpio.ErrAccess):
		return MPI_ERR_ACCESS
	case errors.Is(err, mpio.ErrFileExists):
		return MPI_ERR_FILE_EXISTS
	case errors.Is(err, mpio.ErrFileInUse):
		return MPI_ERR_FILE_IN_USE
	case errors.Is(err, mpio.ErrNoSpace):
		return MPI_ERR_NO_SPACE
	case errors.Is(err, mpio.ErrQuota):
		return MPI_ERR_QUOTA
	case errors.Is(err, mpio.ErrBadFile):
		return MPI_ERR_BAD_FILE
	case errors.Is(err, mpio.ErrIO):
		return MPI_ERR_IO
	case errors.Is(err, mpio.ErrNotSame):
		return MPI_ERR_NOT_SAME
	case errors.Is(err, mpio.ErrUnsupportedOperation):
		return MPI_ERR_UNSUPPORTED_OPERATION
	}
	return classOf(err)
}

// fileFail raises err (from mpio) on file h.
func fileFail(h C.uintptr_t, err error, fname string) C.int {
	if err == nil {
		return 0
	}
	return raise(C.SHMPI_ON_FILE, handle(h), fileClass(err), fname, err)
}

// fileCode raises an error class found by the C layer on file h.
func fileCode(h C.uintptr_t, code int, fname string) C.int {
	return raise(C.SHMPI_ON_FILE, handle(h), code, fname, nil)
}

// fileArg finds the file of h; an invalid handle raises MPI_ERR_FILE on
// MPI_FILE_NULL's handler.
func fileArg(h C.uintptr_t, fname string) (*fileObj, C.int) {
	if !live() {
		return nil, failNone(MPI_ERR_OTHER, fname)
	}
	o := files.get(handle(h))
	if o == nil || *o == nil {
		return nil, raise(C.SHMPI_ON_FILE, MPI_FILE_NULL, MPI_ERR_FILE, fname, nil)
	}
	return *o, 0
}

//export shmpi_MPI_File_open
func shmpi_MPI_File_open(comm C.uintptr_t, name *C.char, amode C.int, info C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_File_open"
	if !live() {
		return failNone(MPI_ERR_OTHER, fname)
	}
	onNull := func(code int, err error) C.int {
		return raise(C.SHMPI_ON_FILE, MPI_FILE_NULL, code, fname, err)
	}
	c := getComm(handle(comm))
	if c == nil || c.c.IsInter() {
		return onNull(MPI_ERR_COMM, nil)
	}
	if name == nil || out == nil {
		return onNull(MPI_ERR_ARG, nil)
	}
	var in *ranks.Info
	if handle(info) != MPI_INFO_NULL {
		i := infos.get(handle(info))
		if i == nil || *i == nil {
			return onNull(MPI_ERR_INFO, nil)
		}
		in = *i
	}
	f, err := mpio.Open(c.c, C.GoString(name), int(amode), in)
	if err != nil {
		return onNull(fileClass(err), err)
	}
	fileNullMu.Lock()
	o := &fileObj{f: f, amode: int(amode), errh: fileNullErrh, eh: fileNullEh,
		etypeH: MPI_BYTE, ftypeH: MPI_BYTE, datarep: "native"}
	fileNullMu.Unlock()
	h, _ := files.add(o)
	if h == 0 {
		f.Close()
		return onNull(MPI_ERR_INTERN, nil)
	}
	*out = C.uintptr_t(h)
	return 0
}

//export shmpi_MPI_File_close
func shmpi_MPI_File_close(fh *C.uintptr_t) C.int {
	const fname = "MPI_File_close"
	if fh == nil {
		return raise(C.SHMPI_ON_FILE, MPI_FILE_NULL, MPI_ERR_ARG, fname, nil)
	}
	h := *fh
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	err := o.f.Close()
	// The file is gone whatever Close says (the ULFM chapter's 15.2.5);
	// its error goes to the file's handler first, with the handle the
	// program passed.
	r = fileFail(h, err, fname)
	files.remove(handle(h))
	*fh = MPI_FILE_NULL
	return r
}

//export shmpi_MPI_File_delete
func shmpi_MPI_File_delete(name *C.char, info C.uintptr_t) C.int {
	const fname = "MPI_File_delete"
	if name == nil {
		return raise(C.SHMPI_ON_FILE, MPI_FILE_NULL, MPI_ERR_ARG, fname, nil)
	}
	var in *ranks.Info
	if handle(info) != MPI_INFO_NULL {
		i := infos.get(handle(info))
		if i == nil || *i == nil {
			return raise(C.SHMPI_ON_FILE, MPI_FILE_NULL, MPI_ERR_INFO, fname, nil)
		}
		in = *i
	}
	if err := mpio.Delete(C.GoString(name), in); err != nil {
		return raise(C.SHMPI_ON_FILE, MPI_FILE_NULL, fileClass(err), fname, err)
	}
	return 0
}

// sizeCall runs a collective size call (set_size, preallocate).
func sizeCall(h C.uintptr_t, size int64, fname string, do func(f *mpio.File, size int64) error) C.int {
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	return fileFail(h, do(o.f, size), fname)
}

//export shmpi_MPI_File_set_size
func shmpi_MPI_File_set_size(h C.uintptr_t, size C.int64_t) C.int {
	return sizeCall(h, int64(size), "MPI_File_set_size", (*mpio.File).SetSize)
}

//export shmpi_MPI_File_preallocate
func shmpi_MPI_File_preallocate(h C.uintptr_t, size C.int64_t) C.int {
	return sizeCall(h, int64(size), "MPI_File_preallocate", (*mpio.File).Preallocate)
}

// offsetOut stores the result of a call that returns an offset.
func offsetOut(h C.uintptr_t, out *C.int64_t, v int64, err error, fname string) C.int {
	if err != nil {
		return fileFail(h, err, fname)
	}
	if out == nil {
		return fileCode(h, MPI_ERR_ARG, fname)
	}
	*out = C.int64_t(v)
	return 0
}

//export shmpi_MPI_File_get_size
func shmpi_MPI_File_get_size(h C.uintptr_t, out *C.int64_t) C.int {
	o, r := fileArg(h, "MPI_File_get_size")
	if o == nil {
		return r
	}
	v, err := o.f.GetSize()
	return offsetOut(h, out, v, err, "MPI_File_get_size")
}

//export shmpi_MPI_File_sync
func shmpi_MPI_File_sync(h C.uintptr_t) C.int {
	o, r := fileArg(h, "MPI_File_sync")
	if o == nil {
		return r
	}
	return fileFail(h, o.f.Sync(), "MPI_File_sync")
}

//export shmpi_MPI_File_get_amode
func shmpi_MPI_File_get_amode(h C.uintptr_t, out *C.int) C.int {
	o, r := fileArg(h, "MPI_File_get_amode")
	if o == nil {
		return r
	}
	if out == nil {
		return fileCode(h, MPI_ERR_ARG, "MPI_File_get_amode")
	}
	*out = C.int(o.amode)
	return 0
}

//export shmpi_MPI_File_set_atomicity
func shmpi_MPI_File_set_atomicity(h C.uintptr_t, flag C.int) C.int {
	o, r := fileArg(h, "MPI_File_set_atomicity")
	if o == nil {
		return r
	}
	return fileFail(h, o.f.SetAtomicity(flag != 0), "MPI_File_set_atomicity")
}

//export shmpi_MPI_File_get_atomicity
func shmpi_MPI_File_get_atomicity(h C.uintptr_t, out *C.int) C.int {
	o, r := fileArg(h, "MPI_File_get_atomicity")
	if o == nil {
		return r
	}
	v, err := o.f.GetAtomicity()
	if err != nil {
		return fileFail(h, err, "MPI_File_get_atomicity")
	}
	if out == nil {
		return fileCode(h, MPI_ERR_ARG, "MPI_File_get_atomicity")
	}
	*out = 0
	if v {
		*out = 1
	}
	return 0
}

// whenceIn converts MPI_SEEK_* into mpio's whence (-1 if invalid).
func whenceIn(w C.int) int {
	switch w {
	case MPI_SEEK_SET:
		return mpio.SeekSet
	case MPI_SEEK_CUR:
		return mpio.SeekCur
	case MPI_SEEK_END:
		return mpio.SeekEnd
	}
	return -1
}

//export shmpi_MPI_File_seek
func shmpi_MPI_File_seek(h C.uintptr_t, off C.int64_t, whence C.int) C.int {
	o, r := fileArg(h, "MPI_File_seek")
	if o == nil {
		return r
	}
	w := whenceIn(whence)
	if w < 0 {
		return fileCode(h, MPI_ERR_ARG, "MPI_File_seek")
	}
	_, err := o.f.Seek(int64(off), w)
	return fileFail(h, err, "MPI_File_seek")
}

//export shmpi_MPI_File_seek_shared
func shmpi_MPI_File_seek_shared(h C.uintptr_t, off C.int64_t, whence C.int) C.int {
	o, r := fileArg(h, "MPI_File_seek_shared")
	if o == nil {
		return r
	}
	// A bad whence still takes part in the collective call, which
	// reports it at every member.
	w := whenceIn(whence)
	if w < 0 {
		w = 99
	}
	return fileFail(h, o.f.SeekShared(int64(off), w), "MPI_File_seek_shared")
}

//export shmpi_MPI_File_get_position
func shmpi_MPI_File_get_position(h C.uintptr_t, out *C.int64_t) C.int {
	o, r := fileArg(h, "MPI_File_get_position")
	if o == nil {
		return r
	}
	v, err := o.f.GetPosition()
	return offsetOut(h, out, v, err, "MPI_File_get_position")
}

//export shmpi_MPI_File_get_position_shared
func shmpi_MPI_File_get_position_shared(h C.uintptr_t, out *C.int64_t) C.int {
	o, r := fileArg(h, "MPI_File_get_position_shared")
	if o == nil {
		return r
	}
	v, err := o.f.GetPositionShared()
	return offsetOut(h, out, v, err, "MPI_File_get_position_shared")
}

//export shmpi_MPI_File_get_byte_offset
func shmpi_MPI_File_get_byte_offset(h C.uintptr_t, off C.int64_t, out *C.int64_t) C.int {
	o, r := fileArg(h, "MPI_File_get_byte_offset")
	if o == nil {
		return r
	}
	v, err := o.f.GetByteOffset(int64(off))
	return offsetOut(h, out, v, err, "MPI_File_get_byte_offset")
}

func typeExtent(h C.uintptr_t, dt C.uintptr_t, out *C.int64_t, fname string) C.int {
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	t := getType(handle(dt))
	if t == nil {
		return fileCode(h, MPI_ERR_TYPE, fname)
	}
	if out == nil {
		return fileCode(h, MPI_ERR_ARG, fname)
	}
	// "native": the extent in the file is the extent in memory.
	*out = C.int64_t(t.extent())
	return 0
}

//export shmpi_MPI_File_get_type_extent
func shmpi_MPI_File_get_type_extent(h C.uintptr_t, dt C.uintptr_t, out *C.int64_t) C.int {
	return typeExtent(h, dt, out, "MPI_File_get_type_extent")
}

//export shmpi_MPI_File_get_type_extent_c
func shmpi_MPI_File_get_type_extent_c(h C.uintptr_t, dt C.uintptr_t, out *C.int64_t) C.int {
	return typeExtent(h, dt, out, "MPI_File_get_type_extent_c")
}

//export shmpi_MPI_File_get_group
func shmpi_MPI_File_get_group(h C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := fileArg(h, "MPI_File_get_group")
	if o == nil {
		return r
	}
	if out == nil {
		return fileCode(h, MPI_ERR_ARG, "MPI_File_get_group")
	}
	g, err := o.f.Group()
	if err != nil {
		return fileFail(h, err, "MPI_File_get_group")
	}
	*out = C.uintptr_t(newGroup(g))
	return 0
}

//export shmpi_MPI_File_get_info
func shmpi_MPI_File_get_info(h C.uintptr_t, out *C.uintptr_t) C.int {
	o, r := fileArg(h, "MPI_File_get_info")
	if o == nil {
		return r
	}
	if out == nil {
		return fileCode(h, MPI_ERR_ARG, "MPI_File_get_info")
	}
	in, err := o.f.Info()
	if err != nil {
		return fileFail(h, err, "MPI_File_get_info")
	}
	keys := in.Keys()
	sort.Strings(keys)
	cp := ranks.NewInfo()
	for _, k := range keys {
		v, _, _ := in.Get(k)
		cp.Set(k, v)
	}
	*out = C.uintptr_t(newInfo(cp))
	return 0
}

// MPI_File_set_info: the hints mpio takes are fixed at Open; others may
// be ignored (MPI allows it), so the call checks its arguments and
// changes nothing.
//
//export shmpi_MPI_File_set_info
func shmpi_MPI_File_set_info(h C.uintptr_t, info C.uintptr_t) C.int {
	o, r := fileArg(h, "MPI_File_set_info")
	if o == nil {
		return r
	}
	if handle(info) != MPI_INFO_NULL {
		if i := infos.get(handle(info)); i == nil || *i == nil {
			return fileCode(h, MPI_ERR_INFO, "MPI_File_set_info")
		}
	}
	return 0
}

// Error handlers.

//export shmpi_MPI_File_create_errhandler
func shmpi_MPI_File_create_errhandler(fn unsafe.Pointer, out *C.uintptr_t) C.int {
	return createErrh(fn, kindFile, out, "MPI_File_create_errhandler")
}

//export shmpi_MPI_File_set_errhandler
func shmpi_MPI_File_set_errhandler(h C.uintptr_t, eh C.uintptr_t) C.int {
	const fname = "MPI_File_set_errhandler"
	e := errhs.get(handle(eh))
	if handle(h) == MPI_FILE_NULL {
		if e == nil || ((*e).predef == 0 && (*e).kind != kindFile) {
			return raise(C.SHMPI_ON_FILE, MPI_FILE_NULL, MPI_ERR_ERRHANDLER, fname, nil)
		}
		fileNullMu.Lock()
		fileNullErrh, fileNullEh = handle(eh), *e
		fileNullMu.Unlock()
		return 0
	}
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	if e == nil || ((*e).predef == 0 && (*e).kind != kindFile) {
		return fileCode(h, MPI_ERR_ERRHANDLER, fname)
	}
	o.mu.Lock()
	o.errh, o.eh = handle(eh), *e
	o.mu.Unlock()
	return 0
}

//export shmpi_MPI_File_get_errhandler
func shmpi_MPI_File_get_errhandler(h C.uintptr_t, out *C.uintptr_t) C.int {
	const fname = "MPI_File_get_errhandler"
	if handle(h) == MPI_FILE_NULL {
		if out == nil {
			return raise(C.SHMPI_ON_FILE, MPI_FILE_NULL, MPI_ERR_ARG, fname, nil)
		}
		fileNullMu.Lock()
		*out = C.uintptr_t(fileNullErrh)
		fileNullMu.Unlock()
		return 0
	}
	o, r := fileArg(h, fname)
	if o == nil {
		return r
	}
	if out == nil {
		return fileCode(h, MPI_ERR_ARG, fname)
	}
	o.mu.Lock()
	*out = C.uintptr_t(o.errh)
	o.mu.Unlock()
	return 0
}

//export shmpi_MPI_File_call_errhandler
func shmpi_MPI_File_call_errhandler(h C.uintptr_t, code C.int) C.int {
	const fname = "MPI_File_call_errhandler"
	if handle(h) != MPI_FILE_NULL {
		if o, r := fileArg(h, fname); o == nil {
			return r
		}
	}
	raise(C.SHMPI_ON_FILE, handle(h), int(code), fname, nil)
	return 0
}

// ULFM.

//export shmpi_MPIX_File_revoke
func shmpi_MPIX_File_revoke(h C.uintptr_t) C.int {
	o, r := fileArg(h, "MPIX_File_revoke")
	if o == nil {
		return r
	}
	return fileFail(h, o.f.Revoke(), "MPIX_File_revoke")
}
