/* A request handle's slot is recycled by later operations, and the
 * generation in the handle keeps an old copy of it invalid through 2^16
 * recycles: every call on the stale copy is MPI_ERR_REQUEST, and each
 * new operation completes with its own message. Run on 2 ranks. */
#include "check.h"
#include <stdint.h>

static int errclass(int rc)
{
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int other = 1 - rank, in = -1, out = 0;

    MPI_Request r, stale;
    CHECK_RC(MPI_Irecv(&in, 1, MPI_INT, other, 0, MPI_COMM_WORLD, &r));
    stale = r;
    CHECK_RC(MPI_Send(&out, 1, MPI_INT, other, 0, MPI_COMM_WORLD));
    CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(r == MPI_REQUEST_NULL && in == 0);

    enum { RECYCLES = 1 << 16 };
    int reused = 0;
    for (int i = 1; i <= RECYCLES; i++) {
        int tag = i & 0x7fff;
        CHECK_RC(MPI_Irecv(&in, 1, MPI_INT, other, tag, MPI_COMM_WORLD, &r));
        CHECK(r != stale);
        /* The same slot (the handle's low 32 bits), another generation. */
        if (((uintptr_t)r & 0xffffffffu) == ((uintptr_t)stale & 0xffffffffu))
            reused++;
        int flag = -1;
        MPI_Status st;
        CHECK(errclass(MPI_Request_get_status(stale, &flag, &st)) == MPI_ERR_REQUEST);
        MPI_Request copy = stale;
        CHECK(errclass(MPI_Test(&copy, &flag, &st)) == MPI_ERR_REQUEST);
        copy = stale;
        CHECK(errclass(MPI_Cancel(&copy)) == MPI_ERR_REQUEST);
        out = i;
        CHECK_RC(MPI_Send(&out, 1, MPI_INT, other, tag, MPI_COMM_WORLD));
        CHECK_RC(MPI_Wait(&r, &st));
        CHECK(in == i && st.MPI_TAG == tag && st.MPI_SOURCE == other);
    }
    /* Recycling happened (else the test proves nothing). */
    CHECK(reused >= RECYCLES / 2);
    MPI_Request copy = stale;
    CHECK(errclass(MPI_Wait(&copy, MPI_STATUS_IGNORE)) == MPI_ERR_REQUEST);
    DONE();
}
