package ranks

import (
	"errors"
	"fmt"
	"slices"
)

// Virtual topologies (MPI 4.0 chapter 8): a Cartesian grid, a graph or a
// distributed graph attached to a new communicator, which package coll's
// neighbourhood collectives follow.
//
// A topology is made once, when its communicator is, and never changes:
// Comm.topo points to it without a lock, and Dup shares it (MPI says a
// duplicate keeps its parent's topology). Every query is local.
//
// Ranks are never reordered: reorder is accepted and ignored, which MPI
// allows (MPICH does the same). On one node every rank reaches every
// other through the same shared memory, and this machine's two cores
// share their caches evenly, so no placement would be cheaper.
//
// Creation. CartCreate and GraphCreate need nothing but the new context:
// their arguments are the same at every rank (MPI requires it), so each
// rank computes the topology itself, and ranks past the grid or graph
// get nil without taking part. The distributed graphs differ per rank:
// every member sends its arguments to member 0 of the parent (on the
// collective context, tags tagTopoInfo and tagTopoTable), which checks
// them as a whole and answers each member with its edges, or with the
// error every member then returns. So an inconsistent graph (a rank
// named as a destination that does not name its source), a weighted
// graph with unweighted members, or one member's bad argument, are
// errors at every member rather than a hang in a later exchange.

// Topology is the kind of topology a communicator has (Comm.Topo):
// Cart, Graph, DistGraph, or Undefined for none (MPI_Topo_test).
type Topology int

// Topology kinds.
const (
	Cart      Topology = 1 // MPI_CART
	Graph     Topology = 2 // MPI_GRAPH
	DistGraph Topology = 3 // MPI_DIST_GRAPH
)

// Error classes of the topology functions.
var (
	// ErrTopology: the communicator has no topology, or not the kind the
	// call needs (MPI_ERR_TOPOLOGY).
	ErrTopology = errors.New("invalid topology")
	// ErrDims: invalid dimensions, negative or not dividing the number of
	// nodes (MPI_ERR_DIMS).
	ErrDims = errors.New("invalid dimensions")
)

// WeightsEmpty is DistGraphCreate's and DistGraphCreateAdjacent's weights
// of a weighted graph at a rank without such edges (MPI_WEIGHTS_EMPTY). A
// nil weights slice means unweighted (MPI_UNWEIGHTED).
var WeightsEmpty = []int{}

// Tags of the distributed graphs' creation on the parent's collective
// context (see commcreate.go's list).
const (
	tagTopoInfo  = tagCreateBase + 3 // member → member 0: its arguments
	tagTopoTable = tagCreateBase + 4 // member 0 → member: its edges, or the error
)

// topology is a communicator's topology; immutable once made.
type topology struct {
	kind Topology

	// Cart: the grid, and this rank's coordinates (row-major: the last
	// dimension varies fastest with the rank).
	dims    []int
	periods []bool
	coords  []int

	// Graph: MPI_Graph_create's index and edges, of every node.
	index, edges []int

	// DistGraph: this rank's edges, in the order given (Adjacent) or of
	// the members that named them (DistGraphCreate); weights nil if the
	// graph is unweighted.
	sources, sourceWeights []int
	dests, destWeights     []int
	weighted               bool
}

// Topo returns the kind of c's topology, or Undefined for none
// (MPI_Topo_test). Like Neighbors, it answers on a freed communicator
// until the operations started before the free have ended.
func (c *Comm) Topo() (Topology, error) {
	t, err := c.topoCheck("Topo", 0, true)
	switch {
	case errors.Is(err, ErrTopology):
		return Undefined, nil
	case err != nil:
		return Undefined, err
	}
	return t.kind, nil
}

// topoOf returns c's topology, which must be of kind want (0: any).
func (c *Comm) topoOf(op string, want Topology) (*topology, error) {
	return c.topoCheck(op, want, false)
}

// topoCheck is topoOf; if pending, a communicator the user freed still
// answers until it is released, as the operations started before the
// free need (package coll's nonblocking neighbourhood collectives read
// Neighbors and GraphGet).
func (c *Comm) topoCheck(op string, want Topology, pending bool) (*topology, error) {
	if c == nil {
		return nil, nilComm(op)
	}
	c.e.lock()
	var err error
	if pending {
		err = c.collLive(op)
		if errors.Is(err, ErrRevoked) {
			err = nil // a revoke does not hide the topology
		}
	} else {
		err = c.usable(op)
	}
	c.e.unlock()
	if err != nil {
		return nil, err
	}
	t := c.topo
	switch {
	case t == nil:
		return nil, newErr(ErrTopology, op, -1, "communicator %s has no topology", c.label())
	case want != 0 && t.kind != want:
		return nil, newErr(ErrTopology, op, -1, "communicator %s has a %s topology, not a %s one", c.label(), t.kind, want)
	}
	return t, nil
}

func (k Topology) String() string {
	switch k {
	case Cart:
		return "Cartesian"
	case Graph:
		return "graph"
	case DistGraph:
		return "distributed graph"
	case Undefined:
		return "undefined"
	}
	return fmt.Sprintf("Topology(%d)", int(k))
}

// liveCheck checks, for a creation that this rank may leave without
// communicating, that c may be used.
func (c *Comm) liveCheck(op string) error {
	c.e.lock()
	defer c.e.unlock()
	return c.live(op)
}

// firstN is the ranks 0..n-1.
func firstN(n int) []int {
	m := make([]int, n)
	for i := range m {
		m[i] = i
	}
	return m
}

// ---- Cartesian grids ----

// DimsCreate returns dims with every zero entry replaced so that the
// product of all entries is nnodes and the replaced ones are as close to
// each other as possible, in non-increasing order (MPI_Dims_create).
// Positive entries are kept. It gives MPICH's results: the factorization
// of the free dimensions with the smallest difference between the largest
// and the smallest, after MPICH's special cases (see balanced). It is
// local; dims is not modified.
func DimsCreate(nnodes int, dims []int) ([]int, error) {
	const op = "DimsCreate"
	if nnodes <= 0 {
		return nil, newErr(ErrArg, op, -1, "%d nodes (must be positive)", nnodes)
	}
	out := slices.Clone(dims)
	if out == nil {
		out = []int{}
	}
	free, fixed := 0, 1
	for i, d := range out {
		switch {
		case d < 0:
			return nil, newErr(ErrDims, op, -1, "dimension %d is %d (must be 0 or positive)", i, d)
		case d == 0:
			free++
		default:
			fixed *= d
			if fixed > nnodes {
				return nil, newErr(ErrDims, op, -1, "the given dimensions %v need more than %d nodes", dims, nnodes)
			}
		}
	}
	if nnodes%fixed != 0 {
		return nil, newErr(ErrDims, op, -1, "the given dimensions' product %d does not divide %d nodes", fixed, nnodes)
	}
	if free == 0 {
		return out, nil
	}
	chosen := balanced(nnodes/fixed, free)
	j := 0
	for i := range out {
		if out[i] == 0 {
			out[i] = chosen[j]
			j++
		}
	}
	return out, nil
}

// factor is a prime factor and its multiplicity.
type factor struct{ p, k int }

// factorize returns n's prime factors in increasing order, and how many
// primes they are with multiplicity.
func factorize(n int) ([]factor, int) {
	var fs []factor
	total := 0
	for p := 2; p*p <= n; p++ {
		k := 0
		for n%p == 0 {
			n /= p
			k++
		}
		if k > 0 {
			fs = append(fs, factor{p, k})
			total += k
		}
	}
	if n > 1 {
		fs = append(fs, factor{n, 1})
		total++
	}
	return fs, total
}

// balanced splits n into m factors, non-increasing, the way MPICH 4's
// MPIR_Dims_create does (after Träff and Lübbe, "Specification Guideline
// Violations by MPI_Dims_create", EuroMPI'15), so that programs get the
// grids they get there:
//
//  1. the largest primes whose square exceeds what is left of n each take
//     a dimension of their own, while at least two dimensions remain;
//  2. if the primes left (with multiplicity) fit in the dimensions left,
//     each takes one, largest first, and the rest are 1; if one dimension
//     is left it takes the rest of n; a power of a single prime is dealt
//     round robin; if every multiplicity divides by the dimensions left,
//     they all get the same value;
//  3. otherwise the factorization into factors of at least 2 with the
//     smallest difference between largest and smallest; of several such,
//     the last in the order of the search (smallest factor ascending,
//     then the next smallest, ...), which is the one MPICH keeps.
//
// Checked against MPICH 4.0.2 for every n up to 300 and 1 to 5
// dimensions (TestDimsCreateMPICH).
func balanced(n, m int) []int {
	chosen := make([]int, m)
	if m == 1 {
		chosen[0] = n
		return chosen
	}
	fs, primes := factorize(n)
	next := 0
	for j := len(fs) - 1; j > 0 && next < m-1; j-- {
		p := fs[j].p
		if fs[j].k != 1 || p*p <= n {
			break
		}
		chosen[next] = p
		next++
		fs = fs[:j]
		n /= p
		primes--
	}
	left := m - next
	switch {
	case primes <= left:
		i := next + primes
		for _, f := range fs {
			for range f.k {
				i--
				chosen[i] = f.p
			}
		}
		for i := next + primes; i < m; i++ {
			chosen[i] = 1
		}
		return chosen
	case left == 1:
		chosen[next] = n
		return chosen
	case len(fs) == 1:
		for i := next; i < m; i++ {
			chosen[i] = 1
		}
		i := next
		for range fs[0].k {
			if i >= m {
				i = next
			}
			chosen[i] *= fs[0].p
			i++
		}
		return chosen
	}
	even := true
	for _, f := range fs {
		even = even && f.k%left == 0
	}
	if even {
		v := 1
		for _, f := range fs {
			for range f.k / left {
				v *= f.p
			}
		}
		for i := next; i < m; i++ {
			chosen[i] = v
		}
		return chosen
	}
	copy(chosen[next:], flattest(n, left))
	return chosen
}

// flattest is step 3 of balanced: the factorization of n into m >= 2
// factors of at least 2, non-increasing, with the smallest difference
// between the first and the last; of equals, the last found when the
// last factor is chosen first, ascending, then the one before it, and so
// on. Branches that cannot beat the best so far are cut.
func flattest(n, m int) []int {
	var divs []int // of n, excluding 1 and n, ascending
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			divs = append(divs, d)
			if d*d != n {
				divs = append(divs, n/d)
			}
		}
	}
	slices.Sort(divs)
	try := make([]int, m)
	var best []int
	bestBal := int(^uint(0) >> 1)
	var search func(rest, idx, lo int)
	search = func(rest, idx, lo int) {
		if idx == 0 {
			if rest >= lo {
				try[0] = rest
				if bal := rest - try[m-1]; bal <= bestBal {
					bestBal = bal
					best = slices.Clone(try)
				}
			}
			return
		}
		for _, f := range divs {
			if f < lo || rest%f != 0 {
				continue
			}
			if powAbove(f, idx+1, rest) {
				break // the idx factors still to come are at least f each
			}
			min := f
			if idx < m-1 {
				min = try[m-1]
			}
			if f-min > bestBal {
				break // the largest factor is at least f: no better than the best
			}
			try[idx] = f
			search(rest/f, idx-1, f)
		}
	}
	search(n, m-1, 2)
	return best
}

// powAbove reports whether f^k > n.
func powAbove(f, k, n int) bool {
	v := 1
	for range k {
		if v > n/f {
			return true
		}
		v *= f
	}
	return v > n
}

// CartCreate returns a communicator of the first product-of-dims ranks of
// c with a Cartesian grid topology (MPI_Cart_create): dims[i] processes
// along dimension i, which wraps around if periods[i]. Rank r of the new
// communicator has the coordinates CartCoords(r) (row-major). Ranks of c
// past the grid get nil. reorder is ignored: ranks keep their order (see
// the top of this file). A grid of no dimensions has one process, rank 0.
// It is collective over c, with the same arguments at every rank.
func (c *Comm) CartCreate(dims []int, periods []bool, reorder bool) (*Comm, error) {
	const op = "CartCreate"
	if c == nil {
		return nil, nilComm(op)
	}
	if len(periods) != len(dims) {
		return nil, newErr(ErrArg, op, -1, "%d periods for %d dimensions", len(periods), len(dims))
	}
	n, err := gridSize(dims, c.size, op)
	if err != nil {
		return nil, err
	}
	if err := c.liveCheck(op); err != nil {
		return nil, err
	}
	if c.rank >= n {
		return nil, nil
	}
	nc, err := c.create(firstN(n), tagCreate, op)
	if err != nil {
		return nil, err
	}
	nc.topo = newCart(slices.Clone(dims), slices.Clone(periods), nc.rank)
	return nc, nil
}

// gridSize is the number of processes of a grid of dims, which must fit
// in size.
func gridSize(dims []int, size int, op string) (int, error) {
	n := 1
	for i, d := range dims {
		if d <= 0 {
			return 0, newErr(ErrDims, op, -1, "dimension %d has %d processes (must be positive)", i, d)
		}
	}
	for _, d := range dims {
		n *= d
		if n > size {
			return 0, newErr(ErrArg, op, -1, "a grid of %v needs more than the communicator's %d processes", dims, size)
		}
	}
	return n, nil
}

func newCart(dims []int, periods []bool, rank int) *topology {
	t := &topology{kind: Cart, dims: dims, periods: periods}
	t.coords = t.cartCoords(rank)
	return t
}

func (t *topology) cartCoords(rank int) []int {
	coords := make([]int, len(t.dims))
	for i := len(t.dims) - 1; i >= 0; i-- {
		coords[i] = rank % t.dims[i]
		rank /= t.dims[i]
	}
	return coords
}

// cartRank is the rank at coords, wrapped along periodic dimensions, or
// -1 if a coordinate is off a non-periodic one.
func (t *topology) cartRank(coords []int) int {
	r := 0
	for i, x := range coords {
		d := t.dims[i]
		if t.periods[i] {
			x = (x%d + d) % d
		} else if x < 0 || x >= d {
			return -1
		}
		r = r*d + x
	}
	return r
}

// CartCoords returns the coordinates of rank rank in c's grid
// (MPI_Cart_coords).
func (c *Comm) CartCoords(rank int) ([]int, error) {
	t, err := c.topoOf("CartCoords", Cart)
	if err != nil {
		return nil, err
	}
	if rank < 0 || rank >= c.size {
		return nil, newErr(ErrRank, "CartCoords", -1, "rank %d in a communicator of %d", rank, c.size)
	}
	return t.cartCoords(rank), nil
}

// CartRank returns the rank at coords in c's grid (MPI_Cart_rank).
// Coordinates along a periodic dimension wrap around; off a non-periodic
// one they are an error.
func (c *Comm) CartRank(coords []int) (int, error) {
	t, err := c.topoOf("CartRank", Cart)
	if err != nil {
		return -1, err
	}
	if len(coords) != len(t.dims) {
		return -1, newErr(ErrArg, "CartRank", -1, "%d coordinates in a grid of %d dimensions", len(coords), len(t.dims))
	}
	r := t.cartRank(coords)
	if r < 0 {
		return -1, newErr(ErrArg, "CartRank", -1, "coordinates %v are off the non-periodic grid %v", coords, t.dims)
	}
	return r, nil
}

// CartShift returns the ranks disp steps back (source) and disp steps
// forward (dest) of this rank along dimension direction of c's grid
// (MPI_Cart_shift): ProcNull past the edge of a non-periodic dimension.
func (c *Comm) CartShift(direction, disp int) (source, dest int, err error) {
	t, err := c.topoOf("CartShift", Cart)
	if err != nil {
		return ProcNull, ProcNull, err
	}
	if direction < 0 || direction >= len(t.dims) {
		return ProcNull, ProcNull, newErr(ErrArg, "CartShift", -1, "direction %d in a grid of %d dimensions", direction, len(t.dims))
	}
	source, dest = t.shift(direction, disp)
	return source, dest, nil
}

func (t *topology) shift(direction, disp int) (source, dest int) {
	at := func(step int) int {
		x := slices.Clone(t.coords)
		x[direction] += step
		if r := t.cartRank(x); r >= 0 {
			return r
		}
		return ProcNull
	}
	return at(-disp), at(disp)
}

// CartSub splits c's grid into subgrids of the dimensions for which
// remain is true (MPI_Cart_sub): the ranks that share their coordinates
// along the other dimensions form a communicator with a grid of the
// remaining ones. With no dimension remaining, each rank gets a grid of
// no dimensions of its own. It is collective over c.
func (c *Comm) CartSub(remain []bool) (*Comm, error) {
	const op = "CartSub"
	t, err := c.topoOf(op, Cart)
	if err != nil {
		return nil, err
	}
	if len(remain) != len(t.dims) {
		return nil, newErr(ErrArg, op, -1, "%d entries of remain for a grid of %d dimensions", len(remain), len(t.dims))
	}
	color, key := 0, 0
	var dims []int
	var periods []bool
	for i, keep := range remain {
		if keep {
			key = key*t.dims[i] + t.coords[i]
			dims = append(dims, t.dims[i])
			periods = append(periods, t.periods[i])
		} else {
			color = color*t.dims[i] + t.coords[i]
		}
	}
	nc, err := c.Split(color, key)
	if err != nil {
		return nil, relabel(err, op)
	}
	nc.topo = newCart(dims, periods, nc.rank)
	return nc, nil
}

// CartGet returns c's grid: the processes along each dimension, whether
// each is periodic, and this rank's coordinates (MPI_Cart_get).
func (c *Comm) CartGet() (dims []int, periods []bool, coords []int, err error) {
	t, err := c.topoOf("CartGet", Cart)
	if err != nil {
		return nil, nil, nil, err
	}
	return slices.Clone(t.dims), slices.Clone(t.periods), slices.Clone(t.coords), nil
}

// CartdimGet returns the number of dimensions of c's grid
// (MPI_Cartdim_get).
func (c *Comm) CartdimGet() (int, error) {
	t, err := c.topoOf("CartdimGet", Cart)
	if err != nil {
		return 0, err
	}
	return len(t.dims), nil
}

// ---- Graphs ----

// GraphCreate returns a communicator of the first len(index) ranks of c
// with a graph topology (MPI_Graph_create): node i's neighbours are
// edges[index[i-1]:index[i]] (index[-1] being 0). Self-loops and repeated
// edges are allowed. Ranks of c past the graph get nil. reorder is
// ignored. It is collective over c, with the same arguments at every
// rank.
func (c *Comm) GraphCreate(index, edges []int, reorder bool) (*Comm, error) {
	const op = "GraphCreate"
	if c == nil {
		return nil, nilComm(op)
	}
	n := len(index)
	if n > c.size {
		return nil, newErr(ErrArg, op, -1, "a graph of %d nodes in a communicator of %d", n, c.size)
	}
	prev := 0
	for i, x := range index {
		if x < prev {
			return nil, newErr(ErrArg, op, -1, "index[%d] = %d is below index[%d] = %d (index must not decrease)", i, x, i-1, prev)
		}
		prev = x
	}
	if prev != len(edges) {
		return nil, newErr(ErrArg, op, -1, "the last index is %d but there are %d edges", prev, len(edges))
	}
	for i, x := range edges {
		if x < 0 || x >= n {
			return nil, newErr(ErrRank, op, -1, "edges[%d] = %d is not a node of the graph of %d", i, x, n)
		}
	}
	if err := c.liveCheck(op); err != nil {
		return nil, err
	}
	if c.rank >= n {
		return nil, nil
	}
	nc, err := c.create(firstN(n), tagCreate, op)
	if err != nil {
		return nil, err
	}
	nc.topo = &topology{kind: Graph, index: slices.Clone(index), edges: slices.Clone(edges)}
	return nc, nil
}

// neighbors returns node r's neighbours in a graph topology.
func (t *topology) neighbors(r int) []int {
	lo := 0
	if r > 0 {
		lo = t.index[r-1]
	}
	return t.edges[lo:t.index[r]]
}

func (c *Comm) graphRank(op string, rank int) (*topology, error) {
	t, err := c.topoOf(op, Graph)
	if err != nil {
		return nil, err
	}
	if rank < 0 || rank >= len(t.index) {
		return nil, newErr(ErrRank, op, -1, "rank %d in a graph of %d nodes", rank, len(t.index))
	}
	return t, nil
}

// GraphNeighborsCount returns the number of neighbours of rank in c's
// graph (MPI_Graph_neighbors_count).
func (c *Comm) GraphNeighborsCount(rank int) (int, error) {
	t, err := c.graphRank("GraphNeighborsCount", rank)
	if err != nil {
		return 0, err
	}
	return len(t.neighbors(rank)), nil
}

// GraphNeighbors returns the neighbours of rank in c's graph, in the
// order given at creation (MPI_Graph_neighbors).
func (c *Comm) GraphNeighbors(rank int) ([]int, error) {
	t, err := c.graphRank("GraphNeighbors", rank)
	if err != nil {
		return nil, err
	}
	return slices.Clone(t.neighbors(rank)), nil
}

// GraphGet returns the index and edges c's graph was created with
// (MPI_Graph_get). Like Neighbors, it answers on a freed communicator
// until the operations started before the free have ended.
func (c *Comm) GraphGet() (index, edges []int, err error) {
	t, err := c.topoCheck("GraphGet", Graph, true)
	if err != nil {
		return nil, nil, err
	}
	return slices.Clone(t.index), slices.Clone(t.edges), nil
}

// GraphdimsGet returns the number of nodes and of edges of c's graph
// (MPI_Graphdims_get).
func (c *Comm) GraphdimsGet() (nnodes, nedges int, err error) {
	t, err := c.topoOf("GraphdimsGet", Graph)
	if err != nil {
		return 0, 0, err
	}
	return len(t.index), len(t.edges), nil
}

// ---- Distributed graphs ----

// DistGraphCreateAdjacent returns a communicator of c's ranks with a
// distributed graph topology in which this rank receives from sources
// and sends to destinations, in those orders (MPI_Dist_graph_create_-
// adjacent). The weights go with the edges; nil weights (at every rank,
// for both lists) make the graph unweighted (MPI_UNWEIGHTED); a weighted
// graph's rank without edges of a kind passes WeightsEmpty. Ranks and
// edges may repeat. The lists must agree: r names d as a destination as
// often as d names r as a source; if not, or if any rank's arguments are
// invalid, every rank gets an error. reorder is ignored. It is
// collective over c.
func (c *Comm) DistGraphCreateAdjacent(sources, sourceWeights, destinations, destWeights []int, reorder bool) (*Comm, error) {
	const op = "DistGraphCreateAdjacent"
	if c == nil {
		return nil, nilComm(op)
	}
	bad := c.checkAdjacent(sources, sourceWeights, destinations, destWeights, op)
	weighted := sourceWeights != nil || destWeights != nil
	info := []int64{0, b2i(weighted), int64(len(sources)), int64(len(destinations))}
	if bad != nil {
		info[0] = 1
	}
	info = appendInts(appendInts(info, sources), destinations)
	_, err := c.topoExchange(info, op, adjacentTable)
	if bad != nil {
		return nil, bad // after taking part: the others then learn of it
	}
	if err != nil {
		return nil, err
	}
	t := &topology{kind: DistGraph, weighted: weighted,
		sources: slices.Clone(sources), dests: slices.Clone(destinations)}
	if weighted {
		t.sourceWeights = orEmpty(slices.Clone(sourceWeights))
		t.destWeights = orEmpty(slices.Clone(destWeights))
	}
	return c.createDist(t, op)
}

// checkAdjacent checks this rank's arguments of DistGraphCreateAdjacent.
func (c *Comm) checkAdjacent(sources, sourceWeights, destinations, destWeights []int, op string) error {
	if err := c.checkRankList(sources, "sources", op); err != nil {
		return err
	}
	if err := c.checkRankList(destinations, "destinations", op); err != nil {
		return err
	}
	// Weighted if either list has weights; then a nil list is allowed
	// only for no edges (WeightsEmpty's meaning).
	if weighted := sourceWeights != nil || destWeights != nil; weighted &&
		(sourceWeights == nil && len(sources) > 0 || destWeights == nil && len(destinations) > 0) {
		return newErr(ErrArg, op, -1, "one list of weights is nil (Unweighted) and the other is not")
	}
	if err := checkWeights(sourceWeights, len(sources), "sourceWeights", op); err != nil {
		return err
	}
	return checkWeights(destWeights, len(destinations), "destWeights", op)
}

func (c *Comm) checkRankList(rs []int, what, op string) error {
	for i, r := range rs {
		if r < 0 || r >= c.size {
			return newErr(ErrRank, op, -1, "%s[%d] = %d in a communicator of %d", what, i, r, c.size)
		}
	}
	return nil
}

func checkWeights(w []int, n int, what, op string) error {
	if w == nil {
		return nil
	}
	if len(w) != n {
		return newErr(ErrArg, op, -1, "%d %s for %d edges", len(w), what, n)
	}
	for i, x := range w {
		if x < 0 {
			return newErr(ErrArg, op, -1, "%s[%d] = %d (weights must not be negative)", what, i, x)
		}
	}
	return nil
}

// DistGraphCreate returns a communicator of c's ranks with a distributed
// graph topology made of the edges every rank names (MPI_Dist_graph_-
// create): this rank names, for each i, degrees[i] edges from
// sources[i], to the next degrees[i] entries of destinations, with the
// matching weights (nil: unweighted, at every rank; WeightsEmpty: a
// weighted graph's rank that names no edge; a rank that names no edge may
// pass nil in a weighted graph too). Any rank may name any edge;
// each edge goes to the neighbour lists of its two ends, ordered by the
// rank that named it, then as it named them. If any rank's arguments are
// invalid, every rank gets an error. reorder is ignored. It is
// collective over c.
func (c *Comm) DistGraphCreate(sources, degrees, destinations, weights []int, reorder bool) (*Comm, error) {
	const op = "DistGraphCreate"
	if c == nil {
		return nil, nilComm(op)
	}
	bad := c.checkDist(sources, degrees, destinations, weights, op)
	info := []int64{0, b2i(weights != nil), int64(len(sources))}
	if bad != nil {
		info[0] = 1
	} else {
		// The edges, expanded: source, destination, weight.
		k := 0
		for i, s := range sources {
			for range degrees[i] {
				w := 1
				if weights != nil {
					w = weights[k]
				}
				info = append(info, int64(s), int64(destinations[k]), int64(w))
				k++
			}
		}
		info[2] = int64(k)
		if weights == nil && k == 0 {
			// No edge, no weights: either kind of graph (a C program
			// passes a null array for its no weights).
			info[1] = weightingAny
		}
	}
	mine, err := c.topoExchange(info, op, distTable)
	if bad != nil {
		return nil, bad
	}
	if err != nil {
		return nil, err
	}
	// mine: weighted, indegree, outdegree, then (rank, weight) pairs of
	// the sources, then of the destinations.
	weighted := mine[0] != 0
	in, out := int(mine[1]), int(mine[2])
	t := &topology{kind: DistGraph, weighted: weighted, sources: make([]int, in), dests: make([]int, out)}
	if weighted {
		t.sourceWeights, t.destWeights = make([]int, in), make([]int, out)
	}
	p := mine[3:]
	for i := range in {
		t.sources[i] = int(p[2*i])
		if weighted {
			t.sourceWeights[i] = int(p[2*i+1])
		}
	}
	p = p[2*in:]
	for i := range out {
		t.dests[i] = int(p[2*i])
		if weighted {
			t.destWeights[i] = int(p[2*i+1])
		}
	}
	return c.createDist(t, op)
}

// checkDist checks this rank's arguments of DistGraphCreate.
func (c *Comm) checkDist(sources, degrees, destinations, weights []int, op string) error {
	if len(degrees) != len(sources) {
		return newErr(ErrArg, op, -1, "%d degrees for %d sources", len(degrees), len(sources))
	}
	total := 0
	for i, d := range degrees {
		if d < 0 {
			return newErr(ErrArg, op, -1, "degrees[%d] = %d (must not be negative)", i, d)
		}
		total += d
	}
	if total != len(destinations) {
		return newErr(ErrArg, op, -1, "the degrees add up to %d but there are %d destinations", total, len(destinations))
	}
	if err := c.checkRankList(sources, "sources", op); err != nil {
		return err
	}
	if err := c.checkRankList(destinations, "destinations", op); err != nil {
		return err
	}
	return checkWeights(weights, len(destinations), "weights", op)
}

// createDist makes the communicator of distributed graph t: a copy of c.
func (c *Comm) createDist(t *topology, op string) (*Comm, error) {
	nc, err := c.create(firstN(c.size), tagCreate, op)
	if err != nil {
		return nil, err
	}
	nc.topo = t
	return nc, nil
}

// Verdicts of member 0 in the first word of its answer (topoExchange).
const (
	verdictOK       = 0
	verdictFailed   = 1 // a member failed: ErrProcFailed
	verdictBadArgs  = 2 // member a's arguments are invalid
	verdictWeighted = 3 // member a is weighted, member b not
	verdictUneven   = 4 // member a names b as a destination c times; b names a as a source d times
)

// topoExchange sends info to member 0 of c, which calls table with every
// member's info and sends each member its answer (or an error verdict),
// and returns this rank's answer after its verdict word. table returns
// the answers, or a verdict and its arguments. info[0] is 1 if this rank's
// arguments are bad.
func (c *Comm) topoExchange(info []int64, op string, table func(infos [][]int64) ([][]int64, []int64)) ([]int64, error) {
	if err := c.liveCheck(op); err != nil {
		return nil, err
	}
	if c.rank != 0 {
		if err := Send(c.coll, info, 0, tagTopoInfo); err != nil {
			return nil, relabel(err, op)
		}
		ans, err := recvAny(c.coll, 0, tagTopoTable)
		if err != nil {
			return nil, relabel(err, op)
		}
		return verdict(ans, op)
	}
	infos := make([][]int64, c.size)
	infos[0] = info
	var ferr error
	for r := 1; r < c.size; r++ {
		m, err := recvAny(c.coll, r, tagTopoInfo)
		if err != nil && ferr == nil {
			ferr = err
		}
		infos[r] = m
	}
	var answers [][]int64
	var v []int64
	switch {
	case ferr != nil:
		v = []int64{verdictFailed}
	default:
		for r, in := range infos {
			if len(in) == 0 || in[0] != 0 {
				v = []int64{verdictBadArgs, int64(r)}
				break
			}
		}
		if v == nil {
			answers, v = table(infos)
		}
	}
	var reqs []*Request
	for r := 1; r < c.size; r++ {
		ans := v
		if v == nil {
			ans = append([]int64{verdictOK}, answers[r]...)
		}
		if rq, err := Isend(c.coll, ans, r, tagTopoTable); err == nil {
			reqs = append(reqs, rq)
		}
	}
	// As in splitTable: a member that died after sending its part does
	// not get an answer; the live ones go on, and create reports it.
	WaitAll(reqs, nil)
	if ferr != nil {
		return nil, relabel(ferr, op)
	}
	if v != nil {
		return verdict(v, op)
	}
	return answers[0], nil
}

// verdict turns member 0's answer into this rank's part, or the error.
func verdict(ans []int64, op string) ([]int64, error) {
	arg := func(i int) int64 {
		if i < len(ans) {
			return ans[i]
		}
		return -1
	}
	if len(ans) == 0 {
		return nil, newErr(ErrOther, op, -1, "empty answer from member 0")
	}
	switch ans[0] {
	case verdictOK:
		return ans[1:], nil
	case verdictFailed:
		return nil, newErr(ErrProcFailed, op, -1, "a member failed during the creation (member 0 says)")
	case verdictBadArgs:
		return nil, newErr(ErrArg, op, -1, "member %d passed invalid arguments", arg(1))
	case verdictWeighted:
		return nil, newErr(ErrArg, op, -1, "member %d passes weights and member %d does not (Unweighted must be used by all or none)", arg(1), arg(2))
	case verdictUneven:
		return nil, newErr(ErrArg, op, -1, "member %d names %d as a destination %d times, but %d names %d as a source %d times",
			arg(1), arg(2), arg(3), arg(2), arg(1), arg(4))
	}
	return nil, newErr(ErrOther, op, -1, "unknown answer %d from member 0", ans[0])
}

// adjacentTable checks the members' adjacent lists (info: bad, weighted,
// indegree, outdegree, sources, destinations) against each other.
func adjacentTable(infos [][]int64) ([][]int64, []int64) {
	if v := sameWeighting(infos); v != nil {
		return nil, v
	}
	type edge struct{ from, to int64 }
	count := map[edge]int64{} // destinations named minus sources named
	for r, in := range infos {
		nin := in[2]
		for _, s := range in[4 : 4+nin] {
			count[edge{s, int64(r)}]--
		}
		for _, d := range in[4+nin:] {
			count[edge{int64(r), d}]++
		}
	}
	for e, n := range count {
		if n != 0 {
			named := func(r, d int64, dest bool) int64 {
				k := int64(0)
				in := infos[r]
				nin := in[2]
				list := in[4 : 4+nin]
				if dest {
					list = in[4+nin:]
				}
				for _, x := range list {
					if x == d {
						k++
					}
				}
				return k
			}
			return nil, []int64{verdictUneven, e.from, e.to, named(e.from, e.to, true), named(e.to, e.from, false)}
		}
	}
	return make([][]int64, len(infos)), nil
}

// distTable gives each member its edges from the edges every member
// named (info: bad, weighted, count, then source, destination, weight
// triples): weighted, indegree, outdegree, then (rank, weight) of each
// source, then of each destination.
func distTable(infos [][]int64) ([][]int64, []int64) {
	if v := sameWeighting(infos); v != nil {
		return nil, v
	}
	n := len(infos)
	ins, outs := make([][]int64, n), make([][]int64, n)
	for _, in := range infos {
		e := in[3:]
		for i := range int(in[2]) {
			s, d, w := e[3*i], e[3*i+1], e[3*i+2]
			outs[s] = append(outs[s], d, w)
			ins[d] = append(ins[d], s, w)
		}
	}
	answers := make([][]int64, n)
	for r := range n {
		a := []int64{infos[0][1], int64(len(ins[r]) / 2), int64(len(outs[r]) / 2)}
		answers[r] = append(append(a, ins[r]...), outs[r]...)
	}
	return answers, nil
}

// weightingAny is the weighted flag (info[1]) of a member of
// DistGraphCreate that names no edge and gives no weights: it fits
// either kind of graph.
const weightingAny = 2

// sameWeighting checks that all members or none are weighted (but those
// of weightingAny), and sets every member's flag to the graph's.
func sameWeighting(infos [][]int64) []int64 {
	first, flag := -1, int64(0)
	for r, in := range infos {
		switch {
		case in[1] == weightingAny:
		case first < 0:
			first, flag = r, in[1]
		case in[1] != flag:
			a, b := int64(first), int64(r)
			if in[1] != 0 {
				a, b = b, a
			}
			return []int64{verdictWeighted, a, b}
		}
	}
	for _, in := range infos {
		in[1] = flag
	}
	return nil
}

// recvAny receives a message of any length from src on c.
func recvAny(c *Comm, src, tag int) ([]int64, error) {
	st, err := c.Probe(src, tag)
	if err != nil {
		return nil, err
	}
	buf := make([]int64, st.Bytes/8)
	_, err = Recv(c, buf, src, tag)
	return buf, err
}

func appendInts(dst []int64, xs []int) []int64 {
	for _, x := range xs {
		dst = append(dst, int64(x))
	}
	return dst
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func orEmpty(w []int) []int {
	if w == nil {
		return []int{}
	}
	return w
}

// DistGraphNeighborsCount returns the number of edges into and out of
// this rank in c's distributed graph, and whether it is weighted
// (MPI_Dist_graph_neighbors_count).
func (c *Comm) DistGraphNeighborsCount() (indegree, outdegree int, weighted bool, err error) {
	t, err := c.topoOf("DistGraphNeighborsCount", DistGraph)
	if err != nil {
		return 0, 0, false, err
	}
	return len(t.sources), len(t.dests), t.weighted, nil
}

// DistGraphNeighbors returns this rank's sources and destinations in c's
// distributed graph, in the order of the neighbourhood collectives, with
// their weights (nil if the graph is unweighted) (MPI_Dist_graph_-
// neighbors).
func (c *Comm) DistGraphNeighbors() (sources, sourceWeights, destinations, destWeights []int, err error) {
	t, err := c.topoOf("DistGraphNeighbors", DistGraph)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return slices.Clone(t.sources), slices.Clone(t.sourceWeights), slices.Clone(t.dests), slices.Clone(t.destWeights), nil
}

// Neighbors returns the ranks this rank receives from (sources) and
// sends to (destinations) in the neighbourhood collectives on c (package
// coll), in their order (MPI 4.0 section 8.6): for a Cartesian grid, for
// each dimension the rank one step back then the rank one step forward
// (ProcNull past a non-periodic edge), as both lists; for a graph, the
// node's neighbours, as both lists; for a distributed graph, its sources
// and its destinations. ErrTopology if c has no topology. It answers on
// a freed or revoked communicator until the operations started before
// the free have ended (they may need it).
func (c *Comm) Neighbors() (sources, destinations []int, err error) {
	t, err := c.topoCheck("Neighbors", 0, true)
	if err != nil {
		return nil, nil, err
	}
	switch t.kind {
	case Cart:
		nb := make([]int, 0, 2*len(t.dims))
		for d := range t.dims {
			back, fwd := t.shift(d, 1)
			nb = append(nb, back, fwd)
		}
		return nb, slices.Clone(nb), nil
	case Graph:
		nb := t.neighbors(c.rank)
		return slices.Clone(nb), slices.Clone(nb), nil
	}
	return slices.Clone(t.sources), slices.Clone(t.dests), nil
}
