// Package job is what a launcher and the ranks of a job share: the map of
// the job's segment (its areas and layout parameters), the shared records
// as Go structs (the per-rank control block, the global record, the
// context slots), the failure table over them, the recording of each
// rank's fate, and the environment protocol by which a launcher makes a
// process a rank. Package ranks runs a rank on top of it; package
// ranks/launch starts jobs with it. Users of shmpi never see it.
package job

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/shmpi/shmpi/ring"
	"github.com/shmpi/shmpi/shm"
)

// The segment of a job holds these areas, in this order (shm places them;
// every record starts on a cache line, chunk data on a page):
//
//	area      records    stride                 what
//	global    1          256 B + 64 B + 16 KiB  Global: the change epoch; the
//	                     + 512 B + 8 KiB        spawn mailbox (spawn.go); the
//	                                            ports and names (ports.go)
//	ctl       N          512 B                  CtlBlock: per-rank control block
//	inbox     N          256 B + InboxSlots*64 B per-rank MPSC message ring
//	hs        N          HSSlots*192 B          per-rank handshake slots (ranks' hsSlot)
//	chunkst   N          ChunkCount*8 B (→64)   per-rank chunk owner words
//	chunks    N          ChunkCount*ChunkSize   per-rank eager chunk data
//	contexts  1024       64 B                   CtxRecord: context slots
//	holds     N          128 B                  Holds: context slots a rank holds
//	log       1          N*4 B (→64)            the failure log (log.go)
//	coll      1024       64 B + N*64 B          the collectives' lines of each
//	                                            context slot (package coll)
//	agree     1024       AgreeStride(N)         the agreements' records of each
//	                                            context slot (package ulfm)
//	scratch   8          N*ScratchMember        the collectives' scratch of
//	                                            context slots 0-7 (package coll)
//
// Every area grows linearly with N (the contexts are a fixed 64 KiB; the
// collectives' lines are 64 KiB per rank, touched only for the
// communicators that run collectives):
// nothing is allocated per pair of ranks. The sizes are stored in the
// header parameters, so a rank reads them from the segment rather than
// assuming them.
const (
	areaGlobal = iota
	areaCtl
	areaInbox
	areaHS
	areaChunkState
	areaChunks
	areaContexts
	areaHolds
	areaLog
	areaColl
	areaAgree
	areaScratch
	numAreas
)

// Header parameter indices.
const (
	paramInboxSlots = iota
	paramHSSlots
	paramChunkCount
	paramChunkSize
	paramWorld
	paramFirst // the node's first world rank (issue 27's node agents)
	paramLocal // ranks that run on this node; 0: the whole world
)

// Default layout parameters. The eager chunk size is the cut-off between
// the copy-through-the-segment protocol and single-copy; "The eager
// cut-off" in docs/performance.md has the measurement behind it.
const (
	DefaultInboxSlots = 256
	DefaultHSSlots    = 64
	DefaultChunkCount = 16
	DefaultChunkSize  = 32 << 10 // above 32 ranks; ChunkSizeFor
)

// HSStride is the size of one handshake slot (ranks' hsSlot checks it).
const HSStride = 192

// Layout is the set of sizes a segment was built with.
type Layout struct {
	Ranks      int // rank slots: the universe (MPI_UNIVERSE_SIZE)
	World      int // the first job's world: slots 0 to World-1; 0 means Ranks
	InboxSlots int
	HSSlots    int
	ChunkCount int
	ChunkSize  int
	// First and Local place a node's ranks in a world that spans nodes
	// (node agents): world ranks First to First+Local-1 run on this node;
	// the other slots of the world are served by the node's agent as
	// proxies of ranks that run elsewhere. Local 0: every rank runs here.
	First int
	Local int
}

// ChunkSizeFor is the eager chunk size of a job of n ranks on cores CPUs:
// larger chunks in small jobs, where the segment stays small. Messages up
// to the chunk size go eagerly; eager beat the rendezvous at 64 and 128
// KiB once the engine pre-faulted chunks and moved records in two lines
// (2026-11-26, 2 ranks, 3 runs each: osu_latency 64 KiB 11.2-15.7 µs by
// rendezvous, 4.8-5.0 in 128 KiB chunks; 128 KiB 12.9-19.4 against
// 6.9-7.6; osu_bw 128 KiB 16.5-18.0 against 26.2-31.7 GB/s; 64 KiB
// 14.7-17.0 against 11.3-15.3). When ranks outnumber cores the second
// copy of an eager message costs CPU that other ranks wait for: at 8
// ranks on 2 cores, 3 runs each, osu_alltoall 128 KiB took 1,243-1,451
// µs in 128 KiB chunks against 444-626 in 64 or 32 KiB ones, and
// osu_allgather 1,362-1,515 against 376-440; at 64 KiB the 64 KiB chunks
// gave allgather 117-126 µs against 127-383 and 185-209 (performance.md
// has the table). Total chunk memory stays at most 32 MiB up to 64
// ranks.
func ChunkSizeFor(n, cores int) int {
	switch {
	case n <= cores:
		return 4 * DefaultChunkSize
	case n <= 32:
		return 2 * DefaultChunkSize
	}
	return DefaultChunkSize
}

// DefaultLayout is the layout for n ranks on this machine's CPUs
// (DefaultLayoutFor).
func DefaultLayout(n int) Layout { return DefaultLayoutFor(n, runtime.NumCPU()) }

// DefaultLayoutFor is the layout for n ranks on cores CPUs. EnvChunkSize
// and EnvChunkCount, if set, override the chunk size and count.
func DefaultLayoutFor(n, cores int) Layout {
	l := Layout{Ranks: n, InboxSlots: DefaultInboxSlots, HSSlots: DefaultHSSlots,
		ChunkCount: DefaultChunkCount, ChunkSize: ChunkSizeFor(n, cores)}
	if v, err := strconv.Atoi(os.Getenv(EnvChunkSize)); err == nil && v >= 4096 && v%4096 == 0 {
		l.ChunkSize = v
	}
	if v, err := strconv.Atoi(os.Getenv(EnvChunkCount)); err == nil && v >= 1 && v <= 1024 {
		l.ChunkCount = v
	}
	return l
}

// Spec is the shm specification of a segment of this layout.
func (l Layout) Spec(cores int) shm.Spec {
	n := l.Ranks
	sp := shm.Spec{Ranks: n, Cores: cores}
	sp.Areas = make([]shm.AreaSpec, numAreas)
	sp.Areas[areaGlobal] = shm.AreaSpec{Count: 1, Stride: globalAreaSize}
	sp.Areas[areaCtl] = shm.AreaSpec{Count: n, Stride: CtlStride, Align: 512}
	sp.Areas[areaInbox] = shm.AreaSpec{Count: n, Stride: ring.Bytes(l.InboxSlots), Align: 128}
	sp.Areas[areaHS] = shm.AreaSpec{Count: n, Stride: l.HSSlots * HSStride}
	sp.Areas[areaChunkState] = shm.AreaSpec{Count: n, Stride: (l.ChunkCount*8 + 63) &^ 63}
	sp.Areas[areaChunks] = shm.AreaSpec{Count: n, Stride: l.ChunkCount * l.ChunkSize, Align: shm.PageSize}
	sp.Areas[areaContexts] = shm.AreaSpec{Count: MaxContexts, Stride: ctxRecordSize}
	sp.Areas[areaHolds] = shm.AreaSpec{Count: n, Stride: holdsSize}
	sp.Areas[areaLog] = shm.AreaSpec{Count: 1, Stride: (4*n + 63) &^ 63}
	sp.Areas[areaColl] = shm.AreaSpec{Count: MaxContexts, Stride: CollStride(n)}
	sp.Areas[areaAgree] = shm.AreaSpec{Count: MaxContexts, Stride: AgreeStride(n)}
	sp.Areas[areaScratch] = shm.AreaSpec{Count: ScratchSlots, Stride: n * ScratchMemberFor(n, cores), Align: shm.PageSize}
	sp.Params[paramInboxSlots] = uint64(l.InboxSlots)
	sp.Params[paramHSSlots] = uint64(l.HSSlots)
	sp.Params[paramChunkCount] = uint64(l.ChunkCount)
	sp.Params[paramChunkSize] = uint64(l.ChunkSize)
	sp.Params[paramWorld] = uint64(l.WorldSize())
	sp.Params[paramFirst] = uint64(l.First)
	sp.Params[paramLocal] = uint64(l.Local)
	return sp
}

// Check validates the layout.
func (l Layout) Check() error {
	if l.Ranks <= 0 || l.Ranks > ring.MaxProducer {
		return fmt.Errorf("job: bad rank count %d", l.Ranks)
	}
	if l.World < 0 || l.World > l.Ranks {
		return fmt.Errorf("job: a world of %d ranks in a universe of %d", l.World, l.Ranks)
	}
	if l.Local < 0 || l.First < 0 || l.Local > 0 && l.First+l.Local > l.WorldSize() {
		return fmt.Errorf("job: ranks %d to %d of a world of %d run here", l.First, l.First+l.Local-1, l.WorldSize())
	}
	if l.InboxSlots < 2 || l.InboxSlots&(l.InboxSlots-1) != 0 || l.HSSlots < 1 || l.HSSlots > 1<<16 ||
		l.ChunkCount < 1 || l.ChunkSize < 4096 || l.ChunkSize%shm.PageSize != 0 {
		return fmt.Errorf("job: bad layout %+v", l)
	}
	return nil
}

// WorldSize is the number of ranks of the first job's world.
func (l Layout) WorldSize() int {
	if l.World == 0 {
		return l.Ranks
	}
	return l.World
}

// NewSegment creates the shared segment for a job of l.Ranks ranks that
// runs on cores CPUs. Launchers (shmrun, ranktest, a node agent) call it,
// then pass Segment.File() and JobID to the ranks (see RankEnv).
func NewSegment(l Layout, cores int) (*shm.Segment, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	seg, err := shm.Create(l.Spec(cores))
	if err != nil {
		return nil, err
	}
	m := NewMap(seg)
	for r := range m.N {
		m.CB(r).ExitCode.Store(^uint32(0)) // exit code unknown
		m.CB(r).Detector.Store(^uint32(0))
	}
	m.initContexts()
	m.spawn.next.Store(uint32(l.WorldSize()))
	return seg, nil
}

// LayoutOf reads back the layout a segment was built with.
func LayoutOf(seg *shm.Segment) Layout {
	return Layout{
		Ranks:      seg.Ranks(),
		InboxSlots: int(seg.Param(paramInboxSlots)),
		HSSlots:    int(seg.Param(paramHSSlots)),
		ChunkCount: int(seg.Param(paramChunkCount)),
		ChunkSize:  int(seg.Param(paramChunkSize)),
		World:      int(seg.Param(paramWorld)),
		First:      int(seg.Param(paramFirst)),
		Local:      int(seg.Param(paramLocal)),
	}
}

// LocalRanks is the number of ranks that run on this node: Local, or the
// whole world when the world does not span nodes.
func (l Layout) LocalRanks() int {
	if l.Local == 0 {
		return l.WorldSize()
	}
	return l.Local
}

// Remote reports whether world rank r runs on another node (its slot
// here is a node agent's proxy).
func (l Layout) Remote(r int) bool {
	return l.Local != 0 && r < l.WorldSize() && (r < l.First || r >= l.First+l.Local)
}

// Map is a process's typed view of a job's segment: it answers "where is
// X of rank r" for every area, and holds the failure table's operations
// (table.go) and the context slots' (context.go).
type Map struct {
	Seg      *shm.Segment
	Layout   Layout
	N        int
	Epoch    *atomic.Uint64 // Global.epoch
	Starving *atomic.Uint32 // Global.starving
	abortRec *atomic.Uint64 // Global.abort (abort.go)
	spawn    *SpawnRec      // the spawn mailbox (spawn.go)

	ctl0, ctx0, holds0      uint64
	coll0, collStride       uint64
	log0                    uint64
	agree0, agreeStride     uint64
	scratch0, scratchStride uint64
	logLen                  *atomic.Uint32
	in0, inStride           uint64
	hs0, hsStride           uint64
	cst0, cstStride         uint64
	chunk0, chunkRankStride uint64
}

// NewMap maps seg's areas.
func NewMap(seg *shm.Segment) *Map {
	g := (*Global)(seg.Ptr(seg.Area(areaGlobal).Off))
	lay := LayoutOf(seg)
	in, hs, cst, cd := seg.Area(areaInbox), seg.Area(areaHS), seg.Area(areaChunkState), seg.Area(areaChunks)
	return &Map{
		Seg: seg, Layout: lay, N: seg.Ranks(),
		Epoch: &g.epoch, Starving: &g.starving, abortRec: &g.abort,
		ctl0: seg.Area(areaCtl).Off, ctx0: seg.Area(areaContexts).Off, holds0: seg.Area(areaHolds).Off,
		coll0: seg.Area(areaColl).Off, collStride: seg.Area(areaColl).Stride,
		log0: seg.Area(areaLog).Off, logLen: &g.logLen,
		agree0: seg.Area(areaAgree).Off, agreeStride: seg.Area(areaAgree).Stride,
		scratch0: seg.Area(areaScratch).Off, scratchStride: seg.Area(areaScratch).Stride,
		in0: in.Off, inStride: in.Stride,
		hs0: hs.Off, hsStride: hs.Stride,
		cst0: cst.Off, cstStride: cst.Stride,
		chunk0: cd.Off, chunkRankStride: cd.Stride,
		spawn: (*SpawnRec)(seg.Ptr(seg.Area(areaGlobal).Off + spawnOff)),
	}
}

// CollStride is the size of a context slot's collective lines: a header
// line, then one line per rank (the layout is package coll's).
func CollStride(n int) int { return 64 * (1 + n) }

// CollArea is the collective lines of context slot s.
func (m *Map) CollArea(s uint32) unsafe.Pointer { return m.Seg.Ptr(m.coll0 + uint64(s)*m.collStride) }

// AgreeStride is the size of a context slot's agreement records: two
// decision records (a 64-byte header and a bitmap of n bits, in whole
// lines), then a 64-byte line per rank (the layout is package ulfm's).
func AgreeStride(n int) int { return 2*(64+BitmapBytes(n)) + 64*n }

// BitmapBytes is the size of a bitmap of n bits, in whole cache lines.
func BitmapBytes(n int) int { return (n + 511) / 512 * 64 }

// AgreeArea is the agreement records of context slot s.
func (m *Map) AgreeArea(s uint32) unsafe.Pointer {
	return m.Seg.Ptr(m.agree0 + uint64(s)*m.agreeStride)
}

// The collectives' scratch: the context slots below ScratchSlots (the
// world, slot 0, and the lowest, which allocation reuses first) have
// ScratchMemberFor bytes per member, page-aligned, for medium-sized
// collectives (package coll lays them out: two halves a member). Tying it
// to the slot needs no allocation and every member knows at once whether
// a communicator has it; the bound keeps the segment linear in ranks.
const (
	ScratchSlots = 8
	// ScratchMember is a member's scratch in a job whose ranks outnumber
	// its cores or exceed ScratchBigRanks: 32 KiB a rank in all.
	ScratchMember = 4096
	// ScratchMemberBig is a member's scratch in a job of at most
	// ScratchBigRanks ranks that do not outnumber its cores (they spin):
	// there a phase of medium data through the scratch beats messages up
	// to 8 KiB a member (coll's staging; 128 KiB a rank in all, at most
	// 8 MiB).
	ScratchMemberBig = 16384
	ScratchBigRanks  = 64
)

// ScratchMemberFor is a member's scratch in a job of n ranks on cores
// CPUs (a rank alone stages nothing: its segment stays the unit of
// launch.SegmentCost).
func ScratchMemberFor(n, cores int) int {
	if n >= 2 && n <= cores && n <= ScratchBigRanks {
		return ScratchMemberBig
	}
	return ScratchMember
}

// ScratchMember is a member's scratch in this job's segment.
func (m *Map) ScratchMember() int { return int(m.scratchStride) / m.N }

// ScratchArea is context slot s's scratch, or nil if it has none.
func (m *Map) ScratchArea(s uint32) unsafe.Pointer {
	if s >= ScratchSlots {
		return nil
	}
	return m.Seg.Ptr(m.scratch0 + uint64(s)*m.scratchStride)
}

// CB is rank r's control block.
func (m *Map) CB(r int) *CtlBlock {
	return (*CtlBlock)(m.Seg.Ptr(m.ctl0 + uint64(r)*CtlStride))
}

// Inbox is where rank r's inbox ring lives, and its size.
func (m *Map) Inbox(r int) (unsafe.Pointer, int) {
	return m.Seg.Ptr(m.in0 + uint64(r)*m.inStride), int(m.inStride)
}

// HS is handshake slot k of rank r.
func (m *Map) HS(r, k int) unsafe.Pointer {
	return m.Seg.Ptr(m.hs0 + uint64(r)*m.hsStride + uint64(k)*HSStride)
}

// ChunkState is the owner word of rank r's eager chunk k: 0 when free,
// else 1 + the world rank the chunk's message is for.
func (m *Map) ChunkState(r, k int) *atomic.Uint64 {
	return m.Seg.U64(m.cst0 + uint64(r)*m.cstStride + uint64(k)*8)
}

// Chunk is rank r's eager chunk k.
func (m *Map) Chunk(r, k int) unsafe.Pointer {
	return m.Seg.Ptr(m.chunk0 + uint64(r)*m.chunkRankStride + uint64(k)*uint64(m.Layout.ChunkSize))
}

// Populate pre-faults, for writing, everything rank r writes and reads
// most: its control block, inbox, handshake slots and chunks.
func (m *Map) Populate(r int) {
	m.Seg.Populate(m.ctl0+uint64(r)*CtlStride, CtlStride)
	m.Seg.Populate(m.in0+uint64(r)*m.inStride, int(m.inStride))
	m.Seg.Populate(m.hs0+uint64(r)*m.hsStride, int(m.hsStride))
	m.Seg.Populate(m.cst0+uint64(r)*m.cstStride, int(m.cstStride))
	m.Seg.Populate(m.chunk0+uint64(r)*m.chunkRankStride, int(m.chunkRankStride))
}

// firstSlots is how many context slots, from the world's, a rank
// pre-faults the collective and agreement records of at Init
// (PopulateFirstSlots).
const firstSlots = 3

// PopulateFirstSlots pre-faults, for writing, the collective lines and
// agreement records of the first context slots (the world's, and those
// the first communicators made will take: AllocContext takes the lowest
// free one), rank r's part of their scratch and its holds, and for
// reading every rank's holds. Every member of a new communicator
// touches those pages at its first collective, and each first touch is
// a page fault of 2-5 µs here; at 64 ranks on 2 cores the first Dup and
// Allreduce took 3.3-6.0 ms against 1.2-1.5 ms for the fourth, with
// about 26 page faults a rank after Init, and a recovery's Agree and
// Shrink are often a program's first on its world and its first
// communicator. ulfm_recovery, 16 interleaved runs each (2026-11-27):
// 64 ranks 3,256 → 2,948 µs and 4,146 → 3,700; 16 ranks 1,120 → 1,043;
// 8 ranks 656 → 598. At 1,024 ranks it is 103 pages a rank, shared.
//
// The scratch part (a page a slot, 4 with ScratchMemberBig) is where a
// member stages its first collective of 25 B to half its part; the holds of
// every rank (16 a page) are read by each survivor of a failure
// (ReleaseAll). A trace of ulfm_recovery at 64 ranks found a fault a
// survivor at each (the benchmark's own max of its 7 phases is such a
// collective, and it ran while the last survivors were still in the
// measured allreduce); 30 interleaved runs each (2026-11-28): 3,082 →
// 2,504 µs, the allreduce phase 1,234 → 864.
func (m *Map) PopulateFirstSlots(r int) {
	for s := uint32(0); s < firstSlots; s++ {
		m.Seg.Populate(m.coll0+uint64(s)*m.collStride, int(m.collStride))
		m.Seg.Populate(m.agree0+uint64(s)*m.agreeStride, int(m.agreeStride))
		if s < ScratchSlots {
			per := m.scratchStride / uint64(m.N)
			m.Seg.Populate(m.scratch0+uint64(s)*m.scratchStride+uint64(r)*per, int(per))
		}
	}
	m.Seg.Populate(m.holds0+uint64(r)*holdsSize, holdsSize)
	m.Seg.PopulateRead(m.holds0, m.N*holdsSize)
}

// PopulateProxy is Populate for a node agent's proxy of rank r of
// another node: all but the chunks, which are most of a rank's pages and
// which a proxy uses only for the medium messages it hands to this
// node's ranks (they fault in on first use). An agent holds a proxy for
// every remote rank, and when its node is killed the kernel unmaps every
// page it mapped before anyone can learn of the death: with the chunks
// populated, an agent of 4 × 2 ranks mapped 6 MiB more of the segment,
// and its teardown took 7.2-10.4 ms (median 8.8) instead of 2.3-6.9
// (3.3), the node's recovery 13.1 ms instead of 9.4 (medians of 10
// kills each, interleaved, 2 cores, 2026-11-27).
func (m *Map) PopulateProxy(r int) {
	m.Seg.Populate(m.ctl0+uint64(r)*CtlStride, CtlStride)
	m.Seg.Populate(m.in0+uint64(r)*m.inStride, int(m.inStride))
	m.Seg.Populate(m.hs0+uint64(r)*m.hsStride, int(m.hsStride))
	m.Seg.Populate(m.cst0+uint64(r)*m.cstStride, int(m.cstStride))
}

// PopulateChunksRead pre-faults rank r's chunks for reading.
func (m *Map) PopulateChunksRead(r int) {
	m.Seg.PopulateRead(m.chunk0+uint64(r)*m.chunkRankStride, int(m.chunkRankStride))
}
