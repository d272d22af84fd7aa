// Command osu_latency measures one-way latency between ranks 0 and 1 with
// blocking ping-pong, as the OSU benchmark does:
//
//	shmrun -n 2 ./osu_latency
package main

import (
	"time"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/ranks"
)

func main() {
	o := osu.Parse(10000, 1000, 1000, 10)
	w, c := osu.Init(2)
	defer osu.Finish(w)
	me := c.Rank()
	if me == 0 {
		osu.Header("Latency", "Avg Latency(us)")
	}
	buf := osu.Buffer(o.MaxSize, 0)
	for _, n := range o.Sizes() {
		iters, skip := o.Counts(n)
		b := buf[:n]
		var start time.Time
		for i := 0; i < iters+skip; i++ {
			if i == skip {
				start = time.Now()
			}
			switch me {
			case 0:
				osu.Must(ranks.Send(c, b, 1, 1))
				_, err := ranks.Recv(c, b, 1, 1)
				osu.Must(err)
			case 1:
				_, err := ranks.Recv(c, b, 0, 1)
				osu.Must(err)
				osu.Must(ranks.Send(c, b, 0, 1))
			}
		}
		if me == 0 {
			osu.Row(n, float64(time.Since(start).Nanoseconds())/1e3/float64(2*iters))
		}
	}
}
