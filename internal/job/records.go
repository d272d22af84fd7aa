package job

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/shm"
)

// Global is the job's global record (256 bytes, at areaGlobal):
//
//	+0   epoch    uint64  bumped by every failure, finalize and revoke;
//	                      every wait loop compares it with the value it
//	                      last saw
//	+64  starving uint32  ranks asleep with sends that wait for room in an
//	                      inbox or for a chunk; receivers that free room
//	                      read it (normally zero) and wake them
//	+128 logLen   uint32  entries of the failure log (log.go) filled so far
//	+192 abort    uint64  a call of Comm.Abort (abort.go): the low half is
//	                      1 + the caller's world rank (0: none;
//	                      AbortClosed: the launcher no longer watches),
//	                      the high half the code; the launcher sleeps on
//	                      the low half
//	(the rest pads the lines, read by all and written rarely)
type Global struct {
	epoch    atomic.Uint64
	_        [56]byte
	starving atomic.Uint32
	_        [60]byte
	logLen   atomic.Uint32
	_        [60]byte
	abort    atomic.Uint64
	_        [56]byte
}

const globalStride = 256

// CtlBlock is a rank's control block (512 bytes, 8 cache lines, at
// areaCtl + rank*512). x86's adjacent-line prefetcher moves lines in
// 128-byte pairs, so a line that others read on every message (the
// doorbell) and a line its owner writes on every message (the
// announcement) must not share a pair: the reader would drag the
// writer's line away each time.
//
//	lines 0-1: the rank's fate and liveness; read by others only when the
//	        failure epoch changes
//	  +0   State    uint32  StUnstarted / StAlive / StFinalized / StFailed
//	  +4   Pid      uint32  set by the rank when it enters Init
//	  +8   Cause    uint32  how a failure was detected (Cause*)
//	  +12  ExitCode int32   set by the launcher when it reaps the process, else -1
//	  +16  Signal   int32   signal that killed it, 0 if none
//	  +20  Detector int32   rank that declared the failure, -1 for the launcher
//	  +24  FailedAt int64   wall-clock ns of the declaration
//	  +32  Reaped   uint32  1 once the launcher has recorded the exit status
//	  +36  Starving uint32  1 while the rank sleeps with sends waiting for room
//	  +40  LogClaim uint32  2 + the world rank declaring this rank's failure
//	                        (1: the launcher); 0 until someone does (log.go)
//	  +44  LogIndex uint32  1 + this rank's entry in the failure log, 0 until
//	                        it is there
//	  +48  ProxyQueued uint32  how many of the node agent's proxies hold
//	                        messages for this rank that found its inbox full
//	                        (ranks/proxy.go); the rank judges a failed remote
//	                        sender's receives only at 0
//	  +52  HomeCPU  uint32  1 + the one CPU the rank's process is bound to
//	                        (shmrun's binding), 0 if it may run on several;
//	                        set by the rank in Init (evacuate.go)
//	  +56  Evacuated uint32 1 + the world rank whose teardown moved this
//	                        rank's threads off its home CPU, 0 at home
//	  +64  Liveness shm.LivenessEntry (16 bytes): next uint64, word uint32 =
//	                TID | FUTEX_WAITERS, | FUTEX_OWNER_DIED at death
//	  +80  WaitTID  uint32  the thread last seen waiting in a yield or a sleep
//	                        (noted by the rank; evacuate.go moves it)
//	  +84  EvacTID  uint32  the thread besides the main one that an
//	                        evacuation moved, for the launcher to move back
//	lines 2-3: the doorbell, read by every sender after every message
//	  +128 Doorbell uint32
//	  +192 what the rank is blocked in, for deadline reports; only the rank
//	       writes it, and only when a wait goes to sleep (RecordOp):
//	       Op uint32 (Op, bit 31 while blocked, bit 30 while being
//	       written), OpPeer int32, OpTag int32, OpCtx uint32, OpSince
//	       int64 (wall-clock ns), OpCount uint64 (+216: waits recorded),
//	       OpName [24]byte (+224: for OpColl, the operation's name, such
//	       as "Barrier" or "Win.Lock", NUL-padded; stored as 3 words)
//	lines 4-5: the announcement, written by the rank on every send
//	  +256 Announce uint64  the inbox position this rank is claiming (see
//	                        package ring); read by a consumer only when a
//	                        claimed slot stays unpublished
//	lines 6-7: direct liveness words, read only by sleepers
//	  +384 Direct   [8]shm.LivenessEntry (16 bytes each), armed like
//	                Liveness and ahead of it in the rank's robust list.
//	                Rank j, asleep waiting for this rank, sleeps on
//	                Direct[j%8] as well as on its doorbell. The kernel wakes
//	                one waiter per word, and the watchers wait on Liveness,
//	                so j is woken by the death itself rather than by a
//	                watcher that must wake first and then ring j's doorbell.
type CtlBlock struct {
	State       atomic.Uint32
	Pid         atomic.Uint32
	Cause       atomic.Uint32
	ExitCode    atomic.Uint32
	Signal      atomic.Uint32
	Detector    atomic.Uint32
	FailedAt    atomic.Uint64
	Reaped      atomic.Uint32
	Starving    atomic.Uint32
	LogClaim    atomic.Uint32
	LogIndex    atomic.Uint32
	ProxyQueued atomic.Uint32
	HomeCPU     atomic.Uint32
	Evacuated   atomic.Uint32
	_           [4]byte
	Liveness    shm.LivenessEntry
	WaitTID     atomic.Uint32
	EvacTID     atomic.Uint32
	_           [40]byte
	Doorbell    atomic.Uint32
	_           [60]byte
	Op          atomic.Uint32
	OpPeer      atomic.Uint32
	OpTag       atomic.Uint32
	OpCtx       atomic.Uint32
	OpSince     atomic.Uint64
	OpCount     atomic.Uint64
	OpName      [opNameWords]atomic.Uint64
	_           [8]byte
	Announce    atomic.Uint64
	_           [120]byte
	Direct      [DirectSlots]shm.LivenessEntry
}

const (
	CtlStride   = 512
	DirectSlots = 8
)

func init() {
	// The documented offsets are the contract with other processes.
	var c CtlBlock
	var g Global
	if unsafe.Sizeof(c) != CtlStride || unsafe.Offsetof(c.Liveness) != 64 || unsafe.Offsetof(c.Doorbell) != 128 ||
		unsafe.Offsetof(c.Op) != 192 || unsafe.Offsetof(c.OpCount) != 216 || unsafe.Offsetof(c.Announce) != 256 ||
		unsafe.Offsetof(c.Direct) != 384 || unsafe.Offsetof(c.FailedAt) != 24 ||
		unsafe.Sizeof(g) != globalStride || unsafe.Offsetof(g.starving) != 64 || unsafe.Offsetof(g.logLen) != 128 ||
		unsafe.Offsetof(c.LogIndex) != 44 || unsafe.Offsetof(c.ProxyQueued) != 48 || unsafe.Offsetof(c.HomeCPU) != 52 || unsafe.Offsetof(c.Evacuated) != 56 || unsafe.Offsetof(c.WaitTID) != 80 || unsafe.Offsetof(c.EvacTID) != 84 || unsafe.Offsetof(c.OpName) != 224 || unsafe.Offsetof(g.abort) != 192 {
		panic("job: CtlBlock or Global drifted from its documentation")
	}
}

// Rank states in the failure table (CtlBlock.State).
const (
	StUnstarted = 0
	StAlive     = 1
	StFinalized = 2
	StFailed    = 3
)

// State is a value of CtlBlock.State (St*).
type State uint32

var stateNames = [...]string{"unstarted", "alive", "finalized", "failed"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state%d", uint32(s))
}

// How a failure was detected.
const (
	CauseRobust = 1 // the kernel marked the liveness word FUTEX_OWNER_DIED
	CauseExit   = 2 // the launcher reaped the process before anyone else saw it
	CauseDirect = 3 // the same, seen by a rank asleep on a direct word
)

// Op names the blocking operation a rank is in (CtlBlock.Op).
type Op uint32

const (
	OpNone Op = iota
	OpSend
	OpSsend
	OpRecv
	OpProbe
	OpWait
	OpWaitAll
	OpWaitAny
	OpWaitSome
	OpColl
)

var opNames = [...]string{"none", "Send", "Ssend", "Recv", "Probe", "Wait", "WaitAll", "WaitAny", "WaitSome", "Collective"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", o)
}

// The bits of CtlBlock.Op besides the Op.
const (
	opBlocked = 1 << 31 // in the operation now
	opWriting = 1 << 30 // the record is being rewritten (RecordOp)
)

// OpNameMax is the longest operation name CtlBlock.OpName holds; longer
// names are cut.
const (
	opNameWords = 3
	OpNameMax   = 8 * opNameWords
)

// RecordOp publishes that the block's rank sleeps in op (for OpColl,
// the operation called name) with peer and tag in context ctx, since
// now (wall-clock ns). It runs only when a wait goes to sleep, never on
// a path that completes without sleeping.
//
// The record is read by other processes (OpOf) while it may change, as
// a sequence lock: Op with opWriting goes first, then the fields, the
// count, and last the Op itself. A reader reads the count, then Op
// (retrying while opWriting is set), the fields, Op and the count again;
// if neither changed, no write overlapped its reads (one that began
// after its first read of Op changed the count before it could restore
// Op's value).
func (cb *CtlBlock) RecordOp(op Op, name string, peer, tag int, ctx uint32, now int64) {
	cb.Op.Store(uint32(op) | opWriting)
	cb.OpPeer.Store(uint32(int32(peer)))
	cb.OpTag.Store(uint32(int32(tag)))
	cb.OpCtx.Store(ctx)
	cb.OpSince.Store(uint64(now))
	if op == OpColl {
		for i := range cb.OpName {
			var w uint64
			for k := 0; k < 8 && 8*i+k < len(name); k++ {
				w |= uint64(name[8*i+k]) << (8 * k)
			}
			cb.OpName[i].Store(w)
		}
	}
	cb.OpCount.Add(1)
	cb.Op.Store(uint32(op) | opBlocked)
}

// EndOp records that the rank no longer waits in op (RecordOp's).
func (cb *CtlBlock) EndOp(op Op) { cb.Op.Store(uint32(op)) }

// OpRecord is a consistent copy of a rank's record of the operation it
// sleeps (or last slept) in.
type OpRecord struct {
	Op      Op
	Name    string // the name for OpColl ("Barrier", "Win.Lock", ...), else Op's
	Blocked bool
	Peer    int
	Tag     int
	Since   int64 // wall-clock ns, 0 if never
	Count   uint64
}

// OpOf reads the record. It retries while the rank rewrites it, a few
// stores' time; after many tries (the rank died or stopped while
// writing) it returns what it read, with the Op's own name rather than
// one that may be torn.
func (cb *CtlBlock) OpOf() OpRecord {
	var r OpRecord
	for try := 0; ; try++ {
		c1, o1 := cb.OpCount.Load(), cb.Op.Load()
		r = OpRecord{Op: Op(o1 &^ (opBlocked | opWriting)), Blocked: o1&opBlocked != 0,
			Peer: int(int32(cb.OpPeer.Load())), Tag: int(int32(cb.OpTag.Load())),
			Since: int64(cb.OpSince.Load()), Count: c1}
		var name [OpNameMax]byte
		for i := range cb.OpName {
			w := cb.OpName[i].Load()
			for k := range 8 {
				name[8*i+k] = byte(w >> (8 * k))
			}
		}
		r.Name = r.Op.String()
		if r.Op == OpColl {
			if n := strings.IndexByte(string(name[:]), 0); n != 0 {
				if n < 0 {
					n = len(name)
				}
				r.Name = string(name[:n])
			}
		}
		if o1&opWriting == 0 && cb.Op.Load() == o1 && cb.OpCount.Load() == c1 {
			return r
		}
		if try >= 1000 {
			r.Name = r.Op.String()
			return r
		}
		runtime.Gosched()
	}
}

// Peer and tag values that CtlBlock.OpPeer and OpTag share with package
// ranks (AnySource, ProcNull, AnyTag).
const (
	AnyPeer  = -1
	NullPeer = -2
	AnyTag   = -1
)
