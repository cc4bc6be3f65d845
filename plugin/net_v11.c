/*
 * ncclNetPlugin_v11: NCCL's entry points, checked and forwarded to the
 * selected transport. Every entry point translates its status once, through
 * stp_status_to_nccl. Older ABI versions are thin shims over this table
 * (net_v10.c ... net_v6.c). ncclNetPlugin_v12 (NCCL 2.30) is this table with
 * v12's properties: v11's plus the rail and the plane (collnet_props.c, shared
 * with the CollNet, whose devices are these).
 */
#include <limits.h>
#include <string.h>

#include "plugin/collnet_props.h"
#include "plugin/net_prof.h"
#include "plugin/net_stats.h"
#include "plugin/plugin.h"
#include "util/compiler.h"
#include "util/log.h"

#define NET_CHECK_ARG(cond, what)                                                  \
    do {                                                                           \
        if (STU_UNLIKELY(!(cond))) {                                               \
            STU_WARN("%s: invalid argument: %s", __func__, what);                  \
            return stp_status_to_nccl(STRATA_ERR_INVALID);                         \
        }                                                                          \
    } while (0)

static ncclResult_t net_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_v11_t *config,
                             ncclDebugLogger_t log_fn, ncclProfilerCallback_t prof_fn)
{
    stp_ctx_t *c = NULL;
    strata_status_t status;

    NET_CHECK_ARG(ctx != NULL, "ctx is NULL");
    *ctx = NULL;   /* NCCL 2.28.9 calls finalize(ctx) even when init failed */
    stp_log_attach(log_fn);
    stp_prof_attach(prof_fn);
    int tc = config != NULL ? config->trafficClass : STT_TRAFFIC_CLASS_UNDEF;
    status = stp_state_acquire(comm_id, tc, &c);
    if (status != STRATA_OK)
        return stp_status_to_nccl(status);
    STU_INFO(STU_LOG_INIT | STU_LOG_NET, "init comm 0x%llx traffic class %d",
             (unsigned long long)comm_id, tc);
    *ctx = c;
    return ncclSuccess;
}

static ncclResult_t net_devices(int *ndev)
{
    NET_CHECK_ARG(ndev != NULL, "ndev is NULL");
    NET_CHECK_ARG(stp_state_transport() != NULL, "devices() before init()");
    *ndev = stp_state_ndev();
    return ncclSuccess;
}

static ncclResult_t net_get_properties(int dev, ncclNetProperties_v11_t *props)
{
    NET_CHECK_ARG(props != NULL, "props is NULL");
    const stt_props_t *p = stp_state_props(dev);
    if (p == NULL) {
        STU_WARN("getProperties: no device %d (have %d; init first)", dev, stp_state_ndev());
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    memset(props, 0, sizeof(*props));
    props->name = (char *)p->name;
    props->pciPath = p->pci_path[0] ? (char *)p->pci_path : NULL;
    props->guid = p->guid;
    props->ptrSupport = p->ptr_support;
    props->regIsGlobal = p->reg_is_global;
    props->forceFlush = p->force_flush;
    props->speed = p->speed_mbps;
    props->port = p->port;
    props->latency = p->latency_us;
    props->maxComms = p->max_comms;
    /* NCCL shares a send comm among ranks only when maxRecvs > 1; a comm where a waiting
     * message holds back the ones behind it (tcp) must not be shared (transport.h). */
    props->maxRecvs = p->tags_block ? 1 : p->max_recvs;
    props->netDeviceType = NCCL_NET_DEVICE_HOST;
    props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
    int members[STT_MAX_VDEV_MEMBERS];
    int n = stp_state_vmembers(dev, members);
    props->vProps.ndevs = n < NCCL_NET_MAX_DEVS_PER_NIC ? n : NCCL_NET_MAX_DEVS_PER_NIC;
    for (int i = 0; i < props->vProps.ndevs; i++)
        props->vProps.devs[i] = members[i];
    props->maxP2pBytes = p->max_p2p_bytes;
    props->maxCollBytes = p->max_coll_bytes;
    props->maxMultiRequestSize = 1;
    return ncclSuccess;
}

/* makeVDevice of v11 (up to NCCL_NET_MAX_DEVS_PER_NIC members) and v12 (up to 8). */
static ncclResult_t net_make_vdev(int *d, int ndevs, const int *devs, int max)
{
    NET_CHECK_ARG(d != NULL, "d is NULL");
    NET_CHECK_ARG(ndevs >= 2 && ndevs <= max, "vProps.ndevs outside 2..maxDevsPerNic");
    int16_t rail, plane, plane0 = NCCL_NET_ID_UNDEF;
    for (int i = 0; i < ndevs; i++) {
        NET_CHECK_ARG(stp_state_props(devs[i]) != NULL, "vProps.devs names no device");
        stp_cn_rail_plane(devs[i], &rail, &plane);
        if (i == 0)
            plane0 = plane;
        if (plane != plane0) {
            STU_WARN("makeVDevice: device %d is on plane %d, device %d on plane %d: devices of"
                     " different planes are never fused", devs[0], plane0, devs[i], plane);
            return stp_status_to_nccl(STRATA_ERR_UNSUPPORTED);
        }
    }
    int vdev = -1;
    strata_status_t status = stp_state_vdev_make(devs, ndevs, &vdev);
    if (status != STRATA_OK)
        return stp_status_to_nccl(status);
    *d = vdev;
    return ncclSuccess;
}

static ncclResult_t net_make_vdev_v11(int *d, ncclNetVDeviceProps_v11_t *props)
{
    NET_CHECK_ARG(props != NULL, "props is NULL");
    return net_make_vdev(d, props->ndevs, props->devs, NCCL_NET_MAX_DEVS_PER_NIC);
}

static ncclResult_t net_make_vdev_v12(int *d, ncclNetVDeviceProps_v12_t *props)
{
    NET_CHECK_ARG(props != NULL, "props is NULL");
    return net_make_vdev(d, props->ndevs, props->devs, NCCL_NET_MAX_DEVS_PER_NIC_V12);
}

static ncclResult_t net_listen(void *ctx, int dev, void *handle, void **listen_comm)
{
    stt_listen_t *l = NULL;

    NET_CHECK_ARG(stp_ctx_valid(ctx), "ctx is not a Strata context");
    NET_CHECK_ARG(handle != NULL && listen_comm != NULL, "NULL handle or listenComm");
    NET_CHECK_ARG(stp_state_props(dev) != NULL, "no such device");
    strata_status_t status = stp_state_transport()->listen(dev, handle, &l);
    if (status != STRATA_OK)
        return stp_status_to_nccl(status);
    *listen_comm = l;
    return ncclSuccess;
}

static ncclResult_t net_connect(void *ctx, int dev, void *handle, void **send_comm,
                                ncclNetDeviceHandle_v11_t **send_dev_comm)
{
    stp_ctx_t *c = ctx;
    stt_comm_t *comm = NULL;

    NET_CHECK_ARG(stp_ctx_valid(c), "ctx is not a Strata context");
    NET_CHECK_ARG(handle != NULL && send_comm != NULL, "NULL handle or sendComm");
    NET_CHECK_ARG(stp_state_props(dev) != NULL, "no such device");
    stt_conn_cfg_t cfg = {.traffic_class = c->traffic_class};
    strata_status_t status = stp_state_transport()->connect(dev, handle, &cfg, &comm);
    *send_comm = NULL;
    if (status != STRATA_OK)
        return stp_status_to_nccl(status);
    if (comm != NULL)
        stp_stats_open(comm, dev, true);
    if (send_dev_comm != NULL)
        *send_dev_comm = NULL;
    *send_comm = comm;
    return ncclSuccess;
}

static ncclResult_t net_accept(void *listen_comm, void **recv_comm,
                               ncclNetDeviceHandle_v11_t **recv_dev_comm)
{
    stt_comm_t *comm = NULL;

    NET_CHECK_ARG(listen_comm != NULL && recv_comm != NULL, "NULL listenComm or recvComm");
    strata_status_t status = stt_accept(listen_comm, &comm);
    *recv_comm = NULL;
    if (status != STRATA_OK)
        return stp_status_to_nccl(status);
    if (comm != NULL)
        stp_stats_open(comm, comm->dev, false);
    if (recv_dev_comm != NULL)
        *recv_dev_comm = NULL;
    *recv_comm = comm;
    return ncclSuccess;
}

static ncclResult_t net_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
    NET_CHECK_ARG(comm != NULL && mhandle != NULL, "NULL comm or mhandle");
    NET_CHECK_ARG(data != NULL || size == 0, "NULL data with a non-zero size");
    return stp_status_to_nccl(stt_reg_mr(comm, data, size, type, mhandle));
}

static ncclResult_t net_reg_mr_dmabuf(void *comm, void *data, size_t size, int type,
                                      uint64_t offset, int fd, void **mhandle)
{
    NET_CHECK_ARG(comm != NULL && mhandle != NULL, "NULL comm or mhandle");
    stt_comm_t *c = comm;
    return stp_status_to_nccl(stt_reg_mr_dmabuf(c, data, size, type, offset, fd, mhandle));
}

static ncclResult_t net_dereg_mr(void *comm, void *mhandle)
{
    NET_CHECK_ARG(comm != NULL, "NULL comm");
    return stp_status_to_nccl(stt_dereg_mr(comm, mhandle));
}

static ncclResult_t net_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                              void *phandle, void **request)
{
    stt_req_t *req = NULL;

    NET_CHECK_ARG(send_comm != NULL && request != NULL, "NULL sendComm or request");
    stp_prof_cookies(send_comm, phandle != NULL ? &phandle : NULL);
    strata_status_t status = stt_isend(send_comm, data, size, tag, mhandle, &req);
    stp_prof_cookies(send_comm, NULL);
    *request = req;
    if (STU_LIKELY(status == STRATA_OK)) {
        stp_stats_post(send_comm, req != NULL);
        if (req != NULL)
            stp_prof_start(req, phandle, true, size);
        return ncclSuccess;
    }
    stp_stats_error(send_comm);
    return stp_status_to_nccl(status);
}

static ncclResult_t net_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                              void **mhandles, void **phandles, void **request)
{
    stt_req_t *req = NULL;

    NET_CHECK_ARG(request != NULL, "NULL request");
    *request = NULL;   /* NCCL may preset 0x1; always overwrite it */
    NET_CHECK_ARG(recv_comm != NULL, "NULL recvComm");
    NET_CHECK_ARG(n >= 1 && n <= STT_MAX_RECVS, "n outside 1..maxRecvs");
    stp_prof_cookies(recv_comm, phandles);
    strata_status_t status = stt_irecv(recv_comm, n, data, sizes, tags, mhandles, &req);
    stp_prof_cookies(recv_comm, NULL);
    *request = req;
    if (STU_LIKELY(status == STRATA_OK)) {
        stp_stats_post(recv_comm, req != NULL);
        if (req != NULL) {
            size_t posted = 0;
            for (int i = 0; i < n; i++)
                posted += sizes[i];
            stp_prof_start(req, phandles != NULL ? phandles[0] : NULL, false, posted);
        }
        return ncclSuccess;
    }
    stp_stats_error(recv_comm);
    return stp_status_to_nccl(status);
}

static ncclResult_t net_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                               void **request)
{
    stt_req_t *req = NULL;

    NET_CHECK_ARG(recv_comm != NULL && request != NULL, "NULL recvComm or request");
    stt_comm_t *c = recv_comm;
    strata_status_t status = stt_iflush(c, n, data, sizes, mhandles, &req);
    *request = req;
    return status == STRATA_OK ? ncclSuccess : stp_status_to_nccl(status);
}

static ncclResult_t net_test(void *request, int *done, int *sizes)
{
    size_t got[STT_MAX_RECVS];
    int d = 0;

    NET_CHECK_ARG(request != NULL && done != NULL, "NULL request or done");
    stt_req_t *req = request;
    int n = req->nsizes;   /* read before test: a finished request is released */
    const stt_comm_t *comm = req->comm;
    void *ev = req->prof;
    strata_status_t status = stt_test(req, &d, got);
    *done = d;
    stp_stats_failovers(comm);
    if (STU_UNLIKELY(status != STRATA_OK)) {
        stp_stats_error(comm);
        stp_prof_stop(ev);
        return stp_status_to_nccl(status);
    }
    if (!d)
        return ncclSuccess;
    stp_prof_stop(ev);
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += got[i];
    stp_stats_done(comm, n, bytes);
    if (sizes != NULL) {
        for (int i = 0; i < n; i++) {
            if (STU_UNLIKELY(got[i] > INT_MAX)) {
                STU_WARN("test: %zu bytes do not fit NCCL's int size", got[i]);
                return stp_status_to_nccl(STRATA_ERR_INTERNAL);
            }
            sizes[i] = (int)got[i];
        }
    }
    return ncclSuccess;
}

static ncclResult_t net_close_send(void *send_comm)
{
    if (send_comm != NULL) {
        stp_stats_failovers(send_comm);
        stp_stats_close(send_comm);
        stt_close_send(send_comm);
    }
    return ncclSuccess;
}

static ncclResult_t net_close_recv(void *recv_comm)
{
    if (recv_comm != NULL) {
        stp_stats_failovers(recv_comm);
        stp_stats_close(recv_comm);
        stt_close_recv(recv_comm);
    }
    return ncclSuccess;
}

static ncclResult_t net_close_listen(void *listen_comm)
{
    if (listen_comm != NULL)
        stt_close_listen(listen_comm);
    return ncclSuccess;
}

/*
 * NULL and a failed init's context (NULL too) are harmless; a context is freed
 * here, so finalizing it twice is a caller's bug (NCCL never does).
 */
static ncclResult_t net_finalize(void *ctx)
{
    stp_state_release(ctx);
    return ncclSuccess;
}

/*
 * NCCL (2.28-2.30) reads makeVDevice from these tables when it builds its topology,
 * after init, and treats a failed fusion as fatal; a NULL pointer tells it not to fuse.
 * So the tables are writable, and the first init offers fusion only when the transport
 * can fuse and STRATA_NET_FUSE is not off (stp_net_fusion_offer).
 */
STU_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = STP_PLUGIN_NAME,
    .init = net_init,
    .devices = net_devices,
    .getProperties = net_get_properties,
    .listen = net_listen,
    .connect = net_connect,
    .accept = net_accept,
    .regMr = net_reg_mr,
    .regMrDmaBuf = net_reg_mr_dmabuf,
    .deregMr = net_dereg_mr,
    .isend = net_isend,
    .irecv = net_irecv,
    .iflush = net_iflush,
    .test = net_test,
    .closeSend = net_close_send,
    .closeRecv = net_close_recv,
    .closeListen = net_close_listen,
    .getDeviceMr = NULL,      /* host-memory transports have no device-side handle */
    .irecvConsumed = NULL,
    .makeVDevice = NULL,      /* set by stp_net_fusion_offer at the first init */
    .finalize = net_finalize,
    .setNetAttr = NULL,       /* optional; NCCL checks for NULL */
};

static ncclResult_t net_get_properties_v12(int dev, ncclNetProperties_v12_t *props)
{
    NET_CHECK_ARG(props != NULL, "props is NULL");
    return stp_cn_props_v12(dev, props);
}

/* v12's other types are v11's (include/nccl/net_v12.h), so the entry points are shared. */
STU_EXPORT ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = STP_PLUGIN_NAME,
    .init = net_init,
    .devices = net_devices,
    .getProperties = net_get_properties_v12,
    .listen = net_listen,
    .connect = net_connect,
    .accept = net_accept,
    .regMr = net_reg_mr,
    .regMrDmaBuf = net_reg_mr_dmabuf,
    .deregMr = net_dereg_mr,
    .isend = net_isend,
    .irecv = net_irecv,
    .iflush = net_iflush,
    .test = net_test,
    .closeSend = net_close_send,
    .closeRecv = net_close_recv,
    .closeListen = net_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = net_finalize,
    .setNetAttr = NULL,
};

void stp_net_fusion_offer(bool on)
{
    ncclNetPlugin_v11.makeVDevice = on ? net_make_vdev_v11 : NULL;
    ncclNetPlugin_v12.makeVDevice = on ? net_make_vdev_v12 : NULL;
}
