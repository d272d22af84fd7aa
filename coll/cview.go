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
// the common case of a small collective without entering Go when ranks
// sleep (the counter of shared.go), where each call's crossing into Go
// costs most from cold caches (docs/c.md). They mirror allreduce's
// inline arriveHold path and barrier's arrive, and enter Go (CWait,
// CResult, CLast) to sleep and for every error.

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
}

// CViewOf returns c's collective view, pinning its state with p, or nil
// when c's collectives never take the counter's inline path: an
// intercommunicator, one spanning nodes, one of a single member, or one
// whose members spin (they take the dissemination barrier).
func CViewOf(c *ranks.Comm, p *runtime.Pinner) *CView {
	st := stateOf(c)
	if st == nil || st.ic != nil || st.span || st.spin || st.size < 2 {
		return nil
	}
	p.Pin(st)
	return &CView{
		A: &st.a, K: &st.k, Cur: &st.cur, OneWay: &st.oneWay,
		Freed: &st.freed, Busy: &st.q.busy,
		Hdr: unsafe.Pointer(st.hdr), Lines: st.lines,
		Sleepers: ext.SleepersWord(c),
		Size:     st.size, Rank: st.rank,
	}
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
