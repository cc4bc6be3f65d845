/* Unit tests of the UCX transport's handle, hello and tag encodings (pure logic). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "transport/ucx/ucx_wire.h"
#include "transport/transport.h"

static void test_handle_v4_roundtrip(void **state)
{
    stt_ucx_handle_t in = {.listener_id = 0x0123456789abcdefull}, out;
    uint8_t buf[STT_HANDLE_SIZE + 3];

    in.addr.in4.sin_family = AF_INET;
    in.addr.in4.sin_port = htons(4242);
    inet_pton(AF_INET, "192.0.2.7", &in.addr.in4.sin_addr);
    /* Odd offset: handles are plain bytes at any alignment. */
    for (int i = 0; i < STT_HANDLE_SECRET_BYTES; i++)
        in.secret[i] = (uint8_t)(0x51 + i);
    assert_int_equal(stt_ucx_handle_encode(&in, buf + 3), STRATA_OK);
    assert_memory_equal(buf + 3 + 38, in.secret, STT_HANDLE_SECRET_BYTES);
    assert_memory_equal(buf + 3, "STRU", 4);
    assert_int_equal(buf[3 + 8], 0xef);           /* little-endian listener id */
    memset(&out, 0xa5, sizeof(out));
    assert_int_equal(stt_ucx_handle_decode(buf + 3, &out), STRATA_OK);
    assert_true(out.listener_id == in.listener_id);
    assert_int_equal(out.addr.sa.sa_family, AF_INET);
    assert_int_equal(ntohs(out.addr.in4.sin_port), 4242);
    assert_memory_equal(&out.addr.in4.sin_addr, &in.addr.in4.sin_addr, 4);
    assert_memory_equal(out.secret, in.secret, STT_HANDLE_SECRET_BYTES);
}

static void test_handle_v6_roundtrip(void **state)
{
    stt_ucx_handle_t in = {.listener_id = 7}, out;
    uint8_t buf[STT_UCX_HANDLE_BYTES];

    in.addr.in6.sin6_family = AF_INET6;
    in.addr.in6.sin6_port = htons(65535);
    in.addr.in6.sin6_scope_id = 3;
    inet_pton(AF_INET6, "fd00::1:2", &in.addr.in6.sin6_addr);
    assert_int_equal(stt_ucx_handle_encode(&in, buf), STRATA_OK);
    assert_int_equal(stt_ucx_handle_decode(buf, &out), STRATA_OK);
    assert_int_equal(out.addr.sa.sa_family, AF_INET6);
    assert_int_equal(ntohs(out.addr.in6.sin6_port), 65535);
    assert_int_equal(out.addr.in6.sin6_scope_id, 3);
    assert_memory_equal(&out.addr.in6.sin6_addr, &in.addr.in6.sin6_addr, 16);
}

static void test_handle_rejects(void **state)
{
    stt_ucx_handle_t in = {.listener_id = 1}, out;
    uint8_t buf[STT_UCX_HANDLE_BYTES], bad[STT_UCX_HANDLE_BYTES];

    in.addr.in4.sin_family = AF_INET;
    assert_int_equal(stt_ucx_handle_encode(&in, buf), STRATA_OK);
    memcpy(bad, buf, sizeof(buf));
    bad[0] = 'X';                                  /* magic */
    assert_int_equal(stt_ucx_handle_decode(bad, &out), STRATA_ERR_INVALID);
    memcpy(bad, buf, sizeof(buf));
    bad[4] = STT_UCX_WIRE_VERSION + 1;             /* version */
    assert_int_equal(stt_ucx_handle_decode(bad, &out), STRATA_ERR_INVALID);
    memcpy(bad, buf, sizeof(buf));
    bad[6] = AF_UNIX;                              /* family */
    assert_int_equal(stt_ucx_handle_decode(bad, &out), STRATA_ERR_INVALID);
    memset(bad, 0, sizeof(bad));                   /* a zeroed handle */
    assert_int_equal(stt_ucx_handle_decode(bad, &out), STRATA_ERR_INVALID);
    in.addr.sa.sa_family = AF_UNIX;
    assert_int_equal(stt_ucx_handle_encode(&in, buf), STRATA_ERR_INVALID);
}

static void test_hello_roundtrip(void **state)
{
    stt_ucx_hello_t in = {.kind = STT_UCX_HELLO_ACCEPT, .listener_id = 0xfedcba9876543210ull,
                          .conn_id = 0x89abcdefu, .addr_len = 321}, out;
    uint8_t buf[STT_UCX_HELLO_BYTES];

    for (int i = 0; i < STT_HANDLE_SECRET_BYTES; i++)
        in.secret[i] = (uint8_t)(0x90 ^ i);
    stt_ucx_hello_encode(&in, buf);
    assert_memory_equal(buf, "STUH", 4);
    assert_memory_equal(buf + 24, in.secret, STT_HANDLE_SECRET_BYTES);
    assert_int_equal(buf[20], 321 & 0xff);
    assert_int_equal(buf[21], 321 >> 8);
    assert_int_equal(stt_ucx_hello_decode(buf, &out), STRATA_OK);
    assert_int_equal(out.kind, in.kind);
    assert_true(out.listener_id == in.listener_id);
    assert_int_equal(out.conn_id, in.conn_id);
    assert_int_equal(out.addr_len, in.addr_len);
    assert_memory_equal(out.secret, in.secret, STT_HANDLE_SECRET_BYTES);
}

static void test_hello_rejects(void **state)
{
    const stt_ucx_hello_t ok = {.kind = STT_UCX_HELLO_CONNECT, .listener_id = 5, .conn_id = 6,
                                .addr_len = 100};
    stt_ucx_hello_t h, out;
    uint8_t buf[STT_UCX_HELLO_BYTES];

    stt_ucx_hello_encode(&ok, buf);
    buf[1] = 'X';
    assert_int_equal(stt_ucx_hello_decode(buf, &out), STRATA_ERR_INVALID);
    h = ok;
    h.kind = 3;
    stt_ucx_hello_encode(&h, buf);
    assert_int_equal(stt_ucx_hello_decode(buf, &out), STRATA_ERR_INVALID);
    h = ok;
    h.addr_len = 0;
    stt_ucx_hello_encode(&h, buf);
    assert_int_equal(stt_ucx_hello_decode(buf, &out), STRATA_ERR_INVALID);
    h.addr_len = STT_UCX_MAX_ADDR_BYTES + 1;
    stt_ucx_hello_encode(&h, buf);
    assert_int_equal(stt_ucx_hello_decode(buf, &out), STRATA_ERR_INVALID);
    h.addr_len = STT_UCX_MAX_ADDR_BYTES;
    stt_ucx_hello_encode(&h, buf);
    assert_int_equal(stt_ucx_hello_decode(buf, &out), STRATA_OK);
}

/* Connection id above, the user's tag below, negative tags included. */
static void test_tag_layout(void **state)
{
    assert_true(stt_ucx_tag(0x12345678u, 5) == 0x1234567800000005ull);
    assert_true(stt_ucx_tag(1, -1) == 0x00000001ffffffffull);
    assert_true(stt_ucx_tag(0xffffffffu, 0x7fffffff) == 0xffffffff7fffffffull);
    assert_int_equal(stt_ucx_tag_user(stt_ucx_tag(9, -7)), -7);
    assert_int_equal(stt_ucx_tag_user(stt_ucx_tag(9, 123456)), 123456);
    /* Two connections never share a tag, whatever the user's tags. */
    assert_true(stt_ucx_tag(1, -1) != stt_ucx_tag(2, -1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handle_v4_roundtrip),
        cmocka_unit_test(test_handle_v6_roundtrip),
        cmocka_unit_test(test_handle_rejects),
        cmocka_unit_test(test_hello_roundtrip),
        cmocka_unit_test(test_hello_rejects),
        cmocka_unit_test(test_tag_layout),
    };
    return cmocka_run_group_tests_name("ucx_wire", tests, NULL, NULL);
}
