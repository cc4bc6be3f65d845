/*
 * NCCL profiler net events (v10 and later): when NCCL gave init a profiler
 * callback and a request carries a profiler handle (NCCL passes one per isend
 * and per irecv buffer only while a profiler asked for net events), the plugin
 * reports its traffic in one of the two shapes of NCCL's ext-profiler
 * (include/nccl/profiler_net.h):
 *
 *   IB shape, for a transport that reports its work requests (ib): one event
 *     per work request on one QP, started when the transport posts it and
 *     stopped when it completes (or its request ends), with the QP number, the
 *     member port of the device it runs on, the wr_id, the opcode and the
 *     payload bytes on that QP (transport/ib/ib_wrev.c says which events a send
 *     and a receive make);
 *   socket shape, for the others (tcp, ucx, loop): one event per request,
 *     started when posted and stopped when test() finishes it, done or failed:
 *     fd is the connection's telemetry id (the "id" of strata_net_stats_json;
 *     Strata's sockets live below its transport layer), op 0 send / 1 receive,
 *     length the bytes posted (a grouped receive: the sum of its buffers).
 *
 * Cost without a profiler: a load and a store or two per post, one load per test.
 */
#ifndef STP_NET_PROF_H
#define STP_NET_PROF_H

#include <stdbool.h>
#include <stddef.h>

#include "nccl/net.h"
#include "transport/transport.h"

/* The callback of the latest init that gave one (NCCL passes the same to every init). */
void stp_prof_attach(ncclProfilerCallback_t fn);

/*
 * Before an isend (phandles: the address of its one handle) or an irecv (NCCL's
 * per-buffer handles, or NULL): hands the handles to a transport that reports its
 * work requests, through comm->wr_cookies; after the call, stp_prof_cookies(comm,
 * NULL) takes them back (they live only as long as the call).
 */
void stp_prof_cookies(stt_comm_t *comm, void *const *phandles);

/*
 * After a post that returned req: starts its socket-shape event when profiling a
 * transport that does not report its work requests, else clears req->prof.
 */
void stp_prof_start(stt_req_t *req, void *phandle, bool send, size_t length);

/* After test() finished a request whose req->prof was ev (read before the test). */
void stp_prof_stop(void *ev);

#endif /* STP_NET_PROF_H */
