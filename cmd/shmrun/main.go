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
// through the failure table and go on; shmrun exits 0 when there are
// survivors and every one exits 0, and prints a one-line summary of the
// ranks that failed. The ranks' World.FT says which of the two applies.
//
// A second SIGINT or SIGTERM kills the ranks with SIGKILL, for ranks
// that ignore the first. The exit codes are listed in the help (usage).
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"shmpi/ranks/launch"
	"shmpi/shm"
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
	exitSignalBase  = 128 // + the signal that killed a rank, as sh
	exitRankDefault = 1   // a rank failed with exit code 0 (without Finalize)
)

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: shmrun [flags] program [args...]

Runs program as an N-rank shmpi job on this node.

flags:
  -n N                 number of ranks (default 1); their shared segment
                       (about 0.5 MiB a rank) must fit in the free space
                       of /dev/shm, and N under the process limit (ulimit -u)
  --bind-to core|none  pin rank r to core r mod cores (default: core when
                       N <= cores, else none)
  --tag-output         prefix every output line with [rank]
  --timeout D          kill the job after duration D, which needs a unit
                       (30s, 1m30s, 500ms; 0 is no timeout), and report
                       the ranks still running and where they are blocked
  --ft                 fault tolerant: survivors of a failed rank go on
                       (World.FT is true); exit 0 if some rank survives
                       and every survivor exits 0. Without it the first
                       failure ends the job (World.FT is false)
  --version            print the version
  --help               print this help

SIGINT and SIGTERM are forwarded to every rank; a second one kills the
ranks with SIGKILL.

exit status:
  0      every rank finalized and exited 0 (with --ft: every survivor)
  N      the exit code of the rank that ended the job, passed on as it is
         (a Go panic exits 2); 1 for a rank that exited 0 without
         finalizing. A rank's code may coincide with those below.
  64     usage error
  71     the job could not be started (too little free space in /dev/shm,
         the process limit, a failed fork)
  124    --timeout expired
  126    the program cannot be executed (permissions, format, a directory)
  127    the program was not found
  128+S  a rank was killed by signal S (137 after a second SIGINT/SIGTERM)
`)
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

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("shmrun", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 1, "")
	bindTo := fs.String("bind-to", "", "")
	tag := fs.Bool("tag-output", false, "")
	var timeout timeoutFlag
	fs.Var(&timeout, "timeout", "")
	ft := fs.Bool("ft", false, "")
	showVersion := fs.Bool("version", false, "")
	help := fs.Bool("help", false, "")
	fs.BoolVar(help, "h", false, "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "shmrun: %v\n", err)
		usage(os.Stderr)
		return exitUsage
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
		fmt.Fprintln(os.Stderr, "shmrun: no program given")
		usage(os.Stderr)
		return exitUsage
	}
	if *n < 1 {
		fmt.Fprintf(os.Stderr, "shmrun: -n must be at least 1, got %d\n", *n)
		return exitUsage
	}
	cores := runtime.NumCPU()
	bind := *n <= cores
	switch *bindTo {
	case "":
	case "core":
		bind = true
	case "none":
		bind = false
	default:
		fmt.Fprintf(os.Stderr, "shmrun: --bind-to takes core or none, not %q\n", *bindTo)
		return exitUsage
	}
	prog, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "shmrun: %v\n", err)
		return execStatus(err)
	}

	var tagged []*prefixWriter
	var outMu sync.Mutex
	cfg := launch.Config{
		N: *n, Path: prog, Args: fs.Args()[1:], Bind: bind, Cores: cores, Stdin: os.Stdin,
		AbortOnFailure: !*ft,
		Output: func(r int) (io.Writer, io.Writer) {
			if !*tag {
				return os.Stdout, os.Stderr
			}
			o := &prefixWriter{mu: &outMu, w: os.Stdout, prefix: fmt.Sprintf("[%d] ", r)}
			e := &prefixWriter{mu: &outMu, w: os.Stderr, prefix: fmt.Sprintf("[%d] ", r)}
			tagged = append(tagged, o, e)
			return o, e
		},
	}
	// Catch the signals before starting, so that none is lost in between.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	job, err := launch.Start(cfg)
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
	status := 0
	aborting := false
	timedOut := false
	signalled := false
	var failed []launch.Exit
	for left := *n; left > 0; {
		select {
		case x := <-job.Exits():
			left--
			if x.Failed() {
				failed = append(failed, x)
			}
			if aborting || timedOut {
				continue
			}
			if *ft {
				if !x.Failed() && x.Code != 0 && status == 0 {
					// Code is -1 for a signal after Finalize.
					status = exitStatus(x)
				}
				continue
			}
			if x.Abnormal() {
				fmt.Fprintf(os.Stderr, "shmrun: rank %d (pid %d) %s; killing the job\n", x.Rank, x.Pid, x.How())
				aborting = true
				status = exitStatus(x)
				job.Kill()
			}
		case s := <-sigs:
			switch {
			case aborting || timedOut:
				// The ranks are being killed already.
			case !signalled:
				signalled = true
				job.SignalAll(s)
			default:
				// The ranks did not end on the first signal (they may
				// ignore or handle it); the user insists, as with mpirun.
				fmt.Fprintf(os.Stderr, "shmrun: second %v: killing the ranks with SIGKILL\n", s)
				aborting = true
				if status == 0 {
					status = exitSignalBase + int(syscall.SIGKILL)
				}
				job.Kill()
			}
		case <-deadline:
			timedOut = true
			var b strings.Builder
			fmt.Fprintf(&b, "shmrun: timeout after %v; still running:\n", time.Duration(timeout))
			fates := job.Fates()
			for _, r := range job.Running() {
				if r < len(fates) {
					fmt.Fprintf(&b, "  %v (pid %d)\n", fates[r], job.Pid(r))
				}
			}
			os.Stderr.WriteString(b.String())
			job.Kill()
			status = exitTimeout
		}
	}
	job.Wait()
	if *ft && !timedOut && status == 0 && len(failed) == *n {
		// No rank survived (say, all were killed by a forwarded SIGTERM),
		// so none vouches for the job: fail as without --ft.
		status = exitStatus(failed[0])
	}
	for _, w := range tagged {
		w.Flush()
	}
	if *ft && len(failed) > 0 && !timedOut {
		parts := make([]string, len(failed))
		for i, x := range failed {
			parts[i] = fmt.Sprintf("rank %d %s", x.Rank, x.How())
		}
		fmt.Fprintf(os.Stderr, "shmrun: %d of %d ranks failed: %s\n", len(failed), *n, strings.Join(parts, "; "))
	}
	return status
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

// prefixWriter writes whole lines, each preceded by prefix; lines of all
// ranks share one lock so they never interleave mid-line.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	var out bytes.Buffer
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		out.WriteString(p.prefix)
		out.Write(p.buf[:i+1])
		p.buf = p.buf[i+1:]
	}
	if out.Len() > 0 {
		p.mu.Lock()
		_, err := p.w.Write(out.Bytes())
		p.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// Flush writes a last line that had no newline.
func (p *prefixWriter) Flush() {
	if len(p.buf) > 0 {
		p.mu.Lock()
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf)
		p.mu.Unlock()
		p.buf = nil
	}
}
