package ranks

import (
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/shm"
)

// What package ulfm needs of a communicator, through internal/ext.

func init() {
	ext.AgreeArea = func(comm any) unsafe.Pointer { c := comm.(*Comm); return c.e.t.AgreeArea(c.slot) }
	ext.Block = func(comm any, op string, word *atomic.Uint32, done func() bool) error {
		return comm.(*Comm).blockUntil(op, word, done)
	}
	ext.MemberState = func(comm any, r int) int {
		c := comm.(*Comm)
		w := c.members()[r]
		switch c.e.t.State(w) {
		case job.StFailed:
			return ext.Failed
		case job.StFinalized:
			return ext.Finalized
		}
		if shm.Dead(c.e.t.Liveness(w).Word.Load()) {
			c.e.declareDead(w, job.CauseRobust)
			return ext.Failed
		}
		return ext.Alive
	}
	ext.MemberLogIndex = func(comm any, r int) int { c := comm.(*Comm); return c.e.t.LogIndex(c.members()[r]) }
	ext.Known = func(comm any) int {
		c := comm.(*Comm)
		c.e.lock()
		defer c.e.unlock()
		c.e.refresh()
		return len(c.e.failedOrder)
	}
	ext.Acked = func(comm any) int {
		// The acknowledged prefix changes only by this rank's own calls
		// (FailureAck, AckUpTo), which the caller does not run at once.
		return int(comm.(*Comm).ackShown.Load())
	}
	ext.AckUpTo = func(comm any, prefix int) {
		c := comm.(*Comm)
		c.e.lock()
		defer c.e.unlock()
		c.ackUpTo(prefix)
	}
	ext.AckNext = func(comm any, prefix int) {
		c := comm.(*Comm)
		c.e.lock()
		defer c.e.unlock()
		c.ackNext = max(c.ackNext, prefix)
	}
	ext.LogMember = func(comm any, i int) int {
		c := comm.(*Comm)
		return c.memberIndex(c.e.t.LogEntry(i))
	}
	ext.Membership = func(comm any) (int, int) {
		c := comm.(*Comm)
		return len(c.members()), c.memberIndex(c.e.me)
	}
	ext.Sides = func(comm any) (bool, int, bool) {
		c := comm.(*Comm)
		if c.inter == nil {
			return false, 0, false
		}
		if c.inter.low {
			return true, len(c.inter.local), true
		}
		return true, len(c.group), false
	}
	ext.AdoptInter = func(comm any, s, gen, ls, lgen uint32, members []int) (any, error) {
		return comm.(*Comm).adoptShrunk(s, gen, ls, lgen, members)
	}
	ext.Alloc = func(comm any, members []int) (uint32, uint32, bool) {
		c := comm.(*Comm)
		world := make([]int, len(members))
		for i, m := range members {
			world[i] = c.members()[m]
		}
		return c.e.t.AllocContext(c.e.me, world)
	}
	ext.Adopt = func(comm any, s, gen uint32, members []int, name string) (any, error) {
		c := comm.(*Comm)
		world := make([]int, len(members))
		for i, m := range members {
			world[i] = c.group[m]
		}
		e := c.e
		e.lock()
		defer e.unlock()
		if e.closed {
			return nil, newErr(ErrFinalized, name, -1, "")
		}
		if !e.t.Adoptable(e.me, s, gen) {
			return nil, newErr(ErrOther, name, -1, "context slot %d is no longer held by this rank", s)
		}
		return e.newComm(s, gen, world, name), nil
	}
}

// blockUntil is ext.Block.
func (c *Comm) blockUntil(op string, word *atomic.Uint32, done func() bool) error {
	e := c.e
	e.lock()
	defer e.unlock()
	if c.e.closed || c.released {
		return c.usable(op)
	}
	e.blockOn(done, job.OpColl, op, ProcNull, AnyTag, c.ctx, -1, word, e.t.Sleepers(c.slot))
	return nil
}

// ackUpTo acknowledges the first prefix entries of the failure log on c,
// reading the log that far first if this rank has not. Called under the
// engine lock.
func (c *Comm) ackUpTo(prefix int) {
	e := c.e
	e.refresh()
	for len(e.failedOrder) < prefix {
		// The log is longer than this rank has read: read it.
		e.sweep(e.epoch.Load())
		if len(e.failedOrder) < prefix {
			e.t.Repair(e.me)
		}
	}
	c.ackCount = max(c.ackCount, prefix)
	c.ackShown.Store(int32(c.ackCount))
}
