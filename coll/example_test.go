package coll_test

import (
	"fmt"
	"log"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/examplejob"
	"github.com/shmpi/shmpi/ranks"
)

// The examples below are programs of several ranks. Under go test,
// startJob runs the example as a job of n ranks of the test binary, as
// shmrun -n n runs a program, and prints the ranks' output in rank order
// (package internal/examplejob); in each rank it returns false and the
// rest of the example is the rank's program. A program started by shmrun
// needs no such line.
var startJob = examplejob.Start

func init() { examplejob.Serve(ExampleAllreduce, ExampleAllreduceValue) }

// Four ranks add their vectors element by element; every rank gets the
// sum.
func ExampleAllreduce() {
	if startJob(4) {
		return
	}
	world, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer world.Finalize()
	comm := world.Comm()

	mine := []float64{float64(comm.Rank()), 1}
	sum := make([]float64, 2)
	if err := coll.Allreduce(comm, mine, sum, coll.Sum[float64]); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rank %d: %v\n", comm.Rank(), sum)
	// Output:
	// rank 0: [6 4]
	// rank 1: [6 4]
	// rank 2: [6 4]
	// rank 3: [6 4]
}

// The largest of one value per rank, as a convergence test does with a
// residual.
func ExampleAllreduceValue() {
	if startJob(3) {
		return
	}
	world, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer world.Finalize()
	comm := world.Comm()

	residual := []float64{0.25, 0.5, 0.125}[comm.Rank()]
	worst, err := coll.AllreduceValue(comm, residual, coll.Max[float64])
	if err != nil {
		log.Fatal(err)
	}
	if comm.Rank() == 0 {
		fmt.Println("largest residual:", worst)
	}
	// Output:
	// largest residual: 0.5
}
