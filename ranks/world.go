package ranks

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/internal/sysmon"
	"github.com/shmpi/shmpi/shm"
)

// Special ranks and tags.
const (
	AnySource = -1 // receive from any rank of the communicator
	AnyTag    = -1 // receive with any tag
	ProcNull  = -2 // a null peer: sends and receives complete at once
	Root      = -3 // the root of an intercommunicator collective (MPI_ROOT), at the root
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
	e      *engine
	world  *Comm
	self   *Comm // MPI_COMM_SELF, made at its first use
	parent *Comm // the intercommunicator to the parents of a spawned world (spawn.go)
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
	sw, err := job.ReadSpawned()
	if err != nil {
		seg.Close()
		return nil, &Error{Class: ErrInit, Op: "Init", Rank: -1, Detail: err.Error()}
	}
	asyncBarrier = sw.Spawned
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
	warmErrors()
	e.serial = level < ThreadMultiple
	e.level = level
	e.initBias()
	w := &World{e: e}
	if !sw.Spawned {
		// The first world owns slot 0 and the first rank slots; the
		// rest of the universe is for spawned worlds.
		w.world = e.newComm(0, job.WorldGen, identityGroup(e.lay.WorldSize()), "MPI_COMM_WORLD")
	} else if err := w.adoptSpawned(sw); err != nil {
		return nil, err
	}
	w.world.permanent = true
	e.spawnKill = spawnKillPoint(os.Getenv(envSpawnKill), e.me)
	if e.spin {
		sysmon.Batch() // a rank that spins keeps its CPU
	}
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
	launched = true
	return seg, rank, nil
}

// Comm is the world communicator (MPI_COMM_WORLD). Its errors are
// returned, never fatal.
func (w *World) Comm() *Comm { return w.world }

// Rank is this process's rank in the world.
func (w *World) Rank() int { return w.world.rank }

// Size is the number of ranks in the world.
func (w *World) Size() int { return w.world.size }

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
// for other ranks, so it completes even when some have failed, with one
// exception, MPI's: it first waits, as BufferDetach does, until the
// messages sent in buffered mode (Bsend) have been handed over to their
// receivers or have failed. Requests still pending are abandoned. After
// Finalize the process may exit; that exit is not a failure. Every later
// call returns ErrFinalized. The attributes of self are deleted first,
// the last set first (their Delete callbacks run); the first callback
// error is returned once Finalize is done.
func (w *World) Finalize() error {
	aerr := w.finalizeAttrs()
	e := w.e
	e.lock()
	defer e.unlock()
	if e.closed {
		return newErr(ErrFinalized, "Finalize", -1, "")
	}
	e.flushBuffered() // MPI's implicit BufferDetach (bsend.go)
	e.closed = true
	e.dropPeerMaps()
	// Upper packages leave word of how far this rank went on each of its
	// communicators (coll: the collective phases it took part in), for
	// members that wait for it once it is seen finalized.
	for _, c := range e.live {
		if c != nil && !c.twin && !c.released {
			ext.Finalizing(c)
		}
	}
	e.t.ReleaseAll(e.me)
	e.t.CB(e.me).State.CompareAndSwap(job.StAlive, job.StFinalized)
	for _, le := range e.t.LivenessList(e.me) {
		le.Disarm()
	}
	e.t.Bump()
	initMu.Lock()
	initState = 2
	initMu.Unlock()
	return aerr
}

// State is a rank's state in the job's failure table.
type State int

// The states of a rank, in the order a rank goes through them.
const (
	StateUnstarted State = iota // not yet through Init
	StateAlive                  // through Init; neither finalized nor failed
	StateFinalized              // called Finalize: its exit is not a failure
	StateFailed                 // ended without Finalize: a failed process in ULFM's terms
)

// The failure table stores the same values (compile-time checks).
var (
	_ = [1]struct{}{}[StateUnstarted-job.StUnstarted]
	_ = [1]struct{}{}[StateAlive-job.StAlive]
	_ = [1]struct{}{}[StateFinalized-job.StFinalized]
	_ = [1]struct{}{}[StateFailed-job.StFailed]
)

func (s State) String() string { return job.State(s).String() }

// Fate is what became of a rank, as the job's failure table records it:
// its state, how and when a failure was detected and by whom, its exit,
// and the operation it is (or was last) blocked in.
type Fate struct {
	Rank  int // world rank
	Pid   int // process id, set by the rank when it entered Init; 0 before
	State State

	// For StateFailed: how the failure was detected, "robust-futex" (a
	// rank's liveness watcher, woken by the kernel), "robust-futex-direct"
	// (a rank asleep on the dead rank's direct liveness word) or "exit"
	// (the launcher reaped the process first); "" otherwise.
	Cause    string
	Detector int       // world rank that declared the failure; -1 for the launcher, or if none
	FailedAt time.Time // when the failure was declared (wall clock); zero if never

	// The process's end, recorded by the launcher when it reaped it.
	Reaped   bool
	ExitCode int // exit code; -1 if unknown or killed by a signal
	Signal   int // the signal that killed it, 0 if none

	// The operation the rank sleeps in, or last slept in. A wait is
	// recorded only when it goes to sleep, never on the fast path.
	Op      string    // "Recv", "WaitAll", "Barrier", "Win.Lock", "Agree", ...; "" if none yet
	Blocked bool      // in Op now; otherwise Op is the last one it slept in
	OpPeer  int       // the peer's rank in the communicator, AnySource, or ProcNull if none
	OpTag   int       // the tag, or AnyTag
	OpSince time.Time // when it went to sleep in Op
	OpCount uint64    // how many waits of the rank have gone to sleep

	// Process is what a launcher sees of the process when the table does
	// not tell it ("exited with code 3, not reaped", "stopped", "still
	// running" for a rank that finalized, "killed by signal 9 (SIGKILL)"
	// for one whose failure nobody declared yet); "" otherwise, and always
	// in World.Fates. Package ranks/launch fills it in its deadline
	// reports (launch.Job.Unfinished).
	Process string
}

// fateOf converts the failure table's record of a rank.
func fateOf(f job.Fate) Fate {
	pf := Fate{Rank: f.Rank, Pid: f.Pid, State: State(f.State), Cause: f.Cause, Detector: f.Detector,
		FailedAt: f.FailedAt, Reaped: f.Reaped, ExitCode: f.ExitCode, Signal: f.Signal,
		Blocked: f.Op.Blocked, OpPeer: f.Op.Peer, OpTag: f.Op.Tag, OpCount: f.Op.Count}
	if f.Op.Op != job.OpNone {
		pf.Op = f.Op.Name
	}
	if f.Op.Since != 0 {
		pf.OpSince = time.Unix(0, f.Op.Since)
	}
	return pf
}

func init() { job.Public = func(f job.Fate) any { return fateOf(f) } }

// Fates reads every rank's entry in the shared failure table, indexed
// by world rank of the job's first world, then the rank slots of spawned
// worlds (UniverseSize in all; a slot never started is StateUnstarted).
func (w *World) Fates() []Fate {
	fs := make([]Fate, w.e.n)
	for r := range fs {
		fs[r] = fateOf(w.e.t.Fate(r))
	}
	return fs
}

// String describes where a rank is, for deadline reports: "rank 2:
// alive; blocked in Recv(peer=1, tag=5) for 2s", "rank 3: exited with
// code 3, not reaped (failure table: failed, detected by robust-futex);
// last blocked in Win.Lock".
func (f Fate) String() string {
	detected := ""
	if f.State == StateFailed && f.Cause != "" {
		detected = "detected by " + f.Cause
	}
	var s string
	blocked := f.Blocked
	switch {
	case f.Process != "":
		s = fmt.Sprintf("rank %d: %s (failure table: %s", f.Rank, f.Process, f.State)
		if detected != "" {
			s += ", " + detected
		}
		s += ")"
		// A process that is not running waits for nothing.
		blocked = blocked && f.Process == "still running"
	case detected != "":
		s = fmt.Sprintf("rank %d: %s (%s)", f.Rank, f.State, detected)
	default:
		s = fmt.Sprintf("rank %d: %s", f.Rank, f.State)
	}
	if f.Op == "" {
		return s
	}
	if blocked {
		s += "; blocked in " + f.Op
	} else {
		s += "; last blocked in " + f.Op
	}
	if f.OpPeer != ProcNull { // many-request waits and collectives record no peer
		s += fmt.Sprintf("(peer=%s, tag=%s)", peerString(f.OpPeer), tagString(f.OpTag))
	}
	if blocked && !f.OpSince.IsZero() {
		s += fmt.Sprintf(" for %v", time.Since(f.OpSince).Round(time.Millisecond))
	}
	return s
}

func peerString(p int) string {
	if p == AnySource {
		return "any"
	}
	return strconv.Itoa(p)
}

func tagString(t int) string {
	if t == AnyTag {
		return "any"
	}
	return strconv.Itoa(t)
}

func (e *engine) String() string { return fmt.Sprintf("rank %d/%d", e.me, e.n) }

// ContextsInUse is how many of the job's context slots (one per
// communicator alive at some rank, the world's included) are in use: a
// diagnostic for leak checks. A slot returns to the pool once every
// member has freed its communicator, died or finalized.
func (w *World) ContextsInUse() int { return job.MaxContexts - w.e.t.FreeContexts() }
