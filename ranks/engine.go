package ranks

import (
	"math/bits"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"shmpi/internal/spin"
	"shmpi/ring"
	"shmpi/shm"
)

// sleepTimeout bounds every futex sleep, so that a rank re-checks the
// liveness words itself even if no watcher and no launcher woke it.
const sleepTimeout = 100 * time.Millisecond

// drainBudget bounds how many inbox messages one progress call handles.
const drainBudget = 64

// engine is one rank's communication state. Everything in it is guarded
// by mu, except the atomics.
type engine struct {
	mu  sync.Mutex
	seg *shm.Segment
	t   *table
	lay Layout
	me  int
	n   int

	prods []*ring.Producer // our producer handle on every rank's inbox
	inbox *ring.Consumer   // ours
	dbs   []shm.Doorbell   // doorbell of every rank
	db    shm.Doorbell     // ours
	pids  []int            // process id of every rank, read lazily
	hs0   uint64           // offset of the handshake area
	hsRk  uint64           // handshake bytes per rank
	cst0  uint64           // offset of the chunk-state area
	cstRk uint64           // chunk-state bytes per rank
	cd0   uint64           // offset of the chunk-data area
	cdRk  uint64           // chunk-data bytes per rank
	csz   int              // chunk size
	eager int              // largest message sent through a chunk

	hsFree    []int // our free handshake slots
	chunkHint int

	epoch       *atomic.Uint64 // the shared change epoch
	seenEpoch   uint64
	failed      []bool // failed ranks known here
	final       []bool // finalized ranks known here
	gone        []bool // failed or finalized
	warm        []bool // peers whose chunks are pre-faulted here
	failedOrder []int  // world ranks in the order this rank learned of their failure
	needEval    bool   // a peer ended: pending operations must be re-judged
	drained     bool   // the last drain emptied the inbox

	comms []*Comm
	early map[uint32]*umsgList // messages for communicators not created here yet

	sendq   []reqList  // per destination: sends waiting for ring space, in order
	queued  []int      // destinations with a non-empty sendq
	active  reqList    // transfers waiting on a handshake or a pipelined copy
	reqFree []*request // internal requests of blocking calls, reused
	slab    []request  // where nonblocking requests come from
	nbFree  []*request // nonblocking requests whose handles were freed
	handles []Request  // where handles come from
	umFree  []*umsg

	// The fallback protocols of fallback.go.
	fragIn  []*fragIn           // per source: the fragmented message arriving
	ackWait map[uint32]*request // synchronous sends waiting for a kAck, by id
	ackID   uint32              // the last ack id handed out
	ackq    []ackOut            // kAcks waiting for room in the sender's inbox

	spin     bool
	spinTime time.Duration
	cma      bool
	cmaKnown bool // a cross-process copy has worked: no more probes
	iov      [1]unix.Iovec
	riov     [1]unix.RemoteIovec

	sleepers atomic.Int32
	// want counts goroutines of this rank waiting for mu. A goroutine that
	// waits for a message keeps mu while it polls, and lets go when want
	// says someone else needs it.
	want   atomic.Int32
	closed bool

	level     ThreadLevel
	serial    bool          // ThreadSerialized or below: no engine lock
	released  bool          // inbox slots or peers' chunks freed since the last relax
	starving  bool          // our starving flag is up
	fenceWord atomic.Uint32 // a private word for a full fence
}

// lock takes the engine lock, announcing itself to a holder that polls.
// At ThreadSerialized and below there is no lock: the caller promises
// one goroutine at a time.
func (e *engine) lock() {
	if !e.serial {
		e.lockMu()
	}
}

func (e *engine) lockMu() {
	if !e.mu.TryLock() {
		e.want.Add(1)
		e.mu.Lock()
		e.want.Add(-1)
	}
}

func (e *engine) unlock() {
	if !e.serial {
		e.mu.Unlock()
	}
}

// unlockFence unlocks and orders this rank's earlier stores before its
// later loads: an unlock is a locked instruction, a full fence on amd64;
// without a lock it is an explicit one.
func (e *engine) unlockFence() {
	if e.serial {
		e.fenceWord.Add(0)
	} else {
		e.unlockMu()
	}
}

//go:noinline
func (e *engine) unlockMu() { e.mu.Unlock() }

func newEngine(seg *shm.Segment, me int) (*engine, error) {
	return newEngineWith(seg, me, true)
}

// newEngineWith builds the engine; without liveness it registers no
// robust futex and starts no watcher (for in-process benchmarks of two
// engines, which a process can hold only one liveness thread for).
func newEngineWith(seg *shm.Segment, me int, liveness bool) (*engine, error) {
	lay := SegmentLayout(seg)
	if err := lay.check(); err != nil {
		return nil, &Error{Class: ErrInit, Op: "Init", Rank: -1, Detail: err.Error()}
	}
	e := &engine{seg: seg, t: newTable(seg), lay: lay, me: me, n: lay.Ranks}
	e.epoch = e.t.epoch
	n := e.n
	e.prods = make([]*ring.Producer, n)
	e.dbs = make([]shm.Doorbell, n)
	e.pids = make([]int, n)
	in := seg.Area(areaInbox)
	ann := e.t.ctl64(me, offAnnounce)
	for r := range n {
		rg := ring.New(seg.Ptr(in.Off+uint64(r)*in.Stride), lay.InboxSlots, r)
		e.prods[r] = rg.NewProducer(me, ann)
		e.dbs[r] = e.t.doorbell(r)
		if r == me {
			e.inbox = ring.NewConsumer(rg)
		}
	}
	e.db = e.dbs[me]
	hs := seg.Area(areaHS)
	e.hs0, e.hsRk = hs.Off, hs.Stride
	cst := seg.Area(areaChunkState)
	e.cst0, e.cstRk = cst.Off, cst.Stride
	cd := seg.Area(areaChunks)
	e.cd0, e.cdRk = cd.Off, cd.Stride
	e.csz = lay.ChunkSize
	e.eager = e.csz
	if v, err := strconv.Atoi(os.Getenv(EnvEagerMax)); err == nil && v >= 0 {
		e.eager = min(v, e.csz)
	}
	for i := lay.HSSlots - 1; i >= 0; i-- {
		e.hsFree = append(e.hsFree, i)
	}
	e.failed = make([]bool, n)
	e.final = make([]bool, n)
	e.gone = make([]bool, n)
	e.warm = make([]bool, n)
	e.sendq = make([]reqList, n)
	e.fragIn = make([]*fragIn, n)
	e.early = map[uint32]*umsgList{}
	e.drained = true

	e.spin = n <= seg.Cores()
	e.spinTime = 20 * time.Microsecond
	if v := os.Getenv(EnvSpin); v != "" {
		us, err := strconv.Atoi(v)
		if err == nil {
			e.spin = e.spin && us > 0
			e.spinTime = time.Duration(us) * time.Microsecond
		}
	}
	e.cma = os.Getenv(EnvNoCMA) != "1"
	if e.cma {
		// Hosts with Yama ptrace_scope=1 need this; elsewhere it is EINVAL.
		unix.Prctl(unix.PR_SET_PTRACER, unix.PR_SET_PTRACER_ANY, 0, 0, 0)
	}

	// Claim our entry: it must be unstarted (a second process claiming
	// the same rank, or a rank the launcher gave up on, is refused).
	t := e.t
	if st := t.state(me); st != stUnstarted {
		return nil, newErr(ErrInit, "Init", -1, "rank %d is already %s in this job", me, FateOf(seg, me).State)
	}
	t.ctl(me, offPid).Store(uint32(os.Getpid()))
	// Pre-fault what this rank writes and reads most: its control block,
	// inbox, handshake slots and chunks.
	seg.Populate(t.ctl0+uint64(me)*ctlStride, ctlStride)
	seg.Populate(in.Off+uint64(me)*in.Stride, int(in.Stride))
	seg.Populate(e.hs0+uint64(me)*e.hsRk, int(e.hsRk))
	seg.Populate(e.cst0+uint64(me)*e.cstRk, int(e.cstRk))
	seg.Populate(e.cd0+uint64(me)*e.cdRk, int(e.cdRk))
	if liveness {
		if err := shm.StartLiveness(t.livenessList(me), e.watch); err != nil {
			return nil, newErr(ErrInit, "Init", -1, "robust futex: %v", err)
		}
	}
	if !t.ctl(me, offState).CompareAndSwap(stUnstarted, stAlive) {
		return nil, newErr(ErrInit, "Init", -1, "rank %d was declared %s during Init", me, FateOf(seg, me).State)
	}
	t.bump()
	e.refresh()
	return e, nil
}

// ---- shared-memory addresses ----

func (e *engine) hsPtr(r, k int) unsafe.Pointer {
	return e.seg.Ptr(e.hs0 + uint64(r)*e.hsRk + uint64(k)*hsStride)
}

func hsU32(p unsafe.Pointer, off uintptr) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Add(p, off)) }
func hsU64(p unsafe.Pointer, off uintptr) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Add(p, off)) }

func (e *engine) chunkState(r, k int) *atomic.Uint64 {
	return e.seg.U64(e.cst0 + uint64(r)*e.cstRk + uint64(k)*8)
}

// release consumes the inbox's head slot.
func (e *engine) release() {
	e.inbox.Release()
	e.released = true
}

// freeChunk gives chunk k back to its owner r once its data is read. A
// release store: the reads of the data cannot pass it.
func (e *engine) freeChunk(r, k int) {
	spin.StoreRelease64((*uint64)(unsafe.Pointer(e.chunkState(r, k))), 0)
	e.released = true
}

// warmChunks pre-faults rank r's chunks in this process the first time a
// chunk message from r arrives: otherwise each of their pages costs a
// fault (≈10 µs) on first read, for the first messages of every size.
func (e *engine) warmChunks(r int) {
	if !e.warm[r] {
		e.warm[r] = true
		e.seg.PopulateRead(e.cd0+uint64(r)*e.cdRk, int(e.cdRk))
	}
}

func (e *engine) chunkPtr(r, k int) unsafe.Pointer {
	return e.seg.Ptr(e.cd0 + uint64(r)*e.cdRk + uint64(k)*uint64(e.csz))
}

func (e *engine) pid(r int) int {
	if e.pids[r] == 0 {
		e.pids[r] = int(e.t.ctl(r, offPid).Load())
	}
	return e.pids[r]
}

// copySmall copies n <= inlineMax bytes without a call: whole words, then
// the tail bytes. It touches exactly n bytes of dst and of src, so either
// may be a user's buffer ending at a page boundary.
func copySmall(dst, src unsafe.Pointer, n int) {
	i := 0
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Add(dst, i)) = *(*uint64)(unsafe.Add(src, i))
	}
	for ; i < n; i++ {
		*(*byte)(unsafe.Add(dst, i)) = *(*byte)(unsafe.Add(src, i))
	}
}

func memmove(dst, src unsafe.Pointer, n int) {
	if n > 0 {
		copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
	}
}

// ---- failure knowledge ----

// refresh brings this rank's view of the failure table up to date. It is
// one load when nothing changed.
func (e *engine) refresh() {
	if ep := e.epoch.Load(); ep != e.seenEpoch {
		e.sweep(ep)
	}
}

func (e *engine) sweep(ep uint64) {
	e.seenEpoch = ep
	for r := range e.n {
		switch e.t.state(r) {
		case stFailed:
			if !e.failed[r] {
				e.failed[r], e.gone[r] = true, true
				e.failedOrder = append(e.failedOrder, r)
				e.needEval = true
			}
		case stFinalized:
			if !e.final[r] && r != e.me {
				e.final[r], e.gone[r] = true, true
				e.needEval = true
			}
		}
	}
}

// claimerDead reports whether the producer that claimed our inbox's head
// position died before publishing it: every rank announcing that
// position is dead. It reads every rank's announcement, so it runs only
// when a claimed slot stays unpublished and some rank has failed.
func (e *engine) claimerDead() bool {
	for q := range e.n {
		if e.inbox.Announced(e.t.ctl64(q, offAnnounce).Load()) && !e.rankDead(q) {
			return false
		}
	}
	_, _, published := e.inbox.Peek() // it may have been published meanwhile
	return !published
}

// rankDead reads rank q's fate from the shared table and its liveness
// word, declaring the failure if the kernel marked it.
func (e *engine) rankDead(q int) bool {
	if e.t.state(q) == stFailed {
		return true
	}
	if shm.Dead(e.t.liveness(q).Word.Load()) {
		e.t.declareFailed(q, causeRobust, e.me)
		return true
	}
	return false
}

// goneErr is the error for an operation whose peer (world rank w) ended.
func (e *engine) goneErr(c *Comm, w int, op string) error {
	cr := -1
	if c != nil {
		cr = int(c.toComm[w])
	}
	if e.failed[w] {
		err := &Error{Class: ErrProcFailed, Op: op, Rank: cr}
		if c != nil {
			err.Failed = c.failedRanks(len(e.failedOrder))
		}
		return err
	}
	return newErr(ErrPeerFinalized, op, cr, "")
}

// ---- completion and waiting ----

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
		e.recycle(r) // nobody holds a handle: callers touch r no more
	}
}

// block runs the progress engine until pred holds. It is called and
// returns with e.mu held, and releases it while spinning or sleeping so
// other goroutines of the rank can run. pred is evaluated under e.mu.
// op, peer, tag and ctx describe the wait for deadline reports; wpeer is
// the world rank it depends on alone, or -1.
func (e *engine) block(pred func() bool, op opCode, peer, tag int, ctx uint32, wpeer int) {
	e.progress()
	if pred() {
		return
	}
	recorded := false
	spinning := e.spin
	var start time.Time
	for iter := 0; ; iter++ {
		if spinning {
			if iter&255 == 0 {
				if iter == 0 {
					start = time.Now()
				} else if time.Since(start) > e.spinTime {
					spinning = false
				}
			}
			switch {
			case e.want.Load() != 0:
				// Another goroutine of this rank needs the engine.
				e.relax()
				e.unlock()
				runtime.Gosched()
				e.lock()
			case e.active.n > 0 || len(e.queued) > 0 || len(e.ackq) > 0:
				// Transfers in flight need the whole engine.
				spin.Pause()
			default:
				// Only a message or a change of the failure table can end
				// this wait: poll for them with plain loads.
				e.relax() // idle: hand consumed slots back now
				seen := e.seenEpoch
				for k := 0; k < 64 && !e.inbox.Ready() && e.epoch.Load() == seen && e.want.Load() == 0; k++ {
					spin.Pause()
				}
			}
		} else {
			if !recorded {
				e.recordOp(op, peer, tag, ctx)
				recorded = true
			}
			tok := e.db.Arm()
			e.sleepers.Add(1)
			// Sends that wait for room: ask receivers to wake us when
			// they free some (set before the re-check in progress).
			e.setStarving(len(e.queued) > 0 || len(e.ackq) > 0)
			e.progress()
			if pred() {
				e.sleepers.Add(-1)
				break
			}
			e.relax()
			e.unlock()
			t0 := time.Now()
			if e.spin && wpeer >= 0 && wpeer != e.me {
				// Waiting for one peer: sleep on its direct liveness word
				// too, so that its death wakes us without a watcher. Not
				// when ranks outnumber cores: they sleep on every wait,
				// and the second word made each hop of a 64-rank ring on
				// 2 cores ≈7% slower.
				dw := &e.t.direct(wpeer, e.me).Word
				if v := dw.Load(); !shm.Dead(v) {
					e.db.SleepOr(tok, dw, v, sleepTimeout)
				}
				if shm.Dead(dw.Load()) {
					e.t.declareFailed(wpeer, causeDirect, e.me)
				}
			} else {
				e.db.Sleep(tok, sleepTimeout)
			}
			if time.Since(t0) >= sleepTimeout {
				// Nobody woke us for a long time: check the liveness
				// words ourselves rather than trust that a watcher did.
				e.t.checkLiveness(e.me)
			}
			e.sleepers.Add(-1)
			e.lock()
		}
		e.progress()
		if pred() {
			break
		}
	}
	if recorded {
		e.t.ctl(e.me, offOp).Store(uint32(op))
	}
	e.setStarving(false)
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
	if e.t.starving.Load() == 0 {
		return
	}
	for q := range e.n {
		if q != e.me && e.t.ctl(q, offStarve).Load() != 0 {
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
		e.t.ctl(e.me, offStarve).Store(1)
		e.t.starving.Add(1)
	} else {
		e.t.ctl(e.me, offStarve).Store(0)
		e.t.starving.Add(^uint32(0))
	}
}

// recordOp publishes what this rank is blocked in, for deadline reports.
func (e *engine) recordOp(op opCode, peer, tag int, ctx uint32) {
	t := e.t
	t.ctl(e.me, offOp).Store(uint32(op) | 1<<31)
	t.ctl(e.me, offOpPeer).Store(uint32(int32(peer)))
	t.ctl(e.me, offOpTag).Store(uint32(int32(tag)))
	t.ctl(e.me, offOpCtx).Store(ctx)
	t.ctl64(e.me, offOpSince).Store(uint64(time.Now().UnixNano()))
	t.ctl64(e.me, offOpCount).Add(1)
}

// ---- progress ----

// progress advances everything this rank can advance without waiting.
func (e *engine) progress() {
	if ep := e.epoch.Load(); ep != e.seenEpoch {
		e.sweep(ep)
	}
	e.drained = e.drain(drainBudget)
	if len(e.ackq) > 0 {
		e.flushAcks()
	}
	if len(e.queued) > 0 {
		e.flushQueues()
	}
	if e.active.n > 0 {
		e.advance()
	}
	if e.needEval && e.drained {
		e.evaluate()
	}
	if e.released && e.drained && e.t.starving.Load() != 0 {
		e.relax()
	}
}

// drain handles up to budget inbox messages. It reports whether the inbox
// is empty (not merely blocked behind a slot a live producer is writing).
func (e *engine) drain(budget int) bool {
	for range budget {
		prod, p, ok := e.inbox.Peek()
		if !ok {
			// A claimed slot that stays unpublished is a producer still
			// writing it, or one that died: only then is it worth a look.
			// needEval: before judging operations on an ended peer, make
			// sure no earlier message hides behind a slot being written.
			if (len(e.failedOrder) > 0 || e.needEval) && e.inbox.Claimed() {
				if len(e.failedOrder) > 0 && e.claimerDead() {
					e.inbox.Skip()
					continue
				}
				return false
			}
			return true
		}
		e.handle(int(prod), p)
	}
	return false
}

// handle processes the message descriptor at p, from world rank src, and
// releases its slot.
func (e *engine) handle(src int, p unsafe.Pointer) {
	ctx := *(*uint32)(unsafe.Add(p, dCtx))
	tag := int(*(*int32)(unsafe.Add(p, dTag)))
	kind := *(*uint8)(unsafe.Add(p, dKind))
	flags := *(*uint8)(unsafe.Add(p, dFlags))
	hs := int(*(*uint16)(unsafe.Add(p, dHS)))
	ln := int(*(*uint32)(unsafe.Add(p, dLen)))
	gen := *(*uint32)(unsafe.Add(p, dGen))
	data := unsafe.Add(p, dData)
	switch kind {
	case kFrag:
		e.handleFrag(src, ctx, tag, flags, gen, data, ln)
		return
	case kAck:
		e.release()
		e.handleAck(src, gen)
		return
	}
	var aux uint64 // chunk index or rendezvous length
	switch kind {
	case kChunk:
		aux = uint64(*(*uint32)(data))
		e.warmChunks(src)
	case kRndv:
		aux = *(*uint64)(data)
	}

	c := e.comm(ctx)
	var r *request
	if c != nil {
		r = c.matchPosted(src, tag)
	}
	if r == nil {
		m := e.newUmsg(src, tag, kind, flags, hs, gen)
		switch kind {
		case kInline:
			m.setData(data, ln)
			e.release()
		case kChunk:
			e.release()
			m.setData(e.chunkPtr(src, int(aux)), ln)
			e.freeChunk(src, int(aux))
		case kRndv:
			e.release()
			m.n = int(aux)
		}
		if c != nil {
			c.unexp.push(m)
		} else {
			e.earlyPush(ctx, m)
		}
		return
	}
	switch kind {
	case kInline:
		e.deliver(r, src, tag, data, ln)
		e.release()
	case kChunk:
		e.release()
		e.deliver(r, src, tag, e.chunkPtr(src, int(aux)), ln)
		e.freeChunk(src, int(aux))
	case kRndv:
		e.release()
		e.rndvRecv(r, src, tag, hs, gen, int(aux))
		return
	}
	e.acknowledge(src, flags, hs, gen)
}

// acknowledge tells the sender (world rank src) of a synchronous message
// that it matched, the way its flags say.
func (e *engine) acknowledge(src int, flags uint8, hs int, gen uint32) {
	switch {
	case flags&fSync != 0:
		e.ack(src, hs, gen)
	case flags&fAckMsg != 0:
		e.sendAck(src, gen)
	}
}

// comm is this rank's communicator with context id ctx, or nil.
func (e *engine) comm(ctx uint32) *Comm {
	if int(ctx) < len(e.comms) {
		return e.comms[ctx]
	}
	return nil
}

// earlyPush keeps a message for a communicator not created here yet.
func (e *engine) earlyPush(ctx uint32, m *umsg) {
	l := e.early[ctx]
	if l == nil {
		l = &umsgList{}
		e.early[ctx] = l
	}
	l.push(m)
}

// matchPosted finds, removes and returns the first posted receive that a
// message from world rank src with tag matches.
func (c *Comm) matchPosted(src, tag int) *request {
	for r := c.posted.head; r != nil; r = r.next {
		if (r.wpeer == src || r.anySrc) && (r.tag == tag || r.tag == AnyTag) {
			c.posted.remove(r)
			return r
		}
	}
	return nil
}

// deliver copies a message into receive r and completes it.
func (e *engine) deliver(r *request, src, tag int, data unsafe.Pointer, n int) {
	m := min(n, r.nbytes)
	memmove(r.buf, data, m)
	e.setRecvStatus(r, src, tag, m)
	var err error
	if n > r.nbytes {
		err = truncErr(r.op, r.st.Source, n, r.nbytes)
	}
	e.complete(r, err)
}

func (e *engine) setRecvStatus(r *request, src, tag, m int) {
	r.st.Source = int(r.c.toComm[src])
	r.st.Tag = tag
	r.st.Bytes = m
	r.st.Count = elems(m, r.esize)
}

// ack tells the sender (world rank src) that its synchronous message
// through handshake slot hs matched.
func (e *engine) ack(src, hs int, gen uint32) {
	p := e.hsPtr(src, hs)
	if hsU32(p, hsGen).Load() == gen {
		hsU32(p, hsState).Store(hsDone)
		e.dbs[src].Ring()
	}
}

// ---- starting operations ----

func (e *engine) start(r *request) {
	if r.send {
		e.startSend(r)
	} else {
		e.startRecv(r)
	}
}

func (e *engine) startRecv(r *request) {
	c := r.c
	if r.peer == ProcNull {
		r.st = Status{Source: ProcNull, Tag: AnyTag}
		e.complete(r, nil)
		return
	}
	e.refresh()
	if m := c.matchUnexp(r.wpeer, r.tag, r.anySrc); m != nil {
		c.unexp.remove(m)
		e.consume(r, m)
		return
	}
	c.posted.push(r)
	if !r.anySrc && e.gone[r.wpeer] {
		e.needEval = true
	}
}

// consume satisfies receive r with unexpected message m.
func (e *engine) consume(r *request, m *umsg) {
	switch m.kind {
	case kRndv:
		e.rndvRecv(r, m.src, m.tag, m.hs, m.gen, m.n)
	default:
		e.deliver(r, m.src, m.tag, unsafe.Pointer(unsafe.SliceData(m.data)), m.n)
		e.acknowledge(m.src, m.flags, m.hs, m.gen)
		if m.sender != nil {
			e.complete(m.sender, nil)
		}
	}
	e.putUmsg(m)
}

func (e *engine) startSend(r *request) {
	if r.peer == ProcNull {
		e.complete(r, nil)
		return
	}
	w := r.wpeer
	if w == e.me {
		e.sendSelf(r)
		return
	}
	e.refresh()
	if e.gone[w] {
		e.complete(r, e.goneErr(r.c, w, r.op))
		return
	}
	if e.sendq[w].n > 0 || !e.trySend(r) {
		if e.sendq[w].n == 0 {
			e.queued = append(e.queued, w)
		}
		e.sendq[w].push(r)
	}
}

// sendSelf delivers a message to this rank itself, buffering it if no
// receive is posted; a synchronous one completes when it matches.
func (e *engine) sendSelf(r *request) {
	c := r.c
	if rr := c.matchPosted(e.me, r.tag); rr != nil {
		e.deliver(rr, e.me, r.tag, r.buf, r.nbytes)
		e.complete(r, nil)
		return
	}
	m := e.newUmsg(e.me, r.tag, kInline, 0, 0, 0)
	m.setData(r.buf, r.nbytes)
	if r.sync {
		m.sender = r
	} else {
		e.complete(r, nil)
	}
	c.unexp.push(m)
}

// trySend posts r to its destination's inbox. It reports false if it must
// wait: the ring is full, or no chunk or handshake slot is free.
func (e *engine) trySend(r *request) bool {
	if r.frag {
		return e.sendFrags(r) // a fragmented send under way
	}
	w := r.wpeer
	n := r.nbytes
	var kind uint8
	switch {
	case n <= inlineMax:
		kind = kInline
	case n <= e.eager:
		kind = kChunk
		if r.chunk < 0 {
			k := e.allocChunk(w)
			if k < 0 {
				return false
			}
			memmove(e.chunkPtr(e.me, k), r.buf, n)
			r.chunk = k
		}
	default:
		kind = kRndv
	}
	hs := -1
	var gen uint32
	ackMsg := false
	if r.sync || kind == kRndv {
		if hs = e.allocHS(); hs < 0 {
			// Every handshake slot is held by messages not yet matched
			// (or being copied). MPI's progress rule says this message
			// must still reach the receiver: send it by a protocol that
			// needs no slot (fallback.go).
			if r.sync {
				gen = e.newAckID()
			}
			if kind == kRndv {
				r.frag, r.gen = true, gen
				return e.sendFrags(r)
			}
			ackMsg = true
		}
	}
	if hs >= 0 {
		p := e.hsPtr(e.me, hs)
		gen = hsU32(p, hsGen).Add(1)
		hsU32(p, hsDest).Store(uint32(w))
		if kind == kRndv {
			hsU64(p, hsAddr).Store(uint64(uintptr(r.buf)))
			hsU64(p, hsLength).Store(uint64(n))
			hsU64(p, hsAccept).Store(0)
			hsU32(p, hsPipeTail).Store(0)
			hsU32(p, hsPipeHead).Store(0)
		}
		hsU32(p, hsState).Store(hsPosted)
	}
	cl, ok := e.prods[w].TryClaim()
	if !ok {
		if hs >= 0 {
			e.freeHS(hs)
		}
		return false
	}
	d := cl.Payload()
	var flags uint8
	switch {
	case ackMsg:
		flags = fAckMsg
	case r.sync && kind != kRndv:
		flags = fSync
	}
	writeDesc(d, r.c.ctx, r.tag, kind, flags, max(hs, 0), gen)
	switch kind {
	case kInline:
		*(*uint32)(unsafe.Add(d, dLen)) = uint32(n)
		memmove(unsafe.Add(d, dData), r.buf, n)
	case kChunk:
		*(*uint32)(unsafe.Add(d, dLen)) = uint32(n)
		*(*uint32)(unsafe.Add(d, dData)) = uint32(r.chunk)
		r.chunk = -1 // the receiver frees it
	case kRndv:
		*(*uint32)(unsafe.Add(d, dLen)) = 0
		*(*uint64)(unsafe.Add(d, dData)) = uint64(n)
		// The receiver reads our buffer in place: keep it where it is.
		r.pin.Pin(r.buf)
		r.pinned = true
	}
	cl.PublishFence()
	e.dbs[w].Ring()
	switch {
	case hs >= 0:
		r.hs, r.gen = hs, gen
		e.active.push(r)
	case ackMsg:
		e.awaitAck(r, gen)
	default:
		e.complete(r, nil)
	}
	return true
}

// writeDesc fills a descriptor's header.
func writeDesc(d unsafe.Pointer, ctx uint32, tag int, kind, flags uint8, hs int, gen uint32) {
	*(*uint32)(unsafe.Add(d, dCtx)) = ctx
	*(*int32)(unsafe.Add(d, dTag)) = int32(tag)
	*(*uint8)(unsafe.Add(d, dKind)) = kind
	*(*uint8)(unsafe.Add(d, dFlags)) = flags
	*(*uint16)(unsafe.Add(d, dHS)) = uint16(hs)
	*(*uint32)(unsafe.Add(d, dGen)) = gen
}

// recvFast is the fast path of a blocking receive when nothing else is
// pending on this rank: it polls the inbox itself and copies a matching
// eager message (inline or chunk) straight into the caller's buffer. It
// reports false, consuming nothing, as soon as anything else needs the
// general path: another message, a change of the failure table, another
// goroutine, or the end of its short spin.
func (e *engine) recvFast(c *Comm, p unsafe.Pointer, n, esize, src, tag int, st *Status) bool {
	w := -1
	if src >= 0 {
		w = c.group[src]
	}
	limit := 0
	if e.spin {
		limit = 1024
	}
	for i := 0; ; i++ {
		prod, d, ok := e.inbox.Peek()
		if !ok {
			if i >= limit || e.want.Load() != 0 || e.epoch.Load() != e.seenEpoch {
				return false
			}
			// PAUSE spares the pipeline flush that leaving a tight load
			// loop costs when the line changes (measured: ≈12 ns faster).
			spin.Pause()
			continue
		}
		kind := *(*uint8)(unsafe.Add(d, dKind))
		mtag := int(*(*int32)(unsafe.Add(d, dTag)))
		if *(*uint32)(unsafe.Add(d, dCtx)) != c.ctx || *(*uint8)(unsafe.Add(d, dFlags)) != 0 ||
			(kind != kInline && kind != kChunk) || (w >= 0 && int(prod) != w) || (tag != AnyTag && mtag != tag) {
			return false
		}
		ln := int(*(*uint32)(unsafe.Add(d, dLen)))
		m := min(ln, n)
		if kind == kInline {
			copySmall(p, unsafe.Add(d, dData), m)
			e.release()
		} else {
			k := int(*(*uint32)(unsafe.Add(d, dData)))
			e.release()
			e.warmChunks(int(prod))
			memmove(p, e.chunkPtr(int(prod), k), m)
			e.freeChunk(int(prod), k)
		}
		st.Source, st.Tag, st.Bytes, st.Count = int(c.toComm[prod]), mtag, m, elems(m, esize)
		if ln > n {
			st.Err = truncErr("Recv", st.Source, ln, n)
		}
		if e.t.starving.Load() != 0 {
			e.relax() // a sender sleeps waiting for room we may have made
		}
		return true
	}
}

//go:noinline
func truncErr(op string, rank, msg, buf int) error {
	return newErr(ErrTruncate, op, rank, "message of %d bytes, buffer of %d", msg, buf)
}

// elems converts bytes to elements of esize bytes (Undefined if not
// whole). Element sizes are nearly always powers of two: shift, do not
// divide (a 64-bit division costs tens of cycles).
func elems(m, esize int) int {
	if esize&(esize-1) == 0 && esize > 0 {
		if m&(esize-1) != 0 {
			return Undefined
		}
		return m >> bits.TrailingZeros(uint(esize))
	}
	if esize <= 0 || m%esize != 0 {
		return Undefined
	}
	return m / esize
}

// quiet reports whether nothing but c's next message can concern a
// blocking receive on c: the condition for recvFast.
func (e *engine) quiet(c *Comm) bool {
	return c.unexp.n == 0 && c.posted.n == 0 && e.active.n == 0 && len(e.queued) == 0 && len(e.ackq) == 0 &&
		!e.needEval && e.epoch.Load() == e.seenEpoch
}

// sendInline is the fast path of a small standard-mode send: no request,
// straight into the destination's inbox. It reports false if the send
// must take the general path.
func (e *engine) sendInline(c *Comm, w int, p unsafe.Pointer, n, tag int) bool {
	if w == e.me || e.sendq[w].n != 0 || e.epoch.Load() != e.seenEpoch || e.gone[w] {
		return false
	}
	pr := e.prods[w]
	cl, ok := pr.TryClaimFast()
	if !ok {
		if cl, ok = pr.TryClaim(); !ok {
			return false
		}
	}
	d := cl.Payload()
	writeDesc(d, c.ctx, tag, kInline, 0, 0, 0)
	*(*uint32)(unsafe.Add(d, dLen)) = uint32(n)
	copySmall(unsafe.Add(d, dData), p, n)
	// A plain store: the caller's unlock is the fence that must come
	// between it and the doorbell check (ringAfterUnlock).
	cl.Publish()
	return true
}

// flushQueues retries sends that waited for ring space, in order.
func (e *engine) flushQueues() {
	q := e.queued[:0]
	for _, w := range e.queued {
		l := &e.sendq[w]
		for l.head != nil {
			r := l.head
			if e.gone[w] {
				l.remove(r)
				e.dropSend(r, e.goneErr(r.c, w, r.op))
				continue
			}
			if !e.trySend2(r, l) {
				break
			}
		}
		if l.n > 0 {
			q = append(q, w)
		}
	}
	e.queued = q
}

// trySend2 takes r off queue l if trySend posts it.
func (e *engine) trySend2(r *request, l *reqList) bool {
	l.remove(r)
	if e.trySend(r) {
		return true
	}
	// Put it back at the head: order per destination must hold.
	r.list = l
	r.prev = nil
	r.next = l.head
	if l.head != nil {
		l.head.prev = r
	} else {
		l.tail = r
	}
	l.head = r
	l.n++
	return false
}

// dropSend completes a send that will never be delivered.
func (e *engine) dropSend(r *request, err error) {
	if r.chunk >= 0 {
		e.chunkState(e.me, r.chunk).Store(0)
		r.chunk = -1
	}
	if r.hs >= 0 {
		e.freeHS(r.hs)
		r.hs = -1
	}
	e.complete(r, err)
}

// ---- eager chunks and handshake slots ----

// allocChunk takes one of our chunks for a message to world rank dest.
func (e *engine) allocChunk(dest int) int {
	cc := e.lay.ChunkCount
	for pass := 0; pass < 2; pass++ {
		for i := range cc {
			k := (e.chunkHint + i) % cc
			s := e.chunkState(e.me, k)
			if s.Load() == 0 {
				s.Store(uint64(dest) + 1)
				e.chunkHint = k + 1
				return k
			}
		}
		// Reclaim chunks held by messages to ranks that have ended.
		for k := range cc {
			s := e.chunkState(e.me, k)
			if v := s.Load(); v != 0 && e.gone[int(v-1)] {
				s.Store(0)
			}
		}
	}
	return -1
}

func (e *engine) allocHS() int {
	n := len(e.hsFree)
	if n == 0 {
		return -1
	}
	k := e.hsFree[n-1]
	e.hsFree = e.hsFree[:n-1]
	return k
}

func (e *engine) freeHS(k int) {
	hsU32(e.hsPtr(e.me, k), hsState).Store(hsFree)
	e.hsFree = append(e.hsFree, k)
}

// ---- judging pending operations after a peer ended ----

// evaluate completes, with errors, the operations that can no longer
// complete because a peer failed or finalized. It runs only after a drain
// that emptied the inbox, so every message a dead peer published first
// has been delivered.
func (e *engine) evaluate() {
	e.needEval = false
	for _, c := range e.comms {
		if c == nil {
			continue
		}
		for r := c.posted.head; r != nil; {
			next := r.next
			switch {
			case !r.anySrc && e.gone[r.wpeer]:
				c.posted.remove(r)
				e.complete(r, e.goneErr(c, r.wpeer, r.op))
			case r.anySrc && c.noSender():
				c.posted.remove(r)
				if c.unacked() || len(c.failedRanks(len(e.failedOrder))) > 0 {
					e.complete(r, &Error{Class: ErrProcFailed, Op: r.op, Rank: -1, Failed: c.failedRanks(len(e.failedOrder)),
						Detail: "every other member has failed or finalized"})
				} else {
					e.complete(r, newErr(ErrPeerFinalized, r.op, -1, "every other member has finalized"))
				}
			}
			r = next
		}
	}
	for r := e.active.head; r != nil; {
		next := r.next
		if e.gone[r.wpeer] {
			e.active.remove(r)
			if r.send {
				e.abandonHS(r)
				if r.ackMsg {
					delete(e.ackWait, r.gen)
				}
			}
			e.complete(r, e.goneErr(r.c, r.wpeer, r.op))
		}
		r = next
	}
	e.dropFrags()
	if len(e.queued) > 0 {
		e.flushQueues()
	}
}

// abandonHS gives back the handshake slot of a send whose receiver ended.
func (e *engine) abandonHS(r *request) {
	if r.hs >= 0 {
		e.freeHS(r.hs)
		r.hs = -1
	}
}

// ---- unexpected messages ----

// umsg is a message that arrived before a matching receive was posted.
// Inline and chunk payloads are copied out at once, so that the sender's
// chunk and the inbox slot are never held by an unmatched message.
type umsg struct {
	src    int
	tag    int
	kind   uint8
	flags  uint8
	hs     int
	gen    uint32
	n      int
	data   []byte
	sender *request // a synchronous send to self, completed at match

	next, prev *umsg
}

func (e *engine) newUmsg(src, tag int, kind, flags uint8, hs int, gen uint32) *umsg {
	var m *umsg
	if k := len(e.umFree); k > 0 {
		m = e.umFree[k-1]
		e.umFree = e.umFree[:k-1]
	} else {
		m = &umsg{}
	}
	m.src, m.tag, m.kind, m.flags, m.hs, m.gen, m.n, m.sender = src, tag, kind, flags, hs, gen, 0, nil
	return m
}

func (m *umsg) setData(p unsafe.Pointer, n int) {
	if cap(m.data) < n {
		m.data = make([]byte, n)
	}
	m.data = m.data[:n]
	memmove(unsafe.Pointer(unsafe.SliceData(m.data)), p, n)
	m.n = n
}

func (e *engine) putUmsg(m *umsg) {
	m.sender = nil
	if cap(m.data) > 1<<16 {
		m.data = nil
	}
	if len(e.umFree) < 256 {
		e.umFree = append(e.umFree, m)
	}
}

type umsgList struct {
	head, tail *umsg
	n          int
}

func (l *umsgList) push(m *umsg) {
	m.next = nil
	m.prev = l.tail
	if l.tail != nil {
		l.tail.next = m
	} else {
		l.head = m
	}
	l.tail = m
	l.n++
}

func (l *umsgList) remove(m *umsg) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		l.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		l.tail = m.prev
	}
	m.next, m.prev = nil, nil
	l.n--
}

// matchUnexp finds the earliest unexpected message a receive from world
// rank src (any if anySrc) with tag matches.
func (c *Comm) matchUnexp(src, tag int, anySrc bool) *umsg {
	for m := c.unexp.head; m != nil; m = m.next {
		if (anySrc || m.src == src) && (tag == AnyTag || m.tag == tag) {
			return m
		}
	}
	return nil
}
