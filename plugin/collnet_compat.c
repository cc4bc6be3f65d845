/*
 * ncclCollNetPlugin_v10 (NCCL 2.26, 2.27) and _v9 (NCCL 2.23 to 2.25): adapters over the
 * v11 CollNet. Their init takes no context and they have no finalize, as the net's v10 and
 * v9 (plugin/net_compat.h): init initialises the net's adapters once and listen runs on
 * their default context; the properties are the v10 / v9 net's own (the devices are the
 * net's). Every other entry point has v11's signature with the older type names, whose
 * layouts equal v11's (include/nccl/net_v10.h, net_v9.h check them): forwarded.
 */
#include "plugin/collnet.h"
#include "plugin/net_compat.h"
#include "util/compiler.h"
#include "util/log.h"

_Static_assert(sizeof(ncclNetSGE_v10_t) == sizeof(ncclNetSGE_v11_t) &&
               sizeof(ncclNetSGE_v9_t) == sizeof(ncclNetSGE_v11_t),
               "a scatter-gather entry has one layout in v9, v10 and v11");

static ncclResult_t cn_compat_init(ncclDebugLogger_t log_fn)
{
    return stp_compat_init(log_fn, NULL);
}

static ncclResult_t cn_compat_devices(int *ndev)
{
    if (ndev == NULL || stp_state_transport() == NULL) {
        STU_WARN("collnet: devices: %s", ndev == NULL ? "NULL ndev" : "called before init");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    *ndev = stp_cn_ndev();
    return ncclSuccess;
}

static ncclResult_t cn_compat_listen(int dev, void *handle, void **listen_comm)
{
    void *ctx = NULL;
    ncclResult_t res = stp_compat_ctx_get(NCCL_NET_TRAFFIC_CLASS_UNDEF, &ctx);

    if (res != ncclSuccess)
        return res;
    return stp_cn_listen(ctx, dev, handle, listen_comm);
}

static ncclResult_t cn_v10_props(int dev, ncclNetProperties_v10_t *props)
{
    ncclResult_t res = ncclNetPlugin_v10.getProperties(dev, props);
    if (res == ncclSuccess &&
        (props->maxCollBytes == 0 || props->maxCollBytes > (size_t)NCCL_MAX_NET_SIZE_BYTES))
        props->maxCollBytes = MAX_COLLNET_SIZE;
    return res;
}

static ncclResult_t cn_v9_props(int dev, ncclNetProperties_v9_t *props)
{
    ncclResult_t res = ncclNetPlugin_v9.getProperties(dev, props);
    if (res == ncclSuccess &&
        (props->maxCollBytes == 0 || props->maxCollBytes > (size_t)NCCL_MAX_NET_SIZE_BYTES))
        props->maxCollBytes = MAX_COLLNET_SIZE;
    return res;
}

/* The older SGE types are v11's layout under another name. */
#define CN_COMPAT_SGE_WRAPPERS(v)                                                             \
    static ncclResult_t cn_v##v##_iallgather(void *cc, void *send, int n,                    \
                                            ncclNetSGE_v##v##_t *parts, size_t bpr,          \
                                            size_t wo, size_t wb, void *smh, void **req)     \
    {                                                                                         \
        return stp_cn_iallgather(cc, send, n, (ncclNetSGE_v11_t *)(void *)parts, bpr, wo, wb, \
                                 smh, req);                                                   \
    }                                                                                         \
    static ncclResult_t cn_v##v##_ireducescatter(void *cc, int n, ncclNetSGE_v##v##_t *parts, \
                                                void *recv, size_t bpr, size_t wo, size_t wb, \
                                                ncclDataType_t dt, ncclRedOp_t op,           \
                                                void *rmh, void **req)                       \
    {                                                                                         \
        return stp_cn_ireducescatter(cc, n, (ncclNetSGE_v11_t *)(void *)parts, recv, bpr, wo, \
                                     wb, dt, op, rmh, req);                                   \
    }

CN_COMPAT_SGE_WRAPPERS(10)
CN_COMPAT_SGE_WRAPPERS(9)

#define CN_COMPAT_TABLE(v)                                                                    \
    STU_EXPORT const ncclCollNet_v##v##_t ncclCollNetPlugin_v##v = {                          \
        .name = STP_PLUGIN_NAME,                                                              \
        .init = cn_compat_init,                                                               \
        .devices = cn_compat_devices,                                                         \
        .getProperties = cn_v##v##_props,                                                     \
        .listen = cn_compat_listen,                                                           \
        .connect = stp_cn_connect,                                                            \
        .reduceSupport = stp_cn_reduce_support,                                               \
        .regMr = stp_cn_reg_mr,                                                               \
        .regMrDmaBuf = stp_cn_reg_mr_dmabuf,                                                  \
        .deregMr = stp_cn_dereg_mr,                                                           \
        .iallreduce = stp_cn_iallreduce,                                                      \
        .iallgather = cn_v##v##_iallgather,                                                   \
        .ireducescatter = cn_v##v##_ireducescatter,                                           \
        .iflush = stp_cn_iflush,                                                              \
        .test = stp_cn_test,                                                                  \
        .closeColl = stp_cn_close_coll,                                                       \
        .closeListen = stp_cn_close_listen,                                                   \
        .makeVDevice = NULL,                                                                  \
    }

CN_COMPAT_TABLE(10);
CN_COMPAT_TABLE(9);
