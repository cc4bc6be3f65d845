/* The UCX transport's operations table. */
#include "transport/base/hostmr.h"
#include "transport/ucx/ucx_internal.h"

const stt_ops_t stt_ucx_ops = {
    .name = "ucx",
    .probe = stt_ucx_probe,
    .init = stt_ucx_init,
    .fini = stt_ucx_fini,
    .devices = stt_ucx_devices,
    .get_props = stt_ucx_get_props,
    .listen = stt_ucx_listen,
    .connect = stt_ucx_connect,
    .accept = stt_ucx_accept,
    .reg_mr = stt_hostmr_reg,           /* host memory, nothing pinned */
    .reg_mr_dmabuf = stt_hostmr_reg_dmabuf,
    .dereg_mr = stt_hostmr_dereg,
    .isend = stt_ucx_isend,
    .irecv = stt_ucx_irecv,
    .iflush = stt_ucx_iflush,
    .test = stt_ucx_test,
    .close_send = stt_ucx_close_send,
    .close_recv = stt_ucx_close_recv,
    .close_listen = stt_ucx_close_listen,
    .poll_fds = stt_ucx_poll_fds,
};
