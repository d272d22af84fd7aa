package sysmon

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Batch finds the runtime's monitor thread, which sleeps in
// nanosleep, and puts it, and it alone, under SCHED_BATCH.
func TestBatch(t *testing.T) {
	t.Setenv(EnvBatch, "0")
	if Batch() {
		t.Fatalf("%s=0 did not turn it off", EnvBatch)
	}
	t.Setenv(EnvBatch, "")
	tid := thread()
	if tid <= 0 {
		t.Fatal("no thread seen sleeping in nanosleep twice")
	}
	if tid == unix.Gettid() {
		t.Fatal("took the caller's own thread")
	}
	// It is the runtime's sleeper: seen in nanosleep again.
	again := false
	for range 1000 {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/syscall")
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(string(b), strconv.Itoa(unix.SYS_NANOSLEEP)+" ") {
			again = true
			break
		}
	}
	if !again {
		t.Fatalf("thread %d never seen in nanosleep again", tid)
	}
	if !Batch() {
		t.Fatal("Batch did not set the policy")
	}
	t.Cleanup(func() {
		unix.SchedSetAttr(tid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}, 0)
	})
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	batch := 0
	for _, d := range ents {
		id, _ := strconv.Atoi(d.Name())
		a, err := unix.SchedGetAttr(id, 0)
		if err != nil {
			continue // the thread ended meanwhile
		}
		if a.Policy == unix.SCHED_BATCH {
			batch++
			if id != tid {
				t.Errorf("thread %d is SCHED_BATCH, not the monitor %d", id, tid)
			}
		}
	}
	if batch != 1 {
		t.Fatalf("%d threads under SCHED_BATCH, want 1", batch)
	}
}
