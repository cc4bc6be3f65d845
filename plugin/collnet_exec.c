/*
 * The CollNet's executor: runs the step schedules of algos/sched.h over the transport without
 * ever blocking, driven by NCCL's test() calls (and by iallreduce & co. themselves). Its terms
 * and ordering rules: collnet_exec.h. This file is the progress loop (start runs, test
 * flights, post units, stage, finish), submission, the blocking wait of connect's agreement,
 * and failure.
 *
 * Failure: a transport error, or no progress on the oldest run for STRATA_TIMEOUT, fails the
 * collComm for good (every later call returns the error) with a warning that names the
 * member whose data did not come.
 */
#include <inttypes.h>
#include <time.h>

#include "plugin/collnet_exec.h"
#include "util/log.h"
#include "util/time.h"

/* Nap of exec_wait between passes that moved nothing: short against a hop (~10 us on tcp). */
#define CN_WAIT_NAP_NS 20000

static int peer_rank(const stp_cn_comm_t *c, int pos)
{
    return pos >= 0 && pos < c->nranks ? c->rank_of[pos] : -1;
}

strata_status_t stp_cn_exec_fail(stp_cn_comm_t *c, strata_status_t status, int peer,
                                 const char *what, uint64_t seq, int step)
{
    if (c->failed != STRATA_OK)
        return c->failed;
    c->failed = status;
    STU_WARN("Strata collnet: comm 0x%" PRIx64 " member %d (NCCL rank %d) of %d: %s member %d"
             " (NCCL rank %d) failed in collective #%" PRIu64 " step %d: %s; the collComm is"
             " unusable from now on", c->comm_id, c->pos, c->rank, c->nranks, what, peer,
             peer_rank(c, peer), seq, step, strata_status_str(status));
    return status;
}

/* ------------------------------------------------------------------ progress */

static void runs_finish(stp_cn_comm_t *c, int *changed)
{
    for (int i = 0; i < c->nrunning; i++) {
        stp_cn_run_t *r = stp_cn_run_at(c, i);
        if (r->req->state == STP_CN_REQ_RUNNING && r->phase == STP_CN_PH_DONE) {
            r->req->state = STP_CN_REQ_DONE;
            *changed = 1;
        }
    }
    while (c->nrunning > 0 && stp_cn_run_at(c, 0)->req->state == STP_CN_REQ_DONE) {
        stp_cn_run_at(c, 0)->req = NULL;
        c->run_head = (c->run_head + 1) % STP_CN_ACTIVE;
        c->nrunning--;
        *changed = 1;
    }
}

/* The oldest run has not moved for STRATA_TIMEOUT: name the member it waits for. */
static void timeout_check(stp_cn_comm_t *c)
{
    if (c->nrunning == 0)
        return;
    stp_cn_run_t *r = stp_cn_run_at(c, 0);
    uint64_t now = stu_time_ns();
    if (now - r->last_ns <= c->timeout_ns)
        return;
    int peer = -1, step = r->sched.nsteps;   /* every receive is in: a send is late */
    for (int i = 0; i < c->nflights && peer < 0; i++) {
        if (&c->runs[c->flights[i].run] == r && !c->flights[i].is_send) {
            peer = c->flights[i].peer;
            step = c->flights[i].unit / r->npieces;
        }
    }
    if (peer < 0 && r->recv_unit < r->nunits) {
        step = stp_cn_unit_at(c, r, r->recv_unit) / r->npieces;
        sta_sched_step_t st;
        sta_sched_step(&r->sched, step, &st);
        peer = st.recv_peer;
    }
    stp_cn_exec_fail(c, STRATA_ERR_TIMEOUT, peer, "no data for STRATA_TIMEOUT from",
                     r->req->seq, step);
}

strata_status_t stp_cn_exec_progress(stp_cn_comm_t *c)
{
    int changed = 1;

    c->moved = 0;
    for (int pass = 0; changed && c->failed == STRATA_OK; pass++) {
        changed = 0;
        stp_cn_runs_start(c, &changed);
        stp_cn_flights_test(c, &changed);
        for (int i = 0; i < c->nrunning && c->failed == STRATA_OK; i++)
            if (!stp_cn_unit_post_sends(c, i, &changed))
                break;
        for (int i = 0; i < c->nrunning && c->failed == STRATA_OK; i++)
            if (!stp_cn_unit_post_recvs(c, i, &changed))
                break;
        stp_cn_runs_stage(c, &changed);
        runs_finish(c, &changed);
        c->moved |= changed;
    }
    if (c->failed == STRATA_OK)
        timeout_check(c);
    return c->failed;
}

void stp_cn_exec_submit(stp_cn_comm_t *c, stp_cn_req_t *req)
{
    req->seq = c->next_seq++;
    req->state = STP_CN_REQ_QUEUED;
}

strata_status_t stp_cn_exec_wait(stp_cn_comm_t *c, stp_cn_req_t *req, uint64_t deadline_ns)
{
    const struct timespec nap = {0, CN_WAIT_NAP_NS};

    for (;;) {
        strata_status_t status = stp_cn_exec_progress(c);
        if (status != STRATA_OK)
            return status;
        if (req->state == STP_CN_REQ_DONE)
            return STRATA_OK;
        if (stu_time_ns() > deadline_ns)
            return stp_cn_exec_fail(c, STRATA_ERR_TIMEOUT, -1,
                                    "the deadline passed waiting for", req->seq, 0);
        nanosleep(&nap, NULL);
    }
}
