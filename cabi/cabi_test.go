package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests build shmpicc and shmrun once, let shmpicc build the library
// (into the same temporary directory), compile the C programs of
// testdata/ with it and run them under shmrun. Each program checks its
// own results and prints "OK" lines; a failure exits non-zero.

var (
	setupOnce sync.Once
	setupErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func setup(t *testing.T) string {
	t.Helper()
	setupOnce.Do(func() {
		if _, err := exec.LookPath("cc"); err != nil {
			setupErr = fmt.Errorf("no C compiler (cc) on PATH; the C interface's tests need one (gcc is part of the machine image): %v", err)
			return
		}
		binDir, setupErr = os.MkdirTemp("", "shmpi-cabi-test-")
		if setupErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", binDir+"/", "../cmd/shmpicc", "../cmd/shmrun").CombinedOutput()
		if err != nil {
			setupErr = fmt.Errorf("building shmpicc and shmrun: %v\n%s", err, out)
			return
		}
		cmd := exec.Command(filepath.Join(binDir, "shmpicc"), "-shmpi-lib")
		cmd.Env = append(os.Environ(), "SHMPI_LIBDIR="+binDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			setupErr = fmt.Errorf("building libmpi_abi.so: %v\n%s", err, out)
		}
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return binDir
}

var built sync.Map // program name -> error

// compile builds testdata/name.c into the binary directory.
func compile(t *testing.T, name string, extra ...string) string {
	t.Helper()
	dir := setup(t)
	exe := filepath.Join(dir, name)
	if v, ok := built.Load(name); ok {
		if v != nil {
			t.Fatal(v)
		}
		return exe
	}
	args := append([]string{"-O1", "-g", "-Wall", "-Werror", "-o", exe, filepath.Join("testdata", name+".c")}, extra...)
	cmd := exec.Command(filepath.Join(dir, "shmpicc"), args...)
	cmd.Env = append(os.Environ(), "SHMPI_LIBDIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		e := fmt.Errorf("shmpicc %s: %v\n%s", name, err, out)
		built.Store(name, e)
		t.Fatal(e)
	}
	built.Store(name, nil)
	return exe
}

type result struct {
	out, errOut string
	code        int
}

// runJob runs a program under shmrun with a deadline.
func runJob(t *testing.T, n int, flags []string, exe string, args ...string) result {
	t.Helper()
	dir := setup(t)
	full := append([]string{"-n", fmt.Sprint(n), "--timeout", "60s"}, flags...)
	full = append(full, exe)
	full = append(full, args...)
	cmd := exec.Command(filepath.Join(dir, "shmrun"), full...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("shmrun %s: exit %d in %v", strings.Join(full, " "), code, time.Since(start).Round(time.Millisecond))
	return result{so.String(), se.String(), code}
}

// expectOK runs a self-checking program and requires every rank to say
// OK and the job to succeed.
func expectOK(t *testing.T, n int, name string, flags ...string) result {
	t.Helper()
	exe := compile(t, name)
	r := runJob(t, n, flags, exe)
	if r.code != 0 || strings.Contains(r.out, "FAIL") {
		t.Fatalf("%s on %d ranks: exit %d\nstdout:\n%s\nstderr:\n%s", name, n, r.code, r.out, r.errOut)
	}
	if got := strings.Count(r.out, "OK\n"); got < n {
		t.Fatalf("%s: %d ranks said OK, want %d\nstdout:\n%s\nstderr:\n%s", name, got, n, r.out, r.errOut)
	}
	return r
}

func TestHello(t *testing.T) {
	expectOK(t, 4, "hello")
	// A singleton: no launcher.
	exe := compile(t, "hello")
	out, err := exec.Command(exe).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		t.Fatalf("singleton: %v\n%s", err, out)
	}
}

// Ranks that outnumber cores run without glibc's restartable sequences
// (the launcher sets GLIBC_TUNABLES); others keep them, as does a rank
// whose environment already says what to do with them.
func TestRseqWhenOversubscribed(t *testing.T) {
	exe := compile(t, "rseq")
	if strings.Contains(os.Getenv("GLIBC_TUNABLES"), "glibc.pthread.rseq=") {
		t.Fatalf("GLIBC_TUNABLES=%s: run the test without an rseq tunable", os.Getenv("GLIBC_TUNABLES"))
	}
	over := runtime.NumCPU() + 1
	for _, c := range []struct {
		n    int
		want string
	}{{1, "on"}, {over, "off"}} {
		r := runJob(t, c.n, nil, exe, c.want)
		if r.code != 0 || strings.Count(r.out, "OK\n") != c.n {
			t.Fatalf("%d ranks, want rseq %s: exit %d\nstdout:\n%s\nstderr:\n%s", c.n, c.want, r.code, r.out, r.errOut)
		}
	}
	// The user's choice stands.
	t.Setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=1")
	if r := runJob(t, over, nil, exe, "on"); r.code != 0 {
		t.Fatalf("%d ranks with GLIBC_TUNABLES=glibc.pthread.rseq=1: exit %d\nstdout:\n%s\nstderr:\n%s", over, r.code, r.out, r.errOut)
	}
}

func TestP2P(t *testing.T)     { expectOK(t, 4, "p2p") }
func TestP2P2(t *testing.T)    { expectOK(t, 3, "p2p2"); expectOK(t, 2, "p2p2") }
func TestTypes(t *testing.T)   { expectOK(t, 2, "types") }
func TestColl(t *testing.T)    { expectOK(t, 4, "coll"); expectOK(t, 3, "coll") }
func TestComm(t *testing.T)    { expectOK(t, 4, "comm") }
func TestErrors(t *testing.T)  { expectOK(t, 2, "errors") }
func TestThreads(t *testing.T) { expectOK(t, 2, "threads") }

// TestFastPath: MPI_Send and MPI_Recv of small messages without entering
// Go (fastpath.h), beside the general path.
func TestFastPath(t *testing.T) { expectOK(t, 2, "fastpath"); expectOK(t, 3, "fastpath") }

// TestFastPathFailure: a rank dies while its peer polls for its reply on
// the fast path; the survivors get MPIX_ERR_PROC_FAILED where ULFM says,
// and go on.
func TestFastPathFailure(t *testing.T) {
	exe := compile(t, "fastpath_ft")
	r := runJob(t, 3, []string{"--ft"}, exe)
	if strings.Contains(r.out, "FAIL") || strings.Count(r.out, "OK\n") != 2 || !strings.Contains(r.out, "rank 1 dies\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
}

// TestFastColl: the fast MPI_Allreduce and MPI_Barrier on 2 ranks as
// they come (they spin where there are 2 cores: the dissemination
// barrier), and while ranks sleep (SHMPI_SPIN=0 makes them, whatever
// the cores: the counter) on 2, 3 and 4.
func TestFastColl(t *testing.T) {
	r := expectOK(t, 2, "fastcoll")
	if want := "waits: spin\n"; runtime.NumCPU() >= 2 && !strings.Contains(r.out, want) {
		t.Fatalf("2 ranks on %d CPUs: want %q\n%s", runtime.NumCPU(), want, r.out)
	}
	t.Setenv("SHMPI_SPIN", "0")
	for _, n := range []int{2, 3, 4} {
		expectOK(t, n, "fastcoll")
	}
}

// TestFastCollFailure: members die before a fast allreduce and before a
// fast barrier; the survivors get MPIX_ERR_PROC_FAILED there (and, on 4
// ranks, shrink and go on on the fast path).
func TestFastCollFailure(t *testing.T) {
	exe := compile(t, "fastcoll_ft")
	for _, at := range []string{"allreduce", "barrier"} {
		r := runJob(t, 2, []string{"--ft"}, exe, at)
		if strings.Contains(r.out, "FAIL") || strings.Count(r.out, "OK\n") != 1 ||
			!strings.Contains(r.out, "member 1 of 2 dies before "+at+" 30\n") {
			t.Fatalf("2 ranks, death before %s: exit %d\nstdout:\n%s\nstderr:\n%s", at, r.code, r.out, r.errOut)
		}
	}
	t.Setenv("SHMPI_SPIN", "0")
	r := runJob(t, 4, []string{"--ft"}, exe)
	if strings.Contains(r.out, "FAIL") || strings.Count(r.out, "OK\n") != 2 ||
		!strings.Contains(r.out, "member 2 of 4 dies before allreduce 30\n") ||
		!strings.Contains(r.out, "member 1 of 3 dies before barrier 20\n") {
		t.Fatalf("4 ranks: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
}

// TestFatal: MPI_ERRORS_ARE_FATAL, the world's default, ends the job.
func TestFatal(t *testing.T) {
	exe := compile(t, "fatal")
	r := runJob(t, 2, nil, exe)
	if r.code == 0 || !strings.Contains(r.errOut, "MPI_Send") || strings.Contains(r.out, "after") {
		t.Fatalf("a fatal error did not end the job: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
}

// TestAbort: MPI_Abort ends every rank with the code.
func TestAbort(t *testing.T) {
	exe := compile(t, "abort")
	r := runJob(t, 4, nil, exe)
	if r.code != 7 || strings.Contains(r.out, "after") || !strings.Contains(r.errOut, "Abort(7)") {
		t.Fatalf("MPI_Abort(7): exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
}

// TestULFM: the spec's Example 15.5 in C, with a rank that kills itself
// (raise(SIGKILL)) and with one that shmrun's --kill kills.
func TestULFM(t *testing.T) {
	exe := compile(t, "ulfm")
	for _, c := range []struct {
		name  string
		n     int
		flags []string
		args  []string
	}{
		{"raise", 4, []string{"--ft"}, []string{"raise"}},
		{"kill", 4, []string{"--ft", "--kill", "2@op=40"}, nil},
		{"none", 3, []string{"--ft"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runJob(t, c.n, c.flags, exe, c.args...)
			survivors := c.n
			if c.name != "none" {
				survivors--
			}
			if strings.Contains(r.out, "FAIL") || strings.Count(r.out, "OK\n") != survivors {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
			}
			// MPI_Init made stdout line-buffered, as mpirun's ranks'.
			if c.name == "raise" && !strings.Contains(r.out, "rank 2 dies\n") {
				t.Fatalf("the line printed before raise(SIGKILL) was lost\nstdout:\n%s", r.out)
			}
		})
	}
}

func TestWin(t *testing.T) { expectOK(t, 3, "win") }

// TestFile: MPI-IO. file.c compares files that several ranks write
// (explicit offsets, pointers, collective, shared, ordered, nonblocking,
// split, views) with a sequential writer's and deletes them; file_err.c
// checks error classes and file error handlers.
func TestFile(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
	}{{"file", 4}, {"file", 3}, {"file", 1}, {"file_err", 3}, {"file_err", 1}} {
		exe := compile(t, c.name)
		dir := t.TempDir()
		r := runJob(t, c.n, nil, exe, dir)
		if r.code != 0 || strings.Contains(r.out, "FAIL") || strings.Count(r.out, "OK\n") != c.n {
			t.Fatalf("%s on %d ranks: exit %d\nstdout:\n%s\nstderr:\n%s", c.name, c.n, r.code, r.out, r.errOut)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("%s on %d ranks left %d files in %s", c.name, c.n, len(left), dir)
		}
	}
}

// TestFileULFM: a rank dies before a collective write; the survivors
// get MPIX_ERR_PROC_FAILED, revoke and close the file, shrink and
// rewrite it.
func TestFileULFM(t *testing.T) {
	exe := compile(t, "file_ulfm")
	for _, victim := range []string{"2", "0"} {
		dir := t.TempDir()
		r := runJob(t, 4, []string{"--ft"}, exe, dir, victim)
		if strings.Contains(r.out, "FAIL") || strings.Count(r.out, "OK\n") != 3 || !strings.Contains(r.out, "rank "+victim+" dies\n") {
			t.Fatalf("rank %s dies: exit %d\nstdout:\n%s\nstderr:\n%s", victim, r.code, r.out, r.errOut)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("%d files left in %s", len(left), dir)
		}
	}
}

// TestNBC: nonblocking and persistent collectives, Alltoallw, v forms
// with derived types, user ops, in place, large counts.
func TestNBC(t *testing.T) { expectOK(t, 4, "nbc"); expectOK(t, 3, "nbc") }

// TestInter: intercommunicators and their collectives.
func TestInter(t *testing.T) { expectOK(t, 5, "inter"); expectOK(t, 2, "inter") }

// TestObjs: MPI_INFO_ENV and the initial error handler; hints, attributes and names of communicators, datatypes and
// windows.
func TestObjs(t *testing.T) {
	expectOK(t, 3, "objs")
	// mpiexec's -initial-errhandler, through shmrun.
	exe := compile(t, "objs")
	r := runJob(t, 2, []string{"-initial-errhandler", "mpi_errors_return"}, exe, "return")
	if r.code != 0 || strings.Count(r.out, "OK\n") != 2 {
		t.Fatalf("objs return: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.out, r.errOut)
	}
}

// TestStaleRequest: a request handle stays invalid through 2^16 recycles
// of its slot.
func TestStaleRequest(t *testing.T) { expectOK(t, 2, "stalereq") }
