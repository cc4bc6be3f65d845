/*
 * fp8 (OCP 8-bit floating point, the two formats NCCL reduces) <-> fp32 conversions, and the
 * portable fp8 reduction kernels (the AVX2 ones are in reduce_avx2.c).
 *
 * Formats (sign | exponent | fraction, bias):
 *   E4M3  1 | 4 | 3, bias 7:  normals 2^-6 .. 448, subnormals down to 2^-9; no infinities,
 *                             S.1111.111 is NaN (the "fn" variant NVIDIA and OCP define)
 *   E5M2  1 | 5 | 2, bias 15: normals 2^-14 .. 57344, subnormals down to 2^-16; IEEE-like
 *                             Inf (S.11111.00) and NaN (S.11111.xx, xx != 0)
 * Decode is exact. Encode rounds to nearest, ties to even, and saturates: a magnitude above
 * the largest finite value (Inf included) becomes that value with its sign. That is CUDA's
 * default fp8 conversion (__NV_SATFINITE), the one NCCL's own fp8 reductions go through, so a
 * CollNet result matches what NCCL computes on the GPU wherever no intermediate rounding
 * differs. NaN stays NaN: E4M3 gives S.1111.111; E5M2 keeps the top two fraction bits with
 * the quiet one set. Reductions decode every input, combine in fp32 in source order and
 * encode once (fp32 holds every fp8 sum or product of two values exactly).
 *
 * The encode here works on the fp32 bits in integers, so it does not depend on MXCSR; the
 * AVX2 kernels (reduce_avx2.c) round subnormal results with CVTPS2DQ, which gives the same
 * bits under the default MXCSR (round to nearest even, no FTZ/DAZ), as algos/reduce.h assumes.
 */
#include <string.h>

#include "algos/reduce.h"
#include "algos/reduce_kern.h"
#include "util/compiler.h"

float sta_fp8_e4m3_decode(uint8_t b)
{
    uint32_t sign = (uint32_t)(b & STA_FP8_SIGN) << 24;
    uint32_t t = b & 0x7fu;

    if (t == STA_E4M3_NAN)
        return sta_f32_from_bits(sign | STA_F32_INF | STA_F32_QUIET);
    if (t < 8)                               /* exponent 0: t x 2^-9, exact in fp32 */
        return sta_f32_from_bits(sign | sta_f32_bits((float)t / STA_E4M3_SUB_SCALE));
    return sta_f32_from_bits(sign | ((t << STA_E4M3_SHIFT) + (STA_E4M3_REBIAS << 23)));
}

float sta_fp8_e5m2_decode(uint8_t b)
{
    uint32_t sign = (uint32_t)(b & STA_FP8_SIGN) << 24;
    uint32_t t = b & 0x7fu;

    if (t >= STA_E5M2_INF)                       /* Inf, or NaN made quiet */
        return sta_f32_from_bits(sign | STA_F32_INF | ((t & 3u) << STA_E5M2_SHIFT) |
                             (t > STA_E5M2_INF ? STA_F32_QUIET : 0));
    if (t < 4)
        return sta_f32_from_bits(sign | sta_f32_bits((float)t / STA_E5M2_SUB_SCALE));
    return sta_f32_from_bits(sign | ((t << STA_E5M2_SHIFT) + (STA_E5M2_REBIAS << 23)));
}

/*
 * The magnitude of |x| (fp32 bits a, not NaN) in a format that drops `shift` fp32 fraction
 * bits and whose bias is 127 - rebias: w = 23 - shift fraction bits, smallest normal
 * min_norm, largest finite encoding max. A subnormal result counts units of 2^(1 - bias - w)
 * = 2^(rebias + shift - 149); with |x| = m x 2^(e - 150) (m the 24-bit significand, e the
 * biased exponent) that is m >> (rebias + shift + 1 - e), rounded.
 */
static inline uint32_t fp8_magnitude(uint32_t a, uint32_t shift, uint32_t rebias,
                                     uint32_t min_norm, uint32_t max)
{
    if (a >= min_norm) {
        uint32_t q = (a - (rebias << 23)) >> shift;
        uint32_t r = q > max ? max : sta_round_even(q, a & ((1u << shift) - 1), 1u << shift);
        return r > max ? max : r;
    }
    uint32_t e = a >> 23;
    uint32_t rshift = rebias + shift + 1 - e;
    /* Below half the smallest subnormal (a shift past 24 leaves less than half a unit), or an
     * fp32 subnormal: zero. */
    if (e == 0 || rshift > 24)
        return 0;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t one = 1u << rshift;
    return sta_round_even(m >> rshift, m & (one - 1), one);
}

uint8_t sta_fp8_e4m3_encode(float f)
{
    uint32_t u = sta_f32_bits(f), a = u & STA_F32_ABS;
    uint8_t sign = (uint8_t)((u >> 24) & STA_FP8_SIGN);

    if (a > STA_F32_INF)
        return sign | STA_E4M3_NAN;
    return sign | (uint8_t)fp8_magnitude(a, STA_E4M3_SHIFT, STA_E4M3_REBIAS, STA_E4M3_MIN_NORM,
                                         STA_E4M3_MAX);
}

uint8_t sta_fp8_e5m2_encode(float f)
{
    uint32_t u = sta_f32_bits(f), a = u & STA_F32_ABS;
    uint8_t sign = (uint8_t)((u >> 24) & STA_FP8_SIGN);

    if (a > STA_F32_INF)
        return sign | STA_E5M2_QNAN | (uint8_t)((u >> STA_E5M2_SHIFT) & 1u);
    return sign | (uint8_t)fp8_magnitude(a, STA_E5M2_SHIFT, STA_E5M2_REBIAS, STA_E5M2_MIN_NORM,
                                         STA_E5M2_MAX);
}

/* ---------------------------------------------------------------- portable kernels */

#define OP_ADD(a, b) ((a) + (b))
#define OP_MUL(a, b) ((a) * (b))

/* As reduce_half.c's kernels, one byte per element. */
#define FP8_KERNEL(name, DECODE, ENCODE, OP)                                                  \
    void name(void *dst, const void *const *srcs, int nsrc, size_t begin, size_t end,         \
              unsigned flags)                                                                 \
    {                                                                                         \
        float acc[STA_REDUCE_SCALAR_BLOCK];                                                   \
        uint8_t b[STA_REDUCE_SCALAR_BLOCK];                                                   \
        for (size_t i = begin; i < end; i += STA_REDUCE_SCALAR_BLOCK) {                       \
            size_t n = STU_MIN(end - i, (size_t)STA_REDUCE_SCALAR_BLOCK);                     \
            memcpy(b, (const char *)srcs[0] + i, n);                                          \
            for (size_t j = 0; j < n; j++)                                                    \
                acc[j] = DECODE(b[j]);                                                        \
            for (int k = 1; k < nsrc; k++) {                                                  \
                memcpy(b, (const char *)srcs[k] + i, n);                                      \
                for (size_t j = 0; j < n; j++)                                                \
                    acc[j] = OP(acc[j], DECODE(b[j]));                                        \
            }                                                                                 \
            for (size_t j = 0; j < n; j++)                                                    \
                b[j] = ENCODE(acc[j]);                                                        \
            memcpy((char *)dst + i, b, n);                                                    \
        }                                                                                     \
    }

FP8_KERNEL(sta_reduce_scalar_e4m3_sum, sta_fp8_e4m3_decode, sta_fp8_e4m3_encode, OP_ADD)
FP8_KERNEL(sta_reduce_scalar_e4m3_prod, sta_fp8_e4m3_decode, sta_fp8_e4m3_encode, OP_MUL)
FP8_KERNEL(sta_reduce_scalar_e4m3_min, sta_fp8_e4m3_decode, sta_fp8_e4m3_encode,
           sta_reduce_minf)
FP8_KERNEL(sta_reduce_scalar_e4m3_max, sta_fp8_e4m3_decode, sta_fp8_e4m3_encode,
           sta_reduce_maxf)
FP8_KERNEL(sta_reduce_scalar_e5m2_sum, sta_fp8_e5m2_decode, sta_fp8_e5m2_encode, OP_ADD)
FP8_KERNEL(sta_reduce_scalar_e5m2_prod, sta_fp8_e5m2_decode, sta_fp8_e5m2_encode, OP_MUL)
FP8_KERNEL(sta_reduce_scalar_e5m2_min, sta_fp8_e5m2_decode, sta_fp8_e5m2_encode,
           sta_reduce_minf)
FP8_KERNEL(sta_reduce_scalar_e5m2_max, sta_fp8_e5m2_decode, sta_fp8_e5m2_encode,
           sta_reduce_maxf)

/* The average's last step: decode, divide in fp32, round once. */
#define FP8_FINISH(name, DECODE, ENCODE)                                                      \
    void name(void *buf, size_t begin, size_t end, int nranks)                                \
    {                                                                                         \
        uint8_t *p = (uint8_t *)buf;                                                          \
        for (size_t i = begin; i < end; i++)                                                  \
            p[i] = ENCODE(DECODE(p[i]) / (float)nranks);                                      \
    }

FP8_FINISH(sta_reduce_scalar_fin_e4m3, sta_fp8_e4m3_decode, sta_fp8_e4m3_encode)
FP8_FINISH(sta_reduce_scalar_fin_e5m2, sta_fp8_e5m2_decode, sta_fp8_e5m2_encode)
