package job

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/shm"
)

// freshMap is the map of a new segment for n ranks, closed at the end
// of the test: nothing of it is in memory yet.
func freshMap(t *testing.T, n int) *Map {
	t.Helper()
	seg, err := NewSegment(DefaultLayout(n), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seg.Close() })
	return NewMap(seg)
}

// resident counts the pages of [p, p+n) that are in memory (mincore).
func resident(t *testing.T, p unsafe.Pointer, n int) (in, all int) {
	t.Helper()
	const page = 4096
	start := uintptr(p) &^ (page - 1)
	end := (uintptr(p) + uintptr(n) + page - 1) &^ (page - 1)
	vec := make([]byte, (end-start)/page)
	// x/sys has no Mincore wrapper; the raw call is mincore(2).
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	for _, v := range vec {
		in += int(v & 1)
	}
	return in, len(vec)
}

// Populate pre-faults a rank's chunks; PopulateProxy, for a node agent's
// proxy, everything else of its slot but not the chunks.
func TestPopulateProxy(t *testing.T) {
	m := freshMap(t, 4)
	chunks := func(r int) (int, int) {
		return resident(t, m.Chunk(r, 0), m.Layout.ChunkCount*m.Layout.ChunkSize)
	}
	if in, _ := chunks(1); in != 0 {
		t.Fatalf("a fresh segment has %d of rank 1's chunk pages in memory", in)
	}
	m.PopulateProxy(1)
	inbox, n := m.Inbox(1)
	if in, all := resident(t, inbox, n); in != all {
		t.Errorf("PopulateProxy: %d of %d inbox pages in memory", in, all)
	}
	if in, all := chunks(1); in != 0 {
		t.Errorf("PopulateProxy: %d of %d chunk pages in memory, want none", in, all)
	}
	m.Populate(2)
	if in, all := chunks(2); in != all {
		t.Errorf("Populate: %d of %d chunk pages in memory", in, all)
	}
}

// PopulateFirstSlots pre-faults the collective lines and agreement
// records of the first context slots, the rank's part of their scratch
// and the holds; the slots after them stay out of memory.
func TestPopulateFirstSlots(t *testing.T) {
	m := freshMap(t, 64)
	areas := func(s uint32) (in, all int) {
		ci, ca := resident(t, m.CollArea(s), int(m.collStride))
		ai, aa := resident(t, m.AgreeArea(s), int(m.agreeStride))
		return ci + ai, ca + aa
	}
	m.PopulateFirstSlots(5)
	for s := uint32(0); s < firstSlots; s++ {
		if in, all := areas(s); in != all {
			t.Errorf("slot %d: %d of %d pages of its collective and agreement records in memory", s, in, all)
		}
	}
	// The page after the last populated area may hold the next slot's
	// first bytes: look past it.
	if in, all := areas(firstSlots + 1); in != 0 {
		t.Errorf("slot %d: %d of %d pages in memory, want none", firstSlots+1, in, all)
	}
	if in, all := resident(t, unsafe.Pointer(m.HoldsOf(5)), holdsSize); in != all {
		t.Errorf("rank 5's holds: %d of %d pages in memory", in, all)
	}
	// Rank 5's part of the first slots' scratch, where it stages data.
	per := m.ScratchMember()
	for s := uint32(0); s < firstSlots; s++ {
		if in, all := resident(t, unsafe.Add(m.ScratchArea(s), 5*per), per); in != all {
			t.Errorf("slot %d: %d of %d pages of rank 5's scratch in memory", s, in, all)
		}
		if in, _ := resident(t, unsafe.Add(m.ScratchArea(s), 7*per), per); in != 0 {
			t.Errorf("slot %d: rank 7's scratch in memory", s)
		}
	}
}

// Every rank's holds are mapped, for reading, in the populating rank's
// own page tables: each survivor of a failure reads the dead rank's
// (ReleaseAll). They are in memory from the segment's creation, so
// mincore cannot tell; a second mapping of the segment, as a rank has,
// and /proc/self/pagemap's present bit can.
func TestPopulateFirstSlotsMapsHolds(t *testing.T) {
	m := freshMap(t, 64)
	fd, err := unix.Dup(int(m.Seg.File().Fd()))
	if err != nil {
		t.Fatal(err)
	}
	seg, err := shm.AttachFD(fd, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	m2 := NewMap(seg)
	holds := func() (in, all int) { return mapped(t, unsafe.Pointer(m2.HoldsOf(0)), m2.N*holdsSize) }
	if in, _ := holds(); in != 0 {
		t.Fatalf("a fresh mapping has %d pages of the holds mapped", in)
	}
	m2.PopulateFirstSlots(5)
	if in, all := holds(); in != all {
		t.Errorf("the holds of all ranks: %d of %d pages mapped", in, all)
	}
}

// mapped counts the pages of [p, p+n) that this process has mapped
// (present in /proc/self/pagemap).
func mapped(t *testing.T, p unsafe.Pointer, n int) (in, all int) {
	t.Helper()
	const page = 4096
	start := uintptr(p) &^ (page - 1)
	end := (uintptr(p) + uintptr(n) + page - 1) &^ (page - 1)
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 8*((end-start)/page))
	if _, err := f.ReadAt(buf, int64(start/page*8)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(buf); i += 8 {
		in += int(binary.LittleEndian.Uint64(buf[i:]) >> 63)
	}
	return in, len(buf) / 8
}
