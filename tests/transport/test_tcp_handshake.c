/*
 * The tcp handshake's fault matrix, one step at a time: the peer is a raw socket that plays
 * the protocol (tcp_wire.h) up to a step and then dies, which for its sockets is a close
 * (a killed process's sockets are closed by the kernel; the listening one too). Our side
 * must end in time: our listener drops the half-done connection without an error and goes
 * on accepting (and a connection that completed before the death fails its first
 * receive) and closes its sockets; our connector fails its connect. A stopped peer (it holds its sockets, says
 * nothing) is covered for the listener by test_handshake_timeouts (LATE after 1 s) and
 * for the connector by test_connect_failure_names_cause (STRATA_CONNECT_TIMEOUT). Each
 * step prints a `matrix` line: seconds from the death to our error, printed, not asserted.
 *
 *   connector dies (our listener):   after the TCP connect | mid-hello | after socket 0's
 *                                    hello of 2 | after both hellos, before the acks
 *   listener dies (our connector):   before accepting | after reading the hellos, before
 *                                    the ack | mid-ack
 */
#include "tcp_fixture.h"
#include "util/time.h"

#define HS_NSOCKS 2

/* One hello of connection conn_id on socket index of the listener of handle. */
static void hs_hello(const uint8_t *handle, int index, uint32_t conn_id, uint8_t *buf)
{
    const stt_tcp_handle_t *h = (const stt_tcp_handle_t *)handle;
    stt_tcp_hello_t hello = {.version = STT_TCP_PROTO_VERSION, .index = (uint8_t)index,
                             .nsocks = HS_NSOCKS, .listener_id = h->listener_id,
                             .conn_id = conn_id};
    memcpy(hello.secret, h->secret, sizeof(hello.secret));
    stt_tcp_hello_encode(&hello, buf);
}

/*
 * The connector plays up to `step` and dies: 0 TCP connect only, 1 half of socket 0's
 * hello, 2 socket 0's whole hello (socket 1 never comes), 3 both hellos.
 */
static void hs_connector_dies(stt_listen_t *l, const uint8_t *handle, int step, const char *what)
{
    uint8_t buf[STT_TCP_HELLO_BYTES];
    int fds[HS_NSOCKS] = {-1, -1};
    stt_comm_t *recv = NULL;

    int sockets = sts_socket_count(-1);
    fds[0] = raw_connect(handle);
    if (step >= 3)
        fds[1] = raw_connect(handle);
    for (int i = 0; i < HS_NSOCKS && step >= 1; i++) {
        if (fds[i] < 0)
            continue;
        hs_hello(handle, i, 0x1000u + (uint32_t)step, buf);
        raw_send(fds[i], buf, step == 1 ? sizeof(buf) / 2 : sizeof(buf));
    }
    /* let the listener see what was sent before the death, as a live peer's would be */
    for (int i = 0; i < 20 && recv == NULL; i++) {
        assert_ok(stt_accept(l, &recv));
        poll(NULL, 0, 1);
    }
    for (int i = 0; i < HS_NSOCKS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    uint64_t died = stu_time_ns(), deadline = sts_deadline(STS_IO_TIMEOUT_S);
    /* accept calls until the listener has closed its side of every socket (or the
     * completed connection comes out): never an error */
    while (recv == NULL && sts_socket_count(-1) > sockets) {
        assert_ok(stt_accept(l, &recv));
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
    }
    if (recv == NULL) {
        sts_matrix_row("tcp", what, "accept: no comm, its sockets closed", died);
        return;
    }
    /* the connection completed: its first receive fails */
    uint8_t data[64];
    void *bufs[1] = {data};
    size_t sizes[1] = {sizeof(data)};
    int tags[1] = {0};
    void *mh[1] = {NULL};
    stt_req_t *req = NULL;
    strata_status_t status = stt_irecv(recv, 1, bufs, sizes, tags, mh, &req);
    while (status == STRATA_OK && req == NULL && !stu_deadline_passed(deadline))
        status = stt_irecv(recv, 1, bufs, sizes, tags, mh, &req);
    int done = 0;
    size_t got[STT_MAX_RECVS];
    while (status == STRATA_OK && !done && !stu_deadline_passed(deadline))
        status = stt_test(req, &done, got);
    assert_false(status == STRATA_OK);
    sts_matrix_row("tcp", what, "accepted comm, its receive failed", died);
    stt_close_recv(recv);
}

/*
 * The listener plays up to `step` and dies: 0 it never accepts (the kernel completed the
 * TCP connects), 1 it accepts and reads every hello, 2 it also sends half of the ack.
 */
static void hs_listener_dies(int step, const char *what)
{
    uint8_t handle[STT_HANDLE_SIZE];
    uint8_t secret[STT_HANDLE_SECRET_BYTES] = {3, 1, 4, 1, 5};
    int lfd = raw_listener(handle, 5, secret), fds[STT_TCP_MAX_SOCKS], nfds = 0;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    stt_comm_t *send = NULL;
    strata_status_t status = STRATA_OK;

    /* our connector's sockets and hellos, taken by the raw listener as far as step says */
    for (int pass = 0; pass < 50; pass++) {
        assert_ok(stt_connect(ops, 0, handle, NULL, &send));
        assert_null(send);
        int fd = step >= 1 ? accept(lfd, NULL, NULL) : -1;
        if (fd >= 0)
            fds[nfds++] = fd;
        poll(NULL, 0, 2);
        assert_false(stu_deadline_passed(deadline));
    }
    for (int i = 0; i < nfds; i++) {
        uint8_t hello[STT_TCP_HELLO_BYTES];
        assert_int_equal(recv(fds[i], hello, sizeof(hello), MSG_DONTWAIT), (ssize_t)sizeof(hello));
    }
    if (step >= 2 && nfds > 0) {
        stt_tcp_ack_t ack = {.version = STT_TCP_PROTO_VERSION, .nsocks = (uint8_t)nfds};
        uint8_t buf[STT_TCP_ACK_BYTES];
        stt_tcp_ack_encode(&ack, buf);
        raw_send(fds[0], buf, sizeof(buf) / 2);
    }
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    close(lfd);
    uint64_t died = stu_time_ns();
    status = sts_connect_until_error(ops, handle, deadline, &send);
    assert_null(send);
    assert_false(status == STRATA_OK);
    sts_matrix_row("tcp", what, strata_status_str(status), died);
}

static void test_connector_dies_each_step(void **state)
{
    static const char *const what[] = {
        "connector dies after the TCP connect", "connector dies mid-hello",
        "connector dies after socket 0's hello of 2", "connector dies after both hellos"};
    uint8_t handle[STT_HANDLE_SIZE];
    stt_listen_t *l = NULL;

    assert_ok(stt_listen(ops, 0, handle, &l));
    for (int step = 0; step < 4; step++)
        hs_connector_dies(l, handle, step, what[step]);
    listener_still_serves(l, handle);
    stt_close_listen(l);
}

static void test_listener_dies_each_step(void **state)
{
    static const char *const what[] = {"listener dies before accepting",
                                       "listener dies after reading the hellos",
                                       "listener dies mid-ack"};
    for (int step = 0; step < 3; step++)
        hs_listener_dies(step, what[step]);
}

static int hs_setup(void **state)
{
    int rc = tcp_group_setup(state);
    tcp_env("2", "256K");                  /* HS_NSOCKS sockets per connection */
    return rc;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connector_dies_each_step),
        cmocka_unit_test(test_listener_dies_each_step),
    };
    return cmocka_run_group_tests(tests, hs_setup, sts_conf_teardown);
}
