package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests run the real shmrun binary on real rank processes: TestMain
// builds shmrun, the ring example and testdata/behave once.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shmrun-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	build := exec.Command(gobin, "build", "-o", dir+"/", "shmpi/cmd/shmrun", "shmpi/examples/ring", "./testdata/behave")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	bin = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// shmrun runs shmrun with args under a deadline and checks afterwards
// that it left no segment file behind.
func shmrun(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	before := shmFiles()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "shmrun"), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("shmrun %v did not finish within the deadline\nstdout:\n%s\nstderr:\n%s", args, so.String(), se.String())
	}
	r := result{stdout: so.String(), stderr: se.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if left := newFiles(before, shmFiles()); len(left) > 0 {
		t.Errorf("files left in /dev/shm: %v", left)
	}
	return r
}

func shmFiles() map[string]bool {
	m := map[string]bool{}
	names, _ := filepath.Glob("/dev/shm/shmpi-*")
	for _, n := range names {
		m[n] = true
	}
	return m
}

func newFiles(before, after map[string]bool) []string {
	var out []string
	for n := range after {
		if !before[n] {
			out = append(out, n)
		}
	}
	return out
}

func behave(mode string, more ...string) []string {
	return append([]string{filepath.Join(bin, "behave"), "-mode", mode}, more...)
}

func TestRingExample(t *testing.T) {
	for _, n := range []string{"1", "4"} {
		r := shmrun(t, nil, "", "-n", n, filepath.Join(bin, "ring"), "-laps", "100")
		if r.code != 0 || !strings.Contains(r.stdout, "ring: "+n+" ranks, 100 laps") {
			t.Fatalf("-n %s: code %d\n%s%s", n, r.code, r.stdout, r.stderr)
		}
	}
}

func TestTagOutput(t *testing.T) {
	r := shmrun(t, nil, "", append([]string{"-n", "3", "--tag-output"}, behave("hello")...)...)
	if r.code != 0 {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	sort.Strings(lines)
	want := []string{"[0] hello from 0", "[0] second line from 0", "[1] hello from 1", "[1] second line from 1",
		"[2] hello from 2", "[2] second line from 2"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Fatalf("tagged output:\n%s", r.stdout)
	}
}

func TestStdinGoesToRank0(t *testing.T) {
	r := shmrun(t, nil, "some input\n", append([]string{"-n", "3"}, behave("stdin")...)...)
	if r.code != 0 {
		t.Fatalf("code %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{`rank 0 stdin "some input\n"`, `rank 1 stdin ""`, `rank 2 stdin ""`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("missing %q in:\n%s", want, r.stdout)
		}
	}
}

func TestEnvironmentPassesThrough(t *testing.T) {
	r := shmrun(t, []string{"SHMRUN_TEST_VAR=xyzzy"}, "", append([]string{"-n", "2"}, behave("env")...)...)
	if r.code != 0 || strings.Count(r.stdout, "env xyzzy") != 2 {
		t.Fatalf("code %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Without --ft the first failure ends the job, with the rank's status.
func TestFailureEndsJob(t *testing.T) {
	for _, tc := range []struct {
		how  string
		code int
		says string
	}{{"exit", 3, "exited with code 3 without finalizing"}, {"kill", 128 + 9, "killed by signal 9"}} {
		t.Run(tc.how, func(t *testing.T) {
			r := shmrun(t, nil, "", append([]string{"-n", "3"}, behave("die", "-how", tc.how)...)...)
			if r.code != tc.code {
				t.Errorf("exit code %d, want %d", r.code, tc.code)
			}
			if !strings.Contains(r.stderr, "rank 1 (pid") || !strings.Contains(r.stderr, tc.says) ||
				!strings.Contains(r.stderr, "killing the job") {
				t.Errorf("stderr does not say who died and how:\n%s", r.stderr)
			}
		})
	}
}

// With --ft the survivors see ErrProcFailed, finish, and shmrun exits 0
// with a one-line summary.
func TestFaultTolerantJob(t *testing.T) {
	for _, how := range []string{"exit", "kill"} {
		t.Run(how, func(t *testing.T) {
			r := shmrun(t, nil, "", append([]string{"-n", "4", "--ft"}, behave("die", "-how", how)...)...)
			if r.code != 0 {
				t.Fatalf("exit code %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			for _, s := range []int{0, 2, 3} {
				if !strings.Contains(r.stdout, fmt.Sprintf("rank %d got ErrProcFailed", s)) {
					t.Errorf("rank %d did not report ErrProcFailed:\n%s", s, r.stdout)
				}
			}
			if !regexp.MustCompile(`(?m)^shmrun: 1 of 4 ranks failed: rank 1 `).MatchString(r.stderr) {
				t.Errorf("no summary line:\n%s", r.stderr)
			}
		})
	}
}

// A rank that exits non-zero after Finalize is not a failure, but the job
// fails.
func TestNonZeroAfterFinalize(t *testing.T) {
	for _, ft := range []bool{false, true} {
		args := []string{"-n", "3"}
		if ft {
			args = append(args, "--ft")
		}
		r := shmrun(t, nil, "", append(args, behave("finalize-exit1")...)...)
		if r.code == 0 {
			t.Errorf("ft=%v: exit code 0 though rank 1 exited 1", ft)
		}
		if strings.Contains(r.stderr, "ranks failed") {
			t.Errorf("ft=%v: a finalized rank reported as failed:\n%s", ft, r.stderr)
		}
	}
}

// --timeout kills the job, says who is still running and where.
func TestTimeout(t *testing.T) {
	r := shmrun(t, nil, "", append([]string{"-n", "2", "--timeout", "2s"}, behave("block")...)...)
	if r.code != 124 {
		t.Errorf("exit code %d, want 124", r.code)
	}
	for _, want := range []string{"timeout after 2s", "rank 0: alive; blocked in Recv(peer=1, tag=99)",
		"rank 1: alive; blocked in Recv(peer=0, tag=99)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// startBlocked starts shmrun on blocking ranks and returns it and the
// ranks' pids once every rank said it is ready.
func startBlocked(t *testing.T, n int) (*exec.Cmd, []int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "shmrun"), append([]string{"-n", strconv.Itoa(n)}, behave("block")...)...)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pids := make(chan []int, 1)
	go func() {
		var ps []int
		sc := bufio.NewScanner(out)
		for len(ps) < n && sc.Scan() {
			var r, pid int
			if _, err := fmt.Sscanf(sc.Text(), "ready %d pid %d", &r, &pid); err == nil {
				ps = append(ps, pid)
			}
		}
		pids <- ps
		for sc.Scan() {
		}
	}()
	select {
	case ps := <-pids:
		if len(ps) != n {
			cmd.Process.Kill()
			t.Fatalf("only %d ranks became ready", len(ps))
		}
		return cmd, ps
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("ranks never became ready")
	}
	return nil, nil
}

// waitGone waits (under a deadline) until every pid has disappeared. A
// zombie counts as gone: it runs nothing and holds no memory, and once
// shmrun is dead, reaping it is init's business.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) != syscall.ESRCH && !zombie(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("rank process %d still exists", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestSignalForwarding(t *testing.T) {
	before := shmFiles()
	cmd, pids := startBlocked(t, 2)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("shmrun exited 0 after its ranks were terminated")
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("shmrun did not exit after SIGTERM")
	}
	waitGone(t, pids)
	if left := newFiles(before, shmFiles()); len(left) > 0 {
		t.Errorf("files left: %v", left)
	}
}

// kill -9 of shmrun leaves no rank process and no file.
func TestKillShmrun(t *testing.T) {
	before := shmFiles()
	cmd, pids := startBlocked(t, 3)
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, pids)
	if left := newFiles(before, shmFiles()); len(left) > 0 {
		t.Errorf("files left: %v", left)
	}
}

func TestUsage(t *testing.T) {
	if r := shmrun(t, nil, "", "--help"); r.code != 0 || !strings.Contains(r.stderr, "usage: shmrun") {
		t.Errorf("--help: %d %q", r.code, r.stderr)
	}
	if r := shmrun(t, nil, "", "--version"); r.code != 0 || !strings.Contains(r.stdout, "shmrun (shmpi)") {
		t.Errorf("--version: %d %q", r.code, r.stdout)
	}
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--bogus"}, 2, "flag provided but not defined"},
		{[]string{"-n", "2"}, 2, "no program given"},
		{[]string{"-n", "0", "true"}, 2, "-n must be at least 1"},
		{[]string{"--bind-to", "bogus", "true"}, 2, "--bind-to takes core or none"},
		{[]string{"-n", "1", "/nonexistent/program"}, 127, "no such file"},
	} {
		r := shmrun(t, nil, "", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.says) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.says)
		}
	}
}

// A program that never calls Init runs as a plain command.
func TestNonMPIProgram(t *testing.T) {
	if r := shmrun(t, nil, "", "-n", "3", "true"); r.code != 0 {
		t.Errorf("shmrun -n 3 true: %d %s", r.code, r.stderr)
	}
}
