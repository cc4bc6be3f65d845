/*
 * Connect side of the TCP handshake: a state machine kept in a heap object
 * whose pointer lives in the caller's handle, after the bytes listen wrote.
 *
 * Per socket: CONNECTING (non-blocking connect) -> HELLO (writing the hello)
 * -> SENT. Socket 0 then waits for the listener's ack; the connection is ready
 * when every hello is out and the ack is valid. Past STRATA_CONNECT_TIMEOUT
 * the attempt fails with STRATA_ERR_TIMEOUT and the handle is reset, so a
 * later call starts over.
 *
 * A caller that abandons a connect in progress (never calls again) leaks its
 * state; the contract gives the transport no later chance to free it.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

/* Mixed into the handle's check word so zeroed or foreign bytes never validate. */
#define TCP_CONNECT_CHECK_SALT 0x5a17c0de5a17c0deull

enum { SOCK_CONNECTING, SOCK_HELLO, SOCK_SENT };

struct stt_tcp_connect {
    uint64_t start_ns;
    uint64_t conn_id;
    int nsocks;
    int fds[STT_TCP_MAX_SOCKS];
    uint8_t stage[STT_TCP_MAX_SOCKS];
    uint32_t sent[STT_TCP_MAX_SOCKS];
    uint8_t hello[STT_TCP_MAX_SOCKS][STT_TCP_HELLO_BYTES];
    uint32_t ack_have;
    uint8_t ack[STT_TCP_ACK_BYTES];
    char peer[STT_TCP_ADDR_STRLEN];
};

static uint64_t connect_check(const stt_tcp_handle_t *h, const stt_tcp_connect_t *cs)
{
    return (uint64_t)(uintptr_t)cs ^ h->listener_id ^ TCP_CONNECT_CHECK_SALT;
}

static void connect_state_free(stt_tcp_connect_t *cs)
{
    for (int i = 0; i < cs->nsocks; i++)
        if (cs->fds[i] >= 0)
            close(cs->fds[i]);
    free(cs);
}

static strata_status_t connect_handle_check(const stt_tcp_handle_t *h)
{
    const char *why = NULL;

    if (h->magic != STT_TCP_HANDLE_MAGIC)
        why = "bad magic (not a TCP transport handle)";
    else if (h->version != STT_TCP_PROTO_VERSION)
        why = "protocol version differs from ours";
    else if (h->addr.sa.sa_family != AF_INET && h->addr.sa.sa_family != AF_INET6)
        why = "unknown address family";
    if (why == NULL)
        return STRATA_OK;
    STU_WARN("tcp: connect: invalid handle: %s (magic %08x version %u family %u)", why,
             h->magic, h->version, h->addr.sa.sa_family);
    return STRATA_ERR_INVALID;
}

/* Opens the sockets and starts every connect. */
static strata_status_t connect_start(stt_tcp_handle_t *h, stt_tcp_connect_t **cs_p)
{
    strata_status_t status;
    int64_t nsocks = stu_param_int(STU_PARAM_SOCKET_NSOCKS);
    stt_tcp_connect_t *cs = calloc(1, sizeof(*cs));

    if (cs == NULL) {
        STU_WARN("tcp: no memory for a connect state (%zu bytes)", sizeof(*cs));
        return STRATA_ERR_NO_MEMORY;
    }
    /* Out-of-range values were reported once at init. */
    cs->nsocks = (int)(nsocks < 1 ? 1 : nsocks > STT_TCP_MAX_SOCKS ? STT_TCP_MAX_SOCKS : nsocks);
    cs->start_ns = stu_time_ns();
    cs->conn_id = stt_netif_random_u64();
    stt_netif_addr_format(&h->addr, cs->peer, sizeof(cs->peer));
    for (int i = 0; i < STT_TCP_MAX_SOCKS; i++)
        cs->fds[i] = -1;
    for (int i = 0; i < cs->nsocks; i++) {
        stt_tcp_hello_t hello = {.version = STT_TCP_PROTO_VERSION, .index = (uint8_t)i,
                                 .nsocks = (uint8_t)cs->nsocks,
                                 .listener_id = h->listener_id, .conn_id = cs->conn_id};
        stt_tcp_hello_encode(&hello, cs->hello[i]);
        status = stt_tcp_sock_open(h->addr.sa.sa_family, &cs->fds[i]);
        if (status != STRATA_OK)
            goto err_free;
        if (connect(cs->fds[i], &h->addr.sa, stt_netif_addr_len(&h->addr)) != 0 &&
            errno != EINPROGRESS && errno != EINTR) {
            STU_WARN("tcp: connect to %s (socket %d of %d): %s", cs->peer, i, cs->nsocks,
                     strerror(errno));
            status = errno == ECONNREFUSED ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
            goto err_free;
        }
        cs->stage[i] = SOCK_CONNECTING;
    }
    *cs_p = cs;
    return STRATA_OK;

err_free:
    connect_state_free(cs);
    return status;
}

/* Moves connecting sockets on once the kernel reports them writable. */
static strata_status_t connect_poll(stt_tcp_connect_t *cs)
{
    struct pollfd pfd[STT_TCP_MAX_SOCKS];
    int idx[STT_TCP_MAX_SOCKS];
    int n = 0;

    for (int i = 0; i < cs->nsocks; i++) {
        if (cs->stage[i] != SOCK_CONNECTING)
            continue;
        pfd[n] = (struct pollfd){.fd = cs->fds[i], .events = POLLOUT};
        idx[n++] = i;
    }
    if (n == 0)
        return STRATA_OK;
    if (poll(pfd, (nfds_t)n, 0) < 0) {
        if (errno == EINTR)
            return STRATA_OK;
        STU_WARN("tcp: poll while connecting to %s: %s", cs->peer, strerror(errno));
        return STRATA_ERR_IO;
    }
    for (int k = 0; k < n; k++) {
        int i = idx[k], err = 0;
        socklen_t len = sizeof(err);
        if (pfd[k].revents == 0)
            continue;
        if (getsockopt(cs->fds[i], SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        if (err != 0) {
            STU_WARN("tcp: connect to %s (socket %d of %d): %s", cs->peer, i, cs->nsocks,
                     strerror(err));
            return err == ECONNREFUSED ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
        }
        strata_status_t status = stt_tcp_sock_tune(cs->fds[i], cs->peer);
        if (status != STRATA_OK)
            return status;
        cs->stage[i] = SOCK_HELLO;
    }
    return STRATA_OK;
}

static strata_status_t connect_hellos_send(stt_tcp_connect_t *cs)
{
    for (int i = 0; i < cs->nsocks; i++) {
        while (cs->stage[i] == SOCK_HELLO) {
            ssize_t r = send(cs->fds[i], cs->hello[i] + cs->sent[i],
                             STT_TCP_HELLO_BYTES - cs->sent[i], MSG_NOSIGNAL);
            if (r > 0) {
                cs->sent[i] += (uint32_t)r;
                if (cs->sent[i] == STT_TCP_HELLO_BYTES)
                    cs->stage[i] = SOCK_SENT;
                continue;
            }
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            STU_WARN("tcp: sending the hello to %s (socket %d of %d): %s", cs->peer, i,
                     cs->nsocks, r == 0 ? "nothing written" : strerror(errno));
            return STRATA_ERR_REMOTE;
        }
    }
    return STRATA_OK;
}

/* OK with *ready set once the ack is in and valid. */
static strata_status_t connect_ack_read(stt_tcp_connect_t *cs, bool *ready)
{
    stt_tcp_ack_t ack;
    const char *why = NULL;

    *ready = false;
    if (cs->stage[0] != SOCK_SENT)
        return STRATA_OK;
    while (cs->ack_have < STT_TCP_ACK_BYTES) {
        ssize_t r = recv(cs->fds[0], cs->ack + cs->ack_have, STT_TCP_ACK_BYTES - cs->ack_have, 0);
        if (r > 0) {
            cs->ack_have += (uint32_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return STRATA_OK;
        STU_WARN("tcp: waiting for the ack of %s: %s after %u of %d bytes (the listener"
                 " rejected or dropped the connection)", cs->peer,
                 r == 0 ? "connection closed" : strerror(errno), cs->ack_have,
                 STT_TCP_ACK_BYTES);
        return STRATA_ERR_REMOTE;
    }
    if (stt_tcp_ack_decode(cs->ack, &ack, &why) != STRATA_OK) {
        STU_WARN("tcp: invalid ack from %s: %s", cs->peer, why);
        return STRATA_ERR_REMOTE;
    }
    if (ack.conn_id != cs->conn_id || ack.nsocks != cs->nsocks) {
        STU_WARN("tcp: ack from %s is for connection %016llx with %u sockets, ours is %016llx"
                 " with %d", cs->peer, (unsigned long long)ack.conn_id, ack.nsocks,
                 (unsigned long long)cs->conn_id, cs->nsocks);
        return STRATA_ERR_REMOTE;
    }
    for (int i = 0; i < cs->nsocks; i++)
        if (cs->stage[i] != SOCK_SENT)
            return STRATA_OK;    /* cannot happen (the listener waits for all), but be safe */
    *ready = true;
    return STRATA_OK;
}

/* Writes the in-progress state (cs, or NULL when done or reset) back into the caller's handle. */
static void connect_handle_store(void *handle, stt_tcp_handle_t *h, stt_tcp_connect_t *cs)
{
    h->connect = cs;
    h->connect_check = cs != NULL ? connect_check(h, cs) : 0;
    memcpy(handle, h, sizeof(*h));
}

strata_status_t stt_tcp_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                stt_comm_t **send_p)
{
    stt_tcp_handle_t h;
    stt_tcp_connect_t *cs;
    stt_tcp_dev_t d;
    strata_status_t status;
    bool ready = false;

    if (handle == NULL || send_p == NULL) {
        STU_WARN("tcp: connect(dev %d) called with a NULL %s", dev,
                 handle ? "output" : "handle");
        return STRATA_ERR_INVALID;
    }
    /* The handle is the caller's bytes, aligned or not (NCCL embeds it in its own
     * structs): work on a copy and store the state back. */
    memcpy(&h, handle, sizeof(h));
    status = connect_handle_check(&h);
    if (status != STRATA_OK)
        return status;
    cs = h.connect;
    if (cs == NULL) {
        status = stt_tcp_device_get(dev, &d);
        if (status != STRATA_OK)
            return status;
        status = connect_start(&h, &cs);
        if (status != STRATA_OK)
            return status;
        connect_handle_store(handle, &h, cs);
    } else if (h.connect_check != connect_check(&h, cs)) {
        STU_WARN("tcp: connect: the handle's in-progress state is corrupt (handle copied or"
                 " overwritten while connecting?)");
        return STRATA_ERR_INVALID;
    }

    status = connect_poll(cs);
    if (status == STRATA_OK)
        status = connect_hellos_send(cs);
    if (status == STRATA_OK)
        status = connect_ack_read(cs, &ready);
    if (status != STRATA_OK)
        goto err_reset;
    if (ready) {
        int nsocks = cs->nsocks;
        char peer[STT_TCP_ADDR_STRLEN];
        memcpy(peer, cs->peer, sizeof(peer));
        int fds[STT_TCP_MAX_SOCKS];
        memcpy(fds, cs->fds, sizeof(fds));
        free(cs);                       /* the comm owns the sockets now */
        connect_handle_store(handle, &h, NULL);
        STU_INFO(STU_LOG_NET, "tcp: connected to %s with %d sockets", peer, nsocks);
        return stt_tcp_send_create(dev, fds, nsocks, peer, send_p);
    }
    int64_t timeout_ms = stu_param_int(STU_PARAM_CONNECT_TIMEOUT);
    if (timeout_ms > 0 && stu_time_ns() - cs->start_ns > (uint64_t)timeout_ms * 1000000ull) {
        STU_WARN("tcp: connecting to %s took longer than STRATA_CONNECT_TIMEOUT=%lld ms"
                 " (listener gone, or not calling accept?)", cs->peer, (long long)timeout_ms);
        status = STRATA_ERR_TIMEOUT;
        goto err_reset;
    }
    *send_p = NULL;
    return STRATA_OK;

err_reset:
    connect_state_free(cs);
    connect_handle_store(handle, &h, NULL);
    return status;
}
