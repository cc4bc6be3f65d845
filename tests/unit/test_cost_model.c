/*
 * Unit tests of the α-β cost model: every formula against numbers worked out
 * by hand in the comments, edge dims (P = 1, N = 1, L = 1, non-powers of two),
 * applicability, names, the STRATA_ALGO parser and n* = α·β.
 *
 * The hand model, M: shm α = 1 µs, β = 10 GB/s; net α = 20 µs, β = 1 GB/s;
 * γ = 10 GB/s. At n = 10^6 B: n/β_n = 1000 µs, n/β_s = 100 µs, n/γ = 100 µs.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "algos/cost_model.h"

#define MB 1000000

static const sta_model_t model_m = {
    .shm = {.alpha_us = 1.0, .beta_gbps = 10.0},
    .net = {.alpha_us = 20.0, .beta_gbps = 1.0},
    .gamma_gbps = 10.0,
};

/* P = 4 as N = 2 nodes of L = 2, one NIC per node. */
static const sta_dims_t dims_4x1 = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1};

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

static void test_allreduce(void **state)
{
    /* ring: 2·3·20 = 120, + 2·3/4·1000 = 1500, + 3/4·100 = 75 -> 1695 */
    assert_us(cost(&dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_RING, MB), 1695.0);
    /* recursive: p2 = 4, r = 0: log2(4)·(20 + 1000 + 100) = 2240 */
    assert_us(cost(&dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 2240.0);
    /* hierarchical: [1 + 100 + 1/2·100] = 151
     *   + [2·1·20 + 2·1/2·10^6/(1·1 GB/s) + 1/2·(10^6/2)/γ] = 40 + 1000 + 25 = 1065
     *   + [1 + 100] = 101 -> 1317 */
    assert_us(cost(&dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB), 1317.0);
    /* leader: [1 + 100 + (2-1)·100] = 201 + [40 + 1000 + 1/2·100] = 1090 + 101 -> 1392 */
    assert_us(cost(&dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, MB), 1392.0);
}

static void test_allreduce_shapes(void **state)
{
    sta_dims_t p6 = {.nranks = 6, .nnodes = 3, .local_size = 2, .nrails = 1};
    sta_dims_t rails2 = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 2};
    sta_dims_t one_node = {.nranks = 2, .nnodes = 1, .local_size = 2, .nrails = 1};
    sta_dims_t one_per_node = {.nranks = 2, .nnodes = 2, .local_size = 1, .nrails = 1};

    /* recursive, P = 6: p2 = 4, r = 2: 2·(20 + 1000 + 100) + (2·20 + 2·1000 + 100) = 4380 */
    assert_us(cost(&p6, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 4380.0);
    /* hierarchical with 2 rails: net bracket 40 + 2·1/2·10^6/(2 GB/s) = 500, + 25 -> 565;
     * 151 + 565 + 101 = 817 */
    assert_us(cost(&rails2, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB), 817.0);
    /* N = 1: no net bracket. hierarchical 151 + 101 = 252; leader 201 + 101 = 302;
     * ring over P = 2: 2·20 + 1000 + 50 = 1090 */
    assert_us(cost(&one_node, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB), 252.0);
    assert_us(cost(&one_node, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, MB), 302.0);
    assert_us(cost(&one_node, STA_COLL_ALLREDUCE, STA_ALGO_RING, MB), 1090.0);
    /* L = 1: the shm brackets stay (a copy each): [1 + 100 + 0] + ring of 2 (1090) + [101] */
    assert_us(cost(&one_per_node, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB), 1292.0);
    assert_us(cost(&one_per_node, STA_COLL_ALLREDUCE, STA_ALGO_RING, MB), 1090.0);
}

static void test_reduce_scatter_allgather(void **state)
{
    /* reduce_scatter ring: 3·20 + 3/4·1000 + 3/4·100 = 60 + 750 + 75 = 885 */
    assert_us(cost(&dims_4x1, STA_COLL_REDUCE_SCATTER, STA_ALGO_RING, MB), 885.0);
    /* reduce_scatter hierarchical: permute 100 + [1 + 100 + 50]
     * + [20 + 1/2·1000 + 1/2·(5·10^5)/γ = 25] = 100 + 151 + 545 = 796 */
    assert_us(cost(&dims_4x1, STA_COLL_REDUCE_SCATTER, STA_ALGO_HIERARCHICAL, MB), 796.0);
    /* allgather ring: 60 + 750 = 810; recursive: log2(4)·20 + 750 = 790 */
    assert_us(cost(&dims_4x1, STA_COLL_ALLGATHER, STA_ALGO_RING, MB), 810.0);
    assert_us(cost(&dims_4x1, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB), 790.0);
    /* allgather hierarchical: [20 + 1/2·(5·10^5 B / 1 GB/s = 500)·(2/1)] + [1 + 100]
     * + permute 100 = 721 */
    assert_us(cost(&dims_4x1, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL, MB), 721.0);
}

static void test_broadcast_reduce(void **state)
{
    sta_dims_t p6 = {.nranks = 6, .nnodes = 3, .local_size = 2, .nrails = 1};

    /* c = 524288, k = ceil(10^6 / 524288) = 2; ring: (4-2+2)·(20 + 524.288) = 2177.152 */
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RING, MB), 2177.152);
    /* binomial: ceil(log2 4) = 2: 2·(20 + 1000) = 2040 */
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RECURSIVE, MB), 2040.0);
    /* hierarchical: ceil(log2 2)·1020 + [1 + 100] = 1121 */
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL, MB), 1121.0);
    /* P = 6: ceil(log2 6) = 3 rounds: 3060 */
    assert_us(cost(&p6, STA_COLL_BROADCAST, STA_ALGO_RECURSIVE, MB), 3060.0);
    /* Below one chunk, k = 1: (4-2+1)·(20 + 1000 B/1 GB/s = 1) = 63; at n = 0, k = 1: 60 */
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RING, 1000), 63.0);
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RING, 0), 60.0);
    /* Exactly one chunk: k = 1: 3·(20 + 524.288) = 1632.864; one byte more: k = 2, 2177.152 */
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RING, STA_PIPELINE_CHUNK), 1632.864);
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RING, STA_PIPELINE_CHUNK + 1),
              2177.152);

    /* reduce ring: 4·(20 + 524.288 + 52.4288) = 2386.8672 */
    assert_us(cost(&dims_4x1, STA_COLL_REDUCE, STA_ALGO_RING, MB), 2386.8672);
    /* reduce binomial: 2·(20 + 1000 + 100) = 2240 */
    assert_us(cost(&dims_4x1, STA_COLL_REDUCE, STA_ALGO_RECURSIVE, MB), 2240.0);
    /* reduce hierarchical: [1 + 100 + (2-1)·100] + 1·(20 + 1000 + 100) = 201 + 1120 = 1321 */
    assert_us(cost(&dims_4x1, STA_COLL_REDUCE, STA_ALGO_HIERARCHICAL, MB), 1321.0);
}

static void test_single_rank_and_applicability(void **state)
{
    sta_dims_t one = {.nranks = 1, .nnodes = 1, .local_size = 1, .nrails = 1};
    sta_dims_t p6 = {.nranks = 6, .nnodes = 3, .local_size = 2, .nrails = 1};

    /* P = 1: every applicable algorithm is a local copy, cost 0. */
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        assert_us(cost(&one, (sta_coll_t)c, STA_ALGO_RING, MB), 0.0);
        assert_us(cost(&one, (sta_coll_t)c, STA_ALGO_HIERARCHICAL, MB), 0.0);
    }
    assert_us(cost(&one, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, MB), 0.0);

    /* leader is allreduce only; reduce_scatter has no recursive; allgather recursive needs
     * P a power of two. */
    assert_true(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_LEADER, MB) < 0);
    assert_true(cost(&dims_4x1, STA_COLL_REDUCE_SCATTER, STA_ALGO_RECURSIVE, MB) < 0);
    assert_true(cost(&p6, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB) < 0);
    assert_true(cost(&dims_4x1, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB) >= 0);
    assert_false(sta_algo_applies(&p6, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE));
    assert_true(sta_algo_applies(&p6, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE));
    assert_false(sta_algo_applies(&p6, STA_COLL_ALLREDUCE, STA_ALGO_AUTO));
    assert_true(cost(&dims_4x1, STA_COLL_COUNT, STA_ALGO_RING, MB) < 0);
}

static void test_invalid_inputs(void **state)
{
    sta_dims_t bad[] = {
        {.nranks = 0, .nnodes = 1, .local_size = 1, .nrails = 1},
        {.nranks = 4, .nnodes = 2, .local_size = 3, .nrails = 1},   /* N·L != P */
        {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 0},
        {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 3},   /* more rails than L */
    };
    sta_model_t m = model_m;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sta_dims_check(&bad[i]), STRATA_ERR_INVALID);
        assert_true(cost(&bad[i], STA_COLL_ALLREDUCE, STA_ALGO_RING, MB) < 0);
    }
    assert_int_equal(sta_dims_check(&dims_4x1), STRATA_OK);
    assert_int_equal(sta_model_check(&m), STRATA_OK);
    m.net.beta_gbps = 0.0;
    assert_int_equal(sta_model_check(&m), STRATA_ERR_INVALID);
    assert_true(sta_cost_us(&m, &dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_RING, MB) < 0);
    m = model_m;
    m.shm.alpha_us = -1.0;
    assert_int_equal(sta_model_check(&m), STRATA_ERR_INVALID);
    m = model_m;
    m.gamma_gbps = NAN;
    assert_int_equal(sta_model_check(&m), STRATA_ERR_INVALID);
    m = model_m;
    m.net.alpha_us = 0.0;                         /* α = 0 is a valid (ideal) tier */
    assert_int_equal(sta_model_check(&m), STRATA_OK);
}

static void test_crossover(void **state)
{
    sta_tier_t net = {.alpha_us = 20.0, .beta_gbps = 1.0};
    sta_tier_t shm = {.alpha_us = 1.0, .beta_gbps = 10.0};

    /* n* = α·β: 20 µs · 10^3 B/µs = 20000 B; 1 µs · 10^4 B/µs = 10000 B */
    assert_us(sta_tier_crossover_bytes(&net), 20000.0);
    assert_us(sta_tier_crossover_bytes(&shm), 10000.0);
    /* At n*, the latency and bandwidth terms of one step are equal. */
    assert_us(net.alpha_us, 20000.0 / (net.beta_gbps * STA_BYTES_PER_US_PER_GBPS));
}

static void test_names_and_parse(void **state)
{
    sta_algo_t a = STA_ALGO_RING;

    assert_string_equal(sta_coll_name(STA_COLL_REDUCE_SCATTER), "reduce_scatter");
    assert_string_equal(sta_coll_name(STA_COLL_COUNT), "?");
    assert_string_equal(sta_algo_name(STA_ALGO_HIERARCHICAL), "hierarchical");
    assert_string_equal(sta_algo_name(STA_ALGO_AUTO), "auto");
    assert_string_equal(sta_algo_name(STA_ALGO_COUNT), "?");

    assert_int_equal(sta_algo_parse("leader", &a), STRATA_OK);
    assert_int_equal(a, STA_ALGO_LEADER);
    assert_int_equal(sta_algo_parse("Recursive", &a), STRATA_OK);
    assert_int_equal(a, STA_ALGO_RECURSIVE);
    assert_int_equal(sta_algo_parse("AUTO", &a), STRATA_OK);
    assert_int_equal(a, STA_ALGO_AUTO);
    a = STA_ALGO_RING;
    assert_int_equal(sta_algo_parse("", &a), STRATA_OK);
    assert_int_equal(a, STA_ALGO_AUTO);
    a = STA_ALGO_RING;
    assert_int_equal(sta_algo_parse("tree", &a), STRATA_ERR_INVALID);
    assert_int_equal(a, STA_ALGO_RING);            /* untouched on error */
    assert_int_equal(sta_algo_parse("ring ", &a), STRATA_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_allreduce_shapes),
        cmocka_unit_test(test_reduce_scatter_allgather),
        cmocka_unit_test(test_broadcast_reduce),
        cmocka_unit_test(test_single_rank_and_applicability),
        cmocka_unit_test(test_invalid_inputs),
        cmocka_unit_test(test_crossover),
        cmocka_unit_test(test_names_and_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
