package ranks

import (
	"math/bits"
	"syscall"
	"time"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
)

// KillAtStage makes this rank, the first time one of its receives reaches
// stage ("matched" or "copying"), SIGKILL world rank victim and wait until
// the failure table says it failed, so that the receive goes on knowing
// of the failure.
// It returns a function that reports whether the stage was reached and,
// if not, kills the victim anyway (so that the test cannot hang).
func KillAtStage(stage string, victim int) (reached func() bool) {
	var e0 *engine
	kill := func(e *engine) {
		stageHook = nil
		// The victim may not have reached Init yet (the stage can come
		// first under load); its pid reads 0 until then, and kill(0, ...)
		// would SIGKILL this rank's whole process group: the test runner
		// and whatever started it (a CI run ended so, exit 137).
		for e.pid(victim) <= 0 {
			time.Sleep(20 * time.Microsecond) // polling the victim's start, not ordering ranks
		}
		syscall.Kill(e.pid(victim), syscall.SIGKILL)
		for e.t.State(victim) != job.StFailed {
			e.checkLiveness()
			time.Sleep(20 * time.Microsecond) // polling the kernel's mark, not ordering ranks
		}
		e.refresh()
	}
	fired := false
	stageHook = func(e *engine, s string) {
		e0 = e
		if s == stage {
			fired = true
			kill(e)
		}
	}
	return func() bool {
		if !fired && e0 != nil {
			kill(e0)
		}
		return fired
	}
}

// HSSlotsFree is how many handshake slots this rank has free.
func (w *World) HSSlotsFree() int { return len(w.e.hsFree) }

// FreeContexts is how many of the job's context slots are free.
func (w *World) FreeContexts() int { return w.e.t.FreeContexts() }

// HeldContexts is how many context slots this rank holds, the world's
// aside.
func (w *World) HeldContexts() int {
	n := 0
	h := w.e.t.HoldsOf(w.e.me)
	for i := range h {
		v := h[i].Load()
		if i == 0 {
			v &^= 1
		}
		n += bits.OnesCount64(v)
	}
	return n
}

// DieAtStage makes this rank SIGKILL itself the first time it reaches
// stage (see testStage).
func DieAtStage(stage string) {
	stageHook = func(e *engine, s string) {
		if s == stage {
			syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
}

// SleepTimeouts is how many of this rank's sleeps ended by their timeout.
func (w *World) SleepTimeouts() uint64 { return w.e.sleepTimeouts.Load() }

// FencesSends reports whether this rank fences between publishing a
// message and reading the receiver's doorbell (engine.fenceSends).
func (w *World) FencesSends() bool { return w.e.fenceSends.Load() }

// Sleeps is how many waits of this rank went as far as arming the
// doorbell to sleep (recordOp counts them).
func (w *World) Sleeps() uint64 { return w.e.t.CB(w.e.me).OpCount.Load() }

// KnocksQueued reports how many knocks at port (which this rank opened)
// wait in its queue, after making progress once.
func (w *World) KnocksQueued(port string) int {
	idx, _, err := job.ParsePort(port)
	if err != nil {
		return 0
	}
	e := w.e
	pc := e.portComm()
	e.lock()
	defer e.unlock()
	e.progress()
	n := 0
	for m := pc.unexp.head; m != nil; m = m.next {
		if m.tag == tagKnock(idx) {
			n++
		}
	}
	return n
}

// Yields is how many times this rank's waits yielded the CPU.
func (w *World) Yields() uint64 {
	w.e.lock()
	defer w.e.unlock()
	return w.e.tool.yields
}

// SleepAtOnce is ext.SleepAtOnce.
func SleepAtOnce(c *Comm, on bool) { ext.SleepAtOnce(c, on) }
