/*
 * The CollNet's piece rule (stp_cn_piece_min, plugin/collnet_select.c): pieces are raised to
 * the transports' striping size only where member 0 left STRATA_COLLNET_CHUNK unset, every
 * member's transport copies through the host's cores, and on some host the members' streams
 * get less than the model's link from those cores; the answer does not depend on the order
 * of the members after member 0. And the agreement record carries the fields the rule reads
 * (cores, stripe_min, flags) through its bytes, refusing flags it does not know.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algos/profile.h"
#include "plugin/collnet.h"

#define K ((size_t)1024)
#define HOST_A 0xa1u
#define HOST_B 0xb2u

static stp_cn_record_t rec(uint64_t host, uint32_t cores, uint32_t stripe, uint32_t flags)
{
    return (stp_cn_record_t){.ok = 1, .group = 9, .host = host, .cores = cores,
                             .stripe_min = stripe, .flags = flags};
}

static const uint32_t AUTO_CPU = STP_CN_REC_CHUNK_AUTO | STP_CN_REC_CPU_COPIES;

/* The model of the unshaped emulated cluster (the defaults' net: 3.6 GB/s) or of a link of
 * beta GB/s. */
static sta_model_t model_beta(double beta)
{
    sta_model_t m;
    sta_model_default(&m);
    m.net.beta_gbps = beta;
    return m;
}

static size_t piece_min(stp_cn_record_t *r, int n, double beta)
{
    sta_model_t m = model_beta(beta);
    return stp_cn_piece_min(r, n, &m);
}

/* A group of two: member 0 is a, member 1 is b. */
static size_t pair(stp_cn_record_t a, stp_cn_record_t b, double beta)
{
    stp_cn_record_t r[2] = {a, b};
    return piece_min(r, 2, beta);
}

/* 2 and 4 members on one host of 2 cores (strata-run --nodes): the cores bound an unshaped
 * link (β_c 1.8 resp. 0.9 GB/s against 3.6), a 2 Gbit/s one (0.25 GB/s) bounds itself. */
static void test_emulated_cluster(void **state)
{
    stp_cn_record_t r[4];
    (void)state;

    for (int n = 2; n <= 4; n += 2) {
        for (int i = 0; i < n; i++)
            r[i] = rec(HOST_A, 2, 256 * K, AUTO_CPU);
        assert_int_equal(piece_min(r, n, 3.6), 256 * K);
        for (int i = 0; i < n; i++)
            r[i] = rec(HOST_A, 2, 256 * K, AUTO_CPU);
        assert_int_equal(piece_min(r, n, 0.25), 0);
    }
}

/* One member per host of 16 cores: one stream has a core on each side (β_c 3.6 GB/s), which
 * bounds a 100 Gbit/s link (12.5 GB/s) but not a 10 Gbit/s one (1.25). */
static void test_one_per_host(void **state)
{
    stp_cn_record_t r[3];
    (void)state;

    for (int i = 0; i < 3; i++)
        r[i] = rec(HOST_A + (uint64_t)i, 16, 256 * K, AUTO_CPU);
    assert_int_equal(piece_min(r, 3, 12.5), 256 * K);
    for (int i = 0; i < 3; i++)
        r[i] = rec(HOST_A + (uint64_t)i, 16, 256 * K, AUTO_CPU);
    assert_int_equal(piece_min(r, 3, 1.25), 0);
}

/* The busiest host decides, wherever its members sit; the largest striping size wins. */
static void test_busiest_host(void **state)
{
    stp_cn_record_t r[4];
    (void)state;

    /* member 0 alone on B (8 cores), three on A (2 cores): β_c(3 on 2) = 1.2 < 3.6 */
    r[0] = rec(HOST_B, 8, 64 * K, AUTO_CPU);
    r[1] = rec(HOST_A, 2, 256 * K, AUTO_CPU);
    r[2] = rec(HOST_A, 2, 128 * K, AUTO_CPU);
    r[3] = rec(HOST_A, 2, 256 * K, AUTO_CPU);
    assert_int_equal(piece_min(r, 4, 3.6), 256 * K);
    /* a host's cores are the fewest its members report */
    assert_int_equal(pair(rec(HOST_A, 64, 256 * K, AUTO_CPU),
                          rec(HOST_A, 2, 256 * K, AUTO_CPU), 3.0), 256 * K);
    assert_int_equal(pair(rec(HOST_A, 64, 256 * K, AUTO_CPU),
                          rec(HOST_A, 64, 256 * K, AUTO_CPU), 3.0), 0);
}

/* No floor: STRATA_COLLNET_CHUNK set on member 0 (others' settings do not count), a member
 * whose NIC moves the bytes, no transport that stripes, unknown cores, a group of one. */
static void test_no_floor(void **state)
{
    stp_cn_record_t one = rec(HOST_A, 2, 256 * K, AUTO_CPU);
    (void)state;

    assert_int_equal(pair(rec(HOST_A, 2, 256 * K, STP_CN_REC_CPU_COPIES),
                          rec(HOST_A, 2, 256 * K, AUTO_CPU), 3.6), 0);
    assert_int_equal(pair(rec(HOST_A, 2, 256 * K, AUTO_CPU),
                          rec(HOST_A, 2, 256 * K, STP_CN_REC_CHUNK_AUTO), 3.6), 0);
    assert_int_equal(pair(rec(HOST_A, 2, 0, AUTO_CPU),
                          rec(HOST_A, 2, 0, AUTO_CPU), 3.6), 0);
    /* an older member: no cores sent */
    assert_int_equal(pair(rec(HOST_A, 0, 256 * K, AUTO_CPU),
                          rec(HOST_A, 0, 256 * K, AUTO_CPU), 3.6), 0);
    assert_int_equal(piece_min(&one, 1, 3.6), 0);
    /* the striping size of the one member that stripes */
    assert_int_equal(pair(rec(HOST_A, 2, 0, AUTO_CPU),
                          rec(HOST_A, 2, 256 * K, AUTO_CPU), 3.6), 256 * K);
}

/* The rule's fields travel in the record's bytes; unknown flags are refused. */
static void test_record_fields(void **state)
{
    uint8_t buf[STP_CN_RECORD_BYTES];
    stp_cn_record_t r = rec(HOST_B, 96, 256 * K, AUTO_CPU), back;
    const char *why = NULL;
    (void)state;

    sta_model_t m;
    sta_model_default(&m);
    for (int f = 0; f < STA_FIELD_COUNT; f++)
        r.model[f] = *sta_model_field(&m, (sta_field_t)f);
    r.nranks = 2;
    r.chunk = 128 * K;
    stp_cn_record_encode(buf, &r);
    assert_int_equal(stp_cn_record_check(buf, 9, 2, 1, &back, &why), STRATA_OK);
    assert_int_equal(back.cores, 96);
    assert_int_equal(back.stripe_min, 256 * K);
    assert_int_equal(back.flags, AUTO_CPU);
    assert_int_equal(back.host, HOST_B);
    buf[124] |= 0x80;                             /* a flag this version does not know */
    assert_int_equal(stp_cn_record_check(buf, 9, 2, 1, &back, &why), STRATA_ERR_REMOTE);
    assert_non_null(why);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_emulated_cluster),
        cmocka_unit_test(test_one_per_host),
        cmocka_unit_test(test_busiest_host),
        cmocka_unit_test(test_no_floor),
        cmocka_unit_test(test_record_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
