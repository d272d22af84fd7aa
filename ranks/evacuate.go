package ranks

import (
	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/shm"
)

// homeCPU is 1 + the one CPU this process may run on, or 0 (the home
// that job.Map.Evacuate moves ranks from and back to).
func homeCPU() uint32 {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil || set.Count() != 1 {
		return 0
	}
	for c := 0; ; c++ {
		if set.IsSet(c) {
			return uint32(c + 1)
		}
	}
}

// declareDead declares world rank q failed after the kernel marked it
// dead (cause says how this rank saw it) and, if this call made the
// declaration, moves the ranks sharing q's CPU away while the kernel
// tears q's process down (job.Map.Evacuate). It moves them itself, at
// once: a goroutine could wait for a P for as long as sysmon sleeps
// (up to 10 ms) while the rank's own thread polls.
func (e *engine) declareDead(q int, cause uint32) {
	if e.t.DeclareFailed(q, cause, e.me) && e.evacuate {
		e.t.Evacuate(q)
	}
}

// checkLiveness declares every rank whose liveness word the kernel
// marked dead: the backstop when no watcher was woken.
func (e *engine) checkLiveness() {
	for q := range e.t.N {
		if e.t.State(q) == job.StAlive && shm.Dead(e.t.Liveness(q).Word.Load()) {
			e.declareDead(q, job.CauseRobust)
		}
	}
}

// noteWaiter records the thread this rank waits on, which an evacuation
// moves (job.Map.Evacuate). Waits that yield or sleep call it once each,
// and every 64th asks the kernel (gettid: 0.2 µs here, a quarter of a
// yield); Go moves a goroutine to another thread rarely.
func (e *engine) noteWaiter() {
	e.waitsNoted++
	if e.waitsNoted&63 != 1 {
		return
	}
	if tid := uint32(unix.Gettid()); e.waitTID != tid {
		e.waitTID = tid
		e.t.CB(e.me).WaitTID.Store(tid)
	}
}
