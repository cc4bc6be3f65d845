/*
 * The backoff's wait modes (algos/ctx.h, sta_wait_mode_t): SPIN busy-polls first; BLOCK
 * (more ranks than cores) and YIELD (calibration's ping-pong) never spin; BLOCK turns to
 * blocking after 20 µs of yields, YIELD and SPIN only after half a millisecond. Only lower
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

/* Steps the backoff until it says to block; the time that took, in ns. */
static uint64_t ns_until_block(sta_wait_mode_t mode)
{
    sta_backoff_t b;
    strata_status_t status = STRATA_OK;

    uint64_t t0 = stu_time_ns();   /* before the backoff's own start: a bound, never more */
    sta_backoff_init(&b, TIMEOUT_NS, mode);
    while (!sta_backoff_should_block(&b, &status)) {
        assert_int_equal(status, STRATA_OK);
        assert_int_equal(sta_backoff_step(&b), STRATA_OK);
    }
    assert_int_equal(status, STRATA_OK);
    return stu_time_ns() - t0;
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
        cmocka_unit_test(test_yield_mode_yields_half_a_millisecond_before_blocking),
        cmocka_unit_test(test_spin_mode_spins_and_yields_before_blocking),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
