/*
 * Non-blocking collectives: a per-communicator worker thread, started on the
 * first strata_i* call, runs queued collectives in call order. A blocking
 * collective first drains the queue, so only one thread ever drives the
 * communicator's transport at a time.
 */
#ifndef STC_WORKER_H
#define STC_WORKER_H

#include "coll/comm.h"

/* One collective, as the public call described it. */
typedef struct stc_op {
    sta_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    size_t count;         /* recvcount for reduce_scatter, sendcount for allgather */
    strata_dtype_t dtype;
    strata_op_t op;
    int root;
} stc_op_t;

/* Runs o on the calling thread (coll.c). */
strata_status_t stc_run(strata_comm_t *comm, const stc_op_t *o);

/* Waits until every queued collective has run; the comm's sticky status. */
strata_status_t stc_worker_drain(strata_comm_t *comm);

/* Queues o and returns its request (starting the worker on first use). */
strata_status_t stc_worker_submit(strata_comm_t *comm, const stc_op_t *o,
                                  strata_request_t **req_p);

/* Drains and joins the worker; idempotent. */
void stc_worker_stop(strata_comm_t *comm);

/* A second arena beside the context's scratch, for whole-buffer work copies. */
strata_status_t stc_work(strata_comm_t *comm, size_t bytes, void **buf_p);

/* Position of rank r in the node-major flat group. */
int stc_flat_pos(const strata_comm_t *comm, int r);

#endif /* STC_WORKER_H */
