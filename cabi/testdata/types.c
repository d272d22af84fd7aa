/* Derived datatypes against a packing reference: each type's data is
 * packed by hand from its type map, compared with MPI_Pack, sent as the
 * type and received as bytes (and back). Sizes, extents, Get_elements,
 * envelope and contents, names. */
#include "check.h"
#include <complex.h>
#include <stddef.h>

#define N 4096
static double src[N], dst[N];

/* ref packs count elements of a type described by (offset, length) byte
 * runs of one element and its extent. */
static int ref(const char *base, int count, const int *off, const int *len, int nruns, long extent, char *out)
{
    int pos = 0;
    for (int i = 0; i < count; i++)
        for (int r = 0; r < nruns; r++) {
            memcpy(out + pos, base + i * extent + off[r], len[r]);
            pos += len[r];
        }
    return pos;
}

static void roundtrip(MPI_Datatype t, int count, const int *off, const int *len, int nruns, long extent, int rank)
{
    static char want[N * 8], got[N * 8];
    int n = ref((const char *)src, count, off, len, nruns, extent, want);
    int size;
    MPI_Type_size(t, &size);
    CHECK(size * count == n);
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t, &lb, &ext);
    CHECK(ext == extent);
    int pos = 0;
    CHECK_RC(MPI_Pack(src, count, t, got, sizeof got, &pos, MPI_COMM_WORLD));
    CHECK(pos == n && memcmp(want, got, n) == 0);
    int psize;
    MPI_Pack_size(count, t, MPI_COMM_WORLD, &psize);
    CHECK(psize >= n);
    /* Unpack into a cleared buffer and compare the runs. */
    memset(dst, 0, sizeof dst);
    pos = 0;
    CHECK_RC(MPI_Unpack(got, n, &pos, dst, count, t, MPI_COMM_WORLD));
    CHECK(pos == n);
    n = ref((const char *)dst, count, off, len, nruns, extent, got);
    CHECK(memcmp(want, got, n) == 0);
    /* Send as the type, receive as bytes; and the reverse. */
    MPI_Status st;
    if (rank == 0) {
        MPI_Send(src, count, t, 1, 1, MPI_COMM_WORLD);
        MPI_Send(want, n, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
        MPI_Recv(got, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &st);
        CHECK(memcmp(want, got, n) == 0);
    } else {
        MPI_Recv(got, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
        CHECK(memcmp(want, got, n) == 0);
        memset(dst, 0, sizeof dst);
        MPI_Recv(dst, count, t, 0, 3, MPI_COMM_WORLD, &st);
        int k;
        MPI_Get_count(&st, t, &k);
        CHECK(k == count);
        ref((const char *)dst, count, off, len, nruns, extent, got);
        CHECK(memcmp(want, got, n) == 0);
        MPI_Send(want, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < N; i++)
        src[i] = i + 0.5;
    MPI_Datatype t;

    /* Predefined sizes and extents. */
    int s;
    MPI_Aint lb, ext;
    MPI_Type_size(MPI_DOUBLE_INT, &s);
    MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &ext);
    CHECK(s == 12 && ext == 16 && lb == 0);
    MPI_Type_size(MPI_SHORT_INT, &s);
    CHECK(s == 6);
    MPI_Type_size(MPI_LONG_DOUBLE, &s);
    CHECK(s == sizeof(long double));
    MPI_Type_size(MPI_C_BOOL, &s);
    CHECK(s == 1);

    /* vector: 3 blocks of 2 doubles, stride 5. */
    MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    {
        int off[] = {0, 40, 80}, len[] = {16, 16, 16};
        roundtrip(t, 7, off, len, 3, 96, rank);
    }
    MPI_Type_get_extent(t, &lb, &ext);
    CHECK(lb == 0 && ext == 96);
    MPI_Aint tlb, text;
    MPI_Type_get_true_extent(t, &tlb, &text);
    CHECK(tlb == 0 && text == 96);
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nd == 1);
    int ints[3];
    MPI_Datatype kids[1];
    MPI_Type_get_contents(t, 3, 0, 1, ints, NULL, kids);
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5 && kids[0] == MPI_DOUBLE);
    MPI_Type_set_name(t, "my vector");
    char name[MPI_MAX_OBJECT_NAME];
    int nl;
    MPI_Type_get_name(t, name, &nl);
    CHECK(strcmp(name, "my vector") == 0 && nl == 9);
    MPI_Type_get_name(MPI_INT, name, &nl);
    CHECK(strcmp(name, "MPI_INT") == 0);

    /* Get_elements of a partial message. */
    if (rank == 0) {
        MPI_Send(src, 7, MPI_DOUBLE, 1, 10, MPI_COMM_WORLD);
    } else {
        MPI_Status st;
        MPI_Recv(dst, 2, t, 0, 10, MPI_COMM_WORLD, &st);
        int k;
        MPI_Get_count(&st, t, &k);
        CHECK(k == MPI_UNDEFINED);
        MPI_Get_elements(&st, t, &k);
        CHECK(k == 7);
        CHECK(dst[0] == src[0] && dst[1] == src[1] && dst[5] == src[2] && dst[6] == src[3] && dst[10] == src[4] && dst[11] == src[5] && dst[12] == src[6]);
    }
    MPI_Type_free(&t);
    CHECK(t == MPI_DATATYPE_NULL);

    /* hvector of a vector (nested). */
    MPI_Datatype inner;
    MPI_Type_vector(2, 1, 2, MPI_DOUBLE, &inner);
    MPI_Type_create_hvector(3, 1, 64, inner, &t);
    MPI_Type_commit(&t);
    {
        int off[] = {0, 16, 64, 80, 128, 144}, len[] = {8, 8, 8, 8, 8, 8};
        roundtrip(t, 3, off, len, 6, 152, rank);
    }
    MPI_Type_free(&t);
    MPI_Type_free(&inner);

    /* indexed, hindexed, indexed_block. */
    int bl[] = {3, 1, 2}, di[] = {4, 0, 10};
    MPI_Type_indexed(3, bl, di, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    {
        int off[] = {32, 0, 80}, len[] = {24, 8, 16};
        roundtrip(t, 5, off, len, 3, 96, rank);
    }
    MPI_Type_free(&t);
    MPI_Aint hd[] = {8, 40};
    int hbl[] = {2, 1};
    MPI_Type_create_hindexed(2, hbl, hd, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    {
        int off[] = {8, 40}, len[] = {16, 8};
        MPI_Type_get_extent(t, &lb, &ext);
        CHECK(lb == 8 && ext == 40);
        roundtrip(t, 1, off, len, 2, 40, rank);
    }
    MPI_Type_free(&t);
    int bd[] = {1, 6, 3};
    MPI_Type_create_indexed_block(3, 2, bd, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    {
        int off[] = {8, 48, 24}, len[] = {16, 16, 16};
        MPI_Type_get_extent(t, &lb, &ext);
        CHECK(lb == 8 && ext == 56);
        roundtrip(t, 1, off, len, 3, 56, rank);
    }
    MPI_Type_free(&t);

    /* struct { int a; double b; char c; } with padding. */
    struct s1 {
        int a;
        double b;
        char c;
    };
    int sbl[] = {1, 1, 1};
    MPI_Aint sd[] = {offsetof(struct s1, a), offsetof(struct s1, b), offsetof(struct s1, c)};
    MPI_Datatype sts[] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
    MPI_Type_create_struct(3, sbl, sd, sts, &t);
    MPI_Type_commit(&t);
    MPI_Type_get_extent(t, &lb, &ext);
    CHECK(ext == sizeof(struct s1));
    MPI_Type_size(t, &s);
    CHECK(s == 13);
    {
        int off[] = {0, 8, 16}, len[] = {4, 8, 1};
        roundtrip(t, 11, off, len, 3, sizeof(struct s1), rank);
    }
    MPI_Datatype r;
    MPI_Type_create_resized(t, 0, 32, &r);
    MPI_Type_commit(&r);
    {
        int off[] = {0, 8, 16}, len[] = {4, 8, 1};
        roundtrip(r, 9, off, len, 3, 32, rank);
    }
    MPI_Type_free(&r);
    MPI_Type_free(&t);

    /* subarray: a 3x4 block at (1,2) of a 6x8 array of ints, C order. */
    int sizes[] = {6, 8}, subs[] = {3, 4}, starts[] = {1, 2};
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t);
    MPI_Type_commit(&t);
    MPI_Type_get_extent(t, &lb, &ext);
    CHECK(lb == 0 && ext == 6 * 8 * 4);
    {
        int off[] = {(1 * 8 + 2) * 4, (2 * 8 + 2) * 4, (3 * 8 + 2) * 4}, len[] = {16, 16, 16};
        roundtrip(t, 1, off, len, 3, 192, rank);
    }
    MPI_Type_free(&t);
    /* Fortran order: the first index varies fastest. */
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_FORTRAN, MPI_INT, &t);
    MPI_Type_commit(&t);
    {
        int off[] = {(2 * 6 + 1) * 4, (3 * 6 + 1) * 4, (4 * 6 + 1) * 4, (5 * 6 + 1) * 4}, len[] = {12, 12, 12, 12};
        roundtrip(t, 1, off, len, 4, 192, rank);
    }
    MPI_Type_free(&t);

    /* contiguous and dup. */
    MPI_Type_contiguous(5, MPI_DOUBLE, &t);
    MPI_Datatype d;
    MPI_Type_dup(t, &d);
    MPI_Type_commit(&d);
    {
        int off[] = {0}, len[] = {40};
        roundtrip(d, 3, off, len, 1, 40, rank);
    }
    MPI_Type_free(&d);
    MPI_Type_free(&t);

    /* An uncommitted type cannot be used. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Type_contiguous(2, MPI_INT, &t);
    int rc = MPI_Send(src, 1, t, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TYPE);
    MPI_Type_free(&t);
    rc = MPI_Send(src, 1, t, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
    CHECK(rc == MPI_ERR_TYPE);

    {
        /* The large-count constructors make the int forms' types; their
         * envelope is the int form's. */
        MPI_Datatype a, b;
        MPI_Type_vector(3, 2, 5, MPI_INT, &a);
        CHECK_RC(MPI_Type_vector_c(3, 2, 5, MPI_INT, &b));
        MPI_Count sa, sb, lba, lbb, exa, exb;
        MPI_Type_size_c(a, &sa);
        MPI_Type_size_c(b, &sb);
        MPI_Type_get_extent_c(a, &lba, &exa);
        MPI_Type_get_extent_c(b, &lbb, &exb);
        CHECK(sa == sb && sa == 24 && lba == lbb && exa == exb && exb == 48);
        MPI_Type_commit(&b);
        {
            int off[] = {0, 20, 40}, len[] = {8, 8, 8};
            roundtrip(b, 2, off, len, 3, 48, rank);
        }
        MPI_Count ni, na, nc, nd;
        int comb;
        CHECK_RC(MPI_Type_get_envelope_c(b, &ni, &na, &nc, &nd, &comb));
        CHECK(comb == MPI_COMBINER_VECTOR && ni == 3 && na == 0 && nc == 0 && nd == 1);
        int ints[3];
        MPI_Aint aints[1];
        MPI_Count cnts[1];
        MPI_Datatype kids[1];
        CHECK_RC(MPI_Type_get_contents_c(b, 3, 0, 0, 1, ints, aints, cnts, kids));
        CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5 && kids[0] == MPI_INT);
        MPI_Type_free(&a);
        MPI_Type_free(&b);
        MPI_Count bl[2] = {1, 2}, dp[2] = {0, 8};
        MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE};
        CHECK_RC(MPI_Type_create_struct_c(2, bl, dp, ts, &b));
        MPI_Type_size_c(b, &sb);
        MPI_Type_get_extent_c(b, &lbb, &exb);
        CHECK(sb == 20 && exb == 24);
        MPI_Type_free(&b);
        MPI_Count sz[2] = {4, 6}, sub[2] = {2, 3}, st[2] = {1, 2};
        CHECK_RC(MPI_Type_create_subarray_c(2, sz, sub, st, MPI_ORDER_C, MPI_INT, &b));
        MPI_Type_size_c(b, &sb);
        MPI_Type_get_extent_c(b, &lbb, &exb);
        CHECK(sb == 24 && exb == 96);
        MPI_Type_free(&b);
        MPI_Count ps;
        CHECK_RC(MPI_Pack_size_c(10, MPI_DOUBLE, MPI_COMM_WORLD, &ps));
        CHECK(ps == 80);
        CHECK_RC(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &b));
        CHECK(b == MPI_REAL8);
        /* Counts past an int: a type of 4 TiB (bigtypes.c tests more);
         * subarray sizes must fit an int. */
        CHECK_RC(MPI_Type_contiguous_c((MPI_Count)1 << 40, MPI_INT, &b));
        MPI_Type_size_c(b, &sb);
        CHECK(sb == (MPI_Count)1 << 42);
        MPI_Type_free(&b);
        MPI_Count bigsz[1] = {(MPI_Count)1 << 40}, bigsub[1] = {1}, bigst[1] = {0};
        rc = MPI_Type_create_subarray_c(1, bigsz, bigsub, bigst, MPI_ORDER_C, MPI_INT, &b);
        int cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_VALUE_TOO_LARGE);
    }

    /* A struct's extent pads to its members' C alignment: a complex
     * number's is its real part's. */
    {
        struct dz { double complex z; char ch; };
        struct fz { float complex z; char ch; };
        int bl2[2] = {1, 1};
        MPI_Aint dd[2] = {offsetof(struct dz, z), offsetof(struct dz, ch)}, df[2] = {offsetof(struct fz, z), offsetof(struct fz, ch)}, lb2, ext2;
        MPI_Datatype tdz[2] = {MPI_C_DOUBLE_COMPLEX, MPI_CHAR}, tfz[2] = {MPI_C_FLOAT_COMPLEX, MPI_CHAR}, sz;
        CHECK_RC(MPI_Type_create_struct(2, bl2, dd, tdz, &sz));
        MPI_Type_get_extent(sz, &lb2, &ext2);
        CHECK(ext2 == sizeof(struct dz));
        MPI_Type_free(&sz);
        CHECK_RC(MPI_Type_create_struct(2, bl2, df, tfz, &sz));
        MPI_Type_get_extent(sz, &lb2, &ext2);
        CHECK(ext2 == sizeof(struct fz));
        MPI_Type_free(&sz);
    }
    DONE();
}
