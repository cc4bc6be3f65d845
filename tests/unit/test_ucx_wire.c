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

/* Packed addresses: n entries round-trip; a count other than the device's, or a length
 * past the end, is refused. */
static void test_addrs_pack(void **state)
{
    uint8_t buf[4 + 2 * (4 + 5)];
    const uint8_t *addr[STT_MAX_VDEV_MEMBERS];
    uint32_t len[STT_MAX_VDEV_MEMBERS];

    buf[0] = 2, buf[1] = buf[2] = buf[3] = 0;
    stt_ucx_addrs_put(buf, 4, "hello", 5);
    stt_ucx_addrs_put(buf, 13, "world", 5);
    assert_int_equal(stt_ucx_addrs_get(buf, sizeof(buf), 2, "peer", addr, len), STRATA_OK);
    assert_int_equal(len[0], 5);
    assert_int_equal(len[1], 5);
    assert_memory_equal(addr[0], "hello", 5);
    assert_memory_equal(addr[1], "world", 5);
    /* a plain device (1 member) meets a fused one (2): refused */
    assert_int_equal(stt_ucx_addrs_get(buf, sizeof(buf), 1, "peer", addr, len),
                     STRATA_ERR_INVALID);
    assert_int_equal(stt_ucx_addrs_get(buf, sizeof(buf) - 1, 2, "peer", addr, len),
                     STRATA_ERR_INVALID);
    buf[13] = 200;                                     /* second length past the end */
    assert_int_equal(stt_ucx_addrs_get(buf, sizeof(buf), 2, "peer", addr, len),
                     STRATA_ERR_INVALID);
    assert_int_equal(stt_ucx_addrs_get(buf, 3, 1, "peer", addr, len), STRATA_ERR_INVALID);
}

/* The striping plan: page-multiple parts, the last one the rest, none empty. */
static void test_vnic_plan(void **state)
{
    static const uint64_t sizes[] = {4096, 4097, 65536, 262144, 262145, 1048583, 24u << 20};
    uint32_t pb;
    int n;

    for (int lanes = 1; lanes <= STT_MAX_VDEV_MEMBERS; lanes++) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            stt_ucx_vnic_plan(sizes[i], lanes, &pb, &n);
            if (lanes == 1) {
                assert_true(n < 2);
                continue;
            }
            assert_true(n >= 1 && n <= lanes);
            if (n < 2)
                continue;
            assert_int_equal(pb % STT_UCX_PART_ALIGN, 0);
            assert_true((uint64_t)pb * (uint64_t)(n - 1) < sizes[i]);
            assert_true((uint64_t)pb * (uint64_t)n >= sizes[i]);
        }
    }
    stt_ucx_vnic_plan(262144, 2, &pb, &n);
    assert_int_equal(n, 2);
    assert_int_equal(pb, 131072);
    stt_ucx_vnic_plan(4096, 2, &pb, &n);      /* one page: nothing to split */
    assert_int_equal(n, 1);
}

/* A head round-trips; one that does not describe a striping over the lanes is refused. */
static void test_vhdr(void **state)
{
    stt_ucx_vhdr_t in = {.size = 262145, .seq = 0xdeadbeef, .part_bytes = 135168,
                         .nparts = 2, .lane = {1, 0}}, out;
    uint8_t buf[STT_UCX_VHDR_BYTES];

    stt_ucx_vhdr_encode(&in, buf);
    assert_int_equal(stt_ucx_vhdr_decode(buf, 2, &out), STRATA_OK);
    assert_true(out.size == in.size && out.seq == in.seq && out.part_bytes == in.part_bytes);
    assert_int_equal(out.nparts, 2);
    assert_memory_equal(out.lane, in.lane, 2);
    assert_int_equal(stt_ucx_vhdr_decode(buf, 1, &out), STRATA_ERR_INVALID);  /* lane 1 */
    stt_ucx_vhdr_t bad = in;
    bad.size = 2u * 135168 + 1;                       /* more than the parts hold */
    stt_ucx_vhdr_encode(&bad, buf);
    assert_int_equal(stt_ucx_vhdr_decode(buf, 2, &out), STRATA_ERR_INVALID);
    bad = in;
    bad.nparts = 9;
    stt_ucx_vhdr_encode(&bad, buf);
    assert_int_equal(stt_ucx_vhdr_decode(buf, 8, &out), STRATA_ERR_INVALID);
    bad = in;
    bad.size = 135168;                                /* the last part would be empty */
    stt_ucx_vhdr_encode(&bad, buf);
    assert_int_equal(stt_ucx_vhdr_decode(buf, 2, &out), STRATA_ERR_INVALID);
}

/* Virtual device tags: a head matches its whole-message receive, parts never do. */
static void test_vtag_layout(void **state)
{
    uint64_t recv = stt_ucx_vtag(0xabcd1234u, 77);
    uint64_t head = recv | STT_UCX_VTAG_STRIPED;
    uint64_t part = stt_ucx_vtag_part(0xabcd1234u, 77, 0);

    assert_true((recv >> 48) == 0x1234);
    assert_true(((head ^ recv) & STT_UCX_VTAG_RECV_MASK) == 0);
    assert_true(((part ^ recv) & STT_UCX_VTAG_RECV_MASK) != 0);
    assert_true(stt_ucx_vtag_part(1, 5, 3) != stt_ucx_vtag_part(1, 5, 2));
    assert_true((stt_ucx_vtag(1, -1) & 0xffffffffull) == 0xffffffffull);
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
        cmocka_unit_test(test_addrs_pack),
        cmocka_unit_test(test_vnic_plan),
        cmocka_unit_test(test_vhdr),
        cmocka_unit_test(test_vtag_layout),
    };
    return cmocka_run_group_tests_name("ucx_wire", tests, NULL, NULL);
}
