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

/* Two rings in flight, each on two comms (a send and a receive) of up to 8 sockets. */
#define STA_RING_OP_FDS_MAX 32

typedef struct sta_ring_op {
    const sta_group_t *g;
    char *buf;                  /* count elements, reduced in place */
    size_t count, esz;
    strata_dtype_t dtype;
    strata_op_t redop;
    void *tmp;                  /* sta_ring_op_tmp_bytes(): a reduce-scatter step lands here */
    int step, nsteps;           /* next step to finish; 2(P-1) steps in all (1: exchange) */
    int exchange;               /* P = 2: one step that swaps and reduces all of buf */
    int send_posted, recv_posted;
    stt_req_t *sreq, *rreq;     /* the current step's requests, NULL once complete */
    const struct sta_ring_op *after;   /* posts nothing before this one posted its last step
                                          (NULL: no such wait); see sta_ring_op_init */
} sta_ring_op_t;

/* Bytes tmp must hold for a ring (or, P = 2, an exchange) over P members of count elements. */
size_t sta_ring_op_tmp_bytes(int P, size_t count, strata_dtype_t dtype, int exchange);

/*
 * Prepares (posts nothing yet); g, buf and tmp must outlive the op. `exchange` (used only
 * where g has 2 members; every member must pass the same) swaps and reduces all of buf in
 * one step instead of the ring's two. With `after` (an op over
 * the same group, or NULL), this op starts posting once `after` posted its last step: every
 * comm then carries after's messages before this one's on both of its ends, so two rings
 * can be in flight and the link never waits between them.
 */
void sta_ring_op_init(sta_ring_op_t *op, const sta_group_t *g, void *buf, size_t count,
                      strata_dtype_t dtype, strata_op_t redop, void *tmp, int exchange,
                      const sta_ring_op_t *after);

/*
 * Posts and tests what it can without waiting; *progressed_p = 1 when a step
 * completed. Errors are recorded in the context (sta_ctx_fail) and returned.
 */
strata_status_t sta_ring_op_progress(sta_ctx_t *ctx, sta_ring_op_t *op, int *progressed_p);

/* Every step completed. */
int sta_ring_op_done(const sta_ring_op_t *op);

/* Adds the descriptors to sleep on for op's requests in flight to a set of n (see
 * sta_wait_fds_add): the new count, or -1 when one of them names none (nap). */
int sta_ring_op_poll_fds(const sta_ring_op_t *op, struct pollfd *fds, int n, int max);

/*
 * Progresses ops[0..nops) in order until ops[0] is done, backing off (and sleeping on their
 * descriptors), within the context's timeout. NULL entries are skipped.
 */
strata_status_t sta_ring_ops_wait(sta_ctx_t *ctx, sta_ring_op_t *const *ops, int nops);

#endif /* STA_RING_ASYNC_H */
