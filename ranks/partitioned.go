package ranks

import (
	"sync/atomic"
	"unsafe"
)

// Partitioned point-to-point communication (MPI 4.0 chapter 4).
//
// A partitioned request is a persistent request (the whole) whose work is
// done by internal operations without handles (orphans, as an
// Isendrecv's parts): their pt points to the whole's partReq, and
// recycleOrphan calls ptDone when one completes, under the engine lock.
// So no goroutine and no polling hook is needed, and the hot paths know
// nothing of it.
//
// The two sides may cut the buffer into different numbers of partitions.
// Data always travels in the sender's partitions, each as an ordinary
// message with a tag of its own, so the receiver can post one receive per
// send partition straight into its buffer and a partition can be sent the
// moment it is ready, in any order. For that the receiver must know the
// sender's partitioning and the sender the receiver's tags: a handshake,
// started by the init calls and finished whenever its messages arrive,
// does it once per request pair, and checks that the sizes agree.
//
//	sender init:   post receive for the reply (tag R, allocated here);
//	               send header {total, partitions, R} on tag hdrTag(tag)
//	receiver init: post receive for the header on hdrTag(tag)
//	header arrives at the receiver: check sizes; allocate data tags D..D+n-1;
//	               reply {ok, D, total} on R; post the round's receives if started
//	reply arrives at the sender: send the partitions already ready
//
// The inits pair up in order per (communicator, peer, tag), as MPI says,
// because messages on one tag are not overtaken.
//
// Internal traffic uses negative tags, which no user tag can be; AnyTag
// matches non-negative tags only (match.go, protocol.go's recvFast).
// Header tags fold the user tag into 2^30 values: two partitioned pairs
// whose tags differ by a multiple of 2^30 and are initialised in
// different orders at the two sides would cross. Data and reply tags are
// taken from the rest of the negative range by the rank that receives on
// them, so they are unique among its receives until the 2^30 values wrap.

const (
	ptHdr = -1 // internal op: the handshake receive (header or reply)
	ptCtl = -2 // internal op: the handshake send (header or reply)

	ptHdrSpan  = 1 << 30               // header tags: -2 .. -2-(ptHdrSpan-1)
	ptDataLo   = -1 << 31              // data and reply tags: ptDataLo .. ptDataLo+ptDataSpan-1
	ptDataSpan = 1<<31 - ptHdrSpan - 2 // up to the lowest header tag, exclusive
)

func hdrTag(tag int) int { return -2 - tag&(ptHdrSpan-1) }

// ptNextTag is the next offset into the data tag range: process-wide,
// which is at least as unique as per rank.
var ptNextTag atomic.Int64

// allocTags reserves n consecutive data tags and returns the first.
func allocTags(n int) (int, bool) {
	if n > ptDataSpan {
		return 0, false
	}
	for {
		old := ptNextTag.Load()
		base := old
		if base+int64(n) > ptDataSpan {
			base = 0 // wrap: tags of long-freed requests come back
		}
		if ptNextTag.CompareAndSwap(old, base+int64(n)) {
			return ptDataLo + int(base), true
		}
	}
}

// partReq is the state of a partitioned request, kept by the whole (and
// pointed to by its internal operations).
type partReq struct {
	w      *request
	c      *Comm
	send   bool
	freed  bool // the whole was freed: internal completions are ignored
	peer   int
	tag    int
	buf    unsafe.Pointer
	parts  int // this side's partitions
	pbytes int // bytes per partition on this side
	total  int

	// The handshake. in receives the peer's header or reply, out holds
	// what this side sends (both Go memory that the internal operations
	// reach through their buf, which keeps them alive).
	in, out [3]int64
	hsReq   *request // the handshake receive while posted
	hs      bool     // done: dataTag, sparts and spb are known
	err     error    // the handshake failed or the sizes differ: every round fails with it
	dataTag int
	sparts  int // the sender's partitions
	spb     int // the sender's bytes per partition

	// The current round.
	marks    []bool // sender: partition marked ready; receiver: send partition arrived
	pending  int    // operations of the round not complete (sender: partitions not sent or in flight)
	posted   bool   // receiver: the round's receives are posted
	inflight int    // internal data operations not complete, of any round
	lastErr  error  // the error that ended a round while operations were in flight
	rounds   int    // rounds started
}

func (pt *partReq) op() string {
	if pt.send {
		return "Psend"
	}
	return "Precv"
}

// PsendInit creates a partitioned send (MPI_Psend_init) of buf, cut into
// partitions partitions of count elements each (buf holds at least
// partitions*count), to dest with tag. Start begins a round; Pready,
// PreadyRange or PreadyList marks each partition ready once per round,
// and it is sent as soon as it is; Wait or Test completes the round once
// every partition has been sent. The receive may use other partitions
// but must take exactly as many bytes: otherwise every round fails with
// ErrCount at both sides.
func PsendInit[T any](c *Comm, buf []T, partitions, count, dest, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "PsendInit")
	if err != nil {
		return nil, err
	}
	return c.pinit(true, p, n, partitions, count, sz, dest, tag, "PsendInit")
}

// PrecvInit creates a partitioned receive (MPI_Precv_init) into buf, cut
// into partitions partitions of count elements each, from source (not
// AnySource) with tag (not AnyTag). Parrived tells whether a partition
// has arrived during a round; Wait or Test completes the round.
func PrecvInit[T any](c *Comm, buf []T, partitions, count, source, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "PrecvInit")
	if err != nil {
		return nil, err
	}
	return c.pinit(false, p, n, partitions, count, sz, source, tag, "PrecvInit")
}

// PsendInitPtr is PsendInit on raw memory: partitions*count elements of
// elemSize bytes at p (the C interface's form).
func PsendInitPtr(c *Comm, p unsafe.Pointer, partitions, count, elemSize, dest, tag int) (*Request, error) {
	return c.pinitPtr(true, p, partitions, count, elemSize, dest, tag, "PsendInit")
}

// PrecvInitPtr is PrecvInit on raw memory.
func PrecvInitPtr(c *Comm, p unsafe.Pointer, partitions, count, elemSize, source, tag int) (*Request, error) {
	return c.pinitPtr(false, p, partitions, count, elemSize, source, tag, "PrecvInit")
}

func (c *Comm) pinitPtr(send bool, p unsafe.Pointer, partitions, count, elemSize, peer, tag int, op string) (*Request, error) {
	if partitions < 0 || count < 0 {
		return nil, newErr(ErrCount, op, -1, "%d partitions of %d elements", partitions, count)
	}
	if partitions > 0 && count > maxMsgBytes/partitions {
		return nil, newErr(ErrCount, op, -1, "%d partitions of %d elements", partitions, count)
	}
	n, err := rawArgs(p, partitions*count, elemSize, op)
	if err != nil {
		return nil, err
	}
	return c.pinit(send, p, n, partitions, count, elemSize, peer, tag, op)
}

func (c *Comm) pinit(send bool, p unsafe.Pointer, n, partitions, count, esize, peer, tag int, op string) (*Request, error) {
	if c == nil {
		return nil, nilComm(op)
	}
	if partitions < 0 {
		return nil, newErr(ErrCount, op, -1, "negative partitions %d", partitions)
	}
	if count < 0 {
		return nil, newErr(ErrCount, op, -1, "negative count %d", count)
	}
	if esize > 0 && partitions > 0 && count > maxMsgBytes/esize/partitions {
		return nil, newErr(ErrCount, op, -1, "%d partitions of %d elements of %d bytes are too large", partitions, count, esize)
	}
	pb := count * esize
	total := partitions * pb
	if total > n {
		return nil, newErr(ErrBuffer, op, -1, "buffer of %d bytes for %d partitions of %d bytes", n, partitions, pb)
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.checkPeer(peer, tag, false, op); err != nil {
		return nil, err
	}
	if c.inter != nil {
		return nil, newErr(ErrComm, op, -1, "partitioned communication on an intercommunicator is not supported")
	}
	w, h := e.newRequest()
	c.newOp(w, send, false, p, total, max(esize, 1), peer, tag, op)
	w.persistent = true
	pt := &partReq{w: w, c: c, send: send, peer: peer, tag: tag, buf: p, parts: partitions, pbytes: pb, total: total}
	w.pt = pt
	w.startFn = func() { e.ptStart(pt) }
	if send {
		pt.marks = make([]bool, partitions)
	}
	if peer == ProcNull {
		return h, nil
	}
	if send {
		rtag, _ := allocTags(1) // one always fits
		pt.hsReq = e.ptRecv(pt, ptHdr, unsafe.Pointer(&pt.in), int(unsafe.Sizeof(pt.in)), rtag)
		pt.out = [3]int64{int64(total), int64(partitions), int64(rtag)}
		e.ptSend(pt, ptCtl, unsafe.Pointer(&pt.out), int(unsafe.Sizeof(pt.out)), hdrTag(tag))
	} else {
		pt.hsReq = e.ptRecv(pt, ptHdr, unsafe.Pointer(&pt.in), int(unsafe.Sizeof(pt.in)), hdrTag(tag))
	}
	return h, nil
}

// ptRecv starts an internal receive for pt, with ptIdx idx, and returns
// it while it is still posted (nil if it completed at once).
func (e *engine) ptRecv(pt *partReq, idx int, p unsafe.Pointer, n, tag int) *request {
	r := e.reqState()
	pt.c.newOp(r, false, false, p, n, 1, pt.peer, tag, pt.op())
	r.pt, r.ptIdx = pt, int32(idx)
	if idx >= 0 {
		pt.inflight++
	}
	e.startRecv(r)
	posted := r.list == &pt.c.posted
	e.releaseInternal(r) // may complete it now, through ptDone
	if posted && r.pt == pt {
		return r
	}
	return nil
}

// ptSend starts an internal send for pt.
func (e *engine) ptSend(pt *partReq, idx int, p unsafe.Pointer, n, tag int) {
	r := e.reqState()
	pt.c.newOp(r, true, false, p, n, 1, pt.peer, tag, pt.op())
	r.pt, r.ptIdx = pt, int32(idx)
	if idx >= 0 {
		pt.inflight++
	}
	e.startSend(r)
	e.releaseInternal(r)
}

// ptStart begins a round of pt (Start, under the engine lock; the whole
// is reset and active).
func (e *engine) ptStart(pt *partReq) {
	w := pt.w
	pt.rounds++
	clear(pt.marks)
	pt.posted = false
	if pt.peer == ProcNull {
		w.st = Status{Source: ProcNull, Tag: AnyTag}
		e.complete(w, nil)
		return
	}
	w.st = Status{Source: pt.peer, Tag: pt.tag}
	switch {
	case pt.err != nil:
		e.complete(w, pt.err)
		return
	case pt.inflight > 0:
		// The last round ended early with an error (a failed peer, a
		// revoke) while some of its operations were still under way:
		// this one cannot do better.
		e.complete(w, pt.lastErr)
		return
	}
	if pt.send {
		pt.pending = pt.parts
		if pt.hs && pt.parts == 0 {
			e.ptEnd(pt, nil) // nothing to send
		}
		return
	}
	if pt.hs {
		e.ptPost(pt)
	}
}

// ptPost posts the receives of a round, one per send partition.
func (e *engine) ptPost(pt *partReq) {
	pt.posted = true
	clear(pt.marks)
	pt.pending = pt.sparts
	if pt.sparts == 0 {
		e.ptEnd(pt, nil) // nothing will come
	}
	for i := 0; i < pt.sparts && !pt.w.done; i++ {
		e.ptRecv(pt, i, unsafe.Add(pt.buf, i*pt.spb), pt.spb, pt.dataTag+i)
	}
}

// ptEnd completes the round with err unless it is complete already.
func (e *engine) ptEnd(pt *partReq, err error) {
	w := pt.w
	if w.done || !w.active {
		return
	}
	if err == nil {
		w.st.Bytes = pt.total
		w.st.Count = elems(pt.total, w.esize)
		if pt.pbytes == 0 {
			w.st.Count = 0
		}
	} else if pt.inflight > 0 {
		pt.lastErr = err
	}
	e.complete(w, err)
}

// ptFail records that pt's handshake failed (or the sizes differ): the
// current round and every later one fail with err.
func (e *engine) ptFail(pt *partReq, err error) {
	if pt.err == nil {
		pt.err = err
	}
	e.ptEnd(pt, pt.err)
}

// ptDone is told that internal operation r of a partitioned request
// completed (recycleOrphan, under the engine lock).
func (e *engine) ptDone(r *request) {
	pt, idx, err := r.pt, int(r.ptIdx), r.st.Err
	r.pt = nil
	if idx >= 0 {
		pt.inflight--
	}
	if pt.freed {
		return
	}
	switch idx {
	case ptCtl:
		if err != nil {
			e.ptFail(pt, err)
		}
	case ptHdr:
		pt.hsReq = nil
		if err != nil {
			e.ptFail(pt, err)
			return
		}
		if r.st.Bytes != int(unsafe.Sizeof(pt.in)) {
			e.ptFail(pt, newErr(ErrOther, pt.op(), pt.peer, "partitioned handshake of %d bytes", r.st.Bytes))
			return
		}
		if pt.send {
			e.ptReply(pt)
		} else {
			e.ptHeader(pt)
		}
	default:
		if pt.w.done {
			return
		}
		if !pt.send {
			pt.marks[idx] = true
		}
		if err != nil {
			e.ptEnd(pt, err)
			return
		}
		if pt.pending--; pt.pending == 0 {
			e.ptEnd(pt, nil)
		}
	}
}

func mismatchErr(op string, peer, send, recv int) error {
	return newErr(ErrCount, op, peer, "partitioned send of %d bytes, receive of %d bytes", send, recv)
}

// ptHeader handles the sender's header at the receiver.
func (e *engine) ptHeader(pt *partReq) {
	stotal, sparts, rtag := int(pt.in[0]), int(pt.in[1]), int(pt.in[2])
	pt.out = [3]int64{0, 0, int64(pt.total)}
	var err error
	switch {
	case stotal != pt.total:
		err = mismatchErr(pt.op(), pt.peer, stotal, pt.total)
	case sparts < 0 || sparts == 0 && stotal != 0 || sparts > 0 && stotal%sparts != 0:
		err = newErr(ErrOther, pt.op(), pt.peer, "partitioned header: %d bytes in %d partitions", stotal, sparts)
	default:
		base, ok := allocTags(sparts)
		if !ok {
			err = newErr(ErrCount, pt.op(), pt.peer, "%d send partitions are too many", sparts)
			break
		}
		pt.out[0], pt.out[1] = 1, int64(base)
		pt.dataTag, pt.sparts = base, sparts
		if sparts > 0 {
			pt.spb = stotal / sparts
		}
		pt.marks = make([]bool, sparts)
	}
	e.ptSend(pt, ptCtl, unsafe.Pointer(&pt.out), int(unsafe.Sizeof(pt.out)), rtag)
	if err != nil {
		e.ptFail(pt, err)
		return
	}
	pt.hs = true
	if w := pt.w; w.active && !w.done && !pt.posted {
		e.ptPost(pt)
	}
}

// ptReply handles the receiver's reply at the sender.
func (e *engine) ptReply(pt *partReq) {
	if pt.in[0] != 1 {
		e.ptFail(pt, mismatchErr(pt.op(), pt.peer, pt.total, int(pt.in[2])))
		return
	}
	pt.dataTag, pt.sparts, pt.spb = int(pt.in[1]), pt.parts, pt.pbytes
	pt.hs = true
	if w := pt.w; w.active && !w.done && pt.parts == 0 {
		e.ptEnd(pt, nil) // nothing to send
	} else if w.active && !w.done {
		for i, m := range pt.marks {
			if m && !w.done {
				e.ptSendPart(pt, i)
			}
		}
	}
}

func (e *engine) ptSendPart(pt *partReq, i int) {
	e.ptSend(pt, i, unsafe.Add(pt.buf, i*pt.pbytes), pt.pbytes, pt.dataTag+i)
}

// ptFree is Free of the whole: a handshake receive still posted is
// withdrawn, and what is still under way is ignored when it completes.
func (e *engine) ptFree(w *request) {
	pt := w.pt
	w.pt = nil
	pt.freed = true
	if r := pt.hsReq; r != nil && r.list == &pt.c.posted {
		pt.c.posted.remove(r)
		e.complete(r, nil) // recycled through ptDone, which ignores it
	}
	pt.hsReq = nil
}

// partOf validates h as a partitioned request of the given side that is
// active, and takes the engine lock (held on success only).
func partOf(h *Request, send bool, op string) (*request, *partReq, error) {
	r, err := h.enter(op)
	if err != nil {
		return nil, nil, err
	}
	pt := r.pt
	switch {
	case pt == nil || pt.send != send:
		r.e.unlock()
		kind := "receive"
		if send {
			kind = "send"
		}
		return nil, nil, newErr(ErrRequest, op, -1, "not a partitioned %s request", kind)
	case !r.active && (send || pt.rounds == 0):
		r.e.unlock()
		return nil, nil, newErr(ErrRequest, op, -1, "partitioned request is not active: Start it first")
	}
	return r, pt, nil
}

// Pready marks partition p of a started partitioned send ready
// (MPI_Pready): it is sent now if the receiver's side is known, else as
// soon as it is. Each partition is marked once per round.
func Pready(h *Request, p int) error {
	r, pt, err := partOf(h, true, "Pready")
	if err != nil {
		return err
	}
	defer r.e.unlock()
	if err := pt.checkMark(p, "Pready"); err != nil {
		return err
	}
	r.e.ptMark(pt, p)
	return nil
}

// PreadyRange marks partitions lo through hi (inclusive) ready
// (MPI_Pready_range).
func PreadyRange(h *Request, lo, hi int) error {
	r, pt, err := partOf(h, true, "PreadyRange")
	if err != nil {
		return err
	}
	defer r.e.unlock()
	if lo > hi {
		return newErr(ErrArg, "PreadyRange", -1, "partition range %d..%d is empty", lo, hi)
	}
	for p := lo; p <= hi; p++ {
		if err := pt.checkMark(p, "PreadyRange"); err != nil {
			return err
		}
	}
	for p := lo; p <= hi; p++ {
		r.e.ptMark(pt, p)
	}
	return nil
}

// PreadyList marks the listed partitions ready (MPI_Pready_list).
func PreadyList(h *Request, ps []int) error {
	r, pt, err := partOf(h, true, "PreadyList")
	if err != nil {
		return err
	}
	defer r.e.unlock()
	for i, p := range ps {
		if err := pt.checkMark(p, "PreadyList"); err != nil {
			return err
		}
		for _, q := range ps[:i] {
			if q == p {
				return newErr(ErrArg, "PreadyList", -1, "partition %d listed twice", p)
			}
		}
	}
	for _, p := range ps {
		r.e.ptMark(pt, p)
	}
	return nil
}

func (pt *partReq) checkMark(p int, op string) error {
	if p < 0 || p >= pt.parts {
		return newErr(ErrArg, op, -1, "partition %d of %d", p, pt.parts)
	}
	if pt.marks[p] {
		return newErr(ErrArg, op, -1, "partition %d is already ready in this round", p)
	}
	return nil
}

func (e *engine) ptMark(pt *partReq, p int) {
	pt.marks[p] = true
	if pt.peer == ProcNull || pt.w.done {
		return // nothing to send, or the round already failed
	}
	if pt.hs {
		e.ptSendPart(pt, p)
	}
}

// Parrived reports whether partition p of a started partitioned receive
// has arrived (MPI_Parrived), making progress once. After the round
// completed (and before the next Start) every partition has, unless the
// round failed. A failed
// sender or a revoked communicator is reported as an error here as at
// Wait.
func Parrived(h *Request, p int) (bool, error) {
	r, pt, err := partOf(h, false, "Parrived")
	if err != nil {
		return false, err
	}
	e := r.e
	defer e.unlock()
	if p < 0 || p >= pt.parts {
		return false, newErr(ErrArg, "Parrived", -1, "partition %d of %d", p, pt.parts)
	}
	if !r.active {
		return r.st.Err == nil, r.st.Err // the last round is complete
	}
	if !r.done {
		e.progress()
	}
	switch {
	case r.done:
		return r.st.Err == nil, r.st.Err
	case !pt.hs || !pt.posted || pt.pbytes == 0:
		return false, nil
	}
	lo := p * pt.pbytes / pt.spb
	hi := ((p+1)*pt.pbytes - 1) / pt.spb
	for i := lo; i <= hi; i++ {
		if !pt.marks[i] {
			return false, nil
		}
	}
	return true, nil
}
