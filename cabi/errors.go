package main

/*
#include <stdlib.h>
#include <string.h>
#include "cabi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Error handlers and error codes. A failing call hands its error class
// (or a code added with MPI_Add_error_code) to the error handler of the
// object it was called on: a communicator's, a window's, or, for calls
// on no object and for invalid communicator handles, MPI_COMM_WORLD's (as
// MPICH and Open MPI do). MPI_ERRORS_ARE_FATAL, the world's default,
// and MPI_ERRORS_ABORT print the error and end the whole job with
// Comm.Abort; MPI_ERRORS_RETURN returns the code; a user handler is
// called, and then the code is returned.

// errhObj is an error handler: a predefined one (fn nil) or a user
// function for objects of kind.
type errhObj struct {
	predef handle // MPI_ERRORS_ARE_FATAL, _ABORT, _RETURN; 0 for a user handler
	fn     unsafe.Pointer
	kind   int // kindComm, kindWin, kindFile, kindSession
}

var fatalErrh = &errhObj{predef: MPI_ERRORS_ARE_FATAL}

func init() {
	errhs.predef(MPI_ERRORS_ARE_FATAL, fatalErrh)
	errhs.predef(MPI_ERRORS_ABORT, &errhObj{predef: MPI_ERRORS_ABORT})
	errhs.predef(MPI_ERRORS_RETURN, &errhObj{predef: MPI_ERRORS_RETURN})
}

// classOf maps an error of the Go API to its MPI error class.
func classOf(err error) int {
	if err == nil {
		return MPI_SUCCESS
	}
	var ce codeErr
	if errors.As(err, &ce) {
		return int(ce)
	}
	switch {
	case errors.Is(err, ranks.ErrProcFailedPending):
		return MPIX_ERR_PROC_FAILED_PENDING
	case errors.Is(err, ranks.ErrProcFailed):
		return MPIX_ERR_PROC_FAILED
	case errors.Is(err, ranks.ErrRevoked):
		return MPIX_ERR_REVOKED
	case errors.Is(err, ranks.ErrRMASync):
		return MPI_ERR_RMA_SYNC
	case errors.Is(err, ranks.ErrTopology):
		return MPI_ERR_TOPOLOGY
	case errors.Is(err, ranks.ErrDims):
		return MPI_ERR_DIMS
	case errors.Is(err, ranks.ErrRank):
		return MPI_ERR_RANK
	case errors.Is(err, ranks.ErrTag):
		return MPI_ERR_TAG
	case errors.Is(err, ranks.ErrCount):
		return MPI_ERR_COUNT
	case errors.Is(err, ranks.ErrBuffer):
		return MPI_ERR_BUFFER
	case errors.Is(err, ranks.ErrType):
		return MPI_ERR_TYPE
	case errors.Is(err, ranks.ErrTruncate):
		return MPI_ERR_TRUNCATE
	case errors.Is(err, ranks.ErrRequest):
		return MPI_ERR_REQUEST
	case errors.Is(err, ranks.ErrComm):
		return MPI_ERR_COMM
	case errors.Is(err, ranks.ErrWin):
		return MPI_ERR_WIN
	case errors.Is(err, ranks.ErrArg):
		return MPI_ERR_ARG
	case errors.Is(err, ranks.ErrNoMem):
		return MPI_ERR_NO_MEM
	case errors.Is(err, ranks.ErrInfo):
		return MPI_ERR_INFO
	case errors.Is(err, ranks.ErrInfoKey):
		return MPI_ERR_INFO_KEY
	case errors.Is(err, ranks.ErrInfoValue):
		return MPI_ERR_INFO_VALUE
	case errors.Is(err, ranks.ErrInfoNoKey):
		return MPI_ERR_INFO_NOKEY
	case errors.Is(err, ranks.ErrKeyval):
		return MPI_ERR_KEYVAL
	case errors.Is(err, ranks.ErrSpawn):
		return MPI_ERR_SPAWN
	case errors.Is(err, ranks.ErrPort):
		return MPI_ERR_PORT
	case errors.Is(err, ranks.ErrName):
		return MPI_ERR_NAME
	case errors.Is(err, ranks.ErrService):
		return MPI_ERR_SERVICE
	case errors.Is(err, ranks.ErrUnsupported):
		return MPI_ERR_UNSUPPORTED_OPERATION
	}
	return MPI_ERR_OTHER
}

// codeErr is an MPI error code as a Go error, for errors the C layer
// finds itself.
type codeErr int

func (c codeErr) Error() string { return errorString(int(c)) }

// Codes and classes added by MPI_Add_error_class and _code, and strings.
var (
	errMu      sync.Mutex
	errClassOf = map[int]int{} // added code -> class
	errStrings = map[int]string{}
	lastCode   = 200 // codes and classes added by the user start above ULFM's
)

// errorClass is the class of code, and whether code is known.
func errorClass(code int) (int, bool) {
	switch {
	case code >= 0 && code <= MPI_ERR_ABI:
		return code, true
	case code >= MPIX_ERR_PROC_FAILED && code <= MPIX_ERR_REVOKED:
		return code, true
	}
	errMu.Lock()
	defer errMu.Unlock()
	c, ok := errClassOf[code]
	return c, ok
}

var classStrings = map[int]string{
	MPI_SUCCESS:                   "no error",
	MPI_ERR_BUFFER:                "invalid buffer pointer",
	MPI_ERR_COUNT:                 "invalid count argument",
	MPI_ERR_TYPE:                  "invalid datatype",
	MPI_ERR_TAG:                   "invalid tag",
	MPI_ERR_COMM:                  "invalid communicator",
	MPI_ERR_RANK:                  "invalid rank",
	MPI_ERR_REQUEST:               "invalid request",
	MPI_ERR_ROOT:                  "invalid root",
	MPI_ERR_GROUP:                 "invalid group",
	MPI_ERR_OP:                    "invalid reduction operation",
	MPI_ERR_TOPOLOGY:              "invalid topology",
	MPI_ERR_DIMS:                  "invalid dimension argument",
	MPI_ERR_ARG:                   "invalid argument",
	MPI_ERR_UNKNOWN:               "unknown error",
	MPI_ERR_TRUNCATE:              "message truncated",
	MPI_ERR_OTHER:                 "other error",
	MPI_ERR_INTERN:                "internal error",
	MPI_ERR_PENDING:               "pending request",
	MPI_ERR_IN_STATUS:             "error code is in status",
	MPI_ERR_ACCESS:                "permission denied",
	MPI_ERR_AMODE:                 "invalid file access mode",
	MPI_ERR_ASSERT:                "invalid assert argument",
	MPI_ERR_BAD_FILE:              "invalid file name",
	MPI_ERR_BASE:                  "invalid base address",
	MPI_ERR_CONVERSION:            "data conversion error",
	MPI_ERR_DISP:                  "invalid displacement",
	MPI_ERR_DUP_DATAREP:           "data representation already defined",
	MPI_ERR_FILE_EXISTS:           "file exists",
	MPI_ERR_FILE_IN_USE:           "file in use",
	MPI_ERR_FILE:                  "invalid file handle",
	MPI_ERR_INFO_KEY:              "invalid info key",
	MPI_ERR_INFO_NOKEY:            "info key not set",
	MPI_ERR_INFO_VALUE:            "invalid info value",
	MPI_ERR_INFO:                  "invalid info object",
	MPI_ERR_IO:                    "I/O error",
	MPI_ERR_KEYVAL:                "invalid attribute key",
	MPI_ERR_LOCKTYPE:              "invalid lock type",
	MPI_ERR_NAME:                  "invalid service name",
	MPI_ERR_NO_MEM:                "out of memory",
	MPI_ERR_NOT_SAME:              "arguments not the same at every process",
	MPI_ERR_NO_SPACE:              "no space left",
	MPI_ERR_NO_SUCH_FILE:          "no such file",
	MPI_ERR_PORT:                  "invalid port name",
	MPI_ERR_QUOTA:                 "quota exceeded",
	MPI_ERR_READ_ONLY:             "read-only file or file system",
	MPI_ERR_RMA_ATTACH:            "memory cannot be attached",
	MPI_ERR_RMA_CONFLICT:          "conflicting accesses to a window",
	MPI_ERR_RMA_RANGE:             "target memory outside the window",
	MPI_ERR_RMA_SHARED:            "memory cannot be shared",
	MPI_ERR_RMA_SYNC:              "RMA call out of synchronization",
	MPI_ERR_SERVICE:               "invalid service",
	MPI_ERR_SIZE:                  "invalid size",
	MPI_ERR_SPAWN:                 "spawn error",
	MPI_ERR_UNSUPPORTED_DATAREP:   "unsupported data representation",
	MPI_ERR_UNSUPPORTED_OPERATION: "operation not supported by shmpi",
	MPI_ERR_WIN:                   "invalid window",
	MPI_ERR_RMA_FLAVOR:            "wrong window flavor",
	MPI_ERR_PROC_ABORTED:          "process aborted",
	MPI_ERR_VALUE_TOO_LARGE:       "value too large for its argument",
	MPI_ERR_SESSION:               "invalid session",
	MPI_ERR_ERRHANDLER:            "invalid error handler",
	MPI_ERR_ABI:                   "ABI mismatch",
	MPIX_ERR_PROC_FAILED:          "process failed",
	MPIX_ERR_PROC_FAILED_PENDING:  "process failed; receive from any source still pending",
	MPIX_ERR_REVOKED:              "communicator revoked",
}

func errorString(code int) string {
	errMu.Lock()
	s, ok := errStrings[code]
	_, added := errClassOf[code]
	errMu.Unlock()
	if ok {
		return s
	}
	if added {
		// An added code or class that was given no string: MPI says
		// its string is empty.
		return ""
	}
	if s, ok := classStrings[code]; ok {
		return s
	}
	if class, ok := errorClass(code); ok && class != code {
		return errorString(class)
	}
	return fmt.Sprintf("unknown error code %d", code)
}

// errhOf is the error handler for a call on object h of kind on.
func errhOf(on int, h handle) *errhObj {
	if on == C.SHMPI_ON_FILE || isFileHandle(h) {
		return fileErrh(h) // a file's requests keep their file as comm
	}
	switch on {
	case C.SHMPI_ON_COMM:
		if c := getComm(h); c != nil && c.eh != nil {
			return c.eh
		}
	case C.SHMPI_ON_WIN:
		if w := wins.get(h); w != nil && *w != nil && (*w).eh != nil {
			return (*w).eh
		}
	case C.SHMPI_ON_SESSION:
		if s := getSession(h); s != nil && s.eh != nil {
			return s.eh
		}
	}
	if c := getComm(MPI_COMM_WORLD); c != nil && c.eh != nil {
		return c.eh
	}
	return fatalErrh
}

// raise hands code, from the call fname on object h (of kind on), to its
// error handler and returns what the call returns.
func raise(on int, h handle, code int, fname string, detail error) C.int {
	if code == MPI_SUCCESS {
		return 0
	}
	return raiseWith(errhOf(on, h), h, code, fname, detail)
}

// raiseWith calls error handler eh for code on object h (a handle of
// eh's kind, or a null one), and returns the code the call returns.
func raiseWith(eh *errhObj, h handle, code int, fname string, detail error) C.int {
	switch eh.predef {
	case MPI_ERRORS_RETURN:
		return C.int(code)
	case MPI_ERRORS_ARE_FATAL, MPI_ERRORS_ABORT:
		msg := errorString(code)
		if detail != nil {
			msg = detail.Error()
		}
		rank := -1
		if w := world; w != nil {
			rank = w.Rank()
		}
		fmt.Fprintf(os.Stderr, "shmpi: rank %d: %s: %s (error class %d); the job is aborted (MPI_ERRORS_ARE_FATAL)\n", rank, fname, msg, code)
		abortJob(code)
		return C.int(code)
	}
	hh := C.uintptr_t(h)
	cc := C.int(code)
	p := (*C.uintptr_t)(C.malloc(C.size_t(unsafe.Sizeof(hh))))
	q := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(cc))))
	*p, *q = hh, cc
	switch eh.kind {
	case kindWin:
		C.shmpi_call_win_eh(eh.fn, p, q)
	default:
		C.shmpi_call_comm_eh(eh.fn, p, q)
	}
	// The handler may change the code the call returns (its second
	// argument is "the error code to be returned", as MPICH reads it).
	ret := *q
	C.free(unsafe.Pointer(p))
	C.free(unsafe.Pointer(q))
	return ret
}

// fail raises err (from the Go API) on communicator h.
func fail(h handle, err error, fname string) C.int {
	if err == nil {
		return 0
	}
	return raise(C.SHMPI_ON_COMM, h, classOf(err), fname, err)
}

// failCode raises an error class found by the C layer on communicator h.
func failCode(h handle, code int, fname string) C.int {
	return raise(C.SHMPI_ON_COMM, h, code, fname, nil)
}

// failNone raises code on no object.
func failNone(code int, fname string) C.int {
	return raise(C.SHMPI_ON_NONE, 0, code, fname, nil)
}

// abortJob ends the job with code.
func abortJob(code int) {
	if w := world; w != nil {
		w.Comm().Abort(code)
	}
	os.Exit(code & 0xff)
}

//export shmpi_raise
func shmpi_raise(on C.int, h C.uintptr_t, code C.int, fname *C.char) C.int {
	return raise(int(on), handle(h), int(code), C.GoString(fname), nil)
}

//export shmpi_unsupported
func shmpi_unsupported(fname *C.char, on C.int, h C.uintptr_t) C.int {
	return raise(int(on), handle(h), MPI_ERR_UNSUPPORTED_OPERATION, C.GoString(fname), nil)
}

//export shmpi_MPI_Error_class
func shmpi_MPI_Error_class(code C.int, class *C.int) C.int {
	c, ok := errorClass(int(code))
	if !ok {
		return failNone(MPI_ERR_ARG, "MPI_Error_class")
	}
	if class == nil {
		return failNone(MPI_ERR_ARG, "MPI_Error_class")
	}
	*class = C.int(c)
	return 0
}

//export shmpi_MPI_Error_string
func shmpi_MPI_Error_string(code C.int, str *C.char, n *C.int) C.int {
	if str == nil || n == nil {
		return failNone(MPI_ERR_ARG, "MPI_Error_string")
	}
	if _, ok := errorClass(int(code)); !ok {
		return failNone(MPI_ERR_ARG, "MPI_Error_string")
	}
	*n = C.int(putString(str, errorString(int(code)), MPI_MAX_ERROR_STRING))
	return 0
}

// putString copies s into the C buffer p of size max, NUL-terminated,
// and returns the length copied.
func putString(p *C.char, s string, max int) int {
	if len(s) > max-1 {
		s = s[:max-1]
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(p)), len(s)+1)
	copy(b, s)
	b[len(s)] = 0
	return len(s)
}

//export shmpi_MPI_Add_error_class
func shmpi_MPI_Add_error_class(class *C.int) C.int {
	if class == nil {
		return failNone(MPI_ERR_ARG, "MPI_Add_error_class")
	}
	errMu.Lock()
	lastCode++
	c := lastCode
	errClassOf[c] = c
	errMu.Unlock()
	*class = C.int(c)
	return 0
}

//export shmpi_MPI_Add_error_code
func shmpi_MPI_Add_error_code(class C.int, code *C.int) C.int {
	if code == nil {
		return failNone(MPI_ERR_ARG, "MPI_Add_error_code")
	}
	if c, ok := errorClass(int(class)); !ok || c != int(class) {
		return failNone(MPI_ERR_ARG, "MPI_Add_error_code")
	}
	errMu.Lock()
	lastCode++
	c := lastCode
	errClassOf[c] = int(class)
	errMu.Unlock()
	*code = C.int(c)
	return 0
}

//export shmpi_MPI_Add_error_string
func shmpi_MPI_Add_error_string(code C.int, str *C.char) C.int {
	if str == nil {
		return failNone(MPI_ERR_ARG, "MPI_Add_error_string")
	}
	if _, ok := errorClass(int(code)); !ok || int(code) <= MPI_ERR_ABI {
		return failNone(MPI_ERR_ARG, "MPI_Add_error_string")
	}
	s := C.GoString(str)
	if len(s) >= MPI_MAX_ERROR_STRING {
		return failNone(MPI_ERR_ARG, "MPI_Add_error_string")
	}
	errMu.Lock()
	errStrings[int(code)] = s
	errMu.Unlock()
	return 0
}

//export shmpi_MPI_Remove_error_string
func shmpi_MPI_Remove_error_string(code C.int) C.int {
	errMu.Lock()
	_, ok := errStrings[int(code)]
	delete(errStrings, int(code))
	errMu.Unlock()
	if !ok {
		return failNone(MPI_ERR_ARG, "MPI_Remove_error_string")
	}
	return 0
}

//export shmpi_MPI_Remove_error_code
func shmpi_MPI_Remove_error_code(code C.int) C.int {
	errMu.Lock()
	c, ok := errClassOf[int(code)]
	if ok && c != int(code) {
		delete(errClassOf, int(code))
		delete(errStrings, int(code))
	}
	errMu.Unlock()
	if !ok || c == int(code) {
		return failNone(MPI_ERR_ARG, "MPI_Remove_error_code")
	}
	return 0
}

//export shmpi_MPI_Remove_error_class
func shmpi_MPI_Remove_error_class(class C.int) C.int {
	errMu.Lock()
	defer errMu.Unlock()
	c, ok := errClassOf[int(class)]
	if !ok || c != int(class) {
		errMu.Unlock()
		r := failNone(MPI_ERR_ARG, "MPI_Remove_error_class")
		errMu.Lock()
		return r
	}
	for code, cl := range errClassOf {
		if cl == int(class) && code != int(class) {
			errMu.Unlock()
			r := failNone(MPI_ERR_ARG, "MPI_Remove_error_class")
			errMu.Lock()
			return r
		}
	}
	delete(errClassOf, int(class))
	delete(errStrings, int(class))
	return 0
}

// Creating, setting and calling error handlers.

func createErrh(fn unsafe.Pointer, kind int, out *C.uintptr_t, fname string) C.int {
	if fn == nil || out == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	h, _ := errhs.add(&errhObj{fn: fn, kind: kind})
	if h == 0 {
		return failNone(MPI_ERR_INTERN, fname)
	}
	*out = C.uintptr_t(h)
	return 0
}

//export shmpi_MPI_Comm_create_errhandler
func shmpi_MPI_Comm_create_errhandler(fn unsafe.Pointer, out *C.uintptr_t) C.int {
	return createErrh(fn, kindComm, out, "MPI_Comm_create_errhandler")
}

//export shmpi_MPI_Win_create_errhandler
func shmpi_MPI_Win_create_errhandler(fn unsafe.Pointer, out *C.uintptr_t) C.int {
	return createErrh(fn, kindWin, out, "MPI_Win_create_errhandler")
}

//export shmpi_MPI_Errhandler_free
func shmpi_MPI_Errhandler_free(eh *C.uintptr_t) C.int {
	if eh == nil {
		return failNone(MPI_ERR_ARG, "MPI_Errhandler_free")
	}
	h := handle(*eh)
	if errhs.get(h) == nil {
		return failNone(MPI_ERR_ERRHANDLER, "MPI_Errhandler_free")
	}
	// Objects that use the handler keep it: handlers are small, and a
	// freed user handler's function stays callable, so the slot is freed
	// but every object holds its own reference (commObj.errh keeps the
	// handle; errhOf falls back to the handler object it finds).
	if h >= 0x1000 {
		errhs.remove(h)
	}
	*eh = MPI_ERRHANDLER_NULL
	return 0
}

//export shmpi_MPI_Comm_set_errhandler
func shmpi_MPI_Comm_set_errhandler(comm C.uintptr_t, eh C.uintptr_t) C.int {
	c := getComm(handle(comm))
	if c == nil {
		return failCode(handle(comm), MPI_ERR_COMM, "MPI_Comm_set_errhandler")
	}
	e := errhs.get(handle(eh))
	if e == nil || ((*e).predef == 0 && (*e).kind != kindComm) {
		return failCode(handle(comm), MPI_ERR_ERRHANDLER, "MPI_Comm_set_errhandler")
	}
	c.errh = handle(eh)
	c.eh = *e
	return 0
}

//export shmpi_MPI_Comm_get_errhandler
func shmpi_MPI_Comm_get_errhandler(comm C.uintptr_t, out *C.uintptr_t) C.int {
	c := getComm(handle(comm))
	if c == nil {
		return failCode(handle(comm), MPI_ERR_COMM, "MPI_Comm_get_errhandler")
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, "MPI_Comm_get_errhandler")
	}
	*out = C.uintptr_t(c.errh)
	return 0
}

//export shmpi_MPI_Comm_call_errhandler
func shmpi_MPI_Comm_call_errhandler(comm C.uintptr_t, code C.int) C.int {
	if getComm(handle(comm)) == nil {
		return failCode(handle(comm), MPI_ERR_COMM, "MPI_Comm_call_errhandler")
	}
	raise(C.SHMPI_ON_COMM, handle(comm), int(code), "MPI_Comm_call_errhandler", nil)
	return 0
}
