/* Connection metadata of the ib transport: fixed offsets, little-endian (ib_wire.h). */
#include <string.h>

#include "transport/ib/ib_wire.h"
#include "util/le.h"

/*
 * Offsets (member 0 of the sender's device in the first 160 bytes, where
 * version 3 had its only port):
 *   0 magic u32 | 4 version u16 | 6 kind u8 | 7 nqps u8 | 8 link layer u8 | 9 mtu u8 |
 *  10 port u8 | 11 has_alt u8 | 12 gid_choice u8 | 13 tc u8 | 14 lid u16 |
 *  16 byte order u32 (host order) | 20 reserved u32 | 24 listener id u64 | 32 conn id u64 |
 *  40 gid[16] | 56 alt gid[16] | 72 addr u64 | 80 rkey u32 | 84 qpn u32 x 8 |
 * 116 secret[16] | 132 nmembers u8 | 133..159 zero |
 * 160 + 48 * (j - 1), member j = 1..7: link layer u8 | mtu u8 | port u8 | has_alt u8 |
 *     lid u16 | reserved u16 | rkey u32 | reserved u32 | gid[16] | alt gid[16] |
 * 496..511 zero
 */
#define META_OFF_QPN 84
#define META_OFF_SECRET 116
#define META_OFF_NMEMBERS 132
#define META_OFF_MEMBERS 160
#define META_MEMBER_BYTES 48
_Static_assert(META_OFF_SECRET + STT_HANDLE_SECRET_BYTES <= META_OFF_NMEMBERS, "secret fits");
_Static_assert(META_OFF_QPN + 4 * STT_IB_MAX_QPS <= META_OFF_SECRET, "QP numbers fit");
_Static_assert(META_OFF_MEMBERS + META_MEMBER_BYTES * (STT_IB_MAX_MEMBERS - 1) <=
               STT_IB_META_BYTES, "members fit");

/* Where member j's fields lie: member 0 at version 3's offsets, the others in records. */
typedef struct meta_at {
    size_t ll, mtu, port, has_alt, lid, rkey, gid, alt_gid;
} meta_at_t;

static meta_at_t meta_member_at(int j)
{
    if (j == 0)
        return (meta_at_t){.ll = 8, .mtu = 9, .port = 10, .has_alt = 11, .lid = 14, .rkey = 80,
                           .gid = 40, .alt_gid = 56};
    size_t b = META_OFF_MEMBERS + META_MEMBER_BYTES * (size_t)(j - 1);
    return (meta_at_t){.ll = b, .mtu = b + 1, .port = b + 2, .has_alt = b + 3, .lid = b + 4,
                       .rkey = b + 8, .gid = b + 16, .alt_gid = b + 32};
}

void stt_ib_meta_encode(const stt_ib_meta_t *meta, uint8_t *buf)
{
    uint32_t order = STT_IB_BYTE_ORDER;

    memset(buf, 0, STT_IB_META_BYTES);
    stu_le_put32(buf + 0, STT_IB_META_MAGIC);
    stu_le_put16(buf + 4, STT_IB_PROTO_VERSION);
    buf[6] = meta->kind;
    buf[7] = meta->nqps;
    buf[12] = meta->gid_choice;
    buf[13] = meta->tc;
    memcpy(buf + 16, &order, 4);          /* deliberately host order */
    stu_le_put64(buf + 24, meta->listener_id);
    stu_le_put64(buf + 32, meta->conn_id);
    stu_le_put64(buf + 72, meta->addr);
    for (int i = 0; i < STT_IB_MAX_QPS; i++)
        stu_le_put32(buf + META_OFF_QPN + 4 * i, meta->qpn[i]);
    memcpy(buf + META_OFF_SECRET, meta->secret, STT_HANDLE_SECRET_BYTES);
    buf[META_OFF_NMEMBERS] = meta->nmembers;
    for (int j = 0; j < meta->nmembers && j < STT_IB_MAX_MEMBERS; j++) {
        const stt_ib_meta_port_t *m = &meta->m[j];
        meta_at_t at = meta_member_at(j);
        buf[at.ll] = m->link_layer;
        buf[at.mtu] = m->mtu;
        buf[at.port] = m->port;
        buf[at.has_alt] = m->has_alt;
        stu_le_put16(buf + at.lid, m->lid);
        stu_le_put32(buf + at.rkey, m->rkey);
        memcpy(buf + at.gid, m->gid, 16);
        memcpy(buf + at.alt_gid, m->alt_gid, 16);
    }
}

/* The checks of a HELLO or REPLY; NULL when it passes. */
static const char *meta_judge(const stt_ib_meta_t *m)
{
    if (m->nmembers < 1 || m->nmembers > STT_IB_MAX_MEMBERS)
        return "member port count outside 1..8";
    if (m->nqps < 1 || m->nqps > STT_IB_MAX_QPS)
        return "QP count outside 1..8";
    if (m->nqps % m->nmembers != 0)
        return "QP count is not a multiple of the member port count";
    if (m->gid_choice > STT_IB_GID_ALT)
        return "bad GID flags";
    if (m->addr == 0)
        return "NULL FIFO or sizes address";
    for (int j = 0; j < m->nmembers; j++) {
        const stt_ib_meta_port_t *p = &m->m[j];
        if (p->mtu < 1 || p->mtu > 5)
            return "MTU code outside 1..5 (256..4096 bytes)";
        if (p->has_alt > 1)
            return "bad GID flags";
        if (m->gid_choice == STT_IB_GID_ALT && !p->has_alt)
            return "alternate GID chosen but none sent";
    }
    for (int i = 0; i < m->nqps; i++)
        if (m->qpn[i] == 0 || m->qpn[i] > 0xffffffu)
            return "QP number outside 1..2^24-1";
    return NULL;
}

strata_status_t stt_ib_meta_decode(const uint8_t *buf, int expect_kind, stt_ib_meta_t *meta_p,
                                   const char **why_p)
{
    stt_ib_meta_t m;
    uint32_t order;

    memset(&m, 0, sizeof(m));
    memcpy(&order, buf + 16, 4);
    if (stu_le_get32(buf) != STT_IB_META_MAGIC) {
        *why_p = "bad magic (not an ib transport peer)";
        return STRATA_ERR_REMOTE;
    }
    if (stu_le_get16(buf + 4) != STT_IB_PROTO_VERSION) {
        *why_p = "protocol version differs from ours";
        return STRATA_ERR_REMOTE;
    }
    if (order != STT_IB_BYTE_ORDER) {
        *why_p = "the peer's byte order differs from ours (FIFO entries travel in host order)";
        return STRATA_ERR_REMOTE;
    }
    m.kind = buf[6];
    if (m.kind != expect_kind) {
        *why_p = "unexpected message kind";
        return STRATA_ERR_REMOTE;
    }
    m.nqps = buf[7];
    m.gid_choice = buf[12];
    m.tc = buf[13];
    m.byte_order = order;
    m.listener_id = stu_le_get64(buf + 24);
    m.conn_id = stu_le_get64(buf + 32);
    m.addr = stu_le_get64(buf + 72);
    for (int i = 0; i < STT_IB_MAX_QPS; i++)
        m.qpn[i] = stu_le_get32(buf + META_OFF_QPN + 4 * i);
    memcpy(m.secret, buf + META_OFF_SECRET, STT_HANDLE_SECRET_BYTES);
    m.nmembers = buf[META_OFF_NMEMBERS];
    for (int j = 0; j < m.nmembers && j < STT_IB_MAX_MEMBERS; j++) {
        stt_ib_meta_port_t *p = &m.m[j];
        meta_at_t at = meta_member_at(j);
        p->link_layer = buf[at.ll];
        p->mtu = buf[at.mtu];
        p->port = buf[at.port];
        p->has_alt = buf[at.has_alt];
        p->lid = stu_le_get16(buf + at.lid);
        p->rkey = stu_le_get32(buf + at.rkey);
        memcpy(p->gid, buf + at.gid, 16);
        memcpy(p->alt_gid, buf + at.alt_gid, 16);
    }
    if (m.kind != STT_IB_META_READY) {
        const char *why = meta_judge(&m);
        if (why != NULL) {
            *why_p = why;
            return STRATA_ERR_REMOTE;
        }
    }
    *meta_p = m;
    return STRATA_OK;
}

void stt_ib_fo_encode(const stt_ib_fo_frame_t *f, uint8_t *buf)
{
    memset(buf, 0, STT_IB_FO_BYTES);
    stu_le_put32(buf, STT_IB_FO_MAGIC);
    stu_le_put16(buf + 4, STT_IB_PROTO_VERSION);
    buf[6] = f->type;
    buf[7] = f->epoch;
    buf[8] = f->dead;
    stu_le_put32(buf + 12, f->next);
    stu_le_put32(buf + 16, f->open);
}

strata_status_t stt_ib_fo_decode(const uint8_t *buf, int nmembers, stt_ib_fo_frame_t *f_p,
                                 const char **why_p)
{
    stt_ib_fo_frame_t f = {.type = buf[6], .epoch = buf[7], .dead = buf[8],
                           .next = stu_le_get32(buf + 12), .open = stu_le_get32(buf + 16)};

    if (stu_le_get32(buf) != STT_IB_FO_MAGIC || stu_le_get16(buf + 4) != STT_IB_PROTO_VERSION)
        *why_p = "not a failover frame of this protocol version";
    else if (f.type != STT_IB_FO_DOWN && f.type != STT_IB_FO_POS)
        *why_p = "unknown failover frame type";
    else if (f.dead == 0 || (nmembers < 8 && (f.dead >> nmembers) != 0))
        *why_p = "the lost members name none, or members the comm does not have";
    else if (f.epoch >= STT_IB_IMM_EPOCHS)
        *why_p = "epoch out of range";
    else
        *why_p = NULL;
    if (*why_p != NULL)
        return STRATA_ERR_REMOTE;
    *f_p = f;
    return STRATA_OK;
}
