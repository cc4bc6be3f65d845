/*
 * The plugin's fault matrix: a peer process killed with SIGKILL, stopped with
 * SIGSTOP, or closing its comms, at each phase (listening, idle after the
 * handshake, sending to us, receiving from us, closing). The survivor's
 * pending requests must fail with ncclRemoteError within a bounded time
 * (never hang, never report success); a stopped peer is not a dead one, so
 * nothing may fail while it is stopped. The fixture's teardown checks that
 * nothing is left: no peer process, and no descriptor once the plugin is
 * unloaded. Every wait is bounded; each case prints one "matrix" line with
 * the elapsed time, which is not asserted (docs/reliability.md, Fault matrix).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>

#include <cmocka.h>

#include "func_common.h"

/* Bound on noticing a dead peer: seconds, on a loaded machine (sanitizers scale it). */
#define FAULT_DETECT_S 30.0

/* What a case holds: the fixture, the peer, the link to it, one request and its buffer. */
typedef struct fault_case {
    func_fix_t *fix;
    sts_peer_t peer;
    sts_net_link_t link;
    sts_net_req_t r;
    sts_net_buf_t b;
} fault_case_t;

/* Starts the peer playing scenario and links to it. */
static void fault_begin(void **state, const char *scenario, fault_case_t *c)
{
    memset(c, 0, sizeof(*c));
    c->fix = *state;
    c->r.result = ncclInProgress;
    func_start(c->fix, &c->peer, scenario, 0, &c->link);
}

/* Waits for the peer's READY, progressing reqs (may be NULL) meanwhile. */
static void fault_wait_ready(func_fix_t *fix, sts_peer_t *peer, sts_net_req_t *reqs, int n)
{
    uint64_t deadline = sts_deadline(PEER_TIMEOUT_S);
    while (!sts_ctl_pending(peer->fd)) {
        if (reqs != NULL)
            sts_net_progress(fix->net, reqs, n);
        if (stu_deadline_passed(deadline))
            fail_msg("the peer never reported READY");
    }
    if (sts_ctl_expect(peer->fd, STS_CTL_READY, NULL, 0, deadline) != 0)
        func_fail_with_peer(peer, "expected READY from the peer");
}

/* One row of the matrix: the transport, the phase, what the survivor saw, and when. */
static void fault_row(const char *what, const char *result, uint64_t start)
{
    const char *xport = getenv("STRATA_TRANSPORT");
    print_message("  matrix | %s | %s | %s after %.3f s\n", xport != NULL ? xport : "auto",
                  what, result, (double)(stu_time_ns() - start) / 1e9);
}

/* Tests req until it finishes; it must fail with ncclRemoteError in time. */
static void fault_expect_remote(func_fix_t *fix, sts_net_req_t *r, const char *what)
{
    uint64_t start = stu_time_ns();
    if (sts_net_wait_all(fix->net, r, 1, sts_deadline(FAULT_DETECT_S)) != 0)
        fail_msg("%s: still pending %.0f s after the peer died", what, FAULT_DETECT_S);
    if (r->result != ncclRemoteError)
        fail_msg("%s: %s after the peer died, want ncclRemoteError", what,
                 stb_plugin_result_str(r->result));
    fault_row(what, "ncclRemoteError", start);
}

/* A 4 KiB receive posted on link's receive comm into a fresh buffer b. */
static void fault_recv_post(func_fix_t *fix, sts_net_link_t *link, sts_net_buf_t *b,
                            sts_net_req_t *r)
{
    size_t size = 4096;
    int tag = 0;

    func_buf_get(fix, b, link->recv, size);
    *r = (sts_net_req_t){.result = ncclInProgress};
    assert_nccl_ok(sts_net_irecv_retry(fix->net, link->recv, 1, (void **)&b->data, &size, &tag,
                                       &b->mh, NULL, 0, sts_deadline(PEER_TIMEOUT_S), &r->req));
}

/* A 256 MiB send to a peer that never receives, posted and pushed until the peer is READY. */
static void fault_send_push(func_fix_t *fix, sts_peer_t *peer, sts_net_link_t *link,
                            sts_net_buf_t *b, sts_net_req_t *r)
{
    func_buf_get(fix, b, link->send, PEER_STALL_BYTES);
    *r = (sts_net_req_t){.result = ncclInProgress};
    assert_nccl_ok(stb_plugin_isend(fix->net, link->send, b->data, PEER_STALL_BYTES, 0, b->mh,
                                    &r->req));
    assert_non_null(r->req);
    fault_wait_ready(fix, peer, r, 1);
}

/* Closes the link, then frees the buffer (its requests ended or died with the comms). */
static void fault_end(func_fix_t *fix, sts_net_link_t *link, sts_net_buf_t *b)
{
    func_buf_dereg(fix, b);
    func_link_close(fix, link);
    func_buf_put(fix, b);
}

/*
 * The peer dies in the middle of sending us 256 MiB. Our receive is posted
 * once it stopped pushing (a post may read what already arrived), so the
 * message cannot be complete when it dies.
 */
static void fault_sender_killed(void **state)
{
    size_t size = PEER_STALL_BYTES;
    int tag = 0;
    fault_case_t c;

    fault_begin(state, "stall-send", &c);
    func_buf_get(c.fix, &c.b, c.link.recv, PEER_STALL_BYTES);
    fault_wait_ready(c.fix, &c.peer, NULL, 0);
    assert_nccl_ok(stb_plugin_irecv(c.fix->net, c.link.recv, 1, (void **)&c.b.data, &size, &tag,
                                    &c.b.mh, &c.r.req));
    assert_non_null(c.r.req);
    sts_peer_kill(&c.peer);
    fault_expect_remote(c.fix, &c.r, "receive from a killed sender");
    fault_end(c.fix, &c.link, &c.b);
}

/* The peer, which never receives, dies while we push 256 MiB to it. */
static void fault_receiver_killed(void **state)
{
    fault_case_t c;

    fault_begin(state, "stall-idle", &c);
    fault_send_push(c.fix, &c.peer, &c.link, &c.b, &c.r);
    for (int pass = 0; pass < 100 && c.r.req != NULL; pass++)
        sts_net_progress(c.fix->net, &c.r, 1);
    if (c.r.req == NULL)
        fail_msg("256 MiB send finished (%s) although the peer never received",
                 stb_plugin_result_str(c.r.result));
    sts_peer_kill(&c.peer);
    fault_expect_remote(c.fix, &c.r, "send to a killed receiver");
    fault_end(c.fix, &c.link, &c.b);
}

/* The peer dies with nothing in flight; a receive posted afterwards fails. */
static void fault_idle_peer_killed(void **state)
{
    fault_case_t c;

    fault_begin(state, "stall-idle", &c);
    fault_wait_ready(c.fix, &c.peer, NULL, 0);
    sts_peer_kill(&c.peer);
    fault_recv_post(c.fix, &c.link, &c.b, &c.r);
    fault_expect_remote(c.fix, &c.r, "receive posted after the peer died");
    fault_end(c.fix, &c.link, &c.b);
}

/* The peer listened, gave us its handle and died: connecting to it fails, in time. */
static void fault_listener_killed(void **state)
{
    func_fix_t *fix = *state;
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    uint64_t deadline = sts_deadline(PEER_TIMEOUT_S);
    void *send = NULL;
    sts_peer_t peer;

    func_spawn(&peer, 11, "listen-die", 0);
    if (sts_ctl_expect(peer.fd, STS_CTL_HANDLE, handle, sizeof(handle), deadline) != 0)
        func_fail_with_peer(&peer, "no handle from the peer");
    fault_wait_ready(fix, &peer, NULL, 0);
    sts_peer_kill(&peer);
    uint64_t start = stu_time_ns(), detect = sts_deadline(FAULT_DETECT_S);
    ncclResult_t res = sts_net_connect_wait(fix->net, 0, handle, detect, &send);
    if (res == ncclSuccess)
        fail_msg("connect to a killed listener succeeded");
    if (stu_deadline_passed(detect))
        fail_msg("connect to a killed listener still pending after %.0f s", FAULT_DETECT_S);
    fault_row("connect to a killed listener", stb_plugin_result_str(res), start);
}

/* The peer is killed after the handshake while our receive waits for it. */
static void fault_idle_peer_killed_pending(void **state)
{
    fault_case_t c;

    fault_begin(state, "stall-idle", &c);
    fault_recv_post(c.fix, &c.link, &c.b, &c.r);
    fault_wait_ready(c.fix, &c.peer, &c.r, 1);
    sts_peer_kill(&c.peer);
    fault_expect_remote(c.fix, &c.r, "receive pending when an idle peer is killed");
    fault_end(c.fix, &c.link, &c.b);
}

/*
 * The receiver is stopped (SIGSTOP) while we push 256 MiB to it: its kernel
 * still acknowledges, so nothing may fail while it is stopped; killed while
 * stopped, the send fails in time.
 */
static void fault_receiver_stopped_then_killed(void **state)
{
    const struct timespec nap = {0, 10 * 1000 * 1000};
    fault_case_t c;

    fault_begin(state, "stall-idle", &c);
    fault_send_push(c.fix, &c.peer, &c.link, &c.b, &c.r);
    assert_int_equal(kill(c.peer.pid, SIGSTOP), 0);
    uint64_t start = stu_time_ns();
    for (int i = 0; i < 100; i++) {        /* about a second of progress while stopped */
        sts_net_progress(c.fix->net, &c.r, 1);
        if (c.r.req == NULL)
            fail_msg("send ended (%s) while the receiver was only stopped",
                     stb_plugin_result_str(c.r.result));
        nanosleep(&nap, NULL);
    }
    fault_row("send to a stopped receiver", "still pending (no error)", start);
    sts_peer_kill(&c.peer);
    fault_expect_remote(c.fix, &c.r, "send to a receiver killed while stopped");
    fault_end(c.fix, &c.link, &c.b);
}

/* The peer closes its comms (a clean close) while our receive waits: it fails in time. */
static void fault_peer_closes(void **state)
{
    fault_case_t c;

    fault_begin(state, "close-early", &c);
    fault_recv_post(c.fix, &c.link, &c.b, &c.r);
    fault_wait_ready(c.fix, &c.peer, &c.r, 1);
    assert_int_equal(sts_ctl_send(c.peer.fd, STS_CTL_GO, NULL, 0), 0);
    fault_expect_remote(c.fix, &c.r, "receive pending when the peer closes its comms");
    func_finish(&c.peer);
    fault_end(c.fix, &c.link, &c.b);
}

/* After a peer died, the plugin still connects to a new one (nothing global broke). */
static void fault_survivor_reconnects(void **state)
{
    func_fix_t *fix = *state;
    sts_net_link_t link;
    sts_peer_t peer;

    func_start(fix, &peer, "stall-idle", 0, &link);
    fault_wait_ready(fix, &peer, NULL, 0);
    sts_peer_kill(&peer);
    func_link_close(fix, &link);

    func_start(fix, &peer, "echo-smoke", 0, &link);
    func_echo(fix, &peer, &link, peer_smoke, PEER_COUNT(peer_smoke));
    func_link_close(fix, &link);
    func_finish(&peer);
}

/*
 * The handshake, a step at a time. The peer makes k accept (or connect) calls, each
 * answered by our side, which calls connect (accept) without pause; then it is stopped for
 * a second (optionally: nothing may fail meanwhile) and killed. Our side must then end
 * in time: a connect still pending fails; a comm the handshake gave us fails its first
 * request (a 256 MiB send, which cannot complete into a dead peer, or a receive). Our
 * accept never fails for a connector's death: the listener goes on.
 */
static const char *hs_what(char *buf, size_t len, const char *peer_side, int k, int stop)
{
    snprintf(buf, len, "%s killed%s after %d %s call(s)", peer_side, stop ? " (stopped 1 s first)" : "",
             k, strcmp(peer_side, "listener") == 0 ? "accept" : "connect");
    return buf;
}

/* About a second of polling fn's side while the peer is stopped. */
#define HS_STOP_PASSES 100
static const struct timespec hs_nap = {0, 10 * 1000 * 1000};

/* A comm the handshake gave us: its first request fails once the peer is dead. */
static void hs_comm_fails(func_fix_t *fix, void *comm, int is_send, const char *what)
{
    sts_net_req_t r = {.result = ncclInProgress};
    sts_net_buf_t b;
    size_t size = is_send ? PEER_STALL_BYTES : 4096;
    int tag = 0;

    func_buf_get(fix, &b, comm, size);
    if (is_send)
        assert_nccl_ok(stb_plugin_isend(fix->net, comm, b.data, size, 0, b.mh, &r.req));
    else
        assert_nccl_ok(stb_plugin_irecv(fix->net, comm, 1, (void **)&b.data, &size, &tag, &b.mh,
                                        &r.req));
    assert_non_null(r.req);
    fault_expect_remote(fix, &r, what);
    func_buf_dereg(fix, &b);
    if (is_send)
        stb_plugin_close_send(fix->net, comm);
    else
        stb_plugin_close_recv(fix->net, comm);
    func_buf_put(fix, &b);
}

static void hs_listener_dies(func_fix_t *fix, int k, int stop)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE], what[128];
    uint64_t deadline = sts_deadline(PEER_TIMEOUT_S);
    void *send = NULL;
    ncclResult_t res = ncclSuccess;
    sts_peer_t peer;

    hs_what(what, sizeof(what), "listener", k, stop);
    func_spawn(&peer, 11, "accept-steps", k);
    if (sts_ctl_expect(peer.fd, STS_CTL_HANDLE, handle, sizeof(handle), deadline) != 0)
        func_fail_with_peer(&peer, "no handle from the peer");
    assert_int_equal(sts_ctl_send(peer.fd, STS_CTL_GO, NULL, 0), 0);
    while (!sts_ctl_pending(peer.fd)) {
        if (send == NULL && (res = stb_plugin_connect(fix->net, 0, handle, &send)) != ncclSuccess)
            func_fail_with_peer(&peer, "%s: connect failed while the listener lived: %s", what,
                                stb_plugin_result_str(res));
        if (stu_deadline_passed(deadline))
            fail_msg("%s: the peer never reported READY", what);
        sts_relax();
    }
    if (sts_ctl_expect(peer.fd, STS_CTL_READY, NULL, 0, deadline) != 0)
        func_fail_with_peer(&peer, "expected READY from the peer");
    if (stop) {
        assert_int_equal(kill(peer.pid, SIGSTOP), 0);
        for (int i = 0; i < HS_STOP_PASSES; i++) {
            if (send == NULL && (res = stb_plugin_connect(fix->net, 0, handle, &send)) != ncclSuccess)
                fail_msg("%s: connect failed (%s) while the listener was only stopped", what,
                         stb_plugin_result_str(res));
            nanosleep(&hs_nap, NULL);
        }
    }
    int connected = send != NULL;
    sts_peer_kill(&peer);
    uint64_t start = stu_time_ns(), detect = sts_deadline(FAULT_DETECT_S);
    while (send == NULL && res == ncclSuccess && !stu_deadline_passed(detect)) {
        res = stb_plugin_connect(fix->net, 0, handle, &send);
        sts_relax();
    }
    if (send != NULL) {
        snprintf(what + strlen(what), sizeof(what) - strlen(what), ", %s: our send",
                 connected ? "connected before" : "connected after");
        hs_comm_fails(fix, send, 1, what);
    } else if (res == ncclSuccess) {
        fail_msg("%s: connect still pending %.0f s after the death", what, FAULT_DETECT_S);
    } else {
        snprintf(what + strlen(what), sizeof(what) - strlen(what), ": our connect");
        fault_row(what, stb_plugin_result_str(res), start);
    }
}

static void hs_connector_dies(func_fix_t *fix, int k, int stop)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE], what[128];
    uint64_t deadline = sts_deadline(PEER_TIMEOUT_S);
    void *listen = NULL, *recv = NULL;
    sts_peer_t peer;

    hs_what(what, sizeof(what), "connector", k, stop);
    assert_nccl_ok(stb_plugin_listen(fix->net, 0, handle, &listen));
    func_spawn(&peer, 11, "connect-steps", k);
    assert_int_equal(sts_ctl_send(peer.fd, STS_CTL_HANDLE, handle, sizeof(handle)), 0);
    while (!sts_ctl_pending(peer.fd)) {
        if (recv == NULL)
            assert_nccl_ok(stb_plugin_accept(fix->net, listen, &recv));
        if (stu_deadline_passed(deadline))
            fail_msg("%s: the peer never reported READY", what);
        sts_relax();
    }
    if (sts_ctl_expect(peer.fd, STS_CTL_READY, NULL, 0, deadline) != 0)
        func_fail_with_peer(&peer, "expected READY from the peer");
    for (int i = 0; stop && i < HS_STOP_PASSES; i++) {
        if (recv == NULL)
            assert_nccl_ok(stb_plugin_accept(fix->net, listen, &recv));
        nanosleep(&hs_nap, NULL);
    }
    if (stop)
        assert_int_equal(kill(peer.pid, SIGSTOP), 0);
    int accepted = recv != NULL;
    sts_peer_kill(&peer);
    uint64_t start = stu_time_ns();
    /* a second of accept calls: never an error; a comm may still come out of them */
    for (int i = 0; i < HS_STOP_PASSES; i++) {
        if (recv == NULL)
            assert_nccl_ok(stb_plugin_accept(fix->net, listen, &recv));
        nanosleep(&hs_nap, NULL);
    }
    if (recv != NULL) {
        snprintf(what + strlen(what), sizeof(what) - strlen(what), ", %s: our receive",
                 accepted ? "accepted before" : "accepted after");
        hs_comm_fails(fix, recv, 0, what);
    } else {
        snprintf(what + strlen(what), sizeof(what) - strlen(what), ": our accept");
        fault_row(what, "no comm, listener goes on", start);
    }
    stb_plugin_close_listen(fix->net, listen);
}

/* The peer's listener dies after 0..3 accept calls (and once stopped first). */
static void fault_handshake_listener(void **state)
{
    for (int k = 0; k <= 3; k++)
        hs_listener_dies(*state, k, 0);
    hs_listener_dies(*state, 1, 1);
}

/* The peer's connector dies after 1..4 connect calls (and once stopped first). */
static void fault_handshake_connector(void **state)
{
    for (int k = 1; k <= 4; k++)
        hs_connector_dies(*state, k, 0);
    hs_connector_dies(*state, 1, 1);
}

int main(void)
{
    const struct CMUnitTest cases[] = {
        FUNC_CASE(fault_sender_killed),
        FUNC_CASE(fault_receiver_killed),
        FUNC_CASE(fault_idle_peer_killed),
        FUNC_CASE(fault_listener_killed),
        FUNC_CASE(fault_idle_peer_killed_pending),
        FUNC_CASE(fault_receiver_stopped_then_killed),
        FUNC_CASE(fault_peer_closes),
        FUNC_CASE(fault_survivor_reconnects),
        FUNC_CASE(fault_handshake_listener),
        FUNC_CASE(fault_handshake_connector),
    };
    return cmocka_run_group_tests_name("plugin_faults", cases, NULL, NULL);
}
