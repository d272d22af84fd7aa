package ranks

import (
	"time"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/shm"
)

// Failure knowledge: this rank's view of the shared failure table, dead
// producers of inbox slots, and judging pending operations once a peer
// ended.

// refresh brings this rank's view of the failure table up to date. It is
// one load when nothing changed.
func (e *engine) refresh() {
	if ep := e.epoch.Load(); ep != e.seenEpoch {
		e.sweep(ep)
	}
}

// sweep reads the table: the state of every rank (failed[] and gone[]
// make operations on an ended peer fail at once), and the failure log
// (failedOrder: failures in the job's one order, for acknowledgement).
func (e *engine) sweep(ep uint64) {
	e.seenEpoch = ep
	e.sweepRevoked()
	nFailed := 0
	for r := range e.n {
		switch e.t.State(r) {
		case job.StFailed:
			nFailed++
			if !e.failed[r] {
				e.t.ReleaseAll(r) // its holds on context slots (job.Holds)
				e.failed[r], e.gone[r] = true, true
				e.needEval = true
			}
		case job.StFinalized:
			if !e.final[r] && r != e.me {
				e.final[r], e.gone[r] = true, true
				e.needEval = true
			}
		}
	}
	for n := e.t.LogLen(); len(e.failedOrder) < n; {
		w := e.t.LogEntry(len(e.failedOrder))
		e.failedOrder = append(e.failedOrder, w)
		if !e.failed[w] { // logged after the state loop above read it
			e.t.ReleaseAll(w)
			e.failed[w], e.gone[w] = true, true
			e.needEval = true
		}
	}
	if nFailed > len(e.failedOrder) {
		// A declaration under way, or one whose declarer died: finish
		// the latter (its epoch bump brings us back here).
		e.t.Repair(e.me)
	}
}

// claimerDead reports whether the producer that claimed our inbox's head
// position died before publishing it: every rank announcing that
// position is dead. A rank of another node never is: its node agent's
// proxy writes as that rank, and goes on after the rank's failure (the
// agent's own death ends this rank too). It also returns one such announcement (it says how
// many units the claim took), or 0 if no rank announced it. It reads every rank's announcement, so it runs only
// when a claimed slot stays unpublished and some rank has failed.
func (e *engine) claimerDead() (bool, uint64) {
	var ann uint64
	for q := range e.n {
		if v := e.t.CB(q).Announce.Load(); e.inbox.Announced(v) {
			if e.lay.Remote(q) || !e.rankDead(q) {
				return false, 0
			}
			ann = v
		}
	}
	_, _, published := e.inbox.Peek() // it may have been published meanwhile
	return !published, ann
}

// rankDead reads rank q's fate from the shared table and its liveness
// word, declaring the failure if the kernel marked it.
func (e *engine) rankDead(q int) bool {
	if e.t.State(q) == job.StFailed {
		return true
	}
	if shm.Dead(e.t.Liveness(q).Word.Load()) {
		e.declareDead(q, job.CauseRobust)
		return true
	}
	return false
}

// goneErr is the error for an operation whose peer (world rank w) ended.
func (e *engine) goneErr(c *Comm, w int, op string) error {
	cr := -1
	if c != nil {
		cr = int(c.toComm[w])
	}
	if e.failed[w] {
		err := &Error{Class: ErrProcFailed, Op: op, Rank: cr}
		if c != nil {
			err.Failed = c.failedRanks(len(e.failedOrder))
		}
		return err
	}
	return newErr(ErrPeerFinalized, op, cr, "")
}

// evaluate completes, with errors, the operations that can no longer
// complete because a peer failed or finalized. It runs only after a drain
// that emptied the inbox, so every message a dead peer published first
// has been delivered. A failed rank of another node may still have
// messages for this rank in its proxy, which found the inbox full (held,
// read before the drain): receives from it wait for them, and a later
// drain judges them again.
func (e *engine) evaluate(held bool) {
	e.needEval = false
	for _, c := range e.live {
		if c == nil {
			continue
		}
		if c.twin && !c.collDead && c.memberFailed() {
			e.collDeath(c)
		}
		for r := c.posted.head; r != nil; {
			next := r.next
			switch {
			case held && r.anySrc && c.noSender(), held && !r.anySrc && e.failed[r.wpeer] && e.lay.Remote(r.wpeer):
				e.needEval = true // judged again once the proxies have delivered
			case !r.anySrc && e.gone[r.wpeer]:
				c.posted.remove(r)
				e.complete(r, e.goneErr(c, r.wpeer, r.op))
			case r.anySrc && c.noSender():
				c.posted.remove(r)
				if c.unacked() || len(c.failedRanks(len(e.failedOrder))) > 0 {
					e.complete(r, &Error{Class: ErrProcFailed, Op: r.op, Rank: -1, Failed: c.failedRanks(len(e.failedOrder)),
						Detail: "every other member has failed or finalized"})
				} else {
					e.complete(r, newErr(ErrPeerFinalized, r.op, -1, "every other member has finalized"))
				}
			}
			r = next
		}
	}
	for r := e.active.head; r != nil; {
		next := r.next
		// A receive from a rank of another node copies from that rank's
		// proxy, in the node agent, which outlives the rank: it goes on.
		if e.gone[r.wpeer] && (r.send || !e.lay.Remote(r.wpeer)) {
			e.active.remove(r)
			if r.send {
				e.abandonHS(r)
				if r.ackMsg {
					delete(e.ackWait, r.gen)
				}
			}
			e.complete(r, e.goneErr(r.c, r.wpeer, r.op))
		}
		r = next
	}
	e.dropFrags()
	if len(e.queued) > 0 {
		e.flushQueues()
	}
}

// memberFailed reports whether a member of c is known here to have failed.
func (c *Comm) memberFailed() bool {
	for _, w := range c.failScope() {
		if c.e.failed[w] {
			return true
		}
	}
	return false
}

// collDeath refuses from now on the collective traffic of twin c, a member
// of which failed. Every later collective on its communicator fails at
// once (collCheck), and one under way must not wait for a live member
// that has left it because it learned of the failure first: every wait
// inside a collective ends with ErrProcFailed when any member fails (spec
// 15.2.2). So the twin's posted collective receives complete with
// ErrProcFailed, its collective messages not yet received are dropped
// (a sender waiting for their match is told: hsDead), and later ones are
// refused on arrival (refusal). Communicator creation, which also runs on
// the twin (tags from tagCreateBase), goes on: it judges failures itself.
func (e *engine) collDeath(c *Comm) {
	c.collDead, c.rejecting = true, true
	for r := c.posted.head; r != nil; {
		next := r.next
		if r.tag < tagCreateBase {
			c.posted.remove(r)
			e.complete(r, refusedErr(c, r.op, -1, rejCollDead))
		}
		r = next
	}
	for u := c.unexp.head; u != nil; {
		next := u.next
		if u.tag < tagCreateBase {
			c.unexp.remove(u)
			e.dropUmsg(u, rejCollDead)
		}
		u = next
	}
}

// abandonHS gives back the handshake slot of a send whose receiver ended.
func (e *engine) abandonHS(r *request) {
	if r.hs >= 0 {
		e.freeHS(r.hs)
		r.hs = -1
	}
}

// watch runs on the liveness thread for the life of the process. It
// sleeps in futex_waitv on the liveness words of up to 127 peers; the
// kernel wakes it when one of them dies, and it declares the failure.
func (e *engine) watch() {
	peers := make([]int, 0, 127)
	for i := 1; i < e.n && len(peers) < 127; i++ {
		peers = append(peers, (e.me+i)%e.n)
	}
	ents := make([]shm.WaitvEntry, len(peers))
	for {
		k := 0
		for _, p := range peers {
			st := e.t.State(p)
			if st == job.StFailed || st == job.StFinalized {
				continue
			}
			w := &e.t.Liveness(p).Word
			v := w.Load()
			if shm.Dead(v) {
				e.declareDead(p, job.CauseRobust)
				continue
			}
			ents[k].SetWaitv(w, v)
			k++
		}
		if k == 0 {
			time.Sleep(time.Second)
			continue
		}
		shm.FutexWaitv(ents[:k], 0)
	}
}
