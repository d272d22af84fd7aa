package ulfm_test

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/job"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// The soak: loops of point-to-point, collectives, agreement and shrink
// while one or two ranks are SIGKILLed at random points (job.EnvKill),
// repaired the spec's way (revoke, agree, shrink). Every survivor must
// end with the same communicator and the same answer, nothing may hang
// (ranktest's deadline), and no context slot may leak. SHMPI_SOAK_RUNS
// sets the number of jobs per size (default 3: the short version CI
// runs); SHMPI_SOAK_SEED replays one.
func TestSoak(t *testing.T) {
	runs := 3
	if v, err := strconv.Atoi(os.Getenv("SHMPI_SOAK_RUNS")); err == nil && v > 0 {
		runs = v
	}
	for _, n := range []int{8, 16} {
		for run := range runs {
			seed := rand.Int63()
			if v, err := strconv.ParseInt(os.Getenv("SHMPI_SOAK_SEED"), 10, 64); err == nil {
				seed = v
			}
			rng := rand.New(rand.NewSource(seed))
			victims := []int{1 + rng.Intn(n-1)}
			if rng.Intn(2) == 0 {
				if v := 1 + rng.Intn(n-1); v != victims[0] {
					victims = append(victims, v)
				}
			}
			// Kill points within the runtime entries a rank makes here
			// (about 300 to 340 at 8 and 16 ranks, 2026-11-24).
			var kills []string
			for _, v := range victims {
				kills = append(kills, fmt.Sprintf("%d@op=%d", v, 20+rng.Intn(280)))
			}
			spec := kills[0]
			if len(kills) > 1 {
				spec += "," + kills[1]
			}
			t.Run(fmt.Sprintf("n=%d/%d", n, run), func(t *testing.T) {
				t.Logf("seed %d: %s", seed, spec)
				o := ranktest.Options{N: n, Dies: victims, Env: []string{job.EnvKill + "=" + spec}, Quiet: true}
				ranktest.RunOpts(t, o, func(r *ranktest.R) { soak(r) })
			})
		}
	}
}

func soak(r *ranktest.R) {
	comm := r.Comm
	const iters = 40
	total := int64(0) // the answer: sum over iterations of the survivors' contributions
	for it := 0; it < iters; {
		err := soakStep(comm, it, &total)
		if err == nil {
			ok, aerr := ulfm.AgreeBool(comm, true)
			if aerr == nil && ok {
				it++
				continue
			}
			err = aerr
			if err == nil {
				err = errors.New("a member failed the step")
			}
		}
		if !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrRevoked) &&
			!errors.Is(err, ranks.ErrPeerFinalized) && err.Error() != "a member failed the step" {
			r.Fatalf("iteration %d: unexpected error %v", it, err)
		}
		ulfm.Revoke(comm)
		ulfm.AgreeBool(comm, false) // everyone leaves the step
		next, serr := ulfm.Shrink(comm)
		if serr != nil {
			r.Fatalf("shrink: %v", serr)
		}
		if comm != r.Comm {
			r.Check(comm.Free(), "free the old communicator")
		}
		comm = next
		// Redo the iteration on the shrunk communicator: the answer is
		// recomputed from its start.
		total = 0
		it = 0
	}
	// Every survivor ends with the same group and answer.
	g, _ := comm.Group()
	mine := []int64{total, int64(comm.Size()), int64(g.WorldRanks()[0])}
	all := make([]int64, 3*comm.Size())
	r.Check(coll.Allgather(comm, mine, all), "final allgather")
	for q := range comm.Size() {
		if all[3*q] != total || all[3*q+1] != mine[1] || all[3*q+2] != mine[2] {
			r.Errorf("survivors disagree: %v", all)
			break
		}
	}
	want := int64(0)
	for it := range iters {
		want += int64(comm.Size() * it)
	}
	if total != want {
		r.Errorf("answer %d, want %d", total, want)
	}
	if comm != r.Comm {
		r.Check(coll.Barrier(comm), "barrier before free")
		r.Check(comm.Free(), "free")
	}
	// Every survivor has freed everything once this agreement ends (it
	// works whoever failed): then only the world's slot is in use.
	ulfm.AgreeBool(r.Comm, true)
	if n := r.World.ContextsInUse(); n != 1 {
		r.Errorf("context slots in use after the soak: %d, want the world's only", n)
	}
}

// soakStep is one iteration: a ring exchange, small and large
// allreduces, a bcast and a barrier; total grows by size*it.
func soakStep(c *ranks.Comm, it int, total *int64) error {
	me, size := c.Rank(), c.Size()
	if size > 1 {
		in := make([]int, 300)
		_, err := ranks.Sendrecv(c, []int{me}, (me+1)%size, it, in, (me+size-1)%size, it)
		if err != nil {
			return err
		}
	}
	v, err := coll.AllreduceValue(c, int64(it), coll.Sum[int64])
	if err != nil {
		return err
	}
	big := make([]int64, 4096)
	big[7] = 1
	if err := coll.Allreduce(c, nil, big, coll.Sum[int64]); err != nil {
		return err
	}
	if big[7] != int64(size) {
		return fmt.Errorf("large allreduce: %d", big[7])
	}
	b := make([]byte, 100)
	if err := coll.Bcast(c, b, size-1); err != nil {
		return err
	}
	if err := coll.Barrier(c); err != nil {
		return err
	}
	*total += v
	return nil
}
