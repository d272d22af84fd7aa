package shm

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

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
