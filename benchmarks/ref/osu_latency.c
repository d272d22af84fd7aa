/* Blocking ping-pong latency between ranks 0 and 1, the loop of OSU's
 * osu_latency (and of shmpi's benchmarks/osu_latency): 10000 iterations
 * after 1000 warm-up up to 8 KiB, 1000 after 10 above. Prints the OSU
 * table. Usage: osu_latency [max_size [iterations]] (iterations for
 * messages up to 8 KiB; warm-up is a tenth of them). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	int rank, size;
	long max = argc > 1 ? atol(argv[1]) : 4L << 20;
	int small_iters = argc > 2 ? atoi(argv[2]) : 10000;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	char *buf = malloc(max > 0 ? max : 1);
	memset(buf, 1, max > 0 ? max : 1);
	if (rank == 0) {
		printf("# OSU MPI Latency Test (reference loop, system MPI)\n# Size       Avg Latency(us)\n");
	}
	for (long n = 0; n <= max; n = n ? n * 2 : 1) {
		int iters = n > 8192 ? 1000 : small_iters, skip = n > 8192 ? 10 : small_iters / 10;
		double t0 = 0;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < iters + skip; i++) {
			if (i == skip) t0 = MPI_Wtime();
			if (rank == 0) {
				MPI_Send(buf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
				MPI_Recv(buf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else if (rank == 1) {
				MPI_Recv(buf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(buf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
			}
		}
		if (rank == 0) printf("%-10ld%18.2f\n", n, (MPI_Wtime() - t0) * 1e6 / (2.0 * iters));
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
