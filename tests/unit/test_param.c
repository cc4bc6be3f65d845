/*
 * Bounded configuration: every STRATA_* variable is checked against what the
 * table says it accepts (integer ranges, choices, filter syntax), a bad value
 * is an error naming the variable, and the value in use stays the default;
 * timeouts cannot overflow; STRATA_SOCKET_USER_TIMEOUT stays within what the
 * socket options take; the job secret is never logged; and util/file.c reads
 * only small regular files (devices, FIFOs, directories, large or foreign
 * files refused at once).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"
#include "util/log.h"
#include "util/param.h"

static char warns[8192];
static size_t warns_len;

static void capture_sink(int level, unsigned long flags, const char *file, int line,
                         const char *msg)
{
    if (level <= STU_LOG_INFO && warns_len + strlen(msg) + 2 < sizeof(warns))
        warns_len +=
            (size_t)snprintf(warns + warns_len, sizeof(warns) - warns_len, "%s\n", msg);
}

static int setup(void **state)
{
    for (int i = 0; i < STU_PARAM_COUNT; i++)
        unsetenv(stu_param_def((stu_param_id_t)i)->name);
    stu_param_reload();
    warns[0] = '\0';
    warns_len = 0;
    stu_log_set_sink(capture_sink, STU_LOG_WARN);
    return 0;
}

static int teardown(void **state)
{
    stu_log_set_sink(NULL, STU_LOG_WARN);
    stu_log_level = STU_LOG_WARN;
    return setup(state);
}

/* name=value must be refused: reload fails, the warning names it, the default is in use. */
static void refused(stu_param_id_t id, const char *value)
{
    const stu_param_def_t *d = stu_param_def(id);
    setenv(d->name, value, 1);
    warns[0] = '\0';
    warns_len = 0;
    if (stu_param_reload() != STRATA_ERR_INVALID)
        fail_msg("%s='%s' was accepted", d->name, value);
    if (strstr(warns, d->name) == NULL)
        fail_msg("%s='%s': the warning does not name it: %s", d->name, value, warns);
    assert_int_equal(stu_param_validate(), STRATA_ERR_INVALID);
    if (d->type == STU_PARAM_TYPE_INT) {
        int64_t dflt;
        assert_int_equal(stu_param_parse_int(d->dflt, &dflt), STRATA_OK);
        assert_int_equal(stu_param_int(id), dflt);
    }
    unsetenv(d->name);
    assert_int_equal(stu_param_reload(), STRATA_OK);
}

static void accepted(stu_param_id_t id, const char *value)
{
    const stu_param_def_t *d = stu_param_def(id);
    setenv(d->name, value, 1);
    if (stu_param_reload() != STRATA_OK)
        fail_msg("%s='%s' was refused: %s", d->name, value, warns);
    unsetenv(d->name);
    stu_param_reload();
}

/* The table itself: every integer's default inside its range, every choice list sane. */
static void test_table_sane(void **state)
{
    for (int i = 0; i < STU_PARAM_COUNT; i++) {
        const stu_param_def_t *d = stu_param_def((stu_param_id_t)i);
        if (d->type == STU_PARAM_TYPE_INT) {
            int64_t v;
            assert_int_equal(stu_param_parse_int(d->dflt, &v), STRATA_OK);
            if (d->min > d->max || v < d->min || v > d->max)
                fail_msg("%s: default %s outside %lld..%lld", d->name, d->dflt,
                         (long long)d->min, (long long)d->max);
            assert_null(d->choices);
        } else if (d->choices != NULL && d->dflt[0] != '\0') {
            setenv(d->name, d->dflt, 1); /* the default is one of the choices */
            assert_int_equal(stu_param_reload(), STRATA_OK);
            unsetenv(d->name);
        }
    }
    assert_int_equal(stu_param_reload(), STRATA_OK);
}

static void test_timeouts_bounded(void **state)
{
    const stu_param_id_t t[] = {STU_PARAM_TIMEOUT, STU_PARAM_CONNECT_TIMEOUT};
    for (size_t i = 0; i < 2; i++) {
        refused(t[i], "0");
        refused(t[i], "-1");
        refused(t[i], "-9223372036854775808");
        refused(t[i], "18446744073709552");    /* * 1e6 ns would wrap */
        refused(t[i], "99999999999999999999"); /* not even an int64 */
        refused(t[i], "1G");
        refused(t[i], "10s");
        refused(t[i], "");
        accepted(t[i], "1");
        accepted(t[i], "604800000"); /* a week */
        refused(t[i], "604800001");
        /* the largest accepted value still fits a nanosecond deadline many times over */
        assert_true(stu_param_def(t[i])->max < (int64_t)(UINT64_MAX / 1000000ull / 1000));
    }
}

static void test_socket_options_bounded(void **state)
{
    accepted(STU_PARAM_SOCKET_USER_TIMEOUT, "0");
    accepted(STU_PARAM_SOCKET_USER_TIMEOUT, "98301000"); /* 3 probes of 32767 s */
    refused(STU_PARAM_SOCKET_USER_TIMEOUT, "98301001");
    refused(STU_PARAM_SOCKET_USER_TIMEOUT, "2147483648");
    refused(STU_PARAM_SOCKET_USER_TIMEOUT, "-1");
    refused(STU_PARAM_SOCKET_NSOCKS, "0");
    refused(STU_PARAM_SOCKET_NSOCKS, "9");
    accepted(STU_PARAM_SOCKET_NSOCKS, "8");
    refused(STU_PARAM_SOCKET_BUFSIZE, "2G");
    refused(STU_PARAM_SOCKET_BUFSIZE, "-4096");
    accepted(STU_PARAM_SOCKET_BUFSIZE, "4M");
    refused(STU_PARAM_SOCKET_STRIPE_MIN, "-1");
    refused(STU_PARAM_SHM_CHUNK, "0");
    refused(STU_PARAM_SHM_CHUNK, "2G");
    accepted(STU_PARAM_SHM_CHUNK, "1G");
    refused(STU_PARAM_ROOT_FD, "-2");
    refused(STU_PARAM_JOB_SECRET_FD, "4294967296");
}

static void test_ib_values_bounded(void **state)
{
    refused(STU_PARAM_IB_TIMEOUT, "0");
    refused(STU_PARAM_IB_TIMEOUT, "32");
    refused(STU_PARAM_IB_RETRY_CNT, "8");
    refused(STU_PARAM_IB_SL, "16");
    refused(STU_PARAM_IB_TC, "256");
    refused(STU_PARAM_IB_QPS_PER_CONNECTION, "9");
    refused(STU_PARAM_IB_GID_INDEX, "-2");
    refused(STU_PARAM_IB_ADAPTIVE_ROUTING, "2");
    refused(STU_PARAM_IB_FLUSH, "yes");
    accepted(STU_PARAM_IB_TC, "106");
    accepted(STU_PARAM_IB_GID_INDEX, "3");
}

static void test_choices_and_filters(void **state)
{
    refused(STU_PARAM_SOCKET_FAMILY, "AF_UNIX");
    accepted(STU_PARAM_SOCKET_FAMILY, "");
    accepted(STU_PARAM_SOCKET_FAMILY, "af_inet6");
    accepted(STU_PARAM_SOCKET_FAMILY, "ipv4");
    refused(STU_PARAM_IB_ADDR_FAMILY, "");
    refused(STU_PARAM_DEBUG, "LOUD");
    accepted(STU_PARAM_DEBUG, "info");
    refused(STU_PARAM_SOCKET_IFNAME, "eth,,ib");
    refused(STU_PARAM_SOCKET_IFNAME, "mlx5_0:x");
    accepted(STU_PARAM_SOCKET_IFNAME, "^docker,lo");
    refused(STU_PARAM_IB_HCA, "mlx5_0:999");
    accepted(STU_PARAM_IB_HCA, "=mlx5_0:1,mlx5_1");
    refused(STU_PARAM_ABORT_ON_ERROR, "2");
    refused(STU_PARAM_CALIBRATE, "true");
}

/* The job secret never reaches a log line, nor a warning about a bad value. */
static void test_secret_not_logged(void **state)
{
    const char *secret = "0123456789abcdef-do-not-print-me";
    setenv("STRATA_JOB_SECRET", secret, 1);
    stu_param_reload();
    stu_log_set_sink(capture_sink, STU_LOG_INFO);
    stu_param_log_all();
    assert_non_null(strstr(warns, "STRATA_JOB_SECRET=(set, not shown)"));
    assert_null(strstr(warns, "do-not-print-me"));
    unsetenv("STRATA_JOB_SECRET");
}

static const char *file_write(const char *text, size_t len, mode_t mode)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/strata-file-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
    return path;
}

static void test_file_read(void **state)
{
    char *buf = NULL;
    size_t len = 0;

    const char *p = file_write("abc\0def", 7, 0600);
    assert_int_equal(stu_file_read(p, 7, STU_FILE_PRIVATE, "t", &buf, &len), STRATA_OK);
    assert_int_equal(len, 7);
    assert_memory_equal(buf, "abc\0def", 8); /* NUL-terminated past the end too */
    free(buf);
    buf = NULL;
    assert_int_equal(stu_file_read(p, 6, 0, "t", &buf, &len), STRATA_ERR_INVALID);
    assert_null(buf);
    /* readable by others: refused when it must be private, fine otherwise */
    assert_int_equal(chmod(p, 0644), 0);
    assert_int_equal(stu_file_read(p, 64, STU_FILE_PRIVATE, "t", &buf, &len),
                     STRATA_ERR_INVALID);
    assert_int_equal(stu_file_read(p, 64, 0, "t", &buf, &len), STRATA_OK);
    free(buf);
    /* through a descriptor, twice (pread from 0) */
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(stu_file_read_fd(fd, 64, 0, "t", &buf, &len), STRATA_OK);
        assert_int_equal(len, 7);
        free(buf);
    }
    close(fd);
    unlink(p);
    assert_int_equal(stu_file_read("/dev/zero", 64, 0, "t", &buf, &len), STRATA_ERR_INVALID);
    assert_int_equal(stu_file_read("/", 64, 0, "t", &buf, &len), STRATA_ERR_INVALID);
    assert_int_equal(stu_file_read("/nonexistent", 64, 0, "t", &buf, &len), STRATA_ERR_IO);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    assert_int_equal(stu_file_read_fd(pipefd[0], 64, 0, "t", &buf, &len), STRATA_ERR_INVALID);
    close(pipefd[0]);
    close(pipefd[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_table_sane, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeouts_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_socket_options_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ib_values_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_choices_and_filters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secret_not_logged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_read, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
