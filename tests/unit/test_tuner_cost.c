/*
 * The tuner's pure parts (plugin/tuner_cost.h): which functions NCCL_ALGO and
 * NCCL_PROTO constrain, the shapes and modes it accepts, what each mode
 * prices, that CollNet costs follow the library's model, and getChunkSize's
 * rule.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algos/profile.h"
#include "plugin/tuner_cost.h"
#include "tools/lib/nccl_model.h"

static void forced(const char *algo, const char *proto, int expect_mask)
{
    int f[NCCL_NUM_FUNCTIONS], mask = 0;

    stp_tuner_forced_parse(algo, proto, f);
    for (int i = 0; i < NCCL_NUM_FUNCTIONS; i++)
        mask |= f[i] << i;
    if (mask != expect_mask)
        fail_msg("NCCL_ALGO='%s' NCCL_PROTO='%s': mask 0x%x, expected 0x%x", algo ? algo : "",
                 proto ? proto : "", mask, expect_mask);
}

#define ALL_FUNCS 0x1f
#define BIT(f) (1 << (f))

static void cost_forced_parse(void **state)
{
    forced(NULL, NULL, 0);
    forced("", "", 0);
    forced("ring", NULL, ALL_FUNCS);
    forced(NULL, "^LL128", ALL_FUNCS);
    forced("allreduce:ring,collnetchain", NULL, BIT(ncclFuncAllReduce));
    forced("AllGather:ring;broadcast:ring", NULL, BIT(ncclFuncAllGather) | BIT(ncclFuncBroadcast));
    forced("tree;allreduce:ring", NULL, ALL_FUNCS);
    forced(NULL, "reducescatter:simple", BIT(ncclFuncReduceScatter));
    forced("allreduce:ring", "reduce:LL", BIT(ncclFuncAllReduce) | BIT(ncclFuncReduce));
    forced("nosuchfunc:ring", NULL, 0);     /* NCCL refuses it at init; nothing to honour */
}

static sta_model_t model_of(double alpha, double beta)
{
    sta_model_t m;
    sta_model_default(&m);
    m.net.alpha_us = alpha;
    m.net.beta_gbps = beta;
    return m;
}

static strata_status_t build(stp_tuner_t *t, stp_tuner_mode_t mode, int n, int l, int r,
                             size_t chunk)
{
    ncclTunerConstants_v5_t k;
    stp_tuner_shape_t s = {.nranks = n * l, .nnodes = n, .ppn = l, .nrails = r};
    sta_model_t m = model_of(9, 1.25);

    stb_nccl_constants_default(&k);
    return stp_tuner_build(t, mode, &s, &m, STA_ALGO_AUTO, &k, NULL, NULL, chunk);
}

static void cost_build_checks(void **state)
{
    stp_tuner_t t;

    assert_int_equal(build(&t, STP_TUNER_COLLNET, 2, 1, 1, STP_TUNER_CHAIN_CHUNK), STRATA_OK);
    assert_int_equal(build(&t, STP_TUNER_ALL, 1024, 8, 8, STP_TUNER_CHAIN_CHUNK), STRATA_OK);
    assert_int_equal(build(&t, STP_TUNER_OFF, 2, 1, 1, STP_TUNER_CHAIN_CHUNK), STRATA_ERR_INVALID);
    assert_int_equal(build(&t, STP_TUNER_COLLNET, 1, 8, 1, STP_TUNER_CHAIN_CHUNK),
                     STRATA_ERR_INVALID);                            /* one node */
    assert_int_equal(build(&t, STP_TUNER_COLLNET, 2, 2, 3, STP_TUNER_CHAIN_CHUNK),
                     STRATA_ERR_INVALID);                            /* rails > ppn */
    assert_int_equal(build(&t, STP_TUNER_COLLNET, 2, 1, 1, 100), STRATA_ERR_INVALID);

    ncclTunerConstants_v5_t k;
    stp_tuner_shape_t s = {.nranks = 4, .nnodes = 2, .ppn = 2, .nrails = 1};
    sta_model_t bad = model_of(-1, 1);
    stb_nccl_constants_default(&k);
    assert_int_equal(stp_tuner_build(&t, STP_TUNER_COLLNET, &s, &bad, STA_ALGO_AUTO, &k, NULL,
                                     NULL, STP_TUNER_CHAIN_CHUNK), STRATA_ERR_INVALID);
}

/* Which entries each mode prices: CollNet and NVLS Simple always, Ring and Tree with ALL,
 * never PAT or NVLS Tree, and never a protocol CollNet does not run. */
static void cost_entries_per_mode(void **state)
{
    stp_tuner_t one, all;

    assert_int_equal(build(&one, STP_TUNER_COLLNET, 4, 4, 2, STP_TUNER_CHAIN_CHUNK), STRATA_OK);
    assert_int_equal(build(&all, STP_TUNER_ALL, 4, 4, 2, STP_TUNER_CHAIN_CHUNK), STRATA_OK);
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
            double c1 = stp_tuner_cost_us(&one, ncclFuncAllReduce, a, p, 1 << 20);
            double c2 = stp_tuner_cost_us(&all, ncclFuncAllReduce, a, p, 1 << 20);
            int collnet = (a == NCCL_ALGO_COLLNET_CHAIN || a == NCCL_ALGO_COLLNET_DIRECT ||
                           a == NCCL_ALGO_NVLS) && p == NCCL_PROTO_SIMPLE;
            int flat = a == NCCL_ALGO_RING || a == NCCL_ALGO_TREE;
            assert_int_equal(c1 >= 0.0, collnet);
            assert_int_equal(c2 >= 0.0, collnet || flat);
            if (c1 >= 0.0)
                assert_true(c1 == c2);
        }
    }
    /* Tree is AllReduce only; Broadcast has no CollNet. */
    assert_true(stp_tuner_cost_us(&all, ncclFuncAllGather, NCCL_ALGO_TREE, NCCL_PROTO_LL, 8) < 0);
    assert_true(stp_tuner_cost_us(&all, ncclFuncBroadcast, NCCL_ALGO_COLLNET_DIRECT,
                                  NCCL_PROTO_SIMPLE, 8) < 0);
    assert_true(stp_tuner_cost_us(&all, 7, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE, 8) < 0);
}

/* One GPU per node, 2 nodes: CollNet Chain of n <= one 32 KiB piece costs the fixed staging
 * latency, the piece through host memory twice, and one library allreduce of the piece. */
static void cost_collnet_small(void **state)
{
    stp_tuner_t t;
    sta_dims_t d = {.nranks = 2, .nnodes = 2, .local_size = 1, .nrails = 1, .contiguous = 1};
    sta_model_t m = model_of(9, 1.25);
    double piece = 32 * 1024, best = -1.0;

    assert_int_equal(build(&t, STP_TUNER_COLLNET, 2, 1, 1, STP_TUNER_CHAIN_CHUNK), STRATA_OK);
    for (int a = 0; a < STA_ALGO_COUNT; a++) {
        double c = sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, (sta_algo_t)a, (size_t)piece);
        if (c >= 0.0 && (best < 0.0 || c < best))
            best = c;
    }
    double expect = 2 * STP_TUNER_HOST_ALPHA_US + 2 * piece / (STP_TUNER_HOST_BETA_GBPS * 1e3) +
                    best;
    for (size_t n = 0; n <= 32 * 1024; n = n ? n * 4 : 8) {
        double c = stp_tuner_cost_us(&t, ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN,
                                     NCCL_PROTO_SIMPLE, n);
        assert_true(fabs(c - expect) < 1e-9 * expect);
    }
    /* Many pieces: at least one library call per piece. */
    double big = stp_tuner_cost_us(&t, ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN,
                                   NCCL_PROTO_SIMPLE, (size_t)1 << 30);
    assert_true(big > ((double)(1 << 30) / (512 * 1024)) * best);
}

/* A larger Chain chunk (v6) means fewer calls: never dearer for big messages. */
static void cost_chunk_rule(void **state)
{
    stp_tuner_t v5, v6;

    assert_int_equal(stp_tuner_chunk(ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN,
                                     NCCL_PROTO_SIMPLE, STP_TUNER_CHAIN_CHUNK),
                     STP_TUNER_NCCL_STEP_BYTES);
    assert_int_equal(stp_tuner_chunk(ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN,
                                     NCCL_PROTO_SIMPLE, 64 * 1024), 64 * 1024);
    assert_int_equal(stp_tuner_chunk(ncclFuncAllReduce, NCCL_ALGO_RING, NCCL_PROTO_SIMPLE,
                                     STP_TUNER_CHAIN_CHUNK), STP_TUNER_CHAIN_CHUNK);
    assert_int_equal(stp_tuner_chunk(ncclFuncAllGather, NCCL_ALGO_COLLNET_CHAIN,
                                     NCCL_PROTO_SIMPLE, STP_TUNER_CHAIN_CHUNK),
                     STP_TUNER_CHAIN_CHUNK);
    assert_int_equal(build(&v5, STP_TUNER_COLLNET, 8, 1, 1, STP_TUNER_CHAIN_CHUNK), STRATA_OK);
    assert_int_equal(build(&v6, STP_TUNER_COLLNET, 8, 1, 1, STP_TUNER_NCCL_STEP_BYTES), STRATA_OK);
    for (size_t n = (size_t)64 << 20; n <= ((size_t)1 << 32); n *= 4)
        assert_true(stp_tuner_cost_us(&v6, ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN,
                                      NCCL_PROTO_SIMPLE, n) <
                    stp_tuner_cost_us(&v5, ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN,
                                      NCCL_PROTO_SIMPLE, n));
}

/* apply writes only usable entries, never a NaN or negative one, and nothing when forced. */
static void cost_apply_rules(void **state)
{
    float t[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    stp_tuner_t all;

    assert_int_equal(build(&all, STP_TUNER_ALL, 4, 2, 1, STP_TUNER_CHAIN_CHUNK), STRATA_OK);
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
            t[a][p] = (a + p) % 2 ? -1.0f : 5.0f;
    t[NCCL_ALGO_RING][NCCL_PROTO_LL] = NAN;
    t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = -2.0f;
    int written = stp_tuner_apply(&all, ncclFuncAllReduce, 4096, t);
    assert_true(written > 0);
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
            if ((a + p) % 2 && !(a == NCCL_ALGO_RING && p < NCCL_PROTO_SIMPLE))
                assert_true(t[a][p] == -1.0f);
        }
    }
    assert_true(isnan(t[NCCL_ALGO_RING][NCCL_PROTO_LL]));
    assert_true(t[NCCL_ALGO_RING][NCCL_PROTO_LL128] == -2.0f);
    all.forced[ncclFuncAllReduce] = 1;
    assert_int_equal(stp_tuner_apply(&all, ncclFuncAllReduce, 4096, t), 0);
}

int main(void)
{
    const struct CMUnitTest cases[] = {
        cmocka_unit_test(cost_forced_parse),
        cmocka_unit_test(cost_build_checks),
        cmocka_unit_test(cost_entries_per_mode),
        cmocka_unit_test(cost_collnet_small),
        cmocka_unit_test(cost_chunk_rule),
        cmocka_unit_test(cost_apply_rules),
    };
    return cmocka_run_group_tests_name("tuner_cost", cases, NULL, NULL);
}
