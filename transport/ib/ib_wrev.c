/*
 * Work-request events of the ib transport (stt_wr_event_t, transport/transport.h), in the
 * shape of NCCL's IB transport: one event per QP a request uses.
 *
 *   send     one event per QP its work was posted on (each QP's last, signalled work
 *            request: its wr_id and opcode; length, the payload that QP carries),
 *            started when posted (a replay after a failover starts new ones on the QPs
 *            it uses), stopped by that QP's completion
 *   receive  one event per buffer and live QP, started by irecv (a receive's data may
 *            arrive on any live QP: wr_id names the QP and the FIFO slot, opcode is the
 *            completion it waits for, length 0), stopped when that QP's immediate for
 *            it arrives
 *
 * Whatever is still open when a request ends (test done or failed, its comm closed) is
 * stopped then, so every start has its stop. Nothing runs for a request without a
 * cookie (no profiler): one load and a store per post.
 */
#include "transport/ib/ib_internal.h"

void stt_ib_wrev_start(const stt_ib_conn_t *conn, void *cookie, void **slot, int q,
                       uint64_t wr_id, int opcode, size_t length)
{
    const stt_wr_observer_t *obs = stt_wr_observer();

    stt_ib_wrev_stop(slot);
    if (obs == NULL || cookie == NULL)
        return;
    stt_wr_event_t ev = {.member = conn->qps[q].member, .qpn = conn->qps[q].qp->qp_num,
                         .wr_id = wr_id, .opcode = opcode, .length = length};
    *slot = obs->start(cookie, &ev);
}

void stt_ib_wrev_stop(void **slot)
{
    const stt_wr_observer_t *obs;

    if (*slot == NULL)
        return;
    obs = stt_wr_observer();
    if (obs != NULL)
        obs->stop(*slot);
    *slot = NULL;
}

void stt_ib_wrev_send_end(stt_ib_sreq_t *req)
{
    for (int q = 0; q < STT_IB_MAX_QPS; q++)
        stt_ib_wrev_stop(&req->wr_ev[q]);
    req->wr_cookie = NULL;
}

void stt_ib_wrev_recv_start(stt_ib_recv_t *rc, stt_ib_rreq_t *req, uint32_t slot)
{
    const stt_ib_conn_t *conn = &rc->conn;

    for (int i = 0; i < req->slot.n; i++)
        for (int q = 0; q < conn->nqps; q++)
            if (conn->live & (1u << q))
                stt_ib_wrev_start(conn, req->wr_cookie[i], &req->wr_ev[i][q], q,
                                  stt_ib_wr_id(STT_IB_WR_RECV, q, (int)slot, 0),
                                  IBV_WC_RECV_RDMA_WITH_IMM, 0);
}

void stt_ib_wrev_recv_qp(stt_ib_rreq_t *req, int q)
{
    for (int i = 0; i < req->slot.n; i++)
        stt_ib_wrev_stop(&req->wr_ev[i][q]);
}

void stt_ib_wrev_recv_end(stt_ib_rreq_t *req)
{
    for (int i = 0; i < STT_MAX_RECVS; i++)
        for (int q = 0; q < STT_IB_MAX_QPS; q++)
            stt_ib_wrev_stop(&req->wr_ev[i][q]);
    req->wr_any = false;
}
