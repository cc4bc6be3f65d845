/*
 * The send side of the UCX transport: isend and the test of a send request.
 *
 * One ucp_tag_send_nbx per isend, tracked in a preallocated slot. No callback
 * and no user request memory: UCP takes its request from the worker's own
 * pool (a freelist, no malloc once warm) and returns NULL when the send
 * completed at once; test() asks ucp_request_check_status. So isend and test
 * cost no allocation, lock or system call of ours.
 */
#include "transport/base/hostmr.h"
#include "transport/ucx/ucx_internal.h"
#include "util/log.h"

strata_status_t stt_ucx_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                              stt_req_t **req_p)
{
    stt_ucx_send_t *sc = (stt_ucx_send_t *)stt_conn_of(comm, &stt_ucx_ops, true, "isend");

    if (sc == NULL)
        return STRATA_ERR_INVALID;
    stt_ucx_conn_t *conn = &sc->conn;
    if (STU_UNLIKELY(conn->head.failed != STRATA_OK))
        return conn->head.failed;
    if (STU_UNLIKELY(stt_hostmr_isend_check(comm, conn->head.peer, data, size,
                                            STT_UCX_MAX_MSG_BYTES, mh, req_p) != STRATA_OK))
        return STRATA_ERR_INVALID;
    if (conn->nlanes > 1)
        return stt_ucx_vnic_isend(sc, data, size, tag, req_p);
    if (sc->slots.nfree == 0) {
        *req_p = NULL;
        return STRATA_OK;
    }
    ucp_request_param_t param = {.op_attr_mask = 0};
    void *ucp = stt_ucx_lib.tag_send_nbx(conn->ep, data, size, stt_ucx_tag(conn->conn_id, tag), &param);
    if (STU_UNLIKELY(UCS_PTR_IS_ERR(ucp))) {
        ucs_status_t us = UCS_PTR_STATUS(ucp);
        stt_conn_fail(&conn->head, stt_ucx_status(us), "ucp_tag_send_nbx of %zu bytes (tag %d):"
                      " %s", size, tag, stt_ucx_lib.status_string(us));
        return conn->head.failed;
    }
    stt_ucx_sreq_t *req = (stt_ucx_sreq_t *)stt_slots_take(&sc->slots, 1);
    req->ucp = ucp;
    req->ucs = UCS_OK;
    req->size = size;
    *req_p = &req->slot.base;
    return STRATA_OK;
}

strata_status_t stt_ucx_send_test(stt_ucx_send_t *sc, stt_req_t *base, int *done, size_t *sizes)
{
    stt_ucx_sreq_t *req = (stt_ucx_sreq_t *)stt_slots_find(&sc->slots, base);
    strata_status_t status = STRATA_OK;

    if (req == NULL)
        return stt_slots_stale(&stt_ucx_ops, base);
    if (sc->conn.nlanes > 1)
        return stt_ucx_vnic_send_test(sc, req, done, sizes);
    if (req->ucp != NULL) {
        stt_ucx_conn_progress(&sc->conn);
        ucs_status_t us = stt_ucx_lib.request_check_status(req->ucp);
        if (us != UCS_INPROGRESS) {
            stt_ucx_lib.request_free(req->ucp);
            req->ucp = NULL;
            req->ucs = us;
        }
    }
    if (req->ucp != NULL) {
        if (stt_ucx_conn_pending(&sc->conn) == STRATA_OK) {
            *done = 0;
            return STRATA_OK;
        }
        /* Abandoned: UCX releases it when the endpoint's close completes it. */
        stt_ucx_lib.request_free(req->ucp);
        req->ucp = NULL;
        status = sc->conn.head.failed;
    } else if (req->ucs != UCS_OK) {
        stt_conn_fail(&sc->conn.head, stt_ucx_status(req->ucs), "a send of %zu bytes: %s",
                      req->size, stt_ucx_lib.status_string(req->ucs));
        status = sc->conn.head.failed;
    }
    stt_slots_give(&sc->slots, &req->slot);
    if (status != STRATA_OK)
        return status;
    *done = 1;
    if (sizes != NULL)
        sizes[0] = req->size;
    return STRATA_OK;
}
