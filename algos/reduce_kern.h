/*
 * Internal contract between the reduction dispatcher (reduce.c) and the kernel families
 * (reduce_scalar.c + reduce_half.c, reduce_avx2.c, reduce_avx512.c). Not for other layers:
 * they call algos/reduce.h.
 *
 * A family is one const table of kernels indexed [dtype][op] and of average steps indexed
 * [dtype], with a probe saying whether the CPU and OS can run it. Every slot is filled
 * (STRATA_AVG points at the SUM kernel; types a family does not vectorise point at the portable
 * code), so the dispatcher never tests for NULL. All families produce the same bits for the same inputs
 * (see algos/reduce.h); only the speed differs.
 */
#ifndef STA_REDUCE_KERN_H
#define STA_REDUCE_KERN_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "strata/types.h"

/* Default for sta_reduce_nt_min_bytes: outputs from this size up bypass the caches.
 * Source: strata-reduce --nt-sweep (docs/algorithms.md, "Reduction kernels"): from 8 MiB per
 * buffer up streaming stores gained up to 1.6x and never lost more than 2 %; at 1-4 MiB they
 * were mixed (0.64-1.22x), at 256 KiB a loss (0.64-0.95x). Below it the output may also still
 * be in cache when the next step reads it. */
#define STA_REDUCE_NT_MIN_BYTES (8u << 20)

/* bf16 is the top half of an fp32 (same sign and exponent, 7 fraction bits). fp32 -> bf16 to
 * nearest even: add STA_BF16_ROUND_BIAS plus the lowest kept bit, keep the top 16 bits (any
 * carry into the exponent is the right rounding). A NaN is a NaN with STA_BF16_QUIET, the top
 * fraction bit, set (IEEE-754-2008 6.2.1: quiet NaNs have it set). */
#define STA_BF16_ROUND_BIAS 0x7fffu
#define STA_BF16_QUIET      0x0040u

/* IEEE-754 binary32 fields, for the conversions of the narrow float types (fp16, bf16, fp8). */
#define STA_F32_SIGN  0x80000000u
#define STA_F32_ABS   0x7fffffffu
#define STA_F32_INF   0x7f800000u
#define STA_F32_QUIET 0x00400000u     /* top fraction bit: set = quiet NaN */

static inline uint32_t sta_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float sta_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* q rounded to nearest even, given the dropped bits rem out of a unit of `one`. */
static inline uint32_t sta_round_even(uint32_t q, uint32_t rem, uint32_t one)
{
    uint32_t half = one >> 1;
    return q + (rem > half || (rem == half && (q & 1)));
}

/*
 * fp8 formats, per format: the exponent bias difference to fp32 (127 - bias), the fraction
 * bits dropped from fp32 (23 - fraction width), the fp32 bits of the smallest normal, the
 * largest finite encoding, and 2^(bias + fraction width - 1) = 1 / (the smallest subnormal):
 * a subnormal's fraction is |x| times that (algos/reduce_fp8.c has the formats).
 */
#define STA_E4M3_REBIAS   120u
#define STA_E4M3_SHIFT    20
#define STA_E4M3_MIN_NORM 0x3c800000u      /* 2^-6 */
#define STA_E4M3_MAX      0x7eu            /* 448 */
#define STA_E4M3_NAN      0x7fu
#define STA_E4M3_SUB_SCALE 512.0f          /* 2^9 */
#define STA_E5M2_REBIAS   112u
#define STA_E5M2_SHIFT    21
#define STA_E5M2_MIN_NORM 0x38800000u      /* 2^-14 */
#define STA_E5M2_MAX      0x7bu            /* 57344 */
#define STA_E5M2_INF      0x7cu
#define STA_E5M2_QNAN     0x7eu
#define STA_E5M2_SUB_SCALE 65536.0f        /* 2^16 */
#define STA_FP8_SIGN      0x80u

/* Kernel flag: write dst with non-temporal stores and fence before returning. Set by the
 * dispatcher only when dst is element-aligned; a family may ignore it. */
#define STA_REDUCE_F_NT 1u

/*
 * Reduces elements [begin, end) (element indices into every buffer) of the nsrc >= 1 sources
 * into dst, begin < end. Same aliasing and alignment rules as sta_reduce_n. Reentrant.
 */
typedef void (*sta_reduce_kern_t)(void *dst, const void *const *srcs, int nsrc, size_t begin,
                                  size_t end, unsigned flags);

/*
 * The average's last step on elements [begin, end) of buf: buf[i] /= nranks, nranks >= 2, as
 * sta_reduce_avg_finish. Any alignment. Reentrant.
 */
typedef void (*sta_reduce_fin_t)(void *buf, size_t begin, size_t end, int nranks);

typedef struct sta_reduce_family {
    const char *name;
    int (*supported)(void);    /* 1 if this CPU and OS can run the family; pure */
    sta_reduce_kern_t kern[STRATA_DTYPE_COUNT][STRATA_OP_COUNT];
    sta_reduce_fin_t finish[STRATA_DTYPE_COUNT];
} sta_reduce_family_t;

/* One row of a family table: STRATA_AVG reduces as STRATA_SUM. */
#define STA_REDUCE_ROW(sum, prod, min, max)                                                   \
    {[STRATA_SUM] = (sum), [STRATA_PROD] = (prod), [STRATA_MIN] = (min), [STRATA_MAX] = (max), \
     [STRATA_AVG] = (sum)}

extern const sta_reduce_family_t sta_reduce_family_scalar;
extern const sta_reduce_family_t sta_reduce_family_avx2;
extern const sta_reduce_family_t sta_reduce_family_avx512;

/* The scalar fp16/bf16 kernels live next to the conversions (reduce_half.c) so these inline. */
void sta_reduce_scalar_fp16_sum(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_fp16_prod(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_fp16_min(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_fp16_max(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_bf16_sum(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_bf16_prod(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_bf16_min(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_bf16_max(void *, const void *const *, int, size_t, size_t, unsigned);

/* fp8 kernels (reduce_fp8.c): portable ones, and AVX2 ones that the avx2 and avx512 families
 * share (8 elements per vector; AVX-512 brings no fp8 instruction these CPUs have). */
void sta_reduce_scalar_e4m3_sum(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_e4m3_prod(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_e4m3_min(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_e4m3_max(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_e5m2_sum(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_e5m2_prod(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_e5m2_min(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_e5m2_max(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_avx2_e4m3_sum(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_avx2_e4m3_prod(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_avx2_e4m3_min(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_avx2_e4m3_max(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_avx2_e5m2_sum(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_avx2_e5m2_prod(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_avx2_e5m2_min(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_avx2_e5m2_max(void *, const void *const *, int, size_t, size_t, unsigned);
void sta_reduce_scalar_fin_e4m3(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_scalar_fin_e5m2(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_avx2_fin_e4m3(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_avx2_fin_e5m2(void *buf, size_t begin, size_t end, int nranks);

/* The rows of the fp8 types in a family table (fam: scalar or avx2). */
#define STA_REDUCE_FP8_ROW(fam, t)                                                            \
    STA_REDUCE_ROW(sta_reduce_##fam##_##t##_sum, sta_reduce_##fam##_##t##_prod,               \
                   sta_reduce_##fam##_##t##_min, sta_reduce_##fam##_##t##_max)
#define STA_REDUCE_FP8_ROWS(fam)                                                              \
    [STRATA_FP8_E4M3] = STA_REDUCE_FP8_ROW(fam, e4m3),                                        \
    [STRATA_FP8_E5M2] = STA_REDUCE_FP8_ROW(fam, e5m2)

/* The portable average steps (reduce_scalar.c, reduce_half.c); vector families use them for
 * the types they do not vectorise and for their tails. */
void sta_reduce_scalar_fin_i8(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_scalar_fin_u8(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_scalar_fin_i32(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_scalar_fin_u32(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_scalar_fin_i64(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_scalar_fin_u64(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_scalar_fin_fp16(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_scalar_fin_bf16(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_scalar_fin_f32(void *buf, size_t begin, size_t end, int nranks);
void sta_reduce_scalar_fin_f64(void *buf, size_t begin, size_t end, int nranks);

/* Elements per block of the scalar kernels' accumulator (reduce_scalar.c, reduce_half.c):
 * 256 x 8 B = 2 KiB of stack, a fraction of L1 (32 KiB), long enough to amortise the loop
 * over sources. */
#define STA_REDUCE_SCALAR_BLOCK 256

/*
 * Floating-point min/max with the contract's rules, for the scalar kernels: a NaN operand
 * gives a quiet NaN (a + b), equal operands (only +-0 can differ) pick by sign bit.
 */
static inline float sta_reduce_minf(float a, float b)
{
    if (isnan(a) || isnan(b))
        return a + b;
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}

static inline float sta_reduce_maxf(float a, float b)
{
    if (isnan(a) || isnan(b))
        return a + b;
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}

static inline double sta_reduce_mind(double a, double b)
{
    if (isnan(a) || isnan(b))
        return a + b;
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}

static inline double sta_reduce_maxd(double a, double b)
{
    if (isnan(a) || isnan(b))
        return a + b;
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}

#endif /* STA_REDUCE_KERN_H */
