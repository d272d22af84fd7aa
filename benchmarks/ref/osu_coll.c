/* The loops of shmpi's collective benchmarks (benchmarks/osu_barrier,
 * osu_bcast, osu_reduce, osu_allreduce, osu_allgather, osu_alltoall,
 * osu_gather, osu_scatter and comm_create) against the system MPI, with
 * the same sizes, iterations, warm-up and output. As OSU 7.x does, each
 * call is timed on its own and followed by an untimed MPI_Barrier, and
 * the latency printed is the average over the ranks of each rank's mean
 * time per call. After the timed calls of each size one more call checks
 * the data, as ours do.
 *
 * Usage: osu_coll MODE [-m min:max] [-i iters] [-x warmup] [-il iters]
 *                      [-xl warmup] [-f] [-M bytes]
 * MODE: barrier bcast reduce allreduce allgather alltoall gather scatter
 * comm_create. Defaults as OSU's collectives: sizes 1 B to 1 MiB, 1000
 * iterations after 100 warm-up up to 8 KiB, 100 after 10 above (-il,
 * -xl); comm_create: 200 after 20. reduce and allreduce use MPI_FLOAT and
 * MPI_SUM (n bytes are n/4 floats; sizes below 4 bytes are skipped); the
 * others MPI_CHAR. comm_create prints dup_us, split_us and free_us:
 * MPI_Comm_dup of MPI_COMM_WORLD, MPI_Comm_split(rank%2, rank) and
 * MPI_Comm_free of each (both kinds together). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, np, full;
static long min_size = 1, max_size = 1L << 20, mem_limit = 512L << 20;
static int iters = 1000, skip = 100, iters_large = 100, skip_large = 10;

static void die(const char *what) {
	fprintf(stderr, "rank %d: %s\n", rank, what);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void fill(char *b, long n, unsigned char seed) {
	for (long i = 0; i < n; i++) b[i] = (char)(unsigned char)(seed + (unsigned char)i);
}

static void poison(char *b, long n, unsigned char seed) {
	if (n > 0) {
		b[0] = (char)~seed;
		b[n - 1] = (char)~(unsigned char)(seed + (unsigned char)(n - 1));
	}
}

static void check(const char *b, long n, unsigned char seed, const char *what) {
	if (n > 0 && ((unsigned char)b[0] != seed || (unsigned char)b[n - 1] != (unsigned char)(seed + (unsigned char)(n - 1)))) {
		fprintf(stderr, "rank %d: %s: %ld-byte block arrived wrong\n", rank, what, n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

/* mpi_name: the library's name and version ("Open MPI v4.1.4"). */
static char mpi_name[64];

static void set_mpi_name(void) {
	char v[MPI_MAX_LIBRARY_VERSION_STRING];
	int len;
	MPI_Get_library_version(v, &len);
	size_t m = strcspn(v, ",\n");
	if (m >= sizeof mpi_name) m = sizeof mpi_name - 1;
	memcpy(mpi_name, v, m);
	mpi_name[m] = 0;
	for (char *p = mpi_name; *p; p++)
		if (*p == '\t') *p = ' ';
}

static void header(const char *title, const char *datatype) {
	if (rank) return;
	printf("# OSU MPI %s Test (reference loop, %s)\n", title, mpi_name);
	if (datatype) {
		printf("# Datatype: %s.\n", datatype);
		printf("%-10s%18s", "# Size", "Avg Latency(us)");
	} else {
		printf("# Avg Latency(us)");
	}
	if (full) printf("%18s%18s%12s", "Min Latency(us)", "Max Latency(us)", "Iterations");
	printf("\n");
	fflush(stdout);
}

/* row gathers every rank's mean time per call at rank 0, which prints
 * the average (and with -f the minimum, maximum and iterations); no size
 * column if size < 0. */
static void row(long size, double timer, int n) {
	double lat = n > 0 ? timer * 1e6 / n : 0, *all = NULL;
	if (rank == 0) all = malloc(sizeof(double) * np);
	MPI_Gather(&lat, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (rank) return;
	double sum = 0, lo = all[0], hi = all[0];
	for (int r = 0; r < np; r++) {
		sum += all[r];
		if (all[r] < lo) lo = all[r];
		if (all[r] > hi) hi = all[r];
	}
	if (size >= 0)
		printf("%-10ld%18.2f", size, sum / np);
	else
		printf("%17.2f", sum / np);
	if (full) printf("%18.2f%18.2f%12d", lo, hi, n);
	printf("\n");
	fflush(stdout);
	free(all);
}

static void limit_mem(long blocks) {
	if (max_size * blocks > mem_limit) {
		max_size = mem_limit / blocks;
		if (rank == 0) fprintf(stderr, "Warning! Limiting max message size to: %ld. Increase -M for higher message sizes.\n", max_size);
	}
}

static void counts(long n, int *it, int *sk) {
	*it = n > 8192 ? iters_large : iters;
	*sk = n > 8192 ? skip_large : skip;
}

static unsigned char a2a_seed(int from, int to) { return (unsigned char)(7 * from + 13 * to + 1); }

/* The timed loop: the call, then an untimed barrier. */
#define TIMED(it, sk, timer, call)                              \
	do {                                                        \
		MPI_Barrier(MPI_COMM_WORLD);                            \
		timer = 0;                                              \
		for (int i_ = 0; i_ < (it) + (sk); i_++) {              \
			double t0_ = MPI_Wtime();                           \
			call;                                               \
			double t1_ = MPI_Wtime();                           \
			MPI_Barrier(MPI_COMM_WORLD);                        \
			if (i_ >= (sk)) timer += t1_ - t0_;                 \
		}                                                       \
	} while (0)

static void run_barrier(void) {
	double timer = 0;
	header("Barrier Latency", NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < iters + skip; i++) {
		double t0 = MPI_Wtime();
		MPI_Barrier(MPI_COMM_WORLD);
		double t1 = MPI_Wtime();
		if (i >= skip) timer += t1 - t0;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	row(-1, timer, iters);
}

static void check_sum(const float *r, long k, const char *what) {
	for (long i = 0; i < k; i++) {
		float want = (float)(np * (np - 1) / 2 + np * (int)(i % 7));
		if (r[i] != want) {
			fprintf(stderr, "rank %d: %s of %ld floats: element %ld is %g, want %g\n", rank, what, k, i, r[i], want);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

static void run_reduce(int all) {
	long kmax = max_size / 4;
	float *send = calloc(kmax > 0 ? kmax : 1, sizeof(float)), *recv = calloc(kmax > 0 ? kmax : 1, sizeof(float));
	if (!send || !recv) die("out of memory");
	for (long i = 0; i < kmax; i++) send[i] = (float)(rank + (int)(i % 7));
	header(all ? "Allreduce Latency" : "Reduce Latency", "MPI_FLOAT");
	for (long n = 1; n <= max_size; n *= 2) {
		int k = (int)(n / 4), it, sk;
		double timer;
		if (k == 0 || n < min_size) continue;
		counts(n, &it, &sk);
		if (all)
			TIMED(it, sk, timer, MPI_Allreduce(send, recv, k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
		else
			TIMED(it, sk, timer, MPI_Reduce(send, recv, k, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD));
		memset(recv, 0, sizeof(float) * k);
		if (all) {
			MPI_Allreduce(send, recv, k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			check_sum(recv, k, "allreduce");
		} else {
			MPI_Reduce(send, recv, k, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
			if (rank == 0) check_sum(recv, k, "reduce");
		}
		row(n, timer, it);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	free(send);
	free(recv);
}

enum { BCAST, ALLGATHER, ALLTOALL, GATHER, SCATTER };

static void run_bytes(int mode) {
	static const char *titles[] = {"Broadcast Latency", "Allgather Latency", "All-to-All Personalized Exchange Latency",
	                               "Gather Latency", "Scatter Latency"};
	long sbytes, rbytes;
	if (mode != BCAST) limit_mem(np);
	switch (mode) {
	case BCAST: sbytes = max_size, rbytes = 0; break;
	case ALLGATHER: sbytes = max_size, rbytes = max_size * np; break;
	case ALLTOALL: sbytes = max_size * np, rbytes = max_size * np; break;
	case GATHER: sbytes = max_size, rbytes = rank == 0 ? max_size * np : 0; break;
	default: sbytes = rank == 0 ? max_size * np : 0, rbytes = max_size; break;
	}
	char *s = calloc(sbytes > 0 ? sbytes : 1, 1), *r = calloc(rbytes > 0 ? rbytes : 1, 1);
	if (!s || !r) die("out of memory");
	header(titles[mode], "MPI_CHAR");
	for (long n = 1; n <= max_size; n *= 2) {
		int it, sk;
		double timer = 0;
		if (n < min_size) continue;
		counts(n, &it, &sk);
		switch (mode) {
		case BCAST:
			if (rank == 0) fill(s, n, 1);
			TIMED(it, sk, timer, MPI_Bcast(s, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD));
			if (rank != 0) poison(s, n, 1);
			MPI_Bcast(s, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
			check(s, n, 1, "bcast");
			break;
		case ALLGATHER:
			fill(s, n, (unsigned char)rank);
			TIMED(it, sk, timer, MPI_Allgather(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, MPI_COMM_WORLD));
			for (int q = 0; q < np; q++) poison(r + q * n, n, (unsigned char)q);
			MPI_Allgather(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, MPI_COMM_WORLD);
			for (int q = 0; q < np; q++) check(r + q * n, n, (unsigned char)q, "allgather");
			break;
		case ALLTOALL:
			for (int q = 0; q < np; q++) fill(s + q * n, n, a2a_seed(rank, q));
			TIMED(it, sk, timer, MPI_Alltoall(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, MPI_COMM_WORLD));
			for (int q = 0; q < np; q++) poison(r + q * n, n, a2a_seed(q, rank));
			MPI_Alltoall(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, MPI_COMM_WORLD);
			for (int q = 0; q < np; q++) check(r + q * n, n, a2a_seed(q, rank), "alltoall");
			break;
		case GATHER:
			fill(s, n, (unsigned char)rank);
			TIMED(it, sk, timer, MPI_Gather(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD));
			if (rank == 0)
				for (int q = 0; q < np; q++) poison(r + q * n, n, (unsigned char)q);
			MPI_Gather(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
			if (rank == 0)
				for (int q = 0; q < np; q++) check(r + q * n, n, (unsigned char)q, "gather");
			break;
		case SCATTER:
			if (rank == 0)
				for (int q = 0; q < np; q++) fill(s + q * n, n, (unsigned char)q);
			TIMED(it, sk, timer, MPI_Scatter(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD));
			poison(r, n, (unsigned char)rank);
			MPI_Scatter(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
			check(r, n, (unsigned char)rank, "scatter");
			break;
		}
		row(n, timer, it);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	free(s);
	free(r);
}

static void run_comm_create(void) {
	double tdup = 0, tsplit = 0, tfree = 0, t0, t1;
	int half = (np - rank % 2 + 1) / 2, sz, rk;
	for (int i = 0; i < iters + skip; i++) {
		MPI_Comm nc;
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		MPI_Comm_dup(MPI_COMM_WORLD, &nc);
		t1 = MPI_Wtime();
		if (i >= skip) tdup += t1 - t0;
		MPI_Comm_size(nc, &sz);
		MPI_Comm_rank(nc, &rk);
		if (sz != np || rk != rank) die("MPI_Comm_dup: wrong size or rank");
		t0 = MPI_Wtime();
		MPI_Comm_free(&nc);
		t1 = MPI_Wtime();
		if (i >= skip) tfree += t1 - t0;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &nc);
		t1 = MPI_Wtime();
		if (i >= skip) tsplit += t1 - t0;
		MPI_Comm_size(nc, &sz);
		MPI_Comm_rank(nc, &rk);
		if (sz != half || rk != rank / 2) die("MPI_Comm_split: wrong size or rank");
		t0 = MPI_Wtime();
		MPI_Comm_free(&nc);
		t1 = MPI_Wtime();
		if (i >= skip) tfree += t1 - t0;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	int n = iters > 0 ? iters : 1;
	double mine[3] = {tdup * 1e6 / n, tsplit * 1e6 / n, tfree * 1e6 / (2 * n)}, *all = NULL;
	if (rank == 0) all = malloc(sizeof(double) * 3 * np);
	MPI_Gather(mine, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (rank) return;
	static const char *names[] = {"dup_us", "split_us", "free_us"};
	printf("# %s communicator creation: Dup, Split(rank%%2, rank), Free; %d ranks, %d iterations\n", mpi_name, np, iters);
	printf("# us per call, average over the ranks of each rank's mean\n");
	for (int k = 0; k < 3; k++) {
		double sum = 0;
		for (int r = 0; r < np; r++) sum += all[3 * r + k];
		printf("%-10s%18.2f\n", names[k], sum / np);
	}
	free(all);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	set_mpi_name();
	const char *mode = argc > 1 ? argv[1] : "";
	int cc = strcmp(mode, "comm_create") == 0;
	if (cc) iters = 200, skip = 20;
	for (int a = 2; a < argc; a++) {
		const char *f = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
		if (strcmp(f, "-f") == 0) {
			full = 1;
			continue;
		}
		if (!v) goto usage;
		a++;
		if (strcmp(f, "-m") == 0) {
			if (sscanf(v, "%ld:%ld", &min_size, &max_size) != 2 || min_size < 0 || max_size < min_size) goto usage;
		} else if (strcmp(f, "-i") == 0) {
			iters = atoi(v);
		} else if (strcmp(f, "-x") == 0) {
			skip = atoi(v);
		} else if (strcmp(f, "-il") == 0) {
			iters_large = atoi(v);
		} else if (strcmp(f, "-xl") == 0) {
			skip_large = atoi(v);
		} else if (strcmp(f, "-M") == 0) {
			mem_limit = atol(v);
		} else {
			goto usage;
		}
	}
	if (strcmp(mode, "barrier") == 0) run_barrier();
	else if (strcmp(mode, "bcast") == 0) run_bytes(BCAST);
	else if (strcmp(mode, "reduce") == 0) run_reduce(0);
	else if (strcmp(mode, "allreduce") == 0) run_reduce(1);
	else if (strcmp(mode, "allgather") == 0) run_bytes(ALLGATHER);
	else if (strcmp(mode, "alltoall") == 0) run_bytes(ALLTOALL);
	else if (strcmp(mode, "gather") == 0) run_bytes(GATHER);
	else if (strcmp(mode, "scatter") == 0) run_bytes(SCATTER);
	else if (cc) run_comm_create();
	else goto usage;
	MPI_Finalize();
	return 0;
usage:
	if (rank == 0)
		fprintf(stderr, "usage: osu_coll barrier|bcast|reduce|allreduce|allgather|alltoall|gather|scatter|comm_create "
		                "[-m min:max] [-i iters] [-x warmup] [-il iters] [-xl warmup] [-f] [-M bytes]\n");
	MPI_Finalize();
	return 1;
}
