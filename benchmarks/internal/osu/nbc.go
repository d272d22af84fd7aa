package osu

// The nonblocking collective benchmarks (osu_iallreduce, osu_ibcast, ...)
// follow OSU 7.x's method (c/mpi/collective/non_blocking and
// c/util/osu_util_mpi.c) at each size:
//
//  1. Pure communication: the I-call and its Wait timed together, each
//     pair followed by an untimed Barrier (none for osu_ibarrier); a
//     rank's mean is its pure communication time.
//  2. Overlap: the I-call (timed: Coll. Init), then a dummy compute of
//     about the rank's pure communication time (Compute), then the Wait
//     (MPI_Wait), each round followed by an untimed Barrier; the round
//     from the I-call to the end of the Wait is Overall. With -t N the
//     compute is cut into N pieces, each followed by a Test (MPI_Test);
//     OSU's default is no Test (-t 0).
//
// Every column is the average over the ranks of each rank's mean; Min
// and Max Comm. are the extremes over the ranks of the pure
// communication time. Overlap(%) is max(0, 100 - 100*(Overall -
// Compute)/Pure Comm.): the share of the communication hidden behind the
// compute, with Compute not counting the Tests. OSU's osu_ibarrier uses
// the large-message counts (-il, -xl; 100 after 10), ours too.

import (
	"flag"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// collThreadLevel is the default thread level of the nonblocking and
// persistent benchmarks: multiple, not single as the others. coll runs a
// queued collective on a goroutine of its own while the caller computes
// or waits, and below ThreadMultiple the engine takes no lock: at single
// these benchmarks hung or failed in 6 of 10 runs of osu_ialltoall at 4
// ranks (a rank left in Wait for a message its peer had sent, or
// process_vm_readv failing with EFAULT), at multiple in none
// (2026-11-26). -thread single (-t single for the persistent ones)
// still runs them at single.
const collThreadLevel = "multiple"

// testCalls is -t: the Test calls spread through the dummy compute.
var testCalls int

// ParseNBC reads the flags of the nonblocking collective benchmarks:
// ParseColl's, with -t as OSU's number of MPI_Test calls in the compute
// (default 0, as OSU) and -thread for the thread level, multiple unless
// told (see collThreadLevel).
func ParseNBC() Options {
	threadFlag = "thread"
	threadLevel = collThreadLevel
	flag.IntVar(&testCalls, "t", 0, "MPI_Test calls during the dummy compute (OSU's -t)")
	o := ParseColl()
	if testCalls < 0 {
		log.Fatalf("-t takes a count of Test calls, not %d", testCalls)
	}
	return o
}

// RunNonblocking is the main of a nonblocking benchmark of k.
func RunNonblocking(k *Coll) {
	o := ParseNBC()
	w, c := Init(1)
	defer Finish(w)
	me, np := rankSize(c)
	if k.PerRank {
		o.LimitMem(np, me)
	} else {
		o.LimitMem(1, me)
	}
	k.Setup(c, o.MaxSize) // first: the neighbourhood ones print their grid
	nbcHeader(c, k)
	what := iname(k.Name)
	if k.Datatype == "" {
		calls := k.At(0)
		Must(coll.Barrier(c))
		nbcRow(c, -1, timeNBC(c, o.ItersLarge, o.SkipLarge, false, calls.Start))
		return
	}
	for _, n := range o.Sizes() {
		if n/k.Elem == 0 {
			continue
		}
		iters, skip := o.Counts(n)
		calls := k.At(n)
		Must(coll.Barrier(c))
		t := timeNBC(c, iters, skip, true, calls.Start)
		checkOnce(calls, func() error { return startWait(calls.Start) }, fmt.Sprintf("%s of %d bytes", what, n))
		nbcRow(c, n, t)
		Must(coll.Barrier(c))
	}
}

// iname is the name of the nonblocking form of the collective name.
func iname(name string) string { return "I" + strings.ToLower(name[:1]) + name[1:] }

// startWait runs a nonblocking call to its end.
func startWait(start func() (*ranks.Request, error)) error {
	req, err := start()
	if err != nil {
		return err
	}
	_, err = req.Wait()
	return err
}

// checkOnce spoils the results, runs the collective once more and
// checks them.
func checkOnce(calls Calls, run func() error, what string) {
	calls.Poison()
	Must(run())
	calls.Verify(what)
}

// nbcTimes are one rank's means per call, µs.
type nbcTimes struct {
	pure, overall, compute, init, test, wait float64
}

// timeNBC runs both phases of OSU's method with start as the I-call;
// sep puts an untimed Barrier after each pure-communication call.
func timeNBC(c *ranks.Comm, iters, skip int, sep bool, start func() (*ranks.Request, error)) nbcTimes {
	var pure time.Duration
	for i := range iters + skip {
		t := time.Now()
		err := startWait(start)
		d := time.Since(t)
		Must(err)
		if sep {
			Must(coll.Barrier(c))
		}
		if i >= skip {
			pure += d
		}
	}
	Must(coll.Barrier(c))
	target := pure / time.Duration(max(iters, 1))
	var overall, comp, init, test, wait time.Duration
	for i := range iters + skip {
		t0 := time.Now()
		req, err := start()
		t1 := time.Now()
		Must(err)
		done, tt := computeAndTest(target, req)
		t2 := time.Now()
		if !done {
			_, err = req.Wait()
			Must(err)
		}
		t3 := time.Now()
		Must(coll.Barrier(c))
		if i >= skip {
			overall += t3.Sub(t0)
			init += t1.Sub(t0)
			comp += t2.Sub(t1)
			test += tt
			wait += t3.Sub(t2)
		}
	}
	Must(coll.Barrier(c))
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(max(iters, 1)) }
	return nbcTimes{pure: us(pure), overall: us(overall), compute: us(comp), init: us(init), test: us(test), wait: us(wait)}
}

// computeAndTest computes for about target, in testCalls pieces each
// followed by a timed Test of req if testCalls > 0 (OSU's
// do_compute_and_probe). It reports whether a Test completed req (Wait
// must then not be called: the request is gone, as MPI_Test leaves
// MPI_REQUEST_NULL; later Tests are skipped, as a Test of
// MPI_REQUEST_NULL does nothing) and the time spent in Tests.
func computeAndTest(target time.Duration, req *ranks.Request) (done bool, tests time.Duration) {
	if testCalls == 0 {
		compute(target)
		return false, 0
	}
	piece := target / time.Duration(testCalls)
	for range testCalls {
		compute(piece)
		if done {
			continue
		}
		t := time.Now()
		_, ok, err := req.Test()
		tests += time.Since(t)
		Must(err)
		done = ok
	}
	return done, tests
}

// The dummy compute's data: OSU's compute_on_host works on 25×25 floats.
const dim = 25

var (
	dummyA       [dim][dim]float32
	dummyX       [dim]float32
	dummyY       [dim]float32
	dummyStarted bool
)

// compute runs the dummy computation until the time spent in it reaches
// target, as OSU's do_compute_cpu: whole passes over the matrix, timed
// one by one.
func compute(target time.Duration) {
	if !dummyStarted {
		for i := range dim {
			dummyX[i], dummyY[i] = 1, 1
			for j := range dim {
				dummyA[i][j] = 2
			}
		}
		dummyStarted = true
	}
	var elapsed time.Duration
	for elapsed < target {
		t := time.Now()
		for i := range dim {
			for j := range dim {
				dummyX[i] += dummyA[i][j]*dummyA[j][i] + dummyY[j]
			}
		}
		elapsed += time.Since(t)
	}
}

// nbcHeader prints OSU's preamble and column heads on rank 0.
func nbcHeader(c *ranks.Comm, k *Coll) {
	if c.Rank() != 0 {
		return
	}
	fmt.Printf("# OSU MPI %s Test v%s (shmpi)\n", k.NBTitle, Version)
	fmt.Printf("# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait\n\n")
	if k.Datatype != "" {
		fmt.Printf("# Datatype: %s.\n", k.Datatype)
		fmt.Printf("%-10s%18s", "# Size", "Overall(us)")
	} else {
		fmt.Printf("# Overall(us)")
	}
	if full {
		for _, h := range []string{"Compute(us)", "Coll. Init(us)", "MPI_Test(us)", "MPI_Wait(us)", "Pure Comm.(us)",
			"Min Comm.(us)", "Max Comm.(us)", "Overlap(%)"} {
			fmt.Printf("%18s", h)
		}
	} else {
		fmt.Printf("%18s%18s%18s", "Compute(us)", "Pure Comm.(us)", "Overlap(%)")
	}
	fmt.Println()
}

// nbcRow gathers every rank's means at rank 0, which prints the row (no
// size column if size < 0).
func nbcRow(c *ranks.Comm, size int, t nbcTimes) {
	mine := []float64{t.pure, t.overall, t.compute, t.init, t.test, t.wait}
	var all []float64
	if c.Rank() == 0 {
		all = make([]float64, len(mine)*c.Size())
	}
	Must(coll.Gather(c, mine, all, 0))
	if c.Rank() != 0 {
		return
	}
	var avg nbcTimes
	lo, hi := all[0], all[0]
	for r := range c.Size() {
		v := all[r*len(mine) : (r+1)*len(mine)]
		avg.pure += v[0]
		avg.overall += v[1]
		avg.compute += v[2]
		avg.init += v[3]
		avg.test += v[4]
		avg.wait += v[5]
		lo, hi = min(lo, v[0]), max(hi, v[0])
	}
	n := float64(c.Size())
	avg = nbcTimes{avg.pure / n, avg.overall / n, avg.compute / n, avg.init / n, avg.test / n, avg.wait / n}
	comp := avg.compute - avg.test
	overlap := 0.0
	if avg.pure > 0 {
		overlap = max(0, 100-(avg.overall-comp)/avg.pure*100)
	}
	if size >= 0 {
		fmt.Printf("%-10d%18.*f", size, digits, avg.overall)
	} else {
		fmt.Printf("%13.*f", digits, avg.overall)
	}
	if full {
		for _, v := range []float64{comp, avg.init, avg.test, avg.wait, avg.pure, lo, hi, overlap} {
			fmt.Printf("%18.*f", digits, v)
		}
	} else {
		fmt.Printf("%18.*f%18.*f%18.*f", digits, comp, digits, avg.pure, digits, overlap)
	}
	fmt.Println()
}
