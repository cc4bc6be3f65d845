/*
 * The ib transport in one process, normal operation: properties, handshake,
 * sizes from 0 to 16 MiB with data and guard checks (registered buffers and
 * NULL handles), receives larger than the send, grouped receives, truncation,
 * the contract's in-flight budget, several QPs per connection, the
 * adaptive-routing completion, flush and the registration cache. Each case
 * runs listen on device 0 and connect on ib_peer_dev() (rxe1 in the guest).
 * Skips where no verbs device is ACTIVE.
 */
#include "ib_pair.h"

static void test_props(void **state)
{
    stt_props_t props;

    IB_NEED_DEVICE();
    for (int d = 0; d < ib_ndev; d++) {
        assert_int_equal(stt_get_props(ops, d, &props), STRATA_OK);
        assert_true(props.name[0] != '\0');
        assert_true(props.ptr_support & STT_PTR_HOST);
        assert_int_equal(props.reg_is_global, 1);
        assert_int_equal(props.max_recvs, STT_MAX_RECVS);
        assert_true(props.max_comms > 0);
        assert_true(props.speed_mbps > 0);
        assert_true(props.port >= 1);
        if (strncmp(props.name, "rxe", 3) == 0)
            assert_string_equal(props.pci_path, "");      /* virtual device */
        fprintf(stderr, "dev %d: %s port %d, %d Mbps, max_comms %d, ptr 0x%x, pci '%s'\n", d,
                props.name, props.port, props.speed_mbps, props.max_comms, props.ptr_support,
                props.pci_path);
    }
    assert_int_equal(stt_get_props(ops, ib_ndev, &props), STRATA_ERR_NOT_FOUND);
    assert_int_equal(stt_init(ops), STRATA_OK);     /* reference counted */
    stt_fini(ops);
}

static void test_connect_accept(void **state)
{
    ib_pair_t p[3];

    IB_NEED_DEVICE();
    ib_pair_open_on(&p[0], 0, 0);
    ib_pair_open_on(&p[1], 0, ib_peer_dev());
    ib_pair_open_on(&p[2], ib_peer_dev(), 0);
    for (int i = 0; i < 3; i++) {
        ib_xfer_one(&p[i], 100, 100, 1, (unsigned)i, false, true);
        ib_pair_close(&p[i]);
    }
    /* Several connections through one listener, interleaved. */
    ib_pair_t q;
    stt_comm_t *s2 = NULL, *r2 = NULL;
    uint8_t h2[STT_HANDLE_SIZE];
    uint64_t start = stu_time_ns();
    ib_pair_open(&q);
    memcpy(h2, q.handle, sizeof(h2));
    while (s2 == NULL || r2 == NULL) {
        if (s2 == NULL)
            assert_int_equal(stt_connect(ops, ib_peer_dev(), h2, NULL, &s2), STRATA_OK);
        if (r2 == NULL)
            assert_int_equal(stt_accept(q.listen, &r2), STRATA_OK);
        assert_false(ib_past(start));
    }
    stt_close_send(s2);
    stt_close_recv(r2);
    ib_pair_close(&q);
}

static const size_t sizes_list[] = {0, 1, 7, 128, 4095, 4096, 65537, 1048575,
                                    (4u << 20) + 3, 16u << 20};

static void test_sizes(void **state)
{
    ib_pair_t p;

    IB_NEED_DEVICE();
    ib_pair_open(&p);
    for (size_t i = 0; i < STU_ARRAY_SIZE(sizes_list); i++) {
        size_t s = sizes_list[i];
        ib_xfer_one(&p, s, s, (int)i, (unsigned)i, true, i % 2 == 0);
        ib_xfer_one(&p, s, s, (int)i, (unsigned)i + 100, false, i % 2 == 1);
    }
    ib_pair_close(&p);
}

static void test_recv_larger(void **state)
{
    static const size_t cases[][2] = {{1000, 65536}, {0, 4096}, {1, 2}, {300000, 1048576},
                                      {(5u << 20) + 1, 8u << 20}};
    ib_pair_t p;

    IB_NEED_DEVICE();
    ib_pair_open(&p);
    for (size_t i = 0; i < STU_ARRAY_SIZE(cases); i++)
        ib_xfer_one(&p, cases[i][0], cases[i][1], 3, (unsigned)i, i % 2 == 0, i % 2 == 0);
    ib_pair_close(&p);
}

/* One grouped receive of n buffers; sends posted in the order perm gives. */
static void grouped_once(ib_pair_t *p, int n, const int *tags, const size_t *ssz,
                         const size_t *cap, const int *perm, unsigned seed,
                         strata_status_t want)
{
    uint8_t *src[STT_MAX_RECVS], *dst[STT_MAX_RECVS];
    void *data[STT_MAX_RECVS];
    stt_req_t *sreq[STT_MAX_RECVS], *rreq = NULL;
    size_t got[STT_MAX_RECVS], caps[STT_MAX_RECVS];
    strata_status_t rs = STRATA_OK;
    uint64_t start = stu_time_ns();

    for (int i = 0; i < n; i++) {
        src[i] = malloc(ssz[i] ? ssz[i] : 1);
        dst[i] = malloc(cap[i] ? cap[i] : 1);
        assert_non_null(src[i]);
        assert_non_null(dst[i]);
        ib_fill(src[i], ssz[i], seed + (unsigned)i);
        data[i] = dst[i];
        caps[i] = cap[i];
    }
    assert_int_equal(stt_irecv(p->recv, n, data, caps, tags, NULL, &rreq), STRATA_OK);
    assert_non_null(rreq);
    assert_int_equal(rreq->nsizes, n);
    for (int k = 0; k < n; k++) {
        int i = perm[k];
        assert_int_equal(stt_isend(p->send, src[i], ssz[i], tags[i], NULL, &sreq[k]),
                         STRATA_OK);
        assert_non_null(sreq[k]);
    }
    for (;;) {
        bool any = false;
        for (int k = 0; k < n; k++) {
            size_t one[1];
            (void)ib_poke(&sreq[k], one);   /* a truncated send fails; the receive says so */
            any = any || sreq[k] != NULL;
        }
        if (rreq != NULL) {
            strata_status_t s = ib_poke(&rreq, got);
            if (s != STRATA_OK)
                rs = s;
        }
        if (!any && rreq == NULL)
            break;
        assert_false(ib_past(start));
    }
    assert_int_equal(rs, want);
    if (want == STRATA_OK) {
        /* Sends land in posting order on the first open buffer with their tag. */
        bool used[STT_MAX_RECVS] = {false};
        for (int k = 0; k < n; k++) {
            int i = perm[k], b = -1;
            for (int j = 0; j < n && b < 0; j++)
                if (!used[j] && tags[j] == tags[i])
                    b = j;
            assert_true(b >= 0);
            used[b] = true;
            assert_int_equal(got[b], ssz[i]);
            assert_true(ib_check(dst[b], ssz[i], seed + (unsigned)i));
        }
    }
    for (int i = 0; i < n; i++) {
        free(src[i]);
        free(dst[i]);
    }
}

static void test_grouped(void **state)
{
    static const int tags[8] = {5, 3, 9, 3, 1, 7, 0, 2};
    static const int perm[8] = {7, 2, 0, 1, 6, 3, 5, 4};
    static const int ident[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    static const size_t ssz[8] = {0, 1, 4096, 65536, 100, (4u << 20) + 5, 777, 3};
    static const size_t cap[8] = {16, 1, 8192, 65536, 100, 5u << 20, 1024, 3};
    ib_pair_t p;

    IB_NEED_DEVICE();
    ib_pair_open(&p);
    grouped_once(&p, 8, tags, ssz, cap, perm, 10, STRATA_OK);
    grouped_once(&p, 8, tags, ssz, cap, ident, 20, STRATA_OK);
    grouped_once(&p, 2, tags, ssz, cap, ident, 30, STRATA_OK);
    /* the same tag twice: the first send takes the first buffer */
    static const int same[2] = {4, 4};
    static const size_t s2[2] = {10, 20}, c2[2] = {64, 64};
    grouped_once(&p, 2, same, s2, c2, ident, 40, STRATA_OK);
    ib_pair_close(&p);
}

/* A send larger than its buffer fails that receive and the send; the next message is fine. */
static void test_truncation(void **state)
{
    static const size_t cases[][2] = {{4000, 1000}, {1, 0}, {1u << 20, 256u << 10},
                                      {300000, 299999}, {(6u << 20), 4u << 20}};
    ib_pair_t p;

    IB_NEED_DEVICE();
    ib_pair_open(&p);
    for (size_t i = 0; i < STU_ARRAY_SIZE(cases); i++) {
        size_t ssize = cases[i][0], cap = cases[i][1];
        uint8_t *src = calloc(1, ssize), *dst = calloc(1, cap + 64);
        void *data[1] = {dst};
        size_t caps[1] = {cap}, got[1];
        int tags[1] = {1};
        stt_req_t *sreq = NULL, *rreq = NULL;
        strata_status_t ss;
        assert_int_equal(stt_irecv(p.recv, 1, data, caps, tags, NULL, &rreq), STRATA_OK);
        assert_int_equal(stt_isend(p.send, src, ssize, 1, NULL, &sreq), STRATA_OK);
        assert_int_equal(ib_wait2(sreq, rreq, got, &ss), STRATA_ERR_TRUNCATED);
        assert_int_equal(ss, STRATA_ERR_TRUNCATED);
        for (size_t j = 0; j < cap + 64; j++)
            assert_int_equal(dst[j], 0);               /* nothing was written */
        free(src);
        free(dst);
        ib_xfer_one(&p, cap + 100, cap + 100, 2, (unsigned)i, false, i % 2 == 0);
    }
    /* In a grouped receive: one buffer overflows, the receive fails as a whole. */
    static const int tags[3] = {1, 2, 3}, ident[3] = {0, 1, 2};
    static const size_t ssz[3] = {10, 5000, 10}, cap[3] = {10, 4999, 10};
    grouped_once(&p, 3, tags, ssz, cap, ident, 50, STRATA_ERR_TRUNCATED);
    ib_xfer_one(&p, 12345, 12345, 7, 77, true, true);
    ib_pair_close(&p);
}

static size_t flight_size(int i)
{
    return 1 + ((size_t)i * 7919u) % (64u << 10);
}

/* STT_MAX_REQUESTS grouped receives and 8x as many sends in flight, sends posted first. */
static void test_in_flight(void **state)
{
    const int n = STT_MAX_RECVS, nrecv = STT_MAX_REQUESTS, nsend = nrecv * n;
    ib_pair_t p;

    IB_NEED_DEVICE();
    size_t *off = calloc((size_t)nsend + 1, sizeof(*off));
    stt_req_t **sreq = calloc((size_t)nsend, sizeof(*sreq));
    stt_req_t **rreq = calloc((size_t)nrecv, sizeof(*rreq));
    size_t (*got)[STT_MAX_RECVS] = calloc((size_t)nrecv, sizeof(*got));
    assert_true(off && sreq && rreq && got);
    for (int i = 0; i < nsend; i++)
        off[i + 1] = off[i] + flight_size(i);
    uint8_t *sbuf = malloc(off[nsend]), *rbuf = calloc(1, off[nsend]);
    void *smh, *rmh;
    assert_non_null(sbuf);
    assert_non_null(rbuf);
    for (int i = 0; i < nsend; i++)
        ib_fill(sbuf + off[i], flight_size(i), (unsigned)i);
    ib_pair_open(&p);
    assert_int_equal(stt_reg_mr(p.send, sbuf, off[nsend], STT_PTR_HOST, &smh), STRATA_OK);
    assert_int_equal(stt_reg_mr(p.recv, rbuf, off[nsend], STT_PTR_HOST, &rmh), STRATA_OK);
    for (int i = 0; i < nsend; i++) {
        assert_int_equal(stt_isend(p.send, sbuf + off[i], flight_size(i), i % n, smh,
                                   &sreq[i]), STRATA_OK);
        assert_non_null(sreq[i]);
    }
    for (int r = 0; r < nrecv; r++) {
        void *data[STT_MAX_RECVS], *mhs[STT_MAX_RECVS];
        size_t caps[STT_MAX_RECVS];
        int tags[STT_MAX_RECVS];
        for (int b = 0; b < n; b++) {
            int i = r * n + b;
            data[b] = rbuf + off[i];
            caps[b] = flight_size(i);
            tags[b] = b;
            mhs[b] = rmh;
        }
        assert_int_equal(stt_irecv(p.recv, n, data, caps, tags, mhs, &rreq[r]), STRATA_OK);
        assert_non_null(rreq[r]);
    }
    uint64_t start = stu_time_ns();
    for (int left = nsend + nrecv; left > 0;) {
        left = 0;
        for (int i = 0; i < nsend; i++) {
            size_t one[1];
            assert_int_equal(ib_poke(&sreq[i], one), STRATA_OK);
            left += sreq[i] != NULL;
        }
        for (int r = 0; r < nrecv; r++) {
            assert_int_equal(ib_poke(&rreq[r], got[r]), STRATA_OK);
            left += rreq[r] != NULL;
        }
        assert_false(ib_past(start));
    }
    for (int i = 0; i < nsend; i++) {
        assert_int_equal(got[i / n][i % n], flight_size(i));
        assert_true(ib_check(rbuf + off[i], flight_size(i), (unsigned)i));
    }
    /* One more receive than the budget is refused with "again" while all are pending. */
    assert_int_equal(stt_dereg_mr(p.send, smh), STRATA_OK);
    assert_int_equal(stt_dereg_mr(p.recv, rmh), STRATA_OK);
    ib_pair_close(&p);
    free(sbuf);
    free(rbuf);
    free(off);
    free(sreq);
    free(rreq);
    free(got);
}

/* The receive ring is full at STT_MAX_REQUESTS; the next irecv says "again". */
static void test_recv_budget(void **state)
{
    stt_req_t *rreq[STT_MAX_REQUESTS + 1];
    uint8_t buf[STT_MAX_REQUESTS][8];
    ib_pair_t p;

    IB_NEED_DEVICE();
    ib_pair_open(&p);
    for (int r = 0; r <= STT_MAX_REQUESTS; r++) {
        void *data[1] = {buf[r % STT_MAX_REQUESTS]};
        size_t caps[1] = {8};
        int tags[1] = {0};
        assert_int_equal(stt_irecv(p.recv, 1, data, caps, tags, NULL, &rreq[r]), STRATA_OK);
        if (r < STT_MAX_REQUESTS)
            assert_non_null(rreq[r]);
        else
            assert_null(rreq[r]);
    }
    for (int r = 0; r < STT_MAX_REQUESTS; r++) {
        stt_req_t *sreq = NULL;
        uint8_t src[8] = {(uint8_t)r};
        assert_int_equal(stt_isend(p.send, src, 8, 0, NULL, &sreq), STRATA_OK);
        assert_int_equal(ib_wait2(sreq, rreq[r], NULL, NULL), STRATA_OK);
        assert_int_equal(buf[r][0], (uint8_t)r);
    }
    ib_pair_close(&p);
}

static void env_qps(const char *nqps, const char *split, const char *ar, const char *ar_thr)
{
    setenv("STRATA_IB_QPS_PER_CONNECTION", nqps, 1);
    setenv("STRATA_IB_SPLIT_MIN", split, 1);
    setenv("STRATA_IB_ADAPTIVE_ROUTING", ar, 1);
    setenv("STRATA_IB_AR_THRESHOLD", ar_thr, 1);
    stu_param_reload();
}

static void env_reset(void)
{
    unsetenv("STRATA_IB_QPS_PER_CONNECTION");
    unsetenv("STRATA_IB_SPLIT_MIN");
    unsetenv("STRATA_IB_ADAPTIVE_ROUTING");
    unsetenv("STRATA_IB_AR_THRESHOLD");
    stu_param_reload();
}

static void qps_and_ar_run(void)
{
    static const int tags[4] = {1, 2, 3, 4}, perm[4] = {3, 1, 0, 2};
    static const size_t ssz[4] = {70000, 5, (4u << 20) + 9, 4096}, cap[4] = {70000, 5,
                                                                          5u << 20, 8192};
    ib_pair_t p;

    ib_pair_open(&p);
    for (size_t i = 0; i < STU_ARRAY_SIZE(sizes_list); i++)
        ib_xfer_one(&p, sizes_list[i], sizes_list[i], 1, (unsigned)i + 200, i % 2, i % 2);
    grouped_once(&p, 4, tags, ssz, cap, perm, 300, STRATA_OK);
    static const size_t tsz[4] = {70000, 5, (4u << 20) + 9, 9000};
    grouped_once(&p, 4, tags, tsz, cap, perm, 310, STRATA_ERR_TRUNCATED);
    ib_xfer_one(&p, 3u << 20, 3u << 20, 1, 320, true, true);
    ib_pair_close(&p);
}

static void test_multi_qp(void **state)
{
    IB_NEED_DEVICE();
    env_qps("4", "4096", "0", "8192");
    qps_and_ar_run();
    env_qps("3", "1", "0", "8192");
    qps_and_ar_run();
    env_reset();
}

static void test_adaptive_routing(void **state)
{
    IB_NEED_DEVICE();
    env_qps("1", "64K", "1", "1024");
    qps_and_ar_run();
    env_qps("2", "64K", "1", "0");
    qps_and_ar_run();
    env_reset();
}

/* Sets STRATA_IB_FLUSH for one test; flush_env_restore puts back what the caller's env had. */
static char flush_env_saved[32];
static int flush_env_had;

static void flush_env_set(const char *value)
{
    const char *old = getenv("STRATA_IB_FLUSH");
    flush_env_had = old != NULL;
    snprintf(flush_env_saved, sizeof(flush_env_saved), "%s", old ? old : "");
    setenv("STRATA_IB_FLUSH", value, 1);
    stu_param_reload();
}

static void flush_env_restore(void)
{
    if (flush_env_had)
        setenv("STRATA_IB_FLUSH", flush_env_saved, 1);
    else
        unsetenv("STRATA_IB_FLUSH");
    stu_param_reload();
}

static void test_flush(void **state)
{
    ib_pair_t p;
    stt_req_t *req = NULL;
    uint8_t buf[64];
    void *data[1] = {buf};
    int sizes[1] = {64};
    int done = 0;

    IB_NEED_DEVICE();
    /* The default on a device without GPU memory: no flush QP, done at once. */
    flush_env_set("-1");
    ib_pair_open(&p);
    assert_null(((stt_ib_recv_t *)p.recv)->conn.flush_qp.qp);
    assert_int_equal(stt_iflush(p.recv, 1, data, sizes, NULL, &req), STRATA_OK);
    assert_non_null(req);
    assert_int_equal(req->nsizes, 0);
    assert_int_equal(stt_test(req, &done, NULL), STRATA_OK);
    assert_int_equal(done, 1);
    ib_pair_close(&p);
    flush_env_restore();
}

/*
 * STRATA_IB_FLUSH=1: every iflush is a real loopback RDMA read of the last
 * non-empty buffer's first byte, which lands in the comm's flush sink.
 */
static void test_flush_read(void **state)
{
    ib_pair_t p;
    uint8_t a[64], b[32];
    void *data[3] = {a, b, a};
    int sizes[3] = {64, 32, 0};
    void *mh = NULL;

    IB_NEED_DEVICE();
    flush_env_set("1");
    ib_pair_open(&p);
    stt_ib_recv_t *rc = (stt_ib_recv_t *)p.recv;
    assert_non_null(rc->conn.flush_qp.qp);
    assert_int_equal(stt_reg_mr(p.recv, b, sizeof(b), STT_PTR_HOST, &mh), STRATA_OK);
    for (int round = 0; round < 3 * STT_IB_FIFO_DEPTH; round++) {
        stt_req_t *req = NULL;
        void *mhs[3] = {NULL, mh, NULL};
        b[0] = (uint8_t)(0x40 + round);
        /* buffers without a handle are registered for the read, then released */
        assert_int_equal(stt_iflush(p.recv, round % 2 ? 2 : 3, data, sizes,
                                    round % 3 ? mhs : NULL, &req), STRATA_OK);
        assert_non_null(req);
        uint64_t start = stu_time_ns();
        while (req != NULL) {
            assert_int_equal(ib_poke(&req, NULL), STRATA_OK);
            assert_false(ib_past(start));
        }
        assert_int_equal(*rc->flush_sink & 0xff, (uint8_t)(0x40 + round));
    }
    /* Nothing to read (every size 0): done at once, no read posted. */
    stt_req_t *req = NULL;
    int zero[1] = {0};
    int done = 0;
    *rc->flush_sink = 0;
    assert_int_equal(stt_iflush(p.recv, 1, data, zero, NULL, &req), STRATA_OK);
    if (req != NULL) {
        assert_int_equal(stt_test(req, &done, NULL), STRATA_OK);
        assert_int_equal(done, 1);
    }
    assert_int_equal(*rc->flush_sink, 0);
    /* Data still flows on the comm with its flush QP. */
    ib_xfer_one(&p, 100000, 100000, 5, 77, false, true);
    assert_int_equal(stt_dereg_mr(p.recv, mh), STRATA_OK);
    /* A flush still in flight at close (its on-the-fly registration goes with it). */
    req = NULL;
    assert_int_equal(stt_iflush(p.recv, 2, data, sizes, NULL, &req), STRATA_OK);
    assert_non_null(req);
    ib_pair_close(&p);
    flush_env_restore();
}

/* reg_mr of a sub-range of a registered range is a cache hit: the same handle. */
static void test_mr_cache(void **state)
{
    ib_pair_t p;
    void *a, *b, *c;
    size_t len = 1u << 20;

    IB_NEED_DEVICE();
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    ib_pair_open(&p);
    assert_int_equal(stt_reg_mr(p.send, buf, len, STT_PTR_HOST, &a), STRATA_OK);
    assert_int_equal(stt_reg_mr(p.recv, buf + 4096, 8192, STT_PTR_HOST, &b), STRATA_OK);
    if (p.send->dev == p.recv->dev)
        assert_ptr_equal(a, b);
    ib_xfer_one(&p, 1000, 1000, 0, 1, false, true);
    assert_int_equal(stt_dereg_mr(p.recv, b), STRATA_OK);
    assert_int_equal(stt_reg_mr(p.send, buf + 100, 10, STT_PTR_HOST, &c), STRATA_OK);
    assert_ptr_equal(a, c);
    assert_int_equal(stt_dereg_mr(p.send, c), STRATA_OK);
    assert_int_equal(stt_dereg_mr(p.send, a), STRATA_OK);
    assert_int_equal(stt_dereg_mr(p.send, a), STRATA_ERR_INVALID);  /* gone */
    assert_int_equal(stt_reg_mr(p.send, buf, len, STT_PTR_CUDA + 8, &a), STRATA_ERR_INVALID);
    ib_pair_close(&p);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_props),
        cmocka_unit_test(test_connect_accept),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_recv_larger),
        cmocka_unit_test(test_grouped),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_in_flight),
        cmocka_unit_test(test_recv_budget),
        cmocka_unit_test(test_multi_qp),
        cmocka_unit_test(test_adaptive_routing),
        cmocka_unit_test(test_flush),
        cmocka_unit_test(test_flush_read),
        cmocka_unit_test(test_mr_cache),
    };
    return cmocka_run_group_tests_name("ib_basic", tests, ib_group_setup, ib_group_teardown);
}
