/*
 * Listen comms of the loop transport. A listener sits in the process-wide
 * list (loop_wire.c); connect queues a channel on it, and accept takes the
 * oldest and makes the receive side's comm, which lets that connect finish.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/loop/loop_internal.h"
#include "util/log.h"

strata_status_t stt_loop_listen(int dev, void *handle, stt_listen_t **listen_p)
{
    if (dev != 0 || handle == NULL || listen_p == NULL) {
        STU_WARN("loop: listen(dev %d) called with %s", dev,
                 dev != 0 ? "a device other than 0" : "a NULL handle or output");
        return STRATA_ERR_INVALID;
    }
    stt_loop_listen_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return STRATA_ERR_NO_MEMORY;
    l->base.ops = &stt_loop_ops;
    l->base.dev = dev;
    stt_loop_listeners_add(l);

    stt_loop_handle_t h = {.magic = STT_LOOP_HANDLE_MAGIC, .pid = (uint64_t)getpid(),
                           .listener_id = l->id};
    memset(handle, 0, STT_HANDLE_SIZE);
    memcpy(handle, &h, sizeof(h));
    *listen_p = &l->base;
    return STRATA_OK;
}

strata_status_t stt_loop_accept(stt_listen_t *listen, stt_comm_t **recv_p)
{
    stt_loop_listen_t *l = (stt_loop_listen_t *)listen;
    strata_status_t status;

    *recv_p = NULL;
    stt_loop_chan_t *chan = stt_loop_listeners_take(l);
    if (chan == NULL)
        return STRATA_OK;
    status = stt_loop_conn_create(chan, listen->dev, false, recv_p);
    pthread_mutex_lock(&chan->lock);
    if (status == STRATA_OK)
        chan->accepted = 1;
    else
        chan->recv_gone = 1;
    pthread_mutex_unlock(&chan->lock);
    if (status != STRATA_OK)
        stt_loop_chan_release(chan);
    return status;
}

void stt_loop_close_listen(stt_listen_t *listen)
{
    stt_loop_listen_t *l = (stt_loop_listen_t *)listen;

    if (l == NULL)
        return;                          /* closing nothing is fine (the contract) */
    stt_loop_chan_t *chan = stt_loop_listeners_remove(l);
    while (chan != NULL) {
        stt_loop_chan_t *next = chan->next_pending;
        pthread_mutex_lock(&chan->lock);
        chan->recv_gone = 1;
        pthread_mutex_unlock(&chan->lock);
        stt_loop_chan_release(chan);
        chan = next;
    }
    free(l);
}
