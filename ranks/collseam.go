package ranks

import (
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/shm"
)

// What package coll needs of a communicator, through internal/ext.

func init() {
	ext.Shared = func(comm any) unsafe.Pointer { c := comm.(*Comm); return c.e.t.CollArea(c.slot) }
	ext.Check = func(comm any, op string) error {
		c := comm.(*Comm)
		if ep := c.okEpoch.Load(); ep != 0 && ep == c.e.epoch.Load() {
			return nil // nothing failed, finalized or was revoked since the last check
		}
		c.e.lock()
		defer c.e.unlock()
		c.e.refresh()
		return c.collCheck(op)
	}
	ext.AcrossNodes = func(comm any, op string) error { return comm.(*Comm).acrossNodes(op) }
	ext.FailWith = func(comm, parent any) {
		c, p := comm.(*Comm), parent.(*Comm)
		c.e.lock()
		defer c.e.unlock()
		c.owner, c.coll.owner = p, p // failScope
		c.checkedEpoch = 0           // collCheck judges again
		c.okEpoch.Store(0)
	}
	ext.Wait = func(comm any, op string, word *atomic.Uint32, done func() bool) error {
		return comm.(*Comm).collWait(op, word, done, nil, 0)
	}
	ext.WaitYielded = func(comm any, op string, word *atomic.Uint32, done func() bool, yields int) error {
		return comm.(*Comm).collWait(op, word, done, nil, yields)
	}
	ext.SleepAtOnce = func(comm any, on bool) {
		e := comm.(*Comm).e
		e.lock()
		if on {
			e.sleepAtOnce++ // a count: goroutines of the rank may each be in such a wait
		} else {
			e.sleepAtOnce--
		}
		e.unlock()
	}
	ext.PullSends = func(comm any, on bool) {
		e := comm.(*Comm).e
		e.lock()
		if on {
			e.pullSends++
		} else {
			e.pullSends--
		}
		e.unlock()
	}
	ext.SleepersWord = func(comm any) *atomic.Uint32 { c := comm.(*Comm); return c.e.t.Sleepers(c.slot) }
	ext.WaitNeeding = func(comm any, op string, word *atomic.Uint32, done func() bool, needed func(r int) bool) error {
		return comm.(*Comm).collWait(op, word, done, needed, 0)
	}
	ext.Release = func(comm any, word *atomic.Uint32) {
		c := comm.(*Comm)
		if !c.e.spin {
			// The caller's store to word was a full fence: the count
			// read now covers every sleeper that could miss it.
			if c.e.t.Sleepers(c.slot).Load() != 0 {
				shm.FutexWake(word, 1<<30)
			}
			return
		}
		for _, w := range c.group {
			if w != c.e.me {
				c.e.dbs[w].Ring()
			}
		}
	}
	ext.Staging = func(comm any) (unsafe.Pointer, int) {
		c := comm.(*Comm)
		return c.e.t.ScratchArea(c.slot), c.e.t.ScratchMember()
	}
	ext.Spinning = func(comm any) bool { return comm.(*Comm).e.spin }
	ext.Wake = func(comm any, r int) {
		c := comm.(*Comm)
		if w := c.members()[r]; w != c.e.me {
			c.e.dbs[w].Ring()
		}
	}
	ext.NewRequest = func(comm any, op string) (any, func(error)) { return comm.(*Comm).genRequest(op) }
	ext.SetHelp = func(req any, help func()) {
		h := req.(*Request)
		h.r.e.lock()
		h.r.help = help
		h.r.e.unlock()
	}
	ext.NewPersistent = func(comm any, op string, start func(complete func(error)), onFree func()) any {
		return comm.(*Comm).persistentRequest(op, start, onFree)
	}
	ext.PersistentComm = func(comm any, op string) (any, func(), error) {
		c := comm.(*Comm)
		pc, err := c.persistentComm(op)
		switch {
		case err != nil:
			return nil, nil, err
		case pc == c:
			return c, nil, nil
		}
		return pc, pc.releasePrivate, nil
	}
	ext.SleepTimeouts = func(comm any) uint64 { return comm.(*Comm).e.sleepTimeouts.Load() }
	ext.Hold = func(comm any) { comm.(*Comm).holds.Add(1) }
	ext.Concurrent = func(comm any) { comm.(*Comm).e.concurrent() }
	ext.Serving = func(comm any, tag int) {
		c := comm.(*Comm)
		c.e.lock()
		c.serving, c.servingTag = true, tag
		c.e.unlock()
	}
	ext.NeedProgress = func(comm any, kick func() bool) { comm.(*Comm).e.needProgress(kick) }
	ext.Inter = func(comm any) (any, int, bool) {
		c := comm.(*Comm)
		if c.inter == nil {
			return nil, 0, false
		}
		return c.inter.localComm, len(c.group), true
	}
	ext.InterUnion = func(comm any) (any, error) {
		u, err := comm.(*Comm).unionOf()
		if err != nil {
			return nil, err
		}
		return u, nil
	}
	ext.Unhold = func(comm any) { comm.(*Comm).unhold() }

}

// collCheck is ext.Check under the engine lock: one compare unless the
// failure epoch moved since the last call. A communicator the user freed
// passes while it is not released: the operations started before the
// free still run on it (upper packages refuse new ones themselves).
func (c *Comm) collCheck(op string) error {
	e := c.e
	if e.seenEpoch == c.checkedEpoch && c.checkErr == nil && !c.released && !c.revoked && !e.closed {
		if c.hasFinal {
			return c.leftBehindErr(op)
		}
		return nil
	}
	if err := c.collLive(op); err != nil {
		return err
	}
	c.checkedEpoch = e.seenEpoch
	c.checkErr = nil
	defer func() {
		if c.checkErr == nil && !c.hasFinal {
			c.okEpoch.Store(e.seenEpoch)
		}
	}()
	c.hasFinal = false
	for _, w := range c.failScope() {
		if e.failed[w] {
			c.checkErr = &Error{Class: ErrProcFailed, Op: op, Rank: int(c.toComm[w]), Failed: c.failedRanks(len(e.failedOrder)),
				Detail: "a member of the communicator has failed"}
			return c.checkErr
		}
		c.hasFinal = c.hasFinal || e.final[w] && w != e.me
	}
	if c.hasFinal {
		return c.leftBehindErr(op)
	}
	// A member that finalized is no reason to fail: it may have done its
	// part of this collective (a gather's sender, a bcast's root) and
	// left, as MPI allows. Point-to-point steps report a finalized peer
	// whose data never came.
	return nil
}

// leftBehindErr is the error of the current collective on c when a
// member that finalized never began it (ext.LeftBehind): it could never
// complete. Asked only while a member has finalized, at the collective's
// start and in its waits; not cached, since it depends on the collective.
func (c *Comm) leftBehindErr(op string) error {
	if ext.LeftBehind == nil {
		return nil
	}
	return ext.LeftBehind(c, op)
}

// collLive is live for the operations of upper packages: a communicator
// freed by the user is usable until it is released (see collCheck).
func (c *Comm) collLive(op string) error {
	switch {
	case c.e.closed:
		return newErr(ErrFinalized, op, -1, "")
	case c.released:
		return newErr(ErrComm, op, -1, "communicator %s was freed", c.label())
	case c.revoked:
		return revokedErr(c, op)
	}
	return nil
}

// acrossNodes refuses op on a communicator that spans nodes: what works
// through the members' shared memory, which members on another node do
// not share (docs/nodes.md). Its callers take another way there where
// one exists: creation has createSpanning, coll point-to-point versions
// of the collectives (coll/span.go), win windows served by messages
// (win/span.go), mpio per-node aggregation (mpio/span.go).
func (c *Comm) acrossNodes(op string) error {
	if c.spansNodes {
		return newErr(ErrUnsupported, op, -1, "communicator %s spans nodes: this works within one node only, yet", c.label())
	}
	return nil
}

// collWait is ext.Wait (needed nil: any failed member ends the wait, as
// collCheck says) and ext.WaitNeeding (only a failed member that needed
// reports ends it). yields is how many times the caller yielded already
// (ext.WaitYielded: a C fast collective), taken from the wait's budget.
func (c *Comm) collWait(op string, word *atomic.Uint32, done func() bool, needed func(r int) bool, yields int) error {
	e := c.e
	e.lock()
	defer e.unlock()
	e.preYields = yields
	e.tool.yields += uint64(yields)
	var err error
	e.blockOn(func() bool {
		if done() {
			err = nil
			return true
		}
		if needed == nil {
			err = c.collCheck(op)
			return err != nil
		}
		if err = c.collLive(op); err != nil {
			return true
		}
		c.collCheck(op) // its failures are judged below, by needed; it updates hasFinal
		if c.hasFinal {
			if err = c.leftBehindErr(op); err != nil {
				return true
			}
		}
		for _, w := range c.group {
			if e.failed[w] && needed(int(c.toComm[w])) {
				err = &Error{Class: ErrProcFailed, Op: op, Rank: int(c.toComm[w]), Failed: c.failedRanks(len(e.failedOrder)),
					Detail: "a member of the communicator has failed"}
				return true
			}
		}
		return false
	}, job.OpColl, op, ProcNull, AnyTag, c.ctx, -1, word, e.t.Sleepers(c.slot))
	return err
}

// genRequest makes a request that complete ends (a generalized request,
// MPI_Grequest_start's idea): Wait, Test and the many-request forms treat
// it as any other.
func (c *Comm) genRequest(op string) (*Request, func(error)) {
	e := c.e
	e.lock()
	defer e.unlock()
	r, h := e.newRequest()
	c.newOp(r, false, false, nil, 0, 1, ProcNull, AnyTag, op)
	return h, func(err error) {
		e.lock()
		e.complete(r, err)
		e.unlock()
	}
}

// persistentRequest makes an inactive persistent request whose Start
// calls start, which must arrange for complete to be called, from any
// goroutine, with the operation's error (a persistent collective).
func (c *Comm) persistentRequest(op string, start func(complete func(error)), onFree func()) *Request {
	e := c.e
	e.lock()
	defer e.unlock()
	r, h := e.newRequest()
	c.newOp(r, false, false, nil, 0, 1, ProcNull, AnyTag, op)
	r.persistent = true
	complete := func(err error) {
		e.lock()
		e.complete(r, err)
		e.unlock()
	}
	r.startFn = func() { start(complete) }
	r.freeFn = onFree
	return h
}

// persistentComm returns the communicator that one persistent collective
// of c runs on (ext.PersistentComm). MPI 4.0 (§6.13) lets members start
// their persistent collectives in different orders: they match by the
// order of the Init calls, which is the same at every member. Each
// therefore runs on a private duplicate of c, made here; its runs queue
// and progress apart from those of c and of the other duplicates. The
// Init calls of persistent collectives may synchronize, as this creation
// does (they are not local in MPI 4.0). A communicator that asserts
// mpi_assert_strict_persistent_collective_ordering starts them in the
// same order everywhere, and they run on c itself.
func (c *Comm) persistentComm(op string) (*Comm, error) {
	if err := c.usableLocked(op); err != nil {
		return nil, err
	}
	c.local.mu.Lock()
	strict := c.local.hints[hintStrictPersistent]
	c.local.mu.Unlock()
	if strict {
		return c, nil
	}
	var nc *Comm
	var err error
	c.inOrder(func() { nc, err = c.dupNow(op) })
	if err != nil {
		return nil, err
	}
	e := c.e
	e.lock()
	defer e.unlock()
	nc.topo = c.topo // neighborhood collectives read it
	nc.dependentOf = c
	c.dependents = append(c.dependents, nc)
	if c.revoked {
		e.revokeLocal(nc)
	}
	return nc, nil
}

// releasePrivate frees c, a persistent collective's private duplicate,
// when its request is freed.
func (c *Comm) releasePrivate() {
	e := c.e
	e.lock()
	if p := c.dependentOf; p != nil {
		p.dependents = slices.DeleteFunc(p.dependents, func(d *Comm) bool { return d == c })
		c.dependentOf = nil
	}
	e.unlock()
	c.Free() // an error (the job finalized) leaves nothing to free
}

// concurrent makes the engine take its lock from now on, if it took none
// (ThreadSerialized and below): a goroutine of the runtime's own (a queued
// nonblocking collective, an Idup) is about to call in beside the user's.
// The user's goroutine calls it outside any engine call, so no call is
// under way unlocked when the lock starts to be taken.
func (e *engine) concurrent() {
	if e.serial {
		e.serial = false
	}
}

// needProgress registers kick (ext.NeedProgress). It takes no engine
// lock: a persistent request's Start calls it holding that lock.
func (e *engine) needProgress(kick func() bool) {
	e.kickMu.Lock()
	e.kicks = append(e.kicks, kick)
	e.nkicks.Store(int32(len(e.kicks)))
	e.kickMu.Unlock()
}

// kickIdle runs the registered kicks, once this rank is about to wait or
// has polled a request that is not done, and keeps those that report
// their queue still needs one. Called and returns with e.mu held; the
// kicks run without it (one may start a goroutine that takes it, and
// turn a ThreadSerialized engine into a locking one, ext.Concurrent: the
// relock below then takes the real lock that the caller's unlock frees).
//
// The kicks run under kickMu, so that a goroutine that comes here while
// another runs them waits rather than finds the list empty and sleeps
// with a queue nobody drives. Lock order: e.mu, then kickMu (a
// persistent Start's ext.NeedProgress); kickMu, then a queue's lock
// (here, without e.mu).
func (e *engine) kickIdle() {
	if e.nkicks.Load() == 0 {
		return
	}
	e.unlock()
	e.kickMu.Lock()
	keep := e.kicks[:0]
	for _, k := range e.kicks {
		if !k() {
			keep = append(keep, k)
		}
	}
	clear(e.kicks[len(keep):])
	e.kicks = keep
	e.nkicks.Store(int32(len(keep)))
	e.kickMu.Unlock()
	e.relock()
}
