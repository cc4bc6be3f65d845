/*
 * ncclNetPlugin_v8, for NCCL 2.20 to 2.23: an adapter over ncclNetPlugin_v11.
 *
 * Against v9: isend/irecv sizes are int (widened, negatives refused), and the
 * properties have no forceFlush, vProps, maxP2pBytes or maxCollBytes.
 */
#include "plugin/net_compat.h"

#include "util/compiler.h"

static const stp_compat_field_t stp_net_v8_props_fields[] = {
    STP_COMPAT_FIELDS_V6(ncclNetProperties_v8_t),
    STP_COMPAT_FIELDS_V7(ncclNetProperties_v8_t),
    STP_COMPAT_FIELDS_V8(ncclNetProperties_v8_t),
};

static const stp_compat_props_layout_t stp_net_v8_props =
    STP_COMPAT_PROPS_LAYOUT(8, ncclNetProperties_v8_t, stp_net_v8_props_fields);

static ncclResult_t stp_net_v8_init(ncclDebugLogger_t log_fn)
{
    return stp_compat_init(log_fn, NULL);
}

static ncclResult_t stp_net_v8_props_get(int dev, ncclNetProperties_v8_t *props)
{
    return stp_compat_props_get(dev, &stp_net_v8_props, props);
}

STU_EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = STP_PLUGIN_NAME,
    .init = stp_net_v8_init,
    .devices = stp_compat_devices,
    .getProperties = stp_net_v8_props_get,
    .listen = stp_compat_listen,
    .connect = stp_compat_connect,
    .accept = stp_compat_accept,
    .regMr = stp_compat_mr_reg,
    .regMrDmaBuf = stp_compat_mr_reg_dmabuf,
    .deregMr = stp_compat_mr_dereg,
    .isend = stp_compat_send_int,
    .irecv = stp_compat_recv_int,
    .iflush = stp_compat_flush,
    .test = stp_compat_test,
    .closeSend = stp_compat_send_close,
    .closeRecv = stp_compat_recv_close,
    .closeListen = stp_compat_listen_close,
    .getDeviceMr = stp_compat_mr_device_get,
    .irecvConsumed = stp_compat_recv_consumed,
};
