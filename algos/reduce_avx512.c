/*
 * AVX-512 reduction kernels (F + BW + VL + DQ: Skylake-SP, Ice Lake, Sapphire Rapids, Zen 4).
 * Only the functions here carry the target attribute; the rest of the build keeps baseline
 * x86-64 flags, and the dispatcher calls in only after sta_reduce_family_avx512.supported().
 *
 * Terms: a vector is 64 bytes of memory for 8/32/64-bit types, 32 bytes (16 elements widened
 * to 16 fp32 lanes) for fp16/bf16. A step folds 4 vectors of every source into 4 accumulators
 * in source order and stores them once; the tail (less than a vector) uses masked loads and
 * stores, so no element is handled outside the vector code and no byte past the end is read.
 * Cost per call: (nsrc + 1) x bytes of memory traffic; memory-bound beyond L2 for every op.
 *
 * Each generic loop is always_inline and receives its operation as a constant function
 * pointer, so every kernel is compiled as straight-line vector code with no call at all
 * (checked with objdump -d on the object).
 */
#include "algos/reduce_kern.h"
#include "util/compiler.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX512_ATTR   __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define AVX512_INLINE static inline __attribute__((always_inline)) AVX512_ATTR
#define AVX512_KERNEL static AVX512_ATTR

/* Bytes per vector, and per unrolled step (4 vectors: enough independent chains to keep two
 * loads per cycle in flight on Zen 4 / Skylake-SP). */
#define VEC_BYTES  64
#define STEP_VECS  4
/* fp16/bf16 elements per vector (one 256-bit load widened to one 512-bit fp32 register). */
#define HVEC_ELEMS 16
/* Alignment non-temporal stores need: one full 64-byte (resp. 32-byte) line. */
#define HVEC_BYTES 32

typedef __m512i (*vop_t)(__m512i, __m512i);
typedef __m512 (*fop_t)(__m512, __m512);
typedef __m512 (*hdec_t)(__m256i);
typedef __m256i (*henc_t)(__m512);

/* ---------------------------------------------------------------- operations */

AVX512_INLINE __m512i add8(__m512i a, __m512i b) { return _mm512_add_epi8(a, b); }
AVX512_INLINE __m512i add32(__m512i a, __m512i b) { return _mm512_add_epi32(a, b); }
AVX512_INLINE __m512i add64(__m512i a, __m512i b) { return _mm512_add_epi64(a, b); }
AVX512_INLINE __m512i mul32(__m512i a, __m512i b) { return _mm512_mullo_epi32(a, b); }
AVX512_INLINE __m512i mul64(__m512i a, __m512i b) { return _mm512_mullo_epi64(a, b); }
AVX512_INLINE __m512i mins8(__m512i a, __m512i b) { return _mm512_min_epi8(a, b); }
AVX512_INLINE __m512i maxs8(__m512i a, __m512i b) { return _mm512_max_epi8(a, b); }
AVX512_INLINE __m512i minu8(__m512i a, __m512i b) { return _mm512_min_epu8(a, b); }
AVX512_INLINE __m512i maxu8(__m512i a, __m512i b) { return _mm512_max_epu8(a, b); }
AVX512_INLINE __m512i mins32(__m512i a, __m512i b) { return _mm512_min_epi32(a, b); }
AVX512_INLINE __m512i maxs32(__m512i a, __m512i b) { return _mm512_max_epi32(a, b); }
AVX512_INLINE __m512i minu32(__m512i a, __m512i b) { return _mm512_min_epu32(a, b); }
AVX512_INLINE __m512i maxu32(__m512i a, __m512i b) { return _mm512_max_epu32(a, b); }
AVX512_INLINE __m512i mins64(__m512i a, __m512i b) { return _mm512_min_epi64(a, b); }
AVX512_INLINE __m512i maxs64(__m512i a, __m512i b) { return _mm512_max_epi64(a, b); }
AVX512_INLINE __m512i minu64(__m512i a, __m512i b) { return _mm512_min_epu64(a, b); }
AVX512_INLINE __m512i maxu64(__m512i a, __m512i b) { return _mm512_max_epu64(a, b); }

/* There is no 8-bit multiply: multiply the even and the odd bytes as 16-bit lanes (the low
 * byte of a 16-bit product depends only on the low bytes) and interleave the low bytes. */
AVX512_INLINE __m512i mul8(__m512i a, __m512i b)
{
    __m512i even = _mm512_mullo_epi16(a, b);
    __m512i odd = _mm512_mullo_epi16(_mm512_srli_epi16(a, 8), _mm512_srli_epi16(b, 8));
    return _mm512_mask_blend_epi8(0xaaaaaaaaaaaaaaaaull, even, _mm512_slli_epi16(odd, 8));
}

/* min/max with the contract's rules. vminps alone returns its second operand when either is
 * NaN or both are zero; fix both cases: equal lanes (only +-0 can differ in bits) take a | b
 * (min: -0 wins) or a & b (max: +0 wins), unordered lanes take a + b (a quiet NaN). */
AVX512_INLINE __m512 fmin32(__m512 a, __m512 b)
{
    __m512i r = _mm512_castps_si512(_mm512_min_ps(a, b));
    __mmask16 eq = _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ);
    r = _mm512_mask_or_epi32(r, eq, _mm512_castps_si512(a), _mm512_castps_si512(b));
    __mmask16 un = _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
    return _mm512_mask_add_ps(_mm512_castsi512_ps(r), un, a, b);
}

AVX512_INLINE __m512 fmax32(__m512 a, __m512 b)
{
    __m512i r = _mm512_castps_si512(_mm512_max_ps(a, b));
    __mmask16 eq = _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ);
    r = _mm512_mask_and_epi32(r, eq, _mm512_castps_si512(a), _mm512_castps_si512(b));
    __mmask16 un = _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
    return _mm512_mask_add_ps(_mm512_castsi512_ps(r), un, a, b);
}

AVX512_INLINE __m512d fmin64v(__m512d a, __m512d b)
{
    __m512i r = _mm512_castpd_si512(_mm512_min_pd(a, b));
    __mmask8 eq = _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ);
    r = _mm512_mask_or_epi64(r, eq, _mm512_castpd_si512(a), _mm512_castpd_si512(b));
    __mmask8 un = _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q);
    return _mm512_mask_add_pd(_mm512_castsi512_pd(r), un, a, b);
}

AVX512_INLINE __m512d fmax64v(__m512d a, __m512d b)
{
    __m512i r = _mm512_castpd_si512(_mm512_max_pd(a, b));
    __mmask8 eq = _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ);
    r = _mm512_mask_and_epi64(r, eq, _mm512_castpd_si512(a), _mm512_castpd_si512(b));
    __mmask8 un = _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q);
    return _mm512_mask_add_pd(_mm512_castsi512_pd(r), un, a, b);
}

AVX512_INLINE __m512 fadd32(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
AVX512_INLINE __m512 fmul32(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }

/* The wide loop works on __m512i; the float operations reinterpret (no instruction). */
#define PS(x) _mm512_castsi512_ps(x)
#define PD(x) _mm512_castsi512_pd(x)
#define SPS(x) _mm512_castps_si512(x)
#define SPD(x) _mm512_castpd_si512(x)
AVX512_INLINE __m512i addf32(__m512i a, __m512i b) { return SPS(_mm512_add_ps(PS(a), PS(b))); }
AVX512_INLINE __m512i mulf32(__m512i a, __m512i b) { return SPS(_mm512_mul_ps(PS(a), PS(b))); }
AVX512_INLINE __m512i minf32(__m512i a, __m512i b) { return SPS(fmin32(PS(a), PS(b))); }
AVX512_INLINE __m512i maxf32(__m512i a, __m512i b) { return SPS(fmax32(PS(a), PS(b))); }
AVX512_INLINE __m512i addf64(__m512i a, __m512i b) { return SPD(_mm512_add_pd(PD(a), PD(b))); }
AVX512_INLINE __m512i mulf64(__m512i a, __m512i b) { return SPD(_mm512_mul_pd(PD(a), PD(b))); }
AVX512_INLINE __m512i minf64(__m512i a, __m512i b) { return SPD(fmin64v(PD(a), PD(b))); }
AVX512_INLINE __m512i maxf64(__m512i a, __m512i b) { return SPD(fmax64v(PD(a), PD(b))); }

/* ---------------------------------------------------------------- fp16 / bf16 */

AVX512_INLINE __m512 fp16_dec(__m256i h) { return _mm512_cvtph_ps(h); }
AVX512_INLINE __m256i fp16_enc(__m512 f) { return _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT); }

AVX512_INLINE __m512 bf16_dec(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Round to nearest even in integers, as sta_bf16_encode; NaN lanes keep their top bits and
 * are made quiet. vpmovdw then packs the 16 results (each < 2^16) into 256 bits. */
AVX512_INLINE __m256i bf16_enc(__m512 f)
{
    __m512i u = _mm512_castps_si512(f);
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i bias = _mm512_add_epi32(_mm512_and_si512(hi, _mm512_set1_epi32(1)),
                                    _mm512_set1_epi32(STA_BF16_ROUND_BIAS));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(STA_BF16_QUIET));
    return _mm512_cvtepi32_epi16(r);
}

/* ---------------------------------------------------------------- generic loops */

/* Low n bits set, n <= 64. */
AVX512_INLINE __mmask64 mask_bytes(size_t n)
{
    return n >= 64 ? ~0ull : (1ull << n) - 1;
}

/* Folds the 64 bytes at byte offset off of every source under byte mask m (zero elsewhere:
 * harmless lanes, never stored) and stores the masked bytes. */
AVX512_INLINE void wide_masked(char *d, const void *const *srcs, int nsrc, size_t off,
                               __mmask64 m, vop_t op)
{
    __m512i a = _mm512_maskz_loadu_epi8(m, (const char *)srcs[0] + off);
    for (int k = 1; k < nsrc; k++)
        a = op(a, _mm512_maskz_loadu_epi8(m, (const char *)srcs[k] + off));
    _mm512_mask_storeu_epi8(d + off, m, a);
}

AVX512_INLINE void wide_store(char *p, __m512i v, int nt)
{
    if (nt)
        _mm512_stream_si512((void *)p, v);
    else
        _mm512_storeu_si512(p, v);
}

AVX512_INLINE void wide_vec(char *d, const void *const *srcs, int nsrc, size_t off, vop_t op,
                            int nt)
{
    __m512i a = _mm512_loadu_si512((const char *)srcs[0] + off);
    for (int k = 1; k < nsrc; k++)
        a = op(a, _mm512_loadu_si512((const char *)srcs[k] + off));
    wide_store(d + off, a, nt);
}

AVX512_INLINE void wide_step(char *d, const void *const *srcs, int nsrc, size_t off,
                             vop_t op, int nt)
{
    const char *s = (const char *)srcs[0] + off;
    __m512i a0 = _mm512_loadu_si512(s), a1 = _mm512_loadu_si512(s + VEC_BYTES);
    __m512i a2 = _mm512_loadu_si512(s + 2 * VEC_BYTES);
    __m512i a3 = _mm512_loadu_si512(s + 3 * VEC_BYTES);
    for (int k = 1; k < nsrc; k++) {
        s = (const char *)srcs[k] + off;
        a0 = op(a0, _mm512_loadu_si512(s));
        a1 = op(a1, _mm512_loadu_si512(s + VEC_BYTES));
        a2 = op(a2, _mm512_loadu_si512(s + 2 * VEC_BYTES));
        a3 = op(a3, _mm512_loadu_si512(s + 3 * VEC_BYTES));
    }
    wide_store(d + off, a0, nt);
    wide_store(d + off + VEC_BYTES, a1, nt);
    wide_store(d + off + 2 * VEC_BYTES, a2, nt);
    wide_store(d + off + 3 * VEC_BYTES, a3, nt);
}

/* Bytes [off, stop): whole steps, then whole vectors, then one masked vector. */
AVX512_INLINE size_t wide_body(char *d, const void *const *srcs, int nsrc, size_t off,
                               size_t stop, vop_t op, int nt)
{
    for (; stop - off >= STEP_VECS * VEC_BYTES; off += STEP_VECS * VEC_BYTES)
        wide_step(d, srcs, nsrc, off, op, nt);
    for (; stop - off >= VEC_BYTES; off += VEC_BYTES)
        wide_vec(d, srcs, nsrc, off, op, nt);
    return off;
}

AVX512_INLINE void wide_run(void *dst, const void *const *srcs, int nsrc, size_t begin,
                            size_t end, size_t esize, unsigned flags, vop_t op)
{
    char *d = dst;
    size_t off = begin * esize, stop = end * esize;

    if (flags & STA_REDUCE_F_NT) {
        /* Unaligned head up to a 64-byte boundary of dst, then streaming stores. */
        size_t head = STU_MIN((size_t)(-(uintptr_t)(d + off) & (VEC_BYTES - 1)), stop - off);
        if (head) {
            wide_masked(d, srcs, nsrc, off, mask_bytes(head), op);
            off += head;
        }
        off = wide_body(d, srcs, nsrc, off, stop, op, 1);
        _mm_sfence();
    } else {
        off = wide_body(d, srcs, nsrc, off, stop, op, 0);
    }
    if (off < stop)
        wide_masked(d, srcs, nsrc, off, mask_bytes(stop - off), op);
}

/* fp16/bf16: same shape in elements; each vector is 16 elements widened to fp32. */
AVX512_INLINE void half_masked(uint16_t *d, const void *const *srcs, int nsrc, size_t i,
                               __mmask16 m, hdec_t dec, henc_t enc, fop_t op)
{
    __m512 a = dec(_mm256_maskz_loadu_epi16(m, (const uint16_t *)srcs[0] + i));
    for (int k = 1; k < nsrc; k++)
        a = op(a, dec(_mm256_maskz_loadu_epi16(m, (const uint16_t *)srcs[k] + i)));
    _mm256_mask_storeu_epi16(d + i, m, enc(a));
}

AVX512_INLINE void half_store(uint16_t *p, __m256i v, int nt)
{
    if (nt)
        _mm256_stream_si256((__m256i *)(void *)p, v);
    else
        _mm256_storeu_si256((__m256i_u *)(void *)p, v);
}

#define HLOAD(p) _mm256_loadu_si256((const __m256i_u *)(const void *)(p))

AVX512_INLINE void half_vec(uint16_t *d, const void *const *srcs, int nsrc, size_t i,
                            hdec_t dec, henc_t enc, fop_t op, int nt)
{
    __m512 a = dec(HLOAD((const uint16_t *)srcs[0] + i));
    for (int k = 1; k < nsrc; k++)
        a = op(a, dec(HLOAD((const uint16_t *)srcs[k] + i)));
    half_store(d + i, enc(a), nt);
}

AVX512_INLINE void half_step(uint16_t *d, const void *const *srcs, int nsrc, size_t i,
                             hdec_t dec, henc_t enc, fop_t op, int nt)
{
    const uint16_t *s = (const uint16_t *)srcs[0] + i;
    __m512 a0 = dec(HLOAD(s)), a1 = dec(HLOAD(s + HVEC_ELEMS));
    __m512 a2 = dec(HLOAD(s + 2 * HVEC_ELEMS)), a3 = dec(HLOAD(s + 3 * HVEC_ELEMS));
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

AVX512_INLINE size_t half_body(uint16_t *d, const void *const *srcs, int nsrc, size_t i,
                               size_t end, hdec_t dec, henc_t enc, fop_t op, int nt)
{
    for (; end - i >= STEP_VECS * HVEC_ELEMS; i += STEP_VECS * HVEC_ELEMS)
        half_step(d, srcs, nsrc, i, dec, enc, op, nt);
    for (; end - i >= HVEC_ELEMS; i += HVEC_ELEMS)
        half_vec(d, srcs, nsrc, i, dec, enc, op, nt);
    return i;
}

AVX512_INLINE void half_run(void *dst, const void *const *srcs, int nsrc, size_t i, size_t end,
                            unsigned flags, hdec_t dec, henc_t enc, fop_t op)
{
    uint16_t *d = dst;

    if (flags & STA_REDUCE_F_NT) {
        size_t head = (size_t)(-(uintptr_t)(d + i) & (HVEC_BYTES - 1)) / 2;
        head = STU_MIN(head, end - i);
        if (head) {
            half_masked(d, srcs, nsrc, i, (__mmask16)((1u << head) - 1), dec, enc, op);
            i += head;
        }
        i = half_body(d, srcs, nsrc, i, end, dec, enc, op, 1);
        _mm_sfence();
    } else {
        i = half_body(d, srcs, nsrc, i, end, dec, enc, op, 0);
    }
    if (i < end)
        half_masked(d, srcs, nsrc, i, (__mmask16)((1u << (end - i)) - 1), dec, enc, op);
}

/* ---------------------------------------------------------------- average */

/*
 * buf /= n on one 64-byte vector. Floats divide (vdivps/vdivpd: IEEE, round to nearest even,
 * as the portable code). 8- and 32-bit integers divide in fp32 / fp64 and truncate, which is
 * exact: a quotient q = v / n that is not an integer lies at least 1/n from every integer,
 * while rounding moves it by at most half an ulp, |q| 2^-24 <= 2^8 / n 2^-24 (8-bit in fp32)
 * or |q| 2^-53 <= 2^32 / n 2^-53 (32-bit in fp64), both far below 1/n. 64-bit integers do not
 * fit that argument and use the portable division.
 */
typedef __m512i (*vdiv_t)(__m512i, int);

AVX512_INLINE __m512i div_f32(__m512i v, int n)
{
    return SPS(_mm512_div_ps(PS(v), _mm512_set1_ps((float)n)));
}

AVX512_INLINE __m512i div_f64(__m512i v, int n)
{
    return SPD(_mm512_div_pd(PD(v), _mm512_set1_pd((double)n)));
}

AVX512_INLINE __m512i join256(__m256i lo, __m256i hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

AVX512_INLINE __m512i div_i32(__m512i v, int n)
{
    __m512d d = _mm512_set1_pd((double)n);
    __m512d lo = _mm512_cvtepi32_pd(_mm512_castsi512_si256(v));
    __m512d hi = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(v, 1));
    return join256(_mm512_cvttpd_epi32(_mm512_div_pd(lo, d)),
                   _mm512_cvttpd_epi32(_mm512_div_pd(hi, d)));
}

AVX512_INLINE __m512i div_u32(__m512i v, int n)
{
    __m512d d = _mm512_set1_pd((double)n);
    __m512d lo = _mm512_cvtepu32_pd(_mm512_castsi512_si256(v));
    __m512d hi = _mm512_cvtepu32_pd(_mm512_extracti64x4_epi64(v, 1));
    return join256(_mm512_cvttpd_epu32(_mm512_div_pd(lo, d)),
                   _mm512_cvttpd_epu32(_mm512_div_pd(hi, d)));
}

/* 16 bytes widened to 16 x int32, divided in fp32, narrowed back (the quotient fits). */
AVX512_INLINE __m128i div8x16(__m128i q, __m512 d, int is_signed)
{
    __m512i w = is_signed ? _mm512_cvtepi8_epi32(q) : _mm512_cvtepu8_epi32(q);
    return _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(_mm512_div_ps(_mm512_cvtepi32_ps(w), d)));
}

AVX512_INLINE __m512i div8(__m512i v, int n, int is_signed)
{
    __m512 d = _mm512_set1_ps((float)n);
    __m512i r = _mm512_castsi128_si512(div8x16(_mm512_castsi512_si128(v), d, is_signed));
    r = _mm512_inserti32x4(r, div8x16(_mm512_extracti32x4_epi32(v, 1), d, is_signed), 1);
    r = _mm512_inserti32x4(r, div8x16(_mm512_extracti32x4_epi32(v, 2), d, is_signed), 2);
    return _mm512_inserti32x4(r, div8x16(_mm512_extracti32x4_epi32(v, 3), d, is_signed), 3);
}

AVX512_INLINE __m512i div_i8(__m512i v, int n) { return div8(v, n, 1); }
AVX512_INLINE __m512i div_u8(__m512i v, int n) { return div8(v, n, 0); }

/* 32 fp16/bf16: two halves of 16, each decoded, divided in fp32 and rounded once. */
AVX512_INLINE __m512i div_half(__m512i v, int n, hdec_t dec, henc_t enc)
{
    __m512 d = _mm512_set1_ps((float)n);
    return join256(enc(_mm512_div_ps(dec(_mm512_castsi512_si256(v)), d)),
                   enc(_mm512_div_ps(dec(_mm512_extracti64x4_epi64(v, 1)), d)));
}

AVX512_INLINE __m512i div_fp16(__m512i v, int n) { return div_half(v, n, fp16_dec, fp16_enc); }
AVX512_INLINE __m512i div_bf16(__m512i v, int n) { return div_half(v, n, bf16_dec, bf16_enc); }

/* Whole vectors, then one byte-masked vector (the zero lanes divide harmlessly). */
AVX512_INLINE void fin_run(void *buf, size_t begin, size_t end, size_t esize, int n, vdiv_t op)
{
    char *p = buf;
    size_t off = begin * esize, stop = end * esize;

    for (; stop - off >= VEC_BYTES; off += VEC_BYTES)
        _mm512_storeu_si512(p + off, op(_mm512_loadu_si512(p + off), n));
    if (off < stop) {
        __mmask64 m = mask_bytes(stop - off);
        _mm512_mask_storeu_epi8(p + off, m, op(_mm512_maskz_loadu_epi8(m, p + off), n));
    }
}

/* ---------------------------------------------------------------- kernels and table */

#define WIDE_KERNEL(name, esize, op)                                                          \
    AVX512_KERNEL void name(void *dst, const void *const *srcs, int nsrc, size_t begin,       \
                            size_t end, unsigned flags)                                       \
    {                                                                                         \
        wide_run(dst, srcs, nsrc, begin, end, esize, flags, op);                              \
    }

#define HALF_KERNEL(name, dec, enc, op)                                                       \
    AVX512_KERNEL void name(void *dst, const void *const *srcs, int nsrc, size_t begin,       \
                            size_t end, unsigned flags)                                       \
    {                                                                                         \
        half_run(dst, srcs, nsrc, begin, end, flags, dec, enc, op);                           \
    }

#define FIN_KERNEL(name, esize, op)                                                           \
    AVX512_KERNEL void name(void *buf, size_t begin, size_t end, int nranks)                  \
    {                                                                                         \
        fin_run(buf, begin, end, esize, nranks, op);                                          \
    }

WIDE_KERNEL(k_u8_sum, 1, add8)
WIDE_KERNEL(k_u8_prod, 1, mul8)
WIDE_KERNEL(k_i8_min, 1, mins8)
WIDE_KERNEL(k_i8_max, 1, maxs8)
WIDE_KERNEL(k_u8_min, 1, minu8)
WIDE_KERNEL(k_u8_max, 1, maxu8)
WIDE_KERNEL(k_u32_sum, 4, add32)
WIDE_KERNEL(k_u32_prod, 4, mul32)
WIDE_KERNEL(k_i32_min, 4, mins32)
WIDE_KERNEL(k_i32_max, 4, maxs32)
WIDE_KERNEL(k_u32_min, 4, minu32)
WIDE_KERNEL(k_u32_max, 4, maxu32)
WIDE_KERNEL(k_u64_sum, 8, add64)
WIDE_KERNEL(k_u64_prod, 8, mul64)
WIDE_KERNEL(k_i64_min, 8, mins64)
WIDE_KERNEL(k_i64_max, 8, maxs64)
WIDE_KERNEL(k_u64_min, 8, minu64)
WIDE_KERNEL(k_u64_max, 8, maxu64)
WIDE_KERNEL(k_f32_sum, 4, addf32)
WIDE_KERNEL(k_f32_prod, 4, mulf32)
WIDE_KERNEL(k_f32_min, 4, minf32)
WIDE_KERNEL(k_f32_max, 4, maxf32)
WIDE_KERNEL(k_f64_sum, 8, addf64)
WIDE_KERNEL(k_f64_prod, 8, mulf64)
WIDE_KERNEL(k_f64_min, 8, minf64)
WIDE_KERNEL(k_f64_max, 8, maxf64)
HALF_KERNEL(k_fp16_sum, fp16_dec, fp16_enc, fadd32)
HALF_KERNEL(k_fp16_prod, fp16_dec, fp16_enc, fmul32)
HALF_KERNEL(k_fp16_min, fp16_dec, fp16_enc, fmin32)
HALF_KERNEL(k_fp16_max, fp16_dec, fp16_enc, fmax32)
HALF_KERNEL(k_bf16_sum, bf16_dec, bf16_enc, fadd32)
HALF_KERNEL(k_bf16_prod, bf16_dec, bf16_enc, fmul32)
HALF_KERNEL(k_bf16_min, bf16_dec, bf16_enc, fmin32)
HALF_KERNEL(k_bf16_max, bf16_dec, bf16_enc, fmax32)
FIN_KERNEL(f_i8, 1, div_i8)
FIN_KERNEL(f_u8, 1, div_u8)
FIN_KERNEL(f_i32, 4, div_i32)
FIN_KERNEL(f_u32, 4, div_u32)
FIN_KERNEL(f_fp16, 2, div_fp16)
FIN_KERNEL(f_bf16, 2, div_bf16)
FIN_KERNEL(f_f32, 4, div_f32)
FIN_KERNEL(f_f64, 8, div_f64)

/* libgcc's __builtin_cpu_supports also checks, with XGETBV, that the OS saves the opmask and
 * ZMM state (GCC >= 7.4, bug 85100); a CPU with the bits but an OS without them reads 0. */
static int avx512_supported(void)
{
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

const sta_reduce_family_t sta_reduce_family_avx512 = {
    .name = "avx512",
    .supported = avx512_supported,
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
        [STRATA_UINT32] = f_u32, [STRATA_INT64] = sta_reduce_scalar_fin_i64,
        [STRATA_UINT64] = sta_reduce_scalar_fin_u64, [STRATA_FP16] = f_fp16,
        [STRATA_BF16] = f_bf16, [STRATA_FP32] = f_f32, [STRATA_FP64] = f_f64,
        [STRATA_FP8_E4M3] = sta_reduce_avx2_fin_e4m3,
        [STRATA_FP8_E5M2] = sta_reduce_avx2_fin_e5m2,
    },
};

#else /* !__x86_64__ */

static int avx512_supported(void)
{
    return 0;
}

/* Never selected (supported() is 0); the slots stay NULL and are never read. */
const sta_reduce_family_t sta_reduce_family_avx512 = {
    .name = "avx512",
    .supported = avx512_supported,
};

#endif
