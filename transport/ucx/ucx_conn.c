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
    stt_ucx_conn_t *conn = arg;

    (void)ep;
    if (conn->head.send || conn->head.closing) {
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "UCX failed the endpoint: %s",
                      stt_ucx_lib.status_string(status));
        return;
    }
    conn->ep_status = status;
    if (!conn->peer_eof) {
        conn->peer_eof = true;
        conn->quiet_since_ns = stu_time_ns();
    }
    STU_INFO(STU_LOG_NET, "ucx: UCX failed the endpoint of the receive comm with %s (%s);"
             " what the peer sent before it went can still be received",
             conn->head.peer, stt_ucx_lib.status_string(status));
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
        bool moved = stt_ucx_lib.worker_progress(conn->worker) != 0;
        now = stu_time_ns();
        if (moved)
            busy_ns = now;
        if (idle_ns != 0 && (now - busy_ns > idle_ns || stt_conn_status(&conn->head) != STRATA_OK))
            break;
    }
    return stt_ucx_lib.request_check_status(req) != UCS_INPROGRESS;
}

strata_status_t stt_ucx_conn_create(bool send, int dev, stt_ucx_worker_t *w, int fd,
                                    const stt_ucx_hello_t *peer_hello, const void *peer_addr,
                                    uint32_t conn_id, const char *peer, stt_comm_t **comm_p)
{
    size_t size = send ? sizeof(stt_ucx_send_t) : sizeof(stt_ucx_recv_t);
    stt_ucx_conn_t *conn = calloc(1, size);
    strata_status_t status;
    ucs_status_t us;

    stt_ucx_lib.worker_release_address(w->worker, w->addr);
    w->addr = NULL;
    if (conn == NULL) {
        STU_WARN("ucx: no memory for a comm with %s (%zu bytes)", peer, size);
        status = STRATA_ERR_NO_MEMORY;
        goto err_close;
    }
    stt_conn_init(&conn->head, &stt_ucx_ops, dev, send, peer);
    conn->fd = fd;
    conn->worker = w->worker;
    conn->conn_id = conn_id;
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = peer_addr,
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = conn_err_cb, .arg = conn},
    };
    us = stt_ucx_lib.ep_create(conn->worker, &params, &conn->ep);
    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_ep_create to %s (worker address of %u bytes): %s", peer,
                 peer_hello->addr_len, stt_ucx_lib.status_string(us));
        status = stt_ucx_status(us);
        goto err_free;
    }
    if (stt_ucx_lib.worker_get_efd(conn->worker, &conn->efd) != UCS_OK)
        conn->efd = -1;                  /* poll_fds then offers nothing */
    if (send) {
        stt_ucx_send_t *sc = (stt_ucx_send_t *)conn;
        stt_slots_bind(&sc->slots, sc->reqs, sizeof(sc->reqs[0]), STT_UCX_SEND_SLOTS,
                       &conn->head.base);
    } else {
        stt_ucx_recv_t *rc = (stt_ucx_recv_t *)conn;
        stt_slots_bind(&rc->slots, rc->reqs, sizeof(rc->reqs[0]), STT_UCX_RECV_SLOTS,
                       &conn->head.base);
    }
    STU_INFO(STU_LOG_NET, "ucx: %s comm with %s ready (connection 0x%08x)",
             stt_conn_kind(&conn->head), peer, conn_id);
    w->worker = NULL;
    *comm_p = &conn->head.base;
    return STRATA_OK;

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
    if (stt_ucx_lib.worker_progress(conn->worker) != 0) {
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

/* Endpoint close in force mode. */
static void conn_ep_close(stt_ucx_conn_t *conn)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags = UCP_EP_CLOSE_FLAG_FORCE,
    };
    void *req = stt_ucx_lib.ep_close_nbx(conn->ep, &param);
    conn_wait(conn, req, STT_UCX_CLOSE_FORCE_NS, 0);
    if (req != NULL && !UCS_PTR_IS_ERR(req))
        stt_ucx_lib.request_free(req);   /* released now, or by UCX when it completes */
}

/* The worker (and its context reference), the socket, the comm. */
static void conn_release(stt_ucx_conn_t *conn)
{
    stt_ucx_worker_t w = {.worker = conn->worker};

    stt_ucx_worker_close(&w);
    close(conn->fd);
    free(conn);
}

/* The end of a send comm's close: endpoint, abandoned requests, worker, socket. */
static void close_send_finish(void *arg)
{
    stt_ucx_send_t *sc = arg;

    conn_ep_close(&sc->conn);
    for (int i = 0; i < STT_UCX_SEND_SLOTS; i++)
        if (sc->reqs[i].slot.state != STT_SLOT_FREE && sc->reqs[i].ucp != NULL)
            stt_ucx_lib.request_free(sc->reqs[i].ucp);
    conn_release(&sc->conn);
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
    stt_netif_t nif;
    ucx_connect_t *cs;
    int fd;

    strata_status_t status = stt_ucx_device_get(dev, &nif);
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
        status = stt_ucx_worker_open(&cs->w, cs->ch.peer);
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
        status = stt_ucx_chan_read(&cs->ch, &done);
        if (status == STRATA_OK && done) {
            if (cs->ch.in.kind != STT_UCX_HELLO_ACCEPT || cs->ch.in.conn_id != cs->conn_id ||
                cs->ch.in.listener_id != cs->listener_id) {
                STU_WARN("ucx: %s answered with a hello for another connection (kind %u,"
                         " connection 0x%08x, listener 0x%016llx)", cs->ch.peer,
                         cs->ch.in.kind, cs->ch.in.conn_id,
                         (unsigned long long)cs->ch.in.listener_id);
                return STRATA_ERR_REMOTE;
            }
            if (!stt_handle_secret_ok(cs->secret, cs->ch.in.secret)) {
                STU_WARN("ucx: %s answered without the handle's secret (not the listener the"
                         " handle names)", cs->ch.peer);
                return STRATA_ERR_REMOTE;
            }
            *ready = true;
        }
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

strata_status_t stt_ucx_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                stt_comm_t **send_p)
{
    return stt_connect_run(&connect_steps, dev, handle, cfg, send_p);
}
