/* strata-plan train's command line (tools/plan/plan_train_opts.h). */
#include "tools/plan/plan_train_opts.h"

#include <stdio.h>
#include <string.h>

#include "algos/profile.h"
#include "tools/lib/tool_util.h"
#include "tools/plan/plan_train_units.h"

typedef enum opt_kind {
    OPT_INT,        /* int in [lo, hi] */
    OPT_COUNT,      /* double, K/M/B/T suffixes */
    OPT_FRAC,       /* double in (0, 1] */
    OPT_POS,        /* double > 0 */
    OPT_MEM,        /* bytes: GB, GiB, ... */
    OPT_WIDTH,      /* bytes per value, or bf16/fp16/fp32/fp8 */
    OPT_BW,         /* GB/s per direction, into value[field], with a note */
    OPT_LAT,        /* µs, into value[field] */
    OPT_GAMMA,      /* GB/s, into value[STA_FIELD_GAMMA] */
    OPT_KIND,       /* switch|pcie|shm */
    OPT_RECOMPUTE,  /* none|selective|full */
    OPT_STR,
    OPT_FLAG,
} opt_kind_t;

typedef struct opt {
    const char *name;
    opt_kind_t kind;
    size_t off;                 /* into stb_train_opts_t */
    int lo, hi;                 /* OPT_INT's range; OPT_BW/LAT: the field; OPT_BW: which note */
    const char *help;
} opt_t;

#define O(member) offsetof(stb_train_opts_t, member)
#define INT_MAX_OPT 1000000000

static const opt_t opts_table[] = {
    {"--params", OPT_COUNT, O(model.params), 0, 0, "parameters, all experts included (7B, 70e9)"},
    {"--layers", OPT_INT, O(model.layers), 1, 100000, "transformer layers"},
    {"--hidden", OPT_INT, O(model.hidden), 1, INT_MAX_OPT, "hidden size h"},
    {"--heads", OPT_INT, O(model.heads), 1, INT_MAX_OPT, "attention heads (h/128)"},
    {"--seq", OPT_INT, O(model.seq), 1, INT_MAX_OPT, "tokens per sequence (2048)"},
    {"--micro-batch", OPT_INT, O(model.micro_batch), 1, INT_MAX_OPT,
     "sequences per micro-batch (1)"},
    {"--micro-batches", OPT_INT, O(model.micro_batches), 1, INT_MAX_OPT,
     "micro-batches per step per pipeline (1)"},
    {"--global-batch", OPT_COUNT, O(global_batch), 0, 0,
     "sequences per step; sets micro-batches = it / (DP x micro-batch)"},
    {"--value-bytes", OPT_WIDTH, O(model.value_bytes), 0, 0,
     "bytes per weight/activation value (bf16)"},
    {"--grad-bytes", OPT_WIDTH, O(model.grad_bytes), 0, 0, "bytes per gradient value (bf16)"},
    {"--optimizer-bytes", OPT_POS, O(model.optim_bytes), 0, 0,
     "optimizer bytes per parameter (12: fp32 master + Adam m, v)"},
    {"--experts", OPT_INT, O(model.experts), 0, INT_MAX_OPT, "MoE experts per layer (0: dense)"},
    {"--top-k", OPT_INT, O(model.top_k), 1, INT_MAX_OPT, "experts per token (1)"},
    {"--recompute", OPT_RECOMPUTE, O(model.recompute), 0, 0, "none, selective or full (none)"},
    {"--nodes", OPT_INT, O(cluster.nodes), 1, 1 << 20, "nodes (1)"},
    {"--gpus-per-node", OPT_INT, O(cluster.gpus_per_node), 1, 1024, "GPUs per node (8)"},
    {"--intra-bw", OPT_BW, O(value), STA_FIELD_SHM_BETA, 0,
     "intra-node link per GPU per direction (450GB/s; Gb/s and -duplex understood)"},
    {"--intra-alpha", OPT_LAT, O(value), STA_FIELD_SHM_ALPHA, 0,
     "latency of an intra-node hop (3.4us on a switch, 5.7us on PCIe)"},
    {"--intra-kind", OPT_KIND, O(kind), 0, 0, "switch (NVSwitch), pcie or shm (switch)"},
    {"--nics", OPT_INT, O(cluster.nics), 1, 1024, "NICs per node (8)"},
    {"--nic-bw", OPT_BW, O(value), STA_FIELD_NET_BETA, 1, "per NIC per direction (400Gb/s)"},
    {"--nic-alpha", OPT_LAT, O(value), STA_FIELD_NET_ALPHA, 0, "latency of a hop between nodes "
     "(9.6us)"},
    {"--gamma", OPT_GAMMA, O(value), STA_FIELD_GAMMA, 0, "reduction rate (fused on GPUs)"},
    {"--oversub", OPT_POS, O(cluster.oversub), 0, 0, "oversubscription above a leaf (1)"},
    {"--leaf-nodes", OPT_INT, O(cluster.leaf_nodes), 0, 1 << 20, "nodes under one leaf (all)"},
    {"--gpu-mem", OPT_MEM, O(cluster.gpu_mem_bytes), 0, 0, "memory per GPU (80GB)"},
    {"--profile", OPT_STR, O(profile), 0, 0, "fabric profile file (strata-doctor --write-profile)"},
    {"--tp", OPT_INT, O(layout.tp), 1, INT_MAX_OPT, "tensor parallel (1)"},
    {"--pp", OPT_INT, O(layout.pp), 1, INT_MAX_OPT, "pipeline stages (1)"},
    {"--dp", OPT_INT, O(layout.dp), 1, INT_MAX_OPT, "data parallel (the rest)"},
    {"--ep", OPT_INT, O(layout.ep), 1, INT_MAX_OPT, "expert parallel, within DP (1)"},
    {"--zero", OPT_INT, O(layout.zero), 0, 3, "ZeRO stage on DP: 0 (DDP), 1, 2, 3 (FSDP)"},
    {"--zero-group", OPT_INT, O(layout.zero_group), 1, INT_MAX_OPT,
     "ranks a ZeRO shard spans (DP; less is HSDP)"},
    {"--buckets", OPT_INT, O(layout.buckets), 1, 1 << 20, "gradient buckets (the best)"},
    {"--peak-tflops", OPT_POS, O(compute.peak_tflops), 0, 0, "per GPU, dense (989)"},
    {"--achieved", OPT_FRAC, O(compute.achieved), 0, 0, "fraction of peak reached (0.5)"},
    {"--compute-ms", OPT_POS, O(compute.compute_ms), 0, 0,
     "measured compute per step per GPU, instead of peak x achieved"},
    {"--search", OPT_FLAG, O(search), 0, 0, "rank the layouts that fit memory by step time"},
    {"--top", OPT_INT, O(top), 1, STB_TRAIN_SEARCH_MAX, "rows of the ranking (10)"},
    {"--allow-tp-cross", OPT_FLAG, O(allow_tp_cross), 0, 0, "let --search put TP across nodes"},
    {"--json", OPT_FLAG, O(json), 0, 0, "JSON instead of the table"},
    {"--plot-data", OPT_STR, O(plot_data), 0, 0, "per-axis comm time per layout, for gnuplot"},
};
#define NOPTS (sizeof(opts_table) / sizeof(opts_table[0]))

static void opts_default(stb_train_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->model.seq = STB_TRAIN_DEF_SEQ;
    o->model.micro_batch = 1;
    o->model.micro_batches = 1;
    o->model.value_bytes = STB_TRAIN_DEF_VALUE_BYTES;
    o->model.grad_bytes = STB_TRAIN_DEF_VALUE_BYTES;
    o->model.optim_bytes = STB_TRAIN_DEF_OPTIM_BYTES;
    o->model.top_k = 1;
    o->cluster.nodes = 1;
    o->cluster.gpus_per_node = STB_TRAIN_DEF_GPUS_PER_NODE;
    o->cluster.nics = STB_TRAIN_DEF_NICS;
    o->cluster.oversub = 1.0;
    o->cluster.gpu_mem_bytes = STB_TRAIN_DEF_GPU_MEM_BYTES;
    o->layout = (stb_train_layout_t){.tp = 1, .pp = 1};
    for (int f = 0; f < STA_FIELD_COUNT; f++)
        o->value[f] = -1.0;
    o->kind = STA_INTRA_COUNT;
    o->top = STB_TRAIN_DEF_TOP;
}

const char *stb_train_usage(void)
{
    static char text[6144];
    size_t n = (size_t)snprintf(text, sizeof(text),
        "usage: strata-plan train [options]\n"
        "What a training step costs on a fabric, per parallel axis (TP, PP, DP/ZeRO, EP), from\n"
        "Strata's alpha-beta model and algorithm choice: the bubble, the step, MFU, memory, and\n"
        "which layouts survive (--search). docs/planner.md has the formulas. Defaults (an HGX\n"
        "H100 node) are printed as such.\n");
    for (size_t i = 0; i < NOPTS && n < sizeof(text); i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "  %-18s %s\n", opts_table[i].name,
                              opts_table[i].help);
    return text;
}

static strata_status_t opt_set(const opt_t *d, const char *v, stb_train_opts_t *o, char *err,
                               size_t errlen)
{
    void *p = (char *)o + d->off;
    double x;
    int ok = 1;

    switch (d->kind) {
    case OPT_INT:
        ok = stb_int_parse(v, d->lo, d->hi, (int *)p) == STRATA_OK;
        break;
    case OPT_COUNT:
        ok = stb_count_parse(v, (double *)p) == STRATA_OK;
        break;
    case OPT_FRAC:
    case OPT_POS:
        ok = stb_count_parse(v, &x) == STRATA_OK && (d->kind != OPT_FRAC || x <= 1.0);
        if (ok)
            *(double *)p = x;
        break;
    case OPT_MEM:
        ok = stb_mem_parse(v, (double *)p) == STRATA_OK;
        break;
    case OPT_WIDTH:
        ok = stb_width_parse(v, (double *)p) == STRATA_OK;
        break;
    case OPT_BW:
        ok = stb_bw_parse(v, &o->value[d->lo], d->hi ? o->nic_note : o->intra_note,
                          sizeof(o->intra_note)) == STRATA_OK;
        break;
    case OPT_LAT:
        ok = stb_latency_parse(v, &o->value[d->lo]) == STRATA_OK;
        break;
    case OPT_GAMMA:
        ok = stb_bw_parse(v, &o->value[d->lo], NULL, 0) == STRATA_OK;
        break;
    case OPT_KIND:
        ok = sta_intra_parse(v, (sta_intra_t *)p) == STRATA_OK;
        break;
    case OPT_RECOMPUTE:
        if (strcmp(v, "none") == 0)
            *(stb_recompute_t *)p = STB_RECOMPUTE_NONE;
        else if (strcmp(v, "selective") == 0)
            *(stb_recompute_t *)p = STB_RECOMPUTE_SELECTIVE;
        else if (strcmp(v, "full") == 0)
            *(stb_recompute_t *)p = STB_RECOMPUTE_FULL;
        else
            ok = 0;
        break;
    case OPT_STR:
        *(const char **)p = v;
        break;
    case OPT_FLAG:
        break;
    }
    return ok ? STRATA_OK : stb_err_set(err, errlen, "%s '%s': %s", d->name, v, d->help);
}

strata_status_t stb_train_opts_parse(int argc, char *const argv[], stb_train_opts_t *opts,
                                     char *err, size_t errlen)
{
    stb_train_opts_t o;

    opts_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *v = NULL;
        const opt_t *d = NULL;

        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            o.help = 1;
            continue;
        }
        for (size_t k = 0; k < NOPTS && d == NULL; k++) {
            size_t n = strlen(opts_table[k].name);
            if (strncmp(arg, opts_table[k].name, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
                d = &opts_table[k];
                v = arg[n] == '=' ? arg + n + 1 : NULL;
            }
        }
        if (d == NULL)
            return stb_err_set(err, errlen, "%s: unknown option (strata-plan train -h)", arg);
        if (d->kind == OPT_FLAG) {
            if (v != NULL)
                return stb_err_set(err, errlen, "%s takes no value", d->name);
            *(int *)((char *)&o + d->off) = 1;
            continue;
        }
        if (v == NULL) {
            if (i + 1 >= argc)
                return stb_err_set(err, errlen, "%s needs a value: %s", d->name, d->help);
            v = argv[++i];
        }
        if (opt_set(d, v, &o, err, errlen) != STRATA_OK)
            return STRATA_ERR_INVALID;
    }
    /* A measured compute time needs no rate; a peak given with it still yields MFU. */
    if (o.compute.compute_ms == 0.0) {
        o.compute.peak_tflops = o.compute.peak_tflops > 0 ? o.compute.peak_tflops
                                                          : STB_TRAIN_DEF_PEAK_TFLOPS;
        o.compute.achieved = o.compute.achieved > 0 ? o.compute.achieved : STB_TRAIN_DEF_ACHIEVED;
    }
    *opts = o;
    return STRATA_OK;
}

/* The intra-node kind's default α: a switch hop or a PCIe hop (NCCL's figures), or the
 * library's own shared-memory default. */
static double kind_alpha(sta_intra_t kind)
{
    switch (kind) {
    case STA_INTRA_PCIE:
        return STB_TRAIN_DEF_PCIE_ALPHA_US;
    case STA_INTRA_SHM:
        return STA_DEFAULT_SHM_ALPHA_US;
    default:
        return STB_TRAIN_DEF_SWITCH_ALPHA_US;
    }
}

strata_status_t stb_train_opts_fabric(stb_train_opts_t *opts)
{
    sta_model_t m;
    strata_status_t status;

    memset(&m, 0, sizeof(m));
    m.intra = STA_INTRA_SWITCH;
    m.shm = (sta_tier_t){.alpha_us = -1.0, .beta_gbps = STB_TRAIN_DEF_INTRA_GBPS};
    m.net = (sta_tier_t){.alpha_us = STB_TRAIN_DEF_NIC_ALPHA_US,
                         .beta_gbps = STB_TRAIN_DEF_NIC_GBPS};
    m.gamma_gbps = STB_TRAIN_DEF_GAMMA_GBPS;
    if (opts->profile != NULL && (status = sta_profile_read(opts->profile, &m)) != STRATA_OK)
        return status;
    if (opts->kind != STA_INTRA_COUNT) {
        m.intra = opts->kind;
        m.intra_source = STA_SRC_PROFILE;   /* the highest: the command line asked for it */
    }
    if (m.shm.alpha_us < 0.0)   /* neither the profile nor the command line set it */
        m.shm.alpha_us = kind_alpha(m.intra);
    for (int f = 0; f < STA_FIELD_COUNT; f++) {
        if (opts->value[f] >= 0.0) {
            *sta_model_field(&m, (sta_field_t)f) = opts->value[f];
            m.source[f] = STA_SRC_ENV;   /* marks "command line" for stb_train_opts_source */
        }
    }
    opts->cluster.fabric = m;
    return sta_model_check(&m) == STRATA_OK ? STRATA_OK : STRATA_ERR_INVALID;
}

const char *stb_train_opts_source(const stb_train_opts_t *opts, sta_field_t field)
{
    switch (opts->cluster.fabric.source[field]) {
    case STA_SRC_ENV:
        return "command line";
    case STA_SRC_PROFILE:
        return "profile";
    default:
        return "default";
    }
}
