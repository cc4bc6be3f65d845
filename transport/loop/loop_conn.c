/*
 * Connections of the loop transport: connect, and a comm's lifecycle.
 *
 * connect, driven by base/connect.h, makes a channel, queues it on the
 * listener the handle names (loop_wire.c) and completes once accept took
 * the channel, like a network transport whose connect waits for the
 * listener's answer; it fails after STRATA_CONNECT_TIMEOUT or when the
 * listener closes first.
 */
#include <stdio.h>
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

    if (comm == NULL)
        return;                          /* closing nothing is fine (the contract) */
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

typedef struct loop_connect {
    stt_connect_t head;          /* start time, peer */
    stt_loop_chan_t *chan;       /* until the send comm takes it */
} loop_connect_t;

static strata_status_t connect_decode(const void *handle, void *hp, uint64_t *listener_id_p)
{
    stt_loop_handle_t *h = hp;

    memcpy(h, handle, sizeof(*h));
    *listener_id_p = h->listener_id;
    if (h->magic != STT_LOOP_HANDLE_MAGIC) {
        STU_WARN("loop: connect handle has a bad magic 0x%llx", (unsigned long long)h->magic);
        return STRATA_ERR_INVALID;
    }
    if (h->pid != (uint64_t)getpid()) {
        STU_WARN("loop: the handle comes from process %llu; the loop transport connects only "
                 "inside one process", (unsigned long long)h->pid);
        return STRATA_ERR_INVALID;
    }
    return STRATA_OK;
}

/* Gives up: the channel out of the listener's queue if still there, and our reference. */
static void connect_free(stt_connect_t *state)
{
    loop_connect_t *cs = (loop_connect_t *)state;

    if (cs->chan != NULL) {
        if (stt_loop_listeners_unqueue(cs->chan))
            stt_loop_chan_release(cs->chan);     /* the queue's reference */
        pthread_mutex_lock(&cs->chan->lock);
        cs->chan->send_gone = 1;                 /* an accepted receive side learns it */
        pthread_mutex_unlock(&cs->chan->lock);
        stt_loop_chan_release(cs->chan);
    }
    free(cs);
}

static strata_status_t connect_start(int dev, const void *hp, const stt_conn_cfg_t *cfg,
                                     stt_connect_t **state_p)
{
    const stt_loop_handle_t *h = hp;
    loop_connect_t *cs = calloc(1, sizeof(*cs));
    stt_loop_chan_t *chan = stt_loop_chan_create();

    if (cs == NULL || chan == NULL) {
        free(cs);
        free(chan);
        return STRATA_ERR_NO_MEMORY;
    }
    if (!stt_loop_listeners_queue(h->listener_id, chan)) {
        free(cs);
        free(chan);
        STU_WARN("loop: no listener with id %llu (closed, or a handle from another process)",
                 (unsigned long long)h->listener_id);
        return STRATA_ERR_REMOTE;
    }
    cs->head.start_ns = stu_time_ns();
    snprintf(cs->head.peer, sizeof(cs->head.peer), "listener %llu",
             (unsigned long long)h->listener_id);
    cs->chan = chan;
    *state_p = &cs->head;
    return STRATA_OK;
}

static strata_status_t connect_step(stt_connect_t *state, int dev, const void *h,
                                    stt_comm_t **send_p)
{
    loop_connect_t *cs = (loop_connect_t *)state;

    pthread_mutex_lock(&cs->chan->lock);
    int accepted = cs->chan->accepted;
    int refused = cs->chan->recv_gone;
    pthread_mutex_unlock(&cs->chan->lock);
    if (refused) {
        STU_WARN("loop: the listener closed before accepting the connection");
        return STRATA_ERR_REMOTE;
    }
    if (!accepted)
        return STRATA_INPROGRESS;
    strata_status_t status = stt_loop_conn_create(cs->chan, dev, true, send_p);
    if (status == STRATA_OK)
        cs->chan = NULL;                 /* the comm holds our reference now */
    return status;
}

static const stt_connect_steps_t connect_steps = {
    .who = "loop",
    .hint = " (not accepted)",
    .decode = connect_decode,
    .start = connect_start,
    .step = connect_step,
    .free = connect_free,
};

void stt_loop_connect_abandon(void *handle)
{
    stt_connect_abandon_run(&connect_steps, handle);
}

strata_status_t stt_loop_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                 stt_comm_t **send_p)
{
    return stt_connect_run(&connect_steps, dev, handle, cfg, send_p);
}
