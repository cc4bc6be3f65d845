/* One interface over every exported ncclNetPlugin_vN, and polling helpers. */
#include "sts_net.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sts_proc.h"
#include "sts_util.h"

#ifndef STRATA_PLUGIN_PATH
#error "STRATA_PLUGIN_PATH must name the built plugin (the Makefile defines it for tests)"
#endif

/* The tables, typed; which one is valid depends on net->version. */
#define V6(net) ((const ncclNet_v6_t *)(net)->table)
#define V7(net) ((const ncclNet_v7_t *)(net)->table)
#define V8(net) ((const ncclNet_v8_t *)(net)->table)
#define V9(net) ((const ncclNet_v9_t *)(net)->table)
#define V10(net) ((const ncclNet_v10_t *)(net)->table)
#define V11(net) ((const ncclNet_v11_t *)(net)->table)

/* Members whose signature is the same in every version: one switch, any table. */
#define NET_SAME(net, member, ...)                                                  \
    ((net)->version == 11   ? V11(net)->member(__VA_ARGS__)                         \
     : (net)->version == 10 ? V10(net)->member(__VA_ARGS__)                         \
     : (net)->version == 9  ? V9(net)->member(__VA_ARGS__)                          \
     : (net)->version == 8  ? V8(net)->member(__VA_ARGS__)                          \
     : (net)->version == 7  ? V7(net)->member(__VA_ARGS__)                          \
                            : V6(net)->member(__VA_ARGS__))

static int net_warnings;

static void sts_net_logger(ncclDebugLogLevel level, unsigned long flags, const char *file,
                           int line, const char *fmt, ...)
{
    va_list ap;

    if (level != NCCL_LOG_WARN)
        return;
    net_warnings++;
    fprintf(stderr, "NCCL WARN (plugin) %s:%d ", file != NULL ? file : "?", line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int sts_net_warnings(void)
{
    return net_warnings;
}

const char *sts_nccl_str(ncclResult_t res)
{
    static const char *const names[] = {
        "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
        "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress",
    };
    if ((unsigned)res < sizeof(names) / sizeof(names[0]))
        return names[res];
    return "ncclResult(?)";
}

int sts_net_open(sts_net_t *net, int version, const char *path, char *err, size_t errlen)
{
    char sym[32];

    memset(net, 0, sizeof(*net));
    if (version < STS_NET_MIN_VERSION || version > STS_NET_MAX_VERSION) {
        snprintf(err, errlen, "no ABI version %d", version);
        return -1;
    }
    if (path == NULL)
        path = STRATA_PLUGIN_PATH;
    net->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (net->dl == NULL) {
        snprintf(err, errlen, "dlopen(%s): %s", path, dlerror());
        return -1;
    }
    snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", version);
    net->table = dlsym(net->dl, sym);
    if (net->table == NULL) {
        snprintf(err, errlen, "%s not exported by %s", sym, path);
        dlclose(net->dl);
        net->dl = NULL;
        return -1;
    }
    net->version = version;
    net->name = *(const char *const *)net->table;   /* every version starts with name */
    return 0;
}

void sts_net_close(sts_net_t *net)
{
    if (net->dl != NULL)
        dlclose(net->dl);
    memset(net, 0, sizeof(*net));
}

ncclResult_t sts_net_init(sts_net_t *net, uint64_t comm_id)
{
    ncclResult_t res;

    if (net->version == 11) {
        ncclNetCommConfig_v11_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
        void *ctx = NULL;
        res = V11(net)->init(&ctx, comm_id, &cfg, sts_net_logger, NULL);
        net->ctx = ctx;
    } else if (net->version == 10) {
        res = V10(net)->init(sts_net_logger, NULL);
    } else {
        res = net->version == 9   ? V9(net)->init(sts_net_logger)
              : net->version == 8 ? V8(net)->init(sts_net_logger)
              : net->version == 7 ? V7(net)->init(sts_net_logger)
                                  : V6(net)->init(sts_net_logger);
    }
    net->inited = res == ncclSuccess;
    return res;
}

ncclResult_t sts_net_finalize(sts_net_t *net)
{
    ncclResult_t res = ncclSuccess;

    if (net->version == 11)
        res = V11(net)->finalize(net->ctx);
    net->ctx = NULL;
    net->inited = 0;
    return res;
}

ncclResult_t sts_net_devices(sts_net_t *net, int *ndev)
{
    return NET_SAME(net, devices, ndev);
}

/* Copies the members all versions share from any properties struct. */
#define PROPS_COMMON(out, p)                                                        \
    do {                                                                            \
        snprintf((out)->name, sizeof((out)->name), "%s", (p).name ? (p).name : ""); \
        (out)->has_pci_path = (p).pciPath != NULL;                                  \
        (out)->guid = (p).guid;                                                     \
        (out)->ptr_support = (p).ptrSupport;                                        \
        (out)->speed = (p).speed;                                                   \
        (out)->port = (p).port;                                                     \
        (out)->latency = (p).latency;                                               \
        (out)->max_comms = (p).maxComms;                                            \
        (out)->max_recvs = (p).maxRecvs;                                            \
    } while (0)

#define PROPS_V9(out, p)                                                            \
    do {                                                                            \
        (out)->reg_is_global = (p).regIsGlobal;                                     \
        (out)->force_flush = (p).forceFlush;                                        \
        (out)->net_device_type = (int)(p).netDeviceType;                            \
        (out)->vprops_ndevs = (p).vProps.ndevs;                                     \
        (out)->vprops_dev0 = (p).vProps.devs[0];                                    \
        (out)->max_p2p_bytes = (p).maxP2pBytes;                                     \
        (out)->max_coll_bytes = (p).maxCollBytes;                                   \
    } while (0)

ncclResult_t sts_net_props(sts_net_t *net, int dev, sts_net_props_t *out)
{
    ncclResult_t res;

    memset(out, 0, sizeof(*out));
    out->reg_is_global = out->force_flush = out->net_device_type = -1;
    out->vprops_ndevs = out->vprops_dev0 = out->max_multi_request = -1;
    switch (net->version) {
    case 11: {
        ncclNetProperties_v11_t p;
        memset(&p, 0x5a, sizeof(p));
        res = V11(net)->getProperties(dev, &p);
        if (res == ncclSuccess) {
            PROPS_COMMON(out, p);
            PROPS_V9(out, p);
            out->max_multi_request = p.maxMultiRequestSize;
        }
        return res;
    }
    case 10: {
        ncclNetProperties_v10_t p;
        memset(&p, 0x5a, sizeof(p));
        res = V10(net)->getProperties(dev, &p);
        if (res == ncclSuccess) {
            PROPS_COMMON(out, p);
            PROPS_V9(out, p);
        }
        return res;
    }
    case 9: {
        ncclNetProperties_v9_t p;
        memset(&p, 0x5a, sizeof(p));
        res = V9(net)->getProperties(dev, &p);
        if (res == ncclSuccess) {
            PROPS_COMMON(out, p);
            PROPS_V9(out, p);
        }
        return res;
    }
    case 8: {
        ncclNetProperties_v8_t p;
        memset(&p, 0x5a, sizeof(p));
        res = V8(net)->getProperties(dev, &p);
        if (res == ncclSuccess) {
            PROPS_COMMON(out, p);
            out->reg_is_global = p.regIsGlobal;
            out->net_device_type = (int)p.netDeviceType;
        }
        return res;
    }
    case 7: {
        ncclNetProperties_v7_t p;
        memset(&p, 0x5a, sizeof(p));
        res = V7(net)->getProperties(dev, &p);
        if (res == ncclSuccess) {
            PROPS_COMMON(out, p);
            out->net_device_type = (int)p.netDeviceType;
        }
        return res;
    }
    default: {
        ncclNetProperties_v6_t p;
        memset(&p, 0x5a, sizeof(p));
        res = V6(net)->getProperties(dev, &p);
        if (res == ncclSuccess)
            PROPS_COMMON(out, p);
        return res;
    }
    }
}

ncclResult_t sts_net_listen(sts_net_t *net, int dev, void *handle, void **listen)
{
    if (net->version == 11)
        return V11(net)->listen(net->ctx, dev, handle, listen);
    return net->version == 10  ? V10(net)->listen(dev, handle, listen)
           : net->version == 9 ? V9(net)->listen(dev, handle, listen)
           : net->version == 8 ? V8(net)->listen(dev, handle, listen)
           : net->version == 7 ? V7(net)->listen(dev, handle, listen)
                               : V6(net)->listen(dev, handle, listen);
}

ncclResult_t sts_net_connect(sts_net_t *net, int dev, void *handle, void **send)
{
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;
    ncclNetCommConfig_v10_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};

    switch (net->version) {
    case 11: return V11(net)->connect(net->ctx, dev, handle, send, &dev_comm);
    case 10: return V10(net)->connect(dev, &cfg, handle, send, &dev_comm);
    case 9: return V9(net)->connect(dev, handle, send, &dev_comm);
    case 8: return V8(net)->connect(dev, handle, send, &dev_comm);
    case 7: return V7(net)->connect(dev, handle, send, &dev_comm);
    default: return V6(net)->connect(dev, handle, send);
    }
}

ncclResult_t sts_net_accept(sts_net_t *net, void *listen, void **recv)
{
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;

    switch (net->version) {
    case 11: return V11(net)->accept(listen, recv, &dev_comm);
    case 10: return V10(net)->accept(listen, recv, &dev_comm);
    case 9: return V9(net)->accept(listen, recv, &dev_comm);
    case 8: return V8(net)->accept(listen, recv, &dev_comm);
    case 7: return V7(net)->accept(listen, recv, &dev_comm);
    default: return V6(net)->accept(listen, recv);
    }
}

ncclResult_t sts_net_reg_mr(sts_net_t *net, void *comm, void *data, size_t size, int type,
                            void **mh)
{
    if (net->version >= 8)
        return NET_SAME(net, regMr, comm, data, size, type, mh);
    if (size > INT_MAX)
        return ncclInvalidArgument;
    return net->version == 7 ? V7(net)->regMr(comm, data, (int)size, type, mh)
                             : V6(net)->regMr(comm, data, (int)size, type, mh);
}

ncclResult_t sts_net_dereg_mr(sts_net_t *net, void *comm, void *mh)
{
    return NET_SAME(net, deregMr, comm, mh);
}

ncclResult_t sts_net_isend(sts_net_t *net, void *comm, void *data, size_t size, int tag,
                           void *mh, void **req)
{
    switch (net->version) {
    case 11: return V11(net)->isend(comm, data, size, tag, mh, NULL, req);
    case 10: return V10(net)->isend(comm, data, size, tag, mh, NULL, req);
    case 9: return V9(net)->isend(comm, data, size, tag, mh, req);
    default:
        if (size > INT_MAX)
            return ncclInvalidArgument;
        return net->version == 8   ? V8(net)->isend(comm, data, (int)size, tag, mh, req)
               : net->version == 7 ? V7(net)->isend(comm, data, (int)size, tag, mh, req)
                                   : V6(net)->isend(comm, data, (int)size, tag, mh, req);
    }
}

ncclResult_t sts_net_irecv(sts_net_t *net, void *comm, int n, void **data, const size_t *sizes,
                           const int *tags, void **mhs, void **req)
{
    size_t zsizes[STS_NET_MAX_RECVS];
    int isizes[STS_NET_MAX_RECVS], itags[STS_NET_MAX_RECVS];
    void *phandles[STS_NET_MAX_RECVS] = {0};

    if (n < 1 || n > STS_NET_MAX_RECVS)
        return ncclInvalidArgument;
    for (int i = 0; i < n; i++) {
        zsizes[i] = sizes[i];
        itags[i] = tags[i];
        if (net->version <= 8 && sizes[i] > INT_MAX)
            return ncclInvalidArgument;
        isizes[i] = (int)sizes[i];
    }
    switch (net->version) {
    case 11: return V11(net)->irecv(comm, n, data, zsizes, itags, mhs, phandles, req);
    case 10: return V10(net)->irecv(comm, n, data, zsizes, itags, mhs, phandles, req);
    case 9: return V9(net)->irecv(comm, n, data, zsizes, itags, mhs, req);
    case 8: return V8(net)->irecv(comm, n, data, isizes, itags, mhs, req);
    case 7: return V7(net)->irecv(comm, n, data, isizes, itags, mhs, req);
    default: return V6(net)->irecv(comm, n, data, isizes, itags, mhs, req);
    }
}

ncclResult_t sts_net_test(sts_net_t *net, void *req, int *done, int *sizes)
{
    return NET_SAME(net, test, req, done, sizes);
}

ncclResult_t sts_net_iflush(sts_net_t *net, void *comm, int n, void **data, int *sizes,
                            void **mhs, void **req)
{
    return NET_SAME(net, iflush, comm, n, data, sizes, mhs, req);
}

ncclResult_t sts_net_close_send(sts_net_t *net, void *comm)
{
    return NET_SAME(net, closeSend, comm);
}

ncclResult_t sts_net_close_recv(sts_net_t *net, void *comm)
{
    return NET_SAME(net, closeRecv, comm);
}

ncclResult_t sts_net_close_listen(sts_net_t *net, void *listen)
{
    return NET_SAME(net, closeListen, listen);
}

/* ------------------------------------------------------------------ polling helpers */

ncclResult_t sts_net_connect_wait(sts_net_t *net, int dev, void *handle, uint64_t deadline,
                                  void **send)
{
    void *comm = NULL;
    while (comm == NULL) {
        ncclResult_t res = sts_net_connect(net, dev, handle, &comm);
        if (res != ncclSuccess)
            return res;
        if (comm == NULL && stu_deadline_passed(deadline))
            return ncclInternalError;
        if (comm == NULL)
            sts_relax();
    }
    *send = comm;
    return ncclSuccess;
}

ncclResult_t sts_net_accept_wait(sts_net_t *net, void *listen, uint64_t deadline, void **recv)
{
    void *comm = NULL;
    while (comm == NULL) {
        ncclResult_t res = sts_net_accept(net, listen, &comm);
        if (res != ncclSuccess)
            return res;
        if (comm == NULL && stu_deadline_passed(deadline))
            return ncclInternalError;
        if (comm == NULL)
            sts_relax();
    }
    *recv = comm;
    return ncclSuccess;
}

ncclResult_t sts_net_link_open(sts_net_t *net, int dev, int ctl_fd, uint64_t deadline,
                               sts_net_link_t *link, char *err, size_t errlen)
{
    char mine[NCCL_NET_HANDLE_MAXSIZE] = {0}, theirs[NCCL_NET_HANDLE_MAXSIZE];
    void *listen = NULL, *send = NULL, *recv = NULL;
    ncclResult_t res;

    res = sts_net_listen(net, dev, mine, &listen);
    if (res != ncclSuccess) {
        snprintf(err, errlen, "listen: %s", sts_nccl_str(res));
        return res;
    }
    if (sts_ctl_send(ctl_fd, STS_CTL_HANDLE, mine, sizeof(mine)) != 0 ||
        sts_ctl_expect(ctl_fd, STS_CTL_HANDLE, theirs, sizeof(theirs), deadline) != 0) {
        snprintf(err, errlen, "handle exchange over the control socket failed");
        res = ncclInternalError;
        goto out;
    }
    while (send == NULL || recv == NULL) {
        if (send == NULL && (res = sts_net_connect(net, dev, theirs, &send)) != ncclSuccess) {
            snprintf(err, errlen, "connect: %s", sts_nccl_str(res));
            goto out;
        }
        if (recv == NULL && (res = sts_net_accept(net, listen, &recv)) != ncclSuccess) {
            snprintf(err, errlen, "accept: %s", sts_nccl_str(res));
            goto out;
        }
        if ((send == NULL || recv == NULL) && stu_deadline_passed(deadline)) {
            snprintf(err, errlen, "not connected before the deadline (send %p, recv %p)", send,
                     recv);
            res = ncclInternalError;
            goto out;
        }
        sts_relax();
    }
    link->send = send;
    link->recv = recv;
    send = recv = NULL;
    res = ncclSuccess;
out:
    if (send != NULL)
        sts_net_close_send(net, send);
    if (recv != NULL)
        sts_net_close_recv(net, recv);
    sts_net_close_listen(net, listen);
    return res;
}

void sts_net_link_close(sts_net_t *net, sts_net_link_t *link)
{
    if (link->send != NULL)
        sts_net_close_send(net, link->send);
    if (link->recv != NULL)
        sts_net_close_recv(net, link->recv);
    link->send = link->recv = NULL;
}

int sts_net_progress(sts_net_t *net, sts_net_req_t *reqs, int n)
{
    int pending = 0;

    for (int i = 0; i < n; i++) {
        int done = 0;
        if (reqs[i].req == NULL)
            continue;
        ncclResult_t res = sts_net_test(net, reqs[i].req, &done, reqs[i].sizes);
        if (res != ncclSuccess || done) {
            reqs[i].result = res;
            reqs[i].req = NULL;
        } else {
            pending++;
        }
    }
    return pending;
}

int sts_net_wait_all(sts_net_t *net, sts_net_req_t *reqs, int n, uint64_t deadline)
{
    while (sts_net_progress(net, reqs, n) > 0)
        if (stu_deadline_passed(deadline))
            return -1;
    return 0;
}

ncclResult_t sts_net_isend_retry(sts_net_t *net, void *comm, void *data, size_t size, int tag,
                                 void *mh, sts_net_req_t *progress, int nprogress,
                                 uint64_t deadline, void **req)
{
    for (;;) {
        ncclResult_t res = sts_net_isend(net, comm, data, size, tag, mh, req);
        if (res != ncclSuccess || *req != NULL)
            return res;
        if (stu_deadline_passed(deadline))
            return ncclInternalError;
        sts_net_progress(net, progress, nprogress);
    }
}

ncclResult_t sts_net_irecv_retry(sts_net_t *net, void *comm, int n, void **data,
                                 const size_t *sizes, const int *tags, void **mhs,
                                 sts_net_req_t *progress, int nprogress, uint64_t deadline,
                                 void **req)
{
    for (;;) {
        ncclResult_t res = sts_net_irecv(net, comm, n, data, sizes, tags, mhs, req);
        if (res != ncclSuccess || *req != NULL)
            return res;
        if (stu_deadline_passed(deadline))
            return ncclInternalError;
        sts_net_progress(net, progress, nprogress);
    }
}
