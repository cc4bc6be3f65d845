/* Unit tests of the TCP transport's wire format and stripe math (pure logic). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "transport/tcp/tcp_wire.h"

static void test_hello_roundtrip(void **state)
{
    stt_tcp_hello_t in = {.version = STT_TCP_PROTO_VERSION, .index = 3, .nsocks = 8,
                          .listener_id = 0x0123456789abcdefull, .conn_id = 0xfedcba9876543210ull};
    stt_tcp_hello_t out;
    uint8_t buf[STT_TCP_HELLO_BYTES];
    const char *why = NULL;

    for (int i = 0; i < STT_HANDLE_SECRET_BYTES; i++)
        in.secret[i] = (uint8_t)(0xa0 + i);
    stt_tcp_hello_encode(&in, buf);
    assert_memory_equal(buf, "STRH", 4);
    assert_memory_equal(buf + 24, in.secret, STT_HANDLE_SECRET_BYTES);   /* the secret last */
    assert_int_equal(buf[6], 3);
    assert_int_equal(buf[7], 8);
    assert_int_equal(buf[8], 0xef);           /* little-endian listener id */
    assert_int_equal(buf[15], 0x01);
    assert_int_equal(stt_tcp_hello_decode(buf, &out, &why), STRATA_OK);
    assert_int_equal(out.version, in.version);
    assert_int_equal(out.index, in.index);
    assert_int_equal(out.nsocks, in.nsocks);
    assert_true(out.listener_id == in.listener_id);
    assert_true(out.conn_id == in.conn_id);
    assert_memory_equal(out.secret, in.secret, STT_HANDLE_SECRET_BYTES);
}

/* Corrupts one byte of a valid hello and expects rejection with a reason and no output. */
static void hello_expect_reject(size_t offset, uint8_t value)
{
    stt_tcp_hello_t in = {.version = STT_TCP_PROTO_VERSION, .index = 1, .nsocks = 2,
                          .listener_id = 7, .conn_id = 9};
    stt_tcp_hello_t out;
    uint8_t buf[STT_TCP_HELLO_BYTES];
    const char *why = NULL;

    stt_tcp_hello_encode(&in, buf);
    buf[offset] = value;
    memset(&out, 0xa5, sizeof(out));
    assert_int_equal(stt_tcp_hello_decode(buf, &out, &why), STRATA_ERR_REMOTE);
    assert_non_null(why);
    assert_int_equal(out.nsocks, 0xa5);       /* untouched on failure */
}

static void test_hello_rejects(void **state)
{
    hello_expect_reject(0, 'X');              /* magic */
    hello_expect_reject(4, STT_TCP_PROTO_VERSION + 1);   /* version */
    hello_expect_reject(7, 0);                /* nsocks 0 */
    hello_expect_reject(7, STT_TCP_MAX_SOCKS + 1);
    hello_expect_reject(6, 2);                /* index == nsocks */
    hello_expect_reject(6, 200);
}

static void test_ack_roundtrip_and_rejects(void **state)
{
    stt_tcp_ack_t in = {.version = STT_TCP_PROTO_VERSION, .nsocks = 4, .status = STT_TCP_ACK_OK,
                        .conn_id = 0x1122334455667788ull};
    stt_tcp_ack_t out;
    uint8_t buf[STT_TCP_ACK_BYTES], bad[STT_TCP_ACK_BYTES];
    const char *why = NULL;

    stt_tcp_ack_encode(&in, buf);
    assert_memory_equal(buf, "STRA", 4);
    assert_int_equal(stt_tcp_ack_decode(buf, &out, &why), STRATA_OK);
    assert_true(out.conn_id == in.conn_id);
    assert_int_equal(out.nsocks, 4);

    const struct { size_t off; uint8_t v; } cases[] = {
        {0, 0}, {4, 9}, {6, 0}, {6, 9}, {7, 9},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(bad, buf, sizeof(bad));
        bad[cases[i].off] = cases[i].v;
        why = NULL;
        assert_int_equal(stt_tcp_ack_decode(bad, &out, &why), STRATA_ERR_REMOTE);
        assert_non_null(why);
    }
}

static void test_hdr_roundtrip(void **state)
{
    stt_tcp_hdr_t in = {.flags = STT_TCP_HDR_STRIPED, .tag = -5, .seq = 0xfffffffeu,
                        .size = STT_TCP_MAX_MSG_BYTES};
    stt_tcp_hdr_t out;
    uint8_t buf[STT_TCP_HDR_BYTES];
    const char *why = NULL;

    stt_tcp_hdr_encode(&in, buf);
    assert_memory_equal(buf, "STRM", 4);
    assert_int_equal(buf[4], 1);
    assert_int_equal(buf[8], 0xfb);           /* -5 little-endian */
    assert_int_equal(buf[11], 0xff);
    assert_int_equal(stt_tcp_hdr_decode(buf, 0xfffffffeu, &out, &why), STRATA_OK);
    assert_int_equal(out.flags, STT_TCP_HDR_STRIPED);
    assert_int_equal(out.tag, -5);
    assert_true(out.seq == 0xfffffffeu);
    assert_true(out.size == STT_TCP_MAX_MSG_BYTES);

    in = (stt_tcp_hdr_t){.flags = 0, .tag = 0, .seq = 0, .size = 0};
    stt_tcp_hdr_encode(&in, buf);
    assert_int_equal(stt_tcp_hdr_decode(buf, 0, &out, &why), STRATA_OK);
    assert_true(out.size == 0);
}

static void test_hdr_rejects(void **state)
{
    stt_tcp_hdr_t in = {.flags = 0, .tag = 3, .seq = 10, .size = 100};
    stt_tcp_hdr_t out;
    uint8_t buf[STT_TCP_HDR_BYTES], bad[STT_TCP_HDR_BYTES];
    const char *why;

    stt_tcp_hdr_encode(&in, buf);
    why = NULL;
    assert_int_equal(stt_tcp_hdr_decode(buf, 11, &out, &why), STRATA_ERR_REMOTE);  /* seq */
    assert_non_null(why);

    memcpy(bad, buf, sizeof(bad));
    bad[3] ^= 0x40;                                                                 /* magic */
    assert_int_equal(stt_tcp_hdr_decode(bad, 10, &out, &why), STRATA_ERR_REMOTE);

    memcpy(bad, buf, sizeof(bad));
    bad[4] = 0x4;                                                                   /* flags */
    assert_int_equal(stt_tcp_hdr_decode(bad, 10, &out, &why), STRATA_ERR_REMOTE);
    bad[4] = STT_TCP_HDR_STRIPED | STT_TCP_HDR_ROTATED;              /* both at once */
    assert_int_equal(stt_tcp_hdr_decode(bad, 10, &out, &why), STRATA_ERR_REMOTE);

    in.size = STT_TCP_MAX_MSG_BYTES + 1;                                            /* size */
    stt_tcp_hdr_encode(&in, bad);
    assert_int_equal(stt_tcp_hdr_decode(bad, 10, &out, &why), STRATA_ERR_REMOTE);
    in.size = UINT64_MAX;
    stt_tcp_hdr_encode(&in, bad);
    assert_int_equal(stt_tcp_hdr_decode(bad, 10, &out, &why), STRATA_ERR_REMOTE);

    /* Garbage: all zeroes and all ones never validate. */
    memset(bad, 0, sizeof(bad));
    assert_int_equal(stt_tcp_hdr_decode(bad, 0, &out, &why), STRATA_ERR_REMOTE);
    memset(bad, 0xff, sizeof(bad));
    assert_int_equal(stt_tcp_hdr_decode(bad, 0xffffffffu, &out, &why), STRATA_ERR_REMOTE);
}

static void test_stripe_unstriped(void **state)
{
    uint64_t off, len;

    for (int n = 1; n <= STT_TCP_MAX_SOCKS; n++) {
        stt_tcp_stripe_locate(12345, 0, 0, n, 0, &off, &len);
        assert_true(off == 0 && len == 12345);
        for (int j = 1; j < n; j++) {
            stt_tcp_stripe_locate(12345, 0, 0, n, j, &off, &len);
            assert_true(len == 0);
        }
    }
    /* A striped flag with one socket is the whole message on socket 0. */
    stt_tcp_stripe_locate(999, STT_TCP_HDR_STRIPED, 0, 1, 0, &off, &len);
    assert_true(off == 0 && len == 999);
}

static void test_stripe_examples(void **state)
{
    uint64_t off, len;

    stt_tcp_stripe_locate(256 << 10, STT_TCP_HDR_STRIPED, 0, 2, 0, &off, &len);
    assert_true(off == 0 && len == 128 << 10);
    stt_tcp_stripe_locate(256 << 10, STT_TCP_HDR_STRIPED, 0, 2, 1, &off, &len);
    assert_true(off == 128 << 10 && len == 128 << 10);

    /* 10000 bytes over 3 sockets: ceil(10000 / 3) = 3334, rounded to 4096. */
    stt_tcp_stripe_locate(10000, STT_TCP_HDR_STRIPED, 0, 3, 0, &off, &len);
    assert_true(off == 0 && len == 4096);
    stt_tcp_stripe_locate(10000, STT_TCP_HDR_STRIPED, 0, 3, 1, &off, &len);
    assert_true(off == 4096 && len == 4096);
    stt_tcp_stripe_locate(10000, STT_TCP_HDR_STRIPED, 0, 3, 2, &off, &len);
    assert_true(off == 8192 && len == 10000 - 8192);

    /* Tiny striped message: everything in piece 0, later pieces empty and in range. */
    stt_tcp_stripe_locate(1, STT_TCP_HDR_STRIPED, 0, 4, 0, &off, &len);
    assert_true(off == 0 && len == 1);
    stt_tcp_stripe_locate(1, STT_TCP_HDR_STRIPED, 0, 4, 3, &off, &len);
    assert_true(off == 1 && len == 0);

    stt_tcp_stripe_locate(0, STT_TCP_HDR_STRIPED, 0, 8, 5, &off, &len);
    assert_true(off == 0 && len == 0);

    /* The largest message: 1 TiB over 8 sockets is 128 GiB each. */
    stt_tcp_stripe_locate(STT_TCP_MAX_MSG_BYTES, STT_TCP_HDR_STRIPED, 0, 8, 7, &off, &len);
    assert_true(off == 7 * (STT_TCP_MAX_MSG_BYTES / 8) && len == STT_TCP_MAX_MSG_BYTES / 8);
}

/* Pieces are contiguous, in socket order, page-aligned, and cover the message exactly. */
static void test_stripe_cover_property(void **state)
{
    static const uint64_t sizes[] = {0, 1, 7, 4095, 4096, 4097, 65535, 65536, 262143, 262144,
                                     1000003, 4u << 20, (4u << 20) + 1, 123456789, 1ull << 33};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (int n = 1; n <= STT_TCP_MAX_SOCKS; n++) {
            uint64_t expect = 0, biggest = 0;
            for (int j = 0; j < n; j++) {
                uint64_t off, len;
                stt_tcp_stripe_locate(sizes[s], STT_TCP_HDR_STRIPED, 0, n, j, &off, &len);
                assert_true(off == expect);
                assert_true(off + len <= sizes[s]);
                if (len > 0 && off + len < sizes[s])
                    assert_true((off + len) % STT_TCP_STRIPE_ALIGN == 0);
                if (len > biggest)
                    biggest = len;
                expect = off + len;
            }
            assert_true(expect == sizes[s]);
            /* Balanced: no piece exceeds an even share by more than one alignment unit. */
            assert_true(biggest <= sizes[s] / (uint64_t)n + STT_TCP_STRIPE_ALIGN);
        }
    }
}

/* Parts under a socket mask: the mask's sockets share the message; the others get nothing. */
static void test_part_locate_mask(void **state)
{
    const uint64_t size = (4u << 20) + 7;
    uint8_t mask = 0x5;                        /* sockets 0 and 2 survive of 4 */
    uint64_t off, len, total = 0;

    (void)state;
    for (int j = 0; j < 4; j++) {
        stt_tcp_part_locate(size, STT_TCP_HDR_STRIPED, 0, mask, j, &off, &len);
        if (!(mask & (1u << j)))
            assert_true(len == 0);
        total += len;
    }
    assert_true(total == size);
    stt_tcp_part_locate(size, STT_TCP_HDR_STRIPED, 0, mask, 2, &off, &len);
    assert_true(off == (2u << 20) + 4096 && len == size - off);   /* the second of two pieces */
    /* rotated: rot 1 of mask {0, 2} is socket 2 */
    assert_int_equal(stt_tcp_rot(7, mask), 1);
    stt_tcp_part_locate(65536, STT_TCP_HDR_ROTATED, 1, mask, 2, &off, &len);
    assert_true(off == 0 && len == 65536);
    stt_tcp_part_locate(65536, STT_TCP_HDR_ROTATED, 1, mask, 0, &off, &len);
    assert_true(len == 0);
    /* the full mask is the plain rule */
    for (int j = 0; j < 4; j++) {
        uint64_t o2, l2;
        stt_tcp_part_locate(size, STT_TCP_HDR_STRIPED, 0, 0xf, j, &off, &len);
        stt_tcp_stripe_locate(size, STT_TCP_HDR_STRIPED, 0, 4, j, &o2, &l2);
        assert_true(off == o2 && len == l2);
    }
}

/* DOWN and REPLAY frames: round trip, told apart from a header, and every rejection. */
static void test_ctl_frames(void **state)
{
    uint8_t buf[STT_TCP_HDR_BYTES], hdr[STT_TCP_HDR_BYTES];
    stt_tcp_ctl_t down = {.kind = STT_TCP_DOWN_MAGIC, .arg = 0xa, .seq = 77};
    stt_tcp_ctl_t replay = {.kind = STT_TCP_REPLAY_MAGIC, .arg = 3, .size = 123456};
    stt_tcp_ctl_t out;
    stt_tcp_hdr_t h = {.tag = 1, .seq = 2, .size = 3};
    const char *why = NULL;

    (void)state;
    stt_tcp_hdr_encode(&h, hdr);
    assert_int_equal(stt_tcp_ctl_kind(hdr), 0);
    stt_tcp_ctl_encode(&down, buf);
    assert_memory_equal(buf, "STRD", 4);
    assert_true(stt_tcp_ctl_kind(buf) == STT_TCP_DOWN_MAGIC);
    assert_int_equal(stt_tcp_ctl_decode(buf, 4, &out, &why), STRATA_OK);
    assert_true(out.arg == 0xa && out.seq == 77 && out.size == 0);
    stt_tcp_ctl_encode(&replay, buf);
    assert_memory_equal(buf, "STRP", 4);
    assert_int_equal(stt_tcp_ctl_decode(buf, 4, &out, &why), STRATA_OK);
    assert_true(out.arg == 3 && out.size == 123456);
    /* socket 0 (the first lead) may go down and be replayed */
    stt_tcp_ctl_t down0 = {.kind = STT_TCP_DOWN_MAGIC, .arg = 0x5, .seq = 9};
    stt_tcp_ctl_encode(&down0, buf);
    assert_int_equal(stt_tcp_ctl_decode(buf, 4, &out, &why), STRATA_OK);
    stt_tcp_ctl_t replay0 = {.kind = STT_TCP_REPLAY_MAGIC, .arg = 0, .size = 1};
    stt_tcp_ctl_encode(&replay0, buf);
    assert_int_equal(stt_tcp_ctl_decode(buf, 4, &out, &why), STRATA_OK);
    /* rejections: every socket or none in a DOWN mask, out of range, reserved bytes */
    const stt_tcp_ctl_t bad[] = {
        {.kind = STT_TCP_DOWN_MAGIC, .arg = 0xf},
        {.kind = STT_TCP_DOWN_MAGIC, .arg = 0x10},
        {.kind = STT_TCP_DOWN_MAGIC, .arg = 0},
        {.kind = STT_TCP_REPLAY_MAGIC, .arg = 4, .size = 1},
        {.kind = STT_TCP_REPLAY_MAGIC, .arg = 1, .size = STT_TCP_MAX_MSG_BYTES + 1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        stt_tcp_ctl_encode(&bad[i], buf);
        why = NULL;
        assert_int_equal(stt_tcp_ctl_decode(buf, 4, &out, &why), STRATA_ERR_REMOTE);
        assert_non_null(why);
    }
    stt_tcp_ctl_encode(&down, buf);
    buf[6] = 1;
    assert_int_equal(stt_tcp_ctl_decode(buf, 4, &out, &why), STRATA_ERR_REMOTE);
}

/* Receiver -> sender frames: SUSPECT, POS and LEAD, and their rejections. */
static void test_rframes(void **state)
{
    uint8_t buf[STT_TCP_RFRAME_BYTES];
    stt_tcp_rframe_t in = {.type = STT_TCP_RFRAME_POS, .arg = 3, .pos = 0x123456789ull}, out;
    const char *why = NULL;

    (void)state;
    stt_tcp_rframe_encode(&in, buf);
    assert_memory_equal(buf, "STRO", 4);
    assert_int_equal(stt_tcp_rframe_decode(buf, 4, &out, &why), STRATA_OK);
    assert_true(out.type == in.type && out.arg == 3 && out.pos == in.pos);
    in = (stt_tcp_rframe_t){.type = STT_TCP_RFRAME_SUSPECT, .arg = 0xa};
    stt_tcp_rframe_encode(&in, buf);
    assert_int_equal(stt_tcp_rframe_decode(buf, 4, &out, &why), STRATA_OK);
    in = (stt_tcp_rframe_t){.type = STT_TCP_RFRAME_LEAD, .arg = 0, .pos = 77};
    stt_tcp_rframe_encode(&in, buf);
    assert_int_equal(stt_tcp_rframe_decode(buf, 4, &out, &why), STRATA_OK);
    assert_true(out.type == STT_TCP_RFRAME_LEAD && out.arg == 0 && out.pos == 77);
    const stt_tcp_rframe_t bad[] = {
        {.type = STT_TCP_RFRAME_SUSPECT, .arg = 0xf},
        {.type = STT_TCP_RFRAME_SUSPECT, .arg = 0},
        {.type = STT_TCP_RFRAME_SUSPECT, .arg = 0x2, .pos = 5},
        {.type = STT_TCP_RFRAME_POS, .arg = 4},
        {.type = STT_TCP_RFRAME_LEAD, .arg = 4},
        {.type = 9, .arg = 1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        stt_tcp_rframe_encode(&bad[i], buf);
        why = NULL;
        assert_int_equal(stt_tcp_rframe_decode(buf, 4, &out, &why), STRATA_ERR_REMOTE);
        assert_non_null(why);
    }
    stt_tcp_rframe_encode(&in, buf);
    buf[0] ^= 1;
    assert_int_equal(stt_tcp_rframe_decode(buf, 4, &out, &why), STRATA_ERR_REMOTE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_roundtrip),
        cmocka_unit_test(test_hello_rejects),
        cmocka_unit_test(test_ack_roundtrip_and_rejects),
        cmocka_unit_test(test_hdr_roundtrip),
        cmocka_unit_test(test_hdr_rejects),
        cmocka_unit_test(test_stripe_unstriped),
        cmocka_unit_test(test_stripe_examples),
        cmocka_unit_test(test_stripe_cover_property),
        cmocka_unit_test(test_part_locate_mask),
        cmocka_unit_test(test_ctl_frames),
        cmocka_unit_test(test_rframes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
