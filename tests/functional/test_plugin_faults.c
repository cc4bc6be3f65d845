/*
 * A peer process killed with SIGKILL: the survivor's pending requests must
 * fail with ncclRemoteError within a bounded time (never hang, never report
 * success), whether the peer died sending, receiving, or idle. Every wait is
 * bounded; the elapsed time is printed, not asserted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "func_common.h"

/* Bound on noticing a dead peer: seconds, on a loaded machine (sanitizers scale it). */
#define FAULT_DETECT_S 30.0

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

/* Tests req until it finishes; it must fail with ncclRemoteError in time. */
static void fault_expect_remote(func_fix_t *fix, sts_net_req_t *r, const char *what)
{
    uint64_t start = stu_time_ns();
    if (sts_net_wait_all(fix->net, r, 1, sts_deadline(FAULT_DETECT_S)) != 0)
        fail_msg("%s: still pending %.0f s after the peer died", what, FAULT_DETECT_S);
    if (r->result != ncclRemoteError)
        fail_msg("%s: %s after the peer died, want ncclRemoteError", what,
                 stb_plugin_result_str(r->result));
    print_message("  %s: ncclRemoteError after %.3f s\n", what,
                  (double)(stu_time_ns() - start) / 1e9);
}

/*
 * The peer dies in the middle of sending us 256 MiB. Our receive is posted
 * once it stopped pushing (a post may read what already arrived), so the
 * message cannot be complete when it dies.
 */
static void fault_sender_killed(void **state)
{
    func_fix_t *fix = *state;
    sts_net_req_t r = {.result = ncclInProgress};
    size_t size = PEER_STALL_BYTES;
    sts_net_link_t link;
    sts_peer_t peer;
    sts_net_buf_t b;
    int tag = 0;

    func_start(fix, &peer, "stall-send", 0, &link);
    func_buf_get(fix, &b, link.recv, PEER_STALL_BYTES);
    fault_wait_ready(fix, &peer, NULL, 0);
    assert_nccl_ok(stb_plugin_irecv(fix->net, link.recv, 1, (void **)&b.data, &size, &tag, &b.mh,
                                 &r.req));
    assert_non_null(r.req);
    sts_peer_kill(&peer);
    fault_expect_remote(fix, &r, "receive from a killed sender");
    func_buf_dereg(fix, &b);
    func_link_close(fix, &link);
    func_buf_put(fix, &b);
}

/* The peer, which never receives, dies while we push 256 MiB to it. */
static void fault_receiver_killed(void **state)
{
    func_fix_t *fix = *state;
    sts_net_req_t r = {.result = ncclInProgress};
    sts_net_link_t link;
    sts_peer_t peer;
    sts_net_buf_t b;

    func_start(fix, &peer, "stall-idle", 0, &link);
    func_buf_get(fix, &b, link.send, PEER_STALL_BYTES);
    assert_nccl_ok(stb_plugin_isend(fix->net, link.send, b.data, PEER_STALL_BYTES, 0, b.mh,
                                 &r.req));
    assert_non_null(r.req);
    fault_wait_ready(fix, &peer, &r, 1);
    for (int pass = 0; pass < 100 && r.req != NULL; pass++)
        sts_net_progress(fix->net, &r, 1);
    if (r.req == NULL)
        fail_msg("256 MiB send finished (%s) although the peer never received",
                 stb_plugin_result_str(r.result));
    sts_peer_kill(&peer);
    fault_expect_remote(fix, &r, "send to a killed receiver");
    func_buf_dereg(fix, &b);
    func_link_close(fix, &link);
    func_buf_put(fix, &b);
}

/* The peer dies with nothing in flight; a receive posted afterwards fails. */
static void fault_idle_peer_killed(void **state)
{
    func_fix_t *fix = *state;
    sts_net_req_t r = {.result = ncclInProgress};
    size_t size = 4096;
    sts_net_link_t link;
    sts_peer_t peer;
    sts_net_buf_t b;
    int tag = 0;

    func_start(fix, &peer, "stall-idle", 0, &link);
    fault_wait_ready(fix, &peer, NULL, 0);
    sts_peer_kill(&peer);
    func_buf_get(fix, &b, link.recv, size);
    assert_nccl_ok(sts_net_irecv_retry(fix->net, link.recv, 1, (void **)&b.data, &size, &tag,
                                       &b.mh, NULL, 0, sts_deadline(PEER_TIMEOUT_S), &r.req));
    fault_expect_remote(fix, &r, "receive posted after the peer died");
    func_buf_dereg(fix, &b);
    func_link_close(fix, &link);
    func_buf_put(fix, &b);
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

int main(void)
{
    const struct CMUnitTest cases[] = {
        FUNC_CASE(fault_sender_killed),
        FUNC_CASE(fault_receiver_killed),
        FUNC_CASE(fault_idle_peer_killed),
        FUNC_CASE(fault_survivor_reconnects),
    };
    return cmocka_run_group_tests_name("plugin_faults", cases, NULL, NULL);
}
