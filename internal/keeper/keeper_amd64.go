package keeper

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The keeper's stack (it pushes one word, its signal mask) and the word
// it sets once it is ready. Globals: they never move, and the keeper
// shares this memory.
var (
	stack [4096]byte
	ready atomic.Uint32
)

//go:noescape
func clone(flags, stack, ppid, ready uintptr) (pid, errno uintptr)

func start() (int, error) {
	top := (uintptr(unsafe.Pointer(&stack[len(stack)-1])) + 1) &^ 15
	pid, errno := clone(unix.CLONE_VM|uintptr(unix.SIGCHLD), top, uintptr(unix.Getpid()), uintptr(unsafe.Pointer(&ready)))
	if errno != 0 {
		return 0, syscall.Errno(errno)
	}
	// Wait for it to be set up (its files closed, its death signal asked
	// for): until then it holds copies of this process's files.
	deadline := time.Now().Add(time.Second)
	for ready.Load() == 0 {
		var ws unix.WaitStatus
		if p, _ := unix.Wait4(int(pid), &ws, unix.WNOHANG, nil); p == int(pid) {
			return 0, errNotReady // it gave up (no close_range)
		}
		if time.Now().After(deadline) {
			unix.Kill(int(pid), unix.SIGKILL)
			unix.Wait4(int(pid), nil, 0, nil)
			return 0, errNotReady
		}
		runtime.Gosched()
		unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	return int(pid), nil
}
