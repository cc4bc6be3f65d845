/*
 * The TCP transport's receive staging buffer (tcp_recv.c): socket 0 is read
 * STT_TCP_STAGE_BYTES at a time whenever a header is due, and small payloads
 * are copied out of that buffer. These cases put bytes in the kernel first
 * (waiting until the receive socket reports them queued, FIONREAD), then let
 * the receiver read, so where the reads cut the stream is known: many small
 * messages at once, a header split across reads and across the stage's end,
 * payloads ending exactly at the stage's end, small then large, truncation and
 * garbage behind a staged message, EOF behind one, and what poll_fds names
 * while bytes sit in the stage. Bad-peer cases use a raw socket that speaks
 * the wire format itself (tcp_wire.h), which also pins the format down.
 */
#include <sys/ioctl.h>

#include "tcp_fixture.h"

/* Bytes the kernel holds for the receive comm's socket j. */
static int queued(stt_comm_t *recv, int j)
{
    int n = -1;

    assert_int_equal(ioctl(((stt_tcp_recv_t *)recv)->conn.socks[j].fd, FIONREAD, &n), 0);
    return n;
}

/* Waits (bounded) until socket j of the receive comm holds at least `bytes` bytes. */
static void wait_queued(stt_comm_t *recv, int j, int bytes)
{
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    while (queued(recv, j) < bytes) {
        assert_false(stu_deadline_passed(deadline));
        poll(NULL, 0, 1);
    }
}

static stt_req_t *post_recv(stt_comm_t *recv, void *dst, size_t cap, int tag)
{
    void *data[1] = {dst};
    size_t caps[1] = {cap};
    int tags[1] = {tag};
    stt_req_t *req = NULL;

    assert_ok(stt_irecv(recv, 1, data, caps, tags, NULL, &req));
    assert_non_null(req);
    return req;
}

/* Finishes one receive; returns its status and the size it got. */
static strata_status_t finish(stt_req_t *req, size_t *got_p)
{
    return sts_reqs_finish(NULL, req, got_p, NULL);
}

/*
 * A receive on a comm that failed, or is about to (the failure may be seen by
 * irecv itself or only by a later test, depending on when the peer's bytes or
 * FIN arrived): it fails with STRATA_ERR_REMOTE either way.
 */
static void expect_recv_fails(stt_comm_t *recv)
{
    uint8_t dst[64];
    void *data[1] = {dst};
    size_t caps[1] = {sizeof(dst)};
    int tags[1] = {1};
    stt_req_t *req = NULL;
    strata_status_t status = stt_irecv(recv, 1, data, caps, tags, NULL, &req);

    if (status == STRATA_OK) {
        assert_non_null(req);
        status = finish(req, NULL);
    }
    assert_status(status, STRATA_ERR_REMOTE);
}

/* ------------------------------------------------------------------ a raw peer */

typedef struct raw_peer {
    stt_listen_t *listen;
    stt_comm_t *recv;
    int fd;                  /* plays the sender's socket 0 */
    uint32_t seq;
} raw_peer_t;

static void raw_open(raw_peer_t *rp)
{
    uint8_t handle[STT_HANDLE_SIZE], hello_buf[STT_TCP_HELLO_BYTES];
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);

    memset(rp, 0, sizeof(*rp));
    assert_ok(stt_listen(ops, 0, handle, &rp->listen));
    const stt_tcp_handle_t *h = (const stt_tcp_handle_t *)handle;
    stt_tcp_hello_t hello = {.version = STT_TCP_PROTO_VERSION, .index = 0, .nsocks = 1,
                             .listener_id = h->listener_id, .conn_id = 77};
    memcpy(hello.secret, h->secret, sizeof(hello.secret));
    stt_tcp_hello_encode(&hello, hello_buf);
    rp->fd = raw_connect(handle);
    raw_send(rp->fd, hello_buf, sizeof(hello_buf));
    while (rp->recv == NULL) {
        assert_ok(stt_accept(rp->listen, &rp->recv));
        assert_false(stu_deadline_passed(deadline));
    }
}

static void raw_close(raw_peer_t *rp)
{
    if (rp->fd >= 0)
        close(rp->fd);
    stt_close_recv(rp->recv);
    stt_close_listen(rp->listen);
}

/* Appends one message (header and a sts_pattern_fill(seed) payload) to buf at *len. */
static void raw_frame(raw_peer_t *rp, uint8_t *buf, size_t *len, size_t size, int tag,
                      unsigned seed)
{
    stt_tcp_hdr_t hdr = {.flags = 0, .tag = tag, .seq = rp->seq++, .size = size};

    stt_tcp_hdr_encode(&hdr, buf + *len);
    sts_pattern_fill(buf + *len + STT_TCP_HDR_BYTES, size, seed);
    *len += STT_TCP_HDR_BYTES + size;
}

/* Writes buf and waits until the receiver's kernel holds all of it (plus `already`). */
static void raw_push(raw_peer_t *rp, const uint8_t *buf, size_t len, int already)
{
    raw_send(rp->fd, buf, len);
    wait_queued(rp->recv, 0, already + (int)len);
}

/*
 * Sends messages of the given sizes in one write and receives them one by one,
 * each receive posted only after the previous one completed, so the stage holds
 * the messages behind the current one.
 */
static void raw_stream_check(const size_t *sizes, int count)
{
    raw_peer_t rp;
    size_t total = 0, len = 0;

    for (int i = 0; i < count; i++)
        total += STT_TCP_HDR_BYTES + sizes[i];
    uint8_t *buf = malloc(total), *dst = malloc(64 << 10);
    assert_non_null(buf);
    assert_non_null(dst);
    raw_open(&rp);
    for (int i = 0; i < count; i++)
        raw_frame(&rp, buf, &len, sizes[i], i, (unsigned)i + 1);
    assert_int_equal(len, total);
    raw_push(&rp, buf, len, 0);
    for (int i = 0; i < count; i++) {
        size_t got;
        assert_true(sizes[i] <= (64 << 10));
        memset(dst, 0, sizes[i]);
        assert_ok(finish(post_recv(rp.recv, dst, 64 << 10, i), &got));
        assert_int_equal(got, sizes[i]);
        assert_pattern(dst, sizes[i], (unsigned)i + 1);
    }
    assert_int_equal(queued(rp.recv, 0), 0);
    raw_close(&rp);
    free(buf);
    free(dst);
}

/* ------------------------------------------------------------------ cases */

/*
 * Many small messages already in the kernel: one read takes a stage's worth,
 * and the receives after the first complete from the stage.
 */
static void test_many_small_back_to_back(void **state)
{
    static const char *nsocks[] = {"1", "4"};

    for (int k = 0; k < 2; k++) {
        enum { N = 200 };
        sts_pair_t p = {0};
        uint8_t *src = malloc(N * 8192), *dst = malloc(N * 8192);
        stt_req_t *sreq[N], *rreq[N];
        size_t size[N], want = 0;

        assert_non_null(src);
        assert_non_null(dst);
        tcp_env(nsocks[k], "4K");       /* with 4 sockets, sizes from 4 KiB are striped */
        setenv("STRATA_SOCKET_BUFSIZE", "4M", 1);    /* the kernel takes every send */
        stu_param_reload();
        sts_pair_must_open(ops, 0, 0, &p);
        for (int i = 0; i < N; i++) {
            /* 0, 1..700, and the sizes around the eager threshold and the stage's end. */
            static const size_t edge[] = {STT_TCP_STAGE_EAGER - 1, STT_TCP_STAGE_EAGER,
                                          STT_TCP_STAGE_EAGER + 1,
                                          STT_TCP_STAGE_BYTES - STT_TCP_HDR_BYTES,
                                          STT_TCP_STAGE_BYTES};
            size[i] = i % 10 == 9 ? edge[(i / 10) % 5] : (size_t)(i * 37) % 701;
            sts_pattern_fill(src + i * 8192, size[i], (unsigned)i);
            want += STT_TCP_HDR_BYTES + size[i];
        }
        for (int i = 0; i < N; i++)
            assert_ok(stt_isend(p.send, src + i * 8192, size[i], 5, NULL, &sreq[i]));
        for (int i = 0; i < N; i++)
            assert_ok(sts_reqs_finish(sreq[i], NULL, NULL, NULL));
        if (k == 0)
            wait_queued(p.recv, 0, (int)want);
        for (int i = 0; i < N; i++)
            rreq[i] = post_recv(p.recv, dst + i * 8192, 8192, 5);
        for (int i = 0; i < N; i++) {
            size_t got;
            assert_ok(finish(rreq[i], &got));
            assert_int_equal(got, size[i]);
            assert_pattern(dst + i * 8192, size[i], (unsigned)i);
        }
        sts_pair_close(&p);
        free(src);
        free(dst);
    }
    unsetenv("STRATA_SOCKET_BUFSIZE");
    tcp_env("1", "256K");
}

/*
 * Receives posted one at a time behind a burst: after the first receive the
 * kernel is empty (one read took all), and the later ones complete from the
 * stage alone.
 */
static void test_burst_is_read_once(void **state)
{
    sts_pair_t p = {0};
    uint8_t src[3][100], dst[100];
    stt_req_t *sreq = NULL;

    sts_pair_must_open(ops, 0, 0, &p);
    for (int i = 0; i < 3; i++) {
        sts_pattern_fill(src[i], sizeof(src[i]), (unsigned)i + 40);
        assert_ok(stt_isend(p.send, src[i], sizeof(src[i]), 1, NULL, &sreq));
        assert_ok(sts_reqs_finish(sreq, NULL, NULL, NULL));
    }
    wait_queued(p.recv, 0, 3 * (STT_TCP_HDR_BYTES + 100));
    for (int i = 0; i < 3; i++) {
        size_t got;
        memset(dst, 0, sizeof(dst));
        assert_ok(finish(post_recv(p.recv, dst, sizeof(dst), 1), &got));
        assert_int_equal(got, 100);
        assert_pattern(dst, 100, (unsigned)i + 40);
        assert_int_equal(queued(p.recv, 0), 0);
    }
    sts_pair_close(&p);
}

/* A header that arrives in pieces: 10 bytes, 14 bytes with part of the payload, the rest. */
static void test_header_split_across_reads(void **state)
{
    raw_peer_t rp;
    uint8_t buf[2 * (STT_TCP_HDR_BYTES + 300)], dst[300];
    size_t len = 0, got;

    raw_open(&rp);
    raw_frame(&rp, buf, &len, 300, 7, 9);
    stt_req_t *req = post_recv(rp.recv, dst, sizeof(dst), 7);
    int done = 0;
    raw_push(&rp, buf, 10, 0);
    assert_ok(stt_test(req, &done, NULL));
    assert_int_equal(done, 0);
    assert_int_equal(queued(rp.recv, 0), 0);       /* the 10 bytes are staged */
    raw_push(&rp, buf + 10, 14 + 100, 0);
    assert_ok(stt_test(req, &done, NULL));
    assert_int_equal(done, 0);
    raw_push(&rp, buf + 124, len - 124, 0);
    assert_ok(finish(req, &got));
    assert_int_equal(got, 300);
    assert_pattern(dst, 300, 9);

    /* A whole message and the first 5 bytes of the next header, then the rest. */
    len = 0;
    raw_frame(&rp, buf, &len, 20, 7, 10);
    size_t first = len;
    raw_frame(&rp, buf, &len, 250, 7, 11);
    raw_push(&rp, buf, first + 5, 0);
    req = post_recv(rp.recv, dst, sizeof(dst), 7);
    assert_ok(finish(req, &got));
    assert_int_equal(got, 20);
    assert_pattern(dst, 20, 10);
    req = post_recv(rp.recv, dst, sizeof(dst), 7);
    assert_ok(stt_test(req, &done, NULL));
    assert_int_equal(done, 0);
    raw_push(&rp, buf + first + 5, len - first - 5, 0);
    assert_ok(finish(req, &got));
    assert_int_equal(got, 250);
    assert_pattern(dst, 250, 11);
    raw_close(&rp);
}

/* Streams cut so that payloads and headers meet the end of the stage in every way. */
static void test_stage_boundaries(void **state)
{
    const size_t S = STT_TCP_STAGE_BYTES, H = STT_TCP_HDR_BYTES;
    size_t sizes[40];

    /* One message filling the stage exactly, then a small one. */
    sizes[0] = S - H;
    sizes[1] = 5;
    raw_stream_check(sizes, 2);
    /* 32 messages of 256 bytes with their headers end exactly at the stage's end. */
    for (int i = 0; i < 32; i++)
        sizes[i] = 256 - H;
    sizes[32] = 3;
    raw_stream_check(sizes, 33);
    /* The second header straddles the stage's end: 10 of its bytes are in the first read. */
    sizes[0] = S - H - 10;
    sizes[1] = 77;
    sizes[2] = 0;
    raw_stream_check(sizes, 3);
    /* A header ending exactly at the stage's end, its payload all behind it. */
    sizes[0] = S - 2 * H;
    sizes[1] = 1000;
    sizes[2] = 1;
    raw_stream_check(sizes, 3);
    /* A small payload split by the stage's end (its rest read through the stage again)... */
    sizes[0] = 100;
    sizes[1] = S - 100 - H;         /* its last 24 bytes fall behind the stage's end */
    sizes[2] = 9;
    raw_stream_check(sizes, 3);
    /* ...and a large one (its rest read straight into the buffer). */
    sizes[0] = 100;
    sizes[1] = 40000;
    sizes[2] = 12;
    raw_stream_check(sizes, 3);
    /* Empty messages only. */
    for (int i = 0; i < 40; i++)
        sizes[i] = 0;
    raw_stream_check(sizes, 40);
}

/* A small message then a large one (striped or not), both in the kernel before reading. */
static void test_small_then_large(void **state)
{
    static const char *nsocks[] = {"1", "4"};
    size_t big = (1 << 20) + 3;

    for (int k = 0; k < 2; k++) {
        sts_pair_t p = {0};
        uint8_t *src = malloc(big), *dst = malloc(big), small_src[60], small_dst[60];
        stt_req_t *s1 = NULL, *s2 = NULL, *s3 = NULL, *r1, *r2, *r3;
        size_t got;

        assert_non_null(src);
        assert_non_null(dst);
        tcp_env(nsocks[k], "64K");
        setenv("STRATA_SOCKET_BUFSIZE", "4M", 1);    /* the kernel takes all of it */
        stu_param_reload();
        sts_pair_must_open(ops, 0, 0, &p);
        sts_pattern_fill(small_src, sizeof(small_src), 3);
        sts_pattern_fill(src, big, 4);
        assert_ok(stt_isend(p.send, small_src, 60, 0, NULL, &s1));
        assert_ok(stt_isend(p.send, src, big, 0, NULL, &s2));
        assert_ok(stt_isend(p.send, small_src, 60, 0, NULL, &s3));
        r1 = post_recv(p.recv, small_dst, sizeof(small_dst), 0);
        r2 = post_recv(p.recv, dst, big, 0);
        assert_ok(sts_reqs_finish(s1, r1, &got, NULL));
        assert_int_equal(got, 60);
        assert_pattern(small_dst, 60, 3);
        memset(small_dst, 0, sizeof(small_dst));
        r3 = post_recv(p.recv, small_dst, sizeof(small_dst), 0);
        assert_ok(sts_reqs_finish(s2, r2, &got, NULL));
        assert_int_equal(got, big);
        assert_pattern(dst, big, 4);
        assert_ok(sts_reqs_finish(s3, r3, &got, NULL));
        assert_int_equal(got, 60);
        assert_pattern(small_dst, 60, 3);
        sts_pair_close(&p);
        free(src);
        free(dst);
    }
    unsetenv("STRATA_SOCKET_BUFSIZE");
    tcp_env("1", "256K");
}

/* Messages too large for their buffers, staged whole or in part: truncated, stream in sync. */
static void test_truncation_of_staged(void **state)
{
    /* Staged whole, staged whole, fits; 1546 bytes staged and the rest read straight
     * into the drain buffer, fits (the first read takes 8 KiB of the 26.7 KiB). */
    static const size_t sizes[5] = {500, 6000, 50, 20000, 60};
    static const strata_status_t want[5] = {STRATA_ERR_TRUNCATED, STRATA_ERR_TRUNCATED,
                                            STRATA_OK, STRATA_ERR_TRUNCATED, STRATA_OK};
    sts_pair_t p = {0};
    uint8_t *src = malloc(20000), dst[5][100];
    stt_req_t *sreq = NULL, *r[5];
    int total = 0;

    assert_non_null(src);
    sts_pair_must_open(ops, 0, 0, &p);
    sts_pattern_fill(src, 20000, 8);
    for (int i = 0; i < 5; i++) {
        assert_ok(stt_isend(p.send, src, sizes[i], 2, NULL, &sreq));
        assert_ok(sts_reqs_finish(sreq, NULL, NULL, NULL));
        total += STT_TCP_HDR_BYTES + (int)sizes[i];
    }
    wait_queued(p.recv, 0, total);
    for (int i = 0; i < 5; i++)
        r[i] = post_recv(p.recv, dst[i], sizeof(dst[i]), 2);
    for (int i = 0; i < 5; i++) {
        size_t got;
        assert_status(finish(r[i], &got), want[i]);
        if (want[i] == STRATA_OK) {
            assert_int_equal(got, sizes[i]);
            assert_pattern(dst[i], sizes[i], 8);
        }
    }
    sts_xfer_ok(&p, 4000, 4000, 2, 12, STS_XFER_UNREGISTERED);      /* and the comm goes on */
    sts_pair_close(&p);
    free(src);
}

/* Garbage right behind a staged message: that message completes, the comm then fails. */
static void test_garbage_after_staged(void **state)
{
    for (int posted = 0; posted < 2; posted++) {
        raw_peer_t rp;
        uint8_t buf[STT_TCP_HDR_BYTES + 50 + 64], dst[50];
        size_t len = 0, got;
        int done = 0;

        raw_open(&rp);
        raw_frame(&rp, buf, &len, 50, 1, 13);
        memset(buf + len, 0xee, 64);
        raw_push(&rp, buf, len + 64, 0);
        stt_req_t *r1 = post_recv(rp.recv, dst, sizeof(dst), 1);
        stt_req_t *r2 = posted ? post_recv(rp.recv, dst, sizeof(dst), 1) : NULL;
        /* One pass reads all of it: the message is in, the garbage is seen. */
        assert_ok(stt_test(r1, &done, &got));
        assert_int_equal(done, 1);
        assert_int_equal(got, 50);
        assert_pattern(dst, 50, 13);
        if (posted)
            assert_status(sts_reqs_finish(NULL, r2, NULL, NULL), STRATA_ERR_REMOTE);
        expect_recv_fails(rp.recv);
        raw_close(&rp);
    }

    /* A staged header with a sequence number out of order fails the same way. */
    raw_peer_t rp;
    uint8_t buf[2 * STT_TCP_HDR_BYTES + 10], dst[10];
    size_t len = 0, got;
    raw_open(&rp);
    raw_frame(&rp, buf, &len, 10, 1, 14);
    rp.seq++;
    raw_frame(&rp, buf, &len, 0, 1, 0);
    raw_push(&rp, buf, len, 0);
    assert_ok(finish(post_recv(rp.recv, dst, sizeof(dst), 1), &got));
    assert_pattern(dst, 10, 14);
    expect_recv_fails(rp.recv);
    raw_close(&rp);
}

/* EOF behind staged messages: they complete; a partial header before EOF fails. */
static void test_eof_after_staged(void **state)
{
    for (int partial = 0; partial < 2; partial++) {
        raw_peer_t rp;
        uint8_t buf[3 * STT_TCP_HDR_BYTES + 45], dst[20];
        size_t len = 0, got;

        raw_open(&rp);
        raw_frame(&rp, buf, &len, 20, 1, 15);
        raw_frame(&rp, buf, &len, 20, 1, 16);
        if (partial) {
            raw_frame(&rp, buf, &len, 5, 1, 17);
            len -= 5 + 4;                               /* 20 of 24 header bytes */
        }
        raw_push(&rp, buf, len, 0);
        shutdown(rp.fd, SHUT_WR);
        for (int i = 0; i < 2; i++) {
            assert_ok(finish(post_recv(rp.recv, dst, sizeof(dst), 1), &got));
            assert_int_equal(got, 20);
            assert_pattern(dst, 20, 15 + (unsigned)i);
        }
        expect_recv_fails(rp.recv);
        raw_close(&rp);
    }
}

/*
 * poll_fds with bytes in the stage: a staged header waiting for a receive names
 * no socket (nothing more can come of reading), a partial one names socket 0,
 * and a receive posted behind a staged message completes without waiting.
 */
static void test_poll_with_staged_bytes(void **state)
{
    raw_peer_t rp;
    uint8_t buf[3 * (STT_TCP_HDR_BYTES + 30)], dst[30];
    struct pollfd fds[4];
    size_t len = 0, got;
    int done = 0;

    raw_open(&rp);
    int fd0 = ((stt_tcp_recv_t *)rp.recv)->conn.socks[0].fd;
    raw_frame(&rp, buf, &len, 30, 1, 18);
    raw_frame(&rp, buf, &len, 30, 1, 19);
    raw_frame(&rp, buf, &len, 30, 1, 20);
    size_t cut = 2 * (STT_TCP_HDR_BYTES + 30) + 10;    /* 10 bytes of the third header */
    raw_push(&rp, buf, cut, 0);
    assert_ok(finish(post_recv(rp.recv, dst, sizeof(dst), 1), &got));
    assert_pattern(dst, 30, 18);
    assert_int_equal(queued(rp.recv, 0), 0);           /* all staged */
    /* The second header waits for a receive: no socket to sleep on. */
    assert_int_equal(stt_poll_fds(rp.recv, fds, 4), 0);
    /* Posting one completes it from the stage, with the kernel empty. */
    stt_req_t *req = post_recv(rp.recv, dst, sizeof(dst), 1);
    assert_ok(stt_test(req, &done, &got));
    assert_int_equal(done, 1);
    assert_int_equal(got, 30);
    assert_pattern(dst, 30, 19);
    /* 10 bytes of the third header are staged: socket 0, which owes the rest, is named. */
    req = post_recv(rp.recv, dst, sizeof(dst), 1);
    assert_ok(stt_test(req, &done, NULL));
    assert_int_equal(done, 0);
    assert_int_equal(stt_poll_fds(rp.recv, fds, 4), 1);
    assert_int_equal(fds[0].fd, fd0);
    assert_true(fds[0].events & POLLIN);
    raw_send(rp.fd, buf + cut, len - cut);
    assert_int_equal(poll(fds, 1, 10000), 1);
    assert_ok(finish(req, &got));
    assert_int_equal(got, 30);
    assert_pattern(dst, 30, 20);
    raw_close(&rp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_small_back_to_back),
        cmocka_unit_test(test_burst_is_read_once),
        cmocka_unit_test(test_header_split_across_reads),
        cmocka_unit_test(test_stage_boundaries),
        cmocka_unit_test(test_small_then_large),
        cmocka_unit_test(test_truncation_of_staged),
        cmocka_unit_test(test_garbage_after_staged),
        cmocka_unit_test(test_eof_after_staged),
        cmocka_unit_test(test_poll_with_staged_bytes),
    };
    return cmocka_run_group_tests(tests, tcp_group_setup, sts_conf_teardown);
}
