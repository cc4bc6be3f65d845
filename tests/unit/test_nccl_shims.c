/*
 * ncclNetPlugin_v6 ... _v10 over the real ncclNetPlugin_v11, in one process,
 * over loopback: init, devices, properties (checked member by member against
 * v11's), listen/connect/accept until both ends are ready, round trips
 * through isend/irecv/test, and the refusal of negative int sizes.
 *
 * Two groups: the TCP transport on the loopback interface, and the in-process
 * loop transport. Both ends run in this thread, so every wait drives both;
 * every wait is bounded by a generous deadline and nothing asserts on time.
 * Each version starts from a fresh v11 state (stp_compat_fini) and must leave
 * no file descriptor behind.
 *
 * Versions differ in signatures, so the test reaches them through drv_*
 * helpers that switch on the version and convert sizes the way NCCL would.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/net_compat.h"
#include "sts_util.h"
#include "util/param.h"
#include "util/time.h"

#define SHIM_TIMEOUT_S 120.0   /* generous bound on one exchange (a hang fails, not blocks) */
#define FIRST_VERSION 6
#define LAST_VERSION 10

static int fds_at_setup;

/* The group state names the transport the group must run on. */
static int group_setup_tcp(void **state)
{
    *state = "tcp";
    setenv("STRATA_TRANSPORT", "tcp", 1);
    setenv("STRATA_SOCKET_IFNAME", "=lo", 1);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    stu_param_reload();
    return 0;
}

static int group_setup_loop(void **state)
{
    *state = "loop";
    setenv("STRATA_TRANSPORT", "loop", 1);
    stu_param_reload();
    return 0;
}

static int setup(void **state)
{
    stp_compat_fini();
    fds_at_setup = sts_fd_count();
    return 0;
}

static int teardown(void **state)
{
    stp_compat_fini();
    /* The plugin state is gone after the last finalize: so must its sockets be. */
    return sts_fd_count() == fds_at_setup ? 0 : -1;
}

/* ------------------------------------------------------------------ one version's calls */

/* NCCL's logger stand-in: prints what the plugin warns about, so a failure says why. */
static void test_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                        const char *fmt, ...)
{
    va_list ap;

    if (level > NCCL_LOG_WARN)
        return;
    va_start(ap, fmt);
    fprintf(stderr, "[nccl log %d] %s:%d ", (int)level, file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static ncclResult_t drv_init(int v)
{
    switch (v) {
    case 6: return ncclNetPlugin_v6.init(test_logger);
    case 7: return ncclNetPlugin_v7.init(test_logger);
    case 8: return ncclNetPlugin_v8.init(test_logger);
    case 9: return ncclNetPlugin_v9.init(test_logger);
    case 10: return ncclNetPlugin_v10.init(test_logger, NULL);
    }
    fail_msg("no version %d", v);
    return ncclInternalError;
}

static ncclResult_t drv_devices(int v, int *ndev)
{
    switch (v) {
    case 6: return ncclNetPlugin_v6.devices(ndev);
    case 7: return ncclNetPlugin_v7.devices(ndev);
    case 8: return ncclNetPlugin_v8.devices(ndev);
    case 9: return ncclNetPlugin_v9.devices(ndev);
    case 10: return ncclNetPlugin_v10.devices(ndev);
    }
    fail_msg("no version %d", v);
    return ncclInternalError;
}

static ncclResult_t drv_listen(int v, int dev, void *handle, void **listen_comm)
{
    switch (v) {
    case 6: return ncclNetPlugin_v6.listen(dev, handle, listen_comm);
    case 7: return ncclNetPlugin_v7.listen(dev, handle, listen_comm);
    case 8: return ncclNetPlugin_v8.listen(dev, handle, listen_comm);
    case 9: return ncclNetPlugin_v9.listen(dev, handle, listen_comm);
    case 10: return ncclNetPlugin_v10.listen(dev, handle, listen_comm);
    }
    fail_msg("no version %d", v);
    return ncclInternalError;
}

/* v10 connects with a traffic class (its own v11 context); the others cannot. */
static ncclResult_t drv_connect(int v, int dev, int traffic_class, void *handle,
                                void **send_comm)
{
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;
    ncclNetCommConfig_v10_t config = { .trafficClass = traffic_class };
    ncclResult_t res = ncclInternalError;

    switch (v) {
    case 6: res = ncclNetPlugin_v6.connect(dev, handle, send_comm); break;
    case 7: res = ncclNetPlugin_v7.connect(dev, handle, send_comm, &dev_comm); break;
    case 8: res = ncclNetPlugin_v8.connect(dev, handle, send_comm, &dev_comm); break;
    case 9: res = ncclNetPlugin_v9.connect(dev, handle, send_comm, &dev_comm); break;
    case 10: res = ncclNetPlugin_v10.connect(dev, &config, handle, send_comm, &dev_comm); break;
    default: fail_msg("no version %d", v);
    }
    assert_null(dev_comm);      /* a host plugin never offers device offload */
    return res;
}

static ncclResult_t drv_accept(int v, void *listen_comm, void **recv_comm)
{
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;
    ncclResult_t res = ncclInternalError;

    switch (v) {
    case 6: res = ncclNetPlugin_v6.accept(listen_comm, recv_comm); break;
    case 7: res = ncclNetPlugin_v7.accept(listen_comm, recv_comm, &dev_comm); break;
    case 8: res = ncclNetPlugin_v8.accept(listen_comm, recv_comm, &dev_comm); break;
    case 9: res = ncclNetPlugin_v9.accept(listen_comm, recv_comm, &dev_comm); break;
    case 10: res = ncclNetPlugin_v10.accept(listen_comm, recv_comm, &dev_comm); break;
    default: fail_msg("no version %d", v);
    }
    assert_null(dev_comm);
    return res;
}

/* Sizes are long long here so that a test can pass what an int ABI would carry. */
static ncclResult_t drv_reg_mr(int v, void *comm, void *data, long long size, void **mhandle)
{
    switch (v) {
    case 6: return ncclNetPlugin_v6.regMr(comm, data, (int)size, NCCL_PTR_HOST, mhandle);
    case 7: return ncclNetPlugin_v7.regMr(comm, data, (int)size, NCCL_PTR_HOST, mhandle);
    case 8: return ncclNetPlugin_v8.regMr(comm, data, (size_t)size, NCCL_PTR_HOST, mhandle);
    case 9: return ncclNetPlugin_v9.regMr(comm, data, (size_t)size, NCCL_PTR_HOST, mhandle);
    case 10: return ncclNetPlugin_v10.regMr(comm, data, (size_t)size, NCCL_PTR_HOST, mhandle);
    }
    fail_msg("no version %d", v);
    return ncclInternalError;
}

static ncclResult_t drv_dereg_mr(int v, void *comm, void *mhandle)
{
    switch (v) {
    case 6: return ncclNetPlugin_v6.deregMr(comm, mhandle);
    case 7: return ncclNetPlugin_v7.deregMr(comm, mhandle);
    case 8: return ncclNetPlugin_v8.deregMr(comm, mhandle);
    case 9: return ncclNetPlugin_v9.deregMr(comm, mhandle);
    case 10: return ncclNetPlugin_v10.deregMr(comm, mhandle);
    }
    fail_msg("no version %d", v);
    return ncclInternalError;
}

static ncclResult_t drv_isend(int v, void *send_comm, void *data, long long size, int tag,
                              void *mhandle, void **request)
{
    switch (v) {
    case 6: return ncclNetPlugin_v6.isend(send_comm, data, (int)size, tag, mhandle, request);
    case 7: return ncclNetPlugin_v7.isend(send_comm, data, (int)size, tag, mhandle, request);
    case 8: return ncclNetPlugin_v8.isend(send_comm, data, (int)size, tag, mhandle, request);
    case 9: return ncclNetPlugin_v9.isend(send_comm, data, (size_t)size, tag, mhandle, request);
    case 10:
        return ncclNetPlugin_v10.isend(send_comm, data, (size_t)size, tag, mhandle, NULL,
                                       request);
    }
    fail_msg("no version %d", v);
    return ncclInternalError;
}

#define MAX_N 8

static ncclResult_t drv_irecv(int v, void *recv_comm, int n, void **data, const long long *sizes,
                              int *tags, void **mhandles, void **request)
{
    int isizes[MAX_N];
    size_t zsizes[MAX_N];
    void *phandles[MAX_N] = { NULL };

    assert_true(n >= 1 && n <= MAX_N);
    for (int i = 0; i < n; i++) {
        isizes[i] = (int)sizes[i];
        zsizes[i] = (size_t)sizes[i];
    }
    switch (v) {
    case 6: return ncclNetPlugin_v6.irecv(recv_comm, n, data, isizes, tags, mhandles, request);
    case 7: return ncclNetPlugin_v7.irecv(recv_comm, n, data, isizes, tags, mhandles, request);
    case 8: return ncclNetPlugin_v8.irecv(recv_comm, n, data, isizes, tags, mhandles, request);
    case 9: return ncclNetPlugin_v9.irecv(recv_comm, n, data, zsizes, tags, mhandles, request);
    case 10:
        return ncclNetPlugin_v10.irecv(recv_comm, n, data, zsizes, tags, mhandles, phandles,
                                       request);
    }
    fail_msg("no version %d", v);
    return ncclInternalError;
}

static ncclResult_t drv_test(int v, void *request, int *done, int *sizes)
{
    switch (v) {
    case 6: return ncclNetPlugin_v6.test(request, done, sizes);
    case 7: return ncclNetPlugin_v7.test(request, done, sizes);
    case 8: return ncclNetPlugin_v8.test(request, done, sizes);
    case 9: return ncclNetPlugin_v9.test(request, done, sizes);
    case 10: return ncclNetPlugin_v10.test(request, done, sizes);
    }
    fail_msg("no version %d", v);
    return ncclInternalError;
}

static void drv_close(int v, void *send_comm, void *recv_comm, void *listen_comm)
{
    switch (v) {
    case 6:
        assert_int_equal(ncclNetPlugin_v6.closeSend(send_comm), ncclSuccess);
        assert_int_equal(ncclNetPlugin_v6.closeRecv(recv_comm), ncclSuccess);
        assert_int_equal(ncclNetPlugin_v6.closeListen(listen_comm), ncclSuccess);
        return;
    case 7:
        assert_int_equal(ncclNetPlugin_v7.closeSend(send_comm), ncclSuccess);
        assert_int_equal(ncclNetPlugin_v7.closeRecv(recv_comm), ncclSuccess);
        assert_int_equal(ncclNetPlugin_v7.closeListen(listen_comm), ncclSuccess);
        return;
    case 8:
        assert_int_equal(ncclNetPlugin_v8.closeSend(send_comm), ncclSuccess);
        assert_int_equal(ncclNetPlugin_v8.closeRecv(recv_comm), ncclSuccess);
        assert_int_equal(ncclNetPlugin_v8.closeListen(listen_comm), ncclSuccess);
        return;
    case 9:
        assert_int_equal(ncclNetPlugin_v9.closeSend(send_comm), ncclSuccess);
        assert_int_equal(ncclNetPlugin_v9.closeRecv(recv_comm), ncclSuccess);
        assert_int_equal(ncclNetPlugin_v9.closeListen(listen_comm), ncclSuccess);
        return;
    case 10:
        assert_int_equal(ncclNetPlugin_v10.closeSend(send_comm), ncclSuccess);
        assert_int_equal(ncclNetPlugin_v10.closeRecv(recv_comm), ncclSuccess);
        assert_int_equal(ncclNetPlugin_v10.closeListen(listen_comm), ncclSuccess);
        return;
    }
    fail_msg("no version %d", v);
}

/* ------------------------------------------------------------------ connections and data */

typedef struct conn {
    int v;
    void *listen;
    void *send;
    void *recv;
    char handle[NCCL_NET_HANDLE_MAXSIZE];
} conn_t;

/* Listens on dev 0 and drives connect and accept until both are ready. */
static void conn_open(conn_t *c, int v, int traffic_class)
{
    uint64_t deadline = sts_deadline(SHIM_TIMEOUT_S);

    memset(c, 0, sizeof(*c));
    c->v = v;
    assert_int_equal(drv_listen(v, 0, c->handle, &c->listen), ncclSuccess);
    assert_non_null(c->listen);
    while (c->send == NULL || c->recv == NULL) {
        if (c->send == NULL)
            assert_int_equal(drv_connect(v, 0, traffic_class, c->handle, &c->send), ncclSuccess);
        if (c->recv == NULL)
            assert_int_equal(drv_accept(v, c->listen, &c->recv), ncclSuccess);
        assert_false(stu_deadline_passed(deadline));
    }
}

static void conn_close(conn_t *c)
{
    drv_close(c->v, c->send, c->recv, c->listen);
    memset(c, 0, sizeof(*c));
}

static unsigned char pattern(unsigned seed, size_t i)
{
    return (unsigned char)(seed * 131 + i * 7 + (i >> 12));
}

/*
 * Tests n sends and one receive, round robin, until all are done (a send may
 * need the receiver's progress to finish); returns the receive's sizes.
 */
static void conn_wait(conn_t *c, int n, void **sreq, void *rreq, int *rsizes)
{
    uint64_t deadline = sts_deadline(SHIM_TIMEOUT_S);
    int pending = n + 1;

    while (pending > 0) {
        int ssize[1];
        int done;

        for (int i = 0; i < n; i++) {
            if (sreq[i] == NULL)
                continue;
            done = 0;
            assert_int_equal(drv_test(c->v, sreq[i], &done, ssize), ncclSuccess);
            if (done) {
                sreq[i] = NULL;
                pending--;
            }
        }
        if (rreq != NULL) {
            done = 0;
            assert_int_equal(drv_test(c->v, rreq, &done, rsizes), ncclSuccess);
            if (done) {
                rreq = NULL;
                pending--;
            }
        }
        assert_false(stu_deadline_passed(deadline));
    }
}

/*
 * n messages into one grouped receive of n buffers of `cap` bytes. Message i
 * has size sizes[i] and tag n-1-i, so each lands in buffer n-1-i: the tags,
 * not the order, pick the buffer. Registered memory, verified contents.
 */
static void conn_xfer(conn_t *c, int n, const long long *sizes, long long cap, unsigned seed)
{
    unsigned char *src[MAX_N], *dst[MAX_N];
    void *smh[MAX_N], *rmh[MAX_N], *data[MAX_N];
    void *sreq[MAX_N];
    long long caps[MAX_N];
    int tags[MAX_N], got[MAX_N];
    void *rreq = NULL;
    uint64_t deadline;

    for (int i = 0; i < n; i++) {
        src[i] = malloc((size_t)sizes[i] + 1);
        dst[i] = calloc(1, (size_t)cap + 1);
        assert_non_null(src[i]);
        assert_non_null(dst[i]);
        for (long long b = 0; b < sizes[i]; b++)
            src[i][b] = pattern(seed + (unsigned)i, (size_t)b);
        assert_int_equal(drv_reg_mr(c->v, c->send, src[i], sizes[i], &smh[i]), ncclSuccess);
        assert_int_equal(drv_reg_mr(c->v, c->recv, dst[i], cap, &rmh[i]), ncclSuccess);
        data[i] = dst[i];
        caps[i] = cap;
        tags[i] = i;
        got[i] = -1;
    }

    deadline = sts_deadline(SHIM_TIMEOUT_S);
    do {
        assert_int_equal(drv_irecv(c->v, c->recv, n, data, caps, tags, rmh, &rreq), ncclSuccess);
        assert_false(stu_deadline_passed(deadline));
    } while (rreq == NULL);
    for (int i = 0; i < n; i++) {
        int tag = n - 1 - i;

        sreq[i] = NULL;
        do {
            assert_int_equal(drv_isend(c->v, c->send, src[i], sizes[i], tag, smh[i], &sreq[i]),
                             ncclSuccess);
            assert_false(stu_deadline_passed(deadline));
        } while (sreq[i] == NULL);
    }
    conn_wait(c, n, sreq, rreq, got);

    for (int i = 0; i < n; i++) {
        int buf = n - 1 - i;

        assert_int_equal(got[buf], sizes[i]);
        for (long long b = 0; b < sizes[i]; b++)
            if (dst[buf][b] != pattern(seed + (unsigned)i, (size_t)b))
                fail_msg("v%d: byte %lld of message %d is wrong", c->v, b, i);
    }
    for (int i = 0; i < n; i++) {
        assert_int_equal(drv_dereg_mr(c->v, c->send, smh[i]), ncclSuccess);
        assert_int_equal(drv_dereg_mr(c->v, c->recv, rmh[i]), ncclSuccess);
        free(src[i]);
        free(dst[i]);
    }
}

/* ------------------------------------------------------------------ tests */

static void test_names_match_v11(void **state)
{
    assert_string_equal(ncclNetPlugin_v11.name, STP_PLUGIN_NAME);
    assert_string_equal(ncclNetPlugin_v10.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v9.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v8.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v7.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v6.name, ncclNetPlugin_v11.name);
}

/* What every version has, compared with v11's answer for the same device. */
#define PROPS_COMMON_EQUAL(p, ref)                                    \
    do {                                                              \
        assert_ptr_equal((p).name, (ref).name);                       \
        assert_ptr_equal((p).pciPath, (ref).pciPath);                 \
        assert_int_equal((p).guid, (ref).guid);                       \
        assert_int_equal((p).ptrSupport, (ref).ptrSupport);          \
        assert_int_equal((p).speed, (ref).speed);                     \
        assert_int_equal((p).port, (ref).port);                       \
        assert_true((p).latency == (ref).latency);                    \
        assert_int_equal((p).maxComms, (ref).maxComms);               \
        assert_int_equal((p).maxRecvs, (ref).maxRecvs);               \
    } while (0)
#define PROPS_DEVICE_EQUAL(p, ref)                                    \
    do {                                                              \
        assert_int_equal((p).netDeviceType, (ref).netDeviceType);     \
        assert_int_equal((p).netDeviceVersion, (ref).netDeviceVersion); \
    } while (0)
#define PROPS_V9_EQUAL(p, ref)                                        \
    do {                                                              \
        assert_int_equal((p).regIsGlobal, (ref).regIsGlobal);         \
        assert_int_equal((p).forceFlush, (ref).forceFlush);           \
        assert_memory_equal(&(p).vProps, &(ref).vProps, sizeof((p).vProps)); \
        assert_int_equal((p).maxP2pBytes, (ref).maxP2pBytes);         \
        assert_int_equal((p).maxCollBytes, (ref).maxCollBytes);       \
    } while (0)

static void props_check(int v, int dev)
{
    ncclNetProperties_v11_t ref;

    assert_int_equal(ncclNetPlugin_v11.getProperties(dev, &ref), ncclSuccess);
    assert_non_null(ref.name);
    switch (v) {
    case 6: {
        ncclNetProperties_v6_t p;
        assert_int_equal(ncclNetPlugin_v6.getProperties(dev, &p), ncclSuccess);
        PROPS_COMMON_EQUAL(p, ref);
        break;
    }
    case 7: {
        ncclNetProperties_v7_t p;
        assert_int_equal(ncclNetPlugin_v7.getProperties(dev, &p), ncclSuccess);
        PROPS_COMMON_EQUAL(p, ref);
        PROPS_DEVICE_EQUAL(p, ref);
        break;
    }
    case 8: {
        ncclNetProperties_v8_t p;
        assert_int_equal(ncclNetPlugin_v8.getProperties(dev, &p), ncclSuccess);
        PROPS_COMMON_EQUAL(p, ref);
        PROPS_DEVICE_EQUAL(p, ref);
        assert_int_equal(p.regIsGlobal, ref.regIsGlobal);
        break;
    }
    case 9: {
        ncclNetProperties_v9_t p;
        assert_int_equal(ncclNetPlugin_v9.getProperties(dev, &p), ncclSuccess);
        PROPS_COMMON_EQUAL(p, ref);
        PROPS_DEVICE_EQUAL(p, ref);
        PROPS_V9_EQUAL(p, ref);
        break;
    }
    case 10: {
        ncclNetProperties_v10_t p;
        assert_int_equal(ncclNetPlugin_v10.getProperties(dev, &p), ncclSuccess);
        PROPS_COMMON_EQUAL(p, ref);
        PROPS_DEVICE_EQUAL(p, ref);
        PROPS_V9_EQUAL(p, ref);
        break;
    }
    default:
        fail_msg("no version %d", v);
    }
}

static void test_init_devices_props(void **state)
{
    for (int v = FIRST_VERSION; v <= LAST_VERSION; v++) {
        int ndev = -1;

        assert_int_equal(drv_init(v), ncclSuccess);
        assert_int_equal(drv_init(v), ncclSuccess);     /* idempotent */
        assert_non_null(stp_state_transport());
        assert_string_equal(stp_state_transport()->name, (const char *)*state);
        assert_int_equal(drv_devices(v, &ndev), ncclSuccess);
        assert_true(ndev >= 1);
        for (int dev = 0; dev < ndev; dev++)
            props_check(v, dev);
        stp_compat_fini();
    }
}

static void test_round_trips(void **state)
{
    static const long long one[][1] = { { 0 }, { 1 }, { 4099 }, { (1 << 20) + 3 } };
    static const long long two[2] = { 777, 5 };

    for (int v = FIRST_VERSION; v <= LAST_VERSION; v++) {
        conn_t c;

        assert_int_equal(drv_init(v), ncclSuccess);
        conn_open(&c, v, NCCL_NET_TRAFFIC_CLASS_UNDEF);
        for (size_t k = 0; k < sizeof(one) / sizeof(one[0]); k++)
            conn_xfer(&c, 1, one[k], one[k][0] + 64, (unsigned)(v * 10 + k));
        conn_xfer(&c, 2, two, 1024, (unsigned)v);
        conn_close(&c);
        stp_compat_fini();
    }
}

/* v10's traffic class opens a second v11 context; both connections work side by side. */
static void test_v10_traffic_class(void **state)
{
    static const long long size[1] = { 3000 };
    conn_t plain, classed;

    assert_int_equal(drv_init(10), ncclSuccess);
    conn_open(&plain, 10, NCCL_NET_TRAFFIC_CLASS_UNDEF);
    conn_open(&classed, 10, 106);
    conn_xfer(&classed, 1, size, size[0], 1);
    conn_xfer(&plain, 1, size, size[0], 2);
    conn_close(&classed);
    conn_close(&plain);
}

/*
 * An int size below zero never reaches v11: the call fails, nothing is
 * posted, and the connection still carries the next message unharmed.
 */
static void test_negative_int_sizes_refused(void **state)
{
    static const long long size[1] = { 100 };
    char buf[128];

    for (int v = FIRST_VERSION; v <= 8; v++) {
        long long bad[2] = { 16, -16 };
        void *data[2] = { buf, buf + 64 };
        int tags[2] = { 0, 1 };
        void *mhs[2] = { NULL, NULL };
        void *mh = NULL;
        void *req = NULL;
        conn_t c;

        assert_int_equal(drv_init(v), ncclSuccess);
        conn_open(&c, v, NCCL_NET_TRAFFIC_CLASS_UNDEF);
        assert_int_equal(drv_isend(v, c.send, buf, -1, 0, NULL, &req), ncclInternalError);
        assert_int_equal(drv_isend(v, c.send, buf, INT_MIN, 0, NULL, &req), ncclInternalError);
        assert_int_equal(drv_irecv(v, c.recv, 2, data, bad, tags, mhs, &req), ncclInternalError);
        assert_null(req);
        if (v < 8) {
            assert_int_equal(drv_reg_mr(v, c.send, buf, -4096, &mh), ncclInternalError);
            assert_null(mh);
        }
        conn_xfer(&c, 1, size, size[0], (unsigned)v);
        conn_close(&c);
        stp_compat_fini();
    }
}

/* The device-offload entries of v7+ are safe although v11 leaves them NULL. */
static void test_device_entries(void **state)
{
    void *dptr = (void *)0x99;
    conn_t c;

    assert_int_equal(drv_init(8), ncclSuccess);
    conn_open(&c, 8, NCCL_NET_TRAFFIC_CLASS_UNDEF);
    if (ncclNetPlugin_v11.getDeviceMr != NULL || ncclNetPlugin_v11.irecvConsumed != NULL) {
        conn_close(&c);
        skip();     /* v11 grew device offload: this test no longer applies */
    }
    assert_int_equal(ncclNetPlugin_v8.getDeviceMr(c.recv, NULL, &dptr), ncclSuccess);
    assert_ptr_equal(dptr, (void *)0x99);
    assert_int_equal(ncclNetPlugin_v10.irecvConsumed(c.recv, 1, NULL), ncclSuccess);
    conn_close(&c);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_names_match_v11),
        T(test_init_devices_props),
        T(test_round_trips),
        T(test_v10_traffic_class),
        T(test_negative_int_sizes_refused),
        T(test_device_entries),
    };
    int failed = 0;

    failed += cmocka_run_group_tests_name("nccl_shims_tcp", tests, group_setup_tcp, NULL);
    failed += cmocka_run_group_tests_name("nccl_shims_loop", tests, group_setup_loop, NULL);
    return failed;
}
