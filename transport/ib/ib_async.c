/*
 * The async-event thread of a verbs context. Events about a QP or a CQ mark
 * the comm that owns it (qp_context / cq_context) so its next call fails;
 * device-fatal events count on the context, and every comm made on it fails;
 * a port's PORT_ERR counts on the context per port, and every virtual NIC's
 * comm with a member on that port fails that member over at its next progress
 * call (ib_failover.c), instead of after RC's retries (seconds to minutes).
 * A comm on a plain port leaves it to RC's retries: the port may come back
 * within them.
 * The thread touches a comm only between ibv_get_async_event and
 * ibv_ack_async_event; ibv_destroy_qp/cq wait for that ack, so a comm being
 * closed stays valid while its event is handled.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "transport/ib/ib_internal.h"
#include "util/log.h"

/*
 * A comm on one port fails; a virtual device's comm loses the member the QP or
 * CQ belongs to (its failover takes over, ib_failover.c).
 */
static void async_mark(stt_ib_conn_t *conn, enum ibv_event_type type, const struct ibv_qp *qp,
                       const struct ibv_cq *cq)
{
    if (conn == NULL)
        return;
    if (stt_ib_conn_vnic(conn)) {
        for (int q = 0; q < conn->nqps; q++)
            if (qp != NULL && conn->qps[q].qp == qp)
                __atomic_or_fetch(&conn->async_lost, 1 << conn->qps[q].member, __ATOMIC_RELEASE);
        for (int j = 0; j < conn->nmembers; j++)
            if (cq != NULL && conn->m[j].cq == cq)
                __atomic_or_fetch(&conn->async_lost, 1 << j, __ATOMIC_RELEASE);
        if (qp != NULL && conn->flush_qp.qp == qp)
            __atomic_or_fetch(&conn->async_lost, 1 << conn->flush_qp.member, __ATOMIC_RELEASE);
        return;
    }
    __atomic_store_n(&conn->async_err, (int)type + 1, __ATOMIC_RELEASE);
}

static void async_handle(stt_ib_ctx_t *ctx, struct ibv_async_event *ev)
{
    const char *what = stt_ib_verbs.event_type_str(ev->event_type);

    switch (ev->event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_PATH_MIG_ERR:
        STU_WARN("ib: %s: async event '%s' on QP 0x%x; its comm fails", ctx->name, what,
                 ev->element.qp->qp_num);
        async_mark(ev->element.qp->qp_context, ev->event_type, ev->element.qp, NULL);
        break;
    case IBV_EVENT_CQ_ERR:
        STU_WARN("ib: %s: async event '%s' (CQ overrun or error); its comm fails", ctx->name,
                 what);
        async_mark(ev->element.cq->cq_context, ev->event_type, NULL, ev->element.cq);
        break;
    case IBV_EVENT_DEVICE_FATAL:
        STU_WARN("ib: %s: async event '%s': every comm on this device fails", ctx->name, what);
        __atomic_add_fetch(&ctx->fatal, 1, __ATOMIC_RELEASE);
        break;
    case IBV_EVENT_PORT_ERR: {
        int port = (int)ev->element.port_num;
        bool watched = port >= 1 && port <= STT_IB_CTX_PORTS;
        if (watched)
            __atomic_add_fetch(&ctx->port_downs[port], 1, __ATOMIC_RELEASE);
        STU_WARN("ib: %s: async event '%s' (port %d): %s", ctx->name, what, port,
                 watched ? "virtual NIC members on it fail over now; other comms fail if RC's"
                 " retries do" : "not watched (port number too large); RC's retries decide");
        break;
    }
    case IBV_EVENT_SRQ_ERR:
        STU_WARN("ib: %s: async event '%s' (port %d)", ctx->name, what, ev->element.port_num);
        break;
    default:
        STU_INFO(STU_LOG_NET, "ib: %s: async event '%s'", ctx->name, what);
        break;
    }
}

static void *async_main(void *arg)
{
    stt_ib_ctx_t *ctx = arg;
    struct pollfd pfd[2] = {{.fd = ctx->vctx->async_fd, .events = POLLIN},
                            {.fd = ctx->async_stop_fd, .events = POLLIN}};

    for (;;) {
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            STU_WARN("ib: %s: async thread poll: %s; async events are no longer watched",
                     ctx->name, strerror(errno));
            return NULL;
        }
        if (pfd[1].revents != 0)
            return NULL;
        struct ibv_async_event ev;
        while (stt_ib_verbs.get_async_event(ctx->vctx, &ev) == 0) {
            async_handle(ctx, &ev);
            stt_ib_verbs.ack_async_event(&ev);
        }
    }
}

strata_status_t stt_ib_async_start(stt_ib_ctx_t *ctx)
{
    int flags = fcntl(ctx->vctx->async_fd, F_GETFL);

    if (flags < 0 || fcntl(ctx->vctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        STU_WARN("ib: %s: making the async fd non-blocking: %s", ctx->name, strerror(errno));
        return STRATA_ERR_IO;
    }
    ctx->async_stop_fd = eventfd(0, EFD_CLOEXEC);
    if (ctx->async_stop_fd < 0) {
        STU_WARN("ib: %s: eventfd: %s", ctx->name, strerror(errno));
        return STRATA_ERR_IO;
    }
    int rc = pthread_create(&ctx->async_thread, NULL, async_main, ctx);
    if (rc != 0) {
        STU_WARN("ib: %s: starting the async-event thread: %s", ctx->name, strerror(rc));
        close(ctx->async_stop_fd);
        ctx->async_stop_fd = -1;
        return STRATA_ERR_NO_RESOURCE;
    }
    ctx->async_running = true;
    return STRATA_OK;
}

void stt_ib_async_stop(stt_ib_ctx_t *ctx)
{
    uint64_t one = 1;

    if (write(ctx->async_stop_fd, &one, sizeof(one)) != sizeof(one))
        STU_WARN("ib: %s: stopping the async thread: %s", ctx->name, strerror(errno));
    pthread_join(ctx->async_thread, NULL);
    close(ctx->async_stop_fd);
    ctx->async_stop_fd = -1;
    ctx->async_running = false;
}
