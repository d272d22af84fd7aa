package ranks_test

import (
	"fmt"
	"log"

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

func init() { examplejob.Serve(Example, ExampleComm_Split, ExampleGroup_Incl) }

// Two ranks: rank 0 sends three numbers, rank 1 receives them.
func Example() {
	if startJob(2) {
		return
	}
	world, err := ranks.Init() // a rank of the job, or a singleton without a launcher
	if err != nil {
		log.Fatal(err)
	}
	defer world.Finalize()
	comm := world.Comm() // MPI_COMM_WORLD; errors are returned, never fatal

	switch comm.Rank() {
	case 0:
		if err := ranks.Send(comm, []float64{1, 2, 3}, 1, 7); err != nil {
			log.Fatal(err)
		}
	case 1:
		buf := make([]float64, 3)
		st, err := ranks.Recv(comm, buf, 0, 7)
		if err != nil {
			log.Fatal(err) // errors.Is(err, ranks.ErrProcFailed) if rank 0 died
		}
		fmt.Printf("rank 1 received %v from rank %d, tag %d, %d elements\n", buf, st.Source, st.Tag, st.Count)
	}
	// Output:
	// rank 1 received [1 2 3] from rank 0, tag 7, 3 elements
}

// Four ranks split into the even and the odd ones, ordered by world rank.
func ExampleComm_Split() {
	if startJob(4) {
		return
	}
	world, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer world.Finalize()
	comm := world.Comm()

	half, err := comm.Split(comm.Rank()%2, comm.Rank())
	if err != nil {
		log.Fatal(err)
	}
	defer half.Free()
	fmt.Printf("world rank %d: rank %d of %d\n", comm.Rank(), half.Rank(), half.Size())
	// Output:
	// world rank 0: rank 0 of 2
	// world rank 1: rank 0 of 2
	// world rank 2: rank 1 of 2
	// world rank 3: rank 1 of 2
}

// A communicator of the world's ranks 1 and 3, made from a group: Incl
// picks the members, Comm.Create makes the communicator (ranks outside
// the group get nil).
func ExampleGroup_Incl() {
	if startJob(4) {
		return
	}
	world, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer world.Finalize()
	comm := world.Comm()

	all, err := comm.Group()
	if err != nil {
		log.Fatal(err)
	}
	odd, err := all.Incl([]int{1, 3})
	if err != nil {
		log.Fatal(err)
	}
	sub, err := comm.Create(odd)
	if err != nil {
		log.Fatal(err)
	}
	if sub == nil {
		return // ranks 0 and 2 are not members
	}
	defer sub.Free()
	// Where the world's ranks 1 and 3 sit in the new group.
	in, err := all.TranslateRanks([]int{1, 3}, odd)
	if err != nil {
		log.Fatal(err)
	}
	if sub.Rank() == 0 {
		fmt.Printf("%d members; world ranks 1 and 3 are its ranks %v\n", sub.Size(), in)
	}
	// Output:
	// 2 members; world ranks 1 and 3 are its ranks [0 1]
}
