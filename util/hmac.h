/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for authenticating
 * connections with a shared secret: the collective library's rendezvous and
 * the data connections it leads to (coll/bootstrap.c, coll/connect.c).
 *
 * Written from the two specifications; tests/unit/test_hmac.c checks the
 * FIPS 180-4 example digests and the RFC 4231 HMAC test cases. Portable C, no
 * table lookups indexed by secret data (SHA-256 has none), so no cache-timing
 * leak of the key. Pure functions on caller memory; thread-safe.
 */
#ifndef STU_HMAC_H
#define STU_HMAC_H

#include <stddef.h>
#include <stdint.h>

#define STU_SHA256_BYTES 32 /* digest size, FIPS 180-4 section 1 */
#define STU_SHA256_BLOCK 64 /* message block size, FIPS 180-4 section 1 */

typedef struct stu_sha256 {
    uint32_t h[8];
    uint64_t bytes; /* message length so far */
    uint8_t block[STU_SHA256_BLOCK];
    size_t used; /* bytes of block filled */
} stu_sha256_t;

void stu_sha256_init(stu_sha256_t *s);
void stu_sha256_update(stu_sha256_t *s, const void *data, size_t len);
void stu_sha256_final(stu_sha256_t *s, uint8_t out[STU_SHA256_BYTES]);

/* One-shot digest of data. */
void stu_sha256(const void *data, size_t len, uint8_t out[STU_SHA256_BYTES]);

/*
 * HMAC-SHA256 of the concatenation of n parts (parts[i], lens[i]) under key
 * (any length; a key longer than a block is hashed first, as RFC 2104 says).
 */
void stu_hmac_sha256(const void *key, size_t key_len, int n, const void *const *parts,
                     const size_t *lens, uint8_t out[STU_SHA256_BYTES]);

/* Constant-time comparison of two len-byte strings: 1 when equal. */
int stu_mac_equal(const uint8_t *a, const uint8_t *b, size_t len);

/* Overwrites len bytes in a way the compiler does not remove (for keys on the stack). */
void stu_secure_zero(void *p, size_t len);

#endif /* STU_HMAC_H */
