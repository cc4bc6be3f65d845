/*
 * Element types and reduction operations of Strata's collectives.
 * Names follow nccl-tests (float, half, bfloat16, ...) where a name is printed.
 */
#ifndef STRATA_TYPES_H
#define STRATA_TYPES_H

#include <stddef.h>

#include "strata/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum strata_dtype {
    STRATA_INT8 = 0,
    STRATA_UINT8,
    STRATA_INT32,
    STRATA_UINT32,
    STRATA_INT64,
    STRATA_UINT64,
    STRATA_FP16,      /* IEEE binary16; reductions accumulate in fp32 */
    STRATA_BF16,      /* bfloat16; reductions accumulate in fp32 */
    STRATA_FP32,
    STRATA_FP64,
    STRATA_DTYPE_COUNT
} strata_dtype_t;

typedef enum strata_op {
    STRATA_SUM = 0,
    STRATA_PROD,
    STRATA_MIN,
    STRATA_MAX,
    STRATA_AVG,       /* sum, then divided by the number of ranks (integer division for ints) */
    STRATA_OP_COUNT
} strata_op_t;

/* Bytes per element; 0 for an out-of-range type. */
STRATA_API size_t strata_dtype_size(strata_dtype_t dtype);

/* nccl-tests' names: "int8", "uint8", "int32", "uint32", "int64", "uint64", "half",
 * "bfloat16", "float", "double"; "?" for an out-of-range type. */
STRATA_API const char *strata_dtype_name(strata_dtype_t dtype);

/* "sum", "prod", "min", "max", "avg"; "?" out of range. */
STRATA_API const char *strata_op_name(strata_op_t op);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_TYPES_H */
