/* The loop of benchmarks/osu_mbw_mr for the system MPI (OSU's
 * osu_mbw_mr: pairs r and r+N/2, a window of 64 nonblocking sends, a
 * 4-byte acknowledgement per window; 100 iterations + 10 warm-up up to
 * 8 KiB, 20 + 2 above, or ITERS and a tenth of it). Usage: osu_mbw_mr
 * [min_size [max_size [ITERS]]]. Prints size, MB/s and messages/s. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int me, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	long lo = argc > 1 ? atol(argv[1]) : 1, hi = argc > 2 ? atol(argv[2]) : 4L << 20;
	int iters_arg = argc > 3 ? atoi(argv[3]) : 0;
	int pairs = size / 2, sender = me < pairs, peer = sender ? me + pairs : me - pairs, active = me < 2 * pairs;
	char *buf = malloc(hi), ack[4];
	memset(buf, 3, hi);
	MPI_Request reqs[WINDOW];
	if (me == 0) printf("# size MB/s messages/s (pairs %d, window %d)\n", pairs, WINDOW);
	for (long n = lo; n <= hi; n *= 2) {
		int iters = n > 8192 ? 20 : 100, skip = n > 8192 ? 2 : 10;
		if (iters_arg > 0) iters = iters_arg, skip = iters_arg / 10;
		double t0 = 0, el = 0, slowest;
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; active && i < iters + skip; i++) {
			if (i == skip) t0 = MPI_Wtime();
			if (sender) {
				for (int k = 0; k < WINDOW; k++) MPI_Isend(buf, n, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &reqs[k]);
				MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
				MPI_Recv(ack, 4, MPI_CHAR, peer, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				for (int k = 0; k < WINDOW; k++) MPI_Irecv(buf, n, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &reqs[k]);
				MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE);
				MPI_Send(ack, 4, MPI_CHAR, peer, 101, MPI_COMM_WORLD);
			}
		}
		if (active && sender) el = MPI_Wtime() - t0;
		MPI_Allreduce(&el, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		if (me == 0) {
			double msgs = (double)pairs * iters * WINDOW;
			printf("%ld %.2f %.2f\n", n, msgs * n / slowest / 1e6, msgs / slowest);
		}
	}
	free(buf);
	MPI_Finalize();
	return 0;
}
