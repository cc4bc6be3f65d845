/*
 * The CollNet's wait by the host's load (plugin/collnet_load.h) and the count it reads
 * (util/host_load.h): /proc/loadavg's running field parsed, malformed text refused; a probe
 * that finds only the members running makes test() return at once until the next probe, one
 * that finds other work keeps it sleeping; every call inside a probe returns at once; a
 * probe with too few samples, or a host whose count cannot be read, decides nothing; busy
 * samples in a row while spinning end the spinning before the next probe; connect's probe
 * decides as a probe does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "plugin/collnet_load.h"
#include "util/host_load.h"

#define MS (1000ull * 1000)
#define PERIOD STP_CN_LOAD_PERIOD_NS
#define HERE 4

/* The host's running count a test sets, and how often it was read. */
typedef struct {
    int running;
    int reads;
} fake_host_t;

static int fake_runnable(void *arg)
{
    fake_host_t *h = arg;
    h->reads++;
    return h->running;
}

/* Idle test() calls every step_ns over [from, to): how many returned "sleep". */
static int calls(stp_cn_load_t *l, fake_host_t *h, uint64_t from, uint64_t to, uint64_t step)
{
    int sleeps = 0;
    for (uint64_t t = from; t < to; t += step)
        sleeps += stp_cn_load_poll(l, t, fake_runnable, h);
    return sleeps;
}

static void test_loadavg_parse(void **state)
{
    (void)state;
    assert_int_equal(stu_loadavg_runnable("0.02 0.66 1.05 2/110 27188\n"), 2);
    assert_int_equal(stu_loadavg_runnable("17.50 16.01 9.99 13/1024 1"), 13);
    assert_int_equal(stu_loadavg_runnable(NULL), -1);
    assert_int_equal(stu_loadavg_runnable(""), -1);
    assert_int_equal(stu_loadavg_runnable("0.02 0.66 1.05"), -1);
    assert_int_equal(stu_loadavg_runnable("0.02 0.66 1.05 x/110 1"), -1);
    assert_int_equal(stu_loadavg_runnable("0.02 0.66 1.05 2/ 1"), -1);
    assert_int_equal(stu_loadavg_runnable("0.02 0.66 1.05 0/110 1"), -1);   /* the reader runs */
    assert_int_equal(stu_loadavg_runnable("0.02 0.66 1.05 111/110 1"), -1);
    assert_int_equal(stu_loadavg_runnable("0.02  0.66 1.05 2/110 1"), -1);
    assert_int_equal(stu_loadavg_runnable("0.02 0.66 1.05 99999999999999999999/110 1"), -1);
}

/* On Linux the count is readable and counts at least the reader. */
static void test_host_runnable_reads_this_host(void **state)
{
    (void)state;
    assert_true(stu_host_runnable() >= 1);
}

static void test_quiet_probe_spins_until_next(void **state)
{
    fake_host_t h = {.running = HERE};
    stp_cn_load_t l;
    (void)state;

    stp_cn_load_init(&l, HERE);
    /* before any probe: the wait of members that outnumber the cores, sleeping */
    assert_int_equal(stp_cn_load_poll(&l, 7 * PERIOD + 100 * MS, fake_runnable, &h), 1);
    assert_int_equal(h.reads, 0);
    /* the probe: every call returns at once, samples are taken from 3 ms in, 1 a ms */
    assert_int_equal(calls(&l, &h, 8 * PERIOD, 8 * PERIOD + 10 * MS, MS / 4), 0);
    assert_int_equal(h.reads, 7);
    /* after it, returning at once; outside a probe spinning samples every 5 ms */
    assert_int_equal(calls(&l, &h, 8 * PERIOD + 10 * MS, 9 * PERIOD, MS), 0);
    assert_int_equal(l.probes, 1);
    assert_int_equal(l.changes, 1);
    assert_true(h.reads >= 7 + 90 && h.reads <= 7 + 100);
}

static void test_busy_probe_keeps_sleeping(void **state)
{
    fake_host_t h = {.running = HERE + 2};
    stp_cn_load_t l;
    (void)state;

    stp_cn_load_init(&l, HERE);
    assert_int_equal(calls(&l, &h, 8 * PERIOD, 8 * PERIOD + 10 * MS, MS), 0);
    int reads = h.reads;
    assert_int_equal(calls(&l, &h, 8 * PERIOD + 10 * MS, 9 * PERIOD, MS), 490);
    assert_int_equal(h.reads, reads);          /* a sleeping member's count proves nothing */
    assert_int_equal(l.probes, 1);
    assert_int_equal(l.changes, 0);
    /* the next probe finds the host quiet: returning at once from its end */
    h.running = HERE;
    assert_int_equal(calls(&l, &h, 9 * PERIOD, 9 * PERIOD + 10 * MS, MS), 0);
    assert_int_equal(stp_cn_load_poll(&l, 9 * PERIOD + 11 * MS, fake_runnable, &h), 0);
    assert_int_equal(l.changes, 1);
}

/* A probe decides by most samples: 3 busy of 7 is quiet, 4 of 7 busy. */
static void test_probe_majority(void **state)
{
    fake_host_t h = {.running = HERE};
    stp_cn_load_t l;
    (void)state;

    for (int busy = 3; busy <= 4; busy++) {
        stp_cn_load_init(&l, HERE);
        for (int i = 0; i < 10; i++) {
            h.running = i >= 3 && i < 3 + busy ? HERE + 1 : HERE;
            stp_cn_load_poll(&l, 8 * PERIOD + (uint64_t)i * MS, fake_runnable, &h);
        }
        assert_int_equal(stp_cn_load_poll(&l, 8 * PERIOD + 20 * MS, fake_runnable, &h),
                         busy == 4);
        assert_int_equal(l.nsamples, 7);
        assert_int_equal(l.nbusy, busy);
    }
}

static void test_too_few_samples_decide_nothing(void **state)
{
    fake_host_t h = {.running = HERE};
    stp_cn_load_t l;
    (void)state;

    stp_cn_load_init(&l, HERE);
    /* two idle calls in the probe's sampling part: fewer than STP_CN_LOAD_MIN_SAMPLES */
    assert_int_equal(stp_cn_load_poll(&l, 8 * PERIOD + 4 * MS, fake_runnable, &h), 0);
    assert_int_equal(stp_cn_load_poll(&l, 8 * PERIOD + 9 * MS, fake_runnable, &h), 0);
    assert_int_equal(stp_cn_load_poll(&l, 8 * PERIOD + 50 * MS, fake_runnable, &h), 1);
    assert_int_equal(l.probes, 0);
    /* an unreadable count: full probes, still sleeping */
    h.running = -1;
    assert_int_equal(calls(&l, &h, 9 * PERIOD, 9 * PERIOD + 10 * MS, MS / 2), 0);
    assert_int_equal(stp_cn_load_poll(&l, 9 * PERIOD + 50 * MS, fake_runnable, &h), 1);
    assert_int_equal(l.probes, 0);
    assert_int_equal(l.nsamples, 0);
}

static void test_busy_while_spinning_ends_spinning(void **state)
{
    fake_host_t h = {.running = HERE};
    stp_cn_load_t l;
    (void)state;

    stp_cn_load_init(&l, HERE);
    calls(&l, &h, 8 * PERIOD, 8 * PERIOD + 10 * MS, MS);
    assert_int_equal(stp_cn_load_poll(&l, 8 * PERIOD + 100 * MS, fake_runnable, &h), 0);
    /* one busy sample is noise (a kernel thread), the next quiet one forgets it */
    h.running = HERE + 1;
    assert_int_equal(stp_cn_load_poll(&l, 8 * PERIOD + 110 * MS, fake_runnable, &h), 0);
    h.running = HERE;
    assert_int_equal(stp_cn_load_poll(&l, 8 * PERIOD + 120 * MS, fake_runnable, &h), 0);
    /* two in a row: sleeping until the next probe says otherwise */
    h.running = HERE + 2;
    assert_int_equal(stp_cn_load_poll(&l, 8 * PERIOD + 130 * MS, fake_runnable, &h), 0);
    assert_int_equal(stp_cn_load_poll(&l, 8 * PERIOD + 140 * MS, fake_runnable, &h), 1);
    h.running = HERE;
    assert_int_equal(stp_cn_load_poll(&l, 8 * PERIOD + 200 * MS, fake_runnable, &h), 1);
    assert_int_equal(l.changes, 2);
    calls(&l, &h, 9 * PERIOD, 9 * PERIOD + 10 * MS, MS);
    assert_int_equal(stp_cn_load_poll(&l, 9 * PERIOD + 20 * MS, fake_runnable, &h), 0);
}

/* connect's probe: samples from 3 ms to 10 ms of its own time (fewer where this machine
 * left the test without a core for most of it: then it decides nothing), and decides */
static void test_first_probe_decides(void **state)
{
    fake_host_t h = {.running = HERE};
    stp_cn_load_t l;
    (void)state;

    stp_cn_load_init(&l, HERE);
    stp_cn_load_first(&l, fake_runnable, &h);
    assert_true(h.reads <= 7);
    assert_int_equal(l.spin, h.reads >= STP_CN_LOAD_MIN_SAMPLES);
    assert_int_equal(l.probes, h.reads >= STP_CN_LOAD_MIN_SAMPLES);
    l.spin = 1;
    h.running = HERE + 1;
    h.reads = 0;
    stp_cn_load_first(&l, fake_runnable, &h);
    assert_int_equal(l.spin, h.reads < STP_CN_LOAD_MIN_SAMPLES);
    assert_int_equal(l.nbusy, h.reads);
}

/* Two members of one host reading the same counts at their own times decide alike. */
static void test_members_of_a_host_agree(void **state)
{
    fake_host_t h = {.running = HERE};
    stp_cn_load_t a, b;
    (void)state;

    stp_cn_load_init(&a, HERE);
    stp_cn_load_init(&b, HERE);
    for (int p = 8; p < 14; p++) {
        h.running = p % 3 == 0 ? HERE + 3 : HERE;
        calls(&a, &h, (uint64_t)p * PERIOD, (uint64_t)p * PERIOD + 10 * MS, MS / 3);
        calls(&b, &h, (uint64_t)p * PERIOD + MS / 7, (uint64_t)p * PERIOD + 10 * MS, MS / 2);
        uint64_t after = (uint64_t)p * PERIOD + 10 * MS;
        assert_int_equal(stp_cn_load_poll(&a, after, fake_runnable, &h), p % 3 == 0);
        assert_int_equal(stp_cn_load_poll(&b, after + MS, fake_runnable, &h), p % 3 == 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loadavg_parse),
        cmocka_unit_test(test_host_runnable_reads_this_host),
        cmocka_unit_test(test_quiet_probe_spins_until_next),
        cmocka_unit_test(test_busy_probe_keeps_sleeping),
        cmocka_unit_test(test_probe_majority),
        cmocka_unit_test(test_too_few_samples_decide_nothing),
        cmocka_unit_test(test_busy_while_spinning_ends_spinning),
        cmocka_unit_test(test_first_probe_decides),
        cmocka_unit_test(test_members_of_a_host_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
