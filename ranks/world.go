package ranks

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/shm"
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

// The failure table's reports use the same values (compile-time checks).
var (
	_ = [1]struct{}{}[AnySource-job.AnyPeer]
	_ = [1]struct{}{}[AnyTag-job.AnyTag]
	_ = [1]struct{}{}[ProcNull-job.NullPeer]
)

// World is this process's membership in a job.
type World struct {
	e     *engine
	world *Comm
	self  *Comm // MPI_COMM_SELF, made at its first use
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
// using package ranks/launch) started it in. Without a launcher the program runs as a
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
	if err := e.armKill(os.Getenv(job.EnvKill)); err != nil {
		seg.Close()
		return nil, err
	}
	initState = 1
	prefaultImage()
	e.serial = level < ThreadMultiple
	e.level = level
	e.initBias()
	w := &World{e: e}
	w.world = e.newComm(0, job.WorldGen, identityGroup(e.n), "world") // the world owns slot 0
	w.world.permanent = true
	return w, nil
}

// attachFromEnv attaches to the job a launcher started this process in,
// or makes a singleton's segment.
func attachFromEnv() (*shm.Segment, int, error) {
	if !job.IsRank() {
		seg, err := job.NewSegment(job.DefaultLayout(1), runtime.NumCPU())
		if err != nil {
			return nil, 0, newErr(ErrInit, "Init", -1, "singleton segment: %v", err)
		}
		return seg, 0, nil
	}
	seg, rank, ft, err := job.Attach()
	if err != nil {
		return nil, 0, &Error{Class: ErrInit, Op: "Init", Rank: -1, Detail: err.Error()}
	}
	jobFT = ft
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

// jobFT is what FT reports; Init reads it from the launcher's
// environment (job.EnvFT). A singleton, and the rank of a launcher that
// does not say, are never ended for another rank's failure, so they
// tolerate failures.
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
	e.dropPeerMaps()
	e.t.ReleaseAll(e.me)
	e.t.CB(e.me).State.CompareAndSwap(job.StAlive, job.StFinalized)
	for _, le := range e.t.LivenessList(e.me) {
		le.Disarm()
	}
	e.t.Bump()
	initMu.Lock()
	initState = 2
	initMu.Unlock()
	return nil
}

// Fate is what became of a rank, as the job's failure table records it:
// its state, how and when a failure was detected and by whom, its exit,
// and the operation it is (or was last) blocked in.
type Fate = job.Fate

// Fates reads every rank's entry in the shared failure table.
func (w *World) Fates() []Fate {
	fs := make([]Fate, w.e.n)
	for r := range fs {
		fs[r] = job.FateOf(w.e.seg, r)
	}
	return fs
}

func (e *engine) String() string { return fmt.Sprintf("rank %d/%d", e.me, e.n) }

// ContextsInUse is how many of the job's context slots (one per
// communicator alive at some rank, the world's included) are in use: a
// diagnostic for leak checks. A slot returns to the pool once every
// member has freed its communicator, died or finalized.
func (w *World) ContextsInUse() int { return job.MaxContexts - w.e.t.FreeContexts() }
