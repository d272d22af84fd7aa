package ranks

import (
	"math/bits"
	"unsafe"
)

// Matching: receives posted on a communicator and messages that arrived
// before their receive (unexpected), each list in arrival order.

// comm is this rank's communicator with wire context ctx, or nil.
func (e *engine) comm(ctx uint32) *Comm {
	if c := e.comms[ctx&ctxIDMask]; c != nil && c.ctx == ctx {
		return c
	}
	return nil
}

// refusal says whether c (nil: no communicator here has the message's
// wire context ctx) must refuse a message with tag, and why: it is
// revoked, or it is a collective twin whose member failed (collective
// tags only: communicator creation still runs on it), or the message is
// for a communicator this rank freed. 0: accept it (c nil: keep it for a
// communicator not created here yet).
func (e *engine) refusal(c *Comm, ctx uint32, tag int) uint8 {
	switch {
	case c == nil:
		if !e.fresh(ctx) {
			return rejDropped
		}
	case !c.rejecting:
	case c.revoked:
		if ftTag(tag) {
			return 0 // agreement across nodes runs on a revoked communicator (ftchan.go)
		}
		return rejRevoked
	case tag < tagCreateBase:
		return rejCollDead
	}
	return 0
}

// earlyPush keeps a message for a communicator not created here yet.
func (e *engine) earlyPush(ctx uint32, m *umsg) {
	l := e.early[ctx]
	if l == nil {
		l = &ilist[umsg]{}
		e.early[ctx] = l
	}
	l.push(m)
}

// matchPosted finds, removes and returns the first posted receive that a
// message from world rank src with tag matches. AnyTag matches user tags
// only: negative tags are the runtime's own (partitioned.go).
func (c *Comm) matchPosted(src, tag int) *request {
	for r := c.posted.head; r != nil; r = r.next {
		if (r.wpeer == src || r.anySrc) && (r.tag == tag || r.tag == AnyTag && tag >= 0) {
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
	if esize == 0 {
		return 0 // MPI: a zero-size type's count is zero
	}
	if esize < 0 || m%esize != 0 {
		return Undefined
	}
	return m / esize
}

func (e *engine) startRecv(r *request) {
	c := r.c
	if r.peer == ProcNull {
		r.st = Status{Source: ProcNull, Tag: AnyTag}
		e.complete(r, nil)
		return
	}
	e.refresh()
	if c.rejecting {
		if why := e.refusal(c, c.ctx, r.tag); why != 0 {
			// Revoked, or a collective receive on a twin whose member
			// failed: no message will come (collDeath).
			e.complete(r, refusedErr(c, r.op, r.peer, why))
			return
		}
	}
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
		r.holdDone = e.proxy && m.flags&fSyncRndv != 0
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

// umsg is a message that arrived before a matching receive was posted.
// Inline and chunk payloads are copied out at once, so that the sender's
// chunk and the inbox slot are never held by an unmatched message.
type umsg struct {
	link[umsg] // first: see list.go
	src        int
	tag        int
	kind       uint8
	flags      uint8
	hs         int
	gen        uint32
	n          int
	data       []byte
	sender     *request // a synchronous send to self, completed at match
	h          *Message // while a matched probe holds it: the handle (mprobe.go)
	// small holds the data of a message that fits a ring record (up to
	// a full record's payload), so that queueing one allocates nothing.
	small [64]byte
}

// umsgSlab: unexpected messages are allocated this many at a time. A
// sender that runs ahead (a Bcast's root, now that oversubscribed ranks
// broadcast small data by message) queues tens of them at a receiver
// that is not scheduled.
const umsgSlab = 64

func (e *engine) newUmsg(src, tag int, kind, flags uint8, hs int, gen uint32) *umsg {
	var m *umsg
	if k := len(e.umFree); k > 0 {
		m = e.umFree[k-1]
		e.umFree = e.umFree[:k-1]
	} else {
		slab := make([]umsg, umsgSlab)
		for i := 1; i < umsgSlab; i++ {
			e.umFree = append(e.umFree, &slab[i])
		}
		m = &slab[0]
	}
	m.src, m.tag, m.kind, m.flags, m.hs, m.gen, m.n, m.sender = src, tag, kind, flags, hs, gen, 0, nil
	return m
}

func (m *umsg) setData(p unsafe.Pointer, n int) {
	switch {
	case n <= len(m.small):
		m.data = m.small[:n]
	case cap(m.data) < n || unsafe.SliceData(m.data) == &m.small[0]:
		m.data = make([]byte, n)
	default:
		m.data = m.data[:n]
	}
	memmove(unsafe.Pointer(unsafe.SliceData(m.data)), p, n)
	m.n = n
}

func (e *engine) putUmsg(m *umsg) {
	m.sender, m.h = nil, nil
	if cap(m.data) > 1<<16 {
		m.data = nil
	}
	if len(e.umFree) < 256 {
		e.umFree = append(e.umFree, m)
	}
}

// matchUnexp finds the earliest unexpected message a receive from world
// rank src (any if anySrc) with tag matches.
func (c *Comm) matchUnexp(src, tag int, anySrc bool) *umsg {
	for m := c.unexp.head; m != nil; m = m.next {
		if (anySrc || m.src == src) && (m.tag == tag || tag == AnyTag && m.tag >= 0) {
			return m
		}
	}
	return nil
}
