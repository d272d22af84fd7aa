/* MPI-IO errors: the classes of bad input through MPI_ERRORS_RETURN (the
 * default of files, though the world's handler is ERRORS_ARE_FATAL), and
 * file error handlers: user handlers on a file and on MPI_FILE_NULL (the
 * handler of MPI_File_open), get/set/call. argv[1] is a directory. */
#include "check.h"

static int rank, size;
static char dir[512];
static int calls, lastcode;
static MPI_File lastfile;

static void path(char *out, const char *name)
{
    snprintf(out, 600, "%s/%s", dir, name);
}

static int classof(int rc)
{
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

static void handler(MPI_File *fh, int *code, ...)
{
    calls++;
    lastcode = *code;
    lastfile = *fh;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1);
    snprintf(dir, sizeof dir, "%s", argv[1]);
    char p[600];
    MPI_File fh;
    MPI_Status st;
    int rc;

    /* MPI_FILE_NULL's handler is MPI_ERRORS_RETURN. */
    MPI_Errhandler eh;
    CHECK_RC(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == MPI_ERRORS_RETURN);

    /* A missing file opened for reading. */
    path(p, "missing");
    fh = MPI_FILE_NULL;
    rc = MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(classof(rc) == MPI_ERR_NO_SUCH_FILE);
    CHECK(fh == MPI_FILE_NULL);
    /* Bad access modes. */
    path(p, "data");
    rc = MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(classof(rc) == MPI_ERR_AMODE);
    rc = MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(classof(rc) == MPI_ERR_AMODE);
    rc = MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(classof(rc) == MPI_ERR_AMODE);
    /* A bad communicator, and an intercommunicator. */
    rc = MPI_File_open(MPI_COMM_NULL, p, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(classof(rc) == MPI_ERR_COMM);
    /* Names that differ between ranks. */
    if (size > 1) {
        char q[600];
        snprintf(q, sizeof q, "%s/differ%d", dir, rank);
        rc = MPI_File_open(MPI_COMM_WORLD, q, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
        CHECK(rc != MPI_SUCCESS);
        CHECK(classof(rc) == MPI_ERR_NOT_SAME);
    }
    /* CREATE|EXCL of a file that exists. */
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    int v[4] = {1, 2, 3, 4};
    if (rank == 0)
        CHECK_RC(MPI_File_write_at(fh, 0, v, 4, MPI_INT, &st));
    /* Bad arguments of data calls. */
    rc = MPI_File_write_at(fh, -1, v, 1, MPI_INT, &st);
    CHECK(classof(rc) == MPI_ERR_ARG);
    rc = MPI_File_write_at(fh, 0, v, -1, MPI_INT, &st);
    CHECK(classof(rc) == MPI_ERR_COUNT);
    rc = MPI_File_write_at(fh, 0, v, 1, MPI_DATATYPE_NULL, &st);
    CHECK(classof(rc) == MPI_ERR_TYPE);
    rc = MPI_File_seek(fh, 0, 12345);
    CHECK(classof(rc) == MPI_ERR_ARG);
    rc = MPI_File_seek(fh, -1, MPI_SEEK_SET);
    CHECK(classof(rc) == MPI_ERR_ARG);
    /* An uncommitted datatype. */
    MPI_Datatype unc;
    MPI_Type_contiguous(2, MPI_INT, &unc);
    rc = MPI_File_write_at(fh, 0, v, 1, unc, &st);
    CHECK(classof(rc) == MPI_ERR_TYPE);
    MPI_Type_free(&unc);
    /* Bad arguments of a collective call at one rank: it gets its class,
     * the others an error, and nobody waits for it. */
    if (size > 1) {
        MPI_Datatype t = rank == 1 ? MPI_DATATYPE_NULL : MPI_INT;
        int c = rank == 2 ? -1 : 1;
        rc = MPI_File_write_at_all(fh, 0, v, c, t, &st);
        CHECK(rc != MPI_SUCCESS);
        if (rank == 1)
            CHECK(classof(rc) == MPI_ERR_TYPE);
        if (rank == 2)
            CHECK(classof(rc) == MPI_ERR_COUNT);
        rc = MPI_File_read_all(fh, v, c, t, &st);
        CHECK(rc != MPI_SUCCESS);
        rc = MPI_File_write_ordered(fh, v, c, t, &st);
        CHECK(rc != MPI_SUCCESS);
        rc = MPI_File_write_all_begin(fh, v, c, t);
        CHECK(rc != MPI_SUCCESS || (rank != 1 && rank != 2));
        if (rc == MPI_SUCCESS) {
            rc = MPI_File_write_all_end(fh, v, &st);
            CHECK(rc != MPI_SUCCESS);
        }
        MPI_Request rq;
        rc = MPI_File_iwrite_at_all(fh, 0, v, c, t, &rq);
        CHECK_RC(rc);
        rc = MPI_Wait(&rq, &st);
        CHECK(rc != MPI_SUCCESS);
        if (rank == 1)
            CHECK(classof(rc) == MPI_ERR_TYPE);
        rc = MPI_File_set_view(fh, 0, MPI_INT, rank == 1 ? MPI_DATATYPE_NULL : MPI_INT, "native", MPI_INFO_NULL);
        CHECK(rc != MPI_SUCCESS);
        if (rank == 1)
            CHECK(classof(rc) == MPI_ERR_TYPE);
        /* And the file still works. */
        for (int i = 0; i < 4; i++)
            v[i] = i + 1;
        CHECK_RC(MPI_File_write_at_all(fh, 0, v, rank == 0 ? 4 : 0, MPI_INT, &st));
    }
    MPI_File saved = fh;
    CHECK_RC(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL);
    rc = MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL, MPI_INFO_NULL, &fh);
    CHECK(classof(rc) == MPI_ERR_FILE_EXISTS);

    /* A closed handle, and MPI_FILE_NULL. */
    rc = MPI_File_write_at(saved, 0, v, 1, MPI_INT, &st);
    CHECK(classof(rc) == MPI_ERR_FILE);
    MPI_Offset sz;
    rc = MPI_File_get_size(saved, &sz);
    CHECK(classof(rc) == MPI_ERR_FILE);
    rc = MPI_File_close(&saved);
    CHECK(classof(rc) == MPI_ERR_FILE);
    rc = MPI_File_get_size(MPI_FILE_NULL, &sz);
    CHECK(classof(rc) == MPI_ERR_FILE);

    /* Writes to a file opened read-only; reads of one opened write-only. */
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    rc = MPI_File_write_at(fh, 0, v, 1, MPI_INT, &st);
    CHECK(classof(rc) == MPI_ERR_READ_ONLY || classof(rc) == MPI_ERR_ACCESS);
    rc = MPI_File_write_at_all(fh, 0, v, 1, MPI_INT, &st);
    CHECK(classof(rc) == MPI_ERR_READ_ONLY || classof(rc) == MPI_ERR_ACCESS);
    int w[4];
    CHECK_RC(MPI_File_read_at(fh, 0, w, 4, MPI_INT, &st));
    CHECK(w[0] == 1 && w[3] == 4);
    CHECK_RC(MPI_File_close(&fh));
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    rc = MPI_File_read_at(fh, 0, w, 1, MPI_INT, &st);
    CHECK(classof(rc) == MPI_ERR_ACCESS);
    /* Explicit offsets on a sequential file. */
    CHECK_RC(MPI_File_close(&fh));
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh));
    rc = MPI_File_write_at(fh, 0, v, 1, MPI_INT, &st);
    CHECK(classof(rc) == MPI_ERR_UNSUPPORTED_OPERATION);
    /* MPI_DISPLACEMENT_CURRENT: the shared pointer's place. */
    CHECK_RC(MPI_File_write_ordered(fh, v, 1, MPI_INT, &st));
    CHECK_RC(MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_Offset d;
    MPI_Datatype e, f;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK_RC(MPI_File_get_view(fh, &d, &e, &f, rep));
    CHECK(d == 4 * size);
    CHECK_RC(MPI_File_close(&fh));

    /* A user handler on a file: called with the class, and
     * MPI_File_call_errhandler. */
    MPI_Errhandler mine;
    CHECK_RC(MPI_File_create_errhandler(handler, &mine));
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    CHECK_RC(MPI_File_set_errhandler(fh, mine));
    CHECK_RC(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == mine);
    rc = MPI_File_write_at(fh, 0, v, 1, MPI_INT, &st);
    CHECK(calls == 1 && rc == lastcode && lastfile == fh);
    CHECK(classof(rc) == MPI_ERR_READ_ONLY || classof(rc) == MPI_ERR_ACCESS);
    CHECK_RC(MPI_File_call_errhandler(fh, MPI_ERR_IO));
    CHECK(calls == 2 && lastcode == MPI_ERR_IO);
    /* A nonblocking call's error goes to the file's handler at Wait. */
    MPI_Request rq;
    rc = MPI_File_iwrite_at(fh, 0, v, 1, MPI_INT, &rq);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Wait(&rq, &st);
        CHECK(rc != MPI_SUCCESS);
    }
    CHECK(calls == 3);
    /* A communicator handler cannot go on a file. */
    MPI_Errhandler ceh;
    MPI_Comm_create_errhandler((MPI_Comm_errhandler_function *)handler, &ceh);
    rc = MPI_File_set_errhandler(fh, ceh);
    CHECK(rc != MPI_SUCCESS);
    MPI_Errhandler_free(&ceh);
    CHECK_RC(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
    CHECK_RC(MPI_File_close(&fh));

    /* MPI_FILE_NULL's handler: used by MPI_File_open, and taken by the
     * files opened after it is set. */
    CHECK_RC(MPI_File_set_errhandler(MPI_FILE_NULL, mine));
    CHECK_RC(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == mine);
    calls = 0;
    char m[600];
    path(m, "missing");
    rc = MPI_File_open(MPI_COMM_WORLD, m, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(classof(rc) == MPI_ERR_NO_SUCH_FILE && calls == 1 && lastfile == MPI_FILE_NULL);
    rc = MPI_File_delete(m, MPI_INFO_NULL);
    CHECK(classof(rc) == MPI_ERR_NO_SUCH_FILE && calls == 2);
    CHECK_RC(MPI_File_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    CHECK_RC(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == mine);
    CHECK_RC(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    CHECK_RC(MPI_File_close(&fh));
    MPI_Errhandler_free(&mine);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK_RC(MPI_File_delete(p, MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_File_delete(p, MPI_INFO_NULL);
    CHECK(classof(rc) == MPI_ERR_NO_SUCH_FILE);
    DONE();
}
