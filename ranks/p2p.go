package ranks

import (
	"unsafe"

	"github.com/shmpi/shmpi/internal/job"
)

// Point-to-point operations. Buffers are slices of any plain element type
// T (numbers, bool, and arrays and structs of them); []byte always works.
// Ranks are ranks of the communicator; tags are 0..TagUB. Messages from
// one sender on one communicator are matched in the order they were sent.
// A nil or empty slice is a message of zero elements.

func argsOf[T any](buf []T, op string) (unsafe.Pointer, int, int, error) {
	sz, err := elemSize[T]()
	if err != nil {
		if e, ok := err.(*Error); ok {
			return nil, 0, 0, &Error{Class: e.Class, Op: op, Rank: -1, Detail: e.Detail}
		}
		return nil, 0, 0, err
	}
	p, n := bytesOf(buf, sz)
	return p, n, sz, nil
}

// maxMsgBytes bounds a message: no buffer can be larger than the user
// half of a 64-bit address space (2^47 bytes on amd64 and arm64).
const maxMsgBytes = 1 << 47

func rawArgs(p unsafe.Pointer, count, elemSize int, op string) (int, error) {
	switch {
	case count < 0:
		return 0, newErr(ErrCount, op, -1, "negative count %d", count)
	case elemSize <= 0:
		return 0, newErr(ErrCount, op, -1, "element size %d", elemSize)
	case count > 0 && elemSize > maxMsgBytes/count:
		// Checked by division: count*elemSize may overflow an int.
		return 0, newErr(ErrCount, op, -1, "%d elements of %d bytes exceed %d bytes", count, elemSize, maxMsgBytes)
	case p == nil && count > 0:
		return 0, newErr(ErrBuffer, op, -1, "nil buffer with count %d", count)
	}
	return count * elemSize, nil
}

// checkPeer validates a destination (send) or source (receive) rank and a
// tag, under the engine lock. The common case is a few compares, inlined;
// the slow half builds the error.
func (c *Comm) checkPeer(peer, tag int, recv bool, op string) error {
	if c.plainPeer(peer, tag) {
		return nil
	}
	return c.checkPeerSlow(peer, tag, recv, op)
}

// plainPeer: c usable, peer an ordinary rank of c, tag an ordinary tag.
func (c *Comm) plainPeer(peer, tag int) bool {
	return !c.e.closed && !c.unusable && uint(peer) < uint(c.size) && uint(tag) <= TagUB
}

//go:noinline
func (c *Comm) checkPeerSlow(peer, tag int, recv bool, op string) error {
	if err := c.live(op); err != nil {
		return err
	}
	if peer != ProcNull && (peer < 0 || peer >= c.size) && !(recv && peer == AnySource) {
		return newErr(ErrRank, op, -1, "rank %d in a communicator of %d", peer, c.size)
	}
	if (tag < 0 || tag > TagUB) && !(recv && tag == AnyTag) {
		return newErr(ErrTag, op, -1, "tag %d", tag)
	}
	return nil
}

func nilComm(op string) error { return newErr(ErrComm, op, -1, "nil communicator") }

// newOp builds a request under the engine lock.
func (c *Comm) newOp(r *request, send, sync bool, p unsafe.Pointer, n, esize, peer, tag int, op string) {
	r.c, r.op, r.send, r.sync = c, op, send, sync
	r.pull = send && c.e.pullSends > 0
	r.buf, r.nbytes, r.esize, r.peer, r.tag = p, n, esize, peer, tag
	r.anySrc = !send && peer == AnySource
	r.wpeer = -1
	if peer >= 0 {
		r.wpeer = c.group[peer]
	}
	r.persistent, r.active = false, false
	r.reset()
}

// send is the blocking send shared by Send, Ssend and SendPtr. A small
// standard-mode send takes the fast path; everything else sendSlow.
func (c *Comm) send(p unsafe.Pointer, n, esize, dest, tag int, sync bool, op string) error {
	if c == nil {
		return nilComm(op)
	}
	e := c.e
	e.lock()
	if !c.plainPeer(dest, tag) {
		if err := c.checkPeerSlow(dest, tag, false, op); err != nil {
			e.unlock()
			return err
		}
	}
	if !sync && n <= inlineMax && dest >= 0 {
		if w := c.group[dest]; e.sendInline(c, w, p, n, tag) {
			// Orders the publish before the doorbell load. The sleep
			// protocol would allow a plain unlock (engine.fenceSends),
			// but a blocking send is waited for: the fence pushes the
			// message out now, and 8-byte osu_latency was 6 ns faster
			// with it (2026-11-25).
			e.unlockFence()
			e.dbs[w].Ring()
			return nil
		}
	}
	return c.sendSlow(p, n, esize, dest, tag, sync, op)
}

// sendSlow is the general blocking send; the engine lock is held on entry
// and released on return.
//
//go:noinline
func (c *Comm) sendSlow(p unsafe.Pointer, n, esize, dest, tag int, sync bool, op string) error {
	e := c.e
	r := e.getReq()
	c.newOp(r, true, sync, p, n, esize, dest, tag, op)
	e.startSend(r)
	code := job.OpSend
	if sync {
		code = job.OpSsend
	}
	if !r.done {
		e.block(func() bool { return r.done }, code, dest, tag, c.ctx, r.wpeer)
	}
	err := r.st.Err
	e.putReq(r)
	e.unlock()
	return err
}

// recv is the blocking receive shared by Recv and RecvPtr. When nothing
// else is pending it polls the inbox itself (recvFast); otherwise, or if
// that gives up, recvSlow posts a request and runs the progress engine.
func (c *Comm) recv(p unsafe.Pointer, n, esize, src, tag int, op string, st *Status) error {
	if c == nil {
		return nilComm(op)
	}
	e := c.e
	e.lock()
	if src != AnySource || tag != AnyTag {
		if !c.plainPeer(src, tag) {
			if err := c.checkPeerSlow(src, tag, true, op); err != nil {
				e.unlock()
				return err
			}
		}
	} else if c.e.closed || c.unusable {
		e.unlock()
		return c.live(op)
	}
	if src != ProcNull && e.quiet(c) && (src == AnySource || !e.gone[c.group[src]]) {
		if e.recvFast(c, p, n, esize, src, tag, st) {
			e.unlock()
			return st.Err
		}
	}
	return c.recvSlow(p, n, esize, src, tag, op, st)
}

// recvSlow is the general blocking receive; the engine lock is held on
// entry and released on return.
//
//go:noinline
func (c *Comm) recvSlow(p unsafe.Pointer, n, esize, src, tag int, op string, st *Status) error {
	e := c.e
	r := e.getReq()
	c.newOp(r, false, false, p, n, esize, src, tag, op)
	e.startRecv(r)
	if !r.done {
		failedPending := false
		rec := job.OpRecv
		if c.serving && src == AnySource && tag == c.servingTag {
			rec = job.OpNone // not what the program waits in
		}
		e.block(func() bool {
			if r.done {
				return true
			}
			// Only while unmatched: a receive matched to a live sender
			// completes normally, whoever else fails (spec 15.2.2).
			failedPending = r.anySrc && r.unmatched() && e.drained && c.unacked()
			return failedPending
		}, rec, src, tag, c.ctx, r.wpeer)
		if !r.done && failedPending {
			// A blocking AnySource receive reports the failure and is
			// withdrawn (MPI_ERR_PROC_FAILED).
			r.unlink()
			e.complete(r, &Error{Class: ErrProcFailed, Op: op, Rank: -1, Failed: c.failedRanks(len(e.failedOrder)),
				Detail: "a potential sender failed (AnySource receive); acknowledge with FailureAck"})
		}
	}
	*st = r.st
	e.putReq(r)
	e.unlock()
	return st.Err
}

// isend starts a nonblocking send (or creates a persistent one).
func (c *Comm) isend(p unsafe.Pointer, n, esize, dest, tag int, sync, persistent bool, op string) (*Request, error) {
	if c == nil {
		return nil, nilComm(op)
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.checkPeer(dest, tag, false, op); err != nil {
		return nil, err
	}
	if !sync && !persistent && n <= inlineMax && dest >= 0 {
		// As send's fast path: the message is in the inbox when this
		// returns, so the request is complete from the start.
		e.refresh() // as startSend does: a revocation is seen here
		if w := c.group[dest]; !c.revoked && e.sendInline(c, w, p, n, tag) {
			if e.fenceSends.Load() {
				e.fenceWord.Add(0) // the publish before the doorbell's load
			}
			e.dbs[w].Ring()
			return e.sentHandle(), nil
		}
	}
	r, h := e.newRequest()
	c.newOp(r, true, sync, p, n, esize, dest, tag, op)
	r.persistent = persistent
	if !persistent {
		e.startSend(r)
	} else {
		c.holdFor(r)
	}
	return h, nil
}

// holdFor keeps c's resources for persistent request r until r is
// freed: MPI lets a persistent request outlive a Free of its
// communicator and start again after it (the communicator is
// deallocated when nothing refers to it any more).
func (c *Comm) holdFor(r *request) {
	c.holds.Add(1)
	r.freeFn = c.unhold
}

func (c *Comm) irecv(p unsafe.Pointer, n, esize, src, tag int, persistent bool, op string) (*Request, error) {
	if c == nil {
		return nil, nilComm(op)
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.checkPeer(src, tag, true, op); err != nil {
		return nil, err
	}
	r, h := e.newRequest()
	c.newOp(r, false, false, p, n, esize, src, tag, op)
	r.persistent = persistent
	if !persistent {
		e.startRecv(r)
	} else {
		c.holdFor(r)
	}
	return h, nil
}

// Send sends buf to rank dest with tag. It returns once buf may be
// reused: small messages are buffered, large ones wait for the receiver.
func Send[T any](c *Comm, buf []T, dest, tag int) error {
	p, n, sz, err := argsOf(buf, "Send")
	if err != nil {
		return err
	}
	return c.send(p, n, sz, dest, tag, false, "Send")
}

// Ssend sends buf and returns only once a matching receive has started.
func Ssend[T any](c *Comm, buf []T, dest, tag int) error {
	p, n, sz, err := argsOf(buf, "Ssend")
	if err != nil {
		return err
	}
	return c.send(p, n, sz, dest, tag, true, "Ssend")
}

// Recv receives a message from rank src (or AnySource) with tag (or
// AnyTag) into buf. A longer message is truncated: buf gets its first
// len(buf) elements and the error is ErrTruncate.
func Recv[T any](c *Comm, buf []T, src, tag int) (st Status, err error) {
	p, n, sz, err := argsOf(buf, "Recv")
	if err != nil {
		return Status{}, err
	}
	err = c.recv(p, n, sz, src, tag, "Recv", &st)
	return st, err
}

// Isend starts a send and returns at once. buf must not change until the
// request completes. Failures are reported at completion, never here.
func Isend[T any](c *Comm, buf []T, dest, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "Isend")
	if err != nil {
		return nil, err
	}
	return c.isend(p, n, sz, dest, tag, false, false, "Isend")
}

// Issend starts a synchronous send.
func Issend[T any](c *Comm, buf []T, dest, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "Issend")
	if err != nil {
		return nil, err
	}
	return c.isend(p, n, sz, dest, tag, true, false, "Issend")
}

// Irecv starts a receive and returns at once.
func Irecv[T any](c *Comm, buf []T, src, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "Irecv")
	if err != nil {
		return nil, err
	}
	return c.irecv(p, n, sz, src, tag, false, "Irecv")
}

// SendInit creates a persistent send; Start begins each instance. A
// persistent request keeps c's resources until it is freed, so it may
// start after c.Free (as MPI allows); so do the other Init forms.
func SendInit[T any](c *Comm, buf []T, dest, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "SendInit")
	if err != nil {
		return nil, err
	}
	return c.isend(p, n, sz, dest, tag, false, true, "SendInit")
}

// SsendInit creates a persistent synchronous send.
func SsendInit[T any](c *Comm, buf []T, dest, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "SsendInit")
	if err != nil {
		return nil, err
	}
	return c.isend(p, n, sz, dest, tag, true, true, "SsendInit")
}

// RecvInit creates a persistent receive.
func RecvInit[T any](c *Comm, buf []T, src, tag int) (*Request, error) {
	p, n, sz, err := argsOf(buf, "RecvInit")
	if err != nil {
		return nil, err
	}
	return c.irecv(p, n, sz, src, tag, true, "RecvInit")
}

// SendPtr, RecvPtr, IsendPtr and IrecvPtr take raw memory, for callers
// that hold buffers outside Go's heap (mmap'd or C memory) or bind other
// languages. count is in elements of elemSize bytes.

// SendPtr is Send for raw memory.
func SendPtr(c *Comm, p unsafe.Pointer, count, elemSize, dest, tag int) error {
	n, err := rawArgs(p, count, elemSize, "Send")
	if err != nil {
		return err
	}
	return c.send(p, n, elemSize, dest, tag, false, "Send")
}

// RecvPtr is Recv for raw memory.
func RecvPtr(c *Comm, p unsafe.Pointer, count, elemSize, src, tag int) (Status, error) {
	n, err := rawArgs(p, count, elemSize, "Recv")
	if err != nil {
		return Status{}, err
	}
	var st Status
	err = c.recv(p, n, elemSize, src, tag, "Recv", &st)
	return st, err
}

// IsendPtr is Isend for raw memory.
func IsendPtr(c *Comm, p unsafe.Pointer, count, elemSize, dest, tag int) (*Request, error) {
	n, err := rawArgs(p, count, elemSize, "Isend")
	if err != nil {
		return nil, err
	}
	return c.isend(p, n, elemSize, dest, tag, false, false, "Isend")
}

// IrecvPtr is Irecv for raw memory.
func IrecvPtr(c *Comm, p unsafe.Pointer, count, elemSize, src, tag int) (*Request, error) {
	n, err := rawArgs(p, count, elemSize, "Irecv")
	if err != nil {
		return nil, err
	}
	return c.irecv(p, n, elemSize, src, tag, false, "Irecv")
}

// Probe blocks until a message from src (or AnySource) with tag (or
// AnyTag) can be received, and describes it without receiving it.
func (c *Comm) Probe(src, tag int) (Status, error) {
	st, _, err := c.probe(src, tag, true, "Probe")
	return st, err
}

// Iprobe reports whether such a message can be received now.
func (c *Comm) Iprobe(src, tag int) (Status, bool, error) {
	return c.probe(src, tag, false, "Iprobe")
}

func (c *Comm) probe(src, tag int, block bool, op string) (Status, bool, error) {
	if c == nil {
		return Status{}, false, nilComm(op)
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.checkPeer(src, tag, true, op); err != nil {
		return Status{}, false, err
	}
	if src == ProcNull {
		return Status{Source: ProcNull, Tag: AnyTag}, true, nil
	}
	m, err := c.findUnexp(src, tag, block, op)
	if m == nil {
		return Status{}, false, err
	}
	return c.probeStatus(m), true, nil
}

// findUnexp returns the first unexpected message on c from src (a rank
// of c, or AnySource) with tag (or AnyTag), leaving it where it is. If
// block, it waits for one; else it makes progress once. Without a
// message it returns why none can come: c was revoked, the named source
// ended, or (AnySource) a member failed unacknowledged or every other
// member ended; or nil (not blocking: none yet). Under the engine lock.
func (c *Comm) findUnexp(src, tag int, block bool, op string) (*umsg, error) {
	e := c.e
	anySrc := src == AnySource
	w := -1
	if !anySrc {
		w = c.group[src]
	}
	var m *umsg
	var perr error
	pred := func() bool {
		if m = c.matchUnexp(w, tag, anySrc); m != nil {
			return true
		}
		if c.revoked {
			perr = revokedErr(c, op)
			return true
		}
		if !e.drained {
			return false
		}
		switch {
		case !anySrc && e.gone[w]:
			perr = e.goneErr(c, w, op)
		case anySrc && c.unacked():
			perr = &Error{Class: ErrProcFailed, Op: op, Rank: -1, Failed: c.failedRanks(len(e.failedOrder))}
		case anySrc && c.noSender():
			perr = newErr(ErrPeerFinalized, op, -1, "every other member has ended")
		}
		return perr != nil
	}
	if block {
		e.block(pred, job.OpProbe, src, tag, c.ctx, w)
	} else {
		e.progress()
		if !pred() {
			e.kickIdle()
		}
	}
	if m != nil {
		return m, nil
	}
	return nil, perr
}

// probeStatus describes unexpected message m on c (Count in bytes: a
// probe knows no element type; see Count).
func (c *Comm) probeStatus(m *umsg) Status {
	return Status{Source: int(c.toComm[m.src]), Tag: m.tag, Bytes: m.n, Count: m.n}
}
