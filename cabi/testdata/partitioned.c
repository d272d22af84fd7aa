/* partitioned.c: MPI 4.0 partitioned communication between pairs of
 * ranks (0-1, 2-3...): several rounds with the sides' partition counts
 * differing, partitions marked ready from several pthreads in a scrambled
 * order (MPI_Pready, _range, _list), MPI_Parrived watched per partition
 * with each partition checked as soon as it arrived, a derived datatype
 * (a vector: staged), the _c forms, a size mismatch (an error at both
 * sides) and bad input under MPI_ERRORS_RETURN.
 *
 * With the argument "kill", the odd rank of each pair dies with SIGKILL
 * in the middle of a round and the even rank gets MPIX_ERR_PROC_FAILED. */
#include <pthread.h>
#include <signal.h>
#include <mpi-ext.h>
#include "check.h"

#define THREADS 3
#define ROUNDS 3

static double val(int round, long i) { return round * 1e7 + (double)i; }

struct marker {
    MPI_Request req;
    int parts, id, round;
};

/* Each thread marks the partitions p with p % THREADS == id, from the
 * last down, in the three ways in turn. */
static void *mark(void *arg)
{
    struct marker *m = arg;
    int list[2], n = 0, k = 0;
    for (int p = m->parts - 1; p >= 0; p--) {
        if (p % THREADS != m->id)
            continue;
        switch ((k++ + m->round) % 3) {
        case 0:
            CHECK_RC(MPI_Pready(p, m->req));
            break;
        case 1:
            CHECK_RC(MPI_Pready_range(p, p, m->req));
            break;
        default:
            list[n++] = p;
            if (n == 2) {
                CHECK_RC(MPI_Pready_list(2, list, m->req));
                n = 0;
            }
        }
    }
    if (n > 0)
        CHECK_RC(MPI_Pready_list(n, list, m->req));
    return NULL;
}

static void mark_all(MPI_Request req, int parts, int round)
{
    pthread_t th[THREADS];
    struct marker ms[THREADS];
    for (int t = 0; t < THREADS; t++) {
        ms[t] = (struct marker){req, parts, t, round};
        CHECK(pthread_create(&th[t], NULL, mark, &ms[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
}

/* One transfer of sp x sc doubles received as rp x rc, contiguous. */
static void contiguous(int rank, int peer, int sp, int sc, int rp, int rc, int tag, int large)
{
    long total = (long)sp * sc;
    double *buf = calloc(total ? total : 1, sizeof(double));
    MPI_Request req;
    if (rank % 2 == 0) {
        if (large)
            CHECK_RC(MPI_Psend_init_c(buf, sp, (MPI_Count)sc, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        else
            CHECK_RC(MPI_Psend_init(buf, sp, sc, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        for (int round = 0; round < ROUNDS; round++) {
            for (long i = 0; i < total; i++)
                buf[i] = val(round, i);
            CHECK_RC(MPI_Start(&req));
            mark_all(req, sp, round);
            CHECK_RC(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
    } else {
        if (large)
            CHECK_RC(MPI_Precv_init_c(buf, rp, (MPI_Count)rc, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        else
            CHECK_RC(MPI_Precv_init(buf, rp, rc, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        char *seen = calloc(rp, 1);
        for (int round = 0; round < ROUNDS; round++) {
            memset(buf, 0, total * sizeof(double));
            memset(seen, 0, rp);
            CHECK_RC(MPI_Start(&req));
            int left = rp;
            double t0 = MPI_Wtime();
            while (left > 0) {
                CHECK(MPI_Wtime() - t0 < 30);
                for (int p = rp - 1; p >= 0; p--) {
                    int flag = 0;
                    if (seen[p])
                        continue;
                    CHECK_RC(MPI_Parrived(req, p, &flag));
                    if (!flag)
                        continue;
                    seen[p] = 1;
                    left--;
                    for (long i = (long)p * rc; i < (long)(p + 1) * rc; i++)
                        CHECK(buf[i] == val(round, i));
                }
            }
            MPI_Status st;
            CHECK_RC(MPI_Wait(&req, &st));
            int count;
            CHECK_RC(MPI_Get_count(&st, MPI_DOUBLE, &count));
            CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == tag && count == total);
            for (long i = 0; i < total; i++)
                CHECK(buf[i] == val(round, i));
        }
        free(seen);
    }
    CHECK_RC(MPI_Request_free(&req));
    CHECK(req == MPI_REQUEST_NULL);
    free(buf);
}

/* A vector type (every other int of 2*len) on both sides: the data is
 * packed per partition at MPI_Pready and unpacked at MPI_Parrived or at
 * completion; the gaps stay untouched. */
static void derived(int rank, int peer)
{
    enum { N = 48, SP = 6, RP = 4 };
    MPI_Datatype vec;
    CHECK_RC(MPI_Type_vector(2, 1, 2, MPI_INT, &vec)); /* 2 ints of 3, extent 3 ints */
    CHECK_RC(MPI_Type_commit(&vec));
    int buf[3 * N];
    MPI_Request req;
    if (rank % 2 == 0) {
        CHECK_RC(MPI_Psend_init(buf, SP, N / SP, vec, peer, 50, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < 3 * N; i++)
                buf[i] = round * 1000 + i;
            CHECK_RC(MPI_Start(&req));
            mark_all(req, SP, round);
            CHECK_RC(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
    } else {
        CHECK_RC(MPI_Precv_init(buf, RP, N / RP, vec, peer, 50, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        for (int round = 0; round < ROUNDS; round++) {
            for (int i = 0; i < 3 * N; i++)
                buf[i] = -1;
            CHECK_RC(MPI_Start(&req));
            if (round == 1) {
                /* Watch partition 0 arrive and look at it at once. */
                int flag = 0;
                double t0 = MPI_Wtime();
                while (!flag) {
                    CHECK(MPI_Wtime() - t0 < 30);
                    CHECK_RC(MPI_Parrived(req, 0, &flag));
                }
                for (int i = 0; i < 3 * N / RP; i++)
                    CHECK(buf[i] == (i % 3 == 1 ? -1 : round * 1000 + i));
            }
            CHECK_RC(MPI_Wait(&req, MPI_STATUS_IGNORE));
            for (int i = 0; i < 3 * N; i++)
                CHECK(buf[i] == (i % 3 == 1 ? -1 : round * 1000 + i));
        }
    }
    CHECK_RC(MPI_Request_free(&req));
    CHECK_RC(MPI_Type_free(&vec));
}

/* 100 bytes sent, 96 expected: MPI_ERR_COUNT at both sides, every round. */
static void mismatch(int rank, int peer)
{
    char buf[100];
    MPI_Request req;
    if (rank % 2 == 0)
        CHECK_RC(MPI_Psend_init(buf, 10, 10, MPI_CHAR, peer, 60, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    else
        CHECK_RC(MPI_Precv_init(buf, 8, 12, MPI_CHAR, peer, 60, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    for (int round = 0; round < 2; round++) {
        CHECK_RC(MPI_Start(&req));
        if (rank % 2 == 0)
            CHECK_RC(MPI_Pready_range(0, 9, req));
        int rc = MPI_Wait(&req, MPI_STATUS_IGNORE), cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_COUNT);
    }
    CHECK_RC(MPI_Request_free(&req));
}

static void bad_input(int rank, int peer)
{
    int buf[8], flag, cls;
    MPI_Request req, plain;
#define CLASS(call, want)           \
    do {                            \
        int rc_ = (call);           \
        MPI_Error_class(rc_, &cls); \
        CHECK(cls == (want));       \
    } while (0)
    CLASS(MPI_Psend_init(buf, -1, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_ARG);
    CLASS(MPI_Psend_init(buf, 2, -1, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_COUNT);
    CLASS(MPI_Psend_init(buf, 2, 1, MPI_DATATYPE_NULL, peer, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_TYPE);
    CLASS(MPI_Precv_init(buf, 2, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_RANK);
    CLASS(MPI_Precv_init(buf, 2, 1, MPI_INT, peer, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_TAG);
    CLASS(MPI_Psend_init(buf, 2, 1, MPI_INT, peer, 1, MPI_COMM_NULL, MPI_INFO_NULL, &req), MPI_ERR_COMM);
    CHECK_RC(MPI_Irecv(buf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &plain));
    CLASS(MPI_Pready(0, plain), MPI_ERR_REQUEST);
    CLASS(MPI_Parrived(plain, 0, &flag), MPI_ERR_REQUEST);
    CHECK_RC(MPI_Wait(&plain, MPI_STATUS_IGNORE));

    /* With itself: the rank is its own peer. */
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int out[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    MPI_Request rq[2];
    CHECK_RC(MPI_Psend_init(out, 4, 2, MPI_INT, me, 70, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]));
    CHECK_RC(MPI_Precv_init(buf, 2, 4, MPI_INT, me, 70, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]));
    CLASS(MPI_Pready(0, rq[0]), MPI_ERR_REQUEST); /* not started */
    CLASS(MPI_Pready(0, rq[1]), MPI_ERR_REQUEST); /* a receive */
    CLASS(MPI_Parrived(rq[0], 0, &flag), MPI_ERR_REQUEST); /* a send */
    CHECK_RC(MPI_Startall(2, rq));
    CLASS(MPI_Pready(4, rq[0]), MPI_ERR_ARG);
    CLASS(MPI_Pready_range(2, 1, rq[0]), MPI_ERR_ARG);
    CLASS(MPI_Parrived(rq[1], 2, &flag), MPI_ERR_ARG);
    CHECK_RC(MPI_Pready(1, rq[0]));
    CLASS(MPI_Pready(1, rq[0]), MPI_ERR_ARG); /* twice */
    int rest[] = {3, 0, 2};
    CHECK_RC(MPI_Pready_list(3, rest, rq[0]));
    CHECK_RC(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 8; i++)
        CHECK(buf[i] == i + 1);
    CHECK_RC(MPI_Request_free(&rq[0]));
    CHECK_RC(MPI_Request_free(&rq[1]));
#undef CLASS
}

static void kill_round(int rank, int peer)
{
    enum { N = 1 << 20 };
    double *buf = calloc(N, sizeof(double));
    MPI_Request req;
    if (rank % 2 == 1) {
        CHECK_RC(MPI_Psend_init(buf, 4, N / 4, MPI_DOUBLE, peer, 80, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
        CHECK_RC(MPI_Start(&req));
        CHECK_RC(MPI_Pready(0, req));
        CHECK_RC(MPI_Recv(NULL, 0, MPI_INT, peer, 81, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        printf("rank %d dies\n", rank);
        raise(SIGKILL);
    }
    CHECK_RC(MPI_Precv_init(buf, 2, N / 2, MPI_DOUBLE, peer, 80, MPI_COMM_WORLD, MPI_INFO_NULL, &req));
    CHECK_RC(MPI_Start(&req));
    int flag = 0, cls;
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < 0.05) /* partition 0 of 2 needs the sender's 0 and 1 */
        CHECK_RC(MPI_Parrived(req, 0, &flag));
    CHECK(!flag);
    CHECK_RC(MPI_Send(NULL, 0, MPI_INT, peer, 81, MPI_COMM_WORLD));
    int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPIX_ERR_PROC_FAILED);
    rc = MPI_Parrived(req, 1, &flag);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPIX_ERR_PROC_FAILED);
    CHECK_RC(MPI_Request_free(&req));
    free(buf);
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size % 2 == 0);
    int peer = rank ^ 1;
    if (argc > 1 && strcmp(argv[1], "kill") == 0) {
        kill_round(rank, peer);
        DONE();
    }
    contiguous(rank, peer, 1, 1, 1, 1, 1, 0);
    contiguous(rank, peer, 12, 5, 4, 15, 2, 0);
    contiguous(rank, peer, 7, 3, 3, 7, 3, 1);
    contiguous(rank, peer, 5, 0, 1, 0, 4, 0);
    contiguous(rank, peer, 0, 3, 2, 0, 7, 0); /* no partitions at all */
    contiguous(rank, peer, 16, 1 << 15, 4, 1 << 17, 5, 1); /* 4 MiB */
    contiguous(rank, peer, 1, 1 << 19, 8, 1 << 16, 6, 0);
    derived(rank, peer);
    mismatch(rank, peer);
    bad_input(rank, peer);
    MPI_Barrier(MPI_COMM_WORLD);
    DONE();
}
