package osu

// What the collective benchmarks (osu_barrier, osu_bcast, osu_reduce,
// osu_allreduce, osu_allgather, osu_alltoall, osu_gather, osu_scatter)
// share. They follow OSU 7.x's blocking collective benchmarks: each call
// is timed on its own, an untimed Barrier follows it, and the latency
// printed is the average over the ranks of each rank's mean time per call.

import (
	"flag"
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

var (
	full     bool
	memLimit int
)

// ParseColl reads the flags of the collective benchmarks with OSU's
// collective defaults: sizes from 1 byte to 1 MiB, 1000 iterations after
// 100 warm-up up to 8 KiB, 100 after 10 above. Besides Parse's flags it
// takes -f (also print the minimum and maximum over the ranks and the
// iterations, as OSU's -f) and -M (OSU's memory limit: the largest size
// is cut so that one buffer of Size() blocks stays under it).
func ParseColl() Options {
	flag.BoolVar(&full, "f", false, "also print the minimum and maximum latency over the ranks, and the iterations")
	flag.IntVar(&memLimit, "M", 512<<20, "per-buffer memory limit in bytes (the largest size is cut to fit Size() blocks)")
	flag.IntVar(&skipLarge, "xl", -1, "warm-up iterations for large messages (default 10)")
	o := parse(Options{MinSize: 1, MaxSize: 1 << 20, Iters: 1000, Skip: 100, ItersLarge: 100, SkipLarge: 10,
		LargeSize: 8192, Window: 64})
	if skipLarge >= 0 {
		o.SkipLarge = skipLarge
	}
	return o
}

var skipLarge = -1

// LimitMem cuts MaxSize so that blocks*MaxSize bytes stay within -M, as
// OSU's check_mem_limit does for the benchmarks whose buffers hold one
// block per rank; rank 0 says so on stderr.
func (o *Options) LimitMem(blocks int, rank int) {
	if blocks > 0 && o.MaxSize*blocks > memLimit {
		o.MaxSize = memLimit / blocks
		if rank == 0 {
			fmt.Fprintf(os.Stderr, "Warning! Limiting max message size to: %d. Increase -M for higher message sizes.\n", o.MaxSize)
		}
	}
}

// CollHeader prints the banner of a collective benchmark on rank 0:
// the title, the datatype (MPI_CHAR, MPI_FLOAT) and the column heads.
func CollHeader(c *ranks.Comm, title, datatype string) {
	if c.Rank() != 0 {
		return
	}
	fmt.Printf("# OSU MPI %s Test v%s (shmpi)\n", title, Version)
	if datatype != "" {
		fmt.Printf("# Datatype: %s.\n", datatype)
		fmt.Printf("%-10s%18s", "# Size", "Avg Latency(us)")
	} else {
		fmt.Printf("# Avg Latency(us)")
	}
	if full {
		fmt.Printf("%18s%18s%12s", "Min Latency(us)", "Max Latency(us)", "Iterations")
	}
	fmt.Println()
}

// TimeColl runs call iters+skip times, each followed by an untimed
// Barrier (as OSU does), and returns the time spent in the last iters
// calls.
func TimeColl(c *ranks.Comm, iters, skip int, call func() error) time.Duration {
	var total time.Duration
	for i := range iters + skip {
		t := time.Now()
		err := call()
		d := time.Since(t)
		Must(err)
		Must(coll.Barrier(c))
		if i >= skip {
			total += d
		}
	}
	return total
}

// CollRow gathers every rank's mean time per call (total over iters) at
// rank 0, which prints the row: the size (none if size < 0, as for the
// barrier) and the average over the ranks, with the minimum, maximum and
// iterations under -f.
func CollRow(c *ranks.Comm, size int, total time.Duration, iters int) {
	lat := 0.0
	if iters > 0 {
		lat = float64(total.Nanoseconds()) / 1e3 / float64(iters)
	}
	var all []float64
	if c.Rank() == 0 {
		all = make([]float64, c.Size())
	}
	Must(coll.Gather(c, []float64{lat}, all, 0))
	if c.Rank() != 0 {
		return
	}
	sum, lo, hi := 0.0, all[0], all[0]
	for _, v := range all {
		sum += v
		lo, hi = min(lo, v), max(hi, v)
	}
	if size >= 0 {
		fmt.Printf("%-10d%18.*f", size, digits, sum/float64(len(all)))
	} else {
		fmt.Printf("%17.*f", digits, sum/float64(len(all)))
	}
	if full {
		fmt.Printf("%18.*f%18.*f%12d", digits, lo, digits, hi, iters)
	}
	fmt.Println()
}

// Fill writes into b the pattern Buffer(len(b), seed) would hold.
func Fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i)
	}
}

// Floats returns a zeroed buffer of n float32s, from the Go heap or from
// ranks.AllocMem as -mem says.
func Floats(n int) []float32 {
	if n == 0 {
		return nil
	}
	b := Zeroed(4 * n)
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// Named prints one line of a name and a value, in the table's columns.
func Named(name string, v float64) { fmt.Printf("%-10s%18.*f\n", name, digits, v) }
