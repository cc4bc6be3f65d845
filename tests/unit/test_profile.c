/*
 * Unit tests of the model's parameter sources: the profile file parser (good
 * file, comments, bad key, bad number, duplicate, missing file, a device, a
 * FIFO, a directory, a file past the size bound, NUL bytes, long lines), the
 * STRATA_* variables (a malformed one is an error), their precedence with the
 * profile and calibration, the source record, the α-β fit, the intra-node
 * kind's key, and the writer.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "algos/profile.h"
#include "util/log.h"
#include "util/param.h"

static const char *const model_vars[] = {
    "STRATA_PROFILE", "STRATA_SHM_ALPHA_US", "STRATA_SHM_BETA_GBPS", "STRATA_NET_ALPHA_US",
    "STRATA_NET_BETA_GBPS", "STRATA_GAMMA_GBPS", "STRATA_WAKE_US", "STRATA_YIELD_US",
};

static char last_warn[1024];

static void warn_sink(int level, unsigned long flags, const char *file, int line,
                      const char *msg)
{
    if (level == STU_LOG_WARN)
        snprintf(last_warn, sizeof(last_warn), "%s", msg);
}

static int setup(void **state)
{
    for (size_t i = 0; i < sizeof(model_vars) / sizeof(model_vars[0]); i++)
        unsetenv(model_vars[i]);
    stu_param_reload();
    last_warn[0] = '\0';
    stu_log_set_sink(warn_sink, STU_LOG_WARN);
    return 0;
}

static int teardown(void **state)
{
    stu_log_set_sink(NULL, STU_LOG_WARN);
    return setup(state);
}

/* Writes text to a fresh temporary file; returns its path (static buffer). */
static const char *profile_write(const char *text)
{
    static char path[64];
    int fd;

    snprintf(path, sizeof(path), "/tmp/strata-profile-XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_defaults(void **state)
{
    sta_model_t m;

    sta_model_default(&m);
    assert_true(m.shm.alpha_us == STA_DEFAULT_SHM_ALPHA_US);
    assert_true(m.shm.beta_gbps == STA_DEFAULT_SHM_BETA_GBPS);
    assert_true(m.net.alpha_us == STA_DEFAULT_NET_ALPHA_US);
    assert_true(m.net.beta_gbps == STA_DEFAULT_NET_BETA_GBPS);
    assert_true(m.gamma_gbps == STA_DEFAULT_GAMMA_GBPS);
    assert_true(m.wake_us == STA_DEFAULT_WAKE_US);
    assert_true(m.yield_us == STA_DEFAULT_YIELD_US);
    for (int f = 0; f < STA_FIELD_COUNT; f++)
        assert_int_equal(m.source[f], STA_SRC_DEFAULT);
    assert_int_equal(sta_model_check(&m), STRATA_OK);
    assert_string_equal(sta_field_name(STA_FIELD_NET_BETA), "net.beta_gbps");
    assert_string_equal(sta_source_name(STA_SRC_CALIBRATED), "calibrated");
    assert_string_equal(sta_source_name(STA_SRC_COUNT), "?");
}

static void test_profile_good(void **state)
{
    const char *path = profile_write(
        "# fabric: two hosts over 25 GbE\n"
        "\n"
        "net.alpha_us = 12.5\n"
        "   net.beta_gbps=2.9   # measured with strata-netperf\r\n"
        "\tshm.alpha_us\t=\t0\n"            /* α = 0 is allowed */
        "gamma_gbps = 1.5e1\n"
        "wake_us = 0\n"                     /* ω = 0 too */
        "yield_us = 2.5\n"
        "   # indented comment\n");
    sta_model_t m;

    sta_model_default(&m);
    assert_int_equal(sta_profile_read(path, &m), STRATA_OK);
    unlink(path);
    assert_true(m.net.alpha_us == 12.5);
    assert_true(m.net.beta_gbps == 2.9);
    assert_true(m.shm.alpha_us == 0.0);
    assert_true(m.gamma_gbps == 15.0);
    assert_true(m.wake_us == 0.0);
    assert_int_equal(m.source[STA_FIELD_WAKE], STA_SRC_PROFILE);
    assert_true(m.yield_us == 2.5);
    assert_int_equal(m.source[STA_FIELD_YIELD], STA_SRC_PROFILE);
    assert_true(m.shm.beta_gbps == STA_DEFAULT_SHM_BETA_GBPS);   /* not in the file */
    assert_int_equal(m.source[STA_FIELD_NET_ALPHA], STA_SRC_PROFILE);
    assert_int_equal(m.source[STA_FIELD_SHM_ALPHA], STA_SRC_PROFILE);
    assert_int_equal(m.source[STA_FIELD_SHM_BETA], STA_SRC_DEFAULT);
}

/* A bad profile fails, names path:line in the warning, and leaves the model untouched. */
static void expect_bad(const char *text, const char *where, strata_status_t want)
{
    const char *path = profile_write(text);
    char needle[96];
    sta_model_t m, before;

    sta_model_default(&m);
    before = m;
    last_warn[0] = '\0';
    assert_int_equal(sta_profile_read(path, &m), want);
    assert_memory_equal(&m, &before, sizeof(m));
    snprintf(needle, sizeof(needle), "%s:%s", path, where);
    if (strstr(last_warn, needle) == NULL)
        fail_msg("warning '%s' does not name '%s'", last_warn, needle);
    unlink(path);
}

static void test_profile_bad(void **state)
{
    expect_bad("net.alpha_us = 3\n# ok\nnet.latency_us = 3\n", "3:", STRATA_ERR_INVALID);
    expect_bad("net.beta_gbps = fast\n", "1:", STRATA_ERR_INVALID);
    expect_bad("\nnet.beta_gbps = 2.5x\n", "2:", STRATA_ERR_INVALID);
    expect_bad("net.beta_gbps = 0\n", "1:", STRATA_ERR_INVALID);      /* β must be > 0 */
    expect_bad("shm.alpha_us = -1\n", "1:", STRATA_ERR_INVALID);      /* α must be >= 0 */
    expect_bad("wake_us = -5\n", "1:", STRATA_ERR_INVALID);           /* ω likewise */
    expect_bad("yield_us = -1\n", "1:", STRATA_ERR_INVALID);          /* and ω_y */
    expect_bad("gamma_gbps = inf\n", "1:", STRATA_ERR_INVALID);
    expect_bad("gamma_gbps = nan\n", "1:", STRATA_ERR_INVALID);
    expect_bad("gamma_gbps =\n", "1:", STRATA_ERR_INVALID);
    expect_bad("gamma_gbps = 1 2\n", "1:", STRATA_ERR_INVALID);
    expect_bad("= 3\n", "1:", STRATA_ERR_INVALID);
    expect_bad("net.alpha_us 3\n", "1:", STRATA_ERR_INVALID);          /* no '=' */
    expect_bad("net.alpha_us = 3\nnet.alpha_us = 4\n", "2:", STRATA_ERR_INVALID);
    expect_bad("NET.ALPHA_US = 3\n", "1:", STRATA_ERR_INVALID);        /* keys are exact */
}

/* The shm tier's cache: its two keys and variables, a size of 0 (no cache tier) allowed, a
 * negative size or a zero rate refused; every field reaches the profile writer. */
static void test_profile_cache(void **state)
{
    const char *path = profile_write("shm.cache_beta_gbps = 55\nshm.cache_bytes = 0\n");
    sta_model_t m;

    (void)state;
    sta_model_default(&m);
    assert_true(m.cache.beta_gbps == STA_DEFAULT_SHM_CACHE_BETA_GBPS);
    assert_true(m.cache.bytes == STA_DEFAULT_SHM_CACHE_BYTES);
    assert_int_equal(sta_profile_read(path, &m), STRATA_OK);
    unlink(path);
    assert_true(m.cache.beta_gbps == 55.0);
    assert_true(m.cache.bytes == 0.0);
    assert_int_equal(m.source[STA_FIELD_SHM_CACHE_BYTES], STA_SRC_PROFILE);
    assert_string_equal(sta_field_name(STA_FIELD_SHM_CACHE_BETA), "shm.cache_beta_gbps");
    assert_true(sta_model_field(&m, STA_FIELD_SHM_CACHE_BYTES) == &m.cache.bytes);
    assert_true(sta_field_may_be_zero(STA_FIELD_SHM_CACHE_BYTES));
    assert_false(sta_field_may_be_zero(STA_FIELD_SHM_CACHE_BETA));
    expect_bad("shm.cache_bytes = -1\n", "1:", STRATA_ERR_INVALID);
    expect_bad("shm.cache_beta_gbps = 0\n", "1:", STRATA_ERR_INVALID);
    setenv("STRATA_SHM_CACHE_BYTES", "16777216", 1);
    stu_param_reload();
    assert_int_equal(sta_model_load(&m), STRATA_OK);
    assert_true(m.cache.bytes == 16777216.0);
    assert_int_equal(m.source[STA_FIELD_SHM_CACHE_BYTES], STA_SRC_ENV);
    unsetenv("STRATA_SHM_CACHE_BYTES");
    stu_param_reload();
}

static void test_profile_missing(void **state)
{
    sta_model_t m, before;

    sta_model_default(&m);
    before = m;
    assert_int_equal(sta_profile_read("/nonexistent/strata.profile", &m), STRATA_ERR_IO);
    assert_memory_equal(&m, &before, sizeof(m));
    assert_non_null(strstr(last_warn, "/nonexistent/strata.profile"));
}

static void test_env_and_precedence(void **state)
{
    const char *path = profile_write("net.beta_gbps = 7\nshm.alpha_us = 0.5\n");
    sta_model_t m;

    /* A malformed value is an error naming the variable; the model stays untouched. */
    setenv("STRATA_SHM_BETA_GBPS", "lots", 1);
    stu_param_reload();
    sta_model_default(&m);
    m.gamma_gbps = 1234.0;
    assert_int_equal(sta_model_load(&m), STRATA_ERR_INVALID);
    assert_true(m.gamma_gbps == 1234.0);
    assert_non_null(strstr(last_warn, "STRATA_SHM_BETA_GBPS"));
    const char *bad_values[] = {"-1", "0", "inf", "nan", "1e999", "2,5", "3x"};
    for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
        setenv("STRATA_SHM_BETA_GBPS", bad_values[i], 1);
        stu_param_reload();
        last_warn[0] = '\0';
        assert_int_equal(sta_model_load(&m), STRATA_ERR_INVALID);
        assert_non_null(strstr(last_warn, "STRATA_SHM_BETA_GBPS"));
    }
    setenv("STRATA_SHM_BETA_GBPS", "", 1); /* empty: not set */
    setenv("STRATA_SHM_ALPHA_US", "0", 1); /* α may be 0 */

    /* Env alone overrides the defaults. */
    setenv("STRATA_NET_BETA_GBPS", "2.5", 1);
    setenv("STRATA_GAMMA_GBPS", "9", 1);
    stu_param_reload();
    assert_int_equal(sta_model_load(&m), STRATA_OK);
    assert_true(m.net.beta_gbps == 2.5);
    assert_int_equal(m.source[STA_FIELD_NET_BETA], STA_SRC_ENV);
    assert_true(m.gamma_gbps == 9.0);
    assert_true(m.shm.alpha_us == 0.0);
    assert_true(m.shm.beta_gbps == STA_DEFAULT_SHM_BETA_GBPS);
    assert_int_equal(m.source[STA_FIELD_SHM_BETA], STA_SRC_DEFAULT);
    unsetenv("STRATA_SHM_ALPHA_US");

    /* The profile wins over env; env still fills what the profile leaves out. */
    setenv("STRATA_PROFILE", path, 1);
    stu_param_reload();
    assert_int_equal(sta_model_load(&m), STRATA_OK);
    assert_true(m.net.beta_gbps == 7.0);
    assert_int_equal(m.source[STA_FIELD_NET_BETA], STA_SRC_PROFILE);
    assert_true(m.shm.alpha_us == 0.5);
    assert_true(m.gamma_gbps == 9.0);
    assert_int_equal(m.source[STA_FIELD_GAMMA], STA_SRC_ENV);
    assert_int_equal(m.source[STA_FIELD_NET_ALPHA], STA_SRC_DEFAULT);

    /* Calibration replaces defaults only: shm β and net α; shm α (profile) and net β
     * (profile) stay. */
    sta_tier_t shm = {.alpha_us = 0.2, .beta_gbps = 11.0};
    sta_tier_t net = {.alpha_us = 6.0, .beta_gbps = 3.9};
    sta_model_apply_calibration(&m, &shm, &net);
    assert_true(m.shm.alpha_us == 0.5);
    assert_int_equal(m.source[STA_FIELD_SHM_ALPHA], STA_SRC_PROFILE);
    assert_true(m.shm.beta_gbps == 11.0);
    assert_int_equal(m.source[STA_FIELD_SHM_BETA], STA_SRC_CALIBRATED);
    assert_true(m.net.alpha_us == 6.0);
    assert_int_equal(m.source[STA_FIELD_NET_ALPHA], STA_SRC_CALIBRATED);
    assert_true(m.net.beta_gbps == 7.0);
    assert_true(m.gamma_gbps == 9.0);

    /* A later measurement replaces an earlier one; unmeasured (NULL, NaN, <= 0) is skipped. */
    sta_tier_t bad = {.alpha_us = NAN, .beta_gbps = 0.0};
    net.alpha_us = 5.0;
    sta_model_apply_calibration(&m, NULL, &net);
    assert_true(m.net.alpha_us == 5.0);
    sta_model_apply_calibration(&m, &bad, &bad);
    assert_true(m.shm.beta_gbps == 11.0);
    assert_true(m.net.alpha_us == 5.0);
    sta_model_log(&m);

    /* A broken profile fails the load and leaves the output alone. */
    unlink(path);
    path = profile_write("net.beta_gbps = 7\nbogus = 1\n");
    setenv("STRATA_PROFILE", path, 1);
    stu_param_reload();
    sta_model_t before = m;
    assert_int_equal(sta_model_load(&m), STRATA_ERR_INVALID);
    assert_memory_equal(&m, &before, sizeof(m));
    unlink(path);
}

/* STRATA_PROFILE naming what is not a small regular file: a clear error at once. */
static void profile_refused(const char *path, strata_status_t want, const char *words)
{
    sta_model_t m, before;
    sta_model_default(&m);
    before = m;
    setenv("STRATA_PROFILE", path, 1);
    stu_param_reload();
    last_warn[0] = '\0';
    assert_int_equal(sta_model_load(&m), want);
    assert_memory_equal(&m, &before, sizeof(m));
    if (strstr(last_warn, words) == NULL || strstr(last_warn, "STRATA_PROFILE") == NULL)
        fail_msg("warning '%s' lacks '%s' or the variable", last_warn, words);
}

static void test_profile_not_a_file(void **state)
{
    char fifo[96], dir[64];

    profile_refused("/dev/zero", STRATA_ERR_INVALID, "character device");
    profile_refused("/dev/null", STRATA_ERR_INVALID, "character device");
    snprintf(dir, sizeof(dir), "/tmp/strata-profile-dir-XXXXXX");
    assert_non_null(mkdtemp(dir));
    profile_refused(dir, STRATA_ERR_INVALID, "directory");
    /* a FIFO with no writer: refused without waiting for one */
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    profile_refused(fifo, STRATA_ERR_INVALID, "FIFO");
    unlink(fifo);
    rmdir(dir);
    profile_refused("/nonexistent/strata.profile", STRATA_ERR_IO, "cannot open");
}

static void test_profile_too_big(void **state)
{
    /* one byte past the bound, all comments: refused by size, never read whole */
    static char big[STA_PROFILE_MAX_BYTES + 2];
    memset(big, '#', sizeof(big) - 1);
    for (size_t i = 80; i < sizeof(big) - 1; i += 81)
        big[i] = '\n';
    big[sizeof(big) - 1] = '\0';
    const char *path = profile_write(big);
    profile_refused(path, STRATA_ERR_INVALID, "bytes");
    unlink(path);
    /* exactly the bound is fine */
    big[STA_PROFILE_MAX_BYTES] = '\0';
    path = profile_write(big);
    setenv("STRATA_PROFILE", path, 1);
    stu_param_reload();
    sta_model_t m;
    assert_int_equal(sta_model_load(&m), STRATA_OK);
    unlink(path);
    /* a sparse file of 1 TiB: refused by its size without reading */
    path = profile_write("");
    assert_int_equal(truncate(path, (off_t)1 << 40), 0);
    profile_refused(path, STRATA_ERR_INVALID, "bytes");
    unlink(path);
}

static void test_profile_parse_text(void **state)
{
    sta_model_t m;
    sta_model_default(&m);
    /* no final newline, CRLF, blank and comment lines */
    const char ok[] = "# c\r\n\nnet.alpha_us = 3 # us\r\ngamma_gbps=4";
    assert_int_equal(sta_profile_parse(ok, sizeof(ok) - 1, "t", &m), STRATA_OK);
    assert_true(m.net.alpha_us == 3.0 && m.gamma_gbps == 4.0);
    /* a NUL byte, a line past the bound */
    const char nul[] = "net.alpha_us = 3\0junk\n";
    assert_int_equal(sta_profile_parse(nul, sizeof(nul) - 1, "t", &m), STRATA_ERR_INVALID);
    static char longline[STA_PROFILE_LINE_MAX + 10];
    memset(longline, '#', sizeof(longline));
    assert_int_equal(sta_profile_parse(longline, sizeof(longline), "t", &m),
                     STRATA_ERR_INVALID);
    assert_int_equal(sta_profile_parse("", 0, "t", &m), STRATA_OK);
}

/* Relative closeness for fitted values. */
static void assert_close(double got, double want, double rel)
{
    if (fabs(got - want) > rel * fabs(want))
        fail_msg("got %.9g, expected %.9g (within %g)", got, want, rel);
}

static void test_fit(void **state)
{
    /* Exact data from α = 5 µs, β = 2 GB/s: t = 5 + n/2000. */
    size_t b[] = {8, 1024, 65536, 1 << 20, 16 << 20};
    double t[5];
    sta_tier_t out;

    for (int i = 0; i < 5; i++)
        t[i] = 5.0 + (double)b[i] / 2000.0;
    assert_int_equal(sta_fit_alpha_beta(b, t, 5, &out), STRATA_OK);
    assert_close(out.alpha_us, 5.0, 1e-9);
    assert_close(out.beta_gbps, 2.0, 1e-9);

    /* ±3 % alternating noise: relative weighting keeps the small sizes' α honest. */
    for (int i = 0; i < 5; i++)
        t[i] = (5.0 + (double)b[i] / 2000.0) * (i % 2 ? 1.03 : 0.97);
    assert_int_equal(sta_fit_alpha_beta(b, t, 5, &out), STRATA_OK);
    assert_close(out.alpha_us, 5.0, 0.1);
    assert_close(out.beta_gbps, 2.0, 0.1);

    /*
     * A negative intercept is refitted through the origin. (1000, 0.9), (2000, 2.0),
     * (4000, 4.3) give α ≈ -0.226 unconstrained; with α = 0 and r = b/t = 1111.1, 1000,
     * 930.23: x = Σr/Σr² = 3041.34/3099900.5 = 9.8111e-4 µs/B, β = 1/(x·1e3) = 1.01925.
     */
    size_t b3[] = {1000, 2000, 4000};
    double t3[] = {0.9, 2.0, 4.3};
    assert_int_equal(sta_fit_alpha_beta(b3, t3, 3, &out), STRATA_OK);
    assert_true(out.alpha_us == 0.0);
    assert_close(out.beta_gbps, 1.01925, 1e-4);
}

static void test_fit_rejects(void **state)
{
    size_t b[] = {100, 100, 100};
    size_t b2[] = {100, 200, 400};
    double t[] = {3.0, 3.1, 2.9};
    double down[] = {5.0, 4.0, 3.0};
    double zero[] = {1.0, 0.0, 2.0};
    double nan_t[] = {1.0, NAN, 2.0};
    sta_tier_t out = {.alpha_us = -7, .beta_gbps = -7};

    assert_int_equal(sta_fit_alpha_beta(b, t, 3, &out), STRATA_ERR_INVALID);   /* one size */
    assert_int_equal(sta_fit_alpha_beta(b2, t, 1, &out), STRATA_ERR_INVALID);  /* n < 2 */
    assert_int_equal(sta_fit_alpha_beta(b2, down, 3, &out), STRATA_ERR_INVALID);
    assert_int_equal(sta_fit_alpha_beta(b2, zero, 3, &out), STRATA_ERR_INVALID);
    assert_int_equal(sta_fit_alpha_beta(b2, nan_t, 3, &out), STRATA_ERR_INVALID);
    assert_int_equal(sta_fit_alpha_beta(NULL, t, 3, &out), STRATA_ERR_INVALID);
    assert_true(out.alpha_us == -7 && out.beta_gbps == -7);                     /* untouched */
}

/* shm.kind names what the shm tier is; the default is host shared memory. */
static void test_profile_kind(void **state)
{
    const char *path = profile_write("shm.kind = Switch\nshm.beta_gbps = 450\n");
    sta_model_t m;

    sta_model_default(&m);
    assert_int_equal(m.intra, STA_INTRA_SHM);
    assert_int_equal(m.intra_source, STA_SRC_DEFAULT);
    assert_int_equal(sta_profile_read(path, &m), STRATA_OK);
    unlink(path);
    assert_int_equal(m.intra, STA_INTRA_SWITCH);
    assert_int_equal(m.intra_source, STA_SRC_PROFILE);
    assert_true(m.shm.beta_gbps == 450.0);

    expect_bad("shm.kind = nvlink\n", "1:", STRATA_ERR_INVALID);
    expect_bad("shm.kind = pcie\nshm.kind = shm\n", "2:", STRATA_ERR_INVALID);
    expect_bad("shm.kind =\n", "1:", STRATA_ERR_INVALID);
}

/* What sta_profile_write writes, sta_profile_read reads back to the same values; the
 * comment's lines and each value's source are comments in the file. */
static void test_profile_write_read(void **state)
{
    char path[64], text[1024];
    sta_model_t m, back;
    FILE *f;
    int fd;

    sta_model_default(&m);
    m.shm = (sta_tier_t){.alpha_us = 0.1 + 0.2, .beta_gbps = 12.345678901234567};
    m.source[STA_FIELD_SHM_ALPHA] = m.source[STA_FIELD_SHM_BETA] = STA_SRC_CALIBRATED;
    m.net.beta_gbps = 1.0 / 3.0;
    m.intra = STA_INTRA_PCIE;
    snprintf(path, sizeof(path), "/tmp/strata-profile-XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(sta_profile_write(path, &m, "measured here\nsecond line"), STRATA_OK);
    sta_model_default(&back);
    assert_int_equal(sta_profile_read(path, &back), STRATA_OK);
    assert_true(back.shm.alpha_us == m.shm.alpha_us);
    assert_true(back.shm.beta_gbps == m.shm.beta_gbps);
    assert_true(back.net.alpha_us == m.net.alpha_us);
    assert_true(back.net.beta_gbps == m.net.beta_gbps);
    assert_true(back.gamma_gbps == m.gamma_gbps);
    assert_int_equal(back.intra, STA_INTRA_PCIE);
    f = fopen(path, "r");
    assert_non_null(f);
    text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
    fclose(f);
    unlink(path);
    assert_non_null(strstr(text, "# measured here\n# second line\n"));
    assert_non_null(strstr(text, "# calibrated"));
    assert_non_null(strstr(text, "shm.kind      = pcie"));

    m.net.beta_gbps = 0.0;   /* an invalid model is not written */
    assert_int_equal(sta_profile_write(path, &m, NULL), STRATA_ERR_INVALID);
    assert_int_equal(access(path, F_OK), -1);
    m.net.beta_gbps = 1.0;
    assert_int_equal(sta_profile_write("/nonexistent-dir/p", &m, NULL), STRATA_ERR_IO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_good, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_bad, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_not_a_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_too_big, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_parse_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_and_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fit_rejects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_kind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile_write_read, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
