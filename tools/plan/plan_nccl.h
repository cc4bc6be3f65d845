/*
 * strata-plan nccl: what Strata's tuner hands NCCL, and what NCCL then picks.
 *
 *   strata-plan nccl -N 4 -L 8 -R 4 --collnet --coll allreduce
 *   strata-plan nccl -N 2 -L 1 --csv nccl_tuner.conf
 *
 * For a cluster shape, the plugin is loaded as NCCL loads it (its ncclNet init for one
 * "communicator", then the tuner in the same library, ncclTunerPlugin_v5 or _v6, with that
 * communicator's hash), NCCL 2.28.9's own cost table is computed for each size
 * (tools/lib/nccl_model.h), handed to getCollInfo, and the result printed: every usable
 * entry, the ones the tuner wrote, NCCL's pick without the tuner and with it, as
 * NCCL_DEBUG_SUBSYS=TUNING would show them. --csv writes the picks as the rule file of
 * NCCL's example tuner (NCCL_TUNER_CONFIG_FILE: coll,minBytes,maxBytes,algo,proto,channels,
 * nNodes,nRanks,numPipeOps,regBuff), so the decisions can be replayed where Strata's
 * plugin is not loaded.
 *
 * The tuner reads its STRATA_* variables as it does under NCCL: --mode, --profile and the
 * tier values set them in this process before the plugin is loaded.
 */
#ifndef STB_PLAN_NCCL_H
#define STB_PLAN_NCCL_H

#include <stddef.h>

#include "strata/status.h"
#include "tools/lib/nccl_model.h"

/* NCCL_BUFFSIZE-era defaults of this tool: one NIC per node, 2 channels per NIC. */
#define STB_PLAN_NCCL_CHANNELS_PER_NIC 2
/* One NVLink channel within a node, GB/s: NCCL's per-channel tree ceiling on Hopper (38.7-41.4,
 * perChMaxTreeBws), for the CollNet graphs' bwIntra. */
#define STB_PLAN_NCCL_NVLINK_GBPS 40.0

typedef struct stb_plan_nccl_opts {
    int nodes, per_node, rails, channels;   /* channels 0: 2 per rail */
    int gpu;                    /* NCCL_*_COMPCAP_IDX */
    int amd, pci, nvswitch, collnet, no_ll128;
    double nic_gbps;            /* < 0: the plugin's device 0 speed */
    double net_latency_us;      /* < 0: the plugin's device 0 latency */
    double intra_gbps;          /* NVLink per channel */
    int tuner_version;          /* 5 or 6 */
    int all_colls;
    int coll;                   /* ncclFunc_t 0..4 */
    size_t min_bytes, max_bytes, factor;
    const char *csv;            /* NULL: none; "-": stdout */
    const char *plugin;         /* the .so */
    const char *mode;           /* STRATA_TUNER to set, or NULL */
    const char *profile;        /* STRATA_PROFILE to set, or NULL */
    const char *tier[4];        /* STRATA_NET_ALPHA_US, _NET_BETA_GBPS, _GAMMA_GBPS, ALGO */
    int help;
} stb_plan_nccl_opts_t;

/* argv[0] is "nccl". STRATA_ERR_INVALID with a one-line reason in err. */
strata_status_t stb_plan_nccl_parse(int argc, char **argv, stb_plan_nccl_opts_t *opts,
                                    char *err, size_t errlen);

const char *stb_plan_nccl_usage(void);

/* The emulated NCCL topology the options describe, given the NIC's speed and latency. */
void stb_plan_nccl_topo(const stb_plan_nccl_opts_t *opts, double nic_gbps, double latency_us,
                        stb_nccl_topo_t *topo);

/* Sets the STRATA_* variables the options name (--mode, --profile, the tier values), before
 * the plugin is loaded and reads them. */
void stb_plan_nccl_env(const stb_plan_nccl_opts_t *opts);

/* The subcommand: 0 done, 1 failed (reason on stderr), 2 usage error. */
int stb_plan_nccl_main(int argc, char **argv);

#endif /* STB_PLAN_NCCL_H */
