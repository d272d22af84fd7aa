package ulfm

import (
	"slices"
	"sync"

	"github.com/shmpi/shmpi/internal/ext"
	"github.com/shmpi/shmpi/ranks"
)

// Revoke revokes c at every member (MPI_Comm_revoke): every pending and
// later non-local operation on it, at every member, completes with
// ErrRevoked, except Agree, Iagree and Shrink. It is not collective, is
// idempotent, and never reaches another communicator, even one that
// later reuses c's context slot.
func Revoke(c *ranks.Comm) error {
	if c == nil {
		return &ranks.Error{Class: ranks.ErrComm, Op: "Revoke", Rank: -1, Detail: "nil communicator"}
	}
	return ext.Revoke(c)
}

// IsRevoked reports whether c has been revoked, here or by any other
// member (MPIX_Comm_is_revoked). It is local. A nil communicator is not
// revoked.
func IsRevoked(c *ranks.Comm) bool {
	if c == nil {
		return false
	}
	return ext.Revoked(c)
}

// Shrink returns a communicator of the members of c that have not failed
// (MPI_Comm_shrink): every survivor gets one with the same group, in c's
// rank order, excluding at least every failure any survivor knew of when
// it entered. It is collective over the survivors, works on revoked and
// unrevoked communicators, tolerates failures during the call (the result
// is consistent; later failures surface in later operations), and never
// returns ErrProcFailed or ErrRevoked.
func Shrink(c *ranks.Comm) (*ranks.Comm, error) {
	st, err := stateOf(c, "Shrink")
	if err != nil {
		return nil, err
	}
	return st.shrink()
}

func (st *state) shrink() (*ranks.Comm, error) {
	c := st.c
	if st.span || ext.AgreeByMessages {
		return st.spanShrink()
	}
	out, err := st.agree(0, "Shrink")
	if err != nil {
		return nil, err
	}
	if out.noSlot {
		return nil, &ranks.Error{Class: ranks.ErrNoMem, Op: "Shrink", Rank: -1, Detail: "no free context slot"}
	}
	members := make([]int, 0, st.size) // one allocation: fresh heap pages fault here
	for m := range st.size {
		if !slices.Contains(out.excluded, m) {
			members = append(members, m)
		}
	}
	if st.inter {
		nc, err := ext.AdoptInter(c, out.slot, out.gen, out.lslot, out.lgen, members)
		if err != nil {
			return nil, err
		}
		return nc.(*ranks.Comm), nil
	}
	nc, err := ext.Adopt(c, out.slot, out.gen, members, "")
	if err != nil {
		return nil, err
	}
	return nc.(*ranks.Comm), nil
}

// Ishrink is the nonblocking Shrink: *out holds the new communicator when
// the request completes.
func Ishrink(c *ranks.Comm, out **ranks.Comm) (*ranks.Request, error) {
	st, err := stateOf(c, "Ishrink")
	if err != nil {
		return nil, err
	}
	req, complete := ext.NewRequest(c, "Ishrink")
	st.post(func() {
		nc, err := st.shrink()
		*out = nc
		complete(err)
	})
	return req.(*ranks.Request), nil
}

// AckFailed acknowledges the first n failures of members of c, in the
// order of the job's failure log, and returns how many failures of c's
// members are acknowledged afterwards (MPI_Comm_ack_failed). n larger
// than the failures known acknowledges them all.
func AckFailed(c *ranks.Comm, n int) (int, error) {
	if _, err := stateOf(c, "AckFailed"); err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, &ranks.Error{Class: ranks.ErrArg, Op: "AckFailed", Rank: -1, Detail: "negative count"}
	}
	known := ext.Known(c)
	prefix, count := 0, 0
	for i := 0; i < known && count < n; i++ {
		prefix = i + 1
		if ext.LogMember(c, i) >= 0 {
			count++
		}
	}
	ext.AckUpTo(c, prefix)
	acked, err := c.FailureGetAcked()
	return len(acked), err
}

// queue runs a communicator's nonblocking ULFM calls one at a time, in
// the order started.
type queue struct {
	mu      sync.Mutex
	jobs    []func()
	running bool
}

// The communicator is held until the job ends (ext.Hold): a Free
// meanwhile does not take its resources from under it.
func (st *state) post(job func()) {
	q := &st.q
	ext.Hold(st.c)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, job)
	if !q.running {
		q.running = true
		ext.Concurrent(st.c)
		go func() {
			for {
				q.mu.Lock()
				if len(q.jobs) == 0 {
					q.running = false
					q.mu.Unlock()
					return
				}
				j := q.jobs[0]
				q.jobs = q.jobs[1:]
				q.mu.Unlock()
				j()
				ext.Unhold(st.c)
			}
		}()
	}
}
