package ulfm

import (
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/ranks"
)

// Agreement in shared memory.
//
// Every agreement (Agree, and the one inside Shrink) on a communicator is
// a round; members run the same rounds in the same order, as for any
// collective. The communicator's agreement records (ext.AgreeArea, zeroed
// at its creation) hold, for the two parities of rounds:
//
//	decision record: a 64-byte header, then a bitmap of size bits
//	  +0   state     uint64  round<<32 | writer<<2 | phase (0 empty,
//	                         1 being written by member writer, 2 decided)
//	  +8   round     uint64  the round the body below is for
//	  +16  value     uint64  the AND of the contributors' flags
//	  +24  flags     uint32  decNoSlot: no context slot was free;
//	                         decExcluded: the bitmap below is set (else
//	                         nobody is excluded and it is not read)
//	  +28  slot      uint32  Shrink: the new communicator's context slot
//	  +32  gen       uint32  and its generation
//	  +36  decided   uint32  the last decided round (low bits): the word
//	                         waiting members sleep on
//	  +64  excluded  bitmap  members that did not contribute (Agree), or
//	                         that the shrunk communicator leaves out
//	contribution line of member m (64 bytes), a 32-byte half per parity
//	  +0   round     uint64  the round contributed to (written last)
//	  +8   flag      uint64
//	  +16  acked     uint32  the failure-log prefix m acknowledged on comm
//	  +20  known     uint32  the failure-log prefix m knew of
//
// A member writes its contribution, then waits until every member has
// contributed to the round or is dead (the failure table; the kernel's
// detector is perfect: a member reported dead can never contribute), or
// until the round is decided. Then, if it is not decided, any member may
// decide: it takes the decision record by compare-and-swap of state
// (from an older round, or from a writer that died), writes the body and
// sets the phase to decided. Every member adopts the body.
//
// Agree needs no decider. Once a member sees every member contributed
// to the round or dead (declared), the round's contributions are final:
// the dead cannot write, and a contribution stays in place until every
// member has finished the round (a half is reused two rounds later, and
// no member can contribute to the round in between before every live
// member has contributed to it, that is finished this one). A member
// reads a dead member's line after it saw the death, so it sees any
// contribution made before it. The outcome is a function of those final
// lines and of the non-contributors' positions in the failure log,
// which are fixed once they are declared: the AND of the contributed
// flags, the non-contributors, and the error, raised exactly when a
// non-contributor's failure was not acknowledged by every contributor
// (its log position is at or past the shortest acknowledged prefix; a
// member that contributed and then failed raises none, as the spec
// says: "fails before contributing"). So every member computes the same
// outcome by itself: with two members that costs one line transfer each
// way, as a barrier does. The decision record below serves Shrink, whose
// new context slot must be allocated once.
//
// Why Shrink's decision is uniform. (1) Only the member holding the writing state
// writes the body, and the state passes to another writer only when the
// holder is dead, so the body a round ends with was written by one
// process, then marked decided, and never changes before every member
// has read it (a record is reused two rounds later, and no member can
// contribute to the round in between before it has read this one). (2)
// A writer taken over may have computed another body (a member may have
// died meanwhile), but only the body marked decided is ever read.
// Shrink's group does not even depend on the writer: once every member
// has contributed or is dead, the contributions are fixed (the dead
// cannot write) and the non-contributors are exactly the dead that did
// not contribute, so the excluded set depends only on shared state that
// no longer changes; its new slot, stored right after it is allocated,
// is taken over with the record. (3) Every member returns the decided
// body: the same value and the same error everywhere.
//
// The error (DESIGN.md rule 6, the and the spec's wording):
// ErrProcFailed exactly when a member failed without contributing and
// some contributor had not acknowledged that failure (the failure log
// gives every rank the same order, so an acknowledged prefix length is
// an exact set). After an error every member acknowledges a prefix of
// the failure log that covers every non-contributor.

// stageHook, set only by tests, runs at named points of a round so that a
// test can kill the member there.
var stageHook func(stage string)

func testStage(stage string) {
	if stageHook != nil {
		stageHook(stage)
	}
}

// spinPolls bounds the polls of an Agree round, when members spin,
// before it goes through the engine's wait.
const spinPolls = 2000

const (
	phaseWriting = 1
	phaseDecided = 2

	decNoSlot   = 2
	decExcluded = 4 // the bitmap has members: read it (else it may hold an older round's bits)
)

type decision struct {
	state atomic.Uint64
	round atomic.Uint64
	value atomic.Uint64
	flags atomic.Uint32
	slot  atomic.Uint32
	gen   atomic.Uint32
	// decided is the low 32 bits of the last decided round: the word
	// members sleep on (ext.Block), so that one wake reaches them all.
	decided atomic.Uint32
	// An intercommunicator's Shrink: the local communicators' slots
	// and generations, of the low group then of the other.
	lslot [2]atomic.Uint32
	lgen  [2]atomic.Uint32
	_     [8]byte
}

type contribution struct {
	round atomic.Uint64
	flag  atomic.Uint64
	acked atomic.Uint32
	known atomic.Uint32
	_     [8]byte
}

func init() {
	if unsafe.Sizeof(decision{}) != 64 || unsafe.Sizeof(contribution{}) != 32 {
		panic("ulfm: agreement records drifted from their documentation")
	}
	ext.OnCreate(func(comm any) {
		c := comm.(*ranks.Comm)
		n, me := ext.Membership(comm)
		st := &state{c: c, size: n, rank: me, base: ext.AgreeArea(comm)}
		st.inter, st.lowSize, st.meLow = ext.Sides(comm)
		st.span = ext.AcrossNodes(comm, "") != nil
		st.agreeDone = st.roundComplete
		ext.SlotsOf(comm)[ext.SlotULFM] = st
	})
	ext.OnFree(func(comm any) {
		if st, _ := ext.SlotsOf(comm)[ext.SlotULFM].(*state); st != nil {
			st.freed.Store(true)
		}
	})
}

// state is a communicator's local agreement state (in its ext slot).
type state struct {
	c     *ranks.Comm
	size  int
	rank  int
	base  unsafe.Pointer
	round uint64
	q     queue // Iagree, Ishrink
	span  bool  // members on other nodes: agreement by messages (span.go)
	freed atomic.Bool

	waitRound uint64      // the Agree round being waited for
	agreeDone func() bool // st.complete as a predicate, made once

	// An intercommunicator's members are its union, the low group (the
	// first lowSize members) first: Agree ANDs the other group's flags,
	// Shrink gives each group a local communicator of its own.
	inter   bool
	lowSize int
	meLow   bool
}

// remote reports whether member q is in the other group of an
// intercommunicator (every member is, of an intracommunicator: Agree
// ANDs all flags).
func (st *state) remote(q int) bool {
	return !st.inter || (q < st.lowSize) != st.meLow
}

func stateOf(c *ranks.Comm, op string) (*state, error) {
	if c == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil communicator"}
	}
	st, _ := ext.SlotsOf(c)[ext.SlotULFM].(*state)
	if st == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "not a communicator of this job"}
	}
	if st.freed.Load() {
		// Iagree and Ishrink started before the free still run (they
		// call st's methods, not this).
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "the communicator was freed"}
	}
	return st, nil
}

func (st *state) decision(round uint64) *decision {
	return (*decision)(unsafe.Add(st.base, int(round%2)*(64+job.BitmapBytes(st.size))))
}

func (st *state) excluded(round uint64) []atomic.Uint64 {
	p := unsafe.Add(unsafe.Pointer(st.decision(round)), 64)
	return unsafe.Slice((*atomic.Uint64)(p), job.BitmapBytes(st.size)/8)
}

func (st *state) contribution(m int, round uint64) *contribution {
	off := 2*(64+job.BitmapBytes(st.size)) + m*64 + int(round%2)*32
	return (*contribution)(unsafe.Add(st.base, off))
}

// outcome is what a round decided, as this member read it.
type outcome struct {
	value       uint64
	err         bool
	noSlot      bool
	slot, gen   uint32
	lslot, lgen uint32 // Shrink of an intercommunicator: this rank's group's local slot
	excluded    []int  // ranks of the communicator, increasing
}

// agree runs one round with this member's flag. For Shrink, the decider
// also allocates the context slot of the communicator of the members it
// does not exclude.
func (st *state) agree(flag uint64, op string) (outcome, error) {
	c := st.c
	st.round++
	round := st.round
	acked, known := ext.Acked(c), ext.Known(c)
	me := st.contribution(st.rank, round)
	me.flag.Store(flag)
	me.acked.Store(uint32(acked))
	me.known.Store(uint32(known))
	me.round.Store(round)
	// No wake-up here: the member whose contribution completes the round
	// sees it in its own wait and decides, and the decider wakes all; a
	// failure wakes everyone through the failure epoch.
	testStage("contributed")
	dec := st.decision(round)
	err := ext.Block(c, op, &dec.decided, func() bool { return st.step(round, dec) })
	if err != nil {
		return outcome{}, err
	}
	out := outcome{value: dec.value.Load(), slot: dec.slot.Load(), gen: dec.gen.Load()}
	if st.inter {
		side := 1
		if st.meLow {
			side = 0
		}
		out.lslot, out.lgen = dec.lslot[side].Load(), dec.lgen[side].Load()
	}
	f := dec.flags.Load()
	out.noSlot = f&decNoSlot != 0
	if f&decExcluded != 0 {
		ex := st.excluded(round)
		for m := range st.size {
			if ex[m/64].Load()&(1<<(m%64)) != 0 {
				out.excluded = append(out.excluded, m)
			}
		}
	}
	return out, nil
}

// agreeLocal is Agree's round. Its outcome is a function of the round's
// final contributions only, so every member computes it alone, with no
// decision record (see "Agree needs no decider" above).
func (st *state) agreeLocal(flag uint64, op string) (outcome, error) {
	c := st.c
	st.round++
	round := st.round
	me := st.contribution(st.rank, round)
	me.flag.Store(flag)
	acked := uint32(ext.Acked(c))
	me.acked.Store(acked) // known is Shrink's only
	me.round.Store(round)
	testStage("contributed")
	st.waitRound = round
	done := false
	if ext.Spinning(c) {
		// A member that waits for us may have gone to sleep: its
		// doorbell says so (a load unless it does). Oversubscribed, the
		// member that sees the round complete wakes everyone instead.
		for r := range st.size {
			if r != st.rank {
				ext.Wake(c, r)
			}
		}
		// Members spin: poll the lines a while before the engine's wait,
		// the contributions only (one load a member) but for every 64th
		// poll, which also looks for the dead (the full predicate): a
		// shorter poll sees the last contribution sooner.
		for i := range spinPolls {
			if done = st.allContributed(round); done {
				break
			}
			if i%64 == 63 {
				if done = st.roundComplete(); done {
					break
				}
			}
			spin.Pause()
		}
	}
	if !done {
		if err := ext.Block(c, op, &st.decision(round).decided, st.agreeDone); err != nil {
			return outcome{}, err
		}
	}
	testStage("completed")
	out := outcome{value: ^uint64(0)}
	minAcked := uint32(1<<32 - 1)
	for q := range st.size {
		if q == st.rank {
			// Our own line is not read back: the members polling it
			// may have taken it, and a read would cost a transfer.
			if st.remote(q) {
				out.value &= flag
			}
			minAcked = min(minAcked, acked)
			continue
		}
		ct := st.contribution(q, round)
		if ct.round.Load() != round {
			out.excluded = append(out.excluded, q) // dead: it never will
			continue
		}
		if st.remote(q) {
			out.value &= ct.flag.Load()
		}
		minAcked = min(minAcked, ct.acked.Load())
	}
	for _, q := range out.excluded {
		if i := ext.MemberLogIndex(c, q); i >= 0 && uint32(i) >= minAcked {
			out.err = true
		}
	}
	return out, nil
}

// allContributed reports whether every other member contributed to
// round. Our own line is not read: a member polling it may have taken
// it, and reading it back would cost a transfer.
func (st *state) allContributed(round uint64) bool {
	for q := range st.size {
		if q != st.rank && st.contribution(q, round).round.Load() != round {
			return false
		}
	}
	return true
}

// roundComplete is Agree's wait predicate: every member has contributed
// to st.waitRound or is dead (and declared: its log position is fixed).
// Oversubscribed, the first member to see it wakes the others, who sleep
// on the round's decided word.
func (st *state) roundComplete() bool {
	round := st.waitRound
	c := st.c
	for q := range st.size {
		if q == st.rank || st.contribution(q, round).round.Load() == round {
			continue // (our own is there: we wrote it before waiting)
		}
		if ext.MemberState(c, q) != ext.Failed || ext.MemberLogIndex(c, q) < 0 {
			return false // alive and not there yet, or its declaration is under way
		}
	}
	if !ext.Spinning(c) {
		if dec := st.decision(round); dec.decided.Load() != uint32(round) {
			dec.decided.Store(uint32(round))
			ext.Release(c, &dec.decided)
		}
	}
	return true
}

// step is the wait predicate of a round: it reports whether the round is
// decided, deciding it if this member can.
func (st *state) step(round uint64, dec *decision) bool {
	s := dec.state.Load()
	if s>>32 == round && s&3 == phaseDecided {
		return true
	}
	c := st.c
	for q := range st.size {
		contributed := st.contribution(q, round).round.Load() == round
		switch ext.MemberState(c, q) {
		case ext.Alive:
			if !contributed {
				return false // wait for its contribution
			}
		case ext.Failed:
			if ext.MemberLogIndex(c, q) < 0 {
				return false // its declaration is under way
			}
		}
	}
	// Every member contributed or is dead: decide, unless someone
	// alive is deciding.
	if s>>32 == round && s&3 == phaseWriting {
		if ext.MemberState(c, int(s>>2&(1<<30-1))) == ext.Alive {
			return false
		}
	} else if s>>32 >= round {
		return false
	}
	mine := round<<32 | uint64(st.rank)<<2
	if !dec.state.CompareAndSwap(s, mine|phaseWriting) {
		return false // someone else took it: wait for it
	}
	testStage("writing")
	st.write(round, dec)
	testStage("written")
	dec.state.Store(mine | phaseDecided)
	dec.decided.Store(uint32(round))
	ext.Release(c, &dec.decided)
	return true
}

// write computes and writes Shrink's decision of round (see the comment
// at the top: any writer computes the same): the members it excludes and
// the new communicator's context slot. Shrink raises no error, so the
// decision has none (Agree's error is computed by every member alone, in
// agreeLocal).
func (st *state) write(round uint64, dec *decision) {
	c := st.c
	value := ^uint64(0)
	maxKnown := uint32(0)
	excluded := make([]bool, st.size)
	for q := range st.size {
		ct := st.contribution(q, round)
		if ct.round.Load() == round {
			value &= ct.flag.Load()
			maxKnown = max(maxKnown, ct.known.Load())
			continue
		}
		excluded[q] = true
	}
	// Every failure any contributor knew of is excluded too (Shrink's
	// rule), contributor or not.
	var flags uint32
	for i := range int(maxKnown) {
		if m := ext.LogMember(c, i); m >= 0 {
			excluded[m] = true
		}
	}
	if dec.round.Load() != round || dec.gen.Load() == 0 {
		// Not taken over from a writer that died after allocating:
		// allocate, and record the slot at once (round first), so that
		// a writer taking over from this one reuses it. A writer that
		// dies between the allocation and the record (a few
		// instructions) leaks that slot: a double fault left alone.
		dec.gen.Store(0)
		dec.round.Store(round)
		var members []int
		for m := range st.size {
			if !excluded[m] {
				members = append(members, m)
			}
		}
		if slot, gen, ok := ext.Alloc(c, members); ok {
			dec.slot.Store(slot)
			dec.gen.Store(gen)
		} else {
			flags |= decNoSlot
		}
		if st.inter {
			// Each group's survivors get a local communicator too.
			for side := range 2 {
				dec.lgen[side].Store(0)
				var group []int
				for _, m := range members {
					if (m < st.lowSize) == (side == 0) {
						group = append(group, m)
					}
				}
				if len(group) == 0 {
					continue
				}
				if slot, gen, ok := ext.Alloc(c, group); ok {
					dec.lslot[side].Store(slot)
					dec.lgen[side].Store(gen)
				} else {
					flags |= decNoSlot
				}
			}
		}
	}
	if slices.Contains(excluded, true) {
		// Written only when it has members, so that the common decision
		// costs the members who read it one line, not two.
		flags |= decExcluded
		ex := st.excluded(round)
		for i := range ex {
			ex[i].Store(0)
		}
		for m, x := range excluded {
			if x {
				ex[m/64].Or(1 << (m % 64))
			}
		}
	}
	dec.value.Store(value)
	dec.flags.Store(flags)
}

// Agree is MPI_Comm_agree: a fault-tolerant bitwise AND of flag over the
// members of c that have not failed. It is collective, works on a revoked
// communicator and never returns ErrRevoked. Every survivor gets the same
// value and the same error: ErrProcFailed exactly when a member failed
// without contributing and not every contributor had acknowledged that
// failure. A member that contributed and then failed raises no error
// (the spec: "fails before contributing"). Agree acknowledges nothing
// itself (spec 15.3.1): after one that returned ErrProcFailed, the next
// c.FailureAck acknowledges the failure of every member that did not
// contribute, even one this rank had not yet been told of.
func Agree(c *ranks.Comm, flag int) (int, error) {
	st, err := stateOf(c, "Agree")
	if err != nil {
		return 0, err
	}
	return st.agreeValue(flag)
}

func (st *state) agreeValue(flag int) (int, error) {
	c := st.c
	if st.span || ext.AgreeByMessages {
		return st.spanAgree(flag)
	}
	out, err := st.agreeLocal(uint64(int64(flag)), "Agree")
	if err != nil {
		return 0, err
	}
	v := int(int64(out.value))
	if !out.err {
		return v, nil
	}
	prefix := 0
	for _, q := range out.excluded {
		if i := ext.MemberLogIndex(c, q); i >= 0 {
			prefix = max(prefix, i+1)
		}
	}
	ext.AckNext(c, prefix)
	return v, &ranks.Error{Class: ranks.ErrProcFailed, Op: "Agree", Rank: -1, Failed: out.excluded,
		Detail: "a member failed without contributing, unacknowledged"}
}

// AgreeBool is Agree on a boolean: true only if every contributor passed
// true.
func AgreeBool(c *ranks.Comm, flag bool) (bool, error) {
	v := 0
	if flag {
		v = 1
	}
	got, err := Agree(c, v)
	return got&1 == 1, err
}

// Iagree is the nonblocking Agree: the value is in *flag when the request
// completes. It runs on a goroutine of its own, in the order started.
func Iagree(c *ranks.Comm, flag *int) (*ranks.Request, error) {
	st, err := stateOf(c, "Iagree")
	if err != nil {
		return nil, err
	}
	req, complete := ext.NewRequest(c, "Iagree")
	in := *flag
	st.post(func() {
		v, err := st.agreeValue(in)
		*flag = v
		complete(err)
	})
	return req.(*ranks.Request), nil
}
