// Command osu_bw measures unidirectional bandwidth from rank 0 to rank 1
// as OSU's osu_bw does: a window of nonblocking sends answered by a
// window of nonblocking receives, then a 4-byte acknowledgement.
//
//	shmrun -n 2 ./osu_bw
package main

import (
	"time"

	"shmpi/benchmarks/internal/osu"
	"shmpi/ranks"
)

func main() {
	o := osu.Parse(100, 10, 20, 2)
	if o.MinSize == 0 {
		o.MinSize = 1 // OSU's bandwidth tests start at 1 byte
	}
	w, c := osu.Init(2)
	defer osu.Finish(w)
	me := c.Rank()
	if me == 0 {
		osu.Header("Bandwidth", "Bandwidth (MB/s)")
	}
	sbuf := osu.Buffer(o.MaxSize, 7)
	rbuf := make([]byte, o.MaxSize)
	ack := make([]byte, 4)
	reqs := make([]*ranks.Request, o.Window)
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
			for k := range reqs {
				switch me {
				case 0:
					reqs[k], err = ranks.Isend(c, sbuf[:n], 1, 100)
				case 1:
					reqs[k], err = ranks.Irecv(c, rbuf[:n], 0, 100)
				}
				osu.Must(err)
			}
			if me > 1 {
				continue
			}
			osu.Must(ranks.WaitAll(reqs, nil))
			if me == 0 {
				_, err = ranks.Recv(c, ack, 1, 101)
				osu.Must(err)
			} else {
				osu.Must(ranks.Send(c, ack, 0, 101))
			}
		}
		if me == 0 {
			osu.Row(n, float64(n)*float64(iters)*float64(o.Window)/time.Since(start).Seconds()/1e6)
		}
		if me == 1 {
			osu.Check(rbuf[:n], 7, "osu_bw")
		}
	}
}
