package ranktest_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// The zombie test's protocol: the outer test makes two FIFOs in a
// directory it names in envZombieDir; ranks 0 and 2 of the victim job
// write "rank pid" lines to "pids", and rank 2 then reads "go" before it
// exits.
const envZombieDir = "SHMPI_RANKTEST_ZOMBIE_DIR"

// TestZombieVictim only runs inside TestDeadlineReportsZombie's child:
// ranks 0 and 1 wait for each other forever; rank 2 exits with code 3
// once the outer test traces it, so that it stays a zombie the launcher
// cannot reap (a traced process is reported to its tracer first).
func TestZombieVictim(t *testing.T) {
	dir := os.Getenv(envZombieDir)
	if dir == "" {
		t.Skip("run by TestDeadlineReportsZombie")
	}
	ranktest.RunOpts(t, ranktest.Options{N: 3, Timeout: 3 * time.Second}, func(r *ranktest.R) {
		if r.Rank != 1 {
			f, err := os.OpenFile(filepath.Join(dir, "pids"), os.O_WRONLY, 0)
			r.Check(err, "open pids")
			_, err = fmt.Fprintf(f, "%d %d\n", r.Rank, os.Getpid())
			r.Check(err, "write pids")
			f.Close()
		}
		if r.Rank == 2 {
			b, err := os.ReadFile(filepath.Join(dir, "go"))
			if err != nil || string(b) != "go" {
				r.Fatalf("read go: %q, %v", b, err)
			}
			syscall.Exit(3)
		}
		_, err := ranks.Recv(r.Comm, make([]byte, 1), 1-r.Rank, 5)
		r.Errorf("Recv returned: %v", err)
	})
}

// A rank that exited but that the launcher has not reaped (a zombie: here
// a debugger holds its exit) is reported as such at the deadline, not as
// alive, nor left out because the failure table calls it failed.
func TestDeadlineReportsZombie(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"pids", "go"} {
		if err := unix.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestZombieVictim$", "-test.count=1")
	cmd.Env = append(os.Environ(), envZombieDir+"="+dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	// Opened for writing too, so that a rank's close is no EOF; the
	// victim's end closes it, which ends a read that waits.
	pidsFile, err := os.OpenFile(filepath.Join(dir, "pids"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait(); pidsFile.Close() }()
	defer func() { // on a failure below, kill the victim (its ranks die with it)
		cancel()
		if waited != nil {
			<-waited
		}
	}()
	pids := map[int]int{}
	sc := bufio.NewScanner(pidsFile)
	for len(pids) < 2 && sc.Scan() {
		var r, pid int
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &r, &pid); err != nil {
			t.Fatalf("pids line %q", sc.Text())
		}
		pids[r] = pid
	}
	if pids[0] == 0 || pids[2] == 0 {
		t.Fatalf("pids %v (%v); victim output:\n%s", pids, sc.Err(), out.String())
	}

	// Trace rank 2, let it exit, and keep its exit from its parent (the
	// victim's launcher) until rank 0 dies: the launcher kills the ranks
	// only after it has read their state for its report.
	errc := make(chan error, 1)
	go func() { errc <- holdExit(pids[2], filepath.Join(dir, "go"), pids[0]) }()
	if err := <-errc; errors.Is(err, syscall.EPERM) {
		t.Skipf("cannot trace a rank here: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	err = <-waited
	waited = nil
	if err == nil {
		t.Fatalf("the victim test passed:\n%s", out.String())
	}
	s := out.String()
	t.Logf("victim output:\n%s", s)
	for _, want := range []string{
		`rank 2: exited with code 3, not reaped \(failure table: failed, detected by robust-futex(-direct)?\)`,
		`rank 0: alive; blocked in Recv\(peer=1, tag=5\) for `,
		`rank 1: alive; blocked in Recv\(peer=0, tag=5\) for `,
	} {
		if !regexp.MustCompile(want).MatchString(s) {
			t.Errorf("report lacks a match of %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, "rank 2: alive") {
		t.Errorf("the zombie is reported alive:\n%s", s)
	}
}

// holdExit traces process pid, tells it to go on through the FIFO goPath,
// waits until it has exited without reaping it (so that it stays a
// zombie to its parent), then, once process until has died, takes the
// exit, which hands it to the parent.
func holdExit(pid int, goPath string, until int) error {
	// ptrace requests must come from the tracing thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.PtraceSeize(pid); err != nil {
		return fmt.Errorf("PTRACE_SEIZE %d: %w", pid, err)
	}
	var ws syscall.WaitStatus
	// Whatever happens below, the exit is taken in the end.
	defer func() {
		syscall.Kill(pid, syscall.SIGKILL)
		for {
			_, err := syscall.Wait4(pid, &ws, unix.WALL, nil)
			if err != syscall.EINTR {
				return
			}
		}
	}()
	if err := os.WriteFile(goPath, []byte("go"), 0); err != nil {
		return err
	}
	// A traced process stops at every signal it gets (the Go runtime
	// sends itself some); resume it until it has exited. WNOWAIT leaves
	// the exit for later.
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WSTOPPED|unix.WNOWAIT|unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("waitid %d: %w", pid, err)
		}
		code := siginfoCode(&info)
		if code == cldExited || code == cldKilled || code == cldDumped {
			break
		}
		// A stop: resume it, passing a signal on, not a ptrace event.
		sig := siginfoStatus(&info)
		if sig>>8 != 0 {
			sig = 0
		}
		unix.PtraceCont(pid, int(sig))
	}
	pidfd, err := unix.PidfdOpen(until, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", until, err)
	}
	defer unix.Close(pidfd)
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, -1)
		if err != unix.EINTR {
			return err
		}
	}
}

// The SIGCHLD siginfo that waitid fills (x/sys has no accessors):
// si_code, and si_status at offset 24 (after si_pid and si_uid).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

func siginfoCode(info *unix.Siginfo) int32 { return info.Code }

func siginfoStatus(info *unix.Siginfo) int32 {
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), 24))
}
