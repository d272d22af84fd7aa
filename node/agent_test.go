package node

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
	"github.com/shmpi/shmpi/ulfm"
	"github.com/shmpi/shmpi/win"
)

// The tests run several "nodes" in this process: one agent per node on a
// Loopback net, each with its own segment and its ranks, which are this
// test binary started again with envBody naming the rank's body.

const envBody = "SHMPI_NODE_TEST_BODY"

// bodies are the ranks' programs, by name. A body returns an error to
// fail its rank (the rank exits 1 after printing it).
var bodies = map[string]func(w *ranks.World, c *ranks.Comm) error{}

func TestMain(m *testing.M) {
	if name := os.Getenv(envBody); name != "" {
		os.Exit(runBody(name))
	}
	code := m.Run()
	for _, f := range afterAll {
		f()
	}
	os.Exit(code)
}

// afterAll runs once every test ran: it removes what tests made to share
// (the shmnode binary of mpirun_test.go).
var afterAll []func()

func runBody(name string) int {
	body := bodies[name]
	if body == nil {
		fmt.Fprintf(os.Stderr, "no body %q\n", name)
		return 2
	}
	w, err := ranks.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Init:", err)
		return 1
	}
	if err := body(w, w.Comm()); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", w.Rank(), err)
		return 1
	}
	if err := w.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: Finalize: %v\n", w.Rank(), err)
		return 1
	}
	return 0
}

// nodesOpts configure a run of several nodes.
type nodesOpts struct {
	Counts  []int // ranks per node
	Body    string
	Path    string // the program to run instead of this test binary's Body
	FT      bool
	Timeout time.Duration
	Env     []string
	// Started runs once node k's ranks are started.
	Started func(k int, j *launch.Job, first, world int)
	// Net, if set, gives node k's Net in place of its Loopback.
	Net func(k int, n Net) Net
	// LateSkip is Config.LateSkip.
	LateSkip int
}

type nodeRun struct {
	res  []*Result
	errs []error
	outs []*syncBuffer // by world rank
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runNodes runs body on every rank of len(o.Counts) nodes and returns
// what each node's agent returned. The whole run has a deadline: past
// it, every agent ends its ranks and says which are stuck where.
func runNodes(t *testing.T, o nodesOpts) *nodeRun {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	world := 0
	for _, n := range o.Counts {
		world += n
	}
	nr := &nodeRun{res: make([]*Result, len(o.Counts)), errs: make([]error, len(o.Counts)), outs: make([]*syncBuffer, world)}
	for i := range nr.outs {
		nr.outs[i] = &syncBuffer{}
	}
	counts := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(o.Counts)), ","), "[]")
	env := append(append(os.Environ(), envBody+"="+o.Body, "SHMPI_NODE_TEST_COUNTS="+counts), o.Env...)
	nets := Loopback(len(o.Counts))
	var wg sync.WaitGroup
	for k, n := range o.Counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path, args := os.Args[0], []string{"-test.run=^$"}
			if o.Path != "" {
				path, args = o.Path, nil
			}
			net := nets[k]
			if o.Net != nil {
				net = o.Net(k, net)
			}
			cfg := Config{Net: net, N: n, Path: path, Args: args, Env: env,
				Cores: max(1, runtime.NumCPU()/len(o.Counts)),
				FT:    o.FT, Timeout: o.Timeout, LateSkip: o.LateSkip,
				Output: func(r int) (io.Writer, io.Writer) { return nr.outs[r], nr.outs[r] }}
			if o.Started != nil {
				cfg.Started = func(j *launch.Job, first, world int) { o.Started(k, j, first, world) }
			}
			nr.res[k], nr.errs[k] = Run(cfg)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(o.Timeout + 30*time.Second):
		// The agents' own deadline did not end them: say where every
		// goroutine of this process (the agents are among them) waits.
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		if path := os.Getenv("SHMPI_NODE_TEST_STACKS"); path != "" {
			os.WriteFile(path, buf, 0o644)
		}
		t.Fatalf("agents still running %v after their deadline; goroutines:\n%s", 30*time.Second, buf)
	}
	for k, err := range nr.errs {
		if err != nil {
			t.Errorf("agent %d: %v", k, err)
		}
	}
	return nr
}

// check fails the test unless every rank but those in dies finalized and
// exited 0, and shows the output of the ranks that did not.
func (nr *nodeRun) check(t *testing.T, dies ...int) {
	t.Helper()
	for k, res := range nr.res {
		if res == nil {
			t.Errorf("agent %d returned no result", k)
			continue
		}
		for _, x := range res.Exits {
			want := !contains(dies, x.Rank)
			if ok := !x.Abnormal(); ok != want {
				t.Errorf("node %d, rank %d %s (expected to die: %v)\n%s", k, x.Rank, x.How(), !want, nr.outs[x.Rank].String())
			}
		}
	}
}

func sum(s []int) int {
	t := 0
	for _, x := range s {
		t += x
	}
	return t
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Every rank learns the world: size, its rank, and which ranks share its
// node is not asked of it here.
func init() {
	bodies["world"] = func(w *ranks.World, c *ranks.Comm) error {
		want, _ := nodeEnvInt("SHMPI_NODE_TEST_WORLD")
		if w.Size() != want {
			return fmt.Errorf("world of %d, want %d", w.Size(), want)
		}
		return nil
	}
}

func nodeEnvInt(k string) (int, error) {
	var v int
	_, err := fmt.Sscan(os.Getenv(k), &v)
	return v, err
}

func TestWorldAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 3, 3}, {1, 4}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			world := 0
			for _, n := range counts {
				world += n
			}
			nr := runNodes(t, nodesOpts{Counts: counts, Body: "world", Env: []string{fmt.Sprintf("SHMPI_NODE_TEST_WORLD=%d", world)}})
			nr.check(t)
			first := 0
			for k, res := range nr.res {
				if res == nil {
					continue
				}
				if res.First != first || res.World != world {
					t.Errorf("node %d: ranks from %d of %d, want from %d of %d", k, res.First, res.World, first, world)
				}
				for i, x := range res.Exits {
					if x.Rank != first+i {
						t.Errorf("node %d: exit %d is rank %d, want %d", k, i, x.Rank, first+i)
					}
				}
				first += counts[k]
			}
		})
	}
}

// pattern fills a message of n bytes from rank src to dst, number k.
func pattern(src, dst, k, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(src*31 + dst*7 + k*13 + i)
	}
	return b
}

// Every size class (inline, eager chunk, fragmented or rendezvous), from
// every rank to every other, in both directions at once; then ordering:
// a stream of messages with one tag arrives in the order sent.
var sizes = []int{0, 1, 8, 200, 4096, 40 << 10, 300 << 10, 2 << 20}

func init() {
	bodies["alltoall-p2p"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		for k, sz := range sizes {
			var reqs []*ranks.Request
			bufs := make([][]byte, n)
			for p := range n {
				if p == me {
					continue
				}
				bufs[p] = make([]byte, sz)
				rq, err := ranks.Irecv(c, bufs[p], p, k)
				if err != nil {
					return err
				}
				reqs = append(reqs, rq)
			}
			for p := range n {
				if p == me {
					continue
				}
				rq, err := ranks.Isend(c, pattern(me, p, k, sz), p, k)
				if err != nil {
					return err
				}
				reqs = append(reqs, rq)
			}
			if err := ranks.WaitAll(reqs, nil); err != nil {
				return fmt.Errorf("size %d: %w", sz, err)
			}
			for p := range n {
				if p != me && !bytes.Equal(bufs[p], pattern(p, me, k, sz)) {
					return fmt.Errorf("size %d from %d: wrong bytes", sz, p)
				}
			}
		}
		// Ordering: rank 0 streams 200 messages of mixed sizes to the
		// last rank (on another node), which receives them one by one.
		const stream = 200
		last := n - 1
		switch me {
		case 0:
			for i := range stream {
				sz := sizes[i%len(sizes)] % (64 << 10)
				if err := ranks.Send(c, pattern(0, last, i, sz+4), last, 9); err != nil {
					return err
				}
			}
		case last:
			for i := range stream {
				sz := sizes[i%len(sizes)] % (64 << 10)
				buf := make([]byte, sz+4)
				st, err := ranks.Recv(c, buf, 0, 9)
				if err != nil {
					return err
				}
				if st.Bytes != sz+4 || !bytes.Equal(buf, pattern(0, last, i, sz+4)) {
					return fmt.Errorf("stream message %d out of order or wrong", i)
				}
			}
		}
		return nil
	}
}

func TestPointToPointAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 3, 3}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "alltoall-p2p"}).check(t)
		})
	}
}

// AnySource: rank 0 receives one message from every other rank with
// AnySource and AnyTag, then probes: the status names the world rank of
// the sender, whatever its node.
func init() {
	bodies["anysource"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		if me != 0 {
			if err := ranks.Send(c, []int64{int64(me)}, 0, 100+me); err != nil {
				return err
			}
			if err := ranks.Send(c, pattern(me, 0, 1, 50000), 0, 7); err != nil {
				return err
			}
			var goAhead [1]byte // rank 0 is through with AnyTag
			if _, err := ranks.Recv(c, goAhead[:], 0, 3); err != nil {
				return err
			}
			return ranks.Send(c, pattern(me, 0, 2, 3000), 0, 8)
		}
		// Two messages from each sender with AnySource and AnyTag: each
		// sender's arrive in the order sent.
		got := make([]int, n)
		buf := make([]byte, 50000)
		for range 2 * (n - 1) {
			st, err := ranks.Recv(c, buf, ranks.AnySource, ranks.AnyTag)
			if err != nil {
				return err
			}
			src := st.Source
			switch {
			case src <= 0 || src >= n:
				return fmt.Errorf("status %+v", st)
			case got[src] == 0 && st.Tag == 100+src && st.Bytes == 8:
				var v [1]int64
				copy(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8), buf)
				if v[0] != int64(src) {
					return fmt.Errorf("message from %d says %d", src, v[0])
				}
			case got[src] == 1 && st.Tag == 7 && st.Bytes == 50000:
				if !bytes.Equal(buf, pattern(src, 0, 1, 50000)) {
					return fmt.Errorf("message from %d: wrong bytes", src)
				}
			default:
				return fmt.Errorf("message %d from %d: status %+v", got[src], src, st)
			}
			got[src]++
		}
		for r := 1; r < n; r++ {
			if err := ranks.Send(c, []byte{1}, r, 3); err != nil {
				return err
			}
		}
		// Probe with AnySource: the status names the sender's world rank.
		for range n - 1 {
			st, err := c.Probe(ranks.AnySource, 8)
			if err != nil {
				return err
			}
			if st.Bytes != 3000 {
				return fmt.Errorf("probe: %d bytes", st.Bytes)
			}
			b := make([]byte, st.Bytes)
			if _, err := ranks.Recv(c, b, st.Source, 8); err != nil {
				return err
			}
			if !bytes.Equal(b, pattern(st.Source, 0, 2, 3000)) {
				return fmt.Errorf("probed message from %d: wrong bytes", st.Source)
			}
		}
		return nil
	}
}

// A dead rank's messages come before its failure across nodes too, even
// when they wait in the receiver's proxy because its inbox was full: rank
// 0 sends more messages than rank 1's inbox holds and dies; rank 1, which
// drained nothing meanwhile, learns of the death first (GetFailed does
// not drain), then receives every message, in order, and only then
// ErrProcFailed.
func init() {
	bodies["order-before-failure"] = func(w *ranks.World, c *ranks.Comm) error {
		const k = 20000
		if c.Rank() == 0 {
			for i := range k {
				if err := ranks.Send(c, []int{i}, 1, 1); err != nil {
					return err
				}
			}
			if err := ranks.Send(c, []int{-1}, 1, 2); err != nil {
				return err
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		for {
			f, err := c.GetFailed()
			if err != nil {
				return err
			}
			if slices.Contains(f, 0) {
				break
			}
			runtime.Gosched()
		}
		v := []int{0}
		for i := range k {
			if _, err := ranks.Recv(c, v, 0, 1); err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			if v[0] != i {
				return fmt.Errorf("message %d is %d", i, v[0])
			}
		}
		if _, err := ranks.Recv(c, v, 0, 2); err != nil || v[0] != -1 {
			return fmt.Errorf("the last message: %d, %v", v[0], err)
		}
		if _, err := ranks.Recv(c, v, 0, 3); !errors.Is(err, ranks.ErrProcFailed) {
			return fmt.Errorf("a receive after the last message: %v, want ErrProcFailed", err)
		}
		return nil
	}
}

// The same for rendezvous-sized messages, and one being copied when the
// failure comes: rank 0 sends 20 of 1 MiB to the last rank (another
// node), whose agent takes each whole before rank 0's send completes,
// then says it is done and waits. The last rank kills rank 0 as it
// starts copying the first from its proxy (ext.StageHook), and waits
// until the failure is declared here; the copy goes on (the proxy
// outlives the rank it copies for), the other 19 follow, and only a
// receive after them gets ErrProcFailed.
func init() {
	bodies["large-before-failure"] = func(w *ranks.World, c *ranks.Comm) error {
		const k = 20
		last := c.Size() - 1
		buf := make([]byte, 1<<20)
		switch c.Rank() {
		case 0:
			for i := range k {
				buf[0], buf[len(buf)-1] = byte(i), byte(i)
				if err := ranks.Send(c, buf, last, i); err != nil {
					return err
				}
			}
			if err := ranks.Send(c, []int{os.Getpid()}, last, 99); err != nil {
				return err
			}
			select {} // until the last rank kills it
		case last:
			pid := []int{0}
			if _, err := ranks.Recv(c, pid, 0, 99); err != nil {
				return err
			}
			fired := false
			ext.StageHook = func(stage string) {
				if stage != "copying" || fired {
					return
				}
				fired = true
				if pid[0] <= 0 { // kill(0 or -1) would reach the test runner
					panic(fmt.Sprintf("rank 0's pid is %d", pid[0]))
				}
				syscall.Kill(pid[0], syscall.SIGKILL)
				for ext.MemberState(c, 0) != ext.Failed {
					runtime.Gosched()
				}
			}
			defer func() { ext.StageHook = nil }()
			for i := range k {
				if _, err := ranks.Recv(c, buf, 0, i); err != nil {
					return fmt.Errorf("message %d: %w", i, err)
				}
				if buf[0] != byte(i) || buf[len(buf)-1] != byte(i) {
					return fmt.Errorf("message %d: wrong bytes", i)
				}
			}
			if !fired {
				return errors.New("no receive reached the copying stage")
			}
			if _, err := ranks.Recv(c, buf, 0, k); !errors.Is(err, ranks.ErrProcFailed) {
				return fmt.Errorf("a receive after the last message: %v, want ErrProcFailed", err)
			}
		}
		return nil
	}
}

func TestLargeBeforeFailureAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{2, 2}, Body: "large-before-failure", FT: true, Timeout: 30 * time.Second}).check(t, 0)
}

// A synchronous send of a rendezvous-sized message to a rank of another
// node completes only once the receive matches, not when the sender's
// agent has copied it: rank 0 Issends 1 MiB to the last rank, which
// waits until the message has reached it (Iprobe, which does not match)
// and then asks rank 0 whether its send has completed. By then the
// agents have copied and forwarded every byte; the answer must be no.
// Then the receive is posted, and the send completes.
func init() {
	bodies["ssend-large"] = func(w *ranks.World, c *ranks.Comm) error {
		last := c.Size() - 1
		big := make([]byte, 1<<20)
		switch c.Rank() {
		case 0:
			q, err := ranks.Issend(c, big, last, 1)
			if err != nil {
				return err
			}
			if _, err := ranks.Recv(c, []int{0}, last, 2); err != nil {
				return err
			}
			_, done, err := q.Test()
			if err != nil {
				return err
			}
			answer := 0
			if done {
				answer = 1
			}
			if err := ranks.Send(c, []int{answer}, last, 3); err != nil {
				return err
			}
			if !done { // a completed request is freed by Test
				if _, err := q.Wait(); err != nil {
					return fmt.Errorf("Issend: %w", err)
				}
			}
		case last:
			for {
				_, ok, err := c.Iprobe(0, 1)
				if err != nil {
					return err
				}
				if ok {
					break
				}
			}
			if err := ranks.Send(c, []int{0}, 0, 2); err != nil {
				return err
			}
			answer := []int{-1}
			if _, err := ranks.Recv(c, answer, 0, 3); err != nil {
				return err
			}
			if answer[0] != 0 {
				return errors.New("the synchronous send of 1 MiB completed before its receive was posted")
			}
			if _, err := ranks.Recv(c, big, 0, 1); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestSsendLargeAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{2, 2}, Body: "ssend-large"}).check(t)
}

// A synchronous send to a rank of another node that fails before it
// receives: ErrProcFailed, never success (its agent's proxy saw the send
// end with an error, not a match), eager-sized and rendezvous-sized; and
// a standard send after the failure is known.
func init() {
	bodies["ssend-to-dead"] = func(w *ranks.World, c *ranks.Comm) error {
		last := c.Size() - 1
		switch c.Rank() {
		case last:
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		case 0:
			if err := ranks.Ssend(c, []int{1}, last, 5); !errors.Is(err, ranks.ErrProcFailed) {
				return fmt.Errorf("Ssend of 8 bytes to a dead rank: %v, want ErrProcFailed", err)
			}
			if err := ranks.Ssend(c, make([]byte, 1<<20), last, 6); !errors.Is(err, ranks.ErrProcFailed) {
				return fmt.Errorf("Ssend of 1 MiB to a dead rank: %v, want ErrProcFailed", err)
			}
			if err := ranks.Send(c, make([]byte, 1<<20), last, 7); !errors.Is(err, ranks.ErrProcFailed) {
				return fmt.Errorf("Send of 1 MiB to a dead rank: %v, want ErrProcFailed", err)
			}
		}
		return nil
	}
}

func TestSsendToDeadAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{2, 2}, Body: "ssend-to-dead", FT: true, Timeout: 30 * time.Second}).check(t, 3)
}

func TestOrderBeforeFailureAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{1, 1}, Body: "order-before-failure", FT: true, Timeout: 30 * time.Second}).check(t, 0)
}

// More of point-to-point across nodes, between rank 0 and the last rank
// (another node): Iprobe, Mprobe and Improbe with Mrecv and Imrecv, a
// cancelled receive, buffered, ready and synchronous sends (a
// rendezvous-sized one too), SendrecvReplace around the ring, and
// partitioned communication.
func init() {
	bodies["p2p-more"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		last := n - 1
		v := []int{0}
		switch me {
		case 0:
			for i, tag := range []int{1, 2, 3} {
				if err := ranks.Send(c, []int{100 + i}, last, tag); err != nil {
					return err
				}
			}
			if err := w.BufferAttach(make([]byte, 1<<20)); err != nil {
				return err
			}
			if err := ranks.Bsend(c, []int{104}, last, 4); err != nil {
				return err
			}
			if _, err := w.BufferDetach(); err != nil {
				return err
			}
			// The last rank has posted its ready receive when it says so.
			if _, err := ranks.Recv(c, v, last, 5); err != nil {
				return err
			}
			if err := ranks.Rsend(c, []int{105}, last, 6); err != nil {
				return err
			}
			big := bytes.Repeat([]byte{7}, 3<<20)
			if err := ranks.Ssend(c, big, last, 7); err != nil {
				return err
			}
			if err := ranks.Ssend(c, []int{108}, last, 8); err != nil {
				return err
			}
		case last:
			// Iprobe until the first message is here, then Mprobe, Improbe.
			for {
				st, ok, err := c.Iprobe(0, 1)
				if err != nil {
					return err
				}
				if ok {
					if st.Source != 0 || st.Bytes != 8 {
						return fmt.Errorf("Iprobe: %+v", st)
					}
					break
				}
			}
			if _, err := ranks.Recv(c, v, 0, 1); err != nil || v[0] != 100 {
				return fmt.Errorf("after Iprobe: %d, %v", v[0], err)
			}
			m, st, err := c.Mprobe(0, 2)
			if err != nil || st.Source != 0 {
				return fmt.Errorf("Mprobe: %+v, %v", st, err)
			}
			if _, err := ranks.Mrecv(m, v); err != nil || v[0] != 101 {
				return fmt.Errorf("Mrecv: %d, %v", v[0], err)
			}
			var ok bool
			for !ok {
				if m, _, ok, err = c.Improbe(0, 3); err != nil {
					return err
				}
			}
			q, err := ranks.Imrecv(m, v)
			if err != nil {
				return err
			}
			if _, err := q.Wait(); err != nil || v[0] != 102 {
				return fmt.Errorf("Imrecv: %d, %v", v[0], err)
			}
			// A receive nobody will match, cancelled.
			q, err = ranks.Irecv(c, v, 0, 99)
			if err != nil {
				return err
			}
			if err := q.Cancel(); err != nil {
				return err
			}
			if st, err := q.Wait(); err != nil || !st.Cancelled {
				return fmt.Errorf("cancelled receive: %+v, %v", st, err)
			}
			if _, err := ranks.Recv(c, v, 0, 4); err != nil || v[0] != 104 {
				return fmt.Errorf("Bsend: %d, %v", v[0], err)
			}
			q, err = ranks.Irecv(c, v, 0, 6)
			if err != nil {
				return err
			}
			if err := ranks.Send(c, []int{0}, 0, 5); err != nil {
				return err
			}
			if _, err := q.Wait(); err != nil || v[0] != 105 {
				return fmt.Errorf("Rsend: %d, %v", v[0], err)
			}
			big := make([]byte, 3<<20)
			if _, err := ranks.Recv(c, big, 0, 7); err != nil || big[0] != 7 || big[len(big)-1] != 7 {
				return fmt.Errorf("Ssend of 3 MiB: %v", err)
			}
			if _, err := ranks.Recv(c, v, 0, 8); err != nil || v[0] != 108 {
				return fmt.Errorf("Ssend: %d, %v", v[0], err)
			}
		}
		// SendrecvReplace around the ring: each gets its left neighbour's rank.
		x := []int{me}
		if _, err := ranks.SendrecvReplace(c, x, (me+1)%n, 10, (me+n-1)%n, 10); err != nil {
			return fmt.Errorf("SendrecvReplace: %w", err)
		}
		if x[0] != (me+n-1)%n {
			return fmt.Errorf("SendrecvReplace: %d, want %d", x[0], (me+n-1)%n)
		}
		// Partitioned: 4 partitions of 1,000 elements from rank 0 to the
		// last rank, each marked ready on its own.
		const parts, count = 4, 1000
		switch me {
		case 0:
			buf := make([]int32, parts*count)
			q, err := ranks.PsendInit(c, buf, parts, count, last, 11)
			if err != nil {
				return err
			}
			if err := q.Start(); err != nil {
				return err
			}
			for p := range parts {
				for i := range count {
					buf[p*count+i] = int32(p*10000 + i)
				}
				if err := ranks.Pready(q, p); err != nil {
					return fmt.Errorf("Pready %d: %w", p, err)
				}
			}
			if _, err := q.Wait(); err != nil {
				return fmt.Errorf("partitioned send: %w", err)
			}
			if err := q.Free(); err != nil {
				return err
			}
		case last:
			buf := make([]int32, parts*count)
			q, err := ranks.PrecvInit(c, buf, parts, count, 0, 11)
			if err != nil {
				return err
			}
			if err := q.Start(); err != nil {
				return err
			}
			if _, err := q.Wait(); err != nil {
				return fmt.Errorf("partitioned receive: %w", err)
			}
			for i, x := range buf {
				if want := int32(i/count*10000 + i%count); x != want {
					return fmt.Errorf("partitioned: element %d is %d, want %d", i, x, want)
				}
			}
			if err := q.Free(); err != nil {
				return err
			}
		}
		return coll.Barrier(c)
	}
}

func TestMorePointToPointAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{2, 1, 2}, Body: "p2p-more"}).check(t)
}

// Intercommunicators whose groups span nodes: the even and the odd world
// ranks, each group on every node. Point-to-point between the groups,
// AnySource, the collectives across the groups (Allreduce gives each
// group the other's sum; Bcast from a root of one group), Merge, Dup and
// Split of the intercommunicator, and a revoke that reaches every member
// of both groups. Agree on it is refused (ErrUnsupported) at every member.
func init() {
	bodies["intercomm"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		color := me % 2
		local, err := c.Split(color, me)
		if err != nil {
			return err
		}
		ic, err := ranks.IntercommCreate(local, 0, c, 1-color, 77)
		if err != nil {
			return fmt.Errorf("IntercommCreate: %w", err)
		}
		lr, ls, rs := ic.Rank(), ic.Size(), ic.RemoteSize()
		if !ic.IsInter() || lr != me/2 || ls != (n+1-color)/2 || rs != (n+color)/2 {
			return fmt.Errorf("intercommunicator: rank %d size %d remote %d", lr, ls, rs)
		}
		// Each member and its partner (world rank me^1) swap world ranks.
		if me^1 < n {
			got := []int{-1}
			if _, err := ranks.Sendrecv(ic, []int{me}, lr, 1, got, lr, 1); err != nil {
				return fmt.Errorf("Sendrecv: %w", err)
			}
			if got[0] != me^1 {
				return fmt.Errorf("Sendrecv: %d, want %d", got[0], me^1)
			}
		}
		// Every member of the other group sends to local rank 0 here.
		if err := ranks.Send(ic, []int{me}, 0, 2); err != nil {
			return err
		}
		if lr == 0 {
			seen := map[int]bool{}
			for range rs {
				v := []int{-1}
				st, err := ranks.Recv(ic, v, ranks.AnySource, 2)
				if err != nil {
					return fmt.Errorf("AnySource: %w", err)
				}
				if v[0] != 2*st.Source+1-color || seen[v[0]] {
					return fmt.Errorf("AnySource: %d from remote rank %d", v[0], st.Source)
				}
				seen[v[0]] = true
			}
		}
		sum := []int{0}
		if err := coll.Allreduce(ic, []int{me}, sum, coll.Sum); err != nil {
			return fmt.Errorf("Allreduce: %w", err)
		}
		want := 0
		for r := 1 - color; r < n; r += 2 {
			want += r
		}
		if sum[0] != want {
			return fmt.Errorf("Allreduce: %d, want %d", sum[0], want)
		}
		b := []int{0}
		root := 0 // local rank 0 of the even group
		switch {
		case color == 0 && lr == root:
			b[0] = 4242
			root = ranks.Root
		case color == 0:
			root = ranks.ProcNull
		}
		if err := coll.Bcast(ic, b, root); err != nil {
			return fmt.Errorf("Bcast: %w", err)
		}
		if color == 1 && b[0] != 4242 {
			return fmt.Errorf("Bcast: %d", b[0])
		}
		if err := coll.Barrier(ic); err != nil {
			return fmt.Errorf("Barrier: %w", err)
		}
		m, err := ic.IntercommMerge(color == 1)
		if err != nil {
			return fmt.Errorf("Merge: %w", err)
		}
		if wantRank := lr + color*(n+1)/2; m.Rank() != wantRank || m.Size() != n {
			return fmt.Errorf("Merge: rank %d of %d, want %d of %d", m.Rank(), m.Size(), wantRank, n)
		}
		all := []int{0}
		if err := coll.Allreduce(m, []int{me}, all, coll.Sum); err != nil || all[0] != n*(n-1)/2 {
			return fmt.Errorf("Allreduce on the merged communicator: %d, %v", all[0], err)
		}
		d, err := ic.Dup()
		if err != nil {
			return fmt.Errorf("Dup: %w", err)
		}
		if err := ranks.Send(d, []int{me}, 0, 3); err != nil {
			return err
		}
		if lr == 0 {
			for range rs {
				if _, err := ranks.Recv(d, []int{0}, ranks.AnySource, 3); err != nil {
					return fmt.Errorf("on the duplicate: %w", err)
				}
			}
		}
		sp, err := ic.Split(lr%2, lr)
		if err != nil {
			return fmt.Errorf("Split: %w", err)
		}
		if sp != nil {
			x := []int{0}
			if err := coll.Allreduce(sp, []int{1}, x, coll.Sum); err != nil || x[0] != sp.RemoteSize() {
				return fmt.Errorf("Allreduce on a split: %d of %d, %v", x[0], sp.RemoteSize(), err)
			}
			if err := sp.Free(); err != nil {
				return err
			}
		}
		if _, err := ulfm.Agree(d, 1); !errors.Is(err, ranks.ErrUnsupported) {
			return fmt.Errorf("Agree: %v, want ErrUnsupported", err)
		}
		// World rank 0 revokes the duplicate while everyone else waits on
		// it for a message that never comes.
		if me == 0 {
			if err := ulfm.Revoke(d); err != nil {
				return err
			}
		} else if _, err := ranks.Recv(d, []int{0}, 0, 9); !errors.Is(err, ranks.ErrRevoked) {
			return fmt.Errorf("a receive on the revoked duplicate: %v, want ErrRevoked", err)
		}
		for _, x := range []*ranks.Comm{d, m, ic, local} {
			if err := x.Free(); err != nil {
				return err
			}
		}
		return coll.Barrier(c)
	}
}

func TestIntercommAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 1, 2}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "intercomm"}).check(t)
		})
	}
}

func TestAnySourceAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{2, 3, 2}, Body: "anysource"}).check(t)
}

// What needs the members' shared memory is refused on a communicator that
// spans nodes, with ErrUnsupported, at every rank: no hang.
func init() {
	bodies["refused"] = func(w *ranks.World, c *ranks.Comm) error {
		var v [1]int
		if _, err := win.AllocateShared(c, 64, 1); !errors.Is(err, ranks.ErrUnsupported) {
			return fmt.Errorf("win.AllocateShared: %v, want ErrUnsupported", err)
		}
		// Self still works.
		s, err := w.Self()
		if err != nil {
			return err
		}
		if err := coll.Allreduce(s, v[:], v[:], coll.Sum); err != nil {
			return fmt.Errorf("Allreduce on self: %v", err)
		}
		return nil
	}
}

func TestRefusedAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{2, 2}, Body: "refused"}).check(t)
}

// Communicators across nodes: Dup, Split, Create, SplitType, Idup and a
// Cartesian topology give each member the right rank and size; their
// traffic stays apart from the world's; the common collectives on them
// give the right values; and creating and freeing more communicators
// than a node has context slots leaks none.
func init() {
	bodies["create"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		// The same tag on the world and on its duplicate, received in
		// the other order: each message stays in its communicator.
		d, err := c.Dup()
		if err != nil {
			return fmt.Errorf("Dup: %w", err)
		}
		if d.Rank() != me || d.Size() != n {
			return fmt.Errorf("Dup: rank %d of %d, want %d of %d", d.Rank(), d.Size(), me, n)
		}
		next, prev := (me+1)%n, (me+n-1)%n
		for _, m := range []int{8, 1000, 70000} {
			q1, err := ranks.Isend(c, pattern(me, next, 1, m), next, 7)
			if err != nil {
				return err
			}
			q2, err := ranks.Isend(d, pattern(me, next, 2, m), next, 7)
			if err != nil {
				return err
			}
			got := make([]byte, m)
			if _, err := ranks.Recv(d, got, prev, 7); err != nil {
				return fmt.Errorf("Recv on the duplicate: %w", err)
			}
			if !bytes.Equal(got, pattern(prev, me, 2, m)) {
				return fmt.Errorf("the duplicate's %d-byte message from %d is not its own", m, prev)
			}
			if _, err := ranks.Recv(c, got, prev, 7); err != nil {
				return err
			}
			if !bytes.Equal(got, pattern(prev, me, 1, m)) {
				return fmt.Errorf("the world's %d-byte message from %d is not its own", m, prev)
			}
			if err := ranks.WaitAll([]*ranks.Request{q1, q2}, nil); err != nil {
				return err
			}
		}
		if err := sumCheck(d, "Dup", identity(n)); err != nil {
			return err
		}
		// Split in two, ranks reversed: every node has members of both.
		s, err := c.Split(me%2, -me)
		if err != nil {
			return fmt.Errorf("Split: %w", err)
		}
		var half []int
		for r := n - 1; r >= 0; r-- {
			if r%2 == me%2 {
				half = append(half, r)
			}
		}
		if err := sumCheck(s, "Split", half); err != nil {
			return err
		}
		// A split of the split: a communicator created on one that
		// spans nodes, by a leader that need not be its rank 0's.
		ss, err := s.Split(0, me)
		if err != nil {
			return fmt.Errorf("Split of a split: %w", err)
		}
		sorted := slices.Clone(half)
		slices.Sort(sorted)
		if err := sumCheck(ss, "Split of a split", sorted); err != nil {
			return err
		}
		// Create from a group without rank 0; rank 0 gets nil.
		g, err := c.Group()
		if err != nil {
			return err
		}
		sub, err := g.Excl([]int{0})
		if err != nil {
			return err
		}
		cr, err := c.Create(sub)
		if err != nil {
			return fmt.Errorf("Create: %w", err)
		}
		if (me == 0) != (cr == nil) {
			return fmt.Errorf("Create: rank %d got %v", me, cr)
		}
		if cr != nil {
			if err := sumCheck(cr, "Create", identity(n)[1:]); err != nil {
				return err
			}
		}
		// SplitType(TypeShared): this node's ranks, in world order.
		sh, err := c.SplitType(ranks.TypeShared, 0)
		if err != nil {
			return fmt.Errorf("SplitType: %w", err)
		}
		var node []int
		at := 0
		for _, k := range strings.Split(os.Getenv("SHMPI_NODE_TEST_COUNTS"), ",") {
			var count int
			fmt.Sscan(k, &count)
			if me >= at && me < at+count {
				node = identity(at + count)[at:]
			}
			at += count
		}
		if err := sumCheck(sh, "SplitType", node); err != nil {
			return err
		}
		// Idup, and a ring on a Cartesian topology.
		var id *ranks.Comm
		q, err := c.Idup(&id)
		if err != nil {
			return fmt.Errorf("Idup: %w", err)
		}
		if _, err := q.Wait(); err != nil {
			return fmt.Errorf("Idup: %w", err)
		}
		if err := sumCheck(id, "Idup", identity(n)); err != nil {
			return err
		}
		cart, err := c.CartCreate([]int{n}, []bool{true}, false)
		if err != nil {
			return fmt.Errorf("CartCreate: %w", err)
		}
		src, dst, err := cart.CartShift(0, 1)
		if err != nil {
			return err
		}
		got := []int{-1}
		if _, err := ranks.Sendrecv(cart, []int{me}, dst, 0, got, src, 0); err != nil {
			return fmt.Errorf("Sendrecv on the ring: %w", err)
		}
		if got[0] != prev {
			return fmt.Errorf("ring: got %d, want %d", got[0], prev)
		}
		for _, x := range []*ranks.Comm{d, s, ss, cr, sh, id, cart} {
			if x != nil {
				if err := x.Free(); err != nil {
					return err
				}
			}
		}
		// More creations than a node has slots: each is freed, so none
		// may run out.
		for i := range 1100 {
			x, err := c.Dup()
			if err != nil {
				return fmt.Errorf("Dup %d: %w", i, err)
			}
			if i%100 == 0 {
				if err := sumCheck(x, "Dup", identity(n)); err != nil {
					return err
				}
			}
			if err := x.Free(); err != nil {
				return err
			}
		}
		return nil
	}
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// sumCheck checks that x's members are the world ranks of want, in
// order, by the rank and size each sees and by an Allreduce, a Bcast and
// an Allgather of their world ranks.
func sumCheck(x *ranks.Comm, what string, want []int) error {
	if x == nil {
		return fmt.Errorf("%s: no communicator", what)
	}
	me := x.WorldRank(x.Rank())
	i := slices.Index(want, me)
	if x.Size() != len(want) || x.Rank() != i {
		return fmt.Errorf("%s: world rank %d has rank %d of %d, want %d of %d", what, me, x.Rank(), x.Size(), i, len(want))
	}
	all := make([]int, len(want))
	if err := coll.Allgather(x, []int{me}, all); err != nil {
		return fmt.Errorf("%s: Allgather: %w", what, err)
	}
	if !slices.Equal(all, want) {
		return fmt.Errorf("%s: Allgather of world ranks gave %v, want %v", what, all, want)
	}
	sum := []int{me}
	if err := coll.Allreduce(x, nil, sum, coll.Sum); err != nil {
		return fmt.Errorf("%s: Allreduce: %w", what, err)
	}
	wantSum := 0
	for _, r := range want {
		wantSum += r
	}
	if sum[0] != wantSum {
		return fmt.Errorf("%s: Allreduce gave %d, want %d", what, sum[0], wantSum)
	}
	b := []int{me}
	if err := coll.Bcast(x, b, len(want)-1); err != nil {
		return fmt.Errorf("%s: Bcast: %w", what, err)
	}
	if b[0] != want[len(want)-1] {
		return fmt.Errorf("%s: Bcast gave %d, want %d", what, b[0], want[len(want)-1])
	}
	return nil
}

// Revoke across nodes: the last rank revokes a duplicate of the world
// while every other rank, on every node, waits in a receive on it; each
// gets ErrRevoked and sees it revoked, and the world still works. Then
// rank 0 revokes the world itself, the others waiting in a receive on
// it, and every rank still finalizes.
func init() {
	bodies["revoke"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		d, err := c.Dup()
		if err != nil {
			return err
		}
		if err := coll.Barrier(d); err != nil {
			return err
		}
		// The revoker waits until every rank has left the barrier.
		ready := func(root int) error {
			var b [1]int
			if me != root {
				return ranks.Send(c, b[:], root, 1)
			}
			for range n - 1 {
				if _, err := ranks.Recv(c, b[:], ranks.AnySource, 1); err != nil {
					return err
				}
			}
			return nil
		}
		if err := ready(n - 1); err != nil {
			return err
		}
		var v [1]int
		if me == n-1 {
			if err := ulfm.Revoke(d); err != nil {
				return fmt.Errorf("Revoke: %w", err)
			}
			if err := ranks.Send(d, v[:], 0, 0); !errors.Is(err, ranks.ErrRevoked) {
				return fmt.Errorf("Send after Revoke: %v, want ErrRevoked", err)
			}
		} else if _, err := ranks.Recv(d, v[:], ranks.AnySource, 0); !errors.Is(err, ranks.ErrRevoked) {
			return fmt.Errorf("Recv on the revoked duplicate: %v, want ErrRevoked", err)
		}
		if !ulfm.IsRevoked(d) {
			return fmt.Errorf("the duplicate is not revoked here")
		}
		if err := sumCheck(c, "the world after the revoke", identity(n)); err != nil {
			return err
		}
		if err := d.Free(); err != nil {
			return err
		}
		if err := ready(0); err != nil {
			return err
		}
		if me == 0 {
			if err := ulfm.Revoke(c); err != nil {
				return fmt.Errorf("Revoke of the world: %w", err)
			}
		} else if _, err := ranks.Recv(c, v[:], ranks.AnySource, 0); !errors.Is(err, ranks.ErrRevoked) {
			return fmt.Errorf("Recv on the revoked world: %v, want ErrRevoked", err)
		}
		if err := coll.Barrier(c); !errors.Is(err, ranks.ErrRevoked) {
			return fmt.Errorf("Barrier on the revoked world: %v, want ErrRevoked", err)
		}
		return nil
	}
}

func TestRevokeAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 1, 2}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "revoke", FT: true}).check(t)
		})
	}
}

// Agree and Shrink across nodes (and Iagree, Ishrink), first without a
// failure; then the usual recovery loop: the members of a duplicate of
// the world sum their world ranks with Allreduce, the victim dies by
// SIGKILL at the fourth iteration, and every survivor revokes, shrinks,
// agrees on the iteration to resume from and goes on. Every sum is checked; at the end
// the communicator has every survivor and no victim, and an Agree on the
// world reports the failure until it is acknowledged.
func init() {
	bodies["ft"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		victim, _ := nodeEnvInt("SHMPI_NODE_TEST_VICTIM")
		v, err := ulfm.Agree(c, ^(1 << me))
		if err != nil {
			return fmt.Errorf("Agree: %w", err)
		}
		if want := ^(1<<n - 1); v != want {
			return fmt.Errorf("Agree: %b, want %b", v, want)
		}
		s0, err := ulfm.Shrink(c)
		if err != nil {
			return fmt.Errorf("Shrink without a failure: %w", err)
		}
		if err := sumCheck(s0, "Shrink without a failure", identity(n)); err != nil {
			return err
		}
		if err := s0.Free(); err != nil {
			return err
		}
		// The nonblocking forms.
		flag := ^(1 << me)
		q, err := ulfm.Iagree(c, &flag)
		if err != nil {
			return fmt.Errorf("Iagree: %w", err)
		}
		if _, err := q.Wait(); err != nil {
			return fmt.Errorf("Iagree: %w", err)
		}
		if want := ^(1<<n - 1); flag != want {
			return fmt.Errorf("Iagree: %b, want %b", flag, want)
		}
		var s1 *ranks.Comm
		if q, err = ulfm.Ishrink(c, &s1); err != nil {
			return fmt.Errorf("Ishrink: %w", err)
		}
		if _, err := q.Wait(); err != nil {
			return fmt.Errorf("Ishrink: %w", err)
		}
		if err := sumCheck(s1, "Ishrink without a failure", identity(n)); err != nil {
			return err
		}
		if err := s1.Free(); err != nil {
			return err
		}
		comm, err := recoveryLoop(c, func(it int) {
			if me == victim && it == 3 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		})
		if err != nil {
			return err
		}
		var survivors []int
		for r := range n {
			if r != victim {
				survivors = append(survivors, r)
			}
		}
		if err := sumCheck(comm, "the shrunk communicator", survivors); err != nil {
			return err
		}
		if _, err := ulfm.Agree(comm, 1); err != nil {
			return fmt.Errorf("Agree on the shrunk communicator: %w", err)
		}
		if _, err := ulfm.Agree(c, 1); !errors.Is(err, ranks.ErrProcFailed) {
			return fmt.Errorf("Agree on the world before the acknowledgement: %v, want ErrProcFailed", err)
		}
		if err := c.FailureAck(); err != nil {
			return err
		}
		if _, err := ulfm.Agree(c, 1); err != nil {
			return fmt.Errorf("Agree on the world after the acknowledgement: %w", err)
		}
		return nil
	}
}

// recoveryLoop is the usual recovery loop, on a duplicate of c: six
// iterations of an Allreduce of the members' world ranks, each sum
// checked. before(it) runs before iteration it (where a victim dies); on
// an error every survivor revokes, shrinks, and resumes from the
// earliest iteration a survivor had not finished. It returns the
// communicator it ended on.
func recoveryLoop(c *ranks.Comm, before func(it int)) (*ranks.Comm, error) {
	comm, err := c.Dup()
	if err != nil {
		return nil, err
	}
	for it := 0; it < 6; it++ {
		before(it)
		x := []int{c.Rank()}
		err := coll.Allreduce(comm, nil, x, coll.Sum)
		if err == nil {
			want := 0
			for r := range comm.Size() {
				want += comm.WorldRank(r)
			}
			if x[0] != want {
				return nil, fmt.Errorf("iteration %d: sum %d, want %d", it, x[0], want)
			}
			continue
		}
		if !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrRevoked) {
			return nil, fmt.Errorf("iteration %d: %w", it, err)
		}
		if err := ulfm.Revoke(comm); err != nil {
			return nil, fmt.Errorf("Revoke: %w", err)
		}
		nc, err := ulfm.Shrink(comm)
		if err != nil {
			return nil, fmt.Errorf("Shrink: %w", err)
		}
		comm.Free()
		comm = nc
		// Some survivors may have finished this iteration: resume from
		// the earliest.
		at := []int{it}
		if err := coll.Allreduce(comm, nil, at, coll.Min[int]); err != nil {
			return nil, fmt.Errorf("Allreduce after Shrink: %w", err)
		}
		it = at[0] - 1
	}
	return comm, nil
}

func TestAgreeShrinkAcrossNodes(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		victim int
	}{{[]int{2, 2}, 0}, {[]int{2, 2}, 3}, {[]int{3, 1, 2}, 0}, {[]int{3, 1, 2}, 3}, {[]int{3, 1, 2}, 5}} {
		t.Run(fmt.Sprint(tc.counts, tc.victim), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: tc.counts, Body: "ft", FT: true,
				Env: []string{fmt.Sprintf("SHMPI_NODE_TEST_VICTIM=%d", tc.victim)}}).check(t, tc.victim)
		})
	}
}

func TestCommunicatorsAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 1, 2}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "create"}).check(t)
		})
	}
}

// A rank's failure: rank 1 (node 0) dies by SIGKILL while every other
// rank waits to receive from it; every survivor, on every node, gets
// ErrProcFailed naming rank 1.
func init() {
	bodies["fail"] = func(w *ranks.World, c *ranks.Comm) error {
		me := c.Rank()
		if me == 1 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		var v [1]int
		_, err := ranks.Recv(c, v[:], 1, 0)
		var e *ranks.Error
		if !errors.Is(err, ranks.ErrProcFailed) || !errors.As(err, &e) || e.Rank != 1 {
			return fmt.Errorf("Recv from the dead rank: %v, want ErrProcFailed naming rank 1", err)
		}
		// The others still talk: a ring among the survivors.
		var live []int
		for r := range c.Size() {
			if r != 1 {
				live = append(live, r)
			}
		}
		i := 0
		for live[i] != me {
			i++
		}
		next, prev := live[(i+1)%len(live)], live[(i+len(live)-1)%len(live)]
		out := []int{me}
		got := make([]int, 1)
		if _, err := ranks.Sendrecv(c, out, next, 5, got, prev, 5); err != nil {
			return err
		}
		if got[0] != prev {
			return fmt.Errorf("ring: got %d from %d", got[0], prev)
		}
		return nil
	}
}

func TestFailureAcrossNodes(t *testing.T) {
	nr := runNodes(t, nodesOpts{Counts: []int{2, 2, 2}, Body: "fail", FT: true})
	nr.check(t, 1)
	for k, res := range nr.res {
		if k != 0 && res != nil && (len(res.Failed) != 1 || res.Failed[0] != 1) {
			t.Errorf("node %d: failures reported %v, want [1]", k, res.Failed)
		}
	}
}

// Without FT the first failure ends the job on every node: nobody hangs,
// nothing is left.
func TestFailureEndsJobWithoutFT(t *testing.T) {
	nr := runNodes(t, nodesOpts{Counts: []int{2, 2}, Body: "fail"})
	for k, res := range nr.res {
		if res == nil {
			continue
		}
		if res.Ended == "" {
			t.Errorf("node %d: the job was not ended", k)
		}
	}
}

// Abort on one node ends every node's ranks.
func init() {
	bodies["abort"] = func(w *ranks.World, c *ranks.Comm) error {
		if c.Rank() == 2 {
			c.Abort(7)
		}
		var v [1]int
		ranks.Recv(c, v[:], 2, 0) // never comes
		return errors.New("still running after the abort")
	}
}

func TestAbortAcrossNodes(t *testing.T) {
	nr := runNodes(t, nodesOpts{Counts: []int{2, 2}, Body: "abort"})
	for k, res := range nr.res {
		if res == nil {
			continue
		}
		if res.Abort == nil || res.Abort.Rank != 2 || res.Abort.Code != 7 {
			t.Errorf("node %d: abort %v, want rank 2 with code 7 (%s)", k, res.Abort, res.Ended)
		}
		for _, x := range res.Exits {
			if x.Sig == 0 {
				t.Errorf("node %d: rank %d %s, want killed", k, x.Rank, x.How())
			}
		}
	}
	leftovers(t)
}

// leftovers fails if a segment file is left in /dev/shm.
func leftovers(t *testing.T) {
	t.Helper()
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "shmpi-") {
			t.Errorf("left in /dev/shm: %s", e.Name())
		}
	}
}

// The collectives that run across nodes give what they give on one node:
// every root, in place and not, an operation that does not commute (so
// rank order shows), and sizes from a byte to beyond the eager limit.
func init() {
	bodies["collectives"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		if err := coll.Barrier(c); err != nil {
			return err
		}
		for _, m := range []int{1, 1000, 70000} {
			for root := range n {
				b := make([]int32, m)
				if me == root {
					for i := range b {
						b[i] = int32(root*1000 + i)
					}
				}
				if err := coll.Bcast(c, b, root); err != nil {
					return fmt.Errorf("Bcast %d from %d: %w", m, root, err)
				}
				for i := range b {
					if b[i] != int32(root*1000+i) {
						return fmt.Errorf("Bcast %d from %d: element %d is %d", m, root, i, b[i])
					}
				}
			}
			// Sum, and an operation that does not commute: 2x2 matrix
			// products (mod a prime), whose result shows the rank order.
			send := make([]int64, m)
			for i := range send {
				send[i] = int64(me + i)
			}
			sum := make([]int64, m)
			if err := coll.Allreduce(c, send, sum, coll.Sum); err != nil {
				return fmt.Errorf("Allreduce %d: %w", m, err)
			}
			mats := make([]mat, m)
			for i := range mats {
				mats[i] = matOf(me, i)
			}
			if err := coll.Allreduce(c, nil, mats, matMul); err != nil {
				return fmt.Errorf("Allreduce in place %d: %w", m, err)
			}
			for i := range m {
				wantSum, want := int64(0), matOf(0, i)
				for r := range n {
					wantSum += int64(r + i)
					if r > 0 {
						want = want.times(matOf(r, i))
					}
				}
				if sum[i] != wantSum || mats[i] != want {
					return fmt.Errorf("Allreduce %d: element %d: sum %d want %d, product %v want %v", m, i, sum[i], wantSum, mats[i], want)
				}
			}
			// Reduce to the last rank, to the first in place, and to one
			// in the middle: a node's leader or not, on the first node,
			// a middle one or the last.
			for _, root := range []int{n - 1, 0, n / 2} {
				mine := make([]mat, m)
				for i := range mine {
					mine[i] = matOf(me, i)
				}
				red := make([]mat, m)
				send := mine
				if root == 0 && me == 0 {
					copy(red, mine)
					send = nil // in place
				}
				if err := coll.Reduce(c, send, red, matMul, root); err != nil {
					return fmt.Errorf("Reduce %d to %d: %w", m, root, err)
				}
				if me == root && (red[0] != mats[0] || red[m-1] != mats[m-1]) {
					return fmt.Errorf("Reduce %d at %d: %v..%v, want %v..%v", m, root, red[0], red[m-1], mats[0], mats[m-1])
				}
			}
			root := n - 1
			// Gather, Scatter, Allgather, Alltoall of m-element blocks.
			all := make([]int64, n*m)
			if err := coll.Gather(c, send, all, root); err != nil {
				return fmt.Errorf("Gather %d: %w", m, err)
			}
			check := func(what string, b []int64, f func(r, i int) int64) error {
				for r := range n {
					for i := range m {
						if b[r*m+i] != f(r, i) {
							return fmt.Errorf("%s %d: block %d element %d is %d, want %d", what, m, r, i, b[r*m+i], f(r, i))
						}
					}
				}
				return nil
			}
			if me == root {
				if err := check("Gather", all, func(r, i int) int64 { return int64(r + i) }); err != nil {
					return err
				}
			}
			if me == root {
				for r := range n {
					for i := range m {
						all[r*m+i] = int64(r*7 + i)
					}
				}
			}
			part := make([]int64, m)
			if err := coll.Scatter(c, all, part, root); err != nil {
				return fmt.Errorf("Scatter %d: %w", m, err)
			}
			for i := range m {
				if part[i] != int64(me*7+i) {
					return fmt.Errorf("Scatter %d: element %d is %d", m, i, part[i])
				}
			}
			// From the first rank (in place) and from one in the middle.
			for _, root := range []int{0, n / 2} {
				blocks := make([]int64, n*m)
				for r := range n {
					for i := range m {
						blocks[r*m+i] = int64(r*9 + i + root)
					}
				}
				out := make([]int64, m)
				if me == root && root == 0 {
					out = nil // in place
				}
				if err := coll.Scatter(c, blocks, out, root); err != nil {
					return fmt.Errorf("Scatter %d from %d: %w", m, root, err)
				}
				for i := range len(out) {
					if out[i] != int64(me*9+i+root) {
						return fmt.Errorf("Scatter %d from %d: element %d is %d", m, root, i, out[i])
					}
				}
			}
			if err := coll.Allgather(c, send, all); err != nil {
				return fmt.Errorf("Allgather %d: %w", m, err)
			}
			if err := check("Allgather", all, func(r, i int) int64 { return int64(r + i) }); err != nil {
				return err
			}
			// In place, and Gather to the first rank (in place) and to one
			// in the middle.
			clear(all)
			copy(all[me*m:], send)
			if err := coll.Allgather(c, nil, all); err != nil {
				return fmt.Errorf("Allgather %d in place: %w", m, err)
			}
			if err := check("Allgather in place", all, func(r, i int) int64 { return int64(r + i) }); err != nil {
				return err
			}
			for _, root := range []int{0, n / 2} {
				clear(all)
				in := send
				if me == root && root == 0 {
					copy(all[me*m:], send)
					in = nil
				}
				if err := coll.Gather(c, in, all, root); err != nil {
					return fmt.Errorf("Gather %d to %d: %w", m, root, err)
				}
				if me == root {
					if err := check(fmt.Sprint("Gather to ", root), all, func(r, i int) int64 { return int64(r + i) }); err != nil {
						return err
					}
				}
			}
			out := make([]int64, n*m)
			in := make([]int64, n*m)
			for r := range n {
				for i := range m {
					out[r*m+i] = int64(me*100 + r*10 + i)
				}
			}
			if err := coll.Alltoall(c, out, in); err != nil {
				return fmt.Errorf("Alltoall %d: %w", m, err)
			}
			if err := check("Alltoall", in, func(r, i int) int64 { return int64(r*100 + me*10 + i) }); err != nil {
				return err
			}
		}
		// A nonblocking one runs the same way.
		v := []int{me}
		q, err := coll.Iallreduce(c, nil, v, coll.Sum)
		if err != nil {
			return err
		}
		if _, err := q.Wait(); err != nil {
			return err
		}
		if v[0] != n*(n-1)/2 {
			return fmt.Errorf("Iallreduce: %d", v[0])
		}
		return coll.Barrier(c)
	}
}

func TestCollectivesAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 1, 2}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "collectives"}).check(t)
		})
	}
}

// The other collectives across nodes: the v-forms, Alltoallw, the reduce
// scatters, Scan and Exscan (an operation that does not commute shows the
// rank order), the neighbourhood collectives on a ring, and nonblocking
// and persistent forms, each against values computed here.
func init() {
	bodies["collectives-more"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		root := n - 1
		// Rank r contributes r+1 elements r*100+i.
		counts, displs := make([]int, n), make([]int, n)
		total := 0
		for r := range n {
			counts[r], displs[r] = r+1, total
			total += r + 1
		}
		block := func(r int) []int64 {
			b := make([]int64, r+1)
			for i := range b {
				b[i] = int64(r*100 + i)
			}
			return b
		}
		checkAll := func(what string, got []int64) error {
			for r := range n {
				for i, v := range block(r) {
					if got[displs[r]+i] != v {
						return fmt.Errorf("%s: block %d element %d is %d, want %d", what, r, i, got[displs[r]+i], v)
					}
				}
			}
			return nil
		}
		all := make([]int64, total)
		if err := coll.Gatherv(c, block(me), all, counts, displs, root); err != nil {
			return fmt.Errorf("Gatherv: %w", err)
		}
		if me == root {
			if err := checkAll("Gatherv", all); err != nil {
				return err
			}
		}
		mine := make([]int64, me+1)
		if err := coll.Scatterv(c, all, counts, displs, mine, root); err != nil {
			return fmt.Errorf("Scatterv: %w", err)
		}
		if !slices.Equal(mine, block(me)) {
			return fmt.Errorf("Scatterv: %v, want %v", mine, block(me))
		}
		clear(all)
		if err := coll.Allgatherv(c, block(me), all, counts, displs); err != nil {
			return fmt.Errorf("Allgatherv: %w", err)
		}
		if err := checkAll("Allgatherv", all); err != nil {
			return err
		}
		// Alltoallv: s sends r a block of (s+r)%3+1 elements s*1000+r*10+i.
		vlen := func(s, r int) int { return (s+r)%3 + 1 }
		sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		var send []int64
		rtotal := 0
		for r := range n {
			sc[r], sd[r] = vlen(me, r), len(send)
			for i := range sc[r] {
				send = append(send, int64(me*1000+r*10+i))
			}
			rc[r], rd[r] = vlen(r, me), rtotal
			rtotal += rc[r]
		}
		recv := make([]int64, rtotal)
		if err := coll.Alltoallv(c, send, sc, sd, recv, rc, rd); err != nil {
			return fmt.Errorf("Alltoallv: %w", err)
		}
		for s := range n {
			for i := range rc[s] {
				if want := int64(s*1000 + me*10 + i); recv[rd[s]+i] != want {
					return fmt.Errorf("Alltoallv: from %d element %d is %d, want %d", s, i, recv[rd[s]+i], want)
				}
			}
		}
		// Alltoallw: blocks of bytes, (s+r)%4 long, each byte s*16+r.
		sw, rw := make([][]byte, n), make([][]byte, n)
		for r := range n {
			sw[r] = bytes.Repeat([]byte{byte(me*16 + r)}, (me+r)%4)
			rw[r] = make([]byte, (r+me)%4)
		}
		if err := coll.Alltoallw(c, sw, rw); err != nil {
			return fmt.Errorf("Alltoallw: %w", err)
		}
		for s := range n {
			if want := bytes.Repeat([]byte{byte(s*16 + me)}, (s+me)%4); !bytes.Equal(rw[s], want) {
				return fmt.Errorf("Alltoallw: from %d %v, want %v", s, rw[s], want)
			}
		}
		// ReduceScatterBlock of 3 elements a member, and ReduceScatter
		// with counts r%2+1: element j of the input is me+j.
		const m = 3
		in := make([]int64, n*m)
		for j := range in {
			in[j] = int64(me + j)
		}
		out := make([]int64, m)
		if err := coll.ReduceScatterBlock(c, in, out, coll.Sum); err != nil {
			return fmt.Errorf("ReduceScatterBlock: %w", err)
		}
		for i := range m {
			if want := int64(n*(n-1)/2 + n*(me*m+i)); out[i] != want {
				return fmt.Errorf("ReduceScatterBlock: element %d is %d, want %d", i, out[i], want)
			}
		}
		rsc := make([]int, n)
		off, sum := 0, 0
		for r := range n {
			rsc[r] = r%2 + 1
			if r < me {
				off += rsc[r]
			}
			sum += rsc[r]
		}
		in = in[:0]
		for j := range sum {
			in = append(in, int64(me+j))
		}
		out = make([]int64, rsc[me])
		if err := coll.ReduceScatter(c, in, out, rsc, coll.Sum); err != nil {
			return fmt.Errorf("ReduceScatter: %w", err)
		}
		for i := range out {
			if want := int64(n*(n-1)/2 + n*(off+i)); out[i] != want {
				return fmt.Errorf("ReduceScatter: element %d is %d, want %d", i, out[i], want)
			}
		}
		// Scan and Exscan: matrix products in rank order, short and long.
		for _, k := range []int{1, 300} {
			x := make([]mat, k)
			for i := range x {
				x[i] = matOf(me, i)
			}
			sc := make([]mat, k)
			if err := coll.Scan(c, x, sc, matMul); err != nil {
				return fmt.Errorf("Scan %d: %w", k, err)
			}
			ex := make([]mat, k)
			if err := coll.Exscan(c, x, ex, matMul); err != nil {
				return fmt.Errorf("Exscan %d: %w", k, err)
			}
			for i := range k {
				want := matOf(0, i)
				for r := 1; r <= me; r++ {
					if r == me && me > 0 && ex[i] != want {
						return fmt.Errorf("Exscan %d: element %d is %v, want %v", k, i, ex[i], want)
					}
					want = want.times(matOf(r, i))
				}
				if sc[i] != want {
					return fmt.Errorf("Scan %d: element %d is %v, want %v", k, i, sc[i], want)
				}
			}
		}
		// Neighbourhood collectives on a ring: sources and destinations
		// are the rank before and the rank after.
		cart, err := c.CartCreate([]int{n}, []bool{true}, false)
		if err != nil {
			return fmt.Errorf("CartCreate: %w", err)
		}
		prev, next := (me+n-1)%n, (me+1)%n
		nb := make([]int64, 2)
		if err := coll.NeighborAllgather(cart, []int64{int64(me)}, nb); err != nil {
			return fmt.Errorf("NeighborAllgather: %w", err)
		}
		if nb[0] != int64(prev) || nb[1] != int64(next) {
			return fmt.Errorf("NeighborAllgather: %v, want [%d %d]", nb, prev, next)
		}
		if err := coll.NeighborAlltoall(cart, []int64{int64(me*10 + 1), int64(me*10 + 2)}, nb); err != nil {
			return fmt.Errorf("NeighborAlltoall: %w", err)
		}
		// The rank before sent its second block (to its next), the rank
		// after its first.
		if nb[0] != int64(prev*10+2) || nb[1] != int64(next*10+1) {
			return fmt.Errorf("NeighborAlltoall: %v, want [%d %d]", nb, prev*10+2, next*10+1)
		}
		// Nonblocking and persistent forms take the same paths.
		clear(all)
		q, err := coll.Igatherv(c, block(me), all, counts, displs, 0)
		if err != nil {
			return fmt.Errorf("Igatherv: %w", err)
		}
		if _, err := q.Wait(); err != nil {
			return fmt.Errorf("Igatherv: %w", err)
		}
		if me == 0 {
			if err := checkAll("Igatherv", all); err != nil {
				return err
			}
		}
		v, pre := []int64{int64(me)}, []int64{0}
		p, err := coll.ScanInit(c, v, pre, coll.Sum)
		if err != nil {
			return fmt.Errorf("ScanInit: %w", err)
		}
		for round := range 2 {
			if err := p.Start(); err != nil {
				return fmt.Errorf("Scan start %d: %w", round, err)
			}
			if _, err := p.Wait(); err != nil {
				return fmt.Errorf("Scan round %d: %w", round, err)
			}
			if want := int64(me * (me + 1) / 2); pre[0] != want {
				return fmt.Errorf("persistent Scan round %d: %d, want %d", round, pre[0], want)
			}
		}
		if err := p.Free(); err != nil {
			return err
		}
		if err := cart.Free(); err != nil {
			return err
		}
		return coll.Barrier(c)
	}
}

// Nonblocking and persistent collectives as the first ones on a new
// communicator across nodes: from the fifth, Allreduce makes the
// communicator's hierarchy inside its queued run, which must not queue
// collectives behind itself (it hung so).
func init() {
	bodies["nonblocking-first"] = func(w *ranks.World, c *ranks.Comm) error {
		me, n := c.Rank(), c.Size()
		want := n * (n - 1) / 2
		d, err := c.Dup()
		if err != nil {
			return err
		}
		for i := range 8 {
			out := []int{0}
			q, err := coll.Iallreduce(d, []int{me}, out, coll.Sum)
			if err != nil {
				return fmt.Errorf("Iallreduce %d: %w", i, err)
			}
			if _, err := q.Wait(); err != nil {
				return fmt.Errorf("Iallreduce %d: %w", i, err)
			}
			if out[0] != want {
				return fmt.Errorf("Iallreduce %d: %d, want %d", i, out[0], want)
			}
		}
		p, err := c.Dup()
		if err != nil {
			return err
		}
		bc, in, out, all := make([]int, 2), []int{0}, []int{0}, make([]int, n)
		var ps []*ranks.Request
		for _, f := range []func() (*ranks.Request, error){
			func() (*ranks.Request, error) { return coll.BcastInit(p, bc, 0) },
			func() (*ranks.Request, error) { return coll.AllreduceInit(p, in, out, coll.Sum) },
			func() (*ranks.Request, error) { return coll.AllgatherInit(p, in, all) },
			func() (*ranks.Request, error) { return coll.BarrierInit(p) },
		} {
			q, err := f()
			if err != nil {
				return err
			}
			ps = append(ps, q)
		}
		for it := range 4 {
			in[0] = me + it
			if me == 0 {
				bc[0], bc[1] = it, -it
			}
			if err := ranks.StartAll(ps); err != nil {
				return err
			}
			if err := ranks.WaitAll(ps, nil); err != nil {
				return fmt.Errorf("round %d: %w", it, err)
			}
			if bc[0] != it || bc[1] != -it || out[0] != want+n*it || all[n-1] != n-1+it {
				return fmt.Errorf("round %d: Bcast %v, Allreduce %d (want %d), Allgather %v", it, bc, out[0], want+n*it, all)
			}
		}
		for _, q := range ps {
			if err := q.Free(); err != nil {
				return err
			}
		}
		if err := p.Free(); err != nil {
			return err
		}
		return d.Free()
	}
}

func TestNonblockingFirstAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{2, 2}, Body: "nonblocking-first"}).check(t)
}

func TestMoreCollectivesAcrossNodes(t *testing.T) {
	for _, counts := range [][]int{{2, 2}, {3, 1, 2}} {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "collectives-more"}).check(t)
		})
	}
}

// mat is a 2x2 matrix mod matP: their product is associative and does
// not commute, as MPI lets a user's operation be.
type mat [4]int64

const matP = 1_000_000_007

func matOf(r, i int) mat { return mat{int64(r + 2), 1, int64(i%5 + 1), 0} }

func (a mat) times(b mat) mat {
	return mat{
		(a[0]*b[0] + a[1]*b[2]) % matP, (a[0]*b[1] + a[1]*b[3]) % matP,
		(a[2]*b[0] + a[3]*b[2]) % matP, (a[2]*b[1] + a[3]*b[3]) % matP,
	}
}

var matMul = coll.Op[mat](func(inout, in []mat) {
	for i := range inout {
		inout[i] = inout[i].times(in[i])
	}
})

// A synchronous send to a rank of another node completes only once the
// receive matches: rank 0's Issend to the last rank is still pending
// after a round trip that the receiver makes before it posts the receive.
func init() {
	bodies["ssend"] = func(w *ranks.World, c *ranks.Comm) error {
		last := c.Size() - 1
		for _, n := range []int{8, 5000} {
			switch c.Rank() {
			case 0:
				q, err := ranks.Issend(c, pattern(0, last, n, n), last, 1)
				if err != nil {
					return err
				}
				var b [1]byte
				if err := ranks.Send(c, b[:], last, 2); err != nil {
					return err
				}
				if _, err := ranks.Recv(c, b[:], last, 3); err != nil {
					return err
				}
				if _, done, err := q.Test(); done || err != nil {
					return fmt.Errorf("Issend of %d bytes done (%v) before its receive was posted", n, err)
				}
				if err := ranks.Send(c, b[:], last, 4); err != nil {
					return err
				}
				if _, err := q.Wait(); err != nil {
					return err
				}
			case last:
				var b [1]byte
				if _, err := ranks.Recv(c, b[:], 0, 2); err != nil {
					return err
				}
				if err := ranks.Send(c, b[:], 0, 3); err != nil {
					return err
				}
				if _, err := ranks.Recv(c, b[:], 0, 4); err != nil {
					return err
				}
				got := make([]byte, n)
				if _, err := ranks.Recv(c, got, 0, 1); err != nil {
					return err
				}
				if !bytes.Equal(got, pattern(0, last, n, n)) {
					return fmt.Errorf("Ssend of %d: wrong bytes", n)
				}
			}
		}
		return nil
	}
}

func TestSsendAcrossNodes(t *testing.T) {
	runNodes(t, nodesOpts{Counts: []int{1, 2}, Body: "ssend"}).check(t)
}

// A collective across nodes when a member on another node has died: every
// survivor's Allreduce, Bcast and Barrier returns ErrProcFailed; none
// hangs on a live member that gave up.
func init() {
	bodies["coll-fail"] = func(w *ranks.World, c *ranks.Comm) error {
		victim := c.Size() - 2
		if c.Rank() == victim {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		// Wait until this rank knows of the death, so that every survivor
		// enters the collectives after it.
		var v [1]byte
		if _, err := ranks.Recv(c, v[:], victim, 0); !errors.Is(err, ranks.ErrProcFailed) {
			return fmt.Errorf("Recv from the dead rank: %v", err)
		}
		x := []int{c.Rank()}
		if err := coll.Allreduce(c, nil, x, coll.Sum); !errors.Is(err, ranks.ErrProcFailed) {
			return fmt.Errorf("Allreduce: %v, want ErrProcFailed", err)
		}
		if err := coll.Bcast(c, x, 0); !errors.Is(err, ranks.ErrProcFailed) {
			return fmt.Errorf("Bcast: %v, want ErrProcFailed", err)
		}
		if err := coll.Barrier(c); !errors.Is(err, ranks.ErrProcFailed) {
			return fmt.Errorf("Barrier: %v, want ErrProcFailed", err)
		}
		return nil
	}
}

// victimShapes are the nodes of the collective failure tests, whose
// victim is the next-to-last rank: two nodes (the leaders' binomial
// trees); three, the victim not a leader; four, the victim a leader (the
// leaders' one-hop exchange, hier.go).
var victimShapes = [][]int{{3, 3}, {2, 2, 2}, {2, 1, 2, 2}}

func TestCollectiveFailureAcrossNodes(t *testing.T) {
	for _, counts := range victimShapes {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "coll-fail", FT: true, Timeout: 30 * time.Second}).check(t, sum(counts)-2)
		})
	}
}

// A member on another node dies between collectives while the others are
// in a loop of them (those of shared memory on one node, Scan, Allgatherv
// and Alltoallw among them): every survivor's loop ends with
// ErrProcFailed, none hangs waiting for a live member that has given up.
func init() {
	bodies["coll-fail-during"] = func(w *ranks.World, c *ranks.Comm) error {
		victim := c.Size() - 2
		for i := range 300 {
			if c.Rank() == victim && i == 100 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			x := []int{c.Rank()}
			n := c.Size()
			var err error
			switch i % 10 {
			case 6:
				err = coll.Reduce(c, []int{1}, x, coll.Sum, i%n)
			case 7:
				err = coll.Gather(c, x, make([]int, n), i%n)
			case 8:
				err = coll.Allgather(c, x, make([]int, n))
			case 9:
				err = coll.Scatter(c, make([]int, n), x, i%n)
			case 0:
				err = coll.Allreduce(c, nil, x, coll.Sum)
			case 1:
				err = coll.Bcast(c, x, i%n)
			case 2:
				err = coll.Barrier(c)
			case 3:
				err = coll.Scan(c, []int{1}, x, coll.Sum)
			case 4:
				ones, displs := make([]int, n), make([]int, n)
				for r := range n {
					ones[r], displs[r] = 1, r
				}
				err = coll.Allgatherv(c, x, make([]int, n), ones, displs)
			case 5:
				blocks := make([][]byte, n)
				for r := range blocks {
					blocks[r] = []byte{byte(r)}
				}
				err = coll.Alltoallw(c, blocks, slices.Clone(blocks))
			}
			if errors.Is(err, ranks.ErrProcFailed) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("iteration %d: %v", i, err)
			}
		}
		return errors.New("every collective succeeded after the death")
	}
}

func TestCollectiveFailureDuringLoopAcrossNodes(t *testing.T) {
	for _, counts := range victimShapes {
		t.Run(fmt.Sprint(counts), func(t *testing.T) {
			runNodes(t, nodesOpts{Counts: counts, Body: "coll-fail-during", FT: true, Timeout: 30 * time.Second}).check(t, sum(counts)-2)
		})
	}
}
