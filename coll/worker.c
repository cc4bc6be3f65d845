/* The non-blocking collectives' worker thread and request objects. */
#include "coll/worker.h"

#include <stdlib.h>

#include "util/log.h"

struct strata_request {
    stc_op_t op;
    strata_status_t status;
    int done;
    strata_comm_t *comm;
    strata_request_t *next;
};

struct stc_worker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;        /* work queued or stop asked */
    pthread_cond_t finished;    /* a request finished */
    strata_request_t *head, *tail;
    int busy;
    int stop;
    int started;
    void *work;                 /* the stc_work arena */
    size_t work_size;
};

static void *worker_main(void *arg)
{
    strata_comm_t *comm = arg;
    stc_worker_t *w = comm->worker;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (w->head == NULL && !w->stop)
            pthread_cond_wait(&w->wake, &w->lock);
        if (w->head == NULL)
            break;
        strata_request_t *req = w->head;
        w->head = req->next;
        if (w->head == NULL)
            w->tail = NULL;
        w->busy = 1;
        pthread_mutex_unlock(&w->lock);
        strata_status_t status = stc_run(comm, &req->op);
        pthread_mutex_lock(&w->lock);
        req->status = status;
        req->done = 1;
        w->busy = 0;
        pthread_cond_broadcast(&w->finished);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static strata_status_t worker_get(strata_comm_t *comm, stc_worker_t **w_p)
{
    if (comm->worker == NULL) {
        stc_worker_t *w = calloc(1, sizeof(*w));
        if (w == NULL)
            return STRATA_ERR_NO_MEMORY;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->wake, NULL);
        pthread_cond_init(&w->finished, NULL);
        comm->worker = w;
    }
    *w_p = comm->worker;
    return STRATA_OK;
}

strata_status_t stc_work(strata_comm_t *comm, size_t bytes, void **buf_p)
{
    stc_worker_t *w;
    strata_status_t status = worker_get(comm, &w);
    if (status != STRATA_OK)
        return status;
    if (bytes > w->work_size) {
        void *p = realloc(w->work, bytes);
        if (p == NULL)
            return sta_ctx_fail(&comm->ctx, STRATA_ERR_NO_MEMORY, "work buffer of %zu bytes",
                                bytes);
        w->work = p;
        w->work_size = bytes;
    }
    *buf_p = w->work;
    return STRATA_OK;
}

int stc_flat_pos(const strata_comm_t *comm, int r)
{
    return comm->flat_pos_of[r];   /* r was range-checked by the public call */
}

strata_status_t stc_worker_submit(strata_comm_t *comm, const stc_op_t *o,
                                  strata_request_t **req_p)
{
    stc_worker_t *w;
    strata_status_t status = worker_get(comm, &w);
    if (status != STRATA_OK)
        return status;
    strata_request_t *req = calloc(1, sizeof(*req));
    if (req == NULL)
        return STRATA_ERR_NO_MEMORY;
    req->op = *o;
    req->comm = comm;
    pthread_mutex_lock(&w->lock);
    if (!w->started) {
        if (pthread_create(&w->thread, NULL, worker_main, comm) != 0) {
            pthread_mutex_unlock(&w->lock);
            free(req);
            return sta_ctx_fail(&comm->ctx, STRATA_ERR_NO_RESOURCE, "starting the worker");
        }
        w->started = 1;
    }
    if (w->tail != NULL)
        w->tail->next = req;
    else
        w->head = req;
    w->tail = req;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    *req_p = req;
    return STRATA_OK;
}

strata_status_t stc_worker_drain(strata_comm_t *comm)
{
    stc_worker_t *w = comm->worker;
    if (w != NULL) {
        pthread_mutex_lock(&w->lock);
        while (w->head != NULL || w->busy)
            pthread_cond_wait(&w->finished, &w->lock);
        pthread_mutex_unlock(&w->lock);
    }
    return comm->ctx.failed;
}

void stc_worker_stop(strata_comm_t *comm)
{
    stc_worker_t *w = comm->worker;
    if (w == NULL)
        return;
    stc_worker_drain(comm);
    if (w->started) {
        pthread_mutex_lock(&w->lock);
        w->stop = 1;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
    }
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->finished);
    free(w->work);
    free(w);
    comm->worker = NULL;
}

strata_status_t strata_test(strata_request_t *req, int *done)
{
    if (req == NULL || done == NULL)
        return STRATA_ERR_INVALID;
    stc_worker_t *w = req->comm->worker;
    pthread_mutex_lock(&w->lock);
    int d = req->done;
    strata_status_t status = req->status;
    pthread_mutex_unlock(&w->lock);
    *done = d;
    if (d)
        free(req);
    return d ? status : STRATA_OK;
}

strata_status_t strata_wait(strata_request_t *req)
{
    if (req == NULL)
        return STRATA_ERR_INVALID;
    stc_worker_t *w = req->comm->worker;
    pthread_mutex_lock(&w->lock);
    while (!req->done)
        pthread_cond_wait(&w->finished, &w->lock);
    strata_status_t status = req->status;
    pthread_mutex_unlock(&w->lock);
    free(req);
    return status;
}
