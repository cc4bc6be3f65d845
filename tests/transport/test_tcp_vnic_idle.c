/*
 * A tcp virtual NIC's failover when the receiving end has nothing posted: the transport's
 * progress operation (transport/transport.h) must run the receive comm's side of it.
 *
 * Two emulated nodes with two rails each (tools/lib/tool_netns.h), the fused device
 * (STRATA_NET_FUSE=all) at both ends, the sender in node 0, the receiver in node 1,
 * driven through the tcp transport's table. After a first message, the parent makes
 * node 1's veth1 drop everything it sends (a tbf whose bucket no packet fits): the sender's
 * bytes on rail 1 still arrive, the receiver's acknowledgements of them never do. The sender
 * then sends a striped message; the receiver receives all of it, its receive completes, and
 * from then on it posts nothing and only calls stt_progress on its comm. The sender's send
 * cannot complete (rail 1's parts are never acknowledged) until its watch gives rail 1 up
 * after STRATA_SOCKET_USER_TIMEOUT and the failover runs: DOWN, which only a progressed
 * receive comm reads, POS back, an empty replay. The test asserts that the send completes,
 * that both ends counted one failover, and that the comm still carries a message on rail 0.
 *
 * Needs root (namespaces); skips otherwise. Nothing outlives a test.
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sts_cmocka.h"
#include "sts_proc.h"
#include "sts_util.h"
#include "sts_xport.h"
#include "transport/tcp/tcp.h"
#include "util/param.h"
#include "util/time.h"

#define IDLE_RAILS 2
#define IDLE_WAIT_MS 120000         /* the parent's bound on the whole test */
#define IDLE_CHILD_MS 90000         /* a child's bound on any wait */
#define IDLE_NAP_MS 5               /* the idle receiver's sleep between progress calls */
#define IDLE_MSG (32u << 10)        /* striped (IDLE_STRIPE_MIN): 8 KiB per socket, within
                                       the initial congestion window of a socket */
#define IDLE_STRIPE_MIN "4096"
#define IDLE_USER_TIMEOUT_MS "3000"
/* A tbf no packet fits in (bucket of 100 bytes): the interface sends nothing. */
static char *const idle_blackhole[] = {"tc", "qdisc", "add", "dev", "veth1", "root", "tbf",
                                       "rate", "8bit", "burst", "100", "limit", "1", NULL};

static const stt_ops_t *ops = &stt_tcp_ops;


static int idle_init(void)
{
    stt_props_t props;

    stu_param_reload();
    STS_CHILD_CHECK(stt_init(ops) == STRATA_OK, "init");
    STS_CHILD_CHECK(stt_get_props(ops, 0, &props) == STRATA_OK, "get_props");
    STS_CHILD_CHECK(strcmp(props.name, "veth0+veth1") == 0, "device 0 is %s", props.name);
    return 0;
}

static int idle_recv_one(stt_comm_t *comm, char *buf, size_t want)
{
    stt_req_t *req = NULL;
    void *data[1] = {buf};
    size_t cap[1] = {want}, got = 0;
    int tag[1] = {0};

    STS_CHILD_CHECK(stt_irecv(comm, 1, data, cap, tag, NULL, &req) == STRATA_OK && req != NULL,
                    "irecv");
    STS_CHILD_CHECK(sts_req_wait(req, stu_deadline_ms(IDLE_CHILD_MS), &got) == STRATA_OK &&
                    got == want, "receive of %zu", want);
    STS_CHILD_CHECK(sts_pattern_check(buf, want, (uint32_t)want) == SIZE_MAX, "data of %zu", want);
    return 0;
}

static int idle_send_one(stt_comm_t *comm, char *buf, size_t size)
{
    stt_req_t *req = NULL;

    sts_pattern_fill(buf, size, (uint32_t)size);
    STS_CHILD_CHECK(stt_isend(comm, buf, size, 0, NULL, &req) == STRATA_OK && req != NULL,
                    "isend");
    STS_CHILD_CHECK(sts_req_wait(req, stu_deadline_ms(IDLE_CHILD_MS), NULL) == STRATA_OK,
                    "send of %zu", size);
    return 0;
}

/* Node 1: listens, receives the first message and the striped one, then only progresses. */
static int idle_receiver(void *arg, int ctl)
{
    const uint64_t deadline = stu_deadline_ms(IDLE_CHILD_MS);
    uint8_t handle[STT_HANDLE_SIZE];
    stt_listen_t *l = NULL;
    stt_comm_t *comm = NULL;
    static char buf[IDLE_MSG];

    (void)arg;
    if (idle_init() != 0)
        return 1;
    STS_CHILD_CHECK(stt_listen(ops, 0, handle, &l) == STRATA_OK, "listen");
    STS_CHILD_CHECK(sts_ctl_send(ctl, STS_CTL_HANDLE, handle, sizeof(handle)) == 0, "handle");
    while (comm == NULL) {
        STS_CHILD_CHECK(stt_accept(l, &comm) == STRATA_OK && !stu_deadline_passed(deadline),
                        "accept");
        if (comm == NULL)
            poll(NULL, 0, 1);
    }
    if (idle_recv_one(comm, buf, 64) != 0)
        return 1;
    STS_CHILD_CHECK(sts_ctl_send(ctl, STS_CTL_READY, NULL, 0) == 0, "ready");
    STS_CHILD_CHECK(sts_ctl_expect(ctl, STS_CTL_GO, NULL, 0, deadline) == 0, "go");
    if (idle_recv_one(comm, buf, IDLE_MSG) != 0)
        return 1;
    /* Nothing posted from here: only the progress operation runs this end's failover. */
    while (sts_ctl_pending(ctl) == 0) {
        STS_CHILD_CHECK(stt_progress(comm) == STRATA_OK, "progress failed the comm");
        STS_CHILD_CHECK(!stu_deadline_passed(deadline), "no word from the parent");
        poll(NULL, 0, IDLE_NAP_MS);
    }
    STS_CHILD_CHECK(sts_ctl_expect(ctl, STS_CTL_GO, NULL, 0, deadline) == 0, "go");
    if (idle_recv_one(comm, buf, 5000) != 0)
        return 1;
    STS_CHILD_CHECK(comm->failovers == 1, "receiver: %u failovers, want 1", comm->failovers);
    stt_close_recv(comm);
    stt_close_listen(l);
    stt_fini(ops);
    return 0;
}

/* Node 0: connects, sends the first message, then the striped one, then one more. */
static int idle_sender(void *arg, int ctl)
{
    const uint64_t deadline = stu_deadline_ms(IDLE_CHILD_MS);
    uint8_t handle[STT_HANDLE_SIZE];
    stt_comm_t *comm = NULL;
    static char buf[IDLE_MSG];

    (void)arg;
    if (idle_init() != 0)
        return 1;
    STS_CHILD_CHECK(sts_ctl_expect(ctl, STS_CTL_HANDLE, handle, sizeof(handle), deadline) == 0,
                    "handle");
    while (comm == NULL) {
        STS_CHILD_CHECK(stt_connect(ops, 0, handle, NULL, &comm) == STRATA_OK &&
                        !stu_deadline_passed(deadline), "connect");
        if (comm == NULL)
            poll(NULL, 0, 1);
    }
    if (idle_send_one(comm, buf, 64) != 0)
        return 1;
    STS_CHILD_CHECK(sts_ctl_send(ctl, STS_CTL_READY, NULL, 0) == 0, "ready");
    STS_CHILD_CHECK(sts_ctl_expect(ctl, STS_CTL_GO, NULL, 0, deadline) == 0, "go");
    uint64_t t0 = stu_time_ns();
    if (idle_send_one(comm, buf, IDLE_MSG) != 0)
        return 1;
    printf("    sender: the striped send completed %.2f s after it was posted\n",
           (double)(stu_time_ns() - t0) / 1e9);
    STS_CHILD_CHECK(comm->failovers == 1, "sender: %u failovers, want 1", comm->failovers);
    STS_CHILD_CHECK(sts_ctl_send(ctl, STS_CTL_READY, NULL, 0) == 0, "ready");
    if (idle_send_one(comm, buf, 5000) != 0)
        return 1;
    stt_close_send(comm);
    stt_fini(ops);
    return 0;
}

static void test_failover_with_nothing_posted(void **state)
{
    stb_netns_t net;
    sts_peer_t peers[2];
    const uint64_t deadline = stu_deadline_ms(IDLE_WAIT_MS);
    uint8_t handle[STT_HANDLE_SIZE];

    (void)state;
    if (stb_netns_create_rails(&net, 2, IDLE_RAILS, 0) != STRATA_OK) {
        stb_netns_destroy(&net);
        skip();   /* no namespaces here (not root, or no kernel support) */
    }
    setenv("STRATA_NET_FUSE", "all", 1);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    setenv("STRATA_SOCKET_STRIPE_MIN", IDLE_STRIPE_MIN, 1);
    setenv("STRATA_SOCKET_USER_TIMEOUT", IDLE_USER_TIMEOUT_MS, 1);
    unsetenv("STRATA_SOCKET_IFNAME");
    unsetenv("STRATA_SOCKET_NSOCKS");
    assert_int_equal(sts_peer_fork(&peers[0], &net, 0, idle_sender, NULL), 0);
    assert_int_equal(sts_peer_fork(&peers[1], &net, 1, idle_receiver, NULL), 0);
    int ok = sts_ctl_expect(peers[1].fd, STS_CTL_HANDLE, handle, sizeof(handle), deadline) == 0 &&
             sts_ctl_send(peers[0].fd, STS_CTL_HANDLE, handle, sizeof(handle)) == 0 &&
             sts_ctl_expect(peers[0].fd, STS_CTL_READY, NULL, 0, deadline) == 0 &&
             sts_ctl_expect(peers[1].fd, STS_CTL_READY, NULL, 0, deadline) == 0;
    /* node 1's acknowledgements on rail 1 are lost from here */
    ok = ok && stb_netns_run(&net, 1, idle_blackhole) == STRATA_OK &&
         sts_ctl_send(peers[1].fd, STS_CTL_GO, NULL, 0) == 0 &&
         sts_ctl_send(peers[0].fd, STS_CTL_GO, NULL, 0) == 0 &&
         sts_ctl_expect(peers[0].fd, STS_CTL_READY, NULL, 0, deadline) == 0 &&
         sts_ctl_send(peers[1].fd, STS_CTL_GO, NULL, 0) == 0;
    int rc0 = sts_peer_wait(&peers[0], deadline), rc1 = sts_peer_wait(&peers[1], deadline);
    stb_netns_destroy(&net);
    unsetenv("STRATA_SOCKET_STRIPE_MIN");
    assert_true(ok);
    assert_int_equal(rc0, 0);
    assert_int_equal(rc1, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failover_with_nothing_posted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
