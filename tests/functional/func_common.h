/*
 * The fixture of the functional plugin tests: each case loads the built
 * plugin (dlopen, like NCCL), initialises ncclNetPlugin_v11 as one NCCL
 * communicator would, and unloads it again; the teardown kills and reaps any
 * peer process left behind, checks that no descriptor stayed open and that
 * no SIGPIPE was raised (the plugin must send with MSG_NOSIGNAL).
 *
 * Include after <cmocka.h>. Everything is static inline: each test binary
 * uses a different subset.
 */
#ifndef FUNC_COMMON_H
#define FUNC_COMMON_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "peer_scenarios.h"
#include "sts_net.h"
#include "sts_proc.h"
#include "sts_util.h"

typedef struct func_fix {
    stb_plugin_t *net;
    int ndev;
    stb_plugin_props_t props;
    int max_recvs;
    int fds_before;
    /* The link func_start opened, until func_link_close: a case that fails on the way
     * leaves it open, and the teardown closes it so the next case starts clean. */
    sts_net_link_t open_link;
} func_fix_t;

static func_fix_t func_fix;
static volatile sig_atomic_t func_sigpipes;

static inline void func_on_sigpipe(int sig)
{
    (void)sig;
    func_sigpipes++;
}

#define assert_nccl_ok(expr)                                                            \
    do {                                                                                \
        ncclResult_t func_res_ = (expr);                                                \
        if (func_res_ != ncclSuccess)                                                   \
            fail_msg("%s: %s", #expr, stb_plugin_result_str(func_res_));                         \
    } while (0)

/* Opens and initialises the plugin at `version` into fix (no cmocka state needed). */
static inline int func_open(func_fix_t *fix, int version)
{
    char why[256];

    memset(fix, 0, sizeof(*fix));
    if (stb_plugin_load(NULL, version, 0, &fix->net, why, sizeof(why)) != STRATA_OK) {
        print_error("%s\n", why);
        return -1;
    }
    ncclResult_t res = stb_plugin_init(fix->net, 0x5354u + (uint64_t)version);
    if (res != ncclSuccess || stb_plugin_devices(fix->net, &fix->ndev) != ncclSuccess ||
        fix->ndev < 1 || stb_plugin_props(fix->net, 0, &fix->props) != ncclSuccess) {
        print_error("plugin v%d: init %s, %d devices\n", version, stb_plugin_result_str(res), fix->ndev);
        if (res == ncclSuccess)
            stb_plugin_finalize(fix->net);
        stb_plugin_unload(fix->net);
        return -1;
    }
    int n = fix->props.max_recvs;
    fix->max_recvs = n < 1 ? 1 : n > STB_PLUGIN_MAX_RECVS ? STB_PLUGIN_MAX_RECVS : n;
    return 0;
}

static inline int func_setup(void **state)
{
    signal(SIGPIPE, func_on_sigpipe);
    func_sigpipes = 0;
    int fds = sts_fd_count();
    if (func_open(&func_fix, 11) != 0)
        return -1;
    func_fix.fds_before = fds;
    *state = &func_fix;
    return 0;
}

static inline int func_teardown(void **state)
{
    int rc = 0, left = sts_peer_kill_all();

    if (left != 0) {
        print_error("teardown: killed %d peer process(es) the case left running\n", left);
        rc = -1;
    }
    if (func_fix.open_link.send != NULL || func_fix.open_link.recv != NULL) {
        print_error("teardown: closed the link the case left open\n");
        sts_net_link_close(func_fix.net, &func_fix.open_link);
        rc = -1;
    }
    stb_plugin_finalize(func_fix.net);
    stb_plugin_unload(func_fix.net);
    int fds = sts_fd_count();
    if (fds != func_fix.fds_before) {
        print_error("teardown: %d descriptors before loading the plugin, %d after unloading\n",
                    func_fix.fds_before, fds);
        rc = -1;
    }
    if (func_sigpipes != 0) {
        print_error("teardown: %d SIGPIPE raised (a send without MSG_NOSIGNAL)\n",
                    (int)func_sigpipes);
        rc = -1;
    }
    signal(SIGPIPE, SIG_DFL);
    return rc;
}

/* Starts the peer program playing `scenario` with ABI `version`. */
static inline void func_spawn(sts_peer_t *peer, int version, const char *scenario, int arg)
{
    char vtext[16], atext[16];
    const char *args[] = {vtext, scenario, atext, NULL};

    snprintf(vtext, sizeof(vtext), "%d", version);
    snprintf(atext, sizeof(atext), "%d", arg);
    if (sts_peer_spawn(peer, PEER_PROG, args) != 0)
        fail_msg("cannot start %s", PEER_PROG);
}

/* The peer's RESULT must be 0 and its exit status 0. */
static inline void func_finish(sts_peer_t *peer)
{
    char msg[STS_CTL_MAX];
    int32_t status = sts_ctl_wait_result(peer->fd, msg, sizeof(msg),
                                         sts_deadline(PEER_TIMEOUT_S));
    int code = sts_peer_wait(peer, sts_deadline(PEER_TIMEOUT_S));
    if (status != 0)
        fail_msg("peer failed: %s (exit status %d)", msg, code);
    if (code != 0)
        fail_msg("peer reported success but exited with status %d", code);
}

/* A failure now: add what the peer said, if it said anything. */
#define func_fail_with_peer(peer, ...)                                                  \
    do {                                                                                \
        char func_msg_[STS_CTL_MAX] = "nothing";                                        \
        if ((peer)->fd >= 0 && sts_ctl_pending((peer)->fd))                             \
            sts_ctl_wait_result((peer)->fd, func_msg_, sizeof(func_msg_),               \
                                sts_deadline(1.0));                                     \
        print_error("peer said: %s\n", func_msg_);                                      \
        fail_msg(__VA_ARGS__);                                                          \
    } while (0)

/* Links to the peer in both directions (both sides run sts_net_link_open). */
static inline void func_link(func_fix_t *fix, sts_peer_t *peer, sts_net_link_t *link)
{
    char why[256];
    if (sts_net_link_open(fix->net, 0, peer->fd, sts_deadline(PEER_TIMEOUT_S), link, why,
                          sizeof(why)) != ncclSuccess)
        func_fail_with_peer(peer, "link to the peer: %s", why);
}

/* Starts the peer playing `scenario` over ABI v11 and links to it in both directions. */
static inline void func_start(func_fix_t *fix, sts_peer_t *peer, const char *scenario, int arg,
                              sts_net_link_t *link)
{
    func_spawn(peer, 11, scenario, arg);
    func_link(fix, peer, link);
    fix->open_link = *link;
}

/* Closes the link func_start opened. */
static inline void func_link_close(func_fix_t *fix, sts_net_link_t *link)
{
    sts_net_link_close(fix->net, link);
    fix->open_link = *link;
}

/* A host buffer with guard bytes, registered on comm (sts_net_buf_t); the test fails if not. */
static inline void func_buf_get(func_fix_t *fix, sts_net_buf_t *b, void *comm, size_t size)
{
    assert_nccl_ok(sts_net_buf_get(fix->net, b, comm, size));
}

static inline void func_buf_dereg(func_fix_t *fix, sts_net_buf_t *b)
{
    assert_nccl_ok(sts_net_buf_dereg(fix->net, b));
}

static inline void func_buf_put(func_fix_t *fix, sts_net_buf_t *b)
{
    func_buf_dereg(fix, b);
    sts_net_buf_put(fix->net, b);
}

/* Waits for n requests; every one must succeed. */
static inline void func_wait_ok(func_fix_t *fix, sts_peer_t *peer, sts_net_req_t *reqs, int n,
                                const char *what)
{
    if (sts_net_wait_all(fix->net, reqs, n, sts_deadline(PEER_TIMEOUT_S)) != 0)
        func_fail_with_peer(peer, "%s: not done before the deadline", what);
    for (int i = 0; i < n; i++)
        if (reqs[i].result != ncclSuccess)
            func_fail_with_peer(peer, "%s: request %d failed: %s", what, i,
                                stb_plugin_result_str(reqs[i].result));
}

/*
 * The test's side of the echo scenarios: each message of the list goes to the
 * peer, which checks it and sends it back; the echo is checked here.
 */
static inline void func_echo(func_fix_t *fix, sts_peer_t *peer, sts_net_link_t *link,
                             const size_t *sizes, int count)
{
    for (int i = 0; i < count; i++) {
        size_t size = sizes[i];
        int tag = peer_echo_tag(i);
        sts_net_req_t reqs[2] = {{.result = ncclInProgress}, {.result = ncclInProgress}};
        uint64_t deadline = sts_deadline(PEER_TIMEOUT_S);
        sts_net_buf_t sb, rb;

        func_buf_get(fix, &sb, link->send, size);
        func_buf_get(fix, &rb, link->recv, size);
        sts_pattern_fill(sb.data, size, peer_echo_seed(i));
        memset(rb.data, 0, size);
        assert_nccl_ok(sts_net_irecv_retry(fix->net, link->recv, 1, (void **)&rb.data, &size,
                                           &tag, &rb.mh, NULL, 0, deadline, &reqs[1].req));
        assert_nccl_ok(sts_net_isend_retry(fix->net, link->send, sb.data, size, tag, sb.mh,
                                           &reqs[1], 1, deadline, &reqs[0].req));
        func_wait_ok(fix, peer, reqs, 2, "echo");
        if ((size_t)reqs[1].sizes[0] != size)
            fail_msg("message %d: echo of %zu bytes reported as %d", i, size, reqs[1].sizes[0]);
        size_t bad = sts_pattern_check(rb.data, size, peer_echo_seed(i));
        if (bad != SIZE_MAX)
            fail_msg("message %d (%zu bytes): echo differs at byte %zu", i, size, bad);
        assert_true(sts_guard_ok(rb.data, size));
        func_buf_put(fix, &sb);
        func_buf_put(fix, &rb);
    }
}

/* Both ends of a connection inside this process (NCCL's GDR probe does this). */
static inline void func_loopback(func_fix_t *fix, void **send, void **recv)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
    void *listen = NULL;
    uint64_t deadline = sts_deadline(PEER_TIMEOUT_S);

    *send = *recv = NULL;
    assert_nccl_ok(stb_plugin_listen(fix->net, 0, handle, &listen));
    assert_non_null(listen);
    while (*send == NULL || *recv == NULL) {
        if (*send == NULL)
            assert_nccl_ok(stb_plugin_connect(fix->net, 0, handle, send));
        if (*recv == NULL)
            assert_nccl_ok(stb_plugin_accept(fix->net, listen, recv));
        if ((*send == NULL || *recv == NULL) && stu_deadline_passed(deadline))
            fail_msg("loopback connection not ready before the deadline");
        sts_relax();
    }
    assert_nccl_ok(stb_plugin_close_listen(fix->net, listen));
}

/* One message over a loopback connection, checked. */
static inline void func_exchange(func_fix_t *fix, void *send, void *recv, size_t size,
                                 uint32_t seed)
{
    sts_net_req_t reqs[2] = {{.result = ncclInProgress}, {.result = ncclInProgress}};
    uint64_t deadline = sts_deadline(PEER_TIMEOUT_S);
    sts_net_buf_t sb, rb;
    int tag = 7;

    func_buf_get(fix, &sb, send, size);
    func_buf_get(fix, &rb, recv, size);
    sts_pattern_fill(sb.data, size, seed);
    assert_nccl_ok(sts_net_irecv_retry(fix->net, recv, 1, (void **)&rb.data, &size, &tag,
                                       &rb.mh, NULL, 0, deadline, &reqs[1].req));
    assert_nccl_ok(sts_net_isend_retry(fix->net, send, sb.data, size, tag, sb.mh, &reqs[1], 1,
                                       deadline, &reqs[0].req));
    if (sts_net_wait_all(fix->net, reqs, 2, deadline) != 0)
        fail_msg("loopback exchange of %zu bytes not done before the deadline", size);
    assert_nccl_ok(reqs[0].result);
    assert_nccl_ok(reqs[1].result);
    assert_int_equal(reqs[1].sizes[0], (int)size);
    assert_int_equal(sts_pattern_check(rb.data, size, seed), SIZE_MAX);
    func_buf_put(fix, &sb);
    func_buf_put(fix, &rb);
}

#define FUNC_CASE(f) cmocka_unit_test_setup_teardown(f, func_setup, func_teardown)

#endif /* FUNC_COMMON_H */
