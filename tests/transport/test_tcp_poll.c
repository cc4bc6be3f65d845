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

#include "tcp_pair.h"

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
    pair_t p = {0};
    struct pollfd fds[POLL_MAX_FDS];
    uint8_t src[100], dst[100];
    stt_req_t *sreq = NULL, *rreq = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {sizeof(dst)}, got[1] = {0};
    int tag[1] = {9}, n, done = 0;

    pair_open(&p);
    /* Nothing posted, nothing sent: socket 0, waiting for a header, stays quiet. */
    n = comm_fds(p.recv, fds, POLL_MAX_FDS);
    assert_int_equal(n, 1);
    assert_int_equal(fds[0].events, POLLIN);
    assert_int_equal(poll(fds, (nfds_t)n, POLL_SHORT_MS), 0);

    /* A receive posted, still nothing sent. */
    assert_int_equal(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
    assert_non_null(rreq);
    n = comm_fds(p.recv, fds, POLL_MAX_FDS);
    assert_int_equal(n, 1);
    assert_int_equal(fds[0].events, POLLIN);
    assert_int_equal(poll(fds, (nfds_t)n, POLL_SHORT_MS), 0);

    /* The peer sends: ready, and one test() completes the receive. */
    fill(src, sizeof(src), 4);
    assert_int_equal(stt_isend(p.send, src, sizeof(src), 9, NULL, &sreq), STRATA_OK);
    assert_non_null(sreq);
    assert_int_equal(poll(fds, (nfds_t)n, POLL_GENEROUS_MS), 1);
    assert_true(fds[0].revents & POLLIN);
    assert_int_equal(stt_test(rreq, &done, got), STRATA_OK);
    assert_int_equal(done, 1);
    assert_int_equal(got[0], sizeof(src));
    assert_true(check(dst, sizeof(src), 4));
    assert_int_equal(pair_wait(sreq, NULL, NULL, NULL), STRATA_OK);
    pair_close(&p);
}

/*
 * A message that arrives with no receive for it: once its header is read, the
 * comm names no descriptor (its bytes stay readable, and reading cannot help)
 * until a receive is posted.
 */
static void test_poll_recv_quiet_while_unmatched(void **state)
{
    pair_t p = {0};
    struct pollfd fds[POLL_MAX_FDS];
    uint8_t a[100], b[100], dst[100];
    stt_req_t *sreq[2] = {NULL, NULL}, *rreq = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {sizeof(dst)}, got[1] = {0};
    int tag[1] = {5}, avail = 0;
    uint64_t start = stu_time_ns();

    pair_open(&p);
    fill(a, sizeof(a), 1);
    fill(b, sizeof(b), 2);
    assert_int_equal(stt_isend(p.send, a, sizeof(a), 5, NULL, &sreq[0]), STRATA_OK);
    assert_int_equal(stt_isend(p.send, b, sizeof(b), 5, NULL, &sreq[1]), STRATA_OK);
    assert_int_equal(pair_wait(sreq[0], sreq[1], NULL, NULL), STRATA_OK);
    /* Both messages in the receiver's kernel buffer, so one receive reads a and b's header. */
    assert_int_equal(comm_fds(p.recv, fds, POLL_MAX_FDS), 1);
    while (avail < 2 * (STT_TCP_HDR_BYTES + (int)sizeof(a))) {
        assert_int_equal(ioctl(fds[0].fd, FIONREAD, &avail), 0);
        assert_false(past(start));
        poll(NULL, 0, 1);
    }
    assert_int_equal(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
    assert_int_equal(pair_wait(NULL, rreq, got, NULL), STRATA_OK);
    assert_true(check(dst, sizeof(a), 1));
    assert_int_equal(comm_fds(p.recv, fds, POLL_MAX_FDS), 0);
    rreq = NULL;
    assert_int_equal(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
    assert_int_equal(pair_wait(NULL, rreq, got, NULL), STRATA_OK);
    assert_true(check(dst, sizeof(b), 2));
    assert_int_equal(comm_fds(p.recv, fds, POLL_MAX_FDS), 1);    /* the next header is due */
    pair_close(&p);
}

/* Drives a send until its sockets stop taking data; false if it completed instead. */
static bool send_until_blocked(stt_comm_t *send, stt_req_t *sreq)
{
    struct pollfd fds[POLL_MAX_FDS];
    uint64_t start = stu_time_ns();

    for (;;) {
        int done = 0;
        assert_int_equal(stt_test(sreq, &done, NULL), STRATA_OK);
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
        assert_false(past(start));
    }
}

static void test_poll_send_blocked_then_writable(void **state)
{
    static const char *nsocks[] = {"1", "4"};
    size_t size = 16 << 20;
    uint8_t *src = malloc(size), *dst = malloc(size);

    assert_non_null(src);
    assert_non_null(dst);
    fill(src, size, 8);
    for (int k = 0; k < 2; k++) {
        pair_t p = {0};
        struct pollfd fds[POLL_MAX_FDS];
        stt_req_t *sreq = NULL, *rreq = NULL;
        void *data[1] = {dst};
        size_t cap[1] = {size}, got[1] = {0};
        int tag[1] = {0}, done = 0;

        env_set(nsocks[k], "64K");
        setenv("STRATA_SOCKET_BUFSIZE", "64K", 1);   /* small, fixed buffers fill fast */
        stu_param_reload();
        pair_open(&p);
        memset(dst, 0, size);
        assert_int_equal(stt_isend(p.send, src, size, 0, NULL, &sreq), STRATA_OK);
        assert_true(send_until_blocked(p.send, sreq));

        /* The receiver reads what has arrived: the sender's sockets drain and wake it. */
        assert_int_equal(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
        assert_int_equal(stt_test(rreq, &done, got), STRATA_OK);
        assert_int_equal(done, 0);
        int n = comm_fds(p.send, fds, POLL_MAX_FDS);
        assert_true(poll(fds, (nfds_t)n, POLL_GENEROUS_MS) > 0);
        bool out = false;
        for (int i = 0; i < n; i++)
            out |= (fds[i].revents & POLLOUT) != 0;
        assert_true(out);

        assert_int_equal(pair_wait(sreq, rreq, got, NULL), STRATA_OK);
        assert_int_equal(got[0], size);
        assert_true(check(dst, size, 8));
        /* Nothing left to send: POLLIN only. */
        n = comm_fds(p.send, fds, POLL_MAX_FDS);
        for (int i = 0; i < n; i++)
            assert_int_equal(fds[i].events, POLLIN);
        pair_close(&p);
    }
    unsetenv("STRATA_SOCKET_BUFSIZE");
    env_set("1", "256K");
    free(src);
    free(dst);
}

/*
 * One thread, two comms, never spinning: test both requests, and when neither
 * finished, sleep in poll() on the union of their descriptors. Each poll must
 * wake within the generous bound, or a wakeup was missed.
 */
static void event_loop_xfer(pair_t *p, size_t size, unsigned seed, int *wakeups)
{
    uint8_t *src = malloc(size ? size : 1), *dst = malloc(size ? size : 1);
    stt_req_t *sreq = NULL, *rreq = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {size}, got[1] = {0};
    int tag[1] = {2};

    assert_non_null(src);
    assert_non_null(dst);
    fill(src, size, seed);
    assert_int_equal(stt_irecv(p->recv, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
    assert_int_equal(stt_isend(p->send, src, size, 2, NULL, &sreq), STRATA_OK);
    while (sreq != NULL || rreq != NULL) {
        assert_int_equal(poke(&sreq, NULL), STRATA_OK);
        assert_int_equal(poke(&rreq, got), STRATA_OK);
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
    assert_true(check(dst, size, seed));
    free(src);
    free(dst);
}

static void test_poll_event_loop(void **state)
{
    static const char *nsocks[] = {"1", "4"};
    static const size_t sizes[] = {0, 1, 5000, 64 << 10, (1 << 20) + 3, 8 << 20};

    for (int k = 0; k < 2; k++) {
        pair_t p = {0};
        int wakeups = 0;
        env_set(nsocks[k], "64K");
        setenv("STRATA_SOCKET_BUFSIZE", "64K", 1);   /* small buffers: many sleeps */
        stu_param_reload();
        pair_open(&p);
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            event_loop_xfer(&p, sizes[i], i + 30, &wakeups);
        print_message("nsocks=%s: %d poll wakeups for %zu messages\n", nsocks[k], wakeups,
                      sizeof(sizes) / sizeof(sizes[0]));
        pair_close(&p);
    }
    unsetenv("STRATA_SOCKET_BUFSIZE");
    env_set("1", "256K");
}

/* The receiver closes: the send comm's sockets turn readable, and it fails. */
static void test_poll_send_sees_peer_close(void **state)
{
    static const char *nsocks[] = {"1", "3"};

    for (int k = 0; k < 2; k++) {
        pair_t p = {0};
        struct pollfd fds[POLL_MAX_FDS];
        stt_req_t *sreq = NULL;
        uint8_t byte = 1;

        env_set(nsocks[k], "64K");
        pair_open(&p);
        int n = comm_fds(p.send, fds, POLL_MAX_FDS);
        assert_int_equal(n, atoi(nsocks[k]));
        assert_int_equal(poll(fds, (nfds_t)n, POLL_SHORT_MS), 0);
        stt_close_recv(p.recv);
        p.recv = NULL;
        assert_true(poll(fds, (nfds_t)n, POLL_GENEROUS_MS) > 0);
        assert_int_equal(comm_fds(p.send, fds, POLL_MAX_FDS), 0);   /* failed: nap, test */
        assert_int_equal(stt_isend(p.send, &byte, 1, 0, NULL, &sreq), STRATA_ERR_REMOTE);
        pair_close(&p);
    }
    env_set("1", "256K");
}

static void test_poll_edge_cases(void **state)
{
    pair_t p = {0};
    struct pollfd fds[POLL_MAX_FDS];
    uint8_t src[10] = {0}, dst[10];
    stt_req_t *sreq = NULL, *rreq = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {10}, got[1];
    int tag[1] = {1};

    assert_int_equal(stt_tcp_poll_fds(NULL, fds, POLL_MAX_FDS), 0);   /* the implementation itself */
    env_set("4", "64K");
    pair_open(&p);
    /* A fresh receive comm waits on socket 0 only; the striping sockets owe nothing. */
    assert_int_equal(stt_poll_fds(p.recv, fds, 0), 0);
    assert_int_equal(stt_poll_fds(p.recv, fds, 1), 1);
    assert_int_equal(fds[0].events, POLLIN);
    /* Too small an array for a send comm's 4 sockets: nothing (a partial set could sleep
     * through the one that matters). */
    assert_int_equal(stt_poll_fds(p.send, fds, 3), 0);
    assert_int_equal(stt_poll_fds(p.send, NULL, POLL_MAX_FDS), 0);
    assert_int_equal(stt_poll_fds(p.send, fds, 4), 4);
    /* A failed comm has nothing to wait for: test() reports its error at once. */
    assert_int_equal(stt_isend(p.send, src, 10, 2, NULL, &sreq), STRATA_OK);
    assert_int_equal(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
    assert_int_equal(pair_wait(sreq, rreq, got, NULL), STRATA_ERR_REMOTE);
    assert_int_equal(stt_poll_fds(p.recv, fds, POLL_MAX_FDS), 0);
    pair_close(&p);
    env_set("1", "256K");
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
    return cmocka_run_group_tests_name("tcp_poll", tests, tcp_pair_setup, tcp_pair_teardown);
}
