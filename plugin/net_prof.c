/* Profiler net events (net_prof.h). */
#include "plugin/net_prof.h"

#include "nccl/profiler_net.h"
#include "plugin/net_stats.h"
#include "util/compiler.h"

static ncclProfilerCallback_t prof_fn;

void stp_prof_attach(ncclProfilerCallback_t fn)
{
    if (fn != NULL)
        __atomic_store_n(&prof_fn, fn, __ATOMIC_RELEASE);
}

void stp_prof_start(stt_req_t *req, void *phandle, bool send, size_t length)
{
    ncclProfilerCallback_t fn = __atomic_load_n(&prof_fn, __ATOMIC_ACQUIRE);

    req->prof = NULL;
    if (STU_LIKELY(fn == NULL || phandle == NULL))
        return;
    const stp_stats_t *s = req->comm->stats;
    ncclProfilerNetSockDescr_v1_t d = {.type = ncclProfileSocket};
    d.sock.fd = s != NULL ? (int)s->id : -1;
    d.sock.op = send ? 0 : 1;
    d.sock.length = length;
    void *ev = NULL;
    if (fn(&ev, ncclProfilerNetEventStart, phandle,
           (int64_t)(NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER), &d) ==
        ncclSuccess)
        req->prof = ev;
}

void stp_prof_stop(void *ev)
{
    ncclProfilerCallback_t fn = __atomic_load_n(&prof_fn, __ATOMIC_ACQUIRE);

    if (ev != NULL && fn != NULL)
        fn(&ev, ncclProfilerNetEventStop, NULL, 0, NULL);
}
