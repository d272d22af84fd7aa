/* MPI_Abort ends every rank, with the code. */
#include "check.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 2)
        MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("after the barrier\n");
    MPI_Finalize();
    return 0;
}
