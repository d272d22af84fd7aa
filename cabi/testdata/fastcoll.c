/* The fast MPI_Allreduce and MPI_Barrier (fastcoll.h), which run a small
 * collective without entering Go (on ranks that spin, and on ranks that
 * sleep: SHMPI_SPIN=0, or more ranks than cores), against the general path
 * that shares their collective lines and counts: every type and op they
 * take, every size up to 24 bytes and the first above, in place, ops and
 * types they leave to Go, collectives of the general path in between (a
 * nonblocking one queued, which the next blocking call must follow), a
 * large send in flight that the waiting rank's progress must move, new
 * communicators in freed slots, and members whose counts differ, on the
 * fast path or across the two. shmpi_c_fast_colls shows that the fast
 * path ran. */
#include <limits.h>

#include "check.h"

/* value is member r's element i of a test of seed k: small, so that sums
 * and products of floats are exact however they are ordered; not
 * negative for unsigned types, whose MIN and MAX see them so. */
static long long value(int r, int i, int k, MPI_Op op, int isunsigned)
{
    if (op == MPI_PROD) { /* no zero: a product of floats would be -0 where C computes 0 */
        int v = (r + i + k) % 3;
        return v == 0 ? (isunsigned ? 3 : -1) : v;
    }
    return (long long)((r * 7 + i * 3 + k) % 23) - (isunsigned ? 0 : 11);
}

/* check_allreduce runs MPI_Allreduce of count elements of type t with op
 * on comm (in place if inplace) and compares with the reduction computed
 * here. Returns the number of calls the fast path should have taken. */
static int check_allreduce(MPI_Comm comm, MPI_Datatype t, MPI_Op op, int count, int inplace, int k)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    union {
        float f[16];
        double d[16];
        int i[16];
        long long l[16];
        unsigned u[16];
        unsigned long long ul[16];
    } in, out, want;
    memset(&out, 0x5a, sizeof out);
    int isunsigned = t == MPI_UNSIGNED || t == MPI_UINT32_T || t == MPI_UNSIGNED_LONG_LONG || t == MPI_UINT64_T;
    for (int i = 0; i < count; i++) {
        long long acc = 0;
        for (int r = 0; r < size; r++) {
            long long x = value(r, i, k, op, isunsigned);
            if (r == 0)
                acc = x;
            else if (op == MPI_SUM)
                acc += x;
            else if (op == MPI_MIN)
                acc = x < acc ? x : acc;
            else if (op == MPI_MAX)
                acc = x > acc ? x : acc;
            else if (op == MPI_PROD)
                acc *= x;
        }
        long long mine = value(rank, i, k, op, isunsigned);
        if (t == MPI_FLOAT)
            in.f[i] = (float)mine, want.f[i] = (float)acc;
        else if (t == MPI_DOUBLE)
            in.d[i] = (double)mine, want.d[i] = (double)acc;
        else if (t == MPI_INT || t == MPI_INT32_T)
            in.i[i] = (int)mine, want.i[i] = (int)acc;
        else if (t == MPI_LONG || t == MPI_INT64_T || t == MPI_LONG_LONG)
            in.l[i] = mine, want.l[i] = acc;
        else if (t == MPI_UNSIGNED || t == MPI_UINT32_T)
            in.u[i] = (unsigned)mine, want.u[i] = (unsigned)acc;
        else
            in.ul[i] = (unsigned long long)mine, want.ul[i] = (unsigned long long)acc;
    }
    int size_t_ = 0;
    MPI_Type_size(t, &size_t_);
    /* MPI_Allreduce and its large-count form (mpi4py calls that one) alike */
    const void *send = &in;
    if (inplace) {
        memcpy(&out, &in, sizeof in);
        send = MPI_IN_PLACE;
    }
    if (k % 2)
        CHECK_RC(MPI_Allreduce_c(send, &out, count, t, op, comm));
    else
        CHECK_RC(MPI_Allreduce(send, &out, count, t, op, comm));
    if (memcmp(&out, &want, (size_t)count * size_t_) != 0) {
        printf("FAIL rank %d: allreduce of %d elements of size %d (op %p, in place %d, test %d) differs\n", rank, count,
               size_t_, (void *)op, inplace, k);
        fflush(stdout);
        exit(1);
    }
    int fast_type = t == MPI_FLOAT || t == MPI_DOUBLE || t == MPI_INT || t == MPI_INT32_T || t == MPI_LONG ||
                    t == MPI_LONG_LONG || t == MPI_INT64_T || t == MPI_UNSIGNED || t == MPI_UINT32_T ||
                    t == MPI_UNSIGNED_LONG_LONG || t == MPI_UINT64_T;
    int fast_op = op == MPI_SUM || ((op == MPI_MIN || op == MPI_MAX) && t != MPI_FLOAT && t != MPI_DOUBLE);
    return fast_type && fast_op && count * size_t_ <= 24;
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    MPI_Init(&argc, &argv);
    CHECK_RC(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0)
        printf("waits: %s\n", wait_spins() ? "spin" : "sleep");
    /* The first collective sets up what the fast path checks. */
    CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
    unsigned long long before = counter_pvar("shmpi_c_fast_colls");
    long long expect = 0;

    MPI_Datatype types[] = {MPI_FLOAT, MPI_DOUBLE, MPI_INT, MPI_INT32_T, MPI_LONG, MPI_LONG_LONG, MPI_INT64_T,
                            MPI_UNSIGNED, MPI_UINT32_T, MPI_UNSIGNED_LONG_LONG, MPI_UINT64_T};
    MPI_Op ops[] = {MPI_SUM, MPI_MIN, MPI_MAX, MPI_PROD};
    int k = 0;
    for (unsigned ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        int ts = 0;
        MPI_Type_size(types[ti], &ts);
        for (unsigned oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
            for (int count = 1; count <= 24 / ts + 1; count++) {
                for (int inplace = 0; inplace < 2; inplace++) {
                    expect += check_allreduce(MPI_COMM_WORLD, types[ti], ops[oi], count, inplace, k++);
                    CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
                    expect++;
                }
            }
        }
    }
    unsigned long long got = counter_pvar("shmpi_c_fast_colls") - before;
    if (got != (unsigned long long)expect) {
        printf("FAIL rank %d: the fast path ran %llu collectives, want %lld\n", rank, got, expect);
        exit(1);
    }

    /* The general path in between: a broadcast, a reduction to a root, a
     * nonblocking allreduce still queued when the blocking calls come
     * (they follow it, through Go), a large allreduce. */
    for (int i = 0; i < 50; i++) {
        int b = rank == i % size ? i : -1, s = rank + i, r = -1, r2 = -1, big[16], bigout[16];
        MPI_Request q;
        CHECK_RC(MPI_Bcast(&b, 1, MPI_INT, i % size, MPI_COMM_WORLD));
        CHECK(b == i);
        CHECK_RC(MPI_Iallreduce(&s, &r, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q));
        CHECK_RC(MPI_Allreduce(&s, &r2, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
        CHECK(r == size * (size - 1) / 2 + size * i && r2 == size - 1 + i);
        CHECK_RC(MPI_Reduce(&s, &r, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
        CHECK(rank != 0 || r == size * (size - 1) / 2 + size * i);
        for (int j = 0; j < 16; j++)
            big[j] = rank * j;
        CHECK_RC(MPI_Allreduce(big, bigout, 16, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        for (int j = 0; j < 16; j++)
            CHECK(bigout[j] == j * size * (size - 1) / 2);
        CHECK(check_allreduce(MPI_COMM_WORLD, MPI_DOUBLE, MPI_SUM, 3, i % 2, i) == 1);
        CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
    }

    got = counter_pvar("shmpi_c_fast_colls") - before - (unsigned long long)expect;
    if (got < 100) {
        printf("FAIL rank %d: the fast path ran %llu collectives between the others, want 100 or more\n", rank, got);
        exit(1);
    }

    /* A transfer in flight that only this rank's progress moves: rank 0
     * starts a large send to rank 1, which receives it before it joins
     * the Allreduce that rank 0 waits in (through Go, or after the fast
     * path's wait continues in Go). */
    {
        static char large[1 << 20];
        int one = 1, sum = 0;
        MPI_Request q = MPI_REQUEST_NULL;
        if (rank == 0)
            CHECK_RC(MPI_Isend(large, sizeof large, MPI_CHAR, 1, 9, MPI_COMM_WORLD, &q));
        if (rank == 1)
            CHECK_RC(MPI_Recv(large, sizeof large, MPI_CHAR, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_RC(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(sum == size);
        CHECK_RC(MPI_Wait(&q, MPI_STATUS_IGNORE));
    }

    /* New communicators in the slots of freed ones: their counts and
     * lines start afresh. */
    for (int i = 0; i < 20; i++) {
        MPI_Comm d, half;
        CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &d));
        CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
        for (int j = 0; j < 5; j++) {
            CHECK(check_allreduce(d, MPI_INT, MPI_MAX, 1 + j, j % 2, i + j) == 1);
            CHECK_RC(MPI_Barrier(d));
            int hs = 0;
            MPI_Comm_size(half, &hs);
            if (hs > 1)
                CHECK(check_allreduce(half, MPI_LONG, MPI_SUM, 3, 0, i * j) == 1);
            CHECK_RC(MPI_Barrier(half));
        }
        CHECK_RC(MPI_Comm_free(&d));
        CHECK_RC(MPI_Comm_free(&half));
    }

    /* Counts that differ: every member gets MPI_ERR_COUNT, whether all
     * took the fast path (1 int against 2) or one took the general path
     * (16 ints against 1), and the communicator works on. */
    for (int i = 0; i < 10; i++) {
        int odd = rank == (i % size), n = odd ? (i % 2 ? 16 : 2) : 1;
        int s[16] = {0}, r[16];
        int rc = MPI_Allreduce(s, r, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (error_class(rc) != MPI_ERR_COUNT) {
            printf("FAIL rank %d: counts %d against 1 (round %d): class %d, want MPI_ERR_COUNT\n", rank, n, i,
                   error_class(rc));
            exit(1);
        }
        CHECK(check_allreduce(MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, 2, 0, i) == 1);
        CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
    }
    /* Collectives of messages, whose tags count the collectives begun:
     * every member counted the fast ones and the failed ones alike. */
    static int big[1000], bigout[1000];
    for (int j = 0; j < 1000; j++)
        big[j] = rank + j;
    CHECK_RC(MPI_Reduce(big, bigout, 1000, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD));
    for (int j = 0; rank == size - 1 && j < 1000; j++)
        CHECK(bigout[j] == size * (size - 1) / 2 + size * j);
    CHECK_RC(MPI_Bcast(bigout, 1000, MPI_INT, size - 1, MPI_COMM_WORLD));
    CHECK(bigout[999] == size * (size - 1) / 2 + size * 999);
    DONE();
}
