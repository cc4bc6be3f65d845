/* Conformance suite scaffolding: per-transport contexts, setup, teardown, runner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_transport.h"
#include "sts_cmocka.h"
#include "sts_conf.h"
#include "sts_util.h"

int sts_conf_setup(void **state)
{
    sts_conf_ctx_t *ctx = *state;
    strata_status_t status;

    ctx->ready = 0;
    ctx->why[0] = '\0';
    ctx->fds_before = sts_fd_count();
    status = stt_probe(ctx->ops);
    if (status != STRATA_OK) {
        snprintf(ctx->why, sizeof(ctx->why), "probe says %s", strata_status_str(status));
        return 0;
    }
    status = stt_init(ctx->ops);
    if (status != STRATA_OK) {
        snprintf(ctx->why, sizeof(ctx->why), "init failed: %s", strata_status_str(status));
        return 0;
    }
    ctx->ndev = 0;
    status = stt_devices(ctx->ops, &ctx->ndev);
    if (status != STRATA_OK || ctx->ndev < 1) {
        snprintf(ctx->why, sizeof(ctx->why), "no device (%s, %d)", strata_status_str(status),
                 ctx->ndev);
        stt_fini(ctx->ops);
        return 0;
    }
    status = stt_get_props(ctx->ops, 0, &ctx->props);
    if (status != STRATA_OK) {
        print_error("%s: get_props(0) failed: %s\n", stt_name(ctx->ops), strata_status_str(status));
        stt_fini(ctx->ops);
        return -1;
    }
    ctx->ready = 1;
    return 0;
}

int sts_conf_teardown(void **state)
{
    sts_conf_ctx_t *ctx = *state;

    if (!ctx->ready)
        return 0;
    stt_fini(ctx->ops);
    ctx->ready = 0;
    int fds = sts_fd_count();
    if (fds != ctx->fds_before) {
        print_error("%s: %d descriptors open before init, %d after the last fini\n",
                    stt_name(ctx->ops), ctx->fds_before, fds);
        return -1;
    }
    return 0;
}

int sts_conf_run(const char *suite, struct CMUnitTest *cases, size_t ncases)
{
    int ntransports = stt_registry_count() + 1;
    sts_conf_ctx_t *ctxs = calloc((size_t)ntransports, sizeof(*ctxs));
    struct CMUnitTest *named = calloc(ncases, sizeof(*named));
    char (*names)[96] = calloc(ncases, sizeof(*names));
    int failed = 0;

    if (ctxs == NULL || named == NULL || names == NULL) {
        failed = 1;
        goto out;
    }
    for (int t = 0; t < ntransports; t++) {
        char group[96];
        ctxs[t].ops = t < stt_registry_count() ? stt_registry_at(t) : &stt_fake_ops;
        /* "tcp/conf_size_matrix": a failure names its transport. */
        for (size_t c = 0; c < ncases; c++) {
            named[c] = cases[c];
            snprintf(names[c], sizeof(names[c]), "%s/%s", stt_name(ctxs[t].ops), cases[c].name);
            named[c].name = names[c];
            named[c].initial_state = &ctxs[t];
        }
        snprintf(group, sizeof(group), "%s/%s", suite, stt_name(ctxs[t].ops));
        failed += _cmocka_run_group_tests(group, named, ncases, NULL, NULL);
    }
out:
    free(names);
    free(named);
    free(ctxs);
    return failed != 0;
}

sts_conf_ctx_t *sts_conf_begin(void **state)
{
    sts_conf_ctx_t *ctx = *state;
    if (!ctx->ready) {
        print_message("[   SKIP   ] %s cannot run here: %s\n", stt_name(ctx->ops), ctx->why);
        skip();
    }
    return ctx;
}

int sts_conf_max_recvs(const sts_conf_ctx_t *ctx)
{
    int n = ctx->props.max_recvs;
    return n < 1 ? 1 : n > STT_MAX_RECVS ? STT_MAX_RECVS : n;
}

void sts_conf_open(sts_conf_ctx_t *ctx, int dev, sts_pair_t *pair)
{
    assert_ok(sts_pair_open(ctx->ops, dev, STS_CONNECT_TIMEOUT_S, pair));
    assert_non_null(pair->send);
    assert_non_null(pair->recv);
}

strata_status_t sts_conf_xfer(sts_pair_t *pair, size_t ssize, size_t rsize, int send_first,
                              uint32_t seed, size_t *got_p)
{
    sts_req_slot_t slots[2];
    sts_reqset_t set = {.slots = slots, .cap = 2};
    uint64_t deadline = sts_deadline(STS_IO_TIMEOUT_S);
    sts_buf_t sbuf, rbuf;
    int sslot = -1, rslot = -1, tag = (int)(seed & 0xff);

    assert_ok(sts_buf_alloc(&sbuf, pair->send, ssize));
    assert_ok(sts_buf_alloc(&rbuf, pair->recv, rsize));
    sts_pattern_fill(sbuf.data, ssize, seed);
    memset(rbuf.data, 0, rsize);
    for (int step = 0; step < 2; step++) {
        if ((step == 0) == (send_first != 0))
            assert_ok(sts_isend_retry(pair->send, sbuf.data, ssize, tag, sbuf.mh, &set,
                                      deadline, &sslot, NULL));
        else
            assert_ok(sts_irecv_retry(pair->recv, 1, (void **)&rbuf.data, &rsize, &tag,
                                      &rbuf.mh, &set, deadline, &rslot, NULL));
    }
    assert_ok(sts_reqset_wait(&set, deadline));
    strata_status_t rstatus = slots[rslot].status;
    *got_p = slots[rslot].sizes[0];
    if (rstatus == STRATA_OK) {
        assert_status(slots[sslot].status, STRATA_OK);
        if (*got_p <= rsize)
            assert_pattern(rbuf.data, *got_p, seed);
        assert_true(sts_guard_ok(rbuf.data, rsize));
    }
    sts_buf_free(&sbuf);
    sts_buf_free(&rbuf);
    return rstatus;
}
