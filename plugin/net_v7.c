/*
 * ncclNetPlugin_v7, for NCCL 2.19: an adapter over ncclNetPlugin_v11.
 *
 * Against v8: regMr takes an int size too, and the properties have no
 * regIsGlobal (NCCL then treats registrations as per-comm).
 */
#include "plugin/net_compat.h"

#include "util/compiler.h"

static const stp_compat_field_t stp_net_v7_props_fields[] = {
    STP_COMPAT_FIELDS_V6(ncclNetProperties_v7_t),
    STP_COMPAT_FIELDS_V7(ncclNetProperties_v7_t),
};

static const stp_compat_props_layout_t stp_net_v7_props =
    STP_COMPAT_PROPS_LAYOUT(7, ncclNetProperties_v7_t, stp_net_v7_props_fields);

static ncclResult_t stp_net_v7_init(ncclDebugLogger_t log_fn)
{
    return stp_compat_init(log_fn, NULL);
}

static ncclResult_t stp_net_v7_props_get(int dev, ncclNetProperties_v7_t *props)
{
    return stp_compat_props_get(dev, &stp_net_v7_props, props);
}

STU_EXPORT const ncclNet_v7_t ncclNetPlugin_v7 = {
    .name = STP_PLUGIN_NAME,
    .init = stp_net_v7_init,
    .devices = stp_compat_devices,
    .getProperties = stp_net_v7_props_get,
    .listen = stp_compat_listen,
    .connect = stp_compat_connect,
    .accept = stp_compat_accept,
    .regMr = stp_compat_mr_reg_int,
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
