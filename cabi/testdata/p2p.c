/* Point-to-point: blocking, nonblocking, persistent, probes, matched
 * probes, wildcards, MPI_PROC_NULL, counts, buffered and synchronous
 * sends, cancel, and the Wait and Test families. */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* A ring of doubles with Sendrecv; the status and Get_count. */
    double out[100], in[100];
    for (int i = 0; i < 100; i++)
        out[i] = rank * 1000 + i;
    CHECK_RC(MPI_Sendrecv(out, 100, MPI_DOUBLE, right, 5, in, 100, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 5);
    int n;
    MPI_Get_count(&st, MPI_DOUBLE, &n);
    CHECK(n == 100);
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK(n == 800);
    MPI_Get_count(&st, MPI_LONG_DOUBLE, &n);
    CHECK(n == 50);
    for (int i = 0; i < 100; i++)
        CHECK(in[i] == left * 1000 + i);

    /* Nonblocking, many at once, large and small, Waitall. */
    enum { BIG = 1 << 20 };
    char *big_out = malloc(BIG), *big_in = malloc(BIG);
    for (int i = 0; i < BIG; i++)
        big_out[i] = (char)(i * 7 + rank);
    MPI_Request rq[4];
    int small_in = -1, small_out = rank;
    CHECK_RC(MPI_Irecv(big_in, BIG, MPI_CHAR, left, 1, MPI_COMM_WORLD, &rq[0]));
    CHECK_RC(MPI_Irecv(&small_in, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &rq[1]));
    CHECK_RC(MPI_Isend(big_out, BIG, MPI_CHAR, right, 1, MPI_COMM_WORLD, &rq[2]));
    CHECK_RC(MPI_Isend(&small_out, 1, MPI_INT, right, 2, MPI_COMM_WORLD, &rq[3]));
    MPI_Status sts[4];
    CHECK_RC(MPI_Waitall(4, rq, sts));
    for (int i = 0; i < 4; i++)
        CHECK(rq[i] == MPI_REQUEST_NULL);
    CHECK(small_in == left);
    for (int i = 0; i < BIG; i++)
        if (big_in[i] != (char)(i * 7 + left))
            CHECK(0);
    MPI_Get_count(&sts[0], MPI_CHAR, &n);
    CHECK(n == BIG && sts[0].MPI_SOURCE == left && sts[0].MPI_TAG == 1);

    /* Wildcards: rank 0 receives one message from every other rank. */
    if (rank == 0) {
        int seen = 0;
        for (int k = 1; k < size; k++) {
            int v;
            CHECK_RC(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK(st.MPI_TAG == 100 + st.MPI_SOURCE);
            MPI_Get_count(&st, MPI_INT, &n);
            CHECK(n == 1);
            CHECK_RC(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK(v == st.MPI_SOURCE * 3);
            seen |= 1 << st.MPI_SOURCE;
        }
        CHECK(seen == ((1 << size) - 2));
    } else {
        int v = rank * 3;
        CHECK_RC(MPI_Ssend(&v, 1, MPI_INT, 0, 100 + rank, MPI_COMM_WORLD));
    }
    /* Later messages must not reach rank 0's wildcard receives. */
    MPI_Barrier(MPI_COMM_WORLD);

    /* MPI_PROC_NULL: completes at once with the null status. */
    CHECK_RC(MPI_Recv(in, 10, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
    MPI_Get_count(&st, MPI_DOUBLE, &n);
    CHECK(n == 0);
    CHECK_RC(MPI_Send(out, 10, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD));

    /* Persistent requests, started three times. */
    int pin = -1, pout;
    MPI_Request pr[2];
    CHECK_RC(MPI_Recv_init(&pin, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &pr[0]));
    CHECK_RC(MPI_Send_init(&pout, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &pr[1]));
    for (int it = 0; it < 3; it++) {
        pout = rank * 10 + it;
        CHECK_RC(MPI_Startall(2, pr));
        CHECK_RC(MPI_Waitall(2, pr, MPI_STATUSES_IGNORE));
        CHECK(pr[0] != MPI_REQUEST_NULL);
        CHECK(pin == left * 10 + it);
    }
    MPI_Request_free(&pr[0]);
    MPI_Request_free(&pr[1]);
    CHECK(pr[0] == MPI_REQUEST_NULL);

    /* Persistent requests outlive their communicator's MPI_Comm_free
     * (MPI deallocates it once nothing refers to it): a vector type,
     * so that each start packs and unpacks. */
    {
        MPI_Comm dc;
        MPI_Datatype every2;
        int vin[4] = {-1, -1, -1, -1}, vout[4];
        CHECK_RC(MPI_Type_vector(2, 1, 2, MPI_INT, &every2));
        CHECK_RC(MPI_Type_commit(&every2));
        CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &dc));
        CHECK_RC(MPI_Recv_init(vin, 1, every2, left, 9, dc, &pr[0]));
        CHECK_RC(MPI_Send_init(vout, 1, every2, right, 9, dc, &pr[1]));
        CHECK_RC(MPI_Comm_free(&dc));
        CHECK(dc == MPI_COMM_NULL);
        for (int it = 0; it < 3; it++) {
            for (int i = 0; i < 4; i++)
                vout[i] = rank * 100 + it * 10 + i;
            CHECK_RC(MPI_Startall(2, pr));
            CHECK_RC(MPI_Waitall(2, pr, MPI_STATUSES_IGNORE));
            CHECK(vin[0] == left * 100 + it * 10 && vin[2] == left * 100 + it * 10 + 2);
            CHECK(vin[1] == -1 && vin[3] == -1);
        }
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
        MPI_Type_free(&every2);
    }

    /* Waitany, Testany, Waitsome. */
    int vals[3] = {-1, -1, -1}, mine[3] = {rank, rank + 1, rank + 2};
    MPI_Request r3[3], s3[3];
    for (int i = 0; i < 3; i++) {
        MPI_Irecv(&vals[i], 1, MPI_INT, left, 20 + i, MPI_COMM_WORLD, &r3[i]);
        MPI_Isend(&mine[i], 1, MPI_INT, right, 20 + i, MPI_COMM_WORLD, &s3[i]);
    }
    int done = 0;
    while (done < 3) {
        int idx;
        CHECK_RC(MPI_Waitany(3, r3, &idx, &st));
        CHECK(idx >= 0 && idx < 3 && r3[idx] == MPI_REQUEST_NULL && st.MPI_TAG == 20 + idx);
        done++;
    }
    int idx;
    CHECK_RC(MPI_Waitany(3, r3, &idx, &st));
    CHECK(idx == MPI_UNDEFINED);
    for (int i = 0; i < 3; i++)
        CHECK(vals[i] == left + i);
    int outcount, idxs[3];
    int waited = 0;
    while (waited < 3) {
        CHECK_RC(MPI_Waitsome(3, s3, &outcount, idxs, MPI_STATUSES_IGNORE));
        CHECK(outcount != MPI_UNDEFINED);
        waited += outcount;
    }
    CHECK_RC(MPI_Waitsome(3, s3, &outcount, idxs, MPI_STATUSES_IGNORE));
    CHECK(outcount == MPI_UNDEFINED);

    /* Test until done; Testall. */
    MPI_Request t[2];
    int tv = -1, flag = 0;
    MPI_Irecv(&tv, 1, MPI_INT, left, 30, MPI_COMM_WORLD, &t[0]);
    MPI_Isend(&rank, 1, MPI_INT, right, 30, MPI_COMM_WORLD, &t[1]);
    while (!flag)
        CHECK_RC(MPI_Testall(2, t, &flag, MPI_STATUSES_IGNORE));
    CHECK(tv == left && t[0] == MPI_REQUEST_NULL);

    /* Matched probe. */
    int mv = rank + 50, mr = -1;
    MPI_Message msg;
    MPI_Isend(&mv, 1, MPI_INT, right, 40, MPI_COMM_WORLD, &t[1]);
    CHECK_RC(MPI_Mprobe(left, 40, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg != MPI_MESSAGE_NULL && st.MPI_SOURCE == left);
    CHECK_RC(MPI_Mrecv(&mr, 1, MPI_INT, &msg, &st));
    CHECK(mr == left + 50 && msg == MPI_MESSAGE_NULL);
    MPI_Wait(&t[1], MPI_STATUS_IGNORE);

    /* Iprobe eventually sees a message. */
    MPI_Isend(&mv, 1, MPI_INT, right, 41, MPI_COMM_WORLD, &t[1]);
    flag = 0;
    while (!flag)
        CHECK_RC(MPI_Iprobe(left, 41, MPI_COMM_WORLD, &flag, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 41);
    MPI_Recv(&mr, 1, MPI_INT, left, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&t[1], MPI_STATUS_IGNORE);

    /* Cancel a receive that nothing matches. */
    MPI_Request cr;
    MPI_Irecv(&mr, 1, MPI_INT, left, 999, MPI_COMM_WORLD, &cr);
    CHECK_RC(MPI_Cancel(&cr));
    CHECK_RC(MPI_Wait(&cr, &st));
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag);

    /* Buffered sends. */
    int bsz = 4 * (sizeof(double) * 100 + MPI_BSEND_OVERHEAD);
    void *bbuf = malloc(bsz);
    CHECK_RC(MPI_Buffer_attach(bbuf, bsz));
    for (int k = 0; k < 3; k++)
        CHECK_RC(MPI_Bsend(out, 100, MPI_DOUBLE, right, 50 + k, MPI_COMM_WORLD));
    for (int k = 0; k < 3; k++) {
        /* A call that completes one request leaves the error field. */
        st.MPI_ERROR = MPI_ERR_DIMS;
        CHECK_RC(MPI_Recv(in, 100, MPI_DOUBLE, left, 50 + k, MPI_COMM_WORLD, &st));
        CHECK(in[99] == left * 1000 + 99 && st.MPI_ERROR == MPI_ERR_DIMS);
    }
    void *got;
    int gotsz;
    CHECK_RC(MPI_Buffer_detach(&got, &gotsz));
    CHECK(got == bbuf && gotsz == bsz);
    free(bbuf);

    /* Truncation is an error (returned: MPI_ERRORS_RETURN). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Send(out, 10, MPI_DOUBLE, right, 60, MPI_COMM_WORLD);
    int rc = MPI_Recv(in, 5, MPI_DOUBLE, left, 60, MPI_COMM_WORLD, &st);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE);

    free(big_in);
    free(big_out);
    MPI_Barrier(MPI_COMM_WORLD);
    DONE();
}
