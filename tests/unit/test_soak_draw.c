/* strata-soak's pure parts: its command line and the sequence every rank draws alike. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "sts_cmocka.h"
#include "tools/soak/soak_draw.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define DRAWS 20000

static const sta_dims_t dims_4x2 = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1};

static void test_parse(void **state)
{
    (void)state;
    stb_soak_opts_t o;
    char err[128];
    char *plain[] = {"strata-soak"};
    assert_ok(stb_soak_opts_parse(ARGC(plain), plain, &o, err, sizeof(err)));
    assert_int_equal(o.seed, 0);
    assert_int_equal(o.calls, 0);
    assert_int_equal(o.seconds, STB_SOAK_DEFAULT_SECONDS);
    assert_int_equal(o.max_bytes, STB_SOAK_DEFAULT_MAX_BYTES);
    assert_int_equal(o.inject_wrong, -1);

    char *full[] = {"strata-soak", "--seed", "0x10", "--calls", "5", "--first", "7",
                    "--max-bytes", "64K", "--batch", "3", "--progress", "0",
                    "--inject-wrong", "9", "-v"};
    assert_ok(stb_soak_opts_parse(ARGC(full), full, &o, err, sizeof(err)));
    assert_int_equal(o.seed, 16);
    assert_int_equal(o.calls, 5);
    assert_int_equal(o.first, 7);
    assert_int_equal(o.max_bytes, 64 << 10);
    assert_int_equal(o.batch, 3);
    assert_int_equal(o.progress_s, 0);
    assert_int_equal(o.inject_wrong, 9);
    assert_true(o.verbose);

    char *bad[][3] = {{"strata-soak", "--calls", "0"}, {"strata-soak", "--seconds", "-1"},
                      {"strata-soak", "--max-bytes", "0"}, {"strata-soak", "--max-bytes", "2G"},
                      {"strata-soak", "--seed", "x"}, {"strata-soak", "--bogus", "1"},
                      {"strata-soak", "--batch", "0"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_status(stb_soak_opts_parse(3, bad[i], &o, err, sizeof(err)), STRATA_ERR_INVALID);
    char *both[] = {"strata-soak", "--calls", "5", "--seconds", "5"};
    assert_status(stb_soak_opts_parse(ARGC(both), both, &o, err, sizeof(err)),
                  STRATA_ERR_INVALID);
    char *dangling[] = {"strata-soak", "--seed"};
    assert_status(stb_soak_opts_parse(ARGC(dangling), dangling, &o, err, sizeof(err)),
                  STRATA_ERR_INVALID);
}

/* Call i depends on (seed, i) alone: every rank, and a replay from --first i, draw it alike. */
static void test_same_draw_everywhere(void **state)
{
    (void)state;
    stb_soak_draw_t a, b;
    int differ = 0;
    for (uint64_t i = 0; i < 1000; i++) {
        stb_soak_draw(42, i, &dims_4x2, STB_SOAK_DEFAULT_MAX_BYTES, &a);
        stb_soak_draw(42, i, &dims_4x2, STB_SOAK_DEFAULT_MAX_BYTES, &b);
        assert_memory_equal(&a, &b, sizeof(a));
        stb_soak_draw(43, i, &dims_4x2, STB_SOAK_DEFAULT_MAX_BYTES, &b);
        differ += memcmp(&a, &b, sizeof(a)) != 0;
    }
    assert_true(differ > 900);    /* another seed is another sequence */
}

/* Every draw is a valid call that fits the buffers, and the sequence covers what it says. */
static void test_draws_are_valid_and_varied(void **state)
{
    (void)state;
    const size_t max = (size_t)1 << 20, cap = stb_soak_buf_cap(max, dims_4x2.nranks);
    int colls[STA_COLL_COUNT] = {0}, dtypes[STRATA_DTYPE_COUNT] = {0}, ops[STRATA_OP_COUNT] = {0};
    int barriers = 0, zero = 0, odd = 0, in_place = 0, forced = 0, nb = 0, offset = 0;
    int roots[4] = {0};
    size_t largest = 0;

    for (uint64_t i = 0; i < DRAWS; i++) {
        stb_soak_draw_t d;
        stb_soak_draw(7, i, &dims_4x2, max, &d);
        if (d.barrier) {
            barriers++;
            continue;
        }
        const stb_call_t *c = &d.call;
        assert_true((unsigned)c->coll < STA_COLL_COUNT);
        assert_true((unsigned)c->dtype < STRATA_DTYPE_COUNT);
        assert_true((unsigned)c->op < STRATA_OP_COUNT);
        assert_true(c->root >= 0 && c->root < dims_4x2.nranks);
        size_t s = stb_call_send_bytes(c, dims_4x2.nranks), r = stb_call_recv_cap(c, 4);
        size_t esz = strata_dtype_size(c->dtype);
        assert_true(s + d.send_off * esz <= cap && r + d.recv_off * esz <= cap);
        assert_true(d.send_off <= STB_SOAK_MAX_OFFSET && d.recv_off <= STB_SOAK_MAX_OFFSET);
        if (d.force != STA_ALGO_AUTO)
            assert_true(sta_algo_selectable(&dims_4x2, c->coll, d.force));
        colls[c->coll]++;
        dtypes[c->dtype]++;
        ops[c->op]++;
        roots[c->root]++;
        zero += c->count == 0;
        odd += c->count % 2 == 1;
        in_place += c->in_place;
        forced += d.force != STA_ALGO_AUTO;
        nb += d.nonblocking;
        offset += d.send_off != 0 || d.recv_off != 0;
        largest = s > largest ? s : largest;
    }
    assert_true(barriers > 0 && zero > 0 && odd > DRAWS / 4 && in_place > 0 && forced > 0 &&
                nb > 0 && offset > 0);
    for (int k = 0; k < STA_COLL_COUNT; k++)
        assert_true(colls[k] > 0);
    for (int k = 0; k < STRATA_DTYPE_COUNT; k++)
        assert_true(dtypes[k] > 0);
    for (int k = 0; k < STRATA_OP_COUNT; k++)
        assert_true(ops[k] > 0);
    for (int k = 0; k < 4; k++)
        assert_true(roots[k] > 0);
    assert_true(largest > max / 2);     /* log-uniform still reaches the top */
}

static void test_draw_str(void **state)
{
    (void)state;
    stb_soak_draw_t d = {.call = {STA_COLL_REDUCE, STRATA_FP16, STRATA_MAX, 2, 1235, 1},
                         .force = STA_ALGO_RING, .nonblocking = 1, .send_off = 3};
    char buf[160];
    stb_soak_draw_str(&d, buf, sizeof(buf));
    assert_string_equal(buf, "reduce half max count 1235 root 2 in-place forced ring nb off 3/0");
    d.barrier = 1;
    stb_soak_draw_str(&d, buf, sizeof(buf));
    assert_string_equal(buf, "barrier");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_same_draw_everywhere),
        cmocka_unit_test(test_draws_are_valid_and_varied),
        cmocka_unit_test(test_draw_str),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
