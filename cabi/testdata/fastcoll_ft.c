/* The fast MPI_Allreduce and MPI_Barrier (fastcoll.h) when a member dies
 * (run with shmrun --ft). On 4 ranks (with SHMPI_SPIN=0: they sleep) the
 * ranks loop over an allreduce and a barrier; world rank 2 kills itself
 * (raise(SIGKILL)) before its 30th allreduce, and every survivor's 30th
 * allreduce fails with MPIX_ERR_PROC_FAILED. They shrink the world and
 * loop again; the shrunk communicator's member 1 kills itself before its
 * 20th barrier, which fails at the other two. They shrink again, and the
 * fast path runs their allreduce with the right sum. On 2 ranks (which
 * spin where there are 2 cores) rank 1 dies before its 30th allreduce,
 * or its 30th barrier with the argument "barrier", and rank 0's call
 * fails so. */
#include <mpi-ext.h>
#include <signal.h>

#include "check.h"

/* loop runs allreduce and barrier rounds on c until one fails; the member
 * victim kills itself before the allreduce (barrier if at_barrier) of
 * round die. Returns the round that failed and the error's class. */
static int loop(MPI_Comm c, int victim, int die, int at_barrier, int *cls)
{
    int me, n;
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
    for (int i = 0; i < 1000; i++) {
        double x = me + i, sum = -1;
        if (me == victim && i == die && !at_barrier) {
            printf("member %d of %d dies before allreduce %d\n", me, n, i);
            fflush(stdout);
            raise(SIGKILL);
        }
        int rc = MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, c);
        if (rc != MPI_SUCCESS) {
            *cls = error_class(rc);
            return i;
        }
        CHECK(sum == n * (n - 1) / 2.0 + n * i);
        if (me == victim && i == die && at_barrier) {
            printf("member %d of %d dies before barrier %d\n", me, n, i);
            fflush(stdout);
            raise(SIGKILL);
        }
        if ((rc = MPI_Barrier(c)) != MPI_SUCCESS) {
            *cls = error_class(rc);
            return i;
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    int rank, size, provided, cls = -1;
    MPI_Init(&argc, &argv);
    CHECK_RC(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 4 || size == 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
    unsigned long long before = counter_pvar("shmpi_c_fast_colls");
    if (size == 2) {
        int at_barrier = argc > 1 && strcmp(argv[1], "barrier") == 0;
        int i = loop(MPI_COMM_WORLD, 1, 30, at_barrier, &cls);
        CHECK(i == 30 && cls == MPIX_ERR_PROC_FAILED);
        CHECK(counter_pvar("shmpi_c_fast_colls") - before >= 2 * 30 + at_barrier);
        DONE();
    }
    int i = loop(MPI_COMM_WORLD, 2, 30, 0, &cls);
    CHECK(i == 30 && cls == MPIX_ERR_PROC_FAILED);
    CHECK(counter_pvar("shmpi_c_fast_colls") - before >= 2 * 30);

    MPI_Comm s, s2;
    CHECK_RC(MPIX_Comm_shrink(MPI_COMM_WORLD, &s));
    int n = 0;
    MPI_Comm_size(s, &n);
    CHECK(n == 3);
    i = loop(s, 1, 20, 1, &cls);
    CHECK(i == 20 && cls == MPIX_ERR_PROC_FAILED);

    CHECK_RC(MPIX_Comm_shrink(s, &s2));
    MPI_Comm_size(s2, &n);
    CHECK(n == 2);
    CHECK_RC(MPI_Barrier(s2));
    before = counter_pvar("shmpi_c_fast_colls");
    for (i = 0; i < 100; i++) {
        int me, x, sum = -1;
        MPI_Comm_rank(s2, &me);
        x = me + i;
        CHECK_RC(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, s2));
        CHECK(sum == 1 + 2 * i);
        CHECK_RC(MPI_Barrier(s2));
    }
    CHECK(counter_pvar("shmpi_c_fast_colls") - before == 200);
    MPI_Comm_free(&s2);
    MPI_Comm_free(&s);
    DONE();
}
