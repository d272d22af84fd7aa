package ranks_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
)

// DimsCreate gives MPICH's grids: every case of testdata/dims_create_mpich.txt,
// which MPICH 4.0.2 printed (nnodes up to 300, 1 to 5 free dimensions,
// and four dimensions with some fixed). SHMPI_DIMS_REF names another
// file of the same format (a longer run of MPICH).
func TestDimsCreateMPICH(t *testing.T) {
	fixed := [][]int{{2, 0, 0, 0}, {0, 3, 0, 0}, {0, 0, 2, 0}, {4, 0, 0, 0}, {0, 0, 0, 5}}
	path := "testdata/dims_create_mpich.txt"
	if p := os.Getenv("SHMPI_DIMS_REF"); p != "" {
		path = p
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	cases := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		head, tail, ok := strings.Cut(line, " : ")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		var want []int
		for _, w := range strings.Fields(tail) {
			x, _ := strconv.Atoi(w)
			want = append(want, x)
		}
		h := strings.Fields(head)
		n, _ := strconv.Atoi(h[1])
		var in []int
		if strings.HasPrefix(h[0], "F") {
			k, _ := strconv.Atoi(h[0][1:])
			in = slices.Clone(fixed[k])
		} else {
			n, _ = strconv.Atoi(h[0])
			nd, _ := strconv.Atoi(h[1])
			in = make([]int, nd)
		}
		got, err := ranks.DimsCreate(n, in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("DimsCreate(%d, %v) = %v, %v; MPICH gives %v", n, in, got, err, want)
		}
		cases++
	}
	if cases < 2000 {
		t.Fatalf("only %d cases read", cases)
	}
}

func TestDimsCreateErrors(t *testing.T) {
	for _, tc := range []struct {
		n     int
		dims  []int
		class error
	}{
		{12, []int{0, -1}, ranks.ErrDims},
		{12, []int{5, 0}, ranks.ErrDims},
		{12, []int{24, 0}, ranks.ErrDims},
		{0, []int{0, 0}, ranks.ErrArg},
		{-4, []int{0}, ranks.ErrArg},
	} {
		if _, err := ranks.DimsCreate(tc.n, tc.dims); !errors.Is(err, tc.class) {
			t.Errorf("DimsCreate(%d, %v): %v, want %v", tc.n, tc.dims, err, tc.class)
		}
	}
	in := []int{0, 2, 0}
	got, err := ranks.DimsCreate(12, in)
	if err != nil || !slices.Equal(got, []int{3, 2, 2}) || !slices.Equal(in, []int{0, 2, 0}) {
		t.Errorf("DimsCreate(12, [0 2 0]) = %v, %v (input now %v)", got, err, in)
	}
	if got, err := ranks.DimsCreate(8, []int{2, 2}); err != nil || !slices.Equal(got, []int{2, 2}) {
		t.Errorf("all fixed: %v, %v (MPICH accepts a product that divides)", got, err)
	}
	if got, err := ranks.DimsCreate(5, nil); err != nil || len(got) != 0 {
		t.Errorf("no dimensions: %v, %v", got, err)
	}
}

// cartModel is a sequential Cartesian grid: coordinates and shifts
// computed the obvious way, to check the communicator's answers.
type cartModel struct {
	dims    []int
	periods []bool
}

func (m cartModel) size() int {
	n := 1
	for _, d := range m.dims {
		n *= d
	}
	return n
}

func (m cartModel) coords(r int) []int {
	c := make([]int, len(m.dims))
	stride := m.size()
	for i, d := range m.dims {
		stride /= d
		c[i] = r / stride % d
	}
	return c
}

func (m cartModel) rank(c []int) int {
	r := 0
	for i, d := range m.dims {
		x := c[i]
		if x < 0 || x >= d {
			if !m.periods[i] {
				return ranks.ProcNull
			}
			x = ((x % d) + d) % d
		}
		r = r*d + x
	}
	return r
}

func (m cartModel) shift(r, dir, disp int) (int, int) {
	c := m.coords(r)
	at := func(k int) int {
		x := slices.Clone(c)
		x[dir] += k
		return m.rank(x)
	}
	return at(-disp), at(disp)
}

// cartCases are the grids TestCartesian builds at n ranks: 1-D, 2-D and
// 3-D, periodic and not, some smaller than the communicator.
func cartCases(n int) []cartModel {
	var out []cartModel
	for _, nd := range []int{1, 2, 3} {
		dims, _ := ranks.DimsCreate(n, make([]int, nd))
		for _, per := range [][]bool{{false, false, false}, {true, true, true}, {true, false, true}} {
			out = append(out, cartModel{dims, per[:nd]})
		}
	}
	if n > 2 {
		out = append(out, cartModel{[]int{n - 1}, []bool{true}}) // rank n-1 is left out
	}
	if n >= 4 {
		out = append(out, cartModel{[]int{2, n / 2}, []bool{false, true}})
	}
	return out
}

// Every Cartesian query against the model, on 1 to 16 ranks: coordinates,
// ranks (with wrapping), shifts by 1, 2 and -1 in every direction, the
// neighbour lists, CartGet, CartdimGet, Topo, Dup (which keeps the
// topology) and CartSub.
func TestCartesian(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6, 8, 12, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: n, Quiet: true}, func(r *ranktest.R) {
				for _, m := range cartCases(n) {
					checkCart(r, m)
				}
			})
		})
	}
}

func checkCart(r *ranktest.R, m cartModel) {
	what := fmt.Sprintf("grid %v periods %v", m.dims, m.periods)
	c, err := r.Comm.CartCreate(m.dims, m.periods, true)
	r.Check(err, what)
	if r.Rank >= m.size() {
		if c != nil {
			r.Errorf("%s: rank %d is past the grid but got a communicator", what, r.Rank)
		}
		return
	}
	if c == nil || c.Size() != m.size() || c.Rank() != r.Rank {
		r.Fatalf("%s: communicator %v", what, c)
	}
	defer c.Free()
	if k, err := c.Topo(); k != ranks.Cart || err != nil {
		r.Errorf("%s: Topo %v, %v", what, k, err)
	}
	if nd, err := c.CartdimGet(); nd != len(m.dims) || err != nil {
		r.Errorf("%s: CartdimGet %d, %v", what, nd, err)
	}
	dims, periods, coords, err := c.CartGet()
	if err != nil || !slices.Equal(dims, m.dims) || !slices.Equal(periods, m.periods) || !slices.Equal(coords, m.coords(r.Rank)) {
		r.Errorf("%s: CartGet %v %v %v, %v", what, dims, periods, coords, err)
	}
	for q := range m.size() {
		cq, err := c.CartCoords(q)
		if err != nil || !slices.Equal(cq, m.coords(q)) {
			r.Errorf("%s: CartCoords(%d) = %v, %v; want %v", what, q, cq, err, m.coords(q))
		}
		if back, err := c.CartRank(cq); back != q || err != nil {
			r.Errorf("%s: CartRank(%v) = %d, %v", what, cq, back, err)
		}
	}
	// Wrapped coordinates, or an error off a non-periodic dimension.
	off := slices.Clone(m.coords(r.Rank))
	off[0] += m.dims[0]
	got, err := c.CartRank(off)
	if want := m.rank(off); want == ranks.ProcNull {
		if !errors.Is(err, ranks.ErrArg) {
			r.Errorf("%s: CartRank(%v) off the grid: %d, %v", what, off, got, err)
		}
	} else if got != want || err != nil {
		r.Errorf("%s: CartRank(%v) = %d, %v; want %d", what, off, got, err, want)
	}
	var wantNb []int
	for dir := range m.dims {
		for _, disp := range []int{1, 2, -1, 0} {
			s, d, err := c.CartShift(dir, disp)
			ws, wd := m.shift(r.Rank, dir, disp)
			if err != nil || s != ws || d != wd {
				r.Errorf("%s: CartShift(%d, %d) = %d, %d, %v; want %d, %d", what, dir, disp, s, d, err, ws, wd)
			}
		}
		s, d := m.shift(r.Rank, dir, 1)
		wantNb = append(wantNb, s, d)
	}
	src, dst, err := c.Neighbors()
	if err != nil || !slices.Equal(src, wantNb) || !slices.Equal(dst, wantNb) {
		r.Errorf("%s: Neighbors %v %v, %v; want %v", what, src, dst, err, wantNb)
	}
	if _, _, err := c.CartShift(len(m.dims), 1); !errors.Is(err, ranks.ErrArg) {
		r.Errorf("%s: CartShift past the dimensions: %v", what, err)
	}
	if _, err := c.CartCoords(m.size()); !errors.Is(err, ranks.ErrRank) {
		r.Errorf("%s: CartCoords out of range: %v", what, err)
	}
	if _, err := c.GraphNeighbors(0); !errors.Is(err, ranks.ErrTopology) {
		r.Errorf("%s: GraphNeighbors on a grid: %v", what, err)
	}
	d, err := c.Dup()
	r.Check(err, what+": dup")
	if k, _ := d.Topo(); k != ranks.Cart {
		r.Errorf("%s: the duplicate's topology is %v", what, k)
	}
	if dd, _, cc, err := d.CartGet(); err != nil || !slices.Equal(dd, m.dims) || !slices.Equal(cc, m.coords(r.Rank)) {
		r.Errorf("%s: the duplicate's grid %v %v, %v", what, dd, cc, err)
	}
	r.Check(d.Free(), "free dup")
	checkCartSub(r, c, m, what)
}

// CartSub keeping each single dimension, and every dimension but the
// first: the members are the ranks that share the other coordinates, in
// the order of the kept ones.
func checkCartSub(r *ranktest.R, c *ranks.Comm, m cartModel, what string) {
	nd := len(m.dims)
	var remains [][]bool
	for k := range nd {
		keep := make([]bool, nd)
		keep[k] = true
		remains = append(remains, keep)
	}
	all := make([]bool, nd)
	for i := 1; i < nd; i++ {
		all[i] = true
	}
	remains = append(remains, all)
	me := m.coords(r.Rank)
	for _, keep := range remains {
		sub, err := c.CartSub(keep)
		r.Check(err, fmt.Sprintf("%s: CartSub(%v)", what, keep))
		var sd []int
		var sp []bool
		for i := range nd {
			if keep[i] {
				sd = append(sd, m.dims[i])
				sp = append(sp, m.periods[i])
			}
		}
		sm := cartModel{sd, sp}
		var mine []int // my coordinates along the kept dimensions
		for i := range nd {
			if keep[i] {
				mine = append(mine, me[i])
			}
		}
		if sub.Size() != sm.size() || (len(sd) > 0 && sm.rank(mine) != sub.Rank()) {
			r.Errorf("%s: CartSub(%v): rank %d of %d, want %d of %d", what, keep, sub.Rank(), sub.Size(), sm.rank(mine), sm.size())
		}
		dims, periods, coords, err := sub.CartGet()
		if err != nil || !slices.Equal(dims, sd) || !slices.Equal(periods, sp) || !slices.Equal(coords, mine) {
			r.Errorf("%s: CartSub(%v): grid %v %v %v, %v", what, keep, dims, periods, coords, err)
		}
		// The members are the world ranks that share my other coordinates.
		g, _ := sub.Group()
		for q, w := range g.WorldRanks() {
			cw := m.coords(w)
			for i := range nd {
				if !keep[i] && cw[i] != me[i] {
					r.Errorf("%s: CartSub(%v): member %d (world %d) at %v, not with %v", what, keep, q, w, cw, me)
				}
			}
		}
		r.Check(sub.Free(), "free sub")
	}
}

// Zero dimensions: rank 0 alone gets a grid; CartSub keeping nothing
// gives each rank a grid of its own.
func TestCartZeroDims(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 3, Quiet: true}, func(r *ranktest.R) {
		c, err := r.Comm.CartCreate(nil, nil, false)
		r.Check(err, "0-D grid")
		if (c != nil) != (r.Rank == 0) {
			r.Fatalf("0-D grid at rank %d: %v", r.Rank, c)
		}
		if c != nil {
			if nd, _ := c.CartdimGet(); nd != 0 || c.Size() != 1 {
				r.Errorf("0-D grid: %d dimensions, size %d", nd, c.Size())
			}
			c.Free()
		}
		g, err := r.Comm.CartCreate([]int{3}, []bool{false}, false)
		r.Check(err, "1-D grid")
		sub, err := g.CartSub([]bool{false})
		r.Check(err, "sub of nothing")
		if nd, _ := sub.CartdimGet(); nd != 0 || sub.Size() != 1 {
			r.Errorf("sub of nothing: %d dimensions, size %d", nd, sub.Size())
		}
		sub.Free()
		g.Free()
	})
}

// A graph (MPI's example: 4 nodes) and its queries, at 4 and 6 ranks
// (two ranks past the graph get nil); Dup keeps it.
func TestGraph(t *testing.T) {
	for _, n := range []int{4, 6} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: n, Quiet: true}, func(r *ranktest.R) {
				index := []int{2, 3, 4, 6}
				edges := []int{1, 3, 0, 3, 0, 2}
				nbrs := [][]int{{1, 3}, {0}, {3}, {0, 2}}
				g, err := r.Comm.GraphCreate(index, edges, false)
				r.Check(err, "GraphCreate")
				if r.Rank >= 4 {
					if g != nil {
						r.Errorf("rank %d past the graph got a communicator", r.Rank)
					}
					return
				}
				defer g.Free()
				if k, _ := g.Topo(); k != ranks.Graph {
					r.Errorf("Topo %v", k)
				}
				for q := range 4 {
					nb, err := g.GraphNeighbors(q)
					cnt, err2 := g.GraphNeighborsCount(q)
					if err != nil || err2 != nil || !slices.Equal(nb, nbrs[q]) || cnt != len(nbrs[q]) {
						r.Errorf("node %d: neighbours %v (%d), %v %v", q, nb, cnt, err, err2)
					}
				}
				gi, ge, err := g.GraphGet()
				if err != nil || !slices.Equal(gi, index) || !slices.Equal(ge, edges) {
					r.Errorf("GraphGet %v %v, %v", gi, ge, err)
				}
				if nn, ne, err := g.GraphdimsGet(); nn != 4 || ne != 6 || err != nil {
					r.Errorf("GraphdimsGet %d %d, %v", nn, ne, err)
				}
				src, dst, err := g.Neighbors()
				if err != nil || !slices.Equal(src, nbrs[r.Rank]) || !slices.Equal(dst, nbrs[r.Rank]) {
					r.Errorf("Neighbors %v %v, %v", src, dst, err)
				}
				if _, err := g.GraphNeighbors(4); !errors.Is(err, ranks.ErrRank) {
					r.Errorf("GraphNeighbors(4): %v", err)
				}
				if _, err := g.CartdimGet(); !errors.Is(err, ranks.ErrTopology) {
					r.Errorf("CartdimGet on a graph: %v", err)
				}
				d, err := g.Dup()
				r.Check(err, "dup")
				if nb, err := d.GraphNeighbors(3); err != nil || !slices.Equal(nb, nbrs[3]) {
					r.Errorf("dup: neighbours %v, %v", nb, err)
				}
				d.Free()
			})
		})
	}
}

// distEdges is the test graph of TestDistGraph at n ranks: rank r sends
// to r+1 and r+3 (mod n), to itself if r is even, and twice to r+1 if
// r%3 == 0; the weight of r→d is 10*r+d plus 1000 for the second of a
// repeated edge.
func distEdges(n int) (from, to, weight []int) {
	for r := range n {
		add := func(d, w int) { from, to, weight = append(from, r), append(to, d), append(weight, w) }
		add((r+1)%n, 10*r+(r+1)%n)
		add((r+3)%n, 10*r+(r+3)%n)
		if r%2 == 0 {
			add(r, 11*r)
		}
		if r%3 == 0 {
			add((r+1)%n, 1000+10*r+(r+1)%n)
		}
	}
	return
}

// Distributed graphs, weighted and not, made with DistGraphCreateAdjacent
// (each rank gives its own lists, the sources in a shuffled order) and
// with DistGraphCreate (each rank names the edges of another: rank r
// names those out of rank (r+1) mod n), at 1 to 9 ranks; the neighbour
// lists against the model.
func TestDistGraph(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 9} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: n, Quiet: true}, func(r *ranktest.R) {
				from, to, weight := distEdges(n)
				me := r.Rank
				// The model: this rank's out-edges in the order named,
				// in-edges in the order of the namers (by the rank that
				// named them, then their order).
				var src, sw, dst, dw []int
				for i := range from {
					if from[i] == me {
						dst, dw = append(dst, to[i]), append(dw, weight[i])
					}
				}
				for i := range from {
					if to[i] == me {
						src, sw = append(src, from[i]), append(sw, weight[i])
					}
				}
				// Adjacent: sources reversed, which is as valid an order.
				rsrc, rsw := slices.Clone(src), slices.Clone(sw)
				slices.Reverse(rsrc)
				slices.Reverse(rsw)
				for _, weighted := range []bool{false, true} {
					inW, outW := rsw, dw
					if !weighted {
						inW, outW = nil, nil
					}
					g, err := r.Comm.DistGraphCreateAdjacent(rsrc, inW, dst, outW, false)
					r.Check(err, "DistGraphCreateAdjacent")
					checkDist(r, g, rsrc, inW, dst, outW, weighted, "adjacent")
					g.Free()
				}
				// DistGraphCreate: rank r names the out-edges of (r+1)%n.
				who := (me + 1) % n
				var ns, deg, nd, nw []int
				for i := range from {
					if from[i] == who {
						if len(ns) == 0 {
							ns, deg = []int{who}, []int{0}
						}
						deg[0]++
						nd, nw = append(nd, to[i]), append(nw, weight[i])
					}
				}
				// In-edges are ordered by the naming rank: the edges out
				// of rank k are named by rank k-1.
				var msrc, msw []int
				for namer := range n {
					owner := (namer + 1) % n
					for i := range from {
						if from[i] == owner && to[i] == me {
							msrc, msw = append(msrc, owner), append(msw, weight[i])
						}
					}
				}
				for _, weighted := range []bool{false, true} {
					w, ws, wd := nw, msw, dw
					if !weighted {
						w, ws, wd = nil, nil, nil
					}
					g, err := r.Comm.DistGraphCreate(ns, deg, nd, w, false)
					r.Check(err, "DistGraphCreate")
					checkDist(r, g, msrc, ws, dst, wd, weighted, "create")
					g.Free()
				}
			})
		})
	}
}

func checkDist(r *ranktest.R, g *ranks.Comm, src, sw, dst, dw []int, weighted bool, what string) {
	if k, _ := g.Topo(); k != ranks.DistGraph || g.Size() != r.Size {
		r.Errorf("%s: Topo %v size %d", what, k, g.Size())
	}
	in, out, wt, err := g.DistGraphNeighborsCount()
	if err != nil || in != len(src) || out != len(dst) || wt != weighted {
		r.Errorf("%s: counts %d %d %v, %v; want %d %d %v", what, in, out, wt, err, len(src), len(dst), weighted)
	}
	s, swg, d, dwg, err := g.DistGraphNeighbors()
	if err != nil || !slices.Equal(s, src) || !slices.Equal(d, dst) || !slices.Equal(swg, sw) || !slices.Equal(dwg, dw) ||
		(weighted && (swg == nil || dwg == nil)) {
		r.Errorf("%s (weighted %v): neighbours %v %v -> %v %v, %v; want %v %v -> %v %v", what, weighted, s, swg, d, dwg, err, src, sw, dst, dw)
	}
	ns, nd, err := g.Neighbors()
	if err != nil || !slices.Equal(ns, src) || !slices.Equal(nd, dst) {
		r.Errorf("%s: Neighbors %v %v, %v", what, ns, nd, err)
	}
	dup, err := g.Dup()
	r.Check(err, "dup")
	if s2, _, d2, _, err := dup.DistGraphNeighbors(); err != nil || !slices.Equal(s2, src) || !slices.Equal(d2, dst) {
		r.Errorf("%s: dup's neighbours %v %v, %v", what, s2, d2, err)
	}
	dup.Free()
}

// Bad input: clear errors, at every rank where a rank's own arguments
// can differ (distributed graphs), and no communicator; the world still
// works afterwards.
func TestTopoBadInput(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Quiet: true}, func(r *ranktest.R) {
		c := r.Comm
		want := func(err error, class error, what string) {
			if !errors.Is(err, class) {
				r.Errorf("%s: %v, want %v", what, err, class)
			} else if r.Rank == 0 {
				r.Logf("%s: %v", what, err)
			}
		}
		_, err := c.CartCreate([]int{3, 2}, []bool{false, false}, false)
		want(err, ranks.ErrArg, "grid larger than the communicator")
		_, err = c.CartCreate([]int{2, -2}, []bool{false, false}, false)
		want(err, ranks.ErrDims, "negative dimension")
		_, err = c.CartCreate([]int{2, 0}, []bool{false, false}, false)
		want(err, ranks.ErrDims, "zero dimension")
		_, err = c.CartCreate([]int{2, 2}, []bool{false}, false)
		want(err, ranks.ErrArg, "periods of the wrong length")
		_, err = c.GraphCreate([]int{1, 2}, []int{1, 5}, false)
		want(err, ranks.ErrRank, "graph edge out of range")
		_, err = c.GraphCreate([]int{2, 1}, []int{1, 0}, false)
		want(err, ranks.ErrArg, "decreasing index")
		_, err = c.GraphCreate([]int{1, 3}, []int{1, 0}, false)
		want(err, ranks.ErrArg, "index past the edges")
		_, err = c.GraphCreate([]int{1, 1, 1, 1, 1}, []int{0}, false)
		want(err, ranks.ErrArg, "graph larger than the communicator")
		// Distributed graphs: one rank's bad argument fails every rank.
		me, n := r.Rank, r.Size
		next, prev := (me+1)%n, (me+n-1)%n
		dst := []int{next}
		if me == 2 {
			dst = []int{7}
		}
		_, err = c.DistGraphCreateAdjacent([]int{prev}, nil, dst, nil, false)
		if me == 2 {
			want(err, ranks.ErrRank, "adjacent destination out of range (its rank)")
		} else {
			want(err, ranks.ErrArg, "adjacent destination out of range (the others)")
		}
		_, err = c.DistGraphCreateAdjacent([]int{prev}, []int{1}, []int{next}, []int{-1}, false)
		want(err, ranks.ErrArg, "negative weight")
		_, err = c.DistGraphCreateAdjacent([]int{prev}, []int{1, 2}, []int{next}, []int{1}, false)
		want(err, ranks.ErrArg, "weights of the wrong length")
		// Inconsistent lists: rank 1 does not name rank 0 as a source.
		srcs := []int{prev}
		if me == 1 {
			srcs = nil
		}
		_, err = c.DistGraphCreateAdjacent(srcs, nil, []int{next}, nil, false)
		want(err, ranks.ErrArg, "a destination that does not name its source")
		// Weighted at some ranks only.
		var w []int
		if me == 3 {
			w = []int{1}
		}
		_, err = c.DistGraphCreateAdjacent([]int{prev}, w, []int{next}, w, false)
		want(err, ranks.ErrArg, "weighted at one rank only")
		_, err = c.DistGraphCreate([]int{me}, []int{2}, []int{next}, nil, false)
		want(err, ranks.ErrArg, "degrees that do not add up")
		bad := []int{me}
		if me == 0 {
			bad = []int{-3}
		}
		_, err = c.DistGraphCreate(bad, []int{1}, []int{next}, nil, false)
		if me == 0 {
			want(err, ranks.ErrRank, "source out of range (its rank)")
		} else {
			want(err, ranks.ErrArg, "source out of range (the others)")
		}
		// Members that name no edge and give no weights fit a weighted
		// graph and an unweighted one: a ring that rank 0 makes alone.
		for _, weighted := range []bool{true, false} {
			var srcs0, deg0, dst0, w0 []int
			if me == 0 {
				for k := range n {
					srcs0, deg0, dst0 = append(srcs0, k), append(deg0, 1), append(dst0, (k+1)%n)
					if weighted {
						w0 = append(w0, 10+k)
					}
				}
			}
			g, err := c.DistGraphCreate(srcs0, deg0, dst0, w0, false)
			if err != nil {
				r.Fatalf("a ring from rank 0 (weighted %v): %v", weighted, err)
			}
			in, out, wt, err := g.DistGraphNeighborsCount()
			_, sw, _, _, err2 := g.DistGraphNeighbors()
			if err != nil || err2 != nil || in != 1 || out != 1 || wt != weighted || weighted && (len(sw) != 1 || sw[0] != 10+prev) {
				r.Errorf("a ring from rank 0 (weighted %v): in %d, out %d, weighted %v, source weights %v, %v %v", weighted, in, out, wt, sw, err, err2)
			}
			g.Free()
		}
		// No topology.
		if k, err := c.Topo(); k != ranks.Undefined || err != nil {
			r.Errorf("world's Topo: %v, %v", k, err)
		}
		_, _, err = c.Neighbors()
		want(err, ranks.ErrTopology, "Neighbors without a topology")
		_, _, _, err = c.CartGet()
		want(err, ranks.ErrTopology, "CartGet without a topology")
		_, _, _, _, err = c.DistGraphNeighbors()
		want(err, ranks.ErrTopology, "DistGraphNeighbors without a topology")
		// The world is fine, and a good graph still works.
		g, err := c.DistGraphCreateAdjacent([]int{prev}, nil, []int{next}, nil, false)
		r.Check(err, "a good graph after the bad ones")
		g.Free()
		var nilComm *ranks.Comm
		_, err = nilComm.CartCreate([]int{1}, []bool{false}, false)
		want(err, ranks.ErrComm, "nil communicator")
	})
}

// A member killed with SIGKILL just before a topology's creation: the
// others get ErrProcFailed (or, for a grid whose leader lives, the
// communicator: creation judges only the members it waits for), never a
// hang. Member 0 gathers the distributed graphs, so both it and another
// member die in turn.
func TestTopoCreateKilled(t *testing.T) {
	for _, victim := range []int{0, 2} {
		for _, kind := range []string{"adjacent", "dist", "cart"} {
			t.Run(fmt.Sprintf("%s/%d", kind, victim), func(t *testing.T) {
				o := ranktest.Options{N: 4, Quiet: true, Kill: &ranktest.KillAt{Rank: victim, Point: "before"}}
				ranktest.RunOpts(t, o, func(r *ranktest.R) {
					me, n := r.Rank, r.Size
					r.Point("before")
					var c *ranks.Comm
					var err error
					switch kind {
					case "adjacent":
						c, err = r.Comm.DistGraphCreateAdjacent([]int{(me + n - 1) % n}, nil, []int{(me + 1) % n}, nil, false)
					case "dist":
						c, err = r.Comm.DistGraphCreate([]int{me}, []int{1}, []int{(me + 1) % n}, nil, false)
					case "cart":
						c, err = r.Comm.CartCreate([]int{4}, []bool{true}, false)
					}
					switch {
					case err == nil && kind != "cart":
						r.Errorf("%s without member %d: no error", kind, victim)
					case err != nil && !errors.Is(err, ranks.ErrProcFailed):
						r.Errorf("%s without member %d: %v, want ErrProcFailed", kind, victim, err)
					}
					if c != nil {
						c.Free()
					}
				})
			})
		}
	}
}
