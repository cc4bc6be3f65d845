/*
 * Transport conformance, connections and lifecycle: properties, init/fini
 * reference counting and re-init, connect/accept on every device, one
 * listener accepting several connections, closing with requests in flight,
 * a peer that closes, and memory registration. Run over every transport of
 * the registry plus the fake, like test_conformance.c (same scaffolding,
 * tests/support/sts_conf.c); each case's teardown checks that the last fini
 * left no descriptor open.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sts_cmocka.h"
#include "sts_conf.h"
#include "sts_util.h"
#include "sts_xport.h"
#include "util/param.h"

static void conf_props(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    int ndev = -1;

    assert_ok(stt_devices(ctx->ops, &ndev));
    assert_int_equal(ndev, ctx->ndev);
    assert_non_null(stt_name(ctx->ops));
    assert_true(stt_name(ctx->ops)[0] != '\0');
    for (int dev = 0; dev < ndev; dev++) {
        stt_props_t p;
        memset(&p, 0x5a, sizeof(p));
        assert_ok(stt_get_props(ctx->ops, dev, &p));
        assert_non_null(memchr(p.name, '\0', sizeof(p.name)));
        assert_true(p.name[0] != '\0');
        assert_non_null(memchr(p.pci_path, '\0', sizeof(p.pci_path)));
        assert_true(p.ptr_support & STT_PTR_HOST);
        assert_true(p.speed_mbps > 0);
        assert_in_range(p.max_recvs, 1, STT_MAX_RECVS);
        assert_true(p.max_comms > 0);
        assert_true(p.max_p2p_bytes > 0);
        assert_true(p.max_coll_bytes > 0);
        assert_true(p.latency_us >= 0.0f && p.latency_us < 1e6f);
        assert_true(p.reg_is_global == 0 || p.reg_is_global == 1);
        assert_true(p.cpu_copies == 0 || p.cpu_copies == 1);
        assert_true(p.stripe_min <= p.max_p2p_bytes);
    }
    stt_props_t p;
    assert_true(stt_get_props(ctx->ops, ndev, &p) != STRATA_OK);
    assert_true(stt_get_props(ctx->ops, -1, &p) != STRATA_OK);
}

/* A small exchange on a fresh pair: the transport works right now. */
static void conf_smoke(sts_conf_ctx_t *ctx)
{
    sts_pair_t pair;

    sts_conf_open(ctx, 0, &pair);
    sts_xfer_ok(&pair, 4099, 4099, 77, 77, 0);
    sts_pair_close(&pair);
}

static void conf_init_refcount(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    int ndev = -1;

    /* A second reference, then dropping it, keeps the first one's devices working. */
    assert_ok(stt_init(ctx->ops));
    stt_fini(ctx->ops);
    assert_ok(stt_devices(ctx->ops, &ndev));
    assert_int_equal(ndev, ctx->ndev);
    conf_smoke(ctx);

    /* The last fini frees everything; init after it starts from scratch. */
    stt_fini(ctx->ops);
    ctx->ready = 0;
    assert_int_equal(sts_fd_count(), ctx->fds_before);
    for (int round = 0; round < 3; round++) {
        assert_ok(stt_init(ctx->ops));
        ndev = -1;
        assert_ok(stt_devices(ctx->ops, &ndev));
        assert_int_equal(ndev, ctx->ndev);
        stt_fini(ctx->ops);
        assert_int_equal(sts_fd_count(), ctx->fds_before);
    }
    assert_ok(stt_init(ctx->ops));
    ctx->ready = 1;
    conf_smoke(ctx);
}

static void conf_connect_accept(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);

    for (int dev = 0; dev < ctx->ndev; dev++) {
        sts_pair_t pair;
        stt_comm_t *extra = (stt_comm_t *)&pair;

        sts_conf_open(ctx, dev, &pair);
        assert_ptr_equal(pair.listen->ops, ctx->ops);
        assert_ptr_equal(pair.send->ops, ctx->ops);
        assert_ptr_equal(pair.recv->ops, ctx->ops);
        assert_int_equal(pair.send->dev, dev);
        assert_int_equal(pair.recv->dev, dev);
        /* Nothing else is connecting: accept answers "none yet", not an error. */
        assert_ok(stt_accept(pair.listen, &extra));
        assert_null(extra);
        sts_xfer_ok(&pair, 6, 6, 1, 1, 0);
        sts_pair_close(&pair);
    }
}

/*
 * Handles are plain bytes (NCCL keeps them in char arrays inside its own
 * structs): listen and connect must work on a handle at an address with no
 * particular alignment. Sanitized builds catch a transport that casts it.
 */
static void conf_unaligned_handle(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    uint64_t storage[2 * STT_HANDLE_SIZE / sizeof(uint64_t)];
    char *handle = (char *)storage + 4;
    stt_comm_t *send = NULL, *recv = NULL;
    stt_listen_t *listen = NULL;
    sts_pair_t pair = {.ops = ctx->ops};

    assert_ok(stt_listen(ctx->ops, 0, handle, &listen));
    assert_ok(sts_connect_accept(ctx->ops, 0, listen, handle, STS_CONNECT_TIMEOUT_S, &send,
                                 &recv));
    pair.listen = listen;
    pair.send = send;
    pair.recv = recv;
    sts_xfer_ok(&pair, 5000, 5000, 11, 11, 0);
    sts_pair_close(&pair);
}

/*
 * Connecting to a listener that is gone fails within the connect timeout
 * (shortened here), whether it closed before the first connect call or while
 * the connection was in progress; a transport that hands out the comm anyway
 * must fail its first send. Never a hang, never a leaked descriptor.
 */
static void conf_connect_closed_listener(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    const stt_conn_cfg_t cfg = {.traffic_class = STT_TRAFFIC_CLASS_UNDEF};
    const char *saved = getenv("STRATA_CONNECT_TIMEOUT");
    char *saved_copy = saved != NULL ? strdup(saved) : NULL;

    setenv("STRATA_CONNECT_TIMEOUT", "3000", 1);
    stu_param_reload();
    for (int started = 0; started < 2; started++) {
        char handle[STT_HANDLE_SIZE];
        stt_listen_t *listen = NULL;
        stt_comm_t *send = NULL;
        strata_status_t status = STRATA_OK;
        uint64_t deadline = sts_deadline(STS_CONNECT_TIMEOUT_S);

        assert_ok(stt_listen(ctx->ops, 0, handle, &listen));
        if (started)
            status = stt_connect(ctx->ops, 0, handle, &cfg, &send);
        stt_close_listen(listen);
        while (status == STRATA_OK && send == NULL && !stu_deadline_passed(deadline)) {
            status = stt_connect(ctx->ops, 0, handle, &cfg, &send);
            sts_relax();
        }
        if (send == NULL) {
            if (status == STRATA_OK)
                fail_msg("connect to a closed listener still pending after the deadline");
            continue;
        }
        sts_buf_t buf;
        stt_req_t *req = NULL;
        assert_ok(sts_buf_alloc(&buf, send, 64));
        assert_ok(stt_isend(send, buf.data, 64, 0, buf.mh, &req));
        assert_non_null(req);
        assert_true(sts_req_wait(req, sts_deadline(STS_IO_TIMEOUT_S), NULL) != STRATA_OK);
        sts_buf_dereg(&buf);
        stt_close_send(send);
        sts_buf_free_data(&buf);
    }
    if (saved_copy != NULL)
        setenv("STRATA_CONNECT_TIMEOUT", saved_copy, 1);
    else
        unsetenv("STRATA_CONNECT_TIMEOUT");
    free(saved_copy);
    stu_param_reload();
}

/*
 * A connect given up while in progress: connect_abandon frees its state (LeakSanitizer in
 * the sanitized builds), a second abandon and one on a handle with nothing in progress do
 * nothing, and the transport connects as before afterwards.
 */
static void conf_connect_abandon(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    const stt_conn_cfg_t cfg = {.traffic_class = STT_TRAFFIC_CLASS_UNDEF};
    char handle[STT_HANDLE_SIZE];
    stt_listen_t *listen = NULL;
    stt_comm_t *send = NULL;
    sts_pair_t pair;

    assert_ok(stt_listen(ctx->ops, 0, handle, &listen));
    stt_connect_abandon(ctx->ops, handle);            /* nothing started: nothing to do */
    assert_ok(stt_connect(ctx->ops, 0, handle, &cfg, &send));
    if (send == NULL) {                              /* in progress: the listener never accepts */
        stt_connect_abandon(ctx->ops, handle);
        stt_connect_abandon(ctx->ops, handle);
    } else {
        print_message("%s: connect completed on its first call; nothing to abandon\n",
                      stt_name(ctx->ops));
        stt_close_send(send);
    }
    stt_close_listen(listen);
    sts_conf_open(ctx, 0, &pair);
    sts_xfer_ok(&pair, 6, 6, 1, 1, 0);
    sts_pair_close(&pair);
}

/*
 * poll_fds: never more than asked for, only valid descriptors, and when the
 * transport has any, a receive comm's become ready once a message for it was
 * sent (so a caller that sleeps on them wakes up for the data).
 */
static void conf_poll_fds(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    struct pollfd fds[8];
    sts_pair_t pair;
    int n;

    sts_conf_open(ctx, 0, &pair);
    for (int side = 0; side < 2; side++) {
        stt_comm_t *comm = side == 0 ? pair.send : pair.recv;
        assert_int_equal(stt_poll_fds(comm, fds, 0), 0);
        n = stt_poll_fds(comm, fds, 8);
        assert_in_range(n, 0, 8);
        for (int i = 0; i < n; i++) {
            assert_true(fcntl(fds[i].fd, F_GETFD) != -1);
            assert_true(fds[i].events != 0);
        }
    }
    n = stt_poll_fds(pair.recv, fds, 8);
    if (n > 0) {
        sts_req_slot_t slots[2];
        sts_reqset_t set = {.slots = slots, .cap = 2};
        uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
        sts_buf_t sbuf, rbuf;
        int tag = 0, sslot = -1, timeout_ms = (int)(10000 * sts_timeout_scale());
        assert_ok(sts_buf_alloc(&sbuf, pair.send, 4096));
        assert_ok(sts_buf_alloc(&rbuf, pair.recv, 4096));
        assert_ok(sts_irecv_retry(pair.recv, 1, (void **)&rbuf.data, &rbuf.size, &tag,
                                  &rbuf.mh, &set, deadline, NULL, NULL));
        assert_ok(sts_isend_retry(pair.send, sbuf.data, 4096, tag, sbuf.mh, &set, deadline,
                                  &sslot, NULL));
        /* Move the send along without ever testing the receive. */
        while (slots[sslot].req != NULL && !stu_deadline_passed(deadline)) {
            int done = 0;
            strata_status_t st = stt_test(slots[sslot].req, &done, NULL);
            if (st != STRATA_OK || done) {
                slots[sslot].req = NULL;
                set.pending--;
                assert_ok(st);
            }
        }
        if (poll(fds, (nfds_t)n, timeout_ms) <= 0)
            fail_msg("%s: a message arrived but no poll_fds descriptor became ready",
                     stt_name(ctx->ops));
        assert_ok(sts_reqset_wait(&set, deadline));
        assert_int_equal(set.errors, 0);
        sts_buf_free(&sbuf);
        sts_buf_free(&rbuf);
    }
    sts_pair_close(&pair);
}

/* One thread of conf_threads: its own connection, many checked exchanges. */
typedef struct conf_thread {
    pthread_t tid;
    sts_conf_ctx_t *ctx;
    int id;
    int *stop;
    char err[200];
} conf_thread_t;

static void *conf_thread_data(void *arg)
{
    conf_thread_t *t = arg;
    const size_t max = 300 * KiB;
    sts_buf_t sbuf = {0}, rbuf = {0};
    sts_pair_t pair;
    strata_status_t status;

    status = sts_pair_open(t->ctx->ops, 0, STS_CONNECT_TIMEOUT_S, &pair);
    if (status != STRATA_OK) {
        snprintf(t->err, sizeof(t->err), "connect: %s", strata_status_str(status));
        return NULL;
    }
    if (sts_buf_alloc(&sbuf, pair.send, max) != STRATA_OK ||
        sts_buf_alloc(&rbuf, pair.recv, max) != STRATA_OK) {
        snprintf(t->err, sizeof(t->err), "buffers");
        goto out;
    }
    for (int i = 0; i < 200; i++) {
        size_t size = ((size_t)i * 4099u + (size_t)t->id * 977u) % max, got = 0;
        uint32_t seed = (uint32_t)(t->id * 100000 + i);
        strata_status_t ss, rs;
        sts_pattern_fill(sbuf.data, size, seed);
        status = sts_pair_exchange(&pair, sbuf.data, size, sbuf.mh, rbuf.data, max, rbuf.mh,
                                   t->id, sts_deadline(STS_IO_TIMEOUT_S), &ss, &rs, &got);
        if (status != STRATA_OK || ss != STRATA_OK || rs != STRATA_OK || got != size ||
            sts_pattern_check(rbuf.data, size, seed) != SIZE_MAX) {
            snprintf(t->err, sizeof(t->err), "exchange %d (%zu bytes): %s/%s/%s, got %zu", i,
                     size, strata_status_str(status), strata_status_str(ss),
                     strata_status_str(rs), got);
            break;
        }
    }
out:
    if (sbuf.data != NULL)
        sts_buf_free(&sbuf);
    if (rbuf.data != NULL)
        sts_buf_free(&rbuf);
    sts_pair_close(&pair);
    return NULL;
}

/* init/devices/get_props/fini, over and over, while the data threads run. */
static void *conf_thread_control(void *arg)
{
    conf_thread_t *t = arg;
    while (!__atomic_load_n(t->stop, __ATOMIC_ACQUIRE)) {
        stt_props_t props;
        int ndev = 0;
        strata_status_t status = stt_init(t->ctx->ops);
        if (status != STRATA_OK) {
            snprintf(t->err, sizeof(t->err), "init: %s", strata_status_str(status));
            return NULL;
        }
        status = stt_devices(t->ctx->ops, &ndev);
        if (status == STRATA_OK && ndev == t->ctx->ndev)
            status = stt_get_props(t->ctx->ops, 0, &props);
        stt_fini(t->ctx->ops);
        if (status != STRATA_OK || ndev != t->ctx->ndev) {
            snprintf(t->err, sizeof(t->err), "devices/get_props: %s, %d devices",
                     strata_status_str(status), ndev);
            return NULL;
        }
    }
    return NULL;
}

/*
 * The contract's threading: different comms driven from different threads
 * at once (NCCL's proxy threads), and init/fini/devices/get_props called
 * concurrently with them.
 */
static void conf_threads(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    enum { NDATA = 2 };
    conf_thread_t t[NDATA + 1];
    int stop = 0;

    memset(t, 0, sizeof(t));
    for (int i = 0; i <= NDATA; i++) {
        t[i].ctx = ctx;
        t[i].id = i + 1;
        t[i].stop = &stop;
        assert_int_equal(pthread_create(&t[i].tid, NULL,
                                        i < NDATA ? conf_thread_data : conf_thread_control,
                                        &t[i]), 0);
    }
    for (int i = 0; i < NDATA; i++)
        pthread_join(t[i].tid, NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(t[NDATA].tid, NULL);
    for (int i = 0; i <= NDATA; i++)
        if (t[i].err[0] != '\0')
            fail_msg("%s thread %d: %s", stt_name(ctx->ops), i, t[i].err);
}

/*
 * One listener accepts several connections made concurrently; each accepted
 * comm is joined to exactly one send comm, and stays joined to it.
 */
static void conf_accept_many(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    enum { K = 4, BIG = 100000 };
    const stt_conn_cfg_t cfg = {.traffic_class = STT_TRAFFIC_CLASS_UNDEF};
    char handle[STT_HANDLE_SIZE], copies[K][STT_HANDLE_SIZE];
    stt_comm_t *send[K] = {0}, *recv[K] = {0}, *extra = NULL;
    int peer_of[K], seen[K] = {0}, nsend = 0, naccepted = 0;
    stt_listen_t *listen = NULL;
    uint64_t deadline;

    assert_ok(stt_listen(ctx->ops, 0, handle, &listen));
    assert_non_null(listen);
    for (int k = 0; k < K; k++)
        memcpy(copies[k], handle, sizeof(handle));
    deadline = sts_deadline(STS_CONNECT_TIMEOUT_S);
    while (nsend < K || naccepted < K) {
        for (int k = 0; k < K; k++) {
            if (send[k] != NULL)
                continue;
            assert_ok(stt_connect(ctx->ops, 0, copies[k], &cfg, &send[k]));
            nsend += send[k] != NULL;
        }
        if (naccepted < K) {
            assert_ok(stt_accept(listen, &recv[naccepted]));
            naccepted += recv[naccepted] != NULL;
        }
        if (stu_deadline_passed(deadline))
            fail_msg("%d of %d connected, %d accepted before the deadline", nsend, K, naccepted);
        sts_relax();
    }
    assert_ok(stt_accept(listen, &extra));
    assert_null(extra);

    /* Round 1: who is who. Round 2: a larger message follows the same path. */
    for (int round = 0; round < 2; round++) {
        size_t size = round == 0 ? sizeof(uint32_t) : BIG;
        sts_buf_t sbuf[K], rbuf[K];
        sts_req_slot_t slots[2 * K];
        sts_reqset_t set = {.slots = slots, .cap = 2 * K};
        int rslot[K], tag = 0;
        deadline = sts_deadline(STS_IO_TIMEOUT_S);
        for (int k = 0; k < K; k++) {
            assert_ok(sts_buf_alloc(&sbuf[k], send[k], size));
            assert_ok(sts_buf_alloc(&rbuf[k], recv[k], size));
            if (round == 0)
                memcpy(sbuf[k].data, &(uint32_t){(uint32_t)k}, sizeof(uint32_t));
            else
                sts_pattern_fill(sbuf[k].data, size, (uint32_t)(500 + k));
            assert_ok(sts_irecv_retry(recv[k], 1, (void **)&rbuf[k].data, &size, &tag,
                                      &rbuf[k].mh, &set, deadline, &rslot[k], NULL));
        }
        for (int k = 0; k < K; k++)
            assert_ok(sts_isend_retry(send[k], sbuf[k].data, size, tag, sbuf[k].mh, &set,
                                      deadline, NULL, NULL));
        assert_ok(sts_reqset_wait(&set, deadline));
        assert_int_equal(set.errors, 0);
        for (int c = 0; c < K; c++) {
            assert_int_equal(slots[rslot[c]].sizes[0], size);
            if (round == 0) {
                uint32_t who;
                memcpy(&who, rbuf[c].data, sizeof(who));
                assert_in_range(who, 0, K - 1);
                assert_int_equal(seen[who], 0);
                seen[who] = 1;
                peer_of[c] = (int)who;
            } else {
                assert_pattern(rbuf[c].data, size, (uint32_t)(500 + peer_of[c]));
            }
            sts_buf_free(&sbuf[c]);
            sts_buf_free(&rbuf[c]);
        }
    }
    for (int k = 0; k < K; k++) {
        stt_close_send(send[k]);
        stt_close_recv(recv[k]);
    }
    stt_close_listen(listen);
}

/* Posts count requests that cannot all complete, tests a few times, then closes. */
static void conf_close_case(sts_conf_ctx_t *ctx, int nsend, size_t ssize, int nrecv, size_t rsize,
                            int recv_first)
{
    sts_buf_t sbuf[32], rbuf[32];
    sts_req_slot_t slots[64];
    sts_reqset_t set = {.slots = slots, .cap = 64};
    sts_pair_t pair;
    int tag = 1;

    sts_conf_open(ctx, 0, &pair);
    for (int i = 0; i < nrecv; i++) {
        stt_req_t *req = NULL;
        assert_ok(sts_buf_alloc(&rbuf[i], pair.recv, rsize));
        assert_ok(stt_irecv(pair.recv, 1, (void **)&rbuf[i].data, &rsize, &tag, &rbuf[i].mh,
                            &req));
        assert_non_null(req);
        sts_reqset_add(&set, req);
    }
    for (int i = 0; i < nsend; i++) {
        stt_req_t *req = NULL;
        assert_ok(sts_buf_alloc(&sbuf[i], pair.send, ssize));
        sts_pattern_fill(sbuf[i].data, ssize, (uint32_t)i);
        assert_ok(stt_isend(pair.send, sbuf[i].data, ssize, tag, sbuf[i].mh, &req));
        assert_non_null(req);
        sts_reqset_add(&set, req);
    }
    for (int pass = 0; pass < 20; pass++)
        sts_reqset_progress(&set);
    /* Handles go before their comm; the memory stays until the comm is closed. */
    for (int i = 0; i < nrecv; i++)
        sts_buf_dereg(&rbuf[i]);
    for (int i = 0; i < nsend; i++)
        sts_buf_dereg(&sbuf[i]);
    if (recv_first) {
        stt_close_recv(pair.recv);
        pair.recv = NULL;
    }
    sts_pair_close(&pair);
    for (int i = 0; i < nrecv; i++)
        sts_buf_free_data(&rbuf[i]);
    for (int i = 0; i < nsend; i++)
        sts_buf_free_data(&sbuf[i]);
}

/*
 * Closing comms with requests still pending frees everything (ASan) and
 * closes every socket (the teardown counts descriptors), in either order.
 */
static void conf_close_in_flight(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);

    conf_close_case(ctx, 0, 0, STT_MAX_REQUESTS, 4 * KiB, 1);   /* unmatched receives */
    conf_close_case(ctx, 8, 1 * MiB, 0, 0, 0);                  /* unmatched sends */
    conf_close_case(ctx, 4, 2 * MiB, 2, 2 * MiB, 0);            /* half matched */
    conf_close_case(ctx, 4, 2 * MiB, 2, 2 * MiB, 1);
    conf_close_case(ctx, 3, 64 * MiB, 1, 64 * MiB, 1);          /* mid-transfer */
}

/* A peer that closes its end fails our pending request with STRATA_ERR_REMOTE. */
static void conf_peer_closed(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);

    for (int side = 0; side < 2; side++) {
        size_t size = side == 0 ? 4 * KiB : 64 * MiB;
        stt_comm_t *mine;
        stt_req_t *req = NULL;
        sts_pair_t pair;
        sts_buf_t buf;
        int tag = 3;

        sts_conf_open(ctx, 0, &pair);
        mine = side == 0 ? pair.recv : pair.send;
        assert_ok(sts_buf_alloc(&buf, mine, size));
        if (side == 0) {
            assert_ok(stt_irecv(mine, 1, (void **)&buf.data, &size, &tag, &buf.mh, &req));
            stt_close_send(pair.send);
            pair.send = NULL;
        } else {
            assert_ok(stt_isend(mine, buf.data, size, tag, buf.mh, &req));
            stt_close_recv(pair.recv);
            pair.recv = NULL;
        }
        assert_non_null(req);
        assert_status(sts_req_wait(req, sts_deadline(STS_IO_TIMEOUT_S), NULL),
                      STRATA_ERR_REMOTE);
        sts_buf_free(&buf);
        sts_pair_close(&pair);
    }
}

static void conf_reg_mr(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    const size_t size = 1 * MiB;
    char *mem = malloc(size);
    void *mh1 = NULL, *mh2 = NULL, *mh3 = NULL, *bad = NULL;
    sts_pair_t pair;

    assert_non_null(mem);
    sts_conf_open(ctx, 0, &pair);
    for (int side = 0; side < 2; side++) {
        stt_comm_t *comm = side == 0 ? pair.send : pair.recv;
        /* The same memory twice, and a sub-range: NCCL registers all three ways. */
        assert_ok(stt_reg_mr(comm, mem, size, STT_PTR_HOST, &mh1));
        assert_ok(stt_reg_mr(comm, mem, size, STT_PTR_HOST, &mh2));
        assert_ok(stt_reg_mr(comm, mem + 4096, 8192, STT_PTR_HOST, &mh3));
        assert_ok(stt_dereg_mr(comm, mh3));
        assert_ok(stt_dereg_mr(comm, mh1));
        assert_ok(stt_dereg_mr(comm, mh2));
        if (!(ctx->props.ptr_support & STT_PTR_CUDA))
            assert_status(stt_reg_mr(comm, mem, size, STT_PTR_CUDA, &bad),
                          STRATA_ERR_UNSUPPORTED);
        if (!(ctx->props.ptr_support & STT_PTR_DMABUF))
            assert_status(stt_reg_mr_dmabuf(comm, mem, size, STT_PTR_DMABUF, 0, -1, &bad),
                          STRATA_ERR_UNSUPPORTED);
    }
    /* A refused registration leaves the connection usable. */
    sts_xfer_ok(&pair, size, size, 99, 99, 0);
    sts_pair_close(&pair);
    free(mem);
}

int main(void)
{
    struct CMUnitTest cases[] = {
        STS_CONF_CASE(conf_props),
        STS_CONF_CASE(conf_init_refcount),
        STS_CONF_CASE(conf_connect_accept),
        STS_CONF_CASE(conf_unaligned_handle),
        STS_CONF_CASE(conf_connect_closed_listener),
        STS_CONF_CASE(conf_connect_abandon),
        STS_CONF_CASE(conf_accept_many),
        STS_CONF_CASE(conf_close_in_flight),
        STS_CONF_CASE(conf_peer_closed),
        STS_CONF_CASE(conf_reg_mr),
        STS_CONF_CASE(conf_poll_fds),
        STS_CONF_CASE(conf_threads),
    };
    return sts_conf_run("conformance-conn", cases, sizeof(cases) / sizeof(cases[0]));
}
