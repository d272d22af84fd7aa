/* The ABI's Fortran registration in a library without Fortran
 * bindings: nothing is known (MPI_INFO_NULL, booleans not set) until a
 * Fortran layer sets it; the first set is kept and given back, later
 * ones are MPI_ERR_ABI; a refused set does not count; the default
 * kinds' sizes change MPI_INTEGER, MPI_REAL... (size, extent,
 * reductions). Rank-local except the final Allreduce. */
#include "check.h"
#include <stdint.h>

static int cls_of(int rc)
{
    int cls;
    MPI_Error_class(rc, &cls);
    return cls;
}

static int size_of(MPI_Datatype t)
{
    int s;
    CHECK_RC(MPI_Type_size(t, &s));
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* Nothing known. */
    MPI_Info fi = (MPI_Info)1;
    CHECK_RC(MPI_Abi_get_fortran_info(&fi));
    CHECK(fi == MPI_INFO_NULL);
    int32_t t4 = 7, f4 = 7;
    int is_set = -1;
    CHECK_RC(MPI_Abi_get_fortran_booleans(4, &t4, &f4, &is_set));
    CHECK(is_set == 0 && t4 == 7 && f4 == 7);

    /* Booleans: a power of two, once per size. */
    int32_t tt = -1, ff = 0;
    CHECK(cls_of(MPI_Abi_set_fortran_booleans(3, &tt, &ff)) == MPI_ERR_ARG);
    CHECK(cls_of(MPI_Abi_get_fortran_booleans(6, &t4, &f4, &is_set)) == MPI_ERR_ARG);
    CHECK_RC(MPI_Abi_set_fortran_booleans(4, &tt, &ff));
    CHECK_RC(MPI_Abi_get_fortran_booleans(4, &t4, &f4, &is_set));
    CHECK(is_set == 1 && t4 == -1 && f4 == 0);
    int32_t t2 = 1;
    CHECK(cls_of(MPI_Abi_set_fortran_booleans(4, &t2, &ff)) == MPI_ERR_ABI);
    CHECK_RC(MPI_Abi_get_fortran_booleans(4, &t4, &f4, &is_set));
    CHECK(is_set == 1 && t4 == -1);
    int8_t t1, f1;
    CHECK_RC(MPI_Abi_get_fortran_booleans(1, &t1, &f1, &is_set));
    CHECK(is_set == 0);

    /* Sizes: refused values change nothing and do not count. */
    CHECK(size_of(MPI_INTEGER) == 4 && size_of(MPI_REAL) == 4 && size_of(MPI_DOUBLE_PRECISION) == 8);
    CHECK(cls_of(MPI_Abi_set_fortran_info(MPI_INFO_NULL)) == MPI_ERR_INFO);
    MPI_Info bad;
    MPI_Info_create(&bad);
    MPI_Info_set(bad, "mpi_integer_size", "3");
    CHECK(cls_of(MPI_Abi_set_fortran_info(bad)) == MPI_ERR_ARG);
    MPI_Info_free(&bad);
    CHECK_RC(MPI_Abi_get_fortran_info(&fi));
    CHECK(fi == MPI_INFO_NULL && size_of(MPI_INTEGER) == 4);

    /* gfortran -fdefault-integer-8 -fdefault-real-8 -fdefault-double-8 */
    MPI_Info in;
    MPI_Info_create(&in);
    MPI_Info_set(in, "mpi_integer_size", "8");
    MPI_Info_set(in, "mpi_logical_size", "8");
    MPI_Info_set(in, "mpi_real_size", "8");
    MPI_Info_set(in, "mpi_double_precision_size", "16");
    MPI_Info_set(in, "mpi_integer16_supported", "true");
    CHECK_RC(MPI_Abi_set_fortran_info(in));
    MPI_Info_free(&in);
    CHECK(size_of(MPI_INTEGER) == 8 && size_of(MPI_LOGICAL) == 8 && size_of(MPI_REAL) == 8);
    CHECK(size_of(MPI_COMPLEX) == 16 && size_of(MPI_DOUBLE_PRECISION) == 16 && size_of(MPI_DOUBLE_COMPLEX) == 32);
    MPI_Aint lb, ext;
    CHECK_RC(MPI_Type_get_extent(MPI_INTEGER, &lb, &ext));
    CHECK(lb == 0 && ext == 8);
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    CHECK_RC(MPI_Type_get_name(MPI_INTEGER, name, &len));
    CHECK(strcmp(name, "MPI_INTEGER") == 0);

    /* The info comes back, a new object each time. */
    CHECK_RC(MPI_Abi_get_fortran_info(&fi));
    CHECK(fi != MPI_INFO_NULL);
    char v[16];
    int vl = sizeof v, flag;
    CHECK_RC(MPI_Info_get_string(fi, "mpi_integer_size", &vl, v, &flag));
    CHECK(flag && strcmp(v, "8") == 0);
    CHECK_RC(MPI_Info_get_string(fi, "mpi_integer16_supported", &vl, v, &flag));
    CHECK(flag);
    MPI_Info fi2;
    CHECK_RC(MPI_Abi_get_fortran_info(&fi2));
    CHECK(fi2 != fi);
    MPI_Info_free(&fi);
    MPI_Info_free(&fi2);

    /* Only the first set counts. */
    MPI_Info again;
    MPI_Info_create(&again);
    MPI_Info_set(again, "mpi_integer_size", "4");
    CHECK(cls_of(MPI_Abi_set_fortran_info(again)) == MPI_ERR_ABI);
    MPI_Info_free(&again);
    CHECK(size_of(MPI_INTEGER) == 8);

    /* MPI_INTEGER is now 8 bytes in messages and reductions. */
    int64_t one[2] = {1, (int64_t)1 << 40}, sum[2];
    CHECK_RC(MPI_Allreduce(one, sum, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD));
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CHECK(sum[0] == n && sum[1] == ((int64_t)n << 40));
    double r[1] = {0.5}, rs[1];
    CHECK_RC(MPI_Allreduce(r, rs, 1, MPI_REAL, MPI_SUM, MPI_COMM_WORLD));
    CHECK(rs[0] == 0.5 * n);
    DONE();
}
