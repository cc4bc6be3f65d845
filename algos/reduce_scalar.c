/*
 * Portable reduction kernels: plain C, baseline x86-64 flags, any alignment. They are the
 * fallback family and the tails of the AVX2 family. fp16/bf16 kernels are in reduce_half.c.
 *
 * Each kernel walks the output in blocks of STA_REDUCE_SCALAR_BLOCK elements: the block of
 * srcs[0] is copied into a local accumulator, every other source is folded into it in source
 * order, and the block is copied out. The accumulator is a local array the sources cannot
 * alias, so the inner loop keeps no pointer reloads; dst == srcs[0] is safe because a block
 * is read before it is written. Cost: (nsrc + 1) x bytes of memory traffic per call.
 *
 * Signed sum and prod use the unsigned kernels of the same width: two's complement wrap-around
 * is the same bit pattern, and unsigned arithmetic has no undefined overflow.
 */
#include <string.h>

#include "algos/reduce_kern.h"
#include "util/compiler.h"

#define OP_ADD(a, b) ((a) + (b))
#define OP_MUL(a, b) ((a) * (b))
#define OP_MIN(a, b) ((b) < (a) ? (b) : (a))
#define OP_MAX(a, b) ((b) > (a) ? (b) : (a))

/*
 * Defines kernel `name` over element type T with the binary operation OP (a macro or inline
 * function of two T). Loads and stores go through memcpy, so any alignment is defined
 * behaviour; on x86 they compile to plain moves.
 */
#define SCALAR_KERNEL(name, T, OP)                                                            \
    static void name(void *dst, const void *const *srcs, int nsrc, size_t begin, size_t end, \
                     unsigned flags)                                                          \
    {                                                                                         \
        T acc[STA_REDUCE_SCALAR_BLOCK];                                                       \
        for (size_t i = begin; i < end; i += STA_REDUCE_SCALAR_BLOCK) {                       \
            size_t n = STU_MIN(end - i, (size_t)STA_REDUCE_SCALAR_BLOCK);                     \
            memcpy(acc, (const char *)srcs[0] + i * sizeof(T), n * sizeof(T));                \
            for (int k = 1; k < nsrc; k++) {                                                  \
                const char *s = (const char *)srcs[k] + i * sizeof(T);                        \
                for (size_t j = 0; j < n; j++) {                                              \
                    T v;                                                                      \
                    memcpy(&v, s + j * sizeof(T), sizeof(T));                                 \
                    acc[j] = (T)OP(acc[j], v);                                                \
                }                                                                             \
            }                                                                                 \
            memcpy((char *)dst + i * sizeof(T), acc, n * sizeof(T));                          \
        }                                                                                     \
    }

SCALAR_KERNEL(u8_sum, uint8_t, OP_ADD)
SCALAR_KERNEL(u8_prod, uint8_t, OP_MUL)
SCALAR_KERNEL(u8_min, uint8_t, OP_MIN)
SCALAR_KERNEL(u8_max, uint8_t, OP_MAX)
SCALAR_KERNEL(i8_min, int8_t, OP_MIN)
SCALAR_KERNEL(i8_max, int8_t, OP_MAX)

SCALAR_KERNEL(u32_sum, uint32_t, OP_ADD)
SCALAR_KERNEL(u32_prod, uint32_t, OP_MUL)
SCALAR_KERNEL(u32_min, uint32_t, OP_MIN)
SCALAR_KERNEL(u32_max, uint32_t, OP_MAX)
SCALAR_KERNEL(i32_min, int32_t, OP_MIN)
SCALAR_KERNEL(i32_max, int32_t, OP_MAX)

SCALAR_KERNEL(u64_sum, uint64_t, OP_ADD)
SCALAR_KERNEL(u64_prod, uint64_t, OP_MUL)
SCALAR_KERNEL(u64_min, uint64_t, OP_MIN)
SCALAR_KERNEL(u64_max, uint64_t, OP_MAX)
SCALAR_KERNEL(i64_min, int64_t, OP_MIN)
SCALAR_KERNEL(i64_max, int64_t, OP_MAX)

SCALAR_KERNEL(f32_sum, float, OP_ADD)
SCALAR_KERNEL(f32_prod, float, OP_MUL)
SCALAR_KERNEL(f32_min, float, sta_reduce_minf)
SCALAR_KERNEL(f32_max, float, sta_reduce_maxf)

SCALAR_KERNEL(f64_sum, double, OP_ADD)
SCALAR_KERNEL(f64_prod, double, OP_MUL)
SCALAR_KERNEL(f64_min, double, sta_reduce_mind)
SCALAR_KERNEL(f64_max, double, sta_reduce_maxd)

/*
 * buf[i] = buf[i] / n for element type T, dividing in type W: C's division, which truncates
 * toward zero for integers (8-bit types divide as int/unsigned, then narrow exactly) and rounds
 * to nearest even for floats (a division, not a multiply by the reciprocal).
 */
#define SCALAR_FINISH(name, T, W)                                                             \
    void name(void *buf, size_t begin, size_t end, int nranks)                                \
    {                                                                                         \
        char *p = (char *)buf + begin * sizeof(T);                                            \
        for (size_t i = begin; i < end; i++, p += sizeof(T)) {                                \
            T v;                                                                              \
            memcpy(&v, p, sizeof(T));                                                         \
            v = (T)((W)v / (W)nranks);                                                        \
            memcpy(p, &v, sizeof(T));                                                         \
        }                                                                                     \
    }

SCALAR_FINISH(sta_reduce_scalar_fin_i8, int8_t, int)
SCALAR_FINISH(sta_reduce_scalar_fin_u8, uint8_t, unsigned)
SCALAR_FINISH(sta_reduce_scalar_fin_i32, int32_t, int32_t)
SCALAR_FINISH(sta_reduce_scalar_fin_u32, uint32_t, uint32_t)
SCALAR_FINISH(sta_reduce_scalar_fin_i64, int64_t, int64_t)
SCALAR_FINISH(sta_reduce_scalar_fin_u64, uint64_t, uint64_t)
SCALAR_FINISH(sta_reduce_scalar_fin_f32, float, float)
SCALAR_FINISH(sta_reduce_scalar_fin_f64, double, double)

static int scalar_supported(void)
{
    return 1;
}

const sta_reduce_family_t sta_reduce_family_scalar = {
    .name = "scalar",
    .supported = scalar_supported,
    .kern = {
        [STRATA_INT8] = STA_REDUCE_ROW(u8_sum, u8_prod, i8_min, i8_max),
        [STRATA_UINT8] = STA_REDUCE_ROW(u8_sum, u8_prod, u8_min, u8_max),
        [STRATA_INT32] = STA_REDUCE_ROW(u32_sum, u32_prod, i32_min, i32_max),
        [STRATA_UINT32] = STA_REDUCE_ROW(u32_sum, u32_prod, u32_min, u32_max),
        [STRATA_INT64] = STA_REDUCE_ROW(u64_sum, u64_prod, i64_min, i64_max),
        [STRATA_UINT64] = STA_REDUCE_ROW(u64_sum, u64_prod, u64_min, u64_max),
        [STRATA_FP16] = STA_REDUCE_ROW(sta_reduce_scalar_fp16_sum, sta_reduce_scalar_fp16_prod,
                                       sta_reduce_scalar_fp16_min, sta_reduce_scalar_fp16_max),
        [STRATA_BF16] = STA_REDUCE_ROW(sta_reduce_scalar_bf16_sum, sta_reduce_scalar_bf16_prod,
                                       sta_reduce_scalar_bf16_min, sta_reduce_scalar_bf16_max),
        [STRATA_FP32] = STA_REDUCE_ROW(f32_sum, f32_prod, f32_min, f32_max),
        [STRATA_FP64] = STA_REDUCE_ROW(f64_sum, f64_prod, f64_min, f64_max),
        STA_REDUCE_FP8_ROWS(scalar),
    },
    .finish = {
        [STRATA_INT8] = sta_reduce_scalar_fin_i8,
        [STRATA_UINT8] = sta_reduce_scalar_fin_u8,
        [STRATA_INT32] = sta_reduce_scalar_fin_i32,
        [STRATA_UINT32] = sta_reduce_scalar_fin_u32,
        [STRATA_INT64] = sta_reduce_scalar_fin_i64,
        [STRATA_UINT64] = sta_reduce_scalar_fin_u64,
        [STRATA_FP16] = sta_reduce_scalar_fin_fp16,
        [STRATA_BF16] = sta_reduce_scalar_fin_bf16,
        [STRATA_FP32] = sta_reduce_scalar_fin_f32,
        [STRATA_FP64] = sta_reduce_scalar_fin_f64,
        [STRATA_FP8_E4M3] = sta_reduce_scalar_fin_e4m3,
        [STRATA_FP8_E5M2] = sta_reduce_scalar_fin_e5m2,
    },
};
