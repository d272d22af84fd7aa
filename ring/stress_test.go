package ring

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"shmpi/shm"
)

// The cross-process stress test: producer processes (this test binary,
// re-executed) share one ring in a /dev/shm segment with the test, which
// consumes and checks every byte of every message and each producer's
// order. One variant makes a producer claim a slot and SIGKILL itself
// before publishing it.

const (
	envStressRole = "SHMPI_RING_STRESS"
	stressCap     = 64
	stressProd    = 3
	stressPer     = 100000
)

// Segment layout: area 0 the ring, area 1 one announcement word per
// producer (a line each).
func stressSegment(t *testing.T) *shm.Segment {
	seg, err := shm.Create(shm.Spec{Ranks: 1, Cores: 2, Areas: []shm.AreaSpec{
		{Count: 1, Stride: Bytes(stressCap), Align: 128}, {Count: stressProd, Stride: 64}}})
	if err != nil {
		t.Fatal(err)
	}
	return seg
}

func stressViews(seg *shm.Segment) (*Ring, func(int) *atomic.Uint64) {
	r := New(seg.Ptr(seg.Area(0).Off), stressCap, 1)
	ann := func(i int) *atomic.Uint64 { return seg.U64(seg.Area(1).Off + uint64(i)*64) }
	return r, ann
}

// fill writes message seq of producer id: its length, then bytes that
// depend on id, seq and position.
func fill(pl unsafe.Pointer, id, seq int) {
	b := unsafe.Slice((*byte)(pl), PayloadSize)
	n := 8 + (seq*7+id)%(PayloadSize-8)
	b[0], b[1] = byte(id), byte(n)
	*(*uint32)(unsafe.Pointer(&b[4])) = uint32(seq)
	for i := 8; i < n; i++ {
		b[i] = byte(id*31 + seq + i)
	}
}

func check(pl unsafe.Pointer, seq int) (int, error) {
	b := unsafe.Slice((*byte)(pl), PayloadSize)
	id, n := int(b[0]), int(b[1])
	if got := int(*(*uint32)(unsafe.Pointer(&b[4]))); got != seq {
		return id, fmt.Errorf("producer %d: sequence %d, want %d", id, got, seq)
	}
	if want := 8 + (seq*7+id)%(PayloadSize-8); n != want {
		return id, fmt.Errorf("producer %d message %d: length %d, want %d", id, seq, n, want)
	}
	for i := 8; i < n; i++ {
		if b[i] != byte(id*31+seq+i) {
			return id, fmt.Errorf("producer %d message %d: byte %d is %d", id, seq, i, b[i])
		}
	}
	return id, nil
}

func TestMain(m *testing.M) {
	if role := os.Getenv(envStressRole); role != "" {
		stressProducer(role)
		return
	}
	os.Exit(m.Run())
}

// stressProducer is a child: "id:dieAt" (dieAt -1 never).
func stressProducer(role string) {
	var id, dieAt int
	fmt.Sscanf(role, "%d:%d", &id, &dieAt)
	job, _ := strconv.ParseUint(os.Getenv("SHMPI_RING_JOB"), 16, 64)
	seg, err := shm.AttachFD(3, job)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	r, ann := stressViews(seg)
	p := r.NewProducer(id, ann(id))
	fmt.Println("ready")
	for seq := 0; seq < stressPer; {
		c, ok := p.TryClaim()
		if !ok {
			continue
		}
		if seq == dieAt {
			// Claimed, never published: the consumer must skip it.
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		fill(c.Payload(), id, seq)
		c.Publish()
		seq++
	}
	os.Exit(0)
}

func runStress(t *testing.T, dieAt []int) {
	seg := stressSegment(t)
	defer seg.Close()
	r, ann := stressViews(seg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmds := make([]*exec.Cmd, stressProd)
	dead := make([]atomic.Bool, stressProd)
	exited := make(chan int, stressProd)
	for i := range cmds {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d", envStressRole, i, dieAt[i]),
			"SHMPI_RING_JOB="+strconv.FormatUint(seg.JobID(), 16))
		cmd.ExtraFiles = []*os.File{seg.File()}
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		bufio.NewReader(out).ReadString('\n') // "ready"
		cmds[i] = cmd
		go func() {
			cmd.Wait()
			dead[i].Store(true)
			exited <- i
		}()
	}
	c := NewConsumer(r)
	next := make([]int, stressProd)
	want := 0
	for _, d := range dieAt {
		if d < 0 {
			want += stressPer
		} else {
			want += d
		}
	}
	got, skipped := 0, 0
	for got < want {
		if ctx.Err() != nil {
			t.Fatalf("deadline: received %v of %d each (skipped %d)", next, stressPer, skipped)
		}
		_, pl, ok := c.Peek()
		if !ok {
			c.Flush()
			if c.Claimed() {
				// Skip a claimed slot only when every producer announcing
				// it is dead (as the engine does).
				stuck := true
				for q := range stressProd {
					if c.Announced(ann(q).Load()) && !dead[q].Load() {
						stuck = false
					}
				}
				if _, _, ok := c.Peek(); stuck && !ok {
					c.Skip()
					skipped++
				}
			}
			continue
		}
		id := int(*(*byte)(pl))
		if id >= stressProd {
			t.Fatalf("message with producer id %d", id)
		}
		if _, err := check(pl, next[id]); err != nil {
			t.Fatal(err)
		}
		next[id]++
		got++
		c.Release()
	}
	for range cmds {
		<-exited
	}
	// Every producer has exited: a slot still claimed is the dead
	// producer's, whatever place in the stream it took.
	for c.Claimed() {
		if _, _, ok := c.Peek(); ok {
			t.Fatal("an extra message after all were received")
		}
		for q := range stressProd {
			if c.Announced(ann(q).Load()) && dieAt[q] < 0 {
				t.Fatalf("the stuck slot is announced by producer %d, which did not die", q)
			}
		}
		c.Skip()
		skipped++
	}
	for i, d := range dieAt {
		if d >= 0 && next[i] != d || d < 0 && next[i] != stressPer {
			t.Errorf("producer %d: %d messages", i, next[i])
		}
	}
	nd := 0
	for _, d := range dieAt {
		if d >= 0 {
			nd++
		}
	}
	if skipped != nd {
		t.Errorf("skipped %d slots, want %d", skipped, nd)
	}
}

func TestStressCrossProcess(t *testing.T) { runStress(t, []int{-1, -1, -1}) }

func TestStressProducerDiesHoldingSlot(t *testing.T) { runStress(t, []int{-1, 4321, -1}) }
