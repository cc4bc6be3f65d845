/*
 * The ib transport's wire formats, without RDMA: FIFO entries (fill, and the
 * sender's check of what arrived, including torn and malicious slots), the
 * immediate encoding, the connection metadata (round trip and rejection
 * of every malformed field), and the RTR attributes for InfiniBand (LID
 * routed) and RoCE (GRH) ports.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "transport/ib/ib_internal.h"
#include "transport/ib/ib_wire.h"

static void test_fifo_fill_check(void **state)
{
    stt_ib_fifo_slot_t slot;
    char a[3][16];
    void *data[3] = {a[0], a[1], NULL};
    size_t sizes[3] = {16, 8, 0};
    int tags[3] = {7, -1, 3};
    uint32_t rkeys[3][STT_IB_MAX_MEMBERS] = {{0x11}, {0x22}, {0}};
    int n = 0;
    const char *why = NULL;

    memset(&slot, 0, sizeof(slot));
    assert_int_equal(stt_ib_fifo_check(&slot, 0, &n, &why), STRATA_INPROGRESS);  /* zeroed */
    stt_ib_fifo_fill(&slot, 41, 3, data, sizes, tags, rkeys, 1);
    assert_int_equal(slot.e[0].seq, 42);
    assert_int_equal(slot.e[1].tag, -1);
    assert_int_equal(slot.e[2].index, 2);
    assert_int_equal(slot.e[0].addr, (uint64_t)(uintptr_t)a[0]);
    assert_int_equal(stt_ib_fifo_check(&slot, 41, &n, &why), STRATA_OK);
    assert_int_equal(n, 3);
    /* The slot of receive 41 - 32 is not this one. */
    assert_int_equal(stt_ib_fifo_check(&slot, 41 + STT_IB_FIFO_DEPTH, &n, &why),
                     STRATA_INPROGRESS);
    /* A later entry not arrived yet. */
    slot.e[2].seq = 10;
    assert_int_equal(stt_ib_fifo_check(&slot, 41, &n, &why), STRATA_INPROGRESS);
    slot.e[2].seq = 42;
}

static void test_fifo_reject(void **state)
{
    stt_ib_fifo_slot_t slot, bad;
    char a[8];
    void *data[2] = {a, a};
    size_t sizes[2] = {8, 8};
    int tags[2] = {0, 1};
    uint32_t rkeys[2][STT_IB_MAX_MEMBERS] = {{1}, {1}};
    int n;
    const char *why;

    stt_ib_fifo_fill(&slot, 0, 2, data, sizes, tags, rkeys, 1);
    bad = slot;
    bad.e[0].n = 0;
    assert_int_equal(stt_ib_fifo_check(&bad, 0, &n, &why), STRATA_ERR_REMOTE);
    bad = slot;
    bad.e[0].n = STT_MAX_RECVS + 1;
    assert_int_equal(stt_ib_fifo_check(&bad, 0, &n, &why), STRATA_ERR_REMOTE);
    bad = slot;
    bad.e[1].n = 1;
    assert_int_equal(stt_ib_fifo_check(&bad, 0, &n, &why), STRATA_ERR_REMOTE);
    bad = slot;
    bad.e[1].index = 0;
    assert_int_equal(stt_ib_fifo_check(&bad, 0, &n, &why), STRATA_ERR_REMOTE);
    bad = slot;
    bad.e[1].addr = 0;
    assert_int_equal(stt_ib_fifo_check(&bad, 0, &n, &why), STRATA_ERR_REMOTE);
    bad = slot;
    bad.e[1].addr = UINT64_MAX - 2;
    assert_int_equal(stt_ib_fifo_check(&bad, 0, &n, &why), STRATA_ERR_REMOTE);
    assert_non_null(why);
}

static void test_imm(void **state)
{
    stt_ib_imm_t in = {.slot = 31, .nqps = 8, .trunc = true, .sizes = false,
                       .size = STT_IB_IMM_SIZE_MAX}, out;

    stt_ib_imm_decode(stt_ib_imm_encode(&in), &out);
    assert_int_equal(out.slot, 31);
    assert_int_equal(out.nqps, 8);
    assert_true(out.trunc);
    assert_false(out.sizes);
    assert_int_equal(out.size, STT_IB_IMM_SIZE_MAX);
    in = (stt_ib_imm_t){.slot = 0, .nqps = 1, .trunc = false, .sizes = true, .size = 12345};
    stt_ib_imm_decode(stt_ib_imm_encode(&in), &out);
    assert_int_equal(out.nqps, 1);
    assert_true(out.sizes);
    assert_int_equal(out.size, 0);                 /* ignored with SIZES */
    in = (stt_ib_imm_t){.slot = 5, .nqps = 3, .size = 0};
    assert_int_equal(stt_ib_imm_encode(&in), 5u | (2u << 5));
}

static stt_ib_meta_t meta_sample(void)
{
    stt_ib_meta_t m;

    memset(&m, 0, sizeof(m));
    m.kind = STT_IB_META_HELLO;
    m.nqps = 4;
    m.nmembers = 1;
    m.m[0].link_layer = 2;
    m.m[0].mtu = 3;
    m.m[0].port = 1;
    m.m[0].has_alt = 1;
    m.tc = 106;
    m.m[0].lid = 0x1234;
    m.listener_id = 0x0102030405060708ull;
    m.conn_id = 0xfffefdfcfbfaf9f8ull;
    for (int i = 0; i < 16; i++) {
        m.m[0].gid[i] = (uint8_t)i;
        m.m[0].alt_gid[i] = (uint8_t)(0xf0 + i);
    }
    m.addr = 0x7fff00001000ull;
    m.m[0].rkey = 0xdeadbeef;
    for (int i = 0; i < 4; i++)
        m.qpn[i] = 0x100 + (uint32_t)i;
    for (int i = 0; i < STT_HANDLE_SECRET_BYTES; i++)
        m.secret[i] = (uint8_t)(0x30 + 7 * i);
    return m;
}

static void test_meta_roundtrip(void **state)
{
    stt_ib_meta_t in = meta_sample(), out;
    uint8_t buf[STT_IB_META_BYTES];
    const char *why = NULL;

    stt_ib_meta_encode(&in, buf);
    assert_int_equal(buf[0], 'S');                  /* magic bytes "STIB" */
    assert_int_equal(buf[3], 'B');
    assert_int_equal(stt_ib_meta_decode(buf, STT_IB_META_HELLO, &out, &why), STRATA_OK);
    assert_int_equal(out.nqps, 4);
    assert_int_equal(out.nmembers, 1);
    assert_int_equal(out.m[0].lid, 0x1234);
    assert_int_equal(out.listener_id, in.listener_id);
    assert_int_equal(out.conn_id, in.conn_id);
    assert_memory_equal(out.m[0].gid, in.m[0].gid, 16);
    assert_memory_equal(out.m[0].alt_gid, in.m[0].alt_gid, 16);
    assert_int_equal(out.addr, in.addr);
    assert_int_equal(out.m[0].rkey, in.m[0].rkey);
    assert_int_equal(buf[8], 2);                    /* member 0 at version 3's offsets */
    assert_int_equal(buf[132], 1);                  /* the member count */
    assert_int_equal(out.qpn[3], 0x103);
    assert_memory_equal(out.secret, in.secret, STT_HANDLE_SECRET_BYTES);
    assert_memory_equal(buf + 116, in.secret, STT_HANDLE_SECRET_BYTES);   /* its offset */
    assert_int_equal(out.tc, 106);
    /* Wrong kind for this step of the handshake. */
    assert_int_equal(stt_ib_meta_decode(buf, STT_IB_META_REPLY, &out, &why), STRATA_ERR_REMOTE);
    /* READY carries no QPs and needs none. */
    stt_ib_meta_t ready;
    memset(&ready, 0, sizeof(ready));
    ready.kind = STT_IB_META_READY;
    ready.conn_id = 9;
    stt_ib_meta_encode(&ready, buf);
    assert_int_equal(stt_ib_meta_decode(buf, STT_IB_META_READY, &out, &why), STRATA_OK);
    assert_int_equal(out.conn_id, 9);
}

static void meta_expect_bad(stt_ib_meta_t m, int byte, uint8_t value)
{
    uint8_t buf[STT_IB_META_BYTES];
    stt_ib_meta_t out;
    const char *why = NULL;

    stt_ib_meta_encode(&m, buf);
    if (byte >= 0)
        buf[byte] = value;
    assert_int_equal(stt_ib_meta_decode(buf, m.kind, &out, &why), STRATA_ERR_REMOTE);
    assert_non_null(why);
}

static void test_meta_reject(void **state)
{
    stt_ib_meta_t m = meta_sample();

    meta_expect_bad(m, 0, 'X');                      /* magic */
    meta_expect_bad(m, 4, 9);                        /* version */
    meta_expect_bad(m, 16, 0x04 ^ 0xff);             /* byte order */
    meta_expect_bad(m, 7, 0);                        /* 0 QPs */
    meta_expect_bad(m, 7, STT_IB_MAX_QPS + 1);
    meta_expect_bad(m, 9, 0);                        /* MTU code */
    meta_expect_bad(m, 9, 6);
    meta_expect_bad(m, 11, 2);                       /* has_alt flag */
    meta_expect_bad(m, 132, 0);                      /* member count */
    meta_expect_bad(m, 132, STT_IB_MAX_MEMBERS + 1);
    meta_expect_bad(m, 132, 3);                      /* 4 QPs over 3 members */
    m.m[0].has_alt = 0;
    m.gid_choice = STT_IB_GID_ALT;                   /* alt chosen but none sent */
    meta_expect_bad(m, -1, 0);
    m = meta_sample();
    m.addr = 0;
    meta_expect_bad(m, -1, 0);
    m = meta_sample();
    m.qpn[2] = 0;
    meta_expect_bad(m, -1, 0);
    m = meta_sample();
    m.qpn[0] = 0x1000000;                            /* 25 bits */
    meta_expect_bad(m, -1, 0);
}

/* The address vector a QP gets at RTR: LID on InfiniBand, GRH + GID on RoCE. */
static void test_rtr_attr(void **state)
{
    stt_ib_dev_t d;
    stt_ib_meta_port_t remote;
    struct ibv_qp_attr a;
    uint8_t dgid[16];

    memset(&d, 0, sizeof(d));
    memset(&remote, 0, sizeof(remote));
    for (int i = 0; i < 16; i++)
        dgid[i] = (uint8_t)(0xf0 + i);
    d.port = 2;
    d.mtu = IBV_MTU_4096;
    d.link_layer = IBV_LINK_LAYER_INFINIBAND;
    remote.mtu = IBV_MTU_2048;
    remote.lid = 0x1234;

    stt_ib_qp_rtr_attr(&d, 3, 106, 0xabcd, &remote, 5, dgid, &a);
    assert_int_equal(a.qp_state, IBV_QPS_RTR);
    assert_int_equal(a.path_mtu, IBV_MTU_2048);           /* the smaller of both ends */
    assert_int_equal(a.dest_qp_num, 0xabcd);
    assert_int_equal(a.ah_attr.is_global, 0);
    assert_int_equal(a.ah_attr.dlid, 0x1234);
    assert_int_equal(a.ah_attr.sl, 3);
    assert_int_equal(a.ah_attr.port_num, 2);
    assert_int_equal(a.max_dest_rd_atomic, 1);            /* room for the flush read */

    d.link_layer = IBV_LINK_LAYER_ETHERNET;
    remote.mtu = IBV_MTU_4096;
    d.mtu = IBV_MTU_1024;
    stt_ib_qp_rtr_attr(&d, 0, 106, 7, &remote, 5, dgid, &a);
    assert_int_equal(a.path_mtu, IBV_MTU_1024);
    assert_int_equal(a.ah_attr.is_global, 1);
    assert_int_equal(a.ah_attr.dlid, 0);
    assert_int_equal(a.ah_attr.grh.sgid_index, 5);
    assert_int_equal(a.ah_attr.grh.traffic_class, 106);
    assert_int_equal(a.ah_attr.grh.hop_limit, 255);
    assert_memory_equal(a.ah_attr.grh.dgid.raw, dgid, 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_fill_check),
        cmocka_unit_test(test_fifo_reject),
        cmocka_unit_test(test_imm),
        cmocka_unit_test(test_meta_roundtrip),
        cmocka_unit_test(test_meta_reject),
        cmocka_unit_test(test_rtr_attr),
    };
    return cmocka_run_group_tests_name("ib_proto", tests, NULL, NULL);
}
