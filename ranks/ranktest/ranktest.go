// Package ranktest runs an N-rank shmpi world inside a Go test by
// re-executing the test binary once per rank:
//
//	func TestRing(t *testing.T) {
//		ranktest.Run(t, 4, func(r *ranktest.R) {
//			... r.Comm, r.Rank, r.Size, r.Errorf, r.Fatalf ...
//		})
//	}
//
// In the test process, Run starts the job, waits for it under a deadline
// and reports each rank's failures and captured output. In a rank process
// (the same binary, started with -test.run naming this test), Run calls
// ranks.Init, runs the body, finalizes and exits; nothing else of the test
// runs there. Past the deadline the test fails and says which rank is
// blocked in which operation. A rank that calls Comm.Abort ends the job
// (every rank is killed) and fails the test, unless Options.ExpectAbort
// says it should.
package ranktest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
)

// EnvRun names the test (and which Run call in it) a rank process runs.
const EnvRun = "SHMPI_RANKTEST"

// envSerialized asks a rank to start at ThreadSerialized.
const envSerialized = "SHMPI_RANKTEST_SERIALIZED"

// envPoint tells a rank where to kill itself: "rank:point:how".
const envPoint = "SHMPI_RANKTEST_POINT"

// DefaultTimeout is the deadline of a job when Options.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// How a rank dies at a kill point.
type How int

const (
	SIGKILL How = iota // killed by SIGKILL: no cleanup at all
	Exit               // os.Exit(3) without Finalize
	Panic              // an unrecovered panic
)

// KillAt makes rank Rank die, How, when its body calls r.Point(Point).
type KillAt struct {
	Rank  int
	Point string
	How   How
}

// Options configure a job.
type Options struct {
	N       int
	Timeout time.Duration // deadline for the whole job; DefaultTimeout if 0
	Env     []string      // extra environment for every rank
	// Dies lists ranks that are expected to fail (they kill themselves,
	// or Kill names them). Any other rank must finalize and exit 0.
	Dies []int
	Kill *KillAt
	// Layout overrides the segment layout.
	Layout *launch.Layout
	// Universe reserves rank slots for ranks the job spawns
	// (launch.Config.Universe). Spawned ranks run the same body (see
	// R.SelfCommand; World.Parent tells them apart). Dies names them by
	// rank slot (N and up, in the order they were spawned); Kill and
	// Point compare R.Rank, a rank in the rank's own world, so a kill
	// point of rank 1 fires in every world that reaches it.
	Universe int
	// Cores is the number of CPUs the job is told it has (0: the
	// machine's). More cores than the machine has makes ranks spin
	// before they sleep as if each had its own.
	Cores int
	// Bind pins each rank to one CPU, as shmrun does (launch.Config.Bind).
	Bind bool
	// Serialized starts the ranks at ThreadSerialized (ranks.InitThread)
	// rather than Init's ThreadMultiple.
	Serialized bool
	// Quiet suppresses the per-rank output on success (it is always
	// shown on failure).
	Quiet bool
	// ExpectAbort says that a rank ends the job with Comm.Abort(AbortCode):
	// the test fails if none does, or with another code. The other ranks
	// are killed, so neither Dies nor their exits are checked then.
	ExpectAbort bool
	AbortCode   int
}

// R is what a rank's body gets.
type R struct {
	World *ranks.World
	Comm  *ranks.Comm
	Rank  int
	Size  int

	mu     sync.Mutex
	failed bool
}

// Logf prints to the rank's captured output.
func (r *R) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rank %d: %s\n", r.Rank, fmt.Sprintf(format, args...))
}

// Errorf records a failure and goes on.
func (r *R) Errorf(format string, args ...any) {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	fmt.Fprintf(os.Stderr, "rank %d: FAIL: %s\n", r.Rank, fmt.Sprintf(format, args...))
}

// Fatalf records a failure and ends the rank at once, without Finalize
// (the other ranks see it fail).
func (r *R) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rank %d: FATAL: %s\n", r.Rank, fmt.Sprintf(format, args...))
	syscall.Exit(1)
}

// Check fails fatally if err is not nil.
func (r *R) Check(err error, what string) {
	if err != nil {
		r.Fatalf("%s: %v", what, err)
	}
}

// SelfCommand is the program and arguments that run this test's body
// again: what a body passes to Comm.Spawn for children that run it too
// (with Options.Universe). World.Parent is not nil in them.
func (r *R) SelfCommand() (string, []string) {
	exe, err := os.Executable()
	if err != nil {
		r.Fatalf("ranktest: %v", err)
	}
	return exe, os.Args[1:]
}

// Kill ends this rank now with SIGKILL.
func (r *R) Kill() {
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // not reached
}

// Exit ends this rank now with os.Exit(code), without Finalize.
func (r *R) Exit(code int) { syscall.Exit(code) }

// Die ends this rank as how says.
func (r *R) Die(how How) {
	switch how {
	case SIGKILL:
		r.Kill()
	case Exit:
		r.Exit(3)
	default:
		panic(fmt.Sprintf("ranktest: rank %d dies by panic", r.Rank))
	}
}

// Point is a named place in the body where Options.Kill may kill this
// rank.
func (r *R) Point(name string) {
	spec := os.Getenv(envPoint)
	if spec == "" {
		return
	}
	parts := strings.SplitN(spec, ":", 3)
	if len(parts) == 3 && parts[0] == strconv.Itoa(r.Rank) && parts[1] == name {
		h, _ := strconv.Atoi(parts[2])
		r.Die(How(h))
	}
}

var (
	callsMu sync.Mutex
	calls   = map[testing.TB]int{}
)

// Run runs body on n ranks with default options.
func Run(t testing.TB, n int, body func(r *R)) {
	t.Helper()
	RunOpts(t, Options{N: n}, body)
}

// RunOpts runs body on o.N ranks.
func RunOpts(t testing.TB, o Options, body func(r *R)) {
	t.Helper()
	callsMu.Lock()
	k := calls[t]
	calls[t] = k + 1
	callsMu.Unlock()
	id := t.Name() + "#" + strconv.Itoa(k)
	if v, ok := os.LookupEnv(EnvRun); ok {
		if v == id {
			runRank(body)
		}
		// A rank process skips every other Run call of its test.
		return
	}
	runParent(t, o, id, body)
}

// runRank is the rank side: Init, body, Finalize, exit.
func runRank(body func(r *R)) {
	level := ranks.ThreadMultiple
	if os.Getenv(envSerialized) == "1" {
		level = ranks.ThreadSerialized
	}
	w, err := ranks.InitThread(level)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ranktest: Init: %v\n", err)
		syscall.Exit(2)
	}
	r := &R{World: w, Comm: w.Comm(), Rank: w.Rank(), Size: w.Size()}
	func() {
		defer func() {
			if p := recover(); p != nil {
				fmt.Fprintf(os.Stderr, "rank %d: panic: %v\n%s", r.Rank, p, debug.Stack())
				syscall.Exit(2)
			}
		}()
		body(r)
	}()
	// The body may have finalized itself (tests of use after Finalize).
	if err := w.Finalize(); err != nil && !errors.Is(err, ranks.ErrFinalized) {
		fmt.Fprintf(os.Stderr, "rank %d: Finalize: %v\n", r.Rank, err)
		syscall.Exit(1)
	}
	if r.failed {
		syscall.Exit(1)
	}
	// syscall.Exit, not os.Exit: go test treats os.Exit(0) in a test as
	// a failure of that test.
	syscall.Exit(0)
}

// runPattern builds the -test.run pattern that selects exactly test name
// (with its subtest path).
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func runParent(t testing.TB, o Options, id string, body func(r *R)) {
	t.Helper()
	if o.N <= 0 {
		t.Fatalf("ranktest: need at least one rank")
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("ranktest: %v", err)
	}
	outs := make([]*syncBuf, max(o.N, o.Universe))
	for i := range outs {
		outs[i] = &syncBuf{}
	}
	env := append(os.Environ(), EnvRun+"="+id)
	if o.Serialized {
		env = append(env, envSerialized+"=1")
	}
	if os.Getenv("GORACE") == "" {
		// Ranks end with syscall.Exit, which skips the race detector's
		// exit status: under -race, a race must end the rank instead.
		env = append(env, "GORACE=halt_on_error=1")
	}
	env = append(env, o.Env...)
	if o.Kill != nil {
		env = append(env, fmt.Sprintf("%s=%d:%s:%d", envPoint, o.Kill.Rank, o.Kill.Point, o.Kill.How))
	}
	job, err := launch.Start(launch.Config{
		N:    o.N,
		Path: exe,
		Args: []string{"-test.run=" + runPattern(t.Name()), "-test.count=1", "-test.timeout=" + (timeout + time.Minute).String()},
		Env:  env,
		Output: func(r int) (stdout, stderr io.Writer) {
			return outs[r], outs[r]
		},
		Layout:   o.Layout,
		Universe: o.Universe,
		Cores:    o.Cores,
		Bind:     o.Bind,
	})
	if err != nil {
		t.Fatalf("ranktest: %v", err)
	}
	exits, ok := job.WaitTimeout(timeout)
	if !ok {
		fates := job.Unfinished()
		job.Kill()
		job.Wait()
		var b strings.Builder
		fmt.Fprintf(&b, "ranktest: deadline of %v passed; ranks not done:\n", timeout)
		for _, f := range fates {
			fmt.Fprintf(&b, "  %v\n", f)
		}
		for r, out := range outs {
			if s := out.String(); s != "" {
				fmt.Fprintf(&b, "--- output of rank %d:\n%s", r, s)
			}
		}
		t.Fatal(b.String())
		return
	}
	checkLeaks(t, job)
	if a, aborted := job.Aborted(); aborted || o.ExpectAbort {
		switch {
		case !aborted:
			t.Errorf("ranktest: no rank called Abort; want Abort(%d)", o.AbortCode)
		case !o.ExpectAbort:
			t.Errorf("ranktest: %v, which killed every rank", a)
		case a.Code != o.AbortCode:
			t.Errorf("ranktest: %v; want Abort(%d)", a, o.AbortCode)
		default:
			logOutputs(t, outs, !o.Quiet && testing.Verbose())
			return
		}
		logOutputs(t, outs, true)
		return
	}
	dies := map[int]bool{}
	for _, r := range o.Dies {
		dies[r] = true
	}
	if o.Kill != nil {
		dies[o.Kill.Rank] = true
	}
	bad := false
	for _, x := range exits {
		switch {
		case dies[x.Rank] && !x.Failed():
			t.Errorf("ranktest: rank %d should have failed but %s (%s)", x.Rank, x.How(), x.Fate.State)
			bad = true
		case !dies[x.Rank] && x.Abnormal():
			t.Errorf("ranktest: rank %d %s", x.Rank, x.How())
			bad = true
		}
	}
	logOutputs(t, outs, bad || !o.Quiet && testing.Verbose())
}

// logOutputs logs each rank's captured output, if show.
func logOutputs(t testing.TB, outs []*syncBuf, show bool) {
	t.Helper()
	for r, out := range outs {
		if s := out.String(); s != "" && show {
			t.Logf("--- output of rank %d:\n%s", r, s)
		}
	}
}

// checkLeaks fails the test if a rank process outlived the job or this
// process left a segment file in /dev/shm.
func checkLeaks(t testing.TB, job *launch.Job) {
	t.Helper()
	for _, r := range job.Ranks() {
		if pid := job.Pid(r); syscall.Kill(pid, 0) != syscall.ESRCH {
			t.Errorf("ranktest: rank %d (pid %d) is still there after the job", r, pid)
		}
	}
	if left, _ := filepath.Glob(fmt.Sprintf("/dev/shm/shmpi-%d-*", os.Getpid())); len(left) > 0 {
		t.Errorf("ranktest: segment files left in /dev/shm: %v", left)
	}
}

// Intercomm splits the world into group A (world ranks below na) and
// group B (the rest) and returns their intercommunicator, made with the
// world as the peer communicator, and whether this rank is in A.
func (r *R) Intercomm(na int) (*ranks.Comm, bool) {
	inA := r.Rank < na
	color, remoteLeader := 1, 0
	if inA {
		color, remoteLeader = 0, na
	}
	local, err := r.Comm.Split(color, 0)
	r.Check(err, "split")
	ic, err := ranks.IntercommCreate(local, 0, r.Comm, remoteLeader, 7)
	r.Check(err, "IntercommCreate")
	r.Check(local.Free(), "free the local communicator")
	return ic, inA
}
