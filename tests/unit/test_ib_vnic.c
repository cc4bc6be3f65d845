/*
 * Virtual NICs of the ib transport in pure logic: the striping plan (which QP,
 * and so which member port, carries which bytes), that the chunks reassemble
 * the message exactly, the FIFO slot of a fused receive (per-member rkeys
 * before the entries, one write), the v4 metadata with member ports (round
 * trip, rejections), and the device entry (order, properties, planes, link
 * layers) through the shared rules of transport/base/vdev.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "transport/base/vdev.h"
#include "transport/ib/ib_internal.h"
#include "transport/ib/ib_stripe.h"
#include "transport/ib/ib_wire.h"
#include "util/param.h"

/* Small messages go whole on QP rr % nqps: with QP q on member q % k, members take turns. */
static void stripe_round_robin(void **state)
{
    stt_ib_stripe_t s;

    for (int nqps = 1; nqps <= STT_IB_MAX_QPS; nqps++) {
        for (uint32_t rr = 0; rr < 20; rr++) {
            assert_false(stt_ib_stripe_plan(1000, nqps, 65536, rr, &s));
            int q = (int)(rr % (uint32_t)nqps);
            assert_int_equal(s.qmask, 1u << q);
            assert_int_equal(s.off[q], 0);
            assert_int_equal(s.len[q], 1000);
        }
    }
    /* A 0-byte send still names one QP (its immediate), with no payload. */
    assert_false(stt_ib_stripe_plan(0, 4, 0, 6, &s));
    assert_int_equal(s.qmask, 1u << 2);
    assert_int_equal(s.len[2], 0);
    /* One QP: never striped, whatever the size. */
    assert_false(stt_ib_stripe_plan(1u << 30, 1, 0, 3, &s));
    assert_int_equal(s.qmask, 1u);
}

/* Striped chunks are aligned, disjoint, in QP order and cover the message exactly once. */
static void stripe_reassembles(void **state)
{
    static const uint64_t sizes[] = {65536, 65537, 100000, 1u << 20, (4u << 20) + 9, 129, 128};
    stt_ib_stripe_t s;

    for (int nqps = 2; nqps <= STT_IB_MAX_QPS; nqps++) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            uint64_t bytes = sizes[i];
            assert_true(stt_ib_stripe_plan(bytes, nqps, 128, 0, &s));
            uint64_t next = 0;
            int carriers = 0;
            for (int q = 0; q < nqps; q++) {
                if (s.len[q] == 0) {
                    assert_false(s.qmask & (1u << q));
                    continue;
                }
                assert_true(s.qmask & (1u << q));
                assert_int_equal(s.off[q], next);           /* no gap, no overlap */
                assert_int_equal(s.off[q] % STT_IB_SPLIT_ALIGN, 0);
                next += s.len[q];
                carriers++;
            }
            assert_int_equal(next, bytes);                  /* every byte once */
            if (bytes >= (uint64_t)nqps * STT_IB_SPLIT_ALIGN)
                assert_int_equal(carriers, nqps);           /* every member has a share */
        }
    }
    /* Two members, one QP each: a 1 MiB message is split in halves, one per member. */
    assert_true(stt_ib_stripe_plan(1u << 20, 2, 65536, 0, &s));
    assert_int_equal(s.len[0], 1u << 19);
    assert_int_equal(s.len[1], 1u << 19);
    assert_int_equal(s.off[1], 1u << 19);
}

/* A fused receive's CTS: member rkeys before the entries, in one write ending at the last seq. */
static void fifo_member_keys(void **state)
{
    stt_ib_fifo_slot_t slot;
    char a[2][64];
    void *data[2] = {a[0], a[1]};
    size_t sizes[2] = {64, 32};
    int tags[2] = {4, 5};
    uint32_t rkeys[2][STT_IB_MAX_MEMBERS];
    int n = 0;
    const char *why = NULL;

    for (int i = 0; i < 2; i++)
        for (int j = 0; j < STT_IB_MAX_MEMBERS; j++)
            rkeys[i][j] = 0x1000u * (uint32_t)(i + 1) + (uint32_t)j;
    memset(&slot, 0xab, sizeof(slot));
    stt_ib_fifo_fill(&slot, 7, 2, data, sizes, tags, (const uint32_t(*)[STT_IB_MAX_MEMBERS])rkeys,
                     3);
    assert_int_equal(stt_ib_fifo_check(&slot, 7, &n, &why), STRATA_OK);
    assert_int_equal(n, 2);
    assert_int_equal(slot.e[1].rkey, 0x2000);               /* member 0's in the entry */
    assert_int_equal(slot.xkeys[1][2], 0x2002);
    assert_int_equal(slot.xkeys[0][1], 0x1001);
    assert_int_equal(slot.xkeys[0][3], 0);                  /* beyond the members: zero */
    /* One port writes the entries only; a virtual device the keys too, ending at e[n-1]. */
    assert_int_equal(stt_ib_fifo_write_off(1), offsetof(stt_ib_fifo_slot_t, e));
    assert_int_equal(stt_ib_fifo_write_len(1, 2), 2 * sizeof(stt_ib_fifo_entry_t));
    assert_int_equal(stt_ib_fifo_write_off(2), 0);
    size_t end = stt_ib_fifo_write_off(2) + stt_ib_fifo_write_len(2, 2);
    assert_int_equal(end, offsetof(stt_ib_fifo_slot_t, e) + 2 * sizeof(stt_ib_fifo_entry_t));
    assert_int_equal(end - sizeof(uint32_t),
                     offsetof(stt_ib_fifo_slot_t, e) + sizeof(stt_ib_fifo_entry_t) +
                         offsetof(stt_ib_fifo_entry_t, seq));      /* seq lands last */
}

static stt_ib_meta_t meta_fused(int k)
{
    stt_ib_meta_t m;

    memset(&m, 0, sizeof(m));
    m.kind = STT_IB_META_HELLO;
    m.nmembers = (uint8_t)k;
    m.nqps = (uint8_t)k;
    m.addr = 0x10000;
    for (int j = 0; j < k; j++) {
        m.qpn[j] = 0x40 + (uint32_t)j;
        m.m[j].link_layer = 2;
        m.m[j].mtu = (uint8_t)(1 + j % 5);
        m.m[j].port = (uint8_t)(1 + j);
        m.m[j].has_alt = 1;
        m.m[j].lid = (uint16_t)(0x100 + j);
        m.m[j].rkey = 0xabc00 + (uint32_t)j;
        for (int b = 0; b < 16; b++) {
            m.m[j].gid[b] = (uint8_t)(j * 16 + b);
            m.m[j].alt_gid[b] = (uint8_t)(0x80 + j * 16 + b);
        }
    }
    return m;
}

static void meta_members(void **state)
{
    uint8_t buf[STT_IB_META_BYTES];
    const char *why = NULL;

    for (int k = 1; k <= STT_IB_MAX_MEMBERS; k++) {
        stt_ib_meta_t in = meta_fused(k), out;
        stt_ib_meta_encode(&in, buf);
        assert_int_equal(stt_ib_meta_decode(buf, STT_IB_META_HELLO, &out, &why), STRATA_OK);
        assert_int_equal(out.nmembers, k);
        assert_int_equal(out.nqps, k);
        for (int j = 0; j < k; j++) {
            assert_int_equal(out.m[j].mtu, in.m[j].mtu);
            assert_int_equal(out.m[j].port, in.m[j].port);
            assert_int_equal(out.m[j].lid, in.m[j].lid);
            assert_int_equal(out.m[j].rkey, in.m[j].rkey);
            assert_memory_equal(out.m[j].gid, in.m[j].gid, 16);
            assert_memory_equal(out.m[j].alt_gid, in.m[j].alt_gid, 16);
        }
    }
    /* A member's bad MTU, or QPs that do not divide among the members, are refused. */
    stt_ib_meta_t m = meta_fused(3);
    m.m[2].mtu = 9;
    stt_ib_meta_encode(&m, buf);
    assert_int_equal(stt_ib_meta_decode(buf, STT_IB_META_HELLO, &m, &why), STRATA_ERR_REMOTE);
    m = meta_fused(3);
    m.nqps = 4;
    m.qpn[3] = 0x99;
    stt_ib_meta_encode(&m, buf);
    assert_int_equal(stt_ib_meta_decode(buf, STT_IB_META_HELLO, &m, &why), STRATA_ERR_REMOTE);
    assert_non_null(strstr(why, "multiple"));
    m = meta_fused(2);
    m.m[1].has_alt = 0;
    m.gid_choice = STT_IB_GID_ALT;
    stt_ib_meta_encode(&m, buf);
    assert_int_equal(stt_ib_meta_decode(buf, STT_IB_META_HELLO, &m, &why), STRATA_ERR_REMOTE);
}

/* A virtual device's immediate: the epoch in the top bits; sizes past 19 bits use the array. */
static void imm_epoch(void **state)
{
    stt_ib_imm_t in = {.slot = 17, .nqps = 3, .trunc = false, .sizes = false,
                       .size = STT_IB_IMM_SIZE_MAX_VNIC, .vnic = true, .epoch = 7}, out;
    uint32_t v = stt_ib_imm_encode(&in);

    stt_ib_imm_decode_as(v, true, &out);
    assert_int_equal(out.epoch, 7);
    assert_int_equal(out.size, STT_IB_IMM_SIZE_MAX_VNIC);
    assert_int_equal(out.slot, 17);
    assert_int_equal(out.nqps, 3);
    in.epoch = 0;
    stt_ib_imm_decode_as(stt_ib_imm_encode(&in), true, &out);
    assert_int_equal(out.epoch, 0);
    /* A comm on one port reads the same bits as a byte count, as before version 4. */
    in = (stt_ib_imm_t){.slot = 1, .nqps = 1, .size = STT_IB_IMM_SIZE_MAX};
    stt_ib_imm_decode(stt_ib_imm_encode(&in), &out);
    assert_int_equal(out.size, STT_IB_IMM_SIZE_MAX);
    assert_int_equal(out.epoch, 0);
    in = (stt_ib_imm_t){.slot = 2, .nqps = 2, .sizes = true, .vnic = true, .epoch = 3};
    stt_ib_imm_decode_as(stt_ib_imm_encode(&in), true, &out);
    assert_true(out.sizes);
    assert_int_equal(out.epoch, 3);
    assert_int_equal(out.size, 0);
}

/* Failover frames: round trip, and every malformed field refused. */
static void fo_frames(void **state)
{
    uint8_t buf[STT_IB_FO_BYTES];
    stt_ib_fo_frame_t in = {.type = STT_IB_FO_POS, .epoch = 2, .dead = 0x5, .next = 0xfffffff0u,
                            .open = 0x80000001u}, out;
    const char *why = NULL;

    stt_ib_fo_encode(&in, buf);
    assert_int_equal(stt_ib_fo_decode(buf, 4, &out, &why), STRATA_OK);
    assert_int_equal(out.type, STT_IB_FO_POS);
    assert_int_equal(out.epoch, 2);
    assert_int_equal(out.dead, 0x5);
    assert_int_equal(out.next, 0xfffffff0u);
    assert_int_equal(out.open, 0x80000001u);
    assert_int_equal(stt_ib_fo_decode(buf, 2, &out, &why), STRATA_ERR_REMOTE);  /* member 2 */
    assert_non_null(why);
    uint8_t bad[STT_IB_FO_BYTES];
    memcpy(bad, buf, sizeof(bad));
    bad[0] ^= 1;                                                              /* magic */
    assert_int_equal(stt_ib_fo_decode(bad, 4, &out, &why), STRATA_ERR_REMOTE);
    memcpy(bad, buf, sizeof(bad));
    bad[6] = 9;                                                               /* type */
    assert_int_equal(stt_ib_fo_decode(bad, 4, &out, &why), STRATA_ERR_REMOTE);
    memcpy(bad, buf, sizeof(bad));
    bad[7] = STT_IB_IMM_EPOCHS;                                               /* epoch */
    assert_int_equal(stt_ib_fo_decode(bad, 4, &out, &why), STRATA_ERR_REMOTE);
    memcpy(bad, buf, sizeof(bad));
    bad[8] = 0;                                                               /* no member */
    assert_int_equal(stt_ib_fo_decode(bad, 4, &out, &why), STRATA_ERR_REMOTE);
    in = (stt_ib_fo_frame_t){.type = STT_IB_FO_DOWN, .dead = 0x80};
    stt_ib_fo_encode(&in, buf);
    assert_int_equal(stt_ib_fo_decode(buf, 8, &out, &why), STRATA_OK);
}

/*
 * Which receives the sender replays after a POS: exactly the open ones among the
 * DEPTH receives before the receiver's next, across the wrap of the numbers.
 */
static void fo_open_window(void **state)
{
    static const uint32_t nexts[] = {0, 5, 32, 100, 0xfffffffeu, 3};
    for (size_t k = 0; k < sizeof(nexts) / sizeof(nexts[0]); k++) {
        uint32_t next = nexts[k], open = 0x0000f0f1u;
        for (uint32_t d = 0; d < 3 * STT_IB_FIFO_DEPTH; d++) {
            uint32_t seq = next - 2 * STT_IB_FIFO_DEPTH + d;
            bool in_window = d >= STT_IB_FIFO_DEPTH && d < 2 * STT_IB_FIFO_DEPTH;
            bool want = in_window && (open & (1u << (seq % STT_IB_FIFO_DEPTH)));
            assert_int_equal(stt_ib_fo_is_open(next, open, seq), want);
        }
    }
    /* Everything open: every receive the sender can have matched is replayed. */
    for (uint32_t seq = 100 - STT_IB_FIFO_DEPTH; seq != 100; seq++)
        assert_true(stt_ib_fo_is_open(100, 0xffffffffu, seq));
    assert_false(stt_ib_fo_is_open(100, 0xffffffffu, 100));
}

/* ------------------------------------------------------------------ device entries */

static stt_ib_ctx_t fake_ctx[3];
static stt_ib_dev_t fake_port[4];

/* Ports: mlx5_1:1, mlx5_0:2, mlx5_0:1, rxe9:1 (plane 1), in that table order. */
static void fake_table(stt_ib_dev_t *table)
{
    static const char *names[3] = {"mlx5_0", "mlx5_1", "rxe9"};
    static const int ctx_of[4] = {1, 0, 0, 2}, port_of[4] = {1, 2, 1, 1};

    for (int c = 0; c < 3; c++)
        snprintf(fake_ctx[c].name, sizeof(fake_ctx[c].name), "%s", names[c]);
    for (int i = 0; i < 4; i++) {
        stt_ib_dev_t *d = &fake_port[i];
        memset(d, 0, sizeof(*d));
        d->ctx = &fake_ctx[ctx_of[i]];
        d->port = port_of[i];
        d->link_layer = IBV_LINK_LAYER_INFINIBAND;
        d->plane = i == 3 ? 1 : -1;
        d->nmembers = 1;
        d->member[0] = d;
        snprintf(d->props.name, sizeof(d->props.name), "%s", d->ctx->name);
        d->props.port = d->port;
        d->props.speed_mbps = 100000 * (i + 1);
        d->props.max_comms = 1000 - i;
        d->props.max_recvs = STT_MAX_RECVS;
        d->props.ptr_support = STT_PTR_HOST | STT_PTR_CUDA;
        d->props.max_p2p_bytes = 1u << 30;
        d->props.max_coll_bytes = 1u << 29;
        d->props.guid = 0x1000 + (uint64_t)i;
        table[i] = *d;
    }
}

static void vdev_entry(void **state)
{
    stt_ib_dev_t table[4], v, w;
    int asked[3] = {0, 1, 2}, reverse[3] = {2, 1, 0};

    fake_table(table);
    assert_int_equal(stt_ib_vdev_fill(table, 4, asked, 3, &v), STRATA_OK);
    assert_int_equal(v.nmembers, 3);
    assert_ptr_equal(v.member[0], &fake_port[2]);     /* mlx5_0:1 */
    assert_ptr_equal(v.member[1], &fake_port[1]);     /* mlx5_0:2 */
    assert_ptr_equal(v.member[2], &fake_port[0]);     /* mlx5_1:1 */
    assert_string_equal(v.props.name, "mlx5_0+mlx5_0+mlx5_1");
    assert_int_equal(v.props.speed_mbps, 600000);
    assert_int_equal(v.props.max_comms, 998);
    assert_int_equal(v.port, 1);                      /* member 0 speaks for the device */
    assert_ptr_equal(v.ctx, &fake_ctx[0]);
    assert_string_equal(v.props.pci_path, "");
    assert_int_equal(stt_ib_vdev_fill(table, 4, reverse, 3, &w), STRATA_OK);
    assert_memory_equal(v.member, w.member, sizeof(v.member));   /* any asking order */
    assert_int_equal(v.props.guid, w.props.guid);
    /* Refusals: planes, link layers, duplicates, one member, out of range, a vdev member. */
    int planes[2] = {0, 3}, dup[2] = {1, 1}, range[2] = {0, 4};
    assert_int_equal(stt_ib_vdev_fill(table, 4, planes, 2, &w), STRATA_ERR_UNSUPPORTED);
    table[1].link_layer = IBV_LINK_LAYER_ETHERNET;
    assert_int_equal(stt_ib_vdev_fill(table, 4, asked, 2, &w), STRATA_ERR_UNSUPPORTED);
    table[1].link_layer = IBV_LINK_LAYER_INFINIBAND;
    assert_int_equal(stt_ib_vdev_fill(table, 4, dup, 2, &w), STRATA_ERR_INVALID);
    assert_int_equal(stt_ib_vdev_fill(table, 4, asked, 1, &w), STRATA_ERR_INVALID);
    assert_int_equal(stt_ib_vdev_fill(table, 4, range, 2, &w), STRATA_ERR_INVALID);
    table[0] = v;
    assert_int_equal(stt_ib_vdev_fill(table, 4, asked + 0, 2, &w), STRATA_ERR_INVALID);
}

/* STRATA_NET_FUSE at discovery: "all" needs one plane; a group takes its first member's place. */
static void vdev_force(void **state)
{
    stt_ib_dev_t table[4];
    int count = 4;

    fake_table(table);
    setenv("STRATA_NET_FUSE", "all", 1);
    stu_param_reload();
    stt_ib_vdev_force(table, &count);
    assert_int_equal(count, 4);                       /* rxe9 is on another plane: unfused */
    setenv("STRATA_NET_FUSE", "mlx5_1,rxe8", 1);
    stu_param_reload();
    stt_ib_vdev_force(table, &count);
    assert_int_equal(count, 4);                       /* rxe8 is not here */
    setenv("STRATA_NET_FUSE", "mlx5_1,rxe9", 1);
    stu_param_reload();
    stt_ib_vdev_force(table, &count);
    assert_int_equal(count, 4);                       /* different planes */
    fake_port[3].plane = -1;
    table[3].plane = -1;
    stt_ib_vdev_force(table, &count);
    assert_int_equal(count, 3);
    assert_int_equal(table[0].nmembers, 2);           /* in mlx5_1's place, the first */
    assert_string_equal(table[0].props.name, "mlx5_1+rxe9");
    assert_int_equal(table[1].nmembers, 1);
    assert_int_equal(table[2].nmembers, 1);
    unsetenv("STRATA_NET_FUSE");
    stu_param_reload();
}

/* The shared rules, as tcp sees them too: names order, ports break ties. */
static void vdev_base_rules(void **state)
{
    stt_props_t p[3];
    stt_vdev_dev_t list[3];
    int m[3] = {0, 1, 2};

    memset(p, 0, sizeof(p));
    static const char *names[3] = {"eth2", "eth10", "eth2"};
    for (int i = 0; i < 3; i++) {
        snprintf(p[i].name, sizeof(p[i].name), "%s", names[i]);
        p[i].speed_mbps = 10;
        p[i].max_comms = 5;
        p[i].max_recvs = 8;
        p[i].latency_us = (float)i;
        list[i] = (stt_vdev_dev_t){.name = names[i], .port = 3 - i, .props = &p[i],
                                   .nmembers = 1};
    }
    stt_vdev_order(list, m, 3);
    assert_int_equal(m[0], 1);                        /* "eth10" < "eth2" */
    assert_int_equal(m[1], 2);                        /* eth2 port 1 before port 3 */
    assert_int_equal(m[2], 0);
    stt_props_t out;
    stt_vdev_props(list, m, 3, &out);
    assert_string_equal(out.name, "eth10+eth2+eth2");
    assert_int_equal(out.speed_mbps, 30);
    assert_true(out.latency_us == 2.0f);
    assert_int_equal(stt_vdev_check("t", list, 3, m, 3), STRATA_OK);
    list[1].nmembers = 2;
    assert_int_equal(stt_vdev_check("t", list, 3, m, 3), STRATA_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stripe_round_robin),
        cmocka_unit_test(stripe_reassembles),
        cmocka_unit_test(fifo_member_keys),
        cmocka_unit_test(meta_members),
        cmocka_unit_test(imm_epoch),
        cmocka_unit_test(fo_frames),
        cmocka_unit_test(fo_open_window),
        cmocka_unit_test(vdev_entry),
        cmocka_unit_test(vdev_force),
        cmocka_unit_test(vdev_base_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
