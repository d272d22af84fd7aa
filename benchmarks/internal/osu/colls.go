package osu

// The collectives that the nonblocking benchmarks (osu_i*, nbc.go) and
// the persistent ones (osu_*_persistent, persistent.go) run: each with
// its buffers, its three forms (nonblocking, persistent, blocking) and a
// check of its result. Rooted ones use root 0, as OSU does by default.
// The reductions work on float32 with coll.Sum, as our osu_allreduce
// does (OSU 7.x defaults to MPI_CHAR; -T float is the same as ours):
// rank r contributes r+i%7 at element i, so every sum is exact. The
// others move bytes in Fill's pattern: the block from rank q to rank r
// is seeded A2ASeed(q, r) in the all-to-alls, q in the gathers and r in
// the scatters. benchmarks/ref/osu_nbc.c uses the same data.

import (
	"fmt"
	"log"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

// Coll is one collective as the nonblocking and persistent benchmarks
// run it.
type Coll struct {
	Name     string // the coll package's name: "Allreduce", "ReduceScatter"
	NBTitle  string // OSU's title of the nonblocking benchmark
	PTitle   string // OSU's title of the persistent benchmark
	Datatype string // "MPI_FLOAT" or "MPI_CHAR"; "" for the barrier (no size column)
	Elem     int    // bytes per element: smaller sizes are skipped
	PerRank  bool   // a buffer holds Size() blocks: -M cuts the largest size to fit

	// Setup allocates the buffers for sizes up to max bytes on c.
	Setup func(c *ranks.Comm, max int)
	// At returns the calls for a message of n bytes (n/Elem elements).
	At func(n int) Calls
}

// Calls are a collective's forms at one size, with the check of its
// result: Poison spoils what the next call must write, Verify fails the
// benchmark unless it was written right.
type Calls struct {
	Start  func() (*ranks.Request, error) // the nonblocking call
	Init   func() (*ranks.Request, error) // the persistent request
	Call   func() error                   // the blocking call
	Poison func()
	Verify func(what string)
}

// A2ASeed is the pattern of the block rank from sends to rank to in the
// all-to-alls (the same as osu_alltoall's).
func A2ASeed(from, to int) byte { return byte(7*from + 13*to + 1) }

// fillBlocks, poisonBlocks and checkBlocks do Fill, Poison and Check on
// each n-byte block q of b, with the seed seed(q).
func fillBlocks(b []byte, n int, seed func(q int) byte) {
	for q := range len(b) / n {
		Fill(b[q*n:(q+1)*n], seed(q))
	}
}

func poisonBlocks(b []byte, n int, seed func(q int) byte) {
	for q := range len(b) / n {
		Poison(b[q*n:(q+1)*n], seed(q))
	}
}

func checkBlocks(b []byte, n int, seed func(q int) byte, what string) {
	for q := range len(b) / n {
		Check(b[q*n:(q+1)*n], seed(q), fmt.Sprintf("%s, block %d", what, q))
	}
}

// rankFloats returns n float32s holding rank me's contribution: me+i%7
// at element i.
func rankFloats(me, n int) []float32 {
	f := Floats(n)
	for i := range f {
		f[i] = float32(me + i%7)
	}
	return f
}

// poisonFloats writes into r a value no sum of the contributions has.
func poisonFloats(r []float32) {
	for i := range r {
		r[i] = -1
	}
}

// checkSums fails unless r[i] is the sum over ranks q = 0..m-1 of
// q+(off+i)%7: elements off... of the sum of the first m ranks'
// contributions.
func checkSums(r []float32, m, off int, what string) {
	for i, v := range r {
		if want := float32(m*(m-1)/2 + m*((off+i)%7)); v != want {
			log.Fatalf("%s of %d floats: element %d is %v, want %v", what, len(r), i, v, want)
		}
	}
}

// rankSize returns c's rank and size.
func rankSize(c *ranks.Comm) (int, int) { return c.Rank(), c.Size() }

// equal returns np counts of k and their displacements, block after
// block.
func equal(np, k int) (counts, displs []int) {
	counts, displs = make([]int, np), make([]int, np)
	for q := range np {
		counts[q], displs[q] = k, q*k
	}
	return counts, displs
}

// Barrier is MPI_Barrier.
func Barrier() *Coll {
	var c *ranks.Comm
	return &Coll{Name: "Barrier", NBTitle: "Non-blocking Barrier Latency", PTitle: "Barrier Persistent Latency", Elem: 1,
		Setup: func(comm *ranks.Comm, _ int) { c = comm },
		At: func(int) Calls {
			return Calls{
				Start:  func() (*ranks.Request, error) { return coll.Ibarrier(c) },
				Init:   func() (*ranks.Request, error) { return coll.BarrierInit(c) },
				Call:   func() error { return coll.Barrier(c) },
				Poison: func() {},
				Verify: func(string) {},
			}
		},
	}
}

// Bcast is MPI_Bcast of n bytes from rank 0.
func Bcast() *Coll {
	var c *ranks.Comm
	var buf []byte
	return &Coll{Name: "Bcast", NBTitle: "Non-Blocking Broadcast Latency", PTitle: "Broadcast Persistent Latency",
		Datatype: "MPI_CHAR", Elem: 1,
		Setup: func(comm *ranks.Comm, max int) { c, buf = comm, Zeroed(max) },
		At: func(n int) Calls {
			b := buf[:n]
			if c.Rank() == 0 {
				Fill(b, 1)
			}
			return Calls{
				Start: func() (*ranks.Request, error) { return coll.Ibcast(c, b, 0) },
				Init:  func() (*ranks.Request, error) { return coll.BcastInit(c, b, 0) },
				Call:  func() error { return coll.Bcast(c, b, 0) },
				Poison: func() {
					if c.Rank() != 0 {
						Poison(b, 1)
					}
				},
				Verify: func(what string) { Check(b, 1, what) },
			}
		},
	}
}

// reduction makes the float32 reductions whose result at each rank is a
// slice of recv: Reduce, Allreduce, Scan, Exscan.
func reduction(name, nb, p string, start func(c *ranks.Comm, s, r []float32) (*ranks.Request, error),
	init func(c *ranks.Comm, s, r []float32) (*ranks.Request, error), call func(c *ranks.Comm, s, r []float32) error,
	verify func(c *ranks.Comm, r []float32, what string)) *Coll {
	var c *ranks.Comm
	var send, recv []float32
	return &Coll{Name: name, NBTitle: nb, PTitle: p, Datatype: "MPI_FLOAT", Elem: 4,
		Setup: func(comm *ranks.Comm, max int) {
			c = comm
			send, recv = rankFloats(c.Rank(), max/4), Floats(max/4)
		},
		At: func(n int) Calls {
			s, r := send[:n/4], recv[:n/4]
			return Calls{
				Start:  func() (*ranks.Request, error) { return start(c, s, r) },
				Init:   func() (*ranks.Request, error) { return init(c, s, r) },
				Call:   func() error { return call(c, s, r) },
				Poison: func() { poisonFloats(r) },
				Verify: func(what string) { verify(c, r, what) },
			}
		},
	}
}

// Reduce is MPI_Reduce with MPI_SUM on float32 to rank 0.
func Reduce() *Coll {
	sum := coll.Sum[float32]
	return reduction("Reduce", "Non-blocking Reduce Latency", "Reduce Persistent Latency",
		func(c *ranks.Comm, s, r []float32) (*ranks.Request, error) { return coll.Ireduce(c, s, r, sum, 0) },
		func(c *ranks.Comm, s, r []float32) (*ranks.Request, error) { return coll.ReduceInit(c, s, r, sum, 0) },
		func(c *ranks.Comm, s, r []float32) error { return coll.Reduce(c, s, r, sum, 0) },
		func(c *ranks.Comm, r []float32, what string) {
			if c.Rank() == 0 {
				checkSums(r, c.Size(), 0, what)
			}
		})
}

// Allreduce is MPI_Allreduce with MPI_SUM on float32.
func Allreduce() *Coll {
	sum := coll.Sum[float32]
	return reduction("Allreduce", "Non-blocking Allreduce Latency", "Allreduce Persistent Latency",
		func(c *ranks.Comm, s, r []float32) (*ranks.Request, error) { return coll.Iallreduce(c, s, r, sum) },
		func(c *ranks.Comm, s, r []float32) (*ranks.Request, error) { return coll.AllreduceInit(c, s, r, sum) },
		func(c *ranks.Comm, s, r []float32) error { return coll.Allreduce(c, s, r, sum) },
		func(c *ranks.Comm, r []float32, what string) { checkSums(r, c.Size(), 0, what) })
}

// Scan is MPI_Scan with MPI_SUM on float32 (OSU has no scan benchmark).
func Scan() *Coll {
	sum := coll.Sum[float32]
	return reduction("Scan", "Non-blocking Scan Latency", "Scan Persistent Latency",
		func(c *ranks.Comm, s, r []float32) (*ranks.Request, error) { return coll.Iscan(c, s, r, sum) },
		func(c *ranks.Comm, s, r []float32) (*ranks.Request, error) { return coll.ScanInit(c, s, r, sum) },
		func(c *ranks.Comm, s, r []float32) error { return coll.Scan(c, s, r, sum) },
		func(c *ranks.Comm, r []float32, what string) { checkSums(r, c.Rank()+1, 0, what) })
}

// Exscan is MPI_Exscan with MPI_SUM on float32 (OSU has no exscan
// benchmark). Rank 0's result is undefined and not checked.
func Exscan() *Coll {
	sum := coll.Sum[float32]
	return reduction("Exscan", "Non-blocking Exscan Latency", "Exscan Persistent Latency",
		func(c *ranks.Comm, s, r []float32) (*ranks.Request, error) { return coll.Iexscan(c, s, r, sum) },
		func(c *ranks.Comm, s, r []float32) (*ranks.Request, error) { return coll.ExscanInit(c, s, r, sum) },
		func(c *ranks.Comm, s, r []float32) error { return coll.Exscan(c, s, r, sum) },
		func(c *ranks.Comm, r []float32, what string) {
			if c.Rank() > 0 {
				checkSums(r, c.Rank(), 0, what)
			}
		})
}

// ReduceScatterCounts are OSU's counts for osu_ireduce_scatter: k
// elements shared out as evenly as they go, the first k%np ranks one
// more; one each to the first k ranks if k < np.
func ReduceScatterCounts(np, k int) []int {
	counts := make([]int, np)
	for q := range counts {
		switch {
		case k < np:
			if q < k {
				counts[q] = 1
			}
		default:
			counts[q] = k / np
			if q < k%np {
				counts[q]++
			}
		}
	}
	return counts
}

// ReduceScatter is MPI_Reduce_scatter with MPI_SUM on float32 of n bytes
// in all, shared out by ReduceScatterCounts.
func ReduceScatter() *Coll {
	var c *ranks.Comm
	var send, recv []float32
	sum := coll.Sum[float32]
	return &Coll{Name: "ReduceScatter", NBTitle: "Non-blocking Reduce_scatter Latency", PTitle: "Reduce_scatter Persistent Latency",
		Datatype: "MPI_FLOAT", Elem: 4,
		Setup: func(comm *ranks.Comm, max int) {
			c = comm
			send, recv = rankFloats(c.Rank(), max/4), Floats(max/4)
		},
		At: func(n int) Calls {
			me, np := rankSize(c)
			k := n / 4
			counts := ReduceScatterCounts(np, k)
			off := 0
			for q := range me {
				off += counts[q]
			}
			s, r := send[:k], recv[:counts[me]]
			return Calls{
				Start:  func() (*ranks.Request, error) { return coll.IreduceScatter(c, s, r, counts, sum) },
				Init:   func() (*ranks.Request, error) { return coll.ReduceScatterInit(c, s, r, counts, sum) },
				Call:   func() error { return coll.ReduceScatter(c, s, r, counts, sum) },
				Poison: func() { poisonFloats(r) },
				Verify: func(what string) { checkSums(r, np, off, what) },
			}
		},
	}
}

// ReduceScatterBlock is MPI_Reduce_scatter_block with MPI_SUM on
// float32: n bytes in all, each rank's block (n/4)/Size() elements, as
// OSU's osu_ireduce_scatter_block (none when that is 0).
func ReduceScatterBlock() *Coll {
	var c *ranks.Comm
	var send, recv []float32
	sum := coll.Sum[float32]
	return &Coll{Name: "ReduceScatterBlock", NBTitle: "Non-blocking Reduce_scatter_block Latency",
		PTitle: "Reduce_scatter_block Persistent Latency", Datatype: "MPI_FLOAT", Elem: 4,
		Setup: func(comm *ranks.Comm, max int) {
			c = comm
			send, recv = rankFloats(c.Rank(), max/4), Floats(max/4)
		},
		At: func(n int) Calls {
			me, np := rankSize(c)
			m := n / 4 / np
			s, r := send[:m*np], recv[:m]
			return Calls{
				Start:  func() (*ranks.Request, error) { return coll.IreduceScatterBlock(c, s, r, sum) },
				Init:   func() (*ranks.Request, error) { return coll.ReduceScatterBlockInit(c, s, r, sum) },
				Call:   func() error { return coll.ReduceScatterBlock(c, s, r, sum) },
				Poison: func() { poisonFloats(r) },
				Verify: func(what string) { checkSums(r, np, me*m, what) },
			}
		},
	}
}

// Gather is MPI_Gather of n bytes from each rank to rank 0.
func Gather() *Coll { return gather(false) }

// Gatherv is Gather with counts and displacements (MPI_Gatherv).
func Gatherv() *Coll { return gather(true) }

func gather(v bool) *Coll {
	var c *ranks.Comm
	var send, recv []byte
	k := &Coll{Name: "Gather", NBTitle: "Non-blocking Gather Latency", PTitle: "Gather Persistent Latency",
		Datatype: "MPI_CHAR", Elem: 1, PerRank: true,
		Setup: func(comm *ranks.Comm, max int) {
			c = comm
			send = Zeroed(max)
			if c.Rank() == 0 {
				recv = Zeroed(max * c.Size())
			}
		},
		At: func(n int) Calls {
			me, np := rankSize(c)
			s := send[:n]
			Fill(s, byte(me))
			var r []byte
			if me == 0 {
				r = recv[:n*np]
			}
			counts, displs := equal(np, n)
			self := func(q int) byte { return byte(q) }
			calls := Calls{
				Start:  func() (*ranks.Request, error) { return coll.Igather(c, s, r, 0) },
				Init:   func() (*ranks.Request, error) { return coll.GatherInit(c, s, r, 0) },
				Call:   func() error { return coll.Gather(c, s, r, 0) },
				Poison: func() { poisonBlocks(r, n, self) },
				Verify: func(what string) { checkBlocks(r, n, self, what) },
			}
			if v {
				calls.Start = func() (*ranks.Request, error) { return coll.Igatherv(c, s, r, counts, displs, 0) }
				calls.Init = func() (*ranks.Request, error) { return coll.GathervInit(c, s, r, counts, displs, 0) }
				calls.Call = func() error { return coll.Gatherv(c, s, r, counts, displs, 0) }
			}
			return calls
		},
	}
	if v {
		k.Name, k.NBTitle, k.PTitle = "Gatherv", "Non-blocking Gatherv Latency", "Gatherv Persistent Latency"
	}
	return k
}

// Scatter is MPI_Scatter of n bytes to each rank from rank 0.
func Scatter() *Coll { return scatter(false) }

// Scatterv is Scatter with counts and displacements (MPI_Scatterv).
func Scatterv() *Coll { return scatter(true) }

func scatter(v bool) *Coll {
	var c *ranks.Comm
	var send, recv []byte
	k := &Coll{Name: "Scatter", NBTitle: "Non-blocking Scatter Latency", PTitle: "Scatter Persistent Latency",
		Datatype: "MPI_CHAR", Elem: 1, PerRank: true,
		Setup: func(comm *ranks.Comm, max int) {
			c = comm
			if c.Rank() == 0 {
				send = Zeroed(max * c.Size())
			}
			recv = Zeroed(max)
		},
		At: func(n int) Calls {
			me, np := rankSize(c)
			var s []byte
			if me == 0 {
				s = send[:n*np]
				fillBlocks(s, n, func(q int) byte { return byte(q) })
			}
			r := recv[:n]
			counts, displs := equal(np, n)
			calls := Calls{
				Start:  func() (*ranks.Request, error) { return coll.Iscatter(c, s, r, 0) },
				Init:   func() (*ranks.Request, error) { return coll.ScatterInit(c, s, r, 0) },
				Call:   func() error { return coll.Scatter(c, s, r, 0) },
				Poison: func() { Poison(r, byte(me)) },
				Verify: func(what string) { Check(r, byte(me), what) },
			}
			if v {
				calls.Start = func() (*ranks.Request, error) { return coll.Iscatterv(c, s, counts, displs, r, 0) }
				calls.Init = func() (*ranks.Request, error) { return coll.ScattervInit(c, s, counts, displs, r, 0) }
				calls.Call = func() error { return coll.Scatterv(c, s, counts, displs, r, 0) }
			}
			return calls
		},
	}
	if v {
		k.Name, k.NBTitle, k.PTitle = "Scatterv", "Non-blocking Scatterv Latency", "Scatterv Persistent Latency"
	}
	return k
}

// Allgather is MPI_Allgather of n bytes from each rank.
func Allgather() *Coll { return allgather(false) }

// Allgatherv is Allgather with counts and displacements (MPI_Allgatherv).
func Allgatherv() *Coll { return allgather(true) }

func allgather(v bool) *Coll {
	var c *ranks.Comm
	var send, recv []byte
	k := &Coll{Name: "Allgather", NBTitle: "Non-blocking Allgather Latency", PTitle: "Allgather Persistent Latency",
		Datatype: "MPI_CHAR", Elem: 1, PerRank: true,
		Setup: func(comm *ranks.Comm, max int) {
			c = comm
			send, recv = Zeroed(max), Zeroed(max*c.Size())
		},
		At: func(n int) Calls {
			me, np := rankSize(c)
			s, r := send[:n], recv[:n*np]
			Fill(s, byte(me))
			counts, displs := equal(np, n)
			self := func(q int) byte { return byte(q) }
			calls := Calls{
				Start:  func() (*ranks.Request, error) { return coll.Iallgather(c, s, r) },
				Init:   func() (*ranks.Request, error) { return coll.AllgatherInit(c, s, r) },
				Call:   func() error { return coll.Allgather(c, s, r) },
				Poison: func() { poisonBlocks(r, n, self) },
				Verify: func(what string) { checkBlocks(r, n, self, what) },
			}
			if v {
				calls.Start = func() (*ranks.Request, error) { return coll.Iallgatherv(c, s, r, counts, displs) }
				calls.Init = func() (*ranks.Request, error) { return coll.AllgathervInit(c, s, r, counts, displs) }
				calls.Call = func() error { return coll.Allgatherv(c, s, r, counts, displs) }
			}
			return calls
		},
	}
	if v {
		k.Name, k.NBTitle, k.PTitle = "Allgatherv", "Non-blocking Allgatherv Latency", "Allgatherv Persistent Latency"
	}
	return k
}

// Alltoall is MPI_Alltoall with blocks of n bytes.
func Alltoall() *Coll { return alltoall("") }

// Alltoallv is Alltoall with counts and displacements (MPI_Alltoallv).
func Alltoallv() *Coll { return alltoall("v") }

// Alltoallw is Alltoall with a byte block per peer (MPI_Alltoallw).
func Alltoallw() *Coll { return alltoall("w") }

func alltoall(form string) *Coll {
	var c *ranks.Comm
	var send, recv []byte
	k := &Coll{Name: "Alltoall", NBTitle: "Non-blocking All-to-All Latency",
		PTitle: "All-to-All Personalized Exchange Persistent Latency", Datatype: "MPI_CHAR", Elem: 1, PerRank: true,
		Setup: func(comm *ranks.Comm, max int) {
			c = comm
			send, recv = Zeroed(max*c.Size()), Zeroed(max*c.Size())
		},
		At: func(n int) Calls {
			me, np := rankSize(c)
			s, r := send[:n*np], recv[:n*np]
			fillBlocks(s, n, func(q int) byte { return A2ASeed(me, q) })
			from := func(q int) byte { return A2ASeed(q, me) }
			calls := Calls{
				Poison: func() { poisonBlocks(r, n, from) },
				Verify: func(what string) { checkBlocks(r, n, from, what) },
			}
			switch form {
			case "":
				calls.Start = func() (*ranks.Request, error) { return coll.Ialltoall(c, s, r) }
				calls.Init = func() (*ranks.Request, error) { return coll.AlltoallInit(c, s, r) }
				calls.Call = func() error { return coll.Alltoall(c, s, r) }
			case "v":
				counts, displs := equal(np, n)
				calls.Start = func() (*ranks.Request, error) {
					return coll.Ialltoallv(c, s, counts, displs, r, counts, displs)
				}
				calls.Init = func() (*ranks.Request, error) {
					return coll.AlltoallvInit(c, s, counts, displs, r, counts, displs)
				}
				calls.Call = func() error { return coll.Alltoallv(c, s, counts, displs, r, counts, displs) }
			case "w":
				sb, rb := make([][]byte, np), make([][]byte, np)
				for q := range np {
					sb[q], rb[q] = s[q*n:(q+1)*n], r[q*n:(q+1)*n]
				}
				calls.Start = func() (*ranks.Request, error) { return coll.Ialltoallw(c, sb, rb) }
				calls.Init = func() (*ranks.Request, error) { return coll.AlltoallwInit(c, sb, rb) }
				calls.Call = func() error { return coll.Alltoallw(c, sb, rb) }
			}
			return calls
		},
	}
	switch form {
	case "v":
		k.Name, k.NBTitle = "Alltoallv", "Non-blocking All-to-Allv Personalized Exchange Latency"
		k.PTitle = "All-to-Allv Personalized Exchange Persistent Latency"
	case "w":
		k.Name, k.NBTitle = "Alltoallw", "Non-blocking All-to-Allw Personalized Exchange Latency"
		k.PTitle = "All-to-Allw Personalized Exchange Persistent Latency"
	}
	return k
}
