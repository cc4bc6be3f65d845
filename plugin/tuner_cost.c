/* The tuner's costs (plugin/tuner_cost.h has the terms and every formula). */
#include "plugin/tuner_cost.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/compiler.h"

/* NCCL's function -> the library's collective. */
static sta_coll_t func_coll(int func)
{
    switch (func) {
    case ncclFuncBroadcast: return STA_COLL_BROADCAST;
    case ncclFuncReduce: return STA_COLL_REDUCE;
    case ncclFuncAllGather: return STA_COLL_ALLGATHER;
    case ncclFuncReduceScatter: return STA_COLL_REDUCE_SCATTER;
    default: return STA_COLL_ALLREDUCE;
    }
}

/* Marks the functions one NCCL_ALGO/NCCL_PROTO value constrains. */
static void forced_mark(const char *env, int forced[NCCL_NUM_FUNCTIONS])
{
    char buf[1024];
    char *save = NULL;

    if (env == NULL || *env == '\0')
        return;
    snprintf(buf, sizeof(buf), "%s", env);
    for (char *tok = strtok_r(buf, ";", &save); tok != NULL; tok = strtok_r(NULL, ";", &save)) {
        char *colon = strchr(tok, ':');
        if (colon == NULL) {
            for (int f = 0; f < NCCL_NUM_FUNCTIONS; f++)
                forced[f] = 1;      /* a list without a prefix applies to every function */
            continue;
        }
        *colon = '\0';
        for (int f = 0; f < NCCL_NUM_FUNCTIONS; f++)
            if (strcasecmp(tok, nccl_tuner_func_name(f)) == 0)
                forced[f] = 1;
    }
}

void stp_tuner_forced_parse(const char *algo_env, const char *proto_env,
                            int forced[NCCL_NUM_FUNCTIONS])
{
    for (int f = 0; f < NCCL_NUM_FUNCTIONS; f++)
        forced[f] = 0;
    forced_mark(algo_env, forced);
    forced_mark(proto_env, forced);
}

strata_status_t stp_tuner_build(stp_tuner_t *t, stp_tuner_mode_t mode,
                                 const stp_tuner_shape_t *shape, const sta_model_t *model,
                                 sta_algo_t inter_forced, const ncclTunerConstants_v5_t *constants,
                                 const char *forced_algo, const char *forced_proto,
                                 size_t chain_chunk)
{
    const stp_tuner_shape_t *s = shape;

    if (mode != STP_TUNER_COLLNET && mode != STP_TUNER_ALL)
        return STRATA_ERR_INVALID;
    if (s->nnodes < 2 || s->ppn < 1 || s->nranks < s->nnodes ||
        (long long)s->nnodes * s->ppn < s->nranks || s->nrails < 1 || s->nrails > s->ppn)
        return STRATA_ERR_INVALID;
    if (chain_chunk < NCCL_TUNER_SIMPLE_GRAIN || sta_model_check(model) != STRATA_OK)
        return STRATA_ERR_INVALID;
    /* The CollNet's members: one per node, the library's algorithms over the net tier. */
    sta_dims_t inter_dims;
    sta_dims_one_per_node(s->nnodes, &inter_dims);
    sta_dims_set_host(&inter_dims, 1, s->host_cores, s->transport);
    sta_select_t inter;
    if (sta_select_build(model, &inter_dims, inter_forced, &inter) != STRATA_OK)
        return STRATA_ERR_INVALID;

    memset(t, 0, sizeof(*t));
    t->mode = mode;
    t->shape = *s;
    t->model = *model;
    t->inter = inter;
    t->chain_chunk = chain_chunk;
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
            t->base[a][p] = constants->baseLatencies[a][p];
            t->hw_net[a][p] = constants->hwLatencies[NCCL_HW_NET][a][p];
            t->hw_intra[a][p] = constants->hwLatencies[NCCL_HW_NVLINK][a][p];
        }
    }
    stp_tuner_forced_parse(forced_algo, forced_proto, t->forced);
    return STRATA_OK;
}

/* Time to move `bytes` at `gbps`, µs. */
static double xfer(double bytes, double gbps)
{
    return bytes / (gbps * STA_BYTES_PER_US_PER_GBPS);
}

static double lg(int v)
{
    int k = 0;
    while ((1 << k) < v)
        k++;
    return k;
}

/* Channels NCCL runs a CollNet Chain collective (and a ring) of n bytes on. */
static size_t collnet_channels(const stp_tuner_t *t, size_t n)
{
    size_t cmax = (size_t)STP_TUNER_CHANNELS_PER_NIC * (size_t)t->shape.nrails;
    size_t nc = n / STP_TUNER_BYTES_PER_CHANNEL;
    return nc < 1 ? 1 : nc > cmax ? cmax : nc;
}

/* NCCL's chunk for one CollNet step (calcCollChunking), with nc channels and H heads. */
static size_t collnet_chunk(const stp_tuner_t *t, int algo, size_t n, size_t nc, size_t heads)
{
    size_t depth = (size_t)t->shape.ppn;
    size_t c, cmin = STP_TUNER_CHUNK_MIN;
    size_t per = nc * heads;

    if (algo == NCCL_ALGO_NVLS) {
        c = STP_TUNER_NVLS_CHUNK;
        if (n < 2 * per * c)
            c = STP_TUNER_NVLS_CHUNK_MIN;
        return c;
    }
    if (algo == NCCL_ALGO_COLLNET_CHAIN) {
        c = STU_MIN(STP_TUNER_CHAIN_CHUNK, STP_TUNER_NCCL_STEP_BYTES);
        heads = 1;
        per = nc;
    } else {
        c = STP_TUNER_NCCL_STEP_BYTES;
    }
    while (n / (per * c) < depth * 64 && c > 4 * cmin)
        c /= 2;
    while (n / (per * c) < depth * 8 && c > 2 * cmin)
        c /= 2;
    while (n / (per * c) < (algo == NCCL_ALGO_COLLNET_CHAIN ? depth : depth * 8) && c > cmin)
        c /= 2;
    /* What getChunkSize makes of it (stp_tuner_chunk) when the tuner has v6. */
    if (algo == NCCL_ALGO_COLLNET_CHAIN && c == STP_TUNER_CHAIN_CHUNK)
        c = t->chain_chunk;
    return c;
}

/* One call of Strata's CollNet: coll among the N nodes on `bytes`. */
static double collnet_call_us(const stp_tuner_t *t, sta_coll_t coll, size_t bytes)
{
    sta_algo_t a = sta_select_lookup(&t->inter, coll, bytes);
    return sta_cost_us(&t->model, &t->inter.dims, coll, a, bytes);
}

/* CollNet Chain, Direct, or NVLS across nodes: the pipeline of tuner_cost.h. */
static double collnet_us(const stp_tuner_t *t, int func, int algo, size_t n)
{
    const stp_tuner_shape_t *s = &t->shape;
    sta_coll_t coll = func_coll(func);
    double L = s->ppn;
    size_t heads = algo == NCCL_ALGO_COLLNET_CHAIN ? 1 : (size_t)STU_MIN(s->ppn, s->nrails);
    size_t per_head = coll == STA_COLL_ALLREDUCE ? n / heads : n / (size_t)s->ppn;
    size_t nc = collnet_channels(t, n);
    size_t piece = nc * collnet_chunk(t, algo, n, nc, heads);
    double k = ceil((double)per_head / (double)piece);
    double lat, in, net;

    if (coll != STA_COLL_ALLREDUCE && coll != STA_COLL_ALLGATHER &&
        coll != STA_COLL_REDUCE_SCATTER)
        return STA_COST_NA;
    if (k < 1)
        k = 1;
    net = collnet_call_us(t, coll, piece);
    if (net < 0.0)
        return STA_COST_NA;
    in = xfer((double)piece, STP_TUNER_HOST_BETA_GBPS) +
         (s->ppn > 1 ? xfer((double)piece, STP_TUNER_INTRA_BETA_GBPS) : 0.0);
    lat = 2 * STP_TUNER_HOST_ALPHA_US;
    if (algo == NCCL_ALGO_COLLNET_CHAIN)
        lat += 2 * (L - 1) * t->hw_intra[algo][NCCL_PROTO_SIMPLE];
    else if (algo == NCCL_ALGO_COLLNET_DIRECT)
        lat += 2 * ((s->ppn > 1 ? 1.0 : 0.0) * t->hw_intra[algo][NCCL_PROTO_SIMPLE] +
                    (L - 1) * STP_TUNER_DIRECT_ARITY_US);
    else
        lat += t->hw_intra[algo][NCCL_PROTO_SIMPLE];
    return t->base[algo][NCCL_PROTO_SIMPLE] + lat + 2 * in + net +
           (k - 1) * STU_MAX(in, net);
}

/* The share of β_n a protocol's payload gets: LL carries 8 data bytes in 16, LL128 120 in 128. */
static double proto_factor(int proto)
{
    return proto == NCCL_PROTO_LL ? 0.5 : proto == NCCL_PROTO_LL128 ? 120.0 / 128.0 : 1.0;
}

/* Ring and Tree from the net tier (STRATA_TUNER=2). */
static double flat_us(const stp_tuner_t *t, int func, int algo, int proto, size_t n)
{
    const stp_tuner_shape_t *s = &t->shape;
    double P = s->nranks, N = s->nnodes, L = s->ppn;
    double wire = t->hw_net[algo][proto] + t->model.net.alpha_us;
    double bw = s->nrails * proto_factor(proto) * t->model.net.beta_gbps;
    double base = t->base[algo][proto], intra = t->hw_intra[algo][proto];

    if (algo == NCCL_ALGO_TREE) {
        if (func != ncclFuncAllReduce)
            return STA_COST_NA;
        return base + 2 * ((L - 1) * intra + lg(s->nnodes) * wire) + 2 * xfer((double)n, bw);
    }
    switch (func) {
    case ncclFuncAllReduce:
        return base + 2 * (N - 1) * wire + 2 * (P - N) * intra +
               2 * (P - 1) / P * xfer((double)n, bw);
    case ncclFuncAllGather:
    case ncclFuncReduceScatter:
        return base + (N - 1) * wire + (P - N) * intra + (P - 1) / P * xfer((double)n, bw);
    default:
        return base + (N - 1) * wire + (P - N) * intra + xfer((double)n, bw);
    }
}

double stp_tuner_cost_us(const stp_tuner_t *t, int func, int algo, int proto, size_t nbytes)
{
    double us = STA_COST_NA;

    if (func < 0 || func >= NCCL_NUM_FUNCTIONS || algo < 0 || algo >= NCCL_NUM_ALGORITHMS ||
        proto < 0 || proto >= NCCL_NUM_PROTOCOLS)
        return STA_COST_NA;
    switch (algo) {
    case NCCL_ALGO_COLLNET_CHAIN:
    case NCCL_ALGO_COLLNET_DIRECT:
    case NCCL_ALGO_NVLS:             /* across nodes its inter-node stage is our CollNet */
        if (proto == NCCL_PROTO_SIMPLE)
            us = collnet_us(t, func, algo, nbytes);
        break;
    case NCCL_ALGO_RING:
    case NCCL_ALGO_TREE:
        if (t->mode == STP_TUNER_ALL)
            us = flat_us(t, func, algo, proto, nbytes);
        break;
    default:
        break;
    }
    if (!(us >= 0.0))
        return STA_COST_NA;       /* also NaN */
    return us > STP_TUNER_COST_MAX ? STP_TUNER_COST_MAX : us;
}

int stp_tuner_apply(const stp_tuner_t *t, int func, size_t nbytes,
                    float (*table)[NCCL_NUM_PROTOCOLS])
{
    int written = 0;

    if (func < 0 || func >= NCCL_NUM_FUNCTIONS || t->forced[func])
        return 0;
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
            if (!(table[a][p] >= 0.0f))
                continue;       /* NCCL_ALGO_PROTO_IGNORE (or anything negative, or NaN) */
            double us = stp_tuner_cost_us(t, func, a, p, nbytes);
            if (us < 0.0)
                continue;
            table[a][p] = (float)us;
            written++;
        }
    }
    return written;
}

size_t stp_tuner_chunk(int func, int algo, int proto, size_t nccl_chunk)
{
    if (func == ncclFuncAllReduce && algo == NCCL_ALGO_COLLNET_CHAIN &&
        proto == NCCL_PROTO_SIMPLE && nccl_chunk == STP_TUNER_CHAIN_CHUNK)
        return STP_TUNER_NCCL_STEP_BYTES;
    return nccl_chunk;
}
