/*
 * Loop transport: device, listen/connect/accept and memory registration.
 * Listeners live in a process-wide list under one lock; the handle names a
 * listener by id. connect queues a channel on the listener and completes once
 * accept took it, like a network transport whose connect waits for the
 * listener's answer.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/loop/loop.h"
#include "transport/loop/loop_internal.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

#define LOOP_SPEED_MBPS 400000    /* nominal: memcpy bandwidth class, not measured */

typedef struct loop_listen {
    stt_listen_t base;
    uint64_t id;
    loop_channel_t *queue_head;
    loop_channel_t **queue_tail;
    struct loop_listen *next;
} loop_listen_t;

typedef struct loop_handle {
    uint64_t magic;
    uint64_t pid;              /* the listener's process: loop connects nothing across processes */
    uint64_t listener_id;
    loop_channel_t *pending;   /* connect's in-progress state */
    uint64_t start_ns;
} loop_handle_t;
_Static_assert(sizeof(loop_handle_t) <= STT_HANDLE_SIZE, "loop handle too large");

typedef struct loop_mr {
    void *data;
    size_t size;
} loop_mr_t;

static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;
static loop_listen_t *loop_listeners;
static uint64_t loop_next_id = 1;
static int loop_refs;

static strata_status_t loop_probe(void)
{
    return STRATA_OK;
}

static strata_status_t loop_init(void)
{
    pthread_mutex_lock(&loop_lock);
    loop_refs++;
    pthread_mutex_unlock(&loop_lock);
    return STRATA_OK;
}

static void loop_fini(void)
{
    pthread_mutex_lock(&loop_lock);
    if (loop_refs > 0)
        loop_refs--;
    pthread_mutex_unlock(&loop_lock);
}

static strata_status_t loop_devices(int *ndev_p)
{
    *ndev_p = 1;
    return STRATA_OK;
}

static strata_status_t loop_get_props(int dev, stt_props_t *props_p)
{
    if (dev != 0)
        return STRATA_ERR_INVALID;
    memset(props_p, 0, sizeof(*props_p));
    strcpy(props_p->name, "loop0");
    props_p->guid = 0x4c4f4f50ull;
    props_p->ptr_support = STT_PTR_HOST;
    props_p->speed_mbps = LOOP_SPEED_MBPS;
    props_p->max_comms = 65536;
    props_p->max_recvs = STT_MAX_RECVS;
    props_p->max_p2p_bytes = (size_t)1 << 40;
    props_p->max_coll_bytes = (size_t)512 << 20;
    return STRATA_OK;
}

static strata_status_t loop_listen(int dev, void *handle, stt_listen_t **listen_p)
{
    if (dev != 0 || handle == NULL)
        return STRATA_ERR_INVALID;
    loop_listen_t *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return STRATA_ERR_NO_MEMORY;
    l->base.ops = &stt_loop_ops;
    l->base.dev = dev;
    l->queue_tail = &l->queue_head;
    pthread_mutex_lock(&loop_lock);
    l->id = loop_next_id++;
    l->next = loop_listeners;
    loop_listeners = l;
    pthread_mutex_unlock(&loop_lock);

    loop_handle_t h = {.magic = LOOP_HANDLE_MAGIC, .pid = (uint64_t)getpid(),
                       .listener_id = l->id};
    memset(handle, 0, STT_HANDLE_SIZE);
    memcpy(handle, &h, sizeof(h));
    *listen_p = &l->base;
    return STRATA_OK;
}

/* Called with loop_lock held. */
static loop_listen_t *listener_find(uint64_t id)
{
    for (loop_listen_t *l = loop_listeners; l != NULL; l = l->next)
        if (l->id == id)
            return l;
    return NULL;
}

/* Called with loop_lock held: takes chan out of its listener's queue, if still queued. */
static int listener_unqueue(loop_channel_t *chan)
{
    for (loop_listen_t *l = loop_listeners; l != NULL; l = l->next) {
        for (loop_channel_t **pp = &l->queue_head; *pp != NULL; pp = &(*pp)->next_pending) {
            if (*pp == chan) {
                *pp = chan->next_pending;
                if (l->queue_tail == &chan->next_pending)
                    l->queue_tail = pp;
                return 1;
            }
        }
    }
    return 0;
}

static strata_status_t loop_connect(int dev, void *handle, const stt_conn_cfg_t *cfg,
                                    stt_comm_t **send_p)
{
    loop_handle_t h;
    strata_status_t status;

    memcpy(&h, handle, sizeof(h));
    if (h.magic != LOOP_HANDLE_MAGIC) {
        STU_WARN("loop: connect handle has a bad magic 0x%llx", (unsigned long long)h.magic);
        return STRATA_ERR_INVALID;
    }
    if (h.pid != (uint64_t)getpid()) {
        STU_WARN("loop: the handle comes from process %llu; the loop transport connects only "
                 "inside one process", (unsigned long long)h.pid);
        return STRATA_ERR_INVALID;
    }
    *send_p = NULL;
    if (h.pending == NULL) {
        loop_channel_t *chan = loop_channel_create();
        if (chan == NULL)
            return STRATA_ERR_NO_MEMORY;
        pthread_mutex_lock(&loop_lock);
        loop_listen_t *l = listener_find(h.listener_id);
        if (l != NULL) {
            *l->queue_tail = chan;
            l->queue_tail = &chan->next_pending;
        }
        pthread_mutex_unlock(&loop_lock);
        if (l == NULL) {
            free(chan);
            STU_WARN("loop: no listener with id %llu (closed, or a handle from another process)",
                     (unsigned long long)h.listener_id);
            return STRATA_ERR_REMOTE;
        }
        h.pending = chan;
        h.start_ns = stu_time_ns();
        memcpy(handle, &h, sizeof(h));
        return STRATA_OK;
    }

    loop_channel_t *chan = h.pending;
    pthread_mutex_lock(&chan->lock);
    int accepted = chan->accepted;
    int refused = chan->recv_gone;
    pthread_mutex_unlock(&chan->lock);
    if (accepted && !refused) {
        status = loop_comm_create(chan, dev, 1, send_p);
        if (status != STRATA_OK)
            return status;
        h.pending = NULL;
        memcpy(handle, &h, sizeof(h));
        return STRATA_OK;
    }
    uint64_t timeout_ns = (uint64_t)stu_param_int(STU_PARAM_CONNECT_TIMEOUT) * 1000000ull;
    if (!refused && stu_time_ns() - h.start_ns < timeout_ns)
        return STRATA_OK;

    pthread_mutex_lock(&loop_lock);
    int queued = listener_unqueue(chan);
    pthread_mutex_unlock(&loop_lock);
    if (queued)
        loop_channel_release(chan);
    loop_channel_release(chan);
    h.pending = NULL;
    memcpy(handle, &h, sizeof(h));
    if (refused) {
        STU_WARN("loop: the listener closed before accepting the connection");
        return STRATA_ERR_REMOTE;
    }
    STU_WARN("loop: connect not accepted within STRATA_CONNECT_TIMEOUT");
    return STRATA_ERR_TIMEOUT;
}

static strata_status_t loop_accept(stt_listen_t *base, stt_comm_t **recv_p)
{
    loop_listen_t *l = (loop_listen_t *)base;
    strata_status_t status;

    *recv_p = NULL;
    pthread_mutex_lock(&loop_lock);
    loop_channel_t *chan = l->queue_head;
    if (chan != NULL) {
        l->queue_head = chan->next_pending;
        if (l->queue_head == NULL)
            l->queue_tail = &l->queue_head;
    }
    pthread_mutex_unlock(&loop_lock);
    if (chan == NULL)
        return STRATA_OK;
    status = loop_comm_create(chan, base->dev, 0, recv_p);
    pthread_mutex_lock(&chan->lock);
    if (status == STRATA_OK)
        chan->accepted = 1;
    else
        chan->recv_gone = 1;
    pthread_mutex_unlock(&chan->lock);
    if (status != STRATA_OK)
        loop_channel_release(chan);
    return status;
}

static void loop_close_listen(stt_listen_t *base)
{
    loop_listen_t *l = (loop_listen_t *)base;

    if (l == NULL)
        return;   /* closing nothing is fine (the contract) */
    pthread_mutex_lock(&loop_lock);
    for (loop_listen_t **pp = &loop_listeners; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    }
    loop_channel_t *chan = l->queue_head;
    pthread_mutex_unlock(&loop_lock);
    while (chan != NULL) {
        loop_channel_t *next = chan->next_pending;
        pthread_mutex_lock(&chan->lock);
        chan->recv_gone = 1;
        pthread_mutex_unlock(&chan->lock);
        loop_channel_release(chan);
        chan = next;
    }
    free(l);
}

static strata_status_t loop_reg_mr(stt_comm_t *comm, void *data, size_t size, int type,
                                   void **mh_p)
{
    if (type != STT_PTR_HOST) {
        STU_WARN("loop: memory type %d is not supported (host memory only)", type);
        return STRATA_ERR_UNSUPPORTED;
    }
    loop_mr_t *mr = malloc(sizeof(*mr));
    if (mr == NULL)
        return STRATA_ERR_NO_MEMORY;
    mr->data = data;
    mr->size = size;
    *mh_p = mr;
    return STRATA_OK;
}

static strata_status_t loop_dereg_mr(stt_comm_t *comm, void *mh)
{
    free(mh);
    return STRATA_OK;
}

const stt_ops_t stt_loop_ops = {
    .name = "loop",
    .probe = loop_probe,
    .init = loop_init,
    .fini = loop_fini,
    .devices = loop_devices,
    .get_props = loop_get_props,
    .listen = loop_listen,
    .connect = loop_connect,
    .accept = loop_accept,
    .reg_mr = loop_reg_mr,
    .reg_mr_dmabuf = stt_no_reg_mr_dmabuf,
    .dereg_mr = loop_dereg_mr,
    .isend = loop_isend,
    .irecv = loop_irecv,
    .iflush = loop_iflush,
    .test = loop_test,
    .close_send = loop_comm_close,
    .close_recv = loop_comm_close,
    .close_listen = loop_close_listen,
    .poll_fds = stt_no_poll_fds,   /* in-process: nothing to wait on but the peer thread */
};
