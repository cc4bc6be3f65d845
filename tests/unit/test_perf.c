/*
 * strata-perf's pure parts: nccl-tests' flags and names, the size sweep, the
 * per-size geometry, the bus bandwidth factors, the row / header / footer
 * layout, the data reference and the --model regret. No timing assertions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/tool_data.h"
#include "bench/perf/perf_fmt.h"
#include "bench/perf/perf_model.h"
#include "bench/perf/perf_opts.h"
#include "sts_cmocka.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void test_defaults_are_nccl_tests(void **state)
{
    (void)state;
    char *argv[] = {"strata-perf"};
    stb_perf_opts_t o;
    assert_ok(stb_perf_opts_parse(ARGC(argv), argv, &o, NULL, 0));
    assert_int_equal(o.min_bytes, 32u << 20);
    assert_int_equal(o.max_bytes, 32u << 20);
    assert_int_equal(o.step_bytes, 1u << 20);
    assert_int_equal(o.step_factor, 1);
    assert_int_equal(o.iters, 20);
    assert_int_equal(o.warmup, 1);
    assert_int_equal(o.check, 1);
    assert_int_equal(o.average, STB_PERF_AVG_MEAN);
    assert_int_equal(o.dtype, STRATA_FP32);
    assert_int_equal(o.op, STRATA_SUM);
    assert_int_equal(o.coll, STA_COLL_ALLREDUCE);
    assert_int_equal(o.root, 0);
    assert_false(o.model);
}

static void test_short_long_attached(void **state)
{
    (void)state;
    char *argv[] = {"strata-perf", "-b", "8", "-e64M", "-f", "4", "--iters=5", "--warmup_iters",
                    "2", "-c", "0", "-a", "3", "-d", "bfloat16", "-o", "max", "-r", "1",
                    "--coll", "reduce", "--model", "--rounds", "5"};
    stb_perf_opts_t o;
    char err[128];
    assert_ok(stb_perf_opts_parse(ARGC(argv), argv, &o, err, sizeof(err)));
    assert_int_equal(o.min_bytes, 8);
    assert_int_equal(o.max_bytes, 64u << 20);
    assert_int_equal(o.step_factor, 4);
    assert_int_equal(o.iters, 5);
    assert_int_equal(o.warmup, 2);
    assert_int_equal(o.check, 0);
    assert_int_equal(o.average, STB_PERF_AVG_MAX);
    assert_int_equal(o.dtype, STRATA_BF16);
    assert_int_equal(o.op, STRATA_MAX);
    assert_int_equal(o.root, 1);
    assert_int_equal(o.coll, STA_COLL_REDUCE);
    assert_true(o.model);
    assert_int_equal(o.rounds, 5);
}

static void test_names(void **state)
{
    (void)state;
    static const char *const types[] = {"float", "double", "half", "bfloat16", "int8", "uint8",
                                        "int32", "uint32", "int64", "uint64"};
    static const strata_dtype_t want[] = {STRATA_FP32, STRATA_FP64, STRATA_FP16, STRATA_BF16,
                                          STRATA_INT8, STRATA_UINT8, STRATA_INT32, STRATA_UINT32,
                                          STRATA_INT64, STRATA_UINT64};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        strata_dtype_t t;
        assert_ok(stb_perf_dtype_parse(types[i], &t));
        assert_int_equal(t, want[i]);
        assert_string_equal(strata_dtype_name(t), types[i]);   /* printed as given */
    }
    static const char *const ops[] = {"sum", "prod", "min", "max", "avg"};
    for (size_t i = 0; i < 5; i++) {
        strata_op_t op;
        assert_ok(stb_perf_op_parse(ops[i], &op));
        assert_string_equal(strata_op_name(op), ops[i]);
    }
    sta_coll_t c;
    assert_ok(stb_perf_coll_parse("all_gather", &c));
    assert_int_equal(c, STA_COLL_ALLGATHER);
    assert_ok(stb_perf_coll_parse("reduce_scatter", &c));
    assert_int_equal(c, STA_COLL_REDUCE_SCATTER);
    strata_dtype_t t;
    strata_op_t op;
    assert_status(stb_perf_dtype_parse("float8", &t), STRATA_ERR_INVALID);
    assert_status(stb_perf_op_parse("mulsum", &op), STRATA_ERR_INVALID);
    assert_status(stb_perf_coll_parse("alltoall", &c), STRATA_ERR_INVALID);
}

static void test_bad_flags(void **state)
{
    (void)state;
    char *bad[][3] = {
        {"strata-perf", "-q", "1"},        /* unknown */
        {"strata-perf", "-b", "1X"},       /* bad suffix */
        {"strata-perf", "-n", "0"},        /* no iterations */
        {"strata-perf", "-a", "4"},        /* no such average */
        {"strata-perf", "-d", "float8"},
        {"strata-perf", "--model=1", ""},  /* a flag with a value */
        {"strata-perf", "-b", "-1"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        stb_perf_opts_t o;
        char err[128] = "";
        int argc = bad[i][2][0] ? 3 : 2;
        assert_status(stb_perf_opts_parse(argc, bad[i], &o, err, sizeof(err)),
                      STRATA_ERR_INVALID);
        assert_true(strlen(err) > 0);
    }
    char *missing[] = {"strata-perf", "-e"};
    stb_perf_opts_t o;
    assert_status(stb_perf_opts_parse(2, missing, &o, NULL, 0), STRATA_ERR_INVALID);
    char *order[] = {"strata-perf", "-b", "1M", "-e", "1K"};
    assert_status(stb_perf_opts_parse(5, order, &o, NULL, 0), STRATA_ERR_INVALID);
    char *never[] = {"strata-perf", "-b", "0", "-e", "1K", "-f", "2"};
    assert_status(stb_perf_opts_parse(7, never, &o, NULL, 0), STRATA_ERR_INVALID);
}

static void test_sizes(void **state)
{
    (void)state;
    size_t b;
    assert_ok(stb_perf_size_parse("64K", &b));
    assert_int_equal(b, 65536);
    assert_ok(stb_perf_size_parse("2g", &b));
    assert_int_equal(b, (size_t)2 << 30);
    assert_ok(stb_perf_size_parse("16MB", &b));
    assert_int_equal(b, (size_t)16 << 20);
    assert_status(stb_perf_size_parse("", &b), STRATA_ERR_INVALID);
    assert_status(stb_perf_size_parse("K", &b), STRATA_ERR_INVALID);
}

static void test_sweep(void **state)
{
    (void)state;
    stb_perf_opts_t o;
    size_t s[64];
    char *demo[] = {"strata-perf", "-b", "8", "-e", "64M", "-f", "4"};
    assert_ok(stb_perf_opts_parse(ARGC(demo), demo, &o, NULL, 0));
    size_t n = stb_perf_sweep(&o, s, 64);
    assert_int_equal(n, 12);                 /* 8 * 4^11 = 32 MiB <= 64 MiB < 8 * 4^12 */
    assert_int_equal(s[0], 8);
    assert_int_equal(s[1], 32);
    assert_int_equal(s[11], (size_t)32 << 20);

    char *lin[] = {"strata-perf", "-b", "1K", "-e", "4K", "-i", "1K"};
    assert_ok(stb_perf_opts_parse(ARGC(lin), lin, &o, NULL, 0));
    n = stb_perf_sweep(&o, s, 64);
    assert_int_equal(n, 4);
    assert_int_equal(s[3], 4096);

    char *one[] = {"strata-perf"};
    assert_ok(stb_perf_opts_parse(1, one, &o, NULL, 0));
    assert_int_equal(stb_perf_sweep(&o, s, 64), 1);

    /* more sizes than room: the count says so, nothing is written past the room */
    char *many[] = {"strata-perf", "-b", "1", "-e", "100", "-i", "1"};
    assert_ok(stb_perf_opts_parse(ARGC(many), many, &o, NULL, 0));
    s[10] = 12345;
    assert_int_equal(stb_perf_sweep(&o, s, 10), 100);
    assert_int_equal(s[10], 12345);
}

static void test_geometry(void **state)
{
    (void)state;
    /* nccl-tests: count = size / esz; rs sends and ag receives (count / P) * P */
    stb_perf_geom_t g = stb_perf_geom(STA_COLL_ALLREDUCE, 1024, 4, 4);
    assert_int_equal(g.count, 256);
    assert_int_equal(g.bytes, 1024);
    g = stb_perf_geom(STA_COLL_ALLGATHER, 1000, 4, 3);
    assert_int_equal(g.count, 83);            /* 250 / 3 */
    assert_int_equal(g.send_bytes, 332);
    assert_int_equal(g.recv_bytes, 996);
    assert_int_equal(g.bytes, 996);
    g = stb_perf_geom(STA_COLL_REDUCE_SCATTER, 1000, 4, 3);
    assert_int_equal(g.count, 83);
    assert_int_equal(g.send_bytes, 996);
    assert_int_equal(g.recv_bytes, 332);
    assert_int_equal(g.bytes, 996);
    g = stb_perf_geom(STA_COLL_ALLGATHER, 8, 4, 4);   /* too small to split: size 0 */
    assert_int_equal(g.count, 0);
    assert_int_equal(g.bytes, 0);
    g = stb_perf_geom(STA_COLL_BROADCAST, 7, 2, 4);
    assert_int_equal(g.count, 3);
    assert_int_equal(g.bytes, 6);
}

static void test_busbw_factors(void **state)
{
    (void)state;
    assert_true(stb_perf_busbw_factor(STA_COLL_ALLREDUCE, 4) == 1.5);
    assert_true(stb_perf_busbw_factor(STA_COLL_ALLREDUCE, 1) == 0.0);
    assert_true(stb_perf_busbw_factor(STA_COLL_REDUCE_SCATTER, 4) == 0.75);
    assert_true(stb_perf_busbw_factor(STA_COLL_ALLGATHER, 8) == 0.875);
    assert_true(stb_perf_busbw_factor(STA_COLL_BROADCAST, 8) == 1.0);
    assert_true(stb_perf_busbw_factor(STA_COLL_REDUCE, 8) == 1.0);
    assert_string_equal(stb_perf_test_name(STA_COLL_ALLREDUCE), "all_reduce_perf");
    assert_string_equal(stb_perf_test_name(STA_COLL_ALLGATHER), "all_gather_perf");
    assert_true(stb_perf_coll_has_root(STA_COLL_REDUCE));
    assert_false(stb_perf_coll_has_root(STA_COLL_ALLREDUCE));
    assert_false(stb_perf_coll_has_op(STA_COLL_BROADCAST));
}

static void test_float_str(void **state)
{
    (void)state;
    char b[64];
    stb_perf_float_str(0.5, 6, b, sizeof(b));
    assert_string_equal(b, "  0.50");
    stb_perf_float_str(123.456, 6, b, sizeof(b));
    assert_string_equal(b, "123.46");
    stb_perf_float_str(1234.56, 6, b, sizeof(b));
    assert_string_equal(b, "1234.6");
    stb_perf_float_str(98765.4, 6, b, sizeof(b));
    assert_string_equal(b, " 98765");
    stb_perf_float_str(12.345, 7, b, sizeof(b));
    assert_string_equal(b, "  12.35");
    stb_perf_float_str(12345.67, 7, b, sizeof(b));
    assert_string_equal(b, "12345.7");
    stb_perf_float_str(235604.4, 7, b, sizeof(b));
    assert_string_equal(b, " 235604");
    stb_perf_float_str(123456789.0, 7, b, sizeof(b));
    assert_string_equal(b, "1.2e+08");
}

static void test_row(void **state)
{
    (void)state;
    stb_perf_row_t r = {
        .bytes = 8388608, .count = 2097152, .type = "float", .redop = "sum", .root = -1,
        .time_us = {55094.1, 48937.2}, .algbw = {0.152, 0.171}, .busbw = {0.228, 0.257},
        .wrong = {0, 3}, .checked = 1, .algo = NULL, .model_us = 0,
    };
    char buf[512];
    stb_perf_row_format(&r, buf, sizeof(buf));
    /* nccl-tests' layout: %12li  %12li  %8s  %6s  %6s then 2 x "  %7s  %6s  %6s  %6g" */
    assert_string_equal(buf, "     8388608       2097152     float     sum      -1  "
                             "55094.1    0.15    0.23       0  48937.2    0.17    0.26       3\n");
    r.checked = 0;
    r.algo = "hierarchical";
    r.model_us = 35622.82;
    stb_perf_row_format(&r, buf, sizeof(buf));
    assert_non_null(strstr(buf, "    0.23     N/A  48937.2"));
    assert_non_null(strstr(buf, "    N/A  hierarchical   35622.82\n"));
    r.model_us = -1;
    stb_perf_row_format(&r, buf, sizeof(buf));
    assert_non_null(strstr(buf, "  hierarchical          -\n"));
}

/* Everything fmt wrote to a memory stream. */
static char *capture(void (*fn)(FILE *, void *), void *arg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    fn(f, arg);
    fclose(f);
    return text;
}

static void header_fn(FILE *f, void *arg)
{
    stb_perf_header_print(f, arg);
    stb_perf_columns_print(f, 0);
}

static void footer_fn(FILE *f, void *arg)
{
    (void)arg;
    stb_perf_footer_print(f, 0, 0.109441, "all_reduce_perf");
    stb_perf_footer_print(f, 7, 1.5, "all_reduce_perf");
}

static void test_header_footer(void **state)
{
    (void)state;
    stb_perf_opts_t o;
    char *argv[] = {"strata-perf", "-b", "8", "-e", "64M", "-f", "4"};
    assert_ok(stb_perf_opts_parse(ARGC(argv), argv, &o, NULL, 0));
    stb_perf_hdr_t h = {"0.1.0", "all_reduce_perf", &o};
    char *t = capture(header_fn, &h);
    assert_non_null(strstr(t, "# nccl-tests version strata-perf-0.1.0 nccl-headers=0 "
                              "nccl-library=0\n# Collective test starting: all_reduce_perf\n"));
    assert_non_null(strstr(t, "# nThread 1 nGpus 1 minBytes 8 maxBytes 67108864 step: "
                              "4(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 "
                              "graph: 0 unalign: 0\n"));
    assert_non_null(strstr(t, "#\n# Using devices\n"));
    /* the column titles exactly as nccl-tests prints them without timestamps */
    assert_non_null(strstr(t, "#       size         count      type   redop    root     time   "
                              "algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"));
    assert_non_null(strstr(t, "#        (B)    (elements)                               (us)  "
                              "(GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n"));
    free(t);
    t = capture(footer_fn, NULL);
    assert_string_equal(t, "# Out of bounds values : 0 OK\n"
                           "# Avg bus bandwidth    : 0.109441 \n"
                           "#\n"
                           "# Collective test concluded: all_reduce_perf\n"
                           "# Out of bounds values : 7 FAILED\n"
                           "# Avg bus bandwidth    : 1.5 \n"
                           "#\n"
                           "# Collective test concluded: all_reduce_perf\n");
    free(t);
}

/* The reference against a reduction computed here the slow way, for every type and op. */
static void test_data_reference(void **state)
{
    (void)state;
    enum { P = 5, N = 400 };
    for (int t = 0; t < STRATA_DTYPE_COUNT; t++)
        for (int op = 0; op < STRATA_OP_COUNT; op++) {
            const size_t esz = strata_dtype_size((strata_dtype_t)t);
            stb_data_ref_t ref;
            stb_data_ref_build(&ref, (strata_dtype_t)t, (strata_op_t)op, P);
            /* the expected values are exact small integers: rebuild them as a buffer */
            unsigned char *buf = calloc(N, esz);
            for (size_t g = 0; g < N; g++) {
                int64_t acc = stb_data_value(0, g, (strata_op_t)op, (strata_dtype_t)t);
                for (int r = 1; r < P; r++) {
                    int64_t v = stb_data_value(r, g, (strata_op_t)op, (strata_dtype_t)t);
                    if (op == STRATA_SUM || op == STRATA_AVG) acc += v;
                    else if (op == STRATA_PROD) acc *= v;
                    else if (op == STRATA_MIN) acc = v < acc ? v : acc;
                    else acc = v > acc ? v : acc;
                }
                memcpy(buf + g * esz, ref.table + (g % STB_DATA_PERIOD) * esz, esz);
                if (op == STRATA_SUM && t == STRATA_INT32)
                    assert_int_equal(((int32_t *)buf)[g], (int32_t)acc);
                if (op == STRATA_MAX && t == STRATA_FP64)
                    assert_true(((double *)buf)[g] == (double)acc);
                if (op == STRATA_PROD && t == STRATA_UINT8)
                    assert_int_equal(((uint8_t *)buf)[g], (uint8_t)acc);
            }
            assert_int_equal(stb_data_check_reduced(buf, N, &ref, 0, NULL), 0);
            /* one corrupted element is found, at any offset */
            memset(buf + 133 * esz, 0x7f, esz);
            assert_int_equal(stb_data_check_reduced(buf, N, &ref, 0, NULL), 1);
            free(buf);
        }
}

static void test_data_fill_and_input(void **state)
{
    (void)state;
    enum { N = 1000 };
    int32_t buf[N];
    stb_data_fill(buf, N, STRATA_INT32, STRATA_SUM, 3, 77);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(buf[i], stb_data_value(3, 77 + i, STRATA_SUM, STRATA_INT32));
    assert_int_equal(stb_data_check_input(buf, N, STRATA_INT32, 3, 77, NULL), 0);
    /* ranks differ by 5 mod 19 in every element: all wrong */
    assert_int_equal(stb_data_check_input(buf, N, STRATA_INT32, 2, 77, NULL), N);
    /* int avg divides the sum truncating toward zero, as the library does */
    stb_data_ref_t ref;
    stb_data_ref_build(&ref, STRATA_INT8, STRATA_AVG, 3);
    int8_t e;
    memcpy(&e, ref.table + 0, 1);
    int64_t sum = stb_data_value(0, 0, STRATA_AVG, STRATA_INT8) +
                  stb_data_value(1, 0, STRATA_AVG, STRATA_INT8) +
                  stb_data_value(2, 0, STRATA_AVG, STRATA_INT8);
    assert_int_equal(e, (int8_t)(sum / 3));
}

static void test_model_regret(void **state)
{
    (void)state;
    stb_model_row_t rows[3];
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < STA_ALGO_COUNT; a++) {
            rows[i].pred_us[a] = 100;
            rows[i].meas_us[a] = -1;
        }
    rows[0] = (stb_model_row_t){.bytes = 8, .chosen = STA_ALGO_RECURSIVE,
                                .pred_us = {150, 100, 120, 130}, .meas_us = {300, 200, 250, 400}};
    rows[1] = (stb_model_row_t){.bytes = 1024, .chosen = STA_ALGO_HIERARCHICAL,
                                .pred_us = {150, 100, 90, 130}, .meas_us = {300, 200, 250, -1}};
    rows[2] = (stb_model_row_t){.bytes = 4096, .chosen = STA_ALGO_RING,
                                .pred_us = {50, -1, -1, -1}, .meas_us = {-1, -1, -1, -1}};
    sta_algo_t best;
    assert_true(stb_model_regret(&rows[0], &best) == 0);
    assert_int_equal(best, STA_ALGO_RECURSIVE);
    assert_true(stb_model_regret(&rows[1], &best) == 0.25);
    assert_int_equal(best, STA_ALGO_RECURSIVE);
    assert_true(stb_model_regret(&rows[2], &best) < 0);          /* nothing measured */

    stb_model_summary_t s;
    stb_model_summarise(rows, 3, &s);
    assert_int_equal(s.nsizes, 2);
    assert_int_equal(s.best_hits, 1);
    assert_true(s.mean_regret == 0.125);
    assert_true(s.max_regret == 0.25);
    assert_int_equal(s.max_regret_bytes, 1024);
    assert_true(s.time_regret == (200.0 + 250) / (200 + 200) - 1);
    /* ring: |150-300|/300 twice -> 0.5; recursive |100-200|/200 -> 0.5 */
    assert_true(s.model_err[STA_ALGO_RING] == 0.5);
    assert_true(s.model_err[STA_ALGO_LEADER] == (400.0 - 130) / 400);
    double v[] = {3, 1, 2, 10};
    assert_true(stb_model_median(v, 4) == 2.5);
    assert_true(stb_model_median(v, 3) == 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_nccl_tests),
        cmocka_unit_test(test_short_long_attached),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_bad_flags),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_busbw_factors),
        cmocka_unit_test(test_float_str),
        cmocka_unit_test(test_row),
        cmocka_unit_test(test_header_footer),
        cmocka_unit_test(test_data_reference),
        cmocka_unit_test(test_data_fill_and_input),
        cmocka_unit_test(test_model_regret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
