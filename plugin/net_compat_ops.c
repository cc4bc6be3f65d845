/*
 * Entry points of the v6..v10 adapters whose signature several versions
 * share. Each calls through ncclNetPlugin_v11; the only work added is what
 * the older signature forces: a context to supply, int sizes to widen, a
 * profiler handle to leave empty.
 */
#include "plugin/net_compat.h"

#include "util/compiler.h"
#include "util/log.h"

/*
 * Widens an int size from a v6..v8 call. A negative size is NCCL misusing the
 * API; refusing it is the only alternative to turning it into a huge size_t.
 */
static inline strata_status_t stp_compat_size_widen(const char *call, int size, size_t *size_p)
{
    if (STU_UNLIKELY(size < 0)) {
        STU_WARN("%s: negative size %d from a pre-v9 caller", call, size);
        return STRATA_ERR_INVALID;
    }
    *size_p = (size_t)size;
    return STRATA_OK;
}

/* irecv's buffer count, which sizes the adapters' stack arrays. */
static inline strata_status_t stp_compat_recv_count_check(int n)
{
    if (STU_UNLIKELY(n < 1 || n > STP_COMPAT_MAX_RECVS)) {
        STU_WARN("irecv: %d buffers (1 to %d allowed)", n, STP_COMPAT_MAX_RECVS);
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

ncclResult_t stp_compat_devices(int *ndev)
{
    return ncclNetPlugin_v11.devices(ndev);
}

ncclResult_t stp_compat_listen(int dev, void *handle, void **listen_comm)
{
    ncclResult_t res;
    void *ctx;

    res = stp_compat_ctx_get(NCCL_NET_TRAFFIC_CLASS_UNDEF, &ctx);
    if (res != ncclSuccess)
        return res;
    return ncclNetPlugin_v11.listen(ctx, dev, handle, listen_comm);
}

ncclResult_t stp_compat_connect_tc(int dev, int traffic_class, void *handle, void **send_comm,
                                   ncclNetDeviceHandle_v11_t **send_dev_comm)
{
    ncclResult_t res;
    void *ctx;

    res = stp_compat_ctx_get(traffic_class, &ctx);
    if (res != ncclSuccess)
        return res;
    return ncclNetPlugin_v11.connect(ctx, dev, handle, send_comm, send_dev_comm);
}

ncclResult_t stp_compat_connect(int dev, void *handle, void **send_comm,
                                ncclNetDeviceHandle_v11_t **send_dev_comm)
{
    return stp_compat_connect_tc(dev, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, send_comm,
                                 send_dev_comm);
}

ncclResult_t stp_compat_accept(void *listen_comm, void **recv_comm,
                               ncclNetDeviceHandle_v11_t **recv_dev_comm)
{
    return ncclNetPlugin_v11.accept(listen_comm, recv_comm, recv_dev_comm);
}

ncclResult_t stp_compat_mr_reg(void *comm, void *data, size_t size, int type, void **mhandle)
{
    return ncclNetPlugin_v11.regMr(comm, data, size, type, mhandle);
}

ncclResult_t stp_compat_mr_reg_int(void *comm, void *data, int size, int type, void **mhandle)
{
    strata_status_t status;
    size_t bytes;

    status = stp_compat_size_widen("regMr", size, &bytes);
    if (status != STRATA_OK)
        return stp_status_to_nccl(status);
    return ncclNetPlugin_v11.regMr(comm, data, bytes, type, mhandle);
}

ncclResult_t stp_compat_mr_reg_dmabuf(void *comm, void *data, size_t size, int type,
                                      uint64_t offset, int fd, void **mhandle)
{
    return ncclNetPlugin_v11.regMrDmaBuf(comm, data, size, type, offset, fd, mhandle);
}

ncclResult_t stp_compat_mr_dereg(void *comm, void *mhandle)
{
    return ncclNetPlugin_v11.deregMr(comm, mhandle);
}

ncclResult_t stp_compat_send(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                             void **request)
{
    return ncclNetPlugin_v11.isend(send_comm, data, size, tag, mhandle, NULL, request);
}

ncclResult_t stp_compat_send_int(void *send_comm, void *data, int size, int tag, void *mhandle,
                                 void **request)
{
    strata_status_t status;
    size_t bytes;

    status = stp_compat_size_widen("isend", size, &bytes);
    if (STU_UNLIKELY(status != STRATA_OK))
        return stp_status_to_nccl(status);
    return ncclNetPlugin_v11.isend(send_comm, data, bytes, tag, mhandle, NULL, request);
}

/*
 * Posts a receive whose count is already checked. Before v10 there were no
 * profiler handles; v11 gets an array of NULLs, so it may index phandles[i]
 * as it would NCCL's own array. *request goes through untouched: it may carry
 * NCCL's completion hint, which v11 reads and then overwrites.
 */
static inline ncclResult_t stp_compat_recv_post(void *recv_comm, int n, void **data,
                                                size_t *sizes, int *tags, void **mhandles,
                                                void **request)
{
    void *phandles[STP_COMPAT_MAX_RECVS];

    for (int i = 0; i < n; i++)
        phandles[i] = NULL;
    return ncclNetPlugin_v11.irecv(recv_comm, n, data, sizes, tags, mhandles, phandles,
                                   request);
}

ncclResult_t stp_compat_recv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                             void **mhandles, void **request)
{
    strata_status_t status;

    status = stp_compat_recv_count_check(n);
    if (STU_UNLIKELY(status != STRATA_OK))
        return stp_status_to_nccl(status);
    return stp_compat_recv_post(recv_comm, n, data, sizes, tags, mhandles, request);
}

ncclResult_t stp_compat_recv_int(void *recv_comm, int n, void **data, int *sizes, int *tags,
                                 void **mhandles, void **request)
{
    size_t bytes[STP_COMPAT_MAX_RECVS];
    strata_status_t status;

    status = stp_compat_recv_count_check(n);
    if (STU_UNLIKELY(status != STRATA_OK))
        return stp_status_to_nccl(status);
    if (STU_UNLIKELY(sizes == NULL)) {
        STU_WARN("irecv: %d buffers and a NULL sizes array", n);
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    for (int i = 0; i < n; i++) {
        status = stp_compat_size_widen("irecv", sizes[i], &bytes[i]);
        if (STU_UNLIKELY(status != STRATA_OK))
            return stp_status_to_nccl(status);
    }
    return stp_compat_recv_post(recv_comm, n, data, bytes, tags, mhandles, request);
}

ncclResult_t stp_compat_flush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                              void **request)
{
    return ncclNetPlugin_v11.iflush(recv_comm, n, data, sizes, mhandles, request);
}

ncclResult_t stp_compat_test(void *request, int *done, int *sizes)
{
    return ncclNetPlugin_v11.test(request, done, sizes);
}

ncclResult_t stp_compat_send_close(void *send_comm)
{
    return ncclNetPlugin_v11.closeSend(send_comm);
}

ncclResult_t stp_compat_recv_close(void *recv_comm)
{
    return ncclNetPlugin_v11.closeRecv(recv_comm);
}

ncclResult_t stp_compat_listen_close(void *listen_comm)
{
    return ncclNetPlugin_v11.closeListen(listen_comm);
}

ncclResult_t stp_compat_mr_device_get(void *comm, void *mhandle, void **dptr_mhandle)
{
    if (ncclNetPlugin_v11.getDeviceMr == NULL)
        return ncclSuccess;
    return ncclNetPlugin_v11.getDeviceMr(comm, mhandle, dptr_mhandle);
}

ncclResult_t stp_compat_recv_consumed(void *recv_comm, int n, void *request)
{
    if (ncclNetPlugin_v11.irecvConsumed == NULL)
        return ncclSuccess;
    return ncclNetPlugin_v11.irecvConsumed(recv_comm, n, request);
}
