// Command osu_bibw measures bidirectional bandwidth between ranks 0 and 1
// as OSU's osu_bibw does: both post a window of receives and a window of
// sends at once; the figure counts the bytes moved in both directions.
//
//	shmrun -n 2 ./osu_bibw
package main

import (
	"time"

	"shmpi/benchmarks/internal/osu"
	"shmpi/ranks"
)

func main() {
	o := osu.Parse(100, 10, 20, 2)
	if o.MinSize == 0 {
		o.MinSize = 1
	}
	w, c := osu.Init(2)
	defer osu.Finish(w)
	me := c.Rank()
	if me == 0 {
		osu.Header("Bi-Directional Bandwidth", "Bandwidth (MB/s)")
	}
	if me > 1 {
		return
	}
	peer := 1 - me
	sbuf := osu.Buffer(o.MaxSize, byte(11+me))
	rbuf := make([]byte, o.MaxSize)
	reqs := make([]*ranks.Request, 2*o.Window)
	for _, n := range o.Sizes() {
		iters, skip := osu.BwCounts(n)
		if o.Iters != 100 {
			iters = o.Iters
		}
		var start time.Time
		for i := 0; i < iters+skip; i++ {
			if i == skip {
				start = time.Now()
			}
			var err error
			for k := 0; k < o.Window; k++ {
				reqs[k], err = ranks.Irecv(c, rbuf[:n], peer, 100)
				osu.Must(err)
			}
			for k := 0; k < o.Window; k++ {
				reqs[o.Window+k], err = ranks.Isend(c, sbuf[:n], peer, 100)
				osu.Must(err)
			}
			osu.Must(ranks.WaitAll(reqs, nil))
		}
		if me == 0 {
			osu.Row(n, 2*float64(n)*float64(iters)*float64(o.Window)/time.Since(start).Seconds()/1e6)
		}
		osu.Check(rbuf[:n], byte(11+peer), "osu_bibw")
	}
}
