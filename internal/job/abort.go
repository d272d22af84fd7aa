package job

import (
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/shm"
)

// Abort (MPI_Abort): a rank that calls Comm.Abort records the call in
// Global.abort, the first caller only, and wakes the launcher, which
// sleeps on the word's low half (WaitAbort). The launcher then kills
// every rank, the caller included, and ends with the code. Nothing else
// changes in the job: the other ranks see no failure and no revoke, they
// just die, as MPI_Abort's processes do.

// While the launcher kills the ranks one after another, those still
// running would see the first ones die, and a fault-tolerant program
// would start to recover (and print what it found) before its own end.
// So once an abort is recorded the failure table is frozen: nobody
// declares a failure (DeclareFailed, Repair, RecordExit), no wait wakes
// for one, and every rank stays where it was until it is killed.

// AbortClosed in the low half of Global.abort says that the launcher has
// stopped watching (every rank has exited).
const AbortClosed = ^uint32(0)

// abortLow is Global.abort's low half as a futex word (little-endian).
func (m *Map) abortLow() *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(m.abortRec)) }

// Abort records that world rank r aborts the job with code and wakes the
// launcher. It reports whether this call is the one recorded (false: a
// rank aborted first, or the launcher has closed the record).
func (m *Map) Abort(r int, code int32) bool {
	if !m.abortRec.CompareAndSwap(0, uint64(uint32(code))<<32|uint64(r+1)) {
		return false
	}
	shm.FutexWake(m.abortLow(), 1<<30)
	return true
}

// Aborted returns the recorded abort: the caller's world rank and the
// code, and whether there is one.
func (m *Map) Aborted() (rank, code int, ok bool) {
	v := m.abortRec.Load()
	if low := uint32(v); low != 0 && low != AbortClosed {
		return int(low) - 1, int(int32(v >> 32)), true
	}
	return 0, 0, false
}

// aborting reports whether a rank has aborted the job.
func (m *Map) aborting() bool {
	low := uint32(m.abortRec.Load())
	return low != 0 && low != AbortClosed
}

// WaitAbort sleeps until a rank aborts (ok) or the record is closed.
func (m *Map) WaitAbort() (rank, code int, ok bool) {
	for {
		if rank, code, ok := m.Aborted(); ok {
			return rank, code, true
		}
		if m.abortLow().Load() == AbortClosed {
			return 0, 0, false
		}
		shm.FutexWait(m.abortLow(), 0, 0)
	}
}

// CloseAbort closes the record and wakes WaitAbort. It reports false if
// a rank aborted first.
func (m *Map) CloseAbort() bool {
	if !m.abortRec.CompareAndSwap(0, uint64(AbortClosed)) {
		return false
	}
	shm.FutexWake(m.abortLow(), 1<<30)
	return true
}

// AbortStatus is the exit status of a job aborted with code, and of a
// singleton that aborts: the code's low 8 bits, as exit(3) takes them,
// except that a code that is not 0 never gives 0 (256 gives 1): a job
// aborted with an error must not look like a success.
func AbortStatus(code int) int {
	if s := code & 0xff; s != 0 || code == 0 {
		return s
	}
	return 1
}
