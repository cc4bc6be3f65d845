/*
 * Connections of the loop transport: connect, and a comm's lifecycle.
 *
 * connect makes a channel, queues it on the listener the handle names
 * (loop_wire.c) and keeps it in the handle's connect slot (base/handle.h);
 * it completes once accept took the channel, like a network transport whose
 * connect waits for the listener's answer, and fails after
 * STRATA_CONNECT_TIMEOUT or when the listener closes first.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/loop/loop_internal.h"
#include "util/log.h"
#include "util/time.h"

strata_status_t stt_loop_conn_create(stt_loop_chan_t *chan, int dev, bool send,
                                     stt_comm_t **comm_p)
{
    int nreqs = send ? STT_MAX_SEND_REQUESTS : STT_MAX_REQUESTS;
    stt_loop_comm_t *comm = calloc(1, sizeof(*comm));
    if (comm == NULL)
        return STRATA_ERR_NO_MEMORY;
    comm->reqs = calloc((size_t)nreqs, sizeof(*comm->reqs));
    if (comm->reqs == NULL) {
        free(comm);
        return STRATA_ERR_NO_MEMORY;
    }
    comm->base.ops = &stt_loop_ops;
    comm->base.dev = dev;
    comm->chan = chan;
    comm->send = send;
    stt_slots_bind(&comm->slots, comm->reqs, sizeof(comm->reqs[0]), nreqs, &comm->base);
    *comm_p = &comm->base;
    return STRATA_OK;
}

/* Drops this comm's requests from the channel's FIFO and tells the peer. */
void stt_loop_close(stt_comm_t *base)
{
    stt_loop_comm_t *comm = (stt_loop_comm_t *)base;
    stt_loop_chan_t *chan = comm->chan;

    pthread_mutex_lock(&chan->lock);
    if (comm->send) {
        chan->send_gone = 1;
        chan->sq_head = chan->sq_tail;
    } else {
        chan->recv_gone = 1;
        chan->rq_head = chan->rq_tail;
    }
    pthread_mutex_unlock(&chan->lock);
    stt_loop_chan_release(chan);
    free(comm->reqs);
    free(comm);
}

/* Gives up on chan: out of the listener's queue if still there, and our reference. */
static void connect_abandon(void *handle, uint64_t listener_id, stt_loop_chan_t *chan)
{
    if (stt_loop_listeners_unqueue(chan))
        stt_loop_chan_release(chan);     /* the queue's reference */
    stt_loop_chan_release(chan);
    stt_connslot_store(handle, listener_id, NULL);
}

strata_status_t stt_loop_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                 stt_comm_t **send_p)
{
    stt_loop_handle_t h;
    stt_loop_chan_t *chan;
    strata_status_t status;

    memcpy(&h, handle, sizeof(h));
    if (h.magic != STT_LOOP_HANDLE_MAGIC) {
        STU_WARN("loop: connect handle has a bad magic 0x%llx", (unsigned long long)h.magic);
        return STRATA_ERR_INVALID;
    }
    if (h.pid != (uint64_t)getpid()) {
        STU_WARN("loop: the handle comes from process %llu; the loop transport connects only "
                 "inside one process", (unsigned long long)h.pid);
        return STRATA_ERR_INVALID;
    }
    status = stt_connslot_load(handle, h.listener_id, "loop", (void **)&chan);
    if (status != STRATA_OK)
        return status;
    *send_p = NULL;
    if (chan == NULL) {
        chan = stt_loop_chan_create();
        if (chan == NULL)
            return STRATA_ERR_NO_MEMORY;
        chan->start_ns = stu_time_ns();
        if (!stt_loop_listeners_queue(h.listener_id, chan)) {
            free(chan);
            STU_WARN("loop: no listener with id %llu (closed, or a handle from another process)",
                     (unsigned long long)h.listener_id);
            return STRATA_ERR_REMOTE;
        }
        stt_connslot_store(handle, h.listener_id, chan);
        return STRATA_OK;
    }

    pthread_mutex_lock(&chan->lock);
    int accepted = chan->accepted;
    int refused = chan->recv_gone;
    pthread_mutex_unlock(&chan->lock);
    if (accepted && !refused) {
        status = stt_loop_conn_create(chan, dev, true, send_p);
        if (status == STRATA_OK)
            stt_connslot_store(handle, h.listener_id, NULL);
        return status;
    }
    if (refused) {
        connect_abandon(handle, h.listener_id, chan);
        STU_WARN("loop: the listener closed before accepting the connection");
        return STRATA_ERR_REMOTE;
    }
    if (stt_connect_expired(chan->start_ns, "loop", "connecting to listener", "in this process",
                            " (not accepted)")) {
        connect_abandon(handle, h.listener_id, chan);
        return STRATA_ERR_TIMEOUT;
    }
    return STRATA_OK;
}
