package ranks

import (
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/shm"
)

// Proxies: how a node agent serves, in its node's segment, the slots of
// the ranks that run on other nodes (docs/nodes.md, issue 27).
//
// A proxy is an engine in the agent's process that occupies such a slot:
// its inbox receives what this node's ranks send to that rank, and it
// sends, as that rank, what the rank sent from its own node. The ranks'
// engines cannot tell a proxy from a rank, so nothing on their hot paths
// changes: every protocol (inline, eager chunk, rendezvous from the
// agent's memory) and matching, AnySource included, works as between
// local ranks. Order holds hop by hop: a sender's records leave its
// inbox ring in order, one agent forwards them in order, the agents'
// transport keeps order between two agents, and the remote proxy sends
// them in order.
//
// A synchronous send must not complete before its receive matches, so a
// proxy takes a synchronous message without acknowledging it (a
// rendezvous-sized one: its copy ends without telling the sender,
// rndvDone): take returns the acknowledgement as a function, which the
// agent calls with the outcome once the remote proxy's synchronous send
// to the receiver has ended.
//
// Other communicators than the world have a slot of their own on each
// node (createSpanning), and a rank's message to a member on another
// node carries the wire context of that member's node. A proxy knows no
// such communicator: what arrives for one waits among the engine's early
// messages, from which take takes it as well, and send sends on a loose
// communicator of that wire context whose group is the world's.

// proxy is the engine of one proxied slot and the communicators whose
// messages it forwards.
type proxy struct {
	e     *engine
	comms []*Comm          // the world and its collective twin
	loose map[uint32]*Comm // by context id: the last wire context sent or taken on it (looseComm)
}

func init() {
	ext.NewProxy = func(seg *shm.Segment, slot int) (any, error) { return newProxy(seg, slot) }
	ext.ProxyTake = func(p any, alloc func(n int) []byte) (ctx uint32, src, tag int, data []byte, ack func(outcome uint8), ok bool, err error) {
		return p.(*proxy).take(alloc)
	}
	ext.ProxySend = func(p any, ctx uint32, dst, tag int, data []byte, sync bool) (any, error) {
		return p.(*proxy).send(ctx, dst, tag, data, sync)
	}
	ext.ProxyFinalize = func(p any) { p.(*proxy).finalize() }
}

// newProxy claims slot, which must be a rank of another node, for this
// process.
func newProxy(seg *shm.Segment, slot int) (*proxy, error) {
	lay := job.LayoutOf(seg)
	if !lay.Remote(slot) {
		return nil, newErr(ErrRank, "Proxy", -1, "rank %d runs on this node", slot)
	}
	// No liveness thread: a process holds one, and a proxy's slot dies
	// with its node's report (the agent declares it), not with this
	// process. If the agent itself dies, its node's ranks die with it.
	e, err := newEngineWith(seg, slot, false)
	if err != nil {
		return nil, err
	}
	e.proxy = true
	w := e.newComm(0, job.WorldGen, identityGroup(lay.WorldSize()), "MPI_COMM_WORLD")
	w.permanent = true
	return &proxy{e: e, comms: []*Comm{w, w.coll}, loose: map[uint32]*Comm{}}, nil
}

// take receives the oldest message waiting in the proxy's inbox, if any,
// in whole: its wire context, its source and tag (world ranks and the
// tag as sent), and its bytes, in a buffer from alloc. For a synchronous eager message, ack is
// to call once the receiver's node knows the outcome: 0, matched (the
// sender completes), or why it never will be (rejRevoked, rejDropped,
// rejCollDead: the sender completes with that error); nil otherwise.
func (p *proxy) take(alloc func(n int) []byte) (ctx uint32, src, tag int, data []byte, ack func(outcome uint8), ok bool, err error) {
	e := p.e
	e.lock()
	e.progress()
	var c *Comm
	var m *umsg
	for _, cc := range p.comms {
		if m = cc.unexp.head; m != nil {
			c = cc
			c.unexp.remove(m)
			break
		}
	}
	if m == nil {
		// Messages of other communicators, each context's in order.
		for ctx, l := range e.early {
			m = l.head
			l.remove(m)
			if l.head == nil {
				delete(e.early, ctx)
			}
			c = p.looseComm(ctx)
			break
		}
	}
	if m == nil {
		e.unlock()
		return 0, 0, 0, nil, nil, false, nil
	}
	if m.kind != kRndv && m.flags&(fSync|fAckMsg) != 0 || m.kind == kRndv && m.flags&fSyncRndv != 0 {
		msrc, kind, flags, hs, gen := m.src, m.kind, m.flags, m.hs, m.gen
		m.flags &^= fSync | fAckMsg // consume leaves the acknowledgement to ack
		// outcome: launch.SyncOutcome's values, which are rej*'s.
		ack = func(outcome uint8) {
			e.lock()
			switch {
			case outcome == 0 && kind == kRndv:
				e.ack(msrc, hs, gen) // the copy held its hsDone (rndvDone)
			case outcome == 0:
				e.acknowledge(msrc, flags, hs, gen)
			case outcome == rejRevoked, outcome == rejDropped, outcome == rejCollDead:
				e.reject(msrc, kind, flags, hs, gen, outcome)
			default:
				e.reject(msrc, kind, flags, hs, gen, rejDropped)
			}
			e.unlock()
		}
	}
	e.p2p.held.push(m)
	h := e.newMessage()
	*h = Message{c: c, m: m, state: msgHeld}
	m.h = h
	src, tag, n := m.src, m.tag, m.n
	e.unlock()
	data = alloc(n)
	_, err = h.recv(unsafe.Pointer(unsafe.SliceData(data)), n, 1, opProxy)
	return c.ctx, src, tag, data, ack, true, err
}

// send starts sending data, as the proxied rank, to world rank dst on the
// communicator of wire context ctx; synchronously if sync (it completes
// when the receive matches). The tag is passed as it came (the runtime's
// own tags are negative). data must stay untouched until the request
// completes.
func (p *proxy) send(ctx uint32, dst, tag int, data []byte, sync bool) (*Request, error) {
	e := p.e
	e.lock()
	defer e.unlock()
	c := e.comm(ctx)
	if c == nil {
		c = p.looseComm(ctx)
	}
	if dst < 0 || dst >= c.size {
		return nil, newErr(ErrRank, "Proxy", -1, "rank %d in a communicator of %d", dst, c.size)
	}
	r, h := e.newRequest()
	if tag == tagRevoke && ctx&1 == 1 {
		// A member on the sender's node revoked the communicator: revoke
		// it here, for this node's members (revokeRemote).
		e.t.RevokeOwner((ctx&ctxIDMask)>>1, ctx>>ctxIDBits, ownerBits)
		c.newOp(r, true, false, nil, 0, 1, ProcNull, tag, "Proxy")
		e.startSend(r)
		return h, nil
	}
	c.newOp(r, true, sync, unsafe.Pointer(unsafe.SliceData(data)), len(data), 1, dst, tag, "Proxy")
	e.startSend(r)
	return h, nil
}

// proxyMark counts this proxy in rank w's ProxyQueued (job.CtlBlock): it
// holds a message for w that found w's inbox full. Until the count is 0
// again, w judges no receive from a failed rank of another node
// (evaluate), so that a dead rank's messages still come before its
// failure, as they do on one node (Agree across nodes relies on it).
func (e *engine) proxyMark(w int) {
	e.t.CB(w).ProxyQueued.Add(1)
	e.proxyMarked = append(e.proxyMarked, w)
}

// proxyUnmark takes this proxy out of the counts of the ranks whose
// queues it has emptied, after their messages are in their inboxes.
func (e *engine) proxyUnmark() {
	q := e.proxyMarked[:0]
	for _, w := range e.proxyMarked {
		if e.sendq[w].n > 0 {
			q = append(q, w)
			continue
		}
		e.t.CB(w).ProxyQueued.Add(^uint32(0))
	}
	e.proxyMarked = q
}

// finalize marks the proxied rank finalized here, as its own Finalize
// did at its node. The agent calls it once every message the rank sent
// before has been handed to its receivers.
func (p *proxy) finalize() {
	e := p.e
	e.lock()
	defer e.unlock()
	e.t.CB(e.me).State.CompareAndSwap(job.StAlive, job.StFinalized)
	e.t.Bump()
}

// looseComm is a communicator of wire context ctx over the world's group,
// not registered with the engine: what a proxy sends and takes on for a
// communicator of which it knows only the wire context. Arrivals for it
// stay early messages (take), since the engine never finds it.
func (p *proxy) looseComm(ctx uint32) *Comm {
	id := ctx & ctxIDMask
	if c := p.loose[id]; c != nil && c.ctx == ctx {
		return c
	}
	w := p.comms[0]
	c := &Comm{e: p.e, ctx: ctx, slot: id >> 1, rank: w.rank, size: w.size, group: w.group, toComm: w.toComm, twin: id&1 == 1}
	p.loose[id] = c
	return c
}
