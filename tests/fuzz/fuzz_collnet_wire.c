/*
 * The CollNet's wire (plugin/collnet_wire.c): the listen handle NCCL carries from every
 * member, the hello that opens each connection and the agreement record, all a peer's
 * bytes, checked against a member's own group, position and size (also taken from the
 * input). What decodes must encode back to the same fields; what a check lets through is
 * in range (a member 0 record it passes has a model, an algorithm and a chunk the executor
 * can run).
 */
#include <math.h>

#include "fuzz.h"
#include "plugin/collnet.h"
#include "util/param.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet();
    return 0;
}

static void fuzz_handle(fuzz_in_t *in)
{
    uint8_t buf[NCCL_NET_HANDLE_MAXSIZE], again[NCCL_NET_HANDLE_MAXSIZE];
    uint8_t xport[NCCL_NET_HANDLE_MAXSIZE] = {0};
    stp_cn_handle_t h, h2;
    fuzz_take(in, buf, sizeof(buf));
    if (stp_cn_handle_decode(buf, 0, &h) != STRATA_OK)
        return;
    memcpy(xport, buf, STP_CN_HANDLE_XPORT_BYTES);
    FUZZ_CHECK(stp_cn_handle_encode(again, xport, &h) == STRATA_OK);
    FUZZ_CHECK(memcmp(again, buf, STP_CN_HANDLE_XPORT_BYTES) == 0);
    FUZZ_CHECK(stp_cn_handle_decode(again, 0, &h2) == STRATA_OK);
    FUZZ_CHECK(h2.nonce == h.nonce && h2.dev == h.dev);
}

static void fuzz_hello(fuzz_in_t *in)
{
    uint8_t buf[STP_CN_HELLO_BYTES], again[STP_CN_HELLO_BYTES];
    stp_cn_hello_t h = {0}, h2 = {0};
    uint64_t group = fuzz_u64(in);
    int nranks = (int)(fuzz_u32(in) % (STP_CN_MAX_UNITS / 2)) + 1;
    int pos = (int)(fuzz_u32(in) % (uint32_t)nranks);
    fuzz_take(in, buf, sizeof(buf));
    /* half the time, the member's own view is the hello's, so the checks behind the
     * group's are reached */
    if (group & 1) {
        stp_cn_hello_t peek;
        if (stp_cn_hello_decode(buf, &peek) == STRATA_OK) {
            group = peek.group;
            nranks = (int)(peek.nranks % (STP_CN_MAX_UNITS / 2)) + 1;
            pos = (int)(peek.to % (uint32_t)nranks);
        }
    }
    if (stp_cn_hello_check(buf, group, pos, nranks, &h) != STRATA_OK)
        return;
    FUZZ_CHECK(h.group == group && h.to == (uint32_t)pos && h.nranks == (uint32_t)nranks);
    FUZZ_CHECK(h.from < (uint32_t)nranks);
    stp_cn_hello_encode(again, &h);
    FUZZ_CHECK(stp_cn_hello_check(again, group, pos, nranks, &h2) == STRATA_OK);
    FUZZ_CHECK(h2.group == h.group && h2.from == h.from && h2.to == h.to &&
               h2.nranks == h.nranks);
}

static void fuzz_record(fuzz_in_t *in)
{
    uint8_t buf[STP_CN_RECORD_BYTES], again[STP_CN_RECORD_BYTES];
    stp_cn_record_t r, r2;
    const char *why = "unset";
    uint8_t mode = fuzz_u8(in);
    uint64_t group = fuzz_u64(in);
    int nranks = (int)(fuzz_u32(in) % (STP_CN_MAX_UNITS / 2)) + 1;
    int lead = mode & 1;
    fuzz_take(in, buf, sizeof(buf));
    if (mode & 2) {                          /* the member's view is the record's */
        stp_cn_record_t peek;
        if (stp_cn_record_decode(buf, &peek) == STRATA_OK) {
            group = peek.group;
            nranks = (int)(peek.nranks % (STP_CN_MAX_UNITS / 2)) + 1;
        }
    }
    strata_status_t status = stp_cn_record_check(buf, group, nranks, lead, &r, &why);
    if (status != STRATA_OK) {
        FUZZ_CHECK(why != NULL && why[0] != '\0');
        FUZZ_CHECK(status == STRATA_ERR_REMOTE || status == STRATA_ERR_INVALID ||
                   status == STRATA_ERR_MISMATCH);
        return;
    }
    FUZZ_CHECK(why == NULL);
    FUZZ_CHECK(r.ok && r.group == group && r.nranks == (uint32_t)nranks);
    FUZZ_CHECK(r.rank < (uint32_t)nranks);
    if (lead) {
        const stu_param_def_t *chunk = stu_param_def(STU_PARAM_COLLNET_CHUNK);
        sta_model_t m;
        stp_cn_record_model(&r, &m);
        FUZZ_CHECK(sta_model_check(&m) == STRATA_OK);
        FUZZ_CHECK((r.chunk == 0 || r.chunk >= STP_CN_MIN_PIECE) &&
                   (int64_t)r.chunk >= chunk->min && (int64_t)r.chunk <= chunk->max);
        FUZZ_CHECK(r.forced == STA_ALGO_AUTO || r.forced == STA_ALGO_RING ||
                   r.forced == STA_ALGO_RECURSIVE);
        for (int f = 0; f <= STA_FIELD_GAMMA; f++)
            FUZZ_CHECK(isfinite(r.model[f]));
    }
    stp_cn_record_encode(again, &r);
    FUZZ_CHECK(stp_cn_record_check(again, group, nranks, lead, &r2, &why) == STRATA_OK);
    FUZZ_CHECK(r2.ok == r.ok && r2.group == r.group && r2.rank == r.rank &&
               r2.nranks == r.nranks && r2.intra == r.intra && r2.forced == r.forced &&
               r2.chunk == r.chunk && r2.host == r.host && r2.cores == r.cores &&
               r2.stripe_min == r.stripe_min && r2.flags == r.flags);
    FUZZ_CHECK((r.flags & ~STP_CN_REC_FLAGS) == 0);
    FUZZ_CHECK(memcmp(r2.model, r.model, sizeof(r.model)) == 0);
}

/* The group id depends on every nonce in order: the same nonces give the same id. */
static void fuzz_group(fuzz_in_t *in)
{
    uint64_t nonces[16];
    int n = fuzz_u8(in) % 16 + 1;
    for (int i = 0; i < n; i++)
        nonces[i] = fuzz_u64(in);
    FUZZ_CHECK(stp_cn_group_id(nonces, n) == stp_cn_group_id(nonces, n));
    char *host = fuzz_rest_str(in);
    FUZZ_CHECK(stp_cn_host_id(host) == stp_cn_host_id(host));
    free(host);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    switch (fuzz_u8(&in) % 4) {
    case 0: fuzz_handle(&in); break;
    case 1: fuzz_hello(&in); break;
    case 2: fuzz_record(&in); break;
    default: fuzz_group(&in); break;
    }
    return 0;
}
