package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/ranks/launch"
	"github.com/shmpi/shmpi/shm"
)

// The tests run the real shmrun binary on real rank processes. TestMain
// builds shmrun, the ring example, fail_detect and testdata/behave once
// into bin.
var bin string

// deadline bounds every shmrun run; past it the test fails (and the
// context kills shmrun, whose ranks die with it).
const deadline = 60 * time.Second

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	gobin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintf(os.Stderr, "shmrun tests need the go tool: %v\n", err)
		return 2
	}
	dir, err := os.MkdirTemp("", "shmrun-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	// testdata is not part of ./..., so the helper is built here.
	build := exec.Command(gobin, "build", "-o", dir+"/", "github.com/shmpi/shmpi/cmd/shmrun", "github.com/shmpi/shmpi/examples/ring",
		"github.com/shmpi/shmpi/benchmarks/fail_detect", "./testdata/behave")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test programs: %v\n%s", err, out)
		return 2
	}
	// TestProcessLimit runs shmrun as another user.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	bin = dir
	return m.Run()
}

// guard records the /dev/shm segment files before a test and checks after
// it that the test created none and that no process of the test's
// programs is left. It returns a directory in which behave ranks record
// their pids (SHMRUN_TEST_PIDDIR).
func guard(t *testing.T) string {
	t.Helper()
	before := shmFiles(t)
	pidDir := t.TempDir()
	t.Cleanup(func() {
		if left := newFiles(before, shmFiles(t)); len(left) > 0 {
			t.Errorf("files left in /dev/shm: %v", left)
		}
		// Every run has been waited for, so the ranks should be gone
		// already; the grace period only covers ranks orphaned by a
		// killed shmrun, which die from their parent-death signal.
		waitGone(t, recordedPids(t, pidDir), 10*time.Second)
		if ps := ourProcesses(); len(ps) > 0 {
			t.Errorf("processes of the test programs still running: %v", ps)
		}
	})
	return pidDir
}

func shmFiles(t *testing.T) map[string]bool {
	names, err := filepath.Glob("/dev/shm/shmpi-*")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// newFiles lists the files in after but not in before whose creator is
// gone. A segment file is named shmpi-<creator pid>-<job>; a file whose
// creator still runs belongs to someone else (go test runs the packages'
// tests in parallel, and theirs live for a moment between create and
// unlink), while every process of this test has ended when it is called.
func newFiles(before, after map[string]bool) []string {
	var out []string
	for n := range after {
		if before[n] {
			continue
		}
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(n), "shmpi-%d-", &pid); err == nil && pid > 0 && syscall.Kill(pid, 0) == nil {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func recordedPids(t *testing.T, dir string) []int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatalf("stray file %s in the pid directory", e.Name())
		}
		pids = append(pids, pid)
	}
	return pids
}

// ours reports whether pid is a live (non-zombie) process running one of
// the test's programs. Checking the executable, not just the pid, keeps a
// recycled pid (pid_max may be as low as 32768) from looking like a
// leftover rank. A zombie has no executable link, runs nothing and holds
// no memory; reaping an orphan is init's business.
func ours(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.HasPrefix(exe, bin+string(filepath.Separator))
}

// ourProcesses lists every live process running a program from bin.
func ourProcesses() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && ours(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// waitGone waits until none of pids is a live process of ours, polling
// (an external condition: there is nothing to wait on for a process that
// is not our child) until within has passed.
func waitGone(t *testing.T, pids []int, within time.Duration) {
	t.Helper()
	end := time.Now().Add(within)
	for _, pid := range pids {
		for ours(pid) {
			if time.Now().After(end) {
				t.Errorf("rank process %d still running %v after its job ended", pid, within)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// result is a finished shmrun run.
type result struct {
	code           int
	stdout, stderr string
}

// shmrun runs shmrun with args to completion under the deadline, with
// extra environment entries env and standard input stdin.
func shmrun(t *testing.T, pidDir string, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "shmrun"), args...)
	cmd.Env = append(os.Environ(), "SHMRUN_TEST_PIDDIR="+pidDir)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	// Should a rank outlive a killed shmrun holding the output pipes,
	// do not wait for it forever.
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("shmrun %q still running after the %v deadline (killed)\nstdout:\n%s\nstderr:\n%s",
			args, deadline, so.String(), se.String())
	}
	r := result{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if r.code < 0 {
			t.Fatalf("shmrun %q: %v\nstderr:\n%s", args, err, r.stderr)
		}
	case err != nil:
		t.Fatalf("shmrun %q: %v", args, err)
	}
	return r
}

func behave(mode string, more ...string) []string {
	return append([]string{filepath.Join(bin, "behave"), "-mode", mode}, more...)
}

func cmdline(flags []string, prog []string) []string {
	return append(append([]string(nil), flags...), prog...)
}

// lines splits output into lines; a missing final newline is an error.
func lines(t *testing.T, what, s string) []string {
	t.Helper()
	if s == "" {
		return nil
	}
	if !strings.HasSuffix(s, "\n") {
		t.Errorf("%s does not end with a newline: %q", what, s)
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// sameLines compares got with want, ignoring order.
func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		t.Errorf("%s:\n%s\nwant (in any order):\n%s", what, strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

func TestRingExample(t *testing.T) {
	pidDir := guard(t)
	for _, tc := range []struct{ n, bind string }{{"1", ""}, {"4", ""}, {"2", "none"}, {"4", "core"}} {
		flags := []string{"-n", tc.n}
		if tc.bind != "" {
			flags = append(flags, "--bind-to", tc.bind)
		}
		r := shmrun(t, pidDir, nil, "", cmdline(flags, []string{filepath.Join(bin, "ring"), "-laps", "100"})...)
		if r.code != 0 || r.stderr != "" {
			t.Errorf("%v: exit code %d, stderr:\n%s", flags, r.code, r.stderr)
		}
		n, _ := strconv.Atoi(tc.n)
		want := fmt.Sprintf(`^ring: %d ranks, 100 laps, token %d, \S+ total, [0-9.]+ µs per hop\n$`, n, 100*n)
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("%v: stdout %q does not match %s", flags, r.stdout, want)
		}
	}
}

// TestBinding checks where shmrun pins ranks: rank r on CPU r while ranks
// do not outnumber CPUs, in blocks of neighbours when they do (with two
// Ps, so that their sleeps stay out of the Go scheduler), nowhere with
// --bind-to none.
func TestBinding(t *testing.T) {
	pidDir := guard(t)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpus := launch.CPUList(&set)
	nc := len(cpus)
	// GOMAXPROCS= (empty) is as if unset: the runtime and Init decide.
	env := []string{"GOMAXPROCS="}
	for _, tc := range []struct {
		n    int
		bind string
	}{{nc, ""}, {3*nc + 1, ""}, {3*nc + 1, "core"}, {3*nc + 1, "none"}} {
		flags := []string{"-n", strconv.Itoa(tc.n)}
		if tc.bind != "" {
			flags = append(flags, "--bind-to", tc.bind)
		}
		r := shmrun(t, pidDir, env, "", cmdline(flags, behave("affinity"))...)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("%v: exit code %d, stderr:\n%s", flags, r.code, r.stderr)
		}
		var want []string
		for rk := range tc.n {
			switch {
			case tc.bind == "none":
				want = append(want, fmt.Sprintf("rank %d cpus %v gomaxprocs %d", rk, cpus, max(nc, 2)))
			case tc.n <= nc:
				want = append(want, fmt.Sprintf("rank %d cpus [%d] gomaxprocs 1", rk, cpus[rk]))
			default:
				want = append(want, fmt.Sprintf("rank %d cpus [%d] gomaxprocs 2", rk, cpus[rk*nc/tc.n]))
			}
		}
		sameLines(t, fmt.Sprint(flags), lines(t, "stdout", r.stdout), want)
	}
}

func TestTagOutput(t *testing.T) {
	pidDir := guard(t)
	const n = 3
	r := shmrun(t, pidDir, nil, "", cmdline([]string{"-n", strconv.Itoa(n), "--tag-output"}, behave("hello"))...)
	if r.code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", r.code, r.stderr)
	}
	var wantOut, wantErr []string
	for rk := range n {
		for i := range 50 {
			wantOut = append(wantOut, fmt.Sprintf("[%d] hello from %d line %d", rk, rk, i))
		}
		// The last line had no newline: shmrun completes it.
		wantOut = append(wantOut, fmt.Sprintf("[%d] tail from %d", rk, rk))
		wantErr = append(wantErr, fmt.Sprintf("[%d] err from %d", rk, rk))
	}
	out := lines(t, "stdout", r.stdout)
	sameLines(t, "tagged stdout", out, wantOut)
	sameLines(t, "tagged stderr", lines(t, "stderr", r.stderr), wantErr)
	// Each rank's lines keep their order.
	next := make([]int, n)
	for _, l := range out {
		var rk, me, i int
		if _, err := fmt.Sscanf(l, "[%d] hello from %d line %d", &rk, &me, &i); err == nil {
			if i != next[rk] {
				t.Errorf("rank %d: line %d came before line %d", rk, i, next[rk])
			}
			next[rk] = i + 1
		}
	}
}

// session is a shmrun running in the background whose stdout the test
// reads line by line.
type session struct {
	t      *testing.T
	ctx    context.Context
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    chan string // stdout lines; closed when every writer is gone
	stderr strings.Builder
	seen   []string
	done   bool
}

func start(t *testing.T, pidDir string, flags []string, prog []string) *session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	s := &session{t: t, ctx: ctx, out: make(chan string, 1024)}
	s.cmd = exec.CommandContext(ctx, filepath.Join(bin, "shmrun"), cmdline(flags, prog)...)
	s.cmd.Env = append(os.Environ(), "SHMRUN_TEST_PIDDIR="+pidDir)
	s.cmd.Stderr = &s.stderr
	s.cmd.WaitDelay = 10 * time.Second
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	// Our own pipe rather than StdoutPipe: reading it to EOF does not
	// race with Wait, and EOF means every rank has let go of it.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout = pw
	err = s.cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer close(s.out)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s.out <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		// A test that stopped early must not leave shmrun behind.
		cancel()
		if !s.done {
			s.cmd.Wait()
		}
	})
	return s
}

// waitLine waits for a stdout line matching re and returns its
// submatches.
func (s *session) waitLine(re *regexp.Regexp) []string {
	s.t.Helper()
	for {
		select {
		case l, ok := <-s.out:
			if !ok {
				s.t.Fatalf("stdout ended before a line matching %s; got:\n%s", re, strings.Join(s.seen, "\n"))
			}
			s.seen = append(s.seen, l)
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-s.ctx.Done():
			s.t.Fatalf("no line matching %s within the %v deadline; got:\n%s", re, deadline, strings.Join(s.seen, "\n"))
		}
	}
}

// rest returns the stdout lines after those already read, up to EOF.
func (s *session) rest() []string {
	s.t.Helper()
	var out []string
	for {
		select {
		case l, ok := <-s.out:
			if !ok {
				return out
			}
			out = append(out, l)
		case <-s.ctx.Done():
			s.t.Fatalf("stdout still open after the %v deadline; got:\n%s", deadline, strings.Join(out, "\n"))
		}
	}
}

// wait waits for shmrun to exit and returns its exit code (-1 if it was
// killed by a signal).
func (s *session) wait() int {
	s.t.Helper()
	err := s.cmd.Wait()
	s.done = true
	if s.ctx.Err() != nil {
		s.t.Fatalf("shmrun still running after the %v deadline (killed); stderr:\n%s", deadline, s.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return 0
}

// readyPids waits for the "ready R pid P" line of each of n blocked ranks
// and returns their pids by rank.
func (s *session) readyPids(n int) []int {
	s.t.Helper()
	re := regexp.MustCompile(`^ready (\d+) pid (\d+)$`)
	pids := make([]int, n)
	for range n {
		m := s.waitLine(re)
		r, _ := strconv.Atoi(m[1])
		pids[r], _ = strconv.Atoi(m[2])
	}
	for r, p := range pids {
		if p == 0 {
			s.t.Fatalf("rank %d never said it was ready", r)
		}
	}
	return pids
}

// Standard input goes to rank 0 only; the other ranks read /dev/null and
// see EOF at once, while shmrun's own stdin is still open.
func TestStdinGoesToRank0(t *testing.T) {
	pidDir := guard(t)
	const n = 3
	s := start(t, pidDir, []string{"-n", strconv.Itoa(n)}, behave("stdin"))
	s.waitLine(regexp.MustCompile(`^rank 0 waiting for stdin$`))
	const input = "some input\nand more\n"
	if _, err := io.WriteString(s.stdin, input); err != nil {
		t.Fatal(err)
	}
	s.stdin.Close()
	got := append(s.seen, s.rest()...)
	if code := s.wait(); code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, s.stderr.String())
	}
	want := []string{"rank 0 waiting for stdin", fmt.Sprintf("rank 0 stdin %q", input)}
	for r := 1; r < n; r++ {
		want = append(want, fmt.Sprintf("rank 0: rank %d read 0 bytes to EOF", r),
			fmt.Sprintf("rank %d stdin \"\", from rank 0 %q", r, input))
	}
	sameLines(t, "stdout", got, want)
}

func TestEnvironmentPassesThrough(t *testing.T) {
	pidDir := guard(t)
	const val = "xyzzy plugh=1"
	r := shmrun(t, pidDir, []string{"SHMRUN_TEST_VAR=" + val}, "", cmdline([]string{"-n", "3"}, behave("env"))...)
	if r.code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", r.code, r.stderr)
	}
	sameLines(t, "stdout", lines(t, "stdout", r.stdout), []string{
		fmt.Sprintf("rank 0 env %q", val), fmt.Sprintf("rank 1 env %q", val), fmt.Sprintf("rank 2 env %q", val)})
}

// Without --ft the first failure ends the job: shmrun says which rank died
// and how, kills the others (which would otherwise wait forever) and
// exits with the rank's status.
func TestFailureEndsJob(t *testing.T) {
	for _, tc := range []struct {
		how  string
		code int
		says string
	}{
		{"exit", 3, "exited with code 3 without finalizing"},
		{"kill", 128 + 9, `killed by signal 9 \(SIGKILL\)`},
	} {
		t.Run(tc.how, func(t *testing.T) {
			pidDir := guard(t)
			r := shmrun(t, pidDir, nil, "", cmdline([]string{"-n", "3"}, behave("die", "-how", tc.how, "-after", "block"))...)
			if r.code != tc.code {
				t.Errorf("exit code %d, want %d", r.code, tc.code)
			}
			re := regexp.MustCompile(`(?m)^shmrun: rank 1 \(pid \d+\) ` + tc.says + `; killing the job$`)
			if !re.MatchString(r.stderr) {
				t.Errorf("stderr does not say who died and how (%s):\n%s", re, r.stderr)
			}
			if pids := recordedPids(t, pidDir); len(pids) != 3 {
				t.Errorf("%d ranks recorded their pid, want 3", len(pids))
			}
		})
	}
}

// With --ft the survivors see ErrProcFailed and finish; shmrun says how
// the rank failed and how many completed, and exits with the failed
// rank's status: a failure nobody asked for fails the job.
func TestFaultTolerantJob(t *testing.T) {
	for _, tc := range []struct {
		how, says string
		code      int
	}{
		{"exit", "exited with code 3 without finalizing", 3},
		{"kill", `killed by signal 9 \(SIGKILL\)`, 128 + 9},
	} {
		t.Run(tc.how, func(t *testing.T) {
			pidDir := guard(t)
			r := shmrun(t, pidDir, nil, "", cmdline([]string{"-n", "4", "--ft"}, behave("die", "-how", tc.how))...)
			if r.code != tc.code {
				t.Errorf("exit code %d, want %d", r.code, tc.code)
			}
			sameLines(t, "stdout", lines(t, "stdout", r.stdout),
				[]string{"rank 0 got ErrProcFailed", "rank 2 got ErrProcFailed", "rank 3 got ErrProcFailed"})
			want := "^" + summaryLine("1", tc.says, anyDetector) + "\n" +
				regexp.QuoteMeta("shmrun: 3 of 4 ranks completed (finalized and exited 0); 1 failed") + "\n$"
			if !regexp.MustCompile(want).MatchString(r.stderr) {
				t.Errorf("stderr does not match %s:\n%s", want, r.stderr)
			}
		})
	}
}

// A rank that exits non-zero (or is killed) after Finalize has not
// failed, but the job has: shmrun passes its status on, with or without
// --ft.
func TestNonZeroAfterFinalize(t *testing.T) {
	for _, tc := range []struct {
		how  string
		code int
		says string
	}{{"exit", 1, "exited with code 1"}, {"kill", 128 + 9, `killed by signal 9 \(SIGKILL\)`}} {
		for _, ft := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ft=%v", tc.how, ft), func(t *testing.T) {
				pidDir := guard(t)
				flags := []string{"-n", "3"}
				if ft {
					flags = append(flags, "--ft")
				}
				r := shmrun(t, pidDir, nil, "", cmdline(flags, behave("finalize-exit1", "-how", tc.how))...)
				if r.code != tc.code {
					t.Errorf("exit code %d, want %d (rank 1's status)", r.code, tc.code)
				}
				want := `^shmrun: rank 1 \(pid \d+\) ` + tc.says + `; killing the job\n$`
				if ft {
					// Nobody failed: no failure to list.
					want = "^" + regexp.QuoteMeta("shmrun: 2 of 3 ranks completed (finalized and exited 0); 1 exited non-zero after finalizing") + "\n$"
				}
				if !regexp.MustCompile(want).MatchString(r.stderr) {
					t.Errorf("stderr does not match %s:\n%s", want, r.stderr)
				}
			})
		}
	}
}

// --timeout kills the job with status 124 and says which ranks were still
// running and in which operation they were blocked.
func TestTimeout(t *testing.T) {
	pidDir := guard(t)
	const n = 2
	r := shmrun(t, pidDir, nil, "", cmdline([]string{"--timeout", "2s", "-n", strconv.Itoa(n)}, behave("block"))...)
	if r.code != exitTimeout {
		t.Errorf("exit code %d, want %d", r.code, exitTimeout)
	}
	pids := make([]int, n)
	for _, l := range lines(t, "stdout", r.stdout) {
		var rk, pid int
		if _, err := fmt.Sscanf(l, "ready %d pid %d", &rk, &pid); err != nil || rk < 0 || rk >= n {
			t.Fatalf("unexpected stdout line %q", l)
		}
		pids[rk] = pid
	}
	errLines := lines(t, "stderr", r.stderr)
	if len(errLines) != n+1 || errLines[0] != "shmrun: timeout after 2s; ranks not done:" {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
	var got []string
	for rk := range n {
		// The time blocked varies; the rest is exact.
		got = append(got, fmt.Sprintf(`rank %d: alive; blocked in Recv(peer=%d, tag=99) for <t> (pid %d)`, rk, (rk+1)%n, pids[rk]))
	}
	norm := regexp.MustCompile(` for [0-9.]+(ms|s) \(`)
	var have []string
	for _, l := range errLines[1:] {
		have = append(have, strings.TrimPrefix(norm.ReplaceAllString(l, " for <t> ("), "  "))
	}
	sameLines(t, "still-running report", have, got)
}

// SIGINT and SIGTERM sent to shmrun reach every rank; shmrun reaps them
// all, says that the job was interrupted (or terminated), rather than
// that a rank was killed, and exits 130 (143), as a shell does for a
// command that the signal ended.
func TestSignalForwarding(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		for _, ft := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/ft=%v", sig, ft), func(t *testing.T) {
				pidDir := guard(t)
				const n = 2
				flags := []string{"-n", strconv.Itoa(n)}
				if ft {
					flags = append(flags, "--ft")
				}
				s := start(t, pidDir, flags, behave("block"))
				pids := s.readyPids(n)
				if err := s.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				if code := s.wait(); code != 128+int(sig) {
					t.Errorf("exit code %d, want %d", code, 128+int(sig))
				}
				want := map[syscall.Signal]string{syscall.SIGINT: "shmrun: job interrupted (SIGINT)\n",
					syscall.SIGTERM: "shmrun: job terminated (SIGTERM)\n"}[sig]
				if got := s.stderr.String(); got != want {
					t.Errorf("stderr %q, want %q", got, want)
				}
				// shmrun reaps its ranks before it exits: they must be
				// gone now, not merely soon.
				for r, pid := range pids {
					if ours(pid) {
						t.Errorf("rank %d (pid %d) still running after shmrun exited", r, pid)
					}
				}
				if extra := s.rest(); len(extra) > 0 {
					t.Errorf("unexpected output: %q", extra)
				}
			})
		}
	}
}

// Ranks that exit 0 without Finalize have failed all the same; when every
// rank fails, the job fails even with --ft.
func TestNoSurvivors(t *testing.T) {
	for _, ft := range []bool{false, true} {
		t.Run(fmt.Sprintf("ft=%v", ft), func(t *testing.T) {
			pidDir := guard(t)
			flags := []string{"-n", "2"}
			want := `^shmrun: rank [01] \(pid \d+\) exited with code 0 without finalizing; killing the job\n$`
			if ft {
				flags = append(flags, "--ft")
				line := summaryLine("[01]", "exited with code 0 without finalizing", anyDetector)
				want = "^" + line + `\n` + line + `\n` + regexp.QuoteMeta("shmrun: 0 of 2 ranks completed (finalized and exited 0); 2 failed") + "\n$"
			}
			r := shmrun(t, pidDir, nil, "", cmdline(flags, behave("abandon"))...)
			if r.code != 1 {
				t.Errorf("exit code %d, want 1", r.code)
			}
			if !regexp.MustCompile(want).MatchString(r.stderr) {
				t.Errorf("stderr does not match %s:\n%s", want, r.stderr)
			}
		})
	}
}

// kill -9 of shmrun leaves no rank process and no file: the ranks die of
// their parent-death signal and the segment was never linked.
func TestKillShmrun(t *testing.T) {
	pidDir := guard(t)
	before := shmFiles(t)
	// Become the subreaper of shmrun's orphans, so that the ranks are
	// our children once shmrun is dead: we can then wait for them (no
	// polling), see how they died, and leave no zombies to an init that
	// may never reap them.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	const n = 3
	s := start(t, pidDir, []string{"-n", strconv.Itoa(n)}, behave("block"))
	pids := s.readyPids(n)
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(); code != -1 {
		t.Errorf("shmrun exit code %d, want -1 (killed)", code)
	}
	// shmrun has been reaped, so its ranks have been handed to us.
	type end struct {
		pid int
		ws  syscall.WaitStatus
		err error
	}
	ends := make(chan end, n)
	for _, pid := range pids {
		go func() {
			var ws syscall.WaitStatus
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			for err == syscall.EINTR {
				_, err = syscall.Wait4(pid, &ws, 0, nil)
			}
			ends <- end{pid, ws, err}
		}()
	}
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case e := <-ends:
			switch {
			case e.err != nil:
				// Not our child after all: fall back to watching it.
				t.Logf("wait4(%d): %v; polling instead", e.pid, e.err)
				waitGone(t, []int{e.pid}, 10*time.Second)
			case !e.ws.Signaled() || e.ws.Signal() != syscall.SIGKILL:
				t.Errorf("rank pid %d ended with status %#x, want killed by SIGKILL (parent-death signal)", e.pid, e.ws)
			}
		case <-timeout:
			t.Fatalf("rank processes %v not all dead 10s after shmrun was killed", pids)
		}
	}
	// stdout reaches EOF once every rank has let go of it.
	s.rest()
	if left := newFiles(before, shmFiles(t)); len(left) > 0 {
		t.Errorf("files left in /dev/shm: %v", left)
	}
}

// The help goes to stdout (shmrun --help | less), with status 0; it
// lists every exit status.
func TestHelpToStdout(t *testing.T) {
	pidDir := guard(t)
	for _, flag := range []string{"--help", "-h"} {
		r := shmrun(t, pidDir, nil, "", flag)
		if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage: shmrun [flags] program [args...]\n") ||
			!strings.Contains(r.stdout, "--tag-output") {
			t.Errorf("%s: code %d, stdout %q, stderr %q", flag, r.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "--kill R@op=N") || !strings.Contains(r.stdout, "SHMPI_KILL") {
			t.Errorf("%s: the help does not explain --kill", flag)
		}
		// The segment's size as the launcher computes it, not a figure
		// that drifts from the layout.
		if need := launch.SegmentNeed(launch.DefaultLayout(2)); !strings.Contains(r.stdout, "("+need+")") {
			t.Errorf("%s: the help does not say the segment needs %s", flag, need)
		}
		for _, code := range []int{exitUsage, exitNoStart, exitTimeout, exitNotExec, exitNotFound, 130, 143} {
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^  %d  `, code)).MatchString(r.stdout) {
				t.Errorf("%s: the help does not explain exit status %d", flag, code)
			}
		}
	}
}

func TestUsage(t *testing.T) {
	pidDir := guard(t)
	r := shmrun(t, pidDir, nil, "", "--version")
	want := fmt.Sprintf(`^shmrun \(shmpi\) %s, segment layout version %d, go\S+\n$`, regexp.QuoteMeta(version), shm.Version)
	if r.code != 0 || r.stderr != "" || !regexp.MustCompile(want).MatchString(r.stdout) {
		t.Errorf("--version: code %d, stdout %q (want %s), stderr %q", r.code, r.stdout, want, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		code int
		says string // the first line of stderr
	}{
		{[]string{"--bogus"}, exitUsage, "shmrun: flag provided but not defined: -bogus"},
		{[]string{"-n", "two", "true"}, exitUsage, `shmrun: invalid value "two" for flag -n: parse error`},
		{[]string{}, exitUsage, "shmrun: no program given"},
		{[]string{"-n", "2"}, exitUsage, "shmrun: no program given"},
		{[]string{"-n", "0", "true"}, exitUsage, "shmrun: -n must be at least 1, got 0"},
		{[]string{"-n", "-3", "true"}, exitUsage, "shmrun: -n must be at least 1, got -3"},
		{[]string{"--bind-to", "bogus", "true"}, exitUsage, `shmrun: --bind-to takes core or none, not "bogus"`},
	} {
		// The error and where the help is: not the help, which would
		// scroll the error away.
		r := shmrun(t, pidDir, nil, "", tc.args...)
		want := tc.says + "\nRun 'shmrun --help' for usage.\n"
		if r.code != tc.code || r.stderr != want || r.stdout != "" {
			t.Errorf("shmrun %q: code %d, stdout %q, stderr %q; want code %d, stderr %q",
				tc.args, r.code, r.stdout, r.stderr, tc.code, want)
		}
	}
}

// A program that never calls Init runs as a plain command on each rank.
func TestNonMPIProgram(t *testing.T) {
	pidDir := guard(t)
	r := shmrun(t, pidDir, nil, "", "-n", "3", "echo", "hi")
	if r.code != 0 || r.stdout != "hi\nhi\nhi\n" || r.stderr != "" {
		t.Errorf("shmrun -n 3 echo hi: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := shmrun(t, pidDir, nil, "", "-n", "2", "false"); r.code != 1 {
		t.Errorf("shmrun -n 2 false: code %d, want 1; stderr %q", r.code, r.stderr)
	}
}

// checkRun fails the test unless r has exit status code, nothing on
// stdout and a first line of stderr matching re.
func checkRun(t *testing.T, args []string, r result, code int, re string) {
	t.Helper()
	first, _, _ := strings.Cut(r.stderr, "\n")
	if r.code != code || r.stdout != "" || !regexp.MustCompile(re).MatchString(first) {
		t.Errorf("shmrun %q: code %d, stdout %q, stderr %q; want code %d, stderr starting with a match of %s",
			args, r.code, r.stdout, r.stderr, code, re)
	}
}

// --timeout says that a duration needs a unit and refuses a negative one
// (flag.Duration said "parse error" and took -5s as no timeout); 0 is no
// timeout.
func TestTimeoutFlag(t *testing.T) {
	pidDir := guard(t)
	for _, tc := range []struct {
		arg  string
		code int
		says string
	}{
		{"1", exitUsage, `invalid value "1" for flag -timeout: a duration needs a unit, as in 1s or 1ms`},
		{"2.5", exitUsage, `invalid value "2.5" for flag -timeout: a duration needs a unit, as in 2.5s or 2.5ms`},
		{"-5s", exitUsage, `invalid value "-5s" for flag -timeout: a timeout cannot be negative \(0 means none\)`},
		{"soon", exitUsage, `invalid value "soon" for flag -timeout: not a duration such as 30s, 1m30s or 500ms`},
		{"0", 0, `^$`},
		{"1m", 0, `^$`},
	} {
		args := []string{"--timeout", tc.arg, "true"}
		r := shmrun(t, pidDir, nil, "", args...)
		re := tc.says
		if tc.code != 0 {
			re = "^shmrun: " + re + "$"
		}
		checkRun(t, args, r, tc.code, re)
	}
}

// A second SIGINT or SIGTERM kills ranks that survived the first with
// SIGKILL, and shmrun says so; the status is still the first signal's.
func TestSecondSignalKills(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		for _, ft := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/ft=%v", sig, ft), func(t *testing.T) {
				pidDir := guard(t)
				const n = 2
				flags := []string{"-n", strconv.Itoa(n)}
				if ft {
					flags = append(flags, "--ft")
				}
				s := start(t, pidDir, flags, behave("catch-signals"))
				pids := s.readyPids(n)
				if err := s.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				// Both ranks caught the first signal, so shmrun has
				// taken it: the next one is a second, not a duplicate
				// the kernel could merge with it.
				caught := regexp.MustCompile(fmt.Sprintf(`^rank [01] caught %v$`, sig))
				for range n {
					s.waitLine(caught)
				}
				if err := s.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				if code := s.wait(); code != 128+int(sig) {
					t.Errorf("exit code %d, want %d", code, 128+int(sig))
				}
				name := unix.SignalName(sig)
				what := map[syscall.Signal]string{syscall.SIGINT: "interrupted", syscall.SIGTERM: "terminated"}[sig]
				want := fmt.Sprintf("shmrun: second %s: killing the ranks with SIGKILL\nshmrun: job %s (%s)\n", name, what, name)
				if got := s.stderr.String(); got != want {
					t.Errorf("stderr %q, want %q", got, want)
				}
				for r, pid := range pids {
					if ours(pid) {
						t.Errorf("rank %d (pid %d) still running after shmrun exited", r, pid)
					}
				}
				if extra := s.rest(); len(extra) > 0 {
					t.Errorf("unexpected output: %q", extra)
				}
			})
		}
	}
}

// notExec writes a program file in bin (which every user can read) that
// execve refuses with ENOEXEC: no ELF header, no #!. shmrun cannot start
// it, so a test that runs it starts no rank even if shmrun's own checks
// are missing.
func notExec(t *testing.T) string {
	t.Helper()
	f, err := os.CreateTemp(bin, "noexec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if _, err := f.WriteString("not a program\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Chmod(0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// A job whose segment cannot fit in /dev/shm is refused before anything
// is made: the segment, created sparse, would fault (SIGBUS) in the ranks.
func TestSegmentTooLarge(t *testing.T) {
	pidDir := guard(t)
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil {
		t.Skipf("statfs /dev/shm: %v", err)
	}
	const n = 1 << 20
	if free := st.Bavail * uint64(st.Bsize); free >= launch.SegmentSize(launch.DefaultLayout(n)) {
		t.Skipf("/dev/shm has %d bytes free", free)
	}
	args := []string{"-n", strconv.Itoa(n), notExec(t)}
	r := shmrun(t, pidDir, nil, "", args...)
	checkRun(t, args, r, exitNoStart, fmt.Sprintf(`^shmrun: launch: %d ranks need a shared segment of [0-9.]+ GiB `+
		`\(%s\), but /dev/shm has [0-9.]+ [KMG]?i?B free$`, n, regexp.QuoteMeta(launch.SegmentNeed(launch.DefaultLayout(n)))))
}

// A job of more ranks than RLIMIT_NPROC allows is refused before any rank
// starts. The kernel does not apply the limit to root, so as root the
// test runs shmrun as nobody.
func TestProcessLimit(t *testing.T) {
	pidDir := guard(t)
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit(1) to set the limit")
	}
	prog := notExec(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	// 64 leaves room for shmrun's own threads, which count too.
	args := []string{"-n", "100", prog}
	cmd := exec.CommandContext(ctx, prlimit, append([]string{"--nproc=64", filepath.Join(bin, "shmrun")}, args...)...)
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	cmd.Env = append(os.Environ(), "SHMRUN_TEST_PIDDIR="+pidDir)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("shmrun still running after the %v deadline (killed); stderr:\n%s", deadline, se.String())
	}
	r := result{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	checkRun(t, args, r, exitNoStart,
		`^shmrun: launch: 100 ranks need 100 processes, but the process limit \(RLIMIT_NPROC, ulimit -u\) is 64$`)
}

// World.FT says whether the job tolerates failures: not without --ft,
// where the first failure kills the job, whatever the environment says;
// yes with --ft and in a singleton.
func TestWorldFT(t *testing.T) {
	pidDir := guard(t)
	for _, tc := range []struct {
		flags []string
		want  bool
	}{{nil, false}, {[]string{"--ft"}, true}} {
		// An SHMPI_FT inherited from the environment does not count.
		env := []string{"SHMPI_FT=1"}
		if tc.want {
			env = []string{"SHMPI_FT=0"}
		}
		r := shmrun(t, pidDir, env, "", cmdline(append([]string{"-n", "2"}, tc.flags...), behave("ft"))...)
		if r.code != 0 || r.stderr != "" {
			t.Errorf("%v: exit code %d, stderr:\n%s", tc.flags, r.code, r.stderr)
		}
		sameLines(t, fmt.Sprintf("%v: stdout", tc.flags), lines(t, "stdout", r.stdout),
			[]string{fmt.Sprintf("rank 0 ft %v", tc.want), fmt.Sprintf("rank 1 ft %v", tc.want)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	single := exec.CommandContext(ctx, filepath.Join(bin, "behave"), "-mode", "ft")
	single.Env = append(os.Environ(), "SHMRUN_TEST_PIDDIR="+pidDir, "SHMPI_FT=0")
	out, err := single.Output()
	if err != nil || string(out) != "rank 0 ft true\n" {
		t.Errorf("singleton: %v, stdout %q, want %q", err, out, "rank 0 ft true\n")
	}
}

// A rank that exits without calling Init is reported as such, not as a
// rank that did not finalize.
func TestNeverCalledInit(t *testing.T) {
	pidDir := guard(t)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"-n", "2", "false"}, 1, "exited with code 1 without calling Init"},
		{[]string{"-n", "2", "sh", "-c", "exit 5"}, 5, "exited with code 5 without calling Init"},
		{[]string{"-n", "2", "sh", "-c", "kill -9 $$"}, 128 + 9, `killed by signal 9 \(SIGKILL\) before calling Init`},
	} {
		r := shmrun(t, pidDir, nil, "", tc.args...)
		checkRun(t, tc.args, r, tc.code, `^shmrun: rank [01] \(pid \d+\) `+tc.says+`; killing the job$`)
	}
	// With --ft the summary says it too.
	args := []string{"-n", "2", "--ft", "false"}
	r := shmrun(t, pidDir, nil, "", args...)
	// A process that never called Init armed no liveness word: only the
	// launcher can see it end.
	line := summaryLine("[01]", "exited with code 1 without calling Init", `the launcher \(exit\)`)
	if want := "^" + line + "\n" + line + "\n" + regexp.QuoteMeta("shmrun: 0 of 2 ranks completed (finalized and exited 0); 2 failed") + "\n$"; r.code != 1 || r.stdout != "" || !regexp.MustCompile(want).MatchString(r.stderr) {
		t.Errorf("shmrun %q: code %d, stdout %q, stderr %q; want code 1 and stderr matching %s", args, r.code, r.stdout, r.stderr, want)
	}
}

// A program that exists but cannot be executed gives the shell's 126, one
// that does not exist 127.
func TestNotExecutable(t *testing.T) {
	pidDir := guard(t)
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := notExec(t)
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{plain}, exitNotExec, `^shmrun: exec: "` + regexp.QuoteMeta(plain) + `": permission denied$`},
		{[]string{"-n", "2", garbage}, exitNotExec,
			`^shmrun: launch: start rank 0: fork/exec ` + regexp.QuoteMeta(garbage) + `: exec format error$`},
		{[]string{os.TempDir()}, exitNotExec, `^shmrun: exec: "` + regexp.QuoteMeta(os.TempDir()) + `": is a directory$`},
		{[]string{"-n", "1", "/nonexistent/program"}, exitNotFound,
			`^shmrun: exec: "/nonexistent/program": stat /nonexistent/program: no such file or directory$`},
		{[]string{"-n", "2", "shmrun-no-such-program"}, exitNotFound,
			`^shmrun: exec: "shmrun-no-such-program": executable file not found in \$PATH$`},
	} {
		checkRun(t, tc.args, shmrun(t, pidDir, nil, "", tc.args...), tc.code, tc.says)
	}
}

// fail_detect starts its own jobs; under shmrun its ranks say so and
// fail, rather than complaining about a -mode the user never gave.
func TestFailDetectUnderShmrun(t *testing.T) {
	pidDir := guard(t)
	args := []string{"-n", "2", filepath.Join(bin, "fail_detect")}
	r := shmrun(t, pidDir, nil, "", args...)
	if r.code == 0 {
		t.Errorf("exit code 0, want non-zero")
	}
	if !strings.Contains(r.stderr, "fail_detect starts its own jobs; run it directly, not under shmrun\n") ||
		strings.Contains(r.stderr, "-mode") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// anyDetector matches whoever may declare a rank's failure: another
// rank's watcher (robust futex), a rank asleep on the dead rank's direct
// liveness word, or the launcher, when it reaps the process first.
const anyDetector = `(rank \d+ \(robust futex\)|rank \d+ \(direct liveness word\)|the launcher \(exit\))`

// summaryLine is a regular expression for the line shmrun --ft ends with
// for a failed rank; rank, how and detector are regular expressions. Its
// first submatch is the time of the failure in ms.
func summaryLine(rank, how, detector string) string {
	return `shmrun: rank ` + rank + ` failed: ` + how + ` at ([0-9]+\.[0-9]) ms; detected by ` + detector
}

// checkNeighbours checks the output of behave -mode neighbours in an
// n-rank job in which the ranks dead (in increasing order) were killed:
// every survivor stopped, with ErrProcFailed from a dead neighbour or
// ErrPeerFinalized from a live one that stopped first (so at least one
// with ErrProcFailed), and then knew of every dead rank.
func checkNeighbours(t *testing.T, stdout string, n int, dead []int) {
	t.Helper()
	isDead := make([]bool, n)
	for _, d := range dead {
		isDead[d] = true
	}
	stopRe := regexp.MustCompile(`^rank (\d+) stopped: (ErrProcFailed|ErrPeerFinalized) from rank (\d+)$`)
	seesRe := regexp.MustCompile(`^rank (\d+) sees failed (\[[0-9 ]*\])$`)
	stopped, sees := map[int]bool{}, map[int]string{}
	procFailed := 0
	for _, l := range lines(t, "stdout", stdout) {
		if m := stopRe.FindStringSubmatch(l); m != nil {
			r, _ := strconv.Atoi(m[1])
			p, _ := strconv.Atoi(m[3])
			switch {
			case r >= n || isDead[r] || stopped[r]:
				t.Errorf("unexpected line %q", l)
			case p >= n || p != (r+1)%n && p != (r+n-1)%n:
				t.Errorf("%q: rank %d is not a neighbour of rank %d", l, p, r)
			case (m[2] == "ErrProcFailed") != isDead[p]:
				t.Errorf("%q: rank %d is %s", l, p, map[bool]string{true: "dead", false: "alive"}[isDead[p]])
			}
			stopped[r] = true
			if m[2] == "ErrProcFailed" {
				procFailed++
			}
			continue
		}
		if m := seesRe.FindStringSubmatch(l); m != nil {
			r, _ := strconv.Atoi(m[1])
			if _, dup := sees[r]; r >= n || isDead[r] || dup {
				t.Errorf("unexpected line %q", l)
			}
			sees[r] = m[2]
			continue
		}
		t.Errorf("unexpected line %q", l)
	}
	for r := range n {
		if isDead[r] {
			continue
		}
		if !stopped[r] {
			t.Errorf("rank %d did not say what stopped it", r)
		}
		if want := fmt.Sprint(dead); sees[r] != want {
			t.Errorf("rank %d knows of failed ranks %q, want %s", r, sees[r], want)
		}
	}
	if procFailed == 0 {
		t.Errorf("no survivor stopped with ErrProcFailed; stdout:\n%s", stdout)
	}
}

// --kill RANK@DURATION: the rank SIGKILLs itself that long after its
// Init, in the middle of exchanges with its neighbours, who see
// ErrProcFailed. shmrun says who died, how, when and who saw it, and
// exits 0: the survivors finalized, and the failure was asked for.
func TestKillAfterDuration(t *testing.T) {
	pidDir := guard(t)
	const n = 4
	r := shmrun(t, pidDir, nil, "", cmdline([]string{"-n", strconv.Itoa(n), "--ft", "--kill", "2@50ms"}, behave("neighbours"))...)
	if r.code != 0 {
		t.Errorf("exit code %d, want 0", r.code)
	}
	re := regexp.MustCompile("^" + summaryLine("2", `killed by signal 9 \(SIGKILL\)`, anyDetector) + "\n" +
		regexp.QuoteMeta("shmrun: 3 of 4 ranks completed (finalized and exited 0); 1 killed by SHMPI_KILL as asked") + "\n$")
	if m := re.FindStringSubmatch(r.stderr); m == nil {
		t.Errorf("stderr does not match %s:\n%s", re, r.stderr)
	} else if ms, _ := strconv.ParseFloat(m[1], 64); ms < 50 {
		// The job started before the rank's Init.
		t.Errorf("rank 2 failed at %v ms, before its 50ms were up", ms)
	}
	checkNeighbours(t, r.stdout, n, []int{2})
	if pids := recordedPids(t, pidDir); len(pids) != n {
		t.Errorf("%d ranks recorded their pid, want %d", len(pids), n)
	}
}

// --kill RANK@op=N: the rank SIGKILLs itself inside its N-th call; two
// --kill flags kill two ranks. --kill replaces an SHMPI_KILL in shmrun's
// environment, which the ranks otherwise inherit.
func TestKillAtOp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		env   []string
		kills []string
		dead  []int
	}{
		{"first-call", 3, nil, []string{"1@op=1"}, []int{1}},
		{"later-call", 4, nil, []string{"3@op=40"}, []int{3}},
		{"replaces-env", 4, []string{"SHMPI_KILL=0@op=1"}, []string{"2@op=9"}, []int{2}},
		{"two-ranks", 5, nil, []string{"1@op=1", "3@op=1"}, []int{1, 3}},
		{"from-env", 3, []string{"SHMPI_KILL=2@op=5"}, nil, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidDir := guard(t)
			flags := []string{"-n", strconv.Itoa(tc.n), "--ft"}
			for _, k := range tc.kills {
				flags = append(flags, "--kill", k)
			}
			r := shmrun(t, pidDir, tc.env, "", cmdline(flags, behave("neighbours", "-failures", strconv.Itoa(len(tc.dead))))...)
			if r.code != 0 {
				t.Errorf("exit code %d, want 0", r.code)
			}
			var want []string
			for _, d := range tc.dead {
				want = append(want, summaryLine(strconv.Itoa(d), `killed by signal 9 \(SIGKILL\)`, anyDetector))
			}
			want = append(want, regexp.QuoteMeta(fmt.Sprintf("shmrun: %d of %d ranks completed (finalized and exited 0); %d killed by SHMPI_KILL as asked",
				tc.n-len(tc.dead), tc.n, len(tc.dead))))
			got := lines(t, "stderr", r.stderr)
			if len(got) != len(want) {
				t.Errorf("stderr has %d lines, want %d:\n%s", len(got), len(want), r.stderr)
			}
			// In the order of the failures, which is not the ranks'.
			for _, w := range want {
				re := regexp.MustCompile("^" + w + "$")
				if !slices.ContainsFunc(got, re.MatchString) {
					t.Errorf("no stderr line matches %s:\n%s", re, r.stderr)
				}
			}
			checkNeighbours(t, r.stdout, tc.n, tc.dead)
			if pids := recordedPids(t, pidDir); len(pids) != tc.n {
				t.Errorf("%d ranks recorded their pid, want %d", len(pids), tc.n)
			}
		})
	}
}

// Bad --kill values, and --kill without --ft, are usage errors: no rank
// starts (the program could not even be executed).
func TestKillFlag(t *testing.T) {
	pidDir := guard(t)
	prog := notExec(t)
	for _, tc := range []struct {
		flags []string
		says  string
	}{
		{[]string{"-n", "2", "--kill", "1@1s"}, "shmrun: --kill needs --ft: without it the first failure ends the job"},
		{[]string{"-n", "2", "--kill", "1@op=3"}, "shmrun: --kill needs --ft: without it the first failure ends the job"},
		{[]string{"-n", "2", "--ft", "--kill", "1"}, `shmrun: invalid value "1" for flag -kill: not RANK@DURATION or RANK@op=N`},
		{[]string{"-n", "2", "--ft", "--kill", ""}, `shmrun: invalid value "" for flag -kill: not RANK@DURATION or RANK@op=N`},
		{[]string{"-n", "2", "--ft", "--kill", "one@1s"}, `shmrun: invalid value "one@1s" for flag -kill: "one" is not a rank`},
		{[]string{"-n", "2", "--ft", "--kill", "2@1s"}, "shmrun: --kill 2@1s: no rank 2 in a job of 2 (ranks 0 to 1)"},
		{[]string{"--ft", "--kill", "1@op=1", "-n", "1"}, "shmrun: --kill 1@op=1: no rank 1 in a job of 1 (ranks 0 to 0)"},
		{[]string{"-n", "2", "--ft", "--kill", "-1@1s"}, "shmrun: --kill -1@1s: no rank -1 in a job of 2 (ranks 0 to 1)"},
		{[]string{"-n", "2", "--ft", "--kill", "1@5"}, `shmrun: invalid value "1@5" for flag -kill: a duration needs a unit, as in 5s or 5ms`},
		{[]string{"-n", "2", "--ft", "--kill", "1@0"}, `shmrun: invalid value "1@0" for flag -kill: a duration needs a unit, as in 0s or 0ms`},
		{[]string{"-n", "2", "--ft", "--kill", "1@-5ms"}, `shmrun: invalid value "1@-5ms" for flag -kill: a duration cannot be negative`},
		{[]string{"-n", "2", "--ft", "--kill", "1@soon"},
			`shmrun: invalid value "1@soon" for flag -kill: "soon" is not a duration such as 20ms or 1.5s, or op=N`},
		{[]string{"-n", "2", "--ft", "--kill", "1@op=0"}, `shmrun: invalid value "1@op=0" for flag -kill: op= takes a call number of at least 1, not "0"`},
		{[]string{"-n", "2", "--ft", "--kill", "1@op=x"}, `shmrun: invalid value "1@op=x" for flag -kill: op= takes a call number of at least 1, not "x"`},
		{[]string{"-n", "2", "--ft", "--kill", "1@op=2", "--kill", "1@op=3"}, "shmrun: --kill 1@op=3: rank 1 already dies at op=2"},
		{[]string{"-n", "3", "--ft", "--kill", "1@5ms,2@op=3"},
			`shmrun: invalid value "1@5ms,2@op=3" for flag -kill: one kill per --kill (repeat the flag)`},
	} {
		args := append(tc.flags, prog)
		r := shmrun(t, pidDir, nil, "", args...)
		checkRun(t, args, r, exitUsage, "^"+regexp.QuoteMeta(tc.says)+"$")
	}
	// Good values pass (the program then cannot run: 126).
	args := []string{"-n", "2", "--ft", "--kill", "0@0s", "--kill", "1@1m30s", "--kill", "1@op=7", "--kill", "0@op=1", prog}
	checkRun(t, args, shmrun(t, pidDir, nil, "", args...), exitNotExec, `^shmrun: launch: start rank 0: fork/exec .*: exec format error$`)
}

// Comm.Abort ends the job, with or without --ft, whatever communicator it
// is called on: shmrun kills every rank at once (one in a Recv, one in a
// barrier, the others asleep in time.Sleep), says who called it with
// which code, exits with the code (its low 8 bits, but never 0 for a code
// that is not 0) and leaves no process and no file. Abort itself waits
// 10 s for the launcher before it gives up; the whole run must take much
// less.
func TestAbort(t *testing.T) {
	for _, tc := range []struct {
		n            int
		ft           bool
		on           string
		code, status int
	}{
		{4, false, "world", 7, 7},
		{4, true, "world", 7, 7},
		{5, false, "dup", 42, 42},
		{5, true, "split", 300, 44},
		{3, true, "world", 256, 1},
		{3, false, "split", -1, 255},
		{4, true, "revoked", 11, 11},
		{3, false, "freed", 12, 12},
		{2, false, "world", 0, 0},
		{1, true, "world", 9, 9},
	} {
		t.Run(fmt.Sprintf("n=%d/ft=%v/%s/%d", tc.n, tc.ft, tc.on, tc.code), func(t *testing.T) {
			pidDir := guard(t)
			flags := []string{"-n", strconv.Itoa(tc.n)}
			if tc.ft {
				flags = append(flags, "--ft")
			}
			began := time.Now()
			r := shmrun(t, pidDir, nil, "", cmdline(flags, behave("abort", "-on", tc.on, "-code", strconv.Itoa(tc.code)))...)
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("the job took %v to end after Abort", took)
			}
			if r.code != tc.status {
				t.Errorf("exit code %d, want %d", r.code, tc.status)
			}
			if want := fmt.Sprintf("shmrun: rank %d called Abort(%d); killing the job\n", tc.n-1, tc.code); r.stderr != want {
				t.Errorf("stderr %q, want %q", r.stderr, want)
			}
			// Every rank got as far as its wait, and no further.
			var ready []int
			for _, l := range lines(t, "stdout", r.stdout) {
				var rk, pid int
				if _, err := fmt.Sscanf(l, "ready %d pid %d", &rk, &pid); err != nil {
					t.Errorf("unexpected stdout line %q", l)
				}
				ready = append(ready, rk)
			}
			if slices.Sort(ready); len(ready) != tc.n || ready[0] != 0 || ready[tc.n-1] != tc.n-1 {
				t.Errorf("ranks ready: %v, want 0 to %d", ready, tc.n-1)
			}
			if pids := recordedPids(t, pidDir); len(pids) != tc.n {
				t.Errorf("%d ranks recorded their pid, want %d", len(pids), tc.n)
			}
			// shmrun reaped its ranks before it exited (guard checks that
			// none is left, and no file in /dev/shm).
			for _, pid := range recordedPids(t, pidDir) {
				if ours(pid) {
					t.Errorf("rank pid %d still running after shmrun exited", pid)
				}
			}
		})
	}
}

// A singleton that calls Abort exits with the code.
func TestAbortSingleton(t *testing.T) {
	pidDir := guard(t)
	for _, tc := range []struct{ code, status int }{{5, 5}, {512, 1}, {0, 0}} {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "behave"), "-mode", "abort", "-code", strconv.Itoa(tc.code))
		cmd.Env = append(os.Environ(), "SHMRUN_TEST_PIDDIR="+pidDir)
		out, err := cmd.Output()
		cancel()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.status || !strings.HasPrefix(string(out), "ready 0 pid ") {
			t.Errorf("singleton Abort(%d): exit code %d, stdout %q; want code %d", tc.code, code, out, tc.status)
		}
	}
}

// Spawned ranks are started, watched, reaped and reported by shmrun like
// the first ones: their output passes through, a killed child is
// summarised with the others (by its rank slot), the completion line
// counts them, and a spawn past --universe fails with ErrSpawn.
func TestSpawnedRanks(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		pidDir := guard(t)
		r := shmrun(t, pidDir, nil, "", cmdline([]string{"-n", "2", "--universe", "5"}, behave("spawn"))...)
		if r.code != 0 {
			t.Errorf("exit code %d, want 0; stderr:\n%s", r.code, r.stderr)
		}
		sameLines(t, "stdout", lines(t, "stdout", r.stdout), []string{
			"rank 0 heard child 0", "rank 0 heard child 1", "rank 0 heard child 2",
			"rank 0 disconnected", "rank 1 disconnected",
			"child 0 of 3 done", "child 1 of 3 done", "child 2 of 3 done"})
		if len(recordedPids(t, pidDir)) != 5 {
			t.Errorf("%d rank processes, want 5", len(recordedPids(t, pidDir)))
		}
	})
	t.Run("child-killed", func(t *testing.T) {
		pidDir := guard(t)
		r := shmrun(t, pidDir, nil, "", cmdline([]string{"-n", "2", "--universe", "5", "--ft"}, behave("spawn", "-how", "kill"))...)
		if r.code != 128+9 {
			t.Errorf("exit code %d, want %d; stderr:\n%s", r.code, 128+9, r.stderr)
		}
		sameLines(t, "stdout", lines(t, "stdout", r.stdout), []string{
			"rank 0 heard child 0", "rank 0: child 1 failed", "rank 0 heard child 2",
			"rank 0 disconnected: ErrProcFailed", "rank 1 disconnected: ErrProcFailed",
			"child 0 of 3 done", "child 2 of 3 done"})
		want := "^" + summaryLine("3", `killed by signal 9 \(SIGKILL\)`, anyDetector) + "\n" +
			regexp.QuoteMeta("shmrun: 4 of 5 ranks completed (finalized and exited 0); 1 failed") + "\n$"
		if !regexp.MustCompile(want).MatchString(r.stderr) {
			t.Errorf("stderr does not match %s:\n%s", want, r.stderr)
		}
	})
	t.Run("past-universe", func(t *testing.T) {
		pidDir := guard(t)
		r := shmrun(t, pidDir, nil, "", cmdline([]string{"-n", "2"}, behave("spawn"))...)
		if r.code != 0 {
			t.Errorf("exit code %d, want 0; stderr:\n%s", r.code, r.stderr)
		}
		sameLines(t, "stdout", lines(t, "stdout", r.stdout), []string{"rank 0 got ErrSpawn", "rank 1 got ErrSpawn"})
		if len(recordedPids(t, pidDir)) != 2 {
			t.Errorf("%d rank processes, want 2", len(recordedPids(t, pidDir)))
		}
	})
}

// Spawned ranks die with shmrun, like the first ones (the parent-death
// signal of the thread that starts them all): once shmrun is killed
// with SIGKILL, every rank process is gone, stdout ends and no segment
// file is left (guard).
func TestKillShmrunWithSpawned(t *testing.T) {
	pidDir := guard(t)
	// As TestKillShmrun: the orphans become our children, to be reaped
	// here rather than left to an init that may be slow to.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	s := start(t, pidDir, []string{"-n", "2", "--universe", "5"}, behave("spawn", "-after", "block"))
	pids := s.readyPids(5)
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(); code != -1 {
		t.Errorf("shmrun exit code %d, want -1 (killed)", code)
	}
	s.rest() // EOF: every rank has let go of stdout
	type end struct {
		pid int
		ws  syscall.WaitStatus
		err error
	}
	ends := make(chan end, len(pids))
	for _, pid := range pids {
		go func() {
			var ws syscall.WaitStatus
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			for err == syscall.EINTR {
				_, err = syscall.Wait4(pid, &ws, 0, nil)
			}
			ends <- end{pid, ws, err}
		}()
	}
	timeout := time.After(10 * time.Second)
	for range pids {
		select {
		case e := <-ends:
			switch {
			case e.err != nil:
				waitGone(t, []int{e.pid}, 10*time.Second) // not our child after all
			case !e.ws.Signaled() || e.ws.Signal() != syscall.SIGKILL:
				t.Errorf("rank pid %d ended with status %#x, want killed by SIGKILL (parent-death signal)", e.pid, e.ws)
			}
		case <-timeout:
			t.Fatalf("rank processes %v (slots 0-4) not all dead 10s after shmrun was killed", pids)
		}
	}
}
