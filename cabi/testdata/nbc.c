/* Nonblocking and persistent collectives, Alltoallw, the v forms with
 * derived datatypes, user ops in nonblocking and persistent reductions,
 * MPI_IN_PLACE, and the large-count (_c) forms, against computed
 * references. */
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

static mat matof(int r, int it) { return (mat){1, r + 1 + it, 0, 1 + (r & 1)}; }

/* The product x_lo ... x_hi, in rank order. */
static mat prod(int lo, int hi, int it)
{
    mat acc = matof(hi, it);
    int one = 1;
    for (int j = hi - 1; j >= lo; j--) {
        mat x = matof(j, it);
        matmul(&x, &acc, &one, NULL);
    }
    return acc;
}

static int mateq(mat x, mat y) { return memcmp(&x, &y, sizeof x) == 0; }

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Request rq[16];

    /* Blocks of r+1 ints from member r, with a gap of one int between
     * blocks (displacement r*(r+1)/2 + r). */
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int span = 0;
    for (int r = 0; r < size; r++) {
        rc[r] = r + 1;
        rd[r] = r * (r + 1) / 2 + r;
        span = rd[r] + rc[r] + 1;
    }
    int mine[64], *gv = malloc(sizeof(int) * span);
    for (int i = 0; i <= rank; i++)
        mine[i] = rank * 100 + i;

    /* Igatherv at every root, Iallgatherv. */
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < span; i++)
            gv[i] = -1;
        CHECK_RC(MPI_Igatherv(mine, rank + 1, MPI_INT, gv, rc, rd, MPI_INT, root, w, &rq[0]));
        CHECK_RC(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        CHECK(rq[0] == MPI_REQUEST_NULL);
        if (rank == root)
            for (int r = 0; r < size; r++) {
                for (int i = 0; i <= r; i++)
                    CHECK(gv[rd[r] + i] == r * 100 + i);
                CHECK(gv[rd[r] + r + 1] == -1);
            }
    }
    for (int i = 0; i < span; i++)
        gv[i] = -1;
    CHECK_RC(MPI_Iallgatherv(mine, rank + 1, MPI_INT, gv, rc, rd, MPI_INT, w, &rq[0]));
    CHECK_RC(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    for (int r = 0; r < size; r++)
        for (int i = 0; i <= r; i++)
            CHECK(gv[rd[r] + i] == r * 100 + i);

    /* Iscatterv from the last member. */
    int root = size - 1, sin[64];
    for (int i = 0; i < span; i++)
        gv[i] = i * 7;
    CHECK_RC(MPI_Iscatterv(gv, rc, rd, MPI_INT, sin, rank + 1, MPI_INT, root, w, &rq[0]));
    CHECK_RC(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    for (int i = 0; i <= rank; i++)
        CHECK(sin[i] == (rd[rank] + i) * 7);

    /* Ialltoallv: r+1 ints to member r, rank+1 from each. */
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *ac = malloc(sizeof(int) * size), *ad = malloc(sizeof(int) * size);
    int ssum = 0, rsum = 0;
    for (int r = 0; r < size; r++) {
        sc[r] = r + 1, sd[r] = ssum, ssum += r + 1;
        ac[r] = rank + 1, ad[r] = rsum, rsum += rank + 1;
    }
    int *av = malloc(sizeof(int) * ssum), *aw = malloc(sizeof(int) * rsum);
    for (int r = 0; r < size; r++)
        for (int i = 0; i <= r; i++)
            av[sd[r] + i] = rank * 1000 + r * 10 + i;
    CHECK_RC(MPI_Ialltoallv(av, sc, sd, MPI_INT, aw, ac, ad, MPI_INT, w, &rq[0]));
    CHECK_RC(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    for (int r = 0; r < size; r++)
        for (int i = 0; i <= rank; i++)
            CHECK(aw[ad[r] + i] == r * 1000 + rank * 10 + i);

    /* A non-contiguous type in the v forms: ints at every other int. */
    MPI_Datatype ev;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &ev);
    MPI_Type_commit(&ev);
    int *sparse = malloc(sizeof(int) * 2 * span);
    for (int i = 0; i < 2 * span; i++)
        sparse[i] = -1;
    CHECK_RC(MPI_Allgatherv(mine, rank + 1, MPI_INT, sparse, rc, rd, ev, w));
    for (int r = 0; r < size; r++) {
        for (int i = 0; i <= r; i++)
            CHECK(sparse[2 * (rd[r] + i)] == r * 100 + i && sparse[2 * (rd[r] + i) + 1] == -1);
        CHECK(sparse[2 * (rd[r] + r + 1)] == -1);
    }
    /* ... and back: Scatterv from the sparse layout into a sparse one. */
    int sback[128];
    for (int i = 0; i < 128; i++)
        sback[i] = -5;
    CHECK_RC(MPI_Scatterv(sparse, rc, rd, ev, sback, rank + 1, ev, 0, w));
    for (int i = 0; i <= rank; i++)
        CHECK(sback[2 * i] == rank * 100 + i && sback[2 * i + 1] == -5);
    /* Gatherv into the sparse layout; Allgatherv in place in it. */
    for (int i = 0; i < 2 * span; i++)
        sparse[i] = -1;
    CHECK_RC(MPI_Gatherv(sback, rank + 1, ev, sparse, rc, rd, ev, 0, w));
    if (rank == 0)
        for (int r = 0; r < size; r++)
            CHECK(sparse[2 * rd[r]] == r * 100 && sparse[2 * rd[r] + 1] == -1);
    for (int i = 0; i < 2 * span; i++)
        sparse[i] = -1;
    for (int i = 0; i <= rank; i++)
        sparse[2 * (rd[rank] + i)] = rank * 100 + i;
    CHECK_RC(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, sparse, rc, rd, ev, w));
    for (int r = 0; r < size; r++)
        for (int i = 0; i <= r; i++)
            CHECK(sparse[2 * (rd[r] + i)] == r * 100 + i && sparse[2 * (rd[r] + i) + 1] == -1);
    /* Alltoallv in place: the receive buffer's blocks are sent, so the
     * counts are symmetric (rank+r+1 between rank and r). */
    int *pc = malloc(sizeof(int) * size), *pd = malloc(sizeof(int) * size), psum = 0;
    for (int r = 0; r < size; r++)
        pc[r] = rank + r + 1, pd[r] = psum, psum += pc[r];
    int *ip = malloc(sizeof(int) * psum), *ip2 = malloc(sizeof(int) * 2 * psum);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < pc[r]; i++)
            ip[pd[r] + i] = rank * 1000 + r * 10 + i;
    CHECK_RC(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, ip, pc, pd, MPI_INT, w));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < pc[r]; i++)
            CHECK(ip[pd[r] + i] == r * 1000 + rank * 10 + i);

    /* Alltoallw: to member r, r+1 ints from a contiguous block; from
     * member r, rank+1 ints into the sparse layout; displacements in
     * bytes. Blocking, nonblocking, persistent (twice) and in place. */
    MPI_Datatype *sts = malloc(sizeof(MPI_Datatype) * size), *rts = malloc(sizeof(MPI_Datatype) * size);
    int *wsd = malloc(sizeof(int) * size), *wrd = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++) {
        sts[r] = MPI_INT, rts[r] = ev;
        wsd[r] = sd[r] * (int)sizeof(int);
        wrd[r] = ad[r] * 2 * (int)sizeof(int);
    }
    int *wr = malloc(sizeof(int) * 2 * rsum);
    MPI_Request wreq;
    CHECK_RC(MPI_Alltoallw_init(av, sc, wsd, sts, wr, ac, wrd, rts, w, MPI_INFO_NULL, &wreq));
    for (int it = 0; it < 4; it++) {
        for (int r = 0; r < size; r++)
            for (int i = 0; i <= r; i++)
                av[sd[r] + i] = rank * 1000 + r * 10 + i + it * 100000;
        for (int i = 0; i < 2 * rsum; i++)
            wr[i] = -1;
        switch (it) {
        case 0:
            CHECK_RC(MPI_Alltoallw(av, sc, wsd, sts, wr, ac, wrd, rts, w));
            break;
        case 1:
            CHECK_RC(MPI_Ialltoallw(av, sc, wsd, sts, wr, ac, wrd, rts, w, &rq[0]));
            CHECK_RC(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
            break;
        default:
            CHECK_RC(MPI_Start(&wreq));
            CHECK_RC(MPI_Wait(&wreq, MPI_STATUS_IGNORE));
            CHECK(wreq != MPI_REQUEST_NULL);
        }
        for (int r = 0; r < size; r++)
            for (int i = 0; i <= rank; i++)
                CHECK(wr[2 * (ad[r] + i)] == r * 1000 + rank * 10 + i + it * 100000 && wr[2 * (ad[r] + i) + 1] == -1);
    }
    CHECK_RC(MPI_Request_free(&wreq));
    CHECK(wreq == MPI_REQUEST_NULL);
    /* Alltoallw in place, in the sparse layout, with the symmetric
     * counts. */
    int *pwd = malloc(sizeof(int) * size);
    for (int r = 0; r < size; r++)
        pwd[r] = pd[r] * 2 * (int)sizeof(int);
    for (int i = 0; i < 2 * psum; i++)
        ip2[i] = -1;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < pc[r]; i++)
            ip2[2 * (pd[r] + i)] = rank * 1000 + r * 10 + i;
    CHECK_RC(MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, ip2, pc, pwd, rts, w));
    for (int r = 0; r < size; r++)
        for (int i = 0; i < pc[r]; i++)
            CHECK(ip2[2 * (pd[r] + i)] == r * 1000 + rank * 10 + i && ip2[2 * (pd[r] + i) + 1] == -1);

    /* Ireduce_scatter_block, Ireduce_scatter, Iscan, Iexscan. */
    int *rs = malloc(sizeof(int) * size * 2), rsb[2] = {0, 0}, rsv[64];
    for (int i = 0; i < size * 2; i++)
        rs[i] = i + rank;
    CHECK_RC(MPI_Ireduce_scatter_block(rs, rsb, 2, MPI_INT, MPI_SUM, w, &rq[0]));
    int *cnt = malloc(sizeof(int) * size), tot = 0;
    for (int r = 0; r < size; r++)
        cnt[r] = r % 2 + 1, tot += cnt[r];
    int *rs2 = malloc(sizeof(int) * tot);
    for (int i = 0; i < tot; i++)
        rs2[i] = i * (rank + 1);
    CHECK_RC(MPI_Ireduce_scatter(rs2, rsv, cnt, MPI_INT, MPI_SUM, w, &rq[1]));
    int sv = rank + 1, sr = -1, er = -7;
    CHECK_RC(MPI_Iscan(&sv, &sr, 1, MPI_INT, MPI_SUM, w, &rq[2]));
    CHECK_RC(MPI_Iexscan(&sv, &er, 1, MPI_INT, MPI_PROD, w, &rq[3]));
    CHECK_RC(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    CHECK(rsb[0] == size * (2 * rank) + size * (size - 1) / 2 && rsb[1] == rsb[0] + size);
    int off = 0;
    for (int r = 0; r < rank; r++)
        off += cnt[r];
    for (int i = 0; i < cnt[rank]; i++)
        CHECK(rsv[i] == (off + i) * size * (size + 1) / 2);
    CHECK(sr == (rank + 1) * (rank + 2) / 2);
    if (rank > 0) {
        int f = 1;
        for (int i = 1; i <= rank; i++)
            f *= i;
        CHECK(er == f);
    }

    /* User ops, not commutative, in nonblocking and persistent
     * reductions: the product in rank order. */
    MPI_Datatype mt;
    MPI_Op op;
    MPI_Type_contiguous(4, MPI_INT, &mt);
    MPI_Type_commit(&mt);
    MPI_Op_create(matmul, 0, &op);
    mat x = matof(rank, 0), all = {0}, red = {0}, scan = {0}, ex = {0};
    CHECK_RC(MPI_Iallreduce(&x, &all, 1, mt, op, w, &rq[0]));
    CHECK_RC(MPI_Ireduce(&x, &red, 1, mt, op, size - 1, w, &rq[1]));
    CHECK_RC(MPI_Iscan(&x, &scan, 1, mt, op, w, &rq[2]));
    CHECK_RC(MPI_Iexscan(&x, &ex, 1, mt, op, w, &rq[3]));
    CHECK_RC(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    CHECK(mateq(all, prod(0, size - 1, 0)));
    if (rank == size - 1)
        CHECK(mateq(red, prod(0, size - 1, 0)));
    CHECK(mateq(scan, prod(0, rank, 0)));
    if (rank > 0)
        CHECK(mateq(ex, prod(0, rank - 1, 0)));
    MPI_Request ur[2];
    CHECK_RC(MPI_Allreduce_init(&x, &all, 1, mt, op, w, MPI_INFO_NULL, &ur[0]));
    CHECK_RC(MPI_Scan_init(&x, &scan, 1, mt, op, w, MPI_INFO_NULL, &ur[1]));
    for (int it = 0; it < 3; it++) {
        x = matof(rank, it);
        CHECK_RC(MPI_Startall(2, ur));
        CHECK_RC(MPI_Waitall(2, ur, MPI_STATUSES_IGNORE));
        CHECK(mateq(all, prod(0, size - 1, it)) && mateq(scan, prod(0, rank, it)));
    }
    MPI_Request_free(&ur[0]);
    MPI_Request_free(&ur[1]);

    /* Persistent collectives, started several times with new data. */
    enum { NP = 15 };
    MPI_Request p[NP];
    int bc[3], ar_in, ar_out, rd_out, g_in[2], *g_out = malloc(sizeof(int) * 2 * size);
    int *s_in = malloc(sizeof(int) * 2 * size), s_out[2], *ag = malloc(sizeof(int) * size);
    int *a_in = malloc(sizeof(int) * size), *a_out = malloc(sizeof(int) * size);
    int sc_in, sc_out, ex_out = -9, *rsb_in = malloc(sizeof(int) * size), rsb_out;
    int *gvo = malloc(sizeof(int) * span), svi[64], *agv = malloc(sizeof(int) * span);
    int nb = 0;
    CHECK_RC(MPI_Bcast_init(bc, 3, MPI_INT, 0, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Allreduce_init(&ar_in, &ar_out, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Reduce_init(&ar_in, &rd_out, 1, MPI_INT, MPI_MAX, size - 1, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Gather_init(g_in, 2, MPI_INT, g_out, 2, MPI_INT, 0, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Scatter_init(s_in, 2, MPI_INT, s_out, 2, MPI_INT, 0, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Allgather_init(&ar_in, 1, MPI_INT, ag, 1, MPI_INT, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Alltoall_init(a_in, 1, MPI_INT, a_out, 1, MPI_INT, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Barrier_init(w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Scan_init(&sc_in, &sc_out, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Exscan_init(&sc_in, &ex_out, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Reduce_scatter_block_init(rsb_in, &rsb_out, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Gatherv_init(mine, rank + 1, MPI_INT, gvo, rc, rd, MPI_INT, 0, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Scatterv_init(gv, rc, rd, MPI_INT, svi, rank + 1, MPI_INT, 0, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Allgatherv_init(mine, rank + 1, MPI_INT, agv, rc, rd, MPI_INT, w, MPI_INFO_NULL, &p[nb++]));
    CHECK_RC(MPI_Reduce_scatter_init(rs2, rsv, cnt, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &p[nb++]));
    CHECK(nb == NP);
    for (int it = 0; it < 4; it++) {
        if (rank == 0)
            bc[0] = it, bc[1] = it * 2, bc[2] = it * 3;
        ar_in = rank + it;
        g_in[0] = rank + it, g_in[1] = -rank;
        for (int i = 0; i < 2 * size; i++)
            s_in[i] = i + it;
        for (int r = 0; r < size; r++)
            a_in[r] = rank * 100 + r + it, rsb_in[r] = r + it;
        sc_in = rank + it;
        for (int i = 0; i <= rank; i++)
            mine[i] = rank * 100 + i + it;
        for (int i = 0; i < span; i++)
            gv[i] = i + it;
        for (int i = 0; i < tot; i++)
            rs2[i] = i * (rank + 1) + it;
        if (it == 1) {
            for (int i = 0; i < NP; i++) {
                CHECK_RC(MPI_Start(&p[i]));
                CHECK_RC(MPI_Wait(&p[i], MPI_STATUS_IGNORE));
            }
        } else if (it == 3) {
            /* MPI 4.0: started in different orders (odd ranks reversed),
             * they still match by the order of the Init calls. */
            for (int i = 0; i < NP; i++)
                CHECK_RC(MPI_Start(&p[rank % 2 ? NP - 1 - i : i]));
            CHECK_RC(MPI_Waitall(NP, p, MPI_STATUSES_IGNORE));
        } else {
            CHECK_RC(MPI_Startall(NP, p));
            CHECK_RC(MPI_Waitall(NP, p, MPI_STATUSES_IGNORE));
        }
        CHECK(bc[0] == it && bc[2] == it * 3);
        CHECK(ar_out == size * (size - 1) / 2 + size * it);
        if (rank == size - 1)
            CHECK(rd_out == size - 1 + it);
        if (rank == 0)
            for (int r = 0; r < size; r++)
                CHECK(g_out[2 * r] == r + it && g_out[2 * r + 1] == -r);
        CHECK(s_out[0] == 2 * rank + it && s_out[1] == 2 * rank + 1 + it);
        for (int r = 0; r < size; r++)
            CHECK(ag[r] == r + it && a_out[r] == r * 100 + rank + it);
        CHECK(sc_out == rank * (rank + 1) / 2 + (rank + 1) * it);
        if (rank > 0)
            CHECK(ex_out == rank * (rank - 1) / 2 + rank * it);
        CHECK(rsb_out == size * (rank + it));
        if (rank == 0)
            for (int r = 0; r < size; r++)
                CHECK(gvo[rd[r]] == r * 100 + it && gvo[rd[r] + r] == r * 100 + r + it);
        for (int i = 0; i <= rank; i++)
            CHECK(svi[i] == rd[rank] + i + it && agv[rd[size - 1] + i] == (size - 1) * 100 + i + it);
        for (int i = 0; i < cnt[rank]; i++)
            CHECK(rsv[i] == (off + i) * size * (size + 1) / 2 + size * it);
    }
    for (int i = 0; i < NP; i++) {
        CHECK(p[i] != MPI_REQUEST_NULL);
        CHECK_RC(MPI_Request_free(&p[i]));
    }
    /* A persistent collective outlives the communicator it was made on
     * (MPI: the request keeps a reference). */
    {
        MPI_Comm d;
        int v = -1;
        MPI_Request pd;
        CHECK_RC(MPI_Comm_dup(w, &d));
        CHECK_RC(MPI_Bcast_init(&v, 1, MPI_INT, size - 1, d, MPI_INFO_NULL, &pd));
        CHECK_RC(MPI_Comm_free(&d));
        for (int it = 0; it < 2; it++) {
            v = rank == size - 1 ? 40 + it : -1;
            CHECK_RC(MPI_Start(&pd));
            CHECK_RC(MPI_Wait(&pd, MPI_STATUS_IGNORE));
            CHECK(v == 40 + it);
        }
        CHECK_RC(MPI_Request_free(&pd));
    }
    /* A persistent Bcast of a non-contiguous type, packed at each Start. */
    MPI_Datatype every2;
    MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &every2);
    MPI_Type_commit(&every2);
    double eb[8];
    MPI_Request pb;
    CHECK_RC(MPI_Bcast_init(eb, 1, every2, 0, w, MPI_INFO_NULL, &pb));
    for (int it = 0; it < 3; it++) {
        for (int i = 0; i < 8; i++)
            eb[i] = rank == 0 ? i + 10 * it : -1;
        CHECK_RC(MPI_Start(&pb));
        CHECK_RC(MPI_Wait(&pb, MPI_STATUS_IGNORE));
        CHECK(eb[0] == 10 * it && eb[6] == 6 + 10 * it && (rank == 0 || eb[1] == -1));
    }
    MPI_Request_free(&pb);

    /* The large-count forms. */
    MPI_Count cc[64];
    MPI_Aint cd[64];
    for (int r = 0; r < size; r++)
        cc[r] = rc[r], cd[r] = rd[r];
    for (int i = 0; i <= rank; i++)
        mine[i] = rank * 100 + i;
    for (int i = 0; i < span; i++)
        gv[i] = -1;
    CHECK_RC(MPI_Gatherv_c(mine, rank + 1, MPI_INT, gv, cc, cd, MPI_INT, 0, w));
    if (rank == 0)
        for (int r = 0; r < size; r++)
            CHECK(gv[rd[r] + r] == r * 100 + r);
    long long cl = rank, cls = 0;
    CHECK_RC(MPI_Allreduce_c(&cl, &cls, (MPI_Count)1, MPI_LONG_LONG, MPI_SUM, w));
    CHECK(cls == (long long)size * (size - 1) / 2);
    MPI_Count wc[64], wrc[64];
    MPI_Aint wd[64], wrd2[64];
    for (int r = 0; r < size; r++)
        wc[r] = sc[r], wd[r] = wsd[r], wrc[r] = ac[r], wrd2[r] = ad[r] * (MPI_Aint)sizeof(int);
    for (int r = 0; r < size; r++)
        for (int i = 0; i <= r; i++)
            av[sd[r] + i] = rank * 1000 + r * 10 + i;
    CHECK_RC(MPI_Ialltoallw_c(av, wc, wd, sts, aw, wrc, wrd2, sts, w, &rq[0]));
    CHECK_RC(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    for (int r = 0; r < size; r++)
        CHECK(aw[ad[r] + rank] == r * 1000 + rank * 10 + rank);
    mat a = matof(1, 0), b = matof(2, 0), ab = prod(1, 2, 0);
    CHECK_RC(MPI_Reduce_local_c(&a, &b, (MPI_Count)1, mt, op));
    CHECK(mateq(b, ab));

    /* Errors: a request form without a request; a negative count in a
     * v form; an intracommunicator root of MPI_ROOT. */
    int e = MPI_Ibarrier(w, NULL), cls2;
    MPI_Error_class(e, &cls2);
    CHECK(cls2 == MPI_ERR_ARG);
    int neg[64];
    for (int r = 0; r < size; r++)
        neg[r] = r == 0 ? -1 : 1;
    e = MPI_Allgatherv(mine, 1, MPI_INT, gv, neg, rd, MPI_INT, w);
    MPI_Error_class(e, &cls2);
    CHECK(cls2 == MPI_ERR_COUNT);
    e = MPI_Bcast(&sv, 1, MPI_INT, MPI_ROOT, w);
    MPI_Error_class(e, &cls2);
    CHECK(cls2 == MPI_ERR_ROOT);

    /* A persistent Init whose arguments fail this layer's checks at
     * one member (a freed datatype, a negative count, no request, a
     * bad root): it returns the error, and the other members' Init
     * calls (creations, which every member's Init makes) return too.
     * The next Init matches as usual. */
    {
        MPI_Datatype gone;
        MPI_Type_contiguous(2, MPI_INT, &gone);
        MPI_Type_commit(&gone);
        MPI_Type_free(&gone);
        int v = 0, all = -1;
        MPI_Request bad[4];
        int codes[4];
        codes[0] = MPI_Bcast_init(&v, 1, rank == 0 ? gone : MPI_INT, 0, w, MPI_INFO_NULL, &bad[0]);
        codes[1] = MPI_Allreduce_init(&v, &all, rank == size - 1 ? -1 : 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &bad[1]);
        codes[2] = MPI_Barrier_init(w, MPI_INFO_NULL, rank == 1 ? NULL : &bad[2]);
        codes[3] = MPI_Gatherv_init(&v, 1, MPI_INT, gv, rank == 0 ? NULL : rc, rd, MPI_INT, 0, w, MPI_INFO_NULL, &bad[3]);
        int want[4] = {rank == 0 ? MPI_ERR_TYPE : MPI_SUCCESS, rank == size - 1 ? MPI_ERR_COUNT : MPI_SUCCESS,
                       rank == 1 ? MPI_ERR_ARG : MPI_SUCCESS, rank == 0 ? MPI_ERR_ARG : MPI_SUCCESS};
        for (int i = 0; i < 4; i++) {
            int cls = -1;
            MPI_Error_class(codes[i], &cls);
            if (cls != want[i])
                fprintf(stderr, "bad persistent Init %d: class %d, want %d\n", i, cls, want[i]);
            CHECK(cls == want[i]);
            if (codes[i] == MPI_SUCCESS)
                CHECK_RC(MPI_Request_free(&bad[i]));
        }
        MPI_Request good;
        CHECK_RC(MPI_Allreduce_init(&v, &all, 1, MPI_INT, MPI_SUM, w, MPI_INFO_NULL, &good));
        v = rank;
        CHECK_RC(MPI_Start(&good));
        CHECK_RC(MPI_Wait(&good, MPI_STATUS_IGNORE));
        CHECK(all == size * (size - 1) / 2);
        CHECK_RC(MPI_Request_free(&good));
    }

    MPI_Op_free(&op);
    MPI_Type_free(&mt);
    MPI_Type_free(&ev);
    MPI_Type_free(&every2);
    CHECK_RC(MPI_Barrier(w));
    DONE();
}
