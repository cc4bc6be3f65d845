/*
 * The UCX transport's operations table, and test(), which hands a request to
 * the side of the data path its comm belongs to.
 */
#include "transport/base/hostmr.h"
#include "transport/ucx/ucx_internal.h"

static strata_status_t ucx_test(stt_req_t *req, int *done, size_t *sizes)
{
    if (stt_slots_test_check(&stt_ucx_ops, req, done) != STRATA_OK)
        return STRATA_ERR_INVALID;
    stt_ucx_conn_t *conn = (stt_ucx_conn_t *)req->comm;
    if (conn->head.send)
        return stt_ucx_send_test((stt_ucx_send_t *)conn, req, done, sizes);
    return stt_ucx_recv_test((stt_ucx_recv_t *)conn, req, done, sizes);
}

const stt_ops_t stt_ucx_ops = {
    .name = "ucx",
    .probe = stt_ucx_probe,
    .library = stt_ucx_library,
    .init = stt_ucx_init,
    .fini = stt_ucx_fini,
    .devices = stt_ucx_devices,
    .get_props = stt_ucx_get_props,
    .listen = stt_ucx_listen,
    .connect = stt_ucx_connect,
    .connect_abandon = stt_ucx_connect_abandon,
    .accept = stt_ucx_accept,
    .reg_mr = stt_hostmr_reg,           /* host memory, nothing pinned */
    .reg_mr_dmabuf = stt_hostmr_reg_dmabuf,
    .dereg_mr = stt_hostmr_dereg,
    .isend = stt_ucx_isend,
    .irecv = stt_ucx_irecv,
    .iflush = stt_ucx_iflush,
    .test = ucx_test,
    .close_send = stt_ucx_close_send,
    .close_recv = stt_ucx_close_recv,
    .close_listen = stt_ucx_close_listen,
    .poll_fds = stt_ucx_poll_fds,
    .progress = stt_no_progress,        /* UCX moves nothing of its own outside a test */
    .make_vdev = stt_ucx_make_vdev,
};
