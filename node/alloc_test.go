package node

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/shmpi/shmpi/ranks"
)

// Small buffers come back from their class and are given out again; a
// class keeps at most smallKeep of them (256, or 1 MiB); a buffer whose
// capacity is no class's is not kept.
func TestBufPoolSmall(t *testing.T) {
	var p bufPool
	for _, n := range []int{0, 1, 32, 64, 65, 1000, 1 << 15, 1<<16 - 1} {
		b := p.get(n)
		if len(b) != n || cap(b) != smallCap(smallClass(n)) {
			t.Fatalf("get(%d): len %d cap %d, want cap %d", n, len(b), cap(b), smallCap(smallClass(n)))
		}
		p.put(b)
		c := p.get(n)
		if &c[:1][0] != &b[:1][0] {
			t.Errorf("get(%d) after put: a new buffer", n)
		}
		p.put(c)
	}
	for _, n := range []int{100, 1<<16 - 1} {
		c := smallClass(n)
		var got [][]byte
		for range smallKeep(c) + 10 {
			got = append(got, p.get(n))
		}
		for _, b := range got {
			p.put(b)
		}
		if k := len(p.small[c]); k != smallKeep(c) || k*smallCap(c) > smallKeepBytes {
			t.Errorf("class of %d bytes keeps %d buffers, want %d (at most %d bytes)", n, k, smallKeep(c), smallKeepBytes)
		}
	}
	before := p.small
	p.put(make([]byte, 10, 48))
	p.put(make([]byte, 64, 200)[:10])
	for c := range p.small {
		if len(p.small[c]) != len(before[c]) {
			t.Errorf("class %d kept a buffer of a foreign capacity", c)
		}
	}
}

// A frame crosses a Loopback net, and is given back, without allocating:
// the header, the frame as it leaves and as it arrives all come from bufs.
func TestLoopbackFrameAllocs(t *testing.T) {
	nets := Loopback(2)
	data := bufs.get(8)
	bufs.put(data)
	allocs := testing.AllocsPerRun(1000, func() {
		f := frame{kind: frameMsg, src: 0, dst: 1, tag: 3, data: bufs.get(8)}
		nets[0].Send(1, f.header(), f.data, nil)
		_, b, ok, err := nets[1].Recv()
		if !ok || err != nil {
			t.Fatalf("Recv: ok %v, err %v", ok, err)
		}
		if g, err := decode(b); err != nil || g.tag != 3 || len(g.data) != 8 {
			t.Fatalf("decode: %+v, %v", g, err)
		}
		bufs.put(b)
	})
	if allocs != 0 {
		t.Errorf("a frame across a Loopback net: %.1f allocations, want 0", allocs)
	}
}

// The agents forward messages without allocating: a job of two nodes of
// one rank each plays ping-pong for few and for many rounds, and the
// agents' process allocates about as much in both (the job's start and
// end). The difference, per message forwarded, must be near zero; an
// agent that allocated a closure for each poll of a proxy, or a header,
// a frame and a Pinner for each message, made several a message.
func TestAgentForwardsWithoutAllocating(t *testing.T) {
	mallocs := func(rounds int) uint64 {
		runtime.GC()
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		runNodes(t, nodesOpts{Counts: []int{1, 1}, Body: "pingpong", Env: []string{fmt.Sprintf("SHMPI_NODE_TEST_ROUNDS=%d", rounds)}}).check(t)
		runtime.ReadMemStats(&b)
		return b.Mallocs - a.Mallocs
	}
	const few, many = 100, 3000
	mallocs(few) // warm: the first job fills bufs' classes and the engines' pools
	var per float64
	for range 3 {
		a, b := mallocs(few), mallocs(many)
		per = (float64(b) - float64(a)) / (2 * 2 * (many - few)) // 4 forwards a round trip: 2 agents each way
		if per < 0.05 {
			return
		}
		t.Logf("%d allocations for %d rounds, %d for %d: %.2f a message forwarded", a, few, b, many, per)
	}
	t.Errorf("the agents allocate %.2f times a message forwarded, want none", per)
}

func init() {
	bodies["pingpong"] = func(w *ranks.World, c *ranks.Comm) error {
		rounds, err := nodeEnvInt("SHMPI_NODE_TEST_ROUNDS")
		if err != nil {
			return err
		}
		buf := make([]byte, 8)
		for i := range rounds {
			buf[0] = byte(i)
			if c.Rank() == 0 {
				if err := ranks.Send(c, buf, 1, 7); err != nil {
					return err
				}
				if _, err := ranks.Recv(c, buf, 1, 7); err != nil {
					return err
				}
			} else {
				if _, err := ranks.Recv(c, buf, 0, 7); err != nil {
					return err
				}
				if buf[0] != byte(i) {
					return fmt.Errorf("round %d: got %d", i, buf[0])
				}
				if err := ranks.Send(c, buf, 0, 7); err != nil {
					return err
				}
			}
		}
		return nil
	}
}
