/*
 * Loop transport data path. A channel holds a FIFO of posted, unmatched sends
 * and a FIFO of receives that still have unmatched buffers. Whoever posts or
 * tests runs the matcher under the channel lock: the oldest send goes into the
 * buffer of the oldest receive whose tag equals the send's, by memcpy.
 */
#include <stdlib.h>
#include <string.h>

#include "transport/loop/loop.h"
#include "transport/loop/loop_internal.h"
#include "util/compiler.h"
#include "util/log.h"

loop_channel_t *loop_channel_create(void)
{
    loop_channel_t *chan = calloc(1, sizeof(*chan));
    if (chan == NULL)
        return NULL;
    pthread_mutex_init(&chan->lock, NULL);
    chan->refs = 2;   /* the connecting side and the listener's queue */
    return chan;
}

void loop_channel_release(loop_channel_t *chan)
{
    pthread_mutex_lock(&chan->lock);
    int left = --chan->refs;
    pthread_mutex_unlock(&chan->lock);
    if (left == 0) {
        pthread_mutex_destroy(&chan->lock);
        free(chan);
    }
}

strata_status_t loop_comm_create(loop_channel_t *chan, int dev, int is_send,
                                 stt_comm_t **comm_p)
{
    loop_comm_t *comm = calloc(1, sizeof(*comm));
    if (comm == NULL)
        return STRATA_ERR_NO_MEMORY;
    comm->nreqs = is_send ? STT_MAX_SEND_REQUESTS : STT_MAX_REQUESTS;
    comm->reqs = calloc((size_t)comm->nreqs, sizeof(*comm->reqs));
    if (comm->reqs == NULL) {
        free(comm);
        return STRATA_ERR_NO_MEMORY;
    }
    comm->base.ops = &stt_loop_ops;
    comm->base.dev = dev;
    comm->chan = chan;
    comm->is_send = is_send;
    for (int i = 0; i < comm->nreqs; i++)
        comm->reqs[i].base.comm = &comm->base;
    *comm_p = &comm->base;
    return STRATA_OK;
}

/* Called with the channel lock held. */
static void channel_match(loop_channel_t *chan)
{
    while (chan->failed == STRATA_OK && chan->sq_head != chan->sq_tail &&
           chan->rq_head != chan->rq_tail) {
        loop_req_t *s = chan->sendq[chan->sq_head % STT_MAX_SEND_REQUESTS];
        loop_req_t *r = chan->recvq[chan->rq_head % STT_MAX_REQUESTS];
        int slot = -1;
        for (int i = 0; i < r->n; i++) {
            if (!(r->matched & (1u << i)) && r->tags[i] == s->tags[0]) {
                slot = i;
                break;
            }
        }
        if (slot < 0) {
            STU_WARN("loop: a send with tag %d matches no free buffer of the oldest receive "
                     "(%d buffers); failing the connection", s->tags[0], r->n);
            chan->failed = STRATA_ERR_REMOTE;
            return;
        }
        if (s->caps[0] > r->caps[slot]) {
            STU_WARN("loop: message of %zu bytes (tag %d) is larger than its receive buffer of "
                     "%zu bytes", s->caps[0], s->tags[0], r->caps[slot]);
            r->result = STRATA_ERR_TRUNCATED;
            r->got[slot] = 0;
        } else {
            if (s->caps[0] > 0)
                memcpy(r->bufs[slot], s->bufs[0], s->caps[0]);
            r->got[slot] = s->caps[0];
        }
        s->got[0] = s->caps[0];
        s->state = LOOP_REQ_DONE;
        chan->sq_head++;
        r->matched |= 1u << slot;
        if (r->matched == (1u << r->n) - 1) {
            r->state = LOOP_REQ_DONE;
            chan->rq_head++;
        }
    }
}

static loop_req_t *comm_slot_get(loop_comm_t *comm)
{
    for (int i = 0; i < comm->nreqs; i++) {
        int k = (comm->next_slot + i) % comm->nreqs;
        if (comm->reqs[k].state == LOOP_REQ_FREE) {
            comm->next_slot = (k + 1) % comm->nreqs;
            return &comm->reqs[k];
        }
    }
    return NULL;
}

strata_status_t loop_isend(stt_comm_t *base, void *data, size_t size, int tag, void *mh,
                           stt_req_t **req_p)
{
    loop_comm_t *comm = (loop_comm_t *)base;
    loop_channel_t *chan = comm->chan;

    if (STU_UNLIKELY(data == NULL && size > 0))
        return STRATA_ERR_INVALID;
    pthread_mutex_lock(&chan->lock);
    loop_req_t *req = NULL;
    if (chan->sq_tail - chan->sq_head < STT_MAX_SEND_REQUESTS)
        req = comm_slot_get(comm);
    if (req != NULL) {
        req->state = LOOP_REQ_POSTED;
        req->result = STRATA_OK;
        req->n = 1;
        req->base.nsizes = 1;
        req->matched = 0;
        req->tags[0] = tag;
        req->bufs[0] = data;
        req->caps[0] = size;
        req->got[0] = 0;
        chan->sendq[chan->sq_tail++ % STT_MAX_SEND_REQUESTS] = req;
        channel_match(chan);
    }
    pthread_mutex_unlock(&chan->lock);
    *req_p = req ? &req->base : NULL;
    return STRATA_OK;
}

strata_status_t loop_irecv(stt_comm_t *base, int n, void **data, const size_t *sizes,
                           const int *tags, void **mhs, stt_req_t **req_p)
{
    loop_comm_t *comm = (loop_comm_t *)base;
    loop_channel_t *chan = comm->chan;

    if (STU_UNLIKELY(n < 1 || n > STT_MAX_RECVS || data == NULL || sizes == NULL ||
                     tags == NULL))
        return STRATA_ERR_INVALID;
    for (int i = 0; i < n; i++)
        if (STU_UNLIKELY(data[i] == NULL && sizes[i] > 0))
            return STRATA_ERR_INVALID;
    pthread_mutex_lock(&chan->lock);
    loop_req_t *req = NULL;
    if (chan->rq_tail - chan->rq_head < STT_MAX_REQUESTS)
        req = comm_slot_get(comm);
    if (req != NULL) {
        req->state = LOOP_REQ_POSTED;
        req->result = STRATA_OK;
        req->n = n;
        req->base.nsizes = n;
        req->matched = 0;
        for (int i = 0; i < n; i++) {
            req->tags[i] = tags[i];
            req->bufs[i] = data[i];
            req->caps[i] = sizes[i];
            req->got[i] = 0;
        }
        chan->recvq[chan->rq_tail++ % STT_MAX_REQUESTS] = req;
        channel_match(chan);
    }
    pthread_mutex_unlock(&chan->lock);
    *req_p = req ? &req->base : NULL;
    return STRATA_OK;
}

/* Host memory needs no flush: the request completes at the first test. */
strata_status_t loop_iflush(stt_comm_t *base, int n, void **data, const int *sizes, void **mhs,
                            stt_req_t **req_p)
{
    loop_comm_t *comm = (loop_comm_t *)base;
    pthread_mutex_lock(&comm->chan->lock);
    loop_req_t *req = comm_slot_get(comm);
    if (req != NULL) {
        req->state = LOOP_REQ_DONE;
        req->result = STRATA_OK;
        req->n = 0;
        req->base.nsizes = 0;
    }
    pthread_mutex_unlock(&comm->chan->lock);
    *req_p = req ? &req->base : NULL;
    return STRATA_OK;
}

strata_status_t loop_test(stt_req_t *base, int *done, size_t *sizes)
{
    loop_req_t *req = (loop_req_t *)base;
    loop_comm_t *comm = (loop_comm_t *)base->comm;
    loop_channel_t *chan = comm->chan;
    strata_status_t status = STRATA_OK;

    pthread_mutex_lock(&chan->lock);
    channel_match(chan);
    int peer_gone = comm->is_send ? chan->recv_gone : chan->send_gone;
    if (req->state == LOOP_REQ_DONE) {
        if (sizes != NULL)
            for (int i = 0; i < req->n; i++)
                sizes[i] = req->got[i];
        status = req->result;
        req->state = LOOP_REQ_FREE;
        *done = 1;
    } else if (chan->failed != STRATA_OK || peer_gone) {
        status = chan->failed != STRATA_OK ? chan->failed : STRATA_ERR_REMOTE;
        *done = 1;
        /* Released; its stale FIFO entry is never matched again (the peer is gone). */
        req->state = LOOP_REQ_FREE;
    } else {
        *done = 0;
    }
    pthread_mutex_unlock(&chan->lock);
    return status;
}

/* Drops this comm's requests from the channel FIFO and tells the peer. */
void loop_comm_close(stt_comm_t *base)
{
    loop_comm_t *comm = (loop_comm_t *)base;
    if (comm == NULL)
        return;   /* closing nothing is fine (the contract) */
    loop_channel_t *chan = comm->chan;

    pthread_mutex_lock(&chan->lock);
    if (comm->is_send) {
        chan->send_gone = 1;
        chan->sq_head = chan->sq_tail;
    } else {
        chan->recv_gone = 1;
        chan->rq_head = chan->rq_tail;
    }
    pthread_mutex_unlock(&chan->lock);
    loop_channel_release(chan);
    free(comm->reqs);
    free(comm);
}
