/* MPI_THREAD_MULTIPLE from pthreads: each thread runs its own ping-pong
 * with the other rank on its own tag, at the same time. */
#include "check.h"
#include <pthread.h>

enum { THREADS = 4, ROUNDS = 500 };
static int rank;

static void *worker(void *arg)
{
    int t = (int)(long)arg, peer = 1 - rank, v;
    MPI_Comm c;
    for (int i = 0; i < ROUNDS; i++) {
        if (rank == 0) {
            v = i * THREADS + t;
            CHECK_RC(MPI_Send(&v, 1, MPI_INT, peer, t, MPI_COMM_WORLD));
            CHECK_RC(MPI_Recv(&v, 1, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == i * THREADS + t + 1);
        } else {
            CHECK_RC(MPI_Recv(&v, 1, MPI_INT, peer, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == i * THREADS + t);
            v++;
            CHECK_RC(MPI_Send(&v, 1, MPI_INT, peer, t, MPI_COMM_WORLD));
        }
    }
    int flag;
    MPI_Is_thread_main(&flag);
    CHECK(!flag);
    (void)c;
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, flag;
    CHECK_RC(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Query_thread(&provided);
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Is_thread_main(&flag);
    CHECK(flag);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    DONE();
}
