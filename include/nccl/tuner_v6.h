/*
 * The NCCL tuner plugin ABI, version 6 (NCCL 2.30's current tuner version;
 * first tagged in 2.30.3).
 *
 * v6 is v5 with one more entry point at the end, getChunkSize. init,
 * getCollInfo and finalize keep v5's signatures and rules (tuner_v5.h), and
 * the constants and NVLink-domain structs are v5's unchanged. NCCL 2.30 looks
 * up ncclTunerPlugin_v6 first, then _v5 down to _v2; NCCL 2.28 knows only up
 * to _v5. A library exporting both serves either.
 *
 * getChunkSize is optional (NULL: NCCL keeps its chunk). NCCL calls it after
 * it has chosen the algorithm, protocol and channel count of one collective,
 * with the chunk it computed in *chunkSize; the tuner may replace it. NCCL
 * then lowers a value above its staging buffer's step (NCCL_BUFFSIZE / 8 for
 * Simple, less for LL and LL128) to that step, logging the clamp at INFO, and
 * rounds the result down to the protocol's grain (512 bytes for Simple). There
 * is no lower clamp: a value below one grain becomes 0, so a tuner never
 * returns less than NCCL_TUNER_SIMPLE_GRAIN. An error here fails the
 * collective, like one from getCollInfo.
 */
#ifndef STRATA_NCCL_TUNER_V6_H
#define STRATA_NCCL_TUNER_V6_H

#include "nccl/tuner_v5.h"

/* The Simple protocol's grain: NCCL rounds a chunk down to a multiple of it (ncclProtoGrainSize). */
#define NCCL_TUNER_SIMPLE_GRAIN 512

typedef ncclTunerConstants_v5_t ncclTunerConstants_v6_t;
typedef ncclNvlDomainInfo_v5_t ncclNvlDomainInfo_v6_t;

typedef struct {
    const char *name;
    /* As v5's init. */
    ncclResult_t (*init)(void **ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                         ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v6_t *nvlDomainInfo,
                         ncclTunerConstants_v6_t *constants);
    /* As v5's getCollInfo. */
    ncclResult_t (*getCollInfo)(void *context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                float **collCostTable, int numAlgo, int numProto, int regBuff,
                                int *nChannels);
    /* As v5's finalize. */
    ncclResult_t (*finalize)(void *context);
    /*
     * Optional. For one collective of nBytes that NCCL will run with algo, proto and
     * nChannels: *chunkSize holds NCCL's chunk in bytes on entry and the chunk to use on
     * return (see above for NCCL's clamping). Leaving it untouched keeps NCCL's.
     */
    ncclResult_t (*getChunkSize)(void *context, ncclFunc_t collType, size_t nBytes, int algo,
                                 int proto, int nChannels, size_t *chunkSize);
} ncclTuner_v6_t;

STP_ABI_CHECK_OFFSET(ncclTuner_v6_t, name, 0);
STP_ABI_CHECK_OFFSET(ncclTuner_v6_t, init, 8);
STP_ABI_CHECK_OFFSET(ncclTuner_v6_t, getCollInfo, 16);
STP_ABI_CHECK_OFFSET(ncclTuner_v6_t, finalize, 24);
STP_ABI_CHECK_OFFSET(ncclTuner_v6_t, getChunkSize, 32);
STP_ABI_CHECK_SIZE(ncclTuner_v6_t, 40);
/* v6 extends v5 at the end: a v5 reader of a v6 table sees v5's fields where it expects them. */
STP_ABI_CHECK_OFFSET(ncclTuner_v5_t, finalize, 24);
_Static_assert(sizeof(ncclTunerConstants_v6_t) == sizeof(ncclTunerConstants_v5_t),
               "v6 constants are v5's");

#endif /* STRATA_NCCL_TUNER_V6_H */
