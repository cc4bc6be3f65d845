/*
 * The emulation of NCCL 2.28.9's cost table (tools/lib/nccl_model.h) against
 * values worked out by hand from NCCL's formulas, NCCL_ALGO / NCCL_PROTO in
 * NCCL's syntax, the entries NCCL never offers, and strata-plan nccl's
 * command line (tools/plan/plan_nccl.h).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tools/lib/nccl_model.h"
#include "tools/plan/plan_nccl.h"

/* Two nodes of one Hopper GPU, one 10 Gbit/s NIC (1.25 GB/s, 5 us), 2 channels. */
static stb_nccl_topo_t topo_2x1(void)
{
    stb_nccl_topo_t t = {
        .nnodes = 2, .ppn = 1, .compcap_idx = NCCL_HOPPER_COMPCAP_IDX, .nvlink = 1,
        .collnet = 1, .collnet_ag_rs = 1, .collnet_heads = 1, .ll128 = 1, .nchannels = 2,
        .bw_intra = 0.625, .bw_inter = 0.625, .bw_collnet_intra = 0.625, .net_latency_us = 5,
    };
    return t;
}

static void build_ok(const stb_nccl_topo_t *t, const char *algo, const char *proto,
                     stb_nccl_model_t *m)
{
    ncclTunerConstants_v5_t k;
    char err[128];

    stb_nccl_constants_default(&k);
    if (stb_nccl_model_build(t, &k, algo, proto, m, err, sizeof(err)) != STRATA_OK)
        fail_msg("build: %s", err);
}

/* Ring LL, AllReduce, P = 2: latency 6.6 + 2 inter steps x (Tree's NET LL 5.0 + 5), bandwidth
 * min(LL ceiling, 2 channels x 0.625 x 0.5) x P/nsteps = 0.625 GB/s. */
static void model_ring_ll_by_hand(void **state)
{
    float t[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    stb_nccl_topo_t topo = topo_2x1();
    stb_nccl_model_t m;

    build_ok(&topo, NULL, NULL, &m);
    stb_nccl_table(&m, ncclFuncAllReduce, 8000, 1, t);
    assert_float_equal(t[NCCL_ALGO_RING][NCCL_PROTO_LL], 26.6 + 8000 / (1000 * 0.625), 1e-3);
    /* CollNet Chain: 2 x 0.625 x 0.5 GB/s; latency: one GPU per node exposes Tree's NET
     * Simple latency, 14, + 5 + 5 (the flush). */
    assert_float_equal(t[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE],
                       24.0 + 8000 / (1000 * 0.625), 1e-3);
    /* Three calls grouped: the ring pays its latency three times. */
    stb_nccl_table(&m, ncclFuncAllReduce, 8000, 3, t);
    assert_float_equal(t[NCCL_ALGO_RING][NCCL_PROTO_LL], 3 * 26.6 + 8000 / (1000 * 0.625), 1e-3);
}

static void model_entries_offered(void **state)
{
    float t[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    stb_nccl_topo_t topo = topo_2x1();
    stb_nccl_model_t m;
    int a, p;

    build_ok(&topo, NULL, NULL, &m);
    stb_nccl_table(&m, ncclFuncBroadcast, 4096, 1, t);
    for (a = 0; a < NCCL_NUM_ALGORITHMS; a++)
        for (p = 0; p < NCCL_NUM_PROTOCOLS; p++)
            assert_int_equal(t[a][p] >= 0.0f, a == NCCL_ALGO_RING);
    /* One GPU per node: PAT Simple for AllGather; no Direct without an NVSwitch; no NVLS. */
    stb_nccl_table(&m, ncclFuncAllGather, 4096, 1, t);
    assert_true(t[NCCL_ALGO_PAT][NCCL_PROTO_SIMPLE] >= 0.0f);
    assert_true(t[NCCL_ALGO_PAT][NCCL_PROTO_LL] < 0.0f);
    assert_true(t[NCCL_ALGO_COLLNET_DIRECT][NCCL_PROTO_SIMPLE] < 0.0f);
    assert_true(t[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] < 0.0f);
    assert_int_equal(stb_nccl_pick(t, &a, &p), 0);
    /* Without CollNet there is no CollNet entry. */
    topo.collnet = 0;
    build_ok(&topo, NULL, NULL, &m);
    stb_nccl_table(&m, ncclFuncAllReduce, 4096, 1, t);
    assert_true(t[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] < 0.0f);
    /* Two GPUs per node: no PAT. */
    topo.ppn = 2;
    build_ok(&topo, NULL, NULL, &m);
    stb_nccl_table(&m, ncclFuncAllGather, 4096, 1, t);
    assert_true(t[NCCL_ALGO_PAT][NCCL_PROTO_SIMPLE] < 0.0f);
    /* Nothing usable gives no pick. */
    for (a = 0; a < NCCL_NUM_ALGORITHMS; a++)
        for (p = 0; p < NCCL_NUM_PROTOCOLS; p++)
            t[a][p] = -1.0f;
    assert_int_equal(stb_nccl_pick(t, &a, &p), -1);
}

static void model_user_lists(void **state)
{
    float t[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    stb_nccl_topo_t topo = topo_2x1();
    ncclTunerConstants_v5_t k;
    stb_nccl_model_t m;
    char err[128];

    build_ok(&topo, "allreduce:tree", "^LL", &m);
    stb_nccl_table(&m, ncclFuncAllReduce, 4096, 1, t);
    assert_true(t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] < 0.0f);
    assert_true(t[NCCL_ALGO_TREE][NCCL_PROTO_LL] < 0.0f);
    assert_true(t[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] >= 0.0f);
    stb_nccl_table(&m, ncclFuncAllGather, 4096, 1, t);
    assert_true(t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] >= 0.0f);
    stb_nccl_constants_default(&k);
    assert_int_equal(stb_nccl_model_build(&topo, &k, "ring;tree", NULL, &m, err, sizeof(err)),
                     STRATA_ERR_INVALID);
    assert_int_equal(stb_nccl_model_build(&topo, &k, "CollNet", NULL, &m, err, sizeof(err)),
                     STRATA_ERR_INVALID);
    assert_non_null(strstr(err, "CollNet"));
    assert_int_equal(stb_nccl_model_build(&topo, &k, "bcast:ring", NULL, &m, err, sizeof(err)),
                     STRATA_ERR_INVALID);
    topo.ppn = 0;
    assert_int_equal(stb_nccl_model_build(&topo, &k, NULL, NULL, &m, err, sizeof(err)),
                     STRATA_ERR_INVALID);
}

static strata_status_t parse(stb_plan_nccl_opts_t *o, const char *line)
{
    static char buf[256];   /* the options point into it after the call */
    char *argv[32], *save = NULL, err[256];
    int argc = 0;

    snprintf(buf, sizeof(buf), "nccl %s", line);
    for (char *t = strtok_r(buf, " ", &save); t != NULL && argc < 31; t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    return stb_plan_nccl_parse(argc, argv, o, err, sizeof(err));
}

static void plan_nccl_options(void **state)
{
    stb_plan_nccl_opts_t o;
    stb_nccl_topo_t t;

    assert_int_equal(parse(&o, ""), STRATA_OK);
    assert_int_equal(o.nodes, 2);
    assert_int_equal(o.per_node, 1);
    assert_int_equal(o.coll, ncclFuncAllReduce);
    assert_int_equal(o.tuner_version, 5);
    assert_int_equal(parse(&o, "-N 16 -L 8 -R 4 --gpu ampere --collnet --coll all --tuner 6 "
                               "--mode 2 -e 64M --csv -"), STRATA_OK);
    assert_int_equal(o.nodes, 16);
    assert_int_equal(o.gpu, NCCL_AMPERE_COMPCAP_IDX);
    assert_true(o.all_colls && o.collnet);
    assert_int_equal(o.max_bytes, (size_t)64 << 20);
    assert_string_equal(o.csv, "-");
    stb_plan_nccl_topo(&o, 25.0, 2.0, &t);
    assert_int_equal(t.nchannels, 8);
    assert_float_equal(t.bw_inter, 25.0 * 4 / 8, 1e-9);
    assert_float_equal(t.bw_collnet_intra, STB_PLAN_NCCL_NVLINK_GBPS, 1e-9);
    assert_int_equal(parse(&o, "--coll reducescatter"), STRATA_OK);
    assert_int_equal(o.coll, ncclFuncReduceScatter);
    assert_int_equal(parse(&o, "-L 2 -R 4"), STRATA_ERR_INVALID);
    assert_int_equal(parse(&o, "--gpu kepler"), STRATA_ERR_INVALID);
    assert_int_equal(parse(&o, "--mode 3"), STRATA_ERR_INVALID);
    assert_int_equal(parse(&o, "--tuner 4"), STRATA_ERR_INVALID);
    assert_int_equal(parse(&o, "-b 1M -e 1K"), STRATA_ERR_INVALID);
    assert_int_equal(parse(&o, "--bogus"), STRATA_ERR_INVALID);
    assert_int_equal(parse(&o, "extra"), STRATA_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest cases[] = {
        cmocka_unit_test(model_ring_ll_by_hand),
        cmocka_unit_test(model_entries_offered),
        cmocka_unit_test(model_user_lists),
        cmocka_unit_test(plan_nccl_options),
    };
    return cmocka_run_group_tests_name("nccl_model", cases, NULL, NULL);
}
