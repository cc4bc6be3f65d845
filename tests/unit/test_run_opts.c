/* strata-run's pure parts: its command line, tc rates, the tbf burst, node placement. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "tools/run/run_opts.h"
#include "sts_cmocka.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void test_parse_demo_line(void **state)
{
    (void)state;
    char *argv[] = {"strata-run", "-n", "4", "--nodes", "2", "--netns", "--inter-rate", "2gbit",
                    "--", "strata-perf", "-b", "8", "-e", "64M"};
    stb_run_opts_t o;
    char err[128];
    assert_ok(stb_run_opts_parse(ARGC(argv), argv, &o, err, sizeof(err)));
    assert_int_equal(o.nranks, 4);
    assert_int_equal(o.nodes, 2);
    assert_true(o.netns);
    assert_string_equal(o.inter_rate, "2gbit");
    assert_int_equal(o.rate_bps, 2000000000ull);
    assert_int_equal(o.prog_index, 9);
    assert_string_equal(argv[o.prog_index], "strata-perf");
    assert_int_equal(o.timeout_s, STB_RUN_DEFAULT_TIMEOUT_S);
}

static void test_parse_without_dashes(void **state)
{
    (void)state;
    /* the program's own flags after its name are never read as strata-run's */
    char *argv[] = {"strata-run", "-n", "3", "prog", "-n", "9", "--netns"};
    stb_run_opts_t o;
    assert_ok(stb_run_opts_parse(ARGC(argv), argv, &o, NULL, 0));
    assert_int_equal(o.nranks, 3);
    assert_int_equal(o.nodes, 1);
    assert_false(o.netns);
    assert_int_equal(o.prog_index, 3);
}

static void test_parse_rails(void **state)
{
    (void)state;
    char *argv[] = {"strata-run", "-n", "2", "--nodes", "2", "--netns", "--rails", "2",
                    "--rail-down", "1@1500:1", "--", "prog"};
    char *node0[] = {"strata-run", "-n", "2", "--netns", "--rails", "3", "--rail-down", "2@0",
                     "prog"};
    stb_run_opts_t o;
    assert_ok(stb_run_opts_parse(ARGC(argv), argv, &o, NULL, 0));
    assert_int_equal(o.rails, 2);
    assert_int_equal(o.rail_down, 1);
    assert_int_equal(o.rail_down_ms, 1500);
    assert_int_equal(o.rail_down_node, 1);
    assert_ok(stb_run_opts_parse(ARGC(node0), node0, &o, NULL, 0));
    assert_int_equal(o.rails, 3);
    assert_int_equal(o.rail_down, 2);
    assert_int_equal(o.rail_down_node, 0);
    char *plain[] = {"strata-run", "-n", "2", "prog"};
    assert_ok(stb_run_opts_parse(ARGC(plain), plain, &o, NULL, 0));
    assert_int_equal(o.rails, 1);
    assert_int_equal(o.rail_down, -1);
}

static void test_parse_errors(void **state)
{
    (void)state;
    stb_run_opts_t o;
    char err[128];
    char *no_prog[] = {"strata-run", "-n", "2"};
    char *no_n[] = {"strata-run", "--", "prog"};
    char *bad_n[] = {"strata-run", "-n", "0", "prog"};
    char *many_nodes[] = {"strata-run", "-n", "2", "--nodes", "3", "prog"};
    char *rate_alone[] = {"strata-run", "-n", "2", "--inter-rate", "1gbit", "prog"};
    char *bad_rate[] = {"strata-run", "-n", "2", "--netns", "--inter-rate", "fast", "prog"};
    char *unknown[] = {"strata-run", "-x", "prog"};
    char *rails_alone[] = {"strata-run", "-n", "2", "--rails", "2", "prog"};
    char *many_rails[] = {"strata-run", "-n", "2", "--netns", "--rails", "5", "prog"};
    char *down_no_rail[] = {"strata-run", "-n", "2", "--netns", "--rail-down", "1@10", "prog"};
    char *down_node[] = {"strata-run", "-n", "2", "--netns", "--rails", "2", "--rail-down",
                         "1@10:1", "prog"};
    char *down_syntax[] = {"strata-run", "-n", "2", "--netns", "--rails", "2", "--rail-down",
                           "1@", "prog"};
    char *down_tail[] = {"strata-run", "-n", "2", "--netns", "--rails", "2", "--rail-down",
                         "1@10:0x", "prog"};
    char **cases[] = {no_prog,     no_n,        bad_n,        many_nodes, rate_alone,
                      bad_rate,    unknown,     rails_alone,  many_rails, down_no_rail,
                      down_node,   down_syntax, down_tail};
    int counts[] = {ARGC(no_prog),     ARGC(no_n),        ARGC(bad_n),       ARGC(many_nodes),
                    ARGC(rate_alone),  ARGC(bad_rate),    ARGC(unknown),     ARGC(rails_alone),
                    ARGC(many_rails),  ARGC(down_no_rail), ARGC(down_node),  ARGC(down_syntax),
                    ARGC(down_tail)};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        err[0] = '\0';
        assert_status(stb_run_opts_parse(counts[i], cases[i], &o, err, sizeof(err)),
                      STRATA_ERR_INVALID);
        assert_true(strlen(err) > 0);
    }
}

static void test_rates_and_burst(void **state)
{
    (void)state;
    uint64_t bps;
    assert_ok(stb_run_rate_parse("2gbit", &bps));
    assert_int_equal(bps, 2000000000ull);
    assert_ok(stb_run_rate_parse("500mbit", &bps));
    assert_int_equal(bps, 500000000ull);
    assert_ok(stb_run_rate_parse("1.5Gbit", &bps));
    assert_int_equal(bps, 1500000000ull);
    assert_status(stb_run_rate_parse("2gbps", &bps), STRATA_ERR_INVALID);
    assert_status(stb_run_rate_parse("0gbit", &bps), STRATA_ERR_INVALID);
    assert_status(stb_run_rate_parse("gbit", &bps), STRATA_ERR_INVALID);
    /* one millisecond of traffic, never below a 64 KiB segment */
    assert_int_equal(stb_run_tbf_burst(2000000000ull), 250000);
    assert_int_equal(stb_run_tbf_burst(10000000000ull), 1250000);
    assert_int_equal(stb_run_tbf_burst(100000000ull), 65536);
}

static void test_node_of(void **state)
{
    (void)state;
    assert_int_equal(stb_run_node_of(0, 4, 2), 0);
    assert_int_equal(stb_run_node_of(1, 4, 2), 0);
    assert_int_equal(stb_run_node_of(2, 4, 2), 1);
    assert_int_equal(stb_run_node_of(3, 4, 2), 1);
    assert_int_equal(stb_run_node_of(2, 3, 1), 0);
    /* every node gets a rank, blocks are contiguous */
    for (int n = 1; n <= 8; n++) {
        int seen[8] = {0}, last = 0;
        for (int r = 0; r < 13; r++) {
            int k = stb_run_node_of(r, 13, n);
            assert_true(k >= last && k < n);
            last = k;
            seen[k] = 1;
        }
        for (int k = 0; k < n; k++)
            assert_true(seen[k]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_demo_line),
        cmocka_unit_test(test_parse_without_dashes),
        cmocka_unit_test(test_parse_rails),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_rates_and_burst),
        cmocka_unit_test(test_node_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
