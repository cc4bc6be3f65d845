/*
 * ncclNetPlugin_v6, for NCCL 2.13 to 2.18: an adapter over ncclNetPlugin_v11.
 *
 * Against v7: no device offload. connect/accept have no device handle, so
 * v11 gets a pointer to a NULL one (no offload asked for); getDeviceMr and
 * irecvConsumed do not exist; the properties have no netDeviceType, and a
 * device v11 reports as offloaded is refused rather than shown as a host one.
 */
#include "plugin/net_compat.h"

#include "util/compiler.h"

static const stp_compat_field_t stp_net_v6_props_fields[] = {
    STP_COMPAT_FIELDS_V6(ncclNetProperties_v6_t),
};

static const stp_compat_props_layout_t stp_net_v6_props =
    STP_COMPAT_PROPS_LAYOUT(6, ncclNetProperties_v6_t, stp_net_v6_props_fields);

static ncclResult_t stp_net_v6_init(ncclDebugLogger_t log_fn)
{
    return stp_compat_init(log_fn, NULL);
}

static ncclResult_t stp_net_v6_props_get(int dev, ncclNetProperties_v6_t *props)
{
    return stp_compat_props_get(dev, &stp_net_v6_props, props);
}

static ncclResult_t stp_net_v6_connect(int dev, void *handle, void **send_comm)
{
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;

    return stp_compat_connect(dev, handle, send_comm, &dev_comm);
}

static ncclResult_t stp_net_v6_accept(void *listen_comm, void **recv_comm)
{
    ncclNetDeviceHandle_v11_t *dev_comm = NULL;

    return stp_compat_accept(listen_comm, recv_comm, &dev_comm);
}

STU_EXPORT const ncclNet_v6_t ncclNetPlugin_v6 = {
    .name = STP_PLUGIN_NAME,
    .init = stp_net_v6_init,
    .devices = stp_compat_devices,
    .getProperties = stp_net_v6_props_get,
    .listen = stp_compat_listen,
    .connect = stp_net_v6_connect,
    .accept = stp_net_v6_accept,
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
};
