package ranks

import (
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
)

// The fault-tolerant channel: messages of agreement and Shrink across
// nodes (ulfm's span.go), which must flow on a revoked communicator as
// well. They run on the collective twin with tags of their own (the FT
// band: tagCreateBase with bits 27-29 set, which no creation tag has),
// which a revoke neither refuses (refusal), nor drops or completes
// (revokeLocal), and which a member's failure leaves alone as it leaves
// creation's (collDeath).

const (
	tagFTBits = 7 << 27
	tagFT     = tagCreateBase | tagFTBits
)

func init() {
	if ext.FTTags > 1<<27 {
		panic("ranks: the FT tags do not fit their band")
	}
	ext.FTSend = func(comm any, b []byte, dst, ftTag int) error {
		return comm.(*Comm).ftSend(b, dst, tagFT+ftTag)
	}
	ext.FTRecv = func(comm any, b []byte, src, ftTag int) (int, error) {
		return comm.(*Comm).ftRecv(b, src, tagFT+ftTag)
	}
	ext.FTCreate = func(comm any, members []int, ftTag int) (any, error) {
		c := comm.(*Comm)
		world := make([]int, len(members))
		for i, m := range members {
			world[i] = c.group[m]
		}
		nc, err := c.createSpanning(members, world, ftTransport(c, tagFT+ftTag), "Shrink")
		if nc == nil {
			return nil, err
		}
		return nc, err
	}
}

// ftTag reports whether tag is in the FT band.
func ftTag(tag int) bool { return tag >= tagCreateBase && tag&tagFTBits == tagFTBits }

// ftSend sends b to member dst of c on twin tag tag, revoked or not, and
// returns once b may be reused (an error if dst failed).
func (c *Comm) ftSend(b []byte, dst, tag int) error {
	e := c.e
	t := c.coll
	e.lock()
	defer e.unlock()
	if e.closed {
		return newErr(ErrFinalized, "Agree", -1, "")
	}
	r := e.getReq()
	t.newOp(r, true, false, unsafe.Pointer(unsafe.SliceData(b)), len(b), 1, dst, tag, "Agree")
	e.startSend(r)
	if !r.done {
		e.block(func() bool { return r.done }, job.OpSend, dst, tag, t.ctx, r.wpeer)
	}
	err := r.st.Err
	e.putReq(r)
	return err
}

// ftRecv receives into b from member src of c on twin tag tag, revoked or
// not: the message, or ErrProcFailed once src is known to have failed.
func (c *Comm) ftRecv(b []byte, src, tag int) (int, error) {
	e := c.e
	t := c.coll
	e.lock()
	defer e.unlock()
	if e.closed {
		return 0, newErr(ErrFinalized, "Agree", -1, "")
	}
	r := e.getReq()
	t.newOp(r, false, false, unsafe.Pointer(unsafe.SliceData(b)), len(b), 1, src, tag, "Agree")
	e.startRecv(r)
	if !r.done {
		e.block(func() bool { return r.done }, job.OpRecv, src, tag, t.ctx, r.wpeer)
	}
	n, err := r.st.Bytes, r.st.Err
	e.putReq(r)
	return n, err
}

// transport is how a creation exchanges its messages: by default
// point-to-point on the parent's twin (createTransport), for Shrink the
// FT channel (ftTransport); each step has its tag.
type transport struct {
	send                    func(b []uint32, dst, tag int) error
	recv                    func(b []uint32, src, tag int) error
	slot, gather, table, ok int // tags: the node's slot, to the leader, the table, the acknowledgement
}

func u32bytes(b []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), 4*len(b))
}

func ftTransport(c *Comm, tag int) transport {
	return transport{
		send: func(b []uint32, dst, tag int) error { return c.ftSend(u32bytes(b), dst, tag) },
		recv: func(b []uint32, src, tag int) error { _, err := c.ftRecv(u32bytes(b), src, tag); return err },
		slot: tag, gather: tag + 1, table: tag + 2, ok: tag + 3,
	}
}

func createTransport(c *Comm, tag int) transport {
	return transport{
		send: func(b []uint32, dst, tag int) error { return Send(c.coll, b, dst, tag) },
		recv: func(b []uint32, src, tag int) error { _, err := Recv(c.coll, b, src, tag); return err },
		slot: tag, gather: tag | tagSpanSlot, table: tag | tagSpanTable, ok: tag | tagAck,
	}
}
