/*
 * Comms of the UCX transport: workers, endpoints, failure, progress and
 * close. The request calls are in ucx_send.c and ucx_recv.c.
 *
 * Each comm owns a worker (UCS_THREAD_MODE_SERIALIZED: one thread at a time,
 * the contract's rule for a comm) and one endpoint to the peer's worker,
 * created with UCP_ERR_HANDLING_MODE_PEER so UCX fails it (and our comm,
 * through conn_err_cb) when it sees the peer go. Both ends create one: the
 * receive side never sends on its endpoint, but holding it makes UCX watch
 * the peer from that side too.
 *
 * UCX alone does not see every way a peer goes away: a peer in the same
 * process (or one whose shared-memory transport stays mapped) that closes
 * its comm leaves nothing UCX would notice. The side-channel socket from the
 * handshake stays open for the comm's life, and the peer's close, exit or
 * crash closes it; an idle test() peeks at it now and then
 * (STT_UCX_LIVENESS_EVERY).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/ucx/ucx_internal.h"
#include "util/log.h"
#include "util/time.h"

void stt_ucx_conn_fail(stt_ucx_conn_t *conn, strata_status_t status, const char *fmt, ...)
{
    char why[512];
    va_list ap;

    if (conn->failed != STRATA_OK)
        return;
    __atomic_store_n(&conn->failed, status, __ATOMIC_RELEASE);
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (conn->closing)
        STU_INFO(STU_LOG_NET, "ucx: %s comm with %s failed while closing (%s): %s",
                 conn->kind == STT_UCX_KIND_SEND ? "send" : "receive", conn->peer,
                 strata_status_str(status), why);
    else
        STU_WARN("ucx: %s comm with %s failed (%s): %s",
                 conn->kind == STT_UCX_KIND_SEND ? "send" : "receive", conn->peer,
                 strata_status_str(status), why);
}

/* UCX's error callback, run from ucp_worker_progress in the comm's thread. */
static void conn_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    stt_ucx_conn_t *conn = arg;
    stt_ucx_conn_fail(conn, STRATA_ERR_REMOTE, "UCX failed the endpoint: %s",
                      ucs_status_string(status));
}

strata_status_t stt_ucx_worker_open(stt_ucx_worker_t *w, const char *peer)
{
    ucp_context_h ctx;
    ucs_status_t us;
    strata_status_t status;
    ucp_worker_params_t params = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SERIALIZED,
    };

    memset(w, 0, sizeof(*w));
    status = stt_ucx_context_get(&ctx);
    if (status != STRATA_OK)
        return status;
    us = ucp_worker_create(ctx, &params, &w->worker);
    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_worker_create for the connection with %s: %s", peer,
                 ucs_status_string(us));
        status = stt_ucx_status(us);
        goto err_put;
    }
    us = ucp_worker_get_address(w->worker, &w->addr, &w->addr_len);
    if (us != UCS_OK || w->addr_len == 0 || w->addr_len > STT_UCX_MAX_ADDR_BYTES) {
        STU_WARN("ucx: ucp_worker_get_address for the connection with %s: %s (%zu bytes,"
                 " limit %u)", peer, ucs_status_string(us), w->addr_len, STT_UCX_MAX_ADDR_BYTES);
        status = us != UCS_OK ? stt_ucx_status(us) : STRATA_ERR_INVALID;
        goto err_destroy;
    }
    return STRATA_OK;

err_destroy:
    if (us == UCS_OK)
        ucp_worker_release_address(w->worker, w->addr);
    ucp_worker_destroy(w->worker);
    w->worker = NULL;
err_put:
    stt_ucx_context_put();
    return status;
}

void stt_ucx_worker_close(stt_ucx_worker_t *w)
{
    if (w->addr != NULL)
        ucp_worker_release_address(w->worker, w->addr);
    ucp_worker_destroy(w->worker);
    stt_ucx_context_put();
    memset(w, 0, sizeof(*w));
}

/*
 * Progresses until the UCP request completes, budget_ns passes, or (idle_ns
 * nonzero) the worker made no progress for idle_ns or the peer is gone;
 * then frees the request.
 */
static void conn_wait_free(stt_ucx_conn_t *conn, void *req, uint64_t budget_ns,
                           uint64_t idle_ns)
{
    uint64_t now = stu_time_ns(), deadline = now + budget_ns, busy_ns = now;

    if (req == NULL || UCS_PTR_IS_ERR(req))
        return;
    while (ucp_request_check_status(req) == UCS_INPROGRESS && now < deadline) {
        bool moved = ucp_worker_progress(conn->worker) != 0;
        now = stu_time_ns();
        if (moved)
            busy_ns = now;
        if (idle_ns != 0 && (now - busy_ns > idle_ns || conn->failed != STRATA_OK))
            break;
    }
    ucp_request_free(req);   /* released now, or by UCX when it completes */
}

strata_status_t stt_ucx_conn_create(stt_ucx_kind_t kind, int dev, stt_ucx_worker_t *w, int fd,
                                    const stt_ucx_hello_t *peer_hello, const void *peer_addr,
                                    uint32_t conn_id, const char *peer, stt_comm_t **comm_p)
{
    size_t size = kind == STT_UCX_KIND_SEND ? sizeof(stt_ucx_send_t) : sizeof(stt_ucx_recv_t);
    stt_ucx_conn_t *conn = calloc(1, size);
    strata_status_t status;
    ucs_status_t us;

    ucp_worker_release_address(w->worker, w->addr);
    w->addr = NULL;
    if (conn == NULL) {
        STU_WARN("ucx: no memory for a comm with %s (%zu bytes)", peer, size);
        status = STRATA_ERR_NO_MEMORY;
        goto err_close;
    }
    conn->base.ops = &stt_ucx_ops;
    conn->base.dev = dev;
    conn->kind = kind;
    conn->fd = fd;
    conn->worker = w->worker;
    conn->conn_id = conn_id;
    snprintf(conn->peer, sizeof(conn->peer), "%s", peer);
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = peer_addr,
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = conn_err_cb, .arg = conn},
    };
    us = ucp_ep_create(conn->worker, &params, &conn->ep);
    if (us != UCS_OK) {
        STU_WARN("ucx: ucp_ep_create to %s (worker address of %u bytes): %s", peer,
                 peer_hello->addr_len, ucs_status_string(us));
        status = stt_ucx_status(us);
        goto err_free;
    }
    if (ucp_worker_get_efd(conn->worker, &conn->efd) != UCS_OK)
        conn->efd = -1;                  /* poll_fds then offers nothing */
    if (kind == STT_UCX_KIND_SEND) {
        stt_ucx_send_t *sc = (stt_ucx_send_t *)conn;
        for (int i = 0; i < STT_UCX_SEND_SLOTS; i++) {
            sc->reqs[i].base.comm = &conn->base;
            sc->free_slots[i] = (uint16_t)(STT_UCX_SEND_SLOTS - 1 - i);
        }
        sc->nfree = STT_UCX_SEND_SLOTS;
    } else {
        stt_ucx_recv_t *rc = (stt_ucx_recv_t *)conn;
        for (int i = 0; i < STT_UCX_RECV_SLOTS; i++) {
            rc->reqs[i].base.comm = &conn->base;
            rc->free_slots[i] = (uint16_t)(STT_UCX_RECV_SLOTS - 1 - i);
        }
        rc->nfree = STT_UCX_RECV_SLOTS;
    }
    STU_INFO(STU_LOG_NET, "ucx: %s comm with %s ready (connection 0x%08x)",
             kind == STT_UCX_KIND_SEND ? "send" : "receive", peer, conn_id);
    w->worker = NULL;
    *comm_p = &conn->base;
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
    char b;
    ssize_t r = recv(conn->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

    if (r == 0) {
        conn->peer_eof = true;
        conn->quiet_since_ns = stu_time_ns();
        STU_INFO(STU_LOG_NET, "ucx: %s closed its end of connection 0x%08x", conn->peer,
                 conn->conn_id);
    } else if (r > 0) {
        stt_ucx_conn_fail(conn, STRATA_ERR_REMOTE, "unexpected bytes on the side channel");
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        stt_ucx_conn_fail(conn, STRATA_ERR_REMOTE, "side channel: %s", strerror(errno));
    }
}

strata_status_t stt_ucx_conn_progress(stt_ucx_conn_t *conn)
{
    if (ucp_worker_progress(conn->worker) != 0) {
        conn->idle = 0;
        if (conn->peer_eof)
            conn->quiet_since_ns = stu_time_ns();
        return __atomic_load_n(&conn->failed, __ATOMIC_ACQUIRE);
    }
    if (conn->failed != STRATA_OK)
        return conn->failed;
    if (!conn->peer_eof) {
        if (++conn->idle >= STT_UCX_LIVENESS_EVERY) {
            conn->idle = 0;
            stt_ucx_conn_check_peer(conn);
        }
    } else if (stu_time_ns() - conn->quiet_since_ns > STT_UCX_EOF_GRACE_NS) {
        stt_ucx_conn_fail(conn, STRATA_ERR_REMOTE, "the peer closed the connection");
    }
    return conn->failed;
}

/* Endpoint close in force mode, the worker, the context reference, the socket. */
static void conn_destroy(stt_ucx_conn_t *conn)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags = UCP_EP_CLOSE_FLAG_FORCE,
    };
    void *req = ucp_ep_close_nbx(conn->ep, &param);
    conn_wait_free(conn, req, STT_UCX_CLOSE_FORCE_NS, 0);
}

static void conn_release(stt_ucx_conn_t *conn)
{
    ucp_worker_destroy(conn->worker);
    stt_ucx_context_put();
    close(conn->fd);
    free(conn);
}

static stt_ucx_conn_t *conn_of_kind(stt_comm_t *comm, stt_ucx_kind_t kind, const char *call)
{
    stt_ucx_conn_t *conn = (stt_ucx_conn_t *)comm;

    if (conn == NULL || conn->base.ops != &stt_ucx_ops || conn->kind != kind) {
        STU_WARN("ucx: %s called with %s", call,
                 conn == NULL ? "a NULL comm" : "a comm that is not a UCX comm of the right kind");
        return NULL;
    }
    return conn;
}

void stt_ucx_close_send(stt_comm_t *comm)
{
    if (comm == NULL)
        return;                          /* closing nothing is fine */
    stt_ucx_send_t *sc = (stt_ucx_send_t *)conn_of_kind(comm, STT_UCX_KIND_SEND, "close_send");
    if (sc == NULL)
        return;
    stt_ucx_conn_t *conn = &sc->conn;
    conn->closing = true;
    /*
     * A send is complete when its buffer may be reused, not when the peer has
     * it (an eager message may still sit in UCX's queues): with nothing
     * abandoned, flush before the force close so completed sends arrive.
     */
    if (sc->nfree == STT_UCX_SEND_SLOTS && conn->failed == STRATA_OK && !conn->peer_eof) {
        ucp_request_param_t param = {.op_attr_mask = 0};
        conn_wait_free(conn, ucp_ep_flush_nbx(conn->ep, &param), STT_UCX_CLOSE_FLUSH_NS,
                       STT_UCX_CLOSE_IDLE_NS);
    }
    conn_destroy(conn);
    for (int i = 0; i < STT_UCX_SEND_SLOTS; i++)
        if (sc->reqs[i].state != STT_UCX_REQ_FREE && sc->reqs[i].ucp != NULL)
            ucp_request_free(sc->reqs[i].ucp);
    conn_release(conn);
}

void stt_ucx_close_recv(stt_comm_t *comm)
{
    if (comm == NULL)
        return;                          /* closing nothing is fine */
    stt_ucx_recv_t *rc = (stt_ucx_recv_t *)conn_of_kind(comm, STT_UCX_KIND_RECV, "close_recv");
    if (rc == NULL)
        return;
    rc->conn.closing = true;
    for (int i = 0; i < STT_UCX_RECV_SLOTS; i++) {
        stt_ucx_rreq_t *req = &rc->reqs[i];
        if (req->state == STT_UCX_REQ_FREE)
            continue;
        for (int k = 0; k < req->n; k++) {
            if (req->ucp[k] == NULL)
                continue;
            ucp_request_cancel(rc->conn.worker, req->ucp[k]);
            ucp_request_free(req->ucp[k]);
        }
    }
    conn_destroy(&rc->conn);
    conn_release(&rc->conn);
}

strata_status_t stt_ucx_test(stt_req_t *req, int *done, size_t *sizes)
{
    if (req == NULL || done == NULL || req->comm == NULL || req->comm->ops != &stt_ucx_ops) {
        STU_WARN("ucx: test called with %s", req == NULL ? "a NULL request" :
                 done == NULL ? "a NULL done output" : "a request of no UCX comm");
        return STRATA_ERR_INVALID;
    }
    stt_ucx_conn_t *conn = (stt_ucx_conn_t *)req->comm;
    if (conn->kind == STT_UCX_KIND_SEND)
        return stt_ucx_send_test((stt_ucx_send_t *)conn, req, done, sizes);
    return stt_ucx_recv_test((stt_ucx_recv_t *)conn, req, done, sizes);
}
