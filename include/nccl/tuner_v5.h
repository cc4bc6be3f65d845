/*
 * The NCCL tuner plugin ABI, version 5 (NCCL 2.28's current tuner version).
 *
 * NCCL looks up ncclTunerPlugin_v5 (then v4, v3, v2) in the library named by
 * NCCL_TUNER_PLUGIN, else in libnccl-tuner.so, else in the net plugin's own
 * library: a tuner shipped inside libnccl-net-strata.so is found with no
 * extra setting. init and finalize run once per communicator.
 *
 * Cost table. getCollInfo receives NCCL's predicted time in microseconds for
 * every (algorithm, protocol) pair of one collective, a contiguous
 * float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] that NCCL passes cast to
 * float**. Read it back as `float (*)[NCCL_NUM_PROTOCOLS]`, never index it
 * as an array of row pointers. NCCL picks the smallest non-negative entry;
 * NCCL_ALGO_PROTO_IGNORE (-1) marks a pair that is not allowed. Returning an
 * error makes NCCL use its own choice for that call.
 *
 * ncclTunerConstants_v5_t is NCCL core's layout (src/include/plugin/tuner/
 * tuner_v5.h at v2.28.9-1), which has perChMaxNVLSTreeBws; the copy in
 * NCCL's ext-tuner example lacks that last member. NCCL owns the object, so
 * the core layout is the one that matters.
 */
#ifndef STRATA_NCCL_TUNER_V5_H
#define STRATA_NCCL_TUNER_V5_H

#include "nccl/common.h"

/* Collectives. Only the first NCCL_NUM_FUNCTIONS reach a tuner. */
typedef enum {
    ncclFuncBroadcast = 0,
    ncclFuncReduce = 1,
    ncclFuncAllGather = 2,
    ncclFuncReduceScatter = 3,
    ncclFuncAllReduce = 4,
    ncclFuncSendRecv = 5,
    ncclFuncSend = 6,
    ncclFuncRecv = 7,
    ncclFuncAlltoAll = 8,
    ncclFuncScatter = 9,
    ncclFuncGather = 10,
    ncclNumFuncs = 11
} ncclFunc_t;

#define NCCL_NUM_FUNCTIONS 5

/* Algorithms: the first index of the cost table. */
#define NCCL_ALGO_UNDEF (-1)
#define NCCL_ALGO_TREE 0
#define NCCL_ALGO_RING 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN 3
#define NCCL_ALGO_NVLS 4
#define NCCL_ALGO_NVLS_TREE 5
#define NCCL_ALGO_PAT 6
#define NCCL_NUM_ALGORITHMS_V5 7
#define NCCL_NUM_ALGORITHMS NCCL_NUM_ALGORITHMS_V5

/* Protocols: the second index of the cost table. */
#define NCCL_PROTO_UNDEF (-1)
#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2
#define NCCL_NUM_PROTOCOLS_V5 3
#define NCCL_NUM_PROTOCOLS NCCL_NUM_PROTOCOLS_V5

/* A cost-table entry NCCL must not choose. */
#define NCCL_ALGO_PROTO_IGNORE (-1.0)

/* Link kinds: the first index of hwLatencies. */
#define NCCL_HW_NVLINK 0
#define NCCL_HW_PCI 1
#define NCCL_HW_NET 2
#define NCCL_NUM_HW_LINKS_V5 3
#define NCCL_NUM_HW_LINKS NCCL_NUM_HW_LINKS_V5

/* GPU generations: the first index of the bandwidth ceilings. */
#define NCCL_VOLTA_COMPCAP_IDX 0
#define NCCL_AMPERE_COMPCAP_IDX 1
#define NCCL_HOPPER_COMPCAP_IDX 2
#define NCCL_BLACKWELL_COMPCAP_IDX 3
#define NCCL_NUM_COMPCAPS_V5 4
#define NCCL_NUM_COMPCAPS NCCL_NUM_COMPCAPS_V5

/* Node counts: the second index of the bandwidth ceilings. */
#define NCCL_TUNING_SCALE_1NODE 0
#define NCCL_TUNING_SCALE_2NODES 1
#define NCCL_TUNING_SCALE_4NODES 2
#define NCCL_NUM_TUNING_SCALES_V5 3
#define NCCL_NUM_TUNING_SCALES NCCL_NUM_TUNING_SCALES_V5

/* How the communicator's ranks spread over NVLink domains. */
typedef struct {
    int nNvlDomains;
    int minRanksPerNvlDomain;
    int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

/*
 * NCCL's model constants, handed to init filled with NCCL's defaults; the
 * tuner may overwrite them for its communicator. Latencies are in
 * microseconds, bandwidths in GB/s.
 */
typedef struct {
    double baseLatencies[NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
    double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS_V5][NCCL_NUM_PROTOCOLS_V5];
    double llMaxBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
    double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
    double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
    double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
    double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v5_t;

typedef struct {
    const char *name;
    /*
     * Once per communicator. nvlDomainInfo is input; constants is in-out.
     * Returns the tuner's context for that communicator in *ctx.
     */
    ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                         ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t *nvlDomainInfo,
                         ncclTunerConstants_v5_t *constants);
    /*
     * Adjusts the cost table (see above) for one collective of nBytes;
     * numPipeOps collectives are grouped, regBuff says the user buffer can be
     * registered. May set *nChannels; leaving outputs untouched keeps NCCL's
     * choice.
     */
    ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                float **collCostTable, int numAlgo, int numProto, int regBuff,
                                int *nChannels);
    ncclResult_t (*finalize)(void *context);
} ncclTuner_v5_t;

_Static_assert(sizeof(ncclFunc_t) == 4, "ncclFunc_t is an int-sized enum");
STP_ABI_CHECK_SIZE(ncclNvlDomainInfo_v5_t, 12);
STP_ABI_CHECK_SIZE(ncclTunerConstants_v5_t, 1152);
STP_ABI_CHECK_OFFSET(ncclTunerConstants_v5_t, hwLatencies, 168);
STP_ABI_CHECK_OFFSET(ncclTunerConstants_v5_t, llMaxBws, 672);
STP_ABI_CHECK_OFFSET(ncclTunerConstants_v5_t, perChMaxRingLL128Bws, 768);
STP_ABI_CHECK_OFFSET(ncclTunerConstants_v5_t, perChMaxTreeLL128Bws, 864);
STP_ABI_CHECK_OFFSET(ncclTunerConstants_v5_t, perChMaxTreeBws, 960);
STP_ABI_CHECK_OFFSET(ncclTunerConstants_v5_t, perChMaxNVLSTreeBws, 1056);
STP_ABI_CHECK_SIZE(ncclTuner_v5_t, 32);

#endif /* STRATA_NCCL_TUNER_V5_H */
