/*
 * Virtual devices of the ucx transport inside one emulated node with two rails
 * (tools/lib/tool_netns.h: veth0 and veth1, each on its own subnet), where
 * STRATA_NET_FUSE=all fuses them into "veth0+veth1":
 *
 *   - the transport conformance suite (test_conformance, _conn, _tags) passes with
 *     every transport's device 0 fused (tcp's and ucx's), run inside the node;
 *   - over ucx's fused device: every size from 0 B to 24 MiB arrives intact (striped
 *     above STRATA_SOCKET_STRIPE_MIN, whole below, rotating over the members), a
 *     grouped receive of three tags, a striped message into a smaller buffer fails
 *     that receive with STRATA_ERR_TRUNCATED and the next message arrives; both ends'
 *     per-member counters add up to what moved and each member carried some;
 *   - STRATA_SOCKET_STRIPE_MIN moved to 64 KiB changes nothing a receiver sees.
 *
 * Both ends of a pair are in the node, so the kernel carries the bytes over lo; that
 * each member's traffic leaves on its own interface is what test_net_vnic checks
 * between two nodes (run over ucx by make test's second pass). Needs root; skips
 * otherwise. The parent never initialises a transport.
 */
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sts_cmocka.h"
#include "sts_proc.h"
#include "sts_util.h"
#include "sts_xport.h"
#include "transport/ucx/ucx.h"
#include "util/param.h"
#include "util/time.h"

#define VNIC_RAILS 2
#define WAIT_S 600.0                          /* the parent's bound on a child */

static const char *self_dir = ".";            /* where the conformance binaries are */


static void vnic_env(void)
{
    setenv("STRATA_NET_FUSE", "all", 1);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    unsetenv("STRATA_SOCKET_IFNAME");
    unsetenv("STRATA_TRANSPORT");
}

/* The conformance run's output: read back by the parent, so that its cmocka summary lines
 * are not taken for this binary's (tests/run.sh sums those). */
static char conf_log[64];

/* Inside the node: runs one conformance binary over the fused devices. */
static int child_conformance(void *arg, int ctl)
{
    char path[PATH_MAX + 64];
    int fd = open(conf_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    (void)ctl;
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
        return 126;
    vnic_env();
    snprintf(path, sizeof(path), "%s/%s", self_dir, (const char *)arg);
    execl(path, path, (char *)NULL);
    fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
    return 127;
}

/* One message of ssize bytes into rsize; the receive's status, *got its size. */
static strata_status_t child_xfer(sts_pair_t *pair, size_t ssize, size_t rsize, int tag,
                                  uint32_t seed, size_t *got)
{
    sts_buf_t s, r;
    strata_status_t sst = STRATA_OK, rst = STRATA_OK, status;

    if (sts_buf_alloc(&s, pair->send, ssize) != STRATA_OK)
        return STRATA_ERR_NO_MEMORY;
    if (sts_buf_alloc(&r, pair->recv, rsize) != STRATA_OK) {
        sts_buf_free(&s);
        return STRATA_ERR_NO_MEMORY;
    }
    sts_pattern_fill(s.data, ssize, seed);
    status = sts_pair_exchange(pair, s.data, ssize, s.mh, r.data, rsize, r.mh, tag,
                               sts_deadline(STS_IO_TIMEOUT_S), &sst, &rst, got);
    if (status == STRATA_OK && rst == STRATA_OK &&
        (sst != STRATA_OK || sts_pattern_check(r.data, ssize, seed) != SIZE_MAX))
        status = STRATA_ERR_IO;
    if (status == STRATA_OK)
        status = rst;
    sts_buf_free(&s);
    sts_buf_free(&r);
    return status;
}

/* A grouped receive of three tags, the sends in another order. */
static int child_grouped(sts_pair_t *pair)
{
    static const size_t sz[3] = {100, 300000, 70000};
    static const int tags[3] = {7, 8, 9};
    sts_buf_t s[3], r[3];
    stt_req_t *req = NULL;
    void *data[3], *mhs[3];
    size_t cap[3];
    sts_reqset_t set;
    int rslot = -1;

    STS_CHILD_CHECK(sts_reqset_init(&set, 4) == STRATA_OK, "request set");
    for (int i = 0; i < 3; i++) {
        STS_CHILD_CHECK(sts_buf_alloc(&s[i], pair->send, sz[i]) == STRATA_OK &&
                    sts_buf_alloc(&r[i], pair->recv, sz[i]) == STRATA_OK, "buffers");
        sts_pattern_fill(s[i].data, sz[i], 50u + (uint32_t)i);
        data[i] = r[i].data;
        mhs[i] = r[i].mh;
        cap[i] = sz[i];
    }
    STS_CHILD_CHECK(stt_irecv(pair->recv, 3, data, cap, tags, mhs, &req) == STRATA_OK &&
                req != NULL, "grouped irecv");
    rslot = sts_reqset_add(&set, req);
    for (int k = 0; k < 3; k++) {
        int i = 2 - k;
        STS_CHILD_CHECK(stt_isend(pair->send, s[i].data, sz[i], tags[i], s[i].mh, &req) ==
                    STRATA_OK && req != NULL, "isend %d", i);
        sts_reqset_add(&set, req);
    }
    STS_CHILD_CHECK(sts_reqset_wait(&set, sts_deadline(STS_IO_TIMEOUT_S)) == STRATA_OK &&
                set.errors == 0, "the grouped exchange");
    const size_t *got = set.slots[rslot].sizes;
    for (int i = 0; i < 3; i++) {
        STS_CHILD_CHECK(got[i] == sz[i], "buffer %d got %zu of %zu bytes", i, got[i], sz[i]);
        STS_CHILD_CHECK(sts_pattern_check(r[i].data, sz[i], 50u + (uint32_t)i) == SIZE_MAX,
                    "buffer %d differs", i);
        sts_buf_free(&s[i]);
        sts_buf_free(&r[i]);
    }
    sts_reqset_fini(&set);
    return 0;
}

/* The members' counters of comm: they add up to bytes, and each carried some. */
static int child_members(const stt_comm_t *comm, unsigned long long bytes, const char *who)
{
    unsigned long long sum = 0;

    STS_CHILD_CHECK(comm->nmembers == VNIC_RAILS, "%s comm has %d members", who, comm->nmembers);
    for (int m = 0; m < VNIC_RAILS; m++) {
        unsigned long long b = __atomic_load_n(&comm->members[m].bytes, __ATOMIC_RELAXED);
        STS_CHILD_CHECK(b > 0 && comm->members[m].msgs > 0, "%s: member %d carried %llu bytes",
                    who, m, b);
        STS_CHILD_CHECK(comm->members[m].errors == 0, "%s: member %d errors", who, m);
        sum += b;
    }
    STS_CHILD_CHECK(sum == bytes, "%s: the members carried %llu bytes, %llu moved", who, sum,
                    bytes);
    printf("%s: members carried %llu and %llu bytes\n", who,
           (unsigned long long)comm->members[0].bytes, (unsigned long long)comm->members[1].bytes);
    return 0;
}

static const size_t vnic_sizes[] = {0, 1, 31, 32, 33, 4095, 65536, 262143, 262144, 262145,
                                    (1 << 20) + 7, 4 << 20, 24 << 20, 100000, 8191};
#define VNIC_NSIZES ((int)(sizeof(vnic_sizes) / sizeof(vnic_sizes[0])))

/* Inside the node: data over ucx's fused device (arg: STRATA_SOCKET_STRIPE_MIN or NULL). */
static int child_data(void *arg, int ctl)
{
    const stt_ops_t *ops = &stt_ucx_ops;
    unsigned long long moved = 0;
    stt_props_t props;
    sts_pair_t pair;
    size_t got = 0;
    int ndev = 0;

    (void)ctl;
    vnic_env();
    if (arg != NULL)
        setenv("STRATA_SOCKET_STRIPE_MIN", arg, 1);
    stu_param_reload();
    STS_CHILD_CHECK(stt_init(ops) == STRATA_OK, "init");
    STS_CHILD_CHECK(stt_devices(ops, &ndev) == STRATA_OK && ndev == 1, "%d devices, want 1", ndev);
    STS_CHILD_CHECK(stt_get_props(ops, 0, &props) == STRATA_OK &&
                strcmp(props.name, "veth0+veth1") == 0, "device 0 is '%s'", props.name);
    STS_CHILD_CHECK(sts_pair_open(ops, 0, STS_CONNECT_TIMEOUT_S, &pair) == STRATA_OK, "pair");
    for (int i = 0; i < VNIC_NSIZES; i++) {
        strata_status_t st = child_xfer(&pair, vnic_sizes[i], vnic_sizes[i], i % 3,
                                        (uint32_t)i + 3, &got);
        STS_CHILD_CHECK(st == STRATA_OK && got == vnic_sizes[i], "%zu bytes: %s, got %zu",
                    vnic_sizes[i], strata_status_str(st), got);
        moved += vnic_sizes[i];
    }
    STS_CHILD_CHECK(child_grouped(&pair) == 0, "grouped");
    moved += 100 + 300000 + 70000;
    STS_CHILD_CHECK(child_members(pair.send, moved, "send") == 0 &&
                child_members(pair.recv, moved, "recv") == 0, "counters");
    /* a striped message into a smaller buffer, then one that fits */
    strata_status_t st = child_xfer(&pair, 1 << 20, 512 << 10, 4, 99, &got);
    STS_CHILD_CHECK(st == STRATA_ERR_TRUNCATED, "1 MiB into 512 KiB: %s", strata_status_str(st));
    st = child_xfer(&pair, 3 << 20, 3 << 20, 4, 100, &got);
    STS_CHILD_CHECK(st == STRATA_OK && got == 3u << 20, "after the truncation: %s",
                strata_status_str(st));
    sts_pair_close(&pair);
    stt_fini(ops);
    return 0;
}

typedef struct vnic_fix {
    stb_netns_t net;
    int fds;
} vnic_fix_t;

static int vnic_setup(void **state)
{
    static vnic_fix_t fix;

    fix.fds = sts_fd_count();
    *state = &fix;
    strata_status_t status = stb_netns_create_rails(&fix.net, 1, VNIC_RAILS, 0);
    if (status != STRATA_OK) {
        stb_netns_destroy(&fix.net);
        fix.net.nodes = 0;
        return status == STRATA_ERR_UNSUPPORTED ? 0 : -1;   /* each case skips */
    }
    return 0;
}

static int vnic_teardown(void **state)
{
    vnic_fix_t *fix = *state;

    sts_peer_kill_all();
    stb_netns_destroy(&fix->net);
    if (sts_fd_count() != fix->fds) {
        print_error("descriptors: %d before, %d after\n", fix->fds, sts_fd_count());
        return -1;
    }
    return 0;
}

static void vnic_in_node(vnic_fix_t *fix, int (*fn)(void *, int), void *arg)
{
    sts_peer_t kid;

    if (fix->net.nodes == 0)
        skip();
    assert_int_equal(sts_peer_fork(&kid, &fix->net, 0, fn, arg), 0);
    int code = sts_peer_wait(&kid, sts_deadline(WAIT_S));
    if (code != 0)
        fail_msg("the child in the node exited with %d", code);
}

static void ucx_vnic_data(void **state)
{
    vnic_in_node(*state, child_data, NULL);
}

static void ucx_vnic_data_stripe_64k(void **state)
{
    vnic_in_node(*state, child_data, "64K");
}

/* Runs a conformance binary in the node; prints its summaries (all of it when it failed). */
static void vnic_conformance(vnic_fix_t *fix, const char *bin)
{
    sts_peer_t kid;
    char line[512];

    if (fix->net.nodes == 0)
        skip();
    snprintf(conf_log, sizeof(conf_log), "/tmp/strata-ucx-vnic-%d.log", (int)getpid());
    assert_int_equal(sts_peer_fork(&kid, &fix->net, 0, child_conformance, (void *)bin), 0);
    int code = sts_peer_wait(&kid, sts_deadline(WAIT_S));
    FILE *f = fopen(conf_log, "r");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (code != 0 || strstr(line, "PASSED") != NULL || strstr(line, "FAILED") != NULL)
            printf("  %s | %s", bin, line);
    if (f != NULL)
        fclose(f);
    unlink(conf_log);
    if (code != 0)
        fail_msg("%s over the fused devices exited with %d", bin, code);
}

static void ucx_vnic_conformance(void **state)
{
    vnic_conformance(*state, "test_conformance");
}

static void ucx_vnic_conformance_conn(void **state)
{
    vnic_conformance(*state, "test_conformance_conn");
}

static void ucx_vnic_conformance_tags(void **state)
{
    vnic_conformance(*state, "test_conformance_tags");
}

int main(int argc, char **argv)
{
    (void)argc;
    static char dir[PATH_MAX];
    if (realpath(argv[0], dir) != NULL) {        /* a child in a node may run elsewhere */
        char *slash = strrchr(dir, '/');
        if (slash != NULL)
            *slash = '\0';
        self_dir = dir;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ucx_vnic_data, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(ucx_vnic_data_stripe_64k, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(ucx_vnic_conformance, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(ucx_vnic_conformance_conn, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(ucx_vnic_conformance_tags, vnic_setup, vnic_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
