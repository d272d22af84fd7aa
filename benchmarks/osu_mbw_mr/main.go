// Command osu_mbw_mr measures the multi-pair bandwidth and message rate
// as OSU's osu_mbw_mr does: ranks 0..N/2-1 each send a window of
// nonblocking messages to rank r+N/2, which answers each window with a
// 4-byte acknowledgement; the rate is every pair's messages over the
// slowest pair's time (the ranks meet in a barrier around each size).
//
//	shmrun -n 2 ./osu_mbw_mr [-W 64] [-m 1:4194304] [-trace K]
//
// -trace K (ours, not OSU's) has the first receiver also print, after
// each size, its rate over every K windows of the timed loop, beside the
// minor page faults and involuntary context switches its process had in
// them (getrusage): where a short run's time goes.
package main

import (
	"flag"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/shmpi/shmpi/benchmarks/internal/osu"
	"github.com/shmpi/shmpi/coll"
	"github.com/shmpi/shmpi/ranks"
)

const (
	tagData = 100
	tagAck  = 101
)

func main() {
	trace := flag.Int("trace", 0, "windows per segment of the first receiver's rate trace (0: none)")
	o := osu.Parse(100, 10, 20, 2)
	if o.MinSize == 0 {
		o.MinSize = 1
	}
	w, c := osu.Init(2)
	defer osu.Finish(w)
	me, size := c.Rank(), c.Size()
	pairs := size / 2
	if me == 0 {
		fmt.Printf("# OSU MPI Multiple Bandwidth / Message Rate Test v%s (shmpi)\n", osu.Version)
		fmt.Printf("# [ pairs: %d ] [ window size: %d ]\n", pairs, o.Window)
		fmt.Printf("%-10s%18s%18s\n", "# Size", "MB/s", "Messages/s")
	}
	sender := me < pairs
	peer := me + pairs
	if !sender {
		peer = me - pairs
	}
	active := me < 2*pairs
	buf := osu.Buffer(o.MaxSize, 3)
	ack := make([]byte, 4)
	reqs := make([]*ranks.Request, o.Window)
	for _, n := range o.Sizes() {
		iters, skip := o.Counts(n)
		b := buf[:n]
		osu.Must(coll.Barrier(c))
		var start time.Time
		tr := newTracer(*trace, o.Window, me == pairs)
		for i := 0; active && i < iters+skip; i++ {
			if i == skip {
				start = time.Now()
				tr.mark()
			} else if i > skip {
				tr.window(i - skip)
			}
			var err error
			if sender {
				for k := range reqs {
					reqs[k], err = ranks.Isend(c, b, peer, tagData)
					osu.Must(err)
				}
				osu.Must(ranks.WaitAll(reqs, nil))
				_, err = ranks.Recv(c, ack, peer, tagAck)
				osu.Must(err)
			} else {
				for k := range reqs {
					reqs[k], err = ranks.Irecv(c, b, peer, tagData)
					osu.Must(err)
				}
				osu.Must(ranks.WaitAll(reqs, nil))
				osu.Must(ranks.Send(c, ack, peer, tagAck))
			}
		}
		var el float64
		if active && sender {
			el = time.Since(start).Seconds()
		}
		slowest, err := coll.AllreduceValue(c, el, coll.Max[float64])
		osu.Must(err)
		if me == 0 {
			msgs := float64(pairs) * float64(iters) * float64(o.Window)
			fmt.Printf("%-10d%18.2f%18.2f\n", n, msgs*float64(n)/slowest/1e6, msgs/slowest)
		}
		tr.window(iters)
		// After rank 0's line: the barrier orders the two outputs.
		osu.Must(coll.Barrier(c))
		tr.print(n)
	}
}

// tracer records, every k windows, the time and the process's minor
// faults and involuntary context switches (on at one rank only).
type tracer struct {
	k, per int // windows a segment, messages a window
	on     bool
	t      time.Time
	ru     syscall.Rusage
	segs   []string
}

func newTracer(k, window int, on bool) *tracer {
	return &tracer{k: k, per: window, on: on && k > 0}
}

func (tr *tracer) mark() {
	if tr.on {
		tr.t = time.Now()
		syscall.Getrusage(syscall.RUSAGE_SELF, &tr.ru)
	}
}

// window notes that done windows of the timed loop are complete.
func (tr *tracer) window(done int) {
	if !tr.on || done%tr.k != 0 {
		return
	}
	now := time.Now()
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	rate := float64(tr.k*tr.per) / now.Sub(tr.t).Seconds() / 1e6
	tr.segs = append(tr.segs, fmt.Sprintf("%d:%.1f/%d/%d", done, rate, ru.Minflt-tr.ru.Minflt, ru.Nivcsw-tr.ru.Nivcsw))
	tr.t, tr.ru = now, ru
}

func (tr *tracer) print(n int) {
	if tr.on && len(tr.segs) > 0 {
		fmt.Printf("# trace %d B (windows done:million messages/s/minor faults/involuntary switches): %s\n", n, strings.Join(tr.segs, " "))
	}
}
