/*
 * The receive side of the loop transport: irecv queues a receive on the
 * channel and runs the matcher; iflush has nothing to wait for (host memory).
 */
#include "transport/base/hostmr.h"
#include "transport/loop/loop_internal.h"
#include "util/compiler.h"

strata_status_t stt_loop_irecv(stt_comm_t *base, int n, void **data, const size_t *sizes,
                               const int *tags, void **mhs, stt_req_t **req_p)
{
    stt_loop_comm_t *comm = (stt_loop_comm_t *)base;
    stt_loop_chan_t *chan = comm->chan;

    if (STU_UNLIKELY(n < 1 || n > STT_MAX_RECVS || data == NULL || sizes == NULL ||
                     tags == NULL))
        return STRATA_ERR_INVALID;
    for (int i = 0; i < n; i++)
        if (STU_UNLIKELY(data[i] == NULL && sizes[i] > 0))
            return STRATA_ERR_INVALID;
    pthread_mutex_lock(&chan->lock);
    stt_loop_req_t *req = NULL;
    if (chan->rq_tail - chan->rq_head < STT_MAX_REQUESTS)
        req = (stt_loop_req_t *)stt_slots_take(&comm->slots, n);
    if (req != NULL) {
        req->matched = 0;
        for (int i = 0; i < n; i++) {
            req->tags[i] = tags[i];
            req->bufs[i] = data[i];
            req->caps[i] = sizes[i];
            req->got[i] = 0;
        }
        chan->recvq[chan->rq_tail++ % STT_MAX_REQUESTS] = req;
        stt_loop_chan_match(chan);
    }
    pthread_mutex_unlock(&chan->lock);
    *req_p = req ? &req->slot.base : NULL;
    return STRATA_OK;
}

strata_status_t stt_loop_iflush(stt_comm_t *base, int n, void **data, const int *sizes,
                                void **mhs, stt_req_t **req_p)
{
    stt_loop_comm_t *comm = (stt_loop_comm_t *)base;

    pthread_mutex_lock(&comm->chan->lock);
    strata_status_t status = stt_hostmr_iflush(base, "its peer", STRATA_OK, &comm->slots, n,
                                               req_p);
    pthread_mutex_unlock(&comm->chan->lock);
    return status;
}
