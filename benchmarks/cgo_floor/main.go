// Command cgo_floor measures what one call from C into Go costs on this
// machine: the floor under every MPI call that the C interface (cabi)
// answers in Go. A thread made by C (pthread_create, as a C program's own
// main thread is to the Go runtime) calls an exported Go function that
// does nothing, -n times, timed with clock_gettime; the same loop calling
// an empty C function is printed beside it. The figure is the median of
// -r runs, in ns per call.
//
// With -cold K the calls are made as an oversubscribed rank makes them:
// K processes share one CPU and each gives it up after every call
// (sched_yield), so each call finds the caches and TLB filled by the
// others. Three loops are timed, each in all K processes at once: a C
// thread calling Go, a C thread calling C, and a Go goroutine calling
// Go (what a Go rank does). The figure is the time per turn (one call
// and one switch to the next process), the median of -r runs; the
// difference between the first and the third is what a crossing costs
// a rank driven from C when ranks outnumber cores.
//
//	go build -o bin/ ./benchmarks/cgo_floor && bin/cgo_floor
//	bin/cgo_floor -cold 4 -n 200000
package main

/*
#cgo CFLAGS: -D_GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

extern void goNoop(void);

__attribute__((noinline)) static void cNoop(void) { __asm__ volatile(""); }

struct run { long n; int useGo, cold; double ns; };

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

// loop makes n calls on its own thread and stores ns per iteration. A
// cold run pins the thread to CPU 0 and yields after every call, so
// that each call follows a switch to another process.
static void *loop(void *p) {
	struct run *r = p;
	if (r->cold) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		sched_setaffinity(0, sizeof set, &set);
	}
	if (r->useGo) goNoop(); // the first call binds this thread to the runtime
	double t0 = now();
	for (long i = 0; i < r->n; i++) {
		if (r->useGo) goNoop(); else cNoop();
		if (r->cold) sched_yield();
	}
	r->ns = (now() - t0) / r->n;
	return 0;
}

static double timeCalls(long n, int useGo, int cold) {
	struct run r = {n, useGo, cold, 0};
	pthread_t t;
	pthread_create(&t, 0, loop, &r);
	pthread_join(t, 0);
	return r.ns;
}
*/
import "C"

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

//export goNoop
func goNoop() {}

//go:noinline
func nativeNoop() {}

// nativeLoop is the cold loop for a Go rank: a goroutine on its own thread,
// pinned to CPU 0, calling Go and yielding as ranks' waits do (a raw
// syscall).
func nativeLoop(n int) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set unix.CPUSet
	set.Set(0)
	unix.SchedSetaffinity(0, &set)
	t0 := time.Now()
	for range n {
		nativeNoop()
		syscall.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
	}
	return float64(time.Since(t0).Nanoseconds()) / float64(n)
}

func loopOf(kind string, n int) float64 {
	switch kind {
	case "go":
		return float64(C.timeCalls(C.long(n), 1, 1))
	case "c":
		return float64(C.timeCalls(C.long(n), 0, 1))
	default:
		return nativeLoop(n)
	}
}

// child runs one cold loop when its parent says go (a line on stdin),
// after it said it is ready, and prints its ns per iteration.
func child(kind string, n int) {
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	fmt.Println(loopOf(kind, n))
}

// coldTurn runs the loop of kind in k child processes at once and
// returns the mean time per turn. The children, not this process, take
// part: here the main goroutine waits in a cgo call while the C thread
// calls Go, so both Ps would be busy and sysmon would take one back
// every 20 µs, which a rank's process does not see.
func coldTurn(kind string, k, n int) float64 {
	type kid struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	var kids []kid
	for range k {
		cmd := exec.Command(os.Args[0], "-child", kind, "-n", strconv.Itoa(n))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		check(err)
		out, err := cmd.StdoutPipe()
		check(err)
		check(cmd.Start())
		r := bufio.NewReader(out)
		_, err = r.ReadString('\n')
		check(err)
		kids = append(kids, kid{cmd, in, r})
	}
	for _, c := range kids {
		_, err := c.in.Write([]byte("\n"))
		check(err)
	}
	sum := 0.0
	for _, c := range kids {
		line, err := c.out.ReadString('\n')
		check(err)
		v, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
		check(err)
		sum += v
		check(c.cmd.Wait())
	}
	return sum / float64(k) / float64(k)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "cgo_floor:", err)
		os.Exit(1)
	}
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

func main() {
	n := flag.Int("n", 2000000, "calls per run")
	runs := flag.Int("r", 7, "runs")
	cold := flag.Int("cold", 0, "K: time calls made by K processes sharing one CPU, each yielding after every call")
	kind := flag.String("child", "", "internal: run one cold loop of this kind")
	flag.Parse()
	if *kind != "" {
		child(*kind, *n)
		return
	}
	if *cold > 0 {
		var goT, cT, natT []float64
		for range *runs {
			goT = append(goT, coldTurn("go", *cold, *n))
			cT = append(cT, coldTurn("c", *cold, *n))
			natT = append(natT, coldTurn("native", *cold, *n))
		}
		g, c, nat := median(goT), median(cT), median(natT)
		fmt.Printf("%d processes on CPU 0, a call and a sched_yield a turn, ns per turn (median of %d runs of %d turns each):\n", *cold, *runs, *n)
		fmt.Printf("  C thread -> Go  %.0f\n  C thread -> C   %.0f\n  Go -> Go        %.0f\n", g, c, nat)
		fmt.Printf("  a crossing from C when oversubscribed: %.0f ns over a Go rank's call (C -> C alone: %+.0f)\n", g-nat, c-nat)
		return
	}
	var goNs, cNs []float64
	for range *runs {
		goNs = append(goNs, float64(C.timeCalls(C.long(*n), 1, 0)))
		cNs = append(cNs, float64(C.timeCalls(C.long(*n), 0, 0)))
	}
	slices.Sort(goNs)
	slices.Sort(cNs)
	fmt.Printf("C thread -> Go call: %.1f ns (runs %.1f-%.1f); C -> C call: %.1f ns; %d calls a run, median of %d runs\n",
		goNs[len(goNs)/2], goNs[0], goNs[len(goNs)-1], cNs[len(cNs)/2], *n, *runs)
}
