package ranks

import (
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
)

// The revoke mechanism (the policy, ulfm.Revoke, lives above and calls
// revoke through internal/ext).
//
// revoke marks the communicator's context slot revoked, stamped with its
// generation, and bumps the failure epoch, which wakes every rank; each
// member's next sweep then revokes its own copy (revokeLocal). A revoked
// communicator and its collective twin:
//   - fail every later operation with ErrRevoked (the unusable flag, which
//     the hot paths already check);
//   - complete every posted receive and every send still queued here
//     with ErrRevoked, and drop unexpected messages;
//   - reject messages that arrive for it: the sender of a synchronous or
//     rendezvous message is told through its handshake slot (hsRevoked)
//     or by a revoked kAck, and completes with ErrRevoked.
//
// Transfers already matched (a rendezvous being copied, a fragmented
// message whose receive matched) complete normally: the sender's or the
// receiver's memory is in use by the other process, and cutting the
// copy short would let the user reuse a buffer the peer still writes.
// A send waiting for its match is completed by the receiver's answer,
// never by the sender alone, so a handshake slot is never reused while
// the receiver may still act on it.

func init() {
	ext.Revoke = func(comm any) error { return comm.(*Comm).revoke() }
	ext.CollOf = func(comm any) any { return comm.(*Comm).coll }
	ext.Revoked = func(comm any) bool {
		c := comm.(*Comm)
		e := c.e
		e.lock()
		defer e.unlock()
		if c.revoked {
			return true
		}
		if c.coll != nil && !c.freed && e.t.ContextRevoked(c.slot, c.gen) {
			e.revokeLocal(c)
			return true
		}
		return false
	}
	ext.SlotsOf = func(comm any) *ext.Slots { return &comm.(*Comm).ext }
}

// revoke revokes c at every member. It is not collective and is
// idempotent; it works on a communicator already revoked.
func (c *Comm) revoke() error {
	if c == nil {
		return nilComm("Revoke")
	}
	e := c.e
	e.lock()
	defer e.unlock()
	if e.closed {
		return newErr(ErrFinalized, "Revoke", -1, "")
	}
	if c.freed {
		return newErr(ErrComm, "Revoke", -1, "communicator %s was freed", c.label())
	}
	if c.coll == nil {
		return newErr(ErrComm, "Revoke", -1, "not a user communicator")
	}
	e.t.RevokeContext(c.slot, c.gen)
	e.revokeLocal(c)
	if c.spansNodes {
		e.revokeRemote(c)
	}
	return nil
}

// tagRevoke marks a revoke notice on a collective twin: a message that
// no rank receives. The proxy of a member on another node takes it like
// any message, and the proxy that sends it on there revokes the
// communicator's slot of that node instead (proxy.send), which the
// node's members then see as if one of them had revoked it.
const tagRevoke = tagCreateBase + 7

// revokeRemote sends a revoke notice for c to each of its live members on
// other nodes: they are reached through their proxies here, one notice
// each, since this rank cannot tell which of them share a node. Later
// notices find the slot revoked and change nothing. Called under the
// engine lock, after c was revoked here.
func (e *engine) revokeRemote(c *Comm) {
	// The twin is revoked: a copy that is not carries the notices.
	group, toComm, rank := c.group, c.toComm, c.rank
	if c.inter != nil {
		// Both groups: the local one's members on other nodes too.
		group, toComm, rank = c.inter.union, c.inter.toUnion, int(c.inter.toUnion[e.me])
	}
	n := &Comm{e: e, ctx: c.coll.ctx, slot: c.slot, gen: c.gen, peerCtx: c.coll.peerCtx,
		group: group, toComm: toComm, rank: rank, size: len(group), twin: true}
	for i, w := range group {
		if !e.lay.Remote(w) || e.gone[w] {
			continue
		}
		r := e.reqState()
		n.newOp(r, true, false, nil, 0, 1, i, tagRevoke, "Revoke")
		e.startSend(r)
		e.releaseReq(r)
	}
}

// sweepRevoked revokes locally every communicator whose slot another
// member revoked. It runs on each change of the epoch.
func (e *engine) sweepRevoked() {
	if e.proxy {
		return
	}
	for _, c := range e.live {
		if c != nil && c.coll != nil && !c.revoked && e.t.ContextRevoked(c.slot, c.gen) {
			e.revokeLocal(c)
		}
	}
}

// revokeLocal revokes this rank's copy of c and its collective twin.
func (e *engine) revokeLocal(c *Comm) {
	for _, m := range []*Comm{c, c.coll} {
		if m == nil || m.revoked {
			continue
		}
		m.revoked, m.unusable, m.rejecting = true, true, true
		// The FT channel's traffic goes on (ftchan.go).
		for r := m.posted.head; r != nil; {
			next := r.next
			if !ftTag(r.tag) {
				m.posted.remove(r)
				e.complete(r, revokedErr(m, r.op))
			}
			r = next
		}
		for u := m.unexp.head; u != nil; {
			next := u.next
			if !ftTag(u.tag) {
				m.unexp.remove(u)
				e.dropUmsg(u, rejRevoked)
			}
			u = next
		}
	}
	e.dropHeld(c, rejRevoked) // and those matched probes took (mprobe.go)
	for _, w := range e.queued {
		l := &e.sendq[w]
		for r := l.head; r != nil; {
			next := r.next
			if (r.c == c || r.c == c.coll) && !ftTag(r.tag) {
				l.remove(r)
				e.dropSend(r, revokedErr(r.c, r.op))
			}
			r = next
		}
	}
	if c.inter != nil {
		// Its collectives' local phases run on the local
		// intracommunicator: a member waiting there must not wait for one
		// that left because of the revoke.
		e.revokeLocal(c.inter.localComm)
		if u := c.inter.unionComm; u != nil {
			e.revokeLocal(u)
		}
	}
	for _, d := range c.dependents {
		// Persistent collectives' private duplicates: a member that saw
		// the revoke leaves their runs too.
		e.revokeLocal(d)
	}
	e.needEval = true // flushQueues forgets emptied queues
}

// revokedErr is every survivor's first error after a failure, so it is
// built without fmt: the first Sprintf of a process allocates fmt's
// printer pool and faults in fresh heap (about a sixth of the survivors'
// CPU in the first 3 ms of a 64-rank ulfm_recovery, perf, 2026-11-27).
func revokedErr(c *Comm, op string) error {
	return &Error{Class: ErrRevoked, Op: op, Rank: -1, Detail: "communicator " + c.label()}
}

// refusedErr is the error of an operation on c whose message the
// receiver refused, for reason why (rej*).
func refusedErr(c *Comm, op string, peer int, why uint8) error {
	switch why {
	case rejRevoked:
		return revokedErr(c, op)
	case rejCollDead:
		return &Error{Class: ErrProcFailed, Op: op, Rank: -1, Failed: c.failedRanks(len(c.e.failedOrder)),
			Detail: "the receiver failed, or left the collective on a member's failure"}
	}
	return newErr(ErrComm, op, peer, "the receiver freed communicator %s without receiving the message", c.label())
}

// reject answers a message from world rank src that its receiver refuses
// (engine.refusal; or drops unreceived, dropUmsg): a sender waiting for
// the match learns that it will never come, and why.
func (e *engine) reject(src int, kind, flags uint8, hs int, gen uint32, why uint8) {
	switch {
	case kind == kRndv || flags&fSync != 0:
		p := e.hsPtr(src, hs)
		if p.gen.Load() == gen {
			p.state.Store(rejState[why])
			e.dbs[src].Ring()
		}
	case flags&fAckMsg != 0:
		e.queueAck(src, gen, why)
	}
}

// rejectDesc refuses the descriptor at p and releases its slot.
func (e *engine) rejectDesc(src int, p unsafe.Pointer, kind, flags uint8, hs int, gen uint32, why uint8) {
	if kind == kChunk {
		k := int(*(*uint32)(unsafe.Add(p, dData)))
		e.release()
		e.freeChunk(src, k)
	} else {
		e.release()
	}
	e.reject(src, kind, flags, hs, gen, why)
}

// dropUmsg discards unexpected message m, which can never be received,
// telling a sender that waits for its match why.
func (e *engine) dropUmsg(m *umsg, why uint8) {
	e.reject(m.src, m.kind, m.flags, m.hs, m.gen, why)
	if s := m.sender; s != nil { // a synchronous send to this rank itself
		e.complete(s, refusedErr(s.c, s.op, s.peer, why))
	}
	e.putUmsg(m)
}

// handleExt dispatches a descriptor of an upper package's kind to its
// handler (internal/ext) and releases the slot; a kind nobody registered
// is dropped.
func (e *engine) handleExt(src int, ctx uint32, tag int, kind, flags uint8, gen uint32, data unsafe.Pointer, ln int) {
	if h := ext.HandlerOf(kind); h != nil {
		var comm any
		if c := e.comm(ctx); c != nil {
			comm = c
		}
		h(comm, src, tag, flags, gen, data, min(ln, inlineMax))
	}
	e.release()
}
