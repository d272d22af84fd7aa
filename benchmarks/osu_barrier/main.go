// Command osu_barrier measures the latency of coll.Barrier over all
// ranks, as OSU's osu_barrier does: each call timed on its own, the
// average over the ranks of each rank's mean (1000 iterations after 100
// warm-up unless -i and -x say otherwise):
//
//	shmrun -n 8 ./osu_barrier
package main

import (
	"time"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
)

func main() {
	o := osu.ParseColl()
	w, c := osu.Init(1)
	defer osu.Finish(w)
	osu.CollHeader(c, "Barrier Latency", "")
	osu.Must(coll.Barrier(c))
	var total time.Duration
	for i := range o.Iters + o.Skip {
		t := time.Now()
		err := coll.Barrier(c)
		d := time.Since(t)
		osu.Must(err)
		if i >= o.Skip {
			total += d
		}
	}
	osu.Must(coll.Barrier(c))
	osu.CollRow(c, -1, total, o.Iters)
}
