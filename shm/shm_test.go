package shm

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ---- segments ----

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

func mustCreate(t *testing.T, spec Spec) *Segment {
	t.Helper()
	seg, err := Create(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seg.Close() })
	return seg
}

func dupFD(t *testing.T, f *os.File) int {
	t.Helper()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fd
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

// ---- futexes ----

// futexWords returns n words, a cache line each, in a fresh segment: the
// shared memory futexes are for. (Not Go variables: a goroutine's stack
// moves, and a word on it would move away from a thread asleep on its
// old address.)
func futexWords(t *testing.T, n int) []*atomic.Uint32 {
	t.Helper()
	seg := mustCreate(t, Spec{Ranks: 1, Dir: t.TempDir(), Areas: []AreaSpec{{Count: n, Stride: CacheLine}}})
	ws := make([]*atomic.Uint32, n)
	for i := range ws {
		ws[i] = seg.U32(seg.Area(0).Off + uint64(i)*CacheLine)
	}
	return ws
}

// onThread runs f on a goroutine locked to its own thread and returns
// that thread's id and a channel closed when f returns.
func onThread(f func()) (int, <-chan struct{}) {
	tid := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		f()
		close(done)
	}()
	return <-tid, done
}

// asleep reports whether thread tid of this process is blocked in
// syscall nr with first argument addr (addr 0: any).
func asleep(tid int, nr uintptr, addr unsafe.Pointer) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", tid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return false // "running"
	}
	n, _ := strconv.ParseUint(f[0], 10, 64)
	a, _ := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
	return uintptr(n) == nr && (addr == nil || uintptr(a) == uintptr(addr))
}

// waitAsleep waits until thread tid blocks in syscall nr on addr. It is a
// poll with a deadline: what the test then asserts does not depend on
// how long it took.
func waitAsleep(t *testing.T, tid int, nr uintptr, addr unsafe.Pointer, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !asleep(tid, nr, addr) {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", tid))
			t.Fatalf("%s (thread %d) never went to sleep on %p: its syscall is %q", what, tid, addr, strings.TrimSpace(string(b)))
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10s", what)
	}
}

func requireProcSyscall(t *testing.T) {
	t.Helper()
	if _, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/syscall", unix.Gettid())); err != nil {
		t.Skip("no /proc/<pid>/task/<tid>/syscall:", err)
	}
}

func TestFutexWakeWithoutSleepers(t *testing.T) {
	w := futexWords(t, 1)[0]
	for _, n := range []int{1, 10, 1 << 30} {
		if got := FutexWake(w, n); got != 0 {
			t.Fatalf("FutexWake(%d) with nobody asleep woke %d", n, got)
		}
	}
}

// A value other than the expected one returns at once.
func TestFutexWaitValueMismatch(t *testing.T) {
	w := futexWords(t, 1)[0]
	w.Store(5)
	_, done := onThread(func() { FutexWait(w, 4, time.Minute) })
	waitDone(t, done, "FutexWait on a word that does not hold the expected value")
}

func TestFutexWaitTimeout(t *testing.T) {
	w := futexWords(t, 1)[0]
	const timeout = 50 * time.Millisecond
	start := time.Now()
	_, done := onThread(func() { FutexWait(w, 0, timeout) })
	waitDone(t, done, "FutexWait with a 50ms timeout")
	if el := time.Since(start); el < timeout*9/10 {
		t.Fatalf("FutexWait with a %v timeout returned after %v", timeout, el)
	}
}

// A sleeper (no timeout) is woken by FutexWake, which reports it.
func TestFutexWakeWakesSleeper(t *testing.T) {
	requireProcSyscall(t)
	w := futexWords(t, 1)[0]
	tid, done := onThread(func() { FutexWait(w, 0, 0) })
	waitAsleep(t, tid, unix.SYS_FUTEX, unsafe.Pointer(w), "FutexWait")
	if n := FutexWake(w, 1); n != 1 {
		t.Fatalf("FutexWake woke %d, want 1", n)
	}
	waitDone(t, done, "a woken FutexWait")
}

// FutexWake wakes at most n sleepers.
func TestFutexWakeCount(t *testing.T) {
	requireProcSyscall(t)
	w := futexWords(t, 1)[0]
	var dones []<-chan struct{}
	for i := range 3 {
		tid, done := onThread(func() { FutexWait(w, 0, 0) })
		waitAsleep(t, tid, unix.SYS_FUTEX, unsafe.Pointer(w), fmt.Sprintf("sleeper %d", i))
		dones = append(dones, done)
	}
	if n := FutexWake(w, 2); n != 2 {
		t.Fatalf("FutexWake(2) with 3 asleep woke %d", n)
	}
	if n := FutexWake(w, 10); n != 1 {
		t.Fatalf("FutexWake(10) with 1 left asleep woke %d", n)
	}
	for i, d := range dones {
		waitDone(t, d, fmt.Sprintf("sleeper %d", i))
	}
}

// The futexes are shared, not process-private: a sleeper on one mapping
// of the segment is woken through another mapping of the same word, at
// another address (as in another process).
func TestFutexAcrossMappings(t *testing.T) {
	requireProcSyscall(t)
	seg := mustCreate(t, Spec{Ranks: 1, Dir: t.TempDir(), Areas: []AreaSpec{{Count: 1, Stride: 64}}})
	other, err := AttachFD(dupFD(t, seg.File()), seg.JobID())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	off := seg.Area(0).Off
	w1, w2 := seg.U32(off), other.U32(off)
	if w1 == w2 {
		t.Fatal("one mapping")
	}
	tid, done := onThread(func() { FutexWait(w1, 0, 0) })
	waitAsleep(t, tid, unix.SYS_FUTEX, unsafe.Pointer(w1), "FutexWait on the first mapping")
	if n := FutexWake(w2, 1); n != 1 {
		t.Fatalf("FutexWake through the second mapping woke %d, want 1", n)
	}
	waitDone(t, done, "the sleeper woken through another mapping")
}

func TestFutexWaitv(t *testing.T) {
	if FutexWaitv(nil, time.Second) != -1 {
		t.Fatal("FutexWaitv of nothing")
	}
	w := futexWords(t, 2)
	var es [2]WaitvEntry
	if unsafe.Sizeof(es[0]) != 24 {
		t.Fatalf("WaitvEntry is %d bytes", unsafe.Sizeof(es[0]))
	}
	es[0].SetWaitv(w[0], 0)
	es[1].SetWaitv(w[1], 7) // holds 0: a mismatch
	start := time.Now()
	if r := FutexWaitv(es[:], time.Minute); r != -1 || time.Since(start) > 10*time.Second {
		t.Fatalf("mismatch: %d after %v", r, time.Since(start))
	}

	es[1].SetWaitv(w[1], 0)
	const timeout = 50 * time.Millisecond
	start = time.Now()
	if r := FutexWaitv(es[:], timeout); r != -1 {
		t.Fatalf("timeout: returned %d", r)
	}
	if el := time.Since(start); el < timeout*9/10 || el > 10*time.Second {
		t.Fatalf("a %v timeout returned after %v", timeout, el)
	}

	requireProcSyscall(t)
	for _, which := range []int{1, 0} {
		got := -2
		tid, done := onThread(func() { got = FutexWaitv(es[:], 0) })
		waitAsleep(t, tid, unix.SYS_FUTEX_WAITV, unsafe.Pointer(&es[0]), "FutexWaitv")
		if n := FutexWake(w[which], 1); n != 1 {
			t.Fatalf("FutexWake of word %d woke %d", which, n)
		}
		waitDone(t, done, "FutexWaitv")
		if got != which {
			t.Fatalf("FutexWaitv woken on word %d returned %d", which, got)
		}
	}
}

// ---- doorbell ----

// Ringing a doorbell nobody armed makes no syscall and changes nothing:
// a thread asleep on the word (outside the protocol, to observe) stays
// asleep.
func TestDoorbellRingWithoutSleeper(t *testing.T) {
	requireProcSyscall(t)
	w := futexWords(t, 1)[0]
	d := NewDoorbell(w)
	d.Ring()
	if w.Load() != 0 || d.Armed() {
		t.Fatalf("ring of an unarmed doorbell: word %#x", w.Load())
	}
	tid, done := onThread(func() { FutexWait(w, 0, 0) })
	waitAsleep(t, tid, unix.SYS_FUTEX, unsafe.Pointer(w), "observer")
	for range 100 {
		d.Ring()
	}
	if w.Load() != 0 {
		t.Fatalf("word %#x after rings", w.Load())
	}
	// Still asleep: no ring woke it.
	if n := FutexWake(w, 1); n != 1 {
		t.Fatalf("the observer was not asleep any more (woke %d): a ring without an armed sleeper woke it", n)
	}
	waitDone(t, done, "observer")
}

func TestDoorbellArmRingSleep(t *testing.T) {
	requireProcSyscall(t)
	w := futexWords(t, 1)[0]
	d := NewDoorbell(w)
	tok := d.Arm()
	if !d.Armed() || tok&doorbellWaiter == 0 || d.Arm() != tok {
		t.Fatalf("armed: word %#x token %#x", w.Load(), tok)
	}
	tid, done := onThread(func() { sleepUntilRung(d, w, tok) })
	waitAsleep(t, tid, unix.SYS_FUTEX, unsafe.Pointer(w), "Sleep")
	d.Ring()
	waitDone(t, done, "a sleeper after Ring (it would sleep a minute otherwise)")
	if d.Armed() || w.Load() == tok&^doorbellWaiter {
		t.Fatalf("after a ring: word %#x (token was %#x)", w.Load(), tok)
	}
}

// A ring between Arm and Sleep is not lost: Sleep returns at once.
func TestDoorbellRingBeforeSleep(t *testing.T) {
	w := futexWords(t, 1)[0]
	d := NewDoorbell(w)
	for i := range 1000 {
		tok := d.Arm()
		d.Ring()
		_, done := onThread(func() { d.Sleep(tok, time.Minute) })
		waitDone(t, done, fmt.Sprintf("Sleep after a ring (round %d)", i))
	}
	// The ring count wraps below the waiter bit.
	w.Store(doorbellWaiter - 1)
	tok := d.Arm()
	d.Ring()
	if w.Load()&doorbellWaiter != 0 || w.Load() == tok&^doorbellWaiter {
		t.Fatalf("ring at the counter's top: word %#x", w.Load())
	}
	_, done := onThread(func() { d.Sleep(tok, time.Minute) })
	waitDone(t, done, "Sleep after a ring that wrapped the counter")
}

// sleepUntilRung sleeps on d as its users do: Sleep may return early (a
// signal, a spurious wake-up), so it loops until the word moves on from
// the token, which only a ring does.
func sleepUntilRung(d Doorbell, w *atomic.Uint32, tok uint32) {
	for w.Load() == tok {
		d.Sleep(tok, time.Minute)
	}
}

// One ring wakes every sleeper.
func TestDoorbellWakesAll(t *testing.T) {
	requireProcSyscall(t)
	w := futexWords(t, 1)[0]
	d := NewDoorbell(w)
	var dones []<-chan struct{}
	for i := range 3 {
		tok := d.Arm()
		tid, done := onThread(func() { sleepUntilRung(d, w, tok) })
		waitAsleep(t, tid, unix.SYS_FUTEX, unsafe.Pointer(w), fmt.Sprintf("sleeper %d", i))
		dones = append(dones, done)
	}
	d.Ring()
	for i, done := range dones {
		waitDone(t, done, fmt.Sprintf("sleeper %d", i))
	}
}

// The protocol under load: two goroutines pass a token back and forth
// through two doorbells, each sleeping (a minute at most) whenever it has
// nothing to do. A lost wake-up stalls the exchange.
func TestDoorbellPingPong(t *testing.T) {
	const rounds = 20000
	words := futexWords(t, 2)
	var work [2]atomic.Int64 // work[i]: the last round handed to side i
	bells := [2]Doorbell{NewDoorbell(words[0]), NewDoorbell(words[1])}
	var progress [2]atomic.Int64
	side := func(me int) {
		other := 1 - me
		for r := int64(me + 1); r <= rounds; r += 2 {
			// Wait for round r to be handed to us.
			for work[me].Load() < r {
				tok := bells[me].Arm()
				if work[me].Load() >= r {
					break
				}
				bells[me].Sleep(tok, time.Minute)
			}
			progress[me].Store(r)
			work[other].Store(r + 1)
			bells[other].Ring()
		}
	}
	_, d0 := onThread(func() { side(0) })
	_, d1 := onThread(func() { side(1) })
	work[0].Store(1)
	bells[0].Ring()
	deadline := time.After(30 * time.Second)
	for _, d := range []<-chan struct{}{d0, d1} {
		select {
		case <-d:
		case <-deadline:
			t.Fatalf("stalled: side 0 at round %d, side 1 at round %d of %d; words %#x %#x (a lost wake-up)",
				progress[0].Load(), progress[1].Load(), rounds, words[0].Load(), words[1].Load())
		}
	}
}

// ---- robust-futex liveness ----

const (
	envLiveChild = "SHMPI_SHM_LIVENESS_CHILD"
	envLiveJob   = "SHMPI_SHM_LIVENESS_JOB"
)

// livenessChild arms the liveness entry at record 0 of area 0, says
// "armed", waits for a line on stdin (or to be killed), and ends as told.
func livenessChild(how string) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "liveness child: "+format+"\n", args...)
		os.Exit(2)
	}
	job, err := strconv.ParseUint(os.Getenv(envLiveJob), 16, 64)
	if err != nil {
		fail("job: %v", err)
	}
	seg, err := AttachFD(3, job)
	if err != nil {
		fail("attach: %v", err)
	}
	// Two entries in one record: the list is [extra, e].
	e := (*LivenessEntry)(seg.Ptr(seg.Area(0).Off))
	extra := (*LivenessEntry)(seg.Ptr(seg.Area(0).Off + 16))
	err = StartLiveness([]*LivenessEntry{extra, e}, func() {
		for {
			time.Sleep(time.Hour)
		}
	})
	if err != nil {
		fail("StartLiveness: %v", err)
	}
	if how == "twice" {
		// A process has one liveness thread.
		e2 := (*LivenessEntry)(seg.Ptr(seg.Area(0).Off + seg.Area(0).Stride))
		if err := StartLiveness([]*LivenessEntry{e2}, func() {}); !errors.Is(err, ErrLivenessStarted) {
			fail("second StartLiveness: %v", err)
		}
		if e2.Word.Load() != 0 {
			fail("second entry armed: %#x", e2.Word.Load())
		}
	}
	os.Stdout.WriteString("armed\n")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail("stdin: %v", err)
	}
	switch how {
	case "exit3":
		os.Exit(3)
	case "disarm", "twice":
		e.Disarm()
		extra.Disarm()
		os.Exit(0)
	case "thread-exit":
		// Another thread of the process ends (a goroutine exits locked to
		// its thread): the process lives on, the word must not change.
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(done)
		}()
		<-done
		os.Stdout.WriteString("thread gone\n")
		bufio.NewReader(os.Stdin).ReadString('\n')
		e.Disarm()
		extra.Disarm()
		os.Exit(0)
	}
	fail("unknown mode %q", how)
}

// The kernel marks a liveness word FUTEX_OWNER_DIED (and wakes a waiter)
// when its process is SIGKILLed or exits without disarming; a disarmed
// word, or the exit of another thread, leaves it alone.
func TestLiveness(t *testing.T) {
	if how := os.Getenv(envLiveChild); how != "" {
		livenessChild(how)
		return
	}
	for _, tc := range []struct {
		how  string
		dies bool
	}{
		{"sigkill", true},
		{"exit3", true},
		{"disarm", false},
		{"twice", false},
		{"thread-exit", false},
	} {
		t.Run(tc.how, func(t *testing.T) { livenessCase(t, tc.how, tc.dies) })
	}
}

func livenessCase(t *testing.T, how string, dies bool) {
	seg := mustCreate(t, Spec{Ranks: 1, Areas: []AreaSpec{{Count: 2, Stride: 64}}})
	e := (*LivenessEntry)(seg.Ptr(seg.Area(0).Off))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLiveness$")
	cmd.Env = append(os.Environ(), envLiveChild+"="+how, envLiveJob+"="+strconv.FormatUint(seg.JobID(), 16))
	cmd.ExtraFiles = []*os.File{seg.File()}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	inR.Close()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	exited := false
	var waitErr error
	wait := func(what string) {
		t.Helper()
		if exited {
			return
		}
		select {
		case waitErr = <-waited:
			exited = true
		case <-ctx.Done():
			// CommandContext kills it; its stderr is complete once reaped.
			waitErr, exited = <-waited, true
			t.Fatalf("%s: the child did not exit before the deadline (%v); stderr: %s", what, waitErr, stderr.String())
		}
	}
	defer func() {
		if !exited {
			cmd.Process.Kill()
			<-waited
		}
	}()
	// fatal kills the child, reaps it, and fails with its stderr.
	fatal := func(format string, args ...any) {
		t.Helper()
		cmd.Process.Kill()
		wait("killed")
		t.Fatalf(format+"; child: %v; stderr: %s", append(args, waitErr, stderr.String())...)
	}
	out := bufio.NewReader(outR)
	readLine := func(want string) {
		t.Helper()
		outR.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, err := out.ReadString('\n')
		if line != want+"\n" {
			fatal("child said %q (%v), want %q", line, err, want)
		}
	}
	readLine("armed")

	extra := (*LivenessEntry)(seg.Ptr(seg.Area(0).Off + 16))
	armed := e.Word.Load()
	tid := int(armed & 0x3fffffff) // FUTEX_TID_MASK
	if armed&FutexWaiters == 0 || armed&FutexOwnerDied != 0 || tid == 0 {
		fatal("armed word %#x", armed)
	}
	if v := extra.Word.Load(); v != armed {
		fatal("second entry of the list armed %#x, first %#x", v, armed)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", cmd.Process.Pid, tid)); err != nil {
		fatal("the armed word's TID %d is not a thread of the child %d: %v", tid, cmd.Process.Pid, err)
	}

	switch how {
	case "sigkill":
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	case "thread-exit":
		inW.WriteString("go\n")
		readLine("thread gone")
		if v := e.Word.Load(); v != armed {
			fatal("another thread's exit changed the word: %#x, armed %#x", v, armed)
		}
		inW.WriteString("go\n")
	default:
		inW.WriteString("go\n")
	}

	if dies {
		// Sleep on the word until the kernel marks it: the kernel wakes
		// us (FutexWaiters is set), so this needs no polling.
		var ents [1]WaitvEntry
		for {
			v := e.Word.Load()
			if Dead(v) {
				break
			}
			dl, _ := ctx.Deadline()
			if time.Now().After(dl) {
				fatal("%s: the word still reads %#x at the deadline (armed %#x)", how, v, armed)
			}
			ents[0].SetWaitv(&e.Word, v)
			FutexWaitv(ents[:], max(time.Until(dl), time.Millisecond))
		}
	}
	wait("waiting for the child to exit")
	var ee *exec.ExitError
	errors.As(waitErr, &ee)
	switch how {
	case "sigkill":
		if ee == nil || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("child ended with %v, want SIGKILL; stderr: %s", waitErr, stderr.String())
		}
	case "exit3":
		if ee == nil || ee.ExitCode() != 3 {
			t.Fatalf("child ended with %v, want exit status 3; stderr: %s", waitErr, stderr.String())
		}
	default:
		if waitErr != nil {
			t.Fatalf("child ended with %v; stderr: %s", waitErr, stderr.String())
		}
	}
	for i, le := range []*LivenessEntry{extra, e} {
		got := le.Word.Load()
		if dies {
			// The kernel keeps the waiters bit, adds OwnerDied, clears the TID.
			if got != FutexWaiters|FutexOwnerDied || !Dead(got) {
				t.Fatalf("word %d of the list after %s: %#x, want %#x", i, how, got, FutexWaiters|FutexOwnerDied)
			}
		} else if got != 0 || Dead(got) {
			t.Fatalf("word %d of the list after a disarmed exit: %#x, want 0", i, got)
		}
	}
}

func TestDead(t *testing.T) {
	for v, want := range map[uint32]bool{
		0: false, 1234: false, 1234 | FutexWaiters: false,
		FutexOwnerDied: true, FutexOwnerDied | FutexWaiters: true, FutexOwnerDied | 77: true,
	} {
		if Dead(v) != want {
			t.Errorf("Dead(%#x) = %v", v, !want)
		}
	}
	if unsafe.Sizeof(LivenessEntry{}) != 16 || unsafe.Offsetof(LivenessEntry{}.Word) != livenessWordOffset {
		t.Fatal("LivenessEntry layout")
	}
}
