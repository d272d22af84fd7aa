/* Recovery after a SIGKILL, the loop of shmpi's benchmarks/ulfm_recovery
 * for an MPI with ULFM (Open MPI 5 built --with-ft=ulfm): every rank
 * loops on an 8-byte allreduce; rank VICTIM prints CLOCK_MONOTONIC and
 * kills itself with SIGKILL after DELAY_MS; each survivor, once its
 * allreduce fails, revokes, agrees, shrinks and runs one allreduce on
 * the shrunk communicator. Rank 0 of the survivors prints the latest
 * survivor's CLOCK_MONOTONIC at that point and at its error, so that the
 * caller subtracts the victim's stamp: the time from the death to the
 * first error, and to the end of the recovery (one clock for every
 * process of the machine).
 *
 *   mpicc -O2 -o ulfm_recovery benchmarks/ref/ulfm_recovery.c
 *   mpirun --with-ft ulfm -n 4 ./ulfm_recovery [VICTIM [DELAY_MS]]
 *
 * Output: "killed=<ns>" from the victim, "error=<ns> done=<ns> survivors=<n>"
 * from rank 0 of the survivors. */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long mono(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int victim = argc > 1 ? atoi(argv[1]) : size - 1;
	long long delay = (argc > 2 ? atoll(argv[2]) : 300) * 1000000LL;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	long long start = mono();
	double one = 1, sum;
	long long tErr;
	for (;;) {
		if (rank == victim && mono() - start > delay) {
			printf("killed=%lld\n", mono());
			fflush(stdout);
			raise(SIGKILL);
		}
		if (MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
			tErr = mono();
			break;
		}
	}
	MPIX_Comm_revoke(MPI_COMM_WORLD);
	int flag = 1;
	MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
	MPI_Comm shrunk;
	if (MPIX_Comm_shrink(MPI_COMM_WORLD, &shrunk) != MPI_SUCCESS) {
		fprintf(stderr, "rank %d: shrink failed\n", rank);
		return 1;
	}
	MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
	if (MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, shrunk) != MPI_SUCCESS) {
		fprintf(stderr, "rank %d: allreduce on the shrunk communicator failed\n", rank);
		return 1;
	}
	long long t[2] = {tErr, mono()}, latest[2];
	MPI_Reduce(t, latest, 2, MPI_LONG_LONG, MPI_MAX, 0, shrunk);
	int srank, ssize;
	MPI_Comm_rank(shrunk, &srank);
	MPI_Comm_size(shrunk, &ssize);
	if (srank == 0) {
		printf("error=%lld done=%lld survivors=%d\n", latest[0], latest[1], ssize);
		fflush(stdout);
	}
	MPI_Comm_free(&shrunk);
	MPI_Finalize();
	return 0;
}
