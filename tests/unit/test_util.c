/*
 * Pure logic of util/ and the plugin's status translation: integer parameters
 * with suffixes, the parameter table (every variable documented in the
 * README), name filters in NCCL_SOCKET_IFNAME / NCCL_IB_HCA syntax, status
 * names, and strata_status_t -> ncclResult_t.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin.h"
#include "strata/strata.h"
#include "util/build_info.h"
#include "util/name_filter.h"
#include "util/param.h"

static void test_param_parse_int(void **state)
{
    int64_t v;
    assert_int_equal(stu_param_parse_int("123", &v), STRATA_OK);
    assert_int_equal(v, 123);
    assert_int_equal(stu_param_parse_int("64K", &v), STRATA_OK);
    assert_int_equal(v, 65536);
    assert_int_equal(stu_param_parse_int("4m", &v), STRATA_OK);
    assert_int_equal(v, 4 << 20);
    assert_int_equal(stu_param_parse_int("1G", &v), STRATA_OK);
    assert_int_equal(v, 1 << 30);
    assert_int_equal(stu_param_parse_int("-2", &v), STRATA_OK);
    assert_int_equal(v, -2);
    assert_int_equal(stu_param_parse_int("0x10", &v), STRATA_OK);
    assert_int_equal(v, 16);
    v = 77;
    assert_int_equal(stu_param_parse_int("", &v), STRATA_ERR_INVALID);
    assert_int_equal(stu_param_parse_int("12KB", &v), STRATA_ERR_INVALID);
    assert_int_equal(stu_param_parse_int("K", &v), STRATA_ERR_INVALID);
    assert_int_equal(stu_param_parse_int("99999999999999999999", &v), STRATA_ERR_INVALID);
    assert_int_equal(stu_param_parse_int("9000000000000G", &v), STRATA_ERR_INVALID);
    assert_int_equal(v, 77);   /* outputs only on success */
}

static void test_param_env_and_default(void **state)
{
    setenv("STRATA_SOCKET_NSOCKS", "3", 1);
    assert_int_equal(stu_param_reload(), STRATA_OK);
    assert_int_equal(stu_param_int(STU_PARAM_SOCKET_NSOCKS), 3);
    setenv("STRATA_SOCKET_NSOCKS", "three", 1); /* malformed: an error, and the default */
    assert_int_equal(stu_param_reload(), STRATA_ERR_INVALID);
    int64_t dflt;
    assert_int_equal(stu_param_parse_int(stu_param_def(STU_PARAM_SOCKET_NSOCKS)->dflt, &dflt),
                     STRATA_OK);
    assert_int_equal(stu_param_int(STU_PARAM_SOCKET_NSOCKS), dflt);
    unsetenv("STRATA_SOCKET_NSOCKS");
    assert_int_equal(stu_param_reload(), STRATA_OK);
    assert_null(stu_param_env(STU_PARAM_SOCKET_NSOCKS));
    assert_string_equal(stu_param_str(STU_PARAM_TRANSPORT), "auto");
}

/* Every variable in the table has a help text and a row in the README's table. */
static void test_params_documented(void **state)
{
    FILE *f = fopen(STRATA_SOURCE_DIR "/README.md", "r");
    assert_non_null(f);
    static char readme[1 << 20];
    size_t n = fread(readme, 1, sizeof(readme) - 1, f);
    fclose(f);
    readme[n] = '\0';
    for (int i = 0; i < STU_PARAM_COUNT; i++) {
        const stu_param_def_t *d = stu_param_def((stu_param_id_t)i);
        char row[128];
        assert_non_null(d->name);
        assert_true(strncmp(d->name, "STRATA_", 7) == 0);
        assert_true(strlen(d->help) > 10);
        snprintf(row, sizeof(row), "| `%s` |", d->name);
        if (strstr(readme, row) == NULL)
            fail_msg("%s is not in the README's table (run build/bin/strata-params --markdown)",
                     d->name);
    }
}

static void test_name_filter(void **state)
{
    stu_name_filter_t f;
    assert_int_equal(stu_name_filter_parse("", &f), STRATA_OK);
    assert_true(stu_name_filter_match(&f, "anything", -1));
    assert_int_equal(stu_name_filter_parse("eth,ib", &f), STRATA_OK);
    assert_true(stu_name_filter_match(&f, "eth0", -1));
    assert_true(stu_name_filter_match(&f, "ib1", -1));
    assert_false(stu_name_filter_match(&f, "lo", -1));
    assert_int_equal(stu_name_filter_parse("^docker,lo", &f), STRATA_OK);
    assert_false(stu_name_filter_match(&f, "docker0", -1));
    assert_false(stu_name_filter_match(&f, "lo", -1));
    assert_true(stu_name_filter_match(&f, "eth0", -1));
    assert_int_equal(stu_name_filter_parse("=eth0", &f), STRATA_OK);
    assert_true(stu_name_filter_match(&f, "eth0", -1));
    assert_false(stu_name_filter_match(&f, "eth01", -1));
    assert_int_equal(stu_name_filter_parse("^=lo", &f), STRATA_OK);
    assert_false(stu_name_filter_match(&f, "lo", -1));
    assert_true(stu_name_filter_match(&f, "lo0", -1));
    assert_int_equal(stu_name_filter_parse("mlx5_0:1,mlx5_1", &f), STRATA_OK);
    assert_true(stu_name_filter_match(&f, "mlx5_0", 1));
    assert_false(stu_name_filter_match(&f, "mlx5_0", 2));
    assert_true(stu_name_filter_match(&f, "mlx5_1", 2));
    assert_true(stu_name_filter_match(&f, "mlx5_0", -1));   /* the device as a whole */
    /* NCCL 2.30's hca:port:rail:plane */
    assert_int_equal(stu_name_filter_parse("mlx5_0:1:3:1,mlx5_1:1:7,mlx5_2", &f), STRATA_OK);
    assert_true(stu_name_filter_match(&f, "mlx5_0", 1));
    assert_int_equal(stu_name_filter_find(&f, "mlx5_0", 1), 0);
    assert_int_equal(f.entries[0].rail, 3);
    assert_int_equal(f.entries[0].plane, 1);
    assert_int_equal(stu_name_filter_find(&f, "mlx5_1", 1), 1);
    assert_int_equal(f.entries[1].rail, 7);
    assert_int_equal(f.entries[1].plane, -1);
    assert_int_equal(f.entries[2].rail, -1);
    assert_int_equal(stu_name_filter_find(&f, "mlx5_0", 2), -1);
    assert_int_equal(stu_name_filter_find(&f, "eth0", -1), -1);
    assert_int_equal(stu_name_filter_parse("^mlx5_0:1:3:1", &f), STRATA_OK);
    assert_int_equal(stu_name_filter_find(&f, "mlx5_0", 1), -1);    /* excludes name none */
    assert_int_equal(stu_name_filter_parse("mlx5_0:1,mlx5_1", &f), STRATA_OK);
    /* bad specs leave the filter unchanged */
    stu_name_filter_t before = f;
    assert_int_equal(stu_name_filter_parse("eth,,ib", &f), STRATA_ERR_INVALID);
    assert_int_equal(stu_name_filter_parse("mlx5_0:x", &f), STRATA_ERR_INVALID);
    assert_int_equal(stu_name_filter_parse("mlx5_0:", &f), STRATA_ERR_INVALID);
    assert_int_equal(stu_name_filter_parse("mlx5_0:999", &f), STRATA_ERR_INVALID);
    assert_int_equal(stu_name_filter_parse("mlx5_0:1:2:3:4", &f), STRATA_ERR_INVALID);
    assert_int_equal(stu_name_filter_parse("mlx5_0:1::3", &f), STRATA_ERR_INVALID);
    assert_int_equal(stu_name_filter_parse("mlx5_0:1:40000", &f), STRATA_ERR_INVALID);
    char longname[100];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(stu_name_filter_parse(longname, &f), STRATA_ERR_INVALID);
    assert_memory_equal(&before, &f, sizeof(f));
}

static void test_status_names_and_translation(void **state)
{
    assert_string_equal(strata_status_str(STRATA_ERR_REMOTE), "STRATA_ERR_REMOTE");
    assert_string_equal(strata_status_str((strata_status_t)-999), "STRATA_ERR_UNKNOWN");
    assert_int_equal(stp_status_to_nccl(STRATA_OK), ncclSuccess);
    assert_int_equal(stp_status_to_nccl(STRATA_ERR_REMOTE), ncclRemoteError);
    assert_int_equal(stp_status_to_nccl(STRATA_ERR_TIMEOUT), ncclRemoteError);
    assert_int_equal(stp_status_to_nccl(STRATA_ERR_AUTH), ncclRemoteError);
    assert_string_equal(strata_status_str(STRATA_ERR_AUTH), "STRATA_ERR_AUTH");
    assert_int_equal(stp_status_to_nccl(STRATA_ERR_TRUNCATED), ncclInvalidUsage);
    assert_int_equal(stp_status_to_nccl(STRATA_ERR_UNSUPPORTED), ncclInvalidUsage);
    assert_int_equal(stp_status_to_nccl(STRATA_ERR_NOT_FOUND), ncclInvalidUsage);
    assert_int_equal(stp_status_to_nccl(STRATA_ERR_INVALID), ncclInternalError);
    assert_int_equal(stp_status_to_nccl(STRATA_ERR_INTERNAL), ncclInternalError);
    assert_int_equal(stp_status_to_nccl(STRATA_ERR_IO), ncclSystemError);
    assert_int_equal(stp_status_to_nccl(STRATA_ERR_NO_MEMORY), ncclSystemError);
    assert_int_equal(stp_status_to_nccl((strata_status_t)-999), ncclSystemError);
}

/* What make wrote into the build's configuration is what the library holds. */
static void test_build_info(void **state)
{
    const stu_build_info_t *b = stu_build_info();
    char names[128] = "";

    for (int i = 0; i < stt_registry_count(); i++) {
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? " " : "",
                 stt_registry_at(i)->name);
    }
    assert_string_equal(names, b->transports);
    assert_string_equal(b->version, STRATA_VERSION_STRING);
    assert_non_null(strstr(b->summary, b->transports));
    assert_non_null(strstr(b->summary, b->sanitizers));
#ifdef __SANITIZE_ADDRESS__
    assert_non_null(strstr(b->sanitizers, "asan"));
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_parse_int),
        cmocka_unit_test(test_param_env_and_default),
        cmocka_unit_test(test_params_documented),
        cmocka_unit_test(test_name_filter),
        cmocka_unit_test(test_status_names_and_translation),
        cmocka_unit_test(test_build_info),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
