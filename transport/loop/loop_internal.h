/* Objects of the loop transport, shared by its files. */
#ifndef STT_LOOP_INTERNAL_H
#define STT_LOOP_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "transport/transport.h"

#define LOOP_HANDLE_MAGIC 0x53544c4f4f503031ull /* "STLOOP01" */

typedef struct loop_channel loop_channel_t;

enum loop_req_state { LOOP_REQ_FREE = 0, LOOP_REQ_POSTED, LOOP_REQ_DONE };

typedef struct loop_req {
    stt_req_t base;
    int state;
    strata_status_t result;   /* final status once DONE */
    int n;                    /* buffers: 1 for a send */
    unsigned matched;         /* bit i: buffer i got its message */
    int tags[STT_MAX_RECVS];
    void *bufs[STT_MAX_RECVS];
    size_t caps[STT_MAX_RECVS];
    size_t got[STT_MAX_RECVS];
} loop_req_t;

typedef struct loop_comm {
    stt_comm_t base;
    loop_channel_t *chan;
    int is_send;
    int nreqs;
    int next_slot;
    loop_req_t *reqs;
} loop_comm_t;

/* The wire between one send comm and one recv comm. */
struct loop_channel {
    pthread_mutex_t lock;
    int refs;
    int accepted;             /* the listener handed the recv side out */
    int send_gone;            /* the send side closed or never came */
    int recv_gone;
    strata_status_t failed;   /* protocol failure seen by both sides */
    unsigned sq_head, sq_tail;
    unsigned rq_head, rq_tail;
    loop_req_t *sendq[STT_MAX_SEND_REQUESTS];
    loop_req_t *recvq[STT_MAX_REQUESTS];
    loop_channel_t *next_pending;   /* listener's accept queue, under the global lock */
};

loop_channel_t *loop_channel_create(void);
void loop_channel_release(loop_channel_t *chan);

/* Data path (loop_channel.c). */
strata_status_t loop_comm_create(loop_channel_t *chan, int dev, int is_send,
                                 stt_comm_t **comm_p);
void loop_comm_close(stt_comm_t *comm);
strata_status_t loop_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                           stt_req_t **req_p);
strata_status_t loop_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                           const int *tags, void **mhs, stt_req_t **req_p);
strata_status_t loop_iflush(stt_comm_t *comm, int n, void **data, const int *sizes, void **mhs,
                            stt_req_t **req_p);
strata_status_t loop_test(stt_req_t *req, int *done, size_t *sizes);

#endif /* STT_LOOP_INTERNAL_H */
