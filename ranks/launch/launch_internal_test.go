package launch

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"syscall"
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
	re := regexp.MustCompile(fmt.Sprintf(`^launch: %d ranks need a shared segment of (at least )?[0-9.]+ GiB \(%s\), but /dev/shm has .* free$`,
		n, regexp.QuoteMeta(SegmentNeed(DefaultLayout(n)))))
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

// SegmentCost's split adds up to the segments job.NewSegment makes, and
// SegmentNeed states it as shmrun's help and the launcher's refusals do.
func TestSegmentCost(t *testing.T) {
	for _, n := range []int{2, 3, 8, 64} {
		l := DefaultLayout(n)
		seg, err := job.NewSegment(l, 1) // ranks outnumber cores, as SegmentSize assumes
		if err != nil {
			t.Fatal(err)
		}
		real := uint64(seg.Size())
		seg.Close()
		if got := SegmentSize(l); got != real {
			t.Errorf("%d ranks: SegmentSize %d, NewSegment made %d bytes", n, got, real)
		}
		perRank, fixed := SegmentCost(l)
		// The integer division leaves less than a byte a rank.
		if sum := fixed + perRank*uint64(n); sum > real || real-sum >= uint64(n) {
			t.Errorf("%d ranks: %d + %d × %d = %d bytes, NewSegment made %d", n, fixed, perRank, n, sum, real)
		}
	}
	// The default layout's figures (README quotes them).
	def := Layout{Ranks: 2, InboxSlots: job.DefaultInboxSlots, HSSlots: job.DefaultHSSlots,
		ChunkCount: job.DefaultChunkCount, ChunkSize: job.DefaultChunkSize}
	if got, want := SegmentNeed(def), "828 KiB a rank and 804 KiB for the job"; got != want {
		t.Errorf("SegmentNeed(%+v) = %q, want %q", def, got, want)
	}
}

// sizeString keeps a tenth, and drops it when it is 0.
func TestSizeString(t *testing.T) {
	for _, tc := range []struct {
		b    uint64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {716800, "700 KiB"}, {46346240, "44.2 MiB"}, {3 << 30, "3 GiB"}} {
		if got := sizeString(tc.b); got != tc.want {
			t.Errorf("sizeString(%d) = %q, want %q", tc.b, got, tc.want)
		}
	}
}

// procState says what /proc shows of a process that is not running
// normally: a real zombie, killed or exited, and a stopped process.
func TestProcState(t *testing.T) {
	// waitWith waits for pid to reach a state without reaping it.
	waitWith := func(pid, options int) {
		t.Helper()
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, options|unix.WNOWAIT, nil)
			if err == nil {
				return
			}
			if err != unix.EINTR {
				t.Fatalf("waitid(%d): %v", pid, err)
			}
		}
	}
	run := func(name string, args ...string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command(name, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}

	sleeper := run("sleep", "60")
	if got := procState(sleeper.Process.Pid); got != "" {
		t.Errorf("a sleeping process: %q, want \"\"", got)
	}
	sleeper.Process.Signal(syscall.SIGSTOP)
	waitWith(sleeper.Process.Pid, unix.WSTOPPED)
	if got := procState(sleeper.Process.Pid); got != "stopped" {
		t.Errorf("a stopped process: %q, want \"stopped\"", got)
	}
	sleeper.Process.Kill()
	waitWith(sleeper.Process.Pid, unix.WEXITED)
	if got, want := procState(sleeper.Process.Pid), "killed by signal 9 (SIGKILL), not reaped"; got != want {
		t.Errorf("a killed zombie: %q, want %q", got, want)
	}

	exiter := run("sh", "-c", "exit 3")
	waitWith(exiter.Process.Pid, unix.WEXITED)
	if got, want := procState(exiter.Process.Pid), "exited with code 3, not reaped"; got != want {
		t.Errorf("an exited zombie: %q, want %q", got, want)
	}
	exiter.Wait()
	if got := procState(exiter.Process.Pid); got != "gone" {
		t.Errorf("a reaped process: %q, want \"gone\"", got)
	}
}

func TestWithoutRseq(t *testing.T) {
	for _, c := range []struct {
		env, want []string
	}{
		{[]string{"A=1"}, []string{"A=1", "GLIBC_TUNABLES=glibc.pthread.rseq=0"}},
		{[]string{"GLIBC_TUNABLES="}, []string{"GLIBC_TUNABLES=glibc.pthread.rseq=0"}},
		{[]string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2"}, []string{"GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.pthread.rseq=0"}},
		{[]string{"GLIBC_TUNABLES=glibc.pthread.rseq=1"}, []string{"GLIBC_TUNABLES=glibc.pthread.rseq=1"}},
		// The last entry is the one the program sees.
		{[]string{"GLIBC_TUNABLES=glibc.pthread.rseq=1", "GLIBC_TUNABLES=x=1"}, []string{"GLIBC_TUNABLES=glibc.pthread.rseq=1", "GLIBC_TUNABLES=x=1:glibc.pthread.rseq=0"}},
	} {
		in := slices.Clone(c.env)
		if got := withoutRseq(c.env); !slices.Equal(got, c.want) {
			t.Errorf("withoutRseq(%q) = %q, want %q", c.env, got, c.want)
		}
		if !slices.Equal(c.env, in) {
			t.Errorf("withoutRseq changed its argument to %q", c.env)
		}
	}
}
