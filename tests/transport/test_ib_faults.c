/*
 * The ib transport when things go wrong: a peer process killed mid-transfer
 * (sender and receiver side), a peer that closes its comm with work pending,
 * a peer whose QPs vanish while its side channel stays open (the QP retry
 * timeout must fail the transfer: STRATA_IB_TIMEOUT is made short here), bad
 * handles, and junk on the listener's side channel. Each must end in an
 * error within a bound, never a hang. Skips where no verbs device is ACTIVE.
 */
#define _GNU_SOURCE 1   /* pipe2 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>

#include "ib_fixture.h"
#include "tools/lib/tool_proc.h"

#define HELPER STRATA_BUILD_DIR "/tests/transport/helper_ib_peer"

typedef struct peer_proc {
    pid_t pid;
    FILE *out;
} peer_proc_t;

static void peer_spawn(peer_proc_t *pp, const char *role, int dev, const char *hex)
{
    int pipefd[2];
    char devs[16];

    snprintf(devs, sizeof(devs), "%d", dev);
    char *argv[] = {(char *)HELPER, (char *)role, devs, (char *)hex, NULL};
    assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
    stb_spawn_t s = {.argv = argv, .stdout_fd = pipefd[1]};
    assert_ok(stb_proc_spawn(&s, &pp->pid));
    close(pipefd[1]);
    pp->out = fdopen(pipefd[0], "r");
    assert_non_null(pp->out);
}

static void peer_kill(peer_proc_t *pp)
{
    stb_proc_kill(pp->pid, NULL);
    fclose(pp->out);
}

static void hex_of(const uint8_t *h, char *hex)
{
    for (int i = 0; i < STT_HANDLE_SIZE; i++)
        sprintf(hex + 2 * i, "%02x", h[i]);
}

/* Polls one request until it is done or failed; returns its status and the time taken. */
static strata_status_t until_end(stt_req_t *req, double *secs)
{
    uint64_t start = stu_time_ns();
    strata_status_t s = sts_reqs_finish(NULL, req, NULL, NULL);

    *secs = (double)(stu_time_ns() - start) / 1e9;
    return s;
}

static void test_killed_sender(void **state)
{
    static uint8_t buf[1u << 20];
    uint8_t handle[STT_HANDLE_SIZE];
    char hex[2 * STT_HANDLE_SIZE + 1], line[64];
    stt_listen_t *l;
    stt_comm_t *rc = NULL;
    peer_proc_t pp;
    void *data[1] = {buf};
    size_t size = sizeof(buf);
    int tag = 0;
    double secs;

    IB_NEED_DEVICE();
    assert_ok(stt_listen(ops, 0, handle, &l));
    hex_of(handle, hex);
    peer_spawn(&pp, "send", ib_peer_dev(), hex);
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    while (rc == NULL) {
        assert_ok(stt_accept(l, &rc));
        assert_false(stu_deadline_passed(deadline));
    }
    stt_req_t *req = NULL;
    assert_ok(stt_irecv(rc, 1, data, &size, &tag, NULL, &req));
    assert_ok(until_end(req, &secs));
    assert_non_null(fgets(line, sizeof(line), pp.out));      /* "ready" */
    /* Receives posted while the sender dies: all fail, none hangs. */
    stt_req_t *reqs[4];
    for (int i = 0; i < 4; i++)
        assert_ok(stt_irecv(rc, 1, data, &size, &tag, NULL, &reqs[i]));
    peer_kill(&pp);
    strata_status_t s = STRATA_OK;
    for (int i = 0; i < 4 && s == STRATA_OK; i++)
        s = until_end(reqs[i], &secs);
    assert_status(s, STRATA_ERR_REMOTE);
    fprintf(stderr, "receive failed %.3f s after the sender was killed\n", secs);
    stt_req_t *again = NULL;
    assert_status(stt_irecv(rc, 1, data, &size, &tag, NULL, &again), STRATA_ERR_REMOTE);
    stt_close_recv(rc);
    stt_close_listen(l);
}

static void test_killed_receiver(void **state)
{
    static uint8_t buf[1u << 20];
    uint8_t handle[STT_HANDLE_SIZE];
    char hex[2 * STT_HANDLE_SIZE + 8], line[64];
    stt_comm_t *sc = NULL;
    peer_proc_t pp;
    double secs;

    IB_NEED_DEVICE();
    peer_spawn(&pp, "recv", ib_peer_dev(), "");
    assert_non_null(fgets(hex, sizeof(hex), pp.out));
    for (int i = 0; i < STT_HANDLE_SIZE; i++)
        assert_int_equal(sscanf(hex + 2 * i, "%2hhx", &handle[i]), 1);
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    while (sc == NULL) {
        assert_ok(stt_connect(ops, 0, handle, NULL, &sc));
        assert_false(stu_deadline_passed(deadline));
    }
    stt_req_t *req = NULL;
    assert_ok(stt_isend(sc, buf, sizeof(buf), 0, NULL, &req));
    assert_ok(until_end(req, &secs));
    assert_non_null(fgets(line, sizeof(line), pp.out));
    stt_req_t *reqs[8];
    for (int i = 0; i < 8; i++)
        assert_ok(stt_isend(sc, buf, sizeof(buf), 0, NULL, &reqs[i]));
    peer_kill(&pp);
    strata_status_t s = STRATA_OK;
    for (int i = 0; i < 8 && s == STRATA_OK; i++)
        s = until_end(reqs[i], &secs);
    assert_status(s, STRATA_ERR_REMOTE);
    fprintf(stderr, "send failed %.3f s after the receiver was killed\n", secs);
    stt_close_send(sc);
}

/* The peer closes its comm with work pending on ours: fails, does not hang. */
static void test_peer_closes(void **state)
{
    static uint8_t buf[4096];
    sts_pair_t p;
    stt_req_t *req = NULL;
    void *data[1] = {buf};
    size_t size = sizeof(buf);
    int tag = 0;
    double secs;

    IB_NEED_DEVICE();
    ib_pair_open(&p);
    assert_ok(stt_isend(p.send, buf, sizeof(buf), 0, NULL, &req));
    stt_close_recv(p.recv);
    p.recv = NULL;
    assert_status(until_end(req, &secs), STRATA_ERR_REMOTE);
    sts_pair_close(&p);

    ib_pair_open(&p);
    assert_ok(stt_irecv(p.recv, 1, data, &size, &tag, NULL, &req));
    stt_close_send(p.send);
    p.send = NULL;
    assert_status(until_end(req, &secs), STRATA_ERR_REMOTE);
    sts_pair_close(&p);
}

/*
 * The receiver's QPs vanish but its side channel stays open: only the RC
 * retry timeout can tell (STRATA_IB_TIMEOUT=10: 4 ms per try, 2 retries).
 */
static void test_qp_timeout(void **state)
{
    const size_t big = 64u << 20;
    size_t size = big;
    int tag = 0;
    sts_pair_t p;
    double secs;

    IB_NEED_DEVICE();
    uint8_t *src = calloc(1, big), *dst = calloc(1, big);
    void *data[1] = {dst};
    assert_non_null(src);
    assert_non_null(dst);
    setenv("STRATA_IB_TIMEOUT", "10", 1);
    setenv("STRATA_IB_RETRY_CNT", "2", 1);
    stu_param_reload();
    ib_pair_open(&p);
    stt_req_t *rreq = NULL, *sreq = NULL;
    assert_ok(stt_irecv(p.recv, 1, data, &size, &tag, NULL, &rreq));
    assert_ok(stt_isend(p.send, src, big, 0, NULL, &sreq));
    stt_ib_send_t *sc = (stt_ib_send_t *)p.send;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    while (sc->q_head != sc->q_tail) {       /* until the CTS arrived and the payload is posted */
        int done = 0;
        assert_ok(stt_test(sreq, &done, NULL));
        assert_false(done);
        assert_false(stu_deadline_passed(deadline));
    }
    stt_ib_conn_quiesce(&((stt_ib_recv_t *)p.recv)->conn);
    assert_status(until_end(sreq, &secs), STRATA_ERR_REMOTE);
    fprintf(stderr, "send failed %.3f s after the receiver's QPs were destroyed\n", secs);
    sts_pair_close(&p);
    unsetenv("STRATA_IB_TIMEOUT");
    unsetenv("STRATA_IB_RETRY_CNT");
    stu_param_reload();
    free(src);
    free(dst);
}

/*
 * The sender reads clear-to-send entries from memory the NIC writes. A slot
 * whose seq matches while another field is still stale (a write landing out
 * of order) must be read again, not fail the comm. Here the receive's real
 * CTS lands first; the test then makes the entry look torn (a stale n next
 * to the right seq), lets the send read it fewer times than
 * STT_IB_FIFO_SETTLE_READS, and "finishes the write" by restoring n.
 */
static void test_cts_torn_heals(void **state)
{
    sts_pair_t p;
    uint8_t src[4096], dst[4096];
    void *data[1] = {dst};
    size_t size = sizeof(dst);
    int tag = 7;

    IB_NEED_DEVICE();
    ib_pair_open(&p);
    stt_ib_send_t *sc = (stt_ib_send_t *)p.send;
    volatile stt_ib_fifo_entry_t *e = &sc->fifo[0].e[0];
    stt_req_t *sreq = NULL, *rreq = NULL;
    assert_ok(stt_irecv(p.recv, 1, data, &size, &tag, NULL, &rreq));
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    while (e->seq != 1 || e->n != 1) {       /* the receiver's CTS write has landed */
        int done = 0;
        assert_ok(stt_test(rreq, &done, NULL));
        assert_false(stu_deadline_passed(deadline));
    }
    e->n = 0;                                /* torn: no receive has that many buffers */
    sts_pattern_fill(src, sizeof(src), 31);
    assert_ok(stt_isend(p.send, src, sizeof(src), tag, NULL, &sreq));
    assert_non_null(sreq);
    for (unsigned i = 0; i + 2 < STT_IB_FIFO_SETTLE_READS; i++) {
        int done = 0;
        assert_ok(stt_test(sreq, &done, NULL));   /* read again, no error */
        assert_false(done);
    }
    e->n = 1;                                /* the rest of the write lands */
    size_t got[1] = {0};
    assert_ok(sts_reqs_finish(sreq, rreq, got, NULL));
    assert_int_equal(got[0], sizeof(src));
    assert_pattern(dst, sizeof(src), 31);
    sts_pair_close(&p);
}

/* A slot that stays malformed fails the send comm with STRATA_ERR_REMOTE, after the settle time. */
static void test_cts_malformed_fails(void **state)
{
    sts_pair_t p;
    uint8_t src[64];
    double secs = 0;

    IB_NEED_DEVICE();
    ib_pair_open(&p);
    stt_ib_send_t *sc = (stt_ib_send_t *)p.send;
    volatile stt_ib_fifo_entry_t *e = &sc->fifo[0].e[0];
    e->n = STT_MAX_RECVS + 1;
    e->seq = 1;
    stt_req_t *sreq = NULL;
    assert_ok(stt_isend(p.send, src, sizeof(src), 0, NULL, &sreq));
    assert_status(until_end(sreq, &secs), STRATA_ERR_REMOTE);
    fprintf(stderr, "a malformed clear-to-send failed the send after %.3f s\n", secs);
    sts_pair_close(&p);
}

static void test_bad_handles(void **state)
{
    uint8_t handle[STT_HANDLE_SIZE];
    stt_listen_t *l;
    stt_comm_t *c = NULL;

    IB_NEED_DEVICE();
    memset(handle, 0x5a, sizeof(handle));
    assert_status(stt_connect(ops, 0, handle, NULL, &c), STRATA_ERR_INVALID);
    assert_ok(stt_listen(ops, 0, handle, &l));
    stt_ib_handle_t *h = (stt_ib_handle_t *)handle;
    h->version++;
    assert_status(stt_connect(ops, 0, handle, NULL, &c), STRATA_ERR_INVALID);
    h->version--;
    assert_status(stt_connect(ops, ib_ndev() + 3, handle, NULL, &c), STRATA_ERR_NOT_FOUND);
    assert_status(stt_listen(ops, ib_ndev(), handle, &l), STRATA_ERR_NOT_FOUND);
    stt_close_listen(l);
}

/* Junk and a stale listener id on the side channel are dropped; the listener stays usable. */
static void test_listener_junk(void **state)
{
    sts_pair_t p;
    uint8_t junk[STT_IB_META_BYTES];

    IB_NEED_DEVICE();
    ib_pair_open(&p);
    stt_ib_handle_t *h = (stt_ib_handle_t *)p.handle;
    socklen_t len = h->addr.sa.sa_family == AF_INET ? sizeof(h->addr.in4) : sizeof(h->addr.in6);
    for (int k = 0; k < 2; k++) {
        int fd = socket(h->addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(connect(fd, &h->addr.sa, len), 0);
        memset(junk, k == 0 ? 0x77 : 0, sizeof(junk));
        if (k == 1) {
            stt_ib_meta_t m;
            memset(&m, 0, sizeof(m));
            m.kind = STT_IB_META_HELLO;
            m.nqps = 1;
            m.nmembers = 1;
            m.m[0].mtu = 3;
            m.addr = 4096;
            m.qpn[0] = 5;
            m.listener_id = h->listener_id + 1;         /* not this listener */
            stt_ib_meta_encode(&m, junk);
        }
        assert_int_equal(send(fd, junk, sizeof(junk), MSG_NOSIGNAL), (ssize_t)sizeof(junk));
        uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
        for (;;) {
            stt_comm_t *c = NULL;
            char b;
            assert_ok(stt_accept(p.listen, &c));
            assert_null(c);
            ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno == ECONNRESET))
                break;
            assert_false(stu_deadline_passed(deadline));
            poll(NULL, 0, 1);
        }
        close(fd);
    }
    /* A real connection through the same listener still works. */
    stt_comm_t *s2 = NULL, *r2 = NULL;
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    while (s2 == NULL || r2 == NULL) {
        if (s2 == NULL)
            assert_ok(stt_connect(ops, ib_peer_dev(), p.handle, NULL, &s2));
        if (r2 == NULL)
            assert_ok(stt_accept(p.listen, &r2));
        assert_false(stu_deadline_passed(deadline));
    }
    stt_close_send(s2);
    stt_close_recv(r2);
    sts_pair_close(&p);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed_sender),
        cmocka_unit_test(test_killed_receiver),
        cmocka_unit_test(test_peer_closes),
        cmocka_unit_test(test_qp_timeout),
        cmocka_unit_test(test_cts_torn_heals),
        cmocka_unit_test(test_cts_malformed_fails),
        cmocka_unit_test(test_bad_handles),
        cmocka_unit_test(test_listener_junk),
    };
    return cmocka_run_group_tests_name("ib_faults", tests, ib_group_setup, sts_conf_teardown);
}
