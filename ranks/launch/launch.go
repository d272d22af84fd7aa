// Package launch starts and watches the ranks of a job: it creates the
// shared segment, starts one process per rank with the segment as an
// inherited descriptor, binds them to CPUs, captures their output, reaps
// them, records how each one ended in the failure table and wakes the
// survivors. shmrun and ranktest are built on it; a node agent that
// starts local ranks itself uses it the same way.
//
// A rank that calls Comm.Abort ends the job: the launcher kills every
// rank (Job.Aborted says who called it, with which code). From the abort
// on the failure table is frozen, so that no rank reacts to the others'
// deaths: the ranks it kills stay alive there, and their Exit.Failed is
// false.
//
// Ranks die with the process that started them (a parent-death signal),
// and the segment file is unlinked as soon as it is created, so nothing is
// left behind even when the launcher is killed with SIGKILL.
package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ring"
	"github.com/shmpi/shmpi/shm"
)

// Layout is the set of sizes of a job's segment: ranks, inbox slots,
// handshake slots, eager chunks and their size.
type Layout = job.Layout

// DefaultLayout is the layout for n ranks (SHMPI_CHUNK_SIZE and
// SHMPI_CHUNK_COUNT, if set, override the chunks).
func DefaultLayout(n int) Layout { return job.DefaultLayout(n) }

// IsRank reports whether this process was started as a rank of a job by
// a launcher (as opposed to a singleton, or a program that starts jobs).
func IsRank() bool { return job.IsRank() }

// Config describes a job.
type Config struct {
	N    int      // number of ranks
	Path string   // program to run
	Args []string // its arguments (without the program name)
	// Env is the ranks' environment; nil means the launcher's own. An
	// entry SHMPI_KILL=RANK@DURATION,RANK@op=N,... injects failures (see
	// docs/fault-tolerance.md#injecting-failures; shmrun --kill sets it).
	Env []string
	Dir string // working directory; "" means the launcher's

	// Bind pins each rank to one CPU (bindCPU says which).
	Bind  bool
	Cores int // CPUs the job runs on; 0 means runtime.NumCPU()

	// Stdin feeds rank 0's standard input; the others get /dev/null.
	Stdin io.Reader
	// Output returns where rank r's standard output and error go. nil
	// writers are discarded; *os.File writers are handed to the child
	// directly, others are fed through a pipe.
	Output func(r int) (stdout, stderr io.Writer)
	// RankEnv adds environment entries for rank r.
	RankEnv func(r int) []string

	// Layout overrides the default segment layout for N ranks.
	Layout *Layout

	// Universe is the number of rank slots of the segment: N for the
	// first ranks, the rest for ranks they spawn (ranks.Comm.Spawn;
	// MPI_UNIVERSE_SIZE). 0 or less than N means N: no room to spawn.
	// Each slot costs the segment what a rank does (SegmentNeed).
	Universe int

	// World and First make the job one node's part of a world that spans
	// nodes (a node agent's): the world has World ranks, of which the N
	// started here are world ranks First to First+N-1. The segment has a
	// slot for every rank of the world; the agent serves the others'
	// (Job.Proxy). World 0 means N: the whole world runs here. Such a
	// job cannot spawn.
	World int
	First int

	// AbortOnFailure says that the caller ends the job at the first
	// failure (shmrun without --ft). The ranks are told (job.EnvFT), so
	// that World.FT reports false. Left false, as in ranktest, failures
	// are tolerated: the launcher itself only records them.
	AbortOnFailure bool
}

// Exit is one rank's end, as the launcher saw it.
type Exit struct {
	Rank  int
	Pid   int
	Code  int // exit code, or -1 if killed by a signal
	Sig   syscall.Signal
	Fate  ranks.Fate // the failure table's entry after the exit was recorded
	Error error      // the wait error, if the process could not be waited for
	// NoInit: the process ended without completing ranks.Init, so it
	// never was a rank of the job (a program that is not an MPI program,
	// or that failed before or in Init).
	NoInit bool
	At     time.Time // when the launcher reaped the process
	// Abort is set for the rank whose Comm.Abort ended the job (the
	// launcher killed it with the others, so Sig is SIGKILL).
	Abort *Abort
}

// Failed reports whether the rank ended without finalizing (a failure in
// ULFM terms).
func (x Exit) Failed() bool { return x.Fate.State == ranks.StateFailed }

// Abnormal reports whether the rank failed or exited non-zero.
func (x Exit) Abnormal() bool { return x.Failed() || x.Code != 0 }

// How says how the process ended, for messages: "killed by signal 9
// (SIGKILL)", "exited with code 3 without finalizing", "exited with code
// 1 without calling Init", ...
func (x Exit) How() string {
	switch {
	case x.Error != nil:
		return x.Error.Error()
	case x.Abort != nil:
		return fmt.Sprintf("called Abort(%d)", x.Abort.Code)
	case x.Sig != 0 && x.NoInit && x.Fate.Pid != 0:
		return fmt.Sprintf("killed by signal %d (%s) during Init", int(x.Sig), SignalName(x.Sig))
	case x.NoInit && x.Fate.Pid != 0:
		return fmt.Sprintf("exited with code %d during Init", x.Code)
	case x.Sig != 0 && x.NoInit:
		return fmt.Sprintf("killed by signal %d (%s) before calling Init", int(x.Sig), SignalName(x.Sig))
	case x.Sig != 0:
		return fmt.Sprintf("killed by signal %d (%s)", int(x.Sig), SignalName(x.Sig))
	case x.NoInit:
		return fmt.Sprintf("exited with code %d without calling Init", x.Code)
	case x.Fate.State == ranks.StateFailed:
		return fmt.Sprintf("exited with code %d without finalizing", x.Code)
	default:
		return fmt.Sprintf("exited with code %d", x.Code)
	}
}

// SignalName is the name of sig as in C, "SIGKILL", or its description
// if it has none.
func SignalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return sig.String()
}

// Abort is a call of Comm.Abort that ended a job.
type Abort struct {
	Rank int // the caller's world rank
	Code int // the code it passed
}

// Status is the exit status that the code asks of the launcher: its low
// 8 bits, as exit(3) takes them, except that a code that is not 0 never
// gives 0 (256 gives 1).
func (a Abort) Status() int { return job.AbortStatus(a.Code) }

func (a Abort) String() string { return fmt.Sprintf("rank %d called Abort(%d)", a.Rank, a.Code) }

// Job is a running job.
type Job struct {
	cfg       Config
	seg       *shm.Segment
	m         *job.Map
	procs     []*os.Process
	exits     chan Exit
	done      chan struct{}
	abortDone chan struct{} // closed when watchAbort returns
	started   time.Time     // just before rank 0 was started

	mu      sync.Mutex
	results []Exit // by rank slot; Pid 0 until reaped
	alive   int    // ranks started and not reaped
	killed  bool   // Kill was called: no more spawned ranks start
	abort   *Abort // set once a rank's Abort is seen
	copies  sync.WaitGroup
}

// Start creates the segment and starts every rank.
func Start(cfg Config) (*Job, error) {
	if cfg.N <= 0 {
		return nil, fmt.Errorf("launch: need at least one rank, got %d", cfg.N)
	}
	if cfg.Cores <= 0 {
		cfg.Cores = runtime.NumCPU()
	}
	world := cfg.N
	if cfg.World != 0 {
		if cfg.World < cfg.N || cfg.First < 0 || cfg.First+cfg.N > cfg.World {
			return nil, fmt.Errorf("launch: ranks %d to %d of a world of %d", cfg.First, cfg.First+cfg.N-1, cfg.World)
		}
		world = cfg.World
		cfg.Universe = 0
	} else {
		cfg.First = 0
	}
	u := max(cfg.Universe, world)
	lay := job.DefaultLayoutFor(u, cfg.Cores)
	if cfg.Layout != nil {
		lay = *cfg.Layout
		lay.Ranks = u
	}
	lay.World = world
	if cfg.World != 0 {
		lay.First, lay.Local = cfg.First, cfg.N
		// Chunk sizes follow the ranks that share this node's cores.
		if cfg.Layout == nil {
			lay.ChunkSize = job.DefaultLayoutFor(cfg.N, cfg.Cores).ChunkSize
		}
	}
	if err := checkResources(lay, cfg.Cores); err != nil {
		return nil, err
	}
	seg, err := job.NewSegment(lay, cfg.Cores)
	if err != nil {
		return nil, err
	}
	j := &Job{cfg: cfg, seg: seg, m: job.NewMap(seg), procs: make([]*os.Process, u), exits: make(chan Exit, u),
		done: make(chan struct{}), abortDone: make(chan struct{}), results: make([]Exit, u), alive: cfg.N}
	j.m.ServeSpawns()
	started := make(chan error, 1)
	// The parent-death signal is tied to the thread that forks, so every
	// rank is started from one locked thread that lives until the job
	// ends.
	go j.keeper(started)
	if err := <-started; err != nil {
		return nil, err
	}
	return j, nil
}

func (j *Job) keeper(started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var orig unix.CPUSet
	bind := j.cfg.Bind && unix.SchedGetaffinity(0, &orig) == nil
	var cpus []int
	if bind {
		cpus = CPUList(&orig)
		bind = len(cpus) > 0
	}
	j.started = time.Now()
	first := j.cfg.First
	for i := range j.cfg.N {
		r := first + i
		if bind {
			var set unix.CPUSet
			set.Set(cpus[bindCPU(i, j.cfg.N, len(cpus))])
			unix.SchedSetaffinity(0, &set) // the child inherits it
		}
		if err := j.startRank(r, j.cfg.Path, j.cfg.Args, nil); err != nil {
			if bind {
				unix.SchedSetaffinity(0, &orig)
			}
			for q := first; q < r; q++ {
				j.procs[q].Kill()
			}
			for q := first; q < r; q++ {
				j.procs[q].Wait()
			}
			j.seg.Close()
			started <- fmt.Errorf("launch: start rank %d: %w", r, err)
			return
		}
	}
	if bind {
		unix.SchedSetaffinity(0, &orig)
	}
	go j.watchAbort()
	for i := range j.cfg.N {
		go j.reap(first + i)
	}
	started <- nil
	// Spawned ranks are started from this thread too, for the
	// parent-death link. The last exit closes the mailbox (exitOne).
	for {
		base, procs, ok, err := j.m.WaitSpawn()
		if !ok {
			break
		}
		j.m.AnswerSpawn(j.serveSpawn(base, procs, err))
	}
	// Every rank has exited: the last exit's critical section (and every
	// send on exits, made under mu) is before this one, which the race
	// detector cannot see through the segment's word.
	j.mu.Lock()
	alive := j.alive
	j.mu.Unlock()
	if alive != 0 {
		panic("launch: the spawn mailbox closed with ranks alive")
	}
	// Stop the abort watcher before the segment it sleeps in goes away
	// (Wait unmaps it after done).
	j.m.CloseAbort()
	<-j.abortDone
	close(j.exits)
	j.seg.MarkClosed()
	close(j.done)
}

// serveSpawn starts the processes of a spawn request as rank slots base,
// base+1, ..., and returns how many could not be started: all of them if
// any could not (it kills those it started: a spawn starts all or
// nothing), and declares those failed.
func (j *Job) serveSpawn(base int, cmds []job.SpawnProc, err error) int {
	var procs []job.SpawnProc // one per process
	for _, c := range cmds {
		for range c.N {
			procs = append(procs, c)
		}
	}
	j.mu.Lock()
	if err != nil || base < j.cfg.N || base+len(procs) > len(j.procs) || j.alive == 0 || j.killed {
		j.mu.Unlock()
		return len(procs)
	}
	for i := range procs {
		if j.procs[base+i] != nil {
			j.mu.Unlock()
			return len(procs)
		}
	}
	j.alive++ // the request's own: no exit may end the job while it starts ranks
	j.mu.Unlock()
	defer j.exitOne()
	for i, p := range procs {
		r := base + i
		err := j.startRank(r, p.Path, p.Args, p.Env)
		var stop bool
		if err == nil {
			j.mu.Lock()
			j.alive++
			// Kill (an abort, shmrun ending the job) took its list of
			// processes before this one was in it, or will see it.
			stop = j.killed
			j.mu.Unlock()
			go j.reap(r)
		}
		if err != nil || stop {
			for k := i + 1; k < len(procs); k++ {
				job.DeclareFailed(j.seg, base+k)
			}
			if err != nil {
				i-- // startRank declared r failed
			}
			for k := range i + 1 {
				j.procs[base+k].Kill()
			}
			return len(procs)
		}
	}
	return 0
}

// withoutRseq turns glibc's restartable sequences off in env
// (GLIBC_TUNABLES=glibc.pthread.rseq=0) unless env already says what to
// do with them. Ranks that outnumber cores are switched out on nearly
// every wait, and on each return to a thread that glibc registered the
// kernel updates its rseq area (__rseq_handle_notify_resume, 3.5-4% of
// the samples of OSU's C osu_allreduce at 8 ranks on 2 cores); without
// it that benchmark took 0.91× the time (median of 24 interleaved
// rounds, 2026-11-26). Go programs without cgo never register. glibc
// then answers sched_getcpu with the vDSO instead of the rseq area.
func withoutRseq(env []string) []string {
	const key = "GLIBC_TUNABLES="
	for i := len(env) - 1; i >= 0; i-- {
		v, ok := strings.CutPrefix(env[i], key)
		if !ok {
			continue
		}
		// The last entry is the one the program sees.
		if strings.Contains(v, "glibc.pthread.rseq=") {
			return env
		}
		out := append([]string(nil), env...)
		if v == "" {
			out[i] = key + "glibc.pthread.rseq=0"
		} else {
			out[i] = key + v + ":glibc.pthread.rseq=0"
		}
		return out
	}
	return append(env, key+"glibc.pthread.rseq=0")
}

// startRank starts rank slot r running path with args; extra is added to
// its environment (a spawned rank's world and parents).
func (j *Job) startRank(r int, path string, args, extra []string) error {
	cmd := exec.Command(path, args...)
	cmd.Dir = j.cfg.Dir
	env := j.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	// Appended last but for RankEnv's, so that values inherited from the
	// environment do not speak for this job (the last entry wins).
	env = append(append([]string(nil), env...), job.RankEnv(j.seg, r, 3, !j.cfg.AbortOnFailure)...)
	if j.cfg.RankEnv != nil {
		env = append(env, j.cfg.RankEnv(r)...)
	}
	env = append(env, extra...)
	if j.cfg.N > j.cfg.Cores {
		env = withoutRseq(env)
	}
	cmd.Env = env
	cmd.ExtraFiles = []*os.File{j.seg.File()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var toClose []*os.File
	if r == j.cfg.First && j.cfg.Stdin != nil {
		if f, ok := j.cfg.Stdin.(*os.File); ok {
			cmd.Stdin = f
		} else {
			pr, pw, err := os.Pipe()
			if err != nil {
				return err
			}
			cmd.Stdin = pr
			toClose = append(toClose, pr)
			go func() { io.Copy(pw, j.cfg.Stdin); pw.Close() }()
		}
	}
	if j.cfg.Output != nil {
		o, e := j.cfg.Output(r)
		for i, w := range []io.Writer{o, e} {
			var f *os.File
			switch w := w.(type) {
			case nil:
				continue
			case *os.File:
				f = w
			default:
				pr, pw, err := os.Pipe()
				if err != nil {
					return err
				}
				f = pw
				toClose = append(toClose, pw)
				j.copies.Add(1)
				go func() {
					defer j.copies.Done()
					io.Copy(w, pr)
					pr.Close()
				}()
			}
			if i == 0 {
				cmd.Stdout = f
			} else {
				cmd.Stderr = f
			}
		}
	}
	err := cmd.Start()
	for _, f := range toClose {
		f.Close() // the child has its copies
	}
	if err != nil {
		job.DeclareFailed(j.seg, r)
		return err
	}
	j.mu.Lock()
	j.procs[r] = cmd.Process
	j.mu.Unlock()
	return nil
}

func (j *Job) reap(r int) {
	p := j.procs[r]
	ps, err := p.Wait()
	x := Exit{Rank: r, Pid: p.Pid, Code: -1, At: time.Now()}
	// Read before RecordExit, which turns a non-zero exit of an unstarted
	// rank into a failure. Nothing else moves a rank out of unstarted: it
	// has no liveness word armed for a watcher to see die.
	x.NoInit = job.FateOf(j.seg, r).State == job.StUnstarted
	if err != nil {
		x.Error = err
	} else if ws, ok := ps.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			x.Sig = ws.Signal()
		} else {
			x.Code = ws.ExitStatus()
		}
	}
	// An abort is recorded before the launcher kills anyone, so every
	// exit it causes finds it here.
	a, aborted := j.Aborted()
	if aborted && a.Rank == r {
		x.Abort = &a
	}
	if r >= j.cfg.First+j.cfg.N && x.NoInit && x.Error == nil && x.Code == 0 && x.Sig == 0 {
		// A spawned process that never became a rank: unlike a program
		// of the first world that is not an MPI program, it has parents
		// that hold an intercommunicator with it, and must hear of it.
		job.DeclareFailed(j.seg, r)
	}
	x.Fate = public(job.RecordExit(j.seg, r, job.Exit{Code: x.Code, Signal: int(x.Sig)}))
	j.mu.Lock()
	j.results[r] = x
	j.exits <- x // room for every rank slot: never blocks
	j.mu.Unlock()
	j.exitOne()
}

// exitOne counts a rank's exit (or the end of a spawn request); the last
// closes the spawn mailbox, which ends the keeper, which ends the job.
func (j *Job) exitOne() {
	j.mu.Lock()
	j.alive--
	last := j.alive == 0
	j.mu.Unlock()
	if last {
		j.m.CloseSpawn()
	}
}

// watchAbort sleeps until a rank calls Comm.Abort, then kills every rank;
// it returns without doing anything once every rank has exited.
func (j *Job) watchAbort() {
	defer close(j.abortDone)
	if _, _, ok := j.m.WaitAbort(); ok {
		j.Aborted() // remember it before the kills, whose exits report it
		j.Kill()
	}
}

// Aborted reports whether a rank's Comm.Abort ended the job, and which.
func (j *Job) Aborted() (Abort, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.abort == nil && j.seg != nil {
		if r, code, ok := j.m.Aborted(); ok {
			j.abort = &Abort{Rank: r, Code: code}
		}
	}
	if j.abort == nil {
		return Abort{}, false
	}
	return *j.abort, true
}

// public converts a failure table record to ranks.Fate (through package
// ranks, which owns that conversion).
func public(f job.Fate) ranks.Fate { return job.Public(f).(ranks.Fate) }

// Started is when the job started: the moment before its first rank was
// started. Failure times are reported relative to it.
func (j *Job) Started() time.Time { return j.started }

// Exits delivers each rank's exit as it happens, spawned ranks' too; it
// is closed after the last.
func (j *Job) Exits() <-chan Exit { return j.exits }

// Done is closed when every rank has exited.
func (j *Job) Done() <-chan struct{} { return j.done }

// Wait waits for every rank and its output, and returns their exits in
// rank order. It releases the segment.
func (j *Job) Wait() []Exit {
	<-j.done
	j.copies.Wait()
	j.Aborted() // read the record while the segment is there
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seg != nil {
		j.seg.Close()
		j.seg = nil
	}
	var out []Exit
	for r, x := range j.results {
		if j.procs[r] != nil {
			out = append(out, x)
		}
	}
	return out
}

// WaitTimeout is Wait with a deadline; ok is false if it passed (the job
// is still running).
func (j *Job) WaitTimeout(d time.Duration) ([]Exit, bool) {
	select {
	case <-j.done:
		return j.Wait(), true
	case <-time.After(d):
		return nil, false
	}
}

// Signal sends sig to rank r.
func (j *Job) Signal(r int, sig os.Signal) error {
	j.mu.Lock()
	var p *os.Process
	if r >= 0 && r < len(j.procs) {
		p = j.procs[r]
	}
	j.mu.Unlock()
	if p == nil {
		return fmt.Errorf("launch: no rank %d", r)
	}
	err := p.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// SignalAll sends sig to every rank still running.
func (j *Job) SignalAll(sig os.Signal) {
	for _, r := range j.Ranks() {
		j.Signal(r, sig)
	}
}

// Ranks lists the rank slots started so far: the first N ranks, then
// the spawned ones.
func (j *Job) Ranks() []int {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []int
	for r, p := range j.procs {
		if p != nil {
			out = append(out, r)
		}
	}
	return out
}

// Kill kills every rank with SIGKILL; a spawn being served starts no
// more ranks and kills those it started.
func (j *Job) Kill() {
	j.mu.Lock()
	j.killed = true
	j.mu.Unlock()
	j.SignalAll(syscall.SIGKILL)
}

// Pid is rank r's process id, 0 for a slot never started.
func (j *Job) Pid(r int) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r < 0 || r >= len(j.procs) || j.procs[r] == nil {
		return 0
	}
	return j.procs[r].Pid
}

// Fates reads the failure table: what each rank is doing or how it ended.
// It is valid until Wait returns.
func (j *Job) Fates() []ranks.Fate {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seg == nil {
		return nil
	}
	// The started ranks only: a slot kept for spawns is nobody.
	var fs []ranks.Fate
	m := job.NewMap(j.seg)
	for r, p := range j.procs {
		if p != nil {
			fs = append(fs, public(m.Fate(r)))
		}
	}
	return fs
}

// Unfinished lists, for a report of a job that did not end in time, the
// ranks that keep it from ending and those whose end the failure table
// does not show yet: every rank not reaped, and every reaped one that the
// table still calls alive or unstarted. Their Fate.Process says what the
// launcher sees of the process when the table does not: "exited with
// code 3, not reaped" (a zombie), "stopped", "still running" (for a rank
// the table calls finalized or failed), or how a reaped one ended. It is
// valid until Wait returns.
func (j *Job) Unfinished() []ranks.Fate {
	fs := j.Fates()
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []ranks.Fate
	for _, f := range fs {
		r := f.Rank
		ended := f.State == ranks.StateFinalized || f.State == ranks.StateFailed
		if x := j.results[r]; x.Pid != 0 { // reaped
			if ended {
				continue
			}
			f.Process = x.How()
		} else {
			f.Process = procState(j.procs[r].Pid)
			if f.Process == "" && ended {
				f.Process = "still running"
			}
		}
		out = append(out, f)
	}
	return out
}

// procState says what /proc shows of process pid when it is not running
// or sleeping normally: a zombie (exited, not reaped), a process that is
// exiting, a stopped one; "" otherwise.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "gone"
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	// Fields from state (stat's field 3) on: flags is field 9,
	// num_threads 20, exit_code (as waitpid reports it) 52.
	field := func(k int) int64 {
		if k-3 >= len(f) {
			return 0
		}
		v, _ := strconv.ParseInt(f[k-3], 10, 64)
		return v
	}
	if len(f) == 0 {
		return ""
	}
	const pfExiting = 0x4
	ws := syscall.WaitStatus(field(52))
	ended := fmt.Sprintf("exited with code %d", ws.ExitStatus())
	if ws.Signaled() {
		ended = fmt.Sprintf("killed by signal %d (%s)", int(ws.Signal()), SignalName(ws.Signal()))
	}
	switch f[0] {
	case "Z", "X":
		if n := field(20); n > 1 {
			return fmt.Sprintf("main thread exited, %d threads still running", n-1)
		}
		return ended + ", not reaped"
	case "T":
		return "stopped"
	case "t":
		return "stopped by a debugger"
	}
	if field(9)&pfExiting != 0 {
		return ended + ", exiting"
	}
	return ""
}

// Running lists the ranks that have not exited.
func (j *Job) Running() []int {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []int
	for r, x := range j.results {
		if x.Pid == 0 && j.procs[r] != nil {
			out = append(out, r)
		}
	}
	return out
}

// SegmentSize is the size of the job's shared segment in bytes.
func (j *Job) SegmentSize() int { return j.seg.Size() }

// SegmentSize is the size in bytes of the shared segment of a job of
// layout l whose ranks outnumber its cores, or a lower bound of it for
// layouts too large for shm to size exactly (math.MaxUint64 if it
// overflows). Ranks that do not outnumber the cores (at most 64 of them)
// add 96 KiB each of collective scratch (internal/job.ScratchMemberFor).
func SegmentSize(l Layout) uint64 {
	if size, err := l.Spec(1).Size(); err == nil {
		return size
	}
	return minSegmentSize(l)
}

// SegmentCost splits the segment of layout l into what each rank adds and
// what the job needs whatever its size (the header, the context slots):
// SegmentSize(l) = fixed + perRank × l.Ranks, give or take the rounding
// of a few per-rank bitmaps to whole cache lines.
func SegmentCost(l Layout) (perRank, fixed uint64) {
	one := l
	one.Ranks = 1
	s1 := SegmentSize(one)
	if l.Ranks <= 1 {
		two := l
		two.Ranks = 2
		perRank = SegmentSize(two) - s1
	} else {
		perRank = (SegmentSize(l) - s1) / uint64(l.Ranks-1)
	}
	return perRank, s1 - min(perRank, s1)
}

// SegmentNeed says in words what a job of layout l needs of /dev/shm,
// "828 KiB a rank and 804 KiB for the job", as shmrun's help and the
// launcher's refusals say it.
func SegmentNeed(l Layout) string {
	perRank, fixed := SegmentCost(l)
	return fmt.Sprintf("%s a rank and %s for the job", sizeString(perRank), sizeString(fixed))
}

// The segment is made in /dev/shm (package shm).
const shmDir = "/dev/shm"

// checkResources refuses a job that cannot run before anything is made:
// a segment larger than the free space of /dev/shm would be created
// sparse, and its pages would then fail (SIGBUS) as ranks touch them; and
// more ranks than RLIMIT_NPROC allows would fail to fork part way.
func checkResources(l Layout, cores int) error {
	var st unix.Statfs_t
	if unix.Statfs(shmDir, &st) == nil {
		size, exact := minSegmentSize(l), "at least "
		if s, err := l.Spec(max(cores, 1)).Size(); err == nil {
			size, exact = s, ""
		}
		if free := st.Bavail * uint64(st.Bsize); size > free {
			return fmt.Errorf("launch: %d ranks need a shared segment of %s%s (%s), but %s has %s free",
				l.Ranks, exact, sizeString(size), SegmentNeed(l), shmDir, sizeString(free))
		}
	}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &lim) == nil && lim.Cur != unix.RLIM_INFINITY &&
		uint64(l.Ranks) >= lim.Cur && !nprocExempt() {
		// The limit counts every process and thread of the user, this
		// launcher included: a job of as many ranks cannot start.
		return fmt.Errorf("launch: %d ranks need %d processes, but the process limit (RLIMIT_NPROC, ulimit -u) is %d",
			l.Ranks, l.Ranks, lim.Cur)
	}
	return nil
}

// nprocExempt reports whether the kernel lets this process fork past
// RLIMIT_NPROC: it does for root of the initial user namespace and for
// holders of CAP_SYS_RESOURCE or CAP_SYS_ADMIN there.
func nprocExempt() bool {
	m, err := os.ReadFile("/proc/self/uid_map")
	if err != nil || strings.Join(strings.Fields(string(m)), " ") != "0 0 4294967295" {
		return false // a user namespace: its root and capabilities do not count
	}
	if os.Getuid() == 0 {
		return true
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(status), "\n") {
		var caps uint64
		if _, err := fmt.Sscanf(line, "CapEff: %x", &caps); err == nil {
			return caps&(1<<unix.CAP_SYS_RESOURCE|1<<unix.CAP_SYS_ADMIN) != 0
		}
	}
	return false
}

// minSegmentSize is a lower bound of the size in bytes of the segment
// job.NewSegment makes for layout l (math.MaxUint64 if it overflows),
// for layouts too large for shm to size exactly: the header, and each
// rank's eager chunks, inbox ring and collective lines, which are most
// of it.
func minSegmentSize(l Layout) uint64 {
	chunks := mulSat(uint64(max(l.ChunkCount, 0)), uint64(max(l.ChunkSize, 0)))
	inbox := addSat(ring.HeaderSize, mulSat(uint64(max(l.InboxSlots, 0)), ring.SlotSize))
	perRank := addSat(chunks, inbox)
	// The collectives' lines: a line per rank in every context slot.
	coll := mulSat(job.MaxContexts*64, uint64(max(l.Ranks, 0)))
	return addSat(addSat(shm.HeaderSize, coll), mulSat(uint64(max(l.Ranks, 0)), perRank))
}

func mulSat(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

func addSat(a, b uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 {
		return math.MaxUint64
	}
	return s
}

// sizeString prints a byte count in binary units, to a tenth: "700 KiB",
// "44.2 MiB".
func sizeString(b uint64) string {
	v, unit := float64(b), "B"
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + unit
}

// CPUList lists the CPUs in set, in ascending order.
func CPUList(set *unix.CPUSet) []int {
	var cpus []int
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// bindCPU is the index, among cpus CPUs, of the CPU that rank r of an
// n-rank job is pinned to: r itself while ranks do not outnumber CPUs,
// else blocks of neighbouring ranks (r*cpus/n). Blocks keep a chain of
// neighbours (a ring, a halo exchange) on one CPU, where a wake-up is a
// local switch: round robin made every hop of examples/ring at 64 ranks
// on 2 CPUs wake the other CPU, 52 µs a hop against 20-23 µs in blocks
// (both with one P a rank; 10 µs in blocks with two, ranks' engine.go;
// 2026-11-25).
func bindCPU(r, n, cpus int) int {
	if n <= cpus {
		return r % cpus
	}
	return r * cpus / n
}

// Proxy is a node agent's stand-in, in this node's segment, for a rank
// that runs on another node (Config.World): what this node's ranks send
// to that rank arrives in it, and it sends to them what that rank sent
// (docs/nodes.md). Use one from one goroutine at a time.
type Proxy struct {
	p    any
	Rank int // the world rank it stands in for
}

// Proxy claims world rank r, which must run on another node, for this
// process.
func (j *Job) Proxy(r int) (*Proxy, error) {
	j.mu.Lock()
	seg := j.seg
	j.mu.Unlock()
	if seg == nil {
		return nil, errors.New("launch: the job has ended")
	}
	p, err := ext.NewProxy(seg, r)
	if err != nil {
		return nil, err
	}
	return &Proxy{p: p, Rank: r}, nil
}

// Take receives the oldest message this node's ranks sent to the proxied
// rank, if there is one (ok), in whole: its wire context, source (a
// world rank), tag and bytes (in a buffer alloc returns; nil: make). For
// a synchronous send (Ssend) that has not completed, ack is not nil:
// call it once the proxied rank's node knows the outcome of the send
// there (SyncOutcome), and the sender completes with it. err is the
// receive's error (a sender that failed during a large message's copy);
// the message is gone then.
//
// A message of more than lendAbove bytes (0: none) sent from AllocMem
// memory is lent instead of copied: data is the sender's buffer, mapped
// in this process, and release is not nil. Its sender's send completes
// only once release is called, after which data must not be read.
func (p *Proxy) Take(alloc func(n int) []byte, lendAbove int) (ctx uint32, src, tag int, data []byte, ack func(outcome uint8), release func(), ok bool, err error) {
	if alloc == nil {
		alloc = func(n int) []byte { return make([]byte, n) }
	}
	return ext.ProxyTake(p.p, alloc, lendAbove)
}

// Outcomes of a synchronous send at its receiver's node, for Take's ack.
const (
	SyncMatched = 0 // the receive matched
	SyncRevoked = 1 // the communicator was revoked there
	SyncDropped = 2 // the receiver freed the communicator without receiving it
	SyncFailed  = 3 // the receiver failed, or left a collective on a member's failure
)

// SyncOutcome is the outcome of a proxy's synchronous send (Send with
// sync) that completed with err.
func SyncOutcome(err error) uint8 {
	switch {
	case err == nil:
		return SyncMatched
	case errors.Is(err, ranks.ErrRevoked):
		return SyncRevoked
	case errors.Is(err, ranks.ErrProcFailed):
		return SyncFailed
	}
	return SyncDropped
}

// Send starts sending, as the proxied rank, a message it sent from its
// node: to world rank dst on the communicator of wire context ctx,
// synchronously if sync (the request completes when the receive
// matches). data must stay untouched until the request completes.
func (p *Proxy) Send(ctx uint32, dst, tag int, data []byte, sync bool) (*ranks.Request, error) {
	r, err := ext.ProxySend(p.p, ctx, dst, tag, data, sync)
	if err != nil {
		return nil, err
	}
	return r.(*ranks.Request), nil
}

// Late is a proxy's send whose bytes are still on their way from the
// proxied rank's node (SendLate). Call its methods until the request
// completes, from the goroutine that uses the proxy.
type Late interface {
	// Target says where the bytes go now: LateWait, the receiver has not
	// matched (wait, or receive them into a buffer and call Filled);
	// LateDirect, into dst, the receiver's own buffer (then Filled(nil));
	// LateBuffer, into a buffer of the caller's (then Filled with it);
	// LateDone, nowhere: the send completed without them (the receiver
	// is gone, or refused the message).
	Target() (dst []byte, state int)
	// Filled says the bytes are in data, which must stay untouched until
	// the request completes, or, for nil, in the buffer Target gave.
	Filled(data []byte)
	// Lost says the bytes will never come: the receiver completes with
	// the sender's failure.
	Lost()
}

// Late's Target states.
const (
	LateWait   = ext.LateWait
	LateDirect = ext.LateDirect
	LateBuffer = ext.LateBuffer
	LateDone   = ext.LateDone
)

// SendLate starts sending, as the proxied rank, a message of n bytes
// that have not arrived from its node yet: its receiver can match it
// now, and its bytes can then go straight into the receiver's buffer.
// late is nil when the message cannot be sent so (too short for a
// rendezvous, or no handshake slot free): then send it with Send once
// its bytes are here.
func (p *Proxy) SendLate(ctx uint32, dst, tag, n int) (req *ranks.Request, late Late, err error) {
	r, l, err := ext.ProxySendLate(p.p, ctx, dst, tag, n)
	if err != nil || l == nil {
		return nil, nil, err
	}
	return r.(*ranks.Request), l.(Late), nil
}

// Finalize marks the proxied rank finalized in this node's segment, as
// its Finalize did at its node. Call it once every message the rank sent
// before has been handed to this node's ranks.
func (p *Proxy) Finalize() { ext.ProxyFinalize(p.p) }

// Epoch is the failure table's epoch: it moves whenever a rank's state
// changes (a failure declared, a Finalize), so a watcher reads Fates only
// when it moved. It is valid until Wait returns.
func (j *Job) Epoch() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seg == nil {
		return 0
	}
	return j.m.Epoch.Load()
}

// WaitEpoch sleeps until the failure table's epoch is no longer seen (a
// rank failed or finalized since the caller read it), or timeout passes.
func (j *Job) WaitEpoch(seen uint64, timeout time.Duration) {
	j.mu.Lock()
	m := j.m
	closed := j.seg == nil
	j.mu.Unlock()
	if closed {
		return
	}
	shm.FutexWait(m.EpochWord(), uint32(seen), timeout)
}

// DeclareFailed records in this node's failure table that world rank r,
// which runs on another node, has failed: every rank here sees it as it
// sees a local rank's death.
func (j *Job) DeclareFailed(r int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seg != nil {
		job.DeclareFailed(j.seg, r)
	}
}
