/*
 * The send side of the TCP transport: isend, send progress and the test of a
 * send request.
 *
 * isend encodes the message header into a preallocated request and queues
 * it; a small message usually leaves before isend returns. Each socket walks
 * the send queue with its own cursor (message, bytes done) and writes its
 * part of each message: the lead socket (socket 0 until its member is lost) the
 * header plus either the whole payload or its piece, the others their piece of
 * striped messages or a rotated payload. The lead gathers
 * the parts of several queued messages into one sendmsg, so a small message
 * costs one system call (made by isend) and a burst of them one between
 * them. A call that takes fewer bytes than offered means the socket buffer is
 * full, so the pass stops there instead of collecting an EAGAIN; the next
 * test (or POLLOUT from poll_fds) carries on. A message is complete when
 * every cursor has passed it; since cursors only move forward, completion is
 * in posting order.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "transport/base/hostmr.h"
#include "transport/tcp/tcp_internal.h"
#include "util/le.h"
#include "util/log.h"

/* One iovec never asks the kernel for more than this (it caps a call near 2 GiB anyway). */
#define SEND_SEG_MAX (1ull << 30)

static stt_tcp_sreq_t *send_req_at(stt_tcp_send_t *sc, uint32_t pos)
{
    return &sc->reqs[sc->queue[pos % STT_TCP_RING]];
}

static void send_part(const stt_tcp_send_t *sc, const stt_tcp_sreq_t *req, int j,
                      uint64_t *off_p, uint64_t *len_p)
{
    (void)sc;
    stt_tcp_part_locate(req->size, req->flags, req->rot, req->mask, j, off_p, len_p);
}

/* Classifies a failed send call on socket j: true to call again at once (EINTR), false
 * to stop this socket for now (EAGAIN, a lost socket that failed over, a failed comm). */
static bool send_error_retry(stt_tcp_send_t *sc, int j, ssize_t r)
{
    if (r < 0 && errno == EINTR)
        return true;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return false;
    if (r < 0)
        stt_tcp_send_sock_lost(sc, j, "send", errno);
    else
        stt_conn_fail(&sc->conn.head, STRATA_ERR_REMOTE, "send on socket %d of %d: no progress",
                      j, sc->conn.nsocks);
    return false;
}

/* The socket a rotated message's payload takes: the rot-th of its mask. */
static int send_rot_sock(const stt_tcp_sreq_t *req)
{
    uint8_t m = req->mask;

    for (int i = 0; i < req->rot; i++)
        m &= (uint8_t)(m - 1u);
    return __builtin_ctz(m);
}

/* True when socket j has nothing to move before message pos: every byte it wrote was
 * acknowledged (as last read) and it has no part in the messages before pos still unwritten. */
static bool send_sock_idle(stt_tcp_send_t *sc, int j, uint32_t pos)
{
    const stt_tcp_cursor_t *cur = &sc->conn.socks[j];

    if (cur->bytes != sc->acked[j])
        return false;
    for (uint32_t p = cur->msg; p != pos; p++) {
        const stt_tcp_sreq_t *r = send_req_at(sc, p);
        uint64_t off, len;
        send_part(sc, r, j, &off, &len);
        if ((p == cur->msg ? cur->off : 0) < len)
            return false;
    }
    return true;
}

/*
 * Virtual devices, before message pos's header leaves (nothing of it was written, so its
 * layout may still change): a rotated message whose socket is idle would wait there a round
 * trip for the header's acknowledgement ("headers first"). When the lead is idle too (every
 * byte it wrote acknowledged, nothing queued before this message), the connection is idle:
 * the message goes whole on the lead, right behind its header, and leaves at once. While the
 * lead is busy the message keeps its socket, whose wait then overlaps the lead's backlog
 * (putting it on the lead then starves the other members: see docs/multirail.md, "Cost when
 * nothing fails"). Clearing ROTATED is all the receiver needs to know: an unrotated payload
 * follows its header on the lead. Called for the lead's next message when it starts it.
 */
static void send_rot_place(stt_tcp_send_t *sc, stt_tcp_sreq_t *req, uint32_t pos)
{
    const int L = sc->conn.lead;

    if (!(req->flags & STT_TCP_HDR_ROTATED))
        return;
    int j = send_rot_sock(req);
    if (j == L || !send_sock_idle(sc, j, pos))
        return;
    if (sc->conn.socks[L].bytes != sc->acked[L] &&
        (!stt_tcp_send_acked_read(sc, L) || sc->conn.socks[L].bytes != sc->acked[L]))
        return;
    req->flags &= ~STT_TCP_HDR_ROTATED;
    stu_le_put32(req->hdr + 4, req->flags);
}

/* The lead socket: headers and unstriped payloads (or its piece), gathered across
 * messages. */
static void send_lead_push(stt_tcp_send_t *sc)
{
    const int L = sc->conn.lead;
    stt_tcp_cursor_t *cur = &sc->conn.socks[L];

    while (cur->msg != sc->tail && stt_tcp_send_lead_open(sc, cur->msg) &&
           sc->conn.head.failed == STRATA_OK) {
        struct iovec iov[STT_TCP_SEND_IOV];
        int niov = 0;
        uint64_t skip = cur->off, asked = 0;

        for (uint32_t pos = cur->msg; pos != sc->tail && stt_tcp_send_lead_open(sc, pos) &&
                                      niov + 2 <= STT_TCP_SEND_IOV; pos++) {
            stt_tcp_sreq_t *req = send_req_at(sc, pos);
            uint64_t poff, plen;
            if (niov == 0 && skip == 0 && stt_tcp_fused(&sc->conn))
                send_rot_place(sc, req, pos);   /* the first of this write, not started */
            send_part(sc, req, L, &poff, &plen);
            if (skip < STT_TCP_HDR_BYTES) {
                iov[niov++] = (struct iovec){req->hdr + skip, STT_TCP_HDR_BYTES - skip};
                skip = 0;
            } else {
                skip -= STT_TCP_HDR_BYTES;
            }
            if (plen > skip) {
                uint64_t len = plen - skip;
                iov[niov++] = (struct iovec){req->data + poff + skip,
                                             len > SEND_SEG_MAX ? SEND_SEG_MAX : len};
                if (len > SEND_SEG_MAX)
                    break;
            }
            skip = 0;
        }
        for (int i = 0; i < niov; i++)
            asked += iov[i].iov_len;
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
        ssize_t r = sendmsg(cur->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r <= 0) {
            if (!send_error_retry(sc, L, r))
                return;
            continue;
        }
        /* Walk the cursor over what the kernel took. */
        uint64_t left = (uint64_t)r;
        cur->bytes += (uint64_t)r;
        while (left > 0) {
            stt_tcp_sreq_t *req = send_req_at(sc, cur->msg);
            uint64_t poff, plen;
            send_part(sc, req, L, &poff, &plen);
            uint64_t part = STT_TCP_HDR_BYTES + plen - cur->off;
            uint64_t took = left < part ? left : part;
            uint64_t from = cur->off > STT_TCP_HDR_BYTES ? cur->off : STT_TCP_HDR_BYTES;
            if (cur->off == 0)
                req->hstart = cur->bytes - left;
            if (cur->off + took > from)
                stt_tcp_member_bytes(&sc->conn, L, cur->off + took - from);   /* payload */
            if (left < part) {
                cur->off += left;
                break;
            }
            left -= part;
            req->end[L] = cur->bytes - left;
            cur->msg++;
            cur->off = 0;
        }
        if ((uint64_t)r < asked)
            return;          /* the socket buffer is full: the next call would be EAGAIN */
    }
}

/*
 * A socket other than the lead: its piece of each striped message or a rotated one,
 * from the user buffer. On a virtual device it starts on a message only once the
 * peer's kernel acknowledged the message's header (stt_tcp_send_hdr_acked), so a
 * receiver that loses the lead socket holds the header of everything the other
 * sockets carry (docs/tcp-protocol.md, "Failover").
 */
static void send_sockj_push(stt_tcp_send_t *sc, int j)
{
    stt_tcp_cursor_t *cur = &sc->conn.socks[j];
    const bool fused = stt_tcp_fused(&sc->conn);

    while (cur->msg != sc->tail && (sc->conn.alive & (1u << j)) &&
           sc->conn.head.failed == STRATA_OK) {
        stt_tcp_sreq_t *req = send_req_at(sc, cur->msg);
        uint64_t poff, plen;
        if (fused && cur->off == 0 && !stt_tcp_send_hdr_acked(sc, req))
            return;
        send_part(sc, req, j, &poff, &plen);
        if (cur->off == plen) {
            req->end[j] = cur->bytes;
            cur->msg++;
            cur->off = 0;
            continue;
        }
        uint64_t len = plen - cur->off;
        ssize_t r = send(cur->fd, req->data + poff + cur->off,
                         len > SEND_SEG_MAX ? SEND_SEG_MAX : len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r <= 0) {
            if (!send_error_retry(sc, j, r))
                return;
            continue;
        }
        cur->off += (uint64_t)r;
        cur->bytes += (uint64_t)r;
        stt_tcp_member_bytes(&sc->conn, j, (uint64_t)r);
        if ((uint64_t)r < (len > SEND_SEG_MAX ? SEND_SEG_MAX : len))
            return;          /* the socket buffer is full: the next call would be EAGAIN */
    }
}

/*
 * Completes, in order, every message all cursors have passed. On a virtual
 * device a message also waits until the peer's kernel acknowledged every
 * socket's part of it (a lost socket's unacknowledged bytes are replayed from
 * the user's buffer, which must still be held), and while a failover runs,
 * messages laid out on the lost sockets wait for their replay. Returns how
 * many completed.
 */
uint32_t stt_tcp_send_retire(stt_tcp_send_t *sc)
{
    uint32_t done = sc->tail - sc->head, n = 0;

    for (int j = 0; j < sc->conn.nsocks; j++) {
        uint32_t d = sc->conn.socks[j].msg - sc->head;
        if ((sc->conn.alive & (1u << j)) && d < done)
            done = d;
    }
    for (; done > 0; done--, n++) {
        if (stt_tcp_fused(&sc->conn) &&
            (sc->conn.fo.state == STT_TCP_FO_LEAD ||
             (sc->conn.fo.state != STT_TCP_FO_NONE && sc->head != sc->conn.fo.end) ||
             !stt_tcp_send_acked(sc, sc->head)))
            break;
        stt_tcp_sreq_t *req = send_req_at(sc, sc->head);
        req->slot.state = STT_SLOT_DONE;
        stt_tcp_member_msg(&sc->conn, req->size, req->flags, req->rot, req->mask);
        sc->head++;
    }
    return n;
}

/*
 * The lead socket's push: headers and its parts; while a lead failover is under way
 * (no lead yet, or the new lead still owes its data parts of the messages before the
 * failover's boundary) only data parts.
 */
static void send_lead_pass(stt_tcp_send_t *sc)
{
    stt_tcp_fo_t *fo = &sc->conn.fo;

    if (fo->state == STT_TCP_FO_LEAD || fo->lead_data) {
        send_sockj_push(sc, sc->conn.lead);
        if (fo->lead_data && sc->conn.socks[sc->conn.lead].msg == fo->end)
            fo->lead_data = false;
        if (fo->state == STT_TCP_FO_LEAD || fo->lead_data)
            return;
    }
    send_lead_push(sc);
}

void stt_tcp_send_layout(stt_tcp_send_t *sc, stt_tcp_sreq_t *req, uint32_t seq, int tag)
{
    stt_tcp_hdr_t hdr = {.flags = 0, .tag = tag, .seq = seq, .size = req->size};
    bool several = (sc->conn.alive & (sc->conn.alive - 1u)) != 0;

    if (several && req->size >= sc->stripe_min)
        hdr.flags |= STT_TCP_HDR_STRIPED;
    else if (several && stt_tcp_fused(&sc->conn) && req->size >= STT_TCP_ROTATE_MIN)
        hdr.flags |= STT_TCP_HDR_ROTATED;
    stt_tcp_hdr_encode(&hdr, req->hdr);
    req->mask = sc->conn.alive;
    req->rot = stt_tcp_rot(hdr.seq, req->mask);
    req->flags = hdr.flags;
    req->lead = sc->conn.lead;
    req->hstart = STT_TCP_UNSENT;
    memset(req->end, 0, sizeof(req->end));
}

strata_status_t stt_tcp_send_progress(stt_tcp_send_t *sc)
{
    if (sc->conn.head.failed != STRATA_OK)
        return sc->conn.head.failed;
    send_lead_pass(sc);
    for (int j = 0; j < sc->conn.nsocks; j++)
        if (j != sc->conn.lead)
            send_sockj_push(sc, j);
    uint32_t retired = stt_tcp_send_retire(sc);
    if (STU_UNLIKELY(sc->eof_ns != 0))
        stt_tcp_send_eof_check(sc);
    /* A virtual device's peer may have news (a lost socket) when a pass is stuck. */
    if (stt_tcp_fused(&sc->conn) && sc->conn.head.failed == STRATA_OK &&
        (sc->conn.fo.state != STT_TCP_FO_NONE || (retired == 0 && sc->head != sc->tail))) {
        if (retired == 0 && sc->head != sc->tail)
            stt_tcp_send_watch(sc);
        stt_tcp_send_fo_progress(sc);
        send_lead_pass(sc);
        stt_tcp_send_retire(sc);
    }
    return sc->conn.head.failed;
}

strata_status_t stt_tcp_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                              stt_req_t **req_p)
{
    stt_tcp_send_t *sc = (stt_tcp_send_t *)stt_conn_of(comm, &stt_tcp_ops, true, "isend");

    if (sc == NULL)
        return STRATA_ERR_INVALID;
    if (STU_UNLIKELY(sc->conn.head.failed != STRATA_OK))
        return sc->conn.head.failed;
    if (STU_UNLIKELY(stt_hostmr_isend_check(comm, sc->conn.head.peer, data, size,
                                            STT_TCP_MAX_MSG_BYTES, mh, req_p) != STRATA_OK))
        return STRATA_ERR_INVALID;
    stt_tcp_sreq_t *req = (stt_tcp_sreq_t *)stt_slots_take(&sc->slots, 1);
    if (req == NULL) {
        *req_p = NULL;
        return STRATA_OK;
    }
    req->size = size;
    req->data = data;
    stt_tcp_send_layout(sc, req, sc->conn.seq++, tag);
    sc->queue[sc->tail % STT_TCP_RING] = req->slot.index;
    sc->tail++;
    /* Try at once: a small message usually leaves before isend returns. */
    stt_tcp_send_progress(sc);
    *req_p = &req->slot.base;
    return STRATA_OK;
}

strata_status_t stt_tcp_send_test(stt_tcp_send_t *sc, stt_req_t *base, int *done, size_t *sizes)
{
    stt_tcp_sreq_t *req = (stt_tcp_sreq_t *)stt_slots_find(&sc->slots, base);

    if (req == NULL)
        return stt_slots_stale(&stt_tcp_ops, base);
    if (req->slot.state == STT_SLOT_ACTIVE)
        stt_tcp_send_progress(sc);
    if (req->slot.state == STT_SLOT_ACTIVE && sc->conn.head.failed == STRATA_OK) {
        *done = 0;
        return STRATA_OK;
    }
    bool ok = req->slot.state == STT_SLOT_DONE;
    stt_slots_give(&sc->slots, &req->slot);
    if (!ok)
        return sc->conn.head.failed;
    *done = 1;
    if (sizes != NULL)
        sizes[0] = req->size;
    return STRATA_OK;
}
