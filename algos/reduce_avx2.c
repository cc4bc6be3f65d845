/*
 * AVX2 + F16C reduction kernels (Haswell and later, every AMD CPU with AVX2). Only the
 * functions here carry the target attribute; the dispatcher calls in only after
 * sta_reduce_family_avx2.supported().
 *
 * Terms: a vector is 32 bytes of memory for 8/32/64-bit types, 16 bytes (8 elements widened
 * to 8 fp32 lanes) for fp16/bf16. A step folds 4 vectors of every source into 4 accumulators
 * in source order and stores them once. AVX2 has no byte-masked loads, so the tail (less than
 * a vector) and the unaligned head of a streaming run go to the portable kernel of the same
 * type and op, which produces the same bits. Cost: (nsrc + 1) x bytes of memory traffic.
 *
 * As in reduce_avx512.c, the generic loops are always_inline and take their operation as a
 * constant function pointer: every kernel compiles to straight-line vector code.
 */
#include "algos/reduce_kern.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX2_ATTR   __attribute__((target("avx2,f16c")))
#define AVX2_INLINE static inline __attribute__((always_inline)) AVX2_ATTR
#define AVX2_KERNEL static AVX2_ATTR

/* Bytes per vector; vectors per unrolled step (independent chains for two loads a cycle). */
#define VEC_BYTES  32
#define STEP_VECS  4
/* fp16/bf16 elements per vector (one 128-bit load widened to one 256-bit fp32 register). */
#define HVEC_ELEMS 8

typedef __m256i (*vop_t)(__m256i, __m256i);
typedef __m256 (*fop_t)(__m256, __m256);
typedef __m256 (*hdec_t)(__m128i);
typedef __m128i (*henc_t)(__m256);

/* ---------------------------------------------------------------- operations */

AVX2_INLINE __m256i add8(__m256i a, __m256i b) { return _mm256_add_epi8(a, b); }
AVX2_INLINE __m256i add32(__m256i a, __m256i b) { return _mm256_add_epi32(a, b); }
AVX2_INLINE __m256i add64(__m256i a, __m256i b) { return _mm256_add_epi64(a, b); }
AVX2_INLINE __m256i mul32(__m256i a, __m256i b) { return _mm256_mullo_epi32(a, b); }
AVX2_INLINE __m256i mins8(__m256i a, __m256i b) { return _mm256_min_epi8(a, b); }
AVX2_INLINE __m256i maxs8(__m256i a, __m256i b) { return _mm256_max_epi8(a, b); }
AVX2_INLINE __m256i minu8(__m256i a, __m256i b) { return _mm256_min_epu8(a, b); }
AVX2_INLINE __m256i maxu8(__m256i a, __m256i b) { return _mm256_max_epu8(a, b); }
AVX2_INLINE __m256i mins32(__m256i a, __m256i b) { return _mm256_min_epi32(a, b); }
AVX2_INLINE __m256i maxs32(__m256i a, __m256i b) { return _mm256_max_epi32(a, b); }
AVX2_INLINE __m256i minu32(__m256i a, __m256i b) { return _mm256_min_epu32(a, b); }
AVX2_INLINE __m256i maxu32(__m256i a, __m256i b) { return _mm256_max_epu32(a, b); }

/* 8-bit multiply from two 16-bit multiplies (even bytes, odd bytes); low bytes are exact. */
AVX2_INLINE __m256i mul8(__m256i a, __m256i b)
{
    __m256i even = _mm256_mullo_epi16(a, b);
    __m256i odd = _mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
    return _mm256_or_si256(_mm256_slli_epi16(odd, 8),
                           _mm256_and_si256(even, _mm256_set1_epi16(0x00ff)));
}

/* 64-bit multiply modulo 2^64: lo(a) lo(b) + ((lo(a) hi(b) + hi(a) lo(b)) << 32). */
AVX2_INLINE __m256i mul64(__m256i a, __m256i b)
{
    __m256i cross = _mm256_mullo_epi32(a, _mm256_shuffle_epi32(b, 0xb1));
    __m256i mid = _mm256_add_epi32(cross, _mm256_srli_epi64(cross, 32));
    return _mm256_add_epi64(_mm256_mul_epu32(a, b), _mm256_slli_epi64(mid, 32));
}

/* 64-bit min/max: AVX2 has only the signed greater-than; unsigned flips the sign bits. */
AVX2_INLINE __m256i gt_u64(__m256i a, __m256i b)
{
    __m256i flip = _mm256_set1_epi64x((long long)0x8000000000000000ull);
    return _mm256_cmpgt_epi64(_mm256_xor_si256(a, flip), _mm256_xor_si256(b, flip));
}

AVX2_INLINE __m256i mins64(__m256i a, __m256i b)
{
    return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b));
}

AVX2_INLINE __m256i maxs64(__m256i a, __m256i b)
{
    return _mm256_blendv_epi8(b, a, _mm256_cmpgt_epi64(a, b));
}

AVX2_INLINE __m256i minu64(__m256i a, __m256i b)
{
    return _mm256_blendv_epi8(a, b, gt_u64(a, b));
}

AVX2_INLINE __m256i maxu64(__m256i a, __m256i b)
{
    return _mm256_blendv_epi8(b, a, gt_u64(a, b));
}

/* min/max with the contract's rules (see reduce_avx512.c): fix equal lanes with a | b (min)
 * or a & b (max), then unordered lanes with a + b. */
AVX2_INLINE __m256 fmin32(__m256 a, __m256 b)
{
    __m256 r = _mm256_blendv_ps(_mm256_min_ps(a, b), _mm256_or_ps(a, b),
                                _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
    return _mm256_blendv_ps(r, _mm256_add_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}

AVX2_INLINE __m256 fmax32(__m256 a, __m256 b)
{
    __m256 r = _mm256_blendv_ps(_mm256_max_ps(a, b), _mm256_and_ps(a, b),
                                _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
    return _mm256_blendv_ps(r, _mm256_add_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}

AVX2_INLINE __m256d fmin64v(__m256d a, __m256d b)
{
    __m256d r = _mm256_blendv_pd(_mm256_min_pd(a, b), _mm256_or_pd(a, b),
                                 _mm256_cmp_pd(a, b, _CMP_EQ_OQ));
    return _mm256_blendv_pd(r, _mm256_add_pd(a, b), _mm256_cmp_pd(a, b, _CMP_UNORD_Q));
}

AVX2_INLINE __m256d fmax64v(__m256d a, __m256d b)
{
    __m256d r = _mm256_blendv_pd(_mm256_max_pd(a, b), _mm256_and_pd(a, b),
                                 _mm256_cmp_pd(a, b, _CMP_EQ_OQ));
    return _mm256_blendv_pd(r, _mm256_add_pd(a, b), _mm256_cmp_pd(a, b, _CMP_UNORD_Q));
}

AVX2_INLINE __m256 fadd32(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
AVX2_INLINE __m256 fmul32(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }

/* The wide loop works on __m256i; the float operations reinterpret (no instruction). */
#define PS(x)  _mm256_castsi256_ps(x)
#define PD(x)  _mm256_castsi256_pd(x)
#define SPS(x) _mm256_castps_si256(x)
#define SPD(x) _mm256_castpd_si256(x)
AVX2_INLINE __m256i addf32(__m256i a, __m256i b) { return SPS(_mm256_add_ps(PS(a), PS(b))); }
AVX2_INLINE __m256i mulf32(__m256i a, __m256i b) { return SPS(_mm256_mul_ps(PS(a), PS(b))); }
AVX2_INLINE __m256i minf32(__m256i a, __m256i b) { return SPS(fmin32(PS(a), PS(b))); }
AVX2_INLINE __m256i maxf32(__m256i a, __m256i b) { return SPS(fmax32(PS(a), PS(b))); }
AVX2_INLINE __m256i addf64(__m256i a, __m256i b) { return SPD(_mm256_add_pd(PD(a), PD(b))); }
AVX2_INLINE __m256i mulf64(__m256i a, __m256i b) { return SPD(_mm256_mul_pd(PD(a), PD(b))); }
AVX2_INLINE __m256i minf64(__m256i a, __m256i b) { return SPD(fmin64v(PD(a), PD(b))); }
AVX2_INLINE __m256i maxf64(__m256i a, __m256i b) { return SPD(fmax64v(PD(a), PD(b))); }

/* ---------------------------------------------------------------- fp16 / bf16 */

AVX2_INLINE __m256 fp16_dec(__m128i h) { return _mm256_cvtph_ps(h); }
AVX2_INLINE __m128i fp16_enc(__m256 f) { return _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT); }

AVX2_INLINE __m256 bf16_dec(__m128i h)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* As sta_bf16_encode, 8 lanes; packusdw narrows the 32-bit results (each < 2^16, so no
 * saturation) of the two 128-bit halves in order. */
AVX2_INLINE __m128i bf16_enc(__m256 f)
{
    __m256i u = _mm256_castps_si256(f);
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i bias = _mm256_add_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(1)),
                                    _mm256_set1_epi32(STA_BF16_ROUND_BIAS));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
    __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(STA_BF16_QUIET));
    r = _mm256_blendv_epi8(r, quiet, _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q)));
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* ---------------------------------------------------------------- generic loops */

#define VLOAD(p) _mm256_loadu_si256((const __m256i_u *)(const void *)(p))

AVX2_INLINE void wide_store(char *p, __m256i v, int nt)
{
    if (nt)
        _mm256_stream_si256((__m256i *)(void *)p, v);
    else
        _mm256_storeu_si256((__m256i_u *)(void *)p, v);
}

AVX2_INLINE void wide_vec(char *d, const void *const *srcs, int nsrc, size_t off, vop_t op,
                          int nt)
{
    __m256i a = VLOAD((const char *)srcs[0] + off);
    for (int k = 1; k < nsrc; k++)
        a = op(a, VLOAD((const char *)srcs[k] + off));
    wide_store(d + off, a, nt);
}

AVX2_INLINE void wide_step(char *d, const void *const *srcs, int nsrc, size_t off, vop_t op,
                           int nt)
{
    const char *s = (const char *)srcs[0] + off;
    __m256i a0 = VLOAD(s), a1 = VLOAD(s + VEC_BYTES);
    __m256i a2 = VLOAD(s + 2 * VEC_BYTES), a3 = VLOAD(s + 3 * VEC_BYTES);
    for (int k = 1; k < nsrc; k++) {
        s = (const char *)srcs[k] + off;
        a0 = op(a0, VLOAD(s));
        a1 = op(a1, VLOAD(s + VEC_BYTES));
        a2 = op(a2, VLOAD(s + 2 * VEC_BYTES));
        a3 = op(a3, VLOAD(s + 3 * VEC_BYTES));
    }
    wide_store(d + off, a0, nt);
    wide_store(d + off + VEC_BYTES, a1, nt);
    wide_store(d + off + 2 * VEC_BYTES, a2, nt);
    wide_store(d + off + 3 * VEC_BYTES, a3, nt);
}

/* Bytes [off, stop): whole steps, then whole vectors; returns where the tail starts. */
AVX2_INLINE size_t wide_body(char *d, const void *const *srcs, int nsrc, size_t off,
                             size_t stop, vop_t op, int nt)
{
    for (; stop - off >= STEP_VECS * VEC_BYTES; off += STEP_VECS * VEC_BYTES)
        wide_step(d, srcs, nsrc, off, op, nt);
    for (; stop - off >= VEC_BYTES; off += VEC_BYTES)
        wide_vec(d, srcs, nsrc, off, op, nt);
    return off;
}

/* Elements [i, end) of esize bytes; `scalar` is the portable kernel of the same type and op. */
AVX2_INLINE void wide_run(void *dst, const void *const *srcs, int nsrc, size_t i, size_t end,
                          size_t esize, unsigned flags, vop_t op, sta_reduce_kern_t scalar)
{
    char *d = dst;

    if (flags & STA_REDUCE_F_NT) {
        size_t head = (size_t)(-(uintptr_t)(d + i * esize) & (VEC_BYTES - 1)) / esize;
        head = STU_MIN(head, end - i);
        if (head) {
            scalar(dst, srcs, nsrc, i, i + head, 0);
            i += head;
        }
        i = wide_body(d, srcs, nsrc, i * esize, end * esize, op, 1) / esize;
        _mm_sfence();
    } else {
        i = wide_body(d, srcs, nsrc, i * esize, end * esize, op, 0) / esize;
    }
    if (i < end)
        scalar(dst, srcs, nsrc, i, end, 0);
}

#define HLOAD(p) _mm_loadu_si128((const __m128i_u *)(const void *)(p))

AVX2_INLINE void half_store(uint16_t *p, __m128i v, int nt)
{
    if (nt)
        _mm_stream_si128((__m128i *)(void *)p, v);
    else
        _mm_storeu_si128((__m128i_u *)(void *)p, v);
}

AVX2_INLINE void half_vec(uint16_t *d, const void *const *srcs, int nsrc, size_t i,
                          hdec_t dec, henc_t enc, fop_t op, int nt)
{
    __m256 a = dec(HLOAD((const uint16_t *)srcs[0] + i));
    for (int k = 1; k < nsrc; k++)
        a = op(a, dec(HLOAD((const uint16_t *)srcs[k] + i)));
    half_store(d + i, enc(a), nt);
}

AVX2_INLINE void half_step(uint16_t *d, const void *const *srcs, int nsrc, size_t i,
                           hdec_t dec, henc_t enc, fop_t op, int nt)
{
    const uint16_t *s = (const uint16_t *)srcs[0] + i;
    __m256 a0 = dec(HLOAD(s)), a1 = dec(HLOAD(s + HVEC_ELEMS));
    __m256 a2 = dec(HLOAD(s + 2 * HVEC_ELEMS)), a3 = dec(HLOAD(s + 3 * HVEC_ELEMS));
    for (int k = 1; k < nsrc; k++) {
        s = (const uint16_t *)srcs[k] + i;
        a0 = op(a0, dec(HLOAD(s)));
        a1 = op(a1, dec(HLOAD(s + HVEC_ELEMS)));
        a2 = op(a2, dec(HLOAD(s + 2 * HVEC_ELEMS)));
        a3 = op(a3, dec(HLOAD(s + 3 * HVEC_ELEMS)));
    }
    half_store(d + i, enc(a0), nt);
    half_store(d + i + HVEC_ELEMS, enc(a1), nt);
    half_store(d + i + 2 * HVEC_ELEMS, enc(a2), nt);
    half_store(d + i + 3 * HVEC_ELEMS, enc(a3), nt);
}

AVX2_INLINE size_t half_body(uint16_t *d, const void *const *srcs, int nsrc, size_t i,
                             size_t end, hdec_t dec, henc_t enc, fop_t op, int nt)
{
    for (; end - i >= STEP_VECS * HVEC_ELEMS; i += STEP_VECS * HVEC_ELEMS)
        half_step(d, srcs, nsrc, i, dec, enc, op, nt);
    for (; end - i >= HVEC_ELEMS; i += HVEC_ELEMS)
        half_vec(d, srcs, nsrc, i, dec, enc, op, nt);
    return i;
}

AVX2_INLINE void half_run(void *dst, const void *const *srcs, int nsrc, size_t i, size_t end,
                          unsigned flags, hdec_t dec, henc_t enc, fop_t op,
                          sta_reduce_kern_t scalar)
{
    uint16_t *d = dst;

    if (flags & STA_REDUCE_F_NT) {
        /* The streaming store is 16 bytes wide and needs 16-byte alignment. */
        size_t head = STU_MIN((size_t)(-(uintptr_t)(d + i) & 15) / 2, end - i);
        if (head) {
            scalar(dst, srcs, nsrc, i, i + head, 0);
            i += head;
        }
        i = half_body(d, srcs, nsrc, i, end, dec, enc, op, 1);
        _mm_sfence();
    } else {
        i = half_body(d, srcs, nsrc, i, end, dec, enc, op, 0);
    }
    if (i < end)
        scalar(dst, srcs, nsrc, i, end, 0);
}

/* ---------------------------------------------------------------- average */

/*
 * buf /= n on one 32-byte vector: floats divide (IEEE, as the portable code); 8-bit integers
 * divide in fp32 and 32-bit ones in fp64, then truncate, which is exact (see reduce_avx512.c).
 * 64-bit integers use the portable division.
 */
typedef __m256i (*vdiv_t)(__m256i, int);

AVX2_INLINE __m256i div_f32(__m256i v, int n)
{
    return SPS(_mm256_div_ps(PS(v), _mm256_set1_ps((float)n)));
}

AVX2_INLINE __m256i div_f64(__m256i v, int n)
{
    return SPD(_mm256_div_pd(PD(v), _mm256_set1_pd((double)n)));
}

AVX2_INLINE __m256i div_i32(__m256i v, int n)
{
    __m256d d = _mm256_set1_pd((double)n);
    __m256d lo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(v));
    __m256d hi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(v, 1));
    return _mm256_set_m128i(_mm256_cvttpd_epi32(_mm256_div_pd(hi, d)),
                            _mm256_cvttpd_epi32(_mm256_div_pd(lo, d)));
}

/* uint32 has no AVX2 conversion: flip the sign bit, convert as int32, add 2^31 back (exact
 * in fp64). The quotient is below 2^31 for n >= 2, so the signed truncation is right. */
AVX2_INLINE __m256d u32_to_pd(__m128i v)
{
    __m128i flipped = _mm_xor_si128(v, _mm_set1_epi32((int)0x80000000u));
    return _mm256_add_pd(_mm256_cvtepi32_pd(flipped), _mm256_set1_pd(2147483648.0));
}

AVX2_INLINE __m256i div_u32(__m256i v, int n)
{
    __m256d d = _mm256_set1_pd((double)n);
    __m256d lo = u32_to_pd(_mm256_castsi256_si128(v));
    __m256d hi = u32_to_pd(_mm256_extracti128_si256(v, 1));
    return _mm256_set_m128i(_mm256_cvttpd_epi32(_mm256_div_pd(hi, d)),
                            _mm256_cvttpd_epi32(_mm256_div_pd(lo, d)));
}

/* The low 8 bytes of q divided in fp32 (int32 lanes), narrowed back into the low 8 bytes; the
 * quotients fit, so the saturating packs are exact. */
AVX2_INLINE __m128i div8x8(__m128i q, __m256 d, int is_signed)
{
    __m256i w = is_signed ? _mm256_cvtepi8_epi32(q) : _mm256_cvtepu8_epi32(q);
    __m256i r = _mm256_cvttps_epi32(_mm256_div_ps(_mm256_cvtepi32_ps(w), d));
    __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
    if (is_signed)
        return _mm_packs_epi16(_mm_packs_epi32(lo, hi), _mm_setzero_si128());
    return _mm_packus_epi16(_mm_packus_epi32(lo, hi), _mm_setzero_si128());
}

AVX2_INLINE __m256i div8(__m256i v, int n, int is_signed)
{
    __m256 d = _mm256_set1_ps((float)n);
    __m128i a = _mm256_castsi256_si128(v), b = _mm256_extracti128_si256(v, 1);
    __m128i lo = _mm_unpacklo_epi64(div8x8(a, d, is_signed),
                                    div8x8(_mm_srli_si128(a, 8), d, is_signed));
    __m128i hi = _mm_unpacklo_epi64(div8x8(b, d, is_signed),
                                    div8x8(_mm_srli_si128(b, 8), d, is_signed));
    return _mm256_set_m128i(hi, lo);
}

AVX2_INLINE __m256i div_i8(__m256i v, int n) { return div8(v, n, 1); }
AVX2_INLINE __m256i div_u8(__m256i v, int n) { return div8(v, n, 0); }

/* 16 fp16/bf16: two groups of 8, each decoded, divided in fp32 and rounded once. */
AVX2_INLINE __m256i div_half(__m256i v, int n, hdec_t dec, henc_t enc)
{
    __m256 d = _mm256_set1_ps((float)n);
    __m128i lo = enc(_mm256_div_ps(dec(_mm256_castsi256_si128(v)), d));
    __m128i hi = enc(_mm256_div_ps(dec(_mm256_extracti128_si256(v, 1)), d));
    return _mm256_set_m128i(hi, lo);
}

AVX2_INLINE __m256i div_fp16(__m256i v, int n) { return div_half(v, n, fp16_dec, fp16_enc); }
AVX2_INLINE __m256i div_bf16(__m256i v, int n) { return div_half(v, n, bf16_dec, bf16_enc); }

/* Whole vectors; the tail goes to the portable step of the same type. */
AVX2_INLINE void fin_run(void *buf, size_t i, size_t end, size_t esize, int n, vdiv_t op,
                         sta_reduce_fin_t scalar)
{
    char *p = buf;
    size_t per = VEC_BYTES / esize;

    for (; end - i >= per; i += per)
        _mm256_storeu_si256((__m256i_u *)(void *)(p + i * esize),
                            op(VLOAD(p + i * esize), n));
    if (i < end)
        scalar(buf, i, end, n);
}

/* ---------------------------------------------------------------- kernels and table */

#define SCALAR(dt, op) (sta_reduce_family_scalar.kern[dt][op])

#define WIDE_KERNEL(name, esize, vop, dt, op)                                                 \
    AVX2_KERNEL void name(void *dst, const void *const *srcs, int nsrc, size_t begin,         \
                          size_t end, unsigned flags)                                         \
    {                                                                                         \
        wide_run(dst, srcs, nsrc, begin, end, esize, flags, vop, SCALAR(dt, op));             \
    }

#define HALF_KERNEL(name, dec, enc, fop, dt, op)                                              \
    AVX2_KERNEL void name(void *dst, const void *const *srcs, int nsrc, size_t begin,         \
                          size_t end, unsigned flags)                                         \
    {                                                                                         \
        half_run(dst, srcs, nsrc, begin, end, flags, dec, enc, fop, SCALAR(dt, op));          \
    }

#define FIN_KERNEL(name, esize, op, scalar)                                                   \
    AVX2_KERNEL void name(void *buf, size_t begin, size_t end, int nranks)                    \
    {                                                                                         \
        fin_run(buf, begin, end, esize, nranks, op, scalar);                                  \
    }

WIDE_KERNEL(k_u8_sum, 1, add8, STRATA_UINT8, STRATA_SUM)
WIDE_KERNEL(k_u8_prod, 1, mul8, STRATA_UINT8, STRATA_PROD)
WIDE_KERNEL(k_i8_min, 1, mins8, STRATA_INT8, STRATA_MIN)
WIDE_KERNEL(k_i8_max, 1, maxs8, STRATA_INT8, STRATA_MAX)
WIDE_KERNEL(k_u8_min, 1, minu8, STRATA_UINT8, STRATA_MIN)
WIDE_KERNEL(k_u8_max, 1, maxu8, STRATA_UINT8, STRATA_MAX)
WIDE_KERNEL(k_u32_sum, 4, add32, STRATA_UINT32, STRATA_SUM)
WIDE_KERNEL(k_u32_prod, 4, mul32, STRATA_UINT32, STRATA_PROD)
WIDE_KERNEL(k_i32_min, 4, mins32, STRATA_INT32, STRATA_MIN)
WIDE_KERNEL(k_i32_max, 4, maxs32, STRATA_INT32, STRATA_MAX)
WIDE_KERNEL(k_u32_min, 4, minu32, STRATA_UINT32, STRATA_MIN)
WIDE_KERNEL(k_u32_max, 4, maxu32, STRATA_UINT32, STRATA_MAX)
WIDE_KERNEL(k_u64_sum, 8, add64, STRATA_UINT64, STRATA_SUM)
WIDE_KERNEL(k_u64_prod, 8, mul64, STRATA_UINT64, STRATA_PROD)
WIDE_KERNEL(k_i64_min, 8, mins64, STRATA_INT64, STRATA_MIN)
WIDE_KERNEL(k_i64_max, 8, maxs64, STRATA_INT64, STRATA_MAX)
WIDE_KERNEL(k_u64_min, 8, minu64, STRATA_UINT64, STRATA_MIN)
WIDE_KERNEL(k_u64_max, 8, maxu64, STRATA_UINT64, STRATA_MAX)
WIDE_KERNEL(k_f32_sum, 4, addf32, STRATA_FP32, STRATA_SUM)
WIDE_KERNEL(k_f32_prod, 4, mulf32, STRATA_FP32, STRATA_PROD)
WIDE_KERNEL(k_f32_min, 4, minf32, STRATA_FP32, STRATA_MIN)
WIDE_KERNEL(k_f32_max, 4, maxf32, STRATA_FP32, STRATA_MAX)
WIDE_KERNEL(k_f64_sum, 8, addf64, STRATA_FP64, STRATA_SUM)
WIDE_KERNEL(k_f64_prod, 8, mulf64, STRATA_FP64, STRATA_PROD)
WIDE_KERNEL(k_f64_min, 8, minf64, STRATA_FP64, STRATA_MIN)
WIDE_KERNEL(k_f64_max, 8, maxf64, STRATA_FP64, STRATA_MAX)
HALF_KERNEL(k_fp16_sum, fp16_dec, fp16_enc, fadd32, STRATA_FP16, STRATA_SUM)
HALF_KERNEL(k_fp16_prod, fp16_dec, fp16_enc, fmul32, STRATA_FP16, STRATA_PROD)
HALF_KERNEL(k_fp16_min, fp16_dec, fp16_enc, fmin32, STRATA_FP16, STRATA_MIN)
HALF_KERNEL(k_fp16_max, fp16_dec, fp16_enc, fmax32, STRATA_FP16, STRATA_MAX)
HALF_KERNEL(k_bf16_sum, bf16_dec, bf16_enc, fadd32, STRATA_BF16, STRATA_SUM)
HALF_KERNEL(k_bf16_prod, bf16_dec, bf16_enc, fmul32, STRATA_BF16, STRATA_PROD)
HALF_KERNEL(k_bf16_min, bf16_dec, bf16_enc, fmin32, STRATA_BF16, STRATA_MIN)
HALF_KERNEL(k_bf16_max, bf16_dec, bf16_enc, fmax32, STRATA_BF16, STRATA_MAX)
FIN_KERNEL(f_i8, 1, div_i8, sta_reduce_scalar_fin_i8)
FIN_KERNEL(f_u8, 1, div_u8, sta_reduce_scalar_fin_u8)
FIN_KERNEL(f_i32, 4, div_i32, sta_reduce_scalar_fin_i32)
FIN_KERNEL(f_u32, 4, div_u32, sta_reduce_scalar_fin_u32)
FIN_KERNEL(f_fp16, 2, div_fp16, sta_reduce_scalar_fin_fp16)
FIN_KERNEL(f_bf16, 2, div_bf16, sta_reduce_scalar_fin_bf16)
FIN_KERNEL(f_f32, 4, div_f32, sta_reduce_scalar_fin_f32)
FIN_KERNEL(f_f64, 8, div_f64, sta_reduce_scalar_fin_f64)

/* ---------------------------------------------------------------- fp8 */

/*
 * fp8 kernels, shared with the avx512 family (AVX-512 has no fp8 instruction on these CPUs):
 * 8 elements per vector, each decoded to an fp32 lane, combined as fp16/bf16 are, encoded
 * with algos/reduce_fp8.c's rules and packed back. The tail goes to the portable kernel.
 */
#define FP8_VEC 8          /* elements per vector: 8 bytes widened to 8 fp32 lanes */

typedef __m256 (*fp8_dec_t)(__m256i);
typedef __m256i (*fp8_enc_t)(__m256);

AVX2_INLINE __m256i v_u32(uint32_t x)
{
    return _mm256_set1_epi32((int)x);
}

/* The finite decode of code t (sign dropped, 0..0x7f per lane): normals rebiased, subnormals
 * (below code 2^shift_w, the first normal) as t x 2^-k, exactly. */
AVX2_INLINE __m256i fp8_dec_finite(__m256i t, int shift, uint32_t rebias, uint32_t first_norm,
                                   float sub_scale)
{
    __m256i normal = _mm256_add_epi32(_mm256_slli_epi32(t, shift), v_u32(rebias << 23));
    __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(1.0f / sub_scale));
    return _mm256_blendv_epi8(normal, _mm256_castps_si256(sub),
                              _mm256_cmpgt_epi32(v_u32(first_norm), t));
}

/* As sta_fp8_e4m3_decode, on the low byte of each 32-bit lane. */
AVX2_INLINE __m256 dec_e4m3(__m256i b)
{
    __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, v_u32(STA_FP8_SIGN)), 24);
    __m256i t = _mm256_and_si256(b, v_u32(0x7f));
    __m256i r = fp8_dec_finite(t, STA_E4M3_SHIFT, STA_E4M3_REBIAS, 8, STA_E4M3_SUB_SCALE);
    r = _mm256_blendv_epi8(r, v_u32(STA_F32_INF | STA_F32_QUIET),
                           _mm256_cmpeq_epi32(t, v_u32(STA_E4M3_NAN)));
    return _mm256_castsi256_ps(_mm256_or_si256(r, sign));
}

/* As sta_fp8_e5m2_decode: codes from STA_E5M2_INF up are Inf and (quiet) NaN. */
AVX2_INLINE __m256 dec_e5m2(__m256i b)
{
    __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, v_u32(STA_FP8_SIGN)), 24);
    __m256i t = _mm256_and_si256(b, v_u32(0x7f));
    __m256i r = fp8_dec_finite(t, STA_E5M2_SHIFT, STA_E5M2_REBIAS, 4, STA_E5M2_SUB_SCALE);
    __m256i frac = _mm256_slli_epi32(_mm256_and_si256(t, v_u32(3)), STA_E5M2_SHIFT);
    __m256i quiet = _mm256_and_si256(_mm256_cmpgt_epi32(t, v_u32(STA_E5M2_INF)),
                                     v_u32(STA_F32_QUIET));
    __m256i special = _mm256_or_si256(_mm256_or_si256(v_u32(STA_F32_INF), frac), quiet);
    r = _mm256_blendv_epi8(r, special, _mm256_cmpgt_epi32(t, v_u32(STA_E5M2_INF - 1)));
    return _mm256_castsi256_ps(_mm256_or_si256(r, sign));
}

/*
 * As reduce_fp8.c's fp8_magnitude: normals by adding the rounding bias to the rebiased bits
 * and shifting, subnormals by converting |x| x 2^k with round-to-nearest-even, then the
 * saturation. a holds |x|'s bits (not NaN: the caller blends NaN lanes), so signed compares
 * order them.
 */
AVX2_INLINE __m256i fp8_enc_magnitude(__m256i a, int shift, uint32_t rebias, uint32_t min_norm,
                                      float sub_scale, uint32_t max)
{
    __m256i q = _mm256_sub_epi32(a, v_u32(rebias << 23));
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(q, shift), v_u32(1));
    __m256i bias = _mm256_add_epi32(v_u32((1u << (shift - 1)) - 1), lsb);
    __m256i normal = _mm256_srli_epi32(_mm256_add_epi32(q, bias), shift);
    __m256 absf = _mm256_castsi256_ps(a);
    __m256i sub = _mm256_cvtps_epi32(_mm256_mul_ps(absf, _mm256_set1_ps(sub_scale)));
    __m256i r = _mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(v_u32(min_norm), a));
    return _mm256_min_epi32(r, v_u32(max));
}

AVX2_INLINE __m256i enc_e4m3(__m256 f)
{
    __m256i u = _mm256_castps_si256(f);
    __m256i a = _mm256_and_si256(u, v_u32(STA_F32_ABS));
    __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), v_u32(STA_FP8_SIGN));
    __m256i r = fp8_enc_magnitude(a, STA_E4M3_SHIFT, STA_E4M3_REBIAS, STA_E4M3_MIN_NORM,
                                  STA_E4M3_SUB_SCALE, STA_E4M3_MAX);
    r = _mm256_blendv_epi8(r, v_u32(STA_E4M3_NAN), _mm256_cmpgt_epi32(a, v_u32(STA_F32_INF)));
    return _mm256_or_si256(r, sign);
}

AVX2_INLINE __m256i enc_e5m2(__m256 f)
{
    __m256i u = _mm256_castps_si256(f);
    __m256i a = _mm256_and_si256(u, v_u32(STA_F32_ABS));
    __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), v_u32(STA_FP8_SIGN));
    __m256i r = fp8_enc_magnitude(a, STA_E5M2_SHIFT, STA_E5M2_REBIAS, STA_E5M2_MIN_NORM,
                                  STA_E5M2_SUB_SCALE, STA_E5M2_MAX);
    __m256i nan = _mm256_or_si256(v_u32(STA_E5M2_QNAN),
                                  _mm256_and_si256(_mm256_srli_epi32(u, STA_E5M2_SHIFT),
                                                   v_u32(1)));
    r = _mm256_blendv_epi8(r, nan, _mm256_cmpgt_epi32(a, v_u32(STA_F32_INF)));
    return _mm256_or_si256(r, sign);
}

AVX2_INLINE __m256i load8(const void *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i_u *)p));
}

/* The low byte of each lane (each < 256), packed into 8 bytes at p. */
AVX2_INLINE void store8(void *p, __m256i r)
{
    __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storel_epi64((__m128i_u *)p, _mm_packus_epi16(w, w));
}

AVX2_INLINE void fp8_run(void *dst, const void *const *srcs, int nsrc, size_t i,
                             size_t end, fp8_dec_t dec, fp8_enc_t enc, fop_t op,
                             sta_reduce_kern_t scalar)
{
    for (; end - i >= FP8_VEC; i += FP8_VEC) {
        __m256 a = dec(load8((const char *)srcs[0] + i));
        for (int k = 1; k < nsrc; k++)
            a = op(a, dec(load8((const char *)srcs[k] + i)));
        store8((char *)dst + i, enc(a));
    }
    if (i < end)
        scalar(dst, srcs, nsrc, i, end, 0);
}

AVX2_INLINE void fp8_fin_run(void *buf, size_t i, size_t end, int n, fp8_dec_t dec,
                                 fp8_enc_t enc, sta_reduce_fin_t scalar)
{
    __m256 d = _mm256_set1_ps((float)n);
    for (; end - i >= FP8_VEC; i += FP8_VEC) {
        char *p = (char *)buf + i;
        store8(p, enc(_mm256_div_ps(dec(load8(p)), d)));
    }
    if (i < end)
        scalar(buf, i, end, n);
}

#define FP8_AVX2_KERNEL(name, dec, enc, op, scalar)                                           \
    AVX2_ATTR void name(void *dst, const void *const *srcs, int nsrc, size_t begin,       \
                            size_t end, unsigned flags)                                       \
    {                                                                                         \
        fp8_run(dst, srcs, nsrc, begin, end, dec, enc, op, scalar);                           \
    }

#define FP8_AVX2_FINISH(name, dec, enc, scalar)                                               \
    AVX2_ATTR void name(void *buf, size_t begin, size_t end, int nranks)                  \
    {                                                                                         \
        fp8_fin_run(buf, begin, end, nranks, dec, enc, scalar);                               \
    }

FP8_AVX2_KERNEL(sta_reduce_avx2_e4m3_sum, dec_e4m3, enc_e4m3, fadd32, sta_reduce_scalar_e4m3_sum)
FP8_AVX2_KERNEL(sta_reduce_avx2_e4m3_prod, dec_e4m3, enc_e4m3, fmul32,
                sta_reduce_scalar_e4m3_prod)
FP8_AVX2_KERNEL(sta_reduce_avx2_e4m3_min, dec_e4m3, enc_e4m3, fmin32, sta_reduce_scalar_e4m3_min)
FP8_AVX2_KERNEL(sta_reduce_avx2_e4m3_max, dec_e4m3, enc_e4m3, fmax32, sta_reduce_scalar_e4m3_max)
FP8_AVX2_KERNEL(sta_reduce_avx2_e5m2_sum, dec_e5m2, enc_e5m2, fadd32, sta_reduce_scalar_e5m2_sum)
FP8_AVX2_KERNEL(sta_reduce_avx2_e5m2_prod, dec_e5m2, enc_e5m2, fmul32,
                sta_reduce_scalar_e5m2_prod)
FP8_AVX2_KERNEL(sta_reduce_avx2_e5m2_min, dec_e5m2, enc_e5m2, fmin32, sta_reduce_scalar_e5m2_min)
FP8_AVX2_KERNEL(sta_reduce_avx2_e5m2_max, dec_e5m2, enc_e5m2, fmax32, sta_reduce_scalar_e5m2_max)
FP8_AVX2_FINISH(sta_reduce_avx2_fin_e4m3, dec_e4m3, enc_e4m3, sta_reduce_scalar_fin_e4m3)
FP8_AVX2_FINISH(sta_reduce_avx2_fin_e5m2, dec_e5m2, enc_e5m2, sta_reduce_scalar_fin_e5m2)

/* __builtin_cpu_supports also checks with XGETBV that the OS saves the YMM state. */
static int avx2_supported(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

const sta_reduce_family_t sta_reduce_family_avx2 = {
    .name = "avx2",
    .supported = avx2_supported,
    .kern = {
        [STRATA_INT8] = STA_REDUCE_ROW(k_u8_sum, k_u8_prod, k_i8_min, k_i8_max),
        [STRATA_UINT8] = STA_REDUCE_ROW(k_u8_sum, k_u8_prod, k_u8_min, k_u8_max),
        [STRATA_INT32] = STA_REDUCE_ROW(k_u32_sum, k_u32_prod, k_i32_min, k_i32_max),
        [STRATA_UINT32] = STA_REDUCE_ROW(k_u32_sum, k_u32_prod, k_u32_min, k_u32_max),
        [STRATA_INT64] = STA_REDUCE_ROW(k_u64_sum, k_u64_prod, k_i64_min, k_i64_max),
        [STRATA_UINT64] = STA_REDUCE_ROW(k_u64_sum, k_u64_prod, k_u64_min, k_u64_max),
        [STRATA_FP16] = STA_REDUCE_ROW(k_fp16_sum, k_fp16_prod, k_fp16_min, k_fp16_max),
        [STRATA_BF16] = STA_REDUCE_ROW(k_bf16_sum, k_bf16_prod, k_bf16_min, k_bf16_max),
        [STRATA_FP32] = STA_REDUCE_ROW(k_f32_sum, k_f32_prod, k_f32_min, k_f32_max),
        [STRATA_FP64] = STA_REDUCE_ROW(k_f64_sum, k_f64_prod, k_f64_min, k_f64_max),
        STA_REDUCE_FP8_ROWS(avx2),
    },
    .finish = {
        [STRATA_INT8] = f_i8, [STRATA_UINT8] = f_u8, [STRATA_INT32] = f_i32,
        [STRATA_UINT32] = f_u32,
        [STRATA_INT64] = sta_reduce_scalar_fin_i64, [STRATA_UINT64] = sta_reduce_scalar_fin_u64,
        [STRATA_FP16] = f_fp16, [STRATA_BF16] = f_bf16, [STRATA_FP32] = f_f32,
        [STRATA_FP64] = f_f64,
        [STRATA_FP8_E4M3] = sta_reduce_avx2_fin_e4m3,
        [STRATA_FP8_E5M2] = sta_reduce_avx2_fin_e5m2,
    },
};

#else /* !__x86_64__ */

static int avx2_supported(void)
{
    return 0;
}

/* Never selected (supported() is 0); the slots stay NULL and are never read. */
const sta_reduce_family_t sta_reduce_family_avx2 = {
    .name = "avx2",
    .supported = avx2_supported,
};

#endif
