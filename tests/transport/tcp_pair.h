/*
 * Shared by the TCP transport tests: a loopback pair of comms driven from one
 * thread, payload patterns, and a raw socket for playing a bad peer. Waits are
 * bounded by a generous deadline (a hang fails the test); nothing asserts on
 * timing. The group setup/teardown check that no file descriptor leaks.
 */
#ifndef STRATA_TESTS_TCP_PAIR_H
#define STRATA_TESTS_TCP_PAIR_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "transport/tcp/tcp.h"
#include "transport/tcp/tcp_wire.h"
#include "transport/tcp/tcp_internal.h"
#include "util/param.h"
#include "util/time.h"

#define DEADLINE_NS (60ull * 1000000000ull)

static const stt_ops_t *ops = &stt_tcp_ops;

typedef struct pair {
    stt_listen_t *listen;
    stt_comm_t *send;
    stt_comm_t *recv;
    uint8_t handle[STT_HANDLE_SIZE];
} pair_t;

static inline void env_set(const char *nsocks, const char *stripe_min)
{
    setenv("STRATA_SOCKET_IFNAME", "=lo", 1);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    setenv("STRATA_SOCKET_NSOCKS", nsocks, 1);
    setenv("STRATA_SOCKET_STRIPE_MIN", stripe_min, 1);
    stu_param_reload();
}

static int fds_at_start;

static inline int fd_count(void)
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

static inline int tcp_pair_setup(void **state)
{
    fds_at_start = fd_count();
    env_set("1", "256K");
    unsetenv("STRATA_CONNECT_TIMEOUT");
    stu_param_reload();
    return stt_init(ops) == STRATA_OK ? 0 : -1;
}

/* Every comm and listen comm was closed: no socket may be left open. */
static inline int tcp_pair_teardown(void **state)
{
    stt_fini(ops);
    int now = fd_count();
    if (now != fds_at_start) {
        fprintf(stderr, "file descriptors leaked: %d at start, %d at end\n", fds_at_start, now);
        return -1;
    }
    return 0;
}

static inline bool past(uint64_t start)
{
    return stu_time_ns() - start > DEADLINE_NS;
}

/* Connects through an existing listen comm. */
static inline void pair_connect_via(stt_listen_t *listen, const uint8_t *handle, pair_t *p)
{
    uint64_t start = stu_time_ns();

    memcpy(p->handle, handle, STT_HANDLE_SIZE);
    p->send = NULL;
    p->recv = NULL;
    while (p->send == NULL || p->recv == NULL) {
        if (p->send == NULL)
            assert_int_equal(stt_connect(ops, 0, p->handle, NULL, &p->send), STRATA_OK);
        if (p->recv == NULL)
            assert_int_equal(stt_accept(listen, &p->recv), STRATA_OK);
        assert_false(past(start));
    }
}

static inline void pair_open(pair_t *p)
{
    uint8_t handle[STT_HANDLE_SIZE];

    assert_int_equal(stt_listen(ops, 0, handle, &p->listen), STRATA_OK);
    pair_connect_via(p->listen, handle, p);
}

static inline void pair_close(pair_t *p)
{
    if (p->send)
        stt_close_send(p->send);
    if (p->recv)
        stt_close_recv(p->recv);
    if (p->listen)
        stt_close_listen(p->listen);
    memset(p, 0, sizeof(*p));
}

/* Tests one request once; returns its status, sets *done. */
static inline strata_status_t poke(stt_req_t **req, size_t *sizes)
{
    int done = 0;
    strata_status_t status;

    if (*req == NULL)
        return STRATA_OK;
    status = stt_test(*req, &done, sizes);
    if (status != STRATA_OK || done)
        *req = NULL;
    return status;
}

/* Drives a send and a receive to the end; returns the receive's status. */
static inline strata_status_t pair_wait(stt_req_t *sreq, stt_req_t *rreq, size_t *rsizes,
                                 strata_status_t *send_status)
{
    strata_status_t ss = STRATA_OK, rs = STRATA_OK;
    size_t ssize[1];
    uint64_t start = stu_time_ns();

    while (sreq != NULL || rreq != NULL) {
        strata_status_t s = poke(&sreq, ssize);
        if (s != STRATA_OK)
            ss = s;
        s = poke(&rreq, rsizes);
        if (s != STRATA_OK)
            rs = s;
        assert_false(past(start));
    }
    if (send_status)
        *send_status = ss;
    return rs;
}

static inline void fill(uint8_t *buf, size_t size, unsigned seed)
{
    for (size_t i = 0; i < size; i++)
        buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 12));
}

static inline bool check(const uint8_t *buf, size_t size, unsigned seed)
{
    for (size_t i = 0; i < size; i++)
        if (buf[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 12)))
            return false;
    return true;
}

/* One message of `size` into a buffer of `cap`, verified. */
static inline void xfer_one(pair_t *p, size_t size, size_t cap, int tag, unsigned seed)
{
    uint8_t *src = malloc(size ? size : 1), *dst = malloc(cap ? cap : 1);
    stt_req_t *sreq = NULL, *rreq = NULL;
    void *data[1] = {dst};
    size_t caps[1] = {cap}, got[1] = {~(size_t)0};
    int tags[1] = {tag};
    strata_status_t ss;

    assert_non_null(src);
    assert_non_null(dst);
    fill(src, size, seed);
    assert_int_equal(stt_irecv(p->recv, 1, data, caps, tags, NULL, &rreq), STRATA_OK);
    assert_non_null(rreq);
    assert_int_equal(stt_isend(p->send, src, size, tag, NULL, &sreq), STRATA_OK);
    assert_non_null(sreq);
    assert_int_equal(pair_wait(sreq, rreq, got, &ss), STRATA_OK);
    assert_int_equal(ss, STRATA_OK);
    assert_int_equal(got[0], size);
    assert_true(check(dst, size, seed));
    free(src);
    free(dst);
}

/* A raw socket to the listener, for playing a bad peer. */
static inline int raw_connect(const uint8_t *handle)
{
    const stt_tcp_handle_t *h = (const stt_tcp_handle_t *)handle;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, &h->addr.sa, sizeof(h->addr.in4)), 0);
    return fd;
}

static inline void raw_send(int fd, const void *buf, size_t len)
{
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Drives accept until the raw socket is closed by the listener (or the deadline). */
static inline void accept_until_closed(stt_listen_t *l, int fd)
{
    uint64_t start = stu_time_ns();
    stt_comm_t *c = NULL;
    char b;

    for (;;) {
        assert_int_equal(stt_accept(l, &c), STRATA_OK);
        if (c != NULL) {
            /* A connection whose client gave up after its hello went out (the timeout
             * test) may still complete here; it is dead, so just close it. */
            stt_close_recv(c);
            c = NULL;
        }
        ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            break;
        assert_false(past(start));
        poll(NULL, 0, 1);
    }
}


#endif /* STRATA_TESTS_TCP_PAIR_H */
