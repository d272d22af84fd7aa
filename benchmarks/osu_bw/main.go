// Command osu_bw measures unidirectional bandwidth from rank 0 to rank 1
// as OSU's osu_bw does: a window of nonblocking sends answered by a
// window of nonblocking receives, then a 4-byte acknowledgement.
//
//	shmrun -n 2 ./osu_bw
package main

import (
	"time"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/ranks"
)

const (
	tagData = 100
	tagAck  = 101
	seed    = 7 // pattern of rank 0's send buffer
)

func main() {
	o, w, c, ok := osu.InitBandwidth("Bandwidth")
	if !ok {
		return
	}
	defer osu.Finish(w)
	me := c.Rank()
	// One allocation at the largest size; every size uses a prefix.
	sbuf := osu.Buffer(o.MaxSize, seed)
	rbuf := osu.Zeroed(o.MaxSize)
	ack := make([]byte, 4)
	reqs := make([]*ranks.Request, o.Window)
	for _, n := range o.Sizes() {
		iters, skip := o.Counts(n)
		sb, rb := sbuf[:n], rbuf[:n]
		var start time.Time
		for i := 0; i < iters+skip; i++ {
			if i == skip {
				start = time.Now()
			}
			var err error
			if me == 0 {
				for k := range reqs {
					reqs[k], err = ranks.Isend(c, sb, 1, tagData)
					osu.Must(err)
				}
				osu.Must(ranks.WaitAll(reqs, nil))
				_, err = ranks.Recv(c, ack, 1, tagAck)
				osu.Must(err)
			} else {
				if i == iters+skip-1 {
					osu.Poison(rb, seed) // so Check sees the last window
				}
				for k := range reqs {
					reqs[k], err = ranks.Irecv(c, rb, 0, tagData)
					osu.Must(err)
				}
				osu.Must(ranks.WaitAll(reqs, nil))
				osu.Must(ranks.Send(c, ack, 0, tagAck))
			}
		}
		if me == 0 {
			// The last ack means rank 1 has every byte: the time covers
			// the whole transfer.
			osu.Row(n, float64(n)*float64(iters)*float64(o.Window)/time.Since(start).Seconds()/1e6)
		} else {
			osu.Check(rb, seed, "osu_bw")
		}
	}
}
