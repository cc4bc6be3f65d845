/*
 * Reduction kernels against an independent reference: every dtype x op x kernel family
 * (forced), nsrc 1..8, counts 0, 1, 7, 33, 1037 (and a longer one for streaming stores),
 * aligned, misaligned (also off the element size) and in place, with guard bytes around dst
 * and sources checked unchanged. Also: dispatch, the average's final division on every dtype x
 * family against a reference, and reductions racing a family switch. Named cases (special
 * float values, fp16/bf16 rounding, integer wrap-around, averages) are in
 * test_reduce_special.c.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algos/reduce.h"

static const char *const families[] = {"scalar", "avx2", "avx512"};
static const size_t counts[] = {0, 1, 7, 33, 1037};
/* Room either side of every buffer that must stay untouched, and the alignment of its base. */
#define GUARD   128
#define BASE_AL 64
#define MAX_SRC 8

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: deterministic, good enough to spread bit patterns. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

static size_t esize(strata_dtype_t dt)
{
    return strata_dtype_size(dt);
}

static uint64_t ld(const void *p, size_t i, size_t es)
{
    uint64_t v = 0;
    memcpy(&v, (const char *)p + i * es, es);   /* little-endian: zero-extended bits */
    return v;
}

static void st(void *p, size_t i, size_t es, uint64_t v)
{
    memcpy((char *)p + i * es, &v, es);
}

static int is_signed_int(strata_dtype_t dt)
{
    return dt == STRATA_INT8 || dt == STRATA_INT32 || dt == STRATA_INT64;
}

static int is_fp8(strata_dtype_t dt)
{
    return dt == STRATA_FP8_E4M3 || dt == STRATA_FP8_E5M2;
}

static int is_float(strata_dtype_t dt)
{
    return dt == STRATA_FP16 || dt == STRATA_BF16 || dt == STRATA_FP32 || dt == STRATA_FP64 ||
           is_fp8(dt);
}

static float f32_of(uint64_t b)
{
    uint32_t u = (uint32_t)b;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t bits_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static double f64_of(uint64_t b)
{
    double d;
    memcpy(&d, &b, 8);
    return d;
}

static uint64_t bits_f64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* The value of an element as a float (for the 8/16/32-bit float types). */
static float ref_decode(strata_dtype_t dt, uint64_t b)
{
    if (dt == STRATA_FP8_E4M3)
        return sta_fp8_e4m3_decode((uint8_t)b);
    if (dt == STRATA_FP8_E5M2)
        return sta_fp8_e5m2_decode((uint8_t)b);
    if (dt == STRATA_FP16)
        return sta_fp16_decode((uint16_t)b);
    if (dt == STRATA_BF16)
        return sta_bf16_decode((uint16_t)b);
    return f32_of(b);
}

static uint64_t ref_encode(strata_dtype_t dt, float f)
{
    if (dt == STRATA_FP8_E4M3)
        return sta_fp8_e4m3_encode(f);
    if (dt == STRATA_FP8_E5M2)
        return sta_fp8_e5m2_encode(f);
    if (dt == STRATA_FP16)
        return sta_fp16_encode(f);
    if (dt == STRATA_BF16)
        return sta_bf16_encode(f);
    return bits_f32(f);
}

/* Written differently from the library on purpose: NaN first, then the two zeros. */
static double ref_min(double a, double b)
{
    if (a != a)
        return a;
    if (b != b)
        return b;
    if (a == 0 && b == 0)
        return (signbit(a) || signbit(b)) ? -0.0 : 0.0;
    return a < b ? a : b;
}

static double ref_max(double a, double b)
{
    if (a != a)
        return a;
    if (b != b)
        return b;
    if (a == 0 && b == 0)
        return (signbit(a) && signbit(b)) ? -0.0 : 0.0;
    return a > b ? a : b;
}

/* Integer op on zero-extended bits of width es bytes; result masked to the width. */
static uint64_t ref_int(strata_dtype_t dt, strata_op_t op, uint64_t a, uint64_t b)
{
    size_t es = esize(dt);
    uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
    int sh = 64 - 8 * (int)es;
    int64_t sa = (int64_t)(a << sh) >> sh, sb = (int64_t)(b << sh) >> sh;
    int lt = is_signed_int(dt) ? sa < sb : a < b;

    switch (op) {
    case STRATA_SUM:
    case STRATA_AVG: return (a + b) & mask;
    case STRATA_PROD: return (a * b) & mask;
    case STRATA_MIN: return lt ? a : b;
    case STRATA_MAX: return lt ? b : a;
    default: return 0;
    }
}

static float ref_op_f32(strata_op_t op, float a, float b)
{
    switch (op) {
    case STRATA_SUM:
    case STRATA_AVG: return a + b;
    case STRATA_PROD: return a * b;
    case STRATA_MIN: return (float)ref_min(a, b);    /* exact: returns one of a, b */
    case STRATA_MAX: return (float)ref_max(a, b);
    default: return 0;
    }
}

static double ref_op_f64(strata_op_t op, double a, double b)
{
    switch (op) {
    case STRATA_SUM:
    case STRATA_AVG: return a + b;
    case STRATA_PROD: return a * b;
    case STRATA_MIN: return ref_min(a, b);
    case STRATA_MAX: return ref_max(a, b);
    default: return 0;
    }
}

/* The reference: element by element, sources in order; 8/16/32-bit floats fold in fp32 (each
 * step rounded to float), fp64 in double. */
static void ref_reduce(void *dst, void *const *srcs, int nsrc, size_t count, strata_dtype_t dt,
                       strata_op_t op)
{
    size_t es = esize(dt);
    for (size_t i = 0; i < count; i++) {
        if (dt == STRATA_FP64) {
            double acc = f64_of(ld(srcs[0], i, es));
            for (int k = 1; k < nsrc; k++)
                acc = ref_op_f64(op, acc, f64_of(ld(srcs[k], i, es)));
            st(dst, i, es, bits_f64(acc));
        } else if (is_float(dt)) {
            float acc = ref_decode(dt, ld(srcs[0], i, es));
            for (int k = 1; k < nsrc; k++)
                acc = ref_op_f32(op, acc, ref_decode(dt, ld(srcs[k], i, es)));
            st(dst, i, es, ref_encode(dt, acc));
        } else {
            uint64_t acc = ld(srcs[0], i, es);
            for (int k = 1; k < nsrc; k++)
                acc = ref_int(dt, op, acc, ld(srcs[k], i, es));
            st(dst, i, es, acc);
        }
    }
}

static int is_nan_bits(strata_dtype_t dt, uint64_t b)
{
    switch (dt) {
    case STRATA_FP8_E4M3: return (b & 0x7f) == 0x7f;
    case STRATA_FP8_E5M2: return (b & 0x7f) > 0x7c;
    case STRATA_FP16: return (b & 0x7fff) > 0x7c00;
    case STRATA_BF16: return (b & 0x7fff) > 0x7f80;
    case STRATA_FP32: return (b & 0x7fffffff) > 0x7f800000;
    case STRATA_FP64: return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    default: return 0;
    }
}

/* Equal bits, or both NaN (the payload of a NaN result is not part of the contract). A NaN
 * result of the 16-bit types must be quiet. */
static int elem_ok(strata_dtype_t dt, uint64_t got, uint64_t want)
{
    if (is_nan_bits(dt, want) && is_nan_bits(dt, got)) {
        if (dt == STRATA_FP16)
            return (got & 0x0200) != 0;
        if (dt == STRATA_BF16)
            return (got & 0x0040) != 0;
        if (dt == STRATA_FP8_E5M2)
            return (got & 0x02) != 0;
        return 1;
    }
    return got == want;
}

/* Random element bits: mostly ordinary values of the type, with extremes and (floats) NaN,
 * +-0, +-Inf and subnormals mixed in. */
static uint64_t gen_elem(strata_dtype_t dt, uint64_t *rng)
{
    uint64_t r = rng_next(rng);
    unsigned pick = (unsigned)(r >> 56) % 32;

    switch (dt) {
    case STRATA_FP32: {
        static const uint32_t special[] = {0x7fc00000, 0x7f800001, 0xffc00123, 0x00000000,
                                           0x80000000, 0x7f800000, 0xff800000, 0x00000001,
                                           0x807fffff, 0x7f7fffff};
        if (pick < 10)
            return special[pick];
        if (pick < 14)
            return r & 0x807fffff;                       /* subnormal */
        return bits_f32((float)((int64_t)(r % 2001) - 1000) / 8.0f);
    }
    case STRATA_FP64: {
        static const uint64_t special[] = {0x7ff8000000000000ull, 0x7ff0000000000001ull,
                                           0x0000000000000000ull, 0x8000000000000000ull,
                                           0x7ff0000000000000ull, 0xfff0000000000000ull,
                                           0x0000000000000001ull, 0x7fefffffffffffffull};
        if (pick < 8)
            return special[pick];
        if (pick < 12)
            return r & 0x800fffffffffffffull;
        return bits_f64((double)((int64_t)(r % 2001) - 1000) / 8.0);
    }
    case STRATA_FP8_E4M3:
    case STRATA_FP8_E5M2:
        if (pick < 4)
            return (pick & 1 ? 0x80 : 0) | (pick & 2 ? 0x01 : 0);       /* +-0, +-min sub */
        if (pick < 20)
            return r & 0xff;                                /* any pattern, NaN included */
        return ref_encode(dt, (float)((int64_t)(r % 33) - 16) / 4.0f);
    case STRATA_FP16:
    case STRATA_BF16:
        if (pick < 4)
            return (pick & 1 ? 0x8000 : 0) | (pick & 2 ? 0x0001 : 0);   /* +-0, +-min sub */
        if (pick < 20)
            return r & 0xffff;                              /* any pattern, NaN included */
        return ref_encode(dt, (float)((int64_t)(r % 201) - 100) / 4.0f);
    default: {
        size_t es = esize(dt);
        uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
        static const uint64_t ext[] = {0, 1, ~0ull, 0x8000000000000000ull, 0x7fffffffffffffffull};
        if (pick < 5) {
            uint64_t e = ext[pick];
            if (pick >= 3)                   /* the signed extremes of this width */
                e >>= 64 - 8 * es;
            return e & mask;
        }
        if (pick < 8)
            return (r % 5) & mask;           /* small values keep products non-zero */
        return r & mask;
    }
    }
}

/* ---------------------------------------------------------------- one case */

typedef struct rcase {
    strata_dtype_t dt;
    strata_op_t op;
    int nsrc;
    size_t count;
    size_t off[MAX_SRC + 1];   /* byte offset from a 64-aligned base: [0] dst, [1..] sources */
    int in_place;
} rcase_t;

static void case_fail(const char *fam, const rcase_t *c, const char *what, size_t i,
                      uint64_t got, uint64_t want)
{
    fail_msg("%s %s/%s nsrc=%d count=%zu dst+%zu in_place=%d: %s at %zu: got 0x%llx want 0x%llx",
             fam, strata_dtype_name(c->dt), strata_op_name(c->op), c->nsrc, c->count, c->off[0],
             c->in_place, what, i, (unsigned long long)got, (unsigned long long)want);
}

static void run_case(const char *fam, const rcase_t *c, uint64_t *rng)
{
    size_t es = esize(c->dt), bytes = c->count * es;
    size_t alloc = bytes + 2 * GUARD + BASE_AL;
    uint8_t *base[MAX_SRC + 1], *pristine[MAX_SRC + 1];
    void *buf[MAX_SRC + 1];
    const void *srcs[MAX_SRC];
    void *ref_srcs[MAX_SRC];
    uint8_t *ref = malloc(bytes + 1);

    for (int b = 0; b <= c->nsrc; b++) {
        base[b] = malloc(alloc);
        pristine[b] = malloc(alloc);
        assert_non_null(base[b]);
        assert_non_null(pristine[b]);
        uintptr_t a = ((uintptr_t)base[b] + GUARD + BASE_AL - 1) & ~(uintptr_t)(BASE_AL - 1);
        buf[b] = (void *)(a + c->off[b]);
        memset(base[b], 0xa5, alloc);
        if (b > 0) {
            for (size_t i = 0; i < c->count; i++)
                st(buf[b], i, es, gen_elem(c->dt, rng));
        }
        memcpy(pristine[b], base[b], alloc);
    }
    for (int k = 0; k < c->nsrc; k++) {
        srcs[k] = buf[k + 1];
        ref_srcs[k] = pristine[k + 1] + ((uint8_t *)buf[k + 1] - base[k + 1]);
    }
    ref_reduce(ref, ref_srcs, c->nsrc, c->count, c->dt, c->op);

    int d = c->in_place ? 1 : 0;        /* the buffer that receives the result */
    sta_reduce_n(buf[d], srcs, c->nsrc, c->count, c->dt, c->op);

    for (size_t i = 0; i < c->count; i++) {
        uint64_t got = ld(buf[d], i, es), want = ld(ref, i, es);
        if (!elem_ok(c->dt, got, want))
            case_fail(fam, c, "value", i, got, want);
    }
    /* Nothing outside dst changed: guards of dst, and every byte of the other sources. */
    for (int b = 0; b <= c->nsrc; b++) {
        size_t lo = (size_t)((uint8_t *)buf[b] - base[b]), hi = lo + bytes;
        for (size_t j = 0; j < alloc; j++) {
            if (b == d && j >= lo && j < hi)
                continue;
            if (base[b][j] != pristine[b][j])
                case_fail(fam, c, b == d ? "guard byte" : "source byte", j, base[b][j],
                          pristine[b][j]);
        }
    }
    for (int b = 0; b <= c->nsrc; b++) {
        free(base[b]);
        free(pristine[b]);
    }
    free(ref);
}

/* Every dtype x op x nsrc x count of one family, with four layouts: 64-byte aligned;
 * element-aligned but off 64 by amounts that differ per buffer; off the element size too;
 * element-aligned in place. */
static void run_matrix(const char *fam, const size_t *cnts, size_t ncnt)
{
    uint64_t rng = 0x9e3779b97f4a7c15ull;

    for (int dt = 0; dt < STRATA_DTYPE_COUNT; dt++) {
        for (int op = 0; op < STRATA_OP_COUNT; op++) {
            for (int nsrc = 1; nsrc <= MAX_SRC; nsrc++) {
                for (size_t ci = 0; ci < ncnt; ci++) {
                    for (int layout = 0; layout < 4; layout++) {
                        rcase_t c = {.dt = dt, .op = op, .nsrc = nsrc, .count = cnts[ci],
                                     .in_place = layout == 3};
                        size_t es = esize(dt);
                        for (int b = 0; b <= nsrc; b++) {
                            if (layout == 2)
                                c.off[b] = (size_t)(b * 13 + 3 + dt) % BASE_AL;
                            else if (layout != 0)
                                c.off[b] = (size_t)(b * 5 + 1) * es % BASE_AL;
                        }
                        if (c.in_place)
                            c.off[0] = c.off[1];
                        run_case(fam, &c, &rng);
                    }
                }
            }
        }
    }
}

static int force_or_skip(const char *fam)
{
    if (!sta_reduce_force_isa(fam)) {
        print_message("family %s not supported on this CPU: skipped\n", fam);
        return 0;
    }
    assert_string_equal(sta_reduce_isa(), fam);
    return 1;
}

static void matrix(const char *fam)
{
    if (!force_or_skip(fam))
        skip();
    run_matrix(fam, counts, sizeof(counts) / sizeof(counts[0]));
    sta_reduce_force_isa(NULL);
}

/* The streaming-store path (threshold 0: every element-aligned dst streams), with counts long
 * enough to cover the unaligned head, whole steps, single vectors and the tail. */
static void matrix_streaming(const char *fam)
{
    static const size_t nt_counts[] = {1, 33, 1037, 4099};
    if (!force_or_skip(fam))
        skip();
    size_t old = sta_reduce_nt_min_bytes_set(0);
    run_matrix(fam, nt_counts, sizeof(nt_counts) / sizeof(nt_counts[0]));
    sta_reduce_nt_min_bytes_set(old);
    sta_reduce_force_isa(NULL);
}

static void test_matrix_scalar(void **state) { matrix("scalar"); }
static void test_matrix_avx2(void **state) { matrix("avx2"); }
static void test_matrix_avx512(void **state) { matrix("avx512"); }
static void test_streaming_scalar(void **state) { matrix_streaming("scalar"); }
static void test_streaming_avx2(void **state) { matrix_streaming("avx2"); }
static void test_streaming_avx512(void **state) { matrix_streaming("avx512"); }

/* ---------------------------------------------------------------- dispatch */

static void test_dispatch(void **state)
{
    const char *want = "scalar";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"))
        want = "avx2";
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        want = "avx512";
    assert_int_equal(sta_reduce_force_isa("auto"), 1);
    assert_string_equal(sta_reduce_isa(), want);

    assert_int_equal(sta_reduce_force_isa("scalar"), 1);
    assert_string_equal(sta_reduce_isa(), "scalar");
    assert_int_equal(sta_reduce_force_isa("sse9"), 0);       /* unknown: nothing changes */
    assert_string_equal(sta_reduce_isa(), "scalar");
    assert_int_equal(sta_reduce_force_isa(NULL), 1);
    assert_string_equal(sta_reduce_isa(), want);

    size_t old = sta_reduce_nt_min_bytes_set(12345);
    assert_int_equal(sta_reduce_nt_min_bytes(), 12345);
    assert_int_equal(sta_reduce_nt_min_bytes_set(old), 12345);
}

/* The streaming copy equals memcpy at every length and both alignments, and writes no byte past. */
static void test_copy_stream(void **state)
{
    enum { MAXLEN = 4099, SLACK = 64 };
    unsigned char *src = malloc(MAXLEN + SLACK), *dst = malloc(MAXLEN + 2 * SLACK);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < MAXLEN + SLACK; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    static const size_t lens[] = {0, 1, 15, 16, 31, 32, 33, 100, 1024, 4093, MAXLEN};
    for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
        for (size_t so = 0; so < 17; so += 3) {
            for (size_t d = 0; d < 17; d += 4) {
                memset(dst, 0xEE, MAXLEN + 2 * SLACK);
                sta_copy_stream(dst + SLACK + d, src + so, lens[l]);
                if (lens[l] > 0)
                    assert_memory_equal(dst + SLACK + d, src + so, lens[l]);
                for (size_t i = 0; i < SLACK + d; i++)
                    assert_int_equal(dst[i], 0xEE);
                for (size_t i = SLACK + d + lens[l]; i < MAXLEN + 2 * SLACK; i++)
                    assert_int_equal(dst[i], 0xEE);
            }
        }
    }
    free(src);
    free(dst);
}

/* Forced streaming stores give the bits of the cached path at any size and alignment. */
static void test_reduce_n_stream(void **state)
{
    enum { N = 1000 };
    float *a = malloc((N + 1) * sizeof(float)), *b = malloc((N + 1) * sizeof(float));
    float *want = malloc((N + 1) * sizeof(float)), *got = malloc((N + 1) * sizeof(float));
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(want);
    assert_non_null(got);
    for (int i = 0; i <= N; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = 3.0f - (float)i;
    }
    static const size_t lens[] = {1, 7, 16, 17, 257, N};
    for (size_t c = 0; c < sizeof(lens) / sizeof(lens[0]); c++) {
        for (int shift = 0; shift < 2; shift++) {
            const void *srcs[2] = {a + shift, b};
            sta_reduce_n(want + shift, srcs, 2, lens[c], STRATA_FP32, STRATA_SUM);
            sta_reduce_n_stream(got + shift, srcs, 2, lens[c], STRATA_FP32, STRATA_SUM);
            assert_memory_equal(got + shift, want + shift, lens[c] * sizeof(float));
        }
    }
    free(a);
    free(b);
    free(want);
    free(got);
}

/* Bad arguments write nothing (release builds; debug builds assert instead). */
static void test_bad_args(void **state)
{
#ifdef NDEBUG
    uint32_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, d[4] = {9, 9, 9, 9};
    const void *srcs[2] = {a, b};
    sta_reduce_n(d, srcs, 2, 4, STRATA_DTYPE_COUNT, STRATA_SUM);
    sta_reduce_n(d, srcs, 2, 4, STRATA_UINT32, STRATA_OP_COUNT);
    sta_reduce_n(d, srcs, 0, 4, STRATA_UINT32, STRATA_SUM);
    sta_reduce_n(d, NULL, 2, 4, STRATA_UINT32, STRATA_SUM);
    for (int i = 0; i < 4; i++)
        assert_int_equal(d[i], 9);
    sta_reduce_avg_finish(d, 4, STRATA_UINT32, 0);
    sta_reduce_avg_finish(d, 4, STRATA_DTYPE_COUNT, 2);
    for (int i = 0; i < 4; i++)
        assert_int_equal(d[i], 9);
    sta_reduce(d, a, b, 4, STRATA_UINT32, STRATA_SUM);
    assert_int_equal(d[3], 12);
#else
    skip();
#endif
}

/* ---------------------------------------------------------------- average */

/* The reference average step for one element (bits in, bits out). */
static uint64_t ref_avg(strata_dtype_t dt, uint64_t b, int n)
{
    if (n == 1)
        return b;                          /* the contract: nothing changes */
    switch (dt) {
    case STRATA_INT8: return (uint8_t)(int8_t)((int8_t)b / n);
    case STRATA_UINT8: return (uint8_t)(b / (unsigned)n);
    case STRATA_INT32: return (uint32_t)((int32_t)b / n);
    case STRATA_UINT32: return (uint32_t)b / (uint32_t)n;
    case STRATA_INT64: return (uint64_t)((int64_t)b / n);
    case STRATA_UINT64: return b / (uint64_t)n;
    case STRATA_FP64: return bits_f64(f64_of(b) / (double)n);
    default: return ref_encode(dt, ref_decode(dt, b) / (float)n);
    }
}

/* sta_reduce_avg_finish of one family against ref_avg: every dtype, several counts and
 * divisors, aligned and misaligned by a byte, guard bytes around the buffer untouched. */
static void avg_matrix(const char *fam)
{
    static const int divisors[] = {1, 2, 3, 7, 8, 255, 1000, 65537, 2147483647};
    static const size_t avg_counts[] = {0, 1, 7, 33, 1037};
    uint64_t rng = 0x1234567887654321ull;

    if (!force_or_skip(fam))
        skip();
    for (int dt = 0; dt < STRATA_DTYPE_COUNT; dt++) {
        size_t es = esize(dt);
        for (size_t ci = 0; ci < sizeof(avg_counts) / sizeof(avg_counts[0]); ci++) {
            for (size_t di = 0; di < sizeof(divisors) / sizeof(divisors[0]); di++) {
                for (size_t off = 0; off < 2; off++) {
                    size_t count = avg_counts[ci], bytes = count * es;
                    uint8_t *raw = malloc(bytes + 2 * GUARD), *orig = malloc(bytes + 2 * GUARD);
                    assert_non_null(raw);
                    assert_non_null(orig);
                    memset(raw, 0xa5, bytes + 2 * GUARD);
                    uint8_t *buf = raw + GUARD + off;
                    for (size_t i = 0; i < count; i++)
                        st(buf, i, es, gen_elem(dt, &rng));
                    memcpy(orig, raw, bytes + 2 * GUARD);
                    sta_reduce_avg_finish(buf, count, dt, divisors[di]);
                    for (size_t i = 0; i < count; i++) {
                        uint64_t in = ld(orig + GUARD + off, i, es), got = ld(buf, i, es);
                        uint64_t want = ref_avg(dt, in, divisors[di]);
                        int ok = divisors[di] == 1 ? got == want : elem_ok(dt, got, want);
                        if (!ok)
                            fail_msg("%s avg %s / %d, count %zu, element %zu: 0x%llx -> "
                                     "0x%llx, want 0x%llx", fam, strata_dtype_name(dt),
                                     divisors[di], count, i, (unsigned long long)in,
                                     (unsigned long long)got, (unsigned long long)want);
                    }
                    assert_memory_equal(raw, orig, GUARD + off);
                    assert_memory_equal(buf + bytes, orig + GUARD + off + bytes, GUARD - off);
                    free(raw);
                    free(orig);
                }
            }
        }
    }
    sta_reduce_force_isa(NULL);
}

static void test_avg_scalar(void **state) { avg_matrix("scalar"); }
static void test_avg_avx2(void **state) { avg_matrix("avx2"); }
static void test_avg_avx512(void **state) { avg_matrix("avx512"); }

/* ---------------------------------------------------------------- threads */

enum { RACE_N = 1037, RACE_ITERS = 300 };

typedef struct race {
    const float *a, *b, *want;
    int bad;
} race_t;

static void *race_worker(void *arg)
{
    race_t *r = arg;
    float out[RACE_N];
    for (int it = 0; it < RACE_ITERS; it++) {
        sta_reduce(out, r->a, r->b, RACE_N, STRATA_FP32, STRATA_SUM);
        if (memcmp(out, r->want, sizeof(out)) != 0)
            r->bad++;
    }
    return NULL;
}

/* Reductions on two threads while the main thread switches families: each call runs with one
 * family and every family gives the same bits. */
static void test_threads_switch(void **state)
{
    static float a[RACE_N], b[RACE_N], want[RACE_N];
    for (int i = 0; i < RACE_N; i++) {
        a[i] = (float)i * 0.37f;
        b[i] = (float)(RACE_N - i) * 1.13f;
        want[i] = a[i] + b[i];
    }
    race_t r[2] = {{a, b, want, 0}, {a, b, want, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, race_worker, &r[i]), 0);
    for (int it = 0; it < 3000; it++)
        sta_reduce_force_isa(families[it % 3]);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    sta_reduce_force_isa(NULL);
    assert_int_equal(r[0].bad + r[1].bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch),
        cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_copy_stream),
        cmocka_unit_test(test_reduce_n_stream),
        cmocka_unit_test(test_matrix_scalar),
        cmocka_unit_test(test_matrix_avx2),
        cmocka_unit_test(test_matrix_avx512),
        cmocka_unit_test(test_streaming_scalar),
        cmocka_unit_test(test_streaming_avx2),
        cmocka_unit_test(test_streaming_avx512),
        cmocka_unit_test(test_avg_scalar),
        cmocka_unit_test(test_avg_avx2),
        cmocka_unit_test(test_avg_avx512),
        cmocka_unit_test(test_threads_switch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
