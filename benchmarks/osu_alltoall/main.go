// Command osu_alltoall measures the latency of coll.Alltoall with blocks
// of n bytes (each rank sends and receives Size() of them), as OSU's
// osu_alltoall does: each call timed on its own and followed by an
// untimed barrier; the average over the ranks of each rank's mean. After
// the timed calls of each size, one more checks every block.
//
//	shmrun -n 8 ./osu_alltoall -m 1:1048576
package main

import (
	"fmt"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
)

// seed is the pattern of the block rank from sends to rank to.
func seed(from, to int) byte { return byte(7*from + 13*to + 1) }

func main() {
	o := osu.ParseColl()
	w, c := osu.Init(1)
	defer osu.Finish(w)
	me, np := c.Rank(), c.Size()
	o.LimitMem(np, me)
	osu.CollHeader(c, "All-to-All Personalized Exchange Latency", "MPI_CHAR")
	send, recv := osu.Zeroed(o.MaxSize*np), osu.Zeroed(o.MaxSize*np)
	for _, n := range o.Sizes() {
		if n == 0 {
			continue
		}
		iters, skip := o.Counts(n)
		s, r := send[:n*np], recv[:n*np]
		for q := range np {
			osu.Fill(s[q*n:(q+1)*n], seed(me, q))
		}
		osu.Must(coll.Barrier(c))
		total := osu.TimeColl(c, iters, skip, func() error { return coll.Alltoall(c, s, r) })
		for q := range np {
			osu.Poison(r[q*n:(q+1)*n], seed(q, me))
		}
		osu.Must(coll.Alltoall(c, s, r))
		for q := range np {
			osu.Check(r[q*n:(q+1)*n], seed(q, me), fmt.Sprintf("alltoall, block from rank %d", q))
		}
		osu.CollRow(c, n, total, iters)
		osu.Must(coll.Barrier(c))
	}
}
