/*
 * The backoff's wait modes (algos/ctx.h, sta_wait_mode_t): SPIN busy-polls first; BLOCK
 * (more ranks than cores) and YIELD (calibration's ping-pong) never spin; BLOCK turns to
 * blocking after 20 µs of yields, YIELD and SPIN only after half a millisecond; a BLOCK wait
 * told its peers move many bytes (sta_backoff_expect) yields longer, up to 1 ms. Only lower
 * bounds on the time are asserted (a loaded machine only makes them longer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "algos/ctx.h"
#include "util/time.h"

#define TIMEOUT_NS 30000000000ull   /* the waits' deadline: never reached here */

/* Steps the backoff (told to expect `bytes`) until it says to block; the time that took, in ns. */
static uint64_t ns_until_block_expecting(sta_wait_mode_t mode, size_t bytes)
{
    sta_backoff_t b;
    strata_status_t status = STRATA_OK;

    uint64_t t0 = stu_time_ns();   /* before the backoff's own start: a bound, never more */
    sta_backoff_init(&b, TIMEOUT_NS, mode);
    sta_backoff_expect(&b, bytes);
    while (!sta_backoff_should_block(&b, &status)) {
        assert_int_equal(status, STRATA_OK);
        assert_int_equal(sta_backoff_step(&b), STRATA_OK);
    }
    assert_int_equal(status, STRATA_OK);
    return stu_time_ns() - t0;
}

static uint64_t ns_until_block(sta_wait_mode_t mode)
{
    return ns_until_block_expecting(mode, 0);
}

static void test_block_and_yield_modes_never_spin(void **state)
{
    (void)state;
    sta_backoff_t b;

    sta_backoff_init(&b, TIMEOUT_NS, STA_WAIT_BLOCK);
    assert_false(sta_backoff_spinning(&b));
    sta_backoff_init(&b, TIMEOUT_NS, STA_WAIT_YIELD);
    assert_false(sta_backoff_spinning(&b));
}

static void test_block_mode_blocks_after_its_yields(void **state)
{
    (void)state;
    assert_true(ns_until_block(STA_WAIT_BLOCK) >= 20000ull);
}

/* 1 MiB at STA_WAIT_YIELD_BYTES_PER_NS: 262 µs of yields; nothing expected: 20 µs; 1 ms at most. */
static void test_block_mode_yields_longer_for_large_rounds(void **state)
{
    (void)state;
    sta_backoff_t b;

    assert_true(ns_until_block_expecting(STA_WAIT_BLOCK, 1u << 20) >=
                (1u << 20) / STA_WAIT_YIELD_BYTES_PER_NS);
    sta_backoff_init(&b, TIMEOUT_NS, STA_WAIT_BLOCK);
    sta_backoff_expect(&b, 1000);
    assert_int_equal(b.yield_ns, 20000);
    sta_backoff_expect(&b, (size_t)1 << 40);
    assert_int_equal(b.yield_ns, 1000000);
}

/* Expecting bytes changes nothing outside BLOCK: SPIN still spins, then yields 0.5 ms. */
static void test_expect_leaves_other_modes_alone(void **state)
{
    (void)state;
    sta_backoff_t a, b;

    sta_backoff_init(&a, TIMEOUT_NS, STA_WAIT_SPIN);
    sta_backoff_init(&b, TIMEOUT_NS, STA_WAIT_SPIN);
    sta_backoff_expect(&b, (size_t)1 << 40);
    assert_int_equal(a.yield_ns, b.yield_ns);
    assert_true(ns_until_block_expecting(STA_WAIT_SPIN, (size_t)1 << 40) >= 550000ull);
}

static void test_yield_mode_yields_half_a_millisecond_before_blocking(void **state)
{
    (void)state;
    assert_true(ns_until_block(STA_WAIT_YIELD) >= 500000ull);
}

static void test_spin_mode_spins_and_yields_before_blocking(void **state)
{
    (void)state;
    assert_true(ns_until_block(STA_WAIT_SPIN) >= 550000ull);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_and_yield_modes_never_spin),
        cmocka_unit_test(test_block_mode_blocks_after_its_yields),
        cmocka_unit_test(test_block_mode_yields_longer_for_large_rounds),
        cmocka_unit_test(test_expect_leaves_other_modes_alone),
        cmocka_unit_test(test_yield_mode_yields_half_a_millisecond_before_blocking),
        cmocka_unit_test(test_spin_mode_spins_and_yields_before_blocking),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
