/* Hints, attributes and names of communicators, datatypes and windows:
 * Comm_set_info/get_info, dup_with_info, idup with attribute copies,
 * split_type by hardware, datatype and window keyvals, window info,
 * asserts, attributes, names and shared_query(MPI_PROC_NULL). */
#include "check.h"

static int copies, deletes;

static int copy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)extra;
    copies++;
    *(long *)out = (long)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int k, void *v, void *extra)
{
    (void)c, (void)k, (void)v, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static int type_copy(MPI_Datatype t, int k, void *extra, void *in, void *out, int *flag)
{
    (void)t, (void)k, (void)extra;
    copies++;
    *(long *)out = (long)in * 2;
    *flag = 1;
    return MPI_SUCCESS;
}

static int type_delete(MPI_Datatype t, int k, void *v, void *extra)
{
    (void)t, (void)k, (void)v, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static int win_delete(MPI_Win w, int k, void *v, void *extra)
{
    (void)w, (void)k, (void)extra;
    deletes += (int)(long)v;
    return MPI_SUCCESS;
}

static int info_is(MPI_Info in, const char *key, const char *want)
{
    char v[MPI_MAX_INFO_VAL];
    int flag = 0;
    MPI_Info_get(in, key, MPI_MAX_INFO_VAL - 1, v, &flag);
    return flag && strcmp(v, want) == 0;
}

int main(int argc, char **argv)
{
    int rank, size, flag, e, cls;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* MPI_INFO_ENV, and the initial error handler (shmrun
     * -initial-errhandler mpi_errors_return with argument "return"). */
    int ret = argc > 1 && strcmp(argv[1], "return") == 0;
    char maxp[16];
    snprintf(maxp, sizeof maxp, "%d", size);
    CHECK(info_is(MPI_INFO_ENV, "maxprocs", maxp) && info_is(MPI_INFO_ENV, "thread_level", "MPI_THREAD_SINGLE"));
    char av[64];
    MPI_Info_get(MPI_INFO_ENV, "argv", sizeof av - 1, av, &flag);
    CHECK(ret ? flag && strcmp(av, "return") == 0 : !flag);
    MPI_Info_get(MPI_INFO_ENV, "command", sizeof av - 1, av, &flag);
    CHECK(flag && strstr(av, "objs") != NULL);
    CHECK(info_is(MPI_INFO_ENV, "mpi_initial_errhandler", ret ? "mpi_errors_return" : "mpi_errors_are_fatal"));
    MPI_Errhandler initial;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &initial);
    CHECK(initial == (ret ? MPI_ERRORS_RETURN : MPI_ERRORS_ARE_FATAL));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Communicator hints: dup_with_info sets them, set_info changes
     * them, get_info reads them back; plain dup does not copy them. */
    MPI_Info in, got;
    MPI_Info_create(&in);
    MPI_Info_set(in, "mpi_assert_no_any_tag", "true");
    MPI_Info_set(in, "some_other_key", "kept?");
    MPI_Comm d, d2, d3;
    CHECK_RC(MPI_Comm_dup_with_info(MPI_COMM_WORLD, in, &d));
    CHECK_RC(MPI_Comm_get_info(d, &got));
    CHECK(info_is(got, "mpi_assert_no_any_tag", "true") && info_is(got, "mpi_assert_no_any_source", "false"));
    MPI_Info_free(&got);
    MPI_Info_set(in, "mpi_assert_no_any_tag", "false");
    MPI_Info_set(in, "mpi_assert_exact_length", "true");
    CHECK_RC(MPI_Comm_set_info(d, in));
    CHECK_RC(MPI_Comm_get_info(d, &got));
    CHECK(info_is(got, "mpi_assert_no_any_tag", "false") && info_is(got, "mpi_assert_exact_length", "true"));
    MPI_Info_free(&got);
    CHECK_RC(MPI_Comm_dup(d, &d2));
    CHECK_RC(MPI_Comm_get_info(d2, &got));
    CHECK(info_is(got, "mpi_assert_exact_length", "false"));
    MPI_Info_free(&got);
    MPI_Comm_free(&d2);
    e = MPI_Comm_set_info(d, (MPI_Info)(uintptr_t)0x12345);
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_INFO);
    /* Info errors are MPI's own classes. */
    e = MPI_Info_delete(in, "not_there");
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_INFO_NOKEY);
    e = MPI_Info_set(in, "", "v");
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_INFO_KEY);

    /* Idup: the copy callbacks run, the new communicator arrives at
     * completion; idup_with_info sets hints. */
    int kv;
    CHECK_RC(MPI_Comm_create_keyval(copy_fn, delete_fn, &kv, NULL));
    CHECK_RC(MPI_Comm_set_attr(d, kv, (void *)41L));
    MPI_Request r;
    CHECK_RC(MPI_Comm_idup(d, &d2, &r));
    CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    long *v;
    CHECK_RC(MPI_Comm_get_attr(d2, kv, &v, &flag));
    CHECK(flag && (long)v == 42 && copies == 1);
    int sum = -1;
    CHECK_RC(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, d2));
    CHECK(sum == size * (size - 1) / 2);
    CHECK_RC(MPI_Comm_idup_with_info(MPI_COMM_WORLD, in, &d3, &r));
    CHECK_RC(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK_RC(MPI_Comm_get_info(d3, &got));
    CHECK(info_is(got, "mpi_assert_exact_length", "true"));
    MPI_Info_free(&got);
    MPI_Comm_free(&d3);
    MPI_Comm_free(&d2);
    CHECK(deletes == 1);
    MPI_Comm_free(&d);
    CHECK(deletes == 2);
    MPI_Comm_free_keyval(&kv);

    /* Split by hardware: the whole machine is every rank; an unknown
     * resource type gives MPI_COMM_NULL; the unguided split gives a strict
     * subset, or MPI_COMM_NULL, and says which level it chose. */
    MPI_Info hw;
    MPI_Info_create(&hw);
    MPI_Info_set(hw, "mpi_hw_resource_type", "Machine");
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, hw, &d));
    int ds;
    MPI_Comm_size(d, &ds);
    CHECK(ds == size);
    MPI_Comm_free(&d);
    MPI_Info_set(hw, "mpi_hw_resource_type", "no-such-thing");
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, hw, &d));
    CHECK(d == MPI_COMM_NULL);
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, rank, MPI_INFO_NULL, &d));
    if (d != MPI_COMM_NULL) {
        MPI_Comm_size(d, &ds);
        CHECK(ds < size);
        CHECK_RC(MPI_Comm_get_info(d, &got));
        char lvl[MPI_MAX_INFO_VAL];
        MPI_Info_get(got, "mpi_hw_resource_type", MPI_MAX_INFO_VAL - 1, lvl, &flag);
        CHECK(flag);
        MPI_Info_free(&got);
        MPI_Comm_free(&d);
    }
    MPI_Info_free(&hw);
    MPI_Info_free(&in);

    /* Datatype attributes: copied by Type_dup, deleted by Type_free. */
    copies = deletes = 0;
    int tk;
    MPI_Datatype t, t2;
    MPI_Type_contiguous(2, MPI_INT, &t);
    CHECK_RC(MPI_Type_create_keyval(type_copy, type_delete, &tk, NULL));
    CHECK_RC(MPI_Type_set_attr(t, tk, (void *)21L));
    CHECK_RC(MPI_Type_dup(t, &t2));
    CHECK_RC(MPI_Type_get_attr(t2, tk, &v, &flag));
    CHECK(flag && (long)v == 42 && copies == 1);
    CHECK_RC(MPI_Type_delete_attr(t, tk));
    CHECK_RC(MPI_Type_get_attr(t, tk, &v, &flag));
    CHECK(!flag && deletes == 1);
    MPI_Type_free(&t2);
    CHECK(deletes == 2);
    MPI_Type_free(&t);
    CHECK_RC(MPI_Type_free_keyval(&tk));
    e = MPI_Type_set_attr(MPI_INT, tk, NULL);
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_KEYVAL);

    /* Windows: hints, attributes, names, asserts. */
    MPI_Info wi;
    MPI_Info_create(&wi);
    MPI_Info_set(wi, "same_disp_unit", "true");
    int *base;
    MPI_Win w;
    CHECK_RC(MPI_Win_allocate_shared(rank == 0 ? 0 : 8 * sizeof(int), sizeof(int), wi, MPI_COMM_WORLD, &base, &w));
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    MPI_Info_free(&wi);
    CHECK_RC(MPI_Win_get_info(w, &got));
    CHECK(info_is(got, "same_disp_unit", "true") && info_is(got, "no_locks", "false"));
    MPI_Info_free(&got);
    int *flavor, *model;
    MPI_Aint *wsize;
    void *wbase;
    CHECK_RC(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED);
    CHECK_RC(MPI_Win_get_attr(w, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_UNIFIED);
    CHECK_RC(MPI_Win_get_attr(w, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(flag && *wsize == (rank == 0 ? 0 : 8 * (MPI_Aint)sizeof(int)));
    CHECK_RC(MPI_Win_get_attr(w, MPI_WIN_BASE, &wbase, &flag));
    CHECK(flag && (rank == 0 || wbase == base));
    /* shared_query(MPI_PROC_NULL): the lowest member with memory. */
    MPI_Aint qs;
    int qu, *qb;
    CHECK_RC(MPI_Win_shared_query(w, MPI_PROC_NULL, &qs, &qu, &qb));
    CHECK(qs == 8 * sizeof(int) && qu == sizeof(int));
    MPI_Aint qu_c;
    CHECK_RC(MPI_Win_shared_query_c(w, 1, &qs, &qu_c, &qb));
    CHECK(qs == 8 * sizeof(int) && qu_c == sizeof(int));
    char name[MPI_MAX_OBJECT_NAME];
    int nl;
    CHECK_RC(MPI_Win_get_name(w, name, &nl));
    CHECK(nl == 0);
    CHECK_RC(MPI_Win_set_name(w, "the window"));
    CHECK_RC(MPI_Win_get_name(w, name, &nl));
    CHECK(nl == 10 && strcmp(name, "the window") == 0);
    int wk;
    deletes = 0;
    CHECK_RC(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_delete, &wk, NULL));
    CHECK_RC(MPI_Win_set_attr(w, wk, (void *)5L));
    CHECK_RC(MPI_Win_get_attr(w, wk, &v, &flag));
    CHECK(flag && (long)v == 5);
    CHECK_RC(MPI_Win_set_attr(w, wk, (void *)7L));
    CHECK(deletes == 5);
    /* Asserts: a fence that is no barrier, locks not taken. */
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOPRECEDE, w));
    if (rank == 1)
        base[0] = 77;
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOPUT | MPI_MODE_NOSUCCEED, w));
    CHECK_RC(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED, w));
    CHECK_RC(MPI_Win_lock_all(MPI_MODE_NOCHECK, w));
    int got77 = 0;
    CHECK_RC(MPI_Get(&got77, 1, MPI_INT, 1, 0, 1, MPI_INT, w));
    CHECK_RC(MPI_Win_unlock_all(w));
    CHECK(got77 == 77);
    CHECK_RC(MPI_Win_lock(MPI_LOCK_SHARED, 1, MPI_MODE_NOCHECK, w));
    CHECK_RC(MPI_Win_unlock(1, w));
    e = MPI_Win_lock(MPI_LOCK_SHARED, 1, 1 << 20, w);
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_ASSERT);
    /* no_locks after creation: a lock is then an RMA sync error. */
    MPI_Info_create(&wi);
    MPI_Info_set(wi, "no_locks", "true");
    CHECK_RC(MPI_Win_set_info(w, wi));
    MPI_Info_free(&wi);
    e = MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w);
    MPI_Error_class(e, &cls);
    CHECK(cls == MPI_ERR_RMA_SYNC);
    CHECK_RC(MPI_Win_free(&w));
    CHECK(deletes == 12);
    MPI_Win_free_keyval(&wk);
    /* Win_allocate's flavor. */
    CHECK_RC(MPI_Win_allocate_c(16, (MPI_Aint)4, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    CHECK_RC(MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE);
    MPI_Win_free(&w);

    MPI_Barrier(MPI_COMM_WORLD);
    DONE();
}
