/* Communicators, groups, attributes with copy and delete callbacks,
 * names, comparisons, split_type. */
#include "check.h"

static int deleted, copied;

static int copy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)k;
    CHECK(extra == (void *)&copied);
    copied++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int k, void *val, void *extra)
{
    (void)c, (void)k, (void)val, (void)extra;
    deleted++;
    return MPI_SUCCESS;
}

/* The order of deletions: each records its value's number. */
static int order[3], norder;
static int record_fn(MPI_Comm c, int k, void *val, void *extra)
{
    (void)c, (void)k, (void)extra;
    order[norder++] = *(int *)val;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int rank, size, r2, s2, res;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Dup: same group, another context. */
    MPI_Comm dup;
    CHECK_RC(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &res);
    CHECK(res == MPI_CONGRUENT);
    MPI_Comm_compare(dup, dup, &res);
    CHECK(res == MPI_IDENT);
    /* Messages on dup do not match receives on the world. */
    int v = rank, w = -1;
    MPI_Request rq;
    MPI_Irecv(&w, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &rq);
    MPI_Send(&v, 1, MPI_INT, (rank + 1) % size, 0, dup);
    MPI_Recv(&w, 1, MPI_INT, MPI_ANY_SOURCE, 0, dup, MPI_STATUS_IGNORE);
    CHECK(w == (rank + size - 1) % size);
    MPI_Send(&v, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);

    /* Split into even and odd, reversed. */
    MPI_Comm half;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
    MPI_Comm_rank(half, &r2);
    MPI_Comm_size(half, &s2);
    CHECK(s2 == (size + 1 - rank % 2) / 2);
    CHECK(r2 == s2 - 1 - rank / 2);
    int sum;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half);
    int want = 0;
    for (int r = rank % 2; r < size; r += 2)
        want += r;
    CHECK(sum == want);
    MPI_Comm none;
    CHECK_RC(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &none));
    CHECK((rank == 0) == (none != MPI_COMM_NULL));
    if (none != MPI_COMM_NULL)
        MPI_Comm_free(&none);

    /* Groups. */
    MPI_Group wg, hg, ug, ig, dg, eg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(half, &hg);
    int gs, gr;
    MPI_Group_size(hg, &gs);
    CHECK(gs == s2);
    MPI_Group_rank(wg, &gr);
    CHECK(gr == rank);
    int ranks1[2] = {0, 1}, ranks2[2];
    MPI_Group_translate_ranks(hg, 1, ranks1, wg, ranks2);
    CHECK(ranks2[0] == (size - 1 - (size - 1 - rank % 2) % 2));
    MPI_Group_union(hg, wg, &ug);
    MPI_Group_size(ug, &gs);
    CHECK(gs == size);
    MPI_Group_intersection(hg, wg, &ig);
    MPI_Group_compare(ig, hg, &res);
    CHECK(res == MPI_IDENT);
    MPI_Group_difference(wg, hg, &dg);
    MPI_Group_size(dg, &gs);
    CHECK(gs == size - s2);
    int excl[1] = {0};
    MPI_Group_excl(wg, 1, excl, &eg);
    MPI_Group_rank(eg, &gr);
    CHECK(gr == (rank == 0 ? MPI_UNDEFINED : rank - 1));
    int range[1][3] = {{size - 1, 0, -1}};
    MPI_Group rg;
    MPI_Group_range_incl(wg, 1, range, &rg);
    MPI_Group_rank(rg, &gr);
    CHECK(gr == size - 1 - rank);
    MPI_Group_compare(rg, wg, &res);
    CHECK(res == (size == 1 ? MPI_IDENT : MPI_SIMILAR));

    /* Comm_create from a group, and create_group. */
    MPI_Comm rev;
    CHECK_RC(MPI_Comm_create(MPI_COMM_WORLD, rg, &rev));
    MPI_Comm_rank(rev, &r2);
    CHECK(r2 == size - 1 - rank);
    MPI_Comm ex;
    if (rank != 0) {
        CHECK_RC(MPI_Comm_create_group(MPI_COMM_WORLD, eg, 5, &ex));
        MPI_Comm_rank(ex, &r2);
        CHECK(r2 == rank - 1);
        MPI_Barrier(ex);
        MPI_Comm_free(&ex);
    }
    MPI_Group_free(&wg);
    MPI_Group_free(&hg);
    MPI_Group_free(&ug);
    MPI_Group_free(&ig);
    MPI_Group_free(&dg);
    MPI_Group_free(&eg);
    MPI_Group_free(&rg);
    CHECK(rg == MPI_GROUP_NULL);

    /* Attributes: copied on dup, deleted on free and on delete_attr. */
    int key;
    CHECK_RC(MPI_Comm_create_keyval(copy_fn, delete_fn, &key, &copied));
    static char payload[8];
    CHECK_RC(MPI_Comm_set_attr(dup, key, payload));
    void *val;
    int flag;
    MPI_Comm_get_attr(dup, key, &val, &flag);
    CHECK(flag && val == payload);
    MPI_Comm dup2;
    MPI_Comm_dup(dup, &dup2);
    CHECK(copied == 1);
    MPI_Comm_get_attr(dup2, key, &val, &flag);
    CHECK(flag && val == payload + 1);
    MPI_Comm_free(&dup2);
    CHECK(deleted == 1 && dup2 == MPI_COMM_NULL);
    MPI_Comm_set_attr(dup, key, payload + 2); /* replaces: deletes the old */
    CHECK(deleted == 2);
    MPI_Comm_delete_attr(dup, key);
    CHECK(deleted == 3);
    MPI_Comm_get_attr(dup, key, &val, &flag);
    CHECK(!flag);
    MPI_Comm_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID);
    /* A freed keyval still names its attributes: delete_attr works; and
     * a free deletes the attributes the last set first. */
    {
        static int vals[3] = {0, 1, 2};
        int ks[3];
        MPI_Comm d3;
        MPI_Comm_dup(dup, &d3);
        for (int i = 0; i < 3; i++)
            CHECK_RC(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, record_fn, &ks[i], NULL));
        CHECK_RC(MPI_Comm_set_attr(d3, ks[1], &vals[0]));
        CHECK_RC(MPI_Comm_set_attr(d3, ks[2], &vals[1]));
        CHECK_RC(MPI_Comm_set_attr(d3, ks[0], &vals[2]));
        CHECK_RC(MPI_Comm_free_keyval(&ks[1]));
        MPI_Comm_free(&d3);
        CHECK(norder == 3 && order[0] == 2 && order[1] == 1 && order[2] == 0);
        MPI_Comm_dup(dup, &d3);
        CHECK_RC(MPI_Comm_set_attr(d3, ks[0], &vals[0]));
        int k0 = ks[0];
        CHECK_RC(MPI_Comm_free_keyval(&ks[0]));
        CHECK_RC(MPI_Comm_delete_attr(d3, k0));
        CHECK(norder == 4);
        MPI_Comm_free(&d3);
        MPI_Comm_free_keyval(&ks[2]);
    }
    /* Predefined attributes. */
    int *tagub;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tagub, &flag);
    CHECK(flag && *tagub >= 32767);
    int *usize;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &usize, &flag);
    CHECK(flag && *usize == size);

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14);
    MPI_Comm_set_name(dup, "a duplicate");
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "a duplicate") == 0);

    /* split_type: every rank shares memory. */
    MPI_Comm node;
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    MPI_Comm_size(node, &s2);
    CHECK(s2 == size);
    MPI_Comm_free(&node);
    /* Its info's assertions are the new communicator's hints. */
    MPI_Info hint, got;
    MPI_Info_create(&hint);
    MPI_Info_set(hint, "mpi_assert_no_any_tag", "true");
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, hint, &node));
    CHECK_RC(MPI_Comm_get_info(node, &got));
    char hv[16];
    int hflag = 0;
    CHECK_RC(MPI_Info_get_string(got, "mpi_assert_no_any_tag", &(int){sizeof hv}, hv, &hflag));
    CHECK(hflag && strcmp(hv, "true") == 0);
    MPI_Info_free(&got);
    MPI_Info_free(&hint);
    MPI_Comm_free(&node);
    /* MPI_UNDEFINED at odd ranks: they get MPI_COMM_NULL, the others the
     * even ranks; RESOURCE_GUIDED without a resource type: null. */
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, rank % 2 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    if (rank % 2) {
        CHECK(node == MPI_COMM_NULL);
    } else {
        MPI_Comm_size(node, &s2);
        CHECK(s2 == (size + 1) / 2);
        MPI_Comm_free(&node);
    }
    CHECK_RC(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_RESOURCE_GUIDED, 0, MPI_INFO_NULL, &node));
    CHECK(node == MPI_COMM_NULL);
    int inter;
    MPI_Comm_test_inter(dup, &inter);
    CHECK(!inter);

    /* Handles as ints and back. */
    CHECK(MPI_Comm_fromint(MPI_Comm_toint(dup)) == dup);
    CHECK(MPI_Type_fromint(MPI_Type_toint(MPI_DOUBLE)) == MPI_DOUBLE);

    /* Dims_create, Topo_test, Info. */
    int dims[3] = {0, 0, 0};
    CHECK_RC(MPI_Dims_create(12, 3, dims));
    CHECK(dims[0] == 3 && dims[1] == 2 && dims[2] == 2);
    int dims2[2] = {0, 3};
    CHECK_RC(MPI_Dims_create(12, 2, dims2));
    CHECK(dims2[0] == 4 && dims2[1] == 3);
    int topo;
    MPI_Topo_test(dup, &topo);
    CHECK(topo == MPI_UNDEFINED);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "k1", "value one");
    MPI_Info_set(info, "k2", "v2");
    int nkeys, vlen;
    MPI_Info_get_nkeys(info, &nkeys);
    CHECK(nkeys == 2);
    char ibuf[64], ikey[MPI_MAX_INFO_KEY];
    MPI_Info_get_nthkey(info, 1, ikey);
    CHECK(strcmp(ikey, "k2") == 0);
    MPI_Info_get_valuelen(info, "k1", &vlen, &flag);
    CHECK(flag && vlen == 9);
    MPI_Info_get(info, "k1", 63, ibuf, &flag);
    CHECK(flag && strcmp(ibuf, "value one") == 0);
    int blen = sizeof ibuf;
    MPI_Info_get_string(info, "k2", &blen, ibuf, &flag);
    CHECK(flag && blen == 3 && strcmp(ibuf, "v2") == 0);
    MPI_Info dupi;
    MPI_Info_dup(info, &dupi);
    MPI_Info_delete(info, "k1");
    MPI_Info_get_nkeys(info, &nkeys);
    CHECK(nkeys == 1);
    MPI_Info_get_nkeys(dupi, &nkeys);
    CHECK(nkeys == 2);
    MPI_Info_free(&info);
    MPI_Info_free(&dupi);
    CHECK(info == MPI_INFO_NULL);

    MPI_Comm_free(&dup);
    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    DONE();
}
