package ranks

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"shmpi/ring"
	"shmpi/shm"
)

// The segment of a job holds these areas, in this order (shm places them;
// every record starts on a cache line, chunk data on a page):
//
//	area      records    stride                 what
//	global    1          256 B                  the change epoch
//	ctl       N          512 B                  per-rank control block
//	inbox     N          256 B + InboxSlots*64 B per-rank MPSC message ring
//	hs        N          HSSlots*128 B          per-rank handshake slots
//	chunkst   N          ChunkCount*8 B (→64)   per-rank chunk owner words
//	chunks    N          ChunkCount*ChunkSize   per-rank eager chunk data
//	contexts  1024       64 B                   context slots (context.go)
//
// Every area grows linearly with N (the contexts are a fixed 64 KiB):
// nothing is allocated per pair of ranks. The sizes are stored in the header parameters, so a rank reads
// them from the segment rather than assuming them.
const (
	areaGlobal = iota
	areaCtl
	areaInbox
	areaHS
	areaChunkState
	areaChunks
	areaContexts
	numAreas
)

// Header parameter indices.
const (
	paramInboxSlots = iota
	paramHSSlots
	paramChunkCount
	paramChunkSize
)

// Default layout parameters. The eager chunk size is the cut-off between
// the copy-through-the-segment protocol and single-copy; see README.md for
// the measurement behind it.
const (
	DefaultInboxSlots = 256
	DefaultHSSlots    = 64
	DefaultChunkCount = 16
	DefaultChunkSize  = 32 << 10
)

// Global record layout (256 bytes):
//
//	+0   epoch    uint64  bumped by every failure and every finalize; every
//	                      wait loop compares it with the value it last saw
//	+64  starving uint32  ranks asleep with sends that wait for room in an
//	                      inbox or for a chunk; receivers that free room read
//	                      it (normally zero) and wake them
//	(the rest pads the two lines, read by all and written rarely)
const (
	globalStride = 256
	offStarving  = 64
)

// ctlBlock is a rank's control block (512 bytes, 8 cache lines, at
// areaCtl + rank*512). x86's adjacent-line prefetcher moves lines in
// 128-byte pairs, so a line that others read on every message (the
// doorbell) and a line its owner writes on every message (the
// announcement) must not share a pair: the reader would drag the
// writer's line away each time.
//
//	lines 0-1: the rank's fate and liveness; read by others only when the
//	        failure epoch changes
//	  +0   state    uint32  stUnstarted / stAlive / stFinalized / stFailed
//	  +4   pid      uint32  set by the rank at Init
//	  +8   cause    uint32  how a failure was detected (cause*)
//	  +12  exitCode int32   set by the launcher when it reaps the process, else -1
//	  +16  signal   int32   signal that killed it, 0 if none
//	  +20  detector int32   rank that declared the failure, -1 for the launcher
//	  +24  failedAt int64   wall-clock ns of the declaration
//	  +32  reaped   uint32  1 once the launcher has recorded the exit status
//	  +36  starving uint32  1 while the rank sleeps with sends waiting for room
//	  +64  liveness shm.LivenessEntry (16 bytes): next uint64, word uint32 =
//	                TID | FUTEX_WAITERS, | FUTEX_OWNER_DIED at death
//	lines 2-3: the doorbell, read by every sender after every message
//	  +128 doorbell uint32
//	  +192 what the rank is blocked in, for deadline reports; only the rank
//	       writes it, and only when it starts to wait:
//	       op uint32 (opCode), opPeer int32 (or AnySource), opTag int32,
//	       opCtx uint32, opSince int64 (wall-clock ns), opCount uint64 (+216)
//	lines 4-5: the announcement, written by the rank on every send
//	  +256 announce uint64  the inbox position this rank is claiming (see
//	                        package ring); read by a consumer only when a
//	                        claimed slot stays unpublished
//	lines 6-7: direct liveness words, read only by sleepers
//	  +384 direct   [8]shm.LivenessEntry (16 bytes each), armed like
//	                liveness and ahead of it in the rank's robust list.
//	                Rank j, asleep waiting for this rank, sleeps on
//	                direct[j%8] as well as on its doorbell. The kernel wakes
//	                one waiter per word, and the watchers wait on liveness,
//	                so j is woken by the death itself rather than by a
//	                watcher that must wake first and then ring j's doorbell.
type ctlBlock struct {
	state    atomic.Uint32
	pid      atomic.Uint32
	cause    atomic.Uint32
	exitCode atomic.Uint32
	signal   atomic.Uint32
	detector atomic.Uint32
	failedAt atomic.Uint64
	reaped   atomic.Uint32
	starving atomic.Uint32
	_        [24]byte
	liveness shm.LivenessEntry
	_        [48]byte
	doorbell atomic.Uint32
	_        [60]byte
	op       atomic.Uint32
	opPeer   atomic.Uint32
	opTag    atomic.Uint32
	opCtx    atomic.Uint32
	opSince  atomic.Uint64
	opCount  atomic.Uint64
	_        [32]byte
	announce atomic.Uint64
	_        [120]byte
	direct   [directSlots]shm.LivenessEntry
}

const (
	ctlStride   = 512
	directSlots = 8
)

func init() {
	var c ctlBlock
	if unsafe.Sizeof(c) != ctlStride || unsafe.Offsetof(c.liveness) != 64 || unsafe.Offsetof(c.doorbell) != 128 ||
		unsafe.Offsetof(c.op) != 192 || unsafe.Offsetof(c.opCount) != 216 || unsafe.Offsetof(c.announce) != 256 ||
		unsafe.Offsetof(c.direct) != 384 || unsafe.Offsetof(c.failedAt) != 24 {
		panic("ranks: ctlBlock drifted from its documentation")
	}
}

// Rank states in the failure table.
const (
	stUnstarted = 0
	stAlive     = 1
	stFinalized = 2
	stFailed    = 3
)

// How a failure was detected.
const (
	causeRobust = 1 // the kernel marked the liveness word FUTEX_OWNER_DIED
	causeExit   = 2 // the launcher reaped the process before anyone else saw it
	causeDirect = 3 // the same, seen by a rank asleep on a direct word
)

// hsSlot is a handshake slot (192 bytes, 3 cache lines, at
// areaHS + rank*HSSlots*192 + k*192), owned by the sender; it carries a
// synchronous send's acknowledgement or a large message's rendezvous.
//
//	line 0: written once per use
//	  +0   state    uint32  hsFree / hsPosted / hsPiped / hsCoop / hsDone / hsRevoked
//	  +4   gen      uint32  bumped on each use; descriptors carry it
//	  +16  addr     uint64  the sender's buffer, in the sender's address space
//	  +32  accept   uint64  bytes the receiver takes (min of length and its buffer)
//	  +40  dstAddr  uint64  the receiver's buffer, in its address space (hsCoop)
//	line 1: the cooperative copy; pieces of pieceLen bytes from base
//	  +64  claim    uint64  low half: next piece from the front (the
//	                        receiver's), high half: end of the pieces not yet
//	                        taken from the back (the sender's); CAS
//	  +72  copied   uint64  bytes copied so far (atomic add)
//	  +80  failed   uint64  1 + a piece the sender claimed but could not
//	                        write; the receiver copies it instead
//	  +88  base     uint64  byte offset where the pieces start
//	  +96  pieceLen uint64  bytes per piece (the last may be shorter)
//	line 2: the pipelined fallback when cross-process copy is refused
//	  +128 pipeTail uint32  entries the sender has filled
//	  +132 pipeHead uint32  entries the receiver has drained
//	  +136 pipe     [4]{chunk uint32, len uint32}
type hsSlot struct {
	state    atomic.Uint32
	gen      atomic.Uint32
	_        [8]byte
	addr     atomic.Uint64
	_        [8]byte
	accept   atomic.Uint64
	dstAddr  atomic.Uint64
	_        [16]byte
	claim    atomic.Uint64
	copied   atomic.Uint64
	failed   atomic.Uint64
	base     atomic.Uint64
	pieceLen atomic.Uint64
	_        [24]byte
	pipeTail atomic.Uint32
	pipeHead atomic.Uint32
	pipe     [hsPipeLen]pipeEntry
	_        [24]byte
}

// pipeEntry is one chunk of a pipelined copy.
type pipeEntry struct{ chunk, len uint32 }

const (
	hsStride  = 192
	hsPipeLen = 4
)

// Handshake states.
const (
	hsFree    = 0
	hsPosted  = 1 // descriptor sent, not matched yet
	hsPiped   = 2 // matched; the receiver asks for a pipelined copy
	hsDone    = 3 // the receiver has matched (sync) or copied (rendezvous)
	hsCoop    = 4 // matched; both sides copy pieces with process_vm_readv/writev
	hsRevoked = 5 // rejected: the receiver's communicator is revoked
)

// A cooperative copy splits what follows the probe into coopPieces
// pieces of at least coopMinPiece bytes: one for each side when the
// sender is there to help, both for the receiver when it is not. Each
// piece costs a syscall plus the kernel's per-page pinning, so few large
// pieces beat many small ones: osu_bw from 128 KiB to 4 MiB was as fast
// or faster with two pieces than with four, with the receiver copying
// alone, or with 64 KiB pieces. coopProbe is the first piece of a rank's first large
// message, which the receiver copies alone to learn whether the kernel
// allows cross-process copies before it offers the rest.
const (
	coopPieces   = 2
	coopMinPiece = 64 << 10
	coopProbe    = 16 << 10
)

// coopPieceLen is the piece size for the n bytes after the probe: an
// equal share, rounded up to whole pages, and at least coopMinPiece.
func coopPieceLen(n int) int {
	const page = 4 << 10
	return max(coopMinPiece, ((n+coopPieces-1)/coopPieces+page-1)&^(page-1))
}

// desc is a message descriptor, the payload of an inbox ring slot (56
// bytes):
//
//	+0   ctx   uint32  communicator context id
//	+4   tag   int32
//	+8   kind  uint8   kInline / kChunk / kRndv / kFrag / kAck, or an
//	                   upper package's (internal/ext)
//	+9   flags uint8   fSync, fAckMsg, fFirst, fRevoked
//	+10  hs    uint16  handshake slot index in the sender's table
//	+12  len   uint32  bytes carried (inline, chunk, frag)
//	+16  gen   uint32  handshake generation (fAckMsg, kAck: the ack id)
//	+20  data  [36]byte  inline payload; chunk: index uint32; rndv: length
//	                     uint64; frag: chunk index uint32, then at +8 the
//	                     total length uint64 (first fragment)
type desc struct {
	ctx   uint32
	tag   int32
	kind  uint8
	flags uint8
	hs    uint16
	len   uint32
	gen   uint32
	data  [inlineMax]byte
}

const (
	dData = unsafe.Offsetof(desc{}.data)

	inlineMax = ring.PayloadSize - 20 // 36 bytes

	kInline = 1
	kChunk  = 2
	kRndv   = 3
	kFrag   = 4 // a fragment of a message sent without a handshake slot (fallback.go)
	kAck    = 5 // a synchronous send's match, acknowledged by message: gen is its id

	fSync    = 1 // acknowledge the match through handshake slot hs
	fAckMsg  = 2 // acknowledge the match with a kAck message carrying gen
	fFirst   = 4 // kFrag: the first fragment; data+8 holds the total length (uint64)
	fRevoked = 8 // kAck: the message was rejected, its communicator revoked
)

func init() {
	// The documented offsets are the contract with other processes.
	if unsafe.Sizeof(desc{}) != ring.PayloadSize || dData != 20 ||
		unsafe.Sizeof(hsSlot{}) != hsStride || unsafe.Offsetof(hsSlot{}.accept) != 32 ||
		unsafe.Offsetof(hsSlot{}.claim) != 64 || unsafe.Offsetof(hsSlot{}.pieceLen) != 96 ||
		unsafe.Offsetof(hsSlot{}.pipeTail) != 128 || unsafe.Offsetof(hsSlot{}.pipe) != 136 {
		panic("ranks: desc or hsSlot drifted from its documentation")
	}
}

// Layout is the set of sizes a segment was built with.
type Layout struct {
	Ranks      int
	InboxSlots int
	HSSlots    int
	ChunkCount int
	ChunkSize  int
}

// DefaultLayout is the layout for n ranks. EnvChunkSize and
// EnvChunkCount, if set, override the chunk size and count.
func DefaultLayout(n int) Layout {
	l := Layout{Ranks: n, InboxSlots: DefaultInboxSlots, HSSlots: DefaultHSSlots,
		ChunkCount: DefaultChunkCount, ChunkSize: DefaultChunkSize}
	if v, err := strconv.Atoi(os.Getenv(EnvChunkSize)); err == nil && v >= 4096 && v%4096 == 0 {
		l.ChunkSize = v
	}
	if v, err := strconv.Atoi(os.Getenv(EnvChunkCount)); err == nil && v >= 1 && v <= 1024 {
		l.ChunkCount = v
	}
	return l
}

func (l Layout) spec(cores int) shm.Spec {
	n := l.Ranks
	sp := shm.Spec{Ranks: n, Cores: cores}
	sp.Areas = make([]shm.AreaSpec, numAreas)
	sp.Areas[areaGlobal] = shm.AreaSpec{Count: 1, Stride: globalStride}
	sp.Areas[areaCtl] = shm.AreaSpec{Count: n, Stride: ctlStride, Align: 512}
	sp.Areas[areaInbox] = shm.AreaSpec{Count: n, Stride: ring.Bytes(l.InboxSlots), Align: 128}
	sp.Areas[areaHS] = shm.AreaSpec{Count: n, Stride: l.HSSlots * hsStride}
	sp.Areas[areaChunkState] = shm.AreaSpec{Count: n, Stride: (l.ChunkCount*8 + 63) &^ 63}
	sp.Areas[areaChunks] = shm.AreaSpec{Count: n, Stride: l.ChunkCount * l.ChunkSize, Align: shm.PageSize}
	sp.Areas[areaContexts] = shm.AreaSpec{Count: MaxContexts, Stride: ctxRecordSize}
	sp.Params[paramInboxSlots] = uint64(l.InboxSlots)
	sp.Params[paramHSSlots] = uint64(l.HSSlots)
	sp.Params[paramChunkCount] = uint64(l.ChunkCount)
	sp.Params[paramChunkSize] = uint64(l.ChunkSize)
	return sp
}

func (l Layout) check() error {
	if l.Ranks <= 0 || l.Ranks > ring.MaxProducer {
		return fmt.Errorf("ranks: bad rank count %d", l.Ranks)
	}
	if l.InboxSlots < 2 || l.InboxSlots&(l.InboxSlots-1) != 0 || l.HSSlots < 1 || l.HSSlots > 1<<16 ||
		l.ChunkCount < 1 || l.ChunkSize < 4096 || l.ChunkSize%shm.PageSize != 0 {
		return fmt.Errorf("ranks: bad layout %+v", l)
	}
	return nil
}

// NewSegment creates the shared segment for a job of l.Ranks ranks that
// runs on cores CPUs. Launchers (shmrun, ranktest, a node agent) call it,
// then pass Segment.File() and JobID to the ranks (see RankEnv).
func NewSegment(l Layout, cores int) (*shm.Segment, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	seg, err := shm.Create(l.spec(cores))
	if err != nil {
		return nil, err
	}
	t := newTable(seg)
	for r := range t.n {
		t.cb(r).exitCode.Store(^uint32(0)) // exit code unknown
		t.cb(r).detector.Store(^uint32(0))
	}
	t.initContexts()
	return seg, nil
}

// SegmentLayout reads back the layout a segment was built with.
func SegmentLayout(seg *shm.Segment) Layout {
	return Layout{
		Ranks:      seg.Ranks(),
		InboxSlots: int(seg.Param(paramInboxSlots)),
		HSSlots:    int(seg.Param(paramHSSlots)),
		ChunkCount: int(seg.Param(paramChunkCount)),
		ChunkSize:  int(seg.Param(paramChunkSize)),
	}
}

// table is a process's typed view of the shared failure table and
// control blocks. It is what launchers and ranks share.
type table struct {
	seg      *shm.Segment
	n        int
	epoch    *atomic.Uint64
	starving *atomic.Uint32
	ctl0     uint64
	ctx0     uint64 // the context slots
}

func newTable(seg *shm.Segment) *table {
	g := seg.Area(areaGlobal).Off
	return &table{
		seg:      seg,
		n:        seg.Ranks(),
		epoch:    seg.U64(g),
		starving: seg.U32(g + offStarving),
		ctl0:     seg.Area(areaCtl).Off,
		ctx0:     seg.Area(areaContexts).Off,
	}
}

// cb is rank r's control block.
func (t *table) cb(r int) *ctlBlock {
	return (*ctlBlock)(t.seg.Ptr(t.ctl0 + uint64(r)*ctlStride))
}

func (t *table) liveness(r int) *shm.LivenessEntry {
	return &t.cb(r).liveness
}

// direct is the liveness word of rank r that rank j sleeps on.
func (t *table) direct(r, j int) *shm.LivenessEntry {
	return &t.cb(r).direct[j%directSlots]
}

// livenessList is rank r's robust list: the direct words, then liveness.
func (t *table) livenessList(r int) []*shm.LivenessEntry {
	l := make([]*shm.LivenessEntry, 0, directSlots+1)
	for j := range directSlots {
		l = append(l, t.direct(r, j))
	}
	return append(l, t.liveness(r))
}

func (t *table) doorbell(r int) shm.Doorbell {
	return shm.NewDoorbell(&t.cb(r).doorbell)
}

func (t *table) state(r int) uint32 { return t.cb(r).state.Load() }

// bump publishes a change of the table: every waiter re-checks.
func (t *table) bump() {
	t.epoch.Add(1)
	for r := range t.n {
		t.doorbell(r).Ring()
	}
}

// declareFailed moves rank r to stFailed unless it already ended, and
// tells everyone. It reports whether this call made the change.
func (t *table) declareFailed(r int, cause uint32, detector int) bool {
	st := &t.cb(r).state
	for {
		v := st.Load()
		if v == stFailed || v == stFinalized {
			return false
		}
		if st.CompareAndSwap(v, stFailed) {
			break
		}
	}
	t.cb(r).cause.Store(cause)
	t.cb(r).detector.Store(uint32(int32(detector)))
	t.cb(r).failedAt.Store(uint64(time.Now().UnixNano()))
	t.bump()
	return true
}

// checkLiveness declares every rank whose liveness word the kernel marked
// dead. It is the backstop when no watcher was woken.
func (t *table) checkLiveness(detector int) {
	for r := range t.n {
		if t.state(r) == stAlive && shm.Dead(t.liveness(r).Word.Load()) {
			t.declareFailed(r, causeRobust, detector)
		}
	}
}

// Exit is what a launcher learned when it reaped a rank's process.
type Exit struct {
	Code   int // exit code, or -1 if killed by a signal
	Signal int // the signal that killed it, or 0
}

// Fate is what became of a rank, as the failure table records it.
type Fate struct {
	Rank      int
	Pid       int    // set by the rank when it entered Init, else 0
	State     string // "unstarted", "alive", "finalized" or "failed"
	Cause     string // for a failure: "robust-futex", "robust-futex-direct" or "exit"
	Detector  int    // rank that declared the failure, -1 for the launcher
	ExitCode  int    // -1 if unknown or killed by a signal
	Signal    int
	Reaped    bool
	Op        string // the operation it was last blocked in
	OpPeer    int
	OpTag     int
	OpSince   time.Time
	OpCount   uint64
	Blocked   bool // in Op now (else Op is the last one it was blocked in)
	Finalized bool
	FailedAt  time.Time // when the failure was declared (wall clock), zero if never
}

// RecordExit is called by a launcher when rank r's process has exited. An
// exit without Finalize, for any reason, is a failure: the table is marked
// and every rank woken. It returns the rank's fate.
func RecordExit(seg *shm.Segment, r int, ex Exit) Fate {
	t := newTable(seg)
	t.cb(r).exitCode.Store(uint32(int32(ex.Code)))
	t.cb(r).signal.Store(uint32(int32(ex.Signal)))
	t.cb(r).reaped.Store(1)
	if st := t.state(r); st == stAlive || (st == stUnstarted && (ex.Code != 0 || ex.Signal != 0)) {
		t.declareFailed(r, causeExit, -1)
	}
	return FateOf(seg, r)
}

// DeclareFailed lets a launcher mark a rank that will never run (it could
// not be started) as failed.
func DeclareFailed(seg *shm.Segment, r int) { newTable(seg).declareFailed(r, causeExit, -1) }

// FateOf reads rank r's entry in the failure table.
func FateOf(seg *shm.Segment, r int) Fate {
	t := newTable(seg)
	f := Fate{Rank: r, Pid: int(t.cb(r).pid.Load()), Detector: int(int32(t.cb(r).detector.Load())),
		ExitCode: int(int32(t.cb(r).exitCode.Load())), Signal: int(int32(t.cb(r).signal.Load())),
		Reaped: t.cb(r).reaped.Load() == 1}
	switch t.state(r) {
	case stUnstarted:
		f.State = "unstarted"
	case stAlive:
		f.State = "alive"
	case stFinalized:
		f.State = "finalized"
		f.Finalized = true
	case stFailed:
		f.State = "failed"
	}
	switch t.cb(r).cause.Load() {
	case causeRobust:
		f.Cause = "robust-futex"
	case causeDirect:
		f.Cause = "robust-futex-direct"
	case causeExit:
		f.Cause = "exit"
	}
	op := t.cb(r).op.Load()
	f.Op = opCode(op &^ (1 << 31)).String()
	f.Blocked = op>>31 == 1
	f.OpPeer = int(int32(t.cb(r).opPeer.Load()))
	f.OpTag = int(int32(t.cb(r).opTag.Load()))
	if ns := int64(t.cb(r).opSince.Load()); ns != 0 {
		f.OpSince = time.Unix(0, ns)
	}
	f.OpCount = t.cb(r).opCount.Load()
	if ns := int64(t.cb(r).failedAt.Load()); ns != 0 {
		f.FailedAt = time.Unix(0, ns)
	}
	return f
}

// String describes where a rank is, for deadline reports.
func (f Fate) String() string {
	s := fmt.Sprintf("rank %d: %s", f.Rank, f.State)
	if f.State == "failed" {
		s += " (detected by " + f.Cause + ")"
	}
	if f.Op != "none" && f.Op != "" {
		if f.Blocked {
			s += fmt.Sprintf("; blocked in %s", f.Op)
		} else {
			s += fmt.Sprintf("; last blocked in %s", f.Op)
		}
		if f.OpPeer != ProcNull { // many-request waits record no peer
			s += fmt.Sprintf("(peer=%s, tag=%s)", peerString(f.OpPeer), tagString(f.OpTag))
		}
		if !f.OpSince.IsZero() && f.Blocked {
			s += fmt.Sprintf(" for %v", time.Since(f.OpSince).Round(time.Millisecond))
		}
	}
	return s
}

func peerString(p int) string {
	switch p {
	case AnySource:
		return "any"
	case ProcNull:
		return "null"
	}
	return fmt.Sprint(p)
}

func tagString(t int) string {
	if t == AnyTag {
		return "any"
	}
	return fmt.Sprint(t)
}

// opCode names the blocking operation a rank is in (control block line 3).
type opCode uint32

const (
	opNone opCode = iota
	opSend
	opSsend
	opRecv
	opProbe
	opWait
	opWaitAll
	opWaitAny
	opWaitSome
)

var opNames = [...]string{"none", "Send", "Ssend", "Recv", "Probe", "Wait", "WaitAll", "WaitAny", "WaitSome"}

func (o opCode) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", o)
}
