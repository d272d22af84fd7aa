package coll

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// The C view of a communicator's collective state: what the C library's
// fast Allreduce and Barrier (cabi/fastcoll.h) read and write to run
// the common case of a small collective without entering Go, one
// crossing being much of a small collective's cost from C, and most of
// it when ranks sleep and each call starts on cold caches (docs/c.md).
// They mirror allreduce's inline paths and barrier's arrive, on the
// dissemination barrier when members spin and on the counter (with
// arriveHold) when they sleep, and enter Go (CAwait, CWait, CResult,
// CLast, CReadErr) to sleep and for every error.

// CView holds the addresses of the state's fields a fast collective
// updates (the counts of collectives and phases begun) or tests, and of
// the communicator's collective lines in the segment (shared.go).
type CView struct {
	A, K, Cur   *uint64
	OneWay      *bool
	Freed, Busy *atomic.Bool
	Hdr, Lines  unsafe.Pointer
	Sleepers    *atomic.Uint32
	Size, Rank  int
	Spin        bool // members spin: the dissemination barrier of Rounds rounds
	Rounds      int
}

// CViewOf returns c's collective view, pinning its state with p, or nil
// when c's collectives never take the inline paths: an
// intercommunicator, one spanning nodes, or one of a single member.
func CViewOf(c *ranks.Comm, p *runtime.Pinner) *CView {
	st := stateOf(c)
	if st == nil || st.ic != nil || st.span || st.size < 2 {
		return nil
	}
	p.Pin(st)
	return &CView{
		A: &st.a, K: &st.k, Cur: &st.cur, OneWay: &st.oneWay,
		Freed: &st.freed, Busy: &st.q.busy,
		Hdr: unsafe.Pointer(st.hdr), Lines: st.lines,
		Sleepers: ext.SleepersWord(c),
		Size:     st.size, Rank: st.rank,
		Spin: st.spin, Rounds: st.rounds,
	}
}

// CAwait is a fast collective's wait, in round k of the dissemination
// barrier of the phase it began, for member r's seq to reach v, after it
// polled as await does; end is the phase's end (await).
func CAwait(c *ranks.Comm, op string, r int, v, end uint32) error {
	st := stateOf(c)
	return st.awaitSlow(op, &st.line(r).seq, v, end)
}

// CReadErr is the outcome of a fast Allreduce whose members spin, which
// contributed mine, when a member's line holds data of another size or
// a member's arguments were invalid: allreduce's error there (its
// verdict, or reduceLines' size check).
func CReadErr(c *ranks.Comm, op string, mine []byte) error {
	st := stateOf(c)
	st.ownN, st.ownKind = copy(st.own[:], mine), lineInline
	if v := st.verdict(op); v != nil {
		return v
	}
	for r := range st.size {
		if err := checkLen(op, r, len(st.read(r)), len(mine)); err != nil {
			return err
		}
	}
	return errf(ranks.ErrOther, op, "the fast path found a size that differs, Go none")
}

// CWait is a fast collective's wait for the arrive phase it began (the
// counter's), after it polled and yielded the CPU yields times.
func CWait(c *ranks.Comm, op string, yields int) error {
	st := stateOf(c)
	return ext.WaitYielded(st.c, op, &st.hdr.done, st.counterDone, yields)
}

// CResult is the outcome of a fast Allreduce at a member that did not
// complete the count, when the header holds no result of len(p) bytes
// or a member's arguments were invalid: allreduce's error there.
func CResult(c *ranks.Comm, op string, p []byte) error {
	st := stateOf(c)
	if v := st.verdict(op); v != nil {
		return v
	}
	return st.result(op, p)
}

// CLast is the outcome of a fast Allreduce at the member that completed
// the count, contributing mine, when the lines differ in size or a
// member's arguments were invalid: it releases the others with the
// error, as allreduce does.
func CLast(c *ranks.Comm, op string, mine []byte) error {
	st := stateOf(c)
	st.ownN, st.ownKind = copy(st.own[:], mine), lineInline
	return st.releaseBad(op, nil, st.firstSizeMismatch(), len(mine))
}
