// Command osu_multi_lat measures one-way latency with every rank busy:
// rank i ping-pongs with rank i+N/2, all pairs at once, as OSU's
// osu_multi_lat does. It prints the average over the pairs.
//
//	shmrun -n 4 ./osu_multi_lat
package main

import (
	"log"
	"time"

	"shmpi/benchmarks/internal/osu"
	"shmpi/ranks"
)

func main() {
	o := osu.Parse(10000, 1000, 1000, 10)
	w, c := osu.Init(2)
	defer osu.Finish(w)
	me, size := c.Rank(), c.Size()
	if size%2 != 0 {
		log.Fatalf("osu_multi_lat needs an even number of ranks, got %d", size)
	}
	half := size / 2
	lead := me < half
	peer := (me + half) % size
	if me == 0 {
		osu.Header("Multi Latency", "Avg Latency(us)")
	}
	buf := osu.Buffer(o.MaxSize, 3)
	for _, n := range o.Sizes() {
		iters, skip := o.Counts(n)
		b := buf[:n]
		var start time.Time
		for i := 0; i < iters+skip; i++ {
			if i == skip {
				start = time.Now()
			}
			if lead {
				osu.Must(ranks.Send(c, b, peer, 1))
				_, err := ranks.Recv(c, b, peer, 1)
				osu.Must(err)
			} else {
				_, err := ranks.Recv(c, b, peer, 1)
				osu.Must(err)
				osu.Must(ranks.Send(c, b, peer, 1))
			}
		}
		lat := []float64{float64(time.Since(start).Nanoseconds()) / 1e3 / float64(2*iters)}
		// Leaders report to rank 0 (there are no collectives here).
		if lead && me != 0 {
			osu.Must(ranks.Send(c, lat, 0, 2))
		}
		if me == 0 {
			sum := lat[0]
			for r := 1; r < half; r++ {
				got := make([]float64, 1)
				_, err := ranks.Recv(c, got, r, 2)
				osu.Must(err)
				sum += got[0]
			}
			osu.Row(n, sum/float64(half))
		}
	}
}
