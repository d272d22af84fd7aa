package win

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Windows whose communicator spans nodes (docs/nodes.md). Members on
// other nodes share no memory with this one, so nothing of such a window
// is in shared memory: each member's part stays in its own memory, and
// each member runs a server goroutine that applies the other members'
// operations to it, in the order each origin sent them, and keeps its
// lock and accumulate lock. Origins talk to it with messages on the
// window's communicator (a private duplicate):
//
//	tag 1 (netTagReq): a request to the target's server: a header of four
//	  int64s (kind, tag of its data or reply, byte offset or address in a
//	  dynamic window, bytes), then a Put's bytes when they are at most
//	  netInline
//	tag 2 (netTagPost): Post's notice to each origin of its group
//	tag 3 (netTagComplete): Complete's notice to each target of its Start
//	tags from 16: one request's data (a larger Put's bytes, from the
//	  origin) or reply (from the server), each tag used one way only
//
// A Put is one message (two above netInline) and gets no reply: an
// origin marks the target dirty and flushes it (a round trip, which the
// server answers after every earlier request of that origin) where MPI
// wants the Put complete: Flush, Unlock, Fence, Complete. A Get is a
// round trip. Accumulates run at the origin, as over user memory on one
// node, in a round trip and a message: the target's accumulate lock and
// the bytes (reqAccGet), then the op, then the result and the release
// (reqAccPut). Locks queue at the server in arrival order; a holder that
// fails poisons the lock (ErrProcFailed for every later attempt), as on
// one node. The server learns of failures from its AnySource receive,
// which it acknowledges. A window's own part is loaded and stored
// directly by its member.
//
// The server calls ranks from its own goroutine, so such a window makes
// a rank below ThreadMultiple take its engine lock (ext.Concurrent).
const (
	netTagReq      = 1
	netTagPost     = 2
	netTagComplete = 3
	netTagFirst    = 16

	netHeader   = 32       // bytes of a request's header
	netInline   = 4096     // the largest Put sent with its header
	netBatchMax = 16 << 10 // the largest message of requests
)

// Request kinds.
const (
	reqPut        = iota + 1 // the bytes (inline, or next); no reply
	reqGet                   // the reply is the bytes, or none if not exposed
	reqFlush                 // the reply is a code: the origin's Puts are applied
	reqLockExcl              // the reply (a code) when granted
	reqLockShared            // likewise
	reqUnlock                // releases; the reply (a code) is a flush's
	reqAccGet                // the accumulate lock, then the bytes and a code (a code alone: refused)
	reqAccPut                // a Put, then the accumulate lock's release; no reply
	reqStop                  // from the server's own rank at Free
	reqAccOp                 // a registered op's operands (netops.go); no reply
	reqGetAccOp              // likewise; the reply is the old bytes and a code
	reqCAS                   // compare and swap values; the reply is the old bytes and a code

	reqKindMask  = 0xff
	reqInline    = 1 << 8 // or'ed into the kind: the bytes follow the header, padded to 8
	reqLazy      = 1 << 9 // or'ed into a lock's kind: no reply (netLock)
	reqCodeShift = 16     // an op's code (netops.go) in the kind's bits from here
)

// Reply codes.
const (
	replyOK       = iota
	replyPoisoned // a holder of the lock failed
	replyRange    // a Put of this origin fell outside the memory exposed
)

// netPid marks a where in a window across nodes: addr is then the byte
// offset in the target's part (the address in a dynamic window), which
// the target's server reaches.
const netPid = -1

// netWin is the state of a window across nodes.
type netWin struct {
	tags    atomic.Uint32 // the last data or reply tag taken (less netTagFirst)
	dirty   []atomic.Bool // per target: Puts sent since its last flush
	batches []netBatch    // per target
	done    chan struct{} // closed when the server returns

	// This rank's exposure epoch (Post, Wait, Test: the exposing call's).
	completed []bool // per origin of the exposure: its Complete arrived

	// The server's own state: its goroutine's only.
	excl     int    // the exclusive holder + 1, or 0
	shared   []bool // per member: holds the lock shared
	nshared  int
	poisoned bool
	queue    []netWaiter
	acc      int // the accumulate lock's holder + 1, or 0
	accBad   bool
	accQueue []netWaiter
	pending  []int64 // per origin: the code its next flush returns
	accReply []byte  // reqAccGet's reply

	// Lazy locks (netLock), per origin: it waits for the lock, and its
	// requests meanwhile (deferred, as they came); its lock failed, so
	// its epoch's requests get the error; origins to serve again.
	waiting  []bool
	deferred [][]byte
	failed   []bool
	ready    []int
}

type netWaiter struct {
	src, tag int
	kind     int64
	off      uint64 // reqAccGet's bytes, or those an op applies to
	n        int
	data     []byte // an op's operands (reqAccOp, reqGetAccOp, reqCAS)
}

// netBatch is the requests to one target not sent yet: Puts.
type netBatch struct {
	mu  sync.Mutex
	buf []byte
}

// newNet makes a window across nodes over buf (nil for a dynamic one):
// collective over c.
func newNet(c *ranks.Comm, op string, buf []byte, dispUnit int, dynamic bool, h *hints, flavor Flavor) (*Win, error) {
	d, err := c.Dup()
	if err != nil {
		return nil, err
	}
	size, me := d.Size(), d.Rank()
	w := &Win{c: d, size: size, rank: me, dispUnit: make([]int, size), off: make([]int, size), length: make([]int, size),
		locked: make([]atomic.Int32, size), inAccess: make([]atomic.Bool, size), started: make([]uint32, size),
		seenStart: make([]bool, size), seenPost: make([]bool, size),
		hdr: new(header), remote: true, dynamic: dynamic, flavor: flavor, own: buf,
		net: &netWin{dirty: make([]atomic.Bool, size), batches: make([]netBatch, size), done: make(chan struct{}), completed: make([]bool, size),
			shared: make([]bool, size), pending: make([]int64, size),
			waiting: make([]bool, size), deferred: make([][]byte, size), failed: make([]bool, size)}}
	w.hints.Store(h)
	w.byteDisp = h.byteDisp
	w.words = (size + 63) / 64
	if dynamic {
		w.lists = make([]atomic.Pointer[regionList], size)
	}
	w.pins = map[uintptr]*runtime.Pinner{}
	all := make([]int64, 2*size)
	if err := coll.Allgather(d, []int64{int64(len(buf)), int64(dispUnit)}, all); err != nil {
		d.Free()
		return nil, err
	}
	for r := range size {
		w.length[r], w.dispUnit[r] = int(all[2*r]), int(all[2*r+1])
	}
	ext.Concurrent(d)
	ext.Serving(d, netTagReq)
	go w.serve()
	return w, nil
}

// netIsRevoked: another member's Revoke reaches this one through the
// communicator.
func (w *Win) netIsRevoked() bool { return ext.Revoked(w.c) }

// netTag is a tag of its own for one request's data or reply.
func (w *Win) netTag() int {
	return netTagFirst + int(w.net.tags.Add(1)%(ranks.TagUB-netTagFirst))
}

// netErr is the error of a message to or from target t that failed.
func (w *Win) netErr(op string, t int, err error) error {
	if w.isRevoked() || errors.Is(err, ranks.ErrRevoked) {
		return &ranks.Error{Class: ranks.ErrRevoked, Op: op, Rank: -1, Detail: "the window was revoked"}
	}
	if errors.Is(err, ranks.ErrProcFailed) {
		return w.procFailed(op, t, "the target has failed")
	}
	return fmt.Errorf("%s: target %d: %w", op, t, err)
}

// netIssue sends target t's server a request of kind about off and n,
// with data if any, after posting the receive of its reply into reply if
// that is not nil (the request it returns). A Put of at most netInline
// bytes waits in t's batch, to leave with the next request to t that
// does not, or when the batch is full: as Open MPI's pt2pt component
// packs operations, since each message across nodes costs far more than
// its bytes. Any other request sends the batch with it at once; a larger
// Put's bytes follow as a message of their own.
func (w *Win) netIssue(op string, t int, kind int64, off uint64, n int, data, reply []byte) (*ranks.Request, error) {
	tag := w.netTag()
	var q *ranks.Request
	if reply != nil {
		var err error
		if q, err = ranks.Irecv(w.c, reply, t, tag); err != nil {
			return nil, w.netErr(op, t, err)
		}
	}
	inline := data != nil && len(data) <= netInline
	// Requests that need no reply and that the origin cannot wait on
	// wait in the batch.
	batched := inline && (kind == reqPut || kind&reqKindMask == reqAccOp) || kind&reqLazy != 0
	rec := netHeader
	if inline {
		rec += (len(data) + 7) &^ 7
	}
	b := &w.net.batches[t]
	b.mu.Lock()
	var err error
	if len(b.buf)+rec > netBatchMax {
		err = w.netSendBatch(t, b)
	}
	if err == nil {
		if b.buf == nil {
			b.buf = make([]byte, 0, netBatchMax)
		}
		k := kind
		if inline {
			k |= reqInline
		}
		at := len(b.buf)
		b.buf = b.buf[:at+rec]
		putHeader(b.buf[at:], k, tag, off, n)
		if inline {
			copy(b.buf[at+netHeader:], data)
		}
		if !batched {
			err = w.netSendBatch(t, b)
			if err == nil && data != nil && !inline {
				err = ranks.Send(w.c, data, t, tag)
			}
		}
	}
	b.mu.Unlock()
	if err != nil {
		if q != nil {
			q.Cancel()
			q.Wait()
		}
		return nil, w.netErr(op, t, err)
	}
	return q, nil
}

// netSendBatch sends t's batch (under its lock).
func (w *Win) netSendBatch(t int, b *netBatch) error {
	if len(b.buf) == 0 {
		return nil
	}
	err := ranks.Send(w.c, b.buf, t, netTagReq)
	b.buf = b.buf[:0]
	return err
}

// netCall is netIssue that waits for the reply; it returns the reply's
// length.
func (w *Win) netCall(op string, t int, kind int64, off uint64, n int, data, reply []byte) (int, error) {
	q, err := w.netIssue(op, t, kind, off, n, data, reply)
	if err != nil || q == nil {
		return 0, err
	}
	st, err := q.Wait()
	if err != nil {
		return 0, w.netErr(op, t, err)
	}
	return st.Bytes, nil
}

// netCode makes a request whose reply is a code.
func (w *Win) netCode(op string, t int, kind int64) error {
	var code [1]int64
	if _, err := w.netCall(op, t, kind, 0, 0, nil, bytesOf(code[:])); err != nil {
		return err
	}
	return w.codeErr(op, t, code[0])
}

// codeErr is the error of a reply's code.
func (w *Win) codeErr(op string, t int, code int64) error {
	switch code {
	case replyOK:
		return nil
	case replyPoisoned:
		return w.procFailed(op, t, "the lock's holder failed: the lock is poisoned")
	case replyRange:
		return w.errf(ranks.ErrArg, op, t, "a Put fell outside the memory the target attached")
	}
	return w.errf(ranks.ErrOther, op, t, "reply code %d", code)
}

// netRead is a Get of len(b) bytes at off in t's part.
func (w *Win) netRead(op string, t int, off uintptr, b []byte) error {
	n, err := w.netCall(op, t, reqGet, uint64(off), len(b), nil, b)
	if err == nil && n != len(b) {
		// Refused: a lock taken lazily that failed says so at a flush.
		if err = w.netCode(op, t, reqFlush); err == nil {
			err = w.errf(ranks.ErrArg, op, t, "%d bytes at address %#x: not in memory the target attached", len(b), off)
		}
	}
	return err
}

// netWrite is a Put of b at off in t's part.
func (w *Win) netWrite(op string, t int, off uintptr, b []byte) error {
	w.net.dirty[t].Store(true)
	_, err := w.netCall(op, t, reqPut, uint64(off), len(b), b, nil)
	return err
}

// netFlush completes this rank's Puts to t, if any since the last flush.
func (w *Win) netFlush(op string, t int) error {
	if !w.net.dirty[t].Swap(false) {
		return nil
	}
	return w.netCode(op, t, reqFlush)
}

// netFlushAll flushes every target; the first error is returned.
func (w *Win) netFlushAll(op string) error {
	var ts []int
	for t := range w.size {
		if w.net.dirty[t].Swap(false) {
			ts = append(ts, t)
		}
	}
	return firstErr(w.netEach(op, ts, func(int) int64 { return reqFlush }))
}

// netEach sends each target in ts the request kind(t), whose reply is a
// code, all before it waits for any (LockAll, UnlockAll and FlushAll to
// many targets take one round trip, not one each), and returns each
// one's error.
func (w *Win) netEach(op string, ts []int, kind func(t int) int64) []error {
	if len(ts) == 0 {
		return nil
	}
	codes := make([]int64, len(ts))
	qs := make([]*ranks.Request, len(ts))
	errs := make([]error, len(ts))
	for i, t := range ts {
		qs[i], errs[i] = w.netIssue(op, t, kind(t), 0, 0, nil, bytesOf(codes[i:i+1]))
	}
	for i, q := range qs {
		if errs[i] != nil {
			continue
		}
		if _, err := q.Wait(); err != nil {
			errs[i] = w.netErr(op, ts[i], err)
		} else {
			errs[i] = w.codeErr(op, ts[i], codes[i])
		}
	}
	return errs
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// netLockAll takes every member's lock shared (LockAll), at once; if one
// fails, it lets those it got go.
func (w *Win) netLockAll(op string) error {
	ts := make([]int, w.size)
	for t := range ts {
		ts[t] = t
	}
	errs := w.netEach(op, ts, func(int) int64 { return reqLockShared })
	err := firstErr(errs)
	if err != nil {
		var got []int
		for t, e := range errs {
			if e == nil {
				got = append(got, t)
			}
		}
		w.netEach(op, got, func(int) int64 { return reqUnlock })
	}
	return err
}

// netLock takes t's lock (reqLockExcl or reqLockShared).
// A lock of another member is taken lazily, as MPICH does: the request
// waits in the target's batch and leaves with the epoch's first request
// that does (a Get, a flush, Unlock), and the target's server holds back
// the origin's later requests until it grants the lock. So Lock, Put,
// Unlock is one round trip, and the lock's failure (a dead holder)
// comes from the call that waits. MPI allows it, but for a lock of the
// caller's own part, which must be held when Lock returns (local loads
// and stores rely on it).
func (w *Win) netLock(op string, t int, kind int64) error {
	if t != w.rank {
		_, err := w.netIssue(op, t, kind|reqLazy, 0, 0, nil, nil)
		return err
	}
	return w.netCode(op, t, kind)
}

// netUnlock releases t's lock once this rank's Puts to it are applied.
func (w *Win) netUnlock(op string, t int) error {
	w.net.dirty[t].Store(false)
	return w.netCode(op, t, reqUnlock)
}

// netPost tells each origin of group that this rank posted.
func (w *Win) netPost(op string, group []int) error {
	var first error
	for _, o := range group {
		w.net.completed[o] = false
		if err := ranks.Send(w.c, []byte(nil), o, netTagPost); err != nil && first == nil {
			first = w.netErr(op, o, err)
		}
	}
	return first
}

// netStart waits for t's Post.
func (w *Win) netStart(op string, t int) error {
	if _, err := ranks.Recv(w.c, []byte(nil), t, netTagPost); err != nil {
		if errors.Is(err, ranks.ErrProcFailed) {
			return w.procFailed(op, t, "the target failed before it posted")
		}
		return w.netErr(op, t, err)
	}
	return nil
}

// netComplete completes this rank's Puts to t and tells t.
func (w *Win) netComplete(op string, t int) error {
	err := w.netFlush(op, t)
	if serr := ranks.Send(w.c, []byte(nil), t, netTagComplete); serr != nil && err == nil {
		err = w.netErr(op, t, serr)
	}
	return err
}

// netExposureDone receives the Completes of the exposure's origins:
// all of them (block), or those that arrived (Test).
func (w *Win) netExposureDone(op string, block bool) (bool, error) {
	all := true
	for _, o := range w.exposure {
		if w.net.completed[o] {
			continue
		}
		if !block {
			_, ok, err := w.c.Iprobe(o, netTagComplete)
			if err != nil {
				return false, w.netExposureErr(op, o, err)
			}
			if !ok {
				all = false
				continue
			}
		}
		if _, err := ranks.Recv(w.c, []byte(nil), o, netTagComplete); err != nil {
			return false, w.netExposureErr(op, o, err)
		}
		w.net.completed[o] = true
	}
	return all, nil
}

func (w *Win) netExposureErr(op string, o int, err error) error {
	if errors.Is(err, ranks.ErrProcFailed) {
		return w.procFailed(op, o, "an origin failed before it completed")
	}
	return w.netErr(op, o, err)
}

// netStop ends this rank's server (Free): a request from this rank,
// unless the window was revoked, which ends the server's receive.
func (w *Win) netStop() {
	if !w.isRevoked() {
		if _, err := w.netIssue("Win.Free", w.rank, reqStop, 0, 0, nil, nil); err != nil {
			ext.Revoke(w.c) // the server's receive then ends
		}
	}
	<-w.net.done
}

// serve is the server of this rank's part: it runs until Free, a revoke
// of the window, or the end of the rank.
func (w *Win) serve() {
	n := w.net
	defer close(n.done)
	m := make([]byte, netBatchMax)
	var scratch []byte
	for {
		st, err := ranks.Recv(w.c, m, ranks.AnySource, netTagReq)
		if err != nil {
			if errors.Is(err, ranks.ErrProcFailed) || errors.Is(err, ranks.ErrProcFailedPending) {
				if w.c.FailureAck() == nil {
					n.reap(w)
					w.serveReady(&scratch)
					continue
				}
			}
			return // revoked, freed, or the rank ended
		}
		if w.serveRecords(st.Source, m[:st.Bytes], &scratch) {
			return
		}
		w.serveReady(&scratch)
	}
}

// serveReady serves the requests held back from the origins whose lazy
// lock was granted (or refused) meanwhile, in order.
func (w *Win) serveReady(scratch *[]byte) {
	n := w.net
	for len(n.ready) > 0 {
		o := n.ready[0]
		n.ready = n.ready[1:]
		held := n.deferred[o]
		n.deferred[o] = nil
		w.serveRecords(o, held, scratch)
	}
}

// serveRecords serves the requests in buf from src, or holds them back
// while src waits for a lock it asked for lazily; it reports whether the
// server is to stop.
func (w *Win) serveRecords(src int, buf []byte, scratch *[]byte) bool {
	n := w.net
	for at := 0; at+netHeader <= len(buf); {
		start := at
		kind, tag, off, size := getHeader(buf[at:])
		at += netHeader
		var inline []byte
		if kind&reqInline != 0 {
			if size < 0 || size > len(buf)-at {
				return false // not a request of ours
			}
			inline = buf[at : at+size]
			at += (size + 7) &^ 7
		}
		if n.waiting[src] {
			n.deferred[src] = append(n.deferred[src], buf[start:at]...)
			continue
		}
		kind &^= reqInline
		if n.failed[src] {
			w.serveFailed(src, kind, tag, size, inline, scratch)
			continue
		}
		if w.serveOne(src, kind, tag, off, size, inline, scratch) {
			return true
		}
	}
	return false
}

// serveFailed answers a request of src's epoch whose lazy lock failed
// (its holder died): nothing is applied, and what waits gets the error,
// until src's Unlock.
func (w *Win) serveFailed(src int, kind int64, tag, size int, inline []byte, scratch *[]byte) {
	switch kind & reqKindMask {
	case reqPut, reqAccPut, reqAccOp:
		if inline == nil && size > 0 {
			if cap(*scratch) < size {
				*scratch = make([]byte, size)
			}
			ranks.Recv(w.c, (*scratch)[:size], src, tag) // the bytes, dropped
		}
	case reqGet:
		ranks.Send(w.c, []byte{}, src, tag)
	case reqUnlock:
		w.net.failed[src] = false
		w.netReply(src, tag, replyPoisoned)
	case reqFlush, reqAccGet, reqGetAccOp, reqCAS, reqLockExcl, reqLockShared:
		w.netReply(src, tag, replyPoisoned)
	}
}

// serveOne handles one request from src; it reports whether the server
// is to stop.
func (w *Win) serveOne(src int, kind int64, tag int, off uint64, size int, inline []byte, scratch *[]byte) bool {
	n := w.net
	switch kind & reqKindMask {
	case reqAccOp, reqGetAccOp, reqCAS:
		data := make([]byte, size) // kept if it must wait for the lock
		if inline != nil {
			copy(data, inline)
		} else if _, err := ranks.Recv(w.c, data, src, tag); err != nil {
			break // a failed origin
		}
		q := netWaiter{src: src, tag: tag, kind: kind, off: off, n: size, data: data}
		if n.acc != 0 || len(n.accQueue) > 0 {
			n.accQueue = append(n.accQueue, q)
		} else {
			n.applyOp(w, q)
		}
	case reqPut, reqAccPut:
		dst := w.netLocal(off, size)
		if dst == nil && size > 0 {
			if cap(*scratch) < size {
				*scratch = make([]byte, size)
			}
			dst = (*scratch)[:size]
			n.pending[src] = replyRange
		}
		if inline != nil {
			copy(dst, inline)
		} else if size > 0 {
			ranks.Recv(w.c, dst, src, tag) // a failed origin: nothing to do
		}
		if kind == reqAccPut && n.acc == src+1 {
			n.acc = 0
			n.grantAcc(w)
		}
	case reqGet:
		b := w.netLocal(off, size)
		if b == nil {
			b = []byte{}
		}
		ranks.Send(w.c, b, src, tag)
	case reqFlush:
		w.netReply(src, tag, n.pending[src])
		n.pending[src] = replyOK
	case reqLockExcl, reqLockShared:
		if kind&reqLazy != 0 {
			n.waiting[src] = true // until grant
		}
		n.queue = append(n.queue, netWaiter{src: src, tag: tag, kind: kind})
		n.grant(w)
	case reqUnlock:
		if n.excl == src+1 {
			n.excl = 0
		} else if n.shared[src] {
			n.shared[src] = false
			n.nshared--
		}
		w.netReply(src, tag, n.pending[src])
		n.pending[src] = replyOK
		n.grant(w)
	case reqAccGet:
		n.accQueue = append(n.accQueue, netWaiter{src: src, tag: tag, kind: kind, off: off, n: size})
		n.grantAcc(w)
	case reqStop:
		return src == w.rank
	}
	return false
}

// netLocal returns the n bytes of this rank's part at off (an address
// in a dynamic window), or nil if they are not all exposed.
func (w *Win) netLocal(off uint64, n int) []byte {
	if w.dynamic {
		l := w.lists[w.rank].Load()
		if l == nil {
			return nil
		}
		i := l.find(off, n)
		if i < 0 {
			return nil
		}
		o := int(off - l.r[i].addr)
		return l.bufs[i][o : o+n : o+n]
	}
	if off > uint64(len(w.own)) || uint64(n) > uint64(len(w.own))-off {
		return nil
	}
	return w.own[off : int(off)+n : int(off)+n]
}

func (w *Win) netReply(dst, tag int, code int64) {
	c := [1]int64{code}
	ranks.Send(w.c, c[:], dst, tag) // a failed origin: nothing to do
}

// grant gives the lock to the waiters at the head of the queue that may
// have it now, in arrival order.
func (n *netWin) grant(w *Win) {
	for len(n.queue) > 0 {
		q := n.queue[0]
		kind, lazy := q.kind&reqKindMask, q.kind&reqLazy != 0
		code := int64(replyOK)
		switch {
		case n.poisoned:
			code = replyPoisoned
		case kind == reqLockExcl && n.excl == 0 && n.nshared == 0:
			n.excl = q.src + 1
		case kind == reqLockShared && n.excl == 0:
			if !n.shared[q.src] {
				n.shared[q.src] = true
				n.nshared++
			}
		default:
			return
		}
		n.queue = n.queue[1:]
		if !lazy {
			w.netReply(q.src, q.tag, code)
			continue
		}
		// The origin's requests held back run now (serve), or fail.
		n.waiting[q.src] = false
		n.failed[q.src] = code != replyOK
		n.ready = append(n.ready, q.src)
	}
}

// grantAcc gives the accumulate lock to the first waiter, with the
// bytes it asked for; ops waiting before it are applied.
func (n *netWin) grantAcc(w *Win) {
	for len(n.accQueue) > 0 && n.acc == 0 {
		q := n.accQueue[0]
		n.accQueue = n.accQueue[1:]
		if q.kind&reqKindMask != reqAccGet {
			n.applyOp(w, q)
			continue
		}
		b := w.netLocal(q.off, q.n)
		switch {
		case n.accBad:
			w.netReply(q.src, q.tag, replyPoisoned)
		case b == nil:
			w.netReply(q.src, q.tag, replyRange)
		default:
			n.acc = q.src + 1
			// The bytes and a code: one message.
			if cap(n.accReply) < q.n+8 {
				n.accReply = make([]byte, q.n+8)
			}
			r := n.accReply[:q.n+8]
			copy(r, b)
			binary.LittleEndian.PutUint64(r[q.n:], replyOK)
			ranks.Send(w.c, r, q.src, q.tag) // a failed origin: reap releases
		}
	}
}

// netAccGet takes t's accumulate lock and reads len(b)-8 bytes at off
// into b (a code after them): one round trip.
func (w *Win) netAccGet(op string, t int, off uintptr, b []byte) error {
	k, err := w.netCall(op, t, reqAccGet, uint64(off), len(b)-8, nil, b)
	if err != nil {
		return err
	}
	if k == len(b) {
		return nil
	}
	switch binary.LittleEndian.Uint64(b) {
	case replyPoisoned:
		return w.procFailed(op, t, "an accumulate's origin failed holding the target's accumulate lock")
	case replyRange:
		return w.errf(ranks.ErrArg, op, t, "%d bytes at address %#x: not in memory the target attached", len(b)-8, off)
	}
	return w.errf(ranks.ErrOther, op, t, "accumulate reply of %d bytes", k)
}

// netAccPut writes b at off in t's part and releases t's accumulate
// lock: one message (two for large ones), no reply.
func (w *Win) netAccPut(op string, t int, off uintptr, b []byte) error {
	w.net.dirty[t].Store(true)
	_, err := w.netCall(op, t, reqAccPut, uint64(off), len(b), b, nil)
	return err
}

// accumulateNet is accumulate in a window across nodes: the target's
// bytes under its accumulate lock, the op here, the result back.
func accumulateNet[T any](w *Win, op string, src, result []T, target int, at where, f coll.Op[T]) error {
	sz := elemSize[T]()
	nb := len(src) * sz
	buf := make([]T, (nb+8+sz-1)/sz) // room for the reply's code
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), nb+8)
	if err := w.netAccGet(op, target, at.addr, raw); err != nil {
		return err
	}
	cur := buf[:len(src)]
	if result != nil {
		copy(result, cur)
	}
	f(cur, src)
	return w.netAccPut(op, target, at.addr, raw[:nb])
}

// putHeader and getHeader write and read a request's header.
func putHeader(m []byte, kind int64, tag int, off uint64, n int) {
	binary.LittleEndian.PutUint64(m[0:], uint64(kind))
	binary.LittleEndian.PutUint64(m[8:], uint64(tag))
	binary.LittleEndian.PutUint64(m[16:], off)
	binary.LittleEndian.PutUint64(m[24:], uint64(n))
}

func getHeader(m []byte) (kind int64, tag int, off uint64, n int) {
	return int64(binary.LittleEndian.Uint64(m[0:])), int(binary.LittleEndian.Uint64(m[8:])),
		binary.LittleEndian.Uint64(m[16:]), int(binary.LittleEndian.Uint64(m[24:]))
}

// reap handles members known to have failed: a holder's death poisons
// the lock it held, and a waiter's request goes.
func (n *netWin) reap(w *Win) {
	for r := range w.size {
		if !w.failed(r) {
			continue
		}
		if n.excl == r+1 || n.shared[r] {
			n.poisoned = true
		}
		if n.acc == r+1 {
			n.accBad = true
		}
		n.waiting[r], n.failed[r], n.deferred[r] = false, false, nil
	}
	alive := func(q []netWaiter) []netWaiter {
		keep := q[:0]
		for _, x := range q {
			if !w.failed(x.src) {
				keep = append(keep, x)
			}
		}
		return keep
	}
	n.queue, n.accQueue = alive(n.queue), alive(n.accQueue)
	n.grant(w)
	n.grantAcc(w)
}

// netLocate is locate in a window across nodes: this rank's own part is
// local bytes; a peer's is checked here against its size (a dynamic
// window's regions only its server knows).
func (w *Win) netLocate(op string, t, disp, n int) (where, error) {
	if w.dynamic {
		if t == w.rank {
			if b := w.netLocal(uint64(disp), n); b != nil {
				return where{local: b}, nil
			}
			return where{}, w.errf(ranks.ErrArg, op, t, "%d bytes at address %#x: not in memory this rank attached", n, disp)
		}
		return where{pid: netPid, addr: uintptr(disp)}, nil
	}
	at, l := uint64(disp)*uint64(w.unit(t)), uint64(w.length[t])
	if at > l || uint64(n) > l-at {
		return where{}, w.errf(ranks.ErrArg, op, t, "%d bytes at displacement %d: not in memory the target exposes", n, disp)
	}
	if t == w.rank {
		return where{local: w.own[at : int(at)+n : int(at)+n]}, nil
	}
	return where{pid: netPid, addr: uintptr(at)}, nil
}

// netAt is where the server of target t finds displacement disp (after
// locate checked it): for accumulates, which go through the server even
// at this rank's own part.
func (w *Win) netAt(t, disp int) where {
	if w.dynamic {
		return where{pid: netPid, addr: uintptr(disp)}
	}
	return where{pid: netPid, addr: uintptr(disp * w.unit(t))}
}

// applyOp applies a registered op (reqAccOp, reqGetAccOp) or a compare
// and swap (reqCAS) at this rank's part, while nobody holds the
// accumulate lock, and replies if the origin waits.
func (n *netWin) applyOp(w *Win, q netWaiter) {
	kind := q.kind & reqKindMask
	size := q.n
	if kind == reqCAS {
		size /= 2 // the compare value, then the swap
	}
	dst := w.netLocal(q.off, size)
	code := int64(replyOK)
	var f func(dst, src []byte) bool
	switch {
	case n.accBad:
		code = replyPoisoned
	case dst == nil && size > 0:
		code = replyRange
	case kind != reqCAS:
		if f = netApplier(q.kind >> reqCodeShift); f == nil {
			code = replyRange
		}
	}
	if kind == reqAccOp {
		if code == replyOK && !f(dst, q.data) {
			code = replyRange
		}
		if code != replyOK {
			n.pending[q.src] = code // the origin's next flush says so
		}
		return
	}
	if code != replyOK {
		w.netReply(q.src, q.tag, code)
		return
	}
	if cap(n.accReply) < size+8 {
		n.accReply = make([]byte, size+8)
	}
	r := n.accReply[:size+8]
	copy(r, dst)
	binary.LittleEndian.PutUint64(r[size:], replyOK)
	if kind == reqCAS {
		if string(dst) == string(q.data[:size]) {
			copy(dst, q.data[size:])
		}
	} else if !f(dst, q.data) {
		w.netReply(q.src, q.tag, replyRange)
		return
	}
	ranks.Send(w.c, r, q.src, q.tag) // a failed origin: nothing to do
}

// lockAllNet is LockAll's claim of every target (held: heldByLockAll,
// with lockNoCheck under ModeNoCheck) in a window across nodes, with the
// locks taken at once.
func (w *Win) lockAllNet(op string, held int32) error {
	var err error
	claimed := 0
	for t := range w.size {
		if !w.locked[t].CompareAndSwap(0, lockBusy) {
			err = w.syncErr(op, t, "this rank holds the target's lock (Lock)")
			break
		}
		claimed++
		if err = w.target(op, t); err != nil {
			break
		}
	}
	if err == nil && held == heldByLockAll {
		err = w.netLockAll(op)
	}
	for t := range claimed {
		if err != nil {
			w.locked[t].Store(0)
		} else {
			w.locked[t].Store(held)
		}
	}
	if err != nil {
		w.lockAll.Store(epochNone)
		return err
	}
	w.lockAll.Store(epochOpen)
	return nil
}

// unlockAllNet is UnlockAll in a window across nodes: every release (a
// flush under ModeNoCheck) at once.
func (w *Win) unlockAllNet(op string) error {
	ts := make([]int, 0, w.size)
	kinds := make([]int64, w.size)
	for t := range w.size {
		l := w.locked[t].Swap(lockBusy)
		switch {
		case l == heldByLockAll:
			kinds[t] = reqUnlock
		case w.net.dirty[t].Load():
			kinds[t] = reqFlush
		default:
			continue
		}
		w.net.dirty[t].Store(false)
		ts = append(ts, t)
	}
	err := firstErr(w.netEach(op, ts, func(t int) int64 { return kinds[t] }))
	for t := range w.size {
		w.locked[t].Store(0)
	}
	w.lockAll.Store(epochNone)
	return err
}
