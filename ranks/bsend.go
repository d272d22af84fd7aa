package ranks

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/shmpi/shmpi/internal/job"
)

// Buffered mode: MPI_Bsend, MPI_Ibsend, MPI_Bsend_init and
// MPI_Buffer_attach/detach (per process, and per communicator as in
// MPI 4.1).
//
// A buffered send completes as soon as its data no longer need the
// caller's buffer, whatever the receiver does. An eager message (inline
// in the descriptor, or in a chunk: up to the eager limit) that finds
// room in the receiver's inbox is copied out at once, as a standard send
// is, and needs no space. A message that has to wait is copied into the
// attached buffer and sent from there: a rendezvous (the receiver reads
// it where it lies, once it matches), or an eager message queued because
// the inbox or the chunks are full. The copy's send is an internal
// request with no handle (an orphan); when it completes, recycleOrphan
// frees its space (bsendDone). A message that does not fit fails with
// ErrBuffer and is not sent.
//
// BufferDetach waits until every message in the buffer has been handed
// over (the receiver has copied a rendezvous; a queued eager message is
// in its inbox), and Finalize waits as a detach does. A buffered send to
// a rank that fails, or on a communicator revoked meanwhile, completes
// with that error like any send, so neither waits forever; the detach
// reports the first such error, since no call was left to return it.

// BsendOverhead is the space each buffered message takes in the attached
// buffer beyond its own bytes (MPI_BSEND_OVERHEAD): attach at least the
// sum, over the messages that may be pending at once, of their size plus
// BsendOverhead.
const BsendOverhead = 64

// bsendPool is an attached buffer and the messages in it.
type bsendPool struct {
	buf  []byte
	segs []bseg // the space messages hold, in offset order
	lost int    // buffered sends that failed after their call returned
	err  error  // the first of them
}

// bseg is the space one message holds: n bytes from off (its size plus
// BsendOverhead), with the data on a cache-line boundary inside.
type bseg struct {
	off, n int
	r      *request
}

// hold moves the data of send r into b, if they fit: r then sends from
// there. Under the engine lock.
func (e *engine) hold(b *bsendPool, r *request) bool {
	need := r.nbytes + BsendOverhead
	off, at := 0, 0
	for ; at < len(b.segs); at++ {
		if b.segs[at].off-off >= need {
			break
		}
		off = b.segs[at].off + b.segs[at].n
	}
	if len(b.buf)-off < need {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b.buf)))
	start := off + int(-(base+uintptr(off))&63) // within need: BsendOverhead >= 63
	dst := unsafe.Pointer(&b.buf[start])
	memmove(dst, r.buf, r.nbytes)
	r.buf, r.bpool = dst, b
	b.segs = append(b.segs, bseg{})
	copy(b.segs[at+1:], b.segs[at:])
	b.segs[at] = bseg{off, need, r}
	e.p2p.inflight++
	return true
}

// bsendDone frees the space of buffered send r, which completed (called
// by recycleOrphan). A failure after its call returned is kept for the
// detach.
func (e *engine) bsendDone(r *request) {
	b := r.bpool
	r.bpool = nil
	for i := range b.segs {
		if b.segs[i].r == r {
			b.segs = append(b.segs[:i], b.segs[i+1:]...)
			break
		}
	}
	e.p2p.inflight--
	if r.orphan && r.st.Err != nil {
		b.lost++
		if b.err == nil {
			b.err = r.st.Err
		}
	}
}

// poolFor is the buffer a buffered send on c uses: c's own, else the
// process's (nil if neither is attached).
func (e *engine) poolFor(c *Comm) *bsendPool {
	if len(e.p2p.commBufs) > 0 {
		if b := e.p2p.commBufs[c]; b != nil {
			return b
		}
	}
	return e.p2p.buf
}

// bsend starts a buffered send of n bytes at p, under the engine lock,
// with dest and tag checked. bufErr (ErrBuffer) means nothing was sent;
// otherwise the message is on its way, or opErr says why it never will
// be (a known failure of dest).
func (c *Comm) bsend(p unsafe.Pointer, n, esize, dest, tag int, op string) (bufErr, opErr error) {
	e := c.e
	if dest == ProcNull {
		return nil, nil
	}
	r := e.reqState()
	c.newOp(r, true, false, p, n, esize, dest, tag, op)
	b := e.poolFor(c)
	if n > e.eager && r.wpeer != e.me {
		// A rendezvous: the receiver reads the data where they lie,
		// whenever it matches. Copy them first.
		if b == nil || !e.hold(b, r) {
			e.progress() // buffered sends that completed free their space
			if b == nil || !e.hold(b, r) {
				e.recycle(r) // never started: nothing to free
				return bufErrOf(b, n, op), nil
			}
		}
		e.startSend(r)
	} else {
		e.startSend(r)
		if !r.done && r.chunk < 0 && n > 0 {
			// Queued with the data still in the caller's buffer (a
			// chunk, once taken, holds a copy).
			if b == nil || !e.hold(b, r) {
				e.progress()
				if !r.done && r.chunk < 0 && (b == nil || !e.hold(b, r)) {
					e.unqueue(r)
					e.recycle(r)
					return bufErrOf(b, n, op), nil
				}
			}
		}
	}
	if r.done {
		opErr = r.st.Err
	}
	e.releaseInternal(r) // recycled, and its space freed, once it completes
	return nil, opErr
}

func bufErrOf(b *bsendPool, n int, op string) error {
	if b == nil {
		return newErr(ErrBuffer, op, -1, "no buffer attached for a message of %d bytes that must wait (BufferAttach)", n)
	}
	used := 0
	for _, s := range b.segs {
		used += s.n
	}
	return newErr(ErrBuffer, op, -1, "a message of %d bytes (+%d overhead) does not fit: %d of %d bytes of the attached buffer in use",
		n, BsendOverhead, used, len(b.buf))
}

// unqueue takes send r, the last one queued for its destination, back
// off the queue.
func (e *engine) unqueue(r *request) {
	w := r.wpeer
	e.sendq[w].remove(r)
	if e.sendq[w].n > 0 {
		return
	}
	for i, q := range e.queued {
		if q == w {
			e.queued = append(e.queued[:i], e.queued[i+1:]...)
			return
		}
	}
}

// startBuffered starts an instance of persistent buffered send r
// (BsendInit): it completes at once, its message buffered or sent. An
// ErrBuffer is Start's error; a failure is the request's.
func (e *engine) startBuffered(r *request) error {
	bufErr, opErr := r.c.bsend(r.buf, r.nbytes, r.esize, r.peer, r.tag, r.op)
	if bufErr != nil {
		r.active = false
		return bufErr
	}
	e.complete(r, opErr)
	return nil
}

// Bsend sends buf in buffered mode (MPI_Bsend): it returns as soon as buf
// may be reused, whatever the receiver does. A message that cannot be
// handed over at once is copied into the attached buffer (BufferAttach);
// if it does not fit, Bsend returns ErrBuffer and sends nothing. An
// eager message that finds room in the receiver's inbox needs no space,
// but a portable program attaches room for every message it may have
// pending (size plus BsendOverhead each).
func Bsend[T any](c *Comm, buf []T, dest, tag int) error {
	p, n, sz, err := argsOf(buf, "Bsend")
	if err != nil {
		return err
	}
	return c.bsendBlocking(p, n, sz, dest, tag, "Bsend")
}

// Ibsend is Bsend returning a request (MPI_Ibsend). The request is
// complete when Ibsend returns; a failure of dest already known is
// reported by its completion. ErrBuffer is returned at once.
func Ibsend[T any](c *Comm, buf []T, dest, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "Ibsend")
	if err != nil {
		return nil, err
	}
	return c.ibsend(p, n, sz, dest, tag, "Ibsend")
}

// BsendInit creates a persistent buffered send (MPI_Bsend_init): each
// Start buffers (or sends) the message at once, as Ibsend does.
func BsendInit[T any](c *Comm, buf []T, dest, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "BsendInit")
	if err != nil {
		return nil, err
	}
	h, err := c.isend(p, n, sz, dest, tag, false, true, "BsendInit")
	if err == nil {
		c.e.lock()
		h.r.bmode = true
		c.e.unlock()
	}
	return h, err
}

// BsendPtr is Bsend for raw memory (see SendPtr).
func BsendPtr(c *Comm, p unsafe.Pointer, count, elemSize, dest, tag int) error {
	n, err := rawArgs(p, count, elemSize, "Bsend")
	if err != nil {
		return err
	}
	return c.bsendBlocking(p, n, elemSize, dest, tag, "Bsend")
}

// IbsendPtr is Ibsend for raw memory.
func IbsendPtr(c *Comm, p unsafe.Pointer, count, elemSize, dest, tag int) (*Request, error) {
	n, err := rawArgs(p, count, elemSize, "Ibsend")
	if err != nil {
		return nil, err
	}
	return c.ibsend(p, n, elemSize, dest, tag, "Ibsend")
}

func (c *Comm) bsendBlocking(p unsafe.Pointer, n, esize, dest, tag int, op string) error {
	if c == nil {
		return nilComm(op)
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.checkPeer(dest, tag, false, op); err != nil {
		return err
	}
	bufErr, opErr := c.bsend(p, n, esize, dest, tag, op)
	if bufErr != nil {
		return bufErr
	}
	return opErr
}

func (c *Comm) ibsend(p unsafe.Pointer, n, esize, dest, tag int, op string) (*Request, error) {
	if c == nil {
		return nil, nilComm(op)
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.checkPeer(dest, tag, false, op); err != nil {
		return nil, err
	}
	bufErr, opErr := c.bsend(p, n, esize, dest, tag, op)
	if bufErr != nil {
		return nil, bufErr
	}
	r, h := e.newRequest()
	c.newOp(r, true, false, p, n, esize, dest, tag, op)
	e.complete(r, opErr)
	return h, nil
}

// BufferAttach gives the process a buffer for buffered sends
// (MPI_Buffer_attach), used by communicators without one of their own.
// The buffer belongs to shmpi until BufferDetach returns it. There is one
// at a time: attaching a second returns ErrBuffer.
func (w *World) BufferAttach(buf []byte) error {
	e := w.e
	e.lock()
	defer e.unlock()
	if e.closed {
		return newErr(ErrFinalized, "BufferAttach", -1, "")
	}
	if e.p2p.buf != nil {
		return newErr(ErrBuffer, "BufferAttach", -1, "a buffer is already attached; detach it first")
	}
	e.p2p.buf = &bsendPool{buf: buf}
	return nil
}

// BufferDetach waits until every message buffered in the process's
// buffer has been handed over to its receiver, and returns the buffer
// (MPI_Buffer_detach). A rendezvous message is handed over when its
// receiver has copied it, so a detach waits for the matching receives.
// Messages to ranks that failed, or on communicators revoked meanwhile,
// are not delivered: the detach then still returns the buffer, with the
// first such error (ErrProcFailed, ErrRevoked...) and how many there
// were. Without a buffer it returns ErrBuffer.
func (w *World) BufferDetach() ([]byte, error) {
	e := w.e
	e.lock()
	defer e.unlock()
	if e.closed {
		return nil, newErr(ErrFinalized, "BufferDetach", -1, "")
	}
	b := e.p2p.buf
	if b == nil {
		return nil, newErr(ErrBuffer, "BufferDetach", -1, "no buffer attached")
	}
	e.p2p.buf = nil // buffered sends from now on find none (or a new one)
	return b.buf, e.drainPool(b, "BufferDetach")
}

// BufferAttach gives c a buffer of its own for buffered sends on it (MPI
// 4.1's MPI_Comm_attach_buffer); they use it instead of the process's.
// Detach it with c.BufferDetach, which works on a freed communicator too.
func (c *Comm) BufferAttach(buf []byte) error {
	if c == nil {
		return nilComm("Comm.BufferAttach")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.usable("Comm.BufferAttach"); err != nil {
		return err
	}
	if e.p2p.commBufs[c] != nil {
		return newErr(ErrBuffer, "Comm.BufferAttach", -1, "communicator %s already has a buffer; detach it first", c.label())
	}
	if e.p2p.commBufs == nil {
		e.p2p.commBufs = map[*Comm]*bsendPool{}
	}
	e.p2p.commBufs[c] = &bsendPool{buf: buf}
	return nil
}

// BufferDetach waits until every message buffered in c's buffer has
// been handed over, and returns the buffer (MPI_Comm_detach_buffer), as
// World.BufferDetach does.
func (c *Comm) BufferDetach() ([]byte, error) {
	if c == nil {
		return nil, nilComm("Comm.BufferDetach")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if e.closed {
		return nil, newErr(ErrFinalized, "Comm.BufferDetach", -1, "")
	}
	b := e.p2p.commBufs[c]
	if b == nil {
		return nil, newErr(ErrBuffer, "Comm.BufferDetach", -1, "communicator %s has no buffer attached", c.label())
	}
	delete(e.p2p.commBufs, c)
	return b.buf, e.drainPool(b, "Comm.BufferDetach")
}

// drainPool waits until b holds no message, under the engine lock, and
// reports the sends from it that failed after their call returned.
func (e *engine) drainPool(b *bsendPool, op string) error {
	if len(b.segs) > 0 {
		e.blockOn(func() bool { return len(b.segs) == 0 }, job.OpColl, op, ProcNull, AnyTag, 0, -1, nil, nil)
	}
	if b.lost == 0 {
		return nil
	}
	first := b.err
	out := &Error{Class: ErrOther, Op: op, Rank: -1,
		Detail: fmt.Sprintf("%d buffered message(s) not delivered; the first: %v", b.lost, first)}
	var fe *Error
	if errors.As(first, &fe) {
		out.Class, out.Rank, out.Failed = fe.Class, fe.Rank, fe.Failed
	}
	return out
}

// flushBuffered waits until every buffered message of this process has
// been handed over: Finalize's implicit detach.
func (e *engine) flushBuffered() {
	if e.p2p.inflight > 0 {
		e.blockOn(func() bool { return e.p2p.inflight == 0 }, job.OpColl, "Finalize", ProcNull, AnyTag, 0, -1, nil, nil)
	}
}
