/* ULFM and files (the chapter's 15.2.5 and 15.3.3): a rank SIGKILLs
 * itself before a collective write; the survivors get
 * MPIX_ERR_PROC_FAILED from it, agree, revoke the file (MPIX_File_revoke:
 * later calls, nonblocking ones included, give MPIX_ERR_REVOKED), close
 * it (the handle becomes MPI_FILE_NULL whatever Close returns), shrink,
 * open the file again over the survivors and rewrite it, checked byte for
 * byte. Run with shmrun --ft; argv[1] is a directory, argv[2] the rank
 * that dies (default size-2). */
#include "check.h"
#include <mpi-ext.h>
#include <signal.h>

static int calls, lastcode;

static void handler(MPI_File *fh, int *code, ...)
{
    (void)fh;
    calls++;
    lastcode = *code;
}

static int classof(int rc)
{
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1 && size >= 3);
    char p[600];
    snprintf(p, sizeof p, "%s/ulfm", argv[1]);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_File fh;
    MPI_Status st;
    CHECK_RC(MPI_File_open(comm, p, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh));
    int v[8];
    for (int i = 0; i < 8; i++)
        v[i] = rank * 8 + i;
    CHECK_RC(MPI_File_write_at_all(fh, rank * 32, v, 8, MPI_INT, &st));

    int victim = argc > 2 ? atoi(argv[2]) : size - 2; /* 0: the aggregator of writes */
    if (rank == victim) {
        printf("rank %d dies\n", rank);
        raise(SIGKILL);
    }
    int rc = MPI_File_write_at_all(fh, rank * 32, v, 8, MPI_INT, &st);
    CHECK(classof(rc) == MPIX_ERR_PROC_FAILED);
    /* Every survivor has seen its error before any revokes. */
    int flag = 1;
    MPIX_Comm_agree(comm, &flag);
    CHECK_RC(MPIX_File_revoke(fh));
    rc = MPI_File_write_at_all(fh, rank * 32, v, 8, MPI_INT, &st);
    CHECK(classof(rc) == MPIX_ERR_REVOKED);
    rc = MPI_File_write_at(fh, rank * 32, v, 8, MPI_INT, &st);
    CHECK(classof(rc) == MPIX_ERR_REVOKED);
    /* A nonblocking call completes with the error, through the file's
     * handler (MPI_ERRORS_RETURN; the world's is fatal). */
    MPI_Request rq;
    rc = MPI_File_iwrite_at(fh, rank * 32, v, 8, MPI_INT, &rq);
    if (rc == MPI_SUCCESS)
        rc = MPI_Wait(&rq, &st);
    CHECK(classof(rc) == MPIX_ERR_REVOKED);
    /* Local calls still work. */
    MPI_Offset sz;
    CHECK_RC(MPI_File_get_size(fh, &sz));
    CHECK_RC(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    MPI_Group g, failed;
    CHECK_RC(MPI_File_get_group(fh, &g));
    MPI_Group_free(&g);
    /* Close's error goes to the file's handler. */
    MPI_Errhandler eh;
    CHECK_RC(MPI_File_create_errhandler(handler, &eh));
    CHECK_RC(MPI_File_set_errhandler(fh, eh));
    rc = MPI_File_close(&fh);
    CHECK(rc == MPI_SUCCESS || classof(rc) == MPIX_ERR_PROC_FAILED || classof(rc) == MPIX_ERR_REVOKED);
    CHECK(fh == MPI_FILE_NULL);
    CHECK(rc == MPI_SUCCESS ? calls == 0 : calls == 1 && lastcode == rc);
    MPI_Errhandler_free(&eh);
    CHECK_RC(MPIX_Comm_get_failed(comm, &failed));
    int nf;
    MPI_Group_size(failed, &nf);
    CHECK(nf == 1);
    MPI_Group_free(&failed);

    /* Go on over the survivors. */
    MPIX_Comm_revoke(comm);
    MPI_Comm next;
    CHECK_RC(MPIX_Comm_shrink(comm, &next));
    MPI_Comm_free(&comm);
    comm = next;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int nr, ns;
    MPI_Comm_rank(comm, &nr);
    MPI_Comm_size(comm, &ns);
    CHECK(ns == size - 1);
    CHECK_RC(MPI_File_open(comm, p, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    CHECK_RC(MPI_File_set_size(fh, 0));
    for (int i = 0; i < 8; i++)
        v[i] = 1000 + nr * 8 + i;
    CHECK_RC(MPI_File_write_at_all(fh, nr * 32, v, 8, MPI_INT, &st));
    CHECK_RC(MPI_File_get_size(fh, &sz));
    CHECK(sz == (MPI_Offset)ns * 32);
    if (nr == 0) {
        int *all = malloc(ns * 32);
        CHECK_RC(MPI_File_read_at(fh, 0, all, ns * 8, MPI_INT, &st));
        for (int i = 0; i < ns * 8; i++)
            CHECK(all[i] == 1000 + i);
        free(all);
    }
    CHECK_RC(MPI_File_close(&fh));
    MPI_Barrier(comm);
    if (nr == 0)
        CHECK_RC(MPI_File_delete(p, MPI_INFO_NULL));
    MPI_Comm_free(&comm);
    DONE();
}
