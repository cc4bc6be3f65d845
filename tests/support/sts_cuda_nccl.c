/* NCCL's values from CUDA's nccl.h (tests/support/sts_cuda_nccl.h). */
#include "sts_cuda_nccl.h"

#ifdef STS_HAVE_CUDA_NCCL
#include <nccl.h>

int sts_cuda_nccl_values(sts_cuda_nccl_t *v)
{
    static const int results[] = {ncclSuccess, ncclUnhandledCudaError, ncclSystemError,
                                  ncclInternalError, ncclInvalidArgument, ncclInvalidUsage,
                                  ncclRemoteError, ncclInProgress};
    static const int types[] = {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64,
                                ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16,
                                ncclFloat8e4m3, ncclFloat8e5m2};
    static const int ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};

    for (int i = 0; i < 8; i++)
        v->results[i] = results[i];
    v->num_results = ncclNumResults;
    for (int i = 0; i < 12; i++)
        v->types[i] = types[i];
    v->num_types = ncclNumTypes;
    for (int i = 0; i < 5; i++)
        v->ops[i] = ops[i];
    v->num_ops = ncclNumOps;
    v->max_red_op = (long long)ncclMaxRedOp;
    v->enum_size = (int)sizeof(ncclResult_t);
    return 1;
}
#else
int sts_cuda_nccl_values(sts_cuda_nccl_t *v)
{
    (void)v;
    return 0;
}
#endif
