package main

/*
#include "cabi.h"
*/
import "C"

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Initialization and finalization.

var (
	world   *ranks.World
	initMu  sync.Mutex
	state   atomic.Int32 // mirrors C.shmpi_state: 0 before Init, 1 initialized, 2 finalized
	initErr error
)

func setState(s int32) {
	state.Store(s)
	atomic.StoreInt32((*int32)(unsafe.Pointer(&C.shmpi_state)), s)
}

// threadLevel normalises a requested MPI thread level.
func threadLevel(required int) int {
	switch {
	case required <= MPI_THREAD_SINGLE:
		return MPI_THREAD_SINGLE
	case required <= MPI_THREAD_FUNNELED:
		return MPI_THREAD_FUNNELED
	case required <= MPI_THREAD_SERIALIZED:
		return MPI_THREAD_SERIALIZED
	}
	return MPI_THREAD_MULTIPLE
}

func initialize(required int, fname string) C.int {
	initMu.Lock()
	defer initMu.Unlock()
	if state.Load() != 0 || worldDone {
		return failNone(MPI_ERR_OTHER, fname)
	}
	if world == nil {
		// A session may have started the runtime already (session.go).
		if r := startRuntime(fname); r != 0 {
			return r
		}
	}
	C.shmpi_provided = C.int(threadLevel(required))
	C.shmpi_set_main_thread()
	fillInfoEnv(*infos.get(MPI_INFO_ENV), nil)
	setState(1)
	return 0
}

// worldDone says that the runtime was finalized: by MPI_Finalize, or by
// the last MPI_Session_finalize of a process that has not called
// MPI_Init. It cannot be started again.
var worldDone bool

// startRuntime attaches this process to the job and installs
// MPI_COMM_WORLD and MPI_COMM_SELF, for MPI_Init or the first
// MPI_Session_init. initMu is held.
func startRuntime(fname string) C.int {
	// Every level runs the engine at ThreadMultiple: the nonblocking
	// collectives and ULFM's Iagree run on goroutines of their own
	// beside the caller's thread, and the biased engine lock makes a
	// single caller pay what ThreadSingle pays (ranks/doc.go).
	ext.CHost = true // before the engine exists: its waits never offer the P
	w, err := ranks.InitThread(ranks.ThreadMultiple)
	if err != nil {
		initErr = err
		return raise(C.SHMPI_ON_NONE, 0, MPI_ERR_OTHER, fname, err)
	}
	world = w
	self, err := w.Self()
	if err != nil {
		return raise(C.SHMPI_ON_NONE, 0, MPI_ERR_OTHER, fname, err)
	}
	eh := initialErrh()
	installComm(MPI_COMM_WORLD, w.Comm(), eh)
	installComm(MPI_COMM_SELF, self, eh)
	startFastPaths(w)
	C.shmpi_provided = MPI_THREAD_MULTIPLE
	C.shmpi_line_buffer_stdout()
	return 0
}

// finishRuntime finalizes the runtime once neither the world model nor
// a session uses it. initMu is held.
func finishRuntime() error {
	if worldDone || world == nil || state.Load() == 1 || sessionsOpen.Load() > 0 {
		return nil
	}
	worldDone = true
	return world.Finalize()
}

// initialHandlerEnv names the error handler that MPI_COMM_WORLD and
// MPI_COMM_SELF start with (MPI 4.0's mpiexec -initial-errhandler, which
// shmrun passes on in it): mpi_errors_are_fatal (the default),
// mpi_errors_abort or mpi_errors_return.
const initialHandlerEnv = "SHMPI_INITIAL_ERRHANDLER"

func initialErrh() *errhObj {
	switch strings.ToLower(os.Getenv(initialHandlerEnv)) {
	case "mpi_errors_return":
		return *errhs.get(MPI_ERRORS_RETURN)
	case "mpi_errors_abort":
		return *errhs.get(MPI_ERRORS_ABORT)
	}
	return fatalErrh
}

var threadLevelNames = map[int]string{MPI_THREAD_SINGLE: "MPI_THREAD_SINGLE", MPI_THREAD_FUNNELED: "MPI_THREAD_FUNNELED",
	MPI_THREAD_SERIALIZED: "MPI_THREAD_SERIALIZED", MPI_THREAD_MULTIPLE: "MPI_THREAD_MULTIPLE"}

// fillInfoEnv sets MPI 4.0's keys of MPI_INFO_ENV (and of
// MPI_Info_create_env's objects) in in: the command and its arguments
// (argv, or this process's), maxprocs, host, wdir, thread_level and
// mpi_initial_errhandler.
func fillInfoEnv(in *ranks.Info, argv []string) {
	if argv == nil {
		if b, err := os.ReadFile("/proc/self/cmdline"); err == nil {
			argv = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		}
	}
	set := func(k, v string) {
		if v != "" {
			in.Set(k, v)
		}
	}
	if len(argv) > 0 {
		set("command", argv[0])
		set("argv", strings.Join(argv[1:], " "))
	}
	if world != nil {
		set("maxprocs", strconv.Itoa(world.Size()))
		set("soft", strconv.Itoa(world.Size()))
		set("thread_level", threadLevelNames[threadLevel(int(C.shmpi_provided))])
	}
	if h, err := os.Hostname(); err == nil {
		set("host", h)
	}
	if wd, err := os.Getwd(); err == nil {
		set("wdir", wd)
	}
	eh := "mpi_errors_are_fatal"
	switch initialErrh().predef {
	case MPI_ERRORS_RETURN:
		eh = "mpi_errors_return"
	case MPI_ERRORS_ABORT:
		eh = "mpi_errors_abort"
	}
	set("mpi_initial_errhandler", eh)
}

//export shmpi_MPI_Init
func shmpi_MPI_Init(argc, argv unsafe.Pointer) C.int {
	return initialize(MPI_THREAD_SINGLE, "MPI_Init")
}

//export shmpi_MPI_Init_thread
func shmpi_MPI_Init_thread(argc, argv unsafe.Pointer, required C.int, provided *C.int) C.int {
	if r := initialize(int(required), "MPI_Init_thread"); r != 0 {
		return r
	}
	if provided != nil {
		*provided = C.shmpi_provided
	}
	return 0
}

//export shmpi_MPI_Finalize
func shmpi_MPI_Finalize() C.int {
	initMu.Lock()
	defer initMu.Unlock()
	if state.Load() != 1 {
		return failNone(MPI_ERR_OTHER, "MPI_Finalize")
	}
	// MPI: the attributes of MPI_COMM_SELF are deleted first, so that
	// libraries can clean up in their delete callbacks.
	if c := getComm(MPI_COMM_SELF); c != nil {
		c.deleteAllAttrs(MPI_COMM_SELF)
	}
	setState(2)
	// Open sessions keep the runtime until the last is finalized.
	if err := finishRuntime(); err != nil {
		return failNone(classOf(err), "MPI_Finalize")
	}
	return 0
}

//export shmpi_MPI_Abort
func shmpi_MPI_Abort(comm C.uintptr_t, code C.int) C.int {
	if world == nil {
		abortJob(int(code))
	}
	// Every rank of the job ends, whatever the communicator (MPI allows
	// it; shmpi's jobs are one node).
	world.Comm().Abort(int(code))
	return failCode(handle(comm), MPI_ERR_OTHER, "MPI_Abort")
}

// live says whether MPI calls may be made now: between MPI_Init and
// MPI_Finalize, or while a session is open.
func live() bool { return state.Load() == 1 || sessionsOpen.Load() > 0 }
