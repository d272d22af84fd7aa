// Package shm owns the shared segment: a /dev/shm file mapped MAP_SHARED
// by every rank of a job, its self-describing header, typed atomic views
// of shared words, cross-process futexes and the robust-futex liveness
// word. It knows nothing of ranks or messages: the layer above describes
// its areas and shm places, checks and maps them.
package shm

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"unsafe"

	mmap "github.com/edsrzf/mmap-go"
	"golang.org/x/sys/unix"
)

// Magic opens every shmpi segment; Version is the layout version. A
// segment written by another layout version is refused at attach.
const (
	Magic   = "SHMPISEG"
	Version = 15 // 15: 2,048 context slots (internal/job)

	// HeaderSize is the size of the header page at offset 0.
	HeaderSize = 4096
	// MaxAreas is the number of area descriptors the header holds.
	MaxAreas = 12
	// MaxParams is the number of layout parameters the header holds.
	MaxParams = 8
	// CacheLine is the unit of alignment for shared words that different
	// processes write; cpuid confirms 64 on this machine kind.
	CacheLine = 64
	// PageSize is the unit the kernel maps and faults.
	PageSize = 4096
)

// Errors from attaching to a segment. Each wraps ErrSegment.
var (
	ErrSegment        = errors.New("shm: bad segment")
	ErrForeignSegment = fmt.Errorf("%w: not a segment of this job", ErrSegment)
	ErrSegmentVersion = fmt.Errorf("%w: layout version mismatch", ErrSegment)
	ErrSegmentCorrupt = fmt.Errorf("%w: corrupt header", ErrSegment)
	ErrStaleSegment   = fmt.Errorf("%w: stale (its job has ended)", ErrSegment)
)

// Segment states stored in the header's mutable State word.
const (
	StateInit   = 0 // being laid out by its creator
	StateReady  = 1 // ranks may attach
	StateClosed = 2 // the job is over; attaching is refused
)

// Area describes one array of fixed-stride records in the segment.
// Layout (24 bytes, 8-byte aligned):
//
//	+0  Off    uint64  byte offset of record 0 from the segment start
//	+8  Stride uint64  bytes from one record to the next
//	+16 Count  uint64  number of records
type Area struct {
	Off    uint64
	Stride uint64
	Count  uint64
}

// header is the first page of every segment. Layout (4096 bytes, the
// mapping is page aligned so every field is naturally aligned):
//
//	+0    Magic      [8]byte  "SHMPISEG"
//	+8    Version    uint32   layout version
//	+12   HeaderSize uint32   4096
//	+16   TotalSize  uint64   bytes in the file (page multiple)
//	+24   JobID      uint64   random nonce; ranks check it against SHMPI_JOB
//	+32   Ranks      uint32   ranks in the job
//	+36   Cores      uint32   CPUs the job may use (picks spin or sleep)
//	+40   NAreas     uint32   areas in use
//	+44   CreatorPID uint32   pid of the process that made the segment
//	+48   Areas      [12]Area 288 bytes
//	+336  Params     [8]uint64 layout parameters of the layer above
//	+400  Checksum   uint64   FNV-1a over bytes [0, 400)
//	+408  (pad)
//	+448  State      uint32   mutable: StateInit/Ready/Closed (not summed)
//	+452  (pad to 4096)
type header struct {
	Magic      [8]byte
	Version    uint32
	HeaderSize uint32
	TotalSize  uint64
	JobID      uint64
	Ranks      uint32
	Cores      uint32
	NAreas     uint32
	CreatorPID uint32
	Areas      [MaxAreas]Area
	Params     [MaxParams]uint64
	Checksum   uint64
	_          [5]uint64
	State      atomic.Uint32
}

const checksumOff = unsafe.Offsetof(header{}.Checksum)

func init() {
	// The documented offsets are the contract with other processes.
	if checksumOff != 400 || unsafe.Offsetof(header{}.State) != 448 || unsafe.Sizeof(header{}) > HeaderSize {
		panic("shm: header layout drifted from its documentation")
	}
}

// AreaSpec asks for Count records of Stride bytes, the first aligned to
// Align (a power of two, at least CacheLine).
type AreaSpec struct {
	Count  int
	Stride int
	Align  int
}

// Spec describes a segment to create.
type Spec struct {
	Ranks int
	Cores int
	Areas []AreaSpec
	// Params are stored in the header, covered by its checksum.
	Params [MaxParams]uint64
	// Dir is where the file is made; /dev/shm when empty.
	Dir string
}

// Segment is one process's mapping of a job's shared segment.
type Segment struct {
	file *os.File
	mem  mmap.MMap
	base unsafe.Pointer
	hdr  *header
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }

// maxSegment bounds a segment's size (1 TiB): far above any job, far
// below where offsets could overflow.
const maxSegment = 1 << 40

// areaOverflows reports whether count records of stride bytes from off
// would run past the end of the address space.
func areaOverflows(off, stride, count uint64) bool {
	return stride != 0 && count > (math.MaxUint64-off)/stride
}

func checksum(h *header) uint64 {
	f := fnv.New64a()
	f.Write(unsafe.Slice((*byte)(unsafe.Pointer(h)), checksumOff))
	return f.Sum64()
}

// Size is the size in bytes of a segment made from spec (without making
// it), or the error Create would give for spec.
func (spec Spec) Size() (uint64, error) {
	_, total, err := spec.plan()
	return total, err
}

// plan places spec's areas and sizes the segment.
func (spec Spec) plan() ([MaxAreas]Area, uint64, error) {
	var areas [MaxAreas]Area
	if spec.Ranks <= 0 || spec.Ranks > 1<<20 {
		return areas, 0, fmt.Errorf("shm: bad rank count %d", spec.Ranks)
	}
	if len(spec.Areas) > MaxAreas {
		return areas, 0, fmt.Errorf("shm: %d areas, at most %d", len(spec.Areas), MaxAreas)
	}
	off := uint64(HeaderSize)
	for i, a := range spec.Areas {
		al := uint64(a.Align)
		if al < CacheLine {
			al = CacheLine
		}
		if al&(al-1) != 0 || a.Count < 0 || a.Stride < 0 || a.Stride%8 != 0 {
			return areas, 0, fmt.Errorf("shm: bad area spec %+v", a)
		}
		off = alignUp(off, al)
		if areaOverflows(off, uint64(a.Stride), uint64(a.Count)) || off+uint64(a.Stride)*uint64(a.Count) > maxSegment {
			return areas, 0, fmt.Errorf("shm: area %d (%d records of %d bytes) is too large", i, a.Count, a.Stride)
		}
		areas[i] = Area{Off: off, Stride: uint64(a.Stride), Count: uint64(a.Count)}
		off += uint64(a.Stride) * uint64(a.Count)
	}
	return areas, alignUp(off, PageSize), nil
}

// Create makes, sizes and maps a new segment file, writes its header and
// unlinks the file at once, so that nothing is left in /dev/shm whatever
// happens to the job. The open file stays valid: pass Segment.File() to
// the ranks as an inherited descriptor.
func Create(spec Spec) (*Segment, error) {
	areas, total, err := spec.plan()
	if err != nil {
		return nil, err
	}

	dir := spec.Dir
	if dir == "" {
		dir = "/dev/shm"
	}
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	job := binary.LittleEndian.Uint64(nonce[:]) | 1 // never 0: 0 means "any job"
	name := filepath.Join(dir, fmt.Sprintf("shmpi-%d-%016x", os.Getpid(), job))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("shm: create segment: %w", err)
	}
	// Unlink first: from here on nothing can leak a file, even SIGKILL.
	os.Remove(name)
	if err := f.Truncate(int64(total)); err != nil {
		f.Close()
		return nil, fmt.Errorf("shm: size segment to %d bytes: %w", total, err)
	}
	s, err := mapFile(f, int(total))
	if err != nil {
		f.Close()
		return nil, err
	}
	h := s.hdr
	copy(h.Magic[:], Magic)
	h.Version = Version
	h.HeaderSize = HeaderSize
	h.TotalSize = total
	h.JobID = job
	h.Ranks = uint32(spec.Ranks)
	h.Cores = uint32(max(spec.Cores, 1))
	h.NAreas = uint32(len(spec.Areas))
	h.CreatorPID = uint32(os.Getpid())
	h.Areas = areas
	h.Params = spec.Params
	h.Checksum = checksum(h)
	h.State.Store(StateReady)
	return s, nil
}

func mapFile(f *os.File, size int) (*Segment, error) {
	m, err := mmap.MapRegion(f, size, mmap.RDWR, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: map segment: %w", err)
	}
	s := &Segment{file: f, mem: m, base: unsafe.Pointer(&m[0])}
	s.hdr = (*header)(s.base)
	return s, nil
}

// AttachFD maps the segment open on fd and checks that it is a shmpi
// segment of this layout version, intact, of job jobID (0 accepts any)
// and still live. The fd is owned by the returned Segment.
func AttachFD(fd int, jobID uint64) (*Segment, error) {
	f := os.NewFile(uintptr(fd), "shmpi-segment")
	if f == nil {
		return nil, fmt.Errorf("shm: segment fd %d is not open", fd)
	}
	s, err := attach(f, jobID)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// AttachFile opens a segment file by path (a node agent that keeps the
// file linked, or a tool inspecting one) and checks it as AttachFD does.
func AttachFile(path string, jobID uint64) (*Segment, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: open segment: %w", err)
	}
	s, err := attach(f, jobID)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func attach(f *os.File, jobID uint64) (*Segment, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shm: stat segment: %w", err)
	}
	size := st.Size()
	if size < HeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, smaller than a header", ErrForeignSegment, size)
	}
	s, err := mapFile(f, int(size))
	if err != nil {
		return nil, err
	}
	if err := s.validate(uint64(size), jobID); err != nil {
		s.mem.Unmap()
		return nil, err
	}
	return s, nil
}

func (s *Segment) validate(size, jobID uint64) error {
	h := s.hdr
	if string(h.Magic[:]) != Magic {
		return fmt.Errorf("%w: magic %q", ErrForeignSegment, h.Magic[:])
	}
	if h.Version != Version {
		return fmt.Errorf("%w: segment has version %d, this program reads %d", ErrSegmentVersion, h.Version, Version)
	}
	if h.HeaderSize != HeaderSize || checksum(h) != h.Checksum {
		return fmt.Errorf("%w: checksum mismatch", ErrSegmentCorrupt)
	}
	if h.TotalSize != size {
		return fmt.Errorf("%w: header says %d bytes, file has %d", ErrSegmentCorrupt, h.TotalSize, size)
	}
	if h.NAreas > MaxAreas || h.Ranks == 0 {
		return fmt.Errorf("%w: %d areas, %d ranks", ErrSegmentCorrupt, h.NAreas, h.Ranks)
	}
	for i := range h.NAreas {
		a := h.Areas[i]
		end := a.Off + a.Stride*a.Count
		if a.Off < HeaderSize || a.Off%CacheLine != 0 || areaOverflows(a.Off, a.Stride, a.Count) || end > size {
			return fmt.Errorf("%w: area %d out of bounds", ErrSegmentCorrupt, i)
		}
	}
	if jobID != 0 && h.JobID != jobID {
		return fmt.Errorf("%w: job %016x, expected %016x", ErrForeignSegment, h.JobID, jobID)
	}
	switch h.State.Load() {
	case StateReady:
	case StateClosed:
		return fmt.Errorf("%w: job %016x was closed", ErrStaleSegment, h.JobID)
	default:
		return fmt.Errorf("%w: job %016x never became ready", ErrStaleSegment, h.JobID)
	}
	if pid := int(h.CreatorPID); pid > 0 && unix.Kill(pid, 0) == unix.ESRCH {
		return fmt.Errorf("%w: its creator (pid %d) is gone", ErrStaleSegment, pid)
	}
	return nil
}

// File is the open segment file, for passing to child processes.
func (s *Segment) File() *os.File { return s.file }

// JobID is the job's random nonce.
func (s *Segment) JobID() uint64 { return s.hdr.JobID }

// Ranks is the number of ranks the segment was laid out for.
func (s *Segment) Ranks() int { return int(s.hdr.Ranks) }

// Cores is the number of CPUs the job runs on.
func (s *Segment) Cores() int { return int(s.hdr.Cores) }

// Size is the segment's size in bytes.
func (s *Segment) Size() int { return len(s.mem) }

// Area returns area i's placement.
func (s *Segment) Area(i int) Area {
	if i < 0 || i >= int(s.hdr.NAreas) {
		panic(fmt.Sprintf("shm: area %d of %d", i, s.hdr.NAreas))
	}
	return s.hdr.Areas[i]
}

// Param returns layout parameter i.
func (s *Segment) Param(i int) uint64 { return s.hdr.Params[i] }

// MarkClosed records that the job is over; later attaches are refused.
func (s *Segment) MarkClosed() { s.hdr.State.Store(StateClosed) }

// Ptr returns the address of byte off of the mapping.
func (s *Segment) Ptr(off uint64) unsafe.Pointer {
	if off >= uint64(len(s.mem)) {
		panic(fmt.Sprintf("shm: offset %d beyond segment of %d bytes", off, len(s.mem)))
	}
	return unsafe.Add(s.base, off)
}

// Bytes returns n bytes of the mapping from off.
func (s *Segment) Bytes(off uint64, n int) []byte {
	if off+uint64(n) > uint64(len(s.mem)) {
		panic(fmt.Sprintf("shm: range [%d,+%d) beyond segment", off, n))
	}
	return s.mem[off : off+uint64(n) : off+uint64(n)]
}

// U32 views the 4-byte-aligned shared word at off as an atomic.
func (s *Segment) U32(off uint64) *atomic.Uint32 {
	if off%4 != 0 {
		panic(fmt.Sprintf("shm: misaligned uint32 at %d", off))
	}
	return (*atomic.Uint32)(s.Ptr(off))
}

// U64 views the 8-byte-aligned shared word at off as an atomic.
func (s *Segment) U64(off uint64) *atomic.Uint64 {
	if off%8 != 0 {
		panic(fmt.Sprintf("shm: misaligned uint64 at %d", off))
	}
	return (*atomic.Uint64)(s.Ptr(off))
}

// Populate pre-faults [off, off+n) for writing, so that the first message
// through it does not pay a page fault a page (shm_limits measures one). It rounds to pages and is best
// effort: kernels without MADV_POPULATE_WRITE just fault later.
func (s *Segment) Populate(off uint64, n int) {
	start := off &^ (PageSize - 1)
	end := alignUp(off+uint64(n), PageSize)
	if end > uint64(len(s.mem)) {
		end = uint64(len(s.mem))
	}
	if end <= start {
		return
	}
	unix.Madvise(s.mem[start:end], unix.MADV_POPULATE_WRITE)
}

// PopulateRead pre-faults [off, off+n) for reading (a peer's memory this
// process will read often), best effort like Populate.
func (s *Segment) PopulateRead(off uint64, n int) {
	start := off &^ (PageSize - 1)
	end := min(alignUp(off+uint64(n), PageSize), uint64(len(s.mem)))
	if end > start {
		unix.Madvise(s.mem[start:end], unix.MADV_POPULATE_READ)
	}
}

// Close unmaps the segment and closes its file.
func (s *Segment) Close() error {
	err := s.mem.Unmap()
	if cerr := s.file.Close(); err == nil {
		err = cerr
	}
	return err
}
