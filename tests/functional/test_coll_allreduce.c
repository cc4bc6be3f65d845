/*
 * Allreduce across processes: every algorithm forced and auto-selected, 1 to 8
 * ranks in 1 to 4 emulated nodes (contiguous, interleaved, and of unequal
 * size), every type and op, sizes 0, 1, odd and not divisible by the rank
 * count, in place and out of place, checked element by element against the
 * one result oracle (tools/lib/tool_data.h). Each rank then checks that the
 * forced algorithm is the one that ran every call, or, where it cannot run
 * (a two-tier algorithm on nodes of unequal size), that the communicator says
 * so and the model's choice ran instead.
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

static const size_t sizes[] = {0, 1, 5, 1031, 65536 + 3};

typedef struct config {
    int nranks, nodes, interleave;
    const char *algo;
    int falls_back;              /* 1: the forced algorithm does not apply here */
    const int *node_of;          /* NULL: nodes from nodes and interleave */
    int few_types;               /* 1: fp32, int8 and bf16 only (the fallback cases) */
    const char *env;             /* one more variable for the ranks, or NULL */
} config_t;

/* Every type x op x size x placement on one communicator, then what ran. */
static int rank_matrix(strata_comm_t *comm, int rank, void *arg)
{
    const config_t *c = arg;
    const int P = strata_comm_nranks(comm);
    size_t wrong = 0;
    for (int t = 0; t < STRATA_DTYPE_COUNT; t++) {
        if (c->few_types && t != STRATA_FP32 && t != STRATA_INT8 && t != STRATA_BF16)
            continue;
        for (int op = 0; op < STRATA_OP_COUNT; op++) {
            for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                size_t n = sizes[s], esz = strata_dtype_size((strata_dtype_t)t);
                char *send = malloc(n * esz + 1), *recv = malloc(n * esz + 1);
                for (int inplace = 0; inplace < 2; inplace++) {
                    stb_data_fill(send, n, (strata_dtype_t)t, (strata_op_t)op, rank, 0);
                    void *out = inplace ? send : recv;
                    strata_status_t st = strata_allreduce(send, out, n, (strata_dtype_t)t,
                                                          (strata_op_t)op, comm);
                    if (st != STRATA_OK) {
                        fprintf(stderr, "rank %d: allreduce %s/%s n=%zu: %s (%s)\n", rank,
                                strata_dtype_name((strata_dtype_t)t),
                                strata_op_name((strata_op_t)op), n, strata_status_str(st),
                                strata_comm_error(comm));
                        return 1;
                    }
                    wrong += stb_data_check(out, n, (strata_dtype_t)t, (strata_op_t)op, P, 0,
                                      inplace ? "allreduce in place" : "allreduce");
                }
                free(send);
                free(recv);
            }
        }
    }
    return wrong != 0 ||
           sts_ranks_check_algos(comm, c->algo, STS_COLL_BIT(STA_COLL_ALLREDUCE),
                                 c->falls_back ? STS_COLL_BIT(STA_COLL_ALLREDUCE) : 0);
}

static void run_config(const config_t *c)
{
    /* STS_COLL_MAX_RANKS bounds the configs, for slow stacks (the Soft-RoCE guest) */
    const char *max = getenv("STS_COLL_MAX_RANKS");
    if (max != NULL && atoi(max) > 0 && c->nranks > atoi(max))
        skip();
    char algo[64];
    snprintf(algo, sizeof(algo), "STRATA_ALGO=%s", c->algo);
    sts_ranks_opts_t o = {.nranks = c->nranks, .nodes = c->nodes, .interleave = c->interleave,
                          .timeout_ms = 120000, .wall_s = 280,
                          .node_of = c->node_of,
                          .env = {algo, "STRATA_SOCKET_IFNAME==lo", c->env}};
    int failed = sts_ranks_run(&o, rank_matrix, (void *)c, NULL);
    if (failed)
        fprintf(stderr, "config: %d ranks, %d nodes%s, algo %s: %d ranks failed\n", c->nranks,
                c->nodes, c->interleave ? " (interleaved)" : "", c->algo, failed);
    assert_int_equal(failed, 0);
}

#define CONFIG_TEST(name, P, N, I, A)                                                     \
    static void name(void **state)                                                        \
    {                                                                                     \
        config_t c = {P, N, I, A, 0, NULL, 0, NULL};                                         \
        run_config(&c);                                                                   \
    }

CONFIG_TEST(test_p1_auto, 1, 1, 0, "auto")
CONFIG_TEST(test_p2_n1_ring, 2, 1, 0, "ring")
CONFIG_TEST(test_p2_n2_recursive, 2, 2, 0, "recursive")
CONFIG_TEST(test_p3_n1_auto, 3, 1, 0, "auto")
CONFIG_TEST(test_p3_n3_recursive, 3, 3, 0, "recursive")
CONFIG_TEST(test_p4_n2_hier, 4, 2, 0, "hierarchical")
CONFIG_TEST(test_p4_n2_leader, 4, 2, 0, "leader")
CONFIG_TEST(test_p4_n2_interleaved_hier, 4, 2, 1, "hierarchical")
CONFIG_TEST(test_p4_n1_hier, 4, 1, 0, "hierarchical")
CONFIG_TEST(test_p4_n4_ring, 4, 4, 0, "ring")
CONFIG_TEST(test_p5_n1_recursive, 5, 1, 0, "recursive")
CONFIG_TEST(test_p6_n2_auto, 6, 2, 0, "auto")
CONFIG_TEST(test_p6_n3_leader, 6, 3, 1, "leader")
CONFIG_TEST(test_p8_n4_hier, 8, 4, 0, "hierarchical")
CONFIG_TEST(test_p8_n2_ring, 8, 2, 1, "ring")

/* Two ranks on one node, one on another: no two-tier algorithm runs; the model's choice does. */
static void test_p3_unequal_hier_falls_back(void **state)
{
    static const int node_of[3] = {0, 0, 1};
    config_t c = {3, 2, 0, "hierarchical", 1, node_of, 1, NULL};
    run_config(&c);
}

static void test_p3_unequal_leader_falls_back(void **state)
{
    static const int node_of[3] = {0, 1, 1};
    config_t c = {3, 2, 0, "leader", 1, node_of, 1, NULL};
    run_config(&c);
}

/*
 * One node's allreduce in many shared-memory pieces: 3 ranks with the smallest slot (4 KiB
 * per rank), so the largest size takes dozens of two-round pieces with uneven last blocks.
 */
static void test_p3_n1_hier_pieces(void **state)
{
    config_t c = {3, 1, 0, "hierarchical", 0, NULL, 0, "STRATA_SHM_CHUNK=12288"};
    run_config(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_p1_auto),
        cmocka_unit_test(test_p2_n1_ring),
        cmocka_unit_test(test_p2_n2_recursive),
        cmocka_unit_test(test_p3_n1_auto),
        cmocka_unit_test(test_p3_n3_recursive),
        cmocka_unit_test(test_p4_n2_hier),
        cmocka_unit_test(test_p4_n2_leader),
        cmocka_unit_test(test_p4_n2_interleaved_hier),
        cmocka_unit_test(test_p4_n1_hier),
        cmocka_unit_test(test_p3_n1_hier_pieces),
        cmocka_unit_test(test_p4_n4_ring),
        cmocka_unit_test(test_p5_n1_recursive),
        cmocka_unit_test(test_p6_n2_auto),
        cmocka_unit_test(test_p6_n3_leader),
        cmocka_unit_test(test_p8_n4_hier),
        cmocka_unit_test(test_p8_n2_ring),
        cmocka_unit_test(test_p3_unequal_hier_falls_back),
        cmocka_unit_test(test_p3_unequal_leader_falls_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
