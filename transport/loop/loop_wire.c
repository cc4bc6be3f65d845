/* The loop transport's in-process wire: channels, their matcher, the listeners (loop_wire.h). */
#include <stdlib.h>
#include <string.h>

#include "transport/loop/loop_internal.h"
#include "util/log.h"

static pthread_mutex_t listeners_lock = PTHREAD_MUTEX_INITIALIZER;
static stt_loop_listen_t *listeners;
static uint64_t listeners_next_id = 1;

/* ------------------------------------------------------------------ channels */

stt_loop_chan_t *stt_loop_chan_create(void)
{
    stt_loop_chan_t *chan = calloc(1, sizeof(*chan));
    if (chan == NULL)
        return NULL;
    pthread_mutex_init(&chan->lock, NULL);
    chan->refs = 2;   /* the connecting side and the listener's queue */
    return chan;
}

void stt_loop_chan_release(stt_loop_chan_t *chan)
{
    pthread_mutex_lock(&chan->lock);
    int left = --chan->refs;
    pthread_mutex_unlock(&chan->lock);
    if (left == 0) {
        pthread_mutex_destroy(&chan->lock);
        free(chan);
    }
}

/* Moves send s into buffer i of receive r and completes s. */
static void chan_deliver(stt_loop_req_t *s, stt_loop_req_t *r, int i)
{
    if (s->caps[0] > r->caps[i]) {
        STU_WARN("loop: message of %zu bytes (tag %d) is larger than its receive buffer of "
                 "%zu bytes", s->caps[0], s->tags[0], r->caps[i]);
        r->slot.status = STRATA_ERR_TRUNCATED;
        r->got[i] = 0;
    } else {
        if (s->caps[0] > 0)
            memcpy(r->bufs[i], s->bufs[0], s->caps[0]);
        r->got[i] = s->caps[0];
    }
    s->got[0] = s->caps[0];
    s->slot.state = STT_SLOT_DONE;
    r->matched |= 1u << i;
}

/*
 * Matches the queued sends against the oldest receive, as NCCL's IB transport
 * does: each send, in posting order, takes the first open buffer with its tag;
 * a send whose tag has none stays queued (in order) and later sends of other
 * tags pass it. When the oldest receive is complete the next one is matched.
 */
void stt_loop_chan_match(stt_loop_chan_t *chan)
{
    while (chan->failed == STRATA_OK && chan->sq_head != chan->sq_tail &&
           chan->rq_head != chan->rq_tail) {
        stt_loop_req_t *r = chan->recvq[chan->rq_head % STT_MAX_REQUESTS];
        unsigned all = (1u << r->slot.n) - 1, w = chan->sq_head;
        for (unsigned pos = chan->sq_head; pos != chan->sq_tail; pos++) {
            stt_loop_req_t *s = chan->sendq[pos % STT_MAX_SEND_REQUESTS];
            int i = -1;
            for (int k = 0; k < r->slot.n && i < 0 && r->matched != all; k++)
                if (!(r->matched & (1u << k)) && r->tags[k] == s->tags[0])
                    i = k;
            if (i >= 0)
                chan_deliver(s, r, i);
            else
                chan->sendq[w++ % STT_MAX_SEND_REQUESTS] = s;
        }
        chan->sq_tail = w;
        if (r->matched != all)
            return;           /* the oldest receive waits for a send of one of its tags */
        r->slot.state = STT_SLOT_DONE;
        chan->rq_head++;
    }
}

/* ------------------------------------------------------------------ listeners */

void stt_loop_listeners_add(stt_loop_listen_t *l)
{
    l->queue_tail = &l->queue_head;
    pthread_mutex_lock(&listeners_lock);
    l->id = listeners_next_id++;
    l->next = listeners;
    listeners = l;
    pthread_mutex_unlock(&listeners_lock);
}

stt_loop_chan_t *stt_loop_listeners_remove(stt_loop_listen_t *l)
{
    pthread_mutex_lock(&listeners_lock);
    for (stt_loop_listen_t **pp = &listeners; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    stt_loop_chan_t *queue = l->queue_head;
    l->queue_head = NULL;
    l->queue_tail = &l->queue_head;
    pthread_mutex_unlock(&listeners_lock);
    return queue;
}

bool stt_loop_listeners_queue(uint64_t id, stt_loop_chan_t *chan)
{
    stt_loop_listen_t *l;

    pthread_mutex_lock(&listeners_lock);
    for (l = listeners; l != NULL && l->id != id; l = l->next)
        ;
    if (l != NULL) {
        *l->queue_tail = chan;
        l->queue_tail = &chan->next_pending;
    }
    pthread_mutex_unlock(&listeners_lock);
    return l != NULL;
}

stt_loop_chan_t *stt_loop_listeners_take(stt_loop_listen_t *l)
{
    pthread_mutex_lock(&listeners_lock);
    stt_loop_chan_t *chan = l->queue_head;
    if (chan != NULL) {
        l->queue_head = chan->next_pending;
        if (l->queue_head == NULL)
            l->queue_tail = &l->queue_head;
    }
    pthread_mutex_unlock(&listeners_lock);
    return chan;
}

bool stt_loop_listeners_unqueue(stt_loop_chan_t *chan)
{
    bool found = false;

    pthread_mutex_lock(&listeners_lock);
    for (stt_loop_listen_t *l = listeners; l != NULL && !found; l = l->next) {
        for (stt_loop_chan_t **pp = &l->queue_head; *pp != NULL; pp = &(*pp)->next_pending) {
            if (*pp == chan) {
                *pp = chan->next_pending;
                if (l->queue_tail == &chan->next_pending)
                    l->queue_tail = pp;
                found = true;
                break;
            }
        }
    }
    pthread_mutex_unlock(&listeners_lock);
    return found;
}
