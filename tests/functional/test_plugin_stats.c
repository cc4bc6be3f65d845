/*
 * The plugin's telemetry (plugin/net_stats.h) counts what went through it:
 * messages of known sizes sent over a loopback connection (both ends in this
 * process) through ncclNetPlugin_v11 show up, byte for byte and message for
 * message, in strata_net_stats_json while the comms are open (looked up with
 * dlsym as a tool does), and in the STRATA_STATS file the finalize writes.
 * A truncated receive counts one error on the receive comm; sends refused for
 * want of a slot leave blocked time on the send comm. With a profiler handle on
 * each post (as NCCL passes while a profiler wants net events), every request
 * reports one start and one stop event in NCCL's socket shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "func_common.h"
#include "nccl/profiler_net.h"
#include "strata/net_stats.h"
#include "util/file.h"

#define STATS_DOC_MAX (1u << 20)
#define STATS_TIMEOUT_S 60.0

/* Sizes sent, then received in order: empty, tiny, one page, odd, striped on tcp. */
static const size_t stats_sizes[] = {0, 1, 4096, 100003, 1u << 20, 3u << 20};
#define STATS_NMSG ((int)(sizeof(stats_sizes) / sizeof(stats_sizes[0])))

typedef struct stats_counts {
    unsigned long long bytes, msgs, errors, blocked_ns;
} stats_counts_t;

/* The fields of the connection object with "dir":"<dir>" (one per direction here). */
static int stats_conn_find(const char *doc, const char *dir, stats_counts_t *c)
{
    char key[32];
    snprintf(key, sizeof(key), "\"dir\":\"%s\"", dir);
    const char *hit = strstr(doc, key);
    if (hit == NULL || strstr(hit + 1, key) != NULL)
        return -1;               /* missing, or more than one */
    const char *open = hit;
    while (open > doc && *open != '{')
        open--;
    const char *b = strstr(open, "\"bytes\":"), *m = strstr(open, "\"msgs\":");
    const char *e = strstr(open, "\"errors\":"), *t = strstr(open, "\"blocked_ns\":");
    if (b == NULL || m == NULL || e == NULL || t == NULL)
        return -1;
    c->bytes = strtoull(b + 8, NULL, 10);
    c->msgs = strtoull(m + 7, NULL, 10);
    c->errors = strtoull(e + 9, NULL, 10);
    c->blocked_ns = strtoull(t + 13, NULL, 10);
    return 0;
}

/*
 * The "members" array of the connection with "dir":"<dir>", if it has one (a virtual NIC):
 * how many members, the sum of their bytes, how many are up. 0 members without one.
 */
static int stats_members(const char *doc, const char *dir, unsigned long long *bytes, int *up)
{
    char key[32];
    int n = 0;

    *bytes = 0;
    *up = 0;
    snprintf(key, sizeof(key), "\"dir\":\"%s\"", dir);
    const char *hit = strstr(doc, key);
    const char *next = hit != NULL ? strstr(hit, "\"id\":") : NULL;   /* the next connection */
    const char *arr = hit != NULL ? strstr(hit, "\"members\":[") : NULL;
    if (arr == NULL || (next != NULL && arr > next))
        return 0;
    const char *end = strchr(arr, ']');
    for (const char *m = strstr(arr, "{\"member\":"); m != NULL && m < end;
         m = strstr(m + 1, "{\"member\":")) {
        const char *b = strstr(m, "\"bytes\":");
        *bytes += strtoull(b + 8, NULL, 10);
        *up += strncmp(strstr(m, "\"state\":"), "\"state\":\"up\"", 12) == 0;
        n++;
    }
    return n;
}

static unsigned long long stats_field(const char *doc, const char *name)
{
    char key[64];
    snprintf(key, sizeof(key), "\"%s\":", name);
    const char *hit = strstr(doc, key);
    if (hit == NULL)
        fail_msg("no %s in %s", name, doc);
    return strtoull(hit + strlen(key), NULL, 10);
}

static char *stats_live(const func_fix_t *fix)
{
    strata_net_stats_json_fn json =
        (strata_net_stats_json_fn)stb_plugin_dlsym(fix->net, "strata_net_stats_json");
    assert_non_null(json);
    size_t need = json(NULL, 0);
    char *doc = malloc(need + 1);
    assert_non_null(doc);
    assert_int_equal(json(doc, need + 1), need);
    assert_true(strncmp(doc, "{\"strata_net_stats\":1,", 22) == 0);
    return doc;
}

/* Sends every size, receives each into a buffer of its own size, checks the data. */
static void stats_traffic(func_fix_t *fix, void *send, void *recv, size_t *total)
{
    sts_net_req_t reqs[2 * STATS_NMSG];
    sts_net_buf_t sb[STATS_NMSG], rb[STATS_NMSG];
    uint64_t deadline = sts_deadline(STATS_TIMEOUT_S);

    *total = 0;
    for (int i = 0; i < STATS_NMSG; i++) {
        size_t size = stats_sizes[i];
        int tag = 7;
        assert_nccl_ok(sts_net_buf_get(fix->net, &rb[i], recv, size));
        assert_nccl_ok(sts_net_buf_get(fix->net, &sb[i], send, size));
        sts_pattern_fill(sb[i].data, size, (uint32_t)i + 1);
        reqs[2 * i] = (sts_net_req_t){.result = ncclInProgress};
        reqs[2 * i + 1] = (sts_net_req_t){.result = ncclInProgress};
        void *data = rb[i].data;
        assert_nccl_ok(sts_net_irecv_retry(fix->net, recv, 1, &data, &size, &tag, &rb[i].mh,
                                           reqs, 2 * i, deadline, &reqs[2 * i].req));
        assert_nccl_ok(sts_net_isend_retry(fix->net, send, sb[i].data, size, tag, sb[i].mh,
                                           reqs, 2 * i + 1, deadline, &reqs[2 * i + 1].req));
        *total += size;
    }
    assert_int_equal(sts_net_wait_all(fix->net, reqs, 2 * STATS_NMSG, deadline), 0);
    for (int i = 0; i < STATS_NMSG; i++) {
        assert_int_equal(reqs[2 * i].result, ncclSuccess);
        assert_int_equal(reqs[2 * i + 1].result, ncclSuccess);
        assert_int_equal(reqs[2 * i].sizes[0], (int)stats_sizes[i]);
        assert_int_equal(sts_pattern_check(rb[i].data, stats_sizes[i], (uint32_t)i + 1),
                         SIZE_MAX);
        sts_net_buf_put(fix->net, &rb[i]);
        sts_net_buf_put(fix->net, &sb[i]);
    }
}

/* A 2-byte send into a 1-byte receive: the receive fails truncated, one error. */
static void stats_truncate(func_fix_t *fix, void *send, void *recv)
{
    char out[2] = {1, 2}, in[1];
    void *data = in;
    size_t cap = sizeof(in);
    int tag = 9;
    sts_net_req_t reqs[2] = {{.result = ncclInProgress}, {.result = ncclInProgress}};
    uint64_t deadline = sts_deadline(STATS_TIMEOUT_S);

    assert_nccl_ok(sts_net_irecv_retry(fix->net, recv, 1, &data, &cap, &tag, NULL, NULL, 0,
                                       deadline, &reqs[0].req));
    assert_nccl_ok(sts_net_isend_retry(fix->net, send, out, sizeof(out), tag, NULL, reqs, 1,
                                       deadline, &reqs[1].req));
    assert_int_equal(sts_net_wait_all(fix->net, reqs, 2, deadline), 0);
    assert_int_not_equal(reqs[0].result, ncclSuccess);
    assert_int_equal(reqs[1].result, ncclSuccess);
}

/*
 * Posts sends with no receive until one is refused (no slot), then lets the
 * receives drain them: the send comm records blocked time. Returns the bytes
 * and messages this moved.
 */
static void stats_backpressure(func_fix_t *fix, void *send, void *recv, size_t *bytes,
                               int *msgs)
{
    enum { MAX_POSTS = 4096, GROUP = 1 };
    sts_net_req_t *reqs = calloc(2 * MAX_POSTS, sizeof(*reqs));
    char one = 'x', sink[MAX_POSTS];
    uint64_t deadline = sts_deadline(STATS_TIMEOUT_S);
    int n = 0;

    assert_non_null(reqs);
    for (; n < MAX_POSTS; n++) {
        void *req = NULL;
        assert_nccl_ok(stb_plugin_isend(fix->net, send, &one, 1, 3, NULL, &req));
        if (req == NULL)
            break;
        reqs[n] = (sts_net_req_t){.req = req, .result = ncclInProgress};
    }
    if (n == MAX_POSTS)
        fail_msg("%d sends in flight and none refused", MAX_POSTS);
    int nrecv = 0;
    for (int i = 0; i < n; i++) {
        void *data = &sink[i];
        size_t cap = 1;
        int tag = 3;
        reqs[n + i] = (sts_net_req_t){.result = ncclInProgress};
        assert_nccl_ok(sts_net_irecv_retry(fix->net, recv, GROUP, &data, &cap, &tag, NULL,
                                           reqs, n + i, deadline, &reqs[n + i].req));
        nrecv++;
    }
    assert_int_equal(sts_net_wait_all(fix->net, reqs, n + nrecv, deadline), 0);
    for (int i = 0; i < n + nrecv; i++)
        assert_int_equal(reqs[i].result, ncclSuccess);
    /* The refused post is taken now: that ends the blocked interval. */
    void *req = NULL;
    void *data = &sink[0];
    size_t cap = 1;
    int tag = 3;
    sts_net_req_t last[2] = {{.result = ncclInProgress}, {.result = ncclInProgress}};
    assert_nccl_ok(sts_net_irecv_retry(fix->net, recv, 1, &data, &cap, &tag, NULL, NULL, 0,
                                       deadline, &last[0].req));
    assert_nccl_ok(stb_plugin_isend(fix->net, send, &one, 1, 3, NULL, &req));
    assert_non_null(req);
    last[1].req = req;
    assert_int_equal(sts_net_wait_all(fix->net, last, 2, deadline), 0);
    *bytes = (size_t)n + 1;
    *msgs = n + 1;
    free(reqs);
}

/* Opens the plugin (v11) and a loopback connection on device 0, both ends in this process. */
static void stats_open_linked(func_fix_t *fix, sts_net_link_t *link)
{
    uint64_t handle[STB_PLUGIN_HANDLE_SIZE / 8];
    void *listen = NULL;

    assert_int_equal(func_open(fix, 11), 0);
    assert_nccl_ok(stb_plugin_listen(fix->net, 0, handle, &listen));
    assert_nccl_ok(stb_plugin_connect_accept(fix->net, 0, handle, listen,
                                             sts_deadline(STATS_TIMEOUT_S), NULL, NULL,
                                             &link->send, &link->recv));
    assert_nccl_ok(stb_plugin_close_listen(fix->net, listen));
}

static void stats_counts_match(void **state)
{
    func_fix_t fix;
    char dir[] = "/tmp/strata-stats-XXXXXX", path[128], file[160];
    sts_net_link_t link = {0};
    size_t total, bp_bytes;
    int bp_msgs;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/net-%%p.json", dir);
    snprintf(file, sizeof(file), "%s/net-%d.json", dir, (int)getpid());
    setenv("STRATA_STATS", path, 1);
    stats_open_linked(&fix, &link);

    stats_traffic(&fix, link.send, link.recv, &total);
    char *doc = stats_live(&fix);
    stats_counts_t s, r;
    if (stats_conn_find(doc, "send", &s) != 0 || stats_conn_find(doc, "recv", &r) != 0)
        fail_msg("no single send and receive connection in %s", doc);
    assert_int_equal(s.bytes, total);
    assert_int_equal(s.msgs, STATS_NMSG);
    assert_int_equal(r.bytes, total);
    assert_int_equal(r.msgs, STATS_NMSG);
    assert_int_equal(s.errors + r.errors, 0);
    /* On a virtual NIC (STRATA_NET_FUSE=all), each end's members add up to its bytes. */
    unsigned long long mbytes;
    int up, nm = stats_members(doc, "send", &mbytes, &up);
    if (nm > 0) {
        fprintf(stderr, "send comm: %d members, %llu bytes, %d up\n", nm, mbytes, up);
        assert_int_equal(mbytes, total);
        assert_int_equal(up, nm);
        assert_int_equal(stats_members(doc, "recv", &mbytes, &up), nm);
        assert_int_equal(mbytes, total);
        assert_int_equal(up, nm);
    }
    assert_non_null(strstr(doc, "\"state\":\"open\""));
    free(doc);

    /* A truncated message fails its receive on tcp and ucx, the sender's side seeing a
     * whole send; the ib transport, as NCCL's, fails the send too (it learns the receive's
     * size from the clear-to-send slot), so its counts differ: that case is the others'. */
    const char *xport = getenv("STRATA_TRANSPORT");
    const int trunc = xport == NULL || strcmp(xport, "ib") != 0;
    if (trunc)
        stats_truncate(&fix, link.send, link.recv);
    stats_backpressure(&fix, link.send, link.recv, &bp_bytes, &bp_msgs);
    doc = stats_live(&fix);
    assert_int_equal(stats_conn_find(doc, "send", &s), 0);
    assert_int_equal(stats_conn_find(doc, "recv", &r), 0);
    assert_int_equal(r.errors, trunc);
    assert_int_equal(s.errors, 0);
    /* the truncated message: sent whole, its receive failed (not counted as received) */
    assert_int_equal(s.msgs, STATS_NMSG + trunc + bp_msgs);
    assert_int_equal(s.bytes, total + 2 * trunc + bp_bytes);
    assert_int_equal(r.msgs, STATS_NMSG + bp_msgs);
    assert_int_equal(r.bytes, total + bp_bytes);
    assert_true(s.blocked_ns > 0);
    free(doc);

    sts_net_link_close(fix.net, &link);
    assert_nccl_ok(stb_plugin_finalize(fix.net));
    stb_plugin_unload(fix.net);
    unsetenv("STRATA_STATS");

    char *written = NULL;
    size_t len = 0;
    assert_int_equal(stu_file_read(file, STATS_DOC_MAX, 0, "the stats file", &written, &len),
                     STRATA_OK);
    if (stats_conn_find(written, "send", &s) != 0 || stats_conn_find(written, "recv", &r) != 0)
        fail_msg("no single send and receive connection in %s", written);
    assert_int_equal(s.bytes, total + 2 * trunc + bp_bytes);
    assert_int_equal(r.bytes, total + bp_bytes);
    assert_null(strstr(written, "\"state\":\"open\""));
    /* The device totals are the two comms' sums. */
    assert_int_equal(stats_field(written, "bytes_sent"), total + 2 * trunc + bp_bytes);
    assert_int_equal(stats_field(written, "bytes_recv"), total + bp_bytes);
    assert_int_equal(stats_field(written, "errors"), trunc);
    assert_int_equal(stats_field(written, "comms"), 2);
    free(written);
    unlink(file);
    rmdir(dir);
}

/*
 * Profiler net events. tcp and ucx: one start and one stop per request, socket descriptors,
 * the bytes posted. ib: NCCL's IB shape, one event per work request on one QP: QP
 * descriptors only, at least one per send and one per receive, a stop for every start, and
 * the sends' QP lengths adding up to the bytes sent (receives carry length 0).
 */
static void stats_profiler_events(void **state)
{
    func_fix_t fix;
    sts_net_link_t link = {0};
    size_t total;
    stb_plugin_prof_t p;
    const char *xport = getenv("STRATA_TRANSPORT");
    int ib = xport != NULL && strcmp(xport, "ib") == 0;

    (void)state;
    stats_open_linked(&fix, &link);
    stb_plugin_prof_record(1);
    stats_traffic(&fix, link.send, link.recv, &total);
    stb_plugin_prof_get(&p);
    stb_plugin_prof_record(0);
    if (ib) {
        fprintf(stderr, "ib: %d QP events for %d messages, %llu bytes, devices 0x%x\n",
                p.starts, STATS_NMSG, (unsigned long long)p.qp_bytes, (unsigned)p.qp_devices);
        assert_true(p.starts >= 2 * STATS_NMSG);
        assert_int_equal(p.stops, p.starts);
        assert_int_equal(p.qp_events, p.starts);
        assert_int_equal(p.sock_events, 0);
        assert_int_equal(p.qp_bad, 0);
        assert_int_equal(p.plugin_id, NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER);
        assert_int_equal(p.qp_bytes, total);
        const char *fuse = getenv("STRATA_NET_FUSE");
        if (fuse != NULL && strcmp(fuse, "all") == 0)
            assert_int_equal(p.qp_devices, 3);     /* the striped sizes name both members */
    } else {
        assert_int_equal(p.starts, 2 * STATS_NMSG);
        assert_int_equal(p.stops, 2 * STATS_NMSG);
        assert_int_equal(p.sock_events, 2 * STATS_NMSG);
        assert_int_equal(p.qp_events, 0);
        assert_int_equal(p.plugin_id,
                         NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER);
        assert_int_equal(p.bytes[1], total);
        assert_int_equal(p.bytes[0], total);
        assert_true(p.last_fd > 0);   /* the connection's telemetry id */
    }
    /* Without a profiler handle nothing is reported. */
    stats_traffic(&fix, link.send, link.recv, &total);
    stb_plugin_prof_get(&p);
    assert_int_equal(p.starts, 0);
    sts_net_link_close(fix.net, &link);
    assert_nccl_ok(stb_plugin_finalize(fix.net));
    stb_plugin_unload(fix.net);
}

/* Without STRATA_STATS nothing is written; a bad value fails init naming the variable. */
static void stats_param_checked(void **state)
{
    func_fix_t fix;

    (void)state;
    setenv("STRATA_STATS", "/tmp/x-%d.json", 1);
    char why[256];
    stb_plugin_t *pl = NULL;
    assert_int_equal(stb_plugin_load(NULL, 11, 0, &pl, why, sizeof(why)), STRATA_OK);
    assert_int_not_equal(stb_plugin_init(pl, 0x77), ncclSuccess);
    stb_plugin_finalize(pl);
    stb_plugin_unload(pl);
    unsetenv("STRATA_STATS");
    assert_int_equal(func_open(&fix, 11), 0);
    assert_nccl_ok(stb_plugin_finalize(fix.net));
    stb_plugin_unload(fix.net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stats_counts_match),
        cmocka_unit_test(stats_param_checked),
        cmocka_unit_test(stats_profiler_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
