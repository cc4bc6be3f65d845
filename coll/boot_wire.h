/*
 * The rendezvous's wire format and its authentication (coll/bootstrap.c).
 * Pure logic: no sockets, no allocation; every integer little-endian at a
 * fixed offset.
 *
 * Every rank holds the job key K (coll/secret.h), derived from the job
 * secret; the secret itself never travels. A rank joins rank 0 in three
 * messages, each proving knowledge of K over fresh nonces:
 *
 *   root -> rank  CHALLENGE (24 bytes)
 *     0 magic u32 "STBC" | 4 version u16 | 6 zero u16 | 8 root nonce [16]
 *   rank -> root  HELLO (64 bytes)
 *     0 magic u32 "STBH" | 4 version u16 | 6 zero u16 | 8 rank i32 | 12 nranks i32 |
 *     16 rank nonce [16] | 32 MAC [32]
 *     MAC = HMAC-SHA256(K, "strata boot hello" | CHALLENGE | HELLO[0..32])
 *   root -> rank  WELCOME (64 bytes)
 *     0 magic u32 "STBW" | 4 version u16 | 6 zero u16 | 8 verdict u32 |
 *     12 root's nranks i32 | 16 session [16] | 32 MAC [32]
 *     MAC = HMAC-SHA256(K, "strata boot welcome" | HELLO | WELCOME[0..32]), all zero
 *     when the verdict is STC_BOOT_BAD_MAC (the root does not answer a stranger
 *     with anything computed from K)
 *
 * A stranger without K cannot make a HELLO for the root's fresh nonce, nor
 * replay one (the nonce differs per connection), nor pose as rank 0 to a rank
 * (the WELCOME's MAC covers the rank's fresh nonce). The session (random per
 * communicator, chosen by rank 0) keys the tokens of the data connections:
 *   token(from, to) = HMAC-SHA256(K, "strata conn" | session | from u32 | to u32)
 * sent as the first message of every connection between ranks (coll/connect.c).
 */
#ifndef STC_BOOT_WIRE_H
#define STC_BOOT_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "strata/status.h"
#include "util/hmac.h"

#define STC_BOOT_VERSION 2
#define STC_BOOT_CHALLENGE_MAGIC 0x43425453u /* "STBC" as bytes on the wire */
#define STC_BOOT_HELLO_MAGIC 0x48425453u     /* "STBH" */
#define STC_BOOT_WELCOME_MAGIC 0x57425453u   /* "STBW" */

#define STC_BOOT_NONCE_BYTES 16 /* 128 bits: never repeats in practice */
#define STC_BOOT_MAC_BYTES STU_SHA256_BYTES
#define STC_BOOT_CHALLENGE_BYTES 24
#define STC_BOOT_HELLO_BYTES 64
#define STC_BOOT_WELCOME_BYTES 64
#define STC_BOOT_KEY_BYTES STU_SHA256_BYTES

/* The root's verdict on a hello, carried in the WELCOME. */
typedef enum stc_boot_verdict {
    STC_BOOT_OK = 0,
    STC_BOOT_BAD_MAC = 1,    /* not this job's key: a stranger, or a different secret */
    STC_BOOT_BAD_NRANKS = 2, /* this job's key, another rank count */
    STC_BOOT_BAD_RANK = 3,   /* rank outside 1..nranks-1 */
    STC_BOOT_DUPLICATE = 4,  /* the rank has joined already */
    STC_BOOT_VERDICT_COUNT
} stc_boot_verdict_t;

typedef struct stc_boot_hello {
    int32_t rank;
    int32_t nranks;
    uint8_t nonce[STC_BOOT_NONCE_BYTES];
} stc_boot_hello_t;

typedef struct stc_boot_welcome {
    uint32_t verdict;
    int32_t nranks;
    uint8_t session[STC_BOOT_NONCE_BYTES];
} stc_boot_welcome_t;

/* A description of a verdict for messages ("rank already joined"). */
const char *stc_boot_verdict_str(uint32_t verdict);

void stc_boot_challenge_encode(const uint8_t nonce[STC_BOOT_NONCE_BYTES], uint8_t *buf);
/* STRATA_ERR_REMOTE with *why_p on a bad magic or version; *nonce written on success. */
strata_status_t stc_boot_challenge_decode(const uint8_t *buf,
                                          uint8_t nonce[STC_BOOT_NONCE_BYTES],
                                          const char **why_p);

/* A HELLO answering challenge (STC_BOOT_CHALLENGE_BYTES), signed with key. */
void stc_boot_hello_encode(const uint8_t key[STC_BOOT_KEY_BYTES], const uint8_t *challenge,
                           const stc_boot_hello_t *hello, uint8_t *buf);

/*
 * The root's check of a HELLO against its challenge: STRATA_ERR_REMOTE with
 * *why_p for a bad magic or version (no verdict: not a rank of any Strata job
 * of this version), else OK with *verdict_p: STC_BOOT_BAD_MAC unless the MAC
 * proves key, then BAD_NRANKS, BAD_RANK (rank outside 1..nranks-1) or OK. The
 * fields go to *hello_p only when the MAC holds. Duplicates are the caller's.
 */
strata_status_t stc_boot_hello_check(const uint8_t key[STC_BOOT_KEY_BYTES],
                                     const uint8_t *challenge, const uint8_t *buf, int nranks,
                                     stc_boot_hello_t *hello_p, uint32_t *verdict_p,
                                     const char **why_p);

/* A WELCOME answering hello_buf (STC_BOOT_HELLO_BYTES); key NULL: unsigned (all-zero MAC). */
void stc_boot_welcome_encode(const uint8_t *key, const uint8_t *hello_buf,
                             const stc_boot_welcome_t *welcome, uint8_t *buf);

/*
 * The rank's check of a WELCOME answering its hello_buf: STRATA_ERR_REMOTE
 * with *why_p for a bad magic, version or verdict, or a MAC that does not
 * prove key (unless the verdict is STC_BOOT_BAD_MAC, which is never signed:
 * then OK with *authentic_p 0). OK fills *welcome_p.
 */
strata_status_t stc_boot_welcome_check(const uint8_t key[STC_BOOT_KEY_BYTES],
                                       const uint8_t *hello_buf, const uint8_t *buf,
                                       stc_boot_welcome_t *welcome_p, int *authentic_p,
                                       const char **why_p);

/* The token rank `from` presents on its data connection to rank `to`. */
void stc_boot_token_make(const uint8_t key[STC_BOOT_KEY_BYTES],
                         const uint8_t session[STC_BOOT_NONCE_BYTES], int from, int to,
                         uint8_t out[STC_BOOT_MAC_BYTES]);

#endif /* STC_BOOT_WIRE_H */
