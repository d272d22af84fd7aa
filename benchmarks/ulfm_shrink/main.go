// Command ulfm_shrink measures ulfm.Shrink (failure-free, with the Free
// of its result) beside Dup and Free of the same communicator, interleaved
// call by call:
//
//	shmrun -n 8 ./ulfm_shrink [-i 200] [-x 20]
//
// The figure of one call is the slowest rank's time (each rank's own
// entry-to-return time, gathered at the end); the row has the median and
// 90th percentile over -i calls in microseconds, for both, and the ratio
// of the medians Shrink/Dup. The first Shrink after a kill is measured by
// the recovery benchmarks (not yet written).
package main

import (
	"flag"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ulfm"
)

func main() {
	iters := flag.Int("i", 200, "timed iterations")
	skip := flag.Int("x", 20, "warm-up iterations")
	flag.Parse()
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Finalize()
	c := w.Comm()
	must := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	shr := make([]float64, 0, *iters)
	dup := make([]float64, 0, *iters)
	for i := 0; i < *iters+*skip; i++ {
		must(coll.Barrier(c))
		t0 := time.Now()
		s, err := ulfm.Shrink(c)
		must(err)
		must(s.Free())
		t1 := time.Since(t0)
		must(coll.Barrier(c))
		t2 := time.Now()
		d, err := c.Dup()
		must(err)
		must(d.Free())
		t3 := time.Since(t2)
		if i >= *skip {
			shr = append(shr, float64(t1.Nanoseconds())/1e3)
			dup = append(dup, float64(t3.Nanoseconds())/1e3)
		}
	}
	// The slowest rank's time of each call.
	for _, v := range [][]float64{shr, dup} {
		must(coll.Allreduce(c, nil, v, coll.Max[float64]))
	}
	if c.Rank() == 0 {
		ms, ps := stats(shr)
		md, pd := stats(dup)
		fmt.Printf("# ranks  shrink_median_us  shrink_p90_us  dup_median_us  dup_p90_us  ratio\n")
		fmt.Printf("%-7d  %16.2f  %13.2f  %13.2f  %10.2f  %5.2f\n", c.Size(), ms, ps, md, pd, ms/md)
	}
}

func stats(v []float64) (median, p90 float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*9/10]
}
