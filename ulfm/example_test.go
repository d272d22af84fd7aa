package ulfm_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"syscall"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/internal/examplejob"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
)

// The example below is a program of several ranks. Under go test,
// startJob runs it as a job of n ranks of the test binary, as shmrun --ft
// -n n runs a program, and prints the ranks' output in rank order, then
// a line for each rank that failed (package internal/examplejob); in each
// rank it returns false and the rest of the example is the rank's
// program. A program started by shmrun needs no such line.
var startJob = examplejob.Start

func init() { examplejob.Serve(Example) }

// The repair loop of the spec's Example 15.5: a collective fails because
// a rank died; the survivors revoke the communicator (so that no member
// stays blocked in it), agree that the step failed, shrink the
// communicator to the survivors and run the step again.
func Example() {
	if startJob(4) {
		return
	}
	world, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer world.Finalize()
	comm := world.Comm()

	if comm.Rank() == 3 {
		syscall.Kill(os.Getpid(), syscall.SIGKILL) // a crash: no Finalize, no goodbye
	}
	for {
		sum, err := coll.AllreduceValue(comm, 1, coll.Sum[int])
		if errors.Is(err, ranks.ErrProcFailed) {
			ulfm.Revoke(comm)
		}
		// A member whose part succeeded may not know that another's
		// failed: agree on the outcome.
		ok, aerr := ulfm.AgreeBool(comm, err == nil)
		if aerr == nil && ok {
			if comm.Rank() == 0 {
				fmt.Printf("%d ranks, sum %d\n", comm.Size(), sum)
			}
			break
		}
		next, err := ulfm.Shrink(comm)
		if err != nil {
			log.Fatal(err)
		}
		if comm != world.Comm() {
			comm.Free()
		}
		comm = next
	}
	// Output:
	// 3 ranks, sum 3
	// rank 3 killed by signal 9 (SIGKILL)
}
