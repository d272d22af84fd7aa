package job

import (
	"time"

	"github.com/shmpi/shmpi/shm"
)

// Exit is what a launcher learned when it reaped a rank's process.
type Exit struct {
	Code   int // exit code, or -1 if killed by a signal
	Signal int // the signal that killed it, or 0
}

// Fate is what became of a rank, as the failure table records it
// (package ranks exports it as ranks.Fate, which documents the fields).
type Fate struct {
	Rank     int
	Pid      int
	State    State
	Cause    string // "robust-futex", "robust-futex-direct", "exit" or ""
	Detector int
	FailedAt time.Time
	Reaped   bool
	ExitCode int
	Signal   int
	Op       OpRecord
}

// RecordExit is called by a launcher when rank r's process has exited. An
// exit without Finalize, for any reason, is a failure: the table is marked
// and every rank woken, unless the job was aborted (abort.go). It returns
// the rank's fate.
func RecordExit(seg *shm.Segment, r int, ex Exit) Fate {
	m := NewMap(seg)
	cb := m.CB(r)
	cb.ExitCode.Store(uint32(int32(ex.Code)))
	cb.Signal.Store(uint32(int32(ex.Signal)))
	cb.Reaped.Store(1)
	m.returnEvacuees(r)
	if st := m.State(r); !m.aborting() && (st == StAlive || (st == StUnstarted && (ex.Code != 0 || ex.Signal != 0))) {
		if !m.DeclareFailed(r, CauseExit, -1) {
			// A rank is declaring it (it holds the claim) and is a few
			// stores from done: the fate returned must not say alive.
			// Bounded: a declarer that dies now is the next one's to
			// repair. (ranktest saw "killed by signal 9 (alive)" once in
			// a 20-fold run of the suite.)
			for i := 0; i < 1000 && m.State(r) == StAlive; i++ {
				time.Sleep(100 * time.Microsecond)
			}
		}
	}
	return FateOf(seg, r)
}

// DeclareFailed lets a launcher mark a rank that will never run (it could
// not be started) as failed.
func DeclareFailed(seg *shm.Segment, r int) { NewMap(seg).DeclareFailed(r, CauseExit, -1) }

// FateOf reads rank r's entry in the failure table.
func FateOf(seg *shm.Segment, r int) Fate { return NewMap(seg).Fate(r) }

// Fate reads rank r's entry in the failure table. To read many, use one
// Map: making one costs about a microsecond and an allocation, which a
// table of every rank, read by every rank, multiplied to milliseconds of
// CPU at 64 ranks on 2 cores (ulfm_recovery's survivors, 2026-11-27).
func (m *Map) Fate(r int) Fate {
	cb := m.CB(r)
	f := Fate{Rank: r, Pid: int(cb.Pid.Load()), State: State(cb.State.Load()),
		Detector: int(int32(cb.Detector.Load())),
		ExitCode: int(int32(cb.ExitCode.Load())), Signal: int(int32(cb.Signal.Load())),
		Reaped: cb.Reaped.Load() == 1, Op: cb.OpOf()}
	switch cb.Cause.Load() {
	case CauseRobust:
		f.Cause = "robust-futex"
	case CauseDirect:
		f.Cause = "robust-futex-direct"
	case CauseExit:
		f.Cause = "exit"
	}
	if ns := int64(cb.FailedAt.Load()); ns != 0 {
		f.FailedAt = time.Unix(0, ns)
	}
	return f
}

// Public converts a Fate to package ranks' exported Fate. Package ranks
// installs it in its init; launchers import ranks for that type, so it is
// set before they run. (ranks.Fate must be declared in ranks to show its
// fields to users, and ranks cannot be imported from here.)
var Public func(Fate) any
