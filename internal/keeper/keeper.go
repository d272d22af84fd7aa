// Package keeper holds a process's address space in a second process,
// so that the process, when killed, ends at once.
//
// Linux tears a dying process's memory down (exit_mm) before it closes
// its files (exit_files), and a process that maps much memory takes
// milliseconds there: a node agent (cmd/shmnode), with the MPI's
// libraries and its node's segment mapped, took 2-7 ms. Its TCP
// connections close only after that, and that is how the other nodes'
// MPI learns of its death. A keeper shares the address space (CLONE_VM)
// but nothing else: when the agent dies its exit_mm only drops a
// reference, its sockets close at once, and the memory goes when the
// keeper follows it. Node kills, 4 x 2 ranks, 12 interleaved runs
// (2026-11-27): the last survivor's allreduce 8.5 ms after the kill at
// the median with a keeper, 10.4 without; under SCHED_IDLE, where its
// teardown would take only spare CPU, 8.4, but an idle process that a
// busy machine starves could outlive its agent by seconds, so the keeper
// keeps the normal policy.
//
// The keeper follows the whole process, not the thread that started it:
// it waits on a pidfd of its parent, which is readable once every thread
// of the parent has ended. At first it asked for SIGKILL at its parent
// thread's death (PR_SET_PDEATHSIG), and a scheduler trace of a node
// kill (2026-11-28) showed the agent's last thread, one of the MPI's,
// tearing the memory down in the agent's exit: the keeper had left with
// the agent's main thread. It also leaves its parent's process group, so
// that a kill of the group (a node's SIGKILL) does not take it before
// its parent's threads have ended. Where there is no pidfd_open (Linux
// before 5.3) it falls back to the death signal.
//
// The keeper runs no Go code: its entry, in assembly, closes the copies
// of its parent's files that the clone gave it, blocks every signal,
// opens its parent's pidfd, exits if that parent is gone already, says it
// is ready, and waits. Start waits for it to be ready.
package keeper

import (
	"errors"
	"sync"
)

// Start starts the keeper of this process. Where the keeper falls back
// to its parent thread's death signal (no pidfd_open), it dies with the
// calling thread: call it from a goroutine locked to a thread that lives
// as long as the process, the main thread locked in an init function.
func Start() (pid int, err error) {
	mu.Lock()
	defer mu.Unlock()
	if started != 0 {
		return started, nil
	}
	pid, err = start()
	if err != nil {
		return 0, err
	}
	started = pid
	return pid, nil
}

var (
	mu      sync.Mutex
	started int
)

// ErrUnsupported: no keeper on this architecture.
var ErrUnsupported = errors.New("keeper: not supported here")

var errNotReady = errors.New("keeper: not set up (no close_range, or not within a second)")
