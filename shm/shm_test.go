package shm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func testSpec(dir string) Spec {
	return Spec{Ranks: 3, Cores: 2, Dir: dir, Params: [MaxParams]uint64{7, 8},
		Areas: []AreaSpec{{Count: 3, Stride: 256}, {Count: 2, Stride: 8192, Align: PageSize}}}
}

func TestCreateAttachRoundTrip(t *testing.T) {
	dir := t.TempDir()
	seg, err := Create(testSpec(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("Create left %v in the directory", left)
	}
	seg.U64(seg.Area(0).Off).Store(42)
	s2, err := AttachFD(int(dupFD(t, seg.File())), seg.JobID())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Ranks() != 3 || s2.Cores() != 2 || s2.Param(0) != 7 || s2.Param(1) != 8 || s2.Size() != seg.Size() {
		t.Fatalf("attached view differs: ranks %d cores %d params %d %d size %d", s2.Ranks(), s2.Cores(), s2.Param(0), s2.Param(1), s2.Size())
	}
	if a := s2.Area(1); a.Off%PageSize != 0 || a.Stride != 8192 || a.Count != 2 {
		t.Fatalf("area 1 = %+v", a)
	}
	if v := s2.U64(s2.Area(0).Off).Load(); v != 42 {
		t.Fatalf("shared word reads %d", v)
	}
}

func dupFD(t *testing.T, f *os.File) uintptr {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return uintptr(fd)
}

// image writes a copy of a real segment's bytes, patched, to a file.
func image(t *testing.T, patch func([]byte) []byte) (string, uint64) {
	seg, err := Create(testSpec(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	b := append([]byte(nil), seg.Bytes(0, seg.Size())...)
	job := seg.JobID()
	seg.Close()
	p := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(p, patch(b), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, job
}

func TestAttachRefusals(t *testing.T) {
	cases := []struct {
		name  string
		patch func([]byte) []byte
		job   func(uint64) uint64
		want  error
	}{
		{"foreign", func(b []byte) []byte { copy(b, "NOTSHMPI"); return b }, nil, ErrForeignSegment},
		{"tiny", func(b []byte) []byte { return b[:64] }, nil, ErrForeignSegment},
		{"version", func(b []byte) []byte { b[8] = Version + 1; return b }, nil, ErrSegmentVersion},
		{"checksum", func(b []byte) []byte { b[100] ^= 1; return b }, nil, ErrSegmentCorrupt},
		{"size", func(b []byte) []byte { return append(b, make([]byte, PageSize)...) }, nil, ErrSegmentCorrupt},
		{"job", func(b []byte) []byte { return b }, func(j uint64) uint64 { return j ^ 4 }, ErrForeignSegment},
		{"closed", func(b []byte) []byte { b[448] = StateClosed; return b }, nil, ErrStaleSegment},
		{"never-ready", func(b []byte) []byte { b[448] = StateInit; return b }, nil, ErrStaleSegment},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, job := image(t, tc.patch)
			if tc.job != nil {
				job = tc.job(job)
			}
			s, err := AttachFile(p, job)
			if err == nil {
				s.Close()
				t.Fatal("attached")
			}
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrSegment) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

// A segment whose creator is gone is stale.
func TestAttachDeadCreator(t *testing.T) {
	p, job := image(t, func(b []byte) []byte {
		cmd := exec.Command("true")
		cmd.Run()
		pid := uint32(cmd.Process.Pid)
		b[44], b[45], b[46], b[47] = byte(pid), byte(pid>>8), byte(pid>>16), byte(pid>>24)
		// Re-seal: the creator pid is inside the checksummed range.
		h := (*header)(unsafePointer(b))
		h.Checksum = checksum(h)
		return b
	})
	if _, err := AttachFile(p, job); !errors.Is(err, ErrStaleSegment) {
		t.Fatalf("error %v, want ErrStaleSegment", err)
	}
}

func TestFutexWaitWake(t *testing.T) {
	var w atomic.Uint32
	if n := FutexWake(&w, 10); n != 0 {
		t.Fatalf("woke %d with no sleeper", n)
	}
	done := make(chan struct{})
	go func() {
		for w.Load() == 0 {
			FutexWait(&w, 0, time.Second)
		}
		close(done)
	}()
	w.Store(1)
	FutexWake(&w, 1)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("sleeper not woken")
	}
	// A timeout returns by itself.
	start := time.Now()
	FutexWait(&w, 1, 20*time.Millisecond)
	if time.Since(start) > 5*time.Second {
		t.Fatal("timeout did not return")
	}
}

func TestDoorbell(t *testing.T) {
	var w atomic.Uint32
	d := NewDoorbell(&w)
	d.Ring() // nobody armed: nothing happens
	if d.Armed() {
		t.Fatal("armed without a sleeper")
	}
	// A ring between Arm and Sleep is not lost: Sleep returns at once.
	tok := d.Arm()
	d.Ring()
	start := time.Now()
	d.Sleep(tok, 10*time.Second)
	if time.Since(start) > 5*time.Second {
		t.Fatal("a ring before Sleep was lost")
	}
	// A sleeper is woken by a ring from another goroutine.
	var work atomic.Bool
	woke := make(chan struct{})
	go func() {
		for !work.Load() {
			tok := d.Arm()
			if work.Load() {
				break
			}
			d.Sleep(tok, time.Second)
		}
		close(woke)
	}()
	work.Store(true)
	d.Ring()
	select {
	case <-woke:
	case <-time.After(10 * time.Second):
		t.Fatal("sleeper not woken")
	}
}

const envLiveChild = "SHMPI_SHM_LIVENESS"

func TestMain(m *testing.M) {
	if how := os.Getenv(envLiveChild); how != "" {
		livenessChild(how)
		return
	}
	os.Exit(m.Run())
}

// livenessChild arms the liveness entry at offset 0 of area 0, says so,
// and ends as told.
func livenessChild(how string) {
	job, _ := strconv.ParseUint(os.Getenv("SHMPI_SHM_JOB"), 16, 64)
	seg, err := AttachFD(3, job)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	e := (*LivenessEntry)(seg.Ptr(seg.Area(0).Off))
	if err := StartLiveness(e, func() {
		for {
			time.Sleep(time.Hour)
		}
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println("armed")
	bufio.NewReader(os.Stdin).ReadString('\n') // the parent has looked at the word
	switch how {
	case "sigkill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "exit":
		os.Exit(3)
	case "disarm":
		e.Disarm()
		os.Exit(0)
	}
}

// The kernel marks a liveness word FUTEX_OWNER_DIED when its owner dies
// by SIGKILL or exits without disarming, and wakes a waiter; a disarmed
// word is left alone.
func TestLivenessWord(t *testing.T) {
	for _, how := range []string{"sigkill", "exit", "disarm"} {
		t.Run(how, func(t *testing.T) {
			seg, err := Create(Spec{Ranks: 1, Cores: 1, Areas: []AreaSpec{{Count: 1, Stride: 64}}})
			if err != nil {
				t.Fatal(err)
			}
			defer seg.Close()
			e := (*LivenessEntry)(seg.Ptr(seg.Area(0).Off))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envLiveChild+"="+how, "SHMPI_SHM_JOB="+strconv.FormatUint(seg.JobID(), 16))
			cmd.ExtraFiles = []*os.File{seg.File()}
			cmd.Stderr = os.Stderr
			out, _ := cmd.StdoutPipe()
			in, _ := cmd.StdinPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if line, _ := bufio.NewReader(out).ReadString('\n'); line != "armed\n" {
				t.Fatalf("child said %q", line)
			}
			v := e.Word.Load()
			if v&FutexTIDMask == 0 || v&FutexWaiters == 0 {
				t.Fatalf("armed word %#x", v)
			}
			in.Write([]byte("go\n"))
			if how != "disarm" {
				// Wait for the kernel's mark, woken by its FUTEX_WAKE.
				var ents [1]WaitvEntry
				for !Dead(e.Word.Load()) && ctx.Err() == nil {
					ents[0].SetWaitv(&e.Word, e.Word.Load())
					FutexWaitv(ents[:], time.Second)
				}
			}
			cmd.Wait()
			got := e.Word.Load()
			if dead := Dead(got); dead != (how != "disarm") {
				t.Fatalf("word after %s: %#x (owner died: %v)", how, got, dead)
			}
		})
	}
}
