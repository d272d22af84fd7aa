package ranks

import (
	"runtime"
	"sync/atomic"

	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/shm"
)

// The engine lock at ThreadMultiple is biased toward one goroutine.
//
// Most programs call the runtime from one goroutine, and for them a
// mutex costs two locked instructions per call (the acquire's CAS and
// the release's XADD), each a full fence that waits for the store buffer
// to drain, behind a store to a line the peer holds if one is pending:
// osu_latency at 8 B took 10-40 ns more at ThreadMultiple than at
// ThreadSingle, which has no lock. So the first goroutine to take the
// lock becomes its owner, and from then on takes and releases it with
// plain stores and loads:
//
//	owner:    inside = 1; if !off { enter }   ...   inside = 0
//	another:  lock mu; off = true; membarrier(); wait until inside == 0
//
// The owner's store and its load of off may be reordered by the store
// buffer, which alone would let both in. membarrier (the private
// expedited command) runs a full barrier on every CPU running a thread
// of this process before it returns, so either the owner's store of
// inside is visible to the other goroutine's later load, or the barrier
// came before the owner's load of off, which then sees true (a thread
// not running has had its stores drained by the context switch). The
// owner that sees off takes the mutex like everyone else.
//
// The bias is withdrawn for good the first time another goroutine takes
// the lock: a program that uses several goroutines pays one membarrier
// and then the mutex. Where membarrier or the goroutine id is missing
// (another architecture, the race detector), the lock is the mutex.
type biasLock struct {
	owner  atomic.Uintptr // the owner's goroutine id; 0: none yet
	inside uint64         // 1 while the owner holds the lock by bias (its plain stores)
	off    atomic.Bool    // the bias is withdrawn
	on     atomic.Bool    // the bias may be used (set at Init, or once registered: initBias); a plain load on amd64
	byBias bool           // the current holder holds the lock by bias (the holder's field)
}

// initBias enables the bias if this build and kernel allow it.
func (e *engine) initBias() {
	if e.serial || !spin.HaveGoroutineID {
		return
	}
	if asyncBarrier {
		// A spawned rank (see asyncBarrier): the registration waits for
		// an RCU grace period. Until it is done the lock is the mutex;
		// the first holder after it becomes the owner, as at Init.
		go func() {
			if shm.RegisterPrivateBarrier() {
				e.bias.on.Store(true)
			}
		}()
		return
	}
	if !shm.RegisterPrivateBarrier() {
		return
	}
	e.bias.on.Store(true)
}

// lockBiased takes the lock by bias if this goroutine owns it; it
// reports false otherwise.
func (e *engine) lockBiased() bool {
	// off is checked again after inside is set; this first look spares
	// the goroutine id and two stores once the bias is withdrawn.
	if !e.bias.on.Load() || e.bias.off.Load() {
		return false
	}
	if g := spin.GoroutineID(); g != e.bias.owner.Load() {
		return false
	}
	spin.StoreRelease64(&e.bias.inside, 1)
	if e.bias.off.Load() {
		spin.StoreRelease64(&e.bias.inside, 0)
		return false
	}
	e.bias.byBias = true
	return true
}

// afterMutex runs once the mutex is held: the first holder becomes the
// owner; any other withdraws the bias and waits for the owner to leave.
//
// byBias is false here, so the holder unlocks the mutex: the owner clears
// it in unlockBiased before it lets go of inside, and this waits for that.
func (e *engine) afterMutex() {
	if !e.bias.on.Load() || e.bias.off.Load() {
		return
	}
	g := spin.GoroutineID()
	switch e.bias.owner.Load() {
	case 0:
		e.bias.owner.Store(g)
	case g:
	default:
		e.bias.off.Store(true)
		shm.PrivateBarrier()
		if atomic.LoadUint64(&e.bias.inside) != 0 {
			// The owner may poll with the lock held: want tells it to
			// let go (block's spin loop, recvFast).
			e.want.Add(1)
			for atomic.LoadUint64(&e.bias.inside) != 0 {
				runtime.Gosched()
			}
			e.want.Add(-1)
		}
	}
}

// unlockBiased releases a lock held by bias; it reports false if the
// lock is the mutex.
func (e *engine) unlockBiased() bool {
	if !e.bias.byBias {
		return false
	}
	e.bias.byBias = false
	spin.StoreRelease64(&e.bias.inside, 0)
	return true
}
