package mpio

import (
	"sync"
	"sync/atomic"
)

// queue runs a file's collective calls, blocking and nonblocking, one at
// a time in the order this rank made them: every member must run them in
// the same order, since each is a sequence of collectives on the file's
// communicator. A nonblocking call's job runs on a drain goroutine
// (started with the first one queued), or on the goroutine that waits
// for its request, whichever gets there first; a blocking call's job
// runs on the caller's goroutine once the jobs before it are done (it
// may run them itself).
type queue struct {
	mu      sync.Mutex
	jobs    []func()
	enq     uint64 // jobs queued so far: a job's number
	spawned bool   // a drain goroutine exists

	run sync.Mutex    // held while a job runs
	ran atomic.Uint64 // jobs finished so far
}

// enqueue adds job and returns its number; drain starts a drain
// goroutine if none exists.
func (q *queue) enqueue(job func(), drain bool) uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.enq
	q.enq++
	q.jobs = append(q.jobs, job)
	if drain && !q.spawned {
		q.spawned = true
		go q.drain()
	}
	return n
}

func (q *queue) drain() {
	for {
		q.run.Lock()
		ok := q.runOne(true)
		q.run.Unlock()
		if !ok {
			return
		}
	}
}

// help returns once job n has run, running it (and the jobs before it)
// on this goroutine unless another is running them.
func (q *queue) help(n uint64) {
	for q.ran.Load() <= n {
		q.run.Lock()
		q.runOne(false)
		q.run.Unlock()
	}
}

// runOne runs the next job, with q.run held; it reports false if there
// was none (a drain goroutine then ends).
func (q *queue) runOne(drainer bool) bool {
	q.mu.Lock()
	if len(q.jobs) == 0 {
		if drainer {
			q.spawned = false
		}
		q.mu.Unlock()
		return false
	}
	job := q.jobs[0]
	q.jobs[0] = nil
	q.jobs = q.jobs[1:]
	q.mu.Unlock()
	job()
	q.ran.Add(1)
	return true
}

// do runs job as a blocking collective call: after the calls queued
// before it, on this goroutine if it can.
func (q *queue) do(job func()) {
	q.help(q.enqueue(job, false))
}
