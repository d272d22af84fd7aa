/* Neighbourhood collectives: Neighbor_allgather(v), Neighbor_alltoall(v,w)
 * in their blocking, nonblocking, persistent and large-count forms, on a
 * periodic ring, a 2-D grid periodic along one dimension only (so with
 * MPI_PROC_NULL neighbours, whose blocks must stay untouched), an
 * irregular distributed graph and a graph, with derived datatypes on
 * either side, against references computed here; bad input through
 * MPI_ERRORS_RETURN. Runs at any number of ranks. */
#include "check.h"

/* MPI_UNWEIGHTED is one of the ABI's small constant pointers, which gcc
 * takes for an array of no room. */
#pragma GCC diagnostic ignored "-Wstringop-overread"

#define SENT (-7)
#define MAXN 8

static int rank, size;
static MPI_Datatype vec3, vec2, stride2, pair2;

/* The k-th int of the block rank r sends to its destination j, at
 * iteration it. */
static int val(int r, int j, int k, int it) { return 1 + r * 100000 + j * 1000 + k * 10 + it; }

typedef struct {
    const char *name;
    MPI_Comm c;
    int in, out;
    int src[MAXN], dst[MAXN];
    int pair[MAXN]; /* for source i: the index of this rank among its destinations */
} topo;

/* The irregular graph: r sends to r+1, and to r+3 if r is even (mod n). */
static int dg_dests(int r, int n, int *d)
{
    int k = 0;
    d[k++] = (r + 1) % n;
    if (r % 2 == 0)
        d[k++] = (r + 3) % n;
    return k;
}

static int dg_sources(int r, int n, int *s)
{
    int k = 0;
    s[k++] = (r - 1 + n) % n;
    int q = ((r - 3) % n + n) % n;
    if (q % 2 == 0)
        s[k++] = q;
    return k;
}

static int ring_nbs(int r, int n, int *d)
{
    d[0] = (r + 1) % n;
    d[1] = (r - 1 + n) % n;
    return 2;
}

/* Pairing of repeated edges: the k-th time this rank names s as a source
 * is the k-th time s names it as a destination. */
static void pair_by_order(topo *t, int (*dests)(int, int, int *))
{
    for (int i = 0; i < t->in; i++) {
        int s = t->src[i], k = 0, d[MAXN];
        for (int x = 0; x < i; x++)
            k += t->src[x] == s;
        int nd = dests(s, size, d);
        t->pair[i] = -1;
        for (int j = 0; j < nd; j++)
            if (d[j] == rank && k-- == 0) {
                t->pair[i] = j;
                break;
            }
        CHECK(t->pair[i] >= 0);
    }
}

static void make_ring(topo *t)
{
    int dims[1] = {size}, per[1] = {1};
    t->name = "ring";
    CHECK_RC(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &t->c));
    t->in = t->out = 2;
    t->src[0] = t->dst[0] = (rank - 1 + size) % size;
    t->src[1] = t->dst[1] = (rank + 1) % size;
    /* Grids: what the rank one step back sends forward arrives in block
     * 0 (MPI 4.0), also when both neighbours are one rank. */
    t->pair[0] = 1;
    t->pair[1] = 0;
}

static void make_grid(topo *t)
{
    int dims[2] = {0, 0}, per[2] = {1, 0};
    t->name = "grid";
    MPI_Dims_create(size, 2, dims);
    CHECK_RC(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &t->c));
    int c[2] = {rank / dims[1], rank % dims[1]};
    t->in = t->out = 4;
    for (int d = 0; d < 2; d++)
        for (int s = 0; s < 2; s++) {
            int x[2] = {c[0], c[1]};
            x[d] += s ? 1 : -1;
            int r;
            if (per[d])
                x[d] = (x[d] + dims[d]) % dims[d];
            r = x[d] < 0 || x[d] >= dims[d] ? MPI_PROC_NULL : x[0] * dims[1] + x[1];
            t->src[2 * d + s] = t->dst[2 * d + s] = r;
            t->pair[2 * d + s] = 2 * d + (1 - s);
        }
    /* The library agrees. */
    for (int d = 0; d < 2; d++) {
        int s, f;
        CHECK_RC(MPI_Cart_shift(t->c, d, 1, &s, &f));
        CHECK(s == t->src[2 * d] && f == t->src[2 * d + 1]);
    }
}

static void make_dist(topo *t)
{
    t->name = "distgraph";
    t->in = dg_sources(rank, size, t->src);
    t->out = dg_dests(rank, size, t->dst);
    CHECK_RC(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, t->in, t->src, MPI_UNWEIGHTED, t->out, t->dst,
                                            MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &t->c));
    pair_by_order(t, dg_dests);
}

static void make_graph(topo *t)
{
    int index[64], edges[128];
    CHECK(size <= 64);
    for (int i = 0; i < size; i++) {
        ring_nbs(i, size, edges + 2 * i);
        index[i] = 2 * (i + 1);
    }
    t->name = "graph";
    CHECK_RC(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &t->c));
    t->in = t->out = ring_nbs(rank, size, t->src);
    ring_nbs(rank, size, t->dst);
    pair_by_order(t, ring_nbs);
}

/* The families and how they are called. */
enum { AG, AA, AGV, AAV, AAW, NFAM };
enum { BLOCK, NB, PERSIST, BLOCK_C, NB_C, PERSIST_C };

typedef struct {
    int sb[64], rb[128];
    int sc[MAXN], sd[MAXN], rc[MAXN], rd[MAXN];
    MPI_Count scc[MAXN], rcc[MAXN];
    MPI_Aint sda[MAXN], rda[MAXN];
    MPI_Datatype st[MAXN], rt[MAXN];
} bufs;

/* prepare fills the send buffer of iteration it and the receive buffer
 * with sentinels, and sets counts and displacements. */
static void prepare(int fam, topo *t, bufs *b, int it)
{
    for (int i = 0; i < 128; i++)
        b->rb[i] = SENT;
    for (int i = 0; i < 64; i++)
        b->sb[i] = -1;
    switch (fam) {
    case AG: /* 3 ints; received as one vec3 (data at 0, 2, 4 of 5) */
        for (int k = 0; k < 3; k++)
            b->sb[k] = val(rank, 0, k, it);
        break;
    case AA: /* sent as one vec3 per destination, received as 3 ints */
        for (int j = 0; j < t->out; j++)
            for (int k = 0; k < 3; k++)
                b->sb[5 * j + 2 * k] = val(rank, j, k, it);
        break;
    case AGV: /* 1 + rank%3 ints; received as stride2 at 4 extents a block */
        for (int k = 0; k < 1 + rank % 3; k++)
            b->sb[k] = val(rank, 0, k, it);
        for (int i = 0; i < t->in; i++) {
            b->rc[i] = t->src[i] == MPI_PROC_NULL ? 2 : 1 + t->src[i] % 3;
            b->rd[i] = 4 * i;
        }
        break;
    case AAV: { /* j+1+rank%2 ints to destination j, as stride2 one block
                 * after the other; received as ints, 8 apart */
        int off = 0;
        for (int j = 0; j < t->out; j++) {
            b->sc[j] = j + 1 + rank % 2;
            b->sd[j] = off;
            for (int k = 0; k < b->sc[j]; k++)
                b->sb[2 * (off + k)] = val(rank, j, k, it);
            off += b->sc[j];
        }
        for (int i = 0; i < t->in; i++) {
            b->rc[i] = t->src[i] == MPI_PROC_NULL ? 3 : t->pair[i] + 1 + t->src[i] % 2;
            b->rd[i] = 8 * (t->in - 1 - i); /* blocks in reverse order */
        }
        break;
    }
    case AAW: /* 2 ints each, 6 ints apart: as 2 MPI_INT (even j) or one pair2
               * (odd j); received as 2 MPI_INT (even i) or one vec2 (odd i) */
        for (int j = 0; j < t->out; j++) {
            for (int k = 0; k < 2; k++)
                b->sb[6 * j + k] = val(rank, j, k, it);
            b->sc[j] = j % 2 ? 1 : 2;
            b->sda[j] = (MPI_Aint)(6 * j * sizeof(int));
            b->st[j] = j % 2 ? pair2 : MPI_INT;
        }
        for (int i = 0; i < t->in; i++) {
            b->rc[i] = i % 2 ? 1 : 2;
            b->rda[i] = (MPI_Aint)(6 * i * sizeof(int));
            b->rt[i] = i % 2 ? vec2 : MPI_INT;
        }
        break;
    }
    for (int i = 0; i < MAXN; i++) {
        b->scc[i] = b->sc[i];
        b->rcc[i] = b->rc[i];
        if (fam != AAW) {
            b->sda[i] = b->sd[i];
            b->rda[i] = b->rd[i];
        }
    }
}

static void fail_at(const char *what, int fam, topo *t, int mode, int it, int i, int k, int got, int want)
{
    printf("FAIL rank %d %s: family %d on %s, mode %d, iteration %d: block %d (from %d) element %d is %d, want %d\n",
           rank, what, fam, t->name, mode, it, i, t->src[i], k, got, want);
    fflush(stdout);
    exit(1);
}

#define EXPECT(idx, want)                                                   \
    do {                                                                    \
        int g_ = b->rb[idx], w_ = (want);                                   \
        if (g_ != w_)                                                       \
            fail_at("value", fam, t, mode, it, i, (int)(idx), g_, w_);      \
    } while (0)

static void check(int fam, topo *t, bufs *b, int it, int mode)
{
    for (int i = 0; i < t->in; i++) {
        int s = t->src[i], null = s == MPI_PROC_NULL, j = t->pair[i];
        switch (fam) {
        case AG:
            for (int k = 0; k < 3; k++)
                EXPECT(5 * i + 2 * k, null ? SENT : val(s, 0, k, it));
            EXPECT(5 * i + 1, SENT);
            EXPECT(5 * i + 3, SENT);
            break;
        case AA:
            for (int k = 0; k < 3; k++)
                EXPECT(3 * i + k, null ? SENT : val(s, j, k, it));
            break;
        case AGV:
            for (int k = 0; k < b->rc[i]; k++) {
                EXPECT(2 * (4 * i + k), null ? SENT : val(s, 0, k, it));
                EXPECT(2 * (4 * i + k) + 1, SENT);
            }
            break;
        case AAV: {
            int at = 8 * (t->in - 1 - i);
            for (int k = 0; k < b->rc[i]; k++)
                EXPECT(at + k, null ? SENT : val(s, j, k, it));
            EXPECT(at + b->rc[i], SENT);
            break;
        }
        case AAW:
            EXPECT(6 * i, null ? SENT : val(s, j, 0, it));
            if (i % 2) {
                EXPECT(6 * i + 1, SENT);
                EXPECT(6 * i + 2, null ? SENT : val(s, j, 1, it));
            } else {
                EXPECT(6 * i + 1, null ? SENT : val(s, j, 1, it));
                EXPECT(6 * i + 2, SENT);
            }
            break;
        }
    }
    /* Nothing written past the blocks. */
    int end = fam == AG ? 5 * t->in : fam == AA ? 3 * t->in : fam == AGV ? 8 * t->in : fam == AAV ? 8 * t->in : 6 * t->in;
    for (int x = end; x < 128; x++)
        if (b->rb[x] != SENT)
            fail_at("past the end", fam, t, mode, it, 0, x, b->rb[x], SENT);
}

/* call starts (or runs, or initializes) family fam in mode. */
static int call(int fam, topo *t, bufs *b, int mode, MPI_Request *rq)
{
    MPI_Comm c = t->c;
    int nagv = 1 + rank % 3;
    switch (mode) {
    case BLOCK:
        switch (fam) {
        case AG: return MPI_Neighbor_allgather(b->sb, 3, MPI_INT, b->rb, 1, vec3, c);
        case AA: return MPI_Neighbor_alltoall(b->sb, 1, vec3, b->rb, 3, MPI_INT, c);
        case AGV: return MPI_Neighbor_allgatherv(b->sb, nagv, MPI_INT, b->rb, b->rc, b->rd, stride2, c);
        case AAV: return MPI_Neighbor_alltoallv(b->sb, b->sc, b->sd, stride2, b->rb, b->rc, b->rd, MPI_INT, c);
        case AAW: return MPI_Neighbor_alltoallw(b->sb, b->sc, b->sda, b->st, b->rb, b->rc, b->rda, b->rt, c);
        }
        break;
    case NB:
        switch (fam) {
        case AG: return MPI_Ineighbor_allgather(b->sb, 3, MPI_INT, b->rb, 1, vec3, c, rq);
        case AA: return MPI_Ineighbor_alltoall(b->sb, 1, vec3, b->rb, 3, MPI_INT, c, rq);
        case AGV: return MPI_Ineighbor_allgatherv(b->sb, nagv, MPI_INT, b->rb, b->rc, b->rd, stride2, c, rq);
        case AAV: return MPI_Ineighbor_alltoallv(b->sb, b->sc, b->sd, stride2, b->rb, b->rc, b->rd, MPI_INT, c, rq);
        case AAW: return MPI_Ineighbor_alltoallw(b->sb, b->sc, b->sda, b->st, b->rb, b->rc, b->rda, b->rt, c, rq);
        }
        break;
    case PERSIST:
        switch (fam) {
        case AG: return MPI_Neighbor_allgather_init(b->sb, 3, MPI_INT, b->rb, 1, vec3, c, MPI_INFO_NULL, rq);
        case AA: return MPI_Neighbor_alltoall_init(b->sb, 1, vec3, b->rb, 3, MPI_INT, c, MPI_INFO_NULL, rq);
        case AGV:
            return MPI_Neighbor_allgatherv_init(b->sb, nagv, MPI_INT, b->rb, b->rc, b->rd, stride2, c, MPI_INFO_NULL, rq);
        case AAV:
            return MPI_Neighbor_alltoallv_init(b->sb, b->sc, b->sd, stride2, b->rb, b->rc, b->rd, MPI_INT, c, MPI_INFO_NULL,
                                               rq);
        case AAW:
            return MPI_Neighbor_alltoallw_init(b->sb, b->sc, b->sda, b->st, b->rb, b->rc, b->rda, b->rt, c, MPI_INFO_NULL,
                                               rq);
        }
        break;
    case BLOCK_C:
        switch (fam) {
        case AG: return MPI_Neighbor_allgather_c(b->sb, 3, MPI_INT, b->rb, 1, vec3, c);
        case AA: return MPI_Neighbor_alltoall_c(b->sb, 1, vec3, b->rb, 3, MPI_INT, c);
        case AGV: return MPI_Neighbor_allgatherv_c(b->sb, nagv, MPI_INT, b->rb, b->rcc, b->rda, stride2, c);
        case AAV: return MPI_Neighbor_alltoallv_c(b->sb, b->scc, b->sda, stride2, b->rb, b->rcc, b->rda, MPI_INT, c);
        case AAW: return MPI_Neighbor_alltoallw_c(b->sb, b->scc, b->sda, b->st, b->rb, b->rcc, b->rda, b->rt, c);
        }
        break;
    case NB_C:
        switch (fam) {
        case AG: return MPI_Ineighbor_allgather_c(b->sb, 3, MPI_INT, b->rb, 1, vec3, c, rq);
        case AA: return MPI_Ineighbor_alltoall_c(b->sb, 1, vec3, b->rb, 3, MPI_INT, c, rq);
        case AGV: return MPI_Ineighbor_allgatherv_c(b->sb, nagv, MPI_INT, b->rb, b->rcc, b->rda, stride2, c, rq);
        case AAV: return MPI_Ineighbor_alltoallv_c(b->sb, b->scc, b->sda, stride2, b->rb, b->rcc, b->rda, MPI_INT, c, rq);
        case AAW: return MPI_Ineighbor_alltoallw_c(b->sb, b->scc, b->sda, b->st, b->rb, b->rcc, b->rda, b->rt, c, rq);
        }
        break;
    case PERSIST_C:
        switch (fam) {
        case AG: return MPI_Neighbor_allgather_init_c(b->sb, 3, MPI_INT, b->rb, 1, vec3, c, MPI_INFO_NULL, rq);
        case AA: return MPI_Neighbor_alltoall_init_c(b->sb, 1, vec3, b->rb, 3, MPI_INT, c, MPI_INFO_NULL, rq);
        case AGV:
            return MPI_Neighbor_allgatherv_init_c(b->sb, nagv, MPI_INT, b->rb, b->rcc, b->rda, stride2, c, MPI_INFO_NULL,
                                                  rq);
        case AAV:
            return MPI_Neighbor_alltoallv_init_c(b->sb, b->scc, b->sda, stride2, b->rb, b->rcc, b->rda, MPI_INT, c,
                                                 MPI_INFO_NULL, rq);
        case AAW:
            return MPI_Neighbor_alltoallw_init_c(b->sb, b->scc, b->sda, b->st, b->rb, b->rcc, b->rda, b->rt, c,
                                                 MPI_INFO_NULL, rq);
        }
        break;
    }
    return -1;
}

static bufs B[NFAM];

static void run_topo(topo *t)
{
    MPI_Request rq[NFAM];
    int it = 0;
    /* Blocking, one family after the other. */
    for (int mode = BLOCK; mode <= BLOCK_C; mode += BLOCK_C - BLOCK)
        for (int fam = 0; fam < NFAM; fam++, it++) {
            prepare(fam, t, &B[fam], it);
            CHECK_RC(call(fam, t, &B[fam], mode, NULL));
            check(fam, t, &B[fam], it, mode);
        }
    /* Nonblocking: every family at once, completed together. */
    for (int mode = NB; mode <= NB_C; mode += NB_C - NB, it++) {
        for (int fam = 0; fam < NFAM; fam++) {
            prepare(fam, t, &B[fam], it);
            CHECK_RC(call(fam, t, &B[fam], mode, &rq[fam]));
        }
        CHECK_RC(MPI_Waitall(NFAM, rq, MPI_STATUSES_IGNORE));
        for (int fam = 0; fam < NFAM; fam++) {
            CHECK(rq[fam] == MPI_REQUEST_NULL);
            check(fam, t, &B[fam], it, mode);
        }
    }
    /* Persistent: made once, started three times with new data. */
    for (int mode = PERSIST; mode <= PERSIST_C; mode += PERSIST_C - PERSIST) {
        for (int fam = 0; fam < NFAM; fam++) {
            prepare(fam, t, &B[fam], 0);
            CHECK_RC(call(fam, t, &B[fam], mode, &rq[fam]));
        }
        for (int round = 0; round < 3; round++, it++) {
            for (int fam = 0; fam < NFAM; fam++)
                prepare(fam, t, &B[fam], it);
            if (round == 1) {
                for (int fam = 0; fam < NFAM; fam++)
                    CHECK_RC(MPI_Start(&rq[fam]));
            } else {
                CHECK_RC(MPI_Startall(NFAM, rq));
            }
            CHECK_RC(MPI_Waitall(NFAM, rq, MPI_STATUSES_IGNORE));
            for (int fam = 0; fam < NFAM; fam++) {
                CHECK(rq[fam] != MPI_REQUEST_NULL);
                check(fam, t, &B[fam], it, mode);
            }
        }
        for (int fam = 0; fam < NFAM; fam++) {
            CHECK_RC(MPI_Request_free(&rq[fam]));
            CHECK(rq[fam] == MPI_REQUEST_NULL);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Type_vector(3, 1, 2, MPI_INT, &vec3);
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec2);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &stride2);
    MPI_Type_contiguous(2, MPI_INT, &pair2);
    MPI_Type_commit(&vec3);
    MPI_Type_commit(&vec2);
    MPI_Type_commit(&stride2);
    MPI_Type_commit(&pair2);

    topo ts[4];
    make_ring(&ts[0]);
    make_grid(&ts[1]);
    make_dist(&ts[2]);
    make_graph(&ts[3]);
    for (int k = 0; k < 4; k++)
        run_topo(&ts[k]);

    /* A duplicate keeps the topology, and its collectives are its own. */
    topo dup = ts[1];
    dup.name = "grid dup";
    CHECK_RC(MPI_Comm_dup(ts[1].c, &dup.c));
    prepare(AA, &dup, &B[AA], 77);
    CHECK_RC(call(AA, &dup, &B[AA], BLOCK, NULL));
    check(AA, &dup, &B[AA], 77, BLOCK);
    MPI_Comm_free(&dup.c);

    /* A communicator freed while its nonblocking collective runs. */
    {
        topo f = ts[0];
        MPI_Request r;
        CHECK_RC(MPI_Comm_dup(ts[0].c, &f.c));
        prepare(AAW, &f, &B[AAW], 5);
        CHECK_RC(call(AAW, &f, &B[AAW], NB, &r));
        CHECK_RC(MPI_Comm_free(&f.c));
        CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
        check(AAW, &f, &B[AAW], 5, NB);
    }

    /* Bad input, the same at every rank. */
    {
        MPI_Comm g = ts[1].c;
        int x[64] = {0}, y[64] = {0}, cnt[MAXN] = {0}, dsp[MAXN] = {0};
        MPI_Aint adsp[MAXN] = {0};
        MPI_Datatype tys[MAXN] = {MPI_INT, MPI_INT, MPI_INT, MPI_INT, MPI_INT, MPI_INT, MPI_INT, MPI_INT};
        MPI_Request r = MPI_REQUEST_NULL;
        CHECK(MPI_Neighbor_allgather(x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD) == MPI_ERR_TOPOLOGY);
        CHECK(MPI_Ineighbor_alltoall(x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_WORLD, &r) == MPI_ERR_TOPOLOGY);
        CHECK(MPI_Neighbor_alltoallw_init(x, cnt, adsp, tys, y, cnt, adsp, tys, MPI_COMM_WORLD, MPI_INFO_NULL, &r) ==
              MPI_ERR_TOPOLOGY);
        CHECK(r == MPI_REQUEST_NULL);
        CHECK(MPI_Neighbor_allgather(x, -1, MPI_INT, y, 1, MPI_INT, g) == MPI_ERR_COUNT);
        CHECK(MPI_Neighbor_alltoall(x, 1, MPI_INT, y, -1, MPI_INT, g) == MPI_ERR_COUNT);
        CHECK(MPI_Neighbor_allgather(MPI_IN_PLACE, 1, MPI_INT, y, 1, MPI_INT, g) == MPI_ERR_BUFFER);
        CHECK(MPI_Neighbor_alltoall(x, 1, MPI_DATATYPE_NULL, y, 1, MPI_INT, g) == MPI_ERR_TYPE);
        CHECK(MPI_Ineighbor_allgather(x, 1, MPI_INT, y, 1, MPI_INT, g, NULL) == MPI_ERR_ARG);
        cnt[0] = -1;
        CHECK(MPI_Neighbor_alltoallv(x, cnt, dsp, MPI_INT, y, cnt, dsp, MPI_INT, g) == MPI_ERR_COUNT);
        CHECK(MPI_Neighbor_alltoallw(x, cnt, adsp, tys, y, cnt, adsp, tys, g) == MPI_ERR_COUNT);
        cnt[0] = 1;
        tys[0] = MPI_DATATYPE_NULL;
        CHECK(MPI_Neighbor_alltoallw(x, cnt, adsp, tys, y, cnt, adsp, tys, g) == MPI_ERR_TYPE);
        CHECK(MPI_Neighbor_allgather(x, 1, MPI_INT, y, 1, MPI_INT, MPI_COMM_NULL) == MPI_ERR_COMM);
        /* Still usable. */
        prepare(AG, &ts[1], &B[AG], 9);
        CHECK_RC(call(AG, &ts[1], &B[AG], BLOCK, NULL));
        check(AG, &ts[1], &B[AG], 9, BLOCK);
    }

    for (int k = 0; k < 4; k++)
        MPI_Comm_free(&ts[k].c);
    MPI_Type_free(&vec3);
    MPI_Type_free(&vec2);
    MPI_Type_free(&stride2);
    MPI_Type_free(&pair2);
    DONE();
}
