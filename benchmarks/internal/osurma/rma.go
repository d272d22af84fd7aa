// Package osurma holds the OSU one-sided benchmarks (osu_put_latency,
// osu_get_latency, osu_put_bw, osu_get_bw, osu_acc_latency,
// osu_fop_latency, osu_cas_latency): rank 0 is the origin, rank 1 the
// target of a window allocated with win.Allocate, and -s chooses the
// synchronization as OSU's -s does: lock (lock/unlock around each
// operation or window of operations), flush (one lock, a flush per
// operation), fence, or pscw.
package osurma

import (
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/win"
)

// Kind is the operation a program measures.
type Kind int

const (
	PutLatency Kind = iota
	GetLatency
	PutBW
	GetBW
	AccLatency
	FopLatency
	CasLatency
)

var titles = [...]string{"One Sided MPI_Put latency", "One Sided MPI_Get latency", "One Sided MPI_Put Bandwidth",
	"One Sided MPI_Get Bandwidth", "One Sided MPI_Accumulate latency", "One Sided MPI_Fetch_and_op latency",
	"One Sided MPI_Compare_and_swap latency"}

// Run parses the flags and runs the benchmark of kind k.
func Run(k Kind) {
	syncMode := flag.String("s", "flush", "synchronization: lock, flush, fence or pscw")
	o := osu.Parse(10000, 1000, 1000, 100)
	switch *syncMode {
	case "lock", "flush", "fence", "pscw":
	default:
		log.Fatalf("-s takes lock, flush, fence or pscw, not %q", *syncMode)
	}
	w, c := osu.Init(2)
	defer osu.Finish(w)
	me := c.Rank()
	bw := k == PutBW || k == GetBW
	single := k == FopLatency || k == CasLatency
	maxSize := o.MaxSize
	if single {
		maxSize = 8
	}
	n := maxSize
	if bw {
		n = maxSize * o.Window
	}
	win1, err := win.Allocate(c, max(n, 8), 1)
	osu.Must(err)
	if me == 0 {
		col := "Avg Latency(us)"
		if bw {
			col = "Bandwidth (MB/s)"
		}
		fmt.Printf("# OSU MPI-3 %s Test v%s (shmpi)\n# Window creation: MPI_Win_allocate\n# Synchronization: %s\n",
			titles[k], osu.Version, *syncMode)
		fmt.Printf("%-10s%18s\n", "# Size", col)
	}
	buf := osu.Buffer(n, 1)
	sizes := o.Sizes()
	if single {
		sizes = []int{8}
	}
	for _, size := range sizes {
		if size == 0 || (k == AccLatency && size < 4) {
			continue
		}
		iters, skip := o.Counts(size)
		acc := viewInt32(buf[:size]) // Accumulate's MPI_INT elements
		per := 1
		if bw {
			per = o.Window
		}
		op := func(i int) error {
			b := buf[i*size : (i+1)*size]
			switch k {
			case PutLatency, PutBW:
				return win.Put(win1, b, 1, i*size)
			case GetLatency, GetBW:
				return win.Get(win1, b, 1, i*size)
			case AccLatency:
				return win.Accumulate(win1, acc, 1, 0, coll.Sum[int32])
			case FopLatency:
				_, err := win.FetchAndOp(win1, int64(1), 1, 0, coll.Sum[int64])
				return err
			default:
				_, err := win.CompareAndSwap(win1, int64(0), int64(1), 1, 0)
				return err
			}
		}
		osu.Must(win1.Fence(0))
		var elapsed time.Duration
		switch *syncMode {
		case "lock":
			if me == 0 {
				elapsed = timed(iters, skip, func() {
					osu.Must(win1.Lock(win.LockShared, 1))
					for i := range per {
						osu.Must(op(i))
					}
					osu.Must(win1.Unlock(1))
				})
			}
		case "flush":
			if me == 0 {
				osu.Must(win1.Lock(win.LockShared, 1))
				elapsed = timed(iters, skip, func() {
					for i := range per {
						osu.Must(op(i))
					}
					osu.Must(win1.Flush(1))
				})
				osu.Must(win1.Unlock(1))
			}
		case "fence":
			elapsed = timed(iters, skip, func() {
				if me == 0 {
					for i := range per {
						osu.Must(op(i))
					}
				}
				osu.Must(win1.Fence(0))
			})
		case "pscw":
			elapsed = timed(iters, skip, func() {
				if me == 0 {
					osu.Must(win1.Start([]int{1}))
					for i := range per {
						osu.Must(op(i))
					}
					osu.Must(win1.Complete())
				} else {
					osu.Must(win1.Post([]int{0}))
					osu.Must(win1.Wait())
				}
			})
		}
		osu.Must(win1.Fence(0))
		if me == 0 {
			if bw {
				mb := float64(size) * float64(per) * float64(iters) / 1e6
				osu.Row(size, mb/elapsed.Seconds())
			} else {
				osu.Row(size, float64(elapsed.Nanoseconds())/1e3/float64(iters))
			}
		}
	}
	osu.Must(coll.Barrier(c))
	osu.Must(win1.Free())
}

func timed(iters, skip int, f func()) time.Duration {
	var start time.Time
	for i := range iters + skip {
		if i == skip {
			start = time.Now()
		}
		f()
	}
	return time.Since(start)
}

func viewInt32(b []byte) []int32 {
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(b[4*i])
	}
	return out
}
