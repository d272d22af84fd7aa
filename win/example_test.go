package win_test

import (
	"fmt"
	"log"

	"github.com/shmpi/shmpi/internal/examplejob"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/win"
)

// The example below is a program of several ranks. Under go test,
// startJob runs it as a job of n ranks of the test binary, as shmrun -n n
// runs a program, and prints the ranks' output in rank order (package
// internal/examplejob); in each rank it returns false and the rest of the
// example is the rank's program. A program started by shmrun needs no
// such line.
var startJob = examplejob.Start

func init() { examplejob.Serve(ExamplePut) }

// Each of four ranks puts a value into its right neighbour's part of a
// window, between two fences; after the second fence every rank reads
// what its left neighbour put.
func ExamplePut() {
	if startJob(4) {
		return
	}
	world, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer world.Finalize()
	comm := world.Comm()
	me, n := comm.Rank(), comm.Size()

	w, err := win.Allocate(comm, 8, 8) // 8 bytes at each rank, displacements in float64s
	if err != nil {
		log.Fatal(err)
	}
	defer w.Free()
	if err := w.Fence(0); err != nil { // opens the epoch
		log.Fatal(err)
	}
	if err := win.Put(w, []float64{10 * float64(me)}, (me+1)%n, 0); err != nil {
		log.Fatal(err)
	}
	if err := w.Fence(0); err != nil { // every Put of the epoch is complete
		log.Fatal(err)
	}
	part, err := win.View[float64](w, me)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rank %d holds %v\n", me, part[0])
	// Output:
	// rank 0 holds 30
	// rank 1 holds 0
	// rank 2 holds 10
	// rank 3 holds 20
}
