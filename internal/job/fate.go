package job

import (
	"fmt"
	"time"

	"github.com/shmpi/shmpi/shm"
)

// Exit is what a launcher learned when it reaped a rank's process.
type Exit struct {
	Code   int // exit code, or -1 if killed by a signal
	Signal int // the signal that killed it, or 0
}

// Fate is what became of a rank, as the failure table records it.
type Fate struct {
	Rank      int
	Pid       int    // set by the rank when it entered Init, else 0
	State     string // "unstarted", "alive", "finalized" or "failed"
	Cause     string // for a failure: "robust-futex", "robust-futex-direct" or "exit"
	Detector  int    // rank that declared the failure, -1 for the launcher
	ExitCode  int    // -1 if unknown or killed by a signal
	Signal    int
	Reaped    bool
	Op        string // the operation it was last blocked in
	OpPeer    int
	OpTag     int
	OpSince   time.Time
	OpCount   uint64
	Blocked   bool // in Op now (else Op is the last one it was blocked in)
	Finalized bool
	FailedAt  time.Time // when the failure was declared (wall clock), zero if never
}

// RecordExit is called by a launcher when rank r's process has exited. An
// exit without Finalize, for any reason, is a failure: the table is marked
// and every rank woken. It returns the rank's fate.
func RecordExit(seg *shm.Segment, r int, ex Exit) Fate {
	m := NewMap(seg)
	cb := m.CB(r)
	cb.ExitCode.Store(uint32(int32(ex.Code)))
	cb.Signal.Store(uint32(int32(ex.Signal)))
	cb.Reaped.Store(1)
	if st := m.State(r); st == StAlive || (st == StUnstarted && (ex.Code != 0 || ex.Signal != 0)) {
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
func FateOf(seg *shm.Segment, r int) Fate {
	cb := NewMap(seg).CB(r)
	f := Fate{Rank: r, Pid: int(cb.Pid.Load()), Detector: int(int32(cb.Detector.Load())),
		ExitCode: int(int32(cb.ExitCode.Load())), Signal: int(int32(cb.Signal.Load())),
		Reaped: cb.Reaped.Load() == 1}
	switch cb.State.Load() {
	case StUnstarted:
		f.State = "unstarted"
	case StAlive:
		f.State = "alive"
	case StFinalized:
		f.State = "finalized"
		f.Finalized = true
	case StFailed:
		f.State = "failed"
	}
	switch cb.Cause.Load() {
	case CauseRobust:
		f.Cause = "robust-futex"
	case CauseDirect:
		f.Cause = "robust-futex-direct"
	case CauseExit:
		f.Cause = "exit"
	}
	op := cb.Op.Load()
	f.Op = Op(op &^ (1 << 31)).String()
	f.Blocked = op>>31 == 1
	f.OpPeer = int(int32(cb.OpPeer.Load()))
	f.OpTag = int(int32(cb.OpTag.Load()))
	if ns := int64(cb.OpSince.Load()); ns != 0 {
		f.OpSince = time.Unix(0, ns)
	}
	f.OpCount = cb.OpCount.Load()
	if ns := int64(cb.FailedAt.Load()); ns != 0 {
		f.FailedAt = time.Unix(0, ns)
	}
	return f
}

// String describes where a rank is, for deadline reports.
func (f Fate) String() string {
	s := fmt.Sprintf("rank %d: %s", f.Rank, f.State)
	if f.State == "failed" {
		s += " (detected by " + f.Cause + ")"
	}
	if f.Op != "none" && f.Op != "" {
		if f.Blocked {
			s += fmt.Sprintf("; blocked in %s", f.Op)
		} else {
			s += fmt.Sprintf("; last blocked in %s", f.Op)
		}
		if f.OpPeer != NullPeer { // many-request waits record no peer
			s += fmt.Sprintf("(peer=%s, tag=%s)", peerString(f.OpPeer), tagString(f.OpTag))
		}
		if !f.OpSince.IsZero() && f.Blocked {
			s += fmt.Sprintf(" for %v", time.Since(f.OpSince).Round(time.Millisecond))
		}
	}
	return s
}

func peerString(p int) string {
	switch p {
	case AnyPeer:
		return "any"
	case NullPeer:
		return "null"
	}
	return fmt.Sprint(p)
}

func tagString(t int) string {
	if t == AnyTag {
		return "any"
	}
	return fmt.Sprint(t)
}
