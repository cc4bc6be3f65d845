/*
 * The ucx side channel's fault matrix, one step at a time (transport/ucx/ucx_wire.h): the
 * peer is a raw socket that plays the hello exchange up to a step and then dies (a killed
 * process's sockets are closed by the kernel, its listening one too). Our listener must
 * close its side of the dead connection without an error and go on accepting; our
 * connector must fail its connect. Each step prints a `matrix` line with the seconds from
 * the death to our side's end, printed, not asserted. The steps after a whole hello and
 * worker address (the UCP endpoint's) need a real UCP worker on the other side:
 * test_plugin_faults' handshake cases play them with a peer process.
 *
 *   connector dies (our listener):   after the TCP connect | mid-hello | after the hello,
 *                                    before its worker address | mid-address
 *   listener dies (our connector):   before accepting | after reading our hello and
 *                                    address | mid-reply
 */
#include <arpa/inet.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sts_cmocka.h"
#include "sts_conf.h"
#include "sts_util.h"
#include "sts_xport.h"
#include "transport/ucx/ucx.h"
#include "transport/ucx/ucx_wire.h"
#include "util/param.h"
#include "util/time.h"

#define HS_ADDR_BYTES 200          /* the worker address the raw connector announces */

static const stt_ops_t *ops = &stt_ucx_ops;
static sts_conf_ctx_t ucx_ctx = {.ops = &stt_ucx_ops};

static int hs_connect_raw(const stt_netif_addr_t *addr)
{
    int fd = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, &addr->sa, stt_netif_addr_len(addr)), 0);
    return fd;
}

/*
 * The connector plays up to `step` and dies: 0 TCP connect only, 1 half of its hello,
 * 2 the whole hello (with the handle's id and secret) but no address, 3 half the address.
 */
static void hs_connector_dies(stt_listen_t *l, const uint8_t *handle, int step, const char *what)
{
    uint8_t bytes[STT_UCX_HELLO_BYTES + HS_ADDR_BYTES] = {0};
    stt_ucx_handle_t h;
    stt_comm_t *recv = NULL;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    assert_ok(stt_ucx_handle_decode(handle, &h));
    stt_ucx_hello_t hello = {.kind = STT_UCX_HELLO_CONNECT, .listener_id = h.listener_id,
                             .conn_id = 0x100u + (uint32_t)step, .addr_len = HS_ADDR_BYTES};
    memcpy(hello.secret, h.secret, sizeof(hello.secret));
    stt_ucx_hello_encode(&hello, bytes);
    size_t len = step == 0 ? 0 : step == 1 ? STT_UCX_HELLO_BYTES / 2
               : step == 2 ? STT_UCX_HELLO_BYTES : STT_UCX_HELLO_BYTES + HS_ADDR_BYTES / 2;
    int sockets = sts_socket_count(-1);
    int fd = hs_connect_raw(&h.addr);
    if (len > 0)
        assert_int_equal(send(fd, bytes, len, MSG_NOSIGNAL), (ssize_t)len);
    for (int i = 0; i < 20; i++) {           /* the listener takes what was sent */
        assert_ok(stt_accept(l, &recv));
        assert_null(recv);
        poll(NULL, 0, 1);
    }
    close(fd);
    uint64_t died = stu_time_ns();
    while (sts_socket_count(-1) > sockets) {
        assert_ok(stt_accept(l, &recv));
        assert_null(recv);
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
    }
    sts_matrix_row("ucx", what, "accept: no comm, its socket closed", died);
}

/* A raw listener on loopback and a ucx handle naming it. */
static int hs_raw_listener(uint8_t *handle, stt_ucx_handle_t *h)
{
    socklen_t len = sizeof(h->addr.in4);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    assert_true(lfd >= 0);
    memset(h, 0, sizeof(*h));
    h->addr.in4.sin_family = AF_INET;
    h->addr.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, &h->addr.sa, sizeof(h->addr.in4)), 0);
    assert_int_equal(listen(lfd, 8), 0);
    assert_int_equal(getsockname(lfd, &h->addr.sa, &len), 0);
    h->listener_id = 0x5eed;
    h->secret[0] = 7;
    memset(handle, 0, STT_HANDLE_SIZE);
    assert_ok(stt_ucx_handle_encode(h, handle));
    return lfd;
}

/*
 * The listener plays up to `step` and dies: 0 it never accepts, 1 it accepts and reads our
 * hello and worker address, 2 it also sends half of its reply hello.
 */
static void hs_listener_dies(int step, const char *what)
{
    uint8_t handle[STT_HANDLE_SIZE];
    stt_ucx_handle_t h;
    int lfd = hs_raw_listener(handle, &h), fd = -1;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    stt_comm_t *comm = NULL;
    strata_status_t status = STRATA_OK;
    uint8_t in[STT_UCX_HELLO_BYTES];
    size_t have = 0;
    stt_ucx_hello_t hello;

    /* our connector's hello, read by the raw listener as far as step says */
    for (int pass = 0; pass < 50 || (step >= 1 && have < sizeof(in)); pass++) {
        assert_ok(stt_connect(ops, 0, handle, NULL, &comm));
        assert_null(comm);
        if (step >= 1 && fd < 0)
            fd = accept(lfd, NULL, NULL);
        if (fd >= 0 && have < sizeof(in)) {
            ssize_t r = recv(fd, in + have, sizeof(in) - have, MSG_DONTWAIT);
            have += r > 0 ? (size_t)r : 0;
        }
        poll(NULL, 0, 2);
        assert_false(stu_deadline_passed(deadline));
    }
    if (step >= 1) {
        assert_ok(stt_ucx_hello_decode(in, &hello));
        uint8_t *addr = malloc(hello.addr_len);
        size_t got = 0;
        assert_non_null(addr);
        while (got < hello.addr_len) {       /* the connector wrote it with the hello */
            ssize_t r = recv(fd, addr + got, hello.addr_len - got, MSG_DONTWAIT);
            got += r > 0 ? (size_t)r : 0;
            assert_ok(stt_connect(ops, 0, handle, NULL, &comm));
            assert_false(stu_deadline_passed(deadline));
        }
        free(addr);
    }
    if (step >= 2) {
        stt_ucx_hello_t reply = {.kind = STT_UCX_HELLO_ACCEPT, .listener_id = h.listener_id,
                                 .conn_id = hello.conn_id, .addr_len = HS_ADDR_BYTES};
        memcpy(reply.secret, h.secret, sizeof(reply.secret));
        uint8_t out[STT_UCX_HELLO_BYTES];
        stt_ucx_hello_encode(&reply, out);
        assert_int_equal(send(fd, out, sizeof(out) / 2, MSG_NOSIGNAL), (ssize_t)sizeof(out) / 2);
    }
    if (fd >= 0)
        close(fd);
    close(lfd);
    uint64_t died = stu_time_ns();
    status = sts_connect_until_error(ops, handle, deadline, &comm);
    assert_null(comm);
    assert_false(status == STRATA_OK);
    sts_matrix_row("ucx", what, strata_status_str(status), died);
}

static void test_connector_dies_each_step(void **state)
{
    static const char *const what[] = {
        "connector dies after the TCP connect", "connector dies mid-hello",
        "connector dies after its hello, before its address", "connector dies mid-address"};
    uint8_t handle[STT_HANDLE_SIZE];
    stt_listen_t *l = NULL;

    assert_ok(stt_listen(ops, 0, handle, &l));
    for (int step = 0; step < 4; step++)
        hs_connector_dies(l, handle, step, what[step]);
    /* the listener goes on: a real connection, and data over it */
    sts_pair_t p = {.listen = l};
    assert_ok(sts_connect_accept(ops, 0, l, handle, STS_CONNECT_TIMEOUT_S, &p.send, &p.recv));
    sts_xfer_ok(&p, 1000, 1000, 0, 4, STS_XFER_UNREGISTERED);
    sts_pair_close(&p);
}

static void test_listener_dies_each_step(void **state)
{
    static const char *const what[] = {"listener dies before accepting",
                                       "listener dies after reading our hello and address",
                                       "listener dies mid-reply"};
    for (int step = 0; step < 3; step++)
        hs_listener_dies(step, what[step]);
}

static int hs_setup(void **state)
{
    setenv("STRATA_SOCKET_IFNAME", "=lo", 1);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    stu_param_reload();
    *state = &ucx_ctx;
    return sts_conf_setup(state) == 0 && ucx_ctx.ready ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connector_dies_each_step),
        cmocka_unit_test(test_listener_dies_each_step),
    };
    return cmocka_run_group_tests(tests, hs_setup, sts_conf_teardown);
}
