/* The send side of the loop transport: isend queues a send on the channel and runs the matcher. */
#include "transport/loop/loop_internal.h"
#include "util/compiler.h"

strata_status_t stt_loop_isend(stt_comm_t *base, void *data, size_t size, int tag, void *mh,
                               stt_req_t **req_p)
{
    stt_loop_comm_t *comm = (stt_loop_comm_t *)base;
    stt_loop_chan_t *chan = comm->chan;

    if (STU_UNLIKELY(data == NULL && size > 0))
        return STRATA_ERR_INVALID;
    pthread_mutex_lock(&chan->lock);
    stt_loop_req_t *req = NULL;
    if (chan->sq_tail - chan->sq_head < STT_MAX_SEND_REQUESTS)
        req = (stt_loop_req_t *)stt_slots_take(&comm->slots, 1);
    if (req != NULL) {
        req->matched = 0;
        req->tags[0] = tag;
        req->bufs[0] = data;
        req->caps[0] = size;
        req->got[0] = 0;
        chan->sendq[chan->sq_tail++ % STT_MAX_SEND_REQUESTS] = req;
        stt_loop_chan_match(chan);
    }
    pthread_mutex_unlock(&chan->lock);
    *req_p = req ? &req->slot.base : NULL;
    return STRATA_OK;
}
