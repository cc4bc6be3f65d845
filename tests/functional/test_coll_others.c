/*
 * Reduce-scatter, allgather, broadcast, reduce, barrier and the non-blocking
 * forms across processes, each algorithm forced and auto-selected, in and out
 * of place, sizes 0, 1, odd and several pipeline chunks, every type; plus
 * 64 MiB allreduces. Each rank then checks which algorithm ran: the forced one
 * every call where it applies; where it does not (no recursive reduce_scatter,
 * recursive allgather only for a power-of-two rank count, leader only for
 * allreduce), the communicator reports the fallback and the forced algorithm
 * never ran.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algos/cost_model.h"
#include "strata/strata.h"
#include "sts_ranks.h"
#include "tools/lib/tool_data.h"

static const size_t sizes[] = {0, 1, 7, 4099, 300001};
static const strata_op_t ops[] = {STRATA_SUM, STRATA_PROD, STRATA_MIN, STRATA_MAX, STRATA_AVG};

#define FAIL_IF(st, what)                                                                   \
    do {                                                                                    \
        if ((st) != STRATA_OK) {                                                            \
            fprintf(stderr, "rank %d: %s %s n=%zu: %s (%s)\n", rank, what,                 \
                    strata_dtype_name(t), n, strata_status_str(st), strata_comm_error(comm)); \
            return 1;                                                                       \
        }                                                                                   \
    } while (0)

static int rank_rs_ag(strata_comm_t *comm, int rank, strata_dtype_t t, strata_op_t op, size_t n,
                      int inplace)
{
    const int P = strata_comm_nranks(comm);
    const size_t esz = strata_dtype_size(t);
    char *big = calloc((size_t)P * n + 1, esz), *small = calloc(n + 1, esz);
    size_t wrong = 0;
    strata_status_t st;

    /* reduce_scatter: P blocks of n in, block `rank` of the reduction out */
    stb_data_fill(big, (size_t)P * n, t, op, rank, 0);
    void *out = inplace ? big + (size_t)rank * n * esz : small;
    st = strata_reduce_scatter(big, out, n, t, op, comm);
    FAIL_IF(st, "reduce_scatter");
    wrong += stb_data_check(out, n, t, op, P, (size_t)rank * n, "reduce_scatter");

    /* allgather: rank r's n elements land in block r everywhere */
    memset(big, 0xee, (size_t)P * n * esz);
    stb_data_fill(small, n, t, STRATA_SUM, rank, 0);
    const void *in = small;
    if (inplace) {
        memcpy(big + (size_t)rank * n * esz, small, n * esz);
        in = big + (size_t)rank * n * esz;
    }
    st = strata_allgather(in, big, n, t, comm);
    FAIL_IF(st, "allgather");
    for (int r = 0; r < P; r++)
        wrong += stb_data_check_input(big + (size_t)r * n * esz, n, t, r, 0, "allgather");
    free(big);
    free(small);
    return wrong != 0;
}

static int rank_bcast_reduce(strata_comm_t *comm, int rank, strata_dtype_t t, strata_op_t op,
                             size_t n, int inplace, int root)
{
    const int P = strata_comm_nranks(comm);
    const size_t esz = strata_dtype_size(t);
    char *a = calloc(n + 1, esz), *b = calloc(n + 1, esz);
    size_t wrong = 0;
    strata_status_t st;

    stb_data_fill(a, n, t, STRATA_SUM, rank, 0);
    memset(b, 0xee, n * esz);
    void *out = (inplace && rank == root) ? a : b;
    st = strata_broadcast(rank == root ? a : NULL, out, n, t, root, comm);
    FAIL_IF(st, "broadcast");
    wrong += stb_data_check_input(out, n, t, root, 0, "broadcast");

    stb_data_fill(a, n, t, op, rank, 0);
    out = inplace ? a : b;
    st = strata_reduce(a, rank == root ? out : NULL, n, t, op, root, comm);
    FAIL_IF(st, "reduce");
    if (rank == root)
        wrong += stb_data_check(out, n, t, op, P, 0, "reduce");
    free(a);
    free(b);
    return wrong != 0;
}

/* What a run forces, which collectives its rank function calls, and which fall back. */
typedef struct expect {
    const char *algo;
    unsigned used;
    unsigned fallback;
} expect_t;

#define RS STS_COLL_BIT(STA_COLL_REDUCE_SCATTER)
#define AG STS_COLL_BIT(STA_COLL_ALLGATHER)
#define BC STS_COLL_BIT(STA_COLL_BROADCAST)
#define RD STS_COLL_BIT(STA_COLL_REDUCE)
#define AR STS_COLL_BIT(STA_COLL_ALLREDUCE)

static int ran_as_expected(strata_comm_t *comm, void *arg)
{
    const expect_t *e = arg;
    return sts_ranks_check_algos(comm, e->algo, e->used, e->fallback);
}

static int rank_all(strata_comm_t *comm, int rank, void *arg)
{
    const int P = strata_comm_nranks(comm);
    for (int t = 0; t < STRATA_DTYPE_COUNT; t++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
                size_t n = sizes[s];
                if (n > 5000 && ((t != STRATA_FP32 && t != STRATA_INT8 && t != STRATA_BF16) ||
                                 (ops[o] != STRATA_SUM && ops[o] != STRATA_AVG)))
                    continue;   /* big sizes: a few types and ops suffice */
                int inplace = (int)(o + s) % 2, root = (int)(s + o) % P;
                if (rank_rs_ag(comm, rank, (strata_dtype_t)t, ops[o], n, inplace) ||
                    rank_bcast_reduce(comm, rank, (strata_dtype_t)t, ops[o], n, inplace, root))
                    return 1;
            }
    return strata_barrier(comm) != STRATA_OK || ran_as_expected(comm, arg);
}

/* One call of each collective rank_all makes, checked: enough to see what ran. */
static int rank_each_once(strata_comm_t *comm, int rank, void *arg)
{
    const size_t n = 4099;
    const strata_dtype_t t = STRATA_FP32;

    return rank_rs_ag(comm, rank, t, STRATA_SUM, n, 0) ||
           rank_bcast_reduce(comm, rank, t, STRATA_SUM, n, 0, strata_comm_nranks(comm) - 1) ||
           ran_as_expected(comm, arg);
}

/* Three queued iallreduces and one of each other kind, finished with test and wait. */
static int rank_nonblocking(strata_comm_t *comm, int rank, void *arg)
{
    const int P = strata_comm_nranks(comm);
    const size_t n = 100003;
    strata_dtype_t t = STRATA_FP32;
    float *in[3], *out[3];
    float *g = malloc(sizeof(float) * n * (size_t)P), *mine = malloc(sizeof(float) * n);
    strata_request_t *req[5];
    size_t wrong = 0;
    strata_status_t st;

    for (int k = 0; k < 3; k++) {
        in[k] = malloc(sizeof(float) * n);
        out[k] = malloc(sizeof(float) * n);
        stb_data_fill(in[k], n, t, STRATA_SUM, rank, 0);
        st = strata_iallreduce(in[k], out[k], n, t, STRATA_SUM, comm, &req[k]);
        FAIL_IF(st, "iallreduce");
    }
    stb_data_fill(mine, n, t, STRATA_SUM, rank, 0);
    st = strata_iallgather(mine, g, n, t, comm, &req[3]);
    FAIL_IF(st, "iallgather");
    st = strata_ibroadcast(mine, mine, n, t, 0, comm, &req[4]);
    FAIL_IF(st, "ibroadcast");
    for (int k = 0; k < 5; k++) {
        int done = 0;
        if (k % 2 == 0) {
            while (!done) {
                st = strata_test(req[k], &done);
                FAIL_IF(st, "test");
            }
        } else {
            st = strata_wait(req[k]);
            FAIL_IF(st, "wait");
        }
    }
    for (int k = 0; k < 3; k++)
        wrong += stb_data_check(out[k], n, t, STRATA_SUM, P, 0, "iallreduce");
    for (int r = 0; r < P; r++)
        wrong += stb_data_check_input(g + (size_t)r * n, n, t, r, 0, "iallgather");
    wrong += stb_data_check_input(mine, n, t, 0, 0, "ibroadcast");
    for (int k = 0; k < 3; k++) {
        free(in[k]);
        free(out[k]);
    }
    free(g);
    free(mine);
    return wrong != 0 || ran_as_expected(comm, arg);
}

/* 64 MiB of fp32 per rank, in place. */
static int rank_large(strata_comm_t *comm, int rank, void *arg)
{
    const int P = strata_comm_nranks(comm);
    const size_t n = (64u << 20) / sizeof(float);
    strata_dtype_t t = STRATA_FP32;
    float *buf = malloc(n * sizeof(float));
    stb_data_fill(buf, n, t, STRATA_SUM, rank, 0);
    strata_status_t st = strata_allreduce(buf, buf, n, t, STRATA_SUM, comm);
    FAIL_IF(st, "allreduce 64 MiB");
    size_t wrong = stb_data_check(buf, n, t, STRATA_SUM, P, 0, "allreduce 64 MiB");
    free(buf);
    return wrong != 0 || ran_as_expected(comm, arg);
}

static void run(sts_rank_fn fn, int P, int N, int interleave, const expect_t *e)
{
    char a[64];
    snprintf(a, sizeof(a), "STRATA_ALGO=%s", e->algo);
    sts_ranks_opts_t o = {.nranks = P, .nodes = N, .interleave = interleave, .timeout_ms = 90000,
                          .wall_s = 280, .env = {a, "STRATA_SOCKET_IFNAME==lo"}};
    int failed = sts_ranks_run(&o, fn, (void *)e, NULL);
    if (failed)
        fprintf(stderr, "%d ranks, %d nodes, algo %s: %d ranks failed\n", P, N, e->algo, failed);
    assert_int_equal(failed, 0);
}

#define ALL (RS | AG | BC | RD)     /* rank_all's collectives */
#define NONBLOCKING (AR | AG | BC)  /* rank_nonblocking's */

/* Nodes that hold scattered ranks: rank order and node order differ everywhere. */
static void test_all_p8_scrambled_nodes(void **s)
{
    static const int node_of[8] = {0, 1, 1, 0, 1, 0, 0, 1};
    static const expect_t e[] = {{"auto", NONBLOCKING, 0}, {"recursive", NONBLOCKING, 0},
                                 {"hierarchical", NONBLOCKING, 0}};
    for (int k = 0; k < 3; k++) {
        char a[64];
        snprintf(a, sizeof(a), "STRATA_ALGO=%s", e[k].algo);
        sts_ranks_opts_t o = {.nranks = 8, .nodes = 2, .node_of = node_of, .timeout_ms = 90000,
                              .wall_s = 280, .env = {"STRATA_SOCKET_IFNAME==lo", a}};
        assert_int_equal(sts_ranks_run(&o, rank_nonblocking, (void *)&e[k], NULL), 0);
    }
}

#define RUN_TEST(name, fn, P, N, I, A, USED, FALLBACK)                                     \
    static void name(void **s)                                                            \
    {                                                                                     \
        static const expect_t e = {A, USED, FALLBACK};                                    \
        run(fn, P, N, I, &e);                                                             \
    }

RUN_TEST(test_all_p1, rank_all, 1, 1, 0, "auto", ALL, 0)
RUN_TEST(test_all_p2_ring, rank_all, 2, 2, 0, "ring", ALL, 0)
/* no recursive reduce_scatter; recursive allgather needs a power-of-two rank count */
RUN_TEST(test_all_p3_recursive, rank_all, 3, 1, 0, "recursive", ALL, RS | AG)
RUN_TEST(test_all_p4_n2_hier, rank_all, 4, 2, 0, "hierarchical", ALL, 0)
/* leader is an allreduce algorithm: every other collective falls back */
RUN_TEST(test_each_p4_n2_leader, rank_each_once, 4, 2, 0, "leader", ALL, ALL)
RUN_TEST(test_all_p4_n2_auto_interleaved, rank_all, 4, 2, 1, "auto", ALL, 0)
RUN_TEST(test_all_p4_n4_recursive, rank_all, 4, 4, 0, "recursive", ALL, RS)
RUN_TEST(test_all_p6_n3_ring, rank_all, 6, 3, 0, "ring", ALL, 0)
/* three ranks a node, interleaved: rail-major blocks differ from rank order everywhere */
RUN_TEST(test_all_p6_n2_hier_interleaved, rank_all, 6, 2, 1, "hierarchical", ALL, 0)
RUN_TEST(test_nonblocking_p3, rank_nonblocking, 3, 1, 0, "auto", NONBLOCKING, 0)
RUN_TEST(test_nonblocking_p4_hier, rank_nonblocking, 4, 2, 0, "hierarchical", NONBLOCKING, 0)
RUN_TEST(test_large_p4_n2_hier, rank_large, 4, 2, 0, "hierarchical", AR, 0)
RUN_TEST(test_large_p4_n2_ring, rank_large, 4, 2, 0, "ring", AR, 0)
RUN_TEST(test_large_p2_auto, rank_large, 2, 1, 0, "auto", AR, 0)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_p8_scrambled_nodes),
        cmocka_unit_test(test_all_p1),
        cmocka_unit_test(test_all_p2_ring),
        cmocka_unit_test(test_all_p3_recursive),
        cmocka_unit_test(test_all_p4_n2_hier),
        cmocka_unit_test(test_each_p4_n2_leader),
        cmocka_unit_test(test_all_p4_n2_auto_interleaved),
        cmocka_unit_test(test_all_p4_n4_recursive),
        cmocka_unit_test(test_all_p6_n3_ring),
        cmocka_unit_test(test_all_p6_n2_hier_interleaved),
        cmocka_unit_test(test_nonblocking_p3),
        cmocka_unit_test(test_nonblocking_p4_hier),
        cmocka_unit_test(test_large_p4_n2_hier),
        cmocka_unit_test(test_large_p4_n2_ring),
        cmocka_unit_test(test_large_p2_auto),
    };
    if (getenv("STS_FILTER") != NULL)       /* some cases: STS_FILTER='test_nonblocking*' */
        cmocka_set_test_filter(getenv("STS_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
