/*
 * Listen comm of the TCP transport and the accept side of the handshake.
 *
 * accept() is a poll-driven state machine over two small tables:
 *   socks:  accepted sockets whose hello is still arriving;
 *   groups: connections (by connection id) waiting for the rest of their sockets,
 *           then for their ack to be written on socket 0.
 * A socket whose hello is not this listener's (id, secret) is answered
 * REJECTED and closed at once; one whose hello is not complete within
 * STT_HANDSHAKE_FIRST_MS is answered LATE and closed, so that idle strangers
 * free their slots within a second (base/connect.h); a group (whose sockets
 * proved the secret) older than STRATA_CONNECT_TIMEOUT is dropped. Either
 * way the listen comm stays usable. Each call returns at most one receive comm.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/base/sock.h"
#include "transport/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/time.h"

static void listen_fds_close(const int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/*
 * One listening socket per member of the device (one for an interface); the
 * handle carries member 0's address in its head and the others after it.
 */
strata_status_t stt_tcp_listen(int dev, void *handle, stt_listen_t **listen_p)
{
    strata_status_t status;
    stt_tcp_dev_t d;
    stt_tcp_vnic_t vnic = {0};
    int fds[STT_MAX_VDEV_MEMBERS];

    if (handle == NULL || listen_p == NULL) {
        STU_WARN("tcp: listen(dev %d) called with a NULL %s", dev, handle ? "output" : "handle");
        return STRATA_ERR_INVALID;
    }
    status = stt_tcp_device_get(dev, &d);
    if (status != STRATA_OK)
        return status;
    for (int i = 0; i < STT_MAX_VDEV_MEMBERS; i++)
        fds[i] = -1;
    for (vnic.n = 0; vnic.n < d.nmembers; vnic.n++) {
        int i = vnic.n;
        status = stt_tcp_sock_open(d.member_addr[i].sa.sa_family, &fds[i]);
        if (status == STRATA_OK)
            status = stt_sock_listen("tcp", fds[i], &d.member_addr[i], &vnic.addr[i]);
        if (status != STRATA_OK)
            goto err_close;
    }
    stt_tcp_listen_t *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        STU_WARN("tcp: no memory for a listen comm (%zu bytes)", sizeof(*l));
        status = STRATA_ERR_NO_MEMORY;
        goto err_close;
    }
    l->base.ops = &stt_tcp_ops;
    l->base.dev = dev;
    l->nfds = vnic.n;
    memcpy(l->fds, fds, sizeof(fds));
    l->listener_id = stt_netif_random_u64();
    status = stt_handle_secret_new("tcp", l->secret);
    if (status != STRATA_OK) {
        free(l);
        goto err_close;
    }
    for (int i = 0; i < STT_TCP_PEND_SOCKS; i++)
        l->socks[i].fd = -1;
    stt_netif_addr_format(&vnic.addr[0], l->local, sizeof(l->local));

    stt_handle_store(handle, STT_TCP_HANDLE_MAGIC, STT_TCP_PROTO_VERSION, l->listener_id,
                     l->secret, &vnic.addr[0]);
    if (vnic.n > 1)
        stt_tcp_vnic_encode(&vnic, handle);   /* fits: the device passed stt_tcp_vdev_fill */
    STU_INFO(STU_LOG_NET, "tcp: listening on %s (%s, %d address%s), id %016llx", l->local,
             d.props.name, vnic.n, vnic.n > 1 ? "es" : "", (unsigned long long)l->listener_id);
    *listen_p = &l->base;
    return STRATA_OK;

err_close:
    listen_fds_close(fds, STT_MAX_VDEV_MEMBERS);
    return status;
}

static void pend_sock_drop(stt_tcp_pend_sock_t *ps)
{
    close(ps->fd);
    ps->fd = -1;
}

/* Warnings about dropped sockets, per listener; past this many they go to INFO. */
#define LISTEN_DROP_WARNINGS 8

/*
 * Closes a socket whose hello did not place it, after a best-effort ack with status (the
 * 16 bytes fit any fresh socket's buffer; a stranger learns only that it was refused).
 */
static void pend_sock_refuse(stt_tcp_listen_t *l, stt_tcp_pend_sock_t *ps, uint8_t status,
                             uint64_t conn_id, uint8_t nsocks, const char *why)
{
    stt_tcp_ack_t ack = {.version = STT_TCP_PROTO_VERSION, .nsocks = nsocks ? nsocks : 1,
                         .status = status, .conn_id = conn_id};
    uint8_t buf[STT_TCP_ACK_BYTES];

    stt_tcp_ack_encode(&ack, buf);
    (void)!send(ps->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (l->dropped++ < LISTEN_DROP_WARNINGS)
        STU_WARN("tcp: %s closed a connection from %s: %s%s", l->local, ps->peer, why,
                 l->dropped == LISTEN_DROP_WARNINGS ? " (further ones at INFO level)" : "");
    else
        STU_INFO(STU_LOG_NET, "tcp: %s closed a connection from %s: %s", l->local, ps->peer,
                 why);
    pend_sock_drop(ps);
}

static void pend_group_drop(stt_tcp_pend_group_t *g)
{
    for (int i = 0; i < STT_TCP_MAX_SOCKS; i++)
        if (g->fds[i] >= 0)
            close(g->fds[i]);
    memset(g, 0, sizeof(*g));
}

/* Takes every connection the kernel has ready, while the table has room. */
static void listen_accept_new(stt_tcp_listen_t *l, uint64_t now)
{
    for (int i = 0; i < STT_TCP_PEND_SOCKS; i++) {
        stt_tcp_pend_sock_t *ps = &l->socks[i];
        stt_netif_addr_t addr;
        if (ps->fd >= 0)
            continue;
        int fd = -1;
        for (int k = 0; k < l->nfds && fd < 0; k++)
            fd = stt_sock_accept("tcp", l->fds[k], l->local, &addr);
        if (fd < 0)
            return;
        stt_netif_addr_format(&addr, ps->peer, sizeof(ps->peer));
        if (stt_tcp_sock_tune(fd, ps->peer) != STRATA_OK) {
            close(fd);
            continue;
        }
        ps->fd = fd;
        ps->have = 0;
        ps->start_ns = now;
    }
}

static stt_tcp_pend_group_t *listen_group_find(stt_tcp_listen_t *l, uint64_t conn_id,
                                               bool create, uint64_t now)
{
    stt_tcp_pend_group_t *spare = NULL;

    for (int i = 0; i < STT_TCP_PEND_GROUPS; i++) {
        stt_tcp_pend_group_t *g = &l->groups[i];
        if (g->used && g->conn_id == conn_id)
            return g;
        if (!g->used && spare == NULL)
            spare = g;
    }
    if (!create || spare == NULL)
        return NULL;
    memset(spare, 0, sizeof(*spare));
    spare->used = true;
    spare->conn_id = conn_id;
    spare->start_ns = now;
    for (int i = 0; i < STT_TCP_MAX_SOCKS; i++)
        spare->fds[i] = -1;
    return spare;
}

/* A complete hello: validate it and move the socket into its group. */
static void listen_hello_place(stt_tcp_listen_t *l, stt_tcp_pend_sock_t *ps, uint64_t now)
{
    stt_tcp_hello_t h;
    const char *why = NULL;

    if (stt_tcp_hello_decode(ps->buf, &h, &why) != STRATA_OK) {
        pend_sock_refuse(l, ps, STT_TCP_ACK_REJECTED, 0, 0, why);
        return;
    }
    if (h.listener_id != l->listener_id || !stt_handle_secret_ok(l->secret, h.secret)) {
        pend_sock_refuse(l, ps, STT_TCP_ACK_REJECTED, h.conn_id, h.nsocks,
                         "its hello does not carry this listener's id and secret (a stale or"
                         " foreign handle, or a stranger)");
        return;
    }
    stt_tcp_pend_group_t *g = listen_group_find(l, h.conn_id, true, now);
    if (g == NULL)
        return;                          /* table full: keep the socket, retry later */
    if (g->count > 0 && g->nsocks != h.nsocks) {
        why = "socket count differs from the connection's first socket";
        goto err_reject;
    }
    if (g->fds[h.index] >= 0) {
        why = "duplicate socket index";
        goto err_reject;
    }
    if (g->count == 0) {
        g->nsocks = h.nsocks;
        memcpy(g->peer, ps->peer, sizeof(g->peer));
    }
    g->fds[h.index] = ps->fd;
    g->count++;
    ps->fd = -1;
    return;

err_reject:
    pend_sock_refuse(l, ps, STT_TCP_ACK_REJECTED, h.conn_id, h.nsocks, why);
}

static void listen_hellos_read(stt_tcp_listen_t *l, uint64_t now)
{
    const uint64_t first_ns = STT_HANDSHAKE_FIRST_MS * 1000000ull;

    for (int i = 0; i < STT_TCP_PEND_SOCKS; i++) {
        stt_tcp_pend_sock_t *ps = &l->socks[i];
        if (ps->fd < 0)
            continue;
        strata_status_t status = stt_sock_xfer("tcp", ps->fd, false, ps->buf,
                                               STT_TCP_HELLO_BYTES, &ps->have, "a hello",
                                               ps->peer);
        if (status == STRATA_OK)
            listen_hello_place(l, ps, now);
        else if (status != STRATA_INPROGRESS)
            pend_sock_drop(ps);          /* logged */
        if (ps->fd >= 0 && now - ps->start_ns > first_ns)
            pend_sock_refuse(l, ps, STT_TCP_ACK_LATE, 0, 0,
                             "no complete hello within STT_HANDSHAKE_FIRST_MS (1 s)");
    }
}

/* Writes a complete group's ack; returns true once the ack is fully sent. */
static bool listen_group_ack(stt_tcp_listen_t *l, stt_tcp_pend_group_t *g)
{
    if (!g->acking) {
        stt_tcp_ack_t ack = {.version = STT_TCP_PROTO_VERSION, .nsocks = g->nsocks,
                             .status = STT_TCP_ACK_OK, .conn_id = g->conn_id};
        stt_tcp_ack_encode(&ack, g->ack);
        g->acking = true;
    }
    strata_status_t status = stt_sock_xfer("tcp", g->fds[0], true, g->ack, STT_TCP_ACK_BYTES,
                                           &g->ack_sent, "the ack", g->peer);
    if (status != STRATA_OK && status != STRATA_INPROGRESS)
        pend_group_drop(g);              /* logged */
    return status == STRATA_OK;
}

/*
 * A client that gave up (timeout) after its hellos went out leaves a complete
 * group behind; when its FIN or RST is already here before we ack, drop the
 * group instead of handing out a dead comm.
 */
static bool listen_group_alive(stt_tcp_listen_t *l, stt_tcp_pend_group_t *g)
{
    for (int i = 0; i < g->nsocks; i++) {
        int err;
        if (g->fds[i] < 0)
            continue;                    /* that socket has not arrived yet */
        stt_sock_peek_t peek = stt_sock_peek(g->fds[i], &err);
        if (peek == STT_SOCK_QUIET || peek == STT_SOCK_BYTES)
            continue;
        STU_WARN("tcp: %s: connection %016llx from %s %s before it was accepted; dropped",
                 l->local, (unsigned long long)g->conn_id, g->peer,
                 peek == STT_SOCK_EOF ? "was closed" : strerror(err));
        pend_group_drop(g);
        return false;
    }
    return true;
}

strata_status_t stt_tcp_accept(stt_listen_t *listen, stt_comm_t **recv_p)
{
    stt_tcp_listen_t *l = (stt_tcp_listen_t *)listen;

    if (l == NULL || recv_p == NULL || l->base.ops != &stt_tcp_ops) {
        STU_WARN("tcp: accept called with a NULL or foreign %s", l ? "output" : "listen comm");
        return STRATA_ERR_INVALID;
    }
    uint64_t now = stu_time_ns();
    uint64_t timeout_ns = stt_connect_timeout_ns();

    listen_accept_new(l, now);
    listen_hellos_read(l, now);
    for (int i = 0; i < STT_TCP_PEND_GROUPS; i++) {
        stt_tcp_pend_group_t *g = &l->groups[i];
        if (!g->used)
            continue;
        /* a group still waiting for its other sockets whose client is gone (a socket it
         * sent closed) goes now, not at STRATA_CONNECT_TIMEOUT */
        if (g->count < g->nsocks && !listen_group_alive(l, g))
            continue;
        /*
         * Liveness is judged before the ack only: once acked, the client may
         * legitimately send, close and be gone before this accept returns.
         */
        if (g->count == g->nsocks && (g->acking || listen_group_alive(l, g)) &&
            listen_group_ack(l, g)) {
            int fds[STT_TCP_MAX_SOCKS];
            int nsocks = g->nsocks;
            char peer[STT_TCP_ADDR_STRLEN];
            memcpy(fds, g->fds, sizeof(fds));
            memcpy(peer, g->peer, sizeof(peer));
            memset(g, 0, sizeof(*g));          /* the comm owns the sockets now */
            STU_INFO(STU_LOG_NET, "tcp: %s accepted %s with %d sockets", l->local, peer,
                     nsocks);
            stt_tcp_dev_t d;
            int nmembers = stt_tcp_device_get(l->base.dev, &d) == STRATA_OK ? d.nmembers : 1;
            return stt_tcp_conn_create(false, l->base.dev, fds, nsocks, nmembers, peer, recv_p);
        }
        if (g->used && now - g->start_ns > timeout_ns) {
            STU_WARN("tcp: %s: connection %016llx from %s got %u of %u sockets within %llu ms,"
                     " dropped", l->local, (unsigned long long)g->conn_id, g->peer, g->count,
                     g->nsocks, (unsigned long long)(timeout_ns / 1000000));
            pend_group_drop(g);
        }
    }
    *recv_p = NULL;
    return STRATA_OK;
}

void stt_tcp_close_listen(stt_listen_t *listen)
{
    stt_tcp_listen_t *l = (stt_tcp_listen_t *)listen;

    if (l == NULL)
        return;
    for (int i = 0; i < STT_TCP_PEND_SOCKS; i++)
        if (l->socks[i].fd >= 0)
            pend_sock_drop(&l->socks[i]);
    for (int i = 0; i < STT_TCP_PEND_GROUPS; i++)
        if (l->groups[i].used)
            pend_group_drop(&l->groups[i]);
    listen_fds_close(l->fds, l->nfds);
    free(l);
}
