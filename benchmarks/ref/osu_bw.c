/* Unidirectional bandwidth from rank 0 to 1, the loop of OSU's osu_bw
 * (and of shmpi's benchmarks/osu_bw): a window of 64 nonblocking sends
 * and receives, then a 4-byte acknowledgement; 100 iterations after 10
 * warm-up up to 8 KiB, 20 after 2 above. MB/s = 10^6 bytes per second.
 * Usage: osu_bw [min_size [max_size]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

int main(int argc, char **argv) {
	int rank;
	long min = argc > 1 ? atol(argv[1]) : 1, max = argc > 2 ? atol(argv[2]) : 4L << 20;
	if (min < 1 || max < min) {
		fprintf(stderr, "usage: osu_bw [min_size [max_size]], 1 <= min_size <= max_size\n");
		return 2;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	char *buf = malloc(max);
	memset(buf, 1, max);
	char ack[4];
	MPI_Request reqs[WINDOW];
	if (rank == 0) printf("# OSU MPI Bandwidth Test (reference loop, system MPI)\n# Size      Bandwidth (MB/s)\n");
	for (long n = min; n <= max; n *= 2) {
		int iters = n > 8192 ? 20 : 100, skip = n > 8192 ? 2 : 10;
		double t0 = 0;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < iters + skip; i++) {
			if (i == skip) t0 = MPI_Wtime();
			if (rank == 0) {
				for (int w = 0; w < WINDOW; w++) MPI_Isend(buf, n, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &reqs[w]);
				MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
				MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else if (rank == 1) {
				for (int w = 0; w < WINDOW; w++) MPI_Irecv(buf, n, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &reqs[w]);
				MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
				MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
			}
		}
		if (rank == 0) printf("%-10ld%18.2f\n", n, n / 1e6 * iters * WINDOW / (MPI_Wtime() - t0));
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
