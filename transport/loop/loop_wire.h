/*
 * The loop transport's "wire": everything two comms of one process share.
 *
 *   The handle: a native struct naming a listener of this process by id;
 *     connect refuses a handle from another process. The connect slot at the
 *     handle's end (base/connect.h) holds connect's pending channel.
 *   Listeners: a process-wide list under one lock; a listener queues the
 *     channels that connect made for it until accept takes them.
 *   Channels: one per connection, reference-counted by its two ends (the
 *     connecting side and the listener's queue, then the two comms). A channel
 *     holds the posted, unmatched sends in posting order and a FIFO of
 *     receives that still have unmatched buffers; whoever posts or tests runs
 *     the matcher under the channel's lock: each queued send whose tag has an
 *     open buffer in the oldest receive goes by memcpy into the first such
 *     buffer; the others wait in order (NCCL's IB rule, transport.h).
 */
#ifndef STT_LOOP_WIRE_H
#define STT_LOOP_WIRE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "transport/base/connect.h"
#include "transport/transport.h"

#define STT_LOOP_HANDLE_MAGIC 0x53544c4f4f503031ull /* "STLOOP01" */

typedef struct stt_loop_handle {
    uint64_t magic;
    uint64_t pid;              /* the listener's process: loop connects nothing across processes */
    uint64_t listener_id;
} stt_loop_handle_t;

_Static_assert(sizeof(stt_loop_handle_t) <= STT_CONNSLOT_OFFSET,
               "the loop handle must end before the connect slot");

typedef struct stt_loop_req stt_loop_req_t;
typedef struct stt_loop_chan stt_loop_chan_t;

struct stt_loop_chan {
    pthread_mutex_t lock;
    int refs;
    int accepted;             /* the listener handed the receive side out */
    int send_gone;            /* the send side closed or never came */
    int recv_gone;
    strata_status_t failed;   /* protocol failure seen by both sides */
    unsigned sq_head, sq_tail;
    unsigned rq_head, rq_tail;
    stt_loop_req_t *sendq[STT_MAX_SEND_REQUESTS];
    stt_loop_req_t *recvq[STT_MAX_REQUESTS];
    stt_loop_chan_t *next_pending;   /* listener's accept queue, under the listeners' lock */
};

typedef struct stt_loop_listen {
    stt_listen_t base;
    uint64_t id;
    stt_loop_chan_t *queue_head;
    stt_loop_chan_t **queue_tail;
    struct stt_loop_listen *next;
} stt_loop_listen_t;

/* A channel with two references (the connecting side and the listener's queue); NULL: no memory. */
stt_loop_chan_t *stt_loop_chan_create(void);
void stt_loop_chan_release(stt_loop_chan_t *chan);
/* Runs the matcher; called with chan's lock held. */
void stt_loop_chan_match(stt_loop_chan_t *chan);

/* Adds l to the process's listeners and gives it an id. */
void stt_loop_listeners_add(stt_loop_listen_t *l);
/* Takes l out of the list; returns its queue (channels never accepted), now l's caller's. */
stt_loop_chan_t *stt_loop_listeners_remove(stt_loop_listen_t *l);
/* Queues chan on listener id; false when no such listener exists (closed, or foreign). */
bool stt_loop_listeners_queue(uint64_t id, stt_loop_chan_t *chan);
/* Takes the oldest queued channel of l, or NULL. */
stt_loop_chan_t *stt_loop_listeners_take(stt_loop_listen_t *l);
/* Takes chan out of whichever queue holds it; true if one did. */
bool stt_loop_listeners_unqueue(stt_loop_chan_t *chan);

#endif /* STT_LOOP_WIRE_H */
