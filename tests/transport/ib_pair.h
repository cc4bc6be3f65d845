/*
 * Shared by the ib transport tests: a pair of comms driven from one thread
 * (listen on one device, connect from the same or another one), payload
 * patterns and waits bounded by a generous deadline. On a host without an
 * ACTIVE verbs port every case skips (cmocka skip), so the tests pass there
 * and do real work inside the Soft-RoCE guest (make test-rdma).
 *
 * STRATA_TEST_IB_PEER_DEV picks the connecting device (default: the last
 * one, so two Soft-RoCE devices give the rxe0 <-> rxe1 case; 0 for one device).
 */
#ifndef STRATA_TESTS_IB_PAIR_H
#define STRATA_TESTS_IB_PAIR_H

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "transport/ib/ib.h"
#include "transport/ib/ib_internal.h"
#include "util/param.h"
#include "util/time.h"

#define IB_DEADLINE_NS (120ull * 1000000000ull)

static const stt_ops_t *ops = &stt_ib_ops;
static int ib_ndev;
static int ib_fds_at_start;

typedef struct ib_pair {
    stt_listen_t *listen;
    stt_comm_t *send;
    stt_comm_t *recv;
    uint8_t handle[STT_HANDLE_SIZE];
} ib_pair_t;

static inline int ib_fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;

    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

static inline bool ib_past(uint64_t start)
{
    return stu_time_ns() - start > IB_DEADLINE_NS;
}

/* Group setup: init once; no device means every case skips. */
static inline int ib_group_setup(void **state)
{
    stu_param_reload();
    ib_ndev = 0;
    if (stt_probe(ops) != STRATA_OK || stt_init(ops) != STRATA_OK)
        return 0;
    if (stt_devices(ops, &ib_ndev) != STRATA_OK)
        ib_ndev = 0;
    if (ib_ndev == 0)
        stt_fini(ops);
    ib_fds_at_start = ib_fd_count();
    return 0;
}

static inline int ib_group_teardown(void **state)
{
    if (ib_ndev > 0) {
        int now = ib_fd_count();
        stt_fini(ops);
        if (now != ib_fds_at_start) {
            fprintf(stderr, "file descriptors leaked: %d at start, %d at end\n",
                    ib_fds_at_start, now);
            return -1;
        }
    }
    return 0;
}

/* First line of every case. */
#define IB_NEED_DEVICE()                                                        \
    do {                                                                        \
        if (ib_ndev == 0) {                                                     \
            fprintf(stderr, "no ACTIVE verbs port here: skipped\n");            \
            skip();                                                             \
        }                                                                       \
    } while (0)

static inline int ib_peer_dev(void)
{
    const char *e = getenv("STRATA_TEST_IB_PEER_DEV");
    int d = e != NULL ? atoi(e) : ib_ndev - 1;
    return d < 0 || d >= ib_ndev ? 0 : d;
}

static inline void ib_pair_open_on(ib_pair_t *p, int ldev, int cdev)
{
    uint64_t start = stu_time_ns();

    memset(p, 0, sizeof(*p));
    assert_int_equal(stt_listen(ops, ldev, p->handle, &p->listen), STRATA_OK);
    while (p->send == NULL || p->recv == NULL) {
        if (p->send == NULL)
            assert_int_equal(stt_connect(ops, cdev, p->handle, NULL, &p->send), STRATA_OK);
        if (p->recv == NULL)
            assert_int_equal(stt_accept(p->listen, &p->recv), STRATA_OK);
        assert_false(ib_past(start));
    }
}

static inline void ib_pair_open(ib_pair_t *p)
{
    ib_pair_open_on(p, 0, ib_peer_dev());
}

static inline void ib_pair_close(ib_pair_t *p)
{
    stt_close_send(p->send);
    stt_close_recv(p->recv);
    stt_close_listen(p->listen);
    memset(p, 0, sizeof(*p));
}

/* Tests one request once; clears *req when it finished. */
static inline strata_status_t ib_poke(stt_req_t **req, size_t *sizes)
{
    int done = 0;
    strata_status_t status;

    if (*req == NULL)
        return STRATA_OK;
    status = stt_test(*req, &done, sizes);
    if (status != STRATA_OK || done)
        *req = NULL;
    return status;
}

/* Drives a send and a receive to the end; returns the receive's status. */
static inline strata_status_t ib_wait2(stt_req_t *sreq, stt_req_t *rreq, size_t *rsizes,
                                       strata_status_t *send_status)
{
    strata_status_t ss = STRATA_OK, rs = STRATA_OK;
    size_t ssize[1];
    uint64_t start = stu_time_ns();

    while (sreq != NULL || rreq != NULL) {
        strata_status_t s = ib_poke(&sreq, ssize);
        if (s != STRATA_OK)
            ss = s;
        s = ib_poke(&rreq, rsizes);
        if (s != STRATA_OK)
            rs = s;
        assert_false(ib_past(start));
    }
    if (send_status)
        *send_status = ss;
    return rs;
}

static inline void ib_fill(uint8_t *buf, size_t size, unsigned seed)
{
    for (size_t i = 0; i < size; i++)
        buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 12));
}

static inline bool ib_check(const uint8_t *buf, size_t size, unsigned seed)
{
    for (size_t i = 0; i < size; i++)
        if (buf[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 12)))
            return false;
    return true;
}

/*
 * One message of size bytes into a buffer of cap bytes, checked, with 64
 * guard bytes after the buffer that must stay untouched. reg: register both
 * buffers first (else NULL handles, registered on the fly).
 */
static inline void ib_xfer_one(ib_pair_t *p, size_t size, size_t cap, int tag, unsigned seed,
                               bool reg, bool recv_first)
{
    const size_t guard = 64;
    uint8_t *src = malloc(size ? size : 1), *dst = malloc(cap + guard);
    stt_req_t *sreq = NULL, *rreq = NULL;
    void *smh = NULL, *rmh = NULL;
    size_t got[1] = {~(size_t)0};
    strata_status_t ss;

    assert_non_null(src);
    assert_non_null(dst);
    ib_fill(src, size, seed);
    memset(dst, 0xa5, cap + guard);
    if (reg) {
        assert_int_equal(stt_reg_mr(p->send, src, size ? size : 1, STT_PTR_HOST, &smh),
                         STRATA_OK);
        assert_int_equal(stt_reg_mr(p->recv, dst, cap + guard, STT_PTR_HOST, &rmh),
                         STRATA_OK);
    }
    void *data[1] = {dst};
    size_t caps[1] = {cap};
    int tags[1] = {tag};
    void *mhs[1] = {rmh};
    for (int step = 0; step < 2; step++) {
        if ((step == 0) == recv_first) {
            assert_int_equal(stt_irecv(p->recv, 1, data, caps, tags, mhs, &rreq), STRATA_OK);
            assert_non_null(rreq);
        } else {
            assert_int_equal(stt_isend(p->send, src, size, tag, smh, &sreq), STRATA_OK);
            assert_non_null(sreq);
        }
    }
    assert_int_equal(rreq->nsizes, 1);
    assert_int_equal(sreq->nsizes, 1);
    assert_int_equal(ib_wait2(sreq, rreq, got, &ss), STRATA_OK);
    assert_int_equal(ss, STRATA_OK);
    assert_int_equal(got[0], size);
    assert_true(ib_check(dst, size, seed));
    for (size_t i = cap; i < cap + guard; i++)
        assert_int_equal(dst[i], 0xa5);
    if (reg) {
        assert_int_equal(stt_dereg_mr(p->send, smh), STRATA_OK);
        assert_int_equal(stt_dereg_mr(p->recv, rmh), STRATA_OK);
    }
    free(src);
    free(dst);
}

#endif /* STRATA_TESTS_IB_PAIR_H */
