package ranks

import (
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shmpi/shmpi/internal/job"
)

// Fault injection for users (job.EnvKill): test a program's recovery
// without changing it. shmrun --kill sets the variable; ranktest and node
// agents may set it themselves.

// armKill arms the entries of spec that name this rank.
func (e *engine) armKill(spec string) error {
	if spec == "" {
		return nil
	}
	for _, ent := range strings.Split(spec, ",") {
		rank, when, ok := strings.Cut(strings.TrimSpace(ent), "@")
		r, err := strconv.Atoi(rank)
		if !ok || err != nil || r < 0 {
			return newErr(ErrInit, "Init", -1, "%s: %q is not RANK@DURATION or RANK@op=N", job.EnvKill, ent)
		}
		if n, isOp := strings.CutPrefix(when, "op="); isOp {
			k, err := strconv.ParseInt(n, 10, 64)
			if err != nil || k < 1 {
				return newErr(ErrInit, "Init", -1, "%s: %q: op= takes a positive call number", job.EnvKill, ent)
			}
			if r == e.me {
				e.killAt = k
			}
			continue
		}
		d, err := time.ParseDuration(when)
		if err != nil || d < 0 {
			return newErr(ErrInit, "Init", -1, "%s: %q: %q is not a duration (such as 20ms) or op=N", job.EnvKill, ent, when)
		}
		if r == e.me {
			time.AfterFunc(d, dieNow)
		}
	}
	return nil
}

// countCall counts an entry into the engine and dies at the armed one.
//
//go:noinline
func (e *engine) countCall() {
	e.calls++
	if e.calls == e.killAt {
		dieNow()
	}
}

func dieNow() {
	syscall.Kill(syscall.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not caught; nothing runs after it
}
