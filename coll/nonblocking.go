package coll

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/ranks"
)

// Nonblocking collectives. Each returns a *ranks.Request at once; Wait,
// Test and the many-request forms of package ranks complete it. They run,
// in the order this rank started them, one at a time (so that every
// member runs the communicator's collectives in the same order, as MPI
// requires), on whichever goroutine gets to them first: the goroutine
// that waits for one (Wait and WaitAll run the queue up to it, with no
// hand-over), or a goroutine of the communicator that drives them while
// the caller waits for something else (MPI's progress rule: a nonblocking
// collective progresses while its rank is blocked in another call, or
// polls with Test). That goroutine is started with the first queued
// collective when the rank has a core of its own and more than one P
// (it then overlaps the caller's computation); otherwise only when the
// rank blocks in another wait or a Test finds the request pending
// (ext.NeedProgress): starting it wakes a thread, which cost 35-40 µs a
// call at 8 ranks on 2 cores (osu_allreduce_persistent -compare: 45 µs
// against 7 for Allreduce), and the work runs on the waiter anyway. A
// blocking collective started meanwhile runs after them. Buffers must not
// be touched until the request completes. A failure is reported at
// completion, never when the operation starts (DESIGN.md rule 2).

// queue is a communicator's nonblocking collectives not yet finished.
type queue struct {
	mu      sync.Mutex
	jobs    []func()
	enq     uint64         // jobs queued so far: a job's number
	spawned bool           // a drain goroutine exists
	kicked  bool           // a kick is registered (ext.NeedProgress) and has not run
	busy    atomic.Bool    // jobs queued or running: blocking calls go through the queue
	ran     atomic.Uint64  // jobs finished so far
	run     sync.Mutex     // held by the goroutine running jobs
	runner  atomic.Uintptr // the helping goroutine that holds run (spin.GoroutineID), or 0
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
	st.help(st.enqueue(func() { done <- f() }))
	return <-done
}

// enqueue adds job to the queue, starting a drain goroutine if none
// exists, and returns the job's number. The communicator is held until
// the job ends (ext.Hold): a Free meanwhile does not take its resources
// from under it.
func (st *state) enqueue(job func()) uint64 {
	q := &st.q
	ext.Hold(st.c)
	q.mu.Lock()
	n := q.enq
	q.enq++
	q.jobs = append(q.jobs, job)
	q.busy.Store(true)
	register := false
	switch {
	case q.spawned || q.kicked:
	case eagerDrain(st.c):
		q.spawned = true
		ext.Concurrent(st.c)
		go st.drain()
	default:
		q.kicked = true
		register = true
	}
	q.mu.Unlock()
	if register {
		// Outside q.mu: the rank calls kicks holding its kick list's
		// lock, and a kick takes q.mu.
		ext.NeedProgress(st.c, st.kick)
	}
	return n
}

// eagerDrain reports whether a queue of c starts its drain goroutine with
// its first job: when the rank spins (a core of its own) and its Go
// runtime has a second P for the goroutine, so that the collective
// overlaps the caller's work.
func eagerDrain(c *ranks.Comm) bool {
	return ext.Spinning(c) && runtime.GOMAXPROCS(0) > 1
}

// kick is the queue's ext.NeedProgress callback: it starts the drain
// goroutine if jobs wait and nobody else runs them, and reports whether
// it is done. It reports false, to be called again, when the calling
// goroutine is itself running the queue (a Wait's help, whose job is
// waiting inside): that run stops at the waiter's job and may leave later
// ones behind. A drain goroutine started while another goroutine runs
// the queue waits for it (q.run).
func (st *state) kick() bool {
	q := &st.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.spawned || len(q.jobs) == 0 {
		q.kicked = false
		return true
	}
	if q.run.TryLock() {
		q.run.Unlock()
	} else if me := spin.GoroutineID(); me != 0 && q.runner.Load() == me {
		return false
	}
	q.kicked = false
	q.spawned = true
	ext.Concurrent(st.c)
	go st.drain()
	return true
}

// drain runs the queued jobs in order until none is left.
func (st *state) drain() {
	q := &st.q
	for {
		q.run.Lock()
		ok := st.runOne(true)
		q.run.Unlock()
		if !ok {
			return
		}
	}
}

// help runs the queued jobs up to job n on this goroutine. If another
// goroutine is running jobs, it waits for it and goes on from there: the
// other may be a waiter that stops at its own job (a drain goroutine is
// started only on a kick, which may not come while this one waits).
func (st *state) help(n uint64) {
	q := &st.q
	me := spin.GoroutineID()
	for q.ran.Load() <= n {
		q.run.Lock()
		if q.ran.Load() > n {
			q.run.Unlock()
			return
		}
		q.runner.Store(me)
		ok := st.runOne(false)
		q.runner.Store(0)
		q.run.Unlock()
		if !ok {
			return
		}
	}
}

// runOne runs the next queued job, with q.run held; it reports false if
// there was none (a drain goroutine then ends).
func (st *state) runOne(drainer bool) bool {
	q := &st.q
	q.mu.Lock()
	if len(q.jobs) == 0 {
		q.busy.Store(false)
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
	st.admitted.Store(true)
	job()
	st.admitted.Store(false)
	q.ran.Add(1)
	// Not busy once the last job ran: a Wait's help stops at its own
	// job, and until a drain goroutine looked, every blocking collective
	// went through the queue (and C's fast ones to Go).
	q.mu.Lock()
	if len(q.jobs) == 0 {
		q.busy.Store(false)
	}
	q.mu.Unlock()
	ext.Unhold(st.c)
	return true
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
	n := st.enqueue(func() { complete(relabel(f(), op)) })
	ext.SetHelp(req, func() { st.help(n) })
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

// Igatherv is the nonblocking Gatherv.
func Igatherv[T any](c *ranks.Comm, send, recv []T, counts, displs []int, root int) (*ranks.Request, error) {
	return post(c, "Igatherv", func() error { return gatherv(c, send, recv, counts, displs, root) })
}

// Iscatterv is the nonblocking Scatterv.
func Iscatterv[T any](c *ranks.Comm, send []T, counts, displs []int, recv []T, root int) (*ranks.Request, error) {
	return post(c, "Iscatterv", func() error { return scatterv(c, send, counts, displs, recv, root) })
}

// Iallgatherv is the nonblocking Allgatherv.
func Iallgatherv[T any](c *ranks.Comm, send, recv []T, counts, displs []int) (*ranks.Request, error) {
	return post(c, "Iallgatherv", func() error { return allgatherv(c, send, recv, counts, displs) })
}

// Ialltoallv is the nonblocking Alltoallv.
func Ialltoallv[T any](c *ranks.Comm, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) (*ranks.Request, error) {
	return post(c, "Ialltoallv", func() error { return alltoallv(c, send, scounts, sdispls, recv, rcounts, rdispls) })
}

// Ialltoallw is the nonblocking Alltoallw.
func Ialltoallw(c *ranks.Comm, send, recv [][]byte) (*ranks.Request, error) {
	return post(c, "Ialltoallw", func() error { return alltoallw(c, send, recv) })
}

// IreduceScatter is the nonblocking ReduceScatter.
func IreduceScatter[T any](c *ranks.Comm, send, recv []T, counts []int, op Op[T]) (*ranks.Request, error) {
	return post(c, "IreduceScatter", func() error { return reduceScatter(c, send, recv, counts, op) })
}

// IreduceScatterBlock is the nonblocking ReduceScatterBlock.
func IreduceScatterBlock[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	return post(c, "IreduceScatterBlock", func() error { return reduceScatterBlock(c, send, recv, op) })
}

// Iscan is the nonblocking Scan.
func Iscan[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	return post(c, "Iscan", func() error { return scan(c, send, recv, op) })
}

// Iexscan is the nonblocking Exscan.
func Iexscan[T any](c *ranks.Comm, send, recv []T, op Op[T]) (*ranks.Request, error) {
	return post(c, "Iexscan", func() error { return exscan(c, send, recv, op) })
}
