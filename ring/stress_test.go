package ring

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shmpi/shmpi/shm"
)

// The cross-process stress test: producer processes (this test binary,
// re-executed with -test.run=^TestStressCrossProcess$ and envStressChild
// set) share one ring in a /dev/shm segment with the test process, which
// consumes the ring and checks every byte of every message and each
// producer's order. Variants make a producer SIGKILL itself holding a
// claimed, unpublished slot (the consumer must find that every producer
// announcing the stuck position is dead and skip it), or between two
// messages (nothing to skip).

const (
	envStressChild = "SHMPI_RING_STRESS_CHILD" // id,count,dieAt,dieMode,holdAt,capacity
	envStressJob   = "SHMPI_RING_STRESS_JOB"
	stressRingID   = 3
	stressDeadline = 60 * time.Second
)

// Segment layout: area 0 the ring, area 1 one announcement word per
// producer (128 bytes each), area 2 the start word the producers wait on.
func stressSpec(producers, capacity int) shm.Spec {
	return shm.Spec{Ranks: producers + 1, Cores: 2, Areas: []shm.AreaSpec{
		{Count: 1, Stride: Bytes(capacity), Align: 128},
		{Count: producers, Stride: 128, Align: 128},
		{Count: 1, Stride: 128, Align: 128},
	}}
}

type stressViews struct {
	ring  *Ring
	tail  *atomic.Uint64
	head  *atomic.Uint64
	ann   func(int) *atomic.Uint64
	start *atomic.Uint32
}

func viewStress(seg *shm.Segment, capacity int) stressViews {
	ra := seg.Area(0)
	return stressViews{
		ring:  New(seg.Ptr(ra.Off), capacity, stressRingID),
		tail:  seg.U64(ra.Off),
		head:  seg.U64(ra.Off + 128),
		ann:   func(i int) *atomic.Uint64 { return seg.U64(seg.Area(1).Off + uint64(i)*128) },
		start: seg.U32(seg.Area(2).Off),
	}
}

// How a stress producer ends.
const (
	dieNever   = "never"
	dieClaimed = "claimed" // claims message dieAt's slot, half fills it, SIGKILLs itself
	dieBetween = "between" // SIGKILLs itself after publishing dieAt messages
)

// A producer sends count messages; it dies (mode) at message dieAt; at
// message holdAt it waits until the test has seen every producer that
// was meant to die exit, so that their dead slots are followed by more
// messages and must be skipped while the others are still sending.
type stressProducer struct {
	count, dieAt, holdAt int
	mode                 string
}

// expected is how many of a producer's messages the consumer must get.
func (p stressProducer) expected() int {
	if p.mode == dieNever {
		return p.count
	}
	return p.dieAt
}

// stressChild is a producer process. It never returns.
func stressChild(spec string) {
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "stress producer %s: "+format+"\n", append([]any{spec}, args...)...)
		os.Exit(2)
	}
	var id, count, dieAt, holdAt, capacity int
	var mode string
	f := strings.Split(spec, ",")
	if len(f) != 6 {
		fail("bad spec")
	}
	for i, p := range []*int{&id, &count, &dieAt, nil, &holdAt, &capacity} {
		if p != nil {
			v, err := strconv.Atoi(f[i])
			if err != nil {
				fail("%v", err)
			}
			*p = v
		}
	}
	mode = f[3]
	job, err := strconv.ParseUint(os.Getenv(envStressJob), 16, 64)
	if err != nil {
		fail("job: %v", err)
	}
	seg, err := shm.AttachFD(3, job)
	if err != nil {
		fail("attach: %v", err)
	}
	v := viewStress(seg, capacity)
	// Messages carry producer id doubleBase+id: a mix of short, full and
	// double records.
	p := v.ring.NewProducer(doubleBase+id, v.ann(id))
	os.Stdout.WriteString("ready\n")
	for v.start.Load() == 0 {
		shm.FutexWait(v.start, 0, time.Second)
	}
	fails := 0
	for seq := 0; seq < count; {
		if seq == holdAt {
			for v.start.Load() < 2 {
				shm.FutexWait(v.start, 1, time.Second)
			}
			holdAt = -1
		}
		if seq == dieAt && mode == dieBetween {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			for {
				time.Sleep(time.Hour)
			}
		}
		c, ok := claimFor(p, doubleBase+id, seq)
		if !ok {
			// Full: the consumer is behind. Spin a little, then give the
			// CPU away (producers outnumber the CPUs).
			if fails++; fails%64 == 0 {
				syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			}
			continue
		}
		if seq == dieAt && mode == dieClaimed {
			// Die between claim and publish, half-way through the payload.
			b := shortPayload(c.Payload())
			for i := range b[:ShortPayloadSize/2] {
				b[i] = 0xdd
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			for {
				time.Sleep(time.Hour)
			}
		}
		writeMsg(c.Payload(), doubleBase+id, seq)
		c.Publish()
		seq++
	}
	os.Exit(0)
}

// skipAnn is the announcement to skip a dead claim by: any of its dead
// announcers' (they name the same claim), or 0 if none.
func skipAnn(v stressViews, announcers []int) uint64 {
	if len(announcers) == 0 {
		return 0
	}
	return v.ann(announcers[0]).Load()
}

type childState struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	exited atomic.Bool // set after cmd.Wait returned: the process is dead
	err    error       // cmd.Wait's error, valid once exited
}

func TestStressCrossProcess(t *testing.T) {
	if spec := os.Getenv(envStressChild); spec != "" {
		stressChild(spec)
	}
	ps := make([]stressProducer, 3)
	for i := range ps {
		ps[i] = stressProducer{count: 200000, dieAt: -1, holdAt: -1, mode: dieNever}
	}
	runStress(t, 64, ps)
}

// A tiny ring: producers contend for every slot and often find it full.
func TestStressCrossProcessSmallRing(t *testing.T) {
	ps := make([]stressProducer, 3)
	for i := range ps {
		ps[i] = stressProducer{count: 50000, dieAt: -1, holdAt: -1, mode: dieNever}
	}
	runStress(t, 4, ps)
}

// A producer claims a slot and SIGKILLs itself before publishing it.
func TestStressProducerDiesHoldingSlot(t *testing.T) {
	runStress(t, 64, []stressProducer{
		{count: 200000, dieAt: -1, holdAt: 100000, mode: dieNever},
		{count: 200000, dieAt: 77777, holdAt: -1, mode: dieClaimed},
		{count: 200000, dieAt: -1, holdAt: 100000, mode: dieNever},
	})
}

// Two deaths holding a slot, one at its very first message, and one
// death between messages that leaves nothing to skip.
func TestStressSeveralDeaths(t *testing.T) {
	runStress(t, 16, []stressProducer{
		{count: 100000, dieAt: 0, holdAt: -1, mode: dieClaimed},
		{count: 100000, dieAt: -1, holdAt: 50000, mode: dieNever},
		{count: 100000, dieAt: 30000, holdAt: -1, mode: dieBetween},
		{count: 100000, dieAt: 54321, holdAt: -1, mode: dieClaimed},
	})
}

func runStress(t *testing.T, capacity int, ps []stressProducer) {
	if testing.Short() {
		for i := range ps {
			ps[i].count /= 10
			if ps[i].dieAt > 0 {
				ps[i].dieAt /= 10
			}
			if ps[i].holdAt > 0 {
				ps[i].holdAt /= 10
			}
		}
	}
	seg, err := shm.Create(stressSpec(len(ps), capacity))
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	v := viewStress(seg, capacity)
	ctx, cancel := context.WithTimeout(context.Background(), stressDeadline)
	defer cancel()

	children := make([]*childState, len(ps))
	var wg sync.WaitGroup
	exited := make(chan int, len(ps))
	// However the test ends, no producer outlives it.
	defer func() {
		cancel() // CommandContext kills the children still running
		wg.Wait()
	}()
	for i, p := range ps {
		ch := &childState{}
		children[i] = ch
		rd, wr, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStressCrossProcess$")
		cmd.Env = append(os.Environ(),
			fmt.Sprintf("%s=%d,%d,%d,%s,%d,%d", envStressChild, i, p.count, p.dieAt, p.mode, p.holdAt, capacity),
			envStressJob+"="+strconv.FormatUint(seg.JobID(), 16))
		cmd.ExtraFiles = []*os.File{seg.File()}
		cmd.Stdout = wr
		cmd.Stderr = &ch.stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		ch.cmd = cmd
		if err := cmd.Start(); err != nil {
			rd.Close()
			wr.Close()
			t.Fatal(err)
		}
		wr.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch.err = cmd.Wait()
			ch.exited.Store(true)
			exited <- i
		}()
		rd.SetReadDeadline(time.Now().Add(20 * time.Second))
		line, err := bufio.NewReader(rd).ReadString('\n')
		rd.Close()
		if line != "ready\n" {
			cancel()
			wg.Wait()
			t.Fatalf("producer %d did not attach: said %q (%v); stderr: %s", i, line, err, ch.stderr.String())
		}
	}
	v.start.Store(1)
	shm.FutexWake(v.start, len(ps))

	want, total := make([]int, len(ps)), 0
	for i, p := range ps {
		want[i] = p.expected()
		total += want[i]
	}
	c := NewConsumer(v.ring)
	next := make([]int, len(ps))
	got, skipped, idle := 0, 0, 0
	var skips []string
	held := false // producers wait at holdAt until released
	for _, p := range ps {
		held = held || p.holdAt >= 0
	}
	release := func() {
		for i, p := range ps {
			if p.mode != dieNever && !children[i].exited.Load() {
				return
			}
		}
		v.start.Store(2)
		shm.FutexWake(v.start, len(ps))
		held = false
	}
	report := func(why string) {
		t.Helper()
		var b strings.Builder
		fmt.Fprintf(&b, "%s\nreceived %d of %d, skipped %d, producers held %v; per producer (received/expected):", why, got, total, skipped, held)
		for i := range ps {
			fmt.Fprintf(&b, " %d:%d/%d", i, next[i], want[i])
		}
		pos := uint64(got + skipped)
		fmt.Fprintf(&b, "\nconsumer at position %d: ready %v claimed %v; ring tail %d head %d",
			pos, c.Ready(), c.Claimed(), v.tail.Load(), v.head.Load())
		for i, ch := range children {
			a := v.ann(i).Load()
			fmt.Fprintf(&b, "\nproducer %d (%s at %d): exited %v, announcement word %#x (names the consumer's position: %v)",
				i, ps[i].mode, ps[i].dieAt, ch.exited.Load(), a, c.Announced(a))
			if ch.exited.Load() { // Wait has returned: its stderr is complete
				fmt.Fprintf(&b, "; ended with %v; stderr: %q", ch.err, ch.stderr.String())
			}
		}
		t.Fatal(b.String())
	}
	for got < total {
		_, p, _, ok := c.PeekRecord()
		if ok {
			id, seq, err := readMsg(p, c.size)
			if err != nil {
				report(err.Error())
			}
			if pid, _, _ := c.Peek(); int(pid) != id {
				report(fmt.Sprintf("slot says producer %d, payload says %d", pid, id))
			}
			id -= doubleBase
			if id < 0 || id >= len(ps) {
				report(fmt.Sprintf("message from unknown producer %d", id))
			}
			if seq != next[id] {
				report(fmt.Sprintf("producer %d: message %d, want %d (lost, duplicated or reordered)", id, seq, next[id]))
			}
			if next[id] >= want[id] {
				report(fmt.Sprintf("producer %d: message %d after it should have died", id, seq))
			}
			next[id]++
			got++
			c.Release()
			continue
		}
		c.Flush()
		if held {
			release()
		}
		if idle++; idle%1024 == 0 {
			if ctx.Err() != nil {
				report(fmt.Sprintf("deadline (%v) passed", stressDeadline))
			}
			select {
			case i := <-exited:
				// A producer ended: fine only if it was meant to die, or
				// meant to end and did so cleanly.
				exited <- i // keep the count for the end
				if ch := children[i]; ps[i].mode == dieNever && ch.err != nil {
					report(fmt.Sprintf("producer %d failed: %v; stderr: %s", i, ch.err, ch.stderr.String()))
				}
			default:
			}
			syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		}
		if !c.Claimed() {
			continue
		}
		// A claimed slot stays unpublished: a producer is writing it, or
		// died. Skip it only if every producer announcing the position is
		// dead, and it is still unpublished after the scan.
		var announcers []int
		live := false
		for q := range ps {
			if c.Announced(v.ann(q).Load()) {
				announcers = append(announcers, q)
				live = live || !children[q].exited.Load()
			}
		}
		if live {
			continue
		}
		if _, _, ok := c.Peek(); ok {
			continue
		}
		if len(announcers) == 0 {
			report("a claimed, unpublished position that no producer announces")
		}
		for _, q := range announcers {
			if ps[q].mode != dieClaimed {
				report(fmt.Sprintf("stuck position announced by dead producer %d, which was not meant to die holding a slot", q))
			}
		}
		skips = append(skips, fmt.Sprintf("position %d (announced by %v)", c.pos, announcers))
		c.Skip(skipAnn(v, announcers))
		skipped++
	}

	// Every message is in; the producers end (or have died).
	for range ps {
		select {
		case <-exited:
		case <-ctx.Done():
			report("deadline passed waiting for the producers to exit")
		}
	}
	for i, ch := range children {
		switch ps[i].mode {
		case dieNever:
			if ch.err != nil {
				t.Errorf("producer %d: %v; stderr: %s", i, ch.err, ch.stderr.String())
			}
		default:
			var ee *exec.ExitError
			if !errors.As(ch.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Errorf("producer %d: ended with %v, want SIGKILL; stderr: %s", i, ch.err, ch.stderr.String())
			}
		}
	}
	// A dead producer's claim may come after every live message: it is
	// still there, to be skipped. Not when the others were held back
	// until the deaths: then every dead slot had messages after it.
	for c.Claimed() {
		for _, p := range ps {
			if p.holdAt >= 0 {
				report("a dead claim after the last message, though producers held back until the deaths")
			}
		}
		if _, _, ok := c.Peek(); ok {
			report("an extra message after every expected one")
		}
		var announcers []int
		for q := range ps {
			if c.Announced(v.ann(q).Load()) {
				announcers = append(announcers, q)
				if ps[q].mode != dieClaimed {
					report(fmt.Sprintf("stuck position announced by producer %d, which was not meant to die holding a slot", q))
				}
			}
		}
		skips = append(skips, fmt.Sprintf("position %d (announced by %v, after the last message)", c.pos, announcers))
		c.Skip(skipAnn(v, announcers))
		skipped++
	}
	nDie := 0
	for _, p := range ps {
		if p.mode == dieClaimed {
			nDie++
		}
	}
	if skipped != nDie {
		t.Errorf("skipped %d positions (%v), want %d", skipped, skips, nDie)
	}
	if tail := v.tail.Load(); tail != c.pos {
		t.Errorf("ring tail %d, consumer at %d after %d messages and %d skips", tail, c.pos, got, skipped)
	}
	t.Logf("%d messages from %d producers through a ring of %d; skipped %v", got, len(ps), capacity, skips)
}
