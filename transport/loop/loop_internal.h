/*
 * Objects of the loop transport, shared by its files. Nothing outside
 * transport/loop includes this.
 *
 *   stt_loop_chan_t    the in-process wire between one send comm and one
 *                      receive comm: two FIFOs and the matcher (loop_wire.c)
 *   stt_loop_listen_t  a listener in the process-wide list, with its queue of
 *                      channels waiting for accept (loop_wire.c, loop_listen.c)
 *   stt_loop_comm_t    either end of a channel, with its request slots
 *                      (loop_conn.c; requests in loop_send.c and loop_recv.c)
 *
 * Calls go one way: loop_ops.c -> loop_listen.c, loop_send.c, loop_recv.c ->
 * loop_conn.c -> loop_wire.c, base/.
 *
 * Threading: the two ends of a channel may be used by different threads at
 * once; everything the channel holds (both FIFOs, the requests queued in them)
 * is guarded by its lock. The listener list has one process-wide lock.
 */
#ifndef STT_LOOP_INTERNAL_H
#define STT_LOOP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "transport/base/slots.h"
#include "transport/loop/loop.h"
#include "transport/loop/loop_wire.h"

/* A request: slot.n buffers (1 for a send), slot.status its result once DONE. */
typedef struct stt_loop_req {
    stt_slot_t slot;
    unsigned matched;         /* bit i: buffer i got its message */
    int tags[STT_MAX_RECVS];
    void *bufs[STT_MAX_RECVS];
    size_t caps[STT_MAX_RECVS];
    size_t got[STT_MAX_RECVS];
} stt_loop_req_t;

typedef struct stt_loop_comm {
    stt_comm_t base;
    stt_loop_chan_t *chan;
    bool send;
    stt_slots_t slots;        /* taken and given under the channel's lock */
    stt_loop_req_t *reqs;
} stt_loop_comm_t;

/* ------------------------------------------------------------------ loop_conn.c */

/* A comm on chan (send or receive side); takes one of chan's references on success. */
strata_status_t stt_loop_conn_create(stt_loop_chan_t *chan, int dev, bool send,
                                     stt_comm_t **comm_p);

/* ------------------------------------------------------------------ operations, by file */

/* loop_listen.c */
strata_status_t stt_loop_listen(int dev, void *handle, stt_listen_t **listen_p);
strata_status_t stt_loop_accept(stt_listen_t *listen, stt_comm_t **recv_p);
void stt_loop_close_listen(stt_listen_t *listen);
/* loop_conn.c */
void stt_loop_connect_abandon(void *handle);
strata_status_t stt_loop_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                 stt_comm_t **send_p);
void stt_loop_close(stt_comm_t *comm);
/* loop_send.c */
strata_status_t stt_loop_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                               stt_req_t **req_p);
/* loop_recv.c */
strata_status_t stt_loop_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                               const int *tags, void **mhs, stt_req_t **req_p);
strata_status_t stt_loop_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                                void **mhs, stt_req_t **req_p);

#endif /* STT_LOOP_INTERNAL_H */
