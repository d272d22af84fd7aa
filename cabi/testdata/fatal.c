/* MPI_ERRORS_ARE_FATAL (the default): an invalid rank ends the job. */
#include "check.h"

int main(int argc, char **argv)
{
    int size, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    printf("after the fatal error\n");
    MPI_Finalize();
    return 0;
}
