/* MPI-IO: files written by several ranks (explicit offsets, individual
 * pointers, collective, shared pointer, ordered, nonblocking, split
 * collectives, views, derived memory types, large counts) compared byte
 * for byte with what one sequential writer produces, and read back with
 * other distributions. argv[1] is a directory for the files. */
#include "check.h"

static int rank, size;
static char dir[512];

static void path(char *out, const char *name)
{
    snprintf(out, 600, "%s/%s", dir, name);
}

/* The value of int i of a file. */
static int val(int i, int salt) { return i * 7 + salt * 100003 + 1; }

/* Rank 0 checks the whole file (n ints) against val(., salt), and every
 * rank reads it back in a cyclic distribution of blocks of 3 ints. */
static void verify(MPI_File fh, int n, int salt)
{
    MPI_Offset sz;
    CHECK_RC(MPI_File_get_size(fh, &sz));
    CHECK(sz == (MPI_Offset)n * 4);
    if (rank == 0) {
        int *all = malloc(n * sizeof(int));
        MPI_Status st;
        CHECK_RC(MPI_File_read_at(fh, 0, all, n * 4, MPI_BYTE, &st));
        int cnt;
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK(cnt == n * 4);
        for (int i = 0; i < n; i++)
            CHECK(all[i] == val(i, salt));
        free(all);
    }
    for (int b = rank * 3; b < n; b += size * 3) {
        int got[3] = {-1, -1, -1}, m = n - b < 3 ? n - b : 3;
        MPI_Status st;
        CHECK_RC(MPI_File_read_at(fh, (MPI_Offset)b * 4, got, 3, MPI_INT, &st));
        int cnt;
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(cnt == m); /* short at the end of the file */
        for (int i = 0; i < m; i++)
            CHECK(got[i] == val(b + i, salt));
    }
}

static MPI_File open_new(const char *name, int amode)
{
    char p[600];
    path(p, name);
    MPI_File fh;
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, p, amode | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    CHECK_RC(MPI_File_set_size(fh, 0));
    return fh;
}

/* The block of rank r in a distribution where rank r has r+2 ints:
 * its first int. */
static int vstart(int r) { return r * (r + 3) / 2; }
static int vtotal(void) { return vstart(size); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1);
    snprintf(dir, sizeof dir, "%s", argv[1]);
    MPI_Status st;
    MPI_Offset sz0;
    int cnt;

    /* Independent writes at explicit offsets, blocks of 1000 ints. */
    const int B = 1000;
    MPI_File fh = open_new("indep", MPI_MODE_RDWR);
    int *buf = malloc(4 * B * sizeof(int));
    for (int i = 0; i < B; i++)
        buf[i] = val(rank * B + i, 1);
    CHECK_RC(MPI_File_write_at(fh, (MPI_Offset)rank * B * 4, buf, B, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == B);
    CHECK_RC(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_sync(fh));
    verify(fh, size * B, 1);
    /* Individual file pointers: rank r writes the blocks r, r+size... of
     * 10 ints. */
    CHECK_RC(MPI_File_set_size(fh, 0));
    for (int b = rank; b < 5 * size; b += size) {
        int v[10];
        for (int i = 0; i < 10; i++)
            v[i] = val(b * 10 + i, 2);
        CHECK_RC(MPI_File_seek(fh, (MPI_Offset)b * 40, MPI_SEEK_SET));
        CHECK_RC(MPI_File_write(fh, v, 10, MPI_INT, &st));
        MPI_Offset pos;
        CHECK_RC(MPI_File_get_position(fh, &pos));
        CHECK(pos == (MPI_Offset)b * 40 + 40);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    verify(fh, 50 * size, 2);
    /* Read with the individual pointer, relative seeks. */
    CHECK_RC(MPI_File_seek(fh, 0, MPI_SEEK_END));
    MPI_Offset pos;
    CHECK_RC(MPI_File_get_position(fh, &pos));
    CHECK(pos == 200 * size);
    CHECK_RC(MPI_File_seek(fh, -8, MPI_SEEK_CUR));
    int two[2];
    CHECK_RC(MPI_File_read(fh, two, 2, MPI_INT, &st));
    CHECK(two[0] == val(50 * size - 2, 2) && two[1] == val(50 * size - 1, 2));
    CHECK_RC(MPI_File_read(fh, two, 2, MPI_INT, &st)); /* at the end */
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == 0);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL);

    /* Collective writes at explicit offsets, blocks of unequal sizes;
     * read back collectively in another distribution. */
    fh = open_new("coll", MPI_MODE_RDWR);
    int mine = rank + 2, n = vtotal();
    for (int i = 0; i < mine; i++)
        buf[i] = val(vstart(rank) + i, 3);
    CHECK_RC(MPI_File_write_at_all(fh, (MPI_Offset)vstart(rank) * 4, buf, mine, MPI_INT, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == mine);
    verify(fh, n, 3);
    {
        /* Reversed: rank r reads the part rank size-1-r wrote. */
        int r2 = size - 1 - rank, m2 = r2 + 2, got[64];
        CHECK_RC(MPI_File_read_at_all(fh, (MPI_Offset)vstart(r2) * 4, got, m2, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(cnt == m2);
        for (int i = 0; i < m2; i++)
            CHECK(got[i] == val(vstart(r2) + i, 3));
    }
    /* Collective writes at the individual pointers, large counts. */
    CHECK_RC(MPI_File_set_size(fh, 0));
    CHECK_RC(MPI_File_seek(fh, (MPI_Offset)rank * B * 4, MPI_SEEK_SET));
    for (int i = 0; i < B; i++)
        buf[i] = val(rank * B + i, 4);
    CHECK_RC(MPI_File_write_all_c(fh, buf, (MPI_Count)B, MPI_INT, &st));
    MPI_Count ccnt;
    MPI_Get_count_c(&st, MPI_INT, &ccnt);
    CHECK(ccnt == B);
    verify(fh, size * B, 4);
    CHECK_RC(MPI_File_seek(fh, (MPI_Offset)((rank + 1) % size) * B * 4, MPI_SEEK_SET));
    memset(buf, 0, B * sizeof(int));
    CHECK_RC(MPI_File_read_all(fh, buf, B, MPI_INT, &st));
    for (int i = 0; i < B; i++)
        CHECK(buf[i] == val(((rank + 1) % size) * B + i, 4));
    CHECK_RC(MPI_File_read_at_c(fh, 0, buf, (MPI_Count)2, MPI_INT, &st));
    CHECK(buf[0] == val(0, 4) && buf[1] == val(1, 4));
    CHECK_RC(MPI_File_close(&fh));

    /* Hints at open: small staging buffers and two aggregators, so that a
     * collective write of 64 KiB a rank takes many rounds. */
    {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "cb_buffer_size", "4096");
        MPI_Info_set(info, "cb_nodes", "2");
        char p[600];
        path(p, "big");
        CHECK_RC(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh));
        MPI_Info_free(&info);
        CHECK_RC(MPI_File_get_info(fh, &info));
        char v[MPI_MAX_INFO_VAL];
        int vl = MPI_MAX_INFO_VAL, flag;
        MPI_Info_get_string(info, "cb_buffer_size", &vl, v, &flag);
        CHECK(flag && strcmp(v, "4096") == 0);
        MPI_Info_free(&info);
        const int K = 16384;
        int *big = malloc(K * sizeof(int));
        for (int i = 0; i < K; i++)
            big[i] = val(rank * K + i, 10);
        CHECK_RC(MPI_File_write_at_all(fh, (MPI_Offset)rank * K * 4, big, K, MPI_INT, &st));
        verify(fh, size * K, 10);
        int from = (rank + 1) % size;
        memset(big, 0, K * sizeof(int));
        CHECK_RC(MPI_File_read_at_all(fh, (MPI_Offset)from * K * 4, big, K, MPI_INT, &st));
        for (int i = 0; i < K; i++)
            CHECK(big[i] == val(from * K + i, 10));
        free(big);
        CHECK_RC(MPI_File_close(&fh));
    }

    /* A file of one rank, on MPI_COMM_SELF. */
    {
        char p[600];
        snprintf(p, sizeof p, "%s/self%d", dir, rank);
        CHECK_RC(MPI_File_open(MPI_COMM_SELF, p, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
        int x = rank;
        CHECK_RC(MPI_File_write_all(fh, &x, 1, MPI_INT, &st));
        CHECK_RC(MPI_File_get_size(fh, &sz0));
        CHECK(sz0 == 4);
        CHECK_RC(MPI_File_close(&fh));
    }

    /* Shared file pointer: records of (rank, i) in some order; each once. */
    fh = open_new("shared", MPI_MODE_RDWR);
    const int R = 20;
    for (int i = 0; i < R; i++) {
        int rec[2] = {rank, i};
        CHECK_RC(MPI_File_write_shared(fh, rec, 2, MPI_INT, &st));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Offset sz;
    CHECK_RC(MPI_File_get_size(fh, &sz));
    CHECK(sz == (MPI_Offset)size * R * 8);
    CHECK_RC(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == (MPI_Offset)size * R * 8);
    if (rank == 0) {
        int *all = malloc(size * R * 2 * sizeof(int)), *seen = calloc(size * R, sizeof(int));
        CHECK_RC(MPI_File_read_at(fh, 0, all, size * R * 2, MPI_INT, &st));
        int *last = malloc(size * sizeof(int));
        for (int r = 0; r < size; r++)
            last[r] = -1;
        for (int k = 0; k < size * R; k++) {
            int r = all[2 * k], i = all[2 * k + 1];
            CHECK(r >= 0 && r < size && i >= 0 && i < R);
            CHECK(!seen[r * R + i]);
            seen[r * R + i] = 1;
            CHECK(i > last[r]); /* a rank's records in its order */
            last[r] = i;
        }
        free(all);
        free(seen);
        free(last);
    }
    /* Read them back through the shared pointer: every record once. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    int nread = 0;
    for (;;) {
        int rec[2];
        CHECK_RC(MPI_File_read_shared(fh, rec, 2, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &cnt);
        if (cnt == 0)
            break;
        CHECK(cnt == 2 && rec[0] >= 0 && rec[0] < size);
        nread++;
    }
    int total;
    MPI_Allreduce(&nread, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == size * R);
    CHECK_RC(MPI_File_close(&fh));

    /* Ordered: rank r writes r+2 ints; the file is the rank-order
     * concatenation, twice (the pointer moves past all). */
    fh = open_new("ordered", MPI_MODE_RDWR);
    for (int rep = 0; rep < 2; rep++) {
        for (int i = 0; i < mine; i++)
            buf[i] = val(rep * n + vstart(rank) + i, 5);
        CHECK_RC(MPI_File_write_ordered(fh, buf, mine, MPI_INT, &st));
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(cnt == mine);
    }
    verify(fh, 2 * n, 5);
    /* Read it back ordered, in other counts: rank r reads
     * (size-1-r)+2 ints. */
    CHECK_RC(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    {
        int m2 = size - 1 - rank + 2, got[64], start = 0;
        for (int r = 0; r < rank; r++)
            start += size - 1 - r + 2;
        CHECK_RC(MPI_File_read_ordered(fh, got, m2, MPI_INT, &st));
        for (int i = 0; i < m2; i++)
            CHECK(got[i] == val(start + i, 5));
    }
    CHECK_RC(MPI_File_close(&fh));

    /* Nonblocking: iwrite_at, iwrite_at_all, iwrite (pointer),
     * iwrite_shared; then ireads. */
    fh = open_new("nb", MPI_MODE_RDWR);
    {
        int a[4], b[4], c[4];
        MPI_Request rq[3];
        for (int i = 0; i < 4; i++) {
            a[i] = val(rank * 4 + i, 6);
            b[i] = val((size + rank) * 4 + i, 6);
            c[i] = val((2 * size + rank) * 4 + i, 6);
        }
        CHECK_RC(MPI_File_iwrite_at(fh, (MPI_Offset)rank * 16, a, 4, MPI_INT, &rq[0]));
        CHECK_RC(MPI_File_iwrite_at_all(fh, (MPI_Offset)(size + rank) * 16, b, 4, MPI_INT, &rq[1]));
        CHECK_RC(MPI_File_seek(fh, (MPI_Offset)(2 * size + rank) * 16, MPI_SEEK_SET));
        CHECK_RC(MPI_File_iwrite(fh, c, 4, MPI_INT, &rq[2]));
        MPI_Status sts[3];
        CHECK_RC(MPI_Waitall(3, rq, sts));
        for (int k = 0; k < 3; k++) {
            MPI_Get_count(&sts[k], MPI_INT, &cnt);
            CHECK(cnt == 4);
            CHECK(rq[k] == MPI_REQUEST_NULL);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        verify(fh, 12 * size, 6);
        int g1[4], g2[4];
        CHECK_RC(MPI_File_iread_at(fh, (MPI_Offset)((rank + 1) % size) * 16, g1, 4, MPI_INT, &rq[0]));
        CHECK_RC(MPI_File_seek(fh, (MPI_Offset)(size + (rank + 1) % size) * 16, MPI_SEEK_SET));
        CHECK_RC(MPI_File_iread_all(fh, g2, 4, MPI_INT, &rq[1]));
        CHECK_RC(MPI_Wait(&rq[0], &st));
        int done = 0;
        while (!done)
            CHECK_RC(MPI_Test(&rq[1], &done, &st));
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(cnt == 4);
        for (int i = 0; i < 4; i++) {
            CHECK(g1[i] == val(((rank + 1) % size) * 4 + i, 6));
            CHECK(g2[i] == val((size + (rank + 1) % size) * 4 + i, 6));
        }
        /* iwrite_shared / iread_shared, _c. */
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_RC(MPI_File_seek_shared(fh, 12 * size * 4, MPI_SEEK_SET));
        int rec = rank + 1000;
        CHECK_RC(MPI_File_iwrite_shared_c(fh, &rec, (MPI_Count)1, MPI_INT, &rq[0]));
        CHECK_RC(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_RC(MPI_File_get_size(fh, &sz));
        CHECK(sz == (12 * size + size) * 4);
        int x = 0, sum, expect = 0;
        CHECK_RC(MPI_File_seek_shared(fh, 12 * size * 4, MPI_SEEK_SET));
        CHECK_RC(MPI_File_iread_shared(fh, &x, 1, MPI_INT, &rq[0]));
        CHECK_RC(MPI_Wait(&rq[0], &st));
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int r = 0; r < size; r++)
            expect += r + 1000;
        CHECK(sum == expect);
    }
    CHECK_RC(MPI_File_close(&fh));

    /* Split collectives. */
    fh = open_new("split", MPI_MODE_RDWR);
    for (int i = 0; i < mine; i++)
        buf[i] = val(vstart(rank) + i, 7);
    CHECK_RC(MPI_File_write_at_all_begin(fh, (MPI_Offset)vstart(rank) * 4, buf, mine, MPI_INT));
    CHECK_RC(MPI_File_write_at_all_end(fh, buf, &st));
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == mine);
    verify(fh, n, 7);
    /* An end without a begin. */
    CHECK(MPI_File_read_all_end(fh, buf, &st) != MPI_SUCCESS);
    CHECK_RC(MPI_File_seek(fh, (MPI_Offset)vstart(rank) * 4, MPI_SEEK_SET));
    int got[64];
    CHECK_RC(MPI_File_read_all_begin(fh, got, mine, MPI_INT));
    CHECK_RC(MPI_File_read_all_end(fh, got, &st));
    for (int i = 0; i < mine; i++)
        CHECK(got[i] == val(vstart(rank) + i, 7));
    CHECK_RC(MPI_File_read_at_all_begin_c(fh, 0, got, (MPI_Count)2, MPI_INT));
    CHECK_RC(MPI_File_read_at_all_end(fh, got, &st));
    CHECK(got[0] == val(0, 7) && got[1] == val(1, 7));
    CHECK_RC(MPI_File_seek_shared(fh, (MPI_Offset)n * 4, MPI_SEEK_SET));
    for (int i = 0; i < mine; i++)
        buf[i] = val(n + vstart(rank) + i, 7);
    CHECK_RC(MPI_File_write_ordered_begin(fh, buf, mine, MPI_INT));
    CHECK_RC(MPI_File_write_ordered_end(fh, buf, &st));
    verify(fh, 2 * n, 7);
    CHECK_RC(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    CHECK_RC(MPI_File_read_ordered_begin(fh, got, mine, MPI_INT));
    CHECK_RC(MPI_File_read_ordered_end(fh, got, &st));
    for (int i = 0; i < mine; i++)
        CHECK(got[i] == val(vstart(rank) + i, 7));
    CHECK_RC(MPI_File_close(&fh));

    /* Views: a block-cyclic distribution of blocks of 5 ints, as a
     * vector resized to the stride; each rank writes 3 blocks with
     * write_all through its view, and the file is the array in order. */
    fh = open_new("view", MPI_MODE_RDWR);
    {
        MPI_Datatype blk, ft;
        MPI_Type_vector(1, 5, 5, MPI_INT, &blk);
        MPI_Type_create_resized(blk, 0, (MPI_Aint)size * 5 * 4, &ft);
        MPI_Type_commit(&ft);
        CHECK_RC(MPI_File_set_view(fh, (MPI_Offset)rank * 5 * 4, MPI_INT, ft, "native", MPI_INFO_NULL));
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 5; i++)
                buf[k * 5 + i] = val((k * size + rank) * 5 + i, 8);
        CHECK_RC(MPI_File_write_all(fh, buf, 15, MPI_INT, &st));
        MPI_Offset bo;
        CHECK_RC(MPI_File_get_byte_offset(fh, 7, &bo)); /* block 1, int 2 */
        CHECK(bo == (MPI_Offset)rank * 20 + (MPI_Offset)size * 20 + 8);
        MPI_Offset d;
        MPI_Datatype e2, f2;
        char rep[MPI_MAX_DATAREP_STRING];
        CHECK_RC(MPI_File_get_view(fh, &d, &e2, &f2, rep));
        CHECK(d == (MPI_Offset)rank * 20 && e2 == MPI_INT && strcmp(rep, "native") == 0);
        MPI_Aint lb, ext;
        MPI_Type_get_extent(f2, &lb, &ext);
        CHECK(ext == (MPI_Aint)size * 20);
        MPI_Type_free(&f2);
        CHECK_RC(MPI_File_get_type_extent(fh, ft, &ext));
        CHECK(ext == (MPI_Aint)size * 20);
        MPI_Type_free(&ft);
        MPI_Type_free(&blk);
        /* Read back through the view at an explicit offset (in etypes). */
        CHECK_RC(MPI_File_read_at(fh, 5, got, 5, MPI_INT, &st));
        for (int i = 0; i < 5; i++)
            CHECK(got[i] == val((size + rank) * 5 + i, 8));
        CHECK_RC(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
        verify(fh, 15 * size, 8);

        /* A 1-D subarray as the filetype: rank r sees ints [3r, 3r+3)
         * of every 3*size. */
        MPI_Datatype sub;
        int gsz = 3 * size, ssz = 3, start = 3 * rank;
        MPI_Type_create_subarray(1, &gsz, &ssz, &start, MPI_ORDER_C, MPI_INT, &sub);
        MPI_Type_commit(&sub);
        CHECK_RC(MPI_File_set_view(fh, 0, MPI_INT, sub, "native", MPI_INFO_NULL));
        CHECK_RC(MPI_File_read_all(fh, got, 6, MPI_INT, &st));
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 3; i++)
                CHECK(got[k * 3 + i] == val(k * 3 * size + 3 * rank + i, 8));
        MPI_Type_free(&sub);

        /* Any other filetype: a 2-D subarray, rank r the columns
         * [3r, 3r+3) of a 2 x 3*size array of ints, written with
         * write_all; the file then holds the array in row order. */
        MPI_Datatype sub2;
        int gs2[2] = {2, 3 * size}, ss2[2] = {2, 3}, st2[2] = {0, 3 * rank};
        MPI_Type_create_subarray(2, gs2, ss2, st2, MPI_ORDER_C, MPI_INT, &sub2);
        MPI_Type_commit(&sub2);
        CHECK_RC(MPI_File_set_view(fh, 0, MPI_INT, sub2, "native", MPI_INFO_NULL));
        for (int i = 0; i < 6; i++)
            buf[i] = val((i / 3) * 3 * size + 3 * rank + i % 3, 9);
        CHECK_RC(MPI_File_write_all(fh, buf, 6, MPI_INT, &st));
        MPI_Type_free(&sub2);
        CHECK_RC(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
        CHECK_RC(MPI_File_read_at_all(fh, 0, got, 6 * size, MPI_INT, &st));
        for (int j = 0; j < 6 * size; j++)
            CHECK(got[j] == val(j, 9));
        /* Blocks of 1 and 2 ints, every 5: ints 0, 3, 4, then 5... */
        MPI_Datatype odd;
        int bl[2] = {1, 2}, ds[2] = {0, 3};
        MPI_Type_indexed(2, bl, ds, MPI_INT, &odd);
        MPI_Type_commit(&odd);
        CHECK_RC(MPI_File_set_view(fh, 0, MPI_INT, odd, "native", MPI_INFO_NULL));
        CHECK_RC(MPI_File_read_at(fh, 0, got, 3, MPI_INT, &st));
        CHECK(got[0] == val(0, 9) && got[1] == val(3, 9) && got[2] == val(4, 9));
        MPI_Offset bo2;
        CHECK_RC(MPI_File_get_byte_offset(fh, 4, &bo2)); /* tile 1, int 3 */
        CHECK(bo2 == 8 * 4);
        MPI_Type_free(&odd);
        /* Overlapping blocks, and decreasing displacements, which MPI
         * forbids in a filetype (overlaps in a writable file): MPI_ERR_IO
         * at every rank, as ROMIO says. */
        MPI_Datatype over, down;
        int obl[2] = {2, 2}, ods[2] = {0, 1}, dbl[2] = {1, 1}, dds[2] = {3, 0};
        MPI_Type_indexed(2, obl, ods, MPI_INT, &over);
        MPI_Type_commit(&over);
        int rc = MPI_File_set_view(fh, 0, MPI_INT, over, "native", MPI_INFO_NULL), cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_IO);
        MPI_Type_free(&over);
        MPI_Type_indexed(2, dbl, dds, MPI_INT, &down);
        MPI_Type_commit(&down);
        rc = MPI_File_set_view(fh, 0, MPI_INT, down, "native", MPI_INFO_NULL);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_IO);
        MPI_Type_free(&down);
        /* A data representation other than native. */
        rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_UNSUPPORTED_DATAREP);
        /* A filetype not made of etypes. */
        rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_SHORT, "native", MPI_INFO_NULL);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TYPE);
        CHECK_RC(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    }
    CHECK_RC(MPI_File_close(&fh));

    /* Derived memory types: every other int of a buffer, written and
     * read back into another strided buffer. */
    fh = open_new("derived", MPI_MODE_RDWR);
    {
        MPI_Datatype every2;
        MPI_Type_vector(8, 1, 2, MPI_INT, &every2);
        MPI_Type_commit(&every2);
        int src[16], dst[16];
        for (int i = 0; i < 16; i++)
            src[i] = i % 2 == 0 ? val(rank * 8 + i / 2, 9) : -7;
        CHECK_RC(MPI_File_write_at_all(fh, (MPI_Offset)rank * 32, src, 1, every2, &st));
        MPI_Get_count(&st, every2, &cnt);
        CHECK(cnt == 1);
        verify(fh, 8 * size, 9);
        for (int i = 0; i < 16; i++)
            dst[i] = -1;
        int from = (rank + 1) % size;
        CHECK_RC(MPI_File_read_at(fh, (MPI_Offset)from * 32, dst, 1, every2, &st));
        for (int i = 0; i < 16; i++)
            CHECK(dst[i] == (i % 2 == 0 ? val(from * 8 + i / 2, 9) : -1));
        MPI_Type_free(&every2);
        /* MPI_BOTTOM and absolute addresses. */
        int abs4[4];
        for (int i = 0; i < 4; i++)
            abs4[i] = val(rank * 8 + i, 9);
        MPI_Aint addr;
        MPI_Get_address(abs4, &addr);
        int four = 4;
        MPI_Datatype at;
        MPI_Type_create_struct(1, &four, &addr, (MPI_Datatype[]){MPI_INT}, &at);
        MPI_Type_commit(&at);
        CHECK_RC(MPI_File_write_at(fh, (MPI_Offset)rank * 32, MPI_BOTTOM, 1, at, &st));
        MPI_Type_free(&at);
        MPI_Barrier(MPI_COMM_WORLD);
        verify(fh, 8 * size, 9);
    }
    CHECK_RC(MPI_File_close(&fh));

    /* The rest of a file's calls. */
    fh = open_new("misc", MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE);
    {
        int amode, flag;
        CHECK_RC(MPI_File_get_amode(fh, &amode));
        CHECK(amode == (MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE | MPI_MODE_CREATE));
        MPI_Group g, wg;
        CHECK_RC(MPI_File_get_group(fh, &g));
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        int cmp;
        MPI_Group_compare(g, wg, &cmp);
        CHECK(cmp == MPI_IDENT);
        MPI_Group_free(&g);
        MPI_Group_free(&wg);
        MPI_Info info;
        CHECK_RC(MPI_File_get_info(fh, &info));
        char v[MPI_MAX_INFO_VAL];
        int vl = MPI_MAX_INFO_VAL;
        MPI_Info_get_string(info, "cb_buffer_size", &vl, v, &flag);
        CHECK(flag && atoi(v) > 0);
        MPI_Info_free(&info);
        MPI_Info_create(&info);
        MPI_Info_set(info, "access_style", "write_once");
        CHECK_RC(MPI_File_set_info(fh, info));
        MPI_Info_free(&info);
        CHECK_RC(MPI_File_set_atomicity(fh, 1));
        CHECK_RC(MPI_File_get_atomicity(fh, &flag));
        CHECK(flag == 1);
        int x = rank;
        CHECK_RC(MPI_File_write_at(fh, rank * 4, &x, 1, MPI_INT, &st));
        CHECK_RC(MPI_File_set_atomicity(fh, 0));
        CHECK_RC(MPI_File_get_atomicity(fh, &flag));
        CHECK(flag == 0);
        CHECK_RC(MPI_File_preallocate(fh, 4096));
        CHECK_RC(MPI_File_get_size(fh, &sz));
        CHECK(sz == 4096);
        CHECK_RC(MPI_File_set_size(fh, 100));
        CHECK_RC(MPI_File_get_size(fh, &sz));
        CHECK(sz == 100);
        CHECK_RC(MPI_File_sync(fh));
        MPI_Aint ext;
        CHECK_RC(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext));
        CHECK(ext == 8);
        MPI_Count cext;
        CHECK_RC(MPI_File_get_type_extent_c(fh, MPI_INT, &cext));
        CHECK(cext == 4);
        MPI_Errhandler eh;
        CHECK_RC(MPI_File_get_errhandler(fh, &eh));
        CHECK(eh == MPI_ERRORS_RETURN);
        /* The handle as an int (Fortran's), and back. */
        MPI_File back = MPI_File_fromint(MPI_File_toint(fh));
        CHECK(back == fh);
        CHECK_RC(MPI_File_get_size(back, &sz));
        CHECK(MPI_File_fromint(MPI_File_toint(MPI_FILE_NULL)) == MPI_FILE_NULL);
    }
    CHECK_RC(MPI_File_close(&fh));
    if (rank == 0) {
        char p[600];
        path(p, "misc");
        FILE *f = fopen(p, "r");
        CHECK(f == NULL); /* deleted on close */
    }

    /* Delete: the others' files. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        const char *names[] = {"indep", "coll", "big", "shared", "ordered", "nb", "split", "view", "derived"};
        for (int i = 0; i < 9; i++) {
            char p[600];
            path(p, names[i]);
            CHECK_RC(MPI_File_delete(p, MPI_INFO_NULL));
        }
    }
    free(buf);
    DONE();
}
