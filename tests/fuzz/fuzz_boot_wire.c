/*
 * The collective library's rendezvous messages (coll/boot_wire.h), as rank 0
 * and a joining rank read them from a peer: the challenge, the hello and the
 * welcome. Raw inputs exercise the format checks; in "signed" mode the
 * harness writes the MAC a key holder would, so the checks behind the MAC
 * (rank count, rank range, verdicts) are reached too. A hello is accepted
 * only with the key's MAC, and then its verdict matches its fields.
 */
#include "fuzz.h"
#include "coll/boot_wire.h"

static const uint8_t fuzz_key[STC_BOOT_KEY_BYTES] = {
    0x53, 0x54, 0x52, 0x41, 0x54, 0x41, 0x2d, 0x66, 0x75, 0x7a, 0x7a, 0x2d, 0x6b, 0x65, 0x79,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_quiet();
    return 0;
}

static void fuzz_challenge(fuzz_in_t *in)
{
    uint8_t buf[STC_BOOT_CHALLENGE_BYTES], nonce[STC_BOOT_NONCE_BYTES], again[sizeof(buf)];
    const char *why = NULL;
    fuzz_take(in, buf, sizeof(buf));
    if (stc_boot_challenge_decode(buf, nonce, &why) != STRATA_OK) {
        FUZZ_CHECK(why != NULL);
        return;
    }
    stc_boot_challenge_encode(nonce, again);
    FUZZ_CHECK(memcmp(buf + 8, again + 8, STC_BOOT_NONCE_BYTES) == 0);
}

static void fuzz_hello(fuzz_in_t *in, int sign)
{
    uint8_t challenge[STC_BOOT_CHALLENGE_BYTES], buf[STC_BOOT_HELLO_BYTES];
    int nranks = (int)(fuzz_u32(in) % 4096) + 1;
    stc_boot_hello_t h;
    uint32_t verdict = 99;
    const char *why = NULL;

    fuzz_take(in, challenge, sizeof(challenge));
    fuzz_take(in, buf, sizeof(buf));
    if (sign) {
        /* the fields as given, signed as a rank holding the key would */
        stc_boot_hello_t mine = {
            .rank = (int32_t)(buf[8] | buf[9] << 8 | buf[10] << 16 | (uint32_t)buf[11] << 24),
            .nranks =
                (int32_t)(buf[12] | buf[13] << 8 | buf[14] << 16 | (uint32_t)buf[15] << 24)};
        memcpy(mine.nonce, buf + 16, sizeof(mine.nonce));
        stc_boot_hello_encode(fuzz_key, challenge, &mine, buf);
    }
    strata_status_t st =
        stc_boot_hello_check(fuzz_key, challenge, buf, nranks, &h, &verdict, &why);
    if (st != STRATA_OK) {
        FUZZ_CHECK(!sign && why != NULL);
        return;
    }
    if (!sign) {
        /* without the key a hello can only be refused (a MAC found by chance aside) */
        FUZZ_CHECK(verdict == STC_BOOT_BAD_MAC);
        return;
    }
    FUZZ_CHECK(verdict != STC_BOOT_BAD_MAC);
    if (verdict == STC_BOOT_OK)
        FUZZ_CHECK(h.nranks == nranks && h.rank >= 1 && h.rank < nranks);
    else if (verdict == STC_BOOT_BAD_NRANKS)
        FUZZ_CHECK(h.nranks != nranks);
    else
        FUZZ_CHECK(verdict == STC_BOOT_BAD_RANK && (h.rank < 1 || h.rank >= nranks));
    /* the welcome the root would send for it verifies at the rank */
    stc_boot_welcome_t w = {.verdict = verdict, .nranks = nranks}, w2;
    uint8_t out[STC_BOOT_WELCOME_BYTES];
    int authentic = 0;
    stc_boot_welcome_encode(fuzz_key, buf, &w, out);
    FUZZ_CHECK(stc_boot_welcome_check(fuzz_key, buf, out, &w2, &authentic, &why) == STRATA_OK);
    FUZZ_CHECK(authentic && w2.verdict == verdict && w2.nranks == nranks);
}

static void fuzz_welcome(fuzz_in_t *in, int sign)
{
    uint8_t hello[STC_BOOT_HELLO_BYTES], buf[STC_BOOT_WELCOME_BYTES];
    stc_boot_welcome_t w;
    int authentic = -1;
    const char *why = NULL;

    fuzz_take(in, hello, sizeof(hello));
    fuzz_take(in, buf, sizeof(buf));
    if (sign) {
        stc_boot_welcome_t mine = {.verdict = buf[8] | (uint32_t)buf[9] << 8,
                                   .nranks = (int32_t)(buf[12] | buf[13] << 8)};
        memcpy(mine.session, buf + 16, sizeof(mine.session));
        stc_boot_welcome_encode(buf[10] & 1 ? NULL : fuzz_key, hello, &mine, buf);
    }
    if (stc_boot_welcome_check(fuzz_key, hello, buf, &w, &authentic, &why) != STRATA_OK) {
        FUZZ_CHECK(why != NULL);
        return;
    }
    FUZZ_CHECK(w.verdict < STC_BOOT_VERDICT_COUNT);
    /* only a refusal for a bad secret may come unsigned */
    FUZZ_CHECK(authentic || w.verdict == STC_BOOT_BAD_MAC);
    FUZZ_CHECK(stc_boot_verdict_str(w.verdict) != NULL);
}

static void fuzz_token(fuzz_in_t *in)
{
    uint8_t session[STC_BOOT_NONCE_BYTES], a[STC_BOOT_MAC_BYTES], b[STC_BOOT_MAC_BYTES];
    int from = (int)fuzz_u32(in), to = (int)fuzz_u32(in);
    fuzz_take(in, session, sizeof(session));
    stc_boot_token_make(fuzz_key, session, from, to, a);
    stc_boot_token_make(fuzz_key, session, from, to, b);
    FUZZ_CHECK(memcmp(a, b, sizeof(a)) == 0);
    if (from != to) {
        stc_boot_token_make(fuzz_key, session, to, from, b);
        FUZZ_CHECK(memcmp(a, b, sizeof(a)) != 0); /* each direction has its own token */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t mode = fuzz_u8(&in);
    switch (mode % 6) {
    case 0: fuzz_challenge(&in); break;
    case 1: fuzz_hello(&in, 0); break;
    case 2: fuzz_hello(&in, 1); break;
    case 3: fuzz_welcome(&in, 0); break;
    case 4: fuzz_welcome(&in, 1); break;
    default: fuzz_token(&in); break;
    }
    return 0;
}
