/*
 * Connect side of the UCX handshake: a state machine in a heap object whose
 * pointer lives in the caller's handle, after the bytes listen wrote.
 *
 *   CONNECTING (non-blocking TCP connect to the listener's side channel)
 *   -> HELLO (our worker is open; writing hello + worker address)
 *   -> REPLY (reading the acceptor's hello + worker address)
 *   -> the send comm: endpoint to the acceptor's worker, socket kept.
 *
 * Past STRATA_CONNECT_TIMEOUT the attempt fails with STRATA_ERR_TIMEOUT and
 * the handle is reset, so a later call starts over. A caller that abandons a
 * connect in progress leaks its state (the contract gives no later chance).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/ucx/ucx_internal.h"
#include "util/log.h"

/* Mixed into the handle's check word so zeroed or foreign bytes never validate. */
#define UCX_CONNECT_CHECK_SALT 0x0c0ffee5eed5a17eull

enum { CONNECTING, HELLO, REPLY };

typedef struct ucx_connect {
    int stage;
    uint32_t conn_id;
    uint64_t listener_id;
    stt_ucx_chan_t ch;
    stt_ucx_worker_t w;      /* open from HELLO on */
} ucx_connect_t;

/* Where connect keeps its state: right after the bytes listen wrote. */
typedef struct ucx_connect_slot {
    ucx_connect_t *state;
    uint64_t check;
} ucx_connect_slot_t;

_Static_assert(STT_UCX_HANDLE_BYTES + sizeof(ucx_connect_slot_t) <= STT_HANDLE_SIZE,
               "UCX handle and connect state exceed 128 bytes");

static uint64_t slot_check(const ucx_connect_t *cs, uint64_t listener_id)
{
    return (uint64_t)(uintptr_t)cs ^ listener_id ^ UCX_CONNECT_CHECK_SALT;
}

static void slot_store(void *handle, ucx_connect_t *cs, uint64_t listener_id)
{
    ucx_connect_slot_t slot = {.state = cs, .check = cs ? slot_check(cs, listener_id) : 0};
    memcpy((char *)handle + STT_UCX_HANDLE_BYTES, &slot, sizeof(slot));
}

static void connect_free(ucx_connect_t *cs)
{
    if (cs->w.worker != NULL)
        stt_ucx_worker_close(&cs->w);
    stt_ucx_chan_fini(&cs->ch, false);
    free(cs);
}

static strata_status_t connect_start(const stt_ucx_handle_t *h, ucx_connect_t **cs_p)
{
    char peer[STT_NETIF_ADDR_STRLEN];
    ucx_connect_t *cs;
    int fd;

    stt_netif_addr_format(&h->addr, peer, sizeof(peer));
    fd = socket(h->addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        STU_WARN("ucx: side channel socket to %s: %s", peer, strerror(errno));
        return STRATA_ERR_IO;
    }
    if (connect(fd, &h->addr.sa, stt_netif_addr_len(&h->addr)) != 0 && errno != EINPROGRESS) {
        STU_WARN("ucx: connect to %s: %s", peer, strerror(errno));
        close(fd);
        return errno == ECONNREFUSED ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
    }
    cs = calloc(1, sizeof(*cs));
    if (cs == NULL) {
        STU_WARN("ucx: no memory to connect to %s", peer);
        close(fd);
        return STRATA_ERR_NO_MEMORY;
    }
    stt_ucx_chan_init(&cs->ch, fd, peer);
    cs->stage = CONNECTING;
    cs->listener_id = h->listener_id;
    cs->conn_id = (uint32_t)stt_netif_random_u64();
    *cs_p = cs;
    return STRATA_OK;
}

/* CONNECTING -> HELLO once the socket is connected. */
static strata_status_t connect_poll(ucx_connect_t *cs)
{
    struct pollfd pfd = {.fd = cs->ch.fd, .events = POLLOUT};
    int err = 0;
    socklen_t len = sizeof(err);

    if (poll(&pfd, 1, 0) <= 0)
        return STRATA_OK;
    if (getsockopt(cs->ch.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        STU_WARN("ucx: connect to %s: %s", cs->ch.peer, strerror(err));
        return err == ECONNREFUSED || err == ECONNRESET ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
    }
    strata_status_t status = stt_ucx_worker_open(&cs->w, cs->ch.peer);
    if (status != STRATA_OK)
        return status;
    stt_ucx_hello_t hello = {
        .kind = STT_UCX_HELLO_CONNECT,
        .listener_id = cs->listener_id,
        .conn_id = cs->conn_id,
        .addr_len = (uint32_t)cs->w.addr_len,
    };
    status = stt_ucx_chan_set_hello(&cs->ch, &hello, cs->w.addr);
    if (status == STRATA_OK)
        cs->stage = HELLO;
    return status;
}

static strata_status_t connect_step(ucx_connect_t *cs, bool *ready)
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
            *ready = true;
        }
    }
    return status;
}

strata_status_t stt_ucx_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                stt_comm_t **send_p)
{
    stt_ucx_handle_t h;
    ucx_connect_slot_t slot;
    stt_netif_t nif;
    strata_status_t status;
    bool ready = false;

    if (handle == NULL || send_p == NULL) {
        STU_WARN("ucx: connect(dev %d) called with a NULL %s", dev, handle ? "output" : "handle");
        return STRATA_ERR_INVALID;
    }
    status = stt_ucx_handle_decode(handle, &h);
    if (status != STRATA_OK)
        return status;
    memcpy(&slot, (char *)handle + STT_UCX_HANDLE_BYTES, sizeof(slot));
    ucx_connect_t *cs = slot.state;
    if (cs == NULL) {
        status = stt_ucx_device_get(dev, &nif);
        if (status != STRATA_OK)
            return status;
        status = connect_start(&h, &cs);
        if (status != STRATA_OK)
            return status;
        slot_store(handle, cs, h.listener_id);
    } else if (slot.check != slot_check(cs, h.listener_id)) {
        STU_WARN("ucx: connect: the handle's in-progress state is corrupt (handle copied or"
                 " overwritten while connecting?)");
        return STRATA_ERR_INVALID;
    }

    status = connect_step(cs, &ready);
    if (status != STRATA_OK)
        goto err_reset;
    if (ready) {
        stt_ucx_hello_t in = cs->ch.in;
        status = stt_ucx_conn_create(STT_UCX_KIND_SEND, dev, &cs->w, cs->ch.fd, &in,
                                     cs->ch.in_addr, cs->conn_id, cs->ch.peer, send_p);
        stt_ucx_chan_fini(&cs->ch, true);   /* the comm owns the socket and the worker */
        connect_free(cs);
        slot_store(handle, NULL, h.listener_id);
        return status;
    }
    if (stt_ucx_chan_expired(&cs->ch, "connecting to")) {
        status = STRATA_ERR_TIMEOUT;
        goto err_reset;
    }
    *send_p = NULL;
    return STRATA_OK;

err_reset:
    connect_free(cs);
    slot_store(handle, NULL, h.listener_id);
    return status;
}
