/* rseq.c: whether glibc registered restartable sequences for this rank.
 * argv[1] says what the launcher should have chosen: "off" when ranks
 * outnumber cores (shmrun sets GLIBC_TUNABLES=glibc.pthread.rseq=0),
 * "on" otherwise. glibc's __rseq_size is 0 when it did not register. */
#include "check.h"
#include <sys/rseq.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    CHECK(argc > 1);
    int want_on = strcmp(argv[1], "on") == 0;
    printf("rseq_size %u\n", __rseq_size);
    CHECK((__rseq_size != 0) == want_on);
    DONE();
}
