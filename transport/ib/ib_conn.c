/*
 * Connect side of the ib handshake: a state machine kept in a heap object
 * whose pointer lives in the caller's handle, after the bytes listen wrote.
 *
 *   CONNECTING  non-blocking TCP connect to the listener's side channel
 *   HELLO       the send comm exists (QPs in INIT); writing its metadata
 *   REPLY       reading the receiver's metadata; then QPs to RTR and RTS
 *   READY       writing "ready"; then the send comm is handed out
 *
 * Past STRATA_CONNECT_TIMEOUT the attempt fails with STRATA_ERR_TIMEOUT and
 * the handle is reset, so a later call starts over. A caller that abandons a
 * connect in progress leaks its state (the contract gives no later chance).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

#define CONNECT_CHECK_SALT 0x1bc0ffee1bc0ffeeull

enum { STAGE_CONNECTING, STAGE_HELLO, STAGE_REPLY, STAGE_READY };

struct stt_ib_connect {
    int stage;
    int fd;                      /* until the comm owns it */
    stt_ib_conn_t *conn;
    int dev;
    int tc;                      /* from the caller's cfg, or -1 */
    uint64_t start_ns;
    uint64_t conn_id;
    uint32_t done;
    uint8_t buf[STT_IB_META_BYTES];
    char peer[STT_IB_ADDR_STRLEN];
};

static uint64_t connect_check(const stt_ib_handle_t *h, const stt_ib_connect_t *cs)
{
    return (uint64_t)(uintptr_t)cs ^ h->listener_id ^ CONNECT_CHECK_SALT;
}

static void connect_state_free(stt_ib_connect_t *cs)
{
    if (cs->conn != NULL)
        stt_ib_conn_destroy(cs->conn);
    else if (cs->fd >= 0)
        close(cs->fd);
    free(cs);
}

static strata_status_t connect_start(int dev, const stt_ib_handle_t *h,
                                     const stt_conn_cfg_t *cfg, stt_ib_connect_t **cs_p)
{
    strata_status_t status;
    socklen_t len = h->addr.sa.sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                     : sizeof(struct sockaddr_in6);
    stt_ib_connect_t *cs = calloc(1, sizeof(*cs));

    if (cs == NULL) {
        STU_WARN("ib: no memory for a connect state (%zu bytes)", sizeof(*cs));
        return STRATA_ERR_NO_MEMORY;
    }
    cs->dev = dev;
    cs->tc = cfg != NULL && cfg->traffic_class != STT_TRAFFIC_CLASS_UNDEF ? cfg->traffic_class
                                                                          : -1;
    cs->start_ns = stu_time_ns();
    cs->conn_id = stt_ib_oob_random();
    stt_ib_oob_format(&h->addr.sa, cs->peer, sizeof(cs->peer));
    status = stt_ib_oob_socket(h->addr.sa.sa_family, &cs->fd);
    if (status != STRATA_OK) {
        free(cs);
        return status;
    }
    if (connect(cs->fd, &h->addr.sa, len) != 0 && errno != EINPROGRESS && errno != EINTR) {
        STU_WARN("ib: connecting the side channel to %s: %s", cs->peer, strerror(errno));
        status = errno == ECONNREFUSED ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
        connect_state_free(cs);
        return status;
    }
    cs->stage = STAGE_CONNECTING;
    *cs_p = cs;
    return STRATA_OK;
}

/* The socket is connected: make the send comm and its HELLO. */
static strata_status_t connect_made(stt_ib_connect_t *cs, const stt_ib_handle_t *h)
{
    strata_status_t status;
    stt_ib_meta_t hello;
    int64_t nqps = stu_param_int(STU_PARAM_IB_QPS_PER_CONNECTION);
    int64_t tc = stu_param_int(STU_PARAM_IB_TC);

    nqps = nqps < 1 ? 1 : nqps > STT_IB_MAX_QPS ? STT_IB_MAX_QPS : nqps;
    status = stt_ib_conn_create(STT_IB_KIND_SEND, cs->dev, (int)nqps, cs->fd, cs->peer,
                                &cs->conn);
    cs->fd = -1;                                 /* the comm owns it, even on failure */
    if (status != STRATA_OK)
        return status;
    cs->conn->tc = (uint8_t)(tc >= 0 && tc <= 255 ? tc : cs->tc >= 0 ? cs->tc : 0);
    stt_ib_conn_meta(cs->conn, STT_IB_META_HELLO, h->listener_id, cs->conn_id, &hello);
    stt_ib_meta_encode(&hello, cs->buf);
    cs->done = 0;
    cs->stage = STAGE_HELLO;
    return STRATA_OK;
}

static strata_status_t connect_poll(stt_ib_connect_t *cs, const stt_ib_handle_t *h)
{
    struct pollfd pfd = {.fd = cs->fd, .events = POLLOUT};
    int err = 0;
    socklen_t len = sizeof(err);

    if (poll(&pfd, 1, 0) < 0) {
        if (errno == EINTR)
            return STRATA_INPROGRESS;
        STU_WARN("ib: poll while connecting to %s: %s", cs->peer, strerror(errno));
        return STRATA_ERR_IO;
    }
    if (pfd.revents == 0)
        return STRATA_INPROGRESS;
    if (getsockopt(cs->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err != 0) {
        STU_WARN("ib: connecting the side channel to %s: %s", cs->peer, strerror(err));
        return err == ECONNREFUSED ? STRATA_ERR_REMOTE : STRATA_ERR_IO;
    }
    return connect_made(cs, h);
}

static strata_status_t connect_reply_done(stt_ib_connect_t *cs, const stt_ib_handle_t *h)
{
    strata_status_t status;
    stt_ib_meta_t reply, ready;
    const char *why = NULL;

    if (stt_ib_meta_decode(cs->buf, STT_IB_META_REPLY, &reply, &why) != STRATA_OK) {
        STU_WARN("ib: bad connection reply from %s: %s", cs->peer, why);
        return STRATA_ERR_REMOTE;
    }
    if (reply.conn_id != cs->conn_id || reply.listener_id != h->listener_id) {
        STU_WARN("ib: the reply from %s is for another connection (%016llx, ours %016llx)",
                 cs->peer, (unsigned long long)reply.conn_id, (unsigned long long)cs->conn_id);
        return STRATA_ERR_REMOTE;
    }
    status = stt_ib_conn_connect_qps(cs->conn, &reply, reply.gid_choice, false);
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

static strata_status_t connect_step(stt_ib_connect_t *cs, const stt_ib_handle_t *h)
{
    strata_status_t status = STRATA_OK;

    if (cs->stage == STAGE_CONNECTING) {
        status = connect_poll(cs, h);
        if (status != STRATA_OK)
            return status;
    }
    if (cs->stage == STAGE_HELLO) {
        status = stt_ib_oob_xfer(cs->conn->fd, true, cs->buf, STT_IB_META_BYTES, &cs->done,
                                 "the connection hello", cs->peer);
        if (status != STRATA_OK)
            return status;
        cs->done = 0;
        cs->stage = STAGE_REPLY;
    }
    if (cs->stage == STAGE_REPLY) {
        status = stt_ib_oob_xfer(cs->conn->fd, false, cs->buf, STT_IB_META_BYTES, &cs->done,
                                 "the connection reply", cs->peer);
        if (status != STRATA_OK)
            return status;
        status = connect_reply_done(cs, h);
        if (status != STRATA_OK)
            return status;
    }
    return stt_ib_oob_xfer(cs->conn->fd, true, cs->buf, STT_IB_META_BYTES, &cs->done,
                           "the ready message", cs->peer);
}

static strata_status_t connect_handle_check(const stt_ib_handle_t *h)
{
    const char *why = NULL;

    if (h->magic != STT_IB_HANDLE_MAGIC)
        why = "bad magic (not an ib transport handle)";
    else if (h->version != STT_IB_PROTO_VERSION)
        why = "protocol version differs from ours";
    else if (h->addr.sa.sa_family != AF_INET && h->addr.sa.sa_family != AF_INET6)
        why = "unknown address family";
    if (why == NULL)
        return STRATA_OK;
    STU_WARN("ib: connect: invalid handle: %s (magic %08x version %u family %u)", why,
             h->magic, h->version, h->addr.sa.sa_family);
    return STRATA_ERR_INVALID;
}

/* Writes the in-progress state (cs, or NULL when done or reset) back into the caller's handle. */
static void connect_handle_store(void *handle, stt_ib_handle_t *h, stt_ib_connect_t *cs)
{
    h->connect = cs;
    h->connect_check = cs != NULL ? connect_check(h, cs) : 0;
    memcpy(handle, h, sizeof(*h));
}

strata_status_t stt_ib_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                               stt_comm_t **send_p)
{
    stt_ib_handle_t h;
    stt_ib_connect_t *cs;
    strata_status_t status;

    if (handle == NULL || send_p == NULL) {
        STU_WARN("ib: connect(dev %d) called with a NULL %s", dev, handle ? "output" : "handle");
        return STRATA_ERR_INVALID;
    }
    /* The handle is the caller's bytes, aligned or not (NCCL embeds it in its own
     * structures): work on an aligned copy and store the in-progress state back. */
    memcpy(&h, handle, sizeof(h));
    status = connect_handle_check(&h);
    if (status != STRATA_OK)
        return status;
    cs = h.connect;
    if (cs == NULL) {
        if (stt_ib_device_at(dev) == NULL)
            return STRATA_ERR_NOT_FOUND;
        status = connect_start(dev, &h, cfg, &cs);
        if (status != STRATA_OK)
            return status;
        connect_handle_store(handle, &h, cs);
    } else if (h.connect_check != connect_check(&h, cs)) {
        STU_WARN("ib: connect: the handle's in-progress state is corrupt (handle copied or"
                 " overwritten while connecting?)");
        return STRATA_ERR_INVALID;
    }

    status = connect_step(cs, &h);
    if (status == STRATA_OK) {
        stt_ib_conn_t *conn = cs->conn;
        cs->conn = NULL;
        connect_state_free(cs);
        connect_handle_store(handle, &h, NULL);
        STU_INFO(STU_LOG_NET, "ib: connected to %s", conn->peer);
        *send_p = &conn->base;
        return STRATA_OK;
    }
    if (status != STRATA_INPROGRESS)
        goto err_reset;
    int64_t timeout_ms = stu_param_int(STU_PARAM_CONNECT_TIMEOUT);
    if (timeout_ms > 0 && stu_time_ns() - cs->start_ns > (uint64_t)timeout_ms * 1000000ull) {
        STU_WARN("ib: connecting to %s took longer than STRATA_CONNECT_TIMEOUT=%lld ms"
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
