// Command osu_allreduce_persistent measures a persistent Allreduce
// (coll.AllreduceInit once, then Start and Wait per call) beside a fresh
// nonblocking one (coll.Iallreduce and Wait) and the blocking one, in the
// same run, on float32 elements with coll.Sum as osu_allreduce does: each
// call timed on its own and followed by an untimed barrier; the average
// over the ranks of each rank's mean, µs.
//
//	shmrun -n 8 ./osu_allreduce_persistent -m 4:1048576
package main

import (
	"fmt"
	"log"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

func main() {
	o := osu.ParseColl()
	w, c := osu.Init(1)
	defer osu.Finish(w)
	me, np := c.Rank(), c.Size()
	if me == 0 {
		fmt.Printf("# OSU MPI Allreduce Persistent Latency Test v%s (shmpi)\n", osu.Version)
		fmt.Printf("# Datatype: MPI_FLOAT.\n")
		fmt.Printf("%-10s%18s%18s%18s\n", "# Size", "Persistent(us)", "Iallreduce(us)", "Allreduce(us)")
	}
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
		req, err := coll.AllreduceInit(c, s, r, coll.Sum[float32])
		osu.Must(err)
		osu.Must(coll.Barrier(c))
		pers := osu.TimeColl(c, iters, skip, func() error {
			if err := req.Start(); err != nil {
				return err
			}
			_, err := req.Wait()
			return err
		})
		checkSum(r, np, "persistent allreduce")
		nb := osu.TimeColl(c, iters, skip, func() error {
			q, err := coll.Iallreduce(c, s, r, coll.Sum[float32])
			if err != nil {
				return err
			}
			_, err = q.Wait()
			return err
		})
		checkSum(r, np, "iallreduce")
		bl := osu.TimeColl(c, iters, skip, func() error { return coll.Allreduce(c, s, r, coll.Sum[float32]) })
		checkSum(r, np, "allreduce")
		osu.Must(req.Free())
		p, q, b := mean(c, pers, iters), mean(c, nb, iters), mean(c, bl, iters)
		if me == 0 {
			fmt.Printf("%-10d%18.2f%18.2f%18.2f\n", n, p, q, b)
		}
	}
}

// mean is the average over the ranks of each rank's mean µs per call.
func mean(c *ranks.Comm, total interface{ Nanoseconds() int64 }, iters int) float64 {
	v := float64(total.Nanoseconds()) / 1e3 / float64(max(iters, 1))
	sum, err := coll.AllreduceValue(c, v, coll.Sum[float64])
	osu.Must(err)
	return sum / float64(c.Size())
}

// checkSum fails unless r[i] is the sum over np ranks of rank+i%7.
func checkSum(r []float32, np int, what string) {
	for i, v := range r {
		if want := float32(np*(np-1)/2 + np*(i%7)); v != want {
			log.Fatalf("%s of %d floats: element %d is %v, want %v", what, len(r), i, v, want)
		}
	}
}
