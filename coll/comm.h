/* The communicator behind strata_comm_t (internal to coll/). */
#ifndef STC_COMM_H
#define STC_COMM_H

#include <pthread.h>

#include "algos/cost_model.h"
#include "algos/ctx.h"
#include "algos/exec.h"
#include "algos/select.h"
#include "coll/bootstrap.h"
#include "strata/strata.h"
#include "util/shm.h"

typedef struct stc_worker stc_worker_t;

struct strata_comm {
    sta_ctx_t ctx;                /* what the algorithms see */
    stc_boot_t boot;
    const stt_ops_t *ops;         /* the transport between ranks */
    int dev;                      /* this rank's rail device */
    int nrails;
    int host_ranks, host_cores;   /* the busiest host's ranks and cores, for the model */
    stt_listen_t *listen;
    stu_shm_t shm;
    int *node_of, *local_of, *rank_of;
    sta_group_t flat;             /* every rank, node-major: few inter-node hops */
    sta_group_t byrank;           /* every rank in rank order: block i belongs to rank i */
    int *flat_ranks, *byrank_ranks;
    int *flat_pos_of;             /* [nranks]: each rank's position in flat (roots' lookups) */
    sta_model_t model;
    sta_select_t select;
    stc_worker_t *worker;         /* non-blocking collectives, created on first use */
};

/* Builds the connections this rank's algorithms need (connect.c). */
strata_status_t stc_connect_peers(strata_comm_t *comm, const char *handles);
void stc_disconnect_peers(strata_comm_t *comm);

/* The peers rank `me` exchanges data with, as a sorted list without duplicates. */
int stc_peer_set(const strata_comm_t *comm, int me, int *peers, int max);

#endif /* STC_COMM_H */
