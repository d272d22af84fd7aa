// Package ranks is a rank's life in a shmpi job: Init and Finalize, the
// world and its communicators, point-to-point messaging, requests, the
// progress engine, and failure detection.
//
// # Concurrency
//
// All operations are safe for concurrent use by any number of goroutines
// of a rank (MPI_THREAD_MULTIPLE). One uncontended mutex guards the
// rank's engine; a single goroutine pays one lock and unlock per call and
// nothing else. Waiting goroutines spin briefly (only when the job has no
// more ranks than cores) and then sleep on the rank's futex doorbell; a
// goroutine that completes another's request wakes it.
//
// # Failures
//
// A rank that exits without Finalize, for any reason, has failed. Each
// rank holds a robust-futex liveness word from a dedicated OS thread; the
// kernel marks it when the process dies, and a watcher in every other
// rank (and the launcher, from the process's exit) records the failure in
// the shared table and wakes everyone. A rank asleep waiting for one peer
// also sleeps on one of that peer's direct liveness words, so the death
// wakes it at once rather than through a watcher. Operations that involve
// a failed rank return errors matching ErrProcFailed instead of blocking.
package ranks

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"shmpi/shm"
)

// Special ranks and tags.
const (
	AnySource = -1 // receive from any rank of the communicator
	AnyTag    = -1 // receive with any tag
	ProcNull  = -2 // a null peer: sends and receives complete at once
	Undefined = -32766
	// TagUB is the largest valid tag.
	TagUB = 1<<31 - 1
)

// Environment variables a launcher sets for each rank.
const (
	EnvFD   = "SHMPI_FD"   // descriptor number of the inherited segment
	EnvJob  = "SHMPI_JOB"  // the job id, hex, checked against the segment
	EnvRank = "SHMPI_RANK" // this process's rank
	// EnvSpin: "0" never spins before sleeping; otherwise the spin budget
	// in microseconds (default 20) when ranks do not outnumber cores.
	EnvSpin = "SHMPI_SPIN"
	// EnvNoCMA: "1" forbids process_vm_readv, forcing the pipelined copy
	// through the segment for large messages (for tests and for hosts
	// where ptrace_scope forbids it).
	EnvNoCMA = "SHMPI_NO_CMA"
	// EnvEagerMax: the largest message sent eagerly through a chunk (at
	// most the segment's chunk size); larger ones use the rendezvous.
	EnvEagerMax = "SHMPI_EAGER_MAX"
	// EnvChunkSize: read by launchers, the eager chunk size of the segment
	// they create (a multiple of 4096).
	EnvChunkSize = "SHMPI_CHUNK_SIZE"
	// EnvChunkCount: read by launchers, the number of chunks per rank.
	EnvChunkCount = "SHMPI_CHUNK_COUNT"
)

// RankEnv returns the environment entries that make a child process rank
// r of the job whose segment the child inherits as descriptor fd.
func RankEnv(seg *shm.Segment, r, fd int) []string {
	return []string{
		EnvFD + "=" + strconv.Itoa(fd),
		EnvJob + "=" + strconv.FormatUint(seg.JobID(), 16),
		EnvRank + "=" + strconv.Itoa(r),
	}
}

// World is this process's membership in a job.
type World struct {
	e     *engine
	world *Comm
}

var (
	initMu    sync.Mutex
	initState int // 0 never, 1 initialised, 2 finalized
)

// ThreadLevel is how the program promises to call shmpi from goroutines,
// as MPI's thread levels.
type ThreadLevel int

const (
	// ThreadSingle: one goroutine only.
	ThreadSingle ThreadLevel = iota
	// ThreadFunneled: one goroutine only (the one that called Init).
	ThreadFunneled
	// ThreadSerialized: any goroutine, but never two at once. The engine
	// takes no lock: a small message costs two fewer locked instructions
	// on each side. Concurrent calls at this level corrupt the rank.
	ThreadSerialized
	// ThreadMultiple: any goroutines, concurrently. Init's default.
	ThreadMultiple
)

func (l ThreadLevel) String() string {
	switch l {
	case ThreadSingle:
		return "single"
	case ThreadFunneled:
		return "funneled"
	case ThreadSerialized:
		return "serialized"
	case ThreadMultiple:
		return "multiple"
	}
	return "ThreadLevel(" + strconv.Itoa(int(l)) + ")"
}

// Init attaches this process to the job that shmrun (or another launcher
// using RankEnv) started it in. Without a launcher the program runs as a
// singleton: a world of one rank. Init may be called once per process.
// The world is safe for concurrent use (ThreadMultiple).
func Init() (*World, error) { return InitThread(ThreadMultiple) }

// InitThread is Init at a chosen thread level (see ThreadLevel).
func InitThread(level ThreadLevel) (*World, error) {
	if level < ThreadSingle || level > ThreadMultiple {
		return nil, newErr(ErrArg, "Init", -1, "thread level %d", level)
	}
	initMu.Lock()
	defer initMu.Unlock()
	if initState != 0 {
		return nil, newErr(ErrInit, "Init", -1, "Init called twice")
	}
	seg, rank, err := attachFromEnv()
	if err != nil {
		return nil, err
	}
	e, err := newEngine(seg, rank)
	if err != nil {
		seg.Close()
		return nil, err
	}
	initState = 1
	prefaultImage()
	e.serial = level < ThreadMultiple
	e.level = level
	w := &World{e: e}
	w.world = e.newComm(0, 1, identityGroup(e.n), "world") // slot 0, generation 1 (context.go)
	return w, nil
}

func attachFromEnv() (*shm.Segment, int, error) {
	fdS := os.Getenv(EnvFD)
	if fdS == "" {
		seg, err := NewSegment(DefaultLayout(1), runtime.NumCPU())
		if err != nil {
			return nil, 0, newErr(ErrInit, "Init", -1, "singleton segment: %v", err)
		}
		return seg, 0, nil
	}
	fd, err1 := strconv.Atoi(fdS)
	job, err2 := strconv.ParseUint(os.Getenv(EnvJob), 16, 64)
	rank, err3 := strconv.Atoi(os.Getenv(EnvRank))
	if err1 != nil || err2 != nil || err3 != nil || fd < 0 {
		return nil, 0, newErr(ErrInit, "Init", -1, "malformed %s/%s/%s environment", EnvFD, EnvJob, EnvRank)
	}
	jobFT = os.Getenv(EnvFT) != "0"
	// A program this rank starts must not think it is a rank of the job.
	for _, k := range []string{EnvFD, EnvJob, EnvRank, EnvFT} {
		os.Unsetenv(k)
	}
	unix.CloseOnExec(fd)
	seg, err := shm.AttachFD(fd, job)
	if err != nil {
		return nil, 0, &Error{Class: ErrInit, Op: "Init", Rank: -1, Detail: err.Error()}
	}
	if n := seg.Ranks(); rank < 0 || rank >= n {
		seg.Close()
		return nil, 0, newErr(ErrInit, "Init", -1, "rank %d outside a job of %d", rank, n)
	}
	return seg, rank, nil
}

// Comm is the world communicator (MPI_COMM_WORLD). Its errors are
// returned, never fatal.
func (w *World) Comm() *Comm { return w.world }

// Rank is this process's rank in the world.
func (w *World) Rank() int { return w.e.me }

// Size is the number of ranks in the world.
func (w *World) Size() int { return w.e.n }

// ThreadLevel is the thread level the world was initialised at.
func (w *World) ThreadLevel() ThreadLevel { return w.e.level }

// EnvFT is set by package launch for each rank: "0" when the launcher
// ends the job at the first failure (shmrun without --ft), "1" otherwise.
const EnvFT = "SHMPI_FT"

// jobFT is what FT reports; Init reads it from EnvFT. A singleton, and the
// rank of a launcher that does not set EnvFT, are never ended for another
// rank's failure, so they tolerate failures.
var jobFT = true

// FT reports whether failures are tolerated in this job (the MPI_FT
// attribute): operations report a failed rank as an error and the job
// goes on. It is false when the launcher kills the job at the first
// failure (shmrun without --ft).
func (w *World) FT() bool { return jobFT }

// Finalize ends this rank's participation. It is local: it never waits
// for other ranks, so it completes even when some have failed. Requests
// still pending are abandoned. After Finalize the process may exit; that
// exit is not a failure. Every later call returns ErrFinalized.
func (w *World) Finalize() error {
	e := w.e
	e.lock()
	defer e.unlock()
	if e.closed {
		return newErr(ErrFinalized, "Finalize", -1, "")
	}
	e.closed = true
	e.t.cb(e.me).state.CompareAndSwap(stAlive, stFinalized)
	for _, le := range e.t.livenessList(e.me) {
		le.Disarm()
	}
	e.t.bump()
	initMu.Lock()
	initState = 2
	initMu.Unlock()
	return nil
}

// Fates reads every rank's entry in the shared failure table.
func (w *World) Fates() []Fate {
	fs := make([]Fate, w.e.n)
	for r := range fs {
		fs[r] = FateOf(w.e.seg, r)
	}
	return fs
}

func (e *engine) String() string { return fmt.Sprintf("rank %d/%d", e.me, e.n) }
