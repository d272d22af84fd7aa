package ranks

import (
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/ring"
)

// Starting sends: inline in the descriptor (up to inlineMax bytes),
// through one of the sender's eager chunks (up to the eager limit), or by
// rendezvous (transfer.go); synchronous sends and rendezvous hold a
// handshake slot until matched. Also the fast paths of blocking calls.

func (e *engine) start(r *request) {
	if r.send {
		e.startSend(r)
	} else {
		e.startRecv(r)
	}
}

func (e *engine) startSend(r *request) {
	if r.peer == ProcNull {
		e.complete(r, nil)
		return
	}
	w := r.wpeer
	if w == e.me {
		e.sendSelf(r)
		return
	}
	e.refresh()
	if r.c.revoked && !ftTag(r.tag) {
		e.complete(r, revokedErr(r.c, r.op))
		return
	}
	if e.gone[w] {
		e.complete(r, e.goneErr(r.c, w, r.op))
		return
	}
	e.tx++ // sent: it will be delivered unless dest fails first
	e.txBytes += uint64(r.nbytes)
	if e.sendq[w].n > 0 || !e.trySend(r) {
		if e.sendq[w].n == 0 {
			e.queued = append(e.queued, w)
			if e.proxy {
				e.proxyMark(w)
			}
		}
		e.sendq[w].push(r)
	}
}

// sendSelf delivers a message to this rank itself, buffering it if no
// receive is posted; a synchronous one completes when it matches.
func (e *engine) sendSelf(r *request) {
	c := r.c
	e.tx++
	e.txBytes += uint64(r.nbytes)
	e.tool.rxSelf++
	e.rxBytes += uint64(r.nbytes)
	if rr := c.matchPosted(e.me, r.tag); rr != nil {
		e.deliver(rr, e.me, r.tag, r.buf, r.nbytes)
		e.complete(r, nil)
		return
	}
	m := e.newUmsg(e.me, r.tag, kInline, 0, 0, 0)
	m.setData(r.buf, r.nbytes)
	if r.sync {
		m.sender = r
	} else {
		e.complete(r, nil)
	}
	c.unexp.push(m)
}

// pullMin is the size above which a send marked pull (a collective's
// fan-out from its root where members sleep: ext.PullSends) goes by
// rendezvous, the receiver copying from the sender's buffer, rather than
// through a chunk, which both sides copy. 8 ranks on 2 cores, osu_bcast
// 16-64 KiB, 5 runs (2026-11-28), µs, chunks / rendezvous: 14.1-22.2
// against 9.3-15.4 in the runs where copies were fast, and 34.6-105.3
// against 13.2-21.5 where they were slow (docs/performance.md);
// osu_scatter 16-64 KiB alike.
const pullMin = 8 << 10

// trySend posts r to its destination's inbox. It reports false if it must
// wait: the ring is full, or no chunk or handshake slot is free.
func (e *engine) trySend(r *request) bool {
	if r.frag {
		return e.sendFrags(r) // a fragmented send under way
	}
	w := r.wpeer
	n := r.nbytes
	var kind uint8
	switch {
	case n <= inlineMax || n <= doubleMax && e.doubles:
		kind = kInline
	case n <= e.eager && !(r.pull && n > pullMin):
		kind = kChunk
		if r.chunk < 0 {
			k := e.allocChunk(w)
			switch {
			case k >= 0:
				memmove(e.chunkPtr(e.me, k), r.buf, n)
				r.chunk = k
			case r.c.twin && !e.spin:
				// Every chunk is in flight: a collective's fan-out (a
				// root's Bcast or Scatter, an Alltoall) at more members
				// than chunks. Waiting for one to come back costs a
				// wake-up of its receiver per message when ranks
				// outnumber cores (osu_bcast 128 B-32 KiB at 64 ranks on
				// 2 cores: 430 µs, 20-50 with this); the receiver pulls
				// the data instead. Not when ranks spin: a chunk comes
				// back within a microsecond or so there, less than a
				// rendezvous costs (osu_scatter 4 KiB at 2 ranks: 0.7
				// µs against 2.3). Only on the twin: every collective
				// send has a receive coming, so a send that waits for
				// its match cannot deadlock there, while a user's
				// program may count on eager buffering.
				kind = kRndv
			default:
				return false
			}
		}
	default:
		kind = kRndv
	}
	hs := -1
	var gen uint32
	ackMsg := false
	if r.sync || kind == kRndv {
		if r.dataLost {
			e.dropSend(r, newErr(ErrProcFailed, r.op, -1, "the message's bytes were lost with their node"))
			return true
		}
		if hs = e.allocHS(); hs < 0 && r.unready {
			// Fragments would copy bytes not here yet: wait for a slot,
			// or for the bytes (the agent receives them within its
			// patience).
			return false
		}
		if hs < 0 {
			// Every handshake slot is held by messages not yet matched
			// (or being copied). MPI's progress rule says this message
			// must still reach the receiver: send it by a protocol that
			// needs no slot (fallback.go).
			if r.sync {
				gen = e.newAckID()
			}
			if kind == kRndv {
				r.frag, r.gen = true, gen
				return e.sendFrags(r)
			}
			ackMsg = true
		}
	}
	if hs >= 0 {
		p := e.hsPtr(e.me, hs)
		gen = p.gen.Add(1)
		if kind == kRndv {
			p.addr.Store(uint64(uintptr(r.buf)))
			publishMem(uintptr(r.buf), r.nbytes, &p.srcMem, &p.srcBase)
			p.accept.Store(0)
			p.pipeTail.Store(0)
			p.pipeHead.Store(0)
		}
		if r.unready {
			p.ready.Store(0)
			p.state.Store(hsLatePosted)
		} else {
			p.state.Store(hsPosted)
		}
	}
	if kind == kInline && n <= shortMax && !r.sync && e.streamsTo(w) {
		cl, ok := e.prods[w].TryClaimShort()
		if !ok {
			return false
		}
		writeShort(cl.Payload(), r.c.wire(w), r.tag, r.buf, n)
		if e.fenceSends.Load() {
			cl.PublishFence()
		} else {
			cl.Publish()
		}
		e.dbs[w].Ring()
		e.complete(r, nil)
		return true
	}
	double := kind == kInline && n > inlineMax
	var cl ring.Claimed
	var ok bool
	if double {
		cl, ok = e.prods[w].TryClaimDouble()
	} else {
		cl, ok = e.prods[w].TryClaim()
	}
	if !ok {
		if hs >= 0 {
			e.freeHS(hs)
		}
		return false
	}
	d := cl.Payload()
	var flags uint8
	switch {
	case ackMsg:
		flags = fAckMsg
	case r.sync && kind != kRndv:
		flags = fSync
	case r.sync:
		flags = fSyncRndv
	}
	writeDesc(d, r.c.wire(w), r.tag, kind, flags, max(hs, 0), gen)
	clearGuards(d, double)
	var hi uint64
	switch kind {
	case kInline:
		(*desc)(d).len = uint32(n)
		memmove(unsafe.Add(d, dData), r.buf, n)
		hi = guardData(d, r.buf, n)
	case kChunk:
		(*desc)(d).len = uint32(n)
		*(*uint32)(unsafe.Add(d, dData)) = uint32(r.chunk)
		r.chunk = -1 // the receiver frees it
	case kRndv:
		(*desc)(d).len = 0
		*(*uint64)(unsafe.Add(d, dData)) = uint64(n)
		// The receiver reads our buffer in place: keep it where it is.
		r.pin.Pin(r.buf)
		r.pinned = true
	}
	if e.fenceSends.Load() {
		cl.PublishGuardedFence(hi)
	} else {
		cl.PublishGuarded(hi)
	}
	e.dbs[w].Ring()
	switch {
	case hs >= 0:
		r.hs, r.gen = hs, gen
		e.active.push(r)
	case ackMsg:
		e.awaitAck(r, gen)
	default:
		e.complete(r, nil)
	}
	return true
}

// The guard words of a full inbox record (ring.GuardOffset; a double
// record has three, ring.GuardStride apart) hold bytes 4 to 11 (and 36 to
// 43, 68 to 75) of a descriptor's data. The hot paths keep their bit 63
// clear themselves rather than let the ring load them back
// (ring.PublishGuarded): clearGuards zeroes the words before the data go
// in, so that bytes a short message leaves unwritten are not stale, and
// guardData moves the top bit of the data byte that lands last in each
// word out of it.
const (
	guardData11 = int(ring.GuardOffset + 7 - dData) // 11: guard 0's top data byte
	guardStride = ring.GuardStride
)

func clearGuards(d unsafe.Pointer, double bool) {
	*(*uint64)(unsafe.Add(d, ring.GuardOffset)) = 0
	if double {
		*(*uint64)(unsafe.Add(d, ring.GuardOffset+guardStride)) = 0
		*(*uint64)(unsafe.Add(d, ring.GuardOffset+2*guardStride)) = 0
	}
}

// guardData runs after n bytes from src were copied to d's data; it
// reports the bits it cleared, bit k for guard word k.
func guardData(d, src unsafe.Pointer, n int) uint64 {
	var hi uint64
	for k, at := 0, guardData11; at < n; k, at = k+1, at+guardStride {
		if b := *(*byte)(unsafe.Add(src, at)); b&0x80 != 0 {
			*(*byte)(unsafe.Add(d, int(dData)+at)) = b &^ 0x80
			hi |= 1 << k
		}
	}
	return hi
}

// writeShort fills a short record with a message of n <= shortMax bytes
// from p.
func writeShort(d unsafe.Pointer, ctx uint32, tag int, p unsafe.Pointer, n int) {
	(*shortDesc)(d).ctx = ctx
	(*shortDesc)(d).tag = int32(tag)
	(*shortDesc)(d).kind = kShort
	(*shortDesc)(d).len = uint16(n)
	copySmall(unsafe.Add(d, sData), p, n)
}

// streamsTo reports whether a small message to world rank w may travel
// in a short record, and records this send: this rank sent its last
// small message to w too and has handled no message since. It is then
// streaming, and packing two messages per line halves the lines a
// receiver that falls behind must fetch. A ping-pong never qualifies (it
// receives between sends): there a message alone in its line arrives one
// transfer sooner, because the sender prefetched that line for writing
// and the receiver has not read it.
func (e *engine) streamsTo(w int) bool {
	s := e.lastDest == w && e.rx == e.rxAtSend
	e.lastDest, e.rxAtSend = w, e.rx
	return s
}

// writeDesc fills a descriptor's header.
func writeDesc(d unsafe.Pointer, ctx uint32, tag int, kind, flags uint8, hs int, gen uint32) {
	(*desc)(d).ctx = ctx
	(*desc)(d).tag = int32(tag)
	(*desc)(d).kind = kind
	(*desc)(d).flags = flags
	(*desc)(d).hs = uint16(hs)
	(*desc)(d).gen = gen
}

// recvFast is the fast path of a blocking receive when nothing else is
// pending on this rank: it polls the inbox itself and copies a matching
// eager message (inline or chunk) straight into the caller's buffer. It
// reports false, consuming nothing, as soon as anything else needs the
// general path: another message, a change of the failure table, another
// goroutine, or the end of its short spin.
func (e *engine) recvFast(c *Comm, p unsafe.Pointer, n, esize, src, tag int, st *Status) bool {
	w := -1
	if src >= 0 {
		w = c.group[src]
	}
	limit := 0
	if e.spin {
		limit = 1024
	}
	for i := 0; ; i++ {
		prod, d, ok := e.inbox.Peek()
		if !ok {
			if i >= limit || e.want.Load() != 0 || e.epoch.Load() != e.seenEpoch {
				return false
			}
			// PAUSE spares the pipeline flush that leaving a tight load
			// loop costs when the line changes (osu_latency shows it).
			spin.Pause()
			if i&63 == 63 {
				e.offerP()
			}
			continue
		}
		kind := (*desc)(d).kind
		mtag := int((*desc)(d).tag)
		if (*desc)(d).ctx != c.ctx || (w >= 0 && int(prod) != w) || mtag != tag && (tag != AnyTag || mtag < 0) {
			return false
		}
		var ln int
		switch {
		case kind == kShort:
			ln = int((*shortDesc)(d).len)
		case (*desc)(d).flags != 0 || (kind != kInline && kind != kChunk):
			return false
		default:
			ln = int((*desc)(d).len)
		}
		e.rx++
		e.rxBytes += uint64(ln)
		m := min(ln, n)
		switch kind {
		case kShort:
			copySmall(p, unsafe.Add(d, sData), m)
			e.release()
		case kInline:
			copySmall(p, unsafe.Add(d, dData), m)
			e.release()
		default:
			k := int(*(*uint32)(unsafe.Add(d, dData)))
			e.release()
			e.warmChunks(int(prod))
			memmove(p, e.chunkPtr(int(prod), k), m)
			e.freeChunk(int(prod), k)
		}
		st.Source, st.Tag, st.Bytes, st.Count = int(c.toComm[prod]), mtag, m, elems(m, esize)
		if ln > n {
			st.Err = truncErr("Recv", st.Source, ln, n)
		}
		if e.t.Starving.Load() != 0 {
			e.relax() // a sender sleeps waiting for room we may have made
		}
		return true
	}
}

// quiet reports whether nothing but c's next message can concern a
// blocking receive on c: the condition for recvFast.
func (e *engine) quiet(c *Comm) bool {
	return c.unexp.n == 0 && c.posted.n == 0 && e.active.n == 0 && len(e.queued) == 0 && len(e.ackq) == 0 &&
		!e.needEval && e.epoch.Load() == e.seenEpoch
}

// sendInline is the fast path of a small standard-mode send: no request,
// straight into the destination's inbox. It reports false if the send
// must take the general path.
func (e *engine) sendInline(c *Comm, w int, p unsafe.Pointer, n, tag int) bool {
	if w == e.me || e.sendq[w].n != 0 || e.epoch.Load() != e.seenEpoch || e.gone[w] {
		return false
	}
	pr := e.prods[w]
	if n <= shortMax && e.streamsTo(w) {
		cl, ok := pr.TryClaimShortFast()
		if !ok {
			if cl, ok = pr.TryClaimShort(); !ok {
				return false
			}
		}
		writeShort(cl.Payload(), c.wire(w), tag, p, n)
		cl.Publish() // the caller's unlock fences (ringAfterUnlock)
		e.tx++
		e.txBytes += uint64(n)
		return true
	}
	cl, ok := pr.TryClaimFast()
	if !ok {
		if cl, ok = pr.TryClaim(); !ok {
			return false
		}
	}
	d := cl.Payload()
	writeDesc(d, c.wire(w), tag, kInline, 0, 0, 0)
	(*desc)(d).len = uint32(n)
	clearGuards(d, false)
	copySmall(unsafe.Add(d, dData), p, n)
	// A plain store: the caller's unlock is the fence that must come
	// between it and the doorbell check (ringAfterUnlock).
	cl.PublishGuarded(guardData(d, p, n))
	e.tx++
	e.txBytes += uint64(n)
	return true
}

// flushQueues retries sends that waited for ring space, in order.
func (e *engine) flushQueues() {
	q := e.queued[:0]
	for _, w := range e.queued {
		l := &e.sendq[w]
		for l.head != nil {
			r := l.head
			if e.gone[w] {
				l.remove(r)
				e.dropSend(r, e.goneErr(r.c, w, r.op))
				continue
			}
			if !e.retrySend(r, l) {
				break
			}
		}
		if l.n > 0 {
			q = append(q, w)
		}
	}
	e.queued = q
	if len(e.proxyMarked) > 0 {
		e.proxyUnmark()
	}
}

// retrySend takes r off queue l if trySend posts it.
func (e *engine) retrySend(r *request, l *ilist[request]) bool {
	l.remove(r)
	if e.trySend(r) {
		return true
	}
	l.pushFront(r) // back at the head: order per destination must hold
	return false
}

// dropSend completes a send that will never be delivered.
func (e *engine) dropSend(r *request, err error) {
	if r.chunk >= 0 {
		e.chunkState(e.me, r.chunk).Store(0)
		r.chunk = -1
	}
	if r.hs >= 0 {
		e.freeHS(r.hs)
		r.hs = -1
	}
	e.complete(r, err)
}

// allocChunk takes one of our chunks for a message to world rank dest.
func (e *engine) allocChunk(dest int) int {
	cc := e.lay.ChunkCount
	for pass := 0; pass < 2; pass++ {
		for i := range cc {
			k := (e.chunkHint + i) % cc
			s := e.chunkState(e.me, k)
			if s.Load() == 0 {
				s.Store(uint64(dest) + 1)
				e.chunkHint = k + 1
				return k
			}
		}
		// Reclaim chunks held by messages to ranks that have ended.
		for k := range cc {
			s := e.chunkState(e.me, k)
			if v := s.Load(); v != 0 && e.gone[int(v-1)] {
				s.Store(0)
			}
		}
	}
	return -1
}

func (e *engine) allocHS() int {
	n := len(e.hsFree)
	if n == 0 {
		return -1
	}
	k := e.hsFree[n-1]
	e.hsFree = e.hsFree[:n-1]
	return k
}

func (e *engine) freeHS(k int) {
	e.hsPtr(e.me, k).state.Store(hsFree)
	e.hsFree = append(e.hsFree, k)
}

func (e *engine) hsPtr(r, k int) *hsSlot {
	return (*hsSlot)(e.t.HS(r, k))
}

func (e *engine) chunkState(r, k int) *atomic.Uint64 {
	return e.t.ChunkState(r, k)
}

// release consumes the inbox's head slot.
func (e *engine) release() {
	e.inbox.Release()
	e.released = true
}

// freeChunk gives chunk k back to its owner r once its data is read. A
// release store: the reads of the data cannot pass it.
func (e *engine) freeChunk(r, k int) {
	spin.StoreRelease64((*uint64)(unsafe.Pointer(e.chunkState(r, k))), 0)
	e.released = true
}

// warmChunks pre-faults rank r's chunks in this process the first time a
// chunk message from r arrives: otherwise each of their pages costs a
// page fault on first read, for the first messages of every size
// (shm_limits measures a fault).
func (e *engine) warmChunks(r int) {
	if !e.warm[r] {
		e.warm[r] = true
		e.t.PopulateChunksRead(r)
	}
}

func (e *engine) chunkPtr(r, k int) unsafe.Pointer {
	return e.t.Chunk(r, k)
}

// copySmall copies n <= doubleMax bytes without a call: whole words, then
// the tail bytes. It touches exactly n bytes of dst and of src, so either
// may be a user's buffer ending at a page boundary.
func copySmall(dst, src unsafe.Pointer, n int) {
	i := 0
	for ; i+8 <= n; i += 8 {
		*(*uint64)(unsafe.Add(dst, i)) = *(*uint64)(unsafe.Add(src, i))
	}
	for ; i < n; i++ {
		*(*byte)(unsafe.Add(dst, i)) = *(*byte)(unsafe.Add(src, i))
	}
}

func memmove(dst, src unsafe.Pointer, n int) {
	if n > 0 {
		copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
	}
}
