/*
 * Reference values and checks for the collective tests. Rank r's input
 * element i is a small integer f(r, i), so every sum, product, min and max of
 * up to 64 ranks is exact in every type (fp16 and bf16 included) and the
 * expected result is computed in int64 and then wrapped or converted to the
 * type exactly as the library must. Only avg of floating point types is
 * inexact (a division): it is checked within half an ulp of the type.
 */
#ifndef COLL_CHECK_H
#define COLL_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "algos/reduce.h"
#include "strata/strata.h"

static inline int64_t cc_value(int rank, size_t i, strata_op_t op)
{
    if (op == STRATA_PROD)
        return 1 + (int64_t)((i * 7 + (size_t)rank * 3) % 5 == 0);   /* 1 or 2 */
    return (int64_t)(((size_t)rank * 31 + i * 17) % 23) - 11;      /* -11 .. 11 */
}

static inline int cc_is_float(strata_dtype_t t)
{
    return t == STRATA_FP16 || t == STRATA_BF16 || t == STRATA_FP32 || t == STRATA_FP64;
}

static inline int cc_is_unsigned(strata_dtype_t t)
{
    return t == STRATA_UINT8 || t == STRATA_UINT32 || t == STRATA_UINT64;
}

/* Writes the (exact) value v into element i of buf. */
static inline void cc_put(void *buf, size_t i, strata_dtype_t t, double v)
{
    switch (t) {
    case STRATA_INT8: ((int8_t *)buf)[i] = (int8_t)(int64_t)v; break;
    case STRATA_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
    case STRATA_INT32: ((int32_t *)buf)[i] = (int32_t)(int64_t)v; break;
    case STRATA_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(int64_t)v; break;
    case STRATA_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case STRATA_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(int64_t)v; break;
    case STRATA_FP16: ((uint16_t *)buf)[i] = sta_fp16_encode((float)v); break;
    case STRATA_BF16: ((uint16_t *)buf)[i] = sta_bf16_encode((float)v); break;
    case STRATA_FP32: ((float *)buf)[i] = (float)v; break;
    case STRATA_FP64: ((double *)buf)[i] = v; break;
    default: break;
    }
}

static inline double cc_get(const void *buf, size_t i, strata_dtype_t t)
{
    switch (t) {
    case STRATA_INT8: return ((const int8_t *)buf)[i];
    case STRATA_UINT8: return ((const uint8_t *)buf)[i];
    case STRATA_INT32: return ((const int32_t *)buf)[i];
    case STRATA_UINT32: return ((const uint32_t *)buf)[i];
    case STRATA_INT64: return (double)((const int64_t *)buf)[i];
    case STRATA_UINT64: return (double)((const uint64_t *)buf)[i];
    case STRATA_FP16: return sta_fp16_decode(((const uint16_t *)buf)[i]);
    case STRATA_BF16: return sta_bf16_decode(((const uint16_t *)buf)[i]);
    case STRATA_FP32: return ((const float *)buf)[i];
    case STRATA_FP64: return ((const double *)buf)[i];
    default: return 0;
    }
}

/* The input of `rank` as stored in the type (ints wrap, e.g. -11 in uint8 is 245). */
static inline void cc_fill(void *buf, size_t count, strata_dtype_t t, strata_op_t op, int rank,
                           size_t first)
{
    for (size_t i = 0; i < count; i++)
        cc_put(buf, i, t, (double)cc_value(rank, first + i, op));
}

/* Wraps an int64 to the type's width and reads it back as the type would hold it. */
static inline double cc_wrap(int64_t v, strata_dtype_t t)
{
    unsigned char tmp[8];
    cc_put(tmp, 0, t, (double)v);
    return cc_get(tmp, 0, t);
}

/* Expected element i of op over ranks 0..P-1 (each input as stored in the type). */
static inline double cc_expect(int P, size_t i, strata_dtype_t t, strata_op_t op)
{
    int64_t acc = 0;
    double facc = 0;
    for (int r = 0; r < P; r++) {
        double x = cc_wrap(cc_value(r, i, op), t);   /* the stored input */
        int64_t xi = (int64_t)x;
        if (r == 0) {
            acc = xi;
            facc = x;
            continue;
        }
        switch (op) {
        case STRATA_SUM: case STRATA_AVG: acc += xi; facc += x; break;
        case STRATA_PROD: acc *= xi; facc *= x; break;
        case STRATA_MIN: acc = xi < acc ? xi : acc; facc = x < facc ? x : facc; break;
        case STRATA_MAX: acc = xi > acc ? xi : acc; facc = x > facc ? x : facc; break;
        default: break;
        }
    }
    if (cc_is_float(t))
        return op == STRATA_AVG ? facc / P : facc;
    double wrapped = cc_wrap(acc, t);
    if (op != STRATA_AVG)
        return wrapped;
    /* integer avg: the wrapped sum divided, truncating, in the type's signedness */
    if (cc_is_unsigned(t))
        return (double)((uint64_t)wrapped / (uint64_t)P);
    return (double)((int64_t)wrapped / P);
}

/* Tolerance: exact except avg of floats (one rounding of the type). */
static inline double cc_tol(strata_dtype_t t, strata_op_t op, double expect)
{
    if (op != STRATA_AVG || !cc_is_float(t))
        return 0;
    double rel = t == STRATA_FP16 ? 1e-3 : t == STRATA_BF16 ? 8e-3 : t == STRATA_FP32 ? 1e-6 : 1e-12;
    return fabs(expect) * rel + rel;
}

/* Number of wrong elements of got[first .. first+count) versus the reference. */
static inline size_t cc_check(const void *got, size_t count, strata_dtype_t t, strata_op_t op,
                              int P, size_t first, const char *what)
{
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
        double e = cc_expect(P, first + i, t, op), g = cc_get(got, i, t);
        if (fabs(e - g) > cc_tol(t, op, e)) {
            if (wrong < 3)
                fprintf(stderr, "%s: %s/%s element %zu: got %g, expected %g\n", what,
                        strata_dtype_name(t), strata_op_name(op), first + i, g, e);
            wrong++;
        }
    }
    return wrong;
}

#endif /* COLL_CHECK_H */
