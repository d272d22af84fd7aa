package job

import (
	"sync/atomic"
	"time"

	"github.com/shmpi/shmpi/shm"
)

// The failure log: every failure of the job, once, in one order that
// every rank reads the same (N uint32 entries at areaLog, 1 + the world
// rank; Global.logLen counts the filled ones). Ranks learn failures in
// this order, so "the first k failures" (FailureAck, AckFailed, and the
// acknowledgement a member brings to an agreement) means the same set at
// every rank.
//
// Declaring a failure: the declarer claims the failed rank
// (CtlBlock.LogClaim, by compare-and-swap; one claimer), moves its state
// to StFailed, and appends it to the log. Appending is lock-free with
// help: an entry is written by compare-and-swap into the first empty
// position, and whoever finds a filled entry at logLen advances logLen,
// so no entry is ever left empty behind a filled one, even if its writer
// dies. A claimer that dies before it finished is itself declared failed
// (the detector is perfect), and then any rank may take its claim over
// (Repair), so no failure is ever left out of the log.

// entry is log position i.
func (m *Map) entry(i uint32) *atomicU32 { return (*atomicU32)(m.Seg.Ptr(m.log0 + uint64(i)*4)) }

// LogLen is how many failures the log holds.
func (m *Map) LogLen() int { return int(m.logLen.Load()) }

// LogEntry is the world rank at log position i (below LogLen).
func (m *Map) LogEntry(i int) int { return int(m.entry(uint32(i)).Load()) - 1 }

// LogIndex is world rank r's position in the log, or -1.
func (m *Map) LogIndex(r int) int { return int(m.CB(r).LogIndex.Load()) - 1 }

func (m *Map) appendLog(r int) {
	for {
		l := m.logLen.Load()
		e := m.entry(l)
		if v := e.Load(); v != 0 {
			m.logLen.CompareAndSwap(l, l+1) // help the writer of entry l
			continue
		}
		if e.CompareAndSwap(0, uint32(r)+1) {
			m.logLen.CompareAndSwap(l, l+1)
			m.CB(r).LogIndex.Store(l + 1)
			return
		}
	}
}

// DeclareFailed moves rank r to StFailed unless it already ended, logs
// it and tells everyone. It reports whether this call made the change.
// detector is the declaring world rank, -1 for the launcher.
func (m *Map) DeclareFailed(r int, cause uint32, detector int) bool {
	cb := m.CB(r)
	claim := uint32(detector + 2)
	if st := cb.State.Load(); st == StFailed || st == StFinalized {
		return false
	}
	if !cb.LogClaim.CompareAndSwap(0, claim) {
		// Someone else is declaring r; take over only if it died.
		holder := cb.LogClaim.Load()
		if holder < 2 || !m.deadRank(int(holder)-2) || !cb.LogClaim.CompareAndSwap(holder, claim) {
			return false
		}
	}
	st := &cb.State
	for {
		v := st.Load()
		if v == StFinalized {
			cb.LogClaim.Store(0)
			return false
		}
		if v == StFailed || st.CompareAndSwap(v, StFailed) {
			break
		}
	}
	cb.Cause.Store(cause)
	cb.Detector.Store(uint32(int32(detector)))
	cb.FailedAt.Store(uint64(time.Now().UnixNano()))
	if cb.LogIndex.Load() == 0 {
		m.appendLog(r)
	}
	m.Bump()
	return true
}

// DeadRank reports whether world rank q is dead: declared, or marked by
// the kernel.
func (m *Map) DeadRank(q int) bool { return m.deadRank(q) }

func (m *Map) deadRank(q int) bool {
	return m.State(q) == StFailed || shm.Dead(m.Liveness(q).Word.Load())
}

// Repair finishes the declarations that a claimer left unfinished when it
// died: a failed rank missing from the log, or a dead rank whose
// claimer died before moving it to StFailed. me is the repairing rank.
// It reports whether it changed anything.
func (m *Map) Repair(me int) bool {
	changed := false
	for r := range m.N {
		cb := m.CB(r)
		holder := cb.LogClaim.Load()
		if holder < 2 || cb.LogIndex.Load() != 0 || !m.deadRank(int(holder)-2) {
			continue
		}
		if cb.LogClaim.CompareAndSwap(holder, uint32(me+2)) {
			if cb.State.Load() != StFailed {
				cb.State.Store(StFailed)
				cb.Cause.Store(CauseRobust)
				cb.Detector.Store(uint32(int32(me)))
				cb.FailedAt.Store(uint64(time.Now().UnixNano()))
			}
			if cb.LogIndex.Load() == 0 {
				m.appendLog(r)
			}
			changed = true
		}
	}
	if changed {
		m.Bump()
	}
	return changed
}

type atomicU32 = atomic.Uint32
