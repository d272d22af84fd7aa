package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func testSpec(dir string) Spec {
	return Spec{Ranks: 3, Cores: 2, Dir: dir,
		Params: [MaxParams]uint64{7, 8, 0, 1 << 63, 5, 6, 42, ^uint64(0)},
		Areas: []AreaSpec{
			{Count: 3, Stride: 256},
			{Count: 2, Stride: 8192, Align: PageSize},
			{Count: 0, Stride: 64},
			{Count: 5, Stride: 8, Align: 128},
		}}
}

// sameLayout checks that b describes the same segment as a.
func sameLayout(t *testing.T, a, b *Segment, nAreas int) {
	t.Helper()
	if a.JobID() != b.JobID() || a.Ranks() != b.Ranks() || a.Cores() != b.Cores() || a.Size() != b.Size() {
		t.Fatalf("attached view differs: job %x/%x ranks %d/%d cores %d/%d size %d/%d",
			a.JobID(), b.JobID(), a.Ranks(), b.Ranks(), a.Cores(), b.Cores(), a.Size(), b.Size())
	}
	for i := range nAreas {
		if a.Area(i) != b.Area(i) {
			t.Fatalf("area %d: %+v, attached %+v", i, a.Area(i), b.Area(i))
		}
	}
	for i := range MaxParams {
		if a.Param(i) != b.Param(i) {
			t.Fatalf("param %d: %d, attached %d", i, a.Param(i), b.Param(i))
		}
	}
}

func TestCreateLayout(t *testing.T) {
	spec := testSpec(t.TempDir())
	seg := mustCreate(t, spec)
	if seg.Ranks() != 3 || seg.Cores() != 2 || seg.JobID() == 0 || seg.JobID()&1 == 0 {
		t.Fatalf("ranks %d cores %d job %x", seg.Ranks(), seg.Cores(), seg.JobID())
	}
	if seg.Size()%PageSize != 0 {
		t.Fatalf("size %d is not a page multiple", seg.Size())
	}
	for i := range MaxParams {
		if seg.Param(i) != spec.Params[i] {
			t.Fatalf("param %d = %d, want %d", i, seg.Param(i), spec.Params[i])
		}
	}
	end := uint64(HeaderSize)
	for i, as := range spec.Areas {
		a := seg.Area(i)
		align := uint64(max(as.Align, CacheLine))
		if a.Off%align != 0 || a.Off < end || a.Stride != uint64(as.Stride) || a.Count != uint64(as.Count) {
			t.Fatalf("area %d = %+v for %+v (previous area ends at %d)", i, a, as, end)
		}
		end = a.Off + a.Stride*a.Count
	}
	if end > uint64(seg.Size()) || uint64(seg.Size())-end >= PageSize {
		t.Fatalf("areas end at %d, segment is %d bytes", end, seg.Size())
	}
	// The memory is zeroed and writable to the last byte.
	b := seg.Bytes(HeaderSize, seg.Size()-HeaderSize)
	for i, v := range b {
		if v != 0 {
			t.Fatalf("byte %d of a new segment is %d", HeaderSize+i, v)
		}
	}
	b[len(b)-1] = 1

	// Cores below 1 become 1.
	one := mustCreate(t, Spec{Ranks: 1, Dir: t.TempDir()})
	if one.Cores() != 1 || one.Size() != HeaderSize {
		t.Fatalf("minimal segment: cores %d size %d", one.Cores(), one.Size())
	}
}

func TestCreateRejectsBadSpecs(t *testing.T) {
	dir := t.TempDir()
	for _, s := range []Spec{
		{Ranks: 0},
		{Ranks: -1},
		{Ranks: 1<<20 + 1},
		{Ranks: 1, Areas: make([]AreaSpec, MaxAreas+1)},
		{Ranks: 1, Areas: []AreaSpec{{Count: 1, Stride: 64, Align: 96}}},
		{Ranks: 1, Areas: []AreaSpec{{Count: 1, Stride: 12}}},
		{Ranks: 1, Areas: []AreaSpec{{Count: -1, Stride: 64}}},
		{Ranks: 1, Areas: []AreaSpec{{Count: 1, Stride: -64}}},
		{Ranks: 1, Dir: filepath.Join(dir, "missing")},
	} {
		if s.Dir == "" {
			s.Dir = dir
		}
		seg, err := Create(s)
		if err == nil {
			seg.Close()
			t.Errorf("Create(%+v) succeeded", s)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("refused Creates left %v", left)
	}
}

// Create unlinks the file at once: nothing is left in its directory, in
// /dev/shm included, while the segment lives.
func TestCreateLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	seg := mustCreate(t, testSpec(dir))
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Fatalf("Create left %v (%v) in %s", left, err, dir)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(seg.File().Fd()), &st); err != nil || st.Nlink != 0 {
		t.Fatalf("segment file has %d links (%v)", st.Nlink, err)
	}
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	prefix := fmt.Sprintf("/dev/shm/shmpi-%d-*", os.Getpid())
	seg2 := mustCreate(t, Spec{Ranks: 2, Areas: []AreaSpec{{Count: 4, Stride: 64}}})
	if left, _ := filepath.Glob(prefix); len(left) != 0 {
		t.Fatalf("Create left %v in /dev/shm", left)
	}
	seg2.U64(seg2.Area(0).Off).Store(1) // the unlinked mapping works
}

// Create, then attach by inherited descriptor and by path: both views
// describe the same segment and share its memory.
func TestCreateAttachRoundTrip(t *testing.T) {
	spec := testSpec(t.TempDir())
	seg := mustCreate(t, spec)

	byFD, err := AttachFD(dupFD(t, seg.File()), seg.JobID())
	if err != nil {
		t.Fatal(err)
	}
	defer byFD.Close()
	sameLayout(t, seg, byFD, len(spec.Areas))

	// The file is unlinked; /proc/self/fd still opens it by path.
	path := fmt.Sprintf("/proc/self/fd/%d", seg.File().Fd())
	byPath, err := AttachFile(path, seg.JobID())
	if err != nil {
		t.Fatal(err)
	}
	defer byPath.Close()
	sameLayout(t, seg, byPath, len(spec.Areas))

	// Job 0 accepts any job.
	any, err := AttachFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	any.Close()

	// Three mappings, one memory.
	off := seg.Area(1).Off + 8192 + 64
	seg.U64(off).Store(0x1122334455667788)
	if v := byFD.U64(off).Load(); v != 0x1122334455667788 {
		t.Fatalf("attached view reads %#x", v)
	}
	byPath.U32(off + 8).Store(99)
	if v := seg.U32(off + 8).Load(); v != 99 {
		t.Fatalf("creator reads %d", v)
	}
	if seg.Ptr(off) == byFD.Ptr(off) {
		t.Fatal("two attaches share one mapping")
	}
	last := seg.Bytes(uint64(seg.Size()-8), 8)
	copy(last, "lastword")
	if string(byPath.Bytes(uint64(byPath.Size()-8), 8)) != "lastword" {
		t.Fatal("last bytes not shared")
	}
}

func TestSegmentAccessorsCheckBounds(t *testing.T) {
	seg := mustCreate(t, testSpec(t.TempDir()))
	size := uint64(seg.Size())
	for name, f := range map[string]func(){
		"Area(-1)":           func() { seg.Area(-1) },
		"Area(NAreas)":       func() { seg.Area(4) },
		"Ptr(Size)":          func() { seg.Ptr(size) },
		"Bytes past the end": func() { seg.Bytes(size-8, 16) },
		"U64 misaligned":     func() { seg.U64(HeaderSize + 4) },
		"U32 misaligned":     func() { seg.U32(HeaderSize + 2) },
		"U64 past the end":   func() { seg.U64(size) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
	if b := seg.Bytes(size-8, 8); len(b) != 8 || cap(b) != 8 {
		t.Fatalf("Bytes: len %d cap %d", len(b), cap(b))
	}
	// Populate is best effort and clamps to the segment.
	seg.U64(HeaderSize).Store(5)
	seg.Populate(0, seg.Size())
	seg.Populate(size-1, 3*PageSize)
	seg.Populate(size, 10)
	seg.Populate(HeaderSize, 0)
	if seg.U64(HeaderSize).Load() != 5 {
		t.Fatal("Populate changed the memory")
	}
}

// image returns a copy of the bytes of a real, live segment (its creator
// is this process) and its job id.
func image(t *testing.T) ([]byte, uint64) {
	t.Helper()
	seg, err := Create(testSpec(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	return append([]byte(nil), seg.Bytes(0, seg.Size())...), seg.JobID()
}

func writeFile(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "segment")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// reseal recomputes the header checksum of an image, as a writer of a
// wrong but consistent header would.
func reseal(b []byte) {
	h := (*header)(unsafePointer(b))
	h.Checksum = checksum(h)
}

func expectRefused(t *testing.T, b []byte, job uint64, want error) {
	t.Helper()
	s, err := AttachFile(writeFile(t, b), job)
	if err == nil {
		s.Close()
		t.Fatalf("attached; want %v", want)
	}
	if !errors.Is(err, want) || !errors.Is(err, ErrSegment) {
		t.Fatalf("error %q, want %v", err, want)
	}
}

func TestAttachRefusals(t *testing.T) {
	img, job := image(t)
	// The pristine image attaches: the refusals below are the patches'.
	s, err := AttachFile(writeFile(t, img), job)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	patched := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), img...)) }
	le32 := binary.LittleEndian.PutUint32
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3*PageSize)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := []byte(strings.Repeat("not a segment at all\n", 400))
	// A process that has come and gone: its pid is (for the moment) free.
	reaped := exec.Command(os.Args[0], "-test.run=^$")
	if err := reaped.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := uint32(reaped.Process.Pid)
	cases := []struct {
		name string
		b    func() []byte
		job  uint64
		want error
	}{
		{"random", func() []byte { return random }, job, ErrForeignSegment},
		{"text", func() []byte { return text }, job, ErrForeignSegment},
		{"empty", func() []byte { return nil }, job, ErrForeignSegment},
		{"tiny", func() []byte { return img[:100] }, job, ErrForeignSegment},
		{"one-short-of-a-header", func() []byte { return img[:HeaderSize-1] }, job, ErrForeignSegment},
		{"magic", func() []byte { return patched(func(b []byte) []byte { b[3] ^= 0x20; return b }) }, job, ErrForeignSegment},
		{"wrong-job", func() []byte { return img }, job ^ 0x100, ErrForeignSegment},
		{"version+1", func() []byte { return patched(func(b []byte) []byte { le32(b[8:], Version+1); return b }) }, job, ErrSegmentVersion},
		{"version-1", func() []byte { return patched(func(b []byte) []byte { le32(b[8:], Version-1); return b }) }, job, ErrSegmentVersion},
		{"header-only", func() []byte { return img[:HeaderSize] }, job, ErrSegmentCorrupt},
		{"grown", func() []byte { return append(append([]byte(nil), img...), make([]byte, PageSize)...) }, job, ErrSegmentCorrupt},
		{"truncated", func() []byte { return img[:len(img)-PageSize] }, job, ErrSegmentCorrupt},
		{"resealed-bad-header-size", func() []byte {
			return patched(func(b []byte) []byte { le32(b[12:], 8192); reseal(b); return b })
		}, job, ErrSegmentCorrupt},
		{"resealed-no-ranks", func() []byte {
			return patched(func(b []byte) []byte { le32(b[32:], 0); reseal(b); return b })
		}, job, ErrSegmentCorrupt},
		{"resealed-too-many-areas", func() []byte {
			return patched(func(b []byte) []byte { le32(b[40:], MaxAreas+1); reseal(b); return b })
		}, job, ErrSegmentCorrupt},
		{"resealed-area-out-of-bounds", func() []byte {
			return patched(func(b []byte) []byte {
				binary.LittleEndian.PutUint64(b[48+24+16:], 1<<20) // area 1 count
				reseal(b)
				return b
			})
		}, job, ErrSegmentCorrupt},
		{"resealed-area-in-header", func() []byte {
			return patched(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[48:], 64); reseal(b); return b })
		}, job, ErrSegmentCorrupt},
		{"never-ready", func() []byte { return patched(func(b []byte) []byte { le32(b[448:], StateInit); return b }) }, job, ErrStaleSegment},
		{"closed", func() []byte { return patched(func(b []byte) []byte { le32(b[448:], StateClosed); return b }) }, job, ErrStaleSegment},
		{"unknown-state", func() []byte { return patched(func(b []byte) []byte { le32(b[448:], 9); return b }) }, job, ErrStaleSegment},
		{"dead-creator", func() []byte {
			return patched(func(b []byte) []byte { le32(b[44:], deadPID); reseal(b); return b })
		}, job, ErrStaleSegment},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { expectRefused(t, tc.b(), tc.job, tc.want) })
	}
}

// Any change to a byte of the checksummed range after the magic and the
// version is a corrupt header.
func TestAttachRefusesEveryCorruptHeaderByte(t *testing.T) {
	img, job := image(t)
	p := writeFile(t, img)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	poke := func(off int, v byte) {
		if _, err := f.WriteAt([]byte{v}, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	for off := 12; off < int(checksumOff)+8; off++ {
		poke(off, img[off]^1<<(off%8))
		s, err := AttachFile(p, job)
		poke(off, img[off])
		if err == nil {
			s.Close()
			t.Fatalf("byte %d flipped: attached", off)
		}
		if !errors.Is(err, ErrSegmentCorrupt) {
			t.Fatalf("byte %d flipped: %v, want ErrSegmentCorrupt", off, err)
		}
	}
	// Bytes outside the checksum (padding) do not matter.
	poke(420, 0xff)
	s, err := AttachFile(p, job)
	if err != nil {
		t.Fatalf("padding byte changed: %v", err)
	}
	s.Close()
}

// MarkClosed on a live segment: views already attached keep working, new
// attaches are refused as stale.
func TestMarkClosed(t *testing.T) {
	seg := mustCreate(t, testSpec(t.TempDir()))
	early, err := AttachFD(dupFD(t, seg.File()), seg.JobID())
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()
	seg.MarkClosed()
	fd := dupFD(t, seg.File())
	s, err := AttachFD(fd, seg.JobID())
	if err == nil {
		s.Close()
		t.Fatal("attached a closed segment")
	}
	if !errors.Is(err, ErrStaleSegment) {
		t.Fatalf("error %v, want ErrStaleSegment", err)
	}
	// The refused descriptor was the attach's to close.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Fatalf("refused AttachFD left fd %d open (%v)", fd, err)
	}
	path := fmt.Sprintf("/proc/self/fd/%d", seg.File().Fd())
	if _, err := AttachFile(path, seg.JobID()); !errors.Is(err, ErrStaleSegment) {
		t.Fatalf("AttachFile: %v, want ErrStaleSegment", err)
	}
	early.U64(HeaderSize).Store(3)
	if seg.U64(HeaderSize).Load() != 3 {
		t.Fatal("an attached view stopped sharing memory")
	}
}

func TestAttachBadDescriptors(t *testing.T) {
	if _, err := AttachFD(-1, 0); err == nil {
		t.Fatal("AttachFD(-1) succeeded")
	}
	if _, err := AttachFile(filepath.Join(t.TempDir(), "none"), 0); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("AttachFile of a missing file: %v", err)
	}
	// A directory is not a segment.
	if s, err := AttachFile(t.TempDir(), 0); err == nil {
		s.Close()
		t.Fatal("attached a directory")
	}
}
