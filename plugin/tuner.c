/*
 * ncclTunerPlugin_v6 and _v5: Strata's α-β costs in NCCL's cost table.
 *
 * NCCL finds the tuner in the net plugin's own library when no tuner library
 * is named or found (log: "TUNER/Plugin: Using Strata (v5)" on 2.28, "(v6)" on
 * 2.30), so every communicator of a process that loaded libnccl-net-strata.so
 * gets it, whichever network the communicator runs on. init therefore opts
 * out, with ncclSuccess and a NULL context, when:
 *   - STRATA_TUNER=0 (or a value that is not 0, 1 or 2);
 *   - the communicator has one node (nothing crosses Strata's net);
 *   - no live ncclNet context of ours has this commId (NCCL passes the same
 *     commHash to the net's init and the tuner's): the communicator runs on
 *     another network. A child split with shared resources reuses its
 *     parent's net context under a new commHash and is opted out too;
 *   - the model cannot be loaded (a bad STRATA_PROFILE), logged.
 * NCCL 2.28.9 still calls getCollInfo, getChunkSize and finalize with that
 * NULL context: they succeed and change nothing. No entry point ever returns
 * an error, because NCCL fails the communicator or the collective on one.
 *
 * Every rank computes the same table: the costs depend only on NCCL's
 * arguments (nRanks, nNodes, ranks per node, constants), the device count and
 * speed property (which NCCL's own model reads too), the transport's name and
 * the host's cores (the library's host rule, sta_dims_set_host: with one
 * CollNet member per host the cores only count below 2, so hosts of 2 cores or
 * more give the same table), and the model from its
 * defaults, STRATA_* variables and STRATA_PROFILE, which must be the same on
 * every rank (as for the collective library). The
 * tuner never measures anything: NCCL applies each rank's choice with no
 * agreement step, so a per-rank measurement could split ranks across
 * algorithms. STRATA_CALIBRATE does not apply here.
 *
 * regBuff is not used: registered buffers change CollNet's path only with
 * GPUDirect, which a host-memory CollNet never offers. *nChannels is never
 * set (NCCL keeps its own).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "algos/profile.h"
#include "algos/rail.h"
#include "plugin/collnet.h"
#include "plugin/plugin.h"
#include "plugin/tuner_cost.h"
#include "util/log.h"
#include "util/param.h"

#define STP_TUNER_MAGIC 0x5354524154415455ull   /* "STRATATU" */
/* ncclNet's speed property is in Mbps: 8000 of them make a GB/s. */
#define STP_TUNER_MBPS_PER_GBPS 8000.0

/* Sizes of the table logged at init: latency-bound to bandwidth-bound. */
static const size_t tuner_log_sizes[] = {8, 64 * 1024, 1024 * 1024, 16 * 1024 * 1024,
                                         256 * 1024 * 1024};

typedef struct stp_tuner_ctx {
    uint64_t magic;
    uint64_t comm_id;
    stp_tuner_t tuner;
    /* Bit b of logged[f]: a getCollInfo of func f with 2^b <= nBytes < 2^(b+1) was logged. */
    unsigned long long logged[NCCL_NUM_FUNCTIONS];
} stp_tuner_ctx_t;

/* Appends printf output to buf[*len..cap), keeping it terminated. */
static void buf_add(char *buf, size_t cap, size_t *len, const char *fmt, ...) STU_PRINTF(4, 5);

static void buf_add(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*len >= cap)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len = STU_MIN(cap, *len + (size_t)n);
}

/* STRATA_TUNER: 0, 1 or 2; anything else is logged and treated as 0. */
static stp_tuner_mode_t tuner_mode_read(void)
{
    int64_t v = stu_param_int(STU_PARAM_TUNER);

    if (v < STP_TUNER_OFF || v > STP_TUNER_ALL) {
        STU_WARN("tuner: STRATA_TUNER=%lld is not 0, 1 or 2; the tuner is off",
                 (long long)v);
        return STP_TUNER_OFF;
    }
    return (stp_tuner_mode_t)v;
}

/* At init: the costs the tuner would write, for a few AllReduce sizes. */
static void tuner_log_table(const stp_tuner_ctx_t *c)
{
    static const int algos[] = {NCCL_ALGO_COLLNET_CHAIN, NCCL_ALGO_COLLNET_DIRECT, NCCL_ALGO_NVLS,
                                NCCL_ALGO_RING, NCCL_ALGO_TREE};
    const stp_tuner_t *t = &c->tuner;

    if (stu_log_level < STU_LOG_INFO)
        return;
    STU_INFO(STU_LOG_INIT | STU_LOG_TUNING, "tuner: comm 0x%llx: %d ranks on %d nodes, %d per "
             "node, %d rail(s); STRATA_TUNER=%d (%s); net alpha %g us beta %g GB/s, gamma %g "
             "GB/s; CollNet calls: the library's allreduce among %d nodes",
             (unsigned long long)c->comm_id, t->shape.nranks, t->shape.nnodes, t->shape.ppn,
             t->shape.nrails, (int)t->mode,
             t->mode == STP_TUNER_ALL ? "CollNet, NVLS, Ring and Tree" : "CollNet and NVLS",
             t->model.net.alpha_us, t->model.net.beta_gbps, t->model.gamma_gbps,
             t->shape.nnodes);
    for (size_t i = 0; i < STU_ARRAY_SIZE(tuner_log_sizes); i++) {
        char line[512];
        size_t len = 0;
        for (size_t j = 0; j < STU_ARRAY_SIZE(algos); j++) {
            int a = algos[j];
            for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
                double us = stp_tuner_cost_us(t, ncclFuncAllReduce, a, p, tuner_log_sizes[i]);
                if (us >= 0.0)
                    buf_add(line, sizeof(line), &len, " %s/%s %.1f", nccl_tuner_algo_name(a),
                            nccl_tuner_proto_name(p), us);
            }
        }
        STU_INFO(STU_LOG_INIT | STU_LOG_TUNING, "tuner: AllReduce %zu B, us:%s",
                 tuner_log_sizes[i], len > 0 ? line : " (none)");
    }
    for (int f = 0; f < NCCL_NUM_FUNCTIONS; f++)
        if (t->forced[f])
            STU_INFO(STU_LOG_INIT | STU_LOG_TUNING, "tuner: NCCL_ALGO/NCCL_PROTO constrain %s: "
                     "its table is left to NCCL", nccl_tuner_func_name(f));
}

/*
 * Without a profile or STRATA_NET_BETA_GBPS, β_n is the NIC's speed property (device 0): the
 * number NCCL's own model prices Ring and Tree with, so that CollNet and the rings are
 * compared over the same wire. The model's default β is a loopback measurement of this host.
 */
static void tuner_model_nic(sta_model_t *model)
{
    const stt_props_t *p = stp_state_props(0);

    if (model->source[STA_FIELD_NET_BETA] == STA_SRC_DEFAULT && p != NULL && p->speed_mbps > 0)
        model->net.beta_gbps = p->speed_mbps / STP_TUNER_MBPS_PER_GBPS;
}

static ncclResult_t tuner_init(void **ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                               ncclDebugLogger_t log_fn, ncclNvlDomainInfo_v5_t *nvl,
                               ncclTunerConstants_v5_t *constants, size_t chain_chunk)
{
    stp_tuner_mode_t mode;
    stp_tuner_shape_t shape;
    sta_model_t model;
    sta_algo_t inter_forced;
    stp_tuner_ctx_t *c;
    int ndev = 0;

    if (ctx == NULL)
        return ncclSuccess;
    *ctx = NULL;
    stp_log_attach(log_fn);
    if (nnodes < 2 || nranks < nnodes || nranks > (size_t)1 << 30 || constants == NULL) {
        STU_INFO(STU_LOG_INIT | STU_LOG_TUNING, "tuner: off for comm 0x%llx: %zu rank(s) on "
                 "%zu node(s), nothing crosses Strata's net", (unsigned long long)comm_id,
                 nranks, nnodes);
        return ncclSuccess;
    }
    /* Before any STRATA_* is read: the parameter cache is freed by the net's last finalize,
     * so it may only be filled while a net context lives. */
    if (!stp_state_has_comm(comm_id, &ndev)) {
        STU_INFO(STU_LOG_INIT | STU_LOG_TUNING, "tuner: off for comm 0x%llx: it does not run "
                 "on Strata's net", (unsigned long long)comm_id);
        return ncclSuccess;
    }
    mode = tuner_mode_read();
    if (mode == STP_TUNER_OFF) {
        STU_INFO(STU_LOG_INIT | STU_LOG_TUNING, "tuner: off for comm 0x%llx (STRATA_TUNER=0): "
                 "NCCL's own model decides", (unsigned long long)comm_id);
        return ncclSuccess;
    }
    shape.nranks = (int)nranks;
    shape.nnodes = (int)nnodes;
    shape.ppn = nvl != NULL && nvl->maxRanksPerNvlDomain >= 1
                    ? nvl->maxRanksPerNvlDomain : (int)((nranks + nnodes - 1) / nnodes);
    shape.nrails = sta_rail_count(shape.ppn, ndev > 0 ? ndev : 1, NULL);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    shape.host_cores = ncpu > 0 && ncpu < INT32_MAX ? (int)ncpu : 0;
    shape.transport = stp_state_transport() != NULL ? stt_name(stp_state_transport()) : NULL;
    /* The CollNet's inter-node schedule as it will run: the model's choice per size, or the
     * one STRATA_COLLNET_ALGO forces (STRATA_ALGO is the library's knob, not the CollNet's). */
    inter_forced = stp_cn_forced_algo();
    if (sta_model_load(&model) != STRATA_OK || (c = calloc(1, sizeof(*c))) == NULL) {
        STU_WARN("tuner: off for comm 0x%llx: the model could not be loaded (see above)",
                 (unsigned long long)comm_id);
        return ncclSuccess;
    }
    tuner_model_nic(&model);
    if (stp_tuner_build(&c->tuner, mode, &shape, &model, inter_forced, constants,
                        getenv("NCCL_ALGO"), getenv("NCCL_PROTO"), chain_chunk) != STRATA_OK) {
        STU_WARN("tuner: off for comm 0x%llx: no costs for %d ranks on %d nodes, %d per node",
                 (unsigned long long)comm_id, shape.nranks, shape.nnodes, shape.ppn);
        free(c);
        return ncclSuccess;
    }
    c->magic = STP_TUNER_MAGIC;
    c->comm_id = comm_id;
    tuner_log_table(c);
    *ctx = c;
    return ncclSuccess;
}

static ncclResult_t tuner_init_v5(void **ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                                  ncclDebugLogger_t log_fn, ncclNvlDomainInfo_v5_t *nvl,
                                  ncclTunerConstants_v5_t *constants)
{
    return tuner_init(ctx, comm_id, nranks, nnodes, log_fn, nvl, constants,
                      STP_TUNER_CHAIN_CHUNK);
}

/* v6: getChunkSize raises CollNet Chain's largest chunk to a staging step (stp_tuner_chunk). */
static ncclResult_t tuner_init_v6(void **ctx, uint64_t comm_id, size_t nranks, size_t nnodes,
                                  ncclDebugLogger_t log_fn, ncclNvlDomainInfo_v6_t *nvl,
                                  ncclTunerConstants_v6_t *constants)
{
    return tuner_init(ctx, comm_id, nranks, nnodes, log_fn, nvl, constants,
                      STP_TUNER_NCCL_STEP_BYTES);
}

static stp_tuner_ctx_t *tuner_ctx(void *context)
{
    stp_tuner_ctx_t *c = context;
    return c != NULL && c->magic == STP_TUNER_MAGIC ? c : NULL;
}

/* Once per function and power-of-two size class: what was written and what NCCL will pick. */
static void tuner_log_call(stp_tuner_ctx_t *c, int func, size_t nbytes, const float *before,
                           float (*table)[NCCL_NUM_PROTOCOLS], int written)
{
    unsigned long long bit = 1ULL << (63 - __builtin_clzll((unsigned long long)nbytes | 1));
    char line[768];
    size_t len = 0;
    int best_a = -1, best_p = -1;

    if (stu_log_level < STU_LOG_INFO ||
        (__atomic_fetch_or(&c->logged[func], bit, __ATOMIC_RELAXED) & bit))
        return;
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
            float v = table[a][p], was = before[a * NCCL_NUM_PROTOCOLS + p];
            if (!(v >= 0.0f))
                continue;
            if (v != was)
                buf_add(line, sizeof(line), &len, " %s/%s %.1f->%.1f", nccl_tuner_algo_name(a),
                        nccl_tuner_proto_name(p), was, v);
            if (best_a < 0 || v < table[best_a][best_p]) {
                best_a = a;
                best_p = p;
            }
        }
    }
    STU_INFO(STU_LOG_TUNING, "tuner: %s %zu B: %s%s; NCCL picks %s/%s (%.1f us)",
             nccl_tuner_func_name(func), nbytes,
             written > 0 ? "wrote" : c->tuner.forced[func] ? "left to NCCL_ALGO/NCCL_PROTO"
                                                            : "nothing of ours is usable",
             written > 0 ? line : "", nccl_tuner_algo_name(best_a), nccl_tuner_proto_name(best_p),
             best_a >= 0 ? table[best_a][best_p] : -1.0f);
}

static ncclResult_t tuner_get_coll_info(void *context, ncclFunc_t coll_type, size_t nbytes,
                                        int num_pipe_ops, float **cost_table, int num_algo,
                                        int num_proto, int reg_buff, int *nchannels)
{
    stp_tuner_ctx_t *c = tuner_ctx(context);
    float before[NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS];
    int func = (int)coll_type;

    /* Only NCCL's layout is understood; anything else is left as it came. */
    if (c == NULL || cost_table == NULL || num_algo != NCCL_NUM_ALGORITHMS ||
        num_proto != NCCL_NUM_PROTOCOLS || func < 0 || func >= NCCL_NUM_FUNCTIONS)
        return ncclSuccess;
    /* NCCL passes a float[7][3] cast to float**: one block, rows of num_proto floats. */
    float (*table)[NCCL_NUM_PROTOCOLS] = (float (*)[NCCL_NUM_PROTOCOLS])(void *)cost_table;
    memcpy(before, table, sizeof(before));
    /* numPipeOps collectives grouped: each pays its own latency on its share of the bytes,
     * NCCL's own form (latency x numPipeOps + bytes / bandwidth). */
    size_t ops = num_pipe_ops > 1 ? (size_t)num_pipe_ops : 1;
    int written = stp_tuner_apply(&c->tuner, func, (nbytes + ops - 1) / ops, table);
    if (ops > 1 && written > 0) {
        for (int i = 0; i < NCCL_NUM_ALGORITHMS * NCCL_NUM_PROTOCOLS; i++) {
            float *v = &table[i / NCCL_NUM_PROTOCOLS][i % NCCL_NUM_PROTOCOLS];
            if (*v != before[i])
                *v = (float)STU_MIN((double)*v * (double)ops, STP_TUNER_COST_MAX);
        }
    }
    tuner_log_call(c, func, nbytes, before, table, written);
    return ncclSuccess;
}

static ncclResult_t tuner_get_chunk_size(void *context, ncclFunc_t coll_type, size_t nbytes,
                                         int algo, int proto, int nchannels, size_t *chunk_size)
{
    if (tuner_ctx(context) == NULL || chunk_size == NULL)
        return ncclSuccess;
    *chunk_size = stp_tuner_chunk((int)coll_type, algo, proto, *chunk_size);
    return ncclSuccess;
}

static ncclResult_t tuner_finalize(void *context)
{
    stp_tuner_ctx_t *c = tuner_ctx(context);

    if (c != NULL) {
        c->magic = 0;
        free(c);
    }
    return ncclSuccess;
}

STU_EXPORT const ncclTuner_v6_t ncclTunerPlugin_v6 = {
    .name = STP_PLUGIN_NAME,
    .init = tuner_init_v6,
    .getCollInfo = tuner_get_coll_info,
    .finalize = tuner_finalize,
    .getChunkSize = tuner_get_chunk_size,
};

STU_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5 = {
    .name = STP_PLUGIN_NAME,
    .init = tuner_init_v5,
    .getCollInfo = tuner_get_coll_info,
    .finalize = tuner_finalize,
};
