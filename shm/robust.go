package shm

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LivenessEntry is a robust-futex list entry in the segment whose futex
// word holds the TID of the thread that registered it. When that thread
// dies for any reason, even SIGKILL, the kernel sets FutexOwnerDied in
// the word and wakes one waiter. Layout (16 bytes, 8-byte aligned):
//
//	+0  Next uint64  the kernel's list link; points back at the list head,
//	                 an address in the owning process only
//	+8  Word uint32  TID | FutexWaiters, then | FutexOwnerDied at death
//	+12 (pad)
type LivenessEntry struct {
	Next uint64
	Word atomic.Uint32
	_    uint32
}

// livenessWordOffset is the kernel's futex_offset: from entry to word.
const livenessWordOffset = 8

// robustHead is the per-thread list head the kernel reads at thread exit
// (struct robust_list_head, 24 bytes): list.next, futex_offset,
// list_op_pending. A global never moves, so its address is stable.
var robustHead [3]uint64

var livenessOnce sync.Mutex
var livenessStarted bool

// ErrLivenessStarted is returned when a process registers twice.
var ErrLivenessStarted = errors.New("shm: liveness thread already running in this process")

// StartLiveness makes a dedicated OS thread own entries: it stores its
// TID in each entry's word, registers them with the kernel as its robust
// list, in order, then runs body with that thread locked. At the
// thread's death the kernel marks and wakes the words in that order. The
// thread never exits (an exiting thread would be reported dead while the
// process lives), so body should block in syscalls; if it returns, the
// thread parks. StartLiveness returns once the words are armed.
func StartLiveness(entries []*LivenessEntry, body func()) error {
	if len(entries) == 0 {
		return errors.New("shm: StartLiveness without entries")
	}
	livenessOnce.Lock()
	defer livenessOnce.Unlock()
	if livenessStarted {
		return ErrLivenessStarted
	}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread must outlive nothing
		tid := uint32(unix.Gettid())
		head := uint64(uintptr(unsafe.Pointer(&robustHead)))
		for i, e := range entries {
			if i+1 < len(entries) {
				e.Next = uint64(uintptr(unsafe.Pointer(entries[i+1])))
			} else {
				e.Next = head // the list is circular through the head
			}
		}
		robustHead[0] = uint64(uintptr(unsafe.Pointer(entries[0])))
		robustHead[1] = livenessWordOffset
		robustHead[2] = 0
		_, _, e := syscall.RawSyscall(unix.SYS_SET_ROBUST_LIST, uintptr(unsafe.Pointer(&robustHead)), 24, 0)
		if e != 0 {
			ready <- e
			return
		}
		// Waiters bit set from the start: the kernel then always wakes
		// a watcher at our death, with no handshake with each watcher.
		for _, e := range entries {
			e.Word.Store(tid | FutexWaiters)
			FutexWake(&e.Word, 1<<30) // watchers that saw 0 re-arm
		}
		ready <- nil
		body()
		for {
			time.Sleep(time.Hour)
		}
	}()
	if err := <-ready; err != nil {
		return err
	}
	livenessStarted = true
	return nil
}

// Disarm clears the TID from a liveness word owned by this process, so
// that its normal exit is not reported as a death.
func (e *LivenessEntry) Disarm() { e.Word.Store(0) }

// Dead reports whether the kernel marked the owner of word v dead.
func Dead(v uint32) bool { return v&FutexOwnerDied != 0 }
