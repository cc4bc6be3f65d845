/*
 * The TCP transport in one process over loopback: handshake, small and striped
 * messages, grouped receives, truncation, bad peers and dead peers. Both ends
 * run in this thread, so every wait drives both sides. Waits are bounded by a
 * generous deadline (a hang fails the test); nothing asserts on timing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/transport/tcp/tcp.h"
#include "plugin/transport/tcp/tcp_frame.h"
#include "plugin/transport/tcp/tcp_internal.h"
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

static void env_set(const char *nsocks, const char *stripe_min)
{
    setenv("STRATA_SOCKET_IFNAME", "=lo", 1);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    setenv("STRATA_SOCKET_NSOCKS", nsocks, 1);
    setenv("STRATA_SOCKET_STRIPE_MIN", stripe_min, 1);
    stu_param_reload();
}

static int setup(void **state)
{
    env_set("1", "256K");
    unsetenv("STRATA_CONNECT_TIMEOUT");
    stu_param_reload();
    return ops->init() == STRATA_OK ? 0 : -1;
}

static int teardown(void **state)
{
    ops->fini();
    return 0;
}

static bool past(uint64_t start)
{
    return stu_time_ns() - start > DEADLINE_NS;
}

/* Connects through an existing listen comm. */
static void pair_connect_via(stt_listen_t *listen, const uint8_t *handle, pair_t *p)
{
    uint64_t start = stu_time_ns();

    memcpy(p->handle, handle, STT_HANDLE_SIZE);
    p->send = NULL;
    p->recv = NULL;
    while (p->send == NULL || p->recv == NULL) {
        if (p->send == NULL)
            assert_int_equal(ops->connect(0, p->handle, NULL, &p->send), STRATA_OK);
        if (p->recv == NULL)
            assert_int_equal(ops->accept(listen, &p->recv), STRATA_OK);
        assert_false(past(start));
    }
}

static void pair_open(pair_t *p)
{
    uint8_t handle[STT_HANDLE_SIZE];

    assert_int_equal(ops->listen(0, handle, &p->listen), STRATA_OK);
    pair_connect_via(p->listen, handle, p);
}

static void pair_close(pair_t *p)
{
    if (p->send)
        ops->close_send(p->send);
    if (p->recv)
        ops->close_recv(p->recv);
    if (p->listen)
        ops->close_listen(p->listen);
    memset(p, 0, sizeof(*p));
}

/* Tests one request once; returns its status, sets *done. */
static strata_status_t poke(stt_req_t **req, size_t *sizes)
{
    int done = 0;
    strata_status_t status;

    if (*req == NULL)
        return STRATA_OK;
    status = ops->test(*req, &done, sizes);
    if (status != STRATA_OK || done)
        *req = NULL;
    return status;
}

/* Drives a send and a receive to the end; returns the receive's status. */
static strata_status_t pair_wait(stt_req_t *sreq, stt_req_t *rreq, size_t *rsizes,
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

/* One message of `size` into a buffer of `cap`, verified. */
static void xfer_one(pair_t *p, size_t size, size_t cap, int tag, unsigned seed)
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
    assert_int_equal(ops->irecv(p->recv, 1, data, caps, tags, NULL, &rreq), STRATA_OK);
    assert_non_null(rreq);
    assert_int_equal(ops->isend(p->send, src, size, tag, NULL, &sreq), STRATA_OK);
    assert_non_null(sreq);
    assert_int_equal(pair_wait(sreq, rreq, got, &ss), STRATA_OK);
    assert_int_equal(ss, STRATA_OK);
    assert_int_equal(got[0], size);
    assert_true(check(dst, size, seed));
    free(src);
    free(dst);
}

static void test_devices_and_props(void **state)
{
    int ndev = 0;
    stt_props_t props;

    assert_int_equal(ops->probe(), STRATA_OK);
    assert_int_equal(ops->devices(&ndev), STRATA_OK);
    assert_int_equal(ndev, 1);
    assert_int_equal(ops->get_props(0, &props), STRATA_OK);
    assert_string_equal(props.name, "lo");
    assert_string_equal(props.pci_path, "");
    assert_int_equal(props.ptr_support, STT_PTR_HOST);
    assert_int_equal(props.reg_is_global, 0);
    assert_int_equal(props.max_recvs, STT_MAX_RECVS);
    assert_int_equal(props.max_comms, 65536);
    assert_true(props.speed_mbps > 0);
    assert_true(props.max_p2p_bytes == (1ull << 40));
    assert_true(props.max_coll_bytes == (512ull << 20));
    assert_int_equal(ops->get_props(1, &props), STRATA_ERR_NOT_FOUND);
    assert_int_equal(ops->get_props(-1, &props), STRATA_ERR_NOT_FOUND);

    /* Reference counting: a second init is cheap, the table survives one fini. */
    assert_int_equal(ops->init(), STRATA_OK);
    ops->fini();
    assert_int_equal(ops->devices(&ndev), STRATA_OK);
    assert_int_equal(ndev, 1);

    /* A bad family is refused at init; the current table is untouched. */
    setenv("STRATA_SOCKET_FAMILY", "AF_UNIX", 1);
    stu_param_reload();
    ops->fini();
    assert_int_equal(ops->init(), STRATA_ERR_INVALID);
    assert_int_equal(ops->devices(&ndev), STRATA_ERR_INVALID);   /* not initialised */
    env_set("1", "256K");
    assert_int_equal(ops->init(), STRATA_OK);                    /* init again after fini */
    assert_int_equal(ops->devices(&ndev), STRATA_OK);
    assert_int_equal(ndev, 1);
}

static void test_small_messages(void **state)
{
    static const size_t sizes[] = {0, 1, 2, 23, 24, 25, 1000, 4096, 65537, 200000};
    pair_t p = {0};

    pair_open(&p);
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        xfer_one(&p, sizes[i], sizes[i], (int)i, i);
        xfer_one(&p, sizes[i], sizes[i] + 100, -1, i + 50);   /* buffer larger than send */
    }
    pair_close(&p);
}

static void test_striped_messages(void **state)
{
    static const char *nsocks[] = {"2", "3", "4", "8"};
    static const size_t sizes[] = {0, 1, 4096, 10000, 1 << 20, (4 << 20) + 13};

    for (unsigned k = 0; k < sizeof(nsocks) / sizeof(nsocks[0]); k++) {
        pair_t p = {0};
        env_set(nsocks[k], "0");     /* stripe everything, even 0-byte messages */
        pair_open(&p);
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            xfer_one(&p, sizes[i], sizes[i] + 4096 * (i & 1), 7, i + k);
        pair_close(&p);
    }
    env_set("1", "256K");
}

/* Many messages in flight at once, mixing striped and whole ones, posted before receives. */
static void test_many_in_flight(void **state)
{
    enum { N = STT_MAX_SEND_REQUESTS };
    pair_t p = {0};
    static uint8_t src[N][1024], dst[N][1024];
    stt_req_t *sreq[N], *rreq[N], *extra = NULL;
    uint64_t start;

    env_set("3", "512");
    pair_open(&p);
    for (int i = 0; i < N; i++) {
        fill(src[i], sizeof(src[i]), (unsigned)i);
        memset(dst[i], 0, sizeof(dst[i]));
        size_t len = (size_t)(i * 4) % 1024;
        assert_int_equal(ops->isend(p.send, src[i], len, 1, NULL, &sreq[i]), STRATA_OK);
        assert_non_null(sreq[i]);
    }
    /* The ring is full: the next send must say "again" with OK and NULL. */
    assert_int_equal(ops->isend(p.send, src[0], 1, 1, NULL, &extra), STRATA_OK);
    assert_null(extra);
    for (int i = 0; i < N; i++) {
        void *data[1] = {dst[i]};
        size_t cap[1] = {sizeof(dst[i])};
        int tag[1] = {1};
        assert_int_equal(ops->irecv(p.recv, 1, data, cap, tag, NULL, &rreq[i]), STRATA_OK);
        assert_non_null(rreq[i]);
    }
    /* Release out of order: receives from the newest, sends from the oldest. */
    start = stu_time_ns();
    for (int left = 2 * N; left > 0;) {
        for (int i = 0; i < N; i++) {
            size_t got[1];
            if (sreq[i] != NULL) {
                assert_int_equal(poke(&sreq[i], got), STRATA_OK);
                left -= sreq[i] == NULL;
            }
            int r = N - 1 - i;
            if (rreq[r] != NULL) {
                assert_int_equal(poke(&rreq[r], got), STRATA_OK);
                if (rreq[r] == NULL) {
                    left--;
                    assert_int_equal(got[0], (size_t)(r * 4) % 1024);
                    assert_true(check(dst[r], got[0], (unsigned)r));
                }
            }
        }
        assert_false(past(start));
    }
    pair_close(&p);
    env_set("1", "256K");
}

static void test_grouped_receive(void **state)
{
    pair_t p = {0};
    uint8_t src[3][5000], dst[3][6000];
    stt_req_t *sreq[3], *rreq = NULL;
    void *data[3] = {dst[0], dst[1], dst[2]};
    size_t caps[3] = {6000, 6000, 6000}, got[3] = {0};
    int tags[3] = {5, 6, 7};
    static const int send_tags[3] = {7, 5, 6};
    static const size_t send_sizes[3] = {5000, 0, 4321};

    env_set("2", "4096");
    pair_open(&p);
    assert_int_equal(ops->irecv(p.recv, 3, data, caps, tags, NULL, &rreq), STRATA_OK);
    for (int i = 0; i < 3; i++) {
        fill(src[i], send_sizes[i], (unsigned)i + 9);
        assert_int_equal(ops->isend(p.send, src[i], send_sizes[i], send_tags[i], NULL, &sreq[i]),
                         STRATA_OK);
    }
    uint64_t start = stu_time_ns();
    while (rreq != NULL || sreq[0] || sreq[1] || sreq[2]) {
        size_t s[1];
        for (int i = 0; i < 3; i++)
            assert_int_equal(poke(&sreq[i], s), STRATA_OK);
        assert_int_equal(poke(&rreq, got), STRATA_OK);
        assert_false(past(start));
    }
    /* tag 7 -> buffer 2, tag 5 -> buffer 0, tag 6 -> buffer 1 */
    assert_int_equal(got[2], 5000);
    assert_int_equal(got[0], 0);
    assert_int_equal(got[1], 4321);
    assert_true(check(dst[2], 5000, 9));
    assert_true(check(dst[1], 4321, 11));
    pair_close(&p);
    env_set("1", "256K");
}

static void test_truncation_keeps_connection(void **state)
{
    pair_t p = {0};
    static const char *nsocks[] = {"1", "4"};

    for (int k = 0; k < 2; k++) {
        env_set(nsocks[k], "64K");
        pair_open(&p);
        size_t big = (3 << 20) + 5;
        uint8_t *src = malloc(big), dst[100];
        stt_req_t *sreq = NULL, *rreq = NULL;
        void *data[1] = {dst};
        size_t cap[1] = {sizeof(dst)}, got[1];
        int tag[1] = {3};
        strata_status_t ss;

        assert_non_null(src);
        fill(src, big, 1);
        assert_int_equal(ops->isend(p.send, src, big, 3, NULL, &sreq), STRATA_OK);
        assert_int_equal(ops->irecv(p.recv, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
        assert_int_equal(pair_wait(sreq, rreq, got, &ss), STRATA_ERR_TRUNCATED);
        assert_int_equal(ss, STRATA_OK);
        /* The stream is still in sync: the next messages arrive intact. */
        xfer_one(&p, 100, 100, 3, 2);
        xfer_one(&p, 1 << 20, 1 << 20, 4, 3);
        free(src);
        pair_close(&p);
    }
    env_set("1", "256K");
}

static void test_tag_mismatch_fails_comm(void **state)
{
    pair_t p = {0};
    uint8_t src[10] = {0}, dst[10];
    stt_req_t *sreq = NULL, *rreq = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {10}, got[1];
    int tag[1] = {1};

    pair_open(&p);
    assert_int_equal(ops->isend(p.send, src, 10, 2, NULL, &sreq), STRATA_OK);
    assert_int_equal(ops->irecv(p.recv, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
    assert_int_equal(pair_wait(sreq, rreq, got, NULL), STRATA_ERR_REMOTE);
    /* A failed comm keeps failing. */
    assert_int_equal(ops->irecv(p.recv, 1, data, cap, tag, NULL, &rreq), STRATA_ERR_REMOTE);
    pair_close(&p);
}

/* The sender dies in the middle of a large message: the receive fails, it does not hang. */
static void test_peer_closed_mid_transfer(void **state)
{
    static const char *nsocks[] = {"1", "4"};

    for (int k = 0; k < 2; k++) {
        pair_t p = {0};
        size_t big = 32 << 20;
        uint8_t *src = malloc(big), *dst = malloc(big);
        stt_req_t *sreq = NULL, *rreq = NULL;
        void *data[1] = {dst};
        size_t cap[1] = {big}, got[1];
        int tag[1] = {0}, done = 0;

        env_set(nsocks[k], "64K");
        /* Small socket buffers, so the kernel cannot swallow the whole message. */
        setenv("STRATA_SOCKET_BUFSIZE", "64K", 1);
        stu_param_reload();
        assert_non_null(src);
        assert_non_null(dst);
        pair_open(&p);
        assert_int_equal(ops->irecv(p.recv, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
        assert_int_equal(ops->isend(p.send, src, big, 0, NULL, &sreq), STRATA_OK);
        /* Move some bytes, but not all: the socket buffers hold far less than 32 MiB. */
        for (int i = 0; i < 3; i++) {
            assert_int_equal(ops->test(sreq, &done, NULL), STRATA_OK);
            assert_int_equal(done, 0);
            assert_int_equal(ops->test(rreq, &done, got), STRATA_OK);
            assert_int_equal(done, 0);
        }
        ops->close_send(p.send);          /* with the send in flight */
        p.send = NULL;
        assert_int_equal(pair_wait(NULL, rreq, got, NULL), STRATA_ERR_REMOTE);
        pair_close(&p);
        free(src);
        free(dst);
    }
    unsetenv("STRATA_SOCKET_BUFSIZE");
    env_set("1", "256K");
}

/* The receiver goes away: a large pending send fails instead of hanging. */
static void test_receiver_closed(void **state)
{
    pair_t p = {0};
    size_t big = 64 << 20;
    uint8_t *src = calloc(1, big);
    stt_req_t *sreq = NULL;

    assert_non_null(src);
    pair_open(&p);
    ops->close_recv(p.recv);
    p.recv = NULL;
    assert_int_equal(ops->isend(p.send, src, big, 0, NULL, &sreq), STRATA_OK);
    strata_status_t ss;
    pair_wait(sreq, NULL, NULL, &ss);
    assert_int_equal(ss, STRATA_ERR_REMOTE);
    pair_close(&p);
    free(src);
}

/* A raw socket to the listener, for playing a bad peer. */
static int raw_connect(const uint8_t *handle)
{
    const stt_tcp_handle_t *h = (const stt_tcp_handle_t *)handle;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, &h->addr.sa, sizeof(h->addr.in4)), 0);
    return fd;
}

static void raw_send(int fd, const void *buf, size_t len)
{
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Drives accept until the raw socket is closed by the listener (or the deadline). */
static void accept_until_closed(stt_listen_t *l, int fd)
{
    uint64_t start = stu_time_ns();
    stt_comm_t *c = NULL;
    char b;

    for (;;) {
        assert_int_equal(ops->accept(l, &c), STRATA_OK);
        if (c != NULL) {
            /* A connection whose client gave up after its hello went out (the timeout
             * test) may still complete here; it is dead, so just close it. */
            ops->close_recv(c);
            c = NULL;
        }
        ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno == ECONNRESET))
            break;
        assert_false(past(start));
        poll(NULL, 0, 1);
    }
}

static void test_bad_hellos_keep_listener(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE], buf[STT_TCP_HELLO_BYTES];
    stt_listen_t *l = NULL;
    const stt_tcp_handle_t *h = (const stt_tcp_handle_t *)handle;
    stt_tcp_hello_t good = {.version = STT_TCP_PROTO_VERSION, .index = 0, .nsocks = 2,
                            .conn_id = 42};

    assert_int_equal(ops->listen(0, handle, &l), STRATA_OK);
    good.listener_id = h->listener_id;

    /* garbage */
    int fd = raw_connect(handle);
    memset(buf, 0x5a, sizeof(buf));
    raw_send(fd, buf, sizeof(buf));
    accept_until_closed(l, fd);
    close(fd);

    /* wrong listener id */
    stt_tcp_hello_t bad = good;
    bad.listener_id ^= 1;
    stt_tcp_hello_encode(&bad, buf);
    fd = raw_connect(handle);
    raw_send(fd, buf, sizeof(buf));
    accept_until_closed(l, fd);
    close(fd);

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
    for (int i = 0; i < 2; i++) {
        pair_t p = {0};
        pair_connect_via(l, handle, &p);
        xfer_one(&p, 1000, 1000, 0, 4);
        p.listen = NULL;
        pair_close(&p);
    }
    ops->close_listen(l);
}

static void test_handshake_timeouts(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE], copy[STT_HANDLE_SIZE], buf[STT_TCP_HELLO_BYTES];
    stt_listen_t *l = NULL;
    stt_comm_t *c = NULL;
    strata_status_t status;
    uint64_t start = stu_time_ns();

    setenv("STRATA_CONNECT_TIMEOUT", "300", 1);
    stu_param_reload();
    assert_int_equal(ops->listen(0, handle, &l), STRATA_OK);

    /* Nobody calls accept: connect gives up with a timeout and resets the handle. */
    memcpy(copy, handle, sizeof(copy));
    do {
        status = ops->connect(0, copy, NULL, &c);
        assert_null(c);
        assert_false(past(start));
        poll(NULL, 0, 5);
    } while (status == STRATA_OK);
    assert_int_equal(status, STRATA_ERR_TIMEOUT);
    assert_null(((stt_tcp_handle_t *)copy)->connect);

    /* A connection that sends only one of its two sockets is dropped by accept. */
    const stt_tcp_handle_t *h = (const stt_tcp_handle_t *)handle;
    stt_tcp_hello_t half = {.version = STT_TCP_PROTO_VERSION, .index = 1, .nsocks = 2,
                            .listener_id = h->listener_id, .conn_id = 77};
    stt_tcp_hello_encode(&half, buf);
    int fd = raw_connect(handle);
    raw_send(fd, buf, sizeof(buf));
    accept_until_closed(l, fd);      /* the earlier timed-out sockets get dropped too */
    close(fd);

    /* A socket that never completes its hello is dropped as well. */
    fd = raw_connect(handle);
    raw_send(fd, buf, 5);
    accept_until_closed(l, fd);
    close(fd);

    ops->close_listen(l);
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
    uint64_t start = stu_time_ns();

    assert_int_equal(ops->listen(0, handle, &l), STRATA_OK);
    stt_tcp_hello_t hello = {.version = STT_TCP_PROTO_VERSION, .index = 0, .nsocks = 1,
                             .listener_id = h->listener_id, .conn_id = 5};
    stt_tcp_hello_encode(&hello, buf);
    int fd = raw_connect(handle);
    raw_send(fd, buf, STT_TCP_HELLO_BYTES);
    while (rc == NULL) {
        assert_int_equal(ops->accept(l, &rc), STRATA_OK);
        assert_false(past(start));
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
    assert_int_equal(ops->irecv(rc, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
    assert_int_equal(pair_wait(NULL, rreq, got, NULL), STRATA_ERR_REMOTE);
    ops->close_recv(rc);

    /* Again with a header whose magic is wrong. */
    rc = NULL;
    hello.conn_id = 6;
    stt_tcp_hello_encode(&hello, buf);
    fd = raw_connect(handle);
    raw_send(fd, buf, STT_TCP_HELLO_BYTES);
    while (rc == NULL) {
        assert_int_equal(ops->accept(l, &rc), STRATA_OK);
        assert_false(past(start));
    }
    memset(buf, 0xee, sizeof(buf));
    raw_send(fd, buf, sizeof(buf));
    assert_int_equal(ops->irecv(rc, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
    assert_int_equal(pair_wait(NULL, rreq, got, NULL), STRATA_ERR_REMOTE);
    close(fd);
    ops->close_recv(rc);
    ops->close_listen(l);
}

static void test_registration_and_flush(void **state)
{
    pair_t p = {0};
    uint8_t buf[4096];
    void *mh = NULL, *dmh = NULL;
    stt_req_t *req = NULL;
    int done = 0;

    pair_open(&p);
    assert_int_equal(ops->reg_mr(p.recv, buf, sizeof(buf), STT_PTR_HOST, &mh), STRATA_OK);
    assert_non_null(mh);
    assert_int_equal(ops->reg_mr(p.recv, buf, sizeof(buf), STT_PTR_CUDA, &dmh),
                     STRATA_ERR_UNSUPPORTED);
    assert_null(dmh);
    assert_int_equal(ops->reg_mr_dmabuf(p.recv, buf, sizeof(buf), STT_PTR_CUDA, 0, 3, &dmh),
                     STRATA_ERR_UNSUPPORTED);
    assert_null(dmh);

    void *data[1] = {buf};
    int isz[1] = {100};
    assert_int_equal(ops->iflush(p.recv, 1, data, isz, &mh, &req), STRATA_OK);
    assert_non_null(req);
    assert_int_equal(ops->test(req, &done, NULL), STRATA_OK);
    assert_int_equal(done, 1);
    /* Released: testing it again is caught. */
    assert_int_equal(ops->test(req, &done, NULL), STRATA_ERR_INVALID);

    /* A buffer outside its registration is refused. */
    size_t cap[1] = {sizeof(buf) + 1};
    int tag[1] = {0};
    void *mhs[1] = {mh};
    assert_int_equal(ops->irecv(p.recv, 1, data, cap, tag, mhs, &req), STRATA_ERR_INVALID);
    /* Bad arguments are refused, not crashed on. */
    assert_int_equal(ops->irecv(p.recv, 9, data, cap, tag, NULL, &req), STRATA_ERR_INVALID);
    assert_int_equal(ops->irecv(p.recv, 0, data, cap, tag, NULL, &req), STRATA_ERR_INVALID);
    assert_int_equal(ops->isend(p.recv, buf, 1, 0, NULL, &req), STRATA_ERR_INVALID);
    assert_int_equal(ops->isend(p.send, NULL, 1, 0, NULL, &req), STRATA_ERR_INVALID);
    assert_int_equal(ops->isend(p.send, buf, (1ull << 40) + 1, 0, NULL, &req),
                     STRATA_ERR_INVALID);
    assert_int_equal(ops->dereg_mr(p.send, mh), STRATA_ERR_INVALID);   /* other comm */
    assert_int_equal(ops->dereg_mr(p.recv, mh), STRATA_OK);
    pair_close(&p);
}

static void test_bad_handle(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE];
    stt_comm_t *c = NULL;

    memset(handle, 0, sizeof(handle));
    assert_int_equal(ops->connect(0, handle, NULL, &c), STRATA_ERR_INVALID);
    memset(handle, 0xff, sizeof(handle));
    assert_int_equal(ops->connect(0, handle, NULL, &c), STRATA_ERR_INVALID);
    assert_null(c);
}

/* Closing comms with requests still pending must neither crash nor leak. */
static void test_close_in_flight(void **state)
{
    pair_t p = {0};
    size_t big = 16 << 20;
    uint8_t *src = calloc(1, big), *dst = malloc(big);
    stt_req_t *sreq = NULL, *rreq = NULL, *rreq2 = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {big};
    int tag[1] = {0};

    env_set("2", "64K");
    pair_open(&p);
    assert_int_equal(ops->isend(p.send, src, big, 0, NULL, &sreq), STRATA_OK);
    assert_int_equal(ops->irecv(p.recv, 1, data, cap, tag, NULL, &rreq), STRATA_OK);
    assert_int_equal(ops->irecv(p.recv, 1, data, cap, tag, NULL, &rreq2), STRATA_OK);
    assert_non_null(sreq);
    assert_non_null(rreq2);
    pair_close(&p);
    free(src);
    free(dst);
    env_set("1", "256K");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devices_and_props),
        cmocka_unit_test(test_small_messages),
        cmocka_unit_test(test_striped_messages),
        cmocka_unit_test(test_many_in_flight),
        cmocka_unit_test(test_grouped_receive),
        cmocka_unit_test(test_truncation_keeps_connection),
        cmocka_unit_test(test_tag_mismatch_fails_comm),
        cmocka_unit_test(test_peer_closed_mid_transfer),
        cmocka_unit_test(test_receiver_closed),
        cmocka_unit_test(test_bad_hellos_keep_listener),
        cmocka_unit_test(test_handshake_timeouts),
        cmocka_unit_test(test_garbage_stream),
        cmocka_unit_test(test_registration_and_flush),
        cmocka_unit_test(test_bad_handle),
        cmocka_unit_test(test_close_in_flight),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
