package ranks

import (
	"errors"
	"runtime"
	"testing"
)

// Completed nonblocking requests hand their state to later calls; the
// stale handle keeps failing with ErrRequest and cannot touch the new
// operation.
func TestRequestStateReuse(t *testing.T) {
	c0, c1 := twoEngines(t)
	buf := []byte{0}
	old, err := Irecv(c1, buf, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := Send(c0, []byte{7}, 1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Wait(); err != nil || buf[0] != 7 {
		t.Fatalf("first receive: %v, byte %d", err, buf[0])
	}
	cur, err := Irecv(c1, buf, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if cur.r != old.r {
		t.Fatalf("the second receive did not reuse the first one's state")
	}
	for what, err := range map[string]error{
		"Wait":    func() error { _, err := old.Wait(); return err }(),
		"Test":    func() error { _, _, err := old.Test(); return err }(),
		"Cancel":  old.Cancel(),
		"Free":    old.Free(),
		"Start":   old.Start(),
		"WaitAll": WaitAll([]*Request{old}, nil),
		"WaitAny": func() error { _, _, err := WaitAny([]*Request{old}); return err }(),
	} {
		if !errors.Is(err, ErrRequest) {
			t.Errorf("%s on the stale handle: %v, want ErrRequest", what, err)
		}
	}
	// The new receive is untouched: still pending, then completes.
	if _, done, err := cur.Test(); done || err != nil {
		t.Fatalf("new receive after stale calls: done %v, %v", done, err)
	}
	if err := Send(c0, []byte{9}, 1, 2); err != nil {
		t.Fatal(err)
	}
	if st, err := cur.Wait(); err != nil || buf[0] != 9 || st.Tag != 2 {
		t.Fatalf("second receive: %v, byte %d, status %+v", err, buf[0], st)
	}
}

// A freed pending send keeps its state until it completes: a later call
// must not get it while the engine still holds it.
func TestRequestFreedPendingSend(t *testing.T) {
	c0, c1 := twoEngines(t)
	big := make([]byte, 1<<20) // rendezvous: pending until received
	h, err := Isend(c0, big, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Free(); err != nil {
		t.Fatal(err)
	}
	h2, err := Isend(c0, []byte{1}, 1, 6)
	if err != nil {
		t.Fatal(err)
	}
	if h2.r == h.r {
		t.Fatal("a pending freed send's state was handed to a new call")
	}
	if _, err := Recv(c1, make([]byte, 1<<20), 0, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := Recv(c1, make([]byte, 1), 0, 6); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.Wait(); err != nil {
		t.Fatal(err)
	}
}

// In steady state Isend/Irecv/Wait allocate only their 16-byte handles,
// in blocks of 1024: fresh memory is what costs (page faults).
func TestRequestAllocs(t *testing.T) {
	c0, c1 := twoEngines(t)
	buf := make([]byte, 8)
	round := func() {
		r, _ := Irecv(c1, buf, 0, 3)
		s, _ := Isend(c0, buf, 1, 3)
		s.Wait()
		r.Wait()
	}
	for range 1000 {
		round()
	}
	const rounds = 10000
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for range rounds {
		round()
	}
	runtime.ReadMemStats(&m1)
	perRound := float64(m1.TotalAlloc-m0.TotalAlloc) / rounds
	t.Logf("%.1f bytes allocated per round", perRound)
	if perRound > 48 {
		t.Errorf("%.1f bytes allocated per Irecv+Isend+2 Wait, want about 32 (two handles)", perRound)
	}
}

// A request's state is recycled by every later operation, and the
// generation it carries keeps the first handle stale through 2^16
// recycles (an ABA would hand the stale handle someone else's
// operation): every use of it is ErrRequest, and each new operation
// completes with its own message.
func TestStaleHandleOverManyRecycles(t *testing.T) {
	c0, c1 := twoEngines(t)
	buf, out := []byte{0}, []byte{0}
	stale, err := Irecv(c1, buf, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := Send(c0, out, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := stale.Wait(); err != nil {
		t.Fatal(err)
	}
	const recycles = 1 << 16
	for i := 1; i <= recycles; i++ {
		cur, err := Irecv(c1, buf, 0, i&0x7fff)
		if err != nil {
			t.Fatal(err)
		}
		if cur.r != stale.r {
			t.Fatalf("recycle %d: the receive did not reuse the first one's state", i)
		}
		if _, _, err := stale.Test(); !errors.Is(err, ErrRequest) {
			t.Fatalf("recycle %d: Test on the stale handle: %v, want ErrRequest", i, err)
		}
		if err := stale.Cancel(); !errors.Is(err, ErrRequest) {
			t.Fatalf("recycle %d: Cancel on the stale handle: %v, want ErrRequest", i, err)
		}
		out[0] = byte(i)
		if err := Send(c0, out, 1, i&0x7fff); err != nil {
			t.Fatal(err)
		}
		st, err := cur.Wait()
		if err != nil || buf[0] != byte(i) || st.Tag != i&0x7fff {
			t.Fatalf("recycle %d: %v, byte %d, status %+v", i, err, buf[0], st)
		}
	}
	if _, err := stale.Wait(); !errors.Is(err, ErrRequest) {
		t.Fatalf("Wait on the stale handle after %d recycles: %v, want ErrRequest", recycles, err)
	}
}

// Small standard-mode Isends that go into the inbox at once share one
// completed state (engine.sent). Each handle is still its own request:
// completing or freeing one leaves the others valid, every many-request
// form completes them, and a handle used after its completion gets
// ErrRequest whatever happened to the others.
func TestSentHandlesAreIndependent(t *testing.T) {
	c0, c1 := twoEngines(t)
	const n = 12
	hs := make([]*Request, n)
	for i := range hs {
		h, err := Isend(c0, []byte{byte(i)}, 1, 5)
		if err != nil {
			t.Fatal(err)
		}
		if !h.r.shared {
			t.Fatalf("Isend %d did not complete at its start", i)
		}
		hs[i] = h
	}
	// A pending receive mixed in: the many-request forms see both kinds.
	rbuf := []byte{0}
	rr, err := Irecv(c0, rbuf, 1, 6)
	if err != nil {
		t.Fatal(err)
	}
	stale := func(what string, h *Request) {
		t.Helper()
		for call, err := range map[string]error{
			"Wait":   func() error { _, err := h.Wait(); return err }(),
			"Test":   func() error { _, _, err := h.Test(); return err }(),
			"Cancel": h.Cancel(),
			"Free":   h.Free(),
			"Start":  h.Start(),
			"GetStatus": func() error {
				_, _, err := h.GetStatus()
				return err
			}(),
			"WaitAll": WaitAll([]*Request{h}, nil),
		} {
			if !errors.Is(err, ErrRequest) {
				t.Errorf("%s: %s on the completed handle: %v, want ErrRequest", what, call, err)
			}
		}
	}
	// Wait, Test, Free and GetStatus on single handles.
	if st, err := hs[3].Wait(); err != nil || st != (Status{}) {
		t.Fatalf("Wait: %+v, %v", st, err)
	}
	stale("after Wait", hs[3])
	if st, done, err := hs[7].GetStatus(); err != nil || !done || st != (Status{}) {
		t.Fatalf("GetStatus: %+v, %v, %v", st, done, err)
	}
	if err := hs[7].Cancel(); !errors.Is(err, ErrRequest) {
		t.Fatalf("Cancel of a send: %v, want ErrRequest (sends cannot be cancelled)", err)
	}
	if _, done, err := hs[7].Test(); err != nil || !done {
		t.Fatalf("Test after GetStatus: %v, %v", done, err)
	}
	stale("after Test", hs[7])
	if err := hs[0].Free(); err != nil {
		t.Fatal(err)
	}
	stale("after Free", hs[0])
	// WaitAny, WaitSome and WaitAll over the rest and the receive.
	rest := []*Request{hs[1], hs[2], rr, hs[4], hs[5]}
	idx, _, err := WaitAny(rest)
	if err != nil || idx == 2 || rest[idx] != nil {
		t.Fatalf("WaitAny: index %d, %v, entry %v", idx, err, rest[idx])
	}
	done, _, err := WaitSome(rest)
	if err != nil || len(done) != 3 {
		t.Fatalf("WaitSome: %v, %v (want the 3 sends left)", done, err)
	}
	if ok, err := TestAll(rest, nil); ok || err != nil {
		t.Fatalf("TestAll with the receive pending: %v, %v", ok, err)
	}
	if err := Send(c1, []byte{42}, 0, 6); err != nil {
		t.Fatal(err)
	}
	sts := make([]Status, len(hs)-6)
	all := append([]*Request{rr}, hs[6], hs[8], hs[9], hs[10], hs[11])
	if err := WaitAll(all, sts); err != nil || rbuf[0] != 42 {
		t.Fatalf("WaitAll: %v, byte %d", err, rbuf[0])
	}
	for i, h := range all {
		if h != nil {
			t.Fatalf("WaitAll left entry %d", i)
		}
	}
	for i := 1; i < n; i++ {
		if i != 3 && i != 7 {
			stale("after the many-request forms", hs[i])
		}
	}
	// Every message arrived, in order.
	for i := range n {
		b := []byte{0}
		if _, err := Recv(c1, b, 0, 5); err != nil || b[0] != byte(i) {
			t.Fatalf("message %d: %v, byte %d", i, err, b[0])
		}
	}
}
