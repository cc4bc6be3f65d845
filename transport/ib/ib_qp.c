/*
 * RC queue pairs of the ib transport: creation and the INIT -> RTR -> RTS
 * transitions. Every failure is logged with the QP number, the device and
 * the GIDs involved.
 */
#include <errno.h>
#include <string.h>

#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/param.h"

#define QP_MIN_RNR_TIMER 12       /* 0.64 ms: NCCL's value */
#define QP_RNR_RETRY 7            /* 7 = retry forever on receiver-not-ready */
#define QP_HOP_LIMIT 255
#define QP_RD_ATOMIC 1            /* one outstanding RDMA read (the flush) */

static int qp_param_clamp(stu_param_id_t id, int lo, int hi)
{
    int64_t v = stu_param_int(id);
    return (int)(v < lo ? lo : v > hi ? hi : v);
}

strata_status_t stt_ib_qp_create(stt_ib_conn_t *conn, stt_ib_qp_t *q, uint32_t sq_depth,
                                 uint32_t rq_depth)
{
    struct ibv_qp_init_attr attr;
    uint32_t max_wr = conn->dev->max_qp_wr;

    if (max_wr > 0 && sq_depth > max_wr)
        sq_depth = max_wr;
    memset(&attr, 0, sizeof(attr));
    attr.qp_context = conn;
    attr.send_cq = conn->cq;
    attr.recv_cq = conn->cq;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;
    attr.cap.max_send_wr = sq_depth;
    attr.cap.max_recv_wr = rq_depth;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = STT_IB_INLINE_WANT;
    q->qp = ibv_create_qp(conn->ctx->pd, &attr);
    if (q->qp == NULL) {
        /* Some devices cap inline data lower; inline is an optimisation only. */
        attr.cap.max_inline_data = 0;
        q->qp = ibv_create_qp(conn->ctx->pd, &attr);
    }
    if (q->qp == NULL) {
        STU_WARN("ib: %s: ibv_create_qp (RC, %u send / %u receive WRs) for %s: %s",
                 conn->ctx->name, sq_depth, rq_depth, conn->peer, strerror(errno));
        return STRATA_ERR_NO_RESOURCE;
    }
    q->sq_depth = sq_depth;
    q->sq_posted = 0;
    q->sq_done = 0;
    q->max_inline = attr.cap.max_inline_data;
    return STRATA_OK;
}

strata_status_t stt_ib_qp_to_init(stt_ib_conn_t *conn, stt_ib_qp_t *q)
{
    struct ibv_qp_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = (uint8_t)conn->dev->port;
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    int rc = ibv_modify_qp(q->qp, &attr,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc != 0) {
        STU_WARN("ib: %s: QP 0x%x to INIT: %s", conn->ctx->name, q->qp->qp_num, strerror(rc));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

void stt_ib_qp_rtr_attr(const stt_ib_dev_t *d, uint8_t sl, uint8_t tc, uint32_t remote_qpn,
                        const stt_ib_meta_t *remote, int sgid_index, const uint8_t *dgid,
                        struct ibv_qp_attr *attr)
{
    memset(attr, 0, sizeof(*attr));
    attr->qp_state = IBV_QPS_RTR;
    attr->path_mtu = (enum ibv_mtu)(remote->mtu < d->mtu ? remote->mtu : d->mtu);
    attr->dest_qp_num = remote_qpn;
    attr->rq_psn = 0;
    attr->max_dest_rd_atomic = QP_RD_ATOMIC;
    attr->min_rnr_timer = QP_MIN_RNR_TIMER;
    attr->ah_attr.sl = sl;
    attr->ah_attr.port_num = (uint8_t)d->port;
    if (d->link_layer == IBV_LINK_LAYER_ETHERNET) {
        /* RoCE: routed by GID, always with a global route header */
        attr->ah_attr.is_global = 1;
        memcpy(attr->ah_attr.grh.dgid.raw, dgid, 16);
        attr->ah_attr.grh.sgid_index = (uint8_t)sgid_index;
        attr->ah_attr.grh.hop_limit = QP_HOP_LIMIT;
        attr->ah_attr.grh.traffic_class = tc;
    } else {
        /* InfiniBand inside one subnet: the LID routes, no GRH */
        attr->ah_attr.is_global = 0;
        attr->ah_attr.dlid = remote->lid;
    }
}

strata_status_t stt_ib_qp_to_rtr(stt_ib_conn_t *conn, stt_ib_qp_t *q, const stt_ib_meta_t *remote,
                                 int sgid_index, const uint8_t *dgid, bool quiet)
{
    struct ibv_qp_attr attr;
    const stt_ib_dev_t *d = conn->dev;

    stt_ib_qp_rtr_attr(d, conn->sl, conn->tc, q->remote_qpn, remote, sgid_index, dgid, &attr);
    int rc = ibv_modify_qp(q->qp, &attr,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc != 0) {
        char l[STT_IB_GID_STRLEN], r[STT_IB_GID_STRLEN];
        union ibv_gid sg;
        if (ibv_query_gid(d->ctx->vctx, (uint8_t)d->port, sgid_index, &sg) != 0)
            memset(&sg, 0, sizeof(sg));
        stt_ib_gid_format(sg.raw, l, sizeof(l));
        stt_ib_gid_format(dgid, r, sizeof(r));
        if (quiet)
            STU_INFO(STU_LOG_NET, "ib: %s:%d: QP 0x%x to RTR (remote QP 0x%x, GID index %d %s"
                     " -> %s, LID %u, MTU %d): %s", d->ctx->name, d->port, q->qp->qp_num,
                     q->remote_qpn, sgid_index, l, r, remote->lid, 128 << attr.path_mtu,
                     strerror(rc));
        else
            STU_WARN("ib: %s:%d: QP 0x%x to RTR (remote QP 0x%x at %s, GID index %d %s -> %s,"
                     " LID %u, MTU %d): %s", d->ctx->name, d->port, q->qp->qp_num,
                     q->remote_qpn, conn->peer, sgid_index, l, r, remote->lid,
                     128 << attr.path_mtu, strerror(rc));
        return STRATA_ERR_REMOTE;
    }
    return STRATA_OK;
}

strata_status_t stt_ib_qp_to_rts(stt_ib_conn_t *conn, stt_ib_qp_t *q)
{
    struct ibv_qp_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = (uint8_t)qp_param_clamp(STU_PARAM_IB_TIMEOUT, 1, 31);
    attr.retry_cnt = (uint8_t)qp_param_clamp(STU_PARAM_IB_RETRY_CNT, 0, 7);
    attr.rnr_retry = QP_RNR_RETRY;
    attr.sq_psn = 0;
    attr.max_rd_atomic = QP_RD_ATOMIC;
    int rc = ibv_modify_qp(q->qp, &attr,
                           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                               IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc != 0) {
        STU_WARN("ib: %s: QP 0x%x to RTS (timeout %u, retries %u): %s", conn->ctx->name,
                 q->qp->qp_num, attr.timeout, attr.retry_cnt, strerror(rc));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}
