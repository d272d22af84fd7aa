package win

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/shm"
)

// The window's memory (one memfd for all members):
//
//	header line (64 bytes)
//	  +0   revoked  uint32  1 once any member revoked the window
//	control line of member t (64 bytes, at 64 + t*64)
//	  +0   lock     uint64  bit 63 poisoned, bit 62 held exclusively,
//	                        bits 0-23 the exclusive holder's rank + 1
//	  +8   wake     uint32  bumped at every unlock and complete: lock and
//	                        PSCW waiters sleep on it
//	  +12  post     uint32  the sequence lock of the target's exposure
//	                        group: twice the exposure epochs it posted,
//	                        odd while Post rewrites the group
//	  +16  complete uint32  access epochs completed towards this target
//	  +20  waiters  uint32  waits about to sleep or asleep on wake: only
//	                        then does a change make a wake call
//	  +24  acc      uint32  the lock of accumulates to this target that
//	                        are not one compare-and-swap (every one in a
//	                        window over user memory; elements of other
//	                        sizes than 1, 2, 4, 8 in shared memory):
//	                        holder's rank + 1, bit 31 poisoned
//	shared holders of target t (at 64 + size*64 + t*bitmapBytes, where
//	  bitmapBytes is 8 per 64 members): a bit per member holding t's
//	  lock shared
//	exposure group of target t (at 64 + size*64 + (size+t)*bitmapBytes):
//	  a bit per origin of t's last Post
//	region table of member t (windows over user memory: 64 bytes at
//	  regions + t*64, regionTable in create.go)
//	data: member r's part starts at base + off[r]. Parts are contiguous,
//	  as MPI_Win_allocate_shared makes them by default: off[r+1] =
//	  off[r] + n[r], from a page-aligned base. With NonContiguous
//	  (alloc_shared_noncontig) each part starts on a page of its own.
//
// The header and control area are rounded up to a page.
type header struct {
	revoked atomic.Uint32
	_       [60]byte
}

type control struct {
	lock     atomic.Uint64
	wake     atomic.Uint32
	post     atomic.Uint32
	complete atomic.Uint32
	waiters  atomic.Uint32
	acc      atomic.Uint32
	_        [36]byte
}

const (
	lockPoisoned  = 1 << 63
	lockExclusive = 1 << 62
	lockOwnerMask = 1<<24 - 1
)

func init() {
	if unsafe.Sizeof(header{}) != 64 || unsafe.Sizeof(control{}) != 64 || unsafe.Offsetof(control{}.complete) != 16 {
		panic("win: window layout drifted from its documentation")
	}
}

// Lock types.
const (
	LockExclusive = iota + 1
	LockShared
)

// Asserts (MPI_MODE_*): an assert is a bit-or of these, given to Fence,
// Lock, LockAll, Post and Start to say that the program's
// synchronization is simpler than the general case; 0 is always correct.
// A wrong assert is the program's error, as in MPI: it is not detected,
// and may give wrong data or let a conflicting access in. Other bits are
// refused (ErrArg); a defined bit that a call does not use (ModeNoPut on
// Lock) is ignored. What they save here:
//
//   - Fence(ModeNoPrecede|ModeNoSucceed), which every member must assert
//     alike: no RMA precedes or follows it, and it is no barrier (MPI: a
//     fence that ends no epoch need not be one). Every other fence is a
//     barrier, because this rank's loads and stores before it must be
//     ordered with the other members' RMA after it.
//   - Fence(ModeNoSucceed) ends the access epoch (RMA calls return
//     ErrRMASync until the next Fence without it).
//   - Lock(lockType, t, ModeNoCheck), LockAll(ModeNoCheck): the lock is
//     not taken (nothing is written to the target's lock word or holder
//     bits, and nothing waits): the program excludes conflicting locks by
//     other means. Unlock and UnlockAll then release nothing.
//   - Start(group, ModeNoCheck): the targets have posted already, so
//     Start does not look for their posts.
//   - ModeNoStore and ModeNoPut (Fence, Post), and ModeNoCheck on Post:
//     nothing to save; in unified shared memory a store needs no flush,
//     and a Post is a counter increment that never waits.
const (
	ModeNoStore = 1 << iota
	ModeNoPut
	ModeNoPrecede
	ModeNoSucceed
	ModeNoCheck

	modeMask = ModeNoStore | ModeNoPut | ModeNoPrecede | ModeNoSucceed | ModeNoCheck
)

// modes is an assert argument: the bit-or of its values, checked.
func (w *Win) modes(op string, assert []int) (int, error) {
	a := 0
	for _, x := range assert {
		a |= x
	}
	return a, w.checkAssert(op, a)
}

func (w *Win) checkAssert(op string, a int) error {
	if a&^modeMask != 0 {
		return w.errf(ranks.ErrArg, op, -1, "assert %#x: bits %#x are not Mode constants", a, a&^modeMask)
	}
	return nil
}

// Win is a window: this rank's handle on the memory of every member.
//
// Any goroutines of a rank may use a window at once (ThreadMultiple). The
// handle's fixed fields are set before it is returned; the epoch state
// below is in atomics, each changed only by the one call that claimed it
// (epoch.go); an operation's scratch memory comes from a per-P pool, not
// from the window (rma.go), and so does a blocked wait's state (sync.go).
type Win struct {
	c        *ranks.Comm // a private duplicate: its failures and revoke are the window's
	size     int
	rank     int
	dispUnit []int
	byteDisp bool  // displacements in bytes (ByteDisplacements)
	off      []int // byte offset of each member's part in mem
	length   []int // bytes of each member's part
	mem      *shm.Mem
	parts    [][]byte   // each member's part, loadable and storable here (unless remote)
	peerMem  []*shm.Mem // mappings of peers' AllocMem memory (Create over it)
	hdr      *header
	ctl      unsafe.Pointer
	holders  unsafe.Pointer
	groups   unsafe.Pointer // exposure groups
	words    int            // uint64 words of a holders or group bitmap

	// Windows over user memory (create.go): the parts live in each
	// member's own memory and peers reach them with process_vm_readv/writev.
	remote   bool
	dynamic  bool
	regions  unsafe.Pointer               // region tables
	own      []byte                       // Create's memory at this rank
	lists    []atomic.Pointer[regionList] // dynamic: member t's regions, as last read here (this rank's own: its list)
	attachMu sync.Mutex                   // Attach, Detach and Free's changes of lists[rank] and pins
	pins     map[uintptr]*runtime.Pinner

	// This rank's epochs (epoch.go).
	freed    atomic.Bool
	fenced   atomic.Bool    // a Fence without ModeNoSucceed opened an access epoch to every target
	locked   []atomic.Int32 // per target: 0, LockExclusive, LockShared, heldByLockAll or lockBusy
	lockAll  atomic.Int32   // epochNone, epochBusy, epochOpen
	access   atomic.Int32   // Start/Complete: epochNone, epochBusy, epochOpen
	exposing atomic.Int32   // Post/Wait: epochNone, epochBusy, epochOpen
	inAccess []atomic.Bool  // per target: in the group of the open Start

	// Owned by the call that claimed access (Start, Complete) or exposing
	// (Post, Wait, Test).
	started   []uint32 // per target: the last of its exposure epochs our Starts consumed
	accessTo  []int    // targets of the current access epoch (Start)
	exposure  []int    // origins of the current exposure epoch (Post)
	expected  uint32   // completes that end our exposure epochs so far
	seenStart []bool   // checkGroup's scratch for Start
	seenPost  []bool   // and for Post

	// Hints (info.go), attributes and name (attr.go).
	flavor    Flavor
	noncontig bool                   // the parts are on pages of their own
	hints     atomic.Pointer[hints]  // replaced whole by SetInfo
	infoMu    sync.Mutex             // SetInfo's read-modify-write of hints
	name      atomic.Pointer[string] // SetName's

	raceAcc atomic.Uint32 // race.go

	net *netWin // a window across nodes (span.go), or nil
}

// AllocateShared creates a window of n bytes at this rank, each rank's
// part directly loadable and storable by every member (SharedQuery). It
// is collective over c; n and dispUnit may differ between members. The
// parts are contiguous in rank order (member r+1's starts right after
// member r's) unless every member passes NonContiguous. opts are hints
// (info.go): an Info, or Flags.
func AllocateShared(c *ranks.Comm, n, dispUnit int, opts ...Option) (*Win, error) {
	return allocate(c, "Win.AllocateShared", FlavorShared, n, dispUnit, opts)
}

// Allocate is AllocateShared (with Flavor FlavorAllocate): every window
// here lives in shared memory, laid out the same way.
func Allocate(c *ranks.Comm, n, dispUnit int, opts ...Option) (*Win, error) {
	return allocate(c, "Win.Allocate", FlavorAllocate, n, dispUnit, opts)
}

func allocate(c *ranks.Comm, op string, flavor Flavor, n, dispUnit int, opts []Option) (*Win, error) {
	if c == nil {
		return nil, &ranks.Error{Class: ranks.ErrComm, Op: op, Rank: -1, Detail: "nil communicator"}
	}
	if n < 0 || dispUnit <= 0 {
		return nil, &ranks.Error{Class: ranks.ErrArg, Op: op, Rank: -1, Detail: fmt.Sprintf("size %d, displacement unit %d", n, dispUnit)}
	}
	h, err := parseOptions(op, opts)
	if err != nil {
		return nil, err
	}
	if err := ext.AcrossNodes(c, op); err != nil {
		if flavor == FlavorShared {
			return nil, err // members on other nodes cannot map this one's memory
		}
		return newNet(c, op, make([]byte, n), dispUnit, false, h, flavor)
	}
	d, err := c.Dup()
	if err != nil {
		return nil, err
	}
	w, err := build(d, op, n, dispUnit, false, h, h.sameSize && h.sameDispUnit)
	if err != nil {
		d.Free()
		return nil, err
	}
	w.flavor = flavor
	return w, nil
}

// Creation flags that build agrees on among the members (a bit-and).
const (
	agreeMapped    = 1 << iota // the member mapped the window's memory
	agreeUniform               // its size and unit are member 0's (uniform windows)
	agreeNoncontig             // it asked for alloc_shared_noncontig
)

// build makes the window's memory: the control area, then the parts (of
// n bytes here), or, over user memory (remote), the control area and the
// region tables only. The members gather their sizes and units, unless
// uniform says (from the hints) that every member's are the same: then
// each takes member 0's, which member 0 sends with the memory's
// descriptor, and a member whose own differ makes the creation fail at
// every member.
func build(c *ranks.Comm, op string, n, dispUnit int, remote bool, h *hints, uniform bool) (*Win, error) {
	size, me := c.Size(), c.Rank()
	w := &Win{c: c, size: size, rank: me, dispUnit: make([]int, size), off: make([]int, size), length: make([]int, size),
		locked: make([]atomic.Int32, size), inAccess: make([]atomic.Bool, size), started: make([]uint32, size),
		seenStart: make([]bool, size), seenPost: make([]bool, size)}
	w.hints.Store(h)
	w.byteDisp = h.byteDisp
	w.words = (size + 63) / 64
	ctlBytes := 64 + size*64 + 2*size*w.words*8
	regions0 := ctlBytes
	if remote {
		w.remote = true
		ctlBytes += size * regionTableBytes
	}
	asked := 0
	if h.noncontig && !remote {
		asked = 1
	}
	// The parts are non-contiguous only if every member asked (the layout
	// must be the same at every member).
	noncontig := asked == 1
	if !uniform {
		sizes := make([]int64, 3*size)
		if err := coll.Allgather(c, []int64{int64(n), int64(dispUnit), int64(asked)}, sizes); err != nil {
			return nil, err
		}
		for r := range size {
			w.length[r], w.dispUnit[r] = int(sizes[3*r]), int(sizes[3*r+1])
			noncontig = noncontig && sizes[3*r+2] == 1
		}
	} else {
		for r := range size {
			w.length[r], w.dispUnit[r] = n, dispUnit
		}
		// Not known yet: sized for member 0's wish, decided below.
	}
	total := w.layout(ctlBytes, noncontig)

	// Member 0 creates the memory and tells the others its descriptor,
	// the memory's size and its own size and unit; they open it through
	// /proc while member 0 keeps it open (until the agreement below).
	var from0 [4]int64 // descriptor, total, n, dispUnit
	var created *shm.Mem
	if me == 0 {
		from0 = [4]int64{-1, int64(total), int64(n), int64(dispUnit)}
		if m, err := shm.NewMem(total); err == nil {
			created = m
			from0[0] = int64(m.FD())
		}
	}
	if err := coll.Bcast(c, from0[:], 0); err != nil {
		if created != nil {
			created.Close()
		}
		return nil, err
	}
	if from0[0] < 0 {
		return nil, &ranks.Error{Class: ranks.ErrOther, Op: op, Rank: 0, Detail: "member 0 could not create the window's memory"}
	}
	total = int(from0[1])
	var m *shm.Mem
	var merr error
	if me == 0 {
		m = created
	} else {
		m, merr = shm.OpenMem(ext.Pid(c, 0), int(from0[0]), total)
	}
	mine := agreeMapped | agreeUniform | asked*agreeNoncontig
	if merr != nil {
		mine &^= agreeMapped
	}
	if uniform && (int64(n) != from0[2] || int64(dispUnit) != from0[3]) {
		mine &^= agreeUniform
	}
	agreed, err := coll.AllreduceValue(c, mine, coll.Band[int])
	if err == nil && agreed&agreeMapped == 0 {
		err = &ranks.Error{Class: ranks.ErrOther, Op: op, Rank: -1, Detail: "a member could not map the window's memory"}
		if merr != nil {
			err = fmt.Errorf("%w: %v", err, merr)
		}
	}
	if err == nil && agreed&agreeUniform == 0 {
		err = &ranks.Error{Class: ranks.ErrArg, Op: op, Rank: -1, Detail: fmt.Sprintf(
			"same_size or same_disp_unit was given, but members passed different sizes or units (member 0: %d bytes, unit %d; this member: %d, %d)",
			from0[2], from0[3], n, dispUnit)}
	}
	if err != nil {
		if m != nil {
			m.Close()
		}
		return nil, err
	}
	m.CloseFD() // every member has mapped it: the mappings keep it alive
	if all := agreed&agreeNoncontig != 0; uniform && all != noncontig {
		// Member 0 asked and another did not: contiguous after all (it
		// fits in the memory sized for non-contiguous parts).
		noncontig = false
		w.layout(ctlBytes, false)
	}
	w.noncontig = noncontig
	w.mem = m
	if !remote {
		w.parts = make([][]byte, size)
		for r := range size {
			w.parts[r] = m.B[w.off[r] : w.off[r]+w.length[r] : w.off[r]+w.length[r]]
		}
	}
	base := unsafe.Pointer(unsafe.SliceData(m.B))
	w.hdr = (*header)(base)
	w.ctl = unsafe.Add(base, 64)
	w.holders = unsafe.Add(base, 64+size*64)
	w.groups = unsafe.Add(w.holders, size*w.words*8)
	if remote {
		w.regions = unsafe.Add(base, regions0)
		w.lists = make([]atomic.Pointer[regionList], size)
		w.table(me).pid.Store(uint32(ext.Pid(c, me)))
	}
	return w, nil
}

// layout places the parts (w.length) after a control area of ctlBytes:
// it sets w.off and returns the memory's size.
func (w *Win) layout(ctlBytes int, noncontig bool) int {
	at := (ctlBytes + shm.PageSize - 1) &^ (shm.PageSize - 1)
	for r := range w.size {
		w.off[r] = at
		at += w.length[r]
		if noncontig {
			at = (at + shm.PageSize - 1) &^ (shm.PageSize - 1)
		}
	}
	return (at + shm.PageSize - 1) &^ (shm.PageSize - 1)
}

// Size is the number of members; Rank this rank's.
func (w *Win) Size() int { return w.size }

// Rank is this rank's rank in the window's group.
func (w *Win) Rank() int { return w.rank }

// SharedQuery returns member r's part of the window, which this rank may
// load and store directly, and its displacement unit. SharedQuery of
// ranks.ProcNull returns the part of the lowest member whose part is not
// empty (MPI 4.0), or an empty part if all are.
func (w *Win) SharedQuery(r int) ([]byte, int, error) {
	if err := w.usable("Win.SharedQuery"); err != nil {
		return nil, 0, err
	}
	if (r < 0 || r >= w.size) && r != ranks.ProcNull {
		return nil, 0, w.errf(ranks.ErrRank, "Win.SharedQuery", -1, "rank %d of %d", r, w.size)
	}
	if w.net != nil {
		return nil, 0, w.errf(ranks.ErrWin, "Win.SharedQuery", r, "the window spans nodes: members on other nodes share no memory with this one (use Get and Put)")
	}
	if w.remote {
		return nil, 0, w.errf(ranks.ErrWin, "Win.SharedQuery", r, "a window over memory not from ranks.AllocMem (at some member) is not shared memory: use Get and Put")
	}
	if r == ranks.ProcNull {
		return w.sharedQueryNull()
	}
	return w.part(r), w.dispUnit[r], nil
}

// View returns member r's part of w as a []T (its length rounded down).
func View[T any](w *Win, r int) ([]T, error) {
	b, _, err := w.SharedQuery(r)
	if err != nil {
		return nil, err
	}
	var z T
	sz := int(unsafe.Sizeof(z))
	if sz == 0 || len(b) < sz {
		return nil, nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/sz), nil
}

func (w *Win) part(r int) []byte { return w.parts[r] }

func (w *Win) control(t int) *control { return (*control)(unsafe.Add(w.ctl, t*64)) }

func (w *Win) holderWords(t int) []atomic.Uint64 {
	return unsafe.Slice((*atomic.Uint64)(unsafe.Add(w.holders, t*w.words*8)), w.words)
}

func (w *Win) groupWords(t int) []atomic.Uint64 {
	return unsafe.Slice((*atomic.Uint64)(unsafe.Add(w.groups, t*w.words*8)), w.words)
}

// Comm returns the window's communicator (a duplicate of the one it was
// created over).
func (w *Win) Comm() *ranks.Comm { return w.c }

// FreeReady returns the ErrRMASync that Free would return now, without
// freeing anything: this rank holds a lock or has a Start or Post epoch
// open (a revoked window frees anyway). A binding that runs attribute
// callbacks before Free asks it first.
func (w *Win) FreeReady() error {
	if w == nil || w.freed.Load() {
		return nil
	}
	if what := w.openEpoch(); what != "" && !w.isRevoked() {
		return w.syncErr("Win.Free", -1, what+" is open at this rank: end it first")
	}
	return nil
}

// Free frees the window. It is collective, but completes even when
// members have failed or the window was revoked: it then returns the
// error and still releases this rank's resources. While this rank holds
// a lock or has a Start or Post epoch open, Free returns ErrRMASync and
// frees nothing (MPI: those epochs must end first).
func (w *Win) Free() error {
	if w == nil || w.freed.Load() {
		return &ranks.Error{Class: ranks.ErrWin, Op: "Win.Free", Rank: -1, Detail: "window already freed"}
	}
	if err := w.FreeReady(); err != nil {
		return err
	}
	var err error
	if !w.isRevoked() {
		// No member may leave while another still accesses its part.
		err = coll.Barrier(w.c)
	}
	w.freed.Store(true)
	if w.net != nil {
		if err != nil && !w.isRevoked() {
			// A member may still wait for this rank's server, which
			// goes: its wait ends with ErrRevoked rather than never.
			ext.Revoke(w.c)
		}
		w.netStop()
	}
	w.attachMu.Lock()
	for _, p := range w.pins {
		p.Unpin()
	}
	w.pins = nil
	w.attachMu.Unlock()
	if w.mem != nil {
		w.mem.Close()
		w.mem = nil
	}
	for _, m := range w.peerMem {
		m.Close()
	}
	w.peerMem, w.parts = nil, nil
	if ferr := w.c.Free(); err == nil {
		err = ferr
	}
	return err
}

// Revoke revokes the window at every member (MPIX_Win_revoke): from then
// on every RMA call and synchronization on it, at every member, returns
// ErrRevoked. It is not collective, and idempotent.
func (w *Win) Revoke() error {
	if err := w.usable("Win.Revoke"); err != nil && !errors.Is(err, ranks.ErrRevoked) {
		return err
	}
	w.hdr.revoked.Store(1)
	// Revoking the window's communicator bumps the failure epoch, which
	// wakes every member asleep in a wait on the window.
	return ext.Revoke(w.c)
}

// GetFailed returns the ranks of the window's group known to have failed
// (MPIX_Win_get_failed).
func (w *Win) GetFailed() ([]int, error) {
	if w == nil || w.freed.Load() {
		return nil, &ranks.Error{Class: ranks.ErrWin, Op: "Win.GetFailed", Rank: -1, Detail: "window freed"}
	}
	return w.c.GetFailed()
}

func (w *Win) isRevoked() bool {
	return w.hdr.revoked.Load() != 0 || w.net != nil && w.netIsRevoked()
}

// usable is the check at the start of every call.
func (w *Win) usable(op string) error {
	if w == nil {
		return &ranks.Error{Class: ranks.ErrWin, Op: op, Rank: -1, Detail: "nil window"}
	}
	if w.freed.Load() {
		return &ranks.Error{Class: ranks.ErrWin, Op: op, Rank: -1, Detail: "window freed"}
	}
	if w.isRevoked() {
		return &ranks.Error{Class: ranks.ErrRevoked, Op: op, Rank: -1, Detail: "the window was revoked"}
	}
	return nil
}

// target checks a target rank: in range and not failed.
func (w *Win) target(op string, t int) error {
	if err := w.usable(op); err != nil {
		return err
	}
	if t < 0 || t >= w.size {
		return w.errf(ranks.ErrRank, op, -1, "target %d of %d", t, w.size)
	}
	return w.alive(op, t)
}

// rmaTarget checks the target of an RMA operation: target's checks, and
// an access epoch to it open at this rank.
func (w *Win) rmaTarget(op string, t int) error {
	if err := w.usable(op); err != nil {
		return err
	}
	if t < 0 || t >= w.size {
		return w.errf(ranks.ErrRank, op, -1, "target %d of %d", t, w.size)
	}
	if !w.inEpoch(t) {
		return w.errf(ranks.ErrRMASync, op, t, "no access epoch to the target is open (Fence, Start, Lock or LockAll first)")
	}
	return w.alive(op, t)
}

func (w *Win) alive(op string, t int) error {
	if w.suspect(op) && ext.MemberState(w.c, t) == ext.Failed {
		return w.errf(ranks.ErrProcFailed, op, t, "the target has failed")
	}
	return nil
}

// suspect reports whether some member may have failed: ext.Check costs a
// compare while nothing failed, finalized or was revoked since its last
// call, and only then are members' states worth reading.
func (w *Win) suspect(op string) bool { return ext.Check(w.c, op) != nil }

func (w *Win) errf(class error, op string, r int, format string, a ...any) error {
	return &ranks.Error{Class: class, Op: op, Rank: r, Detail: fmt.Sprintf(format, a...)}
}

// span returns the bytes of target t from displacement disp, n bytes.
func (w *Win) span(op string, t, disp, n int) ([]byte, error) {
	if err := w.rmaTarget(op, t); err != nil {
		return nil, err
	}
	if disp < 0 {
		return nil, w.errf(ranks.ErrArg, op, t, "negative displacement %d", disp)
	}
	at := disp * w.unit(t)
	if at > w.length[t] || n > w.length[t]-at {
		return nil, w.errf(ranks.ErrArg, op, t, "%d bytes at byte %d: past the end of the target's %d bytes", n, at, w.length[t])
	}
	return w.part(t)[at : at+n], nil
}
