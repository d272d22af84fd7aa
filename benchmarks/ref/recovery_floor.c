/*
 * recovery_floor: the MPI's own recovery (benchmarks/ref/ulfm_recovery.c)
 * when what dies is a node as issue 27's benchmarks play it on one
 * machine: an agent and the ranks beside it, whose processes end on the
 * same CPUs as the survivors' (benchmarks/nodes_recovery.sh's node kill).
 *
 *   mpirun --with-ft ulfm --oversubscribe --mca btl tcp,self -n K \
 *       ./recovery_floor [R [VICTIM [DELAY_MS [futex]]]]
 *
 * Each MPI process is an agent; before MPI_Init it forks R ranks that
 * share one mapping with it, never call MPI, and die with it
 * (PR_SET_PDEATHSIG). Ranks and agents loop on the node-local allreduce
 * of allreduce_floor.c (each rank writes its value and waits for the
 * node's result; the agent adds them up and runs MPI_Allreduce with the
 * other agents). After DELAY_MS agent VICTIM prints CLOCK_MONOTONIC and
 * SIGKILLs itself, and its ranks die with it. Each surviving agent, once
 * its MPI_Allreduce fails, revokes, agrees, shrinks and runs one
 * MPI_Allreduce on the shrunk communicator, as ulfm_recovery.c does, and
 * hands its ranks the result. No matching, no failure tables, no
 * messages through the agents: what this costs is the floor of any
 * design with an agent beside each node's ranks, and it includes the
 * teardown of the dead node's processes on the CPUs the survivors use,
 * which a single MPI process's death (ulfm_recovery.c) does not pay.
 *
 * Waiters poll with sched_yield, or with "futex" sleep (the ranks on the
 * node's result, the agent on its ranks' count), as allreduce_floor.c.
 *
 * Output, as ulfm_recovery.c's: "killed=<ns>" from the victim,
 * "error=<ns> done=<ns> survivors=<n>" from agent 0 of the survivors:
 * the latest surviving agent's clock at its first error and after it has
 * handed its ranks the shrunk communicator's result.
 */
#include <mpi.h>
#include <mpi-ext.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_env.h"
#include <linux/futex.h>
#include <sys/syscall.h>

#define MAXR 64
#define STOP UINT64_MAX

/* One mapping shared by an agent and its ranks (MAP_SHARED before fork),
 * each word group on a line of its own: 64-byte aligned, (MAXR + 2) * 64
 * bytes. */
struct line {
    _Alignas(64) volatile uint64_t iter;
    volatile double val;
};
struct node {
    _Alignas(64) volatile uint32_t arrived; /* ranks arrived, all iterations (futex mode) */
    struct line in[MAXR];                   /* rank r's value for iteration iter */
    struct line out;                        /* the node's result for iteration iter; STOP ends the ranks */
};

static int sleeping; /* futex mode */

static void futex_wait(volatile void *w, uint32_t v) { syscall(SYS_futex, w, FUTEX_WAIT, v, NULL, NULL, 0); }
static void futex_wake(volatile void *w) { syscall(SYS_futex, w, FUTEX_WAKE, 1 << 30, NULL, NULL, 0); }

static long long mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* A rank: its value each iteration, then a wait for the node's result,
 * until the agent says STOP. */
static void rank(struct node *b, int r, int R)
{
    for (uint64_t v = 1;; v++) {
        b->in[r].val = 1;
        __atomic_store_n(&b->in[r].iter, v, __ATOMIC_RELEASE);
        if (sleeping && __atomic_add_fetch(&b->arrived, 1, __ATOMIC_ACQ_REL) % (uint32_t)R == 0)
            futex_wake(&b->arrived);
        uint64_t o;
        while ((o = __atomic_load_n(&b->out.iter, __ATOMIC_ACQUIRE)) < v) {
            if (sleeping)
                futex_wait(&b->out.iter, (uint32_t)o); /* the low half, on little-endian */
            else
                sched_yield();
        }
        if (o == STOP)
            return;
    }
}

/* wait_ranks waits for every rank's value of iteration v and returns
 * their sum. */
static double wait_ranks(struct node *b, int R, uint64_t v)
{
    double local = 0;
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
    return local;
}

static void release(struct node *b, double val, uint64_t v)
{
    b->out.val = val;
    __atomic_store_n(&b->out.iter, v, __ATOMIC_RELEASE);
    if (sleeping)
        futex_wake(&b->out.iter);
}

int main(int argc, char **argv)
{
    int R = argc > 1 ? atoi(argv[1]) : 2;
    int K, node;
    if (agent_env("recovery_floor", &node, &K) != 0)
        return 1;
    int victim = argc > 2 ? atoi(argv[2]) : K - 1;
    long long delay = (argc > 3 ? atoll(argv[3]) : 300) * 1000000LL;
    sleeping = argc > 4 && argv[4][0] == 'f';
    if (R < 1 || R > MAXR) {
        fprintf(stderr, "recovery_floor: 1 to %d ranks a node\n", MAXR);
        return 1;
    }
    struct node *b = mmap(NULL, sizeof(struct node), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pid_t agent = getpid();
    for (int r = 0; r < R; r++) {
        pid_t k = fork();
        if (k < 0) {
            perror("fork");
            return 1;
        }
        if (k == 0) {
            /* Die with the agent, as shmnode's ranks do. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != agent)
                _exit(1);
            rank(b, r, R);
            _exit(0);
        }
    }
    MPI_Init(&argc, &argv);
    int me, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != K || me != node) {
        if (me == 0)
            fprintf(stderr, "recovery_floor: MPI's rank and size differ from the environment's\n");
        release(b, 0, STOP);
        MPI_Finalize();
        return 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    long long start = mono(), tErr;
    uint64_t v = 1;
    for (;; v++) {
        if (me == victim && mono() - start > delay) {
            printf("killed=%lld\n", mono());
            fflush(stdout);
            raise(SIGKILL);
        }
        double local = wait_ranks(b, R, v), total;
        if (MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
            tErr = mono();
            break;
        }
        release(b, total, v);
    }
    MPIX_Comm_revoke(MPI_COMM_WORLD);
    int flag = 1;
    MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    MPI_Comm shrunk;
    if (MPIX_Comm_shrink(MPI_COMM_WORLD, &shrunk) != MPI_SUCCESS) {
        fprintf(stderr, "agent %d: shrink failed\n", me);
        release(b, 0, STOP);
        return 1;
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    double local = R, total;
    if (MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, shrunk) != MPI_SUCCESS) {
        fprintf(stderr, "agent %d: allreduce on the shrunk communicator failed\n", me);
        release(b, 0, STOP);
        return 1;
    }
    /* The ranks' value of iteration v is in (they wrote it before the
     * failed allreduce): hand them the shrunk communicator's result. */
    release(b, total, v);
    long long t[2] = {tErr, mono()}, latest[2];
    release(b, 0, STOP);
    for (int r = 0; r < R; r++)
        wait(NULL);
    MPI_Reduce(t, latest, 2, MPI_LONG_LONG, MPI_MAX, 0, shrunk);
    int srank, ssize;
    MPI_Comm_rank(shrunk, &srank);
    MPI_Comm_size(shrunk, &ssize);
    if (srank == 0) {
        printf("error=%lld done=%lld survivors=%d\n", latest[0], latest[1], ssize);
        fflush(stdout);
    }
    MPI_Comm_free(&shrunk);
    MPI_Finalize();
    return 0;
}
