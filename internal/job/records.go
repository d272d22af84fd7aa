package job

import (
	"fmt"
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
//	(the rest pads the lines, read by all and written rarely)
type Global struct {
	epoch    atomic.Uint64
	_        [56]byte
	starving atomic.Uint32
	_        [60]byte
	logLen   atomic.Uint32
	_        [124]byte
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
//	  +64  Liveness shm.LivenessEntry (16 bytes): next uint64, word uint32 =
//	                TID | FUTEX_WAITERS, | FUTEX_OWNER_DIED at death
//	lines 2-3: the doorbell, read by every sender after every message
//	  +128 Doorbell uint32
//	  +192 what the rank is blocked in, for deadline reports; only the rank
//	       writes it, and only when it starts to wait:
//	       Op uint32 (Op, bit 31 while blocked), OpPeer int32, OpTag int32,
//	       OpCtx uint32, OpSince int64 (wall-clock ns), OpCount uint64 (+216)
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
	State    atomic.Uint32
	Pid      atomic.Uint32
	Cause    atomic.Uint32
	ExitCode atomic.Uint32
	Signal   atomic.Uint32
	Detector atomic.Uint32
	FailedAt atomic.Uint64
	Reaped   atomic.Uint32
	Starving atomic.Uint32
	LogClaim atomic.Uint32
	LogIndex atomic.Uint32
	_        [16]byte
	Liveness shm.LivenessEntry
	_        [48]byte
	Doorbell atomic.Uint32
	_        [60]byte
	Op       atomic.Uint32
	OpPeer   atomic.Uint32
	OpTag    atomic.Uint32
	OpCtx    atomic.Uint32
	OpSince  atomic.Uint64
	OpCount  atomic.Uint64
	_        [32]byte
	Announce atomic.Uint64
	_        [120]byte
	Direct   [DirectSlots]shm.LivenessEntry
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
		unsafe.Offsetof(c.LogIndex) != 44 {
		panic("job: CtlBlock or Global drifted from its documentation")
	}
}

// Rank states in the failure table.
const (
	StUnstarted = 0
	StAlive     = 1
	StFinalized = 2
	StFailed    = 3
)

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

// Peer and tag values that CtlBlock.OpPeer and OpTag share with package
// ranks (AnySource, ProcNull, AnyTag).
const (
	AnyPeer  = -1
	NullPeer = -2
	AnyTag   = -1
)
