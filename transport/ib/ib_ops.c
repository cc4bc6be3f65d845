/*
 * The ib transport's operations table, and test(), which finds the request
 * in its comm's rings and hands it to the side of the data path it belongs to.
 */
#include "transport/ib/ib_internal.h"

static strata_status_t ib_test(stt_req_t *req, int *done, size_t *sizes)
{
    if (stt_slots_test_check(&stt_ib_ops, req, done) != STRATA_OK)
        return STRATA_ERR_INVALID;
    stt_ib_conn_t *conn = (stt_ib_conn_t *)req->comm;
    if (conn->head.send) {
        stt_ib_send_t *sc = (stt_ib_send_t *)conn;
        stt_slot_t *s = stt_slots_find(&sc->slots, req);
        if (s != NULL)
            return stt_ib_send_test(sc, (stt_ib_sreq_t *)s, done, sizes);
    } else {
        stt_ib_recv_t *rc = (stt_ib_recv_t *)conn;
        stt_slot_t *s = stt_slot_find(rc->reqs, sizeof(rc->reqs[0]), STT_IB_FIFO_DEPTH, req);
        if (s == NULL)
            s = stt_slots_find(&rc->flush_slots, req);
        if (s != NULL)
            return stt_ib_recv_test(rc, (stt_ib_rreq_t *)s, done, sizes);
    }
    return stt_slots_stale(&stt_ib_ops, req);
}

/*
 * progress(): a virtual NIC's comm answers its peer's failover frames (DOWN, POS) and
 * notices its own members' port events here as in test(), so a peer's sends that wait for
 * this end's answer finish while nothing is posted on this comm; a plain comm moves nothing
 * without a request.
 */
static strata_status_t ib_progress(stt_comm_t *comm)
{
    stt_ib_conn_t *conn = (stt_ib_conn_t *)comm;

    if (conn == NULL || conn->head.base.ops != &stt_ib_ops) {
        stt_conn_bad(comm, &stt_ib_ops, false, "progress");
        return STRATA_ERR_INVALID;
    }
    if (conn->head.failed != STRATA_OK || !stt_ib_conn_vnic(conn))
        return conn->head.failed;
    if (conn->head.send)
        return stt_ib_send_progress((stt_ib_send_t *)conn);
    return stt_ib_recv_progress((stt_ib_recv_t *)conn);
}

const stt_ops_t stt_ib_ops = {
    .name = "ib",
    .reports_wrs = 1,
    .probe = stt_ib_probe,
    .library = stt_ib_library,
    .init = stt_ib_init,
    .fini = stt_ib_fini,
    .devices = stt_ib_devices,
    .get_props = stt_ib_get_props,
    .listen = stt_ib_listen,
    .connect = stt_ib_connect,
    .connect_abandon = stt_ib_connect_abandon,
    .accept = stt_ib_accept,
    .reg_mr = stt_ib_reg_mr,
    .reg_mr_dmabuf = stt_ib_reg_mr_dmabuf,
    .dereg_mr = stt_ib_dereg_mr,
    .isend = stt_ib_isend,
    .irecv = stt_ib_irecv,
    .iflush = stt_ib_iflush,
    .test = ib_test,
    .close_send = stt_ib_close_send,
    .close_recv = stt_ib_close_recv,
    .close_listen = stt_ib_close_listen,
    .poll_fds = stt_no_poll_fds,        /* no completion channel: test() polls the CQs */
    .progress = ib_progress,
    .make_vdev = stt_ib_make_vdev,
};
