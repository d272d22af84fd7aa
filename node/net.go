package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Net is how the agents of a job talk to each other: the system MPI
// between nodes (mpinet.go, build tag mpi), or channels inside one
// process (Loopback, for tests). Agents are numbered 0 to Size()-1, one
// per node. Frames from one agent to another arrive whole and in the
// order they were sent.
type Net interface {
	Rank() int
	Size() int
	// Allgather returns every agent's v, in agent order. Collective: every
	// agent calls it once, before any Send.
	Allgather(v int) ([]int, error)
	// Send queues a frame for agent to: its header (frameHeader bytes)
	// and the bytes that follow it, which arrive as one frame. Both are
	// then the Net's, which may hold on to them until the frame has left
	// and gives them back to bufs. If sent is not nil, data is memory
	// lent to the Net (a sender's own buffer, Proxy.Take): the Net calls
	// sent once it no longer reads data (the frame left, or never will),
	// and does not give data to bufs.
	Send(to int, header, data []byte, sent func()) error
	// Backlog is how many bytes the Net holds that have not left yet.
	Backlog() int
	// Recv returns the next frame that has arrived, if any, without
	// waiting. A message frame of more than longData bytes comes as its
	// header alone (its long flag set): its bytes wait until RecvData
	// takes them, so that they can go straight where they belong.
	Recv() (from int, frame []byte, ok bool, err error)
	// RecvData receives into dst the bytes of the oldest long frame from
	// agent from whose bytes are not taken yet (an agent's come in the
	// order of their headers). The error is a *NodesFailed if that agent
	// has just failed, errDataLost if it had failed before.
	RecvData(from int, dst []byte) error
	// Idle is called when an agent's loop found nothing to do; it may
	// wait a little for frames to arrive.
	Idle()
	Close() error
}

// NodesFailed is the error of a Net's Recv when agents have died (their
// nodes with them): the Net goes on without them, as ULFM lets an MPI do.
type NodesFailed struct{ Agents []int }

func (e *NodesFailed) Error() string { return fmt.Sprintf("node: agents %v failed", e.Agents) }

// Frame kinds.
const (
	frameMsg   = 1 // a message: ctx, src, dst, tag, then its bytes
	frameFail  = 2 // src failed at its node
	frameFinal = 3 // src finalized at its node, after every message it sent
	frameDone  = 4 // the sending agent's ranks have all ended; nothing more comes from it
	frameAbort = 5 // src called Abort with code tag: every node ends its ranks
	frameAck   = 6 // the synchronous message id has an outcome at its receiver's node: matched, or why not
)

// longData is the size above which a message frame's bytes come apart
// from its header (Net.Recv).
const longData = 64<<10 - frameHeader

// errDataLost: the bytes of a long frame will never come, as the agent
// that sent them had failed.
var errDataLost = errors.New("node: a long frame's bytes are lost with their agent")

// frameHeader is the size of a frame's header:
//
//	+0  kind u8
//	+1  long u8   1: a header whose bytes follow apart (Net.RecvData)
//	+2  sync u8   1: a synchronous message; acknowledge id when it matches
//	+3  outcome u8  frameAck: launch.SyncOutcome's (0: matched)
//	+4  ctx  u32  wire context (frameMsg)
//	+8  src  u32  world rank of the sender (or of the rank a notice is about)
//	+12 dst  u32  world rank of the receiver (frameMsg)
//	+16 tag  i32  the tag as sent (the runtime's own tags are negative)
//	+20 len  u32  bytes that follow
//	+24 id   u64  a synchronous message's number at its sender's agent (frameMsg, frameAck)
const frameHeader = 32

type frame struct {
	kind     uint8
	long     bool // the header alone; n bytes follow through RecvData
	sync     bool
	outcome  uint8
	ctx      uint32
	src, dst int
	tag      int
	id       uint64
	n        int
	data     []byte
}

// header encodes f's header, in a buffer of bufs; f.data follows it on
// the wire.
func (f *frame) header() []byte {
	b := bufs.get(frameHeader)
	b[0], b[1], b[2], b[3] = f.kind, 0, 0, f.outcome
	if f.sync {
		b[2] = 1
	}
	binary.LittleEndian.PutUint64(b[24:], f.id)
	binary.LittleEndian.PutUint32(b[4:], f.ctx)
	binary.LittleEndian.PutUint32(b[8:], uint32(f.src))
	binary.LittleEndian.PutUint32(b[12:], uint32(f.dst))
	binary.LittleEndian.PutUint32(b[16:], uint32(int32(f.tag)))
	binary.LittleEndian.PutUint32(b[20:], uint32(len(f.data)))
	return b
}

// giveBack ends a Net's use of a frame's data: back to bufs, or to its
// lender (sent).
func giveBack(data []byte, sent func()) {
	if sent != nil {
		sent()
		return
	}
	bufs.put(data)
}

func decode(b []byte) (frame, error) {
	if len(b) < frameHeader {
		return frame{}, fmt.Errorf("node: a frame of %d bytes", len(b))
	}
	n := binary.LittleEndian.Uint32(b[20:])
	long := b[1] == 1 && len(b) == frameHeader && b[0] == frameMsg
	if !long && int(n) != len(b)-frameHeader {
		return frame{}, fmt.Errorf("node: a frame says %d bytes and carries %d", n, len(b)-frameHeader)
	}
	return frame{
		kind:    b[0],
		long:    long,
		n:       int(n),
		sync:    b[2] == 1,
		outcome: b[3],
		id:      binary.LittleEndian.Uint64(b[24:]),
		ctx:     binary.LittleEndian.Uint32(b[4:]),
		src:     int(binary.LittleEndian.Uint32(b[8:])),
		dst:     int(binary.LittleEndian.Uint32(b[12:])),
		tag:     int(int32(binary.LittleEndian.Uint32(b[16:]))),
		data:    b[frameHeader:],
	}, nil
}

// Loopback returns the Nets of k agents in this process, joined by
// queues: how tests run several "nodes" in one process without an MPI.
func Loopback(k int) []Net {
	l := &loop{boxes: make([]loopBox, k)}
	for i := range l.boxes {
		l.boxes[i].wake = make(chan struct{}, 1)
	}
	l.gather.vals = make([]int, k)
	l.gather.done = make(chan struct{})
	nets := make([]Net, k)
	for i := range nets {
		nets[i] = &loopNet{l: l, me: i}
	}
	return nets
}

type loop struct {
	boxes  []loopBox
	gather struct {
		sync.Mutex
		vals []int
		n    int
		done chan struct{}
	}
}

type loopBox struct {
	mu   sync.Mutex
	q    []loopFrame // q[head:] wait; the array is reused once all are taken
	head int
	long map[int][][]byte // by sender: the bytes of long frames, in order
	wake chan struct{}
}

type loopFrame struct {
	from  int
	frame []byte
}

type loopNet struct {
	l      *loop
	me     int
	closed bool
}

func (n *loopNet) Rank() int { return n.me }
func (n *loopNet) Size() int { return len(n.l.boxes) }

func (n *loopNet) Allgather(v int) ([]int, error) {
	g := &n.l.gather
	g.Lock()
	g.vals[n.me] = v
	g.n++
	if g.n == len(g.vals) {
		close(g.done)
	}
	g.Unlock()
	<-g.done
	return append([]int(nil), g.vals...), nil
}

func (n *loopNet) Send(to int, header, data []byte, sent func()) error {
	if n.closed {
		if sent != nil {
			sent()
		}
		return errors.New("node: send on a closed net")
	}
	b := &n.l.boxes[to]
	if header[0] == frameMsg && len(data) > longData {
		// As over the MPI: the header now, the bytes when taken.
		bytes := bufs.get(len(data))
		copy(bytes, data)
		giveBack(data, sent)
		header[1] = 1
		b.mu.Lock()
		if b.long == nil {
			b.long = map[int][][]byte{}
		}
		b.long[n.me] = append(b.long[n.me], bytes)
		b.q = append(b.q, loopFrame{n.me, header})
		b.mu.Unlock()
	} else {
		frame := bufs.get(len(header) + len(data))
		copy(frame[copy(frame, header):], data)
		bufs.put(header)
		giveBack(data, sent)
		b.mu.Lock()
		b.q = append(b.q, loopFrame{n.me, frame})
		b.mu.Unlock()
	}
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return nil
}

func (n *loopNet) Recv() (int, []byte, bool, error) {
	b := &n.l.boxes[n.me]
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.head == len(b.q) {
		return 0, nil, false, nil
	}
	f := b.q[b.head]
	b.q[b.head] = loopFrame{}
	if b.head++; b.head == len(b.q) {
		b.q, b.head = b.q[:0], 0
	}
	return f.from, f.frame, true, nil
}

func (n *loopNet) RecvData(from int, dst []byte) error {
	b := &n.l.boxes[n.me]
	b.mu.Lock()
	q := b.long[from]
	if len(q) == 0 {
		b.mu.Unlock()
		return fmt.Errorf("node: no long frame's bytes from agent %d", from)
	}
	bytes := q[0]
	q[0] = nil
	b.long[from] = q[1:]
	b.mu.Unlock()
	if len(bytes) != len(dst) {
		return fmt.Errorf("node: a long frame of %d bytes received into %d", len(bytes), len(dst))
	}
	copy(dst, bytes)
	bufs.put(bytes)
	return nil
}

func (n *loopNet) Idle() {}

func (n *loopNet) Backlog() int { return 0 }

func (n *loopNet) Close() error { n.closed = true; return nil }
