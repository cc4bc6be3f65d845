/*
 * "fake": a fault-injecting transport for tests. It wraps a real transport
 * (the in-process "loop" one unless told otherwise) and forwards every call,
 * except where a programmed fault says to answer differently:
 *
 *   connect_nulls / accept_nulls  connect/accept answer OK with a NULL comm
 *                                 this many times before forwarding
 *   isend_nulls / irecv_nulls     isend/irecv answer OK with a NULL request
 *                                 ("no slot now") this many times
 *   test_remote_at                the k-th test() call from now on (1-based)
 *                                 fails with STRATA_ERR_REMOTE; the comm of
 *                                 that request is then dead: every later test
 *                                 or post on it fails with STRATA_ERR_REMOTE
 *   reg_mr_fails                  reg_mr fails this many times, with
 *                                 reg_mr_status (STRATA_ERR_NO_RESOURCE if 0)
 *   listen_status / connect_status / accept_status
 *                                 a non-zero value is returned once by the next
 *                                 listen / connect / accept call
 *
 * With no fault armed the fake must pass the conformance suite like any
 * transport. Its objects carry stt_fake_ops, so the contract's dispatch
 * helpers (stt_isend, stt_test, ...) route through it.
 *
 * Thread safety: like any transport, different comms may be driven from
 * different threads (counters and countdowns are atomic). The fault program
 * is process-global: arm it (sts_fake_reset) while no other thread uses the
 * fake.
 */
#ifndef STS_FAKE_TRANSPORT_H
#define STS_FAKE_TRANSPORT_H

#include "transport/transport.h"

typedef struct sts_fake_faults {
    int connect_nulls;
    int accept_nulls;
    int isend_nulls;
    int irecv_nulls;
    int test_remote_at;
    int reg_mr_fails;
    strata_status_t reg_mr_status;
    strata_status_t listen_status;
    strata_status_t connect_status;
    strata_status_t accept_status;
} sts_fake_faults_t;

/* Calls seen since the last sts_fake_reset, and faults actually injected. */
typedef struct sts_fake_counters {
    int connect_calls, accept_calls, isend_calls, irecv_calls, test_calls, reg_mr_calls;
    int injected_nulls;      /* NULL comms or requests handed out by a fault */
    int injected_errors;     /* error statuses returned by a fault */
    int live_requests;       /* requests handed out and not yet released */
} sts_fake_counters_t;

extern const stt_ops_t stt_fake_ops;

/*
 * Chooses the wrapped transport (NULL: the registry's "loop"). Only while the
 * fake is not initialised. Returns OK, or STRATA_ERR_NOT_FOUND when no loop
 * transport is registered.
 */
strata_status_t sts_fake_set_inner(const stt_ops_t *inner);
const stt_ops_t *sts_fake_inner(void);

/* Replaces the fault program (NULL disarms everything) and zeroes the counters. */
void sts_fake_reset(const sts_fake_faults_t *faults);

/* The counters so far. */
void sts_fake_counters(sts_fake_counters_t *counters);

#endif /* STS_FAKE_TRANSPORT_H */
