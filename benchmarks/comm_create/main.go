// Command comm_create measures the latency of creating and freeing
// communicators: Comm.Dup of the world, Comm.Split(rank%2, rank) of the
// world, and Comm.Free of each, every call timed on its own. Each
// iteration starts with an untimed barrier (as the OSU collective
// benchmarks separate their calls) and checks the new communicators'
// size and rank. It prints, on rank 0, the average over the ranks of
// each rank's mean time per call in µs, one line each: dup_us, split_us
// and free_us (the Frees of both kinds together):
//
//	shmrun -n 8 ./comm_create -i 200
package main

import (
	"fmt"
	"log"
	"time"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

func main() {
	o := osu.Parse(200, 20, 0, 0)
	w, c := osu.Init(1)
	defer osu.Finish(w)
	me, np := c.Rank(), c.Size()
	// The Split's group: the ranks of my parity, in rank order.
	half := (np - me%2 + 1) / 2
	var tDup, tSplit, tFree time.Duration
	timed := func(i int, d *time.Duration, f func()) {
		t := time.Now()
		f()
		if i >= o.Skip {
			*d += time.Since(t)
		}
	}
	check := func(what string, nc *ranks.Comm, size, rank int) {
		if nc.Size() != size || nc.Rank() != rank {
			log.Fatalf("%s: size %d rank %d, want %d and %d", what, nc.Size(), nc.Rank(), size, rank)
		}
	}
	for i := range o.Iters + o.Skip {
		var nc *ranks.Comm
		var err error
		osu.Must(coll.Barrier(c))
		timed(i, &tDup, func() { nc, err = c.Dup() })
		osu.Must(err)
		check("Dup", nc, np, me)
		timed(i, &tFree, func() { err = nc.Free() })
		osu.Must(err)

		osu.Must(coll.Barrier(c))
		timed(i, &tSplit, func() { nc, err = c.Split(me%2, me) })
		osu.Must(err)
		check("Split", nc, half, me/2)
		timed(i, &tFree, func() { err = nc.Free() })
		osu.Must(err)
	}
	osu.Must(coll.Barrier(c))
	us := func(d time.Duration, calls int) float64 {
		return float64(d.Nanoseconds()) / 1e3 / float64(max(calls, 1))
	}
	mine := []float64{us(tDup, o.Iters), us(tSplit, o.Iters), us(tFree, 2*o.Iters)}
	var all []float64
	if me == 0 {
		all = make([]float64, 3*np)
	}
	osu.Must(coll.Gather(c, mine, all, 0))
	if me != 0 {
		return
	}
	fmt.Printf("# shmpi communicator creation: Dup, Split(rank%%2, rank), Free; %d ranks, %d iterations\n", np, o.Iters)
	fmt.Printf("# µs per call, average over the ranks of each rank's mean\n")
	for k, name := range []string{"dup_us", "split_us", "free_us"} {
		sum := 0.0
		for r := range np {
			sum += all[3*r+k]
		}
		osu.Named(name, sum/float64(np))
	}
}
