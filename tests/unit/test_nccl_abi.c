/*
 * include/nccl/ against NCCL's own header where one is installed: CUDA's
 * nccl.h (2.28.9 with CUDA 13) declares the result codes, data types and
 * reduction operators the plugin ABI shares with NCCL's API. Sizes and offsets of the plugin
 * structs are pinned by the headers' own _Static_asserts; nccl.h has no
 * plugin structs to compare them with. Skipped where CUDA is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nccl/net.h"
#include "sts_cuda_nccl.h"

static void abi_matches_cuda_nccl(void **state)
{
    static const int results[] = {ncclSuccess, ncclUnhandledCudaError, ncclSystemError,
                                  ncclInternalError, ncclInvalidArgument, ncclInvalidUsage,
                                  ncclRemoteError, ncclInProgress};
    static const int types[] = {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64,
                                ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16,
                                ncclFloat8e4m3, ncclFloat8e5m2};
    static const int ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
    sts_cuda_nccl_t v;

    if (!sts_cuda_nccl_values(&v))
        skip();
    for (int i = 0; i < 8; i++)
        assert_int_equal(results[i], v.results[i]);
    assert_int_equal(ncclNumResults, v.num_results);
    for (int i = 0; i < 12; i++)
        assert_int_equal(types[i], v.types[i]);
    assert_int_equal(ncclNumTypes, v.num_types);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ops[i], v.ops[i]);
    assert_int_equal(ncclNumOps, v.num_ops);
    assert_int_equal((long long)ncclMaxRedOp, v.max_red_op);
    assert_int_equal((int)sizeof(ncclResult_t), v.enum_size);
}

int main(void)
{
    const struct CMUnitTest cases[] = {
        cmocka_unit_test(abi_matches_cuda_nccl),
    };
    return cmocka_run_group_tests_name("nccl_abi", cases, NULL, NULL);
}
