/*
 * The TCP transport in one process over loopback, when things go wrong:
 * truncation, a tag no receive has yet, dead or departed peers, bad hellos,
 * handshake timeouts, garbage on the stream, a bad handle.
 */
#include <arpa/inet.h>

#include "tcp_fixture.h"
#include "util/log.h"

static void test_truncation_keeps_connection(void **state)
{
    sts_pair_t p = {0};
    static const char *nsocks[] = {"1", "4"};

    for (int k = 0; k < 2; k++) {
        tcp_env(nsocks[k], "64K");
        sts_pair_must_open(ops, 0, 0, &p);
        size_t big = (3 << 20) + 5;
        uint8_t *src = malloc(big), dst[100];
        stt_req_t *sreq = NULL, *rreq = NULL;
        void *data[1] = {dst};
        size_t cap[1] = {sizeof(dst)}, got[1];
        int tag[1] = {3};
        strata_status_t ss;

        assert_non_null(src);
        sts_pattern_fill(src, big, 1);
        assert_ok(stt_isend(p.send, src, big, 3, NULL, &sreq));
        assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq));
        assert_status(sts_reqs_finish(sreq, rreq, got, &ss), STRATA_ERR_TRUNCATED);
        assert_ok(ss);
        /* The stream is still in sync: the next messages arrive intact. */
        sts_xfer_ok(&p, 100, 100, 3, 2, STS_XFER_UNREGISTERED);
        sts_xfer_ok(&p, 1 << 20, 1 << 20, 4, 3, STS_XFER_UNREGISTERED);
        free(src);
        sts_pair_close(&p);
    }
    tcp_env("1", "256K");
}

/*
 * A message whose tag no posted receive has is no error: it waits at the head
 * of the stream, holding back the message behind it (tcp's tags_block), until
 * a receive with its tag is posted; then both arrive, each in its own buffer.
 */
static void test_tag_waits_for_its_receive(void **state)
{
    sts_pair_t p = {0};
    uint8_t src1[10], src2[20], dst1[10], dst2[20];
    stt_req_t *s1 = NULL, *s2 = NULL, *r1 = NULL, *r2 = NULL;
    void *d1[1] = {dst1}, *d2[1] = {dst2};
    size_t c1[1] = {sizeof(dst1)}, c2[1] = {sizeof(dst2)}, got[1];
    int t1[1] = {1}, t2[1] = {2}, done = 0;
    strata_status_t ss;

    sts_pattern_fill(src1, sizeof(src1), 1);
    sts_pattern_fill(src2, sizeof(src2), 2);
    sts_pair_must_open(ops, 0, 0, &p);
    assert_ok(stt_isend(p.send, src2, sizeof(src2), 2, NULL, &s2));
    assert_ok(stt_isend(p.send, src1, sizeof(src1), 1, NULL, &s1));
    assert_ok(stt_irecv(p.recv, 1, d1, c1, t1, NULL, &r1));
    for (int i = 0; i < 200; i++) {
        assert_ok(stt_test(r1, &done, got));
        assert_int_equal(done, 0);
        sts_relax();
    }
    assert_ok(stt_irecv(p.recv, 1, d2, c2, t2, NULL, &r2));
    assert_ok(sts_reqs_finish(s2, r2, got, &ss));
    assert_ok(ss);
    assert_int_equal(got[0], sizeof(src2));
    assert_ok(sts_reqs_finish(s1, r1, got, &ss));
    assert_ok(ss);
    assert_int_equal(got[0], sizeof(src1));
    assert_pattern(dst1, sizeof(dst1), 1);
    assert_pattern(dst2, sizeof(dst2), 2);
    sts_pair_close(&p);
}

/* The sender dies in the middle of a large message: the receive fails, it does not hang. */
static void test_peer_closed_mid_transfer(void **state)
{
    static const char *nsocks[] = {"1", "4"};

    for (int k = 0; k < 2; k++) {
        sts_pair_t p = {0};
        size_t big = 32 << 20;
        uint8_t *src = malloc(big), *dst = malloc(big);
        stt_req_t *sreq = NULL, *rreq = NULL;
        void *data[1] = {dst};
        size_t cap[1] = {big}, got[1];
        int tag[1] = {0}, done = 0;

        tcp_env(nsocks[k], "64K");
        /* Small socket buffers, so the kernel cannot swallow the whole message. */
        setenv("STRATA_SOCKET_BUFSIZE", "64K", 1);
        stu_param_reload();
        assert_non_null(src);
        assert_non_null(dst);
        sts_pair_must_open(ops, 0, 0, &p);
        assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq));
        assert_ok(stt_isend(p.send, src, big, 0, NULL, &sreq));
        /* Move some bytes, but not all: the socket buffers hold far less than 32 MiB. */
        for (int i = 0; i < 3; i++) {
            assert_ok(stt_test(sreq, &done, NULL));
            assert_int_equal(done, 0);
            assert_ok(stt_test(rreq, &done, got));
            assert_int_equal(done, 0);
        }
        stt_close_send(p.send);          /* with the send in flight */
        p.send = NULL;
        assert_status(sts_reqs_finish(NULL, rreq, got, NULL), STRATA_ERR_REMOTE);
        sts_pair_close(&p);
        free(src);
        free(dst);
    }
    unsetenv("STRATA_SOCKET_BUFSIZE");
    tcp_env("1", "256K");
}

/*
 * The sender finishes (its data is in the kernel) and closes before the receiver
 * even posts: the receive still gets every striped piece, and only a receive
 * for a message that was never sent fails.
 */
static void test_sender_closes_after_send(void **state)
{
    sts_pair_t p = {0};
    size_t size = 512 << 10;
    uint8_t *src = malloc(size), *dst = malloc(size);
    stt_req_t *sreq = NULL, *rreq = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {size}, got[1] = {0};
    int tag[1] = {0};
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    tcp_env("4", "64K");
    setenv("STRATA_SOCKET_BUFSIZE", "1M", 1);   /* room in the kernel for the whole message */
    stu_param_reload();
    assert_non_null(src);
    assert_non_null(dst);
    sts_pattern_fill(src, size, 21);
    sts_pair_must_open(ops, 0, 0, &p);
    assert_ok(stt_isend(p.send, src, size, 0, NULL, &sreq));
    while (sreq != NULL) {
        assert_ok(sts_req_poke(&sreq, got));
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
    }
    stt_close_send(p.send);
    p.send = NULL;
    assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq));
    assert_ok(sts_reqs_finish(NULL, rreq, got, NULL));
    assert_int_equal(got[0], size);
    assert_pattern(dst, size, 21);
    assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq));
    assert_status(sts_reqs_finish(NULL, rreq, got, NULL), STRATA_ERR_REMOTE);
    sts_pair_close(&p);
    free(src);
    free(dst);
    unsetenv("STRATA_SOCKET_BUFSIZE");
    tcp_env("1", "256K");
}

/* The receiver goes away: a large pending send fails instead of hanging. */
static void test_receiver_closed(void **state)
{
    sts_pair_t p = {0};
    size_t big = 64 << 20;
    uint8_t *src = calloc(1, big);
    stt_req_t *sreq = NULL;

    assert_non_null(src);
    sts_pair_must_open(ops, 0, 0, &p);
    stt_close_recv(p.recv);
    p.recv = NULL;
    assert_ok(stt_isend(p.send, src, big, 0, NULL, &sreq));
    strata_status_t ss;
    sts_reqs_finish(sreq, NULL, NULL, &ss);
    assert_status(ss, STRATA_ERR_REMOTE);
    sts_pair_close(&p);
    free(src);
}

static void test_bad_hellos_keep_listener(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE], buf[STT_TCP_HELLO_BYTES];
    stt_listen_t *l = NULL;
    const stt_tcp_handle_t *h = (const stt_tcp_handle_t *)handle;
    stt_tcp_hello_t good = {.version = STT_TCP_PROTO_VERSION, .index = 0, .nsocks = 2,
                            .conn_id = 42};

    assert_ok(stt_listen(ops, 0, handle, &l));
    good.listener_id = h->listener_id;
    memcpy(good.secret, h->secret, sizeof(good.secret));

    /* garbage */
    int fd = raw_connect(handle);
    memset(buf, 0x5a, sizeof(buf));
    raw_send(fd, buf, sizeof(buf));
    assert_int_equal(accept_until_closed(l, fd), STT_TCP_ACK_REJECTED);
    close(fd);

    /* wrong listener id */
    stt_tcp_hello_t bad = good;
    bad.listener_id ^= 1;
    stt_tcp_hello_encode(&bad, buf);
    fd = raw_connect(handle);
    raw_send(fd, buf, sizeof(buf));
    assert_int_equal(accept_until_closed(l, fd), STT_TCP_ACK_REJECTED);
    close(fd);

    /* the right listener id without the secret (one bit off, then none at all) */
    for (int k = 0; k < 2; k++) {
        bad = good;
        if (k == 0)
            bad.secret[5] ^= 0x10;
        else
            memset(bad.secret, 0, sizeof(bad.secret));
        stt_tcp_hello_encode(&bad, buf);
        fd = raw_connect(handle);
        raw_send(fd, buf, sizeof(buf));
        assert_int_equal(accept_until_closed(l, fd), STT_TCP_ACK_REJECTED);
        close(fd);
    }

    /* duplicate index: the first socket is kept, the second rejected */
    stt_tcp_hello_encode(&good, buf);
    int fd1 = raw_connect(handle);
    raw_send(fd1, buf, sizeof(buf));
    fd = raw_connect(handle);
    raw_send(fd, buf, sizeof(buf));
    accept_until_closed(l, fd);
    close(fd);
    close(fd1);

    /* The listener still accepts a real connection, twice. */
    for (int i = 0; i < 2; i++)
        listener_still_serves(l, handle);
    stt_close_listen(l);
}

/* The warnings of a connect, kept by the sink below. */
static char warned[4096];

static void warn_keep(int level, unsigned long flags, const char *file, int line,
                      const char *msg)
{
    if (level <= STU_LOG_WARN)
        snprintf(warned + strlen(warned), sizeof(warned) - strlen(warned), "%s\n", msg);
}

/* Connects with copy (a copy of a handle) until it fails; the status, warnings in warned. */
static strata_status_t connect_until_failed(uint8_t *copy)
{
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    stt_comm_t *c = NULL;
    strata_status_t status;

    warned[0] = '\0';
    stu_log_set_sink(warn_keep, STU_LOG_WARN);
    do {
        status = stt_connect(ops, 0, copy, NULL, &c);
        assert_null(c);
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 5);
    } while (status == STRATA_OK);
    stu_log_set_sink(NULL, STU_LOG_WARN);
    return status;
}

static void test_handshake_timeouts(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE], copy[STT_HANDLE_SIZE], buf[STT_TCP_HELLO_BYTES];
    stt_listen_t *l = NULL;

    setenv("STRATA_CONNECT_TIMEOUT", "300", 1);
    stu_param_reload();
    assert_ok(stt_listen(ops, 0, handle, &l));

    /* Nobody calls accept: connect gives up with a timeout and resets the handle. */
    memcpy(copy, handle, sizeof(copy));
    assert_status(connect_until_failed(copy), STRATA_ERR_TIMEOUT);
    stt_connslot_t slot;
    memcpy(&slot, copy + STT_CONNSLOT_OFFSET, sizeof(slot));
    assert_null(slot.state);              /* the connect slot was reset */

    /* A connection that sends only one of its two sockets is dropped by accept. */
    const stt_tcp_handle_t *h = (const stt_tcp_handle_t *)handle;
    stt_tcp_hello_t half = {.version = STT_TCP_PROTO_VERSION, .index = 1, .nsocks = 2,
                            .listener_id = h->listener_id, .conn_id = 77};
    memcpy(half.secret, h->secret, sizeof(half.secret));
    stt_tcp_hello_encode(&half, buf);
    int fd = raw_connect(handle);
    raw_send(fd, buf, sizeof(buf));
    accept_until_closed(l, fd);      /* the earlier timed-out sockets get dropped too */
    close(fd);

    /* A socket that never completes its hello is dropped as well, answered LATE. */
    fd = raw_connect(handle);
    raw_send(fd, buf, 5);
    assert_int_equal(accept_until_closed(l, fd), STT_TCP_ACK_LATE);
    close(fd);

    stt_close_listen(l);
    unsetenv("STRATA_CONNECT_TIMEOUT");
    stu_param_reload();
}

/*
 * A raw listener for the connector's side: accepts the two sockets of one attempt, reads
 * their hellos, answers `status` on socket index 1 (not 0, where a connection's ack goes)
 * and closes it. Returns the attempt's connection id; the sockets left open go to keep.
 */
static uint64_t raw_answer_second(int lfd, uint8_t *copy, uint8_t status, int *keep)
{
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    int fds[2] = {-1, -1}, have = 0;
    uint8_t hello[2][STT_TCP_HELLO_BYTES];
    stt_tcp_hello_t h[2];
    stt_comm_t *c = NULL;
    const char *why;

    while (have < 2) {
        assert_ok(stt_connect(ops, 0, copy, NULL, &c));
        assert_null(c);
        int fd = accept(lfd, NULL, NULL);
        if (fd >= 0) {
            size_t got = 0;
            while (got < STT_TCP_HELLO_BYTES) {        /* the connector writes it at once */
                assert_ok(stt_connect(ops, 0, copy, NULL, &c));
                ssize_t r = recv(fd, hello[have] + got, STT_TCP_HELLO_BYTES - got, MSG_DONTWAIT);
                if (r > 0)
                    got += (size_t)r;
                assert_false(stu_deadline_passed(deadline));
            }
            assert_ok(stt_tcp_hello_decode(hello[have], &h[have], &why));
            fds[h[have].index] = fd;
            have++;
        }
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
    }
    assert_true(fds[0] >= 0 && fds[1] >= 0 && h[0].conn_id == h[1].conn_id);
    stt_tcp_ack_t ack = {.version = STT_TCP_PROTO_VERSION, .nsocks = 2, .status = status};
    uint8_t buf[STT_TCP_ACK_BYTES];
    stt_tcp_ack_encode(&ack, buf);
    raw_send(fds[1], buf, sizeof(buf));
    close(fds[1]);
    *keep = fds[0];
    return h[0].conn_id;
}

/*
 * The listener's answer on a socket other than 0: LATE makes the connector start over
 * with new sockets and a new connection id, REJECTED fails it at once.
 */
static void test_answer_on_other_socket(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE], copy[STT_HANDLE_SIZE];
    uint8_t secret[STT_HANDLE_SECRET_BYTES] = {9};
    stt_comm_t *c = NULL;
    int keep[2];

    setenv("STRATA_SOCKET_NSOCKS", "2", 1);
    stu_param_reload();
    int lfd = raw_listener(handle, 77, secret);
    memcpy(copy, handle, sizeof(copy));

    uint64_t first = raw_answer_second(lfd, copy, STT_TCP_ACK_LATE, &keep[0]);
    uint64_t second = raw_answer_second(lfd, copy, STT_TCP_ACK_REJECTED, &keep[1]);
    assert_true(first != second);                  /* started over, a new connection */
    strata_status_t status;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    do {
        status = stt_connect(ops, 0, copy, NULL, &c);
        assert_null(c);
        assert_false(stu_deadline_passed(deadline));
    } while (status == STRATA_OK);
    assert_status(status, STRATA_ERR_REMOTE);
    close(keep[0]);
    close(keep[1]);
    close(lfd);
    setenv("STRATA_SOCKET_NSOCKS", "1", 1);
    stu_param_reload();
}

/* A failed connect names its cause: not accepting, or a handle not the listener's. */
static void test_connect_failure_names_cause(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE];
    stt_listen_t *l = NULL;

    setenv("STRATA_CONNECT_TIMEOUT", "300", 1);
    stu_param_reload();
    assert_ok(stt_listen(ops, 0, handle, &l));

    /* Nobody calls accept: the kernel completes the TCP connect and takes the hello. */
    uint8_t copy[STT_HANDLE_SIZE];
    memcpy(copy, handle, sizeof(copy));
    assert_status(connect_until_failed(copy), STRATA_ERR_TIMEOUT);
    assert_non_null(strstr(warned, "the listener has our hello but has not answered (it is not"
                                   " calling accept"));

    /* A handle whose secret is not the listener's: refused at once, and said so. */
    ((stt_tcp_handle_t *)(void *)handle)->secret[0] ^= 1;
    strata_status_t status = STRATA_OK;
    stt_comm_t *c = NULL, *r = NULL;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    memcpy(copy, handle, sizeof(copy));
    warned[0] = '\0';
    stu_log_set_sink(warn_keep, STU_LOG_WARN);
    while (status == STRATA_OK && !stu_deadline_passed(deadline)) {
        status = stt_connect(ops, 0, copy, NULL, &c);
        assert_ok(stt_accept(l, &r));
        assert_null(r);
        poll(NULL, 0, 1);
    }
    stu_log_set_sink(NULL, STU_LOG_WARN);
    assert_status(status, STRATA_ERR_REMOTE);
    assert_non_null(strstr(warned, "refused our hello: the handle's listener id or secret is"
                                   " not its own"));
    stt_close_listen(l);
    unsetenv("STRATA_CONNECT_TIMEOUT");
    stu_param_reload();
}

/* A peer that passes the handshake and then sends garbage fails the receive comm. */
static void test_garbage_stream(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE], buf[64];
    stt_listen_t *l = NULL;
    stt_comm_t *rc = NULL;
    const stt_tcp_handle_t *h = (const stt_tcp_handle_t *)handle;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    assert_ok(stt_listen(ops, 0, handle, &l));
    stt_tcp_hello_t hello = {.version = STT_TCP_PROTO_VERSION, .index = 0, .nsocks = 1,
                             .listener_id = h->listener_id, .conn_id = 5};
    memcpy(hello.secret, h->secret, sizeof(hello.secret));
    stt_tcp_hello_encode(&hello, buf);
    int fd = raw_connect(handle);
    raw_send(fd, buf, STT_TCP_HELLO_BYTES);
    while (rc == NULL) {
        assert_ok(stt_accept(l, &rc));
        assert_false(stu_deadline_passed(deadline));
    }
    /* A valid header for 1000 bytes, then only 10 bytes and EOF: a truncated stream. */
    stt_tcp_hdr_t hdr = {.flags = 0, .tag = 0, .seq = 0, .size = 1000};
    stt_tcp_hdr_encode(&hdr, buf);
    raw_send(fd, buf, STT_TCP_HDR_BYTES + 10);
    close(fd);
    uint8_t dst[1000];
    void *data[1] = {dst};
    size_t cap[1] = {sizeof(dst)}, got[1];
    int tag[1] = {0};
    stt_req_t *rreq = NULL;
    assert_ok(stt_irecv(rc, 1, data, cap, tag, NULL, &rreq));
    assert_status(sts_reqs_finish(NULL, rreq, got, NULL), STRATA_ERR_REMOTE);
    stt_close_recv(rc);

    /* Again with a header whose magic is wrong. */
    rc = NULL;
    hello.conn_id = 6;
    stt_tcp_hello_encode(&hello, buf);
    fd = raw_connect(handle);
    raw_send(fd, buf, STT_TCP_HELLO_BYTES);
    while (rc == NULL) {
        assert_ok(stt_accept(l, &rc));
        assert_false(stu_deadline_passed(deadline));
    }
    memset(buf, 0xee, sizeof(buf));
    raw_send(fd, buf, sizeof(buf));
    assert_ok(stt_irecv(rc, 1, data, cap, tag, NULL, &rreq));
    assert_status(sts_reqs_finish(NULL, rreq, got, NULL), STRATA_ERR_REMOTE);
    close(fd);
    stt_close_recv(rc);
    stt_close_listen(l);
}

static void test_bad_handle(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE];
    stt_comm_t *c = NULL;

    memset(handle, 0, sizeof(handle));
    assert_status(stt_connect(ops, 0, handle, NULL, &c), STRATA_ERR_INVALID);
    memset(handle, 0xff, sizeof(handle));
    assert_status(stt_connect(ops, 0, handle, NULL, &c), STRATA_ERR_INVALID);
    assert_null(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncation_keeps_connection),
        cmocka_unit_test(test_tag_waits_for_its_receive),
        cmocka_unit_test(test_peer_closed_mid_transfer),
        cmocka_unit_test(test_sender_closes_after_send),
        cmocka_unit_test(test_receiver_closed),
        cmocka_unit_test(test_bad_hellos_keep_listener),
        cmocka_unit_test(test_handshake_timeouts),
        cmocka_unit_test(test_connect_failure_names_cause),
        cmocka_unit_test(test_answer_on_other_socket),
        cmocka_unit_test(test_garbage_stream),
        cmocka_unit_test(test_bad_handle),
    };
    return cmocka_run_group_tests(tests, tcp_group_setup, sts_conf_teardown);
}
