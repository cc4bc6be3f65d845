/*
 * The TCP transport in one process over loopback, normal operation: devices,
 * handshake, small and striped messages, many in flight, grouped receives,
 * registration, flush, close with requests pending.
 */
#include "tcp_fixture.h"

static void test_devices_and_props(void **state)
{
    int ndev = 0;
    stt_props_t props;

    assert_ok(stt_probe(ops));
    assert_ok(stt_devices(ops, &ndev));
    assert_int_equal(ndev, 1);
    assert_ok(stt_get_props(ops, 0, &props));
    assert_string_equal(props.name, "lo");
    assert_string_equal(props.pci_path, "");
    assert_int_equal(props.ptr_support, STT_PTR_HOST);
    assert_int_equal(props.reg_is_global, 0);
    assert_int_equal(props.max_recvs, STT_MAX_RECVS);
    assert_int_equal(props.max_comms, 65536);
    assert_true(props.speed_mbps > 0);
    assert_true(props.max_p2p_bytes == (1ull << 40));
    assert_true(props.max_coll_bytes == (512ull << 20));
    /* the kernel copies the bytes; the fixture's one socket a connection splits nothing,
     * 4 of them stripe from STRATA_SOCKET_STRIPE_MIN (256K) */
    assert_int_equal(props.cpu_copies, 1);
    assert_int_equal(props.stripe_min, 0);
    tcp_env("4", "256K");
    assert_ok(stt_get_props(ops, 0, &props));
    assert_int_equal(props.stripe_min, 256 * 1024);
    tcp_env("1", "256K");
    assert_status(stt_get_props(ops, 1, &props), STRATA_ERR_NOT_FOUND);
    assert_status(stt_get_props(ops, -1, &props), STRATA_ERR_NOT_FOUND);

    /* Reference counting: a second init is cheap, the table survives one fini. */
    assert_ok(stt_init(ops));
    stt_fini(ops);
    assert_ok(stt_devices(ops, &ndev));
    assert_int_equal(ndev, 1);

    /* A bad family is refused at init; the current table is untouched. */
    setenv("STRATA_SOCKET_FAMILY", "AF_UNIX", 1);
    stu_param_reload();
    stt_fini(ops);
    assert_status(stt_init(ops), STRATA_ERR_INVALID);
    assert_status(stt_devices(ops, &ndev), STRATA_ERR_INVALID);   /* not initialised */
    tcp_env("1", "256K");
    assert_ok(stt_init(ops));                    /* init again after fini */
    assert_ok(stt_devices(ops, &ndev));
    assert_int_equal(ndev, 1);
}

/* Default discovery: loopback only ever appears as the sole, fallback device. */
static void test_default_discovery(void **state)
{
    int ndev = 0;
    stt_props_t props;

    stt_fini(ops);
    unsetenv("STRATA_SOCKET_IFNAME");
    stu_param_reload();
    assert_ok(stt_init(ops));
    assert_ok(stt_devices(ops, &ndev));
    assert_true(ndev >= 1);
    for (int d = 0; d < ndev; d++) {
        assert_ok(stt_get_props(ops, d, &props));
        assert_true(strncmp(props.name, "docker", 6) != 0);
        if (strcmp(props.name, "lo") == 0)
            assert_int_equal(ndev, 1);
    }
    /* Whatever was chosen can talk to itself (NCCL connects to its own listeners). */
    sts_pair_t p = {0};
    sts_pair_must_open(ops, 0, 0, &p);
    sts_xfer_ok(&p, 3000, 3000, 1, 5, STS_XFER_UNREGISTERED);
    sts_pair_close(&p);
    stt_fini(ops);
    tcp_env("1", "256K");
    assert_ok(stt_init(ops));
}

/* IPv6 loopback, where the machine has it. */
static void test_ipv6_loopback(void **state)
{
    int ndev = 0;

    stt_fini(ops);
    setenv("STRATA_SOCKET_FAMILY", "AF_INET6", 1);
    stu_param_reload();
    assert_ok(stt_init(ops));
    assert_ok(stt_devices(ops, &ndev));
    if (ndev > 0) {
        sts_pair_t p = {0};
        sts_pair_must_open(ops, 0, 0, &p);
        sts_xfer_ok(&p, 100000, 100000, 2, 6, STS_XFER_UNREGISTERED);
        sts_pair_close(&p);
    }
    stt_fini(ops);
    tcp_env("1", "256K");
    assert_ok(stt_init(ops));
    if (ndev == 0)
        skip();
}

static void test_small_messages(void **state)
{
    static const size_t sizes[] = {0, 1, 2, 23, 24, 25, 1000, 4096, 65537, 200000};
    sts_pair_t p = {0};

    sts_pair_must_open(ops, 0, 0, &p);
    for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        sts_xfer_ok(&p, sizes[i], sizes[i], (int)i, i, STS_XFER_UNREGISTERED);
        /* a buffer larger than the send */
        sts_xfer_ok(&p, sizes[i], sizes[i] + 100, -1, i + 50, STS_XFER_UNREGISTERED);
    }
    sts_pair_close(&p);
}

static void test_striped_messages(void **state)
{
    static const char *nsocks[] = {"2", "3", "4", "8"};
    static const size_t sizes[] = {0, 1, 4096, 10000, 1 << 20, (4 << 20) + 13};

    for (unsigned k = 0; k < sizeof(nsocks) / sizeof(nsocks[0]); k++) {
        sts_pair_t p = {0};
        tcp_env(nsocks[k], "0");     /* stripe everything, even 0-byte messages */
        sts_pair_must_open(ops, 0, 0, &p);
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            sts_xfer_ok(&p, sizes[i], sizes[i] + 4096 * (i & 1), 7, i + k, STS_XFER_UNREGISTERED);
        sts_pair_close(&p);
    }
    tcp_env("1", "256K");
}

/* Many messages in flight at once, mixing striped and whole ones, posted before receives. */
static void test_many_in_flight(void **state)
{
    enum { N = STT_MAX_SEND_REQUESTS };
    sts_pair_t p = {0};
    static uint8_t src[N][1024], dst[N][1024];
    stt_req_t *sreq[N], *rreq[N], *extra = NULL;

    tcp_env("3", "512");
    sts_pair_must_open(ops, 0, 0, &p);
    for (int i = 0; i < N; i++) {
        sts_pattern_fill(src[i], sizeof(src[i]), (unsigned)i);
        memset(dst[i], 0, sizeof(dst[i]));
        size_t len = (size_t)(i * 4) % 1024;
        assert_ok(stt_isend(p.send, src[i], len, 1, NULL, &sreq[i]));
        assert_non_null(sreq[i]);
    }
    /* The ring is full: the next send must say "again" with OK and NULL. */
    assert_ok(stt_isend(p.send, src[0], 1, 1, NULL, &extra));
    assert_null(extra);
    for (int i = 0; i < N; i++) {
        void *data[1] = {dst[i]};
        size_t cap[1] = {sizeof(dst[i])};
        int tag[1] = {1};
        assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq[i]));
        assert_non_null(rreq[i]);
    }
    /* Release out of order: receives from the newest, sends from the oldest. */
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    for (int left = 2 * N; left > 0;) {
        for (int i = 0; i < N; i++) {
            size_t got[1];
            if (sreq[i] != NULL) {
                assert_ok(sts_req_poke(&sreq[i], got));
                left -= sreq[i] == NULL;
            }
            int r = N - 1 - i;
            if (rreq[r] != NULL) {
                assert_ok(sts_req_poke(&rreq[r], got));
                if (rreq[r] == NULL) {
                    left--;
                    assert_int_equal(got[0], (size_t)(r * 4) % 1024);
                    assert_pattern(dst[r], got[0], (unsigned)r);
                }
            }
        }
        assert_false(stu_deadline_passed(deadline));
    }
    sts_pair_close(&p);
    tcp_env("1", "256K");
}

static void test_grouped_receive(void **state)
{
    sts_pair_t p = {0};
    uint8_t src[3][5000], dst[3][6000];
    stt_req_t *sreq[3], *rreq = NULL;
    void *data[3] = {dst[0], dst[1], dst[2]};
    size_t caps[3] = {6000, 6000, 6000}, got[3] = {0};
    int tags[3] = {5, 6, 7};
    static const int send_tags[3] = {7, 5, 6};
    static const size_t send_sizes[3] = {5000, 0, 4321};

    tcp_env("2", "4096");
    sts_pair_must_open(ops, 0, 0, &p);
    assert_ok(stt_irecv(p.recv, 3, data, caps, tags, NULL, &rreq));
    for (int i = 0; i < 3; i++) {
        sts_pattern_fill(src[i], send_sizes[i], (unsigned)i + 9);
        assert_ok(stt_isend(p.send, src[i], send_sizes[i], send_tags[i], NULL, &sreq[i]));
    }
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    while (rreq != NULL || sreq[0] || sreq[1] || sreq[2]) {
        size_t s[1];
        for (int i = 0; i < 3; i++)
            assert_ok(sts_req_poke(&sreq[i], s));
        assert_ok(sts_req_poke(&rreq, got));
        assert_false(stu_deadline_passed(deadline));
    }
    /* tag 7 -> buffer 2, tag 5 -> buffer 0, tag 6 -> buffer 1 */
    assert_int_equal(got[2], 5000);
    assert_int_equal(got[0], 0);
    assert_int_equal(got[1], 4321);
    assert_pattern(dst[2], 5000, 9);
    assert_pattern(dst[1], 4321, 11);
    sts_pair_close(&p);
    tcp_env("1", "256K");
}

static void test_registration_and_flush(void **state)
{
    sts_pair_t p = {0};
    uint8_t buf[4096];
    void *mh = NULL, *dmh = NULL;
    stt_req_t *req = NULL;
    int done = 0;

    sts_pair_must_open(ops, 0, 0, &p);
    assert_ok(stt_reg_mr(p.recv, buf, sizeof(buf), STT_PTR_HOST, &mh));
    assert_non_null(mh);
    assert_status(stt_reg_mr(p.recv, buf, sizeof(buf), STT_PTR_CUDA, &dmh),
                  STRATA_ERR_UNSUPPORTED);
    assert_null(dmh);
    assert_status(stt_reg_mr_dmabuf(p.recv, buf, sizeof(buf), STT_PTR_CUDA, 0, 3, &dmh),
                  STRATA_ERR_UNSUPPORTED);
    assert_null(dmh);

    void *data[1] = {buf};
    int isz[1] = {100};
    assert_ok(stt_iflush(p.recv, 1, data, isz, &mh, &req));
    assert_non_null(req);
    assert_ok(stt_test(req, &done, NULL));
    assert_int_equal(done, 1);
    /* Released: testing it again is caught. */
    assert_status(stt_test(req, &done, NULL), STRATA_ERR_INVALID);

    /* A buffer outside its registration is refused. */
    size_t cap[1] = {sizeof(buf) + 1};
    int tag[1] = {0};
    void *mhs[1] = {mh};
    assert_status(stt_irecv(p.recv, 1, data, cap, tag, mhs, &req), STRATA_ERR_INVALID);
    /* Bad arguments are refused, not crashed on. */
    assert_status(stt_irecv(p.recv, 9, data, cap, tag, NULL, &req), STRATA_ERR_INVALID);
    assert_status(stt_irecv(p.recv, 0, data, cap, tag, NULL, &req), STRATA_ERR_INVALID);
    assert_status(stt_isend(p.recv, buf, 1, 0, NULL, &req), STRATA_ERR_INVALID);
    assert_status(stt_isend(p.send, NULL, 1, 0, NULL, &req), STRATA_ERR_INVALID);
    assert_status(stt_isend(p.send, buf, (1ull << 40) + 1, 0, NULL, &req), STRATA_ERR_INVALID);
    assert_status(stt_dereg_mr(p.send, mh), STRATA_ERR_INVALID);   /* other comm */
    assert_ok(stt_dereg_mr(p.recv, mh));
    sts_pair_close(&p);
}

/* Closing comms with requests still pending must neither crash nor leak. */
static void test_close_in_flight(void **state)
{
    sts_pair_t p = {0};
    size_t big = 16 << 20;
    uint8_t *src = calloc(1, big), *dst = malloc(big);
    stt_req_t *sreq = NULL, *rreq = NULL, *rreq2 = NULL;
    void *data[1] = {dst};
    size_t cap[1] = {big};
    int tag[1] = {0};

    tcp_env("2", "64K");
    sts_pair_must_open(ops, 0, 0, &p);
    assert_ok(stt_isend(p.send, src, big, 0, NULL, &sreq));
    assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq));
    assert_ok(stt_irecv(p.recv, 1, data, cap, tag, NULL, &rreq2));
    assert_non_null(sreq);
    assert_non_null(rreq2);
    sts_pair_close(&p);
    free(src);
    free(dst);
    tcp_env("1", "256K");
}

/* NCCL embeds the handle in its own structs: listen and connect take it at any alignment. */
static void test_unaligned_handle(void **state)
{
    _Alignas(16) uint8_t lbuf[STT_HANDLE_SIZE + 16], cbuf[STT_HANDLE_SIZE + 16];
    uint8_t *lh = lbuf + 4, *ch = cbuf + 3;
    sts_pair_t p = {0};
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    assert_ok(stt_listen(ops, 0, lh, &p.listen));
    memcpy(ch, lh, STT_HANDLE_SIZE);
    while (p.send == NULL || p.recv == NULL) {
        if (p.send == NULL)
            assert_ok(stt_connect(ops, 0, ch, NULL, &p.send));
        if (p.recv == NULL)
            assert_ok(stt_accept(p.listen, &p.recv));
        assert_false(stu_deadline_passed(deadline));
    }
    sts_xfer_ok(&p, 70000, 70000, 3, 9, STS_XFER_UNREGISTERED);
    sts_pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devices_and_props),
        cmocka_unit_test(test_default_discovery),
        cmocka_unit_test(test_ipv6_loopback),
        cmocka_unit_test(test_small_messages),
        cmocka_unit_test(test_striped_messages),
        cmocka_unit_test(test_many_in_flight),
        cmocka_unit_test(test_grouped_receive),
        cmocka_unit_test(test_registration_and_flush),
        cmocka_unit_test(test_close_in_flight),
        cmocka_unit_test(test_unaligned_handle),
    };
    return cmocka_run_group_tests(tests, tcp_group_setup, sts_conf_teardown);
}
