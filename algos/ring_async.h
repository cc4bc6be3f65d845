/*
 * A ring allreduce over a group that progresses without blocking (ring_async.c):
 * init, then progress whenever convenient (from a shared-memory wait, say),
 * then wait. The caller owns the op and its buffers until it is done or the
 * context failed; nothing is allocated. One thread at a time, like the context.
 */
#ifndef STA_RING_ASYNC_H
#define STA_RING_ASYNC_H

#include <poll.h>

#include "algos/exec.h"

/* Two comms (a send and a receive) of up to 8 sockets each. */
#define STA_RING_OP_FDS_MAX 16

typedef struct sta_ring_op {
    const sta_group_t *g;
    char *buf;                  /* count elements, reduced in place */
    size_t count, esz;
    strata_dtype_t dtype;
    strata_op_t redop;
    void *tmp;                  /* sta_ring_op_tmp_bytes(): a reduce-scatter step lands here */
    int step, nsteps;           /* next step to finish; 2(P-1) steps in all */
    int send_posted, recv_posted;
    stt_req_t *sreq, *rreq;     /* the current step's requests, NULL once complete */
} sta_ring_op_t;

/* Bytes tmp must hold for a ring over P members of count elements. */
size_t sta_ring_op_tmp_bytes(int P, size_t count, strata_dtype_t dtype);

/* Prepares (posts nothing yet); g, buf and tmp must outlive the op. */
void sta_ring_op_init(sta_ring_op_t *op, const sta_group_t *g, void *buf, size_t count,
                      strata_dtype_t dtype, strata_op_t redop, void *tmp);

/*
 * Posts and tests what it can without waiting; *progressed_p = 1 when a step
 * completed. Errors are recorded in the context (sta_ctx_fail) and returned.
 */
strata_status_t sta_ring_op_progress(sta_ctx_t *ctx, sta_ring_op_t *op, int *progressed_p);

/* Every step completed. */
int sta_ring_op_done(const sta_ring_op_t *op);

/* The descriptors to sleep on for the requests in flight (see stt_poll_fds). */
int sta_ring_op_poll_fds(const sta_ring_op_t *op, struct pollfd *fds, int max);

/* Progresses until done, backing off (and sleeping on the descriptors), within the timeout. */
strata_status_t sta_ring_op_wait(sta_ctx_t *ctx, sta_ring_op_t *op);

#endif /* STA_RING_ASYNC_H */
