/*
 * Two-tier reduce-scatter and allgather: the block collectives, where every
 * rank owns one block of `count` elements of a P-block buffer.
 *
 * Terms: N nodes of L ranks, rail k = local rank k of every node, node j's
 * local rank k is global rank rank_of[j·L + k]; n bytes = the P-block buffer
 * (reduce-scatter's input, allgather's output); R rails in use per node.
 *
 * Both work in "rail-major" order: a work buffer of P blocks where region k
 * (N blocks, contiguous) holds the blocks of rail k's ranks in node order, so
 * the shared-memory phase splits the buffer into L equal regions (one per
 * local rank) and each rail's ring works on one contiguous region.
 *
 * hierarchical reduce-scatter = permute into rail-major order + shm
 * reduce-scatter (local rank k gets region k summed over the node) + ring
 * reduce-scatter of region k over rail k (node j keeps block j, its own):
 *   t = n/β_s + [α_s + n/β_s + (L-1)/L·n/γ]
 *       + [(N-1)·α_n + (N-1)/N·n/(R·β_n) + (N-1)/N·(n/L)/γ]
 * hierarchical allgather = ring allgather over rail k (each rank's block to
 * the same local rank of every node) + shm allgather of the regions + permute
 * back into rank order:
 *   t = [(N-1)·α_n + (N-1)/N·(n/L)/β_n·(L/R)] + [α_s + n/β_s] + n/β_s
 * The net phases carry each byte across the node's NICs once, all rails at
 * once. When rail-major order is rank order (one node, or one rank a node,
 * with ranks in node order) there is nothing to permute: the n/β_s term and
 * the copy go (reduce-scatter reads src directly, allgather works in dst).
 */
#include <string.h>

#include "algos/exec.h"
#include "algos/node_shm.h"

/* Work block of (rail k, node j) <-> global rank rank_of[j·L + k]. */
static void blocks_permute(const sta_ctx_t *ctx, char *rank_order, char *rail_order,
                           size_t bytes, int to_rail)
{
    const int N = ctx->nnodes, L = ctx->local_size;

    if (bytes == 0)
        return;
    for (int k = 0; k < L; k++) {
        for (int j = 0; j < N; j++) {
            char *r = rank_order + (size_t)ctx->rank_of[(size_t)j * L + k] * bytes;
            char *w = rail_order + ((size_t)k * N + j) * bytes;
            if (to_rail)
                memcpy(w, r, bytes);
            else
                memcpy(r, w, bytes);
        }
    }
}

/* Rail-major order is rank order: block k·N + j is rank k·N + j's. */
static int blocks_in_rank_order(const sta_ctx_t *ctx)
{
    const int N = ctx->nnodes, L = ctx->local_size;

    for (int k = 0; k < L; k++)
        for (int j = 0; j < N; j++)
            if (ctx->rank_of[(size_t)j * L + k] != k * N + j)
                return 0;
    return 1;
}

strata_status_t sta_hier_reduce_scatter(sta_ctx_t *ctx, const void *src, void *dst, void *work,
                                        size_t count, strata_dtype_t dtype, strata_op_t op)
{
    const size_t esz = strata_dtype_size(dtype), bytes = count * esz;
    const int N = ctx->nnodes, me = ctx->local_rank;
    const size_t total = count * (size_t)ctx->nranks;
    char *region = (char *)work + (size_t)me * N * bytes;
    int ranks[N];
    sta_group_t rail;
    strata_status_t status;

    if ((status = sta_hier_check(ctx)) != STRATA_OK)
        return status;
    const void *in = src;
    if (!blocks_in_rank_order(ctx)) {
        blocks_permute(ctx, (char *)src, work, bytes, 1);
        in = work;
    }
    /* only this rank's region of work is written; the others are read from shm */
    if ((status = sta_node_reduce_scatter(ctx, in, work, total, dtype, op)) != STRATA_OK)
        return status;
    if (N > 1) {
        sta_rail_group(ctx, me, ranks, &rail);
        status = sta_ring_reduce_scatter(ctx, &rail, region, (size_t)N * count, dtype, op);
        if (status != STRATA_OK)
            return status;
    }
    if (bytes > 0)
        memmove(dst, region + (size_t)ctx->node * bytes, bytes);
    return STRATA_OK;
}

strata_status_t sta_hier_allgather(sta_ctx_t *ctx, const void *src, void *dst, void *work,
                                   size_t count, strata_dtype_t dtype)
{
    const size_t esz = strata_dtype_size(dtype), bytes = count * esz;
    const int N = ctx->nnodes, me = ctx->local_rank;
    const size_t total = count * (size_t)ctx->nranks;
    int ranks[N];
    sta_group_t rail;
    strata_status_t status;

    if ((status = sta_hier_check(ctx)) != STRATA_OK)
        return status;
    int direct = blocks_in_rank_order(ctx);
    if (direct)
        work = dst;
    char *region = (char *)work + (size_t)me * N * bytes;
    if (bytes > 0)
        memmove(region + (size_t)ctx->node * bytes, src, bytes);
    if (N > 1) {
        sta_rail_group(ctx, me, ranks, &rail);
        status = sta_ring_allgather(ctx, &rail, region, (size_t)N * count, dtype);
        if (status != STRATA_OK)
            return status;
    }
    if ((status = sta_node_allgather(ctx, work, total, dtype)) != STRATA_OK)
        return status;
    if (!direct)
        blocks_permute(ctx, dst, work, bytes, 0);
    return STRATA_OK;
}
