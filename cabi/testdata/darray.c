/* MPI_Type_create_darray against a reference computed here: for grids
 * of 1 to 3 dimensions, BLOCK, CYCLIC(k), NONE and the default
 * arguments, C and Fortran order, and every rank of several process
 * grids, the type packs (MPI_Pack of a numbered global array) exactly
 * the elements the rank owns, in type-map order; sizes and extents
 * match, the ranks' parts cover the array once, and the envelope and
 * contents give back the arguments. */
#include "check.h"

#define MAXN 4096

/* owner is the process coordinate that owns index i of a dimension. */
static int owner(int i, int g, int distrib, int darg, int p)
{
    switch (distrib) {
    case MPI_DISTRIBUTE_NONE:
        return 0;
    case MPI_DISTRIBUTE_BLOCK: {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
        return i / b;
    }
    default: {
        int k = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        return (i / k) % p;
    }
    }
}

struct darray_case {
    int ndims;
    int gsizes[3], distribs[3], dargs[3], psizes[3];
    int order;
    int width; /* ints in one element of the old type */
};

#define B MPI_DISTRIBUTE_BLOCK
#define Y MPI_DISTRIBUTE_CYCLIC
#define NO MPI_DISTRIBUTE_NONE
#define D MPI_DISTRIBUTE_DFLT_DARG

static const struct darray_case cases[] = {
    {1, {10}, {B}, {D}, {3}, MPI_ORDER_C, 1},
    {1, {10}, {B}, {4}, {3}, MPI_ORDER_C, 1},
    {1, {11}, {Y}, {D}, {4}, MPI_ORDER_FORTRAN, 1},
    {1, {17}, {Y}, {3}, {2}, MPI_ORDER_C, 2},
    {2, {6, 8}, {B, B}, {D, D}, {2, 2}, MPI_ORDER_C, 1},
    {2, {6, 8}, {B, B}, {D, D}, {2, 2}, MPI_ORDER_FORTRAN, 1},
    {2, {7, 5}, {Y, B}, {2, D}, {3, 2}, MPI_ORDER_C, 1},
    {2, {7, 5}, {Y, B}, {2, D}, {3, 2}, MPI_ORDER_FORTRAN, 3},
    {2, {9, 4}, {NO, Y}, {D, D}, {1, 3}, MPI_ORDER_C, 1},
    {2, {5, 9}, {B, NO}, {2, D}, {3, 1}, MPI_ORDER_FORTRAN, 1},
    {3, {4, 5, 6}, {B, Y, Y}, {D, 2, D}, {2, 2, 3}, MPI_ORDER_C, 1},
    {3, {4, 5, 6}, {Y, NO, B}, {3, D, 2}, {2, 1, 3}, MPI_ORDER_FORTRAN, 2},
    {3, {3, 3, 3}, {B, B, B}, {D, D, D}, {4, 1, 1}, MPI_ORDER_C, 1}, /* a rank owns nothing */
};

static int global[MAXN], packed[MAXN], want[MAXN];

/* reference lists, in type-map order, the ints of the elements that
 * rank owns. */
static int reference(const struct darray_case *c, int rank, int *out)
{
    int coords[3], rem = rank, n = c->ndims;
    for (int d = n - 1; d >= 0; d--) {
        coords[d] = rem % c->psizes[d];
        rem /= c->psizes[d];
    }
    /* Dimensions from slowest to fastest. */
    int dims[3];
    for (int k = 0; k < n; k++)
        dims[k] = c->order == MPI_ORDER_C ? k : n - 1 - k;
    int idx[3] = {0, 0, 0}, cnt = 0;
    for (;;) {
        int mine = 1;
        for (int d = 0; d < n; d++)
            mine &= owner(idx[d], c->gsizes[d], c->distribs[d], c->dargs[d], c->psizes[d]) == coords[d];
        if (mine) {
            long lin = 0;
            for (int k = 0; k < n; k++)
                lin = lin * c->gsizes[dims[k]] + idx[dims[k]];
            for (int w = 0; w < c->width; w++)
                out[cnt++] = (int)lin * c->width + w;
        }
        int k = n - 1;
        for (; k >= 0; k--) {
            int d = dims[k];
            if (++idx[d] < c->gsizes[d])
                break;
            idx[d] = 0;
        }
        if (k < 0)
            return cnt;
    }
}

static void check_case(const struct darray_case *c)
{
    int n = c->ndims, size = 1, total = 1;
    for (int d = 0; d < n; d++) {
        size *= c->psizes[d];
        total *= c->gsizes[d];
    }
    MPI_Datatype old = MPI_INT;
    if (c->width > 1)
        CHECK_RC(MPI_Type_contiguous(c->width, MPI_INT, &old));
    static int cover[MAXN];
    memset(cover, 0, sizeof cover);
    for (int rank = 0; rank < size; rank++) {
        MPI_Datatype t;
        CHECK_RC(MPI_Type_create_darray(size, rank, n, c->gsizes, c->distribs, c->dargs, c->psizes, c->order, old, &t));
        CHECK_RC(MPI_Type_commit(&t));
        int cnt = reference(c, rank, want);
        int tsize;
        MPI_Aint lb, ext;
        MPI_Type_size(t, &tsize);
        MPI_Type_get_extent(t, &lb, &ext);
        CHECK(tsize == cnt * (int)sizeof(int));
        CHECK(lb == 0 && ext == (MPI_Aint)total * c->width * (MPI_Aint)sizeof(int));
        int pos = 0;
        CHECK_RC(MPI_Pack(global, 1, t, packed, sizeof packed, &pos, MPI_COMM_SELF));
        CHECK(pos == tsize);
        if (memcmp(packed, want, pos) != 0) {
            printf("case ndims %d order %d rank %d:", n, c->order, rank);
            for (int i = 0; i < cnt; i++)
                printf(" %d/%d", packed[i], want[i]);
            printf("\n");
        }
        CHECK(memcmp(packed, want, pos) == 0);
        for (int i = 0; i < cnt; i++)
            cover[want[i]]++;
        /* The large-count form makes the same type. */
        MPI_Count gc[3];
        for (int d = 0; d < n; d++)
            gc[d] = c->gsizes[d];
        MPI_Datatype tc;
        CHECK_RC(MPI_Type_create_darray_c(size, rank, n, gc, c->distribs, c->dargs, c->psizes, c->order, old, &tc));
        CHECK_RC(MPI_Type_commit(&tc));
        static int packed2[MAXN];
        int pos2 = 0;
        CHECK_RC(MPI_Pack(global, 1, tc, packed2, sizeof packed2, &pos2, MPI_COMM_SELF));
        CHECK(pos2 == pos && memcmp(packed, packed2, pos) == 0);
        /* Envelope and contents: the arguments back. */
        int ni, na, nd, comb;
        CHECK_RC(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
        CHECK(comb == MPI_COMBINER_DARRAY && ni == 4 * n + 4 && na == 0 && nd == 1);
        int ints[16];
        MPI_Aint aints[1];
        MPI_Datatype kids[1];
        CHECK_RC(MPI_Type_get_contents(t, 16, 0, 1, ints, aints, kids));
        CHECK(ints[0] == size && ints[1] == rank && ints[2] == n && ints[3 + 4 * n] == c->order);
        for (int d = 0; d < n; d++)
            CHECK(ints[3 + d] == c->gsizes[d] && ints[3 + n + d] == c->distribs[d] &&
                  ints[3 + 2 * n + d] == c->dargs[d] && ints[3 + 3 * n + d] == c->psizes[d]);
        if (kids[0] != MPI_INT)
            MPI_Type_free(&kids[0]);
        MPI_Type_free(&t);
        MPI_Type_free(&tc);
    }
    for (int i = 0; i < total * c->width; i++)
        CHECK(cover[i] == 1);
    if (old != MPI_INT)
        MPI_Type_free(&old);
}

static void errors(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Datatype t;
    int g[2] = {10, 10}, ds[2] = {B, B}, da[2] = {D, D}, ps[2] = {2, 2}, cls;
    /* size is not the grid's */
    MPI_Error_class(MPI_Type_create_darray(3, 0, 2, g, ds, da, ps, MPI_ORDER_C, MPI_INT, &t), &cls);
    CHECK(cls == MPI_ERR_ARG);
    /* blocks of 4 on 2 processes do not cover 10 */
    int small[2] = {4, D};
    MPI_Error_class(MPI_Type_create_darray(4, 0, 2, g, ds, small, ps, MPI_ORDER_C, MPI_INT, &t), &cls);
    CHECK(cls == MPI_ERR_ARG);
    /* a dimension not distributed over 2 processes */
    int none[2] = {NO, B};
    MPI_Error_class(MPI_Type_create_darray(4, 0, 2, g, none, da, ps, MPI_ORDER_C, MPI_INT, &t), &cls);
    CHECK(cls == MPI_ERR_ARG);
    /* rank out of range, bad order */
    MPI_Error_class(MPI_Type_create_darray(4, 4, 2, g, ds, da, ps, MPI_ORDER_C, MPI_INT, &t), &cls);
    CHECK(cls == MPI_ERR_ARG);
    MPI_Error_class(MPI_Type_create_darray(4, 0, 2, g, ds, da, ps, 3, MPI_INT, &t), &cls);
    CHECK(cls == MPI_ERR_ARG);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    for (int i = 0; i < MAXN; i++)
        global[i] = i;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(&cases[i]);
    errors();
    DONE();
}
