/* fastcoll.h: MPI_Allreduce of a few bytes and MPI_Barrier without
 * entering Go. A crossing into Go is much of a small collective's cost
 * from C, and most of it when ranks outnumber cores: then every rank
 * sleeps or yields in each collective, each call starts on caches that
 * the other processes of its core filled, and a crossing costs several
 * times its warm price (docs/c.md); osu_allreduce at 8 ranks on 2 cores
 * paid 1.3-1.4 times the Go benchmark's time for its two calls an
 * iteration.
 *
 * These mirror coll's inline paths (coll/shared.go) over the
 * communicator's collective view (coll/cview.go, shmpi_collview): a
 * member writes its contribution in its line, then
 *   - members spin: the dissemination barrier (disseminate), after which
 *     each reduces every line in rank order (reduceLines);
 *   - members sleep: the counter (arriveHold); the member that completes
 *     it reduces every line, leaves the result in the header and stores
 *     done (releaseWith); the others look at done between sched_yields
 *     (the engine's budget of them), and then copy the result (result).
 * A wait that polling or yielding does not end continues in Go
 * (shmpi_fast_coll_await, shmpi_fast_coll_wait), which sleeps and
 * watches for failures; so do the errors, data of another size or a
 * member's invalid arguments (shmpi_fast_coll_read_err,
 * shmpi_fast_coll_result, shmpi_fast_coll_last). Anything else uncommon
 * is refused before the collective begins, and the caller enters Go as
 * before. */
#ifndef SHMPI_FASTCOLL_H
#define SHMPI_FASTCOLL_H

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/futex.h>

#include "fastpath.h"

int shmpi_fast_coll_wait(uintptr_t comm, int kind, int yields);
int shmpi_fast_coll_await(uintptr_t comm, int kind, int64_t r, uint32_t v, uint32_t end);
int shmpi_fast_coll_read_err(uintptr_t comm, void *mine, int64_t n);
int shmpi_fast_coll_result(uintptr_t comm, void *p, int64_t n);
int shmpi_fast_coll_last(uintptr_t comm, void *mine, int64_t n);

/* The collective lines (coll/shared.go): header: arrive u64 +0, done
 * u32 +8, resN u16 +12, resBad u16 +14, res [24] +16, fault u64 +40;
 * member line: seq u32 +0, n [2]u16 +4, data [2][24] +8. */
#define FC_INLINE_MAX 24
#define FC_RES_NONE 0xfffe
#define FC_H_DONE 8
#define FC_H_RESN 12
#define FC_H_RES 16
#define FC_H_FAULT 40
#define FC_L_N 4
#define FC_L_DATA 8

enum { FC_ALLREDUCE, FC_BARRIER };

/* fc_begin is coll's begin for a collective the fast path can run on ce's
 * communicator: it has a view (an intracommunicator of more than one
 * member, within the node), no collective is queued on it,
 * nothing failed, finalized or was revoked since Go last looked (the
 * atomics ext.Check compares), and no transfer of this rank needs the
 * engine's progress while we wait. It counts the collective begun (as
 * begin does) and returns the view, or 0 having changed nothing.
 *
 * Any thread may, without the engine lock (the point-to-point fast paths
 * need it; a rank's first nonblocking collective ends them): the state
 * is the communicator's, which MPI lets one collective at a time use,
 * and of the engine it reads only whether transfers are in flight, a
 * stale answer to which delays them until the wait continues in Go. */
static inline shmpi_collview *fc_begin(shmpi_comm_ent *ce, char **gocomm)
{
    shmpi_fastview *v = &shmpi_fast;
    shmpi_collview *cv = ce->coll;
    if (!cv || !v->on)
        return 0;
    char *c = fp_comm(v, ce);
    if (!c)
        return 0;
    uint64_t ep = __atomic_load_n((uint64_t *)(c + v->c_ok_epoch), __ATOMIC_ACQUIRE);
    if (ep == 0 || ep != __atomic_load_n(v->epoch, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(v->active_n, __ATOMIC_RELAXED) != 0 || __atomic_load_n(v->queued_len, __ATOMIC_RELAXED) != 0 ||
        __atomic_load_n(v->ackq_len, __ATOMIC_RELAXED) != 0 || __atomic_load_n(cv->busy, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(cv->freed, __ATOMIC_ACQUIRE) || *cv->one_way)
        return 0;
    *cv->k += 1;
    *cv->cur = *cv->k;
    __atomic_fetch_add(&v->colls, 1, __ATOMIC_RELAXED);
    *gocomm = c;
    return cv;
}

static inline char *fc_line(shmpi_collview *cv, int64_t r) { return cv->lines + r * 64; }

/* fc_release stores done for phase a, which every waiter polls, and wakes
 * those asleep on it (ext.Release: the store is a full fence, so a
 * sleeper that the count misses sees done). */
static inline void fc_release(shmpi_collview *cv, uint64_t a)
{
    uint32_t *done = (uint32_t *)(cv->hdr + FC_H_DONE);
    __atomic_store_n(done, (uint32_t)a, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(cv->sleepers, __ATOMIC_SEQ_CST) != 0)
        syscall(SYS_futex, done, FUTEX_WAKE, 1 << 30, 0, 0, 0);
}

/* fc_wait waits until phase a is complete: it looks at done, yielding
 * the CPU between looks as the engine's collective waits do, and past the
 * budget of yields, or at a change of the failure table, continues in
 * Go. Returns an MPI error code. */
static inline int fc_wait(shmpi_collview *cv, uint64_t a, MPI_Comm comm, int kind)
{
    shmpi_fastview *v = &shmpi_fast;
    uint32_t *done = (uint32_t *)(cv->hdr + FC_H_DONE);
    int64_t budget = __atomic_load_n(v->yield_budget, __ATOMIC_RELAXED);
    int yields = 0;
    for (;;) {
        /* No spinning between the looks: the ranks sharing this CPU are
         * the ones we wait for. */
        if ((int32_t)(__atomic_load_n(done, __ATOMIC_ACQUIRE) - (uint32_t)a) >= 0)
            return MPI_SUCCESS;
        if (yields >= budget || __atomic_load_n(v->epoch, __ATOMIC_ACQUIRE) != *v->seen_epoch)
            return shmpi_fast_coll_wait((uintptr_t)comm, kind, yields);
        sched_yield();
        yields++;
    }
}

/* fc_disseminate is phase a's dissemination barrier (coll's disseminate,
 * for members that spin): in round k we raise our seq, ring the member
 * 2^k ahead (it may sleep on our seq) and wait for the member 2^k
 * behind, polling as await does and then in Go, which sleeps and watches
 * for failures. c is the Go communicator. Returns an MPI error code. */
#define FC_SPIN_POLLS 2000

static inline int fc_disseminate(shmpi_collview *cv, char *c, uint64_t a, MPI_Comm comm, int kind)
{
    shmpi_fastview *v = &shmpi_fast;
    uint64_t stride = (uint64_t)cv->rounds + 1;
    uint32_t end = (uint32_t)(a * stride);
    uint32_t *me = (uint32_t *)fc_line(cv, cv->rank);
    int64_t *group = *(int64_t **)(c + v->c_group);
    for (int64_t k = 0; k < cv->rounds; k++) {
        uint32_t val = (uint32_t)((a - 1) * stride) + (uint32_t)k + 1;
        __atomic_store_n(me, val, __ATOMIC_SEQ_CST);
        int64_t w = group[(cv->rank + (1ll << k)) % cv->size];
        if (w != v->me && (__atomic_load_n(v->doorbells[w], __ATOMIC_RELAXED) & FP_DOORBELL_WAITER))
            shmpi_fast_ring((int)w);
        int64_t r = (cv->rank - (1ll << k) + cv->size) % cv->size;
        uint32_t *seq = (uint32_t *)fc_line(cv, r);
        int i = 0;
        while ((int32_t)(__atomic_load_n(seq, __ATOMIC_ACQUIRE) - val) < 0) {
            if (++i > FC_SPIN_POLLS) {
                int rc = shmpi_fast_coll_await((uintptr_t)comm, kind, r, val, end);
                if (rc != MPI_SUCCESS)
                    return rc;
                break;
            }
            fp_pause();
        }
    }
    /* With two members there is no one else to wait for once the only
     * round is done, and the store would take the line from the partner
     * while it reads our data. */
    if (cv->rounds > 1)
        __atomic_store_n(me, end, __ATOMIC_SEQ_CST);
    return MPI_SUCCESS;
}

/* fc_fault tells whether a member recorded invalid arguments to the
 * current collective (coll's verdict). */
static inline int fc_fault(shmpi_collview *cv)
{
    uint64_t w = __atomic_load_n((uint64_t *)(cv->hdr + FC_H_FAULT), __ATOMIC_ACQUIRE);
    return (uint32_t)(w >> 32) == (uint32_t)*cv->cur && (w & 0xff) != 0;
}

/* The reductions the fast Allreduce does itself: the predefined ops
 * whose C and Go results agree bit for bit, on the common types. */
enum { FC_F32, FC_F64, FC_I32, FC_I64, FC_U32, FC_U64 };

static inline int fc_kind(MPI_Datatype t)
{
    if (t == MPI_FLOAT)
        return FC_F32;
    if (t == MPI_DOUBLE)
        return FC_F64;
    if (t == MPI_INT || t == MPI_INT32_T)
        return FC_I32;
    if (t == MPI_LONG || t == MPI_LONG_LONG || t == MPI_INT64_T)
        return FC_I64;
    if (t == MPI_UNSIGNED || t == MPI_UINT32_T)
        return FC_U32;
    if (t == MPI_UNSIGNED_LONG || t == MPI_UNSIGNED_LONG_LONG || t == MPI_UINT64_T)
        return FC_U64;
    return -1;
}

/* fc_op: MPI_SUM on every kind (integers wrap, as in Go), MPI_MIN and
 * MPI_MAX on integers (Go's min and max of floats treat NaN and -0 in
 * their own way: Go does those). */
static inline int fc_op(MPI_Op op, int kind)
{
    if (op == MPI_SUM)
        return 0;
    if ((op == MPI_MIN || op == MPI_MAX) && kind >= FC_I32)
        return op == MPI_MIN ? 1 : 2;
    return -1;
}

#define FC_REDUCE(T)                                                                                                   \
    do {                                                                                                               \
        T *x = (T *)acc;                                                                                               \
        const T *y = (const T *)in;                                                                                    \
        for (int64_t i = 0; i < n; i++)                                                                                \
            x[i] = op == 0 ? (T)(x[i] + y[i]) : op == 1 ? (y[i] < x[i] ? y[i] : x[i]) : (y[i] > x[i] ? y[i] : x[i]);   \
    } while (0)

/* fc_reduce combines n elements of in into acc (acc = acc op in). */
static inline void fc_reduce(int kind, int op, char *acc, const char *in, int64_t n)
{
    switch (kind) {
    case FC_F32: FC_REDUCE(float); break;
    case FC_F64: FC_REDUCE(double); break;
    case FC_I32:
        if (op == 0)
            FC_REDUCE(uint32_t);
        else
            FC_REDUCE(int32_t);
        break;
    case FC_I64:
        if (op == 0)
            FC_REDUCE(uint64_t);
        else
            FC_REDUCE(int64_t);
        break;
    case FC_U32: FC_REDUCE(uint32_t); break;
    case FC_U64: FC_REDUCE(uint64_t); break;
    }
}

static const int64_t fc_elsize[] = {4, 8, 4, 8, 4, 8};

/* fc_sizes_agree tells whether every other member's line holds nb bytes
 * of inline data in half h. */
static inline int fc_sizes_agree(shmpi_collview *cv, int h, int64_t nb)
{
    for (int64_t q = 0; q < cv->size; q++)
        if (q != cv->rank && *(uint16_t *)(fc_line(cv, q) + FC_L_N + 2 * h) != (uint16_t)nb)
            return 0;
    return 1;
}

/* fc_reduce_lines reduces the members' data of half h (ours is mine, nb
 * bytes) in rank order into acc, as coll's reduceLines does. */
static inline void fc_reduce_lines(shmpi_collview *cv, int h, const char *mine, char *acc, int64_t nb, int kind, int op)
{
    for (int64_t q = 0; q < cv->size; q++) {
        const char *d = q == cv->rank ? mine : fc_line(cv, q) + FC_L_DATA + h * FC_INLINE_MAX;
        if (q == 0)
            memcpy(acc, d, nb);
        else
            fc_reduce(kind, op, acc, d, nb / fc_elsize[kind]);
    }
}

/* fc_allreduce is MPI_Allreduce of nb <= FC_INLINE_MAX bytes (kind,
 * op: fc_kind, fc_op) on ce's communicator, s and r valid and distinct
 * (s may be MPI_IN_PLACE); 0 if the fast path cannot run it, else 1
 * with the MPI error code in *rc. */
static inline int fc_allreduce(shmpi_comm_ent *ce, MPI_Comm comm, const void *s, void *r, int64_t nb, int kind, int op,
                               int *rc)
{
    char *c;
    shmpi_collview *cv = fc_begin(ce, &c);
    if (!cv)
        return 0;
    char mine[FC_INLINE_MAX], acc[FC_INLINE_MAX];
    memcpy(mine, s == MPI_IN_PLACE ? r : s, nb);
    /* publish: our line's half for the phase */
    uint64_t a = *cv->a + 1;
    int h = (int)(a % 2);
    char *l = fc_line(cv, cv->rank);
    *(uint16_t *)(l + FC_L_N + 2 * h) = (uint16_t)nb;
    memcpy(l + FC_L_DATA + h * FC_INLINE_MAX, mine, nb);
    *cv->a = a;
    if (cv->spin) {
        /* Members spin: after the barrier each reads every line. */
        if ((*rc = fc_disseminate(cv, c, a, comm, FC_ALLREDUCE)) != MPI_SUCCESS)
            return 1;
        if (fc_fault(cv) || !fc_sizes_agree(cv, h, nb)) {
            *rc = shmpi_fast_coll_read_err((uintptr_t)comm, mine, nb);
            return 1;
        }
        fc_reduce_lines(cv, h, mine, acc, nb, kind, op);
        memcpy(r, acc, nb);
        *rc = MPI_SUCCESS;
        return 1;
    }
    if (__atomic_add_fetch((uint64_t *)cv->hdr, 1, __ATOMIC_SEQ_CST) == a * (uint64_t)cv->size) {
        /* The last to arrive: every line is written; reduce them in rank
         * order, as reduceLines does, unless a size differs or a member's
         * arguments were invalid (Go releases the others with the error). */
        if (!fc_sizes_agree(cv, h, nb) || fc_fault(cv)) {
            *rc = shmpi_fast_coll_last((uintptr_t)comm, mine, nb);
            return 1;
        }
        fc_reduce_lines(cv, h, mine, acc, nb, kind, op);
        memcpy(cv->hdr + FC_H_RES, acc, nb);
        *(uint16_t *)(cv->hdr + FC_H_RESN) = (uint16_t)nb;
        fc_release(cv, a);
        memcpy(r, acc, nb);
        *rc = MPI_SUCCESS;
        return 1;
    }
    if ((*rc = fc_wait(cv, a, comm, FC_ALLREDUCE)) != MPI_SUCCESS)
        return 1;
    if (fc_fault(cv) || *(uint16_t *)(cv->hdr + FC_H_RESN) != (uint16_t)nb) {
        *rc = shmpi_fast_coll_result((uintptr_t)comm, r, nb);
        return 1;
    }
    memcpy(r, cv->hdr + FC_H_RES, nb);
    return 1;
}

/* fc_barrier is MPI_Barrier on ce's communicator (coll's arrive: the
 * dissemination barrier, or the counter); 0 if the fast path cannot run it, else 1 with the MPI error
 * code in *rc. */
static inline int fc_barrier(shmpi_comm_ent *ce, MPI_Comm comm, int *rc)
{
    char *c;
    shmpi_collview *cv = fc_begin(ce, &c);
    if (!cv)
        return 0;
    uint64_t a = *cv->a + 1;
    *cv->a = a;
    if (cv->spin) {
        *rc = fc_disseminate(cv, c, a, comm, FC_BARRIER);
        return 1;
    }
    if (__atomic_add_fetch((uint64_t *)cv->hdr, 1, __ATOMIC_SEQ_CST) == a * (uint64_t)cv->size) {
        *(uint16_t *)(cv->hdr + FC_H_RESN) = FC_RES_NONE; /* no reduction's result */
        fc_release(cv, a);
        *rc = MPI_SUCCESS;
        return 1;
    }
    *rc = fc_wait(cv, a, comm, FC_BARRIER);
    return 1;
}

#endif
