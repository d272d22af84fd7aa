package node

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shmpi/shmpi/ranks"
)

// Long messages across nodes whose bytes reach the receiving node after
// their header (ranks/proxy.go, "Late messages"): every way they can go.
// Rank 0 (node 0) sends to rank 2 (node 1), from heap or AllocMem
// memory, into heap or AllocMem memory, with the receive posted before
// the message comes (the bytes go straight into an AllocMem buffer) or
// only well after it (past the agent's patience: they go through the
// agent's buffer), whole or truncated; or the ordinary way, bytes first
// (Config.LateSkip). Every byte is checked, and a
// sender's AllocMem buffer is overwritten as soon as its send completes,
// so that bytes sent after it completed would show.
func init() {
	bodies["late-large"] = func(w *ranks.World, c *ranks.Comm) error {
		const n = 1<<20 + 37
		alloc := func(k int, mem bool) ([]byte, error) {
			if mem {
				return ranks.AllocMem(k)
			}
			return make([]byte, k), nil
		}
		k := 0
		for _, sendMem := range []bool{false, true} {
			for _, recvMem := range []bool{false, true} {
				for _, posted := range []bool{true, false} {
					for _, trunc := range []bool{false, true} {
						k++
						what := fmt.Sprintf("case %d (send AllocMem %v, receive AllocMem %v, posted first %v, truncated %v)", k, sendMem, recvMem, posted, trunc)
						var err error
						switch c.Rank() {
						case 0:
							err = lateSend(c, k, n, sendMem, posted, alloc)
						case 2:
							err = lateRecv(c, k, n, recvMem, posted, trunc, alloc)
						}
						if err != nil {
							return fmt.Errorf("%s: %w", what, err)
						}
					}
				}
			}
		}
		return nil
	}
}

func lateSend(c *ranks.Comm, k, n int, mem, posted bool, alloc func(int, bool) ([]byte, error)) error {
	b, err := alloc(n, mem)
	if err != nil {
		return err
	}
	copy(b, pattern(0, 2, k, n))
	if posted {
		if _, err := ranks.Recv(c, []byte{0}, 2, 1000+k); err != nil {
			return err
		}
	}
	if err := ranks.Send(c, b, 2, k); err != nil {
		return err
	}
	for i := range b {
		b[i] = 0xEE // the receiver must not see this
	}
	if mem {
		return ranks.FreeMem(b)
	}
	return nil
}

func lateRecv(c *ranks.Comm, k, n int, mem, posted, trunc bool, alloc func(int, bool) ([]byte, error)) error {
	size := n
	if trunc {
		size = n / 2
	}
	b, err := alloc(size, mem)
	if err != nil {
		return err
	}
	var q *ranks.Request
	if posted {
		if q, err = ranks.Irecv(c, b, 0, k); err != nil {
			return err
		}
		if err := ranks.Send(c, []byte{1}, 0, 1000+k); err != nil {
			return err
		}
	} else {
		// The message's header is here once a probe sees it; waiting
		// well past the agent's patience then makes its bytes go through
		// the agent's buffer (this wait only picks that path: the test
		// passes by either).
		for {
			_, ok, err := c.Iprobe(0, k)
			if err != nil {
				return err
			}
			if ok {
				break
			}
		}
		time.Sleep(5 * latePatience)
		if q, err = ranks.Irecv(c, b, 0, k); err != nil {
			return err
		}
	}
	st, err := q.Wait()
	switch {
	case trunc && !errors.Is(err, ranks.ErrTruncate):
		return fmt.Errorf("a receive of %d bytes into %d: %v, want ErrTruncate", n, size, err)
	case !trunc && err != nil:
		return err
	case st.Bytes != size:
		return fmt.Errorf("received %d bytes, want %d", st.Bytes, size)
	}
	if want := pattern(0, 2, k, n)[:size]; !bytes.Equal(b, want) {
		i := 0
		for i < size && b[i] == want[i] {
			i++
		}
		return fmt.Errorf("wrong bytes from offset %d of %d: %#x, want %#x", i, size, b[i], want[i])
	}
	if mem {
		return ranks.FreeMem(b)
	}
	return nil
}

func TestLateLargeAcrossNodes(t *testing.T) {
	// Every long message late, and the agent's default: after a late
	// message into heap memory, the next ones go the ordinary way.
	for _, skip := range []int{-1, 0} {
		t.Run(fmt.Sprintf("LateSkip=%d", skip), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: []int{2, 2}, Body: "late-large", LateSkip: skip, Timeout: 60 * time.Second}).check(t)
		})
	}
}

// cutNet is a Loopback Net on which agent dead fails while the bytes of
// its long frames are due: it holds back what comes from dead until
// hold long headers have come, then the first RecvData from dead reports
// its failure, and nothing from it arrives after that (its node goes on,
// unaware, as a node cut off would).
type cutNet struct {
	Net
	dead, hold int
	held       [][]byte
	longs      int
	cut        bool
}

func (n *cutNet) RecvData(from int, dst []byte) error {
	if from != n.dead {
		return n.Net.RecvData(from, dst)
	}
	if n.cut {
		return errDataLost
	}
	n.cut = true
	return &NodesFailed{Agents: []int{n.dead}}
}

func (n *cutNet) Recv() (int, []byte, bool, error) {
	for {
		if n.longs >= n.hold && len(n.held) > 0 {
			b := n.held[0]
			n.held = n.held[1:]
			return n.dead, b, true, nil
		}
		from, b, ok, err := n.Net.Recv()
		if !ok || err != nil || from != n.dead {
			return from, b, ok, err
		}
		if n.cut {
			bufs.put(b)
			continue
		}
		if f, err := decode(b); err == nil && f.long {
			n.longs++
		}
		n.held = append(n.held, b)
	}
}

// The bytes of late messages lost with their node: rank 2 (node 1) has
// posted a receive for message A from rank 0 (node 0); rank 0 sends A,
// then B, which nobody has posted for. Node 1's agent has both headers
// when it learns, receiving A's bytes, that node 0's agent failed. Both
// receives, A's matched when the bytes were lost and B's matched after,
// complete with ErrProcFailed naming rank 0, and no rank hangs.
func init() {
	bodies["late-lost"] = func(w *ranks.World, c *ranks.Comm) error {
		const n = 1 << 20
		switch c.Rank() {
		case 0:
			if _, err := ranks.Recv(c, []byte{0}, 2, 3); err != nil {
				return err
			}
			if err := ranks.Send(c, make([]byte, n), 2, 1); err != nil { // A
				return err
			}
			return ranks.Send(c, make([]byte, n), 2, 2) // B
		case 2:
			b := make([]byte, n)
			q, err := ranks.Irecv(c, b, 0, 1)
			if err != nil {
				return err
			}
			if err := ranks.Send(c, []byte{1}, 0, 3); err != nil {
				return err
			}
			if _, err := q.Wait(); !errors.Is(err, ranks.ErrProcFailed) {
				return fmt.Errorf("receive of A: %v, want ErrProcFailed", err)
			}
			_, err = ranks.Recv(c, b, 0, 2)
			var e *ranks.Error
			if !errors.As(err, &e) || e.Class != ranks.ErrProcFailed || e.Rank != 0 {
				return fmt.Errorf("receive of B: %v, want ErrProcFailed of rank 0", err)
			}
		}
		return nil
	}
}

func TestLateLostAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{2, 2}, Body: "late-lost", FT: true, Timeout: 30 * time.Second,
		Net: func(k int, n Net) Net {
			if k == 1 {
				return &cutNet{Net: n, dead: 0, hold: 2}
			}
			return n
		}}).check(t)
}
