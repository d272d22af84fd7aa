package ranks

import (
	"errors"
	"testing"
	"time"
)

// newPair makes a communicator of both in-process engines in a fresh
// context slot, as Dup will.
func newPair(t *testing.T, w0, w1 *Comm) (*Comm, *Comm) {
	t.Helper()
	slot, gen, ok := w0.e.t.AllocContext(0, []int{0, 1})
	if !ok {
		t.Fatal("no free context slot")
	}
	return w0.e.newComm(slot, gen, identityGroup(2), "pair"), w1.e.newComm(slot, gen, identityGroup(2), "pair")
}

// progressUntil runs c's engine until done reports true (the other engine
// of the pair is driven by the calling goroutine).
func progressUntil(t *testing.T, c *Comm, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		c.e.lock()
		c.e.progress()
		c.e.unlock()
		if time.Now().After(deadline) {
			t.Fatal("deadline passed")
		}
	}
}

func wantRevoked(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, ErrRevoked) {
		t.Errorf("%s: %v, want ErrRevoked", what, err)
	}
}

// The revoke mechanism: pending and later operations on the revoked
// communicator fail with ErrRevoked at both members, whoever revoked;
// senders waiting for a match are told by the receiver; the world goes
// on; a communicator created later in the same slot is not revoked.
func TestRevokeMechanism(t *testing.T) {
	w0, w1 := twoEngines(t)
	c0, c1 := newPair(t, w0, w1)

	// Pending on both sides before the revoke: a posted receive at rank
	// 1, a rendezvous send and a synchronous send from rank 0 that rank
	// 1 has received as unexpected, and a fallback-free eager message.
	recv1, err := Irecv(c1, make([]byte, 8), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	big, err := Isend(c0, make([]byte, 1<<20), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	syn, err := Issend(c0, []byte{1}, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := Send(c0, []byte{9}, 1, 4); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c1.Iprobe(0, 4); err != nil { // rank 1 drains: all unexpected
		t.Fatal(err)
	}

	if err := c1.revoke(); err != nil {
		t.Fatal(err)
	}
	if err := c1.revoke(); err != nil { // idempotent
		t.Fatal(err)
	}
	_, err = recv1.Wait()
	wantRevoked(t, err, "posted receive at the revoker")

	// Rank 0 learns of it at its next progress; its pending sends end
	// with the receiver's rejection.
	for _, h := range []*Request{big, syn} {
		_, err := h.Wait()
		wantRevoked(t, err, "pending send at the other member")
	}
	wantRevoked(t, Send(c0, []byte{1}, 1, 5), "send after the revoke")
	_, err = Recv(c1, make([]byte, 1), 0, 4)
	wantRevoked(t, err, "receive of a message unexpected before the revoke")
	_, err = Irecv(c0, make([]byte, 1), AnySource, AnyTag)
	wantRevoked(t, err, "Irecv after the revoke")
	_, _, err = c0.Iprobe(AnySource, AnyTag)
	wantRevoked(t, err, "Iprobe after the revoke")
	if _, err := c0.GetFailed(); err != nil {
		t.Errorf("local call on a revoked communicator: %v", err)
	}

	// The world is untouched.
	if err := Send(w0, []byte{7}, 1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := Recv(w1, make([]byte, 1), 0, 1); err != nil {
		t.Fatal(err)
	}

	// Free both; the slot is reused, with a new generation, unrevoked.
	if err := c0.Free(); err != nil {
		t.Fatal(err)
	}
	if err := c1.Free(); err != nil {
		t.Fatal(err)
	}
	d0, d1 := newPair(t, w0, w1)
	if d0.slot != c0.slot || d0.gen == c0.gen {
		t.Fatalf("slot %d gen %d after slot %d gen %d: not reused", d0.slot, d0.gen, c0.slot, c0.gen)
	}
	// A late revoke of the freed communicator does not reach the new one.
	if w0.e.t.RevokeContext(c0.slot, c0.gen) {
		t.Error("a stale revoke took effect")
	}
	if err := Send(d0, []byte{5}, 1, 1); err != nil {
		t.Fatalf("send on the new communicator: %v", err)
	}
	buf := make([]byte, 1)
	if _, err := Recv(d1, buf, 0, 1); err != nil || buf[0] != 5 {
		t.Fatalf("receive on the new communicator: %v %v", err, buf)
	}
}

// A revoke reaches a member blocked in a receive, a probe and a wait, and
// synchronous sends acknowledged by message (handshake slots exhausted).
func TestRevokeWakesBlocked(t *testing.T) {
	w0, w1 := twoEngines(t)
	c0, c1 := newPair(t, w0, w1)
	errs := make(chan error, 3)
	go func() { _, err := Recv(c1, make([]byte, 1), 0, 1); errs <- err }()
	go func() { _, err := c1.Probe(AnySource, 2); errs <- err }()
	rq, err := Irecv(c1, make([]byte, 1), AnySource, 3)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, err := rq.Wait(); errs <- err }()
	// Exhaust rank 0's handshake slots so that the next synchronous
	// send is acknowledged by message.
	var reqs []*Request
	for len(w0.e.hsFree) > 0 {
		h, err := Issend(c0, []byte{1}, 1, 9)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, h)
	}
	h, err := Issend(c0, []byte{1}, 1, 9)
	if err != nil {
		t.Fatal(err)
	}
	reqs = append(reqs, h)
	if err := c0.revoke(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		select {
		case err := <-errs:
			wantRevoked(t, err, "blocked call")
		case <-time.After(10 * time.Second):
			t.Fatal("a blocked call did not see the revoke")
		}
	}
	done := make(chan error, 1)
	go func() { done <- WaitAll(reqs, nil) }()
	progressUntil(t, w1, func() bool { return len(done) > 0 })
	wantRevoked(t, <-done, "synchronous sends")
	if len(w0.e.ackq) > 0 || len(w0.e.ackWait) > 0 {
		t.Errorf("acks left: queue %d, waiting %d", len(w0.e.ackq), len(w0.e.ackWait))
	}
}
