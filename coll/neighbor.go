package coll

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/shm"
)

// Neighbourhood collectives (MPI 4.0 section 8.6) on a communicator with
// a topology (ranks.Comm.CartCreate, GraphCreate, DistGraphCreate...):
// each member sends to its destinations and receives from its sources,
// in the order ranks.Comm.Neighbors gives: for a grid, per dimension the
// rank one step back then one step forward, ProcNull past an edge, whose
// blocks are neither sent nor touched. What a member sends towards one
// direction arrives from the opposite one: block 2d of the receive
// buffer holds what the rank one step back sent forward (its block
// 2d+1), even when both neighbours are the same rank (a periodic
// dimension of 1 or 2), as MPI 4.0 settled (mpi-forum issue 153).
// Repeated edges pair in order: the k-th edge from r to d is the k-th
// time d names r as a source.
//
// Mailboxes. Small blocks do not go through the point-to-point engine:
// each member has, in a shared memfd made at the communicator's first
// neighbourhood collective, a slot per source, written only by that
// source, read only by the member. A sender copies its block into the
// slot and raises the slot's sequence word; the receiver copies it out.
// That is the same two copies as an eager message, without the
// descriptor ring, matching, requests and the progress engine. Each slot
// has two halves used by alternate calls, and each member publishes the
// last call whose slots it has emptied (done), so a sender waits only
// when its receiver is two calls behind. Blocks larger than mailMax go
// as messages of the collective's tag (the slot still announces them,
// with their size, so that no two members can disagree on how a block
// travels); the receiver posts their receives in its sources' order and
// the sender its sends in the pairing order, so repeated edges pair as
// they should. benchmarks/halo compares this with the same exchange
// written with Isend and Irecv.
//
// Layout of the mailbox memory (one memfd, every member maps it):
//
//	region of member r (in rank order; each a whole number of pages)
//	  +0          done  uint32  the last call whose blocks r has taken
//	                            from its slots (r writes; its sources read)
//	  +64         slot of r's source i at +64+i*slotBytes (r's
//	              in-edges, in Neighbors' order; ProcNull's unused): two
//	              halves of halfBytes, half k%2 for call k, each
//	    +0   seq  uint32  the call whose block the half holds (the
//	                      source writes it after the block)
//	    +8   n    uint64  the block's bytes; above mailMax the block
//	                      comes as a message
//	    +16  data [mailMax]byte
//
// Halves are whole cache lines (halfBytes = 4160, 65 lines), so a block
// of up to 48 bytes travels in the line of its sequence word: one line
// transfer from sender to receiver.
//
// A half is rewritten for call k+2 only after its receiver's done says
// it took call k's block; the receiver reads call k's half only once its
// seq says k. Calls are counted per communicator by every member alike.
//
// Failures. Every wait watches the communicator as the other
// collectives do (ext.Wait): it ends with ErrProcFailed once any member
// is known to have failed, a neighbour or not, since a live neighbour
// may have left the call on learning of that failure; with ErrRevoked
// once it is revoked. A member that finished its part before learning of
// a failure succeeds.
//
// Bad arguments at one member (a receive buffer too short) do not leave
// its neighbours waiting: it still takes part, sending empty blocks and
// dropping what it receives, and returns the error; its neighbours get
// ErrCount for the empty blocks.

// mailMax is the largest block a mailbox carries: 4 KiB blocks, the
// usual halo sizes, still fit. Up to 2 KiB the mailboxes were clearly
// faster than messages (benchmarks/halo's Neighbor column, 2 ranks, and
// the same run with every block sent as a message); from 2 to 8 KiB the
// copies dominate and the two were within the noise of a loaded
// machine, so the mailboxes stop at 4 KiB and cost 8 KiB a neighbour.
const (
	halfBytes = 4096 + 64
	slotBytes = 2 * halfBytes
	mailMax   = halfBytes - 16
	// boxLimit bounds the mailbox memory of a communicator; a graph that
	// would need more uses messages.
	boxLimit = 256 << 20
)

type halfHdr struct {
	seq atomic.Uint32
	_   uint32
	n   uint64
}

func init() {
	if unsafe.Sizeof(halfHdr{}) != 16 || halfBytes%64 != 0 || mailMax != halfBytes-16 {
		panic("coll: mailbox layout drifted from its documentation")
	}
	ext.OnRelease(func(comm any) {
		if st, _ := ext.SlotsOf(comm)[ext.SlotColl].(*state); st != nil {
			if v, ok := neighborStates.LoadAndDelete(st); ok {
				v.(*nbState).close()
			}
		}
	})
}

// neighborStates holds each communicator's neighbourhood state, by its
// *state, from its first neighbourhood collective until it is released.
var neighborStates sync.Map

// How a communicator's neighbourhood collectives move blocks.
const (
	nbUnset = iota // not decided: the first call sets up the mailboxes
	nbBox          // mailboxes (and messages above mailMax)
	nbMsg          // messages only: the mailbox memory could not be made
)

// nbState is a communicator's neighbourhood state. Only the goroutine
// running the communicator's collectives uses it (nonblocking.go).
type nbState struct {
	st       *state
	src, dst []int // sources and destinations (ranks.Comm.Neighbors)
	order    []int // destination indices in the order their blocks are sent
	wake     []int // distinct sources other than this member
	bad      error // the topology does not allow these collectives

	mode    int
	mem     *shm.Mem
	calls   uint32           // neighbourhood collectives begun (mailbox mode)
	done    *atomic.Uint32   // this member's done word
	inBox   []unsafe.Pointer // source i's slot here, or nil (ProcNull)
	outBox  []unsafe.Pointer // the slot for destination j, or nil
	outDone []*atomic.Uint32 // destination j's done word, or nil

	// Per call, reused.
	pending  []int
	how      []uint8 // per source: 1 if a message of dropN bytes must be drained
	dropN    []int
	pre      []*ranks.Request // per source: its block's receive, posted before the wait
	reqs     []*ranks.Request
	sends    [][]byte // exchange's blocks, per destination and per source
	recvs    [][]byte
	statuses []ranks.Status

	// The waits' predicates and their arguments (as state's).
	k         uint32
	waitW     *atomic.Uint32
	waitV     uint32
	arrived   func() bool
	doneAhead func() bool
}

func (nb *nbState) close() {
	if nb.mem != nil {
		nb.mem.Close()
		nb.mem = nil
	}
}

// neighbors returns the neighbourhood state of st's communicator, making
// it at the first call.
func neighbors(st *state, op string) (*nbState, error) {
	if v, ok := neighborStates.Load(st); ok {
		nb := v.(*nbState)
		return nb, nb.bad
	}
	src, dst, err := st.c.Neighbors()
	if err != nil {
		return nil, relabel(err, op)
	}
	nb := &nbState{st: st, src: src, dst: dst, order: make([]int, len(dst))}
	for j := range nb.order {
		nb.order[j] = j
	}
	kind, _ := st.c.Topo()
	switch kind {
	case ranks.Cart:
		// What is sent forward arrives as from the back: send each
		// dimension's forward block first, so that where both
		// neighbours are one rank its first message (received as from
		// the back) is the forward one.
		for j := 0; j+1 < len(nb.order); j += 2 {
			nb.order[j], nb.order[j+1] = j+1, j
		}
	case ranks.Graph:
		nb.bad = checkSymmetric(st.c, op)
	}
	seen := map[int]bool{}
	for _, s := range src {
		if s != ranks.ProcNull && s != st.rank && !seen[s] {
			seen[s] = true
			nb.wake = append(nb.wake, s)
		}
	}
	nb.how = make([]uint8, len(src))
	nb.dropN = make([]int, len(src))
	nb.pre = make([]*ranks.Request, len(src))
	nb.arrived = func() bool {
		for _, i := range nb.pending {
			if reached(&nb.half(nb.inBox[i], nb.k).seq, nb.k) {
				return true
			}
		}
		return false
	}
	nb.doneAhead = func() bool { return reached(nb.waitW, nb.waitV) }
	neighborStates.Store(st, nb)
	return nb, nb.bad
}

// checkSymmetric checks that a graph topology's edges pair up (MPI
// requires it of neighbourhood collectives on MPI_Graph_create's graphs):
// every member computes the same answer from the whole graph.
func checkSymmetric(c *ranks.Comm, op string) error {
	index, edges, err := c.GraphGet()
	if err != nil {
		return relabel(err, op)
	}
	type pair struct{ a, b int }
	count := map[pair]int{}
	lo := 0
	for a, hi := range index {
		for _, b := range edges[lo:hi] {
			count[pair{a, b}]++
		}
		lo = hi
	}
	for p, n := range count {
		if m := count[pair{p.b, p.a}]; m != n {
			return &ranks.Error{Class: ranks.ErrTopology, Op: op, Rank: -1,
				Detail: fmt.Sprintf("the graph is not symmetric: node %d names %d %d times, %d names %d %d times (neighbourhood collectives need both ways)", p.a, p.b, n, p.b, p.a, m)}
		}
	}
	return nil
}

// half returns the half of slot used by call k.
func (nb *nbState) half(slot unsafe.Pointer, k uint32) *halfHdr {
	return (*halfHdr)(unsafe.Add(slot, int(k&1)*halfBytes))
}

func halfData(h *halfHdr, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(h), 16)), n)
}

// regionBytes is the mailbox region of a member with indeg sources.
func regionBytes(indeg int) int {
	return (64 + indeg*slotBytes + shm.PageSize - 1) / shm.PageSize * shm.PageSize
}

// setup makes the mailboxes, collectively, at the communicator's first
// neighbourhood collective: the members publish their in-degrees (so
// each knows where every region lies), member 0 makes the memory and
// the others map it (as bigArea does), and each member tells each source
// which of its slots are that source's. If any member cannot map the
// memory, or it would be too large, every member uses messages.
func (nb *nbState) setup(op string) error {
	st := nb.st
	if st.span {
		nb.mode = nbMsg // the mailboxes would be in one node's memory
		return nil
	}
	var w [8]byte
	binary.LittleEndian.PutUint32(w[:], uint32(len(nb.src)))
	if err := st.publish(op, w[:4]); err != nil {
		return err
	}
	if err := st.arrive(op); err != nil {
		return err
	}
	off := make([]int, st.size+1)
	for r := range st.size {
		d := st.read(r)
		if len(d) != 4 {
			return checkLen(op, r, len(d), 4)
		}
		off[r+1] = off[r] + regionBytes(int(binary.LittleEndian.Uint32(d)))
	}
	total := off[st.size]
	if total > boxLimit {
		nb.mode = nbMsg
		return nil
	}
	var created *shm.Mem
	fd := int64(-1)
	if st.rank == 0 {
		if m, err := shm.NewMem(total); err == nil {
			created, fd = m, int64(m.FD())
		}
	}
	binary.LittleEndian.PutUint64(w[:], uint64(fd))
	if err := st.publish(op, w[:]); err != nil {
		return st.dropBig(created, err)
	}
	if err := st.arrive(op); err != nil {
		return st.dropBig(created, err)
	}
	fd = int64(binary.LittleEndian.Uint64(st.read(0)))
	m := created
	if st.rank != 0 && fd >= 0 {
		if pid := ext.Pid(st.c, 0); pid > 0 {
			m, _ = shm.OpenMem(pid, int(fd), total)
		}
	}
	mine := [1]byte{}
	if m != nil {
		mine[0] = 1
	}
	if err := st.publish(op, mine[:]); err != nil {
		return st.dropBig(m, err)
	}
	if err := st.arrive(op); err != nil {
		return st.dropBig(m, err)
	}
	for r := range st.size {
		if d := st.read(r); len(d) != 1 || d[0] != 1 {
			st.dropBig(m, nil)
			nb.mode = nbMsg
			return nil
		}
	}
	m.CloseFD() // every member mapped it
	nb.mem = m
	base := unsafe.Pointer(unsafe.SliceData(m.B))
	region := func(r int) unsafe.Pointer { return unsafe.Add(base, off[r]) }
	nb.done = (*atomic.Uint32)(region(st.rank))
	nb.inBox = make([]unsafe.Pointer, len(nb.src))
	for i, s := range nb.src {
		if s != ranks.ProcNull {
			nb.inBox[i] = unsafe.Add(region(st.rank), 64+i*slotBytes)
		}
	}
	// Fresh pages cost a fault each in every process on first touch;
	// populating those this member touches costs several times less.
	populate(m.B, off[st.rank], off[st.rank+1])
	slots, err := nb.pair(op)
	if err != nil {
		return err
	}
	nb.outBox = make([]unsafe.Pointer, len(nb.dst))
	nb.outDone = make([]*atomic.Uint32, len(nb.dst))
	for j, d := range nb.dst {
		if d == ranks.ProcNull {
			continue
		}
		nb.outBox[j] = unsafe.Add(region(d), 64+slots[j]*slotBytes)
		nb.outDone[j] = (*atomic.Uint32)(region(d))
		o := off[d] + 64 + slots[j]*slotBytes
		populate(m.B, o, o+slotBytes)
	}
	nb.mode = nbBox
	return nil
}

// populate faults in the pages of b[lo:hi] (whole pages: madvise takes
// page-aligned ranges). Best effort: a page it misses faults later.
func populate(b []byte, lo, hi int) {
	lo = lo &^ (shm.PageSize - 1)
	hi = min(len(b), (hi+shm.PageSize-1)&^(shm.PageSize-1))
	unix.Madvise(b[lo:hi], unix.MADV_POPULATE_WRITE)
}

// pair returns, for each destination j, the index of this member's slot
// among j's sources: each member sends each source the positions at
// which it names that source, and takes the positions its destinations
// send, in its sending order, so that the k-th edge to a destination is
// the k-th time the destination names this member.
func (nb *nbState) pair(op string) ([]int, error) {
	st := nb.st
	at := map[int][]int32{} // source → its positions in src
	var srcOrder []int
	for i, s := range nb.src {
		if s == ranks.ProcNull {
			continue
		}
		if _, ok := at[s]; !ok {
			srcOrder = append(srcOrder, s)
		}
		at[s] = append(at[s], int32(i))
	}
	count := map[int]int{} // destination → edges to it
	var dstOrder []int
	for _, d := range nb.dst {
		if d == ranks.ProcNull {
			continue
		}
		if count[d] == 0 {
			dstOrder = append(dstOrder, d)
		}
		count[d]++
	}
	if err := ext.Check(st.c, op); err != nil {
		return nil, err // see postCheck (the arrive phases may have learned of a failure)
	}
	got := make(map[int][]int32, len(dstOrder))
	var rs []*ranks.Request
	for _, d := range dstOrder {
		buf := make([]int32, count[d])
		got[d] = buf
		rq, err := ranks.Irecv(st.cc, buf, d, st.tag())
		if err != nil {
			return nil, relabel(err, op)
		}
		rs = append(rs, rq)
	}
	for _, s := range srcOrder {
		rq, err := ranks.Isend(st.cc, at[s], s, st.tag())
		if err != nil {
			return nil, relabel(err, op)
		}
		rs = append(rs, rq)
	}
	statuses := make([]ranks.Status, len(rs))
	if err := ranks.WaitAll(rs, statuses); err != nil {
		return nil, st.fail(err, op)
	}
	for k, d := range dstOrder {
		if statuses[k].Bytes != 4*count[d] {
			return nil, &ranks.Error{Class: ranks.ErrTopology, Op: op, Rank: d,
				Detail: fmt.Sprintf("this member sends to %d %d times, which receives from it %d times", d, count[d], statuses[k].Bytes/4)}
		}
	}
	slots := make([]int, len(nb.dst))
	used := map[int]int{}
	for _, j := range nb.order {
		d := nb.dst[j]
		if d == ranks.ProcNull {
			continue
		}
		slots[j] = int(got[d][used[d]])
		used[d]++
	}
	return slots, nil
}

// exchange runs one neighbourhood collective on bytes: block j of send
// (send[j*sstride:][:sblk]; sstride 0: the same block to all) goes to
// destination j, and block i of recv (recv[i*rblk:][:rblk]) comes from
// source i. bad, if not nil, is this member's argument error: it sends
// empty blocks and drops what it receives, and returns bad.
func (nb *nbState) exchange(op string, send []byte, sstride, sblk int, recv []byte, rblk int, bad error) error {
	nb.sends, nb.recvs = nb.sends[:0], nb.recvs[:0]
	if bad == nil {
		for j := range nb.dst {
			nb.sends = append(nb.sends, send[j*sstride:j*sstride+sblk])
		}
		for i := range nb.src {
			nb.recvs = append(nb.recvs, recv[i*rblk:(i+1)*rblk])
		}
	}
	return nb.exchangeV(op, nb.sends, nb.recvs, bad)
}

// exchangeV runs one neighbourhood collective on blocks of any sizes:
// sends[j] goes to destination j and recvs[i] comes from source i (each
// as long as the block expected). With bad, both are empty: this member
// sends empty blocks, drops what it receives, and returns bad.
func (nb *nbState) exchangeV(op string, sends, recvs [][]byte, bad error) error {
	if nb.mode == nbUnset {
		if err := nb.setup(op); err != nil {
			// The members may disagree on the mailboxes now; the error
			// (a failure, a revoke) ends the communicator's collectives
			// anyway.
			nb.bad = err
			return err
		}
	}
	drop := bad != nil
	if drop {
		sends, recvs = nil, nil
	}
	var err error
	if nb.mode == nbBox {
		err = nb.boxExchange(op, sends, recvs, drop)
	} else {
		err = nb.msgExchange(op, sends, recvs, drop)
	}
	clear(nb.reqs)
	nb.reqs = nb.reqs[:0]
	if bad != nil {
		return bad
	}
	return err
}

// blockOf is block i of blocks, or none (an empty list: the member drops).
func blockOf(blocks [][]byte, i int) []byte {
	if i < len(blocks) {
		return blocks[i]
	}
	return nil
}

// msgExchange is exchange by messages: every receive posted, in the
// sources' order, then every send, in the pairing order.
func (nb *nbState) msgExchange(op string, sends, recvs [][]byte, drop bool) error {
	st := nb.st
	tag := st.tag()
	if err := ext.Check(st.c, op); err != nil {
		return err // see postCheck (setup may have learned of a failure)
	}
	for i, s := range nb.src {
		if s == ranks.ProcNull {
			continue
		}
		rq, err := ranks.Irecv(st.cc, blockOf(recvs, i), s, tag)
		if err != nil {
			return relabel(err, op)
		}
		nb.reqs = append(nb.reqs, rq)
	}
	for _, j := range nb.order {
		d := nb.dst[j]
		if d == ranks.ProcNull {
			continue
		}
		rq, err := ranks.Isend(st.cc, blockOf(sends, j), d, tag)
		if err != nil {
			return relabel(err, op)
		}
		nb.reqs = append(nb.reqs, rq)
	}
	if cap(nb.statuses) < len(nb.reqs) {
		nb.statuses = make([]ranks.Status, len(nb.reqs))
	}
	statuses := nb.statuses[:len(nb.reqs)]
	err := ranks.WaitAll(nb.reqs, statuses)
	if drop {
		return nil // the caller returns its own error
	}
	if err != nil {
		return st.fail(err, op)
	}
	k := 0
	for i, s := range nb.src {
		if s == ranks.ProcNull {
			continue
		}
		if statuses[k].Bytes != len(recvs[i]) {
			return &ranks.Error{Class: ranks.ErrCount, Op: op, Rank: s, Detail: "a neighbour sent a block of another size"}
		}
		k++
	}
	return nil
}

// boxExchange is exchange through the mailboxes (see the top of the
// file). Blocks above mailMax come as messages: the receiver posts their
// receives before it waits for the slots, in its sources' order, so
// that the senders' messages find them; the slots then only confirm
// their sizes.
func (nb *nbState) boxExchange(op string, sends, recvs [][]byte, drop bool) error {
	st := nb.st
	nb.calls++
	k := nb.calls
	tag := st.tag()
	for _, j := range nb.order {
		d := nb.dst[j]
		if d == ranks.ProcNull {
			continue
		}
		if err := nb.awaitRoom(op, j, k); err != nil {
			return err
		}
		blk := blockOf(sends, j)
		h := nb.half(nb.outBox[j], k)
		h.n = uint64(len(blk))
		if len(blk) <= mailMax {
			copy(halfData(h, len(blk)), blk)
		} else {
			rq, err := ranks.Isend(st.cc, blk, d, tag)
			if err != nil {
				return relabel(err, op)
			}
			nb.reqs = append(nb.reqs, rq)
		}
		h.seq.Store(k)
		ext.Wake(st.c, d)
	}
	// The blocks expected as messages: their receives go first.
	checked := false
	for i, s := range nb.src {
		nb.pre[i] = nil
		if s == ranks.ProcNull || drop || len(recvs[i]) <= mailMax {
			continue
		}
		if !checked {
			if err := ext.Check(st.c, op); err != nil {
				return err // see postCheck
			}
			checked = true
		}
		rq, err := ranks.Irecv(st.cc, recvs[i], s, tag)
		if err != nil {
			return relabel(err, op)
		}
		nb.pre[i] = rq
		nb.reqs = append(nb.reqs, rq)
	}
	// Take the blocks as they arrive.
	var sizeErr error
	nb.pending = nb.pending[:0]
	for i, s := range nb.src {
		nb.how[i] = 0
		if s != ranks.ProcNull {
			nb.pending = append(nb.pending, i)
		}
	}
	polls := 0
	for {
		left := nb.pending[:0]
		for _, i := range nb.pending {
			h := nb.half(nb.inBox[i], k)
			if !reached(&h.seq, k) {
				left = append(left, i)
				continue
			}
			n := int(h.n)
			want := len(blockOf(recvs, i))
			big := nb.pre[i] != nil
			switch {
			case !drop && n == want:
				if !big {
					copy(recvs[i], halfData(h, n))
				}
			default: // an erroneous call (sizes differ), or this member drops
				if !drop && sizeErr == nil {
					sizeErr = &ranks.Error{Class: ranks.ErrCount, Op: op, Rank: nb.src[i],
						Detail: fmt.Sprintf("a neighbour sent a block of %d bytes, not %d", n, want)}
				}
				switch {
				case big && n <= mailMax:
					nb.pre[i].Cancel() // no message will come
				case !big && n > mailMax:
					nb.how[i], nb.dropN[i] = 1, n // drain the message below
				}
			}
		}
		nb.pending = left
		if len(left) == 0 {
			break
		}
		if st.spin && polls < spinPolls {
			polls++
			spin.Pause()
			continue
		}
		nb.k, nb.waitW = k, &nb.half(nb.inBox[left[0]], k).seq
		if err := ext.Wait(st.c, op, nb.waitW, nb.arrived); err != nil {
			return err
		}
	}
	nb.done.Store(k)
	for _, s := range nb.wake {
		ext.Wake(st.c, s) // it may wait for room in our slots
	}
	if err := postCheck(st, op, nb.how); err != nil {
		return err
	}
	for i, s := range nb.src {
		if s != ranks.ProcNull && nb.how[i] != 0 {
			rq, err := ranks.Irecv(st.cc, make([]byte, nb.dropN[i]), s, tag)
			if err != nil {
				return relabel(err, op)
			}
			nb.reqs = append(nb.reqs, rq)
		}
	}
	if len(nb.reqs) > 0 {
		if err := ranks.WaitAll(nb.reqs, nil); err != nil && !drop && sizeErr == nil {
			return st.fail(err, op)
		}
	}
	return sizeErr
}

// postCheck returns the error of a failure known here before receives
// are posted after a wait (how[i] != 0 for some i).
// Once this rank knows of a member's failure, the communicator's
// collective context refuses collective messages and completes the
// receives posted then (ranks' collDeath), but a receive posted after
// that would wait for a message that will be refused: a wait that ended
// because its blocks arrived (ext.Wait looks at them first) may have
// learned of a failure meanwhile.
func postCheck(st *state, op string, how []uint8) error {
	for _, h := range how {
		if h != 0 {
			return ext.Check(st.c, op)
		}
	}
	return nil
}

// awaitRoom waits until destination j has taken the block of call k-2
// from the half that call k writes.
func (nb *nbState) awaitRoom(op string, j int, k uint32) error {
	w, v := nb.outDone[j], k-2
	if reached(w, v) {
		return nil
	}
	if nb.st.spin && pollFor(w, v) {
		return nil
	}
	nb.waitW, nb.waitV = w, v
	return ext.Wait(nb.st.c, op, w, nb.doneAhead)
}

// beginNeighbor starts a neighbourhood collective: it counts as begun
// (state.k) even when it fails.
func beginNeighbor[T any](c *ranks.Comm, op string) (*state, *nbState, error) {
	st, _, err := start[T](c, op, noRoot)
	if err != nil {
		return nil, nil, err
	}
	nb, err := neighbors(st, op)
	if err != nil {
		return nil, nil, err
	}
	return st, nb, nil
}

func neighborAllgather[T any](c *ranks.Comm, send, recv []T) error {
	const op = "NeighborAllgather"
	_, nb, err := beginNeighbor[T](c, op)
	if err != nil {
		return err
	}
	m := len(send)
	var bad error
	if len(recv) < len(nb.src)*m {
		bad = errf(ranks.ErrBuffer, op, fmt.Sprintf("receive buffer of %d elements for %d sources of %d", len(recv), len(nb.src), m))
	}
	sb, rb := bytesOf(send), bytesOf(recv)
	return nb.exchange(op, sb, 0, len(sb), rb, len(sb), bad)
}

func neighborAlltoall[T any](c *ranks.Comm, send, recv []T) error {
	const op = "NeighborAlltoall"
	_, nb, err := beginNeighbor[T](c, op)
	if err != nil {
		return err
	}
	in, out := len(nb.src), len(nb.dst)
	m := 0
	var bad error
	switch {
	case out > 0:
		m = len(send) / out
		if len(send) != out*m {
			bad = errf(ranks.ErrBuffer, op, fmt.Sprintf("send buffer of %d elements is not %d equal blocks", len(send), out))
		}
	case in > 0:
		m = len(recv) / in
	}
	if bad == nil && len(recv) < in*m {
		bad = errf(ranks.ErrBuffer, op, fmt.Sprintf("receive buffer of %d elements for %d sources of %d", len(recv), in, m))
	}
	var z T
	blk := m * int(unsafe.Sizeof(z))
	return nb.exchange(op, bytesOf(send), blk, blk, bytesOf(recv), blk, bad)
}

// NeighborAllgather sends send to every destination of c's topology and
// receives one block of len(send) elements from each source, into recv
// in the sources' order (MPI_Neighbor_allgather; the order is
// ranks.Comm.Neighbors'). recv needs indegree*len(send) elements; the
// blocks of ProcNull neighbours are left as they are.
func NeighborAllgather[T any](c *ranks.Comm, send, recv []T) error {
	if idle(c) {
		return neighborAllgather(c, send, recv)
	}
	return ordered(c, func() error { return neighborAllgather(c, send, recv) })
}

// NeighborAlltoall sends block j of send to destination j of c's
// topology and receives block i of recv from source i
// (MPI_Neighbor_alltoall): send is outdegree blocks of equal length, recv
// holds indegree blocks of that length; the blocks of ProcNull
// neighbours are neither sent nor touched.
func NeighborAlltoall[T any](c *ranks.Comm, send, recv []T) error {
	if idle(c) {
		return neighborAlltoall(c, send, recv)
	}
	return ordered(c, func() error { return neighborAlltoall(c, send, recv) })
}

// INeighborAllgather is the nonblocking NeighborAllgather. Like the
// other nonblocking collectives it runs on a goroutine of the
// communicator's (nonblocking.go), which calls into package ranks while
// the caller may: the rank must run at ThreadMultiple, Init's default.
func INeighborAllgather[T any](c *ranks.Comm, send, recv []T) (*ranks.Request, error) {
	return post(c, "INeighborAllgather", func() error { return neighborAllgather(c, send, recv) })
}

// INeighborAlltoall is the nonblocking NeighborAlltoall.
func INeighborAlltoall[T any](c *ranks.Comm, send, recv []T) (*ranks.Request, error) {
	return post(c, "INeighborAlltoall", func() error { return neighborAlltoall(c, send, recv) })
}

// NeighborAllgatherInit makes a persistent NeighborAllgather of send into
// recv (MPI_Neighbor_allgather_init): an inactive persistent request that
// ranks' Start runs again (persistent.go).
func NeighborAllgatherInit[T any](c *ranks.Comm, send, recv []T) (*ranks.Request, error) {
	if err := neighborInit[T](c, "NeighborAllgatherInit"); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "NeighborAllgatherInit", func(pc *ranks.Comm) error { return neighborAllgather(pc, send, recv) })
}

// NeighborAlltoallInit makes a persistent NeighborAlltoall of send into
// recv (MPI_Neighbor_alltoall_init).
func NeighborAlltoallInit[T any](c *ranks.Comm, send, recv []T) (*ranks.Request, error) {
	if err := neighborInit[T](c, "NeighborAlltoallInit"); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "NeighborAlltoallInit", func(pc *ranks.Comm) error { return neighborAlltoall(pc, send, recv) })
}

// neighborInit is the check of a persistent neighbourhood collective at
// Init: a plain type and a communicator with a topology.
func neighborInit[T any](c *ranks.Comm, op string) error {
	if err := initCheck[T](c, op, noRoot, true); err != nil {
		return err
	}
	if _, _, err := c.Neighbors(); err != nil {
		return relabel(err, op)
	}
	return nil
}

// checkNV validates the counts and displacements of deg neighbours' blocks
// in a buffer of n elements.
func checkNV(op string, deg int, counts, displs []int, n int) error {
	if len(counts) < deg || len(displs) < deg {
		return errf(ranks.ErrCount, op, "fewer counts or displacements than neighbours")
	}
	for i := range deg {
		if counts[i] < 0 || displs[i] < 0 || displs[i] > n || counts[i] > n-displs[i] {
			return errf(ranks.ErrCount, op, "count or displacement out of the buffer")
		}
	}
	return nil
}

// vBlocks appends to dst the blocks of s at displs with counts, as bytes.
func vBlocks[T any](dst [][]byte, s []T, counts, displs []int, deg int) [][]byte {
	for i := range deg {
		dst = append(dst, bytesOf(s[displs[i]:displs[i]+counts[i]]))
	}
	return dst
}

func neighborAllgatherv[T any](c *ranks.Comm, send, recv []T, counts, displs []int) error {
	const op = "NeighborAllgatherv"
	_, nb, err := beginNeighbor[T](c, op)
	if err != nil {
		return err
	}
	bad := checkNV(op, len(nb.src), counts, displs, len(recv))
	nb.sends, nb.recvs = nb.sends[:0], nb.recvs[:0]
	if bad == nil {
		for range nb.dst {
			nb.sends = append(nb.sends, bytesOf(send))
		}
		nb.recvs = vBlocks(nb.recvs, recv, counts, displs, len(nb.src))
	}
	return nb.exchangeV(op, nb.sends, nb.recvs, bad)
}

func neighborAlltoallv[T any](c *ranks.Comm, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) error {
	const op = "NeighborAlltoallv"
	_, nb, err := beginNeighbor[T](c, op)
	if err != nil {
		return err
	}
	bad := checkNV(op, len(nb.dst), scounts, sdispls, len(send))
	if bad == nil {
		bad = checkNV(op, len(nb.src), rcounts, rdispls, len(recv))
	}
	nb.sends, nb.recvs = nb.sends[:0], nb.recvs[:0]
	if bad == nil {
		nb.sends = vBlocks(nb.sends, send, scounts, sdispls, len(nb.dst))
		nb.recvs = vBlocks(nb.recvs, recv, rcounts, rdispls, len(nb.src))
	}
	return nb.exchangeV(op, nb.sends, nb.recvs, bad)
}

func neighborAlltoallw(c *ranks.Comm, send, recv [][]byte) error {
	const op = "NeighborAlltoallw"
	_, nb, err := beginNeighbor[byte](c, op)
	if err != nil {
		return err
	}
	var bad error
	if len(send) < len(nb.dst) || len(recv) < len(nb.src) {
		bad = errf(ranks.ErrCount, op, "fewer blocks than neighbours")
	}
	if bad != nil {
		return nb.exchangeV(op, nil, nil, bad)
	}
	return nb.exchangeV(op, send[:len(nb.dst)], recv[:len(nb.src)], nil)
}

// NeighborAllgatherv sends send to every destination of c's topology and
// receives counts[i] elements from source i into recv at displs[i]
// (MPI_Neighbor_allgatherv).
func NeighborAllgatherv[T any](c *ranks.Comm, send, recv []T, counts, displs []int) error {
	if idle(c) {
		return neighborAllgatherv(c, send, recv, counts, displs)
	}
	return ordered(c, func() error { return neighborAllgatherv(c, send, recv, counts, displs) })
}

// NeighborAlltoallv sends scounts[j] elements of send from sdispls[j] to
// destination j and receives rcounts[i] elements from source i into recv
// at rdispls[i] (MPI_Neighbor_alltoallv).
func NeighborAlltoallv[T any](c *ranks.Comm, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) error {
	if idle(c) {
		return neighborAlltoallv(c, send, scounts, sdispls, recv, rcounts, rdispls)
	}
	return ordered(c, func() error { return neighborAlltoallv(c, send, scounts, sdispls, recv, rcounts, rdispls) })
}

// NeighborAlltoallw sends send[j] to destination j and receives recv[i]
// from source i (MPI_Neighbor_alltoallw): byte blocks of any sizes, each
// pair of neighbours agreeing on theirs.
func NeighborAlltoallw(c *ranks.Comm, send, recv [][]byte) error {
	if idle(c) {
		return neighborAlltoallw(c, send, recv)
	}
	return ordered(c, func() error { return neighborAlltoallw(c, send, recv) })
}

// INeighborAllgatherv is the nonblocking NeighborAllgatherv.
func INeighborAllgatherv[T any](c *ranks.Comm, send, recv []T, counts, displs []int) (*ranks.Request, error) {
	return post(c, "INeighborAllgatherv", func() error { return neighborAllgatherv(c, send, recv, counts, displs) })
}

// INeighborAlltoallv is the nonblocking NeighborAlltoallv.
func INeighborAlltoallv[T any](c *ranks.Comm, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) (*ranks.Request, error) {
	return post(c, "INeighborAlltoallv", func() error {
		return neighborAlltoallv(c, send, scounts, sdispls, recv, rcounts, rdispls)
	})
}

// INeighborAlltoallw is the nonblocking NeighborAlltoallw.
func INeighborAlltoallw(c *ranks.Comm, send, recv [][]byte) (*ranks.Request, error) {
	return post(c, "INeighborAlltoallw", func() error { return neighborAlltoallw(c, send, recv) })
}

// NeighborAllgathervInit is the persistent NeighborAllgatherv.
func NeighborAllgathervInit[T any](c *ranks.Comm, send, recv []T, counts, displs []int) (*ranks.Request, error) {
	if err := neighborInit[T](c, "NeighborAllgathervInit"); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "NeighborAllgathervInit", func(pc *ranks.Comm) error { return neighborAllgatherv(pc, send, recv, counts, displs) })
}

// NeighborAlltoallvInit is the persistent NeighborAlltoallv.
func NeighborAlltoallvInit[T any](c *ranks.Comm, send []T, scounts, sdispls []int, recv []T, rcounts, rdispls []int) (*ranks.Request, error) {
	if err := neighborInit[T](c, "NeighborAlltoallvInit"); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "NeighborAlltoallvInit", func(pc *ranks.Comm) error {
		return neighborAlltoallv(pc, send, scounts, sdispls, recv, rcounts, rdispls)
	})
}

// NeighborAlltoallwInit is the persistent NeighborAlltoallw.
func NeighborAlltoallwInit(c *ranks.Comm, send, recv [][]byte) (*ranks.Request, error) {
	if err := neighborInit[byte](c, "NeighborAlltoallwInit"); err != nil {
		return initErr(c, err)
	}
	return persistent(c, "NeighborAlltoallwInit", func(pc *ranks.Comm) error { return neighborAlltoallw(pc, send, recv) })
}
