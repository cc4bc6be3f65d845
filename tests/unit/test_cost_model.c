/*
 * Unit tests of the α-β cost model: every formula against numbers worked out
 * by hand in the comments, edge dims (P = 1, N = 1, L = 1, non-powers of two),
 * applicability, names, the STRATA_ALGO parser and n* = α·β; the one-node terms
 * (one-pass allreduce, k-input reductions, yield waits), monotonicity in n, identical tables.
 *
 * The hand model, M: shm α = 1 µs, β = 10 GB/s; net α = 20 µs, β = 1 GB/s;
 * γ = 10 GB/s; ω = 0 (and dims leave the host unknown: no wake-ups) unless a test says. At n = 10^6 B: n/β_n = 1000 µs, n/β_s = 100 µs, n/γ = 100 µs.
 * A flat step of m bytes costs 20 + 2·m/β_s when every partner is on the same node and
 * 20 + σ·m/β_n when s ranks of a node cross, σ = max(1, s/R).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "algos/cost_model.h"
#include "algos/node_shm.h"
#include "algos/profile.h"
#include "algos/select.h"

#define MB 1000000

static const sta_model_t model_m = {
    .shm = {.alpha_us = 1.0, .beta_gbps = 10.0},
    .net = {.alpha_us = 20.0, .beta_gbps = 1.0},
    .gamma_gbps = 10.0,
};

/* P = 4 as N = 2 nodes of L = 2, one NIC per node; placement unknown, and the same known
 * to be contiguous per node (rank order = node-major). */
static const sta_dims_t dims_4x1 = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1};
static const sta_dims_t dims_4x1c = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1,
                                     .contiguous = 1};

static double cost(const sta_dims_t *d, sta_coll_t c, sta_algo_t a, size_t n)
{
    return sta_cost_us(&model_m, d, c, a, n);
}

/* Predictions are sums of a few doubles: 1e-9 relative is far below any modelling choice. */
static void assert_us(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fmax(1.0, fabs(want)))
        fail_msg("predicted %.12g us, expected %.12g us", got, want);
}

static void test_allreduce(void **state)
{
    /* ring (flat group, one rank per node crosses): the input into the output, 100, then
     * 2·3·(20 + 250) = 1620, + 3/4·100 = 75 -> 1795 */
    assert_us(cost(&dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_RING, MB), 1795.0);
    /* recursive: the copy, 100; p2 = 4, r = 0. Distance 1: 2 divides L = 2, in the node:
     * 20 + 2·100 + 100 = 320. Distance 2: both ranks of a node on one NIC, σ = 2:
     * 20 + 2·1000 + 100 = 2120. -> 2540 */
    assert_us(cost(&dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 2540.0);
    /* hierarchical, pipelined in chunks of c bytes: in = [1 + c/10^4 + 1/2·c/γ],
     * out = [1 + c/10^4]; each rail's part c/2 is below 2·α_n·γ = 4·10^5, so two nodes
     * exchange it whole: net = [20 + c/(1 GB/s) + (c/2)/γ] = 20 + 0.00105·c. The net is
     * the slower stage (a_b = 20 µs a chunk); the node's phases fill and drain (a_o = 2,
     * r_o = 0.00025 µs/B): c* = sqrt(10^6·20/0.00025), and
     * t = a_o + n·r_b + 2·sqrt(n·a_b·r_o) = 2 + 1050 + 2·sqrt(5000)
     * (the ring's two steps, net = 40 + 0.001025·c, gave 2 + 1025 + 2·sqrt(10^4) = 1227) */
    assert_us(cost(&dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB),
              1052.0 + 2 * sqrt(5000.0));
    /* leader: in = [1 + c/10^4 + (2-1)·c/γ], out = [1 + c/10^4] (a_o = 2, r_o = 0.0003);
     * the ring net = 40 + 0.00105·c gives 1052 + 2·sqrt(10^6·40·0.0003), the exchange
     * net = 20 + 0.0011·c (chunks below 4·10^5) 1102 + 2·sqrt(10^6·20·0.0003): the less */
    assert_us(cost(&dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, MB),
              fmin(1052.0 + 2 * sqrt(12000.0), 1102.0 + 2 * sqrt(6000.0)));
}

static void test_allreduce_shapes(void **state)
{
    sta_dims_t p6 = {.nranks = 6, .nnodes = 3, .local_size = 2, .nrails = 1};
    sta_dims_t rails2 = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 2};
    sta_dims_t one_node = {.nranks = 2, .nnodes = 1, .local_size = 2, .nrails = 1};
    sta_dims_t one_per_node = {.nranks = 2, .nnodes = 2, .local_size = 1, .nrails = 1};

    /* recursive, P = 6: p2 = 4, r = 2: participants are not aligned to nodes, so both steps
     * are charged with L = 2 crossing: 2·(20 + 2·1000 + 100) = 4240; the fold pairs (0,1),
     * (2,3) are inside nodes (L even): 2·(20 + 2·100) + 100 = 540, + the copy 100 -> 4880 */
    assert_us(cost(&p6, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 4880.0);
    /* 2 rails: distance 2 has 2 ranks on 2 NICs, σ = 1: 100 + 320 + (20 + 1000 + 100) */
    assert_us(cost(&rails2, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 1540.0);
    /* hierarchical with 2 rails, the parts exchanged: net = 20 + c/(2 GB/s) + (c/2)/γ =
     * 20 + 0.00055·c, still the slower stage: 2 + 550 + 2·sqrt(10^6·20·0.00025) */
    assert_us(cost(&rails2, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB),
              552.0 + 2 * sqrt(5000.0));
    /* N = 1: no net bracket. hierarchical is the one-pass allreduce: 10^6 B is one 1 MiB
     * chunk, 2 rounds (2·1), half the input copied in (50), a 2-input pass over the 5·10^5 B
     * block (50), all of it copied out (100) = 202; leader 201 + 101 = 302;
     * flat steps stay in the node (two copies at β_s): ring over P = 2:
     * 100 + 2·(20 + 2·50) + 50 = 390; recursive: 100 + 20 + 2·100 + 100 = 420 */
    assert_us(cost(&one_node, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB), 202.0);
    assert_us(cost(&one_node, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, MB), 302.0);
    assert_us(cost(&one_node, STA_COLL_ALLREDUCE, STA_ALGO_RING, MB), 390.0);
    assert_us(cost(&one_node, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 420.0);
    /* L = 1: the shm phases stay (a copy each: in = out = 1 + c/10^4); the chunk exchanged
     * whole, net = 20 + 0.0011·c: 2 + 1100 + 2·sqrt(10^6·20·0.0002) (the ring's two steps,
     * net = 40 + 0.00105·c, gave 1052 + 2·sqrt(8000), more); the flat ring: 100 + 1090 */
    assert_us(cost(&one_per_node, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, MB),
              1102.0 + 2 * sqrt(4000.0));
    assert_us(cost(&one_per_node, STA_COLL_ALLREDUCE, STA_ALGO_RING, MB), 1190.0);
}

static void test_reduce_scatter_allgather(void **state)
{
    /* reduce_scatter ring in rank order, contiguous: the P blocks into the work buffer and
     * this rank's out, (1 + 1/4)·100 = 125; one rank per node crosses per step:
     * 3·(20 + 250) + 3/4·100 = 885 -> 1010. Placement unknown: both ranks of a node
     * cross, σ = 2: 125 + 3·(20 + 500) + 75 = 1760 */
    assert_us(cost(&dims_4x1c, STA_COLL_REDUCE_SCATTER, STA_ALGO_RING, MB), 1010.0);
    assert_us(cost(&dims_4x1, STA_COLL_REDUCE_SCATTER, STA_ALGO_RING, MB), 1760.0);
    /* reduce_scatter hierarchical: permute 100 + [1 + 100 + 50]
     * + [20 + 1/2·1000 + 1/2·(5·10^5)/γ = 25] = 100 + 151 + 545 = 796 */
    assert_us(cost(&dims_4x1, STA_COLL_REDUCE_SCATTER, STA_ALGO_HIERARCHICAL, MB), 796.0);
    /* allgather, contiguous: this rank's block into place, n/4/β_s = 25; ring
     * 3·(20 + 250) = 810 -> 835; recursive: distance 1 in the node, 20 + 2·(2.5·10^5)/β_s
     * = 70, distance 2 sends n/2 from both ranks of a node over one NIC, 20 + 2·500 = 1020
     * -> 1115: the ring is cheaper at 1 MB. */
    assert_us(cost(&dims_4x1c, STA_COLL_ALLGATHER, STA_ALGO_RING, MB), 835.0);
    assert_us(cost(&dims_4x1c, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB), 1115.0);
    /* placement unknown: every step crosses with σ = 2. ring 25 + 3·(20 + 2·250) = 1585;
     * recursive 25 + (20 + 2·250) + (20 + 2·500) = 1565 */
    assert_us(cost(&dims_4x1, STA_COLL_ALLGATHER, STA_ALGO_RING, MB), 1585.0);
    assert_us(cost(&dims_4x1, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB), 1565.0);
    /* allgather hierarchical: [20 + 1/2·(5·10^5 B / 1 GB/s = 500)·(2/1)] + [1 + 100]
     * + permute 100 = 721 */
    assert_us(cost(&dims_4x1, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL, MB), 721.0);
    /* one node of 4, ranks in order: rail-major order is rank order, nothing to permute:
     * reduce_scatter [1 + 100 + a 4-input pass into n/4: 5/3·25] = 142.67, allgather
     * [1 + 100] = 101; with the placement unknown the permutation's 100 comes back */
    sta_dims_t one = {.nranks = 4, .nnodes = 1, .local_size = 4, .nrails = 1, .contiguous = 1};
    assert_us(cost(&one, STA_COLL_REDUCE_SCATTER, STA_ALGO_HIERARCHICAL, MB), 101 + 125.0 / 3);
    assert_us(cost(&one, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL, MB), 101.0);
    one.contiguous = 0;
    assert_us(cost(&one, STA_COLL_REDUCE_SCATTER, STA_ALGO_HIERARCHICAL, MB), 201 + 125.0 / 3);
    assert_us(cost(&one, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL, MB), 201.0);
}

/* L = 4: recursive doubling's steps at distance 1 and 2 stay in the node, distance 4 puts
 * all four ranks of a node on its NICs (n/8 = 125 µs on the wire, 25 µs per copy at β_s). */
static void test_shared_link_l4(void **state)
{
    sta_dims_t c1 = {.nranks = 8, .nnodes = 2, .local_size = 4, .nrails = 1, .contiguous = 1};
    sta_dims_t c2 = c1, mixed = c1, odd = {.nranks = 6, .nnodes = 2, .local_size = 3,
                                           .nrails = 1, .contiguous = 1};
    c2.nrails = 2;
    mixed.contiguous = 0;

    /* allgather (own block into place first, n/8/β_s = 12.5) recursive, contiguous, one
     * NIC: 12.5 + (20 + 2·12.5) + (20 + 2·25) + (20 + σ = 4 · 500) = 2147.5; ring
     * 12.5 + 7·(20 + 125) = 1027.5 */
    assert_us(cost(&c1, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB), 2147.5);
    assert_us(cost(&c1, STA_COLL_ALLGATHER, STA_ALGO_RING, MB), 1027.5);
    /* two NICs: σ = 4/2 at distance 4: 12.5 + 45 + 70 + 1020; the ring does not change */
    assert_us(cost(&c2, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB), 1147.5);
    assert_us(cost(&c2, STA_COLL_ALLGATHER, STA_ALGO_RING, MB), 1027.5);
    /* placement unknown: σ = 4 everywhere. ring 12.5 + 7·(20 + 500) = 3652.5; recursive
     * 12.5 + (20 + 500) + (20 + 1000) + (20 + 2000) = 3572.5 */
    assert_us(cost(&mixed, STA_COLL_ALLGATHER, STA_ALGO_RING, MB), 3652.5);
    assert_us(cost(&mixed, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB), 3572.5);
    /* allreduce recursive (flat group, node-major whatever the rank order): the copy, 100;
     * distances 1, 2 in the node, 2·(20 + 200 + 100) = 640; distance 4: 20 + 4·1000 + 100
     * = 4120 -> 4860 */
    assert_us(cost(&c1, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 4860.0);
    assert_us(cost(&mixed, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 4860.0);
    /* L = 3 (P = 6, p2 = 4, r = 2): both doubling steps charged with 3 crossing, σ = 3:
     * 2·(20 + 3000 + 100) = 6240; the fold pair (2,3) straddles the node boundary, one rank
     * per node crossing: 2·(20 + 1000) + 100 = 2140; + the copy 100 -> 8480 */
    assert_us(cost(&odd, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE, MB), 8480.0);
}

static void test_broadcast_reduce(void **state)
{
    sta_dims_t p6 = {.nranks = 6, .nnodes = 3, .local_size = 2, .nrails = 1};

    /* Rooted collectives run back to back: a call costs its busiest rank's work. Every
     * broadcast starts with the root's copy into its output, n/β_s (100 at 1 MB).
     * ring (chain), c = 524288, k = 2: a middle rank receives and forwards each chunk,
     * 2·(2·20), and the whole buffer crosses the node boundary once, 1000: 100 + 80 + 1000 */
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RING, MB), 1180.0);
    /* binomial: the root sends ceil(log2 4) = 2 times: 100 + 2·(20 + 1000) = 2140 */
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RECURSIVE, MB), 2140.0);
    /* hierarchical: 100 + ceil(log2 2)·1020 + [1 + 100] = 1221 */
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL, MB), 1221.0);
    /* P = 6: ceil(log2 6) = 3 rounds: 100 + 3060 */
    assert_us(cost(&p6, STA_COLL_BROADCAST, STA_ALGO_RECURSIVE, MB), 3160.0);
    /* Below one chunk, k = 1: 0.1 + 2·20 + 1000 B/1 GB/s = 41.1; at n = 0, k = 1: 40 */
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RING, 1000), 41.1);
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RING, 0), 40.0);
    /* Exactly one chunk: k = 1: 52.4288 + 40 + 524.288; one byte more: k = 2 */
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RING, STA_PIPELINE_CHUNK),
              52.4288 + 40 + 524.288);
    assert_us(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_RING, STA_PIPELINE_CHUNK + 1),
              52.4289 + 80 + 524.289);

    /* reduce ring: k = 2 chunks, each received, reduced (52.4288) and forwarded (2·20), and
     * the buffer across the node boundary once: 2·(40 + 52.4288) + 1000 = 1184.8576 */
    assert_us(cost(&dims_4x1, STA_COLL_REDUCE, STA_ALGO_RING, MB), 1184.8576);
    /* reduce binomial: 2·(20 + 1000 + 100) = 2240 */
    assert_us(cost(&dims_4x1, STA_COLL_REDUCE, STA_ALGO_RECURSIVE, MB), 2240.0);
    /* reduce hierarchical: [1 + 100 + (2-1)·100] + 1·(20 + 1000 + 100) = 201 + 1120 = 1321 */
    assert_us(cost(&dims_4x1, STA_COLL_REDUCE, STA_ALGO_HIERARCHICAL, MB), 1321.0);

    /* N = 1: chain and tree hops stay in the node, two copies at β_s (200 for the buffer).
     * broadcast ring over P = 2 (no middle rank), k = 2: 100 + 2·20 + 200 = 340; binomial:
     * 100 + 20 + 200 = 320; reduce binomial (no root copy): 20 + 200 + 100 = 320 */
    sta_dims_t one_node = {.nranks = 2, .nnodes = 1, .local_size = 2, .nrails = 1};
    assert_us(cost(&one_node, STA_COLL_BROADCAST, STA_ALGO_RING, MB), 340.0);
    assert_us(cost(&one_node, STA_COLL_BROADCAST, STA_ALGO_RECURSIVE, MB), 320.0);
    assert_us(cost(&one_node, STA_COLL_REDUCE, STA_ALGO_RECURSIVE, MB), 320.0);
}

/* Waits block where the ranks that wait outnumber the host's cores: ω per step and per shm
 * phase (ω = 30 here). P = 4 as 2 x 2 on one host of 2 cores, at n = 0. */
static void test_wakeups(void **state)
{
    sta_model_t m = model_m;
    sta_dims_t d = dims_4x1;

    m.wake_us = 30.0;
    d.host_ranks = 4;
    d.host_cores = 2;
    /* ring: 2·3 steps of 20 + 30 */
    assert_us(sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, 0), 300.0);
    /* hierarchical: shm phase 1 + 0.75·30 (a futex wake), the rails' exchange 20 (each
     * rail's two ranks on the host's two cores, and the two rails interleave), shm phase
     * 1 + 22.5 */
    assert_us(sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 0), 67.0);
    /* leader: two leaders on the host's two cores spin: 2·(1 + 22.5) + 20 */
    assert_us(sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, 0), 67.0);
    /* four one-rank nodes on the host: the leaders outnumber the cores too; a one-rank
     * node's shm phases wait for nobody */
    sta_dims_t four = {.nranks = 4, .nnodes = 4, .local_size = 1, .nrails = 1,
                       .host_ranks = 4, .host_cores = 2};
    assert_us(sta_cost_us(&m, &four, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, 0),
              2 * 1 + 2 * 3 * (20 + 30));
    /* back-to-back broadcasts overlap their waits: no ω (chain: 2·20) */
    assert_us(sta_cost_us(&m, &d, STA_COLL_BROADCAST, STA_ALGO_RING, 0), 40.0);
    /* enough cores, or cores unknown: no wake-ups */
    d.host_cores = 4;
    assert_us(sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, 0), 120.0);
    d.host_cores = 0;
    assert_us(sta_cost_us(&m, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, 0), 120.0);
    d.host_cores = -1;
    assert_int_equal(sta_dims_check(&d), STRATA_ERR_INVALID);
    m.wake_us = -1.0;
    assert_int_equal(sta_model_check(&m), STRATA_ERR_INVALID);
}

/* One node, up to STA_NODE_SMALL_BYTES: hierarchical allreduce is one shm round
 * (1 + n/10^4 + (L-1)·n/10^4 with L = 2); above, the one-pass allreduce: 2 rounds,
 * n/2 copied in, a 2-input pass into n/2, n copied out. */
static void test_small_node_allreduce(void **state)
{
    sta_dims_t one = {.nranks = 2, .nnodes = 1, .local_size = 2, .nrails = 1};
    double n = STA_NODE_SMALL_BYTES, n1 = n + 1;

    assert_us(cost(&one, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, STA_NODE_SMALL_BYTES),
              1 + n / 1e4 + n / 1e4);
    assert_us(cost(&one, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, STA_NODE_SMALL_BYTES + 1),
              2 * 1 + 0.5 * n1 / 1e4 + 0.5 * n1 / 1e4 + n1 / 1e4);
}

static void test_single_rank_and_applicability(void **state)
{
    sta_dims_t one = {.nranks = 1, .nnodes = 1, .local_size = 1, .nrails = 1};
    sta_dims_t p6 = {.nranks = 6, .nnodes = 3, .local_size = 2, .nrails = 1};

    /* P = 1: every applicable algorithm is a local copy, cost 0. */
    for (int c = 0; c < STA_COLL_COUNT; c++) {
        assert_us(cost(&one, (sta_coll_t)c, STA_ALGO_RING, MB), 0.0);
        assert_us(cost(&one, (sta_coll_t)c, STA_ALGO_HIERARCHICAL, MB), 0.0);
    }
    assert_us(cost(&one, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, MB), 0.0);

    /* leader is allreduce only; reduce_scatter has no recursive; allgather recursive needs
     * P a power of two. */
    assert_true(cost(&dims_4x1, STA_COLL_BROADCAST, STA_ALGO_LEADER, MB) < 0);
    assert_true(cost(&dims_4x1, STA_COLL_REDUCE_SCATTER, STA_ALGO_RECURSIVE, MB) < 0);
    assert_true(cost(&p6, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB) < 0);
    assert_true(cost(&dims_4x1, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE, MB) >= 0);
    assert_false(sta_algo_applies(&p6, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE));
    assert_true(sta_algo_applies(&p6, STA_COLL_ALLREDUCE, STA_ALGO_RECURSIVE));
    assert_false(sta_algo_applies(&p6, STA_COLL_ALLREDUCE, STA_ALGO_AUTO));
    assert_true(cost(&dims_4x1, STA_COLL_COUNT, STA_ALGO_RING, MB) < 0);

    /* The reason a forced algorithm falls back, which the collective library logs. */
    sta_dims_t uneq = {.nranks = 3, .nnodes = 2, .local_size = 2, .nrails = 1, .unequal = 1};
    assert_null(sta_algo_unfit(&p6, STA_COLL_ALLREDUCE, STA_ALGO_LEADER));
    assert_null(sta_algo_unfit(&dims_4x1, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE));
    assert_string_equal(sta_algo_unfit(&p6, STA_COLL_ALLGATHER, STA_ALGO_RECURSIVE),
                        "recursive allgather needs a power-of-two number of ranks");
    assert_string_equal(sta_algo_unfit(&p6, STA_COLL_REDUCE_SCATTER, STA_ALGO_RECURSIVE),
                        "reduce_scatter has no recursive variant");
    assert_string_equal(sta_algo_unfit(&p6, STA_COLL_REDUCE, STA_ALGO_LEADER),
                        "leader is an allreduce algorithm only");
    assert_string_equal(sta_algo_unfit(&uneq, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL),
                        "two-tier algorithms need the same number of ranks on every node");
    assert_true(sta_algo_applies(&uneq, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL));
    assert_false(sta_algo_selectable(&uneq, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL));
    assert_non_null(sta_algo_unfit(&p6, STA_COLL_ALLREDUCE, STA_ALGO_AUTO));
}

static void test_invalid_inputs(void **state)
{
    sta_dims_t bad[] = {
        {.nranks = 0, .nnodes = 1, .local_size = 1, .nrails = 1},
        {.nranks = 4, .nnodes = 2, .local_size = 3, .nrails = 1},   /* N·L != P */
        {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 0},
        {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 3},   /* more rails than L */
    };
    sta_model_t m = model_m;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sta_dims_check(&bad[i]), STRATA_ERR_INVALID);
        assert_true(cost(&bad[i], STA_COLL_ALLREDUCE, STA_ALGO_RING, MB) < 0);
    }
    assert_int_equal(sta_dims_check(&dims_4x1), STRATA_OK);
    assert_int_equal(sta_model_check(&m), STRATA_OK);
    m.net.beta_gbps = 0.0;
    assert_int_equal(sta_model_check(&m), STRATA_ERR_INVALID);
    assert_true(sta_cost_us(&m, &dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_RING, MB) < 0);
    m = model_m;
    m.shm.alpha_us = -1.0;
    assert_int_equal(sta_model_check(&m), STRATA_ERR_INVALID);
    m = model_m;
    m.gamma_gbps = NAN;
    assert_int_equal(sta_model_check(&m), STRATA_ERR_INVALID);
    m = model_m;
    m.net.alpha_us = 0.0;                         /* α = 0 is a valid (ideal) tier */
    assert_int_equal(sta_model_check(&m), STRATA_OK);
}

static void test_crossover(void **state)
{
    sta_tier_t net = {.alpha_us = 20.0, .beta_gbps = 1.0};
    sta_tier_t shm = {.alpha_us = 1.0, .beta_gbps = 10.0};

    /* n* = α·β: 20 µs · 10^3 B/µs = 20000 B; 1 µs · 10^4 B/µs = 10000 B */
    assert_us(sta_tier_crossover_bytes(&net), 20000.0);
    assert_us(sta_tier_crossover_bytes(&shm), 10000.0);
    /* At n*, the latency and bandwidth terms of one step are equal. */
    assert_us(net.alpha_us, 20000.0 / (net.beta_gbps * STA_BYTES_PER_US_PER_GBPS));
}

static void test_names_and_parse(void **state)
{
    sta_algo_t a = STA_ALGO_RING;

    assert_string_equal(sta_coll_name(STA_COLL_REDUCE_SCATTER), "reduce_scatter");
    assert_string_equal(sta_coll_name(STA_COLL_COUNT), "?");
    assert_string_equal(sta_algo_name(STA_ALGO_HIERARCHICAL), "hierarchical");
    assert_string_equal(sta_algo_name(STA_ALGO_AUTO), "auto");
    assert_string_equal(sta_algo_name(STA_ALGO_COUNT), "?");

    assert_int_equal(sta_algo_parse("leader", &a), STRATA_OK);
    assert_int_equal(a, STA_ALGO_LEADER);
    assert_int_equal(sta_algo_parse("Recursive", &a), STRATA_OK);
    assert_int_equal(a, STA_ALGO_RECURSIVE);
    assert_int_equal(sta_algo_parse("AUTO", &a), STRATA_OK);
    assert_int_equal(a, STA_ALGO_AUTO);
    a = STA_ALGO_RING;
    assert_int_equal(sta_algo_parse("", &a), STRATA_OK);
    assert_int_equal(a, STA_ALGO_AUTO);
    a = STA_ALGO_RING;
    assert_int_equal(sta_algo_parse("tree", &a), STRATA_ERR_INVALID);
    assert_int_equal(a, STA_ALGO_RING);            /* untouched on error */
    assert_int_equal(sta_algo_parse("ring ", &a), STRATA_ERR_INVALID);
}

/*
 * The one-node terms, with ω = 30 µs and ω_y its default (model_w): the one-pass shm allreduce (rounds of
 * STA_MODEL_SHM_CHUNK), one-pass reductions of L inputs ((L+1)/3 of a pair's γ), and the
 * waits of an oversubscribed node: a yield turn ω_y per shm round on one node (half for a
 * broadcast), the blocking ω wherever a net phase lies between.
 */
static double costw(const sta_dims_t *d, sta_coll_t c, sta_algo_t a, size_t n)
{
    sta_model_t m = model_m;
    m.wake_us = 30.0;
    m.yield_us = STA_DEFAULT_YIELD_US;
    return sta_cost_us(&m, d, c, a, n);
}

/* One node of four ranks on a host of two cores (oversubscribed), and of four cores. */
static const sta_dims_t node4_over = {.nranks = 4, .nnodes = 1, .local_size = 4, .nrails = 1,
                                      .contiguous = 1, .host_ranks = 4, .host_cores = 2};
static const sta_dims_t node4_fit = {.nranks = 4, .nnodes = 1, .local_size = 4, .nrails = 1,
                                     .contiguous = 1, .host_ranks = 4, .host_cores = 4};

/* The one-pass allreduce: (max(1, ceil(n/c)) + 1) rounds, (L-1)/L·n in, a 4-input pass into
 * n/4 (5/3 of a pair's n/4/γ), n out. */
static void test_node_allreduce_one_pass(void **state)
{
    const double c = (double)STA_MODEL_SHM_CHUNK;
    double n = 3 * c;   /* three chunks: 4 rounds */

    assert_us(costw(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, (size_t)n),
              4 * 1 + 0.75 * n / 1e4 + 5.0 / 3 * (n / 4) / 1e4 + n / 1e4);
    /* one byte past a chunk boundary adds a round */
    double n1 = c + 1;
    assert_us(costw(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, (size_t)n1),
              3 * 1 + 0.75 * n1 / 1e4 + 5.0 / 3 * (n1 / 4) / 1e4 + n1 / 1e4);
    /* just above the one-round path: one chunk, 2 rounds */
    double n2 = STA_NODE_SMALL_BYTES + 1;
    assert_us(costw(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, (size_t)n2),
              2 * 1 + 0.75 * n2 / 1e4 + 5.0 / 3 * (n2 / 4) / 1e4 + n2 / 1e4);
    /* off host shm (a switch) the node runs rings: not the one-pass formula */
    sta_model_t sw = model_m;
    sw.wake_us = 30.0;
    sw.intra = STA_INTRA_SWITCH;
    double ring = sta_cost_us(&sw, &node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL,
                              (size_t)n);
    assert_us(ring, 2 * (3 * 1 + 0.75 * n / 1e4) + 0.75 * n / 1e4);
}

/* One-pass reductions of L inputs: (L+1)/3 of a pair; a pair (L = 2) is exactly γ. */
static void test_node_reductions(void **state)
{
    double n = 1e6;
    /* one round, L = 4: 1 + n/β_s + 5/3·n/γ */
    assert_us(costw(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 4000),
              1 + 0.4 + 5.0 / 3 * 0.4);
    /* leader, L = 4: [1 + n/β_s + 5/3·n/γ] + [1 + n/β_s] */
    assert_us(costw(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, (size_t)n),
              (1 + 100 + 5.0 / 3 * 100) + (1 + 100));
    /* reduce to a root, one node: 1 + n/β_s + 5/3·n/γ */
    assert_us(costw(&node4_fit, STA_COLL_REDUCE, STA_ALGO_HIERARCHICAL, (size_t)n),
              1 + 100 + 5.0 / 3 * 100);
    /* L = 2: a pair, γ itself */
    sta_dims_t two = {.nranks = 2, .nnodes = 1, .local_size = 2, .nrails = 1, .contiguous = 1};
    assert_us(costw(&two, STA_COLL_REDUCE, STA_ALGO_HIERARCHICAL, (size_t)n), 1 + 100 + 100);
    /* L = 1: nothing to combine, the shm phases only copy; over 2 nodes the pipeline:
     * in(c) = out(c) = 1 + c/β_s; the chunk exchanged whole (c < 2·α_n·γ = 4·10^5):
     * net(c) = 20 + c/β_n + c/γ, the slower stage; its fixed 20 µs against the node's
     * 2/β_s per byte: c = sqrt(n·20/(2·10^-4)), K = n/c; t = in + out + K·net */
    sta_dims_t solo = {.nranks = 2, .nnodes = 2, .local_size = 1, .nrails = 1, .contiguous = 1};
    double c = sqrt(n * 20 / 2e-4), K = n / c;
    assert_us(costw(&solo, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, (size_t)n),
              2 * (1 + c / 1e4) + K * (20 + c / 1e3 + c / 1e4));
}

/* Oversubscribed, one node: shm rounds cost ω_y (a yield turn), a broadcast phase ω_y/2;
 * the flat algorithms still block in poll(): ω per step. */
static void test_node_yield_waits(void **state)
{
    const double y = STA_DEFAULT_YIELD_US;

    assert_us(costw(&node4_over, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 0), 1 + y);
    assert_us(costw(&node4_over, STA_COLL_REDUCE_SCATTER, STA_ALGO_HIERARCHICAL, 0), 1 + y);
    assert_us(costw(&node4_over, STA_COLL_ALLGATHER, STA_ALGO_HIERARCHICAL, 0), 1 + y);
    assert_us(costw(&node4_over, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL, 0), 1 + y / 2);
    assert_us(costw(&node4_over, STA_COLL_REDUCE, STA_ALGO_HIERARCHICAL, 0), 1 + y);
    /* leader: a reduce round every rank waits in, then a broadcast */
    assert_us(costw(&node4_over, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, 0), (1 + y) + (1 + y / 2));
    /* the one-pass allreduce pays ω_y in each of its rounds: 4 rounds at 3 chunks; its 4
     * ranks copy and sum at once on 2 cores, each at half of β_s and γ */
    double n = 3.0 * STA_MODEL_SHM_CHUNK;
    assert_us(costw(&node4_over, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, (size_t)n),
              4 * (1 + y) + 2 * (0.75 * n / 1e4 + 5.0 / 3 * (n / 4) / 1e4 + n / 1e4));
    /* flat ring over loopback: 2·3 steps of α_n + ω */
    assert_us(costw(&node4_over, STA_COLL_ALLREDUCE, STA_ALGO_RING, 0), 6 * (20 + 30));
    /* cores enough: no wait terms at all */
    assert_us(costw(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 0), 1);
    assert_us(costw(&node4_fit, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, 0), 2);
}

/* With a net phase between (N > 1) an oversubscribed rank blocks on a futex: every shm phase
 * of an allreduce pays STA_SHM_WAKE_RATIO·ω, the leader's broadcast included; the broadcast
 * collective's shm phase does not: back to back its readers' waits overlap the next call
 * (ω_y/2). */
static void test_multi_node_blocking_waits(void **state)
{
    sta_dims_t d = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1, .contiguous = 1,
                    .host_ranks = 4, .host_cores = 2};
    const double ws = STA_SHM_WAKE_RATIO * 30;
    /* shm phase 1 + ws, the rails' exchange 20 (a rail's two ranks on two cores), shm
     * phase 1 + ws */
    assert_us(costw(&d, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 0), 2 * (1 + ws) + 20);
    /* leader: 1 + ws, the leaders' exchange (two leaders on two cores: no ω) 20, 1 + ws */
    assert_us(costw(&d, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, 0), 2 * (1 + ws) + 20);
    /* tree among the leaders (20), then the node's broadcast 1 + ω_y/2 */
    assert_us(costw(&d, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL, 0),
              20 + 1 + STA_DEFAULT_YIELD_US / 2);
}

/*
 * Net bytes on the host's cores (net_cpu): 4 one-rank nodes on a 2-core host, a model whose
 * link (β_n = 10 GB/s) is faster than the cores: each of the 4 streams gets
 * β_c·min(1, 2/8) = 0.9 GB/s. The ring allreduce of 4 MB moves 1 MB a step: 2·3 steps of
 * 20 + max(10^6/10^4, 10^6/900) = 20 + 1111.1 µs, + the copy 800 and the reduction 600
 * (4 ranks on 2 cores copy and sum at half of β_s and γ; without the term: 800 + 6·(20 +
 * 100) + 600 = 2120).
 * With a link slower than the cores' share (β_n = 0.5) nothing changes; without net_cpu the
 * term is absent. A rooted call takes the longer of its path and its 3 hops' bytes on the
 * cores, 3 streams' share, β_c·min(1, 2/6) = 1.2 GB/s: 4 MB take 3333.3 µs there, longer
 * than any path (the chain's k = 8 chunks, 8·2·20 + 400 = 720; the binomial tree's
 * 2·(20 + 400) = 840, the nodes' tree the same), so chain and trees cost the copy 800 and
 * 3333.3; 1000 bytes (0.8 µs on the cores) cost their path, and so does one node.
 */
static void test_net_on_cores(void **state)
{
    sta_model_t fast = model_m;
    fast.net.beta_gbps = 10.0;
    sta_dims_t d = {.nranks = 4, .nnodes = 4, .local_size = 1, .nrails = 1, .contiguous = 1,
                    .host_ranks = 4, .host_cores = 2, .net_cpu = 1};
    sta_dims_t plain = d;
    plain.net_cpu = 0;
    double per_stream = STA_NET_CPU_GBPS * 2.0 / 8.0;

    (void)state;
    fast.wake_us = 0.0;
    assert_us(sta_cost_us(&fast, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, 4 * MB),
              800 + 6 * (20 + MB / (per_stream * 1e3)) + 600);
    assert_us(sta_cost_us(&fast, &plain, STA_COLL_ALLREDUCE, STA_ALGO_RING, 4 * MB), 2120.0);
    assert_true(sta_cost_us(&fast, &d, STA_COLL_ALLGATHER, STA_ALGO_RING, 4 * MB) >
                sta_cost_us(&fast, &plain, STA_COLL_ALLGATHER, STA_ALGO_RING, 4 * MB));
    assert_true(sta_cost_us(&fast, &d, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 4 * MB) >
                sta_cost_us(&fast, &plain, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 4 * MB));
    double cpu3 = 4 * MB / (STA_NET_CPU_GBPS * 2.0 / 6.0 * 1e3);
    assert_us(sta_cost_us(&fast, &d, STA_COLL_BROADCAST, STA_ALGO_RING, 4 * MB), 800 + cpu3);
    assert_us(sta_cost_us(&fast, &plain, STA_COLL_BROADCAST, STA_ALGO_RING, 4 * MB), 800 + 720);
    assert_us(sta_cost_us(&fast, &d, STA_COLL_BROADCAST, STA_ALGO_RECURSIVE, 4 * MB),
              800 + cpu3);
    assert_us(sta_cost_us(&fast, &plain, STA_COLL_BROADCAST, STA_ALGO_RECURSIVE, 4 * MB),
              800 + 840);
    assert_us(sta_cost_us(&fast, &d, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL, 4 * MB) -
                  sta_cost_us(&fast, &plain, STA_COLL_BROADCAST, STA_ALGO_HIERARCHICAL, 4 * MB),
              cpu3 - 840);
    assert_us(sta_cost_us(&fast, &d, STA_COLL_REDUCE, STA_ALGO_RING, 4 * MB), cpu3);
    assert_us(sta_cost_us(&fast, &d, STA_COLL_BROADCAST, STA_ALGO_RING, 1000),
              sta_cost_us(&fast, &plain, STA_COLL_BROADCAST, STA_ALGO_RING, 1000));
    assert_us(sta_cost_us(&fast, &d, STA_COLL_BROADCAST, STA_ALGO_RECURSIVE, 1000),
              sta_cost_us(&fast, &plain, STA_COLL_BROADCAST, STA_ALGO_RECURSIVE, 1000));
    /* one node: its loopback hops are priced at β_s on the path, the cores' term is absent */
    sta_dims_t one = {.nranks = 4, .nnodes = 1, .local_size = 4, .nrails = 1, .contiguous = 1,
                      .host_ranks = 4, .host_cores = 2, .net_cpu = 1};
    sta_dims_t one_plain = one;
    one_plain.net_cpu = 0;
    assert_us(sta_cost_us(&fast, &one, STA_COLL_BROADCAST, STA_ALGO_RING, 4 * MB),
              sta_cost_us(&fast, &one_plain, STA_COLL_BROADCAST, STA_ALGO_RING, 4 * MB));
    sta_model_t slow = fast;
    slow.net.beta_gbps = 0.5;
    assert_us(sta_cost_us(&slow, &d, STA_COLL_ALLREDUCE, STA_ALGO_RING, 4 * MB),
              sta_cost_us(&slow, &plain, STA_COLL_ALLREDUCE, STA_ALGO_RING, 4 * MB));
}

/* Every formula is non-decreasing in n, on every shape below, oversubscribed or not, with the
 * net's bytes on the host's cores or not, and an oversubscribed host never costs less than one
 * with cores to spare. */
static void test_monotone(void **state)
{
    const sta_dims_t shapes[] = {
        node4_over, node4_fit,
        {.nranks = 2, .nnodes = 1, .local_size = 2, .nrails = 1, .contiguous = 1,
         .host_ranks = 2, .host_cores = 2},
        {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1, .contiguous = 1,
         .host_ranks = 4, .host_cores = 2},
        {.nranks = 8, .nnodes = 2, .local_size = 4, .nrails = 2, .contiguous = 1,
         .host_ranks = 4, .host_cores = 2},
        {.nranks = 4, .nnodes = 4, .local_size = 1, .nrails = 1, .contiguous = 1,
         .host_ranks = 4, .host_cores = 2},
    };
    for (size_t v = 0; v < 2 * sizeof(shapes) / sizeof(shapes[0]); v++) {
        size_t i = v % (sizeof(shapes) / sizeof(shapes[0]));
        sta_dims_t shape = shapes[i];
        shape.net_cpu = v >= sizeof(shapes) / sizeof(shapes[0]);
        sta_dims_t roomy = shape;
        roomy.host_cores = roomy.host_ranks;
        for (int c = 0; c < STA_COLL_COUNT; c++) {
            for (int a = 0; a < STA_ALGO_COUNT; a++) {
                double prev = 0.0;
                for (int e = 0; e <= 34; e++) {
                    for (int k = -1; k <= 1; k++) {
                        size_t n = ((size_t)1 << e) + (size_t)(e > 1 ? k : 0);
                        double us = costw(&shape, (sta_coll_t)c, (sta_algo_t)a, n);
                        if (us < 0.0)
                            continue;
                        if (us < prev - 1e-9 * prev)
                            fail_msg("shape %zu (net_cpu %d) %s %s: %.9g us at %zu B < %.9g "
                                     "before", i, shape.net_cpu,
                                     sta_coll_name((sta_coll_t)c), sta_algo_name((sta_algo_t)a),
                                     us, n, prev);
                        prev = us;
                        double spare = costw(&roomy, (sta_coll_t)c, (sta_algo_t)a, n);
                        assert_true(spare >= 0.0 && spare <= us * (1 + 1e-12));
                    }
                }
            }
        }
    }
}

/* The library, the tuner and strata-plan build their tables from the same model and dims:
 * two builds must agree byte for byte, here on the one-node shapes the new terms touch. */
/* The CollNet's piece: sqrt(block·α_n·γ), within 1..block. M at 10^6 B: sqrt(10^6 · 20 µs ·
 * 10^4 B/µs) = 447213.6 B. */
static void test_piece_bytes(void **state)
{
    sta_model_t m = model_m;
    (void)state;

    assert_int_equal(sta_cost_piece_bytes(&m, 1000000), 447213);
    assert_int_equal(sta_cost_piece_bytes(&m, 1000), 1000);      /* c* above the block */
    assert_int_equal(sta_cost_piece_bytes(&m, 0), 0);
    m.net.alpha_us = 0.0;
    assert_int_equal(sta_cost_piece_bytes(&m, 1000000), 1);      /* no α: the finest */
    m = model_m;
    m.gamma_gbps = 0.0;                                           /* invalid: one piece */
    assert_int_equal(sta_cost_piece_bytes(&m, 1000000), 1000000);
}

/* Where the cores, not the link, bound a stream: β_c(S) = 3.6·min(1, C/2S) below β_n. */
/* A rail of two nodes exchanges a part whole below 2·(α_n + ω_l)·γ (here 2·20 µs·10 GB/s =
 * 400 kB), which takes one α_n off the pipelined two-tier allreduce's small sizes. */
static void test_rail_exchange(void **state)
{
    sta_model_t m = model_m;
    sta_dims_t p6 = {.nranks = 6, .nnodes = 3, .local_size = 2, .nrails = 1};
    (void)state;

    assert_int_equal(sta_cost_rail_exchange(&m, &dims_4x1, 8), 1);
    assert_int_equal(sta_cost_rail_exchange(&m, &dims_4x1, 399000), 1);
    assert_int_equal(sta_cost_rail_exchange(&m, &dims_4x1, 401000), 0);
    assert_int_equal(sta_cost_rail_exchange(&m, &p6, 8), 0);          /* a ring of 3 */
    /* the ring's two steps alone would cost 2·α_n = 40 µs */
    assert_true(cost(&dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 8) < 2 * 20.0);
    assert_true(cost(&dims_4x1, STA_COLL_ALLREDUCE, STA_ALGO_LEADER, 8) < 2 * 20.0);
    assert_true(cost(&p6, STA_COLL_ALLREDUCE, STA_ALGO_HIERARCHICAL, 8) > 4 * 20.0);
    m.gamma_gbps = 0.0;                                                /* invalid model */
    assert_int_equal(sta_cost_rail_exchange(&m, &dims_4x1, 8), 0);
}

/* N nodes of one rank, tcp, 2 ranks on a host of 2 cores: β_c = 1.8 GB/s. */
static sta_dims_t dims_tcp_two_on_two(int nnodes)
{
    sta_dims_t d;

    sta_dims_one_per_node(nnodes, &d);
    d.net_cpu = 1;
    d.host_ranks = 2;
    d.host_cores = 2;
    return d;
}

static void test_net_cpu_bound(void **state)
{
    sta_model_t m = model_m;
    sta_dims_t d = dims_tcp_two_on_two(2);
    (void)state;

    m.net.beta_gbps = 3.6;
    assert_int_equal(sta_cost_net_cpu_bound(&m, &d), 1);
    m.net.beta_gbps = 0.25;                 /* 2 Gbit/s: the link bounds */
    assert_int_equal(sta_cost_net_cpu_bound(&m, &d), 0);
    m.net.beta_gbps = 1.8;                  /* equal: not below */
    assert_int_equal(sta_cost_net_cpu_bound(&m, &d), 0);
    m.net.beta_gbps = 3.6;
    d.host_ranks = 1;                       /* a core each side: β_c = 3.6, not below */
    assert_int_equal(sta_cost_net_cpu_bound(&m, &d), 0);
    m.net.beta_gbps = 12.5;                 /* a 100 Gbit/s NIC over tcp */
    assert_int_equal(sta_cost_net_cpu_bound(&m, &d), 1);
    d.net_cpu = 0;                          /* the NIC moves the bytes */
    assert_int_equal(sta_cost_net_cpu_bound(&m, &d), 0);
    d.net_cpu = 1;
    d.host_cores = 0;                       /* unknown cores */
    assert_int_equal(sta_cost_net_cpu_bound(&m, &d), 0);
    d.host_cores = 2;
    m.gamma_gbps = 0.0;                     /* invalid model */
    assert_int_equal(sta_cost_net_cpu_bound(&m, &d), 0);
}

/* The smallest message handed a cores-bound net: the stripe where the cores bound it and more
 * than one node shares it, 0 where the link bounds, one node, or no stripe. */
static void test_net_msg_min(void **state)
{
    sta_model_t m = model_m;
    sta_dims_t d = dims_tcp_two_on_two(2);
    (void)state;

    m.net.beta_gbps = 3.6;                  /* cores bound: β_c = 1.8 */
    assert_int_equal(sta_cost_net_msg_min(&m, &d, 256 << 10), 256 << 10);
    assert_int_equal(sta_cost_net_msg_min(&m, &d, 0), 0);          /* does not stripe */
    assert_int_equal(sta_cost_net_msg_min(&m, NULL, 256 << 10), 0);
    m.net.beta_gbps = 0.25;                 /* the link bounds */
    assert_int_equal(sta_cost_net_msg_min(&m, &d, 256 << 10), 0);
    m.net.beta_gbps = 3.6;
    d = dims_tcp_two_on_two(1);             /* one node: no net */
    assert_int_equal(sta_cost_net_msg_min(&m, &d, 256 << 10), 0);
}

/*
 * The pipeline's chunk with dims.net_msg_min (the transport's striping size where the cores
 * bound the net): no ring message (a member's part of a rail's share of the chunk) falls in
 * [net_msg_min/2, net_msg_min) unless the chunk is the whole call; over a sweep of sizes the
 * rule moves some chunks and leaves others as they were without it.
 */
static void test_pipe_chunk_message_band(void **state)
{
    const size_t stripe = 256 << 10;
    sta_model_t m;
    sta_dims_t d = {.nranks = 4, .nnodes = 2, .local_size = 2, .nrails = 1, .contiguous = 1,
                    .host_ranks = 4, .host_cores = 2, .net_cpu = 1};
    int moved = 0, kept = 0, in_band_without = 0;
    (void)state;

    sta_model_default(&m);
    for (int a = 0; a < 2; a++) {
        sta_algo_t algo = a == 0 ? STA_ALGO_HIERARCHICAL : STA_ALGO_LEADER;
        double parts = d.nnodes * (a == 0 ? d.local_size : 1);
        for (size_t n = 64 << 10; n <= ((size_t)64 << 20); n += n / 3) {
            d.net_msg_min = 0;
            size_t free_c = sta_cost_hier_chunk_bytes(&m, &d, algo, n);
            d.net_msg_min = stripe;
            size_t c = sta_cost_hier_chunk_bytes(&m, &d, algo, n);
            double free_msg = free_c / parts, msg = c / parts;
            assert_true(c >= 1 && c <= n);
            assert_false(msg >= stripe / 2.0 && msg < stripe && c < n);
            in_band_without += free_msg >= stripe / 2.0 && free_msg < stripe && free_c < n;
            if (c != free_c)
                moved++;
            else
                kept++;
        }
    }
    assert_true(in_band_without > 0 && moved > 0 && kept > 0);
}

static void test_tables_identical(void **state)
{
    const sta_dims_t shapes[] = {node4_over, node4_fit};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        static sta_select_t a, b;
        memset(&a, 0xa5, sizeof(a));
        memset(&b, 0x5a, sizeof(b));
        sta_model_t m = model_m;
        m.wake_us = 30.0;
        assert_int_equal(sta_select_build(&m, &shapes[i], STA_ALGO_AUTO, &a), STRATA_OK);
        assert_int_equal(sta_select_build(&m, &shapes[i], STA_ALGO_AUTO, &b), STRATA_OK);
        for (int c = 0; c < STA_COLL_COUNT; c++) {
            assert_int_equal(a.nranges[c], b.nranges[c]);
            for (int r = 0; r < a.nranges[c]; r++) {
                assert_true(a.ranges[c][r].upper == b.ranges[c][r].upper);
                assert_int_equal(a.ranges[c][r].algo, b.ranges[c][r].algo);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_allreduce_shapes),
        cmocka_unit_test(test_reduce_scatter_allgather),
        cmocka_unit_test(test_shared_link_l4),
        cmocka_unit_test(test_broadcast_reduce),
        cmocka_unit_test(test_wakeups),
        cmocka_unit_test(test_small_node_allreduce),
        cmocka_unit_test(test_single_rank_and_applicability),
        cmocka_unit_test(test_invalid_inputs),
        cmocka_unit_test(test_crossover),
        cmocka_unit_test(test_names_and_parse),
        cmocka_unit_test(test_node_allreduce_one_pass),
        cmocka_unit_test(test_node_reductions),
        cmocka_unit_test(test_node_yield_waits),
        cmocka_unit_test(test_multi_node_blocking_waits),
        cmocka_unit_test(test_net_on_cores),
        cmocka_unit_test(test_monotone),
        cmocka_unit_test(test_pipe_chunk_message_band),
        cmocka_unit_test(test_tables_identical),
        cmocka_unit_test(test_piece_bytes),
        cmocka_unit_test(test_net_cpu_bound),
        cmocka_unit_test(test_net_msg_min),
        cmocka_unit_test(test_rail_exchange),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
