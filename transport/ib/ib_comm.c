/*
 * What send and receive comms of the ib transport share: creation (CQ, QPs,
 * the registered control block), the QP handshake against the peer's
 * metadata, failure bookkeeping, the watch on async events and the side
 * channel, and destruction.
 *
 * The control block is one registered allocation per comm:
 *   slots[STT_IB_FIFO_DEPTH]  send comm: the FIFO the receiver writes CTS into;
 *                             receive comm: the CTS source the receiver writes from
 *   sizes[DEPTH][MAX_RECVS]   send comm: the sizes source; receive comm: the sizes
 *                             array the sender writes into
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

typedef struct ctl_block {
    stt_ib_fifo_slot_t slots[STT_IB_FIFO_DEPTH];
    uint32_t sizes[STT_IB_FIFO_DEPTH][STT_MAX_RECVS];
    uint64_t flush_sink;
} ctl_block_t;

void stt_ib_conn_fail(stt_ib_conn_t *conn, strata_status_t status, const char *fmt, ...)
{
    char why[512];
    va_list ap;

    if (conn->failed != STRATA_OK)
        return;
    conn->failed = status;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    STU_WARN("ib: %s comm with %s on %s:%d (QP 0x%x) failed (%s): %s",
             conn->kind == STT_IB_KIND_SEND ? "send" : "receive", conn->peer, conn->ctx->name,
             conn->dev->port, conn->qps[0].qp ? conn->qps[0].qp->qp_num : 0,
             strata_status_str(status), why);
}

void stt_ib_conn_wc_fail(stt_ib_conn_t *conn, const struct ibv_wc *wc)
{
    static const char *const kinds[] = {"?", "send (signalled)", "CTS", "receive",
                                        "unsignalled write", "flush read"};
    char l[STT_IB_GID_STRLEN], r[STT_IB_GID_STRLEN];
    int kind = (int)(wc->wr_id & 0xff);

    if (conn->failed != STRATA_OK)
        return;                      /* the WRs flushed after the first error */
    stt_ib_gid_format(conn->local_gid, l, sizeof(l));
    stt_ib_gid_format(conn->remote_gid, r, sizeof(r));
    stt_ib_conn_fail(conn, STRATA_ERR_REMOTE, "work completion error '%s' (status %d, vendor"
                     " error 0x%x) on a %s work request, opcode %d, %u bytes, QP 0x%x,"
                     " local GID %s, remote GID %s", ibv_wc_status_str(wc->status),
                     (int)wc->status, wc->vendor_err,
                     kind < (int)(sizeof(kinds) / sizeof(kinds[0])) ? kinds[kind] : "?",
                     (int)wc->opcode, wc->byte_len, wc->qp_num, l, r);
}

bool stt_ib_conn_watch(stt_ib_conn_t *conn, bool pending)
{
    int async = __atomic_load_n(&conn->async_err, __ATOMIC_ACQUIRE);

    if (STU_UNLIKELY(async != 0))
        stt_ib_conn_fail(conn, STRATA_ERR_REMOTE, "async event '%s' on one of its QPs or its CQ",
                         ibv_event_type_str((enum ibv_event_type)(async - 1)));
    if (STU_UNLIKELY(__atomic_load_n(&conn->ctx->fatal, __ATOMIC_ACQUIRE) != conn->dev_fatal))
        stt_ib_conn_fail(conn, STRATA_ERR_REMOTE, "device %s reported a fatal error",
                         conn->ctx->name);
    if (conn->eof_ns != 0 || !pending)
        return conn->eof_ns != 0;
    uint64_t now = stu_time_ns();
    if (now - conn->eof_check_ns < STT_IB_EOF_CHECK_NS)
        return false;
    conn->eof_check_ns = now;
    char b;
    ssize_t r = recv(conn->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r > 0) {
        stt_ib_conn_fail(conn, STRATA_ERR_REMOTE, "unexpected bytes on the side channel");
    } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        STU_INFO(STU_LOG_NET, "ib: side channel to %s %s", conn->peer,
                 r == 0 ? "closed by the peer" : strerror(errno));
        conn->eof_ns = now;
    }
    return conn->eof_ns != 0;
}

static strata_status_t conn_ctl_create(stt_ib_conn_t *conn)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t align = page > 0 ? (size_t)page : 4096;

    conn->ctl_bytes = (sizeof(ctl_block_t) + align - 1) & ~(align - 1);
    if (posix_memalign(&conn->ctl, align, conn->ctl_bytes) != 0) {
        STU_WARN("ib: no memory for a control block (%zu bytes)", conn->ctl_bytes);
        conn->ctl = NULL;
        return STRATA_ERR_NO_MEMORY;
    }
    memset(conn->ctl, 0, conn->ctl_bytes);
    conn->ctl_mr = ibv_reg_mr(conn->ctx->pd, conn->ctl, conn->ctl_bytes,
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (conn->ctl_mr == NULL) {
        STU_WARN("ib: %s: registering a control block (%zu bytes): %s", conn->ctx->name,
                 conn->ctl_bytes, strerror(errno));
        return STRATA_ERR_IO;
    }
    return STRATA_OK;
}

static void conn_kind_setup(stt_ib_conn_t *conn)
{
    ctl_block_t *ctl = conn->ctl;

    if (conn->kind == STT_IB_KIND_SEND) {
        stt_ib_send_t *sc = (stt_ib_send_t *)conn;
        sc->fifo = ctl->slots;
        sc->sizes_src = &ctl->sizes[0][0];
        for (int i = 0; i < STT_IB_SEND_RING; i++) {
            sc->reqs[i].base.comm = &conn->base;
            sc->free_slots[i] = (uint16_t)(STT_IB_SEND_RING - 1 - i);
        }
        sc->nfree = STT_IB_SEND_RING;
        int64_t ar = stu_param_int(STU_PARAM_IB_ADAPTIVE_ROUTING);
        sc->ar = ar < 0 ? conn->dev->link_layer == IBV_LINK_LAYER_INFINIBAND : ar > 0;
        int64_t v = stu_param_int(STU_PARAM_IB_AR_THRESHOLD);
        sc->ar_threshold = v < 0 ? 0 : (uint64_t)v;
        v = stu_param_int(STU_PARAM_IB_SPLIT_MIN);
        sc->split_min = v < 0 ? 0 : (uint64_t)v;
    } else {
        stt_ib_recv_t *rc = (stt_ib_recv_t *)conn;
        rc->cts = ctl->slots;
        rc->sizes = &ctl->sizes[0][0];
        for (int i = 0; i < STT_IB_FIFO_DEPTH; i++) {
            rc->reqs[i].base.comm = &conn->base;
            rc->flushes[i].base.comm = &conn->base;
            rc->flush_free[i] = (uint16_t)(STT_IB_FIFO_DEPTH - 1 - i);
        }
        rc->nflush = STT_IB_FIFO_DEPTH;
        rc->flush_sink = &ctl->flush_sink;
    }
}

strata_status_t stt_ib_conn_create(stt_ib_kind_t kind, int dev, int nqps, int fd,
                                   const char *peer, stt_ib_conn_t **conn_p)
{
    strata_status_t status;
    stt_ib_dev_t *d = stt_ib_device_at(dev);
    size_t bytes = kind == STT_IB_KIND_SEND ? sizeof(stt_ib_send_t) : sizeof(stt_ib_recv_t);
    uint32_t sq = kind == STT_IB_KIND_SEND ? STT_IB_SEND_SQ_DEPTH : STT_IB_RECV_SQ_DEPTH;
    uint32_t rq = kind == STT_IB_KIND_SEND ? 1 : STT_IB_RQ_DEPTH;

    if (d == NULL) {
        close(fd);
        return STRATA_ERR_NOT_FOUND;
    }
    stt_ib_conn_t *conn = calloc(1, bytes);
    if (conn == NULL) {
        STU_WARN("ib: no memory for a comm with %s (%zu bytes)", peer, bytes);
        close(fd);
        return STRATA_ERR_NO_MEMORY;
    }
    conn->base.ops = &stt_ib_ops;
    conn->base.dev = dev;
    conn->kind = kind;
    conn->dev = d;
    conn->ctx = d->ctx;
    conn->nqps = nqps;
    conn->fd = fd;
    conn->dev_fatal = __atomic_load_n(&d->ctx->fatal, __ATOMIC_ACQUIRE);
    int64_t sl = stu_param_int(STU_PARAM_IB_SL);
    conn->sl = (uint8_t)(sl < 0 || sl > 15 ? 0 : sl);
    snprintf(conn->peer, sizeof(conn->peer), "%s", peer);

    status = conn_ctl_create(conn);
    if (status != STRATA_OK)
        goto err_destroy;
    bool flush = kind == STT_IB_KIND_RECV && stt_ib_flush_wanted(d);
    int cqe = nqps * (int)(sq + rq) + (flush ? STT_IB_FIFO_DEPTH : 0) + 16;
    if (cqe > d->ctx->attr.max_cqe)
        cqe = d->ctx->attr.max_cqe;
    conn->cq = ibv_create_cq(d->ctx->vctx, cqe, conn, NULL, 0);
    if (conn->cq == NULL) {
        STU_WARN("ib: %s: ibv_create_cq(%d entries) for %s: %s", d->ctx->name, cqe, peer,
                 strerror(errno));
        status = STRATA_ERR_NO_RESOURCE;
        goto err_destroy;
    }
    for (int i = 0; i < nqps; i++) {
        status = stt_ib_qp_create(conn, &conn->qps[i], sq, rq);
        if (status == STRATA_OK)
            status = stt_ib_qp_to_init(conn, &conn->qps[i]);
        if (status != STRATA_OK)
            goto err_destroy;
    }
    if (flush) {
        status = stt_ib_qp_create(conn, &conn->flush_qp, STT_IB_FIFO_DEPTH + 1, 1);
        if (status == STRATA_OK)
            status = stt_ib_qp_to_init(conn, &conn->flush_qp);
        if (status != STRATA_OK)
            goto err_destroy;
    }
    conn_kind_setup(conn);
    if (kind == STT_IB_KIND_RECV) {
        status = stt_ib_recv_post_initial((stt_ib_recv_t *)conn);
        if (status != STRATA_OK)
            goto err_destroy;
    }
    *conn_p = conn;
    return STRATA_OK;

err_destroy:
    stt_ib_conn_destroy(conn);
    return status;
}

static void conn_qp_destroy(stt_ib_qp_t *q)
{
    if (q->qp == NULL)
        return;
    uint32_t qpn = q->qp->qp_num;
    int rc = ibv_destroy_qp(q->qp);
    if (rc != 0)
        STU_WARN("ib: ibv_destroy_qp(0x%x): %s", qpn, strerror(rc));
    q->qp = NULL;
}

void stt_ib_conn_quiesce(stt_ib_conn_t *conn)
{
    for (int i = 0; i < conn->nqps; i++)
        conn_qp_destroy(&conn->qps[i]);
    conn_qp_destroy(&conn->flush_qp);
}

void stt_ib_conn_destroy(stt_ib_conn_t *conn)
{
    stt_ib_conn_quiesce(conn);
    int rc = conn->cq != NULL ? ibv_destroy_cq(conn->cq) : 0;
    if (rc != 0)
        STU_WARN("ib: ibv_destroy_cq: %s", strerror(rc));
    if (conn->ctl_mr != NULL)
        ibv_dereg_mr(conn->ctl_mr);
    free(conn->ctl);
    if (conn->fd >= 0)
        close(conn->fd);
    free(conn);
}

void stt_ib_conn_meta(const stt_ib_conn_t *conn, int kind, uint64_t listener_id,
                      uint64_t conn_id, stt_ib_meta_t *meta)
{
    const stt_ib_dev_t *d = conn->dev;
    ctl_block_t *ctl = conn->ctl;

    memset(meta, 0, sizeof(*meta));
    meta->kind = (uint8_t)kind;
    meta->nqps = (uint8_t)conn->nqps;
    meta->link_layer = d->link_layer;
    meta->mtu = (uint8_t)d->mtu;
    meta->port = (uint8_t)d->port;
    meta->has_alt = d->has_alt;
    meta->tc = conn->tc;
    meta->lid = d->lid;
    meta->listener_id = listener_id;
    meta->conn_id = conn_id;
    memcpy(meta->gid, d->gid, 16);
    if (d->has_alt)
        memcpy(meta->alt_gid, d->alt_gid, 16);
    meta->addr = conn->kind == STT_IB_KIND_SEND ? (uint64_t)(uintptr_t)ctl->slots
                                                : (uint64_t)(uintptr_t)ctl->sizes;
    meta->rkey = conn->ctl_mr->rkey;
    for (int i = 0; i < conn->nqps; i++)
        meta->qpn[i] = conn->qps[i].qp->qp_num;
}

/* The flush QP talks to itself, over the GID the data QPs use. */
static strata_status_t conn_flush_qp_connect(stt_ib_conn_t *conn, int sgid_index)
{
    const stt_ib_dev_t *d = conn->dev;
    stt_ib_meta_t self;
    strata_status_t status;

    memset(&self, 0, sizeof(self));
    self.mtu = (uint8_t)d->mtu;
    self.lid = d->lid;
    conn->flush_qp.remote_qpn = conn->flush_qp.qp->qp_num;
    status = stt_ib_qp_to_rtr(conn, &conn->flush_qp, &self, sgid_index, conn->local_gid, false);
    if (status == STRATA_OK)
        status = stt_ib_qp_to_rts(conn, &conn->flush_qp);
    if (status == STRATA_OK)
        STU_INFO(STU_LOG_NET, "ib: receive comm with %s flushes through loopback QP 0x%x",
                 conn->peer, conn->flush_qp.qp->qp_num);
    return status;
}

strata_status_t stt_ib_conn_connect_qps(stt_ib_conn_t *conn, const stt_ib_meta_t *remote,
                                        int gid_choice, bool quiet)
{
    strata_status_t status;
    const stt_ib_dev_t *d = conn->dev;
    bool alt = gid_choice == STT_IB_GID_ALT;
    const uint8_t *dgid = alt ? remote->alt_gid : remote->gid;
    int sgid_index = alt ? d->alt_index : d->gid_index;

    if (remote->nqps != conn->nqps || remote->link_layer != d->link_layer) {
        STU_WARN("ib: %s offers %u QPs on link layer %u; this end has %d on link layer %u",
                 conn->peer, remote->nqps, remote->link_layer, conn->nqps, d->link_layer);
        return STRATA_ERR_REMOTE;
    }
    if (alt && !d->has_alt) {
        STU_WARN("ib: %s asked for the link-local GID pair, but %s:%d has none", conn->peer,
                 d->ctx->name, d->port);
        return STRATA_ERR_REMOTE;
    }
    for (int i = 0; i < conn->nqps; i++) {
        conn->qps[i].remote_qpn = remote->qpn[i];
        status = stt_ib_qp_to_rtr(conn, &conn->qps[i], remote, sgid_index, dgid, quiet);
        if (status != STRATA_OK)
            return status;
    }
    for (int i = 0; i < conn->nqps; i++) {
        status = stt_ib_qp_to_rts(conn, &conn->qps[i]);
        if (status != STRATA_OK)
            return status;
    }
    memcpy(conn->local_gid, alt ? d->alt_gid : d->gid, 16);
    memcpy(conn->remote_gid, dgid, 16);
    if (conn->flush_qp.qp != NULL) {
        status = conn_flush_qp_connect(conn, sgid_index);
        if (status != STRATA_OK)
            return status;
    }
    conn->remote_addr = remote->addr;
    conn->remote_rkey = remote->rkey;
    if (stu_log_level >= STU_LOG_INFO) {
        char l[STT_IB_GID_STRLEN], r[STT_IB_GID_STRLEN];
        stt_ib_gid_format(conn->local_gid, l, sizeof(l));
        stt_ib_gid_format(conn->remote_gid, r, sizeof(r));
        STU_INFO(STU_LOG_NET, "ib: %s comm %s:%d <-> %s: %d QP(s) from 0x%x to 0x%x, GID %s"
                 " (index %d) -> %s%s, MTU %d, tc %u sl %u",
                 conn->kind == STT_IB_KIND_SEND ? "send" : "receive", d->ctx->name, d->port,
                 conn->peer, conn->nqps, conn->qps[0].qp->qp_num, remote->qpn[0], l, sgid_index,
                 r, alt ? " (link-local fallback)" : "",
                 128 << (remote->mtu < d->mtu ? remote->mtu : d->mtu), conn->tc, conn->sl);
    }
    return STRATA_OK;
}

int stt_ib_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max)
{
    /* The CQs have no completion channel (test() polls them): nothing to block on. */
    return 0;
}
