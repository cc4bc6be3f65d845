/*
 * Virtual NICs of the ib transport in one process: make_vdev's entry (member
 * order, properties, the same index twice, refusals), a connection between
 * two fused devices streaming small (round robin) and large (striped) messages
 * with every byte checked, several QPs per member, grouped receives, and the
 * refusal of a fused device talking to an unfused one. In the Soft-RoCE guest
 * the fused device is rxe0+rxe1, so member r of one end talks to member r of
 * the other. Skips with fewer than two verbs ports.
 */
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

/* Streams count messages over pair, VNIC_WINDOW in flight, every byte checked. */
static void vnic_stream(sts_pair_t *p, uint32_t first, int count, bool registered)
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vnic_device),
        cmocka_unit_test(test_vnic_stream),
        cmocka_unit_test(test_vnic_qps),
        cmocka_unit_test(test_vnic_grouped),
        cmocka_unit_test(test_vnic_mismatch),
    };
    return cmocka_run_group_tests(tests, ib_group_setup, sts_conf_teardown);
}
