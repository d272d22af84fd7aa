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
	if mode := os.Getenv("KEEPER_TEST_HELPER"); mode != "" {
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
	// stay open after the parent's death).
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	if len(fds) != 0 {
		t.Errorf("the keeper holds %d files", len(fds))
	}
	cmd.Process.Signal(unix.SIGKILL)
	cmd.Wait()
	gone(t, pid, "parent killed")
}

// A parent that exits takes its keeper with it.
func TestKeeperDiesWithExitingParent(t *testing.T) {
	cmd, pid := helper(t, "exit")
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	gone(t, pid, "parent exited")
}
