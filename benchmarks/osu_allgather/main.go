// Command osu_allgather measures the latency of coll.Allgather of n
// bytes per rank (each rank receives Size() blocks of n), as OSU's
// osu_allgather does: each call timed on its own and followed by an
// untimed barrier; the average over the ranks of each rank's mean. After
// the timed calls of each size, one more checks every block.
//
//	shmrun -n 8 ./osu_allgather -m 1:1048576
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
	osu.CollHeader(c, "Allgather Latency", "MPI_CHAR")
	send, recv := osu.Zeroed(o.MaxSize), osu.Zeroed(o.MaxSize*np)
	for _, n := range o.Sizes() {
		if n == 0 {
			continue
		}
		iters, skip := o.Counts(n)
		s, r := send[:n], recv[:n*np]
		osu.Fill(s, byte(me))
		osu.Must(coll.Barrier(c))
		total := osu.TimeColl(c, iters, skip, func() error { return coll.Allgather(c, s, r) })
		for q := range np {
			osu.Poison(r[q*n:(q+1)*n], byte(q))
		}
		osu.Must(coll.Allgather(c, s, r))
		for q := range np {
			osu.Check(r[q*n:(q+1)*n], byte(q), fmt.Sprintf("allgather, block of rank %d", q))
		}
		osu.CollRow(c, n, total, iters)
		osu.Must(coll.Barrier(c))
	}
}
