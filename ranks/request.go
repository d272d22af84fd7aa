package ranks

import (
	"errors"
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/job"
)

// Status describes a completed receive (or probe).
type Status struct {
	Source    int   // communicator rank of the sender, or ProcNull
	Tag       int   // the message's tag
	Bytes     int   // bytes received
	Count     int   // elements received (Bytes / element size), or Undefined
	Err       error // the operation's error, if any
	Cancelled bool  // the receive was cancelled
}

// Count converts a status's byte count into elements of T (Undefined if
// the bytes are not a whole number of elements).
func Count[T any](st Status) int {
	sz, err := elemSize[T]()
	switch {
	case err != nil:
		return Undefined
	case sz == 0:
		return 0 // MPI: a zero-size type's count is zero
	case st.Bytes%sz != 0:
		return Undefined
	}
	return st.Bytes / sz
}

// Request is a handle on a nonblocking or persistent operation. Complete
// it with Wait or Test (or their many-request forms). A nonblocking
// request is freed by its completion: using it again returns ErrRequest.
// A persistent request is reusable with Start until Free.
//
// The handle is small; the operation's state behind it is recycled once
// the operation is complete and the handle freed, so that nonblocking
// calls allocate only handles, and those in blocks of 1024 (fresh memory
// costs page faults; TestRequestAllocs checks the count). A generation
// number tells a stale handle from the state's next use.
type Request struct {
	r   *request
	gen uint32 // r.hgen when the handle was made
}

// request is the state of a nonblocking, persistent or blocking
// operation.
type request struct {
	link[request] // first: see list.go
	e             *engine
	hgen          uint32 // bumped when the handle is freed: stale handles fail
	c             *Comm
	op            string

	send       bool
	sync       bool // synchronous send: completes once matched
	pull       bool // a send above pullMin goes by rendezvous, not a chunk (ext.PullSends)
	persistent bool
	active     bool // persistent: started and not yet waited for
	orphan     bool // its handle was freed while it was pending
	shared     bool // engine.sent: the state of every Isend complete at its start
	anySrc     bool
	bmode      bool // a persistent buffered send (BsendInit): Start buffers it (bsend.go); reset by Free

	buf    unsafe.Pointer
	nbytes int
	esize  int
	peer   int // communicator rank (or AnySource / ProcNull)
	wpeer  int // world rank, -1 for AnySource
	tag    int

	done bool // completed; guarded by the engine lock
	st   Status

	// protocol state
	chunk  int    // eager chunk holding the copied payload, or -1
	hs     int    // handshake slot (sender: ours; receiver: the sender's), or -1
	gen    uint32 // handshake generation
	off    int    // bytes moved so far (pipelined copy)
	accept int    // bytes the receive takes
	pin    runtime.Pinner
	pinned bool
	frag   bool // sent or received in fragments (fallback.go)
	ackMsg bool // a synchronous send waiting for a kAck message; gen is its id
	lost   bool // a rendezvous receive whose sender's memory is gone (rndvLost)
	// holdDone: a proxy's rendezvous receive of a synchronous send; its
	// end leaves the sender waiting (rndvDone)
	holdDone bool
	// unready: a proxy's send whose bytes have not arrived from their
	// node yet (sendLate); dataLost: and never will. lateRecv: a receive
	// that matched such a send, and leaves the whole copy to its sender.
	unready, dataLost, lateRecv bool

	// Rarely set, and placed where they move no other field. A part
	// and a buffered send are internal orphans: recycleOrphan handles
	// pair and bpool when they complete.
	parts uint8      // an Isendrecv (the whole): parts still pending, 0 once complete
	ptIdx int32      // an internal operation of a partitioned request: its partition, or ptHdr/ptCtl
	pair  *request   // a part of an Isendrecv: its whole; the whole: its receive part while pending
	bpool *bsendPool // a buffered send: the attached buffer holding its data
	pt    *partReq   // a partitioned request (partitioned.go), or an internal operation of one

	// startFn starts a persistent operation of an upper package (a
	// persistent collective, ext.NewPersistent): Start calls it, and the
	// operation completes the request itself.
	startFn func()
	// help, if set, runs the operation on the waiting goroutine (a
	// collective queued on its communicator, ext.SetHelp); Wait and
	// WaitAll call it, without the engine lock, before they wait.
	help func()

	// An agent's receive of a rendezvous message for a proxy (op
	// opProxy): when the sender's copy was last seen to advance
	// (nanoseconds since procStart; 0: not yet looked) and how far it was
	// (patience, in transfer.go).
	patientAt   int64
	patientSeen uint64

	// freeFn, if set, runs when the request is freed (a persistent
	// collective's private communicator goes with it). Last: the fields
	// above keep their places.
	freeFn func()
}

func (r *request) reset() {
	r.done = false
	r.st = Status{}
	r.chunk, r.hs, r.gen, r.off, r.accept = -1, -1, 0, 0, 0
	r.frag, r.ackMsg, r.lost, r.holdDone = false, false, false, false
	r.unready, r.dataLost, r.lateRecv = false, false, false
}

// newRequest hands out the state of a nonblocking or persistent call and
// its handle. States come back through releaseReq; new ones are carved from
// slabs of 64, handles from blocks of handleBlock (one allocation per 64
// or 1024 calls, for the first calls only).
func (e *engine) newRequest() (*request, *Request) {
	r := e.reqState()
	return r, e.newHandle(r)
}

func (e *engine) newHandle(r *request) *Request {
	if len(e.handles) == 0 {
		e.handles = newHandleBlock()
	}
	h := &e.handles[0]
	e.handles = e.handles[1:]
	h.r, h.gen = r, r.hgen
	return h
}

// sentHandle is the handle of a standard-mode Isend whose message went
// into the destination's inbox at once: the operation is over, so it
// needs no state of its own. All such handles share e.sent, a completed
// send (empty status, no error) that is never recycled: its generation
// stays sentGen, and a handle is invalidated by changing its own
// generation instead (Request.release). It saves taking, filling and
// releasing a request per small message (osu_mbw_mr's sender).
func (e *engine) sentHandle() *Request {
	if e.sent.e == nil {
		e.sent = request{e: e, send: true, done: true, shared: true, hgen: sentGen, wpeer: -1, peer: ProcNull}
	}
	return e.newHandle(&e.sent)
}

// sentGen is e.sent's generation; its handles, once released, hold
// sentGen-1.
const sentGen = 1

// reqState takes the state of a nonblocking operation: one freed
// before, or a new one from a slab. Internal operations that no handle
// reaches (the parts of an Isendrecv, buffered sends) take theirs here
// and then release it at once: it comes back through recycle when the
// operation completes.
func (e *engine) reqState() *request {
	if n := len(e.nbFree); n > 0 {
		r := e.nbFree[n-1]
		e.nbFree = e.nbFree[:n-1]
		return r
	}
	if len(e.slab) == 0 {
		e.slab = make([]request, 64)
	}
	r := &e.slab[0]
	e.slab = e.slab[1:]
	r.e = e
	return r
}

// handleBlock is how many handles are allocated at once: 16 KiB, a
// whole number of pages.
const handleBlock = 1024

// newHandleBlock allocates a block of handles with its pages populated
// in one madvise. Until the collector first frees memory, every block is
// fresh heap, whose first touch costs about 10 µs a page here (PLATFORM),
// some 40 ns a call at 256 handles a page. osu_mbw_mr -m 1:1 -i 1000
// -x 100, 2026-11-25: 925 page faults a run instead of about 1,500, and
// 8.6-10.7 million messages/s against 7.8-10.6 (6 interleaved runs).
//
// The block starts after the allocator's 8-byte header, so the range is
// widened to whole pages: populating leaves memory as it is, whoever
// owns the rest of those pages.
func newHandleBlock() []Request { return newHandles(handleBlock) }

// spinHandles is how many handles a spinning rank populates at Init.
const spinHandles = 32768

// newHandles allocates n handles and populates their pages (as above).

func newHandles(n int) []Request {
	b := make([]Request, n)
	const page = 4096
	start := uintptr(unsafe.Pointer(&b[0])) &^ (page - 1)
	end := (uintptr(unsafe.Pointer(&b[0])) + uintptr(n)*unsafe.Sizeof(Request{}) + page - 1) &^ (page - 1)
	// Raw: short, and announced it could wake sysmon (shm's membarrier).
	unix.RawSyscall(unix.SYS_MADVISE, start, end-start, unix.MADV_POPULATE_WRITE) // best effort: else faults later
	return b
}

// releaseReq invalidates r's handle and, once the engine holds r nowhere,
// keeps r for a later call. Called under the engine lock.
func (e *engine) releaseReq(r *request) {
	r.hgen++
	if (!r.done && !r.inactive()) || r.list != nil || r.pinned {
		// Still in flight (a freed pending operation): complete recycles
		// it when it ends.
		r.orphan = true
		return
	}
	e.recycle(r)
}

func (e *engine) recycle(r *request) {
	r.orphan = false
	if len(e.nbFree) >= 256 {
		return // enough kept
	}
	r.buf, r.c, r.st.Err, r.startFn, r.freeFn, r.help, r.pt = nil, nil, nil, nil, nil, nil, nil
	e.nbFree = append(e.nbFree, r)
}

// recycleOrphan recycles r, whose handle was freed (or which never had
// one), once it completed. Internal operations learn of their completion
// here, off the path of requests that users wait for: an Isendrecv's
// part (its whole may be complete now), a buffered send (its space is
// free now).
func (e *engine) recycleOrphan(r *request) {
	if r.pair != nil && r.parts == 0 {
		e.partDone(r)
	}
	if r.bpool != nil {
		e.bsendDone(r)
	}
	if r.pt != nil {
		e.ptDone(r)
	}
	e.recycle(r)
}

// releaseInternal releases internal operation r (an Isendrecv's part, a
// buffered send), which has no handle: as releaseReq, but if it is
// complete already, it is recycled through recycleOrphan.
func (e *engine) releaseInternal(r *request) {
	if !r.done || r.list != nil || r.pinned {
		r.orphan = true // complete recycles it
		return
	}
	e.recycleOrphan(r)
}

func (e *engine) getReq() *request {
	if n := len(e.reqFree); n > 0 {
		r := e.reqFree[n-1]
		e.reqFree = e.reqFree[:n-1]
		return r
	}
	return &request{e: e}
}

func (e *engine) putReq(r *request) {
	r.buf = nil
	r.c = nil
	r.st.Err = nil
	if len(e.reqFree) < 64 {
		e.reqFree = append(e.reqFree, r)
	}
}

func (r *request) unlink() {
	if r.list != nil {
		r.list.remove(r)
	}
}

// enter validates handle h and takes its engine's lock; on error the
// lock is not held.
func (h *Request) enter(op string) (*request, error) {
	if h == nil || h.r == nil || h.r.e == nil {
		return nil, newErr(ErrRequest, op, -1, "nil request")
	}
	r := h.r
	r.e.lock()
	if err := h.check(op); err != nil {
		r.e.unlock()
		return nil, err
	}
	return r, nil
}

// check validates handle h under the engine lock.
func (h *Request) check(op string) error {
	if h == nil || h.r == nil || h.r.e == nil {
		return newErr(ErrRequest, op, -1, "nil request")
	}
	if h.r.e.closed {
		return newErr(ErrFinalized, op, -1, "")
	}
	if h.r.hgen != h.gen {
		return newErr(ErrRequest, op, -1, "request already completed and freed")
	}
	return nil
}

// stale reports, under the engine lock, whether h was freed meanwhile (by
// another goroutine completing it: an erroneous program, reported).
func (h *Request) stale() bool { return h.r.hgen != h.gen }

// pendingFailure reports whether r is a nonblocking AnySource receive
// that cannot be completed until a failure is acknowledged. Only a
// receive still waiting for a match can be: once matched to a live
// sender it completes normally, whoever else fails (spec 15.2.2).
func (e *engine) pendingFailure(r *request) bool {
	if r.parts > 0 {
		// An Isendrecv is pending on its receive part's failure.
		if r = r.pair; r == nil {
			return false
		}
	}
	return r.anySrc && !r.done && r.unmatched() && e.drained && r.c.unacked()
}

// unmatched reports whether receive r still waits for a message.
func (r *request) unmatched() bool { return r.list == &r.c.posted }

// finish returns the status of h's completed operation and retires a
// nonblocking request (a persistent one becomes inactive).
func (h *Request) finish(op string) (Status, error) {
	if h.stale() {
		return Status{}, newErr(ErrRequest, op, -1, "request completed by another call")
	}
	st := h.r.st
	h.retire()
	return st, st.Err
}

// finishErr is finish for a caller that needs only the error.
func (h *Request) finishErr(op string) error {
	if h.stale() {
		return newErr(ErrRequest, op, -1, "request completed by another call")
	}
	err := h.r.st.Err
	h.retire()
	return err
}

// retire ends h's hold on its completed operation: a persistent request
// becomes inactive, a nonblocking one is released.
func (h *Request) retire() {
	if r := h.r; r.persistent {
		r.active = false
	} else {
		h.release()
	}
}

// release invalidates handle h and releases its operation's state.
func (h *Request) release() {
	if h.r.shared {
		h.gen = sentGen - 1 // e.sent lives on for the other handles
		return
	}
	h.r.e.releaseReq(h.r)
}

func (e *engine) pendingErr(r *request, op string) error {
	return &Error{Class: ErrProcFailedPending, Op: op, Rank: -1, Failed: r.c.failedRanks(len(e.failedOrder))}
}

// emptyStatus is MPI's empty status: what a null or inactive request
// completes with (source AnySource, tag AnyTag, count 0, no error).
var emptyStatus = Status{Source: AnySource, Tag: AnyTag}

// ctx is the context id of r's communicator, for deadline reports; 0
// for engine.sent, which has none.
func (r *request) ctx() uint32 {
	if r.c == nil {
		return 0
	}
	return r.c.ctx
}

// inactive: a persistent request not started completes at once, empty.
func (r *request) inactive() bool { return r.persistent && !r.active }

// done reports, under the engine lock, whether h's operation completed
// (or h went stale while the caller waited).
func (h *Request) done() bool { return h.stale() || h.r.done }

// Wait blocks until the request completes and returns its status. For a
// nonblocking AnySource receive whose communicator has an unacknowledged
// failure it returns ErrProcFailedPending and the request stays pending.
func (h *Request) Wait() (Status, error) {
	r, err := h.enter("Wait")
	if err != nil {
		return Status{}, err
	}
	e := r.e
	defer e.unlock()
	if r.inactive() {
		return emptyStatus, nil
	}
	if help := r.help; help != nil && !r.done {
		e.unlock()
		help()
		e.relock()
	}
	pend := false
	e.block(func() bool {
		if h.done() {
			return true
		}
		pend = e.pendingFailure(r)
		return pend
	}, job.OpWait, r.peer, r.tag, r.ctx(), r.wpeer)
	if !h.done() && pend {
		return Status{}, e.pendingErr(r, "Wait")
	}
	return h.finish("Wait")
}

// helpAll runs the help of every pending request of rs in turn, without
// the engine lock (held on entry and return).
func (e *engine) helpAll(rs []*Request) {
	for _, h := range rs {
		if h == nil || h.stale() || h.r.done || h.r.help == nil {
			continue
		}
		help := h.r.help
		e.unlock()
		help()
		e.relock()
	}
}

// Test reports whether the request has completed, making progress once,
// without blocking.
func (h *Request) Test() (Status, bool, error) {
	r, err := h.enter("Test")
	if err != nil {
		return Status{}, false, err
	}
	e := r.e
	defer e.unlock()
	if r.inactive() {
		return emptyStatus, true, nil
	}
	e.progress()
	if !h.done() {
		e.kickIdle()
		if e.pendingFailure(r) {
			return Status{}, false, e.pendingErr(r, "Test")
		}
		return Status{}, false, nil
	}
	st, err := h.finish("Test")
	return st, true, err
}

// Cancel cancels a pending receive that has not matched a message; its
// Wait or Test then returns a status with Cancelled set (MPI_Test_cancelled).
// A receive that already matched (an Imrecv's always has) completes
// normally, with Cancelled unset. Sends cannot be cancelled; for an
// Isendrecv, Cancel withdraws the receive part and the send goes on.
func (h *Request) Cancel() error {
	r, err := h.enter("Cancel")
	if err != nil {
		return err
	}
	e := r.e
	defer e.unlock()
	if r.parts > 0 {
		// An Isendrecv: withdraw its receive part if it has not matched;
		// the send part completes as it would.
		if p := r.pair; p != nil && p.list == &p.c.posted {
			p.c.posted.remove(p)
			p.st = Status{Source: p.peer, Tag: p.tag, Cancelled: true}
			e.complete(p, nil)
		}
		return nil
	}
	if r.send {
		return newErr(ErrRequest, "Cancel", -1, "send requests cannot be cancelled")
	}
	if r.inactive() || r.done {
		return nil
	}
	if r.list == &r.c.posted {
		r.c.posted.remove(r)
		r.st = Status{Source: r.peer, Tag: r.tag, Cancelled: true}
		e.complete(r, nil)
	}
	return nil
}

// Start starts an inactive persistent request.
func (h *Request) Start() error {
	r, err := h.enter("Start")
	if err != nil {
		return err
	}
	e := r.e
	defer e.unlock()
	if !r.persistent {
		return newErr(ErrRequest, "Start", -1, "not a persistent request")
	}
	if r.active {
		return newErr(ErrRequest, "Start", -1, "request is already active")
	}
	if err := r.c.live("Start"); err != nil && !(r.pt == nil && r.c.freed && !e.closed) {
		// A persistent request may start after its communicator was
		// freed, as MPI lets a request keep it: a point-to-point one
		// holds the communicator's resources (holdFor), a collective
		// runs on a private duplicate (coll), which checks itself.
		return err
	}
	r.reset()
	r.active = true
	if r.startFn != nil {
		r.startFn()
		return nil
	}
	if r.bmode {
		return e.startBuffered(r)
	}
	e.start(r)
	return nil
}

// StartAll starts every request in rs.
func StartAll(rs []*Request) error {
	for _, h := range rs {
		if err := h.Start(); err != nil {
			return err
		}
	}
	return nil
}

// Free releases a request handle (MPI_Request_free). A persistent request
// must be inactive. A pending operation is not cancelled: it still
// completes, unobserved; a receive still consumes the message it matches
// and fills its buffer, which must stay untouched until then (use Cancel
// first to withdraw a receive).
func (h *Request) Free() error {
	r, err := h.enter("Free")
	if err != nil {
		return err
	}
	e := r.e
	if r.persistent && r.active && !r.done {
		e.unlock()
		return newErr(ErrRequest, "Free", -1, "persistent request is active; Wait for it first")
	}
	r.bmode = false
	if r.pt != nil {
		e.ptFree(r)
	}
	freeFn := r.freeFn
	h.release()
	e.unlock()
	if freeFn != nil {
		freeFn() // takes the engine lock itself
	}
	return nil
}

// The many-request forms follow MPI: nil entries are ignored (like
// MPI_REQUEST_NULL), and entries of completed nonblocking requests are set
// to nil in the caller's slice, so that loops over WaitAny and WaitSome
// work as in MPI.

// multiErr is the error of a many-request call: the first request's
// error, with its index (each status carries its own).
type multiErr struct {
	idx int
	err error
}

func (m multiErr) Error() string { return "request " + strconv.Itoa(m.idx) + ": " + m.err.Error() }
func (m multiErr) Unwrap() error { return m.err }

// enginesOf returns the single engine of rs and checks every entry.
func enginesOf(rs []*Request, op string) (*engine, error) {
	var e *engine
	for _, h := range rs {
		if h == nil {
			continue
		}
		if h.r == nil || h.r.e == nil {
			return nil, newErr(ErrRequest, op, -1, "uninitialised request")
		}
		e = h.r.e
	}
	return e, nil
}

// checkAll validates every non-nil handle of rs under the engine lock.
func checkAll(rs []*Request, op string) error {
	for _, h := range rs {
		if h != nil {
			if err := h.check(op); err != nil {
				return err
			}
		}
	}
	return nil
}

// idle reports whether h is nil or an inactive persistent request: an
// entry the many-request forms skip.
func idle(h *Request) bool { return h == nil || h.r.inactive() }

// WaitAll waits for every request. Statuses, if not nil, receives one
// status per request. The error, if any, is the first request's error
// (wrapped, so errors.Is works); each status carries its own. Requests
// that are pending on an unacknowledged failure (ErrProcFailedPending)
// stay pending and stay in rs.
func WaitAll(rs []*Request, statuses []Status) error {
	e, err := enginesOf(rs, "WaitAll")
	if err != nil || e == nil {
		return err
	}
	e.lock()
	defer e.unlock()
	if err := checkAll(rs, "WaitAll"); err != nil {
		return err
	}
	e.helpAll(rs)
	// rs[:next] are nil or done, and stay so (done is for good; a
	// handle freed meanwhile is stale, which counts as done): each look
	// starts past them. Receives complete mostly in order, and a drain
	// that keeps up with a streaming sender completes one or two between
	// looks; rescanning the done ones from the start made a window of 64
	// receives cost about 32 handle checks a message.
	next := 0
	e.block(func() bool {
		for ; next < len(rs); next++ {
			if h := rs[next]; h != nil && !h.done() {
				break
			}
		}
		for _, h := range rs[next:] {
			if !idle(h) && !h.done() && !e.pendingFailure(h.r) {
				return false
			}
		}
		return true
	}, job.OpWaitAll, ProcNull, AnyTag, 0, commonPeer(rs))
	var first error
	for i, h := range rs {
		var st Status
		var err error
		switch {
		case idle(h):
			st = emptyStatus
		case !h.done():
			err = e.pendingErr(h.r, "WaitAll")
			st.Err = err
		case statuses == nil:
			// Nobody reads the status: copying it cost more than the
			// rest of finishing (a 16-byte load of words stored one at
			// a time cannot be forwarded from the stores).
			persistent := h.r.persistent
			err = h.finishErr("WaitAll")
			if !persistent {
				rs[i] = nil
			}
		default:
			persistent := h.r.persistent
			st, err = h.finish("WaitAll")
			if !persistent {
				rs[i] = nil
			}
		}
		if statuses != nil && i < len(statuses) {
			statuses[i] = st
		}
		if err != nil && first == nil {
			first = multiErr{i, err}
		}
	}
	return first
}

// TestAll reports whether every request has completed; if so it completes
// them all as WaitAll does. Otherwise nothing is completed.
func TestAll(rs []*Request, statuses []Status) (bool, error) {
	e, err := enginesOf(rs, "TestAll")
	if err != nil || e == nil {
		return true, err
	}
	e.lock()
	if err := checkAll(rs, "TestAll"); err != nil {
		e.unlock()
		return false, err
	}
	e.progress()
	for _, h := range rs {
		if !idle(h) && !h.done() {
			e.kickIdle()
			pend := e.pendingFailure(h.r)
			e.unlock()
			if pend {
				return false, e.pendingErr(h.r, "TestAll")
			}
			return false, nil
		}
	}
	e.unlock()
	return true, WaitAll(rs, statuses)
}

// WaitAny waits until one request completes and returns its index and
// status; the index is Undefined if every entry is nil or inactive.
func WaitAny(rs []*Request) (int, Status, error) {
	return waitAny(rs, true, "WaitAny")
}

// TestAny is WaitAny without blocking; ok reports whether one completed.
func TestAny(rs []*Request) (idx int, st Status, ok bool, err error) {
	idx, st, err = waitAny(rs, false, "TestAny")
	switch {
	case idx == noneDone:
		return Undefined, st, false, err
	case errors.Is(err, ErrProcFailedPending):
		return idx, st, false, err
	}
	return idx, st, true, err
}

// noneDone is waitAny's index when nothing completed (TestAny: not ok).
const noneDone = -2

func waitAny(rs []*Request, block bool, op string) (int, Status, error) {
	e, err := enginesOf(rs, op)
	if err != nil {
		return Undefined, Status{}, err
	}
	if e == nil {
		return Undefined, Status{}, nil
	}
	e.lock()
	defer e.unlock()
	if err := checkAll(rs, op); err != nil {
		return Undefined, Status{}, err
	}
	any := false
	for _, h := range rs {
		any = any || !idle(h)
	}
	if !any {
		return Undefined, emptyStatus, nil
	}
	found, pend := -1, -1
	pred := func() bool {
		for i, h := range rs {
			if idle(h) {
				continue
			}
			if h.done() {
				found = i
				return true
			}
			if pend < 0 && e.pendingFailure(h.r) {
				pend = i
			}
		}
		return pend >= 0
	}
	if block {
		e.block(pred, job.OpWaitAny, ProcNull, AnyTag, 0, commonPeer(rs))
	} else {
		e.progress()
		if !pred() {
			e.kickIdle()
		}
	}
	if found >= 0 {
		h := rs[found]
		persistent := h.r.persistent
		st, err := h.finish(op)
		if !persistent {
			rs[found] = nil
		}
		return found, st, err
	}
	if pend >= 0 {
		return pend, Status{}, e.pendingErr(rs[pend].r, op)
	}
	return noneDone, Status{}, nil
}

// WaitSome waits until at least one request completes and returns the
// indices and statuses of all that have. It returns nil indices if every
// entry is nil or inactive.
func WaitSome(rs []*Request) ([]int, []Status, error) {
	return waitSome(rs, true, "WaitSome")
}

// TestSome is WaitSome without blocking.
func TestSome(rs []*Request) ([]int, []Status, error) {
	return waitSome(rs, false, "TestSome")
}

func waitSome(rs []*Request, block bool, op string) ([]int, []Status, error) {
	e, err := enginesOf(rs, op)
	if err != nil || e == nil {
		return nil, nil, err
	}
	e.lock()
	defer e.unlock()
	if err := checkAll(rs, op); err != nil {
		return nil, nil, err
	}
	any := false
	for _, h := range rs {
		any = any || !idle(h)
	}
	if !any {
		return nil, nil, nil
	}
	pred := func() bool {
		for _, h := range rs {
			if !idle(h) && (h.done() || e.pendingFailure(h.r)) {
				return true
			}
		}
		return false
	}
	if block {
		e.block(pred, job.OpWaitSome, ProcNull, AnyTag, 0, commonPeer(rs))
	} else {
		e.progress()
		if !pred() {
			e.kickIdle()
		}
	}
	var idx []int
	var sts []Status
	var first error
	for i, h := range rs {
		if idle(h) {
			continue
		}
		if h.done() {
			persistent := h.r.persistent
			st, err := h.finish(op)
			if !persistent {
				rs[i] = nil
			}
			idx = append(idx, i)
			sts = append(sts, st)
			if err != nil && first == nil {
				first = multiErr{i, err}
			}
		}
	}
	if len(idx) == 0 {
		for _, h := range rs {
			if !idle(h) && e.pendingFailure(h.r) {
				return nil, nil, e.pendingErr(h.r, op)
			}
		}
	}
	return idx, sts, first
}

// commonPeer is the world rank every request of rs is with, or -1 if
// they are with several (or any source): a sleeper waits on that rank's
// direct liveness word (see block).
func commonPeer(rs []*Request) int {
	w := -1
	for _, h := range rs {
		if idle(h) || h.done() {
			continue
		}
		if h.r.wpeer < 0 || (w >= 0 && h.r.wpeer != w) {
			return -1
		}
		w = h.r.wpeer
	}
	return w
}
