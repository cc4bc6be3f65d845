/*
 * CollNet listen: a listen comm of the net's transport on the device NCCL names, and a
 * handle carrying its bytes plus a random nonce by which connect recognises this member's own
 * handle among everyone's (collnet_wire.c has the layout).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "plugin/collnet.h"
#include "util/log.h"
#include "util/time.h"

/* 64 random bits; the clock, the process and a counter when the kernel has none to give. */
static uint64_t listen_nonce(void)
{
    static uint64_t counter;
    uint64_t n = 0;

    if (getrandom(&n, sizeof(n), GRND_NONBLOCK) == (ssize_t)sizeof(n) && n != 0)
        return n;
    n = stu_time_ns() ^ ((uint64_t)getpid() << 32) ^
        __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
    return n != 0 ? n : 1;
}

ncclResult_t stp_cn_listen(void *ctx, int dev, void *handle, void **listen_comm)
{
    uint8_t xhandle[STT_HANDLE_SIZE];
    stt_listen_t *l = NULL;
    strata_status_t status;

    if (!stp_ctx_valid(ctx) || handle == NULL || listen_comm == NULL || dev < 0 ||
        dev >= stp_cn_ndev()) {
        STU_WARN("collnet: listen(dev %d): %s", dev, !stp_ctx_valid(ctx) ? "not a Strata context"
                 : handle == NULL || listen_comm == NULL ? "NULL handle or listenComm"
                                                         : "no such CollNet device");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    const stt_ops_t *ops = stp_state_transport();
    stp_cn_listen_t *cl = calloc(1, sizeof(*cl));
    if (cl == NULL)
        return stp_status_to_nccl(STRATA_ERR_NO_MEMORY);
    memset(xhandle, 0, sizeof(xhandle));
    status = stt_listen(ops, dev, xhandle, &l);
    if (status != STRATA_OK)
        goto err_free;
    stp_cn_handle_t h = {.nonce = listen_nonce(), .dev = dev};
    status = stp_cn_handle_encode(handle, xhandle, &h);
    if (status != STRATA_OK)
        goto err_close;
    cl->magic = STP_CN_LISTEN_MAGIC;
    cl->listen = l;
    cl->ops = ops;
    cl->dev = dev;
    cl->nonce = h.nonce;
    cl->comm_id = ((const stp_ctx_t *)ctx)->comm_id;
    *listen_comm = cl;
    return ncclSuccess;

err_close:
    stt_close_listen(l);
err_free:
    free(cl);
    return stp_status_to_nccl(status);
}

ncclResult_t stp_cn_close_listen(void *listen_comm)
{
    stp_cn_listen_t *cl = listen_comm;

    if (cl == NULL)
        return ncclSuccess;
    if (cl->magic != STP_CN_LISTEN_MAGIC) {
        STU_WARN("collnet: closeListen: not a Strata CollNet listen comm");
        return stp_status_to_nccl(STRATA_ERR_INVALID);
    }
    stt_close_listen(cl->listen);
    cl->magic = 0;
    free(cl);
    return ncclSuccess;
}
