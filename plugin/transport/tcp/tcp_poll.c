/*
 * poll_fds of the TCP transport: the sockets an idle caller may sleep on.
 *
 * The set is exact rather than "every socket, POLLIN", because a descriptor
 * that is ready while test() cannot use it makes the caller spin, which is
 * what poll_fds exists to avoid (2 cores, 4+ ranks). So:
 *
 *   receive comm: socket j asks for POLLIN when test() would read it: it still
 *     owes bytes of a matched message, or (socket 0) the next header is due and
 *     a receive with an unmatched buffer is posted. Bytes that arrive before a
 *     receive is posted wait in the kernel and do not wake the caller. After a
 *     clean EOF on socket 0 that socket is left out (it would stay readable).
 *   send comm: every socket asks for POLLIN, to see EOF or a reset, and POLLOUT
 *     while it has bytes of a queued message left to write. A receiver never
 *     writes to a send comm's sockets, so readable means the peer closed (or
 *     broke protocol): checked here with a non-blocking peek, which fails the
 *     comm so that test() reports it, instead of leaving a descriptor that
 *     stays readable forever.
 *
 * Sockets with nothing to wait for are still listed with events 0: poll()
 * reports POLLERR/POLLHUP on them whatever the events, so a reset wakes the
 * caller. A failed comm, or a caller's array too small for every socket,
 * gives 0 ("no descriptors": the caller naps and calls test(), which reports
 * the error or makes progress); a partial set could sleep through the one
 * socket that matters.
 *
 * Cost: nothing but loads for a receive comm; one recv(MSG_PEEK) per socket
 * for a send comm, paid only by a caller about to sleep in poll() anyway.
 */
#include <errno.h>
#include <string.h>

#include "plugin/transport/tcp/tcp_internal.h"
#include "util/log.h"

/* The peer of a send comm said something: EOF, a reset, or stray bytes. */
static void poll_send_peek(stt_tcp_send_t *sc)
{
    for (int j = 0; j < sc->conn.nsocks && sc->conn.failed == STRATA_OK; j++) {
        char b;
        ssize_t r = recv(sc->conn.socks[j].fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            continue;
        if (r == 0)
            stt_tcp_conn_fail(&sc->conn, STRATA_ERR_REMOTE, "peer closed socket %d of %d"
                              " (receiver closed its comm or exited)", j, sc->conn.nsocks);
        else if (r > 0)
            stt_tcp_conn_fail(&sc->conn, STRATA_ERR_REMOTE, "peer wrote to socket %d of %d,"
                              " which only carries data towards it", j, sc->conn.nsocks);
        else
            stt_tcp_conn_fail(&sc->conn, STRATA_ERR_REMOTE, "socket %d of %d: %s", j,
                              sc->conn.nsocks, strerror(errno));
    }
}

static int poll_send_fill(stt_tcp_send_t *sc, struct pollfd *fds)
{
    poll_send_peek(sc);
    if (sc->conn.failed != STRATA_OK)
        return 0;
    for (int j = 0; j < sc->conn.nsocks; j++) {
        const stt_tcp_cursor_t *cur = &sc->conn.socks[j];
        fds[j] = (struct pollfd){.fd = cur->fd, .events = POLLIN};
        if (cur->msg != sc->tail)
            fds[j].events |= POLLOUT;
    }
    return sc->conn.nsocks;
}

static int poll_recv_fill(const stt_tcp_recv_t *rc, struct pollfd *fds)
{
    /* post_head..post_tail are the receives with unmatched buffers: one needs a header. */
    bool want_hdr = rc->post_head != rc->post_tail && rc->hdr_have < STT_TCP_HDR_BYTES &&
                    !rc->eof0;

    for (int j = 0; j < rc->conn.nsocks; j++) {
        const stt_tcp_cursor_t *cur = &rc->conn.socks[j];
        bool owes = cur->msg != rc->msg_tail;
        fds[j] = (struct pollfd){.fd = cur->fd, .events = 0};
        if (owes || (j == 0 && want_hdr))
            fds[j].events = POLLIN;
    }
    return rc->conn.nsocks;
}

int stt_tcp_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max)
{
    stt_tcp_conn_t *conn = (stt_tcp_conn_t *)comm;

    if (conn == NULL || conn->base.ops != &stt_tcp_ops || fds == NULL)
        return 0;
    if (conn->failed != STRATA_OK || max < conn->nsocks)
        return 0;
    if (conn->kind == STT_TCP_KIND_SEND)
        return poll_send_fill((stt_tcp_send_t *)conn, fds);
    return poll_recv_fill((const stt_tcp_recv_t *)conn, fds);
}
