/*
 * The v6..v10 adapters against a recording stand-in for ncclNetPlugin_v11.
 *
 * This binary defines its own ncclNetPlugin_v11, so the linker never takes
 * plugin/api/net_v11.o from the internal library (nothing else here refers
 * to it). The stand-in records every argument it receives and returns what
 * the test asks for, which shows exactly what each adapter passes down:
 * contexts and traffic classes, widened sizes, profiler handles, hints,
 * results. tests/unit/test_nccl_shims.c runs the same tables over the real
 * v11 and a real loopback connection.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/api/net_compat.h"

/* ------------------------------------------------------------------ the stand-in */

#define FAKE_MAX_CTX (STP_COMPAT_MAX_CONTEXTS + 4)

static struct {
    /* init */
    int ninit;
    int init_tc[FAKE_MAX_CTX];
    uint64_t init_comm_id[FAKE_MAX_CTX];
    ncclDebugLogger_t init_log;
    ncclProfilerCallback_t init_prof;
    ncclResult_t init_result;           /* returned by the next init */
    char ctx_storage[FAKE_MAX_CTX];     /* contexts handed out: &ctx_storage[i] */
    int nfinalize;
    /* getProperties */
    ncclNetProperties_v11_t props;
    ncclResult_t props_result;
    /* the last call of each other kind */
    void *ctx;
    int dev;
    void *handle;
    ncclNetDeviceHandle_v11_t **dev_comm;
    size_t size;
    void *phandle;
    int n;
    size_t sizes[STP_COMPAT_MAX_RECVS];
    void *phandles[STP_COMPAT_MAX_RECVS];
    void *request_on_entry;
    int ncalls;                         /* calls other than init/finalize/getProperties */
    ncclResult_t result;                /* returned by the other calls */
} fake;

static void fake_reset(void)
{
    stp_compat_fini();
    memset(&fake, 0, sizeof(fake));
}

static ncclResult_t fake_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_v11_t *config,
                              ncclDebugLogger_t log_fn, ncclProfilerCallback_t prof_fn)
{
    ncclResult_t res = fake.init_result;

    assert_non_null(config);
    assert_true(fake.ninit < FAKE_MAX_CTX);
    fake.init_result = ncclSuccess;
    if (res != ncclSuccess)
        return res;
    fake.init_tc[fake.ninit] = config->trafficClass;
    fake.init_comm_id[fake.ninit] = comm_id;
    fake.init_log = log_fn;
    fake.init_prof = prof_fn;
    *ctx = &fake.ctx_storage[fake.ninit++];
    return ncclSuccess;
}

/* The traffic class a context from fake_init was created with. */
static int fake_ctx_tc(void *ctx)
{
    ptrdiff_t i = (char *)ctx - fake.ctx_storage;

    assert_true(i >= 0 && i < fake.ninit);
    return fake.init_tc[i];
}

static ncclResult_t fake_finalize(void *ctx)
{
    fake_ctx_tc(ctx);
    fake.nfinalize++;
    return ncclSuccess;
}

static ncclResult_t fake_devices(int *ndev)
{
    fake.ncalls++;
    *ndev = 3;
    return fake.result;
}

static ncclResult_t fake_props_get(int dev, ncclNetProperties_v11_t *props)
{
    fake.dev = dev;
    if (fake.props_result != ncclSuccess)
        return fake.props_result;
    *props = fake.props;
    return ncclSuccess;
}

static ncclResult_t fake_listen(void *ctx, int dev, void *handle, void **listen_comm)
{
    fake.ncalls++;
    fake.ctx = ctx;
    fake.dev = dev;
    fake.handle = handle;
    *listen_comm = (void *)0x1001;
    return fake.result;
}

static ncclResult_t fake_connect(void *ctx, int dev, void *handle, void **send_comm,
                                 ncclNetDeviceHandle_v11_t **dev_comm)
{
    fake.ncalls++;
    fake.ctx = ctx;
    fake.dev = dev;
    fake.handle = handle;
    fake.dev_comm = dev_comm;
    *send_comm = (void *)0x2002;
    return fake.result;
}

static ncclResult_t fake_accept(void *listen_comm, void **recv_comm,
                                ncclNetDeviceHandle_v11_t **dev_comm)
{
    fake.ncalls++;
    fake.handle = listen_comm;
    fake.dev_comm = dev_comm;
    *recv_comm = (void *)0x3003;
    return fake.result;
}

static ncclResult_t fake_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
    fake.ncalls++;
    fake.handle = comm;
    fake.size = size;
    fake.dev = type;
    *mhandle = data;
    return fake.result;
}

static ncclResult_t fake_reg_mr_dmabuf(void *comm, void *data, size_t size, int type,
                                       uint64_t offset, int fd, void **mhandle)
{
    fake.ncalls++;
    fake.size = size + offset + (size_t)fd;
    *mhandle = data;
    return fake.result;
}

static ncclResult_t fake_dereg_mr(void *comm, void *mhandle)
{
    fake.ncalls++;
    fake.handle = mhandle;
    return fake.result;
}

static ncclResult_t fake_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                               void *phandle, void **request)
{
    fake.ncalls++;
    fake.size = size;
    fake.phandle = phandle;
    fake.request_on_entry = *request;
    *request = (void *)0x4004;
    return fake.result;
}

static ncclResult_t fake_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                               void **mhandles, void **phandles, void **request)
{
    fake.ncalls++;
    fake.n = n;
    for (int i = 0; i < n; i++) {
        fake.sizes[i] = sizes[i];
        fake.phandles[i] = phandles[i];
    }
    fake.request_on_entry = *request;
    *request = (void *)0x5005;
    return fake.result;
}

static ncclResult_t fake_iflush(void *recv_comm, int n, void **data, int *sizes,
                                void **mhandles, void **request)
{
    fake.ncalls++;
    fake.n = n;
    *request = (void *)0x6006;
    return fake.result;
}

static ncclResult_t fake_test(void *request, int *done, int *sizes)
{
    fake.ncalls++;
    fake.handle = request;
    *done = 1;
    return fake.result;
}

static ncclResult_t fake_close(void *comm)
{
    fake.ncalls++;
    fake.handle = comm;
    return fake.result;
}

/* getDeviceMr and irecvConsumed stay NULL, as in a host plugin. */
const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = STP_COMPAT_NET_NAME,
    .init = fake_init,
    .devices = fake_devices,
    .getProperties = fake_props_get,
    .listen = fake_listen,
    .connect = fake_connect,
    .accept = fake_accept,
    .regMr = fake_reg_mr,
    .regMrDmaBuf = fake_reg_mr_dmabuf,
    .deregMr = fake_dereg_mr,
    .isend = fake_isend,
    .irecv = fake_irecv,
    .iflush = fake_iflush,
    .test = fake_test,
    .closeSend = fake_close,
    .closeRecv = fake_close,
    .closeListen = fake_close,
    .finalize = fake_finalize,
};

static void fake_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                        const char *fmt, ...)
{
}

static ncclResult_t fake_profiler(void **e_handle, int type, void *phandle, int64_t plugin_id,
                                  void *ext_data)
{
    return ncclSuccess;
}

/* Every version's init, through its own table. */
static ncclResult_t init_version(int version)
{
    switch (version) {
    case 6: return ncclNetPlugin_v6.init(fake_logger);
    case 7: return ncclNetPlugin_v7.init(fake_logger);
    case 8: return ncclNetPlugin_v8.init(fake_logger);
    case 9: return ncclNetPlugin_v9.init(fake_logger);
    case 10: return ncclNetPlugin_v10.init(fake_logger, fake_profiler);
    }
    fail_msg("no version %d", version);
    return ncclInternalError;
}

static int setup(void **state)
{
    fake_reset();
    return 0;
}

static int teardown(void **state)
{
    fake_reset();
    return 0;
}

/* ------------------------------------------------------------------ init and contexts */

static void test_tables_are_complete(void **state)
{
    assert_string_equal(ncclNetPlugin_v10.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v9.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v8.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v7.name, ncclNetPlugin_v11.name);
    assert_string_equal(ncclNetPlugin_v6.name, ncclNetPlugin_v11.name);

    /* Every entry a version has is set, except makeVDevice (see net_v9.c). */
    const void *const *p;
    size_t i;
#define ALL_SET(table, last)                                                  \
    for (p = (const void *const *)&(table), i = 0;                            \
         i <= offsetof(__typeof__(table), last) / sizeof(void *); i++)        \
        assert_non_null(p[i])
    ALL_SET(ncclNetPlugin_v6, closeListen);
    ALL_SET(ncclNetPlugin_v7, irecvConsumed);
    ALL_SET(ncclNetPlugin_v8, irecvConsumed);
    ALL_SET(ncclNetPlugin_v9, irecvConsumed);
    ALL_SET(ncclNetPlugin_v10, irecvConsumed);
#undef ALL_SET
    assert_null(ncclNetPlugin_v9.makeVDevice);
    assert_null(ncclNetPlugin_v10.makeVDevice);
}

static void test_init_runs_v11_once(void **state)
{
    for (int v = 6; v <= 10; v++)
        assert_int_equal(init_version(v), ncclSuccess);
    assert_int_equal(fake.ninit, 1);
    assert_int_equal(fake.init_tc[0], NCCL_NET_TRAFFIC_CLASS_UNDEF);
    assert_int_equal(fake.init_comm_id[0], 0);
    assert_ptr_equal(fake.init_log, fake_logger);
    assert_null(fake.init_prof);    /* v6 came first, and it has no profiler */

    stp_compat_fini();
    assert_int_equal(fake.nfinalize, 1);
    assert_int_equal(init_version(10), ncclSuccess);
    assert_int_equal(fake.ninit, 2);
    assert_ptr_equal(fake.init_prof, fake_profiler);
}

static void test_init_failure_is_retried(void **state)
{
    fake.init_result = ncclSystemError;
    assert_int_equal(init_version(8), ncclSystemError);
    assert_int_equal(fake.ninit, 0);
    assert_int_equal(init_version(8), ncclSuccess);
    assert_int_equal(fake.ninit, 1);
}

static void test_listen_before_init_fails(void **state)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    void *listen_comm = NULL;
    void *send_comm = NULL;
    ncclNetCommConfig_v10_t config = { .trafficClass = 3 };

    assert_int_equal(ncclNetPlugin_v9.listen(0, handle, &listen_comm), ncclInternalError);
    assert_int_equal(ncclNetPlugin_v10.connect(0, &config, handle, &send_comm, NULL),
                     ncclInternalError);
    assert_int_equal(fake.ncalls, 0);
    assert_int_equal(fake.ninit, 0);
    assert_null(listen_comm);
    assert_null(send_comm);
}

static void test_listen_and_connect_use_the_context(void **state)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;
    void *comm = NULL;

    assert_int_equal(init_version(7), ncclSuccess);
    assert_int_equal(ncclNetPlugin_v7.listen(2, handle, &comm), ncclSuccess);
    assert_ptr_equal(fake.ctx, &fake.ctx_storage[0]);
    assert_int_equal(fake.dev, 2);
    assert_ptr_equal(fake.handle, handle);
    assert_ptr_equal(comm, (void *)0x1001);

    assert_int_equal(ncclNetPlugin_v9.connect(1, handle, &comm, &dev_comm), ncclSuccess);
    assert_ptr_equal(fake.ctx, &fake.ctx_storage[0]);
    assert_int_equal(fake.dev, 1);
    assert_ptr_equal(fake.dev_comm, &dev_comm);
    assert_ptr_equal(comm, (void *)0x2002);

    assert_int_equal(ncclNetPlugin_v8.accept((void *)0x77, &comm, &dev_comm), ncclSuccess);
    assert_ptr_equal(fake.handle, (void *)0x77);
    assert_ptr_equal(fake.dev_comm, &dev_comm);
    assert_ptr_equal(comm, (void *)0x3003);
    assert_int_equal(fake.ninit, 1);
}

static void test_v6_connect_asks_no_offload(void **state)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    void *comm = NULL;

    assert_int_equal(init_version(6), ncclSuccess);
    assert_int_equal(ncclNetPlugin_v6.connect(0, handle, &comm), ncclSuccess);
    assert_non_null(fake.dev_comm);
    assert_ptr_equal(fake.ctx, &fake.ctx_storage[0]);
    assert_int_equal(ncclNetPlugin_v6.accept((void *)0x77, &comm), ncclSuccess);
    assert_non_null(fake.dev_comm);
    assert_ptr_equal(comm, (void *)0x3003);
}

static void test_v10_traffic_class_selects_context(void **state)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;
    ncclNetCommConfig_v10_t tc7 = { .trafficClass = 7 };
    ncclNetCommConfig_v10_t undef = { .trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF };
    void *comm = NULL;

    assert_int_equal(init_version(10), ncclSuccess);
    assert_int_equal(ncclNetPlugin_v10.connect(0, &tc7, handle, &comm, &dev_comm), ncclSuccess);
    assert_int_equal(fake.ninit, 2);
    assert_int_equal(fake_ctx_tc(fake.ctx), 7);
    assert_int_equal(fake.init_comm_id[1], 0);
    assert_ptr_equal(fake.init_log, fake_logger);
    assert_ptr_equal(fake.init_prof, fake_profiler);

    /* The same class again reuses its context. */
    assert_int_equal(ncclNetPlugin_v10.connect(0, &tc7, handle, &comm, &dev_comm), ncclSuccess);
    assert_int_equal(fake.ninit, 2);
    assert_int_equal(fake_ctx_tc(fake.ctx), 7);

    /* Undefined, or no config at all, is the default context. */
    assert_int_equal(ncclNetPlugin_v10.connect(0, &undef, handle, &comm, &dev_comm),
                     ncclSuccess);
    assert_ptr_equal(fake.ctx, &fake.ctx_storage[0]);
    assert_int_equal(ncclNetPlugin_v10.connect(0, NULL, handle, &comm, &dev_comm), ncclSuccess);
    assert_ptr_equal(fake.ctx, &fake.ctx_storage[0]);
    assert_int_equal(ncclNetPlugin_v10.listen(0, handle, &comm), ncclSuccess);
    assert_ptr_equal(fake.ctx, &fake.ctx_storage[0]);
    assert_int_equal(fake.ninit, 2);

    stp_compat_fini();
    assert_int_equal(fake.nfinalize, 2);
}

static void test_v10_traffic_classes_are_bounded(void **state)
{
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;
    ncclNetCommConfig_v10_t config;
    void *comm = NULL;
    int tc;

    assert_int_equal(init_version(10), ncclSuccess);
    for (tc = 0; tc < STP_COMPAT_MAX_CONTEXTS - 1; tc++) {
        config.trafficClass = tc;
        assert_int_equal(ncclNetPlugin_v10.connect(0, &config, handle, &comm, &dev_comm),
                         ncclSuccess);
        assert_int_equal(fake_ctx_tc(fake.ctx), tc);
    }
    fake.ncalls = 0;
    config.trafficClass = tc;
    assert_int_equal(ncclNetPlugin_v10.connect(0, &config, handle, &comm, &dev_comm),
                     ncclInvalidUsage);
    assert_int_equal(fake.ncalls, 0);
    assert_int_equal(fake.ninit, STP_COMPAT_MAX_CONTEXTS);

    /* Known classes still work. */
    config.trafficClass = 3;
    assert_int_equal(ncclNetPlugin_v10.connect(0, &config, handle, &comm, &dev_comm),
                     ncclSuccess);
    assert_int_equal(fake_ctx_tc(fake.ctx), 3);
    stp_compat_fini();
    assert_int_equal(fake.nfinalize, STP_COMPAT_MAX_CONTEXTS);
}

/* ------------------------------------------------------------------ properties */

static void fake_props_fill(void)
{
    static char name[] = "fake0";
    static char pci[] = "/sys/devices/pci0000:00/0000:00:03.0";

    fake.props = (ncclNetProperties_v11_t){
        .name = name, .pciPath = pci, .guid = 0x1122334455667788ull,
        .ptrSupport = NCCL_PTR_HOST | NCCL_PTR_DMABUF, .regIsGlobal = 1, .forceFlush = 1,
        .speed = 100000, .port = 3, .latency = 2.5f, .maxComms = 65536, .maxRecvs = 8,
        .netDeviceType = NCCL_NET_DEVICE_HOST, .netDeviceVersion = 0x5a,
        .vProps = { .ndevs = 2, .devs = { 4, 9 } },
        .maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES, .maxCollBytes = MAX_COLLNET_SIZE + 3,
        .maxMultiRequestSize = 4,
    };
}

/* Each version's properties, with guard bytes behind to catch an overlong write. */
#define GUARD 16
#define PROPS_CHECK_COMMON(p)                                  \
    do {                                                       \
        assert_ptr_equal((p).name, fake.props.name);           \
        assert_ptr_equal((p).pciPath, fake.props.pciPath);     \
        assert_int_equal((p).guid, fake.props.guid);           \
        assert_int_equal((p).ptrSupport, fake.props.ptrSupport); \
        assert_int_equal((p).speed, fake.props.speed);         \
        assert_int_equal((p).port, fake.props.port);           \
        assert_true((p).latency == fake.props.latency);        \
        assert_int_equal((p).maxComms, fake.props.maxComms);   \
        assert_int_equal((p).maxRecvs, fake.props.maxRecvs);   \
    } while (0)
#define PROPS_CHECK_DEVICE(p)                                                  \
    do {                                                                       \
        assert_int_equal((p).netDeviceType, fake.props.netDeviceType);         \
        assert_int_equal((p).netDeviceVersion, fake.props.netDeviceVersion);   \
    } while (0)
#define PROPS_CHECK_V9(p)                                                      \
    do {                                                                       \
        assert_int_equal((p).regIsGlobal, fake.props.regIsGlobal);             \
        assert_int_equal((p).forceFlush, fake.props.forceFlush);               \
        assert_int_equal((p).vProps.ndevs, 2);                                 \
        assert_int_equal((p).vProps.devs[0], 4);                               \
        assert_int_equal((p).vProps.devs[1], 9);                               \
        assert_int_equal((p).maxP2pBytes, fake.props.maxP2pBytes);             \
        assert_int_equal((p).maxCollBytes, fake.props.maxCollBytes);           \
    } while (0)
#define PROPS_GET(version, var)                                                \
    struct { ncclNetProperties_v##version##_t p; unsigned char guard[GUARD]; } var; \
    memset(&var, 0xa5, sizeof(var));                                           \
    assert_int_equal(ncclNetPlugin_v##version.getProperties(1, &var.p), ncclSuccess); \
    assert_int_equal(fake.dev, 1);                                             \
    for (int g = 0; g < GUARD; g++)                                            \
        assert_int_equal(var.guard[g], 0xa5)

static void test_props_convert_every_version(void **state)
{
    fake_props_fill();
    assert_int_equal(init_version(9), ncclSuccess);
    {
        PROPS_GET(6, v6);
        PROPS_CHECK_COMMON(v6.p);
    }
    {
        PROPS_GET(7, v7);
        PROPS_CHECK_COMMON(v7.p);
        PROPS_CHECK_DEVICE(v7.p);
    }
    {
        PROPS_GET(8, v8);
        PROPS_CHECK_COMMON(v8.p);
        PROPS_CHECK_DEVICE(v8.p);
        assert_int_equal(v8.p.regIsGlobal, 1);
    }
    {
        PROPS_GET(9, v9);
        PROPS_CHECK_COMMON(v9.p);
        PROPS_CHECK_DEVICE(v9.p);
        PROPS_CHECK_V9(v9.p);
    }
    {
        PROPS_GET(10, v10);
        PROPS_CHECK_COMMON(v10.p);
        PROPS_CHECK_DEVICE(v10.p);
        PROPS_CHECK_V9(v10.p);
    }
}

/* Padding the copy does not fill is zeroed, not left as it was. */
static void test_props_padding_is_zeroed(void **state)
{
    ncclNetProperties_v9_t v9;
    const unsigned char *bytes = (const unsigned char *)&v9;
    size_t hole = offsetof(ncclNetProperties_v9_t, vProps) + sizeof(v9.vProps);

    fake_props_fill();
    memset(&v9, 0xa5, sizeof(v9));
    assert_int_equal(ncclNetPlugin_v9.getProperties(0, &v9), ncclSuccess);
    for (size_t i = hole; i < offsetof(ncclNetProperties_v9_t, maxP2pBytes); i++)
        assert_int_equal(bytes[i], 0);
}

static void test_props_errors(void **state)
{
    ncclNetProperties_v6_t v6;
    ncclNetProperties_v7_t v7;
    ncclNetProperties_v10_t v10;

    fake_props_fill();
    assert_int_equal(ncclNetPlugin_v8.getProperties(0, NULL), ncclInternalError);
    assert_int_equal(ncclNetPlugin_v10.getProperties(0, NULL), ncclInternalError);

    /* v11's error comes back unchanged, and the output is not touched. */
    fake.props_result = ncclSystemError;
    memset(&v10, 0xa5, sizeof(v10));
    assert_int_equal(ncclNetPlugin_v10.getProperties(0, &v10), ncclSystemError);
    assert_int_equal(v10.speed, (int)0xa5a5a5a5);

    /* An offloaded device cannot be shown to v6, and can to v7. */
    fake.props_result = ncclSuccess;
    fake.props.netDeviceType = NCCL_NET_DEVICE_UNPACK;
    fake.props.netDeviceVersion = NCCL_NET_DEVICE_UNPACK_VERSION;
    memset(&v6, 0xa5, sizeof(v6));
    assert_int_equal(ncclNetPlugin_v6.getProperties(0, &v6), ncclInternalError);
    assert_int_equal(v6.speed, (int)0xa5a5a5a5);
    assert_int_equal(ncclNetPlugin_v7.getProperties(0, &v7), ncclSuccess);
    assert_int_equal(v7.netDeviceType, NCCL_NET_DEVICE_UNPACK);
    assert_int_equal(v7.netDeviceVersion, NCCL_NET_DEVICE_UNPACK_VERSION);
}

/* ------------------------------------------------------------------ sizes */

typedef ncclResult_t (*isend_int_fn_t)(void *, void *, int, int, void *, void **);
typedef ncclResult_t (*irecv_int_fn_t)(void *, int, void **, int *, int *, void **, void **);
typedef ncclResult_t (*reg_mr_int_fn_t)(void *, void *, int, int, void **);

static void test_int_sizes_widen_and_refuse_negatives(void **state)
{
    const isend_int_fn_t sends[] = {
        ncclNetPlugin_v6.isend, ncclNetPlugin_v7.isend, ncclNetPlugin_v8.isend,
    };
    const irecv_int_fn_t recvs[] = {
        ncclNetPlugin_v6.irecv, ncclNetPlugin_v7.irecv, ncclNetPlugin_v8.irecv,
    };
    char buf[8];
    void *data[3] = { buf, buf, buf };
    int tags[3] = { 0, 1, 2 };
    void *mhs[3] = { NULL, NULL, NULL };

    for (size_t v = 0; v < 3; v++) {
        void *req = NULL;

        fake.ncalls = 0;
        assert_int_equal(sends[v](NULL, buf, 1234, 0, NULL, &req), ncclSuccess);
        assert_int_equal(fake.size, 1234);
        assert_null(fake.phandle);
        assert_ptr_equal(req, (void *)0x4004);
        assert_int_equal(sends[v](NULL, buf, INT_MAX, 0, NULL, &req), ncclSuccess);
        assert_int_equal(fake.size, (size_t)INT_MAX);
        assert_int_equal(sends[v](NULL, buf, 0, 0, NULL, &req), ncclSuccess);
        assert_int_equal(fake.size, 0);
        assert_int_equal(fake.ncalls, 3);

        req = NULL;
        assert_int_equal(sends[v](NULL, buf, -1, 0, NULL, &req), ncclInternalError);
        assert_int_equal(sends[v](NULL, buf, INT_MIN, 0, NULL, &req), ncclInternalError);
        assert_null(req);
        assert_int_equal(fake.ncalls, 3);

        int sizes[3] = { 0, 5, INT_MAX };
        assert_int_equal(recvs[v](NULL, 3, data, sizes, tags, mhs, &req), ncclSuccess);
        assert_int_equal(fake.n, 3);
        assert_int_equal(fake.sizes[0], 0);
        assert_int_equal(fake.sizes[1], 5);
        assert_int_equal(fake.sizes[2], (size_t)INT_MAX);
        for (int i = 0; i < 3; i++)
            assert_null(fake.phandles[i]);
        assert_ptr_equal(req, (void *)0x5005);
        assert_int_equal(fake.ncalls, 4);

        req = NULL;
        sizes[1] = -5;
        assert_int_equal(recvs[v](NULL, 3, data, sizes, tags, mhs, &req), ncclInternalError);
        assert_int_equal(recvs[v](NULL, 1, data, NULL, tags, mhs, &req), ncclInternalError);
        assert_null(req);
        assert_int_equal(fake.ncalls, 4);
    }
}

static void test_recv_count_is_checked(void **state)
{
    static char buf[STP_COMPAT_MAX_RECVS + 1];
    void *data[STP_COMPAT_MAX_RECVS + 1];
    int isizes[STP_COMPAT_MAX_RECVS + 1];
    size_t sizes[STP_COMPAT_MAX_RECVS + 1];
    int tags[STP_COMPAT_MAX_RECVS + 1];
    void *mhs[STP_COMPAT_MAX_RECVS + 1];
    void *req = NULL;

    for (int i = 0; i <= STP_COMPAT_MAX_RECVS; i++) {
        data[i] = &buf[i];
        isizes[i] = 1;
        sizes[i] = 1;
        tags[i] = i;
        mhs[i] = NULL;
    }
    assert_int_equal(ncclNetPlugin_v8.irecv(NULL, 0, data, isizes, tags, mhs, &req),
                     ncclInternalError);
    assert_int_equal(ncclNetPlugin_v8.irecv(NULL, -1, data, isizes, tags, mhs, &req),
                     ncclInternalError);
    assert_int_equal(ncclNetPlugin_v8.irecv(NULL, STP_COMPAT_MAX_RECVS + 1, data, isizes, tags,
                                            mhs, &req), ncclInternalError);
    assert_int_equal(ncclNetPlugin_v9.irecv(NULL, 0, data, sizes, tags, mhs, &req),
                     ncclInternalError);
    assert_int_equal(ncclNetPlugin_v9.irecv(NULL, STP_COMPAT_MAX_RECVS + 1, data, sizes, tags,
                                            mhs, &req), ncclInternalError);
    assert_int_equal(fake.ncalls, 0);
    assert_null(req);

    /* The largest count goes through whole. */
    assert_int_equal(ncclNetPlugin_v9.irecv(NULL, STP_COMPAT_MAX_RECVS, data, sizes, tags, mhs,
                                            &req), ncclSuccess);
    assert_int_equal(fake.n, STP_COMPAT_MAX_RECVS);
    assert_int_equal(ncclNetPlugin_v7.irecv(NULL, STP_COMPAT_MAX_RECVS, data, isizes, tags,
                                            mhs, &req), ncclSuccess);
    assert_int_equal(fake.n, STP_COMPAT_MAX_RECVS);
    for (int i = 0; i < STP_COMPAT_MAX_RECVS; i++) {
        assert_int_equal(fake.sizes[i], 1);
        assert_null(fake.phandles[i]);
    }
}

static void test_reg_mr_sizes(void **state)
{
    const reg_mr_int_fn_t regs[] = { ncclNetPlugin_v6.regMr, ncclNetPlugin_v7.regMr };
    char buf[8];
    void *mh = NULL;

    for (size_t v = 0; v < 2; v++) {
        assert_int_equal(regs[v]((void *)0x9, buf, 4096, NCCL_PTR_HOST, &mh), ncclSuccess);
        assert_int_equal(fake.size, 4096);
        assert_int_equal(fake.dev, NCCL_PTR_HOST);
        assert_ptr_equal(fake.handle, (void *)0x9);
        assert_ptr_equal(mh, buf);
        mh = NULL;
        assert_int_equal(regs[v]((void *)0x9, buf, -4096, NCCL_PTR_HOST, &mh),
                         ncclInternalError);
        assert_null(mh);
    }
    /* From v8 on the size is a size_t: large sizes pass whole, never truncated. */
    const size_t big = ((size_t)1 << 33) + 7;
    assert_int_equal(ncclNetPlugin_v8.regMr(NULL, buf, big, NCCL_PTR_HOST, &mh), ncclSuccess);
    assert_int_equal(fake.size, big);
    assert_int_equal(ncclNetPlugin_v10.regMr(NULL, buf, big, NCCL_PTR_CUDA, &mh), ncclSuccess);
    assert_int_equal(fake.size, big);
    assert_int_equal(fake.dev, NCCL_PTR_CUDA);
    assert_int_equal(ncclNetPlugin_v6.regMrDmaBuf(NULL, buf, big, NCCL_PTR_CUDA, 100, 3, &mh),
                     ncclSuccess);
    assert_int_equal(fake.size, big + 100 + 3);
}

/* ------------------------------------------------------------------ data path */

static void test_profiler_handles(void **state)
{
    char buf[8];
    void *data[2] = { buf, buf };
    size_t sizes[2] = { 8, (size_t)1 << 32 };
    int tags[2] = { 0, 1 };
    void *mhs[2] = { NULL, NULL };
    void *phandles[2] = { (void *)0xa, (void *)0xb };
    void *req = NULL;

    /* v10 forwards NCCL's profiler handles... */
    assert_int_equal(ncclNetPlugin_v10.isend(NULL, buf, (size_t)1 << 32, 0, NULL, (void *)0xc,
                                             &req), ncclSuccess);
    assert_int_equal(fake.size, (size_t)1 << 32);
    assert_ptr_equal(fake.phandle, (void *)0xc);
    assert_int_equal(ncclNetPlugin_v10.irecv(NULL, 2, data, sizes, tags, mhs, phandles, &req),
                     ncclSuccess);
    assert_ptr_equal(fake.phandles[0], (void *)0xa);
    assert_ptr_equal(fake.phandles[1], (void *)0xb);
    assert_int_equal(fake.sizes[1], (size_t)1 << 32);

    /* ...v9 has none, and v11 gets NULLs. */
    assert_int_equal(ncclNetPlugin_v9.isend(NULL, buf, 8, 0, NULL, &req), ncclSuccess);
    assert_null(fake.phandle);
    assert_int_equal(ncclNetPlugin_v9.irecv(NULL, 2, data, sizes, tags, mhs, &req), ncclSuccess);
    assert_null(fake.phandles[0]);
    assert_null(fake.phandles[1]);
    assert_int_equal(fake.sizes[1], (size_t)1 << 32);
}

static void test_recv_hint_reaches_v11(void **state)
{
    char buf[8];
    void *data[1] = { buf };
    int isize = 8;
    size_t size = 8;
    int tag = 0;
    void *mh = NULL;
    void *req;

    req = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION;
    assert_int_equal(ncclNetPlugin_v8.irecv(NULL, 1, data, &isize, &tag, &mh, &req), ncclSuccess);
    assert_ptr_equal(fake.request_on_entry, (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION);
    assert_ptr_equal(req, (void *)0x5005);

    req = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION;
    assert_int_equal(ncclNetPlugin_v9.irecv(NULL, 1, data, &size, &tag, &mh, &req), ncclSuccess);
    assert_ptr_equal(fake.request_on_entry, (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION);
    assert_ptr_equal(req, (void *)0x5005);
}

/* Results of v11 come back unchanged through every pass-through entry. */
static void test_results_pass_through(void **state)
{
    int done = 0;
    int ndev = 0;
    void *req = NULL;
    int isize = 4;

    fake.result = ncclRemoteError;
    assert_int_equal(ncclNetPlugin_v6.test((void *)0x42, &done, NULL), ncclRemoteError);
    assert_ptr_equal(fake.handle, (void *)0x42);
    assert_int_equal(done, 1);
    assert_int_equal(ncclNetPlugin_v7.devices(&ndev), ncclRemoteError);
    assert_int_equal(ndev, 3);
    assert_int_equal(ncclNetPlugin_v8.iflush(NULL, 1, NULL, &isize, NULL, &req),
                     ncclRemoteError);
    assert_ptr_equal(req, (void *)0x6006);
    assert_int_equal(ncclNetPlugin_v9.closeSend((void *)0x51), ncclRemoteError);
    assert_ptr_equal(fake.handle, (void *)0x51);
    assert_int_equal(ncclNetPlugin_v10.closeRecv((void *)0x52), ncclRemoteError);
    assert_ptr_equal(fake.handle, (void *)0x52);
    assert_int_equal(ncclNetPlugin_v6.closeListen((void *)0x53), ncclRemoteError);
    assert_ptr_equal(fake.handle, (void *)0x53);
    assert_int_equal(ncclNetPlugin_v7.deregMr(NULL, (void *)0x54), ncclRemoteError);
    assert_ptr_equal(fake.handle, (void *)0x54);
    assert_int_equal(fake.ncalls, 7);
}

/* v11 has no getDeviceMr / irecvConsumed here: the adapters act as if NCCL skipped them. */
static void test_device_entries_are_null_safe(void **state)
{
    void *dptr = (void *)0x99;

    assert_null(ncclNetPlugin_v11.getDeviceMr);
    assert_null(ncclNetPlugin_v11.irecvConsumed);
    assert_int_equal(ncclNetPlugin_v7.getDeviceMr(NULL, NULL, &dptr), ncclSuccess);
    assert_ptr_equal(dptr, (void *)0x99);
    assert_int_equal(ncclNetPlugin_v10.getDeviceMr(NULL, NULL, &dptr), ncclSuccess);
    assert_int_equal(ncclNetPlugin_v8.irecvConsumed(NULL, 1, NULL), ncclSuccess);
    assert_int_equal(ncclNetPlugin_v10.irecvConsumed(NULL, 1, NULL), ncclSuccess);
    assert_int_equal(fake.ncalls, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tables_are_complete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_runs_v11_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_failure_is_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listen_before_init_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listen_and_connect_use_the_context, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_v6_connect_asks_no_offload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v10_traffic_class_selects_context, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_v10_traffic_classes_are_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_props_convert_every_version, setup, teardown),
        cmocka_unit_test_setup_teardown(test_props_padding_is_zeroed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_props_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_int_sizes_widen_and_refuse_negatives, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_recv_count_is_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reg_mr_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profiler_handles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recv_hint_reaches_v11, setup, teardown),
        cmocka_unit_test_setup_teardown(test_results_pass_through, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_entries_are_null_safe, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
