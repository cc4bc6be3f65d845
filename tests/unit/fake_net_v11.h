/*
 * A recording stand-in for ncclNetPlugin_v11, shared by the tests of the
 * v6..v10 adapters (test_nccl_shims_fwd.c, test_nccl_shims_props.c).
 *
 * Include it in exactly one file of a test binary: it defines
 * ncclNetPlugin_v11, so the linker never takes plugin/net_v11.o from the
 * internal library (nothing else in these binaries refers to it). The
 * stand-in records every argument it receives and returns what the test
 * asks for, which shows exactly what each adapter passes down: contexts and
 * traffic classes, widened sizes, profiler handles, hints, results.
 * tests/unit/test_nccl_shims.c runs the same tables over the real v11.
 */
#ifndef STRATA_TEST_FAKE_NET_V11_H
#define STRATA_TEST_FAKE_NET_V11_H

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plugin/net_compat.h"

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
ncclNet_v11_t ncclNetPlugin_v11 = {   /* writable, as the plugin's (net_compat.h) */
    .name = STP_PLUGIN_NAME,
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

#define FIRST_VERSION 6

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

#endif /* STRATA_TEST_FAKE_NET_V11_H */
