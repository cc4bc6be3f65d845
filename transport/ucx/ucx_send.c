/*
 * Sends of the UCX transport: one ucp_tag_send_nbx per isend, tracked in a
 * preallocated slot. No callback and no user request memory: UCP takes its
 * request from the worker's own pool (a freelist, no malloc once warm) and
 * returns NULL when the send completed at once; test() asks
 * ucp_request_check_status. So isend and test cost no allocation, lock or
 * system call of ours.
 */
#include "transport/base/hostmr.h"
#include "transport/ucx/ucx_internal.h"
#include "util/log.h"

strata_status_t stt_ucx_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                              stt_req_t **req_p)
{
    stt_ucx_send_t *sc = (stt_ucx_send_t *)comm;

    if (sc == NULL || sc->conn.base.ops != &stt_ucx_ops || sc->conn.kind != STT_UCX_KIND_SEND ||
        req_p == NULL) {
        STU_WARN("ucx: isend called with %s", req_p == NULL ? "a NULL request output"
                                                            : "something not a UCX send comm");
        return STRATA_ERR_INVALID;
    }
    stt_ucx_conn_t *conn = &sc->conn;
    if (STU_UNLIKELY(conn->failed != STRATA_OK))
        return conn->failed;
    if (STU_UNLIKELY(stt_hostmr_isend_check(comm, conn->peer, data, size,
                                            STT_UCX_MAX_MSG_BYTES, mh) != STRATA_OK))
        return STRATA_ERR_INVALID;
    if (sc->nfree == 0) {
        *req_p = NULL;
        return STRATA_OK;
    }
    ucp_request_param_t param = {.op_attr_mask = 0};
    void *ucp = ucp_tag_send_nbx(conn->ep, data, size, stt_ucx_tag(conn->conn_id, tag), &param);
    if (STU_UNLIKELY(UCS_PTR_IS_ERR(ucp))) {
        ucs_status_t us = UCS_PTR_STATUS(ucp);
        stt_ucx_conn_fail(conn, stt_ucx_status(us), "ucp_tag_send_nbx of %zu bytes (tag %d): %s",
                          size, tag, ucs_status_string(us));
        return conn->failed;
    }
    uint16_t slot = sc->free_slots[--sc->nfree];
    stt_ucx_sreq_t *req = &sc->reqs[slot];
    req->state = STT_UCX_REQ_ACTIVE;
    req->ucp = ucp;
    req->status = UCS_OK;
    req->size = size;
    req->base.nsizes = 1;
    *req_p = &req->base;
    return STRATA_OK;
}

strata_status_t stt_ucx_send_test(stt_ucx_send_t *sc, stt_req_t *base, int *done, size_t *sizes)
{
    ptrdiff_t slot = (stt_ucx_sreq_t *)base - sc->reqs;

    if (slot < 0 || slot >= STT_UCX_SEND_SLOTS || &sc->reqs[slot].base != base ||
        sc->reqs[slot].state == STT_UCX_REQ_FREE) {
        STU_WARN("ucx: test on a send request %p that is not pending on its comm (released"
                 " already?)", (void *)base);
        return STRATA_ERR_INVALID;
    }
    stt_ucx_sreq_t *req = &sc->reqs[slot];
    strata_status_t status = STRATA_OK;
    if (req->ucp != NULL) {
        stt_ucx_conn_progress(&sc->conn);
        ucs_status_t us = ucp_request_check_status(req->ucp);
        if (us != UCS_INPROGRESS) {
            ucp_request_free(req->ucp);
            req->ucp = NULL;
            req->status = us;
        }
    }
    if (req->ucp != NULL) {
        if (sc->conn.failed == STRATA_OK) {
            *done = 0;
            return STRATA_OK;
        }
        /* Abandoned: UCX releases it when the endpoint's close completes it. */
        ucp_request_free(req->ucp);
        req->ucp = NULL;
        status = sc->conn.failed;
    } else if (req->status != UCS_OK) {
        stt_ucx_conn_fail(&sc->conn, stt_ucx_status(req->status), "a send of %zu bytes: %s",
                          req->size, ucs_status_string(req->status));
        status = sc->conn.failed;
    }
    size_t size = req->size;
    req->state = STT_UCX_REQ_FREE;
    sc->free_slots[sc->nfree++] = (uint16_t)slot;
    if (status != STRATA_OK)
        return status;
    *done = 1;
    if (sizes != NULL)
        sizes[0] = size;
    return STRATA_OK;
}
