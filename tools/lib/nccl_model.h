/*
 * NCCL's own cost table, emulated: what NCCL 2.28.9 hands a tuner's
 * getCollInfo for one collective on a cluster described by a few numbers,
 * and the algorithm and protocol it then picks. strata-plan nccl and the
 * tuner's tests stand where NCCL stands with it.
 *
 * It follows src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime) and
 * src/enqueue.cc (updateCollCostTable, topoGetAlgoInfo) at tag v2.28.9-1:
 * latencies from the tuner constants, bandwidths from the graphs' per-channel
 * speeds, NCCL's refinements (LL, LL128 and tree ceilings, the tree correction
 * factors, the ring plateau), NCCL_ALGO / NCCL_PROTO in NCCL's syntax. The
 * topology search is not emulated: its results are parameters (channels, the
 * per-channel speeds, whether links are NVLink, an NVSwitch, LL128). NVLS and
 * NVLS Tree are never offered (their entries stay -1): they need multicast
 * hardware the emulation does not describe.
 *
 * Pure functions; no I/O, no global state.
 */
#ifndef STB_NCCL_MODEL_H
#define STB_NCCL_MODEL_H

#include <stddef.h>

#include "nccl/tuner.h"
#include "strata/status.h"

/* The parts of NCCL's topology and graphs its model reads. */
typedef struct stb_nccl_topo {
    int nnodes;                 /* N >= 1 */
    int ppn;                    /* GPUs (ranks) per node, all nodes alike, 1..64 */
    int compcap_idx;            /* NCCL_VOLTA_COMPCAP_IDX .. NCCL_BLACKWELL_COMPCAP_IDX */
    int cpu_amd;                /* 1: AMD host CPUs (LL ceiling row, net overhead 2 us) */
    int nvlink;                 /* 1: GPUs of a node talk over NVLink, 0: PCI */
    int nvswitch;               /* 1: the node has an NVSwitch (CollNet Direct needs one) */
    int collnet;                /* 1: NCCL_COLLNET_ENABLE=1 and a CollNet came up */
    int collnet_ag_rs;          /* 1: that CollNet has iallgather and ireducescatter */
    int collnet_heads;          /* NCCL's collNetHeadsNum (NIC-local GPUs per node) */
    int ll128;                  /* 1: LL128 enabled (NCCL: Hopper+ up to PXN, NVLink) */
    int nchannels;              /* channels of every graph, >= 1 */
    double bw_intra;            /* graphs' bwIntra, GB/s per channel (> 0) */
    double bw_inter;            /* graphs' bwInter, GB/s per channel (> 0) */
    double bw_collnet_intra;    /* the CollNet graphs' bwIntra (NVLink speed), GB/s per channel */
    double net_latency_us;      /* graphs' latencyInter: the net's latency property, us */
} stb_nccl_topo_t;

/* comm->latencies and comm->bandwidths after ncclTopoTuneModel: bandwidth 0 = disabled. */
typedef struct stb_nccl_model {
    stb_nccl_topo_t topo;
    double lat[NCCL_NUM_FUNCTIONS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    double bw[NCCL_NUM_FUNCTIONS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
} stb_nccl_model_t;

/* NCCL's default tuner constants (src/graph/tuning.cc, ncclTunerConstantsDefaults). */
void stb_nccl_constants_default(ncclTunerConstants_v5_t *constants);

/*
 * ncclTopoTuneModel for topo with constants (after a tuner's init may have edited them);
 * algo_env and proto_env are NCCL_ALGO and NCCL_PROTO (NULL: unset). STRATA_ERR_INVALID,
 * with a reason in err, for a topology out of range or an NCCL_ALGO/NCCL_PROTO that NCCL
 * would refuse; *model untouched then.
 */
strata_status_t stb_nccl_model_build(const stb_nccl_topo_t *topo,
                                     const ncclTunerConstants_v5_t *constants,
                                     const char *algo_env, const char *proto_env,
                                     stb_nccl_model_t *model, char *err, size_t errlen);

/*
 * The table NCCL hands getCollInfo for func on nbytes (initCollCostTable then
 * updateCollCostTable): µs per entry, NCCL_ALGO_PROTO_IGNORE where unusable.
 */
void stb_nccl_table(const stb_nccl_model_t *model, int func, size_t nbytes, int num_pipe_ops,
                    float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]);

/* topoGetAlgoInfo's pick: the smallest entry >= 0, the first on ties. 0, or -1 if none. */
int stb_nccl_pick(const float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], int *algo_p,
                  int *proto_p);

#endif /* STB_NCCL_MODEL_H */
