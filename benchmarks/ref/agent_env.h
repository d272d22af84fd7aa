/* agent_env.h: for the reference programs whose MPI processes fork their
 * "ranks" before MPI_Init (forward_floor.c, allreduce_floor.c), the
 * process's number and the job's size from Open MPI's environment
 * (PMIX_RANK under Open MPI 5's prterun as well), read before MPI_Init
 * so that they can fork first. */
#include <stdio.h>
#include <stdlib.h>

/* agent_env sets *node and *size and returns 0, or prints why not (as
 * prog) and returns -1. */
static int agent_env(const char *prog, int *node, int *size)
{
    const char *e = getenv("OMPI_COMM_WORLD_RANK");
    if (!e)
        e = getenv("PMIX_RANK");
    const char *s = getenv("OMPI_COMM_WORLD_SIZE");
    if (!e || !s) {
        fprintf(stderr, "%s: run it under Open MPI's mpirun\n", prog);
        return -1;
    }
    *node = atoi(e);
    *size = atoi(s);
    return 0;
}
