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
