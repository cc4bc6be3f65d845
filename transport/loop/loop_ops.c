/*
 * The loop transport's operations table, its one device ("loop0"), and
 * test(), which runs the channel's matcher and reports the request.
 */
#include <string.h>

#include "transport/base/hostmr.h"
#include "transport/loop/loop_internal.h"

#define LOOP_SPEED_MBPS 400000    /* nominal: memcpy bandwidth class, not measured */
#define LOOP_MAX_COMMS 65536
#define LOOP_MAX_MSG_BYTES ((size_t)1 << 40)        /* NCCL_MAX_NET_SIZE_BYTES */
#define LOOP_MAX_COLL_BYTES ((size_t)512 << 20)     /* NCCL's MAX_COLLNET_SIZE */

static strata_status_t loop_probe(void)
{
    return STRATA_OK;
}

/* Nothing to discover: init and fini only pair up. */
static strata_status_t loop_init(void)
{
    return STRATA_OK;
}

static void loop_fini(void)
{
}

static strata_status_t loop_devices(int *ndev_p)
{
    *ndev_p = 1;
    return STRATA_OK;
}

static strata_status_t loop_get_props(int dev, stt_props_t *props_p)
{
    if (dev != 0)
        return STRATA_ERR_INVALID;
    memset(props_p, 0, sizeof(*props_p));
    strcpy(props_p->name, "loop0");
    props_p->guid = 0x4c4f4f50ull;
    props_p->ptr_support = STT_PTR_HOST;
    props_p->speed_mbps = LOOP_SPEED_MBPS;
    props_p->max_comms = LOOP_MAX_COMMS;
    props_p->max_recvs = STT_MAX_RECVS;
    props_p->max_p2p_bytes = LOOP_MAX_MSG_BYTES;
    props_p->max_coll_bytes = LOOP_MAX_COLL_BYTES;
    return STRATA_OK;
}

static strata_status_t loop_test(stt_req_t *base, int *done, size_t *sizes)
{
    stt_loop_req_t *req = (stt_loop_req_t *)base;
    stt_loop_comm_t *comm = (stt_loop_comm_t *)base->comm;
    stt_loop_chan_t *chan = comm->chan;
    strata_status_t status = STRATA_OK;

    pthread_mutex_lock(&chan->lock);
    if (req->slot.state == STT_SLOT_FREE) {
        pthread_mutex_unlock(&chan->lock);
        return stt_slots_stale(&stt_loop_ops, base);
    }
    stt_loop_chan_match(chan);
    int peer_gone = comm->send ? chan->recv_gone : chan->send_gone;
    if (req->slot.state == STT_SLOT_DONE) {
        if (sizes != NULL)
            for (int i = 0; i < req->slot.n; i++)
                sizes[i] = req->got[i];
        status = req->slot.status;
        stt_slots_give(&comm->slots, &req->slot);
        *done = 1;
    } else if (chan->failed != STRATA_OK || peer_gone) {
        status = chan->failed != STRATA_OK ? chan->failed : STRATA_ERR_REMOTE;
        *done = 1;
        /* Released; its stale FIFO entry is never matched again (the peer is gone). */
        stt_slots_give(&comm->slots, &req->slot);
    } else {
        *done = 0;
    }
    pthread_mutex_unlock(&chan->lock);
    return status;
}

const stt_ops_t stt_loop_ops = {
    .name = "loop",
    .probe = loop_probe,
    .library = stt_no_library,
    .init = loop_init,
    .fini = loop_fini,
    .devices = loop_devices,
    .get_props = loop_get_props,
    .listen = stt_loop_listen,
    .connect = stt_loop_connect,
    .connect_abandon = stt_loop_connect_abandon,
    .accept = stt_loop_accept,
    .reg_mr = stt_hostmr_reg,           /* host memory, nothing pinned */
    .reg_mr_dmabuf = stt_hostmr_reg_dmabuf,
    .dereg_mr = stt_hostmr_dereg,
    .isend = stt_loop_isend,
    .irecv = stt_loop_irecv,
    .iflush = stt_loop_iflush,
    .test = loop_test,
    .close_send = stt_loop_close,
    .close_recv = stt_loop_close,
    .close_listen = stt_loop_close_listen,
    .poll_fds = stt_no_poll_fds,   /* in-process: nothing to wait on but the peer thread */
    .progress = stt_no_progress,
    .make_vdev = stt_no_make_vdev,
};
