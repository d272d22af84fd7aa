// sched_barrier: the floor under an oversubscribed barrier. No MPI: N
// processes (fork) share one anonymous mapping and run a sense-reversing
// central-counter barrier, the cheapest barrier there is in memory
// traffic, so what is measured is the scheduler: with more processes than
// CPUs every process must be scheduled at least once per barrier.
//
//   cc -O2 -o /tmp/sched_barrier benchmarks/ref/sched_barrier.c
//   /tmp/sched_barrier N ITERS MODE [K]  (MODE: yield, futex, spinyield,
//                                         hybrid with K yields)
//
// yield:     wait by sched_yield until the generation moves.
// futex:     the last arriver bumps the generation and wakes all with one
//            FUTEX_WAKE; the others sleep at once on the generation word.
// spinyield: 64 PAUSEs between sched_yield calls.
// hybrid:    up to K sched_yield calls, then sleep as futex does.
//
// Prints the mean µs per barrier over ITERS (after ITERS/10 warm-up),
// timed at process 0; with several runs take the median.
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct shared {
	_Alignas(64) volatile uint32_t count;
	_Alignas(64) volatile uint32_t gen;
	_Alignas(64) volatile uint32_t sleepers;
};

static double now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int mode;  // 0 yield, 1 futex, 2 spinyield, 3 hybrid
static int budget;

static void barrier(struct shared *s, int n) {
	uint32_t g = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
	if (__atomic_add_fetch(&s->count, 1, __ATOMIC_ACQ_REL) == (uint32_t)n) {
		__atomic_store_n(&s->count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&s->gen, g + 1, __ATOMIC_RELEASE);
		if ((mode == 1 || mode == 3) && __atomic_load_n(&s->sleepers, __ATOMIC_ACQUIRE))
			syscall(SYS_futex, &s->gen, FUTEX_WAKE, n, NULL, NULL, 0);
		return;
	}
	int yields = 0;
	while (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == g) {
		if (mode == 1 || (mode == 3 && yields++ >= budget)) {
			__atomic_add_fetch(&s->sleepers, 1, __ATOMIC_ACQ_REL);
			syscall(SYS_futex, &s->gen, FUTEX_WAIT, g, NULL, NULL, 0);
			__atomic_sub_fetch(&s->sleepers, 1, __ATOMIC_ACQ_REL);
		} else {
			if (mode == 2)
				for (int i = 0; i < 64; i++)
					__builtin_ia32_pause();
			sched_yield();
		}
	}
}

int main(int argc, char **argv) {
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: %s N ITERS yield|futex|spinyield|hybrid [K]\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]), iters = atoi(argv[2]);
	mode = !strcmp(argv[3], "futex") ? 1 : !strcmp(argv[3], "spinyield") ? 2 : !strcmp(argv[3], "hybrid") ? 3 : 0;
	budget = argc == 5 ? atoi(argv[4]) : 0;
	struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE,
	                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memset((void *)s, 0, sizeof *s);
	for (int r = 1; r < n; r++)
		if (fork() == 0) {
			for (int i = 0; i < iters + iters / 10; i++)
				barrier(s, n);
			_exit(0);
		}
	for (int i = 0; i < iters / 10; i++)
		barrier(s, n);
	double t = now_us();
	for (int i = 0; i < iters; i++)
		barrier(s, n);
	t = now_us() - t;
	while (wait(NULL) > 0) {
	}
	printf("%d %s %d %.2f\n", n, argv[3], budget, t / iters);
	return 0;
}
