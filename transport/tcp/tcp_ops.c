/*
 * The TCP transport's operations table, and test(), which hands a request to
 * the side of the data path its comm belongs to.
 */
#include "transport/base/hostmr.h"
#include "transport/tcp/tcp_internal.h"

static strata_status_t tcp_test(stt_req_t *req, int *done, size_t *sizes)
{
    if (stt_slots_test_check(&stt_tcp_ops, req, done) != STRATA_OK)
        return STRATA_ERR_INVALID;
    stt_tcp_conn_t *conn = (stt_tcp_conn_t *)req->comm;
    if (conn->head.send)
        return stt_tcp_send_test((stt_tcp_send_t *)conn, req, done, sizes);
    return stt_tcp_recv_test((stt_tcp_recv_t *)conn, req, done, sizes);
}

/*
 * progress(): only a virtual device's comm has business of its own (its failover: a lost
 * member noticed by a read, the peer's frames read and answered); a plain device's comm
 * moves nothing without a request. The receive side's pass reads the lead socket (one recv
 * when idle) and stops at a header that waits for a receive, as test() does.
 */
static strata_status_t tcp_progress(stt_comm_t *comm)
{
    stt_tcp_conn_t *conn = (stt_tcp_conn_t *)comm;

    if (conn == NULL || conn->head.base.ops != &stt_tcp_ops) {
        stt_conn_bad(comm, &stt_tcp_ops, false, "progress");
        return STRATA_ERR_INVALID;
    }
    if (conn->head.failed != STRATA_OK || !stt_tcp_fused(conn))
        return conn->head.failed;
    if (conn->head.send)
        return stt_tcp_send_progress((stt_tcp_send_t *)conn);
    return stt_tcp_recv_progress((stt_tcp_recv_t *)conn);
}

const stt_ops_t stt_tcp_ops = {
    .name = "tcp",
    .probe = stt_tcp_probe,
    .library = stt_no_library,
    .init = stt_tcp_init,
    .fini = stt_tcp_fini,
    .devices = stt_tcp_devices,
    .get_props = stt_tcp_get_props,
    .listen = stt_tcp_listen,
    .connect = stt_tcp_connect,
    .connect_abandon = stt_tcp_connect_abandon,
    .accept = stt_tcp_accept,
    .reg_mr = stt_hostmr_reg,           /* host memory, nothing pinned */
    .reg_mr_dmabuf = stt_hostmr_reg_dmabuf,
    .dereg_mr = stt_hostmr_dereg,
    .isend = stt_tcp_isend,
    .irecv = stt_tcp_irecv,
    .iflush = stt_tcp_iflush,
    .test = tcp_test,
    .close_send = stt_tcp_close_send,
    .close_recv = stt_tcp_close_recv,
    .close_listen = stt_tcp_close_listen,
    .poll_fds = stt_tcp_poll_fds,
    .progress = tcp_progress,
    .make_vdev = stt_tcp_make_vdev,
};
