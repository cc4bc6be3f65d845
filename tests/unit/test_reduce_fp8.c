/*
 * fp8 (E4M3, E5M2) conversions and reductions, checked against values computed here from the
 * formats' definitions (sign, exponent, fraction, bias) with ldexp, never with the library's
 * bit arithmetic: decode of all 256 codes; encode of every code's value, of every midpoint
 * between neighbours (ties to even) and just either side of it, of values past the largest
 * finite one (saturation, Inf included), of tiny values and of NaN; a stride over all fp32
 * patterns against a nearest-value search. Kernels: "accumulate in fp32, round once" and
 * saturation on every family, and the AVX2 kernels against the portable ones on random bytes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algos/reduce.h"

typedef struct fmt {
    const char *name;
    strata_dtype_t dt;
    int ebits, mbits, bias;
    int has_inf;                  /* E5M2: S.11111.00 is Inf; E4M3 has none */
    float (*decode)(uint8_t);
    uint8_t (*encode)(float);
} fmt_t;

static const fmt_t fmts[] = {
    {"e4m3", STRATA_FP8_E4M3, 4, 3, 7, 0, sta_fp8_e4m3_decode, sta_fp8_e4m3_encode},
    {"e5m2", STRATA_FP8_E5M2, 5, 2, 15, 1, sta_fp8_e5m2_decode, sta_fp8_e5m2_encode},
};

static int code_is_nan(const fmt_t *f, uint8_t b)
{
    unsigned t = b & 0x7f, emax = (1u << f->ebits) - 1;
    unsigned e = t >> f->mbits, m = t & ((1u << f->mbits) - 1);
    if (f->has_inf)
        return e == emax && m != 0;
    return t == 0x7f;
}

static int code_is_inf(const fmt_t *f, uint8_t b)
{
    unsigned t = b & 0x7f, emax = (1u << f->ebits) - 1;
    return f->has_inf && (t >> f->mbits) == emax && (t & ((1u << f->mbits) - 1)) == 0;
}

/* The value of a finite code from the definition. */
static double code_value(const fmt_t *f, uint8_t b)
{
    unsigned t = b & 0x7f;
    int e = (int)(t >> f->mbits), m = (int)(t & ((1u << f->mbits) - 1));
    double v = e == 0 ? ldexp(m, 1 - f->bias - f->mbits)
                      : ldexp((1 << f->mbits) + m, e - f->bias - f->mbits);
    return (b & 0x80) ? -v : v;
}

/* The largest finite positive code. */
static uint8_t max_code(const fmt_t *f)
{
    return f->has_inf ? 0x7b : 0x7e;
}

static void test_decode_all(void **state)
{
    for (size_t k = 0; k < sizeof(fmts) / sizeof(fmts[0]); k++) {
        const fmt_t *f = &fmts[k];
        for (int b = 0; b < 256; b++) {
            float got = f->decode((uint8_t)b);
            if (code_is_nan(f, (uint8_t)b)) {
                assert_true(isnan(got));
                continue;
            }
            if (code_is_inf(f, (uint8_t)b)) {
                assert_true(isinf(got));
                assert_int_equal(signbit(got) != 0, (b & 0x80) != 0);
                continue;
            }
            double want = code_value(f, (uint8_t)b);
            if ((double)got != want || (signbit(got) != 0) != ((b & 0x80) != 0))
                fail_msg("%s decode 0x%02x: got %.9g want %.9g", f->name, b, got, want);
        }
    }
    assert_true(sta_fp8_e4m3_decode(0x7e) == 448.0f);
    assert_true(sta_fp8_e5m2_decode(0x7b) == 57344.0f);
    assert_true(sta_fp8_e4m3_decode(0x01) == ldexpf(1, -9));
    assert_true(sta_fp8_e5m2_decode(0x01) == ldexpf(1, -16));
}

/* The code nearest to x (finite, |x| <= max), ties to the even code, by search. */
static uint8_t nearest(const fmt_t *f, double x)
{
    uint8_t best = 0;
    double best_d = INFINITY;
    for (int b = 0; b < 128; b++) {
        if (code_is_nan(f, (uint8_t)b) || code_is_inf(f, (uint8_t)b))
            continue;
        double d = fabs(fabs(x) - code_value(f, (uint8_t)b));
        if (d < best_d || (d == best_d && (b & 1) == 0)) {
            best = (uint8_t)b;
            best_d = d;
        }
    }
    return (uint8_t)(best | (signbit(x) ? 0x80 : 0));
}

static unsigned f32_hex(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static void check_encode(const fmt_t *f, float x)
{
    uint8_t got = f->encode(x), want;
    double maxv = code_value(f, max_code(f));

    if (isnan(x)) {
        if (!code_is_nan(f, got))
            fail_msg("%s encode NaN: got 0x%02x", f->name, got);
        return;
    }
    if (fabs((double)x) > maxv)     /* saturation, Inf included */
        want = (uint8_t)(max_code(f) | (signbit(x) ? 0x80 : 0));
    else
        want = nearest(f, x);
    if (got != want)
        fail_msg("%s encode %.9g (0x%08x): got 0x%02x want 0x%02x", f->name, x,
                 f32_hex(x), got, want);
}

static void test_encode(void **state)
{
    for (size_t k = 0; k < sizeof(fmts) / sizeof(fmts[0]); k++) {
        const fmt_t *f = &fmts[k];
        for (int b = 0; b < 256; b++) {
            if (code_is_nan(f, (uint8_t)b) || code_is_inf(f, (uint8_t)b))
                continue;
            float v = (float)code_value(f, (uint8_t)b);
            if (b == 0x80)
                v = -0.0f;
            assert_int_equal(f->encode(v), b);         /* every value is its own code */
            check_encode(f, nextafterf(v, INFINITY));
            check_encode(f, nextafterf(v, -INFINITY));
            if ((b & 0x7f) < max_code(f)) {            /* the midpoint to the next code up */
                double lo = code_value(f, (uint8_t)b), hi = code_value(f, (uint8_t)(b + 1));
                float mid = (float)((lo + hi) / 2);
                check_encode(f, mid);
                check_encode(f, nextafterf(mid, 0));
                check_encode(f, nextafterf(mid, INFINITY * mid));
            }
        }
        check_encode(f, INFINITY);
        check_encode(f, -INFINITY);
        check_encode(f, NAN);
        check_encode(f, -NAN);
        check_encode(f, 1e30f);
        check_encode(f, ldexpf(1, -30));
        check_encode(f, -ldexpf(1, -30));
        /* a stride over every fp32 pattern (prime, so every exponent and fraction region) */
        for (uint64_t u = 0; u < (1ull << 32); u += 65521) {
            uint32_t w = (uint32_t)u;
            float x;
            memcpy(&x, &w, 4);
            check_encode(f, x);
        }
    }
}

/* Saturation, as CUDA's default conversion: E4M3 448 + 32 = 480 (above 464, the midpoint to
 * the next binade) gives 448; E5M2 Inf + 1 gives 57344; the sign is kept. */
static void test_saturation(void **state)
{
    assert_int_equal(sta_fp8_e4m3_encode(480.0f), 0x7e);
    assert_int_equal(sta_fp8_e4m3_encode(464.0f), 0x7e);    /* the tie goes to even 0x7e */
    assert_int_equal(sta_fp8_e4m3_encode(-1e9f), 0xfe);
    assert_int_equal(sta_fp8_e4m3_encode(INFINITY), 0x7e);
    assert_int_equal(sta_fp8_e5m2_encode(INFINITY), 0x7b);
    assert_int_equal(sta_fp8_e5m2_encode(-INFINITY), 0xfb);
    assert_int_equal(sta_fp8_e5m2_encode(61440.0f), 0x7b);  /* the tie at max + half ulp */
}

static const char *const families[] = {"scalar", "avx2", "avx512"};

/* Every family: sources folded in fp32 and rounded once; results saturate. */
static void test_kernels_round_once(void **state)
{
    for (size_t fi = 0; fi < 3; fi++) {
        if (!sta_reduce_force_isa(families[fi]))
            continue;
        for (size_t k = 0; k < sizeof(fmts) / sizeof(fmts[0]); k++) {
            const fmt_t *f = &fmts[k];
            enum { N = 37 };
            uint8_t a[N], b[N], c[N], d[N];
            for (int i = 0; i < N; i++) {
                a[i] = f->encode(1.0f);
                b[i] = f->encode(0.0625f);           /* 1/16: below half an ulp of 1 alone */
                c[i] = f->encode(0.0625f);
            }
            const void *srcs[3] = {a, b, c};
            sta_reduce_n(d, srcs, 3, N, f->dt, STRATA_SUM);
            /* E4M3: 1 + 1/8 is exact (3 fraction bits): 0x39; E5M2: 1.125 ties to even 1.0 */
            uint8_t want = f->encode(1.125f);
            for (int i = 0; i < N; i++)
                if (d[i] != want)
                    fail_msg("%s %s: 1 + 1/16 + 1/16 -> 0x%02x, want 0x%02x", families[fi],
                             f->name, d[i], want);
            for (int i = 0; i < N; i++)
                a[i] = max_code(f);
            const void *two[2] = {a, a};
            sta_reduce_n(d, two, 2, N, f->dt, STRATA_SUM);
            for (int i = 0; i < N; i++)
                assert_int_equal(d[i], max_code(f));
            sta_reduce_n(d, two, 2, N, f->dt, STRATA_PROD);
            for (int i = 0; i < N; i++)
                assert_int_equal(d[i], max_code(f));
        }
    }
    sta_reduce_force_isa(NULL);
}

/* Random bytes (NaN, Inf, subnormals included): every family gives the portable kernel's bits
 * for every op, for counts around the vector width. */
static void test_kernels_agree(void **state)
{
    enum { N = 1000 };
    uint8_t s0[N], s1[N], s2[N], want[N], got[N];
    uint64_t x = 0x243f6a8885a308d3ull;

    for (int i = 0; i < N; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s0[i] = (uint8_t)x;
        s1[i] = (uint8_t)(x >> 8);
        s2[i] = (uint8_t)(x >> 16);
    }
    const void *srcs[3] = {s0, s1, s2};
    for (size_t k = 0; k < sizeof(fmts) / sizeof(fmts[0]); k++) {
        for (int op = 0; op < STRATA_OP_COUNT; op++) {
            for (size_t cnt = 1; cnt < 40; cnt += 3) {
                assert_int_equal(sta_reduce_force_isa("scalar"), 1);
                sta_reduce_n(want, srcs, 3, cnt, fmts[k].dt, (strata_op_t)op);
                for (size_t fi = 1; fi < 3; fi++) {
                    if (!sta_reduce_force_isa(families[fi]))
                        continue;
                    memset(got, 0xa5, sizeof(got));
                    sta_reduce_n(got, srcs, 3, cnt, fmts[k].dt, (strata_op_t)op);
                    for (size_t i = 0; i < cnt; i++) {
                        int both_nan = code_is_nan(&fmts[k], got[i]) &&
                                       code_is_nan(&fmts[k], want[i]);
                        if (got[i] != want[i] && !both_nan)
                            fail_msg("%s %s %s count %zu element %zu: 0x%02x vs scalar 0x%02x",
                                     families[fi], fmts[k].name, strata_op_name(op), cnt, i,
                                     got[i], want[i]);
                    }
                    assert_int_equal(got[cnt], 0xa5);    /* nothing past the end */
                }
            }
        }
    }
    sta_reduce_force_isa(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_all),
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_saturation),
        cmocka_unit_test(test_kernels_round_once),
        cmocka_unit_test(test_kernels_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
