/*
 * Shared state of the v6..v10 adapters: the v11 contexts they run on, and the
 * properties conversion. The entry points themselves are in net_compat_ops.c.
 */
#include "plugin/net_compat.h"

#include <pthread.h>
#include <string.h>

#include "util/log.h"

/* One v11 context, created for one traffic class. */
typedef struct stp_compat_ctx {
    ncclNetCommConfig_v11_t config;     /* kept: v11 may hold on to the pointer */
    void *ctx;
} stp_compat_ctx_t;

/*
 * ctxs[0] is the default context (undefined traffic class); nctx == 0 means
 * v11 has not been initialised through the adapters.
 */
static struct {
    pthread_mutex_t lock;
    int nctx;
    stp_compat_ctx_t ctxs[STP_COMPAT_MAX_CONTEXTS];
    ncclDebugLogger_t log_fn;
    ncclProfilerCallback_t prof_fn;
} stp_compat = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Calls v11's init for one more context. Caller holds the lock. */
static ncclResult_t stp_compat_ctx_create(int traffic_class, ncclDebugLogger_t log_fn,
                                          ncclProfilerCallback_t prof_fn)
{
    stp_compat_ctx_t *slot;
    ncclResult_t res;
    void *ctx = NULL;

    if (stp_compat.nctx == STP_COMPAT_MAX_CONTEXTS) {
        STU_WARN("v10 connect: traffic class %d would need a context of its own, but all %d "
                 "(one per traffic class) are taken", traffic_class, STP_COMPAT_MAX_CONTEXTS);
        return stp_status_to_nccl(STRATA_ERR_NO_RESOURCE);
    }
    slot = &stp_compat.ctxs[stp_compat.nctx];
    slot->config.trafficClass = traffic_class;
    res = ncclNetPlugin_v11.init(&ctx, 0, &slot->config, log_fn, prof_fn);
    if (res != ncclSuccess)
        return res;
    slot->ctx = ctx;
    stp_compat.nctx++;
    return ncclSuccess;
}

ncclResult_t stp_compat_init(ncclDebugLogger_t log_fn, ncclProfilerCallback_t prof_fn)
{
    ncclResult_t res = ncclSuccess;

    pthread_mutex_lock(&stp_compat.lock);
    if (stp_compat.nctx == 0) {
        res = stp_compat_ctx_create(NCCL_NET_TRAFFIC_CLASS_UNDEF, log_fn, prof_fn);
        if (res == ncclSuccess) {
            stp_compat.log_fn = log_fn;
            stp_compat.prof_fn = prof_fn;
        }
    }
    pthread_mutex_unlock(&stp_compat.lock);
    return res;
}

/* Finds or creates the context of a traffic class. Caller holds the lock. */
static ncclResult_t stp_compat_ctx_find(int traffic_class, void **ctx_p)
{
    ncclResult_t res;
    int i;

    if (stp_compat.nctx == 0) {
        STU_WARN("listen/connect through a pre-v11 table before its init");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    for (i = 0; i < stp_compat.nctx; i++)
        if (stp_compat.ctxs[i].config.trafficClass == traffic_class)
            break;
    if (i == stp_compat.nctx) {
        res = stp_compat_ctx_create(traffic_class, stp_compat.log_fn, stp_compat.prof_fn);
        if (res != ncclSuccess)
            return res;
    }
    *ctx_p = stp_compat.ctxs[i].ctx;
    return ncclSuccess;
}

ncclResult_t stp_compat_ctx_get(int traffic_class, void **ctx_p)
{
    ncclResult_t res;

    pthread_mutex_lock(&stp_compat.lock);
    res = stp_compat_ctx_find(traffic_class, ctx_p);
    pthread_mutex_unlock(&stp_compat.lock);
    return res;
}

void stp_compat_fini(void)
{
    pthread_mutex_lock(&stp_compat.lock);
    /* Newest first, so the default context, which began it all, ends last. */
    while (stp_compat.nctx > 0) {
        stp_compat_ctx_t *slot = &stp_compat.ctxs[--stp_compat.nctx];
        ncclResult_t res = ncclNetPlugin_v11.finalize(slot->ctx);

        if (res != ncclSuccess)
            STU_WARN("finalize of the context for traffic class %d failed (ncclResult_t %d)",
                     slot->config.trafficClass, (int)res);
        memset(slot, 0, sizeof(*slot));
    }
    stp_compat.log_fn = NULL;
    stp_compat.prof_fn = NULL;
    pthread_mutex_unlock(&stp_compat.lock);
}

ncclResult_t stp_compat_props_get(int dev, const stp_compat_props_layout_t *layout, void *props)
{
    ncclNetProperties_v11_t v11;
    ncclResult_t res;

    if (props == NULL) {
        STU_WARN("v%d getProperties(dev %d): NULL properties pointer", layout->version, dev);
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    memset(&v11, 0, sizeof(v11));
    res = ncclNetPlugin_v11.getProperties(dev, &v11);
    if (res != ncclSuccess)
        return res;
    /* v6 cannot say "offloaded": NCCL would drive such a device as a host one. */
    if (layout->version < 7 && v11.netDeviceType != NCCL_NET_DEVICE_HOST) {
        STU_WARN("v%d getProperties: device %d uses device offload (type %d), which net ABI "
                 "v%d cannot express", layout->version, dev, (int)v11.netDeviceType,
                 layout->version);
        return stp_status_to_nccl(STRATA_ERR_UNSUPPORTED);
    }

    memset(props, 0, layout->size);
    for (size_t i = 0; i < layout->nfields; i++) {
        const stp_compat_field_t *f = &layout->fields[i];

        memcpy((char *)props + f->dst_off, (const char *)&v11 + f->src_off, f->len);
    }
    return ncclSuccess;
}
