/*
 * Loading and driving a net plugin through ncclNetPlugin_v11 (see
 * bench_plugin.h).
 */
#include "tools/lib/plugin_loader.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/tool_util.h"
/* The one bench file that speaks the NCCL ABI (like plugin/, it has to). */
#include "nccl/net.h"
#include "nccl/tuner.h"

struct stb_plugin {
    void *dl;
    const ncclNet_v11_t *net;
    void *ctx;
    char path[512];
};

static int plugin_verbose;

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
    stb_log_err("NCCL %s %s:%d %s", level == NCCL_LOG_WARN ? "WARN" : "INFO", file, line, msg);
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

strata_status_t stb_plugin_props_get(stb_plugin_t *plugin, int dev, stb_plugin_props_t *props)
{
    ncclNetProperties_v11_t p;

    memset(&p, 0, sizeof(p));
    strata_status_t status = plugin_result(plugin->net->getProperties(dev, &p), "getProperties");
    if (status != STRATA_OK)
        return status;
    memset(props, 0, sizeof(*props));
    snprintf(props->name, sizeof(props->name), "%s", p.name != NULL ? p.name : "");
    snprintf(props->pci_path, sizeof(props->pci_path), "%s", p.pciPath != NULL ? p.pciPath : "");
    props->guid = p.guid;
    props->ptr_support = p.ptrSupport;
    props->reg_is_global = p.regIsGlobal;
    props->force_flush = p.forceFlush;
    props->speed_mbps = p.speed;
    props->port = p.port;
    props->latency_us = p.latency;
    props->max_comms = p.maxComms;
    props->max_recvs = p.maxRecvs;
    props->net_device_type = (int)p.netDeviceType;
    props->net_device_version = p.netDeviceVersion;
    props->max_p2p_bytes = p.maxP2pBytes;
    props->max_coll_bytes = p.maxCollBytes;
    props->max_multi_request_size = p.maxMultiRequestSize;
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

struct stb_tuner {
    void *dl;
    int version;
    const ncclTuner_v6_t *v6;     /* the table, read as v6 (v5 is its prefix) */
    void *ctx;
    int inited;
};

strata_status_t stb_tuner_open(const stb_plugin_t *plugin, int version, stb_tuner_t **tuner_p)
{
    char sym[32];
    stb_tuner_t *t;

    if (version != 5 && version != 6) {
        stb_log_err("tuner version %d: only 5 and 6 are known", version);
        return STRATA_ERR_INVALID;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return STRATA_ERR_NO_MEMORY;
    t->dl = dlopen(plugin->path, RTLD_NOW | RTLD_LOCAL);
    snprintf(sym, sizeof(sym), "ncclTunerPlugin_v%d", version);
    t->v6 = t->dl != NULL ? dlsym(t->dl, sym) : NULL;
    if (t->v6 == NULL) {
        stb_log_err("%s: no %s", plugin->path, sym);
        if (t->dl != NULL)
            dlclose(t->dl);
        free(t);
        return STRATA_ERR_NOT_FOUND;
    }
    t->version = version;
    *tuner_p = t;
    return STRATA_OK;
}

void stb_tuner_close(stb_tuner_t *t)
{
    if (t == NULL)
        return;
    if (t->inited)
        plugin_result(t->v6->finalize(t->ctx), "tuner finalize");
    dlclose(t->dl);
    free(t);
}

const char *stb_tuner_name(const stb_tuner_t *t)
{
    return t->v6->name != NULL ? t->v6->name : "(unnamed)";
}

strata_status_t stb_tuner_init(stb_tuner_t *t, uint64_t comm_id, size_t nranks, size_t nnodes,
                               int min_ppn, int max_ppn, void *constants, int *active_p)
{
    ncclNvlDomainInfo_v5_t nvl = {.nNvlDomains = (int)nnodes, .minRanksPerNvlDomain = min_ppn,
                                  .maxRanksPerNvlDomain = max_ppn};
    strata_status_t status = plugin_result(t->v6->init(&t->ctx, comm_id, nranks, nnodes,
                                                       plugin_logger, &nvl, constants),
                                           "tuner init");
    t->inited = 1;       /* NCCL finalizes whatever init left, as here */
    if (status == STRATA_OK)
        *active_p = t->ctx != NULL;
    return status;
}

strata_status_t stb_tuner_coll_info(stb_tuner_t *t, int func, size_t nbytes, int pipe_ops,
                                    float *table, int reg_buff, int *nchannels_p)
{
    return plugin_result(t->v6->getCollInfo(t->ctx, (ncclFunc_t)func, nbytes, pipe_ops,
                                            (float **)(void *)table, NCCL_NUM_ALGORITHMS,
                                            NCCL_NUM_PROTOCOLS, reg_buff, nchannels_p),
                         "tuner getCollInfo");
}

strata_status_t stb_tuner_chunk(stb_tuner_t *t, int func, size_t nbytes, int algo, int proto,
                                int nchannels, size_t *chunk_p)
{
    if (t->version < 6 || t->v6->getChunkSize == NULL)
        return STRATA_OK;
    return plugin_result(t->v6->getChunkSize(t->ctx, (ncclFunc_t)func, nbytes, algo, proto,
                                             nchannels, chunk_p), "tuner getChunkSize");
}
