/*
 * The receive side of the ib transport: irecv, iflush, receive progress and
 * the test of a receive or flush request.
 *
 * irecv takes the request of FIFO slot seq % STT_IB_FIFO_DEPTH (free once the
 * receive STT_IB_FIFO_DEPTH earlier was tested), fills the CTS entries of its
 * buffers and RDMA-writes them into the sender's FIFO; one CTS write in
 * STT_IB_CTS_SIGNAL_EVERY is signalled, which retires the others.
 *
 * Every QP keeps STT_IB_RQ_DEPTH zero-length receive WRs posted; each write
 * with immediate consumes one and is replaced in the same poll batch. The
 * immediate names the slot and how many QPs carry a completion for it; the
 * receive is done when that many arrived, with its sizes from the immediate
 * or from the sizes array. Every field is checked against the receive: a
 * peer that breaks the protocol fails the comm, it cannot write outside the
 * posted buffers (their rkeys bound it) nor make us read out of range.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/time.h"

/* Puts back count receive WRs of QP q (each immediate consumed one). */
static void recv_post_wrs(stt_ib_recv_t *rc, int q, int count)
{
    int err = stt_ib_qp_post_recvs(&rc->conn, q, count);

    if (err != 0)
        stt_conn_fail(&rc->conn.head, STRATA_ERR_IO, "ibv_post_recv of %d receive WRs on QP"
                      " 0x%x: %s", count, rc->conn.qps[q].qp->qp_num, strerror(err));
}

/* Every completion of receive req arrived: take its sizes. */
static void recv_complete(stt_ib_recv_t *rc, stt_ib_rreq_t *req, uint32_t slot)
{
    stt_ib_imm_t imm;

    stt_ib_imm_decode_as(req->imm, stt_ib_conn_vnic(&rc->conn), &imm);
    req->slot.status = imm.trunc ? STRATA_ERR_TRUNCATED : STRATA_OK;
    if (imm.sizes) {
        for (int i = 0; i < req->slot.n; i++) {
            uint32_t v = rc->sizes[slot * STT_MAX_RECVS + (uint32_t)i];
            uint64_t size = v & ~STT_IB_SIZE_TRUNC;
            if (size > req->cap[i]) {
                stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "the peer reports %llu bytes"
                              " for buffer %d of a %llu-byte receive (slot %u)",
                              (unsigned long long)size, i,
                              (unsigned long long)req->cap[i], slot);
                return;
            }
            req->got[i] = (v & STT_IB_SIZE_TRUNC) ? 0 : size;
            if (v & STT_IB_SIZE_TRUNC)
                req->slot.status = STRATA_ERR_TRUNCATED;
        }
    } else {
        if (req->slot.n != 1 || imm.size > req->cap[0]) {
            stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "immediate size %u for a receive of"
                          " %d buffers, %llu bytes (slot %u)", imm.size, req->slot.n,
                          (unsigned long long)req->cap[0], slot);
            return;
        }
        req->got[0] = imm.trunc ? 0 : imm.size;
    }
    if (req->slot.status == STRATA_ERR_TRUNCATED)
        STU_INFO(STU_LOG_NET, "ib: receive in slot %u from %s failed: a send was larger than"
                 " its buffer", slot, rc->conn.head.peer);
    req->slot.state = STT_SLOT_DONE;
}

static void recv_imm(stt_ib_recv_t *rc, const struct ibv_wc *wc)
{
    stt_ib_imm_t imm;

    if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc->wc_flags & IBV_WC_WITH_IMM)) {
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "a receive completion that is no write"
                      " with immediate (opcode %d, flags 0x%x)", (int)wc->opcode,
                      (unsigned)wc->wc_flags);
        return;
    }
    uint32_t value = ntohl(wc->imm_data);
    stt_ib_imm_decode_as(value, stt_ib_conn_vnic(&rc->conn), &imm);
    stt_ib_rreq_t *req = &rc->reqs[imm.slot];
    /* A virtual device: an immediate of an older epoch is replayed in the current one. */
    if (imm.epoch != (req->slot.state == STT_SLOT_ACTIVE ? req->epoch : rc->conn.epoch))
        return;
    if (req->slot.state != STT_SLOT_ACTIVE || imm.nqps > (uint32_t)rc->conn.nqps) {
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "immediate 0x%08x names slot %u (%s)"
                      " and %u QPs (the comm has %d)", value, imm.slot,
                      req->slot.state == STT_SLOT_ACTIVE ? "posted" : "no receive posted",
                      imm.nqps, rc->conn.nqps);
        return;
    }
    if (req->cqes_want == 0) {
        req->cqes_want = (uint8_t)imm.nqps;
        req->imm = value;
    } else if (req->imm != value) {
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "immediates of one receive disagree"
                      " (0x%08x, then 0x%08x)", req->imm, value);
        return;
    }
    int q = (int)((wc->wr_id >> 8) & 0xff);
    req->qps_imm |= (uint8_t)(1u << q);
    if (STU_UNLIKELY(req->wr_any))
        stt_ib_wrev_recv_qp(req, q);
    if (++req->cqes_got == req->cqes_want)
        recv_complete(rc, req, imm.slot);
}

static void recv_flush_done(stt_ib_recv_t *rc, const struct ibv_wc *wc)
{
    uint32_t f = (uint32_t)((wc->wr_id >> 16) & 0xffff);

    if (f >= STT_IB_FIFO_DEPTH || rc->flushes[f].slot.state != STT_SLOT_ACTIVE) {
        stt_conn_fail(&rc->conn.head, STRATA_ERR_INTERNAL, "flush completion %016llx for no"
                      " flush in flight", (unsigned long long)wc->wr_id);
        return;
    }
    rc->flushes[f].slot.state = STT_SLOT_DONE;
}

/*
 * A failed completion on a virtual device: true when it is (or follows) the
 * loss of its QP's member, which the failover takes over. A flush read on a
 * lost member ends: the member's writes cannot land any more.
 */
static bool recv_wc_lost(stt_ib_recv_t *rc, const struct ibv_wc *wc)
{
    int member = stt_ib_fo_member_of(&rc->conn, wc->wr_id);

    if (member < 0 || rc->conn.head.failed != STRATA_OK)
        return false;
    if (!(rc->conn.dead & (1u << member))) {
        if (!stt_ib_fo_link_lost(&rc->conn, wc))
            return false;
        stt_ib_fo_recv_lost(rc, 1u << member, stt_ib_verbs.wc_status_str(wc->status));
    }
    uint32_t f = (uint32_t)((wc->wr_id >> 16) & 0xffff);
    if ((wc->wr_id & 0xff) == STT_IB_WR_FLUSH && f < STT_IB_FIFO_DEPTH &&
        rc->flushes[f].slot.state == STT_SLOT_ACTIVE)
        rc->flushes[f].slot.state = STT_SLOT_DONE;
    return rc->conn.head.failed == STRATA_OK;
}

static void recv_poll_cq(stt_ib_recv_t *rc, struct ibv_cq *cq)
{
    struct ibv_wc wc[STT_IB_CQ_BATCH];
    int repost[STT_IB_MAX_QPS] = {0};
    int n;

    do {
        n = ibv_poll_cq(cq, STT_IB_CQ_BATCH, wc);
        if (n < 0) {
            stt_conn_fail(&rc->conn.head, STRATA_ERR_IO, "ibv_poll_cq failed (%d)", n);
            return;
        }
        for (int i = 0; i < n; i++) {
            int kind = (int)(wc[i].wr_id & 0xff);
            int q = (int)((wc[i].wr_id >> 8) & 0xff);
            if (wc[i].status != IBV_WC_SUCCESS) {
                if (!recv_wc_lost(rc, &wc[i]))
                    stt_ib_conn_wc_fail(&rc->conn, &wc[i]);
                continue;
            }
            if (kind == STT_IB_WR_FLUSH) {
                recv_flush_done(rc, &wc[i]);
                continue;
            }
            if (q >= rc->conn.nqps || (kind != STT_IB_WR_CTS && kind != STT_IB_WR_RECV)) {
                stt_conn_fail(&rc->conn.head, STRATA_ERR_INTERNAL, "completion with an unknown"
                              " work request id %016llx",
                              (unsigned long long)wc[i].wr_id);
                continue;
            }
            if (kind == STT_IB_WR_CTS) {
                rc->conn.qps[q].sq_done = (uint32_t)(wc[i].wr_id >> 32);
                continue;
            }
            repost[q]++;
            if (rc->conn.head.failed == STRATA_OK)
                recv_imm(rc, &wc[i]);
        }
    } while (n == STT_IB_CQ_BATCH);
    for (int q = 0; q < rc->conn.nqps && rc->conn.head.failed == STRATA_OK; q++)
        recv_post_wrs(rc, q, repost[q]);
}

strata_status_t stt_ib_recv_progress(stt_ib_recv_t *rc)
{
    stt_ib_conn_t *conn = &rc->conn;

    if (conn->head.failed != STRATA_OK)
        return conn->head.failed;
    for (int j = 0; j < conn->nmembers; j++)
        recv_poll_cq(rc, conn->m[j].cq);
    if (stt_ib_conn_vnic(conn))
        stt_ib_fo_recv_poll(rc);
    int active = 0;
    for (int i = 0; i < STT_IB_FIFO_DEPTH; i++)
        active += rc->reqs[i].slot.state == STT_SLOT_ACTIVE;
    if (stt_ib_conn_watch(conn, active > 0) && active > 0 && conn->head.failed == STRATA_OK) {
        for (int j = 0; j < conn->nmembers; j++)      /* what the peer wrote before it left */
            recv_poll_cq(rc, conn->m[j].cq);
        active = 0;
        for (int i = 0; i < STT_IB_FIFO_DEPTH; i++)
            active += rc->reqs[i].slot.state == STT_SLOT_ACTIVE;
        if (active > 0)
            stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "the peer closed its side channel with"
                          " %d receives pending", active);
    }
    return conn->head.failed;
}

static void recv_req_release(stt_ib_recv_t *rc, stt_ib_rreq_t *req)
{
    if (STU_UNLIKELY(req->wr_any))
        stt_ib_wrev_recv_end(req);
    for (int i = 0; i < req->slot.n; i++)
        stt_ib_mr_fly_drop(&rc->conn, req->fly[i]);
    if (req->is_flush)
        stt_slots_give(&rc->flush_slots, &req->slot);
    else
        req->slot.state = STT_SLOT_FREE;
}

/* Resolves every buffer's keys; on failure releases what it took. */
static strata_status_t recv_keys(stt_ib_recv_t *rc, stt_ib_rreq_t *req, int n, void **data,
                                 const size_t *sizes, void **mhs,
                                 uint32_t (*rkeys)[STT_IB_MAX_MEMBERS])
{
    stt_ib_keys_t keys;

    for (int i = 0; i < n; i++)
        for (int j = 0; j < rc->conn.nmembers; j++)
            req->fly[i][j] = NULL;
    for (int i = 0; i < n; i++) {
        if (data[i] == NULL && sizes[i] > 0) {
            STU_WARN("ib: irecv from %s: buffer %d is NULL with %zu bytes", rc->conn.head.peer, i,
                     sizes[i]);
            goto err_release;
        }
        if (stt_ib_mr_resolve(&rc->conn, mhs ? mhs[i] : NULL, data[i], sizes[i], &keys,
                              req->fly[i]) != STRATA_OK)
            goto err_release;
        memcpy(rkeys[i], keys.rkey, sizeof(rkeys[i]));
    }
    return STRATA_OK;

err_release:
    for (int i = 0; i < n; i++)
        stt_ib_mr_fly_drop(&rc->conn, req->fly[i]);
    return STRATA_ERR_INVALID;
}

strata_status_t stt_ib_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                             const int *tags, void **mhs, stt_req_t **req_p)
{
    stt_ib_recv_t *rc = (stt_ib_recv_t *)stt_conn_of(comm, &stt_ib_ops, false, "irecv");
    uint32_t rkeys[STT_MAX_RECVS][STT_IB_MAX_MEMBERS];

    if (rc == NULL)
        return STRATA_ERR_INVALID;
    if (req_p == NULL || n < 1 || n > STT_MAX_RECVS || data == NULL || sizes == NULL ||
        tags == NULL) {
        STU_WARN("ib: irecv from %s: bad arguments (n %d of at most %d, data %p, sizes %p,"
                 " tags %p, request output %p)", rc->conn.head.peer, n, STT_MAX_RECVS,
                 (void *)data, (const void *)sizes, (const void *)tags, (void *)req_p);
        return STRATA_ERR_INVALID;
    }
    if (STU_UNLIKELY(rc->conn.head.failed != STRATA_OK))
        return rc->conn.head.failed;
    uint32_t slot = rc->seq % STT_IB_FIFO_DEPTH;
    stt_ib_rreq_t *req = &rc->reqs[slot];
    if (stt_ib_conn_vnic(&rc->conn))
        stt_ib_fo_recv_poll(rc);                 /* answers a sender's DOWN while idle too */
    stt_ib_qp_t *q0 = &rc->conn.qps[rc->cts_qp];
    if (req->slot.state != STT_SLOT_FREE || stt_ib_qp_room(q0) == 0) {
        stt_ib_recv_progress(rc);
        if (req->slot.state != STT_SLOT_FREE || stt_ib_qp_room(q0) == 0) {
            *req_p = NULL;
            return rc->conn.head.failed;
        }
    }
    if (recv_keys(rc, req, n, data, sizes, mhs, rkeys) != STRATA_OK)
        return STRATA_ERR_INVALID;

    stt_ib_fifo_fill(&rc->cts[slot], rc->seq, n, data, sizes, tags,
                     (const uint32_t(*)[STT_IB_MAX_MEMBERS])rkeys, rc->conn.nmembers);
    for (int i = 0; i < n; i++)
        rc->cts[slot].e[i].epoch = rc->conn.epoch;
    int rc_post = stt_ib_recv_cts_post(rc, slot, n, rc->seq);
    if (rc_post != 0) {
        for (int i = 0; i < n; i++)
            stt_ib_mr_fly_drop(&rc->conn, req->fly[i]);
        stt_conn_fail(&rc->conn.head, STRATA_ERR_IO, "ibv_post_send of the clear-to-send on QP"
                      " 0x%x: %s", q0->qp->qp_num, strerror(rc_post));
        return rc->conn.head.failed;
    }
    req->epoch = rc->conn.epoch;
    req->slot.state = STT_SLOT_ACTIVE;
    req->is_flush = 0;
    req->slot.n = (uint8_t)n;
    req->cqes_want = 0;
    req->cqes_got = 0;
    req->qps_imm = 0;
    req->imm = 0;
    req->slot.status = STRATA_OK;
    req->slot.base.nsizes = n;
    for (int i = 0; i < n; i++) {
        req->cap[i] = sizes[i];
        req->got[i] = 0;
    }
    req->wr_any = false;
    if (STU_UNLIKELY(comm->wr_cookies != NULL)) {
        for (int i = 0; i < n; i++) {
            req->wr_cookie[i] = comm->wr_cookies[i];
            req->wr_any = req->wr_any || req->wr_cookie[i] != NULL;
        }
        if (req->wr_any)
            stt_ib_wrev_recv_start(rc, req, slot);
    }
    rc->seq++;
    *req_p = &req->slot.base;
    return STRATA_OK;
}

/* Posts the flush read of req: one byte of data, into the control block. */
static strata_status_t recv_flush_post(stt_ib_recv_t *rc, stt_ib_rreq_t *req, void *data,
                                       size_t size, void *mh)
{
    stt_ib_keys_t keys;
    stt_ib_member_t *m = &rc->conn.m[rc->conn.flush_qp.member];

    req->slot.n = 1;                          /* so that release drops fly[0] */
    if (stt_ib_mr_resolve(&rc->conn, mh, data, size, &keys, req->fly[0]) != STRATA_OK) {
        recv_req_release(rc, req);
        return STRATA_ERR_INVALID;
    }
    uint32_t rkey = keys.rkey[rc->conn.flush_qp.member];
    struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)rc->flush_sink, .length = 1,
                          .lkey = m->ctl_mr->lkey};
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = stt_ib_wr_id(STT_IB_WR_FLUSH, 0, req->slot.index, 0);
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = (uint64_t)(uintptr_t)data;
    wr.wr.rdma.rkey = rkey;
    int rc_post = ibv_post_send(rc->conn.flush_qp.qp, &wr, &bad);
    if (rc_post != 0) {
        recv_req_release(rc, req);
        stt_conn_fail(&rc->conn.head, STRATA_ERR_IO, "posting a flush read on QP 0x%x: %s",
                      rc->conn.flush_qp.qp->qp_num, strerror(rc_post));
        return rc->conn.head.failed;
    }
    req->slot.state = STT_SLOT_ACTIVE;
    return STRATA_OK;
}

strata_status_t stt_ib_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                              void **mhs, stt_req_t **req_p)
{
    stt_ib_recv_t *rc = (stt_ib_recv_t *)stt_conn_of(comm, &stt_ib_ops, false, "iflush");

    if (rc == NULL)
        return STRATA_ERR_INVALID;
    if (req_p == NULL || n < 1 || n > STT_MAX_RECVS) {
        STU_WARN("ib: iflush on the comm from %s: bad arguments (n %d, request output %p)",
                 rc->conn.head.peer, n, (void *)req_p);
        return STRATA_ERR_INVALID;
    }
    if (rc->conn.head.failed != STRATA_OK)
        return rc->conn.head.failed;
    /* Host memory, or flushing off: the completions polled made the data visible. */
    int last = n - 1;
    while (last >= 0 && (sizes == NULL || sizes[last] <= 0 || data[last] == NULL))
        last--;
    bool read = rc->conn.flush_qp.qp != NULL && last >= 0 &&
                !(rc->conn.dead & (1u << rc->conn.flush_qp.member));
    stt_ib_rreq_t *req = (stt_ib_rreq_t *)stt_slots_take(&rc->flush_slots, 0);
    if (req == NULL) {
        if (!read) {
            *req_p = NULL;               /* nothing to wait for */
            return STRATA_OK;
        }
        STU_WARN("ib: iflush on the receive comm with %s: %d flushes in flight already",
                 rc->conn.head.peer, STT_IB_FIFO_DEPTH);
        return STRATA_ERR_NO_RESOURCE;
    }
    req->slot.state = STT_SLOT_DONE;
    *req_p = &req->slot.base;
    if (!read)
        return STRATA_OK;
    return recv_flush_post(rc, req, data[last], (size_t)sizes[last], mhs ? mhs[last] : NULL);
}

strata_status_t stt_ib_recv_test(stt_ib_recv_t *rc, stt_ib_rreq_t *req, int *done,
                                 size_t *sizes)
{
    if (req->slot.state != STT_SLOT_DONE)
        stt_ib_recv_progress(rc);
    if (req->slot.state != STT_SLOT_DONE && rc->conn.head.failed == STRATA_OK) {
        *done = 0;
        return STRATA_OK;
    }
    strata_status_t status =
        req->slot.state == STT_SLOT_DONE ? req->slot.status : rc->conn.head.failed;
    if (status == STRATA_OK && !req->is_flush)
        stt_ib_count_recv(rc, req);
    recv_req_release(rc, req);
    if (status != STRATA_OK)
        return status;
    *done = 1;
    if (sizes != NULL && !req->is_flush)
        for (int i = 0; i < req->slot.n; i++)
            sizes[i] = req->got[i];
    return STRATA_OK;
}
