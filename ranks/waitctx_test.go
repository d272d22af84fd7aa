package ranks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// wantCtx checks that err is a context-bounded wait's error for ctxErr.
func wantCtx(r *ranktest.R, err, ctxErr error, op, what string) {
	var e *ranks.Error
	if !errors.Is(err, ctxErr) || !errors.As(err, &e) || e.Op != op {
		r.Errorf("%s: %v, want %v from %s", what, err, ctxErr, op)
	}
}

// A context that ends before the request completes ends the wait, not
// the operation: the request stays pending and a later wait completes
// it with the message. A request that completes first is completed. The
// ranks outnumber the cores they are told they have, so a waiting rank
// sleeps on its futex at once, and the sleeps' timeout is longer than
// the test: only the context's wake-up can end the wait in time.
func TestWaitContext(t *testing.T) {
	const sleepBound = 30 * time.Second
	o := ranktest.Options{N: 2, Cores: 1,
		Env: []string{job.EnvSleepTimeout + "=" + "30000"}}
	ranktest.RunOpts(t, o, func(r *ranktest.R) {
		c := r.Comm
		if r.Rank == 1 {
			for i, n := range []int{sizeInline, sizeChunk, sizeRndv} {
				_, err := ranks.Recv(c, make([]byte, 1), 0, 99)
				r.Check(err, "recv go")
				b := make([]byte, n)
				fill(b, i)
				r.Check(ranks.Send(c, b, 0, i), "send")
			}
			_, err := ranks.Recv(c, make([]byte, 1), 0, 99)
			r.Check(err, "recv go")
			r.Check(ranks.Send(c, []byte{1}, 0, 10), "send")
			r.Check(ranks.Send(c, []byte{1}, 0, 11), "send")
			_, err = ranks.Recv(c, make([]byte, 1), 0, 98) // stay until rank 0 is done
			r.Check(err, "recv done")
			return
		}
		for i, n := range []int{sizeInline, sizeChunk, sizeRndv} {
			b := make([]byte, n)
			q, err := ranks.Irecv(c, b, 1, i)
			r.Check(err, "irecv")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			start := time.Now()
			_, err = q.WaitContext(ctx)
			if took := time.Since(start); took > sleepBound/2 {
				r.Errorf("WaitContext took %v: the context's end did not wake the sleeping wait", took)
			}
			cancel()
			wantCtx(r, err, context.DeadlineExceeded, "WaitContext", "wait past the deadline")
			// Still pending: now it completes.
			r.Check(ranks.Send(c, []byte{1}, 1, 99), "go")
			st, err := q.WaitContext(context.Background())
			if err != nil || st.Bytes != n || st.Source != 1 {
				r.Errorf("wait after the deadline: %+v %v", st, err)
			}
			checkFill(r, b, i, "message received after a context ended")
		}
		if to := r.World.SleepTimeouts(); to != 0 {
			r.Errorf("%d sleeps ended by their timeout", to)
		}
		// Cancelled already: returns at once, unless complete.
		q, err := ranks.Irecv(c, make([]byte, 1), 1, 10)
		r.Check(err, "irecv")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = q.WaitContext(ctx)
		wantCtx(r, err, context.Canceled, "WaitContext", "wait with a cancelled context")
		r.Check(ranks.Send(c, []byte{1}, 1, 99), "go")
		// Tag 11 follows tag 10: once it is in, q has its message.
		_, err = ranks.Recv(c, make([]byte, 1), 1, 11)
		r.Check(err, "recv")
		if _, err := q.WaitContext(ctx); err != nil {
			r.Errorf("WaitContext of a complete request with a cancelled context: %v", err)
		}
		// WaitAllContext: nothing is retired when the context ends.
		qs := make([]*ranks.Request, 3)
		for i := range qs {
			qs[i], err = ranks.Irecv(c, make([]byte, 1), 1, 20+i)
			r.Check(err, "irecv")
		}
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
		err = ranks.WaitAllContext(ctx, qs, nil)
		cancel()
		wantCtx(r, err, context.DeadlineExceeded, "WaitAllContext", "WaitAllContext past the deadline")
		for i, q := range qs {
			if q == nil {
				r.Errorf("request %d retired by a WaitAllContext that ended", i)
			} else {
				r.Check(q.Cancel(), "cancel")
			}
		}
		sts := make([]ranks.Status, 3)
		r.Check(ranks.WaitAllContext(context.Background(), qs, sts), "WaitAll of cancelled receives")
		if !sts[2].Cancelled || qs[2] != nil {
			r.Errorf("after WaitAll: %+v %v", sts[2], qs[2])
		}
		r.Check(ranks.Send(c, []byte{1}, 1, 98), "done")
	})
}

// A peer that dies during WaitContext: ErrProcFailed, not the context's
// error; an AnySource receive with an unacknowledged failure reports
// ErrProcFailedPending and stays pending.
func TestWaitContextFailure(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Dies: []int{1}}, func(r *ranktest.R) {
		c := r.Comm
		switch r.Rank {
		case 1:
			_, err := ranks.Recv(c, make([]byte, 1), 0, 1)
			r.Check(err, "recv")
			r.Kill()
		case 2:
			return
		}
		q, err := ranks.Irecv(c, make([]byte, 8), 1, 2)
		r.Check(err, "irecv")
		q2, err := ranks.Irecv(c, make([]byte, 8), 1, 3)
		r.Check(err, "irecv")
		r.Check(ranks.Send(c, []byte{1}, 1, 1), "die")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err = q.WaitContext(ctx)
		procFailed(r, err, 1, "WaitContext on a receive from a rank that died")
		err = ranks.WaitAllContext(ctx, []*ranks.Request{q2}, nil)
		procFailed(r, err, 1, "WaitAllContext on a receive from a rank that died")
		qa, err := ranks.Irecv(c, make([]byte, 8), ranks.AnySource, 4)
		r.Check(err, "irecv any")
		_, err = qa.WaitContext(ctx)
		if !errors.Is(err, ranks.ErrProcFailedPending) {
			r.Errorf("WaitContext on a pending AnySource receive: %v", err)
		}
		r.Check(qa.Cancel(), "cancel")
		if st, err := qa.WaitContext(ctx); err != nil || !st.Cancelled {
			r.Errorf("cancelled AnySource receive: %+v %v", st, err)
		}
	})
}
