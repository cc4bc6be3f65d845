/*
 * Transport conformance, the data path: the contract of
 * transport/transport.h for moving bytes (size matrix, receive larger or
 * smaller than the send, the request budget, grouped receives with tags,
 * "again" answers), written once and run over every transport of the
 * registry plus the fault-injecting fake with no fault armed. A transport
 * that cannot run here is skipped case by case, so transports added to the
 * registry later are covered without touching this file.
 *
 * Both ends live in this process and one thread drives them; every wait has
 * a generous deadline, so a bug fails instead of hanging. The companion
 * test_conformance_conn.c covers connections and lifecycle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sts_cmocka.h"
#include "sts_conf.h"
#include "sts_util.h"
#include "sts_xport.h"

/* The size matrix: edges of words and pages, and TCP's 256 KiB striping threshold. */
static const size_t conf_sizes[] = {
    0, 1, 3, 7, 8, 13, 511, 4 * KiB - 1, 4 * KiB, 4 * KiB + 1, 64 * KiB - 1, 64 * KiB + 1,
    256 * KiB - 1, 256 * KiB, 256 * KiB + 1, 512 * KiB + 3, 1 * MiB, 1 * MiB + 7, 64 * MiB,
};
#define CONF_NSIZES ((int)(sizeof(conf_sizes) / sizeof(conf_sizes[0])))

static void conf_size_matrix(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    sts_pair_t pair;

    sts_conf_open(ctx, 0, &pair);
    for (int i = 0; i < CONF_NSIZES; i++) {
        size_t got = SIZE_MAX;
        strata_status_t status = sts_conf_xfer(&pair, conf_sizes[i], conf_sizes[i], i % 2,
                                           (uint32_t)(1000 + i), &got);
        if (status != STRATA_OK || got != conf_sizes[i])
            fail_msg("%zu bytes: %s, received %zu", conf_sizes[i], strata_status_str(status),
                     got);
    }
    sts_pair_close(&pair);
}

/* Every size below 64 MiB in flight at once, receives first, then sends first. */
static void conf_size_pipelined(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    enum { N = CONF_NSIZES - 1 };
    sts_buf_t sbuf[N], rbuf[N];
    sts_req_slot_t slots[2 * N];
    sts_pair_t pair;

    sts_conf_open(ctx, 0, &pair);
    for (int i = 0; i < N; i++) {
        assert_ok(sts_buf_alloc(&sbuf[i], pair.send, conf_sizes[i]));
        assert_ok(sts_buf_alloc(&rbuf[i], pair.recv, conf_sizes[i]));
    }
    for (int round = 0; round < 2; round++) {
        sts_reqset_t set = {.slots = slots, .cap = 2 * N};
        uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
        int rslot[N];

        for (int i = 0; i < N; i++) {
            sts_pattern_fill(sbuf[i].data, sbuf[i].size, (uint32_t)(round * 100 + i));
            memset(rbuf[i].data, 0, rbuf[i].size);
        }
        for (int step = 0; step < 2; step++) {
            for (int i = 0; i < N; i++) {
                if ((step == 0) == (round == 1))
                    assert_ok(sts_isend_retry(pair.send, sbuf[i].data, sbuf[i].size, i,
                                              sbuf[i].mh, &set, deadline, NULL, NULL));
                else
                    assert_ok(sts_irecv_retry(pair.recv, 1, (void **)&rbuf[i].data,
                                              &rbuf[i].size, &i, &rbuf[i].mh, &set, deadline,
                                              &rslot[i], NULL));
            }
        }
        assert_ok(sts_reqset_wait(&set, deadline));
        assert_int_equal(set.errors, 0);
        for (int i = 0; i < N; i++) {
            assert_int_equal(slots[rslot[i]].sizes[0], conf_sizes[i]);
            assert_pattern(rbuf[i].data, rbuf[i].size, (uint32_t)(round * 100 + i));
            assert_true(sts_guard_ok(rbuf[i].data, rbuf[i].size));
        }
    }
    for (int i = 0; i < N; i++) {
        sts_buf_free(&sbuf[i]);
        sts_buf_free(&rbuf[i]);
    }
    sts_pair_close(&pair);
}

static void conf_recv_larger(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    static const size_t cases[][2] = {
        {1000, 64 * KiB}, {0, 4 * KiB}, {1, 2}, {300 * KiB, 1 * MiB}, {1 * MiB, 3 * MiB},
    };
    sts_pair_t pair;

    sts_conf_open(ctx, 0, &pair);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t got = SIZE_MAX;
        assert_ok(sts_conf_xfer(&pair, cases[i][0], cases[i][1], (int)(i % 2), (uint32_t)(50 + i),
                            &got));
        assert_int_equal(got, cases[i][0]);
    }
    sts_pair_close(&pair);
}

/*
 * A send larger than its receive fails that receive with TRUNCATED, and only
 * that receive: the next message on the same connection arrives intact.
 */
static void conf_truncation(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    static const size_t cases[][2] = {
        {4000, 1000}, {1, 0}, {1 * MiB, 256 * KiB}, {300 * KiB, 300 * KiB - 1},
    };
    sts_pair_t pair;

    sts_conf_open(ctx, 0, &pair);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t got = 0, ssize = cases[i][0], rsize = cases[i][1];
        assert_status(sts_conf_xfer(&pair, ssize, rsize, (int)(i % 2), (uint32_t)(60 + i), &got),
                      STRATA_ERR_TRUNCATED);
        got = SIZE_MAX;
        assert_ok(sts_conf_xfer(&pair, rsize + 100, rsize + 100, 0, (uint32_t)(70 + i), &got));
        assert_int_equal(got, rsize + 100);
    }
    sts_pair_close(&pair);
}

/* Size of message i of the in-flight case: 1 B to 64 KiB. */
static size_t conf_flight_size(int i)
{
    return 1 + ((size_t)i * 7919u) % (64 * KiB);
}

/*
 * The contract's budget: STT_MAX_REQUESTS grouped receives and
 * STT_MAX_REQUESTS * max_recvs sends in flight on one comm, every post
 * answered with a request (no "again"), sends posted before any receive.
 */
static void conf_in_flight(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    const int n = sts_conf_max_recvs(ctx), nrecv = STT_MAX_REQUESTS, nsend = nrecv * n;
    size_t *off = calloc((size_t)nsend + 1, sizeof(*off));
    sts_req_slot_t *slots = calloc((size_t)(nsend + nrecv), sizeof(*slots));
    sts_reqset_t set = {.slots = slots, .cap = nsend + nrecv};
    sts_buf_t sbuf, rbuf;
    sts_pair_t pair;

    assert_non_null(off);
    assert_non_null(slots);
    for (int i = 0; i < nsend; i++)
        off[i + 1] = off[i] + conf_flight_size(i);
    sts_conf_open(ctx, 0, &pair);
    assert_ok(sts_buf_alloc(&sbuf, pair.send, off[nsend]));
    assert_ok(sts_buf_alloc(&rbuf, pair.recv, off[nsend]));
    for (int i = 0; i < nsend; i++)
        sts_pattern_fill(sbuf.data + off[i], conf_flight_size(i), (uint32_t)i);
    memset(rbuf.data, 0, off[nsend]);

    for (int i = 0; i < nsend; i++) {
        stt_req_t *req = NULL;
        assert_ok(stt_isend(pair.send, sbuf.data + off[i], conf_flight_size(i), i % n, sbuf.mh,
                            &req));
        if (req == NULL)
            fail_msg("isend %d of %d answered \"again\" within the contract's budget", i, nsend);
        assert_int_equal(req->nsizes, 1);
        sts_reqset_add(&set, req);
    }
    for (int j = 0; j < nrecv; j++) {
        void *data[STT_MAX_RECVS], *mhs[STT_MAX_RECVS];
        size_t sizes[STT_MAX_RECVS];
        int tags[STT_MAX_RECVS];
        stt_req_t *req = NULL;
        for (int k = 0; k < n; k++) {
            data[k] = rbuf.data + off[j * n + k];
            sizes[k] = conf_flight_size(j * n + k);
            tags[k] = k;
            mhs[k] = rbuf.mh;
        }
        assert_ok(stt_irecv(pair.recv, n, data, sizes, tags, mhs, &req));
        if (req == NULL)
            fail_msg("irecv %d of %d answered \"again\" within the contract's budget", j, nrecv);
        assert_int_equal(req->nsizes, n);
        sts_reqset_add(&set, req);
    }
    assert_ok(sts_reqset_wait(&set, sts_deadline(STS_IO_TIMEOUT_S)));
    assert_int_equal(set.errors, 0);
    for (int j = 0; j < nrecv; j++)
        for (int k = 0; k < n; k++)
            assert_int_equal(slots[nsend + j].sizes[k], conf_flight_size(j * n + k));
    for (int i = 0; i < nsend; i++)
        assert_pattern(rbuf.data + off[i], conf_flight_size(i), (uint32_t)i);
    assert_true(sts_guard_ok(rbuf.data, off[nsend]));
    sts_buf_free(&sbuf);
    sts_buf_free(&rbuf);
    sts_pair_close(&pair);
    free(slots);
    free(off);
}

/* A permutation of 0..n-1 that differs from the identity when n > 1. */
static void conf_permute(int *perm, int n, uint32_t seed)
{
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;
        int j = (int)((seed >> 16) % (uint32_t)(i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    if (n > 1 && perm[0] == 0) {
        int t = perm[0];
        perm[0] = perm[1];
        perm[1] = t;
    }
}

/*
 * Grouped receives of n = 1..max_recvs buffers with distinct tags; the sends
 * arrive in a permuted order and each must land in the buffer of its tag,
 * with that buffer's own size reported.
 */
static void conf_grouped(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    sts_pair_t pair;

    sts_conf_open(ctx, 0, &pair);
    for (int n = 1; n <= sts_conf_max_recvs(ctx); n++) {
        sts_buf_t sbuf[STT_MAX_RECVS], rbuf[STT_MAX_RECVS];
        void *data[STT_MAX_RECVS], *mhs[STT_MAX_RECVS];
        size_t rsizes[STT_MAX_RECVS];
        int tags[STT_MAX_RECVS], perm[STT_MAX_RECVS];
        sts_req_slot_t slots[1 + STT_MAX_RECVS];
        sts_reqset_t set = {.slots = slots, .cap = 1 + STT_MAX_RECVS};
        uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
        int rslot = -1;

        conf_permute(perm, n, (uint32_t)n);
        for (int i = 0; i < n; i++) {
            size_t ssize = 1000 * (size_t)(i + 1) + (size_t)n - (i % 3 == 1 ? 17 : 0);
            tags[i] = 100 + 3 * i;
            rsizes[i] = 1000 * (size_t)(i + 1) + (size_t)n;
            assert_ok(sts_buf_alloc(&sbuf[i], pair.send, ssize));
            assert_ok(sts_buf_alloc(&rbuf[i], pair.recv, rsizes[i]));
            sts_pattern_fill(sbuf[i].data, ssize, (uint32_t)(tags[i] * 10 + n));
            data[i] = rbuf[i].data;
            mhs[i] = rbuf[i].mh;
        }
        for (int step = 0; step < 2; step++) {
            if ((step == 0) == (n % 2 == 0)) {
                assert_ok(sts_irecv_retry(pair.recv, n, data, rsizes, tags, mhs, &set, deadline,
                                          &rslot, NULL));
                assert_int_equal(slots[rslot].req->nsizes, n);
                continue;
            }
            for (int k = 0; k < n; k++) {
                int i = perm[k];
                assert_ok(sts_isend_retry(pair.send, sbuf[i].data, sbuf[i].size, tags[i],
                                          sbuf[i].mh, &set, deadline, NULL, NULL));
            }
        }
        assert_ok(sts_reqset_wait(&set, deadline));
        assert_int_equal(set.errors, 0);
        for (int i = 0; i < n; i++) {
            assert_int_equal(slots[rslot].sizes[i], sbuf[i].size);
            assert_pattern(rbuf[i].data, sbuf[i].size, (uint32_t)(tags[i] * 10 + n));
            assert_true(sts_guard_ok(rbuf[i].data, rbuf[i].size));
            sts_buf_free(&sbuf[i]);
            sts_buf_free(&rbuf[i]);
        }
    }
    sts_pair_close(&pair);
}

/*
 * Two grouped receives with the same tags in flight: the first group's sends
 * (permuted) fill the older receive, the second group's the newer one.
 */
static void conf_grouped_two(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    static const int tagset[4] = {5, 9, 2, 7};
    const int n = sts_conf_max_recvs(ctx) < 4 ? sts_conf_max_recvs(ctx) : 4;
    sts_buf_t sbuf[2][4], rbuf[2][4];
    sts_req_slot_t slots[2 + 8];
    sts_reqset_t set = {.slots = slots, .cap = 2 + 8};
    uint64_t deadline;
    sts_pair_t pair;
    int rslot[2];

    sts_conf_open(ctx, 0, &pair);
    deadline = sts_deadline(STS_IO_TIMEOUT_S);
    for (int g = 0; g < 2; g++) {
        void *data[4], *mhs[4];
        size_t rsizes[4];
        for (int i = 0; i < n; i++) {
            rsizes[i] = 3000 + 100 * (size_t)i + 10 * (size_t)g;
            assert_ok(sts_buf_alloc(&sbuf[g][i], pair.send, rsizes[i] - (size_t)g));
            assert_ok(sts_buf_alloc(&rbuf[g][i], pair.recv, rsizes[i]));
            sts_pattern_fill(sbuf[g][i].data, sbuf[g][i].size, (uint32_t)(g * 1000 + i));
            data[i] = rbuf[g][i].data;
            mhs[i] = rbuf[g][i].mh;
        }
        assert_ok(sts_irecv_retry(pair.recv, n, data, rsizes, tagset, mhs, &set, deadline,
                                  &rslot[g], NULL));
    }
    for (int g = 0; g < 2; g++) {
        int perm[4];
        conf_permute(perm, n, (uint32_t)(7 + g));
        for (int k = 0; k < n; k++) {
            int i = perm[k];
            assert_ok(sts_isend_retry(pair.send, sbuf[g][i].data, sbuf[g][i].size, tagset[i],
                                      sbuf[g][i].mh, &set, deadline, NULL, NULL));
        }
    }
    assert_ok(sts_reqset_wait(&set, deadline));
    assert_int_equal(set.errors, 0);
    for (int g = 0; g < 2; g++) {
        for (int i = 0; i < n; i++) {
            assert_int_equal(slots[rslot[g]].sizes[i], sbuf[g][i].size);
            assert_pattern(rbuf[g][i].data, sbuf[g][i].size, (uint32_t)(g * 1000 + i));
            sts_buf_free(&sbuf[g][i]);
            sts_buf_free(&rbuf[g][i]);
        }
    }
    sts_pair_close(&pair);
}

/*
 * Three times the send budget, each send followed by its receive and no test
 * in between: the transport runs out of slots and answers "again"; the
 * helpers progress earlier requests and post again, and every message
 * arrives intact and in order.
 */
static void conf_null_retry(void **state)
{
    sts_conf_ctx_t *ctx = sts_conf_begin(state);
    const int total = 3 * STT_MAX_SEND_REQUESTS;
    sts_req_slot_t *slots = calloc(2 * (size_t)total, sizeof(*slots));
    sts_reqset_t set = {.slots = slots, .cap = 2 * total};
    int *rslot = calloc((size_t)total, sizeof(*rslot));
    uint64_t deadline;
    sts_buf_t sbuf, rbuf;
    sts_pair_t pair;
    int nulls = 0;
    const size_t stride = 512;

    assert_non_null(slots);
    assert_non_null(rslot);
    sts_conf_open(ctx, 0, &pair);
    assert_ok(sts_buf_alloc(&sbuf, pair.send, stride * (size_t)total));
    assert_ok(sts_buf_alloc(&rbuf, pair.recv, stride * (size_t)total));
    memset(rbuf.data, 0, rbuf.size);
    deadline = sts_deadline(STS_IO_TIMEOUT_S);
    for (int i = 0; i < total; i++) {
        char *s = sbuf.data + stride * (size_t)i;
        void *r = rbuf.data + stride * (size_t)i;
        size_t size = 1 + (size_t)i % stride;
        int tag = i % 3;
        sts_pattern_fill(s, size, (uint32_t)i);
        assert_ok(sts_isend_retry(pair.send, s, size, tag, sbuf.mh, &set, deadline, NULL,
                                  &nulls));
        assert_ok(sts_irecv_retry(pair.recv, 1, &r, &(size_t){stride}, &tag, &rbuf.mh, &set,
                                  deadline, &rslot[i], &nulls));
    }
    assert_ok(sts_reqset_wait(&set, deadline));
    assert_int_equal(set.errors, 0);
    for (int i = 0; i < total; i++) {
        size_t size = 1 + (size_t)i % stride;
        assert_int_equal(slots[rslot[i]].sizes[0], size);
        assert_pattern(rbuf.data + stride * (size_t)i, size, (uint32_t)i);
    }
    print_message("  %s: %d messages, %d \"again\" answers retried\n", stt_name(ctx->ops), total,
                  nulls);
    sts_buf_free(&sbuf);
    sts_buf_free(&rbuf);
    sts_pair_close(&pair);
    free(rslot);
    free(slots);
}

int main(void)
{
    struct CMUnitTest cases[] = {
        STS_CONF_CASE(conf_size_matrix),
        STS_CONF_CASE(conf_size_pipelined),
        STS_CONF_CASE(conf_recv_larger),
        STS_CONF_CASE(conf_truncation),
        STS_CONF_CASE(conf_in_flight),
        STS_CONF_CASE(conf_grouped),
        STS_CONF_CASE(conf_grouped_two),
        STS_CONF_CASE(conf_null_retry),
    };
    return sts_conf_run("conformance", cases, sizeof(cases) / sizeof(cases[0]));
}
