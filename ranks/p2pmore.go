package ranks

import (
	"errors"
	"unsafe"
)

// The rest of the point-to-point modes and combinations: ready mode,
// the send-receive family (Sendrecv, SendrecvReplace and MPI 4.0's
// Isendrecv and IsendrecvReplace), and looking at a request without
// completing it (GetStatus).
//
// An Isendrecv is three requests: the user's (the whole, with parts
// set), which no list holds, and its two parts, internal requests
// without handles (orphans) whose pair points to the whole. A part that
// completes is recycled at once, through recycleOrphan, which calls
// partDone, which completes the whole with its last part. So the hot
// paths (complete, Wait) know nothing of it, except pendingFailure,
// which looks at the receive part (the whole's pair while it is
// pending).

// Rsend sends buf in ready mode (MPI_Rsend): the caller promises that
// the matching receive is already posted. shmpi gains nothing from the
// promise, so Rsend is Send; a message that finds no receive is kept
// for a later one rather than being an error, as MPI allows.
func Rsend[T any](c *Comm, buf []T, dest, tag int) error {
	p, n, sz, err := argsOf(buf, "Rsend")
	if err != nil {
		return err
	}
	return c.send(p, n, sz, dest, tag, false, "Rsend")
}

// Irsend starts a ready-mode send (MPI_Irsend): Isend, as Rsend is Send.
func Irsend[T any](c *Comm, buf []T, dest, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "Irsend")
	if err != nil {
		return nil, err
	}
	return c.isend(p, n, sz, dest, tag, false, false, "Irsend")
}

// RsendInit creates a persistent ready-mode send (MPI_Rsend_init): a
// persistent standard send.
func RsendInit[T any](c *Comm, buf []T, dest, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "RsendInit")
	if err != nil {
		return nil, err
	}
	return c.isend(p, n, sz, dest, tag, false, true, "RsendInit")
}

// Sendrecv sends sbuf to dest and receives into rbuf from src, without
// deadlock whatever the other side does first.
func Sendrecv[T, U any](c *Comm, sbuf []T, dest, stag int, rbuf []U, src, rtag int) (Status, error) {
	rp, rn, rsz, err := argsOf(rbuf, "Sendrecv")
	if err != nil {
		return Status{}, err
	}
	sp, sn, ssz, err := argsOf(sbuf, "Sendrecv")
	if err != nil {
		return Status{}, err
	}
	return c.sendrecv(sp, sn, ssz, dest, stag, rp, rn, rsz, src, rtag, "Sendrecv")
}

// SendrecvReplace sends buf to dest and receives into buf from src
// (MPI_Sendrecv_replace). The message sent is buf's content on entry;
// the one received may be no longer than buf (else ErrTruncate).
func SendrecvReplace[T any](c *Comm, buf []T, dest, stag, src, rtag int) (Status, error) {
	p, n, sz, err := argsOf(buf, "SendrecvReplace")
	if err != nil {
		return Status{}, err
	}
	return c.sendrecv(copyOut(p, n), n, sz, dest, stag, p, n, sz, src, rtag, "SendrecvReplace")
}

// copyOut returns a copy of n bytes at p: what a replacing send sends
// while the receive overwrites p.
func copyOut(p unsafe.Pointer, n int) unsafe.Pointer {
	if n == 0 {
		return p
	}
	b := make([]byte, n)
	memmove(unsafe.Pointer(&b[0]), p, n)
	return unsafe.Pointer(&b[0])
}

// sendrecv posts the receive, sends, and waits for the receive. A
// blocking call: an AnySource receive pending on an unacknowledged
// failure is withdrawn and reports ErrProcFailed (spec 15.2.2).
func (c *Comm) sendrecv(sp unsafe.Pointer, sn, ssz, dest, stag int, rp unsafe.Pointer, rn, rsz, src, rtag int, op string) (Status, error) {
	rr, err := c.irecv(rp, rn, rsz, src, rtag, false, op)
	if err != nil {
		return Status{}, err
	}
	if err := c.send(sp, sn, ssz, dest, stag, false, op); err != nil {
		rr.Cancel()
		rr.Wait()
		return Status{}, err
	}
	st, err := rr.Wait()
	var pe *Error
	if errors.Is(err, ErrProcFailedPending) && errors.As(err, &pe) {
		rr.Cancel()
		if st, err = rr.Wait(); st.Cancelled {
			return Status{}, &Error{Class: ErrProcFailed, Op: op, Rank: -1, Failed: pe.Failed,
				Detail: "a potential sender failed (AnySource receive); acknowledge with FailureAck"}
		}
	}
	return st, err
}

// Isendrecv starts a send of sbuf to dest and a receive into rbuf from
// src, and returns one request that completes when both have (MPI 4.0's
// MPI_Isendrecv). Its status is the receive's; its error the receive's,
// else the send's. Cancel withdraws the receive if it has not matched
// (the send goes on); the status then says Cancelled.
func Isendrecv[T, U any](c *Comm, sbuf []T, dest, stag int, rbuf []U, src, rtag int) (*Request, error) {
	rp, rn, rsz, err := argsOf(rbuf, "Isendrecv")
	if err != nil {
		return nil, err
	}
	sp, sn, ssz, err := argsOf(sbuf, "Isendrecv")
	if err != nil {
		return nil, err
	}
	return c.isendrecv(sp, sn, ssz, dest, stag, rp, rn, rsz, src, rtag, "Isendrecv")
}

// IsendrecvReplace is Isendrecv with one buffer, as SendrecvReplace
// (MPI_Isendrecv_replace): buf's content on entry is sent, and buf must
// not be touched until the request completes.
func IsendrecvReplace[T any](c *Comm, buf []T, dest, stag, src, rtag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "IsendrecvReplace")
	if err != nil {
		return nil, err
	}
	return c.isendrecv(copyOut(p, n), n, sz, dest, stag, p, n, sz, src, rtag, "IsendrecvReplace")
}

func (c *Comm) isendrecv(sp unsafe.Pointer, sn, ssz, dest, stag int, rp unsafe.Pointer, rn, rsz, src, rtag int, op string) (*Request, error) {
	if c == nil {
		return nil, nilComm(op)
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.checkPeer(dest, stag, false, op); err != nil {
		return nil, err
	}
	if err := c.checkPeer(src, rtag, true, op); err != nil {
		return nil, err
	}
	w, h := e.newRequest()
	c.newOp(w, false, false, rp, rn, rsz, src, rtag, op)
	w.anySrc = false // pendingFailure looks at the receive part
	w.parts = 2
	if dest < 0 || w.wpeer != c.group[dest] {
		w.wpeer = -1 // waits on two peers: no direct liveness word
	}
	rr, sr := e.reqState(), e.reqState()
	c.newOp(rr, false, false, rp, rn, rsz, src, rtag, op)
	c.newOp(sr, true, false, sp, sn, ssz, dest, stag, op)
	rr.pair, sr.pair, w.pair = w, w, rr
	e.startRecv(rr)
	e.startSend(sr)
	// Orphans from now on: each calls partDone when it completes (or
	// now, if it has).
	e.releaseInternal(rr)
	e.releaseInternal(sr)
	return h, nil
}

// partDone records that part p of an Isendrecv completed, and completes
// the whole with its last part. Called by recycleOrphan, under the
// engine lock.
func (e *engine) partDone(p *request) {
	w := p.pair
	p.pair = nil
	if p.send {
		if p.st.Err != nil && w.st.Err == nil {
			w.st.Err = p.st.Err
		}
	} else {
		serr := w.st.Err
		w.st = p.st
		if w.st.Err == nil {
			w.st.Err = serr
		}
		w.pair = nil
	}
	w.parts--
	if w.parts == 0 {
		e.complete(w, nil)
	}
}

// GetStatus reports whether the request has completed, and its status
// if so, without completing it (MPI_Request_get_status): the request
// stays valid, and a later Wait or Test returns the same status and
// frees it. It makes progress once. An inactive persistent request
// reports the empty status; a nonblocking AnySource receive pending on
// an unacknowledged failure reports ErrProcFailedPending, not done.
func (h *Request) GetStatus() (Status, bool, error) {
	r, err := h.enter("GetStatus")
	if err != nil {
		return Status{}, false, err
	}
	e := r.e
	defer e.unlock()
	if r.inactive() {
		return emptyStatus, true, nil
	}
	e.progress()
	if !r.done {
		e.kickIdle()
		if e.pendingFailure(r) {
			return Status{}, false, e.pendingErr(r, "GetStatus")
		}
		return Status{}, false, nil
	}
	return r.st, true, r.st.Err
}
