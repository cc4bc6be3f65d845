/*
 * The ucx transport's wire (transport/ucx/ucx_wire.h): the connection handle
 * (travels through the application's bootstrap) and the hello on the side
 * channel, both a peer's bytes, and the tag split. What decodes must be in
 * range and encode back to the same bytes and fields.
 */
#include "fuzz.h"
#include "transport/ucx/ucx_wire.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet();
    return 0;
}

static void fuzz_handle(fuzz_in_t *in)
{
    uint8_t buf[STT_UCX_HANDLE_BYTES], again[STT_UCX_HANDLE_BYTES];
    stt_ucx_handle_t h, h2;
    fuzz_take(in, buf, sizeof(buf));
    if (stt_ucx_handle_decode(buf, &h) != STRATA_OK)
        return;
    FUZZ_CHECK(h.addr.sa.sa_family == AF_INET || h.addr.sa.sa_family == AF_INET6);
    FUZZ_CHECK(stt_ucx_handle_encode(&h, again) == STRATA_OK);
    FUZZ_CHECK(stt_ucx_handle_decode(again, &h2) == STRATA_OK);
    FUZZ_CHECK(memcmp(&h, &h2, sizeof(h)) == 0);
}

static void fuzz_hello(fuzz_in_t *in)
{
    uint8_t buf[STT_UCX_HELLO_BYTES], again[STT_UCX_HELLO_BYTES];
    stt_ucx_hello_t h, h2;
    fuzz_take(in, buf, sizeof(buf));
    if (stt_ucx_hello_decode(buf, &h) != STRATA_OK)
        return;
    FUZZ_CHECK(h.addr_len >= 1 && h.addr_len <= STT_UCX_MAX_ADDR_BYTES);
    FUZZ_CHECK(h.kind == STT_UCX_HELLO_CONNECT || h.kind == STT_UCX_HELLO_ACCEPT);
    stt_ucx_hello_encode(&h, again);
    FUZZ_CHECK(memcmp(buf, again, sizeof(buf)) == 0);
    FUZZ_CHECK(stt_ucx_hello_decode(again, &h2) == STRATA_OK);
    FUZZ_CHECK(h2.listener_id == h.listener_id && h2.conn_id == h.conn_id);
}

static void fuzz_tag(fuzz_in_t *in)
{
    uint32_t conn = fuzz_u32(in);
    int tag = (int)fuzz_u32(in);
    uint64_t t = stt_ucx_tag(conn, tag);
    FUZZ_CHECK(stt_ucx_tag_user(t) == tag && (uint32_t)(t >> 32) == conn);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    switch (fuzz_u8(&in) % 3) {
    case 0: fuzz_handle(&in); break;
    case 1: fuzz_hello(&in); break;
    default: fuzz_tag(&in); break;
    }
    return 0;
}
