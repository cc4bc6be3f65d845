/*
 * The CollNet's admission rule (stp_cn_run_admits, plugin/collnet_run.c): how many queued
 * collectives the executor runs at once under STRATA_COLLNET_INFLIGHT. The oldest always
 * starts, whatever its size; the others start while the running bytes and theirs stay within
 * the cap; never more than STP_CN_ACTIVE; a cap of 0 admits up to the slots. The sequences
 * below replay the executor's loop (start in call order, stop at the first refusal) over a
 * queue of call sizes and count how many run together.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "plugin/collnet_exec.h"

#define K ((size_t)1024)
#define M (K * K)

/* How many of the queued calls start together on an idle executor with this cap. */
static int started_together(const size_t *calls, int n, size_t cap)
{
    size_t running = 0;
    int nrunning = 0;

    while (nrunning < n && stp_cn_run_admits(nrunning, running, calls[nrunning], cap)) {
        running += calls[nrunning];
        nrunning++;
    }
    return nrunning;
}

static void test_oldest_starts_whatever_its_size(void **state)
{
    (void)state;
    assert_int_equal(stp_cn_run_admits(0, 0, 64 * M, 2 * M), 1);
    assert_int_equal(stp_cn_run_admits(0, 0, SIZE_MAX, 1), 1);
    assert_int_equal(stp_cn_run_admits(0, 0, 0, 1), 1);
}

static void test_within_cap_starts_beyond_waits(void **state)
{
    (void)state;
    assert_int_equal(stp_cn_run_admits(1, 1 * M, 1 * M, 2 * M), 1);   /* exactly the cap */
    assert_int_equal(stp_cn_run_admits(1, 1 * M, 1 * M + 1, 2 * M), 0);
    assert_int_equal(stp_cn_run_admits(2, 2 * M, 0, 2 * M), 1);       /* empty calls fit */
    assert_int_equal(stp_cn_run_admits(1, 3 * M, 1, 2 * M), 0);       /* oldest over it */
}

static void test_never_more_than_the_slots(void **state)
{
    (void)state;
    assert_int_equal(stp_cn_run_admits(STP_CN_ACTIVE - 1, 0, 0, 0), 1);
    assert_int_equal(stp_cn_run_admits(STP_CN_ACTIVE, 0, 0, 0), 0);
    assert_int_equal(stp_cn_run_admits(STP_CN_ACTIVE, 0, 0, SIZE_MAX), 0);
}

static void test_cap_zero_admits_up_to_the_slots(void **state)
{
    const size_t big[6] = {16 * M, 16 * M, 16 * M, 16 * M, 16 * M, 16 * M};
    (void)state;
    assert_int_equal(started_together(big, 6, 0), STP_CN_ACTIVE);
}

static void test_sums_near_size_max_do_not_wrap(void **state)
{
    (void)state;
    assert_int_equal(stp_cn_run_admits(1, SIZE_MAX - 1, 4, SIZE_MAX), 0);
    assert_int_equal(stp_cn_run_admits(1, 8, SIZE_MAX - 4, SIZE_MAX), 0);
    assert_int_equal(stp_cn_run_admits(1, 8, SIZE_MAX - 8, SIZE_MAX), 1);
}

/* The default cap (2 MiB) on the calls NCCL makes: 2 MiB calls one at a time, 1 MiB calls
 * two at once, 256 KiB calls up to the four slots, a 16 MiB call alone. */
static void test_default_cap_sequences(void **state)
{
    const size_t two[3] = {2 * M, 2 * M, 2 * M};
    const size_t one[3] = {1 * M, 1 * M, 1 * M};
    const size_t quarter[6] = {256 * K, 256 * K, 256 * K, 256 * K, 256 * K, 256 * K};
    const size_t huge_then_small[2] = {16 * M, 4 * K};
    const size_t mixed[4] = {512 * K, 1 * M, 512 * K, 4 * K};
    (void)state;
    assert_int_equal(started_together(two, 3, 2 * M), 1);
    assert_int_equal(started_together(one, 3, 2 * M), 2);
    assert_int_equal(started_together(quarter, 6, 2 * M), STP_CN_ACTIVE);
    assert_int_equal(started_together(huge_then_small, 2, 2 * M), 1);
    /* 512K + 1M + 512K = 2M fits; the fourth would exceed it */
    assert_int_equal(started_together(mixed, 4, 2 * M), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oldest_starts_whatever_its_size),
        cmocka_unit_test(test_within_cap_starts_beyond_waits),
        cmocka_unit_test(test_never_more_than_the_slots),
        cmocka_unit_test(test_cap_zero_admits_up_to_the_slots),
        cmocka_unit_test(test_sums_near_size_max_do_not_wrap),
        cmocka_unit_test(test_default_cap_sequences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
