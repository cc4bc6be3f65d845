/*
 * The public collectives: argument checks, the algorithm from the selection
 * table (or STRATA_ALGO), the call into algos/, and the final division of
 * STRATA_AVG. Blocking calls first wait for the comm's queued non-blocking
 * ones (worker.c), so collectives run in call order.
 */
#include <limits.h>
#include <string.h>

#include "algos/reduce.h"
#include "coll/comm.h"
#include "coll/worker.h"
#include "util/log.h"

/* op < 0 means "this collective takes no op"; a user's op is checked as unsigned. */
#define NO_OP (-1)
#define NO_ROOT INT_MIN   /* this collective has no root (any int a user passes is checked) */
#define USER_OP(op) ((long)(unsigned)(op))   /* a negative user op stays invalid */

static strata_status_t coll_check(strata_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                  size_t count, strata_dtype_t dtype, long op, int root,
                                  const char *what)
{
    if (comm == NULL)
        return STRATA_ERR_INVALID;
    if (comm->ctx.failed != STRATA_OK)
        return comm->ctx.failed;
    if ((unsigned)dtype >= STRATA_DTYPE_COUNT ||
        (op != NO_OP && (op < 0 || op >= STRATA_OP_COUNT)) ||
        (root != NO_ROOT && (root < 0 || root >= comm->ctx.nranks))) {
        STU_WARN("%s: invalid type %d, op %ld or root %d (of %d ranks)", what, (int)dtype, op,
                 root, comm->ctx.nranks);
        return STRATA_ERR_INVALID;
    }
    if (count > SIZE_MAX / 8 / (size_t)comm->ctx.nranks) {
        STU_WARN("%s: count %zu is too large", what, count);
        return STRATA_ERR_INVALID;
    }
    if (count > 0 && (sendbuf == NULL || recvbuf == NULL)) {
        STU_WARN("%s: NULL buffer with count %zu", what, count);
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

/*
 * The algorithm coll runs for `bytes`: the table's. Records it for introspection, and warns
 * once per communicator and collective when STRATA_ALGO forced one that does not apply here.
 */
static sta_algo_t coll_algo(strata_comm_t *comm, sta_coll_t coll, size_t bytes)
{
    const char *unfit = comm->select.fallback[coll];
    sta_algo_t algo = sta_select_lookup(&comm->select, coll, bytes);

    if (unfit != NULL && !__atomic_exchange_n(&comm->fallback_warned[coll], 1, __ATOMIC_RELAXED))
        STU_WARN("rank %d: STRATA_ALGO=%s does not apply to %s on this communicator (%s); the "
                 "model's choice runs instead (%s for %zu bytes)", comm->ctx.rank,
                 sta_algo_name(comm->select.forced), sta_coll_name(coll), unfit,
                 sta_algo_name(algo), bytes);
    __atomic_store_n(&comm->last_algo[coll], (int)algo, __ATOMIC_RELAXED);
    __atomic_add_fetch(&comm->runs[coll][algo], 1, __ATOMIC_RELAXED);
    return algo;
}

static void coll_copy(void *dst, const void *src, size_t bytes)
{
    if (dst != src && bytes > 0)
        memmove(dst, src, bytes);
}

strata_status_t stc_run(strata_comm_t *comm, const stc_op_t *o)
{
    sta_ctx_t *ctx = &comm->ctx;
    const size_t esz = strata_dtype_size(o->dtype);
    const size_t bytes = o->count * esz;
    const int P = ctx->nranks;
    strata_status_t status = STRATA_OK;
    sta_algo_t algo;

    if (ctx->failed != STRATA_OK)
        return ctx->failed;   /* a queued collective after a failure must not start */

    switch (o->coll) {
    case STA_COLL_ALLREDUCE:
        algo = coll_algo(comm, o->coll, bytes);
        if (algo == STA_ALGO_HIERARCHICAL) {
            status = sta_hier_allreduce(ctx, o->sendbuf, o->recvbuf, o->count, o->dtype, o->op);
        } else if (algo == STA_ALGO_LEADER) {
            status = sta_leader_allreduce(ctx, o->sendbuf, o->recvbuf, o->count, o->dtype, o->op);
        } else {
            coll_copy(o->recvbuf, o->sendbuf, bytes);
            status = algo == STA_ALGO_RECURSIVE
                         ? sta_rd_allreduce(ctx, &comm->flat, o->recvbuf, o->count, o->dtype, o->op)
                         : sta_ring_allreduce(ctx, &comm->flat, o->recvbuf, o->count, o->dtype,
                                              o->op);
        }
        if (status == STRATA_OK && o->op == STRATA_AVG)
            sta_reduce_avg_finish(o->recvbuf, o->count, o->dtype, P);
        break;
    case STA_COLL_REDUCE_SCATTER: {
        /* count = recvcount; both algorithms work on a private copy of the P blocks */
        void *work;
        size_t total = o->count * (size_t)P;
        algo = coll_algo(comm, o->coll, total * esz);
        if ((status = stc_work(comm, total * esz, &work)) != STRATA_OK)
            break;
        if (algo == STA_ALGO_HIERARCHICAL) {
            status = sta_hier_reduce_scatter(ctx, o->sendbuf, o->recvbuf, work, o->count,
                                             o->dtype, o->op);
        } else {
            coll_copy(work, o->sendbuf, total * esz);
            status = sta_ring_reduce_scatter(ctx, &comm->byrank, work, total, o->dtype, o->op);
            if (status == STRATA_OK)
                coll_copy(o->recvbuf, (char *)work + (size_t)ctx->rank * bytes, bytes);
        }
        if (status == STRATA_OK && o->op == STRATA_AVG)
            sta_reduce_avg_finish(o->recvbuf, o->count, o->dtype, P);
        break;
    }
    case STA_COLL_ALLGATHER: {
        size_t total = o->count * (size_t)P;
        algo = coll_algo(comm, o->coll, total * esz);
        if (algo == STA_ALGO_HIERARCHICAL) {
            void *work;
            if ((status = stc_work(comm, total * esz, &work)) == STRATA_OK)
                status = sta_hier_allgather(ctx, o->sendbuf, o->recvbuf, work, o->count,
                                            o->dtype);
            break;
        }
        coll_copy((char *)o->recvbuf + (size_t)ctx->rank * bytes, o->sendbuf, bytes);
        status = algo == STA_ALGO_RECURSIVE
                     ? sta_rd_allgather(ctx, &comm->byrank, o->recvbuf, total, o->dtype)
                     : sta_ring_allgather(ctx, &comm->byrank, o->recvbuf, total, o->dtype);
        break;
    }
    case STA_COLL_BROADCAST: {
        int rootpos = stc_flat_pos(comm, o->root);
        algo = coll_algo(comm, o->coll, bytes);
        if (ctx->rank == o->root)
            coll_copy(o->recvbuf, o->sendbuf, bytes);
        if (algo == STA_ALGO_HIERARCHICAL)
            status = sta_hier_bcast(ctx, o->root, o->recvbuf, o->count, o->dtype);
        else if (algo == STA_ALGO_RECURSIVE)
            status = sta_binomial_bcast(ctx, &comm->flat, rootpos, o->recvbuf, o->count,
                                        o->dtype);
        else
            status = sta_chain_bcast(ctx, &comm->flat, rootpos, o->recvbuf, o->count, o->dtype);
        break;
    }
    case STA_COLL_REDUCE: {
        int rootpos = stc_flat_pos(comm, o->root);
        algo = coll_algo(comm, o->coll, bytes);
        if (algo == STA_ALGO_HIERARCHICAL)
            status = sta_hier_reduce(ctx, o->root, o->sendbuf, o->recvbuf, o->count, o->dtype,
                                     o->op);
        else if (algo == STA_ALGO_RECURSIVE)
            status = sta_binomial_reduce(ctx, &comm->flat, rootpos, o->sendbuf, o->recvbuf,
                                         o->count, o->dtype, o->op);
        else
            status = sta_chain_reduce(ctx, &comm->flat, rootpos, o->sendbuf, o->recvbuf,
                                      o->count, o->dtype, o->op);
        if (status == STRATA_OK && o->op == STRATA_AVG && ctx->rank == o->root)
            sta_reduce_avg_finish(o->recvbuf, o->count, o->dtype, P);
        break;
    }
    default:
        status = STRATA_ERR_INTERNAL;
    }
    return status;
}

/* Runs a blocking collective after the comm's queued non-blocking ones. */
static strata_status_t coll_blocking(strata_comm_t *comm, const stc_op_t *o)
{
    strata_status_t status = stc_worker_drain(comm);
    if (status != STRATA_OK)
        return status;
    return stc_run(comm, o);
}

strata_status_t strata_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                 strata_dtype_t dtype, strata_op_t op, strata_comm_t *comm)
{
    strata_status_t status = coll_check(comm, sendbuf, recvbuf, count, dtype, USER_OP(op), NO_ROOT,
                                        "allreduce");
    if (status != STRATA_OK)
        return status;
    stc_op_t o = {STA_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1};
    return coll_blocking(comm, &o);
}

strata_status_t strata_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                      strata_dtype_t dtype, strata_op_t op, strata_comm_t *comm)
{
    strata_status_t status = coll_check(comm, sendbuf, recvbuf, recvcount, dtype,
                                        USER_OP(op), NO_ROOT,
                                        "reduce_scatter");
    if (status != STRATA_OK)
        return status;
    stc_op_t o = {STA_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1};
    return coll_blocking(comm, &o);
}

strata_status_t strata_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                 strata_dtype_t dtype, strata_comm_t *comm)
{
    strata_status_t status = coll_check(comm, sendbuf, recvbuf, sendcount, dtype, NO_OP, NO_ROOT,
                                        "allgather");
    if (status != STRATA_OK)
        return status;
    stc_op_t o = {STA_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, STRATA_SUM, -1};
    return coll_blocking(comm, &o);
}

/* Broadcast: sendbuf matters at the root only, so other ranks may pass NULL. */
strata_status_t strata_broadcast(const void *sendbuf, void *recvbuf, size_t count,
                                 strata_dtype_t dtype, int root, strata_comm_t *comm)
{
    const void *s = (comm != NULL && root >= 0 && comm->ctx.rank != root) ? recvbuf : sendbuf;
    strata_status_t status = coll_check(comm, s, recvbuf, count, dtype, NO_OP, root, "broadcast");
    if (status != STRATA_OK)
        return status;
    stc_op_t o = {STA_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, STRATA_SUM, root};
    return coll_blocking(comm, &o);
}

/* Reduce: recvbuf matters at the root only, so other ranks may pass NULL. */
strata_status_t strata_reduce(const void *sendbuf, void *recvbuf, size_t count,
                              strata_dtype_t dtype, strata_op_t op, int root,
                              strata_comm_t *comm)
{
    const void *r = (comm != NULL && root >= 0 && comm->ctx.rank != root) ? sendbuf : recvbuf;
    strata_status_t status = coll_check(comm, sendbuf, r, count, dtype,
                                        USER_OP(op), root, "reduce");
    if (status != STRATA_OK)
        return status;
    stc_op_t o = {STA_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root};
    return coll_blocking(comm, &o);
}

strata_status_t strata_barrier(strata_comm_t *comm)
{
    int32_t token = 0;
    if (comm == NULL)
        return STRATA_ERR_INVALID;
    strata_status_t status = stc_worker_drain(comm);
    if (status != STRATA_OK)
        return status;
    if (comm->ctx.failed != STRATA_OK)
        return comm->ctx.failed;
    return sta_rd_allreduce(&comm->ctx, &comm->flat, &token, 1, STRATA_INT32, STRATA_SUM);
}

const char *strata_comm_algo_for(const strata_comm_t *comm, const char *coll, size_t bytes)
{
    static const char *const names[STA_COLL_COUNT] = {
        [STA_COLL_ALLREDUCE] = "allreduce", [STA_COLL_REDUCE_SCATTER] = "reduce_scatter",
        [STA_COLL_ALLGATHER] = "allgather", [STA_COLL_BROADCAST] = "broadcast",
        [STA_COLL_REDUCE] = "reduce",
    };
    if (comm == NULL || coll == NULL)
        return "?";
    for (int c = 0; c < STA_COLL_COUNT; c++)
        if (strcmp(coll, names[c]) == 0)
            return sta_algo_name(sta_select_lookup(&comm->select, (sta_coll_t)c, bytes));
    return "?";
}

strata_status_t strata_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                  strata_dtype_t dtype, strata_op_t op, strata_comm_t *comm,
                                  strata_request_t **req_p)
{
    strata_status_t status = coll_check(comm, sendbuf, recvbuf, count, dtype, USER_OP(op), NO_ROOT,
                                        "iallreduce");
    if (status != STRATA_OK || req_p == NULL)
        return status != STRATA_OK ? status : STRATA_ERR_INVALID;
    stc_op_t o = {STA_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1};
    return stc_worker_submit(comm, &o, req_p);
}

strata_status_t strata_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                       strata_dtype_t dtype, strata_op_t op,
                                       strata_comm_t *comm, strata_request_t **req_p)
{
    strata_status_t status = coll_check(comm, sendbuf, recvbuf, recvcount, dtype,
                                        USER_OP(op), NO_ROOT,
                                        "ireduce_scatter");
    if (status != STRATA_OK || req_p == NULL)
        return status != STRATA_OK ? status : STRATA_ERR_INVALID;
    stc_op_t o = {STA_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1};
    return stc_worker_submit(comm, &o, req_p);
}

strata_status_t strata_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                  strata_dtype_t dtype, strata_comm_t *comm,
                                  strata_request_t **req_p)
{
    strata_status_t status = coll_check(comm, sendbuf, recvbuf, sendcount, dtype, NO_OP, NO_ROOT,
                                        "iallgather");
    if (status != STRATA_OK || req_p == NULL)
        return status != STRATA_OK ? status : STRATA_ERR_INVALID;
    stc_op_t o = {STA_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, STRATA_SUM, -1};
    return stc_worker_submit(comm, &o, req_p);
}

strata_status_t strata_ibroadcast(const void *sendbuf, void *recvbuf, size_t count,
                                  strata_dtype_t dtype, int root, strata_comm_t *comm,
                                  strata_request_t **req_p)
{
    const void *s = (comm != NULL && root >= 0 && comm->ctx.rank != root) ? recvbuf : sendbuf;
    strata_status_t status = coll_check(comm, s, recvbuf, count, dtype, NO_OP, root, "ibroadcast");
    if (status != STRATA_OK || req_p == NULL)
        return status != STRATA_OK ? status : STRATA_ERR_INVALID;
    stc_op_t o = {STA_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, STRATA_SUM, root};
    return stc_worker_submit(comm, &o, req_p);
}

strata_status_t strata_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                               strata_dtype_t dtype, strata_op_t op, int root,
                               strata_comm_t *comm, strata_request_t **req_p)
{
    const void *r = (comm != NULL && root >= 0 && comm->ctx.rank != root) ? sendbuf : recvbuf;
    strata_status_t status = coll_check(comm, sendbuf, r, count, dtype,
                                        USER_OP(op), root, "ireduce");
    if (status != STRATA_OK || req_p == NULL)
        return status != STRATA_OK ? status : STRATA_ERR_INVALID;
    stc_op_t o = {STA_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root};
    return stc_worker_submit(comm, &o, req_p);
}
