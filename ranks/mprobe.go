package ranks

import (
	"unsafe"

	"github.com/shmpi/shmpi/internal/job"
)

// Matched probes: MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv.
//
// Probe then Recv is racy when goroutines share a communicator: another
// goroutine's receive may take the probed message between the two calls.
// A matched probe takes the message out of matching at once: it leaves
// the communicator's unexpected list for the engine's held list
// (p2pState.held), where no receive or probe looks, and its *Message is
// the only way to receive it, once.
//
// A held message is what the unexpected list held: an eager or
// fragmented message's bytes, already copied here, or a rendezvous's
// handshake (slot and generation), whose data still lie in the sender's
// memory. So:
//   - a held eager message is received even if its sender died since;
//   - a held rendezvous whose sender has ended fails at Mrecv with
//     ErrProcFailed (ErrPeerFinalized): the data went with the sender;
//   - a synchronous sender learns of the match when the message is
//     received, as for any message received from the unexpected list;
//   - a revoke drops the held messages of its communicator as it drops
//     unexpected ones (dropHeld): their senders are told (a rendezvous or
//     synchronous sender completes with ErrRevoked), and their receive
//     returns ErrRevoked. A freed communicator's held messages can still
//     be received: they were matched before the free.

// p2pState is the engine's state for matched probes and buffered mode.
type p2pState struct {
	held     ilist[umsg]          // messages matched probes took, not yet received
	msgs     []Message            // where Message handles come from
	buf      *bsendPool           // the attached buffer (World.BufferAttach), or nil
	commBufs map[*Comm]*bsendPool // per-communicator buffers (Comm.BufferAttach)
	inflight int                  // buffered sends in flight, over every buffer
}

// Message is a message that Mprobe or Improbe matched and took out of
// matching (MPI_Message). Receive it with Mrecv or Imrecv, once: a
// second receive returns ErrRequest. A probe of ProcNull gives MPI's
// no-proc message, whose receive completes at once with source ProcNull,
// tag AnyTag and count 0.
type Message struct {
	c     *Comm
	m     *umsg // the held message, while state is msgHeld
	state uint8
	why   uint8 // msgDropped: why (rej*)
}

// Message states.
const (
	msgUsed    = iota // received, or the zero Message: spent
	msgHeld           // m is the message
	msgNoProc         // MPI_MESSAGE_NO_PROC
	msgDropped        // dropped unreceived (a revoke): its receive reports why
)

// msgBlock is how many Message handles are allocated at once.
const msgBlock = 128

func (e *engine) newMessage() *Message {
	if len(e.p2p.msgs) == 0 {
		e.p2p.msgs = make([]Message, msgBlock)
	}
	h := &e.p2p.msgs[0]
	e.p2p.msgs = e.p2p.msgs[1:]
	return h
}

// Mprobe blocks until a message from src (or AnySource) with tag (or
// AnyTag) can be received, and takes it out of matching (MPI_Mprobe): no
// other receive or probe, in any goroutine, can match it. Receive it
// with Mrecv or Imrecv. The status describes it (Count in bytes, as
// Probe's). Errors are Probe's: ErrProcFailed if src failed, or, for
// AnySource, if a member failed and the failure is not acknowledged.
func (c *Comm) Mprobe(src, tag int) (*Message, Status, error) {
	msg, st, _, err := c.mprobe(src, tag, true, "Mprobe")
	return msg, st, err
}

// Improbe is Mprobe without blocking (MPI_Improbe): ok reports whether it
// took a message.
func (c *Comm) Improbe(src, tag int) (msg *Message, st Status, ok bool, err error) {
	return c.mprobe(src, tag, false, "Improbe")
}

func (c *Comm) mprobe(src, tag int, block bool, op string) (*Message, Status, bool, error) {
	if c == nil {
		return nil, Status{}, false, nilComm(op)
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if err := c.checkPeer(src, tag, true, op); err != nil {
		return nil, Status{}, false, err
	}
	if src == ProcNull {
		return &Message{c: c, state: msgNoProc}, Status{Source: ProcNull, Tag: AnyTag}, true, nil
	}
	m, err := c.findUnexp(src, tag, block, op)
	if m == nil {
		return nil, Status{}, false, err
	}
	c.unexp.remove(m)
	e.p2p.held.push(m)
	h := e.newMessage()
	*h = Message{c: c, m: m, state: msgHeld}
	m.h = h
	return h, c.probeStatus(m), true, nil
}

// Mrecv receives msg into buf (MPI_Mrecv). A longer message is
// truncated: buf gets its first len(buf) elements and the error is
// ErrTruncate. A rendezvous message whose sender has failed since the
// probe returns ErrProcFailed; an eager one, already here, is received.
// If msg's communicator was revoked since the probe, ErrRevoked. msg is
// spent afterwards, whatever the outcome.
func Mrecv[T any](msg *Message, buf []T) (Status, error) {
	p, n, sz, err := argsOf(buf, "Mrecv")
	if err != nil {
		return Status{}, err
	}
	return msg.recv(p, n, sz, "Mrecv")
}

// Imrecv starts receiving msg into buf and returns at once (MPI_Imrecv).
// Failures are reported at completion; a nil, spent or revoked message
// at once. The request cannot be cancelled: the message is matched.
func Imrecv[T any](msg *Message, buf []T) (*Request, error) {
	p, n, sz, err := argsOf(buf, "Imrecv")
	if err != nil {
		return nil, err
	}
	return msg.irecv(p, n, sz, "Imrecv")
}

// MrecvPtr is Mrecv for raw memory (see SendPtr).
func MrecvPtr(msg *Message, p unsafe.Pointer, count, elemSize int) (Status, error) {
	n, err := rawArgs(p, count, elemSize, "Mrecv")
	if err != nil {
		return Status{}, err
	}
	return msg.recv(p, n, elemSize, "Mrecv")
}

// ImrecvPtr is Imrecv for raw memory.
func ImrecvPtr(msg *Message, p unsafe.Pointer, count, elemSize int) (*Request, error) {
	n, err := rawArgs(p, count, elemSize, "Imrecv")
	if err != nil {
		return nil, err
	}
	return msg.irecv(p, n, elemSize, "Imrecv")
}

func (h *Message) recv(p unsafe.Pointer, n, esize int, op string) (Status, error) {
	e, err := h.enter(op)
	if err != nil {
		return Status{}, err
	}
	defer e.unlock()
	r := e.getReq()
	h.start(r, p, n, esize, op)
	if !r.done {
		e.block(func() bool { return r.done }, job.OpRecv, r.peer, r.tag, r.c.ctx, r.wpeer)
	}
	st := r.st
	e.putReq(r)
	return st, st.Err
}

func (h *Message) irecv(p unsafe.Pointer, n, esize int, op string) (*Request, error) {
	e, err := h.enter(op)
	if err != nil {
		return nil, err
	}
	defer e.unlock()
	r, rh := e.newRequest()
	h.start(r, p, n, esize, op)
	return rh, nil
}

// enter takes the engine lock for a receive of h and checks that h can
// be received; on error the lock is not held.
func (h *Message) enter(op string) (*engine, error) {
	if h == nil || h.c == nil {
		return nil, newErr(ErrRequest, op, -1, "nil message")
	}
	e := h.c.e
	e.lock()
	if e.closed {
		e.unlock()
		return nil, newErr(ErrFinalized, op, -1, "")
	}
	e.refresh() // a revoke seen now drops the message (dropHeld)
	switch h.state {
	case msgHeld, msgNoProc:
		return e, nil
	case msgDropped:
		h.state = msgUsed
		err := refusedErr(h.c, op, -1, h.why)
		e.unlock()
		return nil, err
	}
	e.unlock()
	return nil, newErr(ErrRequest, op, -1, "message already received (a matched message is received once)")
}

// start receives h into r, under the engine lock: at once if the
// message is here, else by starting the rendezvous.
func (h *Message) start(r *request, p unsafe.Pointer, n, esize int, op string) {
	c := h.c
	e := c.e
	if h.state == msgNoProc {
		h.state = msgUsed
		c.newOp(r, false, false, p, n, esize, ProcNull, AnyTag, op)
		r.st = Status{Source: ProcNull, Tag: AnyTag}
		e.complete(r, nil)
		return
	}
	m := h.m
	h.m, h.state, m.h = nil, msgUsed, nil
	e.p2p.held.remove(m)
	c.newOp(r, false, false, p, n, esize, int(c.toComm[m.src]), m.tag, op)
	r.patientAt = 0
	if m.kind == kRndv && e.gone[m.src] && !e.lay.Remote(m.src) {
		// The data lay in the sender's memory, which went with it (a
		// rank of another node's lies in its proxy, which lives on).
		e.putUmsg(m)
		e.complete(r, e.goneErr(c, m.src, op))
		return
	}
	e.consume(r, m)
}

// dropHeld drops the messages that matched probes hold on c and that a
// revoke makes unreceivable: their senders are told why (dropUmsg), and
// their receives report it.
func (e *engine) dropHeld(c *Comm, why uint8) {
	for m := e.p2p.held.head; m != nil; {
		next := m.next
		if h := m.h; h.c == c {
			e.p2p.held.remove(m)
			h.m, h.state, h.why = nil, msgDropped, why
			e.dropUmsg(m, why)
		}
		m = next
	}
}
