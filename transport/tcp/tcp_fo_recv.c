/*
 * The receiver's side of a virtual device's failover (tcp_failover.c has the terms and the
 * exchange; docs/tcp-protocol.md, "Failover"): SUSPECT, LEAD, DOWN on the lead or the new
 * lead, POS, and the replayed bytes.
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

    stt_tcp_fo_begin_log(conn, lost, cause);
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
    stt_tcp_fo_out_add(conn, frame, sizeof(frame));
    stt_tcp_fo_out_flush(conn);
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

    switch (stt_tcp_fo_judge(conn, j, what, err, &lost, &why, cause, sizeof(cause))) {
    case STT_TCP_FO_UNDER_WAY:
        return true;
    case STT_TCP_FO_REFUSED:
        if (err == 0)
            stt_conn_fail(&conn->head, STRATA_ERR_REMOTE, "peer closed socket %d of %d"
                          " (process exited or closed the comm)", j, conn->nsocks);
        else
            stt_tcp_fo_fail(conn, j, what, err, why);
        return false;
    case STT_TCP_FO_BEGIN:
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
    stt_tcp_fo_begin_log(conn, lost, cause);
    conn->fo.state = STT_TCP_FO_SUSPECT;
    conn->fo.lost = lost;
    conn->fo.started_ns = stu_time_ns();
    uint8_t frame[STT_TCP_RFRAME_BYTES];
    stt_tcp_rframe_t f = {.type = STT_TCP_RFRAME_SUSPECT, .arg = lost};
    stt_tcp_rframe_encode(&f, frame);
    stt_tcp_fo_out_add(conn, frame, sizeof(frame));
    stt_tcp_fo_out_flush(conn);
    return true;
}

void stt_tcp_recv_fo_flush(stt_tcp_recv_t *rc)
{
    stt_tcp_fo_out_flush(&rc->conn);
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
        stt_tcp_fo_out_add(&rc->conn, frame, sizeof(frame));
    }
    rc->conn.alive &= (uint8_t)~lost;
    rc->conn.lead = (uint8_t)__builtin_ctz(rc->conn.alive);
    fo->state = STT_TCP_FO_REPLAY;
    fo->lost = lost;
    fo->have = 0;
    fo->rsock = -1;
    fo->end = rc->msg_tail;
    fo->replayed = 0;
    stt_tcp_fo_out_flush(&rc->conn);
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
        stt_tcp_fo_begin_log(&rc->conn, lost, "the sender saw it fail");
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
    stt_tcp_fo_done_log(&rc->conn, fo->replayed);
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
