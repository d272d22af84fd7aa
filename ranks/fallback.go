package ranks

import "unsafe"

// Protocols for when handshake slots run out.
//
// MPI's progress rule: a message that no receive has matched must not
// stop a later message of the same sender from becoming receivable
// (non-overtaking binds only messages that match the same receive). A
// rendezvous or synchronous send holds one of its sender's handshake
// slots until it is matched, so a sender with HSSlots such messages
// unmatched could post nothing more to that receiver. Rather than wait,
// the sender then uses protocols that hold nothing across the match:
//
//   - a synchronous eager message carries fAckMsg and an ack id instead
//     of a handshake slot; the receiver, when it matches, answers with a
//     kAck message carrying the id (ackq holds answers that find the
//     sender's inbox full);
//   - a large message goes in chunk-sized kFrag fragments, one after
//     another (the sender's queue to that receiver is FIFO, so nothing
//     else of the sender's interleaves). The receiver copies every
//     fragment out of its chunk at once, into the receive if the first
//     fragment matched one, else into a buffer that joins the unexpected
//     messages when the last fragment is in. Both chunks and inbox slots
//     are freed whatever matches, so the fragments always get through.
//
// These paths are rare and may allocate: they trade speed for progress.

// fragIn is a fragmented message arriving from one sender.
type fragIn struct {
	r     *request // the receive it matched, or nil
	m     *umsg    // else the buffer collecting it
	ctx   uint32
	total int
	got   int
	drop  bool // refused (engine.refusal): skip the data
}

// ackOut is a kAck to send to world rank dest.
type ackOut struct {
	dest int
	id   uint32
	why  uint8 // 0: matched; else refused (rej*)
}

// newAckID hands out an id for a synchronous send acknowledged by message.
func (e *engine) newAckID() uint32 {
	e.ackID++
	if e.ackID == 0 {
		e.ackID = 1
	}
	return e.ackID
}

// awaitAck parks synchronous send r, fully posted, until its kAck.
func (e *engine) awaitAck(r *request, id uint32) {
	if e.ackWait == nil {
		e.ackWait = map[uint32]*request{}
	}
	r.ackMsg, r.gen = true, id
	e.ackWait[id] = r
	e.active.push(r)
}

// handleAck completes the synchronous send that kAck id from src answers
// (flags: refused, and why).
func (e *engine) handleAck(src int, id uint32, flags uint8) {
	r := e.ackWait[id]
	if r == nil || r.wpeer != src {
		return
	}
	delete(e.ackWait, id)
	e.active.remove(r)
	var err error
	for why, f := range rejFlag {
		if f != 0 && flags&f != 0 {
			err = refusedErr(r.c, r.op, r.peer, uint8(why))
		}
	}
	e.complete(r, err)
}

// sendAck answers a synchronous message from world rank dest whose match
// it acknowledges by message.
func (e *engine) sendAck(dest int, id uint32) { e.queueAck(dest, id, 0) }

// queueAck sends a kAck, of a match (why 0) or a refusal, or queues it if
// there is no room.
func (e *engine) queueAck(dest int, id uint32, why uint8) {
	a := ackOut{dest, id, why}
	if len(e.ackq) > 0 || !e.postAck(a) {
		e.ackq = append(e.ackq, a)
	}
}

func (e *engine) postAck(a ackOut) bool {
	dest := a.dest
	cl, ok := e.prods[dest].TryClaim()
	if !ok {
		return false
	}
	writeDesc(cl.Payload(), 0, 0, kAck, rejFlag[a.why], 0, a.id)
	cl.PublishFence()
	e.dbs[dest].Ring()
	return true
}

// flushAcks retries the kAcks that found no room.
func (e *engine) flushAcks() {
	q := e.ackq[:0]
	for _, a := range e.ackq {
		if !e.gone[a.dest] && !e.postAck(a) {
			q = append(q, a)
		}
	}
	e.ackq = q
}

// sendFrags posts the fragments of send r that are still to go. It
// reports false, keeping its place, when no chunk or inbox slot is free.
func (e *engine) sendFrags(r *request) bool {
	w := r.wpeer
	for r.off < r.nbytes {
		k := e.allocChunk(w)
		if k < 0 {
			return false
		}
		cl, ok := e.prods[w].TryClaim()
		if !ok {
			e.chunkState(e.me, k).Store(0)
			return false
		}
		m := min(e.csz, r.nbytes-r.off)
		memmove(e.chunkPtr(e.me, k), unsafe.Add(r.buf, r.off), m)
		d := cl.Payload()
		var flags uint8
		if r.off == 0 {
			flags = fFirst
			if r.sync {
				flags |= fAckMsg
			}
			*(*uint64)(unsafe.Add(d, dData+8)) = uint64(r.nbytes)
		}
		writeDesc(d, r.c.wire(r.wpeer), r.tag, kFrag, flags, 0, r.gen)
		(*desc)(d).len = uint32(m)
		*(*uint32)(unsafe.Add(d, dData)) = uint32(k)
		cl.PublishFence()
		e.dbs[w].Ring()
		r.off += m
	}
	r.frag = false
	if r.sync {
		e.awaitAck(r, r.gen)
	} else {
		e.complete(r, nil)
	}
	return true
}

// handleFrag takes a fragment from world rank src out of its chunk and
// releases its inbox slot.
func (e *engine) handleFrag(src int, ctx uint32, tag int, flags uint8, gen uint32, data unsafe.Pointer, ln int) {
	k := int(*(*uint32)(data))
	var total int
	if flags&fFirst != 0 {
		total = int(*(*uint64)(unsafe.Add(data, 8)))
		e.rxBytes += uint64(total)
	} else {
		e.tool.rxOther++ // a message counts once, at its first fragment
	}
	e.release()
	e.warmChunks(src)
	f := e.fragIn[src]
	if flags&fFirst != 0 {
		f = &fragIn{ctx: ctx, total: total}
		e.fragIn[src] = f
		c := e.comm(ctx)
		if why := e.refusal(c, ctx, tag); why != 0 {
			f.drop = true
			e.reject(src, kFrag, flags, 0, gen, why)
		} else if c != nil {
			if r := c.matchPosted(src, tag); r != nil {
				f.r = r
				r.frag, r.wpeer = true, src
				accept := min(total, r.nbytes)
				e.setRecvStatus(r, src, tag, accept)
				if total > r.nbytes {
					r.st.Err = truncErr(r.op, r.st.Source, total, r.nbytes)
				}
				e.active.push(r)
				e.acknowledge(src, flags, 0, gen)
			}
		}
		if f.r == nil && !f.drop {
			f.m = e.newUmsg(src, tag, kFrag, flags, 0, gen)
			f.m.data = make([]byte, total)
			f.m.n = total
		}
	}
	if f == nil {
		e.freeChunk(src, k) // cannot happen: fragments arrive in order
		return
	}
	p := e.chunkPtr(src, k)
	switch {
	case f.drop:
	case f.r != nil:
		if r := f.r; f.got < r.st.Bytes {
			memmove(unsafe.Add(r.buf, f.got), p, min(ln, r.st.Bytes-f.got))
		}
	default:
		copy(f.m.data[f.got:], unsafe.Slice((*byte)(p), ln))
	}
	e.freeChunk(src, k)
	f.got += ln
	if f.got < f.total {
		testStage(e, "copying")
		return
	}
	e.fragIn[src] = nil
	if r := f.r; r != nil {
		e.active.remove(r)
		e.complete(r, nil)
		return
	}
	m := f.m
	if f.drop {
		return
	}
	c := e.comm(f.ctx)
	if why := e.refusal(c, f.ctx, m.tag); why != 0 {
		e.dropUmsg(m, why)
		return
	} else if c != nil {
		if r := c.matchPosted(src, m.tag); r != nil {
			e.consume(r, m)
			return
		}
		c.unexp.push(m)
		return
	}
	e.earlyPush(f.ctx, m)
}

// dropFrags forgets fragmented messages whose sender ended before the
// last fragment (the receive they matched, on the active list, is failed
// by evaluate).
func (e *engine) dropFrags() {
	for src, f := range e.fragIn {
		if f != nil && e.gone[src] {
			e.fragIn[src] = nil
			if f.m != nil {
				e.putUmsg(f.m)
			}
		}
	}
}
