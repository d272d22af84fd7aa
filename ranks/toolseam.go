package ranks

import (
	"time"

	"github.com/shmpi/shmpi/internal/ext"
)

// What the tool interface (MPI_T in cabi) reads and sets, through
// internal/ext. The counters of the fast paths are fields of the engine
// beside rx (engine.go); those of slow paths are here.

// toolCounters are counted on slow paths only, under the engine lock.
type toolCounters struct {
	rxOther uint64 // inbox records that are not messages: acks, upper packages' kinds, later fragments
	rxSelf  uint64 // messages a rank sent itself (they never enter the inbox)
	sleeps  uint64
	yields  uint64
}

func init() {
	ext.ToolCounters = func(comm any) ext.Counters { return comm.(*Comm).e.toolCounters() }
	ext.ToolSettings = func(comm any) ext.Settings { return comm.(*Comm).e.toolSettings() }
	ext.SetTuning = func(comm any, k, v int) bool { return comm.(*Comm).e.setTuning(k, v) }
}

func (e *engine) toolCounters() ext.Counters {
	e.relock() // not an entry that fault injection counts (killinject.go)
	defer e.unlock()
	if !e.closed {
		e.refresh() // failures the kernel reported and nobody swept yet
	}
	c := ext.Counters{
		MsgsSent: e.tx, BytesSent: e.txBytes,
		MsgsRecv:      e.rx - e.tool.rxOther + e.tool.rxSelf,
		BytesRecv:     e.rxBytes,
		Sleeps:        e.tool.sleeps,
		SleepTimeouts: e.sleepTimeouts.Load(),
		Yields:        e.tool.yields,
		FailuresKnown: uint64(len(e.failedOrder)),
	}
	for _, cm := range e.live {
		if cm != nil {
			c.Unexpected += uint64(cm.unexp.n)
		}
	}
	for _, l := range e.early {
		c.Unexpected += uint64(l.n)
	}
	return c
}

func (e *engine) toolSettings() ext.Settings {
	e.relock() // not an entry that fault injection counts (killinject.go)
	defer e.unlock()
	inline := inlineMax
	if e.doubles {
		inline = doubleMax
	}
	return ext.Settings{
		Spin: e.spin, SpinUs: int(e.spinTime / time.Microsecond),
		SleepTimeoutMs: int(e.sleepTimeout / time.Millisecond),
		Yields:         e.yieldBudget,
		EagerMax:       e.eager,
		InlineMax:      inline,
		ShortMax:       shortMax,
		ChunkSize:      e.csz,
		ChunkCount:     e.lay.ChunkCount,
		InboxSlots:     e.lay.InboxSlots,
		HSSlots:        e.lay.HSSlots,
		CMA:            e.cma,
		Cores:          e.seg.Cores(),
	}
}

// setTuning is ext.SetTuning. Each setting is read afresh by every wait
// (spinTime, sleepTimeout, yieldBudget: block) or send (eager: trySend,
// bsend), under the lock taken here, so a change applies from the next
// one on. Whether the rank spins at all (e.spin) is not settable: it must
// be the same at every rank (ext.Spinning).
func (e *engine) setTuning(k, v int) bool {
	e.relock() // not an entry that fault injection counts (killinject.go)
	defer e.unlock()
	if e.closed || v < 0 {
		return false
	}
	switch k {
	case ext.TuneSpin:
		if !e.spin || v > 1e9 {
			return false
		}
		e.spinTime = time.Duration(v) * time.Microsecond
	case ext.TuneSleepTimeout:
		if v == 0 || v > 1e6 {
			return false
		}
		e.sleepTimeout = time.Duration(v) * time.Millisecond
	case ext.TuneYields:
		e.yieldBudget = v
	case ext.TuneEager:
		if v > e.csz {
			return false
		}
		e.eager = v
	default:
		return false
	}
	return true
}
