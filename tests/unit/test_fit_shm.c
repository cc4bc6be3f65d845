/*
 * The shm tier's and the cache's fit to one-node broadcasts (sta_fit_shm_cache,
 * algos/fit_shm.c) and their merge into the model (sta_model_apply_calibrated_cache): times
 * made by the model itself come back as its parameters, with a knee and without one, with
 * noise; bad input is refused and leaves the outputs alone; the merge replaces defaults only.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algos/profile.h"

/* The sizes calibration broadcasts (coll/calibrate.c). */
static const size_t sizes[] = {8, 4096, 16384, 65536, 262144, 524288, 1 << 20,
                               2 << 20, 4 << 20, 8 << 20, 16 << 20};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

/* What the model charges a one-node broadcast phase of n bytes on `ranks` ranks. */
static double model_us(const sta_tier_t *shm, const sta_cache_t *cache, int ranks, size_t n)
{
    sta_model_t m;
    sta_dims_t d = {.nranks = ranks, .nnodes = 1, .local_size = ranks, .nrails = 1,
                    .contiguous = 1, .host_ranks = ranks};

    sta_model_default(&m);
    m.shm = *shm;
    m.cache = *cache;
    return shm->alpha_us + (double)n / (sta_cost_shm_beta_gbps(&m, &d, n) * 1e3);
}

static void make_times(const sta_tier_t *shm, const sta_cache_t *cache, int ranks,
                       double noise, double *us)
{
    for (int i = 0; i < NSIZES; i++)
        us[i] = model_us(shm, cache, ranks, sizes[i]) * (1.0 + (i % 2 ? noise : -noise));
}

static int near(double got, double want, double tol)
{
    return fabs(got / want - 1.0) <= tol;
}

/* Fits the times the model gives (shm, cache) on `ranks`, ±noise on alternate sizes. */
static strata_status_t fit_model(const sta_tier_t *shm, const sta_cache_t *cache, int ranks,
                                 double noise, sta_tier_t *s, sta_cache_t *c)
{
    double us[NSIZES];

    make_times(shm, cache, ranks, noise, us);
    return sta_fit_shm_cache(sizes, us, NSIZES, ranks, s, c);
}

/* Times the model made, fitted back: a knee at 4 MiB of working set (2 ranks: 1 MiB
 * broadcasts), one rate at every size (no knee: the cache comes out no faster than β_s, up to
 * the largest working set measured, 2 ranks x 2 x 16 MiB), and a knee under ±5 % noise on
 * alternate sizes (4 ranks), each parameter within the case's tolerance (the knee's size
 * within √2, one grid step, where there is noise). */
static void test_fit_returns_the_model_parameters(void **state)
{
    static const struct {
        const char *name;
        sta_tier_t shm;
        sta_cache_t cache;           /* bytes 0: no knee */
        int ranks;
        double noise, tol;
    } cases[] = {
        {"knee", {0.3, 12.0}, {40.0, 4.0 * 1024 * 1024}, 2, 0.0, 0.01},
        {"no knee", {0.25, 14.0}, {14.0, 0.0}, 2, 0.0, 0.01},
        {"noise", {0.4, 10.0}, {30.0, 2.0 * 1024 * 1024}, 4, 0.05, 0.10},
    };
    (void)state;

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        sta_tier_t s;
        sta_cache_t c;
        double tol = cases[k].tol;
        print_message("case %s\n", cases[k].name);
        assert_int_equal(fit_model(&cases[k].shm, &cases[k].cache, cases[k].ranks,
                                   cases[k].noise, &s, &c), STRATA_OK);
        assert_true(near(s.alpha_us, cases[k].shm.alpha_us, tol));
        assert_true(near(s.beta_gbps, cases[k].shm.beta_gbps, tol));
        if (cases[k].cache.bytes == 0.0) {
            assert_true(c.beta_gbps == s.beta_gbps);
            assert_true(c.bytes == 2.0 * cases[k].ranks * (16 << 20));
            continue;
        }
        assert_true(near(c.beta_gbps, cases[k].cache.beta_gbps, tol));
        double slack = cases[k].noise > 0.0 ? 1.5 : 1.0 + tol;
        assert_true(c.bytes >= cases[k].cache.bytes / slack &&
                    c.bytes <= cases[k].cache.bytes * slack);
    }
}

static void test_fit_rejects(void **state)
{
    const sta_tier_t shm = {.alpha_us = 0.3, .beta_gbps = 12.0};
    const sta_cache_t cache = {.beta_gbps = 40.0, .bytes = 4.0 * 1024 * 1024};
    const size_t big[] = {4096, 65536, 1 << 20};
    double us[NSIZES], bad[NSIZES];
    sta_tier_t s = {.alpha_us = -7.0};
    sta_cache_t c = {.bytes = -7.0};
    (void)state;

    make_times(&shm, &cache, 2, 0.0, us);
    assert_int_equal(sta_fit_shm_cache(NULL, us, NSIZES, 2, &s, &c), STRATA_ERR_INVALID);
    assert_int_equal(sta_fit_shm_cache(sizes, NULL, NSIZES, 2, &s, &c), STRATA_ERR_INVALID);
    assert_int_equal(sta_fit_shm_cache(sizes, us, NSIZES, 2, NULL, &c), STRATA_ERR_INVALID);
    assert_int_equal(sta_fit_shm_cache(sizes, us, NSIZES, 2, &s, NULL), STRATA_ERR_INVALID);
    assert_int_equal(sta_fit_shm_cache(sizes, us, 2, 2, &s, &c), STRATA_ERR_INVALID);
    assert_int_equal(sta_fit_shm_cache(sizes, us, NSIZES, 1, &s, &c), STRATA_ERR_INVALID);
    assert_int_equal(sta_fit_shm_cache(big, us, 3, 2, &s, &c), STRATA_ERR_INVALID);  /* no α */
    const double wrong[] = {0.0, -1.0, NAN, INFINITY};
    for (size_t k = 0; k < sizeof(wrong) / sizeof(wrong[0]); k++) {
        memcpy(bad, us, sizeof(bad));
        bad[5] = wrong[k];
        assert_int_equal(sta_fit_shm_cache(sizes, bad, NSIZES, 2, &s, &c), STRATA_ERR_INVALID);
    }
    /* only sizes under 4 KiB: no rate to fit */
    const size_t small[] = {8, 64, 512};
    assert_int_equal(sta_fit_shm_cache(small, us, 3, 2, &s, &c), STRATA_ERR_INVALID);
    assert_true(s.alpha_us == -7.0 && c.bytes == -7.0);
}

/* The merge: measured values replace defaults, not a variable's; C = 0 or a bad β is skipped. */
static void test_apply_calibrated_cache(void **state)
{
    sta_model_t m;
    sta_cache_t got = {.beta_gbps = 13.0, .bytes = 1048576.0};
    (void)state;

    sta_model_default(&m);
    sta_model_apply_calibrated_cache(&m, &got);
    assert_true(m.cache.beta_gbps == 13.0 && m.cache.bytes == 1048576.0);
    assert_int_equal(m.source[STA_FIELD_SHM_CACHE_BETA], STA_SRC_CALIBRATED);
    assert_int_equal(m.source[STA_FIELD_SHM_CACHE_BYTES], STA_SRC_CALIBRATED);

    sta_model_default(&m);
    m.cache.beta_gbps = 55.0;
    m.source[STA_FIELD_SHM_CACHE_BETA] = STA_SRC_ENV;
    sta_model_apply_calibrated_cache(&m, &got);
    assert_true(m.cache.beta_gbps == 55.0);                 /* the variable's stays */
    assert_true(m.cache.bytes == 1048576.0);

    sta_model_default(&m);
    double beta = m.cache.beta_gbps, bytes = m.cache.bytes;
    sta_cache_t zero = {.beta_gbps = 13.0, .bytes = 0.0};
    sta_cache_t nan_beta = {.beta_gbps = NAN, .bytes = 1048576.0};
    sta_model_apply_calibrated_cache(&m, &zero);
    sta_model_apply_calibrated_cache(&m, NULL);
    assert_true(m.cache.beta_gbps == beta && m.cache.bytes == bytes);
    sta_model_apply_calibrated_cache(&m, &nan_beta);
    assert_true(m.cache.beta_gbps == beta);
    assert_int_equal(m.source[STA_FIELD_SHM_CACHE_BETA], STA_SRC_DEFAULT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_returns_the_model_parameters),
        cmocka_unit_test(test_fit_rejects),
        cmocka_unit_test(test_apply_calibrated_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
