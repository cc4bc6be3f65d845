/*
 * One interface over every exported ncclNetPlugin_vN (see plugin_loader.h).
 * Like plugin/, this file has to speak the NCCL ABI: it stands where NCCL does.
 */
#include "tools/lib/plugin_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl/profiler_net.h"
#include "nccl/tuner.h"
#include "tools/lib/tool_util.h"
#include "util/time.h"

#if __has_include("nccl/net_v12.h")
#include "nccl/net_v12.h"
#define PLUGIN_HAVE_V12 1
/* v12 changed getProperties only: every other entry point is called through v11's type. */
#define PLUGIN_SAME_AS_V11(member)                                                        \
    _Static_assert(offsetof(ncclNet_v12_t, member) == offsetof(ncclNet_v11_t, member),  \
                   "ncclNet_v12_t." #member " moved")
PLUGIN_SAME_AS_V11(init);
PLUGIN_SAME_AS_V11(listen);
PLUGIN_SAME_AS_V11(connect);
PLUGIN_SAME_AS_V11(accept);
PLUGIN_SAME_AS_V11(isend);
PLUGIN_SAME_AS_V11(irecv);
PLUGIN_SAME_AS_V11(test);
PLUGIN_SAME_AS_V11(closeListen);
PLUGIN_SAME_AS_V11(finalize);
#else
#define PLUGIN_HAVE_V12 0
#endif

#ifndef STRATA_PLUGIN_PATH
#error "STRATA_PLUGIN_PATH must name the built plugin (the Makefile defines it)"
#endif

/* Between polls of connect/accept: gives the peer's progress a core on a 2-core machine. */
#define PLUGIN_POLL_NAP_MS 1

struct stb_plugin {
    int version;
    void *dl;               /* dlopen handle, owned */
    const void *table;      /* ncclNetPlugin_v<version> */
    void *ctx;              /* v11+: the context of the last successful init */
    char symbol[32];
    char path[512];         /* what was loaded (the tuner opens the same file) */
};

/* The tables, typed; which one is valid depends on plugin->version. */
#define V6(p) ((const ncclNet_v6_t *)(p)->table)
#define V7(p) ((const ncclNet_v7_t *)(p)->table)
#define V8(p) ((const ncclNet_v8_t *)(p)->table)
#define V9(p) ((const ncclNet_v9_t *)(p)->table)
#define V10(p) ((const ncclNet_v10_t *)(p)->table)
#define V11(p) ((const ncclNet_v11_t *)(p)->table)   /* v11, and v12 (asserted above) */

/* Members whose signature is the same in every version: one switch, any table. */
#define NET_SAME(p, member, ...)                                                    \
    ((p)->version >= 11   ? V11(p)->member(__VA_ARGS__)                             \
     : (p)->version == 10 ? V10(p)->member(__VA_ARGS__)                             \
     : (p)->version == 9  ? V9(p)->member(__VA_ARGS__)                              \
     : (p)->version == 8  ? V8(p)->member(__VA_ARGS__)                              \
     : (p)->version == 7  ? V7(p)->member(__VA_ARGS__)                              \
                          : V6(p)->member(__VA_ARGS__))

/* ------------------------------------------------------------------ properties */

/* The members every version has, from any properties struct. */
#define PROPS_COMMON(out, p)                                                        \
    do {                                                                            \
        snprintf((out)->name, sizeof((out)->name), "%s", (p).name ? (p).name : ""); \
        snprintf((out)->pci_path, sizeof((out)->pci_path), "%s",                    \
                 (p).pciPath ? (p).pciPath : "");                                   \
        (out)->has_pci_path = (p).pciPath != NULL;                                  \
        (out)->guid = (p).guid;                                                     \
        (out)->ptr_support = (p).ptrSupport;                                        \
        (out)->speed_mbps = (p).speed;                                              \
        (out)->port = (p).port;                                                     \
        (out)->latency_us = (p).latency;                                            \
        (out)->max_comms = (p).maxComms;                                            \
        (out)->max_recvs = (p).maxRecvs;                                            \
    } while (0)
#define PROPS_V7(out, p)                                                            \
    do {                                                                            \
        (out)->net_device_type = (int)(p).netDeviceType;                            \
        (out)->net_device_version = (p).netDeviceVersion;                           \
    } while (0)
#define PROPS_V9(out, p)                                                            \
    do {                                                                            \
        PROPS_V7(out, p);                                                           \
        (out)->reg_is_global = (p).regIsGlobal;                                     \
        (out)->force_flush = (p).forceFlush;                                        \
        (out)->vprops_ndevs = (p).vProps.ndevs;                                     \
        (out)->vprops_dev0 = (p).vProps.devs[0];                                    \
        (out)->max_p2p_bytes = (p).maxP2pBytes;                                     \
        (out)->max_coll_bytes = (p).maxCollBytes;                                   \
    } while (0)

/*
 * One getProperties into the version's own struct (pre-filled with a junk
 * pattern, so a member the plugin forgot shows), then the copy. EXTRA (a
 * block) copies what that version adds.
 */
#define PROPS_GET(type, table, EXTRA)                                               \
    {                                                                               \
        type p;                                                                     \
        memset(&p, 0x5a, sizeof(p));                                                \
        ncclResult_t res = (table)->getProperties(dev, &p);                         \
        if (res == ncclSuccess) {                                                   \
            PROPS_COMMON(out, p);                                                   \
            EXTRA;                                                                  \
        }                                                                           \
        return res;                                                                 \
    }

static ncclResult_t plugin_props(const stb_plugin_t *pl, int dev, stb_plugin_props_t *out)
{
    switch (pl->version) {
#if PLUGIN_HAVE_V12
    case 12:
        PROPS_GET(ncclNetProperties_v12_t, (const ncclNet_v12_t *)pl->table, {
            PROPS_V9(out, p);
            out->max_multi_request = p.maxMultiRequestSize;
            out->rail_id = p.railId;
            out->plane_id = p.planeId;
        });
#endif
    case 11:
        PROPS_GET(ncclNetProperties_v11_t, V11(pl), {
            PROPS_V9(out, p);
            out->max_multi_request = p.maxMultiRequestSize;
        });
    case 10: PROPS_GET(ncclNetProperties_v10_t, V10(pl), PROPS_V9(out, p));
    case 9: PROPS_GET(ncclNetProperties_v9_t, V9(pl), PROPS_V9(out, p));
    case 8:
        PROPS_GET(ncclNetProperties_v8_t, V8(pl), {
            PROPS_V7(out, p);
            out->reg_is_global = p.regIsGlobal;
        });
    case 7: PROPS_GET(ncclNetProperties_v7_t, V7(pl), PROPS_V7(out, p));
    default: PROPS_GET(ncclNetProperties_v6_t, V6(pl), {});
    }
}

/* ------------------------------------------------------------------ loading */

/* The versions this loader drives, newest first: STB_PLUGIN_NEWEST takes the first found. */
static const int plugin_versions[] = {
#if PLUGIN_HAVE_V12
    12,
#endif
    11, 10, 9, 8, 7, 6,
};
#define PLUGIN_NVERSIONS ((int)(sizeof(plugin_versions) / sizeof(plugin_versions[0])))

static int plugin_verbose;
static int plugin_warnings;
static pthread_mutex_t plugin_warn_lock = PTHREAD_MUTEX_INITIALIZER;
static char plugin_warn_last[1024];

/* NCCL's logger: NCCL_DEBUG=WARN semantics (counted), INFO too when verbose. */
static void plugin_logger(ncclDebugLogLevel level, unsigned long flags, const char *file,
                          int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (level == NCCL_LOG_NONE || level == NCCL_LOG_ABORT ||
        (level == NCCL_LOG_INFO && plugin_verbose < 1) ||
        (level == NCCL_LOG_TRACE && plugin_verbose < 2) || level > NCCL_LOG_TRACE)
        return;
    plugin_warnings += level == NCCL_LOG_WARN;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (level == NCCL_LOG_WARN) {
        pthread_mutex_lock(&plugin_warn_lock);
        snprintf(plugin_warn_last, sizeof(plugin_warn_last), "%s", msg);
        pthread_mutex_unlock(&plugin_warn_lock);
    }
    stb_log_err("NCCL %s (plugin) %s:%d %s",
                level == NCCL_LOG_WARN ? "WARN" : level == NCCL_LOG_INFO ? "INFO" : "TRACE",
                file != NULL ? file : "?", line, msg);
}

/*
 * The profiler callback NCCL hands a v10+ plugin. While stb_plugin_prof_record(1) is on,
 * isend and irecv pass &prof_handle as their profiler handle (NCCL passes one only while
 * a profiler wants net events) and the events that name it are counted.
 */
static int prof_on;
static char prof_handle;
static stb_plugin_prof_t prof_seen;

static ncclResult_t plugin_profiler(void **eHandle, int type, void *phandle, int64_t pluginId,
                                    void *extData)
{
    if (eHandle == NULL)
        return ncclSuccess;
    if (type == ncclProfilerNetEventStart) {
        *eHandle = NULL;
        if (!prof_on || phandle != &prof_handle)
            return ncclSuccess;
        prof_seen.starts++;
        prof_seen.plugin_id = pluginId;
        if (((uint64_t)pluginId & ~0xffffull) == NCCL_PROFILER_NET_TYPE_SOCK && extData != NULL) {
            const ncclProfilerNetSockDescr_v1_t *d = extData;
            prof_seen.sock_events += d->type == ncclProfileSocket;
            prof_seen.bytes[d->sock.op == 0] += d->sock.length;
            prof_seen.last_fd = d->sock.fd;
        }
        if (((uint64_t)pluginId & ~0xffffull) == NCCL_PROFILER_NET_TYPE_IB && extData != NULL) {
            const ncclProfilerNetIbDescr_v1_t *d = extData;
            int good = d->type == ncclProfileQp && d->qp.qpNum != 0 && d->qp.device >= 0 &&
                        d->qp.device < 8;
            prof_seen.qp_events += d->type == ncclProfileQp;
            prof_seen.qp_bytes += d->qp.length;
            prof_seen.qp_bad += !good;
            if (good)
                prof_seen.qp_devices |= 1 << d->qp.device;
        }
        *eHandle = &prof_seen;
    } else if (type == ncclProfilerNetEventStop && *eHandle == &prof_seen) {
        prof_seen.stops++;
    }
    return ncclSuccess;
}

void stb_plugin_prof_record(int on)
{
    prof_on = on;
    memset(&prof_seen, 0, sizeof(prof_seen));
}

void stb_plugin_prof_get(stb_plugin_prof_t *out)
{
    *out = prof_seen;
}

int stb_plugin_warnings(void)
{
    return plugin_warnings;
}

ncclDebugLogger_t stb_plugin_logger(void)
{
    return plugin_logger;
}

void stb_plugin_props_v11(stb_plugin_props_t *out, const ncclNetProperties_v11_t *p)
{
    memset(out, 0, sizeof(*out));
    PROPS_COMMON(out, *p);
    PROPS_V9(out, *p);
    out->max_multi_request = p->maxMultiRequestSize;
    out->rail_id = out->plane_id = NCCL_NET_ID_UNDEF;
}

#if PLUGIN_HAVE_V12
void stb_plugin_props_v12(stb_plugin_props_t *out, const ncclNetProperties_v12_t *p)
{
    memset(out, 0, sizeof(*out));
    PROPS_COMMON(out, *p);
    PROPS_V9(out, *p);
    out->max_multi_request = p->maxMultiRequestSize;
    out->rail_id = p->railId;
    out->plane_id = p->planeId;
}
#endif

void stb_plugin_last_warning(char *buf, size_t len)
{
    pthread_mutex_lock(&plugin_warn_lock);
    snprintf(buf, len, "%s", plugin_warn_last);
    pthread_mutex_unlock(&plugin_warn_lock);
}

const char *stb_plugin_result_str(ncclResult_t res)
{
    static const char *const names[] = {
        "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
        "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress",
    };
    if ((unsigned)res < sizeof(names) / sizeof(names[0]))
        return names[res];
    return "ncclResult(?)";
}

/* dlsym of one version's symbol: 1 found, 0 not exported. */
static int plugin_lookup(stb_plugin_t *pl, int version)
{
    snprintf(pl->symbol, sizeof(pl->symbol), "ncclNetPlugin_v%d", version);
    pl->table = dlsym(pl->dl, pl->symbol);
    pl->version = version;
    return pl->table != NULL;
}

strata_status_t stb_plugin_load(const char *path, int version, int verbose,
                                stb_plugin_t **plugin_p, char *err, size_t errlen)
{
    int found = 0;

    if (path == NULL)
        path = STRATA_PLUGIN_PATH;
    if (version != STB_PLUGIN_NEWEST &&
        (version < plugin_versions[PLUGIN_NVERSIONS - 1] || version > plugin_versions[0]))
        return stb_err_set(err, errlen, "this loader drives ABI versions %d..%d, not %d",
                           plugin_versions[PLUGIN_NVERSIONS - 1], plugin_versions[0], version);
    stb_plugin_t *pl = calloc(1, sizeof(*pl));
    if (pl == NULL) {
        stb_err_set(err, errlen, "out of memory");
        return STRATA_ERR_NO_MEMORY;
    }
    snprintf(pl->path, sizeof(pl->path), "%s", path);
    pl->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (pl->dl == NULL) {
        stb_err_set(err, errlen, "dlopen(%s): %s", path, dlerror());
        free(pl);
        return STRATA_ERR_NOT_FOUND;
    }
    for (int i = 0; i < PLUGIN_NVERSIONS && !found; i++)
        if (version == STB_PLUGIN_NEWEST || version == plugin_versions[i])
            found = plugin_lookup(pl, plugin_versions[i]);
    if (!found) {
        if (version == STB_PLUGIN_NEWEST)
            stb_err_set(err, errlen, "%s exports no ncclNetPlugin_v%d..v%d", path,
                        plugin_versions[PLUGIN_NVERSIONS - 1], plugin_versions[0]);
        else
            stb_err_set(err, errlen, "ncclNetPlugin_v%d not exported by %s", version, path);
        dlclose(pl->dl);
        free(pl);
        return STRATA_ERR_NOT_FOUND;
    }
    plugin_verbose = verbose;
    *plugin_p = pl;
    return STRATA_OK;
}

void stb_plugin_unload(stb_plugin_t *pl)
{
    if (pl == NULL)
        return;
    dlclose(pl->dl);
    free(pl);
}

void stb_plugin_forget(stb_plugin_t *pl)
{
    free(pl);
}

int stb_plugin_version(const stb_plugin_t *pl)
{
    return pl->version;
}

const char *stb_plugin_symbol(const stb_plugin_t *pl)
{
    return pl->symbol;
}

const char *stb_plugin_path(const stb_plugin_t *pl)
{
    return pl->path;
}

const char *stb_plugin_name(const stb_plugin_t *pl)
{
    const char *name = *(const char *const *)pl->table;   /* every version starts with name */
    return name != NULL ? name : "(unnamed)";
}

const void *stb_plugin_table(const stb_plugin_t *pl)
{
    return pl->table;
}

void *stb_plugin_ctx(const stb_plugin_t *pl)
{
    return pl->ctx;
}

const void *stb_plugin_dlsym(const stb_plugin_t *pl, const char *symbol)
{
    return dlsym(pl->dl, symbol);
}

/* ------------------------------------------------------------------ calls */

ncclResult_t stb_plugin_init(stb_plugin_t *pl, uint64_t comm_id)
{
    if (pl->version >= 11) {
        ncclNetCommConfig_v11_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};
        void *ctx = NULL;
        ncclResult_t res = V11(pl)->init(&ctx, comm_id, &cfg, plugin_logger, plugin_profiler);
        pl->ctx = ctx;
        return res;
    }
    switch (pl->version) {
    case 10: return V10(pl)->init(plugin_logger, plugin_profiler);
    case 9: return V9(pl)->init(plugin_logger);
    case 8: return V8(pl)->init(plugin_logger);
    case 7: return V7(pl)->init(plugin_logger);
    default: return V6(pl)->init(plugin_logger);
    }
}

ncclResult_t stb_plugin_finalize(stb_plugin_t *pl)
{
    ncclResult_t res = ncclSuccess;

    if (pl->version >= 11)
        res = V11(pl)->finalize(pl->ctx);
    pl->ctx = NULL;
    return res;
}

ncclResult_t stb_plugin_devices(stb_plugin_t *pl, int *ndev)
{
    return NET_SAME(pl, devices, ndev);
}

ncclResult_t stb_plugin_props(stb_plugin_t *pl, int dev, stb_plugin_props_t *out)
{
    memset(out, 0, sizeof(*out));
    out->reg_is_global = out->force_flush = out->net_device_type = -1;
    out->net_device_version = out->vprops_ndevs = out->vprops_dev0 = -1;
    out->max_multi_request = out->rail_id = out->plane_id = -1;
    return plugin_props(pl, dev, out);
}

ncclResult_t stb_plugin_make_vdev(stb_plugin_t *pl, int ndevs, const int *devs, int *vdev)
{
    if (ndevs < 0 || ndevs > STB_PLUGIN_MAX_VDEV_MEMBERS)
        return ncclInvalidArgument;
#if PLUGIN_HAVE_V12
    if (pl->version == 12) {
        ncclNetVDeviceProps_v12_t p = {.ndevs = ndevs};
        memcpy(p.devs, devs, (size_t)ndevs * sizeof(int));
        const ncclNet_v12_t *t = pl->table;
        return t->makeVDevice != NULL ? t->makeVDevice(vdev, &p) : ncclInvalidUsage;
    }
#endif
    if (pl->version < 11 || ndevs > NCCL_NET_MAX_DEVS_PER_NIC)
        return ncclInvalidUsage;
    ncclNetVDeviceProps_v11_t p = {.ndevs = ndevs};
    memcpy(p.devs, devs, (size_t)ndevs * sizeof(int));
    return V11(pl)->makeVDevice != NULL ? V11(pl)->makeVDevice(vdev, &p) : ncclInvalidUsage;
}

ncclResult_t stb_plugin_listen(stb_plugin_t *pl, int dev, void *handle, void **listen)
{
    switch (pl->version) {
    case 10: return V10(pl)->listen(dev, handle, listen);
    case 9: return V9(pl)->listen(dev, handle, listen);
    case 8: return V8(pl)->listen(dev, handle, listen);
    case 7: return V7(pl)->listen(dev, handle, listen);
    case 6: return V6(pl)->listen(dev, handle, listen);
    default: return V11(pl)->listen(pl->ctx, dev, handle, listen);
    }
}

ncclResult_t stb_plugin_connect(stb_plugin_t *pl, int dev, void *handle, void **send)
{
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;
    ncclNetCommConfig_v10_t cfg = {.trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF};

    switch (pl->version) {
    case 10: return V10(pl)->connect(dev, &cfg, handle, send, &dev_comm);
    case 9: return V9(pl)->connect(dev, handle, send, &dev_comm);
    case 8: return V8(pl)->connect(dev, handle, send, &dev_comm);
    case 7: return V7(pl)->connect(dev, handle, send, &dev_comm);
    case 6: return V6(pl)->connect(dev, handle, send);
    default: return V11(pl)->connect(pl->ctx, dev, handle, send, &dev_comm);
    }
}

ncclResult_t stb_plugin_accept(stb_plugin_t *pl, void *listen, void **recv)
{
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;

    switch (pl->version) {
    case 10: return V10(pl)->accept(listen, recv, &dev_comm);
    case 9: return V9(pl)->accept(listen, recv, &dev_comm);
    case 8: return V8(pl)->accept(listen, recv, &dev_comm);
    case 7: return V7(pl)->accept(listen, recv, &dev_comm);
    case 6: return V6(pl)->accept(listen, recv);
    default: return V11(pl)->accept(listen, recv, &dev_comm);
    }
}

ncclResult_t stb_plugin_reg_mr(stb_plugin_t *pl, void *comm, void *data, size_t size, int type,
                               void **mh)
{
    if (pl->version >= 8)
        return NET_SAME(pl, regMr, comm, data, size, type, mh);
    if (size > INT_MAX)
        return ncclInvalidArgument;
    return pl->version == 7 ? V7(pl)->regMr(comm, data, (int)size, type, mh)
                            : V6(pl)->regMr(comm, data, (int)size, type, mh);
}

ncclResult_t stb_plugin_dereg_mr(stb_plugin_t *pl, void *comm, void *mh)
{
    return NET_SAME(pl, deregMr, comm, mh);
}

ncclResult_t stb_plugin_isend(stb_plugin_t *pl, void *comm, void *data, size_t size, int tag,
                              void *mh, void **req)
{
    if (pl->version >= 11)
        return V11(pl)->isend(comm, data, size, tag, mh, prof_on ? &prof_handle : NULL, req);
    if (pl->version == 10)
        return V10(pl)->isend(comm, data, size, tag, mh, prof_on ? &prof_handle : NULL, req);
    if (pl->version == 9)
        return V9(pl)->isend(comm, data, size, tag, mh, req);
    if (size > INT_MAX)
        return ncclInvalidArgument;
    return pl->version == 8   ? V8(pl)->isend(comm, data, (int)size, tag, mh, req)
           : pl->version == 7 ? V7(pl)->isend(comm, data, (int)size, tag, mh, req)
                              : V6(pl)->isend(comm, data, (int)size, tag, mh, req);
}

ncclResult_t stb_plugin_irecv(stb_plugin_t *pl, void *comm, int n, void **data,
                              const size_t *sizes, const int *tags, void **mhs, void **req)
{
    size_t zsizes[STB_PLUGIN_MAX_RECVS];
    int isizes[STB_PLUGIN_MAX_RECVS], itags[STB_PLUGIN_MAX_RECVS];
    void *phandles[STB_PLUGIN_MAX_RECVS] = {0};

    if (n < 1 || n > STB_PLUGIN_MAX_RECVS)
        return ncclInvalidArgument;
    for (int i = 0; i < n; i++) {
        zsizes[i] = sizes[i];
        itags[i] = tags[i];
        if (pl->version <= 8 && sizes[i] > INT_MAX)
            return ncclInvalidArgument;
        isizes[i] = (int)sizes[i];
        phandles[i] = prof_on ? &prof_handle : NULL;
    }
    switch (pl->version) {
    case 10: return V10(pl)->irecv(comm, n, data, zsizes, itags, mhs, phandles, req);
    case 9: return V9(pl)->irecv(comm, n, data, zsizes, itags, mhs, req);
    case 8: return V8(pl)->irecv(comm, n, data, isizes, itags, mhs, req);
    case 7: return V7(pl)->irecv(comm, n, data, isizes, itags, mhs, req);
    case 6: return V6(pl)->irecv(comm, n, data, isizes, itags, mhs, req);
    default: return V11(pl)->irecv(comm, n, data, zsizes, itags, mhs, phandles, req);
    }
}

ncclResult_t stb_plugin_test(stb_plugin_t *pl, void *req, int *done, int *sizes)
{
    return NET_SAME(pl, test, req, done, sizes);
}

ncclResult_t stb_plugin_iflush(stb_plugin_t *pl, void *comm, int n, void **data, int *sizes,
                               void **mhs, void **req)
{
    return NET_SAME(pl, iflush, comm, n, data, sizes, mhs, req);
}

ncclResult_t stb_plugin_close_send(stb_plugin_t *pl, void *comm)
{
    return NET_SAME(pl, closeSend, comm);
}

ncclResult_t stb_plugin_close_recv(stb_plugin_t *pl, void *comm)
{
    return NET_SAME(pl, closeRecv, comm);
}

ncclResult_t stb_plugin_close_listen(stb_plugin_t *pl, void *listen)
{
    return NET_SAME(pl, closeListen, listen);
}

ncclResult_t stb_plugin_connect_accept(stb_plugin_t *pl, int dev, void *handle, void *listen,
                                       uint64_t deadline_ns, int (*give_up)(void *arg),
                                       void *arg, void **send_p, void **recv_p)
{
    void *send = NULL, *recv = NULL;
    ncclResult_t res = ncclSuccess;

    while (send == NULL || recv == NULL) {
        if (send == NULL && (res = stb_plugin_connect(pl, dev, handle, &send)) != ncclSuccess)
            break;
        if (recv == NULL && (res = stb_plugin_accept(pl, listen, &recv)) != ncclSuccess)
            break;
        if (send != NULL && recv != NULL)
            break;
        if (stu_deadline_passed(deadline_ns) || (give_up != NULL && give_up(arg))) {
            res = ncclInternalError;
            break;
        }
        stu_sleep_ms(PLUGIN_POLL_NAP_MS);
    }
    if (res != ncclSuccess) {
        if (send != NULL)
            stb_plugin_close_send(pl, send);
        if (recv != NULL)
            stb_plugin_close_recv(pl, recv);
        return res;
    }
    *send_p = send;
    *recv_p = recv;
    return ncclSuccess;
}

/* ------------------------------------------------------------------ the tools' view */

strata_status_t stb_plugin_check(ncclResult_t res, const char *call)
{
    if (res == ncclSuccess)
        return STRATA_OK;
    stb_log_err("plugin %s failed: %s (%d)", call, stb_plugin_result_str(res), (int)res);
    switch (res) {
    case ncclSystemError: return STRATA_ERR_IO;
    case ncclInvalidArgument:
    case ncclInvalidUsage: return STRATA_ERR_INVALID;
    case ncclRemoteError: return STRATA_ERR_REMOTE;
    default: return STRATA_ERR_INTERNAL;
    }
}

strata_status_t stb_plugin_open(const char *path, uint64_t comm_id, int verbose,
                                stb_plugin_t **plugin_p)
{
    char why[512];
    stb_plugin_t *pl;
    strata_status_t status = stb_plugin_load(path, STB_PLUGIN_NEWEST, verbose, &pl, why,
                                             sizeof(why));

    if (status != STRATA_OK) {
        stb_log_err("cannot load the plugin: %s", why);
        return status;
    }
    status = stb_plugin_check(stb_plugin_init(pl, comm_id), "init");
    if (status != STRATA_OK) {
        /* NCCL 2.28.9 calls finalize even after a failed init; do the same. */
        stb_plugin_finalize(pl);
        stb_plugin_unload(pl);
        return status;
    }
    *plugin_p = pl;
    return STRATA_OK;
}

void stb_plugin_close(stb_plugin_t *pl)
{
    if (pl == NULL)
        return;
    stb_plugin_check(stb_plugin_finalize(pl), "finalize");
    stb_plugin_unload(pl);
}

/* ------------------------------------------------------------------ the tuner */

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
        stb_plugin_check(t->v6->finalize(t->ctx), "tuner finalize");
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
    strata_status_t status = stb_plugin_check(t->v6->init(&t->ctx, comm_id, nranks, nnodes,
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
    return stb_plugin_check(t->v6->getCollInfo(t->ctx, (ncclFunc_t)func, nbytes, pipe_ops,
                                               (float **)(void *)table, NCCL_NUM_ALGORITHMS,
                                               NCCL_NUM_PROTOCOLS, reg_buff, nchannels_p),
                            "tuner getCollInfo");
}

strata_status_t stb_tuner_chunk(stb_tuner_t *t, int func, size_t nbytes, int algo, int proto,
                                int nchannels, size_t *chunk_p)
{
    if (t->version < 6 || t->v6->getChunkSize == NULL)
        return STRATA_OK;
    return stb_plugin_check(t->v6->getChunkSize(t->ctx, (ncclFunc_t)func, nbytes, algo, proto,
                                                nchannels, chunk_p), "tuner getChunkSize");
}
