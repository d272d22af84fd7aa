package ranks

import "sync"

// Idup and the order of a communicator's creations.
//
// Dup, Idup and Split of a parent all hand out the new context slot on
// the parent's collective twin with the same tags (tagCreate from the
// leader, tagSplitInfo and tagSplitTable), so two of them running at
// once at one rank could take each other's messages. They therefore run
// one at a time per parent, in the order this rank started them, which
// MPI makes the same at every member: an Idup is queued and runs on a
// goroutine of the parent (as coll's nonblocking collectives and ulfm's
// Ishrink do); a blocking Dup or Split started while Idups are queued
// runs after them, and at once otherwise. At the leader a creation ends
// only after every member has adopted the slot (create), and messages
// between two ranks on one tag are not overtaken, so the next creation's
// messages can only meet that creation's receives. Coll's traffic stays
// below tagCreateBase and CreateGroup has tags of its own, so neither
// needs the queue.

// createQueue is a communicator's creations waiting to run.
type createQueue struct {
	mu      sync.Mutex
	jobs    []func()
	running bool // a creation runs, inline or on the goroutine
}

// inOrder runs f, a blocking creation, after the creations queued on c.
func (c *Comm) inOrder(f func()) {
	q := &c.local.queue
	q.mu.Lock()
	if q.running {
		done := make(chan struct{})
		q.jobs = append(q.jobs, func() { f(); close(done) })
		q.mu.Unlock()
		<-done
		return
	}
	q.running = true
	q.mu.Unlock()
	f()
	q.mu.Lock()
	if len(q.jobs) > 0 {
		c.e.concurrent()
		go c.drainCreations() // Idups started meanwhile by other goroutines
	} else {
		q.running = false
	}
	q.mu.Unlock()
}

// enqueue queues job to run after the creations queued on c.
func (c *Comm) enqueue(job func()) {
	q := &c.local.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, job)
	if !q.running {
		q.running = true
		c.e.concurrent()
		go c.drainCreations()
	}
}

// drainCreations runs the queued creations in order until none is left.
func (c *Comm) drainCreations() {
	q := &c.local.queue
	for {
		q.mu.Lock()
		if len(q.jobs) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		job := q.jobs[0]
		q.jobs[0] = nil
		q.jobs = q.jobs[1:]
		q.mu.Unlock()
		job()
	}
}

// Idup is the nonblocking Dup (MPI_Comm_idup): *out holds the new
// communicator once the returned request completes, and nil if it
// completes with an error. Until then neither *out nor the request's
// completion may be assumed. The attribute Copy callbacks run now, in
// this call, on c's attributes as they are now; a failure of a member,
// or an error of a callback, is reported when the request completes (the
// copies are then deleted, their Delete callbacks running on a goroutine
// of their own, with a nil communicator if none was made). c
// may be freed while the Idup runs (MPI allows it: the operation
// completes). Several Idups, and other collectives, may be outstanding
// on c at once; every member must start them in the same order.
func (c *Comm) Idup(out **Comm) (*Request, error) { return c.idup(nil, out, "Idup") }

// IdupWithInfo is Idup whose new communicator takes its hints from info
// (MPI_Comm_idup_with_info), read during this call.
func (c *Comm) IdupWithInfo(info *Info, out **Comm) (*Request, error) {
	return c.idup(info, out, "IdupWithInfo")
}

func (c *Comm) idup(info *Info, out **Comm, op string) (*Request, error) {
	if err := c.usableLocked(op); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, newErr(ErrArg, op, -1, "nil place for the new communicator")
	}
	hints := hintsOf(info)
	copies, copyErr := c.copyAttrs(op)
	req, complete := c.genRequest(op)
	*out = nil
	c.holds.Add(1) // a Free meanwhile keeps c's resources until the creation ends
	c.enqueue(func() {
		defer c.unhold()
		nc, err := c.dupNow(op)
		if err != nil || copyErr != nil {
			// Delete callbacks may call shmpi, even start a creation on
			// c, which waits for this queue: run them elsewhere.
			go func() {
				if err != nil {
					discardCopies(nil, copies, op)
					complete(err)
					return
				}
				_, err := c.finishDup(nc, copies, copyErr, hints, op)
				complete(err)
			}()
			return
		}
		*out, _ = c.finishDup(nc, copies, nil, hints, op)
		complete(nil)
	})
	return req, nil
}

// unhold ends a hold of c (a creation's, a persistent request's,
// ext.Hold's); the last one after a Free gives c's resources back now.
func (c *Comm) unhold() {
	if c.holds.Add(-1) != 0 {
		return
	}
	c.e.lock()
	if c.freed {
		c.e.reap()
	}
	c.e.unlock()
}
