/*
 * allreduce_floor: the floor of issue 27's 8-byte allreduce over K nodes
 * of R ranks for any design that combines a node's values in shared
 * memory and lets one process beside its ranks (the agent) take the
 * node's share to the others through the MPI, on the machine and
 * transport of benchmarks/nodes_report.sh.
 *
 *   mpirun --oversubscribe --mca btl tcp,self -n K ./allreduce_floor [R [iters [futex]]]
 *
 * Each MPI process is an agent; before MPI_Init it forks R ranks that
 * share one mapping with it and never call MPI. Every iteration each
 * rank writes its double and the iteration's number to its own line;
 * the agent waits for all R, adds them up, runs MPI_Allreduce (MPI_SUM)
 * with the other agents, and writes the sum and the number to a line the
 * ranks wait on; each rank checks the sum. Every waiter polls and calls
 * sched_yield between polls, never sleeping (the cheapest hand-off
 * between two processes that share a CPU, as in forward_floor.c); with
 * "futex", the waiters sleep instead (the last rank to arrive wakes the
 * agent, the agent wakes every rank), which can be cheaper when many
 * processes share a CPU, since a sleeper takes no turns. The MPI yields
 * in its own waits when oversubscribed. Nothing is bound, as
 * shmnode binds nothing. No matching, no communicators, no failure
 * checks: what it costs is the floor.
 *
 * Output, as osu_allreduce's: "8 <µs per allreduce>" (averaged over
 * iters after iters/10 warm-up, at node 0's rank 0), printed by agent 0,
 * and "# errors N" if any rank saw a wrong sum.
 */
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_env.h"
#include <linux/futex.h>
#include <sys/syscall.h>

#define MAXR 64

/* One mapping shared by an agent and its ranks (MAP_SHARED before fork),
 * every word group on a line of its own: 64-byte aligned,
 * (MAXR + 4) * 64 bytes. */
struct line {
    _Alignas(64) volatile uint64_t iter;
    volatile double val;
};
struct node {
    _Alignas(64) volatile uint32_t arrived; /* ranks arrived, all iterations (futex mode) */
    struct line in[MAXR];             /* rank r's value for iteration iter */
    struct line out;                  /* the sum for iteration iter */
    _Alignas(64) volatile double avg_us; /* rank 0's time per allreduce */
    _Alignas(64) volatile uint64_t errors;
};

static int sleeping; /* futex mode */

/* Sleep while the 32-bit word at w holds v; wake every sleeper on w. */
static void futex_wait(volatile void *w, uint32_t v) { syscall(SYS_futex, w, FUTEX_WAIT, v, NULL, NULL, 0); }
static void futex_wake(volatile void *w) { syscall(SYS_futex, w, FUTEX_WAKE, 1 << 30, NULL, NULL, 0); }

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Rank r's value in iteration v, and the sum over K nodes of R ranks. */
static double value(int node, int r, int R, uint64_t v) { return (double)(node * R + r) + (double)(v % 7); }
static double sum(int K, int R, uint64_t v)
{
    double n = (double)K * R;
    return n * (n - 1) / 2 + n * (double)(v % 7);
}

static void rank(struct node *b, int node, int r, int K, int R, int warm, int iters)
{
    int n = warm + iters;
    double t0 = 0;
    for (uint64_t v = 1; v <= (uint64_t)n; v++) {
        if (node == 0 && r == 0 && v == (uint64_t)warm + 1)
            t0 = now_us();
        b->in[r].val = value(node, r, R, v);
        __atomic_store_n(&b->in[r].iter, v, __ATOMIC_RELEASE);
        if (sleeping && __atomic_add_fetch(&b->arrived, 1, __ATOMIC_ACQ_REL) % (uint32_t)R == 0)
            futex_wake(&b->arrived);
        while (__atomic_load_n(&b->out.iter, __ATOMIC_ACQUIRE) < v) {
            if (sleeping)
                futex_wait(&b->out.iter, (uint32_t)(v - 1)); /* the low half, on little-endian */
            else
                sched_yield();
        }
        if (b->out.val != sum(K, R, v))
            __atomic_fetch_add(&b->errors, 1, __ATOMIC_RELAXED);
    }
    if (node == 0 && r == 0)
        b->avg_us = (now_us() - t0) / iters;
}

int main(int argc, char **argv)
{
    int R = argc > 1 ? atoi(argv[1]) : 8;
    int iters = argc > 2 ? atoi(argv[2]) : 2000;
    sleeping = argc > 3 && argv[3][0] == 'f';
    if (R < 1 || R > MAXR) {
        fprintf(stderr, "allreduce_floor: 1 to %d ranks a node\n", MAXR);
        return 1;
    }
    if (iters < 1)
        iters = 1;
    int warm = iters / 10;
    int node, K;
    if (agent_env("allreduce_floor", &node, &K) != 0)
        return 1;
    struct node *b = mmap(NULL, sizeof(struct node), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pid_t kids[MAXR];
    for (int r = 0; r < R; r++) {
        kids[r] = fork();
        if (kids[r] < 0) {
            perror("fork");
            return 1;
        }
        if (kids[r] == 0) {
            rank(b, node, r, K, R, warm, iters);
            _exit(0);
        }
    }
    MPI_Init(&argc, &argv);
    int me, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != K || me != node) {
        if (me == 0)
            fprintf(stderr, "allreduce_floor: MPI's rank and size differ from the environment's\n");
        for (int r = 0; r < R; r++)
            kill(kids[r], SIGKILL);
        MPI_Finalize();
        return 1;
    }
    int n = warm + iters;
    for (uint64_t v = 1; v <= (uint64_t)n; v++) {
        double local = 0, total = 0;
        for (int r = 0; r < R; r++) {
            while (__atomic_load_n(&b->in[r].iter, __ATOMIC_ACQUIRE) < v) {
                uint32_t a = __atomic_load_n(&b->arrived, __ATOMIC_ACQUIRE);
                if (!sleeping)
                    sched_yield();
                else if (__atomic_load_n(&b->in[r].iter, __ATOMIC_ACQUIRE) < v)
                    futex_wait(&b->arrived, a);
            }
            local += b->in[r].val;
        }
        MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        b->out.val = total;
        __atomic_store_n(&b->out.iter, v, __ATOMIC_RELEASE);
        if (sleeping)
            futex_wake(&b->out.iter);
    }
    for (int r = 0; r < R; r++)
        waitpid(kids[r], NULL, 0);
    uint64_t errs = b->errors, all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) {
        printf("# allreduce floor: %d nodes x %d ranks, shared memory and one agent a node, waiters %s\n", K, R,
               sleeping ? "sleeping on futexes" : "polling with sched_yield");
        printf("# Size       Avg Latency(us)\n");
        printf("%-10d%18.2f\n", 8, b->avg_us);
        if (all)
            printf("# errors %llu\n", (unsigned long long)all);
    }
    MPI_Finalize();
    return all != 0;
}
