/*
 * strata-plan train's command line: the model, the cluster, the layout and the compute
 * rate, each value with its unit (tools/plan/plan_train_units.h), and the fabric resolved
 * from the planner's defaults (an HGX H100-like node), then a profile file, then the
 * command line. docs/planner.md lists every option.
 */
#ifndef STB_PLAN_TRAIN_OPTS_H
#define STB_PLAN_TRAIN_OPTS_H

#include <stddef.h>

#include "tools/plan/plan_train.h"

/* Defaults, printed as such in every plan. The node: an HGX H100. */
#define STB_TRAIN_DEF_GPUS_PER_NODE 8
/* NVLink 4 through NVSwitch: 18 links of 25 GB/s per direction = 450 GB/s per GPU. */
#define STB_TRAIN_DEF_INTRA_GBPS 450.0
/* NCCL's tuning model charges a ring hop over NVLink 3.4 µs (Simple protocol, the one
 * large transfers use), over PCIe 5.7 µs, through the network 9.6 µs. */
#define STB_TRAIN_DEF_SWITCH_ALPHA_US 3.4
#define STB_TRAIN_DEF_PCIE_ALPHA_US 5.7
#define STB_TRAIN_DEF_NIC_ALPHA_US 9.6
/* One ConnectX-7 per GPU at 400 Gb/s = 50 GB/s per direction (DGX H100). */
#define STB_TRAIN_DEF_NICS 8
#define STB_TRAIN_DEF_NIC_GBPS 50.0
/* GPUs reduce inside their copy kernels (NCCL's reduce-copy primitives): the reduction takes
 * no time of its own, so γ is set far out of the way (10^6 GB/s adds 1 µs per GB). */
#define STB_TRAIN_DEF_GAMMA_GBPS 1e6
/* H100 SXM: 80 GB of HBM3; 989 TFLOP/s dense BF16; a tuned framework reaches about half. */
#define STB_TRAIN_DEF_GPU_MEM_BYTES 80e9
#define STB_TRAIN_DEF_PEAK_TFLOPS 989.0
#define STB_TRAIN_DEF_ACHIEVED 0.5
/* GPT-3's context; one sequence per micro-batch; bf16 values and gradients; Adam in mixed
 * precision keeps an fp32 master copy and two fp32 moments: 12 bytes per parameter. */
#define STB_TRAIN_DEF_SEQ 2048
#define STB_TRAIN_DEF_VALUE_BYTES 2.0
#define STB_TRAIN_DEF_OPTIM_BYTES 12.0
/* --search: rows of the ranking printed by default, and layouts it may hold. */
#define STB_TRAIN_DEF_TOP 10
#define STB_TRAIN_SEARCH_MAX 4096

typedef struct stb_train_opts {
    stb_train_model_t model;
    stb_train_cluster_t cluster;
    stb_train_compute_t compute;
    stb_train_layout_t layout;
    /* fabric values from the command line (< 0 / STA_INTRA_COUNT: not given) */
    double value[STA_FIELD_COUNT];
    sta_intra_t kind;
    char intra_note[128], nic_note[128];
    const char *profile;        /* --profile FILE */
    const char *plot_data;      /* --plot-data FILE */
    double global_batch;        /* --global-batch (sequences); 0 = dp·M·b of the layout */
    int json, search, top, allow_tp_cross, help;
} stb_train_opts_t;

/*
 * Parses argv[1..argc) (argv[0] is "train"). No I/O. STRATA_ERR_INVALID with a one-line
 * reason in err for an unknown option, a missing or malformed value, a value without a unit
 * where one is needed.
 */
strata_status_t stb_train_opts_parse(int argc, char *const argv[], stb_train_opts_t *opts,
                                     char *err, size_t errlen);

const char *stb_train_usage(void);

/*
 * The fabric, from the defaults, then the profile file (if any: blocking file I/O), then the
 * command line; fills opts->cluster.fabric and the notes that say where each value came
 * from. STRATA_ERR_IO or STRATA_ERR_INVALID (the profile's reason is logged).
 */
strata_status_t stb_train_opts_fabric(stb_train_opts_t *opts);

/* Where a fabric value came from: "command line", "profile", "default". */
const char *stb_train_opts_source(const stb_train_opts_t *opts, sta_field_t field);

#endif /* STB_PLAN_TRAIN_OPTS_H */
