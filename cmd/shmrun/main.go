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
// ranks that failed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"shmpi/ranks/launch"
	"shmpi/shm"
)

const version = "0.1.0"

// Exit status when the job is cut off by --timeout (as timeout(1) does).
const exitTimeout = 124

func usage() {
	fmt.Fprintf(os.Stderr, `usage: shmrun [flags] program [args...]

Runs program as an N-rank shmpi job on this node.

flags:
  -n N                 number of ranks (default 1)
  --bind-to core|none  pin rank r to core r mod cores (default: core when
                       N <= cores, else none)
  --tag-output         prefix every output line with [rank]
  --timeout D          kill the job after duration D (e.g. 30s) and report
                       the ranks still running and where they are blocked
  --ft                 fault tolerant: survivors of a failed rank go on;
                       exit 0 if some rank survives and every survivor
                       exits 0
  --version            print the version
  --help               print this help
`)
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
	timeout := fs.Duration("timeout", 0, "")
	ft := fs.Bool("ft", false, "")
	showVersion := fs.Bool("version", false, "")
	help := fs.Bool("help", false, "")
	fs.BoolVar(help, "h", false, "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "shmrun: %v\n", err)
		usage()
		return 2
	}
	if *help {
		usage()
		return 0
	}
	if *showVersion {
		fmt.Printf("shmrun (shmpi) %s, segment layout version %d, %s\n", version, shm.Version, runtime.Version())
		return 0
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "shmrun: no program given")
		usage()
		return 2
	}
	if *n < 1 {
		fmt.Fprintf(os.Stderr, "shmrun: -n must be at least 1, got %d\n", *n)
		return 2
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
		return 2
	}
	prog, err := exec.LookPath(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "shmrun: %v\n", err)
		return 127
	}

	var tagged []*prefixWriter
	var outMu sync.Mutex
	cfg := launch.Config{
		N: *n, Path: prog, Args: fs.Args()[1:], Bind: bind, Cores: cores, Stdin: os.Stdin,
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
		return 1
	}
	var deadline <-chan time.Time
	if *timeout > 0 {
		deadline = time.After(*timeout)
	}
	status := 0
	aborting := false
	timedOut := false
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
			job.SignalAll(s)
		case <-deadline:
			timedOut = true
			var b strings.Builder
			fmt.Fprintf(&b, "shmrun: timeout after %v; still running:\n", *timeout)
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
		return 128 + int(x.Sig)
	case x.Code > 0:
		return x.Code
	}
	return 1
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
