/*
 * Unit tests for the alpha-beta fit of strata-netperf (tools/lib/tool_fit.c).
 *
 * tools/lib is not part of the internal library, so the implementation is
 * compiled into this test directly; bench_fit.c depends on nothing else.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tools/lib/tool_fit.c"

#define SWEEP_MAX 32

/* A sweep like the default one: 8 B .. 64 MiB, factor 2. */
static size_t sweep_make(double alpha_us, double beta_gbs, double *sizes, double *times)
{
    size_t n = 0;
    for (double size = 8; size <= 64.0 * 1024 * 1024 && n < SWEEP_MAX; size *= 2) {
        sizes[n] = size;
        times[n] = alpha_us + size / (beta_gbs * 1e3);
        n++;
    }
    return n;
}

static void assert_rel_close(double got, double want, double tol)
{
    double err = fabs(got - want) / fabs(want);
    if (err > tol)
        fail_msg("got %.12g, want %.12g (relative error %.3g > %.3g)", got, want, err, tol);
}

static void test_fit_exact_sweep(void **state)
{
    double sizes[SWEEP_MAX], times[SWEEP_MAX];
    size_t n = sweep_make(5.0, 3.0, sizes, times);
    stb_fit_t fit;

    assert_int_equal(stb_fit_alpha_beta(sizes, times, n, &fit), STRATA_OK);
    assert_rel_close(fit.alpha_us, 5.0, 1e-9);
    assert_rel_close(fit.beta_gbs, 3.0, 1e-9);
    /* n* = 5 us * 3e9 B/s = 15000 B */
    assert_rel_close(fit.nstar_bytes, 15000.0, 1e-9);
    assert_true(fit.rms_rel_err < 1e-12);
    assert_int_equal(fit.npoints, n);
}

static void test_fit_exact_two_points(void **state)
{
    double sizes[2] = {0.0, 1e6};
    double times[2] = {2.0, 2.0 + 1e6 / (12.5 * 1e3)};
    stb_fit_t fit;

    assert_int_equal(stb_fit_alpha_beta(sizes, times, 2, &fit), STRATA_OK);
    assert_rel_close(fit.alpha_us, 2.0, 1e-12);
    assert_rel_close(fit.beta_gbs, 12.5, 1e-12);
    assert_rel_close(fit.nstar_bytes, 25000.0, 1e-12);
    assert_rel_close(stb_fit_eval(&fit, 1e6), times[1], 1e-12);
}

/* Different magnitudes: a slow network (50 us, 0.1 GB/s) and a fast one (0.2 us, 40 GB/s). */
static void test_fit_exact_extremes(void **state)
{
    double sizes[SWEEP_MAX], times[SWEEP_MAX];
    stb_fit_t fit;
    size_t n = sweep_make(50.0, 0.1, sizes, times);

    assert_int_equal(stb_fit_alpha_beta(sizes, times, n, &fit), STRATA_OK);
    assert_rel_close(fit.alpha_us, 50.0, 1e-9);
    assert_rel_close(fit.beta_gbs, 0.1, 1e-9);

    n = sweep_make(0.2, 40.0, sizes, times);
    assert_int_equal(stb_fit_alpha_beta(sizes, times, n, &fit), STRATA_OK);
    assert_rel_close(fit.alpha_us, 0.2, 1e-9);
    assert_rel_close(fit.beta_gbs, 40.0, 1e-9);
    assert_rel_close(fit.nstar_bytes, 8000.0, 1e-9);
}

/*
 * The point of the relative weighting: a 10 % error on the largest message
 * (thousands of microseconds) must not wreck alpha, which only the small sizes
 * can tell. Plain least squares would move alpha by hundreds of microseconds.
 */
static void test_fit_relative_weighting(void **state)
{
    double sizes[SWEEP_MAX], times[SWEEP_MAX];
    size_t n = sweep_make(5.0, 3.0, sizes, times);
    stb_fit_t fit;

    times[n - 1] *= 1.10;
    assert_int_equal(stb_fit_alpha_beta(sizes, times, n, &fit), STRATA_OK);
    assert_rel_close(fit.alpha_us, 5.0, 0.05);
    assert_rel_close(fit.beta_gbs, 3.0, 0.10);
}

/* Alternating +-1 % noise: the fit stays close and reports about 1 % rms residual. */
static void test_fit_noise_residual(void **state)
{
    double sizes[SWEEP_MAX], times[SWEEP_MAX];
    size_t n = sweep_make(8.0, 2.0, sizes, times);
    stb_fit_t fit;

    for (size_t i = 0; i < n; i++)
        times[i] *= (i % 2 == 0) ? 1.01 : 0.99;
    assert_int_equal(stb_fit_alpha_beta(sizes, times, n, &fit), STRATA_OK);
    assert_rel_close(fit.alpha_us, 8.0, 0.02);
    assert_rel_close(fit.beta_gbs, 2.0, 0.02);
    assert_true(fit.rms_rel_err > 0.005 && fit.rms_rel_err < 0.015);
}

/* Times that fall with size: the minimiser has 1/beta < 0, reported as beta 0, n* 0. */
static void test_fit_unphysical(void **state)
{
    double sizes[3] = {8, 64, 512};
    double times[3] = {10.0, 9.0, 8.0};
    stb_fit_t fit;

    assert_int_equal(stb_fit_alpha_beta(sizes, times, 3, &fit), STRATA_OK);
    assert_true(fit.inv_beta_us_b < 0.0);
    assert_true(fit.beta_gbs == 0.0);
    assert_true(fit.nstar_bytes == 0.0);
}

static void test_fit_invalid(void **state)
{
    double sizes[3] = {8, 8, 8};
    double times[3] = {1.0, 2.0, 3.0};
    double good_sizes[3] = {8, 16, 32};
    stb_fit_t fit;

    memset(&fit, 0x5a, sizeof(fit));
    stb_fit_t untouched = fit;
    assert_int_equal(stb_fit_alpha_beta(sizes, times, 3, &fit), STRATA_ERR_INVALID);
    assert_int_equal(stb_fit_alpha_beta(good_sizes, times, 1, &fit), STRATA_ERR_INVALID);
    assert_int_equal(stb_fit_alpha_beta(good_sizes, times, 0, &fit), STRATA_ERR_INVALID);
    assert_int_equal(stb_fit_alpha_beta(NULL, times, 3, &fit), STRATA_ERR_INVALID);
    assert_int_equal(stb_fit_alpha_beta(good_sizes, NULL, 3, &fit), STRATA_ERR_INVALID);
    assert_int_equal(stb_fit_alpha_beta(good_sizes, times, 3, NULL), STRATA_ERR_INVALID);
    times[1] = 0.0;
    assert_int_equal(stb_fit_alpha_beta(good_sizes, times, 3, &fit), STRATA_ERR_INVALID);
    times[1] = -1.0;
    assert_int_equal(stb_fit_alpha_beta(good_sizes, times, 3, &fit), STRATA_ERR_INVALID);
    times[1] = NAN;
    assert_int_equal(stb_fit_alpha_beta(good_sizes, times, 3, &fit), STRATA_ERR_INVALID);
    assert_memory_equal(&fit, &untouched, sizeof(fit));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_exact_sweep),
        cmocka_unit_test(test_fit_exact_two_points),
        cmocka_unit_test(test_fit_exact_extremes),
        cmocka_unit_test(test_fit_relative_weighting),
        cmocka_unit_test(test_fit_noise_residual),
        cmocka_unit_test(test_fit_unphysical),
        cmocka_unit_test(test_fit_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
