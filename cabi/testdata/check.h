/* check.h: what the test programs share. CHECK reports a failed
 * condition with its line and ends the rank with status 1; DONE prints
 * the rank's OK line. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int check_rank(void)
{
    int r = -1, init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin)
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            printf("FAIL rank %d %s:%d: %s\n", check_rank(), __FILE__, __LINE__, #c); \
            fflush(stdout);                                                       \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

#define CHECK_RC(call) CHECK((call) == MPI_SUCCESS)

/* error_class is the class of the error code rc. */
static inline int error_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* counter_pvar reads the tool interface's counter name (one a program),
 * counted from the first call; MPI_T is initialized. */
static inline unsigned long long counter_pvar(const char *name)
{
    static MPI_T_pvar_session s;
    static MPI_T_pvar_handle h;
    static int ready;
    if (!ready) {
        int i = -1, count = 0;
        CHECK_RC(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &i));
        CHECK_RC(MPI_T_pvar_session_create(&s));
        CHECK_RC(MPI_T_pvar_handle_alloc(s, i, NULL, &h, &count));
        CHECK(count == 1);
        CHECK_RC(MPI_T_pvar_start(s, h));
        ready = 1;
    }
    unsigned long long v = 0;
    CHECK_RC(MPI_T_pvar_read(s, h, &v));
    return v;
}

/* wait_spins tells whether waits spin (shmpi_wait_mode); MPI_T is
 * initialized. */
static inline int wait_spins(void)
{
    int i = -1, count = 0, mode = -1;
    MPI_T_cvar_handle h;
    CHECK_RC(MPI_T_cvar_get_index("shmpi_wait_mode", &i));
    CHECK_RC(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
    CHECK_RC(MPI_T_cvar_read(h, &mode));
    MPI_T_cvar_handle_free(&h);
    CHECK(mode == 0 || mode == 1);
    return mode;
}

#define DONE()                   \
    do {                         \
        printf("OK\n");          \
        fflush(stdout);          \
        MPI_Finalize();          \
        return 0;                \
    } while (0)
