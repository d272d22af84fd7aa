/* One-sided: windows from MPI_Win_allocate, _allocate_shared and
 * _create (over malloc'd and MPI_Alloc_mem memory); Put and Get between
 * fences; Accumulate, Fetch_and_op and Compare_and_swap under locks;
 * post-start-complete-wait; shared_query; attributes. */
#include "check.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* Allocate: each rank puts its rank into its right neighbour. */
    int *base;
    MPI_Win w;
    CHECK_RC(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    for (int i = 0; i < 4; i++)
        base[i] = -1;
    MPI_Win_fence(0, w);
    int v[2] = {rank, rank * 10};
    CHECK_RC(MPI_Put(v, 2, MPI_INT, right, 1, 2, MPI_INT, w));
    MPI_Win_fence(0, w);
    CHECK(base[1] == left && base[2] == left * 10 && base[0] == -1);
    int g[2];
    CHECK_RC(MPI_Get(g, 2, MPI_INT, left, 1, 2, MPI_INT, w));
    MPI_Win_fence(0, w);
    CHECK(g[0] == (left + size - 1) % size);
    int *attr_unit, flag;
    MPI_Aint *attr_size;
    MPI_Win_get_attr(w, MPI_WIN_DISP_UNIT, &attr_unit, &flag);
    CHECK(flag && *attr_unit == sizeof(int));
    MPI_Win_get_attr(w, MPI_WIN_SIZE, &attr_size, &flag);
    CHECK(flag && *attr_size == 4 * sizeof(int));
    void *attr_base;
    MPI_Win_get_attr(w, MPI_WIN_BASE, &attr_base, &flag);
    CHECK(flag && attr_base == base);

    /* Accumulate and Fetch_and_op on rank 0 under locks. */
    if (rank == 0)
        base[3] = 0;
    MPI_Win_fence(0, w);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w);
    int one = 1, old, tot = 0;
    for (int i = 0; i < 10; i++) {
        CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));
        CHECK_RC(MPI_Accumulate(&one, 1, MPI_INT, 0, 3, 1, MPI_INT, MPI_SUM, w));
        CHECK_RC(MPI_Win_unlock(0, w));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w);
    CHECK_RC(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 3, MPI_NO_OP, w));
    MPI_Win_unlock(0, w);
    CHECK(old == 10 * size);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, w);
    CHECK_RC(MPI_Fetch_and_op(&one, &old, MPI_INT, 0, 3, MPI_SUM, w));
    MPI_Win_flush(0, w);
    MPI_Win_unlock_all(w);
    MPI_Allreduce(&old, &tot, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(tot == 11 * size - 1);
    MPI_Win_free(&w);
    CHECK(w == MPI_WIN_NULL);

    /* allocate_shared and shared_query: loads and stores, among the
     * ranks that share memory (all of them on one node). */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nrank, nsize;
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    int nleft = (nrank + nsize - 1) % nsize;
    double *mine;
    CHECK_RC(MPI_Win_allocate_shared(sizeof(double), sizeof(double), MPI_INFO_NULL, node, &mine, &w));
    *mine = nrank + 0.5;
    MPI_Win_fence(0, w);
    double *theirs;
    MPI_Aint sz;
    int du;
    CHECK_RC(MPI_Win_shared_query(w, nleft, &sz, &du, &theirs));
    CHECK(sz == sizeof(double) && du == sizeof(double) && *theirs == nleft + 0.5);
    MPI_Win_fence(0, w);
    MPI_Win_free(&w);
    MPI_Comm_free(&node);

    /* create over user memory; Compare_and_swap; PSCW. */
    long long *mem = malloc(2 * sizeof(long long));
    mem[0] = 0;
    mem[1] = rank;
    CHECK_RC(MPI_Win_create(mem, 2 * sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w);
    long long want = 0, mine_ll = rank + 1, got;
    CHECK_RC(MPI_Compare_and_swap(&mine_ll, &want, &got, MPI_LONG_LONG, 0, 0, w));
    {
        /* Only integer, logical, multi-language and byte types. */
        double dv = 1, dc = 0, dr;
        int cls;
        MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
        MPI_Error_class(MPI_Compare_and_swap(&dv, &dc, &dr, MPI_DOUBLE, 0, 0, w), &cls);
        CHECK(cls == MPI_ERR_TYPE);
        /* Freeing the window under a lock is MPI_ERR_RMA_SYNC, and the
         * window stays. */
        MPI_Win keep = w;
        MPI_Error_class(MPI_Win_free(&w), &cls);
        CHECK(cls == MPI_ERR_RMA_SYNC && w == keep);
        MPI_Win_set_errhandler(w, MPI_ERRORS_ARE_FATAL);
    }
    MPI_Win_unlock(0, w);
    int won = got == 0, winners;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(winners == 1);
    MPI_Group wg, lg, rg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_incl(wg, 1, &left, &lg);
    MPI_Group_incl(wg, 1, &right, &rg);
    CHECK_RC(MPI_Win_post(lg, 0, w));
    CHECK_RC(MPI_Win_start(rg, 0, w));
    {
        /* No lock inside a Start epoch. */
        int cls;
        MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
        MPI_Error_class(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w), &cls);
        CHECK(cls == MPI_ERR_RMA_SYNC);
        MPI_Win_set_errhandler(w, MPI_ERRORS_ARE_FATAL);
    }
    long long val = 100 + rank;
    CHECK_RC(MPI_Put(&val, 1, MPI_LONG_LONG, right, 1, 1, MPI_LONG_LONG, w));
    CHECK_RC(MPI_Win_complete(w));
    CHECK_RC(MPI_Win_wait(w));
    CHECK(mem[1] == 100 + left);
    MPI_Group_free(&wg);
    MPI_Group_free(&lg);
    MPI_Group_free(&rg);
    MPI_Win_free(&w);
    free(mem);

    /* Members may give different displacement units: each target's own
     * scales the displacements to it (member 0: an int, the others: 1). */
    int *du_mem = calloc(4, sizeof(int));
    for (int i = 0; i < 4; i++)
        du_mem[i] = 100 * rank + i;
    CHECK_RC(MPI_Win_create(du_mem, 4 * sizeof(int), rank == 0 ? (int)sizeof(int) : 1, MPI_INFO_NULL,
                            MPI_COMM_WORLD, &w));
    /* A target type whose element lies 2 ints past the displacement: its
     * byte offset is converted with the target's unit. */
    MPI_Datatype third;
    int one_len = 1, at2 = 2;
    MPI_Type_indexed(1, &one_len, &at2, MPI_INT, &third);
    MPI_Type_commit(&third);
    MPI_Win_fence(0, w);
    int du0 = -1, du1 = -1, du_right = -1;
    CHECK_RC(MPI_Get(&du0, 1, MPI_INT, 0, 2, 1, MPI_INT, w));
    CHECK_RC(MPI_Get(&du1, 1, MPI_INT, 0, 1, 1, third, w));
    CHECK_RC(MPI_Get(&du_right, 1, MPI_INT, right, 0, 1, third, w));
    MPI_Win_fence(0, w);
    CHECK(du0 == 2 && du1 == 3 && du_right == 100 * right + 2);
    MPI_Type_free(&third);
    MPI_Win_free(&w);
    free(du_mem);

    /* Alloc_mem memory in a window. */
    int *am;
    CHECK_RC(MPI_Alloc_mem(sizeof(int), MPI_INFO_NULL, &am));
    *am = -1;
    CHECK_RC(MPI_Win_create(am, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    MPI_Win_fence(0, w);
    MPI_Put(&rank, 1, MPI_INT, right, 0, 1, MPI_INT, w);
    MPI_Win_fence(0, w);
    CHECK(*am == left);
    MPI_Win_free(&w);
    CHECK_RC(MPI_Free_mem(am));

    /* Accumulates on derived datatypes: every other int of the target
     * (a vector), a strided origin, and pairs (MAXLOC on MPI_DOUBLE_INT,
     * whose C struct has padding, alone and in a vector). */
    {
        int acc[8];
        for (int i = 0; i < 8; i++)
            acc[i] = 0;
        MPI_Datatype every2, dipairs;
        MPI_Type_vector(4, 1, 2, MPI_INT, &every2);
        MPI_Type_commit(&every2);
        CHECK_RC(MPI_Win_create(acc, sizeof(acc), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
        int src[8] = {1, -1, 2, -1, 3, -1, 4, -1}, fetched[8];
        MPI_Win_fence(0, w);
        CHECK_RC(MPI_Accumulate(src, 1, every2, right, 1, 1, every2, MPI_SUM, w));
        MPI_Win_fence(0, w);
        CHECK(acc[0] == 0 && acc[1] == 1 && acc[2] == 0 && acc[3] == 2 && acc[5] == 3 && acc[7] == 4);
        MPI_Barrier(MPI_COMM_WORLD); /* the next accumulates change acc */
        for (int i = 0; i < 8; i++)
            fetched[i] = -7;
        int four[4] = {1, 2, 3, 4};
        CHECK_RC(MPI_Get_accumulate(four, 4, MPI_INT, fetched, 1, every2, left, 1, 1, every2, MPI_SUM, w));
        MPI_Win_fence(0, w);
        CHECK(fetched[0] == 1 && fetched[1] == -7 && fetched[2] == 2 && fetched[4] == 3 && fetched[6] == 4);
        CHECK(acc[1] == 2 && acc[3] == 4 && acc[5] == 6 && acc[7] == 8 && acc[0] == 0 && acc[6] == 0);
        /* A type of no data and a request to MPI_PROC_NULL complete. */
        MPI_Datatype none;
        MPI_Type_contiguous(0, MPI_INT, &none);
        MPI_Type_commit(&none);
        MPI_Request rq = MPI_REQUEST_NULL;
        CHECK_RC(MPI_Accumulate(src, 1, none, right, 0, 1, none, MPI_SUM, w));
        CHECK_RC(MPI_Raccumulate(src, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, MPI_SUM, w, &rq));
        CHECK(rq != MPI_REQUEST_NULL);
        CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        MPI_Win_fence(0, w);
        MPI_Win_free(&w);
        MPI_Type_free(&none);
        MPI_Type_free(&every2);

        struct { double v; int i; } pairs[4], mine[4], got[4];
        for (int i = 0; i < 4; i++) {
            pairs[i].v = 0.5;
            pairs[i].i = -1;
            mine[i].v = i == 1 ? -1 : rank;
            mine[i].i = 10 * rank + i;
        }
        MPI_Type_vector(2, 1, 2, MPI_DOUBLE_INT, &dipairs); /* pairs 0 and 2 */
        MPI_Type_commit(&dipairs);
        CHECK_RC(MPI_Win_create(pairs, sizeof(pairs), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w));
        MPI_Win_fence(0, w);
        /* Every rank: MAXLOC of its two first pairs into 0 and 1 at rank 0,
         * and of pairs 0 and 2 into 0 and 2 at rank 1 (a vector). */
        CHECK_RC(MPI_Accumulate(mine, 2, MPI_DOUBLE_INT, 0, 0, 2, MPI_DOUBLE_INT, MPI_MAXLOC, w));
        CHECK_RC(MPI_Accumulate(mine, 1, dipairs, 1, 0, 1, dipairs, MPI_MAXLOC, w));
        MPI_Win_fence(0, w);
        if (rank == 0) {
            CHECK(pairs[0].v == size - 1 && pairs[0].i == 10 * (size - 1));
            CHECK(pairs[1].v == 0.5 && pairs[1].i == -1);
            CHECK(pairs[2].v == 0.5 && pairs[3].v == 0.5);
        }
        if (rank == 1) {
            CHECK(pairs[0].v == size - 1 && pairs[0].i == 10 * (size - 1));
            CHECK(pairs[2].v == size - 1 && pairs[2].i == 10 * (size - 1) + 2);
            CHECK(pairs[1].v == 0.5 && pairs[1].i == -1 && pairs[3].i == -1);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_RC(MPI_Get_accumulate(NULL, 0, MPI_DOUBLE_INT, got, 1, dipairs, 1, 0, 1, dipairs, MPI_NO_OP, w));
        MPI_Win_fence(0, w);
        CHECK(got[0].v == size - 1 && got[0].i == 10 * (size - 1) && got[2].i == 10 * (size - 1) + 2);
        MPI_Win_free(&w);
        MPI_Type_free(&dipairs);

        /* A unit of the pair's size: MPI_SHORT_INT's int lies 4 bytes in,
         * between two units. */
        struct { short s; int i; } si[4], one = {(short)(rank + 1), 100 + rank}, back;
        memset(si, 0, sizeof(si));
        CHECK_RC(MPI_Win_create(si, sizeof(si), sizeof(si[0]), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
        MPI_Win_fence(0, w);
        CHECK_RC(MPI_Put(&one, 1, MPI_SHORT_INT, right, 1, 1, MPI_SHORT_INT, w));
        CHECK_RC(MPI_Accumulate(&one, 1, MPI_SHORT_INT, 0, 2, 1, MPI_SHORT_INT, MPI_MAXLOC, w));
        MPI_Win_fence(0, w);
        CHECK(si[1].s == left + 1 && si[1].i == 100 + left);
        if (rank == 0)
            CHECK(si[2].s == size && si[2].i == 100 + size - 1);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_RC(MPI_Get(&back, 1, MPI_SHORT_INT, left, 1, 1, MPI_SHORT_INT, w));
        MPI_Win_fence(0, w);
        CHECK(back.s == (left + size - 1) % size + 1 && back.i == 100 + (left + size - 1) % size);
        MPI_Win_free(&w);
    }

    /* Errors on windows: an RMA call outside an epoch. */
    CHECK_RC(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    int rc = MPI_Put(&rank, 1, MPI_INT, right, 0, 1, MPI_INT, w), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC);
    MPI_Win_free(&w);
    DONE();
}
