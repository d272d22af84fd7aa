/* The fast paths of MPI_Send and MPI_Recv (fastpath.h), which move a
 * small message without entering Go, against the general path that
 * shares their inboxes: every size they take and the first they do not,
 * the guard bit of a full record, short records of a streaming sender
 * read by either path, order behind a send of the general path, a
 * receive posted first, statuses, truncation, plain and offset derived
 * types, self sends, freed communicators and bad arguments. Ranks 0 and
 * 1 talk; the others only finalize. The tool interface's counters
 * shmpi_c_fast_sends and shmpi_c_fast_recvs show that the fast paths
 * ran. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static unsigned char pattern(int size, int i, int k) { return (unsigned char)(size * 31 + i * 7 + k * 13 + (i == 11 ? 0x80 : 0)); }

static int pvar(MPI_T_pvar_session s, const char *name, MPI_T_pvar_handle *h)
{
    int i = -1, count = 0;
    CHECK_RC(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &i));
    CHECK_RC(MPI_T_pvar_handle_alloc(s, i, NULL, h, &count));
    CHECK(count == 1);
    return i;
}

static unsigned long long readp(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    CHECK_RC(MPI_T_pvar_read(s, h, &v));
    return v;
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    CHECK_RC(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    MPI_T_pvar_session ps;
    MPI_T_pvar_handle hs, hr;
    CHECK_RC(MPI_T_pvar_session_create(&ps));
    pvar(ps, "shmpi_c_fast_sends", &hs);
    pvar(ps, "shmpi_c_fast_recvs", &hr);
    CHECK_RC(MPI_T_pvar_start(ps, MPI_T_PVAR_ALL_HANDLES));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = 1 - rank;
    MPI_Comm pair; /* ranks 0 and 1 */
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair));

    if (rank < 2) {
        /* A ping-pong of doubles: the fast paths' common case. */
        double x = 0;
        for (int i = 0; i < 1000; i++) {
            if (rank == 0) {
                x = i;
                CHECK_RC(MPI_Send(&x, 1, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD));
                CHECK_RC(MPI_Recv(&x, 1, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, &st));
                CHECK(x == i + 0.5 && st.MPI_SOURCE == 1 && st.MPI_TAG == 5);
            } else {
                CHECK_RC(MPI_Recv(&x, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, &st));
                CHECK(x == i && st.MPI_SOURCE == 0 && st.MPI_TAG == 5);
                x += 0.5;
                CHECK_RC(MPI_Send(&x, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD));
            }
        }
        unsigned long long sends = readp(ps, hs), recvs = readp(ps, hr);
        /* Nothing stands in a ping-pong's sends' way; a receive takes the
         * fast path if its message comes while it polls, which it does
         * only while ranks do not outnumber cores (shmpi_wait_mode 1). */
        CHECK(sends == 1000);
        CHECK(recvs <= 1000);
        if (wait_spins())
            CHECK(recvs > 0);

        /* Every size from 0 to 40 bytes, each way, in a ping-pong and
         * then streamed (short records up to 12 bytes), received by
         * MPI_Recv and by MPI_Irecv (the general path) in turn. The byte
         * at 11 has its top bit set: the guard of a full record. */
        unsigned char out[64], in[64];
        for (int stream = 0; stream < 2; stream++)
            for (int sz = 0; sz <= 40; sz++) {
                int reps = stream ? 6 : 1;
                for (int turn = 0; turn < 2; turn++) {
                    if (rank == turn) {
                        for (int k = 0; k < reps; k++) {
                            for (int i = 0; i < sz; i++)
                                out[i] = pattern(sz, i, k);
                            CHECK_RC(MPI_Send(out, sz, MPI_BYTE, peer, 100 + sz, MPI_COMM_WORLD));
                        }
                    } else {
                        for (int k = 0; k < reps; k++) {
                            memset(in, 0xee, sizeof in);
                            if (k % 2 == 0) {
                                st.MPI_ERROR = 12345;
                                CHECK_RC(MPI_Recv(in, 64, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                                CHECK(st.MPI_ERROR == 12345); /* left alone, as MPI says */
                            } else {
                                MPI_Request rq;
                                CHECK_RC(MPI_Irecv(in, 64, MPI_BYTE, peer, 100 + sz, MPI_COMM_WORLD, &rq));
                                CHECK_RC(MPI_Wait(&rq, &st));
                            }
                            int n = -1;
                            MPI_Get_count(&st, MPI_BYTE, &n);
                            CHECK(n == sz && st.MPI_SOURCE == peer && st.MPI_TAG == 100 + sz);
                            for (int i = 0; i < sz; i++)
                                CHECK(in[i] == pattern(sz, i, k));
                            CHECK(in[sz] == 0xee);
                        }
                    }
                }
            }

        /* Order: a large send of the general path (a rendezvous, still
         * running) and small sends behind it arrive in order. */
        enum { BIG = 1 << 20 };
        char *big = malloc(BIG);
        int v;
        if (rank == 0) {
            for (int i = 0; i < BIG; i++)
                big[i] = (char)i;
            MPI_Request rq;
            CHECK_RC(MPI_Isend(big, BIG, MPI_CHAR, 1, 7, MPI_COMM_WORLD, &rq));
            for (v = 0; v < 3; v++)
                CHECK_RC(MPI_Send(&v, 1, MPI_INT, 1, 7, MPI_COMM_WORLD));
            CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        } else {
            CHECK_RC(MPI_Recv(big, BIG, MPI_CHAR, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            int n;
            MPI_Get_count(&st, MPI_CHAR, &n);
            CHECK(n == BIG);
            for (int i = 0; i < BIG; i++)
                CHECK(big[i] == (char)i);
            for (int i = 0; i < 3; i++) {
                CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, &st));
                CHECK(v == i);
            }
        }
        free(big);

        /* Order behind sends queued for room: rank 1 stays out of MPI
         * (blocked reading a FIFO) while rank 0 fills its inbox with
         * MPI_Isend, so that the rest of them wait in rank 0's send
         * queue. Then rank 1 receives a few, making room, and says so
         * through a second FIFO: rank 0's MPI_Send must still go behind
         * the queued sends, not into that room. */
        char fifo[2][64];
        if (rank == 0)
            for (int k = 0; k < 2; k++)
                snprintf(fifo[k], sizeof fifo[k], "/tmp/shmpi-fastpath-%d-%d", (int)getpid(), k);
        CHECK_RC(MPI_Bcast(fifo, sizeof fifo, MPI_CHAR, 0, pair));
        enum { QUEUED = 1500, FIRST = 10 };
        char c = 'x';
        if (rank == 0) {
            CHECK_RC(MPI_Barrier(pair)); /* the FIFOs exist */
            static int vals[QUEUED];
            static MPI_Request rqs[QUEUED];
            for (int i = 0; i < QUEUED; i++) {
                vals[i] = i;
                CHECK_RC(MPI_Isend(&vals[i], 1, MPI_INT, 1, 13, MPI_COMM_WORLD, &rqs[i]));
            }
            int fd = open(fifo[0], O_WRONLY);
            CHECK(fd >= 0 && write(fd, &c, 1) == 1);
            close(fd);
            fd = open(fifo[1], O_RDONLY);
            CHECK(fd >= 0 && read(fd, &c, 1) == 1);
            close(fd);
            v = QUEUED;
            CHECK_RC(MPI_Send(&v, 1, MPI_INT, 1, 13, MPI_COMM_WORLD));
            CHECK_RC(MPI_Waitall(QUEUED, rqs, MPI_STATUSES_IGNORE));
        } else {
            for (int k = 0; k < 2; k++)
                CHECK(mkfifo(fifo[k], 0600) == 0);
            CHECK_RC(MPI_Barrier(pair));
            int fd = open(fifo[0], O_RDONLY);
            unlink(fifo[0]);
            CHECK(fd >= 0 && read(fd, &c, 1) == 1);
            close(fd);
            for (int i = 0; i <= QUEUED; i++) {
                if (i == FIRST) {
                    fd = open(fifo[1], O_WRONLY);
                    unlink(fifo[1]);
                    CHECK(fd >= 0 && write(fd, &c, 1) == 1);
                    close(fd);
                }
                CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 13, MPI_COMM_WORLD, &st));
                CHECK(v == i);
            }
        }

        /* A receive posted first (MPI_Irecv) takes the next matching
         * message even though a later MPI_Recv would match it too. */
        if (rank == 0) {
            for (v = 10; v < 12; v++)
                CHECK_RC(MPI_Send(&v, 1, MPI_INT, 1, 8, MPI_COMM_WORLD));
        } else {
            int a = -1, b = -1;
            MPI_Request rq;
            CHECK_RC(MPI_Irecv(&a, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, &rq));
            CHECK_RC(MPI_Recv(&b, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, &st));
            CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE));
            CHECK(a == 10 && b == 11);
        }

        /* Truncation is an error of the receive; the message is gone. */
        if (rank == 0) {
            long long w[2] = {1, 2};
            CHECK_RC(MPI_Send(w, 2, MPI_LONG_LONG, 1, 9, MPI_COMM_WORLD));
        } else {
            long long w[2] = {0, 0};
            int rc = MPI_Recv(w, 1, MPI_LONG_LONG, 0, 9, MPI_COMM_WORLD, &st);
            int cls = -1;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE && w[0] == 1 && w[1] == 0);
        }

        /* Derived types: contiguous ints (plain), and two ints 4 bytes
         * past the buffer's address (data at an offset: the general
         * path). */
        MPI_Datatype t2, tshift;
        CHECK_RC(MPI_Type_contiguous(2, MPI_INT, &t2));
        CHECK_RC(MPI_Type_commit(&t2));
        int blen = 2;
        MPI_Aint disp = 4;
        CHECK_RC(MPI_Type_create_hindexed(1, &blen, &disp, MPI_INT, &tshift));
        int ints[4] = {rank * 10 + 1, rank * 10 + 2, rank * 10 + 3, rank * 10 + 4}, got[4] = {0, 0, 0, 0};
        /* Not committed yet: an error on either path. */
        int rc = MPI_Send(ints, 1, tshift, peer, 11, MPI_COMM_WORLD), cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TYPE);
        CHECK_RC(MPI_Type_commit(&tshift));
        if (rank == 0) {
            CHECK_RC(MPI_Send(ints, 2, t2, 1, 10, MPI_COMM_WORLD));
            CHECK_RC(MPI_Send(ints, 1, tshift, 1, 11, MPI_COMM_WORLD));
        } else {
            CHECK_RC(MPI_Recv(got, 2, t2, 0, 10, MPI_COMM_WORLD, &st));
            CHECK(got[0] == 1 && got[1] == 2 && got[2] == 3 && got[3] == 4);
            memset(got, 0, sizeof got);
            CHECK_RC(MPI_Recv(got, 1, tshift, 0, 11, MPI_COMM_WORLD, &st));
            CHECK(got[0] == 0 && got[1] == 2 && got[2] == 3 && got[3] == 0);
        }
        MPI_Type_free(&t2);
        MPI_Type_free(&tshift);
        MPI_Comm_free(&pair);

        /* To itself (the general path), and to and from MPI_PROC_NULL. */
        v = 42 + rank;
        int w2 = -1;
        CHECK_RC(MPI_Send(&v, 1, MPI_INT, rank, 12, MPI_COMM_WORLD));
        CHECK_RC(MPI_Recv(&w2, 1, MPI_INT, rank, 12, MPI_COMM_WORLD, &st));
        CHECK(w2 == v && st.MPI_SOURCE == rank);
        CHECK_RC(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 12, MPI_COMM_WORLD));
        CHECK_RC(MPI_Recv(&w2, 1, MPI_INT, MPI_PROC_NULL, 12, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL);

        /* Bad arguments get their classes. */
        rc = MPI_Send(&v, 1, MPI_INT, size, 1, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RANK);
        rc = MPI_Send(&v, 1, MPI_INT, peer, -5, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TAG);
        rc = MPI_Send(&v, -1, MPI_INT, peer, 1, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_COUNT);
        rc = MPI_Recv(&v, 1, MPI_DATATYPE_NULL, peer, 1, MPI_COMM_WORLD, &st);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TYPE);
    }

    /* A duplicate carries its own messages; once freed, its handle is
     * refused (at every rank: the duplication is collective). */
    MPI_Comm dup, stale;
    CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    int v = 0, rc, cls;
    if (rank == 0) {
        v = 7;
        CHECK_RC(MPI_Send(&v, 1, MPI_INT, 1, 1, dup));
        v = 8;
        CHECK_RC(MPI_Send(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD));
    } else if (rank == 1) {
        CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &st));
        CHECK(v == 8);
        CHECK_RC(MPI_Recv(&v, 1, MPI_INT, 0, 1, dup, &st));
        CHECK(v == 7);
    }
    stale = dup;
    CHECK_RC(MPI_Comm_free(&dup));
    rc = MPI_Send(&v, 1, MPI_INT, rank == 0, 1, stale);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM);
    rc = MPI_Recv(&v, 1, MPI_INT, rank == 0, 1, stale, &st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM);
    /* After all those calls into Go the fast paths still run (their
     * thread still owns the engine lock's bias), every time. */
    if (rank < 2) {
        unsigned long long before = readp(ps, hs);
        double x = 1;
        for (int i = 0; i < 100; i++) {
            if (rank == 0) {
                CHECK_RC(MPI_Send(&x, 1, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD));
                CHECK_RC(MPI_Recv(&x, 1, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, &st));
            } else {
                CHECK_RC(MPI_Recv(&x, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD, &st));
                x *= 2;
                CHECK_RC(MPI_Send(&x, 1, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD));
            }
        }
        CHECK(readp(ps, hs) == before + 100);
        CHECK(rank == 1 || x == 0x1p100);
    }
    /* The other ranks finalize only now: a rank's end is a change that
     * sends the next message of every rank through the general path. */
    CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
    MPI_T_pvar_stop(ps, MPI_T_PVAR_ALL_HANDLES);
    MPI_T_pvar_handle_free(ps, &hs);
    MPI_T_pvar_handle_free(ps, &hr);
    MPI_T_pvar_session_free(&ps);
    MPI_T_finalize();
    DONE();
}
