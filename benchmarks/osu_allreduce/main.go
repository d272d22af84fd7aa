// Command osu_allreduce measures the latency of coll.Allreduce with
// coll.Sum over float32 elements (n bytes are n/4 of them; sizes below 4
// bytes are skipped), as OSU's osu_allreduce does with MPI_FLOAT and
// MPI_SUM: each call timed on its own and followed by an untimed
// barrier; the average over the ranks of each rank's mean. After the
// timed calls of each size, one more checks every element of the sum.
//
//	shmrun -n 8 ./osu_allreduce -m 4:1048576
package main

import (
	"log"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
)

func main() {
	o := osu.ParseColl()
	w, c := osu.Init(1)
	defer osu.Finish(w)
	me, np := c.Rank(), c.Size()
	osu.CollHeader(c, "Allreduce Latency", "MPI_FLOAT")
	send, recv := osu.Floats(o.MaxSize/4), osu.Floats(o.MaxSize/4)
	for i := range send {
		send[i] = float32(me + i%7)
	}
	for _, n := range o.Sizes() {
		k := n / 4
		if k == 0 {
			continue
		}
		iters, skip := o.Counts(n)
		s, r := send[:k], recv[:k]
		osu.Must(coll.Barrier(c))
		total := osu.TimeColl(c, iters, skip, func() error { return coll.Allreduce(c, s, r, coll.Sum[float32]) })
		clear(r)
		osu.Must(coll.Allreduce(c, s, r, coll.Sum[float32]))
		checkSum(r, np, "allreduce")
		osu.CollRow(c, n, total, iters)
		osu.Must(coll.Barrier(c))
	}
}

// checkSum fails unless r[i] is the sum over np ranks of rank+i%7.
func checkSum(r []float32, np int, what string) {
	for i, v := range r {
		if want := float32(np*(np-1)/2 + np*(i%7)); v != want {
			log.Fatalf("%s of %d floats: element %d is %v, want %v", what, len(r), i, v, want)
		}
	}
}
