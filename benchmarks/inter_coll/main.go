// Command inter_coll measures Barrier and an 8-byte Allreduce on an
// intercommunicator against the same calls on the intracommunicator of
// the same ranks (issue 26's bar: within 1.5× at the same total size):
//
//	shmrun -n 8 ./inter_coll [-i 20000] [-r 5]
//
// The world is split into its lower and upper halves, joined by
// IntercommCreate. Each round times -i calls of each of the four
// (intra barrier, inter barrier, intra allreduce, inter allreduce), in
// that order; rank 0 prints the median over -r rounds of the slowest
// rank's mean per call, and the ratios inter/intra.
package main

import (
	"flag"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

func main() {
	iters := flag.Int("i", 20000, "calls per measurement")
	rounds := flag.Int("r", 5, "rounds")
	flag.Parse()
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer w.Finalize()
	c := w.Comm()
	if c.Size() < 2 {
		log.Fatal("inter_coll needs at least 2 ranks")
	}
	half := c.Size() / 2
	color := 0
	if c.Rank() >= half {
		color = 1
	}
	local, err := c.Split(color, c.Rank())
	if err != nil {
		log.Fatal(err)
	}
	remoteLeader := half
	if color == 1 {
		remoteLeader = 0
	}
	inter, err := ranks.IntercommCreate(local, 0, c, remoteLeader, 77)
	if err != nil {
		log.Fatal(err)
	}
	in, out := []float64{1}, []float64{0}
	ops := []struct {
		name string
		call func() error
	}{
		{"intra_barrier", func() error { return coll.Barrier(c) }},
		{"inter_barrier", func() error { return coll.Barrier(inter) }},
		{"intra_allreduce8", func() error { return coll.Allreduce(c, in, out, coll.Sum[float64]) }},
		{"inter_allreduce8", func() error { return coll.Allreduce(inter, in, out, coll.Sum[float64]) }},
	}
	res := make([][]float64, len(ops))
	for range *rounds {
		for k, op := range ops {
			for range *iters / 10 { // warm-up
				if err := op.call(); err != nil {
					log.Fatal(err)
				}
			}
			coll.Barrier(c)
			t := time.Now()
			for range *iters {
				if err := op.call(); err != nil {
					log.Fatal(err)
				}
			}
			us := float64(time.Since(t).Nanoseconds()) / 1e3 / float64(*iters)
			slowest, err := coll.AllreduceValue(c, us, coll.Max[float64])
			if err != nil {
				log.Fatal(err)
			}
			res[k] = append(res[k], slowest)
		}
	}
	if c.Rank() != 0 {
		return
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	fmt.Printf("# ranks %d (%d + %d), median of %d rounds of %d calls, µs per call\n", c.Size(), half, c.Size()-half, *rounds, *iters)
	for k, op := range ops {
		fmt.Printf("%-18s %8.3f\n", op.name, med(res[k]))
	}
	fmt.Printf("ratio_barrier      %8.2f\nratio_allreduce8   %8.2f\n", med(res[1])/med(res[0]), med(res[3])/med(res[2]))
}
