/*
 * The tcp transport's wire (transport/tcp/tcp_wire.h): hellos, acks and
 * message headers from a peer, a virtual NIC's member list in a handle, and
 * the stripe split of a message. A frame that decodes must encode back to the
 * same fields; the pieces of a message must cover it exactly, in order,
 * without overlap.
 */
#include <string.h>

#include "fuzz.h"
#include "transport/tcp/tcp_wire.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet();
    return 0;
}

static void fuzz_hello(fuzz_in_t *in)
{
    uint8_t buf[STT_TCP_HELLO_BYTES], again[STT_TCP_HELLO_BYTES];
    stt_tcp_hello_t h, h2;
    const char *why = NULL;
    fuzz_take(in, buf, sizeof(buf));
    if (stt_tcp_hello_decode(buf, &h, &why) != STRATA_OK) {
        FUZZ_CHECK(why != NULL);
        return;
    }
    FUZZ_CHECK(h.nsocks >= 1 && h.nsocks <= STT_TCP_MAX_SOCKS && h.index < h.nsocks);
    stt_tcp_hello_encode(&h, again);
    FUZZ_CHECK(stt_tcp_hello_decode(again, &h2, &why) == STRATA_OK);
    FUZZ_CHECK(h2.listener_id == h.listener_id && h2.conn_id == h.conn_id &&
               h2.index == h.index && h2.nsocks == h.nsocks);
}

static void fuzz_ack(fuzz_in_t *in)
{
    uint8_t buf[STT_TCP_ACK_BYTES], again[STT_TCP_ACK_BYTES];
    stt_tcp_ack_t a, a2;
    const char *why = NULL;
    fuzz_take(in, buf, sizeof(buf));
    if (stt_tcp_ack_decode(buf, &a, &why) != STRATA_OK) {
        FUZZ_CHECK(why != NULL);
        return;
    }
    stt_tcp_ack_encode(&a, again);
    FUZZ_CHECK(stt_tcp_ack_decode(again, &a2, &why) == STRATA_OK);
    FUZZ_CHECK(a2.conn_id == a.conn_id && a2.nsocks == a.nsocks && a2.status == a.status);
}

static void fuzz_hdr(fuzz_in_t *in)
{
    uint8_t buf[STT_TCP_HDR_BYTES], again[STT_TCP_HDR_BYTES];
    stt_tcp_hdr_t h, h2;
    const char *why = NULL;
    uint32_t seq = fuzz_u32(in);
    fuzz_take(in, buf, sizeof(buf));
    if (stt_tcp_hdr_decode(buf, seq, &h, &why) != STRATA_OK) {
        FUZZ_CHECK(why != NULL);
        return;
    }
    FUZZ_CHECK(h.seq == seq && h.size <= STT_TCP_MAX_MSG_BYTES);
    FUZZ_CHECK((h.flags & ~STT_TCP_HDR_KNOWN_FLAGS) == 0);
    stt_tcp_hdr_encode(&h, again);
    FUZZ_CHECK(stt_tcp_hdr_decode(again, seq, &h2, &why) == STRATA_OK);
    FUZZ_CHECK(h2.size == h.size && h2.tag == h.tag && h2.flags == h.flags);
}

static void fuzz_stripe(fuzz_in_t *in)
{
    uint64_t size = fuzz_u64(in) % (STT_TCP_MAX_MSG_BYTES + 1);
    uint32_t flags = fuzz_u8(in) % 3;   /* plain, striped or rotated */
    uint32_t seq = fuzz_u32(in);
    int nsocks = 1 + fuzz_u8(in) % STT_TCP_MAX_SOCKS;
    uint64_t next = 0;
    for (int i = 0; i < nsocks; i++) {
        uint64_t off, len;
        stt_tcp_stripe_locate(size, flags, seq, nsocks, i, &off, &len);
        if (len == 0)
            continue;
        FUZZ_CHECK(off == next && len <= size - off);
        next = off + len;
    }
    FUZZ_CHECK(next == size);
}

/* A handle's vNIC bytes from a peer: a list that decodes encodes back to the same bytes. */
static void fuzz_vnic(fuzz_in_t *in)
{
    uint8_t handle[STT_HANDLE_SIZE] = {0}, again[STT_HANDLE_SIZE] = {0};
    stt_netif_addr_t addr0;
    stt_tcp_vnic_t v;
    const char *why = NULL;

    memset(&addr0, 0, sizeof(addr0));
    addr0.sa.sa_family = fuzz_u8(in) & 1 ? AF_INET6 : AF_INET;
    fuzz_take(in, handle + STT_TCP_VNIC_OFFSET, STT_CONNSLOT_OFFSET - STT_TCP_VNIC_OFFSET);
    if (stt_tcp_vnic_decode(handle, &addr0, &v, &why) != STRATA_OK) {
        FUZZ_CHECK(why != NULL);
        return;
    }
    FUZZ_CHECK(v.n >= 1 && v.n <= STT_MAX_VDEV_MEMBERS);
    if (v.n == 1)
        return;
    FUZZ_CHECK(stt_tcp_vnic_encode(&v, again) == STRATA_OK);
    size_t used = 2 + (size_t)(v.n - 1) * (addr0.sa.sa_family == AF_INET6 ? 18 : 6);
    FUZZ_CHECK(memcmp(handle + STT_TCP_VNIC_OFFSET, again + STT_TCP_VNIC_OFFSET, used) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    switch (fuzz_u8(&in) % 5) {
    case 0: fuzz_hello(&in); break;
    case 1: fuzz_ack(&in); break;
    case 2: fuzz_hdr(&in); break;
    case 3: fuzz_vnic(&in); break;
    default: fuzz_stripe(&in); break;
    }
    return 0;
}
