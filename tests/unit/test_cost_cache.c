/*
 * The shm tier's cache (sta_cache_t, algos/cost_model.c's shm_beta) and the cores' share of
 * copies: the shape of the formulas, never timings. Below the cache a collective's copies run
 * at β_llc; above it the share C/W of its working set W = 2·S·n still does; without a cache, off
 * host shared memory or with the cache's size 0 the tier is β_s alone. Costs stay continuous
 * and non-decreasing in n across the bend, and the selection tables built from a model with a
 * cache are the same from two builds.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algos/cost_model.h"
#include "algos/profile.h"
#include "algos/select.h"

/* β_s 10 GB/s (10^4 B/µs), β_llc 40 GB/s below C = 8 MB of working set; α_s 1 µs. */
static const sta_model_t cached = {
    .shm = {.alpha_us = 1.0, .beta_gbps = 10.0},
    .net = {.alpha_us = 20.0, .beta_gbps = 1.0},
    .gamma_gbps = 10.0,
    .cache = {.beta_gbps = 40.0, .bytes = 8e6},
};

/* One node of two ranks on a host with cores to spare: S = 2, the bend at n = C/(2·2) = 2 MB. */
static const sta_dims_t node2 = {.nranks = 2, .nnodes = 1, .local_size = 2, .nrails = 1,
                                 .contiguous = 1, .host_ranks = 2, .host_cores = 2};

static void assert_near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fmax(1.0, fabs(want)))
        fail_msg("got %.12g, expected %.12g", got, want);
}

/* The blended rate itself: β_llc up to the bend, then 1/β = f/β_llc + (1-f)/β_s, f = C/W. */
static void test_cache_beta_shape(void **state)
{
    (void)state;
    assert_near(sta_cost_shm_beta_gbps(&cached, &node2, 8), 40.0);
    assert_near(sta_cost_shm_beta_gbps(&cached, &node2, 2000000), 40.0);   /* W = C */
    double f = 0.5;                                                          /* W = 2·C */
    assert_near(sta_cost_shm_beta_gbps(&cached, &node2, 4000000), 1 / (f / 40 + (1 - f) / 10));
    assert_true(sta_cost_shm_beta_gbps(&cached, &node2, (size_t)1 << 34) < 10.01);
    /* S is the host's ranks where they are more than the node's (emulated nodes on a host):
     * 4 ranks on the host bend at C/8 */
    sta_dims_t two_nodes = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1,
                            .contiguous = 1, .host_ranks = 4, .host_cores = 8};
    assert_near(sta_cost_shm_beta_gbps(&cached, &two_nodes, 1000000), 40.0);
    assert_true(sta_cost_shm_beta_gbps(&cached, &two_nodes, 2000000) < 40.0);
}

/* No cache tier: size 0 (a zero-initialised model), or the intra-node kind not host memory. */
static void test_cache_off(void **state)
{
    sta_model_t none = cached, sw = cached;

    (void)state;
    none.cache.bytes = 0.0;
    none.cache.beta_gbps = 0.0;         /* unused, and not checked, when the size is 0 */
    assert_int_equal(sta_model_check(&none), STRATA_OK);
    assert_near(sta_cost_shm_beta_gbps(&none, &node2, 1000), 10.0);
    sw.intra = STA_INTRA_SWITCH;
    assert_near(sta_cost_shm_beta_gbps(&sw, &node2, 1000), 10.0);
    sta_model_t bad = cached;
    bad.cache.bytes = -1.0;
    assert_int_equal(sta_model_check(&bad), STRATA_ERR_INVALID);
    bad = cached;
    bad.cache.beta_gbps = 0.0;
    assert_int_equal(sta_model_check(&bad), STRATA_ERR_INVALID);
}

/* A collective below the bend prices its copies at β_llc: the one-node broadcast is the root's
 * copy in, one shm phase α_s + n/β (cores to spare: no waits). Above it, the time grows at
 * 1/β_s with a constant saving, C/(2S)·(1/β_llc - 1/β_s) per copy. */
static void test_cache_in_formulas(void **state)
{
    (void)state;
    double n = 1e6, bc = 40e3, bs = 10e3;   /* bytes per µs */
    assert_near(sta_cost_us(&cached, &node2, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL,
                            (size_t)n), n / bc + 1 + n / bc);
    double big = 64e6, knee = 8e6 / 4;
    double copy = knee / bc + (big - knee) / bs;
    assert_near(sta_cost_us(&cached, &node2, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL,
                            (size_t)big), copy + 1 + copy);
}

/* Where the host's ranks outnumber its cores, copies and sums that run at once share them:
 * β_s and γ times C/S. */
static void test_cores_share_copies(void **state)
{
    sta_model_t plain = cached;
    sta_dims_t over = {.nranks = 4, .nnodes = 1, .local_size = 4, .nrails = 1, .contiguous = 1,
                       .host_ranks = 4, .host_cores = 2};
    sta_dims_t fit = over;

    (void)state;
    plain.cache.bytes = 0.0;
    fit.host_cores = 4;
    /* the allgather's shm phase (above STA_NODE_SMALL_BYTES no yield terms change with n):
     * the bytes' part doubles */
    double n1 = 1e6, n2 = 2e6;
    double d_over = sta_cost_us(&plain, &over, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL,
                                (size_t)n2) -
                    sta_cost_us(&plain, &over, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL,
                                (size_t)n1);
    double d_fit = sta_cost_us(&plain, &fit, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL,
                               (size_t)n2) -
                   sta_cost_us(&plain, &fit, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL,
                               (size_t)n1);
    assert_near(d_over, 2 * d_fit);
}

/* Continuous and non-decreasing across the bend, for every collective and algorithm, on one
 * node and on two, with and without oversubscription (the chunked formulas step where a chunk
 * is added, at powers of two here: the bend is put elsewhere). */
static void test_cache_continuous(void **state)
{
    sta_model_t m;
    const sta_dims_t shapes[] = {
        node2,
        {.nranks = 4, .nnodes = 1, .local_size = 4, .nrails = 1, .contiguous = 1,
         .host_ranks = 4, .host_cores = 2},
        {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1, .contiguous = 1,
         .host_ranks = 4, .host_cores = 2, .net_cpu = 1},
        {.nranks = 4, .nnodes = 4, .local_size = 1, .nrails = 1, .contiguous = 1,
         .host_ranks = 4, .host_cores = 2, .net_cpu = 1},
    };

    (void)state;
    sta_model_default(&m);
    m.cache.bytes = 6e6;    /* bends off the powers of two, where the chunked formulas step */
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        double S = shapes[i].local_size > shapes[i].host_ranks ? shapes[i].local_size
                                                               : shapes[i].host_ranks;
        size_t knee = (size_t)(m.cache.bytes / (2 * S));
        for (int c = 0; c < STA_COLL_COUNT; c++) {
            for (int a = 0; a < STA_ALGO_COUNT; a++) {
                double below = sta_cost_us(&m, &shapes[i], (sta_coll_t)c, (sta_algo_t)a, knee);
                double above = sta_cost_us(&m, &shapes[i], (sta_coll_t)c, (sta_algo_t)a,
                                           knee + 1);
                if (below < 0.0)
                    continue;
                /* one more byte costs at most a byte's copies and sums, never a jump */
                if (!(above >= below - 1e-9 * below && above <= below * (1 + 1e-6) + 1e-3))
                    fail_msg("shape %zu %s %s: %.9g us at %zu B, %.9g at one more", i,
                             sta_coll_name((sta_coll_t)c), sta_algo_name((sta_algo_t)a), below,
                             knee, above);
                double prev = 0.0;
                for (size_t n = 1; n <= ((size_t)1 << 30); n *= 2) {
                    double us = sta_cost_us(&m, &shapes[i], (sta_coll_t)c, (sta_algo_t)a, n);
                    assert_true(us >= prev - 1e-9 * prev);
                    prev = us;
                }
            }
        }
    }
}

/* Two builds from the same model and dims give the same table (every consumer that builds one
 * from the same values agrees), and its choice at each size is the selection's own on both
 * sides of the bend (for the collectives whose formulas are linear between the bends). */
static void test_cache_tables_identical(void **state)
{
    sta_model_t m;
    sta_select_t a, b;
    const sta_dims_t d = {.nranks = 8, .nnodes = 2, .local_size = 4, .nrails = 2,
                          .contiguous = 1, .host_ranks = 4, .host_cores = 16, .net_cpu = 1};

    (void)state;
    sta_model_default(&m);
    assert_int_equal(sta_select_build(&m, &d, STA_ALGO_AUTO, &a), STRATA_OK);
    assert_int_equal(sta_select_build(&m, &d, STA_ALGO_AUTO, &b), STRATA_OK);
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        assert_int_equal(a.nranges[c], b.nranges[c]);
        assert_memory_equal(a.ranges[c], b.ranges[c],
                            sizeof(a.ranges[c][0]) * (size_t)a.nranges[c]);
        if (c == STA_COLL_BROADCAST || c == STA_COLL_REDUCE)
            continue;   /* chains are staircases: the table keeps one crossing (select.c) */
        for (size_t n = 1; n <= ((size_t)1 << 28); n = n * 3 / 2 + 1) {
            sta_algo_t pick = sta_select_lookup(&a, (sta_coll_t)c, n);
            assert_int_equal(pick, sta_select_best(&m, &d, (sta_coll_t)c, n, NULL));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_beta_shape),
        cmocka_unit_test(test_cache_off),
        cmocka_unit_test(test_cache_in_formulas),
        cmocka_unit_test(test_cores_share_copies),
        cmocka_unit_test(test_cache_continuous),
        cmocka_unit_test(test_cache_tables_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
