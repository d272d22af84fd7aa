package ranks

import (
	"errors"
	"runtime"
	"testing"

	"github.com/shmpi/shmpi/internal/job"
)

// twoEnginesLayout is twoEngines over a segment of layout lay.
func twoEnginesLayout(tb testing.TB, lay job.Layout) (*Comm, *Comm) {
	seg, err := job.NewSegment(lay, 2)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { seg.Close() })
	var cs [2]*Comm
	for r := range 2 {
		e, err := newEngineWith(seg, r, false)
		if err != nil {
			tb.Fatal(err)
		}
		e.level = ThreadMultiple
		e.initBias()
		cs[r] = e.newComm(0, 1, identityGroup(2), "world")
	}
	return cs[0], cs[1]
}

// Eager buffered sends that find the receiver's inbox full (and, for a
// chunk message, no chunk free) are queued; their data must then leave
// the caller's buffer for the attached one, or the send fails with
// ErrBuffer and is not queued. The detach waits until the queue has
// drained into the receiver, and the receiver gets the data as they were
// when Bsend returned.
func TestBsendQueuedEager(t *testing.T) {
	lay := job.DefaultLayout(2)
	lay.InboxSlots, lay.ChunkCount = 2, 1
	c0, c1 := twoEnginesLayout(t, lay)
	e0 := c0.e
	w0 := &World{e: e0}

	// Fill rank 1's inbox (rank 1 makes no progress until it receives)
	// with buffered sends, until one finds no room: without a buffer it
	// fails with ErrBuffer and is not queued.
	fillers := 0
	for {
		err := Bsend(c0, []byte{1}, 1, 1)
		if errors.Is(err, ErrBuffer) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fillers++
	}
	if n := e0.sendq[1].n; n != 0 || len(e0.queued) != 0 {
		t.Fatalf("%d sends queued after the failed Bsend (queues %v), want none", n, e0.queued)
	}
	small := []byte("12345678")
	if err := w0.BufferAttach(make([]byte, len(small)+5000+2*BsendOverhead)); err != nil {
		t.Fatal(err)
	}
	chunk1, chunk2 := make([]byte, 5000), make([]byte, 5000)
	for i := range chunk1 {
		chunk1[i], chunk2[i] = byte(i), byte(i*3)
	}
	for _, b := range [][]byte{chunk1, small, chunk2} {
		if err := Bsend(c0, b, 1, 2); err != nil {
			t.Fatalf("Bsend of %d bytes: %v", len(b), err)
		}
	}
	// The first chunk message took the only chunk, which holds its copy;
	// the others, queued behind it, are in the attached buffer.
	if e0.p2p.inflight != 2 {
		t.Fatalf("%d messages in the attached buffer, want 2", e0.p2p.inflight)
	}
	if err := Bsend(c0, []byte{9}, 1, 2); !errors.Is(err, ErrBuffer) {
		t.Fatalf("Bsend into a full buffer: %v, want ErrBuffer", err)
	}
	want := [][]byte{append([]byte(nil), chunk1...), append([]byte(nil), small...), append([]byte(nil), chunk2...)}
	clear(small)
	clear(chunk1)
	clear(chunk2)

	type detached struct {
		buf []byte
		err error
	}
	done := make(chan detached, 1)
	go func() {
		b, err := w0.BufferDetach()
		done <- detached{b, err}
	}()
	for range 1000 {
		select {
		case <-done:
			t.Fatal("BufferDetach returned before the buffered messages were delivered")
		default:
			runtime.Gosched()
		}
	}
	for range fillers {
		if _, err := Recv(c1, make([]byte, 1), 0, 1); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range want {
		b := make([]byte, 5000)
		st, err := Recv(c1, b, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		if string(b[:st.Bytes]) != string(w) {
			t.Errorf("buffered message %d: %d bytes, not what Bsend was given", i, st.Bytes)
		}
	}
	d := <-done
	if d.err != nil || len(d.buf) != len(small)+5000+2*BsendOverhead {
		t.Errorf("detach: %d bytes, %v", len(d.buf), d.err)
	}
	if e0.p2p.inflight != 0 || len(e0.nbFree) == 0 {
		t.Errorf("after the detach: %d in flight, %d free request states", e0.p2p.inflight, len(e0.nbFree))
	}
}
