package ranks

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ring"
	"github.com/shmpi/shmpi/shm"
)

// The engine: one rank's communication state and the rules that hold it
// together. The mechanisms live in files of their own:
//
//	wait.go      completing requests, spinning and sleeping (block), backpressure
//	progress.go  the progress loop: draining the inbox, dispatching descriptors
//	match.go     posted receives and unexpected messages, per communicator
//	protocol.go  starting sends and receives: inline, eager chunks, handshakes
//	transfer.go  the rendezvous: cooperative single copy, pipelined fallback
//	fallback.go  protocols for when handshake slots run out (MPI's progress rule)
//	mprobe.go    matched probes: messages taken out of matching (Mprobe, Mrecv)
//	bsend.go     buffered mode: the attached buffer, sends from it, detach
//	p2pmore.go   ready mode, the send-receive family (Isendrecv), GetStatus
//	waitctx.go   waits bounded by a context.Context
//	failure.go   failure knowledge: the table, dead claimers, judging operations,
//	             the liveness watcher
//	revoke.go    the revoke mechanism, and dispatch to upper packages' kinds
//	wire.go      the descriptor and handshake-slot records
//
// The segment's map, the control blocks, the failure table and the
// context slots are package internal/job's, shared with launchers.
//
// Invariants (all under e.mu, except the atomics):
//   - A request is on at most one list at a time (a communicator's posted
//     list, a destination's send queue, or the active list), and r.list
//     says which; a completed request is on none.
//   - Messages of one sender to one receiver leave in the order they were
//     sent: the send queue per destination is FIFO, and nothing is posted
//     to a destination whose queue is not empty.
//   - A message that a matched probe took (mprobe.go) is on the held list
//     and on no communicator's: only its *Message receives it.
//   - A receive matches unexpected messages before it is posted, and an
//     arriving message matches posted receives before it is kept as
//     unexpected: so matching follows arrival order per sender.
//   - An inline or chunk message is copied out of the segment when it is
//     handled, matched or not: inbox slots and chunks are never held by
//     an unmatched message. Only handshake slots are, and fallback.go
//     keeps that from blocking later messages.
//   - Operations on an ended peer are judged (evaluate) only after a drain
//     that emptied the inbox: whatever the peer published first is
//     delivered first.

// drainBudget bounds how many inbox messages one progress call handles.
const drainBudget = 64

// engine is one rank's communication state. Everything in it is guarded
// by mu, except the atomics.
type engine struct {
	mu  sync.Mutex
	seg *shm.Segment
	t   *job.Map // where everything of the segment is; the failure table
	lay job.Layout
	me  int
	n   int

	prods []*ring.Producer // our producer handle on every rank's inbox
	inbox *ring.Consumer   // ours
	dbs   []shm.Doorbell   // doorbell of every rank
	db    shm.Doorbell     // ours
	pids  []int            // process id of every rank, read lazily
	csz   int              // chunk size
	eager int              // largest message sent through a chunk

	hsFree    []int // our free handshake slots
	chunkHint int

	// Streaming detection for short records (streamsTo).
	doubles  bool   // inboxes are large enough for double records
	rx       uint64 // inbox messages handled so far
	rxAtSend uint64 // rx at the last small send
	lastDest int    // world rank of the last small send, or -1
	// Counters of the tool interface (toolseam.go), beside rx on the
	// line both fast paths write already: plain adds under the lock.
	tx      uint64 // messages sent (sendInline, startSend)
	txBytes uint64
	rxBytes uint64 // bytes of the messages received (rx counts every descriptor)

	epoch       *atomic.Uint64 // the shared change epoch
	seenEpoch   uint64
	failed      []bool // failed ranks known here
	final       []bool // finalized ranks known here
	gone        []bool // failed or finalized
	warm        []bool // peers whose chunks are pre-faulted here
	failedOrder []int  // world ranks in the order this rank learned of their failure
	needEval    bool   // a peer ended: pending operations must be re-judged
	drained     bool   // the last drain emptied the inbox

	comms     []*Comm                 // by context id (the wire context's low bits)
	live      []*Comm                 // the registered communicators, densely (register)
	slotGen   []uint32                // per context slot: the generation of its last communicator here
	early     map[uint32]*ilist[umsg] // by wire context: messages for communicators not created here yet
	freeing   []*Comm                 // freed, with operations still running (reap)
	localGone []*Comm                 // local intracommunicators of intercommunicators just released (reap)

	sendq   []ilist[request] // per destination: sends waiting for ring space, in order
	queued  []int            // destinations with a non-empty sendq
	active  ilist[request]   // transfers waiting on a handshake or a pipelined copy
	reqFree []*request       // internal requests of blocking calls, reused
	slab    []request        // where nonblocking requests come from
	nbFree  []*request       // nonblocking requests whose handles were freed
	handles []Request        // where handles come from
	sent    request          // the shared state of Isends complete at their start (sentHandle)
	umFree  []*umsg

	// The fallback protocols of fallback.go.
	fragIn  []*fragIn           // per source: the fragmented message arriving
	ackWait map[uint32]*request // synchronous sends waiting for a kAck, by id
	ackID   uint32              // the last ack id handed out
	ackq    []ackOut            // kAcks waiting for room in the sender's inbox

	spin     bool
	oneP     bool // one P, and a Go host (not ext.CHost): polling waits offer the P
	spinTime time.Duration
	// The sleep protocol's Dekker pair: a sender publishes a message
	// and then reads the receiver's doorbell; a receiver arms the
	// doorbell and then re-checks its inbox. Each side needs a fence
	// between its store and its load. Where the kernel has a global
	// membarrier, the receiver about to sleep runs it instead
	// (shm.GlobalBarrier), which fences every registered sender for it,
	// and senders publish without one: a locked instruction less per
	// message, for a 0.3 µs syscall per sleep.
	globalBarrier bool        // the kernel has it: run it before every sleep
	fenceSends    atomic.Bool // this rank must still fence (not registered yet, or asked to); a plain load on amd64
	cma           bool
	evacuate      bool   // move the ranks of a dead rank's CPU away during its teardown (evacuate.go)
	waitTID       uint32 // the thread noteWaiter last recorded
	waitsNoted    uint32 // waits that yielded or slept: every 64th notes its thread
	cmaKnown      bool   // a cross-process copy has worked: no more probes
	iov           [1]unix.Iovec
	riov          [1]unix.RemoteIovec
	pmaps         peerMaps // peers' AllocMem regions mapped here (peermem.go)

	sleepers atomic.Int32
	// kicks are the upper packages' queues of nonblocking work (coll's
	// nonblocking and persistent collectives) that have jobs and no
	// goroutine driving them (ext.NeedProgress). A rank that blocks, or
	// polls with a Test, calls them (kickIdle) so that the work
	// progresses while the rank is in another call, as MPI requires;
	// nkicks is their number, read without the lock.
	kickMu sync.Mutex
	kicks  []func() bool
	nkicks atomic.Int32
	// sleepTimeouts counts sleeps that ended by their timeout, rather than
	// a wake or a change, with what they waited for already there: a
	// wake-up some poster missed (ext.SleepTimeouts; tests check it
	// stays 0). A timeout with nothing there is a slow peer (a loaded
	// machine's), not counted.
	sleepTimeouts atomic.Uint64
	sleepTimeout  time.Duration // bound of every sleep (sleepTimeout)
	// want counts goroutines of this rank waiting for mu. A goroutine that
	// waits for a message keeps mu while it polls, and lets go when want
	// says someone else needs it.
	want   atomic.Int32
	bias   biasLock // the lock's fast path for one goroutine (biaslock.go)
	closed bool

	level     ThreadLevel
	serial    bool          // ThreadSerialized or below: no engine lock
	released  bool          // inbox slots or peers' chunks freed since the last relax
	starving  bool          // our starving flag is up
	fenceWord atomic.Uint32 // a private word for a full fence

	yieldBudget int // collective waits when oversubscribed: sched_yields before sleeping
	p2pYields   int // other waits when oversubscribed: sched_yields before sleeping (job.EnvP2PYields)
	preYields   int // yields the next blockOn's caller made already (collWait from C)
	sleepAtOnce int // if not 0, waits sleep without yielding first (ext.SleepAtOnce)
	pullSends   int // if not 0, new sends above pullMin go by rendezvous (ext.PullSends)

	killAt    int64  // fault injection: die at this entry into the engine (killinject.go)
	spawnKill string // fault injection: die at this point of a spawn (spawn.go)
	ports     *Comm  // the ports' communicator, made at the first use of a port (ports.go)
	connects  uint32 // Connect attempts of this rank, numbering its knocks (ports.go)
	calls     int64  // entries so far, counted only when killAt is set
	// proxy: the engine of a node agent's proxy (proxy.go). It forwards
	// what comes for a revoked communicator too: the receivers refuse it.
	proxy bool
	// proxyMarked: as a proxy, the ranks whose ProxyQueued this engine
	// counts in (proxyMark).
	proxyMarked []int
	// patientUntil: as an agent's engine, until when (nanoseconds since
	// procStart) a receive for a proxy leaves its copy to the sender
	// (leaveToSender); blockOn yields rather than sleeps until then.
	patientUntil int64

	// Last, so that the hot fields above keep their offsets.
	p2p  p2pState     // matched probes' messages and buffered mode (mprobe.go, bsend.go)
	tool toolCounters // the tool interface's counters of slow paths (toolseam.go)
}

// lock takes the engine lock, announcing itself to a holder that polls.
// At ThreadSerialized and below there is no lock: the caller promises
// one goroutine at a time.
func (e *engine) lock() {
	if e.killAt != 0 {
		e.countCall()
	}
	if !e.serial {
		e.lockMu()
	}
}

// relock takes the engine lock back inside a wait: not a new entry into
// the engine, so fault injection does not count it.
func (e *engine) relock() {
	if !e.serial {
		e.lockMu()
	}
}

func (e *engine) lockMu() {
	if e.lockBiased() {
		return
	}
	if !e.mu.TryLock() {
		e.want.Add(1)
		e.mu.Lock()
		e.want.Add(-1)
	}
	e.afterMutex()
}

func (e *engine) unlock() {
	if !e.serial && !e.unlockBiased() {
		e.mu.Unlock()
	}
}

// unlockFence unlocks and orders this rank's earlier stores before its
// later loads: a mutex unlock is a locked instruction, a full fence on
// amd64; without a lock, or with the biased one (biaslock.go), it is an
// explicit one.
func (e *engine) unlockFence() {
	if e.serial {
		e.fenceWord.Add(0)
	} else {
		e.unlockMu()
	}
}

//go:noinline
func (e *engine) unlockMu() {
	if e.unlockBiased() {
		e.fenceWord.Add(0)
		return
	}
	e.mu.Unlock()
}

func newEngine(seg *shm.Segment, me int) (*engine, error) {
	return newEngineWith(seg, me, true)
}

// asyncBarrier makes newEngine register for the global barrier on a
// goroutine, fencing its sends until that is done: the registration
// waits for an RCU grace period in a multi-threaded process (11-16 ms
// measured at a spawned rank's Init, 2026-11-26), which a spawn would
// wait for. Set for spawned ranks only, so that the first world's ranks
// come out of Init registered, as before.
var asyncBarrier bool

// newEngineWith builds the engine; without liveness it registers no
// robust futex and starts no watcher (for in-process benchmarks of two
// engines, which a process can hold only one liveness thread for).
func newEngineWith(seg *shm.Segment, me int, liveness bool) (*engine, error) {
	lay := job.LayoutOf(seg)
	if err := lay.Check(); err != nil {
		return nil, &Error{Class: ErrInit, Op: "Init", Rank: -1, Detail: err.Error()}
	}
	e := &engine{seg: seg, t: job.NewMap(seg), lay: lay, me: me, n: lay.Ranks}
	e.epoch = e.t.Epoch
	n := e.n
	e.prods = make([]*ring.Producer, n)
	e.dbs = make([]shm.Doorbell, n)
	e.pids = make([]int, n)
	ann := &e.t.CB(me).Announce
	for r := range n {
		p, _ := e.t.Inbox(r)
		rg := ring.New(p, lay.InboxSlots, r)
		e.prods[r] = rg.NewProducer(me, ann)
		e.dbs[r] = e.t.Doorbell(r)
		if r == me {
			e.inbox = ring.NewConsumer(rg)
		}
	}
	e.db = e.dbs[me]
	e.lastDest = -1
	e.doubles = lay.InboxSlots >= 4 // a double record may need 7 units
	e.csz = lay.ChunkSize
	e.eager = e.csz
	if v, err := strconv.Atoi(os.Getenv(job.EnvEagerMax)); err == nil && v >= 0 {
		e.eager = min(v, e.csz)
	}
	for i := lay.HSSlots - 1; i >= 0; i-- {
		e.hsFree = append(e.hsFree, i)
	}
	e.failed = make([]bool, n)
	e.final = make([]bool, n)
	e.gone = make([]bool, n)
	e.warm = make([]bool, n)
	e.sendq = make([]ilist[request], n)
	e.fragIn = make([]*fragIn, n)
	e.early = map[uint32]*ilist[umsg]{}
	e.comms = make([]*Comm, numCtxIDs)
	e.slotGen = make([]uint32, job.MaxContexts)
	e.drained = true

	// The first world's size, not the universe's: every process of the
	// segment must take the same decisions below (the sleep protocol),
	// and slots reserved for spawned ranks run nothing yet. In a world
	// that spans nodes, the ranks of this node and its agent, which polls
	// while messages cross (node.agent.idle); the other ranks' slots are
	// the agent's proxies.
	active := lay.LocalRanks()
	if lay.Local > 0 {
		active++
	}
	e.spin = active <= seg.Cores()
	if e.spin && !lay.Remote(me) {
		// Handles for the first nonblocking calls, populated now: until
		// the collector first runs (4 MiB allocated), every new handle
		// block is fresh memory, a page fault per 256 handles in the
		// calls themselves. 512 KiB a spinning rank (there are at most
		// as many as cores). osu_bw 1-8 B, 10 interleaved runs each
		// (2026-11-27): 6.13, 13.10, 26.54, 52.23 MB/s against 5.41,
		// 11.80, 22.02, 48.73 without (Open MPI 6.50, 12.14, 24.51,
		// 56.30); 16-64 B unchanged.
		e.handles = newHandles(spinHandles)
	}
	if (!e.spin || ext.CHost) && runtime.GOMAXPROCS(0) < 2 && os.Getenv("GOMAXPROCS") == "" {
		// A rank pinned to one CPU gets one P, and then its futex sleeps
		// are announced to the Go scheduler (shm's sleepSyscall), which
		// costs extra switches per sleep; oversubscribed ranks sleep on
		// nearly every wait. A second P lets the sleep be a raw syscall:
		// examples/ring at 64 ranks pinned in blocks on 2 CPUs took 20-23
		// µs a hop with one P and 10 µs with two (2026-11-25). Spinning
		// ranks keep one P: with two, the collector's workers share the
		// rank's CPU through the kernel's scheduler instead of the offers
		// (offerP), a collection's mark took 2-6 ms instead of 0.6, and
		// the 1-byte osu_mbw_mr rate over 20,000 windows fell from
		// 10.2-12.8 to 7.2-10.5 million messages/s (2026-11-26).
		//
		// A rank driven from C gets the second P even when it spins:
		// its C thread holds a P for as long as it is inside an MPI
		// call and never offers it (offerP), so with one P no other
		// goroutine runs while it waits. The liveness watcher, woken
		// by the kernel at a peer's death, found no P and slept again,
		// and the launcher declared the death at the dead process's
		// reap, ≈1 ms later (17 of 18 runs of 2 C ranks killed in an
		// allreduce loop, 2026-11-26).
		runtime.GOMAXPROCS(2)
	}
	e.oneP = runtime.GOMAXPROCS(0) < 2 && !ext.CHost
	// Oversubscribed collective waits yield before they sleep: every
	// member must run once per collective, and handing the CPU over
	// directly is cheaper than a sleep and a wake-up. The budget lets
	// every other rank sharing the core run about twice, and at least 16
	// times in all. osu_barrier, 2026-11-24, median µs of 3-5 runs,
	// yields before sleeping (ranks on 2 cores):
	//
	//	ranks   0     8     16    32    64
	//	8       41    14.4  8.9   9.5   10.1
	//	16      69    -     20    23    22
	//	64      277   134   -     88    82
	//
	// (Before the yields and futex wakes became raw syscalls and the
	// wake was skipped without sleepers, yields doubled the time at 64
	// ranks: the Go scheduler handed the P to another thread whenever a
	// yield switched away.)
	perCore := (active + max(seg.Cores(), 1) - 1) / max(seg.Cores(), 1)
	e.yieldBudget = max(16, 2*perCore)
	// Other waits (a receive, a WaitAll of sends and receives) yield a
	// few times too: the message they wait for often comes from a rank
	// that shares their core and is runnable. Same runs, 2 cores
	// (2026-11-26, yields 0 / 4 / 8): examples/ring's hop at 3 ranks
	// 14.6-15.1 / 2.0-3.0 / 1.2-1.4 µs, at 8 ranks 9.4-10.2 / 3.8-4.4 /
	// 3.6-4.0, at 16 ranks 8.9-9.5 / 5.2-6.9 / 6.5-7.7, at 64 ranks
	// 20.8-24.2 / 20.6-22.9 / 19.9-23.6; osu_multi_lat 8 B at 8 ranks
	// 9.7-15.2 / 3.6-4.2 / 3.6-4.1; halo's Isend/Irecv exchange at 8
	// ranks 32-39 / 8.5-10.3 / 8.8-11.8.
	e.p2pYields = 8
	if v, err := strconv.Atoi(os.Getenv(job.EnvP2PYields)); err == nil && v >= 0 {
		e.p2pYields = v
	}
	if v, err := strconv.Atoi(os.Getenv(job.EnvYields)); err == nil && v >= 0 {
		e.yieldBudget = v
	}
	e.sleepTimeout = sleepTimeout
	if v, err := strconv.Atoi(os.Getenv(job.EnvSleepTimeout)); err == nil && v > 0 {
		e.sleepTimeout = time.Duration(v) * time.Millisecond
	}
	e.spinTime = 20 * time.Microsecond
	if v := os.Getenv(job.EnvSpin); v != "" {
		us, err := strconv.Atoi(v)
		if err == nil {
			e.spin = e.spin && us > 0
			e.spinTime = time.Duration(us) * time.Microsecond
		}
	}
	// Only where ranks do not outnumber cores: there they seldom sleep.
	// Oversubscribed, they sleep on nearly every wait, and the barrier
	// would add its syscall to each. The condition is the same at every
	// rank of the job, as the protocol needs.
	// A rank that could not register (it never can where the kernel
	// lacks the barrier) fences its sends; sleepers run the barrier
	// wherever the kernel has it, for the ranks that did register.
	e.fenceSends.Store(true)
	if active <= seg.Cores() && shm.HaveGlobalBarrier() {
		e.globalBarrier = true
		if forced := os.Getenv(job.EnvFenceSends) == "1"; asyncBarrier && !forced {
			// Registered from the moment the call returns: every later
			// sleeper's barrier reaches this process, so its sends may
			// drop the fence from then on.
			go func() { e.fenceSends.Store(!shm.RegisterGlobalBarrier()) }()
		} else {
			e.fenceSends.Store(!shm.RegisterGlobalBarrier() || forced)
		}
	}
	e.cma = os.Getenv(job.EnvNoCMA) != "1"
	e.evacuate = os.Getenv(job.EnvEvacuate) != "0"
	if e.cma {
		// Hosts with Yama ptrace_scope=1 need this; elsewhere it is EINVAL.
		unix.Prctl(unix.PR_SET_PTRACER, unix.PR_SET_PTRACER_ANY, 0, 0, 0)
	}

	// Claim our entry: it must be unstarted (a second process claiming
	// the same rank, or a rank the launcher gave up on, is refused).
	t := e.t
	if st := t.State(me); st != job.StUnstarted {
		return nil, newErr(ErrInit, "Init", -1, "rank %d is already %s in this job", me, job.FateOf(seg, me).State)
	}
	t.CB(me).Pid.Store(uint32(os.Getpid()))
	t.CB(me).HomeCPU.Store(homeCPU())
	// Pre-fault what this rank writes and reads most: its control block,
	// inbox, handshake slots and chunks (a proxy's chunks excepted: see
	// job.Map.PopulateProxy).
	if lay.Remote(me) {
		t.PopulateProxy(me) // a node agent's proxy (proxy.go): not its chunks
	} else {
		t.Populate(me)
		t.PopulateFirstSlots(me)
	}
	if liveness {
		if err := shm.StartLiveness(t.LivenessList(me), e.watch); err != nil {
			return nil, newErr(ErrInit, "Init", -1, "robust futex: %v", err)
		}
	}
	if !t.CB(me).State.CompareAndSwap(job.StUnstarted, job.StAlive) {
		return nil, newErr(ErrInit, "Init", -1, "rank %d was declared %s during Init", me, job.FateOf(seg, me).State)
	}
	t.Bump()
	e.refresh()
	return e, nil
}

func (e *engine) pid(r int) int {
	if e.pids[r] == 0 {
		e.pids[r] = int(e.t.CB(r).Pid.Load())
	}
	return e.pids[r]
}
