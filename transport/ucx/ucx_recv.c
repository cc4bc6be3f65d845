/*
 * Receives of the UCX transport. A grouped receive of n buffers posts n
 * ucp_tag_recv_nbx, each with its buffer's tag under a full mask; UCP matches
 * an endpoint's messages to posted receives in order, so each send lands in
 * the oldest unmatched buffer of its tag, the contract's rule. A message
 * larger than its buffer completes that buffer with
 * UCS_ERR_MESSAGE_TRUNCATED (UCP consumes the message, the connection goes
 * on) and the receive fails with STRATA_ERR_TRUNCATED once all its buffers
 * are done. Like sends, no callback: UCP's pooled requests and
 * ucp_tag_recv_request_test, which also gives the real length.
 */
#include "transport/base/hostmr.h"
#include "transport/ucx/ucx_internal.h"
#include "util/log.h"

static stt_ucx_recv_t *recv_of(stt_comm_t *comm, const char *call)
{
    stt_ucx_recv_t *rc = (stt_ucx_recv_t *)comm;

    if (rc == NULL || rc->conn.base.ops != &stt_ucx_ops || rc->conn.kind != STT_UCX_KIND_RECV) {
        STU_WARN("ucx: %s called with something not a UCX receive comm", call);
        return NULL;
    }
    return rc;
}

/* Cancels and frees what is still posted, and gives the slot back. */
static void recv_abandon(stt_ucx_recv_t *rc, stt_ucx_rreq_t *req)
{
    for (int k = 0; k < req->n; k++) {
        if (req->ucp[k] == NULL)
            continue;
        ucp_request_cancel(rc->conn.worker, req->ucp[k]);
        ucp_request_free(req->ucp[k]);
        req->ucp[k] = NULL;
    }
    req->state = STT_UCX_REQ_FREE;
    rc->free_slots[rc->nfree++] = (uint16_t)(req - rc->reqs);
}

/* A buffer finished with us: record how (TRUNCATED is the receive's, others the comm's). */
static void recv_buffer_status(stt_ucx_recv_t *rc, stt_ucx_rreq_t *req, int k, ucs_status_t us)
{
    if (us == UCS_OK || req->status != STRATA_OK)
        return;
    if (us == UCS_ERR_MESSAGE_TRUNCATED) {
        STU_INFO(STU_LOG_NET, "ucx: a message from %s was larger than its receive buffer %d"
                 " (tag %d)", rc->conn.peer, k, stt_ucx_tag_user(req->info[k].sender_tag));
        req->status = STRATA_ERR_TRUNCATED;
        return;
    }
    stt_ucx_conn_fail(&rc->conn, stt_ucx_status(us), "receive buffer %d: %s", k,
                      ucs_status_string(us));
    req->status = rc->conn.failed;
}

strata_status_t stt_ucx_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                              const int *tags, void **mhs, stt_req_t **req_p)
{
    stt_ucx_recv_t *rc = recv_of(comm, "irecv");

    if (rc == NULL ||
        stt_hostmr_irecv_check(comm, rc->conn.peer, n, data, sizes, tags, mhs, req_p) != STRATA_OK)
        return STRATA_ERR_INVALID;
    if (STU_UNLIKELY(rc->conn.failed != STRATA_OK))
        return rc->conn.failed;
    if (rc->nfree == 0) {
        *req_p = NULL;
        return STRATA_OK;
    }
    stt_ucx_rreq_t *req = &rc->reqs[rc->free_slots[--rc->nfree]];
    req->state = STT_UCX_REQ_ACTIVE;
    req->n = (uint8_t)n;
    req->pending = 0;
    req->status = STRATA_OK;
    req->base.nsizes = n;
    for (int i = 0; i < n; i++) {
        /* NO_IMM_CMPL: UCX 1.13.1 completes a receive that finds its message
         * already there without filling recv_info (measured: the length stays
         * as it was), so always take a request and read the length from
         * ucp_tag_recv_request_test. One pooled request per buffer. */
        ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL};
        req->info[i].length = 0;
        void *ucp = ucp_tag_recv_nbx(rc->conn.worker, data[i], sizes[i],
                                     stt_ucx_tag(rc->conn.conn_id, tags[i]), UINT64_MAX, &param);
        req->ucp[i] = NULL;
        if (UCS_PTR_IS_ERR(ucp)) {
            recv_buffer_status(rc, req, i, UCS_PTR_STATUS(ucp));
            if (req->status != STRATA_ERR_TRUNCATED) {
                req->n = (uint8_t)i;         /* what is posted so far */
                recv_abandon(rc, req);
                return rc->conn.failed;
            }
        } else if (ucp != NULL) {
            req->ucp[i] = ucp;
            req->pending++;
        }
    }
    *req_p = &req->base;
    return STRATA_OK;
}

strata_status_t stt_ucx_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                               void **mhs, stt_req_t **req_p)
{
    stt_ucx_recv_t *rc = recv_of(comm, "iflush");

    if (rc == NULL || stt_hostmr_iflush_check(comm, rc->conn.peer, n, req_p) != STRATA_OK)
        return STRATA_ERR_INVALID;
    if (rc->conn.failed != STRATA_OK)
        return rc->conn.failed;
    if (rc->nfree == 0) {
        *req_p = NULL;
        return STRATA_OK;
    }
    /* Host memory is coherent once UCP completed the receive: nothing to wait for. */
    stt_ucx_rreq_t *req = &rc->reqs[rc->free_slots[--rc->nfree]];
    req->state = STT_UCX_REQ_DONE;
    req->n = 0;
    req->pending = 0;
    req->status = STRATA_OK;
    req->base.nsizes = 0;
    *req_p = &req->base;
    return STRATA_OK;
}

strata_status_t stt_ucx_recv_test(stt_ucx_recv_t *rc, stt_req_t *base, int *done, size_t *sizes)
{
    ptrdiff_t slot = (stt_ucx_rreq_t *)base - rc->reqs;

    if (slot < 0 || slot >= STT_UCX_RECV_SLOTS || &rc->reqs[slot].base != base ||
        rc->reqs[slot].state == STT_UCX_REQ_FREE) {
        STU_WARN("ucx: test on a receive request %p that is not pending on its comm"
                 " (released already?)", (void *)base);
        return STRATA_ERR_INVALID;
    }
    stt_ucx_rreq_t *req = &rc->reqs[slot];
    if (req->pending > 0) {
        stt_ucx_conn_progress(&rc->conn);
        for (int k = 0; k < req->n; k++) {
            if (req->ucp[k] == NULL)
                continue;
            ucs_status_t us = ucp_tag_recv_request_test(req->ucp[k], &req->info[k]);
            if (us == UCS_INPROGRESS)
                continue;
            ucp_request_free(req->ucp[k]);
            req->ucp[k] = NULL;
            req->pending--;
            recv_buffer_status(rc, req, k, us);
        }
    }
    if (req->pending > 0) {
        if (rc->conn.failed == STRATA_OK) {
            *done = 0;
            return STRATA_OK;
        }
        strata_status_t failed = rc->conn.failed;
        recv_abandon(rc, req);
        return failed;
    }
    strata_status_t status = req->status;
    int n = req->n;
    req->state = STT_UCX_REQ_FREE;
    rc->free_slots[rc->nfree++] = (uint16_t)slot;
    if (status != STRATA_OK)
        return status;
    *done = 1;
    if (sizes != NULL)
        for (int k = 0; k < n; k++)
            sizes[k] = req->info[k].length;
    return STRATA_OK;
}
