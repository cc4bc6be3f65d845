/*
 * The NCCL tuner in the built plugin, called as NCCL 2.28.9 calls it: dlopen
 * the library, init its ncclNet for a communicator, then the tuner from the
 * same library with that communicator's hash, nRanks, nNodes, the NVLink
 * domain info and NCCL's default constants; getCollInfo with a float[7][3]
 * cast to float**, -1.0 in the entries NCCL cannot use, a regBuff flag and a
 * pointer to nChannels; finalize. NCCL's own starting tables come from the
 * emulation of its model (tools/lib/nccl_model.h).
 *
 * The model values the tuner reads are set in the environment before each
 * net init (the plugin re-reads STRATA_* when its first net context opens),
 * so the outcomes do not depend on this host's devices.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nccl/tuner.h"
#include "tools/lib/plugin_loader.h"
#include "tools/lib/nccl_model.h"

#define T_COMM_ID 0x7475ull
#define T_TABLE_FLOATS (NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS)

/* What the tuner logged through the logger it was given. */
static int t_warnings;
static char t_last_info[1024];
static int t_info_tables;       /* INFO lines with "tuner: AllReduce" (the init table) */

static void t_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                     const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(t_last_info, sizeof(t_last_info), fmt, ap);
    va_end(ap);
    if (level == NCCL_LOG_WARN) {
        t_warnings++;
        fprintf(stderr, "tuner WARN: %s\n", t_last_info);
    }
    if (level == NCCL_LOG_INFO && strstr(t_last_info, "tuner: AllReduce") != NULL)
        t_info_tables++;
}

/* One "communicator": the net context NCCL opens first, and the tuner's. */
typedef struct t_comm {
    stb_plugin_t *net;
    int inited;                 /* the net context is open */
    const ncclTuner_v5_t *v5;
    const ncclTuner_v6_t *v6;
    void *ctx;
} t_comm_t;

/* The model the tuner uses in these tests: explicit, so no host value leaks in. */
static void t_env(const char *mode, double alpha, double beta)
{
    char a[32], b[32];

    snprintf(a, sizeof(a), "%g", alpha);
    snprintf(b, sizeof(b), "%g", beta);
    setenv("STRATA_TUNER", mode, 1);
    setenv("STRATA_NET_ALPHA_US", a, 1);
    setenv("STRATA_NET_BETA_GBPS", b, 1);
    setenv("STRATA_GAMMA_GBPS", "12", 1);
    unsetenv("STRATA_PROFILE");
    unsetenv("STRATA_ALGO");
    unsetenv("NCCL_ALGO");
    unsetenv("NCCL_PROTO");
}

/* Opens the library and its net context for comm_id (net 0 = no net context at all). */
static void t_open(t_comm_t *c, uint64_t net_id)
{
    char why[256];

    memset(c, 0, sizeof(*c));
    if (stb_plugin_load(NULL, 11, 0, &c->net, why, sizeof(why)) != STRATA_OK)
        fail_msg("%s", why);
    if (net_id != 0 && stb_plugin_init(c->net, net_id) != ncclSuccess)
        fail_msg("net init failed");
    c->inited = net_id != 0;
    c->v5 = stb_plugin_dlsym(c->net, "ncclTunerPlugin_v5");
    c->v6 = stb_plugin_dlsym(c->net, "ncclTunerPlugin_v6");
    assert_non_null(c->v5);
    assert_non_null(c->v6);
}

/* Tuner init as NCCL calls it; returns the context (NULL: opted out). */
static void *t_init(t_comm_t *c, int v6, uint64_t id, int nnodes, int ppn)
{
    ncclTunerConstants_v5_t k;
    ncclNvlDomainInfo_v5_t nvl = {nnodes, ppn, ppn};
    void *ctx = (void *)0x1;     /* the tuner must overwrite it */

    stb_nccl_constants_default(&k);
    ncclTunerConstants_v5_t before = k;
    ncclResult_t res = v6 ? c->v6->init(&ctx, id, (size_t)nnodes * ppn, (size_t)nnodes, t_logger,
                                        &nvl, &k)
                          : c->v5->init(&ctx, id, (size_t)nnodes * ppn, (size_t)nnodes, t_logger,
                                        &nvl, &k);
    assert_int_equal(res, ncclSuccess);
    assert_memory_equal(&k, &before, sizeof(k));    /* NCCL's constants are read, not edited */
    c->ctx = ctx;
    return ctx;
}

static void t_close(t_comm_t *c)
{
    assert_int_equal(c->v5->finalize(c->ctx), ncclSuccess);
    c->ctx = NULL;
    if (c->inited)
        assert_int_equal(stb_plugin_finalize(c->net), ncclSuccess);
    stb_plugin_unload(c->net);
}

/* NCCL's emulated model for a shape (Hopper, NVLink, one NIC per node). */
static void t_nccl(stb_nccl_model_t *m, int nnodes, int ppn, double nic_gbps, double lat_us,
                   int collnet)
{
    stb_nccl_topo_t topo = {
        .nnodes = nnodes, .ppn = ppn, .compcap_idx = NCCL_HOPPER_COMPCAP_IDX, .nvlink = 1,
        .nvswitch = ppn > 1, .collnet = collnet, .collnet_ag_rs = 1, .collnet_heads = 1,
        .ll128 = 1, .nchannels = 2, .bw_intra = nic_gbps / 2, .bw_inter = nic_gbps / 2,
        .bw_collnet_intra = ppn > 1 ? 40.0 : nic_gbps / 2, .net_latency_us = lat_us,
    };
    ncclTunerConstants_v5_t k;
    char err[128];

    stb_nccl_constants_default(&k);
    if (stb_nccl_model_build(&topo, &k, NULL, NULL, m, err, sizeof(err)) != STRATA_OK)
        fail_msg("NCCL model: %s", err);
}

/* getCollInfo on table as NCCL passes it; nChannels must stay as NCCL set it (0). */
static void t_call(t_comm_t *c, int func, size_t n, int pipe_ops, int reg_buff,
                   float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS])
{
    int nch = 0;

    assert_int_equal(c->v5->getCollInfo(c->ctx, (ncclFunc_t)func, n, pipe_ops, (float **)table,
                                        NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, reg_buff, &nch),
                     ncclSuccess);
    assert_int_equal(nch, 0);
}

/* NCCL's pick from a table, as one number (-1: none). */
static int t_pick(float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS])
{
    int a, p;
    return stb_nccl_pick(table, &a, &p) == 0 ? a * NCCL_NUM_PROTOCOLS + p : -1;
}

static void tuner_symbols(void **state)
{
    t_comm_t c;

    t_open(&c, 0);
    assert_string_equal(c.v5->name, "Strata");
    assert_string_equal(c.v6->name, "Strata");
    assert_non_null(c.v6->getChunkSize);
    /* One implementation behind both versions. */
    assert_ptr_equal(c.v5->getCollInfo, c.v6->getCollInfo);
    assert_ptr_equal(c.v5->finalize, c.v6->finalize);
    stb_plugin_unload(c.net);
}

/* NULL context: getCollInfo, getChunkSize and finalize succeed and change nothing. */
static void t_null_ctx_is_inert(t_comm_t *c)
{
    float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], before[T_TABLE_FLOATS];
    size_t chunk = 256 * 1024;
    stb_nccl_model_t m;

    assert_null(c->ctx);
    t_nccl(&m, 4, 8, 25, 2, 1);
    stb_nccl_table(&m, ncclFuncAllReduce, 1 << 20, 1, table);
    memcpy(before, table, sizeof(before));
    t_call(c, ncclFuncAllReduce, 1 << 20, 1, 0, table);
    assert_memory_equal(table, before, sizeof(before));
    assert_int_equal(c->v6->getChunkSize(NULL, ncclFuncAllReduce, 1 << 20,
                                         NCCL_ALGO_COLLNET_CHAIN, NCCL_PROTO_SIMPLE, 2, &chunk),
                     ncclSuccess);
    assert_int_equal(chunk, 256 * 1024);
    assert_int_equal(c->v5->finalize(NULL), ncclSuccess);
}

static void tuner_optout_other_net(void **state)
{
    t_comm_t c;

    t_env("1", 9, 1.25);
    t_open(&c, T_COMM_ID);
    /* A communicator whose net is not ours: no net context has its hash. */
    assert_null(t_init(&c, 0, T_COMM_ID + 1, 4, 8));
    t_null_ctx_is_inert(&c);
    /* With no net context of ours in the process at all. */
    assert_int_equal(stb_plugin_finalize(c.net), ncclSuccess);
    c.inited = 0;
    assert_null(t_init(&c, 1, T_COMM_ID, 4, 8));
    t_null_ctx_is_inert(&c);
    t_close(&c);
    assert_int_equal(t_warnings, 0);
}

static void tuner_optout_env(void **state)
{
    t_comm_t c;

    t_env("0", 9, 1.25);
    t_open(&c, T_COMM_ID);
    assert_null(t_init(&c, 0, T_COMM_ID, 4, 8));
    t_null_ctx_is_inert(&c);
    t_close(&c);

    /* One node: nothing crosses the net. */
    t_env("1", 9, 1.25);
    t_open(&c, T_COMM_ID);
    assert_null(t_init(&c, 1, T_COMM_ID, 1, 8));
    t_null_ctx_is_inert(&c);
    t_close(&c);

    /* A value that is not a mode: the plugin's init fails naming the variable (the table
     * bounds STRATA_TUNER to 0..2, util/param_table.c), and the tuner, with no net context
     * of ours, stays out. */
    t_env("7", 9, 1.25);
    t_open(&c, 0);
    assert_int_not_equal(stb_plugin_init(c.net, T_COMM_ID), ncclSuccess);
    assert_int_equal(stb_plugin_finalize(c.net), ncclSuccess);   /* as NCCL does after it */
    assert_null(t_init(&c, 0, T_COMM_ID, 4, 8));
    t_close(&c);
}

/* A deterministic stream of table damage: which entries NCCL marks unusable. */
static uint32_t t_rand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Every shape, mode, function and size: nothing -1 is written, everything stays finite,
 * nothing NCCL offered becomes negative, and regBuff does not change the answer. */
static void tuner_tables_many_shapes(void **state)
{
    static const int nodes[] = {2, 3, 4, 8, 16, 64, 1024};
    static const int ppns[] = {1, 2, 4, 8, 16};
    static const char *const modes[] = {"1", "2"};
    uint32_t seed = 12345;
    int written_any = 0;

    setenv("NCCL_DEBUG", "WARN", 1);
    for (size_t mi = 0; mi < 2; mi++) {
        t_env(modes[mi], 9, 1.25);
        for (size_t ni = 0; ni < sizeof(nodes) / sizeof(nodes[0]); ni++) {
            for (size_t pi = 0; pi < sizeof(ppns) / sizeof(ppns[0]); pi++) {
                t_comm_t c;
                stb_nccl_model_t m;
                t_open(&c, T_COMM_ID);
                assert_non_null(t_init(&c, (int)(ni % 2), T_COMM_ID, nodes[ni], ppns[pi]));
                t_nccl(&m, nodes[ni], ppns[pi], 12.5, 2, ppns[pi] <= 8);
                for (int f = 0; f < NCCL_NUM_FUNCTIONS; f++) {
                    for (int e = -1; e <= 36; e++) {
                        size_t n = e < 0 ? 0 : ((size_t)1 << e) + (size_t)(e % 3) * 7;
                        float t[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
                        float t2[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], in[T_TABLE_FLOATS];
                        stb_nccl_table(&m, f, n, 1 + e % 3, t);
                        for (int k = 0; k < T_TABLE_FLOATS; k++)
                            if (t_rand(&seed) % 5 == 0)
                                t[k / NCCL_NUM_PROTOCOLS][k % NCCL_NUM_PROTOCOLS] = -1.0f;
                        memcpy(in, t, sizeof(in));
                        memcpy(t2, t, sizeof(t2));
                        t_call(&c, f, n, 1 + e % 3, 0, t);
                        t_call(&c, f, n, 1 + e % 3, 1, t2);
                        assert_memory_equal(t, t2, sizeof(t));
                        for (int k = 0; k < T_TABLE_FLOATS; k++) {
                            float v = t[k / NCCL_NUM_PROTOCOLS][k % NCCL_NUM_PROTOCOLS];
                            if (in[k] < 0.0f) {
                                if (v != in[k])
                                    fail_msg("%d nodes x %d, %s %zu B: entry %d was %g, now %g",
                                             nodes[ni], ppns[pi], nccl_tuner_func_name(f), n, k,
                                             in[k], v);
                                continue;
                            }
                            assert_true(isfinite(v) && v >= 0.0f);
                            written_any |= v != in[k];
                        }
                    }
                }
                t_close(&c);
            }
        }
    }
    assert_true(written_any);
    assert_int_equal(t_warnings, 0);
}

/* Two communicators of one shape, and the same call repeated: the same table, to the bit
 * (for one ABI version: v6 prices CollNet Chain with the chunk its getChunkSize asks for). */
static void t_deterministic(int v6)
{
    t_comm_t a, b;
    stb_nccl_model_t m;

    t_env("2", 5, 12.5);
    t_open(&a, T_COMM_ID);
    t_open(&b, T_COMM_ID + 9);
    assert_non_null(t_init(&a, v6, T_COMM_ID, 8, 4));
    assert_non_null(t_init(&b, v6, T_COMM_ID + 9, 8, 4));
    t_nccl(&m, 8, 4, 12.5, 2, 1);
    for (int f = 0; f < NCCL_NUM_FUNCTIONS; f++) {
        for (size_t n = 1; n <= ((size_t)1 << 34); n *= 3) {
            float ta[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], tb[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
            float again[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
            stb_nccl_table(&m, f, n, 1, ta);
            memcpy(tb, ta, sizeof(tb));
            memcpy(again, ta, sizeof(again));
            t_call(&a, f, n, 1, 0, ta);
            t_call(&b, f, n, 1, 0, tb);
            t_call(&a, f, n, 1, 0, again);
            assert_memory_equal(ta, tb, sizeof(ta));
            assert_memory_equal(ta, again, sizeof(ta));
        }
    }
    t_close(&b);
    t_close(&a);
}

static void tuner_deterministic(void **state)
{
    t_deterministic(0);
    t_deterministic(1);
}

/* NCCL's pick for a shape and size, without and with the tuner. */
static void t_picks(int nnodes, int ppn, double nic, double lat, size_t n, int *alone, int *tuned)
{
    float t[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    stb_nccl_model_t m;
    t_comm_t c;

    t_open(&c, T_COMM_ID);
    assert_non_null(t_init(&c, 0, T_COMM_ID, nnodes, ppn));
    t_nccl(&m, nnodes, ppn, nic, lat, 1);
    stb_nccl_table(&m, ncclFuncAllReduce, n, 1, t);
    *alone = t_pick(t);
    t_call(&c, ncclFuncAllReduce, n, 1, 0, t);
    *tuned = t_pick(t);
    t_close(&c);
}

#define T_CHAIN (NCCL_ALGO_COLLNET_CHAIN * NCCL_NUM_PROTOCOLS + NCCL_PROTO_SIMPLE)

/* Two nodes of one GPU on a 10 Gbit/s NIC: at 32-64 KiB NCCL's LL128 ring pays twice the
 * wire per byte while CollNet's one piece costs a library allreduce of 2 members. */
static void tuner_prefers_collnet(void **state)
{
    int alone, tuned;

    t_env("1", 9, 1.25);
    for (size_t n = 32 * 1024; n <= 64 * 1024; n *= 2) {
        t_picks(2, 1, 1.25, 5, n, &alone, &tuned);
        assert_int_not_equal(alone, T_CHAIN);
        assert_int_equal(tuned, T_CHAIN);
    }
}

/* Two nodes of 8 GPUs, 128 MiB: NCCL's model credits CollNet with in-switch reduction at
 * NVLink speed and picks it; through host memory and the library's allreduce it loses. */
static void tuner_avoids_collnet(void **state)
{
    int alone, tuned;

    t_env("1", 3, 25);
    t_picks(2, 8, 25, 2, (size_t)128 << 20, &alone, &tuned);
    assert_int_equal(alone, T_CHAIN);
    assert_int_not_equal(tuned, T_CHAIN);
    assert_true(tuned >= 0);
}

/* NCCL_ALGO / NCCL_PROTO: a function they name keeps NCCL's table; the others do not. */
static void tuner_user_forced(void **state)
{
    float ar[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], ag[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    float ar0[T_TABLE_FLOATS], ag0[T_TABLE_FLOATS];
    stb_nccl_model_t m;
    t_comm_t c;

    t_env("2", 9, 1.25);
    setenv("NCCL_ALGO", "allreduce:ring,collnetchain", 1);
    t_open(&c, T_COMM_ID);
    assert_non_null(t_init(&c, 0, T_COMM_ID, 4, 2));
    t_nccl(&m, 4, 2, 1.25, 5, 1);
    stb_nccl_table(&m, ncclFuncAllReduce, 1 << 20, 1, ar);
    stb_nccl_table(&m, ncclFuncAllGather, 1 << 20, 1, ag);
    memcpy(ar0, ar, sizeof(ar0));
    memcpy(ag0, ag, sizeof(ag0));
    t_call(&c, ncclFuncAllReduce, 1 << 20, 1, 0, ar);
    t_call(&c, ncclFuncAllGather, 1 << 20, 1, 0, ag);
    assert_memory_equal(ar, ar0, sizeof(ar0));
    assert_memory_not_equal(ag, ag0, sizeof(ag0));
    t_close(&c);

    /* A list without a function prefix constrains every function. */
    unsetenv("NCCL_ALGO");
    setenv("NCCL_PROTO", "^LL128", 1);
    t_open(&c, T_COMM_ID);
    assert_non_null(t_init(&c, 0, T_COMM_ID, 4, 2));
    memcpy(ag, ag0, sizeof(ag0));
    t_call(&c, ncclFuncAllGather, 1 << 20, 1, 0, ag);
    assert_memory_equal(ag, ag0, sizeof(ag0));
    t_close(&c);
    unsetenv("NCCL_PROTO");
}

/* Layouts other than NCCL's 7 x 3, and functions beyond the five, are left alone. */
static void tuner_foreign_layouts(void **state)
{
    float t[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], t0[T_TABLE_FLOATS];
    stb_nccl_model_t m;
    t_comm_t c;
    int nch = 0;

    t_env("2", 9, 1.25);
    t_open(&c, T_COMM_ID);
    assert_non_null(t_init(&c, 0, T_COMM_ID, 4, 2));
    t_nccl(&m, 4, 2, 1.25, 5, 1);
    stb_nccl_table(&m, ncclFuncAllReduce, 4096, 1, t);
    memcpy(t0, t, sizeof(t0));
    assert_int_equal(c.v5->getCollInfo(c.ctx, ncclFuncAllReduce, 4096, 1, (float **)t, 6, 3, 0,
                                       &nch), ncclSuccess);
    assert_int_equal(c.v5->getCollInfo(c.ctx, ncclFuncAllReduce, 4096, 1, (float **)t, 7, 2, 0,
                                       &nch), ncclSuccess);
    assert_int_equal(c.v5->getCollInfo(c.ctx, ncclFuncSendRecv, 4096, 1, (float **)t, 7, 3, 0,
                                       &nch), ncclSuccess);
    assert_int_equal(c.v5->getCollInfo(c.ctx, ncclFuncAllReduce, 4096, 1, NULL, 7, 3, 0, &nch),
                     ncclSuccess);
    assert_memory_equal(t, t0, sizeof(t0));
    assert_int_equal(nch, 0);
    t_close(&c);
}

/* v6 getChunkSize: only CollNet Chain AllReduce at NCCL's largest chunk grows, to a step. */
static void tuner_chunk_size(void **state)
{
    t_comm_t c;
    size_t chunk;

    t_env("1", 9, 1.25);
    t_open(&c, T_COMM_ID);
    assert_non_null(t_init(&c, 1, T_COMM_ID, 2, 1));
    chunk = 256 * 1024;
    assert_int_equal(c.v6->getChunkSize(c.ctx, ncclFuncAllReduce, (size_t)64 << 20,
                                        NCCL_ALGO_COLLNET_CHAIN, NCCL_PROTO_SIMPLE, 2, &chunk),
                     ncclSuccess);
    assert_int_equal(chunk, 512 * 1024);
    for (int k = 0; k < 3; k++) {
        static const int algos[] = {NCCL_ALGO_COLLNET_CHAIN, NCCL_ALGO_RING,
                                    NCCL_ALGO_COLLNET_DIRECT};
        static const size_t chunks[] = {128 * 1024, 256 * 1024, 256 * 1024};
        chunk = chunks[k];
        assert_int_equal(c.v6->getChunkSize(c.ctx, ncclFuncAllReduce, 4096, algos[k],
                                            NCCL_PROTO_SIMPLE, 1, &chunk), ncclSuccess);
        assert_int_equal(chunk, chunks[k]);
    }
    assert_int_equal(c.v6->getChunkSize(c.ctx, ncclFuncAllReduce, 4096, NCCL_ALGO_COLLNET_CHAIN,
                                        NCCL_PROTO_SIMPLE, 1, NULL), ncclSuccess);
    t_close(&c);
}

/* Under NCCL_DEBUG=INFO, init logs the costs it will write (the GPU check's proof line). */
static void tuner_logs_table(void **state)
{
    t_comm_t c;

    t_env("1", 9, 1.25);
    setenv("NCCL_DEBUG", "INFO", 1);
    t_info_tables = 0;
    t_open(&c, T_COMM_ID);
    assert_non_null(t_init(&c, 0, T_COMM_ID, 2, 1));
    assert_true(t_info_tables >= 5);
    t_close(&c);
    setenv("NCCL_DEBUG", "WARN", 1);
}

/* strata-plan nccl --csv: NCCL's example-tuner rules covering every size, per collective. */
static void tuner_plan_csv(void **state)
{
    static const char *const algos[] = {"tree", "ring", "collnet_direct", "collnet_chain",
                                        "nvls", "nvls_tree", "pat"};
    char path[] = "/tmp/strata-tuner-csv.XXXXXX", cmd[1024], line[256];
    unsigned long long next[NCCL_NUM_FUNCTIONS] = {0};
    int ended[NCCL_NUM_FUNCTIONS] = {0}, rows = 0, chain_at_32k = 0;
    int fd = mkstemp(path);

    assert_true(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof(cmd), "STRATA_TUNER=1 %s/bin/strata-plan nccl -N 2 -L 1 --collnet "
             "--coll all --nic-gbps 1.25 --net-latency 5 --net-alpha 9 --net-beta 1.25 "
             "-b 8 -e 8 --csv %s >/dev/null", STRATA_BUILD_DIR, path);
    assert_int_equal(system(cmd), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        char coll[32], algo[32], proto[32];
        unsigned long long lo, hi;
        int ch, nn, nr, po, rb, func = -1;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "%31[^,],%llu,%llu,%31[^,],%31[^,],%d,%d,%d,%d,%d", coll, &lo, &hi,
                   algo, proto, &ch, &nn, &nr, &po, &rb) != 10)
            fail_msg("not a 10-field rule: %s", line);
        for (int k = 0; k < NCCL_NUM_FUNCTIONS; k++) {
            char lower[32];
            size_t i = 0;
            for (const char *c = nccl_tuner_func_name(k); *c; c++)
                lower[i++] = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
            lower[i] = '\0';
            if (strcmp(coll, lower) == 0)
                func = k;
        }
        assert_true(func >= 0);
        int known = 0;
        for (size_t k = 0; k < sizeof(algos) / sizeof(algos[0]); k++)
            known |= strcmp(algo, algos[k]) == 0;
        assert_true(known);
        assert_true(strcmp(proto, "ll") == 0 || strcmp(proto, "ll128") == 0 ||
                    strcmp(proto, "simple") == 0);
        assert_true(ch == -1 && nn == 2 && nr == 2 && po == -1 && rb == -1);
        assert_false(ended[func]);
        assert_true(lo == next[func] && hi >= lo);      /* contiguous, from 0 */
        next[func] = hi + 1;
        ended[func] = hi == (unsigned long long)SIZE_MAX;
        chain_at_32k |= func == ncclFuncAllReduce && lo <= 32768 && hi >= 32768 &&
                        strcmp(algo, "collnet_chain") == 0;
        rows++;
    }
    fclose(f);
    unlink(path);
    for (int k = 0; k < NCCL_NUM_FUNCTIONS; k++)
        assert_true(ended[k]);
    assert_true(rows >= NCCL_NUM_FUNCTIONS);
    assert_true(chain_at_32k);      /* tuner_prefers_collnet's point, as a rule */
}

int main(void)
{
    const struct CMUnitTest cases[] = {
        cmocka_unit_test(tuner_symbols),
        cmocka_unit_test(tuner_optout_other_net),
        cmocka_unit_test(tuner_optout_env),
        cmocka_unit_test(tuner_tables_many_shapes),
        cmocka_unit_test(tuner_deterministic),
        cmocka_unit_test(tuner_prefers_collnet),
        cmocka_unit_test(tuner_avoids_collnet),
        cmocka_unit_test(tuner_user_forced),
        cmocka_unit_test(tuner_foreign_layouts),
        cmocka_unit_test(tuner_chunk_size),
        cmocka_unit_test(tuner_logs_table),
        cmocka_unit_test(tuner_plan_csv),
    };
    return cmocka_run_group_tests_name("tuner", cases, NULL, NULL);
}
