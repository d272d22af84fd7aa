package coll_test

import (
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// MPI's progress rule for nonblocking collectives: one progresses while
// its rank is blocked in another call or polls with Test or Iprobe, even
// though nobody waits for it. Rank 0 starts collectives, then does
// something that can only finish after every member completed them (rank
// 1 sends only after its Wait). The queue's goroutine is started lazily
// (coll/nonblocking.go): these cases hang if a kick is missed.
func TestNonblockingProgress(t *testing.T) {
	type mode struct {
		name       string
		n, cores   int
		env        []string
		serialized bool
	}
	modes := []mode{
		{name: "sleeping", n: 3},
		{name: "spinning", n: 2, cores: 2},
		{name: "spinning-eager", n: 2, cores: 2, env: []string{"GOMAXPROCS=2"}},
		{name: "serialized", n: 3, serialized: true},
	}
	cases := []struct {
		name       string
		goroutines bool
		body       func(r *ranktest.R)
	}{
		{"recv", false, func(r *ranktest.R) {
			q, err := coll.Ibarrier(r.Comm)
			r.Check(err, "Ibarrier")
			if r.Rank == 0 {
				recvAfter(r)
			}
			_, err = q.Wait()
			r.Check(err, "Wait")
			if r.Rank == 1 {
				sendAfter(r)
			}
		}},
		{"test", false, func(r *ranktest.R) {
			v := []int64{int64(r.Rank)}
			q, err := coll.Iallreduce(r.Comm, nil, v, coll.Sum[int64])
			r.Check(err, "Iallreduce")
			if r.Rank == 0 {
				for {
					_, done, err := q.Test()
					r.Check(err, "Test")
					if done {
						break
					}
				}
			} else {
				_, err = q.Wait()
				r.Check(err, "Wait")
			}
			if want := int64(r.Size * (r.Size - 1) / 2); v[0] != want {
				r.Errorf("Iallreduce gave %d, want %d", v[0], want)
			}
		}},
		{"iprobe", false, func(r *ranktest.R) {
			q, err := coll.Iallreduce(r.Comm, nil, []int64{1}, coll.Sum[int64])
			r.Check(err, "Iallreduce")
			if r.Rank == 0 {
				for {
					_, ok, err := r.Comm.Iprobe(1, 7)
					r.Check(err, "Iprobe")
					if ok {
						break
					}
				}
				recvAfter(r)
			}
			_, err = q.Wait()
			r.Check(err, "Wait")
			if r.Rank == 1 {
				sendAfter(r)
			}
		}},
		// The waiter runs the first collective itself (Wait's help) and
		// leaves the second one queued; a later Recv must drive it.
		{"second", false, func(r *ranktest.R) {
			q1, err := coll.Iallreduce(r.Comm, nil, []int64{1}, coll.Sum[int64])
			r.Check(err, "Iallreduce")
			q2, err := coll.Ibarrier(r.Comm)
			r.Check(err, "Ibarrier")
			if r.Rank == 0 {
				_, err = q1.Wait()
				r.Check(err, "Wait first")
				recvAfter(r)
				_, err = q2.Wait()
				r.Check(err, "Wait second")
				return
			}
			r.Check(ranks.WaitAll([]*ranks.Request{q1, q2}, nil), "WaitAll")
			if r.Rank == 1 {
				sendAfter(r)
			}
		}},
		// One goroutine waits for the first collective (running the queue
		// up to it) while another blocks in a Recv that needs the second.
		{"goroutines", true, func(r *ranktest.R) {
			q1, err := coll.Iallreduce(r.Comm, nil, make([]int64, 20000), coll.Sum[int64])
			r.Check(err, "Iallreduce")
			q2, err := coll.Ibarrier(r.Comm)
			r.Check(err, "Ibarrier")
			if r.Rank == 0 {
				got := make(chan struct{})
				go func() {
					recvAfter(r)
					close(got)
				}()
				_, err = q1.Wait()
				r.Check(err, "Wait first")
				<-got
				_, err = q2.Wait()
				r.Check(err, "Wait second")
				return
			}
			r.Check(ranks.WaitAll([]*ranks.Request{q1, q2}, nil), "WaitAll")
			if r.Rank == 1 {
				sendAfter(r)
			}
		}},
	}
	for _, m := range modes {
		for _, c := range cases {
			if c.goroutines && m.serialized {
				continue
			}
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				opts := ranktest.Options{N: m.n, Cores: m.cores, Env: m.env, Serialized: m.serialized, Quiet: true}
				ranktest.RunOpts(t, opts, func(r *ranktest.R) {
					for range 20 {
						c.body(r)
					}
				})
			})
		}
	}
}

// recvAfter is rank 0's receive of what rank 1 sends only after its Wait.
func recvAfter(r *ranktest.R) {
	got := make([]int, 1)
	_, err := ranks.Recv(r.Comm, got, 1, 7)
	r.Check(err, "Recv")
	if got[0] != 42 {
		r.Errorf("Recv got %d", got[0])
	}
}

func sendAfter(r *ranktest.R) {
	r.Check(ranks.Send(r.Comm, []int{42}, 0, 7), "Send")
}
