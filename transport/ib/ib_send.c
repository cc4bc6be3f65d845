/*
 * The send side of the ib transport: isend, send progress and the test of a
 * send request.
 *
 * isend queues a request; progress matches queued sends, in posting order,
 * against the FIFO slot of the next receive (the CTS the receiver wrote),
 * each to the first open buffer with its tag (a send whose tag has no open
 * buffer there waits in the queue; later sends pass it), and posts:
 *   - the payload as RDMA writes into the receive buffer: whole on one QP
 *     (round robin), or split in STT_IB_SPLIT_ALIGN-aligned chunks over every
 *     QP from STRATA_IB_SPLIT_MIN bytes on;
 *   - once the receive's last buffer is matched, its completion: the sizes into
 *     the receiver's sizes array (grouped receives, large sizes), then a write
 *     with immediate on every QP that carried payload. A single small message
 *     turns its last payload write into the write with immediate instead,
 *     unless adaptive routing asks for a separate 0-byte one.
 * A send larger than its buffer moves no payload: it fails with TRUNCATED and
 * its TRUNC flag fails the receive; the connection stays usable.
 *
 * The last work request a send posts on each QP is signalled, so a send
 * completes on its own; everything else is unsignalled. Send-queue room is
 * counted per QP (stt_ib_qp_t), and matching pauses when a QP is full.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/time.h"

/* Work requests one send can post on one QP: payload, sizes, immediate. */
#define SEND_WR_PER_QP 3

typedef struct send_plan {
    int nwr[STT_IB_MAX_QPS];
    struct ibv_send_wr wr[STT_IB_MAX_QPS][SEND_WR_PER_QP];
    struct ibv_sge sge[STT_IB_MAX_QPS][SEND_WR_PER_QP];
} send_plan_t;

static void send_req_release(stt_ib_send_t *sc, stt_ib_sreq_t *req)
{
    if (STU_UNLIKELY(req->wr_cookie != NULL))
        stt_ib_wrev_send_end(req);
    stt_ib_mr_fly_drop(&sc->conn, req->fly);
    stt_slots_give(&sc->slots, &req->slot);
}

/*
 * A failed completion on a virtual device: true when it is (or follows) the
 * loss of its QP's member, which the failover takes over; false for an error
 * that fails the comm.
 */
static bool send_wc_lost(stt_ib_send_t *sc, const struct ibv_wc *wc)
{
    int member = stt_ib_fo_member_of(&sc->conn, wc->wr_id);

    if (member < 0 || sc->conn.head.failed != STRATA_OK)
        return false;
    if (sc->conn.dead & (1u << member))
        return true;                              /* flushed after the loss */
    if (!stt_ib_fo_link_lost(&sc->conn, wc))
        return false;
    stt_ib_fo_send_lost(sc, 1u << member, stt_ib_verbs.wc_status_str(wc->status));
    return sc->conn.head.failed == STRATA_OK;
}

static void send_poll_cq(stt_ib_send_t *sc, struct ibv_cq *cq)
{
    struct ibv_wc wc[STT_IB_CQ_BATCH];
    int n;

    do {
        n = ibv_poll_cq(cq, STT_IB_CQ_BATCH, wc);
        if (n < 0) {
            stt_conn_fail(&sc->conn.head, STRATA_ERR_IO, "ibv_poll_cq failed (%d)", n);
            return;
        }
        for (int i = 0; i < n; i++) {
            int kind = (int)(wc[i].wr_id & 0xff);
            int qp = (int)((wc[i].wr_id >> 8) & 0xff);
            int idx = (int)((wc[i].wr_id >> 16) & 0xffff);
            bool ok = wc[i].status == IBV_WC_SUCCESS;
            if (!ok && !send_wc_lost(sc, &wc[i])) {
                stt_ib_conn_wc_fail(&sc->conn, &wc[i]);
                continue;
            }
            if (!ok && kind != STT_IB_WR_SEND)
                continue;             /* an unsignalled write flushed: its send's turn comes */
            if ((kind != STT_IB_WR_SEND && kind != STT_IB_WR_REPLAY) || qp >= sc->conn.nqps ||
                idx >= STT_IB_SEND_RING) {
                stt_conn_fail(&sc->conn.head, STRATA_ERR_INTERNAL, "completion with an unknown"
                              " work request id %016llx",
                              (unsigned long long)wc[i].wr_id);
                continue;
            }
            if (ok)
                sc->conn.qps[qp].sq_done = (uint32_t)(wc[i].wr_id >> 32);
            stt_ib_sreq_t *req = &sc->reqs[idx];
            if (kind == STT_IB_WR_SEND && STU_UNLIKELY(req->wr_ev[qp] != NULL))
                stt_ib_wrev_stop(&req->wr_ev[qp]);          /* its work on that QP is done */
            if (kind != STT_IB_WR_SEND || req->slot.state != STT_SLOT_ACTIVE)
                continue;
            /* Failed before the POS of its member's loss: done once replayed, or known landed. */
            int member = stt_ib_fo_member_of(&sc->conn, wc[i].wr_id);
            req->fo_hold = req->fo_hold || (!ok && !(sc->conn.agreed & (1u << member)));
            if (--req->cqes_left == 0 && !req->fo_hold)
                req->slot.state = STT_SLOT_DONE;
        }
    } while (n == STT_IB_CQ_BATCH);
}

/* Loads the FIFO slot of the next receive; false when it has not arrived (or failed). */
static bool send_slot_load(stt_ib_send_t *sc)
{
    const char *why = NULL;
    int n = 0;
    uint32_t slot = sc->recv_seq % STT_IB_FIFO_DEPTH;
    strata_status_t status = stt_ib_fifo_check(&sc->fifo[slot], sc->recv_seq, &n, &why);

    if (status == STRATA_INPROGRESS)
        return false;
    if (status == STRATA_OK && sc->fifo[slot].e[0].epoch > sc->conn.epoch)
        return false;         /* posted after a loss whose POS has not come yet */
    if (status != STRATA_OK) {
        /* Possibly a write still landing: fail only if it stays malformed. */
        uint64_t now = stu_time_ns();
        if (sc->slot_bad_since == 0) {
            sc->slot_bad_since = now;
            sc->slot_bad_reads = 0;
        }
        if (++sc->slot_bad_reads >= STT_IB_FIFO_SETTLE_READS &&
            now - sc->slot_bad_since >= STT_IB_FIFO_SETTLE_NS)
            stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "invalid clear-to-send for receive"
                          " %u: %s", sc->recv_seq, why);
        return false;
    }
    sc->slot_bad_since = 0;
    for (int i = 0; i < n; i++) {
        memcpy(&sc->slot[i], (const void *)&sc->fifo[slot].e[i], sizeof(sc->slot[i]));
        for (int j = 1; j < sc->conn.nmembers; j++)
            sc->slot_xkeys[i][j] = sc->fifo[slot].xkeys[i][j];
        sc->slot_xkeys[i][0] = sc->slot[i].rkey;
    }
    sc->slot_ready = true;
    sc->slot_n = (uint8_t)n;
    sc->slot_matched = 0;
    sc->slot_qps = 0;
    sc->slot_trunc = false;
    sc->slot_sizes = n > 1;
    return true;
}

static int send_buffer_find(const stt_ib_send_t *sc, int tag)
{
    for (int i = 0; i < sc->slot_n; i++)
        if (!(sc->slot_matched & (1u << i)) && sc->slot[i].tag == tag)
            return i;
    return -1;
}

static struct ibv_send_wr *plan_add(send_plan_t *p, int q, enum ibv_wr_opcode op, uint64_t raddr,
                                    uint32_t rkey)
{
    int k = p->nwr[q]++;
    struct ibv_send_wr *wr = &p->wr[q][k];

    memset(wr, 0, sizeof(*wr));
    wr->opcode = op;
    wr->wr.rdma.remote_addr = raddr;
    wr->wr.rdma.rkey = rkey;
    if (k > 0)
        p->wr[q][k - 1].next = wr;
    return wr;
}

static void plan_sge(send_plan_t *p, int q, struct ibv_send_wr *wr, uint64_t addr, uint32_t len,
                     uint32_t lkey)
{
    struct ibv_sge *sge = &p->sge[q][wr - p->wr[q]];

    sge->addr = addr;
    sge->length = len;
    sge->lkey = lkey;
    wr->sg_list = sge;
    wr->num_sge = 1;
}

/* Plans, checks room for, and posts the work requests of req into buffer i. */
static bool send_post(stt_ib_send_t *sc, stt_ib_sreq_t *req, int i)
{
    send_plan_t plan;
    stt_ib_conn_t *conn = &sc->conn;
    const stt_ib_fifo_entry_t *e = &sc->slot[i];
    uint32_t slot = sc->recv_seq % STT_IB_FIFO_DEPTH;
    bool trunc = req->size > e->size;
    uint64_t bytes = trunc ? 0 : req->size;
    bool last = __builtin_popcount(sc->slot_matched) + 1 == sc->slot_n;
    bool sizes_path = sc->slot_sizes || bytes > sc->imm_size_max;
    bool ar_split = sc->ar && bytes > sc->ar_threshold;
    stt_ib_stripe_t stripe;
    uint64_t qlen[STT_IB_MAX_QPS] = {0};               /* payload per QP, for its event */
    int map[STT_IB_MAX_QPS], nlive = 0;
    for (int q = 0; q < conn->nqps; q++)          /* the plan's QP k is live QP map[k] */
        if (conn->live & (1u << q))
            map[nlive++] = q;
    bool split = stt_ib_stripe_plan(bytes, nlive, sc->split_min, sc->rr, &stripe);
    uint32_t qmask = 0;

    memset(plan.nwr, 0, sizeof(plan.nwr));
    for (int k = 0; k < nlive; k++) {
        int q = map[k];
        if (stripe.qmask & (1u << k))
            qmask |= 1u << q;
        if (stripe.len[k] == 0)
            continue;
        qlen[q] = stripe.len[k];
        int mem = conn->qps[q].member;
        struct ibv_send_wr *wr = plan_add(&plan, q, IBV_WR_RDMA_WRITE, e->addr + stripe.off[k],
                                          sc->slot_xkeys[i][mem]);
        plan_sge(&plan, q, wr, (uint64_t)(uintptr_t)req->data + stripe.off[k],
                 (uint32_t)stripe.len[k], req->lkey[mem]);
    }
    uint32_t union_mask = (sc->slot_qps | qmask) & conn->live;
    if (last) {
        stt_ib_imm_t imm = {.slot = slot, .nqps = (uint32_t)__builtin_popcount(union_mask),
                            .trunc = sc->slot_trunc || trunc, .sizes = sizes_path,
                            .size = sizes_path ? 0 : (uint32_t)bytes,
                            .vnic = stt_ib_conn_vnic(conn), .epoch = conn->epoch};
        uint32_t imm_be = htonl(stt_ib_imm_encode(&imm));
        sc->hist_trunc[slot] = imm.trunc;        /* what a failover's replay repeats */
        sc->hist_sizes[slot] = imm.sizes;
        sc->hist_bytes[slot] = imm.size;
        int q0 = __builtin_ctz(union_mask);
        stt_ib_member_t *m0 = stt_ib_conn_member(conn, q0);
        uint64_t sizes_raddr = conn->remote_addr +
                               (uint64_t)slot * STT_MAX_RECVS * sizeof(uint32_t);
        if (sizes_path) {
            uint32_t *src = &sc->sizes_src[slot * STT_MAX_RECVS];
            src[i] = trunc ? STT_IB_SIZE_TRUNC : (uint32_t)bytes;
            uint32_t len = sc->slot_n * (uint32_t)sizeof(uint32_t);
            struct ibv_send_wr *wr = plan_add(&plan, q0, IBV_WR_RDMA_WRITE, sizes_raddr,
                                              m0->remote_rkey);
            plan_sge(&plan, q0, wr, (uint64_t)(uintptr_t)src, len, m0->ctl_mr->lkey);
            if (len <= conn->qps[q0].max_inline)
                wr->send_flags |= IBV_SEND_INLINE;
        }
        for (int q = 0; q < conn->nqps; q++) {
            if (!(union_mask & (1u << q)))
                continue;
            int k = plan.nwr[q];
            /* Only this send's payload is planned here: its last write can carry the imm. */
            bool fold = !sizes_path && !ar_split && k > 0;
            struct ibv_send_wr *wr = fold ? &plan.wr[q][k - 1]
                                          : plan_add(&plan, q, IBV_WR_RDMA_WRITE_WITH_IMM,
                                                     sizes_raddr,
                                                     stt_ib_conn_member(conn, q)->remote_rkey);
            wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
            wr->imm_data = imm_be;
        }
    } else if (sc->slot_sizes) {
        sc->sizes_src[slot * STT_MAX_RECVS + i] = trunc ? STT_IB_SIZE_TRUNC : (uint32_t)bytes;
    }

    for (int q = 0; q < conn->nqps; q++)
        if (plan.nwr[q] > 0 && stt_ib_qp_room(&conn->qps[q]) < (uint32_t)plan.nwr[q])
            return false;                  /* wait for completions; nothing changed yet */

    int idx = (int)(req - sc->reqs), cqes = 0;
    for (int q = 0; q < conn->nqps; q++) {
        struct ibv_send_wr *bad = NULL;
        int k = plan.nwr[q];
        if (k == 0)
            continue;
        for (int j = 0; j < k - 1; j++)     /* unsignalled: named only for error reports */
            plan.wr[q][j].wr_id = stt_ib_wr_id(STT_IB_WR_NONE, q, idx, 0);
        stt_ib_qp_t *qp = &conn->qps[q];
        qp->sq_posted += (uint32_t)k;
        plan.wr[q][k - 1].send_flags |= IBV_SEND_SIGNALED;
        plan.wr[q][k - 1].wr_id = stt_ib_wr_id(STT_IB_WR_SEND, q, idx, qp->sq_posted);
        int rc = ibv_post_send(qp->qp, &plan.wr[q][0], &bad);
        if (rc != 0) {
            stt_conn_fail(&conn->head, STRATA_ERR_IO, "ibv_post_send on QP 0x%x (%d work requests,"
                          " %llu bytes): %s", qp->qp->qp_num, k,
                          (unsigned long long)bytes, strerror(rc));
            return false;
        }
        if (STU_UNLIKELY(req->wr_cookie != NULL))
            stt_ib_wrev_start(conn, req->wr_cookie, &req->wr_ev[q], q, plan.wr[q][k - 1].wr_id,
                              (int)plan.wr[q][k - 1].opcode, qlen[q]);
        cqes++;
    }
    if (!split)
        sc->rr++;
    sc->slot_matched |= (uint8_t)(1u << i);
    sc->slot_qps = (uint8_t)union_mask;
    sc->slot_trunc = sc->slot_trunc || trunc;
    req->slot.status = trunc ? STRATA_ERR_TRUNCATED : STRATA_OK;
    req->cqes_left = (uint8_t)cqes;
    req->recv_seq = sc->recv_seq;
    req->buf = (uint8_t)i;
    req->fo_hold = false;
    stt_ib_count_plan(conn, req, map, nlive, &stripe);
    sc->hist_seq[slot] = sc->recv_seq;
    req->slot.state = cqes > 0 ? STT_SLOT_ACTIVE : STT_SLOT_DONE;
    if (trunc)
        STU_INFO(STU_LOG_NET, "ib: send of %llu bytes (tag %d) to %s is larger than its receive"
                 " buffer of %llu bytes: truncated", (unsigned long long)req->size, req->tag,
                 conn->head.peer, (unsigned long long)e->size);
    if (last) {
        sc->slot_ready = false;
        sc->recv_seq++;
    }
    return true;
}

/*
 * Matches queued sends against the CTS of the next receive, NCCL's rule: each
 * send, in posting order, takes the first open buffer with its tag; a send
 * whose tag has none stays queued (still in order) while later sends of other
 * tags pass it, and is matched once a receive with its tag is the next one.
 */
static void send_match(stt_ib_send_t *sc)
{
    while (sc->q_head != sc->q_tail && sc->conn.head.failed == STRATA_OK) {
        if (!sc->slot_ready && !send_slot_load(sc))
            return;
        uint32_t w = sc->q_head, pos = sc->q_head;
        bool stalled = false;
        for (; pos != sc->q_tail && sc->slot_ready && !stalled; pos++) {
            uint16_t idx = sc->queue[pos % STT_IB_SEND_RING];
            int i = send_buffer_find(sc, sc->reqs[idx].tag);
            stalled = i >= 0 && !send_post(sc, &sc->reqs[idx], i);  /* a QP is full */
            if (i < 0 || stalled)
                sc->queue[w++ % STT_IB_SEND_RING] = idx;
        }
        for (; pos != sc->q_tail; pos++)
            sc->queue[w++ % STT_IB_SEND_RING] = sc->queue[pos % STT_IB_SEND_RING];
        sc->q_tail = w;
        if (stalled || sc->slot_ready)
            return;           /* wait for room, or for a send with a tag this receive has */
    }
}

strata_status_t stt_ib_send_progress(stt_ib_send_t *sc)
{
    stt_ib_conn_t *conn = &sc->conn;

    if (conn->head.failed != STRATA_OK)
        return conn->head.failed;
    for (int j = 0; j < conn->nmembers; j++)
        send_poll_cq(sc, conn->m[j].cq);
    if (stt_ib_conn_vnic(conn))
        stt_ib_fo_send_poll(sc);
    if (!stt_ib_fo_send_busy(sc))
        send_match(sc);
    bool queued = sc->q_head != sc->q_tail;
    bool pending = queued || !stt_slots_idle(&sc->slots);
    if (stt_ib_conn_watch(conn, pending) && conn->head.failed == STRATA_OK) {
        int active = 0;
        for (int i = 0; i < STT_IB_SEND_RING; i++)
            active += sc->reqs[i].slot.state == STT_SLOT_ACTIVE;
        if (queued)
            stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "the peer closed its side channel with"
                          " %u sends waiting for receives", sc->q_tail - sc->q_head);
        else if (active > 0 && stu_time_ns() - conn->eof_ns > STT_IB_EOF_GRACE_NS)
            stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "the peer closed its side channel and"
                          " %d posted sends were not acknowledged within %llu ms", active,
                          (unsigned long long)(STT_IB_EOF_GRACE_NS / 1000000));
    }
    return conn->head.failed;
}

strata_status_t stt_ib_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                             stt_req_t **req_p)
{
    stt_ib_send_t *sc = (stt_ib_send_t *)stt_conn_of(comm, &stt_ib_ops, true, "isend");
    strata_status_t status;
    stt_ib_mrc_entry_t *fly[STT_IB_MAX_MEMBERS];
    stt_ib_keys_t keys;

    if (sc == NULL)
        return STRATA_ERR_INVALID;
    if (STU_UNLIKELY(req_p == NULL)) {
        STU_WARN("ib: isend to %s with a NULL request output", sc->conn.head.peer);
        return STRATA_ERR_INVALID;
    }
    if (STU_UNLIKELY(sc->conn.head.failed != STRATA_OK))
        return sc->conn.head.failed;
    if (STU_UNLIKELY(size > STT_IB_MAX_MSG_BYTES || (data == NULL && size > 0))) {
        STU_WARN("ib: isend to %s: bad arguments (data %p, %zu bytes, limit %llu)",
                 sc->conn.head.peer, data, size, (unsigned long long)STT_IB_MAX_MSG_BYTES);
        return STRATA_ERR_INVALID;
    }
    if (sc->slots.nfree == 0) {
        *req_p = NULL;
        return STRATA_OK;
    }
    status = stt_ib_mr_resolve(&sc->conn, mh, data, size, &keys, fly);
    if (status != STRATA_OK)
        return status;
    stt_ib_sreq_t *req = (stt_ib_sreq_t *)stt_slots_take(&sc->slots, 1);
    req->slot.state = STT_IB_REQ_QUEUED;
    req->cqes_left = 0;
    req->fo_hold = false;
    req->tag = tag;
    req->data = data;
    req->size = size;
    req->wr_cookie = comm->wr_cookies != NULL ? comm->wr_cookies[0] : NULL;
    memcpy(req->lkey, keys.lkey, sizeof(req->lkey));
    memcpy(req->fly, fly, (size_t)sc->conn.nmembers * sizeof(fly[0]));
    sc->queue[sc->q_tail % STT_IB_SEND_RING] = req->slot.index;
    sc->q_tail++;
    stt_ib_send_progress(sc);
    *req_p = &req->slot.base;
    return STRATA_OK;
}

/* test() for a send request; the caller checked req belongs to sc's ring. */
strata_status_t stt_ib_send_test(stt_ib_send_t *sc, stt_ib_sreq_t *req, int *done,
                                 size_t *sizes)
{
    if (req->slot.state != STT_SLOT_DONE)
        stt_ib_send_progress(sc);
    if (req->slot.state != STT_SLOT_DONE && sc->conn.head.failed == STRATA_OK) {
        *done = 0;
        return STRATA_OK;
    }
    strata_status_t status =
        req->slot.state == STT_SLOT_DONE ? req->slot.status : sc->conn.head.failed;
    uint64_t size = req->size;
    if (status == STRATA_OK)
        stt_ib_count_send(sc, req);
    send_req_release(sc, req);
    if (status != STRATA_OK)
        return status;
    *done = 1;
    if (sizes != NULL)
        sizes[0] = size;
    return STRATA_OK;
}
