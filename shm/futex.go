package shm

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations. x/sys exports no op constants. The private flag (128)
// is never set: these words are shared between processes.
const (
	futexWait = 0
	futexWake = 1

	// Robust-futex bits the kernel defines for the liveness word.
	FutexWaiters   = 0x80000000
	FutexOwnerDied = 0x40000000

	futex2SizeU32 = 0x02
)

// FutexWait sleeps while *w == val, at most timeout (forever when
// timeout <= 0). A wake, a changed value, a signal and a timeout all
// return; the caller re-checks its condition.
func FutexWait(w *atomic.Uint32, val uint32, timeout time.Duration) {
	futexWaitOn(w, val, timeout, false)
}

// futexWaitOn is FutexWait; raw allows sleepSyscall's raw sleep.
func futexWaitOn(w *atomic.Uint32, val uint32, timeout time.Duration, raw bool) {
	var ts *unix.Timespec
	if timeout > 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	sleepSyscall(raw, unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(val), uintptr(unsafe.Pointer(ts)), 0)
}

// rawSleeper is set while a goroutine of this process sleeps in a futex
// without telling the Go scheduler (sleepSyscall).
var rawSleeper atomic.Bool

// sleepSyscall makes a futex sleep. A sleep announced to the Go
// scheduler (syscall.Syscall6) costs extra context switches when ranks
// outnumber cores: sysmon leaves its deep sleep and ticks every 20 µs,
// and an idle thread is started and parked again around the sleep; with
// 64 ranks on 2 cores perf counted about four switches per rank per
// barrier, three of them the runtime's. A raw syscall keeps the thread's
// P, so none of that happens. It is used by one goroutine of the process
// at a time and only when another P is left for the other goroutines;
// otherwise the sleep is an ordinary syscall. A signal (the runtime's
// preemption, every 10 ms) ends a raw sleep early; callers loop. Only
// the doorbell's sleeps, which are short and bounded, may be raw.
func sleepSyscall(raw bool, trap, a1, a2, a3, a4, a5 uintptr) (uintptr, syscall.Errno) {
	if raw && runtime.GOMAXPROCS(0) >= 2 && rawSleeper.CompareAndSwap(false, true) {
		r, _, e := syscall.RawSyscall6(trap, a1, a2, a3, a4, a5, 0)
		rawSleeper.Store(false)
		return r, e
	}
	r, _, e := syscall.Syscall6(trap, a1, a2, a3, a4, a5, 0)
	return r, e
}

// FutexWake wakes up to n sleepers on w and returns how many woke. It
// never blocks, so it is a raw syscall: announcing it to the Go scheduler
// costs the entry and exit bookkeeping, and if the waker is preempted
// inside the call (it often is: the woken rank may take its CPU), sysmon
// hands the P to another thread, which it must start (perf showed
// runtime.handoffp and startm under osu_barrier at 8 ranks on 2 cores).
func FutexWake(w *atomic.Uint32, n int) int {
	r, _, _ := syscall.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, uintptr(n), 0, 0, 0)
	return int(r)
}

// Yield gives the CPU to another runnable thread (sched_yield), as a raw
// syscall for the reasons FutexWake gives.
func Yield() {
	syscall.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
}

// WaitvEntry is the kernel's struct futex_waitv (24 bytes).
type WaitvEntry struct {
	Val   uint64
	Addr  uint64
	Flags uint32
	_     uint32
}

// SetWaitv fills e to wait on the 32-bit shared word w while it holds val.
func (e *WaitvEntry) SetWaitv(w *atomic.Uint32, val uint32) {
	e.Val = uint64(val)
	e.Addr = uint64(uintptr(unsafe.Pointer(w)))
	e.Flags = futex2SizeU32
}

// FutexWaitv sleeps until any of the entries' words is woken or differs
// from its expected value, or timeout passes (forever when <= 0). It
// returns the index woken, or -1 for a mismatch, timeout or signal.
func FutexWaitv(es []WaitvEntry, timeout time.Duration) int {
	r, _ := futexWaitv(es, timeout, false)
	return r
}

// futexWaitv is FutexWaitv that also says whether the timeout passed;
// raw allows sleepSyscall's raw sleep.
func futexWaitv(es []WaitvEntry, timeout time.Duration, raw bool) (int, bool) {
	if len(es) == 0 {
		return -1, false
	}
	var ts *unix.Timespec
	if timeout > 0 {
		t := unix.NsecToTimespec(monotonicNow() + int64(timeout))
		ts = &t
	}
	r, e := sleepSyscall(raw, unix.SYS_FUTEX_WAITV, uintptr(unsafe.Pointer(&es[0])), uintptr(len(es)), 0,
		uintptr(unsafe.Pointer(ts)), unix.CLOCK_MONOTONIC)
	if e != 0 {
		return -1, e == unix.ETIMEDOUT
	}
	return int(r), false
}

// futex_waitv takes an absolute CLOCK_MONOTONIC deadline, and reading
// that clock through unix.ClockGettime is a real syscall under this
// hypervisor (shm_limits measures it).
// Go's monotonic clock is CLOCK_MONOTONIC read through the vDSO, so one
// reading at start-up pairs the two.
var monoBase, monoStart = func() (int64, time.Time) {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano(), time.Now()
}()

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, without a syscall.
func monotonicNow() int64 { return monoBase + int64(time.Since(monoStart)) }
