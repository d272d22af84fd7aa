// Command cgo_floor measures what one call from C into Go costs on this
// machine: the floor under every MPI call that the C interface (cabi)
// answers in Go. A thread made by C (pthread_create, as a C program's own
// main thread is to the Go runtime) calls an exported Go function that
// does nothing, -n times, timed with clock_gettime; the same loop calling
// an empty C function is printed beside it. The figure is the median of
// -r runs, in ns per call.
//
//	go build -o bin/ ./benchmarks/cgo_floor && bin/cgo_floor
package main

/*
#include <pthread.h>
#include <stdint.h>
#include <time.h>

extern void goNoop(void);

__attribute__((noinline)) static void cNoop(void) { __asm__ volatile(""); }

struct run { long n; int useGo; double ns; };

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *loop(void *p) {
	struct run *r = p;
	if (r->useGo) goNoop(); // the first call binds this thread to the runtime
	double t0 = now();
	for (long i = 0; i < r->n; i++) {
		if (r->useGo) goNoop(); else cNoop();
	}
	r->ns = (now() - t0) / r->n;
	return 0;
}

static double timeCalls(long n, int useGo) {
	struct run r = {n, useGo, 0};
	pthread_t t;
	pthread_create(&t, 0, loop, &r);
	pthread_join(t, 0);
	return r.ns;
}
*/
import "C"

import (
	"flag"
	"fmt"
	"slices"
)

//export goNoop
func goNoop() {}

func main() {
	n := flag.Int("n", 2000000, "calls per run")
	runs := flag.Int("r", 7, "runs")
	flag.Parse()
	var goNs, cNs []float64
	for range *runs {
		goNs = append(goNs, float64(C.timeCalls(C.long(*n), 1)))
		cNs = append(cNs, float64(C.timeCalls(C.long(*n), 0)))
	}
	slices.Sort(goNs)
	slices.Sort(cNs)
	fmt.Printf("C thread -> Go call: %.1f ns (runs %.1f-%.1f); C -> C call: %.1f ns; %d calls a run, median of %d runs\n",
		goNs[len(goNs)/2], goNs[0], goNs[len(goNs)-1], cNs[len(cNs)/2], *n, *runs)
}
