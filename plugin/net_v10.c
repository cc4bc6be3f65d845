/*
 * ncclNetPlugin_v10, for NCCL 2.26 and 2.27: an adapter over ncclNetPlugin_v11.
 *
 * v10 differs from v11 in three ways that need code: init takes no context
 * (the adapters keep one, net_compat.c), connect carries the comm config
 * (its traffic class picks the v11 context created with that class), and the
 * properties lack maxMultiRequestSize. Everything else is v11's signature,
 * forwarded. makeVDevice is NULL: see net_v9.c.
 */
#include "plugin/net_compat.h"

#include "util/compiler.h"

static const stp_compat_field_t stp_net_v10_props_fields[] = {
    STP_COMPAT_FIELDS_V6(ncclNetProperties_v10_t),
    STP_COMPAT_FIELDS_V7(ncclNetProperties_v10_t),
    STP_COMPAT_FIELDS_V8(ncclNetProperties_v10_t),
    STP_COMPAT_FIELDS_V9(ncclNetProperties_v10_t),
};

static const stp_compat_props_layout_t stp_net_v10_props =
    STP_COMPAT_PROPS_LAYOUT(10, ncclNetProperties_v10_t, stp_net_v10_props_fields);

static ncclResult_t stp_net_v10_init(ncclDebugLogger_t log_fn, ncclProfilerCallback_t prof_fn)
{
    return stp_compat_init(log_fn, prof_fn);
}

static ncclResult_t stp_net_v10_props_get(int dev, ncclNetProperties_v10_t *props)
{
    return stp_compat_props_get(dev, &stp_net_v10_props, props);
}

/* A NULL config, or an undefined class, means the default context. */
static ncclResult_t stp_net_v10_connect(int dev, ncclNetCommConfig_v10_t *config, void *handle,
                                        void **send_comm,
                                        ncclNetDeviceHandle_v10_t **send_dev_comm)
{
    int traffic_class = config != NULL ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;

    return stp_compat_connect_tc(dev, traffic_class, handle, send_comm, send_dev_comm);
}

static ncclResult_t stp_net_v10_send(void *send_comm, void *data, size_t size, int tag,
                                     void *mhandle, void *phandle, void **request)
{
    return ncclNetPlugin_v11.isend(send_comm, data, size, tag, mhandle, phandle, request);
}

static ncclResult_t stp_net_v10_recv(void *recv_comm, int n, void **data, size_t *sizes,
                                     int *tags, void **mhandles, void **phandles, void **request)
{
    return ncclNetPlugin_v11.irecv(recv_comm, n, data, sizes, tags, mhandles, phandles,
                                   request);
}

STU_EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = STP_PLUGIN_NAME,
    .init = stp_net_v10_init,
    .devices = stp_compat_devices,
    .getProperties = stp_net_v10_props_get,
    .listen = stp_compat_listen,
    .connect = stp_net_v10_connect,
    .accept = stp_compat_accept,
    .regMr = stp_compat_mr_reg,
    .regMrDmaBuf = stp_compat_mr_reg_dmabuf,
    .deregMr = stp_compat_mr_dereg,
    .isend = stp_net_v10_send,
    .irecv = stp_net_v10_recv,
    .iflush = stp_compat_flush,
    .test = stp_compat_test,
    .closeSend = stp_compat_send_close,
    .closeRecv = stp_compat_recv_close,
    .closeListen = stp_compat_listen_close,
    .getDeviceMr = stp_compat_mr_device_get,
    .irecvConsumed = stp_compat_recv_consumed,
    .makeVDevice = NULL,
};
