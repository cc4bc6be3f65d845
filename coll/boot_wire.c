/* The rendezvous's messages and their MACs (see coll/boot_wire.h). */
#include "coll/boot_wire.h"

#include <string.h>

#include "util/le.h"

static const char boot_label_hello[] = "strata boot hello";
static const char boot_label_welcome[] = "strata boot welcome";
static const char boot_label_conn[] = "strata conn";

/* The MAC field of a HELLO or WELCOME follows 32 bytes of fields. */
#define BOOT_FIELDS_BYTES 32

static void boot_head_put(uint8_t *buf, uint32_t magic)
{
    stu_le_put32(buf, magic);
    stu_le_put16(buf + 4, STC_BOOT_VERSION);
    stu_le_put16(buf + 6, 0);
}

static strata_status_t boot_head_check(const uint8_t *buf, uint32_t magic, const char *what,
                                       const char **why_p)
{
    if (stu_le_get32(buf) != magic) {
        *why_p = what;
        return STRATA_ERR_REMOTE;
    }
    if (stu_le_get16(buf + 4) != STC_BOOT_VERSION) {
        *why_p = "another version of Strata's rendezvous protocol";
        return STRATA_ERR_REMOTE;
    }
    return STRATA_OK;
}

/* HMAC(key, label | a[0..alen] | b[0..BOOT_FIELDS_BYTES]). */
static void boot_mac(const uint8_t *key, const char *label, const uint8_t *a, size_t alen,
                     const uint8_t *b, uint8_t out[STC_BOOT_MAC_BYTES])
{
    const void *parts[3] = {label, a, b};
    size_t lens[3] = {strlen(label), alen, BOOT_FIELDS_BYTES};
    stu_hmac_sha256(key, STC_BOOT_KEY_BYTES, 3, parts, lens, out);
}

/* Checks a HELLO's or WELCOME's head, then whether its MAC over prefix | fields proves key. */
static strata_status_t boot_open(const uint8_t *key, const char *label, const uint8_t *prefix,
                                 size_t plen, const uint8_t *buf, uint32_t magic,
                                 const char *what, int *authentic_p, const char **why_p)
{
    uint8_t mac[STC_BOOT_MAC_BYTES];
    strata_status_t status = boot_head_check(buf, magic, what, why_p);

    if (status != STRATA_OK)
        return status;
    boot_mac(key, label, prefix, plen, buf, mac);
    *authentic_p = stu_mac_equal(mac, buf + BOOT_FIELDS_BYTES, sizeof(mac));
    return STRATA_OK;
}

const char *stc_boot_verdict_str(uint32_t verdict)
{
    switch (verdict) {
    case STC_BOOT_OK: return "joined";
    case STC_BOOT_BAD_MAC: return "not this job's secret";
    case STC_BOOT_BAD_NRANKS: return "a different rank count";
    case STC_BOOT_BAD_RANK: return "a rank outside the job";
    case STC_BOOT_DUPLICATE: return "a rank that has joined already";
    default: return "an unknown verdict";
    }
}

void stc_boot_challenge_encode(const uint8_t nonce[STC_BOOT_NONCE_BYTES], uint8_t *buf)
{
    boot_head_put(buf, STC_BOOT_CHALLENGE_MAGIC);
    memcpy(buf + 8, nonce, STC_BOOT_NONCE_BYTES);
}

strata_status_t stc_boot_challenge_decode(const uint8_t *buf,
                                          uint8_t nonce[STC_BOOT_NONCE_BYTES],
                                          const char **why_p)
{
    strata_status_t status = boot_head_check(buf, STC_BOOT_CHALLENGE_MAGIC,
                                             "not a Strata rendezvous challenge", why_p);
    if (status == STRATA_OK)
        memcpy(nonce, buf + 8, STC_BOOT_NONCE_BYTES);
    return status;
}

void stc_boot_hello_encode(const uint8_t key[STC_BOOT_KEY_BYTES], const uint8_t *challenge,
                           const stc_boot_hello_t *hello, uint8_t *buf)
{
    boot_head_put(buf, STC_BOOT_HELLO_MAGIC);
    stu_le_put32(buf + 8, (uint32_t)hello->rank);
    stu_le_put32(buf + 12, (uint32_t)hello->nranks);
    memcpy(buf + 16, hello->nonce, STC_BOOT_NONCE_BYTES);
    boot_mac(key, boot_label_hello, challenge, STC_BOOT_CHALLENGE_BYTES, buf,
             buf + BOOT_FIELDS_BYTES);
}

strata_status_t stc_boot_hello_check(const uint8_t key[STC_BOOT_KEY_BYTES],
                                     const uint8_t *challenge, const uint8_t *buf, int nranks,
                                     stc_boot_hello_t *hello_p, uint32_t *verdict_p,
                                     const char **why_p)
{
    stc_boot_hello_t h;
    int authentic = 0;

    strata_status_t status =
        boot_open(key, boot_label_hello, challenge, STC_BOOT_CHALLENGE_BYTES, buf,
                  STC_BOOT_HELLO_MAGIC, "not a Strata rendezvous hello", &authentic, why_p);
    if (status != STRATA_OK)
        return status;
    if (!authentic) {
        *verdict_p = STC_BOOT_BAD_MAC;
        return STRATA_OK;
    }
    h.rank = (int32_t)stu_le_get32(buf + 8);
    h.nranks = (int32_t)stu_le_get32(buf + 12);
    memcpy(h.nonce, buf + 16, sizeof(h.nonce));
    if (h.nranks != nranks)
        *verdict_p = STC_BOOT_BAD_NRANKS;
    else if (h.rank <= 0 || h.rank >= nranks)
        *verdict_p = STC_BOOT_BAD_RANK;
    else
        *verdict_p = STC_BOOT_OK;
    *hello_p = h;
    return STRATA_OK;
}

void stc_boot_welcome_encode(const uint8_t *key, const uint8_t *hello_buf,
                             const stc_boot_welcome_t *welcome, uint8_t *buf)
{
    boot_head_put(buf, STC_BOOT_WELCOME_MAGIC);
    stu_le_put32(buf + 8, welcome->verdict);
    stu_le_put32(buf + 12, (uint32_t)welcome->nranks);
    memcpy(buf + 16, welcome->session, STC_BOOT_NONCE_BYTES);
    if (key != NULL)
        boot_mac(key, boot_label_welcome, hello_buf, STC_BOOT_HELLO_BYTES, buf,
                 buf + BOOT_FIELDS_BYTES);
    else
        memset(buf + BOOT_FIELDS_BYTES, 0, STC_BOOT_MAC_BYTES);
}

strata_status_t stc_boot_welcome_check(const uint8_t key[STC_BOOT_KEY_BYTES],
                                       const uint8_t *hello_buf, const uint8_t *buf,
                                       stc_boot_welcome_t *welcome_p, int *authentic_p,
                                       const char **why_p)
{
    stc_boot_welcome_t w;
    int authentic = 0;

    strata_status_t status =
        boot_open(key, boot_label_welcome, hello_buf, STC_BOOT_HELLO_BYTES, buf,
                  STC_BOOT_WELCOME_MAGIC, "not a Strata rendezvous welcome", &authentic, why_p);
    if (status != STRATA_OK)
        return status;
    w.verdict = stu_le_get32(buf + 8);
    w.nranks = (int32_t)stu_le_get32(buf + 12);
    memcpy(w.session, buf + 16, sizeof(w.session));
    if (w.verdict >= STC_BOOT_VERDICT_COUNT) {
        *why_p = "an unknown verdict";
        return STRATA_ERR_REMOTE;
    }
    if (!authentic && w.verdict != STC_BOOT_BAD_MAC) {
        *why_p = "its answer does not prove this job's secret";
        return STRATA_ERR_REMOTE;
    }
    *welcome_p = w;
    *authentic_p = authentic;
    return STRATA_OK;
}

void stc_boot_token_make(const uint8_t key[STC_BOOT_KEY_BYTES],
                         const uint8_t session[STC_BOOT_NONCE_BYTES], int from, int to,
                         uint8_t out[STC_BOOT_MAC_BYTES])
{
    uint8_t ids[8];
    stu_le_put32(ids, (uint32_t)from);
    stu_le_put32(ids + 4, (uint32_t)to);
    const void *parts[3] = {boot_label_conn, session, ids};
    size_t lens[3] = {strlen(boot_label_conn), STC_BOOT_NONCE_BYTES, sizeof(ids)};
    stu_hmac_sha256(key, STC_BOOT_KEY_BYTES, 3, parts, lens, out);
}
