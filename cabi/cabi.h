/* cabi.h: what the C and Go halves of libmpi_abi.so share. Declarations
 * only: cgo copies this into _cgo_export.h (handles.go explains the
 * handle encoding; fast.c has the inline helpers). */
#ifndef SHMPI_CABI_H
#define SHMPI_CABI_H

#include <stdint.h>
#include "mpi.h"

/* The object an unsupported call raises its error on. */
enum { SHMPI_ON_NONE, SHMPI_ON_COMM, SHMPI_ON_WIN, SHMPI_ON_FILE, SHMPI_ON_SESSION };

/* A communicator's collective state, for the fast collectives
 * (fastcoll.h): addresses of the fields of coll's state (coll/cview.go)
 * and of the communicator's collective lines, filled by Go when it pins
 * the communicator. C memory, 112 bytes. */
typedef struct {
    uint64_t *a, *k, *cur; /* arrive phases, collectives begun; the current one */
    uint8_t *one_way;      /* the last phase was a one-way broadcast's */
    uint32_t *freed, *busy; /* atomic.Bool: freed by the user; nonblocking collectives queued */
    char *hdr, *lines;      /* the header line, member 0's line (64 bytes each) */
    uint32_t *sleepers;     /* members asleep in a collective wait */
    int64_t size, rank;
    int64_t spin, rounds; /* members spin: the dissemination barrier, of rounds rounds */
} shmpi_collview;

/* A communicator's entry, read by MPI_Comm_rank and MPI_Comm_size without
 * entering Go. gen is the generation of the handle that owns the slot
 * (0: free). 32 bytes. */
typedef struct {
    uint32_t gen;
    int32_t rank;
    int32_t size;
    int32_t inter;        /* 1 for an intercommunicator (size is the local group's) */
    char *gocomm;         /* the Go communicator, pinned, for the fast paths (fastpath.h) */
    shmpi_collview *coll; /* or 0: its collectives never take the fast path */
} shmpi_comm_ent;

/* A datatype's entry, read by MPI_Type_size, MPI_Type_get_extent and
 * MPI_Get_count. 48 bytes. */
typedef struct {
    uint32_t gen;
    uint32_t flags; /* SHMPI_TYPE_PLAIN */
    int64_t size;
    int64_t lb;
    int64_t extent;
    int64_t true_lb;
    int64_t true_extent;
} shmpi_type_ent;

/* A committed type whose data is its extent's bytes from the buffer's
 * address: the fast paths move count*size bytes from there. */
#define SHMPI_TYPE_PLAIN 1u

/* The tables: chunks of SHMPI_CHUNK entries, allocated by Go and never
 * freed or moved, so that C reads them without a lock. */
#define SHMPI_CHUNK 1024
#define SHMPI_MAXCHUNKS 4096
extern shmpi_comm_ent *shmpi_comm_chunks[SHMPI_MAXCHUNKS];
extern shmpi_type_ent *shmpi_type_chunks[SHMPI_MAXCHUNKS];

/* The engine's C view (ranks/cview.go, fastpath.h), filled by Go at
 * MPI_Init: addresses of the engine's fields and of shared memory. */
typedef struct {
    uint64_t *tail, *head; /* the ring's words */
    char *units;           /* its units, 32 bytes each */
    uint64_t mask;         /* units - 1 */
} shmpi_cring;

typedef struct {
    shmpi_cring r;
    uint64_t *ann;   /* our announcement word */
    uint64_t anntop; /* an announcement's constant part */
    uint64_t id;     /* our producer id */
    uint64_t cached; /* the consumer's position as we last read it */
} shmpi_cprod;

typedef struct {
    int on; /* the view is filled and agrees with fastpath.h's constants */
    int me;
    uintptr_t owner; /* pthread_self() of the thread whose callbacks own the lock's bias */
    uint32_t *bias_on, *bias_off;
    uint64_t *bias_inside;
    int32_t *want;
    uint8_t *spin, *need_eval, *released, *closed;
    uint64_t *epoch, *seen_epoch;
    uint64_t *rx, *rx_bytes, *rx_at_send, *tx, *tx_bytes;
    int64_t *last_dest, *active_n, *queued_len, *ackq_len;
    uint32_t *starving, *fence_word;
    char *sendq_n;
    uintptr_t sendq_stride;
    uint8_t *gone;
    shmpi_cprod *prods;
    uint32_t **doorbells;
    shmpi_cring inbox;
    uint64_t *inbox_pos, *inbox_published;
    /* byte offsets in a Go communicator */
    uintptr_t c_ctx, c_unexp_n, c_posted_n, c_unusable, c_peer_ctx, c_group, c_to_comm, c_ok_epoch;
    int64_t *yield_budget; /* collective waits' sched_yields before they sleep */
    /* counters of messages and collectives the fast paths moved (tests read them) */
    uint64_t sends, recvs, colls;
} shmpi_fastview;

extern shmpi_fastview shmpi_fast;
void shmpi_fast_own_thread(void);
int shmpi_fast_check(uint64_t seq_shift, uint64_t seq_mask, uint64_t form_shift, uint64_t form_mask, uint64_t hi_shift,
                     uint64_t hi_mask, uint64_t written, uint64_t form_full, uint64_t form_short, uint64_t ann_full,
                     uint64_t ann_pos_mask, uint64_t prefetch_ahead, int inline_max, int short_max, int guard11,
                     int guard_stride, int k_inline, int k_short);

/* Process state, set by Go. */
extern int shmpi_state;    /* 0 before MPI_Init, 1 initialized, 2 finalized */
extern int shmpi_provided; /* the thread level */
extern double shmpi_wtime0;

void shmpi_set_main_thread(void);
void shmpi_line_buffer_stdout(void);

/* Calls into user code, made from Go. */
void shmpi_call_comm_eh(void *fn, uintptr_t *comm, int *code);
void shmpi_call_win_eh(void *fn, uintptr_t *win, int *code);
void shmpi_call_user_op(void *fn, int big, void *in, void *inout, int64_t len, uintptr_t *dt);
int shmpi_call_copy_attr(void *fn, uintptr_t obj, int keyval, void *extra, uintptr_t in, void *out, int *flag);
int shmpi_call_delete_attr(void *fn, uintptr_t obj, int keyval, uintptr_t val, void *extra);
int shmpi_call_grequest_query(void *fn, void *extra, void *status);
int shmpi_call_grequest_free(void *fn, void *extra);
int shmpi_call_grequest_cancel(void *fn, void *extra, int complete);
void shmpi_reduce_c(int op, int kind, void *in, void *inout, int64_t n);

extern const char *const shmpi_unsupported_names[];

#endif
