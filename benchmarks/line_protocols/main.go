// Command line_protocols measures what a small message can cost in cache
// line transfers, whatever the software around it: two threads pinned to
// different CPUs ping-pong through three layouts of shared memory, with
// a calibrated amount of work between receiving a message and sending
// the reply (the software of a real receive and send):
//
//   - handoff: one word, written in turn (shm_limits' reference);
//   - box: one line for the pair, a 32-byte half per direction holding an
//     entry and an acknowledgement of the other half (Open MPI's "fast
//     box" moved into one line, as issue 10 proposed);
//   - rings: a ring of 64 one-line slots per direction (shmpi's inbox
//     layout, less its claim and announcement).
//
// With no work, the box moves its line once per message, as the hand-off
// does: the receiver of a message writes its reply into the line it has
// just fetched. With work in between, the other side's polling takes the
// line back before the reply is written, and the box costs as much as
// or more than the rings: the writer must first take the line back from
// the poller, which then fetches it again. So one transfer per message
// is reachable only when the reply follows the receive at once.
//
//	./line_protocols [-runs 5] [-trips 200000] [-work 0,20,60]
package main

import (
	"flag"
	"fmt"
	"log"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

var (
	runs  = flag.Int("runs", 5, "runs per measurement (the median is reported)")
	trips = flag.Int("trips", 200000, "round trips per run")
	works = flag.String("work", "0,20,60", "work between receive and reply, in loop iterations (comma separated)")
	cpuA  = flag.Int("cpu-a", 0, "CPU of the first thread")
	cpuB  = flag.Int("cpu-b", 1, "CPU of the second thread")
)

// slots is the ring length of the rings layout.
const slots = 64

// work runs n iterations of dependent arithmetic, the stand-in for the
// software between a receive and the reply. sink keeps it from being
// optimized away; each thread has its own.
func work(n int, sink *int) {
	x := *sink
	for k := 0; k < n; k++ {
		x = x*3 + k
	}
	*sink = x
}

// half is one direction of a box (the layout of the proposal: 32 bytes).
type half struct {
	ctrl atomic.Uint32 // low half: sequence of the entry; high half: acknowledgement
	_    [12]byte
	data uint64
	_    [8]byte
}

type side func(me int, trips int, sink *int, w int)

// layout is a way of passing messages over its own area of memory,
// cleared before every run (the runs restart their counts).
type layout struct {
	name string
	mem  []byte
	s    side
}

// handoff: one word, odd values from thread 0, even ones from thread 1.
func handoff(mem unsafe.Pointer) side {
	word := (*atomic.Uint64)(mem)
	return func(me, trips int, sink *int, w int) {
		for i := uint64(0); i < uint64(trips); i++ {
			if me == 0 {
				word.Store(2*i + 1)
				for word.Load() != 2*i+2 {
				}
				work(w, sink)
			} else {
				for word.Load() != 2*i+1 {
				}
				work(w, sink)
				word.Store(2*i + 2)
			}
		}
	}
}

// box: one line, a half per direction; the receiver acknowledges in its
// half, and a sender writes only once its last entry is acknowledged.
func box(mem unsafe.Pointer) side {
	h := (*[2]half)(mem)
	return func(me, trips int, sink *int, w int) {
		mine, theirs := &h[me], &h[1-me]
		var seq, ack uint16
		recv := func() {
			for uint16(theirs.ctrl.Load()) == ack {
			}
			*sink += int(theirs.data)
			ack++
			store32(&mine.ctrl, uint32(seq)|uint32(ack)<<16)
		}
		send := func(v uint64) {
			for uint16(theirs.ctrl.Load()>>16) != seq {
			}
			mine.data = v
			seq++
			store32(&mine.ctrl, uint32(seq)|uint32(ack)<<16)
		}
		for i := 0; i < trips; i++ {
			if me == 0 {
				send(uint64(i))
				recv()
				work(w, sink)
			} else {
				recv()
				work(w, sink)
				send(uint64(i))
			}
		}
	}
}

// rings: a ring of one-line slots per direction; slot i carries the
// sequence i+1 in its first word.
func rings(mem unsafe.Pointer) side {
	return func(me, trips int, sink *int, w int) {
		slot := func(dir, i int) *atomic.Uint64 {
			return (*atomic.Uint64)(unsafe.Add(mem, (dir*(slots+2)+i%slots)*64))
		}
		out, in := me, 1-me
		for i := 0; i < trips; i++ {
			if me == 0 {
				store64(slot(out, i), uint64(i+1))
				for slot(in, i).Load() != uint64(i+1) {
				}
				work(w, sink)
			} else {
				for slot(in, i).Load() != uint64(i+1) {
				}
				work(w, sink)
				store64(slot(out, i), uint64(i+1))
			}
		}
	}
}

// store32 and store64 publish with a plain store, a release store on
// amd64 (TSO), as shmpi's rings and boxes would; the hand-off uses a
// sequentially consistent store, as shm_limits does.
func store32(p *atomic.Uint32, v uint32) { *(*uint32)(unsafe.Pointer(p)) = v }
func store64(p *atomic.Uint64, v uint64) { *(*uint64)(unsafe.Pointer(p)) = v }

// oneway runs l on two pinned threads and returns the one-way time in ns.
func oneway(l layout, w int) float64 {
	clear(l.mem)
	s := l.s
	var ready sync2
	done := make(chan struct{})
	sinks := make([]int, 16) // two sinks, far apart
	go func() {
		pin(*cpuB)
		ready.arrive()
		s(1, *trips, &sinks[8], w)
		close(done)
	}()
	pin(*cpuA)
	defer runtime.UnlockOSThread()
	ready.arrive()
	ready.wait()
	start := time.Now()
	s(0, *trips, &sinks[0], w)
	el := time.Since(start)
	<-done
	return float64(el.Nanoseconds()) / float64(2**trips)
}

// sync2 starts the two threads together.
type sync2 struct{ n atomic.Int32 }

func (s *sync2) arrive() { s.n.Add(1) }
func (s *sync2) wait() {
	for s.n.Load() < 2 {
	}
}

func pin(cpu int) {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		log.Fatalf("pin to CPU %d: %v", cpu, err)
	}
}

// workNs is the time of w iterations of work on one thread.
func workNs(w int) float64 {
	sink := 0
	const n = 200000
	start := time.Now()
	for range n {
		work(w, &sink)
	}
	if sink == 1 {
		fmt.Print("")
	}
	return float64(time.Since(start).Nanoseconds()) / n
}

func median(f func() float64) float64 {
	v := make([]float64, *runs)
	for i := range v {
		v[i] = f()
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func main() {
	flag.Parse()
	if runtime.NumCPU() < 2 {
		log.Fatal("line_protocols needs two CPUs")
	}
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 3))
	// Each layout in its own 128-byte-aligned area, far from the others.
	const areaSize = 2 * (slots + 2) * 64
	buf := make([]byte, 3*areaSize+128)
	off := int((128 - uintptr(unsafe.Pointer(&buf[0]))%128) % 128)
	area := func(k int) []byte { return buf[off+k*areaSize : off+(k+1)*areaSize] }
	at := func(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
	layouts := []layout{
		{"handoff", area(0), handoff(at(area(0)))},
		{"box", area(1), box(at(area(1)))},
		{"rings", area(2), rings(at(area(2)))},
	}
	fmt.Printf("# line_protocols: one-way ns, median of %d runs of %d round trips; CPUs %d and %d\n", *runs, *trips, *cpuA, *cpuB)
	fmt.Printf("%-8s %8s %10s %10s %10s %12s\n", "work", "work_ns", "handoff", "box", "rings", "handoff_0")
	for _, f := range strings.Split(*works, ",") {
		w, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || w < 0 {
			log.Fatalf("bad -work %q", f)
		}
		var got [3]float64
		for i, l := range layouts {
			got[i] = median(func() float64 { return oneway(l, w) })
		}
		// The bare hand-off again, right after: the placement may move.
		after := median(func() float64 { return oneway(layouts[0], 0) })
		fmt.Printf("%-8d %8.1f %10.1f %10.1f %10.1f %12.1f\n", w, workNs(w), got[0], got[1], got[2], after)
	}
}
