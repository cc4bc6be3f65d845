/*
 * NCCL 2.28.9's cost table, emulated (tools/lib/nccl_model.h). Every number
 * below is NCCL's, from src/graph/tuning.cc, src/enqueue.cc and
 * src/include/device.h at tag v2.28.9-1.
 */
#include "tools/lib/nccl_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tools/lib/tool_util.h"

/* NCCL_MAX_DIRECT_ARITY + 1: CollNet is off above this many GPUs per node. */
#define NCCL_COLLNET_MAX_LOCAL 8
/* Tree latency is paid per batch: NCCL_MAX_DEV_WORK_BATCH_BYTES (1024) / sizeof(ncclDevWorkColl)
 * (96 bytes) collectives. */
#define NCCL_WORK_BATCH_COLLS 10
/* NCCL's net post overhead (getNetOverhead): 1 us on Intel hosts, 2 on AMD; x3 for Simple. */
#define NCCL_NET_OVERHEAD_INTEL_US 1.0
#define NCCL_NET_OVERHEAD_AMD_US 2.0
/* CollNet Direct's arity serialisation, us per extra local rank. */
#define NCCL_DIRECT_ARITY_US 0.4
/* PAT's linear latency term, us per rank. */
#define NCCL_PAT_RANK_US 2.8

static const ncclTunerConstants_v5_t nccl_defaults = {
    .baseLatencies = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0},
                      {0, 0, 0}, {0, 0, 0}, {8.0, 8.0, 8.0}},
    .hwLatencies = {
        /* NVLink */
        {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25},
         {0, 0, 4.0}},
        /* PCI */
        {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0},
         {0, 0, 4.0}},
        /* NET */
        {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9},
         {0, 0, 14}},
    },
    .llMaxBws = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0},
                 {282.0, 90.0, 70.0}},
    .perChMaxRingLL128Bws = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7},
                             {73.4, 34.6, 73.4}},
    .perChMaxTreeLL128Bws = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0},
                             {55.6, 31.67, 20.0}},
    .perChMaxTreeBws = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0},
                        {70.0, 42.8, 24.0}},
    .perChMaxNVLSTreeBws = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5},
                            {0.0, 96.0, 43.8}},
};

/* Trees depart from the model at medium sizes: NCCL's correction per protocol, per
 * log2(bytes / 64) from 0 to 22. */
static const float tree_correction[NCCL_NUM_PROTOCOLS][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
     1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9,
     1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
     .9},
};

void stb_nccl_constants_default(ncclTunerConstants_v5_t *constants)
{
    *constants = nccl_defaults;
}

static int log2i(long n)
{
    int k = -1;
    while (n > 0) {
        n >>= 1;
        k++;
    }
    return k;
}

/* NCCL's parseList: a first list without a prefix for every function, then "func:list"
 * entries; '^' inverts a list. enable[f][e] in and out. 0, or -1 with err. */
static int parse_list(const char *str, const char *(*elem_name)(int), int nelems,
                      int enable[NCCL_NUM_FUNCTIONS][NCCL_NUM_ALGORITHMS], char *err,
                      size_t errlen)
{
    char buf[1024], *save = NULL;
    int first = 1;

    snprintf(buf, sizeof(buf), "%s", str);
    for (char *tok = strtok_r(buf, ";", &save); tok != NULL;
         tok = strtok_r(NULL, ";", &save), first = 0) {
        char *colon = strchr(tok, ':'), *list = tok, *prefix = NULL, *s2 = NULL;
        if (colon != NULL) {
            *colon = '\0';
            prefix = tok;
            list = colon + 1;
        } else if (!first) {
            stb_err_set(err, errlen, "'%s': every entry after the first needs a prefix", str);
            return -1;
        }
        int set = 1;
        if (*list == '^') {
            set = 0;
            list++;
        }
        int found = 0;
        for (int f = 0; f < NCCL_NUM_FUNCTIONS; f++) {
            if (prefix != NULL && strcasecmp(prefix, nccl_tuner_func_name(f)) != 0)
                continue;
            found = 1;
            for (int e = 0; e < nelems; e++)
                enable[f][e] = !set;
            char lbuf[1024];
            snprintf(lbuf, sizeof(lbuf), "%s", list);
            for (char *el = strtok_r(lbuf, ",", &s2); el != NULL; el = strtok_r(NULL, ",", &s2)) {
                int e = 0;
                while (e < nelems && strcasecmp(el, elem_name(e)) != 0)
                    e++;
                if (e == nelems) {
                    stb_err_set(err, errlen, "'%s': unknown element '%s'", str, el);
                    return -1;
                }
                enable[f][e] = set;
            }
        }
        if (!found) {
            stb_err_set(err, errlen, "'%s': unknown function '%s'", str, prefix);
            return -1;
        }
    }
    return 0;
}

static int topo_ok(const stb_nccl_topo_t *t)
{
    return t->nnodes >= 1 && t->ppn >= 1 && t->ppn <= 64 && t->compcap_idx >= 0 &&
           t->compcap_idx < NCCL_NUM_COMPCAPS && t->nchannels >= 1 && t->bw_intra > 0 &&
           t->bw_inter > 0 && t->bw_collnet_intra > 0 && t->net_latency_us >= 0 &&
           isfinite(t->bw_intra + t->bw_inter + t->bw_collnet_intra + t->net_latency_us);
}

/* The bus bandwidth of (coll, a, p) before NCCL converts it to an algorithm bandwidth. */
static double bus_bw(const stb_nccl_topo_t *t, const ncclTunerConstants_v5_t *k, int coll, int a,
                     int p)
{
    int N = t->nnodes, cc = t->compcap_idx, i2 = N <= 2 ? N - 1 : 2;
    int i1 = N == 1 ? cc : t->cpu_amd;
    double ppn = t->ppn, nch = t->nchannels;
    int collnet = a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN;
    double intra = collnet ? t->bw_collnet_intra : t->bw_intra;
    double bw = N <= 2 || collnet ? intra : t->bw_inter;
    double ll_max = k->llMaxBws[i1][i2], b = nch * bw;

    if (a == NCCL_ALGO_RING && p == NCCL_PROTO_LL)
        b = fmin(ll_max, b * .5);
    if (a == NCCL_ALGO_RING && p == NCCL_PROTO_LL128)
        b = fmin(b * 0.92, nch * k->perChMaxRingLL128Bws[cc][i2]);
    if (a == NCCL_ALGO_TREE && coll == ncclFuncAllReduce)
        b = fmin(b * .92, nch * k->perChMaxTreeBws[cc][i2]);
    if (a == NCCL_ALGO_TREE && p == NCCL_PROTO_LL)
        b = fmin(b * 1.0 / 3.8, ll_max);
    if (a == NCCL_ALGO_TREE && p == NCCL_PROTO_LL128)
        b = fmin(b * (N == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nch * k->perChMaxTreeLL128Bws[cc][i2]);
    if (a == NCCL_ALGO_TREE && t->ppn == 1)
        b *= .85;                   /* one GPU per node: the TREE pattern */
    if (a == NCCL_ALGO_PAT)
        b *= .75;
    if (collnet && p != NCCL_PROTO_SIMPLE)
        b = 0;
    if (a == NCCL_ALGO_COLLNET_DIRECT && p == NCCL_PROTO_SIMPLE) {
        if (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter) {
            b = ppn * fmin(t->bw_collnet_intra, t->bw_inter * 0.9);
        } else {
            double factor = ppn / nch;      /* GPUs per NIC */
            factor -= (factor - 1) / 2;
            b /= factor;
            if (cc >= NCCL_HOPPER_COMPCAP_IDX)
                b *= .85;
        }
        if ((coll == ncclFuncAllGather || coll == ncclFuncReduceScatter) && N > 1 &&
            (!t->collnet_ag_rs || !t->collnet || t->ppn > t->collnet_heads))
            b = 0;
    }
    return b;
}

/* The latency of (coll, a, p), us. */
static double latency(const stb_nccl_topo_t *t, const ncclTunerConstants_v5_t *k, int coll,
                      int a, int p)
{
    int N = t->nnodes, P = N * t->ppn, intra_hw = t->nvlink ? NCCL_HW_NVLINK : NCCL_HW_PCI;
    int nsteps = coll == ncclFuncAllReduce ? 2 * (P - 1)
                 : coll == ncclFuncReduceScatter || coll == ncclFuncAllGather ? P - 1 : P;
    double ppn = t->ppn, lat = k->baseLatencies[a][p];
    double intra = k->hwLatencies[intra_hw][a][p];
    double inter = (t->ppn == 1 ? k->hwLatencies[NCCL_HW_NET][NCCL_ALGO_TREE][p]
                                : k->hwLatencies[NCCL_HW_NET][a][p]) + t->net_latency_us;

    if (p == NCCL_PROTO_SIMPLE)
        inter += t->net_latency_us;     /* the flush */
    switch (a) {
    case NCCL_ALGO_RING: {
        double hw = k->hwLatencies[N == 1 ? intra_hw : NCCL_HW_NET][a][p];
        if (coll == ncclFuncReduce || coll == ncclFuncBroadcast)
            return lat + hw;            /* the ring graphs keep the same channels */
        double overhead = 0.0;
        if (N > 1) {
            overhead = t->cpu_amd ? NCCL_NET_OVERHEAD_AMD_US : NCCL_NET_OVERHEAD_INTEL_US;
            if (p == NCCL_PROTO_SIMPLE)
                overhead *= 3;
        }
        intra = fmax(intra, overhead);
        int inter_steps = N == 1 ? 0 : coll == ncclFuncAllReduce ? 2 * (N - 1) : N - 1;
        return lat + (nsteps - inter_steps) * intra + inter_steps * inter;
    }
    case NCCL_ALGO_TREE:
        if (coll == ncclFuncAllReduce)
            lat += 2 * ((ppn - 1) * intra + log2i(N) * inter);
        return lat;
    case NCCL_ALGO_COLLNET_DIRECT:
        return lat + 2 * (fmin(1, ppn - 1) * intra + (ppn - 1) * NCCL_DIRECT_ARITY_US) + inter;
    case NCCL_ALGO_COLLNET_CHAIN:
        return lat + 2 * (ppn - 1) * intra + inter;
    case NCCL_ALGO_PAT:
        if (coll == ncclFuncAllGather || coll == ncclFuncReduceScatter)
            lat += log2i(N) * (inter / 3.5) + P * NCCL_PAT_RANK_US;
        return lat;
    default:
        return lat;
    }
}

/* Whether NCCL's model has the entry at all (before enables). */
static int entry_exists(const stb_nccl_topo_t *t, int coll, int a, int p)
{
    int agrs = coll == ncclFuncReduceScatter || coll == ncclFuncAllGather;

    if ((coll == ncclFuncBroadcast || coll == ncclFuncReduce) && a != NCCL_ALGO_RING)
        return 0;
    if (agrs && a != NCCL_ALGO_PAT && a != NCCL_ALGO_RING && a != NCCL_ALGO_NVLS &&
        a != NCCL_ALGO_COLLNET_DIRECT)
        return 0;
    if (coll == ncclFuncAllReduce && a == NCCL_ALGO_PAT)
        return 0;
    if (a == NCCL_ALGO_NVLS || a == NCCL_ALGO_NVLS_TREE)
        return 0;                       /* not emulated (see the header) */
    if (agrs && a == NCCL_ALGO_PAT && (p != NCCL_PROTO_SIMPLE || t->ppn != 1))
        return 0;                       /* PAT: Simple, one GPU per node */
    return 1;
}

strata_status_t stb_nccl_model_build(const stb_nccl_topo_t *topo,
                                     const ncclTunerConstants_v5_t *constants,
                                     const char *algo_env, const char *proto_env,
                                     stb_nccl_model_t *model, char *err, size_t errlen)
{
    int algo_on[NCCL_NUM_FUNCTIONS][NCCL_NUM_ALGORITHMS];
    int proto_on[NCCL_NUM_FUNCTIONS][NCCL_NUM_ALGORITHMS];
    stb_nccl_model_t m;

    if (!topo_ok(topo)) {
        stb_err_set(err, errlen, "topology out of range");
        return STRATA_ERR_INVALID;
    }
    for (int f = 0; f < NCCL_NUM_FUNCTIONS; f++) {
        for (int i = 0; i < NCCL_NUM_ALGORITHMS; i++) {
            algo_on[f][i] = 1;
            proto_on[f][i] = i == NCCL_PROTO_LL128 ? 2 : 1;   /* LL128: NCCL decides */
        }
    }
    if ((proto_env != NULL && *proto_env != '\0' &&
         parse_list(proto_env, nccl_tuner_proto_name, NCCL_NUM_PROTOCOLS, proto_on, err,
                    errlen) != 0) ||
        (algo_env != NULL && *algo_env != '\0' &&
         parse_list(algo_env, nccl_tuner_algo_name, NCCL_NUM_ALGORITHMS, algo_on, err,
                    errlen) != 0))
        return STRATA_ERR_INVALID;
    memset(&m, 0, sizeof(m));
    m.topo = *topo;
    for (int c = 0; c < NCCL_NUM_FUNCTIONS; c++) {
        for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
            int collnet = a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN;
            int off = !algo_on[c][a] || (collnet && !topo->collnet) ||
                      (a == NCCL_ALGO_COLLNET_DIRECT && !topo->nvswitch);
            for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
                if (!entry_exists(topo, c, a, p))
                    continue;
                int pon = proto_on[c][p] == 2 ? topo->ll128 : proto_on[c][p];
                double b = bus_bw(topo, constants, c, a, p);
                int P = topo->nnodes * topo->ppn;
                double nsteps = c == ncclFuncAllReduce ? 2.0 * (P - 1)
                                : c == ncclFuncReduceScatter || c == ncclFuncAllGather ? P - 1
                                                                                      : P;
                if (!(a != NCCL_ALGO_RING && (c == ncclFuncAllGather || c == ncclFuncReduceScatter)))
                    b *= a == NCCL_ALGO_RING ? P / nsteps : .5;
                m.bw[c][a][p] = off || !pon ? 0.0 : b;
                m.lat[c][a][p] = latency(topo, constants, c, a, p);
            }
        }
    }
    *model = m;
    return STRATA_OK;
}

void stb_nccl_table(const stb_nccl_model_t *model, int func, size_t nbytes, int num_pipe_ops,
                    float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS])
{
    const stb_nccl_topo_t *t = &model->topo;
    int P = t->nnodes * t->ppn;

    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
            table[a][p] = (float)NCCL_ALGO_PROTO_IGNORE;
    if (func < 0 || func >= NCCL_NUM_FUNCTIONS)
        return;
    if (P == 1) {
        table[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 0.0f;
        return;
    }
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
        int collnet = a == NCCL_ALGO_COLLNET_DIRECT || a == NCCL_ALGO_COLLNET_CHAIN;
        if (collnet && (!t->collnet || t->ppn > NCCL_COLLNET_MAX_LOCAL))
            continue;
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
            double bw = model->bw[func][a][p], lat = model->lat[func][a][p];
            if (bw == 0.0)
                continue;           /* ncclTopoGetAlgoTime's -1 */
            int log_size = log2i((long)(nbytes >> 6));
            if (a == NCCL_ALGO_TREE && func == ncclFuncAllReduce && log_size >= 0 &&
                log_size < 23)
                bw *= tree_correction[p][log_size];
            if (a == NCCL_ALGO_RING && p == NCCL_PROTO_SIMPLE && t->nnodes > 1 &&
                func == ncclFuncAllReduce && nbytes / (size_t)(t->nchannels * P) >= 64)
                lat *= t->compcap_idx == NCCL_VOLTA_COMPCAP_IDX ? 1.9 : 1.4;   /* plateau */
            int ops = num_pipe_ops > 1 ? num_pipe_ops : 1;
            int lat_count = a == NCCL_ALGO_RING ? ops
                                                : (ops + NCCL_WORK_BATCH_COLLS - 1) /
                                                      NCCL_WORK_BATCH_COLLS;
            table[a][p] = (float)(lat * lat_count + (double)nbytes / (1000.0 * bw));
        }
    }
}

int stb_nccl_pick(const float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], int *algo_p,
                  int *proto_p)
{
    float best = 3600000000.0f;
    int ba = -1, bp = -1;

    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++) {
        for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) {
            if (table[a][p] >= 0.0f && table[a][p] < best) {
                best = table[a][p];
                ba = a;
                bp = p;
            }
        }
    }
    if (ba < 0)
        return -1;
    *algo_p = ba;
    *proto_p = bp;
    return 0;
}
