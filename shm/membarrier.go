package shm

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// membarrier(2) commands (linux/membarrier.h).
const (
	membarrierQuery                    = 0
	membarrierGlobalExpedited          = 1 << 1
	membarrierRegisterGlobalExpedited  = 1 << 2
	membarrierPrivateExpedited         = 1 << 3
	membarrierRegisterPrivateExpedited = 1 << 4
)

// membarrier is a raw syscall: it never blocks for long, and a syscall
// announced to the Go scheduler wakes sysmon from its deep sleep (when
// the rank's only P was idle) with its 20 µs tick restored for the next
// 50 ticks; pinned to the rank's CPU, each tick there is a switch of
// about 16 µs, and a 1-byte osu_mbw_mr ran 40% slower for those 4.5 ms
// (perf, 2026-11-25).
func membarrier(cmd int) error {
	if _, _, errno := syscall.RawSyscall(unix.SYS_MEMBARRIER, uintptr(cmd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// registerBarrier runs a registration, an announced syscall: it waits
// for an RCU grace period in a multi-threaded process (11-16 ms at a
// spawned rank's Init, 2026-11-26), and as a raw syscall it held the
// caller's P all that time, so a registration on a goroutine of its own
// (ranks' asyncBarrier) still stopped a rank with one P. It runs once
// per process.
func registerBarrier(cmd int) error {
	if _, _, errno := syscall.Syscall(unix.SYS_MEMBARRIER, uintptr(cmd), 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// RegisterPrivateBarrier registers this process for PrivateBarrier. It
// reports whether the kernel allows it.
func RegisterPrivateBarrier() bool { return registerBarrier(membarrierRegisterPrivateExpedited) == nil }

// PrivateBarrier makes every running thread of this process execute a
// full memory barrier before it returns.
func PrivateBarrier() { membarrier(membarrierPrivateExpedited) }

// HaveGlobalBarrier reports whether the kernel has GlobalBarrier.
func HaveGlobalBarrier() bool {
	mask, _, errno := unix.Syscall(unix.SYS_MEMBARRIER, membarrierQuery, 0, 0)
	return errno == 0 && mask&membarrierGlobalExpedited != 0
}

// RegisterGlobalBarrier registers this process as a target of
// GlobalBarrier. It reports whether the kernel allows it: only then may
// the process leave out the fences that GlobalBarrier stands in for.
func RegisterGlobalBarrier() bool { return registerBarrier(membarrierRegisterGlobalExpedited) == nil }

// GlobalBarrier makes every running thread of every process registered
// with RegisterGlobalBarrier execute a full memory barrier before it
// returns: a store such a thread made before is then visible, and a load
// it makes after sees what the caller stored before the call. It is the
// heavy half of an asymmetric Dekker pair whose light half (a store then
// a load, no fence) runs on every message (ranks' sleep protocol). About
// 0.3 µs here (2026-11-25, 2 vCPUs, a registered peer spinning).
func GlobalBarrier() error { return membarrier(membarrierGlobalExpedited) }
