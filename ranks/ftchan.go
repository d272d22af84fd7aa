package ranks

import (
	"errors"
	"slices"
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
	ext.FTNodeSlot = func(comm any, ftTag int) (slot, gen, node uint32, err error) {
		c := comm.(*Comm)
		slot, gen, err = c.ftNodeSlot(tagFT + ftTag)
		return slot, gen, uint32(c.e.lay.First), err
	}
	ext.FTAdopt = func(comm any, members []int, slot, gen uint32, table []uint32) (any, error) {
		c := comm.(*Comm)
		world := make([]int, len(members))
		for i, m := range members {
			world[i] = c.group[m]
		}
		nc, err := c.adoptSpanning(world, [2]uint32{slot, gen}, table, "Shrink")
		if err != nil {
			return nil, err
		}
		return nc, nil
	}
	ext.FTRelease = func(comm any, slot uint32) {
		c := comm.(*Comm)
		c.e.lock()
		c.e.t.ReleaseContext(c.e.me, slot)
		c.e.unlock()
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

func u32bytes(b []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), 4*len(b))
}

// ftNodeSlot gives the members of c on this node that have not failed a
// context slot of the node for a communicator to come (Shrink across
// nodes): the first of them allocates it and sends it to the others on
// tag. A member that waits for one that failed takes what it sent
// before, or moves to the next. Every member then holds the slot it
// returns (generation 0: none was free) until it adopts or releases it.
// A member that took a slot from an allocator that died also holds the
// next allocator's slot, which it never hears of: Shrink, which then
// starts over, has it release every slot its node's members reported
// (ext.FTRelease).
func (c *Comm) ftNodeSlot(tag int) (slot, gen uint32, err error) {
	e := c.e
	for k, w := range c.group {
		if e.lay.Remote(w) {
			continue
		}
		if k != c.rank {
			var msg [2]uint32
			if _, err := c.ftRecv(u32bytes(msg[:]), k, tag); err == nil {
				return msg[0], msg[1], nil
			} else if !errors.Is(err, ErrProcFailed) {
				return 0, 0, err
			}
			continue
		}
		// Every member before this one on the node has failed.
		e.lock()
		e.refresh()
		var live, liveWorld []int
		for m := k; m < c.size; m++ {
			if w := c.group[m]; !e.lay.Remote(w) && !e.failed[w] {
				live, liveWorld = append(live, m), append(liveWorld, w)
			}
		}
		var msg [2]uint32
		if s, g, ok := e.t.AllocContext(e.me, liveWorld); ok {
			msg = [2]uint32{s, g}
		}
		e.unlock()
		// Highest rank first: the next in line gets it last, so if this
		// rank dies midway, either that one has it (and so has every
		// other) or it has not returned and allocates again (and a node
		// whose members then hold two slots makes Shrink start over).
		for _, m := range slices.Backward(live[1:]) {
			_ = c.ftSend(u32bytes(msg[:]), m, tag) // a failed member needs none
			testStage(e, "slot sent")
		}
		return msg[0], msg[1], nil
	}
	return 0, 0, newErr(ErrOther, "Shrink", -1, "this rank is not on its node")
}
