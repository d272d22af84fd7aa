/* MPI_Type_create_f90_integer, _real and _complex: the smallest kind
 * that has the range and precision asked for (INTEGER 1, 2, 4, 8, 16;
 * REAL and COMPLEX of 4, 8, 16-byte reals), MPI_ERR_ARG when none has,
 * the same handle for the same arguments, the F90 combiners in the
 * envelope, and types that work: match_size agrees, reductions and
 * external32 packing. */
#include "check.h"

static int size_of(MPI_Datatype t)
{
    int s;
    CHECK_RC(MPI_Type_size(t, &s));
    return s;
}

static int f90int(int r)
{
    MPI_Datatype t;
    int rc = MPI_Type_create_f90_integer(r, &t);
    if (rc != MPI_SUCCESS) {
        int cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ARG);
        return -1;
    }
    int ni, na, nd, comb, ints[2];
    CHECK_RC(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_F90_INTEGER && ni == 1 && na == 0 && nd == 0);
    CHECK_RC(MPI_Type_get_contents(t, 1, 0, 0, ints, NULL, NULL));
    CHECK(ints[0] == r);
    MPI_Datatype again, m;
    CHECK_RC(MPI_Type_create_f90_integer(r, &again));
    CHECK(again == t);
    CHECK_RC(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, size_of(t), &m));
    CHECK(size_of(m) == size_of(t));
    return size_of(t);
}

static int f90real(int complex, int p, int r)
{
    MPI_Datatype t;
    int rc = complex ? MPI_Type_create_f90_complex(p, r, &t) : MPI_Type_create_f90_real(p, r, &t);
    if (rc != MPI_SUCCESS) {
        int cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ARG);
        return -1;
    }
    int ni, na, nd, comb, ints[2];
    CHECK_RC(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    CHECK(comb == (complex ? MPI_COMBINER_F90_COMPLEX : MPI_COMBINER_F90_REAL) && ni == 2 && na == 0 && nd == 0);
    CHECK_RC(MPI_Type_get_contents(t, 2, 0, 0, ints, NULL, NULL));
    CHECK(ints[0] == p && ints[1] == r);
    MPI_Datatype again, m;
    CHECK_RC(complex ? MPI_Type_create_f90_complex(p, r, &again) : MPI_Type_create_f90_real(p, r, &again));
    CHECK(again == t);
    CHECK_RC(MPI_Type_match_size(complex ? MPI_TYPECLASS_COMPLEX : MPI_TYPECLASS_REAL, size_of(t), &m));
    CHECK(size_of(m) == size_of(t));
    return size_of(t);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    const int U = MPI_UNDEFINED;

    /* selected_int_kind(r): the range of INTEGER(n) is 2, 4, 9, 18, 38. */
    int rs[] = {0, 1, 2, 3, 4, 5, 9, 10, 18, 19, 38, 39, 100};
    int isz[] = {1, 1, 1, 2, 2, 4, 4, 8, 8, 16, 16, -1, -1};
    for (int i = 0; i < (int)(sizeof rs / sizeof rs[0]); i++) {
        int s = f90int(rs[i]);
        if (s != isz[i])
            printf("f90_integer(%d): size %d, want %d\n", rs[i], s, isz[i]);
        CHECK(s == isz[i]);
    }

    /* selected_real_kind(p, r): REAL(4) 6/37, REAL(8) 15/307, REAL(16) 33/4931. */
    struct { int p, r, size; } rc[] = {
        {6, U, 4}, {U, 37, 4}, {6, 37, 4}, {1, 1, 4}, {7, U, 8}, {6, 38, 8}, {U, 307, 8},
        {15, 307, 8}, {16, U, 16}, {15, 308, 16}, {33, 4931, 16}, {34, U, -1}, {U, 4932, -1}, {U, U, -1},
    };
    for (int i = 0; i < (int)(sizeof rc / sizeof rc[0]); i++) {
        int s = f90real(0, rc[i].p, rc[i].r), z = f90real(1, rc[i].p, rc[i].r);
        if (s != rc[i].size || z != (rc[i].size < 0 ? -1 : 2 * rc[i].size))
            printf("f90_real(%d, %d): size %d, complex %d, want %d\n", rc[i].p, rc[i].r, s, z, rc[i].size);
        CHECK(s == rc[i].size && z == (rc[i].size < 0 ? -1 : 2 * rc[i].size));
    }

    /* The types work: a reduction on INTEGER(8), packing REAL(8). */
    MPI_Datatype i8, r8;
    CHECK_RC(MPI_Type_create_f90_integer(15, &i8));
    CHECK_RC(MPI_Type_create_f90_real(12, U, &r8));
    long long a[2] = {5, -7}, b[2] = {10, 20};
    CHECK_RC(MPI_Reduce_local(a, b, 2, i8, MPI_SUM));
    CHECK(b[0] == 15 && b[1] == 13);
    double d = 1.0;
    unsigned char buf[8];
    MPI_Aint pos = 0;
    CHECK_RC(MPI_Pack_external("external32", &d, 1, r8, buf, sizeof buf, &pos));
    CHECK(pos == 8 && buf[0] == 0x3f && buf[1] == 0xf0);
    int sum = 0, one = 1;
    MPI_Datatype i4;
    CHECK_RC(MPI_Type_create_f90_integer(9, &i4));
    CHECK_RC(MPI_Allreduce(&one, &sum, 1, i4, MPI_SUM, MPI_COMM_WORLD));
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(sum == n);
    DONE();
}
