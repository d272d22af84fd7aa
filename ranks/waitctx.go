package ranks

import (
	"context"
	"sync/atomic"

	"github.com/shmpi/shmpi/internal/job"
)

// Waits bounded by a context.Context. The wait's predicate also polls a
// flag that a context.AfterFunc sets when the context ends; the same
// function then rings this rank's doorbell, which wakes every goroutine
// of the rank asleep on it, so that a wait asleep on its futex re-checks
// at once. The order that prevents a missed wake-up is the doorbell's: a
// sleeper arms the doorbell and then evaluates its predicate, the
// function stores the flag and then reads the doorbell (both atomics,
// sequentially consistent), so either the predicate sees the flag or the
// ring sees the sleeper. Wait and WaitAll do none of this and pay
// nothing for it; a context form pays one AfterFunc (an allocation) per
// wait that does not complete at once.

// WaitContext is Wait bounded by ctx: it returns when the request
// completes, as Wait does, or when ctx ends first. Then the operation is
// not cancelled: the request stays pending and may be waited for,
// tested, cancelled or freed again; the error has ctx's error as its
// class (errors.Is(err, context.DeadlineExceeded), or context.Canceled),
// and errors.As gives an *Error for "WaitContext". A request already
// complete is completed even if ctx has ended.
func (h *Request) WaitContext(ctx context.Context) (Status, error) {
	if ctx.Done() == nil {
		return h.Wait() // a context that never ends
	}
	r, err := h.enter("WaitContext")
	if err != nil {
		return Status{}, err
	}
	e := r.e
	defer e.unlock()
	if r.inactive() {
		return emptyStatus, nil
	}
	e.progress()
	if !h.done() && !e.pendingFailure(r) {
		if ctx.Err() != nil {
			return Status{}, ctxErr(ctx, "WaitContext")
		}
		ended, stop := e.wakeOnEnd(ctx)
		e.block(func() bool {
			return h.done() || e.pendingFailure(r) || ended.Load()
		}, job.OpWait, r.peer, r.tag, r.ctx(), r.wpeer)
		stop()
	}
	switch {
	case h.done():
		return h.finish("WaitContext")
	case e.pendingFailure(r):
		return Status{}, e.pendingErr(r, "WaitContext")
	}
	return Status{}, ctxErr(ctx, "WaitContext")
}

// WaitAllContext is WaitAll bounded by ctx. If ctx ends first it returns
// ctx's error (as WaitContext) and retires nothing: every request stays
// in rs, pending or complete, to be waited for again.
func WaitAllContext(ctx context.Context, rs []*Request, statuses []Status) error {
	if ctx.Done() == nil {
		return WaitAll(rs, statuses)
	}
	e, err := enginesOf(rs, "WaitAllContext")
	if err != nil || e == nil {
		return err
	}
	e.lock()
	if err := checkAll(rs, "WaitAllContext"); err != nil {
		e.unlock()
		return err
	}
	settled := func() bool {
		for _, h := range rs {
			if !idle(h) && !h.done() && !e.pendingFailure(h.r) {
				return false
			}
		}
		return true
	}
	e.progress()
	if !settled() {
		if ctx.Err() != nil {
			e.unlock()
			return ctxErr(ctx, "WaitAllContext")
		}
		ended, stop := e.wakeOnEnd(ctx)
		e.block(func() bool { return settled() || ended.Load() }, job.OpWaitAll, ProcNull, AnyTag, 0, commonPeer(rs))
		stop()
		if !settled() {
			e.unlock()
			return ctxErr(ctx, "WaitAllContext")
		}
	}
	e.unlock()
	// Every request is complete or pending on a failure: WaitAll returns
	// at once.
	return WaitAll(rs, statuses)
}

// wakeOnEnd arranges that when ctx ends, the flag it returns is set and
// this rank's sleepers are woken. Call stop when the wait is over. A
// function that stop was too late for may still ring after the wait
// returned: a spurious wake-up, which every sleeper tolerates, of a
// doorbell in the segment, which stays mapped for the process's life.
func (e *engine) wakeOnEnd(ctx context.Context) (ended *atomic.Bool, stop func() bool) {
	ended = new(atomic.Bool)
	stop = context.AfterFunc(ctx, func() {
		ended.Store(true)
		e.db.Ring()
	})
	return ended, stop
}

// ctxErr is a context-bounded wait's error when ctx ended first.
func ctxErr(ctx context.Context, op string) error {
	return &Error{Class: ctx.Err(), Op: op, Rank: -1, Detail: "the request is still pending"}
}
