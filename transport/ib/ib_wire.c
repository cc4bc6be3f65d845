/* Connection metadata of the ib transport: fixed offsets, little-endian (ib_wire.h). */
#include <string.h>

#include "transport/ib/ib_wire.h"
#include "util/le.h"

/*
 * Offsets:
 *   0 magic u32 | 4 version u16 | 6 kind u8 | 7 nqps u8 | 8 link layer u8 | 9 mtu u8 |
 *  10 port u8 | 11 has_alt u8 | 12 gid_choice u8 | 13 tc u8 | 14 lid u16 |
 *  16 byte order u32 (host order) | 20 reserved u32 | 24 listener id u64 | 32 conn id u64 |
 *  40 gid[16] | 56 alt gid[16] | 72 addr u64 | 80 rkey u32 | 84 qpn u32 x 8 |
 * 116 secret[16] | 132..159 zero
 */
#define META_OFF_QPN 84
#define META_OFF_SECRET 116
_Static_assert(META_OFF_SECRET + STT_HANDLE_SECRET_BYTES <= STT_IB_META_BYTES, "secret fits");
_Static_assert(META_OFF_QPN + 4 * STT_IB_MAX_QPS <= STT_IB_META_BYTES, "metadata fits");

void stt_ib_meta_encode(const stt_ib_meta_t *meta, uint8_t *buf)
{
    uint32_t order = STT_IB_BYTE_ORDER;

    memset(buf, 0, STT_IB_META_BYTES);
    stu_le_put32(buf + 0, STT_IB_META_MAGIC);
    stu_le_put16(buf + 4, STT_IB_PROTO_VERSION);
    buf[6] = meta->kind;
    buf[7] = meta->nqps;
    buf[8] = meta->link_layer;
    buf[9] = meta->mtu;
    buf[10] = meta->port;
    buf[11] = meta->has_alt;
    buf[12] = meta->gid_choice;
    buf[13] = meta->tc;
    stu_le_put16(buf + 14, meta->lid);
    memcpy(buf + 16, &order, 4);          /* deliberately host order */
    stu_le_put64(buf + 24, meta->listener_id);
    stu_le_put64(buf + 32, meta->conn_id);
    memcpy(buf + 40, meta->gid, 16);
    memcpy(buf + 56, meta->alt_gid, 16);
    stu_le_put64(buf + 72, meta->addr);
    stu_le_put32(buf + 80, meta->rkey);
    for (int i = 0; i < STT_IB_MAX_QPS; i++)
        stu_le_put32(buf + META_OFF_QPN + 4 * i, meta->qpn[i]);
    memcpy(buf + META_OFF_SECRET, meta->secret, STT_HANDLE_SECRET_BYTES);
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
    m.link_layer = buf[8];
    m.mtu = buf[9];
    m.port = buf[10];
    m.has_alt = buf[11];
    m.gid_choice = buf[12];
    m.tc = buf[13];
    m.lid = stu_le_get16(buf + 14);
    m.byte_order = order;
    m.listener_id = stu_le_get64(buf + 24);
    m.conn_id = stu_le_get64(buf + 32);
    memcpy(m.gid, buf + 40, 16);
    memcpy(m.alt_gid, buf + 56, 16);
    m.addr = stu_le_get64(buf + 72);
    m.rkey = stu_le_get32(buf + 80);
    for (int i = 0; i < STT_IB_MAX_QPS; i++)
        m.qpn[i] = stu_le_get32(buf + META_OFF_QPN + 4 * i);
    memcpy(m.secret, buf + META_OFF_SECRET, STT_HANDLE_SECRET_BYTES);

    if (m.kind != STT_IB_META_READY) {
        if (m.nqps < 1 || m.nqps > STT_IB_MAX_QPS) {
            *why_p = "QP count outside 1..8";
            return STRATA_ERR_REMOTE;
        }
        if (m.mtu < 1 || m.mtu > 5) {
            *why_p = "MTU code outside 1..5 (256..4096 bytes)";
            return STRATA_ERR_REMOTE;
        }
        if (m.has_alt > 1 || m.gid_choice > STT_IB_GID_ALT) {
            *why_p = "bad GID flags";
            return STRATA_ERR_REMOTE;
        }
        if (m.gid_choice == STT_IB_GID_ALT && !m.has_alt) {
            *why_p = "alternate GID chosen but none sent";
            return STRATA_ERR_REMOTE;
        }
        if (m.addr == 0) {
            *why_p = "NULL FIFO or sizes address";
            return STRATA_ERR_REMOTE;
        }
        for (int i = 0; i < m.nqps; i++) {
            if (m.qpn[i] == 0 || m.qpn[i] > 0xffffffu) {
                *why_p = "QP number outside 1..2^24-1";
                return STRATA_ERR_REMOTE;
            }
        }
    }
    *meta_p = m;
    return STRATA_OK;
}
