/*
 * The other process of the functional tests: loads the built plugin like
 * NCCL does (dlopen, ncclNetPlugin_v<N>) and plays one scenario of
 * peer_scenarios.h against the test process, over real plugin connections,
 * checking every byte it receives. It reports a STS_CTL_RESULT on the control
 * socket and exits 0 only if all its checks passed (a LeakSanitizer report at
 * exit makes the status non-zero too).
 *
 *     helper_peer <control fd> <ABI version> <scenario> [argument]
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "peer_scenarios.h"
#include "sts_net.h"
#include "sts_proc.h"
#include "sts_util.h"

typedef struct peer {
    stb_plugin_t *net;
    int fd;                 /* control socket */
    int max_recvs;
    uint64_t deadline;      /* bounds the whole scenario */
    char err[400];
} peer_t;

/* Records the first failure; returns -1 so callers can `return peer_fail(...)`. */
__attribute__((format(printf, 2, 3))) static int peer_fail(peer_t *p, const char *fmt, ...)
{
    va_list ap;

    if (p->err[0] != '\0')
        return -1;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof(p->err), fmt, ap);
    va_end(ap);
    return -1;
}

/* A registered host buffer (sts_net_buf_t); a failure is recorded. */
static int buf_get(peer_t *p, sts_net_buf_t *b, void *comm, size_t size)
{
    ncclResult_t res = sts_net_buf_get(p->net, b, comm, size);
    if (res != ncclSuccess)
        return peer_fail(p, "regMr(%zu bytes): %s", size, stb_plugin_result_str(res));
    return 0;
}

/* Waits for every request; each must succeed. */
static int wait_ok(peer_t *p, sts_net_req_t *reqs, int n, const char *what)
{
    if (sts_net_wait_all(p->net, reqs, n, p->deadline) != 0)
        return peer_fail(p, "%s: not done before the deadline", what);
    for (int i = 0; i < n; i++)
        if (reqs[i].result != ncclSuccess)
            return peer_fail(p, "%s: request %d failed: %s", what, i,
                             stb_plugin_result_str(reqs[i].result));
    return 0;
}

static int send_one(peer_t *p, void *comm, sts_net_buf_t *b, size_t size, int tag)
{
    sts_net_req_t r = {.result = ncclInProgress};
    ncclResult_t res = sts_net_isend_retry(p->net, comm, b->data, size, tag, b->mh, NULL, 0,
                                           p->deadline, &r.req);
    if (res != ncclSuccess)
        return peer_fail(p, "isend(%zu bytes): %s", size, stb_plugin_result_str(res));
    return wait_ok(p, &r, 1, "isend");
}

/*
 * The send of the trunc scenario: a transport that sees the receive's size
 * (ib) fails it with TRUNCATED, ncclInvalidUsage; one that does not (tcp)
 * completes it. Both are right; only the receive must fail.
 */
static int send_truncated(peer_t *p, void *comm, sts_net_buf_t *b, size_t size)
{
    sts_net_req_t r = {.result = ncclInProgress};
    ncclResult_t res = sts_net_isend_retry(p->net, comm, b->data, size, 0, b->mh, NULL, 0,
                                           p->deadline, &r.req);
    if (res != ncclSuccess)
        return peer_fail(p, "isend(%zu bytes): %s", size, stb_plugin_result_str(res));
    if (sts_net_wait_all(p->net, &r, 1, p->deadline) != 0)
        return peer_fail(p, "truncated isend: not done before the deadline");
    if (r.result != ncclSuccess && r.result != ncclInvalidUsage)
        return peer_fail(p, "truncated isend failed: %s", stb_plugin_result_str(r.result));
    return 0;
}

static int link_up(peer_t *p, sts_net_link_t *link)
{
    char why[200];
    if (sts_net_link_open(p->net, 0, p->fd, p->deadline, link, why, sizeof(why)) != ncclSuccess)
        return peer_fail(p, "link: %s", why);
    return 0;
}

/* Sleeps until killed; reaching the deadline means the test forgot us. */
static int wait_for_kill(peer_t *p)
{
    const struct timespec nap = {0, 20 * 1000 * 1000};
    sts_ctl_send(p->fd, STS_CTL_READY, NULL, 0);
    while (!stu_deadline_passed(p->deadline))
        nanosleep(&nap, NULL);
    return peer_fail(p, "still alive at the deadline: the test was to kill this peer");
}

static int scenario_echo(peer_t *p, const size_t *sizes, int count)
{
    sts_net_link_t link;
    int rc = 0;

    if (link_up(p, &link) != 0)
        return -1;
    for (int i = 0; i < count && rc == 0; i++) {
        size_t size = sizes[i], rsize = size + peer_echo_slack(i);
        int tag = peer_echo_tag(i);
        sts_net_req_t r = {.result = ncclInProgress};
        sts_net_buf_t rb, sb;
        if (buf_get(p, &rb, link.recv, rsize) != 0)
            break;
        /* The same memory registered on the send comm too, as NCCL does. */
        sb = rb;
        if (stb_plugin_reg_mr(p->net, link.send, rb.data, rsize > 0 ? rsize : 1, NCCL_PTR_HOST,
                           &sb.mh) != ncclSuccess) {
            sts_net_buf_put(p->net, &rb);
            rc = peer_fail(p, "regMr on the send comm failed");
            break;
        }
        sb.comm = link.send;
        ncclResult_t res = sts_net_irecv_retry(p->net, link.recv, 1, (void **)&rb.data, &rsize,
                                               &tag, &rb.mh, NULL, 0, p->deadline, &r.req);
        if (res != ncclSuccess)
            rc = peer_fail(p, "irecv: %s", stb_plugin_result_str(res));
        else if ((rc = wait_ok(p, &r, 1, "echo receive")) == 0 && (size_t)r.sizes[0] != size)
            rc = peer_fail(p, "message %d: test reported %d bytes, sent %zu", i, r.sizes[0], size);
        if (rc == 0 && sts_pattern_check(rb.data, size, peer_echo_seed(i)) != SIZE_MAX)
            rc = peer_fail(p, "message %d (%zu bytes): data differs at byte %zu", i, size,
                           sts_pattern_check(rb.data, size, peer_echo_seed(i)));
        if (rc == 0)
            rc = send_one(p, link.send, &sb, size, tag);
        sts_net_buf_dereg(p->net, &sb);
        sts_net_buf_put(p->net, &rb);
    }
    sts_net_link_close(p->net, &link);
    return rc;
}

static int scenario_flood(peer_t *p, int rounds)
{
    const int n = p->max_recvs, nrecv = 32, total = n * nrecv;
    sts_net_req_t reqs[32];
    sts_net_link_t link;
    int rc = 0;

    if (link_up(p, &link) != 0)
        return -1;
    for (int r = 0; r < rounds && rc == 0; r++) {
        size_t off[32 * STB_PLUGIN_MAX_RECVS + 1] = {0};
        sts_net_buf_t b;
        for (int i = 0; i < total; i++)
            off[i + 1] = off[i] + peer_flood_size(r, i);
        if (buf_get(p, &b, link.recv, off[total]) != 0)
            break;
        for (int j = 0; j < nrecv && rc == 0; j++) {
            void *data[STB_PLUGIN_MAX_RECVS], *mhs[STB_PLUGIN_MAX_RECVS];
            size_t sizes[STB_PLUGIN_MAX_RECVS];
            int tags[STB_PLUGIN_MAX_RECVS];
            for (int k = 0; k < n; k++) {
                data[k] = b.data + off[j * n + k];
                sizes[k] = peer_flood_size(r, j * n + k);
                tags[k] = k;
                mhs[k] = b.mh;
            }
            reqs[j] = (sts_net_req_t){.result = ncclInProgress};
            ncclResult_t res = stb_plugin_irecv(p->net, link.recv, n, data, sizes, tags, mhs,
                                             &reqs[j].req);
            if (res != ncclSuccess || reqs[j].req == NULL)
                rc = peer_fail(p, "round %d: irecv %d of %d: %s%s", r, j, nrecv,
                               stb_plugin_result_str(res), reqs[j].req ? "" : " (no request)");
        }
        if (rc == 0)
            rc = wait_ok(p, reqs, nrecv, "flood receives");
        for (int i = 0; rc == 0 && i < total; i++) {
            int j = i / n, k = i % n;
            if ((size_t)reqs[j].sizes[k] != peer_flood_size(r, i))
                rc = peer_fail(p, "round %d message %d: %d bytes reported, %zu sent", r, i,
                               reqs[j].sizes[k], peer_flood_size(r, i));
            else if (sts_pattern_check(b.data + off[i], peer_flood_size(r, i),
                                       peer_flood_seed(r, i)) != SIZE_MAX)
                rc = peer_fail(p, "round %d message %d: data differs", r, i);
        }
        sts_net_buf_put(p->net, &b);
    }
    sts_net_link_close(p->net, &link);
    return rc;
}

static int scenario_tagged(peer_t *p)
{
    sts_net_link_t link;
    int rc = 0;

    if (link_up(p, &link) != 0)
        return -1;
    for (int n = 1; n <= p->max_recvs && rc == 0; n++) {
        sts_net_buf_t b[STB_PLUGIN_MAX_RECVS];
        sts_net_req_t reqs[STB_PLUGIN_MAX_RECVS];
        int perm[STB_PLUGIN_MAX_RECVS], got = 0;
        sts_permute(perm, n, (uint32_t)n);
        for (; got < n; got++) {
            if (buf_get(p, &b[got], link.send, peer_tagged_size(n, got)) != 0)
                break;
            sts_pattern_fill(b[got].data, b[got].size, peer_tagged_seed(n, got));
        }
        for (int k = 0; k < n && got == n && rc == 0; k++) {
            int i = perm[k];
            reqs[k] = (sts_net_req_t){.result = ncclInProgress};
            ncclResult_t res = sts_net_isend_retry(p->net, link.send, b[i].data, b[i].size,
                                                   peer_tagged_tag(i), b[i].mh, reqs, k,
                                                   p->deadline, &reqs[k].req);
            if (res != ncclSuccess)
                rc = peer_fail(p, "isend: %s", stb_plugin_result_str(res));
        }
        if (rc == 0 && got == n)
            rc = wait_ok(p, reqs, n, "tagged sends");
        for (int i = 0; i < got; i++)
            sts_net_buf_put(p->net, &b[i]);
        if (got < n)
            rc = -1;
    }
    sts_net_link_close(p->net, &link);
    return rc;
}

static int scenario_tags_shared(peer_t *p)
{
    enum { N = PEER_TAGS_T * PEER_TAGS_STEPS };
    sts_net_req_t reqs[N];
    size_t off[N + 1];
    int sent[PEER_TAGS_T] = {0}, nreq = 0, rc = 0;
    sts_net_link_t link;
    sts_net_buf_t b;

    if (link_up(p, &link) != 0)
        return -1;
    off[0] = 0;
    for (int m = 0; m < N; m++)
        off[m + 1] = off[m] + peer_tags_size(m % PEER_TAGS_T, m / PEER_TAGS_T);
    if (buf_get(p, &b, link.send, off[N]) != 0) {
        sts_net_link_close(p->net, &link);
        return -1;
    }
    for (int m = 0; m < N; m++)
        sts_pattern_fill(b.data + off[m], peer_tags_size(m % PEER_TAGS_T, m / PEER_TAGS_T),
                         peer_tags_seed(m % PEER_TAGS_T, m / PEER_TAGS_T));
    for (int round = 0; nreq < N && rc == 0; round++) {
        for (int t = 0; t < PEER_TAGS_T && rc == 0; t++) {
            int s = sent[t];
            if (s == PEER_TAGS_STEPS || (t % 2 == 1 && round % 3 != 0))
                continue;
            int m = s * PEER_TAGS_T + t;
            reqs[nreq] = (sts_net_req_t){.result = ncclInProgress};
            ncclResult_t res = sts_net_isend_retry(p->net, link.send, b.data + off[m],
                                                   peer_tags_size(t, s), peer_tags_tag(t), b.mh,
                                                   reqs, nreq, p->deadline, &reqs[nreq].req);
            if (res != ncclSuccess)
                rc = peer_fail(p, "isend (tag %d, step %d): %s", peer_tags_tag(t), s,
                               stb_plugin_result_str(res));
            nreq++;
            sent[t]++;
        }
        sts_net_progress(p->net, reqs, nreq);
        if (stu_deadline_passed(p->deadline))
            rc = peer_fail(p, "sends not all posted at the deadline");
    }
    if (rc == 0)
        rc = wait_ok(p, reqs, nreq, "tags-shared sends");
    sts_net_buf_put(p->net, &b);
    sts_net_link_close(p->net, &link);
    return rc;
}

static int scenario_trunc(peer_t *p)
{
    sts_net_link_t link;
    sts_net_buf_t b;
    int rc;

    if (link_up(p, &link) != 0)
        return -1;
    rc = buf_get(p, &b, link.send, PEER_TRUNC_SEND);
    if (rc == 0) {
        sts_pattern_fill(b.data, PEER_TRUNC_SEND, PEER_TRUNC_SEED1);
        rc = send_truncated(p, link.send, &b, PEER_TRUNC_SEND);
        sts_pattern_fill(b.data, PEER_TRUNC_NEXT, PEER_TRUNC_SEED2);
        if (rc == 0)
            rc = send_one(p, link.send, &b, PEER_TRUNC_NEXT, 0);
        sts_net_buf_put(p->net, &b);
    }
    /* Stay connected until the test has checked both receives. */
    if (rc == 0 && sts_ctl_expect(p->fd, STS_CTL_GO, NULL, 0, p->deadline) != 0)
        rc = peer_fail(p, "no GO from the test");
    sts_net_link_close(p->net, &link);
    return rc;
}

static int scenario_stall(peer_t *p, int send)
{
    const struct timespec nap = {0, 1000 * 1000};
    sts_net_req_t r = {.result = ncclInProgress};
    sts_net_link_t link;
    sts_net_buf_t b;

    if (link_up(p, &link) != 0)
        return -1;
    if (!send)
        return wait_for_kill(p);
    if (buf_get(p, &b, link.send, PEER_STALL_BYTES) != 0)
        return -1;
    ncclResult_t res = stb_plugin_isend(p->net, link.send, b.data, PEER_STALL_BYTES, 0, b.mh,
                                     &r.req);
    if (res != ncclSuccess || r.req == NULL)
        return peer_fail(p, "posting the send failed: %s", stb_plugin_result_str(res));
    /* Push what the socket buffers take while the test does not read. */
    for (int i = 0; i < 200 && r.req != NULL; i++) {
        sts_net_progress(p->net, &r, 1);
        nanosleep(&nap, NULL);
    }
    return wait_for_kill(p);
}

static int scenario_listen_die(peer_t *p)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
    void *listen = NULL;

    if (stb_plugin_listen(p->net, 0, handle, &listen) != ncclSuccess)
        return peer_fail(p, "listen failed");
    if (sts_ctl_send(p->fd, STS_CTL_HANDLE, handle, sizeof(handle)) != 0)
        return peer_fail(p, "cannot send the handle");
    return wait_for_kill(p);
}

/*
 * The handshake, step by step: the peer makes k calls of accept (on its listen comm) or
 * connect (to the test's handle), PEER_STEP_MS apart while the test drives its side
 * without pause, so each call moves the handshake one step as far as the other side's
 * bytes allow; then READY, and it waits to be killed holding what it has (a half-done
 * handshake, or the comm if it completed).
 */
static int scenario_accept_steps(peer_t *p, int k)
{
    const struct timespec nap = {0, PEER_STEP_MS * 1000 * 1000};
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
    void *listen = NULL, *recv = NULL;

    if (stb_plugin_listen(p->net, 0, handle, &listen) != ncclSuccess)
        return peer_fail(p, "listen failed");
    if (sts_ctl_send(p->fd, STS_CTL_HANDLE, handle, sizeof(handle)) != 0)
        return peer_fail(p, "cannot send the handle");
    if (sts_ctl_expect(p->fd, STS_CTL_GO, NULL, 0, p->deadline) != 0)
        return peer_fail(p, "expected GO");
    for (int i = 0; i < k && recv == NULL; i++) {
        nanosleep(&nap, NULL);
        if (stb_plugin_accept(p->net, listen, &recv) != ncclSuccess)
            return peer_fail(p, "accept call %d failed", i + 1);
    }
    return wait_for_kill(p);
}

static int scenario_connect_steps(peer_t *p, int k)
{
    const struct timespec nap = {0, PEER_STEP_MS * 1000 * 1000};
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    void *send = NULL;

    if (sts_ctl_expect(p->fd, STS_CTL_HANDLE, handle, sizeof(handle), p->deadline) != 0)
        return peer_fail(p, "no handle from the test");
    for (int i = 0; i < k && send == NULL; i++) {
        if (stb_plugin_connect(p->net, 0, handle, &send) != ncclSuccess)
            return peer_fail(p, "connect call %d failed", i + 1);
        nanosleep(&nap, NULL);
    }
    return wait_for_kill(p);
}

static int scenario_close_early(peer_t *p)
{
    sts_net_link_t link;

    if (link_up(p, &link) != 0)
        return -1;
    sts_ctl_send(p->fd, STS_CTL_READY, NULL, 0);
    int rc = sts_ctl_expect(p->fd, STS_CTL_GO, NULL, 0, p->deadline) != 0
                 ? peer_fail(p, "expected GO") : 0;
    sts_net_link_close(p->net, &link);
    return rc;
}

static int scenario_many(peer_t *p, int k)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE], copies[16][NCCL_NET_HANDLE_MAXSIZE];
    void *send[16] = {0};
    sts_net_req_t reqs[32];
    sts_net_buf_t b[32];
    int nb = 0, connected = 0, rc = 0;

    if (k < 1 || k > 16)
        return peer_fail(p, "many: k=%d out of 1..16", k);
    if (sts_ctl_expect(p->fd, STS_CTL_HANDLE, handle, sizeof(handle), p->deadline) != 0)
        return peer_fail(p, "no handle from the test");
    for (int i = 0; i < k; i++)
        memcpy(copies[i], handle, sizeof(handle));
    while (connected < k && rc == 0) {
        for (int i = 0; i < k && rc == 0; i++) {
            if (send[i] != NULL)
                continue;
            ncclResult_t res = stb_plugin_connect(p->net, 0, copies[i], &send[i]);
            if (res != ncclSuccess)
                rc = peer_fail(p, "connect %d: %s", i, stb_plugin_result_str(res));
            connected += send[i] != NULL;
        }
        if (connected < k && stu_deadline_passed(p->deadline))
            rc = peer_fail(p, "%d of %d connected at the deadline", connected, k);
        sts_relax();
    }
    for (int i = 0; i < k && rc == 0; i++) {
        uint32_t who = (uint32_t)i;
        if (buf_get(p, &b[nb], send[i], sizeof(who)) != 0 ||
            buf_get(p, &b[nb + 1], send[i], PEER_MANY_BIG) != 0) {
            rc = -1;
            nb += b[nb].data != NULL;
            break;
        }
        memcpy(b[nb].data, &who, sizeof(who));
        sts_pattern_fill(b[nb + 1].data, PEER_MANY_BIG, peer_many_seed(i));
        for (int m = 0; m < 2 && rc == 0; m++) {
            reqs[nb + m] = (sts_net_req_t){.result = ncclInProgress};
            if (sts_net_isend_retry(p->net, send[i], b[nb + m].data, b[nb + m].size, 0,
                                    b[nb + m].mh, reqs, nb + m, p->deadline,
                                    &reqs[nb + m].req) != ncclSuccess)
                rc = peer_fail(p, "isend on connection %d failed", i);
        }
        nb += 2;
    }
    if (rc == 0)
        rc = wait_ok(p, reqs, nb, "sends");
    if (rc == 0 && sts_ctl_send(p->fd, STS_CTL_READY, NULL, 0) != 0)
        rc = peer_fail(p, "control socket lost");
    if (rc == 0 && sts_ctl_expect(p->fd, STS_CTL_GO, NULL, 0, p->deadline) != 0)
        rc = peer_fail(p, "no GO from the test");
    for (int i = 0; i < nb; i++)
        sts_net_buf_dereg(p->net, &b[i]);
    for (int i = 0; i < k; i++)
        if (send[i] != NULL)
            stb_plugin_close_send(p->net, send[i]);
    for (int i = 0; i < nb; i++)
        sts_net_buf_put(p->net, &b[i]);
    return rc;
}

static int scenario_cycles(peer_t *p, int n)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE], copy[NCCL_NET_HANDLE_MAXSIZE];
    int fds_before, fds_after;

    if (sts_ctl_expect(p->fd, STS_CTL_HANDLE, handle, sizeof(handle), p->deadline) != 0)
        return peer_fail(p, "no handle from the test");
    long long rss_warm = -1;
    fds_before = sts_fd_count();
    for (int i = 0; i < n; i++) {
        void *send = NULL;
        sts_net_buf_t b;
        p->deadline = sts_deadline(PEER_TIMEOUT_S);   /* per cycle: a loaded machine is slow */
        if (i == PEER_CYCLES_WARMUP)
            rss_warm = sts_rss_bytes();
        if (i % PEER_CYCLES_SAMPLE == 0 && sts_fd_count() != fds_before)
            return peer_fail(p, "cycle %d: %d descriptors open, %d before the first", i,
                             sts_fd_count(), fds_before);
        memcpy(copy, handle, sizeof(copy));
        ncclResult_t res = sts_net_connect_wait(p->net, 0, copy, p->deadline, &send);
        if (res != ncclSuccess)
            return peer_fail(p, "cycle %d: connect: %s", i, stb_plugin_result_str(res));
        int rc = buf_get(p, &b, send, sizeof(uint32_t));
        if (rc == 0) {
            uint32_t v = (uint32_t)i;
            memcpy(b.data, &v, sizeof(v));
            rc = send_one(p, send, &b, sizeof(v), 0);
            sts_net_buf_put(p->net, &b);
        }
        stb_plugin_close_send(p->net, send);
        if (rc != 0)
            return rc;
    }
    fds_after = sts_fd_count_settle(fds_before, p->deadline);
    if (fds_after != fds_before)
        return peer_fail(p, "%d descriptors before %d connect/close cycles, %d after",
                         fds_before, n, fds_after);
    long long rss_end = sts_rss_bytes();
    if (rss_warm >= 0 && rss_end >= 0 && rss_end - rss_warm > PEER_CYCLES_RSS_SLACK)
        return peer_fail(p, "resident memory grew from %lld to %lld bytes over %d cycles",
                         rss_warm, rss_end, n - PEER_CYCLES_WARMUP);
    return 0;
}

static int scenario_inflight(peer_t *p)
{
    enum { NR = PEER_INFLIGHT_NSMALL_RECV + 1, NS = PEER_INFLIGHT_NSMALL_SEND + 1 };
    sts_net_req_t reqs[NR + NS];
    sts_net_buf_t b[NR + NS];
    sts_net_link_t link;
    int nb = 0, rc = 0;

    if (link_up(p, &link) != 0)
        return -1;
    /* Receives: 3 small, the big one, then small ones nobody sends. Sends: 3 small, big. */
    for (int i = 0; i < NR + NS && rc == 0; i++) {
        int is_recv = i < NR;
        int big = i == PEER_INFLIGHT_NSMALL_SEND || i == NR + PEER_INFLIGHT_NSMALL_SEND;
        size_t size = big ? PEER_BIG : PEER_INFLIGHT_SMALL;
        int tag = 0;
        if (buf_get(p, &b[i], is_recv ? link.recv : link.send, size) != 0)
            break;
        nb++;
        reqs[i] = (sts_net_req_t){.result = ncclInProgress};
        ncclResult_t res = is_recv
            ? stb_plugin_irecv(p->net, link.recv, 1, (void **)&b[i].data, &size, &tag, &b[i].mh,
                            &reqs[i].req)
            : stb_plugin_isend(p->net, link.send, b[i].data, size, tag, b[i].mh, &reqs[i].req);
        if (res != ncclSuccess || reqs[i].req == NULL)
            rc = peer_fail(p, "posting request %d: %s", i, stb_plugin_result_str(res));
    }
    for (int pass = 0; pass < 50 && rc == 0; pass++)
        sts_net_progress(p->net, reqs, nb);
    if (rc == 0 && sts_ctl_send(p->fd, STS_CTL_READY, NULL, 0) != 0)
        rc = peer_fail(p, "control socket lost");
    while (rc == 0 && !sts_ctl_pending(p->fd)) {
        sts_net_progress(p->net, reqs, nb);
        if (stu_deadline_passed(p->deadline))
            rc = peer_fail(p, "no GO from the test");
    }
    if (rc == 0 && sts_ctl_expect(p->fd, STS_CTL_GO, NULL, 0, p->deadline) != 0)
        rc = peer_fail(p, "expected GO");
    for (int i = 0; i < nb; i++)
        sts_net_buf_dereg(p->net, &b[i]);
    sts_net_link_close(p->net, &link);
    for (int i = 0; i < nb; i++)
        sts_net_buf_put(p->net, &b[i]);
    return rc;
}

static int scenario_send_close(peer_t *p)
{
    sts_net_link_t link;
    int rc = 0;

    if (link_up(p, &link) != 0)
        return -1;
    /* GO: the test's side of the link is up too (a link closed before it is, fails it). */
    if (sts_ctl_expect(p->fd, STS_CTL_GO, NULL, 0, p->deadline) != 0)
        rc = peer_fail(p, "no GO from the test");
    for (int i = 0; i < PEER_CLOSED_COUNT && rc == 0; i++) {
        sts_net_buf_t b;
        if ((rc = buf_get(p, &b, link.send, peer_closed_size(i))) != 0)
            break;
        sts_pattern_fill(b.data, b.size, peer_closed_seed(i));
        rc = send_one(p, link.send, &b, b.size, 0);
        sts_net_buf_put(p->net, &b);
    }
    sts_net_link_close(p->net, &link);
    if (rc == 0 && sts_ctl_send(p->fd, STS_CTL_READY, NULL, 0) != 0)
        rc = peer_fail(p, "READY: the control socket failed");
    return rc;
}

static int run(peer_t *p, const char *scenario, int arg)
{
    if (strcmp(scenario, "echo-matrix") == 0)
        return scenario_echo(p, peer_matrix, PEER_COUNT(peer_matrix));
    if (strcmp(scenario, "echo-smoke") == 0)
        return scenario_echo(p, peer_smoke, PEER_COUNT(peer_smoke));
    if (strcmp(scenario, "flood") == 0)
        return scenario_flood(p, arg > 0 ? arg : 1);
    if (strcmp(scenario, "tagged") == 0)
        return scenario_tagged(p);
    if (strcmp(scenario, "trunc") == 0)
        return scenario_trunc(p);
    if (strcmp(scenario, "stall-idle") == 0)
        return scenario_stall(p, 0);
    if (strcmp(scenario, "stall-send") == 0)
        return scenario_stall(p, 1);
    if (strcmp(scenario, "many") == 0)
        return scenario_many(p, arg);
    if (strcmp(scenario, "cycles") == 0)
        return scenario_cycles(p, arg);
    if (strcmp(scenario, "inflight") == 0)
        return scenario_inflight(p);
    if (strcmp(scenario, "send-close") == 0)
        return scenario_send_close(p);
    if (strcmp(scenario, "tags-shared") == 0)
        return scenario_tags_shared(p);
    if (strcmp(scenario, "listen-die") == 0)
        return scenario_listen_die(p);
    if (strcmp(scenario, "close-early") == 0)
        return scenario_close_early(p);
    if (strcmp(scenario, "accept-steps") == 0)
        return scenario_accept_steps(p, arg);
    if (strcmp(scenario, "connect-steps") == 0)
        return scenario_connect_steps(p, arg);
    return peer_fail(p, "unknown scenario '%s'", scenario);
}

int main(int argc, char **argv)
{
    static peer_t peer;
    peer_t *p = &peer;
    stb_plugin_props_t props;
    char why[200];
    int ndev = 0, rc, inherited;

    if (argc < 4) {
        fprintf(stderr, "usage: %s <control fd> <version> <scenario> [argument]\n", argv[0]);
        return 2;
    }
    p->fd = atoi(argv[1]);
    p->deadline = sts_deadline(PEER_TIMEOUT_S);
    /* The test's plugin sockets are close-on-exec: none may have leaked into us. */
    inherited = sts_socket_count(p->fd);
    if (stb_plugin_load(NULL, atoi(argv[2]), 0, &p->net, why, sizeof(why)) != STRATA_OK) {
        sts_ctl_result(p->fd, 1, "%s", why);
        return 1;
    }
    ncclResult_t res = stb_plugin_init(p->net, (uint64_t)getpid());
    if (res != ncclSuccess || stb_plugin_devices(p->net, &ndev) != ncclSuccess || ndev < 1 ||
        stb_plugin_props(p->net, 0, &props) != ncclSuccess) {
        sts_ctl_result(p->fd, 1, "plugin v%s: init %s, %d devices", argv[2], stb_plugin_result_str(res),
                       ndev);
        return 1;
    }
    p->max_recvs = props.max_recvs < 1 ? 1
                   : props.max_recvs > STB_PLUGIN_MAX_RECVS ? STB_PLUGIN_MAX_RECVS : props.max_recvs;
    if (inherited != 0)
        rc = peer_fail(p, "inherited %d socket(s) from the test process", inherited);
    else
        rc = run(p, argv[3], argc > 4 ? atoi(argv[4]) : 0);
    stb_plugin_finalize(p->net);
    if (stb_plugin_version(p->net) >= 11)
        stb_plugin_unload(p->net);
    else
        stb_plugin_forget(p->net);   /* older versions have no finalize: stay loaded */
    sts_ctl_result(p->fd, rc == 0 ? 0 : 1, "%s", rc == 0 ? "ok" : p->err);
    return rc == 0 ? 0 : 1;
}
