/*
 * The TCP transport between emulated nodes: processes in separate network
 * namespaces joined by a bridge (tools/lib/tool_netns.h). Device discovery inside a
 * namespace finds the veth, not lo; connections cross the link; every size
 * from 0 B to 64 MiB arrives intact with 1 and 4 sockets; a peer killed in the
 * middle of a transfer fails the other side with STRATA_ERR_REMOTE; a link
 * shaped to 1 Gbit/s still carries the data (its rate is printed, not checked).
 * The emulator's own promises are checked too: N nodes on the bridge reach
 * each other, and nothing (namespace, descriptor, child) outlives a test, even
 * one whose child crashed or hung.
 *
 * Needs root; every test skips when namespaces cannot be created. The parent
 * never initialises the transport (its device table would describe the root
 * namespace); each child does, inside its node.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sts_cmocka.h"
#include "sts_proc.h"
#include "sts_util.h"
#include "transport/tcp/tcp.h"
#include "util/param.h"
#include "util/sock.h"

#define CHILD_GIVE_UP_MS 90000                      /* a child gives up on any wait */
#define WAIT_MS 120000                               /* the parent's bound on a child */
#define CTL_MS 60000                                 /* bound on one control message */
#define IDLE_POLL_MS 100                             /* a child's nap when a test is pending */
#define MAX_PEERS 4
#define CHILD_MAX_FDS 16                             /* pollfds one comm may ask for */
#define TBF_1GBIT "tbf rate 1gbit burst 32kb latency 50ms"

static const stt_ops_t *ops = &stt_tcp_ops;

/* ------------------------------------------------------------------ child side */


/* Inside a node: the default discovery must pick the veth and nothing else. */
static int child_init(void)
{
    stt_props_t props;
    int ndev = 0;

    stu_param_reload();
    STS_CHILD_CHECK(stt_init(ops) == STRATA_OK, "init");
    STS_CHILD_CHECK(stt_devices(ops, &ndev) == STRATA_OK && ndev == 1, "%d devices, want 1", ndev);
    STS_CHILD_CHECK(stt_get_props(ops, 0, &props) == STRATA_OK, "get_props");
    STS_CHILD_CHECK(strcmp(props.name, STB_NETNS_IFNAME) == 0, "device 0 is '%s', want '%s'",
                props.name, STB_NETNS_IFNAME);
    return 0;
}

/*
 * Tests req until it is done or fails, sleeping in poll() on the comm's
 * descriptors between tries (the way the collective library will wait).
 */
static strata_status_t child_wait(stt_comm_t *comm, stt_req_t *req, size_t *sizes)
{
    uint64_t deadline = stu_deadline_ms(CHILD_GIVE_UP_MS);

    for (;;) {
        int done = 0;
        strata_status_t status = stt_test(req, &done, sizes);
        if (status != STRATA_OK || done)
            return status;
        if (stu_deadline_passed(deadline))
            return STRATA_ERR_TIMEOUT;
        struct pollfd fds[CHILD_MAX_FDS];
        int n = stt_poll_fds(comm, fds, CHILD_MAX_FDS);
        poll(n > 0 ? fds : NULL, (nfds_t)n, IDLE_POLL_MS);
    }
}

/*
 * Listens, hands the handle to the parent, accepts npeers connections and
 * puts each at its sender's index, which the sender's first message carries
 * (accept order is arbitrary).
 */
static int child_listen_accept(int ctl, int npeers, stt_listen_t **l_p, stt_comm_t **recvs)
{
    uint8_t handle[STT_HANDLE_SIZE];
    uint64_t deadline = stu_deadline_ms(CHILD_GIVE_UP_MS);

    STS_CHILD_CHECK(stt_listen(ops, 0, handle, l_p) == STRATA_OK, "listen");
    STS_CHILD_CHECK(stu_sock_send_all(ctl, handle, sizeof(handle), stu_deadline_ms(CTL_MS)) ==
                STRATA_OK, "sending the handle");
    for (int p = 0; p < npeers; p++)
        recvs[p] = NULL;
    for (int got = 0; got < npeers;) {
        stt_comm_t *c = NULL;
        stt_req_t *req = NULL;
        int32_t who = -1;
        void *data[1] = {&who};
        size_t cap[1] = {sizeof(who)}, size[1] = {0};
        int tag[1] = {0};
        STS_CHILD_CHECK(stt_accept(*l_p, &c) == STRATA_OK, "accept");
        STS_CHILD_CHECK(!stu_deadline_passed(deadline), "accept timed out");
        if (c == NULL) {
            poll(NULL, 0, 1);
            continue;
        }
        STS_CHILD_CHECK(stt_irecv(c, 1, data, cap, tag, NULL, &req) == STRATA_OK && req != NULL,
                    "irecv of the sender's index");
        STS_CHILD_CHECK(child_wait(c, req, size) == STRATA_OK && size[0] == sizeof(who),
                    "receiving the sender's index");
        STS_CHILD_CHECK(who >= 0 && who < npeers && recvs[who] == NULL, "sender index %d", who);
        recvs[who] = c;
        got++;
    }
    return 0;
}

/* Connects with the handle the parent relays, then says which sender this is. */
static int child_connect(int ctl, int32_t who, stt_comm_t **send_p)
{
    uint8_t handle[STT_HANDLE_SIZE];
    uint64_t deadline = stu_deadline_ms(CHILD_GIVE_UP_MS);
    stt_req_t *req = NULL;

    STS_CHILD_CHECK(stu_sock_recv_all(ctl, handle, sizeof(handle), stu_deadline_ms(CTL_MS)) ==
                STRATA_OK, "reading the handle");
    for (*send_p = NULL; *send_p == NULL;) {
        strata_status_t status = stt_connect(ops, 0, handle, NULL, send_p);
        STS_CHILD_CHECK(status == STRATA_OK, "connect: %s", strata_status_str(status));
        if (*send_p == NULL)
            poll(NULL, 0, 1);
        STS_CHILD_CHECK(!stu_deadline_passed(deadline), "connect timed out");
    }
    STS_CHILD_CHECK(stt_isend(*send_p, &who, sizeof(who), 0, NULL, &req) == STRATA_OK &&
                req != NULL, "isend of the sender's index");
    STS_CHILD_CHECK(child_wait(*send_p, req, NULL) == STRATA_OK, "sending the sender's index");
    return 0;
}

/* What one test asks of its children. */
typedef struct job {
    const size_t *sizes;
    int nsizes;
    int rounds;          /* how many times the size list is sent; <= 0: until killed */
    int npeers;          /* senders feeding one receiver */
    int peer;            /* this sender's index (tags and seeds) */
} job_t;

/* Reports a failed receive or send to the parent (the killed-peer test) and exits 3. */
static int child_report_failure(int ctl, strata_status_t status)
{
    int32_t s = status;
    stu_sock_send_all(ctl, &s, sizeof(s), stu_deadline_ms(CTL_MS));
    return 3;
}

/*
 * Receives message after message from every peer, two receives in flight per
 * peer so that checking one buffer overlaps the arrival of the next.
 */
static int child_receiver(void *arg, int ctl)
{
    const job_t *job = arg;
    stt_listen_t *l = NULL;
    stt_comm_t *recvs[MAX_PEERS];
    stt_req_t *reqs[MAX_PEERS][2] = {{NULL}};
    uint8_t *bufs[MAX_PEERS][2] = {{NULL}};
    size_t cap = 0;

    if (child_init() != 0 || child_listen_accept(ctl, job->npeers, &l, recvs) != 0)
        return 1;
    for (int i = 0; i < job->nsizes; i++)
        cap = job->sizes[i] > cap ? job->sizes[i] : cap;
    for (int p = 0; p < job->npeers; p++)
        for (int k = 0; k < 2; k++) {
            bufs[p][k] = malloc(cap ? cap : 1);
            STS_CHILD_CHECK(bufs[p][k] != NULL, "malloc %zu", cap);
        }
    int64_t total = job->rounds > 0 ? (int64_t)job->rounds * job->nsizes : INT64_MAX;
    uint64_t t0 = 0, bytes = 0;
    for (int64_t m = -1; m < total; m++) {
        for (int p = 0; p < job->npeers && m + 1 < total; p++) {
            int k = (int)((m + 1) & 1);
            void *data[1] = {bufs[p][k]};
            size_t caps[1] = {cap};
            int tags[1] = {p};
            strata_status_t status = stt_irecv(recvs[p], 1, data, caps, tags, NULL,
                                               &reqs[p][k]);
            if (status != STRATA_OK)
                return child_report_failure(ctl, status);
            STS_CHILD_CHECK(reqs[p][k] != NULL, "irecv: no slot with 2 receives posted");
        }
        if (m < 0)
            continue;
        int i = (int)(m % job->nsizes), k = (int)(m & 1);
        for (int p = 0; p < job->npeers; p++) {
            size_t got[1] = {0};
            strata_status_t status = child_wait(recvs[p], reqs[p][k], got);
            if (status != STRATA_OK)
                return child_report_failure(ctl, status);
            STS_CHILD_CHECK(got[0] == job->sizes[i], "peer %d size %d: got %zu, want %zu", p, i,
                        got[0], job->sizes[i]);
            STS_CHILD_CHECK(sts_pattern_check(bufs[p][k], got[0], (uint32_t)(i * MAX_PEERS + p)) ==
                        SIZE_MAX, "peer %d: %zu bytes corrupt", p, got[0]);
            if (m > 0)
                bytes += got[0];
        }
        if (m == 0)
            t0 = stu_time_ns();              /* the rate leaves out the first message */
        if (m == 0 && job->rounds <= 0) {
            int32_t s = STRATA_INPROGRESS;           /* data flows: the parent kills now */
            STS_CHILD_CHECK(stu_sock_send_all(ctl, &s, sizeof(s), stu_deadline_ms(CTL_MS)) ==
                        STRATA_OK, "reporting progress");
        }
    }
    double secs = (double)(stu_time_ns() - t0) / 1e9;
    printf("    receiver: %.1f MiB in %.3f s, %.3f Gbit/s (after the first message)\n",
           (double)bytes / (1 << 20), secs, (double)bytes * 8 / secs / 1e9);
    for (int p = 0; p < job->npeers; p++) {
        stt_close_recv(recvs[p]);
        free(bufs[p][0]);
        free(bufs[p][1]);
    }
    stt_close_listen(l);
    stt_fini(ops);
    return 0;
}

/* Sends the job's messages, two in flight so that filling one overlaps sending the other. */
static int child_sender(void *arg, int ctl)
{
    const job_t *job = arg;
    stt_comm_t *send = NULL;
    stt_req_t *reqs[2] = {NULL, NULL};
    uint8_t *bufs[2];
    size_t cap = 0;

    if (child_init() != 0 || child_connect(ctl, job->peer, &send) != 0)
        return 1;
    for (int i = 0; i < job->nsizes; i++)
        cap = job->sizes[i] > cap ? job->sizes[i] : cap;
    for (int k = 0; k < 2; k++) {
        bufs[k] = malloc(cap ? cap : 1);
        STS_CHILD_CHECK(bufs[k] != NULL, "malloc %zu", cap);
    }
    int64_t total = job->rounds > 0 ? (int64_t)job->rounds * job->nsizes : INT64_MAX;
    for (int64_t m = 0; m <= total; m++) {
        if (m < total) {
            int i = (int)(m % job->nsizes), k = (int)(m & 1);
            sts_pattern_fill(bufs[k], job->sizes[i], (uint32_t)(i * MAX_PEERS + job->peer));
            strata_status_t status = stt_isend(send, bufs[k], job->sizes[i], job->peer, NULL,
                                               &reqs[k]);
            if (status != STRATA_OK)
                return child_report_failure(ctl, status);
            STS_CHILD_CHECK(reqs[k] != NULL, "isend: no slot with 2 sends posted");
        }
        if (m > 0) {
            strata_status_t status = child_wait(send, reqs[(m - 1) & 1], NULL);
            if (status != STRATA_OK)
                return child_report_failure(ctl, status);
        }
    }
    stt_close_send(send);
    stt_fini(ops);
    free(bufs[0]);
    free(bufs[1]);
    return 0;
}

/* ------------------------------------------------------------------ parent side */

typedef struct fixture {
    stb_netns_t net;
    int fds_at_start;
    uint64_t ns_ids[STB_NETNS_MAX_NODES + 1];
    int nids;
} fixture_t;

static void env_defaults(const char *nsocks)
{
    unsetenv("STRATA_SOCKET_IFNAME");          /* default discovery, inside the node */
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    setenv("STRATA_SOCKET_NSOCKS", nsocks, 1);
    unsetenv("STRATA_SOCKET_STRIPE_MIN");
    unsetenv("STRATA_SOCKET_BUFSIZE");
    setenv("STRATA_SOCKET_USER_TIMEOUT", "5000", 1);
}

/* Builds nodes namespaces for one test, or skips it. */
static fixture_t *fixture_open(void **state, int nodes)
{
    fixture_t *fx = calloc(1, sizeof(*fx));

    assert_non_null(fx);
    fx->fds_at_start = sts_fd_count();
    *state = fx;
    strata_status_t status = stb_netns_create(&fx->net, nodes, 0);
    if (status == STRATA_ERR_UNSUPPORTED) {
        print_message("network namespaces unavailable here (needs root): skipped\n");
        skip();
    }
    assert_ok(status);
    fx->nids = stb_netns_ids(&fx->net, fx->ns_ids, STB_NETNS_MAX_NODES + 1);
    env_defaults("1");
    return fx;
}

/* Kills what a test left running, destroys the nodes, and checks nothing outlived them. */
static int fixture_teardown(void **state)
{
    fixture_t *fx = *state;
    int rc = 0;

    if (fx == NULL)
        return 0;
    sts_peer_kill_all();
    stb_netns_destroy(&fx->net);
    int held = fx->nids > 0 ? stb_netns_count_held(fx->ns_ids, fx->nids) : 0;
    int fds = sts_fd_count();
    if (held != 0 || fds != fx->fds_at_start) {
        fprintf(stderr, "left behind: %d namespaces still held, %d descriptors (had %d)\n",
                held, fds, fx->fds_at_start);
        rc = -1;
    }
    free(fx);
    *state = NULL;
    return rc;
}

static void wait_ok(sts_peer_t *child)
{
    pid_t pid = child->pid;
    int code = sts_peer_wait(child, stu_deadline_ms(WAIT_MS));
    if (code != 0)
        fail_msg("child %d: exit code %d", (int)pid, code);
}

/* Receiver on node 0, one sender per other node; the parent relays the handle. */
static void run_job(fixture_t *fx, job_t *recv_job, job_t *send_jobs, sts_peer_t *kids)
{
    uint8_t handle[STT_HANDLE_SIZE];

    assert_int_equal(sts_peer_fork(&kids[0], &fx->net, 0, child_receiver, recv_job), 0);
    assert_ok(stu_sock_recv_all(kids[0].fd, handle, sizeof(handle), stu_deadline_ms(CTL_MS)));
    for (int p = 0; p < recv_job->npeers; p++) {
        assert_int_equal(sts_peer_fork(&kids[p + 1], &fx->net, p + 1, child_sender,
                                       &send_jobs[p]), 0);
        assert_ok(stu_sock_send_all(kids[p + 1].fd, handle, sizeof(handle),
                                    stu_deadline_ms(CTL_MS)));
    }
}

static void test_sizes_across_namespaces(void **state)
{
    static const size_t sizes[] = {0, 1, 23, 4095, 4096, 65537, 256 << 10, (1 << 20) + 7,
                                   (4 << 20) + 13, 64 << 20};
    static const char *nsocks[] = {"1", "4"};
    fixture_t *fx = fixture_open(state, 2);

    for (int k = 0; k < 2; k++) {
        job_t job = {.sizes = sizes, .nsizes = sizeof(sizes) / sizeof(sizes[0]), .rounds = 1,
                     .npeers = 1, .peer = 0};
        sts_peer_t kids[2];
        env_defaults(nsocks[k]);
        print_message("  nsocks=%s\n", nsocks[k]);
        run_job(fx, &job, &job, kids);
        wait_ok(&kids[1]);
        wait_ok(&kids[0]);
    }
}

/* Three nodes on the bridge: two senders into one receiver, tags keep them apart. */
static void test_bridge_three_nodes(void **state)
{
    static const size_t sizes[] = {0, 100, (1 << 20) + 1, 8 << 20};
    fixture_t *fx = fixture_open(state, 3);
    job_t recv_job = {.sizes = sizes, .nsizes = 4, .rounds = 2, .npeers = 2};
    job_t send_jobs[2] = {recv_job, recv_job};
    sts_peer_t kids[3];

    env_defaults("2");
    send_jobs[1].peer = 1;
    run_job(fx, &recv_job, send_jobs, kids);
    for (int i = 2; i >= 0; i--)
        wait_ok(&kids[i]);
    /* Shaping a bridge port and lifting it again both work. */
    assert_ok(stb_netns_shape(&fx->net, 1, TBF_1GBIT));
    assert_ok(stb_netns_shape(&fx->net, 1, NULL));
}

/*
 * The peer is killed (SIGKILL) while 64 MiB messages stream: the survivor's
 * pending request must fail with STRATA_ERR_REMOTE, not hang. victim 1 kills
 * the sender, victim 0 the receiver.
 */
static void test_peer_killed_mid_transfer(void **state)
{
    static const size_t sizes[] = {64 << 20};
    fixture_t *fx = fixture_open(state, 2);

    for (int victim = 1; victim >= 0; victim--) {
        job_t job = {.sizes = sizes, .nsizes = 1, .rounds = 0, .npeers = 1};
        sts_peer_t kids[2];
        int32_t report = 0;
        uint8_t handle[STT_HANDLE_SIZE];

        env_defaults("4");
        assert_int_equal(sts_peer_fork(&kids[0], &fx->net, 0, child_receiver, &job), 0);
        assert_ok(stu_sock_recv_all(kids[0].fd, handle, sizeof(handle),
                                    stu_deadline_ms(CTL_MS)));
        assert_int_equal(sts_peer_fork(&kids[1], &fx->net, 1, child_sender, &job), 0);
        assert_ok(stu_sock_send_all(kids[1].fd, handle, sizeof(handle),
                                    stu_deadline_ms(CTL_MS)));
        /* The receiver says when the first message arrived: data is flowing. */
        assert_ok(stu_sock_recv_all(kids[0].fd, &report, sizeof(report),
                                    stu_deadline_ms(CTL_MS)));
        assert_status((strata_status_t)report, STRATA_INPROGRESS);
        int survivor = 1 - victim;
        uint64_t t0 = stu_time_ns();
        int ctl = kids[survivor].fd;
        sts_peer_kill(&kids[victim]);
        assert_int_equal(kids[victim].status, 128 + SIGKILL);
        assert_ok(stu_sock_recv_all(ctl, &report, sizeof(report), stu_deadline_ms(CTL_MS)));
        double secs = (double)(stu_time_ns() - t0) / 1e9;
        print_message("  %s killed: the %s got %s after %.3f s\n",
                      victim ? "sender" : "receiver", victim ? "receiver" : "sender",
                      strata_status_str((strata_status_t)report), secs);
        assert_status((strata_status_t)report, STRATA_ERR_REMOTE);
        assert_int_equal(sts_peer_wait(&kids[survivor], stu_deadline_ms(WAIT_MS)), 3);
    }
}

/* A 1 Gbit/s token bucket on the link: data still arrives intact; the rate is printed. */
static void test_shaped_link(void **state)
{
    static const size_t sizes[] = {4 << 20};
    fixture_t *fx = fixture_open(state, 2);
    job_t job = {.sizes = sizes, .nsizes = 1, .rounds = 24, .npeers = 1};
    sts_peer_t kids[2];

    assert_ok(stb_netns_shape(&fx->net, 0, TBF_1GBIT));
    env_defaults("1");
    print_message("  link shaped with '%s' (rate for information only):\n", TBF_1GBIT);
    run_job(fx, &job, &job, kids);
    wait_ok(&kids[1]);
    wait_ok(&kids[0]);
}

/* Dies of a crash signal, which cmocka's handler in this process would otherwise catch. */
static int child_crash(void *arg, int ctl)
{
    raise(SIGSEGV);
    return 0;
}

static int child_hang(void *arg, int ctl)
{
    for (;;)
        pause();
    return 0;
}

/* A child that dies, and one that never ends: the teardown still leaves nothing behind. */
static void test_helper_cleans_up(void **state)
{
    fixture_t *fx = fixture_open(state, 4);
    sts_peer_t crash, hang;

    assert_int_equal(fx->nids, 5);            /* four nodes and the hub */
    assert_int_equal(stb_netns_count_held(fx->ns_ids, fx->nids), 5);
    assert_int_equal(sts_peer_fork(&crash, &fx->net, 2, child_crash, NULL), 0);
    assert_int_equal(sts_peer_fork(&hang, &fx->net, 3, child_hang, NULL), 0);
    assert_int_equal(sts_peer_wait(&crash, stu_deadline_ms(WAIT_MS)), 128 + SIGSEGV);
    assert_int_equal(sts_peer_wait(&hang, stu_deadline_ms(1)), -1);
    assert_int_equal(hang.status, 128 + SIGKILL);
    assert_int_equal(sts_peer_fork(&hang, &fx->net, 3, child_hang, NULL), 0);
    /* Left running on purpose: the teardown kills it and checks the namespaces are gone. */
    char addr[32];
    stb_netns_addr(3, addr, sizeof(addr));
    assert_string_equal(addr, "198.51.100.4");
    char *bad[] = {"ip", "link", "set", "no-such-interface", "up", NULL};
    assert_status(stb_netns_run(&fx->net, 0, bad), STRATA_ERR_IO);
    assert_status(stb_netns_run(&fx->net, 4, bad), STRATA_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_helper_cleans_up, fixture_teardown),
        cmocka_unit_test_teardown(test_sizes_across_namespaces, fixture_teardown),
        cmocka_unit_test_teardown(test_bridge_three_nodes, fixture_teardown),
        cmocka_unit_test_teardown(test_peer_killed_mid_transfer, fixture_teardown),
        cmocka_unit_test_teardown(test_shaped_link, fixture_teardown),
    };
    return cmocka_run_group_tests_name("tcp_netns", tests, NULL, NULL);
}
