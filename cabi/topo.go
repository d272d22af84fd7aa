package main

/*
#include "cabi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/shmpi/shmpi/ranks"
)

// Virtual topologies (MPI 4.0 chapter 8) over ranks' Cartesian grids,
// graphs and distributed graphs (ranks/topo.go). Ranks are never
// reordered (reorder is accepted and ignored, as ranks does), so
// MPI_Cart_map and MPI_Graph_map give each rank its own rank, or
// MPI_UNDEFINED past the grid or graph. MPI_PROC_NULL is ranks.ProcNull
// here. Arguments that are the same at every rank (MPI_Cart_create,
// MPI_Graph_create) are checked here, so that every rank returns the same
// error without taking part; the distributed graphs' arguments differ
// per rank, so a rank with bad ones still takes part (with arguments
// that ranks rejects at every member) before it returns its error.

// topoInts returns n C ints at p as Go ints (nil for none).
func topoInts(p *C.int, n int) []int {
	return intSlice(p, C.int(n))
}

// putInts writes xs into the C array p of room entries (the first
// min(len(xs), room)).
func putInts(p *C.int, room int, xs []int) {
	n := min(len(xs), room)
	if n <= 0 || p == nil {
		return
	}
	out := unsafe.Slice((*int32)(unsafe.Pointer(p)), n)
	for i := range n {
		out[i] = int32(xs[i])
	}
}

// cRank is a rank of the Go API as MPI gives it (ProcNull, Undefined).
func cRank(r int) C.int {
	switch r {
	case ranks.ProcNull:
		return MPI_PROC_NULL
	case ranks.Undefined:
		return MPI_UNDEFINED
	}
	return C.int(r)
}

// intraArg is commArg for a call that needs an intracommunicator.
func intraArg(comm C.uintptr_t, fname string) (*commObj, C.int) {
	o, r := commArg(comm, fname)
	if o == nil {
		return nil, r
	}
	if o.c.IsInter() {
		return nil, failCode(handle(comm), MPI_ERR_COMM, fname)
	}
	return o, 0
}

//export shmpi_MPI_Topo_test
func shmpi_MPI_Topo_test(comm C.uintptr_t, status *C.int) C.int {
	const fname = "MPI_Topo_test"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if status == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	k, err := o.c.Topo()
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	switch k {
	case ranks.Cart:
		*status = MPI_CART
	case ranks.Graph:
		*status = MPI_GRAPH
	case ranks.DistGraph:
		*status = MPI_DIST_GRAPH
	default:
		*status = MPI_UNDEFINED
	}
	return 0
}

// Cartesian grids.

// MPI_Dims_create is ranks.DimsCreate, which gives MPICH's grids (they
// are as balanced as can be: the factorization of the free dimensions
// with the smallest spread); dimensions that are all given must multiply
// to nnodes.
//
//export shmpi_MPI_Dims_create
func shmpi_MPI_Dims_create(nnodes, ndims C.int, dims *C.int) C.int {
	const fname = "MPI_Dims_create"
	if nnodes <= 0 || ndims < 0 || ndims > 0 && dims == nil {
		return failNone(MPI_ERR_ARG, fname)
	}
	in := topoInts(dims, int(ndims))
	out, err := ranks.DimsCreate(int(nnodes), in)
	if err != nil {
		return raise(C.SHMPI_ON_NONE, 0, classOf(err), fname, err)
	}
	prod := 1
	for _, d := range out {
		prod *= d
	}
	if prod != int(nnodes) {
		return failNone(MPI_ERR_DIMS, fname)
	}
	putInts(dims, len(out), out)
	return 0
}

// gridArgs reads ndims dims and periods.
func gridArgs(comm C.uintptr_t, ndims C.int, dims, periods *C.int, fname string) ([]int, []bool, C.int) {
	if ndims < 0 || ndims > 0 && (dims == nil || periods == nil) {
		return nil, nil, failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	d := topoInts(dims, int(ndims))
	if d == nil {
		d = []int{}
	}
	p := make([]bool, ndims)
	for i, v := range topoInts(periods, int(ndims)) {
		p[i] = v != 0
	}
	return d, p, 0
}

//export shmpi_MPI_Cart_create
func shmpi_MPI_Cart_create(comm C.uintptr_t, ndims C.int, dims, periods *C.int, reorder C.int, out *C.uintptr_t) C.int {
	const fname = "MPI_Cart_create"
	o, r := intraArg(comm, fname)
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	*out = MPI_COMM_NULL // what an error leaves (as MPICH)
	d, p, r := gridArgs(comm, ndims, dims, periods, fname)
	if r != 0 {
		return r
	}
	c, err := o.c.CartCreate(d, p, reorder != 0)
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPI_Cart_map
func shmpi_MPI_Cart_map(comm C.uintptr_t, ndims C.int, dims, periods *C.int, newrank *C.int) C.int {
	const fname = "MPI_Cart_map"
	o, r := intraArg(comm, fname)
	if o == nil {
		return r
	}
	if newrank == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	d, _, r := gridArgs(comm, ndims, dims, periods, fname)
	if r != 0 {
		return r
	}
	n := 1
	for _, x := range d {
		if x <= 0 {
			return failCode(handle(comm), MPI_ERR_DIMS, fname)
		}
		if n *= x; n > o.c.Size() {
			return failCode(handle(comm), MPI_ERR_ARG, fname)
		}
	}
	*newrank = MPI_UNDEFINED
	if o.c.Rank() < n {
		*newrank = C.int(o.c.Rank())
	}
	return 0
}

//export shmpi_MPI_Cartdim_get
func shmpi_MPI_Cartdim_get(comm C.uintptr_t, ndims *C.int) C.int {
	const fname = "MPI_Cartdim_get"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if ndims == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	n, err := o.c.CartdimGet()
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*ndims = C.int(n)
	return 0
}

//export shmpi_MPI_Cart_get
func shmpi_MPI_Cart_get(comm C.uintptr_t, maxdims C.int, dims, periods, coords *C.int) C.int {
	const fname = "MPI_Cart_get"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	d, p, x, err := o.c.CartGet()
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if int(maxdims) < len(d) || len(d) > 0 && (dims == nil || periods == nil || coords == nil) {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	pi := make([]int, len(p))
	for i, b := range p {
		if b {
			pi[i] = 1
		}
	}
	putInts(dims, len(d), d)
	putInts(periods, len(d), pi)
	putInts(coords, len(d), x)
	return 0
}

//export shmpi_MPI_Cart_rank
func shmpi_MPI_Cart_rank(comm C.uintptr_t, coords *C.int, rank *C.int) C.int {
	const fname = "MPI_Cart_rank"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	n, err := o.c.CartdimGet()
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if rank == nil || n > 0 && coords == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	x := topoInts(coords, n)
	if x == nil {
		x = []int{}
	}
	rk, err := o.c.CartRank(x)
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*rank = C.int(rk)
	return 0
}

//export shmpi_MPI_Cart_coords
func shmpi_MPI_Cart_coords(comm C.uintptr_t, rank, maxdims C.int, coords *C.int) C.int {
	const fname = "MPI_Cart_coords"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	x, err := o.c.CartCoords(int(rank))
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if int(maxdims) < len(x) || len(x) > 0 && coords == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	putInts(coords, len(x), x)
	return 0
}

//export shmpi_MPI_Cart_shift
func shmpi_MPI_Cart_shift(comm C.uintptr_t, direction, disp C.int, source, dest *C.int) C.int {
	const fname = "MPI_Cart_shift"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if source == nil || dest == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	s, d, err := o.c.CartShift(int(direction), int(disp))
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*source, *dest = cRank(s), cRank(d)
	return 0
}

//export shmpi_MPI_Cart_sub
func shmpi_MPI_Cart_sub(comm C.uintptr_t, remain *C.int, out *C.uintptr_t) C.int {
	const fname = "MPI_Cart_sub"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	n, err := o.c.CartdimGet()
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if out == nil || n > 0 && remain == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	keep := make([]bool, n)
	for i, v := range topoInts(remain, n) {
		keep[i] = v != 0
	}
	c, err := o.c.CartSub(keep)
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

// Graphs.

// graphArgs reads nnodes index entries and the edges they count.
func graphArgs(comm C.uintptr_t, nnodes C.int, index, edges *C.int, fname string) ([]int, []int, C.int) {
	if nnodes < 0 || nnodes > 0 && index == nil {
		return nil, nil, failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	ix := topoInts(index, int(nnodes))
	if ix == nil {
		ix = []int{}
	}
	ne := 0
	if nnodes > 0 {
		ne = ix[nnodes-1]
	}
	if ne < 0 || ne > 0 && edges == nil {
		return nil, nil, failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	e := topoInts(edges, ne)
	if e == nil {
		e = []int{}
	}
	return ix, e, 0
}

//export shmpi_MPI_Graph_create
func shmpi_MPI_Graph_create(comm C.uintptr_t, nnodes C.int, index, edges *C.int, reorder C.int, out *C.uintptr_t) C.int {
	const fname = "MPI_Graph_create"
	o, r := intraArg(comm, fname)
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	ix, e, r := graphArgs(comm, nnodes, index, edges, fname)
	if r != 0 {
		return r
	}
	c, err := o.c.GraphCreate(ix, e, reorder != 0)
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPI_Graph_map
func shmpi_MPI_Graph_map(comm C.uintptr_t, nnodes C.int, index, edges *C.int, newrank *C.int) C.int {
	const fname = "MPI_Graph_map"
	o, r := intraArg(comm, fname)
	if o == nil {
		return r
	}
	if newrank == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if _, _, r := graphArgs(comm, nnodes, index, edges, fname); r != 0 {
		return r
	}
	if int(nnodes) > o.c.Size() {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	*newrank = MPI_UNDEFINED
	if o.c.Rank() < int(nnodes) {
		*newrank = C.int(o.c.Rank())
	}
	return 0
}

//export shmpi_MPI_Graphdims_get
func shmpi_MPI_Graphdims_get(comm C.uintptr_t, nnodes, nedges *C.int) C.int {
	const fname = "MPI_Graphdims_get"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if nnodes == nil || nedges == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	n, e, err := o.c.GraphdimsGet()
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*nnodes, *nedges = C.int(n), C.int(e)
	return 0
}

//export shmpi_MPI_Graph_get
func shmpi_MPI_Graph_get(comm C.uintptr_t, maxindex, maxedges C.int, index, edges *C.int) C.int {
	const fname = "MPI_Graph_get"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	ix, e, err := o.c.GraphGet()
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if maxindex < 0 || maxedges < 0 || maxindex > 0 && index == nil || maxedges > 0 && edges == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	putInts(index, int(maxindex), ix)
	putInts(edges, int(maxedges), e)
	return 0
}

//export shmpi_MPI_Graph_neighbors_count
func shmpi_MPI_Graph_neighbors_count(comm C.uintptr_t, rank C.int, n *C.int) C.int {
	const fname = "MPI_Graph_neighbors_count"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if n == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	k, err := o.c.GraphNeighborsCount(int(rank))
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*n = C.int(k)
	return 0
}

//export shmpi_MPI_Graph_neighbors
func shmpi_MPI_Graph_neighbors(comm C.uintptr_t, rank, maxn C.int, nbs *C.int) C.int {
	const fname = "MPI_Graph_neighbors"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if maxn < 0 || maxn > 0 && nbs == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	ns, err := o.c.GraphNeighbors(int(rank))
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	putInts(nbs, int(maxn), ns)
	return 0
}

// Distributed graphs.

// The ABI's MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY.
const (
	cUnweighted   = 10
	cWeightsEmpty = 11
)

// weightsArg reads n weights at p: nil for MPI_UNWEIGHTED,
// ranks.WeightsEmpty for MPI_WEIGHTS_EMPTY; ok is false if they cannot
// be read. A null pointer is an array like any other (MPICH's
// distgraph1: a weighted graph), so it holds no weights.
func weightsArg(p *C.int, n int) (w []int, ok bool) {
	switch uintptr(unsafe.Pointer(p)) {
	case 0:
		return ranks.WeightsEmpty, n == 0
	case cUnweighted:
		return nil, true
	case cWeightsEmpty:
		return ranks.WeightsEmpty, n == 0
	}
	if n == 0 {
		return ranks.WeightsEmpty, true
	}
	return topoInts(p, n), true
}

// badRanks makes a list of ranks that ranks rejects, for a rank whose own
// arguments are bad but must still take part.
var badRanks = []int{-1}

//export shmpi_MPI_Dist_graph_create_adjacent
func shmpi_MPI_Dist_graph_create_adjacent(comm C.uintptr_t, indegree C.int, sources, sweights *C.int, outdegree C.int, dests, dweights *C.int, info C.uintptr_t, reorder C.int, out *C.uintptr_t) C.int {
	const fname = "MPI_Dist_graph_create_adjacent"
	o, r := intraArg(comm, fname)
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if _, r := infoArg(info, fname); r != 0 {
		return r
	}
	// Bad arguments here still take part (with sources ranks rejects),
	// so that the other members return an error instead of waiting.
	bad := indegree < 0 || outdegree < 0 || indegree > 0 && sources == nil || outdegree > 0 && dests == nil
	var src, dst, sw, dw []int
	if !bad {
		var ok1, ok2 bool
		src, dst = topoInts(sources, int(indegree)), topoInts(dests, int(outdegree))
		sw, ok1 = weightsArg(sweights, int(indegree))
		dw, ok2 = weightsArg(dweights, int(outdegree))
		bad = !ok1 || !ok2
	}
	if bad {
		src, sw, dst, dw = badRanks, nil, nil, nil
	}
	c, err := o.c.DistGraphCreateAdjacent(src, sw, dst, dw, reorder != 0)
	if bad {
		if c != nil {
			c.Free()
		}
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPI_Dist_graph_create
func shmpi_MPI_Dist_graph_create(comm C.uintptr_t, n C.int, sources, degrees, dests, weights *C.int, info C.uintptr_t, reorder C.int, out *C.uintptr_t) C.int {
	const fname = "MPI_Dist_graph_create"
	o, r := intraArg(comm, fname)
	if o == nil {
		return r
	}
	if out == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if _, r := infoArg(info, fname); r != 0 {
		return r
	}
	bad := n < 0 || n > 0 && (sources == nil || degrees == nil)
	var src, deg, dst, w []int
	if !bad {
		src, deg = topoInts(sources, int(n)), topoInts(degrees, int(n))
		total := 0
		for _, d := range deg {
			if d < 0 {
				bad = true
			}
			total += d
		}
		if !bad && total > 0 && dests == nil {
			bad = true
		}
		if !bad {
			dst = topoInts(dests, total)
			var ok bool
			w, ok = weightsArg(weights, total)
			bad = !ok
		}
	}
	if bad {
		src, deg, dst, w = badRanks, []int{0}, nil, nil
	}
	c, err := o.c.DistGraphCreate(src, deg, dst, w, reorder != 0)
	if bad {
		if c != nil {
			c.Free()
		}
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*out = C.uintptr_t(newComm(c, o))
	return 0
}

//export shmpi_MPI_Dist_graph_neighbors_count
func shmpi_MPI_Dist_graph_neighbors_count(comm C.uintptr_t, indegree, outdegree, weighted *C.int) C.int {
	const fname = "MPI_Dist_graph_neighbors_count"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	if indegree == nil || outdegree == nil || weighted == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	in, out, w, err := o.c.DistGraphNeighborsCount()
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	*indegree, *outdegree, *weighted = C.int(in), C.int(out), 0
	if w {
		*weighted = 1
	}
	return 0
}

// weightsOut is a weights array to write, or nil (MPI_UNWEIGHTED and
// MPI_WEIGHTS_EMPTY are not arrays).
func weightsOut(p *C.int) *C.int {
	switch uintptr(unsafe.Pointer(p)) {
	case cUnweighted, cWeightsEmpty:
		return nil
	}
	return p
}

//export shmpi_MPI_Dist_graph_neighbors
func shmpi_MPI_Dist_graph_neighbors(comm C.uintptr_t, maxin C.int, sources, sweights *C.int, maxout C.int, dests, dweights *C.int) C.int {
	const fname = "MPI_Dist_graph_neighbors"
	o, r := commArg(comm, fname)
	if o == nil {
		return r
	}
	src, sw, dst, dw, err := o.c.DistGraphNeighbors()
	if err != nil {
		return fail(handle(comm), err, fname)
	}
	if maxin < 0 || maxout < 0 || maxin > 0 && sources == nil || maxout > 0 && dests == nil {
		return failCode(handle(comm), MPI_ERR_ARG, fname)
	}
	putInts(sources, int(maxin), src)
	putInts(dests, int(maxout), dst)
	putInts(weightsOut(sweights), int(maxin), sw)
	putInts(weightsOut(dweights), int(maxout), dw)
	return 0
}
