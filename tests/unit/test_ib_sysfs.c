/*
 * The ib transport's host-side logic on a fixture sysfs tree made in a
 * temporary directory: GID table reading and the automatic GID choice, the
 * link-local fallback, PCI path folding, peer-memory detection, speed
 * derivation, the address-family and range parsing, and the STRATA_IB_HCA
 * filter as device discovery applies it. No RDMA needed.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "transport/ib/ib_gid.h"
#include "transport/ib/ib_sysfs.h"
#include "util/name_filter.h"

static char root[PATH_MAX];

static void mkpath(const char *rel)
{
    char path[PATH_MAX * 2], *p;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (p = path + strlen(root) + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
        *p = '/';
    }
    assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void put(const char *rel, const char *text)
{
    char path[PATH_MAX * 2], dir[PATH_MAX];

    snprintf(dir, sizeof(dir), "%s", rel);
    char *slash = strrchr(dir, '/');
    assert_non_null(slash);
    *slash = '\0';
    mkpath(dir);
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* One GID entry: the address and its type; type NULL leaves the type file absent. */
static void gid(const char *dev, int port, int i, const char *text, const char *type)
{
    char rel[256];

    snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%d/gids/%d", dev, port, i);
    put(rel, text);
    if (type != NULL) {
        snprintf(rel, sizeof(rel), "class/infiniband/%s/ports/%d/gid_attrs/types/%d", dev, port,
                 i);
        put(rel, type);
    }
}

static int rm_cb(const char *path)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
    return system(cmd);
}

static int setup(void **state)
{
    snprintf(root, sizeof(root), "/tmp/strata-ib-sysfs.XXXXXX");
    if (mkdtemp(root) == NULL)
        return -1;
    stt_ib_sysfs_set_root(root);
    /* A RoCE port like Soft-RoCE's: link-local v2, IPv4 v2, then unset entries. */
    gid("rxe0", 1, 0, "fe80:0000:0000:0000:2849:43ff:fe13:0bec\n", "RoCE v2\n");
    gid("rxe0", 1, 1, "0000:0000:0000:0000:0000:ffff:c000:0201\n", "RoCE v2\n");
    gid("rxe0", 1, 2, "0000:0000:0000:0000:0000:0000:0000:0000\n", NULL);
    /* A mlx5-like port: v1 and v2 of each address, an IPv6 global, a second IPv4. */
    gid("mlx5_0", 1, 0, "fe80:0000:0000:0000:0e42:a1ff:fe00:0001\n", "IB/RoCE v1\n");
    gid("mlx5_0", 1, 1, "fe80:0000:0000:0000:0e42:a1ff:fe00:0001\n", "RoCE v2\n");
    gid("mlx5_0", 1, 2, "0000:0000:0000:0000:0000:ffff:0a00:0005\n", "IB/RoCE v1\n");
    gid("mlx5_0", 1, 3, "0000:0000:0000:0000:0000:ffff:0a00:0005\n", "RoCE v2\n");
    gid("mlx5_0", 1, 4, "fd00:0000:0000:0000:0000:0000:0000:0042\n", "RoCE v2\n");
    gid("mlx5_0", 1, 5, "0000:0000:0000:0000:0000:ffff:c0a8:0107\n", "RoCE v2\n");
    gid("mlx5_0", 1, 6, "0000:0000:0000:0000:0000:ffff:c0a8:0108\n", NULL);  /* EINVAL-like */
    /* PCI: two functions of one card, and a device with no parent. */
    mkpath("devices/pci0000:00/0000:00:02.0/0000:3b:00.1/infiniband/mlx5_1");
    mkpath("devices/pci0000:00/0000:00:02.0/0000:3b:00.0/infiniband/mlx5_0");
    mkpath("class/infiniband/mlx5_1");
    char link[PATH_MAX * 2];
    snprintf(link, sizeof(link), "%s/class/infiniband/mlx5_0/device", root);
    if (symlink("../../../devices/pci0000:00/0000:00:02.0/0000:3b:00.0", link) != 0)
        return -1;
    snprintf(link, sizeof(link), "%s/class/infiniband/mlx5_1/device", root);
    if (symlink("../../../devices/pci0000:00/0000:00:02.0/0000:3b:00.1", link) != 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    stt_ib_sysfs_set_root(NULL);
    return rm_cb(root) == 0 ? 0 : -1;
}

static stt_ib_gid_pref_t pref(const char *family, const char *range)
{
    stt_ib_gid_pref_t p;
    assert_int_equal(stt_ib_gid_pref_parse(family, range, &p), STRATA_OK);
    return p;
}

static void test_table_read(void **state)
{
    stt_ib_gid_entry_t e[16];

    int n = stt_ib_gid_table_read("rxe0", 1, 8, e, 16);
    assert_int_equal(n, 2);                       /* the zero entry is skipped */
    assert_int_equal(e[0].index, 0);
    assert_int_equal(e[0].roce_version, 2);
    assert_int_equal(stt_ib_gid_family(e[1].raw), AF_INET);
    n = stt_ib_gid_table_read("mlx5_0", 1, 256, e, 16);
    assert_int_equal(n, 6);                       /* index 6 has no type: unusable */
    assert_int_equal(e[0].roce_version, 1);
    assert_int_equal(stt_ib_gid_table_read("nodev", 1, 8, e, 16), 0);
    assert_int_equal(stt_ib_gid_table_read("mlx5_0", 1, 3, e, 16), 3);   /* table length */
}

static int choose(const char *dev, const stt_ib_gid_pref_t *p)
{
    stt_ib_gid_entry_t e[16];
    int n = stt_ib_gid_table_read(dev, 1, 256, e, 16);
    int best = stt_ib_gid_choose(e, n, p);
    return best < 0 ? -1 : e[best].index;
}

static void test_choose(void **state)
{
    stt_ib_gid_pref_t v4 = pref("AF_INET", ""), v6 = pref("AF_INET6", "");
    stt_ib_gid_entry_t e[16];

    assert_int_equal(choose("rxe0", &v4), 1);     /* IPv4, RoCE v2 */
    assert_int_equal(choose("rxe0", &v6), 0);     /* only IPv6 there is link-local */
    assert_int_equal(choose("mlx5_0", &v4), 3);   /* v2 beats v1; lowest index on ties */
    assert_int_equal(choose("mlx5_0", &v6), 4);   /* global beats link-local */
    stt_ib_gid_pref_t r = pref("AF_INET", "192.168.1.0/24");
    assert_int_equal(choose("mlx5_0", &r), 5);    /* the subnet decides */
    r = pref("ipv4", "10.0.0.0/8");
    assert_int_equal(choose("mlx5_0", &r), 3);
    r = pref("AF_INET6", "fd00::/8");
    assert_int_equal(choose("mlx5_0", &r), 4);
    /* The link-local fallback prefers RoCE v2. */
    int n = stt_ib_gid_table_read("mlx5_0", 1, 256, e, 16);
    assert_int_equal(e[stt_ib_gid_link_local(e, n)].index, 1);
    n = stt_ib_gid_table_read("rxe0", 1, 256, e, 16);
    assert_int_equal(e[stt_ib_gid_link_local(e, n)].index, 0);
    assert_int_equal(stt_ib_gid_choose(e, 0, &v4), -1);
    assert_int_equal(stt_ib_gid_link_local(e, 0), -1);
}

static void test_pref_parse(void **state)
{
    stt_ib_gid_pref_t p;

    assert_int_equal(stt_ib_gid_pref_parse("", "", &p), STRATA_OK);
    assert_int_equal(p.family, AF_INET);
    assert_false(p.has_range);
    assert_int_equal(stt_ib_gid_pref_parse("AF_UNIX", "", &p), STRATA_ERR_INVALID);
    assert_int_equal(stt_ib_gid_pref_parse("AF_INET", "10.0.0.0", &p), STRATA_ERR_INVALID);
    assert_int_equal(stt_ib_gid_pref_parse("AF_INET", "10.0.0.0/33", &p), STRATA_ERR_INVALID);
    assert_int_equal(stt_ib_gid_pref_parse("AF_INET", "x/8", &p), STRATA_ERR_INVALID);
    assert_int_equal(stt_ib_gid_pref_parse("AF_INET", "10.0.0.0/", &p), STRATA_ERR_INVALID);
    assert_int_equal(stt_ib_gid_pref_parse("AF_INET6", "fd00::/129", &p), STRATA_ERR_INVALID);
    assert_int_equal(stt_ib_gid_pref_parse("AF_INET6", "fd00::/7", &p), STRATA_OK);
    assert_int_equal(p.range_family, AF_INET6);
    assert_int_equal(p.range_bits, 7);
}

static void test_format_and_scan(void **state)
{
    stt_ib_gid_entry_t e[4];
    stt_ib_gid_owner_t owners[32];
    char text[STT_IB_GID_STRLEN];

    stt_ib_gid_table_read("rxe0", 1, 2, e, 4);
    stt_ib_gid_format(e[1].raw, text, sizeof(text));
    assert_string_equal(text, "::ffff:192.0.2.1");
    int n = stt_ib_gid_local_scan(owners, 32);
    assert_int_equal(n, 8);                       /* rxe0: 2, mlx5_0: 6, mlx5_1: none */
}

static void test_pci_path(void **state)
{
    char path[256], want[PATH_MAX * 2];
    char real[PATH_MAX];

    assert_non_null(realpath(root, real));
    snprintf(want, sizeof(want), "%s/devices/pci0000:00/0000:00:02.0/0000:3b:00.0", real);
    stt_ib_sysfs_pci_path("mlx5_0", path, sizeof(path));
    assert_string_equal(path, want);
    stt_ib_sysfs_pci_path("mlx5_1", path, sizeof(path));   /* function 1 folds to 0 */
    assert_string_equal(path, want);
    stt_ib_sysfs_pci_path("rxe0", path, sizeof(path));     /* virtual */
    assert_string_equal(path, "");

    char p1[] = "/sys/devices/pci0000:00/0000:00:02.0/0000:3b:00.7";
    assert_true(stt_ib_pci_fold(p1));
    assert_string_equal(p1, "/sys/devices/pci0000:00/0000:00:02.0/0000:3b:00.0");
    char p2[] = "/sys/devices/virtual/net/veth0";
    assert_false(stt_ib_pci_fold(p2));
    assert_string_equal(p2, "/sys/devices/virtual/net/veth0");
    char p3[] = "/sys/devices/pci0000:00/0000:3B:00.1";      /* uppercase is not sysfs */
    assert_false(stt_ib_pci_fold(p3));
}

static void test_peermem(void **state)
{
    char rel[] = "module/nvidia_peermem/version";

    assert_false(stt_ib_sysfs_peermem());
    put(rel, "1.0\n");
    assert_true(stt_ib_sysfs_peermem());
    char path[PATH_MAX * 2];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    unlink(path);
    put("kernel/mm/memory_peers/nv_mem/version", "1.3\n");
    assert_true(stt_ib_sysfs_peermem());
    snprintf(path, sizeof(path), "%s/kernel/mm/memory_peers/nv_mem/version", root);
    unlink(path);
    assert_false(stt_ib_sysfs_peermem());
}

static void test_sysfs_read(void **state)
{
    char buf[64];
    int err = 0;

    put("class/infiniband/rxe0/node_guid", "2849:43ff:fe13:0bec\n");
    assert_int_equal(stt_ib_sysfs_read("class/infiniband/rxe0/node_guid", buf, sizeof(buf),
                                       &err), STRATA_OK);
    assert_string_equal(buf, "2849:43ff:fe13:0bec");
    assert_int_equal(stt_ib_sysfs_read("class/infiniband/rxe0/nothing", buf, sizeof(buf), &err),
                     STRATA_ERR_NOT_FOUND);
    assert_int_equal(err, ENOENT);
}

static void test_speed(void **state)
{
    assert_int_equal(stt_ib_speed_mbps(1, 1), 2500);        /* SDR 1x */
    assert_int_equal(stt_ib_speed_mbps(8, 1), 10000);       /* FDR10 1x: Soft-RoCE */
    assert_int_equal(stt_ib_speed_mbps(16, 2), 56000);      /* FDR 4x */
    assert_int_equal(stt_ib_speed_mbps(32, 2), 100000);     /* EDR 4x */
    assert_int_equal(stt_ib_speed_mbps(64, 2), 200000);     /* HDR 4x */
    assert_int_equal(stt_ib_speed_mbps(128, 2), 400000);    /* NDR 4x */
    assert_int_equal(stt_ib_speed_mbps(64, 16), 100000);    /* HDR 2x */
    assert_int_equal(stt_ib_speed_mbps(256, 2), 800000);    /* XDR 4x */
    assert_int_equal(stt_ib_speed_mbps(4, 8), 120000);      /* QDR 12x */
    assert_int_equal(stt_ib_speed_mbps(0, 1), 0);
    assert_int_equal(stt_ib_speed_mbps(3, 1), 0);           /* two bits: unknown */
    assert_int_equal(stt_ib_speed_mbps(1, 32), 0);
}

/* STRATA_IB_HCA as discovery applies it: per port (a device-wide entry covers every port). */
static void test_hca_filter(void **state)
{
    stu_name_filter_t f;

    assert_int_equal(stu_name_filter_parse("mlx5_0:1,mlx5_1", &f), STRATA_OK);
    assert_true(stu_name_filter_match(&f, "mlx5_0", 1));
    assert_false(stu_name_filter_match(&f, "mlx5_0", 2));
    assert_true(stu_name_filter_match(&f, "mlx5_1", 2));
    assert_true(stu_name_filter_match(&f, "mlx5_10", 1));   /* prefix */
    assert_false(stu_name_filter_match(&f, "rxe0", 1));
    assert_int_equal(stu_name_filter_parse("=mlx5_1", &f), STRATA_OK);
    assert_false(stu_name_filter_match(&f, "mlx5_10", 1));
    assert_int_equal(stu_name_filter_parse("^rxe1", &f), STRATA_OK);
    assert_true(stu_name_filter_match(&f, "rxe0", 1));
    assert_false(stu_name_filter_match(&f, "rxe1", 1));
    assert_false(stu_name_filter_match(&f, "rxe1", -1));
    assert_int_equal(stu_name_filter_parse("^=mlx5_0:2", &f), STRATA_OK);
    assert_true(stu_name_filter_match(&f, "mlx5_0", 1));
    assert_false(stu_name_filter_match(&f, "mlx5_0", 2));
    assert_int_equal(stu_name_filter_parse("mlx5_0:x", &f), STRATA_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_read),
        cmocka_unit_test(test_choose),
        cmocka_unit_test(test_pref_parse),
        cmocka_unit_test(test_format_and_scan),
        cmocka_unit_test(test_pci_path),
        cmocka_unit_test(test_peermem),
        cmocka_unit_test(test_sysfs_read),
        cmocka_unit_test(test_speed),
        cmocka_unit_test(test_hca_filter),
    };
    return cmocka_run_group_tests_name("ib_sysfs", tests, setup, teardown);
}
