/*
 * strata-plan train's pure parts against worked examples computed from first principles:
 * the unit conversions, the ring's effective bandwidth, the NVLink and InfiniBand
 * crossovers, the tensor-parallel layer example and its NVLink/InfiniBand ratio, the DP,
 * FSDP and PP volumes, the pipeline bubble, MFU and HFU, activation memory, the gradient
 * buckets, the warnings, the search and the command line.
 *
 * Several of these examples circulate with wrong figures; where a published figure is wrong
 * the test uses the right one and its comment says why. The usual mistake is a duplex
 * bandwidth (both directions added) used as if one direction could carry it: NVLink 4 is
 * 18 links x 25 GB/s = 450 GB/s per direction, quoted as 900 GB/s.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tools/plan/plan_train.h"
#include "tools/plan/plan_train_group.h"
#include "tools/plan/plan_train_opts.h"
#include "tools/plan/plan_train_search.h"
#include "tools/plan/plan_train_units.h"

#define GIB 1073741824.0

static void assert_near(double got, double want, double rel)
{
    if (!(fabs(got - want) <= rel * fmax(1e-12, fabs(want))))
        fail_msg("got %.12g, expected %.12g (relative tolerance %g)", got, want, rel);
}

/* A cluster of `nodes` x `g` GPUs: the node's link `intra` GB/s per direction, `nics` NICs
 * of `nic` GB/s; α as given; γ out of the way (GPUs reduce inside the copy). */
static stb_train_cluster_t cluster_of(int nodes, int g, double intra, double a_s, int nics,
                                      double nic, double a_n)
{
    stb_train_cluster_t c = {
        .nodes = nodes, .gpus_per_node = g, .nics = nics, .oversub = 1.0,
        .gpu_mem_bytes = 80e9,
        .fabric = {.shm = {.alpha_us = a_s, .beta_gbps = intra},
                   .net = {.alpha_us = a_n, .beta_gbps = nic},
                   .gamma_gbps = 1e15, .intra = STA_INTRA_SWITCH},
    };
    return c;
}

static stb_train_model_t model_of(double params, int layers, int hidden, int seq, int mb,
                                  int micro_batches)
{
    stb_train_model_t m = {
        .params = params, .layers = layers, .hidden = hidden, .seq = seq, .micro_batch = mb,
        .micro_batches = micro_batches, .value_bytes = 2, .grad_bytes = 2, .optim_bytes = 12,
        .top_k = 1,
    };
    return m;
}

static const stb_train_comm_t *row_of(const stb_train_result_t *r, const char *axis,
                                      const char *coll)
{
    for (int i = 0; i < r->ncomm; i++)
        if (strcmp(r->comm[i].axis, axis) == 0 && strcmp(r->comm[i].coll, coll) == 0)
            return &r->comm[i];
    fail_msg("no %s %s row", axis, coll);
    return NULL;
}

/* Whether a warning says every one of the (up to two) texts. */
static int has_warning(const stb_train_result_t *r, const char *a, const char *b)
{
    for (int i = 0; i < r->nwarnings; i++)
        if (strstr(r->warnings[i], a) != NULL && (b == NULL || strstr(r->warnings[i], b) != NULL))
            return 1;
    return 0;
}

static void plan(const stb_train_model_t *m, const stb_train_cluster_t *c,
                 const stb_train_compute_t *k, stb_train_layout_t l, stb_train_result_t *r)
{
    char err[320] = "";
    if (stb_train_resolve(m, c, k, &l, err, sizeof(err)) != STRATA_OK)
        fail_msg("resolve: %s", err);
    assert_int_equal(stb_train_eval(m, c, k, &l, r), STRATA_OK);
}

/* Vendors' units: bits vs bytes, duplex vs one direction. */
static void test_units(void **state)
{
    char note[128];
    double v = 0;

    /* InfiniBand NDR: 400 Gb/s = 50 GB/s per direction */
    assert_int_equal(stb_bw_parse("400Gb/s", &v, note, sizeof(note)), STRATA_OK);
    assert_near(v, 50.0, 1e-12);
    assert_non_null(strstr(note, "400 Gb/s = 50 GB/s per direction"));
    assert_int_equal(stb_bw_parse("400 Gbps", &v, NULL, 0), STRATA_OK);
    assert_near(v, 50.0, 1e-12);
    /* NVLink 4's 900 GB/s is both directions: 450 per direction */
    assert_int_equal(stb_bw_parse("900GB/s-duplex", &v, note, sizeof(note)), STRATA_OK);
    assert_near(v, 450.0, 1e-12);
    assert_non_null(strstr(note, "duplex, halved"));
    /* A100's NVLink 3: 600 GB/s duplex. nccl-tests' 235 GB/s busbw is 78 % of the 300 GB/s
     * one direction carries (not 40 % of 600, and not "235 Gbps": those are bytes). */
    assert_int_equal(stb_bw_parse("600 GBps -bidir", &v, NULL, 0), STRATA_OK);
    assert_near(v, 300.0, 1e-12);
    assert_near(234.89 / v, 0.783, 1e-3);
    /* DGX H100: 8 ConnectX-7 of 200 Gb/s = 1.6 Tb/s (a figure sometimes misprinted as
     * 1.6 Gbps) = 200 GB/s per direction */
    assert_int_equal(stb_bw_parse("1.6Tb/s", &v, NULL, 0), STRATA_OK);
    assert_near(v, 200.0, 1e-12);
    /* PCIe 5.0 x16: 32 GT/s x 16 lanes x 128/130 = 504.1 Gb/s = 63.0 GB/s per direction.
     * "Gen5 x16: ~32 GB/s per direction" is Gen4's figure (16 GT/s). */
    assert_int_equal(stb_bw_parse("504.123Gb/s", &v, NULL, 0), STRATA_OK);
    assert_near(v, 32.0 * 16 * 128 / 130 / 8, 1e-4);
    assert_int_equal(stb_bw_parse("450", &v, note, sizeof(note)), STRATA_OK);   /* GB/s */
    assert_near(v, 450.0, 1e-12);
    assert_non_null(strstr(note, "GB/s assumed"));
    assert_int_equal(stb_bw_parse("3.2 TB/s", &v, NULL, 0), STRATA_OK);
    assert_near(v, 3200.0, 1e-12);
    v = -7;
    static const char *const bad_bw[] = {"fast", "10Xb/s", "-1GB/s", "0GB/s", "5 GB", "GB/s",
                                         "5GB/s-duplexx", ""};
    for (size_t i = 0; i < sizeof(bad_bw) / sizeof(bad_bw[0]); i++)
        assert_int_equal(stb_bw_parse(bad_bw[i], &v, NULL, 0), STRATA_ERR_INVALID);
    assert_true(v == -7);

    /* 80 B parameters in fp32 = 320 GB = 2560 Gb: 12.8 s at 200 Gb/s, 1.6 s at 1600 Gb/s */
    double bytes = 80e9 * 4;
    assert_int_equal(stb_bw_parse("200Gb/s", &v, NULL, 0), STRATA_OK);
    assert_near(bytes / (v * 1e9), 12.8, 1e-12);
    assert_int_equal(stb_bw_parse("1600Gb/s", &v, NULL, 0), STRATA_OK);
    assert_near(bytes / (v * 1e9), 1.6, 1e-12);

    assert_int_equal(stb_latency_parse("1.5us", &v), STRATA_OK);
    assert_near(v, 1.5, 1e-12);
    assert_int_equal(stb_latency_parse("500 ns", &v), STRATA_OK);
    assert_near(v, 0.5, 1e-12);
    assert_int_equal(stb_latency_parse("0.002ms", &v), STRATA_OK);
    assert_near(v, 2.0, 1e-12);
    assert_int_equal(stb_latency_parse("2", &v), STRATA_OK);
    assert_int_equal(stb_latency_parse("2 weeks", &v), STRATA_ERR_INVALID);
    assert_int_equal(stb_count_parse("7B", &v), STRATA_OK);
    assert_near(v, 7e9, 1e-12);
    assert_int_equal(stb_count_parse("1.5T", &v), STRATA_OK);
    assert_near(v, 1.5e12, 1e-12);
    assert_int_equal(stb_count_parse("70e9", &v), STRATA_OK);
    assert_int_equal(stb_count_parse("0", &v), STRATA_ERR_INVALID);
    assert_int_equal(stb_mem_parse("80GiB", &v), STRATA_OK);
    assert_near(v, 80 * GIB, 1e-12);
    assert_int_equal(stb_mem_parse("80", &v), STRATA_OK);
    assert_near(v, 80e9, 1e-12);
    assert_int_equal(stb_width_parse("bf16", &v), STRATA_OK);
    assert_near(v, 2.0, 1e-12);
    assert_int_equal(stb_width_parse("4", &v), STRATA_OK);
    assert_int_equal(stb_width_parse("17", &v), STRATA_ERR_INVALID);
}

/*
 * 8-way allreduce on an NVSwitch node: the ring's effective bandwidth is β·P/(2(P-1)) =
 * 450·8/14 = 257.1 GB/s (not the 514 GB/s that 900 GB/s would give: 900 is both directions).
 * 32-way over 4 such nodes with one 400 Gb/s NIC each: the library picks hierarchical,
 * 1/(1.75/450 + 1.5/50) = 29.5 GB/s; the inter-node phase alone is 33.3 GB/s, so "30-40
 * GB/s" holds only at its low end, and only one NIC per node keeps it that low.
 */
static void test_ring_and_hierarchical_bandwidth(void **state)
{
    stb_train_cluster_t one = cluster_of(1, 8, 450, 0, 8, 50, 0);
    stb_train_group_t g;
    const char *algo;
    double n = 1e13;   /* the α terms vanish */

    stb_train_group_make(&one, 8, 1, &g);
    assert_string_equal(stb_train_group_tier(&g), "intra");
    double ms = stb_train_group_coll_ms(&g, STA_COLL_ALLREDUCE, n, &algo);
    assert_string_equal(algo, "ring");
    assert_near(n / (ms * 1e6), 450.0 * 8 / 14, 1e-9);

    stb_train_cluster_t four = cluster_of(4, 8, 450, 1, 1, 50, 2);
    stb_train_group_make(&four, 32, 1, &g);
    assert_int_equal(g.dims.nnodes, 4);
    assert_int_equal(g.dims.local_size, 8);
    assert_int_equal(g.dims.nrails, 1);
    ms = stb_train_group_coll_ms(&g, STA_COLL_ALLREDUCE, n, &algo);
    assert_string_equal(algo, "hierarchical");
    /* pipelined (tests/unit/test_cost_intra.c): the network's 1.5·n/50 GB/s, the node's
     * phases hidden but for the fill and drain, 2·sqrt(n·12 µs·(2·7/8)/450 GB/s) */
    double us = 14.0 + 1.5 * n / 50e3 + 2 * sqrt(n * 12.0 * (1.75 / 450e3));
    assert_near(n / (ms * 1e6), n / (us * 1e3), 1e-6);
    assert_near(n / (ms * 1e6), 33.33, 1e-3);
}

/* n* = α·β: NVLink at 1 µs and 450 GB/s per direction crosses over at 450 kB (the "~1 MB"
 * often quoted uses the 900 GB/s duplex figure); InfiniBand NDR at 2 µs and 50 GB/s at
 * 100 kB. */
static void test_crossovers(void **state)
{
    sta_tier_t nvlink = {.alpha_us = 1.0, .beta_gbps = 450.0};
    sta_tier_t ib = {.alpha_us = 2.0, .beta_gbps = 50.0};
    assert_near(sta_tier_crossover_bytes(&nvlink), 450e3, 1e-12);
    assert_near(sta_tier_crossover_bytes(&ib), 100e3, 1e-12);
}

/*
 * A tensor-parallel layer: hidden 8192, batch 32, sequence 2048, bf16: the activation is
 * 32·2048·8192·2 B = 1 GiB; a ring allreduce over large P sends about 2 x that per GPU, so
 * two allreduces send about 4 GiB (4.29 GB). With TP = 8 on NVLink (450 GB/s per direction)
 * an allreduce takes 2·7/8·1 GiB/450 GB/s = 4.18 ms; over InfiniBand (8 nodes, one 50 GB/s
 * NIC per GPU) 37.6 ms: 9x, not the 18x obtained by dividing the duplex 900 GB/s by one
 * direction's 50. The 70B version: 320 allreduces of 50 MB per step take 62.2 ms on NVLink
 * (194 µs each, not ~100 µs) and 560 ms on 50 GB/s links, 9x again (not 580 ms, 18x).
 */
static void test_tp_layer_example(void **state)
{
    stb_train_cluster_t nv = cluster_of(1, 8, 450, 0, 8, 50, 0);
    stb_train_cluster_t ib = cluster_of(8, 1, 450, 0, 1, 50, 0);
    stb_train_group_t gn, gi;
    const char *algo;
    double act = 32.0 * 2048 * 8192 * 2;

    assert_near(act, GIB, 0);
    assert_near(stb_train_sent_per_byte("allreduce", 8) * act * 2, 2 * 1.75 * GIB, 1e-12);
    stb_train_group_make(&nv, 8, 1, &gn);
    stb_train_group_make(&ib, 8, 1, &gi);
    assert_string_equal(stb_train_group_tier(&gi), "inter");
    double t_nv = stb_train_group_coll_ms(&gn, STA_COLL_ALLREDUCE, act, &algo);
    double t_ib = stb_train_group_coll_ms(&gi, STA_COLL_ALLREDUCE, act, &algo);
    assert_near(t_nv, 2 * 7.0 / 8 * act / 450e9 * 1e3, 1e-9);
    assert_near(t_nv, 4.1757, 1e-4);
    assert_near(t_ib, 37.581, 1e-4);
    assert_near(t_ib / t_nv, 9.0, 1e-9);

    double t50_nv = stb_train_group_coll_ms(&gn, STA_COLL_ALLREDUCE, 50e6, &algo);
    double t50_ib = stb_train_group_coll_ms(&gi, STA_COLL_ALLREDUCE, 50e6, &algo);
    assert_near(t50_nv * 1e3, 194.444, 1e-5);
    assert_near(320 * t50_nv, 62.222, 1e-4);
    assert_near(320 * t50_ib, 560.0, 1e-9);

    /* In a plan: 4 allreduces per layer per micro-batch (2 forward, 2 backward). */
    stb_train_model_t m = model_of(1e9, 1, 8192, 2048, 32, 1);
    stb_train_compute_t k = {.compute_ms = 1000};
    stb_train_result_t r;
    plan(&m, &nv, &k, (stb_train_layout_t){.tp = 8, .pp = 1}, &r);
    const stb_train_comm_t *tp = row_of(&r, "tp", "allreduce");
    assert_near(tp->calls, 4, 0);
    assert_near(tp->call_bytes, GIB, 0);
    assert_near(tp->total_ms, 4 * t_nv, 1e-12);
    assert_near(tp->gpu_bytes, 4 * 1.75 * GIB, 1e-12);
    assert_string_equal(tp->tier, "intra");
    assert_near(tp->exposed_ms, tp->total_ms, 0);   /* on the critical path */
}

/*
 * DDP of a 7B model, bf16 gradients (14 GB): a ring allreduce sends 2(P-1)/P·14 GB per GPU,
 * "2·params bytes = 28 GB" in the large-P limit; with a 50 GB/s link per GPU (64 nodes of 1)
 * that is 551 ms (560 as P grows). FSDP: 7e9/32 layers·2 B = 437.5 MB gathered per layer,
 * 8.6 ms per allgather at 50 GB/s over 64 ranks, gathered twice and reduce-scattered once per
 * layer per micro-batch. PP: 16 micro-batches of 16 MB activations over a 50 GB/s boundary:
 * 16 x 0.32 ms = 5.12 ms forward (and as much backward).
 */
static void test_dp_fsdp_pp_volumes(void **state)
{
    stb_train_cluster_t c = cluster_of(64, 1, 450, 0, 1, 50, 0);
    stb_train_model_t m = model_of(7e9, 32, 4096, 2048, 1, 1);
    stb_train_compute_t k = {.compute_ms = 1000};
    stb_train_result_t r;

    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 1, .buckets = 1}, &r);
    const stb_train_comm_t *dp = row_of(&r, "dp", "allreduce");
    assert_int_equal(dp->group, 64);
    assert_near(dp->call_bytes, 14e9, 1e-12);
    assert_near(dp->gpu_bytes, 2 * 63.0 / 64 * 14e9, 1e-12);
    assert_near(dp->total_ms, 551.25, 1e-9);

    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 1, .zero = 3}, &r);
    const stb_train_comm_t *ag = row_of(&r, "dp", "allgather");
    const stb_train_comm_t *rs = row_of(&r, "dp", "reduce_scatter");
    assert_near(ag->call_bytes, 437.5e6, 1e-12);
    assert_near(ag->call_ms, 63.0 / 64 * 437.5e6 / 50e9 * 1e3, 1e-9);
    assert_near(ag->calls, 2 * 32, 0);
    assert_near(rs->calls, 32, 0);
    assert_near(r.mem_weights, 14e9 / 64, 1e-12);   /* ZeRO-3 shards the weights */

    stb_train_cluster_t four = cluster_of(4, 1, 450, 0, 1, 50, 0);
    stb_train_model_t pm = model_of(1e9, 4, 8000, 1000, 1, 16);   /* 1·1000·8000·2 = 16 MB */
    plan(&pm, &four, &k, (stb_train_layout_t){.tp = 1, .pp = 4}, &r);
    const stb_train_comm_t *pp = row_of(&r, "pp", "send/recv");
    assert_near(pp->call_bytes, 16e6, 1e-12);
    assert_near(pp->call_ms, 0.32, 1e-12);
    assert_near(pp->calls / 2 * pp->call_ms, 5.12, 1e-12);   /* the forward hand-offs */
    assert_near(pp->gpu_bytes, 2 * 16 * 16e6, 1e-12);
    assert_string_equal(pp->tier, "inter");
    /* hidden but for the fill and the drain: 2·(4-1) hand-offs */
    assert_near(pp->exposed_ms, 6 * 0.32, 1e-12);
}

/*
 * The pipeline widget's example: 4 stages, 8 micro-batches, 64 MiB of activations per
 * micro-batch (2·2048·8192·2 B), 81.92 ms of compute per step. Bubble (p-1)/(M+p-1) = 3/11
 * = 27.3 %, efficiency 72.7 %; the 1F1B estimate (p-1)/M = 37.5 % is the bubble relative to
 * the work, not a fraction of the step. The fix to reach 80 %: M >= 4(p-1) = 12 (16 works
 * but is not the least), or 3 stages. A middle stage sends 8 x 64 MiB forward and as much
 * backward: 1 GiB per step. Over the 81.92 ms that is 6.55 GB/s per direction, 104.9 Gb/s
 * for both directions together; "97.66 Gbps" divides 1 GiB as if it were 10^9 bytes.
 * Another example: with 4 stages, 4 micro-batches lose 3/7 = 42.9 % of the step, and 32
 * lose 3/35 = 8.6 % (the overhead (p-1)/M = 9.4 %, not 31/32 or 3.1 %).
 */
static void test_pipeline_bubble(void **state)
{
    stb_train_cluster_t c = cluster_of(4, 1, 450, 0, 1, 50, 0);
    stb_train_model_t m = model_of(1e9, 80, 8192, 2048, 2, 8);
    stb_train_compute_t k = {.compute_ms = 81.92};
    stb_train_result_t r;

    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 4}, &r);
    assert_near(r.bubble_fraction, 3.0 / 11, 1e-12);
    assert_near(r.pipeline_efficiency, 8.0 / 11, 1e-12);
    assert_near(r.bubble_1f1b, 3.0 / 8, 1e-12);
    const stb_train_comm_t *pp = row_of(&r, "pp", "send/recv");
    assert_near(pp->call_bytes, 64 * 1048576.0, 0);
    assert_near(pp->gpu_bytes, GIB, 1e-12);
    assert_near(r.stage_gbps_avg, 6.5536, 1e-9);
    assert_near(r.stage_gbps_avg * 2 * 8, 104.8576, 1e-9);
    assert_int_equal(r.act_inflight, 4);   /* 1F1B: stage 0 holds p micro-batches */
    assert_true(has_warning(&r, "from 8 to 12, or cut stages from 4 to 3", NULL));

    m.micro_batches = 12;   /* exactly 80 %: no warning */
    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 4}, &r);
    assert_near(r.pipeline_efficiency, 0.8, 1e-12);
    assert_false(has_warning(&r, "pipeline efficiency", NULL));

    m.micro_batches = 4;
    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 4}, &r);
    assert_near(r.bubble_fraction, 3.0 / 7, 1e-12);
    m.micro_batches = 32;
    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 4}, &r);
    assert_near(r.bubble_fraction, 3.0 / 35, 1e-12);
    assert_near(r.bubble_1f1b, 3.0 / 32, 1e-12);
}

/*
 * A 2B model on 8 A100s (312 TFLOP/s bf16 peak, half of it reached), sequence 2048, 16
 * sequences per step, activation recomputation on: 8·2e9·2048·16 / 8 GPUs = 65.5 TFLOP per
 * GPU, 0.42 s at 156 TFLOP/s. That 50 % is the hardware FLOPs utilisation; the model's
 * (6, not 8, FLOPs per parameter and token) is at most 37.5 %. The gradients (fp32, 8 GB)
 * take 2·7/8·8 GB / 300 GB/s = 46.7 ms to all-reduce inside the node ("16 GB / 300 = 53 ms"
 * forgets the (P-1)/P; either way it is well under the 0.42 s of compute, not over it), and
 * with one bucket none of it hides. Four such nodes with one 200 Gb/s NIC each: the library
 * goes hierarchical, 46.7 ms inside the nodes pipelined with 2·3/4·8 GB / 25 GB/s = 480 ms
 * between them (the "0.64 s" sends 2 x 8 GB through the NIC, the large-P ring bound).
 */
static void test_mfu_hfu_and_ddp(void **state)
{
    stb_train_cluster_t c = cluster_of(1, 8, 300, 0, 8, 25, 0);
    stb_train_model_t m = model_of(2e9, 24, 2048, 2048, 1, 2);
    stb_train_compute_t k = {.peak_tflops = 312, .achieved = 0.5};
    stb_train_result_t r;

    m.grad_bytes = 4;
    m.recompute = STB_RECOMPUTE_FULL;
    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 1, .buckets = 1}, &r);
    assert_near(r.tokens, 2048.0 * 16, 0);
    assert_near(r.hw_flops / 8, 65.536e12, 1e-12);
    assert_near(r.compute_ms, 420.1025641, 1e-9);
    assert_near(r.hfu / r.mfu, 8.0 / 6, 1e-12);
    assert_true(r.mfu <= 0.375 && r.hfu <= 0.5);
    const stb_train_comm_t *dp = row_of(&r, "dp", "allreduce");
    assert_near(dp->total_ms, 46.6666667, 1e-8);
    assert_string_equal(dp->tier, "intra");
    assert_near(dp->exposed_ms, dp->total_ms, 1e-12);   /* one bucket: ready at the end */
    assert_near(r.step_ms, r.compute_ms + dp->total_ms, 1e-12);
    assert_near(r.mfu, 0.375 * r.compute_ms / r.step_ms, 1e-12);

    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 1}, &r);   /* the best count */
    assert_int_equal(r.layout.buckets, 0);
    assert_true(r.buckets_best > 1);
    assert_true(row_of(&r, "dp", "allreduce")->exposed_ms < 46.6666667 / 10);

    stb_train_cluster_t c4 = cluster_of(4, 8, 300, 0, 1, 25, 0);
    m.micro_batches = 1;   /* 32 GPUs x 1 x 1: 32 sequences */
    plan(&m, &c4, &k, (stb_train_layout_t){.tp = 1, .pp = 1, .buckets = 1}, &r);
    dp = row_of(&r, "dp", "allreduce");
    assert_string_equal(dp->algo, "hierarchical");
    assert_string_equal(dp->tier, "intra+inter");
    /* pipelined with no α anywhere: the node's 46.7 ms hide behind the network's 480 */
    assert_near(dp->total_ms, 480.0, 1e-6);
}

/* Memory: 16 bytes a parameter unsharded with bf16 gradients (18 with fp32 ones: a 2B model
 * needs 36 GB before activations); ZeRO 1, 2, 3 shard the optimizer, then the gradients, then
 * the weights. Activations per layer (Korthikanti et al.): GPT-3 175B (h 12288, 96 heads,
 * s 2048, micro-batch 1, no TP) keeps 2048·12288·(34 + 5·96·2048/12288) B = 2.87 GB per layer
 * without recomputation (a figure of "about 4 MB" is 700x too small), 50.3 MB (the layer's
 * input) with full recomputation. */
static void test_memory(void **state)
{
    stb_train_cluster_t c = cluster_of(1, 8, 450, 0, 8, 50, 0);
    stb_train_model_t m = model_of(2e9, 24, 2048, 2048, 1, 1);
    stb_train_compute_t k = {.compute_ms = 100};
    stb_train_result_t r;
    double per_gpu = 2e9;   /* DP only: each GPU holds the whole model */

    m.grad_bytes = 4;
    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 1}, &r);
    assert_near(r.mem_weights + r.mem_grads + r.mem_optim, 18 * per_gpu, 1e-12);
    assert_near(r.mem_weights + r.mem_grads + r.mem_optim, 36e9, 1e-12);
    for (int z = 1; z <= 3; z++) {
        plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 1, .zero = z}, &r);
        assert_near(r.mem_optim, 12 * per_gpu / 8, 1e-12);
        assert_near(r.mem_grads, 4 * per_gpu / (z >= 2 ? 8 : 1), 1e-12);
        assert_near(r.mem_weights, 2 * per_gpu / (z >= 3 ? 8 : 1), 1e-12);
    }

    stb_train_model_t g3 = model_of(175e9, 96, 12288, 2048, 1, 1);
    g3.heads = 96;
    assert_near(stb_train_act_layer_bytes(&g3, 1), 2048.0 * 12288 * 114, 1e-12);
    assert_near(stb_train_act_layer_bytes(&g3, 1), 2.8689e9, 1e-4);
    g3.recompute = STB_RECOMPUTE_SELECTIVE;
    assert_near(stb_train_act_layer_bytes(&g3, 8), 2048.0 * 12288 * 34 / 8, 1e-12);
    g3.recompute = STB_RECOMPUTE_FULL;
    assert_near(stb_train_act_layer_bytes(&g3, 1), 2.0 * 2048 * 12288, 1e-12);
}

/* A linear cost per bucket, c(x) = a + x/B in ms. */
typedef struct lin {
    double a, ms_per_byte;
} lin_t;

static double lin_cost(const void *ctx, double bytes)
{
    const lin_t *l = ctx;
    return l->a + bytes * l->ms_per_byte;
}

/*
 * Gradient buckets. G = 500 MB over 8 GPUs at 300 GB/s, "2 passes" and 5 µs a bucket:
 * c(k) = 5 µs + 2·(500 MB/k)/300 GB/s; 16 buckets cost 16 x 0.2133 = 3.41 ms in all (0.2133,
 * not 0.215: 3.44 ms is a rounding slip), and under a 200 ms backward only the last bucket
 * shows: 0.213 ms. More buckets keep shrinking the last one until their latencies fill the
 * window, so the best count is as many as the layers give. When the sync cannot hide
 * (a = 1 ms, G/B = 300 ms, window 200 ms), exposed(k) = 100 + k + 200/k is least at k = 14:
 * 128.29 ms.
 */
static void test_buckets(void **state)
{
    lin_t seed = {.a = 0.005, .ms_per_byte = 2.0 / 300e9 * 1e3};
    double e;

    assert_near(16 * lin_cost(&seed, 500e6 / 16), 3.41333, 1e-5);
    assert_near(stb_train_buckets_exposed(lin_cost, &seed, 500e6, 200, 16), 0.213333, 1e-5);
    assert_int_equal(stb_train_buckets_best(lin_cost, &seed, 500e6, 200, 16, &e), 16);
    assert_near(e, 0.005 + 3.333333 / 16, 1e-5);
    assert_int_equal(stb_train_buckets_best(lin_cost, &seed, 500e6, 200, 64, &e), 64);

    lin_t slow = {.a = 1.0, .ms_per_byte = 300.0 / 1e9};
    assert_int_equal(stb_train_buckets_best(lin_cost, &slow, 1e9, 200, 100, &e), 14);
    assert_near(e, 100 + 14 + 200.0 / 14, 1e-12);
    assert_near(stb_train_buckets_exposed(lin_cost, &slow, 1e9, 200, 1), 301.0, 1e-12);
    assert_int_equal(stb_train_buckets_best(lin_cost, &slow, 1e9, 200, 1, &e), 1);
}

/* TP across nodes is costed through the NICs and warned about, with the switch's figure. */
static void test_tp_across_nodes_warns(void **state)
{
    stb_train_cluster_t c = cluster_of(2, 8, 450, 3.4, 8, 50, 9.6);
    stb_train_model_t m = model_of(13e9, 40, 6144, 2048, 1, 4);
    stb_train_compute_t k = {.compute_ms = 500};
    stb_train_result_t r;

    m.heads = 48;
    plan(&m, &c, &k, (stb_train_layout_t){.tp = 16, .pp = 1}, &r);
    const stb_train_comm_t *tp = row_of(&r, "tp", "allreduce");
    assert_int_equal(tp->group_nodes, 2);
    assert_string_equal(tp->tier, "intra+inter");
    assert_true(has_warning(&r, "TP=16 spans 2 nodes", "keep TP <= 8"));
    stb_train_result_t in;
    plan(&m, &c, &k, (stb_train_layout_t){.tp = 8, .pp = 2}, &in);
    assert_true(row_of(&in, "tp", "allreduce")->call_ms < tp->call_ms);
}

/*
 * ZeRO-1 reduce-scatters the gradients in buckets and gathers the updated parameters once,
 * exposed; HSDP (ZeRO-3 sharded over one node's 8, replicated over 2 nodes) gathers inside
 * the node and all-reduces the shards' gradients across the nodes.
 */
static void test_zero1_and_hsdp(void **state)
{
    stb_train_cluster_t c = cluster_of(2, 8, 450, 0, 8, 50, 0);
    stb_train_model_t m = model_of(7e9, 32, 4096, 2048, 1, 1);
    stb_train_compute_t k = {.compute_ms = 1000};
    stb_train_result_t r;

    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 1, .zero = 1}, &r);
    const stb_train_comm_t *rs = row_of(&r, "dp", "reduce_scatter");
    const stb_train_comm_t *ag = row_of(&r, "dp", "allgather");
    assert_int_equal(rs->group, 16);
    assert_near(rs->calls * rs->call_bytes, 14e9, 1e-12);   /* all gradients, in buckets */
    assert_near(ag->calls, 1, 0);
    assert_near(ag->call_bytes, 14e9, 1e-12);
    assert_near(ag->exposed_ms, ag->call_ms, 0);
    assert_true(rs->exposed_ms < rs->total_ms);

    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 1, .zero = 3, .zero_group = 8}, &r);
    ag = row_of(&r, "dp", "allgather");
    assert_int_equal(ag->group, 8);
    assert_string_equal(ag->tier, "intra");
    const stb_train_comm_t *rep = row_of(&r, "dp", "allreduce");
    assert_int_equal(rep->group, 2);
    assert_string_equal(rep->tier, "inter");
    assert_near(rep->calls * rep->call_bytes, 14e9 / 8, 1e-12);   /* one shard's gradients */
    assert_near(r.mem_weights, 14e9 / 8, 1e-12);
}

/* A group spanning more nodes than a leaf holds runs its net tier at 1/oversubscription. */
static void test_oversubscription(void **state)
{
    stb_train_cluster_t c = cluster_of(4, 8, 450, 0, 8, 50, 0);
    stb_train_group_t flat, over;
    const char *algo;

    stb_train_group_make(&c, 4, 8, &flat);
    c.oversub = 3.0;
    c.leaf_nodes = 2;
    stb_train_group_make(&c, 4, 8, &over);
    assert_near(over.fabric.net.beta_gbps, flat.fabric.net.beta_gbps / 3, 1e-12);
    assert_near(stb_train_group_coll_ms(&over, STA_COLL_ALLREDUCE, 1e12, &algo) /
                    stb_train_group_coll_ms(&flat, STA_COLL_ALLREDUCE, 1e12, &algo), 3.0, 1e-9);
    stb_train_group_t inside;
    stb_train_group_make(&c, 2, 8, &inside);   /* two nodes, one leaf */
    assert_near(inside.fabric.net.beta_gbps, flat.fabric.net.beta_gbps, 1e-12);

    stb_train_model_t m = model_of(7e9, 32, 4096, 2048, 1, 1);
    stb_train_compute_t k = {.compute_ms = 1000};
    stb_train_result_t r;
    plan(&m, &c, &k, (stb_train_layout_t){.tp = 8, .pp = 1}, &r);
    assert_true(has_warning(&r, "cross the leaf uplinks", "1/3"));
}

/* Mixture of experts: what a token uses, and the alltoall that moves the tokens. */
static void test_moe(void **state)
{
    stb_train_cluster_t c = cluster_of(1, 8, 450, 0, 8, 50, 0);
    stb_train_model_t m = model_of(50e9, 32, 4096, 4096, 1, 1);
    stb_train_compute_t k = {.compute_ms = 500};
    stb_train_result_t r;

    m.experts = 8;
    m.top_k = 2;
    double experts = 8 * 8.0 * 4096 * 4096 * 32;
    assert_near(stb_train_expert_params(&m), experts, 1e-12);
    assert_near(stb_train_active_params(&m), 50e9 - 6 * 8.0 * 4096 * 4096 * 32, 1e-12);
    plan(&m, &c, &k, (stb_train_layout_t){.tp = 1, .pp = 1, .ep = 8}, &r);
    const stb_train_comm_t *ep = row_of(&r, "ep", "alltoall");
    assert_near(ep->call_bytes, 4096.0 * 2 * 4096 * 2, 1e-12);
    assert_near(ep->calls, 4 * 32, 0);
    assert_int_equal(ep->group, 8);
    assert_near(r.model_flops, 6 * stb_train_active_params(&m) * 8 * 4096, 1e-12);
}

/* Inputs that cannot be a plan are refused with the reason. */
static void test_resolve_rejects(void **state)
{
    stb_train_cluster_t c = cluster_of(2, 8, 450, 0, 8, 50, 0);
    stb_train_model_t m = model_of(7e9, 24, 4096, 2048, 1, 4);
    stb_train_compute_t k = {.compute_ms = 100};
    char err[320];
    struct {
        stb_train_layout_t l;
        const char *why;
    } bad[] = {
        {{.tp = 3, .pp = 1}, "must divide the 16 GPUs"},
        {{.tp = 1, .pp = 16}, "--pp 16 must divide the 24 layers"},
        {{.tp = 1, .pp = 1, .dp = 8}, "--dp 8"},
        {{.tp = 1, .pp = 1, .ep = 2}, "--ep 2"},
        {{.tp = 1, .pp = 1, .zero = 4}, "--zero"},
        {{.tp = 1, .pp = 1, .zero_group = 4}, "needs --zero"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(stb_train_resolve(&m, &c, &k, &bad[i].l, err, sizeof(err)),
                         STRATA_ERR_INVALID);
        if (strstr(err, bad[i].why) == NULL)
            fail_msg("case %zu: '%s' does not say '%s'", i, err, bad[i].why);
    }
    stb_train_compute_t none = {0};
    stb_train_layout_t l = {.tp = 1, .pp = 1};
    assert_int_equal(stb_train_resolve(&m, &c, &none, &l, err, sizeof(err)), STRATA_ERR_INVALID);
    assert_non_null(strstr(err, "--peak-tflops"));
    m.experts = 1000;   /* more expert parameters than parameters */
    assert_int_equal(stb_train_resolve(&m, &c, &k, &l, err, sizeof(err)), STRATA_ERR_INVALID);
}

/* --search: only layouts that fit, fastest first, TP inside a node unless allowed. */
static void test_search(void **state)
{
    stb_train_cluster_t c = cluster_of(4, 8, 450, 3.4, 8, 50, 9.6);
    stb_train_model_t m = model_of(13e9, 40, 5120, 4096, 1, 8);
    stb_train_compute_t k = {.peak_tflops = 989, .achieved = 0.5};
    stb_train_layout_t base = {.tp = 8, .pp = 1};
    static stb_train_result_t rows[STB_TRAIN_SEARCH_MAX];
    stb_train_search_count_t count, cross;
    char err[320];

    m.heads = 64;   /* divisible by a TP of 16 or 32, for the run that lets TP cross nodes */
    assert_int_equal(stb_train_resolve(&m, &c, &k, &base, err, sizeof(err)), STRATA_OK);
    stb_train_search_in_t in = {.model = &m, .cluster = &c, .compute = &k, .base = &base,
                                .global_batch = 32};
    int n = stb_train_search(&in, rows, STB_TRAIN_SEARCH_MAX, &count);
    assert_true(n > 0 && n == count.fit && count.fit <= count.tried);
    for (int i = 0; i < n; i++) {
        assert_true(rows[i].fits);
        assert_true(rows[i].layout.tp <= 8);
        assert_int_equal(rows[i].layout.tp * rows[i].layout.pp * rows[i].layout.dp, 32);
        assert_int_equal(rows[i].layout.dp * rows[i].layout.micro_batches, 32);
        if (i > 0)
            assert_true(rows[i - 1].step_ms <= rows[i].step_ms);
    }
    in.allow_tp_cross = 1;
    stb_train_search(&in, rows, STB_TRAIN_SEARCH_MAX, &cross);
    assert_true(cross.tried > count.tried);
}

/* The command line: every unit read and noted, the fabric's sources. */
static void test_opts(void **state)
{
    stb_train_opts_t o;
    char err[320];
    char *argv[] = {"train", "--params", "70B", "--layers=80", "--hidden", "8192",
                    "--intra-bw", "900GB/s-duplex", "--nic-bw", "400Gb/s", "--intra-alpha",
                    "500ns", "--intra-kind", "pcie", "--gpu-mem", "141GB", "--recompute",
                    "selective", "--value-bytes", "bf16", "--grad-bytes", "fp32", "--tp", "8",
                    "--zero", "3", "--search", "--json", "--top", "3"};
    int argc = (int)(sizeof(argv) / sizeof(argv[0]));

    assert_int_equal(stb_train_opts_parse(argc, argv, &o, err, sizeof(err)), STRATA_OK);
    assert_near(o.model.params, 70e9, 1e-12);
    assert_int_equal(o.model.layers, 80);
    assert_near(o.value[STA_FIELD_SHM_BETA], 450, 1e-12);
    assert_near(o.value[STA_FIELD_NET_BETA], 50, 1e-12);
    assert_near(o.value[STA_FIELD_SHM_ALPHA], 0.5, 1e-12);
    assert_int_equal(o.kind, STA_INTRA_PCIE);
    assert_near(o.cluster.gpu_mem_bytes, 141e9, 1e-12);
    assert_int_equal(o.model.recompute, STB_RECOMPUTE_SELECTIVE);
    assert_near(o.model.grad_bytes, 4, 0);
    assert_true(o.search && o.json && o.top == 3 && o.layout.tp == 8 && o.layout.zero == 3);
    assert_non_null(strstr(o.intra_note, "900 GB/s duplex, halved"));
    assert_int_equal(stb_train_opts_fabric(&o), STRATA_OK);
    assert_int_equal(o.cluster.fabric.intra, STA_INTRA_PCIE);
    assert_string_equal(stb_train_opts_source(&o, STA_FIELD_SHM_BETA), "command line");
    assert_string_equal(stb_train_opts_source(&o, STA_FIELD_NET_ALPHA), "default");
    assert_near(o.cluster.fabric.net.alpha_us, STB_TRAIN_DEF_NIC_ALPHA_US, 0);

    char *d[] = {"train", "--intra-kind", "pcie"};
    assert_int_equal(stb_train_opts_parse(3, d, &o, err, sizeof(err)), STRATA_OK);
    assert_int_equal(stb_train_opts_fabric(&o), STRATA_OK);
    assert_near(o.cluster.fabric.shm.alpha_us, STB_TRAIN_DEF_PCIE_ALPHA_US, 0);

    static const struct {
        const char *argv[3];
        const char *why;
    } bad[] = {
        {{"train", "--frobnicate", "1"}, "--frobnicate: unknown option"},
        {{"train", "--nic-bw", "fast"}, "--nic-bw 'fast'"},
        {{"train", "--recompute", "some"}, "none, selective or full"},
        {{"train", "--zero", "5"}, "--zero '5'"},
        {{"train", "--search=1", NULL}, "--search takes no value"},
        {{"train", "--tp", NULL}, "--tp needs a value"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int n = bad[i].argv[2] != NULL ? 3 : 2;
        err[0] = '\0';
        assert_int_equal(stb_train_opts_parse(n, (char *const *)bad[i].argv, &o, err,
                                              sizeof(err)), STRATA_ERR_INVALID);
        if (strstr(err, bad[i].why) == NULL)
            fail_msg("'%s' does not say '%s'", err, bad[i].why);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_ring_and_hierarchical_bandwidth),
        cmocka_unit_test(test_crossovers),
        cmocka_unit_test(test_tp_layer_example),
        cmocka_unit_test(test_dp_fsdp_pp_volumes),
        cmocka_unit_test(test_pipeline_bubble),
        cmocka_unit_test(test_mfu_hfu_and_ddp),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_tp_across_nodes_warns),
        cmocka_unit_test(test_zero1_and_hsdp),
        cmocka_unit_test(test_oversubscription),
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_resolve_rejects),
        cmocka_unit_test(test_search),
        cmocka_unit_test(test_opts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
