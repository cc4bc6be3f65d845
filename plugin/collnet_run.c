/*
 * The CollNet executor's runs (collnet_exec.h): a queued request becomes a run on a free
 * executor slot, in call order. Starting one builds its schedule (algos/sched.h) for the
 * collective, cuts its ring steps into pieces, points its buffers at NCCL's memory (or at host
 * copies of GPU memory, or at the staging area where a received piece cannot land in place),
 * and grows the scratch it keeps across collectives. Also the executor's per-comm allocation.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin/collnet_exec.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

strata_status_t stp_cn_exec_init(stp_cn_comm_t *c)
{
    c->timeout_ns = (uint64_t)stu_param_int(STU_PARAM_TIMEOUT) * 1000000ull;
    c->inflight_max = (size_t)stu_param_int(STU_PARAM_COLLNET_INFLIGHT);
    for (int i = 0; i < STP_CN_ACTIVE; i++) {
        stp_cn_run_t *r = &c->runs[i];
        r->sdone = calloc(STP_CN_MAX_UNITS, 1);
        r->rstate = calloc(STP_CN_MAX_UNITS, 1);
        r->blk_off = calloc((size_t)c->nranks, sizeof(size_t));
        r->blk_len = calloc((size_t)c->nranks, sizeof(size_t));
        if (r->sdone == NULL || r->rstate == NULL || r->blk_off == NULL || r->blk_len == NULL)
            return STRATA_ERR_NO_MEMORY;
    }
    c->pfds = calloc((size_t)STU_MAX(c->nconn, 1) * 2 * STP_CN_POLL_FDS_PER_COMM,
                     sizeof(*c->pfds));
    return c->pfds != NULL ? STRATA_OK : STRATA_ERR_NO_MEMORY;
}

void stp_cn_exec_fini(stp_cn_comm_t *c)
{
    for (int i = 0; i < STP_CN_ACTIVE; i++) {
        stp_cn_run_t *r = &c->runs[i];
        if (r->work_mr != NULL)
            stp_cn_mr_put(c, r->work_mr);
        if (r->stage_mr != NULL)
            stp_cn_mr_put(c, r->stage_mr);
        for (int b = 0; b < 2; b++) {
            if (r->bounce_mr[b] != NULL)
                stp_cn_mr_put(c, r->bounce_mr[b]);
            free(r->bounce[b]);
        }
        free(r->work);
        free(r->stage);
        free(r->sdone);
        free(r->rstate);
        free(r->blk_off);
        free(r->blk_len);
        memset(r, 0, sizeof(*r));
    }
    free(c->pfds);
    c->pfds = NULL;
}

/* A scratch buffer of at least `size` bytes, registered on every link; kept for later runs. */
static strata_status_t scratch_grow(stp_cn_comm_t *c, uint8_t **buf, size_t *have,
                                    stp_cn_mr_t **mr, size_t size)
{
    if (size <= *have)
        return STRATA_OK;
    if (*mr != NULL)
        stp_cn_mr_put(c, *mr);
    free(*buf);
    *buf = NULL;
    *mr = NULL;
    *have = 0;
    *buf = malloc(size);
    if (*buf == NULL)
        return STRATA_ERR_NO_MEMORY;
    strata_status_t status = stp_cn_mr_get(c, *buf, size, NCCL_PTR_HOST, mr);
    if (status != STRATA_OK) {
        free(*buf);
        *buf = NULL;
        return status;
    }
    *have = size;
    return STRATA_OK;
}

/* The blocks of an allgather or reduce-scatter window, by position: NCCL rank r owns bytes
 * [r x bpr, (r+1) x bpr) of the rank-major buffer; its block is that range within the
 * window, relative to the window's start (empty blocks keep the blocks in order). */
static void window_blocks(stp_cn_comm_t *c, stp_cn_run_t *r, const stp_cn_req_t *q)
{
    size_t lo_w = q->window_off, hi_w = q->window_off + q->bytes;
    for (int p = 0; p < c->nranks; p++) {
        size_t lo = (size_t)c->rank_of[p] * q->bytes_per_rank, hi = lo + q->bytes_per_rank;
        lo = STU_MIN(STU_MAX(lo, lo_w), hi_w);
        hi = STU_MIN(STU_MAX(hi, lo_w), hi_w);
        r->blk_off[p] = lo - lo_w;
        r->blk_len[p] = hi - lo;
    }
}

/* Pieces per step: whole pieces of the largest region, within the executor's bounds; a
 * piece is STRATA_COLLNET_CHUNK, or with 0 the model's optimum for that region
 * (sta_cost_piece_bytes: sqrt(block·α_n·γ)), and never below the piece rule's floor
 * (c->piece_min, stp_cn_piece_min). */
static int run_pieces(const stp_cn_comm_t *c, const sta_sched_t *s)
{
    size_t most = 0, piece;
    int n, cap;

    if (!s->chunkable || s->nsteps == 0)
        return 1;
    for (int i = 0; i < s->nsteps; i++) {
        sta_sched_step_t st;
        sta_sched_step(s, i, &st);
        most = STU_MAX(most, STU_MAX(st.send.len, st.recv.len));
    }
    piece = c->chunk > 0 ? c->chunk : sta_cost_piece_bytes(&c->table.model, most);
    n = sta_sched_npieces(most, piece, c->piece_min, STP_CN_MAX_PIECES);
    cap = STP_CN_MAX_UNITS / s->nsteps;
    return STU_MAX(1, STU_MIN(n, cap));
}

/* The schedule's SRC bytes copied into DST before its first step (allgather's own block). */
void stp_cn_run_pre_copy(stp_cn_run_t *r)
{
    if (r->sched.pre_copy.len > 0) {
        uint8_t *to = r->buf[r->sched.pre_copy.buf] + r->sched.pre_copy.off;
        const uint8_t *from = r->buf[STA_SCHED_SRC] + r->sched.pre_copy_src_off;
        if (to != from)
            memmove(to, from, r->sched.pre_copy.len);
    }
}

/*
 * GPU buffers: the schedule runs on host copies (bounce[0] for the input, bounce[1] for the
 * output), which the IN and OUT phases fill and drain over the self link. Host buffers run in
 * place, unless STRATA_COLLNET_STAGE=1 stages them too (the tests' way to run this path
 * without a GPU; with GPU memory itself it is untested here).
 */
static strata_status_t run_bounce(stp_cn_comm_t *c, stp_cn_run_t *r, const stp_cn_req_t *q)
{
    const stp_cn_mr_t *mrs[2] = {q->src_mr, q->dst_mr};
    const size_t lens[2] = {r->src_len, r->dst_len};
    const int bufs[2] = {STA_SCHED_SRC, STA_SCHED_DST};

    for (int i = 0; i < 2; i++) {
        if ((mrs[i]->type == NCCL_PTR_HOST && !c->stage_all) || lens[i] == 0)
            continue;
        strata_status_t status = scratch_grow(c, &r->bounce[i], &r->bounce_size[i],
                                              &r->bounce_mr[i], lens[i]);
        if (status != STRATA_OK)
            return status;
        r->buf[bufs[i]] = r->bounce[i];
        r->mr[bufs[i]] = r->bounce_mr[i];
    }
    r->stage_src = stp_cn_ranges_overlap(r->buf[STA_SCHED_SRC], r->src_len, r->buf[STA_SCHED_DST],
                                  r->dst_len);
    return STRATA_OK;
}

static strata_status_t run_start(stp_cn_comm_t *c, stp_cn_run_t *r, stp_cn_req_t *q)
{
    const size_t esize = strata_dtype_size(q->dtype);
    size_t src_len, dst_len;
    strata_status_t status;

    if (q->coll == STA_COLL_ALLREDUCE) {
        status = sta_sched_allreduce(&r->sched, q->kind, c->nranks, c->pos, q->bytes, esize);
        src_len = dst_len = q->bytes;
    } else {
        window_blocks(c, r, q);
        status = sta_sched_blocks(&r->sched, q->kind, c->nranks, c->pos, r->blk_off,
                                  r->blk_len, esize);
        src_len = q->coll == STA_COLL_ALLGATHER ? r->blk_len[c->pos] : q->bytes;
        dst_len = q->coll == STA_COLL_ALLGATHER ? q->bytes : r->blk_len[c->pos];
    }
    if (status != STRATA_OK)
        return status;
    r->req = q;
    r->npieces = run_pieces(c, &r->sched);
    r->nunits = r->sched.nsteps * r->npieces;
    r->left = r->nunits;
    r->send_unit = r->recv_unit = 0;
    memset(r->sdone, 0, (size_t)r->nunits);
    memset(r->rstate, STP_CN_R_IDLE, (size_t)r->nunits);
    r->src_len = src_len;
    r->dst_len = dst_len;
    r->buf[STA_SCHED_SRC] = q->src;
    r->buf[STA_SCHED_DST] = q->dst;
    r->mr[STA_SCHED_SRC] = q->src_mr;
    r->mr[STA_SCHED_DST] = q->dst_mr;
    r->stage_src = stp_cn_ranges_overlap(q->src, src_len, q->dst, dst_len);
    if (r->stage_src && q->coll != STA_COLL_ALLGATHER &&
        q->dst != q->src + (q->coll == STA_COLL_ALLREDUCE ? 0 : r->blk_off[c->pos])) {
        /* in place is the output being exactly the input's block (NCCL's registered path);
         * any other overlap would reduce a region into itself shifted */
        STU_WARN("collnet: %s: the output (%p, %zu bytes) overlaps the input (%p, %zu bytes)"
                 " other than in place", sta_coll_name(q->coll), (void *)q->dst, dst_len,
                 (void *)q->src, src_len);
        return STRATA_ERR_INVALID;
    }
    if ((status = run_bounce(c, r, q)) != STRATA_OK)
        return status;
    if (q->coll == STA_COLL_REDUCE_SCATTER) {
        status = scratch_grow(c, &r->work, &r->work_size, &r->work_mr, r->sched.bytes);
        if (status != STRATA_OK)
            return status;
    }
    if (q->kind == STA_SCHED_RD_ALLREDUCE || (r->stage_src && q->coll != STA_COLL_ALLGATHER)) {
        status = scratch_grow(c, &r->stage, &r->stage_size, &r->stage_mr, dst_len);
        if (status != STRATA_OK)
            return status;
    }
    r->buf[STA_SCHED_WORK] = r->work;
    r->mr[STA_SCHED_WORK] = r->work_mr;
    r->buf[STP_CN_BUF_STAGE] = r->stage;
    r->mr[STP_CN_BUF_STAGE] = r->stage_mr;
    r->stage_posted = r->stage_done = 0;
    r->phase = r->buf[STA_SCHED_SRC] != q->src ? STP_CN_PH_IN : STP_CN_PH_RUN;
    if (r->phase == STP_CN_PH_RUN)
        stp_cn_run_pre_copy(r);
    r->last_ns = stu_time_ns();
    q->state = STP_CN_REQ_RUNNING;
    return STRATA_OK;
}

/* The admission rule (collnet_exec.h). */
int stp_cn_run_admits(int nrunning, size_t running, size_t next, size_t cap)
{
    if (nrunning >= STP_CN_ACTIVE)
        return 0;
    if (nrunning == 0 || cap == 0)
        return 1;
    return running <= cap && next <= cap - running;
}

/*
 * Starts queued requests, in call order, while executor slots are free and the bytes of the
 * running ones and the next stay within STRATA_COLLNET_INFLIGHT (the oldest always starts).
 * The cap is local: every member posts in the same order (collective by collective, the
 * comm's unit order within each) whatever it runs at once, so members may differ. Why it exists: docs/collnet-protocol.md, "Bytes in
 * flight".
 */
strata_status_t stp_cn_runs_start(stp_cn_comm_t *c, int *changed)
{
    size_t running = 0;

    for (int i = 0; i < c->nrunning; i++)
        running += stp_cn_run_at(c, i)->req->bytes;
    while (c->nrunning < STP_CN_ACTIVE) {
        stp_cn_req_t *q = NULL;
        for (int i = 0; i < STP_CN_MAX_REQUESTS && q == NULL; i++) {
            if (c->reqs[i].state == STP_CN_REQ_QUEUED && c->reqs[i].seq == c->run_seq)
                q = &c->reqs[i];
        }
        if (q == NULL)
            return STRATA_OK;
        if (!stp_cn_run_admits(c->nrunning, running, q->bytes, c->inflight_max))
            return STRATA_OK;
        running += q->bytes;
        stp_cn_run_t *r = stp_cn_run_at(c, c->nrunning);
        strata_status_t status = run_start(c, r, q);
        if (status != STRATA_OK)
            return stp_cn_exec_fail(c, status, -1, "starting a collective with", q->seq,
                                    0);
        c->nrunning++;
        c->run_seq++;
        *changed = 1;
    }
    return STRATA_OK;
}
