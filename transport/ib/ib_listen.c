/*
 * Listen comm of the ib transport and the accept side of the handshake.
 *
 * accept() drives a table of half-open connections, each through
 *   HELLO  read the sender's metadata; make the receive comm (QPs to RTR/RTS)
 *   REPLY  write this end's metadata
 *   READY  read the sender's "my QPs are at RTS"; the comm is handed out
 * A HELLO without the handle's listener id and secret is closed at once; a
 * connection that fails validation or outlives STRATA_CONNECT_TIMEOUT is
 * dropped with a warning; with every slot taken and more connections
 * waiting, one without its HELLO after STT_HANDSHAKE_FIRST_MS is closed to
 * make room. The listen comm stays usable. Each call returns at most one
 * receive comm.
 *
 * GID fallback: when both ends offered a link-local GID besides their chosen
 * one and the chosen pair cannot reach (modify to RTR fails, as between two
 * Soft-RoCE devices of one host with IPv4 GIDs), the link-local pair is tried
 * and the REPLY tells the sender which pair both ends use.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/base/sock.h"
#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

#define LISTEN_PENDING 16

enum { PEND_FREE = 0, PEND_HELLO, PEND_REPLY, PEND_READY };

typedef struct listen_pend {
    int stage;
    int fd;                      /* until the comm owns it */
    stt_ib_conn_t *conn;
    uint64_t start_ns;
    uint64_t conn_id;
    uint32_t done;
    uint8_t buf[STT_IB_META_BYTES];
    char peer[STT_IB_ADDR_STRLEN];
} listen_pend_t;

typedef struct stt_ib_listen {
    stt_listen_t base;
    int fd;
    uint64_t listener_id;
    uint8_t secret[STT_HANDLE_SECRET_BYTES];
    char local[STT_IB_ADDR_STRLEN];
    listen_pend_t pend[LISTEN_PENDING];
} stt_ib_listen_t;

strata_status_t stt_ib_listen(int dev, void *handle, stt_listen_t **listen_p)
{
    strata_status_t status;
    stt_netif_addr_t addr;
    int fd;

    if (handle == NULL || listen_p == NULL) {
        STU_WARN("ib: listen(dev %d) called with a NULL %s", dev, handle ? "output" : "handle");
        return STRATA_ERR_INVALID;
    }
    if (stt_ib_device_at(dev) == NULL)
        return STRATA_ERR_NOT_FOUND;
    status = stt_ib_device_oob_addr(&addr);
    if (status != STRATA_OK)
        return status;
    status = stt_sock_open("ib", addr.sa.sa_family, &fd);
    if (status != STRATA_OK)
        return status;
    status = stt_sock_listen("ib", fd, &addr, &addr);
    if (status != STRATA_OK)
        goto err_close;
    stt_ib_listen_t *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        STU_WARN("ib: no memory for a listen comm (%zu bytes)", sizeof(*l));
        status = STRATA_ERR_NO_MEMORY;
        goto err_close;
    }
    l->base.ops = &stt_ib_ops;
    l->base.dev = dev;
    l->fd = fd;
    l->listener_id = stt_netif_random_u64();
    status = stt_handle_secret_new("ib", l->secret);
    if (status != STRATA_OK) {
        free(l);
        goto err_close;
    }
    for (int i = 0; i < LISTEN_PENDING; i++)
        l->pend[i].fd = -1;
    stt_netif_addr_format(&addr, l->local, sizeof(l->local));
    stt_handle_store(handle, STT_IB_HANDLE_MAGIC, STT_IB_PROTO_VERSION, l->listener_id,
                     l->secret, &addr);
    STU_INFO(STU_LOG_NET, "ib: dev %d listening on %s, id %016llx", dev, l->local,
             (unsigned long long)l->listener_id);
    *listen_p = &l->base;
    return STRATA_OK;

err_close:
    close(fd);
    return status;
}

static void pend_drop(listen_pend_t *p)
{
    if (p->conn != NULL)
        stt_ib_conn_destroy(p->conn);          /* closes the socket too */
    else if (p->fd >= 0)
        close(p->fd);
    memset(p, 0, sizeof(*p));
    p->fd = -1;
}

/*
 * With every slot taken and more connections waiting in the kernel's queue, closes the
 * entries that have not delivered their HELLO within STT_HANDSHAKE_FIRST_MS (idle
 * strangers, base/connect.h), so they cannot hold the slots for STRATA_CONNECT_TIMEOUT.
 * Without that pressure a slow connector keeps its slot for the whole timeout.
 */
static void listen_make_room(stt_ib_listen_t *l, uint64_t now)
{
    for (int i = 0; i < LISTEN_PENDING; i++)
        if (l->pend[i].stage == PEND_FREE)
            return;
    if (!stt_sock_backlogged(l->fd))
        return;
    for (int i = 0; i < LISTEN_PENDING; i++) {
        listen_pend_t *p = &l->pend[i];
        if (p->stage == PEND_HELLO && now - p->start_ns > STT_HANDSHAKE_FIRST_MS * 1000000ull) {
            STU_INFO(STU_LOG_NET, "ib: %s closed a connection from %s: no HELLO within 1 s while"
                     " others wait", l->local, p->peer);
            pend_drop(p);
        }
    }
}

static void listen_accept_new(stt_ib_listen_t *l, uint64_t now)
{
    for (int i = 0; i < LISTEN_PENDING; i++) {
        listen_pend_t *p = &l->pend[i];
        stt_netif_addr_t addr;
        if (p->stage != PEND_FREE)
            continue;
        int fd = stt_sock_accept("ib", l->fd, l->local, &addr);
        if (fd < 0)
            return;
        memset(p, 0, sizeof(*p));
        p->stage = PEND_HELLO;
        p->fd = fd;
        p->start_ns = now;
        stt_netif_addr_format(&addr, p->peer, sizeof(p->peer));
    }
}

/* A complete HELLO: make the receive comm, connect its QPs, prepare the REPLY. */
static strata_status_t pend_hello_done(stt_ib_listen_t *l, listen_pend_t *p)
{
    strata_status_t status;
    stt_ib_meta_t hello, reply;
    const char *why = NULL;

    if (stt_ib_meta_decode(p->buf, STT_IB_META_HELLO, &hello, &why) != STRATA_OK) {
        STU_WARN("ib: %s rejected a connection from %s: %s", l->local, p->peer, why);
        return STRATA_ERR_REMOTE;
    }
    if (hello.listener_id != l->listener_id || !stt_handle_secret_ok(l->secret, hello.secret)) {
        STU_WARN("ib: %s rejected a connection from %s: its hello does not carry this"
                 " listener's id and secret (a stale or foreign handle, or a stranger)",
                 l->local, p->peer);
        return STRATA_ERR_REMOTE;
    }
    const stt_ib_dev_t *d = stt_ib_device_at(l->base.dev);
    if (d != NULL && hello.nmembers != d->nmembers) {
        STU_WARN("ib: %s rejected a connection from %s: its device fuses %u port(s), this"
                 " listener's (%s) %d; a virtual device connects only to one fusing as many",
                 l->local, p->peer, hello.nmembers, d->props.name, d->nmembers);
        return STRATA_ERR_REMOTE;
    }
    status = stt_ib_conn_create(false, l->base.dev, hello.nqps, p->fd, p->peer, &p->conn);
    p->fd = -1;                                  /* the comm owns it, even on failure */
    if (status != STRATA_OK)
        return status;
    int64_t tc = stu_param_int(STU_PARAM_IB_TC);
    p->conn->tc = (uint8_t)(tc >= 0 && tc <= 255 ? tc : hello.tc);
    int choice = STT_IB_GID_PRIMARY;
    bool can_fall_back = true;
    for (int j = 0; j < p->conn->nmembers; j++)
        can_fall_back = can_fall_back && hello.m[j].has_alt && p->conn->m[j].dev->has_alt;
    if (can_fall_back && stt_ib_device_gid_elsewhere(p->conn->m[0].dev, hello.m[0].gid)) {
        /*
         * Both ends are devices of this host: routable GIDs of two local
         * addresses go through the kernel's loopback route, which RoCE cannot
         * use (Soft-RoCE fails RTR, or one direction times out resolving).
         */
        STU_INFO(STU_LOG_NET, "ib: %s is another device of this host; using link-local GIDs",
                 p->peer);
        choice = STT_IB_GID_ALT;
        status = stt_ib_qp_connect(p->conn, &hello, choice, false);
    } else {
        status = stt_ib_qp_connect(p->conn, &hello, choice, can_fall_back);
    }
    if (status != STRATA_OK && can_fall_back && choice == STT_IB_GID_PRIMARY) {
        STU_INFO(STU_LOG_NET, "ib: the chosen GIDs cannot reach %s; trying the link-local"
                 " pair", p->peer);
        choice = STT_IB_GID_ALT;
        status = stt_ib_qp_connect(p->conn, &hello, choice, false);
    }
    if (status != STRATA_OK)
        return status;
    p->conn_id = hello.conn_id;
    stt_ib_conn_meta(p->conn, STT_IB_META_REPLY, l->listener_id, hello.conn_id, &reply);
    memcpy(reply.secret, l->secret, sizeof(reply.secret));
    reply.gid_choice = (uint8_t)choice;
    stt_ib_meta_encode(&reply, p->buf);
    p->done = 0;
    p->stage = PEND_REPLY;
    return STRATA_OK;
}

/* Moves one half-open connection on; returns a finished comm through *recv_p. */
static strata_status_t pend_step(stt_ib_listen_t *l, listen_pend_t *p, stt_comm_t **recv_p)
{
    strata_status_t status;
    stt_ib_meta_t ready;
    const char *why = NULL;

    if (p->stage == PEND_HELLO) {
        status = stt_sock_xfer("ib", p->fd, false, p->buf, STT_IB_META_BYTES, &p->done,
                               "the connection hello", p->peer);
        if (status != STRATA_OK)
            return status;
        status = pend_hello_done(l, p);
        if (status != STRATA_OK)
            return status;
    }
    if (p->stage == PEND_REPLY) {
        status = stt_sock_xfer("ib", p->conn->fd, true, p->buf, STT_IB_META_BYTES, &p->done,
                               "the connection reply", p->peer);
        if (status != STRATA_OK)
            return status;
        p->done = 0;
        p->stage = PEND_READY;
    }
    status = stt_sock_xfer("ib", p->conn->fd, false, p->buf, STT_IB_META_BYTES, &p->done,
                           "the ready message", p->peer);
    if (status != STRATA_OK)
        return status;
    if (stt_ib_meta_decode(p->buf, STT_IB_META_READY, &ready, &why) != STRATA_OK ||
        ready.conn_id != p->conn_id) {
        STU_WARN("ib: %s: bad ready message from %s: %s", l->local, p->peer,
                 why ? why : "connection id differs");
        return STRATA_ERR_REMOTE;
    }
    STU_INFO(STU_LOG_NET, "ib: %s accepted %s", l->local, p->peer);
    *recv_p = &p->conn->head.base;
    p->conn = NULL;
    memset(p, 0, sizeof(*p));
    p->fd = -1;
    return STRATA_OK;
}

strata_status_t stt_ib_accept(stt_listen_t *listen, stt_comm_t **recv_p)
{
    stt_ib_listen_t *l = (stt_ib_listen_t *)listen;

    if (l == NULL || recv_p == NULL || l->base.ops != &stt_ib_ops) {
        STU_WARN("ib: accept called with a NULL or foreign %s", l ? "output" : "listen comm");
        return STRATA_ERR_INVALID;
    }
    uint64_t now = stu_time_ns();
    uint64_t timeout_ns = stt_connect_timeout_ns();

    *recv_p = NULL;
    listen_accept_new(l, now);
    listen_make_room(l, now);
    for (int i = 0; i < LISTEN_PENDING; i++) {
        listen_pend_t *p = &l->pend[i];
        if (p->stage == PEND_FREE)
            continue;
        strata_status_t status = pend_step(l, p, recv_p);
        if (status == STRATA_OK)
            return STRATA_OK;
        if (status != STRATA_INPROGRESS) {
            pend_drop(p);                        /* the cause was logged */
        } else if (now - p->start_ns > timeout_ns) {
            STU_WARN("ib: %s: connection from %s not complete within %lld ms, dropped",
                     l->local, p->peer, (long long)(timeout_ns / 1000000));
            pend_drop(p);
        }
    }
    return STRATA_OK;
}

void stt_ib_close_listen(stt_listen_t *listen)
{
    stt_ib_listen_t *l = (stt_ib_listen_t *)listen;

    if (l == NULL)
        return;
    for (int i = 0; i < LISTEN_PENDING; i++)
        if (l->pend[i].stage != PEND_FREE)
            pend_drop(&l->pend[i]);
    close(l->fd);
    free(l);
}
