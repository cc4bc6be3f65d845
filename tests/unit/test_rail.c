/* Unit tests of STRATA_RAIL_MAP parsing, the local rank -> NIC mapping and nrails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "algos/rail.h"
#include "util/param.h"

static void test_parse_and_map(void **state)
{
    sta_rail_map_t map;

    assert_int_equal(sta_rail_map_parse("0,1,0,1", 4, 2, &map), STRATA_OK);
    assert_int_equal(map.nentries, 4);
    assert_int_equal(sta_rail_device(0, 2, &map), 0);
    assert_int_equal(sta_rail_device(1, 2, &map), 1);
    assert_int_equal(sta_rail_device(2, 2, &map), 0);
    assert_int_equal(sta_rail_device(3, 2, &map), 1);
    assert_int_equal(sta_rail_count(4, 2, &map), 2);

    /* Blanks around entries; a map may send ranks anywhere, in any order. */
    assert_int_equal(sta_rail_map_parse(" 3 , 2,1 ,0", 4, 4, &map), STRATA_OK);
    assert_int_equal(sta_rail_device(0, 4, &map), 3);
    assert_int_equal(sta_rail_device(3, 4, &map), 0);
    assert_int_equal(sta_rail_count(4, 4, &map), 4);

    /* All ranks on one of two NICs: one rail. Uneven use counts distinct NICs. */
    assert_int_equal(sta_rail_map_parse("1,1,1,1", 4, 2, &map), STRATA_OK);
    assert_int_equal(sta_rail_count(4, 2, &map), 1);
    assert_int_equal(sta_rail_map_parse("0,0,0,1", 4, 2, &map), STRATA_OK);
    assert_int_equal(sta_rail_count(4, 2, &map), 2);
}

static void test_default_mapping(void **state)
{
    sta_rail_map_t map;

    /* Empty spec: no map; local rank mod ndev. */
    memset(&map, 0x11, sizeof(map));
    assert_int_equal(sta_rail_map_parse("", 4, 2, &map), STRATA_OK);
    assert_int_equal(map.nentries, 0);
    assert_int_equal(sta_rail_map_parse(NULL, 4, 2, &map), STRATA_OK);
    assert_int_equal(sta_rail_map_parse("  ", 4, 2, &map), STRATA_OK);
    assert_int_equal(map.nentries, 0);
    assert_int_equal(sta_rail_device(5, 2, &map), 1);
    assert_int_equal(sta_rail_device(5, 3, NULL), 2);
    assert_int_equal(sta_rail_device(0, 1, NULL), 0);
    /* nrails = min(L, ndev) */
    assert_int_equal(sta_rail_count(4, 2, NULL), 2);
    assert_int_equal(sta_rail_count(2, 8, &map), 2);
    assert_int_equal(sta_rail_count(1, 1, NULL), 1);
    /* Bad arguments. */
    assert_int_equal(sta_rail_device(-1, 2, NULL), -1);
    assert_int_equal(sta_rail_device(0, 0, NULL), -1);
    assert_int_equal(sta_rail_count(0, 2, NULL), 0);
    assert_int_equal(sta_rail_count(4, 0, NULL), 0);
}

static void test_parse_rejects(void **state)
{
    static const char *const bad[] = {
        "0,1,0",        /* too few entries for 4 local ranks */
        "0,1,0,1,0",    /* too many */
        "0,2,0,1",      /* device 2 of 2 */
        "0,,1,0",       /* empty entry */
        "0,1,0,1,",     /* trailing comma */
        ",0,1,0,1",
        "a,1,0,1",
        "-1,0,0,0",
        "+1,0,0,0",
        "1 2,0,0,0",
        "0x1,0,0,0",
        "0;1;0;1",
        "99999999999999999999999,0,0,0",
    };
    sta_rail_map_t map;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&map, 0x7f, sizeof(map));
        if (sta_rail_map_parse(bad[i], 4, 2, &map) != STRATA_ERR_INVALID)
            fail_msg("'%s' was accepted", bad[i]);
        assert_int_equal(map.nentries, 0x7f7f7f7f);     /* untouched */
    }
    assert_int_equal(sta_rail_map_parse("0", 0, 2, &map), STRATA_ERR_INVALID);
    assert_int_equal(sta_rail_map_parse("0", 1, 0, &map), STRATA_ERR_INVALID);
    assert_int_equal(sta_rail_map_parse("0", STA_RAIL_MAP_MAX + 1, 1, &map),
                     STRATA_ERR_INVALID);
}

static void test_env(void **state)
{
    sta_rail_map_t map;

    setenv("STRATA_RAIL_MAP", "1,0", 1);
    stu_param_reload();
    assert_int_equal(sta_rail_map_env_read(2, 2, &map), STRATA_OK);
    assert_int_equal(sta_rail_device(0, 2, &map), 1);
    assert_int_equal(sta_rail_map_env_read(4, 2, &map), STRATA_ERR_INVALID);
    unsetenv("STRATA_RAIL_MAP");
    stu_param_reload();
    assert_int_equal(sta_rail_map_env_read(4, 2, &map), STRATA_OK);
    assert_int_equal(map.nentries, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_map),
        cmocka_unit_test(test_default_mapping),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
