/*
 * Connections of the ib transport: the connect side of the handshake, and
 * what send and receive comms share through their lives: creation (CQ, QPs,
 * the registered control block), the failure bookkeeping, the watch on
 * async events and the side channel, and close. The data path (ib_send.c,
 * ib_recv.c) calls in here; this file never calls it.
 *
 * The control block is one registered allocation per comm:
 *   slots[STT_IB_FIFO_DEPTH]  send comm: the FIFO the receiver writes CTS into;
 *                             receive comm: the CTS source the receiver writes from
 *   sizes[DEPTH][MAX_RECVS]   send comm: the sizes source; receive comm: the sizes
 *                             array the sender writes into
 *
 * connect is a state machine driven by base/connect.h (which keeps the
 * attempt in the caller's handle and enforces STRATA_CONNECT_TIMEOUT):
 *
 *   CONNECTING  non-blocking TCP connect to the listener's side channel
 *   HELLO       the send comm exists (QPs in INIT); writing its metadata
 *   REPLY       reading the receiver's metadata; then QPs to RTR and RTS
 *   READY       writing "ready"; then the send comm is handed out
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/base/connect.h"
#include "transport/base/sock.h"
#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

typedef struct ctl_block {
    stt_ib_fifo_slot_t slots[STT_IB_FIFO_DEPTH];
    uint32_t sizes[STT_IB_FIFO_DEPTH][STT_MAX_RECVS];
    uint64_t flush_sink;
} ctl_block_t;

void stt_ib_conn_wc_fail(stt_ib_conn_t *conn, const struct ibv_wc *wc)
{
    static const char *const kinds[] = {"?", "send (signalled)", "CTS", "receive",
                                        "unsignalled write", "flush read"};
    char l[STT_IB_GID_STRLEN], r[STT_IB_GID_STRLEN];
    int kind = (int)(wc->wr_id & 0xff);

    if (conn->head.failed != STRATA_OK)
        return;                      /* the WRs flushed after the first error */
    int q = (int)((wc->wr_id >> 8) & 0xff);
    int member = (wc->wr_id & 0xff) == STT_IB_WR_FLUSH ? conn->flush_qp.member :
                 q < conn->nqps ? conn->qps[q].member : 0;
    const stt_ib_member_t *m = &conn->m[member];
    stt_ib_count_error(conn, 1u << member, false);
    stt_ib_gid_format(m->local_gid, l, sizeof(l));
    stt_ib_gid_format(m->remote_gid, r, sizeof(r));
    stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "work completion error '%s' (status %d, vendor"
                  " error 0x%x) on a %s work request, opcode %d, %u bytes, QP 0x%x,"
                  " local GID %s, remote GID %s on %s:%d", stt_ib_verbs.wc_status_str(wc->status),
                  (int)wc->status, wc->vendor_err,
                  kind < (int)(sizeof(kinds) / sizeof(kinds[0])) ? kinds[kind] : "?",
                  (int)wc->opcode, wc->byte_len, wc->qp_num, l, r, m->ctx->name, m->dev->port);
}

bool stt_ib_conn_watch(stt_ib_conn_t *conn, bool pending)
{
    int async = __atomic_load_n(&conn->async_err, __ATOMIC_ACQUIRE);

    if (STU_UNLIKELY(async != 0))
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "async event '%s' on one of its QPs or"
                      " its CQ", stt_ib_verbs.event_type_str((enum ibv_event_type)(async - 1)));
    /* A virtual device's member losses are its failover's (ib_failover.c). */
    for (int j = 0; j < conn->nmembers && !stt_ib_conn_vnic(conn); j++)
        if (STU_UNLIKELY(__atomic_load_n(&conn->m[j].ctx->fatal, __ATOMIC_ACQUIRE) !=
                         conn->m[j].dev_fatal))
            stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "device %s reported a fatal error",
                          conn->m[j].ctx->name);
    if (conn->eof_ns != 0 || !pending)
        return conn->eof_ns != 0;
    uint64_t now = stu_time_ns();
    if (now - conn->eof_check_ns < STT_IB_EOF_CHECK_NS)
        return false;
    conn->eof_check_ns = now;
    int err;
    stt_sock_peek_t peek = stt_sock_peek(conn->fd, &err);
    if (peek == STT_SOCK_BYTES && stt_ib_conn_vnic(conn)) {
        conn->fo_check_ns = 0;           /* failover frames: read at once (ib_failover.c) */
    } else if (peek == STT_SOCK_BYTES) {
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "unexpected bytes on the side channel");
    } else if (peek != STT_SOCK_QUIET) {
        STU_INFO(STU_LOG_NET, "ib: side channel to %s %s", conn->head.peer,
                 peek == STT_SOCK_EOF ? "closed by the peer" : strerror(err));
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
    for (int j = 0; j < conn->nmembers; j++) {
        stt_ib_member_t *m = &conn->m[j];
        m->ctl_mr = stt_ib_verbs.reg_mr(m->ctx->pd, conn->ctl, conn->ctl_bytes,
                                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        if (m->ctl_mr == NULL) {
            STU_WARN("ib: %s: registering a control block (%zu bytes): %s", m->ctx->name,
                     conn->ctl_bytes, strerror(errno));
            return STRATA_ERR_IO;
        }
    }
    return STRATA_OK;
}

static void conn_kind_setup(stt_ib_conn_t *conn)
{
    ctl_block_t *ctl = conn->ctl;

    if (conn->head.send) {
        stt_ib_send_t *sc = (stt_ib_send_t *)conn;
        sc->fifo = ctl->slots;
        sc->sizes_src = &ctl->sizes[0][0];
        stt_slots_bind(&sc->slots, sc->reqs, sizeof(sc->reqs[0]), STT_IB_SEND_RING,
                       &conn->head.base);
        int64_t ar = stu_param_int(STU_PARAM_IB_ADAPTIVE_ROUTING);
        sc->ar = ar < 0 ? conn->m[0].dev->link_layer == IBV_LINK_LAYER_INFINIBAND : ar > 0;
        int64_t v = stu_param_int(STU_PARAM_IB_AR_THRESHOLD);
        sc->ar_threshold = v < 0 ? 0 : (uint64_t)v;
        v = stu_param_int(STU_PARAM_IB_SPLIT_MIN);
        sc->split_min = v < 0 ? 0 : (uint64_t)v;
        sc->imm_size_max = stt_ib_conn_vnic(conn) ? STT_IB_IMM_SIZE_MAX_VNIC : STT_IB_IMM_SIZE_MAX;
        for (int s = 0; s < STT_IB_FIFO_DEPTH; s++)
            sc->hist_seq[s] = (uint32_t)s - STT_IB_FIFO_DEPTH;   /* no receive matched yet */
    } else {
        stt_ib_recv_t *rc = (stt_ib_recv_t *)conn;
        rc->cts = ctl->slots;
        rc->sizes = &ctl->sizes[0][0];
        stt_slots_bind(NULL, rc->reqs, sizeof(rc->reqs[0]), STT_IB_FIFO_DEPTH, &conn->head.base);
        stt_slots_bind(&rc->flush_slots, rc->flushes, sizeof(rc->flushes[0]), STT_IB_FIFO_DEPTH,
                       &conn->head.base);
        for (int i = 0; i < STT_IB_FIFO_DEPTH; i++)
            rc->flushes[i].is_flush = 1;
        rc->flush_sink = &ctl->flush_sink;
    }
}

/* Posts the initial receive WRs of every QP of a receive comm. */
static strata_status_t conn_recvs_post(stt_ib_conn_t *conn)
{
    for (int q = 0; q < conn->nqps; q++) {
        int rc = stt_ib_qp_post_recvs(conn, q, STT_IB_RQ_DEPTH);
        if (rc != 0) {
            STU_WARN("ib: ibv_post_recv of %d receive WRs on QP 0x%x for %s: %s",
                     STT_IB_RQ_DEPTH, conn->qps[q].qp->qp_num, conn->head.peer, strerror(rc));
            return STRATA_ERR_IO;
        }
    }
    return STRATA_OK;
}

strata_status_t stt_ib_conn_create(bool send, int dev, int nqps, int fd, const char *peer,
                                   stt_ib_conn_t **conn_p)
{
    strata_status_t status;
    stt_ib_dev_t *d = stt_ib_device_at(dev);
    size_t bytes = send ? sizeof(stt_ib_send_t) : sizeof(stt_ib_recv_t);
    uint32_t sq = send ? STT_IB_SEND_SQ_DEPTH : STT_IB_RECV_SQ_DEPTH;
    uint32_t rq = send ? 1 : STT_IB_RQ_DEPTH;

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
    stt_conn_init(&conn->head, &stt_ib_ops, dev, send, peer);
    conn->dev = d;
    conn->nmembers = d->nmembers;
    conn->head.base.nmembers = d->nmembers;          /* counters: ib_count.c */
    conn->nqps = nqps;
    conn->fd = fd;
    for (int j = 0; j < d->nmembers; j++) {
        conn->m[j].dev = d->member[j];
        conn->m[j].ctx = d->member[j]->ctx;
        conn->m[j].dev_fatal = __atomic_load_n(&d->member[j]->ctx->fatal, __ATOMIC_ACQUIRE);
        conn->m[j].port_downs = stt_ib_port_downs(d->member[j]->ctx, d->member[j]->port);
    }
    for (int i = 0; i < nqps; i++)
        conn->qps[i].member = i % d->nmembers;
    conn->live = (uint8_t)((1u << nqps) - 1);
    int64_t sl = stu_param_int(STU_PARAM_IB_SL);
    conn->sl = (uint8_t)(sl < 0 || sl > 15 ? 0 : sl);

    status = conn_ctl_create(conn);
    if (status != STRATA_OK)
        goto err_destroy;
    bool flush = !send && stt_ib_flush_wanted(d);
    for (int j = 0; j < conn->nmembers; j++) {
        stt_ib_member_t *m = &conn->m[j];
        int mqps = nqps / conn->nmembers;
        int cqe = mqps * (int)(sq + rq) + (flush && j == 0 ? STT_IB_FIFO_DEPTH : 0) + 16;
        if (cqe > m->ctx->attr.max_cqe)
            cqe = m->ctx->attr.max_cqe;
        m->cq = stt_ib_verbs.create_cq(m->ctx->vctx, cqe, conn, NULL, 0);
        if (m->cq == NULL) {
            STU_WARN("ib: %s: ibv_create_cq(%d entries) for %s: %s", m->ctx->name, cqe, peer,
                     strerror(errno));
            status = STRATA_ERR_NO_RESOURCE;
            goto err_destroy;
        }
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
    /* Failures name the device, the port and the first QP after the peer. */
    snprintf(conn->head.where, sizeof(conn->head.where), " on %s%s%d (QP 0x%x)", d->props.name,
             d->nmembers > 1 ? ", first port " : ":", d->port, conn->qps[0].qp->qp_num);
    conn_kind_setup(conn);
    if (!send) {
        status = conn_recvs_post(conn);
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
    int rc = stt_ib_verbs.destroy_qp(q->qp);
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
    for (int j = 0; j < conn->nmembers; j++) {
        stt_ib_member_t *m = &conn->m[j];
        int rc = m->cq != NULL ? stt_ib_verbs.destroy_cq(m->cq) : 0;
        if (rc != 0)
            STU_WARN("ib: %s: ibv_destroy_cq: %s", m->ctx->name, strerror(rc));
        if (m->ctl_mr != NULL)
            stt_ib_verbs.dereg_mr(m->ctl_mr);
    }
    free(conn->ctl);
    if (conn->fd >= 0)
        close(conn->fd);
    free(conn);
}

void stt_ib_conn_meta(const stt_ib_conn_t *conn, int kind, uint64_t listener_id,
                      uint64_t conn_id, stt_ib_meta_t *meta)
{
    ctl_block_t *ctl = conn->ctl;

    memset(meta, 0, sizeof(*meta));
    meta->kind = (uint8_t)kind;
    meta->nqps = (uint8_t)conn->nqps;
    meta->nmembers = (uint8_t)conn->nmembers;
    meta->tc = conn->tc;
    meta->listener_id = listener_id;
    meta->conn_id = conn_id;
    for (int j = 0; j < conn->nmembers; j++) {
        const stt_ib_dev_t *d = conn->m[j].dev;
        stt_ib_meta_port_t *p = &meta->m[j];
        p->link_layer = d->link_layer;
        p->mtu = (uint8_t)d->mtu;
        p->port = (uint8_t)d->port;
        p->has_alt = d->has_alt;
        p->lid = d->lid;
        memcpy(p->gid, d->gid, 16);
        if (d->has_alt)
            memcpy(p->alt_gid, d->alt_gid, 16);
        p->rkey = conn->m[j].ctl_mr->rkey;
    }
    meta->addr = conn->head.send ? (uint64_t)(uintptr_t)ctl->slots
                                 : (uint64_t)(uintptr_t)ctl->sizes;
    for (int i = 0; i < conn->nqps; i++)
        meta->qpn[i] = conn->qps[i].qp->qp_num;
}

/* ------------------------------------------------------------------ close */

void stt_ib_close_send(stt_comm_t *comm)
{
    if (comm == NULL)
        return;                          /* closing nothing is fine */
    stt_ib_send_t *sc = (stt_ib_send_t *)stt_conn_of(comm, &stt_ib_ops, true, "close_send");
    if (sc == NULL)
        return;
    stt_ib_conn_quiesce(&sc->conn);      /* no DMA from a registration released below */
    for (int i = 0; i < STT_IB_SEND_RING; i++) {
        if (sc->reqs[i].slot.state != STT_SLOT_FREE)
            stt_ib_mr_fly_drop(&sc->conn, sc->reqs[i].fly);
        if (sc->reqs[i].wr_cookie != NULL)
            stt_ib_wrev_send_end(&sc->reqs[i]);       /* every start gets its stop */
    }
    stt_ib_conn_destroy(&sc->conn);
}

/* The registrations a receive or flush request still holds. */
static void conn_rreq_unfly(stt_ib_conn_t *conn, stt_ib_rreq_t *req)
{
    if (req->wr_any)
        stt_ib_wrev_recv_end(req);                    /* every start gets its stop */
    if (req->slot.state == STT_SLOT_FREE)
        return;
    for (int i = 0; i < req->slot.n; i++)
        stt_ib_mr_fly_drop(conn, req->fly[i]);
}

void stt_ib_close_recv(stt_comm_t *comm)
{
    if (comm == NULL)
        return;                          /* closing nothing is fine */
    stt_ib_recv_t *rc = (stt_ib_recv_t *)stt_conn_of(comm, &stt_ib_ops, false, "close_recv");
    if (rc == NULL)
        return;
    stt_ib_conn_quiesce(&rc->conn);      /* no DMA into a registration released below */
    for (int i = 0; i < STT_IB_FIFO_DEPTH; i++) {
        conn_rreq_unfly(&rc->conn, &rc->reqs[i]);
        conn_rreq_unfly(&rc->conn, &rc->flushes[i]);  /* a flush read's registration */
    }
    stt_ib_conn_destroy(&rc->conn);
}

/* ------------------------------------------------------------------ connect */

enum { STAGE_CONNECTING, STAGE_HELLO, STAGE_REPLY, STAGE_READY };

typedef struct ib_connect {
    stt_connect_t head;          /* start time, peer */
    int stage;
    int fd;                      /* until the comm owns it */
    stt_ib_conn_t *conn;
    int dev;
    int tc;                      /* from the caller's cfg, or -1 */
    uint64_t conn_id;
    uint32_t done;
    uint8_t buf[STT_IB_META_BYTES];
} ib_connect_t;

static void connect_state_free(stt_connect_t *state)
{
    ib_connect_t *cs = (ib_connect_t *)state;

    if (cs->conn != NULL)
        stt_ib_conn_destroy(cs->conn);
    else if (cs->fd >= 0)
        close(cs->fd);
    free(cs);
}

static strata_status_t connect_start(int dev, const void *hp, const stt_conn_cfg_t *cfg,
                                     stt_connect_t **state_p)
{
    const stt_ib_handle_t *h = hp;
    strata_status_t status;

    if (stt_ib_device_at(dev) == NULL)
        return STRATA_ERR_NOT_FOUND;
    ib_connect_t *cs = calloc(1, sizeof(*cs));
    if (cs == NULL) {
        STU_WARN("ib: no memory for a connect state (%zu bytes)", sizeof(*cs));
        return STRATA_ERR_NO_MEMORY;
    }
    cs->dev = dev;
    cs->tc = cfg != NULL && cfg->traffic_class != STT_TRAFFIC_CLASS_UNDEF ? cfg->traffic_class
                                                                          : -1;
    cs->head.start_ns = stu_time_ns();
    cs->conn_id = stt_netif_random_u64();
    stt_netif_addr_format(&h->addr, cs->head.peer, sizeof(cs->head.peer));
    status = stt_sock_open("ib", h->addr.sa.sa_family, &cs->fd);
    if (status != STRATA_OK) {
        free(cs);
        return status;
    }
    status = stt_sock_connect("ib", cs->fd, &h->addr, cs->head.peer);
    if (status != STRATA_OK) {
        connect_state_free(&cs->head);
        return status;
    }
    cs->stage = STAGE_CONNECTING;
    *state_p = &cs->head;
    return STRATA_OK;
}

int stt_ib_conn_nqps(int nmembers)
{
    int64_t nqps = stu_param_int(STU_PARAM_IB_QPS_PER_CONNECTION);

    nqps = nqps < 1 ? 1 : nqps > STT_IB_MAX_QPS ? STT_IB_MAX_QPS : nqps;
    /* A virtual device: the same number of QPs on each member, at least one. */
    int k = nmembers < 1 ? 1 : nmembers;
    int64_t per = nqps / k < 1 ? 1 : nqps / k;
    return (int)(per * k);
}

/* The socket is connected: make the send comm and its HELLO. */
static strata_status_t connect_made(ib_connect_t *cs, const stt_ib_handle_t *h)
{
    strata_status_t status;
    stt_ib_meta_t hello;
    int64_t tc = stu_param_int(STU_PARAM_IB_TC);
    int nqps = stt_ib_conn_nqps(stt_ib_device_at(cs->dev)->nmembers);

    status = stt_ib_conn_create(true, cs->dev, nqps, cs->fd, cs->head.peer, &cs->conn);
    cs->fd = -1;                                 /* the comm owns it, even on failure */
    if (status != STRATA_OK)
        return status;
    cs->conn->tc = (uint8_t)(tc >= 0 && tc <= 255 ? tc : cs->tc >= 0 ? cs->tc : 0);
    stt_ib_conn_meta(cs->conn, STT_IB_META_HELLO, h->listener_id, cs->conn_id, &hello);
    memcpy(hello.secret, h->secret, sizeof(hello.secret));
    stt_ib_meta_encode(&hello, cs->buf);
    cs->done = 0;
    cs->stage = STAGE_HELLO;
    return STRATA_OK;
}

static strata_status_t connect_poll(ib_connect_t *cs, const stt_ib_handle_t *h)
{
    strata_status_t status = stt_sock_connected("ib", cs->fd, cs->head.peer);

    return status == STRATA_OK ? connect_made(cs, h) : status;
}

static strata_status_t connect_reply_done(ib_connect_t *cs, const stt_ib_handle_t *h)
{
    strata_status_t status;
    stt_ib_meta_t reply, ready;
    const char *why = NULL;

    if (stt_ib_meta_decode(cs->buf, STT_IB_META_REPLY, &reply, &why) != STRATA_OK) {
        STU_WARN("ib: bad connection reply from %s: %s", cs->head.peer, why);
        return STRATA_ERR_REMOTE;
    }
    if (reply.conn_id != cs->conn_id || reply.listener_id != h->listener_id) {
        STU_WARN("ib: the reply from %s is for another connection (%016llx, ours %016llx)",
                 cs->head.peer, (unsigned long long)reply.conn_id, (unsigned long long)cs->conn_id);
        return STRATA_ERR_REMOTE;
    }
    if (!stt_handle_secret_ok(h->secret, reply.secret)) {
        STU_WARN("ib: the reply from %s does not carry the handle's secret (not the listener"
                 " the handle names)", cs->head.peer);
        return STRATA_ERR_REMOTE;
    }
    status = stt_ib_qp_connect(cs->conn, &reply, reply.gid_choice, false);
    if (status != STRATA_OK)
        return status;
    memset(&ready, 0, sizeof(ready));
    ready.kind = STT_IB_META_READY;
    ready.listener_id = h->listener_id;
    ready.conn_id = cs->conn_id;
    stt_ib_meta_encode(&ready, cs->buf);
    cs->done = 0;
    cs->stage = STAGE_READY;
    return STRATA_OK;
}

static strata_status_t connect_advance(ib_connect_t *cs, const stt_ib_handle_t *h)
{
    strata_status_t status = STRATA_OK;

    if (cs->stage == STAGE_CONNECTING) {
        status = connect_poll(cs, h);
        if (status != STRATA_OK)
            return status;
    }
    if (cs->stage == STAGE_HELLO) {
        status = stt_sock_xfer("ib", cs->conn->fd, true, cs->buf, STT_IB_META_BYTES, &cs->done,
                               "the connection hello", cs->head.peer);
        if (status != STRATA_OK)
            return status;
        cs->done = 0;
        cs->stage = STAGE_REPLY;
    }
    if (cs->stage == STAGE_REPLY) {
        status = stt_sock_xfer("ib", cs->conn->fd, false, cs->buf, STT_IB_META_BYTES, &cs->done,
                               "the connection reply (a listener closes a hello without its"
                               " handle's id and secret, a stale handle, or one that came"
                               " late while others waited)", cs->head.peer);
        if (status != STRATA_OK)
            return status;
        status = connect_reply_done(cs, h);
        if (status != STRATA_OK)
            return status;
    }
    return stt_sock_xfer("ib", cs->conn->fd, true, cs->buf, STT_IB_META_BYTES, &cs->done,
                         "the ready message", cs->head.peer);
}

/* The handshake's next steps; once "ready" is out, the send comm is handed out. */
static strata_status_t connect_step(stt_connect_t *state, int dev, const void *h,
                                    stt_comm_t **send_p)
{
    ib_connect_t *cs = (ib_connect_t *)state;
    strata_status_t status = connect_advance(cs, h);

    if (status != STRATA_OK)
        return status;
    STU_INFO(STU_LOG_NET, "ib: connected to %s", cs->head.peer);
    *send_p = &cs->conn->head.base;
    cs->conn = NULL;                     /* the caller's now */
    return STRATA_OK;
}

static const stt_connect_steps_t connect_steps = {
    .who = "ib",
    .hint = " (the listener is not calling accept, or its host is unreachable)",
    .magic = STT_IB_HANDLE_MAGIC,
    .version = STT_IB_PROTO_VERSION,
    .start = connect_start,
    .step = connect_step,
    .free = connect_state_free,
};

void stt_ib_connect_abandon(void *handle)
{
    stt_connect_abandon_run(&connect_steps, handle);
}

strata_status_t stt_ib_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                               stt_comm_t **send_p)
{
    return stt_connect_run(&connect_steps, dev, handle, cfg, send_p);
}
