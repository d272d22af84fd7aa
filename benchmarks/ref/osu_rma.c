/* The loops of benchmarks/osu_{put,get}_latency, osu_{put,get}_bw,
 * osu_acc_latency, osu_fop_latency and osu_cas_latency for the system
 * MPI, to compare in the same session:
 *
 *   mpicc -O2 -o osu_rma benchmarks/ref/osu_rma.c
 *   mpirun -n 2 ./osu_rma put|get|putbw|getbw|acc|fop|cas lock|flush|fence|pscw SIZE ITERS [WINDOW]
 *
 * It prints "SIZE latency-in-microseconds", or for putbw and getbw
 * (WINDOW operations of SIZE bytes to consecutive displacements per
 * synchronization, 64 by default, as osu_put_bw's -W) "SIZE MB/s"; rank
 * 0 is the origin, rank 1 the target of a window from MPI_Win_allocate. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int me;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if (argc != 5 && argc != 6) {
		if (me == 0) fprintf(stderr, "usage: osu_rma put|get|putbw|getbw|acc|fop|cas lock|flush|fence|pscw SIZE ITERS [WINDOW]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	const char *op = argv[1], *mode = argv[2];
	int size = atoi(argv[3]), iters = atoi(argv[4]), skip = iters / 10;
	int bw = strcmp(op, "putbw") == 0 || strcmp(op, "getbw") == 0;
	int per = bw ? (argc == 6 ? atoi(argv[5]) : 64) : 1;
	long total = (long)size * per + 8;
	char *buf = malloc(total), *res = malloc(total);
	memset(buf, 1, total);
	void *base;
	MPI_Win win;
	MPI_Win_allocate(total, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	MPI_Group world, peer;
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	int other = 1 - me;
	MPI_Group_incl(world, 1, &other, &peer);
	long long one = 1, zero = 0, old;
	double t0 = 0;
	int lockall = strcmp(mode, "flush") == 0;
	MPI_Win_fence(0, win);
	if (lockall && me == 0) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
	for (int i = 0; i < iters + skip; i++) {
		if (i == skip) t0 = MPI_Wtime();
		int origin = me == 0;
		if (strcmp(mode, "lock") == 0 && origin) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
		if (strcmp(mode, "pscw") == 0) {
			if (origin) MPI_Win_start(peer, 0, win); else MPI_Win_post(peer, 0, win);
		}
		if (origin) {
			if (strcmp(op, "putbw") == 0)
				for (int j = 0; j < per; j++) MPI_Put(buf + (long)j * size, size, MPI_CHAR, 1, (MPI_Aint)j * size, size, MPI_CHAR, win);
			else if (strcmp(op, "getbw") == 0)
				for (int j = 0; j < per; j++) MPI_Get(buf + (long)j * size, size, MPI_CHAR, 1, (MPI_Aint)j * size, size, MPI_CHAR, win);
			else if (strcmp(op, "put") == 0) MPI_Put(buf, size, MPI_CHAR, 1, 0, size, MPI_CHAR, win);
			else if (strcmp(op, "get") == 0) MPI_Get(buf, size, MPI_CHAR, 1, 0, size, MPI_CHAR, win);
			else if (strcmp(op, "acc") == 0) MPI_Accumulate(buf, size / 4, MPI_INT, 1, 0, size / 4, MPI_INT, MPI_SUM, win);
			else if (strcmp(op, "fop") == 0) MPI_Fetch_and_op(&one, &old, MPI_LONG_LONG, 1, 0, MPI_SUM, win);
			else MPI_Compare_and_swap(&one, &zero, &old, MPI_INT64_T, 1, 0, win);
		}
		if (strcmp(mode, "lock") == 0 && origin) MPI_Win_unlock(1, win);
		if (lockall && origin) MPI_Win_flush(1, win);
		if (strcmp(mode, "fence") == 0) MPI_Win_fence(0, win);
		if (strcmp(mode, "pscw") == 0) {
			if (origin) MPI_Win_complete(win); else MPI_Win_wait(win);
		}
	}
	double t = MPI_Wtime() - t0;
	if (lockall && me == 0) MPI_Win_unlock(1, win);
	MPI_Win_fence(0, win);
	if (me == 0 && bw) printf("%d %.2f\n", size, (double)size * per * iters / 1e6 / t);
	else if (me == 0) printf("%d %.3f\n", size, t * 1e6 / iters);
	MPI_Group_free(&peer);
	MPI_Group_free(&world);
	MPI_Win_free(&win);
	free(buf);
	free(res);
	MPI_Finalize();
	return 0;
}
