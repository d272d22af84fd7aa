package coll_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
	"github.com/shmpi/shmpi/ranks/ranktest"
	"github.com/shmpi/shmpi/ulfm"
)

// topoModel is a topology computed sequentially in the test: every
// rank's sources and destinations in MPI's order, and how to make the
// communicator.
type topoModel struct {
	name     string
	n        int     // ranks of the topology (the others get nil)
	src, dst [][]int // per rank
	cart     bool    // a grid: what is sent forward comes from the back
	make     func(c *ranks.Comm) (*ranks.Comm, error)
}

// cartTopo is the model of a grid: per dimension the rank one step back,
// then one step forward.
func cartTopo(dims []int, periods []bool) topoModel {
	n := 1
	for _, d := range dims {
		n *= d
	}
	coords := func(r int) []int {
		c := make([]int, len(dims))
		for i := len(dims) - 1; i >= 0; i-- {
			c[i] = r % dims[i]
			r /= dims[i]
		}
		return c
	}
	rankAt := func(c []int) int {
		r := 0
		for i, d := range dims {
			x := c[i]
			if x < 0 || x >= d {
				if !periods[i] {
					return ranks.ProcNull
				}
				x = (x + d) % d
			}
			r = r*d + x
		}
		return r
	}
	m := topoModel{name: fmt.Sprintf("grid%v%v", dims, periods), n: n, cart: true,
		make: func(c *ranks.Comm) (*ranks.Comm, error) { return c.CartCreate(dims, periods, false) }}
	for r := range n {
		var nb []int
		for d := range dims {
			for _, step := range []int{-1, 1} {
				x := coords(r)
				x[d] += step
				nb = append(nb, rankAt(x))
			}
		}
		m.src = append(m.src, nb)
		m.dst = append(m.dst, nb)
	}
	return m
}

// graphTopo is the model of a graph (MPI_Graph_create).
func graphTopo(name string, index, edges []int) topoModel {
	m := topoModel{name: name, n: len(index),
		make: func(c *ranks.Comm) (*ranks.Comm, error) { return c.GraphCreate(index, edges, false) }}
	lo := 0
	for _, hi := range index {
		m.src = append(m.src, slices.Clone(edges[lo:hi]))
		m.dst = append(m.dst, slices.Clone(edges[lo:hi]))
		lo = hi
	}
	return m
}

// distTopo is the model of a distributed graph of size n made with
// DistGraphCreateAdjacent, from a list of edges (from[e] → to[e]); each
// rank's sources are in the order of the edges, its destinations in
// reverse order, with weights.
func distTopo(name string, n int, from, to []int) topoModel {
	m := topoModel{name: name, n: n, src: make([][]int, n), dst: make([][]int, n)}
	for e := range from {
		m.src[to[e]] = append(m.src[to[e]], from[e])
	}
	for e := len(from) - 1; e >= 0; e-- {
		m.dst[from[e]] = append(m.dst[from[e]], to[e])
	}
	m.make = func(c *ranks.Comm) (*ranks.Comm, error) {
		me := c.Rank()
		sw, dw := make([]int, len(m.src[me])), make([]int, len(m.dst[me]))
		for i := range sw {
			sw[i] = 10*m.src[me][i] + me
		}
		for i := range dw {
			dw[i] = 10*me + m.dst[me][i]
		}
		return c.DistGraphCreateAdjacent(m.src[me], sw, m.dst[me], dw, false)
	}
	return m
}

// ringEdges: r → r+1, r → r-1, r → r+2 twice, and r → r for even r.
func ringEdges(n int) (from, to []int) {
	for r := range n {
		for _, d := range []int{r + 1, r - 1 + n, r + 2, r + 2} {
			from, to = append(from, r), append(to, d%n)
		}
		if r%2 == 0 {
			from, to = append(from, r), append(to, r)
		}
	}
	return
}

// sendVal is element e of block j that rank r sends.
func sendVal(r, j, e int) int64 { return int64(r)<<40 | int64(j)<<20 | int64(e) + 1 }

const untouched = -7

// expect is what rank me receives in block i (elements of m): the block
// its source sent it, nil for a ProcNull source.
func (t topoModel) expect(me, i, m int, alltoall bool) []int64 {
	s := t.src[me][i]
	if s == ranks.ProcNull {
		return nil
	}
	j := 0
	switch {
	case !alltoall:
	case t.cart:
		j = i ^ 1 // the back neighbour's forward block, and the other way
	default:
		k := 0
		for _, x := range t.src[me][:i] {
			if x == s {
				k++
			}
		}
		for jj, d := range t.dst[s] {
			if d == me {
				if k == 0 {
					j = jj
					break
				}
				k--
			}
		}
	}
	out := make([]int64, m)
	for e := range out {
		out[e] = sendVal(s, j, e)
	}
	return out
}

// neighborRound runs NeighborAllgather and NeighborAlltoall of blocks of
// m elements on c in every form (blocking, nonblocking, persistent
// started twice) and checks each against the model.
func neighborRound(r *ranktest.R, c *ranks.Comm, t topoModel, m int) {
	me := c.Rank()
	in, out := len(t.src[me]), len(t.dst[me])
	what := fmt.Sprintf("%s, blocks of %d", t.name, m)
	mkSend := func(blocks int, salt int) []int64 {
		s := make([]int64, blocks*m)
		for j := range blocks {
			for e := range m {
				s[j*m+e] = sendVal(me, j, e) + int64(salt)
			}
		}
		return s
	}
	fresh := func() []int64 {
		v := make([]int64, in*m+3) // 3 more: past the blocks, untouched
		for i := range v {
			v[i] = untouched
		}
		return v
	}
	check := func(form string, recv []int64, alltoall bool, salt int) {
		for i := range in {
			got := recv[i*m : (i+1)*m]
			want := t.expect(me, i, m, alltoall)
			if want == nil {
				want = make([]int64, m)
				for e := range want {
					want[e] = untouched
				}
			} else {
				for e := range want {
					want[e] += int64(salt)
				}
			}
			if !slices.Equal(got, want) {
				r.Errorf("%s: %s: block %d (from %d): %v, want %v", what, form, i, t.src[me][i], head(got), head(want))
				return
			}
		}
		if tail := recv[in*m:]; !slices.Equal(tail, []int64{untouched, untouched, untouched}) {
			r.Errorf("%s: %s: past the blocks: %v", what, form, tail)
		}
	}
	// Blocking.
	ag, aa := fresh(), fresh()
	r.Check(coll.NeighborAllgather(c, mkSend(1, 0), ag[:in*m]), what+": NeighborAllgather")
	check("NeighborAllgather", ag, false, 0)
	r.Check(coll.NeighborAlltoall(c, mkSend(out, 0), aa[:in*m]), what+": NeighborAlltoall")
	check("NeighborAlltoall", aa, true, 0)
	// The v and w forms with the same blocks: counts of m, displacements
	// i*m (the receive side through a gapped buffer, compacted after).
	rc, rd, sc, sd := make([]int, in), make([]int, in), make([]int, out), make([]int, out)
	for i := range in {
		rc[i], rd[i] = m, i*(m+1)
	}
	for j := range out {
		sc[j], sd[j] = m, j*m
	}
	gapped := func() []int64 { return slices.Repeat([]int64{untouched}, in*(m+1)) }
	compact := func(g []int64) []int64 {
		v := fresh()
		for i := range in {
			copy(v[i*m:(i+1)*m], g[i*(m+1):i*(m+1)+m])
			if g[i*(m+1)+m] != untouched {
				r.Errorf("%s: v form wrote past block %d", what, i)
			}
		}
		return v
	}
	g := gapped()
	r.Check(coll.NeighborAllgatherv(c, mkSend(1, 0), g, rc, rd), what+": NeighborAllgatherv")
	check("NeighborAllgatherv", compact(g), false, 0)
	g = gapped()
	r.Check(coll.NeighborAlltoallv(c, mkSend(out, 0), sc, sd, g, rc, rd), what+": NeighborAlltoallv")
	check("NeighborAlltoallv", compact(g), true, 0)
	{
		sendAll := mkSend(out, 0)
		recvAll := fresh()
		sb, rb := make([][]byte, out), make([][]byte, in)
		for j := range out {
			sb[j] = i64bytes(sendAll[j*m : (j+1)*m])
		}
		for i := range in {
			rb[i] = i64bytes(recvAll[i*m : (i+1)*m])
		}
		q, err := coll.NeighborAlltoallwInit(c, sb, rb)
		r.Check(err, what+": NeighborAlltoallwInit")
		r.Check(q.Start(), "start")
		_, err = q.Wait()
		r.Check(err, what+": persistent NeighborAlltoallw")
		check("NeighborAlltoallw (persistent)", recvAll, true, 0)
		r.Check(q.Free(), "free")
	}
	// Nonblocking, both at once.
	ag, aa = fresh(), fresh()
	q1, err := coll.INeighborAllgather(c, mkSend(1, 0), ag[:in*m])
	r.Check(err, what+": INeighborAllgather")
	q2, err := coll.INeighborAlltoall(c, mkSend(out, 0), aa[:in*m])
	r.Check(err, what+": INeighborAlltoall")
	r.Check(ranks.WaitAll([]*ranks.Request{q1, q2}, nil), what+": wait")
	check("INeighborAllgather", ag, false, 0)
	check("INeighborAlltoall", aa, true, 0)
	// Persistent: started three times with new data; completed by Wait,
	// then by ranks.WaitAll, then by Test.
	sg, sa := mkSend(1, 0), mkSend(out, 0)
	ag, aa = fresh(), fresh()
	pg, err := coll.NeighborAllgatherInit(c, sg, ag[:in*m])
	r.Check(err, what+": NeighborAllgatherInit")
	pa, err := coll.NeighborAlltoallInit(c, sa, aa[:in*m])
	r.Check(err, what+": NeighborAlltoallInit")
	for round := range 3 {
		salt := 5 * round
		copy(sg, mkSend(1, salt))
		copy(sa, mkSend(out, salt))
		r.Check(pg.Start(), "start")
		r.Check(pa.Start(), "start")
		switch round {
		case 0:
			_, err := pg.Wait()
			r.Check(err, what+": persistent allgather")
			_, err = pa.Wait()
			r.Check(err, what+": persistent alltoall")
		case 1:
			r.Check(ranks.WaitAll([]*ranks.Request{pg, pa}, nil), what+": persistent, WaitAll")
		case 2:
			for _, p := range []*ranks.Request{pg, pa} {
				for {
					_, ok, err := p.Test()
					r.Check(err, what+": persistent, Test")
					if ok {
						break
					}
				}
			}
		}
		check(fmt.Sprintf("persistent allgather, start %d", round), ag, false, salt)
		check(fmt.Sprintf("persistent alltoall, start %d", round), aa, true, salt)
	}
	r.Check(pg.Free(), "free")
	r.Check(pa.Free(), "free")
	if err := pg.Start(); !errors.Is(err, ranks.ErrRequest) {
		r.Errorf("Start of a freed persistent request: %v", err)
	}
}

// blockSizes cover the mailboxes (up to 518 int64: 4144 bytes) and the
// messages above them, and empty blocks.
var blockSizes = []int{1, 3, 0, 518, 519, 1500}

// runTopo makes t's communicator from the world and runs every
// neighbourhood collective on it at each block size, with an Allreduce
// between sizes (other collectives interleave with the neighbourhood
// ones).
func runTopo(r *ranktest.R, t topoModel, sizes []int) {
	c, err := t.make(r.Comm)
	r.Check(err, t.name)
	if r.Rank >= t.n {
		if c != nil {
			r.Errorf("%s: rank %d past the topology got a communicator", t.name, r.Rank)
		}
		return
	}
	for _, m := range sizes {
		neighborRound(r, c, t, m)
		if _, err := coll.AllreduceValue(c, 1, coll.Sum[int]); err != nil {
			r.Fatalf("%s: allreduce: %v", t.name, err)
		}
	}
	r.Check(c.Free(), "free")
}

// cartGrids are 1-D, 2-D and 3-D grids of n ranks (DimsCreate's), all
// periodic, none, and mixed, and grids with dimensions of 1 and 2 (where
// both neighbours along a dimension are one rank, or this rank).
func cartGrids(n int) []topoModel {
	var out []topoModel
	for _, nd := range []int{1, 2, 3} {
		dims, _ := ranks.DimsCreate(n, make([]int, nd))
		for _, per := range [][]bool{{false, false, false}, {true, true, true}, {false, true, true}} {
			out = append(out, cartTopo(dims, per[:nd]))
		}
	}
	out = append(out, cartTopo([]int{1, n}, []bool{true, false}))
	if n%2 == 0 {
		out = append(out, cartTopo([]int{2, n / 2, 1}, []bool{true, true, true}))
	}
	if n > 2 {
		out = append(out, cartTopo([]int{n - 1}, []bool{true})) // one rank left out
	}
	return out
}

// The neighbourhood collectives on grids against the model, at 1 to 16
// ranks, with ranks that sleep and ranks that spin.
func TestNeighborCart(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6, 8, 9, 16} {
		for _, spinning := range []bool{false, true} {
			if spinning && n > 4 {
				continue
			}
			name, cores := fmt.Sprint(n), 0
			if spinning {
				name, cores = name+"-spinning", n
			}
			t.Run(name, func(t *testing.T) {
				ranktest.RunOpts(t, ranktest.Options{N: n, Cores: cores, Quiet: true}, func(r *ranktest.R) {
					sizes := blockSizes
					if n > 8 {
						sizes = []int{3, 600}
					}
					for _, g := range cartGrids(n) {
						runTopo(r, g, sizes)
					}
				})
			})
		}
	}
}

// Graphs (MPI_Graph_create): MPI's 4-node example, and a symmetric graph
// with repeated edges and self-loops; an asymmetric graph is refused by
// every member alike.
func TestNeighborGraph(t *testing.T) {
	for _, n := range []int{4, 5, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: n, Quiet: true}, func(r *ranktest.R) {
				runTopo(r, graphTopo("MPI's example", []int{2, 3, 4, 6}, []int{1, 3, 0, 3, 0, 2}), blockSizes)
				// Node i: i+1 twice, i-1 twice, itself (every node).
				var index, edges []int
				for i := range n {
					edges = append(edges, (i+1)%n, (i+n-1)%n, i, (i+1)%n, (i+n-1)%n)
					index = append(index, len(edges))
				}
				runTopo(r, graphTopo("ring with repeats", index, edges), []int{2, 600})
				asym, err := r.Comm.GraphCreate([]int{1, 1, 1, 1}, []int{1}, false)
				r.Check(err, "asymmetric graph")
				if asym != nil {
					err := coll.NeighborAllgather(asym, []int32{1}, make([]int32, 2))
					if !errors.Is(err, ranks.ErrTopology) {
						r.Errorf("neighbourhood collective on an asymmetric graph: %v, want ErrTopology", err)
					}
					r.Check(coll.Barrier(asym), "barrier after")
					asym.Free()
				}
			})
		})
	}
}

// Distributed graphs with repeated edges and self-loops, at 1 to 16
// ranks.
func TestNeighborDistGraph(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 9, 16} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: n, Quiet: true}, func(r *ranktest.R) {
				from, to := ringEdges(n)
				sizes := blockSizes
				if n > 8 {
					sizes = []int{2, 600}
				}
				runTopo(r, distTopo("dist ring", n, from, to), sizes)
				// A star: everyone sends to rank 0, which sends to no one;
				// rank 0 has no destinations, the others no sources.
				var sf, st []int
				for q := 1; q < n; q++ {
					sf, st = append(sf, q), append(st, 0)
				}
				runTopo(r, distTopo("star", n, sf, st), []int{5})
			})
		})
	}
}

// 64 ranks on 2 cores: a 3-D periodic grid and a 2-D one, a few calls.
func TestNeighbor64(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 64, Quiet: true}, func(r *ranktest.R) {
		runTopo(r, cartTopo([]int{4, 4, 4}, []bool{true, true, true}), []int{2})
		runTopo(r, cartTopo([]int{8, 8}, []bool{false, true}), []int{600})
	})
}

// Bad input: no topology, a receive buffer too short at one rank (its
// error; its destinations get ErrCount for its empty blocks; nobody
// hangs), a send buffer that is not whole blocks, and the communicator
// still works afterwards.
func TestNeighborBadInput(t *testing.T) {
	for _, spinning := range []bool{false, true} {
		name, cores := "sleeping", 0
		if spinning {
			name, cores = "spinning", 4
		}
		t.Run(name, func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 4, Cores: cores, Quiet: true}, func(r *ranktest.R) {
				if err := coll.NeighborAllgather(r.Comm, []int{1}, make([]int, 4)); !errors.Is(err, ranks.ErrTopology) {
					r.Errorf("no topology: %v", err)
				}
				if _, err := coll.INeighborAlltoall(r.Comm, []int{1}, make([]int, 4)); err != nil {
					r.Errorf("no topology, nonblocking: the error at completion, not %v", err)
				}
				if _, err := coll.NeighborAllgatherInit(r.Comm, []int{1}, make([]int, 4)); !errors.Is(err, ranks.ErrTopology) {
					r.Errorf("no topology, persistent: %v", err)
				}
				c, err := r.Comm.CartCreate([]int{4}, []bool{true}, false)
				r.Check(err, "ring")
				me := r.Rank
				for _, m := range []int{2, 700} { // mailboxes, messages
					recv := make([]int64, 2*m)
					if me == 1 {
						recv = recv[:m] // too short
					}
					err := coll.NeighborAllgather(c, make([]int64, m), recv)
					switch me {
					case 1:
						if !errors.Is(err, ranks.ErrBuffer) {
							r.Errorf("blocks of %d: short buffer: %v, want ErrBuffer", m, err)
						}
					case 0, 2: // rank 1's neighbours: its blocks were empty
						if !errors.Is(err, ranks.ErrCount) {
							r.Errorf("blocks of %d: neighbour of the bad rank: %v, want ErrCount", m, err)
						}
					default:
						r.Check(err, "an unaffected rank")
					}
					send := make([]int64, 2*m)
					if me == 3 {
						send = send[:2*m-1]
					}
					err = coll.NeighborAlltoall(c, send, make([]int64, 2*m))
					switch me {
					case 3:
						if !errors.Is(err, ranks.ErrBuffer) {
							r.Errorf("blocks of %d: odd send buffer: %v, want ErrBuffer", m, err)
						}
					case 0, 2:
						if !errors.Is(err, ranks.ErrCount) {
							r.Errorf("blocks of %d: neighbour of the bad rank: %v, want ErrCount", m, err)
						}
					default:
						r.Check(err, "an unaffected rank")
					}
				}
				// Still in step.
				recv := make([]int32, 2)
				r.Check(coll.NeighborAllgather(c, []int32{int32(me)}, recv), "after the bad calls")
				if recv[0] != int32((me+3)%4) || recv[1] != int32((me+1)%4) {
					r.Errorf("after the bad calls: %v", recv)
				}
				r.Check(c.Free(), "free")
				if err := coll.NeighborAllgather(c, []int32{1}, recv); !errors.Is(err, ranks.ErrComm) {
					r.Errorf("freed communicator: %v", err)
				}
			})
		})
	}
}

// A neighbour killed with SIGKILL: rank 2 of a 1-D non-periodic grid of
// 5 dies, either between two neighbourhood collectives that every rank
// entered after the same barrier ("between"), or at its 40th of a loop
// of them, while the others are wherever the loop has taken them
// ("loop"). Its neighbours (1 and 3) must get ErrProcFailed; the others
// ErrProcFailed or success (in "loop" they cannot finish either, their
// neighbours stop); none hangs. Then every survivor shrinks and goes on.
func TestNeighborKilled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m       int
		spin    bool
		persist bool
	}{
		{"mailbox", 2, false, false},
		{"mailbox-spinning", 2, true, false},
		{"messages", 800, false, false},
		{"messages-spinning", 800, true, false},
		{"persistent", 2, false, true},
	} {
		for _, when := range []string{"between", "loop"} {
			t.Run(tc.name+"/"+when, func(t *testing.T) {
				cores := 0
				if tc.spin {
					cores = 5
				}
				o := ranktest.Options{N: 5, Cores: cores, Quiet: true, Kill: &ranktest.KillAt{Rank: 2, Point: when}}
				ranktest.RunOpts(t, o, func(r *ranktest.R) {
					c, err := r.Comm.CartCreate([]int{5}, []bool{false}, false)
					r.Check(err, "grid")
					send, recv := make([]int64, 2*tc.m), make([]int64, 2*tc.m)
					var p *ranks.Request
					if tc.persist {
						p, err = coll.NeighborAlltoallInit(c, send, recv)
						r.Check(err, "init")
					}
					call := func() error {
						if p != nil {
							if err := p.Start(); err != nil {
								return err
							}
							_, err := p.Wait()
							return err
						}
						return coll.NeighborAlltoall(c, send, recv)
					}
					r.Check(call(), "first call")
					r.Check(coll.Barrier(c), "barrier")
					r.Point("between")
					var err1 error
					calls := 3
					if when == "loop" {
						calls = 200
					}
					for i := range calls {
						if i == 40 {
							r.Point("loop")
						}
						if err1 = call(); err1 != nil {
							break
						}
					}
					neighbour := r.Rank == 1 || r.Rank == 3
					switch {
					case (neighbour || when == "loop") && !errors.Is(err1, ranks.ErrProcFailed):
						r.Errorf("rank %d: %v, want ErrProcFailed", r.Rank, err1)
					case err1 != nil && !errors.Is(err1, ranks.ErrProcFailed):
						r.Errorf("another rank: %v, want nil or ErrProcFailed", err1)
					}
					s, err := ulfm.Shrink(c)
					r.Check(err, "shrink")
					v, err := coll.AllreduceValue(s, 1, coll.Sum[int])
					if err != nil || v != 4 {
						r.Errorf("allreduce after shrink: %d, %v", v, err)
					}
					s.Free()
				})
			})
		}
	}
}

// Revoke: rank 0 revokes a grid while the others are in a
// neighbourhood collective it never joins; its neighbours get ErrRevoked
// (the other rank may finish first), and every later call fails so.
func TestNeighborRevoke(t *testing.T) {
	for _, m := range []int{2, 800} {
		t.Run(fmt.Sprint(m), func(t *testing.T) {
			ranktest.RunOpts(t, ranktest.Options{N: 4, Quiet: true}, func(r *ranktest.R) {
				// Ranks 1 and 2 are rank 0's neighbours; rank 3 is not.
				c, err := r.Comm.CartCreate([]int{2, 2}, []bool{true, true}, false)
				r.Check(err, "grid")
				send, recv := make([]int64, 4*m), make([]int64, 4*m)
				r.Check(coll.NeighborAlltoall(c, send, recv), "first call")
				if r.Rank == 0 {
					// Revoke once the others are inside the next call
					// (they say so on the world first).
					for q := 1; q < 4; q++ {
						_, err := ranks.Recv(r.Comm, make([]byte, 1), q, 5)
						r.Check(err, "hear")
					}
					r.Check(ulfm.Revoke(c), "revoke")
				} else {
					rq, err := coll.INeighborAlltoall(c, send, recv)
					r.Check(err, "start")
					r.Check(ranks.Send(r.Comm, []byte{1}, 0, 5), "tell")
					_, err = rq.Wait()
					if !errors.Is(err, ranks.ErrRevoked) && (r.Rank != 3 || err != nil) {
						r.Errorf("waiting in the revoked collective: %v, want ErrRevoked", err)
					}
				}
				if err := coll.NeighborAllgather(c, send[:m], recv); !errors.Is(err, ranks.ErrRevoked) {
					r.Errorf("after the revoke: %v, want ErrRevoked", err)
				}
				c.Free()
			})
		})
	}
}

// A nonblocking neighbourhood collective started just before the
// communicator is freed still runs (its first, which sets up the
// mailboxes and reads the topology, and a later one), as MPI says of
// operations pending at a free. The grid is 2x2 and periodic, where both
// neighbours along a dimension are one rank, so the blocks pair right
// only if the topology's kind is still known.
func TestNeighborFreePending(t *testing.T) {
	ranktest.RunOpts(t, ranktest.Options{N: 4, Quiet: true}, func(r *ranktest.R) {
		model := cartTopo([]int{2, 2}, []bool{true, true})
		for _, warm := range []bool{false, true} {
			c, err := model.make(r.Comm)
			r.Check(err, "grid")
			if warm {
				r.Check(coll.NeighborAllgather(c, []int64{0}, make([]int64, 4)), "first call")
			}
			send, recv := make([]int64, 4), make([]int64, 4)
			for j := range send {
				send[j] = sendVal(r.Rank, j, 0)
			}
			q, err := coll.INeighborAlltoall(c, send, recv)
			r.Check(err, "start")
			r.Check(c.Free(), "free")
			_, err = q.Wait()
			r.Check(err, fmt.Sprintf("pending at the free (warm %v)", warm))
			for i := range 4 {
				if want := model.expect(r.Rank, i, 1, true); recv[i] != want[0] {
					r.Errorf("pending at the free (warm %v): block %d is %x, want %x", warm, i, recv[i], want[0])
				}
			}
		}
	})
}
