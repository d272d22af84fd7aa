// Command osu_multi_lat measures one-way latency with every rank busy:
// rank i ping-pongs with rank i+N/2, all pairs at once, as OSU's
// osu_multi_lat does. It prints the average over the pairs.
//
//	shmrun -n 4 ./osu_multi_lat
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/ranks"
)

const (
	tagPing = 1
	tagLat  = 2 // a leader's result, to rank 0
	tagSync = 3
)

// seedOf is rank r's send pattern; partners differ so that a receive
// buffer that kept stale data fails the check.
func seedOf(r int) byte { return byte(3 + 16*r) }

func main() {
	o := osu.Parse(10000, 1000, 1000, 10)
	w, c := osu.Init(2)
	defer osu.Finish(w)
	me, size := c.Rank(), c.Size()
	if size%2 != 0 {
		// Rank 0 alone says so and fails the job; the others end cleanly
		// so that shmrun does not kill rank 0 before it has printed.
		if me == 0 {
			fmt.Fprintf(os.Stderr, "osu_multi_lat needs an even number of ranks, got %d\n", size)
			osu.Finish(w)
			os.Exit(1)
		}
		return
	}
	half := size / 2
	lead := me < half // leaders measure; their partners echo
	peer := (me + half) % size
	if me == 0 {
		osu.Header("Multi Latency", "Avg Latency(us)")
	}
	// One allocation at the largest size; every size uses a prefix.
	sbuf := osu.Buffer(o.MaxSize, seedOf(me))
	rbuf := osu.Zeroed(o.MaxSize)
	lat := make([]float64, 1)
	for _, n := range o.Sizes() {
		iters, skip := o.Counts(n)
		sb, rb := sbuf[:n], rbuf[:n]
		// Start the pairs together, as OSU's barrier does, so that every
		// pair runs while the others do.
		barrier(c, me, size)
		var start time.Time
		for i := 0; i < iters+skip; i++ {
			if i == skip {
				start = time.Now()
			}
			if i == iters+skip-1 {
				osu.Poison(rb, seedOf(peer)) // so Check sees the last message
			}
			if lead {
				osu.Must(ranks.Send(c, sb, peer, tagPing))
				_, err := ranks.Recv(c, rb, peer, tagPing)
				osu.Must(err)
			} else {
				_, err := ranks.Recv(c, rb, peer, tagPing)
				osu.Must(err)
				osu.Must(ranks.Send(c, sb, peer, tagPing))
			}
		}
		lat[0] = float64(time.Since(start).Nanoseconds()) / 1e3 / float64(2*iters)
		osu.Check(rb, seedOf(peer), "osu_multi_lat")
		// Leaders report to rank 0 by point-to-point sends (there are no
		// collectives yet); rank 0 averages.
		switch {
		case me == 0:
			sum := lat[0]
			for r := 1; r < half; r++ {
				_, err := ranks.Recv(c, lat, r, tagLat)
				osu.Must(err)
				sum += lat[0]
			}
			osu.Row(n, sum/float64(half))
		case lead:
			osu.Must(ranks.Send(c, lat, 0, tagLat))
		}
	}
}

// barrier returns once every rank has entered it: everyone reports to
// rank 0 with an empty message, then rank 0 releases everyone.
func barrier(c *ranks.Comm, me, size int) {
	var none []byte
	if me != 0 {
		osu.Must(ranks.Send(c, none, 0, tagSync))
		_, err := ranks.Recv(c, none, 0, tagSync)
		osu.Must(err)
		return
	}
	for r := 1; r < size; r++ {
		_, err := ranks.Recv(c, none, r, tagSync)
		osu.Must(err)
	}
	for r := 1; r < size; r++ {
		osu.Must(ranks.Send(c, none, r, tagSync))
	}
}
