/* fast.c: the calls answered without entering Go (one crossing costs
 * 65-90 ns, PLATFORM.md): handle conversion, rank and size, sizes and
 * extents, counts from a status, clocks, versions and process state; and
 * the trampolines through which Go calls user functions. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cabi.h"
#include "_cgo_export.h"
#include "fastpath.h"
#include "fastcoll.h"

shmpi_comm_ent *shmpi_comm_chunks[SHMPI_MAXCHUNKS];
shmpi_type_ent *shmpi_type_chunks[SHMPI_MAXCHUNKS];
int shmpi_state;
int shmpi_provided;
double shmpi_wtime0;

static pthread_t main_thread;

void shmpi_set_main_thread(void) { main_thread = pthread_self(); }

/* Ranks' stdout is a pipe to shmrun, which C fully buffers: a line printed
 * just before a failure (raise(SIGKILL) in a ULFM test) would be lost.
 * mpirun's children write to a terminal or get line buffering; so do
 * these. (glibc allows the change after output; a terminal is line
 * buffered already.) */
void shmpi_line_buffer_stdout(void)
{
    if (!isatty(STDOUT_FILENO))
        setvbuf(stdout, NULL, _IOLBF, BUFSIZ);
}

/* Handle encoding (handles.go): a predefined handle is its ABI value; a
 * user handle is gen<<32 | kind<<24 | slot. */
#define KIND_COMM 1
#define KIND_TYPE 2

static inline int decode(uintptr_t h, uintptr_t base, uintptr_t npre, unsigned kind, uint32_t *slot, uint32_t *gen)
{
    if (h - base < npre) {
        *slot = (uint32_t)(h - base);
        *gen = 1;
        return 1;
    }
    if (((h >> 24) & 0xff) != kind)
        return 0;
    *slot = (uint32_t)(h & 0xffffff);
    *gen = (uint32_t)(h >> 32);
    return *slot / SHMPI_CHUNK < SHMPI_MAXCHUNKS;
}

static inline shmpi_comm_ent *comm_ent(MPI_Comm c)
{
    uint32_t slot, gen;
    if (!decode((uintptr_t)c, 0x100, 8, KIND_COMM, &slot, &gen))
        return 0;
    shmpi_comm_ent *ch = __atomic_load_n(&shmpi_comm_chunks[slot / SHMPI_CHUNK], __ATOMIC_ACQUIRE);
    if (!ch)
        return 0;
    shmpi_comm_ent *e = &ch[slot % SHMPI_CHUNK];
    return __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE) == gen ? e : 0;
}

static inline shmpi_type_ent *type_ent(MPI_Datatype t)
{
    uint32_t slot, gen;
    if (!decode((uintptr_t)t, 0x200, 0x100, KIND_TYPE, &slot, &gen))
        return 0;
    shmpi_type_ent *ch = __atomic_load_n(&shmpi_type_chunks[slot / SHMPI_CHUNK], __ATOMIC_ACQUIRE);
    if (!ch)
        return 0;
    shmpi_type_ent *e = &ch[slot % SHMPI_CHUNK];
    return __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE) == gen ? e : 0;
}

static int raise_comm(MPI_Comm c, int code, const char *fn)
{
    return shmpi_raise(SHMPI_ON_COMM, (uintptr_t)c, code, (char *)fn);
}

static int raise_none(int code, const char *fn) { return shmpi_raise(SHMPI_ON_NONE, 0, code, (char *)fn); }

int PMPI_Comm_rank(MPI_Comm comm, int *rank)
{
    shmpi_comm_ent *e = comm_ent(comm);
    if (!e)
        return raise_comm(comm, MPI_ERR_COMM, "MPI_Comm_rank");
    if (!rank)
        return raise_comm(comm, MPI_ERR_ARG, "MPI_Comm_rank");
    *rank = e->rank;
    return MPI_SUCCESS;
}

int PMPI_Comm_size(MPI_Comm comm, int *size)
{
    shmpi_comm_ent *e = comm_ent(comm);
    if (!e)
        return raise_comm(comm, MPI_ERR_COMM, "MPI_Comm_size");
    if (!size)
        return raise_comm(comm, MPI_ERR_ARG, "MPI_Comm_size");
    *size = e->size;
    return MPI_SUCCESS;
}

int PMPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    shmpi_comm_ent *e = comm_ent(comm);
    if (!e)
        return raise_comm(comm, MPI_ERR_COMM, "MPI_Comm_test_inter");
    if (!flag)
        return raise_comm(comm, MPI_ERR_ARG, "MPI_Comm_test_inter");
    *flag = e->inter;
    return MPI_SUCCESS;
}

double PMPI_Wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double PMPI_Wtick(void)
{
    struct timespec ts;
    if (clock_getres(CLOCK_MONOTONIC, &ts) != 0 || (ts.tv_sec == 0 && ts.tv_nsec == 0))
        return 1e-9;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sizes and extents. */

#define TYPE_OR_RAISE(e, t, fn)                        \
    shmpi_type_ent *e = type_ent(t);                   \
    if (!e)                                            \
        return raise_none(MPI_ERR_TYPE, fn);

int PMPI_Type_size(MPI_Datatype datatype, int *size)
{
    TYPE_OR_RAISE(e, datatype, "MPI_Type_size");
    if (!size)
        return raise_none(MPI_ERR_ARG, "MPI_Type_size");
    *size = e->size > INT_MAX ? MPI_UNDEFINED : (int)e->size;
    return MPI_SUCCESS;
}

int PMPI_Type_size_c(MPI_Datatype datatype, MPI_Count *size)
{
    TYPE_OR_RAISE(e, datatype, "MPI_Type_size_c");
    if (!size)
        return raise_none(MPI_ERR_ARG, "MPI_Type_size_c");
    *size = e->size;
    return MPI_SUCCESS;
}

int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    TYPE_OR_RAISE(e, datatype, "MPI_Type_get_extent");
    if (!lb || !extent)
        return raise_none(MPI_ERR_ARG, "MPI_Type_get_extent");
    *lb = e->lb;
    *extent = e->extent;
    return MPI_SUCCESS;
}

int PMPI_Type_get_extent_c(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    TYPE_OR_RAISE(e, datatype, "MPI_Type_get_extent_c");
    if (!lb || !extent)
        return raise_none(MPI_ERR_ARG, "MPI_Type_get_extent_c");
    *lb = e->lb;
    *extent = e->extent;
    return MPI_SUCCESS;
}

int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    TYPE_OR_RAISE(e, datatype, "MPI_Type_get_true_extent");
    if (!true_lb || !true_extent)
        return raise_none(MPI_ERR_ARG, "MPI_Type_get_true_extent");
    *true_lb = e->true_lb;
    *true_extent = e->true_extent;
    return MPI_SUCCESS;
}

int PMPI_Type_get_true_extent_c(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    TYPE_OR_RAISE(e, datatype, "MPI_Type_get_true_extent_c");
    if (!true_lb || !true_extent)
        return raise_none(MPI_ERR_ARG, "MPI_Type_get_true_extent_c");
    *true_lb = e->true_lb;
    *true_extent = e->true_extent;
    return MPI_SUCCESS;
}

int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size) { return PMPI_Type_size_c(datatype, size); }

int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    return PMPI_Type_get_extent_c(datatype, lb, extent);
}

int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    return PMPI_Type_get_true_extent_c(datatype, true_lb, true_extent);
}

/* The status keeps the received bytes in MPI_internal[0] (low half) and
 * [1] (high half). */
static inline int64_t status_bytes(const MPI_Status *st)
{
    return (int64_t)(((uint64_t)(uint32_t)st->MPI_internal[1] << 32) | (uint32_t)st->MPI_internal[0]);
}

static int64_t count_of(const MPI_Status *st, const shmpi_type_ent *e)
{
    int64_t bytes = status_bytes(st);
    if (e->size == 0)
        return 0;
    if (bytes % e->size != 0)
        return MPI_UNDEFINED;
    return bytes / e->size;
}

int PMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    TYPE_OR_RAISE(e, datatype, "MPI_Get_count");
    if (!status || !count)
        return raise_none(MPI_ERR_ARG, "MPI_Get_count");
    int64_t n = count_of(status, e);
    *count = n > INT_MAX ? MPI_UNDEFINED : (int)n;
    return MPI_SUCCESS;
}

int PMPI_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    TYPE_OR_RAISE(e, datatype, "MPI_Get_count_c");
    if (!status || !count)
        return raise_none(MPI_ERR_ARG, "MPI_Get_count_c");
    *count = count_of(status, e);
    return MPI_SUCCESS;
}

/* elements_bytes is the size of the first count basic elements of a
 * buffer of datatype, so that Get_elements then reports count (an element
 * of a derived or pair type holds several). Not a hot path: Go answers. */
static int64_t elements_bytes(MPI_Datatype datatype, int64_t count)
{
    return shmpi_elements_bytes((uintptr_t)datatype, count);
}

int PMPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)
{
    TYPE_OR_RAISE(e, datatype, "MPI_Status_set_elements");
    if (!status || count < 0)
        return raise_none(MPI_ERR_ARG, "MPI_Status_set_elements");
    int64_t bytes = elements_bytes(datatype, count);
    status->MPI_internal[0] = (int)(uint32_t)bytes;
    status->MPI_internal[1] = (int)(uint32_t)((uint64_t)bytes >> 32);
    return MPI_SUCCESS;
}

int PMPI_Status_set_elements_c(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    TYPE_OR_RAISE(e, datatype, "MPI_Status_set_elements_c");
    if (!status || count < 0)
        return raise_none(MPI_ERR_ARG, "MPI_Status_set_elements_c");
    int64_t bytes = elements_bytes(datatype, count);
    status->MPI_internal[0] = (int)(uint32_t)bytes;
    status->MPI_internal[1] = (int)(uint32_t)((uint64_t)bytes >> 32);
    return MPI_SUCCESS;
}

int PMPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    return PMPI_Status_set_elements_c(status, datatype, count);
}

int PMPI_Status_set_cancelled(MPI_Status *status, int flag)
{
    if (!status)
        return raise_none(MPI_ERR_ARG, "MPI_Status_set_cancelled");
    status->MPI_internal[2] = flag != 0;
    return MPI_SUCCESS;
}

int PMPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    if (!status || !flag)
        return raise_none(MPI_ERR_ARG, "MPI_Test_cancelled");
    *flag = status->MPI_internal[2] != 0;
    return MPI_SUCCESS;
}

int PMPI_Status_get_source(const MPI_Status *status, int *source)
{
    if (!status || !source)
        return raise_none(MPI_ERR_ARG, "MPI_Status_get_source");
    *source = status->MPI_SOURCE;
    return MPI_SUCCESS;
}

int PMPI_Status_set_source(MPI_Status *status, int source)
{
    if (!status)
        return raise_none(MPI_ERR_ARG, "MPI_Status_set_source");
    status->MPI_SOURCE = source;
    return MPI_SUCCESS;
}

int PMPI_Status_get_tag(const MPI_Status *status, int *tag)
{
    if (!status || !tag)
        return raise_none(MPI_ERR_ARG, "MPI_Status_get_tag");
    *tag = status->MPI_TAG;
    return MPI_SUCCESS;
}

int PMPI_Status_set_tag(MPI_Status *status, int tag)
{
    if (!status)
        return raise_none(MPI_ERR_ARG, "MPI_Status_set_tag");
    status->MPI_TAG = tag;
    return MPI_SUCCESS;
}

int PMPI_Status_get_error(const MPI_Status *status, int *error)
{
    if (!status || !error)
        return raise_none(MPI_ERR_ARG, "MPI_Status_get_error");
    *error = status->MPI_ERROR;
    return MPI_SUCCESS;
}

int PMPI_Status_set_error(MPI_Status *status, int error)
{
    if (!status)
        return raise_none(MPI_ERR_ARG, "MPI_Status_set_error");
    status->MPI_ERROR = error;
    return MPI_SUCCESS;
}

/* Process state. */

int PMPI_Initialized(int *flag)
{
    if (!flag)
        return raise_none(MPI_ERR_ARG, "MPI_Initialized");
    *flag = __atomic_load_n(&shmpi_state, __ATOMIC_ACQUIRE) >= 1;
    return MPI_SUCCESS;
}

int PMPI_Finalized(int *flag)
{
    if (!flag)
        return raise_none(MPI_ERR_ARG, "MPI_Finalized");
    *flag = __atomic_load_n(&shmpi_state, __ATOMIC_ACQUIRE) == 2;
    return MPI_SUCCESS;
}

int PMPI_Query_thread(int *provided)
{
    if (!provided)
        return raise_none(MPI_ERR_ARG, "MPI_Query_thread");
    *provided = shmpi_provided;
    return MPI_SUCCESS;
}

int PMPI_Is_thread_main(int *flag)
{
    if (!flag)
        return raise_none(MPI_ERR_ARG, "MPI_Is_thread_main");
    *flag = pthread_equal(pthread_self(), main_thread) != 0;
    return MPI_SUCCESS;
}

int PMPI_Get_version(int *version, int *subversion)
{
    if (!version || !subversion)
        return raise_none(MPI_ERR_ARG, "MPI_Get_version");
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

int PMPI_Abi_get_version(int *abi_major, int *abi_minor)
{
    if (!abi_major || !abi_minor)
        return raise_none(MPI_ERR_ARG, "MPI_Abi_get_version");
    *abi_major = MPI_ABI_VERSION;
    *abi_minor = MPI_ABI_SUBVERSION;
    return MPI_SUCCESS;
}

int PMPI_Get_library_version(char *version, int *resultlen)
{
    static const char v[] = "shmpi 0.1.0: MPI 5.0 standard ABI 1.0 over shared memory on one node, with ULFM";
    if (!version || !resultlen)
        return raise_none(MPI_ERR_ARG, "MPI_Get_library_version");
    memcpy(version, v, sizeof v);
    *resultlen = (int)sizeof v - 1;
    return MPI_SUCCESS;
}

int PMPI_Get_processor_name(char *name, int *resultlen)
{
    if (!name || !resultlen)
        return raise_none(MPI_ERR_ARG, "MPI_Get_processor_name");
    if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0)
        strcpy(name, "localhost");
    name[MPI_MAX_PROCESSOR_NAME - 1] = 0;
    *resultlen = (int)strlen(name);
    return MPI_SUCCESS;
}

int PMPI_Pcontrol(const int level, ...)
{
    (void)level;
    return MPI_SUCCESS;
}

MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp) { return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp); }
MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2) { return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2); }

int PMPI_Get_address(const void *location, MPI_Aint *address)
{
    if (!address)
        return raise_none(MPI_ERR_ARG, "MPI_Get_address");
    *address = (MPI_Aint)(uintptr_t)location;
    return MPI_SUCCESS;
}

/* Handles as ints (MPI_Comm_toint and friends). A predefined handle is
 * its own value; a user handle's int is kind<<24 | slot, and the handle
 * back is rebuilt with the slot's current generation, which Go keeps in
 * shmpi_gen_of. */
#define TOINT(T, name)                                                  \
    int PMPI_##name##_toint(MPI_##T h) { return (int)((uintptr_t)h & 0xffffffff); } \
    MPI_##T PMPI_##name##_fromint(int i)                                \
    {                                                                   \
        uintptr_t u = (uintptr_t)(uint32_t)i;                           \
        if (u < 0x1000)                                                 \
            return (MPI_##T)u;                                          \
        return (MPI_##T)(((uintptr_t)shmpi_gen_of((int)(u >> 24), (int)(u & 0xffffff)) << 32) | u); \
    }
TOINT(Comm, Comm)
TOINT(Errhandler, Errhandler)
TOINT(File, File)
TOINT(Group, Group)
TOINT(Info, Info)
TOINT(Message, Message)
TOINT(Op, Op)
TOINT(Request, Request)
TOINT(Session, Session)
TOINT(Datatype, Type)
TOINT(Win, Win)

/* Trampolines: Go calls user code through these. */

void shmpi_call_comm_eh(void *fn, uintptr_t *comm, int *code)
{
    ((MPI_Comm_errhandler_function *)fn)((MPI_Comm *)comm, code);
}

void shmpi_call_win_eh(void *fn, uintptr_t *win, int *code)
{
    ((MPI_Win_errhandler_function *)fn)((MPI_Win *)win, code);
}

void shmpi_call_user_op(void *fn, int big, void *in, void *inout, int64_t len, uintptr_t *dt)
{
    if (big) {
        MPI_Count n = len;
        ((MPI_User_function_c *)fn)(in, inout, &n, (MPI_Datatype *)dt);
    } else {
        int n = (int)len;
        ((MPI_User_function *)fn)(in, inout, &n, (MPI_Datatype *)dt);
    }
}

int shmpi_call_copy_attr(void *fn, uintptr_t obj, int keyval, void *extra, uintptr_t in, void *out, int *flag)
{
    return ((MPI_Comm_copy_attr_function *)fn)((MPI_Comm)obj, keyval, extra, (void *)in, out, flag);
}

int shmpi_call_delete_attr(void *fn, uintptr_t obj, int keyval, uintptr_t val, void *extra)
{
    return ((MPI_Comm_delete_attr_function *)fn)((MPI_Comm)obj, keyval, (void *)val, extra);
}

int shmpi_call_grequest_query(void *fn, void *extra, void *status)
{
    return ((MPI_Grequest_query_function *)fn)(extra, (MPI_Status *)status);
}

int shmpi_call_grequest_free(void *fn, void *extra) { return ((MPI_Grequest_free_function *)fn)(extra); }

int shmpi_call_grequest_cancel(void *fn, void *extra, int complete)
{
    return ((MPI_Grequest_cancel_function *)fn)(extra, complete);
}

/* Point-to-point's fast paths (fastpath.h). */

shmpi_fastview shmpi_fast;

void shmpi_fast_own_thread(void) { shmpi_fast.owner = (uintptr_t)pthread_self(); }

int shmpi_fast_check(uint64_t seq_shift, uint64_t seq_mask, uint64_t form_shift, uint64_t form_mask, uint64_t hi_shift,
                     uint64_t hi_mask, uint64_t written, uint64_t form_full, uint64_t form_short, uint64_t ann_full,
                     uint64_t ann_pos_mask, uint64_t prefetch_ahead, int inline_max, int short_max, int guard11,
                     int guard_stride, int k_inline, int k_short)
{
    return seq_shift == FP_SEQ_SHIFT && seq_mask == FP_SEQ_MASK && form_shift == FP_FORM_SHIFT &&
           form_mask == FP_FORM_MASK && hi_shift == FP_HI_SHIFT && hi_mask == FP_HI_MASK && written == FP_WRITTEN &&
           form_full == FP_FORM_FULL && form_short == FP_FORM_SHORT && ann_full == FP_ANN_FULL &&
           ann_pos_mask == FP_ANN_POS_MASK && prefetch_ahead == FP_PREFETCH_AHEAD && inline_max == FP_INLINE_MAX &&
           short_max == FP_SHORT_MAX && guard11 == FP_GUARD11 && guard_stride == FP_GUARD_STRIDE &&
           k_inline == FP_K_INLINE && k_short == FP_K_SHORT;
}

/* fp_buffer is the data of count elements of datatype at buf when the
 * fast paths can move it (a plain type, at most FP_INLINE_MAX bytes for
 * a send); its length in *n. */
static inline int fp_buffer(MPI_Datatype datatype, int count, int64_t max, int64_t *n)
{
    shmpi_type_ent *t = type_ent(datatype);
    if (!t || !(t->flags & SHMPI_TYPE_PLAIN) || count < 0 || (count > 0 && t->size > max / count))
        return 0;
    *n = (int64_t)count * t->size;
    return *n <= max;
}

int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    int64_t n;
    shmpi_comm_ent *ce;
    if (shmpi_state == 1 && (ce = comm_ent(comm)) && (unsigned)dest < (unsigned)ce->size && tag >= 0 &&
        fp_buffer(datatype, count, FP_INLINE_MAX, &n) && (buf || n == 0) && fp_send(ce, buf, n, dest, tag))
        return MPI_SUCCESS;
    return shmpi_MPI_Send((void *)buf, count, (uintptr_t)datatype, dest, tag, (uintptr_t)comm);
}

int PMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    int64_t n;
    shmpi_comm_ent *ce;
    if (shmpi_state == 1 && (ce = comm_ent(comm)) && ((unsigned)source < (unsigned)ce->size || source == MPI_ANY_SOURCE) &&
        (tag >= 0 || tag == MPI_ANY_TAG) && fp_buffer(datatype, count, INT64_MAX / 2, &n) && (buf || n == 0) &&
        fp_recv(ce, buf, n, source, tag, status))
        return MPI_SUCCESS;
    return shmpi_MPI_Recv(buf, count, (uintptr_t)datatype, source, tag, (uintptr_t)comm, status);
}

/* fc_try_allreduce runs MPI_Allreduce on the fast path if it can (1, the
 * code in *rc), else returns 0. */
static inline int fc_try_allreduce(const void *sendbuf, void *recvbuf, int64_t count, MPI_Datatype datatype, MPI_Op op,
                                   MPI_Comm comm, int *rc)
{
    shmpi_comm_ent *ce;
    shmpi_type_ent *t;
    int kind, o;
    return shmpi_state == 1 && (ce = comm_ent(comm)) && ce->coll && count > 0 && (kind = fc_kind(datatype)) >= 0 &&
           (o = fc_op(op, kind)) >= 0 && (t = type_ent(datatype)) && t->size == fc_elsize[kind] &&
           count <= FC_INLINE_MAX / t->size && sendbuf && recvbuf && recvbuf != MPI_IN_PLACE && sendbuf != recvbuf &&
           fc_allreduce(ce, comm, sendbuf, recvbuf, count * t->size, kind, o, rc);
}

int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int rc;
    if (fc_try_allreduce(sendbuf, recvbuf, count, datatype, op, comm, &rc))
        return rc;
    return shmpi_MPI_Allreduce((void *)sendbuf, recvbuf, count, (uintptr_t)datatype, (uintptr_t)op, (uintptr_t)comm);
}

int PMPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                     MPI_Comm comm)
{
    int rc;
    if (fc_try_allreduce(sendbuf, recvbuf, count, datatype, op, comm, &rc))
        return rc;
    return shmpi_MPI_Allreduce_c((void *)sendbuf, recvbuf, count, (uintptr_t)datatype, (uintptr_t)op, (uintptr_t)comm);
}

int PMPI_Barrier(MPI_Comm comm)
{
    shmpi_comm_ent *ce;
    int rc;
    if (shmpi_state == 1 && (ce = comm_ent(comm)) && ce->coll && fc_barrier(ce, comm, &rc))
        return rc;
    return shmpi_MPI_Barrier((uintptr_t)comm);
}

#include "alias_gen.h"
