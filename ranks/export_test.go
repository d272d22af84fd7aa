package ranks

import (
	"syscall"
	"time"
)

// KillAtStage makes this rank, the first time one of its receives reaches
// stage ("matched" or "copying"), SIGKILL world rank victim and wait until
// the failure table says it failed, so that the receive goes on knowing
// of the failure.
func KillAtStage(stage string, victim int) {
	stageHook = func(e *engine, s string) {
		if s != stage {
			return
		}
		stageHook = nil
		syscall.Kill(e.pid(victim), syscall.SIGKILL)
		for e.t.state(victim) != stFailed {
			e.t.checkLiveness(e.me)
			time.Sleep(20 * time.Microsecond) // polling the kernel's mark, not ordering ranks
		}
		e.refresh()
	}
}

// HSSlotsFree is how many handshake slots this rank has free.
func (w *World) HSSlotsFree() int { return len(w.e.hsFree) }
