/*
 * The receive side of the TCP transport: irecv, iflush, receive progress and
 * the test of a receive request.
 *
 * irecv queues a receive of up to STT_MAX_RECVS buffers in posting order.
 * Socket 0 carries every message header. A complete header is validated and
 * matched to the oldest posted receive that has an unmatched buffer with the
 * message's tag (its first such buffer), which appends the message to the
 * message queue; with no such receive the header waits in the stage, and the
 * stream behind it, until one is posted. Each socket then walks that queue with its own cursor and
 * moves its part of each message into the matched buffer: socket 0 the payload
 * or piece 0, socket j > 0 piece j of striped messages, read straight into the
 * buffer. A socket j never reads a message before its header was matched, so
 * stray bytes wait in the kernel.
 *
 * Socket 0 is read through a staging buffer (STT_TCP_STAGE_BYTES): whenever a
 * header is due, and whenever the rest of a payload is below
 * STT_TCP_STAGE_EAGER, one recv fills the stage with whatever the kernel holds,
 * and headers and payloads are then taken from it by copying. A small message
 * thus costs one system call however its bytes arrive, and a burst of them
 * fewer than one each. Larger rests are read straight into the user buffer,
 * with the stage as the second iovec of the same readv to catch what follows.
 * At most one stage of bytes (possibly of messages not matched yet) is read
 * ahead; the rest waits in the kernel. Validation is the same whichever way a
 * header arrived: lengths come from the header and the stripe rule only.
 *
 * A read that returns fewer bytes than it asked for found the kernel's queue
 * empty: the pass does not read that socket again (the next call would return
 * EAGAIN). Bytes that arrive meanwhile keep the socket readable, so a caller
 * polling poll_fds does not miss them and the next test reads them.
 *
 * A message larger than its buffer is drained into a scratch buffer and fails
 * its receive with STRATA_ERR_TRUNCATED; the connection stays usable. A header
 * that does not validate, EOF or a socket error fail the comm.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "transport/base/hostmr.h"
#include "transport/tcp/tcp_internal.h"
#include "util/log.h"
#include "util/time.h"

#define RECV_SEG_MAX (1ull << 30)

typedef enum { READ_MORE, READ_BLOCKED, READ_FAILED } read_result_t;

static read_result_t recv_classify(stt_tcp_recv_t *rc, int j, ssize_t r)
{
    if (r < 0 && errno == EINTR)
        return READ_MORE;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return READ_BLOCKED;
    if (stt_tcp_fused(&rc->conn) && (j != rc->conn.lead || r < 0))
        return stt_tcp_recv_sock_lost(rc, j, "recv", r == 0 ? 0 : errno) ? READ_BLOCKED
                                                                          : READ_FAILED;
    if (r == 0)
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE,
                      "peer closed socket %d of %d (process exited or closed the comm)", j,
                      rc->conn.nsocks);
    else
        stt_tcp_conn_fail_sock(&rc->conn, j, "recv", errno);
    return READ_FAILED;
}

void stt_tcp_recv_part(const stt_tcp_recv_t *rc, const stt_tcp_msg_t *m, int j,
                       uint64_t *off_p, uint64_t *len_p)
{
    stt_tcp_part_locate(m->size, m->flags, m->rot, m->mask, j, off_p, len_p);
}

char *stt_tcp_recv_dest(stt_tcp_recv_t *rc, const stt_tcp_msg_t *m, uint64_t poff,
                        uint64_t plen, uint64_t done, size_t *len_p)
{
    uint64_t len = plen - done;

    if (m->discard) {
        *len_p = len > STT_TCP_DRAIN_BYTES ? STT_TCP_DRAIN_BYTES : (size_t)len;
        return (char *)rc->drain;
    }
    *len_p = len > RECV_SEG_MAX ? RECV_SEG_MAX : (size_t)len;
    return rc->reqs[m->slot].data[m->buf] + poff + done;
}

char *stt_tcp_cursor_dest(stt_tcp_recv_t *rc, stt_tcp_cursor_t *cur, int j, size_t *want_p)
{
    while (cur->msg != rc->msg_tail) {
        const stt_tcp_msg_t *m = &rc->msgs[cur->msg % STT_TCP_MSGQ];
        uint64_t poff, plen;
        stt_tcp_recv_part(rc, m, j, &poff, &plen);
        if (cur->off < plen)
            return stt_tcp_recv_dest(rc, m, poff, plen, cur->off, want_p);
        cur->msg++;
        cur->off = 0;
    }
    return NULL;
}

/*
 * The receive a message of tag goes to: the oldest posted receive with an
 * unmatched buffer of that tag, and in it the first such buffer (per tag,
 * messages fill buffers in posting order). Returns the receive's position in
 * the post queue, or -1 when no posted receive has an open buffer of tag.
 */
static int recv_find(const stt_tcp_recv_t *rc, int tag, int *buf_p)
{
    for (uint32_t pos = rc->post_head; pos != rc->post_tail; pos++) {
        const stt_tcp_rreq_t *req = &rc->reqs[rc->posts[pos % STT_TCP_RING]];
        for (int i = 0; i < req->slot.n; i++)
            if (!(req->matched_mask & (1u << i)) && req->tags[i] == tag) {
                *buf_p = i;
                return (int)(pos - rc->post_head);
            }
    }
    return -1;
}

bool stt_tcp_recv_header_ready(const stt_tcp_recv_t *rc)
{
    int buf;

    if (rc->conn.head.failed != STRATA_OK || rc->conn.socks[rc->conn.lead].msg != rc->msg_tail)
        return false;
    if (rc->conn.fo.rsock >= 0)
        return stt_tcp_recv_staged(rc) > 0;      /* replayed bytes to place */
    return stt_tcp_recv_staged(rc) >= STT_TCP_HDR_BYTES &&
           (stt_tcp_ctl_kind(rc->stage + rc->stage_off) != 0 ||
            (rc->msg_tail - rc->msg_head < STT_TCP_MSGQ &&
             recv_find(rc, stt_tcp_hdr_tag(rc->stage + rc->stage_off), &buf) >= 0));
}

/*
 * Matches the staged header; false when it must wait or failed. A message
 * whose tag no posted receive has open waits, with the messages behind it,
 * until a receive with its tag is posted: it is never an error (transport.h).
 */
static bool recv_header_match(stt_tcp_recv_t *rc)
{
    stt_tcp_hdr_t hdr;
    const char *why = NULL;
    int buf = -1;

    if (stt_tcp_hdr_decode(rc->stage + rc->stage_off, rc->conn.seq, &hdr, &why) != STRATA_OK) {
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "invalid message header: %s"
                      " (expected sequence %" PRIu32 ")", why, rc->conn.seq);
        return false;
    }
    if (rc->msg_tail - rc->msg_head == STT_TCP_MSGQ)
        return false;
    int at = recv_find(rc, hdr.tag, &buf);
    if (at < 0)
        return false;
    uint16_t slot = rc->posts[(rc->post_head + (uint32_t)at) % STT_TCP_RING];
    stt_tcp_rreq_t *req = &rc->reqs[slot];
    bool discard = hdr.size > req->cap[buf];
    if (discard) {
        if (rc->drain == NULL && (rc->drain = malloc(STT_TCP_DRAIN_BYTES)) == NULL) {
            stt_conn_fail(&rc->conn.head, STRATA_ERR_NO_MEMORY, "no memory to drain a"
                          " truncated message");
            return false;
        }
        STU_WARN("tcp: message %" PRIu32 " from %s (tag %d) has %" PRIu64 " bytes but its"
                 " receive buffer %d has %" PRIu64 "; payload discarded, receive fails"
                 " truncated", hdr.seq, rc->conn.head.peer, hdr.tag, hdr.size, buf, req->cap[buf]);
        req->slot.status = STRATA_ERR_TRUNCATED;
    }
    req->got[buf] = discard ? 0 : hdr.size;
    req->matched_mask |= (uint8_t)(1u << buf);
    req->unmatched--;
    req->pending++;
    if (req->unmatched == 0 && at > 0) {
        /* Fully matched before older receives: leave the post queue, keeping its order. */
        for (uint32_t pos = rc->post_head + (uint32_t)at; pos != rc->post_head; pos--)
            rc->posts[pos % STT_TCP_RING] = rc->posts[(pos - 1) % STT_TCP_RING];
        rc->posts[rc->post_head % STT_TCP_RING] = slot;
    }
    if (req->unmatched == 0)
        rc->post_head++;
    rc->msgs[rc->msg_tail % STT_TCP_MSGQ] = (stt_tcp_msg_t){
        .size = hdr.size, .slot = slot, .buf = (uint8_t)buf, .flags = (uint8_t)hdr.flags,
        .rot = stt_tcp_rot(hdr.seq, rc->conn.alive), .mask = rc->conn.alive,
        .discard = discard};
    rc->msg_tail++;
    rc->conn.seq++;
    rc->stage_off += STT_TCP_HDR_BYTES;
    return true;
}

/*
 * One recv of socket 0 into the stage, after what it still holds (at most a
 * partial header, moved to the front). *dry_p is set when the kernel had no
 * more. EOF with nothing staged while a header is due is a clean close.
 */
static read_result_t recv_stage_fill(stt_tcp_recv_t *rc, bool *dry_p)
{
    stt_tcp_cursor_t *cur = &rc->conn.socks[rc->conn.lead];
    uint32_t have = stt_tcp_recv_staged(rc);

    if (rc->stage_off > 0) {
        memmove(rc->stage, rc->stage + rc->stage_off, have);
        rc->stage_off = 0;
        rc->stage_len = have;
    }
    size_t room = STT_TCP_STAGE_BYTES - have;
    uint64_t cap = stt_tcp_recv_lead_cap(rc);
    if (cap == 0) {
        *dry_p = true;
        return READ_BLOCKED;
    }
    ssize_t r = recv(cur->fd, rc->stage + have, room < cap ? room : (size_t)cap, MSG_DONTWAIT);
    if (r > 0) {
        rc->stage_len += (uint32_t)r;
        cur->bytes += (uint64_t)r;
        *dry_p = (size_t)r < room;
        return READ_MORE;
    }
    if (r == 0 && have == 0 && cur->msg == rc->msg_tail) {
        /* A clean close between messages: pieces of matched messages may still
         * wait on the other sockets; stt_tcp_recv_progress decides when it fails. */
        rc->eof0 = true;
        return READ_BLOCKED;
    }
    read_result_t res = recv_classify(rc, rc->conn.lead, r);
    *dry_p = res == READ_BLOCKED;
    return res;
}

/* Copies staged bytes of socket 0's part of m to where they belong (nowhere if discarded). */
static void recv_stage_copy(stt_tcp_recv_t *rc, const stt_tcp_msg_t *m, uint64_t poff,
                            uint64_t plen)
{
    stt_tcp_cursor_t *cur = &rc->conn.socks[rc->conn.lead];
    uint64_t n = plen - cur->off;
    uint32_t have = stt_tcp_recv_staged(rc);

    if (n > have)
        n = have;
    if (!m->discard)
        memcpy(rc->reqs[m->slot].data[m->buf] + poff + cur->off, rc->stage + rc->stage_off,
               (size_t)n);
    rc->stage_off += (uint32_t)n;
    cur->off += n;
    stt_tcp_member_bytes(&rc->conn, rc->conn.lead, n);
}

/*
 * A large rest of socket 0's part of m, straight into its buffer; when the
 * call can finish the part, the stage behind it takes what follows (it is
 * empty here: staged bytes are always consumed before socket 0 is read).
 */
static read_result_t recv_direct(stt_tcp_recv_t *rc, const stt_tcp_msg_t *m, uint64_t poff,
                                 uint64_t plen, bool *dry_p)
{
    stt_tcp_cursor_t *cur = &rc->conn.socks[rc->conn.lead];
    struct iovec iov[2];
    size_t want;
    uint64_t cap = stt_tcp_recv_lead_cap(rc);

    if (cap == 0) {
        *dry_p = true;
        return READ_BLOCKED;
    }
    iov[0].iov_base = stt_tcp_recv_dest(rc, m, poff, plen, cur->off, &want);
    if (want > cap)
        want = (size_t)cap;
    iov[0].iov_len = want;
    iov[1].iov_base = rc->stage;
    iov[1].iov_len = cap - want < STT_TCP_STAGE_BYTES ? (size_t)(cap - want)
                                                      : STT_TCP_STAGE_BYTES;
    int niov = want == plen - cur->off && iov[1].iov_len > 0 ? 2 : 1;
    rc->stage_off = 0;
    rc->stage_len = 0;
    ssize_t r = readv(cur->fd, iov, niov);
    if (r <= 0) {
        read_result_t res = recv_classify(rc, rc->conn.lead, r);
        *dry_p = res == READ_BLOCKED;
        return res;
    }
    cur->bytes += (uint64_t)r;
    *dry_p = (size_t)r < want + (niov == 2 ? iov[1].iov_len : 0);
    if ((size_t)r > want) {
        rc->stage_len = (uint32_t)((size_t)r - want);
        r = (ssize_t)want;
    }
    cur->off += (uint64_t)r;
    stt_tcp_member_bytes(&rc->conn, rc->conn.lead, (uint64_t)r);
    return READ_MORE;
}

/* The lead socket: headers, and payloads (or its piece), through the stage or straight in. */
static void recv_lead_pull(stt_tcp_recv_t *rc)
{
    stt_tcp_cursor_t *cur = &rc->conn.socks[rc->conn.lead];
    bool dry = false;        /* a read of this pass found the kernel's queue empty */

    while (rc->conn.head.failed == STRATA_OK) {
        if (cur->msg == rc->msg_tail) {
            if (rc->conn.fo.rsock >= 0) {
                if (!stt_tcp_recv_replay(rc, &dry))
                    return;
                continue;
            }
            if (stt_tcp_recv_staged(rc) >= STT_TCP_HDR_BYTES) {
                if (stt_tcp_ctl_kind(rc->stage + rc->stage_off) != 0 ? !stt_tcp_recv_ctl(rc)
                                                                     : !recv_header_match(rc))
                    return;
                continue;
            }
            if (rc->eof0 || dry || recv_stage_fill(rc, &dry) != READ_MORE)
                return;
            continue;
        }
        const stt_tcp_msg_t *m = &rc->msgs[cur->msg % STT_TCP_MSGQ];
        uint64_t poff, plen;
        stt_tcp_recv_part(rc, m, rc->conn.lead, &poff, &plen);
        if (cur->off == plen) {
            cur->msg++;
            cur->off = 0;
            continue;
        }
        if (stt_tcp_recv_staged(rc) > 0) {
            recv_stage_copy(rc, m, poff, plen);
            continue;
        }
        if (dry)
            return;
        read_result_t res = plen - cur->off < STT_TCP_STAGE_EAGER ? recv_stage_fill(rc, &dry)
                                                                  : recv_direct(rc, m, poff,
                                                                                plen, &dry);
        if (res == READ_FAILED)
            return;
    }
}

/* Socket j > 0: piece j of every matched striped message, or a rotated one. */
static void recv_sockj_pull(stt_tcp_recv_t *rc, int j)
{
    stt_tcp_cursor_t *cur = &rc->conn.socks[j];

    size_t want;
    char *dst;

    while (rc->conn.head.failed == STRATA_OK &&
           (dst = stt_tcp_cursor_dest(rc, cur, j, &want)) != NULL) {
        ssize_t r = recv(cur->fd, dst, want, MSG_DONTWAIT);
        if (r <= 0) {
            if (recv_classify(rc, j, r) != READ_MORE)
                return;
            continue;
        }
        cur->off += (uint64_t)r;
        cur->bytes += (uint64_t)r;
        stt_tcp_member_bytes(&rc->conn, j, (uint64_t)r);
        if ((size_t)r < want)
            return;          /* the kernel had no more: the next call would be EAGAIN */
    }
}
/* Retires, in order, every message all cursors have passed; completes its receive. */
static void recv_retire(stt_tcp_recv_t *rc)
{
    uint32_t done = rc->msg_tail - rc->msg_head;
    /* a lost socket counts until its bytes were replayed */
    uint32_t mask = rc->conn.alive | (rc->conn.fo.state != STT_TCP_FO_NONE ? rc->conn.fo.lost : 0);

    for (int j = 0; j < rc->conn.nsocks; j++) {
        uint32_t d = rc->conn.socks[j].msg - rc->msg_head;
        if ((mask & (1u << j)) && d < done)
            done = d;
    }
    for (; done > 0; done--) {
        const stt_tcp_msg_t *m = &rc->msgs[rc->msg_head % STT_TCP_MSGQ];
        stt_tcp_rreq_t *req = &rc->reqs[m->slot];
        stt_tcp_member_msg(&rc->conn, m->size, m->flags, m->rot, m->mask);
        req->pending--;
        if (req->pending == 0 && req->unmatched == 0)
            req->slot.state = STT_SLOT_DONE;
        rc->msg_head++;
    }
}

/*
 * While the next message waits for a receive with its tag and other receives
 * wait for messages behind it, nothing moves: if the peer has closed (its FIN
 * or reset is in the socket's state, whatever bytes still sit in the kernel),
 * a dead peer must still fail those receives in a bounded time. A receive with
 * the waiting tag posted within STT_TCP_EOF_GRACE_NS still gets the message.
 */
static void recv_stall_check(stt_tcp_recv_t *rc)
{
    bool stalled = rc->conn.head.failed == STRATA_OK && rc->msg_head == rc->msg_tail &&
                   rc->conn.socks[rc->conn.lead].msg == rc->msg_tail &&
                   rc->post_head != rc->post_tail &&
                   stt_tcp_recv_staged(rc) >= STT_TCP_HDR_BYTES &&
                   !stt_tcp_recv_header_ready(rc);

    if (!stalled) {
        rc->stall_closed_ns = 0;
        return;
    }
    if (rc->stall_closed_ns == 0) {
        struct tcp_info ti;
        socklen_t len = sizeof(ti);
        if (getsockopt(rc->conn.socks[rc->conn.lead].fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
            ti.tcpi_state != TCP_ESTABLISHED)
            rc->stall_closed_ns = stu_time_ns();
        return;
    }
    if (stu_time_ns() - rc->stall_closed_ns >= STT_TCP_EOF_GRACE_NS)
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "peer closed the connection while"
                      " message %" PRIu32 " (tag %d) waits for a receive with its tag and %u"
                      " receive(s) wait for messages behind it", rc->conn.seq,
                      stt_tcp_hdr_tag(rc->stage + rc->stage_off), rc->post_tail - rc->post_head);
}

strata_status_t stt_tcp_recv_progress(stt_tcp_recv_t *rc)
{
    if (rc->conn.head.failed != STRATA_OK)
        return rc->conn.head.failed;
    /* A second pass only when retiring made room for a header already staged. */
    for (int pass = 0; pass < 2; pass++) {
        recv_lead_pull(rc);
        for (int j = 0; j < rc->conn.nsocks; j++)
            if (j != rc->conn.lead && ((rc->conn.alive & ~rc->conn.fo.lost) & (1u << j)))
                recv_sockj_pull(rc, j);
        if (rc->conn.fo.state == STT_TCP_FO_LEAD && !stt_tcp_recv_lead_down(rc))
            break;
        recv_retire(rc);
        if (!stt_tcp_recv_header_ready(rc))
            break;
    }
    /* After a clean close, a receive still waiting for a message can never finish. */
    if (rc->eof0 && rc->post_head != rc->post_tail && rc->msg_head == rc->msg_tail)
        stt_conn_fail(&rc->conn.head, STRATA_ERR_REMOTE, "peer closed the connection (socket 0"
                      " at end of stream) with %u receive(s) still waiting",
                      rc->post_tail - rc->post_head);
    recv_stall_check(rc);
    if (rc->conn.fo.out_len != 0)
        stt_tcp_recv_fo_flush(rc);
    return rc->conn.head.failed;
}

strata_status_t stt_tcp_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                              const int *tags, void **mhs, stt_req_t **req_p)
{
    stt_tcp_recv_t *rc = (stt_tcp_recv_t *)stt_conn_of(comm, &stt_tcp_ops, false, "irecv");

    if (rc == NULL || stt_hostmr_irecv_check(comm, rc->conn.head.peer, n, data, sizes, tags, mhs,
                                             req_p) != STRATA_OK)
        return STRATA_ERR_INVALID;
    if (STU_UNLIKELY(rc->conn.head.failed != STRATA_OK))
        return rc->conn.head.failed;
    stt_tcp_rreq_t *req = (stt_tcp_rreq_t *)stt_slots_take(&rc->slots, n);
    if (req == NULL) {
        *req_p = NULL;
        return STRATA_OK;
    }
    req->unmatched = (uint8_t)n;
    req->matched_mask = 0;
    req->pending = 0;
    for (int i = 0; i < n; i++) {
        req->tags[i] = tags[i];
        req->data[i] = data[i];
        req->cap[i] = sizes[i];
        req->got[i] = 0;
    }
    rc->posts[rc->post_tail % STT_TCP_RING] = req->slot.index;
    rc->post_tail++;
    /* Progress at once only when the new receive can use something without reading
     * a socket: a header already staged, or the peer's close (the receive then fails
     * here). Otherwise the bytes are still in the kernel and test() reads them; a
     * recv now would return EAGAIN on the critical path (a receive is posted before
     * the send it answers). */
    if (stt_tcp_recv_staged(rc) >= STT_TCP_HDR_BYTES || rc->eof0)
        stt_tcp_recv_progress(rc);
    *req_p = &req->slot.base;
    return STRATA_OK;
}

strata_status_t stt_tcp_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                               void **mhs, stt_req_t **req_p)
{
    stt_tcp_recv_t *rc = (stt_tcp_recv_t *)stt_conn_of(comm, &stt_tcp_ops, false, "iflush");

    if (rc == NULL)
        return STRATA_ERR_INVALID;
    return stt_hostmr_iflush(comm, rc->conn.head.peer, rc->conn.head.failed, &rc->slots, n,
                             req_p);
}

strata_status_t stt_tcp_recv_test(stt_tcp_recv_t *rc, stt_req_t *base, int *done, size_t *sizes)
{
    stt_tcp_rreq_t *req = (stt_tcp_rreq_t *)stt_slots_find(&rc->slots, base);

    if (req == NULL)
        return stt_slots_stale(&stt_tcp_ops, base);
    if (req->slot.state == STT_SLOT_ACTIVE)
        stt_tcp_recv_progress(rc);
    if (req->slot.state == STT_SLOT_ACTIVE && rc->conn.head.failed == STRATA_OK) {
        *done = 0;
        return STRATA_OK;
    }
    strata_status_t status =
        req->slot.state == STT_SLOT_DONE ? req->slot.status : rc->conn.head.failed;
    stt_slots_give(&rc->slots, &req->slot);
    if (status != STRATA_OK)
        return status;
    *done = 1;
    if (sizes != NULL)
        for (int i = 0; i < req->slot.n; i++)
            sizes[i] = req->got[i];
    return STRATA_OK;
}
