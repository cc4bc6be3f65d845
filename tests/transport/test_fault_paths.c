/*
 * Fault paths: the fake transport (tests/support/fake_transport.c) injects
 * each programmed fault exactly as asked, and the contract helpers
 * (tests/support/sts_xport.c) react as the contract requires: they keep
 * polling through "not ready" and "again" answers, stop at the first error,
 * report a failed request in its slot without hanging, and close what they
 * opened when they give up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_transport.h"
#include "sts_cmocka.h"
#include "sts_util.h"
#include "sts_xport.h"

static int fds_before;

static int fault_setup(void **state)
{
    fds_before = sts_fd_count();
    if (sts_fake_set_inner(NULL) != STRATA_OK)
        return -1;
    sts_fake_reset(NULL);
    return stt_init(&stt_fake_ops) == STRATA_OK ? 0 : -1;
}

static int fault_teardown(void **state)
{
    sts_fake_counters_t c;

    sts_fake_reset(NULL);
    sts_fake_counters(&c);
    stt_fini(&stt_fake_ops);
    if (c.live_requests != 0) {
        print_error("%d fake requests still live after the case\n", c.live_requests);
        return -1;
    }
    return sts_fd_count() == fds_before ? 0 : -1;
}

static void fake_arm(const sts_fake_faults_t *faults)
{
    sts_fake_reset(faults);
}

static void check_exchange(sts_pair_t *pair, size_t size, uint32_t seed)
{
    strata_status_t sstatus, rstatus;
    sts_buf_t sbuf, rbuf;
    size_t got = 0;

    assert_ok(sts_buf_alloc(&sbuf, pair->send, size));
    assert_ok(sts_buf_alloc(&rbuf, pair->recv, size));
    sts_pattern_fill(sbuf.data, size, seed);
    assert_ok(sts_pair_exchange(pair, sbuf.data, size, sbuf.mh, rbuf.data, size, rbuf.mh, 1,
                                sts_deadline(STS_IO_TIMEOUT_S), &sstatus, &rstatus, &got));
    assert_ok(sstatus);
    assert_ok(rstatus);
    assert_int_equal(got, size);
    assert_pattern(rbuf.data, size, seed);
    sts_buf_free(&sbuf);
    sts_buf_free(&rbuf);
}

/* connect and accept answer "not ready" k times; the helper polls through it. */
static void fault_connect_accept_nulls(void **state)
{
    const sts_fake_faults_t faults = {.connect_nulls = 5, .accept_nulls = 3};
    sts_fake_counters_t c;
    sts_pair_t pair;

    fake_arm(&faults);
    assert_ok(sts_pair_open(&stt_fake_ops, 0, STS_CONNECT_TIMEOUT_S, &pair));
    sts_fake_counters(&c);
    assert_int_equal(c.injected_nulls, 8);
    assert_true(c.connect_calls >= 6);
    assert_true(c.accept_calls >= 4);
    assert_ptr_equal(pair.send->ops, &stt_fake_ops);
    check_exchange(&pair, 1000, 5);
    sts_pair_close(&pair);
}

/* A "not ready" that never ends turns into STRATA_ERR_TIMEOUT, and nothing stays open. */
static void fault_connect_never_ready(void **state)
{
    const sts_fake_faults_t faults = {.connect_nulls = 1 << 30};
    sts_pair_t pair;

    fake_arm(&faults);
    assert_status(sts_pair_open(&stt_fake_ops, 0, 0.2, &pair), STRATA_ERR_TIMEOUT);
    assert_null(pair.listen);
    assert_null(pair.send);
    assert_null(pair.recv);
}

/* Errors from listen, connect or accept stop the helper at once and are passed on. */
static void fault_setup_errors(void **state)
{
    sts_fake_faults_t faults = {.listen_status = STRATA_ERR_IO};
    sts_fake_counters_t c;
    sts_pair_t pair;
    stt_comm_t *send = NULL;

    fake_arm(&faults);
    assert_status(sts_pair_open(&stt_fake_ops, 0, STS_CONNECT_TIMEOUT_S, &pair), STRATA_ERR_IO);
    assert_null(pair.listen);

    faults = (sts_fake_faults_t){.connect_status = STRATA_ERR_REMOTE};
    fake_arm(&faults);
    assert_status(sts_pair_open(&stt_fake_ops, 0, STS_CONNECT_TIMEOUT_S, &pair),
                  STRATA_ERR_REMOTE);
    sts_fake_counters(&c);
    assert_int_equal(c.connect_calls, 1);
    assert_int_equal(c.accept_calls, 0);
    assert_null(pair.listen);

    /*
     * accept fails after connect started: the helper closes the listener; the
     * abandoned connect, called again, fails too (its listener is gone)
     * instead of waiting forever.
     */
    faults = (sts_fake_faults_t){.accept_status = STRATA_ERR_NO_RESOURCE};
    fake_arm(&faults);
    assert_status(sts_pair_open(&stt_fake_ops, 0, STS_CONNECT_TIMEOUT_S, &pair),
                  STRATA_ERR_NO_RESOURCE);
    assert_null(pair.listen);
    uint64_t deadline = sts_deadline(STS_CONNECT_TIMEOUT_S);
    strata_status_t status;
    const stt_conn_cfg_t cfg = {.traffic_class = STT_TRAFFIC_CLASS_UNDEF};
    while ((status = stt_connect(&stt_fake_ops, 0, pair.handle, &cfg, &send)) == STRATA_OK &&
           send == NULL && !sts_expired(deadline))
        sts_relax();
    assert_null(send);
    assert_true(status != STRATA_OK);
}

/* isend/irecv answer "again" k times; the retry helpers count them and get through. */
static void fault_post_nulls(void **state)
{
    const sts_fake_faults_t faults = {.isend_nulls = 4, .irecv_nulls = 6};
    sts_req_slot_t slots[2];
    sts_reqset_t set = {.slots = slots, .cap = 2};
    uint64_t deadline;
    sts_fake_counters_t c;
    sts_buf_t sbuf, rbuf;
    sts_pair_t pair;
    stt_req_t *req = (stt_req_t *)&pair;
    size_t size = 4096;
    int nulls = 0, tag = 2, rslot = -1;

    assert_ok(sts_pair_open(&stt_fake_ops, 0, STS_CONNECT_TIMEOUT_S, &pair));
    assert_ok(sts_buf_alloc(&sbuf, pair.send, size));
    assert_ok(sts_buf_alloc(&rbuf, pair.recv, size));
    sts_pattern_fill(sbuf.data, size, 9);
    fake_arm(&faults);

    /* A bare post sees the fault: OK with a NULL request, nothing posted. */
    assert_ok(stt_isend(pair.send, sbuf.data, size, tag, sbuf.mh, &req));
    assert_null(req);
    deadline = sts_deadline(STS_IO_TIMEOUT_S);
    assert_ok(sts_irecv_retry(pair.recv, 1, (void **)&rbuf.data, &size, &tag, &rbuf.mh, &set,
                              deadline, &rslot, &nulls));
    assert_int_equal(nulls, 6);
    assert_ok(sts_isend_retry(pair.send, sbuf.data, size, tag, sbuf.mh, &set, deadline, NULL,
                              &nulls));
    assert_int_equal(nulls, 6 + 3);
    assert_ok(sts_reqset_wait(&set, deadline));
    assert_int_equal(set.errors, 0);
    assert_int_equal(slots[rslot].sizes[0], size);
    assert_pattern(rbuf.data, size, 9);
    sts_fake_counters(&c);
    assert_int_equal(c.injected_nulls, 10);
    assert_int_equal(c.isend_calls, 5);
    assert_int_equal(c.irecv_calls, 7);
    sts_buf_free(&sbuf);
    sts_buf_free(&rbuf);
    sts_pair_close(&pair);
}

/*
 * The k-th test() fails with STRATA_ERR_REMOTE: the request set records it
 * in the slot and keeps going; the dead comm then fails its other pending
 * requests and new posts, while the other comm is unaffected.
 */
static void fault_test_remote(void **state)
{
    enum { N = 3 };
    const sts_fake_faults_t faults = {.test_remote_at = 2};
    sts_req_slot_t slots[N];
    sts_reqset_t set = {.slots = slots, .cap = N};
    sts_fake_counters_t c;
    sts_buf_t rbuf[N];
    sts_pair_t pair;
    stt_req_t *req = NULL;
    size_t size = 512;
    int tag = 0;

    assert_ok(sts_pair_open(&stt_fake_ops, 0, STS_CONNECT_TIMEOUT_S, &pair));
    for (int i = 0; i < N; i++) {
        assert_ok(sts_buf_alloc(&rbuf[i], pair.recv, size));
        assert_ok(sts_irecv_retry(pair.recv, 1, (void **)&rbuf[i].data, &size, &tag,
                                  &rbuf[i].mh, &set, sts_deadline(STS_IO_TIMEOUT_S), NULL,
                                  NULL));
    }
    fake_arm(&faults);
    assert_ok(sts_reqset_wait(&set, sts_deadline(STS_IO_TIMEOUT_S)));
    assert_int_equal(set.errors, N);
    for (int i = 0; i < N; i++)
        assert_status(slots[i].status, STRATA_ERR_REMOTE);
    sts_fake_counters(&c);
    assert_int_equal(c.test_calls, 1 + N);   /* one pass before the fault, then one each */
    assert_int_equal(c.live_requests, 0);
    assert_status(stt_irecv(pair.recv, 1, (void **)&rbuf[0].data, &size, &tag, &rbuf[0].mh,
                            &req),
                  STRATA_ERR_REMOTE);
    for (int i = 0; i < N; i++)
        sts_buf_dereg(&rbuf[i]);
    stt_close_recv(pair.recv);
    pair.recv = NULL;
    for (int i = 0; i < N; i++)
        sts_buf_free_data(&rbuf[i]);

    /* The send comm is another connection end: still alive as far as the fake knows. */
    sts_buf_t sbuf;
    assert_ok(sts_buf_alloc(&sbuf, pair.send, size));
    assert_ok(stt_isend(pair.send, sbuf.data, size, tag, sbuf.mh, &req));
    assert_non_null(req);
    sts_buf_dereg(&sbuf);
    sts_pair_close(&pair);
    sts_buf_free_data(&sbuf);
}

/* A request that never completes: the wait helpers give up at the deadline, no hang. */
static void fault_wait_deadline(void **state)
{
    sts_req_slot_t slots[1];
    sts_reqset_t set = {.slots = slots, .cap = 1};
    sts_pair_t pair;
    sts_buf_t rbuf;
    size_t size = 64;
    int tag = 0, slot = -1;

    assert_ok(sts_pair_open(&stt_fake_ops, 0, STS_CONNECT_TIMEOUT_S, &pair));
    assert_ok(sts_buf_alloc(&rbuf, pair.recv, size));
    assert_ok(sts_irecv_retry(pair.recv, 1, (void **)&rbuf.data, &size, &tag, &rbuf.mh, &set,
                              sts_deadline(STS_IO_TIMEOUT_S), &slot, NULL));
    assert_status(sts_reqset_wait(&set, sts_deadline(0.1)), STRATA_ERR_TIMEOUT);
    assert_int_equal(set.pending, 1);
    assert_status(slots[slot].status, STRATA_INPROGRESS);
    assert_status(sts_req_wait(slots[slot].req, sts_deadline(0.1), NULL), STRATA_ERR_TIMEOUT);
    sts_buf_dereg(&rbuf);
    sts_pair_close(&pair);
    sts_buf_free_data(&rbuf);
}

/* reg_mr fails k times with the programmed status; the buffer helper cleans up. */
static void fault_reg_mr(void **state)
{
    const sts_fake_faults_t faults = {.reg_mr_fails = 2, .reg_mr_status = STRATA_ERR_NO_MEMORY};
    sts_fake_counters_t c;
    sts_pair_t pair;
    sts_buf_t buf;

    assert_ok(sts_pair_open(&stt_fake_ops, 0, STS_CONNECT_TIMEOUT_S, &pair));
    fake_arm(&faults);
    assert_status(sts_buf_alloc(&buf, pair.send, 100), STRATA_ERR_NO_MEMORY);
    assert_null(buf.data);
    assert_status(sts_buf_alloc(&buf, pair.recv, 100), STRATA_ERR_NO_MEMORY);
    assert_ok(sts_buf_alloc(&buf, pair.send, 100));
    sts_buf_free(&buf);
    sts_fake_counters(&c);
    assert_int_equal(c.reg_mr_calls, 3);
    assert_int_equal(c.injected_errors, 2);

    /* Without a status the fake picks STRATA_ERR_NO_RESOURCE. */
    fake_arm(&(sts_fake_faults_t){.reg_mr_fails = 1});
    assert_status(sts_buf_alloc(&buf, pair.recv, 100), STRATA_ERR_NO_RESOURCE);
    check_exchange(&pair, 100, 3);
    sts_pair_close(&pair);
}

/* The fake's own slot table: a full table answers "again", never loses a post. */
static void fault_fake_slot_table(void **state)
{
    const int total = STT_MAX_SEND_REQUESTS + 10;
    sts_req_slot_t *slots = calloc((size_t)total, sizeof(*slots));
    sts_reqset_t set = {.slots = slots, .cap = total};
    sts_pair_t pair;
    sts_buf_t sbuf;
    int posted = 0, again = 0;

    assert_non_null(slots);
    assert_ok(sts_pair_open(&stt_fake_ops, 0, STS_CONNECT_TIMEOUT_S, &pair));
    assert_ok(sts_buf_alloc(&sbuf, pair.send, 8));
    for (int i = 0; i < total; i++) {
        stt_req_t *req = NULL;
        assert_ok(stt_isend(pair.send, sbuf.data, 8, 0, sbuf.mh, &req));
        if (req == NULL) {
            again++;
            continue;
        }
        sts_reqset_add(&set, req);
        posted++;
    }
    assert_int_equal(posted, STT_MAX_SEND_REQUESTS);
    assert_int_equal(again, 10);
    sts_buf_dereg(&sbuf);
    sts_pair_close(&pair);
    sts_buf_free_data(&sbuf);
    free(slots);
}

#define FAULT_CASE(f) cmocka_unit_test_setup_teardown(f, fault_setup, fault_teardown)

int main(void)
{
    const struct CMUnitTest cases[] = {
        FAULT_CASE(fault_connect_accept_nulls),
        FAULT_CASE(fault_connect_never_ready),
        FAULT_CASE(fault_setup_errors),
        FAULT_CASE(fault_post_nulls),
        FAULT_CASE(fault_test_remote),
        FAULT_CASE(fault_wait_deadline),
        FAULT_CASE(fault_reg_mr),
        FAULT_CASE(fault_fake_slot_table),
    };
    return cmocka_run_group_tests_name("fault_paths", cases, NULL, NULL);
}
