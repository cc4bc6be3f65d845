/*
 * The plugin's life as NCCL 2.28 leads it, inside one process: the exported
 * symbols, init once per communicator with distinct contexts, finalize(NULL)
 * and finalize after a failed init, devices after a full finalize and a new
 * init, dlclose and dlopen again, the properties NCCL reads, a refused
 * NCCL_PTR_CUDA registration, and irecv overwriting NCCL's preset
 * *request = 0x1. Connections here are loopback ones (both ends in this
 * process, as NCCL's GDR probe makes).
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>

#include "func_common.h"

#define V11T(fix) ((const ncclNet_v11_t *)stb_plugin_table((fix)->net))

/* The ncclNet versions the plugin exports (plugin/net_v6.c .. net_v11.c). */
#define LIFE_OLDEST_EXPORT 6
#define LIFE_NEWEST_EXPORT 11

static void life_symbols(void **state)
{
    void *dl = dlopen(STRATA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    static const char *const hidden[] = {
        "stt_registry_select", "stt_loop_ops", "stu_log_emit", "stu_param_int",
        "stp_status_to_nccl", "strata_status_str",
    };

    assert_non_null(dl);
    for (int v = LIFE_OLDEST_EXPORT; v <= LIFE_NEWEST_EXPORT; v++) {
        char sym[32];
        snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
        const char *const *table = dlsym(dl, sym);
        if (table == NULL)
            fail_msg("%s is not exported", sym);
        assert_string_equal(*table, "Strata");
        /* NCCL treats any prefix of "STATIC_PLUGIN" as "the program itself". */
        assert_true(strncasecmp("STATIC_PLUGIN", *table, strlen(*table)) != 0);
    }
    /* NCCL 2.28.9 probes no older version: a v5 export would only mislead. */
    assert_null(dlsym(dl, "ncclNetPlugin_v5"));
    for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
        if (dlsym(dl, hidden[i]) != NULL)
            fail_msg("internal symbol %s is exported", hidden[i]);

    const ncclNet_v11_t *t = dlsym(dl, "ncclNetPlugin_v11");
    /* Members NCCL calls without a NULL check. */
    assert_non_null(t->init);
    assert_non_null(t->devices);
    assert_non_null(t->getProperties);
    assert_non_null(t->listen);
    assert_non_null(t->connect);
    assert_non_null(t->accept);
    assert_non_null(t->regMr);
    assert_non_null(t->regMrDmaBuf);
    assert_non_null(t->deregMr);
    assert_non_null(t->isend);
    assert_non_null(t->irecv);
    assert_non_null(t->iflush);
    assert_non_null(t->test);
    assert_non_null(t->closeSend);
    assert_non_null(t->closeRecv);
    assert_non_null(t->closeListen);
    assert_non_null(t->finalize);
    dlclose(dl);
}

/* Each communicator's init returns its own context; finalizing one leaves the other working. */
static void life_init_per_comm(void **state)
{
    func_fix_t *fix = *state;
    ncclNetCommConfig_v11_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
    void *ctx2 = NULL, *ctx3 = NULL, *send, *recv;
    int ndev = 0;

    assert_non_null(stb_plugin_ctx(fix->net));
    assert_nccl_ok(V11T(fix)->init(&ctx2, 0x2222, &cfg, NULL, NULL));
    assert_nccl_ok(V11T(fix)->init(&ctx3, 0x3333, NULL, NULL, NULL));
    assert_non_null(ctx2);
    assert_non_null(ctx3);
    assert_ptr_not_equal(ctx2, stb_plugin_ctx(fix->net));
    assert_ptr_not_equal(ctx3, stb_plugin_ctx(fix->net));
    assert_ptr_not_equal(ctx2, ctx3);
    assert_nccl_ok(stb_plugin_devices(fix->net, &ndev));
    assert_int_equal(ndev, fix->ndev);
    assert_nccl_ok(V11T(fix)->finalize(ctx2));
    func_loopback(fix, &send, &recv);
    func_exchange(fix, send, recv, 1000, 1);
    assert_nccl_ok(stb_plugin_close_send(fix->net, send));
    assert_nccl_ok(stb_plugin_close_recv(fix->net, recv));
    assert_nccl_ok(V11T(fix)->finalize(ctx3));
}

/* finalize(NULL) is harmless (NCCL calls finalize without checking). */
static void life_finalize_null(void **state)
{
    func_fix_t *fix = *state;
    void *send, *recv;

    assert_nccl_ok(V11T(fix)->finalize(NULL));
    func_loopback(fix, &send, &recv);
    func_exchange(fix, send, recv, 10, 2);
    assert_nccl_ok(stb_plugin_close_send(fix->net, send));
    assert_nccl_ok(stb_plugin_close_recv(fix->net, recv));
}

/*
 * NCCL 2.28.9 calls finalize(comm->netContext) even when init failed. Make
 * init fail (no such transport), finalize what it left, then init again.
 */
static void life_failed_init(void **state)
{
    func_fix_t fix;
    char why[256];
    int fds = sts_fd_count(), ndev = 0;
    void *ctx = NULL;

    assert_int_equal(stb_plugin_load(NULL, 11, 0, &fix.net, why, sizeof(why)), STRATA_OK);
    setenv("STRATA_TRANSPORT", "no-such-transport", 1);
    ncclResult_t res = V11T(&fix)->init(&ctx, 0x4444, NULL, NULL, NULL);
    unsetenv("STRATA_TRANSPORT");
    if (res == ncclSuccess)
        fail_msg("init succeeded with STRATA_TRANSPORT=no-such-transport");
    assert_nccl_ok(V11T(&fix)->finalize(ctx));
    assert_nccl_ok(V11T(&fix)->finalize(ctx));   /* whatever it left: NULL, harmless twice */
    assert_null(ctx);

    assert_nccl_ok(V11T(&fix)->init(&ctx, 0x4445, NULL, NULL, NULL));
    assert_non_null(ctx);
    assert_nccl_ok(V11T(&fix)->devices(&ndev));
    assert_true(ndev >= 1);
    assert_nccl_ok(V11T(&fix)->finalize(ctx));
    stb_plugin_unload(fix.net);
    assert_int_equal(sts_fd_count(), fds);
}

/* After the last finalize, a new init discovers the same devices and works. */
static void life_reinit(void **state)
{
    func_fix_t *fix = *state;
    stb_plugin_props_t props;
    void *send, *recv;

    for (int round = 0; round < 3; round++) {
        int ndev = 0;
        assert_nccl_ok(stb_plugin_finalize(fix->net));
        /* Everything was released: the next init selects a transport again. */
        setenv("STRATA_TRANSPORT", "no-such-transport", 1);
        ncclResult_t res = stb_plugin_init(fix->net, 0x5550);
        unsetenv("STRATA_TRANSPORT");
        if (res == ncclSuccess)
            fail_msg("init after the last finalize kept the old transport (state not released)");
        assert_nccl_ok(stb_plugin_finalize(fix->net));
        assert_nccl_ok(stb_plugin_init(fix->net, 0x5555 + (uint64_t)round));
        assert_nccl_ok(stb_plugin_devices(fix->net, &ndev));
        assert_int_equal(ndev, fix->ndev);
        assert_nccl_ok(stb_plugin_props(fix->net, 0, &props));
        assert_string_equal(props.name, fix->props.name);
        func_loopback(fix, &send, &recv);
        func_exchange(fix, send, recv, 300000, (uint32_t)round);
        assert_nccl_ok(stb_plugin_close_send(fix->net, send));
        assert_nccl_ok(stb_plugin_close_recv(fix->net, recv));
    }
}

/* NCCL unloads the library at refcount 0 and may load it again: all must still work. */
static void life_dlclose_reopen(void **state)
{
    int fds = sts_fd_count();

    for (int round = 0; round < 3; round++) {
        func_fix_t fix;
        void *send, *recv;
        assert_int_equal(func_open(&fix, 11), 0);
        func_loopback(&fix, &send, &recv);
        func_exchange(&fix, send, recv, 1 << 20, (uint32_t)round);
        assert_nccl_ok(stb_plugin_close_send(fix.net, send));
        assert_nccl_ok(stb_plugin_close_recv(fix.net, recv));
        assert_nccl_ok(stb_plugin_finalize(fix.net));
        stb_plugin_unload(fix.net);
        void *still = dlopen(STRATA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (still != NULL) {
            print_message("  note: the plugin stayed mapped after dlclose (round %d)\n", round);
            dlclose(still);
        }
        assert_int_equal(sts_fd_count(), fds);
    }
}

static void life_properties(void **state)
{
    func_fix_t *fix = *state;

    for (int dev = 0; dev < fix->ndev; dev++) {
        ncclNetProperties_v11_t p;
        memset(&p, 0x5a, sizeof(p));
        assert_nccl_ok(V11T(fix)->getProperties(dev, &p));
        assert_non_null(p.name);
        assert_true(p.name[0] != '\0');
        assert_true(p.ptrSupport & NCCL_PTR_HOST);
        assert_true(p.speed > 0);
        assert_in_range(p.maxRecvs, 1, STB_PLUGIN_MAX_RECVS);
        assert_true(p.maxComms > 0);
        assert_true(p.latency >= 0.0f);
        assert_int_equal(p.netDeviceType, NCCL_NET_DEVICE_HOST);
        assert_int_equal(p.vProps.ndevs, 1);
        assert_int_equal(p.vProps.devs[0], dev);
        assert_true(p.maxP2pBytes > 0);
        assert_true(p.maxCollBytes > 0);
        assert_true(p.maxMultiRequestSize >= 1);
        assert_true(p.regIsGlobal == 0 || p.regIsGlobal == 1);
        assert_true(p.forceFlush == 0 || p.forceFlush == 1);
    }
    ncclNetProperties_v11_t p;
    assert_true(V11T(fix)->getProperties(fix->ndev, &p) != ncclSuccess);
    assert_true(V11T(fix)->getProperties(-1, &p) != ncclSuccess);
}

/* GPU memory is refused cleanly when not advertised, and logged through NCCL's logger. */
static void life_reg_cuda_refused(void **state)
{
    func_fix_t *fix = *state;
    static char mem[4096];
    void *send, *recv, *mh = NULL;
    int warnings = stb_plugin_warnings();

    if (fix->props.ptr_support & NCCL_PTR_CUDA)
        skip();
    func_loopback(fix, &send, &recv);
    assert_true(V11T(fix)->regMr(send, mem, sizeof(mem), NCCL_PTR_CUDA, &mh) != ncclSuccess);
    assert_true(V11T(fix)->regMr(recv, mem, sizeof(mem), NCCL_PTR_CUDA, &mh) != ncclSuccess);
    if (!(fix->props.ptr_support & NCCL_PTR_DMABUF))
        assert_true(V11T(fix)->regMrDmaBuf(recv, mem, sizeof(mem), NCCL_PTR_DMABUF, 0, -1,
                                           &mh) != ncclSuccess);
    assert_true(stb_plugin_warnings() > warnings);
    func_exchange(fix, send, recv, 4096, 3);
    assert_nccl_ok(stb_plugin_close_send(fix->net, send));
    assert_nccl_ok(stb_plugin_close_recv(fix->net, recv));
}

/*
 * NCCL presets *request = (void *)0x1 before some irecvs; the plugin must
 * always overwrite it, with a request or with NULL ("again"). Receives are
 * posted until the plugin runs out of slots, so both answers are seen.
 */
static void life_irecv_preset_request(void **state)
{
    enum { N = 1024 };
    func_fix_t *fix = *state;
    sts_net_req_t *reqs = calloc(2 * N, sizeof(*reqs));
    sts_net_buf_t rb, sb;
    void *send, *recv;
    int posted = 0, tag = 0, refused = 0;
    size_t size = 64;

    assert_non_null(reqs);
    func_loopback(fix, &send, &recv);
    func_buf_get(fix, &rb, recv, size * N);
    func_buf_get(fix, &sb, send, size * N);
    while (posted < N && !refused) {
        void *req = (void *)0x1;
        void *data = rb.data + size * (size_t)posted;
        assert_nccl_ok(V11T(fix)->irecv(recv, 1, &data, &size, &tag, &rb.mh, NULL, &req));
        if (req == (void *)0x1)
            fail_msg("irecv %d left NCCL's preset request 0x1 in place", posted);
        if (req == NULL)
            refused = 1;
        else
            reqs[posted++] = (sts_net_req_t){.req = req, .result = ncclInProgress};
    }
    assert_true(posted >= 32);
    if (!refused)
        print_message("  note: %d receives posted without an \"again\" answer\n", posted);
    for (int i = 0; i < posted; i++) {
        sts_pattern_fill(sb.data + size * (size_t)i, size, (uint32_t)i);
        reqs[posted + i] = (sts_net_req_t){.result = ncclInProgress};
        assert_nccl_ok(sts_net_isend_retry(fix->net, send, sb.data + size * (size_t)i, size,
                                           tag, sb.mh, reqs, posted + i,
                                           sts_deadline(PEER_TIMEOUT_S), &reqs[posted + i].req));
    }
    if (sts_net_wait_all(fix->net, reqs, 2 * posted, sts_deadline(PEER_TIMEOUT_S)) != 0)
        fail_msg("loopback messages not done before the deadline");
    for (int i = 0; i < 2 * posted; i++)
        assert_nccl_ok(reqs[i].result);
    for (int i = 0; i < posted; i++)
        assert_int_equal(sts_pattern_check(rb.data + size * (size_t)i, size, (uint32_t)i),
                         SIZE_MAX);
    func_buf_put(fix, &rb);
    func_buf_put(fix, &sb);
    assert_nccl_ok(stb_plugin_close_send(fix->net, send));
    assert_nccl_ok(stb_plugin_close_recv(fix->net, recv));
    free(reqs);
}

int main(void)
{
    const struct CMUnitTest cases[] = {
        cmocka_unit_test(life_symbols),
        FUNC_CASE(life_init_per_comm),
        FUNC_CASE(life_finalize_null),
        cmocka_unit_test(life_failed_init),
        FUNC_CASE(life_reinit),
        cmocka_unit_test(life_dlclose_reopen),
        FUNC_CASE(life_properties),
        FUNC_CASE(life_reg_cuda_refused),
        FUNC_CASE(life_irecv_preset_request),
    };
    return cmocka_run_group_tests_name("plugin_lifecycle", cases, NULL, NULL);
}
