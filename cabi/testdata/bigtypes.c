/* Datatypes of very many blocks. A vector of 2^30 blocks answers size,
 * extent and element queries without listing its blocks (MPICH's
 * datatype/large_count), and a type listed only when first used still
 * moves the right data: sent to itself, packed, counted, duplicated,
 * resized and nested in a struct. */
#include "check.h"
#include <limits.h>
#include <sys/resource.h>

static long maxrss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long rss0 = maxrss_kib();

    /* large_count's type: INT_MAX/2 blocks of four ints, stride 3. */
    MPI_Datatype four, big, big_rsz;
    CHECK_RC(MPI_Type_contiguous(4, MPI_INT, &four));
    CHECK_RC(MPI_Type_commit(&four));
    CHECK_RC(MPI_Type_vector(INT_MAX / 2, 1, 3, four, &big));
    CHECK_RC(MPI_Type_commit(&big));
    int isz;
    MPI_Count csz, clb, cext, ctlb, ctext;
    CHECK_RC(MPI_Type_size(big, &isz));
    CHECK(isz == MPI_UNDEFINED);
    CHECK_RC(MPI_Type_size_c(big, &csz));
    CHECK(csz == 16LL * (INT_MAX / 2));
    CHECK_RC(MPI_Type_get_extent_c(big, &clb, &cext));
    CHECK(clb == 0 && cext == 48LL * ((INT_MAX / 2) - 1) + 16);
    CHECK_RC(MPI_Type_get_true_extent_c(big, &ctlb, &ctext));
    CHECK(ctlb == 0 && ctext == cext);
    MPI_Status st;
    CHECK_RC(MPI_Status_set_elements_c(&st, big, 4LL * (INT_MAX / 2)));
    MPI_Count elems;
    int cnt;
    CHECK_RC(MPI_Get_elements_c(&st, big, &elems));
    CHECK(elems == 4LL * (INT_MAX / 2));
    CHECK_RC(MPI_Get_count(&st, big, &cnt));
    CHECK(cnt == 1);
    /* Elements, not whole types: 6 ints of four-int types are one and a
     * half of them. */
    CHECK_RC(MPI_Status_set_elements(&st, four, 6));
    CHECK_RC(MPI_Get_elements(&st, four, &cnt));
    CHECK(cnt == 6);
    CHECK_RC(MPI_Get_count(&st, four, &cnt));
    CHECK(cnt == MPI_UNDEFINED);
    CHECK_RC(MPI_Get_elements(&st, MPI_INT, &cnt));
    CHECK(cnt == 6);
    CHECK_RC(MPI_Type_create_resized(big, INT_MAX, -1024, &big_rsz));
    CHECK_RC(MPI_Type_commit(&big_rsz));
    CHECK_RC(MPI_Type_size_c(big_rsz, &csz));
    CHECK(csz == 16LL * (INT_MAX / 2));
    CHECK_RC(MPI_Type_get_extent_c(big_rsz, &clb, &cext));
    CHECK(clb == INT_MAX && cext == -1024);
    CHECK_RC(MPI_Type_get_true_extent_c(big_rsz, &ctlb, &ctext));
    CHECK(ctlb == 0 && ctext == 48LL * ((INT_MAX / 2) - 1) + 16);
    /* Its blocks were never listed: a list of a billion runs would
     * take gigabytes. */
    CHECK(maxrss_kib() - rss0 < 256 * 1024);

    /* A type whose list is made at its first use: 600,000 single ints,
     * every other one (1.2 million entries). */
    enum { N = 600000 };
    MPI_Datatype every2, every2_dup, every2_rsz, pair;
    CHECK_RC(MPI_Type_vector(N, 1, 2, MPI_INT, &every2));
    CHECK_RC(MPI_Type_commit(&every2));
    CHECK_RC(MPI_Type_size(every2, &isz));
    CHECK(isz == 4 * N);
    int *src = malloc(sizeof(int) * 2 * N), *dst = malloc(sizeof(int) * 2 * N);
    CHECK(src && dst);
    for (int i = 0; i < 2 * N; i++)
        src[i] = i, dst[i] = -1;
    /* Sent to itself as the vector, received as plain ints. */
    CHECK_RC(MPI_Sendrecv(src, 1, every2, 0, 7, dst, N, MPI_INT, 0, 7, MPI_COMM_SELF, &st));
    for (int i = 0; i < N; i++)
        CHECK(dst[i] == 2 * i);
    /* And back: plain ints into the vector's places. */
    for (int i = 0; i < 2 * N; i++)
        dst[i] = -1;
    CHECK_RC(MPI_Sendrecv(src, N, MPI_INT, 0, 8, dst, 1, every2, 0, 8, MPI_COMM_SELF, &st));
    for (int i = 0; i < 2 * N; i++)
        CHECK(dst[i] == (i % 2 ? -1 : i / 2));
    CHECK_RC(MPI_Get_elements(&st, every2, &cnt));
    CHECK(cnt == N);
    /* A short message: 3 ints and a half are elements 3, then undefined. */
    CHECK_RC(MPI_Sendrecv(src, 14, MPI_BYTE, 0, 9, dst, 1, every2, 0, 9, MPI_COMM_SELF, &st));
    CHECK_RC(MPI_Get_elements(&st, every2, &cnt));
    CHECK(cnt == MPI_UNDEFINED);
    CHECK_RC(MPI_Sendrecv(src, 12, MPI_BYTE, 0, 9, dst, 1, every2, 0, 9, MPI_COMM_SELF, &st));
    CHECK_RC(MPI_Get_elements(&st, every2, &cnt));
    CHECK(cnt == 3);
    /* Pack and unpack. */
    int psz;
    CHECK_RC(MPI_Pack_size(1, every2, MPI_COMM_SELF, &psz));
    CHECK(psz >= 4 * N);
    char *packed = malloc(psz);
    int pos = 0;
    CHECK_RC(MPI_Pack(src, 1, every2, packed, psz, &pos, MPI_COMM_SELF));
    CHECK(pos == 4 * N);
    for (int i = 0; i < N; i++)
        CHECK(((int *) packed)[i] == 2 * i);
    /* Copies: a duplicate, a resized one, and a struct of the
     * duplicate and an int, each listed at its first use. */
    CHECK_RC(MPI_Type_dup(every2, &every2_dup));
    CHECK_RC(MPI_Type_create_resized(every2_dup, 0, 8LL * N, &every2_rsz));
    CHECK_RC(MPI_Type_commit(&every2_rsz));
    int bl[2] = {1, 1};
    MPI_Aint dp[2] = {0, 4};
    MPI_Datatype ts[2] = {every2_dup, MPI_INT};
    CHECK_RC(MPI_Type_create_struct(2, bl, dp, ts, &pair));
    CHECK_RC(MPI_Type_commit(&pair));
    CHECK_RC(MPI_Type_size(pair, &isz));
    CHECK(isz == 4 * N + 4);
    for (int i = 0; i < 2 * N; i++)
        dst[i] = -1;
    /* The struct covers every even int and int 1. */
    CHECK_RC(MPI_Sendrecv(src, 1, pair, 0, 10, dst, N + 1, MPI_INT, 0, 10, MPI_COMM_SELF, &st));
    CHECK(dst[0] == 0 && dst[N] == 1 && dst[N - 1] == 2 * (N - 1));
    /* Two resized vectors back to back: the second starts at 2N ints. */
    int *two = malloc(sizeof(int) * 4 * N), *got = malloc(sizeof(int) * 2 * N);
    for (int i = 0; i < 4 * N; i++)
        two[i] = i;
    CHECK_RC(MPI_Sendrecv(two, 2, every2_rsz, 0, 11, got, 2 * N, MPI_INT, 0, 11, MPI_COMM_SELF, &st));
    CHECK(got[0] == 0 && got[N - 1] == 2 * (N - 1) && got[N] == 2 * N && got[2 * N - 1] == 2 * N + 2 * (N - 1));
    /* A derived type of many blocks in a reduction: every other int,
     * summed across the ranks. */
    int *acc = malloc(sizeof(int) * 2 * N);
    for (int i = 0; i < 2 * N; i++)
        acc[i] = -1;
    CHECK_RC(MPI_Allreduce(src, acc, 1, every2, MPI_SUM, MPI_COMM_WORLD));
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 2 * N; i += 2)
        CHECK(acc[i] == size * i);

    /* Counts beyond an int (MPICH's datatype/type_large): built with 64-bit
     * counts, which MPI_Type_get_contents_c returns as large counts. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Datatype lc, lh, lv;
    const MPI_Count nb = 1024LL * 1024 * 2400 * 2; /* 5 GB */
    CHECK_RC(MPI_Type_contiguous_c(nb, MPI_CHAR, &lc));
    CHECK_RC(MPI_Type_commit(&lc));
    CHECK_RC(MPI_Type_size_c(lc, &csz));
    CHECK(csz == nb);
    CHECK_RC(MPI_Type_get_true_extent_c(lc, &ctlb, &ctext));
    CHECK(ctlb == 0 && ctext == nb);
    MPI_Count ni, na, nc, nd;
    int comb, ini, ina, ind;
    CHECK_RC(MPI_Type_get_envelope_c(lc, &ni, &na, &nc, &nd, &comb));
    CHECK(comb == MPI_COMBINER_CONTIGUOUS && ni == 0 && na == 0 && nc == 1 && nd == 1);
    CHECK(MPI_Type_get_envelope(lc, &ini, &ina, &ind, &comb) != MPI_SUCCESS);
    MPI_Count lcs[9];
    MPI_Datatype kid;
    CHECK_RC(MPI_Type_get_contents_c(lc, 0, 0, 1, 1, NULL, NULL, lcs, &kid));
    CHECK(lcs[0] == nb && kid == MPI_CHAR);
    MPI_Count hbl[4] = {0, 1, 2, 3LL * 2346319872 - 3}, hd[4] = {0, 0, 1, 3};
    CHECK_RC(MPI_Type_create_hindexed_c(4, hbl, hd, MPI_CHAR, &lh));
    CHECK_RC(MPI_Type_commit(&lh));
    CHECK_RC(MPI_Type_size_c(lh, &csz));
    CHECK(csz == 3LL * 2346319872);
    CHECK_RC(MPI_Type_get_true_extent_c(lh, &ctlb, &ctext));
    CHECK(ctlb == 0 && ctext == 3LL * 2346319872);
    CHECK_RC(MPI_Type_get_envelope_c(lh, &ni, &na, &nc, &nd, &comb));
    CHECK(comb == MPI_COMBINER_HINDEXED && ni == 0 && na == 0 && nc == 9 && nd == 1);
    CHECK_RC(MPI_Type_get_contents_c(lh, 0, 0, 9, 1, NULL, NULL, lcs, &kid));
    CHECK(lcs[0] == 4 && lcs[4] == hbl[3] && lcs[8] == 3);
    /* A vector of blocks longer than an int. */
    CHECK_RC(MPI_Type_vector_c(2, 3LL << 30, 4LL << 30, MPI_SHORT, &lv));
    CHECK_RC(MPI_Type_size_c(lv, &csz));
    CHECK(csz == 2 * 2 * (3LL << 30));
    CHECK_RC(MPI_Type_get_extent_c(lv, &clb, &cext));
    CHECK(clb == 0 && cext == 2 * ((4LL << 30) + (3LL << 30)));
    CHECK_RC(MPI_Type_get_contents_c(lv, 0, 0, 3, 1, NULL, NULL, lcs, &kid));
    CHECK(lcs[0] == 2 && lcs[1] == 3LL << 30 && lcs[2] == 4LL << 30 && kid == MPI_SHORT);
    MPI_Type_free(&lv);
    MPI_Type_free(&lh);
    MPI_Type_free(&lc);

    MPI_Type_free(&pair);
    MPI_Type_free(&every2_rsz);
    MPI_Type_free(&every2_dup);
    MPI_Type_free(&every2);
    MPI_Type_free(&big_rsz);
    MPI_Type_free(&big);
    MPI_Type_free(&four);
    free(src), free(dst), free(packed), free(two), free(got), free(acc);
    DONE();
}
