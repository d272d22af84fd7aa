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

#define DONE()                   \
    do {                         \
        printf("OK\n");          \
        fflush(stdout);          \
        MPI_Finalize();          \
        return 0;                \
    } while (0)
