/*
 * What only the ib transport's own tests share, on top of the transport
 * fixtures (tests/support/sts_conf.h, sts_xport.h): the group fixture (one
 * init for the group; the teardown checks that no descriptor outlived the
 * last fini), and which device connects. On a host without an ACTIVE verbs
 * port every case skips (cmocka skip), so the tests pass there and do real
 * work inside the Soft-RoCE guest (make test-rdma).
 *
 * STRATA_TEST_IB_PEER_DEV picks the connecting device (default: the last
 * one, so two Soft-RoCE devices give the rxe0 <-> rxe1 case; 0 for one device).
 */
#ifndef STRATA_TESTS_IB_FIXTURE_H
#define STRATA_TESTS_IB_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sts_cmocka.h"
#include "sts_conf.h"
#include "sts_util.h"
#include "sts_xport.h"
#include "transport/ib/ib.h"
#include "transport/ib/ib_internal.h"
#include "util/param.h"

static const stt_ops_t *ops = &stt_ib_ops;
static sts_conf_ctx_t ib_ctx = {.ops = &stt_ib_ops};

/* Group setup: init once; without an ACTIVE device every case skips (sts_conf_begin). */
static inline int ib_group_setup(void **state)
{
    stu_param_reload();
    *state = &ib_ctx;
    return sts_conf_setup(state);
}

/* First line of every case: skips it where no verbs device is ACTIVE. */
#define IB_NEED_DEVICE() ((void)sts_conf_begin(state))

static inline int ib_ndev(void)
{
    return ib_ctx.ready ? ib_ctx.ndev : 0;
}

static inline int ib_peer_dev(void)
{
    const char *e = getenv("STRATA_TEST_IB_PEER_DEV");
    int d = e != NULL ? atoi(e) : ib_ndev() - 1;
    return d < 0 || d >= ib_ndev() ? 0 : d;
}

/* A pair listening on device 0 and connecting from ib_peer_dev(). */
static inline void ib_pair_open(sts_pair_t *p)
{
    sts_pair_must_open(ops, 0, ib_peer_dev(), p);
}

#endif /* STRATA_TESTS_IB_FIXTURE_H */
