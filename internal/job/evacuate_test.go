package job

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// cpuSet is the set of the one CPU c.
func cpuSet(c int) unix.CPUSet {
	var s unix.CPUSet
	s.Set(c)
	return s
}

// startBound starts a process that sleeps, bound to CPU c, and kills it
// at the end of the test.
func startBound(t *testing.T, c int) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := cpuSet(c)
	if err := unix.SchedSetaffinity(cmd.Process.Pid, &s); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// boundRanks starts a process for each rank, bound to its home CPU,
// and records it in m as an alive rank at home there.
func boundRanks(t *testing.T, m *Map, homes []int) []int {
	t.Helper()
	pids := make([]int, len(homes))
	for r, h := range homes {
		pids[r] = startBound(t, h)
		cb := m.CB(r)
		cb.Pid.Store(uint32(pids[r]))
		cb.HomeCPU.Store(uint32(h + 1))
		cb.State.Store(StAlive)
	}
	return pids
}

func affinity(t *testing.T, pid int) unix.CPUSet {
	t.Helper()
	var s unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// twoCPUs returns two CPUs this test may use, or skips it.
func twoCPUs(t *testing.T) (int, int) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil || mine.Count() < 2 {
		t.Skip("needs two CPUs")
	}
	l := cpuList(mine)
	return l[0], l[1]
}

// Evacuate moves the live ranks at home on a dead rank's CPU (and only
// those) to the other ranks' CPUs; the launcher's RecordExit of the dead
// rank moves them back. Ranks are processes here, each bound to its home
// as shmrun binds ranks: ranks 0 and 1 at home on CPU a, 2 and 3 on b;
// rank 3 dies.
func TestEvacuate(t *testing.T) {
	a, b := twoCPUs(t)
	for _, reapedFirst := range []bool{false, true} {
		seg, err := NewSegment(DefaultLayoutFor(4, 2), 2)
		if err != nil {
			t.Fatal(err)
		}
		m := NewMap(seg)
		homes := []int{a, a, b, b}
		pids := boundRanks(t, m, homes)
		// Rank 2 records a wait thread: its main thread (moved once).
		m.CB(2).WaitTID.Store(uint32(pids[2]))
		if reapedFirst {
			// Reaped before anyone moved: the teardown is over, so
			// nothing moves.
			m.CB(3).Reaped.Store(1)
		}
		if !m.DeclareFailed(3, CauseRobust, 0) {
			t.Fatal("DeclareFailed(3) made no change")
		}
		m.Evacuate(3)
		want := []unix.CPUSet{cpuSet(a), cpuSet(a), cpuSet(a), cpuSet(b)}
		if reapedFirst {
			want[2] = cpuSet(b)
		}
		for r := range 3 {
			if got := affinity(t, pids[r]); got != want[r] {
				t.Errorf("reaped first %v: rank %d (home %d) is bound to %v after the evacuation, want %v", reapedFirst, r, homes[r], cpuList(got), cpuList(want[r]))
			}
		}
		if e := m.CB(2).Evacuated.Load(); reapedFirst != (e == 0) || !reapedFirst && e != 4 {
			t.Errorf("reaped first %v: rank 2's Evacuated is %d", reapedFirst, e)
		}
		RecordExit(seg, 3, Exit{Code: -1, Signal: 9})
		for r := range 3 {
			if got, home := affinity(t, pids[r]), cpuSet(homes[r]); got != home {
				t.Errorf("reaped first %v: rank %d is bound to %v after the reap, want its home %v", reapedFirst, r, cpuList(got), cpuList(home))
			}
		}
		if e := m.CB(2).Evacuated.Load(); e != 0 {
			t.Errorf("rank 2's Evacuated is %d after the reap", e)
		}
		seg.Close()
	}
}

func cpuList(s unix.CPUSet) []int {
	var l []int
	for c := 0; c < 1024; c++ {
		if s.IsSet(c) {
			l = append(l, c)
		}
	}
	return l
}

// With more than maxMovers ranks to move, nothing moves: one CPU would
// run every survivor.
func TestEvacuateTooMany(t *testing.T) {
	a, b := twoCPUs(t)
	n := maxMovers + 3 // rank 0 on a, the others on b, the last dies
	seg, err := NewSegment(DefaultLayoutFor(n, 2), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	m := NewMap(seg)
	homes := []int{a}
	for len(homes) < n {
		homes = append(homes, b)
	}
	pids := boundRanks(t, m, homes)
	m.DeclareFailed(n-1, CauseRobust, 0)
	m.Evacuate(n - 1)
	for r := 1; r < n-1; r++ {
		if got := affinity(t, pids[r]); got != cpuSet(b) {
			t.Errorf("rank %d of %d to move was moved to %v", r, n-2, cpuList(got))
		}
	}
}

// With too many ranks to move, the dead process's threads go under
// SCHED_IDLE instead, so that the survivors sharing its CPU run before
// its teardown; when the ranks are moved, it keeps its policy. The
// "dead" rank here is a live process, so that its policy can be read.
func TestIdleTeardown(t *testing.T) {
	a, b := twoCPUs(t)
	for _, n := range []int{4, maxMovers + 3} {
		seg, err := NewSegment(DefaultLayoutFor(n, 2), 2)
		if err != nil {
			t.Fatal(err)
		}
		m := NewMap(seg)
		// 4 ranks: two on each CPU (one to move); more: one on a.
		homes := []int{a, a, b, b}
		if n > 4 {
			homes = []int{a}
			for len(homes) < n {
				homes = append(homes, b)
			}
		}
		pids := boundRanks(t, m, homes)
		m.DeclareFailed(n-1, CauseRobust, 0)
		m.Evacuate(n - 1)
		want := uint32(unix.SCHED_NORMAL)
		if n-2 > maxMovers {
			want = unix.SCHED_IDLE
		}
		for r, pid := range pids {
			attr, err := unix.SchedGetAttr(pid, 0)
			if err != nil {
				t.Fatal(err)
			}
			w := uint32(unix.SCHED_NORMAL)
			if r == n-1 {
				w = want
			}
			if attr.Policy != w {
				t.Errorf("%d ranks, rank %d (pid %d): policy %d after rank %d's evacuation, want %d", n, r, pid, attr.Policy, n-1, w)
			}
		}
		seg.Close()
	}
}
