/*
 * RC queue pairs of the ib transport: creation, the INIT -> RTR -> RTS
 * transitions, connecting a comm's QPs to the peer's (and the flush QP to
 * itself), and the zero-length receive WRs a receive comm keeps posted.
 * Every failure is logged with the QP number, the device and the GIDs
 * involved.
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
    stt_ib_member_t *m = &conn->m[q->member];
    uint32_t max_wr = m->dev->max_qp_wr;

    if (max_wr > 0 && sq_depth > max_wr)
        sq_depth = max_wr;
    memset(&attr, 0, sizeof(attr));
    attr.qp_context = conn;
    attr.send_cq = m->cq;
    attr.recv_cq = m->cq;
    attr.qp_type = IBV_QPT_RC;
    attr.sq_sig_all = 0;
    attr.cap.max_send_wr = sq_depth;
    attr.cap.max_recv_wr = rq_depth;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = STT_IB_INLINE_WANT;
    q->qp = stt_ib_verbs.create_qp(m->ctx->pd, &attr);
    if (q->qp == NULL) {
        /* Some devices cap inline data lower; inline is an optimisation only. */
        attr.cap.max_inline_data = 0;
        q->qp = stt_ib_verbs.create_qp(m->ctx->pd, &attr);
    }
    if (q->qp == NULL) {
        STU_WARN("ib: %s: ibv_create_qp (RC, %u send / %u receive WRs) for %s: %s",
                 m->ctx->name, sq_depth, rq_depth, conn->head.peer, strerror(errno));
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
    attr.port_num = (uint8_t)conn->m[q->member].dev->port;
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    int rc = stt_ib_verbs.modify_qp(q->qp, &attr,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc != 0) {
        STU_WARN("ib: %s: QP 0x%x to INIT: %s", conn->m[q->member].ctx->name, q->qp->qp_num,
                 strerror(rc));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

void stt_ib_qp_rtr_attr(const stt_ib_dev_t *d, uint8_t sl, uint8_t tc, uint32_t remote_qpn,
                        const stt_ib_meta_port_t *remote, int sgid_index, const uint8_t *dgid,
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

strata_status_t stt_ib_qp_to_rtr(stt_ib_conn_t *conn, stt_ib_qp_t *q,
                                 const stt_ib_meta_port_t *remote, int sgid_index,
                                 const uint8_t *dgid, bool quiet)
{
    struct ibv_qp_attr attr;
    const stt_ib_dev_t *d = conn->m[q->member].dev;

    stt_ib_qp_rtr_attr(d, conn->sl, conn->tc, q->remote_qpn, remote, sgid_index, dgid, &attr);
    int rc = stt_ib_verbs.modify_qp(q->qp, &attr,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc != 0) {
        char l[STT_IB_GID_STRLEN], r[STT_IB_GID_STRLEN];
        union ibv_gid sg;
        if (stt_ib_verbs.query_gid(d->ctx->vctx, (uint8_t)d->port, sgid_index, &sg) != 0)
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
                     q->remote_qpn, conn->head.peer, sgid_index, l, r, remote->lid,
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
    int rc = stt_ib_verbs.modify_qp(q->qp, &attr,
                           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                               IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc != 0) {
        STU_WARN("ib: %s: QP 0x%x to RTS (timeout %u, retries %u): %s",
                 conn->m[q->member].ctx->name,
                 q->qp->qp_num, attr.timeout, attr.retry_cnt, strerror(rc));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

int stt_ib_qp_post_recvs(stt_ib_conn_t *conn, int q, int count)
{
    struct ibv_recv_wr wr[STT_IB_RQ_DEPTH];
    struct ibv_recv_wr *bad = NULL;

    if (count <= 0)
        return 0;
    for (int i = 0; i < count; i++) {
        wr[i] = (struct ibv_recv_wr){.wr_id = stt_ib_wr_id(STT_IB_WR_RECV, q, 0, 0),
                                     .next = i + 1 < count ? &wr[i + 1] : NULL,
                                     .sg_list = NULL, .num_sge = 0};
    }
    return ibv_post_recv(conn->qps[q].qp, wr, &bad);
}

/* The flush QP talks to itself, over the GID the data QPs use. */
static strata_status_t qp_flush_connect(stt_ib_conn_t *conn)
{
    const stt_ib_member_t *m = &conn->m[conn->flush_qp.member];
    stt_ib_meta_port_t self;
    strata_status_t status;

    memset(&self, 0, sizeof(self));
    self.mtu = (uint8_t)m->dev->mtu;
    self.lid = m->dev->lid;
    conn->flush_qp.remote_qpn = conn->flush_qp.qp->qp_num;
    status = stt_ib_qp_to_rtr(conn, &conn->flush_qp, &self, m->sgid_index, m->local_gid, false);
    if (status == STRATA_OK)
        status = stt_ib_qp_to_rts(conn, &conn->flush_qp);
    if (status == STRATA_OK)
        STU_INFO(STU_LOG_NET, "ib: receive comm with %s flushes through loopback QP 0x%x",
                 conn->head.peer, conn->flush_qp.qp->qp_num);
    return status;
}

/* Member j's end of the GID pair gid_choice names; STRATA_ERR_REMOTE (logged) when it has none. */
static strata_status_t qp_member_gids(stt_ib_conn_t *conn, int j, const stt_ib_meta_port_t *rp,
                                      bool alt)
{
    stt_ib_member_t *m = &conn->m[j];
    const stt_ib_dev_t *d = m->dev;

    if (rp->link_layer != d->link_layer) {
        STU_WARN("ib: %s offers link layer %u on member %d; %s:%d has %u", conn->head.peer,
                 rp->link_layer, j, d->ctx->name, d->port, d->link_layer);
        return STRATA_ERR_REMOTE;
    }
    if (alt && (!d->has_alt || !rp->has_alt)) {
        STU_WARN("ib: %s asked for the link-local GID pair, but %s:%d or its peer has none",
                 conn->head.peer, d->ctx->name, d->port);
        return STRATA_ERR_REMOTE;
    }
    m->sgid_index = alt ? d->alt_index : d->gid_index;
    memcpy(m->local_gid, alt ? d->alt_gid : d->gid, 16);
    memcpy(m->remote_gid, alt ? rp->alt_gid : rp->gid, 16);
    m->remote_rkey = rp->rkey;
    return STRATA_OK;
}

strata_status_t stt_ib_qp_connect(stt_ib_conn_t *conn, const stt_ib_meta_t *remote,
                                  int gid_choice, bool quiet)
{
    strata_status_t status;
    bool alt = gid_choice == STT_IB_GID_ALT;

    if (remote->nqps != conn->nqps || remote->nmembers != conn->nmembers) {
        STU_WARN("ib: %s offers %u QPs over %u port(s); this end (%s) has %d over %d: %s",
                 conn->head.peer, remote->nqps, remote->nmembers, conn->dev->props.name,
                 conn->nqps, conn->nmembers, remote->nmembers != conn->nmembers ?
                 "a virtual device connects only to one fusing as many ports" :
                 "QP counts differ");
        return STRATA_ERR_REMOTE;
    }
    for (int j = 0; j < conn->nmembers; j++) {
        status = qp_member_gids(conn, j, &remote->m[j], alt);
        if (status != STRATA_OK)
            return status;
    }
    for (int i = 0; i < conn->nqps; i++) {
        stt_ib_member_t *m = stt_ib_conn_member(conn, i);
        conn->qps[i].remote_qpn = remote->qpn[i];
        status = stt_ib_qp_to_rtr(conn, &conn->qps[i], &remote->m[conn->qps[i].member],
                                  m->sgid_index, m->remote_gid, quiet);
        if (status != STRATA_OK)
            return status;
    }
    for (int i = 0; i < conn->nqps; i++) {
        status = stt_ib_qp_to_rts(conn, &conn->qps[i]);
        if (status != STRATA_OK)
            return status;
    }
    if (conn->flush_qp.qp != NULL) {
        status = qp_flush_connect(conn);
        if (status != STRATA_OK)
            return status;
    }
    conn->remote_addr = remote->addr;
    if (stu_log_level >= STU_LOG_INFO) {
        for (int j = 0; j < conn->nmembers; j++) {
            const stt_ib_member_t *m = &conn->m[j];
            const stt_ib_dev_t *d = m->dev;
            uint8_t mtu = remote->m[j].mtu < d->mtu ? remote->m[j].mtu : (uint8_t)d->mtu;
            char l[STT_IB_GID_STRLEN], r[STT_IB_GID_STRLEN];
            stt_ib_gid_format(m->local_gid, l, sizeof(l));
            stt_ib_gid_format(m->remote_gid, r, sizeof(r));
            STU_INFO(STU_LOG_NET, "ib: %s comm %s:%d <-> %s%s: %d QP(s) from 0x%x to 0x%x, GID"
                     " %s (index %d) -> %s%s, MTU %d, tc %u sl %u", stt_conn_kind(&conn->head),
                     d->ctx->name, d->port, conn->head.peer, conn->nmembers > 1 ? " (member)" :
                     "", conn->nqps / conn->nmembers, conn->qps[j].qp->qp_num, remote->qpn[j],
                     l, m->sgid_index, r, alt ? " (link-local fallback)" : "", 128 << mtu,
                     conn->tc, conn->sl);
        }
    }
    return STRATA_OK;
}

int stt_ib_qp_post_cts(stt_ib_conn_t *conn, int q, const void *src, uint32_t len,
                       uint64_t raddr, uint32_t slot, bool signal)
{
    stt_ib_qp_t *qp = &conn->qps[q];
    stt_ib_member_t *m = stt_ib_conn_member(conn, q);
    struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)src, .length = len,
                          .lkey = m->ctl_mr->lkey};
    struct ibv_send_wr wr, *bad = NULL;

    memset(&wr, 0, sizeof(wr));
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = m->remote_rkey;
    if (len <= qp->max_inline)
        wr.send_flags |= IBV_SEND_INLINE;
    qp->sq_posted++;
    if (signal || stt_ib_qp_room(qp) < STT_IB_CTS_SIGNAL_EVERY) {
        wr.send_flags |= IBV_SEND_SIGNALED;
        wr.wr_id = stt_ib_wr_id(STT_IB_WR_CTS, q, (int)slot, qp->sq_posted);
    } else {
        wr.wr_id = stt_ib_wr_id(STT_IB_WR_NONE, q, (int)slot, 0);
    }
    return ibv_post_send(qp->qp, &wr, &bad);
}
