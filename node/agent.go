// Package node is the node agent of a shmpi world that spans nodes
// (issue 27, docs/nodes.md). One agent runs per node, started by the
// cluster's launcher (mpirun, prterun, srun). It is the shmpi launcher of
// its node: it creates the segment and starts, watches and reaps the
// node's ranks through ranks/launch, as shmrun does. It is also the only
// process of its node that talks to other nodes, through a Net: the
// system MPI (build tag mpi, cmd/shmnode) or, in tests, queues inside one
// process (Loopback).
//
// The ranks see one world: world rank = the node's offset + local rank,
// the offsets coming from an allgather of the nodes' rank counts. The
// segment of every node has a slot for every world rank; the agent
// serves the slots of the ranks of other nodes as proxies
// (launch.Proxy). A message to a rank of another node thus goes into
// that rank's slot here, the agent takes it out and sends it to the
// agent of the rank's node, which sends it on, as the sender, into the
// rank's real inbox. Ordering and matching (AnySource included) are
// those of a single node.
//
// What crosses nodes: point-to-point, communicator creation, every
// collective (hierarchical where coll/hier.go has them, else by messages,
// coll/span.go), windows (win/span.go), files (mpio/span.go), a rank's
// failure (every survivor anywhere sees ErrProcFailed naming it), Revoke,
// Agree and Shrink by messages among the members (ulfm/span.go), a
// rank's Finalize and Abort, and a node's death where the Net has ULFM.
// docs/nodes.md has the table, and what does not cross yet (Agree and
// Shrink on an intercommunicator whose groups span nodes).
package node

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/launch"
	"github.com/shmpi/shmpi/shm"
)

// Config describes one node's part of a job.
type Config struct {
	Net  Net
	N    int      // ranks on this node
	Path string   // program to run
	Args []string // its arguments
	Env  []string // the ranks' environment; nil means the agent's
	Dir  string
	Bind bool
	// Cores is the number of CPUs this node's ranks and agent run on; 0
	// means the machine's. Several "nodes" on one machine should split
	// its CPUs: ranks that think they have a core each spin.
	Cores int
	// Output returns where the output of world rank r goes (as
	// launch.Config.Output).
	Output func(r int) (stdout, stderr io.Writer)
	// FT says that failures are tolerated (shmrun --ft): a rank's
	// failure is reported to every node and the job goes on. Without it,
	// the first failure anywhere ends the job on every node.
	FT bool
	// Timeout, if not zero, ends the node's ranks once it has passed,
	// and Run's error then says which rank is stuck in which operation.
	Timeout time.Duration
	// IdleSpin is how long the agent polls after the last traffic before
	// it sleeps between polls; 0 means DefaultIdleSpin, negative never.
	IdleSpin time.Duration
	// LateSkip is how many long messages for a rank go the ordinary way
	// (their bytes received before the rank matches) after one of its
	// late messages could not go straight into its buffer; 0 means
	// DefaultLateSkip, negative none (every long message goes late).
	LateSkip int
	// Started, if set, is called with the node's job once its ranks are
	// started (tests use it to kill a rank).
	Started func(j *launch.Job, first, world int)
}

// Result is what became of one node's part of a job.
type Result struct {
	First, World int           // world ranks First.. run here, of World
	Exits        []launch.Exit // the local ranks' exits, in rank order
	Failed       []int         // ranks of other nodes reported failed here
	NodesFailed  []int         // agents (nodes) whose death the Net reported
	Abort        *launch.Abort // a rank's Comm.Abort that ended the job (here or elsewhere)
	Ended        string        // why the job ended early: a failure without FT, an abort, the timeout
}

// Run runs one node's part of a job: it learns the world from the other
// agents, starts the node's ranks, forwards messages and notices between
// them and the other nodes until every node's ranks have ended, and
// returns the node's exits. Call it once per agent, on every agent of
// the Net.
func Run(cfg Config) (*Result, error) {
	if cfg.N <= 0 {
		return nil, fmt.Errorf("node: need at least one rank, got %d", cfg.N)
	}
	agentsHere.Add(1)
	defer agentsHere.Add(-1)
	net := cfg.Net
	counts, err := net.Allgather(cfg.N)
	if err != nil {
		return nil, fmt.Errorf("node: allgather of rank counts: %w", err)
	}
	a := &agent{cfg: cfg, net: net, me: net.Rank(), offsets: make([]int, len(counts)+1), over: make([]bool, len(counts)),
		acks: map[uint64]func(uint8){}, spin: cfg.IdleSpin, lateQ: make([][]*lateMsg, len(counts)), lateSkip: make([]int, cfg.N)}
	a.skipAfter = max(cfg.LateSkip, 0)
	if cfg.LateSkip == 0 {
		a.skipAfter = DefaultLateSkip
	}
	switch {
	case a.spin == 0:
		a.spin = DefaultIdleSpin
	case a.spin < 0:
		a.spin = 0
	}
	for k, n := range counts {
		if n <= 0 {
			return nil, fmt.Errorf("node: agent %d has %d ranks", k, n)
		}
		a.offsets[k+1] = a.offsets[k] + n
	}
	a.first, a.world = a.offsets[a.me], a.offsets[len(counts)]
	j, err := launch.Start(launch.Config{N: cfg.N, World: a.world, First: a.first,
		Path: cfg.Path, Args: cfg.Args, Env: cfg.Env, Dir: cfg.Dir, Bind: cfg.Bind, Cores: cfg.Cores,
		Output: cfg.Output, AbortOnFailure: !cfg.FT})
	if err != nil {
		// The others wait for this node's ranks: tell them it has none.
		a.broadcast(frame{kind: frameDone})
		return nil, err
	}
	a.job = j
	a.failSent = make([]bool, cfg.N)
	a.res = &Result{First: a.first, World: a.world}
	a.proxies = make([]*proxyState, a.world)
	for r := range a.world {
		if r >= a.first && r < a.first+cfg.N {
			continue
		}
		p, err := j.Proxy(r)
		if err != nil {
			j.Kill()
			j.Wait()
			a.broadcast(frame{kind: frameDone})
			return nil, fmt.Errorf("node: proxy of rank %d: %w", r, err)
		}
		a.proxies[r] = &proxyState{p: p}
	}
	if cfg.Started != nil {
		cfg.Started(j, a.first, a.world)
	}
	runErr := a.loop()
	if runErr != nil {
		// The agent cannot go on: its node's ranks cannot reach the
		// others any more, and the others must not wait for them.
		j.Kill()
		if !a.sentDone {
			a.broadcast(frame{kind: frameDone})
		}
	}
	a.res.Exits = j.Wait()
	sort.Ints(a.res.Failed)
	if ab, ok := j.Aborted(); ok && a.res.Abort == nil {
		a.res.Abort = &ab
	}
	return a.res, runErr
}

type agent struct {
	cfg          Config
	net          Net
	job          *launch.Job
	me           int
	offsets      []int // offsets[k]: first world rank of agent k's node; the last is the world's size
	first, world int
	proxies      []*proxyState // by world rank; nil for the ranks of this node
	res          *Result

	spin     time.Duration                  // Config.IdleSpin, resolved
	failing  []int                          // local ranks whose failure goes out after the next drain (announceFail)
	epoch    uint64                         // the failure table's epoch last looked at
	failSent []bool                         // by local rank: its failure was announced
	finals   []int                          // local ranks that finalized, to announce after a drain
	acks     map[uint64]func(outcome uint8) // synchronous messages sent on, by id: their senders' acknowledgements
	ackSeq   uint64
	doneFrom int    // agents that said they are done, or died
	over     []bool // by agent: said it is done, or died
	sentDone bool
	ending   bool // the job is being ended here (failure without FT, abort, timeout)
	// lateQ: by agent, the long messages from it whose bytes are still
	// in the MPI, in the order they must be received (fillLate).
	lateQ [][]*lateMsg
	// lateSkip: by local rank, how many more long messages for it go
	// the ordinary way (their bytes received first), since its last late
	// one did not go straight into its buffer.
	lateSkip  []int
	skipAfter int // Config.LateSkip, resolved
}

// lateMsg is a long message from another node, sent on to its receiver
// here before its bytes arrived (launch.Proxy.SendLate).
type lateMsg struct {
	ps      *proxyState // of its sender
	dst     int         // its receiver's local rank
	late    launch.Late
	n       int
	at      time.Time // when its header came
	data    []byte    // the agent's buffer for its bytes, if they went there
	reqDone bool      // its send completed: late may no longer be used
}

// proxyState is the agent's bookkeeping for a rank of another node.
type proxyState struct {
	p           *launch.Proxy
	pending     []pendingSend // messages handed to this node's ranks, not yet complete
	finalWanted bool          // its node said it finalized: mark it once pending is empty
	finalized   bool
	failed      bool
	lostBytes   bool // bytes of its late messages were lost with its node
}

type pendingSend struct {
	req   *ranks.Request
	frame []byte   // keeps the message's bytes alive until req completes
	late  *lateMsg // or, for a late message, holds them
	sync  bool     // a synchronous message: at completion, acknowledge id to agent from
	from  int
	id    uint64
}

// nodeOf is the agent of world rank r.
func (a *agent) nodeOf(r int) int {
	return sort.Search(len(a.offsets)-1, func(k int) bool { return a.offsets[k+1] > r })
}

func (a *agent) broadcast(f frame) {
	for k := range a.net.Size() {
		if k != a.me {
			a.net.Send(k, f.header(), nil, nil) // a header each: the Net owns it
		}
	}
}

// loop forwards until every node's ranks have ended.
func (a *agent) loop() error {
	exits := a.job.Exits()
	localDone := false
	var deadline <-chan time.Time
	if a.cfg.Timeout > 0 {
		t := time.NewTimer(a.cfg.Timeout)
		defer t.Stop()
		deadline = t.C
	}
	var runErr error
	var lastBusy time.Time // when the loop last found nothing to do after some work
	for {
		busy, delivered := false, false
		// Local exits first: a rank that finalized has put everything it
		// sent into the proxies' inboxes, which the drain below empties
		// before its Finalize is announced.
	exitsLoop:
		for !localDone {
			select {
			case x, ok := <-exits:
				if !ok {
					localDone = true
					break exitsLoop
				}
				busy = true
				a.localExit(x)
			default:
				break exitsLoop
			}
		}
		if ep := a.job.Epoch(); ep != a.epoch {
			// A local rank's failure is declared in the table by a
			// surviving rank's watcher (robust futex) before the launcher
			// reaps the dead process: announce it from there.
			a.epoch = ep
			busy = a.localFailures() || busy
		}
		select {
		case <-deadline:
			runErr = a.timeout()
			deadline = nil
		default:
		}
		for _, ps := range a.proxies {
			if ps == nil {
				continue
			}
			for a.net.Backlog() < backlogMax {
				ctx, src, tag, data, ack, release, ok, err := ps.p.Take(getBuf, lendAbove)
				if !ok {
					break
				}
				busy = true
				if err != nil {
					bufs.put(data)
					continue // the sender failed during the copy: the message is lost with it
				}
				f := frame{kind: frameMsg, ctx: ctx, src: src, dst: ps.p.Rank, tag: tag, data: data}
				if ack != nil {
					// A synchronous send: its sender completes when the
					// receiver's node says the receive matched.
					a.ackSeq++
					f.sync, f.id = true, a.ackSeq
					a.acks[f.id] = ack
				}
				a.net.Send(a.nodeOf(ps.p.Rank), f.header(), data, release)
			}
		}
		a.announceFailures()
		if len(a.finals) > 0 {
			// Before a Finalize goes out, the acknowledgements of the
			// synchronous messages the rank matched: its sender must see
			// the match before it sees the rank gone.
			for _, ps := range a.proxies {
				if ps != nil && len(ps.pending) > 0 {
					a.advance(ps)
				}
			}
			for _, r := range a.finals {
				a.broadcast(frame{kind: frameFinal, src: r})
			}
			a.finals = a.finals[:0]
		}
		for {
			from, b, ok, err := a.net.Recv()
			if err != nil {
				// Only here: nf escapes, and the loop would allocate it
				// on every poll.
				var nf *NodesFailed
				if errors.As(err, &nf) {
					busy = true
					a.nodesFailed(nf.Agents)
					continue
				}
				return fmt.Errorf("node: agent %d: %w", a.me, err)
			}
			if !ok {
				break
			}
			busy = true
			long := len(b) == frameHeader && b[0] == frameMsg && b[1] == 1
			kept, err := a.handle(from, b)
			if err != nil {
				return err
			}
			if !kept {
				bufs.put(b)
			}
			delivered = true
			if long {
				// Let the receiver match it, or copy out what came,
				// before the next long frame keeps this CPU (the MPI's
				// receive polls): cross-node osu_bw 4 MiB, 10
				// interleaved runs, median 2,640 against 2,400 MB/s
				// (2026-11-26, when every long frame's bytes came with
				// it; both ranged 1.6-3.5 GB/s).
				break
			}
		}
		waiting := false
		for k := range a.lateQ {
			if len(a.lateQ[k]) == 0 {
				continue
			}
			busy = true
			if err := a.fillLate(k, false); err != nil {
				return err
			}
			waiting = waiting || len(a.lateQ[k]) > 0
		}
		for _, ps := range a.proxies {
			if ps != nil && (len(ps.pending) > 0 || ps.finalWanted) {
				busy = a.advance(ps) || busy
			}
		}
		if localDone && !a.sentDone {
			a.broadcast(frame{kind: frameDone})
			a.sentDone = true
		}
		if a.sentDone && a.doneFrom == a.net.Size()-1 {
			return runErr
		}
		if busy {
			lastBusy = time.Time{}
			if delivered || waiting {
				// Let the ranks that share this CPU take what arrived
				// now, not after another round of polling the MPI:
				// cross-node osu_latency 8 B, 6 interleaved runs, median
				// 15.3 against 16.0 µs (2026-11-26). And a receiver of
				// a late message must run to match it.
				shm.Yield()
			}
			continue
		}
		if lastBusy.IsZero() {
			lastBusy = time.Now()
		}
		a.idle(time.Since(lastBusy))
	}
}

// idle waits when nothing moved. For a while after the last traffic it
// polls, yielding the CPU between rounds: a message in flight is then
// forwarded within a round, and ranks or another agent that share the
// core run first (sched_yield). After Config.IdleSpin of quiet it sleeps
// between polls, growing to idleSleepMax, so that an idle job costs its
// node little; a local rank's failure or Finalize wakes it at once (the
// failure table's epoch), so that the other nodes hear of it without
// waiting for the next poll.
func (a *agent) idle(quiet time.Duration) {
	if quiet < a.spin {
		shm.Yield()
		if agentsHere.Load() > 1 {
			// Agents that share a process (Loopback) are goroutines: a
			// raw sched_yield keeps this one's P, and the Go scheduler
			// would let a third agent wait for its 10 ms preemption.
			// Not otherwise: a cross-node osu_latency took 35 µs with
			// it, 17 µs without (2026-11-26).
			runtime.Gosched()
		}
		return
	}
	a.net.Idle()
	a.job.WaitEpoch(a.epoch, min(quiet/16, idleSleepMax))
}

// lendAbove is the size above which a message sent from AllocMem memory
// is lent to the Net rather than copied into the agent's buffer
// (Proxy.Take): a frame longer than 64 KiB leaves from where its bytes
// are (mpinet.go), so the sender's node makes no copy of it. Cross-node
// osu_bw of 4 MiB from AllocMem buffers, 2 nodes of one core each: see
// docs/nodes.md (2026-11-27, late).
const lendAbove = longData

// backlogMax is how many bytes an agent lets its Net hold unsent before
// it takes no more from its proxies: beyond it, taking more only copies
// ahead while the Net makes no progress, and fills bufs.
const backlogMax = 8 << 20

// agentsHere counts the agents running in this process (several under
// Loopback, in tests).
var agentsHere atomic.Int32

// idleSleepMax is the longest an idle agent sleeps between polls of the
// other agents and of its proxies: what a message after a quiet spell can
// wait, at most, on each node it crosses.
const idleSleepMax = 250 * time.Microsecond

// DefaultIdleSpin is how long an agent polls after the last traffic
// before it sleeps between rounds (Config.IdleSpin).
const DefaultIdleSpin = 5 * time.Millisecond

// localExit handles the exit of one of this node's ranks.
func (a *agent) localExit(x launch.Exit) {
	if ab, ok := a.job.Aborted(); ok && !a.ending {
		// A rank's Abort: launch has killed this node's ranks; the other
		// nodes end theirs.
		a.ending = true
		a.res.Abort = &ab
		a.res.Ended = ab.String()
		a.broadcast(frame{kind: frameAbort, src: ab.Rank, tag: ab.Code})
		return
	}
	switch {
	case x.Failed() || x.NoInit && x.Abnormal():
		a.announceFail(x.Rank)
		if !a.cfg.FT && !a.ending {
			a.ending = true
			a.res.Ended = fmt.Sprintf("rank %d %s", x.Rank, x.How())
			a.job.Kill()
		}
	case !x.NoInit:
		a.finals = append(a.finals, x.Rank)
	}
}

// announceFail tells the other agents that local rank r failed, once:
// after the loop's drain of the proxies' inboxes (announceFailures), so
// that every message r published before it died reaches its receiver
// before its failure does. A receive from r then ends with the message,
// as on r's own node (the engine drains its inbox before it judges a
// receive from a dead peer); agreement across nodes counts on it.
func (a *agent) announceFail(r int) {
	if !a.failSent[r-a.first] {
		a.failSent[r-a.first] = true
		a.failing = append(a.failing, r)
	}
}

// announceFailures sends the failures announceFail queued.
func (a *agent) announceFailures() {
	for _, r := range a.failing {
		a.broadcast(frame{kind: frameFail, src: r})
	}
	a.failing = a.failing[:0]
}

// localFailures announces the local ranks that the failure table says
// failed; it reports whether there was one. Without FT the job ends at
// the exit, as for a failure seen there.
func (a *agent) localFailures() bool {
	found := false
	for _, f := range a.job.Fates() {
		if f.Rank >= a.first && f.Rank < a.first+a.cfg.N && f.State == ranks.StateFailed && !a.failSent[f.Rank-a.first] {
			a.announceFail(f.Rank)
			found = true
		}
	}
	return found
}

// handle acts on frame b from agent from. kept: b is still in use (a
// message on its way to a rank here); otherwise the caller may reuse it.
func (a *agent) handle(from int, b []byte) (kept bool, err error) {
	f, derr := decode(b)
	if derr != nil {
		return false, fmt.Errorf("node: from agent %d: %w", from, derr)
	}
	if f.kind == frameDone {
		if !a.over[from] {
			a.over[from] = true
			a.doneFrom++
		}
		return false, nil
	}
	if f.kind == frameAck {
		// A synchronous message that this agent sent on (id) matched its
		// receive on the receiver's node, or never will (the receiver
		// failed, the communicator was revoked or freed there): its
		// sender, here, completes, with the error that says why.
		if ack := a.acks[f.id]; ack != nil {
			delete(a.acks, f.id)
			ack(f.outcome)
		}
		return false, nil
	}
	if f.src < 0 || f.src >= a.world || a.proxies[f.src] == nil {
		return false, fmt.Errorf("node: from agent %d: a frame of kind %d about rank %d, not a rank of another node", from, f.kind, f.src)
	}
	ps := a.proxies[f.src]
	switch f.kind {
	case frameMsg:
		if f.long {
			return false, a.handleLong(from, b, f, ps)
		}
		if ps.failed || f.dst < a.first || f.dst >= a.first+a.cfg.N {
			return false, nil
		}
		req, err := ps.p.Send(f.ctx, f.dst, f.tag, f.data, f.sync)
		if err != nil {
			return false, fmt.Errorf("node: rank %d to %d: %w", f.src, f.dst, err)
		}
		ps.pending = append(ps.pending, pendingSend{req: req, frame: b, sync: f.sync, from: from, id: f.id})
		return true, nil
	case frameFail:
		if !ps.failed {
			ps.failed = true
			a.res.Failed = append(a.res.Failed, f.src)
			a.job.DeclareFailed(f.src)
		}
		if !a.cfg.FT && !a.ending {
			a.ending = true
			a.res.Ended = fmt.Sprintf("rank %d failed on node %d", f.src, from)
			a.job.Kill()
		}
	case frameFinal:
		ps.finalWanted = true
	case frameAbort:
		if !a.ending {
			a.ending = true
			a.res.Abort = &launch.Abort{Rank: f.src, Code: f.tag}
			a.res.Ended = a.res.Abort.String()
			a.job.Kill()
		}
	default:
		return false, fmt.Errorf("node: from agent %d: a frame of kind %d", from, f.kind)
	}
	return false, nil
}

// latePatience is how long the bytes of a late message wait in the MPI
// for its receiver to match, so that they can go straight into the
// receiver's buffer; after it they go into the agent's, and the
// message is an ordinary one (ranks/proxy.go, "Late messages").
const latePatience = 100 * time.Microsecond

// DefaultLateSkip is how many long messages for a rank go the ordinary
// way after one of its late messages could not go straight into its
// buffer (Config.LateSkip); then one goes late again, to see whether it
// can now.
const DefaultLateSkip = 15

// handleLong acts on the header of a long message (header b, decoded
// f), whose bytes are still in the Net. A message that can go late is
// sent on to its receiver at once, its bytes to come (fillLate);
// otherwise the bytes are received now, after those of the late
// messages before it from the same agent, and the whole frame handled.
func (a *agent) handleLong(from int, b []byte, f frame, ps *proxyState) error {
	here := !ps.failed && f.dst >= a.first && f.dst < a.first+a.cfg.N
	if here && !f.sync && a.lateSkip[f.dst-a.first] > 0 {
		a.lateSkip[f.dst-a.first]--
	} else if here && !f.sync {
		req, late, err := ps.p.SendLate(f.ctx, f.dst, f.tag, f.n)
		if err != nil {
			return fmt.Errorf("node: rank %d to %d: %w", f.src, f.dst, err)
		}
		if late != nil {
			m := &lateMsg{ps: ps, dst: f.dst - a.first, late: late, n: f.n, at: time.Now()}
			ps.pending = append(ps.pending, pendingSend{req: req, late: m})
			a.lateQ[from] = append(a.lateQ[from], m)
			return nil
		}
	}
	if err := a.fillLate(from, true); err != nil {
		return err
	}
	full := bufs.get(frameHeader + f.n)
	copy(full, b[:frameHeader])
	full[1] = 0
	if err := a.net.RecvData(from, full[frameHeader:]); err != nil {
		bufs.put(full)
		return a.dataLost(err)
	}
	if !here {
		bufs.put(full)
		return nil
	}
	kept, err := a.handle(from, full)
	if !kept {
		bufs.put(full)
	}
	return err
}

// fillLate receives the bytes of the late messages from agent from, in
// order: into their receivers' buffers where those matched and can take
// them; into the agent's buffers for the others, once latePatience has
// passed. If force, all of them at once; otherwise one message's bytes
// a call, so that the loop lets the receiver run in between, as after a
// long frame.
func (a *agent) fillLate(from int, force bool) error {
	for len(a.lateQ[from]) > 0 {
		m := a.lateQ[from][0]
		var dst []byte
		state := launch.LateDone
		if !m.reqDone {
			dst, state = m.late.Target()
		}
		if state == launch.LateWait && !force && time.Since(m.at) < latePatience {
			return nil
		}
		a.lateQ[from][0] = nil
		a.lateQ[from] = a.lateQ[from][1:]
		var err error
		switch state {
		case launch.LateDirect:
			if err = a.net.RecvData(from, dst); err == nil {
				m.late.Filled(nil)
			}
		case launch.LateDone:
			scratch := bufs.get(m.n)
			err = a.net.RecvData(from, scratch)
			bufs.put(scratch)
		default:
			if state == launch.LateBuffer {
				// Matched, into memory the agent cannot map (or only in
				// part): waiting for the match bought nothing, so the
				// next few messages for that rank go the ordinary way.
				// Cross-node osu_latency 1 MiB into heap buffers, 8
				// interleaved rounds: 571 µs before late messages, 625
				// with them on every message.
				a.lateSkip[m.dst] = a.skipAfter
			}
			m.data = bufs.get(m.n)
			if err = a.net.RecvData(from, m.data); err == nil {
				m.late.Filled(m.data)
			}
		}
		if err != nil {
			// Lost after the failures are declared (dataLost), so that
			// the receiver sees its sender failed.
			err = a.dataLost(err)
			if !m.reqDone {
				m.late.Lost()
			}
			return err
		}
		if !force {
			return nil
		}
	}
	return nil
}

// dataLost handles an error of RecvData: the sending agent failed, and
// the bytes of its late messages with it.
func (a *agent) dataLost(err error) error {
	var nf *NodesFailed
	switch {
	case errors.As(err, &nf):
		a.nodesFailed(nf.Agents)
		return nil
	case errors.Is(err, errDataLost):
		return nil
	}
	return fmt.Errorf("node: agent %d: %w", a.me, err)
}

// nodesFailed handles the death of other agents, which the Net reports:
// every rank of their nodes that had not finalized has failed.
func (a *agent) nodesFailed(agents []int) {
	for _, k := range agents {
		if k == a.me || k < 0 || k >= len(a.over) {
			continue
		}
		if !a.over[k] {
			a.over[k] = true
			a.doneFrom++
		}
		// The bytes still in the MPI are lost: after the failures are
		// declared below, so that their receivers see the sender failed.
		lost := a.lateQ[k]
		a.lateQ[k] = nil
		for _, m := range lost {
			if !m.reqDone {
				m.ps.lostBytes = true
			}
		}
		defer func() {
			for _, m := range lost {
				if !m.reqDone {
					m.late.Lost()
				}
			}
		}()
		for r := a.offsets[k]; r < a.offsets[k+1]; r++ {
			ps := a.proxies[r]
			// A rank that finalized at its node has failed here all the
			// same if bytes it sent before are lost.
			if ps.failed || ps.finalized || ps.finalWanted && !ps.lostBytes {
				continue
			}
			ps.failed, ps.finalWanted = true, false
			a.res.Failed = append(a.res.Failed, r)
			a.job.DeclareFailed(r)
		}
		a.res.NodesFailed = append(a.res.NodesFailed, k)
		if !a.cfg.FT && !a.ending {
			a.ending = true
			a.res.Ended = fmt.Sprintf("node %d failed", k)
			a.job.Kill()
		}
	}
}

// advance tests a proxy's sends in flight, and marks its rank finalized
// once none is left of those its node announced before the Finalize.
func (a *agent) advance(ps *proxyState) bool {
	moved := false
	q := ps.pending[:0]
	for _, s := range ps.pending {
		if _, done, err := s.req.Test(); done {
			moved = true
			bufs.put(s.frame)
			if m := s.late; m != nil {
				m.reqDone = true
				if m.data != nil {
					bufs.put(m.data)
					m.data = nil
				}
			}
			if s.sync {
				// Matched, or never will be: either way its sender must
				// not wait any longer, and learns which.
				a.net.Send(s.from, (&frame{kind: frameAck, src: ps.p.Rank, id: s.id, outcome: launch.SyncOutcome(err)}).header(), nil, nil)
			}
			continue
		}
		q = append(q, s)
	}
	clear(ps.pending[len(q):])
	ps.pending = q
	if ps.finalWanted && len(ps.pending) == 0 && !ps.finalized {
		ps.finalized = true
		ps.finalWanted = false
		ps.p.Finalize()
		moved = true
	}
	return moved
}

// timeout ends the node's ranks when Config.Timeout has passed, and says
// which were stuck where.
func (a *agent) timeout() error {
	fates := a.job.Unfinished()
	a.ending = true
	a.res.Ended = "timeout"
	a.job.Kill()
	var b strings.Builder
	fmt.Fprintf(&b, "node %d: deadline of %v passed; ranks not done:", a.me, a.cfg.Timeout)
	for _, f := range fates {
		fmt.Fprintf(&b, "\n  %v", f)
	}
	return errors.New(b.String())
}
