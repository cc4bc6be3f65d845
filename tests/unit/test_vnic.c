/*
 * Virtual NICs in pure logic: rotated messages (which socket carries a whole
 * payload), the vNIC member list in a tcp handle, the tcp virtual device's
 * entry (member order, summed speed, refusals), and STRATA_NET_FUSE's syntax.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "transport/tcp/tcp_internal.h"
#include "util/fuse.h"
#include "util/sock.h"

/* A rotated payload travels whole on socket seq % nsocks; every other socket carries nothing. */
static void rotate_socket(void **state)
{
    for (int n = 1; n <= STT_TCP_MAX_SOCKS; n++) {
        for (uint32_t seq = 0; seq < 20; seq++) {
            int carriers = 0;
            for (int j = 0; j < n; j++) {
                uint64_t off, len;
                stt_tcp_stripe_locate(50000, STT_TCP_HDR_ROTATED, seq, n, j, &off, &len);
                assert_true(off == 0);
                if (len != 0) {
                    assert_true(len == 50000);
                    assert_int_equal(j, (int)(seq % (uint32_t)n));
                    carriers++;
                }
            }
            assert_int_equal(carriers, 1);
        }
    }
}

/* A literal address with a port, through the one address parser (util/sock.h). */
static stt_netif_addr_t addr_of(const char *ip, int port)
{
    stu_addr_t a;
    stt_netif_addr_t out;

    assert_int_equal(stu_addr_make(ip, port, &a), STRATA_OK);
    memset(&out, 0, sizeof(out));
    memcpy(&out, &a.ss, a.len < sizeof(out) ? a.len : sizeof(out));
    return out;
}

static void vnic_handle_roundtrip(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE];
    stt_tcp_vnic_t in = {.n = STT_MAX_VDEV_MEMBERS}, out;
    const char *why = NULL;

    for (int i = 0; i < in.n; i++) {
        char ip[32];
        snprintf(ip, sizeof(ip), "198.51.%d.%d", 100 + i, 7 + i);
        in.addr[i] = addr_of(ip, 40000 + i);
    }
    memset(handle, 0, sizeof(handle));
    assert_int_equal(stt_tcp_vnic_encode(&in, handle), STRATA_OK);
    /* nothing written into the connect slot */
    for (int i = STT_CONNSLOT_OFFSET; i < STT_HANDLE_SIZE; i++)
        assert_int_equal(handle[i], 0);
    assert_int_equal(stt_tcp_vnic_decode(handle, &in.addr[0], &out, &why), STRATA_OK);
    assert_int_equal(out.n, in.n);
    for (int i = 0; i < in.n; i++)
        assert_memory_equal(&out.addr[i].in4, &in.addr[i].in4, sizeof(struct sockaddr_in));

    /* A plain device's handle (zeroes there) is one member. */
    memset(handle, 0, sizeof(handle));
    assert_int_equal(stt_tcp_vnic_decode(handle, &in.addr[0], &out, &why), STRATA_OK);
    assert_int_equal(out.n, 1);

    /* IPv6: four members fit, five do not; families never mix. */
    stt_tcp_vnic_t v6 = {.n = STT_TCP_VNIC_MAX_IN6};
    for (int i = 0; i < v6.n; i++)
        v6.addr[i] = addr_of(i % 2 ? "fd00::2" : "2001:db8::1", 5000 + i);
    memset(handle, 0, sizeof(handle));
    assert_int_equal(stt_tcp_vnic_encode(&v6, handle), STRATA_OK);
    assert_int_equal(stt_tcp_vnic_decode(handle, &v6.addr[0], &out, &why), STRATA_OK);
    assert_int_equal(out.n, v6.n);
    assert_memory_equal(&out.addr[3].in6, &v6.addr[3].in6, sizeof(struct sockaddr_in6));
    v6.n = STT_TCP_VNIC_MAX_IN6 + 1;
    v6.addr[v6.n - 1] = addr_of("fd00::9", 1);
    assert_int_equal(stt_tcp_vnic_encode(&v6, handle), STRATA_ERR_INVALID);
    in.n = 2;
    in.addr[1] = addr_of("fd00::9", 1);
    assert_int_equal(stt_tcp_vnic_encode(&in, handle), STRATA_ERR_INVALID);

    /* Bytes a peer could send: too many members, a family other than member 0's. */
    memset(handle, 0, sizeof(handle));
    handle[STT_TCP_VNIC_OFFSET] = STT_MAX_VDEV_MEMBERS + 1;
    handle[STT_TCP_VNIC_OFFSET + 1] = 4;
    why = NULL;
    assert_int_equal(stt_tcp_vnic_decode(handle, &in.addr[0], &out, &why), STRATA_ERR_REMOTE);
    assert_non_null(why);
    handle[STT_TCP_VNIC_OFFSET] = 2;
    handle[STT_TCP_VNIC_OFFSET + 1] = 6;
    assert_int_equal(stt_tcp_vnic_decode(handle, &in.addr[0], &out, &why), STRATA_ERR_REMOTE);
}

static void dev_make(stt_tcp_dev_t *d, const char *name, const char *ip, int speed)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", name);
    d->addr = addr_of(ip, 0);
    d->nmembers = 1;
    d->member_addr[0] = d->addr;
    snprintf(d->props.name, sizeof(d->props.name), "%s", name);
    d->props.speed_mbps = speed;
    d->props.guid = (uint64_t)speed * 77;
    d->props.max_comms = 1000;
    d->props.max_recvs = 8;
    d->props.latency_us = 5.0f;
}

static void vdev_entry(void **state)
{
    stt_tcp_dev_t t[4], v, w;
    dev_make(&t[0], "veth1", "203.0.113.1", 1000);
    dev_make(&t[1], "veth0", "198.51.100.1", 1000);
    dev_make(&t[2], "eth9", "fd00::1", 25000);
    dev_make(&t[3], "veth2", "198.18.0.1", 2000);

    /* Members are ordered by name, whatever order they were asked in. */
    int a[] = {0, 1}, b[] = {1, 0};
    assert_int_equal(stt_tcp_vdev_fill(t, 4, a, 2, &v), STRATA_OK);
    assert_int_equal(stt_tcp_vdev_fill(t, 4, b, 2, &w), STRATA_OK);
    assert_memory_equal(&v, &w, sizeof(v));
    assert_string_equal(v.props.name, "veth0+veth1");
    assert_int_equal(v.nmembers, 2);
    assert_int_equal(v.members[0], 1);
    assert_int_equal(v.members[1], 0);
    assert_memory_equal(&v.addr, &t[1].addr, sizeof(v.addr));
    assert_memory_equal(&v.member_addr[1], &t[0].addr, sizeof(v.addr));
    assert_int_equal(v.props.speed_mbps, 2000);
    assert_true(v.props.guid != t[0].props.guid && v.props.guid != t[1].props.guid);

    int three[] = {3, 0, 1};
    assert_int_equal(stt_tcp_vdev_fill(t, 4, three, 3, &v), STRATA_OK);
    assert_string_equal(v.props.name, "veth0+veth1+veth2");
    assert_int_equal(v.props.speed_mbps, 4000);

    /* Refusals: one member, a duplicate, a device out of range, mixed families, a vdev. */
    int one[] = {0}, dup[] = {0, 0}, out[] = {0, 4}, mixed[] = {0, 2};
    assert_int_equal(stt_tcp_vdev_fill(t, 4, one, 1, &v), STRATA_ERR_INVALID);
    assert_int_equal(stt_tcp_vdev_fill(t, 4, dup, 2, &v), STRATA_ERR_INVALID);
    assert_int_equal(stt_tcp_vdev_fill(t, 4, out, 2, &v), STRATA_ERR_INVALID);
    assert_int_equal(stt_tcp_vdev_fill(t, 4, mixed, 2, &v), STRATA_ERR_UNSUPPORTED);
    assert_int_equal(stt_tcp_vdev_fill(t, 4, a, 2, &v), STRATA_OK);
    t[3] = v;
    int nested[] = {2, 3};
    assert_int_equal(stt_tcp_vdev_fill(t, 4, nested, 2, &w), STRATA_ERR_INVALID);
}

static void fuse_syntax(void **state)
{
    stu_fuse_t f;
    char why[128];

    assert_int_equal(stu_fuse_parse(NULL, &f, why, sizeof(why)), STRATA_OK);
    assert_int_equal(f.mode, STU_FUSE_AUTO);
    assert_int_equal(stu_fuse_parse("auto", &f, why, sizeof(why)), STRATA_OK);
    assert_int_equal(f.mode, STU_FUSE_AUTO);
    assert_int_equal(stu_fuse_parse("off", &f, why, sizeof(why)), STRATA_OK);
    assert_int_equal(f.mode, STU_FUSE_OFF);
    assert_int_equal(stu_fuse_parse("all", &f, why, sizeof(why)), STRATA_OK);
    assert_int_equal(f.mode, STU_FUSE_ALL);
    assert_int_equal(stu_fuse_parse("eth1,eth2;ib0,ib1,ib2", &f, why, sizeof(why)), STRATA_OK);
    assert_int_equal(f.mode, STU_FUSE_GROUPS);
    assert_int_equal(f.ngroups, 2);
    assert_int_equal(f.nnames[1], 3);
    assert_string_equal(f.names[1][2], "ib2");
    assert_int_equal(stu_fuse_group_of(&f, "ib1"), 1);
    assert_int_equal(stu_fuse_group_of(&f, "eth1"), 0);
    assert_int_equal(stu_fuse_group_of(&f, "eth3"), -1);

    static const char *const bad[] = {
        "eth1", "eth1,", ",eth1", "eth1,eth1", "eth1,eth2;eth2,eth3", "eth1,eth2;",
        "a,b,c,d,e,f,g,h,i", "a,b;c,d;e,f;g,h;i,j;k,l;m,n;o,p;q,r",
        "0123456789012345678901234567890123456789012345678901234567890123,x",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        f.mode = STU_FUSE_OFF;
        why[0] = '\0';
        if (stu_fuse_parse(bad[i], &f, why, sizeof(why)) != STRATA_ERR_INVALID)
            fail_msg("'%s' was accepted", bad[i]);
        assert_true(why[0] != '\0');
        assert_int_equal(f.mode, STU_FUSE_OFF);   /* unchanged on failure */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rotate_socket),
        cmocka_unit_test(vnic_handle_roundtrip),
        cmocka_unit_test(vdev_entry),
        cmocka_unit_test(fuse_syntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
