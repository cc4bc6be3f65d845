/*
 * ncclCollNetPlugin_v11 (NCCL 2.28, 2.29) and ncclCollNetPlugin_v12 (NCCL 2.30): the same
 * entry points; v12 reports v12's properties. NCCL looks the CollNet up in the library that
 * gave it the net, calls init once per communicator right after the net's (an error disables
 * the CollNet only), and devices() once: 0 devices disables it too.
 */
#include <inttypes.h>

#include "plugin/collnet.h"
#include "util/compiler.h"
#include "util/log.h"

static ncclResult_t cn_init(void **ctx, uint64_t comm_id, ncclDebugLogger_t log_fn)
{
    stp_ctx_t *c = NULL;

    if (ctx == NULL) {
        STU_WARN("collnet: init: NULL ctx");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    *ctx = NULL;                    /* NCCL calls finalize(ctx) after a failed init too */
    stp_log_attach(log_fn);
    strata_status_t status = stp_state_acquire(comm_id, STT_TRAFFIC_CLASS_UNDEF, &c);
    if (status != STRATA_OK)
        return stp_status_to_nccl(status);
    STU_INFO(STU_LOG_INIT | STU_LOG_NET, "Strata collnet: init comm 0x%" PRIx64 ", %d device(s)"
             " (the net's; STRATA_COLLNET=0 reports none)", comm_id, stp_cn_ndev());
    *ctx = c;
    return ncclSuccess;
}

static ncclResult_t cn_devices(int *ndev)
{
    if (ndev == NULL || stp_state_transport() == NULL) {
        STU_WARN("collnet: devices: %s", ndev == NULL ? "NULL ndev" : "called before init");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    *ndev = stp_cn_ndev();
    return ncclSuccess;
}

static ncclResult_t cn_props_v11(int dev, ncclNetProperties_v11_t *props)
{
    if (props == NULL || dev < 0 || dev >= stp_cn_ndev()) {
        STU_WARN("collnet: getProperties(%d): %s", dev, props == NULL ? "NULL props"
                 : "no such CollNet device");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    return stp_cn_props_v11(dev, props);
}

static ncclResult_t cn_props_v12(int dev, ncclNetProperties_v12_t *props)
{
    if (props == NULL || dev < 0 || dev >= stp_cn_ndev()) {
        STU_WARN("collnet: getProperties(%d): %s", dev, props == NULL ? "NULL props"
                 : "no such CollNet device");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    return stp_cn_props_v12(dev, props);
}

static ncclResult_t cn_finalize(void *ctx)
{
    stp_state_release(ctx);
    return ncclSuccess;
}

STU_EXPORT const ncclCollNet_v11_t ncclCollNetPlugin_v11 = {
    .name = STP_PLUGIN_NAME,
    .init = cn_init,
    .devices = cn_devices,
    .getProperties = cn_props_v11,
    .listen = stp_cn_listen,
    .connect = stp_cn_connect,
    .reduceSupport = stp_cn_reduce_support,
    .regMr = stp_cn_reg_mr,
    .regMrDmaBuf = stp_cn_reg_mr_dmabuf,
    .deregMr = stp_cn_dereg_mr,
    .iallreduce = stp_cn_iallreduce,
    .iallgather = stp_cn_iallgather,
    .ireducescatter = stp_cn_ireducescatter,
    .iflush = stp_cn_iflush,
    .test = stp_cn_test,
    .closeColl = stp_cn_close_coll,
    .closeListen = stp_cn_close_listen,
    .makeVDevice = NULL,           /* physical devices only, as the net */
    .finalize = cn_finalize,
};

STU_EXPORT const ncclCollNet_v12_t ncclCollNetPlugin_v12 = {
    .name = STP_PLUGIN_NAME,
    .init = cn_init,
    .devices = cn_devices,
    .getProperties = cn_props_v12,
    .listen = stp_cn_listen,
    .connect = stp_cn_connect,
    .reduceSupport = stp_cn_reduce_support,
    .regMr = stp_cn_reg_mr,
    .regMrDmaBuf = stp_cn_reg_mr_dmabuf,
    .deregMr = stp_cn_dereg_mr,
    .iallreduce = stp_cn_iallreduce,
    .iallgather = stp_cn_iallgather,
    .ireducescatter = stp_cn_ireducescatter,
    .iflush = stp_cn_iflush,
    .test = stp_cn_test,
    .closeColl = stp_cn_close_coll,
    .closeListen = stp_cn_close_listen,
    .makeVDevice = NULL,
    .finalize = cn_finalize,
};
