/* The ib transport's operations table and the request test that dispatches by comm kind. */
#include <stddef.h>

#include "transport/ib/ib_internal.h"
#include "util/log.h"

strata_status_t stt_ib_test(stt_req_t *req, int *done, size_t *sizes)
{
    if (req == NULL || done == NULL || req->comm == NULL || req->comm->ops != &stt_ib_ops) {
        STU_WARN("ib: test called with %s", req == NULL ? "a NULL request" :
                 done == NULL ? "a NULL done output" : "a request of no ib comm");
        return STRATA_ERR_INVALID;
    }
    stt_ib_conn_t *conn = (stt_ib_conn_t *)req->comm;
    if (conn->kind == STT_IB_KIND_SEND) {
        stt_ib_send_t *sc = (stt_ib_send_t *)conn;
        ptrdiff_t i = (stt_ib_sreq_t *)req - sc->reqs;
        if (i >= 0 && i < STT_IB_SEND_RING && &sc->reqs[i].base == req &&
            sc->reqs[i].state != STT_IB_REQ_FREE)
            return stt_ib_send_test(sc, &sc->reqs[i], done, sizes);
    } else {
        stt_ib_recv_t *rc = (stt_ib_recv_t *)conn;
        ptrdiff_t i = (stt_ib_rreq_t *)req - rc->reqs;
        ptrdiff_t f = (stt_ib_rreq_t *)req - rc->flushes;
        stt_ib_rreq_t *r = NULL;
        if (i >= 0 && i < STT_IB_FIFO_DEPTH && &rc->reqs[i].base == req)
            r = &rc->reqs[i];
        else if (f >= 0 && f < STT_IB_FIFO_DEPTH && &rc->flushes[f].base == req)
            r = &rc->flushes[f];
        if (r != NULL && r->state != STT_IB_REQ_FREE)
            return stt_ib_recv_test(rc, r, done, sizes);
    }
    STU_WARN("ib: test on a request %p that is not pending on its comm (released already?)",
             (void *)req);
    return STRATA_ERR_INVALID;
}

const stt_ops_t stt_ib_ops = {
    .name = "ib",
    .probe = stt_ib_probe,
    .init = stt_ib_init,
    .fini = stt_ib_fini,
    .devices = stt_ib_devices,
    .get_props = stt_ib_get_props,
    .listen = stt_ib_listen,
    .connect = stt_ib_connect,
    .accept = stt_ib_accept,
    .reg_mr = stt_ib_reg_mr,
    .reg_mr_dmabuf = stt_ib_reg_mr_dmabuf,
    .dereg_mr = stt_ib_dereg_mr,
    .isend = stt_ib_isend,
    .irecv = stt_ib_irecv,
    .iflush = stt_ib_iflush,
    .test = stt_ib_test,
    .close_send = stt_ib_close_send,
    .close_recv = stt_ib_close_recv,
    .close_listen = stt_ib_close_listen,
    .poll_fds = stt_ib_poll_fds,
};
