/*
 * The CollNet's executor, inside: the pieces collnet_exec.c (the progress loop, failure,
 * timeout), collnet_run.c (starting runs), collnet_unit.c (posting units, reducing),
 * collnet_flight.c (transport requests in flight) and collnet_stage.c (GPU staging phases)
 * share. plugin/collnet.h holds the executor's entry points for the rest of the CollNet.
 *
 * Terms: a run is one collective on an executor slot (up to STP_CN_ACTIVE at once, started in
 * call order); a unit is one (step, piece) of a run, u = step x npieces + piece; each unit
 * has a send half and a receive half, either possibly empty. Ring steps are cut into pieces
 * of at least the agreed chunk so that piece c of step s+1 leaves as soon as piece c of step
 * s has arrived and been reduced (the schedules' chunkable rule).
 *
 * Order: every member posts its sends, and its receives, run by run and within a run in the
 * comm's unit order (step by step, or every step of a piece in turn: stp_cn_unit_at, the same
 * on every member), stopping at the first one that cannot go yet; sends and receives of a
 * connection then match in order on both ends (the transport contract), with no tags. Rules
 * per unit u = (s, c):
 *   send(s, c)  after receive(s-1, c) is done (the data it forwards or has reduced)
 *   recv(s, c)  after send(s-1, c) and receive(s-1, c) are done: nothing still reads the
 *               region it may overwrite, and the staging area of piece c is free again
 *   reduce      when the bytes are in, and send(s, c) is done if it reads the memory the
 *               reduction writes (recursive doubling sends and reduces DST; in place, SRC
 *               is DST)
 * Every dependency points to a unit posted earlier in either order (the same piece, the step
 * before), so each member makes progress as long as its peers do: no deadlock, whatever the
 * order in which transport requests complete.
 *
 * Everything here runs on NCCL's progress thread (the data-path calls), never blocks, and
 * reports progress through *changed.
 */
#ifndef STP_COLLNET_EXEC_H
#define STP_COLLNET_EXEC_H

#include "plugin/collnet.h"

/* The i-th running collective, oldest first. */
static inline stp_cn_run_t *stp_cn_run_at(stp_cn_comm_t *c, int i)
{
    return &c->runs[(c->run_head + i) % STP_CN_ACTIVE];
}

static inline int stp_cn_ranges_overlap(const uint8_t *a, size_t alen, const uint8_t *b,
                                        size_t blen)
{
    return alen > 0 && blen > 0 && a < b + blen && b < a + alen;
}

/* collnet_exec.c: fails the collComm for good (the first failure wins, with one warning
 * naming this member and peer, a position or -1); returns the comm's sticky status. */
strata_status_t stp_cn_exec_fail(stp_cn_comm_t *c, strata_status_t status, int peer,
                                 const char *what, uint64_t seq, int step);

/* collnet_run.c: starts queued requests, in call order, while executor slots are free. */
strata_status_t stp_cn_runs_start(stp_cn_comm_t *c, int *changed);
/* The unit (step x npieces + piece) that is the k-th a run posts: step by step, or with
 * c->pieces_in_turn every step of a piece before the next piece. */
static inline int stp_cn_unit_at(const stp_cn_comm_t *c, const stp_cn_run_t *r, int k)
{
    if (!c->pieces_in_turn || r->npieces == 1)
        return k;
    return (k % r->sched.nsteps) * r->npieces + k / r->sched.nsteps;
}

/* The admission rule stp_cn_runs_start applies to the next queued collective of `next`
 * bytes, with `nrunning` collectives of `running` bytes on the executor: 1 if it may start.
 * A free slot is needed (at most STP_CN_ACTIVE run); the oldest (nrunning 0) always starts;
 * a cap of 0 admits up to the slots; otherwise running + next must stay within the cap. */
int stp_cn_run_admits(int nrunning, size_t running, size_t next, size_t cap);
/* The schedule's SRC bytes copied into DST before its first step (allgather's own block). */
void stp_cn_run_pre_copy(stp_cn_run_t *r);

/* collnet_unit.c: posts the i-th running collective's sends (receives) until one cannot go;
 * 1 when all are posted (the next run may post), 0 otherwise. */
int stp_cn_unit_post_sends(stp_cn_comm_t *c, int i, int *changed);
int stp_cn_unit_post_recvs(stp_cn_comm_t *c, int i, int *changed);
/* One of unit u's halves is done; the unit is finished when both are. */
void stp_cn_unit_settle(stp_cn_run_t *r, int u);
/* Reduces (or accepts) unit u's arrived piece; 0 if it must wait for its own send. */
int stp_cn_unit_reduce(stp_cn_run_t *r, int u);

/* collnet_flight.c: appends a transport request of run slot `run`, unit u (-1: a self-link
 * staging transfer); flights stay in posting order (stp_cn_flights_test relies on it). */
void stp_cn_flight_add(stp_cn_comm_t *c, stt_req_t *req, int run, int u, int is_send,
                       int peer, int link, size_t len);
/* Tests the flights oldest first, one unfinished request per connection and direction. */
void stp_cn_flights_test(stp_cn_comm_t *c, int *changed);

/* collnet_stage.c: moves runs between phases; posts staging transfers in run order. */
void stp_cn_runs_stage(stp_cn_comm_t *c, int *changed);

#endif /* STP_COLLNET_EXEC_H */
