package shm

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

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
