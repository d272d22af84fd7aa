package ranks

import (
	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/ext"
)

// What package win needs of a communicator, through internal/ext.

func init() {
	ext.Pid = func(comm any, r int) int { c := comm.(*Comm); return int(c.e.t.CB(c.group[r]).Pid.Load()) }
	ext.CopyFailed = func(comm any, r int, err error) int { c := comm.(*Comm); return c.e.copyFailed(c.group[r], err) }
}

// exitWait bounds copyFailed's wait for a process the kernel is
// tearing down: its exit takes microseconds; past this the peer is taken
// to be alive, and the copy's error is the caller's to report.
const exitWait = 5000 // milliseconds

// copyFailed is ext.CopyFailed for world rank w: ext.Failed,
// ext.Finalized or ext.Alive. rndvLost judges its own copies by the failure table alone: it cannot wait under the engine lock.
func (e *engine) copyFailed(w int, err error) int {
	e.lock()
	e.refresh()
	gone := e.gone[w]
	e.unlock()
	if !gone && err == unix.ESRCH {
		// No process, or one without memory: it is exiting. Its liveness
		// word is marked when its last thread has left (the kernel
		// releases each thread's robust list on its way out), which the
		// pidfd reports; a pidfd that cannot be opened means the process
		// has been reaped already.
		if fd, perr := unix.PidfdOpen(int(e.t.CB(w).Pid.Load()), 0); perr == nil {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				if _, perr := unix.Poll(pfd, exitWait); perr != unix.EINTR {
					break
				}
			}
			unix.Close(fd)
		}
	}
	e.lock()
	defer e.unlock()
	if !gone {
		e.awaitDeclared(w)
	}
	switch {
	case !e.gone[w]:
		return ext.Alive
	case e.failed[w]:
		return ext.Failed
	}
	return ext.Finalized
}
