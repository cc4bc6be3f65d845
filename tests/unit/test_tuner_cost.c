/*
 * The tuner's pure parts (plugin/tuner_cost.h): which functions NCCL_ALGO and
 * NCCL_PROTO constrain, the shapes and modes it accepts, what each mode
 * prices, that CollNet costs follow the library's model, that the tuner, the
 * CollNet and the library cost one shape alike, and getChunkSize's rule.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algos/profile.h"
#include "plugin/collnet.h"
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

/* Records of n CollNet members, hosts[p] the host of member p, each reporting `cores`. */
static void records(uint8_t *recs, int n, const uint64_t *hosts, int cores)
{
    for (int p = 0; p < n; p++) {
        stp_cn_record_t r;
        memset(&r, 0, sizeof(r));
        assert_int_equal(stp_cn_record_local(&r), STRATA_OK);
        r.ok = 1;
        r.rank = (uint32_t)p;
        r.nranks = (uint32_t)n;
        r.host = hosts[p];
        r.cores = cores;
        stp_cn_record_encode(recs + (size_t)p * STP_CN_RECORD_BYTES, &r);
    }
}

/*
 * One shape, three consumers, one set of costs: the tuner's CollNet stage (init's arguments:
 * 4 nodes, this host's 2 cores, tcp), the CollNet's own table (4 members' records, one per
 * host, 2 cores each, over tcp) and the collective library's dims for 4 one-rank nodes on
 * 4 hosts of 2 cores over tcp (coll/comm.c's rule, written out). The tcp rule is on in all
 * three, and with a NIC faster than a core's stream it costs the large sizes more than ib.
 */
static void cost_consumers_agree(void **state)
{
    enum { N = 4 };
    const uint64_t own[N] = {11, 22, 33, 44}, shared[N] = {7, 7, 7, 7};
    uint8_t recs[N * STP_CN_RECORD_BYTES];
    ncclTunerConstants_v5_t k;
    stp_tuner_shape_t s = {.nranks = N * 2, .nnodes = N, .ppn = 2, .nrails = 1,
                           .host_cores = 2, .transport = "tcp"};
    const sta_dims_t lib = {.nranks = N, .nnodes = N, .local_size = 1, .nrails = 1,
                            .contiguous = 1, .host_ranks = 1, .host_cores = 2, .net_cpu = 1};
    sta_model_t m = model_of(9, 12.5);
    stp_tuner_t t, t2;
    sta_dims_t cn;

    (void)state;
    stb_nccl_constants_default(&k);
    assert_int_equal(stp_tuner_build(&t, STP_TUNER_COLLNET, &s, &m, STA_ALGO_AUTO, &k, NULL,
                                     NULL, STP_TUNER_CHAIN_CHUNK), STRATA_OK);
    records(recs, N, own, 2);
    stp_cn_dims(recs, N, "tcp", &cn);
    assert_memory_equal(&cn, &lib, sizeof(lib));
    assert_memory_equal(&t.inter.dims, &lib, sizeof(lib));
    sta_select_t cn_table;
    assert_int_equal(sta_select_build(&m, &cn, STA_ALGO_AUTO, &cn_table), STRATA_OK);
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        assert_int_equal(cn_table.nranges[c], t.inter.nranges[c]);
        for (size_t n = 8; n <= ((size_t)1 << 30); n *= 4)
            for (int a = 0; a < STA_ALGO_COUNT; a++)
                assert_true(sta_cost_us(&m, &cn, (sta_coll_t)c, (sta_algo_t)a, n) ==
                            sta_cost_us(&m, &t.inter.dims, (sta_coll_t)c, (sta_algo_t)a, n));
    }
    /* a second context: the same table */
    assert_int_equal(stp_tuner_build(&t2, STP_TUNER_COLLNET, &s, &m, STA_ALGO_AUTO, &k, NULL,
                                     NULL, STP_TUNER_CHAIN_CHUNK), STRATA_OK);
    assert_memory_equal(&t.inter, &t2.inter, sizeof(t.inter));
    /* over ib the cores carry no bytes: cheaper at 64 MiB with a 12.5 GB/s NIC */
    stp_tuner_shape_t ib = s;
    ib.transport = "ib";
    assert_int_equal(stp_tuner_build(&t2, STP_TUNER_COLLNET, &ib, &m, STA_ALGO_AUTO, &k, NULL,
                                     NULL, STP_TUNER_CHAIN_CHUNK), STRATA_OK);
    assert_int_equal(t2.inter.dims.net_cpu, 0);
    assert_true(stp_tuner_cost_us(&t2, ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN,
                                  NCCL_PROTO_SIMPLE, (size_t)64 << 20) <
                stp_tuner_cost_us(&t, ncclFuncAllReduce, NCCL_ALGO_COLLNET_CHAIN,
                                  NCCL_PROTO_SIMPLE, (size_t)64 << 20));
    /* members sharing one host (emulated nodes): the CollNet counts them, as the library
     * counts ranks sharing a host */
    records(recs, N, shared, 2);
    stp_cn_dims(recs, N, "tcp", &cn);
    assert_int_equal(cn.host_ranks, N);
    assert_int_equal(cn.host_cores, 2);
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
        cmocka_unit_test(cost_consumers_agree),
    };
    return cmocka_run_group_tests_name("tuner_cost", cases, NULL, NULL);
}
