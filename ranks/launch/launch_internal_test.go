package launch

import (
	"fmt"
	"regexp"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/shmpi/shmpi/internal/job"
)

// minSegmentSize must never exceed the size of the segment
// job.NewSegment really makes (the check would refuse a job that fits);
// the exact size, used when shm can compute it, is what NewSegment makes.
func TestMinSegmentSize(t *testing.T) {
	var layouts []Layout
	for _, n := range []int{1, 2, 3, 7, 64} {
		layouts = append(layouts, DefaultLayout(n))
		layouts = append(layouts, Layout{Ranks: n, InboxSlots: 8, HSSlots: 3, ChunkCount: 5, ChunkSize: 8192})
		layouts = append(layouts, Layout{Ranks: n, InboxSlots: 1024, HSSlots: 100, ChunkCount: 1, ChunkSize: 4096})
	}
	for _, l := range layouts {
		seg, err := job.NewSegment(l, 2)
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		got, real := minSegmentSize(l), uint64(seg.Size())
		seg.Close()
		if got > real {
			t.Errorf("%+v: minSegmentSize %d, more than the %d bytes NewSegment made", l, got, real)
		}
		if exact, err := l.Spec(2).Size(); err != nil || exact != real {
			t.Errorf("%+v: Spec.Size %d (%v), NewSegment made %d bytes", l, exact, err, real)
		}
	}
}

// A job whose segment cannot fit in /dev/shm is refused by Start, before
// anything is made.
func TestStartRefusesHugeSegment(t *testing.T) {
	const n = 1 << 20
	var st unix.Statfs_t
	if err := unix.Statfs(shmDir, &st); err != nil {
		t.Skipf("statfs %s: %v", shmDir, err)
	}
	if free := st.Bavail * uint64(st.Bsize); free >= minSegmentSize(DefaultLayout(n)) {
		t.Skipf("%s has room for %d ranks (%d bytes free)", shmDir, n, free)
	}
	_, err := Start(Config{N: n, Path: "/nonexistent/program"})
	re := regexp.MustCompile(fmt.Sprintf(`^launch: %d ranks need a shared segment of at least [0-9.]+ GiB \([0-9.]+ KiB a rank\), but /dev/shm has .* free$`, n))
	if err == nil || !re.MatchString(err.Error()) {
		t.Errorf("Start: %v; want an error matching %s", err, re)
	}
}

// Sizes that do not fit in 64 bits saturate rather than wrap to a small
// size that would pass the check.
func TestSegmentSizeSaturates(t *testing.T) {
	l := Layout{Ranks: 1 << 24, InboxSlots: 256, HSSlots: 64, ChunkCount: 1024, ChunkSize: 1 << 40}
	if got := minSegmentSize(l); got != 1<<64-1 {
		t.Errorf("minSegmentSize(%+v) = %d, want saturation", l, got)
	}
}
