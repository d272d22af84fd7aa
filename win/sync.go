package win

import (
	"math/bits"
	"sync"

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
// window's communicator. It opens an access epoch to every target (and
// an exposure epoch) that lasts until the next Fence, unless assert has
// ModeNoSucceed. With ModeNoPrecede|ModeNoSucceed, which every member
// must assert alike, it is no barrier: it ends and opens no epoch (see
// the Mode constants). A failed member makes it return ErrProcFailed.
func (w *Win) Fence(assert int) error {
	const op = "Win.Fence"
	if err := w.usable(op); err != nil {
		return err
	}
	if err := w.checkAssert(op, assert); err != nil {
		return err
	}
	if assert&(ModeNoPrecede|ModeNoSucceed) == ModeNoPrecede|ModeNoSucceed {
		// No RMA call before it anywhere (else the program is wrong), so
		// there is none to complete, and none after it for which a
		// target must have arrived.
		w.fenced.Store(false)
		return nil
	}
	var ferr error
	if w.net != nil {
		ferr = w.netFlushAll(op) // this rank's Puts applied before the barrier
	}
	err := coll.Barrier(w.c)
	w.fenced.Store(assert&ModeNoSucceed == 0)
	if err == nil {
		err = ferr
	}
	if err != nil {
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

// What a wait waits for: the predicates are methods chosen by kind
// rather than closures, so that a contended wait allocates nothing.
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
	want uint32 // untilPosted: the last exposure epoch of t consumed here
	got  uint32 // untilPosted: the exposure epoch matched
}

// waiter is the state of one blocked wait: the condition, the error that
// ended it, and the predicate the engine calls (its condDone, bound once
// when the pool makes it). Goroutines of a rank may wait on one window at
// once, so the state is per wait, from a pool, never the window's.
type waiter struct {
	w    *Win
	cond waitCond
	err  error
	done func() bool
}

var waiters = sync.Pool{New: func() any {
	wt := new(waiter)
	wt.done = wt.condDone
	return wt
}}

// wait blocks until the condition (kind, on target t) holds or fails; it
// is called with the control line of the target whose wake word may end
// the wait.
func (w *Win) wait(op string, t int, kind waitKind, want uint32) error {
	_, err := w.waitFor(op, t, kind, want)
	return err
}

// waitFor is wait that also returns the condition's got.
func (w *Win) waitFor(op string, t int, kind waitKind, want uint32) (uint32, error) {
	if w.isRevoked() {
		return 0, &ranks.Error{Class: ranks.ErrRevoked, Op: op, Rank: -1, Detail: "the window was revoked"}
	}
	cond := waitCond{kind: kind, op: op, t: t, want: want}
	ctl := w.control(t)
	// The common case: no wait (an uncontended lock, a post already made).
	wv := ctl.wake.Load() // before the check: a change after it shows here
	if ok, err := w.check(&cond); ok || err != nil {
		return cond.got, err
	}
	if ext.Spinning(w.c) {
		// Members spin: poll the wake word a while (every change that can
		// end a wait bumps it) before the engine's wait.
		for range spinPolls {
			spin.Pause()
			if v := ctl.wake.Load(); v != wv {
				wv = v
				if ok, err := w.check(&cond); ok || err != nil {
					return cond.got, err
				}
			}
		}
	}
	wt := waiters.Get().(*waiter)
	wt.w, wt.cond, wt.err = w, cond, nil
	// Announced before the predicate runs again inside Block, and read by
	// wake after its change (both sequentially consistent): either the
	// waiter sees the change or the waker sees the waiter.
	ctl.waiters.Add(1)
	err := ext.Block(w.c, op, &ctl.wake, wt.done)
	ctl.waiters.Add(^uint32(0))
	if err == nil {
		err = wt.err
	}
	got := wt.cond.got
	*wt = waiter{done: wt.done}
	waiters.Put(wt)
	return got, err
}

// condDone is the predicate of a blocked wait: it records the error
// that ends it in wt.err.
func (wt *waiter) condDone() bool {
	w := wt.w
	if w.isRevoked() {
		wt.err = &ranks.Error{Class: ranks.ErrRevoked, Op: wt.cond.op, Rank: -1, Detail: "the window was revoked"}
		return true
	}
	ok, err := w.check(&wt.cond)
	wt.err = err
	return ok || err != nil
}

// check evaluates a wait's condition once.
func (w *Win) check(c *waitCond) (bool, error) {
	op, t := c.op, c.t
	ctl := w.control(t)
	me := uint64(w.rank)
	switch c.kind {
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
		if g, ok := w.postedTo(t, c.want); ok {
			c.got = g
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
	return false, w.errf(ranks.ErrOther, op, t, "unknown wait %d", c.kind)
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
// every later attempt return ErrProcFailed, whether or not anyone waited
// for it. The lock is this rank's: while one goroutine holds it (or LockAll
// does), another's Lock of t returns ErrRMASync. Lock of ProcNull does
// nothing. assert may be ModeNoCheck: no conflicting lock is held or
// asked for meanwhile, and the lock is then not taken at all (see the
// Mode constants). A member that gave the no_locks hint gets ErrRMASync.
// In a window across nodes, Lock of another member returns before the
// lock is held (MPI allows it; span.go): its ErrProcFailed then comes
// from the epoch's first call that waits for t (Get, Flush, Unlock).
func (w *Win) Lock(lockType, t int, assert ...int) error {
	const op = "Win.Lock"
	if t == ranks.ProcNull {
		return w.usable(op)
	}
	if err := w.target(op, t); err != nil {
		return err
	}
	a, err := w.modes(op, assert)
	if err != nil {
		return err
	}
	if lockType != LockExclusive && lockType != LockShared {
		return w.errf(ranks.ErrArg, op, t, "lock type %d", lockType)
	}
	if w.hints.Load().noLocks {
		return w.syncErr(op, t, "the window's no_locks hint is true at this member")
	}
	if w.lockAll.Load() != epochNone {
		return w.syncErr(op, t, "LockAll's epoch is open: every target is locked already")
	}
	if w.access.Load() != epochNone {
		return w.syncErr(op, t, "a Start epoch is open: complete it first")
	}
	if !w.locked[t].CompareAndSwap(0, lockBusy) {
		return w.syncErr(op, t, "this rank holds (or is taking) the target's lock already")
	}
	if a&ModeNoCheck != 0 {
		w.locked[t].Store(int32(lockType) | lockNoCheck)
		return nil
	}
	if lockType == LockExclusive {
		err = w.lockExclusive(op, t)
	} else {
		err = w.lockShared(op, t)
	}
	if err != nil {
		w.locked[t].Store(0)
		return err
	}
	w.locked[t].Store(int32(lockType))
	return nil
}

// lockExclusive takes t's lock exclusively: one compare-and-swap when it
// is free, and no closure made either way.
func (w *Win) lockExclusive(op string, t int) error {
	if w.net != nil {
		return w.netLock(op, t, reqLockExcl)
	}
	ctl := w.control(t)
	if ctl.lock.Load() == 0 && ctl.lock.CompareAndSwap(0, lockExclusive|uint64(w.rank+1)) {
		if w.noHolders(t) {
			return nil
		}
	} else if err := w.wait(op, t, untilExclusive, 0); err != nil {
		return err
	}
	return w.drain(op, t)
}

// lockShared takes t's lock shared: our holder bit, then a re-check
// that no exclusive locker came first.
func (w *Win) lockShared(op string, t int) error {
	if w.net != nil {
		return w.netLock(op, t, reqLockShared)
	}
	ctl := w.control(t)
	if ctl.lock.Load() == 0 {
		hw := &w.holderWords(t)[w.rank/64]
		bit := uint64(1) << (w.rank % 64)
		hw.Or(bit)
		if ctl.lock.Load() == 0 {
			// A shared holder that died poisons the lock as an exclusive
			// one does, but nothing else looks at shared holders until
			// an exclusive locker drains them: look here, once a failure
			// is known.
			if !w.suspect(op) || !w.deadHolder(t, 0) {
				return nil
			}
			hw.And(^bit)
			w.wake(t)
			return w.procFailed(op, t, "a holder of the lock failed: the lock is poisoned")
		}
		hw.And(^bit)
		w.wake(t)
	}
	return w.wait(op, t, untilShared, 0)
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

func (w *Win) releaseShared(t int) {
	w.holderWords(t)[w.rank/64].And(^(uint64(1) << (w.rank % 64)))
	w.wake(t)
}

// Unlock ends the access epoch on t; the operations issued in it are
// complete (they complete at once here) and visible to the next holder.
// Without Lock(t) it returns ErrRMASync; Unlock of ProcNull does nothing.
func (w *Win) Unlock(t int) error {
	const op = "Win.Unlock"
	if err := w.usable(op); err != nil {
		return err
	}
	if t == ranks.ProcNull {
		return nil
	}
	if t < 0 || t >= w.size {
		return w.errf(ranks.ErrRank, op, -1, "target %d of %d", t, w.size)
	}
	l := w.locked[t].Load()
	kind := l &^ lockNoCheck
	if kind != LockExclusive && kind != LockShared || !w.locked[t].CompareAndSwap(l, lockBusy) {
		if kind == heldByLockAll {
			return w.syncErr(op, t, "the target's lock is LockAll's: UnlockAll releases it")
		}
		return w.syncErr(op, t, "this rank does not hold the target's lock")
	}
	if w.net != nil {
		var err error
		if l&lockNoCheck != 0 {
			err = w.netFlush(op, t)
		} else {
			err = w.netUnlock(op, t)
		}
		w.locked[t].Store(0)
		return err
	}
	switch l {
	case LockExclusive:
		w.releaseExclusive(t)
	case LockShared:
		w.releaseShared(t)
	}
	w.locked[t].Store(0)
	if w.failed(t) {
		return w.procFailed(op, t, "the target has failed")
	}
	return nil
}

// LockAll takes a shared lock on every member: a passive-target epoch to
// every target, until UnlockAll. It returns ErrRMASync if LockAll's epoch
// is open already, this rank holds some target's lock with Lock, or it
// gave the no_locks hint. assert may be ModeNoCheck: the locks are then
// not taken (see the Mode constants).
func (w *Win) LockAll(assert ...int) error {
	const op = "Win.LockAll"
	if err := w.usable(op); err != nil {
		return err
	}
	a, err := w.modes(op, assert)
	if err != nil {
		return err
	}
	if w.hints.Load().noLocks {
		return w.syncErr(op, -1, "the window's no_locks hint is true at this member")
	}
	if w.access.Load() != epochNone {
		return w.syncErr(op, -1, "a Start epoch is open: complete it first")
	}
	if !w.lockAll.CompareAndSwap(epochNone, epochBusy) {
		return w.syncErr(op, -1, "LockAll's epoch is open already")
	}
	held := heldByLockAll
	if a&ModeNoCheck != 0 {
		held |= lockNoCheck
	}
	if w.net != nil {
		return w.lockAllNet(op, held)
	}
	for t := range w.size {
		err = nil
		if !w.locked[t].CompareAndSwap(0, lockBusy) {
			err = w.syncErr(op, t, "this rank holds the target's lock (Lock)")
		} else {
			if err = w.target(op, t); err == nil && held == heldByLockAll {
				err = w.lockShared(op, t)
			}
			if err != nil {
				w.locked[t].Store(0)
			}
		}
		if err != nil {
			for u := range t {
				if held == heldByLockAll {
					w.releaseShared(u)
				}
				w.locked[u].Store(0)
			}
			w.lockAll.Store(epochNone)
			return err
		}
		w.locked[t].Store(held)
	}
	w.lockAll.Store(epochOpen)
	return nil
}

// UnlockAll releases the locks LockAll took (ErrRMASync without
// LockAll); a failed target's error is returned after every lock is
// released.
func (w *Win) UnlockAll() error {
	const op = "Win.UnlockAll"
	if err := w.usable(op); err != nil {
		return err
	}
	if !w.lockAll.CompareAndSwap(epochOpen, epochBusy) {
		return w.syncErr(op, -1, "no LockAll epoch is open")
	}
	if w.net != nil {
		return w.unlockAllNet(op)
	}
	var first error
	for t := range w.size {
		if w.locked[t].Swap(lockBusy) == heldByLockAll {
			w.releaseShared(t) // not if taken with ModeNoCheck
		}
		w.locked[t].Store(0)
		if first == nil && w.failed(t) {
			first = w.procFailed(op, t, "the target has failed")
		}
	}
	w.lockAll.Store(epochNone)
	return first
}

// Flush completes the operations to t issued so far (they complete when
// issued here); it reports a failed target or a revoked window. It needs
// a passive-target epoch to t (Lock or LockAll; else ErrRMASync); Flush
// of ProcNull does nothing.
func (w *Win) Flush(t int) error { return w.flush("Win.Flush", t) }

// FlushLocal is Flush (the origin buffers are free at once here).
func (w *Win) FlushLocal(t int) error { return w.flush("Win.FlushLocal", t) }

func (w *Win) flush(op string, t int) error {
	if err := w.usable(op); err != nil || t == ranks.ProcNull {
		return err
	}
	if t < 0 || t >= w.size {
		return w.errf(ranks.ErrRank, op, -1, "target %d of %d", t, w.size)
	}
	if !w.passive(t) {
		return w.syncErr(op, t, "this rank does not hold the target's lock (Lock or LockAll)")
	}
	if w.net != nil {
		return w.netFlush(op, t)
	}
	return w.alive(op, t)
}

// FlushAll is Flush to every target this rank holds locked (ErrRMASync if
// none).
func (w *Win) FlushAll() error { return w.flushAll("Win.FlushAll") }

// FlushLocalAll is FlushAll.
func (w *Win) FlushLocalAll() error { return w.flushAll("Win.FlushLocalAll") }

func (w *Win) flushAll(op string) error {
	if err := w.usable(op); err != nil {
		return err
	}
	locked := false
	for t := range w.size {
		if w.passive(t) {
			locked = true
			if w.net != nil {
				if err := w.netFlush(op, t); err != nil {
					return err
				}
				continue
			}
			if err := w.alive(op, t); err != nil {
				return err
			}
		}
	}
	if !locked {
		return w.syncErr(op, -1, "no passive-target epoch is open (Lock or LockAll)")
	}
	return nil
}

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
// window): each of them may access this rank after its Start. assert may
// have ModeNoCheck, ModeNoStore and ModeNoPut; none saves anything here.
func (w *Win) Post(group []int, assert ...int) error {
	const op = "Win.Post"
	if err := w.usable(op); err != nil {
		return err
	}
	if _, err := w.modes(op, assert); err != nil {
		return err
	}
	if !w.exposing.CompareAndSwap(epochNone, epochBusy) {
		return w.syncErr(op, -1, "an exposure epoch is open already")
	}
	if err := w.checkGroup(op, group, w.seenPost); err != nil {
		w.exposing.Store(epochNone)
		return err
	}
	w.exposure = append(w.exposure[:0], group...)
	if w.net != nil {
		err := w.netPost(op, group)
		w.exposing.Store(epochOpen)
		return err
	}
	w.expected += uint32(len(group))
	// The new group, under the post sequence lock (postedTo): the last
	// group's origins have all completed (our Wait), and the others only
	// read it.
	ctl, gw := w.control(w.rank), w.groupWords(w.rank)
	ctl.post.Add(1)
	for i := range gw {
		gw[i].Store(0)
	}
	for _, o := range group {
		gw[o/64].Or(1 << (o % 64))
	}
	ctl.post.Add(1)
	w.wake(w.rank)
	w.exposing.Store(epochOpen)
	return nil
}

// Start starts an access epoch to the targets in group; it waits until
// each has posted. With ModeNoCheck in assert, every target has posted
// already (the program knows by other means, and the Posts assert it
// too), and Start does not look.
func (w *Win) Start(group []int, assert ...int) error {
	const op = "Win.Start"
	if err := w.usable(op); err != nil {
		return err
	}
	a, err := w.modes(op, assert)
	if err != nil {
		return err
	}
	if !w.access.CompareAndSwap(epochNone, epochBusy) {
		return w.syncErr(op, -1, "an access epoch (Start) is open already")
	}
	if err := w.checkGroup(op, group, w.seenStart); err != nil {
		w.access.Store(epochNone)
		return err
	}
	for _, t := range group {
		if w.net != nil {
			// With ModeNoCheck too: the Post's notice is there, and
			// must not be left for the next Start.
			if err := w.netStart(op, t); err != nil {
				w.access.Store(epochNone)
				return err
			}
			continue
		}
		var g uint32
		if a&ModeNoCheck != 0 {
			// t's post for us is its last: it cannot post again before
			// our Complete.
			g = w.control(t).post.Load() / 2
		} else if g, err = w.waitFor(op, t, untilPosted, w.started[t]); err != nil {
			w.access.Store(epochNone)
			return err
		}
		w.started[t] = g
	}
	w.accessTo = append(w.accessTo[:0], group...)
	for _, t := range group {
		w.inAccess[t].Store(true)
	}
	w.access.Store(epochOpen)
	return nil
}

// Complete ends the access epoch: every target of the Start is told.
func (w *Win) Complete() error {
	const op = "Win.Complete"
	if err := w.usable(op); err != nil {
		return err
	}
	if !w.access.CompareAndSwap(epochOpen, epochBusy) {
		return w.syncErr(op, -1, "no access epoch (Start) is open")
	}
	var first error
	for _, t := range w.accessTo {
		w.inAccess[t].Store(false)
		if w.net != nil {
			if err := w.netComplete(op, t); err != nil && first == nil {
				first = err
			}
			continue
		}
		w.control(t).complete.Add(1)
		w.wake(t)
		if first == nil && w.failed(t) {
			first = w.procFailed(op, t, "the target has failed")
		}
	}
	w.access.Store(epochNone)
	return first
}

// Wait ends the exposure epoch once every origin of the Post has called
// Complete; an origin that failed first makes it return ErrProcFailed.
func (w *Win) Wait() error {
	const op = "Win.Wait"
	if err := w.usable(op); err != nil {
		return err
	}
	if !w.exposing.CompareAndSwap(epochOpen, epochBusy) {
		return w.syncErr(op, -1, "no exposure epoch (Post) is open")
	}
	var err error
	if w.net != nil {
		_, err = w.netExposureDone(op, true)
	} else {
		err = w.wait(op, w.rank, untilExposureDone, 0)
	}
	w.exposing.Store(epochNone)
	return err
}

// Test is Wait that does not block: it reports whether the epoch ended.
func (w *Win) Test() (bool, error) {
	const op = "Win.Test"
	if err := w.usable(op); err != nil {
		return false, err
	}
	if !w.exposing.CompareAndSwap(epochOpen, epochBusy) {
		return false, w.syncErr(op, -1, "no exposure epoch (Post) is open")
	}
	var ok bool
	var err error
	if w.net != nil {
		ok, err = w.netExposureDone(op, false)
	} else {
		ok, err = w.exposureDone(op, w.control(w.rank))
	}
	if ok || err != nil {
		w.exposing.Store(epochNone)
	} else {
		w.exposing.Store(epochOpen)
	}
	return ok, err
}

// postedTo reports whether target t's last exposure epoch is later than
// last (the last this rank started) and has this rank in its group, and
// returns it. A later epoch of t that has this rank cannot come before this
// rank's Complete ends this one, so one that has this rank is never
// missed, and checking the last one is enough. The group is read under
// t's post sequence lock: post is odd while t's Post rewrites the group
// bitmap, and twice the epochs posted otherwise.
func (w *Win) postedTo(t int, last uint32) (uint32, bool) {
	ctl := w.control(t)
	seq := ctl.post.Load()
	if seq&1 != 0 || int32(seq/2-last) <= 0 {
		return 0, false
	}
	in := w.groupWords(t)[w.rank/64].Load()&(1<<(w.rank%64)) != 0
	return seq / 2, in && ctl.post.Load() == seq
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

// checkGroup checks a Start or Post group, with seen (all false) as its
// scratch.
func (w *Win) checkGroup(op string, group []int, seen []bool) error {
	bad, isBad := 0, false
	for _, r := range group {
		if r < 0 || r >= w.size || seen[r] {
			bad, isBad = r, true
			break
		}
		seen[r] = true
	}
	for _, r := range group {
		if r >= 0 && r < w.size {
			seen[r] = false
		}
	}
	if isBad {
		return w.errf(ranks.ErrRank, op, bad, "rank out of range or repeated in the group")
	}
	return nil
}
