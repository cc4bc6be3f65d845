/*
 * The ib transport's connection metadata (HELLO, REPLY, READY over the side
 * channel) and the immediate of a completing write, both from a peer
 * (transport/ib/ib_wire.h). A message that decodes must hold what the
 * decoder promises and encode back to the same fields; an immediate must
 * decode into fields that encode back to the same 32 bits.
 */
#include "fuzz.h"
#include "transport/ib/ib_wire.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet();
    return 0;
}

static void fuzz_meta(fuzz_in_t *in)
{
    uint8_t buf[STT_IB_META_BYTES], again[STT_IB_META_BYTES];
    stt_ib_meta_t m, m2;
    const char *why = NULL;
    int kind = STT_IB_META_HELLO + fuzz_u8(in) % 3;

    fuzz_take(in, buf, sizeof(buf));
    if (stt_ib_meta_decode(buf, kind, &m, &why) != STRATA_OK) {
        FUZZ_CHECK(why != NULL);
        return;
    }
    FUZZ_CHECK(m.kind == kind);
    if (kind != STT_IB_META_READY) {
        FUZZ_CHECK(m.nqps >= 1 && m.nqps <= STT_IB_MAX_QPS);
        FUZZ_CHECK(m.nmembers >= 1 && m.nmembers <= STT_IB_MAX_MEMBERS && m.addr != 0);
        FUZZ_CHECK(m.nqps % m.nmembers == 0);
        for (int j = 0; j < m.nmembers; j++)
            FUZZ_CHECK(m.m[j].mtu >= 1 && m.m[j].mtu <= 5);
        for (int i = 0; i < m.nqps; i++)
            FUZZ_CHECK(m.qpn[i] >= 1 && m.qpn[i] <= 0xffffffu);
    }
    stt_ib_meta_encode(&m, again);
    FUZZ_CHECK(stt_ib_meta_decode(again, kind, &m2, &why) == STRATA_OK);
    FUZZ_CHECK(memcmp(&m, &m2, sizeof(m)) == 0);
}

static void fuzz_imm(fuzz_in_t *in)
{
    uint32_t v = fuzz_u32(in);
    stt_ib_imm_t imm;
    stt_ib_imm_decode(v, &imm);
    FUZZ_CHECK(imm.slot <= STT_IB_IMM_SLOT_MASK);
    FUZZ_CHECK(imm.nqps >= 1 && imm.nqps <= STT_IB_MAX_QPS);
    FUZZ_CHECK(!imm.sizes || imm.size == 0);
    FUZZ_CHECK(imm.size <= STT_IB_IMM_SIZE_MAX);
    /* with SIZES set, bits 10..31 carry nothing: the rest encodes back */
    uint32_t used = imm.sizes ? (1u << STT_IB_IMM_SIZE_SHIFT) - 1 : UINT32_MAX;
    FUZZ_CHECK(stt_ib_imm_encode(&imm) == (v & used));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    if (fuzz_u8(&in) & 1)
        fuzz_meta(&in);
    else
        fuzz_imm(&in);
    return 0;
}
