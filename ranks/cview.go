package ranks

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/ring"
)

// The C view of the engine: what the C library's fast paths
// (cabi/fastpath.h) read and write to send and receive a small message
// without entering Go, one crossing being most of a small message's cost
// from C (docs/c.md). They mirror sendInline and recv's recvFast for the
// common case and return to Go for anything else, consuming nothing.
//
// They hold the engine lock the way its owner does: by bias
// (biaslock.go), from the C thread whose callbacks are the bias's owner
// goroutine. The addresses below are of the engine's fields (the engine,
// its slices' arrays and the inbox consumer are pinned for the process's
// life) and of shared memory; a communicator's fields are at the offsets
// of CCommLayout from the address CPin gives.

// CView is the engine's part.
type CView struct {
	e *engine

	Me, N int

	BiasOn, BiasOff *atomic.Uint32 // e.bias.on, e.bias.off (atomic.Bool)
	BiasInside      *uint64
	Want            *atomic.Int32
	KillAt          *int64
	Spin            *bool
	Closed          *bool
	NeedEval        *bool
	Released        *bool
	Epoch           *atomic.Uint64 // shared
	SeenEpoch       *uint64
	Rx, RxBytes     *uint64
	RxAtSend        *uint64
	Tx, TxBytes     *uint64
	LastDest        *int
	ActiveN         *int
	QueuedLen       *int
	AckqLen         *int
	Starving        *atomic.Uint32 // shared: some rank sleeps with sends waiting for room
	FenceWord       *atomic.Uint32
	YieldBudget     *int // collective waits' sched_yields before sleeping

	// Per world rank: the send queue's length (at SendqN + w*SendqStride),
	// whether the rank is gone, our producer on its inbox, its doorbell.
	SendqN      unsafe.Pointer
	SendqStride uintptr
	Gone        *bool
	Prods       []ring.CProducer
	Doorbells   []*atomic.Uint32
	Inbox       ring.CConsumer

	// Protocol constants.
	InlineMax, ShortMax, GuardData11, GuardStride int
	KInline, KShort                               uint8
	TagUB                                         int
}

// CCommLayout is where a communicator keeps what the fast paths read:
// byte offsets in Comm.
type CCommLayout struct {
	Ctx, UnexpN, PostedN, Unusable, PeerCtx, Group, ToComm uintptr
	OkEpoch                                                uintptr // atomic.Uint64: ext.Check's fast test
}

var cPin runtime.Pinner

// CView returns the engine's C view, pinning what it points into.
func (w *World) CView() *CView {
	e := w.e
	cPin.Pin(e)
	cPin.Pin(e.inbox)
	cPin.Pin(&e.sendq[0])
	cPin.Pin(&e.gone[0])
	v := &CView{
		e: e, Me: e.me, N: e.n,
		BiasOn:     (*atomic.Uint32)(unsafe.Pointer(&e.bias.on)),
		BiasOff:    (*atomic.Uint32)(unsafe.Pointer(&e.bias.off)),
		BiasInside: &e.bias.inside,
		Want:       &e.want,
		KillAt:     &e.killAt,
		Spin:       &e.spin, Closed: &e.closed,
		NeedEval: &e.needEval, Released: &e.released,
		Epoch: e.epoch, SeenEpoch: &e.seenEpoch,
		Rx: &e.rx, RxBytes: &e.rxBytes, RxAtSend: &e.rxAtSend,
		Tx: &e.tx, TxBytes: &e.txBytes, LastDest: &e.lastDest,
		ActiveN:     &e.active.n,
		QueuedLen:   sliceLen(unsafe.Pointer(&e.queued)),
		AckqLen:     sliceLen(unsafe.Pointer(&e.ackq)),
		Starving:    e.t.Starving,
		FenceWord:   &e.fenceWord,
		YieldBudget: &e.yieldBudget,
		SendqN:      unsafe.Add(unsafe.Pointer(&e.sendq[0]), unsafe.Offsetof(e.sendq[0].n)),
		SendqStride: unsafe.Sizeof(e.sendq[0]),
		Gone:        &e.gone[0],
		Inbox:       e.inbox.C(),
		InlineMax:   inlineMax, ShortMax: shortMax,
		GuardData11: guardData11, GuardStride: guardStride,
		KInline: kInline, KShort: kShort,
		TagUB: TagUB,
	}
	for r := range e.n {
		v.Prods = append(v.Prods, e.prods[r].C())
		v.Doorbells = append(v.Doorbells, &e.t.CB(r).Doorbell)
	}
	return v
}

// sliceLen is the address of the length word of the slice header at p.
func sliceLen(p unsafe.Pointer) *int { return (*int)(unsafe.Add(p, unsafe.Sizeof(uintptr(0)))) }

// CommLayout returns the offsets of CCommLayout.
func CommLayout() CCommLayout {
	var c Comm
	return CCommLayout{
		Ctx:      unsafe.Offsetof(c.ctx),
		UnexpN:   unsafe.Offsetof(c.unexp) + unsafe.Offsetof(c.unexp.n),
		PostedN:  unsafe.Offsetof(c.posted) + unsafe.Offsetof(c.posted.n),
		Unusable: unsafe.Offsetof(c.unusable),
		PeerCtx:  unsafe.Offsetof(c.peerCtx),
		Group:    unsafe.Offsetof(c.group),
		ToComm:   unsafe.Offsetof(c.toComm),
		OkEpoch:  unsafe.Offsetof(c.okEpoch),
	}
}

// CPin pins c and its rank maps for a C fast path and returns its
// address; CUnpin ends that when c's handle is freed.
func (c *Comm) CPin(p *runtime.Pinner) unsafe.Pointer {
	p.Pin(c)
	if len(c.group) > 0 {
		p.Pin(&c.group[0])
	}
	if len(c.toComm) > 0 {
		p.Pin(&c.toComm[0])
	}
	return unsafe.Pointer(c)
}

// ClaimBias makes the calling goroutine the owner of the engine lock's
// bias if it has none yet, and reports whether the caller owns it: the C
// fast paths may then take the lock as the owner does.
func (v *CView) ClaimBias() bool {
	e := v.e
	if !e.bias.on.Load() || e.bias.off.Load() || !spin.HaveGoroutineID {
		return false
	}
	g := spin.GoroutineID()
	if o := e.bias.owner.Load(); o != 0 {
		return o == g
	}
	e.lock() // the first holder by mutex becomes the owner (afterMutex)
	e.unlock()
	return e.bias.owner.Load() == g
}

// Ring rings world rank w's doorbell, for a fast path that found a
// sleeper there.
func (v *CView) Ring(w int) { v.e.dbs[w].Ring() }

// Relax is what recvFast does after a receive while a sender starves.
func (v *CView) Relax() {
	e := v.e
	e.lock()
	e.relax()
	e.unlock()
}
