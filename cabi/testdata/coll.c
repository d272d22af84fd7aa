/* Collectives against computed references: blocking and nonblocking,
 * MPI_IN_PLACE, user ops (a non-commutative one), MINLOC/MAXLOC, derived
 * types, Reduce_local. */
#include "check.h"

/* 2x2 integer matrices, multiplied: associative, not commutative. */
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

static mat mul(mat x, mat y)
{
    int one = 1;
    matmul(&x, &y, &one, NULL);
    return y;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));

    /* Bcast from every root. */
    for (int root = 0; root < size; root++) {
        int v[3] = {0, 0, 0};
        if (rank == root)
            v[0] = 10 + root, v[1] = 20, v[2] = 30;
        CHECK_RC(MPI_Bcast(v, 3, MPI_INT, root, MPI_COMM_WORLD));
        CHECK(v[0] == 10 + root && v[2] == 30);
    }

    /* Allreduce of several types and ops. */
    double d = rank + 1, dsum, dmax, dprod;
    MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&d, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&d, &dprod, 1, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD);
    double fact = 1;
    for (int i = 1; i <= size; i++)
        fact *= i;
    CHECK(dsum == size * (size + 1) / 2.0 && dmax == size && dprod == fact);
    long long big[1000], bigr[1000];
    for (int i = 0; i < 1000; i++)
        big[i] = (long long)rank * i;
    CHECK_RC(MPI_Allreduce(big, bigr, 1000, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < 1000; i++)
        CHECK(bigr[i] == (long long)i * size * (size - 1) / 2);
    unsigned bits = 1u << rank, bor, band;
    MPI_Allreduce(&bits, &bor, 1, MPI_UNSIGNED, MPI_BOR, MPI_COMM_WORLD);
    MPI_Allreduce(&bits, &band, 1, MPI_UNSIGNED, MPI_BAND, MPI_COMM_WORLD);
    CHECK(bor == (1u << size) - 1 && band == (size == 1 ? 1u : 0u));
    int lt = rank != 0, land, lor;
    MPI_Allreduce(&lt, &land, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Allreduce(&lt, &lor, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    CHECK(land == 0 && lor == (size > 1));
    long double ld = rank + 0.25L, ldr;
    CHECK_RC(MPI_Allreduce(&ld, &ldr, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(ldr == size * (size - 1) / 2.0L + size * 0.25L);

    /* In place. */
    int ip[4] = {rank, rank * 2, 1, -rank};
    CHECK_RC(MPI_Allreduce(MPI_IN_PLACE, ip, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(ip[0] == size * (size - 1) / 2 && ip[1] == size * (size - 1) && ip[2] == size);

    /* MINLOC and MAXLOC. */
    struct {
        double v;
        int i;
    } in = {(double)((rank * 7) % size), rank}, mn, mx;
    MPI_Allreduce(&in, &mn, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
    MPI_Allreduce(&in, &mx, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(mn.v == 0 && mn.i == 0);
    CHECK(mx.v == size - 1);
    int p2[2] = {rank % 2, rank}, p2r[2];
    MPI_Allreduce(p2, p2r, 1, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD);
    CHECK(p2r[0] == (size > 1) && p2r[1] == (size > 1 ? 1 : 0));

    /* A non-commutative user op: the product in rank order. */
    MPI_Op op;
    MPI_Datatype mt;
    MPI_Type_contiguous(4, MPI_INT, &mt);
    MPI_Type_commit(&mt);
    CHECK_RC(MPI_Op_create(matmul, 0, &op));
    int commute;
    MPI_Op_commutative(op, &commute);
    CHECK(!commute);
    mat mine[2] = {matof(rank), matof(rank + 3)}, res[2], want[2] = {matof(0), matof(3)};
    for (int r = 1; r < size; r++) {
        want[0] = mul(want[0], matof(r));
        want[1] = mul(want[1], matof(r + 3));
    }
    CHECK_RC(MPI_Allreduce(mine, res, 2, mt, op, MPI_COMM_WORLD));
    CHECK(memcmp(res, want, sizeof want) == 0);
    memset(res, 0, sizeof res);
    CHECK_RC(MPI_Reduce(mine, res, 2, mt, op, size - 1, MPI_COMM_WORLD));
    if (rank == size - 1)
        CHECK(memcmp(res, want, sizeof want) == 0);
    /* Scan with the user op: the product of ranks 0..rank. */
    mat sw = matof(0);
    for (int r = 1; r <= rank; r++)
        sw = mul(sw, matof(r));
    CHECK_RC(MPI_Scan(mine, res, 1, mt, op, MPI_COMM_WORLD));
    CHECK(memcmp(&res[0], &sw, sizeof sw) == 0);
    /* Reduce_local: inout = in op inout. */
    mat a = matof(1), b = matof(2), ab = mul(a, b);
    CHECK_RC(MPI_Reduce_local(&a, &b, 1, mt, op));
    CHECK(memcmp(&b, &ab, sizeof ab) == 0);
    {
        /* Reduce_local has no in-place form: MPI_ERR_BUFFER, not a crash. */
        int x = 1, cls;
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        MPI_Error_class(MPI_Reduce_local(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM), &cls);
        CHECK(cls == MPI_ERR_BUFFER);
        MPI_Error_class(MPI_Reduce_local(&x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM), &cls);
        CHECK(cls == MPI_ERR_BUFFER);
        MPI_Error_class(MPI_Reduce_local(&x, &x, 1, MPI_INT, MPI_SUM), &cls);
        CHECK(cls == MPI_ERR_BUFFER);
    }
    {
        /* Aliased send and receive buffers (MPI_IN_PLACE is the way):
         * MPI_ERR_BUFFER at once, before any member communicates, so
         * each rank can be the root of its own call. */
        int *x = calloc(2 * size, sizeof(int)), *cnt = calloc(size, sizeof(int)), *dis = calloc(size, sizeof(int));
        MPI_Datatype *ts = calloc(size, sizeof(MPI_Datatype));
        for (int i = 0; i < size; i++)
            cnt[i] = 1, dis[i] = i, ts[i] = MPI_INT;
        MPI_Comm ac;
        CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &ac));
        MPI_Comm_set_errhandler(ac, MPI_ERRORS_RETURN);
        int rcs[9], k = 0;
        rcs[k++] = MPI_Allreduce(x, x, 1, MPI_INT, MPI_SUM, ac);
        rcs[k++] = MPI_Reduce(x, x, 1, MPI_INT, MPI_SUM, rank, ac);
        rcs[k++] = MPI_Gather(&x[rank], 1, MPI_INT, x, 1, MPI_INT, rank, ac);
        rcs[k++] = MPI_Scatter(x, 1, MPI_INT, &x[rank], 1, MPI_INT, rank, ac);
        rcs[k++] = MPI_Allgatherv(&x[rank], 1, MPI_INT, x, cnt, dis, MPI_INT, ac);
        rcs[k++] = MPI_Alltoall(x, 1, MPI_INT, x, 1, MPI_INT, ac);
        rcs[k++] = MPI_Alltoallw(x, cnt, dis, ts, x, cnt, dis, ts, ac);
        rcs[k++] = MPI_Scan(x, x, 1, MPI_INT, MPI_SUM, ac);
        rcs[k++] = MPI_Ireduce_scatter_block(x, x, 1, MPI_INT, MPI_SUM, ac, &(MPI_Request){0});
        for (int i = 0; i < k; i++) {
            int cls = -1;
            MPI_Error_class(rcs[i], &cls);
            if (cls != MPI_ERR_BUFFER)
                fprintf(stderr, "aliased call %d: class %d\n", i, cls);
            CHECK(cls == MPI_ERR_BUFFER);
        }
        /* Other blocks of the same buffer are not aliases. */
        x[size] = rank;
        CHECK_RC(MPI_Allgather(&x[size], 1, MPI_INT, x, 1, MPI_INT, ac));
        for (int i = 0; i < size; i++)
            CHECK(x[i] == i);
        CHECK_RC(MPI_Comm_free(&ac));
        free(x), free(cnt), free(dis), free(ts);
    }
    MPI_Op_free(&op);
    CHECK(op == MPI_OP_NULL);

    /* Reduce at each root, Scan and Exscan with a predefined op. */
    for (int root = 0; root < size; root++) {
        int v = rank + 1, r = -1;
        CHECK_RC(MPI_Reduce(&v, &r, 1, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
        if (rank == root)
            CHECK(r == size * (size + 1) / 2);
    }
    int sv = rank + 1, sr, er = -7;
    MPI_Scan(&sv, &sr, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sr == (rank + 1) * (rank + 2) / 2);
    MPI_Exscan(&sv, &er, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank > 0)
        CHECK(er == rank * (rank + 1) / 2);

    /* Reduce_scatter_block and Reduce_scatter. */
    int *rs = malloc(sizeof(int) * size * 2), rsb[2], *counts = malloc(sizeof(int) * size);
    for (int i = 0; i < size * 2; i++)
        rs[i] = i + rank;
    CHECK_RC(MPI_Reduce_scatter_block(rs, rsb, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(rsb[0] == size * (2 * rank) + size * (size - 1) / 2);
    for (int i = 0; i < size; i++)
        counts[i] = i == 0 ? 2 : 0;
    int rsv[2] = {-1, -1};
    CHECK_RC(MPI_Reduce_scatter(rs, rsv, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (rank == 0)
        CHECK(rsv[1] == size * 1 + size * (size - 1) / 2);

    /* Gather, Scatter, Allgather, Alltoall, and the v forms. */
    int *all = malloc(sizeof(int) * size * 4), *all2 = malloc(sizeof(int) * size * 4);
    int two[2] = {rank, rank * 10};
    CHECK_RC(MPI_Gather(two, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0)
        for (int r = 0; r < size; r++)
            CHECK(all[2 * r] == r && all[2 * r + 1] == r * 10);
    for (int i = 0; i < 2 * size; i++)
        all[i] = i * 3;
    int got2[2];
    CHECK_RC(MPI_Scatter(all, 2, MPI_INT, got2, 2, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(got2[0] == 6 * rank && got2[1] == 6 * rank + 3);
    CHECK_RC(MPI_Allgather(two, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        CHECK(all[2 * r] == r && all[2 * r + 1] == r * 10);
    /* Allgather in place. */
    for (int i = 0; i < 2 * size; i++)
        all[i] = i / 2 == rank ? rank + 100 : -1;
    CHECK_RC(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 2, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        CHECK(all[2 * r] == r + 100);
    for (int i = 0; i < size; i++)
        all[i] = rank * 100 + i;
    CHECK_RC(MPI_Alltoall(all, 1, MPI_INT, all2, 1, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        CHECK(all2[r] == r * 100 + rank);
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++)
        rc[r] = r + 1, rd[r] = r * (r + 1) / 2;
    int mine_v[64];
    for (int i = 0; i <= rank; i++)
        mine_v[i] = rank;
    int total = size * (size + 1) / 2;
    int *gv = malloc(sizeof(int) * total);
    CHECK_RC(MPI_Allgatherv(mine_v, rank + 1, MPI_INT, gv, rc, rd, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0, k = 0; r < size; r++)
        for (int i = 0; i <= r; i++, k++)
            CHECK(gv[k] == r);
    memset(gv, 0, sizeof(int) * total);
    CHECK_RC(MPI_Gatherv(mine_v, rank + 1, MPI_INT, gv, rc, rd, MPI_INT, 0, MPI_COMM_WORLD));
    if (rank == 0)
        CHECK(gv[total - 1] == size - 1);
    int sc_in[64];
    CHECK_RC(MPI_Scatterv(gv, rc, rd, MPI_INT, sc_in, rank + 1, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK(sc_in[rank] == rank);
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++)
        sc[r] = 1, sd[r] = r, all[r] = rank * 1000 + r;
    CHECK_RC(MPI_Alltoallv(all, sc, sd, MPI_INT, all2, sc, sd, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        CHECK(all2[r] == r * 1000 + rank);

    /* A derived type in Bcast and Gather: every other double. */
    MPI_Datatype every2;
    MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &every2);
    MPI_Type_commit(&every2);
    double eb[8] = {0};
    if (rank == 0)
        for (int i = 0; i < 8; i++)
            eb[i] = i;
    CHECK_RC(MPI_Bcast(eb, 1, every2, 0, MPI_COMM_WORLD));
    CHECK(eb[0] == 0 && eb[2] == 2 && eb[6] == 6 && (rank == 0 || eb[1] == 0));
    double dsend[8], *dall = malloc(sizeof(double) * 4 * size);
    for (int i = 0; i < 8; i++)
        dsend[i] = rank * 10 + i;
    CHECK_RC(MPI_Allgather(dsend, 1, every2, dall, 4, MPI_DOUBLE, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++)
        CHECK(dall[4 * r + 1] == r * 10 + 2);
    double dsum2[8] = {0};
    CHECK_RC(MPI_Allreduce(dsend, dsum2, 1, every2, MPI_SUM, MPI_COMM_WORLD));
    CHECK(dsum2[2] == 10 * size * (size - 1) / 2 + 2 * size && dsum2[1] == 0);

    /* Nonblocking. */
    MPI_Request rq[4];
    int ib = rank == 1 ? 77 : 0, iar = -1, iv = rank;
    int *iag = malloc(sizeof(int) * size);
    CHECK_RC(MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]));
    CHECK_RC(MPI_Ibcast(&ib, 1, MPI_INT, size > 1 ? 1 : 0, MPI_COMM_WORLD, &rq[1]));
    CHECK_RC(MPI_Iallreduce(&iv, &iar, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rq[2]));
    CHECK_RC(MPI_Iallgather(&iv, 1, MPI_INT, iag, 1, MPI_INT, MPI_COMM_WORLD, &rq[3]));
    CHECK_RC(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    CHECK(iar == size - 1 && iag[size - 1] == size - 1 && (size == 1 || ib == 77));
    double deb[8] = {0};
    if (rank == 0)
        for (int i = 0; i < 8; i++)
            deb[i] = i + 1;
    CHECK_RC(MPI_Ibcast(deb, 1, every2, 0, MPI_COMM_WORLD, &rq[0]));
    CHECK_RC(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    CHECK(deb[4] == 5 && (rank == 0 || deb[3] == 0));

    /* Errors: a bad root, a bad op. */
    int e = MPI_Bcast(&iv, 1, MPI_INT, size, MPI_COMM_WORLD), cls;
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_ROOT);
    e = MPI_Allreduce(&d, &dsum, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD);
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_OP);
    MPI_Barrier(MPI_COMM_WORLD);
    DONE();
}
