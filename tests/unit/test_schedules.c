/*
 * The algorithms' schedules, checked symbolically (no data moves): the ring's
 * send/receive blocks, the rail groups of the hierarchical algorithms, the
 * block partition, and the peer set each rank connects to at init.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "algos/exec.h"
#include "coll/comm.h"

#define PMAX 12

/*
 * Reduce-scatter: contrib[p][b] is the set of ranks whose data block b of
 * member p holds. At each step the block a member receives must be the one
 * its predecessor sends; after P-1 steps member p's block p holds all ranks.
 */
static void test_ring_reduce_scatter(void **state)
{
    for (int P = 1; P <= PMAX; P++) {
        uint32_t contrib[PMAX][PMAX], next[PMAX][PMAX];
        for (int p = 0; p < P; p++)
            for (int b = 0; b < P; b++)
                contrib[p][b] = 1u << p;
        for (int s = 0; s < P - 1; s++) {
            memcpy(next, contrib, sizeof(next));
            for (int p = 0; p < P; p++) {
                int sb, rb, psb, prb, prev = (p + P - 1) % P;
                sta_ring_rs_step(P, p, s, &sb, &rb);
                sta_ring_rs_step(P, prev, s, &psb, &prb);
                assert_int_equal(rb, psb);           /* receive what the predecessor sends */
                next[p][rb] = contrib[p][rb] | contrib[prev][psb];
            }
            memcpy(contrib, next, sizeof(next));
        }
        for (int p = 0; p < P; p++)
            assert_int_equal(contrib[p][p], (1u << P) - 1);
    }
}

/* Allgather: member p starts with block p; after P-1 steps it has every block. */
static void test_ring_allgather(void **state)
{
    for (int P = 1; P <= PMAX; P++) {
        uint32_t have[PMAX], next[PMAX];
        for (int p = 0; p < P; p++)
            have[p] = 1u << p;
        for (int s = 0; s < P - 1; s++) {
            for (int p = 0; p < P; p++) {
                int sb, rb, psb, prb, prev = (p + P - 1) % P;
                sta_ring_ag_step(P, p, s, &sb, &rb);
                sta_ring_ag_step(P, prev, s, &psb, &prb);
                assert_int_equal(rb, psb);
                assert_true(have[prev] & (1u << psb));   /* it only sends what it has */
                next[p] = have[p] | (1u << rb);
            }
            memcpy(have, next, sizeof(have));
        }
        for (int p = 0; p < P; p++)
            assert_int_equal(have[p], (1u << P) - 1);
    }
}

/* sta_block partitions [0, count) exactly, the first count % parts blocks one larger. */
static void test_block_partition(void **state)
{
    const size_t counts[] = {0, 1, 7, 8, 1000, 1031};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int parts = 1; parts <= 9; parts++) {
            size_t next = 0;
            for (int i = 0; i < parts; i++) {
                size_t off, len;
                sta_block(counts[c], parts, i, &off, &len);
                assert_int_equal(off, next);
                assert_true(len == counts[c] / parts || len == counts[c] / parts + 1);
                next = off + len;
            }
            assert_int_equal(next, counts[c]);
        }
    }
}

/* A fake communicator topology: P ranks over N nodes, contiguous or interleaved. */
typedef struct topo {
    strata_comm_t comm;
    int node_of[PMAX], local_of[PMAX], rank_of[PMAX], flat[PMAX], byrank[PMAX];
} topo_t;

static void topo_build(topo_t *t, int P, int N, int interleave)
{
    int counts[PMAX] = {0};
    memset(t, 0, sizeof(*t));
    for (int r = 0; r < P; r++) {
        t->node_of[r] = interleave ? r % N : r * N / P;
        t->local_of[r] = counts[t->node_of[r]]++;
        t->byrank[r] = r;
    }
    int L = P / N, at = 0;
    for (int n = 0; n < N; n++)
        for (int r = 0; r < P; r++)
            if (t->node_of[r] == n)
                t->flat[at++] = r;
    for (int r = 0; r < P; r++)
        t->rank_of[t->node_of[r] * L + t->local_of[r]] = r;
    t->comm.ctx.nranks = P;
    t->comm.ctx.nnodes = N;
    t->comm.ctx.local_size = L;
    t->comm.ctx.uniform = (P % N) == 0;
    t->comm.ctx.rank_of = t->rank_of;
    t->comm.ctx.node_of = t->node_of;
    t->comm.ctx.local_of = t->local_of;
    t->comm.node_of = t->node_of;
    t->comm.local_of = t->local_of;
    t->comm.rank_of = t->rank_of;
    t->comm.flat_ranks = t->flat;
    t->comm.byrank_ranks = t->byrank;
}

static int in_set(const int *set, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (set[i] == x)
            return 1;
    return 0;
}

/* Every connection a rank makes must meet an accept: the peer sets are symmetric. */
static void test_peer_sets_symmetric_and_complete(void **state)
{
    topo_t t;
    int sets[PMAX][PMAX], sizes[PMAX];
    for (int P = 1; P <= PMAX; P++) {
        for (int N = 1; N <= P; N++) {
            if (P % N != 0)
                continue;
            for (int il = 0; il < 2; il++) {
                topo_build(&t, P, N, il);
                for (int r = 0; r < P; r++) {
                    sizes[r] = stc_peer_set(&t.comm, r, sets[r], PMAX);
                    assert_false(in_set(sets[r], sizes[r], r));
                }
                for (int a = 0; a < P; a++) {
                    for (int i = 0; i < sizes[a]; i++)
                        assert_true(in_set(sets[sets[a][i]], sizes[sets[a][i]], a));
                    /* the ring neighbours of every group an algorithm uses */
                    if (P > 1) {
                        assert_true(in_set(sets[a], sizes[a], (a + 1) % P));
                        assert_true(in_set(sets[a], sizes[a], (a + P - 1) % P));
                    }
                    if (N > 1) {
                        int ranks[PMAX];
                        sta_group_t rail;
                        t.comm.ctx.node = t.node_of[a];
                        sta_rail_group(&t.comm.ctx, t.local_of[a], ranks, &rail);
                        assert_int_equal(rail.ranks[rail.pos], a);
                        int nxt = rail.ranks[(rail.pos + 1) % N];
                        assert_true(in_set(sets[a], sizes[a], nxt));
                        assert_int_equal(t.local_of[nxt], t.local_of[a]);
                    }
                }
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_reduce_scatter),
        cmocka_unit_test(test_ring_allgather),
        cmocka_unit_test(test_block_partition),
        cmocka_unit_test(test_peer_sets_symmetric_and_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
