// Package ext is the seam between package ranks and the packages built
// on it (coll, ulfm, win), which ranks must not import. It holds tables
// and nothing else: ranks calls through them, upper packages fill them
// in their init functions, the way package testing reaches package os
// through internal/testlog.
//
//   - Message kinds: an upper package registers a Handler for a kind in
//     [FirstKind, NumKinds); the progress engine dispatches every inbox
//     descriptor of such a kind to it. Kinds below FirstKind are ranks'
//     own (inline, chunk, rendezvous, fragment, ack).
//   - Communicator hooks: OnCreate, OnFree and OnRelease run, under the
//     rank's engine lock, for every communicator this rank creates, frees
//     (the user's call: no new operations) and releases (once operations
//     started before the free have ended: its resources go).
//   - Per-communicator local state: every communicator carries a Slots
//     array; each upper package owns one index (SlotColl, SlotULFM,
//     SlotWin) and keeps its state there.
//
// The argument named comm is always a *ranks.Comm; it is typed any here
// only because this package sits below ranks.
package ext

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/shm"
)

// Message kinds for upper packages.
const (
	FirstKind = 16
	NumKinds  = 64
)

// Handler handles an inbox descriptor of a registered kind from world
// rank src on communicator comm (nil if this rank has no communicator
// with the descriptor's context id). tag, flags and gen are the
// descriptor's fields; payload is its data, n bytes long, valid only
// during the call. It runs under the engine lock, inside progress: it
// must not block.
type Handler func(comm any, src, tag int, flags uint8, gen uint32, payload unsafe.Pointer, n int)

// Indices of the per-communicator slots.
const (
	SlotColl = iota
	SlotULFM
	SlotWin
	NumSlots
)

// Slots is the per-communicator local state of the upper packages.
type Slots [NumSlots]any

var (
	mu         sync.Mutex
	handlers   [NumKinds]Handler
	onCreate   []func(comm any)
	onFree     []func(comm any)
	onRelease  []func(comm any)
	onFinalize []func(comm any)
)

// Functions of package ranks, installed by its init.
var (
	// NewProxy claims rank slot slot of segment seg, a rank of another
	// node, for this process, a node agent (ranks/proxy.go); the proxy is
	// typed any here. ProxyTake receives the oldest message its inbox
	// holds, if any: wire context, source and tag as sent, its bytes (in a
	// buffer from alloc, or above lendAbove bytes the sender's own
	// AllocMem buffer, lent until release is called), and
	// for a synchronous message the acknowledgement of its match, to call
	// once the receiver matched it. ProxySend starts sending, as the
	// proxied rank, a message that came from its node (synchronously if
	// sync), and returns its *ranks.Request. ProxyFinalize marks the
	// proxied rank finalized here.
	NewProxy      func(seg *shm.Segment, slot int) (any, error)
	ProxyTake     func(p any, alloc func(n int) []byte, lendAbove int) (ctx uint32, src, tag int, data []byte, ack func(outcome uint8), release func(), ok bool, err error)
	ProxySend     func(p any, ctx uint32, dst, tag int, data []byte, sync bool) (any, error)
	ProxyFinalize func(p any)
	// ProxySendLate starts sending, as the proxied rank, n bytes that
	// are still on their way from its node: it returns the
	// *ranks.Request and a LateSend, or two nils when the message cannot
	// go late (ranks/proxy.go, "Late messages").
	ProxySendLate func(p any, ctx uint32, dst, tag, n int) (req, late any, err error)

	// Revoke revokes communicator comm at every member (the mechanism;
	// ulfm holds the policy).
	Revoke func(comm any) error
	// Revoked reports whether comm has been revoked, by any member (it
	// reads the context slot's revoke word, so another member's revoke is
	// seen at once).
	Revoked func(comm any) bool
	// CollOf returns comm's collective matching space, a *ranks.Comm with
	// the same group and a context id of its own.
	CollOf func(comm any) any
	// SlotsOf returns comm's per-communicator state of the upper packages.
	SlotsOf func(comm any) *Slots

	// Shared returns comm's collective lines in the segment (a header
	// line, then a line per member in rank order; 64 bytes each), zeroed
	// when the communicator was created.
	Shared func(comm any) unsafe.Pointer
	// Check returns the error a new collective on comm gets at once: it
	// is freed or revoked, or a member is known to have failed
	// (ErrProcFailed, at once and every time after). It is cheap when no
	// failure or revoke happened since the last call.
	Check func(comm any, op string) error
	// FailWith makes comm's collectives fail as parent's do: when any
	// member of parent fails (coll's node-local communicators of a
	// hierarchy, whose members must not wait for one that left a
	// collective of parent).
	FailWith func(comm, parent any)
	// AcrossNodes returns the error of op on comm if comm spans nodes
	// (a member's slot is a node agent's proxy), for the operations that
	// need the members' shared memory; nil otherwise.
	AcrossNodes func(comm any, op string) error
	// Wait runs comm's progress engine, spinning then sleeping as for a
	// receive, until done reports true; it returns Check's error instead
	// if one arises first. done runs under the engine lock and must not
	// block or call into ranks. word, if not nil, is the shared word whose
	// change makes done true: Wait polls it and sleeps on it, and its
	// writer calls Release.
	Wait func(comm any, op string, word *atomic.Uint32, done func() bool) error
	// WaitYielded is Wait for a caller that yielded the CPU yields times
	// already while it polled (C's fast collectives): they count against
	// the wait's yields before it sleeps.
	WaitYielded func(comm any, op string, word *atomic.Uint32, done func() bool, yields int) error
	// SleepAtOnce, with on true, makes the waits of the caller's rank
	// sleep without yielding the CPU first, until it is called again with
	// on false (the calls nest: goroutines of a rank may each mark their
	// wait): for a wait whose end must come from another node, where a
	// yield only delays the processes that carry it (coll's hier.held).
	SleepAtOnce func(comm any, on bool)
	// PullSends, with on true, makes the sends the caller's rank starts
	// go by rendezvous above a few KiB, where a chunk would carry them:
	// the receiver copies from the sender's buffer, once, instead of both
	// copying through the chunk (a root's fan-out in Bcast and Scatter
	// where members sleep). Calls nest, as SleepAtOnce's.
	PullSends func(comm any, on bool)
	// SleepersWord is the count of comm's members asleep in Wait, which
	// Release reads (job.Map.Sleepers).
	SleepersWord func(comm any) *atomic.Uint32
	// WaitNeeding is Wait where a failed member ends the wait only if
	// needed(r) says the waiter still depends on member r (needed runs
	// under the engine lock, as done does).
	WaitNeeding func(comm any, op string, word *atomic.Uint32, done func() bool, needed func(r int) bool) error
	// Release wakes the members of comm waiting (Wait) on word, which the
	// caller has just changed with an atomic store or read-modify-write
	// (a full fence, which the sleeper count relies on): one futex wake
	// when ranks outnumber cores (they sleep) and some member of comm
	// sleeps, doorbell rings otherwise (they spin, and a ring costs a load
	// unless one sleeps).
	Release func(comm any, word *atomic.Uint32)
	// Staging returns comm's collective scratch in the segment, per
	// member bytes each (page-aligned, written only by that member), or
	// nil if comm's context slot has none (the same answer at every
	// member).
	Staging func(comm any) (p unsafe.Pointer, per int)
	// Spinning tells whether comm's members wait by spinning (ranks do
	// not outnumber cores) rather than by sleeping at once. It is the same
	// at every rank of a job, so collectives may choose their algorithm
	// by it.
	Spinning func(comm any) bool
	// Wake rings the doorbell of comm's member r, which may sleep in Wait
	// on a word the caller has just changed: a load unless it sleeps.
	Wake func(comm any, r int)
	// NewRequest makes a request on comm (a *ranks.Request, typed any
	// here) that completes when complete is called, from any goroutine,
	// with the operation's error: how a nonblocking collective hands its
	// result to Wait and Test.
	NewRequest func(comm any, op string) (req any, complete func(error))
	// SetHelp gives a request of NewRequest or NewPersistent a function
	// that runs its operation on the goroutine that waits for it (Wait,
	// WaitAll), before it waits: a queued collective then runs at once,
	// with no hand-over to another goroutine.
	SetHelp func(req any, help func())
	// NewPersistent makes an inactive persistent request on comm (a
	// *ranks.Request) whose every Start calls start; start arranges for
	// complete to be called, from any goroutine, with that run's error:
	// how a persistent collective plugs into Start, Wait and Free.
	// onFree, if not nil, runs when the request is freed.
	NewPersistent func(comm any, op string, start func(complete func(error)), onFree func()) any
	// PersistentComm returns the communicator that one persistent
	// collective of comm runs on (a *ranks.Comm): a private duplicate,
	// made now, collectively, so that the runs of the persistent
	// collectives of comm match by the order of their Init calls, not of
	// their Starts; or comm itself when it asserts
	// mpi_assert_strict_persistent_collective_ordering (release is then
	// nil). release frees the duplicate.
	PersistentComm func(comm any, op string) (pc any, release func(), err error)
	// LeftBehind, installed by coll, returns the error of a collective
	// wait on comm that a finalized member will never join (it finalized
	// before it took part in the phase waited for), or nil. Wait calls it
	// only while some member of comm has finalized.
	LeftBehind func(comm any, op string) error
	// Inter tells whether comm is an intercommunicator and, if so, its
	// local intracommunicator (a *ranks.Comm) and the remote group's size.
	Inter func(comm any) (local any, remoteSize int, ok bool)
	// InterUnion returns the intracommunicator of both groups of
	// intercommunicator comm (the low group first), made at the first
	// call, which every member makes at the same collective: package
	// coll runs Barrier and small Allreduce on it. It is revoked with
	// comm and freed after it.
	InterUnion func(comm any) (any, error)
	// Concurrent tells comm's rank that calls into it are about to come
	// from a goroutine of an upper package too (a queued nonblocking
	// collective): a rank at ThreadSerialized or below, whose engine
	// takes no lock, takes one from then on. Called from the user's
	// goroutine, outside any call of ranks, before that goroutine starts.
	Concurrent func(comm any)
	// Serving marks comm's blocking AnySource receives of tag as a
	// server's (win's windows across nodes): a rank asleep in one waits
	// for others, not for its program, so the operation it is recorded
	// to sleep in (a deadline's report) stays its program's.
	Serving func(comm any, tag int)
	// NeedProgress registers kick with comm's rank: a queue of nonblocking
	// work that has jobs and no goroutine driving them. The rank calls
	// kick, outside its lock, when it is about to block in any wait and
	// when a Test (or Iprobe) finds nothing done; kick starts a goroutine
	// to drive the queue if it still needs one and reports true, or
	// reports false to be called again (the queue is being run by a
	// waiter, whose Wait helps, and may need a driver afterwards). So a
	// job runs on the goroutine that waits for it, and a goroutine (a
	// thread wake-up, which costs tens of µs when ranks outnumber cores)
	// is started only when the rank does something else meanwhile.
	NeedProgress func(comm any, kick func() bool)
	// Hold keeps comm's resources while an operation of an upper package
	// runs on it (a nonblocking collective): a Free meanwhile releases
	// them only after the matching Unhold. Neither blocks.
	Hold   func(comm any)
	Unhold func(comm any)
	// SleepTimeouts counts the sleeps of comm's rank (any communicator)
	// that ended by their timeout (100 ms) rather than by a wake, with
	// what they waited for already there: each is a wake-up that a poster
	// missed. For tests.
	SleepTimeouts func(comm any) uint64
)

// Member states (MemberState).
const (
	Alive = iota
	Failed
	Finalized
)

// Functions of package ranks for package ulfm, installed by ranks' init.
// Ranks of comm are its ranks; the failure log is the job's one order of
// failures (internal/job/log.go).
var (
	// AgreeArea returns comm's agreement records in the segment, zeroed
	// when the communicator was created.
	AgreeArea func(comm any) unsafe.Pointer
	// Block is Wait that neither a revoke nor a failure stops: only a
	// freed communicator or a finalized rank (the error). word, if not
	// nil, is watched as in Wait (its writer calls Release).
	Block func(comm any, op string, word *atomic.Uint32, done func() bool) error
	// MemberState is member r's state: Alive, Failed (a process the
	// kernel reported dead is declared failed here, if no one did) or
	// Finalized.
	MemberState func(comm any, r int) int
	// MemberLogIndex is member r's position in the failure log, or -1
	// while it is not there (a declaration under way).
	MemberLogIndex func(comm any, r int) int
	// Known is the failure-log prefix this rank knows, after refreshing;
	// Acked the prefix it acknowledged on comm; AckUpTo acknowledges a
	// longer prefix.
	Known   func(comm any) int
	Acked   func(comm any) int
	AckUpTo func(comm any, prefix int)
	// AckNext makes comm's next FailureAck acknowledge at least the
	// failure-log prefix given (after an Agree that raised the error).
	AckNext func(comm any, prefix int)
	// LogMember is the member of comm at failure-log position i, or -1
	// if that failure is not a member's.
	LogMember func(comm any, i int) int
	// Membership is comm's member count and this rank's position among
	// them: its group, or an intercommunicator's union (both groups, the
	// low one first); every member function here counts members so.
	Membership func(comm any) (n, me int)
	// Sides tells, for an intercommunicator, how many members come first
	// in the union (the low group) and whether this rank is among them.
	Sides func(comm any) (inter bool, lowSize int, meLow bool)
	// AdoptInter makes this rank's intercommunicator of the members of
	// intercommunicator comm (union positions, in order) in slot s of
	// generation gen, with its local intracommunicator in slot ls of
	// generation lgen (Shrink of an intercommunicator).
	AdoptInter func(comm any, s, gen, ls, lgen uint32, members []int) (any, error)
	// Alloc takes a context slot for a communicator of members (ranks
	// of comm, in order), marking each as holding it.
	Alloc func(comm any, members []int) (slot, gen uint32, ok bool)
	// Adopt makes this rank's communicator of members in slot s of
	// generation gen (allocated by Alloc at any member).
	Adopt func(comm any, s, gen uint32, members []int, name string) (any, error)

	// Agreement across nodes (ulfm's span.go) runs on messages that a
	// revoke does not stop. FTSend sends b to member dst of comm on
	// fault-tolerant tag ftTag (0..FTTags-1), revoked or not; FTRecv
	// receives into b from member src: it ends with the message, or with
	// ErrProcFailed once src is known to have failed. n is the size.
	FTSend func(comm any, b []byte, dst, ftTag int) error
	FTRecv func(comm any, b []byte, src, ftTag int) (n int, err error)
	// FTNodeSlot gives this rank a context slot of its node shared with
	// the node's other live members of comm, exchanged on ftTag (Shrink
	// across nodes), and names the node. Gen 0: none was free. The rank
	// holds the slot until FTAdopt or FTRelease.
	FTNodeSlot func(comm any, ftTag int) (slot, gen, node uint32, err error)
	// FTAdopt makes the communicator of members (ranks of comm, in order)
	// in this rank's node slot, with table the slot and generation of
	// each member's node (two words a member).
	FTAdopt func(comm any, members []int, slot, gen uint32, table []uint32) (any, error)
	// FTRelease gives up this rank's hold on a slot of FTNodeSlot.
	FTRelease func(comm any, slot uint32)
)

// AgreeByMessages, set only by tests, makes ulfm's Agree and Shrink run
// the agreement by messages that communicators spanning nodes use, on
// one node, so that tests can kill members at its points.
var AgreeByMessages bool

// FTTags is the number of fault-tolerant tags (FTSend).
const FTTags = 1 << 24

// Register installs h for message kind k. It panics on a kind out of
// range or already taken: a programming error found at init.
func Register(k uint8, h Handler) {
	mu.Lock()
	defer mu.Unlock()
	if k < FirstKind || k >= NumKinds || handlers[k] != nil {
		panic("ext: message kind unavailable")
	}
	handlers[k] = h
}

// HandlerOf returns the handler of kind k, or nil.
func HandlerOf(k uint8) Handler {
	if k >= NumKinds {
		return nil
	}
	return handlers[k]
}

// OnCreate adds a hook that runs for every new communicator.
func OnCreate(f func(comm any)) {
	mu.Lock()
	defer mu.Unlock()
	onCreate = append(onCreate, f)
}

// OnFree adds a hook that runs for every freed communicator.
func OnFree(f func(comm any)) {
	mu.Lock()
	defer mu.Unlock()
	onFree = append(onFree, f)
}

// OnRelease adds a hook that runs when a freed communicator's resources
// are given back.
func OnRelease(f func(comm any)) {
	mu.Lock()
	defer mu.Unlock()
	onRelease = append(onRelease, f)
}

// Created runs the creation hooks; called by ranks.
func Created(comm any) {
	for _, f := range onCreate {
		f(comm)
	}
}

// Freed runs the free hooks; called by ranks.
func Freed(comm any) {
	for _, f := range onFree {
		f(comm)
	}
}

// OnFinalize adds a hook that runs, under the engine lock, for each of
// this rank's communicators when it finalizes, before the job sees it
// finalized.
func OnFinalize(f func(comm any)) {
	mu.Lock()
	defer mu.Unlock()
	onFinalize = append(onFinalize, f)
}

// Finalizing runs the finalize hooks; called by ranks.
func Finalizing(comm any) {
	for _, f := range onFinalize {
		f(comm)
	}
}

// Released runs the release hooks; called by ranks.
func Released(comm any) {
	for _, f := range onRelease {
		f(comm)
	}
}

// StageHook, set only by tests of other packages (node's), runs where
// package ranks names a stage of a matched receive ("matched",
// "copying"), under the engine lock: what it may call must not take it
// (MemberState does not).
var StageHook func(stage string)

// IORoundHook, set only by tests (mpio's, node's), runs at every member
// of a collective file access in every round of it, after the member's
// part in the round (mpio's collective.go).
var IORoundHook func(op string, round int)

// LateSend's Target states (ranks/proxy.go, "Late messages").
const (
	LateWait   = 0 // the receiver has not matched yet
	LateDirect = 1 // receive the bytes into the receiver's buffer given
	LateBuffer = 2 // receive them into a buffer of the agent's, and Filled it
	LateDone   = 3 // the send completed without them: receive and drop them
)
