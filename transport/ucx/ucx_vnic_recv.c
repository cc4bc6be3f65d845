/*
 * The receive side of a virtual device's comm (docs/ucx-protocol.md,
 * "Virtual devices"): the n-th buffer of a tag waits on lane n % lanes for
 * a whole message or a striped message's head (the STRIPED bit masked out of
 * the match). A whole message is done when it lands; a head names the parts,
 * and each part is then received on its lane straight into the buffer at
 * its offset, so nothing is reassembled afterwards. The head receive is an
 * iov whose first STT_UCX_VHDR_BYTES are the request's scratch: a head never
 * touches the caller's buffer (which another receive in flight may share,
 * as a streaming benchmark's do), and a whole message's first bytes are
 * copied from there.
 * Parts a buffer cannot hold are received truncated, so UCX consumes them and
 * the connection goes on, as on a plain comm.
 */
#include <string.h>

#include "transport/ucx/ucx_internal.h"
#include "util/log.h"

/*
 * Posts a receive on lane with tag and mask: len bytes at buf, or (iovcnt > 0) into the
 * iov buf of iovcnt entries. NULL, and the comm failed, on error.
 */
static void *vrecv_post(stt_ucx_conn_t *conn, int lane, void *buf, size_t len, int iovcnt,
                        uint64_t tag, uint64_t mask)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL};
    if (iovcnt > 0) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype = ucp_dt_make_iov();
        len = (size_t)iovcnt;
    }
    void *ucp = stt_ucx_lib.tag_recv_nbx(conn->lane[lane].worker, buf, len, tag, mask, &param);

    if (UCS_PTR_IS_ERR(ucp) || ucp == NULL) {
        ucs_status_t us = ucp == NULL ? UCS_ERR_NO_PROGRESS : UCS_PTR_STATUS(ucp);
        stt_conn_fail(&conn->head, stt_ucx_status(us), "ucp_tag_recv_nbx of %zu bytes on lane"
                      " %d: %s", len, lane, stt_ucx_lib.status_string(us));
        return NULL;
    }
    return ucp;
}

void stt_ucx_vnic_recv_abandon(stt_ucx_recv_t *rc, stt_ucx_rreq_t *req)
{
    for (int i = 0; i < req->slot.n; i++) {
        stt_ucx_vbuf_t *v = &req->v[i];
        int n = v->nparts == 0 ? 1 : v->nparts;
        for (int j = 0; j < n; j++) {
            if (v->part[j] == NULL)
                continue;
            int lane = v->nparts == 0 ? v->head_lane : v->lane[j];
            stt_ucx_lib.request_cancel(rc->conn.lane[lane].worker, v->part[j]);
            stt_ucx_lib.request_free(v->part[j]);
            v->part[j] = NULL;
        }
        v->npend = 0;
    }
    req->pending = 0;
}

strata_status_t stt_ucx_vnic_irecv(stt_ucx_recv_t *rc, int n, void **data, const size_t *sizes,
                                   const int *tags, stt_req_t **req_p)
{
    stt_ucx_conn_t *conn = &rc->conn;
    stt_ucx_rreq_t *req = (stt_ucx_rreq_t *)stt_slots_take(&rc->slots, n);
    strata_status_t status = STRATA_OK;

    if (req == NULL) {
        *req_p = NULL;
        return STRATA_OK;
    }
    req->pending = 0;
    for (int i = 0; i < n; i++)
        memset(&req->v[i], 0, sizeof(req->v[i]));
    for (int i = 0; i < n && status == STRATA_OK; i++) {
        stt_ucx_vbuf_t *v = &req->v[i];
        int lane = 0;
        v->data = data[i];
        v->size = sizes[i];
        if ((status = stt_ucx_vnic_lane_of(conn, tags[i], &lane)) != STRATA_OK) {
            stt_conn_fail(&conn->head, status, "no room to follow tag %d", tags[i]);
            break;
        }
        v->head_lane = (uint8_t)lane;
        v->iov[0] = (ucp_dt_iov_t){.buffer = v->scratch, .length = STT_UCX_VHDR_BYTES};
        v->iov[1] = (ucp_dt_iov_t){.buffer = v->data + STT_UCX_VHDR_BYTES,
                                   .length = v->size - STT_UCX_VHDR_BYTES};
        v->part[0] = vrecv_post(conn, lane, v->iov, 0, v->size > STT_UCX_VHDR_BYTES ? 2 : 1,
                                stt_ucx_vtag(conn->conn_id, tags[i]), STT_UCX_VTAG_RECV_MASK);
        if (v->part[0] == NULL)
            break;
        v->npend = 1;
        req->pending++;
    }
    if (conn->head.failed != STRATA_OK) {
        stt_ucx_vnic_recv_abandon(rc, req);
        stt_slots_give(&rc->slots, &req->slot);
        return conn->head.failed;
    }
    *req_p = &req->slot.base;
    return STRATA_OK;
}

/* A head arrived in v: post its parts at their offsets. */
static void vrecv_parts(stt_ucx_recv_t *rc, stt_ucx_rreq_t *req, stt_ucx_vbuf_t *v,
                        const void *head)
{
    stt_ucx_conn_t *conn = &rc->conn;
    stt_ucx_vhdr_t h;

    if (stt_ucx_vhdr_decode(head, conn->nlanes, &h) != STRATA_OK) {
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "a striped message's head that does not"
                      " add up");
        return;
    }
    v->total = h.size;
    if (h.size > v->size)
        req->slot.status = STRATA_ERR_TRUNCATED;
    v->nparts = h.nparts;
    for (int j = 0; j < h.nparts; j++) {
        uint64_t off = (uint64_t)j * h.part_bytes;
        uint64_t len = j < h.nparts - 1 ? h.part_bytes : h.size - off;
        uint64_t room = v->size > off ? v->size - off : 0;
        v->lane[j] = h.lane[j];
        v->part[j] = vrecv_post(conn, h.lane[j], room > 0 ? v->data + off : v->data,
                                len < room ? len : room, 0,
                                stt_ucx_vtag_part(conn->conn_id, h.seq, j), UINT64_MAX);
        if (v->part[j] == NULL)
            return;
        v->npend++;
    }
}

/* Piece j of buffer i finished with us; us is how. */
static void vrecv_piece(stt_ucx_recv_t *rc, stt_ucx_rreq_t *req, int i, int j, ucs_status_t us,
                        const ucp_tag_recv_info_t *info)
{
    stt_ucx_conn_t *conn = &rc->conn;
    stt_ucx_vbuf_t *v = &req->v[i];
    stt_member_stats_t *m = conn->head.base.members;

    if (us != UCS_OK && us != UCS_ERR_MESSAGE_TRUNCATED) {
        stt_conn_fail(&conn->head, stt_ucx_status(us), "receive buffer %d (lane %d): %s", i,
                      v->nparts == 0 ? v->head_lane : v->lane[j], stt_ucx_lib.status_string(us));
        return;
    }
    if (us == UCS_ERR_MESSAGE_TRUNCATED) {
        STU_INFO(STU_LOG_NET, "ucx: a message from %s was larger than its receive buffer %d",
                 conn->head.peer, i);
        req->slot.status = STRATA_ERR_TRUNCATED;
    }
    if (v->nparts > 0) {                 /* a part */
        v->part_len[j] = (uint32_t)info->length;
        if (v->npend == 0 && req->slot.status == STRATA_OK)
            for (int k = 0; k < v->nparts; k++) {
                stt_member_add(&m[v->lane[k]].bytes, v->part_len[k]);
                stt_member_add(&m[v->lane[k]].msgs, 1);
            }
        return;
    }
    if (us == UCS_OK && (info->sender_tag & STT_UCX_VTAG_STRIPED)) {
        if (info->length != STT_UCX_VHDR_BYTES) {
            stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "a striped message's head of %zu"
                          " bytes", info->length);
            return;
        }
        vrecv_parts(rc, req, v, v->scratch);
        return;
    }
    v->total = info->length;
    if (us != UCS_OK)
        return;
    if (info->length > v->size) {        /* a buffer smaller than the scratch */
        req->slot.status = STRATA_ERR_TRUNCATED;
        return;
    }
    memcpy(v->data, v->scratch, info->length < STT_UCX_VHDR_BYTES ? info->length
                                                                 : STT_UCX_VHDR_BYTES);
    stt_member_add(&m[v->head_lane].bytes, info->length);
    stt_member_add(&m[v->head_lane].msgs, 1);
}

strata_status_t stt_ucx_vnic_recv_test(stt_ucx_recv_t *rc, stt_ucx_rreq_t *req, int *done,
                                       size_t *sizes)
{
    stt_ucx_conn_t *conn = &rc->conn;

    if (req->pending > 0) {
        stt_ucx_conn_progress(conn);
        for (int i = 0; i < req->slot.n && conn->head.failed == STRATA_OK; i++) {
            stt_ucx_vbuf_t *v = &req->v[i];
            int n = v->nparts == 0 ? 1 : v->nparts;
            for (int j = 0; j < n && v->npend > 0 && conn->head.failed == STRATA_OK; j++) {
                ucp_tag_recv_info_t info = {0};
                if (v->part[j] == NULL)
                    continue;
                ucs_status_t us = stt_ucx_lib.tag_recv_request_test(v->part[j], &info);
                if (us == UCS_INPROGRESS)
                    continue;
                stt_ucx_lib.request_free(v->part[j]);
                v->part[j] = NULL;
                v->npend--;
                vrecv_piece(rc, req, i, j, us, &info);
                if (v->nparts > 0 && v->npend > 0 && n == 1)
                    n = v->nparts;       /* the head named its parts: test them too */
            }
            if (v->npend == 0 && req->pending > 0 && !v->done_counted) {
                v->done_counted = true;
                req->pending--;
            }
        }
    }
    if (conn->head.failed != STRATA_OK || req->pending > 0) {
        if (conn->head.failed == STRATA_OK && stt_ucx_conn_pending(conn) == STRATA_OK) {
            *done = 0;
            return STRATA_OK;
        }
        strata_status_t failed = conn->head.failed;
        stt_ucx_vnic_recv_abandon(rc, req);
        stt_slots_give(&rc->slots, &req->slot);
        return failed;
    }
    strata_status_t status = req->slot.status;
    stt_slots_give(&rc->slots, &req->slot);
    if (status != STRATA_OK)
        return status;
    *done = 1;
    if (sizes != NULL)
        for (int i = 0; i < req->slot.n; i++)
            sizes[i] = req->v[i].total;
    return STRATA_OK;
}
