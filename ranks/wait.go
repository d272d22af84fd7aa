package ranks

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/shm"
)

// Waiting: completing requests, and blocking until a predicate holds. A
// waiting rank polls while ranks do not outnumber cores, then sleeps on
// its futex doorbell; posters ring the doorbell only when the waiter
// announced that it sleeps (shm.Doorbell). The order that prevents a lost
// wake-up: arm the doorbell, re-check by running progress, then sleep.

// sleepTimeout bounds every futex sleep, so that a rank re-checks the
// liveness words itself even if no watcher and no launcher woke it.
// job.EnvSleepTimeout overrides it (engine.sleepTimeout).
const sleepTimeout = 100 * time.Millisecond

func (e *engine) complete(r *request, err error) {
	if err != nil {
		r.st.Err = err
	}
	if r.pinned {
		r.pin.Unpin()
		r.pinned = false
	}
	r.done = true
	if e.sleepers.Load() > 0 {
		e.db.Ring() // another goroutine of this rank may sleep on r
	}
	if r.orphan && r.list == nil {
		e.recycleOrphan(r) // nobody holds a handle: callers touch r no more
	}
}

// block runs the progress engine until pred holds. It is called and
// returns with e.mu held, and releases it while spinning or sleeping so
// other goroutines of the rank can run. pred is evaluated under e.mu.
// op, peer, tag and ctx describe the wait for deadline reports; wpeer is
// the world rank it depends on alone, or -1.
func (e *engine) block(pred func() bool, op job.Op, peer, tag int, ctx uint32, wpeer int) {
	e.blockOn(pred, op, "", peer, tag, ctx, wpeer, nil, nil)
}

// blockOn is block that also watches a shared word whose change may end
// the wait (a collective's completion word): the spin loop polls it, and
// a sleeper sleeps on it as well as on the doorbell, so that the one
// futex wake its writer makes (ext.Release) reaches every sleeper.
// asleep is the communicator's count of members asleep on such words
// (job.Map.Sleepers), which the writer reads to skip the wake syscall
// when nobody sleeps; it must be set when watch is. name is the
// operation's name for op job.OpColl ("Barrier", "Win.Lock"), which
// deadline reports show; it is copied only if the wait sleeps.
func (e *engine) blockOn(pred func() bool, op job.Op, name string, peer, tag int, ctx uint32, wpeer int, watch, asleep *atomic.Uint32) {
	e.progress()
	if pred() {
		return
	}
	e.kickIdle()
	recorded := false
	yields := e.preYields
	e.preYields = 0
	noted := false
	idle := 0 // idle spin rounds
	spinning := e.spin
	var start time.Time
	for iter := 0; ; iter++ {
		if spinning {
			if iter&255 == 0 {
				if iter == 0 {
					start = time.Now()
				} else if d := time.Since(start); d > e.spinTime && (d > copySpin || e.active.n == 0) {
					spinning = false
				}
			}
			if iter&3 == 3 {
				e.offerP()
			}
			switch {
			case e.want.Load() != 0:
				// Another goroutine of this rank needs the engine.
				e.relax()
				e.unlock()
				runtime.Gosched()
				e.relock()
			case e.active.n > 0 || len(e.queued) > 0 || len(e.ackq) > 0:
				// Transfers in flight need the whole engine.
				spin.Pause()
				if iter&255 == 255 {
					// As the idle rounds below do, every 30 µs or so: this
					// wait may last copySpin, and the rank's watcher must
					// get the CPU to declare a peer's death.
					e.unlock()
					shm.Yield()
					e.relock()
				}
			default:
				// Only a message or a change of the failure table can end
				// this wait: poll for them with plain loads.
				e.relax() // idle: hand consumed slots back now
				seen := e.seenEpoch
				if watch != nil {
					wv := watch.Load()
					for k := 0; k < 64 && !e.inbox.Ready() && e.epoch.Load() == seen && e.want.Load() == 0 && watch.Load() == wv; k++ {
						spin.Pause()
					}
				} else {
					for k := 0; k < 64 && !e.inbox.Ready() && e.epoch.Load() == seen && e.want.Load() == 0; k++ {
						spin.Pause()
					}
				}
				if idle++; idle%16 == 0 {
					// Every 16 idle rounds (about 30 µs here) give the CPU to the
					// threads that share it: this rank's liveness watcher
					// above all, which the kernel wakes when a peer dies and
					// which must run to declare it. A bound rank's threads all
					// share its CPU, and the scheduler let a spinning rank keep
					// it for 0.5-0.6 ms after such a wake-up (perf sched, 2
					// ranks on 2 cores): the launcher, reaping the dead
					// process after its teardown, declared the failure first
					// in 3 runs of 6. With nothing else runnable the yield
					// returns at once.
					e.unlock()
					shm.Yield()
					e.relock()
				}
			}
		} else {
			if e.sleepAtOnce == 0 && (yields < e.p2pYields || watch != nil && yields < e.yieldBudget) ||
				e.patientUntil != 0 && int64(time.Since(procStart)) < e.patientUntil {
				// Oversubscribed (or done spinning): hand the CPU to the
				// ranks that share it rather than sleep and pay a
				// wake-up. In a collective every member must run once
				// before it completes (osu_barrier at 8 ranks on 2 cores
				// shows the gain); other waits yield fewer times
				// (p2pYields: engine.go has the figures).
				if !noted {
					e.noteWaiter() // which thread waits (evacuate.go)
					noted = true
				}
				yields++
				e.tool.yields++
				var wv uint32
				if watch != nil {
					wv = watch.Load()
				}
				e.relax()
				// The inbox is looked at under the lock: another
				// goroutine of this rank may drain it once we let go.
				arrived := watch == nil && e.inbox.Ready()
				e.unlock()
				if !arrived && (watch == nil || watch.Load() == wv) {
					shm.Yield()
				}
				e.relock()
				e.progress()
				if pred() {
					break
				}
				continue
			}
			if !recorded && op != job.OpNone {
				e.recordOp(op, name, peer, tag, ctx)
				recorded = true
			}
			if !noted {
				e.noteWaiter()
				noted = true
			}
			tok := e.db.Arm()
			if e.globalBarrier {
				// Senders that publish without a fence (fenceSends) are
				// fenced here: after it, their messages are visible to
				// the re-check below, or they see the doorbell armed. If
				// it failed, such a message could wait for the sleep's
				// timeout (counted in sleepTimeouts).
				shm.GlobalBarrier()
			}
			var wv uint32
			if watch != nil {
				// Counted before the word is read: a writer that then
				// finds no sleeper stored before our read, so we see
				// its change (job.Map.Sleepers).
				asleep.Add(1)
				wv = watch.Load() // before the re-check: a change after it ends the sleep
			}
			e.sleepers.Add(1)
			// Sends that wait for room: ask receivers to wake us when
			// they free some (set before the re-check in progress).
			e.setStarving(len(e.queued) > 0 || len(e.ackq) > 0)
			e.progress()
			if pred() {
				e.sleepers.Add(-1)
				if watch != nil {
					asleep.Add(^uint32(0))
				}
				break
			}
			e.relax()
			e.tool.sleeps++
			// Every sleep also watches the failure epoch's word, which a
			// change of the table (a failure, a finalize, a revoke) bumps
			// with one wake for all (job.Map.Bump). If it moved since the
			// last refresh the sleep returns at once. Read under the lock:
			// another goroutine's sweep writes seenEpoch.
			ew, ev := e.t.EpochWord(), uint32(e.seenEpoch)
			e.unlock()
			timedOut := false
			if watch != nil {
				timedOut = e.db.SleepOr2(tok, ew, ev, watch, wv, e.sleepTimeout)
			} else if e.spin && wpeer >= 0 && wpeer != e.me {
				// Waiting for one peer: sleep on its direct liveness word
				// too, so that its death wakes us without a watcher. Not
				// when ranks outnumber cores: they sleep on every wait,
				// and the second word slows each hop (examples/ring at
				// 64 ranks on 2 cores shows it).
				dw := &e.t.Direct(wpeer, e.me).Word
				if v := dw.Load(); !shm.Dead(v) {
					timedOut = e.db.SleepOr2(tok, ew, ev, dw, v, e.sleepTimeout)
				}
				if shm.Dead(dw.Load()) {
					e.declareDead(wpeer, job.CauseDirect)
				}
			} else {
				timedOut = e.db.SleepOr(tok, ew, ev, e.sleepTimeout)
			}
			// The sleep says whether it timed out: reading the clock
			// around it cost two reads per sleep, each slow right after
			// a context switch (perf: 4% of osu_barrier at 8 ranks).
			if timedOut {
				// Nobody woke us for a long time: check the liveness
				// words ourselves rather than trust that a watcher did.
				e.checkLiveness()
			}
			e.sleepers.Add(-1)
			if watch != nil {
				asleep.Add(^uint32(0))
			}
			e.relock()
			e.progress()
			if pred() {
				if timedOut {
					// What we waited for came, and no wake-up did: a
					// poster missed us. (A timeout with nothing there
					// yet is a slow peer, not counted.)
					e.sleepTimeouts.Add(1)
				}
				break
			}
			continue
		}
		e.progress()
		if pred() {
			break
		}
	}
	if recorded {
		e.t.CB(e.me).EndOp(op)
	}
	e.setStarving(false)
}

// copySpin bounds a spinning wait while this rank has transfers in
// flight (rendezvous sends and receives in active). The clock is read
// every 256 rounds, and a round with a transfer in flight is one PAUSE,
// not the idle round's 64: such a wait went to sleep after some 30 µs,
// where an idle one polls about 0.4 ms (guide.md, SHMPI_SPIN). It then
// slept in the middle of copies and of waits for a match that come in
// tens of microseconds, and paid a global barrier and a wake-up for
// each: Gather and Reduce of 1 MiB at 2 ranks, docs/performance.md
// (2026-11-28).
const copySpin = 500 * time.Microsecond

// offerP lets the Go scheduler run something else on this thread for a
// moment; waits that poll call it every few microseconds. A spinning rank
// is pinned to one CPU, so GOMAXPROCS is 1, and a goroutine that polls
// never gives up its P: the garbage collector's mark worker then runs
// only when sysmon preempts it (10 ms), and the write barrier stays on
// that long. With the offers a collection's mark took 0.2 ms instead of
// 3 ms, and the 1-byte osu_mbw_mr rate rose from 11.7-12.3 to 14.0-14.2
// million messages/s (2026-11-25); with nothing else runnable an offer
// costs about as much as a PAUSE loop of 64. Not with two Ps (the other
// P serves the worker, and each offer would wake an idle thread to look
// for work) nor in a rank driven from C (ext.CHost).
func (e *engine) offerP() {
	if e.oneP {
		runtime.Gosched()
	}
}

// relax runs when this rank is idle: it publishes the slots it consumed
// and, if it freed anything and some rank sleeps waiting for room
// (backpressure), wakes the starving ranks. The fence orders the frees
// before the load of the starving count (the other half of the Dekker
// pair is in setStarving).
func (e *engine) relax() {
	if !e.released {
		return
	}
	e.released = false
	e.inbox.Flush()
	e.fenceWord.Add(0)
	if e.t.Starving.Load() == 0 {
		return
	}
	for q := range e.n {
		if q != e.me && e.t.CB(q).Starving.Load() != 0 {
			e.dbs[q].Ring()
		}
	}
}

// setStarving raises or lowers this rank's starving flag: up while it
// sleeps with sends that wait for room in an inbox or for a chunk.
func (e *engine) setStarving(on bool) {
	if on == e.starving {
		return
	}
	e.starving = on
	if on {
		e.t.CB(e.me).Starving.Store(1)
		e.t.Starving.Add(1)
	} else {
		e.t.CB(e.me).Starving.Store(0)
		e.t.Starving.Add(^uint32(0))
	}
}

// recordOp publishes what this rank is blocked in, for deadline reports.
func (e *engine) recordOp(op job.Op, name string, peer, tag int, ctx uint32) {
	e.t.CB(e.me).RecordOp(op, name, peer, tag, ctx, time.Now().UnixNano())
}
