/*
 * The plugin's profiler net events in pure logic, against a fake profiler callback: a
 * transport that reports its work requests (as ib does) gets the handles through
 * comm->wr_cookies and each of its work requests becomes an event in NCCL's IB shape
 * (ncclProfilerNetIbDescr_v1_t: QP number, member device, wr_id, opcode, length), with
 * no per-request socket event; any other transport gets one socket-shape event per
 * request (ncclProfilerNetSockDescr_v1_t). Stops name the handle the start returned.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nccl/profiler_net.h"
#include "plugin/net_prof.h"

typedef struct fake_seen {
    int starts, stops;
    void *phandle;
    int64_t plugin_id;
    ncclProfilerNetIbDescr_v1_t ib;
    ncclProfilerNetSockDescr_v1_t sock;
    void *stopped;                      /* the handle of the last stop */
} fake_seen_t;

static fake_seen_t seen;
static char fake_event;                 /* the handle the fake profiler hands out */

static ncclResult_t fake_profiler(void **eHandle, int type, void *phandle, int64_t pluginId,
                                  void *extData)
{
    if (type == ncclProfilerNetEventStart) {
        seen.starts++;
        seen.phandle = phandle;
        seen.plugin_id = pluginId;
        if (((uint64_t)pluginId & ~0xffffull) == NCCL_PROFILER_NET_TYPE_IB)
            memcpy(&seen.ib, extData, sizeof(seen.ib));
        else
            memcpy(&seen.sock, extData, sizeof(seen.sock));
        *eHandle = &fake_event;
    } else if (type == ncclProfilerNetEventStop) {
        seen.stops++;
        seen.stopped = *eHandle;
    }
    return ncclSuccess;
}

static const stt_ops_t fake_qp_ops = {.name = "fake-qp", .reports_wrs = 1};
static const stt_ops_t fake_sock_ops = {.name = "fake-sock"};

static int setup(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof(seen));
    stp_prof_attach(fake_profiler);
    return 0;
}

/* A work request of a transport that reports them: one IB-shape event, then its stop. */
static void prof_ib_shape(void **state)
{
    stt_comm_t comm = {.ops = &fake_qp_ops};
    char handle;
    void *phandle = &handle;
    const stt_wr_observer_t *obs = stt_wr_observer();

    (void)state;
    stp_prof_cookies(&comm, &phandle);
    assert_non_null(comm.wr_cookies);
    assert_ptr_equal(comm.wr_cookies[0], &handle);
    stp_prof_cookies(&comm, NULL);
    assert_null(comm.wr_cookies);
    assert_non_null(obs);
    stt_wr_event_t ev = {.member = 1, .qpn = 0x1a2, .wr_id = 0x0000000700030101ull,
                         .opcode = 4, .length = 65536};
    void *h = obs->start(&handle, &ev);
    assert_ptr_equal(h, &fake_event);
    assert_int_equal(seen.starts, 1);
    assert_ptr_equal(seen.phandle, &handle);
    assert_int_equal(seen.plugin_id, NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER);
    assert_int_equal(seen.ib.type, ncclProfileQp);
    assert_int_equal(seen.ib.qp.device, 1);
    assert_int_equal(seen.ib.qp.qpNum, 0x1a2);
    assert_int_equal(seen.ib.qp.wr_id, 0x0000000700030101ull);
    assert_int_equal(seen.ib.qp.opcode, 4);
    assert_int_equal(seen.ib.qp.length, 65536);
    obs->stop(h);
    assert_int_equal(seen.stops, 1);
    assert_ptr_equal(seen.stopped, &fake_event);
    /* No socket event for such a transport's request. */
    stt_req_t req = {.comm = &comm, .prof = &handle};
    stp_prof_start(&req, &handle, true, 100);
    assert_null(req.prof);
    assert_int_equal(seen.starts, 1);
    /* Without a handle nothing starts. */
    assert_null(obs->start(NULL, &ev));
    assert_int_equal(seen.starts, 1);
}

/* Any other transport: one socket-shape event per request, no cookies handed down. */
static void prof_socket_shape(void **state)
{
    stt_comm_t comm = {.ops = &fake_sock_ops};
    char handle;
    void *phandle = &handle;
    stt_req_t req = {.comm = &comm};

    (void)state;
    stp_prof_cookies(&comm, &phandle);
    assert_null(comm.wr_cookies);
    stp_prof_start(&req, &handle, false, 4099);
    assert_ptr_equal(req.prof, &fake_event);
    assert_int_equal(seen.starts, 1);
    assert_int_equal(seen.plugin_id, NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER);
    assert_int_equal(seen.sock.type, ncclProfileSocket);
    assert_int_equal(seen.sock.sock.fd, -1);          /* no telemetry record: no id */
    assert_int_equal(seen.sock.sock.op, 1);
    assert_int_equal(seen.sock.sock.length, 4099);
    stp_prof_stop(req.prof);
    assert_int_equal(seen.stops, 1);
    stp_prof_start(&req, NULL, true, 8);         /* no handle: nothing */
    assert_null(req.prof);
    assert_int_equal(seen.starts, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(prof_ib_shape, setup),
        cmocka_unit_test_setup(prof_socket_shape, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
