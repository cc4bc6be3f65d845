/*
 * poll_fds of the TCP transport, in one process over loopback: a receive comm
 * is quiet until a message arrives, and names nothing while the next message
 * waits for a receive to be posted; a send comm blocked
 * on a full socket wakes once the receiver drains; a peer's close wakes a send
 * comm and fails it; and a single-threaded loop that only ever sleeps in
 * poll() on both comms' descriptors moves every size, striped or not (a missed
 * wakeup would show as a poll that times out). Readiness is only asserted
 * within a generous bound; "not ready" is asserted only where nothing can make
 * the socket ready (no data sent, or a receiver that reads nothing).
 */
#include <sys/ioctl.h>

#include "tcp_fixture.h"

#define POLL_GENEROUS_MS 10000   /* "ready" must happen well within this */
#define POLL_SHORT_MS 50         /* a quiet comm stays quiet this long */
#define POLL_MAX_FDS (2 * STT_TCP_MAX_SOCKS)

static int comm_fds(stt_comm_t *comm, struct pollfd *fds, int max)
{
    int n = stt_poll_fds(comm, fds, max);
    assert_true(n >= 0 && n <= max);
    return n;
}

static void test_poll_recv_quiet_then_ready(void **state)
{
    sts_pair_t p = {0};
    struct pollfd fds[POLL_MAX_FDS];
    uint8_t src[100], dst[100];
    stt_req_t *sreq = NULL, *rreq = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {sizeof(dst)}, got[1] = {0};
    int tag[1] = {9}, n, done = 0;

    sts_pair_must_open(ops, 0, 0, &p);
    /* Nothing posted, nothing sent: socket 0, waiting for a header, stays quiet. */
    n = comm_fds(p.recv, fds, POLL_MAX_FDS);
    assert_int_equal(n, 1);
    assert_int_equal(fds[0].events, POLLIN);
    assert_int_equal(poll(fds, (nfds_t)n, POLL_SHORT_MS), 0);

    /* A receive posted, still nothing sent. */
    assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq));
    assert_non_null(rreq);
    n = comm_fds(p.recv, fds, POLL_MAX_FDS);
    assert_int_equal(n, 1);
    assert_int_equal(fds[0].events, POLLIN);
    assert_int_equal(poll(fds, (nfds_t)n, POLL_SHORT_MS), 0);

    /* The peer sends: ready, and one test() completes the receive. */
    sts_pattern_fill(src, sizeof(src), 4);
    assert_ok(stt_isend(p.send, src, sizeof(src), 9, NULL, &sreq));
    assert_non_null(sreq);
    assert_int_equal(poll(fds, (nfds_t)n, POLL_GENEROUS_MS), 1);
    assert_true(fds[0].revents & POLLIN);
    assert_ok(stt_test(rreq, &done, got));
    assert_int_equal(done, 1);
    assert_int_equal(got[0], sizeof(src));
    assert_pattern(dst, sizeof(src), 4);
    assert_ok(sts_reqs_finish(sreq, NULL, NULL, NULL));
    sts_pair_close(&p);
}

/*
 * A message that arrives with no receive for it: once its header is read, the
 * comm names no descriptor (its bytes stay readable, and reading cannot help)
 * until a receive is posted.
 */
static void test_poll_recv_quiet_while_unmatched(void **state)
{
    sts_pair_t p = {0};
    struct pollfd fds[POLL_MAX_FDS];
    uint8_t a[100], b[100], dst[100];
    stt_req_t *sreq[2] = {NULL, NULL}, *rreq = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {sizeof(dst)}, got[1] = {0};
    int tag[1] = {5}, avail = 0;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    sts_pair_must_open(ops, 0, 0, &p);
    sts_pattern_fill(a, sizeof(a), 1);
    sts_pattern_fill(b, sizeof(b), 2);
    assert_ok(stt_isend(p.send, a, sizeof(a), 5, NULL, &sreq[0]));
    assert_ok(stt_isend(p.send, b, sizeof(b), 5, NULL, &sreq[1]));
    assert_ok(sts_reqs_finish(sreq[0], sreq[1], NULL, NULL));
    /* Both messages in the receiver's kernel buffer, so one receive reads a and b's header. */
    assert_int_equal(comm_fds(p.recv, fds, POLL_MAX_FDS), 1);
    while (avail < 2 * (STT_TCP_HDR_BYTES + (int)sizeof(a))) {
        assert_int_equal(ioctl(fds[0].fd, FIONREAD, &avail), 0);
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
    }
    assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq));
    assert_ok(sts_reqs_finish(NULL, rreq, got, NULL));
    assert_pattern(dst, sizeof(a), 1);
    assert_int_equal(comm_fds(p.recv, fds, POLL_MAX_FDS), 0);
    rreq = NULL;
    assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq));
    assert_ok(sts_reqs_finish(NULL, rreq, got, NULL));
    assert_pattern(dst, sizeof(b), 2);
    assert_int_equal(comm_fds(p.recv, fds, POLL_MAX_FDS), 1);    /* the next header is due */
    sts_pair_close(&p);
}

/* Drives a send until its sockets stop taking data; false if it completed instead. */
static bool send_until_blocked(stt_comm_t *send, stt_req_t *sreq)
{
    struct pollfd fds[POLL_MAX_FDS];
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    for (;;) {
        int done = 0;
        assert_ok(stt_test(sreq, &done, NULL));
        if (done)
            return false;
        int n = comm_fds(send, fds, POLL_MAX_FDS);
        assert_true(n > 0);
        bool want_out = false;
        for (int i = 0; i < n; i++) {
            assert_true(fds[i].events & POLLIN);
            want_out |= (fds[i].events & POLLOUT) != 0;
        }
        assert_true(want_out);                /* unsent data: someone asks for POLLOUT */
        if (poll(fds, (nfds_t)n, 0) == 0)
            return true;
        assert_false(stu_deadline_passed(deadline));
    }
}

static void test_poll_send_blocked_then_writable(void **state)
{
    static const char *nsocks[] = {"1", "4"};
    size_t size = 16 << 20;
    uint8_t *src = malloc(size), *dst = malloc(size);

    assert_non_null(src);
    assert_non_null(dst);
    sts_pattern_fill(src, size, 8);
    for (int k = 0; k < 2; k++) {
        sts_pair_t p = {0};
        struct pollfd fds[POLL_MAX_FDS];
        stt_req_t *sreq = NULL, *rreq = NULL;
        void *data[1] = {dst};
        size_t cap[1] = {size}, got[1] = {0};
        int tag[1] = {0}, done = 0;

        tcp_env(nsocks[k], "64K");
        setenv("STRATA_SOCKET_BUFSIZE", "64K", 1);   /* small, fixed buffers fill fast */
        stu_param_reload();
        sts_pair_must_open(ops, 0, 0, &p);
        memset(dst, 0, size);
        assert_ok(stt_isend(p.send, src, size, 0, NULL, &sreq));
        assert_true(send_until_blocked(p.send, sreq));

        /* The receiver reads what has arrived: the sender's sockets drain and wake it. */
        assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq));
        assert_ok(stt_test(rreq, &done, got));
        assert_int_equal(done, 0);
        int n = comm_fds(p.send, fds, POLL_MAX_FDS);
        assert_true(poll(fds, (nfds_t)n, POLL_GENEROUS_MS) > 0);
        bool out = false;
        for (int i = 0; i < n; i++)
            out |= (fds[i].revents & POLLOUT) != 0;
        assert_true(out);

        assert_ok(sts_reqs_finish(sreq, rreq, got, NULL));
        assert_int_equal(got[0], size);
        assert_pattern(dst, size, 8);
        /* Nothing left to send: POLLIN only. */
        n = comm_fds(p.send, fds, POLL_MAX_FDS);
        for (int i = 0; i < n; i++)
            assert_int_equal(fds[i].events, POLLIN);
        sts_pair_close(&p);
    }
    unsetenv("STRATA_SOCKET_BUFSIZE");
    tcp_env("1", "256K");
    free(src);
    free(dst);
}

/*
 * One thread, two comms, never spinning: test both requests, and when neither
 * finished, sleep in poll() on the union of their descriptors. Each poll must
 * wake within the generous bound, or a wakeup was missed.
 */
static void event_loop_xfer(sts_pair_t *p, size_t size, unsigned seed, int *wakeups)
{
    uint8_t *src = malloc(size ? size : 1), *dst = malloc(size ? size : 1);
    stt_req_t *sreq = NULL, *rreq = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {size}, got[1] = {0};
    int tag[1] = {2};

    assert_non_null(src);
    assert_non_null(dst);
    sts_pattern_fill(src, size, seed);
    assert_ok(stt_irecv(p->recv, 1, data, cap, tag, NULL, &rreq));
    assert_ok(stt_isend(p->send, src, size, 2, NULL, &sreq));
    while (sreq != NULL || rreq != NULL) {
        assert_ok(sts_req_poke(&sreq, NULL));
        assert_ok(sts_req_poke(&rreq, got));
        if (sreq == NULL && rreq == NULL)
            break;
        struct pollfd fds[POLL_MAX_FDS];
        int n = 0;
        if (sreq != NULL)
            n += comm_fds(p->send, fds + n, POLL_MAX_FDS - n);
        if (rreq != NULL)
            n += comm_fds(p->recv, fds + n, POLL_MAX_FDS - n);
        assert_true(n > 0);
        assert_true(poll(fds, (nfds_t)n, POLL_GENEROUS_MS) > 0);
        (*wakeups)++;
    }
    assert_int_equal(got[0], size);
    assert_pattern(dst, size, seed);
    free(src);
    free(dst);
}

static void test_poll_event_loop(void **state)
{
    static const char *nsocks[] = {"1", "4"};
    static const size_t sizes[] = {0, 1, 5000, 64 << 10, (1 << 20) + 3, 8 << 20};

    for (int k = 0; k < 2; k++) {
        sts_pair_t p = {0};
        int wakeups = 0;
        tcp_env(nsocks[k], "64K");
        setenv("STRATA_SOCKET_BUFSIZE", "64K", 1);   /* small buffers: many sleeps */
        stu_param_reload();
        sts_pair_must_open(ops, 0, 0, &p);
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            event_loop_xfer(&p, sizes[i], i + 30, &wakeups);
        print_message("nsocks=%s: %d poll wakeups for %zu messages\n", nsocks[k], wakeups,
                      sizeof(sizes) / sizeof(sizes[0]));
        sts_pair_close(&p);
    }
    unsetenv("STRATA_SOCKET_BUFSIZE");
    tcp_env("1", "256K");
}

/* The receiver closes: the send comm's sockets turn readable, and it fails. */
static void test_poll_send_sees_peer_close(void **state)
{
    static const char *nsocks[] = {"1", "3"};

    for (int k = 0; k < 2; k++) {
        sts_pair_t p = {0};
        struct pollfd fds[POLL_MAX_FDS];
        stt_req_t *sreq = NULL;
        uint8_t byte = 1;

        tcp_env(nsocks[k], "64K");
        sts_pair_must_open(ops, 0, 0, &p);
        int n = comm_fds(p.send, fds, POLL_MAX_FDS);
        assert_int_equal(n, atoi(nsocks[k]));
        assert_int_equal(poll(fds, (nfds_t)n, POLL_SHORT_MS), 0);
        stt_close_recv(p.recv);
        p.recv = NULL;
        assert_true(poll(fds, (nfds_t)n, POLL_GENEROUS_MS) > 0);
        assert_int_equal(comm_fds(p.send, fds, POLL_MAX_FDS), 0);   /* failed: nap, test */
        assert_status(stt_isend(p.send, &byte, 1, 0, NULL, &sreq), STRATA_ERR_REMOTE);
        sts_pair_close(&p);
    }
    tcp_env("1", "256K");
}

static void test_poll_edge_cases(void **state)
{
    sts_pair_t p = {0};
    struct pollfd fds[POLL_MAX_FDS];
    uint8_t src[10] = {0}, dst[10];
    stt_req_t *sreq = NULL, *rreq = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {10}, got[1];
    int tag[1] = {1};

    assert_int_equal(stt_tcp_poll_fds(NULL, fds, POLL_MAX_FDS), 0);   /* the implementation itself */
    tcp_env("4", "64K");
    sts_pair_must_open(ops, 0, 0, &p);
    /* A fresh receive comm waits on socket 0 only; the striping sockets owe nothing. */
    assert_int_equal(stt_poll_fds(p.recv, fds, 0), 0);
    assert_int_equal(stt_poll_fds(p.recv, fds, 1), 1);
    assert_int_equal(fds[0].events, POLLIN);
    /* Too small an array for a send comm's 4 sockets: nothing (a partial set could sleep
     * through the one that matters). */
    assert_int_equal(stt_poll_fds(p.send, fds, 3), 0);
    assert_int_equal(stt_poll_fds(p.send, NULL, POLL_MAX_FDS), 0);
    assert_int_equal(stt_poll_fds(p.send, fds, 4), 4);
    /* A message whose tag no posted receive has waits for one, not for a socket: once its
     * header is staged the comm names nothing. */
    assert_ok(stt_isend(p.send, src, 10, 2, NULL, &sreq));
    assert_ok(sts_req_wait(sreq, sts_deadline(STS_IO_TIMEOUT_S), NULL));
    assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq));
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    int done = 0;
    while (stt_poll_fds(p.recv, fds, POLL_MAX_FDS) != 0) {
        assert_false(stu_deadline_passed(deadline));
        assert_int_equal(poll(fds, 1, 100) >= 0, 1);
        assert_ok(stt_test(rreq, &done, got));
        assert_int_equal(done, 0);
    }
    /* A failed comm has nothing to wait for: the peer closes while the message waits, and
     * the waiting receive fails after the grace (test() then reports it at once). */
    stt_close_send(p.send);
    p.send = NULL;
    assert_status(sts_req_wait(rreq, sts_deadline(STS_IO_TIMEOUT_S), got), STRATA_ERR_REMOTE);
    assert_int_equal(stt_poll_fds(p.recv, fds, POLL_MAX_FDS), 0);
    sts_pair_close(&p);
    tcp_env("1", "256K");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poll_recv_quiet_then_ready),
        cmocka_unit_test(test_poll_recv_quiet_while_unmatched),
        cmocka_unit_test(test_poll_send_blocked_then_writable),
        cmocka_unit_test(test_poll_event_loop),
        cmocka_unit_test(test_poll_send_sees_peer_close),
        cmocka_unit_test(test_poll_edge_cases),
    };
    return cmocka_run_group_tests_name("tcp_poll", tests, tcp_group_setup, sts_conf_teardown);
}
