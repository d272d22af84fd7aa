/* mpit.c: the tool information interface (MPI_T). Before MPI_Init,
 * while MPI runs and after MPI_Finalize: enumerates every control
 * variable, performance variable and category and reads each; checks
 * that the message counters grow by exactly what the program sends and
 * receives (ranks in pairs, even to odd, and to themselves), the
 * unexpected-message level, start/stop/reset/write of counters, writable
 * control variables, the source's monotonic clock, and the MPI_T_ERR_
 * codes of bad input (returned, never passed to the world's error
 * handler, which is MPI_ERRORS_ARE_FATAL here). Needs an even number of
 * ranks. */
#include "check.h"
#include <mpix.h>
#include <signal.h>
#include <stdint.h>

#define EXPECT(call, code)                                                             \
    do {                                                                               \
        int rc_ = (call);                                                              \
        if (rc_ != (code)) {                                                           \
            printf("FAIL rank %d %s:%d: %s returned %d, want %d (%s)\n", check_rank(), \
                   __FILE__, __LINE__, #call, rc_, (code), #code);                     \
            fflush(stdout);                                                            \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

/* The sleep timeout the runtime takes: SHMPI_SLEEP_TIMEOUT_MS, or 100. */
static int sleep_timeout(void)
{
    const char *e = getenv("SHMPI_SLEEP_TIMEOUT_MS");
    return e && atoi(e) > 0 ? atoi(e) : 100;
}

static int cvar_index(const char *name)
{
    int i = -1;
    EXPECT(MPI_T_cvar_get_index(name, &i), MPI_SUCCESS);
    return i;
}

static int pvar_index(const char *name, int class)
{
    int i = -1;
    EXPECT(MPI_T_pvar_get_index(name, class, &i), MPI_SUCCESS);
    return i;
}

static int read_cvar(int idx)
{
    MPI_T_cvar_handle h;
    int count = 0, v = -12345;
    EXPECT(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count), MPI_SUCCESS);
    CHECK(count == 1);
    EXPECT(MPI_T_cvar_read(h, &v), MPI_SUCCESS);
    EXPECT(MPI_T_cvar_handle_free(&h), MPI_SUCCESS);
    CHECK(h == MPI_T_CVAR_HANDLE_NULL);
    return v;
}

static int write_cvar(int idx, int v)
{
    MPI_T_cvar_handle h;
    int count = 0;
    EXPECT(MPI_T_cvar_handle_alloc(idx, NULL, &h, &count), MPI_SUCCESS);
    int rc = MPI_T_cvar_write(h, &v);
    EXPECT(MPI_T_cvar_handle_free(&h), MPI_SUCCESS);
    return rc;
}

/* enumerate reads every variable and category; every variable must be
 * listed by some category. */
static void enumerate(int live)
{
    int ncv, npv, ncat;
    EXPECT(MPI_T_cvar_get_num(&ncv), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_get_num(&npv), MPI_SUCCESS);
    EXPECT(MPI_T_category_get_num(&ncat), MPI_SUCCESS);
    CHECK(ncv >= 10 && npv >= 9 && ncat >= 4);
    int cv_seen[64] = {0}, pv_seen[64] = {0};
    CHECK(ncv <= 64 && npv <= 64);
    for (int i = 0; i < ncv; i++) {
        char name[128], desc[1024];
        int nlen = sizeof name, dlen = sizeof desc, verb, bind, scope, idx;
        MPI_Datatype dt;
        MPI_T_enum en;
        EXPECT(MPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &en, desc, &dlen, &bind, &scope), MPI_SUCCESS);
        CHECK(nlen == (int)strlen(name) + 1 && dlen == (int)strlen(desc) + 1 && dlen > 10);
        CHECK(dt == MPI_INT && bind == MPI_T_BIND_NO_OBJECT);
        CHECK(scope == MPI_T_SCOPE_CONSTANT || scope == MPI_T_SCOPE_READONLY || scope == MPI_T_SCOPE_LOCAL);
        EXPECT(MPI_T_cvar_get_index(name, &idx), MPI_SUCCESS);
        CHECK(idx == i);
        int v = read_cvar(i);
        if (live)
            CHECK(v >= 0);
        if (en != MPI_T_ENUM_NULL) {
            char ename[128], item[128];
            int num, vlen = sizeof item;
            int elen = sizeof ename;
            EXPECT(MPI_T_enum_get_info(en, &num, ename, &elen), MPI_SUCCESS);
            CHECK(num >= 2);
            int found = !live;
            for (int k = 0; k < num; k++) {
                int val;
                vlen = sizeof item;
                EXPECT(MPI_T_enum_get_item(en, k, &val, item, &vlen), MPI_SUCCESS);
                CHECK(vlen == (int)strlen(item) + 1);
                found |= val == v;
            }
            CHECK(found);
            EXPECT(MPI_T_enum_get_item(en, num, &v, item, &vlen), MPI_T_ERR_INVALID_INDEX);
        }
        /* The string convention: a short buffer gets a truncated,
         * terminated string and the full length. */
        char small[4];
        int slen = sizeof small;
        EXPECT(MPI_T_cvar_get_info(i, small, &slen, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_SUCCESS);
        CHECK(slen == nlen && small[3] == 0 && strncmp(small, name, 3) == 0);
        slen = 0;
        EXPECT(MPI_T_cvar_get_info(i, NULL, &slen, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_SUCCESS);
        CHECK(slen == nlen);
    }
    MPI_T_pvar_session s;
    EXPECT(MPI_T_pvar_session_create(&s), MPI_SUCCESS);
    for (int i = 0; i < npv; i++) {
        char name[128], desc[1024];
        int nlen = sizeof name, dlen = sizeof desc, verb, class, bind, ro, cont, atomic, idx, count;
        MPI_Datatype dt;
        MPI_T_enum en;
        EXPECT(MPI_T_pvar_get_info(i, name, &nlen, &verb, &class, &dt, &en, desc, &dlen, &bind, &ro, &cont, &atomic),
               MPI_SUCCESS);
        CHECK(dt == MPI_UNSIGNED_LONG_LONG && en == MPI_T_ENUM_NULL && bind == MPI_T_BIND_NO_OBJECT && dlen > 10);
        CHECK(class == MPI_T_PVAR_CLASS_COUNTER || class == MPI_T_PVAR_CLASS_LEVEL);
        EXPECT(MPI_T_pvar_get_index(name, class, &idx), MPI_SUCCESS);
        CHECK(idx == i);
        EXPECT(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_TIMER, &idx), MPI_T_ERR_INVALID_NAME);
        MPI_T_pvar_handle h;
        EXPECT(MPI_T_pvar_handle_alloc(s, i, NULL, &h, &count), MPI_SUCCESS);
        CHECK(count == 1);
        unsigned long long v = 99;
        EXPECT(MPI_T_pvar_read(s, h, &v), MPI_SUCCESS);
        if (!cont)
            CHECK(v == 0); /* a stopped counter's handle starts at 0 */
        if (!live)
            CHECK(v == 0); /* nothing happened before MPI_Init */
        if (cont) {
            EXPECT(MPI_T_pvar_start(s, h), MPI_T_ERR_PVAR_NO_STARTSTOP);
            EXPECT(MPI_T_pvar_stop(s, h), MPI_T_ERR_PVAR_NO_STARTSTOP);
        }
        if (ro) {
            EXPECT(MPI_T_pvar_write(s, h, &v), MPI_T_ERR_PVAR_NO_WRITE);
            EXPECT(MPI_T_pvar_reset(s, h), MPI_T_ERR_PVAR_NO_WRITE);
            EXPECT(MPI_T_pvar_readreset(s, h, &v), MPI_T_ERR_PVAR_NO_WRITE);
        }
        EXPECT(MPI_T_pvar_handle_free(s, &h), MPI_SUCCESS);
        CHECK(h == MPI_T_PVAR_HANDLE_NULL);
    }
    EXPECT(MPI_T_pvar_session_free(&s), MPI_SUCCESS);
    CHECK(s == MPI_T_PVAR_SESSION_NULL);
    for (int c = 0; c < ncat; c++) {
        char name[128], desc[1024];
        int nlen = sizeof name, dlen = sizeof desc, nc, np, nsub, ne, idx;
        EXPECT(MPI_T_category_get_info(c, name, &nlen, desc, &dlen, &nc, &np, &nsub), MPI_SUCCESS);
        EXPECT(MPI_T_category_get_index(name, &idx), MPI_SUCCESS);
        CHECK(idx == c);
        int list[64];
        CHECK(nc <= 64 && np <= 64 && nsub <= 64);
        EXPECT(MPI_T_category_get_cvars(c, 64, list), MPI_SUCCESS);
        for (int k = 0; k < nc; k++) {
            CHECK(list[k] >= 0 && list[k] < ncv);
            cv_seen[list[k]] = 1;
        }
        EXPECT(MPI_T_category_get_pvars(c, 64, list), MPI_SUCCESS);
        for (int k = 0; k < np; k++) {
            CHECK(list[k] >= 0 && list[k] < npv);
            pv_seen[list[k]] = 1;
        }
        EXPECT(MPI_T_category_get_categories(c, 64, list), MPI_SUCCESS);
        for (int k = 0; k < nsub; k++)
            CHECK(list[k] >= 0 && list[k] < ncat && list[k] != c);
        EXPECT(MPI_T_category_get_num_events(c, &ne), MPI_SUCCESS);
        CHECK(ne == 0);
        EXPECT(MPI_T_category_get_events(c, 64, list), MPI_SUCCESS);
    }
    for (int i = 0; i < ncv; i++)
        CHECK(cv_seen[i]);
    for (int i = 0; i < npv; i++)
        CHECK(pv_seen[i]);
}

/* bad_input checks the error codes of bad indices, names, handles and
 * sessions. */
static void bad_input(void)
{
    int n, ncv, npv, ncat, v, count;
    MPI_T_cvar_handle ch;
    MPI_T_pvar_session s, s2;
    MPI_T_pvar_handle ph;
    char name[64];
    int nlen = sizeof name;
    MPI_T_cvar_get_num(&ncv);
    MPI_T_pvar_get_num(&npv);
    MPI_T_category_get_num(&ncat);
    EXPECT(MPI_T_cvar_get_info(ncv, name, &nlen, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_cvar_get_info(-1, name, &nlen, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_pvar_get_info(npv, name, &nlen, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
           MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_category_get_info(ncat, name, &nlen, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_category_get_cvars(-1, 1, &n), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_category_get_num_events(ncat, &n), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_cvar_get_index("no_such_variable", &n), MPI_T_ERR_INVALID_NAME);
    EXPECT(MPI_T_pvar_get_index("no_such_variable", MPI_T_PVAR_CLASS_COUNTER, &n), MPI_T_ERR_INVALID_NAME);
    EXPECT(MPI_T_category_get_index("no_such_category", &n), MPI_T_ERR_INVALID_NAME);
    EXPECT(MPI_T_cvar_get_num(NULL), MPI_T_ERR_INVALID);
    EXPECT(MPI_T_cvar_handle_alloc(ncv, NULL, &ch, &count), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &n, name, &nlen), MPI_T_ERR_INVALID_HANDLE);
    /* A freed control-variable handle. */
    EXPECT(MPI_T_cvar_handle_alloc(0, NULL, &ch, &count), MPI_SUCCESS);
    MPI_T_cvar_handle stale = ch;
    EXPECT(MPI_T_cvar_handle_free(&ch), MPI_SUCCESS);
    EXPECT(MPI_T_cvar_read(stale, &v), MPI_T_ERR_INVALID_HANDLE);
    EXPECT(MPI_T_cvar_handle_free(&stale), MPI_T_ERR_INVALID_HANDLE);
    EXPECT(MPI_T_cvar_read(MPI_T_CVAR_HANDLE_NULL, &v), MPI_T_ERR_INVALID_HANDLE);
    /* Sessions and performance-variable handles. */
    EXPECT(MPI_T_pvar_session_create(&s), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_session_create(&s2), MPI_SUCCESS);
    CHECK(s != s2);
    EXPECT(MPI_T_pvar_handle_alloc(s, npv, NULL, &ph, &count), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_pvar_handle_alloc(MPI_T_PVAR_SESSION_NULL, 0, NULL, &ph, &count), MPI_T_ERR_INVALID_SESSION);
    EXPECT(MPI_T_pvar_handle_alloc(s, 0, NULL, &ph, &count), MPI_SUCCESS);
    unsigned long long u;
    EXPECT(MPI_T_pvar_read(s2, ph, &u), MPI_T_ERR_INVALID_HANDLE); /* another session's */
    EXPECT(MPI_T_pvar_read(s, MPI_T_PVAR_ALL_HANDLES, &u), MPI_T_ERR_INVALID_HANDLE);
    EXPECT(MPI_T_pvar_write(s, MPI_T_PVAR_ALL_HANDLES, &u), MPI_T_ERR_INVALID_HANDLE);
    EXPECT(MPI_T_pvar_read(s, MPI_T_PVAR_HANDLE_NULL, &u), MPI_T_ERR_INVALID_HANDLE);
    EXPECT(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_reset(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    MPI_T_pvar_session dead = s;
    EXPECT(MPI_T_pvar_session_free(&s), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_read(dead, ph, &u), MPI_T_ERR_INVALID_SESSION);
    EXPECT(MPI_T_pvar_read(s2, ph, &u), MPI_T_ERR_INVALID_HANDLE); /* freed with its session */
    EXPECT(MPI_T_pvar_session_free(&dead), MPI_T_ERR_INVALID_SESSION);
    EXPECT(MPI_T_pvar_session_free(&s2), MPI_SUCCESS);
    /* Events: none (see docs/c.md); sources: one. */
    EXPECT(MPI_T_event_get_num(&n), MPI_SUCCESS);
    CHECK(n == 0);
    EXPECT(MPI_T_event_get_index("anything", &n), MPI_T_ERR_INVALID_NAME);
    EXPECT(MPI_T_event_get_info(0, name, &nlen, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
           MPI_T_ERR_INVALID_INDEX);
    MPI_T_event_registration reg;
    EXPECT(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, &reg), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_source_get_num(&n), MPI_SUCCESS);
    CHECK(n == 1);
    MPI_Count ts;
    EXPECT(MPI_T_source_get_timestamp(1, &ts), MPI_T_ERR_INVALID_INDEX);
    EXPECT(MPI_T_source_get_info(-1, name, &nlen, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
}

/* source checks the one source: a monotonic clock in nanoseconds that
 * agrees with MPI_Wtime where MPI_Wtime may be called. */
static void source(int live)
{
    char name[64];
    int nlen = sizeof name;
    MPI_T_source_order ord;
    MPI_Count tps, max, t0, t1;
    MPI_Info info;
    /* The info object only while MPI runs, where MPI_Info_free may be
     * called; MPI_T takes a NULL info otherwise. */
    EXPECT(MPI_T_source_get_info(0, name, &nlen, NULL, NULL, &ord, &tps, &max, live ? &info : NULL), MPI_SUCCESS);
    CHECK(ord == MPI_T_SOURCE_ORDERED && tps == 1000000000 && max > 0 && strcmp(name, "shmpi_clock_monotonic") == 0);
    if (live)
        CHECK_RC(MPI_Info_free(&info));
    EXPECT(MPI_T_source_get_timestamp(0, &t0), MPI_SUCCESS);
    double w0 = live ? MPI_Wtime() : 0;
    for (volatile int i = 0; i < 100000; i++)
        ;
    double w1 = live ? MPI_Wtime() : 0;
    EXPECT(MPI_T_source_get_timestamp(0, &t1), MPI_SUCCESS);
    CHECK(t0 > 0 && t1 >= t0);
    if (live)
        CHECK((double)(t1 - t0) / 1e9 >= (w1 - w0) - 1e-6);
}

enum { MSENT, BSENT, MRECV, BRECV, NCOUNT };
static const char *counter_names[NCOUNT] = {"shmpi_msgs_sent", "shmpi_bytes_sent", "shmpi_msgs_received",
                                            "shmpi_bytes_received"};

static void read_all(MPI_T_pvar_session s, MPI_T_pvar_handle *h, unsigned long long *v)
{
    for (int k = 0; k < NCOUNT; k++)
        EXPECT(MPI_T_pvar_read(s, h[k], &v[k]), MPI_SUCCESS);
}

#define BIG (1 << 20)

/* traffic: even ranks send to the next odd rank, every rank sends to
 * itself; the counters must grow by exactly that. */
static void traffic(int rank)
{
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h[NCOUNT];
    unsigned long long v[NCOUNT], w[NCOUNT];
    int count;
    EXPECT(MPI_T_pvar_session_create(&s), MPI_SUCCESS);
    for (int k = 0; k < NCOUNT; k++)
        EXPECT(MPI_T_pvar_handle_alloc(s, pvar_index(counter_names[k], MPI_T_PVAR_CLASS_COUNTER), NULL, &h[k], &count),
               MPI_SUCCESS);
    int iunexp = pvar_index("shmpi_unexpected_msgs", MPI_T_PVAR_CLASS_LEVEL);
    MPI_T_pvar_handle hu;
    EXPECT(MPI_T_pvar_handle_alloc(s, iunexp, NULL, &hu, &count), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);

    char *buf = calloc(BIG, 1);
    CHECK(buf != NULL);
    int peer = rank ^ 1, sender = rank % 2 == 0;
    /* Every size class: short and inline records, a chunk, rendezvous;
     * standard, synchronous and nonblocking sends; a message to self. */
    const int sizes[] = {0, 8, 8, 8, 36, 100, 1000, 4000, BIG, BIG / 2};
    const int nsizes = sizeof sizes / sizeof sizes[0];
    unsigned long long msgs = 0, bytes = 0;
    for (int i = 0; i < nsizes; i++) {
        if (sender)
            CHECK_RC(MPI_Send(buf, sizes[i], MPI_BYTE, peer, i, MPI_COMM_WORLD));
        else
            CHECK_RC(MPI_Recv(buf, sizes[i], MPI_BYTE, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        msgs++, bytes += sizes[i];
    }
    for (int i = 0; i < 3; i++) {
        if (sender)
            CHECK_RC(MPI_Ssend(buf, 16, MPI_BYTE, peer, 50, MPI_COMM_WORLD));
        else
            CHECK_RC(MPI_Recv(buf, 16, MPI_BYTE, peer, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        msgs++, bytes += 16;
    }
    MPI_Request rq[4];
    for (int i = 0; i < 4; i++) {
        if (sender)
            CHECK_RC(MPI_Isend(buf + i * 2000, 2000, MPI_BYTE, peer, 60 + i, MPI_COMM_WORLD, &rq[i]));
        else
            CHECK_RC(MPI_Irecv(buf + i * 2000, 2000, MPI_BYTE, peer, 60 + i, MPI_COMM_WORLD, &rq[i]));
        msgs++, bytes += 2000;
    }
    CHECK_RC(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    /* Three messages the receiver has not asked for yet, then one it
     * waits for: the three are queued unexpected behind it. */
    for (int i = 0; i < 3; i++) {
        if (sender)
            CHECK_RC(MPI_Send(buf, 24, MPI_BYTE, peer, 77, MPI_COMM_WORLD));
        msgs++, bytes += 24;
    }
    if (sender) {
        CHECK_RC(MPI_Ssend(buf, 8, MPI_BYTE, peer, 78, MPI_COMM_WORLD));
    } else {
        unsigned long long u;
        CHECK_RC(MPI_Recv(buf, 8, MPI_BYTE, peer, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        EXPECT(MPI_T_pvar_read(s, hu, &u), MPI_SUCCESS);
        CHECK(u == 3);
        for (int i = 0; i < 3; i++)
            CHECK_RC(MPI_Recv(buf, 24, MPI_BYTE, peer, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        EXPECT(MPI_T_pvar_read(s, hu, &u), MPI_SUCCESS);
        CHECK(u == 0);
    }
    msgs++, bytes += 8;
    /* To itself. */
    CHECK_RC(MPI_Sendrecv(buf, 64, MPI_BYTE, rank, 90, buf + 64, 64, MPI_BYTE, rank, 90, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
    read_all(s, h, v);
    if (sender) {
        CHECK(v[MSENT] == msgs + 1 && v[BSENT] == bytes + 64);
        CHECK(v[MRECV] == 1 && v[BRECV] == 64);
    } else {
        CHECK(v[MSENT] == 1 && v[BSENT] == 64);
        CHECK(v[MRECV] == msgs + 1 && v[BRECV] == bytes + 64);
    }
    /* Stopped handles count nothing (what others send once the
     * barrier lets them may arrive during it); started again they go on. */
    EXPECT(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_RC(MPI_Sendrecv(buf, 10, MPI_BYTE, rank, 91, buf + 64, 10, MPI_BYTE, rank, 91, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
    read_all(s, h, w);
    for (int k = 0; k < NCOUNT; k++)
        CHECK(w[k] == v[k]);
    EXPECT(MPI_T_pvar_start(s, h[MSENT]), MPI_SUCCESS);
    CHECK_RC(MPI_Sendrecv(buf, 10, MPI_BYTE, rank, 92, buf + 64, 10, MPI_BYTE, rank, 92, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
    read_all(s, h, w);
    CHECK(w[MSENT] == v[MSENT] + 1 && w[MRECV] == v[MRECV]);
    /* readreset, reset, write. */
    unsigned long long u = 0;
    EXPECT(MPI_T_pvar_readreset(s, h[MSENT], &u), MPI_SUCCESS);
    CHECK(u == v[MSENT] + 1);
    EXPECT(MPI_T_pvar_read(s, h[MSENT], &u), MPI_SUCCESS);
    CHECK(u == 0);
    u = 1000;
    EXPECT(MPI_T_pvar_write(s, h[MSENT], &u), MPI_SUCCESS);
    CHECK_RC(MPI_Sendrecv(buf, 10, MPI_BYTE, rank, 93, buf + 64, 10, MPI_BYTE, rank, 93, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
    EXPECT(MPI_T_pvar_read(s, h[MSENT], &u), MPI_SUCCESS);
    CHECK(u == 1001);
    EXPECT(MPI_T_pvar_reset(s, h[MRECV]), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_read(s, h[MRECV], &u), MPI_SUCCESS);
    CHECK(u == 0);
    EXPECT(MPI_T_pvar_session_free(&s), MPI_SUCCESS);
    free(buf);

    /* No failures in this job. */
    int ifail = pvar_index("shmpi_failures_known", MPI_T_PVAR_CLASS_COUNTER);
    EXPECT(MPI_T_pvar_session_create(&s), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_handle_alloc(s, ifail, NULL, &h[0], &count), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_read(s, h[0], &u), MPI_SUCCESS);
    CHECK(u == 0);
    EXPECT(MPI_T_pvar_session_free(&s), MPI_SUCCESS);
}

/* cvars_live checks the control variables' values and writes while MPI
 * runs. */
static void cvars_live(void)
{
    int chunk = read_cvar(cvar_index("shmpi_chunk_size"));
    int eager = read_cvar(cvar_index("shmpi_eager_max"));
    int inl = read_cvar(cvar_index("shmpi_inline_max"));
    CHECK(chunk >= 4096 && chunk % 4096 == 0 && eager <= chunk && inl >= 36 && inl < chunk);
    CHECK(read_cvar(cvar_index("shmpi_sleep_timeout_ms")) == sleep_timeout());
    CHECK(read_cvar(cvar_index("shmpi_ft")) == 0); /* shmrun without --ft */
    /* Constant and read-only variables are never set. */
    EXPECT(write_cvar(cvar_index("shmpi_chunk_size"), 8192), MPI_T_ERR_CVAR_SET_NEVER);
    EXPECT(write_cvar(cvar_index("shmpi_wait_mode"), 1), MPI_T_ERR_CVAR_SET_NEVER);
    /* Writable ones take the value, and give back the old one. */
    int ie = cvar_index("shmpi_eager_max");
    EXPECT(write_cvar(ie, chunk + 1), MPI_T_ERR_INVALID);
    EXPECT(write_cvar(ie, -1), MPI_T_ERR_INVALID);
    EXPECT(write_cvar(ie, 512), MPI_SUCCESS);
    CHECK(read_cvar(ie) == 512);
    /* A 4000-byte message now goes by rendezvous, and still arrives. */
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char a[4000], b[4000];
    for (int i = 0; i < 4000; i++)
        a[i] = (char)(i * 7 + rank);
    CHECK_RC(MPI_Sendrecv(a, 4000, MPI_BYTE, rank ^ 1, 5, b, 4000, MPI_BYTE, rank ^ 1, 5, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
    for (int i = 0; i < 4000; i++)
        CHECK(b[i] == (char)(i * 7 + (rank ^ 1)));
    EXPECT(write_cvar(ie, eager), MPI_SUCCESS);
    int it = cvar_index("shmpi_sleep_timeout_ms");
    EXPECT(write_cvar(it, 0), MPI_T_ERR_INVALID);
    EXPECT(write_cvar(it, 250), MPI_SUCCESS);
    CHECK(read_cvar(it) == 250);
    EXPECT(write_cvar(it, sleep_timeout()), MPI_SUCCESS);
    int iy = cvar_index("shmpi_yield_budget");
    int y = read_cvar(iy);
    CHECK(y >= 16);
    EXPECT(write_cvar(iy, 3), MPI_SUCCESS);
    CHECK(read_cvar(iy) == 3);
    EXPECT(write_cvar(iy, y), MPI_SUCCESS);
    int is = cvar_index("shmpi_spin_us"), mode = read_cvar(cvar_index("shmpi_wait_mode"));
    if (mode == 1) {
        EXPECT(write_cvar(is, 5), MPI_SUCCESS);
        CHECK(read_cvar(is) == 5);
        EXPECT(write_cvar(is, 20), MPI_SUCCESS);
    } else {
        EXPECT(write_cvar(is, 5), MPI_T_ERR_CVAR_SET_NEVER); /* this rank never spins */
    }
}

/* ulfm (shmrun --ft, argument "ulfm"): the last rank dies; each survivor
 * finds out by a receive from it, and then knows one failure. */
static int ulfm(void)
{
    int rank, size, count, provided;
    unsigned long long u = 99;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    EXPECT(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(read_cvar(cvar_index("shmpi_ft")) == 1);
    EXPECT(MPI_T_pvar_session_create(&s), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_handle_alloc(s, pvar_index("shmpi_failures_known", MPI_T_PVAR_CLASS_COUNTER), NULL, &h, &count),
           MPI_SUCCESS);
    EXPECT(MPI_T_pvar_read(s, h, &u), MPI_SUCCESS);
    CHECK(u == 0);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1)
        raise(SIGKILL);
    int x, ec;
    int rc = MPI_Recv(&x, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &ec);
    CHECK(ec == MPIX_ERR_PROC_FAILED);
    EXPECT(MPI_T_pvar_read(s, h, &u), MPI_SUCCESS);
    CHECK(u == 1);
    EXPECT(MPI_T_pvar_session_free(&s), MPI_SUCCESS);
    MPI_Finalize();
    EXPECT(MPI_T_finalize(), MPI_SUCCESS);
    printf("OK\n");
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "ulfm") == 0)
        return ulfm();
    int provided, n;
    /* Before MPI_T_init_thread: not initialized. */
    EXPECT(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    /* Before MPI_Init, twice (reference counted). */
    EXPECT(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    EXPECT(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided), MPI_SUCCESS);
    CHECK(provided == MPI_THREAD_MULTIPLE);
    enumerate(0);
    bad_input();
    source(0);
    CHECK(read_cvar(cvar_index("shmpi_sleep_timeout_ms")) == sleep_timeout());
    EXPECT(write_cvar(cvar_index("shmpi_sleep_timeout_ms"), 50), MPI_T_ERR_CVAR_SET_NOT_NOW);
    /* A session and a started handle that live across MPI_Init. */
    MPI_T_pvar_session s;
    MPI_T_pvar_handle hs;
    int count;
    EXPECT(MPI_T_pvar_session_create(&s), MPI_SUCCESS);
    EXPECT(MPI_T_pvar_handle_alloc(s, pvar_index("shmpi_msgs_sent", MPI_T_PVAR_CLASS_COUNTER), NULL, &hs, &count),
           MPI_SUCCESS);
    EXPECT(MPI_T_pvar_start(s, hs), MPI_SUCCESS);

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size % 2 == 0);
    enumerate(1);
    bad_input();
    source(1);
    traffic(rank);
    cvars_live();
    unsigned long long before, after;
    EXPECT(MPI_T_pvar_read(s, hs, &before), MPI_SUCCESS);
    CHECK(before >= 5); /* the odd ranks send 5 (to themselves and in cvars_live) */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();

    /* After MPI_Finalize: MPI_T goes on, with the values the rank ended
     * with, and nothing can be set any more. */
    EXPECT(MPI_T_pvar_read(s, hs, &after), MPI_SUCCESS);
    CHECK(after == before);
    enumerate(1);
    bad_input();
    source(0);
    EXPECT(write_cvar(cvar_index("shmpi_sleep_timeout_ms"), 50), MPI_T_ERR_CVAR_SET_NEVER);
    EXPECT(MPI_T_finalize(), MPI_SUCCESS);
    EXPECT(MPI_T_cvar_get_num(&n), MPI_SUCCESS); /* one init still open */
    EXPECT(MPI_T_finalize(), MPI_SUCCESS);
    EXPECT(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT(MPI_T_pvar_read(s, hs, &after), MPI_T_ERR_NOT_INITIALIZED);
    EXPECT(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    /* Again after MPI_Finalize; the last finalize freed every session. */
    EXPECT(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    CHECK(provided == MPI_THREAD_SINGLE);
    EXPECT(MPI_T_pvar_read(s, hs, &after), MPI_T_ERR_INVALID_SESSION);
    enumerate(1);
    EXPECT(MPI_T_finalize(), MPI_SUCCESS);
    printf("OK\n");
    fflush(stdout);
    return 0;
}
