/* ULFM in C: the spec's Example 15.5. Ranks iterate an allreduce; one
 * rank dies (raise(SIGKILL) with argument "raise", or shmrun --kill);
 * the survivors revoke, agree and shrink, and finish on the shrunk
 * communicator. Also the local calls: failure_ack, get_acked,
 * get_failed, ack_failed, is_revoked, and iagree. */
#include "check.h"
#include <mpi-ext.h>
#include <signal.h>
#include <unistd.h>

#if !defined(OMPI_HAVE_MPI_EXT_FTMPI) || !defined(MPIX_ERR_PROC_FAILED)
#error "ULFM feature macros missing"
#endif

int main(int argc, char **argv)
{
    int rank, size, raised = argc > 1 && strcmp(argv[1], "raise") == 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *ft, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPIX_FT, &ft, &flag);
    CHECK(flag && *ft == 1);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int victim = size - 2, recovered = 0;
    double gnorm = 1e9;
    for (int it = 0; it < 200; it++) {
        if (raised && rank == victim && it == 20) {
            /* stdout is a pipe: the line must not wait in a buffer. */
            printf("rank %d dies\n", rank);
            raise(SIGKILL);
        }
        double lnorm = 1.0 / (it + 1), g;
        int rc = MPI_Allreduce(&lnorm, &g, 1, MPI_DOUBLE, MPI_MAX, comm);
        int cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            MPI_Error_class(rc, &cls);
        if (cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_REVOKED) {
            if (cls == MPIX_ERR_PROC_FAILED)
                MPIX_Comm_revoke(comm);
            int rev;
            MPIX_Comm_is_revoked(comm, &rev);
            CHECK(rev);
            int ok = 1;
            rc = MPIX_Comm_agree(comm, &ok);
            MPI_Error_class(rc, &cls);
            CHECK(rc == MPI_SUCCESS || cls == MPIX_ERR_PROC_FAILED);
            MPI_Group failed;
            CHECK_RC(MPIX_Comm_get_failed(comm, &failed));
            int nf;
            MPI_Group_size(failed, &nf);
            CHECK(nf == 1);
            MPI_Group_free(&failed);
            MPIX_Comm_failure_ack(comm);
            MPI_Group acked;
            MPIX_Comm_failure_get_acked(comm, &acked);
            MPI_Group_size(acked, &nf);
            CHECK(nf == 1);
            MPI_Group_free(&acked);
            int nacked;
            CHECK_RC(MPIX_Comm_ack_failed(comm, 10, &nacked));
            CHECK(nacked == 1);
            MPI_Comm next;
            CHECK_RC(MPIX_Comm_shrink(comm, &next));
            MPI_Comm_free(&comm);
            comm = next;
            MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
            int ns;
            MPI_Comm_size(comm, &ns);
            CHECK(ns == size - 1);
            recovered = 1;
            continue;
        }
        CHECK(rc == MPI_SUCCESS);
        gnorm = g;
    }
    CHECK(gnorm == 1.0 / 200);
    int nfailed;
    MPI_Group failed;
    MPIX_Comm_get_failed(MPI_COMM_WORLD, &failed);
    MPI_Group_size(failed, &nfailed);
    MPI_Group_free(&failed);
    CHECK(recovered == (nfailed > 0));
    /* Nonblocking agreement on the survivors. */
    int v = rank == 0 ? 1 : 3;
    MPI_Request rq;
    CHECK_RC(MPIX_Comm_iagree(comm, &v, &rq));
    CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK(v == 1);
    MPI_Comm_free(&comm);
    DONE();
}
