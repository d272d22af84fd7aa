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
	ext.ProxyTake = func(p any, alloc func(n int) []byte, lendAbove int) (ctx uint32, src, tag int, data []byte, ack func(outcome uint8), release func(), ok bool, err error) {
		return p.(*proxy).take(alloc, lendAbove)
	}
	ext.ProxySend = func(p any, ctx uint32, dst, tag int, data []byte, sync bool) (any, error) {
		return p.(*proxy).send(ctx, dst, tag, data, sync)
	}
	ext.ProxyFinalize = func(p any) { p.(*proxy).finalize() }
	ext.ProxySendLate = func(p any, ctx uint32, dst, tag, n int) (any, any, error) {
		r, l, err := p.(*proxy).sendLate(ctx, dst, tag, n)
		if l == nil {
			return r, nil, err // no typed nil in the interface
		}
		return r, l, err
	}
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
//
// A message of more than lendAbove bytes (0: none) whose sender's buffer
// is AllocMem memory is lent rather than copied: data is the sender's
// buffer itself, mapped here, and the sender's send completes only when
// release is called (borrowRndv). Otherwise release is nil.
func (p *proxy) take(alloc func(n int) []byte, lendAbove int) (ctx uint32, src, tag int, data []byte, ack func(outcome uint8), release func(), ok bool, err error) {
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
		return 0, 0, 0, nil, nil, nil, false, nil
	}
	if lendAbove > 0 && m.kind == kRndv && m.flags&fSyncRndv == 0 && m.n > lendAbove && !e.gone[m.src] {
		if data, release = e.borrowRndv(m); data != nil {
			src, tag = m.src, m.tag
			e.putUmsg(m)
			e.unlock()
			return c.ctx, src, tag, data, nil, release, true, nil
		}
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
	return c.ctx, src, tag, data, ack, nil, true, err
}

// borrowRndv lends the buffer of rendezvous message m, if its sender's
// buffer is AllocMem memory that this engine can map: the agent then
// hands the sender's own memory to the system MPI, with no copy on the
// sender's node (issue 27: a 4 MiB message's copy into the agent's
// buffer took a sixth of the sending node's core). The handshake stays
// open, so the sender's send does not complete and its buffer is not
// reused, until release: then the sender sees hsDone, as after a copy.
// The mapping is pinned in the cache meanwhile. If the sender fails
// meanwhile, the memory stays mapped here, and the message goes on as
// one sent before the failure. Returns nil when the buffer cannot be
// mapped, and the message is then copied as any other.
func (e *engine) borrowRndv(m *umsg) (data []byte, release func()) {
	p := e.hsPtr(m.src, m.hs)
	if p.gen.Load() != m.gen {
		return nil, nil
	}
	ptr, s := e.peerAt(m.src, p.srcMem.Load(), p.srcBase.Load(), uintptr(p.addr.Load()), m.n)
	if ptr == nil {
		return nil, nil
	}
	s.pins++
	src, hs, gen := m.src, m.hs, m.gen
	return unsafe.Slice((*byte)(ptr), m.n), func() {
		e.lock()
		s.pins--
		e.ack(src, hs, gen)
		e.unlock()
	}
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
	c, err := p.sendComm(ctx, dst)
	if err != nil {
		return nil, err
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

// sendComm is the communicator of wire context ctx that the proxy sends
// on, after checking that it has a rank dst. Called with the engine
// locked.
func (p *proxy) sendComm(ctx uint32, dst int) (*Comm, error) {
	c := p.e.comm(ctx)
	if c == nil {
		c = p.looseComm(ctx)
	}
	if dst < 0 || dst >= c.size {
		return nil, newErr(ErrRank, "Proxy", -1, "rank %d in a communicator of %d", dst, c.size)
	}
	return c, nil
}

// Late messages: the bytes of a long message from another node come
// through the system MPI only when the agent receives them, and the
// agent can receive them straight into the receiver's buffer if it knows
// that buffer. So the proxy sends the message's descriptor first, with
// no bytes (sendLate, hsLatePosted): order holds, since the descriptor
// takes the message's place among the sender's messages. When the
// receiver matches it, it publishes its buffer as for a cooperative copy
// and copies nothing until told. The agent then receives the bytes
// straight into that buffer if it is AllocMem memory it can map and it
// takes the whole message (Target: lateDirect), and otherwise into a
// buffer of its own, from which the receiver then copies them (Filled,
// hsSlot.ready). A receiver that has not matched within
// the agent's patience does not hold the bytes up: the agent receives
// them into its own buffer, and the message is then an ordinary
// rendezvous (hsPosted). If the bytes never come (their node died: Lost),
// the receive completes with the sender's failure (hsLost).

// Target's states (ext.LateWait and the rest).
const (
	lateWait   = ext.LateWait
	lateDirect = ext.LateDirect
	lateBuffer = ext.LateBuffer
	lateDone   = ext.LateDone
)

// lateSend is a proxy's send whose bytes are on their way (sendLate).
// Its methods are called by the agent, until the request completes.
type lateSend struct {
	e   *engine
	r   *request
	n   int
	pin *peerMap // the receiver's mapping, while the agent writes into it
}

// sendLate starts sending, as the proxied rank, n bytes that have not
// arrived yet, to world rank dst on the communicator of wire context
// ctx. The late handle is nil (and the request too) when the message
// cannot go late: it is not a rendezvous message, or no handshake slot
// is free; the agent then receives the bytes first and sends them.
func (p *proxy) sendLate(ctx uint32, dst, tag, n int) (*Request, *lateSend, error) {
	e := p.e
	e.lock()
	defer e.unlock()
	c, err := p.sendComm(ctx, dst)
	if err != nil {
		return nil, nil, err
	}
	if n <= e.eager || n <= doubleMax || len(e.hsFree) == 0 {
		return nil, nil, nil
	}
	r, h := e.newRequest()
	c.newOp(r, true, false, nil, n, 1, dst, tag, "Proxy")
	r.unready = true
	e.startSend(r)
	return h, &lateSend{e: e, r: r, n: n}, nil
}

// Target says where the bytes should go now: lateWait (the receiver has
// not matched: wait, within the agent's patience), lateDirect (into dst,
// the receiver's own buffer, mapped here: call Filled(nil) after),
// lateBuffer (into a buffer of the agent's: call Filled with it), or
// lateDone (the send has completed: the receiver is gone, or refused the
// message; the bytes are to be received and dropped).
func (l *lateSend) Target() (dst []byte, state int) {
	e, r := l.e, l.r
	e.lock()
	defer e.unlock()
	e.progress()
	if r.done {
		return nil, lateDone
	}
	if r.hs < 0 {
		return nil, lateWait // queued behind others to the same receiver
	}
	p := e.hsPtr(e.me, r.hs)
	switch p.state.Load() {
	case hsLatePosted:
		return nil, lateWait
	case hsCoop:
		if int(p.accept.Load()) != l.n {
			return nil, lateBuffer // a truncating receive: only part of the bytes go there
		}
		ptr, s := e.peerAt(r.wpeer, p.dstMem.Load(), p.dstBase.Load(), uintptr(p.dstAddr.Load()), l.n)
		if ptr == nil {
			return nil, lateBuffer
		}
		if _, ok := claimPiece(&p.claim, false); !ok {
			return nil, lateBuffer
		}
		s.pins++
		l.pin = s
		return unsafe.Slice((*byte)(ptr), l.n), lateDirect
	}
	return nil, lateBuffer
}

// Filled says the bytes are here: in data (a buffer of the agent's that
// stays untouched until the request completes), or, for nil, in the
// receiver's buffer that Target gave.
func (l *lateSend) Filled(data []byte) {
	e, r := l.e, l.r
	e.lock()
	defer e.unlock()
	if r.done {
		return
	}
	if data == nil {
		l.unpin()
		r.unready = false
		if r.hs >= 0 {
			p := e.hsPtr(e.me, r.hs)
			p.copied.Add(uint64(l.n))
			e.dbs[r.wpeer].Ring()
		}
		return
	}
	r.buf = unsafe.Pointer(unsafe.SliceData(data))
	if r.hs >= 0 {
		p := e.hsPtr(e.me, r.hs)
		p.addr.Store(uint64(uintptr(r.buf)))
		publishMem(uintptr(r.buf), r.nbytes, &p.srcMem, &p.srcBase)
		p.ready.Store(1)
		// Not matched yet: an ordinary rendezvous from now on.
		if !p.state.CompareAndSwap(hsLatePosted, hsPosted) && p.state.Load() == hsCoop {
			// Matched as late: the receiver copies (lateRecv ends when
			// it sees ready), with memmove through its mapping of our
			// buffer, where ours would be process_vm_writev into its heap
			// (cross-node osu_bw 4 MiB into heap buffers: 0.54 of the
			// MPI's with the agent copying, docs/nodes.md).
			e.dbs[r.wpeer].Ring()
			return
		}
	}
	r.unready = false
	e.progress()
}

// Lost says the bytes will never come: their node died. The receiver,
// matched or not, completes with the sender's failure.
func (l *lateSend) Lost() {
	e, r := l.e, l.r
	e.lock()
	defer e.unlock()
	l.unpin()
	if r.done {
		return
	}
	if r.hs < 0 {
		r.dataLost = true // trySend drops it
		e.progress()
		return
	}
	p := e.hsPtr(e.me, r.hs)
	for {
		s := p.state.Load()
		if s != hsLatePosted && s != hsCoop && s != hsPiped {
			break
		}
		if p.state.CompareAndSwap(s, hsLost) {
			e.dbs[r.wpeer].Ring()
			break
		}
	}
}

func (l *lateSend) unpin() {
	if l.pin != nil {
		l.pin.pins--
		l.pin = nil
	}
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
