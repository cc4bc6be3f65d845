/*
 * The v6..v10 adapters against a recording stand-in for ncclNetPlugin_v11
 * (fake_net_v11.h): contexts and traffic classes, int sizes, profiler
 * handles, hints and results. Properties: test_nccl_shims_props.c.
 */
#include <pthread.h>

#include "fake_net_v11.h"

/* ------------------------------------------------------------------ init and contexts */

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

/*
 * Threads racing through init and the context lookup connect makes: one v11
 * init, one context per class. (The stand-in's listen/connect record without
 * a lock, so the race goes through stp_compat_ctx_get directly.)
 */
static void *init_racer(void *arg)
{
    int id = (int)(intptr_t)arg;
    void *ctx = NULL;

    for (int i = 0; i < 200; i++) {
        if (init_version(FIRST_VERSION + (id + i) % 5) != ncclSuccess)
            return (void *)1;
        if (stp_compat_ctx_get(id % 2, &ctx) != ncclSuccess || ctx == NULL)
            return (void *)1;
    }
    return NULL;
}

static void test_init_is_thread_safe(void **state)
{
    pthread_t threads[4];
    void *ret;

    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, init_racer, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(threads[i], &ret), 0);
        assert_null(ret);
    }
    /* The default context, then classes 0 and 1, whichever came first. */
    assert_int_equal(fake.ninit, 3);
    assert_int_equal(fake.init_tc[0], NCCL_NET_TRAFFIC_CLASS_UNDEF);
    assert_int_equal(fake.init_tc[1] + fake.init_tc[2], 1);
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
                     ncclSystemError);
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
        cmocka_unit_test_setup_teardown(test_init_runs_v11_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_failure_is_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_is_thread_safe, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listen_before_init_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listen_and_connect_use_the_context, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_v6_connect_asks_no_offload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v10_traffic_class_selects_context, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_v10_traffic_classes_are_bounded, setup, teardown),
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
