#include "check.h"
int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int token = 0;
    if (size > 1) {
        if (rank == 0) {
            token = 1;
            MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token++;
            MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
        }
    }
    double sum = rank, out;
    MPI_Allreduce(&sum, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(out == size * (size - 1) / 2.0);
    if (size > 1 && rank > 0)
        CHECK(token == rank + 1);
    if (size > 1 && rank == 0)
        CHECK(token == size);
    printf("hello from %d of %d\n", rank, size);
    DONE();
}
