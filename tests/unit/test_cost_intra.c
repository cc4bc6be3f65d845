/*
 * Unit tests of the intra-node kinds of the α-β model (host shared memory, a non-blocking
 * switch, a PCIe tree), the flat step primitive, the pairwise alltoall, and the selection's
 * one-size choice; every number worked out by hand in the comments.
 *
 * The hand model, K: shm tier α_s = 1 µs, β_s = 10 GB/s; net α_n = 20 µs, β_n = 1 GB/s;
 * γ = 10 GB/s; only the kind changes. At m = 10^6 B: m/β_s = 100 µs, m/β_n = 1000 µs.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "algos/cost_model.h"
#include "algos/select.h"

#define MB 1000000

static sta_model_t model_k(sta_intra_t kind)
{
    sta_model_t m = {
        .shm = {.alpha_us = 1.0, .beta_gbps = 10.0},
        .net = {.alpha_us = 20.0, .beta_gbps = 1.0},
        .gamma_gbps = 10.0,
        .intra = kind,
    };
    return m;
}

static sta_dims_t dims_of(int nodes, int local, int rails)
{
    sta_dims_t d = {.nranks = nodes * local, .nnodes = nodes, .local_size = local,
                    .nrails = rails, .contiguous = 1};
    return d;
}

static void assert_us(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fmax(1.0, fabs(want)))
        fail_msg("predicted %.12g us, expected %.12g us", got, want);
}

/* One node of 8, n = 8·10^6 B, so each ring step moves n/P = 10^6 B. */
static void test_ring_one_node_by_kind(void **state)
{
    sta_dims_t d = dims_of(1, 8, 1);
    sta_model_t sw = model_k(STA_INTRA_SWITCH), shm = model_k(STA_INTRA_SHM),
                pcie = model_k(STA_INTRA_PCIE);

    /* switch: 2·7·(1 + 100) + 7/8·800 = 1414 + 700 = 2114 */
    assert_us(sta_cost_us(&sw, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, 8 * MB), 2114.0);
    /* shm: the library's out-of-place copy first, 800, then every hop through the loopback,
     * α_n and two copies: 800 + 2·7·(20 + 200) + 700 = 4580 */
    assert_us(sta_cost_us(&shm, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, 8 * MB), 4580.0);
    /* a ring embeds in a tree one flow per link and direction: pcie = switch */
    assert_us(sta_cost_us(&pcie, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, 8 * MB), 2114.0);
    /* reduce_scatter and allgather rings: 7·101 (+ 700 of reduction) */
    assert_us(sta_cost_us(&sw, &d, STA_COLL_REDUCE_SCATTER, STA_ALGO_RING, 8 * MB), 1407.0);
    assert_us(sta_cost_us(&sw, &d, STA_COLL_ALLGATHER, STA_ALGO_RING, 8 * MB), 707.0);
}

/*
 * The ring's effective bandwidth on a non-blocking switch is β·P/(2(P-1)): 2(P-1) steps of
 * n/P, each at the full per-direction β. NVLink 4 gives 450 GB/s per direction (18 links of
 * 25 GB/s); with P = 8 that is 450·8/14 = 257.14 GB/s. (The 900 GB/s often quoted is both
 * directions added, which would give 514 GB/s: a figure the hardware cannot reach.) The
 * shm kind, two copies per hop at the memcpy rate after the library's out-of-place copy of
 * the whole buffer, gives 450/(1 + 2·14/8) = 100 GB/s.
 */
static void test_ring_effective_bandwidth(void **state)
{
    sta_model_t m = model_k(STA_INTRA_SWITCH);
    sta_dims_t d = dims_of(1, 8, 1);
    double n = 1e12;   /* far above n* = α·β: the α terms vanish */

    m.shm = (sta_tier_t){.alpha_us = 0.0, .beta_gbps = 450.0};
    m.gamma_gbps = 1e15;   /* the GPU reduces inside the copy: no time of its own */
    double us = sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, (size_t)n);
    double algbw = n / (us * 1e3);
    assert_true(fabs(algbw - 450.0 * 8 / 14) < 1e-6 * algbw);
    assert_true(fabs(algbw - 257.142857142857) < 1e-6);
    m.intra = STA_INTRA_SHM;
    m.net.alpha_us = 0.0;
    us = sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, (size_t)n);
    assert_true(fabs(n / (us * 1e3) - 450.0 / (1 + 28.0 / 8)) < 1e-6 * algbw);
}

/*
 * 32-way allreduce over 4 nodes of 8 GPUs on NVSwitch (450 GB/s per direction, α 1 µs) with
 * one 400 Gb/s NIC per node (50 GB/s, α 2 µs). Hierarchical at n = 10^9 B, γ out of the way,
 * pipelined in chunks of c: in = out = 7·1 + 7/8·c/450e3, net = 2·3·2 + 2·3/4·c/50e3 (the
 * slower stage: a_b = 12, r_b = 3·10^-5; the node's a_o = 14, r_o = 2·7/8/450e3):
 *   t = 14 + 30000 + 2·sqrt(10^9·12·r_o) = 30446.05 µs: 32.84 GB/s of algorithm bandwidth
 * (one phase after the other: 33914.889 µs, 29.49 GB/s). The flat ring crosses a node at
 * every step on the one NIC: 62·(2 + 10^9/32/50e3) = 38874 µs, 25.7 GB/s, so the library's
 * choice is hierarchical. The inter-node phase alone would give 1/(1.5/50) = 33.3 GB/s; the
 * pipeline's fill and drain take it to 32.8.
 */
static void test_hierarchical_switch(void **state)
{
    sta_model_t m = model_k(STA_INTRA_SWITCH);
    sta_dims_t d = dims_of(4, 8, 1);
    double us;

    m.shm = (sta_tier_t){.alpha_us = 1.0, .beta_gbps = 450.0};
    m.net = (sta_tier_t){.alpha_us = 2.0, .beta_gbps = 50.0};
    m.gamma_gbps = 1e15;
    us = sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 1000 * MB);
    assert_true(fabs(us - (14.0 + 1.5 * 1e9 / 50e3 +
                           2 * sqrt(1e9 * 12.0 * (2 * 7.0 / 8 / 450e3)))) < 1e-3);
    assert_true(fabs(1e9 / (us * 1e3) - 32.84502) < 1e-4);
    assert_us(sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, 1000 * MB),
              62 * (2 + 1e9 / 32 / 50e3) + 31.0 / 32 * 1e9 / 1e18);
    assert_int_equal(sta_select_best(&m, &d, STA_COLL_ALLREDUCE, 1000 * MB, &us),
                     STA_ALGO_HIERARCHICAL);
    /* leader reduces in a shared segment: not on a switch */
    assert_true(sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, MB) < 0.0);
}

/* Two-tier phases off shm, hand model K on 2 nodes of 2, R = 1, n = 10^6 B. */
static void test_two_tier_phases(void **state)
{
    sta_model_t m = model_k(STA_INTRA_SWITCH);
    sta_dims_t d = dims_of(2, 2, 1);

    /* allreduce, pipelined in chunks of c: RS_s = 1·1 + 1/2·(c/β_s + c/γ) = 1 + 0.0001·c;
     * each rail's part c/2 exchanged whole between the two nodes (below 2·α_n·γ = 4·10^5):
     * net = 20 + c/10^3 + (c/2)/γ = 20 + 0.00105·c; AG_s = 1 + 0.00005·c:
     * 2 + 1050 + 2·sqrt(10^6·20·0.00015) (the ring's two steps, net = 40 + 0.001025·c:
     * 1027 + 2·sqrt(6000), more) */
    assert_us(sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB),
              1052.0 + 2 * sqrt(3000.0));
    /* reduce_scatter: no permutation off shm: 101 + [20 + 500 + 25] = 646 */
    assert_us(sta_cost_us(&m, &d, STA_COLL_REDUCE_SCATTER, STA_ALGO_HIERARCHICAL, MB), 646.0);
    /* allgather: [20 + 1/2·(5·10^5)/1e3·2] + 51 = 520 + 51 = 571 */
    assert_us(sta_cost_us(&m, &d, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL, MB), 571.0);
    /* broadcast: lg(2)·(20 + 1000) + chain of 2, k = 2 chunks of 524288 B:
     * (2 - 2 + 2)·(1 + 52.4288) = 106.8576 -> 1126.8576 */
    assert_us(sta_cost_us(&m, &d, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL, MB), 1126.8576);
    /* reduce: the chain adds 52.4288 of reduction a chunk: 2·(1 + 2·52.4288) = 211.7152,
     * + (20 + 1000 + 100) -> 1331.7152 */
    assert_us(sta_cost_us(&m, &d, STA_COLL_REDUCE, STA_ALGO_HIERARCHICAL, MB), 1331.7152);
    /* one rank a node: the node's phases are empty off shm, kept on shm */
    sta_dims_t one = dims_of(2, 1, 1);
    assert_us(sta_cost_us(&m, &one, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB),
              40.0 + 1000.0 + 50.0);
    sta_model_t shm = model_k(STA_INTRA_SHM);
    assert_us(sta_cost_us(&shm, &one, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB),
              1102.0 + 2 * sqrt(4000.0));   /* pipelined as in test_cost_model */
}

/* Recursive doubling on one node of 4, n = 10^6 B: at distance 2 = L/2 the two pairs
 * straddle a PCIe tree's halves and share its root link. */
static void test_pcie_root_link(void **state)
{
    sta_dims_t d = dims_of(1, 4, 1);
    sta_model_t sw = model_k(STA_INTRA_SWITCH), pcie = model_k(STA_INTRA_PCIE);

    /* switch: 2·(1 + 100 + 100) = 402; pcie: (1 + 100 + 100) + (1 + 200 + 100) = 502 */
    assert_us(sta_cost_us(&sw, &d, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 402.0);
    assert_us(sta_cost_us(&pcie, &d, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 502.0);
    /* allgather, d·n/P: (1 + 25) + (1 + 2·50) = 127 on pcie, 77 on a switch */
    assert_us(sta_cost_us(&pcie, &d, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB), 127.0);
    assert_us(sta_cost_us(&sw, &d, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB), 77.0);
}

/* The flat step: the slowest hop sets the pace; invalid arguments are refused. */
static void test_step(void **state)
{
    sta_dims_t d = dims_of(2, 4, 2);
    sta_model_t sw = model_k(STA_INTRA_SWITCH), pcie = model_k(STA_INTRA_PCIE),
                shm = model_k(STA_INTRA_SHM);

    assert_us(sta_cost_step_us(&sw, &d, MB, 0, 1), 101.0);
    assert_us(sta_cost_step_us(&pcie, &d, MB, 0, 2), 201.0);
    assert_us(sta_cost_step_us(&shm, &d, MB, 0, 1), 220.0);
    /* 1 of 4 crosses on 2 NICs: max(101, 20 + 1000) */
    assert_us(sta_cost_step_us(&sw, &d, MB, 1, 1), 1020.0);
    /* all 4 cross, 2 a NIC: 20 + 2·1000 */
    assert_us(sta_cost_step_us(&sw, &d, MB, 4, 1), 2020.0);
    /* a slow node and fast NICs: the node's hop is the slower one */
    sta_model_t slow = sw;
    slow.shm.beta_gbps = 0.1;
    assert_us(sta_cost_step_us(&slow, &d, MB, 2, 1), 10001.0);
    assert_true(sta_cost_step_us(&sw, &d, MB, 5, 1) < 0.0);
    assert_true(sta_cost_step_us(&sw, &d, MB, -1, 1) < 0.0);
    assert_true(sta_cost_step_us(&sw, &d, MB, 0, 0) < 0.0);
    sta_dims_t one = dims_of(1, 4, 1);
    assert_true(sta_cost_step_us(&sw, &one, MB, 1, 1) < 0.0);   /* nowhere to cross to */
    sta_model_t bad = sw;
    bad.intra = STA_INTRA_COUNT;
    assert_true(sta_cost_step_us(&bad, &d, MB, 0, 1) < 0.0);
    assert_int_equal(sta_model_check(&bad), STRATA_ERR_INVALID);
}

/* Pairwise alltoall, every rank sending n = 4·10^6 B (10^6 B to each of 4 ranks). */
static void test_alltoall(void **state)
{
    sta_model_t sw = model_k(STA_INTRA_SWITCH), pcie = model_k(STA_INTRA_PCIE);
    sta_dims_t one = dims_of(1, 4, 1), two = dims_of(2, 2, 1);

    /* one node: 3 steps of (1 + 100) */
    assert_us(sta_cost_alltoall_us(&sw, &one, 4 * MB), 303.0);
    /* pcie: offsets 1, 2, 3 put 1, 2, 1 flows on the root: 101 + 201 + 101 */
    assert_us(sta_cost_alltoall_us(&pcie, &one, 4 * MB), 403.0);
    /* 2 nodes of 2: offset 1 sends one rank of each node across (max(101, 1020)), offset 2
     * both on the one NIC (20 + 2000), offset 3 one again (1020) -> 4060 */
    assert_us(sta_cost_alltoall_us(&sw, &two, 4 * MB), 4060.0);
    two.contiguous = 0;   /* placement unknown: every step counted all-crossing */
    assert_us(sta_cost_alltoall_us(&sw, &two, 4 * MB), 6060.0);
    /* 3 nodes of 2, n = 6·10^6: offsets 1 and 5 send one rank across, 2, 3, 4 both */
    sta_dims_t three = dims_of(3, 2, 1);
    assert_us(sta_cost_alltoall_us(&sw, &three, 6 * MB), 2 * 1020.0 + 3 * 2020.0);
    sta_dims_t single = dims_of(1, 1, 1);
    assert_us(sta_cost_alltoall_us(&sw, &single, MB), 0.0);
    sta_dims_t bad = {.nranks = 3, .nnodes = 2, .local_size = 2, .nrails = 1};
    assert_true(sta_cost_alltoall_us(&sw, &bad, MB) < 0.0);
}

/* The one-size choice is what the table holds; forcing leader off shm keeps the model's. */
static void test_select_best_and_forced(void **state)
{
    sta_model_t m = model_k(STA_INTRA_SWITCH);
    sta_dims_t d = dims_of(2, 2, 1);
    sta_select_t t;
    static const size_t sizes[] = {0, 8, 4096, 1 << 20, (size_t)1 << 30};

    assert_int_equal(sta_select_build(&m, &d, STA_ALGO_AUTO, &t), STRATA_OK);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (int c = 0; c < STA_COLL_COUNT; c++) {
            double us = -2.0;
            sta_algo_t a = sta_select_best(&m, &d, (sta_coll_t)c, sizes[i], &us);
            assert_int_equal(a, sta_select_lookup(&t, (sta_coll_t)c, sizes[i]));
            assert_us(us, sta_cost_us(&m, &d, (sta_coll_t)c, a, sizes[i]));
        }
    }
    assert_int_equal(sta_select_build(&m, &d, STA_ALGO_LEADER, &t), STRATA_OK);
    assert_true(sta_select_lookup(&t, STA_COLL_ALLREDUCE, MB) != STA_ALGO_LEADER);
    m.intra = STA_INTRA_SHM;
    assert_int_equal(sta_select_build(&m, &d, STA_ALGO_LEADER, &t), STRATA_OK);
    assert_int_equal(sta_select_lookup(&t, STA_COLL_ALLREDUCE, MB), STA_ALGO_LEADER);
}

static void test_names(void **state)
{
    sta_intra_t k = STA_INTRA_SHM;

    assert_string_equal(sta_intra_name(STA_INTRA_SWITCH), "switch");
    assert_string_equal(sta_intra_name(STA_INTRA_PCIE), "pcie");
    assert_string_equal(sta_intra_name(STA_INTRA_SHM), "shm");
    assert_string_equal(sta_intra_name(STA_INTRA_COUNT), "?");
    assert_int_equal(sta_intra_parse("PCIe", &k), STRATA_OK);
    assert_int_equal(k, STA_INTRA_PCIE);
    assert_int_equal(sta_intra_parse("nvlink", &k), STRATA_ERR_INVALID);
    assert_int_equal(sta_intra_parse(NULL, &k), STRATA_ERR_INVALID);
    assert_int_equal(k, STA_INTRA_PCIE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_one_node_by_kind),
        cmocka_unit_test(test_ring_effective_bandwidth),
        cmocka_unit_test(test_hierarchical_switch),
        cmocka_unit_test(test_two_tier_phases),
        cmocka_unit_test(test_pcie_root_link),
        cmocka_unit_test(test_step),
        cmocka_unit_test(test_alltoall),
        cmocka_unit_test(test_select_best_and_forced),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
