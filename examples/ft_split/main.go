// Command ft_split is the spec's Example 15.1, the fault-tolerant
// communicator split, in a program that checks its own answer:
//
//	shmrun --ft -n 8 ./ft_split
//	SHMPI_KILL=3@op=60 shmrun --ft -n 8 ./ft_split   # rank 3 dies mid-way
//
// Each of a number of rounds splits the working communicator in two
// (even and odd ranks) with commSplitConsistent, the example's function:
// Split, then an agreement on whether Split succeeded everywhere; a rank
// whose Split succeeded while another's failed frees its half, since it
// cannot be used consistently. Each half then sums its share of the
// round's work items on the child communicator, the two halves' sums are
// combined on the parent, and the round ends with an agreement on its
// success, as in Example 15.5. A failed split or a failed round shrinks
// the parent and redoes the round, so the answer is always the same: the
// sum of item(r, i) over every round r and item i, which the program
// knows in closed form. The lowest surviving rank prints it.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
)

const (
	rounds = 30   // rounds of work
	items  = 4096 // work items per round
)

// item is the value of work item i of round r.
func item(r, i int) int64 { return int64(i)*int64(r+1) + int64(r) }

// expected is the sum of item(r, i) over every round and item, in closed
// form.
func expected() int64 {
	var s int64
	for r := range rounds {
		s += int64(r+1)*int64(items)*int64(items-1)/2 + int64(r)*items
	}
	return s
}

// commSplitConsistent is Example 15.1: a Split whose outcome is the same
// at every survivor of parent. It returns a child communicator at every
// survivor, or an error matching ranks.ErrProcFailed at every survivor.
func commSplitConsistent(parent *ranks.Comm, color, key int) (*ranks.Comm, error) {
	child, err := parent.Split(color, key)
	// As in the spec, only the agreed flag matters: Agree's error (a
	// member failed before contributing) does not change the flag, the
	// AND of the contributions of the members that did contribute.
	splitOK, _ := ulfm.AgreeBool(parent, err == nil)
	if splitOK {
		// Every survivor has created child. It may contain failed
		// ranks, so its first operation may return an error, but it is
		// a workable object with well-specified outcomes.
		return child, nil
	}
	// Some rank did not create child; a rank that did disposes of it,
	// as it is a broken, inconsistent object.
	if err == nil {
		child.Free()
	}
	return nil, &ranks.Error{Class: ranks.ErrProcFailed, Op: "Comm_split_consistent", Rank: -1,
		Detail: "a member failed to create the child communicator"}
}

// Result is what every survivor computes.
type Result struct {
	Total    int64 // the sum over every round
	Size     int   // ranks in the final communicator
	Lost     []int // world ranks no longer in it
	Retries  int   // rounds redone after a failure
	Splits   int   // consistent splits that failed
	Reporter bool  // this rank is the lowest survivor: it prints
}

// run is the program, at every rank.
func run(w *ranks.World) (Result, error) {
	var res Result
	world := w.Comm()
	comm := world
	for round := 0; round < rounds; {
		ncolors := min(2, comm.Size())
		color := comm.Rank() % ncolors
		child, err := commSplitConsistent(comm, color, comm.Rank())
		if err != nil {
			// Every survivor is here (the agreed flag is uniform):
			// drop the failed ranks and split again.
			res.Splits++
			comm = shrink(world, comm)
			continue
		}
		total, err := roundWork(comm, child, round, ncolors, color)
		child.Free()
		if err != nil && !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrRevoked) {
			return res, fmt.Errorf("round %d: %w", round, err)
		}
		// Example 15.5: whoever saw a failure revokes the parent, so
		// that no one waits in the round for this rank, and everyone
		// agrees on whether the round succeeded everywhere.
		if err != nil {
			ulfm.Revoke(comm)
		}
		ok, aerr := ulfm.AgreeBool(comm, err == nil)
		if aerr != nil || !ok {
			res.Retries++
			comm = shrink(world, comm)
			continue
		}
		res.Total += total
		round++
	}
	wg, err := world.Group()
	if err != nil {
		return res, err
	}
	cg, err := comm.Group()
	if err != nil {
		return res, err
	}
	res.Lost = wg.Difference(cg).WorldRanks()
	res.Size = comm.Size()
	res.Reporter = comm.Rank() == 0
	if comm != world {
		comm.Free()
	}
	return res, nil
}

// roundWork is one round: each half sums its items on child, and the two
// halves' sums are combined on parent.
func roundWork(parent, child *ranks.Comm, round, ncolors, color int) (int64, error) {
	var part int64
	for i := color; i < items; i += ncolors {
		if (i/ncolors)%child.Size() == child.Rank() {
			part += item(round, i)
		}
	}
	half, err := coll.AllreduceValue(child, part, coll.Sum[int64])
	if err != nil {
		return 0, err
	}
	if child.Rank() != 0 {
		half = 0 // one contribution per half
	}
	return coll.AllreduceValue(parent, half, coll.Sum[int64])
}

// shrink replaces comm with the communicator of its survivors.
func shrink(world, comm *ranks.Comm) *ranks.Comm {
	next, err := ulfm.Shrink(comm)
	if err != nil {
		// Shrink fails only for want of a context slot.
		fmt.Fprintf(os.Stderr, "ft_split: shrink: %v\n", err)
		os.Exit(1)
	}
	if comm != world {
		comm.Free()
	}
	return next
}

func main() {
	w, err := ranks.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ft_split: %v\n", err)
		os.Exit(1)
	}
	res, err := run(w)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ft_split: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	if res.Reporter {
		status := "ok"
		if res.Total != expected() {
			status = "WRONG"
		}
		fmt.Printf("ft_split: %d rounds of %d items on %d ranks (lost %v; %d failed splits, %d rounds redone): total %d, expected %d: %s\n",
			rounds, items, res.Size, res.Lost, res.Splits, res.Retries, res.Total, expected(), status)
	}
	w.Finalize()
	if res.Total != expected() {
		os.Exit(1)
	}
}
