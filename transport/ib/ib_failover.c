/*
 * Failover inside an ib virtual device (docs/ib-protocol.md, "Failover").
 * When a member port is lost (its port's PORT_ERR event, a work request failing
 * for want of a link after RC's retries, an async event on one of its QPs, a
 * fatal event of its device), both ends stop
 * using its QPs (moved to the error state: nothing more lands through them),
 * agree on a new epoch over the comm's TCP side channel, and the sender
 * replays on the surviving QPs what the receiver has not completed:
 *
 *   sender finds it     receiver finds it, or reads DOWN
 *   ---------------     ----------------------------------------------------
 *   DOWN(dead)  ----->  epoch + 1; every open receive restarts in the new epoch
 *                       (immediates of older epochs are ignored); CTS of the
 *                       open receives written again on the first live QP
 *               <-----  POS(epoch, dead, next receive, open receives)
 *   replay: for each open receive, the payload of its sends not yet known to
 *   have landed, then the sizes and an immediate on EVERY live QP (RC writes
 *   on one QP land in order, so when the receive completes, nothing older is
 *   still on its way through any QP); sends of completed receives are done.
 *
 * Matching of new sends waits until the replay is posted; a receive posted
 * after the receiver's bump carries the new epoch in its CTS, and the sender
 * does not match it before it has the POS of that epoch. Losing the last
 * member, or no POS within STRATA_CONNECT_TIMEOUT, fails the comm.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/base/connect.h"
#include "transport/ib/ib_internal.h"
#include "util/log.h"
#include "util/time.h"

/* ------------------------------------------------------------------ both ends */

bool stt_ib_fo_link_lost(const stt_ib_conn_t *conn, const struct ibv_wc *wc)
{
    if (!stt_ib_conn_vnic(conn))
        return false;
    switch (wc->status) {
    case IBV_WC_RETRY_EXC_ERR:       /* the peer port stopped answering */
    case IBV_WC_RNR_RETRY_EXC_ERR:
    case IBV_WC_WR_FLUSH_ERR:        /* its QP went to the error state */
    case IBV_WC_FATAL_ERR:
    case IBV_WC_RESP_TIMEOUT_ERR:
    case IBV_WC_GENERAL_ERR:
    case IBV_WC_LOC_QP_OP_ERR:       /* Soft-RoCE: no route left to the peer's address */
        return true;
    default:
        return false;                /* a protection or access error: a bug, not a link */
    }
}

int stt_ib_fo_member_of(const stt_ib_conn_t *conn, uint64_t wr_id)
{
    int q = (int)((wr_id >> 8) & 0xff);
    int kind = (int)(wr_id & 0xff);

    if (kind == STT_IB_WR_FLUSH)
        return conn->flush_qp.member;
    return q < conn->nqps ? conn->qps[q].member : -1;
}

static uint32_t fo_qps_of(const stt_ib_conn_t *conn, uint32_t members)
{
    uint32_t mask = 0;

    for (int q = 0; q < conn->nqps; q++)
        if (members & (1u << conn->qps[q].member))
            mask |= 1u << q;
    return mask;
}

/* Moves a QP to the error state: its work requests flush, nothing more lands through it. */
static void fo_qp_stop(const stt_ib_conn_t *conn, stt_ib_qp_t *q)
{
    struct ibv_qp_attr attr;

    if (q->qp == NULL)
        return;
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_ERR;
    int rc = stt_ib_verbs.modify_qp(q->qp, &attr, IBV_QP_STATE);
    if (rc != 0)
        STU_INFO(STU_LOG_NET, "ib: %s: QP 0x%x to the error state: %s", conn->head.peer,
                 q->qp->qp_num, strerror(rc));
}

/*
 * Marks members lost: logged once each, their QPs stopped. False when no
 * member is left (the comm failed).
 */
static bool fo_mark(stt_ib_conn_t *conn, uint32_t members, const char *why)
{
    uint32_t lost = fo_qps_of(conn, members);
    char names[128] = "";

    for (int j = 0; j < conn->nmembers; j++) {
        if (!(members & (1u << j)))
            continue;
        size_t used = strlen(names);
        snprintf(names + used, sizeof(names) - used, "%s%d (%s:%d)", used ? ", " : "", j,
                 conn->m[j].ctx->name, conn->m[j].dev->port);
    }
    conn->dead |= (uint8_t)members;
    conn->live &= (uint8_t)~lost;
    stt_ib_count_error(conn, members, conn->live != 0);
    if (conn->live == 0) {
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "every member of virtual NIC %s is lost"
                      " (the last: member %s, %s)", conn->dev->props.name, names, why);
        return false;
    }
    STU_WARN("ib: %s comm with %s: virtual NIC %s member %s of %d lost (%s); moving its traffic"
             " to the other member(s)", stt_conn_kind(&conn->head), conn->head.peer,
             conn->dev->props.name, names, conn->nmembers, why);
    for (int q = 0; q < conn->nqps; q++)
        if (lost & (1u << q))
            fo_qp_stop(conn, &conn->qps[q]);
    if (conn->flush_qp.qp != NULL && (members & (1u << conn->flush_qp.member)))
        fo_qp_stop(conn, &conn->flush_qp);
    conn->head.base.failovers++;
    return true;
}

static void fo_queue(stt_ib_conn_t *conn, const stt_ib_fo_frame_t *f)
{
    if (conn->fo_nout == STT_IB_FO_QUEUE) {
        stt_conn_fail(&conn->head, STRATA_ERR_INTERNAL, "%d failover frames wait for the side"
                      " channel", STT_IB_FO_QUEUE);
        return;
    }
    stt_ib_fo_encode(f, conn->fo_out[conn->fo_nout++]);
}

/* Sends what the queue holds, as far as the socket takes it now. */
static void fo_flush(stt_ib_conn_t *conn)
{
    while (conn->fo_nout > 0 && conn->head.failed == STRATA_OK) {
        ssize_t n = send(conn->fd, conn->fo_out[0] + conn->fo_out_done,
                         STT_IB_FO_BYTES - conn->fo_out_done, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (n <= 0) {
            stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "sending a failover frame on the side"
                          " channel: %s", n < 0 ? strerror(errno) : "closed");
            return;
        }
        conn->fo_out_done += (uint32_t)n;
        if (conn->fo_out_done < STT_IB_FO_BYTES)
            return;
        conn->fo_out_done = 0;
        conn->fo_nout--;
        memmove(conn->fo_out[0], conn->fo_out[1], (size_t)conn->fo_nout * STT_IB_FO_BYTES);
    }
}

/*
 * Reads one whole frame from the side channel if one is there; true then. An
 * end of stream marks eof_ns (the comm's usual watch judges it).
 */
static bool fo_read(stt_ib_conn_t *conn, stt_ib_fo_frame_t *f)
{
    const char *why = NULL;
    ssize_t n = recv(conn->fd, conn->fo_in + conn->fo_in_done, STT_IB_FO_BYTES - conn->fo_in_done,
                     MSG_DONTWAIT);

    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        if (conn->eof_ns == 0) {
            STU_INFO(STU_LOG_NET, "ib: side channel to %s %s", conn->head.peer,
                     n == 0 ? "closed by the peer" : strerror(errno));
            conn->eof_ns = stu_time_ns();
        }
        return false;
    }
    if (n < 0)
        return false;
    conn->fo_in_done += (uint32_t)n;
    if (conn->fo_in_done < STT_IB_FO_BYTES)
        return false;
    conn->fo_in_done = 0;
    if (stt_ib_fo_decode(conn->fo_in, conn->nmembers, f, &why) != STRATA_OK) {
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "bad failover frame on the side channel:"
                      " %s", why);
        return false;
    }
    return true;
}

/*
 * The last members are lost: tell the peer before failing (its comm fails at
 * once instead of at its own timeout). Best effort: the socket may not take it.
 */
static void fo_tell_last(stt_ib_conn_t *conn, uint32_t members)
{
    stt_ib_fo_frame_t f = {.type = conn->head.send ? STT_IB_FO_DOWN : STT_IB_FO_POS,
                           .epoch = (uint8_t)(conn->epoch + 1 < STT_IB_IMM_EPOCHS ?
                                              conn->epoch + 1 : conn->epoch),
                           .dead = (uint8_t)(conn->dead | members)};
    fo_queue(conn, &f);
    fo_flush(conn);
}

/*
 * Members reported lost by either side: those not lost already are marked (the peer told
 * first when they are the last). False when there is nothing to move: none new, the comm
 * already failed, or no member is left.
 */
static bool fo_lose(stt_ib_conn_t *conn, uint32_t members, const char *why)
{
    members &= ~(uint32_t)conn->dead;
    if (members == 0 || conn->head.failed != STRATA_OK)
        return false;
    if ((conn->live & ~fo_qps_of(conn, members)) == 0)
        fo_tell_last(conn, members);
    return fo_mark(conn, members, why);
}

/*
 * The verdicts of the async thread and of the devices: members to lose now, and why
 * (*why: the first reason found, for the log).
 */
static uint32_t fo_found(stt_ib_conn_t *conn, const char **why)
{
    uint32_t lost = (uint32_t)__atomic_exchange_n(&conn->async_lost, 0, __ATOMIC_ACQ_REL);

    *why = "an async event on one of its QPs or its CQ";
    for (int j = 0; j < conn->nmembers; j++) {
        stt_ib_member_t *m = &conn->m[j];
        if (lost & (1u << j))
            continue;
        if (__atomic_load_n(&m->ctx->fatal, __ATOMIC_ACQUIRE) != m->dev_fatal) {
            lost |= 1u << j;
            *why = "a fatal error of its device";
        } else if (stt_ib_port_downs(m->ctx, m->dev->port) != m->port_downs &&
                   !(conn->dead & (1u << j))) {
            lost |= 1u << j;
            conn->port_lost |= (uint8_t)(1u << j);
            *why = "its port went down: async event 'port error'";
        }
    }
    return lost & ~(uint32_t)conn->dead;
}

/* Whether to read the side channel now: while waiting, else at most every 10 ms. */
static bool fo_due(stt_ib_conn_t *conn)
{
    uint64_t now = stu_time_ns();

    if (!conn->fo_wait && now - conn->fo_check_ns < STT_IB_EOF_CHECK_NS)
        return false;
    conn->fo_check_ns = now;
    return conn->eof_ns == 0;
}

/* What a poll does with a loss found here and with a frame read: each end's own. */
typedef struct fo_side {
    void (*lost)(stt_ib_conn_t *conn, uint32_t members, const char *why);
    void (*frame)(stt_ib_conn_t *conn, const stt_ib_fo_frame_t *f);
    int expect;                  /* the frame type the peer sends */
} fo_side_t;

/*
 * Both ends' poll: the losses the async thread and the devices found, the
 * frames to send, then (when due) the frames the peer sent.
 */
static void fo_poll(stt_ib_conn_t *conn, const fo_side_t *side)
{
    stt_ib_fo_frame_t f;
    const char *why;
    uint32_t lost = fo_found(conn, &why);

    if (lost != 0)
        side->lost(conn, lost, why);
    fo_flush(conn);
    if (!fo_due(conn))
        return;
    while (conn->head.failed == STRATA_OK && fo_read(conn, &f)) {
        if (f.type != side->expect) {
            stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "a failover frame of type %u from the"
                          " %s", f.type, conn->head.send ? "receiver" : "sender");
            return;
        }
        side->frame(conn, &f);
    }
}

/* ------------------------------------------------------------------ receiver */

void stt_ib_fo_recv_lost(stt_ib_recv_t *rc, uint32_t members, const char *why)
{
    stt_ib_conn_t *conn = &rc->conn;
    uint32_t open = 0;

    if (!fo_lose(conn, members, why))
        return;
    if (conn->epoch + 1 >= STT_IB_IMM_EPOCHS) {
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "more than %d failovers",
                      STT_IB_IMM_EPOCHS - 1);
        return;
    }
    conn->epoch++;
    int cts_was = rc->cts_qp;
    rc->cts_qp = __builtin_ctz(conn->live);
    /*
     * Every open receive starts again in the new epoch; when the CTS QP was lost,
     * the CTS of each is written again on the new one, oldest first (the old
     * one's writes may not have landed).
     */
    for (uint32_t s = rc->seq - STT_IB_FIFO_DEPTH; s != rc->seq; s++) {
        stt_ib_rreq_t *req = &rc->reqs[s % STT_IB_FIFO_DEPTH];
        if (req->slot.state != STT_SLOT_ACTIVE || rc->cts[s % STT_IB_FIFO_DEPTH].e[0].seq != s + 1)
            continue;
        req->epoch = conn->epoch;
        req->cqes_want = 0;
        req->cqes_got = 0;
        req->qps_imm = 0;
        req->imm = 0;
        open |= 1u << (s % STT_IB_FIFO_DEPTH);
        if (rc->cts_qp == cts_was)
            continue;
        int err = stt_ib_recv_cts_post(rc, s % STT_IB_FIFO_DEPTH, req->slot.n, s);
        if (err != 0) {
            stt_conn_fail(&conn->head, STRATA_ERR_IO, "writing the clear-to-send of receive %u"
                          " again on QP 0x%x: %s", s, conn->qps[rc->cts_qp].qp->qp_num,
                          strerror(err));
            return;
        }
    }
    stt_ib_fo_frame_t pos = {.type = STT_IB_FO_POS, .epoch = conn->epoch, .dead = conn->dead,
                             .next = rc->seq, .open = open};
    fo_queue(conn, &pos);
    fo_flush(conn);
    STU_INFO(STU_LOG_NET, "ib: receive comm with %s: epoch %u, %d receive(s) open (0x%08x)",
             conn->head.peer, conn->epoch, __builtin_popcount(open), open);
}

static void fo_recv_lost_cb(stt_ib_conn_t *conn, uint32_t members, const char *why)
{
    stt_ib_fo_recv_lost((stt_ib_recv_t *)conn, members, why);
}

/* A DOWN: members this end lost already were answered by its own POS. */
static void fo_recv_down(stt_ib_conn_t *conn, const stt_ib_fo_frame_t *f)
{
    stt_ib_fo_recv_lost((stt_ib_recv_t *)conn, f->dead, "the sender saw it fail");
}

void stt_ib_fo_recv_poll(stt_ib_recv_t *rc)
{
    static const fo_side_t side = {.lost = fo_recv_lost_cb, .frame = fo_recv_down,
                                   .expect = STT_IB_FO_DOWN};
    fo_poll(&rc->conn, &side);
}

/* ------------------------------------------------------------------ sender */

void stt_ib_fo_send_lost(stt_ib_send_t *sc, uint32_t members, const char *why)
{
    stt_ib_conn_t *conn = &sc->conn;

    if (!fo_lose(conn, members, why))
        return;
    stt_ib_fo_frame_t down = {.type = STT_IB_FO_DOWN, .dead = conn->dead};
    fo_queue(conn, &down);
    fo_flush(conn);
    if (!conn->fo_wait)
        conn->fo_since_ns = stu_time_ns();
    conn->fo_wait = true;
    sc->replaying = false;           /* a POS of the new epoch restarts it */
}

/* Posts one work request of the replay on QP q (signalled: the send's count, or a REPLAY). */
static bool fo_post(stt_ib_send_t *sc, int q, enum ibv_wr_opcode op, uint64_t raddr,
                    uint32_t rkey, uint64_t laddr, uint32_t len, uint32_t lkey, int kind, int req,
                    uint32_t imm)
{
    stt_ib_conn_t *conn = &sc->conn;
    stt_ib_qp_t *qp = &conn->qps[q];
    struct ibv_sge sge = {.addr = laddr, .length = len, .lkey = lkey};
    struct ibv_send_wr wr, *bad = NULL;

    memset(&wr, 0, sizeof(wr));
    wr.opcode = op;
    wr.sg_list = len > 0 ? &sge : NULL;
    wr.num_sge = len > 0 ? 1 : 0;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    wr.imm_data = imm;
    wr.send_flags = IBV_SEND_SIGNALED;
    qp->sq_posted++;
    wr.wr_id = stt_ib_wr_id(kind, q, req, qp->sq_posted);
    int rc = ibv_post_send(qp->qp, &wr, &bad);
    if (rc != 0)
        stt_conn_fail(&conn->head, STRATA_ERR_IO, "ibv_post_send of a replay on QP 0x%x: %s",
                      qp->qp->qp_num, strerror(rc));
    return rc == 0;
}

/* The live QPs in order: index i of a stripe plan over nlive QPs is QP map[i]. */
static int fo_live_map(const stt_ib_conn_t *conn, int *map)
{
    int n = 0;

    for (int q = 0; q < conn->nqps; q++)
        if (conn->live & (1u << q))
            map[n++] = q;
    return n;
}

/* Replays send req (buffer i of receive seq) on the live QPs: its whole payload again. */
static bool fo_replay_send(stt_ib_send_t *sc, stt_ib_sreq_t *req,
                           const volatile stt_ib_fifo_slot_t *fs)
{
    stt_ib_conn_t *conn = &sc->conn;
    int map[STT_IB_MAX_QPS], nlive = fo_live_map(conn, map), i = req->buf;
    uint64_t bytes = req->slot.status == STRATA_ERR_TRUNCATED ? 0 : req->size;
    stt_ib_stripe_t plan;

    stt_ib_stripe_plan(bytes, nlive, sc->split_min, sc->rr++, &plan);
    stt_ib_count_plan(conn, req, map, nlive, &plan);      /* the replay replaces the first plan */
    for (int k = 0; k < nlive; k++) {
        if (plan.len[k] == 0)
            continue;
        int q = map[k], mem = conn->qps[q].member;
        if (!fo_post(sc, q, IBV_WR_RDMA_WRITE, fs->e[i].addr + plan.off[k], fs->xkeys[i][mem],
                     (uint64_t)(uintptr_t)req->data + plan.off[k], (uint32_t)plan.len[k],
                     req->lkey[mem], STT_IB_WR_SEND, req->slot.index, 0))
            return false;
        if (req->wr_cookie != NULL)
            stt_ib_wrev_start(conn, req->wr_cookie, &req->wr_ev[q], q,
                              stt_ib_wr_id(STT_IB_WR_SEND, q, req->slot.index,
                                           conn->qps[q].sq_posted),
                              IBV_WR_RDMA_WRITE, plan.len[k]);
        req->cqes_left++;
    }
    req->fo_hold = false;
    return true;
}

/* Replays receive seq (slot s) if it is open; false when a QP lacks room (try again later). */
static bool fo_replay_recv(stt_ib_send_t *sc, uint32_t seq)
{
    stt_ib_conn_t *conn = &sc->conn;
    uint32_t s = seq % STT_IB_FIFO_DEPTH;
    bool open = stt_ib_fo_is_open(sc->replay_next, sc->replay_open, seq);
    bool ended = seq != sc->recv_seq;               /* its last buffer was matched */

    for (int q = 0; q < conn->nqps; q++)
        if ((conn->live & (1u << q)) && stt_ib_qp_room(&conn->qps[q]) < STT_IB_FO_WR_PER_RECV)
            return false;
    for (int i = 0; i < STT_IB_SEND_RING && conn->head.failed == STRATA_OK; i++) {
        stt_ib_sreq_t *req = &sc->reqs[i];
        if (req->slot.state != STT_SLOT_ACTIVE || req->recv_seq != seq || !open)
            continue;                               /* not open: it landed (fo_send_pos) */
        if (!fo_replay_send(sc, req, &sc->fifo[s]))
            return true;
        if (req->cqes_left == 0 && !req->fo_hold)
            req->slot.state = STT_SLOT_DONE;
    }
    if (!open || conn->head.failed != STRATA_OK)
        return true;
    if (!ended) {
        sc->slot_qps = conn->live;                  /* its immediate will go on every live QP */
        return true;
    }
    /* The sizes (if it used them) and an immediate on every live QP, in the new epoch. */
    int q0 = __builtin_ctz(conn->live);
    stt_ib_member_t *m0 = stt_ib_conn_member(conn, q0);
    uint64_t sizes_raddr = conn->remote_addr + (uint64_t)s * STT_MAX_RECVS * sizeof(uint32_t);
    int n = sc->fifo[s].e[0].n;
    if (sc->hist_sizes[s] &&
        !fo_post(sc, q0, IBV_WR_RDMA_WRITE, sizes_raddr, m0->remote_rkey,
                 (uint64_t)(uintptr_t)&sc->sizes_src[s * STT_MAX_RECVS],
                 (uint32_t)(n * (int)sizeof(uint32_t)), m0->ctl_mr->lkey, STT_IB_WR_REPLAY, 0, 0))
        return true;
    stt_ib_imm_t imm = {.slot = s, .nqps = (uint32_t)__builtin_popcount(conn->live),
                        .trunc = sc->hist_trunc[s] != 0, .sizes = sc->hist_sizes[s] != 0,
                        .size = sc->hist_bytes[s], .vnic = true, .epoch = conn->epoch};
    uint32_t imm_be = htonl(stt_ib_imm_encode(&imm));
    for (int q = 0; q < conn->nqps && conn->head.failed == STRATA_OK; q++)
        if (conn->live & (1u << q))
            fo_post(sc, q, IBV_WR_RDMA_WRITE_WITH_IMM, sizes_raddr,
                    stt_ib_conn_member(conn, q)->remote_rkey, 0, 0, 0, STT_IB_WR_REPLAY, 0,
                    imm_be);
    return true;
}

/* A POS: adopt the epoch and the receiver's losses, then replay what it has open. */
static void fo_send_pos(stt_ib_conn_t *conn, const stt_ib_fo_frame_t *f)
{
    stt_ib_send_t *sc = (stt_ib_send_t *)conn;
    uint32_t more = f->dead & ~(uint32_t)conn->dead;

    if (f->epoch <= conn->epoch) {
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "a failover position of epoch %u after"
                      " epoch %u", f->epoch, conn->epoch);
        return;
    }
    if (more != 0 && !fo_mark(conn, more, "the receiver saw it fail"))
        return;
    conn->epoch = f->epoch;
    conn->agreed = conn->dead;
    conn->fo_wait = false;
    /* A held send whose receive is not open landed: it completes (open ones are replayed). */
    for (int i = 0; i < STT_IB_SEND_RING; i++) {
        stt_ib_sreq_t *req = &sc->reqs[i];
        if (req->slot.state != STT_SLOT_ACTIVE || !req->fo_hold ||
            stt_ib_fo_is_open(f->next, f->open, req->recv_seq))
            continue;
        req->fo_hold = false;
        if (req->cqes_left == 0)
            req->slot.state = STT_SLOT_DONE;
    }
    sc->replaying = true;
    sc->replay_next = f->next;
    sc->replay_open = f->open;
    sc->replay_end = sc->recv_seq;
    sc->replay_seq = sc->recv_seq - (STT_IB_FIFO_DEPTH - 1);
    STU_INFO(STU_LOG_NET, "ib: send comm with %s: epoch %u, replaying %d open receive(s)",
             conn->head.peer, conn->epoch, __builtin_popcount(f->open));
}

static void fo_send_lost_cb(stt_ib_conn_t *conn, uint32_t members, const char *why)
{
    stt_ib_fo_send_lost((stt_ib_send_t *)conn, members, why);
}

void stt_ib_fo_send_poll(stt_ib_send_t *sc)
{
    static const fo_side_t side = {.lost = fo_send_lost_cb, .frame = fo_send_pos,
                                   .expect = STT_IB_FO_POS};
    stt_ib_conn_t *conn = &sc->conn;

    fo_poll(conn, &side);
    if (conn->fo_wait && conn->head.failed == STRATA_OK &&
        stu_time_ns() - conn->fo_since_ns > stt_connect_timeout_ns())
        stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "the receiver did not answer the loss of a"
                      " virtual NIC member within %llu ms",
                      (unsigned long long)(stt_connect_timeout_ns() / 1000000));
    while (sc->replaying && conn->head.failed == STRATA_OK) {
        uint32_t seq = sc->replay_seq;
        /* Receives of the window the sender matched something into, oldest first. */
        if (sc->hist_seq[seq % STT_IB_FIFO_DEPTH] == seq && !fo_replay_recv(sc, seq))
            return;                              /* a QP is full: go on at the next call */
        if (seq == sc->replay_end)
            sc->replaying = false;
        sc->replay_seq++;
    }
}
