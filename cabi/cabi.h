/* cabi.h: what the C and Go halves of libmpi_abi.so share. Declarations
 * only: cgo copies this into _cgo_export.h (handles.go explains the
 * handle encoding; fast.c has the inline helpers). */
#ifndef SHMPI_CABI_H
#define SHMPI_CABI_H

#include <stdint.h>
#include "mpi.h"

/* The object an unsupported call raises its error on. */
enum { SHMPI_ON_NONE, SHMPI_ON_COMM, SHMPI_ON_WIN, SHMPI_ON_FILE, SHMPI_ON_SESSION };

/* A communicator's entry, read by MPI_Comm_rank and MPI_Comm_size without
 * entering Go. gen is the generation of the handle that owns the slot
 * (0: free). 16 bytes. */
typedef struct {
    uint32_t gen;
    int32_t rank;
    int32_t size;
    int32_t inter; /* 1 for an intercommunicator (size is the local group's) */
} shmpi_comm_ent;

/* A datatype's entry, read by MPI_Type_size, MPI_Type_get_extent and
 * MPI_Get_count. 48 bytes. */
typedef struct {
    uint32_t gen;
    uint32_t flags;
    int64_t size;
    int64_t lb;
    int64_t extent;
    int64_t true_lb;
    int64_t true_extent;
} shmpi_type_ent;

/* The tables: chunks of SHMPI_CHUNK entries, allocated by Go and never
 * freed or moved, so that C reads them without a lock. */
#define SHMPI_CHUNK 1024
#define SHMPI_MAXCHUNKS 4096
extern shmpi_comm_ent *shmpi_comm_chunks[SHMPI_MAXCHUNKS];
extern shmpi_type_ent *shmpi_type_chunks[SHMPI_MAXCHUNKS];

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
