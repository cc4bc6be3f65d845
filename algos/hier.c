/*
 * Two-tier algorithms: shared memory inside a node, the transport between
 * nodes, one inter-node group per rail. Terms: N nodes of L ranks, rail i =
 * local rank i of every node (it talks through NIC i mod ndev), n bytes,
 * nrails = distinct NICs per node in use; α_s/β_s shared memory, α_n/β_n
 * one NIC, γ reduction rate.
 *
 * hierarchical allreduce = shm reduce-scatter (local rank i keeps block i of
 * the node's sum) + ring allreduce of block i over rail i (all rails at once)
 * + shm allgather (on one node: up to STA_NODE_SMALL_BYTES a single shm round,
 * α_s + n/β_s + (L+1)/3·n/γ; above, the one-pass sta_node_allreduce, whose cost
 * algos/node_shm.h gives):
 *   t = [α_s + n/β_s + (L-1)/L·n/γ] + [2(N-1)·α_n + 2(N-1)/N·n/(nrails·β_n)
 *       + (N-1)/N·(n/L)/γ] + [α_s + n/β_s]
 * leader allreduce = shm reduce to local rank 0 + ring allreduce of n among the
 * N leaders + shm broadcast (both, with N > 1, chunk by chunk, each chunk's
 * shm phases overlapping the next or previous chunk's ring: hier_pipe.c):
 *   t = [α_s + n/β_s + (L-1)·n/γ] + [2(N-1)·α_n + 2(N-1)/N·n/β_n + (N-1)/N·n/γ]
 *       + [α_s + n/β_s]
 * hierarchical broadcast = binomial tree over the nodes on the root's rail +
 * shm broadcast; hierarchical reduce = shm reduce to the root's local rank +
 * binomial reduce over the nodes on that rail.
 */
#include <string.h>

#include "algos/exec.h"
#include "algos/node_shm.h"

/* rank_of is node-major, so a rail is copied out into `ranks` (nnodes entries). */
void sta_rail_group(const sta_ctx_t *ctx, int local, int *ranks, sta_group_t *g)
{
    for (int j = 0; j < ctx->nnodes; j++)
        ranks[j] = ctx->rank_of[(size_t)j * ctx->local_size + local];
    g->ranks = ranks;
    g->size = ctx->nnodes;
    g->pos = ctx->node;
}

strata_status_t sta_hier_check(sta_ctx_t *ctx)
{
    if (!ctx->uniform)
        return sta_ctx_fail(ctx, STRATA_ERR_INTERNAL, "two-tier algorithms need the same "
                            "number of ranks on every node");
    return STRATA_OK;
}

strata_status_t sta_hier_allreduce(sta_ctx_t *ctx, const void *src, void *dst, size_t count,
                                   strata_dtype_t dtype, strata_op_t op)
{
    const size_t esz = strata_dtype_size(dtype);
    strata_status_t status;

    if ((status = sta_hier_check(ctx)) != STRATA_OK)
        return status;
    if (ctx->nnodes == 1 && count * esz <= STA_NODE_SMALL_BYTES)
        return sta_node_allreduce_small(ctx, src, dst, count, dtype, op);   /* one round */
    if (ctx->nnodes == 1)
        return sta_node_allreduce(ctx, src, dst, count, dtype, op);   /* no net phase between */
    return sta_hier_allreduce_pipelined(ctx, src, dst, count, dtype, op);
}

strata_status_t sta_leader_allreduce(sta_ctx_t *ctx, const void *src, void *dst, size_t count,
                                     strata_dtype_t dtype, strata_op_t op)
{
    strata_status_t status;

    if ((status = sta_hier_check(ctx)) != STRATA_OK)
        return status;
    if (ctx->nnodes > 1)
        return sta_leader_allreduce_pipelined(ctx, src, dst, count, dtype, op);
    if ((status = sta_node_reduce(ctx, src, dst, count, dtype, op, 0)) != STRATA_OK)
        return status;
    return sta_node_bcast(ctx, dst, count, dtype, 0);
}

strata_status_t sta_hier_bcast(sta_ctx_t *ctx, int root, void *buf, size_t count,
                               strata_dtype_t dtype)
{
    const int root_local = ctx->local_of[root], root_node = ctx->node_of[root];
    int ranks[ctx->nnodes];
    sta_group_t rail;
    strata_status_t status;

    if ((status = sta_hier_check(ctx)) != STRATA_OK)
        return status;
    if (ctx->local_rank == root_local && ctx->nnodes > 1) {
        sta_rail_group(ctx, root_local, ranks, &rail);
        if ((status = sta_binomial_bcast(ctx, &rail, root_node, buf, count, dtype)) != STRATA_OK)
            return status;
    }
    return sta_node_bcast(ctx, buf, count, dtype, root_local);
}

strata_status_t sta_hier_reduce(sta_ctx_t *ctx, int root, const void *src, void *dst,
                                size_t count, strata_dtype_t dtype, strata_op_t op)
{
    const int root_local = ctx->local_of[root], root_node = ctx->node_of[root];
    const size_t bytes = count * strata_dtype_size(dtype);
    int ranks[ctx->nnodes];
    sta_group_t rail;
    strata_status_t status;
    char *arena;

    if ((status = sta_hier_check(ctx)) != STRATA_OK)
        return status;
    /*
     * The node's partial result needs a home on the rail ranks that are not the
     * root (their dst is not significant): the top third of a scratch arena
     * sized up front, so the binomial reduce's own use of the bottom two
     * thirds never moves it.
     */
    if ((status = sta_ctx_scratch(ctx, 3 * bytes, (void **)&arena)) != STRATA_OK)
        return status;
    int on_rail = ctx->local_rank == root_local;
    char *partial = (ctx->rank == root) ? dst : arena + 2 * bytes;
    status = sta_node_reduce(ctx, src, on_rail ? partial : NULL, count, dtype, op, root_local);
    if (status != STRATA_OK || !on_rail || ctx->nnodes == 1)
        return status;
    sta_rail_group(ctx, root_local, ranks, &rail);
    return sta_binomial_reduce(ctx, &rail, root_node, partial, dst, count, dtype, op);
}
