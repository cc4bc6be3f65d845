/*
 * fp16/bf16 conversions and special floating-point values in the reduction kernels.
 *
 * Conversions: decode checked for all 65536 patterns against a formula; encode checked against
 * a nearest-value search over every finite fp16/bf16 (written independently of the bit tricks
 * of the library) at every midpoint between neighbours, just either side of it, and at a
 * stride over all fp32 patterns; fp16 encode also against the F16C instruction where present.
 * Kernels: NaN propagation, -0 < +0, +-Inf, subnormals, overflow and ties on every family,
 * and "accumulate in fp32, round once" for fp16/bf16; integer wrap-around and signed/unsigned
 * min/max on every family; named cases of the average's final division.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <immintrin.h>

#include "algos/reduce.h"

static const char *const families[] = {"scalar", "avx2", "avx512"};
#define NFAM (sizeof(families) / sizeof(families[0]))

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---------------------------------------------------------------- decode */

/* The value of an fp16 pattern from the format's definition, in double. */
static double fp16_value(uint16_t h)
{
    int exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    double v = exp == 0 ? ldexp(frac, -24) : ldexp(1024 + frac, exp - 25);
    return (h & 0x8000) ? -v : v;
}

static void test_fp16_decode_all(void **state)
{
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = sta_fp16_decode((uint16_t)h);
        int exp = (h >> 10) & 0x1f;
        if (exp == 0x1f && (h & 0x3ff)) {
            assert_true(isnan(f));
            assert_true(f32_bits(f) & 0x00400000);                 /* quiet */
            assert_int_equal(sta_fp16_encode(f), h | 0x0200);      /* payload kept, quiet */
        } else if (exp == 0x1f) {
            assert_true(isinf(f) && !!signbit(f) == !!(h & 0x8000));
            assert_int_equal(sta_fp16_encode(f), h);
        } else {
            assert_true((double)f == fp16_value((uint16_t)h));
            assert_true(!!signbit(f) == !!(h & 0x8000));           /* -0 stays -0 */
            assert_int_equal(sta_fp16_encode(f), h);
        }
    }
    assert_true(sta_fp16_decode(0x3c00) == 1.0f);
    assert_true(sta_fp16_decode(0x0001) == 0x1p-24f);
    assert_true(sta_fp16_decode(0x03ff) == 0x3ffp-24f);
    assert_true(sta_fp16_decode(0x0400) == 0x1p-14f);
    assert_true(sta_fp16_decode(0x7bff) == 65504.0f);
    assert_true(sta_fp16_decode(0xc000) == -2.0f);
}

static void test_bf16_decode_all(void **state)
{
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = sta_bf16_decode((uint16_t)h);
        int nan = (h & 0x7fff) > 0x7f80;
        if (nan) {
            assert_true(isnan(f));
            assert_int_equal(f32_bits(f), (h << 16) | 0x00400000);
            assert_int_equal(sta_bf16_encode(f), h | 0x0040);
        } else {
            assert_int_equal(f32_bits(f), h << 16);
            assert_int_equal(sta_bf16_encode(f), h);
        }
    }
}

/* ---------------------------------------------------------------- encode */

/* Nearest-value reference: vals[h] is the value of the non-negative pattern h for h <= top,
 * and vals[top + 1] the first value past the largest finite (2^16 or 2^128: the value Inf
 * stands for when rounding). */
typedef struct ladder {
    double vals[0x7f81];
    uint16_t top;          /* largest finite pattern: 0x7bff (fp16), 0x7f7f (bf16) */
    uint16_t inf;
} ladder_t;

static ladder_t fp16_ladder, bf16_ladder;

static void ladders_init(void)
{
    fp16_ladder.top = 0x7bff;
    fp16_ladder.inf = 0x7c00;
    for (uint32_t h = 0; h <= 0x7bff; h++)
        fp16_ladder.vals[h] = fp16_value((uint16_t)h);
    fp16_ladder.vals[0x7c00] = 65536.0;
    bf16_ladder.top = 0x7f7f;
    bf16_ladder.inf = 0x7f80;
    for (uint32_t h = 0; h <= 0x7f7f; h++)
        bf16_ladder.vals[h] = (double)f32_of(h << 16);
    bf16_ladder.vals[0x7f80] = ldexp(1.0, 128);
}

/* Round |f| to the ladder by search: the last rung <= |f| or the next one, whichever is
 * nearer, the even pattern on a tie; past the last rung the answer is Inf. */
static uint16_t ladder_round(const ladder_t *l, float f)
{
    double a = fabs((double)f);
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    if (a >= l->vals[l->inf])
        return sign | l->inf;
    uint32_t lo = 0, hi = l->inf;            /* vals[lo] <= a < vals[hi] */
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (l->vals[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dlo = a - l->vals[lo], dhi = l->vals[hi] - a;
    uint32_t r = dlo < dhi ? lo : dhi < dlo ? hi : (lo & 1) ? hi : lo;
    return sign | (uint16_t)r;
}

static void check_encode(const ladder_t *l, uint16_t (*enc)(float), float f)
{
    uint16_t got = enc(f), want = ladder_round(l, f);
    if (got != want)
        fail_msg("encode(%a = 0x%08x) = 0x%04x, want 0x%04x", (double)f, f32_bits(f), got, want);
}

/* Every midpoint between neighbouring values (the ties), one fp32 ulp either side, each with
 * both signs; then a stride over all non-NaN fp32 patterns. */
static void encode_sweep(const ladder_t *l, uint16_t (*enc)(float))
{
    for (uint32_t h = 0; h <= l->top; h++) {
        float mid = (float)((l->vals[h] + l->vals[h + 1]) / 2);   /* exact in fp32 */
        assert_true((double)mid == (l->vals[h] + l->vals[h + 1]) / 2);
        float probe[] = {mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), (float)l->vals[h]};
        for (size_t i = 0; i < sizeof(probe) / sizeof(probe[0]); i++) {
            check_encode(l, enc, probe[i]);
            check_encode(l, enc, -probe[i]);
        }
    }
    for (uint64_t u = 0; u <= 0xffffffffu; u += 997) {
        float f = f32_of((uint32_t)u);
        if (!isnan(f))
            check_encode(l, enc, f);
    }
}

static void test_fp16_encode(void **state)
{
    encode_sweep(&fp16_ladder, sta_fp16_encode);
    /* Named cases. */
    assert_int_equal(sta_fp16_encode(1.0f + 0x1p-11f), 0x3c00);          /* tie, even below */
    assert_int_equal(sta_fp16_encode(1.0f + 3 * 0x1p-11f), 0x3c02);      /* tie, even above */
    assert_int_equal(sta_fp16_encode(65504.0f), 0x7bff);
    assert_int_equal(sta_fp16_encode(65519.996f), 0x7bff);
    assert_int_equal(sta_fp16_encode(65520.0f), 0x7c00);                 /* tie -> Inf */
    assert_int_equal(sta_fp16_encode(-1e10f), 0xfc00);
    assert_int_equal(sta_fp16_encode(0x1p-25f), 0x0000);                 /* tie -> 0 */
    assert_int_equal(sta_fp16_encode(-0x1p-25f), 0x8000);
    assert_int_equal(sta_fp16_encode(0x1.000002p-25f), 0x0001);
    assert_int_equal(sta_fp16_encode(0x3p-25f), 0x0002);                 /* 1.5 ulp -> 2 */
    assert_int_equal(sta_fp16_encode(0x7ffp-25f), 0x0400);               /* up to min normal */
    assert_int_equal(sta_fp16_encode(0x1p-149f), 0x0000);
    assert_int_equal(sta_fp16_encode(-0.0f), 0x8000);
    assert_int_equal(sta_fp16_encode(f32_of(0x7f800001)), 0x7e00);       /* sNaN -> quiet */
    assert_int_equal(sta_fp16_encode(f32_of(0xffc02000)), 0xfe01);       /* sign, payload */
}

static void test_bf16_encode(void **state)
{
    encode_sweep(&bf16_ladder, sta_bf16_encode);
    assert_int_equal(sta_bf16_encode(f32_of(0x3f808000)), 0x3f80);       /* tie, even below */
    assert_int_equal(sta_bf16_encode(f32_of(0x3f818000)), 0x3f82);       /* tie, even above */
    assert_int_equal(sta_bf16_encode(f32_of(0x3f808001)), 0x3f81);
    assert_int_equal(sta_bf16_encode(f32_of(0x7f7f7fff)), 0x7f7f);
    assert_int_equal(sta_bf16_encode(f32_of(0x7f7f8000)), 0x7f80);       /* tie -> Inf */
    assert_int_equal(sta_bf16_encode(f32_of(0x7f7fffff)), 0x7f80);       /* FLT_MAX -> Inf */
    assert_int_equal(sta_bf16_encode(f32_of(0x00008000)), 0x0000);       /* subnormal tie */
    assert_int_equal(sta_bf16_encode(f32_of(0x00018000)), 0x0002);
    assert_int_equal(sta_bf16_encode(f32_of(0x80008001)), 0x8001);
    assert_int_equal(sta_bf16_encode(f32_of(0x007fffff)), 0x0080);       /* to min normal */
    assert_int_equal(sta_bf16_encode(f32_of(0x7f800001)), 0x7fc0);       /* sNaN -> quiet */
    assert_int_equal(sta_bf16_encode(f32_of(0xff812345)), 0xffc1);
}

__attribute__((target("f16c"))) static uint16_t fp16_encode_f16c(float f)
{
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

/* The library's fp16 encode agrees with the hardware on every non-NaN pattern of a stride. */
static void test_fp16_encode_vs_f16c(void **state)
{
    if (!__builtin_cpu_supports("f16c"))
        skip();
    for (uint64_t u = 0; u <= 0xffffffffu; u += 251) {
        float f = f32_of((uint32_t)u);
        if (isnan(f))
            continue;
        uint16_t got = sta_fp16_encode(f), want = fp16_encode_f16c(f);
        if (got != want)
            fail_msg("encode(0x%08x) = 0x%04x, F16C 0x%04x", (uint32_t)u, got, want);
    }
}

/* ---------------------------------------------------------------- kernels */

#define NAN_Q UINT64_MAX     /* expected result: any NaN (quiet, for the 16-bit types) */

typedef struct special {
    strata_dtype_t dt;
    strata_op_t op;
    int nsrc;
    uint64_t in[3];
    uint64_t want;           /* exact bits, or NAN_Q */
} special_t;

static const special_t specials[] = {
    /* fp32: -0 < +0 in both orders; NaN (quiet or signalling) in any position. */
    {STRATA_FP32, STRATA_MIN, 2, {0x80000000, 0x00000000}, 0x80000000},
    {STRATA_FP32, STRATA_MIN, 2, {0x00000000, 0x80000000}, 0x80000000},
    {STRATA_FP32, STRATA_MAX, 2, {0x80000000, 0x00000000}, 0x00000000},
    {STRATA_FP32, STRATA_MAX, 2, {0x00000000, 0x80000000}, 0x00000000},
    {STRATA_FP32, STRATA_MIN, 2, {0x80000000, 0x80000000}, 0x80000000},
    {STRATA_FP32, STRATA_MAX, 2, {0x80000000, 0x80000000}, 0x80000000},
    {STRATA_FP32, STRATA_MIN, 2, {0x7fc00000, 0x3f800000}, NAN_Q},
    {STRATA_FP32, STRATA_MIN, 2, {0x3f800000, 0x7fc00000}, NAN_Q},
    {STRATA_FP32, STRATA_MAX, 2, {0x7fc00000, 0x3f800000}, NAN_Q},
    {STRATA_FP32, STRATA_MAX, 2, {0x3f800000, 0xffc00000}, NAN_Q},
    {STRATA_FP32, STRATA_MIN, 2, {0x7f800001, 0xff800000}, NAN_Q},
    {STRATA_FP32, STRATA_MAX, 2, {0x7f800000, 0x7f800001}, NAN_Q},
    {STRATA_FP32, STRATA_MIN, 3, {0x3f800000, 0x7fc00000, 0xff800000}, NAN_Q},
    {STRATA_FP32, STRATA_MAX, 3, {0x7fc00000, 0x40000000, 0x3f800000}, NAN_Q},
    {STRATA_FP32, STRATA_MIN, 2, {0xff800000, 0x3f800000}, 0xff800000},
    {STRATA_FP32, STRATA_MAX, 2, {0x7f800000, 0x3f800000}, 0x7f800000},
    {STRATA_FP32, STRATA_MIN, 2, {0x00000001, 0x00000000}, 0x00000000},
    {STRATA_FP32, STRATA_MIN, 2, {0x80000001, 0x80000000}, 0x80000001},
    {STRATA_FP32, STRATA_MAX, 2, {0x00000001, 0x00000002}, 0x00000002},
    /* fp32 arithmetic: Inf, overflow, subnormals kept, ties, signed zeros. */
    {STRATA_FP32, STRATA_SUM, 2, {0x7f800000, 0xff800000}, NAN_Q},
    {STRATA_FP32, STRATA_AVG, 2, {0x7f800000, 0xff800000}, NAN_Q},
    {STRATA_FP32, STRATA_SUM, 2, {0x7f800000, 0x3f800000}, 0x7f800000},
    {STRATA_FP32, STRATA_SUM, 2, {0x7f7fffff, 0x7f7fffff}, 0x7f800000},
    {STRATA_FP32, STRATA_SUM, 2, {0x00000001, 0x00000001}, 0x00000002},
    {STRATA_FP32, STRATA_SUM, 2, {0x80000000, 0x80000000}, 0x80000000},
    {STRATA_FP32, STRATA_SUM, 2, {0x80000000, 0x00000000}, 0x00000000},
    {STRATA_FP32, STRATA_SUM, 2, {0x3f800000, 0x7f800001}, NAN_Q},
    {STRATA_FP32, STRATA_SUM, 3, {0x3f800000, 0x33800000, 0x33800000}, 0x3f800000},
    {STRATA_FP32, STRATA_PROD, 2, {0x00000000, 0x7f800000}, NAN_Q},
    {STRATA_FP32, STRATA_PROD, 2, {0x80000000, 0x3f800000}, 0x80000000},
    {STRATA_FP32, STRATA_PROD, 2, {0xbf800000, 0x80000000}, 0x00000000},
    {STRATA_FP32, STRATA_PROD, 2, {0x00000002, 0x3f000000}, 0x00000001},
    {STRATA_FP32, STRATA_PROD, 2, {0x00000001, 0x3f000000}, 0x00000000},   /* tie -> 0 */
    {STRATA_FP32, STRATA_PROD, 2, {0x00000003, 0x3f000000}, 0x00000002},   /* tie -> even */
    {STRATA_FP32, STRATA_PROD, 2, {0x7f7fffff, 0x40000000}, 0x7f800000},
    {STRATA_FP32, STRATA_SUM, 1, {0x7f800001}, 0x7f800001},                 /* a copy */
    /* fp64: the same rules. */
    {STRATA_FP64, STRATA_MIN, 2, {0x0ull, 0x8000000000000000ull}, 0x8000000000000000ull},
    {STRATA_FP64, STRATA_MAX, 2, {0x8000000000000000ull, 0x0ull}, 0x0ull},
    {STRATA_FP64, STRATA_MIN, 2, {0x3ff0000000000000ull, 0x7ff8000000000000ull}, NAN_Q},
    {STRATA_FP64, STRATA_MAX, 2, {0x7ff0000000000001ull, 0x3ff0000000000000ull}, NAN_Q},
    {STRATA_FP64, STRATA_MAX, 3, {0x0ull, 0x7ff8000000000000ull, 0x1ull}, NAN_Q},
    {STRATA_FP64, STRATA_SUM, 2, {0x7ff0000000000000ull, 0xfff0000000000000ull}, NAN_Q},
    {STRATA_FP64, STRATA_SUM, 2, {0x1ull, 0x1ull}, 0x2ull},
    {STRATA_FP64, STRATA_SUM, 2, {0x7fefffffffffffffull, 0x7fefffffffffffffull},
     0x7ff0000000000000ull},
    {STRATA_FP64, STRATA_PROD, 2, {0x3ull, 0x3fe0000000000000ull}, 0x2ull},
    {STRATA_FP64, STRATA_PROD, 2, {0x8000000000000000ull, 0x3ff0000000000000ull},
     0x8000000000000000ull},
    /* fp16: ties to even, rounded once after an fp32 sum of all inputs. */
    {STRATA_FP16, STRATA_SUM, 2, {0x3c00, 0x1000}, 0x3c00},           /* 1 + 2^-11: tie */
    {STRATA_FP16, STRATA_SUM, 2, {0x3c01, 0x1000}, 0x3c02},
    {STRATA_FP16, STRATA_SUM, 3, {0x3c00, 0x1000, 0x1000}, 0x3c01},   /* once, not twice */
    {STRATA_FP16, STRATA_SUM, 3, {0x1000, 0x1000, 0x3c00}, 0x3c01},
    {STRATA_FP16, STRATA_SUM, 2, {0x7bff, 0x4c00}, 0x7c00},           /* 65520: tie -> Inf */
    {STRATA_FP16, STRATA_SUM, 2, {0x7bff, 0x4800}, 0x7bff},           /* 65512 */
    {STRATA_FP16, STRATA_PROD, 2, {0x5c00, 0x5c00}, 0x7c00},          /* 256 * 256 */
    {STRATA_FP16, STRATA_SUM, 2, {0x0001, 0x0001}, 0x0002},           /* subnormals */
    {STRATA_FP16, STRATA_SUM, 2, {0x03ff, 0x0001}, 0x0400},
    {STRATA_FP16, STRATA_PROD, 2, {0x0001, 0x3800}, 0x0000},          /* 2^-25: tie -> 0 */
    {STRATA_FP16, STRATA_PROD, 2, {0x0003, 0x3800}, 0x0002},          /* 1.5 ulp -> 2 */
    {STRATA_FP16, STRATA_PROD, 2, {0x8001, 0x3800}, 0x8000},
    {STRATA_FP16, STRATA_SUM, 2, {0x8000, 0x8000}, 0x8000},
    {STRATA_FP16, STRATA_SUM, 2, {0x8000, 0x0000}, 0x0000},
    {STRATA_FP16, STRATA_SUM, 2, {0x7c00, 0xfc00}, NAN_Q},
    {STRATA_FP16, STRATA_SUM, 2, {0x7c00, 0x3c00}, 0x7c00},
    {STRATA_FP16, STRATA_SUM, 2, {0x7e00, 0x3c00}, NAN_Q},
    {STRATA_FP16, STRATA_SUM, 2, {0x3c00, 0x7c01}, NAN_Q},
    {STRATA_FP16, STRATA_SUM, 1, {0x7c01}, NAN_Q},                    /* copy quiets */
    {STRATA_FP16, STRATA_MIN, 2, {0x0000, 0x8000}, 0x8000},
    {STRATA_FP16, STRATA_MAX, 2, {0x8000, 0x0000}, 0x0000},
    {STRATA_FP16, STRATA_MIN, 2, {0x7e00, 0x3c00}, NAN_Q},
    {STRATA_FP16, STRATA_MAX, 2, {0x3c00, 0x7c01}, NAN_Q},
    {STRATA_FP16, STRATA_MIN, 2, {0xfc00, 0x0001}, 0xfc00},
    {STRATA_FP16, STRATA_MAX, 3, {0x0001, 0x0002, 0x8003}, 0x0002},
    /* bf16: the same, 8 bits of precision and the fp32 range. */
    {STRATA_BF16, STRATA_SUM, 2, {0x3f80, 0x3b80}, 0x3f80},           /* 1 + 2^-8: tie */
    {STRATA_BF16, STRATA_SUM, 2, {0x3f81, 0x3b80}, 0x3f82},
    {STRATA_BF16, STRATA_SUM, 3, {0x3f80, 0x3b80, 0x3b80}, 0x3f81},   /* once, not twice */
    {STRATA_BF16, STRATA_SUM, 2, {0x7f7f, 0x7b00}, 0x7f80},           /* max + half ulp */
    {STRATA_BF16, STRATA_SUM, 2, {0x7f7f, 0x7a80}, 0x7f7f},
    {STRATA_BF16, STRATA_SUM, 2, {0x7f7f, 0x7f7f}, 0x7f80},
    {STRATA_BF16, STRATA_SUM, 2, {0x0001, 0x0001}, 0x0002},           /* subnormals */
    {STRATA_BF16, STRATA_PROD, 2, {0x0001, 0x3f00}, 0x0000},          /* tie -> 0 */
    {STRATA_BF16, STRATA_PROD, 2, {0x0003, 0x3f00}, 0x0002},
    {STRATA_BF16, STRATA_SUM, 2, {0x8000, 0x8000}, 0x8000},
    {STRATA_BF16, STRATA_SUM, 2, {0x8000, 0x0000}, 0x0000},
    {STRATA_BF16, STRATA_SUM, 2, {0x7f80, 0xff80}, NAN_Q},
    {STRATA_BF16, STRATA_SUM, 2, {0xff80, 0x3f80}, 0xff80},
    {STRATA_BF16, STRATA_SUM, 2, {0x7fc0, 0x3f80}, NAN_Q},
    {STRATA_BF16, STRATA_PROD, 1, {0x7f81}, NAN_Q},                   /* copy quiets */
    {STRATA_BF16, STRATA_MIN, 2, {0x0000, 0x8000}, 0x8000},
    {STRATA_BF16, STRATA_MAX, 2, {0x8000, 0x0000}, 0x0000},
    {STRATA_BF16, STRATA_MIN, 2, {0x3f80, 0x7f81}, NAN_Q},
    {STRATA_BF16, STRATA_MAX, 3, {0x3f80, 0xffc0, 0x4000}, NAN_Q},
};

static int special_ok(strata_dtype_t dt, uint64_t got, uint64_t want)
{
    if (want != NAN_Q)
        return got == want;
    switch (dt) {
    case STRATA_FP16: return (got & 0x7c00) == 0x7c00 && (got & 0x0200);
    case STRATA_BF16: return (got & 0x7f80) == 0x7f80 && (got & 0x0040);
    case STRATA_FP32: return (got & 0x7fffffff) > 0x7f800000;
    default: return (got & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    }
}

/* Each case replicated over N elements (vector steps, single vectors and the tail alike) on
 * every family the CPU runs. */
static void test_special_values(void **state)
{
    enum { N = 103 };
    static uint8_t src[3][N * 8], dst[N * 8];

    for (size_t f = 0; f < NFAM; f++) {
        if (!sta_reduce_force_isa(families[f]))
            continue;
        for (size_t c = 0; c < sizeof(specials) / sizeof(specials[0]); c++) {
            const special_t *s = &specials[c];
            size_t es = strata_dtype_size(s->dt);
            const void *srcs[3] = {src[0], src[1], src[2]};
            for (int k = 0; k < s->nsrc; k++) {
                for (size_t i = 0; i < N; i++)
                    memcpy(src[k] + i * es, &s->in[k], es);
            }
            memset(dst, 0x5a, sizeof(dst));
            sta_reduce_n(dst, srcs, s->nsrc, N, s->dt, s->op);
            for (size_t i = 0; i < N; i++) {
                uint64_t got = 0;
                memcpy(&got, dst + i * es, es);
                if (!special_ok(s->dt, got, s->want))
                    fail_msg("%s case %zu (%s %s): element %zu = 0x%llx, want 0x%llx",
                             families[f], c, strata_dtype_name(s->dt), strata_op_name(s->op), i,
                             (unsigned long long)got, (unsigned long long)s->want);
            }
        }
    }
    sta_reduce_force_isa(NULL);
}

/* Every fp16/bf16 pattern through a one-source reduction (decode + encode of each family):
 * the pattern comes back, NaN made quiet with its payload. */
static void test_half_copy_all(void **state)
{
    static uint16_t in[65536], out[65536];
    for (uint32_t h = 0; h <= 0xffff; h++)
        in[h] = (uint16_t)h;
    const void *srcs[1] = {in};

    for (size_t f = 0; f < NFAM; f++) {
        if (!sta_reduce_force_isa(families[f]))
            continue;
        sta_reduce_n(out, srcs, 1, 65536, STRATA_FP16, STRATA_MAX);
        for (uint32_t h = 0; h <= 0xffff; h++) {
            int nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
            if (out[h] != (nan ? (h | 0x0200) : h))
                fail_msg("%s fp16 0x%04x -> 0x%04x", families[f], h, out[h]);
        }
        sta_reduce_n(out, srcs, 1, 65536, STRATA_BF16, STRATA_MIN);
        for (uint32_t h = 0; h <= 0xffff; h++) {
            int nan = (h & 0x7fff) > 0x7f80;
            if (out[h] != (nan ? (h | 0x0040) : h))
                fail_msg("%s bf16 0x%04x -> 0x%04x", families[f], h, out[h]);
        }
    }
    sta_reduce_force_isa(NULL);
}

/* Element i of width es, zero-extended (little-endian), and its store. */
static uint64_t ld(const void *p, size_t i, size_t es)
{
    uint64_t v = 0;
    memcpy(&v, (const char *)p + i * es, es);
    return v;
}

static void st(void *p, size_t i, size_t es, uint64_t v)
{
    memcpy((char *)p + i * es, &v, es);
}

/* ---------------------------------------------------------------- integers */

/* One integer case on every family, the value replicated over 100 elements (vector body and
 * tail alike). Values are given as int64 and truncated to the width. */
static void int_case(strata_dtype_t dt, strata_op_t op, int nsrc, const int64_t *in, int64_t want)
{
    enum { N = 100 };
    size_t es = strata_dtype_size(dt);
    uint8_t src[8][N * 8], dst[N * 8];
    const void *srcs[8];

    for (int k = 0; k < nsrc; k++) {
        for (size_t i = 0; i < N; i++)
            st(src[k], i, es, (uint64_t)in[k]);
        srcs[k] = src[k];
    }
    uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
    for (size_t f = 0; f < NFAM; f++) {
        if (!sta_reduce_force_isa(families[f]))
            continue;
        memset(dst, 0, sizeof(dst));
        sta_reduce_n(dst, srcs, nsrc, N, dt, op);
        for (size_t i = 0; i < N; i++) {
            if (ld(dst, i, es) != ((uint64_t)want & mask))
                fail_msg("%s %s/%s: element %zu is 0x%llx, want 0x%llx", families[f],
                         strata_dtype_name(dt), strata_op_name(op), i,
                         (unsigned long long)ld(dst, i, es),
                         (unsigned long long)((uint64_t)want & mask));
        }
    }
    sta_reduce_force_isa(NULL);
}

#define I2(a, b) ((const int64_t[]){(a), (b)})

static void test_int_wrap(void **state)
{
    int_case(STRATA_INT8, STRATA_SUM, 2, I2(127, 1), -128);
    int_case(STRATA_UINT8, STRATA_SUM, 2, I2(255, 1), 0);
    int_case(STRATA_INT8, STRATA_PROD, 2, I2(16, 16), 0);
    int_case(STRATA_INT8, STRATA_PROD, 2, I2(-128, -1), -128);
    int_case(STRATA_UINT8, STRATA_PROD, 2, I2(15, 17), 255);
    int_case(STRATA_UINT8, STRATA_PROD, 2, I2(255, 255), 1);
    int_case(STRATA_INT32, STRATA_SUM, 2, I2(INT32_MAX, 1), INT32_MIN);
    int_case(STRATA_INT32, STRATA_PROD, 2, I2(65536, 65536), 0);
    int_case(STRATA_INT32, STRATA_PROD, 2, I2(INT32_MIN, -1), INT32_MIN);
    int_case(STRATA_UINT32, STRATA_PROD, 2, I2(0xffffffff, 0xffffffff), 1);
    int_case(STRATA_INT64, STRATA_SUM, 2, I2(INT64_MAX, 1), INT64_MIN);
    int_case(STRATA_INT64, STRATA_PROD, 2, I2(INT64_MIN, -1), INT64_MIN);
    int_case(STRATA_INT64, STRATA_PROD, 2, I2(0x100000001ll, 0x100000001ll), 0x200000001ll);
    int_case(STRATA_UINT64, STRATA_PROD, 2, I2(-1, -1), 1);                 /* (2^64-1)^2 */
    int_case(STRATA_UINT64, STRATA_PROD, 2, I2(0x123456789abcdefll, 0xfedcba987654321ll),
             (int64_t)(0x123456789abcdefull * 0xfedcba987654321ull));
    int_case(STRATA_INT32, STRATA_AVG, 2, I2(INT32_MAX, INT32_MAX), -2);   /* AVG = SUM */
    int_case(STRATA_UINT8, STRATA_SUM, 8, (const int64_t[]){200, 200, 200, 200, 200, 200, 200,
                                                            200}, (200 * 8) % 256);
}

static void test_int_minmax(void **state)
{
    int_case(STRATA_INT8, STRATA_MIN, 2, I2(-1, 1), -1);
    int_case(STRATA_UINT8, STRATA_MIN, 2, I2(255, 1), 1);
    int_case(STRATA_INT8, STRATA_MAX, 2, I2(-128, 127), 127);
    int_case(STRATA_UINT8, STRATA_MAX, 2, I2(128, 127), 128);
    int_case(STRATA_INT32, STRATA_MIN, 2, I2(INT32_MIN, 0), INT32_MIN);
    int_case(STRATA_UINT32, STRATA_MIN, 2, I2(0x80000000, 1), 1);
    int_case(STRATA_INT64, STRATA_MIN, 2, I2(INT64_MIN, 0), INT64_MIN);
    int_case(STRATA_INT64, STRATA_MAX, 2, I2(-1, -2), -1);
    int_case(STRATA_UINT64, STRATA_MIN, 2, I2(-1, 0), 0);
    int_case(STRATA_UINT64, STRATA_MAX, 2, I2(-1, 0x7fffffffffffffffll), -1);
    int_case(STRATA_UINT64, STRATA_MAX, 2, I2(0x8000000000000000ll, 0x7fffffffffffffffll),
             (int64_t)0x8000000000000000ull);
    int_case(STRATA_INT64, STRATA_MIN, 3, (const int64_t[]){5, -7, 3}, -7);
}

/* ---------------------------------------------------------------- average */

static void test_avg_int(void **state)
{
    int8_t i8[] = {-7, 7, -128, 127, -1, 0};
    sta_reduce_avg_finish(i8, 6, STRATA_INT8, 2);
    assert_memory_equal(i8, ((int8_t[]){-3, 3, -64, 63, 0, 0}), 6);

    uint8_t u8[] = {255, 7, 2};
    sta_reduce_avg_finish(u8, 3, STRATA_UINT8, 3);
    assert_memory_equal(u8, ((uint8_t[]){85, 2, 0}), 3);

    int32_t i32[] = {INT32_MIN, INT32_MAX, -10, 10};
    sta_reduce_avg_finish(i32, 4, STRATA_INT32, 3);
    assert_memory_equal(i32, ((int32_t[]){INT32_MIN / 3, INT32_MAX / 3, -3, 3}), 16);

    uint32_t u32[] = {0xffffffffu, 5};
    sta_reduce_avg_finish(u32, 2, STRATA_UINT32, 4);
    assert_memory_equal(u32, ((uint32_t[]){0x3fffffffu, 1}), 8);

    int64_t i64[] = {INT64_MIN, -9, 9};
    sta_reduce_avg_finish(i64, 3, STRATA_INT64, 4);
    assert_memory_equal(i64, ((int64_t[]){INT64_MIN / 4, -2, 2}), 24);

    uint64_t u64[] = {UINT64_MAX, 1000};
    sta_reduce_avg_finish(u64, 2, STRATA_UINT64, 1000);
    assert_memory_equal(u64, ((uint64_t[]){UINT64_MAX / 1000, 1}), 16);

    /* nranks 1 changes nothing; a misaligned buffer works. */
    uint8_t raw[1 + 3 * 4];
    int32_t v[3] = {-5, 6, 7};
    memcpy(raw + 1, v, sizeof(v));
    sta_reduce_avg_finish(raw + 1, 3, STRATA_INT32, 1);
    assert_memory_equal(raw + 1, v, sizeof(v));
    sta_reduce_avg_finish(raw + 1, 3, STRATA_INT32, 2);
    memcpy(v, raw + 1, sizeof(v));
    assert_int_equal(v[0], -2);
    assert_int_equal(v[1], 3);
    assert_int_equal(v[2], 3);
}

static void test_avg_float(void **state)
{
    float f32[] = {3.0f, -0.0f, 1.0f, INFINITY, NAN, 0x1p-149f};
    sta_reduce_avg_finish(f32, 6, STRATA_FP32, 2);
    assert_true(f32[0] == 1.5f && f32[2] == 0.5f && f32[3] == INFINITY && isnan(f32[4]));
    assert_true(f32[1] == 0.0f && signbit(f32[1]));
    assert_true(f32[5] == 0.0f);               /* 2^-150 ties to even: 0 */

    /* Division, not a multiply by the reciprocal: 1/3 rounded once. */
    float third = 1.0f;
    sta_reduce_avg_finish(&third, 1, STRATA_FP32, 3);
    volatile float three = 3.0f;
    assert_true(third == 1.0f / three);

    double f64[] = {1.0, -6.0};
    sta_reduce_avg_finish(f64, 2, STRATA_FP64, 3);
    volatile double d3 = 3.0;
    assert_true(f64[0] == 1.0 / d3 && f64[1] == -2.0);

    /* fp16/bf16: via fp32, one rounding. 0x3c01 = 1 + 2^-10; / 3 rounded once. */
    uint16_t h[] = {0x3c01, 0x7c00, 0x8000, 0x0001};
    sta_reduce_avg_finish(h, 4, STRATA_FP16, 3);
    assert_int_equal(h[0], sta_fp16_encode(sta_fp16_decode(0x3c01) / 3.0f));
    assert_int_equal(h[1], 0x7c00);
    assert_int_equal(h[2], 0x8000);
    assert_int_equal(h[3], 0x0000);            /* 2^-24 / 3 rounds to 0 */
    uint16_t bh[] = {0x4040, 0x3f81};          /* 3.0, 1 + 2^-7 */
    sta_reduce_avg_finish(bh, 2, STRATA_BF16, 2);
    assert_int_equal(bh[0], 0x3fc0);           /* 1.5 */
    assert_int_equal(bh[1], 0x3f01);           /* 0.5 + 2^-8: exact */
}

static int setup(void **state)
{
    ladders_init();
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_decode_all),
        cmocka_unit_test(test_bf16_decode_all),
        cmocka_unit_test(test_fp16_encode),
        cmocka_unit_test(test_bf16_encode),
        cmocka_unit_test(test_fp16_encode_vs_f16c),
        cmocka_unit_test(test_special_values),
        cmocka_unit_test(test_half_copy_all),
        cmocka_unit_test(test_int_wrap),
        cmocka_unit_test(test_int_minmax),
        cmocka_unit_test(test_avg_int),
        cmocka_unit_test(test_avg_float),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
