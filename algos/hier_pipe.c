/*
 * The two-tier allreduces over several nodes, pipelined: the buffer goes in
 * chunks of c bytes, and while chunk k is on the network (a ring over the
 * nodes, ring_async.c) the node reduces chunk k+1 in shared memory and
 * spreads chunk k-1, so the network never waits for the node's phases after
 * the first chunk.
 *
 * Schedule, the same on every rank of a node (the shm rounds must match):
 *   in(0); start net(0)
 *   for k = 0..K-1:  in(k+1); start net(k+1) | wait net(k) | out(k)
 * where in/out are the node's phases (hierarchical: reduce-scatter / allgather,
 * local rank i's ring carries block i of the chunk over rail i; leader:
 * reduce / broadcast at local rank 0, whose ring carries the whole chunk).
 * Every shared-memory wait progresses the ring in flight (ctx->progress): a
 * rank blocked on a local peer must not hold up its remote ring partners.
 * Up to two rings are in flight; chunk k+1's posts nothing before chunk k's
 * posted its last step, so each comm carries the chunks' messages in order on
 * both ends (they match in posting order) and the link has the next chunk's
 * bytes queued behind the current one's.
 *
 * On two nodes a rail's ring of a small part is one exchange instead (ring_async.c; the
 * model's rule, sta_cost_rail_exchange): one step of latency fewer.
 * Terms: K = ceil(n/c) chunks; RS(c), NET(c), AG(c) the phases of one chunk.
 *   t = RS(c) + NET(c) + AG(c) + (K-1)·max(NET(c), RS(c) + AG(c))
 * c is STRATA_HIER_CHUNK, or the model's optimum (sta_cost_hier_chunk_bytes).
 */
#include "algos/exec.h"
#include "algos/node_shm.h"
#include "algos/ring_async.h"

typedef struct pipe {
    const void *src;
    char *dst;
    size_t count, esz, chunk;    /* chunk: elements per chunk */
    strata_dtype_t dtype;
    strata_op_t op;
    int leader;                  /* 1: leader allreduce, 0: hierarchical */
    int on_net;                  /* this rank runs the rings */
    sta_group_t rail;
    sta_ring_op_t ring[2];       /* chunk k's ring is ring[k % 2] */
    int busy[2];                 /* started and not yet waited for */
    size_t oldest;               /* the chunk whose ring is waited for next */
    char *tmp;                   /* two tmp areas of tmp_bytes, one per ring */
    size_t tmp_bytes;
} pipe_t;

static size_t pipe_len(const pipe_t *p, size_t k)
{
    size_t off = k * p->chunk;
    return p->count - off < p->chunk ? p->count - off : p->chunk;
}

static strata_status_t pipe_in(sta_ctx_t *ctx, pipe_t *p, size_t k)
{
    size_t off = k * p->chunk, len = pipe_len(p, k);
    const char *s = (const char *)p->src + off * p->esz;
    char *d = p->dst + off * p->esz;

    if (p->leader)
        return sta_node_reduce(ctx, s, d, len, p->dtype, p->op, 0);
    return sta_node_reduce_scatter(ctx, s, d, len, p->dtype, p->op);
}

static strata_status_t pipe_out(sta_ctx_t *ctx, pipe_t *p, size_t k)
{
    char *d = p->dst + k * p->chunk * p->esz;

    if (p->leader)
        return sta_node_bcast(ctx, d, pipe_len(p, k), p->dtype, 0);
    return sta_node_allgather(ctx, d, pipe_len(p, k), p->dtype);
}

/* The part of chunk k this rank's ring reduces: its block (hierarchical) or all of it. */
static void pipe_net_part(const sta_ctx_t *ctx, const pipe_t *p, size_t k, size_t *off_p,
                          size_t *len_p)
{
    size_t len = pipe_len(p, k), boff = 0, blen = len;

    if (!p->leader)
        sta_block(len, ctx->local_size, ctx->local_rank, &boff, &blen);
    *off_p = k * p->chunk + boff;
    *len_p = blen;
}

/* Whether a rail of two nodes exchanges a part of len elements whole (the model's rule; the
 * same on both members, whose parts are equal). */
static int pipe_exchange(const sta_ctx_t *ctx, const pipe_t *p, size_t len)
{
    return p->rail.size == 2 && ctx->model != NULL && ctx->dims != NULL &&
           sta_cost_rail_exchange(ctx->model, ctx->dims, len * p->esz);
}

/* Starts chunk k's ring; it posts once chunk k-1's ring (if still busy) posted its last step. */
static void pipe_net_start(sta_ctx_t *ctx, pipe_t *p, size_t k)
{
    const int i = (int)(k & 1), prev = !i;
    size_t off, len;

    if (!p->on_net)
        return;
    pipe_net_part(ctx, p, k, &off, &len);
    if (p->ring[prev].after == &p->ring[i])
        p->ring[prev].after = NULL;   /* chunk k-2's ring, in this slot, is done */
    sta_ring_op_init(&p->ring[i], &p->rail, p->dst + off * p->esz, len, p->dtype, p->op,
                     p->tmp + (size_t)i * p->tmp_bytes, pipe_exchange(ctx, p, len),
                     p->busy[prev] ? &p->ring[prev] : NULL);
    p->busy[i] = 1;
}

/* The shm waits' hook: the older ring first, so the younger one's gate can open. */
static strata_status_t pipe_progress(sta_ctx_t *ctx, void *arg)
{
    pipe_t *p = arg;
    int progressed;

    for (int j = 0; j < 2; j++) {
        int i = (int)((p->oldest + (size_t)j) & 1);
        sta_ring_op_t *op = &p->ring[i];
        if (!p->busy[i] || sta_ring_op_done(op))
            continue;
        strata_status_t status = sta_ring_op_progress(ctx, op, &progressed);
        if (status != STRATA_OK)
            return status;
    }
    return ctx->failed;
}

/* Waits for chunk k's ring, progressing chunk k+1's too. */
static strata_status_t pipe_net_wait(sta_ctx_t *ctx, pipe_t *p, size_t k)
{
    const int i = (int)(k & 1);

    if (!p->busy[i])
        return STRATA_OK;
    sta_ring_op_t *ops[2] = {&p->ring[i], p->busy[!i] ? &p->ring[!i] : NULL};
    p->busy[i] = 0;
    p->oldest = k + 1;
    return sta_ring_ops_wait(ctx, ops, 2);
}

/* Elements per chunk: STRATA_HIER_CHUNK, else the model's optimum, else all of it. */
static size_t pipe_chunk(const sta_ctx_t *ctx, size_t count, size_t esz, sta_algo_t algo)
{
    size_t bytes = count * esz, c = bytes;

    if (ctx->hier_chunk > 0)
        c = ctx->hier_chunk;
    else if (ctx->model != NULL && ctx->dims != NULL)
        c = sta_cost_hier_chunk_bytes(ctx->model, ctx->dims, algo, bytes);
    c /= esz;
    return c > 0 ? c : 1;
}

static strata_status_t pipe_run(sta_ctx_t *ctx, pipe_t *p)
{
    const size_t K = (p->count + p->chunk - 1) / p->chunk;
    strata_status_t status;

    if ((status = pipe_in(ctx, p, 0)) != STRATA_OK)
        return status;
    pipe_net_start(ctx, p, 0);
    for (size_t k = 0; k < K; k++) {
        if (k + 1 < K) {
            if ((status = pipe_in(ctx, p, k + 1)) != STRATA_OK)
                return status;
            pipe_net_start(ctx, p, k + 1);
        }
        if ((status = pipe_net_wait(ctx, p, k)) != STRATA_OK)
            return status;
        if ((status = pipe_out(ctx, p, k)) != STRATA_OK)
            return status;
    }
    return STRATA_OK;
}

static strata_status_t pipe_allreduce(sta_ctx_t *ctx, const void *src, void *dst, size_t count,
                                      strata_dtype_t dtype, strata_op_t op, int leader)
{
    int ranks[ctx->nnodes];
    pipe_t p = {
        .src = src, .dst = dst, .count = count, .esz = strata_dtype_size(dtype),
        .dtype = dtype, .op = op, .leader = leader,
        .on_net = !leader || ctx->local_rank == 0,
    };
    strata_status_t status;
    void *tmp;

    p.chunk = pipe_chunk(ctx, count, p.esz, leader ? STA_ALGO_LEADER : STA_ALGO_HIERARCHICAL);
    if (count == 0)
        return STRATA_OK;
    sta_rail_group(ctx, leader ? 0 : ctx->local_rank, ranks, &p.rail);
    /* tmp for the largest part any chunk's ring reduces: the first chunk's (whole where two
     * nodes may exchange: a later, shorter chunk may where the first does not) */
    size_t off, len;
    pipe_net_part(ctx, &p, 0, &off, &len);
    p.tmp_bytes = sta_ring_op_tmp_bytes(ctx->nnodes, len, dtype, p.rail.size == 2);
    if ((status = sta_ctx_scratch(ctx, 2 * p.tmp_bytes + 1, &tmp)) != STRATA_OK)
        return status;
    p.tmp = tmp;
    ctx->progress = pipe_progress;
    ctx->progress_arg = &p;
    status = pipe_run(ctx, &p);
    ctx->progress = NULL;
    ctx->progress_arg = NULL;
    return status;
}

strata_status_t sta_hier_allreduce_pipelined(sta_ctx_t *ctx, const void *src, void *dst,
                                             size_t count, strata_dtype_t dtype,
                                             strata_op_t op)
{
    return pipe_allreduce(ctx, src, dst, count, dtype, op, 0);
}

strata_status_t sta_leader_allreduce_pipelined(sta_ctx_t *ctx, const void *src, void *dst,
                                               size_t count, strata_dtype_t dtype,
                                               strata_op_t op)
{
    return pipe_allreduce(ctx, src, dst, count, dtype, op, 1);
}
