/*
 * What only the TCP transport's own tests share, on top of the transport
 * fixtures (tests/support/sts_conf.h, sts_xport.h): the group fixture over
 * loopback (STRATA_SOCKET_IFNAME==lo, IPv4; the group teardown checks that no
 * descriptor outlived the last fini), the socket-count and striping knobs,
 * and a raw socket for playing a bad peer against a listener.
 */
#ifndef STRATA_TESTS_TCP_FIXTURE_H
#define STRATA_TESTS_TCP_FIXTURE_H

#include <arpa/inet.h>
#include <errno.h>
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
#include "transport/tcp/tcp.h"
#include "transport/tcp/tcp_internal.h"
#include "transport/tcp/tcp_wire.h"
#include "util/param.h"

static const stt_ops_t *ops = &stt_tcp_ops;
static sts_conf_ctx_t tcp_ctx = {.ops = &stt_tcp_ops};

/* Sockets per connection and the striping threshold, over loopback IPv4. */
static inline void tcp_env(const char *nsocks, const char *stripe_min)
{
    setenv("STRATA_SOCKET_IFNAME", "=lo", 1);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    setenv("STRATA_SOCKET_NSOCKS", nsocks, 1);
    setenv("STRATA_SOCKET_STRIPE_MIN", stripe_min, 1);
    stu_param_reload();
}

static inline int tcp_group_setup(void **state)
{
    tcp_env("1", "256K");
    unsetenv("STRATA_CONNECT_TIMEOUT");
    stu_param_reload();
    *state = &tcp_ctx;
    return sts_conf_setup(state) == 0 && tcp_ctx.ready ? 0 : -1;
}

/* A raw socket to the listener of handle, for playing a bad peer. */
static inline int raw_connect(const uint8_t *handle)
{
    const stt_tcp_handle_t *h = (const stt_tcp_handle_t *)handle;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, &h->addr.sa, sizeof(h->addr.in4)), 0);
    return fd;
}

/*
 * A raw listener on loopback for playing a bad listener against a connector: a
 * non-blocking listening socket, and in handle a tcp handle naming it with listener id and
 * secret. Returns the socket.
 */
static inline int raw_listener(uint8_t *handle, uint64_t id, const uint8_t *secret)
{
    stt_netif_addr_t addr = {0};
    socklen_t len = sizeof(addr.in4);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    assert_true(lfd >= 0);
    addr.in4.sin_family = AF_INET;
    addr.in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(lfd, &addr.sa, sizeof(addr.in4)), 0);
    assert_int_equal(listen(lfd, 8), 0);
    assert_int_equal(getsockname(lfd, &addr.sa, &len), 0);
    stt_handle_store(handle, STT_TCP_HANDLE_MAGIC, STT_TCP_PROTO_VERSION, id, secret, &addr);
    return lfd;
}

static inline void raw_send(int fd, const void *buf, size_t len)
{
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/*
 * Drives accept until the raw socket is closed by the listener (or the deadline). Returns
 * the status of the ack the listener sent before closing (STT_TCP_ACK_REJECTED, _LATE), -1
 * when it closed without a whole one.
 */
static inline int accept_until_closed(stt_listen_t *l, int fd)
{
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    stt_comm_t *c = NULL;
    uint8_t ack[STT_TCP_ACK_BYTES];
    size_t have = 0;
    char b;

    for (;;) {
        assert_ok(stt_accept(l, &c));
        if (c != NULL) {
            /* A connection whose client gave up after its hello went out (the timeout
             * test) may still complete here; it is dead, so just close it. */
            stt_close_recv(c);
            c = NULL;
        }
        ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            break;
        if (r == 1 && have < sizeof(ack))
            ack[have++] = (uint8_t)b;
        assert_false(stu_deadline_passed(deadline));
        if (r < 0)
            poll(NULL, 0, 1);
    }
    return have == sizeof(ack) ? ack[7] : -1;
}

/* The listener l (of handle) still serves: a real connection, and data over it. */
static inline void listener_still_serves(stt_listen_t *l, uint8_t *handle)
{
    sts_pair_t p = {0};
    assert_ok(sts_connect_accept(ops, 0, l, handle, STS_CONNECT_TIMEOUT_S, &p.send, &p.recv));
    sts_xfer_ok(&p, 1000, 1000, 0, 4, STS_XFER_UNREGISTERED);
    p.listen = NULL;                   /* the caller's */
    sts_pair_close(&p);
}

#endif /* STRATA_TESTS_TCP_FIXTURE_H */
