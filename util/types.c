/* Sizes and names of element types and operations. */
#include "strata/types.h"

static const struct {
    size_t size;
    const char *name;
} dtype_info[STRATA_DTYPE_COUNT] = {
    [STRATA_INT8] = {1, "int8"},     [STRATA_UINT8] = {1, "uint8"},
    [STRATA_INT32] = {4, "int32"},   [STRATA_UINT32] = {4, "uint32"},
    [STRATA_INT64] = {8, "int64"},   [STRATA_UINT64] = {8, "uint64"},
    [STRATA_FP16] = {2, "half"},     [STRATA_BF16] = {2, "bfloat16"},
    [STRATA_FP32] = {4, "float"},    [STRATA_FP64] = {8, "double"},
    [STRATA_FP8_E4M3] = {1, "f8e4m3"}, [STRATA_FP8_E5M2] = {1, "f8e5m2"},
};

static const char *const op_names[STRATA_OP_COUNT] = {
    [STRATA_SUM] = "sum", [STRATA_PROD] = "prod", [STRATA_MIN] = "min",
    [STRATA_MAX] = "max", [STRATA_AVG] = "avg",
};

size_t strata_dtype_size(strata_dtype_t dtype)
{
    return (unsigned)dtype < STRATA_DTYPE_COUNT ? dtype_info[dtype].size : 0;
}

const char *strata_dtype_name(strata_dtype_t dtype)
{
    return (unsigned)dtype < STRATA_DTYPE_COUNT ? dtype_info[dtype].name : "?";
}

const char *strata_op_name(strata_op_t op)
{
    return (unsigned)op < STRATA_OP_COUNT ? op_names[op] : "?";
}
