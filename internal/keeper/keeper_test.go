package keeper

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The helper process: it starts its keeper, says the keeper's pid, and
// either exits or waits to be killed.
func TestMain(m *testing.M) {
	if mode := os.Getenv("KEEPER_TEST_HELPER"); mode == "thread" {
		threadHelper()
	} else if mode != "" {
		runtime.LockOSThread()
		pid, err := Start()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("keeper", pid)
		if mode == "exit" {
			os.Exit(0)
		}
		select {}
	}
	os.Exit(m.Run())
}

// threadHelper starts the keeper from a thread that then ends, waits
// for that thread's task to be gone, says the keeper's pid, and waits to
// be killed.
func threadHelper() {
	// The main thread never ends (Go wedges it): keep the starting
	// goroutine off it.
	runtime.LockOSThread()
	type started struct{ pid, tid int }
	ch := make(chan started)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		pid, err := Start()
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		ch <- started{pid, unix.Gettid()}
	}()
	s := <-ch
	task := fmt.Sprintf("/proc/self/task/%d", s.tid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(task); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			fmt.Println("error: the starting thread did not end")
			os.Exit(1)
		}
		runtime.Gosched()
	}
	fmt.Println("keeper", s.pid)
	select {}
}

// helper starts the helper in mode and returns it and its keeper's pid.
func helper(t *testing.T, mode string) (*exec.Cmd, int) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("keeper: amd64 only")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "KEEPER_TEST_HELPER="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said nothing: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "keeper" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q", line)
	}
	pid, _ := strconv.Atoi(f[1])
	return cmd, pid
}

// gone waits, up to a deadline, for process pid to end (its pidfd
// readable), and fails the test if it does not.
func gone(t *testing.T, pid int, what string) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // already reaped
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds()))
		if err == syscall.EINTR {
			continue
		}
		if n == 1 {
			return
		}
		unix.Kill(pid, unix.SIGKILL)
		t.Fatalf("%s: keeper %d still alive 20 s later", what, pid)
	}
}

// The keeper shares its parent's address space and nothing else runs in
// it; it holds no file, and dies when its parent is killed.
func TestKeeperDiesWithKilledParent(t *testing.T) {
	cmd, pid := helper(t, "wait")
	maps := func(p int) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if a, b := maps(cmd.Process.Pid), maps(pid); a != b {
		t.Errorf("the keeper's address space is not its parent's:\n%s\n---\n%s", a, b)
	}
	// It holds none of its parent's files (a socket or pipe it held would
	// stay open after the parent's death), only its parent's pidfd.
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); l != "anon_inode:[pidfd]" {
			t.Errorf("the keeper holds file %s: %s", fd.Name(), l)
		}
	}
	if len(fds) > 1 {
		t.Errorf("the keeper holds %d files", len(fds))
	}
	// A kill of its parent's process group (a node's SIGKILL) leaves it
	// to follow its parent's end.
	if pg, _ := unix.Getpgid(pid); len(fds) == 1 && pg == cmd.Process.Pid {
		t.Errorf("the keeper is in its parent's process group")
	}
	cmd.Process.Signal(unix.SIGKILL)
	cmd.Wait()
	gone(t, pid, "parent killed")
}

// The keeper stays while any thread of its parent lives: here the
// thread that started it ends first, and the parent goes on. A keeper
// that left with that thread (its death signal) would let the parent's
// last thread tear the memory down in the parent's exit, before the
// parent's files close.
func TestKeeperOutlivesItsThread(t *testing.T) {
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err != nil {
		t.Skip("no pidfd_open: the keeper leaves with its parent thread")
	} else {
		unix.Close(fd)
	}
	// The helper says the keeper's pid only once the starting thread's
	// task is gone, by when a death signal would be pending or done.
	cmd, pid := helper(t, "thread")
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("the keeper is gone with the thread that started it: %v", err)
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, _ := unix.Poll(fds, 0); n != 0 {
		t.Errorf("the keeper ended with the thread that started it")
	}
	unix.Close(fd)
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && (f[0] == "SigPnd:" || f[0] == "ShdPnd:") {
			if m, _ := strconv.ParseUint(f[1], 16, 64); m&(1<<(unix.SIGKILL-1)) != 0 {
				t.Errorf("the keeper has a SIGKILL pending (%s)", l)
			}
		}
	}
	cmd.Process.Signal(unix.SIGKILL)
	cmd.Wait()
	gone(t, pid, "parent killed after its keeper's thread ended")
}
