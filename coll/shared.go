package coll

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/internal/spin"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/shm"
)

// Small collectives go through the communicator's collective lines in the
// segment (internal/job places them; ext.Shared finds them):
//
//	header line (64 bytes)
//	  +0   arrive  uint64  arrivals, cumulative: arrive phase a is complete
//	                       when it reaches a*size (counter barrier)
//	  +8   done    uint32  the last complete arrive phase (low 32 bits)
//	  +12  resN    uint16  counter phases that combine (arriveHold): bytes
//	                       of the result in res, or resBad
//	  +14  resBad  uint16  with resN = resBad: the member whose
//	                       contribution's size differs from member 0's
//	                       (resNone: the member that completed a plain
//	                       count, which leaves no result)
//	  +16  res     [24]byte  the phase's result, written by the member
//	                       that completed the count before it stored done
//	  +40  fault   uint64  a member's arguments to collective k were
//	                       invalid: k (low 32 bits) << 32 | member << 8 |
//	                       error class (argErr, verdict)
//	  +48  (pad)
//	member line r (64 bytes, written only by member r)
//	  +0   seq     uint32  progress: (a-1)*(rounds+1) + k + 1 once r
//	                       starts round k of phase a's dissemination
//	                       barrier, a*(rounds+1) once it completed it; in
//	                       a one-way phase (bcastOneWay) (a-1)*(rounds+1)
//	                       + 1 on entry and a*(rounds+1) at the end
//	  +4   n       [2]uint16  each half's content: bytes of inline data
//	                       (low 8 bits) and its kind (lineInline, or
//	                       lineStaged or lineAnnounce: 8 bytes holding a
//	                       length), so that members that took different
//	                       paths for different lengths see it
//	  +8   data    [2][24]byte  two halves, used by alternate phases
//	  +56  fin     uint32  1 + the collectives r began on the communicator,
//	                       stored when r released it or finalized (0
//	                       before): a collective that a finalized member
//	                       never began fails with ErrPeerFinalized
//	                       (leftBehind), at its start or in a wait
//	  +60  (pad)
//
// An arrive phase: every member writes its data into its line's half for
// the phase, then arrives at a barrier; then each reads what it needs from
// the others' lines. The barrier depends on how the job waits:
//   - ranks do not outnumber cores (they spin): a dissemination barrier
//     on the seq words. In round k member r raises its seq and waits for
//     member r-2^k's; after ceil(log2 size) rounds every member has,
//     through a chain of such waits, seen every other's arrival. Each
//     member writes only its own line and polls one line per round, so a
//     2-member barrier costs one line transfer each way, at once, where a
//     shared counter moves one line back and forth three times.
//   - ranks outnumber cores (they sleep): the counter. Every member adds
//     one to arrive; the member that completes the count stores done and
//     wakes the others with one futex wake (ext.Release); the others
//     sleep until done says so. One wake for all beats log2(size) rounds
//     of wakes when each costs a context switch.
//
// Either way a waiter also stops when a member is known to have failed
// (ext.Wait). A member writes the same half again only two phases later,
// after every member arrived at the phase in between, that is, after
// every member finished reading. The lines are zeroed when the
// communicator is created, so nothing of a previous owner of the slot is
// ever read.

// Communicators whose context slot has scratch in the segment (the world
// and the lowest slots, internal/job) also stage medium-sized data there:
// member r's part, written only by r, is two halves of st.half bytes
// used by alternate phases as the lines' halves are. A member copies its
// data into its half, publishes the byte count inline, and arrives; the
// others then copy from it straight into their buffers: one copy in and
// one copy out per reader, no message.
//
// inlineMax is the data a member's line carries in one phase.
const inlineMax = 24

type header struct {
	arrive atomic.Uint64
	done   atomic.Uint32
	resN   uint16
	resBad uint16
	res    [inlineMax]byte
	fault  atomic.Uint64
	_      [16]byte
}

// resBad in header.resN says the phase's contributions differed in size;
// resNone that the count was completed by a member that leaves no result
// (a plain arrive: its kind of contribution differed from a reduction's).
const (
	resBad    = 0xffff
	resNone   = 0xfffe
	resFailed = 0xfffd // the leader's phase across nodes failed (hier.held)
)

// The kinds of a line half's content (the high bits of line.n).
const (
	lineInline   = 0
	lineStaged   = 1 << 8 // 8 bytes: the length of data staged in the scratch
	lineAnnounce = 2 << 8 // 8 bytes: the length of a large contribution (announce)
	lineLenMask  = 0xff
)

type line struct {
	seq  atomic.Uint32
	n    [2]uint16
	data [2][inlineMax]byte
	fin  atomic.Uint32
	_    [4]byte
}

// spinPolls bounds the polls of a dissemination round before the wait
// goes through ext.Wait, which also watches for failures and sleeps.
const spinPolls = 2000

func init() {
	if unsafe.Sizeof(header{}) != 64 || unsafe.Offsetof(header{}.res) != 16 ||
		unsafe.Offsetof(header{}.fault) != 40 || unsafe.Sizeof(line{}) != 64 || unsafe.Offsetof(line{}.data) != 8 ||
		unsafe.Offsetof(line{}.fin) != 56 {
		panic("coll: line layout drifted from its documentation")
	}
	ext.OnFree(func(comm any) {
		if st, _ := ext.SlotsOf(comm)[ext.SlotColl].(*state); st != nil {
			st.freed.Store(true)
			if h := st.hier; h != nil && h.local != nil {
				// Called under the engine lock, which Free takes.
				go h.local.Free()
			}
		}
	})
	ext.OnFinalize(func(comm any) {
		if st, _ := ext.SlotsOf(comm)[ext.SlotColl].(*state); st != nil && st.ic == nil {
			st.line(st.rank).fin.Store(uint32(st.k) + 1)
		}
	})
	ext.LeftBehind = func(comm any, op string) error {
		st, _ := ext.SlotsOf(comm)[ext.SlotColl].(*state)
		if st == nil || st.ic != nil {
			return nil
		}
		return st.leftBehind(op)
	}
	ext.OnRelease(func(comm any) {
		if st, _ := ext.SlotsOf(comm)[ext.SlotColl].(*state); st != nil && st.ic == nil {
			st.line(st.rank).fin.Store(uint32(st.k) + 1)
			st.freeBig()
		}
	})
	ext.OnCreate(func(comm any) {
		c := comm.(*ranks.Comm)
		if st := interOf(c); st != nil {
			ext.SlotsOf(comm)[ext.SlotColl] = st
			return
		}
		base := ext.Shared(comm)
		st := &state{
			c: c, cc: ext.CollOf(comm).(*ranks.Comm), size: c.Size(), rank: c.Rank(),
			hdr: (*header)(base), lines: unsafe.Add(base, 64), spin: ext.Spinning(comm),
			span: spansNodes(c),
		}
		st.stage, st.per = ext.Staging(comm)
		st.half = st.per / 2
		for 1<<st.rounds < st.size {
			st.rounds++
		}
		st.stride = uint64(st.rounds) + 1
		st.counterDone = func() bool { return int32(st.hdr.done.Load()-uint32(st.a)) >= 0 }
		st.countFull = func() bool { return st.hdr.arrive.Load() >= st.a*uint64(st.size) }
		st.seqDone = func() bool { return reached(st.waitW, st.waitV) }
		st.seqNeeded = func(r int) bool { return !reached(&st.line(r).seq, st.waitEnd) }
		ext.SlotsOf(comm)[ext.SlotColl] = st
	})
}

// state is a communicator's local collective state (in its ext slot).
type state struct {
	c      *ranks.Comm
	cc     *ranks.Comm // the collective twin: point-to-point traffic of collectives
	size   int
	rank   int
	hdr    *header
	lines  unsafe.Pointer
	stage  unsafe.Pointer   // the communicator's scratch, or nil (ext.Staging)
	reqs   []*ranks.Request // exchange's requests, kept between calls
	per    int              // its bytes per member
	half   int              // per/2: the most a member stages in one phase
	spin   bool             // members spin: dissemination barrier (else the counter)
	span   bool             // a member is on another node: point-to-point only (span.go)
	hier   *hier            // when span: the node-local communicator and the leaders (hier.go)
	rounds int              // of the dissemination barrier: ceil(log2 size)
	stride uint64           // seq values per phase: rounds+1
	oneWay bool             // the last phase was bcastOneWay's
	reused uint64           // the phase whose halves reuse last cleared

	// The waits' predicates, made once: a closure made per wait would be
	// an allocation per collective when ranks sleep. One goroutine at a
	// time runs a communicator's collectives (nonblocking.go), so fields
	// can carry their arguments.
	counterDone    func() bool    // arrive phase st.a complete (counter)
	countFull      func() bool    // every member counted in arrive phase st.a (hier.held)
	seqDone        func() bool    // waitW reached waitV
	seqNeeded      func(int) bool // member's seq has not reached waitEnd
	waitW          *atomic.Uint32
	waitV, waitEnd uint32
	a              uint64 // arrive phases begun
	k              uint64 // collectives begun (their point-to-point tag)
	cur            uint64 // k when the current collective began
	q              queue  // nonblocking collectives (nonblocking.go)

	// freed: the user freed the communicator. Collectives started before
	// (queued, admitted while they run) still run; new ones fail.
	freed    atomic.Bool
	admitted atomic.Bool
	// inits counts the persistent collectives' Init calls of this member
	// that made (or gave back at once) their creation (InitsOf).
	inits atomic.Uint64

	scratch []uint64 // temporary buffers, reused (scratch)

	// A copy of this member's data of the last phase it wrote (write),
	// which read returns rather than our line.
	own     [inlineMax]byte
	ownN    int
	ownKind uint16

	// An intercommunicator's (inter.go): nil for an intracommunicator,
	// whose other fields then hold.
	ic *interState

	// The shared area of large reductions (big.go).
	big      *shm.Mem
	bigChunk int
	bigOff   bool // it could not be made: use messages
}

// begin starts a collective op on c: c usable, no member known failed.
// The collective counts as begun even when it fails here, so that every
// member's count (the point-to-point tag) stays the same.
func begin(c *ranks.Comm, op string) (*state, error) {
	if c == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil communicator"}
	}
	st, _ := ext.SlotsOf(c)[ext.SlotColl].(*state)
	if st == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "not a communicator of this job"}
	}
	st.k++
	st.cur = st.k
	if st.freed.Load() && !st.admitted.Load() {
		return nil, freedErr(op)
	}
	if err := ext.Check(c, op); err != nil {
		return nil, err
	}
	return st, nil
}

func freedErr(op string) error {
	return &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "the communicator was freed"}
}

// tag is the point-to-point tag of the current collective.
func (st *state) tag() int { return int(st.k & (1<<29 - 1)) }

// line returns member r's line.
func (st *state) line(r int) *line { return (*line)(unsafe.Add(st.lines, r*64)) }

// publish writes p (at most inlineMax bytes) in this member's line for
// the next arrive phase.
func (st *state) publish(op string, p []byte) error {
	if err := st.reuse(op); err != nil {
		return err
	}
	st.write(lineInline, p)
	return nil
}

func (st *state) write(kind uint16, p []byte) {
	l, h := st.line(st.rank), (st.a+1)%2
	l.n[h] = kind | uint16(len(p))
	copy(l.data[h][:], p)
	st.ownN, st.ownKind = copy(st.own[:], p), kind
}

// reuse makes sure that every member is done reading the half this
// member is about to write for the next phase. After a phase with a
// barrier that is so (see the layout comment); after a one-way phase
// (bcastOneWay) it waits until every member has entered that phase,
// which each does only once it finished reading the one before.
func (st *state) reuse(op string) error {
	b := st.a + 1 // the phase about to be written
	if !st.oneWay || st.reused == b {
		return nil
	}
	entered := uint32((b-2)*st.stride) + 1
	for r := range st.size {
		if r != st.rank {
			// Any failure ends this wait: a live member that saw it may
			// have returned at the start of that phase, never entering.
			if err := st.await(op, r, entered, 0); err != nil {
				return err
			}
		}
	}
	st.reused = b
	return nil
}

// arrive runs the next arrive phase; afterwards every member's line of
// that phase can be read with read.
func (st *state) arrive(op string) error {
	st.a++
	a := st.a
	if st.size == 1 {
		return nil
	}
	if st.spin {
		st.oneWay = false
		return st.disseminate(op, a)
	}
	if st.hdr.arrive.Add(1) == a*uint64(st.size) {
		st.hdr.resN = resNone // no reduction's result: see arriveHold's callers
		st.hdr.done.Store(uint32(a))
		ext.Release(st.c, &st.hdr.done)
		return nil
	}
	return ext.Wait(st.c, op, &st.hdr.done, st.counterDone)
}

// arriveHold is arrive for members that sleep (the counter), where the
// member that completes the count does not release the others: it
// returns last, and must call releaseWith once it has left the phase's
// result in the header. The others return once it did. A reduction then
// reads every member's line once, at one member, rather than at each:
// the others find the result in the header line, which they were
// polling for done anyway.
func (st *state) arriveHold(op string) (last bool, err error) {
	st.a++
	a := st.a
	if st.hdr.arrive.Add(1) == a*uint64(st.size) {
		return true, nil
	}
	return false, ext.Wait(st.c, op, &st.hdr.done, st.counterDone)
}

// releaseWith ends the phase arriveHold began at its last member: p (at
// most inlineMax bytes) is its result, or bad >= 0 names the member whose
// contribution's size differed.
func (st *state) releaseWith(p []byte, bad int) {
	if bad >= 0 {
		st.hdr.resN, st.hdr.resBad = resBad, uint16(bad)
	} else {
		st.hdr.resN = uint16(copy(st.hdr.res[:], p))
	}
	st.hdr.done.Store(uint32(st.a))
	ext.Release(st.c, &st.hdr.done)
}

// result copies the result of the phase arriveHold completed into p,
// which must be as long.
func (st *state) result(op string, p []byte) error {
	n := int(st.hdr.resN)
	switch n {
	case resBad:
		return checkLen(op, int(st.hdr.resBad), -1, len(p))
	case resNone:
		return checkLen(op, -1, -1, len(p))
	}
	if err := checkLen(op, 0, n, len(p)); err != nil {
		return err
	}
	copy(p, st.hdr.res[:n])
	return nil
}

// firstSizeMismatch returns the first member whose data of the phase just
// completed differs in kind or size from member 0's, or -1.
func (st *state) firstSizeMismatch() int {
	n0, v0 := st.sig(0)
	for r := 1; r < st.size; r++ {
		if n, v := st.sig(r); n != n0 || v != v0 {
			return r
		}
	}
	return -1
}

// sig is member r's line content of the phase just completed, as far as
// sizes go: its kind and inline length, and the length it holds (staged,
// announced).
func (st *state) sig(r int) (n uint16, v uint64) {
	h := st.a % 2
	n = st.line(r).n[h]
	if r == st.rank {
		n = st.ownKind | uint16(st.ownN)
	}
	if n&^lineLenMask != lineInline {
		v = binary.LittleEndian.Uint64(st.readRaw(r))
	}
	return n, v
}

// disseminate is arrive phase a's dissemination barrier.
func (st *state) disseminate(op string, a uint64) error {
	me := st.line(st.rank)
	// A member that died after it completed this phase (its seq says so)
	// is needed no more: it had heard from every member, so each had
	// arrived, and the others can finish without it.
	end := uint32(a * st.stride)
	for k := range st.rounds {
		v := uint32((a-1)*st.stride) + uint32(k) + 1
		me.seq.Store(v)
		ext.Wake(st.c, (st.rank+1<<k)%st.size) // it may sleep on our seq (a load unless it does)
		if err := st.await(op, (st.rank-1<<k+st.size)%st.size, v, end); err != nil {
			return err
		}
	}
	if st.rounds > 1 {
		// With two members there is no one else to wait for once the
		// only round is done, and the store would take the line from
		// the partner while it reads our data.
		me.seq.Store(end)
	}
	return nil
}

// bcastOneWay is a broadcast of p (at most inlineMax bytes, or st.half
// staged in the root's scratch) from root when members spin: a phase
// without a barrier. The root writes its line (and its scratch half) and
// raises its seq to the phase's end; the others raise theirs to the
// phase's start (they have entered it), wait for the root's, copy, and
// raise theirs to the end. Only the root waits, and only before it next
// writes a half (reuse), so a loop of broadcasts costs about one line
// transfer each (and the data's lines), where a barrier costs one each
// way. Staged data follows the lines' phases: its halves are reused under
// the same rule.
func (st *state) bcastOneWay(op string, p []byte, root int) error {
	return st.oneWayPhase(op, p, root, len(p), 0, p)
}

// oneWayPhase is bcastOneWay's phase with a reader's part chosen: the root
// sends p (at most st.half bytes); every other member checks that it is
// want bytes long and copies its bytes from off into dst (Scatter takes
// its own block so).
func (st *state) oneWayPhase(op string, p []byte, root, want, off int, dst []byte) error {
	staged := want > inlineMax
	if st.rank == root {
		if err := st.oneWayWrite(op, p); err != nil {
			return err
		}
	}
	me, a, end := st.oneWayBegin()
	if st.rank == root {
		me.seq.Store(end)
		for r := range st.size {
			ext.Wake(st.c, r) // a reader may sleep on our seq
		}
		return nil
	}
	me.seq.Store(uint32((a-1)*st.stride) + 1)
	ext.Wake(st.c, root)                               // it may wait in reuse for our entry
	if err := st.await(op, root, end, 0); err != nil { // any failure ends it (see reuse)
		return err
	}
	var d []byte
	if staged {
		var err error
		if d, err = st.staged(op, root, want); err != nil {
			return err
		}
	} else {
		d = st.read(root)
		if err := checkLen(op, root, len(d), want); err != nil {
			return err
		}
	}
	copy(dst, d[off:])
	if st.rounds > 1 {
		// With two members there is no one else to wait for once the
		// only round is done, and the store would take the line from
		// the partner while it reads our data.
		me.seq.Store(end)
	}
	return nil
}

// oneWayWrite is a writer's part of a one-way phase before it begins:
// once the half may be reused, p (at most st.half bytes) goes into its
// line or its scratch half.
func (st *state) oneWayWrite(op string, p []byte) error {
	if err := st.reuse(op); err != nil {
		return err
	}
	if len(p) > inlineMax {
		st.stageWrite(p)
	} else {
		st.write(lineInline, p)
	}
	return nil
}

// oneWayBegin counts a one-way phase begun: this member's line, the
// phase, and the value of a seq word that has ended it.
func (st *state) oneWayBegin() (*line, uint64, uint32) {
	st.a++
	st.oneWay = true
	return st.line(st.rank), st.a, uint32(st.a * st.stride)
}

// gatherOneWay is the mirror of bcastOneWay, toward root, when members
// spin: every other member writes p (at most st.half bytes: its line,
// or its scratch half) and raises its seq to the phase's end; the root
// raises its own to the phase's start (it has entered it: the halves of
// the phase before are read), waits for each member's in rank order, and
// hands each member's data (want bytes, else ErrCount; its own is p) to
// take. Only the root waits in the phase; a member waits only before it
// next writes a half (reuse), for the root to have entered this phase.
// A member is done as soon as its data is written, as after an eager
// send, so a root's argument error does not reach it.
func (st *state) gatherOneWay(op string, p []byte, root, want int, take func(r int, d []byte)) error {
	if st.rank != root {
		if err := st.oneWayWrite(op, p); err != nil {
			return err
		}
	}
	me, a, end := st.oneWayBegin()
	if st.rank != root {
		me.seq.Store(end)
		ext.Wake(st.c, root) // it may sleep on our seq
		return nil
	}
	me.seq.Store(uint32((a-1)*st.stride) + 1)
	for r := range st.size {
		if r != root {
			ext.Wake(st.c, r) // it may wait in reuse for our entry
		}
	}
	for r := range st.size {
		d := p
		if r != root {
			if err := st.await(op, r, end, 0); err != nil { // any failure ends it (see reuse)
				return err
			}
			var err error
			if want > inlineMax {
				d, err = st.staged(op, r, want)
			} else {
				d = st.read(r)
				err = checkLen(op, r, len(d), want)
			}
			if err != nil {
				return err
			}
		}
		take(r, d)
	}
	if st.rounds > 1 {
		me.seq.Store(end) // as oneWayPhase's readers
	}
	return nil
}

// await waits until member r's seq reaches v: polls, then waits through
// ext.Wait, which ends with ErrProcFailed once any member has failed, or,
// if end is not 0, ext.WaitNeeding, which ends so only for a failed
// member whose seq has not reached end (the closures exist only on this
// slow path: the polling path allocates nothing).
//
// Only the dissemination barrier may pass end: there a member whose seq
// says it completed the phase had heard from every member, so no live
// member can have returned early at the start of the phase because of
// its failure. A one-way phase has no such guarantee.
func (st *state) await(op string, r int, v, end uint32) error {
	w := &st.line(r).seq
	if reached(w, v) || pollFor(w, v) {
		return nil
	}
	return st.awaitSlow(op, w, v, end)
}

// awaitSlow is await's wait once polling did not end it.
func (st *state) awaitSlow(op string, w *atomic.Uint32, v, end uint32) error {
	st.waitW, st.waitV, st.waitEnd = w, v, end
	if end == 0 {
		return ext.Wait(st.c, op, w, st.seqDone)
	}
	return ext.WaitNeeding(st.c, op, w, st.seqDone, st.seqNeeded)
}

// staging tells whether n bytes per member go through the scratch: at
// most half a member's part (st.half: 2 KiB, or 8 KiB in a job of at
// most 64 ranks that spin, internal/job.ScratchMemberFor).
func (st *state) staging(n int) bool { return st.stage != nil && n > inlineMax && n <= st.half }

// stageArrive stages p (at most st.half bytes) for the next arrive
// phase, publishes its length, and runs the phase.
func (st *state) stageArrive(op string, p []byte) error {
	if err := st.reuse(op); err != nil {
		return err
	}
	st.stageWrite(p)
	return st.arrive(op)
}

// stageWrite copies p (at most st.half bytes) into this member's scratch
// half for the next phase and publishes its length in its line; the
// caller has made sure the half may be reused (reuse).
func (st *state) stageWrite(p []byte) {
	h := (st.a + 1) % 2
	copy(unsafe.Slice((*byte)(unsafe.Add(st.stage, st.rank*st.per+int(h)*st.half)), st.half), p)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
	st.write(lineStaged, n[:])
}

// staged returns member r's staged data of the phase just completed,
// which must be want bytes long.
func (st *state) staged(op string, r, want int) ([]byte, error) {
	n := -1
	if k, v := st.sig(r); k == lineStaged|8 {
		n = int(v)
	}
	if err := checkLen(op, r, n, want); err != nil {
		return nil, err
	}
	h := st.a % 2
	return unsafe.Slice((*byte)(unsafe.Add(st.stage, r*st.per+int(h)*st.half)), want), nil
}

// leftBehind is ext.LeftBehind: the error of the current collective when
// a member finalized before it began it (it recorded how far it went in
// its line's fin word when it finalized, or when it released the
// communicator before), which it never will. Every collective needs every
// member, so it could never complete; failing at once, before this member
// arrives anywhere, also keeps the phase counts right for the others.
func (st *state) leftBehind(op string) error {
	for r := range st.size {
		if r == st.rank || ext.MemberState(st.c, r) != ext.Finalized {
			continue
		}
		if f := st.line(r).fin.Load(); f != 0 && int32(f-1-uint32(st.cur)) < 0 {
			return &ranks.Error{Class: ranks.ErrPeerFinalized, Op: op, Rank: r,
				Detail: "a member finalized before it took part in the collective"}
		}
	}
	return nil
}

// reached tells whether seq word w has reached v (modulo 2^32).
func reached(w *atomic.Uint32, v uint32) bool { return int32(w.Load()-v) >= 0 }

// pollFor polls w for spinPolls rounds, until it reaches v.
func pollFor(w *atomic.Uint32, v uint32) bool {
	for range spinPolls {
		spin.Pause()
		if reached(w, v) {
			return true
		}
	}
	return false
}

// read returns member r's inline data of the phase that arrive just
// completed. A line of another kind reads as notInline, longer than any
// inline data, so that its reader's size check fails.
//
// Our own data comes from the copy write kept, not from our line: the
// members polling our line may have taken it, and reading it back costs
// a transfer (ulfm's 2-member agreement paid one for the same read: 1.5
// against 1.0 barriers in the far placement).
func (st *state) read(r int) []byte {
	if r == st.rank {
		if st.ownKind != lineInline {
			return notInline[:]
		}
		return st.own[:st.ownN]
	}
	l, h := st.line(r), st.a%2
	if n := l.n[h]; n&^lineLenMask == lineInline {
		return l.data[h][:min(n, inlineMax)]
	}
	return notInline[:]
}

// readRaw is member r's line data of the phase just completed, whatever
// its kind.
func (st *state) readRaw(r int) []byte {
	if r == st.rank {
		return st.own[:st.ownN]
	}
	l, h := st.line(r), st.a%2
	return l.data[h][:min(l.n[h]&lineLenMask, inlineMax)]
}

var notInline [inlineMax + 1]byte

// argErr records that this member's arguments to the current collective
// are invalid, in the header, where the others find it once their part
// of the collective is done (verdict). The member still takes its part
// (without data: its peers must not wait for it), then returns err.
func (st *state) argErr(err error) error {
	code := uint64(len(faultClasses) - 1)
	for i, c := range faultClasses {
		if errors.Is(err, c) {
			code = uint64(i)
			break
		}
	}
	st.hdr.fault.Store(uint64(uint32(st.cur))<<32 | uint64(st.rank)<<8 | code)
	return err
}

// faultClasses are the classes argErr records (by index; ErrArg for any
// other).
var faultClasses = []error{nil, ranks.ErrBuffer, ranks.ErrCount, ranks.ErrRank, ranks.ErrType, ranks.ErrTruncate,
	ranks.ErrProcFailed, ranks.ErrRevoked, ranks.ErrPeerFinalized, ranks.ErrArg}

// verdict is the error of the current collective at a member whose own
// part went well: another member's arguments were invalid (argErr). A
// member that recorded such an error did so before its part that its
// peers wait for, so they see it; one whose part needed nothing from it
// (an eager send to a root) may finish before and return nil. The header
// line is read-shared in the common case, so this costs a cache hit.
func (st *state) verdict(op string) error {
	w := st.hdr.fault.Load()
	if uint32(w>>32) != uint32(st.cur) || w&0xff == 0 {
		return nil
	}
	return &ranks.Error{Class: faultClasses[w&0xff], Op: op, Rank: int(w >> 8 & 0xffffff),
		Detail: "a member's arguments to the collective were invalid, or its part failed"}
}
