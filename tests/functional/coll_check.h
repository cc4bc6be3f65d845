/*
 * Reference values and checks for the collective tests. Rank r's input
 * element i is a small integer f(r, i), so every sum, product, min and max of
 * up to 64 ranks is exact in every type (fp16, bf16 and, with owned elements, fp8) and the
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

static inline int cc_is_fp8(strata_dtype_t t)
{
    return t == STRATA_FP8_E4M3 || t == STRATA_FP8_E5M2;
}

/* fp8 holds too few fraction bits for sums of many ranks: element i has one owner, rank
 * i mod 7, with a value in -7 .. 7 (prod: 1 or 2); every other rank holds the identity, so
 * every partial result is exact in any order. */
static inline int64_t cc_value(int rank, size_t i, strata_op_t op, strata_dtype_t t)
{
    if (cc_is_fp8(t)) {
        int owner = rank == (int)(i % 7);
        if (op == STRATA_PROD)
            return owner && i % 3 == 0 ? 2 : 1;
        return owner ? (int64_t)((i * 17) % 15) - 7 : 0;
    }
    if (op == STRATA_PROD)
        return 1 + (int64_t)((i * 7 + (size_t)rank * 3) % 5 == 0);   /* 1 or 2 */
    return (int64_t)(((size_t)rank * 31 + i * 17) % 23) - 11;      /* -11 .. 11 */
}

static inline int cc_is_float(strata_dtype_t t)
{
    return t == STRATA_FP16 || t == STRATA_BF16 || t == STRATA_FP32 || t == STRATA_FP64 ||
           cc_is_fp8(t);
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
    case STRATA_FP8_E4M3: ((uint8_t *)buf)[i] = sta_fp8_e4m3_encode((float)v); break;
    case STRATA_FP8_E5M2: ((uint8_t *)buf)[i] = sta_fp8_e5m2_encode((float)v); break;
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
    case STRATA_FP8_E4M3: return sta_fp8_e4m3_decode(((const uint8_t *)buf)[i]);
    case STRATA_FP8_E5M2: return sta_fp8_e5m2_decode(((const uint8_t *)buf)[i]);
    default: return 0;
    }
}

/* The input of `rank` as stored in the type (ints wrap, e.g. -11 in uint8 is 245). */
static inline void cc_fill(void *buf, size_t count, strata_dtype_t t, strata_op_t op, int rank,
                           size_t first)
{
    for (size_t i = 0; i < count; i++)
        cc_put(buf, i, t, (double)cc_value(rank, first + i, op, t));
}

/* Element i of an integer buffer, sign- or zero-extended per the type, as 64 raw bits. */
static inline uint64_t cc_load_bits(const void *buf, size_t i, strata_dtype_t t)
{
    switch (t) {
    case STRATA_INT8: return (uint64_t)(int64_t)((const int8_t *)buf)[i];
    case STRATA_UINT8: return ((const uint8_t *)buf)[i];
    case STRATA_INT32: return (uint64_t)(int64_t)((const int32_t *)buf)[i];
    case STRATA_UINT32: return ((const uint32_t *)buf)[i];
    case STRATA_INT64: return (uint64_t)((const int64_t *)buf)[i];
    case STRATA_UINT64: return ((const uint64_t *)buf)[i];
    default: return 0;
    }
}

static inline void cc_store_bits(void *buf, size_t i, strata_dtype_t t, uint64_t v)
{
    switch (t) {
    case STRATA_INT8: case STRATA_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case STRATA_INT32: case STRATA_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    default: ((uint64_t *)buf)[i] = v; break;
    }
}

/* Expected element i of op over ranks 0..P-1, stored as the type in out[0]. */
static inline void cc_expect(int P, size_t i, strata_dtype_t t, strata_op_t op, void *out)
{
    unsigned char in[8];
    if (cc_is_float(t)) {
        double acc = 0;
        for (int r = 0; r < P; r++) {
            cc_put(in, 0, t, (double)cc_value(r, i, op, t));
            double x = cc_get(in, 0, t);
            if (r == 0)
                acc = x;
            else if (op == STRATA_SUM || op == STRATA_AVG)
                acc += x;
            else if (op == STRATA_PROD)
                acc *= x;
            else if (op == STRATA_MIN)
                acc = x < acc ? x : acc;
            else
                acc = x > acc ? x : acc;
        }
        ((double *)out)[0] = op == STRATA_AVG ? acc / P : acc;
        return;
    }
    /* integers: wrap modulo 2^bits (sum, prod), compare in the type's signedness */
    int uns = cc_is_unsigned(t);
    uint64_t acc = 0;
    for (int r = 0; r < P; r++) {
        cc_put(in, 0, t, (double)cc_value(r, i, op, t));
        uint64_t x = cc_load_bits(in, 0, t);
        if (r == 0)
            acc = x;
        else if (op == STRATA_SUM || op == STRATA_AVG)
            acc += x;
        else if (op == STRATA_PROD)
            acc *= x;
        else if (op == STRATA_MIN)
            acc = (uns ? x < acc : (int64_t)x < (int64_t)acc) ? x : acc;
        else
            acc = (uns ? x > acc : (int64_t)x > (int64_t)acc) ? x : acc;
    }
    cc_store_bits(out, 0, t, acc);
    if (op == STRATA_AVG) {
        uint64_t w = cc_load_bits(out, 0, t);
        w = uns ? w / (uint64_t)P : (uint64_t)((int64_t)w / P);
        cc_store_bits(out, 0, t, w);
    }
}

/* Tolerance for avg of floats: about half an ulp of the type, relative. */
static inline double cc_tol(strata_dtype_t t, double expect)
{
    double rel = cc_is_fp8(t) ? 0.13 : t == STRATA_FP16 ? 1e-3 : t == STRATA_BF16 ? 8e-3 :
                 t == STRATA_FP32 ? 1e-6 : 1e-12;
    return fabs(expect) * rel + rel;
}

/* Number of wrong elements of got[first .. first+count) versus the reference. */
static inline size_t cc_check(const void *got, size_t count, strata_dtype_t t, strata_op_t op,
                              int P, size_t first, const char *what)
{
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
        unsigned char e[8];
        int bad;
        double ev, gv = cc_get(got, i, t);
        cc_expect(P, first + i, t, op, e);
        if (cc_is_float(t)) {
            ev = ((double *)e)[0];
            bad = op == STRATA_AVG ? fabs(ev - gv) > cc_tol(t, ev) : ev != gv;
        } else {
            ev = cc_get(e, 0, t);
            bad = cc_load_bits(e, 0, t) != cc_load_bits(got, i, t);
        }
        if (bad) {
            if (wrong < 3)
                fprintf(stderr, "%s: %s/%s element %zu: got %g, expected %g\n", what,
                        strata_dtype_name(t), strata_op_name(op), first + i, gv, ev);
            wrong++;
        }
    }
    return wrong;
}

/* got[0..count) must equal rank `rank`'s input elements first .. first+count (as stored). */
static inline size_t cc_check_input(const void *got, size_t count, strata_dtype_t t, int rank,
                                    size_t first, const char *what)
{
    size_t esz = strata_dtype_size(t), wrong = 0;
    unsigned char e[8];
    for (size_t i = 0; i < count; i++) {
        cc_put(e, 0, t, (double)cc_value(rank, first + i, STRATA_SUM, t));
        if (memcmp(e, (const char *)got + i * esz, esz) != 0) {
            if (wrong < 3)
                fprintf(stderr, "%s: %s element %zu: got %g, expected %g (rank %d's input)\n",
                        what, strata_dtype_name(t), first + i, cc_get(got, i, t),
                        cc_get(e, 0, t), rank);
            wrong++;
        }
    }
    return wrong;
}

#endif /* COLL_CHECK_H */
