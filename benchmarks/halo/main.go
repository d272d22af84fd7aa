// Command halo measures a halo exchange on a periodic grid of the ranks
// (ranks.DimsCreate's, 2-D unless -nd says otherwise): each rank sends a
// block of n bytes to each of its 2*nd neighbours and receives one from
// each. In the same run, size by size, it times the exchange as
// coll.NeighborAlltoall, as a persistent coll.NeighborAlltoallInit
// started each time, and written by hand with ranks.Irecv, ranks.Isend
// and ranks.WaitAll (one tag per direction, so that a dimension of two
// ranks pairs its blocks right). As OSU's collective benchmarks, each
// call is timed on its own and followed by an untimed barrier; a column
// is the average over the ranks of each rank's mean time per exchange.
// After the timed calls of each size, one more exchange of each kind
// checks every block.
//
// It runs at ThreadMultiple (ranks.Init), whatever -t says.
//
//	shmrun -n 8 ./halo -m 1:65536
package main

import (
	"flag"
	"fmt"
	"log"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

func main() {
	nd := flag.Int("nd", 2, "dimensions of the grid")
	o := osu.ParseColl()
	w, err := ranks.Init()
	if err != nil {
		log.Fatal(err)
	}
	defer osu.Finish(w)
	world := w.Comm()
	dims, err := ranks.DimsCreate(world.Size(), make([]int, *nd))
	osu.Must(err)
	periods := make([]bool, *nd)
	for i := range periods {
		periods[i] = true
	}
	c, err := world.CartCreate(dims, periods, false)
	osu.Must(err)
	src, dst, err := c.Neighbors()
	osu.Must(err)
	k := len(dst)
	me := c.Rank()
	if me == 0 {
		fmt.Printf("# OSU MPI Halo Exchange Latency Test v%s (shmpi)\n", osu.Version)
		fmt.Printf("# Grid: %v, periodic; %d neighbours a rank; Datatype: MPI_CHAR.\n", dims, k)
		fmt.Printf("%-10s%18s%18s%18s\n", "# Size", "Neighbor(us)", "Persistent(us)", "Isend/Irecv(us)")
	}
	send, recv := osu.Zeroed(o.MaxSize*k), osu.Zeroed(o.MaxSize*k)
	reqs := make([]*ranks.Request, 0, 2*k)
	// byHand is the exchange with point-to-point calls: block i of recv
	// from source i is what that source sent in the opposite direction
	// (block i^1), so it carries that direction's tag.
	byHand := func(s, r []byte, n int) error {
		reqs = reqs[:0]
		for i, q := range src {
			rq, err := ranks.Irecv(c, r[i*n:(i+1)*n], q, i^1)
			if err != nil {
				return err
			}
			reqs = append(reqs, rq)
		}
		for j, q := range dst {
			rq, err := ranks.Isend(c, s[j*n:(j+1)*n], q, j)
			if err != nil {
				return err
			}
			reqs = append(reqs, rq)
		}
		return ranks.WaitAll(reqs, nil)
	}
	for _, n := range o.Sizes() {
		if n == 0 {
			continue
		}
		iters, skip := o.Counts(n)
		s, r := send[:n*k], recv[:n*k]
		for j := range k {
			osu.Fill(s[j*n:(j+1)*n], byte(me*16+j))
		}
		p, err := coll.NeighborAlltoallInit(c, s, r)
		osu.Must(err)
		osu.Must(coll.Barrier(c))
		tNb := osu.TimeColl(c, iters, skip, func() error { return coll.NeighborAlltoall(c, s, r) })
		tPers := osu.TimeColl(c, iters, skip, func() error {
			if err := p.Start(); err != nil {
				return err
			}
			_, err := p.Wait()
			return err
		})
		tHand := osu.TimeColl(c, iters, skip, func() error { return byHand(s, r, n) })
		for _, kind := range []struct {
			name string
			run  func() error
		}{
			{"NeighborAlltoall", func() error { return coll.NeighborAlltoall(c, s, r) }},
			{"persistent", func() error { osu.Must(p.Start()); _, err := p.Wait(); return err }},
			{"Isend/Irecv", func() error { return byHand(s, r, n) }},
		} {
			for i := range k {
				osu.Poison(r[i*n:(i+1)*n], byte(src[i]*16+(i^1)))
			}
			osu.Must(kind.run())
			for i := range k {
				osu.Check(r[i*n:(i+1)*n], byte(src[i]*16+(i^1)), fmt.Sprintf("%s, block %d from rank %d", kind.name, i, src[i]))
			}
		}
		osu.Must(p.Free())
		row(c, n, []float64{us(tNb, iters), us(tPers, iters), us(tHand, iters)})
		osu.Must(coll.Barrier(c))
	}
	osu.Must(c.Free())
}

func us(total interface{ Nanoseconds() int64 }, iters int) float64 {
	if iters == 0 {
		return 0
	}
	return float64(total.Nanoseconds()) / 1e3 / float64(iters)
}

// row prints, at rank 0, the size and the average over the ranks of each
// column.
func row(c *ranks.Comm, n int, v []float64) {
	sum := make([]float64, len(v))
	osu.Must(coll.Reduce(c, v, sum, coll.Sum[float64], 0))
	if c.Rank() != 0 {
		return
	}
	fmt.Printf("%-10d", n)
	for _, x := range sum {
		fmt.Printf("%18.2f", x/float64(c.Size()))
	}
	fmt.Println()
}
