/*
 * fp16 (IEEE-754 binary16) and bf16 (bfloat16) <-> fp32 conversions, and the portable fp16/bf16
 * reduction kernels that use them.
 *
 * Formats (sign | exponent | fraction, bias):
 *   fp16  1 | 5 | 10, bias 15: normals 2^-14 .. 65504, subnormals down to 2^-24
 *   bf16  1 | 8 |  7, bias 127: the top half of an fp32, same range, 8 bits of precision
 *   fp32  1 | 8 | 23, bias 127
 * Both decodes are exact. Encodes round to nearest, ties to even, in integer arithmetic so the
 * result does not depend on MXCSR (FTZ/DAZ) and subnormals survive. Hardware bf16 conversion
 * (VCVTNEPS2BF16) flushes subnormals to zero, which is why no family uses it.
 */
#include <string.h>

#include "algos/reduce.h"
#include "algos/reduce_kern.h"
#include "util/compiler.h"

/* IEEE-754 binary16 fields. */
#define F16_SIGN     0x8000u
#define F16_INF      0x7c00u
#define F16_FRAC     0x03ffu
#define F16_QUIET    0x0200u
/* Exponent bias difference fp32 - fp16 (127 - 15), and the fraction width difference. */
#define F16_REBIAS   112u
#define F16_SHIFT    13
/* |x| from which fp32 -> fp16 overflows to Inf: 65520 = halfway between the largest fp16,
 * 65504, and 2^16; the tie goes to the even neighbour, which is 2^16 = Inf. */
#define F16_OVF_ABS  0x477ff000u
/* |x| below which the fp16 result is subnormal or zero: 2^-14, the smallest fp16 normal. */
#define F16_MIN_NORM 0x38800000u

float sta_fp16_decode(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & F16_SIGN) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t frac = h & F16_FRAC;

    if (exp == 0x1f)                      /* Inf, or NaN made quiet */
        return sta_f32_from_bits(sign | STA_F32_INF | (frac << F16_SHIFT) |
                                 (frac ? STA_F32_QUIET : 0));
    if (exp != 0)
        return sta_f32_from_bits(sign | ((exp + F16_REBIAS) << 23) | (frac << F16_SHIFT));
    if (frac == 0)
        return sta_f32_from_bits(sign);
    /* Subnormal frac x 2^-24: normalise so the leading 1 sits at bit 10 (the hidden bit). */
    int shift = __builtin_clz(frac) - 21;
    uint32_t exp32 = F16_REBIAS + 1 - (uint32_t)shift;
    return sta_f32_from_bits(sign | (exp32 << 23) | (((frac << shift) & F16_FRAC) << F16_SHIFT));
}

uint16_t sta_fp16_encode(float f)
{
    uint32_t u = sta_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & F16_SIGN);
    uint32_t a = u & STA_F32_ABS;

    if (a > STA_F32_INF)                      /* NaN: keep the top payload bits, force quiet */
        return sign | F16_INF | F16_QUIET | (uint16_t)((a >> F16_SHIFT) & F16_FRAC);
    if (a >= F16_OVF_ABS)
        return sign | F16_INF;
    if (a >= F16_MIN_NORM) {
        /* Rebias and drop 13 fraction bits; a carry out of the fraction bumps the exponent,
         * which is the right answer (and cannot reach Inf below F16_OVF_ABS). */
        uint32_t q = (a - (F16_REBIAS << 23)) >> F16_SHIFT;
        return sign | (uint16_t)sta_round_even(q, a & 0x1fff, 0x2000);
    }
    /* Subnormal result: frac16 = |x| / 2^-24 = m x 2^(e - 126) for x = m x 2^(e - 150), with m
     * the 24-bit significand. e <= 112 here, so the shift is at least 14. */
    uint32_t e = a >> 23;
    if (e < 102)                          /* |x| < 2^-25: below half the smallest subnormal */
        return sign;
    uint32_t m = (a & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - e;
    uint32_t one = 1u << shift;
    return sign | (uint16_t)sta_round_even(m >> shift, m & (one - 1), one);
}

float sta_bf16_decode(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    if ((u & STA_F32_ABS) > STA_F32_INF)
        u |= STA_F32_QUIET;
    return sta_f32_from_bits(u);
}

uint16_t sta_bf16_encode(float f)
{
    uint32_t u = sta_f32_bits(f);

    if ((u & STA_F32_ABS) > STA_F32_INF)
        return (uint16_t)(u >> 16) | STA_BF16_QUIET;
    /* One addition rounds to nearest even; FLT_MAX rounds up to Inf as it should. */
    u += STA_BF16_ROUND_BIAS + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* ---------------------------------------------------------------- portable kernels */

#define OP_ADD(a, b) ((a) + (b))
#define OP_MUL(a, b) ((a) * (b))

/*
 * Defines kernel `name` over 16-bit floats: each element is decoded to fp32 (DECODE), the
 * sources are folded in fp32 in source order with OP, and the block is encoded once (ENCODE).
 * Blocked as in reduce_scalar.c.
 */
#define HALF_KERNEL(name, DECODE, ENCODE, OP)                                                 \
    void name(void *dst, const void *const *srcs, int nsrc, size_t begin, size_t end,         \
              unsigned flags)                                                                 \
    {                                                                                         \
        float acc[STA_REDUCE_SCALAR_BLOCK];                                                   \
        uint16_t h[STA_REDUCE_SCALAR_BLOCK];                                                  \
        for (size_t i = begin; i < end; i += STA_REDUCE_SCALAR_BLOCK) {                       \
            size_t n = STU_MIN(end - i, (size_t)STA_REDUCE_SCALAR_BLOCK);                     \
            memcpy(h, (const char *)srcs[0] + 2 * i, 2 * n);                                  \
            for (size_t j = 0; j < n; j++)                                                    \
                acc[j] = DECODE(h[j]);                                                        \
            for (int k = 1; k < nsrc; k++) {                                                  \
                memcpy(h, (const char *)srcs[k] + 2 * i, 2 * n);                              \
                for (size_t j = 0; j < n; j++)                                                \
                    acc[j] = OP(acc[j], DECODE(h[j]));                                        \
            }                                                                                 \
            for (size_t j = 0; j < n; j++)                                                    \
                h[j] = ENCODE(acc[j]);                                                        \
            memcpy((char *)dst + 2 * i, h, 2 * n);                                            \
        }                                                                                     \
    }

HALF_KERNEL(sta_reduce_scalar_fp16_sum, sta_fp16_decode, sta_fp16_encode, OP_ADD)
HALF_KERNEL(sta_reduce_scalar_fp16_prod, sta_fp16_decode, sta_fp16_encode, OP_MUL)
HALF_KERNEL(sta_reduce_scalar_fp16_min, sta_fp16_decode, sta_fp16_encode, sta_reduce_minf)
HALF_KERNEL(sta_reduce_scalar_fp16_max, sta_fp16_decode, sta_fp16_encode, sta_reduce_maxf)
HALF_KERNEL(sta_reduce_scalar_bf16_sum, sta_bf16_decode, sta_bf16_encode, OP_ADD)
HALF_KERNEL(sta_reduce_scalar_bf16_prod, sta_bf16_decode, sta_bf16_encode, OP_MUL)
HALF_KERNEL(sta_reduce_scalar_bf16_min, sta_bf16_decode, sta_bf16_encode, sta_reduce_minf)
HALF_KERNEL(sta_reduce_scalar_bf16_max, sta_bf16_decode, sta_bf16_encode, sta_reduce_maxf)

/* The average's last step: decode, divide in fp32, round once. */
#define HALF_FINISH(name, DECODE, ENCODE)                                                     \
    void name(void *buf, size_t begin, size_t end, int nranks)                                \
    {                                                                                         \
        char *p = (char *)buf + 2 * begin;                                                    \
        for (size_t i = begin; i < end; i++, p += 2) {                                        \
            uint16_t h;                                                                       \
            memcpy(&h, p, 2);                                                                 \
            h = ENCODE(DECODE(h) / (float)nranks);                                            \
            memcpy(p, &h, 2);                                                                 \
        }                                                                                     \
    }

HALF_FINISH(sta_reduce_scalar_fin_fp16, sta_fp16_decode, sta_fp16_encode)
HALF_FINISH(sta_reduce_scalar_fin_bf16, sta_bf16_decode, sta_bf16_encode)
