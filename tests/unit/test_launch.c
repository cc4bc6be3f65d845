/* Launcher detection (coll/launch.c) over injected environments. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "coll/launch.h"

static const char *const *fake_env;

static const char *env_lookup(const char *name)
{
    for (int i = 0; fake_env[i] != NULL; i += 2)
        if (strcmp(fake_env[i], name) == 0)
            return fake_env[i + 1];
    return NULL;
}

static strata_status_t detect(const char *const *env, stc_launch_t *l)
{
    fake_env = env;
    return stc_launch_detect(env_lookup, l);
}

static void test_strata_variables(void **state)
{
    const char *env[] = {"STRATA_RANK", "2", "STRATA_NRANKS", "4", "STRATA_ROOT_ADDR",
                         "10.0.0.1:29500", "STRATA_NODE_ID", "n1", NULL};
    stc_launch_t l;
    assert_int_equal(detect(env, &l), STRATA_OK);
    assert_int_equal(l.rank, 2);
    assert_int_equal(l.nranks, 4);
    assert_string_equal(l.root_addr, "10.0.0.1:29500");
    assert_string_equal(l.node_id, "n1");
    assert_string_equal(l.source, "STRATA");
}

static void test_openmpi(void **state)
{
    const char *env[] = {"OMPI_COMM_WORLD_RANK", "5", "OMPI_COMM_WORLD_SIZE", "8",
                         "MASTER_ADDR", "head", "MASTER_PORT", "1234", NULL};
    stc_launch_t l;
    assert_int_equal(detect(env, &l), STRATA_OK);
    assert_int_equal(l.rank, 5);
    assert_int_equal(l.nranks, 8);
    assert_string_equal(l.root_addr, "head:1234");
    assert_string_equal(l.source, "OpenMPI");
}

static void test_slurm_and_precedence(void **state)
{
    /* Slurm and torchrun both present: Slurm comes first in the documented order. */
    const char *env[] = {"SLURM_PROCID", "1", "SLURM_NTASKS", "2", "RANK", "0",
                         "WORLD_SIZE", "2", "STRATA_ROOT_ADDR", "h:1", NULL};
    stc_launch_t l;
    assert_int_equal(detect(env, &l), STRATA_OK);
    assert_int_equal(l.rank, 1);
    assert_string_equal(l.source, "Slurm");
}

static void test_torchrun_ipv6_master(void **state)
{
    const char *env[] = {"RANK", "0", "WORLD_SIZE", "1", "MASTER_ADDR", "fd00::1",
                         "MASTER_PORT", "29500", NULL};
    stc_launch_t l;
    assert_int_equal(detect(env, &l), STRATA_OK);
    assert_string_equal(l.root_addr, "[fd00::1]:29500");
    assert_string_equal(l.source, "torchrun");
    assert_true(strlen(l.node_id) > 0);   /* the host name */
}

static void test_bad_values(void **state)
{
    const char *none[] = {NULL};
    const char *half[] = {"STRATA_RANK", "0", NULL};
    const char *junk[] = {"STRATA_RANK", "x1", "STRATA_NRANKS", "2", NULL};
    const char *range[] = {"STRATA_RANK", "2", "STRATA_NRANKS", "2", NULL};
    const char *zero[] = {"STRATA_RANK", "0", "STRATA_NRANKS", "0", NULL};
    stc_launch_t l;
    assert_int_equal(detect(none, &l), STRATA_ERR_INVALID);
    assert_int_equal(detect(half, &l), STRATA_ERR_INVALID);
    assert_int_equal(detect(junk, &l), STRATA_ERR_INVALID);
    assert_int_equal(detect(range, &l), STRATA_ERR_INVALID);
    assert_int_equal(detect(zero, &l), STRATA_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strata_variables),
        cmocka_unit_test(test_openmpi),
        cmocka_unit_test(test_slurm_and_precedence),
        cmocka_unit_test(test_torchrun_ipv6_master),
        cmocka_unit_test(test_bad_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
