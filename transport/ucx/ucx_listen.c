/*
 * Listen side of the UCX handshake. listen opens the side channel's
 * listening socket on the device's address (port 0) and writes the handle;
 * accept takes new sockets into a small table of half-accepted connections
 * and moves each along:
 *
 *   HELLO_IN (reading the connector's hello + worker address)
 *   -> REPLY (our worker is open; writing our hello + worker address)
 *   -> the receive comm: endpoint to the connector's worker, socket kept.
 *
 * A hello whose fixed 40 bytes lack the handle's listener id and secret is dropped
 * as soon as those bytes are in, before its worker address is read; a
 * half-accepted connection that takes longer than STRATA_CONNECT_TIMEOUT, or
 * says something wrong, is dropped with a warning; with every slot taken and
 * more connections waiting, one that has not delivered its hello within
 * STT_HANDSHAKE_FIRST_MS is dropped to make room. The listener goes on.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/base/connect.h"
#include "transport/base/sock.h"
#include "transport/ucx/ucx_internal.h"
#include "util/log.h"
#include "util/time.h"

#define UCX_PEND 16            /* connections half accepted at once */

enum { PEND_FREE = 0, PEND_HELLO_IN, PEND_REPLY };

typedef struct ucx_pend {
    int stage;
    stt_ucx_chan_t ch;
    stt_ucx_worker_t w;
} ucx_pend_t;

typedef struct stt_ucx_listen {
    stt_listen_t base;
    int fd;
    uint64_t listener_id;
    uint8_t secret[STT_HANDLE_SECRET_BYTES];
    char local[STT_NETIF_ADDR_STRLEN];
    ucx_pend_t pend[UCX_PEND];
} stt_ucx_listen_t;

strata_status_t stt_ucx_listen(int dev, void *handle, stt_listen_t **listen_p)
{
    stt_ucx_handle_t h = {0};
    stt_ucx_dev_t d;
    strata_status_t status;

    if (handle == NULL || listen_p == NULL) {
        STU_WARN("ucx: listen(dev %d) called with a NULL %s", dev, handle ? "output" : "handle");
        return STRATA_ERR_INVALID;
    }
    status = stt_ucx_device_get(dev, &d);
    if (status != STRATA_OK)
        return status;
    const stt_netif_t nif = d.nif;
    stt_ucx_listen_t *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        STU_WARN("ucx: no memory for a listen comm");
        return STRATA_ERR_NO_MEMORY;
    }
    status = stt_sock_open("ucx", nif.addr.sa.sa_family, &l->fd);
    if (status != STRATA_OK)
        goto err_free;
    status = stt_sock_listen("ucx", l->fd, &nif.addr, &h.addr);
    if (status != STRATA_OK)
        goto err_close;
    stt_netif_addr_format(&h.addr, l->local, sizeof(l->local));
    h.listener_id = stt_netif_random_u64();
    status = stt_handle_secret_new("ucx", h.secret);
    if (status != STRATA_OK)
        goto err_close;
    memset(handle, 0, STT_HANDLE_SIZE);
    status = stt_ucx_handle_encode(&h, handle);
    if (status != STRATA_OK)
        goto err_close;
    l->base.ops = &stt_ucx_ops;
    l->base.dev = dev;
    l->listener_id = h.listener_id;
    memcpy(l->secret, h.secret, sizeof(l->secret));
    STU_INFO(STU_LOG_NET, "ucx: listening on %s (%s)", l->local, nif.name);
    *listen_p = &l->base;
    return STRATA_OK;

err_close:
    close(l->fd);
err_free:
    free(l);
    return status;
}

static void pend_drop(ucx_pend_t *p)
{
    if (p->w.worker != NULL)
        stt_ucx_worker_close(&p->w);
    stt_ucx_chan_fini(&p->ch, false);
    memset(p, 0, sizeof(*p));
}

/* Takes every connection the kernel has ready into free table entries. */
static void listen_take_new(stt_ucx_listen_t *l)
{
    for (int i = 0; i < UCX_PEND; i++) {
        if (l->pend[i].stage != PEND_FREE)
            continue;
        stt_netif_addr_t addr;
        int fd = stt_sock_accept("ucx", l->fd, l->local, &addr);
        if (fd < 0)
            return;
        char peer[STT_NETIF_ADDR_STRLEN];
        stt_netif_addr_format(&addr, peer, sizeof(peer));
        stt_ucx_chan_init(&l->pend[i].ch, fd, peer);
        l->pend[i].stage = PEND_HELLO_IN;
    }
}

/*
 * With every slot taken and more connections waiting in the kernel's queue, drops the
 * entries still reading a hello after STT_HANDSHAKE_FIRST_MS (idle strangers,
 * base/connect.h); without that pressure a slow connector keeps its slot.
 */
static void listen_make_room(stt_ucx_listen_t *l)
{
    uint64_t now = stu_time_ns();

    for (int i = 0; i < UCX_PEND; i++)
        if (l->pend[i].stage == PEND_FREE)
            return;
    if (!stt_sock_backlogged(l->fd))
        return;
    for (int i = 0; i < UCX_PEND; i++) {
        ucx_pend_t *p = &l->pend[i];
        if (p->stage == PEND_HELLO_IN &&
            now - p->ch.start_ns > STT_HANDSHAKE_FIRST_MS * 1000000ull) {
            STU_INFO(STU_LOG_NET, "ucx: %s closed a connection from %s: no hello within 1 s"
                     " while others wait", l->local, p->ch.peer);
            pend_drop(p);
        }
    }
}

/* Moves one half-accepted connection along; *ready when its reply is out. */
static strata_status_t pend_step(stt_ucx_listen_t *l, ucx_pend_t *p, bool *ready)
{
    strata_status_t status = STRATA_OK;
    bool done = false;

    *ready = false;
    if (p->stage == PEND_HELLO_IN) {
        stt_ucx_hello_t expect = {.kind = STT_UCX_HELLO_CONNECT, .listener_id = l->listener_id};
        memcpy(expect.secret, l->secret, sizeof(expect.secret));
        status = stt_ucx_chan_read(&p->ch, &expect, &done);
        if (status != STRATA_OK || !done)
            return status;
        stt_ucx_dev_t d;
        status = stt_ucx_device_get(l->base.dev, &d);
        if (status == STRATA_OK)
            status = stt_ucx_worker_open(&p->w, &d, p->ch.peer);
        if (status != STRATA_OK)
            return status;
        stt_ucx_hello_t reply = {
            .kind = STT_UCX_HELLO_ACCEPT,
            .listener_id = l->listener_id,
            .conn_id = p->ch.in.conn_id,
            .addr_len = (uint32_t)p->w.addr_len,
        };
        memcpy(reply.secret, l->secret, sizeof(reply.secret));
        status = stt_ucx_chan_set_hello(&p->ch, &reply, p->w.addr);
        if (status != STRATA_OK)
            return status;
        p->stage = PEND_REPLY;
    }
    status = stt_ucx_chan_write(&p->ch, &done);
    *ready = status == STRATA_OK && done;
    return status;
}

strata_status_t stt_ucx_accept(stt_listen_t *listen, stt_comm_t **recv_p)
{
    stt_ucx_listen_t *l = (stt_ucx_listen_t *)listen;

    if (l == NULL || recv_p == NULL || l->base.ops != &stt_ucx_ops) {
        STU_WARN("ucx: accept called with %s", recv_p == NULL ? "a NULL output"
                                                              : "something not a UCX listen comm");
        return STRATA_ERR_INVALID;
    }
    listen_take_new(l);
    listen_make_room(l);
    for (int i = 0; i < UCX_PEND; i++) {
        ucx_pend_t *p = &l->pend[i];
        bool ready = false;
        if (p->stage == PEND_FREE)
            continue;
        strata_status_t status = pend_step(l, p, &ready);
        if (status == STRATA_OK && ready) {
            stt_ucx_hello_t in = p->ch.in;
            status = stt_ucx_conn_create(false, l->base.dev, &p->w, p->ch.fd, &in, p->ch.in_addr,
                                         in.conn_id, p->ch.peer, recv_p);
            stt_ucx_chan_fini(&p->ch, true);   /* the comm owns the socket and worker */
            memset(p, 0, sizeof(*p));
            /* A comm that could not be built is this connection's failure, not the
             * listener's: the connector sees its side channel close. */
            if (status == STRATA_OK)
                return STRATA_OK;
            continue;
        }
        if (status != STRATA_OK ||
            stt_connect_expired(p->ch.start_ns, "ucx", "accepting from", p->ch.peer, "")) {
            STU_WARN("ucx: dropped a half-accepted connection from %s on %s (%s)", p->ch.peer,
                     l->local, strata_status_str(status == STRATA_OK ? STRATA_ERR_TIMEOUT
                                                                     : status));
            pend_drop(p);
        }
    }
    *recv_p = NULL;
    return STRATA_OK;
}

void stt_ucx_close_listen(stt_listen_t *listen)
{
    stt_ucx_listen_t *l = (stt_ucx_listen_t *)listen;

    if (l == NULL)
        return;                          /* closing nothing is fine */
    if (l->base.ops != &stt_ucx_ops) {
        STU_WARN("ucx: close_listen called with something not a UCX listen comm");
        return;
    }
    for (int i = 0; i < UCX_PEND; i++)
        if (l->pend[i].stage != PEND_FREE)
            pend_drop(&l->pend[i]);
    close(l->fd);
    free(l);
}
