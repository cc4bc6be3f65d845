/*
 * Reduction kernels of the collective library: dst = srcs[0] op srcs[1] op ... element-wise,
 * for every strata_dtype_t x strata_op_t, on host memory.
 *
 * Semantics (the same bits from every kernel family, see docs/algorithms.md):
 *   - Integers: sum and prod wrap modulo 2^bits (signed types as two's complement); min and
 *     max compare as the signed or unsigned type.
 *   - fp32/fp64: IEEE-754 operations in source order, ((s0 op s1) op s2) ..., round to nearest
 *     even. min/max propagate NaN (any NaN input gives a NaN result) and order -0 < +0.
 *   - fp16/bf16: every input is widened to fp32 exactly, the nsrc inputs are combined in fp32
 *     in source order, and the result is rounded once to nearest even. NaN stays NaN and comes
 *     out quiet; overflow gives Inf; subnormals are kept (no flush to zero).
 *   - fp8 (E4M3, E5M2): as fp16/bf16, except that a result beyond the largest finite value
 *     saturates to it (CUDA's default fp8 conversion; E5M2 Inf inputs too), see
 *     sta_fp8_*_encode.
 *   - STRATA_AVG reduces as STRATA_SUM; sta_reduce_avg_finish divides at the end.
 * The results assume the thread's MXCSR is at its default (no FTZ/DAZ): fp32/fp64 arithmetic
 * and the fp16 conversions follow it, the bf16 conversions do not.
 *
 * Thread safety: every function may be called from any thread at any time. The kernel family
 * is chosen once, on first use, from the CPU; sta_reduce_force_isa swaps it atomically (a
 * reduction already running finishes with the family it started with).
 * Blocking: none; nothing here allocates, locks or makes a system call after the first use.
 */
#ifndef STA_REDUCE_H
#define STA_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "strata/types.h"

/*
 * dst[i] = srcs[0][i] op srcs[1][i] op ... op srcs[nsrc-1][i], for i < count (elements).
 *   nsrc >= 1 (nsrc == 1 copies; fp16/bf16 copies round-trip through fp32, which quiets a
 *   signalling NaN). dst may be srcs[0] exactly (in place), never any other source and never
 *   a partial overlap of any source. Sources may overlap each other (they are only read).
 *   Any alignment, even one that is not a multiple of the element size.
 *   count == 0 touches nothing. An out-of-range dtype or op, nsrc < 1 or a NULL srcs is a
 *   caller bug: it asserts in debug builds and writes nothing otherwise.
 *   Large outputs (sta_reduce_nt_min_bytes) are written with non-temporal stores followed by a
 *   store fence, so the data is globally visible in order when the call returns.
 */
void sta_reduce_n(void *dst, const void *const *srcs, int nsrc, size_t count,
                  strata_dtype_t dtype, strata_op_t op);

/*
 * As sta_reduce_n, but non-temporal stores at any size (dst element-aligned): for a caller
 * that cuts a large output into cache-sized pieces, none of which will be read again soon.
 */
void sta_reduce_n_stream(void *dst, const void *const *srcs, int nsrc, size_t count,
                         strata_dtype_t dtype, strata_op_t op);

/*
 * memcpy with non-temporal stores (and a store fence before it returns): for an output that
 * will not be read soon, so it costs no read-for-ownership and evicts nothing. No overlap.
 */
void sta_copy_stream(void *dst, const void *src, size_t bytes);

/* Two-input shorthand: dst = a op b. dst may be a exactly, never b. As sta_reduce_n. */
void sta_reduce(void *dst, const void *a, const void *b, size_t count, strata_dtype_t dtype,
                strata_op_t op);

/*
 * The final step of STRATA_AVG: buf[i] /= nranks. Integers divide as their own type and
 * truncate toward zero; fp32/fp64 divide (not multiply by a reciprocal) in their precision;
 * fp16/bf16 divide in fp32 and round once. Any alignment. nranks < 1 or an out-of-range dtype
 * asserts in debug builds and leaves buf unchanged otherwise; nranks == 1 changes nothing.
 */
void sta_reduce_avg_finish(void *buf, size_t count, strata_dtype_t dtype, int nranks);

/* The kernel family in use: "avx512", "avx2" or "scalar". A static string; never NULL. */
const char *sta_reduce_isa(void);

/*
 * Makes every later reduction use the family `name` ("avx512", "avx2", "scalar"); NULL or
 * "auto" goes back to the family the CPU probe picks. Returns 1 on success, 0 (and changes
 * nothing) if the name is unknown or this CPU/OS cannot run that family. Meant for tests and
 * benchmarks; it affects every thread of the process.
 */
int sta_reduce_force_isa(const char *name);

/*
 * Output size in bytes from which kernels write with non-temporal stores (when dst is
 * element-aligned). Returns the threshold in force; sta_reduce_nt_min_bytes_set installs a new
 * one (SIZE_MAX turns non-temporal stores off) and returns the previous one. Process-wide, for
 * tests and benchmarks; the default is STA_REDUCE_NT_MIN_BYTES in algos/reduce_kern.h.
 */
size_t sta_reduce_nt_min_bytes(void);
size_t sta_reduce_nt_min_bytes_set(size_t bytes);

/*
 * Conversions between fp32 and the 16-bit float formats (bit patterns in uint16_t).
 * decode is exact (every fp16/bf16 value is an fp32 value; a signalling NaN comes back quiet).
 * encode rounds to nearest even, overflows to +-Inf, keeps subnormals, keeps the sign of zero
 * and turns NaN into a quiet NaN with the same sign and the top payload bits. Pure functions.
 */
float sta_fp16_decode(uint16_t h);
uint16_t sta_fp16_encode(float f);
float sta_bf16_decode(uint16_t h);
uint16_t sta_bf16_encode(float f);

/*
 * Conversions between fp32 and the two fp8 formats (algos/reduce_fp8.c has the formats).
 * decode is exact (a NaN comes back quiet). encode rounds to nearest even, saturates anything
 * beyond the largest finite value (Inf included) to that value with its sign, keeps
 * subnormals and the sign of zero, and maps NaN to NaN. Pure functions.
 */
float sta_fp8_e4m3_decode(uint8_t b);
uint8_t sta_fp8_e4m3_encode(float f);
float sta_fp8_e5m2_decode(uint8_t b);
uint8_t sta_fp8_e5m2_encode(float f);

#endif /* STA_REDUCE_H */
