package win

import (
	"math/bits"

	"github.com/shmpi/shmpi/internal/spin"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Synchronization. Every wait here goes through ext.Block, which only a
// freed communicator or a finalized rank ends, with a predicate that ends
// it on the window's revoke flag (ErrRevoked) and on the failure of a
// rank the wait depends on (ErrProcFailed), so that a failure elsewhere
// does not stop the locks of other targets. A revoke bumps the failure
// epoch, and every failure does, which wakes every sleeper.

// spinPolls bounds the polls of a wait before it goes through ext.Block.
const spinPolls = 2000

// Fence completes an RMA epoch at every member: a barrier on the
// window's communicator (the assert hints are accepted and change
// nothing). A failed member makes it return ErrProcFailed.
func (w *Win) Fence(assert int) error {
	if err := w.usable("Win.Fence"); err != nil {
		return err
	}
	if err := coll.Barrier(w.c); err != nil {
		return w.relabel(err)
	}
	return nil
}

// relabel turns the communicator's revoke into the window's.
func (w *Win) relabel(err error) error {
	if w.isRevoked() {
		return &ranks.Error{Class: ranks.ErrRevoked, Op: "Win", Rank: -1, Detail: "the window was revoked"}
	}
	return err
}

// What a wait waits for (Win.cond): the predicates are methods chosen
// by kind rather than closures, so that a contended wait allocates
// nothing. A window is used by one goroutine at a time, as its other
// local state (locked, started, the epochs) requires.
type waitKind uint8

const (
	untilExclusive    waitKind = iota // t's lock taken exclusively
	untilShared                       // t's lock taken shared
	untilDrained                      // no shared holder of t's lock is left
	untilPosted                       // t posted an exposure epoch we may start
	untilExposureDone                 // every origin of our Post completed
	untilAccLock                      // t's accumulate lock taken
)

type waitCond struct {
	kind waitKind
	op   string
	t    int
	want uint32 // untilPosted: the post count to reach
	err  error  // the error that ended the wait
}

// wait blocks until the condition (kind, on target t) holds or fails; it
// is called with the control line of the target whose wake word may end
// the wait.
func (w *Win) wait(op string, t int, kind waitKind, want uint32) error {
	if w.isRevoked() {
		return &ranks.Error{Class: ranks.ErrRevoked, Op: op, Rank: -1, Detail: "the window was revoked"}
	}
	w.cond = waitCond{kind: kind, op: op, t: t, want: want}
	ctl := w.control(t)
	// The common case: no wait (an uncontended lock, a post already made).
	wv := ctl.wake.Load() // before the check: a change after it shows here
	if ok, err := w.check(); ok || err != nil {
		return err
	}
	if ext.Spinning(w.c) {
		// Members spin: poll the wake word a while (every change that can
		// end a wait bumps it) before the engine's wait.
		for range spinPolls {
			spin.Pause()
			if v := ctl.wake.Load(); v != wv {
				wv = v
				if ok, err := w.check(); ok || err != nil {
					return err
				}
			}
		}
	}
	// Announced before the predicate runs again inside Block, and read by
	// wake after its change (both sequentially consistent): either the
	// waiter sees the change or the waker sees the waiter.
	ctl.waiters.Add(1)
	defer ctl.waiters.Add(^uint32(0))
	if w.blockDone == nil {
		w.blockDone = w.condDone // one method value per window
	}
	if berr := ext.Block(w.c, op, &ctl.wake, w.blockDone); berr != nil {
		return berr
	}
	return w.cond.err
}

// condDone is the predicate of a blocked wait: it records the error
// that ends it in w.cond.err.
func (w *Win) condDone() bool {
	if w.isRevoked() {
		w.cond.err = &ranks.Error{Class: ranks.ErrRevoked, Op: w.cond.op, Rank: -1, Detail: "the window was revoked"}
		return true
	}
	ok, err := w.check()
	w.cond.err = err
	return ok || err != nil
}

// check evaluates w.cond once.
func (w *Win) check() (bool, error) {
	op, t := w.cond.op, w.cond.t
	ctl := w.control(t)
	me := uint64(w.rank)
	switch w.cond.kind {
	case untilExclusive:
		l := ctl.lock.Load()
		if l&lockPoisoned != 0 {
			return false, w.procFailed(op, t, "the lock's holder failed: the lock is poisoned")
		}
		if l&lockExclusive == 0 && ctl.lock.CompareAndSwap(l, lockExclusive|(me+1)) {
			return true, nil
		}
		if w.deadHolder(t, l) {
			return false, w.procFailed(op, t, "the lock's holder failed: the lock is poisoned")
		}
		return false, nil
	case untilShared:
		hw := &w.holderWords(t)[w.rank/64]
		bit := uint64(1) << (w.rank % 64)
		l := ctl.lock.Load()
		if l&lockPoisoned != 0 || w.deadHolder(t, l) {
			return false, w.procFailed(op, t, "the lock's holder failed: the lock is poisoned")
		}
		if l&lockExclusive != 0 {
			return false, nil
		}
		hw.Or(bit)
		if l = ctl.lock.Load(); l&(lockExclusive|lockPoisoned) != 0 {
			hw.And(^bit) // an exclusive locker came first: let it in
			w.wake(t)
			return false, nil
		}
		return true, nil
	case untilDrained:
		if ctl.lock.Load()&lockPoisoned != 0 || w.deadHolder(t, ctl.lock.Load()) {
			return false, w.procFailed(op, t, "a holder of the lock failed: the lock is poisoned")
		}
		return w.noHolders(t), nil
	case untilPosted:
		if int32(ctl.post.Load()-w.cond.want) >= 0 {
			return true, nil
		}
		if w.failed(t) {
			return false, w.procFailed(op, t, "the target failed before it posted")
		}
		return false, nil
	case untilExposureDone:
		return w.exposureDone(op, ctl)
	case untilAccLock:
		v := ctl.acc.Load()
		if v&(1<<31) != 0 {
			return false, w.procFailed(op, t, "an accumulate's origin failed holding the target's accumulate lock")
		}
		if v == 0 {
			return ctl.acc.CompareAndSwap(0, uint32(me+1)), nil
		}
		if o := int(v) - 1; o != w.rank && w.failed(o) {
			ctl.acc.CompareAndSwap(v, v|1<<31)
			w.wake(t)
		}
		return false, nil
	}
	return false, w.errf(ranks.ErrOther, op, t, "unknown wait %d", w.cond.kind)
}

// wake tells the sleepers of target t's control line that it changed.
func (w *Win) wake(t int) {
	ctl := w.control(t)
	ctl.wake.Add(1)
	if ctl.waiters.Load() != 0 {
		ext.Release(w.c, &ctl.wake)
	}
}

func (w *Win) failed(r int) bool { return ext.MemberState(w.c, r) == ext.Failed }

func (w *Win) procFailed(op string, r int, what string) error {
	return &ranks.Error{Class: ranks.ErrProcFailed, Op: op, Rank: r, Detail: what}
}

// poison marks target t's lock poisoned: its holder died, and the data
// it guarded is undefined.
func (w *Win) poison(t int) {
	ctl := w.control(t)
	for {
		l := ctl.lock.Load()
		if l&lockPoisoned != 0 || ctl.lock.CompareAndSwap(l, l|lockPoisoned) {
			break
		}
	}
	w.wake(t)
}

// deadHolder reports whether a holder of target t's lock has failed (and
// poisons the lock if so).
// It runs in wait predicates, under the engine lock: it must not call
// ext.Check (suspect), which takes that lock.
func (w *Win) deadHolder(t int, l uint64) bool {
	if l&lockExclusive != 0 {
		if o := int(l&lockOwnerMask) - 1; o >= 0 && o != w.rank && w.failed(o) {
			w.poison(t)
			return true
		}
	}
	hw := w.holderWords(t)
	for i := range hw {
		for v := hw[i].Load(); v != 0; v &= v - 1 {
			r := i*64 + bits.TrailingZeros64(v)
			if r != w.rank && w.failed(r) {
				w.poison(t)
				return true
			}
		}
	}
	return false
}

// Lock starts a passive-target access epoch on target t: LockExclusive or
// LockShared. An uncontended lock is one compare-and-swap (exclusive) or
// one atomic or (shared). A lock whose holder died is poisoned: this and
// every later attempt return ErrProcFailed.
func (w *Win) Lock(lockType, t int) error {
	const op = "Win.Lock"
	if err := w.target(op, t); err != nil {
		return err
	}
	if w.locked[t] != 0 {
		return w.errf(ranks.ErrArg, op, t, "this rank already holds the target's lock")
	}
	ctl := w.control(t)
	me := uint64(w.rank)
	// Uncontended: one compare-and-swap, or one atomic or and a re-check,
	// with no closure made.
	switch l := ctl.lock.Load(); {
	case l != 0:
	case lockType == LockExclusive:
		if ctl.lock.CompareAndSwap(0, lockExclusive|(me+1)) {
			if !w.noHolders(t) {
				if err := w.drain(op, t); err != nil {
					return err
				}
			}
			w.locked[t] = lockType
			return nil
		}
	case lockType == LockShared:
		hw := &w.holderWords(t)[w.rank/64]
		bit := uint64(1) << (w.rank % 64)
		hw.Or(bit)
		if ctl.lock.Load() == 0 {
			w.locked[t] = lockType
			return nil
		}
		hw.And(^bit)
		w.wake(t)
	}
	var err error
	switch lockType {
	case LockExclusive:
		err = w.wait(op, t, untilExclusive, 0)
		if err == nil {
			err = w.drain(op, t)
		}
	case LockShared:
		err = w.wait(op, t, untilShared, 0)
	default:
		return w.errf(ranks.ErrArg, op, t, "lock type %d", lockType)
	}
	if err != nil {
		return err
	}
	w.locked[t] = lockType
	return nil
}

// drain waits, holding t's lock exclusively, for the shared holders to
// leave (they back off when they see the exclusive bit; the atomics order
// their bit before their re-check and our CAS before this scan). On an
// error it lets the lock go.
func (w *Win) drain(op string, t int) error {
	err := w.wait(op, t, untilDrained, 0)
	if err != nil {
		w.releaseExclusive(t)
	}
	return err
}

// noHolders reports whether no other member holds t's lock shared.
func (w *Win) noHolders(t int) bool {
	hw := w.holderWords(t)
	for i := range hw {
		v := hw[i].Load()
		if i == w.rank/64 {
			v &^= 1 << (w.rank % 64)
		}
		if v != 0 {
			return false
		}
	}
	return true
}

func (w *Win) releaseExclusive(t int) {
	ctl := w.control(t)
	for {
		l := ctl.lock.Load()
		if l&lockPoisoned != 0 {
			break // stays poisoned
		}
		if ctl.lock.CompareAndSwap(l, 0) {
			break
		}
	}
	w.wake(t)
}

// Unlock ends the access epoch on t; the operations issued in it are
// complete (they complete at once here) and visible to the next holder.
func (w *Win) Unlock(t int) error {
	const op = "Win.Unlock"
	if err := w.usable(op); err != nil {
		return err
	}
	if t < 0 || t >= w.size || w.locked[t] == 0 {
		return w.errf(ranks.ErrArg, op, t, "this rank does not hold the target's lock")
	}
	switch w.locked[t] {
	case LockExclusive:
		w.releaseExclusive(t)
	case LockShared:
		w.holderWords(t)[w.rank/64].And(^(uint64(1) << (w.rank % 64)))
		w.wake(t)
	}
	w.locked[t] = 0
	if w.failed(t) {
		return w.procFailed(op, t, "the target has failed")
	}
	return nil
}

// LockAll takes a shared lock on every member.
func (w *Win) LockAll() error {
	for t := range w.size {
		if err := w.Lock(LockShared, t); err != nil {
			for u := range t {
				w.Unlock(u)
			}
			return err
		}
	}
	return nil
}

// UnlockAll releases the locks LockAll took; the first error is returned
// after every lock is released.
func (w *Win) UnlockAll() error {
	var first error
	for t := range w.size {
		if w.locked[t] == 0 {
			continue
		}
		if err := w.Unlock(t); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Flush completes the operations to t issued so far (they complete when
// issued here); it reports a failed target or a revoked window.
func (w *Win) Flush(t int) error { return w.target("Win.Flush", t) }

// FlushLocal is Flush (the origin buffers are free at once here).
func (w *Win) FlushLocal(t int) error { return w.target("Win.FlushLocal", t) }

// FlushAll is Flush to every target.
func (w *Win) FlushAll() error {
	for t := range w.size {
		if err := w.target("Win.FlushAll", t); err != nil {
			return err
		}
	}
	return nil
}

// FlushLocalAll is FlushAll.
func (w *Win) FlushLocalAll() error { return w.FlushAll() }

// Sync orders this rank's loads and stores through SharedQuery with the
// RMA operations (MPI_Win_sync): a full fence.
func (w *Win) Sync() error {
	if err := w.usable("Win.Sync"); err != nil {
		return err
	}
	w.hdr.revoked.Add(0) // a locked instruction: a full fence on amd64
	return nil
}

// Post starts an exposure epoch for the origins in group (ranks of the
// window): each of them may access this rank after its Start.
func (w *Win) Post(group []int) error {
	const op = "Win.Post"
	if err := w.usable(op); err != nil {
		return err
	}
	if w.exposing {
		return w.errf(ranks.ErrArg, op, -1, "an exposure epoch is already open")
	}
	if err := w.checkGroup(op, group); err != nil {
		return err
	}
	w.exposure = append(w.exposure[:0], group...)
	w.expected += uint32(len(group))
	w.exposing = true
	w.control(w.rank).post.Add(1)
	w.wake(w.rank)
	return nil
}

// Start starts an access epoch to the targets in group; it waits until
// each has posted.
func (w *Win) Start(group []int) error {
	const op = "Win.Start"
	if err := w.usable(op); err != nil {
		return err
	}
	if w.accessing {
		return w.errf(ranks.ErrArg, op, -1, "an access epoch is already open")
	}
	if err := w.checkGroup(op, group); err != nil {
		return err
	}
	for _, t := range group {
		want := w.started[t] + 1
		err := w.wait(op, t, untilPosted, want)
		if err != nil {
			return err
		}
		w.started[t] = want
	}
	w.access = append(w.access[:0], group...)
	w.accessing = true
	return nil
}

// Complete ends the access epoch: every target of the Start is told.
func (w *Win) Complete() error {
	const op = "Win.Complete"
	if err := w.usable(op); err != nil {
		return err
	}
	if !w.accessing {
		return w.errf(ranks.ErrArg, op, -1, "no access epoch is open")
	}
	w.accessing = false
	var first error
	for _, t := range w.access {
		w.control(t).complete.Add(1)
		w.wake(t)
		if first == nil && w.failed(t) {
			first = w.procFailed(op, t, "the target has failed")
		}
	}
	return first
}

// Wait ends the exposure epoch once every origin of the Post has called
// Complete; an origin that failed first makes it return ErrProcFailed.
func (w *Win) Wait() error {
	const op = "Win.Wait"
	if err := w.usable(op); err != nil {
		return err
	}
	if !w.exposing {
		return w.errf(ranks.ErrArg, op, -1, "no exposure epoch is open")
	}
	err := w.wait(op, w.rank, untilExposureDone, 0)
	w.exposing = false
	return err
}

// Test is Wait that does not block: it reports whether the epoch ended.
func (w *Win) Test() (bool, error) {
	const op = "Win.Test"
	if err := w.usable(op); err != nil {
		return false, err
	}
	if !w.exposing {
		return false, w.errf(ranks.ErrArg, op, -1, "no exposure epoch is open")
	}
	ok, err := w.exposureDone(op, w.control(w.rank))
	if ok || err != nil {
		w.exposing = false
	}
	return ok, err
}

func (w *Win) exposureDone(op string, ctl *control) (bool, error) {
	if int32(ctl.complete.Load()-w.expected) >= 0 {
		return true, nil
	}
	for _, r := range w.exposure {
		if w.failed(r) {
			return false, w.procFailed(op, r, "an origin failed before it completed")
		}
	}
	return false, nil
}

func (w *Win) checkGroup(op string, group []int) error {
	if w.seen == nil {
		w.seen = make([]bool, w.size)
	}
	bad, isBad := 0, false
	for _, r := range group {
		if r < 0 || r >= w.size || w.seen[r] {
			bad, isBad = r, true
			break
		}
		w.seen[r] = true
	}
	for _, r := range group {
		if r >= 0 && r < w.size {
			w.seen[r] = false
		}
	}
	if isBad {
		return w.errf(ranks.ErrRank, op, bad, "rank out of range or repeated in the group")
	}
	return nil
}
