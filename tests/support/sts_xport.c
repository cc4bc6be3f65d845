/* Contract helpers: bounded polling of connect/accept and of request sets. */
#include "sts_xport.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sts_util.h"
#include "util/time.h"

strata_status_t sts_connect_accept(const stt_ops_t *ops, int dev, stt_listen_t *listen,
                                   void *handle, double timeout_s, stt_comm_t **send_p,
                                   stt_comm_t **recv_p)
{
    const stt_conn_cfg_t cfg = {.traffic_class = STT_TRAFFIC_CLASS_UNDEF};
    uint64_t deadline = sts_deadline(timeout_s);
    stt_comm_t *send = NULL, *recv = NULL;
    strata_status_t status = STRATA_OK;

    while (send == NULL || recv == NULL) {
        if (send == NULL) {
            status = stt_connect(ops, dev, handle, &cfg, &send);
            if (status != STRATA_OK)
                goto err;
        }
        if (recv == NULL) {
            status = stt_accept(listen, &recv);
            if (status != STRATA_OK)
                goto err;
        }
        if (send != NULL && recv != NULL)
            break;
        if (stu_deadline_passed(deadline)) {
            status = STRATA_ERR_TIMEOUT;
            goto err;
        }
        sts_relax();
    }
    *send_p = send;
    *recv_p = recv;
    return STRATA_OK;

err:
    if (recv != NULL)
        stt_close_recv(recv);
    if (send != NULL)
        stt_close_send(send);
    return status;
}

strata_status_t sts_pair_open(const stt_ops_t *ops, int dev, double timeout_s, sts_pair_t *pair)
{
    return sts_pair_open_on(ops, dev, dev, timeout_s, pair);
}

strata_status_t sts_pair_open_on(const stt_ops_t *ops, int ldev, int cdev, double timeout_s,
                                 sts_pair_t *pair)
{
    strata_status_t status;

    memset(pair, 0, sizeof(*pair));
    pair->ops = ops;
    pair->dev = cdev;
    status = stt_listen(ops, ldev, pair->handle, &pair->listen);
    if (status != STRATA_OK)
        goto err;
    if (pair->listen == NULL) {
        status = STRATA_ERR_INTERNAL; /* the contract: listen never leaves it NULL on OK */
        goto err;
    }
    status = sts_connect_accept(ops, cdev, pair->listen, pair->handle, timeout_s, &pair->send,
                                &pair->recv);
    if (status != STRATA_OK)
        goto err_close_listen;
    return STRATA_OK;

err_close_listen:
    stt_close_listen(pair->listen);
    pair->listen = NULL;
err:
    return status;
}

void sts_pair_close(sts_pair_t *pair)
{
    if (pair->send != NULL)
        stt_close_send(pair->send);
    if (pair->recv != NULL)
        stt_close_recv(pair->recv);
    if (pair->listen != NULL)
        stt_close_listen(pair->listen);
    pair->send = NULL;
    pair->recv = NULL;
    pair->listen = NULL;
}

strata_status_t sts_reqset_init(sts_reqset_t *set, int cap)
{
    memset(set, 0, sizeof(*set));
    set->slots = calloc((size_t)cap, sizeof(*set->slots));
    if (set->slots == NULL)
        return STRATA_ERR_NO_MEMORY;
    set->cap = cap;
    return STRATA_OK;
}

void sts_reqset_fini(sts_reqset_t *set)
{
    free(set->slots);
    memset(set, 0, sizeof(*set));
}

void sts_reqset_clear(sts_reqset_t *set)
{
    memset(set->slots, 0, (size_t)set->cap * sizeof(*set->slots));
    set->count = 0;
    set->pending = 0;
    set->errors = 0;
}

int sts_reqset_add(sts_reqset_t *set, stt_req_t *req)
{
    if (set->count == set->cap)
        return -1;
    sts_req_slot_t *slot = &set->slots[set->count];
    memset(slot, 0, sizeof(*slot));
    slot->req = req;
    slot->status = STRATA_INPROGRESS;
    set->pending++;
    return set->count++;
}

int sts_reqset_progress(sts_reqset_t *set)
{
    for (int i = 0; i < set->count; i++) {
        sts_req_slot_t *slot = &set->slots[i];
        int done = 0;
        if (slot->req == NULL)
            continue;
        strata_status_t status = stt_test(slot->req, &done, slot->sizes);
        if (status != STRATA_OK) {
            slot->status = status;
            set->errors++;
        } else if (done) {
            slot->status = STRATA_OK;
        } else {
            continue;
        }
        slot->req = NULL;
        set->pending--;
    }
    return set->pending;
}

strata_status_t sts_reqset_wait(sts_reqset_t *set, uint64_t deadline)
{
    while (sts_reqset_progress(set) > 0) {
        if (stu_deadline_passed(deadline))
            return STRATA_ERR_TIMEOUT;
    }
    return STRATA_OK;
}

/* isend (send = 1: data[0], sizes[0], tags[0], mhs[0]) or irecv, retried on "no slot now". */
static strata_status_t xport_post_retry(int send, stt_comm_t *comm, int n, void **data,
                                        const size_t *sizes, const int *tags, void **mhs,
                                        sts_reqset_t *progress, uint64_t deadline, int *slot_p,
                                        int *nulls_p)
{
    if (progress->count == progress->cap)
        return STRATA_ERR_NO_RESOURCE;
    for (;;) {
        stt_req_t *req = NULL;
        strata_status_t status = send ? stt_isend(comm, data[0], sizes[0], tags[0],
                                                  mhs != NULL ? mhs[0] : NULL, &req)
                                      : stt_irecv(comm, n, data, sizes, tags, mhs, &req);
        if (status != STRATA_OK)
            return status;
        if (req != NULL) {
            int slot = sts_reqset_add(progress, req);
            if (slot_p != NULL)
                *slot_p = slot;
            return STRATA_OK;
        }
        if (nulls_p != NULL)
            (*nulls_p)++;
        if (stu_deadline_passed(deadline))
            return STRATA_ERR_TIMEOUT;
        sts_reqset_progress(progress);
    }
}

strata_status_t sts_isend_retry(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                                sts_reqset_t *progress, uint64_t deadline, int *slot_p,
                                int *nulls_p)
{
    return xport_post_retry(1, comm, 1, &data, &size, &tag, &mh, progress, deadline, slot_p,
                            nulls_p);
}

strata_status_t sts_irecv_retry(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                                const int *tags, void **mhs, sts_reqset_t *progress,
                                uint64_t deadline, int *slot_p, int *nulls_p)
{
    return xport_post_retry(0, comm, n, data, sizes, tags, mhs, progress, deadline, slot_p,
                            nulls_p);
}

strata_status_t sts_req_wait(stt_req_t *req, uint64_t deadline, size_t *sizes)
{
    for (;;) {
        int done = 0;
        strata_status_t status = stt_test(req, &done, sizes);
        if (status != STRATA_OK || done)
            return status;
        if (stu_deadline_passed(deadline))
            return STRATA_ERR_TIMEOUT;
    }
}

strata_status_t sts_req_poke(stt_req_t **req, size_t *sizes)
{
    int done = 0;
    strata_status_t status;

    if (*req == NULL)
        return STRATA_OK;
    status = stt_test(*req, &done, sizes);
    if (status != STRATA_OK || done)
        *req = NULL;
    return status;
}

strata_status_t sts_req_wait_pair(stt_req_t *sreq, stt_req_t *rreq, uint64_t deadline,
                                  size_t *rsizes, strata_status_t *send_status)
{
    strata_status_t ss = STRATA_OK, rs = STRATA_OK;
    size_t ssizes[STT_MAX_RECVS];

    while (sreq != NULL || rreq != NULL) {
        strata_status_t s = sts_req_poke(&sreq, ssizes);
        if (s != STRATA_OK)
            ss = s;
        s = sts_req_poke(&rreq, rsizes);
        if (s != STRATA_OK)
            rs = s;
        if ((sreq != NULL || rreq != NULL) && stu_deadline_passed(deadline))
            return STRATA_ERR_TIMEOUT;
    }
    if (send_status != NULL)
        *send_status = ss;
    return rs;
}

strata_status_t sts_pair_exchange(sts_pair_t *pair, void *sbuf, size_t ssize, void *smh,
                                  void *rbuf, size_t rsize, void *rmh, int tag,
                                  uint64_t deadline, strata_status_t *send_status,
                                  strata_status_t *recv_status, size_t *received)
{
    sts_req_slot_t slots[2];
    sts_reqset_t set = {.slots = slots, .cap = 2};
    int sslot = -1, rslot = -1;
    strata_status_t status;

    status = sts_irecv_retry(pair->recv, 1, &rbuf, &rsize, &tag, &rmh, &set, deadline, &rslot,
                             NULL);
    if (status != STRATA_OK)
        return status;
    status = sts_isend_retry(pair->send, sbuf, ssize, tag, smh, &set, deadline, &sslot, NULL);
    if (status != STRATA_OK)
        return status;
    status = sts_reqset_wait(&set, deadline);
    if (status != STRATA_OK)
        return status;
    *send_status = slots[sslot].status;
    *recv_status = slots[rslot].status;
    *received = slots[rslot].sizes[0];
    return STRATA_OK;
}

strata_status_t sts_buf_alloc(sts_buf_t *buf, stt_comm_t *comm, size_t size)
{
    strata_status_t status;

    memset(buf, 0, sizeof(*buf));
    buf->data = malloc(size + STS_GUARD_SIZE);
    if (buf->data == NULL)
        return STRATA_ERR_NO_MEMORY;
    buf->size = size;
    sts_guard_set(buf->data, size);
    status = stt_reg_mr(comm, buf->data, size > 0 ? size : 1, STT_PTR_HOST, &buf->mh);
    if (status != STRATA_OK) {
        free(buf->data);
        buf->data = NULL;
        return status;
    }
    buf->comm = comm;
    return STRATA_OK;
}

void sts_buf_dereg(sts_buf_t *buf)
{
    if (buf->comm != NULL)
        stt_dereg_mr(buf->comm, buf->mh);
    buf->comm = NULL;
    buf->mh = NULL;
}

void sts_buf_free_data(sts_buf_t *buf)
{
    free(buf->data);
    buf->data = NULL;
}

void sts_buf_free(sts_buf_t *buf)
{
    sts_buf_dereg(buf);
    sts_buf_free_data(buf);
}

strata_status_t sts_connect_until_error(const stt_ops_t *ops, void *handle, uint64_t deadline,
                                        stt_comm_t **comm_p)
{
    strata_status_t status = STRATA_OK;

    *comm_p = NULL;
    while (status == STRATA_OK && *comm_p == NULL && !stu_deadline_passed(deadline)) {
        status = stt_connect(ops, 0, handle, NULL, comm_p);
        poll(NULL, 0, 1);
    }
    return status;
}

void sts_matrix_row(const char *xport, const char *what, const char *result, uint64_t since)
{
    printf("  matrix | %s | %s | %s after %.3f s\n", xport, what, result,
           (double)(stu_time_ns() - since) / 1e9);
    fflush(stdout);
}
