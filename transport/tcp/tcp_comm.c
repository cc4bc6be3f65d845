/*
 * Send and receive comms of the TCP transport: creation, the request calls
 * (isend, irecv, iflush, test) and close. Data moves in tcp_send.c and
 * tcp_recv.c, called from here.
 *
 * Request slots are preallocated per comm (STT_TCP_RING of them) and handed out
 * from a free stack, so posting and releasing cost no allocation, lock or
 * system call. Completion is in posting order; release (test returning done)
 * may be in any order.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/tcp/tcp_internal.h"
#include "transport/base/hostmr.h"
#include "util/log.h"
#include "util/param.h"

void stt_tcp_conn_fail(stt_tcp_conn_t *conn, strata_status_t status, const char *fmt, ...)
{
    char why[512];
    va_list ap;

    if (conn->failed != STRATA_OK)
        return;
    conn->failed = status;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    STU_WARN("tcp: %s comm with %s failed (%s): %s",
             conn->kind == STT_TCP_KIND_SEND ? "send" : "receive", conn->peer,
             strata_status_str(status), why);
}

static void conn_setup(stt_tcp_conn_t *conn, stt_tcp_kind_t kind, int dev, const int *fds,
                       int nsocks, const char *peer)
{
    conn->base.ops = &stt_tcp_ops;
    conn->base.dev = dev;
    conn->kind = kind;
    conn->nsocks = nsocks;
    conn->failed = STRATA_OK;
    snprintf(conn->peer, sizeof(conn->peer), "%s", peer);
    for (int j = 0; j < STT_TCP_MAX_SOCKS; j++)
        conn->socks[j].fd = j < nsocks ? fds[j] : -1;
}

static void conn_fds_close(const int *fds, int nsocks)
{
    for (int j = 0; j < nsocks; j++)
        close(fds[j]);
}

strata_status_t stt_tcp_send_create(int dev, const int *fds, int nsocks, const char *peer,
                                    stt_comm_t **comm_p)
{
    stt_tcp_send_t *sc = calloc(1, sizeof(*sc));

    if (sc == NULL) {
        STU_WARN("tcp: no memory for a send comm to %s (%zu bytes)", peer, sizeof(*sc));
        conn_fds_close(fds, nsocks);
        return STRATA_ERR_NO_MEMORY;
    }
    conn_setup(&sc->conn, STT_TCP_KIND_SEND, dev, fds, nsocks, peer);
    int64_t stripe_min = stu_param_int(STU_PARAM_SOCKET_STRIPE_MIN);
    sc->stripe_min = stripe_min < 0 ? 0 : (uint64_t)stripe_min;
    for (int i = 0; i < STT_TCP_RING; i++) {
        sc->reqs[i].base.comm = &sc->conn.base;
        sc->free_slots[i] = (uint16_t)(STT_TCP_RING - 1 - i);
    }
    sc->nfree = STT_TCP_RING;
    *comm_p = &sc->conn.base;
    return STRATA_OK;
}

strata_status_t stt_tcp_recv_create(int dev, const int *fds, int nsocks, const char *peer,
                                    stt_comm_t **comm_p)
{
    stt_tcp_recv_t *rc = calloc(1, sizeof(*rc));

    if (rc == NULL) {
        STU_WARN("tcp: no memory for a receive comm from %s (%zu bytes)", peer, sizeof(*rc));
        conn_fds_close(fds, nsocks);
        return STRATA_ERR_NO_MEMORY;
    }
    conn_setup(&rc->conn, STT_TCP_KIND_RECV, dev, fds, nsocks, peer);
    for (int i = 0; i < STT_TCP_RING; i++) {
        rc->reqs[i].base.comm = &rc->conn.base;
        rc->free_slots[i] = (uint16_t)(STT_TCP_RING - 1 - i);
    }
    rc->nfree = STT_TCP_RING;
    *comm_p = &rc->conn.base;
    return STRATA_OK;
}

/* The comm as the given kind, or NULL (with a warning) when it is not one. */
static stt_tcp_conn_t *conn_of(stt_comm_t *comm, stt_tcp_kind_t kind, const char *call)
{
    stt_tcp_conn_t *conn = (stt_tcp_conn_t *)comm;

    if (conn == NULL || conn->base.ops != &stt_tcp_ops || conn->kind != kind) {
        STU_WARN("tcp: %s called with %s", call,
                 conn == NULL ? "a NULL comm" : "a comm that is not a TCP " 
                 "comm of the right kind");
        return NULL;
    }
    return conn;
}

strata_status_t stt_tcp_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                              stt_req_t **req_p)
{
    stt_tcp_send_t *sc = (stt_tcp_send_t *)conn_of(comm, STT_TCP_KIND_SEND, "isend");

    if (sc == NULL || req_p == NULL) {
        if (sc != NULL)
            STU_WARN("tcp: isend to %s with a NULL request output", sc->conn.peer);
        return STRATA_ERR_INVALID;
    }
    if (STU_UNLIKELY(sc->conn.failed != STRATA_OK))
        return sc->conn.failed;
    if (STU_UNLIKELY(stt_hostmr_isend_check(comm, sc->conn.peer, data, size,
                                            STT_TCP_MAX_MSG_BYTES, mh) != STRATA_OK))
        return STRATA_ERR_INVALID;
    if (sc->nfree == 0) {
        *req_p = NULL;
        return STRATA_OK;
    }
    uint16_t slot = sc->free_slots[--sc->nfree];
    stt_tcp_sreq_t *req = &sc->reqs[slot];
    stt_tcp_hdr_t hdr = {.flags = 0, .tag = tag, .seq = sc->conn.seq++, .size = size};
    if (sc->conn.nsocks > 1 && size >= sc->stripe_min)
        hdr.flags |= STT_TCP_HDR_STRIPED;
    stt_tcp_hdr_encode(&hdr, req->hdr);
    req->state = STT_TCP_REQ_ACTIVE;
    req->flags = hdr.flags;
    req->size = size;
    req->data = data;
    req->base.nsizes = 1;
    sc->queue[sc->tail % STT_TCP_RING] = slot;
    sc->tail++;
    /* Try at once: a small message usually leaves before isend returns. */
    stt_tcp_send_progress(sc);
    *req_p = &req->base;
    return STRATA_OK;
}

strata_status_t stt_tcp_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                              const int *tags, void **mhs, stt_req_t **req_p)
{
    stt_tcp_recv_t *rc = (stt_tcp_recv_t *)conn_of(comm, STT_TCP_KIND_RECV, "irecv");

    if (rc == NULL ||
        stt_hostmr_irecv_check(comm, rc->conn.peer, n, data, sizes, tags, mhs, req_p) != STRATA_OK)
        return STRATA_ERR_INVALID;
    if (STU_UNLIKELY(rc->conn.failed != STRATA_OK))
        return rc->conn.failed;
    if (rc->nfree == 0) {
        *req_p = NULL;
        return STRATA_OK;
    }
    uint16_t slot = rc->free_slots[--rc->nfree];
    stt_tcp_rreq_t *req = &rc->reqs[slot];
    req->state = STT_TCP_REQ_ACTIVE;
    req->is_flush = 0;
    req->n = (uint8_t)n;
    req->base.nsizes = n;
    req->unmatched = (uint8_t)n;
    req->matched_mask = 0;
    req->pending = 0;
    req->status = STRATA_OK;
    for (int i = 0; i < n; i++) {
        req->tags[i] = tags[i];
        req->data[i] = data[i];
        req->cap[i] = sizes[i];
        req->got[i] = 0;
    }
    rc->posts[rc->post_tail % STT_TCP_RING] = slot;
    rc->post_tail++;
    /* Progress at once only when the new receive can use something without reading
     * a socket: a header already staged, or the peer's close (the receive then fails
     * here). Otherwise the bytes are still in the kernel and test() reads them; a
     * recv now would return EAGAIN on the critical path (a receive is posted before
     * the send it answers). */
    if (stt_tcp_recv_staged(rc) >= STT_TCP_HDR_BYTES || rc->eof0)
        stt_tcp_recv_progress(rc);
    *req_p = &req->base;
    return STRATA_OK;
}

strata_status_t stt_tcp_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                               void **mhs, stt_req_t **req_p)
{
    stt_tcp_recv_t *rc = (stt_tcp_recv_t *)conn_of(comm, STT_TCP_KIND_RECV, "iflush");

    if (rc == NULL || stt_hostmr_iflush_check(comm, rc->conn.peer, n, req_p) != STRATA_OK)
        return STRATA_ERR_INVALID;
    if (rc->conn.failed != STRATA_OK)
        return rc->conn.failed;
    if (rc->nfree == 0) {
        *req_p = NULL;
        return STRATA_OK;
    }
    /* Host memory is coherent once recv() returned: nothing to wait for. */
    stt_tcp_rreq_t *req = &rc->reqs[rc->free_slots[--rc->nfree]];
    req->state = STT_TCP_REQ_DONE;
    req->is_flush = 1;
    req->n = 0;
    req->base.nsizes = 0;
    req->status = STRATA_OK;
    *req_p = &req->base;
    return STRATA_OK;
}

static strata_status_t test_send(stt_tcp_send_t *sc, stt_req_t *base, int *done, size_t *sizes)
{
    ptrdiff_t slot = (stt_tcp_sreq_t *)base - sc->reqs;

    if (slot < 0 || slot >= STT_TCP_RING || &sc->reqs[slot].base != base ||
        sc->reqs[slot].state == STT_TCP_REQ_FREE) {
        STU_WARN("tcp: test on a send request %p that is not pending on its comm (released"
                 " already?)", (void *)base);
        return STRATA_ERR_INVALID;
    }
    stt_tcp_sreq_t *req = &sc->reqs[slot];
    if (req->state == STT_TCP_REQ_ACTIVE)
        stt_tcp_send_progress(sc);
    if (req->state == STT_TCP_REQ_ACTIVE && sc->conn.failed == STRATA_OK) {
        *done = 0;
        return STRATA_OK;
    }
    bool ok = req->state == STT_TCP_REQ_DONE;
    uint64_t size = req->size;
    req->state = STT_TCP_REQ_FREE;
    sc->free_slots[sc->nfree++] = (uint16_t)slot;
    if (!ok)
        return sc->conn.failed;
    *done = 1;
    if (sizes != NULL)
        sizes[0] = size;
    return STRATA_OK;
}

static strata_status_t test_recv(stt_tcp_recv_t *rc, stt_req_t *base, int *done, size_t *sizes)
{
    ptrdiff_t slot = (stt_tcp_rreq_t *)base - rc->reqs;

    if (slot < 0 || slot >= STT_TCP_RING || &rc->reqs[slot].base != base ||
        rc->reqs[slot].state == STT_TCP_REQ_FREE) {
        STU_WARN("tcp: test on a receive request %p that is not pending on its comm"
                 " (released already?)", (void *)base);
        return STRATA_ERR_INVALID;
    }
    stt_tcp_rreq_t *req = &rc->reqs[slot];
    if (req->state == STT_TCP_REQ_ACTIVE)
        stt_tcp_recv_progress(rc);
    if (req->state == STT_TCP_REQ_ACTIVE && rc->conn.failed == STRATA_OK) {
        *done = 0;
        return STRATA_OK;
    }
    strata_status_t status = req->state == STT_TCP_REQ_DONE ? req->status : rc->conn.failed;
    req->state = STT_TCP_REQ_FREE;
    rc->free_slots[rc->nfree++] = (uint16_t)slot;
    if (status != STRATA_OK)
        return status;
    *done = 1;
    if (sizes != NULL)
        for (int i = 0; i < req->n; i++)
            sizes[i] = req->got[i];
    return STRATA_OK;
}

strata_status_t stt_tcp_test(stt_req_t *req, int *done, size_t *sizes)
{
    if (req == NULL || done == NULL || req->comm == NULL || req->comm->ops != &stt_tcp_ops) {
        STU_WARN("tcp: test called with %s", req == NULL ? "a NULL request" :
                 done == NULL ? "a NULL done output" : "a request of no TCP comm");
        return STRATA_ERR_INVALID;
    }
    stt_tcp_conn_t *conn = (stt_tcp_conn_t *)req->comm;
    if (conn->kind == STT_TCP_KIND_SEND)
        return test_send((stt_tcp_send_t *)conn, req, done, sizes);
    return test_recv((stt_tcp_recv_t *)conn, req, done, sizes);
}

void stt_tcp_close_send(stt_comm_t *comm)
{
    if (comm == NULL)
        return;                          /* closing nothing is fine */
    stt_tcp_send_t *sc = (stt_tcp_send_t *)conn_of(comm, STT_TCP_KIND_SEND, "close_send");
    if (sc == NULL)
        return;
    for (int j = 0; j < sc->conn.nsocks; j++)
        close(sc->conn.socks[j].fd);
    free(sc);
}

void stt_tcp_close_recv(stt_comm_t *comm)
{
    if (comm == NULL)
        return;                          /* closing nothing is fine */
    stt_tcp_recv_t *rc = (stt_tcp_recv_t *)conn_of(comm, STT_TCP_KIND_RECV, "close_recv");
    if (rc == NULL)
        return;
    for (int j = 0; j < rc->conn.nsocks; j++)
        close(rc->conn.socks[j].fd);
    free(rc->drain);
    free(rc);
}
