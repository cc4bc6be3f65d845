/*
 * The ib handshake's fault matrix, one step at a time (docs/ib-protocol.md, "Connection
 * setup"): the peer is a real ib end (helper_ib_peer) that runs the real handshake and
 * dies (SIGKILL) at a chosen byte of its side channel. The helper counts the bytes its
 * side channel moves (it interposes send and recv; --budget), so the steps come from a
 * first run that only records them (--trace): every message boundary and every message's
 * middle, in either direction, whatever the messages' sizes and number. Nothing here
 * knows the wire's layout.
 *
 * Our listener must close the dead connection's socket without an error, hand out no
 * comm, and then serve a real connection; our connector must fail its connect, or when
 * the handshake finished on our side before the death, fail the comm's first send. Each
 * case prints a `matrix` line: the seconds from the death (when this process reaps the
 * peer) to our end, printed, not asserted. Skips where no verbs device is ACTIVE (the
 * Soft-RoCE guest of make test-rdma runs it).
 *
 * The side channel's socket plumbing (transport/base/sock.c: connect, accept, the
 * non-blocking transfers; base/connect.c: the handle's listener id and secret) is the
 * code the tcp transport's handshake uses too; the messages and the state machine around
 * them (ib_conn.c, ib_listen.c: QPs created, moved to RTR/RTS between the messages) are
 * the ib transport's own, and those are what these steps cut through.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "ib_fixture.h"
#include "tools/lib/tool_proc.h"

#define HELPER STRATA_BUILD_DIR "/tests/transport/helper_ib_peer"
#define HS_MAX_MSGS 16             /* side-channel messages of one handshake, at most */
#define HS_MAX_CUTS (2 * HS_MAX_MSGS + 1)
#define HS_OUT_MAX 8192            /* the peer's stdout: the handle and the trace */
#define HS_SEND_BYTES 65536        /* a comm the handshake gave us sends this, and must fail */
#define HS_BEFORE_ACCEPT (-2LL)    /* helper_ib_peer's --budget to die before accepting */

typedef struct hs_peer {
    pid_t pid;
    int fd;                        /* its stdout, non-blocking */
    char out[HS_OUT_MAX];
    size_t len;
    uint64_t died;                 /* when this process reaped it; 0 while it runs */
    int status;                    /* its wait status once reaped */
} hs_peer_t;

/* One message of the peer's side: consecutive transfers in one direction. */
typedef struct hs_msg {
    bool out;
    long long bytes;
} hs_msg_t;

static void hs_spawn(hs_peer_t *pp, bool connector, const char *hex, long long budget,
                     bool trace)
{
    int pipefd[2];
    char dev[16], budget_arg[48];
    char *argv[8];
    int n = 0;

    memset(pp, 0, sizeof(*pp));
    snprintf(dev, sizeof(dev), "%d", ib_peer_dev());
    snprintf(budget_arg, sizeof(budget_arg), "--budget=%lld", budget);
    argv[n++] = (char *)HELPER;
    argv[n++] = connector ? "send" : "recv";
    argv[n++] = dev;
    if (connector)
        argv[n++] = (char *)hex;
    if (trace)
        argv[n++] = "--trace";
    argv[n++] = budget_arg;
    argv[n] = NULL;
    assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
    stb_spawn_t s = {.argv = argv, .stdout_fd = pipefd[1]};
    assert_ok(stb_proc_spawn(&s, &pp->pid));
    close(pipefd[1]);
    pp->fd = pipefd[0];
    assert_int_equal(fcntl(pp->fd, F_SETFL, O_NONBLOCK), 0);
}

/* Reads what the peer printed, and reaps it if it ended (its death time). */
static void hs_pump(hs_peer_t *pp)
{
    ssize_t r;
    while (pp->len < sizeof(pp->out) - 1 &&
           (r = read(pp->fd, pp->out + pp->len, sizeof(pp->out) - 1 - pp->len)) > 0)
        pp->len += (size_t)r;
    pp->out[pp->len] = '\0';
    if (pp->died == 0 && stb_proc_reap(pp->pid, &pp->status) == 1)
        pp->died = stu_time_ns();
}

/* Waits until the peer printed `text` (a whole line), bounded. */
static void hs_await(hs_peer_t *pp, const char *text, uint64_t deadline)
{
    while (strstr(pp->out, text) == NULL) {
        assert_false(stu_deadline_passed(deadline));
        assert_int_equal(pp->died, 0);
        poll(NULL, 0, 1);
        hs_pump(pp);
    }
}

static void hs_handle_of(const hs_peer_t *pp, uint8_t *handle)
{
    for (int i = 0; i < STT_HANDLE_SIZE; i++)
        assert_int_equal(sscanf(pp->out + 2 * i, "%2hhx", &handle[i]), 1);
}

/* The peer ends: killed now if it still runs, always reaped; closes its pipe. */
static void hs_end(hs_peer_t *pp)
{
    if (pp->died == 0)
        stb_proc_kill(pp->pid, NULL);
    close(pp->fd);
}

/* The peer's messages from its trace, up to "connected"; returns how many. */
static int hs_messages(const char *trace, hs_msg_t *msgs)
{
    const char *end = strstr(trace, "connected\n");
    int n = 0;
    assert_non_null(end);
    for (const char *p = strstr(trace, "xfer "); p != NULL && p < end;
         p = strstr(p + 1, "xfer ")) {
        char dir[4];
        long long bytes;
        assert_int_equal(sscanf(p, "xfer %3s %lld", dir, &bytes), 2);
        bool out = strcmp(dir, "out") == 0;
        if (n > 0 && msgs[n - 1].out == out) {
            msgs[n - 1].bytes += bytes;
            continue;
        }
        assert_true(n < HS_MAX_MSGS);
        msgs[n++] = (hs_msg_t){out, bytes};
    }
    return n;
}

/*
 * The cuts: at the start (before the first message), in the middle of every message, and
 * between messages; never after the last (the handshake is then whole). Names in what[].
 */
static int hs_cuts(const hs_msg_t *m, int n, const char *role, long long *cuts,
                   char what[][96])
{
    long long at = 0;
    int k = 0;

    snprintf(what[k], 96, "%s dies before its first message", role);
    cuts[k++] = 0;
    for (int i = 0; i < n; i++) {
        const char *verb = m[i].out ? "sending" : "reading";
        if (m[i].bytes >= 2) {
            snprintf(what[k], 96, "%s dies %s message %d, at %lld of %lld B", role, verb,
                     i + 1, m[i].bytes / 2, m[i].bytes);
            cuts[k++] = at + m[i].bytes / 2;
        }
        at += m[i].bytes;
        if (i < n - 1) {
            snprintf(what[k], 96, "%s dies after %s message %d (%lld B)", role,
                     m[i].out ? "sending" : "reading", i + 1, m[i].bytes);
            cuts[k++] = at;
        }
    }
    return k;
}

static void hs_print_messages(const char *role, const hs_msg_t *m, int n)
{
    printf("  %s's side of the handshake:", role);
    for (int i = 0; i < n; i++)
        printf(" %d %s %lld B;", i + 1, m[i].out ? "sends" : "reads", m[i].bytes);
    printf("\n");
}

/* Waits until this process has no more sockets than `most`, accepting on l meanwhile. */
static void hs_settle(stt_listen_t *l, int most, uint64_t deadline)
{
    stt_comm_t *rc = NULL;
    while (sts_socket_count(-1) > most) {
        if (l != NULL) {
            assert_ok(stt_accept(l, &rc));
            assert_null(rc);
        }
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
    }
}

static void hs_killed_check(const hs_peer_t *pp)
{
    assert_true(pp->died != 0);
    assert_true(WIFSIGNALED(pp->status));
    assert_int_equal(WTERMSIG(pp->status), SIGKILL);
}

static double hs_since(uint64_t died, uint64_t now)
{
    return now > died ? (double)(now - died) / 1e9 : 0.0;
}

/* A whole handshake with a tracing peer connector; our listener accepts it. */
static int hs_record_connector(stt_listen_t *l, const char *hex, hs_msg_t *msgs)
{
    hs_peer_t pp;
    stt_comm_t *rc = NULL;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    hs_spawn(&pp, true, hex, -1, true);
    while (rc == NULL) {
        assert_ok(stt_accept(l, &rc));
        assert_false(stu_deadline_passed(deadline));
        hs_pump(&pp);
        assert_int_equal(pp.died, 0);
    }
    hs_await(&pp, "connected\n", deadline);
    hs_end(&pp);
    stt_close_recv(rc);
    return hs_messages(pp.out, msgs);
}

/* A whole handshake with a tracing peer listener; our connector connects. */
static int hs_record_listener(hs_msg_t *msgs)
{
    hs_peer_t pp;
    stt_comm_t *sc = NULL;
    uint8_t handle[STT_HANDLE_SIZE];
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    hs_spawn(&pp, false, NULL, -1, true);
    hs_await(&pp, "\n", deadline);
    hs_handle_of(&pp, handle);
    while (sc == NULL) {
        assert_ok(stt_connect(ops, 0, handle, NULL, &sc));
        assert_false(stu_deadline_passed(deadline));
        hs_pump(&pp);
    }
    hs_await(&pp, "connected\n", deadline);
    hs_end(&pp);
    stt_close_send(sc);
    return hs_messages(pp.out, msgs);
}

/* Our listener, the peer connector dies at `cut`: no comm, no error, its socket closed. */
static void hs_connector_dies(stt_listen_t *l, const char *hex, long long cut, const char *what)
{
    hs_peer_t pp;
    stt_comm_t *rc = NULL;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    int sockets = sts_socket_count(-1);

    hs_spawn(&pp, true, hex, cut, false);
    while (pp.died == 0) {
        assert_ok(stt_accept(l, &rc));
        assert_null(rc);
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
        hs_pump(&pp);
    }
    hs_killed_check(&pp);
    hs_settle(l, sockets, deadline);
    sts_matrix_row("ib", what, "accept: no comm, its socket closed", pp.died);
    hs_end(&pp);
}

/*
 * Our connector, the peer listener dies at `cut` (HS_BEFORE_ACCEPT: before it accepts):
 * the connect fails, or the comm it gave fails its first send.
 */
static void hs_listener_dies(long long cut, const char *what)
{
    static uint8_t buf[HS_SEND_BYTES];
    hs_peer_t pp;
    stt_comm_t *sc = NULL;
    uint8_t handle[STT_HANDLE_SIZE];
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    int sockets = sts_socket_count(-1);
    strata_status_t status = STRATA_OK;
    const char *result = "connect: ";

    hs_spawn(&pp, false, NULL, cut, false);
    hs_await(&pp, "\n", deadline);
    hs_handle_of(&pp, handle);
    while (status == STRATA_OK && sc == NULL) {
        status = stt_connect(ops, 0, handle, NULL, &sc);
        assert_false(stu_deadline_passed(deadline));
        hs_pump(&pp);
    }
    if (sc != NULL) {
        stt_req_t *req = NULL;
        result = "connected; first send: ";
        while (status == STRATA_OK && req == NULL) {
            status = stt_isend(sc, buf, sizeof(buf), 0, NULL, &req);
            assert_false(stu_deadline_passed(deadline));
        }
        if (req != NULL)
            (void)sts_reqs_finish(req, NULL, NULL, &status);
    }
    uint64_t failed = stu_time_ns();
    assert_false(status == STRATA_OK);
    while (pp.died == 0) {                 /* the error may come before we reap it */
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
        hs_pump(&pp);
    }
    hs_killed_check(&pp);
    if (sc != NULL)
        stt_close_send(sc);
    hs_settle(NULL, sockets, deadline);
    printf("  matrix | ib | %s | %s%s after %.3f s\n", what, result, strata_status_str(status),
           hs_since(pp.died, failed));
    fflush(stdout);
    hs_end(&pp);
}

static void test_connector_dies_each_step(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE];
    char hex[2 * STT_HANDLE_SIZE + 1], what[HS_MAX_CUTS][96];
    hs_msg_t msgs[HS_MAX_MSGS];
    long long cuts[HS_MAX_CUTS];
    stt_listen_t *l = NULL;

    IB_NEED_DEVICE();
    assert_ok(stt_listen(ops, 0, handle, &l));
    for (int i = 0; i < STT_HANDLE_SIZE; i++)
        sprintf(hex + 2 * i, "%02x", handle[i]);
    int n = hs_record_connector(l, hex, msgs);
    assert_true(n >= 2);                   /* at least a hello and an answer */
    hs_print_messages("connector", msgs, n);
    int k = hs_cuts(msgs, n, "connector", cuts, what);
    for (int i = 0; i < k; i++)
        hs_connector_dies(l, hex, cuts[i], what[i]);
    /* the listener goes on: a real connection, and data over it */
    sts_pair_t p = {.listen = l};
    assert_ok(sts_connect_accept(ops, ib_peer_dev(), l, handle, STS_CONNECT_TIMEOUT_S, &p.send,
                                 &p.recv));
    sts_xfer_ok(&p, 1000, 1000, 0, 4, STS_XFER_UNREGISTERED);
    sts_pair_close(&p);
}

static void test_listener_dies_each_step(void **state)
{
    char what[HS_MAX_CUTS][96];
    hs_msg_t msgs[HS_MAX_MSGS];
    long long cuts[HS_MAX_CUTS];

    IB_NEED_DEVICE();
    int n = hs_record_listener(msgs);
    assert_true(n >= 2);
    hs_print_messages("listener", msgs, n);
    hs_listener_dies(HS_BEFORE_ACCEPT, "listener dies before accepting");
    int k = hs_cuts(msgs, n, "listener", cuts, what);
    for (int i = 0; i < k; i++)
        hs_listener_dies(cuts[i], what[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connector_dies_each_step),
        cmocka_unit_test(test_listener_dies_each_step),
    };
    return cmocka_run_group_tests(tests, ib_group_setup, sts_conf_teardown);
}
