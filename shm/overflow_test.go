package shm

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// An area whose records would run past the address space (or a segment
// of absurd size) is refused by Create, and by attach when a header says
// so.
func TestAreaOverflowRefused(t *testing.T) {
	for _, a := range []AreaSpec{{Count: 1 << 34, Stride: 1 << 30}, {Count: math.MaxInt, Stride: 64}} {
		if s, err := Create(Spec{Ranks: 1, Dir: t.TempDir(), Areas: []AreaSpec{a}}); err == nil {
			s.Close()
			t.Fatalf("Create accepted %+v", a)
		}
	}
	seg, err := Create(Spec{Ranks: 1, Dir: t.TempDir(), Areas: []AreaSpec{{Count: 1, Stride: 64}}})
	if err != nil {
		t.Fatal(err)
	}
	b := append([]byte(nil), seg.Bytes(0, seg.Size())...)
	job := seg.JobID()
	seg.Close()
	h := (*header)(unsafe.Pointer(&b[0]))
	h.Areas[0].Stride, h.Areas[0].Count = 1<<30, 1<<34 // wraps to a small end
	h.Checksum = checksum(h)
	p := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := AttachFile(p, job); !errors.Is(err, ErrSegmentCorrupt) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("attach of an overflowing area: %v", err)
	}
}
