package ranks

import (
	"errors"
	"runtime"
	"unsafe"
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
	if err != nil || st.Bytes%sz != 0 {
		return Undefined
	}
	return st.Bytes / sz
}

// Request is a handle on a nonblocking or persistent operation. Complete
// it with Wait or Test (or their many-request forms). A nonblocking
// request is freed by its completion: using it again returns ErrRequest.
// A persistent request is reusable with Start until Free.
type Request struct {
	e  *engine
	c  *Comm
	op string

	send       bool
	sync       bool // synchronous send: completes once matched
	persistent bool
	active     bool // persistent: started and not yet waited for
	freed      bool
	blocking   bool // a blocking call's internal request
	anySrc     bool

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

	list       *reqList
	next, prev *Request
}

func (r *Request) reset() {
	r.done = false
	r.st = Status{}
	r.chunk, r.hs, r.gen, r.off, r.accept = -1, -1, 0, 0, 0
}

// newRequest hands out a request for a nonblocking call. Handles are
// never reused (a stale one must keep failing with ErrRequest), so they
// are carved from slabs of 64: one allocation per 64 calls instead of one
// per call. A slab stays alive while any of its requests is referenced.
func (e *engine) newRequest() *Request {
	if len(e.slab) == 0 {
		e.slab = make([]Request, 64)
	}
	r := &e.slab[0]
	e.slab = e.slab[1:]
	r.e = e
	return r
}

func (e *engine) getReq() *Request {
	if n := len(e.reqFree); n > 0 {
		r := e.reqFree[n-1]
		e.reqFree = e.reqFree[:n-1]
		return r
	}
	return &Request{e: e}
}

func (e *engine) putReq(r *Request) {
	r.buf = nil
	r.c = nil
	r.st.Err = nil
	if len(e.reqFree) < 64 {
		e.reqFree = append(e.reqFree, r)
	}
}

// reqList is an intrusive doubly linked list of requests.
type reqList struct {
	head, tail *Request
	n          int
}

func (l *reqList) push(r *Request) {
	r.list = l
	r.next = nil
	r.prev = l.tail
	if l.tail != nil {
		l.tail.next = r
	} else {
		l.head = r
	}
	l.tail = r
	l.n++
}

func (l *reqList) remove(r *Request) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		l.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		l.tail = r.prev
	}
	r.next, r.prev, r.list = nil, nil, nil
	l.n--
}

func (r *Request) unlink() {
	if r.list != nil {
		r.list.remove(r)
	}
}

// check validates a request handle under the engine lock.
func (r *Request) check(op string) error {
	if r == nil || r.e == nil {
		return newErr(ErrRequest, op, -1, "nil request")
	}
	if r.e.closed {
		return newErr(ErrFinalized, op, -1, "")
	}
	if r.freed {
		return newErr(ErrRequest, op, -1, "request already completed and freed")
	}
	return nil
}

// pendingFailure reports whether r is a nonblocking AnySource receive
// that cannot be completed until a failure is acknowledged.
func (e *engine) pendingFailure(r *Request) bool {
	return r.anySrc && !r.done && e.drained && r.c.unacked()
}

// finish returns r's status after completion and retires a nonblocking
// request (a persistent one becomes inactive).
func (r *Request) finish() (Status, error) {
	st := r.st
	if r.persistent {
		r.active = false
	} else {
		r.freed = true
		r.buf = nil
	}
	return st, st.Err
}

func (e *engine) pendingErr(r *Request, op string) error {
	return &Error{Class: ErrProcFailedPending, Op: op, Rank: -1, Failed: r.c.failedRanks(len(e.failedOrder))}
}

// enter validates r and takes its engine's lock; on error the lock is not
// held.
func (r *Request) enter(op string) error {
	if r == nil || r.e == nil {
		return newErr(ErrRequest, op, -1, "nil request")
	}
	r.e.lock()
	if err := r.check(op); err != nil {
		r.e.unlock()
		return err
	}
	return nil
}

// inactive: a persistent request not started completes at once, empty.
func (r *Request) inactive() bool { return r.persistent && !r.active }

// Wait blocks until the request completes and returns its status. For a
// nonblocking AnySource receive whose communicator has an unacknowledged
// failure it returns ErrProcFailedPending and the request stays pending.
func (r *Request) Wait() (Status, error) {
	if err := r.enter("Wait"); err != nil {
		return Status{}, err
	}
	e := r.e
	defer e.unlock()
	if r.inactive() {
		return Status{Source: ProcNull, Tag: AnyTag}, nil
	}
	pend := false
	e.block(func() bool {
		if r.done {
			return true
		}
		pend = e.pendingFailure(r)
		return pend
	}, opWait, r.peer, r.tag, r.c.ctx, r.wpeer)
	if !r.done && pend {
		return Status{}, e.pendingErr(r, "Wait")
	}
	return r.finish()
}

// Test reports whether the request has completed, making progress once,
// without blocking.
func (r *Request) Test() (Status, bool, error) {
	if err := r.enter("Test"); err != nil {
		return Status{}, false, err
	}
	e := r.e
	defer e.unlock()
	if r.inactive() {
		return Status{Source: ProcNull, Tag: AnyTag}, true, nil
	}
	e.progress()
	if !r.done {
		if e.pendingFailure(r) {
			return Status{}, false, e.pendingErr(r, "Test")
		}
		return Status{}, false, nil
	}
	st, err := r.finish()
	return st, true, err
}

// Cancel cancels a pending receive that has not matched a message; its
// Wait then returns a status with Cancelled set. A receive that already
// matched completes normally. Sends cannot be cancelled.
func (r *Request) Cancel() error {
	if err := r.enter("Cancel"); err != nil {
		return err
	}
	e := r.e
	defer e.unlock()
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
func (r *Request) Start() error {
	if err := r.enter("Start"); err != nil {
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
	if err := r.c.usable("Start"); err != nil {
		return err
	}
	r.reset()
	r.active = true
	e.start(r)
	return nil
}

// StartAll starts every request in rs.
func StartAll(rs []*Request) error {
	for _, r := range rs {
		if err := r.Start(); err != nil {
			return err
		}
	}
	return nil
}

// Free releases a request. A persistent request must be inactive. A
// pending nonblocking receive is cancelled; a pending send still
// completes, unobserved.
func (r *Request) Free() error {
	if err := r.enter("Free"); err != nil {
		return err
	}
	e := r.e
	defer e.unlock()
	if r.persistent && r.active && !r.done {
		return newErr(ErrRequest, "Free", -1, "persistent request is active; Wait for it first")
	}
	if !r.send && !r.done && r.list == &r.c.posted {
		r.c.posted.remove(r)
		e.complete(r, nil)
	}
	r.freed = true
	return nil
}

// The many-request forms follow MPI: nil entries are ignored (like
// MPI_REQUEST_NULL), and entries of completed nonblocking requests are set
// to nil in the caller's slice, so that loops over WaitAny and WaitSome
// work as in MPI.

// ErrInStatus-style aggregation: the first error, with its index.
type multiErr struct {
	idx int
	err error
}

func (m multiErr) Error() string { return "request " + itoa(m.idx) + ": " + m.err.Error() }
func (m multiErr) Unwrap() error { return m.err }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}

// enginesOf returns the single engine of rs and checks every entry.
func enginesOf(rs []*Request, op string) (*engine, error) {
	var e *engine
	for _, r := range rs {
		if r == nil {
			continue
		}
		if r.e == nil {
			return nil, newErr(ErrRequest, op, -1, "uninitialised request")
		}
		e = r.e
	}
	return e, nil
}

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
	for _, r := range rs {
		if r != nil {
			if err := r.check("WaitAll"); err != nil {
				return err
			}
		}
	}
	e.block(func() bool {
		for _, r := range rs {
			if r != nil && !r.inactive() && !r.done && !e.pendingFailure(r) {
				return false
			}
		}
		return true
	}, opWaitAll, ProcNull, AnyTag, 0, commonPeer(rs))
	var first error
	for i, r := range rs {
		var st Status
		var err error
		switch {
		case r == nil || r.inactive():
			st = Status{Source: ProcNull, Tag: AnyTag}
		case !r.done:
			err = e.pendingErr(r, "WaitAll")
			st.Err = err
		default:
			st, err = r.finish()
			if !r.persistent {
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
	for _, r := range rs {
		if r != nil {
			if err := r.check("TestAll"); err != nil {
				e.unlock()
				return false, err
			}
		}
	}
	e.progress()
	for _, r := range rs {
		if r != nil && !r.inactive() && !r.done {
			pend := e.pendingFailure(r)
			e.unlock()
			if pend {
				return false, e.pendingErr(r, "TestAll")
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
	case idx == -2:
		return Undefined, st, false, err
	case errors.Is(err, ErrProcFailedPending):
		return idx, st, false, err
	}
	return idx, st, true, err
}

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
	any := false
	for _, r := range rs {
		if r != nil {
			if err := r.check(op); err != nil {
				return Undefined, Status{}, err
			}
			if !r.inactive() {
				any = true
			}
		}
	}
	if !any {
		return Undefined, Status{Source: ProcNull, Tag: AnyTag}, nil
	}
	found, pend := -1, -1
	pred := func() bool {
		for i, r := range rs {
			if r == nil || r.inactive() {
				continue
			}
			if r.done {
				found = i
				return true
			}
			if pend < 0 && e.pendingFailure(r) {
				pend = i
			}
		}
		return pend >= 0
	}
	if block {
		e.block(pred, opWaitAny, ProcNull, AnyTag, 0, commonPeer(rs))
	} else {
		e.progress()
		pred()
	}
	if found >= 0 {
		st, err := rs[found].finish()
		if !rs[found].persistent {
			rs[found] = nil
		}
		return found, st, err
	}
	if pend >= 0 {
		return pend, Status{}, e.pendingErr(rs[pend], op)
	}
	return -2, Status{}, nil
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
	any := false
	for _, r := range rs {
		if r != nil {
			if err := r.check(op); err != nil {
				return nil, nil, err
			}
			any = any || !r.inactive()
		}
	}
	if !any {
		return nil, nil, nil
	}
	pred := func() bool {
		for _, r := range rs {
			if r != nil && !r.inactive() && (r.done || e.pendingFailure(r)) {
				return true
			}
		}
		return false
	}
	if block {
		e.block(pred, opWaitSome, ProcNull, AnyTag, 0, commonPeer(rs))
	} else {
		e.progress()
	}
	var idx []int
	var sts []Status
	var first error
	for i, r := range rs {
		if r == nil || r.inactive() {
			continue
		}
		if r.done {
			st, err := r.finish()
			if !r.persistent {
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
		for _, r := range rs {
			if r != nil && !r.inactive() && e.pendingFailure(r) {
				return nil, nil, e.pendingErr(r, op)
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
	for _, r := range rs {
		if r == nil || r.inactive() {
			continue
		}
		if r.wpeer < 0 || (w >= 0 && r.wpeer != w) {
			return -1
		}
		w = r.wpeer
	}
	return w
}
