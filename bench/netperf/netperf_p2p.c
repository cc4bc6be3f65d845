/* Point-to-point kernels through the plugin API (see bench_p2p.h). */
#include "bench/netperf/netperf_p2p.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tools/lib/tool_util.h"
#include "util/time.h"

#define P2P_TAG 0
#define P2P_ACK_BYTES 8
/* Idle polls between two looks at the clock: ~a microsecond of polling, far below any timeout. */
#define P2P_CLOCK_EVERY 16
/* Pause between connect/accept attempts that made no progress (connection setup is untimed). */
#define P2P_CONNECT_PAUSE_NS 20000L
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

/* Called after a poll that made no progress: yield, and bound the wait. */
static strata_status_t p2p_wait_idle(stb_p2p_t *p2p, p2p_wait_t *w)
{
    if (!p2p->spin)
        sched_yield();
    if (w->idle_polls++ % P2P_CLOCK_EVERY != 0)
        return STRATA_OK;
    uint64_t now = stu_time_ns();
    if (w->idle_since_ns == 0) {
        w->idle_since_ns = now;
        w->next_peer_check_ns = now + STB_P2P_PEER_CHECK_MS * 1000000ull;
        return STRATA_OK;
    }
    if (now - w->idle_since_ns > (uint64_t)p2p->timeout_ms * 1000000ull) {
        stb_log_err("plugin %s of %zu bytes: no progress in %d ms (peer %s)", w->what, w->size,
                    p2p->timeout_ms, p2p->boot->peer);
        return STRATA_ERR_TIMEOUT;
    }
    if (now >= w->next_peer_check_ns) {
        w->next_peer_check_ns = now + STB_P2P_PEER_CHECK_MS * 1000000ull;
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
    size_t got = 0;
    strata_status_t status = stb_plugin_test(p2p->plugin, req, done_p, &got);

    if (status == STRATA_OK && *done_p && want != P2P_NO_SIZE_CHECK && got != want) {
        stb_log_err("plugin test: a %zu-byte receive completed with %zu bytes", want, got);
        return STRATA_ERR_INTERNAL;
    }
    return status;
}

static strata_status_t p2p_wait_req(stb_p2p_t *p2p, void *req, size_t want, const char *what)
{
    p2p_wait_t w;
    int done = 0;

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
        void *req = NULL;
        strata_status_t status = send
            ? stb_plugin_isend(p2p->plugin, p2p->scomm, p2p->sbuf, size, P2P_TAG, p2p->smh, &req)
            : stb_plugin_irecv(p2p->plugin, p2p->rcomm, p2p->rbuf, size, P2P_TAG, p2p->rmh, &req);
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

strata_status_t stb_p2p_open(stb_p2p_t *p2p, stb_plugin_t *plugin, stb_boot_t *boot, int dev,
                             int timeout_ms, int spin)
{
    unsigned char mine[STB_PLUGIN_HANDLE_SIZE], theirs[STB_PLUGIN_HANDLE_SIZE];
    uint64_t deadline = stu_deadline_ms(timeout_ms);
    uint64_t next_peer_check = 0;
    strata_status_t status;

    memset(p2p, 0, sizeof(*p2p));
    p2p->plugin = plugin;
    p2p->boot = boot;
    p2p->dev = dev;
    p2p->timeout_ms = timeout_ms;
    p2p->spin = spin;
    memset(mine, 0, sizeof(mine));
    status = stb_plugin_listen(plugin, dev, mine, &p2p->lcomm);
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

    while (p2p->scomm == NULL || p2p->rcomm == NULL) {
        if (p2p->scomm == NULL) {
            status = stb_plugin_connect(plugin, dev, theirs, &p2p->scomm);
            if (status != STRATA_OK)
                goto err_close;
        }
        if (p2p->rcomm == NULL) {
            status = stb_plugin_accept(plugin, p2p->lcomm, &p2p->rcomm);
            if (status != STRATA_OK)
                goto err_close;
        }
        if (p2p->scomm != NULL && p2p->rcomm != NULL)
            break;
        uint64_t now = stu_time_ns();
        if (now >= deadline) {
            stb_log_err("plugin connection with peer %s not ready after %d ms (connect %s, "
                        "accept %s)", boot->peer, timeout_ms,
                        p2p->scomm != NULL ? "done" : "pending",
                        p2p->rcomm != NULL ? "done" : "pending");
            status = STRATA_ERR_TIMEOUT;
            goto err_close;
        }
        if (now >= next_peer_check) {
            next_peer_check = now + STB_P2P_PEER_CHECK_MS * 1000000ull;
            if (stb_boot_peer_failed(boot)) {
                stb_log_err("the peer %s failed while connecting", boot->peer);
                status = STRATA_ERR_REMOTE;
                goto err_close;
            }
        }
        struct timespec ts = {.tv_sec = 0, .tv_nsec = P2P_CONNECT_PAUSE_NS};
        nanosleep(&ts, NULL);
    }
    return STRATA_OK;

err_close:
    stb_p2p_close(p2p);
    return status;
}

strata_status_t stb_p2p_reg(stb_p2p_t *p2p, void *sbuf, void *rbuf, size_t size)
{
    strata_status_t status = stb_plugin_reg(p2p->plugin, p2p->scomm, sbuf, size, &p2p->smh);

    if (status != STRATA_OK)
        return status;
    status = stb_plugin_reg(p2p->plugin, p2p->rcomm, rbuf, size, &p2p->rmh);
    if (status != STRATA_OK) {
        stb_plugin_dereg(p2p->plugin, p2p->scomm, p2p->smh);
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
        stb_plugin_dereg(p2p->plugin, p2p->rcomm, p2p->rmh);
    if (p2p->smh != NULL)
        stb_plugin_dereg(p2p->plugin, p2p->scomm, p2p->smh);
    stb_plugin_close_send(p2p->plugin, p2p->scomm);
    stb_plugin_close_recv(p2p->plugin, p2p->rcomm);
    stb_plugin_close_listen(p2p->plugin, p2p->lcomm);
    p2p->rmh = p2p->smh = NULL;
    p2p->scomm = p2p->rcomm = p2p->lcomm = NULL;
}

/* One round trip, initiator side: receive posted first so the reply never waits for it. */
static strata_status_t p2p_roundtrip(stb_p2p_t *p2p, size_t size)
{
    void *rreq, *sreq;
    strata_status_t status = p2p_post(p2p, 0, size, &rreq);

    if (status == STRATA_OK)
        status = p2p_post(p2p, 1, size, &sreq);
    if (status == STRATA_OK)
        status = p2p_wait_req(p2p, sreq, P2P_NO_SIZE_CHECK, "isend");
    if (status == STRATA_OK)
        status = p2p_wait_req(p2p, rreq, size, "irecv");
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
        if (status == STRATA_OK && i + 1 < total)
            status = p2p_post(p2p, 0, size, &rreq);
        if (status == STRATA_OK)
            status = p2p_wait_req(p2p, sreq, P2P_NO_SIZE_CHECK, "isend");
    }
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

/* Sender side of one phase: count sends with `window` in flight, then the receiver's ack. */
static strata_status_t p2p_stream_send(stb_p2p_t *p2p, size_t size, int window, int count)
{
    void *reqs[STB_P2P_MAX_WINDOW], *ack;
    int posted = 0, done = 0;
    p2p_wait_t w;
    strata_status_t status = p2p_post(p2p, 0, P2P_ACK_BYTES, &ack);

    p2p_wait_init(&w, "streaming isend", size);
    while (status == STRATA_OK && done < count) {
        if (posted < count && posted - done < window) {
            void *req = NULL;
            status = stb_plugin_isend(p2p->plugin, p2p->scomm, p2p->sbuf, size, P2P_TAG,
                                      p2p->smh, &req);
            if (status == STRATA_OK && req != NULL) {
                reqs[posted++ % window] = req;
                p2p_wait_progress(&w);
                continue;
            }
        }
        int ok = 0;
        if (status == STRATA_OK && done < posted)
            status = p2p_test(p2p, reqs[done % window], P2P_NO_SIZE_CHECK, &ok);
        if (ok) {
            done++;
            p2p_wait_progress(&w);
        } else if (status == STRATA_OK) {
            status = p2p_wait_idle(p2p, &w);
        }
    }
    if (status != STRATA_OK)
        return status;
    return p2p_wait_req(p2p, ack, P2P_ACK_BYTES, "ack irecv");
}

/* Receiver side of one phase: count receives with `window` posted, then the ack. */
static strata_status_t p2p_stream_recv(stb_p2p_t *p2p, size_t size, int window, int count)
{
    void *reqs[STB_P2P_MAX_WINDOW], *ack;
    int posted = 0, done = 0;
    p2p_wait_t w;
    strata_status_t status = STRATA_OK;

    p2p_wait_init(&w, "streaming irecv", size);
    while (status == STRATA_OK && done < count) {
        if (posted < count && posted - done < window) {
            void *req = NULL;
            status = stb_plugin_irecv(p2p->plugin, p2p->rcomm, p2p->rbuf, size, P2P_TAG,
                                      p2p->rmh, &req);
            if (status == STRATA_OK && req != NULL) {
                reqs[posted++ % window] = req;
                p2p_wait_progress(&w);
                continue;
            }
        }
        int ok = 0;
        if (status == STRATA_OK && done < posted)
            status = p2p_test(p2p, reqs[done % window], size, &ok);
        if (ok) {
            done++;
            p2p_wait_progress(&w);
        } else if (status == STRATA_OK) {
            status = p2p_wait_idle(p2p, &w);
        }
    }
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
