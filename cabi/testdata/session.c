/* Sessions (MPI 4.0): Session_init without MPI_Init, the process sets
 * mpi://WORLD and mpi://SELF, their groups and info, communicators and
 * intercommunicators made from groups, session error handlers, two
 * sessions at once; with the argument "mixed", the same beside the world
 * model, with MPI_Finalize before the last Session_finalize. */
#include "check.h"

static int handled;
static MPI_Session handled_on;

static void on_error(MPI_Session *s, int *code, ...)
{
    handled_on = *s;
    handled = *code;
}

static MPI_Comm from_group(MPI_Group g, const char *tag)
{
    MPI_Comm c = MPI_COMM_NULL;
    CHECK_RC(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    return c;
}

int main(int argc, char **argv)
{
    int mixed = argc > 1 && strcmp(argv[1], "mixed") == 0;
    int flag = -1, wrank = -1, wsize = -1;
    if (mixed) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
        MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    }
    MPI_Session s, s2;
    CHECK_RC(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
    CHECK(s != MPI_SESSION_NULL);
    MPI_Initialized(&flag);
    CHECK(flag == mixed);

    /* The process sets. */
    int n = 0, seen_world = 0, seen_self = 0;
    CHECK_RC(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n));
    CHECK(n >= 2);
    for (int i = 0; i < n; i++) {
        char name[64];
        int len = 0;
        CHECK_RC(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL));
        CHECK(len > 1 && len <= (int)sizeof name);
        int len2 = len;
        CHECK_RC(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len2, name));
        CHECK(len2 == len && (int)strlen(name) == len - 1);
        seen_world += strcmp(name, "mpi://WORLD") == 0;
        seen_self += strcmp(name, "mpi://SELF") == 0;
        /* A short buffer gets a truncated, terminated name. */
        char small[4] = {'x', 'x', 'x', 'x'};
        int l3 = 4;
        CHECK_RC(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &l3, small));
        CHECK(l3 == len && small[3] == 0 && strncmp(small, name, 3) == 0);
    }
    CHECK(seen_world == 1 && seen_self == 1);

    MPI_Group wg, sg;
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://WORLD", &wg));
    CHECK_RC(MPI_Group_from_session_pset(s, "mpi://SELF", &sg));
    int size, rank, ssize;
    MPI_Group_size(wg, &size);
    MPI_Group_rank(wg, &rank);
    MPI_Group_size(sg, &ssize);
    CHECK(ssize == 1 && size >= 1 && rank >= 0 && rank < size);
    if (mixed)
        CHECK(rank == wrank && size == wsize);
    MPI_Info pi;
    char v[32];
    CHECK_RC(MPI_Session_get_pset_info(s, "mpi://WORLD", &pi));
    CHECK_RC(MPI_Info_get_string(pi, "mpi_size", &(int){sizeof v}, v, &flag));
    CHECK(flag && atoi(v) == size);
    MPI_Info_free(&pi);
    MPI_Info si;
    CHECK_RC(MPI_Session_get_info(s, &si));
    CHECK_RC(MPI_Info_get_string(si, "mpi_thread_support_level", &(int){sizeof v}, v, &flag));
    CHECK(flag);
    /* MPI 4.0's key for the level provided. */
    CHECK_RC(MPI_Info_get_string(si, "thread_level", &(int){sizeof v}, v, &flag));
    CHECK(flag && strcmp(v, "MPI_THREAD_MULTIPLE") == 0);
    MPI_Info_free(&si);

    /* A communicator of every rank, and of this rank alone. */
    MPI_Comm all = from_group(wg, "org.shmpi.test.all");
    int r2, s2size, sum = -1;
    MPI_Comm_rank(all, &r2);
    MPI_Comm_size(all, &s2size);
    CHECK(r2 == rank && s2size == size);
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, all));
    CHECK(sum == size * (size - 1) / 2);
    /* The errhandler passed is this call's too: a null output pointer is
     * MPI_ERR_ARG, returned, not fatal. */
    int ecls;
    MPI_Error_class(MPI_Comm_create_from_group(sg, "org.shmpi.test.bad", MPI_INFO_NULL, MPI_ERRORS_RETURN, NULL), &ecls);
    CHECK(ecls == MPI_ERR_ARG);
    MPI_Comm one = from_group(sg, "org.shmpi.test.self");
    MPI_Comm_size(one, &s2size);
    CHECK(s2size == 1);
    MPI_Comm_free(&one);

    /* Even and odd ranks: a communicator each (at once, other tags), and
     * an intercommunicator of the two. */
    int *evens = malloc(sizeof(int) * size), *odds = malloc(sizeof(int) * size), ne = 0, no = 0;
    for (int r = 0; r < size; r++) {
        if (r % 2)
            odds[no++] = r;
        else
            evens[ne++] = r;
    }
    MPI_Group eg, og;
    MPI_Group_incl(wg, ne, evens, &eg);
    MPI_Group_incl(wg, no, odds, &og);
    MPI_Comm half = from_group(rank % 2 ? og : eg, rank % 2 ? "odd" : "even");
    int hr, hs;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    CHECK(hr == rank / 2 && hs == (rank % 2 ? no : ne));
    MPI_Comm_free(&half);
    if (size > 1) {
        MPI_Comm inter;
        int mine = rank % 2 ? 1000 + rank : rank, got = -1, rs, isinter;
        /* The evens' leader is their rank 1 (if they have two), the odds'
         * their rank 0. */
        int elead = ne > 1 ? 1 : 0;
        CHECK_RC(MPI_Intercomm_create_from_groups(rank % 2 ? og : eg, rank % 2 ? 0 : elead, rank % 2 ? eg : og,
                                                  rank % 2 ? elead : 0, "org.shmpi.test.inter", MPI_INFO_NULL,
                                                  MPI_ERRORS_RETURN, &inter));
        MPI_Comm_test_inter(inter, &isinter);
        MPI_Comm_remote_size(inter, &rs);
        CHECK(isinter && rs == (rank % 2 ? ne : no));
        /* Allreduce on an intercommunicator: the other group's sum. */
        CHECK_RC(MPI_Allreduce(&mine, &got, 1, MPI_INT, MPI_SUM, inter));
        int want = 0;
        for (int r = 0; r < size; r++)
            if (r % 2 != rank % 2)
                want += r % 2 ? 1000 + r : r;
        CHECK(got == want);
        MPI_Comm_free(&inter);
    }
    free(evens);
    free(odds);
    MPI_Group_free(&eg);
    MPI_Group_free(&og);

    /* Errors go to the session's handler: MPI_ERRORS_RETURN, then a user
     * handler. */
    MPI_Group bad;
    int len = 0;
    CHECK(MPI_Group_from_session_pset(s, "mpi://NOWHERE", &bad) == MPI_ERR_ARG);
    CHECK(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, n, &len, NULL) == MPI_ERR_ARG);
    MPI_Errhandler eh, got;
    CHECK_RC(MPI_Session_create_errhandler(on_error, &eh));
    CHECK_RC(MPI_Session_set_errhandler(s, eh));
    CHECK_RC(MPI_Session_get_errhandler(s, &got));
    CHECK(got == eh);
    CHECK(MPI_Session_get_pset_info(s, "mpi://NOWHERE", &pi) == MPI_ERR_ARG);
    CHECK(handled == MPI_ERR_ARG && handled_on == s);
    handled = 0;
    CHECK_RC(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    CHECK(handled == MPI_ERR_OTHER);
    CHECK(MPI_Session_set_errhandler(s, MPI_ERRHANDLER_NULL) == MPI_ERR_ERRHANDLER);
    MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);

    /* A second session; the first ends, the second still works. */
    CHECK_RC(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2));
    CHECK(s2 != s);
    MPI_Group wg2;
    CHECK_RC(MPI_Group_from_session_pset(s2, "mpi://WORLD", &wg2));
    MPI_Group_free(&wg);
    MPI_Group_free(&sg);
    CHECK_RC(MPI_Session_finalize(&s));
    CHECK(s == MPI_SESSION_NULL);
    if (mixed) {
        /* The world model ends first; the session's communicators live on. */
        printf("OK\n");
        fflush(stdout);
        CHECK_RC(MPI_Finalize());
        MPI_Finalized(&flag);
        CHECK(flag);
    }
    MPI_Comm all2 = from_group(wg2, "org.shmpi.test.all2");
    sum = -1;
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, all2));
    CHECK(sum == size * (size - 1) / 2);
    CHECK_RC(MPI_Barrier(all));
    MPI_Comm_free(&all2);
    MPI_Comm_free(&all);
    MPI_Group_free(&wg2);
    CHECK_RC(MPI_Session_finalize(&s2));
    MPI_Initialized(&flag);
    CHECK(flag == mixed);
    if (!mixed)
        printf("OK\n");
    fflush(stdout);
    return 0;
}
