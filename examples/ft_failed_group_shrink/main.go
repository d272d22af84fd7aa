// Command ft_failed_group_shrink is the spec's Example 15.2, a consistent
// group of failed processes obtained with Shrink, in a program that
// checks its own answer:
//
//	shmrun --ft -n 8 ./ft_failed_group_shrink
//	SHMPI_KILL=3@op=60 shmrun --ft -n 8 ./ft_failed_group_shrink
//
// The work of each step is cut into a fixed number of shares, each owned
// by one rank, and each owner keeps the running sum of its shares over
// the steps: state that lives nowhere else. A step reduces the shares'
// values and the running sums over the working communicator and ends
// with an agreement on its success. When a step fails, every survivor
// calls commFailureAllget, the example's function: it shrinks the
// communicator and takes the difference of the old and the shrunk
// groups. Because that group is the same everywhere, every survivor can
// hand the failed ranks' shares to the same new owners (which rebuild
// their running sums by replaying the earlier steps) and build the next
// working communicator with Create, which needs the same group at every
// member. The answer is the sum of every share over every step; the
// lowest surviving rank prints it with the failed group.
package main

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/examples/internal/shares"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
)

// commFailureAllget is Example 15.2: the group of the members of c that
// failed, the same at every survivor. Shrink's group is consistent across
// the survivors and excludes every process any of them had seen fail
// before the call; the failed group is c's group minus that one.
func commFailureAllget(c *ranks.Comm) (ranks.Group, error) {
	s, err := ulfm.Shrink(c)
	if err != nil {
		return ranks.Group{}, err
	}
	cGrp, err := c.Group()
	if err != nil {
		return ranks.Group{}, err
	}
	sGrp, err := s.Group()
	if err != nil {
		return ranks.Group{}, err
	}
	// sGrp is the group of the processes still alive; the failed ones
	// are the rest.
	g := cGrp.Difference(sGrp)
	s.Free()
	return g, nil
}

// Result is what every survivor computes.
type Result struct {
	StepSum  int64 // the sum of the steps' totals
	Running  int64 // the owners' running sums after the last step
	Size     int   // ranks in the final communicator
	Failed   []int // world ranks found failed, in the order found
	Retries  int   // steps redone
	Reporter bool  // this rank is the lowest survivor: it prints
}

// run is the program, at every rank.
func run(w *ranks.World) (Result, error) {
	var res Result
	world := w.Comm()
	comm := world
	g, err := comm.Group()
	if err != nil {
		return res, err
	}
	owner := make([]int, shares.Shares) // world rank owning each share
	for s := range owner {
		owner[s] = g.WorldRanks()[s%g.Size()]
	}
	me := w.Rank()
	acc := map[int]int64{} // running sums of the shares this rank owns
	for s, o := range owner {
		if o == me {
			acc[s] = 0
		}
	}
	for k := 0; k < shares.Steps; {
		// This step's value of my shares, and my running sums with it.
		var part [2]int64
		for s := range acc {
			v := shares.Value(k, s)
			part[0] += v
			part[1] += acc[s] + v
		}
		var out [2]int64
		err := coll.Allreduce(comm, part[:], out[:], coll.Sum[int64])
		if err != nil && !isFailure(err) {
			return res, fmt.Errorf("step %d: %w", k, err)
		}
		// Every step ends in an agreement, so no survivor can be
		// left behind in a collective: no revoke is needed.
		ok, aerr := ulfm.AgreeBool(comm, err == nil)
		if ok && aerr == nil {
			for s := range acc {
				acc[s] += shares.Value(k, s)
			}
			res.StepSum += out[0]
			res.Running = out[1]
			k++
			continue
		}
		res.Retries++
		failed, err := commFailureAllget(comm)
		if err != nil {
			return res, fmt.Errorf("step %d: failed group: %w", k, err)
		}
		cg, err := comm.Group()
		if err != nil {
			return res, err
		}
		alive := cg.Difference(failed)
		res.Failed = append(res.Failed, failed.WorldRanks()...)
		// The same failed group everywhere: the same new owners
		// everywhere. A new owner rebuilds a share's running sum.
		live := alive.WorldRanks()
		j := 0
		for s, o := range owner {
			if slices.Contains(failed.WorldRanks(), o) {
				owner[s] = live[j%len(live)]
				j++
				if owner[s] == me {
					var a int64
					for p := range k {
						a += shares.Value(p, s)
					}
					acc[s] = a
				}
			}
		}
		// And the same group for Create at every member.
		next, err := comm.Create(alive)
		if err != nil {
			return res, fmt.Errorf("step %d: create the communicator of the survivors: %w", k, err)
		}
		if comm != world {
			comm.Free()
		}
		comm = next
	}
	res.Size = comm.Size()
	res.Reporter = comm.Rank() == 0
	if comm != world {
		comm.Free()
	}
	return res, nil
}

func isFailure(err error) bool {
	return errors.Is(err, ranks.ErrProcFailed) || errors.Is(err, ranks.ErrRevoked)
}

func main() {
	w, err := ranks.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ft_failed_group_shrink: %v\n", err)
		os.Exit(1)
	}
	res, err := run(w)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ft_failed_group_shrink: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	want := shares.Expected()
	good := res.StepSum == want && res.Running == want
	if res.Reporter {
		status := "ok"
		if !good {
			status = "WRONG"
		}
		fmt.Printf("ft_failed_group_shrink: %d steps of %d shares on %d ranks (failed group %v, %d steps redone): steps' sum %d, owners' running sums %d, expected %d: %s\n",
			shares.Steps, shares.Shares, res.Size, res.Failed, res.Retries, res.StepSum, res.Running, want, status)
	}
	w.Finalize()
	if !good {
		os.Exit(1)
	}
}
