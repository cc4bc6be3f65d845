/*
 * The fault-injecting fake transport. Every object wraps the inner
 * transport's object and carries stt_fake_ops, so calls made through the
 * contract's dispatch helpers land here first.
 *
 * Requests are wrapped in slots preallocated per comm (the contract's send
 * budget), so a post is refused with a NULL request before it reaches the
 * inner transport when no slot is free; a post that was forwarded is never
 * lost.
 */
#include "fake_transport.h"

#include <stdlib.h>
#include <string.h>

#define FAKE_REQ_SLOTS STT_MAX_SEND_REQUESTS

typedef struct fake_listen {
    stt_listen_t base;
    stt_listen_t *inner;
} fake_listen_t;

typedef struct fake_req {
    stt_req_t base;
    stt_req_t *inner;
    int used;
} fake_req_t;

typedef struct fake_comm {
    stt_comm_t base;
    stt_comm_t *inner;
    int dead;                        /* a remote fault fired on this comm */
    int nfree;
    int free_idx[FAKE_REQ_SLOTS];    /* stack of free slot indices */
    fake_req_t reqs[FAKE_REQ_SLOTS];
} fake_comm_t;

/*
 * Counters and countdowns are updated atomically: the fake may sit under
 * several threads driving different comms (the conformance suite's thread
 * case), as any transport may.
 */
#define FAKE_COUNT(field) __atomic_add_fetch(&fake_count.field, 1, __ATOMIC_RELAXED)
#define FAKE_UNCOUNT(field) __atomic_sub_fetch(&fake_count.field, 1, __ATOMIC_RELAXED)

static const stt_ops_t *fake_inner_ops;
static int fake_refs;
static sts_fake_faults_t fake_faults;
static sts_fake_counters_t fake_count;

strata_status_t sts_fake_set_inner(const stt_ops_t *inner)
{
    if (inner == NULL)
        inner = stt_registry_find("loop");
    if (inner == NULL)
        return STRATA_ERR_NOT_FOUND;
    if (fake_refs > 0 && inner != fake_inner_ops)
        return STRATA_ERR_INVALID;
    fake_inner_ops = inner;
    return STRATA_OK;
}

const stt_ops_t *sts_fake_inner(void)
{
    return fake_inner_ops;
}

void sts_fake_reset(const sts_fake_faults_t *faults)
{
    int live = fake_count.live_requests;

    if (faults != NULL)
        fake_faults = *faults;
    else
        memset(&fake_faults, 0, sizeof(fake_faults));
    memset(&fake_count, 0, sizeof(fake_count));
    fake_count.live_requests = live; /* a property of the objects, not of the program */
}

void sts_fake_counters(sts_fake_counters_t *counters)
{
    *counters = fake_count;
}

/* Consumes one unit of a countdown fault; true when the fault fires. */
static int fault_take(int *remaining)
{
    int left = __atomic_load_n(remaining, __ATOMIC_RELAXED);
    while (left > 0)
        if (__atomic_compare_exchange_n(remaining, &left, left - 1, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return 1;
    return 0;
}

/* A one-shot status fault; returns the status to inject, or OK. */
static strata_status_t fault_take_status(strata_status_t *pending)
{
    strata_status_t status = __atomic_exchange_n(pending, STRATA_OK, __ATOMIC_RELAXED);
    if (status != STRATA_OK)
        FAKE_COUNT(injected_errors);
    return status;
}

static strata_status_t fake_probe(void)
{
    if (fake_inner_ops == NULL && sts_fake_set_inner(NULL) != STRATA_OK)
        return STRATA_ERR_NOT_FOUND;
    return stt_probe(fake_inner_ops);
}

static strata_status_t fake_init(void)
{
    if (fake_inner_ops == NULL && sts_fake_set_inner(NULL) != STRATA_OK)
        return STRATA_ERR_NOT_FOUND;
    strata_status_t status = stt_init(fake_inner_ops);
    if (status == STRATA_OK)
        __atomic_add_fetch(&fake_refs, 1, __ATOMIC_RELAXED);
    return status;
}

static void fake_fini(void)
{
    int refs = __atomic_load_n(&fake_refs, __ATOMIC_RELAXED);
    do {
        if (refs == 0)
            return;
    } while (!__atomic_compare_exchange_n(&fake_refs, &refs, refs - 1, 0, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    stt_fini(fake_inner_ops);
}

static strata_status_t fake_devices(int *ndev_p)
{
    return stt_devices(fake_inner_ops, ndev_p);
}

static strata_status_t fake_get_props(int dev, stt_props_t *props_p)
{
    return stt_get_props(fake_inner_ops, dev, props_p);
}

static strata_status_t fake_listen(int dev, void *handle, stt_listen_t **listen_p)
{
    strata_status_t status = fault_take_status(&fake_faults.listen_status);
    fake_listen_t *fl;

    if (status != STRATA_OK)
        return status;
    fl = calloc(1, sizeof(*fl));
    if (fl == NULL)
        return STRATA_ERR_NO_MEMORY;
    status = stt_listen(fake_inner_ops, dev, handle, &fl->inner);
    if (status != STRATA_OK) {
        free(fl);
        return status;
    }
    fl->base.ops = &stt_fake_ops;
    fl->base.dev = dev;
    *listen_p = &fl->base;
    return STRATA_OK;
}

/* Wraps an inner comm; on allocation failure closes it again. */
static strata_status_t fake_comm_wrap(stt_comm_t *inner, int is_send, stt_comm_t **comm_p)
{
    fake_comm_t *fc = calloc(1, sizeof(*fc));

    if (fc == NULL) {
        if (is_send)
            stt_close_send(inner);
        else
            stt_close_recv(inner);
        return STRATA_ERR_NO_MEMORY;
    }
    fc->base.ops = &stt_fake_ops;
    fc->base.dev = inner->dev;
    fc->inner = inner;
    fc->nfree = FAKE_REQ_SLOTS;
    for (int i = 0; i < FAKE_REQ_SLOTS; i++) {
        fc->free_idx[i] = FAKE_REQ_SLOTS - 1 - i;
        fc->reqs[i].base.comm = &fc->base;
    }
    *comm_p = &fc->base;
    return STRATA_OK;
}

static strata_status_t fake_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                    stt_comm_t **send_p)
{
    stt_comm_t *inner = NULL;
    strata_status_t status;

    FAKE_COUNT(connect_calls);
    status = fault_take_status(&fake_faults.connect_status);
    if (status != STRATA_OK)
        return status;
    if (fault_take(&fake_faults.connect_nulls)) {
        FAKE_COUNT(injected_nulls);
        *send_p = NULL;
        return STRATA_OK;
    }
    status = stt_connect(fake_inner_ops, dev, handle, cfg, &inner);
    if (status != STRATA_OK)
        return status;
    if (inner == NULL) {
        *send_p = NULL;
        return STRATA_OK;
    }
    return fake_comm_wrap(inner, 1, send_p);
}

static void fake_connect_abandon(void *handle)
{
    stt_connect_abandon(fake_inner_ops, handle);
}

static strata_status_t fake_accept(stt_listen_t *listen, stt_comm_t **recv_p)
{
    fake_listen_t *fl = (fake_listen_t *)listen;
    stt_comm_t *inner = NULL;
    strata_status_t status;

    FAKE_COUNT(accept_calls);
    status = fault_take_status(&fake_faults.accept_status);
    if (status != STRATA_OK)
        return status;
    if (fault_take(&fake_faults.accept_nulls)) {
        FAKE_COUNT(injected_nulls);
        *recv_p = NULL;
        return STRATA_OK;
    }
    status = stt_accept(fl->inner, &inner);
    if (status != STRATA_OK)
        return status;
    if (inner == NULL) {
        *recv_p = NULL;
        return STRATA_OK;
    }
    return fake_comm_wrap(inner, 0, recv_p);
}

static strata_status_t fake_reg_mr(stt_comm_t *comm, void *data, size_t size, int type,
                                   void **mh_p)
{
    fake_comm_t *fc = (fake_comm_t *)comm;

    FAKE_COUNT(reg_mr_calls);
    if (fault_take(&fake_faults.reg_mr_fails)) {
        FAKE_COUNT(injected_errors);
        return fake_faults.reg_mr_status != STRATA_OK ? fake_faults.reg_mr_status
                                                      : STRATA_ERR_NO_RESOURCE;
    }
    return stt_reg_mr(fc->inner, data, size, type, mh_p);
}

static strata_status_t fake_reg_mr_dmabuf(stt_comm_t *comm, void *data, size_t size, int type,
                                          uint64_t offset, int fd, void **mh_p)
{
    fake_comm_t *fc = (fake_comm_t *)comm;
    return stt_reg_mr_dmabuf(fc->inner, data, size, type, offset, fd, mh_p);
}

static strata_status_t fake_dereg_mr(stt_comm_t *comm, void *mh)
{
    fake_comm_t *fc = (fake_comm_t *)comm;
    return stt_dereg_mr(fc->inner, mh);
}

static fake_req_t *fake_req_get(fake_comm_t *fc)
{
    if (fc->nfree == 0)
        return NULL;
    fake_req_t *fr = &fc->reqs[fc->free_idx[--fc->nfree]];
    fr->used = 1;
    FAKE_COUNT(live_requests);
    return fr;
}

static void fake_req_put(fake_comm_t *fc, fake_req_t *fr)
{
    fr->used = 0;
    fr->inner = NULL;
    fc->free_idx[fc->nfree++] = (int)(fr - fc->reqs);
    FAKE_UNCOUNT(live_requests);
}

/*
 * Common tail of every post: a fault or a full slot table answers NULL
 * before the inner transport sees the post; an inner NULL is passed on.
 */
static strata_status_t fake_post_begin(fake_comm_t *fc, int *nulls, stt_req_t **req_p,
                                       fake_req_t **fr_p)
{
    *fr_p = NULL;
    if (fc->dead) {
        FAKE_COUNT(injected_errors);
        return STRATA_ERR_REMOTE;
    }
    if (fault_take(nulls)) {
        FAKE_COUNT(injected_nulls);
        *req_p = NULL;
        return STRATA_OK;
    }
    *fr_p = fake_req_get(fc);
    if (*fr_p == NULL)
        *req_p = NULL;
    return STRATA_OK;
}

static strata_status_t fake_post_end(fake_comm_t *fc, fake_req_t *fr, strata_status_t status,
                                     stt_req_t **req_p)
{
    if (status != STRATA_OK || fr->inner == NULL) {
        fake_req_put(fc, fr);
        if (status == STRATA_OK)
            *req_p = NULL;
        return status;
    }
    fr->base.nsizes = fr->inner->nsizes;
    *req_p = &fr->base;
    return STRATA_OK;
}

static strata_status_t fake_isend(stt_comm_t *comm, void *data, size_t size, int tag, void *mh,
                                  stt_req_t **req_p)
{
    fake_comm_t *fc = (fake_comm_t *)comm;
    fake_req_t *fr;
    strata_status_t status;

    FAKE_COUNT(isend_calls);
    status = fake_post_begin(fc, &fake_faults.isend_nulls, req_p, &fr);
    if (status != STRATA_OK || fr == NULL)
        return status;
    status = stt_isend(fc->inner, data, size, tag, mh, &fr->inner);
    return fake_post_end(fc, fr, status, req_p);
}

static strata_status_t fake_irecv(stt_comm_t *comm, int n, void **data, const size_t *sizes,
                                  const int *tags, void **mhs, stt_req_t **req_p)
{
    fake_comm_t *fc = (fake_comm_t *)comm;
    fake_req_t *fr;
    strata_status_t status;

    FAKE_COUNT(irecv_calls);
    status = fake_post_begin(fc, &fake_faults.irecv_nulls, req_p, &fr);
    if (status != STRATA_OK || fr == NULL)
        return status;
    status = stt_irecv(fc->inner, n, data, sizes, tags, mhs, &fr->inner);
    return fake_post_end(fc, fr, status, req_p);
}

static strata_status_t fake_iflush(stt_comm_t *comm, int n, void **data, const int *sizes,
                                   void **mhs, stt_req_t **req_p)
{
    fake_comm_t *fc = (fake_comm_t *)comm;
    int no_fault = 0;
    fake_req_t *fr;
    strata_status_t status;

    status = fake_post_begin(fc, &no_fault, req_p, &fr);
    if (status != STRATA_OK || fr == NULL)
        return status;
    status = stt_iflush(fc->inner, n, data, sizes, mhs, &fr->inner);
    return fake_post_end(fc, fr, status, req_p);
}

static strata_status_t fake_test(stt_req_t *req, int *done, size_t *sizes)
{
    fake_req_t *fr = (fake_req_t *)req;
    fake_comm_t *fc = (fake_comm_t *)req->comm;
    strata_status_t status;

    int call = FAKE_COUNT(test_calls);
    if (fake_faults.test_remote_at > 0 && call == fake_faults.test_remote_at)
        fc->dead = 1;
    if (fc->dead) {
        /* The inner request stays with the inner comm until close, like a lost peer's. */
        FAKE_COUNT(injected_errors);
        fake_req_put(fc, fr);
        return STRATA_ERR_REMOTE;
    }
    status = stt_test(fr->inner, done, sizes);
    if (status != STRATA_OK || *done)
        fake_req_put(fc, fr);
    return status;
}

static int fake_poll_fds(stt_comm_t *comm, struct pollfd *fds, int max)
{
    fake_comm_t *fc = (fake_comm_t *)comm;
    return stt_poll_fds(fc->inner, fds, max);
}

static strata_status_t fake_progress(stt_comm_t *comm)
{
    fake_comm_t *fc = (fake_comm_t *)comm;
    return stt_progress(fc->inner);
}

static void fake_close(stt_comm_t *comm, int is_send)
{
    fake_comm_t *fc = (fake_comm_t *)comm;

    for (int i = 0; i < FAKE_REQ_SLOTS; i++)
        if (fc->reqs[i].used)
            FAKE_UNCOUNT(live_requests);
    if (is_send)
        stt_close_send(fc->inner);
    else
        stt_close_recv(fc->inner);
    free(fc);
}

static void fake_close_send(stt_comm_t *comm)
{
    fake_close(comm, 1);
}

static void fake_close_recv(stt_comm_t *comm)
{
    fake_close(comm, 0);
}

static void fake_close_listen(stt_listen_t *listen)
{
    fake_listen_t *fl = (fake_listen_t *)listen;
    stt_close_listen(fl->inner);
    free(fl);
}

const stt_ops_t stt_fake_ops = {
    .name = "fake",
    .probe = fake_probe,
    .library = stt_no_library,
    .init = fake_init,
    .fini = fake_fini,
    .devices = fake_devices,
    .get_props = fake_get_props,
    .listen = fake_listen,
    .connect = fake_connect,
    .connect_abandon = fake_connect_abandon,
    .accept = fake_accept,
    .reg_mr = fake_reg_mr,
    .reg_mr_dmabuf = fake_reg_mr_dmabuf,
    .dereg_mr = fake_dereg_mr,
    .isend = fake_isend,
    .irecv = fake_irecv,
    .iflush = fake_iflush,
    .test = fake_test,
    .close_send = fake_close_send,
    .close_recv = fake_close_recv,
    .close_listen = fake_close_listen,
    .poll_fds = fake_poll_fds,
    .progress = fake_progress,
    .make_vdev = stt_no_make_vdev,
};
