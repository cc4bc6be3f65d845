/*
 * Failover of a virtual device's connection: when the sockets of one member
 * fail (a reset, a timeout), their traffic moves to the other members without
 * loss or duplication (docs/tcp-protocol.md, "Failover"). This file holds what
 * both ends share; tcp_fo_send.c and tcp_fo_recv.c each end's part.
 *
 * Terms: the lost sockets are every socket of the failed member; the lead is the
 * socket that carries headers and frames (the lowest alive, socket 0 at first);
 * B (fo.end) is the send queue position from which messages are laid out on the
 * surviving sockets only (alive): messages before B keep their layout and their
 * lost parts are replayed.
 *
 * A member other than the lead's:
 *   1. Either end sees a socket fail. The receiver sends SUSPECT(lost) back on
 *      the lead; the sender, on its own error or that frame, stops writing on
 *      the lost sockets and sets B to its queue's tail.
 *   2. The sender writes the messages before B on the lead, then DOWN(lost, the
 *      next sequence number), and holds the lead's later messages.
 *   3. The receiver, at DOWN, takes from each lost socket what its kernel holds
 *      (everything those bytes belong to is matched: their headers came before
 *      DOWN), closes it, and answers POS(socket, stream bytes it holds).
 *   4. The sender answers each POS with REPLAY(socket, n) and the n bytes of that
 *      socket's stream from the receiver's position to B, read from the user's
 *      buffers, on the lead; then closes the lost sockets and releases the lead.
 *
 * The lead's member: the receiver shuts the member's sockets down (their kernels
 * take no more bytes) and sends LEAD(lead, bytes of its stream held) on its
 * lowest live socket; the sender resets them on its own finding, then at LEAD
 * sets B to the first message whose header the receiver does not hold whole
 * (other sockets start a message only once its header is acknowledged, so they
 * carried nothing from B on), lays the messages from B out again with headers on
 * the new lead, which writes its parts of the messages before B, then DOWN; the
 * receiver reads DOWN there once the old lead's stream is in, and steps 3 and 4
 * follow on the new lead, the old lead's part of message B-1 replayed too.
 *
 * Why the sender still holds those bytes: on a virtual device a send completes
 * only when the peer's kernel acknowledged every socket's part of it (SIOCOUTQ),
 * and the receiver's position counts everything its kernel acknowledged (read
 * plus SIOCINQ, taken after DOWN, which the sender wrote after it stopped
 * completing messages, or after the shutdown that froze the lost lead's stream).
 * A position behind the oldest byte held cannot happen unless a kernel dropped
 * acknowledged bytes; the comm then fails, naming both.
 *
 * A second member failing while one fails over, the last member, and every
 * socket of a plain device fail the comm as before.
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
const char *stt_tcp_fo_refusal(const stt_tcp_conn_t *conn, uint8_t lost)
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

void stt_tcp_fo_fail(stt_tcp_conn_t *conn, int j, const char *what, int err, const char *why)
{
    stt_tcp_conn_fail_sock(conn, j, what, err);
    if (why != NULL && stt_tcp_fused(conn))
        STU_INFO(STU_LOG_NET, "tcp: no failover for socket %d: %s", j, why);
}

void stt_tcp_fo_begin_log(stt_tcp_conn_t *conn, uint8_t lost, const char *cause)
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

void stt_tcp_fo_done_log(stt_tcp_conn_t *conn, uint64_t replayed)
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
ssize_t stt_tcp_fo_out_send(stt_tcp_conn_t *conn, const void *buf, size_t len)
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
bool stt_tcp_fo_out_flush(stt_tcp_conn_t *conn)
{
    stt_tcp_fo_t *fo = &conn->fo;

    while (fo->out_off < fo->out_len && conn->head.failed == STRATA_OK) {
        ssize_t r = stt_tcp_fo_out_send(conn, fo->out + fo->out_off, fo->out_len - fo->out_off);
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

/* Appends a frame of len bytes to fo.out (written by stt_tcp_fo_out_flush). */
void stt_tcp_fo_out_add(stt_tcp_conn_t *conn, const uint8_t *frame, uint32_t len)
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

stt_tcp_fo_verdict_t stt_tcp_fo_judge(const stt_tcp_conn_t *conn, int j, const char *what, int err,
                             uint8_t *lost_p, const char **why_p, char *cause, size_t len)
{
    uint8_t lost = stt_tcp_member_socks(conn, j);

    *lost_p = lost;
    if (conn->fo.state != STT_TCP_FO_NONE && (lost & ~conn->fo.lost) == 0)
        return STT_TCP_FO_UNDER_WAY;
    *why_p = stt_tcp_fo_refusal(conn, lost);
    if (*why_p != NULL)
        return STT_TCP_FO_REFUSED;
    snprintf(cause, len, "%s on socket %d: %s", what, j,
             err == 0 ? "closed by the peer" : strerror(err));
    return STT_TCP_FO_BEGIN;
}
