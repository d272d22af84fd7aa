/* Errors: classes through MPI_ERRORS_RETURN and through a user handler,
 * added classes, codes and strings, unsupported calls, bad handles; and
 * the other ranks go on. */
#include "check.h"

static int calls, last;

static void handler(MPI_Comm *comm, int *code, ...)
{
    CHECK(*comm == MPI_COMM_WORLD);
    calls++;
    last = *code;
}

/* A handler that forgives: the call then returns what it sets. */
static void forgive(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    calls++;
    *code = MPI_SUCCESS;
}

static int class_of(int code)
{
    int c;
    MPI_Error_class(code, &c);
    return c;
}

int main(int argc, char **argv)
{
    int rank, size, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    CHECK(eh == MPI_ERRORS_ARE_FATAL);
    CHECK_RC(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    /* Bad arguments give the class MPI names. */
    CHECK(class_of(MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD)) == MPI_ERR_RANK);
    CHECK(class_of(MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD)) == MPI_ERR_TAG);
    CHECK(class_of(MPI_Send(&x, -1, MPI_INT, 0, 0, MPI_COMM_WORLD)) == MPI_ERR_COUNT);
    CHECK(class_of(MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD)) == MPI_ERR_TYPE);
    CHECK(class_of(MPI_Send(&x, 1, (MPI_Datatype)MPI_COMM_WORLD, 0, 0, MPI_COMM_WORLD)) == MPI_ERR_TYPE);
    CHECK(class_of(MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL)) == MPI_ERR_COMM);
    CHECK(class_of(MPI_Barrier((MPI_Comm)MPI_INT)) == MPI_ERR_COMM);
    int r;
    CHECK(class_of(MPI_Comm_rank(MPI_COMM_NULL, &r)) == MPI_ERR_COMM);
    /* A freed communicator's handle. */
    MPI_Comm d, saved;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    saved = d;
    MPI_Comm_free(&d);
    CHECK(class_of(MPI_Comm_size(saved, &r)) == MPI_ERR_COMM);
    CHECK(class_of(MPI_Barrier(saved)) == MPI_ERR_COMM);
    /* Requests, groups, ops. */
    MPI_Request bad = (MPI_Request)MPI_COMM_WORLD;
    CHECK(class_of(MPI_Wait(&bad, MPI_STATUS_IGNORE)) == MPI_ERR_REQUEST);
    MPI_Group g = MPI_GROUP_NULL;
    CHECK(class_of(MPI_Group_size(g, &r)) == MPI_ERR_GROUP);
    int y;
    CHECK(class_of(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD)) == MPI_ERR_OP);
    CHECK(class_of(MPI_Reduce(&x, &y, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD)) == MPI_ERR_ROOT);
    /* An unsupported call. */
    MPI_Comm cart;
    int dims[1] = {size}, periods[1] = {0};
    int rc = MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    (void)rc;
    CHECK(class_of(MPI_Register_datarep("mine", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, NULL, NULL)) == MPI_ERR_UNSUPPORTED_OPERATION);

    /* Error strings. */
    char s[MPI_MAX_ERROR_STRING];
    int len;
    MPI_Error_string(MPI_ERR_TRUNCATE, s, &len);
    CHECK(len > 0 && strstr(s, "trunc") != NULL);
    MPI_Error_string(MPIX_ERR_PROC_FAILED, s, &len);
    CHECK(strstr(s, "fail") != NULL);
    CHECK(MPI_ERR_PROC_FAILED == 101 && MPIX_ERR_REVOKED == 103);

    /* Added classes, codes and strings. */
    int cls, code;
    CHECK_RC(MPI_Add_error_class(&cls));
    CHECK_RC(MPI_Add_error_code(cls, &code));
    CHECK_RC(MPI_Add_error_string(code, "my own error"));
    CHECK(class_of(code) == cls && cls > MPI_ERR_ABI);
    MPI_Error_string(code, s, &len);
    CHECK(strcmp(s, "my own error") == 0);
    MPI_Error_string(cls, s, &len); /* no string given: empty */
    CHECK(len == 0 && s[0] == 0);
    int *last_used, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last_used, &flag);
    CHECK(flag);

    /* A user handler is called, with the code, and the call returns it. */
    MPI_Errhandler mine;
    CHECK_RC(MPI_Comm_create_errhandler(handler, &mine));
    CHECK_RC(MPI_Comm_set_errhandler(MPI_COMM_WORLD, mine));
    rc = MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
    CHECK(calls == 1 && last == rc && class_of(rc) == MPI_ERR_RANK);
    MPI_Comm_call_errhandler(MPI_COMM_WORLD, code);
    CHECK(calls == 2 && last == code);
    /* The handler's code is what the call returns. */
    MPI_Errhandler lenient;
    CHECK_RC(MPI_Comm_create_errhandler(forgive, &lenient));
    CHECK_RC(MPI_Comm_set_errhandler(MPI_COMM_WORLD, lenient));
    CHECK(MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD) == MPI_SUCCESS && calls == 3);
    CHECK_RC(MPI_Comm_set_errhandler(MPI_COMM_WORLD, mine));
    MPI_Errhandler_free(&lenient);
    calls = 2;
    /* A communicator inherits its parent's handler. */
    MPI_Comm d2;
    MPI_Comm_dup(MPI_COMM_WORLD, &d2);
    MPI_Errhandler got;
    MPI_Comm_get_errhandler(d2, &got);
    CHECK(got == mine);
    MPI_Comm_free(&d2);
    MPI_Errhandler_free(&mine);
    CHECK(mine == MPI_ERRHANDLER_NULL);
    rc = MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
    CHECK(calls == 3);

    /* A request that fails in MPI_Waitall or MPI_Waitsome: the handler
     * sees the request's own class (MPI_ERR_TRUNCATE), as in Open MPI;
     * the call returns MPI_ERR_IN_STATUS and the statuses hold each
     * request's class. */
    CHECK_RC(MPI_Comm_create_errhandler(handler, &mine));
    CHECK_RC(MPI_Comm_set_errhandler(MPI_COMM_WORLD, mine));
    int right = (rank + 1) % size, left = (rank + size - 1) % size, small, outc, idx[2];
    long big[4] = {1, 2, 3, 4};
    MPI_Request rq[2];
    MPI_Status sts[2];
    for (int round = 0; round < 2; round++) {
        MPI_Irecv(&small, 1, MPI_INT, left, 77, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(big, 4, MPI_LONG, right, 77, MPI_COMM_WORLD, &rq[1]);
        calls = 0;
        if (round == 0) {
            rc = MPI_Waitall(2, rq, sts);
            CHECK(sts[1].MPI_ERROR == MPI_SUCCESS);
        } else {
            rc = MPI_Waitsome(1, rq, &outc, idx, sts);
            CHECK(outc == 1 && idx[0] == 0);
            CHECK_RC(MPI_Wait(&rq[1], MPI_STATUS_IGNORE));
        }
        CHECK(rc == MPI_ERR_IN_STATUS && calls == 1 && class_of(last) == MPI_ERR_TRUNCATE);
        CHECK(class_of(sts[0].MPI_ERROR) == MPI_ERR_TRUNCATE);
    }
    MPI_Errhandler_free(&mine);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* The others go on. */
    int sum;
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size - 1) / 2);
    DONE();
}
