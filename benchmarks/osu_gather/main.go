// Command osu_gather measures the latency of coll.Gather of n bytes per
// rank at rank 0 (which receives Size() blocks of n), as OSU's
// osu_gather does: each call timed on its own and followed by an untimed
// barrier; the average over the ranks of each rank's mean. After the
// timed calls of each size, one more checks every block at rank 0.
//
//	shmrun -n 8 ./osu_gather -m 1:1048576
package main

import (
	"fmt"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
)

func main() {
	o := osu.ParseColl()
	w, c := osu.Init(1)
	defer osu.Finish(w)
	me, np := c.Rank(), c.Size()
	o.LimitMem(np, me)
	osu.CollHeader(c, "Gather Latency", "MPI_CHAR")
	send := osu.Zeroed(o.MaxSize)
	var recv []byte
	if me == 0 {
		recv = osu.Zeroed(o.MaxSize * np)
	}
	for _, n := range o.Sizes() {
		if n == 0 {
			continue
		}
		iters, skip := o.Counts(n)
		s := send[:n]
		var r []byte
		if me == 0 {
			r = recv[:n*np]
		}
		osu.Fill(s, byte(me))
		osu.Must(coll.Barrier(c))
		total := osu.TimeColl(c, iters, skip, func() error { return coll.Gather(c, s, r, 0) })
		for q := range len(r) / n {
			osu.Poison(r[q*n:(q+1)*n], byte(q))
		}
		osu.Must(coll.Gather(c, s, r, 0))
		for q := range len(r) / n {
			osu.Check(r[q*n:(q+1)*n], byte(q), fmt.Sprintf("gather, block of rank %d", q))
		}
		osu.CollRow(c, n, total, iters)
		osu.Must(coll.Barrier(c))
	}
}
