/*
 * The sender's side of a virtual device's failover (tcp_failover.c has the terms and the
 * exchange; docs/tcp-protocol.md, "Failover"): finding a lost member, the LEAD plan, DOWN,
 * and the replay of what the receiver lacks from the user's buffers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "transport/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/time.h"

#define FO_SEG_MAX (1ull << 30)    /* one send of replayed bytes, as tcp_send.c's */

static stt_tcp_sreq_t *fo_sreq(stt_tcp_send_t *sc, uint32_t pos)
{
    return &sc->reqs[sc->queue[pos % STT_TCP_RING]];
}

static uint64_t fo_spart(stt_tcp_send_t *sc, uint32_t pos, int j, uint64_t *off_p)
{
    const stt_tcp_sreq_t *req = fo_sreq(sc, pos);
    uint64_t off, len;

    stt_tcp_part_locate(req->size, req->flags, req->rot, req->mask, j, &off, &len);
    if (off_p != NULL)
        *off_p = off;
    return len;
}

static void fo_send_begin(stt_tcp_send_t *sc, uint8_t lost, const char *cause)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;

    stt_tcp_fo_begin_log(&sc->conn, lost, cause);
    fo->state = STT_TCP_FO_DOWN;
    fo->lost = lost;
    fo->have = 0;
    fo->end = sc->tail;
    fo->rsock = -1;
    fo->replayed = 0;
    fo->started_ns = stu_time_ns();
    sc->conn.alive &= (uint8_t)~lost;
}

/* Bytes of socket j the peer's kernel acknowledged; false when the kernel will not say. */
static bool fo_acked_read(stt_tcp_send_t *sc, int j)
{
    int outq = 0;

    if (sc->conn.socks[j].fd < 0 || ioctl(sc->conn.socks[j].fd, SIOCOUTQ, &outq) != 0 ||
        outq < 0)
        return false;
    sc->acked[j] = sc->conn.socks[j].bytes - (uint64_t)outq;
    return true;
}

bool stt_tcp_send_acked_read(stt_tcp_send_t *sc, int j)
{
    return fo_acked_read(sc, j);
}

/* Closes socket j with a reset, so that the peer sees an error rather than an orderly close
 * (which a receiver takes for the end of the comm). */
static void fo_abort(stt_tcp_conn_t *conn, int j)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};

    if (conn->socks[j].fd < 0)
        return;
    (void)setsockopt(conn->socks[j].fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(conn->socks[j].fd);
    conn->socks[j].fd = -1;
}

/*
 * The lead socket's member is lost: no headers can be written until the receiver says
 * how much of the lead's stream it holds (LEAD). Its sockets are reset, so a receiver
 * whose path still works learns of it at once; otherwise its keepalive does.
 */
static void fo_send_lead_begin(stt_tcp_send_t *sc, uint8_t lost, const char *cause)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;
    const int L = sc->conn.lead;

    stt_tcp_fo_begin_log(&sc->conn, lost, cause);
    fo_acked_read(sc, L);
    fo->state = STT_TCP_FO_LEAD;
    fo->lost = lost;
    fo->have = 0;
    fo->rsock = -1;
    fo->old_lead = (int8_t)L;
    fo->replayed = 0;
    fo->started_ns = stu_time_ns();
    sc->conn.alive &= (uint8_t)~lost;
    sc->conn.lead = (uint8_t)__builtin_ctz(sc->conn.alive);
    for (int j = 0; j < sc->conn.nsocks; j++)
        if (lost & (1u << j))
            fo_abort(&sc->conn, j);
}

bool stt_tcp_send_hdr_acked(stt_tcp_send_t *sc, const stt_tcp_sreq_t *req)
{
    if (req->hstart == STT_TCP_UNSENT)
        return false;
    uint64_t need = req->hstart + STT_TCP_HDR_BYTES;
    if (sc->acked[req->lead] >= need)
        return true;
    if (!(sc->conn.alive & (1u << req->lead)) || !fo_acked_read(sc, req->lead))
        return false;
    return sc->acked[req->lead] >= need;
}

/*
 * The receiver closed its last member's sockets (EOF, not a reset: it read everything it
 * wanted) while messages wait for their acknowledgement: a receiver that got the last message
 * and closed at once. Its kernel acknowledged what it received before (or with) its FIN, but
 * the acknowledgements of the other sockets may still be on their way: the messages then
 * complete as they show up, and the comm fails STT_TCP_EOF_GRACE_NS after the EOF if some
 * never do (stt_tcp_send_eof_check). True while that wait holds.
 */
static bool fo_send_eof_wait(stt_tcp_send_t *sc)
{
    stt_tcp_send_retire(sc);
    if (sc->head == sc->tail)
        return false;
    if (sc->eof_ns == 0)
        sc->eof_ns = stu_time_ns();
    return stu_time_ns() - sc->eof_ns < STT_TCP_EOF_GRACE_NS;
}

void stt_tcp_send_eof_check(stt_tcp_send_t *sc)
{
    if (sc->head != sc->tail && stu_time_ns() - sc->eof_ns < STT_TCP_EOF_GRACE_NS)
        return;
    stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "peer closed the connection%s",
                  sc->head != sc->tail ? " with messages it did not acknowledge" : "");
}

bool stt_tcp_send_sock_lost(stt_tcp_send_t *sc, int j, const char *what, int err)
{
    stt_tcp_conn_t *conn = &sc->conn;
    const char *why = NULL;
    char cause[96];
    uint8_t lost;

    if (!stt_tcp_fused(conn)) {
        stt_tcp_conn_fail_sock(conn, j, what, err);
        return false;
    }
    switch (stt_tcp_fo_judge(conn, j, what, err, &lost, &why, cause, sizeof(cause))) {
    case STT_TCP_FO_UNDER_WAY:
        return true;
    case STT_TCP_FO_REFUSED:
        if (err == 0 && fo_send_eof_wait(sc))
            return true;
        stt_tcp_fo_fail(conn, j, what, err, why);
        return false;
    case STT_TCP_FO_BEGIN:
        break;
    }
    if (lost & (1u << conn->lead))
        fo_send_lead_begin(sc, lost, cause);
    else
        fo_send_begin(sc, lost, cause);
    return true;
}

bool stt_tcp_send_acked(stt_tcp_send_t *sc, uint32_t pos)
{
    const stt_tcp_sreq_t *req = fo_sreq(sc, pos);

    for (int j = 0; j < sc->conn.nsocks; j++) {
        if (!(sc->conn.alive & (1u << j)) || sc->acked[j] >= req->end[j])
            continue;
        if (!fo_acked_read(sc, j) || sc->acked[j] < req->end[j])
            return false;
    }
    return true;
}

void stt_tcp_send_watch(stt_tcp_send_t *sc)
{
    uint64_t now = stu_time_ns();

    if (now - sc->watch_ns < STT_TCP_WATCH_NS)
        return;
    sc->watch_ns = now;
    for (int j = 0; j < sc->conn.nsocks && sc->conn.head.failed == STRATA_OK; j++) {
        int err = 0;
        socklen_t len = sizeof(err);
        struct tcp_info ti;
        socklen_t tlen = sizeof(ti);
        if (!(sc->conn.alive & (1u << j)) || !fo_acked_read(sc, j) ||
            sc->acked[j] == sc->conn.socks[j].bytes)
            continue;                    /* lost, or nothing owed */
        if (getsockopt(sc->conn.socks[j].fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
            err != 0) {
            stt_tcp_send_sock_lost(sc, j, "send", err);
            continue;
        }
        /* Bytes owed and no acknowledgement at all (a peer that only closed its window
         * still answers the probes) for the user timeout: the path is gone. */
        if (sc->user_timeout_ns != 0 &&
            getsockopt(sc->conn.socks[j].fd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) == 0 &&
            (uint64_t)ti.tcpi_last_ack_recv * 1000000ull >= sc->user_timeout_ns) {
            STU_INFO(STU_LOG_NET, "tcp: socket %d: %" PRIu64 " bytes owed, no acknowledgement"
                     " for %u ms", j, sc->conn.socks[j].bytes - sc->acked[j],
                     ti.tcpi_last_ack_recv);
            stt_tcp_send_sock_lost(sc, j, "send", ETIMEDOUT);
        }
    }
}

/*
 * LEAD: the receiver holds `held` bytes of the lost lead's stream. The messages whose
 * headers it holds whole (before x) keep their layout: the new lead moves its parts of
 * them as data, then DOWN, and the lost sockets' rest is replayed (POS, REPLAY). The
 * messages from x on never left the lead (the other sockets wait for acknowledged
 * headers), so they are laid out again on the surviving sockets, headers on the new lead.
 */
static void fo_lead_plan(stt_tcp_send_t *sc, uint64_t held)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;
    const int L = fo->old_lead;
    const stt_tcp_cursor_t *lc = &sc->conn.socks[L];
    uint32_t x = sc->head;

    if (held > lc->bytes || held < sc->acked[L]) {
        stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "lead failover: the receiver holds %"
                      PRIu64 " bytes of socket %d's stream, but %" PRIu64 " were written and %"
                      PRIu64 " acknowledged", held, L, lc->bytes, sc->acked[L]);
        return;
    }
    for (; x != sc->tail; x++) {
        const stt_tcp_sreq_t *req = fo_sreq(sc, x);
        if (req->lead != L || req->hstart == STT_TCP_UNSENT ||
            req->hstart + STT_TCP_HDR_BYTES > held)
            break;
    }
    for (int j = 0; j < sc->conn.nsocks; j++)
        if ((sc->conn.alive & (1u << j)) && sc->conn.socks[j].msg - sc->head > x - sc->head) {
            stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "lead failover: socket %d moved"
                          " message %" PRIu32 ", whose header the receiver does not hold", j,
                          sc->conn.seq - (sc->tail - sc->conn.socks[j].msg));
            return;
        }
    /* The lead's payload the receiver never got comes off its member's count (what the
     * replay carries counts on the new lead). */
    for (uint32_t pos = sc->head; pos != sc->tail; pos++) {
        const stt_tcp_sreq_t *req = fo_sreq(sc, pos);
        if (req->lead != L || req->hstart == STT_TCP_UNSENT || pos - sc->head > lc->msg - sc->head)
            break;
        uint64_t start = req->hstart + STT_TCP_HDR_BYTES;
        uint64_t stop = pos == lc->msg ? req->hstart + lc->off : start + fo_spart(sc, pos, L, NULL);
        uint64_t from = start > held ? start : held;
        if (stop > from)
            stt_tcp_member_bytes(&sc->conn, L, from - stop);
    }
    sc->acked[L] = held;
    for (uint32_t pos = x; pos != sc->tail; pos++) {
        stt_tcp_sreq_t *req = fo_sreq(sc, pos);
        stt_tcp_send_layout(sc, req, sc->conn.seq - (sc->tail - pos), stt_tcp_hdr_tag(req->hdr));
    }
    fo->end = x;
    fo->pos[L] = held;
    fo->have = (uint8_t)(1u << L);
    fo->lead_data = sc->conn.socks[sc->conn.lead].msg != x;
    fo->state = STT_TCP_FO_DOWN;
}

/* A receiver frame (in buf). */
static void fo_send_frame(stt_tcp_send_t *sc, const uint8_t *buf)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;
    stt_tcp_rframe_t f;
    const char *why = NULL;

    if (stt_tcp_rframe_decode(buf, sc->conn.nsocks, &f, &why) != STRATA_OK) {
        stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "failover frame: %s", why);
        return;
    }
    if (f.type == STT_TCP_RFRAME_LEAD) {
        if (fo->state == STT_TCP_FO_NONE && f.arg == sc->conn.lead) {
            uint8_t lost = stt_tcp_member_socks(&sc->conn, f.arg);
            if ((why = stt_tcp_fo_refusal(&sc->conn, lost)) != NULL) {
                stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "the receiver lost the lead"
                              " socket %d and %s", f.arg, why);
                return;
            }
            fo_send_lead_begin(sc, lost, "the receiver saw it fail");
        }
        if (fo->state != STT_TCP_FO_LEAD || f.arg != fo->old_lead) {
            stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "LEAD frame for socket %d out of"
                          " place (failover state %d, lead %d)", f.arg, fo->state,
                          sc->conn.lead);
            return;
        }
        fo_lead_plan(sc, f.pos);
        return;
    }
    if (f.type == STT_TCP_RFRAME_SUSPECT) {
        uint8_t lost = 0;
        for (int j = 0; j < sc->conn.nsocks; j++)
            if (f.arg & (1u << j))
                lost |= stt_tcp_member_socks(&sc->conn, j);
        if (fo->state != STT_TCP_FO_NONE && (lost & ~fo->lost) == 0)
            return;
        why = stt_tcp_fo_refusal(&sc->conn, lost);
        if (why == NULL && (lost & (1u << sc->conn.lead)))
            why = "it is the lead's member (a receiver reports that with LEAD)";
        if (why != NULL) {
            stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "the receiver lost socket(s) of"
                          " mask 0x%x and %s", f.arg, why);
            return;
        }
        fo_send_begin(sc, lost, "the receiver saw it fail");
        return;
    }
    if (fo->state != STT_TCP_FO_POS || !(fo->lost & (1u << f.arg)) ||
        (fo->have & (1u << f.arg))) {
        stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "POS frame for socket %d out of"
                      " place (failover state %d)", f.arg, fo->state);
        return;
    }
    fo->pos[f.arg] = f.pos;
    fo->have |= (uint8_t)(1u << f.arg);
}

/* Reads what the receiver wrote on any live socket (it writes nothing but frames). */
static void fo_send_read(stt_tcp_send_t *sc)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;

    for (int j = 0; j < sc->conn.nsocks && sc->conn.head.failed == STRATA_OK; j++) {
        while ((sc->conn.alive & (1u << j)) && sc->conn.head.failed == STRATA_OK) {
            ssize_t r = recv(sc->conn.socks[j].fd, fo->in[j] + fo->in_have[j],
                             STT_TCP_RFRAME_BYTES - fo->in_have[j], MSG_DONTWAIT);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            if (r <= 0) {
                stt_tcp_send_sock_lost(sc, j, "recv", r == 0 ? 0 : errno);
                break;
            }
            fo->in_have[j] += (uint32_t)r;
            if (fo->in_have[j] == STT_TCP_RFRAME_BYTES) {
                fo->in_have[j] = 0;
                fo_send_frame(sc, fo->in[j]);
            }
        }
    }
}

/*
 * Sets up the replay of lost socket s from the receiver's position: the bytes
 * of s's parts of the messages before B that the receiver does not hold.
 */
static void fo_replay_frame(stt_tcp_send_t *sc, int s)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;
    uint8_t frame[STT_TCP_HDR_BYTES];
    stt_tcp_ctl_t ctl = {.kind = STT_TCP_REPLAY_MAGIC, .arg = (uint8_t)s, .size = fo->rleft};

    fo->rsock = (int8_t)s;
    stt_tcp_ctl_encode(&ctl, frame);
    stt_tcp_fo_out_add(&sc->conn, frame, sizeof(frame));
}

/* The lost lead's replay: the rest of its part of the last message whose header the
 * receiver holds (fo_lead_plan), from the receiver's position. */
static void fo_replay_plan_lead(stt_tcp_send_t *sc, int s)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;

    fo->rmsg = fo->end;
    fo->roff = 0;
    fo->rleft = 0;
    if (fo->end != sc->head) {
        uint32_t m = fo->end - 1;
        uint64_t plen = fo_spart(sc, m, s, NULL);
        uint64_t start = fo_sreq(sc, m)->hstart + STT_TCP_HDR_BYTES;
        uint64_t have = fo->pos[s] > start ? fo->pos[s] - start : 0;
        fo->rmsg = m;
        fo->roff = have < plen ? have : plen;
        fo->rleft = plen - fo->roff;
    }
    fo_replay_frame(sc, s);
}

static bool fo_replay_plan(stt_tcp_send_t *sc, int s)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;
    const stt_tcp_cursor_t *cur = &sc->conn.socks[s];
    uint64_t want = fo->pos[s], at;
    uint32_t pos = sc->head;

    if (s == fo->old_lead) {
        fo_replay_plan_lead(sc, s);
        return true;
    }

    /* stream offset where s's part of the oldest message held starts */
    if (cur->msg == sc->head)
        at = cur->bytes - cur->off;
    else
        at = fo_sreq(sc, sc->head)->end[s] - fo_spart(sc, sc->head, s, NULL);
    if (want < at) {
        stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "failover of socket %d: the receiver"
                      " holds %" PRIu64 " bytes of its stream but the oldest byte still held"
                      " here is %" PRIu64 " (acknowledged bytes were dropped)", s, want, at);
        return false;
    }
    for (; pos != fo->end; pos++) {
        uint64_t len = fo_spart(sc, pos, s, NULL);
        if (want < at + len)
            break;
        at += len;
    }
    if (pos == fo->end && want != at) {
        stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "failover of socket %d: the receiver"
                      " claims %" PRIu64 " bytes of its stream, only %" PRIu64 " were sent", s,
                      want, at);
        return false;
    }
    fo->rmsg = pos;
    fo->roff = want - at;
    fo->rleft = 0;
    for (uint32_t p = pos; p != fo->end; p++)
        fo->rleft += fo_spart(sc, p, s, NULL);
    fo->rleft -= fo->roff;
    fo_replay_frame(sc, s);
    return true;
}

/* Writes the planned replay's bytes on socket 0; true when all are out. */
static bool fo_replay_push(stt_tcp_send_t *sc)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;
    stt_tcp_cursor_t *lead = &sc->conn.socks[sc->conn.lead];

    while (fo->rleft > 0 && sc->conn.head.failed == STRATA_OK) {
        uint64_t poff, plen = fo_spart(sc, fo->rmsg, fo->rsock, &poff);
        if (fo->roff == plen) {
            fo->rmsg++;
            fo->roff = 0;
            continue;
        }
        uint64_t len = plen - fo->roff;
        len = len < fo->rleft ? len : fo->rleft;
        len = len < FO_SEG_MAX ? len : FO_SEG_MAX;
        ssize_t r = stt_tcp_fo_out_send(&sc->conn, fo_sreq(sc, fo->rmsg)->data + poff + fo->roff,
                                  (size_t)len);
        if (r <= 0)
            return false;
        fo->roff += (uint64_t)r;
        fo->rleft -= (uint64_t)r;
        lead->bytes += (uint64_t)r;
        stt_tcp_member_bytes(&sc->conn, sc->conn.lead, (uint64_t)r);
    }
    return fo->rleft == 0;
}

/* Every replay is out: the messages before B now wait for socket 0's acknowledgement. */
static void fo_send_finish(stt_tcp_send_t *sc, uint64_t replayed)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;
    const int L = sc->conn.lead;
    uint64_t e = sc->conn.socks[L].bytes;

    for (uint32_t pos = sc->head; pos != fo->end; pos++) {
        stt_tcp_sreq_t *req = fo_sreq(sc, pos);
        if (req->end[L] < e)
            req->end[L] = e;
    }
    for (int j = 0; j < sc->conn.nsocks; j++)
        if (fo->lost & (1u << j)) {
            /* what the socket wrote and the receiver never got was counted on its member
             * (the lost lead's: fo_lead_plan) */
            if (j != fo->old_lead)
                stt_tcp_member_bytes(&sc->conn, j, fo->pos[j] - sc->conn.socks[j].bytes);
            if (sc->conn.socks[j].fd >= 0)
                close(sc->conn.socks[j].fd);
            sc->conn.socks[j].fd = -1;
        }
    fo->state = STT_TCP_FO_NONE;
    fo->lost = 0;
    fo->rsock = -1;
    fo->old_lead = -1;
    fo->lead_data = false;
    stt_tcp_fo_done_log(&sc->conn, replayed);
}

void stt_tcp_send_fo_progress(stt_tcp_send_t *sc)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;

    fo_send_read(sc);
    if (fo->state == STT_TCP_FO_DOWN && !fo->lead_data &&
        sc->conn.socks[sc->conn.lead].msg == fo->end &&
        sc->conn.socks[sc->conn.lead].off == 0 && sc->conn.head.failed == STRATA_OK) {
        uint8_t frame[STT_TCP_HDR_BYTES];
        stt_tcp_ctl_t ctl = {.kind = STT_TCP_DOWN_MAGIC, .arg = fo->lost, .seq = sc->conn.seq -
                             (sc->tail - fo->end)};
        stt_tcp_ctl_encode(&ctl, frame);
        stt_tcp_fo_out_add(&sc->conn, frame, sizeof(frame));
        fo->state = STT_TCP_FO_POS;
        fo->rleft = 0;
    }
    if (fo->state == STT_TCP_FO_POS && stt_tcp_fo_out_flush(&sc->conn) && fo->have == fo->lost)
        fo->state = STT_TCP_FO_REPLAY;
    while (fo->state == STT_TCP_FO_REPLAY && sc->conn.head.failed == STRATA_OK) {
        if (fo->rsock < 0) {
            /* the next lost socket not replayed yet (have: sockets still owed) */
            int s = __builtin_ctz(fo->have);
            fo->have &= (uint8_t)~(1u << s);
            if (!fo_replay_plan(sc, s))
                return;
            fo->replayed += fo->rleft;
        }
        if (!stt_tcp_fo_out_flush(&sc->conn) || !fo_replay_push(sc))
            return;
        fo->rsock = -1;
        if (fo->have == 0)
            fo_send_finish(sc, fo->replayed);
    }
}
