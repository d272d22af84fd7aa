package job

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Evacuation. When ranks outnumber cores, shmrun binds each rank to one
// CPU (its home, CtlBlock.HomeCPU). The kernel declares a rank's death
// early in its exit (the robust list is processed before the address
// space goes) and then tears the process down on the CPU it ran on:
// 1.1-1.8 ms for a rank process on this machine kind (fail_detect's
// teardown), during which a kernel built without preemption
// (PREEMPT_NONE, as here) runs nothing else on that CPU. The ranks
// queued there are survivors that must learn of the failure, and every
// collective of the recovery waits for them. So the rank that declares
// such a death moves the ranks at home on the dead rank's CPU to the
// job's other CPUs (Evacuate), and the launcher moves them back when it
// reaps the dead process (RecordExit), which is when the teardown has
// ended. When there are too many to move, the dead process's threads go
// under SCHED_IDLE instead (idleTeardown).
//
// Moving a rank moves two of its threads: its main thread, which a C
// program's calls run on, and the thread it last waited on (WaitTID),
// which runs a Go program's calls (Go moves goroutines between threads
// rarely, and the main goroutine leaves the main thread early). Listing
// every thread in /proc took 50-70 µs a process the first time, in the
// kernel, on a CPU the other survivors need; threads that stay home are
// idle ones.

// maxMovers: above it the evacuation is not made. `ulfm_recovery` on 2
// cores (2026-11-27, 9 runs of each, interleaved with
// SHMPI_EVACUATE=0 and the build before, medians): 8 ranks (3 to move)
// 0.80 ms in all against 1.47 and 1.44, the error phase 0.38 ms against
// 0.95 and 1.05; 16 ranks (7 to move) error phase 0.90 ms against 1.27
// and 1.30, but 2.32 ms in all against 2.05 and 1.85; 64 ranks (31)
// error phase 3.3 ms against 2.3: one CPU runs every survivor, and the
// moves cost 2 syscalls a rank each way and the return a /proc walk.
const maxMovers = 4

// Evacuate moves the live ranks whose home is dead's home CPU to the
// homes of the others, marking each (CtlBlock.Evacuated) for the
// launcher to bring back. The caller has just declared dead failed after
// the kernel marked it.
func (m *Map) Evacuate(dead int) {
	cb := m.CB(dead)
	home := cb.HomeCPU.Load()
	if home == 0 || cb.Reaped.Load() != 0 {
		return
	}
	var others unix.CPUSet
	var movers []int
	for q := range m.N {
		if q == dead || m.State(q) != StAlive {
			continue
		}
		switch h := m.CB(q).HomeCPU.Load(); h {
		case 0:
		case home:
			movers = append(movers, q)
		default:
			others.Set(int(h - 1))
		}
	}
	if others.Count() == 0 || len(movers) > maxMovers {
		if len(movers) > 0 {
			idleTeardown(int(cb.Pid.Load()))
		}
		return
	}
	for _, q := range movers {
		qb := m.CB(q)
		pid, tid := qb.Pid.Load(), qb.WaitTID.Load()
		if tid == pid || tid != 0 && unix.Tgkill(int(pid), int(tid), 0) != nil {
			tid = 0 // the main thread, or no longer a thread of the rank
		}
		qb.EvacTID.Store(tid)
		qb.Evacuated.Store(uint32(dead) + 1)
		for _, t := range [2]uint32{tid, pid} {
			if t != 0 {
				unix.SchedSetaffinity(int(t), &others)
			}
		}
	}
	// The launcher brings them back once it has reaped dead. If that
	// happened while they were being moved, it may have brought a rank
	// back before the move: bring every one back here too.
	if cb.Reaped.Load() != 0 {
		for _, q := range movers {
			m.CB(q).Evacuated.CompareAndSwap(uint32(dead)+1, 0)
			m.sendHome(q)
		}
	}
}

// idleTeardown puts the threads of the dead process pid under
// SCHED_IDLE, when the survivors at home on its CPU stay there (too many
// to move): they then run before its teardown, which takes what CPU
// they leave. ulfm_recovery on 2 cores (2026-11-27), interleaved runs,
// medians of the error phase without and with: 64 ranks 1,599 and
// 1,160 µs, 1,488 and 1,072, 1,795 and 1,446 (totals 3,740 and 3,167,
// 3,257 and 2,561, 4,031 and 3,550); 16 ranks 966 and 337, 1,011 and
// 656 (totals 1,548 and 791, 1,683 and 1,320); 16 or 20 runs each. The
// process is not reaped yet (the caller checked), so its id is its
// own. A thread of it that ended since the listing may have given its
// id to a new thread elsewhere only after every id up to pid_max was
// used; a check with tgkill, which a thread in its exit may fail,
// halved the gain (4,104 and 3,834 µs at 64 ranks).
func idleTeardown(pid int) {
	if pid <= 0 {
		return // (0 would name the caller)
	}
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return
	}
	for _, ent := range ents {
		if tid, err := strconv.Atoi(ent.Name()); err == nil {
			unix.SchedSetAttr(tid, &unix.SchedAttr{Policy: unix.SCHED_IDLE}, 0)
		}
	}
}

// returnEvacuees binds the threads that dead's teardown moved away to
// their home CPUs again.
func (m *Map) returnEvacuees(dead int) {
	for q := range m.N {
		cb := m.CB(q)
		if cb.Evacuated.Load() != uint32(dead)+1 || !cb.Evacuated.CompareAndSwap(uint32(dead)+1, 0) {
			continue
		}
		if m.State(q) == StAlive { // an ended rank's pid may be another process's by now
			m.sendHome(q)
		}
	}
}

// sendHome binds the threads an evacuation moved of rank q to its home.
func (m *Map) sendHome(q int) {
	cb := m.CB(q)
	h := cb.HomeCPU.Load()
	if h == 0 {
		return
	}
	var set unix.CPUSet
	set.Set(int(h - 1))
	pid := cb.Pid.Load()
	if pid == 0 {
		return // (0 would name the caller)
	}
	if t := cb.EvacTID.Load(); t != 0 && unix.Tgkill(int(pid), int(t), 0) == nil {
		unix.SchedSetaffinity(int(t), &set)
	}
	unix.SchedSetaffinity(int(pid), &set)
	// A moved thread may have started another meanwhile (Go starts
	// threads from running ones), which inherited the move: every
	// thread of the rank not bound to its home alone goes home. A rank
	// that binds its own threads elsewhere loses that binding here.
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(int(pid)) + "/task")
	if err != nil {
		return
	}
	for _, ent := range ents {
		tid, err := strconv.Atoi(ent.Name())
		var cur unix.CPUSet
		if err == nil && unix.SchedGetaffinity(tid, &cur) == nil && cur != set {
			unix.SchedSetaffinity(tid, &set)
		}
	}
}
