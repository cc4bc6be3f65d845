/* Point-to-point exchange over the transport, with bounded waits. */
#include <poll.h>

#include "algos/ctx.h"
#include "util/log.h"

#define STA_POLL_FDS_MAX 16   /* two comms of up to 8 sockets each */

/* Posts while the transport says "no slot now", within the backoff's deadline. */
static strata_status_t post_send(sta_ctx_t *ctx, stt_comm_t *c, const void *buf, size_t bytes,
                                 sta_backoff_t *b, stt_req_t **req_p)
{
    for (;;) {
        strata_status_t status = stt_isend(c, (void *)buf, bytes, 0, NULL, req_p);
        if (status != STRATA_OK || *req_p != NULL)
            return status;
        if (sta_backoff_step(b) != STRATA_OK)
            return STRATA_ERR_TIMEOUT;
    }
}

static strata_status_t post_recv(sta_ctx_t *ctx, stt_comm_t *c, void *buf, size_t bytes,
                                 sta_backoff_t *b, stt_req_t **req_p)
{
    int tag = 0;
    for (;;) {
        strata_status_t status = stt_irecv(c, 1, &buf, &bytes, &tag, NULL, req_p);
        if (status != STRATA_OK || *req_p != NULL)
            return status;
        if (sta_backoff_step(b) != STRATA_OK)
            return STRATA_ERR_TIMEOUT;
    }
}

strata_status_t sta_sendrecv(sta_ctx_t *ctx, int to, const void *sbuf, size_t sbytes, int from,
                             void *rbuf, size_t rbytes)
{
    stt_req_t *sreq = NULL, *rreq = NULL;
    sta_backoff_t b;
    strata_status_t status;

    if (ctx->failed != STRATA_OK)
        return ctx->failed;
    sta_backoff_start(&b, ctx);
    if (from >= 0) {
        stt_comm_t *c = ctx->peers[from].recv;
        if (c == NULL)
            return sta_ctx_fail(ctx, STRATA_ERR_INTERNAL, "no connection from rank %d", from);
        status = post_recv(ctx, c, rbuf, rbytes, &b, &rreq);
        if (status != STRATA_OK)
            return sta_ctx_fail(ctx, status, "posting a receive of %zu bytes from rank %d",
                                rbytes, from);
    }
    if (to >= 0) {
        stt_comm_t *c = ctx->peers[to].send;
        if (c == NULL)
            return sta_ctx_fail(ctx, STRATA_ERR_INTERNAL, "no connection to rank %d", to);
        status = post_send(ctx, c, sbuf, sbytes, &b, &sreq);
        if (status != STRATA_OK)
            return sta_ctx_fail(ctx, status, "posting a send of %zu bytes to rank %d", sbytes,
                                to);
    }
    while (sreq != NULL || rreq != NULL) {
        int progressed = 0;
        if (sreq != NULL) {
            int done = 0;
            size_t got;
            status = stt_test(sreq, &done, &got);
            if (status != STRATA_OK)
                return sta_ctx_fail(ctx, status, "sending %zu bytes to rank %d failed", sbytes,
                                    to);
            if (done) {
                sreq = NULL;
                progressed = 1;
            }
        }
        if (rreq != NULL) {
            int done = 0;
            size_t got = 0;
            status = stt_test(rreq, &done, &got);
            if (status != STRATA_OK)
                return sta_ctx_fail(ctx, status, "receiving %zu bytes from rank %d failed",
                                    rbytes, from);
            if (done) {
                rreq = NULL;
                progressed = 1;
                if (got != rbytes)
                    return sta_ctx_fail(ctx, STRATA_ERR_MISMATCH,
                                        "rank %d sent %zu bytes where %zu were expected: do the "
                                        "ranks pass the same count?", from, got, rbytes);
            }
        }
        if (progressed)
            continue;
        /*
         * Descriptors to sleep on once the backoff stops spinning, asked afresh each
         * time (a send comm wants POLLOUT only while it holds unsent data); not asked
         * while spinning, where they would go unused.
         */
        struct pollfd fds[STA_POLL_FDS_MAX];
        int nfds = 0;
        if (!sta_backoff_spinning(&b)) {
            if (sreq != NULL)
                nfds = sta_wait_fds_add(sreq->comm, fds, nfds, STA_POLL_FDS_MAX);
            if (rreq != NULL)
                nfds = sta_wait_fds_add(rreq->comm, fds, nfds, STA_POLL_FDS_MAX);
        }
        if (sta_backoff_step_fds(&b, fds, STU_MAX(nfds, 0)) != STRATA_OK)
            return sta_ctx_fail(ctx, STRATA_ERR_TIMEOUT,
                                "no progress exchanging with ranks %d/%d within the timeout", to,
                                from);
    }
    return STRATA_OK;
}
