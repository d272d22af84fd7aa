package shm

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func mustCreate(t *testing.T, spec Spec) *Segment {
	t.Helper()
	seg, err := Create(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seg.Close() })
	return seg
}

func dupFD(t *testing.T, f *os.File) int {
	t.Helper()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// futexWords returns n words, a cache line each, in a fresh segment: the
// shared memory futexes are for. (Not Go variables: a goroutine's stack
// moves, and a word on it would move away from a thread asleep on its
// old address.)
func futexWords(t *testing.T, n int) []*atomic.Uint32 {
	t.Helper()
	seg := mustCreate(t, Spec{Ranks: 1, Dir: t.TempDir(), Areas: []AreaSpec{{Count: n, Stride: CacheLine}}})
	ws := make([]*atomic.Uint32, n)
	for i := range ws {
		ws[i] = seg.U32(seg.Area(0).Off + uint64(i)*CacheLine)
	}
	return ws
}

// onThread runs f on a goroutine locked to its own thread and returns
// that thread's id and a channel closed when f returns.
func onThread(f func()) (int, <-chan struct{}) {
	tid := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		f()
		close(done)
	}()
	return <-tid, done
}

// asleep reports whether thread tid of this process is blocked in
// syscall nr with first argument addr (addr 0: any).
func asleep(tid int, nr uintptr, addr unsafe.Pointer) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", tid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return false // "running"
	}
	n, _ := strconv.ParseUint(f[0], 10, 64)
	a, _ := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
	return uintptr(n) == nr && (addr == nil || uintptr(a) == uintptr(addr))
}

// waitAsleep waits until thread tid blocks in syscall nr on addr. It is a
// poll with a deadline: what the test then asserts does not depend on
// how long it took.
func waitAsleep(t *testing.T, tid int, nr uintptr, addr unsafe.Pointer, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !asleep(tid, nr, addr) {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", tid))
			t.Fatalf("%s (thread %d) never went to sleep on %p: its syscall is %q", what, tid, addr, strings.TrimSpace(string(b)))
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10s", what)
	}
}

func requireProcSyscall(t *testing.T) {
	t.Helper()
	if _, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", unix.Gettid())); err != nil {
		t.Skip("no /proc/<pid>/task/<tid>/syscall:", err)
	}
}
