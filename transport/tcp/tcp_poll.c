/*
 * poll_fds of the TCP transport: the sockets an idle caller may sleep on.
 *
 * A descriptor that is ready while test() cannot use it makes the caller spin,
 * which is what poll_fds exists to avoid (2 cores, 4+ ranks), so a socket is
 * left out when it is known that reading it cannot help:
 *
 *   receive comm: the lead socket (socket 0 until its member is lost) with POLLIN,
 *     unless the next header is already staged and waits for a receive to be posted,
 *     or the peer closed it (both would stay readable); another socket with POLLIN only
 *     while it owes bytes
 *     of a matched message (a piece of a message whose header is not matched
 *     yet waits in the kernel). So data arriving for a comm with nothing
 *     posted wakes the caller once at most: the next test() reads the header,
 *     and the comm is quiet until a receive is posted.
 *   send comm: every socket with POLLIN, to see EOF or a reset, and POLLOUT
 *     while it has bytes of a queued message left to write. A receiver never
 *     writes to a plain device's send comm, so readable means the peer closed (or
 *     broke protocol): checked here with a non-blocking peek, which fails the
 *     comm so that test() reports it, instead of leaving a descriptor that
 *     stays readable forever. On a virtual device the receiver writes failover
 *     frames on its lowest live socket, EOF or an error on a member's socket starts a
 *     failover, and messages waiting only for the peer's acknowledgement (no
 *     socket signals it) or a failover under way name no descriptor: test()
 *     moves them. Lost sockets are left out.
 *
 *   Socket 0 is read through a staging buffer (tcp_recv.c): bytes already
 *     staged are no longer in the kernel and would wake nobody. Every progress
 *     pass (test, and irecv when a header is staged) uses all the staged bytes
 *     it can; what stays is a partial header (the rest must come from the
 *     socket: POLLIN is right) or a whole header waiting for a receive.
 *
 * The set describes the comm as it is now; ask again before each sleep. 0
 * ("no descriptors": the caller naps and calls test(), which reports the error
 * or makes progress) for a failed comm, for a receive comm with nothing to read
 * until a receive is posted, for one with staged bytes test() can use at once,
 * and when the caller's array cannot hold the set: a partial set could sleep
 * through the one socket that matters.
 *
 * Cost: nothing but loads for a receive comm; one recv(MSG_PEEK) per socket
 * for a send comm, paid only by a caller about to sleep in poll() anyway.
 */
#include <string.h>

#include "transport/base/sock.h"
#include "transport/tcp/tcp_internal.h"

/* The peer of a send comm said something: EOF, a reset, or stray bytes. */
static bool poll_send_peek(stt_tcp_send_t *sc)
{
    bool news = false;

    for (int j = 0; j < sc->conn.nsocks && sc->conn.head.failed == STRATA_OK; j++) {
        int err;
        if (!(sc->conn.alive & (1u << j)))
            continue;                    /* lost: no longer watched */
        switch (stt_sock_peek(sc->conn.socks[j].fd, &err)) {
        case STT_SOCK_QUIET:
            break;
        case STT_SOCK_EOF:
            if (stt_tcp_fused(&sc->conn))
                stt_tcp_send_sock_lost(sc, j, "recv", 0);
            else
                stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "peer closed socket %d of %d"
                              " (receiver closed its comm or exited)", j, sc->conn.nsocks);
            break;
        case STT_SOCK_BYTES:
            /* a virtual device's receiver writes failover frames (on its lowest live socket) */
            if (stt_tcp_fused(&sc->conn))
                news = true;
            else
                stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "peer wrote to socket %d of %d,"
                              " which only carries data towards it", j, sc->conn.nsocks);
            break;
        case STT_SOCK_ERROR:
            stt_tcp_send_sock_lost(sc, j, "error", err);
            break;
        }
    }
    return news;
}

static int poll_send_fill(stt_tcp_send_t *sc, struct pollfd *fds)
{
    int n = 0;
    bool owes = false;

    /* A frame to read, a failover under way or, on a virtual device, messages that
     * wait only for the peer's acknowledgement (no socket signals that): test(). */
    if (poll_send_peek(sc) || sc->conn.head.failed != STRATA_OK ||
        sc->conn.fo.state != STT_TCP_FO_NONE)
        return 0;
    for (int j = 0; j < sc->conn.nsocks; j++) {
        const stt_tcp_cursor_t *cur = &sc->conn.socks[j];
        if (!(sc->conn.alive & (1u << j)))
            continue;
        fds[n] = (struct pollfd){.fd = cur->fd, .events = POLLIN};
        if (cur->msg != sc->tail) {
            fds[n].events |= POLLOUT;
            owes = true;
        }
        n++;
    }
    if (!owes && sc->head != sc->tail)
        return 0;
    return n;
}

static int poll_recv_fill(const stt_tcp_recv_t *rc, struct pollfd *fds, int max)
{
    /* Staged bytes that test() can use at once: no socket would wake the caller for
     * them, so name none (it naps and tests). A progress pass consumes everything
     * it can, so this is not expected after test() or irecv(); it is a safety net. */
    const int lead = rc->conn.lead;
    const bool lead_fo = rc->conn.fo.state == STT_TCP_FO_LEAD;
    if (stt_tcp_recv_header_ready(rc) ||
        (rc->conn.socks[lead].msg != rc->msg_tail && stt_tcp_recv_staged(rc) > 0))
        return 0;
    /* The lead is idle once its cursor is past every matched message and the next
     * header is either staged whole (it waits for a receive) or will never come, and
     * a lost lead once it was read to the position its receiver reported. */
    bool idle0 = (rc->conn.socks[lead].msg == rc->msg_tail &&
                  (stt_tcp_recv_staged(rc) >= STT_TCP_HDR_BYTES || rc->eof0)) ||
                 stt_tcp_recv_lead_cap(rc) == 0;
    /* a lead failover: the new lead brings DOWN once its parts are in */
    int next = lead_fo ? __builtin_ctz(rc->conn.alive & ~rc->conn.fo.lost) : -1;
    int n = 0;

    if (rc->conn.fo.out_len != 0)
        return 0;                        /* a failover frame to write: test() */
    for (int j = 0; j < rc->conn.nsocks; j++) {
        const stt_tcp_cursor_t *cur = &rc->conn.socks[j];
        bool quiet = (cur->msg == rc->msg_tail && j != next) ||
                     !((rc->conn.alive & ~rc->conn.fo.lost) & (1u << j));   /* lost */
        if (j == lead ? idle0 : quiet)
            continue;
        if (n == max)
            return 0;
        fds[n++] = (struct pollfd){.fd = cur->fd, .events = POLLIN};
    }
    return n;
}

int stt_tcp_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max)
{
    stt_tcp_conn_t *conn = (stt_tcp_conn_t *)comm;

    if (conn == NULL || conn->head.base.ops != &stt_tcp_ops || fds == NULL)
        return 0;
    if (conn->head.failed != STRATA_OK || max < 1)
        return 0;
    if (conn->head.send)
        return max < conn->nsocks ? 0 : poll_send_fill((stt_tcp_send_t *)conn, fds);
    return poll_recv_fill((const stt_tcp_recv_t *)conn, fds, max);
}
