/*
 * util/hmac.c against its specifications: the FIPS 180-4 example digests
 * (one block, two blocks, a million 'a'), the padding edges (55, 56, 63, 64
 * bytes), digests fed in pieces, the RFC 4231 HMAC-SHA256 test cases 1-4, 6
 * and 7 (short, long and larger-than-a-block keys), an HMAC over several
 * parts, and the constant-time comparison.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hmac.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void assert_digest(const uint8_t d[STU_SHA256_BYTES], const char *want)
{
    char got[2 * STU_SHA256_BYTES + 1];
    hex(d, STU_SHA256_BYTES, got);
    assert_string_equal(got, want);
}

static void sha_of(const void *data, size_t len, const char *want)
{
    uint8_t d[STU_SHA256_BYTES];
    stu_sha256(data, len, d);
    assert_digest(d, want);
}

static void test_sha256_fips_examples(void **state)
{
    sha_of("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
           "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    sha_of("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_sha256_million_a(void **state)
{
    stu_sha256_t s;
    uint8_t d[STU_SHA256_BYTES], chunk[1000];

    memset(chunk, 'a', sizeof(chunk));
    stu_sha256_init(&s);
    for (int i = 0; i < 1000; i++)
        stu_sha256_update(&s, chunk, sizeof(chunk));
    stu_sha256_final(&s, d);
    assert_digest(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Lengths around the padding boundary, fed whole and one byte at a time, must agree. */
static void test_sha256_pieces_agree(void **state)
{
    uint8_t msg[200];
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)(i * 7 + 3);
    const size_t lens[] = {1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 200};
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        uint8_t whole[STU_SHA256_BYTES], bytewise[STU_SHA256_BYTES];
        stu_sha256_t s;
        stu_sha256(msg, lens[k], whole);
        stu_sha256_init(&s);
        for (size_t i = 0; i < lens[k]; i++)
            stu_sha256_update(&s, msg + i, 1);
        stu_sha256_final(&s, bytewise);
        assert_memory_equal(whole, bytewise, STU_SHA256_BYTES);
    }
    /* 56 'a' bytes need a second padding block: a known digest */
    char a56[56];
    memset(a56, 'a', sizeof(a56));
    sha_of(a56, sizeof(a56),
           "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
}

static void hmac_of(const void *key, size_t klen, const void *data, size_t dlen,
                    const char *want)
{
    uint8_t d[STU_SHA256_BYTES];
    const void *parts[1] = {data};
    size_t lens[1] = {dlen};
    stu_hmac_sha256(key, klen, 1, parts, lens, d);
    assert_digest(d, want);
}

static void test_hmac_rfc4231(void **state)
{
    uint8_t k[131], dd[50], cd[50], k25[25];

    memset(k, 0x0b, 20);
    hmac_of(k, 20, "Hi There", 8,
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    hmac_of("Jefe", 4, "what do ya want for nothing?", 28,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k, 0xaa, sizeof(k));
    memset(dd, 0xdd, sizeof(dd));
    hmac_of(k, 20, dd, sizeof(dd),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    for (int i = 0; i < 25; i++)
        k25[i] = (uint8_t)(i + 1);
    memset(cd, 0xcd, sizeof(cd));
    hmac_of(k25, sizeof(k25), cd, sizeof(cd),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    const char *t6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    hmac_of(k, 131, t6, strlen(t6),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    const char *t7 = "This is a test using a larger than block-size key and a larger than "
                     "block-size data. The key needs to be hashed before being used by the "
                     "HMAC algorithm.";
    hmac_of(k, 131, t7, strlen(t7),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

/* The MAC of parts is the MAC of their concatenation. */
static void test_hmac_parts(void **state)
{
    uint8_t one[STU_SHA256_BYTES], three[STU_SHA256_BYTES];
    const void *whole[1] = {"what do ya want for nothing?"};
    size_t wlen[1] = {28};
    const void *parts[3] = {"what do ", "ya want for", " nothing?"};
    size_t plen[3] = {8, 11, 9};

    stu_hmac_sha256("Jefe", 4, 1, whole, wlen, one);
    stu_hmac_sha256("Jefe", 4, 3, parts, plen, three);
    assert_memory_equal(one, three, sizeof(one));
    stu_hmac_sha256("Jefx", 4, 3, parts, plen, three);
    assert_false(stu_mac_equal(one, three, sizeof(one)));
}

static void test_mac_equal(void **state)
{
    uint8_t a[32], b[32];
    memset(a, 7, sizeof(a));
    memcpy(b, a, sizeof(b));
    assert_true(stu_mac_equal(a, b, sizeof(a)));
    for (size_t i = 0; i < sizeof(a); i++) {
        b[i] ^= 0x80;
        assert_false(stu_mac_equal(a, b, sizeof(a)));
        b[i] ^= 0x80;
    }
    assert_true(stu_mac_equal(a, b, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_fips_examples), cmocka_unit_test(test_sha256_million_a),
        cmocka_unit_test(test_sha256_pieces_agree),  cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_hmac_parts),           cmocka_unit_test(test_mac_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
