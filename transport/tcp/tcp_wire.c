/* Wire format of the TCP transport: fixed little-endian frames, stripe math. */
#include "transport/tcp/tcp_wire.h"

#include <stddef.h>
#include <string.h>

#include "util/le.h"

void stt_tcp_hello_encode(const stt_tcp_hello_t *hello, uint8_t *buf)
{
    stu_le_put32(buf + 0, STT_TCP_HELLO_MAGIC);
    stu_le_put16(buf + 4, hello->version);
    buf[6] = hello->index;
    buf[7] = hello->nsocks;
    stu_le_put64(buf + 8, hello->listener_id);
    stu_le_put64(buf + 16, hello->conn_id);
    memcpy(buf + 24, hello->secret, STT_HANDLE_SECRET_BYTES);
}

strata_status_t stt_tcp_hello_decode(const uint8_t *buf, stt_tcp_hello_t *hello_p,
                                     const char **why_p)
{
    stt_tcp_hello_t h;

    if (stu_le_get32(buf + 0) != STT_TCP_HELLO_MAGIC) {
        *why_p = "bad hello magic (not a Strata TCP peer)";
        return STRATA_ERR_REMOTE;
    }
    h.version = stu_le_get16(buf + 4);
    h.index = buf[6];
    h.nsocks = buf[7];
    h.listener_id = stu_le_get64(buf + 8);
    h.conn_id = stu_le_get64(buf + 16);
    memcpy(h.secret, buf + 24, STT_HANDLE_SECRET_BYTES);
    if (h.version != STT_TCP_PROTO_VERSION) {
        *why_p = "protocol version differs from ours";
        return STRATA_ERR_REMOTE;
    }
    if (h.nsocks < 1 || h.nsocks > STT_TCP_MAX_SOCKS) {
        *why_p = "socket count out of range 1..8";
        return STRATA_ERR_REMOTE;
    }
    if (h.index >= h.nsocks) {
        *why_p = "socket index not below the socket count";
        return STRATA_ERR_REMOTE;
    }
    *hello_p = h;
    return STRATA_OK;
}

void stt_tcp_ack_encode(const stt_tcp_ack_t *ack, uint8_t *buf)
{
    stu_le_put32(buf + 0, STT_TCP_ACK_MAGIC);
    stu_le_put16(buf + 4, ack->version);
    buf[6] = ack->nsocks;
    buf[7] = ack->status;
    stu_le_put64(buf + 8, ack->conn_id);
}

strata_status_t stt_tcp_ack_decode(const uint8_t *buf, stt_tcp_ack_t *ack_p, const char **why_p)
{
    stt_tcp_ack_t a;

    if (stu_le_get32(buf + 0) != STT_TCP_ACK_MAGIC) {
        *why_p = "bad ack magic";
        return STRATA_ERR_REMOTE;
    }
    a.version = stu_le_get16(buf + 4);
    a.nsocks = buf[6];
    a.status = buf[7];
    a.conn_id = stu_le_get64(buf + 8);
    if (a.version != STT_TCP_PROTO_VERSION) {
        *why_p = "protocol version differs from ours";
        return STRATA_ERR_REMOTE;
    }
    if (a.nsocks < 1 || a.nsocks > STT_TCP_MAX_SOCKS) {
        *why_p = "socket count out of range 1..8";
        return STRATA_ERR_REMOTE;
    }
    if (a.status != STT_TCP_ACK_OK && a.status != STT_TCP_ACK_REJECTED &&
        a.status != STT_TCP_ACK_LATE) {
        *why_p = "unknown ack status";
        return STRATA_ERR_REMOTE;
    }
    *ack_p = a;
    return STRATA_OK;
}

void stt_tcp_hdr_encode(const stt_tcp_hdr_t *hdr, uint8_t *buf)
{
    stu_le_put32(buf + 0, STT_TCP_HDR_MAGIC);
    stu_le_put32(buf + 4, hdr->flags);
    stu_le_put32(buf + 8, (uint32_t)hdr->tag);
    stu_le_put32(buf + 12, hdr->seq);
    stu_le_put64(buf + 16, hdr->size);
}

strata_status_t stt_tcp_hdr_decode(const uint8_t *buf, uint32_t expected_seq,
                                   stt_tcp_hdr_t *hdr_p, const char **why_p)
{
    stt_tcp_hdr_t h;

    if (stu_le_get32(buf + 0) != STT_TCP_HDR_MAGIC) {
        *why_p = "bad message header magic (stream out of sync or garbage)";
        return STRATA_ERR_REMOTE;
    }
    h.flags = stu_le_get32(buf + 4);
    h.tag = (int32_t)stu_le_get32(buf + 8);
    h.seq = stu_le_get32(buf + 12);
    h.size = stu_le_get64(buf + 16);
    if ((h.flags & ~STT_TCP_HDR_KNOWN_FLAGS) != 0) {
        *why_p = "unknown message header flags";
        return STRATA_ERR_REMOTE;
    }
    if ((h.flags & STT_TCP_HDR_STRIPED) && (h.flags & STT_TCP_HDR_ROTATED)) {
        *why_p = "a message both striped and rotated";
        return STRATA_ERR_REMOTE;
    }
    if (h.seq != expected_seq) {
        *why_p = "message sequence number out of order";
        return STRATA_ERR_REMOTE;
    }
    if (h.size > STT_TCP_MAX_MSG_BYTES) {
        *why_p = "message size above the 1 TiB limit";
        return STRATA_ERR_REMOTE;
    }
    *hdr_p = h;
    return STRATA_OK;
}

int stt_tcp_hdr_tag(const uint8_t *buf)
{
    return (int32_t)stu_le_get32(buf + 8);
}

void stt_tcp_stripe_locate(uint64_t size, uint32_t flags, uint32_t seq, int nsocks, int index,
                           uint64_t *off_p, uint64_t *len_p)
{
    if (!(flags & STT_TCP_HDR_STRIPED) || nsocks <= 1) {
        int whole = (flags & STT_TCP_HDR_ROTATED) && nsocks > 1 ? (int)(seq % (uint32_t)nsocks)
                                                                : 0;
        *off_p = 0;
        *len_p = (index == whole) ? size : 0;
        return;
    }
    /* size <= 2^40 and nsocks <= 8, so none of this can overflow. */
    uint64_t piece = (size + (uint64_t)nsocks - 1) / (uint64_t)nsocks;
    piece = (piece + STT_TCP_STRIPE_ALIGN - 1) / STT_TCP_STRIPE_ALIGN * STT_TCP_STRIPE_ALIGN;
    uint64_t off = piece * (uint64_t)index;
    if (off > size)
        off = size;
    uint64_t len = size - off;
    if (len > piece)
        len = piece;
    *off_p = off;
    *len_p = len;
}

void stt_tcp_part_locate(uint64_t size, uint32_t flags, uint32_t rot, uint8_t mask, int index,
                         uint64_t *off_p, uint64_t *len_p)
{
    if (!(mask & (1u << index))) {
        *off_p = 0;
        *len_p = 0;
        return;
    }
    int n = __builtin_popcount(mask);
    int k = __builtin_popcount(mask & ((1u << index) - 1u));
    stt_tcp_stripe_locate(size, flags, rot, n, k, off_p, len_p);
}

uint8_t stt_tcp_rot(uint32_t seq, uint8_t mask)
{
    return (uint8_t)(seq % (uint32_t)__builtin_popcount(mask));
}

uint32_t stt_tcp_ctl_kind(const uint8_t *buf)
{
    uint32_t magic = stu_le_get32(buf);

    return magic == STT_TCP_DOWN_MAGIC || magic == STT_TCP_REPLAY_MAGIC ? magic : 0;
}

void stt_tcp_ctl_encode(const stt_tcp_ctl_t *ctl, uint8_t *buf)
{
    memset(buf, 0, STT_TCP_HDR_BYTES);
    stu_le_put32(buf + 0, ctl->kind);
    buf[4] = ctl->arg;
    stu_le_put32(buf + 8, ctl->seq);
    stu_le_put64(buf + 16, ctl->size);
}

strata_status_t stt_tcp_ctl_decode(const uint8_t *buf, int nsocks, stt_tcp_ctl_t *ctl_p,
                                   const char **why_p)
{
    stt_tcp_ctl_t c = {.kind = stu_le_get32(buf), .arg = buf[4], .seq = stu_le_get32(buf + 8),
                       .size = stu_le_get64(buf + 16)};
    uint32_t all = (1u << nsocks) - 1u;

    if (c.kind != STT_TCP_DOWN_MAGIC && c.kind != STT_TCP_REPLAY_MAGIC) {
        *why_p = "not a failover frame";
        return STRATA_ERR_REMOTE;
    }
    if (buf[5] != 0 || buf[6] != 0 || buf[7] != 0 || stu_le_get32(buf + 12) != 0) {
        *why_p = "failover frame with reserved bytes set";
        return STRATA_ERR_REMOTE;
    }
    if (c.kind == STT_TCP_DOWN_MAGIC &&
        (c.arg == 0 || c.arg == all || (c.arg & ~all) != 0 || c.size != 0)) {
        *why_p = "DOWN frame with a bad socket mask (none, all, or out of range)";
        return STRATA_ERR_REMOTE;
    }
    if (c.kind == STT_TCP_REPLAY_MAGIC &&
        (c.arg >= nsocks || c.seq != 0 || c.size > STT_TCP_MAX_MSG_BYTES)) {
        *why_p = "REPLAY frame with a bad socket or size";
        return STRATA_ERR_REMOTE;
    }
    *ctl_p = c;
    return STRATA_OK;
}

void stt_tcp_rframe_encode(const stt_tcp_rframe_t *f, uint8_t *buf)
{
    memset(buf, 0, STT_TCP_RFRAME_BYTES);
    stu_le_put32(buf + 0, STT_TCP_RFRAME_MAGIC);
    buf[4] = f->type;
    buf[5] = f->arg;
    stu_le_put64(buf + 8, f->pos);
}

strata_status_t stt_tcp_rframe_decode(const uint8_t *buf, int nsocks, stt_tcp_rframe_t *f_p,
                                      const char **why_p)
{
    stt_tcp_rframe_t f = {.type = buf[4], .arg = buf[5], .pos = stu_le_get64(buf + 8)};
    uint32_t all = (1u << nsocks) - 1u;

    if (stu_le_get32(buf) != STT_TCP_RFRAME_MAGIC || buf[6] != 0 || buf[7] != 0) {
        *why_p = "bytes from the receiver that are not a failover frame";
        return STRATA_ERR_REMOTE;
    }
    if (f.type == STT_TCP_RFRAME_SUSPECT &&
        (f.arg == 0 || f.arg == all || (f.arg & ~all) != 0 || f.pos != 0)) {
        *why_p = "SUSPECT frame with a bad socket mask";
        return STRATA_ERR_REMOTE;
    }
    if ((f.type == STT_TCP_RFRAME_POS || f.type == STT_TCP_RFRAME_LEAD) && f.arg >= nsocks) {
        *why_p = "POS or LEAD frame with a bad socket";
        return STRATA_ERR_REMOTE;
    }
    if (f.type != STT_TCP_RFRAME_SUSPECT && f.type != STT_TCP_RFRAME_POS &&
        f.type != STT_TCP_RFRAME_LEAD) {
        *why_p = "receiver frame of an unknown type";
        return STRATA_ERR_REMOTE;
    }
    *f_p = f;
    return STRATA_OK;
}

_Static_assert(STT_TCP_VNIC_OFFSET >= sizeof(stt_handle_t), "vNIC bytes overlap the head");
_Static_assert(STT_TCP_VNIC_OFFSET + 2 + (STT_MAX_VDEV_MEMBERS - 1) * 6 <= STT_CONNSLOT_OFFSET,
               "IPv4 members overlap the connect slot");
_Static_assert(STT_TCP_VNIC_OFFSET + 2 + (STT_TCP_VNIC_MAX_IN6 - 1) * 18 <= STT_CONNSLOT_OFFSET,
               "IPv6 members overlap the connect slot");

strata_status_t stt_tcp_vnic_encode(const stt_tcp_vnic_t *v, uint8_t *handle)
{
    int family = v->addr[0].sa.sa_family;
    size_t alen = family == AF_INET6 ? 16 : 4;

    if (v->n < 1 || v->n > STT_MAX_VDEV_MEMBERS || (family != AF_INET && family != AF_INET6) ||
        (family == AF_INET6 && v->n > STT_TCP_VNIC_MAX_IN6))
        return STRATA_ERR_INVALID;
    for (int i = 1; i < v->n; i++)
        if (v->addr[i].sa.sa_family != family)
            return STRATA_ERR_INVALID;
    uint8_t *p = handle + STT_TCP_VNIC_OFFSET;
    p[0] = (uint8_t)v->n;
    p[1] = family == AF_INET6 ? 6 : 4;
    p += 2;
    for (int i = 1; i < v->n; i++) {
        const stt_netif_addr_t *a = &v->addr[i];
        memcpy(p, family == AF_INET6 ? (const void *)&a->in6.sin6_addr
                                     : (const void *)&a->in4.sin_addr, alen);
        memcpy(p + alen, family == AF_INET6 ? &a->in6.sin6_port : &a->in4.sin_port, 2);
        p += alen + 2;
    }
    return STRATA_OK;
}

strata_status_t stt_tcp_vnic_decode(const uint8_t *handle, const stt_netif_addr_t *addr0,
                                    stt_tcp_vnic_t *v_p, const char **why_p)
{
    const uint8_t *p = handle + STT_TCP_VNIC_OFFSET;
    int n = p[0] == 0 ? 1 : p[0];
    int family = addr0->sa.sa_family;
    stt_tcp_vnic_t v;

    if (n > STT_MAX_VDEV_MEMBERS || (family == AF_INET6 && n > STT_TCP_VNIC_MAX_IN6)) {
        *why_p = "more virtual-device members than the handle holds";
        return STRATA_ERR_REMOTE;
    }
    if (n > 1 && p[1] != (family == AF_INET6 ? 6 : 4)) {
        *why_p = "virtual-device members of another address family than member 0";
        return STRATA_ERR_REMOTE;
    }
    memset(&v, 0, sizeof(v));
    v.n = n;
    v.addr[0] = *addr0;
    size_t alen = family == AF_INET6 ? 16 : 4;
    p += 2;
    for (int i = 1; i < n; i++) {
        stt_netif_addr_t *a = &v.addr[i];
        a->sa.sa_family = (sa_family_t)family;
        memcpy(family == AF_INET6 ? (void *)&a->in6.sin6_addr : (void *)&a->in4.sin_addr, p,
               alen);
        memcpy(family == AF_INET6 ? &a->in6.sin6_port : &a->in4.sin_port, p + alen, 2);
        p += alen + 2;
    }
    *v_p = v;
    return STRATA_OK;
}
