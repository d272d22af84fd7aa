package shm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

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
