/*
 * The receive side of the UCX transport: irecv, iflush and the test of a
 * receive request. A grouped receive of n buffers posts n
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

/* Cancels and frees what is still posted, and gives the slot back. */
static void recv_abandon(stt_ucx_recv_t *rc, stt_ucx_rreq_t *req)
{
    for (int k = 0; k < req->slot.n; k++) {
        if (req->ucp[k] == NULL)
            continue;
        stt_ucx_lib.request_cancel(rc->conn.worker, req->ucp[k]);
        stt_ucx_lib.request_free(req->ucp[k]);
        req->ucp[k] = NULL;
    }
    req->pending = 0;                    /* a free slot owes nothing (a flush may take it) */
    stt_slots_give(&rc->slots, &req->slot);
}

/* A buffer finished with us: record how (TRUNCATED is the receive's, others the comm's). */
static void recv_buffer_status(stt_ucx_recv_t *rc, stt_ucx_rreq_t *req, int k, ucs_status_t us)
{
    if (us == UCS_OK || req->slot.status != STRATA_OK)
        return;
    if (us == UCS_ERR_MESSAGE_TRUNCATED) {
        STU_INFO(STU_LOG_NET, "ucx: a message from %s was larger than its receive buffer %d"
                 " (tag %d)", rc->conn.head.peer, k, stt_ucx_tag_user(req->info[k].sender_tag));
        req->slot.status = STRATA_ERR_TRUNCATED;
        return;
    }
    stt_conn_fail(&rc->conn.head, stt_ucx_status(us), "receive buffer %d: %s", k,
                  stt_ucx_lib.status_string(us));
    req->slot.status = rc->conn.head.failed;
}

strata_status_t stt_ucx_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                              const int *tags, void **mhs, stt_req_t **req_p)
{
    stt_ucx_recv_t *rc = (stt_ucx_recv_t *)stt_conn_of(comm, &stt_ucx_ops, false, "irecv");

    if (rc == NULL || stt_hostmr_irecv_check(comm, rc->conn.head.peer, n, data, sizes, tags, mhs,
                                             req_p) != STRATA_OK)
        return STRATA_ERR_INVALID;
    if (STU_UNLIKELY(rc->conn.head.failed != STRATA_OK))
        return rc->conn.head.failed;
    if (rc->conn.nlanes > 1)
        return stt_ucx_vnic_irecv(rc, n, data, sizes, tags, req_p);
    stt_ucx_rreq_t *req = (stt_ucx_rreq_t *)stt_slots_take(&rc->slots, n);
    if (req == NULL) {
        *req_p = NULL;
        return STRATA_OK;
    }
    req->pending = 0;
    for (int i = 0; i < n; i++) {
        /* NO_IMM_CMPL: UCX 1.13.1 completes a receive that finds its message
         * already there without filling recv_info (measured: the length stays
         * as it was), so always take a request and read the length from
         * ucp_tag_recv_request_test. One pooled request per buffer. */
        ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL};
        req->info[i].length = 0;
        void *ucp = stt_ucx_lib.tag_recv_nbx(rc->conn.worker, data[i], sizes[i],
                                     stt_ucx_tag(rc->conn.conn_id, tags[i]), UINT64_MAX, &param);
        req->ucp[i] = NULL;
        if (UCS_PTR_IS_ERR(ucp)) {
            recv_buffer_status(rc, req, i, UCS_PTR_STATUS(ucp));
            if (req->slot.status != STRATA_ERR_TRUNCATED) {
                req->slot.n = (uint8_t)i;    /* what is posted so far */
                recv_abandon(rc, req);
                return rc->conn.head.failed;
            }
        } else if (ucp != NULL) {
            req->ucp[i] = ucp;
            req->pending++;
        }
    }
    *req_p = &req->slot.base;
    return STRATA_OK;
}

strata_status_t stt_ucx_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                               void **mhs, stt_req_t **req_p)
{
    stt_ucx_recv_t *rc = (stt_ucx_recv_t *)stt_conn_of(comm, &stt_ucx_ops, false, "iflush");

    if (rc == NULL)
        return STRATA_ERR_INVALID;
    /* Host memory is coherent once UCP completed the receive: nothing to wait for. */
    return stt_hostmr_iflush(comm, rc->conn.head.peer, rc->conn.head.failed, &rc->slots, n,
                             req_p);
}

strata_status_t stt_ucx_recv_test(stt_ucx_recv_t *rc, stt_req_t *base, int *done, size_t *sizes)
{
    stt_ucx_rreq_t *req = (stt_ucx_rreq_t *)stt_slots_find(&rc->slots, base);

    if (req == NULL)
        return stt_slots_stale(&stt_ucx_ops, base);
    if (rc->conn.nlanes > 1)
        return stt_ucx_vnic_recv_test(rc, req, done, sizes);
    if (req->pending > 0) {
        stt_ucx_conn_progress(&rc->conn);
        for (int k = 0; k < req->slot.n; k++) {
            if (req->ucp[k] == NULL)
                continue;
            ucs_status_t us = stt_ucx_lib.tag_recv_request_test(req->ucp[k], &req->info[k]);
            if (us == UCS_INPROGRESS)
                continue;
            stt_ucx_lib.request_free(req->ucp[k]);
            req->ucp[k] = NULL;
            req->pending--;
            recv_buffer_status(rc, req, k, us);
        }
    }
    if (req->pending > 0) {
        if (stt_ucx_conn_pending(&rc->conn) == STRATA_OK) {
            *done = 0;
            return STRATA_OK;
        }
        strata_status_t failed = rc->conn.head.failed;
        recv_abandon(rc, req);
        return failed;
    }
    strata_status_t status = req->slot.status;
    stt_slots_give(&rc->slots, &req->slot);
    if (status != STRATA_OK)
        return status;
    *done = 1;
    if (sizes != NULL)
        for (int k = 0; k < req->slot.n; k++)
            sizes[k] = req->info[k].length;
    return STRATA_OK;
}
