/*
 * The TCP transport between emulated nodes: processes in separate network
 * namespaces joined by veth (tests/support/netns.h). Device discovery inside a
 * namespace finds the veth, not lo; connections cross the link; every size
 * from 0 B to 64 MiB arrives intact with 1 and 4 sockets; a peer killed in the
 * middle of a transfer fails the other side with STRATA_ERR_REMOTE; a link
 * shaped to 1 Gbit/s still carries the data (its rate is printed, not checked).
 * The helper's own promises are checked too: N nodes on a bridge reach each
 * other, and nothing (namespace, descriptor, child) outlives a test, even one
 * whose child crashed or hung.
 *
 * Needs root; every test skips when namespaces cannot be created. The parent
 * never initialises the transport (its device table would describe the root
 * namespace); each child does, inside its node.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "netns.h"
#include "transport/tcp/tcp.h"
#include "util/param.h"
#include "util/time.h"

#define CHILD_DEADLINE_NS (90ull * 1000000000ull)   /* a child gives up on any wait */
#define WAIT_MS 120000                               /* the parent's bound on a child */
#define CTL_MS 60000                                 /* bound on one control message */
#define IDLE_POLL_MS 100                             /* a child's nap when a test is pending */
#define MAX_PEERS 4
#define CHILD_MAX_FDS 16                             /* pollfds one comm may ask for */
#define TBF_1GBIT "tbf rate 1gbit burst 32kb latency 50ms"

static const stt_ops_t *ops = &stt_tcp_ops;

/* ------------------------------------------------------------------ child side */

/* A child cannot use cmocka's asserts: it reports on stderr and exits non-zero. */
#define CHILD_CHECK(cond, ...)                                                          \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "child %d, %s:%d: ", (int)getpid(), __FILE__, __LINE__);    \
            fprintf(stderr, __VA_ARGS__);                                               \
            fputc('\n', stderr);                                                        \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

static void fill(uint8_t *buf, size_t size, unsigned seed)
{
    for (size_t i = 0; i < size; i++)
        buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 12));
}

static bool check(const uint8_t *buf, size_t size, unsigned seed)
{
    for (size_t i = 0; i < size; i++)
        if (buf[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 12)))
            return false;
    return true;
}

/* Inside a node: the default discovery must pick the veth and nothing else. */
static int child_init(void)
{
    stt_props_t props;
    int ndev = 0;

    stu_param_reload();
    CHILD_CHECK(stt_init(ops) == STRATA_OK, "init");
    CHILD_CHECK(stt_devices(ops, &ndev) == STRATA_OK && ndev == 1, "%d devices, want 1", ndev);
    CHILD_CHECK(stt_get_props(ops, 0, &props) == STRATA_OK, "get_props");
    CHILD_CHECK(strcmp(props.name, STS_NETNS_IFNAME) == 0, "device 0 is '%s', want '%s'",
                props.name, STS_NETNS_IFNAME);
    return 0;
}

/*
 * Tests req until it is done or fails, sleeping in poll() on the comm's
 * descriptors between tries (the way the collective library will wait).
 */
static strata_status_t child_wait(stt_comm_t *comm, stt_req_t *req, size_t *sizes)
{
    uint64_t start = stu_time_ns();

    for (;;) {
        int done = 0;
        strata_status_t status = stt_test(req, &done, sizes);
        if (status != STRATA_OK || done)
            return status;
        if (stu_time_ns() - start > CHILD_DEADLINE_NS)
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
    uint64_t start = stu_time_ns();

    CHILD_CHECK(stt_listen(ops, 0, handle, l_p) == STRATA_OK, "listen");
    CHILD_CHECK(sts_netns_msg_send(ctl, handle, sizeof(handle), CTL_MS) == STRATA_OK,
                "sending the handle");
    for (int p = 0; p < npeers; p++)
        recvs[p] = NULL;
    for (int got = 0; got < npeers;) {
        stt_comm_t *c = NULL;
        stt_req_t *req = NULL;
        int32_t who = -1;
        void *data[1] = {&who};
        size_t cap[1] = {sizeof(who)}, size[1] = {0};
        int tag[1] = {0};
        CHILD_CHECK(stt_accept(*l_p, &c) == STRATA_OK, "accept");
        CHILD_CHECK(stu_time_ns() - start < CHILD_DEADLINE_NS, "accept timed out");
        if (c == NULL) {
            poll(NULL, 0, 1);
            continue;
        }
        CHILD_CHECK(stt_irecv(c, 1, data, cap, tag, NULL, &req) == STRATA_OK && req != NULL,
                    "irecv of the sender's index");
        CHILD_CHECK(child_wait(c, req, size) == STRATA_OK && size[0] == sizeof(who),
                    "receiving the sender's index");
        CHILD_CHECK(who >= 0 && who < npeers && recvs[who] == NULL, "sender index %d", who);
        recvs[who] = c;
        got++;
    }
    return 0;
}

/* Connects with the handle the parent relays, then says which sender this is. */
static int child_connect(int ctl, int32_t who, stt_comm_t **send_p)
{
    uint8_t handle[STT_HANDLE_SIZE];
    uint64_t start = stu_time_ns();
    stt_req_t *req = NULL;

    CHILD_CHECK(sts_netns_msg_recv(ctl, handle, sizeof(handle), CTL_MS) == STRATA_OK,
                "reading the handle");
    for (*send_p = NULL; *send_p == NULL;) {
        strata_status_t status = stt_connect(ops, 0, handle, NULL, send_p);
        CHILD_CHECK(status == STRATA_OK, "connect: %s", strata_status_str(status));
        if (*send_p == NULL)
            poll(NULL, 0, 1);
        CHILD_CHECK(stu_time_ns() - start < CHILD_DEADLINE_NS, "connect timed out");
    }
    CHILD_CHECK(stt_isend(*send_p, &who, sizeof(who), 0, NULL, &req) == STRATA_OK &&
                req != NULL, "isend of the sender's index");
    CHILD_CHECK(child_wait(*send_p, req, NULL) == STRATA_OK, "sending the sender's index");
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
    sts_netns_msg_send(ctl, &s, sizeof(s), CTL_MS);
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
            CHILD_CHECK(bufs[p][k] != NULL, "malloc %zu", cap);
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
            CHILD_CHECK(reqs[p][k] != NULL, "irecv: no slot with 2 receives posted");
        }
        if (m < 0)
            continue;
        int i = (int)(m % job->nsizes), k = (int)(m & 1);
        for (int p = 0; p < job->npeers; p++) {
            size_t got[1] = {0};
            strata_status_t status = child_wait(recvs[p], reqs[p][k], got);
            if (status != STRATA_OK)
                return child_report_failure(ctl, status);
            CHILD_CHECK(got[0] == job->sizes[i], "peer %d size %d: got %zu, want %zu", p, i,
                        got[0], job->sizes[i]);
            CHILD_CHECK(check(bufs[p][k], got[0], (unsigned)(i * MAX_PEERS + p)),
                        "peer %d: %zu bytes corrupt", p, got[0]);
            if (m > 0)
                bytes += got[0];
        }
        if (m == 0)
            t0 = stu_time_ns();              /* the rate leaves out the first message */
        if (m == 0 && job->rounds <= 0) {
            int32_t s = STRATA_INPROGRESS;           /* data flows: the parent kills now */
            CHILD_CHECK(sts_netns_msg_send(ctl, &s, sizeof(s), CTL_MS) == STRATA_OK,
                        "reporting progress");
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
        CHILD_CHECK(bufs[k] != NULL, "malloc %zu", cap);
    }
    int64_t total = job->rounds > 0 ? (int64_t)job->rounds * job->nsizes : INT64_MAX;
    for (int64_t m = 0; m <= total; m++) {
        if (m < total) {
            int i = (int)(m % job->nsizes), k = (int)(m & 1);
            fill(bufs[k], job->sizes[i], (unsigned)(i * MAX_PEERS + job->peer));
            strata_status_t status = stt_isend(send, bufs[k], job->sizes[i], job->peer, NULL,
                                               &reqs[k]);
            if (status != STRATA_OK)
                return child_report_failure(ctl, status);
            CHILD_CHECK(reqs[k] != NULL, "isend: no slot with 2 sends posted");
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
    sts_netns_t *net;
    int fds_at_start;
    uint64_t ns_ids[STS_NETNS_MAX_NODES + 1];
    int nids;
} fixture_t;

static int fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

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
    fx->fds_at_start = fd_count();
    *state = fx;
    strata_status_t status = sts_netns_create(nodes, STS_NETNS_AUTO, &fx->net);
    if (status == STRATA_ERR_UNSUPPORTED) {
        print_message("network namespaces unavailable here (needs root): skipped\n");
        skip();
    }
    assert_int_equal(status, STRATA_OK);
    fx->nids = fx->net->nids;
    memcpy(fx->ns_ids, fx->net->ns_ids, sizeof(fx->ns_ids));
    env_defaults("1");
    return fx;
}

/* Destroys the nodes and checks nothing outlived them. */
static int fixture_teardown(void **state)
{
    fixture_t *fx = *state;
    int rc = 0;

    if (fx == NULL)
        return 0;
    sts_netns_destroy(fx->net);
    int held = fx->nids > 0 ? sts_netns_count_held(fx->ns_ids, fx->nids) : 0;
    int fds = fd_count();
    if (held != 0 || fds != fx->fds_at_start) {
        fprintf(stderr, "left behind: %d namespaces still held, %d descriptors (had %d)\n",
                held, fds, fx->fds_at_start);
        rc = -1;
    }
    free(fx);
    *state = NULL;
    return rc;
}

static void wait_ok(fixture_t *fx, pid_t pid)
{
    int ws = 0;
    assert_int_equal(sts_netns_wait(fx->net, pid, WAIT_MS, &ws), STRATA_OK);
    if (!sts_netns_exit_ok(ws))
        fail_msg("child %d: %s %d", (int)pid, WIFEXITED(ws) ? "exit status" : "signal",
                 WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
}

/* Receiver on node 0, one sender per other node; the parent relays the handle. */
static void run_job(fixture_t *fx, job_t *recv_job, job_t *send_jobs, pid_t *pids)
{
    int rctl, sctl[MAX_PEERS];
    uint8_t handle[STT_HANDLE_SIZE];

    assert_int_equal(sts_netns_spawn(fx->net, 0, child_receiver, recv_job, &pids[0], &rctl),
                     STRATA_OK);
    assert_int_equal(sts_netns_msg_recv(rctl, handle, sizeof(handle), CTL_MS), STRATA_OK);
    for (int p = 0; p < recv_job->npeers; p++) {
        assert_int_equal(sts_netns_spawn(fx->net, p + 1, child_sender, &send_jobs[p],
                                         &pids[p + 1], &sctl[p]), STRATA_OK);
        assert_int_equal(sts_netns_msg_send(sctl[p], handle, sizeof(handle), CTL_MS),
                         STRATA_OK);
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
        pid_t pids[2];
        env_defaults(nsocks[k]);
        print_message("  nsocks=%s\n", nsocks[k]);
        run_job(fx, &job, &job, pids);
        wait_ok(fx, pids[1]);
        wait_ok(fx, pids[0]);
    }
}

/* Three nodes on a bridge: two senders into one receiver, tags keep them apart. */
static void test_bridge_three_nodes(void **state)
{
    static const size_t sizes[] = {0, 100, (1 << 20) + 1, 8 << 20};
    fixture_t *fx = fixture_open(state, 3);
    job_t recv_job = {.sizes = sizes, .nsizes = 4, .rounds = 2, .npeers = 2};
    job_t send_jobs[2] = {recv_job, recv_job};
    pid_t pids[3];

    assert_int_equal(fx->net->topo, STS_NETNS_BRIDGE);
    env_defaults("2");
    send_jobs[1].peer = 1;
    run_job(fx, &recv_job, send_jobs, pids);
    for (int i = 2; i >= 0; i--)
        wait_ok(fx, pids[i]);
    /* Shaping a bridge port and lifting it again both work. */
    assert_int_equal(sts_netns_shape(fx->net, 1, TBF_1GBIT), STRATA_OK);
    assert_int_equal(sts_netns_shape(fx->net, 1, NULL), STRATA_OK);
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
        pid_t pids[2];
        int ctl[2], ws = 0;
        int32_t report = 0;

        env_defaults("4");
        assert_int_equal(sts_netns_spawn(fx->net, 0, child_receiver, &job, &pids[0], &ctl[0]),
                         STRATA_OK);
        uint8_t handle[STT_HANDLE_SIZE];
        assert_int_equal(sts_netns_msg_recv(ctl[0], handle, sizeof(handle), CTL_MS),
                         STRATA_OK);
        assert_int_equal(sts_netns_spawn(fx->net, 1, child_sender, &job, &pids[1], &ctl[1]),
                         STRATA_OK);
        assert_int_equal(sts_netns_msg_send(ctl[1], handle, sizeof(handle), CTL_MS),
                         STRATA_OK);
        /* The receiver says when the first message arrived: data is flowing. */
        assert_int_equal(sts_netns_msg_recv(ctl[0], &report, sizeof(report), CTL_MS),
                         STRATA_OK);
        assert_int_equal(report, STRATA_INPROGRESS);
        int survivor = 1 - victim;
        uint64_t t0 = stu_time_ns();
        assert_int_equal(kill(pids[victim], SIGKILL), 0);
        assert_int_equal(sts_netns_wait(fx->net, pids[victim], WAIT_MS, &ws), STRATA_OK);
        assert_true(WIFSIGNALED(ws));
        assert_int_equal(sts_netns_msg_recv(ctl[survivor], &report, sizeof(report), CTL_MS),
                         STRATA_OK);
        double secs = (double)(stu_time_ns() - t0) / 1e9;
        print_message("  %s killed: the %s got %s after %.3f s\n",
                      victim ? "sender" : "receiver", victim ? "receiver" : "sender",
                      strata_status_str((strata_status_t)report), secs);
        assert_int_equal(report, STRATA_ERR_REMOTE);
        assert_int_equal(sts_netns_wait(fx->net, pids[survivor], WAIT_MS, &ws), STRATA_OK);
        assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 3);
    }
}

/* A 1 Gbit/s token bucket on the link: data still arrives intact; the rate is printed. */
static void test_shaped_link(void **state)
{
    static const size_t sizes[] = {4 << 20};
    fixture_t *fx = fixture_open(state, 2);
    job_t job = {.sizes = sizes, .nsizes = 1, .rounds = 24, .npeers = 1};
    pid_t pids[2];

    assert_int_equal(sts_netns_shape(fx->net, 0, TBF_1GBIT), STRATA_OK);
    env_defaults("1");
    print_message("  link shaped with '%s' (rate for information only):\n", TBF_1GBIT);
    run_job(fx, &job, &job, pids);
    wait_ok(fx, pids[1]);
    wait_ok(fx, pids[0]);
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
    pid_t crash, hang;
    int ws = 0;

    assert_int_equal(fx->nids, 5);            /* four nodes and the hub */
    assert_int_equal(sts_netns_count_held(fx->ns_ids, fx->nids), 5);
    assert_int_equal(sts_netns_spawn(fx->net, 2, child_crash, NULL, &crash, NULL), STRATA_OK);
    assert_int_equal(sts_netns_spawn(fx->net, 3, child_hang, NULL, &hang, NULL), STRATA_OK);
    assert_int_equal(sts_netns_wait(fx->net, crash, WAIT_MS, &ws), STRATA_OK);
    assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGSEGV);
    assert_int_equal(sts_netns_wait(fx->net, hang, 1, &ws), STRATA_ERR_TIMEOUT);
    assert_int_equal(sts_netns_spawn(fx->net, 3, child_hang, NULL, &hang, NULL), STRATA_OK);
    /* Left running on purpose: the teardown kills it and checks the namespaces are gone. */
    char addr[32];
    sts_netns_addr(fx->net, 3, addr, sizeof(addr));
    assert_string_equal(addr, "198.51.100.4");
    const char *const bad[] = {"ip", "link", "set", "no-such-interface", "up", NULL};
    assert_int_equal(sts_netns_run(fx->net, 0, bad), STRATA_ERR_IO);
    assert_int_equal(sts_netns_run(fx->net, 4, bad), STRATA_ERR_INVALID);
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
