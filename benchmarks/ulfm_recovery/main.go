// Command ulfm_recovery measures a full recovery after a SIGKILL: ranks
// loop on an 8-byte allreduce; when one is killed, each survivor notes
// when its allreduce returned the error, then revokes, agrees, shrinks
// and runs the first allreduce on the shrunk communicator (the spec's
// Example 15.5). Run it under shmrun with the kill injected:
//
//	shmrun --ft --kill 7@30ms -n 8 ./ulfm_recovery
//
// It prints one row (rank 0 of the survivors): the phases at the slowest
// survivor, in microseconds, from the moment the failure was declared
// (Fate.FailedAt: the death itself comes earlier by the detection time
// that fail_detect measures, ≈0.1–0.3 ms here) to the error, then each
// phase's own duration, and the total from the declaration to the end of
// the first allreduce on the shrunk communicator. Times are wall-clock
// (time.Now().UnixNano(): one clock for every process of the machine).
//
// Across nodes (cmd/shmnode), where a failure is declared on each node
// when its agent hears of it, the benchmark kills a rank itself and
// times from the kill, as benchmarks/ref/ulfm_recovery.c does for an MPI
// with ULFM: with -victim R -after D, rank R writes the time to the file
// -stamp names and kills itself with SIGKILL after D (with -node, it
// kills its node's agent, its parent, and dies with it); rank 0 of the
// survivors then also prints "done=<ns>", when the last survivor ended
// the first allreduce on the shrunk communicator.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"syscall"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
)

func main() {
	victim := flag.Int("victim", -1, "the rank to kill (default: none; shmrun --kill does it)")
	after := flag.Duration("after", 300*time.Millisecond, "when the victim dies")
	node := flag.Bool("node", false, "the victim kills its node's agent (its parent), and dies with it")
	stamp := flag.String("stamp", "", "the file where the victim writes the time of its kill")
	timeline := flag.Bool("timeline", false, "also print when each survivor ended each phase, in µs from the declaration")
	flag.Parse()
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Finalize()
	c := w.Comm()
	if c.Rank() == *victim {
		time.AfterFunc(*after, func() {
			if *stamp != "" {
				os.WriteFile(*stamp, []byte(fmt.Sprint(time.Now().UnixNano())), 0o644)
			}
			pid := os.Getpid()
			if *node {
				pid = os.Getppid()
			}
			syscall.Kill(pid, syscall.SIGKILL)
		})
	}
	var tErr int64
	for {
		_, err := coll.AllreduceValue(c, 1.0, coll.Sum[float64])
		if err != nil {
			tErr = time.Now().UnixNano()
			if !errors.Is(err, ranks.ErrProcFailed) && !errors.Is(err, ranks.ErrRevoked) {
				log.Fatalf("allreduce: %v", err)
			}
			break
		}
	}
	ulfm.Revoke(c)
	tRevoke := time.Now().UnixNano()
	ulfm.AgreeBool(c, false)
	tAgree := time.Now().UnixNano()
	s, err := ulfm.Shrink(c)
	if err != nil {
		log.Fatalf("shrink: %v", err)
	}
	tShrink := time.Now().UnixNano()
	if _, err := coll.AllreduceValue(s, 1.0, coll.Sum[float64]); err != nil {
		log.Fatalf("allreduce on the shrunk communicator: %v", err)
	}
	tDone := time.Now().UnixNano()
	// The slowest survivor's phases: each survivor's own durations,
	// gathered with a max, then the ends of the error phase and of the
	// whole from the declaration. The failure table is read only after that: a survivor that is
	// through would otherwise take the CPU from those still in the
	// allreduce, and the benchmark would time itself.
	ph := []int64{0, tRevoke - tErr, tAgree - tRevoke, tShrink - tAgree, tDone - tShrink, 0, tDone}
	var ends []int64
	if *timeline {
		ends = make([]int64, 5*s.Size())
		if err := coll.Gather(s, []int64{tErr, tRevoke, tAgree, tShrink, tDone}, ends, 0); err != nil {
			log.Fatal(err)
		}
	}
	if err := coll.Allreduce(s, nil, ph, coll.Max[int64]); err != nil {
		log.Fatal(err)
	}
	var failedAt int64
	for _, f := range w.Fates() {
		if f.State == ranks.StateFailed && (failedAt == 0 || f.FailedAt.UnixNano() < failedAt) {
			failedAt = f.FailedAt.UnixNano()
		}
	}
	// From the declaration seen on this survivor's node (across nodes,
	// each node declares the failure when its agent hears of it).
	fromFailure := []int64{tErr - failedAt, tDone - failedAt}
	if err := coll.Allreduce(s, nil, fromFailure, coll.Max[int64]); err != nil {
		log.Fatal(err)
	}
	ph[0], ph[5], tDone = fromFailure[0], fromFailure[1], ph[6]
	if s.Rank() == 0 {
		fmt.Printf("# ranks  error_us  revoke_us  agree_us  shrink_us  allreduce_us  total_us\n")
		fmt.Printf("%-7d  %8.1f  %9.1f  %8.1f  %9.1f  %12.1f  %8.1f\n", c.Size(),
			us(ph[0]), us(ph[1]), us(ph[2]), us(ph[3]), us(ph[4]), us(ph[5]))
		if *victim >= 0 {
			fmt.Printf("done=%d\n", tDone)
		}
		if *timeline {
			printTimeline(ends, failedAt)
		}
	}
	s.Free()
}

// printTimeline prints, for each survivor (its rank in the shrunk
// communicator), when it ended each phase, in µs from the declaration:
// where the slowest survivor's phases above come from.
func printTimeline(ends []int64, failedAt int64) {
	fmt.Printf("# survivor  error  revoke  agree  shrink  allreduce (µs from the declaration)\n")
	for r := 0; r < len(ends)/5; r++ {
		e := ends[5*r : 5*r+5]
		fmt.Printf("%-9d  %6.0f  %6.0f  %6.0f  %6.0f  %9.0f\n", r, us(e[0]-failedAt), us(e[1]-failedAt), us(e[2]-failedAt), us(e[3]-failedAt), us(e[4]-failedAt))
	}
}

func us(ns int64) float64 { return float64(ns) / 1e3 }
