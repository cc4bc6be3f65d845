/*
 * Virtual NICs over tcp (and, run with STRATA_TRANSPORT=ucx, over ucx: the
 * cases its virtual NICs support, below) between two emulated nodes with two rails each
 * (tools/lib/tool_netns.h: veth0 on rail 0, veth1 on rail 1, each on its own
 * bridge and subnet), driven through ncclNetPlugin_v11 as NCCL drives it:
 *
 *   - makeVDevice({1, 0}) fuses the two interfaces into device 2, named
 *     "veth0+veth1" whatever order it was asked in, with both as members and
 *     the sum of their speeds; asking again gives the same device;
 *   - every size from 0 B to 24 MiB crosses the fused device intact, and the
 *     receiver's two interfaces each carried at least a quarter of the bytes
 *     (striped and rotated messages use both rails; read from /proc/net/dev);
 *   - the per-member telemetry of each end's connection: the members' bytes add up to
 *     the connection's, each member carried some, both show "up" (after a failover: the
 *     lost member alone shows "lost");
 *   - STRATA_NET_FUSE=all presents the fused device alone, with the same result;
 *   - STRATA_NET_FUSE=off leaves makeVDevice NULL in the table (NCCL then never asks)
 *     and a direct request is refused;
 *   - failover: rail 1 taken down (ip link set veth1 down, in the receiver's node
 *     with either end's timeout the shorter, and in the sender's node) in the middle
 *     of a stream of striped (4 MiB + 7, 300000 B), rotated (64 KiB; 20000 B, which goes
 *     whole on the lead when its socket is idle) and small messages, five in flight:
 *     every message arrives once, in order, with its own
 *     bytes (each carries its index), the stream finishes on rail 0, and each end's
 *     telemetry counts one reconnect and exactly the bytes and messages moved
 *     (docs/multirail.md, "Failover");
 *   - both rails taken down in the middle of a stream fail both ends' requests with
 *     an error within STRATA_SOCKET_USER_TIMEOUT and a margin, instead of a hang;
 *     so does rail 0 alone (the member of socket 0, which carries the headers, does
 *     not fail over).
 *
 * Over ucx (no failover there, docs/multirail.md): fusion by makeVDevice and by
 * STRATA_NET_FUSE=all, every size intact with both rails carrying a share, the
 * per-member counters, fusion forbidden; and a rail taken down in the middle of a
 * stream fails both ends with an error instead of a hang (UCX's keepalive and the
 * node's TCP retransmission limit bound it: VNIC_UCX_* below).
 *
 * Needs root (namespaces); skips otherwise. Children report through their
 * exit status and a RESULT message; nothing outlives a test.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "strata/net_stats.h"
#include "sts_net.h"
#include "sts_proc.h"
#include "sts_util.h"
#include "util/time.h"

#define VNIC_TIMEOUT_S 200.0
#define VNIC_RAILS 2

/* 0 .. 24 MiB: eager, rotated (4 KiB .. 256 KiB) and striped (256 KiB up) messages. */
static const size_t vnic_sizes[] = {0,         1,         4095,      4096,     65536,
                                    200003,    262143,    262144,    1 << 20,  (4 << 20) + 7,
                                    24 << 20,  100000,    300000,    8191,     4 << 20};
#define VNIC_NSIZES ((int)(sizeof(vnic_sizes) / sizeof(vnic_sizes[0])))

typedef enum {
    VNIC_MAKE, VNIC_FORCED, VNIC_FORBIDDEN, VNIC_MEMBER_DOWN, VNIC_FAILOVER
} vnic_mode_t;

/* The member-down case: the user timeout it sets, and how long past it an error may take. */
#define VNIC_DOWN_USER_TIMEOUT_MS "3000"
#define VNIC_DOWN_BOUND_S 170.0
#define VNIC_SLOW_USER_TIMEOUT_MS "12000"
#define VNIC_DOWN_MSG (4u << 20)
/*
 * Over ucx, each node's net.ipv4.tcp_retries2 (per network namespace): UCX 1.13's tcp
 * transport sets no TCP_USER_TIMEOUT, so a connection holding unacknowledged bytes on a
 * dead link fails only at the kernel's retransmission limit (15 by default: about 15
 * minutes). 4 retransmissions from the 200 ms minimum RTO: about 6 s (docs/multirail.md).
 */
#define VNIC_UCX_TCP_RETRIES2 "4"

typedef struct vnic_job {
    vnic_mode_t mode;
    int receiver;
    const char *user_timeout;  /* STRATA_SOCKET_USER_TIMEOUT of this end; NULL: inherited */
    int lost_rail;             /* VNIC_FAILOVER: the rail that goes down */
} vnic_job_t;

/* The failover stream: batches of these sizes in flight together; message k of batch b
 * carries pattern seed b * VNIC_FO_BATCH + k, and the small first one says whether its
 * batch is the last. */
static const size_t vnic_fo_sizes[] = {64, (4u << 20) + 7, 20000, 65536, 300000};
#define VNIC_FO_BATCH ((int)(sizeof(vnic_fo_sizes) / sizeof(vnic_fo_sizes[0])))
#define VNIC_FO_READY_AFTER 4      /* batches before the parent takes the rail down */
#define VNIC_FO_AFTER 20           /* batches the sender streams after its failover */

#define CHILD_CHECK(cond, ...)                                                          \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            char why_[400];                                                             \
            snprintf(why_, sizeof(why_), __VA_ARGS__);                                  \
            sts_ctl_result(ctl, 1, "%s:%d: %s", __FILE__, __LINE__, why_);              \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

/* The device this child uses: made by makeVDevice, or the one STRATA_NET_FUSE=all left. */
static int vnic_device(int ctl, stb_plugin_t *pl, vnic_mode_t mode, int *dev)
{
    stb_plugin_props_t p, m0, m1;
    int ndev = -1;

    CHILD_CHECK(stb_plugin_devices(pl, &ndev) == ncclSuccess, "devices");
    if (mode == VNIC_FORCED) {
        CHILD_CHECK(ndev == 1, "%d devices under STRATA_NET_FUSE=all, want 1", ndev);
        CHILD_CHECK(stb_plugin_props(pl, 0, &p) == ncclSuccess, "props");
        CHILD_CHECK(strcmp(p.name, "veth0+veth1") == 0, "device 0 is '%s'", p.name);
        *dev = 0;
        return 0;
    }
    CHILD_CHECK(ndev == VNIC_RAILS, "%d devices, want one per rail (%d)", ndev, VNIC_RAILS);
    /* What NCCL reads after init: a NULL makeVDevice means "do not fuse". */
    const ncclNet_v11_t *table = stb_plugin_table(pl);
    CHILD_CHECK((table->makeVDevice == NULL) == (mode == VNIC_FORBIDDEN),
                "makeVDevice is %s under this STRATA_NET_FUSE",
                table->makeVDevice ? "offered" : "NULL");
    CHILD_CHECK(stb_plugin_props(pl, 0, &m0) == ncclSuccess &&
                stb_plugin_props(pl, 1, &m1) == ncclSuccess, "member props");
    int backwards[] = {1, 0}, forwards[] = {0, 1}, vdev = -1, again = -1;
    ncclResult_t res = stb_plugin_make_vdev(pl, 2, backwards, &vdev);
    if (mode == VNIC_FORBIDDEN) {
        CHILD_CHECK(res != ncclSuccess, "makeVDevice succeeded under STRATA_NET_FUSE=off");
        CHILD_CHECK(stb_plugin_devices(pl, &ndev) == ncclSuccess && ndev == VNIC_RAILS,
                    "a refused fusion added a device");
        *dev = -1;
        return 0;
    }
    CHILD_CHECK(res == ncclSuccess, "makeVDevice: %s", stb_plugin_result_str(res));
    CHILD_CHECK(vdev == VNIC_RAILS, "virtual device %d, want %d", vdev, VNIC_RAILS);
    CHILD_CHECK(stb_plugin_make_vdev(pl, 2, forwards, &again) == ncclSuccess && again == vdev,
                "the same members gave device %d, then %d", vdev, again);
    CHILD_CHECK(stb_plugin_devices(pl, &ndev) == ncclSuccess && ndev == VNIC_RAILS + 1,
                "%d devices after fusing", ndev);
    CHILD_CHECK(stb_plugin_props(pl, vdev, &p) == ncclSuccess, "props of the virtual device");
    CHILD_CHECK(strcmp(p.name, "veth0+veth1") == 0, "virtual device is '%s'", p.name);
    CHILD_CHECK(p.vprops_ndevs == 2, "vProps.ndevs %d", p.vprops_ndevs);
    CHILD_CHECK(p.speed_mbps == m0.speed_mbps + m1.speed_mbps, "speed %d, members %d + %d",
                p.speed_mbps, m0.speed_mbps, m1.speed_mbps);
    int three[] = {0, 1, 1}, bad = -1;
    CHILD_CHECK(stb_plugin_make_vdev(pl, 3, three, &bad) != ncclSuccess,
                "a device named twice was fused");
    *dev = vdev;
    return 0;
}

/* Moves every size across the link (sender or receiver side); the receiver checks the data. */
static int vnic_traffic(int ctl, stb_plugin_t *pl, void *comm, int receiver)
{
    uint64_t deadline = sts_deadline(VNIC_TIMEOUT_S);

    for (int i = 0; i < VNIC_NSIZES; i++) {
        sts_net_buf_t b;
        sts_net_req_t req = {.result = ncclInProgress};
        size_t size = vnic_sizes[i];
        int tag = 5;
        CHILD_CHECK(sts_net_buf_get(pl, &b, comm, size) == ncclSuccess, "buffer of %zu", size);
        if (receiver) {
            void *data = b.data;
            CHILD_CHECK(sts_net_irecv_retry(pl, comm, 1, &data, &size, &tag, &b.mh, NULL, 0,
                                            deadline, &req.req) == ncclSuccess, "irecv");
        } else {
            sts_pattern_fill(b.data, size, (uint32_t)i + 11);
            CHILD_CHECK(sts_net_isend_retry(pl, comm, b.data, size, tag, b.mh, NULL, 0,
                                            deadline, &req.req) == ncclSuccess, "isend");
        }
        CHILD_CHECK(sts_net_wait_all(pl, &req, 1, deadline) == 0, "size %zu timed out", size);
        CHILD_CHECK(req.result == ncclSuccess, "size %zu: %s", size,
                    stb_plugin_result_str(req.result));
        if (receiver) {
            CHILD_CHECK(req.sizes[0] == (int)size, "got %d of %zu bytes", req.sizes[0], size);
            size_t bad = sts_pattern_check(b.data, size, (uint32_t)i + 11);
            CHILD_CHECK(bad == SIZE_MAX, "size %zu: byte %zu differs", size, bad);
        }
        sts_net_buf_put(pl, &b);
    }
    return 0;
}

/*
 * Streams VNIC_DOWN_MSG messages until a request fails: READY after the first one,
 * then the parent takes a member down. Reports how the comm failed, or that it did not.
 */
static int vnic_stream_until_error(int ctl, stb_plugin_t *pl, void *comm, int receiver)
{
    sts_net_buf_t b;
    uint64_t deadline = sts_deadline(VNIC_DOWN_BOUND_S);
    ncclResult_t failed = ncclSuccess;
    int done = 0;
    uint64_t ready_ns = 0;

    CHILD_CHECK(sts_net_buf_get(pl, &b, comm, VNIC_DOWN_MSG) == ncclSuccess, "buffer");
    while (failed == ncclSuccess && !stu_deadline_passed(deadline)) {
        sts_net_req_t req = {.result = ncclInProgress};
        size_t size = VNIC_DOWN_MSG;
        int tag = 6;
        void *data = b.data;
        failed = receiver ? sts_net_irecv_retry(pl, comm, 1, &data, &size, &tag, &b.mh, NULL, 0,
                                                deadline, &req.req)
                          : sts_net_isend_retry(pl, comm, b.data, size, tag, b.mh, NULL, 0,
                                                deadline, &req.req);
        if (failed != ncclSuccess)
            break;
        if (sts_net_wait_all(pl, &req, 1, deadline) != 0)
            break;
        failed = req.result;
        if (failed == ncclSuccess && ++done == 1) {
            CHILD_CHECK(sts_ctl_send(ctl, STS_CTL_READY, NULL, 0) == 0, "READY");
            ready_ns = stu_time_ns();
        }
    }
    sts_net_buf_put(pl, &b);
    CHILD_CHECK(failed != ncclSuccess, "no error within %.0f s of streaming (%d messages)",
                VNIC_DOWN_BOUND_S, done);
    /* printed, never asserted: from READY (the links go down just after) to the error */
    sts_ctl_result(ctl, 0, "failed with %s after %d messages, %.1f s after READY",
                   stb_plugin_result_str(failed), done, (double)(stu_time_ns() - ready_ns) / 1e9);
    return 0;
}

/* A counter of this process's telemetry document (the first occurrence of name). */
static long long vnic_stats_field(stb_plugin_t *pl, const char *name)
{
    strata_net_stats_json_fn json =
        (strata_net_stats_json_fn)stb_plugin_dlsym(pl, "strata_net_stats_json");
    char doc[8192], key[64];

    if (json == NULL || json(doc, sizeof(doc)) >= sizeof(doc))
        return -1;
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *hit = strstr(strstr(doc, "\"connections\"") ? strstr(doc, "\"connections\"")
                                                               : doc, key);
    return hit == NULL ? -1 : strtoll(hit + strlen(key), NULL, 10);
}

/*
 * The per-member counters of this process's connection (the first in the document): the
 * members' bytes add up to the comm's, every member carried some, and member `lost` (-1:
 * none) alone shows as lost.
 */
static int vnic_members_check(int ctl, stb_plugin_t *pl, unsigned long long bytes, int lost)
{
    strata_net_stats_json_fn json =
        (strata_net_stats_json_fn)stb_plugin_dlsym(pl, "strata_net_stats_json");
    char doc[8192];
    unsigned long long sum = 0;

    CHILD_CHECK(json != NULL && json(doc, sizeof(doc)) < sizeof(doc), "telemetry document");
    const char *at = strstr(doc, "\"connections\"");
    at = at != NULL ? strstr(at, "\"members\":[") : NULL;
    CHILD_CHECK(at != NULL, "no members in the connection's telemetry: %.300s", doc);
    for (int m = 0; m < VNIC_RAILS; m++) {
        char key[32];
        snprintf(key, sizeof(key), "{\"member\":%d,", m);
        const char *mem = strstr(at, key), *b = mem ? strstr(mem, "\"bytes\":") : NULL;
        const char *st = mem ? strstr(mem, "\"state\":\"") : NULL;
        CHILD_CHECK(b != NULL && st != NULL, "member %d missing: %.300s", m, at);
        unsigned long long mb = strtoull(b + 8, NULL, 10);
        bool is_lost = strncmp(st + 9, "lost", 4) == 0;
        CHILD_CHECK(mb > 0, "member %d carried no bytes", m);
        CHILD_CHECK(is_lost == (m == lost), "member %d shows %.4s", m, st + 9);
        sum += mb;
    }
    CHILD_CHECK(sum == bytes, "the members carried %llu bytes, the comm %llu", sum, bytes);
    return 0;
}

/*
 * The failover stream. The sender keeps going until VNIC_FO_AFTER batches after its
 * comm counted a reconnect (or the deadline), then marks the last batch; the receiver
 * follows the marks. READY after VNIC_FO_READY_AFTER batches. Both ends then check
 * their telemetry against what moved.
 */
static int vnic_failover_stream(int ctl, stb_plugin_t *pl, void *comm, int receiver,
                                int lost_rail)
{
    sts_net_buf_t b[VNIC_FO_BATCH];
    sts_net_req_t req[VNIC_FO_BATCH];
    uint64_t deadline = sts_deadline(VNIC_TIMEOUT_S), t = stu_time_ns(), stall = 0;
    unsigned long long bytes = 0, msgs = 0;
    int batch = 0, last = 0, after = -1;

    for (int k = 0; k < VNIC_FO_BATCH; k++)
        CHILD_CHECK(sts_net_buf_get(pl, &b[k], comm, vnic_fo_sizes[k]) == ncclSuccess, "buffer");
    for (; !last; batch++) {
        if (!receiver && after < 0 && vnic_stats_field(pl, "reconnects") > 0)
            after = 0;
        if (!receiver)
            last = (after >= 0 && ++after >= VNIC_FO_AFTER) || stu_deadline_passed(deadline);
        for (int k = 0; k < VNIC_FO_BATCH; k++) {
            size_t size = vnic_fo_sizes[k];
            int tag = 9;
            uint32_t seed = (uint32_t)(batch * VNIC_FO_BATCH + k);
            req[k] = (sts_net_req_t){.result = ncclInProgress};
            if (receiver) {
                void *data = b[k].data;
                memset(data, 0, size);
                CHILD_CHECK(sts_net_irecv_retry(pl, comm, 1, &data, &size, &tag, &b[k].mh, NULL,
                                                0, deadline, &req[k].req) == ncclSuccess,
                            "irecv");
                continue;
            }
            sts_pattern_fill(b[k].data, size, seed);
            if (k == 0)
                ((unsigned char *)b[k].data)[0] = (unsigned char)last;
            CHILD_CHECK(sts_net_isend_retry(pl, comm, b[k].data, size, tag, b[k].mh, NULL, 0,
                                            deadline, &req[k].req) == ncclSuccess, "isend");
        }
        CHILD_CHECK(sts_net_wait_all(pl, req, VNIC_FO_BATCH, deadline) == 0,
                    "batch %d timed out", batch);
        for (int k = 0; k < VNIC_FO_BATCH; k++) {
            CHILD_CHECK(req[k].result == ncclSuccess, "batch %d message %d: %s", batch, k,
                        stb_plugin_result_str(req[k].result));
            bytes += vnic_fo_sizes[k];
            msgs++;
            if (!receiver)
                continue;
            unsigned char *data = (unsigned char *)b[k].data;
            CHILD_CHECK(req[k].sizes[0] == (int)vnic_fo_sizes[k], "batch %d message %d: %d"
                        " bytes", batch, k, req[k].sizes[0]);
            if (k == 0) {
                last = data[0];
                sts_pattern_fill(b[k].data, 1, (uint32_t)(batch * VNIC_FO_BATCH));
            }
            size_t bad = sts_pattern_check(data, vnic_fo_sizes[k],
                                           (uint32_t)(batch * VNIC_FO_BATCH + k));
            CHILD_CHECK(bad == SIZE_MAX, "batch %d message %d: byte %zu differs", batch, k, bad);
        }
        if (batch + 1 == VNIC_FO_READY_AFTER)
            CHILD_CHECK(sts_ctl_send(ctl, STS_CTL_READY, NULL, 0) == 0, "READY");
        uint64_t now = stu_time_ns();
        stall = now - t > stall ? now - t : stall;   /* printed, never asserted */
        t = now;
    }
    for (int k = 0; k < VNIC_FO_BATCH; k++)
        sts_net_buf_put(pl, &b[k]);
    CHILD_CHECK(receiver || after >= 0, "no failover counted within %.0f s", VNIC_TIMEOUT_S);
    long long rec = vnic_stats_field(pl, "reconnects");
    long long got_bytes = vnic_stats_field(pl, "bytes"), got_msgs = vnic_stats_field(pl, "msgs");
    CHILD_CHECK(rec == 1, "telemetry: %lld reconnects, want 1", rec);
    CHILD_CHECK(got_bytes == (long long)bytes && got_msgs == (long long)msgs,
                "telemetry: %lld bytes in %lld messages, moved %llu in %llu", got_bytes,
                got_msgs, bytes, msgs);
    if (vnic_members_check(ctl, pl, bytes, lost_rail) != 0)
        return 1;
    sts_ctl_result(ctl, 0, "%d batches, %llu bytes, one failover; longest batch %.0f ms",
                   batch, bytes, (double)stall / 1e6);
    return 0;
}

/* Over ucx: the transport the run names (make test's second pass), tcp otherwise. */
static bool vnic_ucx(void)
{
    const char *t = getenv("STRATA_TRANSPORT");
    return t != NULL && strcmp(t, "ucx") == 0;
}

/* Writes value to a /proc/sys file of this node (its network namespace's). */
static int vnic_node_sysctl(const char *path, const char *value)
{
    FILE *f = fopen(path, "w");
    int rc = f != NULL && fputs(value, f) >= 0 ? 0 : -1;

    if (f != NULL && fclose(f) != 0)
        rc = -1;
    return rc;
}

static int vnic_child(void *arg, int ctl)
{
    const vnic_job_t *job = arg;
    char why[256];
    stb_plugin_t *pl = NULL;
    uint8_t handle[STB_PLUGIN_HANDLE_SIZE];
    uint64_t deadline = sts_deadline(VNIC_TIMEOUT_S);
    unsigned long long before[VNIC_RAILS], after[VNIC_RAILS];
    void *listen = NULL, *comm = NULL;
    int dev = -1;

    if (job->user_timeout != NULL)
        setenv("STRATA_SOCKET_USER_TIMEOUT", job->user_timeout, 1);
    CHILD_CHECK(stb_plugin_load(NULL, 11, 0, &pl, why, sizeof(why)) == STRATA_OK, "%s", why);
    CHILD_CHECK(stb_plugin_init(pl, 0x7653) == ncclSuccess, "init");
    vnic_mode_t dmode = job->mode == VNIC_MEMBER_DOWN || job->mode == VNIC_FAILOVER ? VNIC_MAKE
                                                                                  : job->mode;
    if (vnic_device(ctl, pl, dmode, &dev) != 0)
        return 1;
    if (job->mode == VNIC_FORBIDDEN) {
        stb_plugin_finalize(pl);
        stb_plugin_unload(pl);
        sts_ctl_result(ctl, 0, "refused");
        return 0;
    }
    CHILD_CHECK(sts_rail_if_bytes(job->receiver, VNIC_RAILS, before) == 0, "no veth0/veth1 in /proc/net/dev");
    if (job->receiver) {
        CHILD_CHECK(stb_plugin_listen(pl, dev, handle, &listen) == ncclSuccess, "listen");
        CHILD_CHECK(sts_ctl_send(ctl, STS_CTL_HANDLE, handle, sizeof(handle)) == 0, "handle");
        CHILD_CHECK(sts_net_accept_wait(pl, listen, deadline, &comm) == ncclSuccess, "accept");
    } else {
        CHILD_CHECK(sts_ctl_expect(ctl, STS_CTL_HANDLE, handle, sizeof(handle), deadline) == 0,
                    "no handle from the parent");
        CHILD_CHECK(sts_net_connect_wait(pl, dev, handle, deadline, &comm) == ncclSuccess,
                    "connect");
    }
    if (job->mode == VNIC_MEMBER_DOWN || job->mode == VNIC_FAILOVER) {
        if (vnic_ucx())
            CHILD_CHECK(vnic_node_sysctl("/proc/sys/net/ipv4/tcp_retries2",
                                         VNIC_UCX_TCP_RETRIES2) == 0, "tcp_retries2");
        int rc = job->mode == VNIC_FAILOVER
                     ? vnic_failover_stream(ctl, pl, comm, job->receiver, job->lost_rail)
                     : vnic_stream_until_error(ctl, pl, comm, job->receiver);
        job->receiver ? stb_plugin_close_recv(pl, comm) : stb_plugin_close_send(pl, comm);
        if (listen != NULL)
            stb_plugin_close_listen(pl, listen);
        stb_plugin_finalize(pl);
        stb_plugin_unload(pl);
        return rc;
    }
    if (vnic_traffic(ctl, pl, comm, job->receiver) != 0)
        return 1;
    unsigned long long total = 0;
    for (int i = 0; i < VNIC_NSIZES; i++)
        total += vnic_sizes[i];
    if (vnic_members_check(ctl, pl, total, -1) != 0)
        return 1;
    CHILD_CHECK(sts_rail_if_bytes(job->receiver, VNIC_RAILS, after) == 0, "interface counters");
    for (int r = 0; r < VNIC_RAILS; r++)
        CHILD_CHECK(after[r] - before[r] >= total / 4, "rail %d carried %llu of %llu bytes", r,
                    after[r] - before[r], total);
    if (job->receiver)
        stb_plugin_close_recv(pl, comm);
    else
        stb_plugin_close_send(pl, comm);
    if (listen != NULL)
        stb_plugin_close_listen(pl, listen);
    stb_plugin_finalize(pl);
    stb_plugin_unload(pl);
    sts_ctl_result(ctl, 0, "rails carried %llu and %llu bytes of %llu", after[0] - before[0],
                   after[1] - before[1], total);
    return 0;
}

typedef struct vnic_fix {
    stb_netns_t net;
    uint64_t ids[STB_NETNS_MAX_NODES + 1];
    int nids;
    int fds;
} vnic_fix_t;

static int vnic_setup(void **state)
{
    static vnic_fix_t fix;

    fix.fds = sts_fd_count();
    *state = &fix;
    setenv("STRATA_TRANSPORT", vnic_ucx() ? "ucx" : "tcp", 1);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET", 1);
    setenv("STRATA_SOCKET_NSOCKS", "4", 1);
    setenv("STRATA_SOCKET_USER_TIMEOUT", "10000", 1);
    unsetenv("STRATA_SOCKET_IFNAME");
    unsetenv("STRATA_SOCKET_STRIPE_MIN");
    strata_status_t status = stb_netns_create_rails(&fix.net, 2, VNIC_RAILS, 0);
    fix.nids = stb_netns_ids(&fix.net, fix.ids, STB_NETNS_MAX_NODES + 1);
    if (status != STRATA_OK) {
        stb_netns_destroy(&fix.net);
        return status == STRATA_ERR_UNSUPPORTED ? 0 : -1;   /* each case skips */
    }
    return 0;
}

static int vnic_teardown(void **state)
{
    vnic_fix_t *fix = *state;
    int rc = 0;

    sts_peer_kill_all();
    stb_netns_destroy(&fix->net);
    if (fix->nids > 0 && stb_netns_count_held(fix->ids, fix->nids) != 0) {
        print_error("namespaces left behind\n");
        rc = -1;
    }
    if (sts_fd_count() != fix->fds) {
        print_error("descriptors: %d before, %d after\n", fix->fds, sts_fd_count());
        rc = -1;
    }
    unsetenv("STRATA_NET_FUSE");
    return rc;
}

/* Which links go down in the member-down modes: node (0 receiver, 1 sender), rails; the
 * end whose user timeout is longer (so the other end sees the loss first), -1: neither. */
typedef struct vnic_cut {
    int node;
    int rails[VNIC_RAILS];
    int nrails;
    int slow_end;
} vnic_cut_t;

static void vnic_run(vnic_fix_t *fix, vnic_mode_t mode, const vnic_cut_t *cut)
{
    vnic_job_t rjob = {.mode = mode, .receiver = 1}, sjob = {.mode = mode, .receiver = 0};

    if (cut != NULL)
        rjob.lost_rail = sjob.lost_rail = cut->rails[0];

    if (cut != NULL && cut->slow_end >= 0)
        (cut->slow_end ? &sjob : &rjob)->user_timeout = VNIC_SLOW_USER_TIMEOUT_MS;
    sts_peer_t kids[2];
    uint8_t handle[STB_PLUGIN_HANDLE_SIZE];
    char msg[STS_CTL_MAX];
    uint64_t deadline = sts_deadline(VNIC_TIMEOUT_S);

    if (fix->net.nodes == 0)
        skip();
    assert_int_equal(sts_peer_fork(&kids[0], &fix->net, 0, vnic_child, &rjob), 0);
    assert_int_equal(sts_peer_fork(&kids[1], &fix->net, 1, vnic_child, &sjob), 0);
    if (mode != VNIC_FORBIDDEN) {
        if (sts_ctl_expect(kids[0].fd, STS_CTL_HANDLE, handle, sizeof(handle), deadline) != 0) {
            sts_ctl_wait_result(kids[0].fd, msg, sizeof(msg), sts_deadline(5.0));
            fail_msg("no handle from the receiver: %s", msg);
        }
        assert_int_equal(sts_ctl_send(kids[1].fd, STS_CTL_HANDLE, handle, sizeof(handle)), 0);
    }
    if (cut != NULL) {
        for (int k = 0; k < 2; k++)
            if (sts_ctl_expect(kids[k].fd, STS_CTL_READY, NULL, 0, deadline) != 0) {
                sts_ctl_wait_result(kids[k].fd, msg, sizeof(msg), sts_deadline(5.0));
                fail_msg("%s never streamed: %s", k ? "sender" : "receiver", msg);
            }
        for (int r = 0; r < cut->nrails; r++)
            assert_int_equal(stb_netns_rail_link(&fix->net, cut->node, cut->rails[r], 0),
                             STRATA_OK);
    }
    for (int k = 0; k < 2; k++) {
        int32_t status = sts_ctl_wait_result(kids[k].fd, msg, sizeof(msg), deadline);
        int code = sts_peer_wait(&kids[k], deadline);
        if (status != 0 || code != 0)
            fail_msg("%s: %s (exit %d)", k ? "sender" : "receiver", msg, code);
        print_message("%s: %s\n", k ? "sender" : "receiver", msg);
    }
}

static void vnic_made_by_nccl(void **state)
{
    unsetenv("STRATA_NET_FUSE");
    vnic_run(*state, VNIC_MAKE, NULL);
}

static void vnic_forced_by_param(void **state)
{
    setenv("STRATA_NET_FUSE", "all", 1);
    vnic_run(*state, VNIC_FORCED, NULL);
}

static void vnic_forbidden(void **state)
{
    setenv("STRATA_NET_FUSE", "off", 1);
    vnic_run(*state, VNIC_FORBIDDEN, NULL);
}

static void vnic_cut_run(void **state, vnic_mode_t mode, vnic_cut_t cut)
{
    unsetenv("STRATA_NET_FUSE");
    setenv("STRATA_SOCKET_USER_TIMEOUT", VNIC_DOWN_USER_TIMEOUT_MS, 1);
    vnic_run(*state, mode, &cut);
    setenv("STRATA_SOCKET_USER_TIMEOUT", "10000", 1);
}

/* A link down in the receiver's node, the receiver's timeout the longer one: the sender's
 * retransmissions go unanswered and it finds the loss (TCP_USER_TIMEOUT, or its watch). */
static void vnic_failover_sender_finds(void **state)
{
    vnic_cut_run(state, VNIC_FAILOVER,
                 (vnic_cut_t){.node = 0, .rails = {1}, .nrails = 1, .slow_end = 0});
}

/* The same link, the sender's timeout the longer one: when the receiver is owed bytes, its
 * keepalive finds the loss and tells the sender (SUSPECT); when it already holds every
 * byte (only acknowledgements were lost), the sender's watch finds it at its own timeout.
 * Which of the two happens depends on what was in flight. */
static void vnic_failover_sender_slower(void **state)
{
    vnic_cut_run(state, VNIC_FAILOVER,
                 (vnic_cut_t){.node = 0, .rails = {1}, .nrails = 1, .slow_end = 1});
}

/* A link down in the sender's node: its sockets on that rail fail at once (the network is
 * unreachable), which the sender's kernel never times out by itself. */
static void vnic_failover_sender_link(void **state)
{
    vnic_cut_run(state, VNIC_FAILOVER,
                 (vnic_cut_t){.node = 1, .rails = {1}, .nrails = 1, .slow_end = -1});
}

static void vnic_both_rails_down_fails_bounded(void **state)
{
    vnic_cut_run(state, VNIC_MEMBER_DOWN, (vnic_cut_t){.node = 1, .rails = {0, 1}, .nrails = 2,
                                                    .slow_end = -1});
}

/* Rail 0, whose member carries the first lead socket (headers and failover frames), down
 * in the sender's node: its sockets fail at once there; the sender resets them, and the
 * receiver, which never learns it through the dead link, finds it by its keepalive. The
 * lead moves to rail 1's first socket on both ends. */
static void vnic_failover_rail0_sender_link(void **state)
{
    vnic_cut_run(state, VNIC_FAILOVER,
                 (vnic_cut_t){.node = 1, .rails = {0}, .nrails = 1, .slow_end = -1});
}

/* Rail 0 down in the receiver's node, the receiver's timeout the shorter: it finds the
 * loss first (keepalive, or a read error) and tells the sender with LEAD on rail 1. */
static void vnic_failover_rail0_receiver_finds(void **state)
{
    vnic_cut_run(state, VNIC_FAILOVER,
                 (vnic_cut_t){.node = 0, .rails = {0}, .nrails = 1, .slow_end = 1});
}

/* The same link, the sender's timeout the shorter: it finds the loss by its watch first. */
static void vnic_failover_rail0_sender_finds(void **state)
{
    vnic_cut_run(state, VNIC_FAILOVER,
                 (vnic_cut_t){.node = 0, .rails = {0}, .nrails = 1, .slow_end = 0});
}

/* Rail 1 down in the sender's node mid-stream over ucx: both ends fail within the bound. */
static void vnic_ucx_member_down_fails_bounded(void **state)
{
    vnic_cut_run(state, VNIC_MEMBER_DOWN, (vnic_cut_t){.node = 1, .rails = {1}, .nrails = 1,
                                                    .slow_end = -1});
}

int main(void)
{
    const struct CMUnitTest ucx_tests[] = {
        cmocka_unit_test_setup_teardown(vnic_made_by_nccl, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_forced_by_param, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_forbidden, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_ucx_member_down_fails_bounded, vnic_setup,
                                        vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_both_rails_down_fails_bounded, vnic_setup,
                                        vnic_teardown),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(vnic_made_by_nccl, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_forced_by_param, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_forbidden, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_failover_sender_finds, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_failover_sender_slower, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_failover_sender_link, vnic_setup, vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_both_rails_down_fails_bounded, vnic_setup,
                                        vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_failover_rail0_sender_link, vnic_setup,
                                        vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_failover_rail0_receiver_finds, vnic_setup,
                                        vnic_teardown),
        cmocka_unit_test_setup_teardown(vnic_failover_rail0_sender_finds, vnic_setup,
                                        vnic_teardown),
    };
    if (getenv("STS_FILTER") != NULL)       /* one case: STS_FILTER=vnic_failover_sender_finds */
        cmocka_set_test_filter(getenv("STS_FILTER"));
    if (vnic_ucx())
        return cmocka_run_group_tests_name("ucx", ucx_tests, NULL, NULL);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
