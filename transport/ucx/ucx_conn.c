/*
 * Connections of the UCX transport: the connect side of the handshake, and
 * the comms' lifecycle (create, progress and liveness, close). Requests are
 * posted and tested in ucx_send.c and ucx_recv.c, which call in here; this
 * file never calls them.
 *
 * connect is a state machine driven by base/connect.h (which keeps the
 * attempt in the caller's handle and enforces STRATA_CONNECT_TIMEOUT):
 *
 *   CONNECTING (non-blocking TCP connect to the listener's side channel)
 *   -> HELLO (our worker is open; writing hello + worker address)
 *   -> REPLY (reading the acceptor's hello + worker address)
 *   -> the send comm: endpoint to the acceptor's worker, socket kept.
 *
 * Each comm owns a worker (UCS_THREAD_MODE_SERIALIZED: one thread at a time,
 * the contract's rule for a comm) and one endpoint to the peer's worker,
 * created with UCP_ERR_HANDLING_MODE_PEER so UCX fails it when it sees the
 * peer go (conn_err_cb: a send comm fails at once, a receive comm after a
 * grace). Both ends create one: the receive side never sends on its
 * endpoint, but holding it makes UCX watch the peer from that side too.
 *
 * UCX alone does not see every way a peer goes away: a peer in the same
 * process (or one whose shared-memory transport stays mapped) that closes
 * its comm leaves nothing UCX would notice. The side-channel socket from the
 * handshake stays open for the comm's life, and the peer's close, exit or
 * crash closes it; an idle test() peeks at it now and then
 * (STT_UCX_LIVENESS_EVERY).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/base/connect.h"
#include "transport/base/sock.h"
#include "transport/ucx/ucx_internal.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

_Static_assert(STT_UCX_HANDLE_BYTES <= STT_CONNSLOT_OFFSET,
               "the UCX handle must end before the connect slot");

/* ------------------------------------------------------------------ comms */

/*
 * UCX's error callback, run from ucp_worker_progress in the thread that
 * progresses the worker. A send comm fails at once: nothing it sends can
 * arrive. For a receive comm the peer's worker going (its close, exit or
 * crash: UCX's tcp transport reports all of them as UCS_ERR_ENDPOINT_TIMEOUT)
 * is the side channel's EOF seen sooner: what the peer sent before it went
 * is already in UCX, read in order before the disconnect, and receives may
 * still take it, so the comm fails only once its worker stays idle for
 * STT_UCX_EOF_GRACE_NS with a request pending (stt_ucx_conn_pending).
 */
static void conn_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    stt_ucx_lane_t *lane = arg;
    stt_ucx_conn_t *conn = lane->conn;

    (void)ep;
    if (conn->nlanes > 1 && conn->head.failed == STRATA_OK && !conn->head.closing) {
        stt_member_add(&conn->head.base.members[lane->idx].errors, 1);
        if (conn->head.send)
            STU_WARN("ucx: send comm with %s: virtual NIC member %d of %d lost (%s); no"
                     " failover on ucx, the comm fails", conn->head.peer, lane->idx,
                     conn->nlanes, stt_ucx_lib.status_string(status));
    }
    if (conn->head.send || conn->head.closing) {
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "UCX failed the endpoint%s: %s",
                      conn->nlanes > 1 ? " of a member" : "", stt_ucx_lib.status_string(status));
        return;
    }
    conn->ep_status = status;
    if (!conn->peer_eof) {
        conn->peer_eof = true;
        conn->quiet_since_ns = stu_time_ns();
    }
    STU_INFO(STU_LOG_NET, "ucx: UCX failed the endpoint (lane %d of %d) of the receive comm"
             " with %s (%s); what the peer sent before it went can still be received",
             lane->idx, conn->nlanes, conn->head.peer, stt_ucx_lib.status_string(status));
}

/*
 * Progresses until the UCP request completes, budget_ns passes, or (idle_ns
 * nonzero) the worker made no progress for idle_ns or the peer is gone.
 * True when the request completed (or there was none).
 */
static bool conn_wait(stt_ucx_conn_t *conn, void *req, uint64_t budget_ns, uint64_t idle_ns)
{
    uint64_t now = stu_time_ns(), deadline = now + budget_ns, busy_ns = now;

    if (req == NULL || UCS_PTR_IS_ERR(req))
        return true;
    while (stt_ucx_lib.request_check_status(req) == UCS_INPROGRESS && now < deadline) {
        bool moved = stt_ucx_conn_progress_lanes(conn) != 0;
        now = stu_time_ns();
        if (moved)
            busy_ns = now;
        if (idle_ns != 0 && (now - busy_ns > idle_ns || stt_conn_status(&conn->head) != STRATA_OK))
            break;
    }
    return stt_ucx_lib.request_check_status(req) != UCS_INPROGRESS;
}

unsigned stt_ucx_conn_progress_lanes(stt_ucx_conn_t *conn)
{
    unsigned events = 0;

    for (int i = 0; i < conn->nlanes; i++)
        events += stt_ucx_lib.worker_progress(conn->lane[i].worker);
    return events;
}

/* Lane i: its endpoint to the peer's worker of the same member. */
static strata_status_t conn_lane_open(stt_ucx_conn_t *conn, int i, const uint8_t *addr,
                                      uint32_t len)
{
    stt_ucx_lane_t *lane = &conn->lane[i];
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = (const ucp_address_t *)addr,
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = conn_err_cb, .arg = lane},
    };
    ucs_status_t us = stt_ucx_lib.ep_create(lane->worker, &params, &lane->ep);

    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_ep_create to %s (lane %d, worker address of %u bytes): %s",
                 conn->head.peer, i, len, stt_ucx_lib.status_string(us));
        lane->ep = NULL;
        return stt_ucx_status(us);
    }
    if (stt_ucx_lib.worker_get_efd(lane->worker, &lane->efd) != UCS_OK)
        lane->efd = -1;                  /* poll_fds then offers nothing */
    return STRATA_OK;
}

/* Endpoints of lanes [0, n), force-closed. */
static void conn_eps_close(stt_ucx_conn_t *conn, int n);

strata_status_t stt_ucx_conn_create(bool send, int dev, stt_ucx_worker_t *w, int fd,
                                    const stt_ucx_hello_t *peer_hello, const void *peer_addr,
                                    uint32_t conn_id, const char *peer, stt_comm_t **comm_p)
{
    size_t size = send ? sizeof(stt_ucx_send_t) : sizeof(stt_ucx_recv_t);
    stt_ucx_conn_t *conn = calloc(1, size);
    const uint8_t *addr[STT_MAX_VDEV_MEMBERS];
    uint32_t addr_len[STT_MAX_VDEV_MEMBERS];
    strata_status_t status;
    int i = 0;

    free(w->addr);
    w->addr = NULL;
    if (conn == NULL) {
        STU_WARN("ucx: no memory for a comm with %s (%zu bytes)", peer, size);
        status = STRATA_ERR_NO_MEMORY;
        goto err_close;
    }
    stt_conn_init(&conn->head, &stt_ucx_ops, dev, send, peer);
    status = stt_ucx_addrs_get(peer_addr, peer_hello->addr_len, w->n, peer, addr, addr_len);
    if (status != STRATA_OK)
        goto err_free;
    conn->fd = fd;
    conn->conn_id = conn_id;
    conn->nlanes = w->n;
    conn->stripe_min = (uint32_t)stu_param_int(STU_PARAM_SOCKET_STRIPE_MIN);
    for (i = 0; i < w->n; i++) {
        conn->lane[i] = (stt_ucx_lane_t){.conn = conn, .idx = i, .worker = w->lane[i],
                                         .efd = -1};
        conn->ctx_slot[i] = w->ctx_slot[i];
    }
    for (i = 0; i < w->n; i++)
        if ((status = conn_lane_open(conn, i, addr[i], addr_len[i])) != STRATA_OK)
            goto err_eps;
    conn->worker = conn->lane[0].worker;
    conn->ep = conn->lane[0].ep;
    conn->efd = conn->lane[0].efd;
    conn->head.base.nmembers = w->n > 1 ? w->n : 0;
    if (send) {
        stt_ucx_send_t *sc = (stt_ucx_send_t *)conn;
        stt_slots_bind(&sc->slots, sc->reqs, sizeof(sc->reqs[0]), STT_UCX_SEND_SLOTS,
                       &conn->head.base);
    } else {
        stt_ucx_recv_t *rc = (stt_ucx_recv_t *)conn;
        stt_slots_bind(&rc->slots, rc->reqs, sizeof(rc->reqs[0]), STT_UCX_RECV_SLOTS,
                       &conn->head.base);
    }
    STU_INFO(STU_LOG_NET, "ucx: %s comm with %s ready (connection 0x%08x, %d lane(s))",
             stt_conn_kind(&conn->head), peer, conn_id, conn->nlanes);
    memset(w, 0, sizeof(*w));            /* the comm owns the workers now */
    *comm_p = &conn->head.base;
    return STRATA_OK;

err_eps:
    conn->head.closing = true;
    conn_eps_close(conn, i);
err_free:
    free(conn);
err_close:
    stt_ucx_worker_close(w);
    close(fd);
    return status;
}

/* The side channel after the handshake: the peer never writes, so readable means gone. */
void stt_ucx_conn_check_peer(stt_ucx_conn_t *conn)
{
    int err;

    switch (stt_sock_peek(conn->fd, &err)) {
    case STT_SOCK_QUIET:
        break;
    case STT_SOCK_EOF:
        conn->peer_eof = true;
        conn->quiet_since_ns = stu_time_ns();
        STU_INFO(STU_LOG_NET, "ucx: %s closed its end of connection 0x%08x", conn->head.peer,
                 conn->conn_id);
        break;
    case STT_SOCK_BYTES:
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "unexpected bytes on the side channel");
        break;
    case STT_SOCK_ERROR:
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "side channel: %s", strerror(err));
        break;
    }
}

strata_status_t stt_ucx_conn_progress(stt_ucx_conn_t *conn)
{
    if (stt_ucx_conn_progress_lanes(conn) != 0) {
        conn->idle = 0;
        if (conn->peer_eof)
            conn->quiet_since_ns = stu_time_ns();
        return stt_conn_status(&conn->head);
    }
    if (conn->head.failed == STRATA_OK && !conn->peer_eof &&
        ++conn->idle >= STT_UCX_LIVENESS_EVERY) {
        conn->idle = 0;
        stt_ucx_conn_check_peer(conn);
    }
    return conn->head.failed;
}

strata_status_t stt_ucx_conn_pending(stt_ucx_conn_t *conn)
{
    if (conn->head.failed == STRATA_OK && conn->peer_eof &&
        stu_time_ns() - conn->quiet_since_ns > STT_UCX_EOF_GRACE_NS)
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "the peer closed the connection%s%s",
                      conn->ep_status != UCS_OK ? "; UCX failed the endpoint: " : "",
                      conn->ep_status != UCS_OK ? stt_ucx_lib.status_string(conn->ep_status) : "");
    return conn->head.failed;
}

static void conn_eps_close(stt_ucx_conn_t *conn, int n)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags = UCP_EP_CLOSE_FLAG_FORCE,
    };

    for (int i = 0; i < n; i++) {
        if (conn->lane[i].ep == NULL)
            continue;
        void *req = stt_ucx_lib.ep_close_nbx(conn->lane[i].ep, &param);
        conn_wait(conn, req, STT_UCX_CLOSE_FORCE_NS, 0);
        if (req != NULL && !UCS_PTR_IS_ERR(req))
            stt_ucx_lib.request_free(req);   /* released now, or by UCX when it completes */
        conn->lane[i].ep = NULL;
    }
}

/* Endpoint close in force mode, every lane. */
static void conn_ep_close(stt_ucx_conn_t *conn)
{
    conn_eps_close(conn, conn->nlanes);
}

/* The workers (and their context references), the socket, the comm. */
static void conn_release(stt_ucx_conn_t *conn)
{
    stt_ucx_worker_t w = {.worker = conn->worker, .n = conn->nlanes};

    for (int i = 0; i < conn->nlanes; i++) {
        w.lane[i] = conn->lane[i].worker;
        w.ctx_slot[i] = conn->ctx_slot[i];
    }
    stt_ucx_worker_close(&w);
    close(conn->fd);
    free(conn);
}

/* The end of a send comm's close: endpoint, abandoned requests, worker, socket. */
static void close_send_finish(void *arg)
{
    stt_ucx_send_t *sc = arg;

    conn_ep_close(&sc->conn);
    for (int i = 0; i < STT_UCX_SEND_SLOTS; i++) {
        if (sc->reqs[i].slot.state == STT_SLOT_FREE)
            continue;
        if (sc->reqs[i].ucp != NULL)
            stt_ucx_lib.request_free(sc->reqs[i].ucp);
        stt_ucx_vnic_send_abandon(&sc->reqs[i]);
    }
    conn_release(&sc->conn);
}

/*
 * A virtual device's lanes other than lane 0 are flushed inline, while the
 * workers make progress (at most STT_UCX_CLOSE_FLUSH_NS, giving up after
 * STT_UCX_VNIC_CLOSE_IDLE_NS without any); lane 0 then takes the path of a
 * plain comm, lingering if it must.
 */
static void close_send_lanes(stt_ucx_conn_t *conn)
{
    ucp_request_param_t param = {.op_attr_mask = 0};

    for (int i = 1; i < conn->nlanes; i++) {
        void *flush = stt_ucx_lib.ep_flush_nbx(conn->lane[i].ep, &param);
        conn_wait(conn, flush, STT_UCX_CLOSE_FLUSH_NS, STT_UCX_VNIC_CLOSE_IDLE_NS);
        if (flush != NULL && !UCS_PTR_IS_ERR(flush))
            stt_ucx_lib.request_free(flush);
    }
}

void stt_ucx_close_send(stt_comm_t *comm)
{
    if (comm == NULL)
        return;                          /* closing nothing is fine */
    stt_ucx_send_t *sc = (stt_ucx_send_t *)stt_conn_of(comm, &stt_ucx_ops, true, "close_send");
    if (sc == NULL)
        return;
    stt_ucx_conn_t *conn = &sc->conn;
    conn->head.closing = true;
    /*
     * A send is complete when its buffer may be reused, not when the peer has
     * it (an eager message may still sit in UCX's queues): with nothing
     * abandoned, flush before the force close so completed sends arrive. A
     * flush still waiting for the peer after the inline wait finishes in the
     * background (ucx_linger.c).
     */
    if (stt_slots_idle(&sc->slots) && conn->head.failed == STRATA_OK && !conn->peer_eof) {
        ucp_request_param_t param = {.op_attr_mask = 0};
        close_send_lanes(conn);
        void *flush = stt_ucx_lib.ep_flush_nbx(conn->ep, &param);
        if (!conn_wait(conn, flush, STT_UCX_CLOSE_FLUSH_NS, STT_UCX_CLOSE_IDLE_NS) &&
            conn->head.failed == STRATA_OK &&
            stt_ucx_linger_add(conn->conn_id, conn->worker, flush, conn->fd, conn->head.peer,
                               close_send_finish, sc) == STRATA_OK)
            return;
        if (flush != NULL && !UCS_PTR_IS_ERR(flush))
            stt_ucx_lib.request_free(flush);
    }
    close_send_finish(sc);
}

void stt_ucx_close_recv(stt_comm_t *comm)
{
    if (comm == NULL)
        return;                          /* closing nothing is fine */
    stt_ucx_recv_t *rc = (stt_ucx_recv_t *)stt_conn_of(comm, &stt_ucx_ops, false, "close_recv");
    if (rc == NULL)
        return;
    rc->conn.head.closing = true;
    for (int i = 0; i < STT_UCX_RECV_SLOTS; i++) {
        stt_ucx_rreq_t *req = &rc->reqs[i];
        if (req->slot.state == STT_SLOT_FREE)
            continue;
        if (rc->conn.nlanes > 1) {
            stt_ucx_vnic_recv_abandon(rc, req);
            continue;
        }
        for (int k = 0; k < req->slot.n; k++) {
            if (req->ucp[k] == NULL)
                continue;
            stt_ucx_lib.request_cancel(rc->conn.worker, req->ucp[k]);
            stt_ucx_lib.request_free(req->ucp[k]);
        }
    }
    conn_ep_close(&rc->conn);
    stt_ucx_linger_cancel(rc->conn.conn_id);
    conn_release(&rc->conn);
}

/* ------------------------------------------------------------------ connect */

enum { CONNECTING, HELLO, REPLY };

typedef struct ucx_connect {
    stt_connect_t head;      /* start time, peer */
    int stage;
    uint32_t conn_id;
    uint64_t listener_id;
    uint8_t secret[STT_HANDLE_SECRET_BYTES];
    stt_ucx_chan_t ch;
    stt_ucx_worker_t w;      /* open from HELLO on */
    stt_ucx_dev_t dev;
} ucx_connect_t;

static strata_status_t connect_decode(const void *handle, void *h, uint64_t *listener_id_p)
{
    strata_status_t status = stt_ucx_handle_decode(handle, h);

    *listener_id_p = ((const stt_ucx_handle_t *)h)->listener_id;
    return status;
}

static void connect_free(stt_connect_t *state)
{
    ucx_connect_t *cs = (ucx_connect_t *)state;

    if (cs->w.worker != NULL)
        stt_ucx_worker_close(&cs->w);
    stt_ucx_chan_fini(&cs->ch, false);
    free(cs);
}

static strata_status_t connect_start(int dev, const void *hp, const stt_conn_cfg_t *cfg,
                                     stt_connect_t **state_p)
{
    const stt_ucx_handle_t *h = hp;
    char peer[STT_NETIF_ADDR_STRLEN];
    stt_ucx_dev_t d;
    ucx_connect_t *cs;
    int fd;

    strata_status_t status = stt_ucx_device_get(dev, &d);
    if (status != STRATA_OK)
        return status;
    stt_netif_addr_format(&h->addr, peer, sizeof(peer));
    status = stt_sock_open("ucx", h->addr.sa.sa_family, &fd);
    if (status != STRATA_OK)
        return status;
    status = stt_sock_connect("ucx", fd, &h->addr, peer);
    if (status != STRATA_OK) {
        close(fd);
        return status;
    }
    cs = calloc(1, sizeof(*cs));
    if (cs == NULL) {
        STU_WARN("ucx: no memory to connect to %s", peer);
        close(fd);
        return STRATA_ERR_NO_MEMORY;
    }
    stt_ucx_chan_init(&cs->ch, fd, peer);
    cs->head.start_ns = cs->ch.start_ns;
    memcpy(cs->head.peer, cs->ch.peer, sizeof(cs->head.peer));
    cs->stage = CONNECTING;
    cs->listener_id = h->listener_id;
    memcpy(cs->secret, h->secret, sizeof(cs->secret));
    cs->conn_id = (uint32_t)stt_netif_random_u64();
    cs->dev = d;
    *state_p = &cs->head;
    return STRATA_OK;
}

/* CONNECTING -> HELLO once the socket is connected. */
static strata_status_t connect_poll(ucx_connect_t *cs)
{
    strata_status_t status = stt_sock_connected("ucx", cs->ch.fd, cs->ch.peer);

    if (status == STRATA_INPROGRESS)
        return STRATA_OK;
    if (status == STRATA_OK)
        status = stt_ucx_worker_open(&cs->w, &cs->dev, cs->ch.peer);
    if (status != STRATA_OK)
        return status;
    stt_ucx_hello_t hello = {
        .kind = STT_UCX_HELLO_CONNECT,
        .listener_id = cs->listener_id,
        .conn_id = cs->conn_id,
        .addr_len = (uint32_t)cs->w.addr_len,
    };
    memcpy(hello.secret, cs->secret, sizeof(hello.secret));
    status = stt_ucx_chan_set_hello(&cs->ch, &hello, cs->w.addr);
    if (status == STRATA_OK)
        cs->stage = HELLO;
    return status;
}

static strata_status_t connect_advance(ucx_connect_t *cs, bool *ready)
{
    strata_status_t status = STRATA_OK;
    bool done = false;

    *ready = false;
    if (cs->stage == CONNECTING)
        status = connect_poll(cs);
    if (status == STRATA_OK && cs->stage == HELLO) {
        status = stt_ucx_chan_write(&cs->ch, &done);
        if (status == STRATA_OK && done)
            cs->stage = REPLY;
    }
    if (status == STRATA_OK && cs->stage == REPLY) {
        stt_ucx_hello_t expect = {.kind = STT_UCX_HELLO_ACCEPT, .listener_id = cs->listener_id,
                                  .conn_id = cs->conn_id};
        memcpy(expect.secret, cs->secret, sizeof(expect.secret));
        status = stt_ucx_chan_read(&cs->ch, &expect, &done);
        *ready = status == STRATA_OK && done;
    }
    return status;
}

/* The handshake's next steps; once the reply is in, the send comm takes socket and worker. */
static strata_status_t connect_step(stt_connect_t *state, int dev, const void *h,
                                    stt_comm_t **send_p)
{
    ucx_connect_t *cs = (ucx_connect_t *)state;
    bool ready = false;
    strata_status_t status = connect_advance(cs, &ready);

    if (status != STRATA_OK)
        return status;
    if (!ready)
        return STRATA_INPROGRESS;
    stt_ucx_hello_t in = cs->ch.in;
    status = stt_ucx_conn_create(true, dev, &cs->w, cs->ch.fd, &in, cs->ch.in_addr, cs->conn_id,
                                 cs->ch.peer, send_p);
    stt_ucx_chan_fini(&cs->ch, true);    /* the comm owns the socket and the worker now */
    return status;
}

static const stt_connect_steps_t connect_steps = {
    .who = "ucx",
    .hint = "",
    .decode = connect_decode,
    .start = connect_start,
    .step = connect_step,
    .free = connect_free,
};

void stt_ucx_connect_abandon(void *handle)
{
    stt_connect_abandon_run(&connect_steps, handle);
}

strata_status_t stt_ucx_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                stt_comm_t **send_p)
{
    return stt_connect_run(&connect_steps, dev, handle, cfg, send_p);
}
