/*
 * The CollNet's order of pieces: the rule (stp_cn_pieces_in_turn, plugin/collnet_select.c)
 * that posts a run's pieces in turn where some host runs more members than it has cores and
 * every member's transport copies through them, member 0's STRATA_COLLNET_ORDER overriding
 * it; and the order itself (stp_cn_unit_at, plugin/collnet_exec.h): both orders post every
 * unit once, and every unit's dependency (the same piece one step before) is posted before
 * it, so the executor's no-deadlock argument holds in either.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/collnet_exec.h"

#define HOST_A 0xa1u
#define HOST_B 0xb2u

static stp_cn_record_t rec(uint64_t host, uint32_t cores, uint32_t flags)
{
    return (stp_cn_record_t){.ok = 1, .group = 9, .host = host, .cores = cores,
                             .stripe_min = 256 * 1024, .flags = flags};
}

static const uint32_t CPU = STP_CN_REC_CPU_COPIES | STP_CN_REC_CHUNK_AUTO;

static int in_turn(int n, uint64_t host, uint32_t cores, uint32_t flags)
{
    stp_cn_record_t r[8];
    for (int i = 0; i < n; i++)
        r[i] = rec(host, cores, flags);
    return stp_cn_pieces_in_turn(r, n);
}

/* strata-run --nodes on 2 cores: 3 and 4 heads outnumber the cores, 2 do not. */
static void test_auto_heads_outnumber_cores(void **state)
{
    (void)state;
    assert_int_equal(in_turn(2, HOST_A, 2, CPU), 0);
    assert_int_equal(in_turn(3, HOST_A, 2, CPU), 1);
    assert_int_equal(in_turn(4, HOST_A, 2, CPU), 1);
    assert_int_equal(in_turn(4, HOST_A, 16, CPU), 0);
}

/* One host decides wherever its members sit; a host's cores are the fewest its members
 * report; the answer does not depend on the order of the members after member 0. */
static void test_auto_busiest_host_anywhere(void **state)
{
    stp_cn_record_t r[4] = {rec(HOST_B, 8, CPU), rec(HOST_A, 2, CPU), rec(HOST_B, 8, CPU),
                            rec(HOST_A, 2, CPU)};
    (void)state;
    assert_int_equal(stp_cn_pieces_in_turn(r, 4), 0);       /* two on 8, two on 2 */
    r[2] = rec(HOST_A, 64, CPU);                             /* three on A: fewest cores 2 */
    assert_int_equal(stp_cn_pieces_in_turn(r, 4), 1);
    stp_cn_record_t s[4] = {r[0], r[3], r[1], r[2]};
    assert_int_equal(stp_cn_pieces_in_turn(s, 4), 1);
    assert_int_equal(r[0].host, HOST_B);                     /* the records stay as given */
}

/* Step by step: a member whose NIC moves the bytes, unknown cores (an older member), a
 * group of one. */
static void test_auto_step_otherwise(void **state)
{
    stp_cn_record_t r[4] = {rec(HOST_A, 2, CPU), rec(HOST_A, 2, CPU), rec(HOST_A, 2, CPU),
                            rec(HOST_A, 2, STP_CN_REC_CHUNK_AUTO)};
    (void)state;
    assert_int_equal(stp_cn_pieces_in_turn(r, 4), 0);
    assert_int_equal(in_turn(4, HOST_A, 0, CPU), 0);
    assert_int_equal(in_turn(1, HOST_A, 1, CPU), 0);
}

/* Member 0's STRATA_COLLNET_ORDER wins; the others' settings do not count. */
static void test_member_0_forces(void **state)
{
    stp_cn_record_t r[2] = {rec(HOST_A, 2, CPU | STP_CN_REC_ORDER_PIECE), rec(HOST_B, 2, CPU)};
    (void)state;
    assert_int_equal(stp_cn_pieces_in_turn(r, 2), 1);
    assert_int_equal(in_turn(4, HOST_A, 2, CPU | STP_CN_REC_ORDER_STEP), 0);
    r[0].flags = CPU;
    r[1].flags = CPU | STP_CN_REC_ORDER_PIECE;
    assert_int_equal(stp_cn_pieces_in_turn(r, 2), 0);
}

/* Both orders: a permutation of the units in which (s-1, c) comes before (s, c); piece by
 * piece walks every step of piece 0 first; one piece is the same either way. */
static void test_unit_order_permutes_with_dependencies_first(void **state)
{
    static stp_cn_comm_t c;
    static stp_cn_run_t r;
    (void)state;

    for (int turn = 0; turn <= 1; turn++) {
        for (int nsteps = 1; nsteps <= 14; nsteps += 13) {
            for (int np = 1; np <= 8; np++) {
                int pos[14 * 8], seen[14 * 8];
                c.pieces_in_turn = turn;
                r.npieces = np;
                r.sched.nsteps = nsteps;
                memset(seen, 0, sizeof(seen));
                for (int k = 0; k < nsteps * np; k++) {
                    int u = stp_cn_unit_at(&c, &r, k);
                    assert_in_range(u, 0, nsteps * np - 1);
                    assert_int_equal(seen[u], 0);
                    seen[u] = 1;
                    pos[u] = k;
                }
                for (int u = np; u < nsteps * np; u++)
                    assert_true(pos[u - np] < pos[u]);
                if (turn && np > 1 && nsteps > 1)
                    assert_int_equal(stp_cn_unit_at(&c, &r, 1), np);   /* (1, 0) */
                else if (np > 1)
                    assert_int_equal(stp_cn_unit_at(&c, &r, 1), 1);    /* (0, 1) */
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_heads_outnumber_cores),
        cmocka_unit_test(test_auto_busiest_host_anywhere),
        cmocka_unit_test(test_auto_step_otherwise),
        cmocka_unit_test(test_member_0_forces),
        cmocka_unit_test(test_unit_order_permutes_with_dependencies_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
