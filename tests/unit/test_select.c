/*
 * Unit tests of the selection tables: the exact crossover of a worked
 * example, lookups at 0, at and around boundaries and at SIZE_MAX, forced
 * algorithms and their fallback, and the property that every boundary is a
 * real crossing and every lookup the cheapest algorithm, or in a near tie the
 * one of least latency.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algos/profile.h"
#include "algos/select.h"
#include "util/log.h"
#include "util/param.h"

/* net α = 20 µs, β = 1 GB/s; shm α = 1 µs, β = 10 GB/s; γ = 10 GB/s. */
static const sta_model_t model_m = {
    .shm = {.alpha_us = 1.0, .beta_gbps = 10.0},
    .net = {.alpha_us = 20.0, .beta_gbps = 1.0},
    .gamma_gbps = 10.0,
};
static const sta_dims_t dims_4x1 = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1};

static double cost(const sta_select_t *t, sta_coll_t c, sta_algo_t a, size_t n)
{
    return sta_cost_us(&t->model, &t->dims, c, a, n);
}

/* The cheapest prediction of any selectable (applicable and implemented) algorithm at n. */
/* The model's sums of a few doubles: 1e-9 relative is far below any modelling choice. */
static void assert_us(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fmax(1.0, fabs(want)))
        fail_msg("predicted %.12g us, expected %.12g us", got, want);
}

static double cost_min(const sta_select_t *t, sta_coll_t c, size_t n)
{
    double best = INFINITY;
    for (int a = 0; a < STA_ALGO_COUNT; a++) {
        if (!sta_algo_selectable(&t->dims, c, (sta_algo_t)a))
            continue;
        double us = cost(t, c, (sta_algo_t)a, n);
        if (us >= 0 && us < best)
            best = us;
    }
    return best;
}

/* An algorithm's latency: its cost with every β and γ infinite. */
static double latency(const sta_select_t *t, sta_coll_t c, sta_algo_t a, size_t n)
{
    sta_model_t m = t->model;
    m.shm.beta_gbps = m.net.beta_gbps = m.gamma_gbps = STA_SELECT_RATE_INF;
    m.cache.beta_gbps = STA_SELECT_RATE_INF;
    return sta_cost_us(&m, &t->dims, c, a, n);
}

/* The algorithm the table picks at n is within the near-tie band of the cheapest, and no
 * other algorithm in the band has a lower cost + latency. */
static void assert_optimal(const sta_select_t *t, sta_coll_t c, size_t n)
{
    sta_algo_t a = sta_select_lookup(t, c, n);
    double us = cost(t, c, a, n), best = cost_min(t, c, n);
    double band = best * (1 + STA_SELECT_NEAR_REL) * (1 + 2 * STA_SELECT_TIE_REL);
    if (!(us >= 0 && us <= band))
        fail_msg("%s at %zu B: table says %s (%.9g us), best is %.9g us", sta_coll_name(c), n,
                 sta_algo_name(a), us, best);
    double score = us + latency(t, c, a, n);
    for (int b = 0; b < STA_ALGO_COUNT; b++) {
        if (!sta_algo_selectable(&t->dims, c, (sta_algo_t)b))
            continue;
        double ub = cost(t, c, (sta_algo_t)b, n);
        if (ub >= 0 && ub <= best * (1 + STA_SELECT_NEAR_REL) &&
            ub + latency(t, c, (sta_algo_t)b, n) < score * (1 - 2 * STA_SELECT_TIE_REL))
            fail_msg("%s at %zu B: table says %s, %s is in the near-tie band and scores lower",
                     sta_coll_name(c), n, sta_algo_name(a), sta_algo_name((sta_algo_t)b));
    }
}

static void test_example_table(void **state)
{
    sta_select_t t;

    assert_int_equal(sta_select_build(&model_m, &dims_4x1, STA_ALGO_AUTO, &t), STRATA_OK);
    /*
     * allreduce, with x = n/(1 GB/s) = n/1000 µs and y = n/γ = n/10^4 µs:
     *   recursive     n/10^4 + [20 + 2·n/10^4 + y] + [20 + 2·x + y]   = 40 + 0.0025·n
     *                 (the input into the output buffer; distance 1 stays in the node: two
     *                 copies at β_s; distance 2 puts both ranks of a node on the one NIC: 2·x)
     *   hierarchical  [1 + n/10^4 + 1/2·y] + [20 + x + 1/2·y] + [1 + n/10^4]
     *                 = 22 + 0.0013·n while each rail's part n/2 is exchanged whole (two
     *                 nodes, n/2 < 2·α_n·γ = 4·10^5: one step of 20, not the ring's two;
     *                 above, the pipeline of test_cost_model)
     *   ring          120 + n/10^4 + 1.5·x + 0.75·y = 120 + 0.001675·n
     *   leader        [1 + n/10^4 + y] + [20 + x + y] + [1 + n/10^4] = 22 + 0.0014·n
     * hierarchical is the cheapest at every size (22 < 40 µs and 0.0013 < 0.0025 µs/B; the
     * ring's two steps, 42 + 0.001275·n, lost to recursive below 3265 B): one range.
     */
    assert_int_equal(t.nranges[STA_COLL_ALLREDUCE], 1);
    assert_int_equal(t.ranges[STA_COLL_ALLREDUCE][0].algo, STA_ALGO_HIERARCHICAL);
    assert_true(t.ranges[STA_COLL_ALLREDUCE][0].upper == SIZE_MAX);
    assert_us(cost(&t, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 1000), 22.0 + 1.3);
    assert_us(cost(&t, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, 1000), 40.0 + 2.5);
    assert_us(cost(&t, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, 1000), 22.0 + 1.4);

    /* Lookups at 0, at the old crossing, and at the far end. */
    assert_int_equal(sta_select_lookup(&t, STA_COLL_ALLREDUCE, 0), STA_ALGO_HIERARCHICAL);
    assert_int_equal(sta_select_lookup(&t, STA_COLL_ALLREDUCE, 3265), STA_ALGO_HIERARCHICAL);
    assert_int_equal(sta_select_lookup(&t, STA_COLL_ALLREDUCE, (size_t)1 << 40),
                     STA_ALGO_HIERARCHICAL);
    assert_int_equal(sta_select_lookup(&t, STA_COLL_ALLREDUCE, SIZE_MAX),
                     STA_ALGO_HIERARCHICAL);
    for (size_t n = 1; n <= ((size_t)1 << 30); n *= 4)
        assert_optimal(&t, STA_COLL_ALLREDUCE, n);

    /*
     * allgather, placement unknown (dims.contiguous = 0): both ranks of a node cross at every
     * step of both flat algorithms. recursive (20 + 2·(n/4)/1000) + (20 + 2·(n/2)/1000) =
     * 40 + 0.0015·n; ring 3·(20 + 2·(n/4)/1000) = 60 + 0.0015·n; hierarchical
     * [20 + 1/2·(n/2)/1000·(2/1)] + [1 + n/10^4] + n/10^4 = 21 + 0.0007·n is cheapest from
     * 0 on: it takes the one range.
     */
    assert_int_equal(t.nranges[STA_COLL_ALLGATHER], 1);
    assert_int_equal(sta_select_lookup(&t, STA_COLL_ALLGATHER, 0), STA_ALGO_HIERARCHICAL);
    assert_true(sta_algo_selectable(&t.dims, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL));
}

/*
 * Allgather with ranks contiguous per node (P = 4 = 2 × 2, one NIC): recursive doubling's
 * distance-1 step stays in the node, its distance-2 step sends n/2 from both ranks of a
 * node over the one NIC; the ring sends n/4 per step, one rank per node crossing.
 *   recursive  (20 + 2·(n/4)/10^4) + (20 + 2·(n/2)/1000) = 40 + 0.00105·n
 *   ring       3·(20 + (n/4)/1000)                       = 60 + 0.00075·n
 * equal at n = 20 / 0.0003 = 66666.67 B: recursive below, ring above. The two-tier
 * allgather, 21 + 0.0007·n, is below both, so the table is one range of it.
 */
static void test_allgather_shared_link(void **state)
{
    sta_dims_t d = dims_4x1;
    sta_select_t t;

    d.contiguous = 1;
    assert_int_equal(sta_select_build(&model_m, &d, STA_ALGO_AUTO, &t), STRATA_OK);
    assert_true(cost(&t, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, 66666) <
                cost(&t, STA_COLL_ALLGATHER, STA_ALGO_RING, 66666));
    assert_true(cost(&t, STA_COLL_ALLGATHER, STA_ALGO_RING, 66667) <
                cost(&t, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, 66667));
    assert_int_equal(t.nranges[STA_COLL_ALLGATHER], 1);
    assert_int_equal(t.ranges[STA_COLL_ALLGATHER][0].algo, STA_ALGO_HIERARCHICAL);
    /* allreduce runs over the node-major flat group either way: placement changes nothing */
    sta_select_t u;
    assert_int_equal(sta_select_build(&model_m, &dims_4x1, STA_ALGO_AUTO, &u), STRATA_OK);
    assert_int_equal(t.nranges[STA_COLL_ALLREDUCE], u.nranges[STA_COLL_ALLREDUCE]);
    assert_memory_equal(t.ranges[STA_COLL_ALLREDUCE], u.ranges[STA_COLL_ALLREDUCE],
                        sizeof(t.ranges[0][0]) * (size_t)t.nranges[STA_COLL_ALLREDUCE]);
}

/* Every boundary of every table is a crossing, and lookups are optimal where formulas are
 * linear (all but the chunked chains above one chunk). */
static void check_table(const sta_select_t *t)
{
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        int nr = t->nranges[c];
        assert_true(nr >= 1 && nr <= STA_SELECT_MAX_RANGES);
        assert_true(t->ranges[c][nr - 1].upper == SIZE_MAX);
        for (int i = 0; i + 1 < nr; i++) {
            size_t b = t->ranges[c][i].upper;
            assert_true(b < t->ranges[c][i + 1].upper);
            assert_int_not_equal(t->ranges[c][i].algo, t->ranges[c][i + 1].algo);
            assert_optimal(t, (sta_coll_t)c, b);
            assert_optimal(t, (sta_coll_t)c, b + 1);
        }
        assert_optimal(t, (sta_coll_t)c, 0);
        for (int e = 0; e <= STA_SELECT_MAX_LOG2; e++)
            assert_optimal(t, (sta_coll_t)c, (size_t)1 << e);
        if (c == STA_COLL_BROADCAST || c == STA_COLL_REDUCE)
            continue;
        for (int i = 0; i < 2000; i++) {
            size_t n = (size_t)rand() % ((size_t)1 << (rand() % 36));
            assert_optimal(t, (sta_coll_t)c, n);
        }
    }
}

static void test_property_many_shapes(void **state)
{
    static const sta_dims_t shapes[] = {
        {1, 1, 1, 1, 0, 0, 0, 0, 0, 0}, {2, 1, 2, 1, 0, 0, 0, 0, 0, 0}, {2, 2, 1, 1, 0, 0, 0, 0, 0, 0},
        {4, 2, 2, 1, 0, 0, 0, 0, 0, 0}, {4, 2, 2, 2, 0, 0, 0, 0, 0, 0}, {6, 3, 2, 1, 0, 0, 0, 0, 0, 0},
        {8, 2, 4, 2, 0, 0, 0, 0, 0, 0}, {16, 4, 4, 4, 0, 0, 0, 0, 0, 0}, {12, 3, 4, 1, 0, 0, 0, 0, 0, 0},
        {64, 8, 8, 2, 0, 0, 0, 0, 0, 0}, {5, 5, 1, 1, 0, 0, 0, 0, 0, 0}, {5, 2, 3, 1, 1, 0, 0, 0, 0, 0},
        /* the same with ranks known to be contiguous per node */
        {4, 2, 2, 1, 0, 1, 0, 0, 0, 0}, {8, 2, 4, 2, 0, 1, 0, 0, 0, 0}, {16, 4, 4, 4, 0, 1, 0, 0, 0, 0},
        {12, 3, 4, 1, 0, 1, 0, 0, 0, 0}, {6, 2, 3, 1, 0, 1, 0, 0, 0, 0}, {5, 2, 3, 1, 1, 1, 0, 0, 0, 0},
        /* ranks outnumbering a host's cores (emulated nodes on one host), and not */
        {4, 2, 2, 1, 0, 1, 4, 2, 0, 0}, {4, 4, 1, 1, 0, 1, 4, 2, 0, 0}, {8, 2, 4, 1, 0, 1, 8, 2, 0, 0},
        {8, 2, 4, 1, 0, 1, 4, 8, 0, 0},
        /* net bytes on the host's cores (tcp) */
        {4, 2, 2, 1, 0, 1, 4, 2, 1, 0}, {4, 4, 1, 1, 0, 1, 4, 2, 1, 0}, {8, 2, 4, 2, 0, 1, 8, 16, 1, 0},
    };
    sta_model_t models[3];
    sta_select_t t;

    models[0] = model_m;
    sta_model_default(&models[1]);
    models[2] = model_m;
    models[2].net.alpha_us = 2.0;                  /* a fast fabric: RDMA-like α and β */
    models[2].net.beta_gbps = 25.0;
    srand(7);
    for (size_t m = 0; m < 3; m++) {
        for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
            assert_int_equal(sta_select_build(&models[m], &shapes[s], STA_ALGO_AUTO, &t),
                             STRATA_OK);
            check_table(&t);
        }
    }
}

static void test_single_rank_table(void **state)
{
    sta_dims_t one = {.nranks = 1, .nnodes = 1, .local_size = 1, .nrails = 1};
    sta_select_t t;

    /* Every algorithm costs 0: the tie goes to the lowest-numbered, ring. */
    assert_int_equal(sta_select_build(&model_m, &one, STA_ALGO_AUTO, &t), STRATA_OK);
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        assert_int_equal(t.nranges[c], 1);
        assert_int_equal(sta_select_lookup(&t, (sta_coll_t)c, 12345), STA_ALGO_RING);
    }
}

static int fallback_lines;

static void count_sink(int level, unsigned long flags, const char *file, int line,
                       const char *msg)
{
    if (strstr(msg, "does not apply") != NULL)
        fallback_lines++;
}

static void test_forced_and_fallback(void **state)
{
    sta_dims_t p6 = {.nranks = 6, .nnodes = 3, .local_size = 2, .nrails = 1};
    sta_select_t t, autot;
    int saved_level = stu_log_level;

    assert_int_equal(sta_select_build(&model_m, &p6, STA_ALGO_AUTO, &autot), STRATA_OK);

    stu_log_set_sink(count_sink, STU_LOG_INFO);
    fallback_lines = 0;
    /* recursive: applies to allreduce, broadcast, reduce; not to reduce_scatter (none) nor
     * allgather (P = 6 is not a power of two): two fallbacks, one line each. */
    assert_int_equal(sta_select_build(&model_m, &p6, STA_ALGO_RECURSIVE, &t), STRATA_OK);
    assert_int_equal(fallback_lines, 2);
    assert_int_equal(t.nranges[STA_COLL_ALLREDUCE], 1);
    assert_int_equal(sta_select_lookup(&t, STA_COLL_ALLREDUCE, 1 << 30), STA_ALGO_RECURSIVE);
    assert_int_equal(sta_select_lookup(&t, STA_COLL_BROADCAST, 0), STA_ALGO_RECURSIVE);
    for (int c = STA_COLL_REDUCE_SCATTER; c <= STA_COLL_ALLGATHER; c++) {
        assert_int_equal(t.nranges[c], autot.nranges[c]);
        assert_memory_equal(t.ranges[c], autot.ranges[c],
                            sizeof(t.ranges[c][0]) * (size_t)t.nranges[c]);
    }

    /* leader: allreduce only; the other four fall back. */
    fallback_lines = 0;
    assert_int_equal(sta_select_build(&model_m, &p6, STA_ALGO_LEADER, &t), STRATA_OK);
    assert_int_equal(fallback_lines, 4);
    assert_int_equal(sta_select_lookup(&t, STA_COLL_ALLREDUCE, 0), STA_ALGO_LEADER);
    assert_int_not_equal(sta_select_lookup(&t, STA_COLL_BROADCAST, 0), STA_ALGO_LEADER);

    /* sta_select_log prints without crashing through every range (sink counts nothing). */
    sta_select_log(&t);
    stu_log_set_sink(NULL, STU_LOG_NONE);
    stu_log_level = saved_level;
}

static void test_build_rejects(void **state)
{
    sta_dims_t bad = {.nranks = 4, .nnodes = 2, .local_size = 3, .nrails = 1};
    sta_model_t m = model_m;
    sta_select_t t;

    memset(&t, 0x5a, sizeof(t));
    assert_int_equal(sta_select_build(&model_m, &bad, STA_ALGO_AUTO, &t), STRATA_ERR_INVALID);
    m.net.beta_gbps = -1;
    assert_int_equal(sta_select_build(&m, &dims_4x1, STA_ALGO_AUTO, &t), STRATA_ERR_INVALID);
    assert_int_equal(sta_select_build(&model_m, &dims_4x1, STA_ALGO_COUNT, &t),
                     STRATA_ERR_INVALID);
    assert_int_equal(t.nranges[0], 0x5a5a5a5a);    /* untouched on error */
}

static void test_algo_env(void **state)
{
    sta_algo_t a = STA_ALGO_RING;

    unsetenv("STRATA_ALGO");
    stu_param_reload();
    assert_int_equal(sta_algo_env_read(&a), STRATA_OK);          /* default "auto" */
    assert_int_equal(a, STA_ALGO_AUTO);
    setenv("STRATA_ALGO", "Hierarchical", 1);
    stu_param_reload();
    assert_int_equal(sta_algo_env_read(&a), STRATA_OK);
    assert_int_equal(a, STA_ALGO_HIERARCHICAL);
    setenv("STRATA_ALGO", "hierachical", 1);                     /* a typo is an error */
    stu_param_reload();
    assert_int_equal(sta_algo_env_read(&a), STRATA_ERR_INVALID);
    assert_int_equal(a, STA_ALGO_HIERARCHICAL);
    unsetenv("STRATA_ALGO");
    stu_param_reload();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_table),
        cmocka_unit_test(test_allgather_shared_link),
        cmocka_unit_test(test_property_many_shapes),
        cmocka_unit_test(test_single_rank_table),
        cmocka_unit_test(test_forced_and_fallback),
        cmocka_unit_test(test_build_rejects),
        cmocka_unit_test(test_algo_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
