/*
 * Loading and driving a net plugin through ncclNetPlugin_v11 (see
 * bench_plugin.h).
 */
#include "tools/lib/plugin_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/tool_util.h"
/* The one bench file that speaks the NCCL ABI (like plugin/, it has to). */
#include "nccl/net.h"

struct stb_plugin {
    void *dl;
    const ncclNet_v11_t *net;
    void *ctx;
    char path[512];
};

static int plugin_verbose;
static pthread_mutex_t plugin_warn_lock = PTHREAD_MUTEX_INITIALIZER;
static char plugin_warn_last[1024];

static const char *plugin_result_str(ncclResult_t res)
{
    switch (res) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "unknown ncclResult_t";
    }
}

/* The one place a plugin result becomes a Strata status; failures are logged with the call. */
static strata_status_t plugin_result(ncclResult_t res, const char *call)
{
    if (res == ncclSuccess)
        return STRATA_OK;
    stb_log_err("plugin %s failed: %s (%d)", call, plugin_result_str(res), (int)res);
    switch (res) {
    case ncclSystemError: return STRATA_ERR_IO;
    case ncclInvalidArgument:
    case ncclInvalidUsage: return STRATA_ERR_INVALID;
    case ncclRemoteError: return STRATA_ERR_REMOTE;
    default: return STRATA_ERR_INTERNAL;
    }
}

/* NCCL's logger: NCCL_DEBUG=WARN semantics, INFO too with -v. */
static void plugin_logger(ncclDebugLogLevel level, unsigned long flags, const char *file,
                          int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (level > NCCL_LOG_INFO || (level == NCCL_LOG_INFO && !plugin_verbose) ||
        level == NCCL_LOG_NONE)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (level == NCCL_LOG_WARN) {
        pthread_mutex_lock(&plugin_warn_lock);
        snprintf(plugin_warn_last, sizeof(plugin_warn_last), "%s", msg);
        pthread_mutex_unlock(&plugin_warn_lock);
    }
    stb_log_err("NCCL %s %s:%d %s", level == NCCL_LOG_WARN ? "WARN" : "INFO", file, line, msg);
}

void stb_plugin_last_warning(char *buf, size_t len)
{
    pthread_mutex_lock(&plugin_warn_lock);
    snprintf(buf, len, "%s", plugin_warn_last);
    pthread_mutex_unlock(&plugin_warn_lock);
}

/* The profiler callback NCCL hands a v10+ plugin; the bench records nothing. */
static ncclResult_t plugin_profiler(void **eHandle, int type, void *phandle, int64_t pluginId,
                                    void *extData)
{
    if (eHandle != NULL)
        *eHandle = NULL;
    return ncclSuccess;
}

strata_status_t stb_plugin_open(const char *path, uint64_t comm_id, int verbose,
                                stb_plugin_t **plugin_p)
{
    ncclNetCommConfig_v11_t config = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
    strata_status_t status;
    stb_plugin_t *plugin = calloc(1, sizeof(*plugin));

    if (plugin == NULL) {
        stb_log_err("out of memory loading the plugin");
        return STRATA_ERR_NO_MEMORY;
    }
    plugin_verbose = verbose;
    snprintf(plugin->path, sizeof(plugin->path), "%s", path);
    plugin->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (plugin->dl == NULL) {
        stb_log_err("cannot load plugin: %s", dlerror());
        status = STRATA_ERR_NOT_FOUND;
        goto err_free;
    }
    plugin->net = dlsym(plugin->dl, STB_PLUGIN_SYMBOL);
    if (plugin->net == NULL) {
        stb_log_err("%s exports no %s: %s", path, STB_PLUGIN_SYMBOL, dlerror());
        status = STRATA_ERR_NOT_FOUND;
        goto err_close;
    }
    status = plugin_result(plugin->net->init(&plugin->ctx, comm_id, &config, plugin_logger,
                                             plugin_profiler), "init");
    if (status != STRATA_OK) {
        /* NCCL 2.28.9 calls finalize even after a failed init; do the same. */
        plugin->net->finalize(plugin->ctx);
        goto err_close;
    }
    *plugin_p = plugin;
    return STRATA_OK;

err_close:
    dlclose(plugin->dl);
err_free:
    free(plugin);
    return status;
}

void stb_plugin_close(stb_plugin_t *plugin)
{
    if (plugin == NULL)
        return;
    plugin_result(plugin->net->finalize(plugin->ctx), "finalize");
    dlclose(plugin->dl);
    free(plugin);
}

const char *stb_plugin_name(const stb_plugin_t *plugin)
{
    return plugin->net->name != NULL ? plugin->net->name : "(unnamed)";
}

strata_status_t stb_plugin_devices(stb_plugin_t *plugin, int *ndev_p)
{
    return plugin_result(plugin->net->devices(ndev_p), "devices");
}

/* What either table's getProperties said, as the loader reports it (v12's layout; v11's is
 * copied into it member by member). */
static void plugin_props_fill(stb_plugin_props_t *props, const ncclNetProperties_v12_t *p)
{
    memset(props, 0, sizeof(*props));
    snprintf(props->name, sizeof(props->name), "%s", p->name != NULL ? p->name : "");
    snprintf(props->pci_path, sizeof(props->pci_path), "%s",
             p->pciPath != NULL ? p->pciPath : "");
    props->guid = p->guid;
    props->ptr_support = p->ptrSupport;
    props->reg_is_global = p->regIsGlobal;
    props->force_flush = p->forceFlush;
    props->speed_mbps = p->speed;
    props->port = p->port;
    props->latency_us = p->latency;
    props->max_comms = p->maxComms;
    props->max_recvs = p->maxRecvs;
    props->net_device_type = (int)p->netDeviceType;
    props->net_device_version = p->netDeviceVersion;
    props->max_p2p_bytes = p->maxP2pBytes;
    props->max_coll_bytes = p->maxCollBytes;
    props->max_multi_request_size = p->maxMultiRequestSize;
}

static void plugin_props_from_v11(ncclNetProperties_v12_t *p, const ncclNetProperties_v11_t *q)
{
    memset(p, 0, sizeof(*p));
    memcpy(p, q, offsetof(ncclNetProperties_v11_t, vProps));   /* the same layout up to there */
    p->maxP2pBytes = q->maxP2pBytes;
    p->maxCollBytes = q->maxCollBytes;
    p->maxMultiRequestSize = q->maxMultiRequestSize;
    p->railId = p->planeId = NCCL_NET_ID_UNDEF;
}

strata_status_t stb_plugin_props_get(stb_plugin_t *plugin, int dev, stb_plugin_props_t *props)
{
    ncclNetProperties_v11_t q;
    ncclNetProperties_v12_t p;

    memset(&q, 0, sizeof(q));
    strata_status_t status = plugin_result(plugin->net->getProperties(dev, &q), "getProperties");
    if (status != STRATA_OK)
        return status;
    plugin_props_from_v11(&p, &q);
    plugin_props_fill(props, &p);
    return STRATA_OK;
}

strata_status_t stb_plugin_listen(stb_plugin_t *plugin, int dev, void *handle, void **lcomm_p)
{
    return plugin_result(plugin->net->listen(plugin->ctx, dev, handle, lcomm_p), "listen");
}

strata_status_t stb_plugin_connect(stb_plugin_t *plugin, int dev, void *handle, void **scomm_p)
{
    ncclNetDeviceHandle_v11_t *dev_handle = NULL;

    return plugin_result(plugin->net->connect(plugin->ctx, dev, handle, scomm_p, &dev_handle),
                         "connect");
}

strata_status_t stb_plugin_accept(stb_plugin_t *plugin, void *lcomm, void **rcomm_p)
{
    ncclNetDeviceHandle_v11_t *dev_handle = NULL;

    return plugin_result(plugin->net->accept(lcomm, rcomm_p, &dev_handle), "accept");
}

strata_status_t stb_plugin_reg(stb_plugin_t *plugin, void *comm, void *buf, size_t size,
                               void **mhandle_p)
{
    return plugin_result(plugin->net->regMr(comm, buf, size, NCCL_PTR_HOST, mhandle_p), "regMr");
}

strata_status_t stb_plugin_dereg(stb_plugin_t *plugin, void *comm, void *mhandle)
{
    return plugin_result(plugin->net->deregMr(comm, mhandle), "deregMr");
}

strata_status_t stb_plugin_isend(stb_plugin_t *plugin, void *scomm, void *buf, size_t size,
                                 int tag, void *mhandle, void **req_p)
{
    return plugin_result(plugin->net->isend(scomm, buf, size, tag, mhandle, NULL, req_p),
                         "isend");
}

strata_status_t stb_plugin_irecv(stb_plugin_t *plugin, void *rcomm, void *buf, size_t size,
                                 int tag, void *mhandle, void **req_p)
{
    void *phandle = NULL;

    return plugin_result(plugin->net->irecv(rcomm, 1, &buf, &size, &tag, &mhandle, &phandle,
                                            req_p), "irecv");
}

strata_status_t stb_plugin_test(stb_plugin_t *plugin, void *req, int *done_p, size_t *size_p)
{
    int size = 0;
    strata_status_t status = plugin_result(plugin->net->test(req, done_p, &size), "test");

    if (status == STRATA_OK && *done_p)
        *size_p = (size_t)size;
    return status;
}

void stb_plugin_close_send(stb_plugin_t *plugin, void *scomm)
{
    if (scomm != NULL)
        plugin_result(plugin->net->closeSend(scomm), "closeSend");
}

void stb_plugin_close_recv(stb_plugin_t *plugin, void *rcomm)
{
    if (rcomm != NULL)
        plugin_result(plugin->net->closeRecv(rcomm), "closeRecv");
}

void stb_plugin_close_listen(stb_plugin_t *plugin, void *lcomm)
{
    if (lcomm != NULL)
        plugin_result(plugin->net->closeListen(lcomm), "closeListen");
}

/* ------------------------------------------------------------------ CollNet */

/* The entry points the two versions share, with v11's types (v12's are the same types). */
typedef struct stb_collnet_ops {
    ncclResult_t (*init)(void **, uint64_t, ncclDebugLogger_t);
    ncclResult_t (*devices)(int *);
    ncclResult_t (*listen)(void *, int, void *, void **);
    ncclResult_t (*connect)(void **, int, int, void *, void **);
    ncclResult_t (*reduceSupport)(ncclDataType_t, ncclRedOp_t, int *);
    ncclResult_t (*regMr)(void *, void *, size_t, int, void **);
    ncclResult_t (*deregMr)(void *, void *);
    ncclResult_t (*iallreduce)(void *, void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                               void *, void *, void **);
    ncclResult_t (*iallgather)(void *, void *, int, ncclNetSGE_v11_t *, size_t, size_t, size_t,
                               void *, void **);
    ncclResult_t (*ireducescatter)(void *, int, ncclNetSGE_v11_t *, void *, size_t, size_t,
                                   size_t, ncclDataType_t, ncclRedOp_t, void *, void **);
    ncclResult_t (*iflush)(void *, void *, int, void *, void **);
    ncclResult_t (*test)(void *, int *, int *);
    ncclResult_t (*closeColl)(void *);
    ncclResult_t (*closeListen)(void *);
    ncclResult_t (*finalize)(void *);
} stb_collnet_ops_t;

struct stb_collnet {
    stb_plugin_t *plugin;
    int version;
    stb_collnet_ops_t ops;
    const ncclCollNet_v11_t *v11;
    const ncclCollNet_v12_t *v12;
    void *ctx;
};

#define STB_COLLNET_OPS_FROM(t)                                                               \
    {.init = (t)->init, .devices = (t)->devices, .listen = (t)->listen,                       \
     .connect = (t)->connect, .reduceSupport = (t)->reduceSupport, .regMr = (t)->regMr,       \
     .deregMr = (t)->deregMr, .iallreduce = (t)->iallreduce, .iallgather = (t)->iallgather,   \
     .ireducescatter = (t)->ireducescatter, .iflush = (t)->iflush, .test = (t)->test,         \
     .closeColl = (t)->closeColl, .closeListen = (t)->closeListen,                            \
     .finalize = (t)->finalize}

strata_status_t stb_collnet_open(stb_plugin_t *plugin, int version, uint64_t comm_id,
                                 stb_collnet_t **cn_p)
{
    char sym[64];
    stb_collnet_t *cn = calloc(1, sizeof(*cn));

    if (cn == NULL)
        return STRATA_ERR_NO_MEMORY;
    snprintf(sym, sizeof(sym), "ncclCollNetPlugin_v%d", version);
    const void *table = (version == 11 || version == 12) ? dlsym(plugin->dl, sym) : NULL;
    if (table == NULL) {
        stb_log_err("%s exports no %s", plugin->path, sym);
        free(cn);
        return STRATA_ERR_NOT_FOUND;
    }
    cn->plugin = plugin;
    cn->version = version;
    if (version == 12) {
        cn->v12 = table;
        cn->ops = (stb_collnet_ops_t)STB_COLLNET_OPS_FROM(cn->v12);
    } else {
        cn->v11 = table;
        cn->ops = (stb_collnet_ops_t)STB_COLLNET_OPS_FROM(cn->v11);
    }
    strata_status_t status = plugin_result(cn->ops.init(&cn->ctx, comm_id, plugin_logger),
                                           "collnet init");
    if (status != STRATA_OK) {
        cn->ops.finalize(cn->ctx);
        free(cn);
        return status;
    }
    *cn_p = cn;
    return STRATA_OK;
}

void stb_collnet_close(stb_collnet_t *cn)
{
    if (cn == NULL)
        return;
    plugin_result(cn->ops.finalize(cn->ctx), "collnet finalize");
    free(cn);
}

strata_status_t stb_collnet_devices(stb_collnet_t *cn, int *ndev_p)
{
    return plugin_result(cn->ops.devices(ndev_p), "collnet devices");
}

strata_status_t stb_collnet_props_get(stb_collnet_t *cn, int dev, stb_plugin_props_t *props,
                                      int *rail_p, int *plane_p)
{
    ncclNetProperties_v12_t p;
    ncclResult_t res;

    memset(&p, 0, sizeof(p));
    if (cn->v12 != NULL) {
        res = cn->v12->getProperties(dev, &p);
    } else {
        ncclNetProperties_v11_t q;
        memset(&q, 0, sizeof(q));
        res = cn->v11->getProperties(dev, &q);
        plugin_props_from_v11(&p, &q);
    }
    strata_status_t status = plugin_result(res, "collnet getProperties");
    if (status != STRATA_OK)
        return status;
    plugin_props_fill(props, &p);
    *rail_p = p.railId;
    *plane_p = p.planeId;
    return STRATA_OK;
}

strata_status_t stb_collnet_listen(stb_collnet_t *cn, int dev, void *handle, void **lcomm_p)
{
    return plugin_result(cn->ops.listen(cn->ctx, dev, handle, lcomm_p), "collnet listen");
}

strata_status_t stb_collnet_connect(stb_collnet_t *cn, void *const *handles, int nranks,
                                    int rank, void *lcomm, void **ccomm_p)
{
    return plugin_result(cn->ops.connect((void **)handles, nranks, rank, lcomm, ccomm_p),
                         "collnet connect");
}

strata_status_t stb_collnet_reduce_support(stb_collnet_t *cn, int nccl_type, int nccl_op,
                                           int *supported_p)
{
    return plugin_result(cn->ops.reduceSupport((ncclDataType_t)nccl_type, (ncclRedOp_t)nccl_op,
                                               supported_p), "collnet reduceSupport");
}

int stb_collnet_nccl_type(strata_dtype_t dtype)
{
    static const int map[STRATA_DTYPE_COUNT] = {
        [STRATA_INT8] = ncclInt8, [STRATA_UINT8] = ncclUint8, [STRATA_INT32] = ncclInt32,
        [STRATA_UINT32] = ncclUint32, [STRATA_INT64] = ncclInt64, [STRATA_UINT64] = ncclUint64,
        [STRATA_FP16] = ncclFloat16, [STRATA_BF16] = ncclBfloat16, [STRATA_FP32] = ncclFloat32,
        [STRATA_FP64] = ncclFloat64, [STRATA_FP8_E4M3] = ncclFloat8e4m3,
        [STRATA_FP8_E5M2] = ncclFloat8e5m2,
    };
    return (unsigned)dtype < STRATA_DTYPE_COUNT ? map[dtype] : -1;
}

int stb_collnet_nccl_op(strata_op_t op)
{
    static const int map[STRATA_OP_COUNT] = {
        [STRATA_SUM] = ncclSum, [STRATA_PROD] = ncclProd, [STRATA_MIN] = ncclMin,
        [STRATA_MAX] = ncclMax, [STRATA_AVG] = ncclAvg,
    };
    return (unsigned)op < STRATA_OP_COUNT ? map[op] : -1;
}

strata_status_t stb_collnet_reg(stb_collnet_t *cn, void *ccomm, void *buf, size_t size,
                                void **mhandle_p)
{
    return plugin_result(cn->ops.regMr(ccomm, buf, size, NCCL_PTR_HOST, mhandle_p),
                         "collnet regMr");
}

strata_status_t stb_collnet_dereg(stb_collnet_t *cn, void *ccomm, void *mhandle)
{
    return plugin_result(cn->ops.deregMr(ccomm, mhandle), "collnet deregMr");
}

strata_status_t stb_collnet_iallreduce(stb_collnet_t *cn, void *ccomm, void *send, void *recv,
                                       size_t count, strata_dtype_t dtype, strata_op_t op,
                                       void *send_mh, void *recv_mh, void **req_p)
{
    return plugin_result(cn->ops.iallreduce(ccomm, send, recv, count,
                                            (ncclDataType_t)stb_collnet_nccl_type(dtype),
                                            (ncclRedOp_t)stb_collnet_nccl_op(op), send_mh,
                                            recv_mh, req_p), "collnet iallreduce");
}

strata_status_t stb_collnet_iallgather(stb_collnet_t *cn, void *ccomm, void *send, void *send_mh,
                                       void *recv, void *recv_mh, size_t bytes_per_rank,
                                       size_t window_off, size_t window_bytes, void **req_p)
{
    ncclNetSGE_v11_t part = {.mhandle = recv_mh, .address = recv, .size = window_bytes};

    return plugin_result(cn->ops.iallgather(ccomm, send, 1, &part, bytes_per_rank, window_off,
                                            window_bytes, send_mh, req_p), "collnet iallgather");
}

strata_status_t stb_collnet_ireducescatter(stb_collnet_t *cn, void *ccomm, void *send,
                                           void *send_mh, void *recv, void *recv_mh,
                                           size_t bytes_per_rank, size_t window_off,
                                           size_t window_bytes, strata_dtype_t dtype,
                                           strata_op_t op, void **req_p)
{
    ncclNetSGE_v11_t part = {.mhandle = send_mh, .address = send, .size = window_bytes};

    return plugin_result(cn->ops.ireducescatter(ccomm, 1, &part, recv, bytes_per_rank,
                                                window_off, window_bytes,
                                                (ncclDataType_t)stb_collnet_nccl_type(dtype),
                                                (ncclRedOp_t)stb_collnet_nccl_op(op), recv_mh,
                                                req_p), "collnet ireducescatter");
}

strata_status_t stb_collnet_iflush(stb_collnet_t *cn, void *ccomm, void *data, int size,
                                   void *mh, void **req_p)
{
    return plugin_result(cn->ops.iflush(ccomm, data, size, mh, req_p), "collnet iflush");
}

strata_status_t stb_collnet_test(stb_collnet_t *cn, void *req, int *done_p, int *size_p)
{
    return plugin_result(cn->ops.test(req, done_p, size_p), "collnet test");
}

void stb_collnet_close_coll(stb_collnet_t *cn, void *ccomm)
{
    if (ccomm != NULL)
        plugin_result(cn->ops.closeColl(ccomm), "collnet closeColl");
}

void stb_collnet_close_listen(stb_collnet_t *cn, void *lcomm)
{
    if (lcomm != NULL)
        plugin_result(cn->ops.closeListen(lcomm), "collnet closeListen");
}
