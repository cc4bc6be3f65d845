/*
 * Unit tests of the cost model's one-node terms: the one-pass shm allreduce (rounds of
 * STA_MODEL_SHM_CHUNK), one-pass reductions of L inputs ((L+1)/3 of a pair's γ), and the
 * waits of an oversubscribed node: a yield turn ω_y per shm round on one node (half for a
 * broadcast), the blocking ω wherever a net phase lies between. Values worked by hand,
 * monotonicity in n, and identical selection tables from identical inputs. No timing.
 *
 * The hand model: shm α = 1 µs, β = 10 GB/s; net α = 20 µs, β = 1 GB/s; γ = 10 GB/s;
 * ω = 30 µs. n/β_s = n/γ = n/10^4 µs.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algos/cost_model.h"
#include "algos/node_shm.h"
#include "algos/select.h"

static const sta_model_t model_m = {
    .shm = {.alpha_us = 1.0, .beta_gbps = 10.0},
    .net = {.alpha_us = 20.0, .beta_gbps = 1.0},
    .gamma_gbps = 10.0,
    .wake_us = 30.0,
};

/* One node of four ranks on a host of two cores (oversubscribed), and of four cores. */
static const sta_dims_t node4_over = {.nranks = 4, .nnodes = 1, .local_size = 4, .nrails = 1,
                                      .contiguous = 1, .host_ranks = 4, .host_cores = 2};
static const sta_dims_t node4_fit = {.nranks = 4, .nnodes = 1, .local_size = 4, .nrails = 1,
                                     .contiguous = 1, .host_ranks = 4, .host_cores = 4};

static double cost(const sta_dims_t *d, sta_coll_t c, sta_algo_t a, size_t n)
{
    return sta_cost_us(&model_m, d, c, a, n);
}

/* Predictions are sums of a few doubles: 1e-9 relative is far below any modelling choice. */
static void assert_us(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fmax(1.0, fabs(want)))
        fail_msg("predicted %.12g us, expected %.12g us", got, want);
}

/* The one-pass allreduce: (max(1, ceil(n/c)) + 1) rounds, (L-1)/L·n in, a 4-input pass into
 * n/4 (5/3 of a pair's n/4/γ), n out. */
static void test_node_allreduce_one_pass(void **state)
{
    const double c = (double)STA_MODEL_SHM_CHUNK;
    double n = 3 * c;   /* three chunks: 4 rounds */

    assert_us(cost(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, (size_t)n),
              4 * 1 + 0.75 * n / 1e4 + 5.0 / 3 * (n / 4) / 1e4 + n / 1e4);
    /* one byte past a chunk boundary adds a round */
    double n1 = c + 1;
    assert_us(cost(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, (size_t)n1),
              3 * 1 + 0.75 * n1 / 1e4 + 5.0 / 3 * (n1 / 4) / 1e4 + n1 / 1e4);
    /* just above the one-round path: one chunk, 2 rounds */
    double n2 = STA_NODE_SMALL_BYTES + 1;
    assert_us(cost(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, (size_t)n2),
              2 * 1 + 0.75 * n2 / 1e4 + 5.0 / 3 * (n2 / 4) / 1e4 + n2 / 1e4);
    /* off host shm (a switch) the node runs rings: not the one-pass formula */
    sta_model_t sw = model_m;
    sw.intra = STA_INTRA_SWITCH;
    double ring = sta_cost_us(&sw, &node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL,
                              (size_t)n);
    assert_us(ring, 2 * (3 * 1 + 0.75 * n / 1e4) + 0.75 * n / 1e4);
}

/* One-pass reductions of L inputs: (L+1)/3 of a pair; a pair (L = 2) is exactly γ. */
static void test_node_reductions(void **state)
{
    double n = 1e6;
    /* one round, L = 4: 1 + n/β_s + 5/3·n/γ */
    assert_us(cost(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 4000),
              1 + 0.4 + 5.0 / 3 * 0.4);
    /* leader, L = 4: [1 + n/β_s + 5/3·n/γ] + [1 + n/β_s] */
    assert_us(cost(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, (size_t)n),
              (1 + 100 + 5.0 / 3 * 100) + (1 + 100));
    /* reduce to a root, one node: 1 + n/β_s + 5/3·n/γ */
    assert_us(cost(&node4_fit, STA_COLL_REDUCE, STA_ALGO_HIERARCHICAL, (size_t)n),
              1 + 100 + 5.0 / 3 * 100);
    /* L = 2: a pair, γ itself */
    sta_dims_t two = {.nranks = 2, .nnodes = 1, .local_size = 2, .nrails = 1, .contiguous = 1};
    assert_us(cost(&two, STA_COLL_REDUCE, STA_ALGO_HIERARCHICAL, (size_t)n), 1 + 100 + 100);
    /* L = 1: nothing to combine, the shm phases only copy */
    sta_dims_t solo = {.nranks = 2, .nnodes = 2, .local_size = 1, .nrails = 1, .contiguous = 1};
    assert_us(cost(&solo, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, (size_t)n),
              (1 + 100) + (2 * 20 + 1000 + 50) + (1 + 100));
}

/* Oversubscribed, one node: shm rounds cost ω_y (a yield turn), a broadcast phase ω_y/2;
 * the flat algorithms still block in poll(): ω per step. */
static void test_node_yield_waits(void **state)
{
    const double y = STA_YIELD_US;

    assert_us(cost(&node4_over, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 0), 1 + y);
    assert_us(cost(&node4_over, STA_COLL_REDUCE_SCATTER, STA_ALGO_HIERARCHICAL, 0), 1 + y);
    assert_us(cost(&node4_over, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL, 0), 1 + y);
    assert_us(cost(&node4_over, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL, 0), 1 + y / 2);
    assert_us(cost(&node4_over, STA_COLL_REDUCE, STA_ALGO_HIERARCHICAL, 0), 1 + y);
    /* leader: a reduce round every rank waits in, then a broadcast */
    assert_us(cost(&node4_over, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, 0), (1 + y) + (1 + y / 2));
    /* the one-pass allreduce pays ω_y in each of its rounds: 4 rounds at 3 chunks */
    double n = 3.0 * STA_MODEL_SHM_CHUNK;
    assert_us(cost(&node4_over, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, (size_t)n),
              4 * (1 + y) + 0.75 * n / 1e4 + 5.0 / 3 * (n / 4) / 1e4 + n / 1e4);
    /* flat ring over loopback: 2·3 steps of α_n + ω */
    assert_us(cost(&node4_over, STA_COLL_ALLREDUCE, STA_ALGO_RING, 0), 6 * (20 + 30));
    /* cores enough: no wait terms at all */
    assert_us(cost(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 0), 1);
    assert_us(cost(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, 0), 2);
}

/* With a net phase between (N > 1) an oversubscribed rank blocks: every shm phase pays ω,
 * broadcasts included, as before the yield term. */
static void test_multi_node_blocking_waits(void **state)
{
    sta_dims_t d = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1, .contiguous = 1,
                    .host_ranks = 4, .host_cores = 2};
    /* shm phase 1 + 30, the rails' ring 2·(20 + 30), shm phase 1 + 30 */
    assert_us(cost(&d, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 0), 162.0);
    /* tree among the leaders (20), then the node's broadcast 1 + 30 */
    assert_us(cost(&d, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL, 0), 20 + 1 + 30);
}

/* Every formula is non-decreasing in n, on every shape below, oversubscribed or not, and an
 * oversubscribed host never costs less than one with cores to spare. */
static void test_monotone(void **state)
{
    const sta_dims_t shapes[] = {
        node4_over, node4_fit,
        {.nranks = 2, .nnodes = 1, .local_size = 2, .nrails = 1, .contiguous = 1,
         .host_ranks = 2, .host_cores = 2},
        {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1, .contiguous = 1,
         .host_ranks = 4, .host_cores = 2},
        {.nranks = 8, .nnodes = 2, .local_size = 4, .nrails = 2, .contiguous = 1,
         .host_ranks = 4, .host_cores = 2},
        {.nranks = 4, .nnodes = 4, .local_size = 1, .nrails = 1, .contiguous = 1,
         .host_ranks = 4, .host_cores = 2},
    };
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        sta_dims_t roomy = shapes[i];
        roomy.host_cores = roomy.host_ranks;
        for (int c = 0; c < STA_COLL_COUNT; c++) {
            for (int a = 0; a < STA_ALGO_COUNT; a++) {
                double prev = 0.0;
                for (int e = 0; e <= 34; e++) {
                    for (int k = -1; k <= 1; k++) {
                        size_t n = ((size_t)1 << e) + (size_t)(e > 1 ? k : 0);
                        double us = cost(&shapes[i], (sta_coll_t)c, (sta_algo_t)a, n);
                        if (us < 0.0)
                            continue;
                        if (us < prev - 1e-9 * prev)
                            fail_msg("shape %zu %s %s: %.9g us at %zu B < %.9g before", i,
                                     sta_coll_name((sta_coll_t)c), sta_algo_name((sta_algo_t)a),
                                     us, n, prev);
                        prev = us;
                        double spare = cost(&roomy, (sta_coll_t)c, (sta_algo_t)a, n);
                        assert_true(spare >= 0.0 && spare <= us * (1 + 1e-12));
                    }
                }
            }
        }
    }
}

/* The library, the tuner and strata-plan build their tables from the same model and dims:
 * two builds must agree byte for byte, here on the one-node shapes the new terms touch. */
static void test_tables_identical(void **state)
{
    const sta_dims_t shapes[] = {node4_over, node4_fit};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        static sta_select_t a, b;
        memset(&a, 0xa5, sizeof(a));
        memset(&b, 0x5a, sizeof(b));
        assert_int_equal(sta_select_build(&model_m, &shapes[i], STA_ALGO_AUTO, &a), STRATA_OK);
        assert_int_equal(sta_select_build(&model_m, &shapes[i], STA_ALGO_AUTO, &b), STRATA_OK);
        for (int c = 0; c < STA_COLL_COUNT; c++) {
            assert_int_equal(a.nranges[c], b.nranges[c]);
            for (int r = 0; r < a.nranges[c]; r++) {
                assert_true(a.ranges[c][r].upper == b.ranges[c][r].upper);
                assert_int_equal(a.ranges[c][r].algo, b.ranges[c][r].algo);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_node_allreduce_one_pass),
        cmocka_unit_test(test_node_reductions),
        cmocka_unit_test(test_node_yield_waits),
        cmocka_unit_test(test_multi_node_blocking_waits),
        cmocka_unit_test(test_monotone),
        cmocka_unit_test(test_tables_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
