/*
 * The CollNet's executor: runs the step schedules of algos/sched.h over the transport without
 * ever blocking, driven by NCCL's test() calls (and by iallreduce & co. themselves).
 *
 * Terms: a run is one collective on an executor slot (up to STP_CN_ACTIVE at once, started in
 * call order); a unit is one (step, piece) of a run, u = step x npieces + piece; each unit
 * has a send half and a receive half, either possibly empty. Ring steps are cut into pieces
 * of at least the agreed chunk so that piece c of step s+1 leaves as soon as piece c of step
 * s has arrived and been reduced (the schedules' chunkable rule).
 *
 * Order: every member posts its sends, and its receives, in (run, unit) order, stopping at the
 * first one that cannot go yet; sends and receives of a connection then match in order on both
 * ends (the transport contract), with no tags. Rules per unit u = (s, c):
 *   send(s, c)  after receive(s-1, c) is done (the data it forwards or has reduced)
 *   recv(s, c)  after send(s-1, c) and receive(s-1, c) are done: nothing still reads the
 *               region it may overwrite, and the staging area of piece c is free again
 *   reduce      when the bytes are in, and send(s, c) is done if it reads the memory the
 *               reduction writes (recursive doubling sends and reduces DST; in place, SRC
 *               is DST)
 * Every dependency points to a smaller unit, so each member makes progress as long as its
 * peers do: no deadlock, whatever the order in which transport requests complete.
 *
 * Failure: a transport error, or no progress on the oldest run for STRATA_TIMEOUT, fails the
 * collComm for good (every later call returns the error) with a warning that names the
 * member whose data did not come.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algos/reduce.h"
#include "plugin/collnet.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

/* Nap of exec_wait between passes that moved nothing: short against a hop (~10 us on tcp). */
#define CN_WAIT_NAP_NS 20000

/* ------------------------------------------------------------------ setup */

strata_status_t stp_cn_exec_init(stp_cn_comm_t *c)
{
    c->timeout_ns = (uint64_t)stu_param_int(STU_PARAM_TIMEOUT) * 1000000ull;
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

/* ------------------------------------------------------------------ failure */

static int peer_rank(const stp_cn_comm_t *c, int pos)
{
    return pos >= 0 && pos < c->nranks ? c->rank_of[pos] : -1;
}

static strata_status_t exec_fail(stp_cn_comm_t *c, strata_status_t status, int peer,
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

/* ------------------------------------------------------------------ runs */

static stp_cn_run_t *run_at(stp_cn_comm_t *c, int i)
{
    return &c->runs[(c->run_head + i) % STP_CN_ACTIVE];
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

/* Pieces per step: whole chunks of the largest region, within the executor's bounds. */
static int run_pieces(const stp_cn_comm_t *c, const sta_sched_t *s)
{
    size_t most = 0;
    int n, cap;

    if (!s->chunkable || s->nsteps == 0)
        return 1;
    for (int i = 0; i < s->nsteps; i++) {
        sta_sched_step_t st;
        sta_sched_step(s, i, &st);
        most = STU_MAX(most, STU_MAX(st.send.len, st.recv.len));
    }
    n = (int)STU_MIN((most + c->chunk - 1) / c->chunk, (size_t)STP_CN_MAX_PIECES);
    cap = STP_CN_MAX_UNITS / s->nsteps;
    return STU_MAX(1, STU_MIN(n, cap));
}

static int ranges_overlap(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return alen > 0 && blen > 0 && a < b + blen && b < a + alen;
}

/* The schedule's SRC bytes copied into DST before its first step (allgather's own block). */
static void run_pre_copy(stp_cn_run_t *r)
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
    r->stage_src = ranges_overlap(r->buf[STA_SCHED_SRC], r->src_len, r->buf[STA_SCHED_DST],
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
    r->stage_src = ranges_overlap(q->src, src_len, q->dst, dst_len);
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
        run_pre_copy(r);
    r->last_ns = stu_time_ns();
    q->state = STP_CN_REQ_RUNNING;
    return STRATA_OK;
}

/* Starts queued requests, in call order, while executor slots are free. */
static strata_status_t runs_start(stp_cn_comm_t *c, int *changed)
{
    while (c->nrunning < STP_CN_ACTIVE) {
        stp_cn_req_t *q = NULL;
        for (int i = 0; i < STP_CN_MAX_REQUESTS && q == NULL; i++) {
            if (c->reqs[i].state == STP_CN_REQ_QUEUED && c->reqs[i].seq == c->run_seq)
                q = &c->reqs[i];
        }
        if (q == NULL)
            return STRATA_OK;
        stp_cn_run_t *r = run_at(c, c->nrunning);
        strata_status_t status = run_start(c, r, q);
        if (status != STRATA_OK)
            return exec_fail(c, status, -1, "starting a collective with", q->seq, 0);
        c->nrunning++;
        c->run_seq++;
        *changed = 1;
    }
    return STRATA_OK;
}

/* One of the unit's halves is done; the unit is finished when both are. */
static void unit_settle(stp_cn_run_t *r, int u)
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
static int unit_reduce(stp_cn_run_t *r, int u)
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
        if (ranges_overlap(sent, slen, out, len))
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
    unit_settle(r, u);
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

/* Appends a transport request; flights stay in posting order (flights_test relies on it). */
static void flight_add(stp_cn_comm_t *c, stt_req_t *req, int run, int u, int is_send, int peer,
                       int link, size_t len)
{
    c->flights[c->nflights++] = (stp_cn_flight_t){req, run, u, is_send, peer, link, len};
}

/* Posts run r's sends (r is the i-th running) until one cannot go. 1: all are posted. */
static int post_sends(stp_cn_comm_t *c, int i, int *changed)
{
    stp_cn_run_t *r = run_at(c, i);
    const int slot = (c->run_head + i) % STP_CN_ACTIVE;

    if (r->phase == STP_CN_PH_IN)
        return 0;                   /* its input is still on the way in: later runs wait too */
    while (r->send_unit < r->nunits) {
        const int u = r->send_unit, s = u / r->npieces, pc = u % r->npieces;
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
                exec_fail(c, status, st.send_peer, "sending to", r->req->seq, s);
                return 0;
            }
            if (req == NULL)
                return 0;                       /* no slot: after the next completions */
            flight_add(c, req, slot, u, 1, st.send_peer, l, len);
        } else {
            r->sdone[u] = 1;
            unit_settle(r, u);
        }
        r->send_unit++;
        *changed = 1;
    }
    return 1;
}

/* Posts run r's receives until one cannot go. 1: all are posted. */
static int post_recvs(stp_cn_comm_t *c, int i, int *changed)
{
    stp_cn_run_t *r = run_at(c, i);
    const int slot = (c->run_head + i) % STP_CN_ACTIVE;

    if (r->phase == STP_CN_PH_IN)
        return 0;
    while (r->recv_unit < r->nunits) {
        const int u = r->recv_unit, s = u / r->npieces, pc = u % r->npieces;
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
                exec_fail(c, status, st.recv_peer, "receiving from", r->req->seq, s);
                return 0;
            }
            if (req == NULL)
                return 0;
            flight_add(c, req, slot, u, 0, st.recv_peer, l, len);
            r->rstate[u] = STP_CN_R_POSTED;
        } else {
            r->rstate[u] = STP_CN_R_DONE;
            unit_settle(r, u);
        }
        r->recv_unit++;
        *changed = 1;
    }
    return 1;
}

/* A flight's completion: its unit's half is done (a receive is reduced). 0 on a failure. */
static int flight_done(stp_cn_comm_t *c, const stp_cn_flight_t *f, size_t got)
{
    stp_cn_run_t *r = &c->runs[f->run];

    r->last_ns = stu_time_ns();
    if (f->unit < 0) {
        r->stage_done++;                           /* a self-link staging transfer */
    } else if (f->is_send) {
        r->sdone[f->unit] = 1;
        unit_settle(r, f->unit);
        if (r->rstate[f->unit] == STP_CN_R_ARRIVED)  /* a REDUCE_OUT waiting for it */
            unit_reduce(r, f->unit);
    } else {
        if (got != f->len) {
            exec_fail(c, STRATA_ERR_REMOTE, f->peer, "a piece of the wrong size (protocol"
                      " broken) from", r->req->seq, f->unit / r->npieces);
            return 0;
        }
        r->rstate[f->unit] = STP_CN_R_ARRIVED;
        unit_reduce(r, f->unit);
    }
    return 1;
}

/*
 * Tests the transport requests in flight, oldest first, and completes units. A connection's
 * requests finish in posting order (its messages arrive in order), and testing one progresses
 * the whole comm (the transport contract), so once a request is found unfinished the later
 * ones of its comm wait for the next pass: a pass costs a system call or two per connection,
 * not one per piece in flight (up to STP_CN_MAX_INFLIGHT). A later request that finished
 * first (a transport may complete a small message before a striped one) is seen in the pass
 * after the older one, never lost.
 */
static void flights_test(stp_cn_comm_t *c, int *changed)
{
    size_t sizes[STT_MAX_RECVS];
    const unsigned pass = ++c->pass;
    int keep = 0, i = 0;

    for (; i < c->nflights && c->failed == STRATA_OK; i++) {
        const stp_cn_flight_t f = c->flights[i];
        stp_cn_link_t *lk = &c->links[f.link];
        unsigned *mark = f.is_send ? &lk->send_mark : &lk->recv_mark;
        int done = 0;

        if (*mark == pass) {
            c->flights[keep++] = f;                    /* an older one of its comm is out */
            continue;
        }
        sizes[0] = 0;
        strata_status_t status = stt_test(f.req, &done, sizes);
        if (status != STRATA_OK) {
            exec_fail(c, status, f.peer, f.is_send ? "sending to" : "receiving from",
                      c->runs[f.run].req->seq, f.unit / c->runs[f.run].npieces);
            i++;                                       /* the request is released */
            break;
        }
        if (!done) {
            *mark = pass;
            c->flights[keep++] = f;
            continue;
        }
        *changed = 1;                                  /* the request is released */
        if (!flight_done(c, &f, sizes[0])) {
            i++;
            break;
        }
    }
    while (i < c->nflights)                            /* after a failure: the untested */
        c->flights[keep++] = c->flights[i++];
    c->nflights = keep;
}

/*
 * Posts a run's two self-link transfers, GPU to host (IN) or host to GPU (OUT): the send, then
 * the receive, so that runs' transfers pair up in order on the self link. 1 when both are
 * posted, 0 when the transport had no slot (try again).
 */
static int stage_post(stp_cn_comm_t *c, int i, int out)
{
    stp_cn_run_t *r = run_at(c, i);
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
                exec_fail(c, status, c->pos, "staging GPU memory through", q->seq, 0);
            return 0;
        }
        flight_add(c, req, slot, -1, 1, c->pos, self, len);
        r->stage_posted = 1;
    }
    if (r->stage_posted == 1) {
        stt_req_t *req = NULL;
        void *mh = to_mr->mh[2 * self + 1];
        strata_status_t status = stt_irecv(c->links[self].recv, 1, (void **)&to, &len, &tag,
                                           &mh, &req);
        if (status != STRATA_OK || req == NULL) {
            if (status != STRATA_OK)
                exec_fail(c, status, c->pos, "staging GPU memory through", q->seq, 0);
            return 0;
        }
        flight_add(c, req, slot, -1, 0, c->pos, self, len);
        r->stage_posted = 2;
    }
    return 1;
}

/* Moves runs between phases; posts staging transfers in run order. */
static void runs_stage(stp_cn_comm_t *c, int *changed)
{
    int posting = 1;

    for (int i = 0; i < c->nrunning; i++) {
        stp_cn_run_t *r = run_at(c, i);
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
                run_pre_copy(r);
            r->phase = r->phase == STP_CN_PH_IN ? STP_CN_PH_RUN : STP_CN_PH_DONE;
            *changed = 1;
        }
    }
}

/* Marks finished runs' requests done and frees their slots, oldest first. */
static void runs_finish(stp_cn_comm_t *c, int *changed)
{
    for (int i = 0; i < c->nrunning; i++) {
        stp_cn_run_t *r = run_at(c, i);
        if (r->req->state == STP_CN_REQ_RUNNING && r->phase == STP_CN_PH_DONE) {
            r->req->state = STP_CN_REQ_DONE;
            *changed = 1;
        }
    }
    while (c->nrunning > 0 && run_at(c, 0)->req->state == STP_CN_REQ_DONE) {
        run_at(c, 0)->req = NULL;
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
    stp_cn_run_t *r = run_at(c, 0);
    uint64_t now = stu_time_ns();
    if (now - r->last_ns <= c->timeout_ns)
        return;
    int peer = -1, step = r->recv_unit / STU_MAX(r->npieces, 1);
    for (int i = 0; i < c->nflights && peer < 0; i++) {
        if (&c->runs[c->flights[i].run] == r && !c->flights[i].is_send) {
            peer = c->flights[i].peer;
            step = c->flights[i].unit / r->npieces;
        }
    }
    if (peer < 0 && r->recv_unit < r->nunits) {
        sta_sched_step_t st;
        sta_sched_step(&r->sched, step, &st);
        peer = st.recv_peer;
    }
    exec_fail(c, STRATA_ERR_TIMEOUT, peer, "no data for STRATA_TIMEOUT from", r->req->seq,
              step);
}

strata_status_t stp_cn_exec_progress(stp_cn_comm_t *c)
{
    int changed = 1;

    c->moved = 0;
    for (int pass = 0; changed && c->failed == STRATA_OK; pass++) {
        changed = 0;
        runs_start(c, &changed);
        flights_test(c, &changed);
        for (int i = 0; i < c->nrunning && c->failed == STRATA_OK; i++)
            if (!post_sends(c, i, &changed))
                break;
        for (int i = 0; i < c->nrunning && c->failed == STRATA_OK; i++)
            if (!post_recvs(c, i, &changed))
                break;
        runs_stage(c, &changed);
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
            return exec_fail(c, STRATA_ERR_TIMEOUT, -1, "the deadline passed waiting for",
                             req->seq, 0);
        nanosleep(&nap, NULL);
    }
}
