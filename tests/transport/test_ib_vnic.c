/*
 * Virtual NICs of the ib transport in one process: make_vdev's entry (member
 * order, properties, the same index twice, refusals), a connection between
 * two fused devices streaming small (round robin) and large (striped) messages
 * with every byte checked, several QPs per member, grouped receives, and the
 * refusal of a fused device talking to an unfused one. In the Soft-RoCE guest
 * the fused device is rxe0+rxe1, so member r of one end talks to member r of
 * the other. Skips with fewer than two verbs ports.
 *
 * Failover: with STRATA_TEST_IB_LINK_DOWN=netdev0,netdev1 (the netdevs under
 * the two members, in member order; the Soft-RoCE suite sets it, and a side
 * channel on lo) the failover cases take one member's netdev down in the middle
 * of a stream with messages in flight, check that every byte still arrives
 * once and in order, that both ends counted one failover, and bring it back;
 * then both members down must fail both ends within the bound. Without it they
 * skip (taking links down needs a disposable machine). With RC's retries made
 * longer than the test's bound, a member's link taken down while nothing is in
 * flight must still fail over: the port's PORT_ERR async event finds it.
 *
 * Per-member counters (comm->members): after every stream, each end's members'
 * bytes add up to what the stream moved, every member carried some, and after a
 * failover only the lost member is marked lost, with an error.
 */
#include <dirent.h>

#include "ib_fixture.h"

#define VNIC_WINDOW 4                       /* messages in flight each way */
#define VNIC_BIG ((4u << 20) + 9)           /* past the sizes array's immediate limit */

static const size_t vnic_sizes[] = {0, 3, 4096 + 5, 70000, (1u << 20) + 17, VNIC_BIG};

static uint8_t vnic_byte(uint32_t msg, size_t j)
{
    return (uint8_t)(msg * 131u + j * 7u + (j >> 8));
}

/* Two ports fused, or a skip. */
static int vnic_make(void **state)
{
    int v = -1, devs[2] = {1, 0};

    IB_NEED_DEVICE();
    if (ib_ndev() < 2)
        skip();
    assert_ok(stt_make_vdev(ops, devs, 2, &v));
    return v;
}

static void test_vnic_device(void **state)
{
    int v = vnic_make(state), again = -1, n = 0;
    stt_props_t p0, p1, pv;

    assert_ok(stt_get_props(ops, 0, &p0));
    assert_ok(stt_get_props(ops, 1, &p1));
    assert_ok(stt_get_props(ops, v, &pv));
    assert_ok(stt_devices(ops, &n));
    assert_int_equal(v, n - 1);                         /* appended */
    /* Members by name then port, whatever order they were asked in. */
    char want[140];
    bool first0 = strcmp(p0.name, p1.name) < 0 || (strcmp(p0.name, p1.name) == 0 && p0.port < p1.port);
    snprintf(want, sizeof(want), "%s+%s", first0 ? p0.name : p1.name, first0 ? p1.name : p0.name);
    assert_string_equal(pv.name, want);
    assert_int_equal(pv.speed_mbps, p0.speed_mbps + p1.speed_mbps);
    assert_string_equal(pv.pci_path, "");
    assert_int_equal(pv.max_recvs, STT_MAX_RECVS);
    fprintf(stderr, "virtual device %d: %s, %d Mbps\n", v, pv.name, pv.speed_mbps);
    int same[2] = {0, 1};
    assert_ok(stt_make_vdev(ops, same, 2, &again));
    assert_int_equal(again, v);                         /* NCCL may ask twice */
    int one[1] = {0}, dup[2] = {0, 0}, nested[2] = {v, 0};
    assert_status(stt_make_vdev(ops, one, 1, &again), STRATA_ERR_INVALID);
    assert_status(stt_make_vdev(ops, dup, 2, &again), STRATA_ERR_INVALID);
    assert_status(stt_make_vdev(ops, nested, 2, &again), STRATA_ERR_INVALID);
    assert_ok(stt_devices(ops, &n));
    assert_int_equal(v, n - 1);                         /* nothing added by the refusals */
}

/* ip link set NETDEV up|down, which must succeed. */
static void vnic_link(const char *netdev, const char *updown)
{
    char cmd[256];

    snprintf(cmd, sizeof(cmd), "ip link set %s %s", netdev, updown);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("'%s' failed (status %d)", cmd, rc);
}

/* The netdev under member m from STRATA_TEST_IB_LINK_DOWN, or NULL (the case skips). */
static const char *vnic_netdev(int m, char *buf, size_t len)
{
    const char *e = getenv("STRATA_TEST_IB_LINK_DOWN");
    const char *comma = e != NULL ? strchr(e, ',') : NULL;

    if (comma == NULL)
        return NULL;
    const char *start = m == 0 ? e : comma + 1;
    size_t n = m == 0 ? (size_t)(comma - e) : strlen(start);
    if (n == 0 || n >= len)
        return NULL;
    memcpy(buf, start, n);
    buf[n] = '\0';
    return buf;
}

/* The first line of a sysfs file, or "" */
static void vnic_sysfs(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");

    out[0] = '\0';
    if (f != NULL && fgets(out, (int)len, f) == NULL)
        out[0] = '\0';
    if (f != NULL)
        fclose(f);
}

/* Every verbs port ACTIVE again, with its GIDs (later cases use them). */
static void vnic_ports_wait(void)
{
    char path[300], state[64];
    uint64_t deadline = sts_deadline(STS_CONNECT_TIMEOUT_S);

    for (bool all = false; !all;) {
        DIR *dir = opendir("/sys/class/infiniband");
        struct dirent *de;
        all = true;
        while (dir != NULL && (de = readdir(dir)) != NULL) {
            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/state", de->d_name);
            vnic_sysfs(path, state, sizeof(state));
            all = all && strstr(state, "ACTIVE") != NULL;
        }
        if (dir != NULL)
            closedir(dir);
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 20);
    }
    poll(NULL, 0, 500);                    /* the link-local GID returns with the address */
}

static void vnic_link_up(const char *netdev)
{
    vnic_link(netdev, "up");
    vnic_ports_wait();
}

/* Streams count messages over pair, VNIC_WINDOW in flight, every byte checked. */
static void vnic_stream_down(sts_pair_t *p, uint32_t first, int count, bool registered,
                             int down_at, const char *netdev);

static void vnic_stream(sts_pair_t *p, uint32_t first, int count, bool registered)
{
    vnic_stream_down(p, first, count, registered, -1, NULL);
}

/* The same; with netdev, takes it down once the window at down_at is posted. */
static void vnic_stream_down(sts_pair_t *p, uint32_t first, int count, bool registered,
                             int down_at, const char *netdev)
{
    sts_buf_t sb[VNIC_WINDOW], rb[VNIC_WINDOW];

    for (int w = 0; w < VNIC_WINDOW; w++) {
        assert_ok(sts_buf_alloc(&sb[w], p->send, VNIC_BIG));
        assert_ok(sts_buf_alloc(&rb[w], p->recv, VNIC_BIG));
    }
    for (int base = 0; base < count; base += VNIC_WINDOW) {
        stt_req_t *sr[VNIC_WINDOW] = {0}, *rr[VNIC_WINDOW] = {0};
        size_t len[VNIC_WINDOW];
        int k = count - base < VNIC_WINDOW ? count - base : VNIC_WINDOW;
        uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
        for (int w = 0; w < k; w++) {
            uint32_t msg = first + (uint32_t)(base + w);
            len[w] = vnic_sizes[msg % STU_ARRAY_SIZE(vnic_sizes)];
            for (size_t j = 0; j < len[w]; j++)
                sb[w].data[j] = (char)vnic_byte(msg, j);
            memset(rb[w].data, 0xee, VNIC_BIG);
            void *rd = rb[w].data, *rmh = registered ? rb[w].mh : NULL;
            size_t cap = VNIC_BIG;
            int tag = 9;
            while (rr[w] == NULL) {
                assert_ok(stt_irecv(p->recv, 1, &rd, &cap, &tag, &rmh, &rr[w]));
                assert_false(stu_deadline_passed(deadline));
            }
            while (sr[w] == NULL) {
                assert_ok(stt_isend(p->send, sb[w].data, len[w], 9,
                                    registered ? sb[w].mh : NULL, &sr[w]));
                assert_false(stu_deadline_passed(deadline));
            }
        }
        if (netdev != NULL && base == down_at)
            vnic_link(netdev, "down");      /* messages in flight */
        for (int w = 0; w < k; w++) {
            size_t got = 0;
            strata_status_t ss = STRATA_ERR_INTERNAL;
            assert_ok(sts_req_wait_pair(sr[w], rr[w], deadline, &got, &ss));
            assert_ok(ss);
            assert_int_equal(got, len[w]);
            uint32_t msg = first + (uint32_t)(base + w);
            for (size_t j = 0; j < len[w]; j++)
                if ((uint8_t)rb[w].data[j] != vnic_byte(msg, j))
                    fail_msg("message %u byte %zu of %zu: 0x%02x, want 0x%02x", msg, j, len[w],
                             (uint8_t)rb[w].data[j], vnic_byte(msg, j));
            if (len[w] < VNIC_BIG)
                assert_int_equal((uint8_t)rb[w].data[len[w]], 0xee);   /* nothing past the end */
        }
    }
    for (int w = 0; w < VNIC_WINDOW; w++) {
        sts_buf_free(&sb[w]);
        sts_buf_free(&rb[w]);
    }
}

/* Bytes of the messages first..first+count of a stream. */
static uint64_t vnic_stream_bytes(uint32_t first, int count)
{
    uint64_t sum = 0;

    for (int i = 0; i < count; i++)
        sum += vnic_sizes[(first + (uint32_t)i) % STU_ARRAY_SIZE(vnic_sizes)];
    return sum;
}

/*
 * Each end's member counters: bytes adding up to bytes, at least msgs messages over the
 * members (a striped one counts on each), every member with bytes when all_carry, and
 * only the members in lost marked lost, each with an error.
 */
static void vnic_check_counts(const sts_pair_t *p, uint64_t bytes, uint64_t msgs, bool all_carry,
                              uint32_t lost)
{
    const stt_comm_t *c[2] = {p->send, p->recv};

    for (int s = 0; s < 2; s++) {
        uint64_t sum = 0, nmsgs = 0;
        assert_int_equal(c[s]->nmembers, 2);
        for (int m = 0; m < 2; m++) {
            const stt_member_stats_t *ms = &c[s]->members[m];
            fprintf(stderr, "  %s member %d: %llu bytes, %llu messages, %llu errors, %s\n",
                    s ? "receiver" : "sender", m, (unsigned long long)ms->bytes,
                    (unsigned long long)ms->msgs, (unsigned long long)ms->errors,
                    ms->lost ? "lost" : "up");
            sum += ms->bytes;
            nmsgs += ms->msgs;
            if (all_carry)
                assert_true(ms->bytes > 0);
            assert_int_equal(ms->lost, (lost >> m) & 1u);
            if (lost & (1u << m))
                assert_true(ms->errors > 0);
            else
                assert_int_equal(ms->errors, 0);
        }
        assert_int_equal(sum, bytes);
        assert_true(nmsgs >= msgs);
    }
}

/* Both comms of p run on the two members, QP q on member q % 2, and each member carried work. */
static void vnic_check_members(const sts_pair_t *p, int nqps)
{
    const stt_ib_conn_t *c[2] = {(const stt_ib_conn_t *)p->send, (const stt_ib_conn_t *)p->recv};

    for (int s = 0; s < 2; s++) {
        assert_int_equal(c[s]->nmembers, 2);
        assert_int_equal(c[s]->nqps, nqps);
        assert_true(c[s]->m[0].ctx != c[s]->m[1].ctx || c[s]->m[0].dev->port !=
                    c[s]->m[1].dev->port);
        for (int q = 0; q < nqps; q++)
            assert_int_equal(c[s]->qps[q].member, q % 2);
    }
    for (int q = 0; q < nqps; q++)
        assert_true(c[0]->qps[q].sq_posted > 0);        /* every sender QP carried payload */
}

static void vnic_env(const char *nqps, const char *split)
{
    setenv("STRATA_IB_QPS_PER_CONNECTION", nqps, 1);
    setenv("STRATA_IB_SPLIT_MIN", split, 1);
    stu_param_reload();
}

static void vnic_env_reset(void)
{
    unsetenv("STRATA_IB_QPS_PER_CONNECTION");
    unsetenv("STRATA_IB_SPLIT_MIN");
    stu_param_reload();
}

static void test_vnic_stream(void **state)
{
    int v = vnic_make(state);
    sts_pair_t p;

    sts_pair_must_open(ops, v, v, &p);
    vnic_stream(&p, 0, 24, true);
    vnic_stream(&p, 100, 12, false);                    /* registered on the fly, per member */
    vnic_check_members(&p, 2);
    vnic_check_counts(&p, vnic_stream_bytes(0, 24) + vnic_stream_bytes(100, 12), 36, true, 0);
    sts_xfer_ok(&p, 3u << 20, 3u << 20, 1, 7, 0);
    sts_xfer_ok(&p, 100, 4096, 2, 8, STS_XFER_UNREGISTERED | STS_XFER_SEND_FIRST);
    sts_pair_close(&p);
}

static void test_vnic_qps(void **state)
{
    int v = vnic_make(state);
    sts_pair_t p;

    vnic_env("4", "4096");                              /* two QPs per member, most striped */
    sts_pair_must_open(ops, v, v, &p);
    vnic_stream(&p, 0, 12, true);
    vnic_check_members(&p, 4);
    sts_pair_close(&p);
    vnic_env("1", "1");                                 /* one per member, everything striped */
    sts_pair_must_open(ops, v, v, &p);
    vnic_stream(&p, 0, 12, false);
    vnic_check_members(&p, 2);
    sts_pair_close(&p);
    vnic_env_reset();
}

/* A grouped receive whose buffers fill from sends striped and whole, on both members. */
static void test_vnic_grouped(void **state)
{
    int v = vnic_make(state);
    sts_pair_t p;
    enum { N = 4 };
    static const size_t len[N] = {5, 70000, (1u << 20) + 3, 4096};
    sts_buf_t sb[N], rb[N];
    void *rd[N], *rmh[N];
    size_t cap[N], got[N];
    int tags[N] = {1, 2, 3, 4};
    stt_req_t *rr = NULL, *sr[N] = {0};

    sts_pair_must_open(ops, v, v, &p);
    for (int i = 0; i < N; i++) {
        assert_ok(sts_buf_alloc(&sb[i], p.send, len[i]));
        assert_ok(sts_buf_alloc(&rb[i], p.recv, len[i] + 64));
        for (size_t j = 0; j < len[i]; j++)
            sb[i].data[j] = (char)vnic_byte(50u + (uint32_t)i, j);
        rd[i] = rb[i].data;
        rmh[i] = rb[i].mh;
        cap[i] = len[i] + 64;
    }
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    while (rr == NULL) {
        assert_ok(stt_irecv(p.recv, N, rd, cap, tags, rmh, &rr));
        assert_false(stu_deadline_passed(deadline));
    }
    for (int i = N - 1; i >= 0; i--)                     /* any order: matched by tag */
        while (sr[i] == NULL)
            assert_ok(stt_isend(p.send, sb[i].data, len[i], tags[i], sb[i].mh, &sr[i]));
    for (int i = 0; i < N; i++)
        assert_ok(sts_req_wait(sr[i], deadline, NULL));
    assert_ok(sts_req_wait(rr, deadline, got));
    for (int i = 0; i < N; i++) {
        assert_int_equal(got[i], len[i]);
        for (size_t j = 0; j < len[i]; j++)
            assert_int_equal((uint8_t)rb[i].data[j], vnic_byte(50u + (uint32_t)i, j));
        sts_buf_free(&sb[i]);
        sts_buf_free(&rb[i]);
    }
    sts_pair_close(&p);
}

/* A fused device and a single port do not connect: both ends say why, nothing hangs. */
static void test_vnic_mismatch(void **state)
{
    int v = vnic_make(state);
    stt_listen_t *l = NULL;
    uint8_t handle[STT_HANDLE_SIZE];
    stt_comm_t *s = NULL, *r = NULL;

    assert_ok(stt_listen(ops, v, handle, &l));
    uint64_t deadline = sts_deadline(STS_CONNECT_TIMEOUT_S);
    strata_status_t st = STRATA_OK;
    while (st == STRATA_OK && s == NULL && !stu_deadline_passed(deadline)) {
        st = stt_connect(ops, 0, handle, NULL, &s);
        assert_ok(stt_accept(l, &r));
        assert_null(r);
        poll(NULL, 0, 1);
    }
    assert_null(s);
    assert_true(st != STRATA_OK);                       /* the listener closed the hello */
    stt_close_listen(l);
}

/* Member m's link goes down mid-stream: the stream finishes intact, both ends fail over once. */
static void vnic_failover(void **state, int m)
{
    int v = vnic_make(state);
    char nd[32];
    const char *netdev = vnic_netdev(m, nd, sizeof(nd));
    sts_pair_t p;

    if (netdev == NULL)
        skip();
    sts_pair_must_open(ops, v, v, &p);
    const stt_ib_conn_t *sc = (const stt_ib_conn_t *)p.send, *rc = (const stt_ib_conn_t *)p.recv;
    char ibdev[64];
    snprintf(ibdev, sizeof(ibdev), "%s", sc->m[m].ctx->name);
    uint64_t t0 = stu_time_ns();
    vnic_stream(&p, 0, 40, true);
    double whole = (double)(stu_time_ns() - t0) / 1e9;
    t0 = stu_time_ns();
    vnic_stream_down(&p, 40, 40, true, 8, netdev);
    fprintf(stderr, "member %d (%s over %s) lost mid-stream: 40 messages in %.3f s (the same 40"
            " before: %.3f s)\n", m, ibdev, netdev, (double)(stu_time_ns() - t0) / 1e9, whole);
    assert_int_equal(sc->dead, 1u << m);
    assert_int_equal(rc->dead, 1u << m);
    assert_int_equal(p.send->failovers, 1);
    assert_int_equal(p.recv->failovers, 1);
    assert_int_equal(sc->epoch, 1);
    vnic_stream(&p, 100, 12, false);                      /* and it keeps working */
    vnic_check_counts(&p, vnic_stream_bytes(0, 80) + vnic_stream_bytes(100, 12), 92, true,
                      1u << m);
    sts_pair_close(&p);
    vnic_link_up(netdev);
    sts_pair_must_open(ops, v, v, &p);                    /* new comms use both members again */
    vnic_stream(&p, 200, 6, true);
    assert_int_equal(((const stt_ib_conn_t *)p.send)->dead, 0);
    sts_pair_close(&p);
}

/* After each failover case, whatever it left: both members' links up and their ports ACTIVE. */
static int vnic_links_restore(void **state)
{
    char nd[32];

    (void)state;
    for (int m = 0; m < 2; m++) {
        const char *netdev = vnic_netdev(m, nd, sizeof(nd));
        if (netdev != NULL)
            vnic_link(netdev, "up");
    }
    if (vnic_netdev(0, nd, sizeof(nd)) != NULL)
        vnic_ports_wait();
    return 0;
}

static void test_vnic_failover_member1(void **state)
{
    vnic_failover(state, 1);
}

static void test_vnic_failover_member0(void **state)
{
    vnic_failover(state, 0);
}

/* RC's settings the run gave (the Soft-RoCE suite's short ones), kept while a case changes them. */
static char vnic_rc_saved[2][32];
static bool vnic_rc_changed;

/* on: RC's retries far past the test's bound (4.096 us x 2^31 x 8 tries: hours); off: the run's. */
static void vnic_rc_slow(bool on)
{
    static const char *const names[2] = {"STRATA_IB_TIMEOUT", "STRATA_IB_RETRY_CNT"};
    static const char *const slow[2] = {"31", "7"};

    if (on == vnic_rc_changed)
        return;
    vnic_rc_changed = on;
    for (int i = 0; i < 2; i++) {
        if (on) {
            const char *e = getenv(names[i]);
            snprintf(vnic_rc_saved[i], sizeof(vnic_rc_saved[i]), "%s", e != NULL ? e : "");
            setenv(names[i], slow[i], 1);
        } else if (vnic_rc_saved[i][0] != '\0') {
            setenv(names[i], vnic_rc_saved[i], 1);
        } else {
            unsetenv(names[i]);
        }
    }
    stu_param_reload();
}

static int vnic_port_event_teardown(void **state)
{
    vnic_rc_slow(false);
    return vnic_links_restore(state);
}

/*
 * Member 1's link goes down while nothing is in flight, with RC's retries far past the
 * test's bound: no work request can fail, so only the port's PORT_ERR event can find
 * the loss; both ends must fail over (each end's progress alone, no traffic), and the
 * comm then carries a stream on member 0 with every byte checked.
 */
static void test_vnic_failover_port_event(void **state)
{
    int v = vnic_make(state), m = 1;
    char nd[32];
    const char *netdev = vnic_netdev(m, nd, sizeof(nd));
    sts_pair_t p;

    if (netdev == NULL)
        skip();
    vnic_rc_slow(true);
    sts_pair_must_open(ops, v, v, &p);
    stt_ib_send_t *sc = (stt_ib_send_t *)p.send;
    stt_ib_recv_t *rc = (stt_ib_recv_t *)p.recv;
    vnic_stream(&p, 0, 8, true);
    vnic_link(netdev, "down");
    uint64_t t0 = stu_time_ns(), deadline = sts_deadline(STS_IO_TIMEOUT_S);
    while (sc->conn.dead == 0 || rc->conn.dead == 0 || stt_ib_fo_send_busy(sc)) {
        assert_ok(stt_ib_send_progress(sc));
        assert_ok(stt_ib_recv_progress(rc));
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
    }
    fprintf(stderr, "member %d's port down with nothing in flight: both ends failed over in"
            " %.3f s (RC's retries: hours)\n", m, (double)(stu_time_ns() - t0) / 1e9);
    assert_int_equal(sc->conn.dead, 1u << m);
    assert_int_equal(rc->conn.dead, 1u << m);
    /* in one process both ends watch the same port: each saw the event itself */
    assert_int_equal(sc->conn.port_lost, 1u << m);
    assert_int_equal(rc->conn.port_lost, 1u << m);
    assert_int_equal(p.send->failovers, 1);
    assert_int_equal(p.recv->failovers, 1);
    vnic_stream(&p, 100, 12, true);
    vnic_check_counts(&p, vnic_stream_bytes(0, 8) + vnic_stream_bytes(100, 12), 20, true,
                      1u << m);
    sts_pair_close(&p);
}

/* Both members down: both ends fail within the bound, nothing hangs. */
static void test_vnic_failover_all(void **state)
{
    int v = vnic_make(state);
    char nd0[32], nd1[32];
    const char *n0 = vnic_netdev(0, nd0, sizeof(nd0)), *n1 = vnic_netdev(1, nd1, sizeof(nd1));
    sts_pair_t p;
    sts_buf_t sb, rb;

    if (n0 == NULL || n1 == NULL)
        skip();
    sts_pair_must_open(ops, v, v, &p);
    vnic_stream(&p, 0, 4, true);
    assert_ok(sts_buf_alloc(&sb, p.send, 1u << 20));
    assert_ok(sts_buf_alloc(&rb, p.recv, 1u << 20));
    vnic_link(n0, "down");
    vnic_link(n1, "down");
    uint64_t t0 = stu_time_ns(), deadline = sts_deadline(STS_IO_TIMEOUT_S);
    strata_status_t ss = STRATA_OK, rs = STRATA_OK;
    for (int i = 0; i < 64 && (ss == STRATA_OK || rs == STRATA_OK); i++) {
        stt_req_t *sr = NULL, *rr = NULL;
        void *rd = rb.data, *rmh = rb.mh;
        size_t cap = 1u << 20;
        int tag = 9;
        if (rs == STRATA_OK)
            rs = stt_irecv(p.recv, 1, &rd, &cap, &tag, &rmh, &rr);
        if (ss == STRATA_OK)
            ss = stt_isend(p.send, sb.data, 1u << 20, 9, sb.mh, &sr);
        while ((sr != NULL || rr != NULL) && !stu_deadline_passed(deadline)) {
            if (sr != NULL && (ss = sts_req_poke(&sr, NULL)) != STRATA_OK)
                sr = NULL;
            if (rr != NULL && (rs = sts_req_poke(&rr, NULL)) != STRATA_OK)
                rr = NULL;
            poll(NULL, 0, 1);
        }
        assert_false(stu_deadline_passed(deadline));
    }
    fprintf(stderr, "both members lost: send %s, receive %s, %.3f s\n", strata_status_str(ss),
            strata_status_str(rs), (double)(stu_time_ns() - t0) / 1e9);
    assert_true(ss != STRATA_OK);
    assert_true(rs != STRATA_OK);
    sts_buf_dereg(&sb);
    sts_buf_dereg(&rb);
    sts_pair_close(&p);
    sts_buf_free_data(&sb);
    sts_buf_free_data(&rb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vnic_device),
        cmocka_unit_test(test_vnic_stream),
        cmocka_unit_test(test_vnic_qps),
        cmocka_unit_test(test_vnic_grouped),
        cmocka_unit_test(test_vnic_mismatch),
        cmocka_unit_test_teardown(test_vnic_failover_member1, vnic_links_restore),
        cmocka_unit_test_teardown(test_vnic_failover_member0, vnic_links_restore),
        cmocka_unit_test_teardown(test_vnic_failover_port_event, vnic_port_event_teardown),
        cmocka_unit_test_teardown(test_vnic_failover_all, vnic_links_restore),
    };
    return cmocka_run_group_tests(tests, ib_group_setup, sts_conf_teardown);
}
