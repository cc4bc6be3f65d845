/*
 * The CollNet executor's staging phases (collnet_exec.h): a run on GPU memory copies its
 * input into host memory over the self link (IN), runs its schedule there (RUN) and copies
 * the result back (OUT). The self link's transfers pair up in run order. Written for verbs
 * with peer memory; run here on host buffers with STRATA_COLLNET_STAGE=1 (no GPU).
 */
#include "plugin/collnet_exec.h"

static int stage_post(stp_cn_comm_t *c, int i, int out)
{
    stp_cn_run_t *r = stp_cn_run_at(c, i);
    const int slot = (c->run_head + i) % STP_CN_ACTIVE, self = c->nlinks;
    stp_cn_req_t *q = r->req;
    uint8_t *from = out ? r->buf[STA_SCHED_DST] : q->src;
    uint8_t *to = out ? q->dst : r->buf[STA_SCHED_SRC];
    stp_cn_mr_t *from_mr = out ? r->mr[STA_SCHED_DST] : q->src_mr;
    stp_cn_mr_t *to_mr = out ? q->dst_mr : r->mr[STA_SCHED_SRC];
    size_t len = out ? r->dst_len : r->src_len;
    int tag = 0;

    if (c->nflights + 2 > STP_CN_MAX_INFLIGHT)
        return 0;
    if (r->stage_posted == 0) {                    /* nothing posted yet: the send */
        stt_req_t *req = NULL;
        strata_status_t status = stt_isend(c->links[self].send, from, len, 0,
                                           from_mr->mh[2 * self], &req);
        if (status != STRATA_OK || req == NULL) {
            if (status != STRATA_OK)
                stp_cn_exec_fail(c, status, c->pos, "staging GPU memory through", q->seq,
                                 0);
            return 0;
        }
        stp_cn_flight_add(c, req, slot, -1, 1, c->pos, self, len);
        r->stage_posted = 1;
    }
    if (r->stage_posted == 1) {
        stt_req_t *req = NULL;
        void *mh = to_mr->mh[2 * self + 1];
        strata_status_t status = stt_irecv(c->links[self].recv, 1, (void **)&to, &len, &tag,
                                           &mh, &req);
        if (status != STRATA_OK || req == NULL) {
            if (status != STRATA_OK)
                stp_cn_exec_fail(c, status, c->pos, "staging GPU memory through", q->seq,
                                 0);
            return 0;
        }
        stp_cn_flight_add(c, req, slot, -1, 0, c->pos, self, len);
        r->stage_posted = 2;
    }
    return 1;
}

/* Moves runs between phases; posts staging transfers in run order. */
void stp_cn_runs_stage(stp_cn_comm_t *c, int *changed)
{
    int posting = 1;

    for (int i = 0; i < c->nrunning; i++) {
        stp_cn_run_t *r = stp_cn_run_at(c, i);
        if (r->phase == STP_CN_PH_RUN && r->left == 0 && r->send_unit == r->nunits &&
            r->recv_unit == r->nunits) {
            r->phase = r->buf[STA_SCHED_DST] != r->req->dst ? STP_CN_PH_OUT : STP_CN_PH_DONE;
            r->stage_posted = r->stage_done = 0;
            *changed = 1;
        }
        if (r->phase != STP_CN_PH_IN && r->phase != STP_CN_PH_OUT)
            continue;
        if (r->stage_posted < 2 && posting) {
            posting = stage_post(c, i, r->phase == STP_CN_PH_OUT);
            *changed |= posting;
        }
        if (r->stage_done == 2) {
            r->stage_posted = r->stage_done = 0;
            if (r->phase == STP_CN_PH_IN)
                stp_cn_run_pre_copy(r);
            r->phase = r->phase == STP_CN_PH_IN ? STP_CN_PH_RUN : STP_CN_PH_DONE;
            *changed = 1;
        }
    }
}

/* Marks finished runs' requests done and frees their slots, oldest first. */
