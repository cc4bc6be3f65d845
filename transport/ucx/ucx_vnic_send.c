/*
 * The send side of a virtual device's comm (docs/ucx-protocol.md, "Virtual
 * devices"): message n of a tag goes on lane n % lanes, whole below the
 * stripe threshold (STRATA_SOCKET_STRIPE_MIN, the tcp transport's), or as a
 * head naming its parts, each part on its own lane with a tag only it
 * carries, so the receiver places every part at its offset. One UCP send per
 * piece, no callback, completion read with ucp_request_check_status, as on a
 * plain comm; the per-member counters move when the send completes.
 */
#include "transport/ucx/ucx_internal.h"
#include "util/log.h"

/* Knuth's multiplicative hash, top 6 bits: a bucket of the 64-entry tag table. */
#define VNIC_TAG_HASH(tag) (((uint32_t)(tag) * 2654435761u) >> 26)
_Static_assert(STT_UCX_VNIC_TAGS == 64, "the hash gives 6 bits");

strata_status_t stt_ucx_vnic_lane_of(stt_ucx_conn_t *conn, int tag, int *lane_p)
{
    uint32_t h = VNIC_TAG_HASH(tag);

    for (int i = 0; i < STT_UCX_VNIC_TAGS; i++) {
        stt_ucx_tagcount_t *t = &conn->tagc[(h + (uint32_t)i) % STT_UCX_VNIC_TAGS];
        if (!t->used) {
            t->used = true;
            t->tag = tag;
            t->n = 0;
        }
        if (t->tag == tag) {
            *lane_p = (int)(t->n++ % (uint32_t)conn->nlanes);
            return STRATA_OK;
        }
    }
    STU_WARN("ucx: %s comm with %s: tag %d is the %dth distinct tag on a virtual device; %d"
             " fit", stt_conn_kind(&conn->head), conn->head.peer, tag, STT_UCX_VNIC_TAGS + 1,
             STT_UCX_VNIC_TAGS);
    return STRATA_ERR_NO_RESOURCE;
}

/* Piece k of req: len bytes at buf on lane, with tag. */
static strata_status_t vsend_post(stt_ucx_conn_t *conn, stt_ucx_sreq_t *req, int k, int lane,
                                  const void *buf, size_t len, uint32_t payload, uint64_t tag)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    void *ucp = stt_ucx_lib.tag_send_nbx(conn->lane[lane].ep, buf, len, tag, &param);

    req->lane[k] = (uint8_t)lane;
    req->part_len[k] = payload;
    req->part[k] = NULL;
    req->nparts = (uint8_t)(k + 1);
    if (STU_UNLIKELY(UCS_PTR_IS_ERR(ucp))) {
        ucs_status_t us = UCS_PTR_STATUS(ucp);
        stt_conn_fail(&conn->head, stt_ucx_status(us), "ucp_tag_send_nbx of %zu bytes on"
                      " lane %d: %s", len, lane, stt_ucx_lib.status_string(us));
        return conn->head.failed;
    }
    req->part[k] = ucp;
    return STRATA_OK;
}

void stt_ucx_vnic_send_abandon(stt_ucx_sreq_t *req)
{
    for (int k = 0; k < req->nparts; k++) {
        if (req->part[k] != NULL)
            stt_ucx_lib.request_free(req->part[k]);   /* UCX releases it when it ends */
        req->part[k] = NULL;
    }
    req->nparts = 0;
}

strata_status_t stt_ucx_vnic_isend(stt_ucx_send_t *sc, void *data, size_t size, int tag,
                                   stt_req_t **req_p)
{
    stt_ucx_conn_t *conn = &sc->conn;
    uint32_t part_bytes = 0;
    int nparts = 1, lane = 0;
    strata_status_t status;

    if (sc->slots.nfree == 0) {
        *req_p = NULL;
        return STRATA_OK;
    }
    if ((status = stt_ucx_vnic_lane_of(conn, tag, &lane)) != STRATA_OK)
        return status;
    if (size >= conn->stripe_min)
        stt_ucx_vnic_plan(size, conn->nlanes, &part_bytes, &nparts);
    stt_ucx_sreq_t *req = (stt_ucx_sreq_t *)stt_slots_take(&sc->slots, 1);
    req->ucp = NULL;
    req->ucs = UCS_OK;
    req->size = size;
    req->nparts = 0;
    if (nparts < 2) {
        status = vsend_post(conn, req, 0, lane, data, size, (uint32_t)size,
                            stt_ucx_vtag(conn->conn_id, tag));
    } else {
        stt_ucx_vhdr_t h = {.size = size, .seq = conn->vseq++, .part_bytes = part_bytes,
                            .nparts = (uint8_t)nparts};
        for (int j = 0; j < nparts; j++)
            h.lane[j] = (uint8_t)((lane + j) % conn->nlanes);
        stt_ucx_vhdr_encode(&h, req->head);
        status = vsend_post(conn, req, 0, lane, req->head, STT_UCX_VHDR_BYTES, 0,
                            stt_ucx_vtag(conn->conn_id, tag) | STT_UCX_VTAG_STRIPED);
        for (int j = 0; j < nparts && status == STRATA_OK; j++) {
            size_t off = (size_t)j * part_bytes;
            size_t len = j < nparts - 1 ? part_bytes : size - off;
            status = vsend_post(conn, req, 1 + j, h.lane[j], (uint8_t *)data + off, len,
                                (uint32_t)len, stt_ucx_vtag_part(conn->conn_id, h.seq, j));
        }
    }
    if (status != STRATA_OK) {
        stt_ucx_vnic_send_abandon(req);
        stt_slots_give(&sc->slots, &req->slot);
        return status;
    }
    *req_p = &req->slot.base;
    return STRATA_OK;
}

/* The send completed: its bytes on the lanes that carried them, a message on each. */
static void vsend_count(stt_ucx_conn_t *conn, const stt_ucx_sreq_t *req)
{
    stt_member_stats_t *m = conn->head.base.members;

    if (req->nparts == 1) {
        stt_member_add(&m[req->lane[0]].bytes, req->part_len[0]);
        stt_member_add(&m[req->lane[0]].msgs, 1);
        return;
    }
    for (int k = 1; k < req->nparts; k++) {          /* parts go on distinct lanes */
        stt_member_add(&m[req->lane[k]].bytes, req->part_len[k]);
        stt_member_add(&m[req->lane[k]].msgs, 1);
    }
}

strata_status_t stt_ucx_vnic_send_test(stt_ucx_send_t *sc, stt_ucx_sreq_t *req, int *done,
                                       size_t *sizes)
{
    stt_ucx_conn_t *conn = &sc->conn;
    strata_status_t status = STRATA_OK;
    int pending = 0;

    stt_ucx_conn_progress(conn);
    for (int k = 0; k < req->nparts; k++) {
        if (req->part[k] == NULL)
            continue;
        ucs_status_t us = stt_ucx_lib.request_check_status(req->part[k]);
        if (us == UCS_INPROGRESS) {
            pending++;
            continue;
        }
        stt_ucx_lib.request_free(req->part[k]);
        req->part[k] = NULL;
        if (us != UCS_OK && req->ucs == UCS_OK)
            req->ucs = us;
    }
    if (pending > 0) {
        if (stt_ucx_conn_pending(conn) == STRATA_OK) {
            *done = 0;
            return STRATA_OK;
        }
        stt_ucx_vnic_send_abandon(req);
        status = conn->head.failed;
    } else if (req->ucs != UCS_OK) {
        stt_conn_fail(&conn->head, stt_ucx_status(req->ucs), "a send of %zu bytes: %s",
                      req->size, stt_ucx_lib.status_string(req->ucs));
        status = conn->head.failed;
    } else {
        vsend_count(conn, req);
    }
    stt_slots_give(&sc->slots, &req->slot);
    if (status != STRATA_OK)
        return status;
    *done = 1;
    if (sizes != NULL)
        sizes[0] = req->size;
    return STRATA_OK;
}
