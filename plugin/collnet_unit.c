/*
 * The CollNet executor's units (collnet_exec.h): posting each run's sends and receives in
 * (run, unit) order, under the dependency rules of the executor, and reducing a piece once
 * it has arrived.
 */
#include <string.h>

#include "algos/reduce.h"
#include "plugin/collnet_exec.h"

/* One of the unit's halves is done; the unit is finished when both are. */
void stp_cn_unit_settle(stp_cn_run_t *r, int u)
{
    if (r->sdone[u] && r->rstate[u] == STP_CN_R_DONE)
        r->left--;
}

/* Where piece c of a region lies, and its length. */
static uint8_t *piece_ptr(stp_cn_run_t *r, const sta_sched_region_t *reg, int c, size_t *len_p,
                          size_t *poff_p)
{
    size_t poff, plen;
    sta_sched_piece(reg->len, r->sched.esize, r->npieces, c, &poff, &plen);
    *len_p = plen;
    if (poff_p != NULL)
        *poff_p = poff;
    return r->buf[reg->buf] + reg->off + poff;
}

/* Is the receive of unit u staged (landing in the staging area, then reduced out of it)? */
static int recv_staged(const stp_cn_run_t *r, const sta_sched_step_t *st)
{
    return st->recv_kind == STA_SCHED_RECV_REDUCE_OUT ||
           (st->recv_kind == STA_SCHED_RECV_REDUCE_SRC && r->stage_src &&
            st->recv.buf == STA_SCHED_DST);
}

/* Reduces (or accepts) unit u's arrived piece; 0 if it must wait for its own send. */
int stp_cn_unit_reduce(stp_cn_run_t *r, int u)
{
    const int s = u / r->npieces, pc = u % r->npieces;
    sta_sched_step_t st;
    size_t len, poff;

    sta_sched_step(&r->sched, s, &st);
    uint8_t *out = piece_ptr(r, &st.recv, pc, &len, &poff);
    size_t n = len / r->sched.esize;
    const stp_cn_req_t *q = r->req;
    uint8_t *staged = r->buf[STP_CN_BUF_STAGE] + st.recv.off + poff;

    if (st.send_peer >= 0 && !r->sdone[u]) {
        /* the step's own send may read what this writes (recursive doubling sends the region
         * it reduces into; in place, SRC is DST): it must be out first */
        size_t slen;
        const uint8_t *sent = piece_ptr(r, &st.send, pc, &slen, NULL);
        if (stp_cn_ranges_overlap(sent, slen, out, len))
            return 0;
    }
    if (st.recv_kind == STA_SCHED_RECV_REDUCE_OUT) {
        sta_reduce(out, out, staged, n, q->dtype, q->op);
    } else if (st.recv_kind == STA_SCHED_RECV_REDUCE_SRC) {
        const uint8_t *mine = r->buf[STA_SCHED_SRC] + st.src_off + poff;
        if (recv_staged(r, &st))
            sta_reduce(out, mine, staged, n, q->dtype, q->op);   /* out may be mine, in place */
        else
            sta_reduce(out, out, mine, n, q->dtype, q->op);
    }
    r->rstate[u] = STP_CN_R_DONE;
    stp_cn_unit_settle(r, u);
    return 1;
}

static int unit_ready(const stp_cn_run_t *r, int u, int for_recv)
{
    int prev = u - r->npieces;
    if (prev < 0)
        return 1;
    if (r->rstate[prev] != STP_CN_R_DONE)
        return 0;
    return !for_recv || r->sdone[prev];
}

/* Posts run r's sends (r is the i-th running) until one cannot go. 1: all are posted. */
int stp_cn_unit_post_sends(stp_cn_comm_t *c, int i, int *changed)
{
    stp_cn_run_t *r = stp_cn_run_at(c, i);
    const int slot = (c->run_head + i) % STP_CN_ACTIVE;

    if (r->phase == STP_CN_PH_IN)
        return 0;                   /* its input is still on the way in: later runs wait too */
    while (r->send_unit < r->nunits) {
        const int u = stp_cn_unit_at(c, r, r->send_unit), s = u / r->npieces,
                  pc = u % r->npieces;
        sta_sched_step_t st;
        size_t len;
        sta_sched_step(&r->sched, s, &st);
        uint8_t *data = piece_ptr(r, &st.send, pc, &len, NULL);
        if (st.send_peer >= 0 && len > 0) {
            if (!unit_ready(r, u, 0) || c->nflights == STP_CN_MAX_INFLIGHT)
                return 0;
            int l = c->link_of[st.send_peer];
            stt_req_t *req = NULL;
            strata_status_t status = stt_isend(c->links[l].send, data, len, 0,
                                               r->mr[st.send.buf]->mh[2 * l], &req);
            if (status != STRATA_OK) {
                stp_cn_exec_fail(c, status, st.send_peer, "sending to", r->req->seq,
                                 s);
                return 0;
            }
            if (req == NULL)
                return 0;                       /* no slot: after the next completions */
            stp_cn_flight_add(c, req, slot, u, 1, st.send_peer, l, len);
        } else {
            r->sdone[u] = 1;
            stp_cn_unit_settle(r, u);
        }
        r->send_unit++;
        *changed = 1;
    }
    return 1;
}

/* Posts run r's receives until one cannot go. 1: all are posted. */
int stp_cn_unit_post_recvs(stp_cn_comm_t *c, int i, int *changed)
{
    stp_cn_run_t *r = stp_cn_run_at(c, i);
    const int slot = (c->run_head + i) % STP_CN_ACTIVE;

    if (r->phase == STP_CN_PH_IN)
        return 0;
    while (r->recv_unit < r->nunits) {
        const int u = stp_cn_unit_at(c, r, r->recv_unit), s = u / r->npieces,
                  pc = u % r->npieces;
        sta_sched_step_t st;
        size_t len, poff;
        if (!unit_ready(r, u, 1))
            return 0;
        sta_sched_step(&r->sched, s, &st);
        uint8_t *data = piece_ptr(r, &st.recv, pc, &len, &poff);
        if (st.recv_peer >= 0 && len > 0) {
            if (c->nflights == STP_CN_MAX_INFLIGHT)
                return 0;
            int staged = recv_staged(r, &st), l = c->link_of[st.recv_peer], tag = 0;
            int b = staged ? STP_CN_BUF_STAGE : st.recv.buf;
            void *mh = r->mr[b]->mh[2 * l + 1];
            stt_req_t *req = NULL;
            if (staged)
                data = r->buf[STP_CN_BUF_STAGE] + st.recv.off + poff;
            strata_status_t status = stt_irecv(c->links[l].recv, 1, (void **)&data, &len, &tag,
                                               &mh, &req);
            if (status != STRATA_OK) {
                stp_cn_exec_fail(c, status, st.recv_peer, "receiving from",
                                 r->req->seq, s);
                return 0;
            }
            if (req == NULL)
                return 0;
            stp_cn_flight_add(c, req, slot, u, 0, st.recv_peer, l, len);
            r->rstate[u] = STP_CN_R_POSTED;
        } else {
            r->rstate[u] = STP_CN_R_DONE;
            stp_cn_unit_settle(r, u);
        }
        r->recv_unit++;
        *changed = 1;
    }
    return 1;
}

/* A flight's completion: its unit's half is done (a receive is reduced). 0 on a failure. */
