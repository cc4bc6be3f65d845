/*
 * strata-plan's pure parts: the command line (every flag, both spellings,
 * rejection of bad values and shapes), the dims and model it builds, and a
 * row of its table checked against the cost model and the selection table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algos/profile.h"
#include "tools/plan/plan_table.h"

static strata_status_t parse(stb_plan_opts_t *o, char *err, int argc, char **argv)
{
    return stb_plan_opts_parse(argc, argv, o, err, 256);
}

#define PARSE(o, err, ...)                                                               \
    parse(o, err, (int)(sizeof((char *[]){"strata-plan", __VA_ARGS__}) / sizeof(char *)), \
          (char *[]){"strata-plan", __VA_ARGS__})

static void test_defaults(void **state)
{
    stb_plan_opts_t o;
    char err[256];
    char *argv[] = {"strata-plan"};

    assert_int_equal(parse(&o, err, 1, argv), STRATA_OK);
    assert_int_equal(o.nodes, 2);
    assert_int_equal(o.per_node, 2);
    assert_int_equal(o.rails, 1);
    assert_int_equal(o.coll, STA_COLL_ALLREDUCE);
    assert_int_equal(o.min_bytes, 8);
    assert_int_equal(o.max_bytes, (size_t)1 << 30);
    assert_int_equal(o.factor, 4);
    for (int f = 0; f < STA_FIELD_COUNT; f++)
        assert_true(o.value[f] < 0.0);
}

static void test_flags(void **state)
{
    stb_plan_opts_t o;
    char err[256];

    assert_int_equal(PARSE(&o, err, "-N", "64", "-L8", "--rails=4", "--interleaved", "--coll",
                           "allgather", "-b", "1K", "--maxbytes=2G", "-f", "2", "--shm-alpha",
                           "0", "--shm-beta=450", "--net-alpha", "5.5", "--net-beta", "50",
                           "--gamma", "900", "--profile", "/x"),
                     STRATA_OK);
    assert_int_equal(o.nodes, 64);
    assert_int_equal(o.per_node, 8);
    assert_int_equal(o.rails, 4);
    assert_int_equal(o.interleaved, 1);
    assert_int_equal(o.coll, STA_COLL_ALLGATHER);
    assert_int_equal(o.min_bytes, 1024);
    assert_int_equal(o.max_bytes, (size_t)2 << 30);
    assert_int_equal(o.factor, 2);
    assert_true(o.value[STA_FIELD_SHM_ALPHA] == 0.0);
    assert_true(o.value[STA_FIELD_SHM_BETA] == 450.0);
    assert_true(o.value[STA_FIELD_NET_ALPHA] == 5.5);
    assert_true(o.value[STA_FIELD_NET_BETA] == 50.0);
    assert_true(o.value[STA_FIELD_GAMMA] == 900.0);
    assert_string_equal(o.profile, "/x");

    sta_dims_t d = stb_plan_dims(&o, NULL);
    assert_int_equal(d.nranks, 512);
    assert_int_equal(d.nnodes, 64);
    assert_int_equal(d.local_size, 8);
    assert_int_equal(d.nrails, 4);
    assert_int_equal(d.contiguous, 0);
    assert_int_equal(sta_dims_check(&d), STRATA_OK);

    assert_int_equal(PARSE(&o, err, "--coll", "all", "-h"), STRATA_OK);
    assert_int_equal(o.all_colls, 1);
    assert_int_equal(o.help, 1);
}

static void test_rejects(void **state)
{
    stb_plan_opts_t o;
    char err[256];

    err[0] = '\0';
    assert_int_equal(PARSE(&o, err, "--bogus"), STRATA_ERR_INVALID);
    assert_non_null(strstr(err, "--bogus"));
    assert_int_equal(PARSE(&o, err, "-N", "0"), STRATA_ERR_INVALID);
    assert_int_equal(PARSE(&o, err, "-N", "4x"), STRATA_ERR_INVALID);
    assert_int_equal(PARSE(&o, err, "-N"), STRATA_ERR_INVALID);            /* no value */
    assert_int_equal(PARSE(&o, err, "-L", "2", "-R", "3"), STRATA_ERR_INVALID);  /* R > L */
    assert_int_equal(PARSE(&o, err, "--coll", "alltoall"), STRATA_ERR_INVALID);
    assert_int_equal(PARSE(&o, err, "-b", "1M", "-e", "1K"), STRATA_ERR_INVALID);
    assert_int_equal(PARSE(&o, err, "-f", "1"), STRATA_ERR_INVALID);
    assert_int_equal(PARSE(&o, err, "--net-beta", "0"), STRATA_ERR_INVALID);  /* beta > 0 */
    assert_int_equal(PARSE(&o, err, "--net-alpha", "-1"), STRATA_ERR_INVALID);
    assert_int_equal(PARSE(&o, err, "--gamma", "inf"), STRATA_ERR_INVALID);
    assert_int_equal(PARSE(&o, err, "-L", "1025"), STRATA_ERR_INVALID);
    assert_int_equal(PARSE(&o, err, "-N", "1048577"), STRATA_ERR_INVALID);
}

/* A row holds the model's time of every selectable algorithm and the table's choice. */
static void test_row(void **state)
{
    stb_plan_opts_t o;
    char err[256];
    sta_model_t m;
    sta_select_t t;
    stb_plan_row_t row;

    assert_int_equal(PARSE(&o, err, "-N", "4", "-L", "4", "-R", "2", "--net-beta", "10"),
                     STRATA_OK);
    sta_model_default(&m);
    stb_plan_model_apply(&o, &m);
    assert_true(m.net.beta_gbps == 10.0);
    assert_true(m.shm.beta_gbps == STA_DEFAULT_SHM_BETA_GBPS);   /* untouched */
    sta_dims_t d = stb_plan_dims(&o, &m);
    assert_int_equal(sta_select_build(&m, &d, STA_ALGO_AUTO, &t), STRATA_OK);
    for (size_t n = 8; n <= ((size_t)1 << 30); n *= 8) {
        for (int c = 0; c < STA_COLL_COUNT; c++) {
            stb_plan_row(&t, (sta_coll_t)c, n, &row);
            assert_int_equal(row.bytes, n);
            assert_int_equal(row.chosen, sta_select_lookup(&t, (sta_coll_t)c, n));
            assert_true(row.chosen_us == row.us[row.chosen]);
            for (int a = 0; a < STA_ALGO_COUNT; a++) {
                if (!sta_algo_selectable(&d, (sta_coll_t)c, (sta_algo_t)a))
                    assert_true(row.us[a] < 0.0);
                else
                    assert_true(row.us[a] ==
                                sta_cost_us(&m, &d, (sta_coll_t)c, (sta_algo_t)a, n));
            }
            /* algbw = n / t, in GB/s with t in µs */
            assert_true(row.algbw_gbps > 0.0);
            double want = (double)n / (row.chosen_us * 1e3);
            assert_true(row.algbw_gbps > want * 0.999999 && row.algbw_gbps < want * 1.000001);
        }
    }
    /* allreduce's busbw factor is 2(P-1)/P = 30/16 */
    stb_plan_row(&t, STA_COLL_ALLREDUCE, 1 << 20, &row);
    assert_true(row.busbw_gbps > row.algbw_gbps * 1.874999 &&
                row.busbw_gbps < row.algbw_gbps * 1.875001);
}

/* The planner's dims carry the library's pipeline floor: tcp's striping size where the model
 * says the cores bound the net (2x2 on 2 cores, a 10 GB/s net), none where the link bounds
 * (2 Gbit/s), on ib, or with no model. */
static void test_dims_net_msg_min(void **state)
{
    stb_plan_opts_t o;
    char err[256];
    sta_model_t m;
    (void)state;

    sta_model_default(&m);
    assert_int_equal(PARSE(&o, err, "-N", "2", "-L", "2", "--host-ranks", "4",
                           "--host-cores", "2", "--transport", "tcp"), STRATA_OK);
    m.net.beta_gbps = 10.0;
    sta_dims_t d = stb_plan_dims(&o, &m);
    assert_true(d.net_msg_min > 0);
    assert_int_equal(d.net_msg_min, sta_cost_net_msg_min(&m, &d, d.net_msg_min));
    assert_int_equal(stb_plan_dims(&o, NULL).net_msg_min, 0);
    m.net.beta_gbps = 0.25;
    assert_int_equal(stb_plan_dims(&o, &m).net_msg_min, 0);
    m.net.beta_gbps = 10.0;
    assert_int_equal(PARSE(&o, err, "-N", "2", "-L", "2", "--host-ranks", "4",
                           "--host-cores", "2", "--transport", "ib"), STRATA_OK);
    assert_int_equal(stb_plan_dims(&o, &m).net_msg_min, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_row),
        cmocka_unit_test(test_dims_net_msg_min),
    };
    return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
