// Command osu_bibw measures bidirectional bandwidth between ranks 0 and 1
// as OSU's osu_bibw does: both post a window of receives and a window of
// sends at once; the figure counts the bytes moved in both directions.
//
//	shmrun -n 2 ./osu_bibw
package main

import (
	"time"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/ranks"
)

const tagData = 100

// seedOf is rank r's send pattern; the ranks differ so that a receive
// buffer that kept this rank's own data (or nothing) fails the check.
func seedOf(r int) byte { return byte(11 + r) }

func main() {
	o, w, c, ok := osu.InitBandwidth("Bi-Directional Bandwidth")
	if !ok {
		return
	}
	defer osu.Finish(w)
	me := c.Rank()
	peer := 1 - me
	// One allocation at the largest size; every size uses a prefix.
	sbuf := osu.Buffer(o.MaxSize, seedOf(me))
	rbuf := osu.Zeroed(o.MaxSize)
	// Receives first, then sends, all in one WaitAll, as OSU.
	reqs := make([]*ranks.Request, 2*o.Window)
	for _, n := range o.Sizes() {
		iters, skip := o.Counts(n)
		sb, rb := sbuf[:n], rbuf[:n]
		var start time.Time
		for i := 0; i < iters+skip; i++ {
			if i == skip {
				start = time.Now()
			}
			if i == iters+skip-1 {
				osu.Poison(rb, seedOf(peer)) // so Check sees the last window
			}
			var err error
			for k := 0; k < o.Window; k++ {
				reqs[k], err = ranks.Irecv(c, rb, peer, tagData)
				osu.Must(err)
			}
			for k := 0; k < o.Window; k++ {
				reqs[o.Window+k], err = ranks.Isend(c, sb, peer, tagData)
				osu.Must(err)
			}
			osu.Must(ranks.WaitAll(reqs, nil))
		}
		if me == 0 {
			// Rank 0 times its own WaitAll, as OSU: it covers rank 1's
			// whole window, though rank 1 may still be copying out the
			// last eager messages of rank 0's.
			osu.Row(n, 2*float64(n)*float64(iters)*float64(o.Window)/time.Since(start).Seconds()/1e6)
		}
		osu.Check(rb, seedOf(peer), "osu_bibw")
	}
}
