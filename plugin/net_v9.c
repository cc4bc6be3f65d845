/*
 * ncclNetPlugin_v9, for NCCL 2.24 and 2.25: an adapter over ncclNetPlugin_v11.
 *
 * Against v10: init has no profiler callback, connect no traffic class (the
 * default context is used), isend/irecv no profiler handles.
 *
 * makeVDevice is NULL in v9 and v10 alike. NCCL decides whether to fuse NICs
 * by whether the pointer is NULL, and treats a failed fusion as fatal; a
 * constant table cannot copy v11's pointer, and an adapter that failed when
 * v11 has no makeVDevice would break multi-NIC hosts. So the old ABIs
 * present physical devices only.
 */
#include "plugin/net_compat.h"

#include "util/compiler.h"

static const stp_compat_field_t stp_net_v9_props_fields[] = {
    STP_COMPAT_FIELDS_V6(ncclNetProperties_v9_t),
    STP_COMPAT_FIELDS_V7(ncclNetProperties_v9_t),
    STP_COMPAT_FIELDS_V8(ncclNetProperties_v9_t),
    STP_COMPAT_FIELDS_V9(ncclNetProperties_v9_t),
};

static const stp_compat_props_layout_t stp_net_v9_props =
    STP_COMPAT_PROPS_LAYOUT(9, ncclNetProperties_v9_t, stp_net_v9_props_fields);

static ncclResult_t stp_net_v9_init(ncclDebugLogger_t log_fn)
{
    return stp_compat_init(log_fn, NULL);
}

static ncclResult_t stp_net_v9_props_get(int dev, ncclNetProperties_v9_t *props)
{
    return stp_compat_props_get(dev, &stp_net_v9_props, props);
}

STU_EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = STP_PLUGIN_NAME,
    .init = stp_net_v9_init,
    .devices = stp_compat_devices,
    .getProperties = stp_net_v9_props_get,
    .listen = stp_compat_listen,
    .connect = stp_compat_connect,
    .accept = stp_compat_accept,
    .regMr = stp_compat_mr_reg,
    .regMrDmaBuf = stp_compat_mr_reg_dmabuf,
    .deregMr = stp_compat_mr_dereg,
    .isend = stp_compat_send,
    .irecv = stp_compat_recv,
    .iflush = stp_compat_flush,
    .test = stp_compat_test,
    .closeSend = stp_compat_send_close,
    .closeRecv = stp_compat_recv_close,
    .closeListen = stp_compat_listen_close,
    .getDeviceMr = stp_compat_mr_device_get,
    .irecvConsumed = stp_compat_recv_consumed,
    .makeVDevice = NULL,
};
