/* MPI_Get_hw_resource_info: keys are hwloc-style URIs with "true" or
 * "false"; the whole machine is always "true"; a rank pinned to a core
 * ("core" argument, shmrun's default binding) is within one core; and
 * each key, given to MPI_Comm_split_type(MPI_COMM_TYPE_HW_GUIDED) as
 * mpi_hw_resource_type, gives a communicator exactly when it is "true". */
#include "check.h"

int main(int argc, char **argv)
{
    MPI_Info hw;
    /* Before MPI_Init too: it only reads this process's hardware. */
    CHECK_RC(MPI_Get_hw_resource_info(&hw));
    MPI_Info_free(&hw);
    MPI_Init(&argc, &argv);
    int pinned = argc > 1 && strcmp(argv[1], "core") == 0;
    CHECK_RC(MPI_Get_hw_resource_info(&hw));
    CHECK(hw != MPI_INFO_NULL);
    int nkeys;
    CHECK_RC(MPI_Info_get_nkeys(hw, &nkeys));
    CHECK(nkeys == 8);
    int sawMachine = 0, sawCore = 0;
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[16];
        int len = sizeof val, flag;
        CHECK_RC(MPI_Info_get_nthkey(hw, i, key));
        CHECK(strncmp(key, "hwloc://", 8) == 0);
        CHECK_RC(MPI_Info_get_string(hw, key, &len, val, &flag));
        CHECK(flag && (strcmp(val, "true") == 0 || strcmp(val, "false") == 0));
        int yes = strcmp(val, "true") == 0;
        if (strcmp(key, "hwloc://Machine") == 0) {
            CHECK(yes);
            sawMachine = 1;
        }
        if (strcmp(key, "hwloc://Core") == 0) {
            CHECK(yes || !pinned);
            sawCore = 1;
        }
        MPI_Info in;
        MPI_Info_create(&in);
        MPI_Info_set(in, "mpi_hw_resource_type", key);
        MPI_Comm c;
        CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, in, &c));
        if ((c != MPI_COMM_NULL) != yes)
            printf("%s is %s but the split gave %s\n", key, val, c == MPI_COMM_NULL ? "nothing" : "a communicator");
        CHECK((c != MPI_COMM_NULL) == yes);
        if (c != MPI_COMM_NULL)
            MPI_Comm_free(&c);
        MPI_Info_free(&in);
    }
    CHECK(sawMachine && sawCore);
    /* A new object each call, which the caller frees. */
    MPI_Info hw2;
    CHECK_RC(MPI_Get_hw_resource_info(&hw2));
    CHECK(hw2 != hw);
    MPI_Info_free(&hw2);
    MPI_Info_free(&hw);
    DONE();
}
