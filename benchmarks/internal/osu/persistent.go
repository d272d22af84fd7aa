package osu

// The persistent collective benchmarks (osu_allreduce_persistent, ...)
// follow OSU 7.x's (c/mpi/collective/persistent): at each size the
// request is made once (…Init), then Start and Wait are timed together,
// each pair followed by an untimed Barrier (none for the barrier, as
// osu_barrier_persistent), and the request is freed; the table is the
// blocking benchmarks' (CollRow). After the timed calls of each size one
// more run checks the result. With -compare (ours, not OSU's) each row
// holds instead the persistent form, the nonblocking one (I-call and
// Wait) and the blocking one, measured one after the other in the same
// run, averages only. -t is the thread level, multiple unless told
// (collThreadLevel says why).

import (
	"flag"
	"fmt"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// RunPersistent is the main of a persistent benchmark of k.
func RunPersistent(k *Coll) {
	compare := flag.Bool("compare", false, "print the persistent, nonblocking and blocking forms side by side")
	threadLevel = collThreadLevel
	o := ParseColl()
	w, c := Init(1)
	defer Finish(w)
	me, np := rankSize(c)
	if k.PerRank {
		o.LimitMem(np, me)
	} else {
		o.LimitMem(1, me)
	}
	if *compare {
		compareHeader(c, k)
	} else {
		CollHeader(c, k.PTitle, k.Datatype)
	}
	k.Setup(c, o.MaxSize)
	sizes := o.Sizes()
	if k.Datatype == "" {
		sizes = []int{-1} // the barrier: one row, no size
	}
	for _, n := range sizes {
		if n >= 0 && n/k.Elem == 0 {
			continue
		}
		iters, skip := o.Counts(n)
		calls := k.At(max(n, 0))
		req, err := calls.Init()
		Must(err)
		run := func() error {
			if err := req.Start(); err != nil {
				return err
			}
			_, err := req.Wait()
			return err
		}
		sep := n >= 0 // a barrier after each call, but for the barrier
		what := fmt.Sprintf("persistent %s of %d bytes", k.Name, n)
		Must(coll.Barrier(c))
		pers := timeLoop(c, iters, skip, sep, run)
		checkOnce(calls, run, what)
		if !*compare {
			CollRow(c, n, pers, iters)
		} else {
			nb := timeLoop(c, iters, skip, sep, func() error { return startWait(calls.Start) })
			checkOnce(calls, func() error { return startWait(calls.Start) }, "nonblocking"+what[len("persistent"):])
			bl := timeLoop(c, iters, skip, sep, calls.Call)
			checkOnce(calls, calls.Call, "blocking"+what[len("persistent"):])
			p, q, b := rankMean(c, pers, iters), rankMean(c, nb, iters), rankMean(c, bl, iters)
			if me == 0 {
				if n >= 0 {
					fmt.Printf("%-10d", n)
				}
				fmt.Printf("%18.*f%18.*f%18.*f\n", digits, p, digits, q, digits, b)
			}
		}
		Must(req.Free())
		Must(coll.Barrier(c))
	}
}

// timeLoop is TimeColl, or with sep false the same loop without the
// barriers (the barrier benchmarks' loop); the time of the last iters
// calls.
func timeLoop(c *ranks.Comm, iters, skip int, sep bool, call func() error) time.Duration {
	if sep {
		return TimeColl(c, iters, skip, call)
	}
	var total time.Duration
	for i := range iters + skip {
		t := time.Now()
		err := call()
		d := time.Since(t)
		Must(err)
		if i >= skip {
			total += d
		}
	}
	Must(coll.Barrier(c))
	return total
}

// rankMean is the average over the ranks of each rank's mean µs per
// call.
func rankMean(c *ranks.Comm, total time.Duration, iters int) float64 {
	v := float64(total.Nanoseconds()) / 1e3 / float64(max(iters, 1))
	sum, err := coll.AllreduceValue(c, v, coll.Sum[float64])
	Must(err)
	return sum / float64(c.Size())
}

// compareHeader prints the -compare table's banner on rank 0.
func compareHeader(c *ranks.Comm, k *Coll) {
	if c.Rank() != 0 {
		return
	}
	fmt.Printf("# OSU MPI %s Test v%s (shmpi): persistent, nonblocking (%s) and blocking (%s)\n",
		k.PTitle, Version, iname(k.Name), k.Name)
	if k.Datatype != "" {
		fmt.Printf("# Datatype: %s.\n", k.Datatype)
		fmt.Printf("%-10s%18s", "# Size", "Persistent(us)")
	} else {
		fmt.Printf("%-18s", "# Persistent(us)")
	}
	fmt.Printf("%18s%18s\n", "Nonblocking(us)", "Blocking(us)")
}
