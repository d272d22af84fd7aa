/* Dynamic processes in C: two parents spawn three children of this
 * program (argv[1] "child"), talk to them over the intercommunicator and
 * its merge, meet them again through a published port (accept/connect),
 * disconnect, and find a spawn past the universe refused with
 * MPI_ERR_SPAWN and nothing started. Run with shmrun -n 2 --universe 8. */
#include "check.h"

static int errclass(int rc)
{
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

static void child(void)
{
    int rank, size, rsize, inter;
    MPI_Comm parent, again, merged, conn;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 3);
    CHECK_RC(MPI_Comm_get_parent(&parent));
    CHECK(parent != MPI_COMM_NULL);
    CHECK_RC(MPI_Comm_get_parent(&again));
    CHECK(again == parent);
    MPI_Comm_test_inter(parent, &inter);
    MPI_Comm_remote_size(parent, &rsize);
    CHECK(inter && rsize == 2);
    int v = 0;
    CHECK_RC(MPI_Bcast(&v, 1, MPI_INT, 0, parent));
    CHECK(v == 42);
    /* Each group gets the other's sum: the parents' 1 + 2. */
    int mine = rank + 1, theirs = 0;
    CHECK_RC(MPI_Allreduce(&mine, &theirs, 1, MPI_INT, MPI_SUM, parent));
    CHECK(theirs == 3);
    CHECK_RC(MPI_Intercomm_merge(parent, 1, &merged));
    int mr, ms, one = 1, n = 0;
    MPI_Comm_rank(merged, &mr);
    MPI_Comm_size(merged, &ms);
    CHECK(ms == 5 && mr == 2 + rank);
    CHECK_RC(MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, merged));
    CHECK(n == 5);
    /* The parents publish a port before this barrier. */
    CHECK_RC(MPI_Barrier(merged));
    char port[MPI_MAX_PORT_NAME];
    CHECK_RC(MPI_Lookup_name("shmpi-spawn-test", MPI_INFO_NULL, port));
    CHECK_RC(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &conn));
    MPI_Comm_remote_size(conn, &rsize);
    CHECK(rsize == 2);
    v = 0;
    CHECK_RC(MPI_Bcast(&v, 1, MPI_INT, 1, conn));
    CHECK(v == 7);
    CHECK_RC(MPI_Comm_disconnect(&conn));
    CHECK(conn == MPI_COMM_NULL);
    CHECK_RC(MPI_Comm_free(&merged));
    CHECK_RC(MPI_Comm_disconnect(&parent));
    CHECK_RC(MPI_Comm_get_parent(&again));
    CHECK(again == MPI_COMM_NULL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        child();
        DONE();
    }
    int rank, size, rsize, inter;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2);
    MPI_Comm parent;
    CHECK_RC(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL);

    char *cargv[] = {"child", NULL};
    int codes[3] = {-1, -1, -1};
    MPI_Comm kids, merged, conn;
    CHECK_RC(MPI_Comm_spawn(argv[0], cargv, 3, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &kids, codes));
    CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS && codes[2] == MPI_SUCCESS);
    MPI_Comm_test_inter(kids, &inter);
    MPI_Comm_remote_size(kids, &rsize);
    CHECK(inter && rsize == 3);
    int v = 42;
    CHECK_RC(MPI_Bcast(&v, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, kids));
    int mine = rank + 1, theirs = 0;
    CHECK_RC(MPI_Allreduce(&mine, &theirs, 1, MPI_INT, MPI_SUM, kids));
    CHECK(theirs == 1 + 2 + 3);
    CHECK_RC(MPI_Intercomm_merge(kids, 0, &merged));
    int mr, one = 1, n = 0;
    MPI_Comm_rank(merged, &mr);
    CHECK(mr == rank);
    CHECK_RC(MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, merged));
    CHECK(n == 5);

    /* A port, published under a name the children look up. */
    char port[MPI_MAX_PORT_NAME] = "";
    if (rank == 0) {
        CHECK_RC(MPI_Open_port(MPI_INFO_NULL, port));
        CHECK(strlen(port) > 0);
        CHECK_RC(MPI_Publish_name("shmpi-spawn-test", MPI_INFO_NULL, port));
    }
    CHECK_RC(MPI_Barrier(merged));
    CHECK_RC(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &conn));
    MPI_Comm_remote_size(conn, &rsize);
    CHECK(rsize == 3);
    v = 7;
    CHECK_RC(MPI_Bcast(&v, 1, MPI_INT, rank == 1 ? MPI_ROOT : MPI_PROC_NULL, conn));
    CHECK_RC(MPI_Comm_disconnect(&conn));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 1) {
        /* The port is open but nobody accepts now: the connect gives up
         * after the "timeout" info key's seconds. */
        char p1[MPI_MAX_PORT_NAME];
        MPI_Info to;
        MPI_Comm none1 = MPI_COMM_WORLD;
        CHECK_RC(MPI_Lookup_name("shmpi-spawn-test", MPI_INFO_NULL, p1));
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        CHECK_RC(MPI_Info_create(&to));
        CHECK_RC(MPI_Info_set(to, "timeout", "0.05"));
        double t0 = MPI_Wtime();
        CHECK(errclass(MPI_Comm_connect(p1, to, 0, MPI_COMM_SELF, &none1)) == MPI_ERR_PORT);
        CHECK(none1 == MPI_COMM_NULL && MPI_Wtime() - t0 >= 0.05);
        CHECK_RC(MPI_Info_free(&to));
    }
    CHECK_RC(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK_RC(MPI_Unpublish_name("shmpi-spawn-test", MPI_INFO_NULL, port));
        char again[MPI_MAX_PORT_NAME];
        CHECK(errclass(MPI_Lookup_name("shmpi-spawn-test", MPI_INFO_NULL, again)) == MPI_ERR_NAME);
        CHECK(errclass(MPI_Unpublish_name("shmpi-spawn-test", MPI_INFO_NULL, port)) == MPI_ERR_SERVICE);
        CHECK_RC(MPI_Close_port(port));
    }
    CHECK_RC(MPI_Comm_free(&merged));
    CHECK_RC(MPI_Comm_disconnect(&kids));
    CHECK(kids == MPI_COMM_NULL);

    /* 5 of the universe's 8 slots are taken: 4 more is past it. */
    int many[4] = {-1, -1, -1, -1};
    MPI_Comm none = MPI_COMM_WORLD;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_spawn(argv[0], cargv, 4, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &none, many);
    CHECK(errclass(rc) == MPI_ERR_SPAWN && none == MPI_COMM_NULL);
    if (rank == 0)
        CHECK(many[0] == MPI_ERR_SPAWN && many[3] == MPI_ERR_SPAWN);
    DONE();
}
