/* The fast paths of MPI_Send and MPI_Recv (fastpath.h) when a peer dies
 * (run with shmrun --ft on 3 ranks). Ranks 0 and 1 ping-pong small
 * messages; rank 1 kills itself (raise(SIGKILL)) after its 50th receive,
 * while rank 0 polls for the reply. Rank 0's receive from it fails with
 * MPIX_ERR_PROC_FAILED, so does a send to it, and so does a receive from
 * MPI_ANY_SOURCE until rank 0 acknowledges the failure. Rank 2 waits all
 * along in a receive from rank 0, which the failure does not disturb;
 * then the two exchange messages on the fast paths again. */
#include <mpi-ext.h>
#include <signal.h>

#include "check.h"

static int class_of(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 3);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int v = 0;
    if (rank == 1) {
        for (int i = 0;; i++) {
            CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &st));
            if (i == 50) {
                printf("rank 1 dies\n");
                raise(SIGKILL);
            }
            CHECK_RC(MPI_Send(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD));
        }
    }
    if (rank == 0) {
        int rc = MPI_SUCCESS, i;
        for (i = 0; i < 1000 && rc == MPI_SUCCESS; i++) {
            v = i;
            CHECK_RC(MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD));
            rc = MPI_Recv(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &st);
            CHECK(rc != MPI_SUCCESS || v == i);
        }
        CHECK(i == 51 && class_of(rc) == MPIX_ERR_PROC_FAILED);
        CHECK(class_of(MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD)) == MPIX_ERR_PROC_FAILED);
        CHECK(class_of(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &st)) == MPIX_ERR_PROC_FAILED);
        CHECK_RC(MPIX_Comm_failure_ack(MPI_COMM_WORLD));
        for (i = 0; i < 100; i++) {
            v = i;
            CHECK_RC(MPI_Send(&v, 1, MPI_INT, 2, 2, MPI_COMM_WORLD));
            CHECK_RC(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &st));
            CHECK(v == i + 1 && st.MPI_SOURCE == 2);
        }
    }
    if (rank == 2) {
        for (int i = 0; i < 100; i++) {
            CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &st));
            CHECK(v == i);
            v++;
            CHECK_RC(MPI_Send(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD));
        }
    }
    DONE();
}
