/* Point-to-point calls over the Go API's newer operations: matched
 * probes (from several threads), Isendrecv and Isendrecv_replace with
 * derived types, Sendrecv_replace, MPI_Request_get_status and its _all,
 * _any and _some forms, buffered sends (process and communicator
 * buffers, flush, MPI_BUFFER_AUTOMATIC, Bsend_init, a buffer too small)
 * and large-count forms. Run on 2 or more ranks. */
#include "check.h"
#include <pthread.h>

enum { THREADS = 3, PERTHREAD = 200 };
static int rank, size;

/* Each thread takes PERTHREAD messages from rank 1 with Mprobe (or
 * Improbe) and Mrecv; message k holds its own length in its first int,
 * so a receive of another message than the probed one shows. */
static int seen[THREADS * PERTHREAD];

static void *prober(void *arg)
{
    int t = (int)(long)arg;
    for (int i = 0; i < PERTHREAD; i++) {
        MPI_Message m;
        MPI_Status st;
        if (t == 0) {
            int flag = 0;
            while (!flag)
                CHECK_RC(MPI_Improbe(1, 5, MPI_COMM_WORLD, &flag, &m, &st));
        } else {
            CHECK_RC(MPI_Mprobe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &m, &st));
        }
        int n;
        MPI_Get_count(&st, MPI_INT, &n);
        int *buf = malloc(sizeof(int) * n);
        MPI_Status st2;
        CHECK_RC(MPI_Mrecv(buf, n, MPI_INT, &m, &st2));
        int n2;
        MPI_Get_count(&st2, MPI_INT, &n2);
        CHECK(m == MPI_MESSAGE_NULL && n2 == n && buf[0] == n && st2.MPI_SOURCE == 1);
        __atomic_add_fetch(&seen[buf[1]], 1, __ATOMIC_SEQ_CST);
        free(buf);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Status st;

    /* A matched message is out of matching: a receive between the probe
     * and Mrecv gets the next message. */
    if (rank == 1) {
        int a = 111, b = 222;
        MPI_Send(&a, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
        MPI_Send(&b, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Message m;
        int x = 0, y = 0;
        CHECK_RC(MPI_Mprobe(1, 7, MPI_COMM_WORLD, &m, &st));
        CHECK_RC(MPI_Recv(&y, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, &st));
        CHECK_RC(MPI_Mrecv(&x, 1, MPI_INT, &m, &st));
        CHECK(x == 111 && y == 222);
        /* A probe of MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC. */
        CHECK_RC(MPI_Mprobe(MPI_PROC_NULL, 7, MPI_COMM_WORLD, &m, &st));
        CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL);
        MPI_Request r;
        CHECK_RC(MPI_Imrecv(&x, 1, MPI_INT, &m, &r));
        CHECK_RC(MPI_Wait(&r, &st));
        CHECK(st.MPI_SOURCE == MPI_PROC_NULL && m == MPI_MESSAGE_NULL);
        /* A spent message handle is an error. */
        int e = MPI_Mrecv(&x, 1, MPI_INT, &m, &st), cls;
        MPI_Error_class(e, &cls);
        CHECK(e != MPI_SUCCESS);
    }

    /* Matched probes from several threads at once. */
    if (rank == 1) {
        int buf[20];
        for (int k = 0; k < THREADS * PERTHREAD; k++) {
            int n = 2 + k % 17;
            buf[0] = n, buf[1] = k;
            CHECK_RC(MPI_Send(buf, n, MPI_INT, 0, 5, MPI_COMM_WORLD));
        }
    } else if (rank == 0) {
        pthread_t th[THREADS];
        for (long t = 0; t < THREADS; t++)
            pthread_create(&th[t], NULL, prober, (void *)t);
        for (int t = 0; t < THREADS; t++)
            pthread_join(th[t], NULL);
        for (int k = 0; k < THREADS * PERTHREAD; k++)
            CHECK(seen[k] == 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Isendrecv around the ring: 4 doubles from every other one, into
     * a contiguous block; Isendrecv_replace with the strided type. */
    MPI_Datatype every2;
    MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &every2);
    MPI_Type_commit(&every2);
    double out[8], in[4] = {0}, rep[8];
    for (int i = 0; i < 8; i++)
        out[i] = rank * 10 + i, rep[i] = rank * 10 + i;
    MPI_Request r;
    CHECK_RC(MPI_Isendrecv(out, 1, every2, right, 9, in, 4, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, &r));
    CHECK_RC(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 9);
    for (int i = 0; i < 4; i++)
        CHECK(in[i] == left * 10 + 2 * i);
    CHECK_RC(MPI_Isendrecv_replace(rep, 1, every2, right, 10, left, 10, MPI_COMM_WORLD, &r));
    CHECK_RC(MPI_Wait(&r, &st));
    for (int i = 0; i < 8; i++)
        CHECK(rep[i] == (i % 2 ? rank : left) * 10 + i);
    CHECK_RC(MPI_Sendrecv_replace(rep, 1, every2, right, 11, left, 11, MPI_COMM_WORLD, &st));
    int l2 = (left + size - 1) % size;
    for (int i = 0; i < 8; i += 2)
        CHECK(rep[i] == l2 * 10 + i);
    long long big = rank, bigin = -1;
    CHECK_RC(MPI_Isendrecv_c(&big, (MPI_Count)1, MPI_LONG_LONG, right, 12, &bigin, (MPI_Count)1, MPI_LONG_LONG, left, 12, MPI_COMM_WORLD, &r));
    CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(bigin == left);
    CHECK_RC(MPI_Sendrecv_replace_c(&big, (MPI_Count)1, MPI_LONG_LONG, right, 13, left, 13, MPI_COMM_WORLD, &st));
    CHECK(big == left);

    /* Request_get_status and friends: a receive whose message is sent
     * only after a barrier is not complete before it. */
    int gv = -1, one = rank;
    MPI_Request g[3];
    CHECK_RC(MPI_Irecv(&gv, 1, MPI_INT, left, 20, MPI_COMM_WORLD, &g[0]));
    g[1] = MPI_REQUEST_NULL;
    CHECK_RC(MPI_Irecv(&gv, 0, MPI_INT, MPI_PROC_NULL, 20, MPI_COMM_WORLD, &g[2]));
    int flag = -1, idx = -1, outc = -1, idxs[3];
    MPI_Status sts[3];
    CHECK_RC(MPI_Request_get_status(g[0], &flag, &st));
    CHECK(flag == 0);
    CHECK_RC(MPI_Request_get_status_all(3, g, &flag, sts));
    CHECK(flag == 0);
    /* The MPI_PROC_NULL receive is complete: _any and _some find it and
     * leave it valid. */
    CHECK_RC(MPI_Request_get_status_any(2, &g[1], &idx, &flag, &st));
    CHECK(flag == 1 && idx == 1 && st.MPI_SOURCE == MPI_PROC_NULL && g[2] != MPI_REQUEST_NULL);
    CHECK_RC(MPI_Request_get_status_some(3, g, &outc, idxs, sts));
    CHECK(outc == 1 && idxs[0] == 2);
    CHECK_RC(MPI_Wait(&g[2], MPI_STATUS_IGNORE));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_Send(&one, 1, MPI_INT, right, 20, MPI_COMM_WORLD));
    flag = 0;
    while (!flag)
        CHECK_RC(MPI_Request_get_status_all(3, g, &flag, sts));
    CHECK(sts[0].MPI_SOURCE == left && sts[1].MPI_SOURCE == MPI_ANY_SOURCE && gv == left);
    CHECK(g[0] != MPI_REQUEST_NULL);
    CHECK_RC(MPI_Request_get_status_any(3, g, &idx, &flag, &st));
    CHECK(flag && idx == 0 && st.MPI_SOURCE == left);
    CHECK_RC(MPI_Wait(&g[0], &st));
    CHECK(st.MPI_SOURCE == left && g[0] == MPI_REQUEST_NULL);
    CHECK_RC(MPI_Request_get_status_some(3, g, &outc, idxs, sts));
    CHECK(outc == MPI_UNDEFINED);

    /* Buffered sends of rendezvous-sized messages, which wait in the
     * attached buffer until their receiver takes them. */
    enum { BN = 1 << 16 };
    double *bout = malloc(sizeof(double) * BN), *bin = malloc(sizeof(double) * BN);
    for (int i = 0; i < BN; i++)
        bout[i] = rank + i;
    int bsz = 3 * (BN * (int)sizeof(double) + MPI_BSEND_OVERHEAD);
    void *bbuf = malloc(bsz);
    CHECK_RC(MPI_Buffer_attach(bbuf, bsz));
    int e = MPI_Buffer_attach(bbuf, bsz), cls;
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_BUFFER);
    for (int k = 0; k < 3; k++)
        CHECK_RC(MPI_Bsend(bout, BN, MPI_DOUBLE, right, 30 + k, MPI_COMM_WORLD));
    /* The buffer is full (nobody receives before the barrier): a fourth
     * is MPI_ERR_BUFFER, and nothing is sent. A receiver on another node
     * (under shmnode) may have had the three taken by its node's agent
     * already, which frees the buffer: then the fourth may go too, and
     * the receiver is told so. */
    MPI_Comm bnode;
    MPI_Group bng, bwg;
    int rnode;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &bnode);
    MPI_Comm_group(bnode, &bng);
    MPI_Comm_group(MPI_COMM_WORLD, &bwg);
    MPI_Group_translate_ranks(bwg, 1, &right, bng, &rnode);
    e = MPI_Bsend(bout, BN, MPI_DOUBLE, right, 39, MPI_COMM_WORLD);
    MPI_Error_class(e, &cls);
    int sent4 = e == MPI_SUCCESS, got4;
    CHECK(cls == MPI_ERR_BUFFER || (rnode == MPI_UNDEFINED && sent4));
    CHECK_RC(MPI_Send(&sent4, 1, MPI_INT, right, 38, MPI_COMM_WORLD));
    MPI_Group_free(&bng);
    MPI_Group_free(&bwg);
    MPI_Comm_free(&bnode);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 3; k++) {
        CHECK_RC(MPI_Recv(bin, BN, MPI_DOUBLE, left, 30 + k, MPI_COMM_WORLD, &st));
        CHECK(bin[BN - 1] == left + BN - 1);
    }
    CHECK_RC(MPI_Recv(&got4, 1, MPI_INT, left, 38, MPI_COMM_WORLD, &st));
    if (got4)
        CHECK_RC(MPI_Recv(bin, BN, MPI_DOUBLE, left, 39, MPI_COMM_WORLD, &st));
    CHECK_RC(MPI_Buffer_flush());
    /* Persistent buffered sends, started three times. */
    MPI_Request pb;
    CHECK_RC(MPI_Bsend_init(bout, BN, MPI_DOUBLE, right, 40, MPI_COMM_WORLD, &pb));
    for (int k = 0; k < 3; k++) {
        bout[0] = k;
        CHECK_RC(MPI_Start(&pb));
        CHECK_RC(MPI_Wait(&pb, MPI_STATUS_IGNORE));
        CHECK_RC(MPI_Recv(bin, BN, MPI_DOUBLE, left, 40, MPI_COMM_WORLD, &st));
        CHECK(bin[0] == k);
    }
    MPI_Request_free(&pb);
    /* They stay in the buffer until they are transmitted, which a
     * receive of ours does not wait for (to a rank of another node, until
     * its agent took them): make room for the next. */
    CHECK_RC(MPI_Buffer_flush());
    void *got;
    int gotsz;
    CHECK_RC(MPI_Ibsend(bout, BN, MPI_DOUBLE, right, 41, MPI_COMM_WORLD, &r));
    CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK_RC(MPI_Recv(bin, BN, MPI_DOUBLE, left, 41, MPI_COMM_WORLD, &st));
    CHECK_RC(MPI_Buffer_detach(&got, &gotsz));
    CHECK(got == bbuf && gotsz == bsz);
    /* Without a buffer a message that must wait is MPI_ERR_BUFFER. */
    e = MPI_Bsend(bout, BN, MPI_DOUBLE, right, 42, MPI_COMM_WORLD);
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_BUFFER);

    /* A communicator's own buffer; the automatic one. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    CHECK_RC(MPI_Comm_attach_buffer(dup, bbuf, bsz));
    CHECK_RC(MPI_Bsend_c(bout, (MPI_Count)BN, MPI_DOUBLE, right, 43, dup));
    CHECK_RC(MPI_Recv_c(bin, (MPI_Count)BN, MPI_DOUBLE, left, 43, dup, &st));
    CHECK_RC(MPI_Comm_flush_buffer(dup));
    MPI_Count gotc;
    CHECK_RC(MPI_Comm_detach_buffer_c(dup, &got, &gotc));
    CHECK(got == bbuf && gotc == bsz);
    CHECK_RC(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0));
    for (int k = 0; k < 3; k++)
        CHECK_RC(MPI_Bsend(bout, BN, MPI_DOUBLE, right, 44, MPI_COMM_WORLD));
    for (int k = 0; k < 3; k++)
        CHECK_RC(MPI_Recv(bin, BN, MPI_DOUBLE, left, 44, MPI_COMM_WORLD, &st));
    CHECK_RC(MPI_Buffer_detach(&got, &gotsz));
    CHECK(got == MPI_BUFFER_AUTOMATIC && gotsz == 0);
    MPI_Comm_free(&dup);
    free(bbuf);

    /* Large-count sends. */
    CHECK_RC(MPI_Issend_c(&big, (MPI_Count)1, MPI_LONG_LONG, right, 50, MPI_COMM_WORLD, &r));
    CHECK_RC(MPI_Recv(&bigin, 1, MPI_LONG_LONG, left, 50, MPI_COMM_WORLD, &st));
    CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_Request pr;
    CHECK_RC(MPI_Send_init_c(&big, (MPI_Count)1, MPI_LONG_LONG, right, 51, MPI_COMM_WORLD, &pr));
    CHECK_RC(MPI_Start(&pr));
    CHECK_RC(MPI_Recv(&bigin, 1, MPI_LONG_LONG, left, 51, MPI_COMM_WORLD, &st));
    CHECK_RC(MPI_Wait(&pr, MPI_STATUS_IGNORE));
    MPI_Request_free(&pr);
    CHECK_RC(MPI_Rsend_c(&big, (MPI_Count)1, MPI_LONG_LONG, right, 52, MPI_COMM_WORLD));
    MPI_Message m;
    CHECK_RC(MPI_Mprobe(left, 52, MPI_COMM_WORLD, &m, &st));
    bigin = -1;
    CHECK_RC(MPI_Mrecv_c(&bigin, (MPI_Count)1, MPI_LONG_LONG, &m, &st));
    CHECK(bigin == l2 && m == MPI_MESSAGE_NULL);
    free(bout);
    free(bin);
    MPI_Type_free(&every2);
    MPI_Barrier(MPI_COMM_WORLD);
    DONE();
}
