// Command osu_scatter measures the latency of coll.Scatter of n bytes per
// rank from rank 0 (which sends Size() blocks of n), as OSU's
// osu_scatter does: each call timed on its own and followed by an
// untimed barrier; the average over the ranks of each rank's mean. After
// the timed calls of each size, one more checks every rank's block.
//
//	shmrun -n 8 ./osu_scatter -m 1:1048576
package main

import (
	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
)

func main() {
	o := osu.ParseColl()
	w, c := osu.Init(1)
	defer osu.Finish(w)
	me, np := c.Rank(), c.Size()
	o.LimitMem(np, me)
	osu.CollHeader(c, "Scatter Latency", "MPI_CHAR")
	var send []byte
	if me == 0 {
		send = osu.Zeroed(o.MaxSize * np)
	}
	recv := osu.Zeroed(o.MaxSize)
	for _, n := range o.Sizes() {
		if n == 0 {
			continue
		}
		iters, skip := o.Counts(n)
		var s []byte
		if me == 0 {
			s = send[:n*np]
			for q := range np {
				osu.Fill(s[q*n:(q+1)*n], byte(q))
			}
		}
		r := recv[:n]
		osu.Must(coll.Barrier(c))
		total := osu.TimeColl(c, iters, skip, func() error { return coll.Scatter(c, s, r, 0) })
		osu.Poison(r, byte(me))
		osu.Must(coll.Scatter(c, s, r, 0))
		osu.Check(r, byte(me), "scatter")
		osu.CollRow(c, n, total, iters)
		osu.Must(coll.Barrier(c))
	}
}
