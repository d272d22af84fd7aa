/* The loops of shmpi's nonblocking collective benchmarks (benchmarks/osu_i*)
 * and persistent ones (benchmarks/osu_*_persistent) against the system
 * MPI, with the same sizes, iterations, warm-up, data, checks and output
 * (benchmarks/internal/osu: nbc.go, persistent.go, colls.go).
 *
 * Nonblocking, OSU 7.x's method at each size: (1) the I-call and its
 * MPI_Wait timed together, each pair followed by an untimed MPI_Barrier
 * (none for ibarrier): a rank's mean is its pure communication time;
 * (2) the I-call (Coll. Init), a dummy compute of about the rank's pure
 * communication time (Compute), MPI_Wait (MPI_Wait), each round followed
 * by an untimed MPI_Barrier: the round is Overall. -t N cuts the compute
 * into N pieces, each followed by a timed MPI_Test (OSU's default: none);
 * once a Test has completed the request, later Tests and the Wait are
 * skipped, as ours do (on MPI_REQUEST_NULL they would return at once).
 * Every column is the average over the ranks of each rank's mean;
 * Overlap(%) = max(0, 100 - 100*(Overall - Compute)/Pure Comm.).
 *
 * Persistent, as OSU 7.x: the request made once per size, MPI_Start and
 * MPI_Wait timed together, each followed by an untimed MPI_Barrier (none
 * for the barrier); with -compare the persistent, nonblocking and
 * blocking forms side by side. Persistent collectives are MPI 4.0's
 * MPI_*_init, or Open MPI 4.1's MPIX_*_init (mpi-ext.h).
 *
 * Data as ours: the reductions MPI_FLOAT with MPI_SUM, rank r
 * contributing r+i%7 at element i (n bytes are n/4 floats; smaller sizes
 * are skipped); the others MPI_CHAR blocks, seeded 7*from+13*to+1 in the
 * all-to-alls, by the sender's rank in the gathers, by the receiver's in
 * the scatters; root 0. After the timed calls of each size one more call
 * is checked.
 *
 * Usage: osu_nbc MODE [-m min:max] [-i iters] [-x warmup] [-il iters]
 *                     [-xl warmup] [-f] [-M bytes] [-t tests] [-compare]
 *                     [-N cart:dim:rad] [-nd dims]
 * MODE: iallgather iallgatherv iallreduce ialltoall ialltoallv ialltoallw
 * ibarrier ibcast igather igatherv ireduce ireduce_scatter
 * ireduce_scatter_block iscan iexscan iscatter iscatterv, or
 * allgather_persistent ... scatterv_persistent (the same stems without
 * the i, but reduce_scatter_block, scan and exscan), or the neighbourhood
 * collectives neighbor_allgather, neighbor_alltoall (blocking, as
 * osu_coll.c's loops), ineighbor_allgather, ineighbor_alltoall on the
 * graph of -N (see below), or halo (benchmarks/halo's NeighborAlltoall
 * column on a periodic grid of -nd dimensions, default 2). Defaults as OSU's
 * collectives: sizes 1 B to 1 MiB, 1000 iterations after 100 warm-up up
 * to 8 KiB, 100 after 10 above (ibarrier uses the latter). */
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4
#define PINIT(f) MPI_##f##_init
#define HAVE_PERSISTENT 1
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PINIT(f) MPIX_##f##_init
#define HAVE_PERSISTENT 1
#else
#define HAVE_PERSISTENT 0
#endif

static int rank, np, full, tests, compare, halo_nd = 2;
static long min_size = 1, max_size = 1L << 20, mem_limit = 512L << 20;
static int iters = 1000, skip = 100, iters_large = 100, skip_large = 10;
static char mpi_name[64];

static void must(int err, const char *what);

static void die(const char *what) {
	fprintf(stderr, "rank %d: %s\n", rank, what);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *zalloc(long n) {
	void *p = calloc(n > 0 ? n : 1, 1);
	if (!p) die("out of memory");
	return p;
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

static void check(const char *b, long n, unsigned char seed, const char *what, int block) {
	if (n > 0 && ((unsigned char)b[0] != seed || (unsigned char)b[n - 1] != (unsigned char)(seed + (unsigned char)(n - 1)))) {
		fprintf(stderr, "rank %d: %s, block %d: %ld-byte block arrived wrong\n", rank, what, block, n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

static unsigned char a2a_seed(int from, int to) { return (unsigned char)(7 * from + 13 * to + 1); }

/* The buffers and arguments of the collective at the current size. */
static char *sb, *rb;
static float *sf, *rf;
static long cur_n; /* bytes */
static int k;      /* elements */
static int *counts, *displs, *wdispls, *rs_counts, rs_off, rsb_m;
static MPI_Datatype *wtypes;

static void fill_floats(float *f, long n) {
	for (long i = 0; i < n; i++) f[i] = (float)(rank + (int)(i % 7));
}

static void poison_floats(float *f, long n) {
	for (long i = 0; i < n; i++) f[i] = -1;
}

/* check_sums: r[i] must be the sum over ranks 0..m-1 of q+(off+i)%7. */
static void check_sums(const float *r, long n, int m, int off, const char *what) {
	for (long i = 0; i < n; i++) {
		float want = (float)(m * (m - 1) / 2 + m * (int)((off + i) % 7));
		if (r[i] != want) {
			fprintf(stderr, "rank %d: %s of %ld floats: element %ld is %g, want %g\n", rank, what, n, i, r[i], want);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

static void equal_counts(int c) {
	for (int q = 0; q < np; q++) counts[q] = c, displs[q] = q * c, wdispls[q] = q * c, wtypes[q] = MPI_CHAR;
}

/* ---- setup (buffers for sizes up to max) ---- */
static void setup_none(long max) { (void)max; }
static void setup_bytes1(long max) { sb = zalloc(max); }
static void setup_floats(long max) {
	sf = zalloc(max / 4 * (long)sizeof(float) + 4), rf = zalloc(max / 4 * (long)sizeof(float) + 4);
	fill_floats(sf, max / 4);
}
static void setup_gather(long max) { sb = zalloc(max), rb = zalloc(rank == 0 ? max * np : 0); }
static void setup_scatter(long max) { sb = zalloc(rank == 0 ? max * np : 0), rb = zalloc(max); }
static void setup_allgather(long max) { sb = zalloc(max), rb = zalloc(max * np); }
static void setup_alltoall(long max) { sb = zalloc(max * np), rb = zalloc(max * np); }

/* ---- at (prepare size n) ---- */
static void at_none(void) {}
static void at_bcast(void) {
	if (rank == 0) fill(sb, cur_n, 1);
}
static void at_floats(void) {}
static void at_reduce_scatter(void) {
	rs_off = 0;
	for (int q = 0; q < np; q++) {
		if (k < np)
			rs_counts[q] = q < k ? 1 : 0;
		else
			rs_counts[q] = k / np + (q < k % np ? 1 : 0);
		if (q < rank) rs_off += rs_counts[q];
	}
}
static void at_rsb(void) { rsb_m = k / np; }
static void at_own(void) { /* gather, allgather: my block */
	fill(sb, cur_n, (unsigned char)rank);
	equal_counts((int)cur_n);
}
static void at_scatter(void) {
	if (rank == 0)
		for (int q = 0; q < np; q++) fill(sb + q * cur_n, cur_n, (unsigned char)q);
	equal_counts((int)cur_n);
}
static void at_alltoall(void) {
	for (int q = 0; q < np; q++) fill(sb + q * cur_n, cur_n, a2a_seed(rank, q));
	equal_counts((int)cur_n);
}

/* ---- the calls ---- */
#define C MPI_COMM_WORLD
#define N ((int)cur_n)
static int i_barrier(MPI_Request *r) { return MPI_Ibarrier(C, r); }
static int b_barrier(void) { return MPI_Barrier(C); }
static int i_bcast(MPI_Request *r) { return MPI_Ibcast(sb, N, MPI_CHAR, 0, C, r); }
static int b_bcast(void) { return MPI_Bcast(sb, N, MPI_CHAR, 0, C); }
static int i_reduce(MPI_Request *r) { return MPI_Ireduce(sf, rf, k, MPI_FLOAT, MPI_SUM, 0, C, r); }
static int b_reduce(void) { return MPI_Reduce(sf, rf, k, MPI_FLOAT, MPI_SUM, 0, C); }
static int i_allreduce(MPI_Request *r) { return MPI_Iallreduce(sf, rf, k, MPI_FLOAT, MPI_SUM, C, r); }
static int b_allreduce(void) { return MPI_Allreduce(sf, rf, k, MPI_FLOAT, MPI_SUM, C); }
static int i_scan(MPI_Request *r) { return MPI_Iscan(sf, rf, k, MPI_FLOAT, MPI_SUM, C, r); }
static int b_scan(void) { return MPI_Scan(sf, rf, k, MPI_FLOAT, MPI_SUM, C); }
static int i_exscan(MPI_Request *r) { return MPI_Iexscan(sf, rf, k, MPI_FLOAT, MPI_SUM, C, r); }
static int b_exscan(void) { return MPI_Exscan(sf, rf, k, MPI_FLOAT, MPI_SUM, C); }
static int i_rs(MPI_Request *r) { return MPI_Ireduce_scatter(sf, rf, rs_counts, MPI_FLOAT, MPI_SUM, C, r); }
static int b_rs(void) { return MPI_Reduce_scatter(sf, rf, rs_counts, MPI_FLOAT, MPI_SUM, C); }
static int i_rsb(MPI_Request *r) { return MPI_Ireduce_scatter_block(sf, rf, rsb_m, MPI_FLOAT, MPI_SUM, C, r); }
static int b_rsb(void) { return MPI_Reduce_scatter_block(sf, rf, rsb_m, MPI_FLOAT, MPI_SUM, C); }
static int i_gather(MPI_Request *r) { return MPI_Igather(sb, N, MPI_CHAR, rb, N, MPI_CHAR, 0, C, r); }
static int b_gather(void) { return MPI_Gather(sb, N, MPI_CHAR, rb, N, MPI_CHAR, 0, C); }
static int i_gatherv(MPI_Request *r) { return MPI_Igatherv(sb, N, MPI_CHAR, rb, counts, displs, MPI_CHAR, 0, C, r); }
static int b_gatherv(void) { return MPI_Gatherv(sb, N, MPI_CHAR, rb, counts, displs, MPI_CHAR, 0, C); }
static int i_scatter(MPI_Request *r) { return MPI_Iscatter(sb, N, MPI_CHAR, rb, N, MPI_CHAR, 0, C, r); }
static int b_scatter(void) { return MPI_Scatter(sb, N, MPI_CHAR, rb, N, MPI_CHAR, 0, C); }
static int i_scatterv(MPI_Request *r) { return MPI_Iscatterv(sb, counts, displs, MPI_CHAR, rb, N, MPI_CHAR, 0, C, r); }
static int b_scatterv(void) { return MPI_Scatterv(sb, counts, displs, MPI_CHAR, rb, N, MPI_CHAR, 0, C); }
static int i_allgather(MPI_Request *r) { return MPI_Iallgather(sb, N, MPI_CHAR, rb, N, MPI_CHAR, C, r); }
static int b_allgather(void) { return MPI_Allgather(sb, N, MPI_CHAR, rb, N, MPI_CHAR, C); }
static int i_allgatherv(MPI_Request *r) { return MPI_Iallgatherv(sb, N, MPI_CHAR, rb, counts, displs, MPI_CHAR, C, r); }
static int b_allgatherv(void) { return MPI_Allgatherv(sb, N, MPI_CHAR, rb, counts, displs, MPI_CHAR, C); }
static int i_alltoall(MPI_Request *r) { return MPI_Ialltoall(sb, N, MPI_CHAR, rb, N, MPI_CHAR, C, r); }
static int b_alltoall(void) { return MPI_Alltoall(sb, N, MPI_CHAR, rb, N, MPI_CHAR, C); }
static int i_alltoallv(MPI_Request *r) {
	return MPI_Ialltoallv(sb, counts, displs, MPI_CHAR, rb, counts, displs, MPI_CHAR, C, r);
}
static int b_alltoallv(void) { return MPI_Alltoallv(sb, counts, displs, MPI_CHAR, rb, counts, displs, MPI_CHAR, C); }
static int i_alltoallw(MPI_Request *r) {
	return MPI_Ialltoallw(sb, counts, wdispls, wtypes, rb, counts, wdispls, wtypes, C, r);
}
static int b_alltoallw(void) { return MPI_Alltoallw(sb, counts, wdispls, wtypes, rb, counts, wdispls, wtypes, C); }

#if HAVE_PERSISTENT
#define INFO MPI_INFO_NULL
static int p_barrier(MPI_Request *r) { return PINIT(Barrier)(C, INFO, r); }
static int p_bcast(MPI_Request *r) { return PINIT(Bcast)(sb, N, MPI_CHAR, 0, C, INFO, r); }
static int p_reduce(MPI_Request *r) { return PINIT(Reduce)(sf, rf, k, MPI_FLOAT, MPI_SUM, 0, C, INFO, r); }
static int p_allreduce(MPI_Request *r) { return PINIT(Allreduce)(sf, rf, k, MPI_FLOAT, MPI_SUM, C, INFO, r); }
static int p_rs(MPI_Request *r) { return PINIT(Reduce_scatter)(sf, rf, rs_counts, MPI_FLOAT, MPI_SUM, C, INFO, r); }
static int p_gather(MPI_Request *r) { return PINIT(Gather)(sb, N, MPI_CHAR, rb, N, MPI_CHAR, 0, C, INFO, r); }
static int p_gatherv(MPI_Request *r) {
	return PINIT(Gatherv)(sb, N, MPI_CHAR, rb, counts, displs, MPI_CHAR, 0, C, INFO, r);
}
static int p_scatter(MPI_Request *r) { return PINIT(Scatter)(sb, N, MPI_CHAR, rb, N, MPI_CHAR, 0, C, INFO, r); }
static int p_scatterv(MPI_Request *r) {
	return PINIT(Scatterv)(sb, counts, displs, MPI_CHAR, rb, N, MPI_CHAR, 0, C, INFO, r);
}
static int p_allgather(MPI_Request *r) { return PINIT(Allgather)(sb, N, MPI_CHAR, rb, N, MPI_CHAR, C, INFO, r); }
static int p_allgatherv(MPI_Request *r) {
	return PINIT(Allgatherv)(sb, N, MPI_CHAR, rb, counts, displs, MPI_CHAR, C, INFO, r);
}
static int p_alltoall(MPI_Request *r) { return PINIT(Alltoall)(sb, N, MPI_CHAR, rb, N, MPI_CHAR, C, INFO, r); }
static int p_alltoallv(MPI_Request *r) {
	return PINIT(Alltoallv)(sb, counts, displs, MPI_CHAR, rb, counts, displs, MPI_CHAR, C, INFO, r);
}
static int p_alltoallw(MPI_Request *r) {
	return PINIT(Alltoallw)(sb, counts, wdispls, wtypes, rb, counts, wdispls, wtypes, C, INFO, r);
}
#else
#define p_barrier NULL
#define p_bcast NULL
#define p_reduce NULL
#define p_allreduce NULL
#define p_rs NULL
#define p_gather NULL
#define p_gatherv NULL
#define p_scatter NULL
#define p_scatterv NULL
#define p_allgather NULL
#define p_allgatherv NULL
#define p_alltoall NULL
#define p_alltoallv NULL
#define p_alltoallw NULL
#endif

/* ---- poison and verify ---- */
static void po_none(void) {}
static void ve_none(const char *what) { (void)what; }
static void po_bcast(void) {
	if (rank != 0) poison(sb, cur_n, 1);
}
static void ve_bcast(const char *what) { check(sb, cur_n, 1, what, 0); }
static void po_floats(void) { poison_floats(rf, k); }
static void ve_reduce(const char *what) {
	if (rank == 0) check_sums(rf, k, np, 0, what);
}
static void ve_allreduce(const char *what) { check_sums(rf, k, np, 0, what); }
static void ve_scan(const char *what) { check_sums(rf, k, rank + 1, 0, what); }
static void ve_exscan(const char *what) {
	if (rank > 0) check_sums(rf, k, rank, 0, what);
}
static void po_rs(void) { poison_floats(rf, rs_counts[rank]); }
static void ve_rs(const char *what) { check_sums(rf, rs_counts[rank], np, rs_off, what); }
static void po_rsb(void) { poison_floats(rf, rsb_m); }
static void ve_rsb(const char *what) { check_sums(rf, rsb_m, np, rank * rsb_m, what); }
static void po_gather(void) {
	if (rank == 0)
		for (int q = 0; q < np; q++) poison(rb + q * cur_n, cur_n, (unsigned char)q);
}
static void ve_gather(const char *what) {
	if (rank == 0)
		for (int q = 0; q < np; q++) check(rb + q * cur_n, cur_n, (unsigned char)q, what, q);
}
static void po_scatter(void) { poison(rb, cur_n, (unsigned char)rank); }
static void ve_scatter(const char *what) { check(rb, cur_n, (unsigned char)rank, what, 0); }
static void po_allgather(void) {
	for (int q = 0; q < np; q++) poison(rb + q * cur_n, cur_n, (unsigned char)q);
}
static void ve_allgather(const char *what) {
	for (int q = 0; q < np; q++) check(rb + q * cur_n, cur_n, (unsigned char)q, what, q);
}
static void po_alltoall(void) {
	for (int q = 0; q < np; q++) poison(rb + q * cur_n, cur_n, a2a_seed(q, rank));
}
static void ve_alltoall(const char *what) {
	for (int q = 0; q < np; q++) check(rb + q * cur_n, cur_n, a2a_seed(q, rank), what, q);
}

/* ---- neighbourhood collectives (osu_neighbor_*, osu_ineighbor_*) ----
 * The graph of benchmarks/internal/osu/neighbor.go, as OSU 7.x's
 * omb_neighborhood_create with -N cart:dim:rad (default cart:1:1): on a
 * periodic grid of MPI_Dims_create's dimensions over all the ranks, each
 * rank's neighbours are the ranks at every displacement in [-rad, rad]^dim
 * but zero (last dimension fastest), as sources and destinations of
 * MPI_Dist_graph_create_adjacent with weights 1, as OSU's. Unlike OSU, a
 * neighbour may repeat (at 2 ranks with cart:1:1); the k-th edge from q
 * to r pairs with the k-th edge into r from q. The allgather's block from q is seeded
 * nb_seed(q, 0), the alltoall's block to destination j nb_seed(rank, j+1). */
static MPI_Comm G = MPI_COMM_NULL;
static int nb_dim = 1, nb_rad = 1, deg, *nbrs, *gdims;

static unsigned char nb_seed(int from, int slot) { return (unsigned char)(11 * from + 5 * slot + 3); }

/* nb_list writes rank r's neighbours into out and returns how many. */
static int nb_list(int r, int *out) {
	int me[16], disp[16], m = 0;
	for (int i = nb_dim - 1, x = r; i >= 0; i--) me[i] = x % gdims[i], x /= gdims[i];
	for (int i = 0; i < nb_dim; i++) disp[i] = -nb_rad;
	for (;;) {
		int q = 0, i;
		for (i = 0; i < nb_dim; i++) q = q * gdims[i] + ((me[i] + disp[i]) % gdims[i] + gdims[i]) % gdims[i];
		if (q != r) out[m++] = q;
		for (i = nb_dim - 1; i >= 0 && disp[i] == nb_rad; i--) disp[i] = -nb_rad;
		if (i < 0) return m;
		disp[i]++;
	}
}

static int nb_degree(void) {
	int d = 1;
	for (int i = 0; i < nb_dim; i++) d *= 2 * nb_rad + 1;
	return d - 1;
}

/* slot_at: the slot in which source nbrs[i] sends to this rank. */
static int slot_at(int i) {
	int k = 0, *theirs = zalloc(sizeof(int) * deg), m, slot = -1;
	for (int j = 0; j < i; j++) k += nbrs[j] == nbrs[i];
	m = nb_list(nbrs[i], theirs);
	for (int j = 0; j < m && slot < 0; j++)
		if (theirs[j] == rank && k-- == 0) slot = j;
	free(theirs);
	if (slot < 0) die("no matching edge");
	return slot;
}

static void setup_neighbor(long max) {
	if (nb_dim < 1 || nb_dim > 16 || nb_rad < 1) die("bad -N");
	gdims = zalloc(sizeof(int) * nb_dim);
	must(MPI_Dims_create(np, nb_dim, gdims), "MPI_Dims_create");
	if (rank == 0) {
		printf("Dimensions size = ");
		for (int i = 0; i < nb_dim; i++) printf("%d ", gdims[i]);
		printf("\n");
	}
	nbrs = zalloc(sizeof(int) * nb_degree());
	deg = nb_list(rank, nbrs);
	int *ones = zalloc(sizeof(int) * (deg > 0 ? deg : 1)); /* weights 1, as OSU's */
	for (int i = 0; i < deg; i++) ones[i] = 1;
	double t = MPI_Wtime(), sum;
	must(MPI_Dist_graph_create_adjacent(C, deg, nbrs, ones, deg, nbrs, ones, MPI_INFO_NULL, 0, &G),
	     "MPI_Dist_graph_create_adjacent");
	t = MPI_Wtime() - t;
	MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, C);
	if (rank == 0) printf("Time took to create topology graph:%.2f us.\n", sum * 1e6 / np);
	fflush(stdout);
	sb = zalloc(max * (deg > 1 ? deg : 1)), rb = zalloc(max * deg); /* the allgather sends max bytes */
}
static void at_nb_allgather(void) { fill(sb, cur_n, nb_seed(rank, 0)); }
static void at_nb_alltoall(void) {
	for (int j = 0; j < deg; j++) fill(sb + j * cur_n, cur_n, nb_seed(rank, j + 1));
}
static int i_nb_allgather(MPI_Request *r) { return MPI_Ineighbor_allgather(sb, N, MPI_CHAR, rb, N, MPI_CHAR, G, r); }
static int b_nb_allgather(void) { return MPI_Neighbor_allgather(sb, N, MPI_CHAR, rb, N, MPI_CHAR, G); }
static int i_nb_alltoall(MPI_Request *r) { return MPI_Ineighbor_alltoall(sb, N, MPI_CHAR, rb, N, MPI_CHAR, G, r); }
static int b_nb_alltoall(void) { return MPI_Neighbor_alltoall(sb, N, MPI_CHAR, rb, N, MPI_CHAR, G); }
static void po_nb_allgather(void) {
	for (int i = 0; i < deg; i++) poison(rb + i * cur_n, cur_n, nb_seed(nbrs[i], 0));
}
static void ve_nb_allgather(const char *what) {
	for (int i = 0; i < deg; i++) check(rb + i * cur_n, cur_n, nb_seed(nbrs[i], 0), what, i);
}
static void po_nb_alltoall(void) {
	for (int i = 0; i < deg; i++) poison(rb + i * cur_n, cur_n, nb_seed(nbrs[i], slot_at(i) + 1));
}
static void ve_nb_alltoall(const char *what) {
	for (int i = 0; i < deg; i++) check(rb + i * cur_n, cur_n, nb_seed(nbrs[i], slot_at(i) + 1), what, i);
}

struct coll {
	const char *stem, *nb_title, *p_title, *datatype; /* datatype NULL: the barrier */
	int elem, per_rank;
	void (*setup)(long max);
	void (*at)(void);
	int (*start)(MPI_Request *);
	int (*init)(MPI_Request *);
	int (*call)(void);
	void (*poison)(void);
	void (*verify)(const char *what);
};

static const struct coll colls[] = {
	{"barrier", "Non-blocking Barrier Latency", "Barrier Persistent Latency", NULL, 1, 0, setup_none, at_none,
	 i_barrier, p_barrier, b_barrier, po_none, ve_none},
	{"bcast", "Non-Blocking Broadcast Latency", "Broadcast Persistent Latency", "MPI_CHAR", 1, 0, setup_bytes1,
	 at_bcast, i_bcast, p_bcast, b_bcast, po_bcast, ve_bcast},
	{"reduce", "Non-blocking Reduce Latency", "Reduce Persistent Latency", "MPI_FLOAT", 4, 0, setup_floats,
	 at_floats, i_reduce, p_reduce, b_reduce, po_floats, ve_reduce},
	{"allreduce", "Non-blocking Allreduce Latency", "Allreduce Persistent Latency", "MPI_FLOAT", 4, 0,
	 setup_floats, at_floats, i_allreduce, p_allreduce, b_allreduce, po_floats, ve_allreduce},
	{"scan", "Non-blocking Scan Latency", NULL, "MPI_FLOAT", 4, 0, setup_floats, at_floats, i_scan, NULL,
	 b_scan, po_floats, ve_scan},
	{"exscan", "Non-blocking Exscan Latency", NULL, "MPI_FLOAT", 4, 0, setup_floats, at_floats, i_exscan, NULL,
	 b_exscan, po_floats, ve_exscan},
	{"reduce_scatter", "Non-blocking Reduce_scatter Latency", "Reduce_scatter Persistent Latency", "MPI_FLOAT",
	 4, 0, setup_floats, at_reduce_scatter, i_rs, p_rs, b_rs, po_rs, ve_rs},
	{"reduce_scatter_block", "Non-blocking Reduce_scatter_block Latency", NULL, "MPI_FLOAT", 4, 0,
	 setup_floats, at_rsb, i_rsb, NULL, b_rsb, po_rsb, ve_rsb},
	{"gather", "Non-blocking Gather Latency", "Gather Persistent Latency", "MPI_CHAR", 1, 1, setup_gather,
	 at_own, i_gather, p_gather, b_gather, po_gather, ve_gather},
	{"gatherv", "Non-blocking Gatherv Latency", "Gatherv Persistent Latency", "MPI_CHAR", 1, 1, setup_gather,
	 at_own, i_gatherv, p_gatherv, b_gatherv, po_gather, ve_gather},
	{"scatter", "Non-blocking Scatter Latency", "Scatter Persistent Latency", "MPI_CHAR", 1, 1, setup_scatter,
	 at_scatter, i_scatter, p_scatter, b_scatter, po_scatter, ve_scatter},
	{"scatterv", "Non-blocking Scatterv Latency", "Scatterv Persistent Latency", "MPI_CHAR", 1, 1,
	 setup_scatter, at_scatter, i_scatterv, p_scatterv, b_scatterv, po_scatter, ve_scatter},
	{"allgather", "Non-blocking Allgather Latency", "Allgather Persistent Latency", "MPI_CHAR", 1, 1,
	 setup_allgather, at_own, i_allgather, p_allgather, b_allgather, po_allgather, ve_allgather},
	{"allgatherv", "Non-blocking Allgatherv Latency", "Allgatherv Persistent Latency", "MPI_CHAR", 1, 1,
	 setup_allgather, at_own, i_allgatherv, p_allgatherv, b_allgatherv, po_allgather, ve_allgather},
	{"alltoall", "Non-blocking All-to-All Latency", "All-to-All Personalized Exchange Persistent Latency",
	 "MPI_CHAR", 1, 1, setup_alltoall, at_alltoall, i_alltoall, p_alltoall, b_alltoall, po_alltoall,
	 ve_alltoall},
	{"alltoallv", "Non-blocking All-to-Allv Personalized Exchange Latency",
	 "All-to-Allv Personalized Exchange Persistent Latency", "MPI_CHAR", 1, 1, setup_alltoall, at_alltoall,
	 i_alltoallv, p_alltoallv, b_alltoallv, po_alltoall, ve_alltoall},
	{"alltoallw", "Non-blocking All-to-Allw Personalized Exchange Latency",
	 "All-to-Allw Personalized Exchange Persistent Latency", "MPI_CHAR", 1, 1, setup_alltoall, at_alltoall,
	 i_alltoallw, p_alltoallw, b_alltoallw, po_alltoall, ve_alltoall},
	/* p_title is the blocking benchmark's title here (no persistent form) */
	{"neighbor_allgather", "Non-blocking Neighborhood Allgather Latency", "Neighborhood Allgather Latency",
	 "MPI_CHAR", 1, 1, setup_neighbor, at_nb_allgather, i_nb_allgather, NULL, b_nb_allgather, po_nb_allgather,
	 ve_nb_allgather},
	{"neighbor_alltoall", "Non-blocking Neighborhood Alltoall Latency", "Neighborhood Alltoall Latency",
	 "MPI_CHAR", 1, 1, setup_neighbor, at_nb_alltoall, i_nb_alltoall, NULL, b_nb_alltoall, po_nb_alltoall,
	 ve_nb_alltoall},
};

static void must(int err, const char *what) {
	if (err != MPI_SUCCESS) die(what);
}

static void counts_for(long n, int *it, int *sk) {
	*it = n > 8192 ? iters_large : iters;
	*sk = n > 8192 ? skip_large : skip;
}

/* ---- the dummy compute: OSU's compute_on_host, 25x25 floats ---- */
#define DIM 25
static float da[DIM][DIM], dx[DIM], dy[DIM];

static void compute(double target) {
	double elapsed = 0;
	while (elapsed < target) {
		double t = MPI_Wtime();
		for (int i = 0; i < DIM; i++)
			for (int j = 0; j < DIM; j++) dx[i] = dx[i] + da[i][j] * da[j][i] + dy[j];
		elapsed += MPI_Wtime() - t;
	}
}

/* compute_and_test computes for about target seconds, in `tests` pieces
 * each followed by a timed MPI_Test while the request is pending; it
 * returns the time in Tests and sets *done if a Test completed it. */
static double compute_and_test(double target, MPI_Request *req, int *done) {
	double tt = 0;
	*done = 0;
	if (tests == 0) {
		compute(target);
		return 0;
	}
	for (int i = 0; i < tests; i++) {
		compute(target / tests);
		if (*done) continue;
		double t = MPI_Wtime();
		must(MPI_Test(req, done, MPI_STATUS_IGNORE), "MPI_Test");
		tt += MPI_Wtime() - t;
	}
	return tt;
}

static void start_wait(const struct coll *c) {
	MPI_Request r;
	must(c->start(&r), "nonblocking call");
	must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
}

/* one rank's means per call, µs */
struct nbc_times {
	double pure, overall, compute, init, test, wait;
};

static struct nbc_times time_nbc(const struct coll *c, int it, int sk, int sep) {
	double pure = 0;
	for (int i = 0; i < it + sk; i++) {
		double t0 = MPI_Wtime();
		start_wait(c);
		double t1 = MPI_Wtime();
		if (sep) MPI_Barrier(C);
		if (i >= sk) pure += t1 - t0;
	}
	MPI_Barrier(C);
	double target = pure / (it > 0 ? it : 1);
	double overall = 0, comp = 0, init = 0, test = 0, wait = 0;
	for (int i = 0; i < it + sk; i++) {
		MPI_Request r;
		int done;
		double t0 = MPI_Wtime();
		must(c->start(&r), "nonblocking call");
		double t1 = MPI_Wtime();
		double tt = compute_and_test(target, &r, &done);
		double t2 = MPI_Wtime();
		if (!done) must(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait");
		double t3 = MPI_Wtime();
		MPI_Barrier(C);
		if (i >= sk) overall += t3 - t0, init += t1 - t0, comp += t2 - t1, test += tt, wait += t3 - t2;
	}
	MPI_Barrier(C);
	double d = (it > 0 ? it : 1) / 1e6;
	struct nbc_times t = {pure / d, overall / d, comp / d, init / d, test / d, wait / d};
	return t;
}

static void nbc_header(const struct coll *c) {
	if (rank) return;
	printf("# OSU MPI %s Test (reference loop, %s)\n", c->nb_title, mpi_name);
	printf("# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait\n\n");
	if (c->datatype) {
		printf("# Datatype: %s.\n", c->datatype);
		printf("%-10s%18s", "# Size", "Overall(us)");
	} else {
		printf("# Overall(us)");
	}
	if (full) {
		static const char *h[] = {"Compute(us)", "Coll. Init(us)", "MPI_Test(us)", "MPI_Wait(us)",
		                          "Pure Comm.(us)", "Min Comm.(us)", "Max Comm.(us)", "Overlap(%)"};
		for (int i = 0; i < 8; i++) printf("%18s", h[i]);
	} else {
		printf("%18s%18s%18s", "Compute(us)", "Pure Comm.(us)", "Overlap(%)");
	}
	printf("\n");
	fflush(stdout);
}

static void nbc_row(long size, struct nbc_times t) {
	double mine[6] = {t.pure, t.overall, t.compute, t.init, t.test, t.wait}, *all = NULL;
	if (rank == 0) all = malloc(sizeof(double) * 6 * np);
	MPI_Gather(mine, 6, MPI_DOUBLE, all, 6, MPI_DOUBLE, 0, C);
	if (rank) return;
	double s[6] = {0}, lo = all[0], hi = all[0];
	for (int r = 0; r < np; r++) {
		for (int j = 0; j < 6; j++) s[j] += all[6 * r + j];
		if (all[6 * r] < lo) lo = all[6 * r];
		if (all[6 * r] > hi) hi = all[6 * r];
	}
	for (int j = 0; j < 6; j++) s[j] /= np;
	double comp = s[2] - s[4], overlap = 0;
	if (s[0] > 0) {
		overlap = 100 - (s[1] - comp) / s[0] * 100;
		if (overlap < 0) overlap = 0;
	}
	if (size >= 0)
		printf("%-10ld%18.2f", size, s[1]);
	else
		printf("%13.2f", s[1]);
	if (full)
		printf("%18.2f%18.2f%18.2f%18.2f%18.2f%18.2f%18.2f%18.2f", comp, s[3], s[4], s[5], s[0], lo, hi, overlap);
	else
		printf("%18.2f%18.2f%18.2f", comp, s[0], overlap);
	printf("\n");
	fflush(stdout);
	free(all);
}

/* ---- persistent ---- */

static void coll_header(const char *title, const char *datatype) {
	if (rank) return;
	if (compare) {
		printf("# OSU MPI %s Test (reference loop, %s): persistent, nonblocking and blocking\n", title, mpi_name);
		if (datatype) {
			printf("# Datatype: %s.\n", datatype);
			printf("%-10s%18s", "# Size", "Persistent(us)");
		} else {
			printf("%-18s", "# Persistent(us)");
		}
		printf("%18s%18s\n", "Nonblocking(us)", "Blocking(us)");
	} else {
		printf("# OSU MPI %s Test (reference loop, %s)\n", title, mpi_name);
		if (datatype) {
			printf("# Datatype: %s.\n", datatype);
			printf("%-10s%18s", "# Size", "Avg Latency(us)");
		} else {
			printf("# Avg Latency(us)");
		}
		if (full) printf("%18s%18s%12s", "Min Latency(us)", "Max Latency(us)", "Iterations");
		printf("\n");
	}
	fflush(stdout);
}

/* row as osu_coll.c's: the average over the ranks of each rank's mean */
static void coll_row(long size, double timer, int n) {
	double lat = n > 0 ? timer * 1e6 / n : 0, *all = NULL;
	if (rank == 0) all = malloc(sizeof(double) * np);
	MPI_Gather(&lat, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, C);
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

static double rank_mean(double timer, int n) {
	double v = timer * 1e6 / (n > 0 ? n : 1), sum;
	MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, C);
	return sum / np;
}

enum { PERS, NONB, BLOCK };

/* time_loop: the form's calls, each followed by an untimed barrier if
 * sep; the time of the last it calls. */
static double time_loop(const struct coll *c, int form, MPI_Request *req, int it, int sk, int sep) {
	double timer = 0;
	for (int i = 0; i < it + sk; i++) {
		double t0 = MPI_Wtime();
		switch (form) {
		case PERS:
			must(MPI_Start(req), "MPI_Start");
			must(MPI_Wait(req, MPI_STATUS_IGNORE), "MPI_Wait");
			break;
		case NONB: start_wait(c); break;
		default: must(c->call(), "blocking call");
		}
		double t1 = MPI_Wtime();
		if (sep) MPI_Barrier(C);
		if (i >= sk) timer += t1 - t0;
	}
	MPI_Barrier(C);
	return timer;
}

static void check_form(const struct coll *c, int form, MPI_Request *req, const char *what) {
	c->poison();
	switch (form) {
	case PERS:
		must(MPI_Start(req), "MPI_Start");
		must(MPI_Wait(req, MPI_STATUS_IGNORE), "MPI_Wait");
		break;
	case NONB: start_wait(c); break;
	default: must(c->call(), "blocking call");
	}
	c->verify(what);
}

static void setup_sizes(const struct coll *c) {
	if (c->per_rank && max_size * np > mem_limit) max_size = mem_limit / np;
	if (!c->per_rank && max_size > mem_limit) max_size = mem_limit;
	if (max_size < 1) max_size = 1;
	counts = zalloc(sizeof(int) * np), displs = zalloc(sizeof(int) * np), wdispls = zalloc(sizeof(int) * np);
	rs_counts = zalloc(sizeof(int) * np), wtypes = zalloc(sizeof(MPI_Datatype) * np);
	c->setup(max_size);
	for (int i = 0; i < DIM; i++) {
		dx[i] = dy[i] = 1;
		for (int j = 0; j < DIM; j++) da[i][j] = 2;
	}
}

static void run_nbc(const struct coll *c) {
	setup_sizes(c);
	nbc_header(c);
	if (!c->datatype) {
		c->at();
		MPI_Barrier(C);
		nbc_row(-1, time_nbc(c, iters_large, skip_large, 0));
		return;
	}
	for (long n = 1; n <= max_size; n *= 2) {
		int it, sk;
		char what[96];
		if (n < min_size || n / c->elem == 0) continue;
		cur_n = n, k = (int)(n / c->elem);
		counts_for(n, &it, &sk);
		c->at();
		MPI_Barrier(C);
		struct nbc_times t = time_nbc(c, it, sk, 1);
		snprintf(what, sizeof what, "i%s of %ld bytes", c->stem, n);
		check_form(c, NONB, NULL, what);
		nbc_row(n, t);
		MPI_Barrier(C);
	}
}

static void run_persistent(const struct coll *c) {
	setup_sizes(c);
	coll_header(c->p_title, c->datatype);
	for (long n = c->datatype ? 1 : -1; n <= max_size; n *= 2) {
		int it, sk, sep = n >= 0;
		char what[96];
		MPI_Request req;
		if (n >= 0 && (n < min_size || n / c->elem == 0)) continue;
		cur_n = n > 0 ? n : 0, k = (int)(cur_n / c->elem);
		counts_for(n, &it, &sk);
		c->at();
		must(c->init(&req), "persistent init");
		MPI_Barrier(C);
		double pers = time_loop(c, PERS, &req, it, sk, sep);
		snprintf(what, sizeof what, "persistent %s of %ld bytes", c->stem, n);
		check_form(c, PERS, &req, what);
		if (!compare) {
			coll_row(n, pers, it);
		} else {
			double nb = time_loop(c, NONB, NULL, it, sk, sep);
			check_form(c, NONB, NULL, what);
			double bl = time_loop(c, BLOCK, NULL, it, sk, sep);
			check_form(c, BLOCK, NULL, what);
			double p = rank_mean(pers, it), q = rank_mean(nb, it), b = rank_mean(bl, it);
			if (rank == 0) {
				if (n >= 0) printf("%-10ld", n);
				printf("%18.2f%18.2f%18.2f\n", p, q, b);
				fflush(stdout);
			}
		}
		must(MPI_Request_free(&req), "MPI_Request_free");
		MPI_Barrier(C);
		if (n < 0) break; /* the barrier: one row */
	}
}

/* run_blocking: the blocking neighbourhood benchmarks, as osu_coll.c's
 * loops: each call timed on its own and followed by an untimed barrier. */
static void run_blocking(const struct coll *c) {
	setup_sizes(c);
	coll_header(c->p_title, c->datatype);
	for (long n = 1; n <= max_size; n *= 2) {
		int it, sk;
		char what[96];
		if (n < min_size) continue;
		cur_n = n, k = (int)n;
		counts_for(n, &it, &sk);
		c->at();
		MPI_Barrier(C);
		double t = time_loop(c, BLOCK, NULL, it, sk, 1);
		snprintf(what, sizeof what, "%s of %ld bytes", c->stem, n);
		check_form(c, BLOCK, NULL, what);
		coll_row(n, t, it);
		MPI_Barrier(C);
	}
}

/* run_halo: benchmarks/halo's NeighborAlltoall column (the persistent and
 * Isend/Irecv columns are not repeated): a periodic grid of nd
 * dimensions (MPI_Dims_create), a block of n bytes to each of the 2*nd
 * Cartesian neighbours by MPI_Neighbor_alltoall; block j seeded
 * 16*rank+j, so block i from source q is seeded 16*q+(i^1). */
static void run_halo(int nd) {
	int dims[16] = {0}, periods[16], src[32];
	if (nd < 1 || nd > 16) die("bad -nd");
	for (int i = 0; i < nd; i++) periods[i] = 1;
	must(MPI_Dims_create(np, nd, dims), "MPI_Dims_create");
	must(MPI_Cart_create(C, nd, dims, periods, 0, &G), "MPI_Cart_create");
	deg = 2 * nd;
	for (int d = 0; d < nd; d++) must(MPI_Cart_shift(G, d, 1, &src[2 * d], &src[2 * d + 1]), "MPI_Cart_shift");
	if (max_size * deg > mem_limit) max_size = mem_limit / deg;
	sb = zalloc(max_size * deg), rb = zalloc(max_size * deg);
	if (rank == 0) {
		printf("# OSU MPI Halo Exchange Latency Test (reference loop, %s)\n# Grid: [", mpi_name);
		for (int i = 0; i < nd; i++) printf(i ? " %d" : "%d", dims[i]);
		printf("], periodic; %d neighbours a rank; Datatype: MPI_CHAR.\n", deg);
		printf("%-10s%18s\n", "# Size", "Neighbor(us)");
		fflush(stdout);
	}
	for (long n = 1; n <= max_size; n *= 2) {
		int it, sk;
		if (n < min_size) continue;
		cur_n = n;
		counts_for(n, &it, &sk);
		for (int j = 0; j < deg; j++) fill(sb + j * n, n, (unsigned char)(rank * 16 + j));
		MPI_Barrier(C);
		double t = 0;
		for (int i = 0; i < it + sk; i++) {
			double t0 = MPI_Wtime();
			must(b_nb_alltoall(), "MPI_Neighbor_alltoall");
			double t1 = MPI_Wtime();
			MPI_Barrier(C);
			if (i >= sk) t += t1 - t0;
		}
		for (int i = 0; i < deg; i++) poison(rb + i * n, n, (unsigned char)(src[i] * 16 + (i ^ 1)));
		must(b_nb_alltoall(), "MPI_Neighbor_alltoall");
		for (int i = 0; i < deg; i++) check(rb + i * n, n, (unsigned char)(src[i] * 16 + (i ^ 1)), "halo", i);
		double v = rank_mean(t, it);
		if (rank == 0) printf("%-10ld%18.2f\n", n, v), fflush(stdout);
		MPI_Barrier(C);
	}
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(C, &rank);
	MPI_Comm_size(C, &np);
	{
		char v[MPI_MAX_LIBRARY_VERSION_STRING];
		int len;
		MPI_Get_library_version(v, &len);
		/* "Open MPI v4.1.4, package: ..." or "MPICH Version:\t4.0.2\n...": the name and version only */
		size_t m = strcspn(v, ",\n");
		if (m >= sizeof mpi_name) m = sizeof mpi_name - 1;
		memcpy(mpi_name, v, m);
		mpi_name[m] = 0;
		for (char *p = mpi_name; *p; p++)
			if (*p == '\t') *p = ' ';
	}
	const char *mode = argc > 1 ? argv[1] : "";
	for (int a = 2; a < argc; a++) {
		const char *f = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
		if (strcmp(f, "-f") == 0) {
			full = 1;
			continue;
		}
		if (strcmp(f, "-compare") == 0) {
			compare = 1;
			continue;
		}
		if (!v) goto usage;
		a++;
		if (strcmp(f, "-N") == 0) {
			if (sscanf(v, "cart:%d:%d", &nb_dim, &nb_rad) != 2 || nb_dim < 1 || nb_rad < 1) goto usage;
		} else if (strcmp(f, "-nd") == 0) {
			halo_nd = atoi(v);
		} else if (strcmp(f, "-m") == 0) {
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
		} else if (strcmp(f, "-t") == 0) {
			tests = atoi(v);
			if (tests < 0) goto usage;
		} else {
			goto usage;
		}
	}
	if (strcmp(mode, "halo") == 0) {
		run_halo(halo_nd);
		MPI_Finalize();
		return 0;
	}
	const size_t nc = sizeof colls / sizeof colls[0];
	size_t ml = strlen(mode);
	for (size_t i = 0; i < nc; i++) {
		const struct coll *c = &colls[i];
		if (mode[0] == 'i' && strcmp(mode + 1, c->stem) == 0) {
			run_nbc(c);
			MPI_Finalize();
			return 0;
		}
		if (strncmp(c->stem, "neighbor_", 9) == 0 && strcmp(mode, c->stem) == 0) {
			run_blocking(c);
			MPI_Finalize();
			return 0;
		}
		static const char suffix[] = "_persistent";
		size_t sl = sizeof suffix - 1;
		if (ml > sl && strcmp(mode + ml - sl, suffix) == 0 && strlen(c->stem) == ml - sl &&
		    strncmp(mode, c->stem, ml - sl) == 0) {
			if (!c->init || !c->p_title) {
				if (rank == 0)
					fprintf(stderr, "%s: no persistent form here (%s)\n", mode,
					        HAVE_PERSISTENT ? "OSU has none" : "this MPI has no persistent collectives");
				MPI_Finalize();
				return 1;
			}
			run_persistent(c);
			MPI_Finalize();
			return 0;
		}
	}
usage:
	if (rank == 0)
		fprintf(stderr, "usage: osu_nbc iallgather|iallgatherv|iallreduce|ialltoall|ialltoallv|ialltoallw|ibarrier|"
		                "ibcast|igather|igatherv|ireduce|ireduce_scatter|ireduce_scatter_block|iscan|iexscan|"
		                "iscatter|iscatterv|<stem>_persistent|neighbor_allgather|neighbor_alltoall|"
		                "ineighbor_allgather|ineighbor_alltoall|halo [-m min:max] [-i iters] [-x warmup] "
		                "[-il iters] [-xl warmup] [-f] [-M bytes] [-t tests] [-compare] [-N cart:dim:rad] "
		                "[-nd dims]\n");
	MPI_Finalize();
	return 1;
}
