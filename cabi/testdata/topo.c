/* Virtual topologies: Dims_create, Cartesian grids (create, get, rank,
 * coords, shift on periodic and non-periodic dimensions, sub, map),
 * graphs, distributed graphs (adjacent and general, weighted and not),
 * Topo_test, and bad input through MPI_ERRORS_RETURN, against references
 * computed here. Runs at any number of ranks. */
#include "check.h"

/* MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are the ABI's small constant
 * pointers, which gcc takes for arrays of no room. */
#pragma GCC diagnostic ignored "-Wstringop-overread"
#pragma GCC diagnostic ignored "-Wstringop-overflow"

/* The smallest spread (largest - smallest) of a factorization of n into
 * m factors of at least 1. */
static int best_spread(int n, int m, int lo, int maxf, int minf)
{
    if (m == 0)
        return n == 1 ? maxf - minf : 1 << 30;
    int best = 1 << 30;
    for (int f = lo; f <= n; f++) {
        if (n % f)
            continue;
        int mx = maxf > f ? maxf : f, mn = minf < f ? minf : f;
        int s = best_spread(n / f, m - 1, f, mx, mn);
        if (s < best)
            best = s;
    }
    return best;
}

static void check_dims(int nnodes, int ndims)
{
    int dims[8] = {0};
    CHECK_RC(MPI_Dims_create(nnodes, ndims, dims));
    int prod = 1, mx = 0, mn = 1 << 30;
    for (int i = 0; i < ndims; i++) {
        prod *= dims[i];
        CHECK(dims[i] >= 1);
        if (i > 0)
            CHECK(dims[i] <= dims[i - 1]);
        mx = dims[i] > mx ? dims[i] : mx;
        mn = dims[i] < mn ? dims[i] : mn;
    }
    CHECK(prod == nnodes);
    if (mx - mn != best_spread(nnodes, ndims, 1, 0, 1 << 30)) {
        printf("FAIL Dims_create(%d, %d): spread %d, best %d\n", nnodes, ndims, mx - mn,
               best_spread(nnodes, ndims, 1, 0, 1 << 30));
        exit(1);
    }
}

/* Row-major coordinates of r in a grid. */
static void coords_of(int r, int nd, const int *dims, int *c)
{
    for (int i = nd - 1; i >= 0; i--) {
        c[i] = r % dims[i];
        r /= dims[i];
    }
}

static int rank_of(int nd, const int *dims, const int *periods, const int *c)
{
    int r = 0;
    for (int i = 0; i < nd; i++) {
        int x = c[i];
        if (periods[i])
            x = ((x % dims[i]) + dims[i]) % dims[i];
        else if (x < 0 || x >= dims[i])
            return MPI_PROC_NULL;
        r = r * dims[i] + x;
    }
    return r;
}

/* The irregular graph of the distributed-graph tests: r sends to r+1,
 * and, if r is even, to r+3 (mod n); it receives from those that send
 * to it, in that order. */
static int dests_of(int r, int n, int *d)
{
    int k = 0;
    d[k++] = (r + 1) % n;
    if (r % 2 == 0)
        d[k++] = (r + 3) % n;
    return k;
}

static int sources_of(int r, int n, int *s)
{
    int k = 0;
    s[k++] = (r - 1 + n) % n;
    int q = ((r - 3) % n + n) % n;
    if (q % 2 == 0)
        s[k++] = q;
    return k;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int main(int argc, char **argv)
{
    int rank, size, status;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm w = MPI_COMM_WORLD;

    /* Dims_create: the known grids, fixed entries kept, every factorization
     * as balanced as possible. */
    {
        static const struct {
            int n, nd, want[4];
        } known[] = {
            {6, 2, {3, 2}},     {12, 2, {4, 3}},    {16, 3, {4, 2, 2}}, {24, 3, {4, 3, 2}},
            {30, 3, {5, 3, 2}}, {7, 2, {7, 1}},     {8, 3, {2, 2, 2}},  {36, 2, {6, 6}},
            {100, 3, {5, 5, 4}}, {1, 2, {1, 1}},    {64, 4, {4, 4, 2, 2}},
        };
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
            int d[4] = {0, 0, 0, 0};
            CHECK_RC(MPI_Dims_create(known[k].n, known[k].nd, d));
            for (int i = 0; i < known[k].nd; i++)
                CHECK(d[i] == known[k].want[i]);
        }
        int d[3] = {0, 3, 0};
        CHECK_RC(MPI_Dims_create(12, 3, d));
        CHECK(d[0] == 2 && d[1] == 3 && d[2] == 2);
        for (int n = 1; n <= 72; n++)
            for (int nd = 1; nd <= 4; nd++)
                check_dims(n, nd);
        int bad[2] = {4, 0};
        CHECK(MPI_Dims_create(6, 2, bad) == MPI_ERR_DIMS);
        int neg[2] = {-1, 0};
        CHECK(MPI_Dims_create(6, 2, neg) == MPI_ERR_DIMS);
    }

    /* No topology. */
    CHECK_RC(MPI_Topo_test(w, &status));
    CHECK(status == MPI_UNDEFINED);

    /* A 2-D grid, periodic along dimension 0 only, and a 3-D one. */
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    CHECK_RC(MPI_Cart_create(w, 2, dims, periods, 1, &cart));
    CHECK(cart != MPI_COMM_NULL);
    int crank, csize;
    MPI_Comm_rank(cart, &crank);
    MPI_Comm_size(cart, &csize);
    CHECK(crank == rank && csize == size);
    CHECK_RC(MPI_Topo_test(cart, &status));
    CHECK(status == MPI_CART);
    int nd = -1;
    CHECK_RC(MPI_Cartdim_get(cart, &nd));
    CHECK(nd == 2);
    int gd[3] = {-1, -1, -1}, gp[3] = {-1, -1, -1}, gc[3] = {-1, -1, -1}, mine[2];
    CHECK_RC(MPI_Cart_get(cart, 3, gd, gp, gc));
    coords_of(rank, 2, dims, mine);
    CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gd[2] == -1);
    CHECK(gp[0] == 1 && gp[1] == 0);
    CHECK(gc[0] == mine[0] && gc[1] == mine[1]);
    for (int r = 0; r < size; r++) {
        int c[2], want[2], rr = -1;
        CHECK_RC(MPI_Cart_coords(cart, r, 2, c));
        coords_of(r, 2, dims, want);
        CHECK(c[0] == want[0] && c[1] == want[1]);
        CHECK_RC(MPI_Cart_rank(cart, c, &rr));
        CHECK(rr == r);
    }
    /* Periodic coordinates wrap around. */
    {
        int c[2] = {mine[0] + 3 * dims[0], mine[1]}, rr;
        CHECK_RC(MPI_Cart_rank(cart, c, &rr));
        CHECK(rr == rank);
        c[0] = mine[0] - dims[0];
        CHECK_RC(MPI_Cart_rank(cart, c, &rr));
        CHECK(rr == rank);
    }
    for (int dir = 0; dir < 2; dir++)
        for (int disp = -3; disp <= 3; disp++) {
            int s = -99, d = -99, c[2];
            CHECK_RC(MPI_Cart_shift(cart, dir, disp, &s, &d));
            memcpy(c, mine, sizeof c);
            c[dir] -= disp;
            CHECK(s == rank_of(2, dims, periods, c));
            memcpy(c, mine, sizeof c);
            c[dir] += disp;
            CHECK(d == rank_of(2, dims, periods, c));
        }
    /* A duplicate keeps the topology. */
    MPI_Comm cdup;
    CHECK_RC(MPI_Comm_dup(cart, &cdup));
    CHECK_RC(MPI_Topo_test(cdup, &status));
    CHECK(status == MPI_CART);
    {
        int s, d;
        CHECK_RC(MPI_Cart_shift(cdup, 0, 1, &s, &d));
        int c[2] = {mine[0] + 1, mine[1]};
        CHECK(d == rank_of(2, dims, periods, c));
    }
    MPI_Comm_free(&cdup);

    /* Cart_sub: the rows (dimension 1 kept), the columns, and nothing. */
    for (int keep = 0; keep < 2; keep++) {
        int remain[2] = {keep == 0, keep == 1};
        MPI_Comm sub;
        CHECK_RC(MPI_Cart_sub(cart, remain, &sub));
        int sr, ss, snd;
        MPI_Comm_rank(sub, &sr);
        MPI_Comm_size(sub, &ss);
        CHECK(ss == dims[keep] && sr == mine[keep]);
        CHECK_RC(MPI_Cartdim_get(sub, &snd));
        CHECK(snd == 1);
        int sd, sp, sc;
        CHECK_RC(MPI_Cart_get(sub, 1, &sd, &sp, &sc));
        CHECK(sd == dims[keep] && sp == periods[keep] && sc == mine[keep]);
        /* Its members are those of the same other coordinate. */
        int other = -1, want = mine[1 - keep];
        int c[2];
        MPI_Allreduce(&mine[1 - keep], &other, 1, MPI_INT, MPI_MAX, sub);
        CHECK(other == want);
        int s, d;
        CHECK_RC(MPI_Cart_shift(sub, 0, 1, &s, &d));
        memcpy(c, mine, sizeof c);
        c[keep] += 1;
        int wd = rank_of(2, dims, periods, c);
        CHECK(d == (wd == MPI_PROC_NULL ? MPI_PROC_NULL : (keep == 0 ? wd / dims[1] : wd % dims[1])));
        MPI_Comm_free(&sub);
    }
    {
        int remain[2] = {0, 0};
        MPI_Comm sub;
        CHECK_RC(MPI_Cart_sub(cart, remain, &sub));
        int ss, snd;
        MPI_Comm_size(sub, &ss);
        CHECK(ss == 1);
        CHECK_RC(MPI_Cartdim_get(sub, &snd));
        CHECK(snd == 0);
        MPI_Comm_free(&sub);
    }
    /* Cart_map: ranks in order, UNDEFINED past the grid. */
    {
        int nr, d1[1] = {size > 1 ? size - 1 : 1}, p1[1] = {0};
        CHECK_RC(MPI_Cart_map(w, 1, d1, p1, &nr));
        CHECK(nr == (rank < d1[0] ? rank : MPI_UNDEFINED));
    }
    /* A grid smaller than the communicator: the last rank is left out. */
    if (size > 1) {
        int d1[1] = {size - 1}, p1[1] = {1};
        MPI_Comm small;
        CHECK_RC(MPI_Cart_create(w, 1, d1, p1, 0, &small));
        if (rank == size - 1) {
            CHECK(small == MPI_COMM_NULL);
        } else {
            int s, d;
            CHECK(small != MPI_COMM_NULL);
            CHECK_RC(MPI_Cart_shift(small, 0, 1, &s, &d));
            CHECK(s == (rank - 1 + size - 1) % (size - 1) && d == (rank + 1) % (size - 1));
            MPI_Comm_free(&small);
        }
    }
    /* A 3-D periodic grid of size x 1 x 1. */
    {
        int d3[3] = {size, 1, 1}, p3[3] = {1, 1, 0}, c3[3];
        MPI_Comm c;
        CHECK_RC(MPI_Cart_create(w, 3, d3, p3, 0, &c));
        CHECK_RC(MPI_Cart_coords(c, rank, 3, c3));
        CHECK(c3[0] == rank && c3[1] == 0 && c3[2] == 0);
        int s, d;
        CHECK_RC(MPI_Cart_shift(c, 1, 1, &s, &d));
        CHECK(s == rank && d == rank); /* periodic of 1: itself */
        CHECK_RC(MPI_Cart_shift(c, 2, 1, &s, &d));
        CHECK(s == MPI_PROC_NULL && d == MPI_PROC_NULL);
        MPI_Comm_free(&c);
    }

    /* A graph: a ring with both neighbours, and node 0 also linked to
     * every other node (edges both ways). */
    {
        int index[64], edges[256], ne = 0;
        CHECK(size <= 64);
        for (int i = 0; i < size; i++) {
            if (size > 1) {
                edges[ne++] = (i + 1) % size;
                edges[ne++] = (i - 1 + size) % size;
            }
            if (i == 0)
                for (int j = 2; j < size - 1; j++)
                    edges[ne++] = j;
            else if (i >= 2 && i < size - 1)
                edges[ne++] = 0;
            index[i] = ne;
        }
        MPI_Comm g;
        CHECK_RC(MPI_Graph_create(w, size, index, edges, 0, &g));
        CHECK_RC(MPI_Topo_test(g, &status));
        CHECK(status == MPI_GRAPH);
        int nn, nedges;
        CHECK_RC(MPI_Graphdims_get(g, &nn, &nedges));
        CHECK(nn == size && nedges == ne);
        int gi[64], ge[256];
        CHECK_RC(MPI_Graph_get(g, 64, 256, gi, ge));
        CHECK(memcmp(gi, index, sizeof(int) * size) == 0);
        CHECK(memcmp(ge, edges, sizeof(int) * ne) == 0);
        for (int r = 0; r < size; r++) {
            int cnt, nb[64];
            int lo = r == 0 ? 0 : index[r - 1];
            CHECK_RC(MPI_Graph_neighbors_count(g, r, &cnt));
            CHECK(cnt == index[r] - lo);
            CHECK_RC(MPI_Graph_neighbors(g, r, 64, nb));
            CHECK(memcmp(nb, edges + lo, sizeof(int) * cnt) == 0);
        }
        int nr;
        CHECK_RC(MPI_Graph_map(w, size, index, edges, &nr));
        CHECK(nr == rank);
        CHECK(MPI_Graph_neighbors(g, size, 64, gi) == MPI_ERR_RANK);
        CHECK(MPI_Cart_shift(g, 0, 1, &nr, &nr) == MPI_ERR_TOPOLOGY);
        MPI_Comm_free(&g);
    }

    /* Distributed graphs. Adjacent and weighted: weight 100*from + to. */
    {
        int src[4], dst[4], sw[4], dw[4];
        int in = sources_of(rank, size, src), out = dests_of(rank, size, dst);
        for (int i = 0; i < in; i++)
            sw[i] = 100 * src[i] + rank;
        for (int j = 0; j < out; j++)
            dw[j] = 100 * rank + dst[j];
        MPI_Comm dg;
        CHECK_RC(MPI_Dist_graph_create_adjacent(w, in, src, sw, out, dst, dw, MPI_INFO_NULL, 0, &dg));
        CHECK_RC(MPI_Topo_test(dg, &status));
        CHECK(status == MPI_DIST_GRAPH);
        int gin, gout, weighted;
        CHECK_RC(MPI_Dist_graph_neighbors_count(dg, &gin, &gout, &weighted));
        CHECK(gin == in && gout == out && weighted == 1);
        int s2[4], d2[4], sw2[4], dw2[4];
        CHECK_RC(MPI_Dist_graph_neighbors(dg, 4, s2, sw2, 4, d2, dw2));
        CHECK(memcmp(s2, src, sizeof(int) * in) == 0 && memcmp(d2, dst, sizeof(int) * out) == 0);
        CHECK(memcmp(sw2, sw, sizeof(int) * in) == 0 && memcmp(dw2, dw, sizeof(int) * out) == 0);
        /* MPI_UNWEIGHTED as the output: weights not written. */
        CHECK_RC(MPI_Dist_graph_neighbors(dg, 4, s2, MPI_UNWEIGHTED, 4, d2, MPI_UNWEIGHTED));
        MPI_Comm_free(&dg);

        /* The same graph, unweighted. */
        MPI_Comm ug;
        CHECK_RC(MPI_Dist_graph_create_adjacent(w, in, src, MPI_UNWEIGHTED, out, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ug));
        CHECK_RC(MPI_Dist_graph_neighbors_count(ug, &gin, &gout, &weighted));
        CHECK(gin == in && gout == out && weighted == 0);
        MPI_Comm_free(&ug);

        /* Weighted with MPI_WEIGHTS_EMPTY at a rank without edges. */
        int none = size > 1 && rank == 1;
        int win = 0, wout = 0, ws[4], wd[4], wsw[4], wdw[4];
        /* Edges r -> r+1 except into and out of rank 1. */
        if (size > 1) {
            int from = (rank - 1 + size) % size, to = (rank + 1) % size;
            if (!none && from != 1 && from != rank) {
                ws[win] = from;
                wsw[win++] = 7;
            }
            if (!none && to != 1 && to != rank) {
                wd[wout] = to;
                wdw[wout++] = 7;
            }
        }
        MPI_Comm eg;
        CHECK_RC(MPI_Dist_graph_create_adjacent(w, win, ws, win ? wsw : MPI_WEIGHTS_EMPTY, wout, wd,
                                                wout ? wdw : MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &eg));
        CHECK_RC(MPI_Dist_graph_neighbors_count(eg, &gin, &gout, &weighted));
        CHECK(gin == win && gout == wout && weighted == 1);
        MPI_Comm_free(&eg);

        /* General: rank 0 names every edge of the irregular graph, with
         * weights; every rank gets its own, in some order. */
        int n = 0, *esrc = NULL, *edeg = NULL, *edst = NULL, *ew = NULL;
        if (rank == 0) {
            esrc = malloc(sizeof(int) * size);
            edeg = malloc(sizeof(int) * size);
            edst = malloc(sizeof(int) * 2 * size);
            ew = malloc(sizeof(int) * 2 * size);
            int k = 0;
            for (int r = 0; r < size; r++) {
                int d[4], nd2 = dests_of(r, size, d);
                esrc[n] = r;
                edeg[n++] = nd2;
                for (int j = 0; j < nd2; j++) {
                    edst[k] = d[j];
                    ew[k++] = 100 * r + d[j];
                }
            }
        }
        MPI_Comm gg;
        /* The ranks with no edge pass a null array of no weights at rank 2
         * (MPICH's distgraph1): the same as MPI_WEIGHTS_EMPTY. */
        CHECK_RC(MPI_Dist_graph_create(w, n, esrc, edeg, edst, rank == 0 ? ew : rank == 2 ? NULL : MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &gg));
        CHECK_RC(MPI_Dist_graph_neighbors_count(gg, &gin, &gout, &weighted));
        CHECK(gin == in && gout == out && weighted == 1);
        CHECK_RC(MPI_Dist_graph_neighbors(gg, 4, s2, sw2, 4, d2, dw2));
        for (int i = 0; i < in; i++)
            CHECK(sw2[i] == 100 * s2[i] + rank);
        for (int j = 0; j < out; j++)
            CHECK(dw2[j] == 100 * rank + d2[j]);
        qsort(s2, in, sizeof(int), cmp_int);
        qsort(d2, out, sizeof(int), cmp_int);
        qsort(src, in, sizeof(int), cmp_int);
        qsort(dst, out, sizeof(int), cmp_int);
        CHECK(memcmp(s2, src, sizeof(int) * in) == 0 && memcmp(d2, dst, sizeof(int) * out) == 0);
        MPI_Comm_free(&gg);
        free(esrc);
        free(edeg);
        free(edst);
        free(ew);
    }

    /* Bad input, through MPI_ERRORS_RETURN. */
    {
        int c[2], s, d, nr;
        int zero[2] = {0, 1}, big[2] = {size + 1, 1}, p2[2] = {0, 0};
        MPI_Comm out = MPI_COMM_NULL;
        CHECK(MPI_Cart_coords(w, 0, 2, c) == MPI_ERR_TOPOLOGY);
        CHECK(MPI_Cart_shift(w, 0, 1, &s, &d) == MPI_ERR_TOPOLOGY);
        CHECK(MPI_Cartdim_get(w, &nr) == MPI_ERR_TOPOLOGY);
        CHECK(MPI_Graphdims_get(cart, &nr, &nr) == MPI_ERR_TOPOLOGY);
        CHECK(MPI_Dist_graph_neighbors_count(cart, &nr, &nr, &nr) == MPI_ERR_TOPOLOGY);
        CHECK(MPI_Cart_coords(cart, size, 2, c) == MPI_ERR_RANK);
        CHECK(MPI_Cart_coords(cart, 0, 1, c) == MPI_ERR_ARG);
        CHECK(MPI_Cart_shift(cart, 2, 1, &s, &d) == MPI_ERR_ARG);
        CHECK(MPI_Cart_shift(cart, -1, 1, &s, &d) == MPI_ERR_ARG);
        c[0] = 0;
        c[1] = dims[1]; /* off the non-periodic dimension */
        CHECK(MPI_Cart_rank(cart, c, &nr) == MPI_ERR_ARG);
        CHECK(MPI_Cart_create(w, 2, zero, p2, 0, &out) == MPI_ERR_DIMS);
        out = w;
        CHECK(MPI_Cart_create(w, 2, big, p2, 0, &out) == MPI_ERR_ARG);
        CHECK(out == MPI_COMM_NULL); /* what an error leaves */
        CHECK(MPI_Cart_create(w, -1, big, p2, 0, &out) == MPI_ERR_ARG);
        CHECK(MPI_Cart_create(MPI_COMM_NULL, 2, dims, p2, 0, &out) == MPI_ERR_COMM);
        CHECK(MPI_Cart_map(w, 2, zero, p2, &nr) == MPI_ERR_DIMS);
        CHECK(MPI_Topo_test(MPI_COMM_NULL, &nr) == MPI_ERR_COMM);
        CHECK(out == MPI_COMM_NULL);
        static int zidx[65];
        int idx[1] = {1}, e[1] = {size};
        CHECK(MPI_Graph_create(w, 1, idx, e, 0, &out) == MPI_ERR_RANK);
        CHECK(MPI_Graph_create(w, size + 1, zidx, e, 0, &out) == MPI_ERR_ARG);
        CHECK(MPI_Graph_create(w, -1, idx, e, 0, &out) == MPI_ERR_ARG);
        /* A bad rank at one member only: every member gets an error, none
         * waits. */
        int one = (rank + 1) % size, back = (rank - 1 + size) % size;
        int bsrc = rank == 0 ? size : back;
        int rc = MPI_Dist_graph_create_adjacent(w, 1, &bsrc, MPI_UNWEIGHTED, 1, &one, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &out);
        CHECK(rc == (rank == 0 ? MPI_ERR_RANK : MPI_ERR_ARG));
        CHECK(out == MPI_COMM_NULL);
        /* A negative degree at one member. */
        rc = MPI_Dist_graph_create_adjacent(w, rank == 0 ? -1 : 1, &back, MPI_UNWEIGHTED, 1, &one, MPI_UNWEIGHTED,
                                            MPI_INFO_NULL, 0, &out);
        CHECK(rc == MPI_ERR_ARG);
        /* Inconsistent: everyone names its next as a destination but
         * nobody names a source. */
        if (size > 1) {
            rc = MPI_Dist_graph_create_adjacent(w, 0, NULL, MPI_UNWEIGHTED, 1, &one, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &out);
            CHECK(rc == MPI_ERR_ARG);
        }
        /* Weighted at some members, not at others. */
        if (size > 1) {
            int wt = 1;
            rc = MPI_Dist_graph_create_adjacent(w, 1, &back, rank == 0 ? &wt : MPI_UNWEIGHTED, 1, &one,
                                                rank == 0 ? &wt : MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &out);
            CHECK(rc == MPI_ERR_ARG);
        }
        /* Dist_graph_create with a negative degree at rank 0. */
        int deg = rank == 0 ? -1 : 1;
        rc = MPI_Dist_graph_create(w, 1, &rank, &deg, &one, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &out);
        CHECK(rc == MPI_ERR_ARG);
        CHECK(out == MPI_COMM_NULL);
        /* The world is still fine. */
        int sum = 0;
        CHECK_RC(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, w));
        CHECK(sum == size * (size - 1) / 2 || size == 1);
    }

    MPI_Comm_free(&cart);
    DONE();
}
