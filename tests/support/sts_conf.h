/*
 * The transport fixtures of every transport test (the conformance suite
 * tests/transport/test_conformance*.c and each transport's own tests): one
 * context per transport, a setup that initialises the transport (or records
 * why it cannot run here) and a teardown that checks the last fini closed
 * every descriptor, usable per case or per group; the runner that repeats a
 * table of cases for every transport of the registry plus the
 * fault-injecting fake with no fault armed; connected pairs and checked
 * transfers that fail the case with the status's name.
 *
 * Include after <cmocka.h>.
 */
#ifndef STS_CONF_H
#define STS_CONF_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"
#include "sts_xport.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

typedef struct sts_conf_ctx {
    const stt_ops_t *ops;
    int ready;          /* this case's init succeeded and a device exists */
    int ndev;
    int fds_before;     /* descriptors open before this case's init */
    stt_props_t props;  /* device 0 */
    char why[160];      /* why the transport cannot run here */
} sts_conf_ctx_t;

/*
 * cmocka setup/teardown of a case, or of a group; the state is the
 * transport's context. A group's context reaches each of its cases as their
 * initial state, so sts_conf_begin works there too.
 */
int sts_conf_setup(void **state);
int sts_conf_teardown(void **state);

#define STS_CONF_CASE(f) \
    cmocka_unit_test_prestate_setup_teardown(f, sts_conf_setup, sts_conf_teardown, NULL)

/*
 * Runs the cases once per transport, as the group "<suite>/<transport>".
 * Returns the process exit status (0 when every group passed).
 */
int sts_conf_run(const char *suite, struct CMUnitTest *cases, size_t ncases);

/* The context of the running case; skips the case when the transport cannot run here. */
sts_conf_ctx_t *sts_conf_begin(void **state);

/* Grouped-receive width to use: the device's max_recvs, within 1..STT_MAX_RECVS. */
int sts_conf_max_recvs(const sts_conf_ctx_t *ctx);

/* Opens a connected pair on dev, failing the case if it cannot. */
void sts_conf_open(sts_conf_ctx_t *ctx, int dev, sts_pair_t *pair);

/* The same for any ops: listener on ldev, connecting end on cdev. */
void sts_pair_must_open(const stt_ops_t *ops, int ldev, int cdev, sts_pair_t *pair);

/*
 * Drives a send and a receive (either may be NULL) to their ends within
 * STS_IO_TIMEOUT_S, failing the case past it. Returns the receive's status;
 * *send_status (may be NULL) gets the send's.
 */
strata_status_t sts_reqs_finish(stt_req_t *sreq, stt_req_t *rreq, size_t *rsizes,
                                strata_status_t *send_status);

#define STS_XFER_SEND_FIRST 1u      /* post the send before the receive */
#define STS_XFER_UNREGISTERED 2u    /* NULL memory handles: the transport registers itself */

/*
 * One message of ssize bytes with tag into a receive buffer of rsize bytes,
 * data seeded by seed. When the receive succeeded, checks the send's status,
 * the data and the guard after the buffer. Returns the receive's status;
 * *got_p gets the size test reported.
 */
strata_status_t sts_xfer(sts_pair_t *pair, size_t ssize, size_t rsize, int tag, uint32_t seed,
                         unsigned flags, size_t *got_p);

/* sts_xfer that must deliver all ssize bytes. */
void sts_xfer_ok(sts_pair_t *pair, size_t ssize, size_t rsize, int tag, uint32_t seed,
                 unsigned flags);

#endif /* STS_CONF_H */
