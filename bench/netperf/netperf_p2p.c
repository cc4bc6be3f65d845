/* Point-to-point kernels through the plugin API (see bench_p2p.h). */
#include "bench/netperf/netperf_p2p.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "tools/lib/tool_util.h"
#include "util/time.h"

#define P2P_TAG 0
#define P2P_ACK_BYTES 8
/* Idle polls between two looks at the clock: ~a microsecond of polling, far below any timeout. */
#define P2P_CLOCK_EVERY 16
#define P2P_NO_SIZE_CHECK ((size_t)-1)

/* Bookkeeping of one wait: how long since the last progress, when to look at the peer. */
typedef struct p2p_wait {
    const char *what;
    size_t size;
    uint64_t idle_since_ns;     /* 0: not idle */
    uint64_t next_peer_check_ns;
    unsigned idle_polls;
} p2p_wait_t;

static void p2p_wait_init(p2p_wait_t *w, const char *what, size_t size)
{
    memset(w, 0, sizeof(*w));
    w->what = what;
    w->size = size;
}

static inline void p2p_wait_progress(p2p_wait_t *w)
{
    w->idle_since_ns = 0;
    w->idle_polls = 0;
}

static strata_status_t p2p_test(stb_p2p_t *p2p, void *req, size_t want, int *done_p);

/*
 * The side request: while a wait is on one comm, a request already posted on the other
 * (the ack a sender will receive after its window, the reply an initiator will receive
 * after its send, the responder's next receive) is tested on every idle poll too, as NCCL's
 * proxy tests every request it has posted. Without that, a comm whose end waits on its other
 * comm is never progressed: a virtual NIC's failover needs each end to answer the other's
 * frames, and two ends each waiting for a send whose failover needs the other's receive comm
 * would wait for each other until the timeout. Once it completes, waiting on it returns at
 * once.
 */
static void p2p_side_set(stb_p2p_t *p2p, void *req, size_t want)
{
    p2p->side = req;
    p2p->side_want = want;
    p2p->side_done = 0;
}

static strata_status_t p2p_side_poll(stb_p2p_t *p2p)
{
    if (p2p->side == NULL || p2p->side_done)
        return STRATA_OK;
    return p2p_test(p2p, p2p->side, p2p->side_want, &p2p->side_done);
}

/* Called after a poll that made no progress: the side request, a yield, and the bound. */
static strata_status_t p2p_wait_idle(stb_p2p_t *p2p, p2p_wait_t *w)
{
    strata_status_t status = p2p_side_poll(p2p);

    if (status != STRATA_OK)
        return status;
    if (!p2p->spin)
        sched_yield();
    if (w->idle_polls++ % P2P_CLOCK_EVERY != 0)
        return STRATA_OK;
    uint64_t now = stu_time_ns();
    if (w->idle_since_ns == 0) {
        w->idle_since_ns = now;
        w->next_peer_check_ns = now + STB_P2P_PEER_CHECK_MS * STU_NS_PER_MS;
        return STRATA_OK;
    }
    if (now - w->idle_since_ns > (uint64_t)p2p->timeout_ms * STU_NS_PER_MS) {
        stb_log_err("plugin %s of %zu bytes: no progress in %d ms (peer %s)", w->what, w->size,
                    p2p->timeout_ms, p2p->boot->peer);
        return STRATA_ERR_TIMEOUT;
    }
    if (now >= w->next_peer_check_ns) {
        w->next_peer_check_ns = now + STB_P2P_PEER_CHECK_MS * STU_NS_PER_MS;
        if (stb_boot_peer_failed(p2p->boot)) {
            stb_log_err("plugin %s of %zu bytes: the peer %s failed or left", w->what, w->size,
                        p2p->boot->peer);
            return STRATA_ERR_REMOTE;
        }
    }
    return STRATA_OK;
}

/* Tests req once. *done_p set when complete; a receive must report `want` bytes. */
static strata_status_t p2p_test(stb_p2p_t *p2p, void *req, size_t want, int *done_p)
{
    int got = 0;
    strata_status_t status = stb_plugin_check(stb_plugin_test(p2p->plugin, req, done_p, &got),
                                              "test");

    if (status == STRATA_OK && *done_p && want != P2P_NO_SIZE_CHECK && (size_t)got != want) {
        stb_log_err("plugin test: a %zu-byte receive completed with %d bytes", want, got);
        return STRATA_ERR_INTERNAL;
    }
    return status;
}

/* One isend (send = 1) or irecv of size bytes on the registered buffers; *req_p NULL: again. */
static strata_status_t p2p_post_once(stb_p2p_t *p2p, int send, size_t size, void **req_p)
{
    int tag = P2P_TAG;

    *req_p = NULL;
    if (send)
        return stb_plugin_check(stb_plugin_isend(p2p->plugin, p2p->scomm, p2p->sbuf, size,
                                                 P2P_TAG, p2p->smh, req_p), "isend");
    return stb_plugin_check(stb_plugin_irecv(p2p->plugin, p2p->rcomm, 1, &p2p->rbuf, &size, &tag,
                                             &p2p->rmh, req_p), "irecv");
}

static strata_status_t p2p_wait_req(stb_p2p_t *p2p, void *req, size_t want, const char *what)
{
    p2p_wait_t w;
    int done = 0;

    if (req == p2p->side) {
        /* waiting on the side request itself: it is no longer beside a wait */
        p2p->side = NULL;
        if (p2p->side_done)
            return STRATA_OK;
    }
    p2p_wait_init(&w, what, want);
    for (;;) {
        strata_status_t status = p2p_test(p2p, req, want, &done);
        if (status != STRATA_OK || done)
            return status;
        status = p2p_wait_idle(p2p, &w);
        if (status != STRATA_OK)
            return status;
    }
}

/* Posts one send (send = 1) or receive until the plugin accepts it; the comm must be idle. */
static strata_status_t p2p_post(stb_p2p_t *p2p, int send, size_t size, void **req_p)
{
    p2p_wait_t w;

    p2p_wait_init(&w, send ? "isend" : "irecv", size);
    for (;;) {
        void *req;
        strata_status_t status = p2p_post_once(p2p, send, size, &req);
        if (status != STRATA_OK)
            return status;
        if (req != NULL) {
            *req_p = req;
            return STRATA_OK;
        }
        status = p2p_wait_idle(p2p, &w);
        if (status != STRATA_OK)
            return status;
    }
}

/* Between looks at the bootstrap while connecting: whether the peer failed or left. */
typedef struct p2p_connect_watch {
    stb_boot_t *boot;
    uint64_t next_check_ns;
    int failed;
} p2p_connect_watch_t;

static int p2p_connect_give_up(void *arg)
{
    p2p_connect_watch_t *w = arg;
    uint64_t now = stu_time_ns();

    if (now < w->next_check_ns)
        return 0;
    w->next_check_ns = now + STB_P2P_PEER_CHECK_MS * STU_NS_PER_MS;
    w->failed = stb_boot_peer_failed(w->boot);
    return w->failed;
}

strata_status_t stb_p2p_open(stb_p2p_t *p2p, stb_plugin_t *plugin, stb_boot_t *boot, int dev,
                             int timeout_ms, int spin)
{
    unsigned char mine[STB_PLUGIN_HANDLE_SIZE], theirs[STB_PLUGIN_HANDLE_SIZE];
    p2p_connect_watch_t watch = {.boot = boot};
    strata_status_t status;

    memset(p2p, 0, sizeof(*p2p));
    p2p->plugin = plugin;
    p2p->boot = boot;
    p2p->dev = dev;
    p2p->timeout_ms = timeout_ms;
    p2p->spin = spin;
    memset(mine, 0, sizeof(mine));
    status = stb_plugin_check(stb_plugin_listen(plugin, dev, mine, &p2p->lcomm), "listen");
    if (status == STRATA_OK && p2p->lcomm == NULL) {
        stb_log_err("plugin listen on device %d returned success and no listen comm", dev);
        status = STRATA_ERR_INTERNAL;
    }
    /* The peer must hear of a failure here, or it would wait for a handle until its timeout. */
    strata_status_t sync = stb_boot_sync(boot, status);
    if (sync != STRATA_OK) {
        status = sync;
        goto err_close;
    }
    status = stb_boot_exchange(boot, mine, theirs, sizeof(mine));
    if (status != STRATA_OK)
        goto err_close;
    ncclResult_t res = stb_plugin_connect_accept(plugin, dev, theirs, p2p->lcomm,
                                                 stu_deadline_ms(timeout_ms),
                                                 p2p_connect_give_up, &watch, &p2p->scomm,
                                                 &p2p->rcomm);
    if (res == ncclSuccess)
        return STRATA_OK;
    if (watch.failed) {
        stb_log_err("the peer %s failed while connecting", boot->peer);
        status = STRATA_ERR_REMOTE;
    } else if (res == ncclInternalError) {
        stb_log_err("plugin connection with peer %s not ready after %d ms", boot->peer,
                    timeout_ms);
        status = STRATA_ERR_TIMEOUT;
    } else {
        status = stb_plugin_check(res, "connect/accept");
    }

err_close:
    stb_p2p_close(p2p);
    return status;
}

strata_status_t stb_p2p_reg(stb_p2p_t *p2p, void *sbuf, void *rbuf, size_t size)
{
    strata_status_t status = stb_plugin_check(
        stb_plugin_reg_mr(p2p->plugin, p2p->scomm, sbuf, size, NCCL_PTR_HOST, &p2p->smh), "regMr");

    if (status != STRATA_OK)
        return status;
    status = stb_plugin_check(
        stb_plugin_reg_mr(p2p->plugin, p2p->rcomm, rbuf, size, NCCL_PTR_HOST, &p2p->rmh), "regMr");
    if (status != STRATA_OK) {
        stb_plugin_dereg_mr(p2p->plugin, p2p->scomm, p2p->smh);
        p2p->smh = NULL;
        return status;
    }
    p2p->sbuf = sbuf;
    p2p->rbuf = rbuf;
    return STRATA_OK;
}

void stb_p2p_close(stb_p2p_t *p2p)
{
    if (p2p->rmh != NULL)
        stb_plugin_check(stb_plugin_dereg_mr(p2p->plugin, p2p->rcomm, p2p->rmh), "deregMr");
    if (p2p->smh != NULL)
        stb_plugin_check(stb_plugin_dereg_mr(p2p->plugin, p2p->scomm, p2p->smh), "deregMr");
    if (p2p->scomm != NULL)
        stb_plugin_check(stb_plugin_close_send(p2p->plugin, p2p->scomm), "closeSend");
    if (p2p->rcomm != NULL)
        stb_plugin_check(stb_plugin_close_recv(p2p->plugin, p2p->rcomm), "closeRecv");
    if (p2p->lcomm != NULL)
        stb_plugin_check(stb_plugin_close_listen(p2p->plugin, p2p->lcomm), "closeListen");
    p2p->rmh = p2p->smh = NULL;
    p2p->scomm = p2p->rcomm = p2p->lcomm = NULL;
}

/* One round trip, initiator side: receive posted first so the reply never waits for it. */
static strata_status_t p2p_roundtrip(stb_p2p_t *p2p, size_t size)
{
    void *rreq, *sreq;
    strata_status_t status = p2p_post(p2p, 0, size, &rreq);

    if (status == STRATA_OK) {
        p2p_side_set(p2p, rreq, size);
        status = p2p_post(p2p, 1, size, &sreq);
    }
    if (status == STRATA_OK)
        status = p2p_wait_req(p2p, sreq, P2P_NO_SIZE_CHECK, "isend");
    if (status == STRATA_OK)
        status = p2p_wait_req(p2p, rreq, size, "irecv");
    p2p->side = NULL;
    return status;
}

static strata_status_t p2p_pingpong_check(stb_p2p_t *p2p, int initiator, size_t size,
                                          uint64_t *wrong_p)
{
    void *req;
    strata_status_t status;

    stb_pattern_poison(p2p->rbuf, size);
    if (initiator) {
        stb_pattern_fill(p2p->sbuf, size, stb_pattern_seed(size, 1));
        status = p2p_roundtrip(p2p, size);
        if (status == STRATA_OK)
            *wrong_p += stb_pattern_check(p2p->rbuf, size, stb_pattern_seed(size, 0));
        return status;
    }
    status = p2p_post(p2p, 0, size, &req);
    if (status == STRATA_OK)
        status = p2p_wait_req(p2p, req, size, "irecv");
    if (status != STRATA_OK)
        return status;
    *wrong_p += stb_pattern_check(p2p->rbuf, size, stb_pattern_seed(size, 1));
    stb_pattern_fill(p2p->sbuf, size, stb_pattern_seed(size, 0));
    status = p2p_post(p2p, 1, size, &req);
    if (status == STRATA_OK)
        status = p2p_wait_req(p2p, req, P2P_NO_SIZE_CHECK, "isend");
    return status;
}

/* Responder: echo total messages, always with the next receive posted before waiting. */
static strata_status_t p2p_echo(stb_p2p_t *p2p, size_t size, int total)
{
    void *rreq = NULL, *sreq;
    strata_status_t status = total > 0 ? p2p_post(p2p, 0, size, &rreq) : STRATA_OK;

    for (int i = 0; i < total && status == STRATA_OK; i++) {
        status = p2p_wait_req(p2p, rreq, size, "irecv");
        if (status == STRATA_OK)
            status = p2p_post(p2p, 1, size, &sreq);
        if (status == STRATA_OK && i + 1 < total) {
            status = p2p_post(p2p, 0, size, &rreq);
            if (status == STRATA_OK)
                p2p_side_set(p2p, rreq, size);
        }
        if (status == STRATA_OK)
            status = p2p_wait_req(p2p, sreq, P2P_NO_SIZE_CHECK, "isend");
    }
    p2p->side = NULL;
    return status;
}

strata_status_t stb_p2p_pingpong(stb_p2p_t *p2p, int initiator, size_t size, int warmup,
                                 int iters, int check, double *rtt_us, uint64_t *wrong_p)
{
    strata_status_t status = STRATA_OK;

    if (check) {
        status = p2p_pingpong_check(p2p, initiator, size, wrong_p);
        if (status != STRATA_OK)
            return status;
    }
    if (!initiator)
        return p2p_echo(p2p, size, warmup + iters);
    for (int i = 0; i < warmup + iters && status == STRATA_OK; i++) {
        uint64_t t0 = stu_time_ns();
        status = p2p_roundtrip(p2p, size);
        if (i >= warmup && rtt_us != NULL)
            rtt_us[i - warmup] = (double)(stu_time_ns() - t0) * 1e-3;
    }
    return status;
}

/* count sends (send = 1) or receives, with `window` of them in flight. */
static strata_status_t p2p_stream_window(stb_p2p_t *p2p, int send, size_t size, int window,
                                         int count)
{
    void *reqs[STB_P2P_MAX_WINDOW];
    int posted = 0, done = 0;
    p2p_wait_t w;
    strata_status_t status = STRATA_OK;

    p2p_wait_init(&w, send ? "streaming isend" : "streaming irecv", size);
    while (status == STRATA_OK && done < count) {
        if (posted < count && posted - done < window) {
            void *req;
            status = p2p_post_once(p2p, send, size, &req);
            if (status == STRATA_OK && req != NULL) {
                reqs[posted++ % window] = req;
                p2p_wait_progress(&w);
                continue;
            }
        }
        int ok = 0;
        if (status == STRATA_OK && done < posted)
            status = p2p_test(p2p, reqs[done % window], send ? P2P_NO_SIZE_CHECK : size, &ok);
        if (ok) {
            done++;
            p2p_wait_progress(&w);
        } else if (status == STRATA_OK) {
            status = p2p_wait_idle(p2p, &w);
        }
    }
    return status;
}

/* Sender side of one phase: the window of sends, then the receiver's ack (posted first). */
static strata_status_t p2p_stream_send(stb_p2p_t *p2p, size_t size, int window, int count)
{
    void *ack;
    strata_status_t status = p2p_post(p2p, 0, P2P_ACK_BYTES, &ack);

    if (status == STRATA_OK) {
        p2p_side_set(p2p, ack, P2P_ACK_BYTES);
        status = p2p_stream_window(p2p, 1, size, window, count);
    }
    if (status == STRATA_OK)
        status = p2p_wait_req(p2p, ack, P2P_ACK_BYTES, "ack irecv");
    p2p->side = NULL;
    return status;
}

/* Receiver side of one phase: the window of receives, then the ack. */
static strata_status_t p2p_stream_recv(stb_p2p_t *p2p, size_t size, int window, int count)
{
    void *ack;
    strata_status_t status = p2p_stream_window(p2p, 0, size, window, count);

    if (status == STRATA_OK)
        status = p2p_post(p2p, 1, P2P_ACK_BYTES, &ack);
    if (status == STRATA_OK)
        status = p2p_wait_req(p2p, ack, P2P_NO_SIZE_CHECK, "ack isend");
    return status;
}

strata_status_t stb_p2p_stream(stb_p2p_t *p2p, int sender, size_t size, int window, int warmup,
                               int count, int check, double *elapsed_us_p, uint64_t *wrong_p)
{
    strata_status_t status;

    if (window < 1 || window > STB_P2P_MAX_WINDOW) {
        stb_log_err("window %d out of range 1..%d", window, STB_P2P_MAX_WINDOW);
        return STRATA_ERR_INVALID;
    }
    if (check) {
        if (sender) {
            stb_pattern_fill(p2p->sbuf, size, stb_pattern_seed(size, 1));
            status = p2p_stream_send(p2p, size, 1, 1);
        } else {
            stb_pattern_poison(p2p->rbuf, size);
            status = p2p_stream_recv(p2p, size, 1, 1);
            if (status == STRATA_OK)
                *wrong_p += stb_pattern_check(p2p->rbuf, size, stb_pattern_seed(size, 1));
        }
        if (status != STRATA_OK)
            return status;
    }
    if (warmup > 0) {
        status = sender ? p2p_stream_send(p2p, size, window, warmup)
                        : p2p_stream_recv(p2p, size, window, warmup);
        if (status != STRATA_OK)
            return status;
    }
    uint64_t t0 = stu_time_ns();
    status = sender ? p2p_stream_send(p2p, size, window, count)
                    : p2p_stream_recv(p2p, size, window, count);
    if (status == STRATA_OK && elapsed_us_p != NULL)
        *elapsed_us_p = (double)(stu_time_ns() - t0) * 1e-3;
    return status;
}
