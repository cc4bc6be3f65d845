/*
 * NCCL profiler net events (v10 and later): when NCCL gave init a profiler
 * callback and a request carries a profiler handle (NCCL passes one per isend
 * and irecv only while a profiler asked for net events), the plugin reports a
 * start event when the request is posted and a stop event when test() finishes
 * it, done or failed, in the socket shape of NCCL's ext-profiler
 * (include/nccl/profiler_net.h): fd is the connection's telemetry id (the "id"
 * of strata_net_stats_json; Strata's sockets live below its transport layer),
 * op 0 send / 1 receive, length the bytes posted (a grouped receive: the sum
 * of its buffers). One event per request, not per socket.
 *
 * Cost without a profiler: one load and one store per post, one load per test.
 */
#ifndef STP_NET_PROF_H
#define STP_NET_PROF_H

#include <stdbool.h>
#include <stddef.h>

#include "nccl/net.h"
#include "transport/transport.h"

/* The callback of the latest init that gave one (NCCL passes the same to every init). */
void stp_prof_attach(ncclProfilerCallback_t fn);

/* After a post that returned req: starts its event when profiling, else clears req->prof. */
void stp_prof_start(stt_req_t *req, void *phandle, bool send, size_t length);

/* After test() finished a request whose req->prof was ev (read before the test). */
void stp_prof_stop(void *ev);

#endif /* STP_NET_PROF_H */
