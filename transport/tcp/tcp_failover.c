/*
 * Failover of a virtual device's connection: when the sockets of one member
 * fail (a reset, a timeout, EOF), their traffic moves to the other members
 * without loss or duplication (docs/tcp-protocol.md, "Failover").
 *
 * Terms: the lost sockets are every socket of the failed member; B (fo.end) is
 * the send queue position at which the sender started the failover: messages
 * before B keep their layout (their lost parts are replayed), messages from B
 * on are laid out on the surviving sockets only (alive).
 *
 *   1. Either end sees a socket fail. The receiver sends SUSPECT(lost) back on
 *      socket 0; the sender, on its own error or that frame, stops writing on
 *      the lost sockets and sets B to its queue's tail.
 *   2. The sender writes the messages before B on socket 0, then DOWN(lost, the
 *      next sequence number), and holds socket 0's later messages.
 *   3. The receiver, at DOWN, takes from each lost socket what its kernel holds
 *      (everything those bytes belong to is matched: their headers came before
 *      DOWN), closes it, and answers POS(socket, stream bytes it holds).
 *   4. The sender answers each POS with REPLAY(socket, n) and the n bytes of that
 *      socket's stream from the receiver's position to B, read from the user's
 *      buffers, on socket 0; then closes the lost sockets and releases socket 0.
 *
 * Why the sender still holds those bytes: on a virtual device a send completes
 * only when the peer's kernel acknowledged every socket's part of it (SIOCOUTQ),
 * and the receiver's position counts everything its kernel acknowledged (read
 * plus SIOCINQ, taken after DOWN, which the sender wrote after it stopped
 * completing messages). A position behind the oldest byte held cannot happen
 * unless a kernel dropped acknowledged bytes; the comm then fails, naming both.
 *
 * Socket 0's member cannot fail over (its stream carries the headers and the
 * frames above); nor can a second member while one is failing over. Those, and
 * every socket of a plain device, fail the comm as before.
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

uint8_t stt_tcp_member_socks(const stt_tcp_conn_t *conn, int j)
{
    uint8_t mask = 0;

    for (int i = 0; i < conn->nsocks; i++)
        if (i % conn->nmembers == j % conn->nmembers)
            mask |= (uint8_t)(1u << i);
    return mask;
}

/* "1,3" */
static void fo_mask_text(uint8_t mask, char *buf, size_t len)
{
    size_t at = 0;

    buf[0] = '\0';
    for (int j = 0; j < STT_TCP_MAX_SOCKS && at < len; j++)
        if (mask & (1u << j))
            at += (size_t)snprintf(buf + at, len - at, at ? ",%d" : "%d", j);
}

/* Why losing `lost` cannot be survived, or NULL. */
static const char *fo_refusal(const stt_tcp_conn_t *conn, uint8_t lost)
{
    if (!stt_tcp_fused(conn))
        return NULL;     /* unreachable: callers check */
    if (conn->fo.state != STT_TCP_FO_NONE && (lost & ~conn->fo.lost) != 0)
        return "another member is failing over";
    if ((lost & ~conn->alive) != 0 && conn->fo.state == STT_TCP_FO_NONE)
        return "it failed over before";
    if ((conn->alive & ~lost) == 0)
        return "it is the last member";
    return NULL;
}

static void fo_fail(stt_tcp_conn_t *conn, int j, const char *what, int err, const char *why)
{
    stt_tcp_conn_fail_sock(conn, j, what, err);
    if (why != NULL && stt_tcp_fused(conn))
        STU_INFO(STU_LOG_NET, "tcp: no failover for socket %d: %s", j, why);
}

static void fo_begin_log(stt_tcp_conn_t *conn, uint8_t lost, const char *cause)
{
    char socks[32];

    fo_mask_text(lost, socks, sizeof(socks));
    stt_member_stats_t *member = stt_tcp_member_count(conn, __builtin_ctz(lost));
    stt_member_add(&member->errors, 1);
    __atomic_store_n(&member->lost, 1, __ATOMIC_RELAXED);
    STU_WARN("tcp: %s comm with %s: virtual NIC member %d of %d lost (socket(s) %s of %d: %s);"
             " moving its traffic to the other member(s)", stt_conn_kind(&conn->head),
             conn->head.peer, __builtin_ctz(lost) % conn->nmembers, conn->nmembers, socks,
             conn->nsocks, cause);
}

static void fo_done_log(stt_tcp_conn_t *conn, uint64_t replayed)
{
    conn->head.base.failovers++;
    STU_INFO(STU_LOG_NET, "tcp: %s comm with %s: failover done in %.1f ms, %" PRIu64
             " bytes replayed; %d of %d sockets left", stt_conn_kind(&conn->head),
             conn->head.peer, (double)(stu_time_ns() - conn->fo.started_ns) / 1e6, replayed,
             __builtin_popcount(conn->alive), conn->nsocks);
}

/* The socket frames are written on: the sender's lead; the receiver's lowest socket
 * that is neither lost nor being given up (its lead, except while the lead fails over). */
static int fo_out_sock(const stt_tcp_conn_t *conn)
{
    uint8_t live = conn->alive & (uint8_t)~(conn->fo.state != STT_TCP_FO_NONE ? conn->fo.lost : 0);

    if (conn->head.send || live == 0)
        return conn->lead;
    return __builtin_ctz(live);
}

/* One non-blocking send of len bytes on the frame socket: the bytes sent, 0 when the kernel
 * would block, -1 when the socket failed (the comm failed with it). EINTR retries. */
static ssize_t fo_sock0_send(stt_tcp_conn_t *conn, const void *buf, size_t len)
{
    int j = fo_out_sock(conn);

    for (;;) {
        ssize_t r = send(conn->socks[j].fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r > 0)
            return r;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        stt_tcp_conn_fail_sock(conn, j, "send", r < 0 ? errno : EPIPE);
        return -1;
    }
}

/* Writes fo.out on socket 0; true once all of it is out. */
static bool fo_out_flush(stt_tcp_conn_t *conn)
{
    stt_tcp_fo_t *fo = &conn->fo;

    while (fo->out_off < fo->out_len && conn->head.failed == STRATA_OK) {
        ssize_t r = fo_sock0_send(conn, fo->out + fo->out_off, fo->out_len - fo->out_off);
        if (r <= 0)
            return false;
        fo->out_off += (uint32_t)r;
        if (conn->head.send)
            conn->socks[conn->lead].bytes += (uint64_t)r;
    }
    if (fo->out_off == fo->out_len)
        fo->out_off = fo->out_len = 0;
    return fo->out_len == 0;
}

/* Appends a frame of len bytes to fo.out (written by fo_out_flush). */
static void fo_out_add(stt_tcp_conn_t *conn, const uint8_t *frame, uint32_t len)
{
    stt_tcp_fo_t *fo = &conn->fo;

    if (fo->out_off > 0) {
        memmove(fo->out, fo->out + fo->out_off, fo->out_len - fo->out_off);
        fo->out_len -= fo->out_off;
        fo->out_off = 0;
    }
    /* at most one SUSPECT and a POS per lost socket are ever owed at once */
    memcpy(fo->out + fo->out_len, frame, len);
    fo->out_len += len;
}

/* ------------------------------------------------------------------ the sender */

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

    fo_begin_log(&sc->conn, lost, cause);
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

    fo_begin_log(&sc->conn, lost, cause);
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

/* What losing socket j (what failed, err; 0: the peer closed it) starts, for either end. */
typedef enum fo_verdict {
    FO_UNDER_WAY = 0,   /* its member is failing over already */
    FO_REFUSED,         /* failover cannot take it: *why_p says why */
    FO_BEGIN,           /* a new failover of *lost_p; cause holds the log's reason */
} fo_verdict_t;

static fo_verdict_t fo_judge(const stt_tcp_conn_t *conn, int j, const char *what, int err,
                             uint8_t *lost_p, const char **why_p, char *cause, size_t len)
{
    uint8_t lost = stt_tcp_member_socks(conn, j);

    *lost_p = lost;
    if (conn->fo.state != STT_TCP_FO_NONE && (lost & ~conn->fo.lost) == 0)
        return FO_UNDER_WAY;
    *why_p = fo_refusal(conn, lost);
    if (*why_p != NULL)
        return FO_REFUSED;
    snprintf(cause, len, "%s on socket %d: %s", what, j,
             err == 0 ? "closed by the peer" : strerror(err));
    return FO_BEGIN;
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
    switch (fo_judge(conn, j, what, err, &lost, &why, cause, sizeof(cause))) {
    case FO_UNDER_WAY:
        return true;
    case FO_REFUSED:
        fo_fail(conn, j, what, err, why);
        return false;
    case FO_BEGIN:
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
            if ((why = fo_refusal(&sc->conn, lost)) != NULL) {
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
        why = fo_refusal(&sc->conn, lost);
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
    fo_out_add(&sc->conn, frame, sizeof(frame));
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
        ssize_t r = fo_sock0_send(&sc->conn, fo_sreq(sc, fo->rmsg)->data + poff + fo->roff,
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
    fo_done_log(&sc->conn, replayed);
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
        fo_out_add(&sc->conn, frame, sizeof(frame));
        fo->state = STT_TCP_FO_POS;
        fo->rleft = 0;
    }
    if (fo->state == STT_TCP_FO_POS && fo_out_flush(&sc->conn) && fo->have == fo->lost)
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
        if (!fo_out_flush(&sc->conn) || !fo_replay_push(sc))
            return;
        fo->rsock = -1;
        if (fo->have == 0)
            fo_send_finish(sc, fo->replayed);
    }
}

/* ------------------------------------------------------------------ the receiver */

/*
 * The lead's member is lost. Its sockets are shut down, so their kernels take no more
 * bytes (a peer's segment after that is answered with a reset, never acknowledged):
 * what they hold now is final, and the sender completes nothing the receiver lacks.
 * LEAD tells the sender how much of the lead's stream is held; the lead is read up to
 * there, and DOWN comes on the new lead (stt_tcp_recv_lead_down).
 */
static void fo_recv_lead_begin(stt_tcp_recv_t *rc, uint8_t lost, const char *cause)
{
    stt_tcp_conn_t *conn = &rc->conn;
    stt_tcp_fo_t *fo = &conn->fo;
    const int L = conn->lead;
    int inq = 0;

    fo_begin_log(conn, lost, cause);
    for (int j = 0; j < conn->nsocks; j++)
        if ((lost & (1u << j)) && conn->socks[j].fd >= 0)
            (void)shutdown(conn->socks[j].fd, SHUT_RDWR);
    if (ioctl(conn->socks[L].fd, SIOCINQ, &inq) != 0 || inq < 0)
        inq = 0;
    fo->state = STT_TCP_FO_LEAD;
    fo->lost = lost;
    fo->have = 0;
    fo->rsock = -1;
    fo->old_lead = (int8_t)L;
    fo->pos[L] = conn->socks[L].bytes + (uint64_t)inq;
    fo->started_ns = stu_time_ns();
    memset(fo->in_have, 0, sizeof(fo->in_have));
    uint8_t frame[STT_TCP_RFRAME_BYTES];
    stt_tcp_rframe_t f = {.type = STT_TCP_RFRAME_LEAD, .arg = (uint8_t)L, .pos = fo->pos[L]};
    stt_tcp_rframe_encode(&f, frame);
    fo_out_add(conn, frame, sizeof(frame));
    fo_out_flush(conn);
}

uint64_t stt_tcp_recv_lead_cap(const stt_tcp_recv_t *rc)
{
    const stt_tcp_fo_t *fo = &rc->conn.fo;

    if (fo->state != STT_TCP_FO_LEAD || rc->conn.lead != fo->old_lead)
        return UINT64_MAX;
    return fo->pos[fo->old_lead] - rc->conn.socks[fo->old_lead].bytes;
}

bool stt_tcp_recv_sock_lost(stt_tcp_recv_t *rc, int j, const char *what, int err)
{
    stt_tcp_conn_t *conn = &rc->conn;
    const char *why = NULL;
    char cause[96];
    uint8_t lost;

    switch (fo_judge(conn, j, what, err, &lost, &why, cause, sizeof(cause))) {
    case FO_UNDER_WAY:
        return true;
    case FO_REFUSED:
        if (err == 0)
            stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "peer closed socket %d of %d"
                          " (process exited or closed the comm)", j, conn->nsocks);
        else
            fo_fail(conn, j, what, err, why);
        return false;
    case FO_BEGIN:
        break;
    }
    if (lost & (1u << conn->lead)) {
        if (err == 0) {          /* a sender that loses the lead resets it; EOF is a close */
            stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "peer closed socket %d of %d"
                          " (process exited or closed the comm)", j, conn->nsocks);
            return false;
        }
        fo_recv_lead_begin(rc, lost, cause);
        return conn->head.failed == STRATA_OK;
    }
    fo_begin_log(conn, lost, cause);
    conn->fo.state = STT_TCP_FO_SUSPECT;
    conn->fo.lost = lost;
    conn->fo.started_ns = stu_time_ns();
    uint8_t frame[STT_TCP_RFRAME_BYTES];
    stt_tcp_rframe_t f = {.type = STT_TCP_RFRAME_SUSPECT, .arg = lost};
    stt_tcp_rframe_encode(&f, frame);
    fo_out_add(conn, frame, sizeof(frame));
    fo_out_flush(conn);
    return true;
}

void stt_tcp_recv_fo_flush(stt_tcp_recv_t *rc)
{
    fo_out_flush(&rc->conn);
}

/* Takes everything lost socket s's kernel holds, up to limit, into matched messages. */
static bool fo_recv_take(stt_tcp_recv_t *rc, int s, uint64_t limit)
{
    stt_tcp_cursor_t *cur = &rc->conn.socks[s];

    while (cur->bytes < limit) {
        size_t want;
        char *dst = stt_tcp_cursor_dest(rc, cur, s, &want);
        if (dst == NULL) {
            stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "lost socket %d holds %" PRIu64
                          " bytes beyond its messages", s, limit - cur->bytes);
            return false;
        }
        if (want > limit - cur->bytes)
            want = (size_t)(limit - cur->bytes);
        ssize_t r = recv(cur->fd, dst, want, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "lost socket %d: its kernel held"
                          " %" PRIu64 " more bytes but recv gave %s", s, limit - cur->bytes,
                          r == 0 ? "EOF" : strerror(errno));
            return false;
        }
        cur->off += (uint64_t)r;
        cur->bytes += (uint64_t)r;
        stt_tcp_member_bytes(&rc->conn, s, (uint64_t)r);
    }
    return true;
}

/*
 * DOWN (checked by the callers): the sender gives up the sockets of lost from the next
 * message on. Every message before it is matched: each lost socket's kernel bytes go
 * where they belong and POS reports the position (the lost lead's was reported by LEAD),
 * and the lead moves to the lowest surviving socket.
 */
static bool fo_recv_down_apply(stt_tcp_recv_t *rc, uint8_t lost)
{
    stt_tcp_fo_t *fo = &rc->conn.fo;

    for (int s = 0; s < rc->conn.nsocks; s++) {
        if (!(lost & (1u << s)))
            continue;
        if (s == fo->old_lead) {
            close(rc->conn.socks[s].fd);
            rc->conn.socks[s].fd = -1;
            continue;
        }
        int inq = 0;
        if (ioctl(rc->conn.socks[s].fd, SIOCINQ, &inq) != 0 || inq < 0)
            inq = 0;
        uint64_t limit = rc->conn.socks[s].bytes + (uint64_t)inq;
        if (!fo_recv_take(rc, s, limit))
            return false;
        close(rc->conn.socks[s].fd);
        rc->conn.socks[s].fd = -1;
        uint8_t frame[STT_TCP_RFRAME_BYTES];
        stt_tcp_rframe_t f = {.type = STT_TCP_RFRAME_POS, .arg = (uint8_t)s, .pos = limit};
        stt_tcp_rframe_encode(&f, frame);
        fo_out_add(&rc->conn, frame, sizeof(frame));
    }
    rc->conn.alive &= (uint8_t)~lost;
    rc->conn.lead = (uint8_t)__builtin_ctz(rc->conn.alive);
    fo->state = STT_TCP_FO_REPLAY;
    fo->lost = lost;
    fo->have = 0;
    fo->rsock = -1;
    fo->end = rc->msg_tail;
    fo->replayed = 0;
    fo_out_flush(&rc->conn);
    return rc->conn.head.failed == STRATA_OK;
}

/* DOWN at a header position of the lead: a member other than the lead's. */
static bool fo_recv_down(stt_tcp_recv_t *rc, const stt_tcp_ctl_t *ctl)
{
    stt_tcp_fo_t *fo = &rc->conn.fo;
    uint8_t lost = ctl->arg;

    if (ctl->seq != rc->conn.seq || (lost & ~rc->conn.alive) != 0 ||
        (lost & (1u << rc->conn.lead)) ||
        (fo->state == STT_TCP_FO_SUSPECT && (fo->lost & ~lost) != 0) ||
        (fo->state != STT_TCP_FO_NONE && fo->state != STT_TCP_FO_SUSPECT)) {
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "DOWN frame out of place (sockets"
                      " 0x%x, sequence %" PRIu32 ", expected %" PRIu32 ", failover state %d)",
                      lost, ctl->seq, rc->conn.seq, fo->state);
        return false;
    }
    if (fo->state == STT_TCP_FO_NONE) {
        fo_begin_log(&rc->conn, lost, "the sender saw it fail");
        fo->started_ns = stu_time_ns();
    }
    return fo_recv_down_apply(rc, lost);
}

bool stt_tcp_recv_lead_down(stt_tcp_recv_t *rc)
{
    stt_tcp_fo_t *fo = &rc->conn.fo;
    const int L = fo->old_lead;
    const uint8_t live = rc->conn.alive & (uint8_t)~fo->lost;
    const int N = __builtin_ctz(live);
    const stt_tcp_cursor_t *lc = &rc->conn.socks[L];
    stt_tcp_cursor_t *nc = &rc->conn.socks[N];
    const char *why = NULL;
    stt_tcp_ctl_t ctl;

    /* DOWN follows the new lead's parts of every message whose header the old lead's
     * stream holds whole: wait until that stream is read to the reported position, no
     * whole header in it is left unmatched, and the new lead's cursor passed them all. */
    if (lc->bytes != fo->pos[L] || nc->msg != rc->msg_tail || nc->off != 0)
        return true;
    bool at_hdr = lc->msg == rc->msg_tail;
    if (at_hdr ? stt_tcp_recv_staged(rc) >= STT_TCP_HDR_BYTES : stt_tcp_recv_staged(rc) != 0)
        return true;
    while (fo->in_have[N] < STT_TCP_HDR_BYTES) {
        ssize_t r = recv(nc->fd, fo->in[N] + fo->in_have[N], STT_TCP_HDR_BYTES - fo->in_have[N],
                         MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (r <= 0) {
            stt_tcp_recv_sock_lost(rc, N, "recv", r == 0 ? 0 : errno);
            return false;
        }
        fo->in_have[N] += (uint32_t)r;
        nc->bytes += (uint64_t)r;
    }
    fo->in_have[N] = 0;
    if (stt_tcp_ctl_decode(fo->in[N], rc->conn.nsocks, &ctl, &why) != STRATA_OK ||
        ctl.kind != STT_TCP_DOWN_MAGIC || ctl.arg != fo->lost || ctl.seq != rc->conn.seq) {
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "lead failover: expected DOWN for"
                      " sockets 0x%x at sequence %" PRIu32 " on socket %d, got %s", fo->lost,
                      rc->conn.seq, N, why != NULL ? why : "another frame or other values");
        return false;
    }
    if (at_hdr) {
        /* a header the old lead carried only in part: the new lead sends it again */
        rc->stage_off = 0;
        rc->stage_len = 0;
    }
    return fo_recv_down_apply(rc, fo->lost);
}

/* REPLAY: the rest of lost socket ctl->arg's stream up to B follows on socket 0. */
static bool fo_recv_replay_start(stt_tcp_recv_t *rc, const stt_tcp_ctl_t *ctl)
{
    stt_tcp_fo_t *fo = &rc->conn.fo;
    int s = ctl->arg;
    const stt_tcp_cursor_t *cur = &rc->conn.socks[s];
    uint64_t owed = 0;

    if (fo->state == STT_TCP_FO_REPLAY && (fo->lost & (1u << s)) && !(fo->have & (1u << s))) {
        for (uint32_t pos = cur->msg; pos != fo->end; pos++) {
            uint64_t poff, plen;
            stt_tcp_recv_part(rc, &rc->msgs[pos % STT_TCP_MSGQ], s, &poff, &plen);
            owed += plen;
        }
        owed -= cur->off;
    }
    if (fo->state != STT_TCP_FO_REPLAY || !(fo->lost & (1u << s)) || (fo->have & (1u << s)) ||
        ctl->size != owed) {
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "REPLAY frame out of place (socket"
                      " %d, %" PRIu64 " bytes where %" PRIu64 " are owed, failover state %d)", s,
                      ctl->size, owed, fo->state);
        return false;
    }
    fo->rsock = (int8_t)s;
    fo->rleft = ctl->size;
    fo->replayed += ctl->size;
    return true;
}

bool stt_tcp_recv_ctl(stt_tcp_recv_t *rc)
{
    stt_tcp_ctl_t ctl;
    const char *why = NULL;

    if (stt_tcp_ctl_decode(rc->stage + rc->stage_off, rc->conn.nsocks, &ctl, &why) !=
            STRATA_OK || !stt_tcp_fused(&rc->conn)) {
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "invalid failover frame: %s",
                      why != NULL ? why : "on a connection that is not a virtual device's");
        return false;
    }
    rc->stage_off += STT_TCP_HDR_BYTES;
    return ctl.kind == STT_TCP_DOWN_MAGIC ? fo_recv_down(rc, &ctl)
                                          : fo_recv_replay_start(rc, &ctl);
}

/* One lost socket's replay is in: the failover is over once every one is. */
static void fo_recv_replayed(stt_tcp_recv_t *rc)
{
    stt_tcp_fo_t *fo = &rc->conn.fo;

    fo->have |= (uint8_t)(1u << fo->rsock);
    fo->rsock = -1;
    if (fo->have != fo->lost)
        return;
    fo->state = STT_TCP_FO_NONE;
    fo->lost = 0;
    fo->old_lead = -1;
    fo_done_log(&rc->conn, fo->replayed);
}

bool stt_tcp_recv_replay(stt_tcp_recv_t *rc, bool *dry_p)
{
    stt_tcp_fo_t *fo = &rc->conn.fo;
    stt_tcp_cursor_t *cur = &rc->conn.socks[fo->rsock];

    while (fo->rleft > 0 && rc->conn.head.failed == STRATA_OK) {
        size_t want;
        char *dst = stt_tcp_cursor_dest(rc, cur, fo->rsock, &want);
        if (dst == NULL) {
            stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "replay of socket %d carries %"
                          PRIu64 " bytes beyond its messages", fo->rsock, fo->rleft);
            return false;
        }
        if (want > fo->rleft)
            want = (size_t)fo->rleft;
        uint32_t staged = stt_tcp_recv_staged(rc);
        size_t n;
        if (staged > 0) {
            n = want < staged ? want : staged;
            memcpy(dst, rc->stage + rc->stage_off, n);
            rc->stage_off += (uint32_t)n;
        } else {
            if (*dry_p)
                return false;
            ssize_t r = recv(rc->conn.socks[rc->conn.lead].fd, dst, want, MSG_DONTWAIT);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                *dry_p = true;
                return false;
            }
            if (r <= 0) {
                if (r == 0)
                    stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "peer closed socket 0"
                                  " in the middle of a replay");
                else
                    stt_tcp_conn_fail_sock(&rc->conn, rc->conn.lead, "recv", errno);
                return false;
            }
            n = (size_t)r;
            rc->conn.socks[rc->conn.lead].bytes += n;
            *dry_p = n < want;
        }
        cur->off += n;
        cur->bytes += n;
        stt_tcp_member_bytes(&rc->conn, rc->conn.lead, n);
        fo->rleft -= n;
    }
    if (rc->conn.head.failed != STRATA_OK)
        return false;
    fo_recv_replayed(rc);
    return true;
}
