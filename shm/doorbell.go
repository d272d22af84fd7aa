package shm

import (
	"sync/atomic"
	"time"
)

// Doorbell is a shared 32-bit word a process sleeps on when it has
// nothing to do, and that others ring after giving it work. Bit 31 says
// a sleeper announced itself; the low bits count rings so that a sleeper
// that armed before a ring does not go to sleep after it. Ring costs one
// load and no syscall unless someone sleeps.
//
// Protocol (a Dekker pair, both sides sequentially consistent):
//
//	poster:  publish work (atomic store or CAS), then Ring
//	sleeper: t := Arm(); re-check for work; if none, Sleep(t)
type Doorbell struct{ w *atomic.Uint32 }

const doorbellWaiter = 1 << 31

// NewDoorbell wraps the shared word w.
func NewDoorbell(w *atomic.Uint32) Doorbell { return Doorbell{w} }

// Ring wakes every sleeper, if there is one.
func (d Doorbell) Ring() {
	if d.w.Load()&doorbellWaiter != 0 {
		d.ringSlow()
	}
}

func (d Doorbell) ringSlow() {
	for {
		v := d.w.Load()
		if v&doorbellWaiter == 0 {
			return // someone else rang
		}
		if d.w.CompareAndSwap(v, (v+1)&^doorbellWaiter) {
			FutexWake(d.w, 1<<30)
			return
		}
	}
}

// Arm announces a sleeper and returns the token to pass to Sleep. The
// caller must re-check for work after Arm and before Sleep.
func (d Doorbell) Arm() uint32 {
	for {
		v := d.w.Load()
		if v&doorbellWaiter != 0 || d.w.CompareAndSwap(v, v|doorbellWaiter) {
			return v | doorbellWaiter
		}
	}
}

// Sleep blocks until the doorbell rings after Arm returned token, or
// timeout passes. It may return early; callers loop.
func (d Doorbell) Sleep(token uint32, timeout time.Duration) {
	futexWaitOn(d.w, token, timeout, true)
}

// SleepOr is Sleep that also returns when the shared word w no longer
// holds val or is woken: one futex_waitv on both words. It reports
// whether it returned because timeout passed, so that callers need not
// read the clock around it.
func (d Doorbell) SleepOr(token uint32, w *atomic.Uint32, val uint32, timeout time.Duration) (timedOut bool) {
	var es [2]WaitvEntry
	es[0].SetWaitv(d.w, token)
	es[1].SetWaitv(w, val)
	_, timedOut = futexWaitv(es[:], timeout, true)
	return timedOut
}

// SleepOr2 is SleepOr on two more words; w2 may be nil.
func (d Doorbell) SleepOr2(token uint32, w1 *atomic.Uint32, v1 uint32, w2 *atomic.Uint32, v2 uint32, timeout time.Duration) (timedOut bool) {
	var es [3]WaitvEntry
	es[0].SetWaitv(d.w, token)
	es[1].SetWaitv(w1, v1)
	k := 2
	if w2 != nil {
		es[2].SetWaitv(w2, v2)
		k = 3
	}
	_, timedOut = futexWaitv(es[:k], timeout, true)
	return timedOut
}

// Armed reports whether a sleeper has announced itself.
func (d Doorbell) Armed() bool { return d.w.Load()&doorbellWaiter != 0 }
