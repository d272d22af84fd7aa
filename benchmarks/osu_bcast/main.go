// Command osu_bcast measures the latency of coll.Bcast of n bytes from
// rank 0, as OSU's osu_bcast does (each call timed on its own and
// followed by an untimed barrier; the average over the ranks of each
// rank's mean). After the timed calls of each size, one more checks that
// the data arrived.
//
//	shmrun -n 8 ./osu_bcast -m 1:1048576
package main

import (
	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
)

func main() {
	o := osu.ParseColl()
	w, c := osu.Init(1)
	defer osu.Finish(w)
	me := c.Rank()
	osu.CollHeader(c, "Broadcast Latency", "MPI_CHAR")
	buf := osu.Zeroed(o.MaxSize)
	for _, n := range o.Sizes() {
		if n == 0 {
			continue
		}
		iters, skip := o.Counts(n)
		b := buf[:n]
		if me == 0 {
			osu.Fill(b, 1)
		}
		osu.Must(coll.Barrier(c))
		total := osu.TimeColl(c, iters, skip, func() error { return coll.Bcast(c, b, 0) })
		if me != 0 {
			osu.Poison(b, 1)
		}
		osu.Must(coll.Bcast(c, b, 0))
		osu.Check(b, 1, "bcast")
		osu.CollRow(c, n, total, iters)
		osu.Must(coll.Barrier(c))
	}
}
