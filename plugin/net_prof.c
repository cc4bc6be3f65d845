/* Profiler net events (net_prof.h). */
#include "plugin/net_prof.h"

#include "nccl/profiler_net.h"
#include "plugin/net_stats.h"
#include "util/compiler.h"

static ncclProfilerCallback_t prof_fn;

/* A transport's work request on one QP: an event in NCCL's IB shape. */
static void *prof_wr_start(void *phandle, const stt_wr_event_t *e)
{
    ncclProfilerCallback_t fn = __atomic_load_n(&prof_fn, __ATOMIC_ACQUIRE);
    ncclProfilerNetIbDescr_v1_t d = {.type = ncclProfileQp};
    void *ev = NULL;

    if (fn == NULL || phandle == NULL)
        return NULL;
    d.qp.device = e->member;
    d.qp.wr_id = e->wr_id;
    d.qp.opcode = e->opcode;
    d.qp.qpNum = (int)e->qpn;
    d.qp.length = e->length;
    if (fn(&ev, ncclProfilerNetEventStart, phandle,
           (int64_t)(NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER), &d) != ncclSuccess)
        return NULL;
    return ev;
}

static const stt_wr_observer_t prof_wr_observer = {.start = prof_wr_start,
                                                   .stop = stp_prof_stop};

void stp_prof_attach(ncclProfilerCallback_t fn)
{
    if (fn == NULL)
        return;
    __atomic_store_n(&prof_fn, fn, __ATOMIC_RELEASE);
    stt_wr_observer_set(&prof_wr_observer);
}

void stp_prof_cookies(stt_comm_t *comm, void *const *phandles)
{
    comm->wr_cookies = NULL;
    if (STU_UNLIKELY(phandles != NULL && __atomic_load_n(&prof_fn, __ATOMIC_ACQUIRE) != NULL &&
                     stt_reports_wrs(comm->ops)))
        comm->wr_cookies = phandles;
}

void stp_prof_start(stt_req_t *req, void *phandle, bool send, size_t length)
{
    ncclProfilerCallback_t fn = __atomic_load_n(&prof_fn, __ATOMIC_ACQUIRE);

    req->prof = NULL;
    if (STU_LIKELY(fn == NULL || phandle == NULL) || stt_reports_wrs(req->comm->ops))
        return;                /* no profiler, or the transport reports per work request */
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
