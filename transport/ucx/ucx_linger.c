/*
 * Send-comm closes that finish in the background.
 *
 * A send completes when its buffer may be reused, not when the peer has the
 * data, so close_send flushes its endpoint before destroying the worker; a
 * worker destroyed with data still queued in UCX loses that data and makes
 * UCX fail the peer's endpoint (UCS_ERR_ENDPOINT_TIMEOUT over UCX's tcp
 * transport) while the peer still waits for it. The flush completes only as
 * fast as the peer's worker drains the connection: on a loaded machine the
 * peer process is often not scheduled for tens of milliseconds, and in NCCL's
 * same-thread loopback probe the peer's worker is progressed only after
 * close_send returns. So close_send waits a little inline (ucx_conn.c) and
 * hands what is still in flight here.
 *
 * One thread, started by the first entry and ending when the list is empty,
 * progresses every lingering worker until its flush completes, the peer
 * closes the side channel (its receive comm is gone: nothing left to deliver
 * to), or the entry's deadline passes (STRATA_SOCKET_USER_TIMEOUT, the tcp
 * transport's bound for an unresponsive peer), and then calls the entry's
 * finish function (endpoint closed, worker destroyed, socket closed). When
 * the receive end of the same connection is closed in this process (NCCL's
 * loopback probe), its close finishes the lingering one at once, in its own
 * thread (stt_ucx_linger_cancel). The thread owns a lingering worker outright: its comm is closed, so no other
 * thread touches it, and UCS_THREAD_MODE_SERIALIZED holds. The last fini
 * drains the list and joins the thread (ucx_device.c), so no thread runs
 * after the plugin is finalised and unloaded.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport/base/sock.h"
#include "transport/ucx/ucx_internal.h"
#include "util/log.h"
#include "util/param.h"
#include "util/time.h"

/* The thread's nap when no lingering worker made progress: 1 ms, a small cost next to a
 * flush that is waiting for another process to be scheduled. */
#define LINGER_NAP_NS (1000ull * 1000ull)
/* The bound when STRATA_SOCKET_USER_TIMEOUT is 0 (the kernel's defaults for tcp): the
 * parameter's own default, 30 s. */
#define LINGER_DEFAULT_MS 30000

typedef struct ucx_linger {
    struct ucx_linger *next;
    uint32_t key;                /* the connection id */
    ucp_worker_h worker;
    void *req;                   /* the flush */
    int fd;                      /* the side channel, peeked for the peer's close */
    uint64_t deadline_ns;
    stt_ucx_linger_fn finish;
    void *arg;
    char peer[STT_NETIF_ADDR_STRLEN];
} linger_t;

static pthread_mutex_t linger_lock = PTHREAD_MUTEX_INITIALIZER;
static linger_t *linger_head;
static bool thread_started;      /* started and not yet joined */
static bool thread_done;         /* it found the list empty and returned */
static pthread_t linger_thread;

/* One look at an entry: true when it is over (flush done, peer gone, or out of time). */
static bool linger_step(linger_t *l, bool *moved)
{
    int err;

    if (stt_ucx_lib.worker_progress(l->worker) != 0)
        *moved = true;
    if (stt_ucx_lib.request_check_status(l->req) != UCS_INPROGRESS)
        return true;
    if (stt_sock_peek(l->fd, &err) != STT_SOCK_QUIET)
        return true;
    if (stu_deadline_passed(l->deadline_ns)) {
        STU_WARN("ucx: closing the send comm to %s: the peer took no more data for the"
                 " last %lld ms (STRATA_SOCKET_USER_TIMEOUT); what it did not take is lost",
                 l->peer, (long long)stt_ucx_linger_bound_ms());
        return true;
    }
    return false;
}

static void linger_finish(linger_t *l)
{
    stt_ucx_lib.request_free(l->req);    /* released now, or by UCX when the endpoint closes */
    l->finish(l->arg);
    free(l);
}

static void *linger_main(void *unused)
{
    const struct timespec nap = {0, (long)LINGER_NAP_NS};

    (void)unused;
    for (;;) {
        linger_t *over = NULL;
        bool moved = false;
        pthread_mutex_lock(&linger_lock);
        if (linger_head == NULL) {
            thread_done = true;
            pthread_mutex_unlock(&linger_lock);
            return NULL;
        }
        for (linger_t **pp = &linger_head; *pp != NULL;) {
            linger_t *l = *pp;
            if (linger_step(l, &moved)) {
                *pp = l->next;
                l->next = over;
                over = l;
            } else {
                pp = &l->next;
            }
        }
        pthread_mutex_unlock(&linger_lock);
        /* Finished outside the lock: a force close may take a moment. */
        while (over != NULL) {
            linger_t *next = over->next;
            linger_finish(over);
            over = next;
        }
        if (!moved)
            nanosleep(&nap, NULL);
    }
}

int64_t stt_ucx_linger_bound_ms(void)
{
    int64_t ms = stu_param_int(STU_PARAM_SOCKET_USER_TIMEOUT);
    return ms > 0 ? ms : LINGER_DEFAULT_MS;
}

strata_status_t stt_ucx_linger_add(uint32_t key, ucp_worker_h worker, void *req, int fd,
                                   const char *peer, stt_ucx_linger_fn finish, void *arg)
{
    linger_t *l = calloc(1, sizeof(*l));
    strata_status_t status = STRATA_OK;

    if (l == NULL) {
        STU_WARN("ucx: no memory to finish the close of the send comm to %s in the background",
                 peer);
        return STRATA_ERR_NO_MEMORY;
    }
    *l = (linger_t){.key = key, .worker = worker, .req = req, .fd = fd, .finish = finish, .arg = arg,
                    .deadline_ns = stu_deadline_ms(stt_ucx_linger_bound_ms())};
    snprintf(l->peer, sizeof(l->peer), "%s", peer);
    pthread_mutex_lock(&linger_lock);
    if (thread_started && thread_done) {
        /* The last thread found nothing to do and is returning: reap it. */
        pthread_join(linger_thread, NULL);
        thread_started = false;
    }
    if (!thread_started) {
        thread_done = false;
        int rc = pthread_create(&linger_thread, NULL, linger_main, NULL);
        if (rc != 0) {
            STU_WARN("ucx: pthread_create for closes in the background: %s", strerror(rc));
            status = STRATA_ERR_IO;
        } else {
            thread_started = true;
        }
    }
    if (status == STRATA_OK) {
        l->next = linger_head;
        linger_head = l;
    }
    pthread_mutex_unlock(&linger_lock);
    if (status != STRATA_OK)
        free(l);
    else
        STU_INFO(STU_LOG_NET, "ucx: the send comm to %s finishes its close in the background",
                 peer);
    return status;
}

void stt_ucx_linger_cancel(uint32_t key)
{
    linger_t *found = NULL;

    pthread_mutex_lock(&linger_lock);
    for (linger_t **pp = &linger_head; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->key == key) {
            found = *pp;
            *pp = found->next;
            break;
        }
    }
    pthread_mutex_unlock(&linger_lock);
    if (found != NULL)
        linger_finish(found);
}

void stt_ucx_linger_drain(void)
{
    pthread_mutex_lock(&linger_lock);
    bool join = thread_started;
    pthread_t thread = linger_thread;
    thread_started = false;
    pthread_mutex_unlock(&linger_lock);
    /* The thread returns once the list is empty: every entry ends by its deadline. */
    if (join)
        pthread_join(thread, NULL);
}

/*
 * A process that exits (or unloads the plugin) without the last fini, as
 * with ABI versions before v11, which have no finalize, still finishes its
 * lingering closes: each is bounded by its deadline and ends as soon as its
 * peer closes. Without this, exit would cut them off with the data undelivered.
 */
__attribute__((destructor)) static void linger_at_exit(void)
{
    stt_ucx_linger_drain();
}
