// Command ft_iterative is the spec's Example 15.5, fault-tolerant
// iterative refinement with revoke, agreement and shrink, in a program
// that checks its own answer:
//
//	shmrun --ft -n 8 ./ft_iterative
//	SHMPI_KILL=3@op=60 shmrun --ft -n 8 ./ft_iterative
//
// It refines the square roots of 1..m with a damped Heron iteration,
// x += omega*(a/x - x)/2, the components dealt out to the ranks of the
// working communicator in turn. Each iteration ends with an allreduce of
// the largest local change (lnorm, reduced with Max into gnorm) and of
// the sum of the components (reduced with Sum: the answer). A rank whose
// allreduce fails with ErrProcFailed revokes the communicator, so that
// no one waits for it in the next allreduce; whoever sees a failure, a
// revocation or convergence enters the agreement, and a failed agreement
// shrinks the communicator and forces one more iteration, as in the
// spec. After a shrink the components are dealt out again over the
// smaller communicator; a rank that gets a component it did not hold
// (the failed rank's) starts it afresh, which the iteration tolerates.
// The answer is the sum of the square roots of 1..m; the lowest surviving
// rank prints it.
package main

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
)

const (
	m       = 2000  // components
	omega   = 0.25  // damping: slow, linear convergence
	epsilon = 1e-12 // on the largest change of a component
)

// expected is the sum of the square roots of 1..m.
func expected() float64 {
	var s float64
	for j := range m {
		s += math.Sqrt(float64(j + 1))
	}
	return s
}

// norms is what an iteration reduces: the largest change (Max) and the
// sum of the components (Sum).
type norms struct {
	Norm, Sum float64
}

// maxNormSumSum is the reduction of norms.
func maxNormSumSum(inout, in []norms) {
	for i := range inout {
		inout[i].Norm = max(inout[i].Norm, in[i].Norm)
		inout[i].Sum += in[i].Sum
	}
}

// Result is what every survivor computes.
type Result struct {
	Sum        float64 // the answer
	Iterations int     // iterations done here
	Recoveries int     // shrinks
	Size       int     // ranks in the final communicator
	Lost       []int   // world ranks no longer in it
	Reporter   bool    // this rank is the lowest survivor: it prints
}

// run is the program, at every rank.
func run(w *ranks.World) (Result, error) {
	var res Result
	world := w.Comm()
	comm := world
	x := make([]float64, m) // the components this rank holds
	have := make([]bool, m) // which ones it holds a value of
	deal(comm, x, have)

	var g norms
	gnorm := epsilon + 1.0
	for gnorm > epsilon {
		// A computation iteration to converge, and the local norm in
		// lnorm.
		var local norms
		for j := comm.Rank(); j < m; j += comm.Size() {
			a := float64(j + 1)
			d := omega * (a/x[j] - x[j]) / 2
			x[j] += d
			local.Norm = max(local.Norm, math.Abs(d))
			local.Sum += x[j]
		}
		res.Iterations++
		var err error
		g, err = coll.AllreduceValue(comm, local, maxNormSumSum)
		gnorm = g.Norm
		if err != nil && !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrRevoked) {
			return res, fmt.Errorf("iteration %d: %w", res.Iterations, err)
		}
		if errors.Is(err, ranks.ErrProcFailed) || errors.Is(err, ranks.ErrRevoked) || gnorm <= epsilon {
			// This rank detected a failure, but others may have
			// proceeded into the next allreduce; it will not match
			// that one, so it revokes the communicator to interrupt
			// them and tell them it leaves the failure-free path.
			if errors.Is(err, ranks.ErrProcFailed) {
				ulfm.Revoke(comm)
			}
			// About to leave: make sure that everybody received the
			// same information.
			allSucceeded, aerr := ulfm.AgreeBool(comm, err == nil)
			if errors.Is(aerr, ranks.ErrProcFailed) || !allSucceeded {
				comm2, serr := ulfm.Shrink(comm)
				if serr != nil {
					return res, fmt.Errorf("shrink: %w", serr)
				}
				if comm != world {
					comm.Free() // release the revoked communicator
				}
				comm = comm2
				gnorm = epsilon + 1.0 // force one more iteration
				res.Recoveries++
				deal(comm, x, have)
			}
		}
	}
	wg, err := world.Group()
	if err != nil {
		return res, err
	}
	cg, err := comm.Group()
	if err != nil {
		return res, err
	}
	res.Sum = g.Sum
	res.Lost = wg.Difference(cg).WorldRanks()
	res.Size = comm.Size()
	res.Reporter = comm.Rank() == 0
	if comm != world {
		comm.Free()
	}
	return res, nil
}

// deal gives this rank its components of comm: every Size()-th one from
// its rank on. A component it holds no value of starts from 1.
func deal(comm *ranks.Comm, x []float64, have []bool) {
	for j := comm.Rank(); j < m; j += comm.Size() {
		if !have[j] {
			x[j], have[j] = 1, true
		}
	}
}

// accurate reports whether got is the answer within the iteration's
// accuracy.
func accurate(got float64) bool {
	return math.Abs(got-expected()) <= 1e-9*expected()
}

func main() {
	w, err := ranks.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ft_iterative: %v\n", err)
		os.Exit(1)
	}
	res, err := run(w)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ft_iterative: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	good := accurate(res.Sum)
	if res.Reporter {
		status := "ok"
		if !good {
			status = "WRONG"
		}
		fmt.Printf("ft_iterative: sum of the square roots of 1..%d on %d ranks (lost %v, %d recoveries, %d iterations): %.12f, expected %.12f: %s\n",
			m, res.Size, res.Lost, res.Recoveries, res.Iterations, res.Sum, expected(), status)
	}
	w.Finalize()
	if !good {
		os.Exit(1)
	}
}
