/*
 * forward_floor: the 8-byte latency floor of any design that forwards a
 * node's messages through a process beside each rank (issue 27's shape:
 * rank -> its node's agent -> the MPI -> the other agent -> its rank),
 * on the machine and transport of benchmarks/nodes_report.sh.
 *
 *   mpirun --oversubscribe --mca btl tcp,self -n 2 ./forward_floor [iters]
 *
 * Each MPI process is an "agent"; before MPI_Init it forks one "rank"
 * that shares one page with it and never calls MPI. The rank of agent 0
 * sends an 8-byte value to its agent through the page; agent 0 sends it
 * with MPI_Send to agent 1, which writes it to its rank's word; that rank
 * echoes it back the same way. Every waiter polls its words (and the
 * agents MPI_Test their posted receive) and calls sched_yield between
 * polls, never sleeping: the cheapest hand-off between two processes
 * that may share a CPU. Nothing is bound, as shmnode binds nothing. No
 * matching, no queues, no failure checks: what it costs is the floor.
 *
 * Output, as osu_latency's: "8 <one-way µs>" (half the round trip,
 * averaged over iters after iters/10 warm-up), printed by agent 0.
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

/* One page shared by an agent and its rank (MAP_SHARED before fork). Each
 * word on a line of its own: 64-byte aligned, 192 bytes used. */
struct box {
    _Alignas(64) volatile uint64_t to_agent; /* written by the rank */
    _Alignas(64) volatile uint64_t to_rank;  /* written by the agent */
    _Alignas(64) volatile double one_way_us; /* the result, from rank 0's side */
};

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* The rank: node 0's pings (values 1..n) and times; node 1's echoes. */
static void rank(struct box *b, int node, int warm, int iters)
{
    int n = warm + iters;
    double t0 = 0;
    for (uint64_t v = 1; v <= (uint64_t)n; v++) {
        if (node == 0) {
            if (v == (uint64_t)warm + 1)
                t0 = now_us();
            __atomic_store_n(&b->to_agent, v, __ATOMIC_RELEASE);
        }
        while (__atomic_load_n(&b->to_rank, __ATOMIC_ACQUIRE) != v)
            sched_yield();
        if (node == 1)
            __atomic_store_n(&b->to_agent, v, __ATOMIC_RELEASE);
    }
    if (node == 0)
        b->one_way_us = (now_us() - t0) / (2.0 * iters);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 10000;
    if (iters < 1)
        iters = 1;
    int warm = iters / 10;
    int node, nodes;
    if (agent_env("forward_floor", &node, &nodes) != 0)
        return 1;
    struct box *b = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        if (node < 2)
            rank(b, node, warm, iters);
        _exit(0);
    }
    MPI_Init(&argc, &argv);
    int me, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || me != node) {
        if (me == 0)
            fprintf(stderr, "forward_floor: needs 2 processes (got %d)\n", size);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        MPI_Finalize();
        return 1;
    }
    int peer = 1 - me, n = warm + iters;
    uint64_t in = 0, sent = 0, delivered = 0;
    MPI_Request rq;
    MPI_Irecv(&in, 1, MPI_UINT64_T, peer, 0, MPI_COMM_WORLD, &rq);
    /* Each agent forwards n values each way: its rank's to the peer, the
     * peer's to its rank. */
    while (sent < (uint64_t)n || delivered < (uint64_t)n) {
        int busy = 0;
        uint64_t v = __atomic_load_n(&b->to_agent, __ATOMIC_ACQUIRE);
        if (v != sent) {
            MPI_Send(&v, 1, MPI_UINT64_T, peer, 0, MPI_COMM_WORLD);
            sent = v;
            busy = 1;
        }
        if (delivered < (uint64_t)n) {
            int done = 0;
            MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
            if (done) {
                __atomic_store_n(&b->to_rank, in, __ATOMIC_RELEASE);
                delivered = in;
                if (delivered < (uint64_t)n)
                    MPI_Irecv(&in, 1, MPI_UINT64_T, peer, 0, MPI_COMM_WORLD, &rq);
                busy = 1;
            }
        }
        if (!busy)
            sched_yield();
    }
    waitpid(child, NULL, 0);
    if (me == 0) {
        printf("# forward floor: rank -> agent -> MPI -> agent -> rank, polling with sched_yield\n");
        printf("# Size       Avg Latency(us)\n");
        printf("%-10d%18.2f\n", 8, b->one_way_us);
    }
    MPI_Finalize();
    return 0;
}
