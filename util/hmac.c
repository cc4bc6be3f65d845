/*
 * SHA-256 and HMAC-SHA256 (see util/hmac.h). Section numbers are FIPS 180-4's.
 */
#include "util/hmac.h"

#include <string.h>

/* 4.2.2: the first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

/* 5.3.3: the first 32 bits of the fractional parts of the square roots of the first 8 primes. */
static const uint32_t sha256_h0[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

#define HMAC_IPAD 0x36 /* RFC 2104 section 2 */
#define HMAC_OPAD 0x5c

static inline uint32_t rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static inline uint32_t be_get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* 6.2.2: one 512-bit block into the hash value. */
static void sha256_block(uint32_t h[8], const uint8_t *block)
{
    uint32_t w[64];

    for (int t = 0; t < 16; t++)
        w[t] = be_get32(block + 4 * t);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = s1 + w[t - 7] + s0 + w[t - 16];
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = k + S1 + ch + sha256_k[t] + w[t];
        uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

void stu_sha256_init(stu_sha256_t *s)
{
    memcpy(s->h, sha256_h0, sizeof(s->h));
    s->bytes = 0;
    s->used = 0;
}

void stu_sha256_update(stu_sha256_t *s, const void *data, size_t len)
{
    const uint8_t *p = data;

    s->bytes += len;
    while (len > 0) {
        size_t take = STU_SHA256_BLOCK - s->used;
        if (take > len)
            take = len;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        len -= take;
        if (s->used == STU_SHA256_BLOCK) {
            sha256_block(s->h, s->block);
            s->used = 0;
        }
    }
}

/* 5.1.1 padding: a 1 bit, zeros, and the length in bits as a 64-bit big-endian integer. */
void stu_sha256_final(stu_sha256_t *s, uint8_t out[STU_SHA256_BYTES])
{
    uint64_t bits = s->bytes * 8;

    s->block[s->used++] = 0x80;
    if (s->used > STU_SHA256_BLOCK - 8) {
        memset(s->block + s->used, 0, STU_SHA256_BLOCK - s->used);
        sha256_block(s->h, s->block);
        s->used = 0;
    }
    memset(s->block + s->used, 0, STU_SHA256_BLOCK - 8 - s->used);
    for (int i = 0; i < 8; i++)
        s->block[STU_SHA256_BLOCK - 1 - i] = (uint8_t)(bits >> (8 * i));
    sha256_block(s->h, s->block);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
    stu_secure_zero(s, sizeof(*s));
}

void stu_sha256(const void *data, size_t len, uint8_t out[STU_SHA256_BYTES])
{
    stu_sha256_t s;
    stu_sha256_init(&s);
    stu_sha256_update(&s, data, len);
    stu_sha256_final(&s, out);
}

/* RFC 2104: H(K ^ opad, H(K ^ ipad, text)), K padded with zeros to the block size. */
void stu_hmac_sha256(const void *key, size_t key_len, int n, const void *const *parts,
                     const size_t *lens, uint8_t out[STU_SHA256_BYTES])
{
    uint8_t k[STU_SHA256_BLOCK], pad[STU_SHA256_BLOCK], inner[STU_SHA256_BYTES];
    stu_sha256_t s;

    memset(k, 0, sizeof(k));
    if (key_len > STU_SHA256_BLOCK)
        stu_sha256(key, key_len, k);
    else if (key_len > 0)
        memcpy(k, key, key_len);
    for (int i = 0; i < STU_SHA256_BLOCK; i++)
        pad[i] = k[i] ^ HMAC_IPAD;
    stu_sha256_init(&s);
    stu_sha256_update(&s, pad, sizeof(pad));
    for (int i = 0; i < n; i++)
        stu_sha256_update(&s, parts[i], lens[i]);
    stu_sha256_final(&s, inner);
    for (int i = 0; i < STU_SHA256_BLOCK; i++)
        pad[i] = k[i] ^ HMAC_OPAD;
    stu_sha256_init(&s);
    stu_sha256_update(&s, pad, sizeof(pad));
    stu_sha256_update(&s, inner, sizeof(inner));
    stu_sha256_final(&s, out);
    stu_secure_zero(k, sizeof(k));
    stu_secure_zero(pad, sizeof(pad));
    stu_secure_zero(inner, sizeof(inner));
}

int stu_mac_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
    uint8_t diff = 0;
    for (size_t i = 0; i < len; i++)
        diff |= (uint8_t)(a[i] ^ b[i]);
    return diff == 0;
}

void stu_secure_zero(void *p, size_t len)
{
    volatile uint8_t *v = p;
    while (len-- > 0)
        *v++ = 0;
}
