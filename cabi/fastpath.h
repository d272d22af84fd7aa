/* fastpath.h: MPI_Send and MPI_Recv of a small message without entering
 * Go. One crossing into Go costs about 60 ns warm (docs/c.md), as much
 * as the rest of a small message's path; a C ping-pong crosses twice per
 * message. These mirror the engine's own fast paths for the common case
 * (ranks/protocol.go: sendInline, recvFast; ring/ring.go: claim,
 * PublishGuarded, PeekRecord, Release) over the engine's C view
 * (ranks/cview.go, shmpi_fastview in cabi.h), and return 0, having
 * consumed and changed nothing, whenever the general path is needed:
 * then the caller enters Go as before.
 *
 * The engine lock is taken as its bias owner takes it (ranks/biaslock.go):
 * a plain store of inside, a compiler barrier, a load of off. Only the
 * thread whose callbacks own the bias (shmpi_fast_own_thread) may. */
#ifndef SHMPI_FASTPATH_H
#define SHMPI_FASTPATH_H

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "cabi.h"

/* The ring's encoding and the engine's descriptor layout (ring/ring.go,
 * ranks/wire.go). shmpi_fast_check compares them with Go's at Init and
 * leaves the fast paths off if any differs. */
#define FP_SEQ_SHIFT 29
#define FP_SEQ_MASK ((1ull << 34) - 1)
#define FP_FORM_SHIFT 24
#define FP_FORM_MASK 3ull
#define FP_HI_SHIFT 26
#define FP_HI_MASK (7ull << FP_HI_SHIFT)
#define FP_WRITTEN (1ull << 63)
#define FP_FORM_FULL 0ull
#define FP_FORM_SHORT 1ull
#define FP_FORM_PAD 2ull
#define FP_ANN_FULL (1ull << 37)
#define FP_ANN_POS_MASK ((1ull << 37) - 1)
#define FP_PREFETCH_AHEAD 8
#define FP_ID_MASK ((1ull << 24) - 1)
#define FP_UNIT 32

#define FP_INLINE_MAX 36 /* a full record's inline payload */
#define FP_SHORT_MAX 12  /* a short record's */
#define FP_GUARD11 11    /* the data byte that is guard word 0's top byte */
#define FP_GUARD_STRIDE 32
#define FP_K_INLINE 1
#define FP_K_SHORT 6

/* desc (ranks/wire.go): ctx u32 +0, tag i32 +4, kind u8 +8, flags u8
 * +9, hs u16 +10, len u32 +12, gen u32 +16, data +20. shortDesc: ctx,
 * tag, kind as desc; len u16 +10, data +12. */
#define FP_D_DATA 20
#define FP_S_DATA 12
#define FP_GUARD_OFF 24 /* guard word 0 in a full record's payload */

#define FP_DOORBELL_WAITER (1u << 31)

void shmpi_fast_ring(int w);
void shmpi_fast_relax(void);

static inline void fp_compiler_barrier(void) { __asm__ volatile("" ::: "memory"); }

static inline void fp_pause(void)
{
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* fp_lock takes the engine lock by bias; 0: the caller may not. */
static inline int fp_lock(shmpi_fastview *v)
{
    if ((uintptr_t)pthread_self() != v->owner || !__atomic_load_n(v->bias_on, __ATOMIC_RELAXED) ||
        __atomic_load_n(v->bias_off, __ATOMIC_RELAXED))
        return 0;
    __atomic_store_n(v->bias_inside, 1, __ATOMIC_RELEASE);
    fp_compiler_barrier(); /* the store before the load: membarrier orders the CPUs */
    if (__atomic_load_n(v->bias_off, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(v->bias_inside, 0, __ATOMIC_RELEASE);
        return 0;
    }
    return 1;
}

static inline void fp_unlock(shmpi_fastview *v) { __atomic_store_n(v->bias_inside, 0, __ATOMIC_RELEASE); }

/* fp_comm is the Go communicator of an entry the fast paths may use:
 * an intracommunicator whose members are all on this node, usable, of
 * an engine not closed. Called with the lock held. */
static inline char *fp_comm(shmpi_fastview *v, shmpi_comm_ent *ce)
{
    char *c = ce->gocomm;
    if (!c || ce->inter || *v->closed || *(uint8_t *)(c + v->c_unusable) || *(void **)(c + v->c_peer_ctx))
        return 0;
    return c;
}

static inline int fp_quiet(shmpi_fastview *v, char *c)
{
    return *(int64_t *)(c + v->c_unexp_n) == 0 && *(int64_t *)(c + v->c_posted_n) == 0 && *v->active_n == 0 &&
           *v->queued_len == 0 && *v->ackq_len == 0 && !*v->need_eval &&
           __atomic_load_n(v->epoch, __ATOMIC_ACQUIRE) == *v->seen_epoch;
}

static inline uint64_t *fp_word(shmpi_cring *r, uint64_t pos) { return (uint64_t *)(r->units + (pos & r->mask) * FP_UNIT); }

/* fp_units is how many units a claim of size units at pos takes, with
 * the pad that a full record may need first (Ring.units). */
static inline uint64_t fp_units(shmpi_cring *r, uint64_t pos, uint64_t size)
{
    if (size == 1)
        return 1;
    uint64_t pad = pos & 1;
    uint64_t at = (pos + pad) & r->mask;
    if (at + size > r->mask + 1)
        pad = r->mask + 1 - (pos & r->mask);
    return pad + size;
}

static inline uint64_t fp_control(shmpi_cprod *p, uint64_t pos, uint64_t form)
{
    return FP_WRITTEN | ((pos + 1) & FP_SEQ_MASK) << FP_SEQ_SHIFT | form << FP_FORM_SHIFT | p->id;
}

/* fp_claim claims a record of size units (1 short, 2 full) in p's ring
 * (Producer.claim); it returns the position of its control word, the
 * pad's in *padpos (or ~0), or ~0 when the ring is full. */
static inline uint64_t fp_claim(shmpi_cprod *p, uint64_t size, uint64_t *padpos)
{
    shmpi_cring *r = &p->r;
    for (;;) {
        uint64_t pos = __atomic_load_n(r->tail, __ATOMIC_ACQUIRE);
        uint64_t need = fp_units(r, pos, size);
        if (pos + need - 1 - p->cached > r->mask) {
            p->cached = __atomic_load_n(r->head, __ATOMIC_ACQUIRE);
            if (pos + need - 1 - p->cached > r->mask) {
                if (__atomic_load_n(r->tail, __ATOMIC_ACQUIRE) == pos) {
                    __atomic_store_n(p->ann, 0, __ATOMIC_RELEASE);
                    return ~0ull;
                }
                continue;
            }
        }
        uint64_t ann = p->anntop | (pos & FP_ANN_POS_MASK) | (size == 2 ? FP_ANN_FULL : 0);
        __atomic_store_n(p->ann, ann, __ATOMIC_RELEASE);
        if (__atomic_compare_exchange_n(r->tail, &pos, pos + need, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
            __builtin_prefetch(fp_word(r, pos + FP_PREFETCH_AHEAD), 1);
            uint64_t pad = need - size;
            *padpos = pad ? pos : ~0ull;
            return pos + pad;
        }
        __atomic_store_n(p->ann, 0, __ATOMIC_RELEASE);
    }
}

static inline void fp_copy(char *dst, const char *src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        memcpy(dst + i, src + i, 8);
    for (; i < n; i++)
        dst[i] = src[i];
}

/* fp_send is sendInline: a standard-mode message of n <= FP_INLINE_MAX
 * bytes from p to rank dest of ce's communicator. */
static inline int fp_send(shmpi_comm_ent *ce, const char *p, int64_t n, int dest, int tag)
{
    shmpi_fastview *v = &shmpi_fast;
    if (!v->on || !fp_lock(v))
        return 0;
    char *c = fp_comm(v, ce);
    if (!c)
        goto out;
    int64_t w = (*(int64_t **)(c + v->c_group))[dest];
    if (w == v->me || *(int64_t *)(v->sendq_n + w * v->sendq_stride) != 0 ||
        __atomic_load_n(v->epoch, __ATOMIC_ACQUIRE) != *v->seen_epoch || v->gone[w])
        goto out;
    shmpi_cprod *pr = &v->prods[w];
    uint32_t ctx = *(uint32_t *)(c + v->c_ctx);
    uint64_t padpos;
    /* streamsTo: this rank's last small send went to w too, and it has
     * handled no message since. */
    int streams = 0;
    if (n <= FP_SHORT_MAX) {
        streams = *v->last_dest == w && *v->rx == *v->rx_at_send;
        *v->last_dest = w;
        *v->rx_at_send = *v->rx;
    }
    uint64_t at = fp_claim(pr, streams ? 1 : 2, &padpos);
    if (at == ~0ull)
        goto out;
    uint64_t *word = fp_word(&pr->r, at);
    char *d = (char *)(word + 1);
    *(uint32_t *)d = ctx;
    *(int32_t *)(d + 4) = tag;
    if (streams) {
        d[8] = FP_K_SHORT;
        *(uint16_t *)(d + 10) = (uint16_t)n;
        fp_copy(d + FP_S_DATA, p, n);
        __atomic_store_n(word, fp_control(pr, at, FP_FORM_SHORT), __ATOMIC_RELEASE);
    } else {
        d[8] = FP_K_INLINE;
        d[9] = 0;
        *(uint16_t *)(d + 10) = 0;
        *(uint32_t *)(d + 12) = (uint32_t)n;
        *(uint32_t *)(d + 16) = 0;
        *(uint64_t *)(d + FP_GUARD_OFF) = 0;
        fp_copy(d + FP_D_DATA, p, n);
        /* guardData: bit 63 of a guard word travels in the control word */
        uint64_t hi = 0;
        if (n > FP_GUARD11 && (p[FP_GUARD11] & 0x80)) {
            d[FP_D_DATA + FP_GUARD11] &= 0x7f;
            hi = 1;
        }
        __atomic_store_n(word, fp_control(pr, at, FP_FORM_FULL) | hi << FP_HI_SHIFT, __ATOMIC_RELEASE);
        if (padpos != ~0ull)
            __atomic_store_n(fp_word(&pr->r, padpos),
                             fp_control(pr, padpos, FP_FORM_PAD) | (at - padpos) << FP_HI_SHIFT, __ATOMIC_RELEASE);
    }
    *v->tx += 1;
    *v->tx_bytes += (uint64_t)n;
    fp_unlock(v);
    /* The publish before the doorbell's load (the sleep protocol's Dekker
     * pair): a locked instruction, as the engine's unlockFence. */
    __atomic_fetch_add(v->fence_word, 0, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(v->doorbells[w], __ATOMIC_RELAXED) & FP_DOORBELL_WAITER)
        shmpi_fast_ring((int)w);
    v->sends++;
    return 1;
out:
    fp_unlock(v);
    return 0;
}

/* fp_recv is recvFast: a message for rank src (or any) with tag tag (or
 * any) on ce's communicator, of at most cap bytes, into p; status as
 * the Go path sets it. It polls a while if the inbox is empty. */
static inline int fp_recv(shmpi_comm_ent *ce, char *p, int64_t cap, int src, int tag, MPI_Status *st)
{
    shmpi_fastview *v = &shmpi_fast;
    if (!v->on || !fp_lock(v))
        return 0;
    char *c = fp_comm(v, ce);
    if (!c || !fp_quiet(v, c))
        goto out;
    int64_t w = -1;
    if (src != MPI_ANY_SOURCE) {
        w = (*(int64_t **)(c + v->c_group))[src];
        if (v->gone[w])
            goto out;
    }
    uint32_t ctx = *(uint32_t *)(c + v->c_ctx);
    int limit = *v->spin ? 1024 : 0;
    shmpi_cring *r = &v->inbox;
    for (int i = 0;; i++) {
        uint64_t h = *v->inbox_pos;
        uint64_t *word = fp_word(r, h);
        uint64_t cw = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        if (cw >> FP_SEQ_SHIFT != (FP_WRITTEN | ((h + 1) & FP_SEQ_MASK) << FP_SEQ_SHIFT) >> FP_SEQ_SHIFT) {
            if (i >= limit || __atomic_load_n(v->want, __ATOMIC_RELAXED) != 0 ||
                __atomic_load_n(v->epoch, __ATOMIC_ACQUIRE) != *v->seen_epoch)
                goto out;
            fp_pause();
            continue;
        }
        uint64_t f = cw & (FP_FORM_MASK << FP_FORM_SHIFT | FP_HI_MASK);
        if (f > FP_FORM_SHORT << FP_FORM_SHIFT)
            goto out; /* a pad, a double record, guard bits to restore: Go */
        int isshort = f != 0;
        int64_t prod = (int64_t)(cw & FP_ID_MASK);
        char *d = (char *)(word + 1);
        int mtag = *(int32_t *)(d + 4);
        if (*(uint32_t *)d != ctx || (w >= 0 && prod != w) || (mtag != tag && (tag != MPI_ANY_TAG || mtag < 0)))
            goto out;
        int64_t ln;
        const char *data;
        if (isshort) {
            if (d[8] != FP_K_SHORT)
                goto out;
            ln = *(uint16_t *)(d + 10);
            data = d + FP_S_DATA;
        } else {
            if (d[9] != 0 || d[8] != FP_K_INLINE)
                goto out;
            ln = *(uint32_t *)(d + 12);
            data = d + FP_D_DATA;
        }
        if (ln > cap)
            goto out; /* truncation: Go reports it */
        *v->rx += 1;
        *v->rx_bytes += (uint64_t)ln;
        fp_copy(p, data, ln);
        /* Release: the record consumed; the position published every
         * quarter lap. */
        uint64_t pos = h + (isshort ? 1 : 2);
        *v->inbox_pos = pos;
        if (pos - *v->inbox_published > r->mask / 4) {
            __atomic_store_n(r->head, pos, __ATOMIC_RELEASE);
            *v->inbox_published = pos;
        }
        *v->released = 1;
        int starving = __atomic_load_n(v->starving, __ATOMIC_RELAXED) != 0;
        int source = (*(int32_t **)(c + v->c_to_comm))[prod];
        fp_unlock(v);
        if (st != MPI_STATUS_IGNORE) {
            st->MPI_SOURCE = source;
            st->MPI_TAG = mtag;
            st->MPI_internal[0] = (int)(uint32_t)ln;
            st->MPI_internal[1] = 0;
            st->MPI_internal[2] = 0;
        }
        if (starving)
            shmpi_fast_relax(); /* a sender sleeps waiting for room we may have made */
        v->recvs++;
        return 1;
    }
out:
    fp_unlock(v);
    return 0;
}

#endif
