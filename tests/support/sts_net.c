/* Polling helpers over the plugin loader (see sts_net.h). */
#include "sts_net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sts_proc.h"
#include "sts_util.h"

ncclResult_t sts_net_link_open(stb_plugin_t *pl, int dev, int ctl_fd, uint64_t deadline,
                               sts_net_link_t *link, char *err, size_t errlen)
{
    char mine[NCCL_NET_HANDLE_MAXSIZE] = {0}, theirs[NCCL_NET_HANDLE_MAXSIZE];
    void *listen = NULL, *send, *recv;
    ncclResult_t res;

    res = stb_plugin_listen(pl, dev, mine, &listen);
    if (res != ncclSuccess) {
        snprintf(err, errlen, "listen: %s", stb_plugin_result_str(res));
        return res;
    }
    if (sts_ctl_send(ctl_fd, STS_CTL_HANDLE, mine, sizeof(mine)) != 0 ||
        sts_ctl_expect(ctl_fd, STS_CTL_HANDLE, theirs, sizeof(theirs), deadline) != 0) {
        snprintf(err, errlen, "handle exchange over the control socket failed");
        res = ncclInternalError;
        goto out;
    }
    res = stb_plugin_connect_accept(pl, dev, theirs, listen, deadline, NULL, NULL, &send,
                                    &recv);
    if (res != ncclSuccess) {
        snprintf(err, errlen, "connect/accept: %s%s", stb_plugin_result_str(res),
                 res == ncclInternalError ? " (or not connected before the deadline)" : "");
        goto out;
    }
    link->send = send;
    link->recv = recv;
out:
    stb_plugin_close_listen(pl, listen);
    return res;
}

void sts_net_link_close(stb_plugin_t *pl, sts_net_link_t *link)
{
    if (link->send != NULL)
        stb_plugin_close_send(pl, link->send);
    if (link->recv != NULL)
        stb_plugin_close_recv(pl, link->recv);
    link->send = link->recv = NULL;
}

/* Polls connect (handle given) or accept until the comm is ready. */
static ncclResult_t net_comm_wait(stb_plugin_t *pl, int dev, void *handle, void *listen,
                                  uint64_t deadline, void **comm_p)
{
    void *comm = NULL;
    while (comm == NULL) {
        ncclResult_t res = handle != NULL ? stb_plugin_connect(pl, dev, handle, &comm)
                                          : stb_plugin_accept(pl, listen, &comm);
        if (res != ncclSuccess)
            return res;
        if (comm == NULL && stu_deadline_passed(deadline))
            return ncclInternalError;
        if (comm == NULL)
            sts_relax();
    }
    *comm_p = comm;
    return ncclSuccess;
}

ncclResult_t sts_net_connect_wait(stb_plugin_t *pl, int dev, void *handle, uint64_t deadline,
                                  void **send)
{
    return net_comm_wait(pl, dev, handle, NULL, deadline, send);
}

ncclResult_t sts_net_accept_wait(stb_plugin_t *pl, void *listen, uint64_t deadline, void **recv)
{
    return net_comm_wait(pl, 0, NULL, listen, deadline, recv);
}

int sts_net_progress(stb_plugin_t *pl, sts_net_req_t *reqs, int n)
{
    int pending = 0;

    for (int i = 0; i < n; i++) {
        int done = 0;
        if (reqs[i].req == NULL)
            continue;
        ncclResult_t res = stb_plugin_test(pl, reqs[i].req, &done, reqs[i].sizes);
        if (res != ncclSuccess || done) {
            reqs[i].result = res;
            reqs[i].req = NULL;
        } else {
            pending++;
        }
    }
    return pending;
}

int sts_net_wait_all(stb_plugin_t *pl, sts_net_req_t *reqs, int n, uint64_t deadline)
{
    while (sts_net_progress(pl, reqs, n) > 0)
        if (stu_deadline_passed(deadline))
            return -1;
    return 0;
}

/* isend (send = 1: data[0], sizes[0], tags[0], mhs[0]) or irecv, retried on "no slot now". */
static ncclResult_t net_post_retry(stb_plugin_t *pl, int send, void *comm, int n, void **data,
                                   const size_t *sizes, const int *tags, void **mhs,
                                   sts_net_req_t *progress, int nprogress, uint64_t deadline,
                                   void **req)
{
    for (;;) {
        ncclResult_t res = send ? stb_plugin_isend(pl, comm, data[0], sizes[0], tags[0], mhs[0],
                                                   req)
                                : stb_plugin_irecv(pl, comm, n, data, sizes, tags, mhs, req);
        if (res != ncclSuccess || *req != NULL)
            return res;
        if (stu_deadline_passed(deadline))
            return ncclInternalError;
        sts_net_progress(pl, progress, nprogress);
    }
}

ncclResult_t sts_net_isend_retry(stb_plugin_t *pl, void *comm, void *data, size_t size, int tag,
                                 void *mh, sts_net_req_t *progress, int nprogress,
                                 uint64_t deadline, void **req)
{
    return net_post_retry(pl, 1, comm, 1, &data, &size, &tag, &mh, progress, nprogress,
                          deadline, req);
}

ncclResult_t sts_net_irecv_retry(stb_plugin_t *pl, void *comm, int n, void **data,
                                 const size_t *sizes, const int *tags, void **mhs,
                                 sts_net_req_t *progress, int nprogress, uint64_t deadline,
                                 void **req)
{
    return net_post_retry(pl, 0, comm, n, data, sizes, tags, mhs, progress, nprogress,
                          deadline, req);
}

ncclResult_t sts_net_buf_get(stb_plugin_t *pl, sts_net_buf_t *b, void *comm, size_t size)
{
    memset(b, 0, sizeof(*b));
    b->data = malloc(size + STS_GUARD_SIZE);
    if (b->data == NULL)
        return ncclSystemError;
    sts_guard_set(b->data, size);
    ncclResult_t res = stb_plugin_reg_mr(pl, comm, b->data, size > 0 ? size : 1, NCCL_PTR_HOST,
                                         &b->mh);
    if (res != ncclSuccess) {
        free(b->data);
        b->data = NULL;
        return res;
    }
    b->size = size;
    b->comm = comm;
    return ncclSuccess;
}

ncclResult_t sts_net_buf_dereg(stb_plugin_t *pl, sts_net_buf_t *b)
{
    ncclResult_t res = ncclSuccess;

    if (b->comm != NULL)
        res = stb_plugin_dereg_mr(pl, b->comm, b->mh);
    b->comm = NULL;
    return res;
}

void sts_net_buf_put(stb_plugin_t *pl, sts_net_buf_t *b)
{
    sts_net_buf_dereg(pl, b);
    free(b->data);
    b->data = NULL;
}
