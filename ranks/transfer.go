package ranks

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/spin"
)

// Large messages (above the eager limit) use a rendezvous. The sender
// publishes its buffer's address in one of its handshake slots and a
// descriptor in the receiver's inbox. When a receive matches, the copy
// is cooperative: the receiver reads pieces from the front with
// process_vm_readv, the sender (when it is in a call of ours) writes
// pieces from the back with process_vm_writev, and the receiver marks
// the slot done when every piece is in. A side whose peer's buffer is
// AllocMem memory copies with memcpy through a mapping of it instead
// (peermem.go). Where the kernel refuses
// cross-process copies, the receiver asks for a pipelined copy instead:
// the sender streams the data through its eager chunks, up to four in
// flight, and the receiver copies each out. Without a free handshake
// slot the sender uses fallback.go's fragments instead.

// rndvRecv starts the transfer of a rendezvous message of total bytes
// from world rank src (handshake slot hs of generation gen) into r.
//
// The first time, the receiver copies a probe piece itself with
// process_vm_readv. It then publishes its own buffer and both sides copy
// the remaining pieces in parallel: the receiver reading, the sender (if
// it is in a call of ours) writing with process_vm_writev. If the kernel
// refuses cross-process copies, it asks for the pipelined copy.
func (e *engine) rndvRecv(r *request, src, tag, hs int, gen uint32, total int) {
	p := e.hsPtr(src, hs)
	if p.gen.Load() != gen {
		e.complete(r, newErr(ErrOther, r.op, int(r.c.toComm[src]), "stale rendezvous handshake"))
		return
	}
	accept := min(total, r.nbytes)
	e.setRecvStatus(r, src, tag, accept)
	if total > r.nbytes {
		r.st.Err = newErr(ErrTruncate, r.op, r.st.Source, "message of %d bytes, buffer of %d", total, r.nbytes)
	}
	r.wpeer = src
	r.hs, r.gen, r.off, r.accept = hs, gen, 0, accept
	// A proxy's message whose bytes are still on their way from another
	// node (hsLatePosted): its sender copies all of it, once they are
	// here or straight into our buffer (proxy.sendLate).
	late := p.state.Load() == hsLatePosted
	if p.state.Load() == hsLost {
		e.rndvDone(r, p, src)
		e.refresh() // the agent declared the sender failed first
		e.complete(r, e.goneErr(r.c, src, r.op))
		return
	}
	if accept == 0 {
		e.rndvDone(r, p, src)
		e.complete(r, nil)
		return
	}
	if e.cma {
		// Until a cross-process copy has worked, the first piece is a
		// probe the receiver copies alone; after that, none is needed.
		first := 0
		var err error
		if !late && !e.cmaKnown && e.peerPtr(src, p.srcMem.Load(), p.srcBase.Load(), uintptr(p.addr.Load()), accept) == nil {
			first = min(accept, coopProbe)
			err = e.cmaRead(e.pid(src), r.buf, uintptr(p.addr.Load()), first)
			e.cmaKnown = err == nil
		}
		switch err {
		case nil:
			if first == accept {
				e.rndvDone(r, p, src)
				e.complete(r, nil)
				return
			}
			// The sender writes into our buffer: keep it in place.
			r.pin.Pin(r.buf)
			r.pinned = true
			p.dstAddr.Store(uint64(uintptr(r.buf)))
			publishMem(uintptr(r.buf), accept, &p.dstMem, &p.dstBase)
			p.accept.Store(uint64(accept))
			p.failed.Store(0)
			p.copied.Store(uint64(first))
			p.base.Store(uint64(first))
			pieceLen := coopPieceLen(accept - first)
			if late {
				pieceLen = accept // one piece, the sender's
			}
			pieces := (accept - first + pieceLen - 1) / pieceLen
			p.pieceLen.Store(uint64(pieceLen))
			p.claim.Store(uint64(pieces) << 32)
			if !e.lateMatched(r, p, src, late, hsCoop) {
				return
			}
			e.dbs[src].Ring()
			// The copy starts in advance, after the drain that matched
			// this message has offered every other one it matched too:
			// a sender ahead of us then always finds pieces to take.
			e.active.push(r)
			e.noteGone(src)
			testStage(e, "matched")
			return
		case unix.EPERM, unix.ENOSYS, unix.EACCES:
			e.cma = false // refused here: pipeline from now on
		default:
			e.rndvLost(r, src, err)
			return
		}
	}
	p.accept.Store(uint64(accept))
	if !e.lateMatched(r, p, src, late, hsPiped) {
		return
	}
	e.dbs[src].Ring()
	e.warmChunks(src)
	e.active.push(r)
	e.noteGone(src)
	testStage(e, "matched")
}

// lateMatched moves the handshake p of r's message to state (hsCoop or
// hsPiped) once matched. For a late message (hsLatePosted when r
// matched) the receive leaves the copy to its sender (lateRecv), unless
// the bytes arrived meanwhile (hsPosted: the usual copy); if they were
// lost instead (hsLost), r completes with the sender's failure and
// lateMatched reports false.
func (e *engine) lateMatched(r *request, p *hsSlot, src int, late bool, state uint32) bool {
	if late && !p.state.CompareAndSwap(hsLatePosted, state) {
		if p.state.Load() == hsLost {
			e.rndvDone(r, p, src)
			e.refresh()
			e.complete(r, e.goneErr(r.c, src, r.op))
			return false
		}
		late = false
	}
	if !late {
		p.state.Store(state)
	}
	r.lateRecv = late
	return true
}

// lateLost completes a late receive (lateRecv) whose bytes will never
// arrive (hsLost), and reports whether it did.
func (e *engine) lateLost(r *request, p *hsSlot) bool {
	if !r.lateRecv || p.state.Load() != hsLost {
		return false
	}
	e.active.remove(r)
	e.rndvDone(r, p, r.wpeer)
	r.hs = -1
	e.refresh()
	e.complete(r, e.goneErr(r.c, r.wpeer, r.op))
	return true
}

// stageHook, set only by tests, runs at named stages of a matched
// receive, so that a test can kill a rank exactly there.
var stageHook func(e *engine, stage string)

func testStage(e *engine, stage string) {
	if stageHook != nil {
		stageHook(e, stage)
	}
	if ext.StageHook != nil {
		ext.StageHook(stage)
	}
}

// noteGone makes sure an operation just started with a peer that has
// already ended is judged (evaluate) rather than left to wait.
func (e *engine) noteGone(w int) {
	if e.gone[w] {
		e.needEval = true
	}
}

// awaitDeclared makes a death the kernel has marked (world rank w's
// liveness word) visible in gone[]: it declares it, and if another rank
// or thread is declaring it and not yet done publishing
// (job.Map.DeclareFailed bumps the epoch last), waits for that, or
// finishes it for a declarer that died. Bounded, in case the job is
// aborting. Called with the engine locked.
func (e *engine) awaitDeclared(w int) {
	e.checkLiveness()
	e.refresh()
	for i := 0; i < 1<<16 && !e.gone[w] && e.t.DeadRank(w); i++ {
		spin.Pause()
		e.t.Repair(e.me)
		e.refresh()
	}
}

// rndvDone tells the sender of r's rendezvous message, through its
// handshake slot p, that the copy is done: its send completes. A proxy's
// copy of a synchronous send leaves it waiting instead: the receiver's
// node says later whether the receive matched (proxy.take's ack).
func (e *engine) rndvDone(r *request, p *hsSlot, src int) {
	if r.holdDone {
		return
	}
	p.state.Store(hsDone)
	e.dbs[src].Ring()
}

// rndvLost ends a rendezvous receive whose copy failed: the sender's
// memory is gone (it died or exited) or the kernel said something else.
//
// ESRCH means the sender's process has no memory left: it is exiting.
// The kernel may say so before it marks the process's liveness word (it
// releases each thread's robust list as that thread leaves), so the
// failure may not be known yet. The receive then waits, copying nothing
// (lost), until it is: evaluate completes it with ErrProcFailed, or
// ErrPeerFinalized if the sender had finalized, once the watchers, a
// sleeper's liveness check or the launcher declare the end. Its error is
// never the kernel's.
func (e *engine) rndvLost(r *request, src int, err error) {
	e.refresh()
	if !e.gone[src] && err == unix.ESRCH {
		e.awaitDeclared(src)
		if !e.gone[src] {
			r.lost = true
			if r.list == nil {
				e.active.push(r)
			}
			return
		}
	}
	if r.list != nil {
		r.list.remove(r)
	}
	if e.gone[src] {
		e.complete(r, e.goneErr(r.c, src, r.op))
		return
	}
	e.complete(r, newErr(ErrOther, r.op, r.st.Source, "process_vm_readv from rank %d: %v", src, err))
}

// claimPiece takes a piece of a cooperative copy: from the front for the
// receiver, from the back for the sender, so that the two meet in the
// middle and a message of two pieces is copied by both at once.
func claimPiece(claim *atomic.Uint64, front bool) (int, bool) {
	for {
		v := claim.Load()
		f, b := uint32(v), uint32(v>>32)
		if f >= b {
			return 0, false
		}
		if front && claim.CompareAndSwap(v, v+1) {
			return int(f), true
		}
		if !front && claim.CompareAndSwap(v, uint64(b-1)<<32|uint64(f)) {
			return int(b - 1), true
		}
	}
}

// piece returns the byte range of piece i.
func piece(p *hsSlot, i, accept int) (off, n int) {
	pieceLen := int(p.pieceLen.Load())
	off = int(p.base.Load()) + i*pieceLen
	return off, min(pieceLen, accept-off)
}

// coopRecv is the receiver's share of a cooperative copy: it claims and
// reads pieces from the front until none is left, then completes once the
// sender's pieces are in too.
func (e *engine) coopRecv(r *request) {
	src := r.wpeer
	p := e.hsPtr(src, r.hs)
	claim, copied := &p.claim, &p.copied
	if e.lateLost(r, p) {
		return
	}
	if r.lateRecv && p.ready.Load() == 1 {
		// The late bytes are in the sender's buffer now: copy them as
		// from any sender (lateSend.Filled leaves that to us).
		r.lateRecv = false
	}
	for !r.lateRecv && (r.op != opProxy || !e.leaveToSender(r, copied.Load())) {
		i, ok := claimPiece(claim, true)
		if !ok {
			break
		}
		off, n := piece(p, i, r.accept)
		if err := e.readPeer(src, p, unsafe.Add(r.buf, off), off, n); err != nil {
			e.rndvLost(r, src, err)
			return
		}
		copied.Add(uint64(n))
		testStage(e, "copying")
	}
	if int(copied.Load()) < r.accept {
		testStage(e, "copying") // waiting for the sender's pieces
	}
	// A piece the sender claimed but could not write is ours to copy.
	if f := p.failed.Swap(0); f != 0 {
		off, n := piece(p, int(f-1), r.accept)
		if err := e.readPeer(src, p, unsafe.Add(r.buf, off), off, n); err != nil {
			e.rndvLost(r, src, err)
			return
		}
		copied.Add(uint64(n))
	}
	if int(copied.Load()) >= r.accept {
		e.active.remove(r)
		e.rndvDone(r, p, src)
		e.complete(r, nil)
	}
}

// opProxy is the operation of an agent's receives for its proxies.
const opProxy = "Proxy"

// patience is how long an agent's receive for a proxy leaves a
// rendezvous copy to the sender before it copies too, after the sender
// last moved a piece. An agent and the ranks of its node share the
// node's cores, so its share of the copy takes their CPU: and it copies
// with process_vm_readv (page pinning; it maps the rank's buffer only if
// that is AllocMem memory), the sender with memmove into the agent's
// buffer (AllocMem). Leaving it to a sender that is in a call of ours
// made osu_bw of 4 MiB across 2 nodes of one core each 3,640-3,800 MB/s
// against 2,490-3,440 (3 runs each, interleaved). A sender busy outside
// our calls moves nothing: then the agent copies after patience, so the
// message still goes on.
const patience = 100 * time.Microsecond

var procStart = time.Now()

// leaveToSender tells whether the proxy's receive r should not claim
// pieces now: while the sender's share (copied, the bytes copied so far)
// moved within patience. Meanwhile the engine's waits yield to the
// sender rather than sleep (patientUntil), so that the agent looks again
// when patience ends.
func (e *engine) leaveToSender(r *request, copied uint64) bool {
	now := int64(time.Since(procStart))
	if r.patientAt == 0 || copied != r.patientSeen {
		r.patientAt, r.patientSeen = now, copied
	}
	until := r.patientAt + int64(patience)
	if now >= until {
		return false
	}
	e.patientUntil = max(e.patientUntil, until)
	return true
}

// coopSend is the sender's share of a cooperative copy, from the back.
func (e *engine) coopSend(r *request, p *hsSlot) {
	claim, copied := &p.claim, &p.copied
	accept := int(p.accept.Load())
	dst := uintptr(p.dstAddr.Load())
	dstMem, dstBase := p.dstMem.Load(), p.dstBase.Load()
	moved := false
	for {
		i, ok := claimPiece(claim, false)
		if !ok {
			break
		}
		off, n := piece(p, i, accept)
		var err error
		if to := e.peerPtr(r.wpeer, dstMem, dstBase, dst+uintptr(off), n); to != nil {
			spin.CopyCached(to, unsafe.Add(r.buf, off), n)
		} else {
			err = e.cmaWrite(e.pid(r.wpeer), dst+uintptr(off), unsafe.Add(r.buf, off), n)
		}
		if err != nil {
			// Hand the piece back to the receiver and stop helping.
			p.failed.Store(uint64(i) + 1)
			e.dbs[r.wpeer].Ring()
			return
		}
		copied.Add(uint64(n))
		moved = true
	}
	if moved {
		e.dbs[r.wpeer].Ring() // the receiver may be waiting for our last piece
	}
}

// readPeer copies n bytes at offset off of the rendezvous buffer that
// rank src published in handshake slot p into dst: with memmove through
// a mapping when the buffer is AllocMem memory, else process_vm_readv.
func (e *engine) readPeer(src int, p *hsSlot, dst unsafe.Pointer, off, n int) error {
	raddr := uintptr(p.addr.Load()) + uintptr(off)
	if from := e.peerPtr(src, p.srcMem.Load(), p.srcBase.Load(), raddr, n); from != nil {
		spin.CopyCached(dst, from, n)
		return nil
	}
	return e.cmaRead(e.pid(src), dst, raddr, n)
}

// cmaRead copies n bytes at raddr in process pid into dst.
func (e *engine) cmaRead(pid int, dst unsafe.Pointer, raddr uintptr, n int) error {
	return e.cmaCopy(pid, dst, raddr, n, unix.ProcessVMReadv)
}

// cmaWrite copies n bytes from src into raddr in process pid.
func (e *engine) cmaWrite(pid int, raddr uintptr, src unsafe.Pointer, n int) error {
	return e.cmaCopy(pid, src, raddr, n, unix.ProcessVMWritev)
}

// cmaCopy moves n bytes between local memory and raddr in process pid with
// process_vm_readv or process_vm_writev, resuming partial transfers.
func (e *engine) cmaCopy(pid int, local unsafe.Pointer, raddr uintptr, n int,
	rw func(int, []unix.Iovec, []unix.RemoteIovec, uint) (int, error)) error {
	for off := 0; off < n; {
		e.iov[0].Base = (*byte)(unsafe.Add(local, off))
		e.iov[0].SetLen(n - off)
		e.riov[0] = unix.RemoteIovec{Base: raddr + uintptr(off), Len: n - off}
		k, err := rw(pid, e.iov[:], e.riov[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if k <= 0 {
			return unix.EFAULT
		}
		off += k
	}
	return nil
}

// advance moves every transfer in the active list along.
func (e *engine) advance() {
	for r := e.active.head; r != nil; {
		next := r.next
		switch {
		case r.frag || r.ackMsg || r.lost:
			// Moved along by inbox messages (fallback.go), or waiting
			// for its sender's end to be declared (rndvLost), not here.
		case r.send:
			e.advanceSend(r)
		case e.cma && e.hsPtr(r.wpeer, r.hs).state.Load() == hsCoop:
			e.coopRecv(r)
		default:
			e.pullPipe(r)
		}
		r = next
	}
}

func (e *engine) advanceSend(r *request) {
	p := e.hsPtr(e.me, r.hs)
	switch p.state.Load() {
	case hsDone:
		e.active.remove(r)
		e.freeHS(r.hs)
		r.hs = -1
		e.complete(r, nil)
	case hsRevoked, hsDropped, hsDead:
		why := refusedWhy(p.state.Load())
		e.active.remove(r)
		e.freeHS(r.hs)
		r.hs = -1
		e.complete(r, refusedErr(r.c, r.op, r.peer, why))
	case hsCoop:
		if !r.unready {
			e.coopSend(r, p)
		}
	case hsPiped:
		if !r.unready {
			e.pushPipe(r, p)
		}
	}
}

// pushPipe fills the pipeline of a rendezvous send with chunks.
func (e *engine) pushPipe(r *request, p *hsSlot) {
	accept := int(p.accept.Load())
	tailW, headW := &p.pipeTail, &p.pipeHead
	for r.off < accept {
		tail := tailW.Load()
		if tail-headW.Load() >= hsPipeLen {
			return
		}
		k := e.allocChunk(r.wpeer)
		if k < 0 {
			return
		}
		m := min(e.csz, accept-r.off)
		memmove(e.chunkPtr(e.me, k), unsafe.Add(r.buf, r.off), m)
		p.pipe[tail%hsPipeLen] = pipeEntry{uint32(k), uint32(m)}
		tailW.Store(tail + 1)
		e.dbs[r.wpeer].Ring()
		r.off += m
	}
}

// pullPipe drains the pipeline of a rendezvous receive.
func (e *engine) pullPipe(r *request) {
	src := r.wpeer
	p := e.hsPtr(src, r.hs)
	if e.lateLost(r, p) {
		return
	}
	tailW, headW := &p.pipeTail, &p.pipeHead
	moved := false
	for {
		head := headW.Load()
		if head == tailW.Load() {
			break
		}
		ent := p.pipe[head%hsPipeLen]
		k, m := int(ent.chunk), int(ent.len)
		memmove(unsafe.Add(r.buf, r.off), e.chunkPtr(src, k), m)
		e.freeChunk(src, k)
		r.off += m
		headW.Store(head + 1)
		moved = true
		testStage(e, "copying")
	}
	if r.off >= r.accept {
		e.active.remove(r)
		e.rndvDone(r, p, src)
		r.hs = -1
		e.complete(r, nil)
	} else if moved {
		e.dbs[src].Ring()
	}
}
