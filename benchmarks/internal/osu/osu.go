// Package osu holds what the OSU-style benchmark programs share: the
// message-size sweep, iteration counts, flags and the table format.
package osu

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/shmpi/shmpi/ranks"
)

// Version is the OSU suite whose table format the programs print.
const Version = "7.4"

// Options are the flags every program takes.
type Options struct {
	MinSize, MaxSize int
	Iters, Skip      int // small messages
	ItersLarge       int
	SkipLarge        int
	LargeSize        int // sizes above this use the large counts
	Window           int // bandwidth tests
}

// Parse reads -m min:max, -i iters, -x skip, -W window.
func Parse(iters, skip, itersLarge, skipLarge int) Options {
	return parse(Options{MinSize: 0, MaxSize: 4 << 20, Iters: iters, Skip: skip, ItersLarge: itersLarge, SkipLarge: skipLarge,
		LargeSize: 8192, Window: 64})
}

// parse reads the flags over the defaults in o (the flags not yet parsed
// may be added before calling it).
func parse(o Options) Options {
	m := flag.String("m", "", "message sizes min:max in bytes")
	flag.IntVar(&o.Iters, "i", o.Iters, "iterations for small messages")
	flag.IntVar(&o.Skip, "x", o.Skip, "warm-up iterations for small messages")
	flag.IntVar(&o.ItersLarge, "il", o.ItersLarge, "iterations for large messages")
	flag.IntVar(&o.Window, "W", o.Window, "window size (bandwidth tests)")
	flag.StringVar(&threadLevel, threadFlag, threadLevel, "thread level: single (as OSU's MPI_Init) or multiple")
	flag.IntVar(&digits, "digits", 2, "decimals printed (OSU prints 2)")
	flag.StringVar(&memKind, "mem", "heap", "message buffers: heap (make, as OSU's malloc) or alloc (ranks.AllocMem, as MPI_Alloc_mem)")
	flag.Parse()
	if memKind != "heap" && memKind != "alloc" {
		log.Fatalf("-mem takes heap or alloc, not %q", memKind)
	}
	if *m != "" {
		lo, hi, ok := strings.Cut(*m, ":")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if !ok || err1 != nil || err2 != nil || a < 0 || b < a {
			log.Fatalf("bad -m %q, want min:max", *m)
		}
		o.MinSize, o.MaxSize = a, b
	}
	return o
}

// Sizes is the sweep: 0, then powers of two from 1 to MaxSize.
func (o Options) Sizes() []int {
	var s []int
	if o.MinSize == 0 {
		s = append(s, 0)
	}
	for n := 1; n <= o.MaxSize; n *= 2 {
		if n >= o.MinSize {
			s = append(s, n)
		}
	}
	return s
}

// Counts returns the iterations and warm-up iterations for size n.
func (o Options) Counts(n int) (iters, skip int) {
	if n > o.LargeSize {
		return o.ItersLarge, o.SkipLarge
	}
	return o.Iters, o.Skip
}

// Header prints the OSU banner.
func Header(title, column string) {
	fmt.Printf("# OSU MPI %s Test v%s (shmpi)\n", title, Version)
	fmt.Printf("# Datatype: MPI_CHAR.\n")
	fmt.Printf("%-10s%18s\n", "# Size", column)
}

var digits = 2

// Row prints one table row.
func Row(size int, v float64) { fmt.Printf("%-10d%18.*f\n", size, digits, v) }

// threadLevel is the thread level's flag: single unless a benchmark sets
// another default before parsing.
var threadLevel = "single"

// threadFlag names the thread-level flag: -t, except in the nonblocking
// collective benchmarks, where -t is OSU's number of MPI_Test calls.
var threadFlag = "t"

// Init starts the rank and checks the world has at least min ranks.
func Init(min int) (*ranks.World, *ranks.Comm) {
	level := ranks.ThreadSingle
	switch threadLevel {
	case "single":
	case "multiple":
		level = ranks.ThreadMultiple
	default:
		log.Fatalf("-t takes single or multiple, not %q", threadLevel)
	}
	w, err := ranks.InitThread(level)
	if err != nil {
		log.Fatal(err)
	}
	// OSU_CPUPROFILE=prefix writes a CPU profile per rank (prefix.RANK).
	if pre := os.Getenv("OSU_CPUPROFILE"); pre != "" {
		f, err := os.Create(pre + "." + strconv.Itoa(w.Rank()))
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
	}
	if w.Size() < min {
		fmt.Fprintf(os.Stderr, "this benchmark needs at least %d ranks: shmrun -n %d %s\n", min, min, os.Args[0])
		w.Finalize()
		os.Exit(1)
	}
	return w, w.Comm()
}

var stopProfile = func() {}

// Finish stops profiling and finalizes.
func Finish(w *ranks.World) {
	stopProfile()
	Must(w.Finalize())
}

// Must stops the benchmark on an error.
func Must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

var memKind = "heap"

// Zeroed returns a message buffer of n zero bytes, from the Go heap or
// from ranks.AllocMem as -mem says.
func Zeroed(n int) []byte {
	if memKind == "heap" || n == 0 {
		return make([]byte, n)
	}
	b, err := ranks.AllocMem(n)
	Must(err)
	return b
}

// Buffer returns a message buffer of n bytes (see Zeroed) filled with a
// pattern.
func Buffer(n int, seed byte) []byte {
	b := Zeroed(n)
	for i := range b {
		b[i] = seed + byte(i)
	}
	return b
}

// Check fails the benchmark if b does not hold the pattern Buffer(len(b),
// seed) wrote, looking at the first and last byte (enough to catch a
// transfer that did not happen or landed at the wrong offset).
func Check(b []byte, seed byte, what string) {
	if n := len(b); n > 0 && (b[0] != seed || b[n-1] != seed+byte(n-1)) {
		log.Fatalf("%s: %d-byte message arrived wrong (first %d, last %d)", what, n, b[0], b[n-1])
	}
}

// BwCounts are OSU's bandwidth-test iteration counts.
func BwCounts(n int) (iters, skip int) {
	if n > 8192 {
		return 20, 2
	}
	return 100, 10
}

// Poison overwrites the first and last byte of b with values Check(b,
// seed) rejects. Called on a receive buffer before the last iteration of
// a size, it makes Check prove that the last message really arrived (the
// earlier ones, or an earlier size, wrote the same pattern).
func Poison(b []byte, seed byte) {
	if n := len(b); n > 0 {
		b[0] = ^seed
		b[n-1] = ^(seed + byte(n-1))
	}
}

// InitBandwidth is the common start of the bandwidth tests: OSU's counts
// (100 iterations + 10 warm-up up to 8 KiB, 20 + 2 above), sizes from 1
// byte, and the table header on rank 0. Ranks other than 0 and 1 take no
// part: it finalizes them and reports ok false.
func InitBandwidth(title string) (o Options, w *ranks.World, c *ranks.Comm, ok bool) {
	o = Parse(100, 10, 20, 2)
	if o.MinSize == 0 {
		o.MinSize = 1 // OSU's bandwidth tests start at 1 byte
	}
	w, c = Init(2)
	if c.Rank() > 1 {
		Finish(w)
		return o, w, c, false
	}
	if c.Rank() == 0 {
		Header(title, "Bandwidth (MB/s)")
	}
	return o, w, c, true
}
