// Command shmrun starts an N-rank shmpi job on this node:
//
//	shmrun -n 64 ./app args...
//
// It creates the shared segment (unlinked at once, so it cannot leak),
// starts the ranks with the segment as an inherited descriptor, binds them
// to cores, forwards SIGINT and SIGTERM, feeds its standard input to rank
// 0, and watches every rank's exit. Ranks die with shmrun (parent-death
// signal), so killing shmrun with SIGKILL leaves no process and no file.
//
// Without --ft, the first rank to fail (exit without finalizing, or with a
// non-zero code) ends the job: shmrun kills the rest, says which rank died
// and how, and exits non-zero. With --ft the survivors are notified
// through the failure table and go on; shmrun ends with a line for each
// rank that failed (how it died, when, and who detected it) and one that
// says how many ranks completed, and exits 0 only if every rank completed
// (finalized and exited 0) but those that --kill or SHMPI_KILL killed.
// The ranks' World.FT says which of the two applies.
//
// A rank that calls Comm.Abort(code) ends the job with or without --ft:
// shmrun kills every rank, says "rank R called Abort(code)" and exits
// with the code.
//
// With --ft, --kill RANK@DURATION and --kill RANK@op=N inject failures:
// they reach every rank as SHMPI_KILL (job.EnvKill), and the named rank
// SIGKILLs itself that long after Init or inside its N-th shmpi call.
//
// SIGINT and SIGTERM are passed on to the ranks, and shmrun says that the
// job was interrupted (130) or terminated (143); a second one kills the
// ranks with SIGKILL, for ranks that ignore the first. The exit codes are
// listed in the help (usage).
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/internal/lineout"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
	"github.com/shmpi/shmpi/shm"
)

const version = "0.1.0"

// shmrun's own exit statuses. A rank's status is passed on as it is
// (a Go panic is 2), so shmrun's own avoid the small codes programs use:
// usage and start-up failures take the sysexits.h codes, the others the
// conventions of the shell and timeout(1).
const (
	exitUsage       = 64  // EX_USAGE: bad flags or arguments
	exitNoStart     = 71  // EX_OSERR: the job could not be started
	exitTimeout     = 124 // --timeout expired, as timeout(1)
	exitNotExec     = 126 // the program exists but cannot be executed, as sh
	exitNotFound    = 127 // no such program, as sh
	exitSignalBase  = 128 // + the signal that killed a rank, or that shmrun got, as sh
	exitRankDefault = 1   // a rank failed with exit code 0 (without Finalize)
)

func usage(w io.Writer) {
	fmt.Fprintf(w, `usage: shmrun [flags] program [args...]

Runs program as an N-rank shmpi job on this node.

flags:
  -n N                 number of ranks (default 1); their shared segment
                       (%s)
                       must fit in the free space of /dev/shm, and N under
                       the process limit (ulimit -u)
  --universe U         rank slots for the job (default N): the N ranks and
                       U-N slots for ranks they spawn (Comm.Spawn;
                       World.UniverseSize). Each slot costs the segment
                       what a rank does, used or not; a spawn past them
                       fails with ErrSpawn. Spawned ranks are started,
                       watched and reported like the first ones (--bind-to
                       does not pin them)
  --bind-to core|none  pin each rank to one core (default: core): rank r
                       to core r when N <= cores, else the ranks in
                       blocks of neighbours (rank r to core r*cores/N)
  --tag-output         prefix every output line with [rank]
  --timeout D          kill the job after duration D, which needs a unit
                       (30s, 1m30s, 500ms; 0 is no timeout), and report
                       the ranks still running and where they are blocked
  --ft                 fault tolerant: survivors of a failed rank go on
                       (World.FT is true); without it the first failure
                       ends the job (World.FT is false). At the end, a
                       line on stderr for each failed rank (how it died,
                       when in ms after the start, and which rank or the
                       launcher detected it) and one that says how many
                       ranks completed; the status is 0 only if every
                       rank completed (finalized and exited 0) but those
                       that --kill or SHMPI_KILL killed
  --kill R@D           with --ft, inject a failure: rank R SIGKILLs
  --kill R@op=N        itself D after its Init (D needs a unit: 20ms,
                       1.5s), or at its N-th entry into the runtime
                       (N >= 1: inside its N-th shmpi call; a collective
                       counts each of its steps). Repeatable;
                       the ranks get the list as SHMPI_KILL, replacing
                       an inherited one
  --version            print the version
  mpiexec's flags      -np N, --oversubscribe, --with-ft ulfm, -x VAR=VAL,
                       --mca K V ... are taken as mpiexec takes them, or
                       ignored with a note (one node)
  --help               print this help

A rank that calls Comm.Abort(code) ends the job, with or without --ft:
shmrun kills every rank and exits with the code.

SIGINT (Ctrl-C) and SIGTERM are passed on to every rank; a second one
kills the ranks with SIGKILL.

exit status:
  0      every rank finalized and exited 0 (with --ft, a rank that --kill
         or SHMPI_KILL killed may fail too, if another rank completed)
  N      the exit code of the rank that ended the job (with --ft: of the
         first that failed or exited non-zero), passed on as it is (a Go
         panic exits 2); 1 for a rank that exited 0 without finalizing;
         for Comm.Abort(code), the code's low 8 bits (never 0 for a code
         that is not 0). A rank's code may coincide with those below.
  64     usage error
  71     the job could not be started (too little free space in /dev/shm,
         the process limit, a failed fork)
  124    --timeout expired
  126    the program cannot be executed (permissions, format, a directory)
  127    the program was not found
  128+S  a rank was killed by signal S
  130    interrupted: shmrun got SIGINT (Ctrl-C)
  143    terminated: shmrun got SIGTERM
`, launch.SegmentNeed(launch.DefaultLayout(2)))
}

// usageError reports a usage error: one line, and where the help is,
// rather than the help itself, which would scroll the error away.
func usageError(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "shmrun: "+format+"\n", args...)
	fmt.Fprintln(os.Stderr, "Run 'shmrun --help' for usage.")
	return exitUsage
}

// timeoutFlag is --timeout. flag.Duration answers "1" with a bare "parse
// error" and takes "-5s" as no timeout.
type timeoutFlag time.Duration

func (d *timeoutFlag) String() string { return time.Duration(*d).String() }

func (d *timeoutFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return fmt.Errorf("a duration needs a unit, as in %ss or %sms", s, s)
		}
		return errors.New("not a duration such as 30s, 1m30s or 500ms")
	}
	if v < 0 {
		return errors.New("a timeout cannot be negative (0 means none)")
	}
	*d = timeoutFlag(v)
	return nil
}

// killFlag is --kill, repeatable: entries of job.EnvKill, each checked
// here but for its rank, which is checked against -n once every flag is
// parsed.
type killFlag []kill

type kill struct {
	rank int
	when string // "op=N" or a duration, normalized
	op   int64  // N of op=N, else 0
}

func (k kill) String() string { return strconv.Itoa(k.rank) + "@" + k.when }

func (f *killFlag) String() string {
	var s []string
	for _, k := range *f {
		s = append(s, k.String())
	}
	return strings.Join(s, ",")
}

func (f *killFlag) Set(s string) error {
	if strings.Contains(s, ",") {
		return errors.New("one kill per --kill (repeat the flag)")
	}
	rank, when, ok := strings.Cut(s, "@")
	if !ok {
		return errors.New("not RANK@DURATION or RANK@op=N")
	}
	r, err := strconv.Atoi(rank)
	if err != nil {
		return fmt.Errorf("%q is not a rank", rank)
	}
	k := kill{rank: r}
	if n, isOp := strings.CutPrefix(when, "op="); isOp {
		op, err := strconv.ParseInt(n, 10, 64)
		if err != nil || op < 1 {
			return fmt.Errorf("op= takes a call number of at least 1, not %q", n)
		}
		k.op, k.when = op, "op="+strconv.FormatInt(op, 10)
	} else {
		// time.ParseDuration takes a bare 0.
		d, err := time.ParseDuration(when)
		switch {
		case isNumber(when):
			return fmt.Errorf("a duration needs a unit, as in %ss or %sms", when, when)
		case err == nil && d < 0:
			return errors.New("a duration cannot be negative")
		case err == nil:
			k.when = d.String()
		default:
			return fmt.Errorf("%q is not a duration such as 20ms or 1.5s, or op=N", when)
		}
	}
	*f = append(*f, k)
	return nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// check checks the ranks against a job of n and returns the value of
// job.EnvKill.
func (f killFlag) check(n int) (string, error) {
	opAt := map[int]int64{}
	for _, k := range f {
		if k.rank < 0 || k.rank >= n {
			return "", fmt.Errorf("--kill %v: no rank %d in a job of %d (ranks 0 to %d)", k, k.rank, n, n-1)
		}
		if k.op == 0 {
			continue
		}
		if prev, ok := opAt[k.rank]; ok && prev != k.op {
			return "", fmt.Errorf("--kill %v: rank %d already dies at op=%d", k, k.rank, prev)
		}
		opAt[k.rank] = k.op
	}
	return f.String(), nil
}

// withEnv returns env with key set to val, replacing any inherited value.
func withEnv(env []string, key, val string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+val)
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("shmrun", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 1, "")
	universe := fs.Int("universe", 0, "")
	bindTo := fs.String("bind-to", "", "")
	tag := fs.Bool("tag-output", false, "")
	var timeout timeoutFlag
	fs.Var(&timeout, "timeout", "")
	ft := fs.Bool("ft", false, "")
	var kills killFlag
	fs.Var(&kills, "kill", "")
	showVersion := fs.Bool("version", false, "")
	help := fs.Bool("help", false, "")
	fs.BoolVar(help, "h", false, "")
	// mpiexec's and mpirun's flags, for the run scripts of test suites.
	args, exported, err := mpiexecArgs(args)
	if err != nil {
		return usageError("%v", err)
	}
	if err := fs.Parse(args); err != nil {
		return usageError("%v", err)
	}
	if *help {
		// To stdout, so that it can be paged: shmrun --help | less.
		usage(os.Stdout)
		return 0
	}
	if *showVersion {
		fmt.Printf("shmrun (shmpi) %s, segment layout version %d, %s\n", version, shm.Version, runtime.Version())
		return 0
	}
	if fs.NArg() == 0 {
		return usageError("no program given")
	}
	if *n < 1 {
		return usageError("-n must be at least 1, got %d", *n)
	}
	if *universe != 0 && *universe < *n {
		return usageError("--universe must be at least -n (%d), got %d", *n, *universe)
	}
	var env []string // nil: shmrun's own
	killSpec := os.Getenv(job.EnvKill)
	if len(kills) > 0 {
		if !*ft {
			return usageError("--kill needs --ft: without it the first failure ends the job")
		}
		spec, err := kills.check(*n)
		if err != nil {
			return usageError("%v", err)
		}
		env = withEnv(os.Environ(), job.EnvKill, spec)
		killSpec = spec
	}
	for _, kv := range exported {
		if env == nil {
			env = os.Environ()
		}
		k, v, _ := strings.Cut(kv, "=")
		env = withEnv(env, k, v)
	}
	cores := runtime.NumCPU()
	// Pinned, oversubscribed ranks beat the kernel's placement: the
	// collectives at 8 ranks on 2 cores took 5 µs against 7-9 unpinned,
	// and examples/ring at 64 ranks 10 µs a hop against 21 (2026-11-25).
	bind := true
	switch *bindTo {
	case "":
	case "core":
		bind = true
	case "none":
		bind = false
	default:
		return usageError("--bind-to takes core or none, not %q", *bindTo)
	}
	prog, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "shmrun: %v\n", err)
		return execStatus(err)
	}

	var tagged []*lineout.Writer
	var outMu sync.Mutex
	cfg := launch.Config{
		N: *n, Universe: *universe, Path: prog, Args: fs.Args()[1:], Env: env, Bind: bind, Cores: cores, Stdin: os.Stdin,
		AbortOnFailure: !*ft,
		Output: func(r int) (io.Writer, io.Writer) {
			if !*tag {
				return os.Stdout, os.Stderr
			}
			o, e := lineout.New(&outMu, os.Stdout, r), lineout.New(&outMu, os.Stderr, r)
			tagged = append(tagged, o, e)
			return o, e
		},
	}
	// Catch the signals before starting, so that none is lost in between.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	j, err := launch.Start(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "shmrun: %v\n", err)
		var pe *os.PathError
		if errors.As(err, &pe) && pe.Op == "fork/exec" && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.ENOMEM) {
			return execStatus(err)
		}
		return exitNoStart
	}
	var deadline <-chan time.Time
	if timeout > 0 {
		deadline = time.After(time.Duration(timeout))
	}
	// ended says what ended the job before its ranks did, if anything:
	// an abort, a failure (without --ft), a signal or the timeout. The
	// first decides the status; the ranks' later exits are its effects.
	const (
		running = iota
		aborted
		failure
		signalled
		timedOut
	)
	ended := running
	status := 0
	var (
		interrupt  os.Signal
		failed     []launch.Exit // failures, for the --ft summary
		completed  int           // ranks that finalized (or never were ranks) and exited 0
		nonZero    int           // ranks that finalized and exited non-zero
		injected   int           // failures that SHMPI_KILL asked for
		ftStatus   int           // with --ft: the first unasked-for failure's or non-zero exit's status
		toBeKilled = killedRanks(killSpec)
	)
	// Spawned ranks' exits come on the same channel, closed after the
	// last.
	for exits := j.Exits(); exits != nil; {
		select {
		case x, ok := <-exits:
			if !ok {
				exits = nil
				continue
			}
			if a, ok := j.Aborted(); ok && (ended == running || ended == signalled) {
				// The launcher is killing every rank already.
				fmt.Fprintf(os.Stderr, "shmrun: %v; killing the job\n", a)
				ended, status = aborted, a.Status()
			}
			if ended != running {
				continue
			}
			if !x.Abnormal() {
				completed++
				continue
			}
			if !*ft {
				fmt.Fprintf(os.Stderr, "shmrun: rank %d (pid %d) %s; killing the job\n", x.Rank, x.Pid, x.How())
				ended, status = failure, exitStatus(x)
				j.Kill()
				continue
			}
			switch {
			case x.Failed() && x.Sig == syscall.SIGKILL && toBeKilled[x.Rank]:
				injected++
			case !x.Failed():
				nonZero++
			}
			if x.Failed() {
				failed = append(failed, x)
			}
			if ftStatus == 0 && !(x.Failed() && x.Sig == syscall.SIGKILL && toBeKilled[x.Rank]) {
				ftStatus = exitStatus(x)
			}
		case s := <-sigs:
			switch {
			case ended == running:
				ended, interrupt = signalled, s
				status = exitSignalBase + int(s.(syscall.Signal))
				j.SignalAll(s)
			case ended == signalled:
				// The ranks did not end on the first signal (they may
				// ignore or handle it); the user insists, as with mpirun.
				fmt.Fprintf(os.Stderr, "shmrun: second %s: killing the ranks with SIGKILL\n", launch.SignalName(s.(syscall.Signal)))
				j.Kill()
			default:
				// The ranks are being killed already.
			}
		case <-deadline:
			if ended != running {
				continue
			}
			ended, status = timedOut, exitTimeout
			var b strings.Builder
			fmt.Fprintf(&b, "shmrun: timeout after %v; ranks not done:\n", time.Duration(timeout))
			for _, f := range j.Unfinished() {
				fmt.Fprintf(&b, "  %v (pid %d)\n", f, j.Pid(f.Rank))
			}
			os.Stderr.WriteString(b.String())
			j.Kill()
		}
	}
	// Every rank has exited, so the failure table is final: read it
	// before Wait releases the segment. (An Exit's own Fate may predate a
	// detector's finishing its declaration.)
	fates := j.Fates()
	j.Wait()
	for _, w := range tagged {
		w.Flush()
	}
	switch {
	case ended == signalled:
		what := "interrupted"
		if interrupt == syscall.SIGTERM {
			what = "terminated"
		}
		fmt.Fprintf(os.Stderr, "shmrun: job %s (%s)\n", what, launch.SignalName(interrupt.(syscall.Signal)))
	case ended == running && *ft:
		if len(failed) > 0 {
			os.Stderr.WriteString(failureSummary(failed, fates, j.Started()))
		}
		status = ftStatus
		if completed == 0 && status == 0 {
			// Every rank failed, as asked (or not): none vouches for the job.
			status = exitStatus(failed[0])
		}
		if len(failed) > 0 || nonZero > 0 {
			os.Stderr.WriteString(completion(len(j.Ranks()), completed, len(failed)-injected, injected, nonZero))
		}
	}
	return status
}

// completion is the line that ends a --ft job in which not every rank
// completed: "shmrun: 3 of 4 ranks completed (finalized and exited 0);
// 1 failed".
func completion(n, completed, failed, injected, nonZero int) string {
	s := fmt.Sprintf("shmrun: %d of %d ranks completed (finalized and exited 0)", completed, n)
	var more []string
	if failed > 0 {
		more = append(more, fmt.Sprintf("%d failed", failed))
	}
	if injected > 0 {
		more = append(more, fmt.Sprintf("%d killed by SHMPI_KILL as asked", injected))
	}
	if nonZero > 0 {
		more = append(more, fmt.Sprintf("%d exited non-zero after finalizing", nonZero))
	}
	return s + "; " + strings.Join(more, ", ") + "\n"
}

// killedRanks lists the ranks that a job.EnvKill value (from --kill or
// the environment) asks to die.
func killedRanks(spec string) map[int]bool {
	m := map[int]bool{}
	for _, ent := range strings.Split(spec, ",") {
		rank, _, ok := strings.Cut(strings.TrimSpace(ent), "@")
		if r, err := strconv.Atoi(rank); ok && err == nil {
			m[r] = true
		}
	}
	return m
}

// failureSummary has a line for each failed rank, in the order of their
// failures: how it died, when (ms after start), and who detected it.
func failureSummary(failed []launch.Exit, fates []ranks.Fate, start time.Time) string {
	type line struct {
		at   time.Duration
		rank int
		text string
	}
	var ls []line
	byRank := map[int]ranks.Fate{} // started ranks only: slots kept for spawns may be skipped
	for _, f := range fates {
		byRank[f.Rank] = f
	}
	for _, x := range failed {
		f := x.Fate
		if g, ok := byRank[x.Rank]; ok {
			f = g
		}
		at := f.FailedAt
		if at.IsZero() {
			at = x.At
		}
		d := at.Sub(start)
		ls = append(ls, line{d, x.Rank, fmt.Sprintf("shmrun: rank %d failed: %s at %.1f ms; detected by %s\n",
			x.Rank, x.How(), float64(d)/float64(time.Millisecond), detector(f))})
	}
	slices.SortStableFunc(ls, func(a, b line) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.rank, b.rank))
	})
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.text)
	}
	return b.String()
}

// detector says who declared a failure and how.
func detector(f ranks.Fate) string {
	switch {
	case f.Cause == "exit":
		return "the launcher (exit)"
	case f.Cause == "" || f.Detector < 0:
		// The declaring rank died before it recorded how.
		return "a rank that died while declaring it"
	case f.Cause == "robust-futex":
		return fmt.Sprintf("rank %d (robust futex)", f.Detector)
	case f.Cause == "robust-futex-direct":
		return fmt.Sprintf("rank %d (direct liveness word)", f.Detector)
	}
	return fmt.Sprintf("rank %d (%s)", f.Detector, f.Cause)
}

// exitStatus maps a rank's end to shmrun's exit status.
func exitStatus(x launch.Exit) int {
	switch {
	case x.Sig != 0:
		return exitSignalBase + int(x.Sig)
	case x.Code > 0:
		return x.Code
	}
	return exitRankDefault
}

// execStatus is the status for a program that could not be run, as the
// shell's: 127 if there is no such file, 126 if it cannot be executed.
func execStatus(err error) int {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
		return exitNotFound
	}
	return exitNotExec
}
