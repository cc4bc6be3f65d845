/*
 * The ring allreduce of ring.c as a state machine that never blocks, so a
 * caller can keep one ring on the network while it does other work (the
 * shared-memory phases of the pipelined two-tier allreduce, hier_pipe.c).
 *
 * Terms and schedule as in ring.c: P members, steps 0..P-2 reduce-scatter
 * (send B_(p-s-1), receive B_(p-s-2) into tmp, reduce it into buf), steps
 * P-1..2P-3 allgather (send B_(p-s), receive B_(p-s-1) into buf). A step's
 * receive and send are posted together; the next step is posted once both
 * completed (and the received block was reduced). One ring per pair of comms
 * may be in flight at a time: messages match in posting order.
 * Cost: as ring.c's allreduce, 2(P-1)·(α + (n/P)/β) + (P-1)/P·n/γ.
 *
 * The exchange (P = 2 only, chosen by the caller from the model): one step, send all of
 * buf, receive the peer's into tmp, reduce it into buf: α + n/β + n/γ, the same bytes on
 * the wire as the ring's two steps with one α fewer. Both members reduce member 0's values
 * op member 1's, in that order, so they hold the same bits (member 1 through tmp, one copy
 * of n more).
 */
#include "algos/ring_async.h"

#include <string.h>

#include "algos/reduce.h"

void sta_ring_op_init(sta_ring_op_t *op, const sta_group_t *g, void *buf, size_t count,
                      strata_dtype_t dtype, strata_op_t redop, void *tmp, int exchange,
                      const sta_ring_op_t *after)
{
    exchange = exchange && g->size == 2;
    *op = (sta_ring_op_t){
        .g = g, .buf = buf, .count = count, .dtype = dtype, .redop = redop, .tmp = tmp,
        .after = after, .exchange = exchange,
        .esz = strata_dtype_size(dtype),
        .nsteps = exchange ? 1 : g->size > 1 ? 2 * (g->size - 1) : 0,
    };
}

size_t sta_ring_op_tmp_bytes(int P, size_t count, strata_dtype_t dtype, int exchange)
{
    size_t off, len;
    if (exchange && P == 2)
        return count * strata_dtype_size(dtype);
    sta_block(count, P, 0, &off, &len);   /* block 0 is the largest */
    return len * strata_dtype_size(dtype);
}

/* The blocks of the current step: rs = 1 where the received block is reduced (the
 * reduce-scatter half, or the exchange's one step, which sends and receives all of buf). */
static void ring_op_blocks(const sta_ring_op_t *op, int *rs, size_t *soff, size_t *slen,
                           size_t *roff, size_t *rlen)
{
    const int P = op->g->size, p = op->g->pos;
    int sb, rb;

    if (op->exchange) {
        *rs = 1;
        *soff = *roff = 0;
        *slen = *rlen = op->count;
        return;
    }
    *rs = op->step < P - 1;
    if (*rs)
        sta_ring_rs_step(P, p, op->step, &sb, &rb);
    else
        sta_ring_ag_step(P, p, op->step - (P - 1), &sb, &rb);
    sta_block(op->count, P, sb, soff, slen);
    sta_block(op->count, P, rb, roff, rlen);
}

/* Posts what the current step has not posted yet; a full transport leaves it for later. */
static strata_status_t ring_op_post(sta_ctx_t *ctx, sta_ring_op_t *op)
{
    const int P = op->g->size, p = op->g->pos;
    const int next = op->g->ranks[sta_mod(p + 1, P)], prev = op->g->ranks[sta_mod(p - 1, P)];
    size_t soff, slen, roff, rlen;
    int rs, tag = 0;
    strata_status_t status;

    ring_op_blocks(op, &rs, &soff, &slen, &roff, &rlen);
    if (!op->recv_posted) {
        stt_comm_t *c = ctx->peers[prev].recv;
        if (c == NULL)
            return sta_ctx_fail(ctx, STRATA_ERR_INTERNAL, "no connection from rank %d", prev);
        void *rbuf = rs ? op->tmp : op->buf + roff * op->esz;
        size_t rbytes = rlen * op->esz;
        status = stt_irecv(c, 1, &rbuf, &rbytes, &tag, NULL, &op->rreq);
        if (status != STRATA_OK)
            return sta_ctx_fail(ctx, status, "posting a receive of %zu bytes from rank %d",
                                rbytes, prev);
        op->recv_posted = op->rreq != NULL;
    }
    if (!op->send_posted) {
        stt_comm_t *c = ctx->peers[next].send;
        if (c == NULL)
            return sta_ctx_fail(ctx, STRATA_ERR_INTERNAL, "no connection to rank %d", next);
        status = stt_isend(c, op->buf + soff * op->esz, slen * op->esz, 0, NULL, &op->sreq);
        if (status != STRATA_OK)
            return sta_ctx_fail(ctx, status, "posting a send of %zu bytes to rank %d",
                                slen * op->esz, next);
        op->send_posted = op->sreq != NULL;
    }
    return STRATA_OK;
}

/* Tests the current step's requests; *done_p = 1 once both completed. */
static strata_status_t ring_op_test(sta_ctx_t *ctx, sta_ring_op_t *op, int *done_p)
{
    const int P = op->g->size, p = op->g->pos;
    size_t soff, slen, roff, rlen, got = 0;
    int rs, done;
    strata_status_t status;

    ring_op_blocks(op, &rs, &soff, &slen, &roff, &rlen);
    if (op->sreq != NULL) {
        done = 0;
        if ((status = stt_test(op->sreq, &done, &got)) != STRATA_OK)
            return sta_ctx_fail(ctx, status, "sending %zu bytes to rank %d failed",
                                slen * op->esz, op->g->ranks[sta_mod(p + 1, P)]);
        if (done)
            op->sreq = NULL;
    }
    if (op->rreq != NULL) {
        done = 0;
        got = 0;
        if ((status = stt_test(op->rreq, &done, &got)) != STRATA_OK)
            return sta_ctx_fail(ctx, status, "receiving %zu bytes from rank %d failed",
                                rlen * op->esz, op->g->ranks[sta_mod(p - 1, P)]);
        if (done) {
            op->rreq = NULL;
            if (got != rlen * op->esz)
                return sta_ctx_fail(ctx, STRATA_ERR_MISMATCH,
                                    "rank %d sent %zu bytes where %zu were expected: do the "
                                    "ranks pass the same count?",
                                    op->g->ranks[sta_mod(p - 1, P)], got, rlen * op->esz);
        }
    }
    *done_p = op->send_posted && op->recv_posted && op->sreq == NULL && op->rreq == NULL;
    if (*done_p && op->exchange && p == 1) {
        /* member 0's values first on both members (max and min of a NaN depend on the
         * order): tmp = peer op mine, then into buf */
        sta_reduce(op->tmp, op->tmp, op->buf, rlen, op->dtype, op->redop);
        memcpy(op->buf, op->tmp, rlen * op->esz);
    } else if (*done_p && rs) {
        char *dst = op->buf + roff * op->esz;
        sta_reduce(dst, dst, op->tmp, rlen, op->dtype, op->redop);
    }
    return STRATA_OK;
}

/* Every step of op is posted (the last one may still be in flight). */
static int ring_op_all_posted(const sta_ring_op_t *op)
{
    return op->step >= op->nsteps ||
           (op->step == op->nsteps - 1 && op->send_posted && op->recv_posted);
}

strata_status_t sta_ring_op_progress(sta_ctx_t *ctx, sta_ring_op_t *op, int *progressed_p)
{
    strata_status_t status;
    int done = 0;

    *progressed_p = 0;
    if (ctx->failed != STRATA_OK)
        return ctx->failed;
    if (op->after != NULL && !ring_op_all_posted(op->after))
        return STRATA_OK;
    op->after = NULL;   /* the order is settled: later steps follow on their own */
    while (op->step < op->nsteps) {
        if ((status = ring_op_post(ctx, op)) != STRATA_OK)
            return status;
        if ((status = ring_op_test(ctx, op, &done)) != STRATA_OK)
            return status;
        if (!done)
            break;
        *progressed_p = 1;
        op->step++;
        op->send_posted = op->recv_posted = 0;
    }
    return STRATA_OK;
}

int sta_ring_op_done(const sta_ring_op_t *op)
{
    return op->step >= op->nsteps;
}

int sta_ring_op_poll_fds(const sta_ring_op_t *op, struct pollfd *fds, int n, int max)
{
    if (op->sreq != NULL)
        n = sta_wait_fds_add(op->sreq->comm, fds, n, max);
    if (op->rreq != NULL)
        n = sta_wait_fds_add(op->rreq->comm, fds, n, max);
    return n;
}

strata_status_t sta_ring_ops_wait(sta_ctx_t *ctx, sta_ring_op_t *const *ops, int nops)
{
    sta_backoff_t b;
    strata_status_t status;

    sta_backoff_start(&b, ctx);
    for (;;) {
        int any = 0, progressed;
        for (int i = 0; i < nops; i++) {
            if (ops[i] == NULL || sta_ring_op_done(ops[i]))
                continue;
            if ((status = sta_ring_op_progress(ctx, ops[i], &progressed)) != STRATA_OK)
                return status;
            any |= progressed;
        }
        if (sta_ring_op_done(ops[0]))
            return STRATA_OK;
        if (any) {
            sta_backoff_start(&b, ctx);   /* a step completed: the next one starts afresh */
            continue;
        }
        struct pollfd fds[STA_RING_OP_FDS_MAX];
        int nfds = 0;
        for (int i = 0; i < nops && nfds >= 0 && !sta_backoff_spinning(&b); i++)
            if (ops[i] != NULL)
                nfds = sta_ring_op_poll_fds(ops[i], fds, nfds, STA_RING_OP_FDS_MAX);
        if (sta_backoff_step_fds(&b, fds, STU_MAX(nfds, 0)) != STRATA_OK)
            return sta_ctx_fail(ctx, STRATA_ERR_TIMEOUT,
                                "no progress in step %d of %d of a ring over %d ranks within "
                                "the timeout", ops[0]->step, ops[0]->nsteps, ops[0]->g->size);
    }
}
