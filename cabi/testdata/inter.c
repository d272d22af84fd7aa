/* Intercommunicators: MPI_Intercomm_create between the even and the odd
 * world ranks, test_inter, remote size and group, point-to-point to the
 * remote group, collectives with MPI_ROOT and MPI_PROC_NULL roots
 * (blocking, nonblocking, persistent, a user op), Intercomm_merge, dup,
 * idup and compare. Run on 2 or more ranks. */
#include "check.h"

typedef struct {
    int a, b, c, d;
} mat;

static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    mat *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        mat r = {x[i].a * y[i].a + x[i].b * y[i].c, x[i].a * y[i].b + x[i].b * y[i].d,
                 x[i].c * y[i].a + x[i].d * y[i].c, x[i].c * y[i].b + x[i].d * y[i].d};
        y[i] = r;
    }
}

static mat matof(int r) { return (mat){1, r + 1, 0, 1 + (r & 1)}; }

int main(int argc, char **argv)
{
    int wrank, wsize;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int color = wrank % 2;
    /* The world ranks of group g's member i: 2i+g. */
    int gsize[2] = {(wsize + 1) / 2, wsize / 2};
    MPI_Comm local, inter;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, color, wrank, &local));
    CHECK_RC(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 99, &inter));
    int flag, lsize, lrank, rsize;
    CHECK_RC(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag == 1);
    CHECK_RC(MPI_Comm_test_inter(local, &flag));
    CHECK(flag == 0);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_rank(inter, &lrank);
    CHECK_RC(MPI_Comm_remote_size(inter, &rsize));
    CHECK(lsize == gsize[color] && rsize == gsize[1 - color] && lrank == wrank / 2);
    int e = MPI_Comm_remote_size(local, &flag), cls;
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_COMM);
    MPI_Group rg, wg;
    CHECK_RC(MPI_Comm_remote_group(inter, &rg));
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int gs, *in = malloc(sizeof(int) * wsize), *out = malloc(sizeof(int) * wsize);
    MPI_Group_size(rg, &gs);
    CHECK(gs == rsize);
    for (int i = 0; i < rsize; i++)
        in[i] = i;
    MPI_Group_translate_ranks(rg, rsize, in, wg, out);
    for (int i = 0; i < rsize; i++)
        CHECK(out[i] == 2 * i + 1 - color);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);

    /* Point-to-point: ranks are the remote group's. */
    if (lrank < rsize) {
        int v = wrank, got = -1;
        MPI_Status st;
        CHECK_RC(MPI_Sendrecv(&v, 1, MPI_INT, lrank, 1, &got, 1, MPI_INT, lrank, 1, inter, &st));
        CHECK(got == 2 * lrank + 1 - color && st.MPI_SOURCE == lrank);
    }

    /* Bcast from group 0's member 0; Reduce to group 1's member 0. */
    int bv = color == 0 && lrank == 0 ? 4242 : -1;
    int root = color == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_RC(MPI_Bcast(&bv, 1, MPI_INT, root, inter));
    CHECK(color == 0 ? bv == (lrank == 0 ? 4242 : -1) : bv == 4242);
    int other = 0; /* the sum of the other group's world ranks */
    for (int i = 0; i < rsize; i++)
        other += 2 * i + 1 - color;
    int rv = -1;
    root = color == 1 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_RC(MPI_Reduce(&wrank, &rv, 1, MPI_INT, MPI_SUM, root, inter));
    if (color == 1 && lrank == 0)
        CHECK(rv == other);
    int ar = -1;
    CHECK_RC(MPI_Allreduce(&wrank, &ar, 1, MPI_INT, MPI_SUM, inter));
    CHECK(ar == other);
    /* A user op, not commutative: the other group's product in its rank
     * order. */
    MPI_Datatype mt;
    MPI_Op op;
    MPI_Type_contiguous(4, MPI_INT, &mt);
    MPI_Type_commit(&mt);
    MPI_Op_create(matmul, 0, &op);
    mat x = matof(wrank), res = {0}, want = matof(2 * (rsize - 1) + 1 - color);
    int one = 1;
    for (int i = rsize - 2; i >= 0; i--) {
        mat y = matof(2 * i + 1 - color);
        matmul(&y, &want, &one, NULL);
    }
    CHECK_RC(MPI_Allreduce(&x, &res, 1, mt, op, inter));
    CHECK(memcmp(&res, &want, sizeof want) == 0);
    MPI_Request q;
    memset(&res, 0, sizeof res);
    CHECK_RC(MPI_Ireduce(&x, &res, 1, mt, op, root, inter, &q));
    CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
    if (color == 1 && lrank == 0)
        CHECK(memcmp(&res, &want, sizeof want) == 0);

    /* Gather to group 1's root, Scatter from group 0's, Allgather,
     * Alltoall, Gatherv, Alltoallw. */
    int *g = malloc(sizeof(int) * 2 * wsize), two[2] = {wrank, -wrank};
    CHECK_RC(MPI_Gather(two, 2, MPI_INT, g, 2, MPI_INT, root, inter));
    if (color == 1 && lrank == 0)
        for (int i = 0; i < rsize; i++)
            CHECK(g[2 * i] == 2 * i && g[2 * i + 1] == -2 * i);
    int sroot = color == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, sg[2] = {-1, -1};
    for (int i = 0; i < 2 * wsize; i++)
        g[i] = i * 3;
    CHECK_RC(MPI_Scatter(g, 2, MPI_INT, sg, 2, MPI_INT, sroot, inter));
    if (color == 1)
        CHECK(sg[0] == 6 * lrank && sg[1] == 6 * lrank + 3);
    CHECK_RC(MPI_Allgather(&wrank, 1, MPI_INT, g, 1, MPI_INT, inter));
    for (int i = 0; i < rsize; i++)
        CHECK(g[i] == 2 * i + 1 - color);
    for (int i = 0; i < rsize; i++)
        in[i] = wrank * 100 + i;
    CHECK_RC(MPI_Alltoall(in, 1, MPI_INT, out, 1, MPI_INT, inter));
    for (int i = 0; i < rsize; i++)
        CHECK(out[i] == (2 * i + 1 - color) * 100 + lrank);
    int *rc = malloc(sizeof(int) * wsize), *rd = malloc(sizeof(int) * wsize);
    for (int i = 0; i < rsize; i++)
        rc[i] = 1, rd[i] = rsize - 1 - i;
    for (int i = 0; i < wsize; i++)
        g[i] = -1;
    CHECK_RC(MPI_Gatherv(&wrank, 1, MPI_INT, g, rc, rd, MPI_INT, root, inter));
    if (color == 1 && lrank == 0)
        for (int i = 0; i < rsize; i++)
            CHECK(g[rsize - 1 - i] == 2 * i);
    MPI_Datatype *ts = malloc(sizeof(MPI_Datatype) * wsize);
    int *wd = malloc(sizeof(int) * wsize);
    for (int i = 0; i < rsize; i++)
        ts[i] = MPI_INT, wd[i] = i * (int)sizeof(int);
    CHECK_RC(MPI_Alltoallw(in, rc, wd, ts, out, rc, wd, ts, inter));
    for (int i = 0; i < rsize; i++)
        CHECK(out[i] == (2 * i + 1 - color) * 100 + lrank);
    CHECK_RC(MPI_Barrier(inter));
    /* Nonblocking and persistent. */
    int ib = -1;
    CHECK_RC(MPI_Iallreduce(&wrank, &ib, 1, MPI_INT, MPI_SUM, inter, &q));
    CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(ib == other);
    MPI_Request pq;
    int pb = -1;
    root = color == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    CHECK_RC(MPI_Bcast_init(&pb, 1, MPI_INT, root, inter, MPI_INFO_NULL, &pq));
    for (int it = 0; it < 3; it++) {
        if (color == 0 && lrank == 0)
            pb = it + 10;
        CHECK_RC(MPI_Start(&pq));
        CHECK_RC(MPI_Wait(&pq, MPI_STATUS_IGNORE));
        if (color == 1)
            CHECK(pb == it + 10);
    }
    MPI_Request_free(&pq);
    /* MPI_IN_PLACE is not for intercommunicators; Scan is not either. */
    e = MPI_Allreduce(MPI_IN_PLACE, &ib, 1, MPI_INT, MPI_SUM, inter);
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_BUFFER);
    e = MPI_Scan(&wrank, &ib, 1, MPI_INT, MPI_SUM, inter);
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_COMM);
    e = MPI_Bcast(&ib, 1, MPI_INT, rsize, inter);
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_ROOT);

    /* Dup, idup, compare, get_failed. */
    MPI_Comm d, d2;
    CHECK_RC(MPI_Comm_dup(inter, &d));
    CHECK_RC(MPI_Comm_test_inter(d, &flag));
    CHECK(flag == 1);
    CHECK_RC(MPI_Comm_compare(inter, d, &flag));
    CHECK(flag == MPI_CONGRUENT);
    CHECK_RC(MPI_Comm_idup(inter, &d2, &q));
    CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK_RC(MPI_Comm_remote_size(d2, &flag));
    CHECK(flag == rsize);
    ar = -1;
    CHECK_RC(MPI_Allreduce(&wrank, &ar, 1, MPI_INT, MPI_SUM, d2));
    CHECK(ar == other);
    MPI_Group fg;
    CHECK_RC(MPIX_Comm_get_failed(d, &fg));
    MPI_Group_size(fg, &gs);
    CHECK(gs == 0);
    MPI_Group_free(&fg);
    MPI_Comm_free(&d);
    MPI_Comm_free(&d2);

    /* Merge: group 1 asks to be high, so group 0 comes first. */
    MPI_Comm merged;
    CHECK_RC(MPI_Intercomm_merge(inter, color, &merged));
    int mrank, msize;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    CHECK(msize == wsize && mrank == (color == 0 ? lrank : gsize[0] + lrank));
    CHECK_RC(MPI_Comm_test_inter(merged, &flag));
    CHECK(flag == 0);
    int sum = -1;
    CHECK_RC(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, merged));
    CHECK(sum == wsize * (wsize - 1) / 2);
    MPI_Comm_free(&merged);
    /* Group 0 asks to be high now: group 1 comes first. */
    CHECK_RC(MPI_Intercomm_merge(inter, 1 - color, &merged));
    MPI_Comm_rank(merged, &mrank);
    CHECK(mrank == (color == 1 ? lrank : gsize[1] + lrank));
    MPI_Comm_free(&merged);

    /* Reduce_scatter_block: each group sends its own size's blocks of its
     * recvcount; the other group's reduction is shared out (groups of
     * different sizes: recvcount is 2 times the remote size). */
    {
        int rc = 2 * rsize, sc = rc * lsize;
        long long *sb = malloc(sizeof(long long) * sc), *rb = malloc(sizeof(long long) * rc);
        for (int i = 0; i < sc; i++)
            sb[i] = i + 1;
        CHECK_RC(MPI_Reduce_scatter_block(sb, rb, rc, MPI_LONG_LONG, MPI_SUM, inter));
        for (int i = 0; i < rc; i++)
            CHECK(rb[i] == (long long)rsize * (lrank * rc + i + 1));
        free(sb);
        free(rb);
    }

    /* Alltoall in one direction: group 0 sends an int to each member of
     * group 1 and receives nothing (MPICH's icalltoall). */
    {
        int *sb = malloc(sizeof(int) * rsize), *rb = malloc(sizeof(int) * rsize);
        for (int i = 0; i < rsize; i++)
            sb[i] = 100 * lrank + i, rb[i] = -1;
        if (color == 0)
            CHECK_RC(MPI_Alltoall(sb, 1, MPI_INT, rb, 0, MPI_INT, inter));
        else
            CHECK_RC(MPI_Alltoall(sb, 0, MPI_INT, rb, 1, MPI_INT, inter));
        for (int i = 0; i < rsize; i++)
            CHECK(color == 0 ? rb[i] == -1 : rb[i] == 100 * i + lrank);
        free(sb);
        free(rb);
    }

    MPI_Op_free(&op);
    MPI_Type_free(&mt);
    CHECK_RC(MPI_Comm_free(&inter));
    MPI_Comm_free(&local);
    MPI_Barrier(MPI_COMM_WORLD);
    DONE();
}
