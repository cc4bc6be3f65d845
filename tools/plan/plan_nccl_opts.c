/* strata-plan nccl's command line and topology (tools/plan/plan_nccl.h). */
#include "tools/plan/plan_nccl.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/lib/tool_util.h"

/* Names of the STRATA_* variables the tier options set, in stb_plan_nccl_opts_t.tier order. */
static const char *const tier_vars[4] = {"STRATA_NET_ALPHA_US", "STRATA_NET_BETA_GBPS",
                                         "STRATA_GAMMA_GBPS", "STRATA_ALGO"};

enum {
    OPT_GPU = 256, OPT_AMD, OPT_PCI, OPT_NVSWITCH, OPT_COLLNET, OPT_NO_LL128, OPT_NIC_GBPS,
    OPT_NET_LATENCY, OPT_INTRA_GBPS, OPT_CHANNELS, OPT_TUNER, OPT_COLL, OPT_CSV, OPT_PLUGIN,
    OPT_MODE, OPT_PROFILE, OPT_NET_ALPHA, OPT_NET_BETA, OPT_GAMMA, OPT_ALGO,
};

static const struct option long_opts[] = {
    {"nodes", required_argument, NULL, 'N'},       {"per-node", required_argument, NULL, 'L'},
    {"rails", required_argument, NULL, 'R'},       {"gpu", required_argument, NULL, OPT_GPU},
    {"amd", no_argument, NULL, OPT_AMD},           {"pci", no_argument, NULL, OPT_PCI},
    {"nvswitch", no_argument, NULL, OPT_NVSWITCH}, {"collnet", no_argument, NULL, OPT_COLLNET},
    {"no-ll128", no_argument, NULL, OPT_NO_LL128},
    {"nic-gbps", required_argument, NULL, OPT_NIC_GBPS},
    {"net-latency", required_argument, NULL, OPT_NET_LATENCY},
    {"intra-gbps", required_argument, NULL, OPT_INTRA_GBPS},
    {"channels", required_argument, NULL, OPT_CHANNELS},
    {"tuner", required_argument, NULL, OPT_TUNER}, {"coll", required_argument, NULL, OPT_COLL},
    {"minbytes", required_argument, NULL, 'b'},    {"maxbytes", required_argument, NULL, 'e'},
    {"stepfactor", required_argument, NULL, 'f'},  {"csv", required_argument, NULL, OPT_CSV},
    {"plugin", required_argument, NULL, OPT_PLUGIN}, {"mode", required_argument, NULL, OPT_MODE},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"net-alpha", required_argument, NULL, OPT_NET_ALPHA},
    {"net-beta", required_argument, NULL, OPT_NET_BETA},
    {"gamma", required_argument, NULL, OPT_GAMMA}, {"algo", required_argument, NULL, OPT_ALGO},
    {"help", no_argument, NULL, 'h'},              {NULL, 0, NULL, 0},
};

const char *stb_plan_nccl_usage(void)
{
    return "usage: strata-plan nccl [options]\n"
           "The table Strata's tuner hands NCCL for a cluster, and NCCL's pick with and\n"
           "without it: NCCL 2.28.9's own cost table is computed for each size, handed to the\n"
           "plugin's ncclTunerPlugin_v5/_v6 as NCCL does, and printed (docs/algorithms.md).\n"
           "  -N, --nodes N        nodes (default 2)\n"
           "  -L, --per-node L     GPUs per node (default 1)\n"
           "  -R, --rails R        NICs per node (default 1)\n"
           "  --gpu G              volta, ampere, hopper (default) or blackwell\n"
           "  --amd                AMD host CPUs;  --pci  GPUs of a node on PCI, not NVLink\n"
           "  --nvswitch           NVSwitch nodes (CollNet Direct);  --no-ll128\n"
           "  --collnet            NCCL_COLLNET_ENABLE=1 with Strata's CollNet\n"
           "  --nic-gbps G         NIC speed NCCL sees, GB/s (default: the plugin's device 0)\n"
           "  --net-latency US     the NIC's latency property (default: the plugin's)\n"
           "  --intra-gbps G       NVLink per channel (default 40)\n"
           "  --channels C         NCCL's channels (default 2 per NIC)\n"
           "  --coll C             broadcast reduce allgather reducescatter allreduce (default)\n"
           "                       or all;  -b, -e, -f  sizes (8, 1G, 4; K/M/G suffixes)\n"
           "  --tuner 5|6          the tuner ABI NCCL binds (5: NCCL 2.28, 6: 2.30; default 5)\n"
           "  --mode 0|1|2         STRATA_TUNER;  --profile FILE  STRATA_PROFILE\n"
           "  --net-alpha US --net-beta GBPS --gamma GBPS --algo A   STRATA_NET_ALPHA_US, ...\n"
           "  --csv FILE           write the picks as NCCL's example-tuner CSV ('-': stdout)\n"
           "  --plugin SO          the plugin (default: this build's)\n"
           "NCCL_ALGO and NCCL_PROTO in the environment apply as they would in NCCL.\n";
}

static int parse_gpu(const char *v, int *idx)
{
    static const char *const names[NCCL_NUM_COMPCAPS] = {"volta", "ampere", "hopper", "blackwell"};
    for (int i = 0; i < NCCL_NUM_COMPCAPS; i++) {
        if (strcasecmp(v, names[i]) == 0) {
            *idx = i;
            return 1;
        }
    }
    return 0;
}

static int parse_coll(const char *v, int *func, int *all)
{
    if (strcasecmp(v, "all") == 0) {
        *all = 1;
        return 1;
    }
    for (int f = 0; f < NCCL_NUM_FUNCTIONS; f++) {
        if (strcasecmp(v, nccl_tuner_func_name(f)) == 0) {
            *func = f;
            *all = 0;
            return 1;
        }
    }
    return 0;
}

static int parse_pos(const char *v, double *out)
{
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end != '\0' || !isfinite(d) || d < 0.0)
        return 0;
    *out = d;
    return 1;
}

strata_status_t stb_plan_nccl_parse(int argc, char **argv, stb_plan_nccl_opts_t *o, char *err,
                                    size_t errlen)
{
    int c, ok = 1;

    memset(o, 0, sizeof(*o));
    o->nodes = 2;
    o->per_node = 1;
    o->rails = 1;
    o->gpu = NCCL_HOPPER_COMPCAP_IDX;
    o->nic_gbps = -1.0;
    o->net_latency_us = -1.0;
    o->intra_gbps = STB_PLAN_NCCL_NVLINK_GBPS;
    o->tuner_version = 5;
    o->coll = ncclFuncAllReduce;
    o->min_bytes = 8;
    o->max_bytes = (size_t)1 << 30;
    o->factor = 4;
    o->plugin = STRATA_PLUGIN_PATH;
    optind = 1;
    opterr = 0;
    while (ok && (c = getopt_long(argc, argv, "+N:L:R:b:e:f:h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'N': ok = stb_int_parse(optarg, 1, 1 << 20, &o->nodes) == STRATA_OK; break;
        case 'L': ok = stb_int_parse(optarg, 1, 64, &o->per_node) == STRATA_OK; break;
        case 'R': ok = stb_int_parse(optarg, 1, 64, &o->rails) == STRATA_OK; break;
        case OPT_CHANNELS: ok = stb_int_parse(optarg, 1, 64, &o->channels) == STRATA_OK; break;
        case OPT_TUNER: ok = stb_int_parse(optarg, 5, 6, &o->tuner_version) == STRATA_OK; break;
        case 'b': ok = stb_size_parse(optarg, &o->min_bytes) == STRATA_OK; break;
        case 'e': ok = stb_size_parse(optarg, &o->max_bytes) == STRATA_OK; break;
        case 'f': ok = stb_size_parse(optarg, &o->factor) == STRATA_OK && o->factor >= 2; break;
        case OPT_GPU: ok = parse_gpu(optarg, &o->gpu); break;
        case OPT_AMD: o->amd = 1; break;
        case OPT_PCI: o->pci = 1; break;
        case OPT_NVSWITCH: o->nvswitch = 1; break;
        case OPT_COLLNET: o->collnet = 1; break;
        case OPT_NO_LL128: o->no_ll128 = 1; break;
        case OPT_NIC_GBPS: ok = parse_pos(optarg, &o->nic_gbps) && o->nic_gbps > 0; break;
        case OPT_NET_LATENCY: ok = parse_pos(optarg, &o->net_latency_us); break;
        case OPT_INTRA_GBPS: ok = parse_pos(optarg, &o->intra_gbps) && o->intra_gbps > 0; break;
        case OPT_COLL: ok = parse_coll(optarg, &o->coll, &o->all_colls); break;
        case OPT_CSV: o->csv = optarg; break;
        case OPT_PLUGIN: o->plugin = optarg; break;
        case OPT_MODE: ok = strlen(optarg) == 1 && strchr("012", optarg[0]) != NULL;
                       o->mode = optarg; break;
        case OPT_PROFILE: o->profile = optarg; break;
        case OPT_NET_ALPHA: case OPT_NET_BETA: case OPT_GAMMA: case OPT_ALGO:
            o->tier[c - OPT_NET_ALPHA] = optarg; break;
        case 'h': o->help = 1; break;
        default:
            return stb_err_set(err, errlen, "%s: unknown option or missing value (-h for help)",
                               argv[optind - 1]);
        }
    }
    if (!ok)
        return stb_err_set(err, errlen, "%s: bad value '%s' (-h for help)", argv[optind - 1],
                           optarg);
    if (optind < argc)
        return stb_err_set(err, errlen, "%s: unexpected argument", argv[optind]);
    if (o->rails > o->per_node)
        return stb_err_set(err, errlen, "--rails: more NICs than GPUs per node");
    if (o->min_bytes > o->max_bytes)
        return stb_err_set(err, errlen, "sizes: need -b <= -e");
    return STRATA_OK;
}

void stb_plan_nccl_topo(const stb_plan_nccl_opts_t *o, double nic_gbps, double latency_us,
                        stb_nccl_topo_t *t)
{
    int nch = o->channels > 0 ? o->channels : STB_PLAN_NCCL_CHANNELS_PER_NIC * o->rails;
    /* A ring or tree crossing nodes is bounded by the node's NICs, shared by its channels;
     * NCCL's search finds the same speed inside the node (bwIntra = bwInter). */
    double per_ch = nic_gbps * o->rails / nch;

    memset(t, 0, sizeof(*t));
    t->nnodes = o->nodes;
    t->ppn = o->per_node;
    t->compcap_idx = o->gpu;
    t->cpu_amd = o->amd;
    t->nvlink = !o->pci;
    t->nvswitch = o->nvswitch;
    t->collnet = o->collnet;
    t->collnet_ag_rs = 1;                   /* Strata's CollNet has both */
    t->collnet_heads = o->rails;
    t->ll128 = !o->no_ll128 && o->gpu >= NCCL_HOPPER_COMPCAP_IDX && !o->pci;
    t->nchannels = nch;
    t->bw_inter = per_ch;
    t->bw_intra = o->nodes > 1 ? per_ch : o->intra_gbps;
    /* The CollNet graphs stay inside the node: NVLink speed, or the NIC's with one GPU. */
    t->bw_collnet_intra = o->per_node > 1 ? o->intra_gbps : per_ch;
    t->net_latency_us = latency_us;
}

void stb_plan_nccl_env(const stb_plan_nccl_opts_t *o)
{
    if (o->mode != NULL)
        setenv("STRATA_TUNER", o->mode, 1);
    if (o->profile != NULL)
        setenv("STRATA_PROFILE", o->profile, 1);
    for (int i = 0; i < 4; i++)
        if (o->tier[i] != NULL)
            setenv(tier_vars[i], o->tier[i], 1);
}
