package ulfm

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"slices"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Agreement across nodes.
//
// Members on other nodes share no memory with this rank, so Agree and
// Shrink on a communicator that spans nodes run on messages: the FT
// channel of package ranks (ext.FTSend, ext.FTRecv), which a revoke does
// not stop and whose receive from a member ends with ErrProcFailed once
// that member is known to have failed. The failure detector is perfect
// (a process is declared failed only once it is dead: pidfd and robust
// futex on its node, the agents' reports across nodes), which allows a
// rotating coordinator with three phases:
//
//   - A member sends its state (flag, the failures it has acknowledged and
//     knows of, and the proposal it holds, if any) to its coordinator: the
//     lowest member it does not know to have failed.
//   - The coordinator collects every other member's state, or learns of
//     its failure. If a member holds a proposal, it takes the one of the
//     highest coordinator; else it decides from the states: the AND of the
//     flags, the members that did not contribute, and the error (a
//     non-contributor whose failure a contributor had not acknowledged),
//     as the shared-memory agreement does. It proposes that to the
//     contributors, which hold it and acknowledge; then it commits it to
//     those that acknowledged, which return it.
//   - A member whose coordinator fails moves to the next one.
//
// Why it is uniform. A coordinator commits only after every member alive
// when it collected holds its proposal, and a member adopts a proposal
// only from the coordinator it now follows. So once one member returns
// a value, every live member holds it, and every later coordinator,
// which collects from every live member, proposes it again. A new
// coordinator that already holds a proposal may have had members return
// it (who will not send a state again): it commits it to every live
// member at once, without collecting. One that holds none knows that
// nobody has returned (it would hold the proposal), so every live member
// will send it a state.
//
// Every message starts with the round; one of another round (left by a
// coordinator that failed, and met again after the tag's 2^16 rounds
// wrapped) is dropped.

const (
	spanState   = 0 // member → coordinator: its state
	spanDecide  = 1 // coordinator → member: a proposal or the commit
	spanAck     = 2 // member → coordinator: holds the proposal
	spanCreate  = 4 // Shrink: the node slot's tag (ext.FTNodeSlot)
	spanKinds   = 8
	spanPropose = 1 // spanDecide's kinds
	spanCommit  = 2
)

// spanOutcome is an agreement's decision: the AND of the contributors'
// flags, whether to raise ErrProcFailed, and the excluded members (a
// bitmap of ranks of the communicator).
type spanOutcome struct {
	value    uint64
	err      bool
	excluded []uint64
	table    []uint64 // Shrink: every contributor's extra words, spanExtra a member
}

// spanExtra is the words of a member's contribution that Shrink's round
// gathers into the decision (spanOutcome.table): its node's context
// slot, its generation, and the node.
const spanExtra = 3

func (o spanOutcome) has(q int) bool { return o.excluded[q/64]&(1<<(q%64)) != 0 }

func (o spanOutcome) list() []int {
	var out []int
	for i, w := range o.excluded {
		for ; w != 0; w &= w - 1 {
			out = append(out, i*64+bits.TrailingZeros64(w))
		}
	}
	return out
}

// spanMemberState is a member's state as the coordinator reads it.
type spanMemberState struct {
	flag   uint64
	ballot int // the coordinator whose proposal it holds, or -1
	held   spanOutcome
	acked  []uint64 // failures it acknowledged
	known  []uint64 // failures it knew of when it entered
	extra  [spanExtra]uint64
}

func (st *state) words() int { return (st.size + 63) / 64 }

func (st *state) tag(round uint64, kind int) int {
	return int(round&0xffff)*spanKinds + kind
}

// spanRound runs one agreement round with this member's flag across
// nodes. shrink: the excluded members also include every failure a
// contributor knew of (Shrink excludes at least those).
func (st *state) spanRound(flag uint64, shrink bool, extra [spanExtra]uint64) (spanOutcome, error) {
	if st.inter {
		// Its channel reaches the remote group only; the agreement
		// over both groups needs their shared memory.
		return spanOutcome{}, &ranks.Error{Class: ranks.ErrUnsupported, Op: "Agree", Rank: -1,
			Detail: "an intercommunicator whose groups span nodes: Agree and Shrink work within one node only, yet"}
	}
	c := st.c
	st.round++
	round := st.round
	w := st.words()
	me := spanMemberState{flag: flag, ballot: -1, acked: make([]uint64, w), known: make([]uint64, w), extra: extra}
	acked := ext.Acked(c)
	for q := range st.size {
		if i := ext.MemberLogIndex(c, q); i >= 0 && i < acked {
			me.acked[q/64] |= 1 << (q % 64)
		}
		if q != st.rank && ext.MemberState(c, q) == ext.Failed {
			me.known[q/64] |= 1 << (q % 64)
		}
	}
	testStage("contributed")
	// Each member below this one may coordinate in turn, in rank order.
	// A receive from one that failed still returns what it sent before
	// (the engine, and the agents across nodes, deliver a dead rank's
	// messages before its failure), so a commit it sent is not missed.
	for k := 0; ; {
		if k == st.rank {
			return st.coordinate(round, me, shrink)
		}
		if ext.MemberState(c, k) != ext.Failed {
			if err := st.spanSend(st.encodeState(round, me), k, st.tag(round, spanState)); err != nil && !failed(err) {
				return spanOutcome{}, err
			}
		}
		for {
			m, err := st.spanRecv(round, k, st.tag(round, spanDecide))
			if err != nil {
				if !failed(err) {
					return spanOutcome{}, err
				}
				k++ // it failed: the next one coordinates
				break
			}
			out := st.decodeOutcome(m[2:])
			if m[1] == spanCommit {
				return out, nil
			}
			me.ballot, me.held = k, out
			testStage("holds")
			if err := st.spanSend([]uint64{round}, k, st.tag(round, spanAck)); err != nil && !failed(err) {
				return spanOutcome{}, err
			}
		}
	}
}

// coordinate is the coordinator's part of a round (see the top).
func (st *state) coordinate(round uint64, me spanMemberState, shrink bool) (spanOutcome, error) {
	// Commits go out highest rank first, so the member next in line
	// (the lowest above) gets its own last: if this rank dies meanwhile
	// and that member has it, every other has too; if not, that member
	// has not returned and takes over (it holds the proposal and commits
	// it to all).
	commit := func(to []int, out spanOutcome) {
		msg := append([]uint64{round, spanCommit}, st.encodeOutcome(out)...)
		for _, q := range slices.Backward(to) {
			_ = st.spanSend(msg, q, st.tag(round, spanDecide)) // a failed member needs none
		}
	}
	var others []int
	for q := st.rank + 1; q < st.size; q++ {
		others = append(others, q) // those below are known to have failed
	}
	if me.ballot >= 0 {
		commit(others, me.held)
		return me.held, nil
	}
	states := map[int]spanMemberState{st.rank: me}
	var contributors []int
	for _, q := range others {
		m, err := st.spanRecv(round, q, st.tag(round, spanState))
		if err != nil {
			if failed(err) {
				continue
			}
			return spanOutcome{}, err
		}
		states[q] = st.decodeState(m[1:])
		contributors = append(contributors, q)
	}
	out := st.decideSpan(states, shrink)
	testStage("decided")
	msg := append([]uint64{round, spanPropose}, st.encodeOutcome(out)...)
	var holding []int
	for _, q := range contributors {
		if err := st.spanSend(msg, q, st.tag(round, spanDecide)); err == nil {
			holding = append(holding, q)
		} else if !failed(err) {
			return spanOutcome{}, err
		}
	}
	var acked []int
	for _, q := range holding {
		if _, err := st.spanRecv(round, q, st.tag(round, spanAck)); err == nil {
			acked = append(acked, q)
		} else if !failed(err) {
			return spanOutcome{}, err
		}
	}
	testStage("proposed")
	commit(acked, out)
	return out, nil
}

// decideSpan is the decision from the states of the contributors: a
// proposal one of them holds (the highest coordinator's), or else the
// AND of their flags, the non-contributors as excluded (and, for
// Shrink, every failure a contributor knew of), and the error.
func (st *state) decideSpan(states map[int]spanMemberState, shrink bool) spanOutcome {
	best := -1
	for _, s := range states {
		if s.ballot > best {
			best = s.ballot
		}
	}
	if best >= 0 {
		for _, s := range states {
			if s.ballot == best {
				return s.held
			}
		}
	}
	out := spanOutcome{value: ^uint64(0), excluded: make([]uint64, st.words())}
	if shrink {
		out.table = make([]uint64, spanExtra*st.size)
	}
	for q := range st.size {
		s, ok := states[q]
		if !ok {
			out.excluded[q/64] |= 1 << (q % 64)
			continue
		}
		out.value &= s.flag
		if shrink {
			for i := range out.excluded {
				out.excluded[i] |= s.known[i]
			}
			copy(out.table[spanExtra*q:], s.extra[:])
		}
	}
	for q := range st.size {
		if _, ok := states[q]; ok || !out.has(q) {
			continue
		}
		for _, s := range states {
			if s.acked[q/64]&(1<<(q%64)) == 0 {
				out.err = true
			}
		}
	}
	return out
}

func failed(err error) bool { return errors.Is(err, ranks.ErrProcFailed) }

func (st *state) spanSend(msg []uint64, to, tag int) error {
	b := make([]byte, 8*len(msg))
	for i, v := range msg {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return ext.FTSend(st.c, b, to, tag)
}

// spanRecv receives the next message of round from member q on tag,
// dropping any of another round.
func (st *state) spanRecv(round uint64, q, tag int) ([]uint64, error) {
	b := make([]byte, 8*(8+spanExtra+3*st.words()+spanExtra*st.size))
	for {
		n, err := ext.FTRecv(st.c, b, q, tag)
		if err != nil {
			return nil, err
		}
		if n < 8 || n%8 != 0 {
			continue
		}
		m := make([]uint64, n/8)
		for i := range m {
			m[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
		if m[0] == round {
			return m, nil
		}
	}
}

// A state on the wire: round, flag, ballot+1, then the held outcome,
// the acknowledged and the known bitmaps.
func (st *state) encodeState(round uint64, s spanMemberState) []uint64 {
	msg := []uint64{round, s.flag, uint64(s.ballot + 1)}
	if s.ballot >= 0 {
		msg = append(msg, st.encodeOutcome(s.held)...)
	} else {
		msg = append(msg, st.encodeOutcome(spanOutcome{excluded: make([]uint64, st.words())})...)
	}
	msg = append(msg, s.acked...)
	msg = append(msg, s.known...)
	return append(msg, s.extra[:]...)
}

func (st *state) decodeState(m []uint64) spanMemberState {
	w := st.words()
	s := spanMemberState{flag: m[0], ballot: int(m[1]) - 1}
	s.held = st.decodeOutcome(m[2:])
	m = m[2+st.outcomeWords(m[2:]):]
	s.acked, s.known = m[:w], m[w:2*w]
	copy(s.extra[:], m[2*w:])
	return s
}

// An outcome on the wire: value, error, whether a table follows, the
// excluded bitmap, then the table if any.
func (st *state) encodeOutcome(o spanOutcome) []uint64 {
	e := uint64(0)
	if o.err {
		e = 1
	}
	msg := append([]uint64{o.value, e, uint64(len(o.table))}, o.excluded...)
	return append(msg, o.table...)
}

func (st *state) outcomeWords(m []uint64) int { return 3 + st.words() + int(m[2]) }

func (st *state) decodeOutcome(m []uint64) spanOutcome {
	w := st.words()
	o := spanOutcome{value: m[0], err: m[1] != 0, excluded: append([]uint64(nil), m[3:3+w]...)}
	if n := int(m[2]); n > 0 {
		o.table = append([]uint64(nil), m[3+w:3+w+n]...)
	}
	return o
}

// spanAgree is Agree across nodes: agreeValue's outcome from spanRound.
func (st *state) spanAgree(flag int) (int, error) {
	c := st.c
	out, err := st.spanRound(uint64(int64(flag)), false, [spanExtra]uint64{})
	if err != nil {
		return 0, err
	}
	v := int(int64(out.value))
	if !out.err {
		return v, nil
	}
	excluded := out.list()
	prefix := 0
	for _, q := range excluded {
		if i := ext.MemberLogIndex(c, q); i >= 0 {
			prefix = max(prefix, i+1)
		}
	}
	ext.AckNext(c, prefix)
	return v, &ranks.Error{Class: ranks.ErrProcFailed, Op: "Agree", Rank: -1, Failed: excluded,
		Detail: "a member failed without contributing, unacknowledged"}
}

// spanShrink is Shrink across nodes in one round. First each node's
// first live member allocates a context slot of the node for the node's
// live members and sends it to them (ext.FTNodeSlot: no message leaves
// the node). Then a round agrees on the members to exclude and gathers
// every contributor's node slot into the decision, so that every
// survivor adopts the same table. If a node's members got different
// slots (its allocator died after sending to some, and the next one
// allocated again), every survivor gives its slot back and the round is
// run again; if a node had none free, every survivor returns ErrNoMem.
func (st *state) spanShrink() (*ranks.Comm, error) {
	c := st.c
	for {
		slot, gen, node, err := ext.FTNodeSlot(c, st.tag(st.round+1, spanCreate))
		if err != nil {
			return nil, err
		}
		testStage("created")
		out, err := st.spanRound(0, true, [spanExtra]uint64{uint64(slot), uint64(gen), uint64(node)})
		if err != nil {
			if gen != 0 {
				ext.FTRelease(c, slot)
			}
			return nil, err
		}
		var members []int
		for q := range st.size {
			if !out.has(q) {
				members = append(members, q)
			}
		}
		table := make([]uint32, 2*len(members))
		consistent, noSlot := true, false
		nodeSlot := map[uint64][2]uint64{}
		for i, q := range members {
			x := out.table[spanExtra*q : spanExtra*q+spanExtra]
			if x[1] == 0 {
				noSlot = true
			}
			if prev, ok := nodeSlot[x[2]]; ok && prev != [2]uint64{x[0], x[1]} {
				consistent = false
			}
			nodeSlot[x[2]] = [2]uint64{x[0], x[1]}
			table[2*i], table[2*i+1] = uint32(x[0]), uint32(x[1])
		}
		if consistent && !noSlot {
			nc, err := ext.FTAdopt(c, members, slot, gen, table)
			if err != nil {
				return nil, err
			}
			return nc.(*ranks.Comm), nil
		}
		// Give back every slot of this node's: one allocated by a member
		// after an allocator that died holds this member too, though it
		// never heard of it (ext.FTNodeSlot). Releasing a slot not held
		// does nothing.
		if gen != 0 {
			ext.FTRelease(c, slot)
		}
		for _, q := range members {
			if x := out.table[spanExtra*q : spanExtra*q+spanExtra]; x[2] == uint64(node) && x[1] != 0 && uint32(x[0]) != slot {
				ext.FTRelease(c, uint32(x[0]))
			}
		}
		if noSlot {
			return nil, &ranks.Error{Class: ranks.ErrNoMem, Op: "Shrink", Rank: -1, Detail: "a node had no free context slot"}
		}
	}
}
