/*
 * Collective algorithms over the execution context. Each works on a "group":
 * an array of ranks in ring order and this rank's position in it, so the same
 * code runs the flat ring (every rank), a rail ring (one local rank of every
 * node) or the leaders' ring. Point-to-point traffic goes through the
 * transport contract (sta_sendrecv); intra-node steps through the
 * shared-memory tier (node_shm.h). Every function is collective over its
 * group, blocks until this rank's part is done, and records errors in the
 * context. Buffers hold `count` elements of dtype.
 */
#ifndef STA_EXEC_H
#define STA_EXEC_H

#include "algos/cost_model.h"   /* STA_PIPELINE_CHUNK: the chain's c */
#include "algos/ctx.h"

typedef struct sta_group {
    const int *ranks;   /* ranks in ring order */
    int size;
    int pos;            /* this rank's index in ranks */
} sta_group_t;

/* a mod n in 0..n-1 for any sign of a: ring, chain and tree positions wrap around groups. */
static inline int sta_mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/*
 * The ring schedule: the blocks member p of P sends and receives at step s
 * (0 <= s < P-1) of reduce-scatter and of allgather. Pure; unit-tested.
 */
static inline void sta_ring_rs_step(int P, int p, int s, int *send_blk, int *recv_blk)
{
    *send_blk = sta_mod(p - s - 1, P);
    *recv_blk = sta_mod(p - s - 2, P);
}
static inline void sta_ring_ag_step(int P, int p, int s, int *send_blk, int *recv_blk)
{
    *send_blk = sta_mod(p - s, P);
    *recv_blk = sta_mod(p - s - 1, P);
}

/* The rail of local rank `local`: that local rank of every node, in node order. */
void sta_rail_group(const sta_ctx_t *ctx, int local, int *ranks, sta_group_t *g);

/* ring.c: reduce-scatter then allgather around the group; P-1 steps each, blocks of count/P. */
strata_status_t sta_ring_allreduce(sta_ctx_t *ctx, const sta_group_t *g, void *buf, size_t count,
                                   strata_dtype_t dtype, strata_op_t op);
/* In place: afterwards block g->pos (sta_block(count, size, pos)) of buf holds the reduction. */
strata_status_t sta_ring_reduce_scatter(sta_ctx_t *ctx, const sta_group_t *g, void *buf,
                                        size_t count, strata_dtype_t dtype, strata_op_t op);
/* In place: block g->pos of buf is valid on entry; afterwards every block is. */
strata_status_t sta_ring_allgather(sta_ctx_t *ctx, const sta_group_t *g, void *buf, size_t count,
                                   strata_dtype_t dtype);

/* chain.c: pipelined chains from / toward group position root (chunks of STA_PIPELINE_CHUNK). */
strata_status_t sta_chain_bcast(sta_ctx_t *ctx, const sta_group_t *g, int root, void *buf,
                                size_t count, strata_dtype_t dtype);
/* src on every member; dst significant at root only (dst may equal src). */
strata_status_t sta_chain_reduce(sta_ctx_t *ctx, const sta_group_t *g, int root, const void *src,
                                 void *dst, size_t count, strata_dtype_t dtype, strata_op_t op);

/* recursive.c: recursive doubling (allreduce: any size; allgather: power-of-two groups). */
strata_status_t sta_rd_allreduce(sta_ctx_t *ctx, const sta_group_t *g, void *buf, size_t count,
                                 strata_dtype_t dtype, strata_op_t op);
strata_status_t sta_rd_allgather(sta_ctx_t *ctx, const sta_group_t *g, void *buf, size_t count,
                                 strata_dtype_t dtype);
/* Binomial trees rooted at group position root. */
strata_status_t sta_binomial_bcast(sta_ctx_t *ctx, const sta_group_t *g, int root, void *buf,
                                   size_t count, strata_dtype_t dtype);
strata_status_t sta_binomial_reduce(sta_ctx_t *ctx, const sta_group_t *g, int root,
                                    const void *src, void *dst, size_t count,
                                    strata_dtype_t dtype, strata_op_t op);

/*
 * hier.c: two-tier algorithms (need the same number of ranks on every node).
 * hierarchical allreduce: shm reduce-scatter, one ring per rail over the
 * nodes (local rank i of every node forms rail i), shm allgather. leader
 * allreduce: shm reduce to local rank 0, ring among the leaders, shm
 * broadcast. Broadcast / reduce: binomial tree over the nodes on the root's
 * rail, shm broadcast / reduce inside each node. src may equal dst.
 */
/* Fails ctx (STRATA_ERR_INTERNAL) unless every node has the same number of ranks. */
strata_status_t sta_hier_check(sta_ctx_t *ctx);
strata_status_t sta_hier_allreduce(sta_ctx_t *ctx, const void *src, void *dst, size_t count,
                                   strata_dtype_t dtype, strata_op_t op);
strata_status_t sta_leader_allreduce(sta_ctx_t *ctx, const void *src, void *dst, size_t count,
                                     strata_dtype_t dtype, strata_op_t op);
strata_status_t sta_hier_bcast(sta_ctx_t *ctx, int root, void *buf, size_t count,
                               strata_dtype_t dtype);
strata_status_t sta_hier_reduce(sta_ctx_t *ctx, int root, const void *src, void *dst,
                                size_t count, strata_dtype_t dtype, strata_op_t op);

/*
 * hier_pipe.c: the same two allreduces over N > 1 nodes, chunk by chunk, the
 * node's phases of one chunk overlapping the ring of the next (the formulas of
 * hier.c per chunk; cost in algos/cost_model.c). Chunk: ctx->hier_chunk, else
 * sta_cost_hier_chunk_bytes() of ctx->model and ctx->dims, else one chunk.
 */
strata_status_t sta_hier_allreduce_pipelined(sta_ctx_t *ctx, const void *src, void *dst,
                                             size_t count, strata_dtype_t dtype,
                                             strata_op_t op);
strata_status_t sta_leader_allreduce_pipelined(sta_ctx_t *ctx, const void *src, void *dst,
                                               size_t count, strata_dtype_t dtype,
                                               strata_op_t op);

/*
 * hier_blocks.c: two-tier reduce-scatter and allgather, count elements per
 * rank's block; work holds P blocks (the caller's, not the context's scratch,
 * which the ring phases use). reduce_scatter: src has P blocks, dst gets this
 * rank's reduced block. allgather: src is this rank's block, dst gets all P in
 * rank order. src may lie inside dst (in place); neither may overlap work.
 */
strata_status_t sta_hier_reduce_scatter(sta_ctx_t *ctx, const void *src, void *dst, void *work,
                                        size_t count, strata_dtype_t dtype, strata_op_t op);
strata_status_t sta_hier_allgather(sta_ctx_t *ctx, const void *src, void *dst, void *work,
                                   size_t count, strata_dtype_t dtype);


#endif /* STA_EXEC_H */
