package coll

import (
	"sync"
	"sync/atomic"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Nonblocking collectives. Each returns a *ranks.Request at once; Wait,
// Test and the many-request forms of package ranks complete it. They run,
// in the order this rank started them, on a goroutine of the
// communicator (one at a time, so that every member runs the
// communicator's collectives in the same order, as MPI requires), which
// drives the same progress engine as point-to-point while the caller
// computes. A blocking collective started meanwhile runs after them.
// Buffers must not be touched until the request completes. A failure is
// reported at completion, never when the operation starts (DESIGN.md
// rule 2).

// queue is a communicator's nonblocking collectives not yet finished.
type queue struct {
	mu      sync.Mutex
	jobs    []func()
	running bool
	busy    atomic.Bool // jobs queued or running: blocking calls go through the queue
}

func stateOf(c *ranks.Comm) *state {
	if c == nil {
		return nil
	}
	st, _ := ext.SlotsOf(c)[ext.SlotColl].(*state)
	return st
}

// idle reports whether a blocking collective on c may run at once.
func idle(c *ranks.Comm) bool {
	st := stateOf(c)
	return st == nil || !st.q.busy.Load()
}

// ordered runs f after the nonblocking collectives queued on c.
func ordered(c *ranks.Comm, f func() error) error {
	st := stateOf(c)
	if st.freed.Load() {
		return freedErr("collective")
	}
	done := make(chan error, 1)
	st.enqueue(func() { done <- f() })
	return <-done
}

// enqueue adds job to the queue, starting its goroutine if needed. The
// communicator is held until the job ends (ext.Hold): a Free meanwhile
// does not take its resources from under it.
func (st *state) enqueue(job func()) {
	q := &st.q
	ext.Hold(st.c)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, job)
	q.busy.Store(true)
	if !q.running {
		q.running = true
		go st.drain()
	}
}

// drain runs the queued jobs in order until none is left.
func (st *state) drain() {
	q := &st.q
	for {
		q.mu.Lock()
		if len(q.jobs) == 0 {
			q.running = false
			q.busy.Store(false)
			q.mu.Unlock()
			return
		}
		job := q.jobs[0]
		q.jobs[0] = nil
		q.jobs = q.jobs[1:]
		q.mu.Unlock()
		st.admitted.Store(true)
		job()
		st.admitted.Store(false)
		ext.Unhold(st.c)
	}
}

// post queues f as the nonblocking collective op on c.
func post(c *ranks.Comm, op string, f func() error) (*ranks.Request, error) {
	st := stateOf(c)
	if st == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil or foreign communicator"}
	}
	if st.freed.Load() {
		return nil, freedErr(op)
	}
	req, complete := ext.NewRequest(c, op)
	st.enqueue(func() { complete(relabel(f(), op)) })
	return req.(*ranks.Request), nil
}

// Ibarrier is the nonblocking Barrier.
func Ibarrier(c *ranks.Comm) (*ranks.Request, error) {
	return post(c, "Ibarrier", func() error { return barrier(c) })
}

// Ibcast is the nonblocking Bcast.
func Ibcast[T any](c *ranks.Comm, buf []T, root int) (*ranks.Request, error) {
	return post(c, "Ibcast", func() error { return bcast(c, buf, root) })
}

// Ireduce is the nonblocking Reduce.
func Ireduce[T any](c *ranks.Comm, send, recv []T, op Op[T], root int) (*ranks.Request, error) {
	return post(c, "Ireduce", func() error { return reduce(c, send, recv, op, root) })
}

// Iallreduce is the nonblocking Allreduce.
func Iallreduce[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	return post(c, "Iallreduce", func() error { return allreduce(c, send, recv, op) })
}

// Igather is the nonblocking Gather.
func Igather[T any](c *ranks.Comm, send, recv []T, root int) (*ranks.Request, error) {
	return post(c, "Igather", func() error { return gather(c, send, recv, root) })
}

// Iscatter is the nonblocking Scatter.
func Iscatter[T any](c *ranks.Comm, send, recv []T, root int) (*ranks.Request, error) {
	return post(c, "Iscatter", func() error { return scatter(c, send, recv, root) })
}

// Iallgather is the nonblocking Allgather.
func Iallgather[T any](c *ranks.Comm, send, recv []T) (*ranks.Request, error) {
	return post(c, "Iallgather", func() error { return allgather(c, send, recv) })
}

// Ialltoall is the nonblocking Alltoall.
func Ialltoall[T any](c *ranks.Comm, send, recv []T) (*ranks.Request, error) {
	return post(c, "Ialltoall", func() error { return alltoall(c, send, recv) })
}
