package ranks

import "unsafe"

// The progress loop: drain the inbox, retry queued sends and
// acknowledgements, advance transfers, judge operations on ended peers.

// progress advances everything this rank can advance without waiting.
func (e *engine) progress() {
	if ep := e.epoch.Load(); ep != e.seenEpoch {
		e.sweep(ep)
	}
	// Read before the drain: a proxy publishes its queued messages, then
	// says so (proxyUnmark), so at 0 the drain has them all.
	held := e.needEval && e.t.CB(e.me).ProxyQueued.Load() != 0
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
		e.evaluate(held)
	}
	if e.released && e.drained && e.t.Starving.Load() != 0 {
		e.relax()
	}
	if len(e.freeing) > 0 {
		e.reap()
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
				if len(e.failedOrder) > 0 {
					if dead, ann := e.claimerDead(); dead {
						e.inbox.Skip(ann)
						continue
					}
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
	e.rx++
	ctx := (*desc)(p).ctx
	tag := int((*desc)(p).tag)
	kind := (*desc)(p).kind
	var flags uint8
	var hs, ln int
	var gen uint32
	var data unsafe.Pointer
	if kind == kShort {
		kind = kInline
		ln = int((*shortDesc)(p).len)
		data = unsafe.Add(p, sData)
	} else {
		flags = (*desc)(p).flags
		hs = int((*desc)(p).hs)
		ln = int((*desc)(p).len)
		gen = (*desc)(p).gen
		data = unsafe.Add(p, dData)
	}
	switch kind {
	case kInline, kChunk, kRndv:
	case kFrag:
		e.handleFrag(src, ctx, tag, flags, gen, data, ln)
		return
	case kAck:
		e.tool.rxOther++
		e.release()
		e.handleAck(src, gen, flags)
		return
	default:
		e.tool.rxOther++
		e.handleExt(src, ctx, tag, kind, flags, gen, data, ln)
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
	if kind == kRndv {
		e.rxBytes += aux
	} else {
		e.rxBytes += uint64(ln)
	}

	c := e.comm(ctx)
	if c == nil || c.rejecting {
		if why := e.refusal(c, ctx, tag); why != 0 {
			e.rejectDesc(src, p, kind, flags, hs, gen, why)
			return
		}
	}
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

// ack tells the sender (world rank src) that its synchronous message
// through handshake slot hs matched.
func (e *engine) ack(src, hs int, gen uint32) {
	p := e.hsPtr(src, hs)
	if p.gen.Load() == gen {
		p.state.Store(hsDone)
		e.dbs[src].Ring()
	}
}
