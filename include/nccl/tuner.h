/*
 * The NCCL tuner plugin ABI, every version Strata exports (v5 and v6), and
 * unversioned names for the current one (v6, as in NCCL 2.30).
 */
#ifndef STRATA_NCCL_TUNER_H
#define STRATA_NCCL_TUNER_H

#include "nccl/tuner_v5.h"
#include "nccl/tuner_v6.h"

typedef ncclTuner_v6_t ncclTuner_t;
typedef ncclTunerConstants_v6_t ncclTunerConstants_t;
typedef ncclNvlDomainInfo_v6_t ncclNvlDomainInfo_t;

/* NCCL's names for the cost table's indices (its ncclFuncStr, ncclAlgoStr, ncclProtoStr,
 * which NCCL_ALGO and NCCL_PROTO also use); "?" out of range. */
static inline const char *nccl_tuner_func_name(int func)
{
    static const char *const names[NCCL_NUM_FUNCTIONS] = {
        "Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
    };
    return func >= 0 && func < NCCL_NUM_FUNCTIONS ? names[func] : "?";
}

static inline const char *nccl_tuner_algo_name(int algo)
{
    static const char *const names[NCCL_NUM_ALGORITHMS] = {
        "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT",
    };
    return algo >= 0 && algo < NCCL_NUM_ALGORITHMS ? names[algo] : "?";
}

static inline const char *nccl_tuner_proto_name(int proto)
{
    static const char *const names[NCCL_NUM_PROTOCOLS] = {"LL", "LL128", "Simple"};
    return proto >= 0 && proto < NCCL_NUM_PROTOCOLS ? names[proto] : "?";
}

#endif /* STRATA_NCCL_TUNER_H */
