package osu

// The neighbourhood collective benchmarks (osu_neighbor_allgather,
// osu_neighbor_alltoall and their nonblocking osu_ineighbor_* forms)
// build their neighbourhood as OSU 7.x's omb_neighborhood_create does
// (c/util/osu_util_mpi.c) with its default -N cart:dim:rad: a periodic
// Cartesian grid of dim dimensions over all the ranks (DimsCreate), in
// which each rank's neighbours are the ranks at every displacement in
// [-rad, rad]^dim but zero, in lexicographic order of the displacement
// (the last dimension fastest). The same list serves as sources and
// destinations of a distributed graph (DistGraphCreateAdjacent, weights
// 1 as OSU's), on which the collectives run. OSU refuses a radius above
// (smallest dimension - 1)/2, where a neighbour would repeat (at fewer
// than 3 ranks with its default cart:1:1); we do not, since MPI allows
// repeated edges: at 2 ranks each rank has its one peer twice, and the
// k-th edge from q to r pairs with the k-th edge into r from q.
// benchmarks/ref/osu_neighbor.c builds the same graph under Open MPI.
//
// Data: in the allgather the block from source q is seeded NbSeed(q, 0)
// (every destination gets the same block); in the alltoall the block a
// rank sends to its j-th destination is seeded NbSeed(rank, j+1).

import (
	"flag"
	"fmt"
	"log"
	"strconv"
	"strings"
	"time"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// nbhd is -N: OSU's neighbourhood, cart:dim:rad.
var nbhd = "cart:1:1"

// nbhdFlag registers -N; it is called before the flags are parsed.
func nbhdFlag() {
	flag.StringVar(&nbhd, "N", nbhd, "neighbourhood cart:dim:rad (OSU's -N; the graph-file form is not supported)")
}

// nbhdParams reads -N.
func nbhdParams() (dim, rad int) {
	f := strings.Split(nbhd, ":")
	if len(f) == 3 && strings.EqualFold(f[0], "cart") {
		d, err1 := strconv.Atoi(f[1])
		r, err2 := strconv.Atoi(f[2])
		if err1 == nil && err2 == nil && d >= 1 && r >= 1 {
			return d, r
		}
	}
	log.Fatalf("bad -N %q, want cart:dim:rad with dim, rad >= 1", nbhd)
	return 0, 0
}

// NbSeed is the pattern of the block rank from sends in slot slot.
func NbSeed(from, slot int) byte { return byte(11*from + 5*slot + 3) }

// Neighborhood is the graph the neighbourhood benchmarks run on.
type Neighborhood struct {
	Graph *ranks.Comm
	Dims  []int
	list  func(r int) []int // the neighbours of rank r, sources = destinations
}

// NewNeighborhood builds the neighbourhood of -N over c (collective over
// c) and prints OSU's lines on the grid and the graph's creation time at
// rank 0.
func NewNeighborhood(c *ranks.Comm) *Neighborhood {
	d, r := nbhdParams()
	dims, err := ranks.DimsCreate(c.Size(), make([]int, d))
	Must(err)
	// Neighbour ranks follow from the coordinates, as MPI_Cart_rank with
	// every dimension periodic (the grid has every rank of c).
	coords := func(rank int) []int {
		x := make([]int, d)
		for i := d - 1; i >= 0; i-- {
			x[i] = rank % dims[i]
			rank /= dims[i]
		}
		return x
	}
	list := func(rank int) []int {
		me := coords(rank)
		disp := make([]int, d)
		for i := range disp {
			disp[i] = -r
		}
		var out []int
		for {
			q := 0
			for i := range d {
				q = q*dims[i] + ((me[i]+disp[i])%dims[i]+dims[i])%dims[i]
			}
			if q != rank {
				out = append(out, q)
			}
			i := d - 1
			for ; i >= 0 && disp[i] == r; i-- {
				disp[i] = -r
			}
			if i < 0 {
				break
			}
			disp[i]++
		}
		return out
	}
	if c.Rank() == 0 {
		fmt.Printf("Dimensions size = ")
		for _, x := range dims {
			fmt.Printf("%d ", x)
		}
		fmt.Println()
	}
	nb := list(c.Rank())
	ones := make([]int, len(nb)) // weights 1, as OSU's
	for i := range ones {
		ones[i] = 1
	}
	t := time.Now()
	g, err := c.DistGraphCreateAdjacent(nb, ones, nb, ones, false)
	Must(err)
	took := float64(time.Since(t).Nanoseconds()) / 1e3
	sum := []float64{0}
	Must(coll.Reduce(c, []float64{took}, sum, coll.Sum[float64], 0))
	if c.Rank() == 0 {
		fmt.Printf("Time took to create topology graph:%.*f us.\n", digits, sum[0]/float64(c.Size()))
	}
	return &Neighborhood{Graph: g, Dims: dims, list: list}
}

// slotAt returns the slot in which source src, the i-th entry of this
// rank's source list, sends to this rank: the k-th edge from src into
// this rank pairs with the k-th edge from src to this rank in src's
// destination list.
func (nb *Neighborhood) slotAt(me int, srcs []int, i int) int {
	k := 0
	for _, q := range srcs[:i] {
		if q == srcs[i] {
			k++
		}
	}
	for j, q := range nb.list(srcs[i]) {
		if q == me {
			if k == 0 {
				return j
			}
			k--
		}
	}
	log.Fatalf("rank %d: source %d has no matching edge", me, srcs[i])
	return -1
}

// NeighborAllgather is MPI_Neighbor_allgather of n bytes on the
// neighbourhood of -N.
func NeighborAllgather() *Coll { return neighbor(false) }

// NeighborAlltoall is MPI_Neighbor_alltoall of n-byte blocks on the
// neighbourhood of -N.
func NeighborAlltoall() *Coll { return neighbor(true) }

func neighbor(a2a bool) *Coll {
	var nb *Neighborhood
	var g *ranks.Comm
	var send, recv []byte
	var srcs []int
	k := &Coll{Name: "NeighborAllgather", NBTitle: "Non-blocking Neighborhood Allgather Latency",
		PTitle: "Neighborhood Allgather Persistent Latency", Datatype: "MPI_CHAR", Elem: 1, PerRank: true,
		Setup: func(c *ranks.Comm, max int) {
			nb = NewNeighborhood(c)
			g = nb.Graph
			var err error
			srcs, _, err = g.Neighbors()
			Must(err)
			out := 1
			if a2a {
				out = len(srcs)
			}
			send, recv = Zeroed(max*out), Zeroed(max*len(srcs))
		},
		At: func(n int) Calls {
			me := g.Rank()
			r := recv[:n*len(srcs)]
			var s []byte
			var from func(i int) byte
			if a2a {
				s = send[:n*len(srcs)]
				fillBlocks(s, n, func(j int) byte { return NbSeed(me, j+1) })
				from = func(i int) byte { return NbSeed(srcs[i], nb.slotAt(me, srcs, i)+1) }
			} else {
				s = send[:n]
				Fill(s, NbSeed(me, 0))
				from = func(i int) byte { return NbSeed(srcs[i], 0) }
			}
			calls := Calls{
				Poison: func() { poisonBlocks(r, n, from) },
				Verify: func(what string) { checkBlocks(r, n, from, what) },
			}
			if a2a {
				calls.Start = func() (*ranks.Request, error) { return coll.INeighborAlltoall(g, s, r) }
				calls.Init = func() (*ranks.Request, error) { return coll.NeighborAlltoallInit(g, s, r) }
				calls.Call = func() error { return coll.NeighborAlltoall(g, s, r) }
			} else {
				calls.Start = func() (*ranks.Request, error) { return coll.INeighborAllgather(g, s, r) }
				calls.Init = func() (*ranks.Request, error) { return coll.NeighborAllgatherInit(g, s, r) }
				calls.Call = func() error { return coll.NeighborAllgather(g, s, r) }
			}
			return calls
		},
	}
	if a2a {
		k.Name, k.NBTitle = "NeighborAlltoall", "Non-blocking Neighborhood Alltoall Latency"
		k.PTitle = "Neighborhood Alltoall Persistent Latency"
	}
	return k
}

// RunNeighbor is the main of a blocking neighbourhood benchmark of k
// (OSU's osu_neighbor_*): each call timed on its own and followed by an
// untimed Barrier, the average over the ranks of each rank's mean per
// call; after the timed calls of each size one more call is checked.
func RunNeighbor(k *Coll, title string) {
	nbhdFlag()
	o := ParseColl()
	w, c := Init(1)
	defer Finish(w)
	o.LimitMem(c.Size(), c.Rank())
	k.Setup(c, o.MaxSize)
	CollHeader(c, title, k.Datatype)
	what := k.Name
	for _, n := range o.Sizes() {
		if n == 0 {
			continue
		}
		iters, skip := o.Counts(n)
		calls := k.At(n)
		Must(coll.Barrier(c))
		total := TimeColl(c, iters, skip, calls.Call)
		checkOnce(calls, calls.Call, fmt.Sprintf("%s of %d bytes", what, n))
		CollRow(c, n, total, iters)
		Must(coll.Barrier(c))
	}
}

// RunINeighbor is the main of a nonblocking neighbourhood benchmark of k
// (OSU's osu_ineighbor_*): RunNonblocking with -N.
func RunINeighbor(k *Coll) {
	nbhdFlag()
	RunNonblocking(k)
}
