package ranks

import (
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ring"
)

// The engine's wire records: the message descriptor of an inbox slot and
// the handshake slot. Only ranks reads and writes them; package job
// places them (job.Map.HS, job.Map.Inbox).

// hsSlot is a handshake slot (192 bytes, 3 cache lines, at
// areaHS + rank*HSSlots*192 + k*192), owned by the sender; it carries a
// synchronous send's acknowledgement or a large message's rendezvous.
//
//	line 0: written once per use
//	  +0   state    uint32  hsFree / hsPosted / hsPiped / hsCoop / hsDone / hsRevoked / ... (below)
//	  +4   gen      uint32  bumped on each use; descriptors carry it
//	  +8   srcMem   uint64  the sender's buffer is AllocMem memory: memfd
//	                        descriptor (low half) and allocation id (high
//	                        half) in the sender; 0: it is not (peermem.go)
//	  +16  addr     uint64  the sender's buffer, in the sender's address space
//	  +24  srcBase  uint64  start of that AllocMem region, same address space
//	  +32  accept   uint64  bytes the receiver takes (min of length and its buffer)
//	  +40  dstAddr  uint64  the receiver's buffer, in its address space (hsCoop)
//	  +48  dstMem   uint64  as srcMem, for the receiver's buffer (hsCoop)
//	  +56  dstBase  uint64  as srcBase, for the receiver's buffer
//	line 1: the cooperative copy; pieces of pieceLen bytes from base
//	  +64  claim    uint64  low half: next piece from the front (the
//	                        receiver's), high half: end of the pieces not yet
//	                        taken from the back (the sender's); CAS
//	  +72  copied   uint64  bytes copied so far (atomic add)
//	  +80  failed   uint64  1 + a piece the sender claimed but could not
//	                        write; the receiver copies it instead
//	  +88  base     uint64  byte offset where the pieces start
//	  +96  pieceLen uint64  bytes per piece (the last may be shorter)
//	  +104 ready    uint64  a late message (hsLatePosted): 1 once its bytes
//	                        are in the sender's buffer (addr); its
//	                        receiver then copies them itself
//	line 2: the pipelined fallback when cross-process copy is refused
//	  +128 pipeTail uint32  entries the sender has filled
//	  +132 pipeHead uint32  entries the receiver has drained
//	  +136 pipe     [4]{chunk uint32, len uint32}
type hsSlot struct {
	state    atomic.Uint32
	gen      atomic.Uint32
	srcMem   atomic.Uint64
	addr     atomic.Uint64
	srcBase  atomic.Uint64
	accept   atomic.Uint64
	dstAddr  atomic.Uint64
	dstMem   atomic.Uint64
	dstBase  atomic.Uint64
	claim    atomic.Uint64
	copied   atomic.Uint64
	failed   atomic.Uint64
	base     atomic.Uint64
	pieceLen atomic.Uint64
	ready    atomic.Uint64
	_        [16]byte
	pipeTail atomic.Uint32
	pipeHead atomic.Uint32
	pipe     [hsPipeLen]pipeEntry
	_        [24]byte
}

// pipeEntry is one chunk of a pipelined copy.
type pipeEntry struct{ chunk, len uint32 }

// hsPipeLen is the number of chunks a pipelined copy keeps in flight.
const hsPipeLen = 4

// Handshake states.
const (
	hsFree    = 0
	hsPosted  = 1 // descriptor sent, not matched yet
	hsPiped   = 2 // matched; the receiver asks for a pipelined copy
	hsDone    = 3 // the receiver has matched (sync) or copied (rendezvous)
	hsCoop    = 4 // matched; both sides copy pieces with process_vm_readv/writev
	hsRevoked = 5 // refused: the receiver's communicator is revoked
	hsDropped = 6 // refused: the receiver freed the communicator (or never had it)
	hsDead    = 7 // refused: a collective whose member failed (the receiver left it)
	// hsLatePosted: descriptor sent by a node agent's proxy whose bytes
	// have not arrived from the other node yet (proxy.sendLate). A
	// receiver that matches it copies nothing itself: the proxy fills
	// its buffer, with the system MPI straight into it where it can.
	hsLatePosted = 8
	// hsLost: such a message's bytes will never arrive (their node
	// died); its receiver completes with the sender's failure.
	hsLost = 9
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

// desc is a message descriptor, the payload of a full inbox record (56
// bytes), or the start of a double record's (120 bytes: an inline
// message of up to doubleMax bytes, its data running on past the
// struct):
//
//	+0   ctx   uint32  communicator context id
//	+4   tag   int32
//	+8   kind  uint8   kInline / kChunk / kRndv / kFrag / kAck, or an
//	                   upper package's (internal/ext)
//	+9   flags uint8   fSync, fAckMsg, fFirst, fSyncRndv; kAck: fRevoked, fDropped, fDead
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

// shortDesc is the descriptor of a small inline message in a short
// record (24 bytes; ring.ShortPayloadSize): two share an inbox line, so
// a receiver that is behind reads two messages per line it fetches. Only
// standard-mode messages of up to shortMax bytes travel this way, and
// only while a sender streams to one destination (engine.streamsTo).
//
//	+0   ctx   uint32
//	+4   tag   int32
//	+8   kind  uint8   kShort
//	+9   _     uint8
//	+10  len   uint16
//	+12  data  [12]byte
type shortDesc struct {
	ctx  uint32
	tag  int32
	kind uint8
	_    uint8
	len  uint16
	data [shortMax]byte
}

const (
	dData = unsafe.Offsetof(desc{}.data)
	sData = unsafe.Offsetof(shortDesc{}.data)

	shortMax = ring.ShortPayloadSize - 12 // 12 bytes

	inlineMax = ring.PayloadSize - 20 // 36 bytes
	// doubleMax is the largest message inline in a double record (two
	// lines): the descriptor's data runs on past the struct.
	doubleMax = ring.DoublePayloadSize - 20 // 100 bytes

	kInline = 1
	kChunk  = 2
	kRndv   = 3
	kFrag   = 4 // a fragment of a message sent without a handshake slot (fallback.go)
	kAck    = 5 // a synchronous send's match, acknowledged by message: gen is its id
	kShort  = 6 // an inline message in a short record (shortDesc)

	fSync    = 1  // acknowledge the match through handshake slot hs
	fAckMsg  = 2  // acknowledge the match with a kAck message carrying gen
	fFirst   = 4  // kFrag: the first fragment; data+8 holds the total length (uint64)
	fRevoked = 8  // kAck: the message was refused, its communicator revoked
	fDropped = 16 // kAck: refused, the communicator freed at the receiver
	fDead    = 32 // kAck: refused, a collective whose member failed
	// fSyncRndv: kRndv of a synchronous send. A receiver that is a node
	// agent's proxy holds the sender's completion (hsDone) after the
	// copy until the receiver's node says the receive matched
	// (rndvDone, proxy.take); other receivers ignore it, as the copy's
	// end is the match for them.
	fSyncRndv = 64
)

// Why a receiver refuses a message (engine.refusal), and how the sender
// learns it: a handshake state, or a kAck flag.
const (
	rejRevoked  = 1
	rejDropped  = 2
	rejCollDead = 3
)

var (
	rejState = [...]uint32{rejRevoked: hsRevoked, rejDropped: hsDropped, rejCollDead: hsDead}
	rejFlag  = [...]uint8{rejRevoked: fRevoked, rejDropped: fDropped, rejCollDead: fDead}
)

// refusedWhy is the reason a refused handshake state gives.
func refusedWhy(state uint32) uint8 {
	for why, s := range rejState {
		if why != 0 && s == state {
			return uint8(why)
		}
	}
	return rejRevoked
}

func init() {
	// The documented offsets are the contract with other processes.
	if unsafe.Sizeof(desc{}) != ring.PayloadSize || dData != 20 ||
		unsafe.Sizeof(shortDesc{}) != ring.ShortPayloadSize || sData != 12 ||
		unsafe.Offsetof(shortDesc{}.kind) != unsafe.Offsetof(desc{}.kind) ||
		unsafe.Sizeof(hsSlot{}) != job.HSStride || unsafe.Offsetof(hsSlot{}.accept) != 32 ||
		unsafe.Offsetof(hsSlot{}.claim) != 64 || unsafe.Offsetof(hsSlot{}.pieceLen) != 96 || unsafe.Offsetof(hsSlot{}.ready) != 104 ||
		unsafe.Offsetof(hsSlot{}.pipeTail) != 128 || unsafe.Offsetof(hsSlot{}.pipe) != 136 {
		panic("ranks: desc or hsSlot drifted from its documentation")
	}
}
