package coll

import (
	"sync/atomic"
	"unsafe"

	"shmpi/internal/ext"
	"shmpi/ranks"
)

// Small collectives go through the communicator's collective lines in the
// segment (internal/job places them; ext.Shared finds them):
//
//	header line (64 bytes)
//	  +0   arrive  uint64  arrivals, cumulative: arrive phase a is complete
//	                       when it reaches a*size
//	  +8   done    uint32  the last complete arrive phase (low 32 bits)
//	member line r (64 bytes), two 32-byte halves used by alternate phases
//	  +0   n       uint32  bytes of inline data
//	  +8   data    [24]byte
//
// An arrive phase: every member writes its data into its line's half for
// the phase, then adds one to arrive; the member that completes the count
// stores done and wakes the others (ext.Release: one futex wake on done
// when ranks outnumber cores, else doorbell rings); the others wait (spin
// polling done, then sleep on done and on their doorbell) until done says
// so, or until a member is known to have failed. Then each reads what it needs from the others'
// lines. A member writes the same half again only two phases later,
// after every member arrived at the phase in between, that is, after
// every member finished reading. The line is zeroed when the
// communicator is created, so nothing of a previous owner of the slot
// is ever read.

// inlineMax is the data a member's line carries in one phase.
const inlineMax = 24

type header struct {
	arrive atomic.Uint64
	done   atomic.Uint32
	_      [52]byte
}

type half struct {
	n    uint32
	_    uint32
	data [inlineMax]byte
}

func init() {
	if unsafe.Sizeof(header{}) != 64 || unsafe.Sizeof(half{}) != 32 {
		panic("coll: line layout drifted from its documentation")
	}
	ext.OnCreate(func(comm any) {
		c := comm.(*ranks.Comm)
		base := ext.Shared(comm)
		ext.SlotsOf(comm)[ext.SlotColl] = &state{
			c: c, cc: ext.CollOf(comm).(*ranks.Comm), size: c.Size(), rank: c.Rank(),
			hdr: (*header)(base), lines: unsafe.Add(base, 64),
		}
	})
}

// state is a communicator's local collective state (in its ext slot).
type state struct {
	c     *ranks.Comm
	cc    *ranks.Comm // the collective twin: point-to-point traffic of collectives
	size  int
	rank  int
	hdr   *header
	lines unsafe.Pointer
	a     uint64 // arrive phases begun
	k     uint64 // collectives begun (their point-to-point tag)
	q     queue  // nonblocking collectives (nonblocking.go)

	scratch []uint64 // temporary buffers, reused (scratch)
}

// begin starts a collective op on c: c usable, no member known failed.
func begin(c *ranks.Comm, op string) (*state, error) {
	if c == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil communicator"}
	}
	if err := ext.Check(c, op); err != nil {
		return nil, err
	}
	st, _ := ext.SlotsOf(c)[ext.SlotColl].(*state)
	if st == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "not a communicator of this job"}
	}
	st.k++
	return st, nil
}

// tag is the point-to-point tag of the current collective.
func (st *state) tag() int { return int(st.k & (1<<29 - 1)) }

// slot returns member r's half of the next arrive phase.
func (st *state) slot(r int) *half {
	return (*half)(unsafe.Add(st.lines, r*64+int((st.a+1)%2)*32))
}

// publish writes p (at most inlineMax bytes) in this member's line for
// the next arrive phase.
func (st *state) publish(p []byte) {
	h := st.slot(st.rank)
	h.n = uint32(len(p))
	copy(h.data[:], p)
}

// arrive runs the next arrive phase; afterwards every member's line of
// that phase can be read with read.
func (st *state) arrive(op string) error {
	st.a++
	a := st.a
	if st.size == 1 {
		return nil
	}
	if st.hdr.arrive.Add(1) == a*uint64(st.size) {
		st.hdr.done.Store(uint32(a))
		ext.Release(st.c, &st.hdr.done)
		return nil
	}
	return ext.Wait(st.c, op, &st.hdr.done, func() bool { return int32(st.hdr.done.Load()-uint32(a)) >= 0 })
}

// read returns member r's data of the phase that arrive just completed.
func (st *state) read(r int) []byte {
	h := (*half)(unsafe.Add(st.lines, r*64+int(st.a%2)*32))
	return h.data[:min(h.n, inlineMax)]
}
