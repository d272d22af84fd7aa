package win

import "github.com/shmpi/shmpi/ranks"

// Epochs: which targets this rank may access now, as MPI defines it.
// An RMA operation to target t is legal
//
//   - after a Fence that did not assert ModeNoSucceed, until the next
//     Fence with it (an access epoch to every target);
//   - between Start and Complete, if t is in Start's group;
//   - between Lock(t) and Unlock(t);
//   - between LockAll and UnlockAll;
//
// and outside them it returns ErrRMASync, as does a Flush of a target
// this rank has not locked, an Unlock without its Lock, an UnlockAll
// without LockAll, a Complete without Start, a Wait or Test without Post,
// and an epoch opened twice.
//
// The state is this rank's, shared by its goroutines. Each synchronization
// claims what it changes with a compare-and-swap from the state it
// requires to a busy state, does its work, and stores the state it leaves:
// two goroutines racing to open or close the same epoch get one success
// and one ErrRMASync, never a half-made epoch. An RMA operation reads the
// state with plain atomic loads (inEpoch).

// States of Win.lockAll, Win.access and Win.exposing.
const (
	epochNone int32 = iota
	epochBusy       // a call is opening or closing the epoch
	epochOpen
)

// States of Win.locked[t] beside 0, LockExclusive and LockShared.
const (
	heldByLockAll int32 = 3 // a shared lock LockAll took
	lockBusy      int32 = 4 // a call is taking or releasing the lock
	// lockNoCheck is or'ed into LockExclusive, LockShared or
	// heldByLockAll when the lock was "taken" with ModeNoCheck: not in
	// shared memory, so there is nothing to release.
	lockNoCheck int32 = 8
)

// inEpoch reports whether an access epoch to t is open at this rank.
func (w *Win) inEpoch(t int) bool {
	if w.fenced.Load() {
		return true
	}
	if l := w.locked[t].Load(); l != 0 && l != lockBusy {
		return true
	}
	return w.inAccess[t].Load()
}

// openEpoch names an epoch that this rank must end before it frees the
// window (a lock it holds, LockAll, Start or Post), or is "".
func (w *Win) openEpoch() string {
	switch {
	case w.lockAll.Load() != epochNone:
		return "LockAll's epoch"
	case w.access.Load() != epochNone:
		return "a Start epoch"
	case w.exposing.Load() != epochNone:
		return "a Post epoch"
	}
	for t := range w.locked {
		if w.locked[t].Load() != 0 {
			return "a Lock epoch"
		}
	}
	return ""
}

// passive reports whether this rank holds t's lock (Lock or LockAll): a
// passive-target epoch, in which Flush may be called.
func (w *Win) passive(t int) bool {
	l := w.locked[t].Load()
	return l != 0 && l != lockBusy
}

func (w *Win) syncErr(op string, t int, what string) error {
	return &ranks.Error{Class: ranks.ErrRMASync, Op: op, Rank: t, Detail: what}
}
