/*
 * The listeners against strangers, over every transport whose listener is a socket (tcp,
 * ucx, ib; loop and the fake have none and skip): a connect whose handle carries another
 * secret is refused, and a real connect still succeeds, and carries data, while 200 idle
 * sockets from strangers are open to the listener (more than its pending slots: 64 tcp, 16
 * ucx and ib), each of which it holds at most STT_HANDSHAKE_FIRST_MS once others wait.
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "sts_cmocka.h"
#include "sts_conf.h"
#include "sts_util.h"
#include "sts_xport.h"
#include "transport/base/connect.h"
#ifdef STRATA_HAVE_UCX
#include "transport/ucx/ucx_wire.h"
#endif

#define IDLE_STRANGERS 200
#define UCX_HANDLE_SECRET_OFF 38     /* ucx_wire.h: the secret's place in a ucx handle */

/*
 * The listen address in handle and where its secret lies in it, for the transports whose
 * listener is a socket; 0 (the case skips) for the others.
 */
static int handle_parts(const stt_ops_t *ops, uint8_t *handle, stt_netif_addr_t *addr,
                        uint8_t **secret)
{
    const char *name = stt_name(ops);

    if (strcmp(name, "tcp") == 0 || strcmp(name, "ib") == 0) {
        stt_handle_t *h = (stt_handle_t *)(void *)handle;
        *addr = h->addr;
        *secret = handle + offsetof(stt_handle_t, secret);
        return 1;
    }
#ifdef STRATA_HAVE_UCX
    if (strcmp(name, "ucx") == 0) {
        stt_ucx_handle_t h;
        assert_ok(stt_ucx_handle_decode(handle, &h));
        *addr = h.addr;
        *secret = handle + UCX_HANDLE_SECRET_OFF;
        assert_memory_equal(*secret, h.secret, STT_HANDLE_SECRET_BYTES);
        return 1;
    }
#endif
    return 0;
}

static int raw_connect(const stt_netif_addr_t *addr)
{
    int fd = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, &addr->sa, stt_netif_addr_len(addr)), 0);
    return fd;
}

/* 200 idle strangers, then a real connect: it succeeds and carries data. */
static void guard_idle_strangers(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    uint8_t handle[STT_HANDLE_SIZE], *secret;
    stt_netif_addr_t addr;
    int fds[IDLE_STRANGERS];
    sts_pair_t p = {0};

    assert_ok(stt_listen(ctx->ops, 0, handle, &p.listen));
    if (!handle_parts(ctx->ops, handle, &addr, &secret)) {
        stt_close_listen(p.listen);
        skip();
    }
    for (int i = 0; i < IDLE_STRANGERS; i++)
        fds[i] = raw_connect(&addr);
    assert_ok(sts_connect_accept(ctx->ops, 0, p.listen, handle, STS_CONNECT_TIMEOUT_S, &p.send,
                                 &p.recv));
    sts_xfer_ok(&p, 4000, 4000, 3, 11, STS_XFER_UNREGISTERED);
    for (int i = 0; i < IDLE_STRANGERS; i++)
        close(fds[i]);
    sts_pair_close(&p);
}

/* A handle whose secret is not the listener's: the connect fails, the listener goes on. */
static void guard_wrong_secret(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    uint8_t handle[STT_HANDLE_SIZE], copy[STT_HANDLE_SIZE], *secret;
    stt_netif_addr_t addr;
    sts_pair_t p = {0};
    stt_comm_t *send = NULL, *recv = NULL;
    strata_status_t status = STRATA_OK;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    assert_ok(stt_listen(ctx->ops, 0, handle, &p.listen));
    if (!handle_parts(ctx->ops, handle, &addr, &secret)) {
        stt_close_listen(p.listen);
        skip();
    }
    memcpy(copy, handle, sizeof(copy));
    copy[secret - handle + 3] ^= 0x40;
    while (status == STRATA_OK) {
        status = stt_connect(ctx->ops, 0, copy, NULL, &send);
        assert_null(send);
        assert_ok(stt_accept(p.listen, &recv));
        assert_null(recv);
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
    }
    assert_status(status, STRATA_ERR_REMOTE);
    /* The listener still accepts the handle's own connections. */
    assert_ok(sts_connect_accept(ctx->ops, 0, p.listen, handle, STS_CONNECT_TIMEOUT_S, &p.send,
                                 &p.recv));
    sts_xfer_ok(&p, 100, 100, 0, 5, STS_XFER_UNREGISTERED);
    sts_pair_close(&p);
}

/*
 * A stranger's hello that announces the largest worker address and then sends nothing
 * more: the ucx listener checks the hello's 40 fixed bytes first and closes the connection
 * at once, without waiting for (or allocating) the address. The connect timeout is set
 * far past this case's deadline (main), so a listener that waited for the address would
 * hold the connection past it and fail the case. Other transports' first messages have
 * no variable part (tcp's refusals are test_tcp_faults'); they skip.
 */
static void guard_stranger_header(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    uint8_t handle[STT_HANDLE_SIZE], *secret;
    stt_netif_addr_t addr;
    stt_listen_t *listen = NULL;
    stt_comm_t *recv = NULL;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    assert_ok(stt_listen(ctx->ops, 0, handle, &listen));
    if (strcmp(stt_name(ctx->ops), "ucx") != 0 || !handle_parts(ctx->ops, handle, &addr, &secret)) {
        stt_close_listen(listen);
        skip();
    }
#ifdef STRATA_HAVE_UCX
    stt_ucx_handle_t h;
    assert_ok(stt_ucx_handle_decode(handle, &h));
    /* it knows the listener's id (a stale handle's), not the secret */
    stt_ucx_hello_t hello = {.kind = STT_UCX_HELLO_CONNECT, .listener_id = h.listener_id,
                             .conn_id = 1, .addr_len = STT_UCX_MAX_ADDR_BYTES};
    uint8_t bytes[STT_UCX_HELLO_BYTES];
    stt_ucx_hello_encode(&hello, bytes);
    int fd = raw_connect(&addr);
    assert_int_equal(write(fd, bytes, sizeof(bytes)), (ssize_t)sizeof(bytes));
    for (;;) {
        assert_ok(stt_accept(listen, &recv));
        assert_null(recv);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 1) == 1)
            break;
        assert_false(stu_deadline_passed(deadline));
    }
    char c;
    assert_true(read(fd, &c, 1) <= 0);     /* closed (EOF or reset), nothing answered */
    close(fd);
#endif
    stt_close_listen(listen);
}

int main(void)
{
    /* guard_stranger_header: a listener waiting for the stranger's address would keep it
     * this long (10 min), far past the case's deadline */
    setenv("STRATA_CONNECT_TIMEOUT", "600000", 1);
    struct CMUnitTest cases[] = {
        STS_CONF_CASE(guard_wrong_secret),
        STS_CONF_CASE(guard_idle_strangers),
        STS_CONF_CASE(guard_stranger_header),
    };
    return sts_conf_run("listen-guard", cases, sizeof(cases) / sizeof(cases[0]));
}
