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
// proxy takes a synchronous eager message without acknowledging it: take
// returns the acknowledgement as a function, which the agent calls once
// the remote proxy's synchronous send to the receiver has completed. A
// synchronous message large enough for the rendezvous still completes
// when the proxy has copied it. Communicators other than the world do not
// cross nodes yet (creation needs context ids agreed across nodes;
// Comm.spansNodes refuses it).

// proxy is the engine of one proxied slot and the communicators whose
// messages it forwards.
type proxy struct {
	e     *engine
	comms []*Comm // the world and its collective twin
}

func init() {
	ext.NewProxy = func(seg *shm.Segment, slot int) (any, error) { return newProxy(seg, slot) }
	ext.ProxyTake = func(p any) (ctx uint32, src, tag int, data []byte, ack func(), ok bool, err error) {
		return p.(*proxy).take()
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
	w := e.newComm(0, job.WorldGen, identityGroup(lay.WorldSize()), "MPI_COMM_WORLD")
	w.permanent = true
	return &proxy{e: e, comms: []*Comm{w, w.coll}}, nil
}

// take receives the oldest message waiting in the proxy's inbox, if any,
// in whole: its wire context, its source and tag (world ranks and the
// tag as sent), and its bytes. For a synchronous eager message, ack is
// the acknowledgement of its match, to call once the receiver's match is
// known; nil otherwise.
func (p *proxy) take() (ctx uint32, src, tag int, data []byte, ack func(), ok bool, err error) {
	e := p.e
	e.lock()
	e.progress()
	var c *Comm
	var m *umsg
	for _, cc := range p.comms {
		if m = cc.unexp.head; m != nil {
			c = cc
			break
		}
	}
	if m == nil {
		e.unlock()
		return 0, 0, 0, nil, nil, false, nil
	}
	if m.kind != kRndv && m.flags&(fSync|fAckMsg) != 0 {
		msrc, flags, hs, gen := m.src, m.flags, m.hs, m.gen
		m.flags &^= fSync | fAckMsg // consume leaves the acknowledgement to ack
		ack = func() {
			e.lock()
			e.acknowledge(msrc, flags, hs, gen)
			e.unlock()
		}
	}
	c.unexp.remove(m)
	e.p2p.held.push(m)
	h := e.newMessage()
	*h = Message{c: c, m: m, state: msgHeld}
	m.h = h
	src, tag, n := m.src, m.tag, m.n
	e.unlock()
	data = make([]byte, n)
	_, err = h.recv(unsafe.Pointer(unsafe.SliceData(data)), n, 1, "Proxy")
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
		return nil, newErr(ErrComm, "Proxy", -1, "no communicator with wire context %#x", ctx)
	}
	if dst < 0 || dst >= c.size {
		return nil, newErr(ErrRank, "Proxy", -1, "rank %d in a communicator of %d", dst, c.size)
	}
	r, h := e.newRequest()
	c.newOp(r, true, sync, unsafe.Pointer(unsafe.SliceData(data)), len(data), 1, dst, tag, "Proxy")
	e.startSend(r)
	return h, nil
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
